"""biaskit.training.pretrain: WordPiece tokenizer + small BERT masked LM trained here."""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace

import numpy as np
import pytest
import torch

from biaskit.training.loop import checkpoint_files, read_checkpoint
from biaskit.training.pretrain import (
    MLMTrainingConfig,
    mask_salient_groups,
    mask_tokens,
    mlm_loss,
    pseudo_perplexity,
    salient_group_ids,
    train_masked_lm,
    train_wordpiece_tokenizer,
)

SUBJ = [
    "el médico",
    "la enfermera",
    "el profesor",
    "la alumna",
    "el vecino",
    "la abogada",
    "el niño",
    "la jueza",
]
VERB = ["compra", "lee", "vende", "busca", "pinta", "limpia"]
OBJ = ["un libro", "una casa", "un coche", "una mesa", "un cuadro", "una carta"]
PLACE = ["en la ciudad", "en el pueblo", "en la escuela", "en el mercado"]
TIME = ["por la mañana", "por la tarde", "cada día", "los domingos"]


def make_sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        f"{rng.choice(SUBJ)} {rng.choice(VERB)} {rng.choice(OBJ)} {rng.choice(PLACE)} {rng.choice(TIME)} ."
        for _ in range(n)
    ]


TRAIN = make_sentences(200, 1)
HELD_OUT = make_sentences(20, 2)


class Crash(RuntimeError):
    """Raised by :func:`crash_at`: a training run that dies mid-way."""


def crash_at(step: int):
    """A training ``callback(step, loss)`` that raises :class:`Crash` at ``step`` (tests of resuming)."""

    def callback(current: int, loss: float) -> None:
        if current == step:
            raise Crash

    return callback


def tiny_config(**kw) -> MLMTrainingConfig:
    base = dict(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_length=24,
        batch_size=16,
        learning_rate=3e-3,
        warmup_steps=4,
        max_steps=40,
        checkpoint_every=10,
        seed=0,
        device="cpu",
    )
    base.update(kw)
    return MLMTrainingConfig(**base)


def _state(folder):
    from transformers import BertForMaskedLM

    return BertForMaskedLM.from_pretrained(str(folder)).state_dict()


def _equal(a, b) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.fixture(scope="module")
def tokenizer():
    return train_wordpiece_tokenizer(TRAIN, 300, min_frequency=2)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory, tokenizer):
    out = tmp_path_factory.mktemp("mlm") / "run"
    res = train_masked_lm(TRAIN, out, tiny_config(), tokenizer=tokenizer, held_out=HELD_OUT, progress=False)
    return out, res


# ----------------------------------------------------------------------------- tokenizer
def test_tokenizer_deterministic_specials_round_trip(tokenizer):
    again = train_wordpiece_tokenizer(TRAIN, 300, min_frequency=2)
    assert tokenizer.get_vocab() == again.get_vocab()
    vocab = tokenizer.get_vocab()
    for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]):
        assert vocab[t] == i
    assert tokenizer.mask_token_id == 4 and tokenizer.pad_token_id == 0
    s = "la enfermera lee una carta en el mercado"
    enc = tokenizer(s)["input_ids"]
    assert enc[0] == tokenizer.cls_token_id and enc[-1] == tokenizer.sep_token_id
    assert tokenizer.unk_token_id not in enc
    assert tokenizer.decode(enc, skip_special_tokens=True) == s
    assert tokenizer.tokenize("mercado.") == ["mercado", "."]
    # lower-casing, and a word never seen splits into pieces rather than [UNK]
    assert tokenizer.decode(tokenizer("La Jueza")["input_ids"], skip_special_tokens=True) == "la jueza"
    assert tokenizer.unk_token_id not in tokenizer("mercadillo")["input_ids"]


def test_tokenizer_save_reload_keeps_accents_and_casing(tokenizer, tmp_path):
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    assert isinstance(tokenizer, PreTrainedTokenizerFast)
    tokenizer.save_pretrained(tmp_path)
    back = AutoTokenizer.from_pretrained(tmp_path)
    assert back.get_vocab() == tokenizer.get_vocab()
    s = "El MÉDICO y la Jueza compran una mesa."
    assert back(s)["input_ids"] == tokenizer(s)["input_ids"]
    assert "médico" in back.tokenize(s)  # accents kept after the round trip
    assert back.do_lower_case is True


