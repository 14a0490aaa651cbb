"""Every notebook executes headless under papermill (with ``quick=True``) and writes its JSON.

This is the end-to-end check that ``make reproduce`` works: the same papermill call, on the same
bundled offline defaults, only with the notebook's ``quick`` parameter set so the suite stays fast.
The notebooks are executed once per session by the ``reproduced_results`` fixture
(``tests/conftest.py``); the tests below read that run.  Only the isolation tests execute a
notebook again, with other parameters, to check that such a run never touches the default one.
"""

from __future__ import annotations

import hashlib
import json
import numbers
import re
import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest

NOTEBOOK_DIR = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks found"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_stored_clean_and_parameterised(path):
    raw = json.loads(path.read_text(encoding="utf-8"))
    no_id = [i for i, c in enumerate(raw["cells"]) if not c.get("id")]
    assert not no_id, (
        f"cells {no_id} have no id (nbformat 4.5 requires one; nbformat.validator.normalize adds them)"
    )
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "notebook has no code"
    assert all(not c.get("outputs") for c in code), "stored with outputs"
    assert all(c.get("execution_count") is None for c in code), "stored with execution counts"
    tagged = [c for c in code if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, "needs exactly one code cell tagged 'parameters'"
    assert "quick" in tagged[0].source, "the parameters cell must define `quick`"
    assert re.search(r"^results_dir\b.*=\s*\"\"", tagged[0].source, re.M), (
        'the parameters cell must define `results_dir = ""` (the folder of this run\'s JSON and figures)'
    )
    assert any(c.cell_type == "markdown" and "what this shows" in c.source.lower() for c in nb.cells)


# ----------------------------------------------------------------------------- the reproduced run
def _require(reproduced_results: Any, stem: str) -> None:
    if stem in reproduced_results.errors:
        pytest.fail(f"{stem} failed under papermill:\n{reproduced_results.errors[stem]}")


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _is_headline_value(value: Any) -> bool:
    """A number, or a short text around one that reads better than the bare number ("7 of 10")."""
    if value is None or _is_number(value):
        return True
    return isinstance(value, str) and len(value) <= 40 and any(ch.isdigit() for ch in value)


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path, reproduced_results):
    """Executed as ``make reproduce`` does; its JSON sits beside it with a finding, headline and
    parameters."""
    _require(reproduced_results, path.stem)
    folder = reproduced_results.folder
    assert (folder / path.name).is_file(), "no executed notebook"
    results = folder / f"{path.stem}.json"
    assert results.is_file(), f"{path.stem} did not write {path.stem}.json beside its executed notebook"
    data = json.loads(results.read_text(encoding="utf-8"))
    assert data["notebook"] == path.stem
    assert data["results"], "empty results"
    finding = data.get("finding")
    assert isinstance(finding, str) and len(finding.split()) >= 5, f"no plain finding sentence: {finding!r}"
    headline = data.get("headline")
    assert isinstance(headline, dict) and 2 <= len(headline) <= 3, f"needs 2-3 headline numbers: {headline!r}"
    for label, value in headline.items():
        assert isinstance(label, str) and label.strip()
        assert _is_headline_value(value), f"headline {label!r} is not a number: {value!r}"
    assert any(v is not None for v in headline.values()), "every headline number is missing"
    params = data.get("parameters")
    assert isinstance(params, dict), "the run's parameters are not recorded"
    assert params.get("quick") is True
    assert params.get("results_dir") == str(folder)


GENERATED_FINDINGS = [
    "03_weat",
    "11_gender_templates_and_pairs",
    "12_class_confusion_and_domain_bias",
    "14_calibration",
    "15_cds_fine_tuning",
]


