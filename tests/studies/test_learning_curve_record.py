"""The recorded Fig. 13 learning curve (seed 002 section 6.4): its reader, provenance and the committed
record."""

from __future__ import annotations

import json

import numpy as np
import pytest

from biaskit.core.io import sha256_file
from biaskit.lm.catalogue import model_path
from biaskit.studies.learning_curve_record import (
    RECORD_FILE,
    THESIS_GRID,
    default_record_dir,
    load_record,
)


def _record(tmp_path, **over):
    rows = [
        {"n": 500, "sample": 0, "mean |APPD|": 0.2, "ASLD x": 1.0, "steps": 500, "train_seconds": 9.0},
        {"n": 500, "sample": 1, "mean |APPD|": 0.4, "ASLD x": 2.0, "steps": 500, "train_seconds": 9.0},
        {"n": 1000, "sample": 0, "mean |APPD|": 0.1, "ASLD x": 0.5, "steps": 1000, "train_seconds": 18.0},
    ]
    rec = {
        "what": "seed 002 (Barza 2023) section 6.4, Fig. 13: CDS-GAP learning curve, recorded run",
        "parameters": {"model": "en-mlm", "sizes": [500, 1000], "samples": [0, 1], "epochs": 1, "n_jobs": 2},
        "model": {"name": "en-mlm", "files_sha256": {"model.safetensors": "ab" * 32}},
        "machine": {"cpu": "Test CPU", "cores": 2},
        "versions": {"torch": "x"},
        "before": {"mean |APPD|": 0.5, "ASLD x": 3.0},
        "coverage": {"runs_done": 3, "runs_planned": 4, "versus_thesis": "Differs."},
        "finished": None,
        "updated": "2026-01-01T00:00:00+00:00",
        "wall_seconds": 120.0,
        "runs": rows,
    }
    rec.update(over)
    (tmp_path / RECORD_FILE).write_text(json.dumps(rec), encoding="utf-8")
    return tmp_path


def test_reader_summarises_per_size(tmp_path):
    r = load_record(_record(tmp_path))
    assert r is not None and r.measures == ["mean |APPD|", "ASLD x"]
    s = r.summary()
    assert s.loc[500, ("mean |APPD|", "mean")] == pytest.approx(0.3)
    assert s.loc[500, ("ASLD x", "std")] == pytest.approx(np.std([1.0, 2.0], ddof=1))
    assert s.loc[1000, ("mean |APPD|", "runs")] == 1
    text = r.provenance()
    assert "3 of 4 planned fine-tunes" in text and "Test CPU" in text and "abababababab" in text
    assert "n = 500, 1,000" in text and f"{THESIS_GRID['samples']} repetitions" in text


def test_reader_refuses_a_record_without_provenance(tmp_path):
    with pytest.raises(ValueError, match="lacks its provenance"):
        load_record(_record(tmp_path, model={"name": "en-mlm", "files_sha256": {}}))
    with pytest.raises(ValueError, match="lacks its provenance"):
        load_record(_drop(_record(tmp_path), "machine"))
    with pytest.raises(ValueError, match=r"not a Fig\. 13"):
        load_record(_record(tmp_path, what="something else"))
    assert load_record(tmp_path / "nowhere") is None


def _drop(folder, key):
    rec = json.loads((folder / RECORD_FILE).read_text(encoding="utf-8"))
    rec.pop(key)
    (folder / RECORD_FILE).write_text(json.dumps(rec), encoding="utf-8")
    return folder


def test_committed_record_states_its_parameters_and_provenance():
    r = load_record()
    if r is None:
        pytest.skip("no records/fig13 in this checkout")
    p = r.parameters
    assert p["model"] == "en-mlm" and p["seed"] == 0 and p["fine_tune"]["learning_rate"] == 2e-5
    assert p["fine_tune"]["batch_size"] == 1 and p["epochs"] in (1, 2, 3)
    assert set(p["sizes"]) <= set(THESIS_GRID["sizes"])
    # the weights it started from are the bundled en-mlm's
    assert r.meta["model"]["files_sha256"]["model.safetensors"] == sha256_file(
        model_path("en-mlm") / "model.safetensors"
    )
    assert r.meta["machine"]["cpu"] and r.meta["machine"]["cores"] >= 1
    assert r.meta["versions"]["torch"] and r.meta["versions"]["git_commit"]
    assert r.meta["started"] and r.meta["coverage"]["runs_done"] == len(r.runs) > 0
    assert set(r.runs["n"]) <= set(p["sizes"])
    assert {"mean |APPD|", "steps", "model_folder", "model_written"} <= set(r.runs.columns)
    # every fine-tune ran the recorded number of steps: n sentences x epochs at batch size 1
    assert (r.runs["steps"] == r.runs["n"] * p["epochs"]).all()
    assert r.before["mean |APPD|"] > 0
    assert "Differs from the thesis's grid" in r.provenance() or r.coverage()["complete"]
    assert (default_record_dir() / "fig13_learning_curve.png").is_file()
