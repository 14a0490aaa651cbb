"""The bundled XLNet (data/models/en-xlnet, seed 004 section 3.3.3): loads, is an XLNet, reproduces its
held-out score.

Its held-out score is a pseudo-perplexity read through XLNet's query stream
(:func:`biaskit.training.evaluation.xlnet_pseudo_perplexity`), not the permutation-LM perplexity.
"""

from __future__ import annotations

import json
from dataclasses import asdict

import numpy as np
import pytest
import torch

from biaskit.training import recipes as tm
from biaskit.training.objectives import build_plm_batch, pack_sequences

NAME = "en-xlnet"


def test_xlnet_is_bundled_small_and_half_precision():
    from safetensors import safe_open

    path = tm.model_path(NAME)
    rec = tm.training_record(NAME)
    assert rec["command"] == f"python -m biaskit train-models {NAME}"
    assert rec["objective"] == "permutation" and rec["tokenizer_from"] == "en-mlm-balanced"
    assert sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) < 5e6
    with safe_open(str(path / "model.safetensors"), "pt") as f:
        assert {str(f.get_slice(k).get_dtype()) for k in f.keys()} == {"F16"}
    cfg = json.loads((path / "config.json").read_text(encoding="utf-8"))
    assert cfg["model_type"] == "xlnet" and (cfg["n_layer"], cfg["d_model"]) == (2, 128)


@pytest.mark.slow
def test_xlnet_reproduces_its_recorded_held_out_pppl(one_torch_thread):
    rec = tm.training_record(NAME)
    got = tm.check_xlnet_pppl(NAME)  # held-out sentences rebuilt from the source text (en-mlm's split)
    assert got == pytest.approx(rec["check_pppl"], rel=1e-4)
    assert got < rec["config"]["vocab_size"] / 4  # trained: far below the vocabulary size
    assert rec["bundled_held_out_pppl"] == pytest.approx(rec["held_out_pppl_float32"], rel=0.02)
    assert rec["n_held_out_sentences"] == tm.training_record("en-mlm")["n_held_out_sentences"]


def test_xlnet_was_trained_with_its_current_recipe():
    config, init = tm.recipe(NAME)
    rec = tm.training_record(NAME)
    want = json.loads(json.dumps(asdict(config)))
    assert rec["config"] == {**want, "device": rec["config"]["device"]}
    assert init is None and rec["initialised_from"] is None


def test_bridge_reads_the_bundled_xlnet(one_torch_thread):
    from biaskit.lm.xlnet import load_bridge_lm
    from biaskit.training.evaluation import xlnet_pseudo_perplexity

    b = load_bridge_lm(NAME, xlnet_mode="perm_mask", padding_text="")
    assert b.kind == "xlnet" and b.name == NAME
    tok = b.lm.tokenizer
    sent = "the doctor said that she would come back tomorrow ."
    ids = tok(sent)["input_ids"]
    t = 2  # 'doctor'
    masked = list(ids)
    masked[t] = tok.mask_token_id
    # the perm_mask reading at a [MASK] equals the query-stream term of the pseudo-perplexity at that token:
    # the position is hidden from every position either way
    lp = b.log_probs_at_masks([masked], [0], np.array([[ids[t]]]))[0, 0]
    model, n_tok = b.lm.model, len([i for i in ids if i not in tok.all_special_ids])
    pppl, n = xlnet_pseudo_perplexity(model, tok, [sent])
    assert n == n_tok
    # one sentence: recompute every term with the bridge and compare the corpus PPPL
    terms = []
    for pos in range(1, len(ids) - 1):
        m = list(ids)
        m[pos] = tok.mask_token_id
        terms.append(b.log_probs_at_masks([m], [0], np.array([[ids[pos]]]))[0, 0])
    assert pppl == pytest.approx(float(np.exp(-np.mean(terms))), rel=1e-5)
    assert lp == pytest.approx(terms[t - 1], abs=1e-9)  # the same call


def test_plm_batch_hides_each_target_from_what_may_not_see_it():
    class Tok:
        pad_token_id, all_special_ids = 0, [0, 1, 2]

    seqs = [[1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 2], [1, 5, 6, 7, 2]]
    ids, att, perm, tmap, labels = build_plm_batch(seqs, Tok(), torch.Generator().manual_seed(0))
    assert att.tolist()[1] == [1] * 5 + [0] * 8
    for r, seq in enumerate(seqs):
        tgt_pos = [
            int(torch.nonzero(tmap[r, k]).flatten()[0]) for k in range(tmap.shape[1]) if tmap[r, k].sum() > 0
        ]
        n_real = len(seq) - 2
        assert len(tgt_pos) == max(1, round(n_real / 6))
        assert all(0 < p < len(seq) - 1 for p in tgt_pos)  # never a special token nor padding
        assert labels[r, : len(tgt_pos)].tolist() == [seq[p] for p in tgt_pos]
        assert (labels[r, len(tgt_pos) :] == -100).all()
        for k, p in enumerate(tgt_pos):
            for i in range(ids.shape[1]):
                later_target = i in tgt_pos[k + 1 :]
                assert perm[r, i, p] == (0.0 if later_target else 1.0)  # only targets ranked later see it
        others = [j for j in range(ids.shape[1]) if j not in tgt_pos]
        assert (perm[r][:, others] == 0).all()  # non-targets are visible to all


def test_pack_sequences_keeps_every_token_in_order():
    enc = [[1, 5, 6, 2], [1, 7, 2], [1, 8, 9, 10, 2], [1, 11, 2]]
    packed = pack_sequences(enc, 7, 1, 2)
    assert packed == [[1, 5, 6, 2, 7, 2], [1, 8, 9, 10, 2, 11, 2]]
    flat = [t for p in packed for t in p if t not in (1, 2)]
    assert flat == [5, 6, 7, 8, 9, 10, 11]
