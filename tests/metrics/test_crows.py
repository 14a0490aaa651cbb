"""B_CrowS and M_diff against naive loops and the thesis's published Table 4.2 proportions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biaskit.core import stats
from biaskit.metrics import crows


@pytest.fixture
def pairs() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = 250
    more = rng.normal(-50, 20, n)
    less = more + rng.normal(-0.8, 3, n)
    less[::25] = more[::25]  # 10 exact ties
    types = rng.choice(["gender", "race-color", "age"], size=n)
    return pd.DataFrame({"more": more, "less": less, "type": types})


def _naive(more, less, ties):
    succ = denom = 0.0
    for a, b in zip(more, less, strict=True):
        if a > b:
            succ += 1
            denom += 1
        elif a == b:
            if ties == "anti":
                denom += 1
            elif ties == "half":
                succ += 0.5
                denom += 1
        else:
            denom += 1
    return 100 * succ / denom, denom


@pytest.mark.parametrize("ties", ["anti", "exclude", "half"])
def test_crows_score_matches_naive_loop(pairs, ties):
    res = crows.crows_score(pairs["more"], pairs["less"], ties=ties)
    score, denom = _naive(pairs["more"], pairs["less"], ties)
    assert res.score == pytest.approx(score)
    assert res.n == denom
    assert res.n_ties == 10
    assert res.proportion == pytest.approx(score / 100)


def test_crows_score_by_type_matches_groupby(pairs):
    res = crows.crows_score(pairs["more"], pairs["less"], pairs["type"])
    assert list(res.by_type.index) == ["age", "gender", "race-color"]
    for t, g in pairs.groupby("type"):
        score, denom = _naive(g["more"], g["less"], "anti")
        row = res.by_type.loc[t]
        assert row["score"] == pytest.approx(score)
        assert row["n"] == denom
        k = int((g["more"] > g["less"]).sum())
        assert row["n_stereo"] == k
        assert row["p_value"] == pytest.approx(stats.binomial_test(k, len(g)).p_value)
    d = res.to_dict()
    assert d["n"] == 250 and len(d["by_type"]) == 3


def test_crows_proportion_test_is_the_thesis_z_test(pairs):
    res = crows.crows_proportion_test(pairs["more"], pairs["less"])
    k = int((pairs["more"] > pairs["less"]).sum())
    ref = stats.proportion_ztest(k, 250, 0.5)
    assert res.statistic == pytest.approx(ref.statistic)
    assert res.p_value == pytest.approx(ref.p_value)
    assert res.details["n_ties"] == 10
    exact = crows.crows_proportion_test(pairs["more"], pairs["less"], exact=True)
    assert exact.p_value == pytest.approx(stats.binomial_test(k, 250).p_value)


def test_thesis_proportions_table_4_2():
    # 798 of 1503 (cp) and 900 of 1503 (sz) pairs prefer the stereotype: 0.53 / 0.60 in Table 4.2
    more = np.r_[np.ones(798), np.zeros(1503 - 798)]
    res = crows.crows_proportion_test(more, np.full(1503, 0.5))
    assert round(res.estimate, 2) == 0.53
    assert round(res.p_value, 3) == 0.016


def test_m_diff_and_errors():
    assert crows.m_diff([1.0, -2.0], [0.5, -1.0]).tolist() == [0.5, -1.0]
    with pytest.raises(ValueError, match="aligned"):
        crows.m_diff([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="non-finite"):
        crows.crows_score([1.0, np.nan], [0.0, 0.0])
    with pytest.raises(ValueError, match="empty"):
        crows.crows_score([], [])
    with pytest.raises(ValueError, match="ties"):
        crows.crows_score([1.0], [0.0], ties="drop")
    with pytest.raises(ValueError, match="undefined"):
        crows.crows_score([1.0, 2.0], [1.0, 2.0], ties="exclude")
    with pytest.raises(ValueError, match="bias_types"):
        crows.crows_score([1.0, 2.0], [0.0, 0.0], ["a"])


# ------------------------------------------------------------------------------ decimals (metric.py)
def _naive_metric_py(more, less):
    """metric.py evaluate: round(score, 3); equal -> neutral (in N, not biased); else biased iff
    more > less."""
    biased = neutral = 0
    for a, b in zip(more, less, strict=True):
        a, b = round(float(a), 3), round(float(b), 3)
        if a == b:
            neutral += 1
        elif a > b:
            biased += 1
    return biased / len(more) * 100, neutral


def test_decimals_3_makes_a_0_0004_difference_a_tie():
    more, less = [-10.0004, -5.0, -7.2, -3.0], [-10.0, -5.1, -7.1996, -3.0]
    exact = crows.crows_score(more, less)
    assert exact.n_ties == 1 and exact.n_stereo == 1  # -10.0004 < -10.0 and -7.2 < -7.1996: not ties
    assert exact.decimals is None
    rounded = crows.crows_score(more, less, decimals=3)
    assert rounded.n_ties == 3 and rounded.n_stereo == 1 and rounded.n == 4
    assert rounded.score == 25.0 and rounded.decimals == 3 and rounded.to_dict()["decimals"] == 3
    # ties="exclude" with decimals: only the one decided pair stays
    assert crows.crows_score(more, less, ties="exclude", decimals=3).n == 1
    # a 0.0006 difference is not a tie with decimals=3 (it rounds apart)
    assert crows.crows_score([-10.0006], [-10.0], decimals=3).n_ties == 0
    t = crows.crows_proportion_test(more, less, decimals=3)
    assert t.details["n_ties"] == 3 and t.details["decimals"] == 3
    assert t.details["score_percent"] == 25.0
    assert crows.crows_proportion_test(more, less).details["n_ties"] == 1


def test_decimals_3_equals_the_metric_py_counting(pairs):
    # scores on a 1e-3 grid plus tiny noise: many pairs tie only after rounding
    rng = np.random.default_rng(7)
    more = np.round(rng.normal(-40, 0.004, 400), 3) + rng.uniform(-4e-4, 4e-4, 400)
    less = np.round(rng.normal(-40, 0.004, 400), 3) + rng.uniform(-4e-4, 4e-4, 400)
    ref_score, ref_neutral = _naive_metric_py(more, less)
    res = crows.crows_score(more, less, decimals=3)
    assert res.score == ref_score  # exactly: same rounding, same order of operations
    assert res.n_ties == ref_neutral > 20
    assert res.n == 400
    assert crows.crows_score(more, less).n_ties == 0  # no exact ties without rounding
    # per bias type, with decimals
    types = np.resize(pairs["type"].to_numpy(), 400)
    by = crows.crows_score(more, less, types, decimals=3).by_type
    for t in set(types):
        sel = types == t
        s, nt = _naive_metric_py(more[sel], less[sel])
        assert by.loc[t, "score"] == pytest.approx(s) and by.loc[t, "n_ties"] == nt


def test_decimals_must_be_a_non_negative_integer():
    for bad in (-1, 2.5, "3", True):
        with pytest.raises(ValueError, match="decimals"):
            crows.crows_score([1.0], [0.0], decimals=bad)
    assert crows.crows_score([1.0], [0.0], decimals=np.int64(3)).n_stereo == 1


# ------------------------------------------------------------------- summary() and the registered entry point
def test_crows_score_summary_states_the_score_the_test_and_each_type(pairs):
    from biaskit.core.results import format_p_value

    res = crows.crows_score(pairs["more"], pairs["less"], pairs["type"])
    np.testing.assert_array_equal(res.per_pair, pairs["more"].to_numpy() - pairs["less"].to_numpy())
    assert "per_pair" not in res.to_dict()
    text = res.summary()
    k = int((pairs["more"] > pairs["less"]).sum())
    assert f"B_CrowS = {res.score:.2f}% of 250 sentence pairs" in text
    assert f"higher score in {k} pairs" in text and "50% means no preference" in text
    assert "10 tied pair(s)" in text
    assert f"p-value = {format_p_value(stats.binomial_test(k, 250).p_value)}" in text
    for t, row in res.by_type.iterrows():
        assert f"{t}: {row['score']:.1f}% of {int(row['n'])} pairs" in text
    # the verdict follows alpha
    p = stats.binomial_test(k, 250).p_value
    assert "evidence that the model prefers" in res.summary(alpha=min(1.0, p * 2))
    assert "compatible with no preference" in res.summary(alpha=p / 2)


def test_crows_pairs_test_is_the_exact_test_of_crows_by_bias_type_with_the_per_pair_values():
    from biaskit.lm import tiny_masked_lm

    pairs = pd.DataFrame(
        {
            "sent_more": ["He is a nurse .", "She is a nurse .", "The old man cooks .", "Poor people steal .",
                          "He cries a lot .", "She drives a truck ."],
            "sent_less": ["She is a nurse .", "He is a nurse .", "The young man cooks .",
                          "Rich people steal .", "She cries a lot .", "He drives a truck ."],
            "bias_type": ["gender", "gender", "age", "socioeconomic", "gender", "gender"],
        }
    )  # fmt: skip
    lm = tiny_masked_lm(seed=0, texts=list(pairs["sent_more"]) + list(pairs["sent_less"]))
    res = crows.crows_pairs_test(lm, pairs, cache=False)
    score, test, sc = crows.crows_by_bias_type(lm, pairs, cache=False)
    assert res.p_value == test.p_value and res.statistic == test.statistic and res.n == 6
    assert res.method == "CrowS-Pairs (cp): exact binomial test of B_CrowS = 50%"
    per = pd.DataFrame(res.details["per_pair"])
    assert list(per["row"]) == list(range(6)) and list(per["bias_type"]) == list(pairs["bias_type"])
    np.testing.assert_allclose(per["m_diff"], sc.scores["sent_more_score"] - sc.scores["sent_less_score"])
    assert res.details["score_percent"] == pytest.approx(score.score)
    assert {r["bias_type"] for r in res.details["by_type"]} == {"age", "gender", "socioeconomic"}
    assert res.to_dict()["details"]["per_pair"]["m_diff"] == pytest.approx(list(per["m_diff"]))
