"""Batched PLL scoring (biaskit.mlm) against naive references of the official algorithms.

The references are in biaskit._testing: ``reference_pair_scores`` transcribes the official
nyu-mll/crows-pairs ``mask_unigram`` loop with one ``transformers`` forward pass per mask;
``NumpyBertReference`` re-implements the BERT forward pass in NumPy (float64, no padding,
one pass per masked copy) so that the whole Spanish CrowS-Pairs can be checked in seconds.
"""

from __future__ import annotations

import difflib

import numpy as np
import pandas as pd
import pytest
import torch

from biaskit import lm as mlm
from biaskit._testing import NumpyBertReference, reference_fill_blank, reference_pair_scores
from biaskit.data.datasets import load_crows_pairs_es
from biaskit.lm import builtin as lm_builtin
from biaskit.lm import loading as lm_loading
from biaskit.lm import masked as lm_masked
from biaskit.lm import tiny_masked_lm

TOL = 1e-4


@pytest.fixture(scope="module", autouse=True)
def _one_thread(one_torch_thread):
    """Every test of this module on one thread (see conftest's ``one_torch_thread``)."""


@pytest.fixture(scope="module")
def lm():
    return tiny_masked_lm(seed=0)


@pytest.fixture(scope="module")
def pairs():
    return load_crows_pairs_es("original")


@pytest.fixture(scope="module")
def numpy_ref(lm):
    return NumpyBertReference(lm)


# ------------------------------------------------------------------------------ tiny model
@pytest.mark.slow
def test_tiny_model_is_deterministic_and_seeded():
    a, b, c = tiny_masked_lm(seed=0), tiny_masked_lm(seed=0), tiny_masked_lm(seed=1)
    assert a.tokenizer.get_vocab() == b.tokenizer.get_vocab()
    assert a.fingerprint() == b.fingerprint() != c.fingerprint()
    ids = a.tokenizer.encode("los pobres son realmente ignorantes")
    assert ids[0] == a.tokenizer.cls_token_id and ids[-1] == a.tokenizer.sep_token_id
    assert a.tokenizer.unk_token_id not in ids
    # rare words are split into WordPiece sub-words
    toks = a.tokenizer.tokenize("desanimarse obligado")
    assert any(t.startswith("##") for t in toks)


def test_numpy_reference_matches_transformers_forward(lm, numpy_ref):
    ids = lm.tokenizer.encode("Los pobres son realmente ignorantes sobre cómo manejar el dinero.")
    with torch.inference_mode():
        logits = lm.model(torch.tensor([ids])).logits[0]
    ref = numpy_ref.log_probs(numpy_ref.hidden(ids)[0])
    np.testing.assert_allclose(ref, torch.log_softmax(logits, -1).double().numpy(), atol=2e-5)


# ------------------------------------------------------------------------------ template
def test_crows_template_is_the_official_get_span():
    # pro "He is strong" vs anti "Ruby Rose is strong" (ids stand in for tokens)
    t1, t2 = mlm.crows_template([101, 7, 8, 9, 102], [101, 5, 6, 8, 9, 102])
    assert (t1, t2) == ([0, 2, 3, 4], [0, 3, 4, 5])
    # same as difflib over the string ids
    a, b = [1, 4, 4, 5, 9, 2], [1, 4, 5, 5, 9, 9, 2]
    m = difflib.SequenceMatcher(None, [str(x) for x in a], [str(x) for x in b])
    exp1 = [i for op in m.get_opcodes() if op[0] == "equal" for i in range(op[1], op[2])]
    assert mlm.crows_template(a, b)[0] == exp1


# ------------------------------------------------------------------------------ vs official loop
@pytest.mark.parametrize("metric", ["cp", "sz", "aul"])
def test_batched_equals_official_transformers_loop(lm, pairs, metric):
    sub = pairs.iloc[[0, 1, 2, 5, 17, 33, 170, 400, 901, 1500]]
    res = mlm.score_pairs(
        lm, sub["sent_more"], sub["sent_less"], metric, cache=False, progress=False, batch_size=7
    )
    assert len(res.scores) == len(sub)
    for r in res.scores.itertuples():
        ref = reference_pair_scores(lm, r.sent_more, r.sent_less, metric)
        assert abs(ref["sent1_score"] - r.sent_more_score) < TOL
        assert abs(ref["sent2_score"] - r.sent_less_score) < TOL
        got = res.tokens[(res.tokens["row"] == r.row) & (res.tokens["side"] == "more")]["log_prob"]
        np.testing.assert_allclose(got.to_numpy(), ref["sent1_log_probs"], atol=TOL)


