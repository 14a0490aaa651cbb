"""Every notebook executes headless under papermill (with ``quick=True``) and writes its JSON.

This is the end-to-end check that ``make reproduce`` works: the same papermill call, on the same
bundled offline defaults, only with the notebook's ``quick`` parameter set so the suite stays fast.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import pytest

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks found"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_stored_clean_and_parameterised(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "notebook has no code"
    assert all(not c.get("outputs") for c in code), "stored with outputs"
    assert all(c.get("execution_count") is None for c in code), "stored with execution counts"
    tagged = [c for c in code if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, "needs exactly one code cell tagged 'parameters'"
    assert "quick" in tagged[0].source, "the parameters cell must define `quick`"
    assert any(c.cell_type == "markdown" and "what this shows" in c.source.lower() for c in nb.cells)


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path, tmp_path):
    papermill = pytest.importorskip("papermill")
    out = tmp_path / path.name
    papermill.execute_notebook(
        str(path),
        str(out),
        parameters={"quick": True},
        kernel_name="python3",
        cwd=str(NOTEBOOK_DIR),
        progress_bar=False,
    )
    results = Path(os.environ["BIASKIT_RESULTS_DIR"]) / f"{path.stem}.json"
    assert results.exists(), f"{path.stem} did not write results/{path.stem}.json"
    data = json.loads(results.read_text(encoding="utf-8"))
    assert data["notebook"] == path.stem
    assert data["results"], "empty headline results"


COMPUTE_NOTEBOOKS = [
    NOTEBOOK_DIR / f"{n}.ipynb"
    for n in ("05_crows_pairs_pll", "06_stereoset", "07_pll_distributions", "08_robustness")
]


@pytest.mark.slow
@pytest.mark.parametrize("path", COMPUTE_NOTEBOOKS, ids=[p.stem for p in COMPUTE_NOTEBOOKS])
def test_masked_lm_notebook_executes_in_compute_mode(path, tmp_path):
    """The chapter-4 notebooks also run in "compute" mode: the pairs scored by a model here (the
    tiny in-process stand-in offline), not replayed from the thesis's published scores."""
    papermill = pytest.importorskip("papermill")
    papermill.execute_notebook(
        str(path),
        str(tmp_path / path.name),
        parameters={"quick": True, "mode": "compute"},
        kernel_name="python3",
        cwd=str(NOTEBOOK_DIR),
        progress_bar=False,
    )
    data = json.loads((Path(os.environ["BIASKIT_RESULTS_DIR"]) / f"{path.stem}.json").read_text("utf-8"))
    assert data["results"]["mode"] == "compute"
