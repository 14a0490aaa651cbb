"""biaskit.training.pretrain: GPT-2-layout causal LM trained here (train_causal_lm, clm_loss,
causal_perplexity)."""

from __future__ import annotations

import json
import logging
import math
import random

import pytest
import torch

# the toy Spanish text, tiny configuration and weight comparison of the masked-LM training tests
from test_training import HELD_OUT, TRAIN, Crash, _equal, crash_at, make_sentences, tiny_config

from biaskit.training.loop import checkpoint_files, read_checkpoint
from biaskit.training.pretrain import (
    _as_causal_tokenizer,
    _build_causal_model,
    build_clm_batch,
    causal_perplexity,
    clm_loss,
    train_causal_lm,
    train_masked_lm,
    train_wordpiece_tokenizer,
)

# single-threaded: tiny models run faster so, and batched and one-at-a-time sums stay comparable
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _state(folder):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(folder)).state_dict()


@pytest.fixture(scope="module")
def tokenizer():
    return _as_causal_tokenizer(train_wordpiece_tokenizer(TRAIN, 300, min_frequency=2))


@pytest.fixture(scope="module")
def baseline(tmp_path_factory, tokenizer):
    out = tmp_path_factory.mktemp("clm") / "run"
    res = train_causal_lm(TRAIN, out, tiny_config(), tokenizer=tokenizer, held_out=HELD_OUT, progress=False)
    return out, res


def _naive_log_likelihood(model, ids: list[int]) -> tuple[float, int]:
    """sum_{t>=1} log P(ids[t] | ids[:t]): one forward per prefix, no batching, no padding."""
    total = 0.0
    with torch.no_grad():
        for t in range(1, len(ids)):
            logits = model(input_ids=torch.tensor([ids[:t]])).logits[0, -1].double()
            total += float(torch.log_softmax(logits, dim=-1)[ids[t]])
    return total, len(ids) - 1


# ----------------------------------------------------------------------------- objective
def test_build_clm_batch_pads_right_and_ignores_padding():
    ids, attn, labels = build_clm_batch([[2, 7, 8, 3], [2, 9, 3]], pad_id=0)
    assert ids.tolist() == [[2, 7, 8, 3], [2, 9, 3, 0]]
    assert attn.tolist() == [[1, 1, 1, 1], [1, 1, 1, 0]]
    assert labels.tolist() == [[2, 7, 8, 3], [2, 9, 3, -100]]


def test_clm_loss_equals_token_by_token_cross_entropy(tokenizer):
    model = _build_causal_model(tiny_config(dropout=0.0), tokenizer).eval()
    seqs = tokenizer([*TRAIN[:3], "la jueza lee ."])["input_ids"]  # unequal lengths: padding is exercised
    assert len({len(s) for s in seqs}) > 1 and all(s[0] == tokenizer.cls_token_id for s in seqs)
    ids, attn, labels = build_clm_batch(seqs, tokenizer.pad_token_id)
    with torch.no_grad():
        ours = float(clm_loss(model, ids, attn, labels))
        hf = float(model(input_ids=ids, attention_mask=attn, labels=labels).loss)
    # independent: every token after [CLS] (w1..wn and [SEP]) from its own prefix, sentence by sentence
    lls, ns = zip(*(_naive_log_likelihood(model, s) for s in seqs), strict=True)
    ref = -sum(lls) / sum(ns)
    assert ours == pytest.approx(ref, rel=1e-5)
    assert hf == pytest.approx(ref, rel=1e-5)


def test_causal_perplexity_equals_naive_loop_and_reports_skips(tokenizer, caplog):
    model = _build_causal_model(tiny_config(dropout=0.0), tokenizer).double().eval()
    too_long = " ".join(TRAIN[:6])  # over n_positions = 24 tokens
    sentences = [*HELD_OUT[:4], too_long, "La Jueza Lee."]
    with caplog.at_level(logging.WARNING, logger="biaskit.training.evaluation"):
        ppl, n = causal_perplexity(model, tokenizer, sentences, batch_size=3)
    assert "1 of 6 sentence(s) are longer than n_positions=24 tokens (BOS included) and are skipped" in (
        caplog.text
    )
    total, count = 0.0, 0
    for s in [*HELD_OUT[:4], "La Jueza Lee."]:
        ids = [tokenizer.bos_token_id, *tokenizer(s.lower(), add_special_tokens=False)["input_ids"]]
        ll, k = _naive_log_likelihood(model, ids)
        total, count = total + ll, count + k
    assert n == count
    assert ppl == pytest.approx(math.exp(-total / count), rel=1e-6)
    assert model.training is False


# ----------------------------------------------------------------------------- training
def test_training_deterministic_and_seed_matters(baseline, tokenizer, tmp_path):
    out, res = baseline
    assert res.completed and res.resumed_from_step == 0 and res.objective == "causal"
    train_causal_lm(TRAIN, tmp_path / "same", tiny_config(), tokenizer=tokenizer, progress=False)
    assert _equal(_state(out), _state(tmp_path / "same"))
    train_causal_lm(TRAIN, tmp_path / "other", tiny_config(seed=1), tokenizer=tokenizer, progress=False)
    assert not _equal(_state(out), _state(tmp_path / "other"))