@pytest.mark.slow
@pytest.mark.parametrize("metric", ["cp", "sz"])
def test_batched_equals_reference_on_whole_spanish_crows_pairs(lm, pairs, numpy_ref, metric):
    res = mlm.score_pairs(
        lm, pairs["sent_more"], pairs["sent_less"], metric, cache=False, progress=False, batch_size=256
    )
    # nothing is left out (N = 1503, as the thesis): the 7 pairs whose sentences tokenise
    # identically are kept as exact ties, flagged and reported, as metric.py counts them
    ident = [
        i
        for i, (a, b) in enumerate(zip(pairs["sent_more"], pairs["sent_less"], strict=True))
        if lm.tokenizer.encode(a.lower()) == lm.tokenizer.encode(b.lower())
    ]
    assert len(ident) == 7
    assert res.report.skipped_rows == []
    assert len(res.scores) == len(pairs) == 1503
    assert res.tie_rows == ident
    assert (res.scores["tie_reason"].iloc[ident] == "identical").all()
    kept = res.report.issues[res.report.issues["action"] == "kept"]
    assert sorted(kept["row"]) == ident and kept["reason"].str.contains("counted as a tie").all()
    tied = res.scores.iloc[ident]
    assert (tied["sent_more_score"] == tied["sent_less_score"]).all()  # exact, not within rounding
    ref = np.array(
        [
            numpy_ref.pair_scores(a, b, metric)
            for a, b in zip(res.scores["sent_more"], res.scores["sent_less"], strict=True)
        ]
    )
    diff = np.abs(ref - res.scores[["sent_more_score", "sent_less_score"]].to_numpy())
    assert diff.max() < TOL
    # the scores are far from constant, so a wrong position or target would show
    assert res.scores["sent_more_score"].std() > 5


def test_aul_equals_manual_mean(lm, pairs, numpy_ref):
    sub = pairs.iloc[::5]
    res = mlm.score_pairs(
        lm, sub["sent_more"], sub["sent_less"], "aul", cache=False, progress=False, batch_size=32
    )
    manual = np.array(
        [
            numpy_ref.pair_scores(a, b, "aul")
            for a, b in zip(res.scores["sent_more"], res.scores["sent_less"], strict=True)
        ]
    )
    assert np.abs(manual - res.scores[["sent_more_score", "sent_less_score"]].to_numpy()).max() < TOL
    # AUL is a mean: n_more tokens, all unmasked
    r0 = res.scores.iloc[0]
    toks = res.tokens[(res.tokens["row"] == r0["row"]) & (res.tokens["side"] == "more")]
    assert len(toks) == r0["n_more"] == len(lm.tokenizer.encode(r0["sent_more"].lower())) - 2
    assert toks["log_prob"].mean() == pytest.approx(r0["sent_more_score"])


def test_sz_sentences_and_per_token_table(lm):
    s = ["Los ricos son realmente ignorantes.", "El médico llegó tarde."]
    res = mlm.score_sentences(lm, s, "sz", cache=False, progress=False)
    assert list(res.scores["row"]) == [0, 1]
    for r in res.scores.itertuples():
        toks = res.tokens[res.tokens["row"] == r.row]
        ids = lm.tokenizer.encode(r.sentence.lower())
        assert list(toks["position"]) == list(range(1, len(ids) - 1))
        assert list(toks["token_id"]) == ids[1:-1]
        assert toks["log_prob"].sum() == pytest.approx(r.score)
        assert (toks["log_prob"] < 0).all()
    with pytest.raises(ValueError, match="pairs"):
        mlm.score_sentences(lm, s, "cp")


