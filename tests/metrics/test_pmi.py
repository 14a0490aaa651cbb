"""Tests for biaskit.metrics.pmi: one-pass counts vs a naive scan, formula variants, tests, bad input."""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.contingency_tables import Table2x2
from statsmodels.stats.proportion import proportions_ztest
from statsmodels.stats.weightstats import ztest

from biaskit.data.corpus import load_corpus
from biaskit.data.wordlists import OOVError, load_seed_groups, thesis_neutral_groups
from biaskit.metrics import pmi as P

# ----------------------------------------------------------------------------- naive references


def naive_counts(sentences, X, A):
    """The thesis's algorithm (computing_PMI.calc_fY_Z_fY_nZ), one sentence at a time."""
    f_ax = f_anx = 0
    for s in sentences:
        if any(w in s for w in A):
            if any(w in s for w in X):
                f_ax += 1
            else:
                f_anx += 1
    return f_ax, f_anx


def naive_pairs(sentences, X, A):
    """Sum over word pairs (a, x) of the number of sentences containing both."""
    return sum(sum(1 for s in sentences if a in s and x in s) for a in set(A) for x in set(X))


def random_corpus(n=600, vocab=40, seed=0):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(vocab)]
    p = 1 / np.arange(1, vocab + 1)
    p /= p.sum()
    return [list(rng.choice(words, size=rng.integers(1, 12), p=p)) for _ in range(n)]


@pytest.fixture(scope="module")
def toy():
    sents = random_corpus()
    groups = {
        "g1": ["w1", "w7", "w20"],
        "g2": ["w3"],
        "g3": ["w0", "w5", "w11", "w30"],
        "g4": ["w2", "w39", "nope"],
        "g5": ["w4", "w8", "w9", "w12", "w15"],
    }
    chars = {"c1": (["w0", "w6"], ["w10", "w13"]), "c2": (["w1"], ["w2", "w14", "w25"])}
    return sents, groups, chars


# ----------------------------------------------------------------------------- counts


def test_counts_equal_naive_scan(toy):
    sents, groups, chars = toy
    table = P.bias_pmi_table(groups, chars, sents)
    assert len(table) == len(groups) * len(chars)
    for _, row in table.iterrows():
        A, B = chars[row["characteristic"]]
        X = groups[row["group"]]
        assert (row["f_AX"], row["f_AnX"]) == naive_counts(sents, X, A)
        assert (row["f_BX"], row["f_BnX"]) == naive_counts(sents, X, B)
        assert row["f_AX"] + row["f_AnX"] == sum(any(w in s for w in A) for s in sents)
    assert table.loc[table.group == "g4", "missing"].iloc[0] == ["nope"]


def test_counts_equal_naive_on_real_corpus_with_thesis_groups():
    sents = load_corpus("europarl-es-opus-sample")
    g = load_seed_groups()
    X = thesis_neutral_groups(g)
    A, B = g["espacio_m"], g["espacio_f"]
    table = P.bias_pmi_groups(X, A, B, sents)
    for name in ["pleasant", "terrorism", "positive_emotion", "verbos", "family"]:
        row = table.loc[name]
        assert (row.f_AX, row.f_AnX) == naive_counts(sents, X[name], A)
        assert (row.f_BX, row.f_BnX) == naive_counts(sents, X[name], B)


def test_incidence_products(toy):
    sents, groups, _ = toy
    inc = P.SentenceIncidence(sents)
    gl = list(groups.values())
    co = inc.cooccurrence(gl, gl)
    for i, gi in enumerate(gl):
        for j, gj in enumerate(gl):
            expected = sum(any(w in s for w in gi) and any(w in s for w in gj) for s in sents)
            assert co[i, j] == expected
    assert list(inc.sentence_counts(gl)) == [sum(any(w in s for w in g) for s in sents) for g in gl]
    pairs = inc.pair_counts(gl[:2], gl[2:])
    assert pairs[1, 2] == naive_pairs(sents, gl[4], gl[1])
    assert pairs[0, 0] == naive_pairs(sents, gl[2], gl[0])


# ----------------------------------------------------------------------------- formula


