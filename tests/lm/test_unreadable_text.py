"""Text the model cannot read: training, fine-tuning and scoring report the share of [UNK]
tokens and stop above ``max_unk_share`` with the share and an example; an empty gender-swap lexicon is an
error."""

from __future__ import annotations

import json
import logging
import re

import pytest

from biaskit.data.counterfactual import GenderLexicon, load_gender_lexicon
from biaskit.lm import score_pairs, score_sentences, tiny_causal_lm, tiny_masked_lm, tiny_tokenizer
from biaskit.lm.tokenizers import MAX_UNK_SHARE, unk_share
from biaskit.training.fine_tune import FineTuneConfig, fine_tune
from biaskit.training.loop import encode_for_training
from biaskit.training.pretrain import MLMTrainingConfig, train_causal_lm, train_masked_lm

#: the tiny stand-ins' WordPiece vocabulary comes from Spanish text: Chinese characters are all [UNK]
UNREADABLE = ["这是 一个 测试 句子", "医生 说 她 迟到 了", "护士 在 医院 工作"]
SPANISH = ["el médico compra un libro", "la enfermera lee una carta", "los vecinos venden una casa"]


@pytest.fixture(scope="module")
def tok():
    return tiny_tokenizer()


def test_unk_share_counts_the_unknown_tokens_of_the_text(tok):
    ids = tok(["hola 这是", "el médico"], truncation=False)["input_ids"]
    share, n, worst = unk_share(["hola 这是", "el médico"], ids, tok)
    body = [[t for t in x if t not in (tok.cls_token_id, tok.sep_token_id)] for x in ids]
    n_unk = sum(t == tok.unk_token_id for x in body for t in x)
    assert n == sum(map(len, body)) and share == pytest.approx(n_unk / n) and n_unk >= 1 and worst == 0
    clean_share, clean_n, clean_worst = unk_share(SPANISH, tok(SPANISH)["input_ids"], tok)
    assert clean_share == 0.0 and clean_n > 10 and clean_worst is None


def test_the_share_is_reported_and_a_share_above_the_limit_stops(tok, caplog):
    mixed = SPANISH * 3 + UNREADABLE[:1]
    with caplog.at_level(logging.INFO, logger="biaskit.training.loop"):
        encoded = encode_for_training(mixed, tok, 32, who="test")
    assert len(encoded) == len(mixed)
    share = unk_share(mixed, encoded, tok)[0]
    assert 0 < share < MAX_UNK_SHARE and f"test: {100 * share:.2f} % of the" in caplog.text
    with pytest.raises(ValueError) as err:
        encode_for_training(mixed, tok, 32, who="test", max_unk_share=0.01)
    msg = str(err.value)
    assert re.search(rf"test: {100 * share:.1f}% of the \d+ tokens of the training text are \[UNK\], above "
                     r"max_unk_share=0\.01", msg)  # fmt: skip
    assert f"E.g. sentence 9: {UNREADABLE[0]!r}" in msg and "'这是'" in msg
    assert encode_for_training(UNREADABLE, tok, 32, max_unk_share=None)  # None: report only
    with pytest.raises(ValueError, match="max_unk_share must be in"):
        encode_for_training(SPANISH, tok, 32, max_unk_share=1.5)


def test_fine_tuning_on_text_the_model_cannot_read_stops_before_training(tmp_path):
    lm = tiny_masked_lm(seed=0)
    out = tmp_path / "ft"
    with pytest.raises(ValueError) as err:
        fine_tune(lm, UNREADABLE, config=FineTuneConfig(max_steps=2), output_dir=out, progress=False)
    msg = str(err.value)
    assert msg.startswith("fine_tune: 100.0% of the") and "are [UNK], above max_unk_share=0.2" in msg
    assert f"E.g. sentence 0: {UNREADABLE[0]!r}" in msg and "'一个'" in msg
    assert not out.exists()  # nothing trained, nothing written


@pytest.mark.parametrize("train", [train_masked_lm, train_causal_lm])
def test_training_with_a_tokenizer_that_cannot_read_the_text_stops(tok, tmp_path, train):
    config = MLMTrainingConfig(
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_length=16,
        batch_size=2,
        max_steps=2,
        device="cpu",
    )
    who = train.__name__
    with pytest.raises(ValueError, match=rf"^{who}: 100\.0% of the \d+ tokens .* are \[UNK\]"):
        train(UNREADABLE, tmp_path / "run", config, tokenizer=tok, progress=False)
    assert not (tmp_path / "run" / "checkpoint").exists()
    with pytest.raises(ValueError, match=r"above max_unk_share=0\.5"):
        train(UNREADABLE, tmp_path / "run", config, tokenizer=tok, progress=False, max_unk_share=0.5)


# ----------------------------------------------------------------------------- scoring
def _unk_count(lm, sentences):
    """(unknown, all) tokens of ``sentences`` without the special tokens, counted one sentence at a time."""
    unk = all_ = 0
    for s in sentences:
        ids = lm.tokenizer(s, add_special_tokens=False)["input_ids"]
        unk += sum(t == lm.tokenizer.unk_token_id for t in ids)
        all_ += len(ids)
    return unk, all_