def test_mask_tokens_rates():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 100, (200, 50), generator=g)
    special = torch.zeros_like(ids, dtype=torch.bool)
    special[:, 0] = special[:, -1] = True
    inputs, labels = mask_tokens(ids, special, 100, 4, torch.Generator().manual_seed(1))
    target = labels != -100
    assert not target[special].any()
    frac = target.sum().item() / (~special).sum().item()
    assert 0.13 < frac < 0.17
    masked = (inputs == 4) & target
    same = (inputs == ids) & target
    assert 0.75 < masked.sum().item() / target.sum().item() < 0.85
    assert 0.07 < same.sum().item() / target.sum().item() < 0.13  # 10 % unchanged (+ lucky random draws)
    assert torch.equal(inputs[~target], ids[~target])
    again, labels2 = mask_tokens(ids, special, 100, 4, torch.Generator().manual_seed(1))
    assert torch.equal(again, inputs) and torch.equal(labels2, labels)


def test_mask_salient_groups_hides_one_group_and_shows_the_other():
    # groups: {10, 11} ("gendered words") and {20} ("professions"); 4 = [MASK]
    groups = [torch.tensor([10, 11]), torch.tensor([20])]
    ids = torch.tensor([[1, 20, 7, 10, 8, 11, 2]] * 400 + [[1, 20, 7, 8, 9, 9, 2]] * 100)
    # stand-in for BERT's random masking: token 7 is a target everywhere, and the first gendered word
    # is already [MASK] (a target) in every other row
    base_in, base_lab = ids.clone(), torch.full_like(ids, -100)
    base_lab[:, 2] = 7
    base_in[::2, 3] = 4
    base_lab[::2, 3] = 10
    inputs, labels = mask_salient_groups(
        ids, base_in, base_lab, groups, 4, torch.Generator().manual_seed(5), probability=0.5
    )
    gender = torch.isin(ids, groups[0])
    prof = torch.isin(ids, groups[1])
    e = slice(0, 400)  # the eligible rows (both groups present)
    picked_g = (inputs[e, 3] == 4) & (inputs[e, 5] == 4) & (labels[e, 5] == 11)
    picked_p = (inputs[e, 1] == 4) & (labels[e, 1] == 20)
    # the other group is shown again (also a gendered word the random masking had hidden) and is no target
    assert (inputs[e][picked_g, 1] == 20).all() and (labels[e][picked_g, 1] == -100).all()
    assert (inputs[e][picked_p][:, [3, 5]] == torch.tensor([10, 11])).all()
    assert (labels[e][picked_p][:, [3, 5]] == -100).all()
    assert picked_p[::2].any()  # ... including rows where [MASK] had been drawn on a gendered word
    # about half of the eligible rows are picked, split evenly between the two groups
    assert 0.19 < picked_g.float().mean().item() < 0.31
    assert 0.19 < picked_p.float().mean().item() < 0.31
    assert not (picked_g & picked_p).any()
    # rows not picked, and rows with one group only, keep BERT's masking exactly
    rest = torch.cat([~(picked_g | picked_p), torch.ones(100, dtype=torch.bool)])
    assert torch.equal(inputs[rest], base_in[rest]) and torch.equal(labels[rest], base_lab[rest])
    # non-group positions of picked rows keep the random masking too
    other = ~(gender | prof)
    assert torch.equal(inputs[other], base_in[other]) and torch.equal(labels[other], base_lab[other])


def test_mask_salient_groups_deterministic_and_off():
    groups = [torch.tensor([10]), torch.tensor([20])]
    ids = torch.tensor([[1, 10, 20, 7, 2]] * 50)
    lab = torch.full_like(ids, -100)
    a = mask_salient_groups(
        ids, ids.clone(), lab, groups, 4, torch.Generator().manual_seed(1), probability=0.5
    )
    b = mask_salient_groups(
        ids, ids.clone(), lab, groups, 4, torch.Generator().manual_seed(1), probability=0.5
    )
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    off = mask_salient_groups(
        ids, ids.clone(), lab, groups, 4, torch.Generator().manual_seed(1), probability=0.0
    )
    assert torch.equal(off[0], ids) and torch.equal(off[1], lab)
    every = mask_salient_groups(
        ids, ids.clone(), lab, groups, 4, torch.Generator().manual_seed(1), probability=1.0
    )
    assert ((every[1] != -100).sum(dim=1) == 1).all()  # exactly one group (one token here) hidden per row