def test_variants_by_hand():
    a, b, c, d = 10, 90, 5, 195
    prop = P.pmi_from_counts(a, b, c, d, variant="proportion")
    assert prop.value == pytest.approx(math.log((10 / 100) / (5 / 200)))  # log 4
    assert prop.value == pytest.approx(math.log(4))
    odds = P.pmi_from_counts(a, b, c, d, variant="odds_ratio")
    assert odds.value == pytest.approx(math.log((10 / 90) / (5 / 195)))
    thesis = P.pmi_from_counts(a, b, c, d, variant="thesis_code")
    assert thesis.value == pytest.approx(odds.value)
    # the thesis's fallback: f_AnX = 0 -> proportion formula
    fb = P.pmi_from_counts(12, 0, 3, 7, variant="thesis_code")
    assert fb.value == pytest.approx(math.log(1 / 0.3))
    assert "fallback" in fb.details["note"]
    # symmetric: swapping A and B flips the sign
    assert P.pmi_from_counts(c, d, a, b).value == pytest.approx(-prop.value)


def test_confidence_intervals_match_statsmodels():
    a, b, c, d = 23, 170, 9, 240
    t = Table2x2(np.array([[a, b], [c, d]]))
    rr = P.pmi_from_counts(a, b, c, d, variant="proportion", confidence=0.95)
    assert rr.value == pytest.approx(t.log_riskratio)
    assert rr.se == pytest.approx(t.log_riskratio_se)
    assert rr.ci == pytest.approx(t.log_riskratio_confint(alpha=0.05))
    orr = P.pmi_from_counts(a, b, c, d, variant="odds_ratio", confidence=0.9)
    assert orr.value == pytest.approx(t.log_oddsratio)
    assert orr.se == pytest.approx(t.log_oddsratio_se)
    assert orr.ci == pytest.approx(t.log_oddsratio_confint(alpha=0.1))


def test_zero_policies(caplog):
    with caplog.at_level(logging.WARNING, logger="biaskit.metrics.pmi"):
        r = P.pmi_from_counts(0, 50, 4, 46)
    assert math.isnan(r.value) and "zero" in caplog.text
    with pytest.raises(ValueError, match="zero counts"):
        P.pmi_from_counts(0, 50, 4, 46, zero="raise")
    h = P.pmi_from_counts(0, 50, 4, 46, zero="haldane")
    assert h.value == pytest.approx(math.log((0.5 / 51) / (4.5 / 51)))
    assert h.correction == "haldane"
    # odds ratio is undefined when f_AnX = 0, the proportion is not
    assert math.isnan(P.pmi_from_counts(5, 0, 4, 46, variant="odds_ratio").value)
    assert P.pmi_from_counts(5, 0, 4, 46).value == pytest.approx(math.log(1 / 0.08))
    with pytest.raises(ValueError, match="thesis_code"):
        P.pmi_from_counts(0, 5, 1, 5, variant="thesis_code", zero="haldane")
    with pytest.raises(ValueError, match="variant"):
        P.pmi_from_counts(1, 5, 1, 5, variant="ratio")
    with pytest.raises(ValueError, match="no sentence mentions"):
        P.pmi_from_counts(0, 0, 1, 5)


def test_table_haldane_and_ci_columns(toy):
    sents, groups, chars = toy
    t = P.bias_pmi_table(groups, chars, sents, zero="haldane", variant="odds_ratio", confidence=0.95)
    assert t["pmi"].notna().all()
    assert {"ci_low", "ci_high"} <= set(t.columns)
    assert (t["ci_low"] < t["pmi"]).all() and (t["pmi"] < t["ci_high"]).all()


def test_single_bias_pmi_matches_table(toy):
    sents, groups, chars = toy
    A, B = chars["c1"]
    r = P.BIAS_PMI(groups["g3"], A, B, sents, confidence=0.95)
    row = P.bias_pmi_groups(groups, A, B, sents).loc["g3"]
    assert r.value == pytest.approx(row.pmi)
    assert (r.f_AX, r.f_AnX, r.f_BX, r.f_BnX) == (row.f_AX, row.f_AnX, row.f_BX, row.f_BnX)
    assert float(r) == r.value
    ref = P.pmi_from_counts(r.f_AX, r.f_AnX, r.f_BX, r.f_BnX)
    assert r.value == pytest.approx(ref.value)


