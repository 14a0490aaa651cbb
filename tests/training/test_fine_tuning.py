"""biaskit.training.fine_tune: masked-LM fine-tuning with Bartl et al.'s (2020) preset."""

from __future__ import annotations

import dataclasses
import json
import logging
import random
from pathlib import Path

import numpy as np
import pytest
import torch

# the crash-mid-run callback of the training tests
from test_training import Crash, crash_at

from biaskit.lm import MaskedLM, score_pairs, tiny_masked_lm
from biaskit.training import loop as training  # where the loop looks up mask_tokens and build_mlm_batch
from biaskit.training.fine_tune import (
    BARTL,
    BARTL_2020,
    FineTuneConfig,
    bartl_max_length,
    find_fine_tuned,
    fine_tune,
)
from biaskit.training.loop import checkpoint_files, read_checkpoint
from biaskit.training.pretrain import build_mlm_batch, mask_tokens, pseudo_perplexity

SUBJ = ["el médico", "la enfermera", "el profesor", "la alumna", "el vecino", "la abogada"]
VERB = ["compra", "lee", "vende", "busca", "pinta"]
OBJ = ["un libro", "una casa", "un coche", "una mesa", "una carta"]
PLACE = ["en la ciudad", "en el pueblo", "en la escuela", "en el mercado"]


def make_sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        f"{rng.choice(SUBJ)} {rng.choice(VERB)} {rng.choice(OBJ)} {rng.choice(PLACE)} ." for _ in range(n)
    ]


TRAIN = make_sentences(12, 1)
VOCAB_TEXT = make_sentences(200, 0)


def quick(**kw) -> FineTuneConfig:
    """Bartl's preset on the CPU, with overrides (a few seconds at most on the tiny model)."""
    return dataclasses.replace(BARTL, device="cpu", **kw)


@pytest.fixture(scope="module")
def base() -> MaskedLM:
    # a tiny random BERT (1 x 16) whose vocabulary covers the training text; dropout 0
    return tiny_masked_lm(0, texts=VOCAB_TEXT, vocab_size=300, initializer_range=0.2)


def _weights(lm: MaskedLM) -> dict[str, torch.Tensor]:
    return {k: v.detach().cpu().clone() for k, v in lm.model.state_dict().items()}


def _equal(a, b) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


# ----------------------------------------------------------------------------- the preset
def test_preset_is_bartl():
    assert BARTL is BARTL_2020
    assert BARTL.learning_rate == 2e-5
    assert BARTL.adam_epsilon == 1e-8
    assert BARTL.weight_decay == 0.0  # transformers 2.x AdamW default, as Bartl used it
    assert BARTL.warmup_steps == 0
    assert BARTL.max_grad_norm == 1.0
    assert BARTL.epochs == 3
    assert BARTL.batch_size == 1
    assert BARTL.seed == 42
    assert BARTL.mask_probability == 0.15
    assert (BARTL.mask_replace, BARTL.mask_random) == (0.8, 0.1)
    assert BARTL.bartl_pad_quirk is False
    assert BARTL.max_length is None  # Bartl's power-of-two rule
    with pytest.raises(dataclasses.FrozenInstanceError):
        BARTL.learning_rate = 1e-3  # type: ignore[misc]
    loop = BARTL.training_config(64)
    assert (loop.learning_rate, loop.adam_epsilon, loop.weight_decay, loop.warmup_steps) == (
        2e-5,
        1e-8,
        0.0,
        0,
    )
    assert (loop.max_grad_norm, loop.epochs, loop.batch_size, loop.seed) == (1.0, 3, 1, 42)
    assert (loop.max_length, loop.bartl_pad_quirk) == (64, False)
    with pytest.raises(ValueError, match="batch_size"):
        FineTuneConfig(batch_size=0)


def test_bartl_max_length_rule():
    assert bartl_max_length(["a b c", "a b c d e"]) == 8
    assert bartl_max_length(["a b c d"]) == 4
    assert bartl_max_length(["one"]) == 1
    assert bartl_max_length(["x " * 145]) == 256  # the longest GAP sentence -> 256, as in Bartl's run