def test_salient_group_ids_and_config_checks(tokenizer, caplog):
    with caplog.at_level("WARNING", logger="biaskit.training.objectives"):
        ids = salient_group_ids([("el", "la", "zzzqqq"), ("médico",)], tokenizer)
    assert [len(g) for g in ids] == [2, 1]
    assert (
        "1 of 3 word(s) of group 0 are not one token (or are unknown)" in caplog.text
        and "zzzqqq" in caplog.text
    )
    with pytest.raises(ValueError, match="no word that is one token"):
        salient_group_ids([("el",), ("zzzqqq",)], tokenizer)
    with pytest.raises(ValueError, match="two non-empty salient_groups"):
        MLMTrainingConfig(salient_groups=(("he",),), salient_probability=0.5)
    with pytest.raises(ValueError, match="in groups 0 and 1"):
        MLMTrainingConfig(salient_groups=(("he",), ("he", "doctor")), salient_probability=0.5)
    with pytest.raises(ValueError, match=r"salient_probability must be in \[0, 1\]"):
        MLMTrainingConfig(salient_probability=1.5)


@pytest.mark.slow
def test_salient_masking_in_the_training_loop(tokenizer, tmp_path):
    """The loop applies the groups: other weights than plain masking, deterministic, recorded, resumable."""
    from safetensors.torch import load_file

    groups = (
        ("el", "la"),
        ("médico", "profesor", "vecino", "niño", "enfermera", "alumna", "abogada", "jueza"),
    )
    cfg = tiny_config(max_steps=12)
    sal_cfg = replace(cfg, salient_groups=groups, salient_probability=0.8)
    train_masked_lm(TRAIN, tmp_path / "plain", cfg, tokenizer=tokenizer, progress=False)
    for run in ("sal", "sal2"):
        train_masked_lm(TRAIN, tmp_path / run, sal_cfg, tokenizer=tokenizer, progress=False)
    w = {r: load_file(tmp_path / r / "model.safetensors") for r in ("plain", "sal", "sal2")}
    assert all(torch.equal(w["sal"][k], w["sal2"][k]) for k in w["sal"])
    assert any(not torch.equal(w["sal"][k], w["plain"][k]) for k in w["sal"])
    rec = json.loads((tmp_path / "sal" / "training.json").read_text())
    assert rec["config"]["salient_probability"] == 0.8
    assert [list(g) for g in groups] == rec["config"]["salient_groups"]
    again = train_masked_lm(TRAIN, tmp_path / "sal", sal_cfg, tokenizer=tokenizer, progress=False)
    assert again.steps == 12 and again.resumed_from_step == 12  # the recorded config matches: complete
    with pytest.raises(ValueError, match="another configuration"):
        train_masked_lm(
            TRAIN,
            tmp_path / "sal",
            replace(sal_cfg, salient_probability=0.5),
            tokenizer=tokenizer,
            progress=False,
        )


# ----------------------------------------------------------------------------- masked LM
def test_mlm_loss_equals_transformers_loss(tokenizer):
    from biaskit.training.pretrain import _build_model

    model = _build_model(tiny_config(dropout=0.0), tokenizer).eval()
    ids = torch.tensor(tokenizer(TRAIN[:8], padding=True)["input_ids"])
    attn = (ids != tokenizer.pad_token_id).long()
    special = torch.isin(ids, torch.tensor(tokenizer.all_special_ids))
    inputs, labels = mask_tokens(ids, special, len(tokenizer), 4, torch.Generator().manual_seed(3))
    with torch.no_grad():
        ours = mlm_loss(model, inputs, attn, labels)
        ref = model(input_ids=inputs, attention_mask=attn, labels=labels).loss
    assert ours.item() == pytest.approx(ref.item(), rel=1e-5)


def test_training_deterministic_and_seed_matters(baseline, tokenizer, tmp_path):
    out, res = baseline
    assert res.completed and res.resumed_from_step == 0
    train_masked_lm(TRAIN, tmp_path / "same", tiny_config(), tokenizer=tokenizer, progress=False)
    assert _equal(_state(out), _state(tmp_path / "same"))
    train_masked_lm(TRAIN, tmp_path / "other", tiny_config(seed=1), tokenizer=tokenizer, progress=False)
    assert not _equal(_state(out), _state(tmp_path / "other"))


def test_loss_decreases(baseline):
    _, res = baseline
    assert len(res.losses) == 40
    first, last = np.mean(res.losses[:5]), np.mean(res.losses[-5:])
    assert first > math.log(300) * 0.8  # starts near uniform over the vocabulary
    assert last < first - 1.0, (first, last)  # nats; ~5.2 -> ~3.3 here