def test_overlapping_x_and_a():
    sents = [["iglesia", "mujer"], ["iglesia"], ["mezquita", "iglesia"], ["mezquita"], ["otra"]]
    r = P.bias_pmi(["iglesia"], ["iglesia"], ["mezquita"], sents)
    # every A-sentence contains X: f_AnX = 0; p(X|A) = 1, p(X|B) = 1/2
    assert (r.f_AX, r.f_AnX, r.f_BX, r.f_BnX) == (3, 0, 1, 1)
    assert r.value == pytest.approx(math.log(2))


# ----------------------------------------------------------------------------- OOV and bad input


def test_oov_and_bad_input(toy, caplog):
    sents, groups, chars = toy
    A, B = chars["c1"]
    with pytest.raises(ValueError, match="empty"):
        P.bias_pmi([], A, B, sents)
    with pytest.raises(ValueError, match="only 0 word"):
        P.bias_pmi(["zzz"], A, B, sents)
    with pytest.raises(ValueError, match="attribute set A"):
        P.bias_pmi_groups(groups, ["zzz", "yyy"], B, sents)
    with pytest.raises(OOVError, match="nope"):
        P.bias_pmi_groups(groups, A, B, sents, policy="raise")
    with pytest.raises(ValueError, match="string"):
        P.bias_pmi("w1", A, B, sents)
    with pytest.raises(ValueError, match="list of tokens"):
        P.SentenceIncidence(["una frase sin tokenizar"])
    with pytest.raises(ValueError, match="non-empty"):
        P.SentenceIncidence([])
    with pytest.raises(ValueError, match="targets is empty"):
        P.bias_pmi_table({}, chars, sents)
    with pytest.raises(ValueError, match="pair"):
        P.bias_pmi_table(groups, {"c": (A,)}, sents)
    # a group with no seed in the corpus: NaN with a logged warning (policy drop)
    with caplog.at_level(logging.WARNING):
        t = P.bias_pmi_groups({**groups, "ghost": ["zzz", "pantalones cortos"]}, A, B, sents)
    assert math.isnan(t.loc["ghost", "pmi"]) and t.loc["ghost", "note"] == "no seed in the corpus"
    assert "ghost" in caplog.text


def test_multiword_seed_is_oov(caplog):
    sents = [["pantalones", "cortos", "mujer"], ["hombre", "camisa"], ["mujer", "camisa"]]
    with caplog.at_level(logging.INFO):
        r = P.bias_pmi(["camisa", "pantalones cortos"], ["hombre"], ["mujer"], sents)
    assert r.details["missing"] == ["pantalones cortos"]
    assert "multi-word" in caplog.text
    assert (r.f_AX, r.f_AnX, r.f_BX, r.f_BnX) == (1, 0, 1, 1)


def test_seeds_are_normalised():
    sents = [["él", "niña"], ["ella", "niño"]]
    decomposed = "e\u0301l"  # 'él' with a combining accent, upper-cased below
    r = P.bias_pmi(["NIÑA"], [decomposed.upper()], ["ella"], sents, zero="haldane")
    assert r.f_AX == 1 and r.f_BX == 0


# ----------------------------------------------------------------------------- the E^PMI test


def test_pmi_test_matches_statsmodels_and_drops_nan(caplog):
    rng = np.random.default_rng(3)
    values = rng.normal(0.2, 0.5, size=30)
    values[[4, 17]] = np.nan
    s = pd.Series(values, index=[f"X{i}" for i in range(30)])
    with caplog.at_level(logging.WARNING):
        res = P.pmi_test(s)
    z, p = ztest(values[np.isfinite(values)], value=0.0, alternative="two-sided")
    assert res.statistic == pytest.approx(z) and res.p_value == pytest.approx(p)
    assert res.n == 28 and res.details["dropped"] == ["X4", "X17"] and res.details["n_groups"] == 30
    assert "X17" in caplog.text
    df = pd.DataFrame({"group": s.index, "pmi": values})
    assert P.pmi_test(df).p_value == pytest.approx(p)
    with pytest.raises(ValueError, match="at least 2"):
        P.pmi_test([0.3, np.nan])
    with pytest.raises(ValueError, match="'pmi' column"):
        P.pmi_test(pd.DataFrame({"x": [1.0, 2.0]}))


# ----------------------------------------------------------------------------- frequency baseline


