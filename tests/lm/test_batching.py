"""Token-budget batching of every scorer, prefix-tree packing of causal sentences, resumable caching.

Scores must not depend on how the work is cut into forward passes beyond float rounding: different token
budgets and row caps agree to 1e-5, the prefix-tree rows of a causal model agree with one row per sentence,
and a job interrupted and resumed from the disk cache gives bit for bit the scores (and, through the
``score`` command, byte for byte the CSV) of an uninterrupted one.  The independent references of the
scores themselves are in ``tests/lm/test_masked_scoring.py``, ``tests/lm/test_causal_scoring.py`` and
``tests/lm/test_crows_official.py``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from biaskit import lm as lms
from biaskit.data.datasets import load_crows_pairs_es
from biaskit.lm import base, tiny_causal_lm, tiny_masked_lm
from biaskit.lm import causal as lm_causal
from biaskit.lm import masked as lm_masked

TOL = 1e-5


@pytest.fixture(scope="module")
def pairs() -> pd.DataFrame:
    return load_crows_pairs_es().head(40).reset_index(drop=True)


@pytest.fixture(scope="module")
def mlm(one_torch_thread):
    return tiny_masked_lm(seed=5)


@pytest.fixture(scope="module")
def clm(one_torch_thread):
    return tiny_causal_lm(seed=5)


# --------------------------------------------------------------------------------------- plan_batches
@pytest.mark.parametrize("budget", [1, 7, 64, 10_000])
@pytest.mark.parametrize("cap", [None, 3])
def test_plan_batches_covers_everything_once_within_the_budget(budget, cap):
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 30, size=200)
    batches = base.plan_batches(lengths, batch_tokens=budget, batch_size=cap)
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(200))
    prev = None
    for b in batches:
        width = int(lengths[b].max())
        assert len(b) == 1 or len(b) * width <= budget
        if cap is not None:
            assert len(b) <= cap
        assert width == lengths[b[0]]  # longest first inside a batch ...
        if prev is not None:
            assert width <= prev  # ... and over the batches
        prev = width
    again = base.plan_batches(lengths, batch_tokens=budget, batch_size=cap)
    assert all(np.array_equal(a, b) for a, b in zip(batches, again, strict=True))


def test_plan_batches_bounds_the_padding_of_full_batches():
    lengths = np.r_[np.full(50, 40), np.arange(39, 1, -1).repeat(5)]
    batches = base.plan_batches(lengths, batch_tokens=1024, max_pad=0.02)
    for b in batches:
        slots = len(b) * int(lengths[b].max())
        pad = slots - int(lengths[b].sum())
        assert pad <= 0.02 * slots or slots <= 1024 // 16
    stats = base.BatchStats()
    for b in batches:
        stats.add(lengths[b])
    assert stats.rows == len(lengths) and stats.tokens == int(lengths.sum())
    assert 0 <= stats.pad_share <= 0.02


def test_plan_batches_refuses_bad_budgets():
    with pytest.raises(ValueError, match="batch_tokens"):
        base.plan_batches([3, 4], batch_tokens=0)
    with pytest.raises(ValueError, match="batch_size"):
        base.plan_batches([3, 4], batch_tokens=10, batch_size=0)
    with pytest.raises(ValueError, match="batch_tokens"):
        base.batch_token_budget(-5)
    assert base.batch_token_budget(None, "cpu") == base.DEFAULT_BATCH_TOKENS["cpu"]


# --------------------------------------------------------------------------------------- head_log_probs
def test_head_log_probs_in_slices_with_shared_rows_equals_one_log_softmax(monkeypatch):
    torch.manual_seed(0)
    head = torch.nn.Linear(8, 50)
    hidden = torch.randn(30, 8)
    index = torch.tensor([3, 3, 0, 29, 7, 7, 7, 12, 0])
    targets = torch.tensor([1, 2, 3, 4, 5, 6, 7, 8, 49])
    ref = torch.log_softmax(head(hidden), -1)[index, targets]
    monkeypatch.setattr(base, "LOGIT_ELEMENTS", 50 * 4)  # slices of 4 rows
    got = base.head_log_probs(hidden, head, targets, vocab_size=50, index=index)
    torch.testing.assert_close(got, ref, atol=1e-6, rtol=0)
    plain = base.head_log_probs(hidden[:9], head, targets, vocab_size=50)
    torch.testing.assert_close(plain, torch.log_softmax(head(hidden[:9]), -1)[torch.arange(9), targets])


# --------------------------------------------------------------------------------------- budgets agree
@pytest.mark.slow
@pytest.mark.parametrize("metric", ["cp", "sz", "aul"])
def test_masked_scores_do_not_depend_on_the_token_budget(mlm, pairs, metric):
    runs = [
        lms.score_pairs(
            mlm, pairs["sent_more"], pairs["sent_less"], metric, cache=False, progress=False, **kw
        )
        for kw in (
            {},
            {"batch_tokens": 16},
            {"batch_tokens": 300, "batch_size": 5},
            {"batch_tokens": 100_000},
        )
    ]
    for r in runs[1:]:
        for col in ("sent_more_score", "sent_less_score"):
            # a sentence score sums some 40 float32 token log-probabilities to about -300; a batch of another
            # shape (or one BLAS thread per test worker) computes each in another order, which moves it by
            # a float32 step or so (1e-6 at -10), and the sum by up to about 1e-5 (measured: 1.05e-5):
            # allow 1e-7 of the score on top (3e-5 at -300), so a real difference of 1e-4 still fails
            np.testing.assert_allclose(r.scores[col], runs[0].scores[col], atol=TOL, rtol=1e-7)
        np.testing.assert_allclose(r.tokens["log_prob"], runs[0].tokens["log_prob"], atol=TOL, rtol=0)
    small, big = runs[1].batching, runs[3].batching
    assert small["batches"] > big["batches"] >= 1
    assert small["tokens"] == big["tokens"] and small["rows"] == big["rows"]
    assert 0 <= big["pad_share"] < 0.5


@pytest.mark.parametrize("metric", ["ll", "shared", "ll_mean"])
def test_causal_scores_do_not_depend_on_the_token_budget(clm, pairs, metric):
    runs = [
        lms.score_pairs(
            clm, pairs["sent_more"], pairs["sent_less"], metric, cache=False, progress=False, **kw
        )
        for kw in ({}, {"batch_tokens": 8}, {"batch_tokens": 200, "batch_size": 3})
    ]
    for r in runs[1:]:
        for col in ("sent_more_score", "sent_less_score"):
            # a sentence score sums some 40 float32 token log-probabilities to about -300; a batch of another
            # shape (or one BLAS thread per test worker) computes each in another order, which moves it by
            # a float32 step or so (1e-6 at -10), and the sum by up to about 1e-5 (measured: 1.05e-5):
            # allow 1e-7 of the score on top (3e-5 at -300), so a real difference of 1e-4 still fails
            np.testing.assert_allclose(r.scores[col], runs[0].scores[col], atol=TOL, rtol=1e-7)


def test_fill_mask_and_next_word_do_not_depend_on_the_token_budget(mlm, clm):
    ctx = ["el BLANK es médico .", "la BLANK trabaja en casa con sus hijos pequeños .", "BLANK ."] * 3
    words = ["hombre", "mujer", "niño"] * 3
    a = lms.fill_blank_probabilities(mlm, ctx, words, progress=False)
    b = lms.fill_blank_probabilities(mlm, ctx, words, progress=False, batch_tokens=10, batch_size=2)
    np.testing.assert_allclose(a["prob"], b["prob"], rtol=1e-5)
    prefixes = ["el médico dijo que", "la", "los niños de la escuela"]
    ids = [[5, 6, 7]] * 3
    p1 = lm_causal.next_token_probabilities(clm, prefixes, ids)
    p2 = lm_causal.next_token_probabilities(clm, prefixes, ids, batch_tokens=4, batch_size=1)
    np.testing.assert_allclose(p1, p2, rtol=1e-5)
    # the reference: one prefix at a time through the full model, softmax of the last logits
    with torch.inference_mode():
        for k, pfx in enumerate(prefixes):
            seq = lm_causal.encode_causal_sentence(clm, pfx)[0]
            last = clm.model(torch.tensor([seq])).logits[0, -1].double().softmax(-1)
            np.testing.assert_allclose(p1[k], last[ids[k]].numpy(), rtol=1e-5)


# --------------------------------------------------------------------------------------- prefix trees
def test_prefix_tree_rows_hold_every_sequence_with_its_own_past():
    seqs = [[1, 2, 3, 4], [1, 2, 3, 9, 9], [1, 2], [1, 7], [5], [1, 2, 3, 4, 8], [1, 2, 3, 4]] + [
        [1, 3, *range(10, 10 + k)] for k in range(1, 12)
    ]
    rows, placed = lm_causal.prefix_tree_rows(seqs, cap=12)
    n_nodes = len({tuple(s[:k]) for s in seqs for k in range(1, len(s) + 1)})
    assert sum(len(r.tokens) for r in rows) >= n_nodes  # paths repeat in split subtrees ...
    assert sum(len(r.tokens) for r in rows) < sum(map(len, seqs))  # ... and still save tokens
    for seq, (r, path) in zip(seqs, placed, strict=True):
        row = rows[r]
        assert [row.tokens[k] for k in path] == seq
        assert [row.positions[k] for k in path] == list(range(len(seq)))
        anc = row.ancestors()
        for t, k in enumerate(path):  # a token attends to exactly its own sentence's tokens up to itself
            assert set(np.flatnonzero(anc[k]).tolist()) == set(path[: t + 1])
    for row in rows:
        assert len(row.tokens) <= 12 or len(rows) > 1


def test_prefix_tree_rows_equal_one_row_per_sentence(clm, pairs):
    sents = [s for p in zip(pairs["sent_more"], pairs["sent_less"], strict=True) for s in p]
    seqs = [lm_causal.encode_causal_sentence(clm, s)[0] for s in sents]
    pos = [list(range(1, len(s))) for s in seqs]
    stats = base.BatchStats()
    tree = lm_causal.causal_log_probs(clm, seqs, pos, stats=stats)
    flat = lm_causal.causal_log_probs(clm, seqs, pos, share_prefixes=False)
    for a, b in zip(tree, flat, strict=True):
        np.testing.assert_allclose(a, b, atol=TOL, rtol=0)
    assert 0.05 < stats.shared_share < 0.6  # CrowS-Pairs sentences of a pair share their beginning
    assert stats.unpacked == sum(len(s) - 1 for s in seqs)


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_prefix_tree_rows_on_rotary_models(family, clm):
    """Llama / Qwen2 (rotary positions, grouped-query attention) read position ids and the 4-D tree mask."""
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    cfg_cls, model_cls = {"llama": (LlamaConfig, LlamaForCausalLM), "qwen2": (Qwen2Config, Qwen2ForCausalLM)}[
        family
    ]
    tok = clm.tokenizer
    cfg = cfg_cls(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = model_cls(cfg).eval()
    lm = lms.CausalLM(model=model, tokenizer=tok, name=f"tiny-{family}", lowercase=True, in_process=True)
    sents = ["el médico dijo que vendría", "el médico dijo que no", "la enfermera dijo que vendría", "el"]
    seqs = [lm_causal.encode_causal_sentence(lm, s)[0] for s in sents]
    pos = [list(range(1, len(s))) for s in seqs]
    tree = lm_causal.causal_log_probs(lm, seqs, pos)
    with torch.inference_mode():
        for seq, got in zip(seqs, tree, strict=True):
            ref = torch.log_softmax(model(torch.tensor([seq])).logits[0].double(), -1)
            np.testing.assert_allclose(got, ref[torch.arange(len(seq) - 1), seq[1:]].numpy(), atol=TOL)


def test_fused_activations_swap_and_restore(clm):
    from transformers.activations import NewGELUActivation

    acts = [m for m in clm.model.modules() if isinstance(m, NewGELUActivation)]
    assert acts, "tiny GPT-2 uses gelu_new"
    with base.fused_activations(clm.model):
        with base.fused_activations(clm.model):  # nested: still swapped after the inner block
            pass
        assert not any(isinstance(m, NewGELUActivation) for m in clm.model.modules())
        x = torch.linspace(-6, 6, 101)
        fused = next(m for m in clm.model.modules() if isinstance(m, base.FusedTanhGELU))
        torch.testing.assert_close(fused(x), acts[0](x), atol=1e-6, rtol=0)
        assert fused.inplace  # GPT-2's feed-forward: its activation input is read by nothing else
        with torch.inference_mode():
            y = x.clone()
            out = fused(y)
        assert out.data_ptr() == y.data_ptr()
        torch.testing.assert_close(out, acts[0](x), atol=1e-6, rtol=0)
    assert [m for m in clm.model.modules() if isinstance(m, NewGELUActivation)] == acts


# --------------------------------------------------------------------------------------- resume
@pytest.mark.slow
@pytest.mark.parametrize(
    ("model", "metric", "patch"),
    [("mlm", "cp", (lm_masked, "masked_log_probs")), ("clm", "ll", (lm_causal, "causal_log_probs"))],
)
def test_a_resumed_job_equals_an_uninterrupted_one_bit_for_bit(
    request, pairs, monkeypatch, interrupt_after, model, metric, patch
):
    lm = request.getfixturevalue(model)
    kw = {"batch_tokens": 64, "progress": False, "chunk_size": 7}
    full = lms.score_pairs(lm, pairs["sent_more"], pairs["sent_less"], metric, cache=False, **kw)
    module, name = patch
    real = interrupt_after(module, name)
    with pytest.raises(KeyboardInterrupt):
        lms.score_pairs(lm, pairs["sent_more"], pairs["sent_less"], metric, **kw)
    monkeypatch.setattr(module, name, real)
    resumed = lms.score_pairs(lm, pairs["sent_more"], pairs["sent_less"], metric, **kw)
    assert resumed.n_cached == 14 and resumed.n_computed == len(full.scores) - 14
    # a chunk cut in the middle of its write: its rows are recomputed, in the same batches
    lines = resumed.cache_path.read_text(encoding="utf-8").splitlines(keepends=True)
    resumed.cache_path.write_text("".join(lines[:10]) + lines[10][:25], encoding="utf-8")
    again = lms.score_pairs(lm, pairs["sent_more"], pairs["sent_less"], metric, **kw)
    assert again.n_cached == 10
    for res in (resumed, again):
        pd.testing.assert_frame_equal(res.scores, full.scores, check_exact=True)
        pd.testing.assert_frame_equal(res.tokens, full.tokens, check_exact=True)


def test_score_cli_resumed_csv_is_byte_identical(tmp_path, monkeypatch):
    from biaskit.__main__ import main

    sents = [
        f"the {w} said that {p} would come back {t} ."
        for w in ("nurse", "doctor", "teacher", "pilot")
        for p in ("he", "she", "they")
        for t in ("soon", "today")
    ]
    text = tmp_path / "s.txt"
    text.write_text("\n".join(sents) + "\n", encoding="utf-8")
    args = ["score", "tiny-causal", str(text), "--batch-tokens", "8", "--no-progress", "--out"]
    monkeypatch.setenv("BIASKIT_CACHE_DIR", str(tmp_path / "cache-a"))
    assert main([*args, str(tmp_path / "a.csv")]) == 0
    monkeypatch.setenv("BIASKIT_CACHE_DIR", str(tmp_path / "cache-b"))
    assert main([*args, str(tmp_path / "b.csv")]) == 0
    (cache,) = (tmp_path / "cache-b").rglob("*.jsonl")
    lines = cache.read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(lines) == len(sents)
    cache.write_text("".join(lines[:9]) + lines[9][:30], encoding="utf-8")  # killed while writing
    assert main([*args, str(tmp_path / "c.csv")]) == 0
    a, c = (tmp_path / "a.csv").read_bytes(), (tmp_path / "c.csv").read_bytes()
    assert a == c and len(pd.read_csv(tmp_path / "c.csv")) == len(sents)
