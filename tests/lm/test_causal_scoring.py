"""Causal (decoder) language models through the same public scorers as masked ones.

Every causal score is checked against an independent computation: a token-by-token loop that feeds
each prefix alone (no batching, no padding, full logits), and for CrowS-Pairs a transcription of
lm-evaluation-harness's ``HFLM._loglikelihood_tokens`` + ``process_results`` + ``mean_stderr``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from biaskit import lm as lms
from biaskit.data.datasets import load_crows_pairs_es
from biaskit.lm import CausalLM, tiny_causal_lm, tiny_masked_lm
from biaskit.metrics import crows
from biaskit.metrics import gender_templates as gt


@pytest.fixture(scope="module")
def clm(one_torch_thread) -> CausalLM:
    return tiny_causal_lm(seed=3)


@pytest.fixture(scope="module")
def pairs() -> pd.DataFrame:
    return load_crows_pairs_es().head(40).reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
# independent references
# ---------------------------------------------------------------------------------------------
def naive_token_log_probs(lm: CausalLM, text: str) -> list[float]:
    """log P(w_t | BOS, w_<t) for every token, one forward pass per prefix, nothing batched."""
    t = text.lower() if lm.lowercase else text
    ids = [lm.tokenizer.bos_token_id, *lm.tokenizer.encode(t, add_special_tokens=False)]
    out = []
    with torch.no_grad():
        for k in range(1, len(ids)):
            logits = lm.model(torch.tensor([ids[:k]])).logits[0, -1]
            out.append(float(torch.log_softmax(logits.double(), dim=-1)[ids[k]]))
    return out


def harness_loglikelihood(model, tokenizer, prefix_token_id: int, continuation: str) -> float:
    """lm-evaluation-harness ``HFLM._loglikelihood_tokens`` for one request with an empty context.

    context_enc = [prefix_token_id]; continuation_enc = tok_encode(continuation) (no special tokens);
    inp = (context_enc + continuation_enc)[:-1]; logits = log_softmax(model(inp)); the last
    len(continuation_enc) rows are gathered at the continuation tokens and summed.
    """
    context_enc = [prefix_token_id]
    continuation_enc = tokenizer.encode(continuation, add_special_tokens=False)
    inp = torch.tensor([(context_enc + continuation_enc)[:-1]], dtype=torch.long)
    with torch.no_grad():
        multi_logits = torch.nn.functional.log_softmax(model(inp).logits, dim=-1)
    contlen = len(continuation_enc)
    inplen = inp.shape[1]
    logits = multi_logits[0, inplen - contlen : inplen].unsqueeze(0)
    cont_toks = torch.tensor(continuation_enc, dtype=torch.long).unsqueeze(0)
    logits = torch.gather(logits, 2, cont_toks.unsqueeze(-1)).squeeze(-1)
    return float(logits.sum())


def harness_process_results(doc, results):
    """lm_eval/tasks/crows_pairs/utils.py ``process_results`` (results = [(ll, is_greedy), ...])."""
    lls, _ = zip(*results, strict=True)
    likelihood1, likelihood2 = lls
    diff = abs(likelihood1 - likelihood2)
    acc = 1.0 if likelihood1 > likelihood2 else 0.0
    return {"likelihood_diff": diff, "pct_stereotype": acc}


def harness_mean_stderr(arr):
    """lm_eval.api.metrics: mean_stderr = sample_stddev(arr) / sqrt(len(arr))."""
    mu = sum(arr) / len(arr)
    return math.sqrt(sum((x - mu) ** 2 for x in arr) / (len(arr) - 1)) / math.sqrt(len(arr))


# ---------------------------------------------------------------------------------------------
# log-likelihoods
# ---------------------------------------------------------------------------------------------
def test_sentence_log_likelihood_equals_token_by_token(clm, pairs):
    sents = list(pairs["sent_more"][:15])
    res = lms.score_sentences(clm, sents, "ll", batch_size=4, cache=False, progress=False)
    mean = lms.score_sentences(clm, sents, "ll_mean", batch_size=4, cache=False, progress=False)
    assert len(res.scores) == 15 and len(res.report) == 0
    for i, s in enumerate(sents):
        ref = naive_token_log_probs(clm, s)
        row = res.scores.loc[res.scores["row"] == i].iloc[0]
        assert row["n_tokens"] == len(ref)
        assert row["score"] == pytest.approx(sum(ref), rel=1e-5, abs=1e-4)
        assert mean.scores.loc[i, "score"] == pytest.approx(sum(ref) / len(ref), rel=1e-5, abs=1e-5)
        toks = res.tokens[res.tokens["row"] == i]["log_prob"].to_numpy()
        np.testing.assert_allclose(toks, ref, rtol=1e-5, atol=1e-5)
    assert res.scores["score"].std() > 1.0  # the model is far from uniform: a wrong position would show


def test_batching_and_padding_do_not_change_scores(clm, pairs):
    sents = list(pairs["sent_more"]) + list(pairs["sent_less"])
    one = lms.score_sentences(clm, sents, cache=False, progress=False, batch_size=1)
    many = lms.score_sentences(clm, sents, cache=False, progress=False, batch_size=64)
    assert one.metric == "ll"  # the default metric of a causal model
    np.testing.assert_allclose(one.scores["score"], many.scores["score"], rtol=1e-5, atol=1e-5)


def test_crows_pct_stereotype_and_likelihood_difference_equal_the_harness(clm, pairs):
    res = lms.score_pairs(clm, pairs["sent_more"], pairs["sent_less"], "ll", cache=False, progress=False)
    got = crows.causal_crows_summary(res.scores["sent_more_score"], res.scores["sent_less_score"])
    per_doc = []
    for more, less in zip(pairs["sent_more"], pairs["sent_less"], strict=True):
        lls = [
            harness_loglikelihood(clm.model, clm.tokenizer, clm.tokenizer.bos_token_id, s.lower())
            for s in (more, less)
        ]
        per_doc.append(harness_process_results({}, [(ll, False) for ll in lls]))
    acc = [d["pct_stereotype"] for d in per_doc]
    diff = [d["likelihood_diff"] for d in per_doc]
    assert got.n == len(pairs)
    assert got.pct_stereotype == pytest.approx(100 * sum(acc) / len(acc), abs=1e-9)
    assert got.pct_stereotype_se == pytest.approx(100 * harness_mean_stderr(acc), rel=1e-9)
    assert got.likelihood_difference == pytest.approx(sum(diff) / len(diff), rel=1e-5)
    assert got.likelihood_difference_se == pytest.approx(harness_mean_stderr(diff), rel=1e-3)
    assert 0 < got.pct_stereotype < 100 and "pairs" in got.summary()
    by = crows.causal_crows_summary(
        res.scores["sent_more_score"], res.scores["sent_less_score"], bias_types=pairs["bias_type"]
    ).by_type
    assert by["n"].sum() == len(pairs)
    # pct_stereotype is crows_score with its defaults (ties count as "not stereotypical")
    assert crows.crows_score(
        res.scores["sent_more_score"], res.scores["sent_less_score"]
    ).score == pytest.approx(got.pct_stereotype)


def test_shared_scores_the_shared_tokens_after_the_first_difference(clm):
    more = ["el hombre es muy fuerte", "es muy fuerte el hombre", "la madre es muy fuerte"]
    less = ["la mujer es muy fuerte", "es muy fuerte la mujer", "la madre es muy fuerte"]
    res = lms.score_pairs(clm, more, less, "shared", cache=False, progress=False)
    s = res.scores.set_index("row")
    # pair 0: "es muy fuerte" follows the difference on both sides: scored given each prefix
    ids_m = [clm.tokenizer.bos_token_id, *clm.tokenizer.encode(more[0], add_special_tokens=False)]
    ids_l = [clm.tokenizer.bos_token_id, *clm.tokenizer.encode(less[0], add_special_tokens=False)]
    t_m, t_l = lms.shared_after_difference(ids_m, ids_l)
    assert len(t_m) == 3 and t_m == [len(ids_m) - 3, len(ids_m) - 2, len(ids_m) - 1]
    ref_m = naive_token_log_probs(clm, more[0])
    ref_l = naive_token_log_probs(clm, less[0])
    assert s.loc[0, "sent_more_score"] == pytest.approx(sum(ref_m[p - 1] for p in t_m), rel=1e-5)
    assert s.loc[0, "sent_less_score"] == pytest.approx(sum(ref_l[p - 1] for p in t_l), rel=1e-5)
    # pair 1 differs only at the end: nothing shared follows, an exact tie, flagged and reported
    assert s.loc[1, "tie_reason"] == lms.TIE_NOTHING_AFTER
    assert s.loc[1, "sent_more_score"] == s.loc[1, "sent_less_score"] == 0.0
    assert s.loc[2, "tie_reason"] == lms.TIE_IDENTICAL
    assert set(res.report.issues["action"]) == {"kept"} and len(res.report) == 2
    # ties count in the CrowS denominator as not stereotypical
    assert crows.crows_score(s["sent_more_score"], s["sent_less_score"]).n_ties == 2


def test_masked_metrics_on_a_causal_model_say_why_not(clm):
    for metric, word in (("cp", "no mask"), ("sz", "exact log-likelihood"), ("aul", "left side")):
        with pytest.raises(ValueError, match=word):
            lms.score_pairs(clm, ["a b"], ["a c"], metric, cache=False, progress=False)
    with pytest.raises(ValueError, match="masked language model"):
        lms.score_sentences(tiny_masked_lm(), ["hola"], "ll", cache=False, progress=False)
    with pytest.raises(ValueError, match="needs sentence pairs"):
        lms.score_sentences(clm, ["hola"], "shared", cache=False, progress=False)
    with pytest.raises(TypeError, match="fill_blank_probabilities needs a masked language model"):
        lms.fill_blank_probabilities(clm, ["el BLANK es fuerte"], ["hombre"])
    with pytest.raises(TypeError, match="pronoun_probability_difference"):
        gt.mask_fill_probabilities(clm, ["[MASK] es fuerte"], [["él", "ella"]])


def test_lpbs_on_a_causal_model_is_a_clear_error(clm):
    from biaskit.metrics.lpbs import LPBS, load_lpbs

    with pytest.raises(TypeError, match="prior"):
        LPBS().run(load_lpbs("es:seat_math_arts/lpbs"), clm)


def test_bad_input_is_reported_for_causal_models(clm):
    long = " ".join(["palabra"] * 200)
    sents = ["el hombre es fuerte", "", long, "hola [SEP] mundo", None, "la mujer"]
    res = lms.score_sentences(clm, sents, cache=False, progress=False, lines=[10, 11, 12, 13, 14, 15])
    rep = res.report.issues.set_index("row")
    assert sorted(res.scores["row"]) == [0, 5]
    assert set(rep.index) == {1, 2, 3, 4} and set(rep["action"]) == {"skipped"}
    assert "empty" in rep.loc[1, "reason"] and "window" in rep.loc[2, "reason"]
    assert "token" in rep.loc[3, "reason"] and rep.loc[3, "line"] == 13  # "[sep]" once lower-cased: [UNK]
    with pytest.raises(ValueError):
        lms.score_sentences(clm, sents, cache=False, progress=False, errors="raise")


def test_causal_scores_are_cached_and_resume(clm, pairs):
    a = lms.score_pairs(clm, pairs["sent_more"], pairs["sent_less"], "ll", progress=False, chunk_size=8)
    b = lms.score_pairs(clm, pairs["sent_more"], pairs["sent_less"], "ll", progress=False)
    assert a.n_computed == len(pairs) and b.n_cached == len(pairs) and b.n_computed == 0
    pd.testing.assert_frame_equal(a.scores, b.scores)
    assert a.cache_path is not None and a.cache_path.exists()


def test_a_saved_causal_model_loads_from_its_folder_and_scores_the_same(clm, tmp_path, pairs):
    clm.model.save_pretrained(tmp_path / "m")
    clm.tokenizer.save_pretrained(tmp_path / "m")
    assert lms.model_kind(tmp_path / "m") == "causal"
    loaded = lms.load_lm(tmp_path / "m", device="cpu")
    assert isinstance(loaded, CausalLM) and loaded.prefix_token_id == clm.tokenizer.bos_token_id
    sents = list(pairs["sent_more"][:10])
    a = lms.score_sentences(clm, sents, cache=False, progress=False).scores["score"]
    b = lms.score_sentences(loaded, sents, cache=False, progress=False).scores["score"]
    np.testing.assert_allclose(a, b, rtol=1e-6)
    tiny = lms.get_lm("tiny-causal")
    assert isinstance(tiny, CausalLM) and tiny.is_fallback
    assert lms.get_lm("tiny").kind == "masked"


def test_a_tokenizer_without_bos_or_eos_scores_from_the_second_token(caplog):
    lm = tiny_causal_lm(seed=4)
    lm.tokenizer.bos_token = None
    lm.tokenizer.eos_token = None
    lm.name = "no-prefix-model"
    with caplog.at_level("WARNING", logger="biaskit.lm.causal"):
        res = lms.score_sentences(lm, ["el hombre es fuerte"], cache=False, progress=False)
    n = len(lm.tokenizer.encode("el hombre es fuerte", add_special_tokens=False))
    assert res.scores.loc[0, "n_tokens"] == n - 1
    assert "neither a BOS nor an EOS" in caplog.text


def test_stereoset_intrasentence_on_a_causal_model_is_the_geometric_mean_probability(clm):
    from biaskit.data.datasets import load_stereoset
    from biaskit.metrics import stereoset as st

    gold = load_stereoset()
    ids = [ex["id"] for ex in gold["data"]["intrasentence"][:4]]
    en = tiny_causal_lm(
        seed=1, texts=[s["sentence"] for ex in gold["data"]["intrasentence"][:40] for s in ex["sentences"]]
    )
    opts = st.stereoset_option_scores(en, gold, examples=ids, progress=False)
    assert len(opts) == 12 and opts["prob"].notna().all()
    for _, row in opts.head(6).iterrows():
        ref = naive_token_log_probs(en, row["sentence"])
        assert row["prob"] == pytest.approx(math.exp(sum(ref) / len(ref)), rel=1e-5)
        assert row["n_subwords"] == len(ref)


def test_template_pronouns_on_a_causal_model_use_the_text_before_the_slot(caplog):
    texts = gt.tiny_model_texts()
    lm = tiny_causal_lm(seed=2, texts=texts)
    inst = gt.build_tbd_instances("clean", categories=["medical"]).head(40)
    with caplog.at_level("WARNING", logger="biaskit.metrics.gender_templates"):
        out = gt.pronoun_probability_difference(lm, inst)
    n_before = sum(
        s.find("[MASK]") < s.lower().find(p.lower())
        for s, p in zip(inst["sentence"], inst["profession"], strict=True)
    )
    assert len(out) == len(inst) - n_before and out.attrs["n_not_causal"] == n_before > 0
    assert "left out" in caplog.text
    row = out.iloc[0]
    prefix = row["sentence"][: row["sentence"].find("[MASK]")].rstrip().lower()
    ids = [lm.tokenizer.bos_token_id, *lm.tokenizer.encode(prefix, add_special_tokens=False)]
    with torch.no_grad():
        p = torch.softmax(lm.model(torch.tensor([ids])).logits[0, -1].double(), dim=-1)
    he = lm.tokenizer.convert_tokens_to_ids(row["male"])
    she = lm.tokenizer.convert_tokens_to_ids(row["female"])
    assert row["p_male"] == pytest.approx(float(p[he]), rel=1e-6)
    assert row["ppd"] == pytest.approx(float(p[he] - p[she]), rel=1e-6, abs=1e-12)


def test_asld_on_a_causal_model_uses_log_likelihoods(clm):
    pairs = pd.DataFrame({"sent_stereo": ["el hombre es fuerte"], "sent_anti": ["la mujer es fuerte"]})
    out = gt.score_sentence_pairs(clm, pairs)
    ref1 = sum(naive_token_log_probs(clm, "el hombre es fuerte"))
    ref2 = sum(naive_token_log_probs(clm, "la mujer es fuerte"))
    assert out.loc[0, "pll_1"] == pytest.approx(ref1, rel=1e-5)
    assert out.loc[0, "sld"] == pytest.approx(abs(ref1 - ref2), rel=1e-4)


def test_calibration_values_of_a_causal_model_match_direct_computation():
    from biaskit.studies import calibration as cal
    from biaskit.studies import calibration_values as cal_values

    texts = [
        cal_values._fill(t, w, g)
        for t in cal.PAIR_TEMPLATES
        for w in ("nurse", "pilot")
        for g in ("male", "female")
    ]
    texts += [
        b.replace("{t}", w).replace("[MASK]", p)
        for b in cal.BLANK_TEMPLATES
        for w in ("nurse", "pilot")
        for p in ("he", "she")
    ]
    lm = tiny_causal_lm(seed=7, texts=texts, vocab_size=400)
    vals = cal.language_model_values(lm, ["nurse", "pilot"])
    assert set(vals) == set(cal.CAUSAL_LM_METRICS)
    pairs = cal.control_pairs(["nurse", "pilot"])
    ll = vals["causal_ll"]
    assert len(ll.value) == len(pairs)
    ref0 = sum(naive_token_log_probs(lm, pairs.loc[0, "male"])) - sum(
        naive_token_log_probs(lm, pairs.loc[0, "female"])
    )
    assert ll.value[0] == pytest.approx(ref0, rel=1e-4, abs=1e-4)
    nw = vals["causal_next_word"]
    prefix = cal.BLANK_TEMPLATES[0].replace("{t}", "nurse").split("[MASK]")[0].strip().lower()
    ids = [lm.tokenizer.bos_token_id, *lm.tokenizer.encode(prefix, add_special_tokens=False)]
    with torch.no_grad():
        p = torch.softmax(lm.model(torch.tensor([ids])).logits[0, -1].double(), dim=-1)
    he, she = (lm.tokenizer.convert_tokens_to_ids(w) for w in ("he", "she"))
    assert nw.value[0] == pytest.approx(float(p[he] - p[she]), rel=1e-6, abs=1e-12)
    ev = cal.evaluate(vals["causal_ll"], {"nurse": "female", "pilot": "male"}, n_permutations=200)
    assert 0 <= ev.effect <= 100 and ev.n == len(pairs)


@pytest.mark.slow
def test_scorer_perplexity_of_a_bundled_causal_model_equals_the_training_code(one_torch_thread):
    """biaskit.lm's ll (the scorer) and biaskit.training.pretrain.causal_perplexity are written
    independently."""
    from biaskit.training import recipes as tm
    from biaskit.training.pretrain import causal_perplexity

    lm = lms.get_lm("en-clm", device="cpu")
    assert isinstance(lm, CausalLM) and not lm.is_fallback
    held = tm.held_out_sentences("en-clm")[:120]
    res = lms.score_sentences(lm, held, "ll", cache=False, progress=False)
    ppl = math.exp(-res.scores["score"].sum() / res.scores["n_tokens"].sum())
    ref, n = causal_perplexity(lm.model, lm.tokenizer, held)
    assert n == res.scores["n_tokens"].sum()
    assert ppl == pytest.approx(ref, rel=1e-5)
    assert 20 < ppl < 400  # a trained model: far below the 8,000-word vocabulary


@pytest.mark.parametrize("name", ["tiny", "tiny-causal"])
def test_half_precision_weights_score_close_to_float32_and_cache_apart(name, pairs):
    """dtype= loads the weights in bfloat16; the scores move little and never share a cache entry."""
    full = lms.get_lm(name, seed=5)
    half = lms.get_lm(name, seed=5, dtype="bfloat16")
    assert next(half.model.parameters()).dtype == torch.bfloat16
    assert next(full.model.parameters()).dtype == torch.float32
    assert half.fingerprint() != full.fingerprint()
    a = lms.score_pairs(full, pairs["sent_more"], pairs["sent_less"], cache=False, progress=False).scores
    b = lms.score_pairs(half, pairs["sent_more"], pairs["sent_less"], cache=False, progress=False).scores
    dev = np.abs(a["sent_more_score"].to_numpy() - b["sent_more_score"].to_numpy())
    assert 0 < dev.max()  # the precision really changed
    # bfloat16 keeps 8 bits of mantissa: a few tenths of a percent of the (large) sentence scores
    np.testing.assert_allclose(b["sent_more_score"], a["sent_more_score"], rtol=2e-2, atol=0.5)
    with pytest.raises(ValueError, match="dtype must be one of"):
        lms.get_lm(name, dtype="int8")