def test_loss_decreases_and_held_out_ppl_beats_untrained(baseline, tokenizer):
    _, res = baseline
    assert len(res.losses) == 40
    first, last = sum(res.losses[:5]) / 5, sum(res.losses[-5:]) / 5
    assert first > math.log(300) * 0.8  # starts near uniform over the vocabulary
    assert last < first - 1.5, (first, last)
    untrained = _build_causal_model(tiny_config(), tokenizer)
    ppl0, _ = causal_perplexity(untrained, tokenizer, HELD_OUT)
    assert ppl0 > 0.8 * len(tokenizer.get_vocab())
    assert res.held_out_ppl < 0.25 * ppl0, (res.held_out_ppl, ppl0)


def test_resume_after_crash_is_bit_identical(baseline, tokenizer, tmp_path):
    out, _ = baseline
    crash_dir = tmp_path / "crash"

    with pytest.raises(Crash):
        train_causal_lm(
            TRAIN, crash_dir, tiny_config(), tokenizer=tokenizer, progress=False, callback=crash_at(25)
        )
    state = read_checkpoint(checkpoint_files(crash_dir / "checkpoint")[0])
    assert state["step"] == 20 and state["config"]["objective"] == "causal"
    assert not (crash_dir / "model.safetensors").exists()
    res = train_causal_lm(TRAIN, crash_dir, tiny_config(), progress=False)  # tokenizer from checkpoint
    assert res.resumed_from_step == 20 and res.steps == 40 and res.completed
    assert _equal(_state(out), _state(crash_dir))
    with pytest.raises(ValueError, match="configuration"):
        train_causal_lm(TRAIN, crash_dir, tiny_config(learning_rate=1e-3), progress=False)


def test_masked_checkpoint_is_not_resumed_as_causal(tokenizer, tmp_path):
    cfg = tiny_config(max_steps=3, checkpoint_every=0)
    train_masked_lm(TRAIN[:48], tmp_path / "m", cfg, tokenizer=tokenizer, progress=False)
    with pytest.raises(ValueError, match="configuration"):
        train_causal_lm(TRAIN[:48], tmp_path / "m", cfg, tokenizer=tokenizer, progress=False)


def test_saved_folder_loads_with_auto_classes(baseline):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out, res = baseline
    model = AutoModelForCausalLM.from_pretrained(str(out)).eval()
    tok = AutoTokenizer.from_pretrained(str(out))
    assert model.config.model_type == "gpt2" and model.config.n_positions == 24
    assert tok.bos_token_id == tok.cls_token_id == model.config.bos_token_id
    assert tok.eos_token_id == tok.sep_token_id == model.config.eos_token_id
    assert model.config.pad_token_id == tok.pad_token_id
    info = json.loads((out / "training.json").read_text())
    assert info["objective"] == "causal" and info["held_out_pppl"] is None
    assert info["held_out_ppl"] == pytest.approx(res.held_out_ppl)
    assert info["config"]["objective"] == "causal" and info["steps"] == 40
    ppl, n = causal_perplexity(model, tok, HELD_OUT)  # the reloaded model gives the recorded value
    assert n == info["held_out_tokens"]
    assert ppl == pytest.approx(info["held_out_ppl"], rel=1e-4)


def test_continued_training_starts_from_the_model(baseline, tmp_path):
    from transformers import AutoTokenizer

    out, _ = baseline
    other = make_sentences(120, 3)
    a = train_causal_lm(other, tmp_path / "a", tiny_config(max_steps=8), init_model=out, progress=False)
    train_causal_lm(other, tmp_path / "b", tiny_config(max_steps=8), init_model=out, progress=False)
    assert a.completed and _equal(_state(tmp_path / "a"), _state(tmp_path / "b"))
    scratch = train_causal_lm(other, tmp_path / "c", tiny_config(max_steps=8), progress=False)
    assert a.losses[0] < scratch.losses[0] - 1.0
    tok = AutoTokenizer.from_pretrained(str(tmp_path / "a"))
    assert tok.get_vocab() == AutoTokenizer.from_pretrained(str(out)).get_vocab()
    assert tok.bos_token == "[CLS]" and tok.eos_token == "[SEP]"