def test_resume_after_crash_is_bit_identical(baseline, tokenizer, tmp_path):
    out, _ = baseline
    crash_dir = tmp_path / "crash"

    with pytest.raises(Crash):
        train_masked_lm(
            TRAIN, crash_dir, tiny_config(), tokenizer=tokenizer, progress=False, callback=crash_at(25)
        )
    state = read_checkpoint(checkpoint_files(crash_dir / "checkpoint")[0])
    assert state["step"] == 20  # the last checkpoint before the crash
    assert not (crash_dir / "model.safetensors").exists()
    res = train_masked_lm(TRAIN, crash_dir, tiny_config(), progress=False)  # tokenizer from checkpoint
    assert res.resumed_from_step == 20 and res.steps == 40 and res.completed
    assert _equal(_state(out), _state(crash_dir))
    # a changed configuration is refused rather than silently mixed
    with pytest.raises(ValueError, match="configuration"):
        train_masked_lm(TRAIN, crash_dir, tiny_config(learning_rate=1e-3), progress=False)


def test_saved_folder_loads_and_scores(baseline):
    from biaskit.lm import load_masked_lm, score_sentences

    out, res = baseline
    assert (out / "model.safetensors").exists()
    lm = load_masked_lm(out, device="cpu")
    assert lm.lowercase is True
    scores = score_sentences(lm, HELD_OUT[:5], "sz", cache=False, progress=False)
    assert len(scores.scores) == 5
    assert np.isfinite(scores.scores["score"]).all() and (scores.scores["score"] < 0).all()
    info = json.loads((out / "training.json").read_text())
    for key in (
        "steps",
        "train_seconds",
        "tokens_seen",
        "tokens_per_second",
        "final_loss",
        "held_out_pppl",
        "held_out_tokens",
        "config",
        "device",
        "n_parameters",
    ):
        assert key in info, key
    assert info["steps"] == 40 and info["tokens_per_second"] > 0 and info["device"] == "cpu"
    assert info["held_out_pppl"] == pytest.approx(res.held_out_pppl)
    # the recorded PPPL is the one the reloaded model gives
    pppl, n = pseudo_perplexity(lm, HELD_OUT)
    assert n == info["held_out_tokens"]
    assert pppl == pytest.approx(info["held_out_pppl"], rel=1e-4)


def test_trained_model_has_lower_held_out_pppl_than_untrained(baseline, tokenizer):
    from biaskit.lm import MaskedLM
    from biaskit.training.pretrain import _build_model

    _, res = baseline
    untrained = _build_model(tiny_config(), tokenizer).eval()
    lm0 = MaskedLM(model=untrained, tokenizer=tokenizer, name="untrained", in_process=True)
    pppl0, _ = pseudo_perplexity(lm0, HELD_OUT)
    assert pppl0 > 0.8 * len(tokenizer.get_vocab())  # about uniform
    assert res.held_out_pppl < 0.25 * pppl0, (res.held_out_pppl, pppl0)


def test_caller_rng_untouched(tokenizer, tmp_path):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    train_masked_lm(TRAIN[:40], tmp_path / "m", tiny_config(max_steps=3), tokenizer=tokenizer, progress=False)
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_resume_bit_identical(tokenizer, tmp_path):
    cfg = tiny_config(device="cuda", deterministic_cuda=True, max_steps=20)
    a = train_masked_lm(TRAIN, tmp_path / "a", cfg, tokenizer=tokenizer, progress=False)
    assert a.device.startswith("cuda")

    def crash(step, loss):
        if step == 15:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_masked_lm(TRAIN, tmp_path / "b", cfg, tokenizer=tokenizer, progress=False, callback=crash)
    train_masked_lm(TRAIN, tmp_path / "b", cfg, tokenizer=tokenizer, progress=False)
    assert _equal(_state(tmp_path / "a"), _state(tmp_path / "b"))


def test_epochs_token_lists_own_tokenizer_and_rerun_after_completion(tmp_path):
    token_lists = [s.split() for s in TRAIN[:48]]
    cfg = tiny_config(max_steps=None, epochs=2, vocab_size=200, checkpoint_every=0)
    res = train_masked_lm(token_lists, tmp_path / "m", cfg, progress=False)
    assert res.total_steps == res.steps == 2 * 3 and res.completed  # 48 sentences / batch 16
    assert (tmp_path / "m" / "tokenizer.json").exists()
    first = _state(tmp_path / "m")
    again = train_masked_lm(token_lists, tmp_path / "m", cfg, progress=False)
    assert again.resumed_from_step == 6 and again.steps == 6 and again.losses == res.losses
    assert _equal(first, _state(tmp_path / "m"))