def test_loop_runs_with_the_preset(base, tmp_path, monkeypatch):
    """What the loop really used: AdamW(lr, eps, no decay), linear schedule to 0 without warm-up,
    clipping at 1.0, batch size 1, 3 epochs, 15 % / 80-10-10 masking, seed 42."""
    seen: dict[str, list] = {"lr": [], "groups": [], "clip": [], "batch": [], "mask": []}

    class RecordingAdamW(torch.optim.AdamW):
        def step(self, *args, **kwargs):
            seen["lr"].append(self.param_groups[0]["lr"])
            seen["groups"].append([(g["lr"], g["eps"], g["weight_decay"]) for g in self.param_groups])
            return super().step(*args, **kwargs)

    real_clip, real_mask = torch.nn.utils.clip_grad_norm_, training.mask_tokens

    def clip(params, max_norm, *a, **k):
        seen["clip"].append(max_norm)
        return real_clip(params, max_norm, *a, **k)

    def masking(ids, special, vocab_n, mask_id, gen, **kw):
        seen["batch"].append(ids.shape[0])
        seen["mask"].append(kw)
        return real_mask(ids, special, vocab_n, mask_id, gen, **kw)

    monkeypatch.setattr(torch.optim, "AdamW", RecordingAdamW)
    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", clip)
    monkeypatch.setattr(training, "mask_tokens", masking)
    data = TRAIN[:5]
    fine_tune(base, data, config=quick(), output_dir=tmp_path / "ft", progress=False)

    T = 3 * len(data)  # 3 epochs of batch size 1
    assert len(seen["lr"]) == T and seen["batch"] == [1] * T
    assert seen["lr"][0] == pytest.approx(2e-5, rel=1e-12)  # no warm-up: the first update at the full rate
    assert seen["lr"] == pytest.approx([2e-5 * (T - s) / T for s in range(T)], rel=1e-9)  # linear to 0
    assert all(eps == 1e-8 and wd == 0.0 for groups in seen["groups"] for _, eps, wd in groups)
    assert seen["clip"] == [1.0] * T
    assert seen["mask"] == [{"mask_probability": 0.15, "mask_replace": 0.8, "mask_random": 0.1}] * T
    state = read_checkpoint(checkpoint_files(tmp_path / "ft" / "checkpoint")[0])
    assert state["scheduler"]["_last_lr"] == [0.0, 0.0]  # decayed to 0 at the last step
    info = json.loads((tmp_path / "ft" / "training.json").read_text())
    assert info["steps"] == T and info["completed"] and info["config"]["seed"] == 42
    assert info["config"]["base_model"] == base.name and info["config"]["max_length"] == 16

    # the checks above can fail: other settings reach the optimiser, schedule and clipping
    for v in seen.values():
        v.clear()
    other = quick(epochs=1, learning_rate=1e-4, adam_epsilon=1e-6, weight_decay=0.01, warmup_steps=2,
                  max_grad_norm=0.5)  # fmt: skip
    fine_tune(base, TRAIN[:4], config=other, output_dir=tmp_path / "other", progress=False)
    assert seen["lr"] == pytest.approx([0.0, 5e-5, 1e-4, 5e-5], abs=1e-15)  # 2 warm-up steps, then decay
    assert all([g[1:] for g in groups] == [(1e-6, 0.01), (1e-6, 0.0)] for groups in seen["groups"])
    assert seen["clip"] == [0.5] * 4


# ----------------------------------------------------------------------------- padding
def test_batch_standard_padding(base):
    tok = base.tokenizer
    short, long = tok(["la alumna lee .", "el profesor vende una casa en el pueblo ."])["input_ids"]
    assert len(short) < len(long)
    ids, attn, special = build_mlm_batch([short, long], tok)
    assert ids.shape == (2, len(long))
    ref = tok(["la alumna lee .", "el profesor vende una casa en el pueblo ."], padding=True)
    assert ids.tolist() == ref["input_ids"] and attn.tolist() == ref["attention_mask"]  # the tokenizer's
    pad = torch.zeros_like(ids, dtype=torch.bool)
    pad[0, len(short) :] = True
    assert (ids[pad] == tok.pad_token_id).all() and (attn[pad] == 0).all() and (attn[~pad] == 1).all()
    assert special[pad].all() and special[:, 0].all()  # padding and [CLS] never targets
    for seed in range(20):  # even with 90 % masking, padding is never a target
        _, labels = mask_tokens(
            ids,
            special,
            len(tok),
            tok.mask_token_id,
            torch.Generator().manual_seed(seed),
            mask_probability=0.9,
        )
        assert (labels[pad] == -100).all()
        assert (labels[~special] != -100).any()


