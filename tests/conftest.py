"""Shared pytest fixtures.  Tests never use the network and never read files outside the repository."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MPLBACKEND", "Agg")


# ----------------------------------------------------------------------------- parallel runs (pytest-xdist)
# `make test` runs on both cores: the tests that share an expensive fixture run on one worker, so that it is
# built once, the long work starts first, one BLAS thread per worker (tests/xdist_support.py)
from xdist_support import (  # noqa: F401  (hooks of this conftest)
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_configure_node,
    pytest_unconfigure,
    pytest_xdist_make_scheduler,
)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Each test session writes caches and results into a temporary folder, never into ~/.cache."""
    base = tmp_path_factory.getbasetemp()
    monkeypatch.setenv("BIASKIT_CACHE_DIR", str(base / "cache"))
    monkeypatch.setenv("BIASKIT_RESULTS_DIR", str(base / "results"))


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    """An empty cache folder of this test's own (``BIASKIT_CACHE_DIR``), not the session's shared one."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("BIASKIT_CACHE_DIR", str(folder))
    return folder


@pytest.fixture(scope="module")
def one_torch_thread():
    """Torch and the BLAS libraries on one thread for a whole test module, restored afterwards
    (single-threaded sums make the batched and one-at-a-time model scores comparable)."""
    import torch
    from threadpoolctl import threadpool_limits

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    with threadpool_limits(1):
        yield
    torch.set_num_threads(old)


# ----------------------------------------------------------------------------- executed notebooks
NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))


@dataclass
class ReproducedRun:
    """Every notebook executed once, as ``make reproduce`` does, into one folder."""

    folder: Path
    errors: dict[str, str] = field(default_factory=dict)  # notebook stem -> error text
    seconds: dict[str, float] = field(default_factory=dict)


@pytest.fixture(scope="session")
def reproduced_results(tmp_path_factory: pytest.TempPathFactory) -> ReproducedRun:
    """Execute every ``notebooks/NN_*.ipynb`` once with ``quick=True`` into one results folder.

    ``make reproduce``-style: papermill, ``cwd=notebooks``, output ``<folder>/<stem>.ipynb``,
    ``results_dir=<folder>`` (so the JSON and figures sit beside the notebooks, as in
    ``results/``).  A failing notebook does not stop the others: its error is kept in
    ``errors`` and the tests that need it fail with that text.  Shared by
    ``tests/project/test_notebooks.py`` and ``tests/report/test_html_report.py`` so no notebook runs twice.
    """
    papermill = pytest.importorskip("papermill")
    from biaskit.__main__ import ipc_kernel_config

    folder = tmp_path_factory.mktemp("reproduce")
    run = ReproducedRun(folder=folder)
    env_before = os.environ.get("BIASKIT_RESULTS_DIR")
    # runs that do not name a folder would go to <root>/runs/...; keep them out of the repo
    os.environ["BIASKIT_RESULTS_DIR"] = str(tmp_path_factory.mktemp("results-root"))
    os.environ.setdefault("BIASKIT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
    try:
        with ipc_kernel_config() as ipc:  # local sockets in a temporary folder
            for nb in NOTEBOOKS:
                t0 = time.perf_counter()
                try:
                    papermill.execute_notebook(
                        str(nb),
                        str(folder / nb.name),
                        parameters={"quick": True, "results_dir": str(folder)},
                        kernel_name="python3",
                        cwd=str(NOTEBOOK_DIR),
                        progress_bar=False,
                        config=ipc,
                    )
                except Exception as exc:  # recorded; the tests that need this notebook report it
                    run.errors[nb.stem] = f"{type(exc).__name__}: {exc}"
                run.seconds[nb.stem] = time.perf_counter() - t0
    finally:
        if env_before is None:
            os.environ.pop("BIASKIT_RESULTS_DIR", None)
        else:
            os.environ["BIASKIT_RESULTS_DIR"] = env_before
    return run


# ----------------------------------------------------------------------------- StereoSet examples
def _stereoset_example(
    i: int,
    context: str = "The man is BLANK.",
    labels: tuple[str, str, str] = ("stereotype", "anti-stereotype", "unrelated"),
) -> dict:
    """One intrasentence example of a StereoSet gold file: id ``ex{i}``, ``context``, and the three options
    "The man is strong / weak / blue." with the gold ``labels`` (ids ``s{i}0`` .. ``s{i}2``)."""
    words = ("strong", "weak", "blue")
    return {
        "id": f"ex{i}",
        "target": "man",
        "bias_type": "gender",
        "context": context,
        "sentences": [
            {"id": f"s{i}{k}", "sentence": f"The man is {w}.", "gold_label": lbl}
            for k, (w, lbl) in enumerate(zip(words, labels, strict=True))
        ],
    }


@pytest.fixture
def stereoset_example():
    """The factory of StereoSet gold examples: ``stereoset_example(i, context=..., labels=...)``."""
    return _stereoset_example


# ----------------------------------------------------------------------------- interrupted jobs
@pytest.fixture
def interrupt_after(monkeypatch):
    """``interrupt_after(module, name, n_calls=2)`` replaces ``module.name`` by a version that raises
    ``KeyboardInterrupt("simulated interruption")`` from its ``n_calls + 1``-th call on, and returns the
    real function (``monkeypatch.setattr(module, name, real)`` puts it back)."""

    def patch(module, name: str, n_calls: int = 2):
        real = getattr(module, name)
        calls = {"n": 0}

        def flaky(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] > n_calls:
                raise KeyboardInterrupt("simulated interruption")
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, flaky)
        return real

    return patch


# ----------------------------------------------------------------------------- the toy plug-in package
@pytest.fixture(scope="session")
def toy_plugin(tmp_path_factory) -> Any:
    """The toy plug-in package (``tests/plugins/biaskit_toy_metric``) installed into a temporary folder on
    ``sys.path`` and registered through its entry point, for the rest of the session
    (tests/plugin_support.py).  Yields the folder; the suite passes with and without it."""
    from plugin_support import PLUGIN_METRIC, install_plugin, plugin_on_path

    site = install_plugin(tmp_path_factory.mktemp("toy_plugin"))
    with plugin_on_path(site) as added:
        assert added == [PLUGIN_METRIC], added
        yield site