def test_continued_training_from_a_model_is_deterministic_and_starts_from_it(baseline, tmp_path):
    out, _ = baseline
    other = make_sentences(120, 3)
    a = train_masked_lm(other, tmp_path / "a", tiny_config(max_steps=10), init_model=out, progress=False)
    train_masked_lm(other, tmp_path / "b", tiny_config(max_steps=10), init_model=out, progress=False)
    assert a.completed and _equal(_state(tmp_path / "a"), _state(tmp_path / "b"))
    # started from the trained weights, not from scratch: its first loss is the trained model's level
    scratch = train_masked_lm(other, tmp_path / "c", tiny_config(max_steps=10), progress=False)
    assert a.losses[0] < scratch.losses[0] - 0.5
    # the tokenizer comes from the starting model
    from transformers import AutoTokenizer

    assert (
        AutoTokenizer.from_pretrained(str(tmp_path / "a")).get_vocab()
        == AutoTokenizer.from_pretrained(str(out)).get_vocab()
    )


def test_over_long_and_empty_sentences_are_reported(tokenizer, tmp_path, caplog):
    import logging

    long = " ".join(TRAIN[:6])  # well over max_length=24 tokens
    with caplog.at_level(logging.WARNING, logger="biaskit.training.loop"):
        train_masked_lm(
            [*TRAIN[:40], long, "  "],
            tmp_path / "m",
            tiny_config(max_steps=2),
            tokenizer=tokenizer,
            progress=False,
        )
    assert "1 of 41 sentence(s) are longer than max_length=24 tokens and are truncated" in caplog.text
    assert "1 empty sentence(s) skipped" in caplog.text


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("learning_rate", 0.0, "learning_rate"),
        ("adam_epsilon", 0.0, "adam_epsilon"),
        ("epochs", 0, "epochs"),
        ("max_steps", 0, "max_steps"),
        ("warmup_steps", -1, "warmup_steps"),
        ("max_grad_norm", -1.0, "max_grad_norm"),
        ("weight_decay", -0.1, "weight_decay"),
    ],
)
def test_training_and_fine_tuning_configs_refuse_impossible_values(field, value, message):
    """One set of checks (MLMTrainingConfig) serves both configurations."""
    from biaskit.training.fine_tune import FineTuneConfig

    with pytest.raises(ValueError, match=message):
        MLMTrainingConfig(**{field: value})
    with pytest.raises(ValueError, match=message):
        FineTuneConfig(**{field: value})


def test_training_steps_counts_short_last_batches_and_honours_max_steps():
    from biaskit.training.pretrain import MLMTrainingConfig, training_steps

    assert training_steps(MLMTrainingConfig(batch_size=32, epochs=3), 100) == 12  # 4 batches per epoch
    assert training_steps(MLMTrainingConfig(batch_size=1, epochs=1), 2000) == 2000
    assert training_steps(MLMTrainingConfig(batch_size=32, epochs=3, max_steps=5), 100) == 5


# ----------------------------------------------------------------------------- speed options
def test_epoch_batches_default_cuts_the_epochs_permutation():
    from biaskit.training.pretrain import epoch_batches

    batches = epoch_batches(list(range(3, 103)), 32, seed=7, epoch=2)
    assert [len(b) for b in batches] == [32, 32, 32, 4]  # the last batch of an epoch may be short
    # the order the training loop has always used: numpy's generator seeded with (seed, epoch)
    assert np.array_equal(np.concatenate(batches), np.random.default_rng([7, 2]).permutation(100))


