"""B_CrowS and M_diff against naive loops and the thesis's published Table 4.2 proportions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biaskit import stats
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