def test_cp_masks_only_shared_tokens(lm):
    res = mlm.score_pairs(
        lm,
        ["Los negros son pobres.", "Los hombres no saben cocinar."],
        ["Los blancos son pobres.", "Las mujeres no saben cocinar."],
        "cp",
        cache=False,
        progress=False,
    )
    toks = res.tokens
    for row, expected in ((0, ["los", "son", "pobres", "."]), (1, ["no", "saben", "cocina", "##r", "."])):
        t = toks[toks["row"] == row]
        assert (
            t[t["side"] == "more"]["token"].tolist() == t[t["side"] == "less"]["token"].tolist() == expected
        )
    # with sz every token is scored, including the differing ones
    sz = mlm.score_pairs(
        lm, ["Los negros son pobres."], ["Los blancos son pobres."], "sz", cache=False, progress=False
    )
    assert sz.tokens[sz.tokens["side"] == "more"]["token"].tolist() == ["los", "negros", "son", "pobres", "."]


def test_models_without_a_known_head_use_the_full_forward(lm, pairs):
    from transformers import DistilBertConfig, DistilBertForMaskedLM

    torch.manual_seed(0)
    cfg = DistilBertConfig(
        vocab_size=lm.model.config.vocab_size,
        dim=16,
        n_layers=1,
        n_heads=2,
        hidden_dim=32,
        max_position_embeddings=128,
        pad_token_id=lm.tokenizer.pad_token_id,
    )
    other = mlm.MaskedLM(
        model=DistilBertForMaskedLM(cfg).eval(), tokenizer=lm.tokenizer, name="tiny-distil", in_process=True
    )
    assert lm_masked.mlm_head(other.model) is None
    sub = pairs.iloc[[1, 2, 3]]
    res = mlm.score_pairs(
        other, sub["sent_more"], sub["sent_less"], "cp", cache=False, progress=False, batch_size=5
    )
    for r in res.scores.itertuples():
        ref = reference_pair_scores(other, r.sent_more, r.sent_less, "cp")
        assert (
            abs(ref["sent1_score"] - r.sent_more_score) < TOL
            and abs(ref["sent2_score"] - r.sent_less_score) < TOL
        )


def test_batch_size_does_not_change_scores(lm, pairs):
    sub = pairs.head(15)
    a = mlm.score_pairs(
        lm, sub["sent_more"], sub["sent_less"], "cp", cache=False, progress=False, batch_size=1
    )
    b = mlm.score_pairs(
        lm, sub["sent_more"], sub["sent_less"], "cp", cache=False, progress=False, batch_size=500
    )
    np.testing.assert_allclose(a.scores["sent_more_score"], b.scores["sent_more_score"], atol=TOL)


# ------------------------------------------------------------------------------ cache
def test_cache_resumes_after_interruption(lm, pairs, monkeypatch, interrupt_after):
    sub = pairs.head(60)
    full = mlm.score_pairs(lm, sub["sent_more"], sub["sent_less"], "cp", cache=False, progress=False)

    real = interrupt_after(lm_masked, "masked_log_probs")
    with pytest.raises(KeyboardInterrupt):
        mlm.score_pairs(lm, sub["sent_more"], sub["sent_less"], "cp", chunk_size=10, progress=False)
    monkeypatch.setattr(lm_masked, "masked_log_probs", real)

    resumed = mlm.score_pairs(lm, sub["sent_more"], sub["sent_less"], "cp", chunk_size=10, progress=False)
    assert resumed.n_cached == 20  # two chunks of 10 were written before the interruption
    assert resumed.n_computed == len(full.scores) - 20
    pd.testing.assert_frame_equal(resumed.scores, full.scores, check_exact=False, atol=1e-9)
    pd.testing.assert_frame_equal(resumed.tokens, full.tokens, check_exact=False, atol=1e-9)

    again = mlm.score_pairs(lm, sub["sent_more"], sub["sent_less"], "cp", progress=False)
    assert again.n_computed == 0 and again.n_cached == len(full.scores)
    # a different metric or model is a different cache entry
    assert mlm.score_pairs(lm, sub["sent_more"], sub["sent_less"], "sz", progress=False).n_cached == 0
    other = tiny_masked_lm(seed=3)
    assert mlm.score_pairs(other, sub["sent_more"], sub["sent_less"], "cp", progress=False).n_cached == 0


