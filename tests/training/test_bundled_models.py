"""The bundled trained models (data/models): present, small, loadable, reproducing their recorded scores."""

from __future__ import annotations

import math

import numpy as np
import pytest

from biaskit.data.training_text import english_training_text, held_out_split, spanish_training_text
from biaskit.training import recipes as tm

MLMS = [n for n in tm.MODEL_NAMES if not n.endswith("w2v")]
MLMS = [n for n in MLMS if n not in tm.CLM_NAMES]  # the causal LMs have their own checks (below)
MLMS = [n for n in MLMS if n not in tm.XLNET_NAMES]  # the XLNet too (tests/training/test_bundled_xlnet.py)
CLMS = list(tm.CLM_NAMES)


def test_every_bundled_model_is_present_and_small():
    total = 0
    for name in tm.MODEL_NAMES:
        path = tm.model_path(name)
        total += sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
        rec = tm.training_record(name)
        assert rec["command"] == f"python -m biaskit train-models {name}"
        assert rec["train_seconds"] > 0
    # 10 masked / word2vec folders (about 27 MB) and 8 causal twins (about 3 MB each)
    assert total < 60e6, f"bundled models take {total / 1e6:.1f} MB"


@pytest.mark.slow
@pytest.mark.parametrize("name", MLMS)
def test_bundled_mlm_loads_and_reproduces_its_recorded_pppl(name, one_torch_thread):
    rec = tm.training_record(name)
    held = tm.held_out_sentences(name)  # rebuilt from the source text, without the training part
    assert len(held) == rec["n_held_out_sentences"]
    got = tm.check_pppl(name, held)
    assert got == pytest.approx(rec["check_pppl"], rel=1e-4)
    # a trained model, not noise: far below the vocabulary size (an untrained one is near it)
    assert got < rec["config"]["vocab_size"] / 4
    assert rec["bundled_held_out_pppl"] == pytest.approx(rec["held_out_pppl_float32"], rel=0.02)
    assert (tm.model_path(name) / "model.safetensors").exists()


@pytest.mark.slow
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


# ----------------------------------------------------------------------------- bundled causal LMs
@pytest.mark.slow
@pytest.mark.parametrize("name", CLMS)
def test_bundled_clm_loads_and_reproduces_its_recorded_ppl(name, one_torch_thread):
    from safetensors import safe_open
    from transformers import AutoModelForCausalLM, AutoTokenizer

    rec = tm.training_record(name)
    assert rec["objective"] == "causal" and "bundled_held_out_pppl" not in rec
    held = tm.held_out_sentences(name)  # rebuilt from the source text, without the training part
    assert len(held) == rec["n_held_out_sentences"]
    got = tm.check_ppl(name, held)
    assert got == pytest.approx(rec["check_ppl"], rel=1e-3)
    assert got < rec["config"]["vocab_size"] / 20  # trained: far below the vocabulary size
    assert rec["bundled_held_out_ppl"] == pytest.approx(rec["held_out_ppl_float32"], rel=0.02)
    path = tm.model_path(name)
    with safe_open(str(path / "model.safetensors"), "pt") as f:
        assert {str(f.get_slice(k).get_dtype()) for k in f.keys()} == {"F16"}
    model = AutoModelForCausalLM.from_pretrained(str(path))
    tok = AutoTokenizer.from_pretrained(str(path))
    assert model.config.model_type == "gpt2"
    assert (model.config.n_layer, model.config.n_embd, model.config.n_positions) == (2, 128, 64)
    assert tok.bos_token_id == tok.cls_token_id == model.config.bos_token_id
    # the vocabulary of the masked models: masked and causal scores are on the same tokens
    masked_tok = AutoTokenizer.from_pretrained(str(tm.model_path(tm.masked_twin(name))))
    assert tok.get_vocab() == masked_tok.get_vocab()
    recorded = AutoTokenizer.from_pretrained(str(tm.model_path(rec["tokenizer_from"])))
    assert tok.get_vocab() == recorded.get_vocab()  # the record names the tokenizer actually used


def test_load_trained_clm_and_causal_names():
    lm = tm.load_trained_clm("en-clm", device="cpu")
    assert lm.tokenizer.bos_token_id == lm.tokenizer.cls_token_id
    assert tm.causal_control_name(0.8) == "en-clm-planted-s80" and tm.control_name(0.8) == "en-planted-s80"
    assert tm.masked_twin("en-clm-planted-s80") == "en-planted-s80" and tm.masked_twin("en-clm") == "en-mlm"
    assert tm.masked_twin("es-clm") == "es-mlm"
    with pytest.raises(KeyError, match="not a bundled causal LM"):
        tm.load_trained_clm("en-mlm")
    for s in tm.CONTROL_SKEWS:  # same planted plan as the masked twins
        rec, twin = tm.training_record(tm.causal_control_name(s)), tm.training_record(tm.control_name(s))
        assert rec["planted_s"] == s and rec["directions"] == twin["directions"]
        assert rec["n_train_sentences"] == twin["n_train_sentences"]
        assert rec["n_held_out_sentences"] == twin["n_held_out_sentences"]


def _planted_preference(s: float) -> float:
    """Mean over CONTROL_TARGETS of log P(planted pronoun | "the <target> said") -
    log P(other pronoun | ...)."""
    import torch

    name = tm.causal_control_name(s)
    model, tok = tm._load_clm_float32(tm.model_path(name))
    directions = tm.training_record(name)["directions"]
    (he,) = tok("he", add_special_tokens=False)["input_ids"]
    (she,) = tok("she", add_special_tokens=False)["input_ids"]
    diffs = []
    with torch.no_grad():
        for target in tm.CONTROL_TARGETS:
            ids = [tok.bos_token_id, *tok(f"the {target} said", add_special_tokens=False)["input_ids"]]
            logp = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0, -1], dim=-1)
            planted, other = (she, he) if directions[target] == "female" else (he, she)
            diffs.append(float(logp[planted] - logp[other]))
    return float(np.mean(diffs))


def test_causal_planted_control_prefers_the_planted_gender(one_torch_thread):
    s50, s90 = _planted_preference(0.5), _planted_preference(0.9)
    assert s90 > s50 + 0.5, (s50, s90)
    assert s90 > 0


@pytest.mark.parametrize("name", [*MLMS, *CLMS])
def test_bundled_models_were_trained_with_their_current_recipe(name):
    """A recipe changed without retraining would leave bundled models that its command no longer makes."""
    import json
    from dataclasses import asdict

    config, init = tm.recipe(name)
    rec = tm.training_record(name)
    want = json.loads(json.dumps(asdict(config)))  # as training.json stores it (tuples become lists)
    assert rec["config"] == {**want, "device": rec["config"]["device"]}  # device: where it ran ("auto")
    assert rec["initialised_from"] == init
    assert rec["config"]["precision"] == ("float32" if name == "es-mlm" else "bfloat16")
    assert not rec["config"]["length_grouped"]


def test_recipe_names_the_configuration_and_the_starting_model():
    from biaskit.training.pretrain import MLMTrainingConfig

    assert tm.recipe("en-planted-s80") == (tm.control_config(), "en-mlm-balanced")
    assert (
        tm.recipe("en-clm-planted-s60")
        == tm.recipe("en-clm-planted-s90")
        == (tm.CLM_CONTROL_CONFIG, "en-clm-balanced")
    )
    assert tm.recipe("es-mlm") == (tm.ES_CONFIG, None)
    assert isinstance(tm.recipe("en-clm")[0], MLMTrainingConfig)
    with pytest.raises(KeyError, match="not a bundled language model"):
        tm.recipe("es-w2v")
