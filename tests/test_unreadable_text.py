"""Text the model cannot read (issue 32, item 4): training and fine-tuning report the share of [UNK] tokens
and stop above ``max_unk_share`` with the share and an example; an empty gender-swap lexicon is an error."""

from __future__ import annotations

import json
import logging
import re

import pytest

from biaskit.data.counterfactual import GenderLexicon, load_gender_lexicon
from biaskit.lm import tiny_masked_lm, tiny_tokenizer
from biaskit.training.fine_tune import FineTuneConfig, fine_tune
from biaskit.training.loop import MAX_UNK_SHARE, encode_for_training, unk_share
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
    config = MLMTrainingConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                               max_length=16, batch_size=2, max_steps=2, device="cpu")  # fmt: skip
    who = train.__name__
    with pytest.raises(ValueError, match=rf"^{who}: 100\.0% of the \d+ tokens .* are \[UNK\]"):
        train(UNREADABLE, tmp_path / "run", config, tokenizer=tok, progress=False)
    assert not (tmp_path / "run" / "checkpoint").exists()
    with pytest.raises(ValueError, match=r"above max_unk_share=0\.5"):
        train(UNREADABLE, tmp_path / "run", config, tokenizer=tok, progress=False, max_unk_share=0.5)


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