def test_cache_ignores_a_truncated_line(lm, pairs):
    sub = pairs.head(12)
    first = mlm.score_pairs(lm, sub["sent_more"], sub["sent_less"], "sz", chunk_size=4, progress=False)
    with open(first.cache_path, "a", encoding="utf-8") as fh:
        fh.write('{"v": 1, "row": 3, "key": "tru')  # a write cut by a crash
    again = mlm.score_pairs(lm, sub["sent_more"], sub["sent_less"], "sz", progress=False)
    assert again.n_computed == 0
    np.testing.assert_allclose(again.scores["sent_more_score"], first.scores["sent_more_score"])


# ------------------------------------------------------------------------------ bad input
def test_bad_rows_are_reported_with_row_and_line_numbers(lm, caplog):
    long = " ".join(["palabra"] * 300)
    more = [
        "Los pobres son ignorantes.",
        "",
        long,
        "Los Ã©xitos",
        "Él come ☃ pan.",
        "Hola amigo.",
        "abc def",
        None,
    ]
    less = [
        "Los ricos son ignorantes.",
        "Algo.",
        long + " x",
        "Los éxitos",
        "Ella come ☃ pan.",
        "Hola amigo.",
        "xyz qrs",
        "x",
    ]
    lines = pd.Series([10, 11, 12, 13, 14, 15, 16, 17], index=range(100, 108))  # positional, not by label
    with caplog.at_level("WARNING", logger="biaskit.lm"):
        res = mlm.score_pairs(lm, more, less, "cp", lines=lines, cache=False, progress=False)
    rep = res.report
    # as the official metric.py: [UNK] sentences are scored (row 4), identical pairs (5) and pairs
    # sharing no token (6) are kept as exact ties; every one of them is reported as "kept"
    assert list(res.scores["row"]) == [0, 4, 5, 6]
    assert rep.skipped_rows == [1, 2, 3, 7]
    reasons = dict(zip(rep.issues["row"], rep.issues["reason"], strict=False))
    actions = dict(zip(rep.issues["row"], rep.issues["action"], strict=False))
    assert "empty" in reasons[1]
    assert "longer than the model window" in reasons[2]
    assert "mis-encoded" in reasons[3]
    assert "unknown token" in reasons[4] and "☃" in reasons[4] and actions[4] == "kept"
    assert "identical" in reasons[5] and "counted as a tie" in reasons[5] and actions[5] == "kept"
    assert "share no token" in reasons[6] and "counted as a tie" in reasons[6] and actions[6] == "kept"
    assert "missing sentence" in reasons[7]
    assert set(rep.issues["line"]) == {11, 12, 13, 14, 15, 16, 17}
    assert res.tie_rows == [5, 6]
    s = res.scores.set_index("row")
    assert s.loc[5, "sent_more_score"] == s.loc[5, "sent_less_score"] < 0
    assert s.loc[6, "sent_more_score"] == s.loc[6, "sent_less_score"] == 0.0
    assert list(s["line"]) == [10, 14, 15, 16]
    assert "skipped" in caplog.text and "kept" in caplog.text
    with pytest.raises(ValueError, match="longer than the model window"):
        mlm.score_pairs(lm, more, less, "cp", cache=False, progress=False, errors="raise")
    # unk="skip" leaves the [UNK] pair out (and only it)
    skip = mlm.score_pairs(lm, more, less, "cp", lines=lines, cache=False, progress=False, unk="skip")
    assert skip.report.skipped_rows == [1, 2, 3, 4, 7] and list(skip.scores["row"]) == [0, 5, 6]