@pytest.mark.slow
@pytest.mark.parametrize("stem", GENERATED_FINDINGS)
def test_generated_findings_match_their_json(stem, reproduced_results):
    """A sentence built from a run's numbers is stored beside them and rebuilds to the same words."""
    from biaskit.report.findings import stored_and_rebuilt

    _require(reproduced_results, stem)
    data = json.loads((reproduced_results.folder / f"{stem}.json").read_text(encoding="utf-8"))
    triples = stored_and_rebuilt(stem, data["results"])
    assert triples, f"{stem} stores no generated sentence"
    for name, stored, rebuilt in triples:
        assert stored == rebuilt, f"{stem}: the {name} sentence disagrees with the numbers saved beside it"


def _output_texts(nb: Any) -> list[tuple[int, str, str]]:
    """(cell index, kind, text) of every reader-visible output, including figure alt texts."""
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for o in cell.get("outputs", []):
            if o.get("output_type") == "stream":
                out.append((i, f"stream {o.get('name')}", o.get("text", "")))
            elif o.get("output_type") == "error":
                out.append((i, "error", f"Traceback {o.get('ename')}: {o.get('evalue')}"))
            else:
                data = o.get("data", {})
                richer = any(k in data for k in ("text/html", "text/markdown", "image/png"))
                for kind, text in data.items():
                    if kind.startswith("text/") and not (kind == "text/plain" and richer):
                        out.append((i, kind, text if isinstance(text, str) else "".join(text)))
                alt = o.get("metadata", {}).get("image/png", {}).get("alt")
                if alt:
                    out.append((i, "figure alt", alt))
    return out


#: Raw Python output that must not reach a reader's page (the exact values stay in the JSON).
_NOISE = {
    "a Path repr": re.compile(r"PosixPath\(|WindowsPath\("),
    "a pandas dtype line": re.compile(r"dtype: \w+"),
    "a raw log line": re.compile(r"\bWARNING:|WARNING biaskit|WARNING \w+(\.\w+)+:"),
    "a traceback": re.compile(r"Traceback"),
    "e-notation": re.compile(r"\d\.?\d*e[-+]\d{2}\b"),
    "NaN": re.compile(r"\bNaN\b"),
    "a list or dict repr": re.compile(r"\['[^']*'(, '[^']*')*\]|\{'[^']*': "),
    "'saved <path>'": re.compile(r"\bsaved /"),
}


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_reader_sees_no_raw_python_output(path, reproduced_results):
    """No Path/list/dict reprs, dtype dumps, raw log lines, tracebacks, NaN or e-notation in any output."""
    _require(reproduced_results, path.stem)
    nb = nbformat.read(reproduced_results.folder / path.name, as_version=4)
    problems = []
    for i, kind, text in _output_texts(nb):
        if kind == "text/html":  # style and script blocks, tag attributes: not what the reader reads
            text = re.sub(r"<(style|script)\b.*?</\1>|<[^>]+>", " ", text, flags=re.S)
        for what, pattern in _NOISE.items():
            m = pattern.search(text)
            if m:
                problems.append(
                    f"cell {i} ({kind}) shows {what}: ...{text[max(0, m.start() - 60) : m.end() + 40]!r}"
                )
    assert not problems, "\n".join(problems)


# ----------------------------------------------------------------------------- compute mode
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
        parameters={"quick": True, "mode": "compute", "results_dir": str(tmp_path)},
        kernel_name="python3",
        cwd=str(NOTEBOOK_DIR),
        progress_bar=False,
    )
    data = json.loads((tmp_path / f"{path.stem}.json").read_text("utf-8"))
    assert data["results"]["mode"] == "compute"
    assert data["parameters"]["mode"] == "compute"