def test_length_grouped_batches_cover_every_sentence_once_with_little_padding():
    from biaskit.training.pretrain import LENGTH_GROUP_BATCHES, epoch_batches

    rng = np.random.default_rng(0)
    lengths = np.minimum(
        rng.geometric(1 / 30, size=5000) + 3, 64
    )  # skewed, capped: like BUG at max_length 64
    bs = 32
    plain = epoch_batches(lengths, bs, 0, 0)
    grouped = epoch_batches(lengths, bs, 0, 0, length_grouped=True)
    assert len(grouped) == len(plain) == math.ceil(5000 / bs)  # the step count does not change
    assert sorted(np.concatenate(grouped).tolist()) == list(range(5000))
    # 5000 = 3 mega-batches of 50 x 32 + 200: only the last one leaves a short batch (200 = 6 x 32 + 8)
    assert LENGTH_GROUP_BATCHES == 50 and sorted(len(b) for b in grouped)[:2] == [8, 32]

    def token_share(batches):  # real tokens / (batch size x longest in the batch)
        return sum(lengths[b].sum() for b in batches) / sum(len(b) * lengths[b].max() for b in batches)

    assert token_share(plain) == pytest.approx(0.458, abs=0.01)
    assert token_share(grouped) == pytest.approx(0.974, abs=0.01)
    # deterministic; each epoch groups other sentences; the batches do not come sorted by length
    again = epoch_batches(lengths, bs, 0, 0, length_grouped=True)
    assert all(np.array_equal(a, b) for a, b in zip(grouped, again, strict=True))
    other = epoch_batches(lengths, bs, 0, 1, length_grouped=True)
    assert {tuple(sorted(b)) for b in other} != {tuple(sorted(b)) for b in grouped}
    longest = [int(lengths[b].max()) for b in grouped]
    assert longest != sorted(longest, reverse=True) and longest != sorted(longest)


def test_precision_must_be_float32_or_bfloat16():
    assert MLMTrainingConfig(precision="bfloat16").precision == "bfloat16"
    with pytest.raises(ValueError, match="precision must be one of float32, bfloat16"):
        MLMTrainingConfig(precision="float16")


@pytest.mark.slow
def test_bfloat16_length_grouped_training_is_deterministic_resumes_and_learns(baseline, tokenizer, tmp_path):
    """The bundled recipes' speed settings keep every guarantee of the loop: determinism, bit-identical
    resuming, learning; they change the weights (other batches, other rounding), so they are recorded."""
    out, ref = baseline
    cfg = tiny_config(precision="bfloat16", length_grouped=True)
    text = TRAIN + [s.split(" en ")[0] + " ." for s in TRAIN[:80]]  # two lengths of sentence: grouping acts
    res = train_masked_lm(text, tmp_path / "a", cfg, tokenizer=tokenizer, held_out=HELD_OUT, progress=False)
    train_masked_lm(text, tmp_path / "b", cfg, tokenizer=tokenizer, progress=False)
    assert _equal(_state(tmp_path / "a"), _state(tmp_path / "b"))

    with pytest.raises(Crash):
        train_masked_lm(text, tmp_path / "c", cfg, tokenizer=tokenizer, progress=False, callback=crash_at(25))
    resumed = train_masked_lm(text, tmp_path / "c", cfg, progress=False)
    assert resumed.resumed_from_step == 20 and _equal(_state(tmp_path / "a"), _state(tmp_path / "c"))

    float32 = train_masked_lm(text, tmp_path / "f", tiny_config(), tokenizer=tokenizer, progress=False)
    assert not _equal(_state(tmp_path / "a"), _state(tmp_path / "f"))
    assert np.mean(res.losses[-5:]) < np.mean(res.losses[:5]) - 1.0
    assert abs(np.mean(res.losses[-5:]) - np.mean(float32.losses[-5:])) < 0.3  # learns as float32 does
    rec = json.loads((tmp_path / "a" / "training.json").read_text())["config"]
    assert rec["precision"] == "bfloat16" and rec["length_grouped"] is True
    assert json.loads((out / "training.json").read_text())["config"]["precision"] == "float32"
    assert ref.held_out_pppl is not None and res.held_out_pppl < 2 * ref.held_out_pppl


def test_float32_steps_train_exactly_as_float32_then_switch_to_bfloat16(baseline, tokenizer, tmp_path):
    """The bundled base's recipe: its first pass in float32, the rest in bfloat16
    (trained_models.BASE_CONFIG)."""
    out, _ = baseline  # tiny_config(): 40 steps in float32
    all_float32 = tiny_config(precision="bfloat16", float32_steps=40)
    train_masked_lm(TRAIN, tmp_path / "a", all_float32, tokenizer=tokenizer, progress=False)
    assert _equal(_state(out), _state(tmp_path / "a"))  # same attention, same kernels: bit for bit
    switched = tiny_config(precision="bfloat16", float32_steps=20)
    res = train_masked_lm(TRAIN, tmp_path / "b", switched, tokenizer=tokenizer, progress=False)
    assert not _equal(_state(out), _state(tmp_path / "b"))
    assert np.mean(res.losses[-5:]) < np.mean(res.losses[:5]) - 1.0
    with pytest.raises(ValueError, match="float32_steps"):
        MLMTrainingConfig(float32_steps=-1)
