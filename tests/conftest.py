"""Shared pytest fixtures.  Tests never use the network and never read files outside the repository."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MPLBACKEND", "Agg")
# `make test` (pytest-xdist): one BLAS / OpenMP thread per worker and core, no oversubscription
if os.environ.get("PYTEST_XDIST_WORKER"):
    _threads = str(max(1, (os.cpu_count() or 1) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)))
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, _threads)


# ----------------------------------------------------------------------------- parallel runs (pytest-xdist)
# `make test` runs the suite on both cores (`pytest -n 2 --dist loadgroup`).  Tests that share an expensive
# fixture form a group that runs on one worker, in one go (shared_fixture_group), and the long work starts
# first (start_order).  pytest-xdist 3.8 passes the groups from the workers to the scheduler inside the test
# ids, which pytest 9.2 no longer lets a plugin change (the groups would be silently ignored), so each worker
# also writes its groups into a folder of the run and the scheduler (pytest_xdist_make_scheduler) reads them.

#: module- or session-scoped fixtures that are cheap to build again: no reason to keep their tests together
CHEAP_SHARED_FIXTURES = frozenset({"one_torch_thread"})
_GROUPS_KEY = "biaskit_xdist_groups"  # workerinput entry: the folder where each worker writes its groups
_GROUPS_FOLDER = pytest.StashKey[Path]()


def shared_fixture_group(item: pytest.Item) -> str | None:
    """The ``xdist_group`` a test joins so that an expensive fixture it shares is built once per run.

    Tests of ``reproduced_results`` (every notebook executed once) join ``"notebooks"``; a test that uses a
    module- or session-scoped fixture of its own module (a trained toy model, scored pairs, a built site)
    joins a group named after its module file.  Under ``--dist loadgroup`` a group runs on one worker, in one
    go, so the fixture is built once, not once per worker (nor again each time the worker comes back to the
    module).  Other tests are handed out one by one.
    """
    names = getattr(item, "fixturenames", ())
    if "reproduced_results" in names:
        return "notebooks"
    info = getattr(item, "_fixtureinfo", None)
    module = getattr(getattr(item, "module", None), "__name__", None)
    if info is None or module is None:
        return None
    for name in names:
        defs = info.name2fixturedefs.get(name) or ()
        if not defs or name in CHEAP_SHARED_FIXTURES:
            continue
        fixture = defs[-1]
        shared = fixture.scope in ("module", "package", "session")
        if shared and getattr(fixture.func, "__module__", "") == module:
            return item.path.name
    return None


def xdist_group_of(item: pytest.Item) -> str | None:
    """The group name pytest-xdist gives a test: its ``xdist_group`` names, sorted and joined by ``_``."""
    names = {
        str(m.args[0] if m.args else m.kwargs.get("name", "default"))
        for m in item.iter_markers("xdist_group")
    }
    return "_".join(sorted(names)) or None


def start_order(items: list[pytest.Item]) -> list[pytest.Item]:
    """``items`` in the order the scheduler hands them out: groups with slow tests (most slow tests first),
    slow tests that run alone, the other groups, the rest; a group's tests stay in their order, together."""
    group_of = {id(item): xdist_group_of(item) for item in items}
    slow_in: dict[str, int] = {}
    first: dict[str, int] = {}
    for i, item in enumerate(items):
        group = group_of[id(item)]
        if group is not None:
            first.setdefault(group, i)
            slow_in[group] = slow_in.get(group, 0) + bool(item.get_closest_marker("slow"))

    def key(pair: tuple[int, pytest.Item]) -> tuple[int, int, int]:
        i, item = pair
        group = group_of[id(item)]
        if group is not None:
            return (0, -slow_in[group], first[group]) if slow_in[group] else (2, 0, first[group])
        return (1, 0, i) if item.get_closest_marker("slow") else (3, 0, i)

    return [item for _, item in sorted(enumerate(items), key=key)]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist: group the tests of an expensive shared fixture (:func:`shared_fixture_group`); on
    a worker, put the items in :func:`start_order` and write the groups for the scheduler."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if item.get_closest_marker("xdist_group") is None and (group := shared_fixture_group(item)):
            item.add_marker(pytest.mark.xdist_group(group))
    folder = getattr(config, "workerinput", {}).get(_GROUPS_KEY)
    if folder is None:
        return
    items[:] = start_order(items)  # every worker collects the same items in the same order: the same result
    groups = {item.nodeid: group for item in items if (group := xdist_group_of(item))}
    worker = config.workerinput.get("workerid", "gw")  # type: ignore[attr-defined]
    tmp = Path(folder) / f".{worker}.json.tmp"
    tmp.write_text(json.dumps(groups), encoding="utf-8")
    os.replace(tmp, Path(folder) / f"{worker}.json")


def pytest_configure(config: pytest.Config) -> None:
    """On the controller of a ``--dist loadgroup`` run: a folder for the workers' groups, and the workers'
    collection order (:func:`start_order`) as the order in which the groups are handed out."""
    distributed = config.pluginmanager.hasplugin("xdist") and config.getoption("tx", None)
    if distributed and not hasattr(config, "workerinput") and config.getoption("dist", "no") == "loadgroup":
        config.stash[_GROUPS_FOLDER] = Path(tempfile.mkdtemp(prefix="biaskit-xdist-groups-"))
        config.option.loadscopereorder = False


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_GROUPS_FOLDER, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Tell each pytest-xdist worker where to write its groups."""
    folder = node.config.stash.get(_GROUPS_FOLDER, None)
    if folder is not None:
        node.workerinput[_GROUPS_KEY] = str(folder)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist's ``loadgroup`` scheduling, with the groups the workers wrote (see above)."""
    folder = config.stash.get(_GROUPS_FOLDER, None)
    if folder is None:
        return None
    from xdist.scheduler import LoadGroupScheduling

    class FixtureGroupScheduling(LoadGroupScheduling):
        def __init__(self, config: pytest.Config, log: Any = None) -> None:
            super().__init__(config, log)
            self.groups: dict[str, str] = {}  # test id -> group, from the workers' files

        def schedule(self) -> None:
            if self.collection is None:  # every worker has collected: their group files are written
                self.groups = {}
                for path in sorted(folder.glob("*.json")):
                    self.groups.update(json.loads(path.read_text(encoding="utf-8")))
            super().schedule()

        def _split_scope(self, nodeid: str) -> str:
            return self.groups.get(nodeid) or super()._split_scope(nodeid)

    return FixtureGroupScheduling(config, log)


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
    ``tests/test_notebooks.py`` and ``tests/test_html_report.py`` so no notebook runs twice.
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
    ``sys.path`` and registered through its entry point, for the rest of the session (tests/plugin_support.py).
    Yields the folder; the suite passes with and without it."""
    from plugin_support import PLUGIN_METRIC, install_plugin, plugin_on_path

    site = install_plugin(tmp_path_factory.mktemp("toy_plugin"))
    with plugin_on_path(site) as added:
        assert added == [PLUGIN_METRIC], added
        yield site