@pytest.mark.slow
def test_identical_pairs_are_exact_ties_whatever_the_batch(lm, pairs):
    """An identical pair is scored once: both sides equal exactly, for every metric and batch size."""
    sub = pairs.iloc[[47, 48, 49]]  # row 48 tokenises identically for the tiny model
    for metric in ("cp", "sz", "aul"):
        for bs in (1, 3, 64):
            res = mlm.score_pairs(
                lm, sub["sent_more"], sub["sent_less"], metric, cache=False, progress=False, batch_size=bs
            )
            r = res.scores.set_index("row")
            assert res.tie_rows == [1] and r.loc[1, "tie_reason"] == "identical"
            assert r.loc[1, "sent_more_score"] == r.loc[1, "sent_less_score"]
            assert r["tie_reason"].isna().tolist() == [True, False, True]
            ref = reference_pair_scores(lm, sub["sent_more"].iloc[1], sub["sent_less"].iloc[1], metric)
            assert r.loc[1, "sent_more_score"] == pytest.approx(ref["sent1_score"], abs=TOL)
            # the per-token table has both sides of the tie
            t = res.tokens[res.tokens["row"] == 1]
            assert len(t[t["side"] == "more"]) == len(t[t["side"] == "less"]) == r.loc[1, "n_more"] > 0


def test_unk_can_be_scored_explicitly(lm):
    res = mlm.score_pairs(
        lm, ["Él come ☃ pan."], ["Ella come ☃ pan."], "sz", unk="score", cache=False, progress=False
    )
    assert len(res.scores) == 1
    assert list(res.report.issues["action"]) == ["kept", "kept"]


def test_special_token_text_is_reported(lm):
    cased = mlm.MaskedLM(
        model=lm.model, tokenizer=lm.tokenizer, name="tiny-cased", lowercase=False, in_process=True
    )
    res = mlm.score_sentences(
        cased, ["El [MASK] es alto.", "El perro es alto."], "sz", cache=False, progress=False
    )
    assert list(res.scores["row"]) == [1]
    assert "special token" in res.report.issues["reason"].iloc[0]


# ------------------------------------------------------------------------------ fill-blank
def test_fill_blank_matches_official_stereoset_loop(lm):
    contexts = ["El médico es BLANK.", "Los BLANK son ignorantes.", "El BLANK y el BLANK."]
    words = ["alto", "desanimarse", "perro"]
    df = mlm.fill_blank_probabilities(lm, contexts, words, progress=False)
    assert list(df["n_subwords"]) == [len(lm.tokenizer.encode(w, add_special_tokens=False)) for w in words]
    assert df["n_subwords"].iloc[1] > 1
    for r in df.itertuples():
        assert r.prob == pytest.approx(reference_fill_blank(lm, r.context, r.word), abs=1e-6)
        assert r.log_prob_sum == pytest.approx(np.sum(np.log(r.subword_probs)))
    bad = mlm.fill_blank_probabilities(lm, ["sin hueco", "El BLANK."], ["x", ""], progress=False)
    assert bad.empty and bad.attrs["report"].skipped_rows == [0, 1]


def test_baseline_probabilities_sum_over_word_sets(lm):
    ctx = ["Los BLANK son ignorantes.", "El BLANK llegó tarde."]
    ster = [["pobres", "negros"], ["médico"]]
    anti = [["ricos"], ["enfermero", "perro"]]
    res = mlm.baseline_probabilities(lm, ctx, ster, anti, progress=False)
    for i in range(2):
        exp_s = sum(reference_fill_blank(lm, ctx[i], w) for w in ster[i])
        exp_a = sum(reference_fill_blank(lm, ctx[i], w) for w in anti[i])
        assert res["p_ster"].iloc[i] == pytest.approx(exp_s, abs=1e-7)
        assert res["p_anster"].iloc[i] == pytest.approx(exp_a, abs=1e-7)
    assert list(res["n_ster"]) == [2, 1] and list(res["n_anster"]) == [1, 2]
    with pytest.raises(ValueError, match="one list of words"):
        mlm.baseline_probabilities(lm, ctx, ["pobres", "x"], anti)