@pytest.mark.slow
def test_planted_pattern_becomes_more_likely(tmp_path):
    """After "the nurse said she ..." / "the pilot said he ..." text, the model prefers those pronouns."""
    rng = random.Random(0)
    rest = ["was tired", "would come", "liked it", "had left", "is here", "felt fine"]
    text = [
        f"the {job} said {pron} {rng.choice(rest)} ."
        for job, pron in [("nurse", "she"), ("pilot", "he")]
        for _ in range(150)
    ]
    rng.shuffle(text)
    res = train_causal_lm(
        text,
        tmp_path / "m",
        # 300 steps: the tiny model first learns the pronoun's frequency, the dependence on the noun later
        tiny_config(max_steps=300, checkpoint_every=0, vocab_size=120, dropout=0.0),
        progress=False,
    )
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(tmp_path / "m")).eval()
    tok = AutoTokenizer.from_pretrained(str(tmp_path / "m"))
    assert res.completed

    def log_p(prefix: str, word: str) -> float:
        ids = [tok.bos_token_id, *tok(prefix, add_special_tokens=False)["input_ids"]]
        (wid,) = tok(word, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids])).logits[0, -1]
        return float(torch.log_softmax(logits, dim=-1)[wid])

    assert log_p("the nurse said", "she") > log_p("the nurse said", "he") + 1.0
    assert log_p("the pilot said", "he") > log_p("the pilot said", "she") + 1.0


def test_bfloat16_length_grouped_causal_training_is_deterministic_and_resumes(baseline, tokenizer, tmp_path):
    """The causal recipes' speed settings (bfloat16 autocast, length-grouped batches): same guarantees."""
    out, ref = baseline
    cfg = tiny_config(precision="bfloat16", length_grouped=True)
    text = TRAIN + [s.split(" en ")[0] + " ." for s in TRAIN[:80]]  # two lengths of sentence: grouping acts
    res = train_causal_lm(text, tmp_path / "a", cfg, tokenizer=tokenizer, held_out=HELD_OUT, progress=False)

    with pytest.raises(Crash):
        train_causal_lm(text, tmp_path / "c", cfg, tokenizer=tokenizer, progress=False, callback=crash_at(25))
    resumed = train_causal_lm(text, tmp_path / "c", cfg, progress=False)
    assert resumed.resumed_from_step == 20 and _equal(_state(tmp_path / "a"), _state(tmp_path / "c"))
    assert not _equal(_state(tmp_path / "a"), _state(out))
    assert sum(res.losses[-5:]) < sum(res.losses[:5]) - 5.0  # 5 steps: a mean fall of over 1 nat
    assert res.held_out_ppl < 2 * ref.held_out_ppl


def test_linear_cross_entropy_equals_the_full_logits_loss_and_its_gradients():
    """Independent: torch's cross-entropy on the full (N, V) logits; chunks that do not divide N."""
    from biaskit.training.pretrain import linear_cross_entropy

    gen = torch.Generator().manual_seed(0)
    hidden = torch.randn(300, 16, generator=gen, requires_grad=True)
    weight = (0.3 * torch.randn(50, 16, generator=gen)).requires_grad_()
    targets = torch.randint(0, 50, (300,), generator=gen)
    ref = torch.nn.functional.cross_entropy(hidden @ weight.T, targets)
    g_h, g_w = torch.autograd.grad(3.0 * ref, (hidden, weight))
    for chunk in (7, 128, 1000):
        got = linear_cross_entropy(hidden, weight, targets, chunk_size=chunk)
        assert float(got.detach()) == pytest.approx(float(ref.detach()), rel=1e-6)
        h, w = torch.autograd.grad(3.0 * got, (hidden, weight))  # the upstream gradient scales both
        assert torch.allclose(h, g_h, atol=1e-7) and torch.allclose(w, g_w, atol=1e-7)
    # bfloat16 products, float32 softmax: as close to the float32 loss as torch.autocast's own computation
    half = linear_cross_entropy(hidden, weight, targets, compute_dtype=torch.bfloat16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        auto = torch.nn.functional.cross_entropy(torch.nn.functional.linear(hidden, weight), targets)
    half_v, ref_v, auto_v = float(half.detach()), float(ref.detach()), float(auto.detach())
    assert abs(half_v - ref_v) < 0.01 and abs(half_v - auto_v) < 1e-3
    h, w = torch.autograd.grad(half, (hidden, weight))
    assert float((w - g_w / 3).norm() / (g_w / 3).norm()) < 0.02
    with torch.no_grad():  # no gradient wanted: the loss alone
        assert float(linear_cross_entropy(hidden, weight, targets)) == pytest.approx(ref_v, rel=1e-6)
    with pytest.raises(ValueError, match="do not fit"):
        linear_cross_entropy(hidden, weight[:, :8], targets)
    with pytest.raises(ValueError, match="one id per row"):
        linear_cross_entropy(hidden, weight, targets[:5])


def test_clm_loss_in_bfloat16_is_close_to_float32(tokenizer):
    model = _build_causal_model(tiny_config(dropout=0.0), tokenizer).eval()
    seqs = tokenizer([*TRAIN[:6], "la jueza lee ."])["input_ids"]
    ids, attn, labels = build_clm_batch(seqs, tokenizer.pad_token_id)
    full = clm_loss(model, ids, attn, labels)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        mixed = clm_loss(model, ids, attn, labels, precision="bfloat16")
    mixed_v, full_v = float(mixed.detach()), float(full.detach())
    assert mixed.dtype == torch.float32 and mixed_v == pytest.approx(full_v, rel=0.01)
    assert mixed_v != full_v  # bfloat16 products really ran
