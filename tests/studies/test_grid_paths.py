"""Paths a user gives the batch grid start from the folder they started in.

The configuration file, its models' and datasets' paths, ``output_dir`` and ``python -m biaskit run``'s
arguments go through :func:`biaskit.core.paths.resolve_user_path`: relative to ``BIASKIT_CALLER_CWD``
when set (a notebook kernel runs in ``notebooks/``), else to the working directory.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from biaskit.embeddings.vectors import from_dict, save_vectors
from biaskit.studies.grid import load_config, load_dataset, run_experiments

WORDS = {
    "X": ["math", "algebra", "geometry"],
    "Y": ["poetry", "art", "dance"],
    "A": ["he", "man", "boy"],
    "B": ["she", "woman", "girl"],
}


@pytest.fixture
def user(tmp_path, monkeypatch):
    """A user's folder with a grid configuration and its files, while the process runs elsewhere."""
    home = tmp_path / "user"
    data = home / "data"
    (data / "LPBS").mkdir(parents=True)
    rng = np.random.default_rng(0)
    vocab = [w for ws in WORDS.values() for w in ws] + ["This", "is", "That"]
    save_vectors(from_dict({w: rng.normal(size=8) for w in vocab}), data / "toy.kv")
    (data / "toy_weat.txt").write_text("\n".join(", ".join(WORDS[r]) for r in "XYAB"), encoding="utf-8")
    seat = {
        k: {
            "category": r,
            "examples": [f"This is {w}." for w in WORDS[r]] + [f"That is {w}." for w in WORDS[r]],
        }
        for k, r in zip(("targ1", "targ2", "attr1", "attr2"), "XYAB", strict=True)
    }
    (data / "toy_seat.jsonl").write_text(json.dumps(seat), encoding="utf-8")
    lpbs = {
        "targ1": {"singular": ["he"]},
        "targ2": {"singular": ["she"]},
        "attr1": WORDS["X"],
        "attr2": WORDS["Y"],
    }
    lpbs["templates"] = {"singular": ["TARGET likes ATTRIBUTE."]}
    (data / "LPBS" / "toy_lpbs.jsonl").write_text(json.dumps(lpbs), encoding="utf-8")
    pd.DataFrame(
        {"sent_more": ["he likes math", "she likes dance"], "sent_less": ["she likes math", "he likes dance"]}
    ).to_csv(data / "toy_crows.csv", index=False)
    config = {
        "name": "paths",
        "models": [{"name": "toy", "path": "data/toy.kv"}],
        "datasets": [
            {"name": "weat", "path": "data/toy_weat.txt"},
            {"name": "seat", "path": "data/toy_seat.jsonl"},
        ],
        "metrics": ["weat", "seat"],
        "options": {"n_permutations": 50},
    }
    (home / "grid.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    elsewhere = tmp_path / "kernel"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("BIASKIT_CALLER_CWD", str(home))
    return home, elsewhere, config


def test_a_grid_reads_and_writes_relative_to_the_callers_folder(user):
    home, elsewhere, config = user
    df = run_experiments("grid.yaml", output_dir="out", progress=False)
    assert set(df["metric"]) == {"weat", "seat"}
    assert (df["status"] == "ok").all(), df[["metric", "error"]]
    assert (home / "out" / "paths.csv").exists() and (home / "out" / "paths.log").exists()
    assert not (elsewhere / "out").exists()
    # a configuration given as a dict: its output_dir starts from the caller's folder too
    assert load_config({**config, "output_dir": "out2"}).output_dir == home / "out2"
    # in a file, output_dir stays relative to the file's folder
    (home / "sub").mkdir()
    (home / "sub" / "grid.yaml").write_text(yaml.safe_dump({**config, "output_dir": "o"}), encoding="utf-8")
    assert load_config("sub/grid.yaml").output_dir == home / "sub" / "o"


def test_datasets_by_path_start_from_the_callers_folder_and_identifiers_stay(user):
    kind, crows = load_dataset("crows:data/toy_crows.csv")
    assert kind == "crows" and crows["sent_more"].tolist() == ["he likes math", "she likes dance"]
    kind, q = load_dataset("data/LPBS/toy_lpbs.jsonl")
    assert kind == "lpbs" and q.name == "toy_lpbs"
    kind, q = load_dataset("data/toy_weat.txt")
    assert kind == "words"
    assert load_dataset("may2019:weat7")[0] == "words"  # a bundled identifier, not a path
    with pytest.raises(FileNotFoundError, match="LPBS file not found"):
        load_dataset("data/LPBS/missing_lpbs.jsonl")


def test_the_run_command_resolves_its_paths_from_the_callers_folder(user, capsys):
    from biaskit.__main__ import main

    home, elsewhere, _ = user
    assert main(["run", "grid.yaml", "--no-progress", "--output-dir", "cli_out"]) == 0
    assert (home / "cli_out" / "paths.csv").exists() and not (elsewhere / "cli_out").exists()
    assert str(home / "cli_out") in capsys.readouterr().out


def test_a_model_is_classified_once_on_its_way_to_the_weights(monkeypatch):
    """The grid reads a model's kind once per model (however many cells it has), and get_lm takes the
    ModelChoice resolve_default_model returned without classifying the name again."""
    from biaskit.lm import builtin
    from biaskit.studies.grid_config import ModelSpec

    spec = ModelSpec("stand-in", "tiny-causal")
    assert spec.resolved_kind == "causal"
    monkeypatch.setattr(
        builtin, "resolve_user_path", lambda p: (_ for _ in ()).throw(AssertionError("again"))
    )
    assert spec.resolved_kind == "causal"  # cached: the path is not looked at again
    monkeypatch.undo()
    choice = builtin.resolve_default_model("tiny", lm_kind="masked")
    assert choice.kind == "random"
    calls = []
    monkeypatch.setattr(builtin, "is_trained_name", lambda name: calls.append(name) or False)
    monkeypatch.setattr(builtin, "_refuse_near_miss", lambda *a: calls.append(a))
    lm = builtin.get_lm(choice)
    assert lm.kind == "masked" and calls == []  # loaded as the choice says, the name not classified again
    with pytest.raises(Exception):  # noqa: B017 - a plain name goes through the checks (then fails to load)
        builtin.get_lm("no-such-model-anywhere")
    assert calls[0] == "no-such-model-anywhere" and len(calls) == 2


def test_grid_options_are_the_grids_own_and_each_metrics_and_are_resolved_once():
    from biaskit.core.registry import REGISTRY
    from biaskit.studies.grid_config import GRID_OPTIONS, default_options, grid_options

    base = {"models": ["tiny"], "datasets": ["may2019:weat7"], "metrics": ["weat", "crows"]}
    cfg = load_config({**base, "options": {"n_permutations": 50, "crows_metric": "sz"}})
    # every default filled in once, for the grid's own options and the chosen metrics' options
    assert cfg.options["n_permutations"] == 50 and cfg.options["crows_metric"] == "sz"
    assert cfg.options["weat_alternative"] == "greater" and cfg.options["device"] == "auto"
    assert set(cfg.options) == set(grid_options(["weat", "crows"]))
    assert load_config({**base, "options": cfg.to_dict()["options"]}).options == cfg.options
    # the options a configuration takes: the grid's own and every metric's <metric>_<name>
    keys = {o.name for o in GRID_OPTIONS} | {k for m in REGISTRY.with_grid() for k in m.grid_option_keys()}
    assert set(grid_options()) == keys and set(default_options()) == keys
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['rnd_alternatives'\]"):
        load_config({**base, "options": {"rnd_alternatives": "less"}})
    with pytest.raises(ValueError, match="option crows_metric='ll' is not one of"):
        load_config({**base, "options": {"crows_metric": "ll"}})
    with pytest.raises(ValueError, match="option n_permutations='many' must be a int"):
        load_config({**base, "options": {"n_permutations": "many"}})