# ----------------------------------------------------------------------------- isolated runs
def _hashes(folder: Path) -> dict[str, str]:
    """sha256 of every file under ``folder``, by relative path."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


OTHER_PARAMETERS = [
    "-p",
    "quick",
    "True",
    "-p",
    "n_permutations",
    "2000",
    "-p",
    "english_vectors",
    "glove-6b-50d",
]


@pytest.mark.slow
def test_run_with_other_parameters_leaves_the_default_run_byte_identical(reproduced_results, tmp_path):
    """``python -m biaskit notebook`` with other parameters writes beside its OUTPUT, nowhere else;
    its text and finding follow the parameters (GloVe, not word2vec) and its empty rows say why."""
    from biaskit.__main__ import main

    _require(reproduced_results, "03_weat")
    default = reproduced_results.folder
    before = _hashes(default)
    assert "03_weat.json" in before and any(k.startswith("03_weat_") and k.endswith(".png") for k in before)

    out = tmp_path / "glove run" / "03_weat.ipynb"
    assert main(["notebook", "03_weat", str(out), *OTHER_PARAMETERS]) == 0

    assert _hashes(default) == before, "the run with other parameters changed the default results folder"
    assert out.is_file()
    data = json.loads((out.parent / "03_weat.json").read_text(encoding="utf-8"))
    figures = sorted(p.name for p in out.parent.glob("03_weat_*.png"))
    assert figures == sorted(k for k in before if k.startswith("03_weat_") and k.endswith(".png"))
    assert data["parameters"]["english_vectors"] == "glove-6b-50d"
    assert data["parameters"]["n_permutations"] == 2000
    assert data["parameters"]["results_dir"] == str(out.parent)
    assert data["results"]["english_vectors"] == "glove-6b-50d"
    assert "GloVe" in data["finding"] and "word2vec" not in data["finding"]

    # rows that GloVe cannot compute (its vocabulary is lower-case: no first names) say why
    empty = [r for r in data["results"]["english_weat"] if r["d"] is None]
    assert {r["test"] for r in empty} >= {"weat3", "weat10"}
    assert all(r["note"].startswith("not computed:") and "vocabulary" in r["note"] for r in empty)

    # the page names the vectors of this run, not the default ones
    nb = nbformat.read(out, as_version=4)
    texts = " ".join(t for _, kind, t in _output_texts(nb) if kind in ("text/markdown", "figure alt"))
    assert "GloVe 6B" in texts
    assert "word2vec GoogleNews (13,000-word subset)" not in texts


@pytest.mark.slow
def test_run_without_a_folder_goes_to_a_new_runs_folder(reproduced_results, tmp_path, monkeypatch):
    """Neither ``results_dir`` nor an injected output path: a new ``<results root>/runs/`` folder,
    never the default results (here a copy of the reproduced run, standing for ``results/``)."""
    papermill = pytest.importorskip("papermill")
    _require(reproduced_results, "03_weat")
    root = tmp_path / "results"
    shutil.copytree(reproduced_results.folder, root)
    monkeypatch.setenv("BIASKIT_RESULTS_DIR", str(root))
    before = _hashes(root)

    elsewhere = tmp_path / "executed"
    elsewhere.mkdir()
    papermill.execute_notebook(
        str(NOTEBOOK_DIR / "03_weat.ipynb"),
        str(elsewhere / "03_weat.ipynb"),
        parameters={"quick": True, "n_permutations": 2000},
        kernel_name="python3",
        cwd=str(NOTEBOOK_DIR),
        progress_bar=False,
    )

    after = _hashes(root)
    assert {k: v for k, v in after.items() if not k.startswith("runs/")} == before
    runs = sorted((root / "runs").glob("03_weat-*"))
    assert len(runs) == 1, runs
    assert (runs[0] / "03_weat.json").is_file()
    assert list(runs[0].glob("03_weat_*.png"))
    assert sorted(p.name for p in elsewhere.iterdir()) == ["03_weat.ipynb"]
    data = json.loads((runs[0] / "03_weat.json").read_text(encoding="utf-8"))
    assert data["parameters"]["results_dir"] == ""


# ----------------------------------------------------------------------------- the CLI itself
@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("True", True),
        ("False", False),
        ("None", None),
        ("2000", 2000),
        ("0.5", 0.5),
        ("glove-6b-50d", "glove-6b-50d"),
    ],
)
def test_notebook_command_reads_values_as_papermill_does(text, value):
    from biaskit.__main__ import parse_parameter_value

    parsed = parse_parameter_value(text)
    assert parsed == value and type(parsed) is type(value)


def test_notebook_command_finds_notebooks_by_name_and_refuses_bad_outputs(tmp_path, capsys):
    from biaskit.__main__ import _find_notebook, main

    assert _find_notebook("03_weat") == NOTEBOOK_DIR / "03_weat.ipynb"
    assert _find_notebook("03_weat.ipynb") == NOTEBOOK_DIR / "03_weat.ipynb"
    assert _find_notebook(str(NOTEBOOK_DIR / "03_weat.ipynb")) == NOTEBOOK_DIR / "03_weat.ipynb"
    assert main(["notebook", "99_nothing", str(tmp_path / "x.ipynb")]) == 1
    assert "no notebook '99_nothing'" in capsys.readouterr().err
    assert main(["notebook", "03_weat", str(tmp_path / "x.txt")]) == 1
    assert "OUTPUT must be a .ipynb file" in capsys.readouterr().err
    assert main(["notebook", "03_weat", str(NOTEBOOK_DIR / "03_weat.ipynb")]) == 1
    assert not list(tmp_path.iterdir()), "a refused command wrote something"


def _tiny_notebook(path: Path, code: str) -> Path:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('results_dir = ""')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(code)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


@pytest.mark.slow
def test_reproduce_command_runs_notebooks_in_order_and_stops_at_a_failure(tmp_path, capsys):
    from biaskit.__main__ import main

    write = "from pathlib import Path\nPath(results_dir, '{}.txt').write_text(results_dir)"
    good = _tiny_notebook(tmp_path / "01_good.ipynb", write.format("01"))
    bad = _tiny_notebook(tmp_path / "02_bad.ipynb", "raise RuntimeError('planted failure')")
    later = _tiny_notebook(tmp_path / "03_later.ipynb", write.format("03"))
    out = tmp_path / "out"
    assert main(["reproduce", "--out", str(out), str(good), str(later)]) == 0
    # each notebook's results_dir is the output folder, as `biaskit notebook` sets it
    assert (out / "01.txt").read_text() == str(out) and (out / "03.txt").is_file()
    assert (out / "01_good.ipynb").is_file() and (out / "03_later.ipynb").is_file()
    printed = capsys.readouterr().out
    assert printed.index("== ") < printed.index("01_good.ipynb ->") < printed.index("03_later.ipynb ->")
    (out / "03.txt").unlink()
    assert main(["reproduce", "--out", str(out), str(good), str(bad), str(later)]) == 1
    assert "02_bad.ipynb stopped at cell" in capsys.readouterr().err
    assert not (out / "03.txt").exists()  # nothing runs after the failure


def test_kernel_sockets_live_in_a_temporary_folder_not_beside_the_notebook(tmp_path):
    """The kernel's IPC sockets go to a private temporary folder, removed afterwards: a dead kernel used to
    leave ``kernel-ipc-N`` sockets in ``notebooks/`` (jupyter_client's default is the relative
    ``kernel-ipc``)."""
    from biaskit.__main__ import _execute_notebook, ipc_kernel_config

    with ipc_kernel_config() as config:
        ip = Path(config.KernelManager.ip)
        assert ip.is_absolute() and ip.parent.is_dir() and config.KernelManager.transport == "ipc"
    assert not ip.parent.exists()
    # the kernel runs with the notebook's folder as its working folder; list the sockets it opens
    code = (
        "import glob, json, tempfile\nprint(json.dumps(glob.glob(tempfile.gettempdir() + "
        "'/biaskit-kernel-*/*')))"
    )
    (tmp_path / "nb").mkdir()
    nb = _tiny_notebook(tmp_path / "nb" / "01_sockets.ipynb", code)
    out = tmp_path / "out" / "01_sockets.ipynb"
    assert _execute_notebook(nb, out, {}) == 0
    opened = json.loads(nbformat.read(out, as_version=4).cells[-1].outputs[0]["text"])
    assert any(Path(p).name.startswith("kernel-ipc-") for p in opened)
    assert not list((tmp_path / "nb").glob("kernel-ipc*")) and not list(Path.cwd().glob("kernel-ipc*"))
