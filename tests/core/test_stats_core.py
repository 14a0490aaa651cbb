"""The core tests of biaskit.core.stats checked against independent hand computations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from biaskit.core import stats


@pytest.fixture
def sample() -> np.ndarray:
    return np.random.default_rng(1).normal(0.3, 1.0, size=40)


def test_z_test_mean_matches_hand_formula(sample):
    z_hand = (sample.mean() - 0.0) / (sample.std(ddof=1) / math.sqrt(sample.size))
    res = stats.z_test_mean(sample, 0.0, "greater")
    assert res.statistic == pytest.approx(z_hand, rel=1e-12)
    assert res.p_value == pytest.approx(sps.norm.sf(z_hand), rel=1e-10)
    two = stats.z_test_mean(sample, 0.0, "two-sided")
    assert two.p_value == pytest.approx(2 * sps.norm.sf(abs(z_hand)), rel=1e-10)
    less = stats.z_test_mean(sample, 0.0, "less")
    assert less.p_value == pytest.approx(sps.norm.cdf(z_hand), rel=1e-10)


def test_t_test_mean_matches_hand_formula(sample):
    t_hand = (sample.mean() - 0.1) / (sample.std(ddof=1) / math.sqrt(sample.size))
    res = stats.t_test_mean(sample, 0.1, "two-sided")
    assert res.statistic == pytest.approx(t_hand, rel=1e-12)
    assert res.p_value == pytest.approx(2 * sps.t.sf(abs(t_hand), df=sample.size - 1), rel=1e-10)
    half = sps.t.ppf(0.975, sample.size - 1) * sample.std(ddof=1) / math.sqrt(sample.size)
    assert res.ci == pytest.approx((sample.mean() - half, sample.mean() + half), rel=1e-10)


def test_proportion_ztest_hand_formula():
    # 60 of 100 successes, p0 = 0.5; variance from the sample proportion (statsmodels default)
    phat = 0.6
    z_hand = (phat - 0.5) / math.sqrt(phat * (1 - phat) / 100)
    res = stats.proportion_ztest(60, 100, 0.5, "two-sided")
    assert res.statistic == pytest.approx(z_hand, rel=1e-12)
    assert res.p_value == pytest.approx(2 * sps.norm.sf(z_hand), rel=1e-10)
    assert res.estimate == pytest.approx(0.6)
    one = stats.proportion_ztest(60, 100, 0.5, "greater")
    assert one.p_value == pytest.approx(sps.norm.sf(z_hand), rel=1e-10)


def test_proportion_bad_input():
    with pytest.raises(ValueError):
        stats.proportion_ztest(5, 0)
    with pytest.raises(ValueError):
        stats.proportion_ztest(11, 10)
    with pytest.raises(ValueError, match="binomial_test"):
        stats.proportion_ztest(10, 10)
    with pytest.raises(ValueError, match="alternative"):
        stats.proportion_ztest(5, 10, alternative="bigger")  # type: ignore[arg-type]


def test_binomial_exact_against_pmf_sum():
    # P(X >= 8 | n = 10, p = .5) by summing the pmf by hand
    p_hand = sum(math.comb(10, k) for k in range(8, 11)) / 2**10
    res = stats.binomial_test(8, 10, 0.5, "greater")
    assert res.p_value == pytest.approx(p_hand, rel=1e-12)
    assert res.ci[0] < 0.8 < res.ci[1]


def test_bootstrap_ci_covers_mean(sample):
    res = stats.bootstrap_ci(sample, n_resamples=2000, random_state=0)
    assert res.p_value is None
    assert res.ci[0] < sample.mean() < res.ci[1]
    # BCa interval of the mean is close to the t interval for a normal sample
    half = 1.96 * sample.std(ddof=1) / math.sqrt(sample.size)
    assert res.ci[1] - res.ci[0] == pytest.approx(2 * half, rel=0.15)


def test_correlation_pearson_and_spearman():
    x = np.arange(10.0)
    y = x**3
    pear = stats.correlation(x, y, "pearson")
    r_hand = np.corrcoef(x, y)[0, 1]
    assert pear.statistic == pytest.approx(r_hand, rel=1e-12)
    spear = stats.correlation(x, y, "spearman")
    assert spear.statistic == pytest.approx(1.0)
    with pytest.raises(ValueError, match="same length"):
        stats.correlation(x, y[:-1])


def test_sample_validation():
    with pytest.raises(ValueError, match="at least 2"):
        stats.z_test_mean([1.0])
    with pytest.raises(ValueError, match="non-finite"):
        stats.t_test_mean([1.0, np.nan, 2.0])