def test_batch_bartl_pad_quirk(base):
    tok = base.tokenizer
    short, long = tok(["la alumna lee .", "el profesor vende una casa en el pueblo ."])["input_ids"]
    ids, attn, special = build_mlm_batch([short, long], tok, bartl_pad_quirk=True, pad_to=16)
    assert ids.shape == (2, 16)  # padded to max_len, as keras pad_sequences(maxlen=max_len) does
    pad = torch.zeros_like(ids, dtype=torch.bool)
    pad[0, len(short) :] = True
    pad[1, len(long) :] = True
    assert (ids[pad] == tok.mask_token_id).all()  # padded with [MASK] ...
    assert torch.equal(attn, (ids > 0).long()) and (attn[pad] == 1).all()  # ... which is attended
    assert not special[pad].any()
    assert special[:, 0].all() and special[0, len(short) - 1] and special[1, len(long) - 1]  # [CLS], [SEP]
    _, labels = mask_tokens(ids, special, len(tok), tok.mask_token_id, torch.Generator().manual_seed(0),
                            mask_probability=0.9)  # fmt: skip
    assert (labels[pad] != -100).any() and (labels[pad & (labels != -100)] == tok.mask_token_id).all()
    # without pad_to: padded to the longest sequence of the batch only
    ids2, _, _ = build_mlm_batch([short, long], tok, bartl_pad_quirk=True)
    assert ids2.shape == (2, len(long)) and ids2[0, -1] == tok.mask_token_id


def test_fine_tune_passes_the_quirk_to_the_loop(base, tmp_path, monkeypatch):
    batches = []
    real = training.build_mlm_batch

    def spy(seqs, tok, **kw):
        out = real(seqs, tok, **kw)
        batches.append((kw, out))
        return out

    monkeypatch.setattr(training, "build_mlm_batch", spy)
    a = fine_tune(base, TRAIN[:4], config=quick(bartl_pad_quirk=True, epochs=1), output_dir=tmp_path / "q",
                  progress=False)  # fmt: skip
    assert len(batches) == 4
    for kw, (ids, attn, _) in batches:
        assert kw == {"bartl_pad_quirk": True, "pad_to": 16} and ids.shape == (1, 16)
        assert (attn == 1).all() and ids[0, -1] == base.tokenizer.mask_token_id
    batches.clear()
    b = fine_tune(base, TRAIN[:4], config=quick(epochs=1), output_dir=tmp_path / "s", progress=False)
    assert all(kw == {"bartl_pad_quirk": False, "pad_to": None} for kw, _ in batches)
    assert not _equal(_weights(a), _weights(b))


# ----------------------------------------------------------------------------- determinism, resume
def test_deterministic_and_seed_matters_and_caller_model_untouched(base, tmp_path):
    before = _weights(base)
    a = fine_tune(base, TRAIN, config=quick(epochs=1), output_dir=tmp_path / "a", progress=False)
    b = fine_tune(base, TRAIN, config=quick(epochs=1), output_dir=tmp_path / "b", progress=False)
    c = fine_tune(base, TRAIN, config=quick(epochs=1, seed=1), output_dir=tmp_path / "c", progress=False)
    assert _equal(_weights(a), _weights(b))
    assert not _equal(_weights(a), _weights(c))
    assert not _equal(_weights(a), before)  # it trained
    assert _equal(_weights(base), before)  # on a copy


def test_folder_input_gives_the_same_model(base, tmp_path):
    base.model.save_pretrained(tmp_path / "base")
    base.tokenizer.save_pretrained(tmp_path / "base")
    cfg = quick(epochs=1, learning_rate=1e-3)
    a = fine_tune(base, TRAIN, config=cfg, output_dir=tmp_path / "a", progress=False)
    b = fine_tune(tmp_path / "base", TRAIN, config=cfg, output_dir=tmp_path / "b", progress=False)
    # the same run, bit for bit (the loop copies the weights into fresh storage: weights loaded from
    # safetensors sit at other memory offsets, which changes the rounding of the CPU kernels)
    assert _equal(_weights(a), _weights(b))


def test_resume_after_crash_is_bit_identical(base, tmp_path):
    cfg = quick(checkpoint_every=10)  # 3 x 12 = 36 steps
    full = fine_tune(base, TRAIN, config=cfg, output_dir=tmp_path / "full", progress=False)

    with pytest.raises(Crash):
        fine_tune(
            base, TRAIN, config=cfg, output_dir=tmp_path / "crash", progress=False, callback=crash_at(25)
        )
    assert read_checkpoint(checkpoint_files(tmp_path / "crash" / "checkpoint")[0])["step"] == 20
    assert not (tmp_path / "crash" / "model.safetensors").exists()
    resumed = fine_tune(base, TRAIN, config=cfg, output_dir=tmp_path / "crash", progress=False)
    info = json.loads((tmp_path / "crash" / "training.json").read_text())
    assert info["resumed_from_step"] == 20 and info["steps"] == 36 and info["completed"]
    assert _equal(_weights(full), _weights(resumed))
    with pytest.raises(ValueError, match="configuration"):
        fine_tune(base, TRAIN, config=quick(checkpoint_every=10, learning_rate=1e-4),
                  output_dir=tmp_path / "crash", progress=False)  # fmt: skip