def test_frequency_baseline_by_hand():
    sents = [
        ["male", "nurse"],
        ["male", "man", "nurse"],  # two A words with one X word: 2 pairs, 1 sentence
        ["female", "nurse"],
        ["female", "nurse", "doctor"],
        ["female", "doctor"],
        ["male", "doctor"],
        ["female", "woman", "nurse"],
        ["female", "nurse"],
    ]
    X, A, B = ["nurse"], ["male", "man"], ["female", "woman"]
    fb = P.frequency_baseline(X, A, B, sents)
    assert (fb.f_A, fb.f_B) == (3, 5)  # pairs: (male,nurse)x2 + (man,nurse); (female,nurse)x4 + (woman,nurse)
    assert fb.f_A == naive_pairs(sents, X, A) and fb.f_B == naive_pairs(sents, X, B)
    assert fb.prop == pytest.approx(3 / 8)
    z, p = proportions_ztest(3, 8, value=0.5)
    assert fb.ztest.statistic == pytest.approx(z) and fb.ztest.p_value == pytest.approx(p)
    assert fb.binomial.p_value == pytest.approx(sps.binomtest(3, 8, 0.5).pvalue)
    fs = P.frequency_baseline(X, A, B, sents, unit="sentence")
    assert (fs.f_A, fs.f_B) == (2, 4)
    # single words reduce to eq. 3.2
    f1 = P.frequency_baseline(["nurse"], ["male"], ["female"], sents)
    assert (f1.f_A, f1.f_B) == (2, 4)
    assert f1.to_dict()["prop"] == pytest.approx(1 / 3)


def test_frequency_baseline_edge_cases():
    sents = [["a", "x"], ["a", "x"], ["b", "y"]]
    fb = P.frequency_baseline(["x"], ["a"], ["b"], sents)
    assert fb.prop == 1.0 and fb.ztest is None and fb.binomial.p_value == pytest.approx(0.5)
    with pytest.raises(ValueError, match="never co-occurs"):
        P.frequency_baseline(["y"], ["a"], ["x"], [["a", "b"], ["y"], ["x"]])
    with pytest.raises(ValueError, match="unit"):
        P.frequency_baseline(["x"], ["a"], ["b"], sents, unit="doc")


# ----------------------------------------------------------------------------- summary()


def test_bias_pmi_summary_states_the_value_the_ratio_the_counts_and_the_wald_test(toy):
    sents, groups, chars = toy
    A, B = chars["c1"]
    r = P.bias_pmi(groups["g3"], A, B, sents, confidence=0.95)
    text = r.summary()
    assert f"BIAS_PMI (proportion) = {r.value:.4f}" in text
    assert f"is {math.exp(r.value):.3f} times that for group B" in text
    assert (
        f"A with X {r.f_AX:,}, A without X {r.f_AnX:,}, B with X {r.f_BX:,}, B without X {r.f_BnX:,}" in text
    )
    assert f"95% confidence interval = [{r.ci[0]:.4f}, {r.ci[1]:.4f}]" in text
    p = 2 * sps.norm.sf(abs(r.value / r.se))
    assert f"z = {r.value / r.se:.3f}" in text
    verdict = "evidence that X co-occurs unequally" if p < 0.05 else "compatible with X co-occurring equally"
    assert verdict in text
    # the Wald p-value agrees with the interval: 0 is outside the 95% interval exactly when p < 0.05
    assert (p < 0.05) == (not r.ci[0] <= 0 <= r.ci[1])
    undefined = P.pmi_from_counts(0, 5, 3, 4)
    assert "undefined" in undefined.summary() and "no test of a single value" in undefined.summary()


def test_frequency_baseline_summary_states_prop_the_counts_and_both_tests():
    sents = [["male", "nurse"], ["female", "nurse"], ["female", "nurse", "doctor"], ["female", "nurse"]]
    fb = P.frequency_baseline(["nurse"], ["male"], ["female"], sents)
    text = fb.summary(alpha=0.1)
    assert "prop = 0.2500" in text and "1 are with A and 3 with B" in text
    assert "exact binomial test" in text and "one-sample z test for a proportion" in text
    assert "alpha = 0.1" in text and fb.binomial.summary(0.1).splitlines()[-1].strip() in text
