"""Corpus bias vs model bias (biaskit.metrics.corpus_to_model), checked by hand on a toy corpus."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gensim.models import KeyedVectors
from scipy import stats

from biaskit.metrics.corpus_to_model import corpus_model_correlation, corpus_model_table, fill_mask_bias

MALE, FEMALE = ["él", "hombre"], ["ella", "mujer"]


def _corpus():
    sents = []
    sents += [["él", "guerra"]] * 6 + [["ella", "guerra"]] * 2  # guerra leans male
    sents += [["ella", "casa"]] * 6 + [["él", "casa"]] * 3  # casa leans female
    sents += [["hombre", "mesa"]] * 3 + [["mujer", "mesa"]] * 3  # neutral
    sents += [["él", "raro"]] * 5  # only with men's words: PMI undefined
    sents += [["otro"]] * 10 + [["él"]] * 4 + [["ella"]] * 5
    return sents


def test_pmi_column_is_bias_pmi_by_hand():
    t = corpus_model_table(["guerra", "casa", "mesa", "raro", "nada"], _corpus(), MALE, FEMALE, min_count=5)
    t = t.set_index("word")
    n_a = 6 + 3 + 3 + 5 + 4  # sentences with a men's word
    n_b = 2 + 6 + 3 + 5  # sentences with a women's word
    assert t.loc["guerra", "pmi"] == pytest.approx(math.log((6 / n_a) / (2 / n_b)))
    assert t.loc["casa", "pmi"] == pytest.approx(math.log((3 / n_a) / (6 / n_b)))
    assert t.loc["guerra", "sentences_with_groups"] == 8
    assert np.isnan(t.loc["raro", "pmi"]) and "undefined" in t.loc["raro", "note"]
    assert np.isnan(t.loc["nada", "pmi"]) and "fewer than 5" in t.loc["nada", "note"]


def test_w2v_column_and_correlation():
    rng = np.random.default_rng(0)
    words = ["guerra", "casa", "mesa", "él", "hombre", "ella", "mujer"]
    kv = KeyedVectors(8)
    kv.add_vectors(words, rng.normal(size=(len(words), 8)).astype(np.float32))
    t = corpus_model_table(["guerra", "casa", "mesa"], _corpus(), MALE, FEMALE, vectors=kv, min_count=5)

    def cos(a, b):
        return float(kv[a] @ kv[b] / np.linalg.norm(kv[a]) / np.linalg.norm(kv[b]))

    for w, s in zip(t["word"], t["w2v"], strict=True):
        expected = np.mean([cos(w, m) for m in MALE]) - np.mean([cos(w, f) for f in FEMALE])
        assert s == pytest.approx(expected, abs=1e-6)
    r = corpus_model_correlation(t, "w2v")
    assert r.statistic == pytest.approx(stats.spearmanr(t["pmi"], t["w2v"]).statistic)
    assert r.n == 3


def test_correlation_needs_three_words():
    t = corpus_model_table(["guerra", "raro"], _corpus(), MALE, FEMALE, min_count=5)
    t["w2v"] = [0.1, 0.2]
    with pytest.raises(ValueError, match="only 1 words"):
        corpus_model_correlation(t, "w2v")


def test_fill_mask_bias_is_the_mean_log_ratio(one_torch_thread):
    from biaskit.lm import tiny_masked_lm
    from biaskit.metrics.gender_templates import mask_fill_probabilities

    lm = tiny_masked_lm(texts=["he talked about the war and she about the house ."] * 3)
    templates = ("[MASK] talked about the {w}.", "[MASK] thinks about the {w}.")
    got = fill_mask_bias(lm, ["war", "house"], templates=templates, pronouns=("he", "she"))
    for w, g in zip(["war", "house"], got, strict=True):
        p = mask_fill_probabilities(lm, [t.replace("{w}", w) for t in templates], [["he", "she"]] * 2)
        assert g == pytest.approx(np.mean(np.log(p[:, 0] / p[:, 1])))