def test_find_fine_tuned_loads_only_a_finished_run(base, tmp_path):
    cfg = quick(checkpoint_every=10)  # 36 steps
    folder = tmp_path / "run"
    assert find_fine_tuned(base, TRAIN, config=cfg, output_dir=folder) is None  # nothing there yet
    assert not folder.exists()  # and nothing was written

    with pytest.raises(Crash):
        fine_tune(base, TRAIN, config=cfg, output_dir=folder, progress=False, callback=crash_at(25))
    assert find_fine_tuned(base, TRAIN, config=cfg, output_dir=folder) is None  # checkpoint at 20 of 36
    tuned = fine_tune(base, TRAIN, config=cfg, output_dir=folder, progress=False)
    stamps = {f: f.stat().st_mtime_ns for f in folder.iterdir() if f.is_file()}
    found = find_fine_tuned(base, TRAIN, config=cfg, output_dir=folder)
    assert found is not None and found.name == tuned.name and _equal(_weights(found), _weights(tuned))
    assert {f: f.stat().st_mtime_ns for f in stamps} == stamps  # nothing rewritten
    assert find_fine_tuned(base, TRAIN[:-1], config=cfg, output_dir=folder) is None  # other data
    with pytest.raises(ValueError, match="configuration"):  # as fine_tune would
        find_fine_tuned(base, TRAIN, config=quick(checkpoint_every=10, learning_rate=1e-4), output_dir=folder)
    # the default folder is the cache's, as for fine_tune
    cached = fine_tune(base, TRAIN, config=quick(epochs=1), progress=False)
    assert find_fine_tuned(base, TRAIN, config=quick(epochs=1)).name == cached.name


def test_default_folder_is_a_cache(base):
    from biaskit.core.paths import cache_dir

    cfg = quick(epochs=1)
    a = fine_tune(base, TRAIN, config=cfg, progress=False)
    folder = Path(a.name)
    assert folder.parent == cache_dir() / "fine_tuned" and (folder / "model.safetensors").exists()
    stamps = {f: f.stat().st_mtime_ns for f in folder.iterdir() if f.is_file()}
    again = fine_tune(base, TRAIN, config=cfg, progress=False)
    assert Path(again.name) == folder
    assert {f: f.stat().st_mtime_ns for f in stamps} == stamps  # found, not retrained nor rewritten
    assert again.fingerprint() == a.fingerprint()  # so score caches keyed on it stay valid
    assert _equal(_weights(a), _weights(again))
    assert Path(fine_tune(base, TRAIN, config=quick(epochs=1, seed=7), progress=False).name) != folder


# ----------------------------------------------------------------------------- it learns; metrics accept it
def test_fine_tuning_lowers_the_loss_and_metrics_accept_it(base, tmp_path):
    data = TRAIN[:6]
    pppl0, n0 = pseudo_perplexity(base, data)
    tuned = fine_tune(base, data, config=quick(learning_rate=3e-3, epochs=15), output_dir=tmp_path / "m",
                      progress=False)  # fmt: skip
    pppl1, n1 = pseudo_perplexity(tuned, data)
    assert n1 == n0
    assert pppl1 < 0.5 * pppl0, (pppl0, pppl1)
    losses = json.loads((tmp_path / "m" / "training.json").read_text())["losses"]
    assert np.mean(losses[-6:]) < np.mean(losses[:6]) - 0.5
    res = score_pairs(tuned, data[:3], data[3:6], "cp", cache=False, progress=False)
    assert (
        len(res.scores) == 3 and np.isfinite(res.scores[["sent_more_score", "sent_less_score"]]).all().all()
    )


# ----------------------------------------------------------------------------- bad input
def test_bad_input(base, tmp_path, caplog):
    with pytest.raises(ValueError, match="at least one sentence"):
        fine_tune(base, [], config=quick(), output_dir=tmp_path / "e", progress=False)
    with pytest.raises(ValueError, match="empty"):
        fine_tune(base, ["", "  "], config=quick(), output_dir=tmp_path / "e", progress=False)
    with pytest.raises(TypeError, match="one string"):
        fine_tune(base, "el médico lee un libro .", config=quick(), output_dir=tmp_path / "e", progress=False)
    with pytest.raises(ValueError, match="window of 128"):
        fine_tune(base, TRAIN, config=quick(max_length=512), output_dir=tmp_path / "e", progress=False)
    long = " ".join(TRAIN[:4])
    with caplog.at_level(logging.WARNING, logger="biaskit.training.loop"):
        fine_tune(base, [*TRAIN[:3], "", long, " "], config=quick(max_steps=2, max_length=24),
                  output_dir=tmp_path / "w", progress=False)  # fmt: skip
    assert "fine_tune: 2 empty sentence(s) skipped" in caplog.text
    assert (
        "fine_tune: 1 of 4 sentence(s) are longer than max_length=24 tokens and are truncated" in caplog.text
    )
