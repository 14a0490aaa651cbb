"""The robustness method (seed 000 section 4.3) against the thesis's own code, ported as naive loops."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.proportion import proportions_ztest
from statsmodels.stats.weightstats import ztest

from biaskit.metrics import robustness as rob


@pytest.fixture
def diffs():
    rng = np.random.default_rng(5)
    n = 170
    d_or = rng.normal(0.2, 4, n)
    d_par = d_or + rng.normal(0, 2.5, n)
    d_ran = rng.normal(0, 5, n)
    d_or[[3, 9]] = 0.0
    d_par[[3, 50]] = 0.0
    d_par[9] = -1.0  # tie in the original, negative paraphrase: agree only if ties count as negative
    d_par[7] = 3.5  # on the interval boundary
    return d_or, d_par, d_ran


def _thesis_mbias(value, inf_limit, sup_limit):
    """biashandler.py ``mbias`` (thesis code), verbatim logic."""
    if value < inf_limit:
        return -1
    elif inf_limit <= value <= sup_limit:
        return 0
    else:
        return 1


def test_m_bias_rules():
    d = np.array([-4.0, -3.5, 0.0, 3.5, 3.6])
    assert rob.m_bias_interval(d, -3.5, 3.5).tolist() == [-1, 0, 0, 0, 1]
    assert rob.m_bias_sign(d).tolist() == [-1, -1, -1, 1, 1]  # thesis: M_bias = M_diff > 0
    assert rob.m_bias_sign(d, ties="zero").tolist() == [-1, -1, 0, 1, 1]
    with pytest.raises(ValueError):
        rob.m_bias_interval(d, 1.0, -1.0)
    with pytest.raises(ValueError):
        rob.m_bias_sign(d, ties="ignore")


def test_agreement_matches_thesis_code(diffs):
    d_or, d_par, _ = diffs
    k, n = rob.agreement(d_or, d_par, method="interval", lb=-3.5, ub=3.5)
    naive = sum(
        _thesis_mbias(a, -3.5, 3.5) == _thesis_mbias(b, -3.5, 3.5) for a, b in zip(d_or, d_par, strict=True)
    )
    assert (k, n) == (naive, 170)
    k_sign, _ = rob.agreement(d_or, d_par, method="sign")
    assert k_sign == sum((a > 0) == (b > 0) for a, b in zip(d_or, d_par, strict=True))
    k_zero, _ = rob.agreement(d_or, d_par, method="sign", ties="zero")
    assert k_zero == sum(np.sign(a) == np.sign(b) for a, b in zip(d_or, d_par, strict=True))
    assert k_zero < k_sign  # the tie at position 9 agrees only under the thesis's ties=negative
    with pytest.raises(ValueError, match="lb and ub"):
        rob.agreement(d_or, d_par, method="interval")
    with pytest.raises(ValueError, match="aligned"):
        rob.agreement(d_or, d_par[:-1])


def test_agreement_test_is_one_sided_proportion_ztest(diffs):
    d_or, d_par, _ = diffs
    res = rob.agreement_test(d_or, d_par, pr_rob=0.8, method="sign")
    k, n = rob.agreement(d_or, d_par, method="sign")
    z, p = proportions_ztest(k, n, 0.8, alternative="smaller")
    assert res.statistic == pytest.approx(z)
    assert res.p_value == pytest.approx(p)
    assert res.estimate == pytest.approx(k / n)
    assert res.alternative == "less"
    assert res.details["agreeing"] == k
    # all in agreement: the z test is undefined, an exact binomial test is used
    allin = rob.agreement_test(d_or, d_or, pr_rob=0.8)
    assert allin.p_value == pytest.approx(sps.binomtest(170, 170, 0.8, alternative="less").pvalue)
    with pytest.raises(ValueError, match="pr_rob"):
        rob.agreement_test(d_or, d_par, pr_rob=1.0)


def test_compare_agreements_two_sample_z(diffs):
    d_or, d_par, d_ran = diffs
    res = rob.compare_agreements(d_or, d_par, d_ran)
    k1, _ = rob.agreement(d_or, d_par, method="interval", lb=-3.5, ub=3.5)
    k2, _ = rob.agreement(d_or, d_ran, method="interval", lb=-3.5, ub=3.5)
    z, p = proportions_ztest([k1, k2], [170, 170])
    assert res.statistic == pytest.approx(z)
    assert res.p_value == pytest.approx(p)
    assert res.details["l1"] == pytest.approx(k1 / 170)
    assert res.details["l1_prime"] == pytest.approx(k2 / 170)


def test_paraphrase_difference_tests(diffs):
    d_or, d_par, _ = diffs
    out = rob.paraphrase_difference_tests(d_or, d_par)
    z, p = ztest(d_or - d_par, value=0.0)
    assert out["z_test"].statistic == pytest.approx(z)
    assert out["z_test"].p_value == pytest.approx(p)
    ks = sps.ks_2samp(d_or, d_par)
    assert out["ks_test"].statistic == pytest.approx(ks.statistic)
    assert out["ks_test"].p_value == pytest.approx(ks.pvalue)


def test_robustness_summary_layout(diffs):
    t = rob.robustness_summary(*diffs)
    assert len(t) == 4
    assert set(t["rule"]) == {"sign", "interval [-3.5, 3.5]"}
    assert t["l1"].between(0, 1).all()
    assert (t["reject_h0"] == (t["p_value"] < 0.05)).all()