@pytest.mark.parametrize("make", [tiny_masked_lm, tiny_causal_lm])
def test_scoring_logs_the_unk_share_of_its_sentences_once_per_job(make, caplog):
    lm = make(seed=0)
    text = [*SPANISH, "el médico 这是 un libro"]
    n_unk, n_all = _unk_count(lm, text)
    assert 0 < n_unk / n_all < MAX_UNK_SHARE
    with caplog.at_level(logging.INFO, logger="biaskit.lm.scoring"):
        res = score_sentences(lm, text, unk="score", cache=False, progress=False)
    assert len(res.scores) == len(text)
    shares = [
        r
        for r in caplog.records
        if r.name == "biaskit.lm.scoring" and "sentences to score are" in r.getMessage()
    ]
    (rec,) = shares  # once per job, not per sentence or batch
    expected = (
        f"sentence scoring with {lm.name}: {100 * n_unk / n_all:.2f} % of the {n_all} tokens of the 4 "
        "sentences"
    )
    assert rec.getMessage().startswith(expected) and rec.levelno == logging.WARNING  # above 5 %
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="biaskit.lm.scoring"):
        score_pairs(lm, SPANISH, SPANISH[::-1], cache=False, progress=False)
    (rec,) = [r for r in caplog.records if "sentences to score are" in r.getMessage()]
    assert "0.00 % of the" in rec.getMessage() and "of the 6 sentences to score" in rec.getMessage()
    assert rec.levelno == logging.INFO


@pytest.mark.parametrize("make", [tiny_masked_lm, tiny_causal_lm])
def test_scoring_text_the_model_cannot_read_stops_with_the_share_an_example_and_the_fix(make, caplog):
    lm = make(seed=0)
    more, less = [*SPANISH, *UNREADABLE], [*SPANISH[::-1], *UNREADABLE[::-1]]
    n_unk, n_all = _unk_count(lm, more + less)
    assert n_unk / n_all > MAX_UNK_SHARE
    with pytest.raises(ValueError) as err:
        score_pairs(lm, more, less, lines=range(2, 8), progress=False)
    msg = str(err.value)
    assert msg.startswith(f"pair scoring with {lm.name}: {n_unk / n_all:.1%} of the {n_all} tokens of the 12 "
                          "sentences to score are [UNK], above max_unk_share=0.2")  # fmt: skip
    assert f"E.g. row 3 (file line 5), sent_more: {UNREADABLE[0]!r}" in msg and "'这是'" in msg
    assert "the model meant for this text" in msg and "pass a larger max_unk_share" in msg
    with pytest.raises(ValueError, match=r"above max_unk_share=0\.05"):
        score_sentences(lm, [*SPANISH * 5, UNREADABLE[0]], max_unk_share=0.05, progress=False, cache=False)
    # None: report only (the rows with [UNK] are scored, as metric.py does, and listed in the report)
    with caplog.at_level(logging.WARNING, logger="biaskit.lm.scoring"):
        res = score_pairs(lm, more, less, max_unk_share=None, cache=False, progress=False)
    assert len(res.scores) == 6 and f"{100 * n_unk / n_all:.2f} % of the {n_all} tokens" in caplog.text
    with pytest.raises(ValueError, match="max_unk_share must be in"):
        score_sentences(lm, SPANISH, max_unk_share=-0.1, progress=False)


def test_the_score_command_stops_on_text_the_model_cannot_read(tmp_path, capsys):
    from biaskit.__main__ import main

    text = tmp_path / "zh.txt"
    text.write_text("\n".join(UNREADABLE) + "\n", encoding="utf-8")
    args = ["score", "tiny", str(text), "--no-progress", "--out", str(tmp_path / "s.csv")]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert (
        "100.0% of the" in err
        and "are [UNK], above max_unk_share=0.2" in err
        and "E.g. row 0, sentence" in err
    )
    assert not (tmp_path / "s.csv").exists()
    assert main([*args, "--max-unk-share", "none"]) == 0  # report only
    with pytest.raises(SystemExit):
        main([*args, "--max-unk-share", "1.5"])
    assert "--max-unk-share must be a share in [0, 1] or 'none', got '1.5'" in capsys.readouterr().err


# ----------------------------------------------------------------------------- the CDS lexicon
def test_an_empty_gender_swap_lexicon_is_an_error(tmp_path):
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"pairs": [], "names": []}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"empty\.json: the gender-swap lexicon is empty \('pairs' has no"):
        load_gender_lexicon(str(empty))
    missing = tmp_path / "missing.json"
    missing.write_text(json.dumps({"names": [["john", "mary"]]}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"'pairs' must be a list of \[male, female\] word pairs"):
        load_gender_lexicon(str(missing))
    with pytest.raises(ValueError, match="the gender-swap lexicon is empty"):
        GenderLexicon(to_female={}, to_male={}, name_to_female={}, name_to_male={}, specific=frozenset())
    assert load_gender_lexicon().to_female  # the bundled one is not
