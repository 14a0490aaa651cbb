"""The bundled trained models (data/models): present, small, loadable, reproducing their recorded scores."""

from __future__ import annotations

import math

import numpy as np
import pytest

from biaskit import trained_models as tm
from biaskit.training_text import english_training_text, held_out_split, spanish_training_text

MLMS = [n for n in tm.MODEL_NAMES if not n.endswith("w2v")]


def test_every_bundled_model_is_present_and_small():
    total = 0
    for name in tm.MODEL_NAMES:
        path = tm.model_path(name)
        total += sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
        rec = tm.training_record(name)
        assert rec["command"] == f"python -m biaskit train-models {name}"
        assert rec["train_seconds"] > 0
    assert total < 30e6, f"bundled models take {total / 1e6:.1f} MB"


@pytest.mark.parametrize("name", MLMS)
def test_bundled_mlm_loads_and_reproduces_its_recorded_pppl(name, one_torch_thread):
    rec = tm.training_record(name)
    got = tm.check_pppl(name)
    assert got == pytest.approx(rec["check_pppl"], rel=1e-4)
    # a trained model, not noise: far below the vocabulary size (an untrained one is near it)
    assert got < rec["config"]["vocab_size"] / 4
    assert rec["bundled_held_out_pppl"] == pytest.approx(rec["held_out_pppl_float32"], rel=0.02)
    assert (tm.model_path(name) / "model.safetensors").exists()


def test_held_out_split_is_deterministic_and_disjoint():
    text = english_training_text()
    train, held = held_out_split(text.sentences)
    assert 0.008 < len(held) / len(text) < 0.012
    assert not set(train) & set(held)
    assert held_out_split(list(reversed(text.sentences)))[1] == list(reversed(held))
    rec = tm.training_record("en-mlm")
    assert rec["n_held_out_sentences"] == len(held) and rec["n_train_sentences"] == len(train)
    assert rec["sources"] == text.sources


def test_spanish_text_is_the_bundled_europarl():
    text = spanish_training_text()
    rec = tm.training_record("es-mlm")
    assert rec["sources"] == text.sources
    assert sum(text.sources.values()) > 13_000


def test_control_records_plant_the_requested_skew():
    for s in tm.CONTROL_SKEWS:
        rec = tm.training_record(tm.control_name(s))
        assert rec["planted_s"] == s
        realised = np.array([r["realised"] for r in rec["targets"]])
        assert np.all(np.abs(realised - s) < 0.01)
        assert sorted(rec["directions"]) == sorted(tm.CONTROL_TARGETS)


def test_planted_vectors_load_for_every_skew():
    for s in tm.CONTROL_SKEWS:
        kv = tm.load_trained_vectors("en-planted-w2v", s=s)
        assert all(t in kv.key_to_index for t in tm.CONTROL_TARGETS)
        assert kv.vector_size == tm.W2V_PARAMS["vector_size"]
    es = tm.load_trained_vectors("es-w2v")
    assert "mujer" in es.key_to_index and not math.isnan(float(es.similarity("mujer", "hombre")))
    with pytest.raises(ValueError, match="pass s"):
        tm.load_trained_vectors("en-planted-w2v")


def test_unknown_model_names_say_what_exists():
    with pytest.raises(KeyError, match="known: en-mlm"):
        tm.model_path("gpt-5")