# ------------------------------------------------------------------------------ loading
def test_missing_model_raises_clearly_without_network(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(
        mlm.ModelNotAvailableError, match="huggingface-cli download biaskit-test/no-such-model"
    ):
        mlm.load_masked_lm("biaskit-test/no-such-model")
    with pytest.raises(mlm.ModelNotAvailableError, match=r"config\.json"):
        mlm.load_masked_lm(tmp_path)


def test_missing_local_folder_is_named_not_sent_to_the_hub(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    cases = {
        str(tmp_path / "no-such-folder"): tmp_path / "no-such-folder",  # absolute
        "./models/bert": tmp_path / "models" / "bert",
        "../elsewhere/bert": tmp_path.parent / "elsewhere" / "bert",
        "models/bert": tmp_path / "models" / "bert",  # a local "models/" folder exists: a path
        "a/b/c": tmp_path / "a" / "b" / "c",  # not a valid hub id
    }
    for name, resolved in cases.items():
        with pytest.raises(mlm.ModelNotAvailableError) as err:
            mlm.load_masked_lm(name)
        msg = str(err.value)
        assert f"{resolved.resolve()}: the folder was not found" in msg, msg
        assert f"huggingface-cli download {name}" not in msg
        assert "not a Hugging Face hub id" in msg
        assert f"--local-dir {resolved.resolve()}" in msg
        assert lm_loading._looks_like_path(name)
    # the same text where resolve_default_model refuses the missing folder (no random stand-in in its place)
    with pytest.raises(mlm.ModelNotFoundError, match="the folder was not found"):
        mlm.resolve_default_model("./models/bert")
    # hub ids keep the hub instructions
    assert not lm_loading._looks_like_path("dccuchile/bert-base-spanish-wwm-uncased")
    assert not lm_loading._looks_like_path("bert-base-uncased")
    assert "huggingface-cli download org/model --local-dir" in mlm.how_to_get_model("org/model")
    # an existing folder without config.json
    with pytest.raises(mlm.ModelNotAvailableError, match=r"not a saved model \(it has no config\.json\)"):
        mlm.load_masked_lm("models")


def test_hub_unreachable_is_detected_quickly(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(lm_loading, "_hub_reachable", lambda timeout=3.0: False)
    with pytest.raises(mlm.ModelNotAvailableError, match=r"cannot be\s+reached"):
        mlm.load_masked_lm("some-org/some-model")


def test_load_from_a_saved_folder_round_trip(lm, tmp_path):
    lm.model.save_pretrained(tmp_path)
    lm.tokenizer.save_pretrained(tmp_path)
    loaded = mlm.load_masked_lm(tmp_path, device="cpu")
    assert not loaded.model.training and loaded.lowercase
    s = ["Los pobres son realmente ignorantes."]
    a = mlm.score_sentences(lm, s, cache=False, progress=False).scores["score"].iloc[0]
    b = mlm.score_sentences(loaded, s, cache=False, progress=False).scores["score"].iloc[0]
    assert a == pytest.approx(b, abs=1e-5)
    assert mlm.resolve_default_model(str(tmp_path)).name == str(tmp_path)


def _fake_bundled_model(root, name: str, lm=None, pppl: float = 123.4):
    """A ``data/models/<name>`` folder under ``root``: ``training.json`` (and the weights of ``lm``)."""
    import json

    folder = root / "models" / name
    folder.mkdir(parents=True)
    (folder / "training.json").write_text(
        json.dumps({"name": name, "corpus": "test text", "bundled_held_out_pppl": pppl}), encoding="utf-8"
    )
    if lm is not None:
        lm.model.save_pretrained(folder)
        lm.tokenizer.save_pretrained(folder)
    return folder


def test_resolve_default_model_falls_back_offline_only_when_allowed(monkeypatch, tmp_path):
    # no pretrained model on this machine and no bundled model either: an error naming both, unless the
    # caller allows the tiny random stand-in (a quick pipeline check)
    lm2 = mlm.get_masked_lm("tiny")  # built first: its vocabulary comes from the real data folder
    assert lm2.is_fallback
    monkeypatch.delenv("BIASKIT_MLM", raising=False)
    monkeypatch.setenv("BIASKIT_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(lm_builtin, "_locally_available", lambda name: False)
    with pytest.raises(mlm.ModelNotFoundError) as err:
        mlm.resolve_default_model()
    msg = str(err.value)
    assert mlm.BETO in msg and str(tmp_path / "models" / "es-mlm") in msg
    assert "python -m biaskit train-models es-mlm" in msg and "allow_fallback=True" in msg
    choice = mlm.resolve_default_model(allow_fallback=True)
    assert choice.name == "tiny" and choice.is_fallback and choice.kind == "random"
    assert "TINY RANDOM" in choice.message and "huggingface-cli download" in choice.message
    assert "meaningless" in choice.message
    en = mlm.resolve_default_model(language="en", allow_fallback=True)
    assert en.name == "tiny" and en.is_fallback and "bert-base-uncased" in en.message


def test_resolve_default_model_prefers_the_bundled_trained_model_offline(monkeypatch):
    from biaskit.training import recipes as trained_models

    try:
        trained_models.model_path("es-mlm")
    except FileNotFoundError:
        pytest.skip("the bundled es-mlm is not in data/models (python -m biaskit train-models es-mlm)")
    monkeypatch.delenv("BIASKIT_MLM", raising=False)
    monkeypatch.setattr(lm_builtin, "_locally_available", lambda name: False)
    choice = mlm.resolve_default_model()
    assert choice.name == "es-mlm" and not choice.is_fallback and choice.kind == "trained-here"
    assert "trained by biaskit" in choice.message and "not of BETO" in choice.message
    assert "pseudo-perplexity" in choice.message and "\n" not in choice.message
    loaded = mlm.get_masked_lm(choice.name, device="cpu")
    assert not loaded.is_fallback and not loaded.model.training


def test_resolve_default_model_order_and_kinds(monkeypatch, tmp_path):
    src = tiny_masked_lm(seed=3)  # built first: its vocabulary comes from the real data folder
    monkeypatch.delenv("BIASKIT_MLM", raising=False)
    monkeypatch.setenv("BIASKIT_DATA_DIR", str(tmp_path))
    _fake_bundled_model(tmp_path, "es-mlm", lm=src, pppl=123.4)
    # BETO on this machine wins
    monkeypatch.setattr(lm_builtin, "_locally_available", lambda name: name == mlm.BETO)
    first = mlm.resolve_default_model()
    assert (first.name, first.kind, first.is_fallback) == (mlm.BETO, "pretrained", False)
    # no BETO: the bundled model trained here, with a one-sentence message saying what it is
    monkeypatch.setattr(lm_builtin, "_locally_available", lambda name: False)
    es = mlm.resolve_default_model("auto", language="es")
    assert (es.name, es.kind, es.is_fallback) == ("es-mlm", "trained-here", False)
    assert es.message == (
        "Using es-mlm, a small BERT-style model trained by biaskit on the bundled Spanish Europarl sample "
        "(held-out pseudo-perplexity 123): a weak but real model; its numbers are real measurements of "
        "that model, not of BETO."
    )
    # English: bert-base-uncased is not here and en-mlm is missing from this data folder -> an error,
    # or tiny when the caller allows the stand-in
    with pytest.raises(mlm.ModelNotFoundError, match="train-models en-mlm"):
        mlm.resolve_default_model(language="en")
    en = mlm.resolve_default_model(language="en", allow_fallback=True)
    assert (en.name, en.kind, en.is_fallback) == ("tiny", "random", True)
    # asked for by name (argument or BIASKIT_MLM)
    assert mlm.resolve_default_model("tiny").kind == "random"
    assert mlm.resolve_default_model("es-mlm").kind == "trained-here"
    with pytest.raises(mlm.ModelNotFoundError, match="train-models en-mlm"):
        mlm.resolve_default_model("en-mlm")  # a missing bundled model: never the stand-in
    monkeypatch.setenv("BIASKIT_MLM", "tiny")
    assert mlm.resolve_default_model().name == "tiny"
    with pytest.raises(ValueError, match="language"):
        mlm.resolve_default_model(language="fr")


def test_get_masked_lm_loads_bundled_models(monkeypatch, tmp_path):
    src = tiny_masked_lm(seed=3)  # built first: its vocabulary comes from the real data folder
    monkeypatch.delenv("BIASKIT_MLM", raising=False)
    monkeypatch.setenv("BIASKIT_DATA_DIR", str(tmp_path))
    _fake_bundled_model(tmp_path, "en-mlm", lm=src)
    loaded = mlm.get_masked_lm("en-mlm", device="cpu")
    assert isinstance(loaded, mlm.MaskedLM) and not loaded.is_fallback
    s = ["The doctor said she was late."]
    a = mlm.score_sentences(src, s, cache=False, progress=False).scores["score"].iloc[0]
    b = mlm.score_sentences(loaded, s, cache=False, progress=False).scores["score"].iloc[0]
    assert a == pytest.approx(b, abs=1e-5)
    with pytest.raises(FileNotFoundError, match="train-models es-mlm"):
        mlm.get_masked_lm("es-mlm")


def _padded_batch(vocab: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, vocab, (12, 17), generator=g)
    att = torch.ones_like(ids)
    att[6:, 11:] = 0  # half the rows are padded: padded keys must be ignored
    pos = torch.randint(1, 10, (12,), generator=g)
    return ids, att, pos


@pytest.mark.parametrize("layers", [1, 3])
def test_last_layer_at_the_mask_only_equals_the_full_forward(layers):
    """The shortcut (last layer evaluated at the masked position only) changes nothing but rounding."""
    lm = tiny_masked_lm(
        seed=1,
        hidden_size=32,
        num_hidden_layers=layers,
        num_attention_heads=4,
        intermediate_size=64,
        initializer_range=0.1,
    )
    assert lm_masked._bert_like_last_layer(lm.model) is lm.model.bert.encoder.layer[-1]
    ids, att, pos = _padded_batch(lm.model.config.vocab_size)
    with torch.inference_mode():
        fast, head = lm_masked._hidden_at(lm, ids, att, pos)
        fast = head(fast)
        full = lm.model(input_ids=ids, attention_mask=att).logits[torch.arange(12), pos]
    assert head is lm.model.cls
    np.testing.assert_allclose(fast.numpy(), full.numpy(), atol=1e-5, rtol=0)
    # the hook that stopped the forward pass is gone: a plain forward runs the last layer again
    assert not lm.model.bert.encoder.layer[-1]._forward_pre_hooks


def test_last_layer_shortcut_on_roberta_and_its_refusals(lm, pairs):
    from transformers import AlbertConfig, AlbertForMaskedLM, RobertaConfig, RobertaForMaskedLM

    torch.manual_seed(0)
    tok = lm.tokenizer
    cfg = RobertaConfig(
        vocab_size=len(tok.get_vocab()),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=160,
        pad_token_id=tok.pad_token_id,
        initializer_range=0.2,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    rob = RobertaForMaskedLM(cfg).eval()
    assert lm_masked._bert_like_last_layer(rob) is rob.roberta.encoder.layer[-1]
    other = mlm.MaskedLM(model=rob, tokenizer=tok, name="tiny-roberta", in_process=True)
    ids, att, pos = _padded_batch(cfg.vocab_size, seed=3)
    with torch.inference_mode():
        fast, head = lm_masked._hidden_at(other, ids, att, pos)
        fast = head(fast)
        full = rob(input_ids=ids, attention_mask=att).logits[torch.arange(12), pos]
    np.testing.assert_allclose(fast.numpy(), full.numpy(), atol=1e-5, rtol=0)
    # end to end: batched cp scores on RoBERTa = the one-forward-per-mask official loop
    sub = pairs.iloc[[1, 2, 3, 4]]
    res = mlm.score_pairs(
        other, sub["sent_more"], sub["sent_less"], "cp", cache=False, progress=False, batch_size=7
    )
    for r in res.scores.itertuples():
        ref = reference_pair_scores(other, r.sent_more, r.sent_less, "cp")
        assert abs(ref["sent1_score"] - r.sent_more_score) < TOL
        assert abs(ref["sent2_score"] - r.sent_less_score) < TOL
    # ALBERT shares its layers (another layout): the full forward pass is used
    alb = AlbertForMaskedLM(
        AlbertConfig(
            vocab_size=300,
            embedding_size=16,
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=4,
            intermediate_size=64,
        )
    ).eval()
    assert lm_masked.mlm_head(alb) is not None and lm_masked._bert_like_last_layer(alb) is None
    # a decoder-style BERT is refused too
    dec = tiny_masked_lm(seed=0)
    dec.model.config.is_decoder = True
    try:
        assert lm_masked._bert_like_last_layer(dec.model) is None
    finally:
        dec.model.config.is_decoder = False
