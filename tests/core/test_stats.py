"""The chapter-4 additions to biaskit.core.stats, each checked against an independent computation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from biaskit.core import stats


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(7)


# ----------------------------------------------------------------------- two proportions
def test_two_proportion_ztest_matches_pooled_formula():
    x1, n1, x2, n2 = 133, 170, 98, 170
    p1, p2, pooled = x1 / n1, x2 / n2, (x1 + x2) / (n1 + n2)
    z = (p1 - p2) / math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    res = stats.two_proportion_ztest(x1, n1, x2, n2)
    assert res.statistic == pytest.approx(z, rel=1e-12)
    assert res.p_value == pytest.approx(2 * sps.norm.sf(abs(z)), rel=1e-10)
    assert res.estimate == pytest.approx(p1 - p2)
    assert res.effect_size == pytest.approx(2 * math.asin(math.sqrt(p1)) - 2 * math.asin(math.sqrt(p2)))
    lo, hi = res.ci
    se = math.sqrt(p1 * (1 - p1) / n1 + p2 * (1 - p2) / n2)
    assert lo == pytest.approx(p1 - p2 - 1.959963984540054 * se, rel=1e-6)
    assert hi == pytest.approx(p1 - p2 + 1.959963984540054 * se, rel=1e-6)
    # one-sided alternatives
    assert stats.two_proportion_ztest(x1, n1, x2, n2, "greater").p_value == pytest.approx(sps.norm.sf(z))
    assert stats.two_proportion_ztest(x1, n1, x2, n2, "less").p_value == pytest.approx(sps.norm.cdf(z))


def test_two_proportion_ztest_rejects_bad_input():
    with pytest.raises(ValueError, match="count1"):
        stats.two_proportion_ztest(11, 10, 3, 10)
    with pytest.raises(ValueError, match="pooled"):
        stats.two_proportion_ztest(0, 10, 0, 10)
    with pytest.raises(ValueError, match="alternative"):
        stats.two_proportion_ztest(3, 10, 4, 10, "bigger")


# ----------------------------------------------------------------------- Shapiro-Wilk
def test_shapiro_wilk_matches_scipy(rng):
    x = rng.gamma(2.0, size=300)
    res = stats.shapiro_wilk(x)
    ref = sps.shapiro(x)
    assert res.statistic == pytest.approx(ref.statistic)
    assert res.p_value == pytest.approx(ref.pvalue)
    assert res.reject()  # a gamma(2) sample of 300 is clearly not normal
    assert not stats.shapiro_wilk(rng.normal(size=300)).reject(0.001)


def test_shapiro_wilk_errors():
    with pytest.raises(ValueError, match="constant"):
        stats.shapiro_wilk([1.0] * 10)
    with pytest.raises(ValueError, match="non-finite"):
        stats.shapiro_wilk([1.0, np.nan, 2.0, 3.0])


# ----------------------------------------------------------------------- KS tests
def _ks_d_hand(x: np.ndarray, cdf) -> float:
    """Naive one-sample KS statistic: largest gap between the ECDF steps and the CDF."""
    xs = np.sort(x)
    n = xs.size
    f = cdf(xs)
    i = np.arange(n)
    return float(max(np.max((i + 1) / n - f), np.max(f - i / n)))


def test_ks_test_with_known_params_matches_hand_statistic(rng):
    x = rng.normal(1.0, 2.0, size=200)
    res = stats.ks_test(x, "norm", params=(0.0, 2.0))
    d = _ks_d_hand(x, lambda v: sps.norm.cdf(v, 0.0, 2.0))
    assert res.statistic == pytest.approx(d, rel=1e-12)
    assert res.p_value == pytest.approx(sps.kstest(x, "norm", args=(0.0, 2.0)).pvalue)
    assert res.details["params_fitted_on_same_data"] is False
    assert res.reject()  # wrong mean


def test_ks_test_fits_gev_by_maximum_likelihood(rng):
    x = sps.genextreme.rvs(0.3, loc=-60, scale=30, size=800, random_state=rng)
    res = stats.ks_test(x, "genextreme")
    c, loc, scale = res.details["params"]
    ref = sps.genextreme.fit(x)
    assert (c, loc, scale) == pytest.approx(ref, rel=1e-6)
    assert res.details["param_names"] == ["c", "loc", "scale"]
    assert res.statistic == pytest.approx(_ks_d_hand(x, lambda v: sps.genextreme.cdf(v, c, loc, scale)))
    assert "optimistic" in res.method


def test_ks_test_parametric_bootstrap_agrees_with_naive_monte_carlo(rng):
    # Lilliefors situation: normal fitted on the data.  Independent Monte Carlo reference.
    x = rng.standard_t(4, size=150)
    res = stats.ks_test(x, "norm", n_mc_samples=199, random_state=3)
    d_obs = res.statistic
    mc = np.random.default_rng(11)
    mu, sd = x.mean(), x.std()
    null = []
    for _ in range(199):
        y = mc.normal(mu, sd, size=x.size)
        m, s = y.mean(), y.std()
        null.append(_ks_d_hand(y, lambda v, m=m, s=s: sps.norm.cdf(v, m, s)))
    p_ref = (1 + np.sum(np.array(null) >= d_obs)) / 200
    assert res.p_value == pytest.approx(p_ref, abs=0.08)
    assert res.details["p_value_naive"] > res.p_value  # fitted-parameter p-value is optimistic
    assert "bootstrap" in res.method


def test_ks_test_bootstrap_with_known_params_matches_exact_ks(rng):
    # nothing estimated: the Monte Carlo p-value estimates the exact KS p-value
    x = rng.normal(0.15, 1.0, size=100)
    res = stats.ks_test(x, "norm", params=(0.0, 1.0), n_mc_samples=999, random_state=1)
    assert res.p_value == pytest.approx(res.details["p_value_naive"], abs=0.03)
    assert res.details["p_value_naive"] == pytest.approx(sps.kstest(x, "norm").pvalue)


def test_ks_test_errors():
    with pytest.raises(ValueError, match="not a continuous distribution"):
        stats.ks_test([1.0, 2.0, 3.0], "not_a_distribution")
    with pytest.raises(TypeError):
        stats.ks_test([1.0, 2.0, 3.0], 42)


def test_ks_2samp_matches_hand_statistic(rng):
    x = rng.normal(size=120)
    y = rng.normal(0.5, size=90)
    res = stats.ks_2samp_test(x, y)
    grid = np.concatenate([x, y])
    d = max(abs(np.mean(x <= t) - np.mean(y <= t)) for t in grid)
    assert res.statistic == pytest.approx(d)
    assert res.p_value == pytest.approx(sps.ks_2samp(x, y).pvalue)
    assert res.details["n_x"] == 120 and res.details["n_y"] == 90


# ----------------------------------------------------------------------- distribution fitting
def test_fit_distributions_criteria_by_hand(rng):
    x = rng.normal(5.0, 2.0, size=400)
    table = stats.fit_distributions(x, ["norm", "gumbel_r", "logistic"], sort_by="aic")
    assert list(table.columns[:3]) == ["distribution", "params", "n_params"]
    row = table.set_index("distribution").loc["norm"]
    mu, sd = x.mean(), x.std()  # MLE of the normal
    assert row["params"] == pytest.approx((mu, sd), rel=1e-6)
    ll = np.sum(sps.norm.logpdf(x, mu, sd))
    assert row["loglik"] == pytest.approx(ll, rel=1e-8)
    assert row["aic"] == pytest.approx(2 * 2 - 2 * ll, rel=1e-8)
    assert row["bic"] == pytest.approx(2 * math.log(400) - 2 * ll, rel=1e-8)
    h, e = np.histogram(x, bins=100, density=True)
    c = (e[:-1] + e[1:]) / 2
    assert row["sumsquare_error"] == pytest.approx(np.sum((h - sps.norm.pdf(c, mu, sd)) ** 2), rel=1e-8)
    assert row["ks_statistic"] == pytest.approx(sps.kstest(x, "norm", args=(mu, sd)).statistic)
    assert table["aic"].is_monotonic_increasing
    assert table.loc[0, "distribution"] in ("norm", "logistic")  # a normal sample: not gumbel
    by_ks = stats.fit_distributions(x, ["norm", "gumbel_r"])
    assert by_ks["ks_statistic"].is_monotonic_increasing


def test_fit_distributions_keeps_failed_candidates(rng, monkeypatch):
    x = rng.normal(size=50)

    def boom(*a, **k):
        raise RuntimeError("no convergence")

    monkeypatch.setattr(sps.gumbel_l, "fit", boom)
    table = stats.fit_distributions(x, ["norm", "gumbel_l"])
    failed = table.set_index("distribution").loc["gumbel_l"]
    assert "no convergence" in failed["error"]
    assert np.isnan(failed["aic"])
    assert table.iloc[-1]["distribution"] == "gumbel_l"  # NaN sorts last
    with pytest.raises(ValueError, match="sort_by"):
        stats.fit_distributions(x, ["norm"], sort_by="r2")


# ----------------------------------------------------------------------- KL divergence score
def test_gaussian_kl_matches_torch_and_numerical_integration():
    torch = pytest.importorskip("torch")
    from torch.distributions import Normal, kl_divergence

    for m1, s1, m2, s2 in [(0.0, 1.0, 1.0, 2.0), (-50.0, 36.5, -50.2, 36.6), (3.0, 0.5, 3.0, 0.5)]:
        ref = kl_divergence(
            Normal(torch.tensor(m1, dtype=torch.float64), torch.tensor(s1, dtype=torch.float64)),
            Normal(torch.tensor(m2, dtype=torch.float64), torch.tensor(s2, dtype=torch.float64)),
        ).item()
        assert stats.gaussian_kl(m1, s1, m2, s2) == pytest.approx(ref, abs=1e-12)
    grid = np.linspace(-15, 15, 200001)
    p, q = sps.norm.pdf(grid, 0, 1), sps.norm.pdf(grid, 1, 2)
    integral = np.sum(p * np.log(p / q)) * (grid[1] - grid[0])
    assert stats.gaussian_kl(0, 1, 1, 2) == pytest.approx(integral, rel=1e-6)
    with pytest.raises(ValueError):
        stats.gaussian_kl(0, 0, 1, 1)


def test_kl_score_hand_formula_and_equal_variance_property(rng):
    ster = rng.normal(-60, 30, size=500)
    anster = rng.normal(-58, 36, size=500)
    res = stats.kl_divergence_score(ster, anster)
    m1, s1, m2, s2 = ster.mean(), ster.std(ddof=1), anster.mean(), anster.std(ddof=1)
    kl12 = math.log(s2 / s1) + (s1**2 + (m1 - m2) ** 2) / (2 * s2**2) - 0.5
    kl21 = math.log(s1 / s2) + (s2**2 + (m1 - m2) ** 2) / (2 * s1**2) - 0.5
    assert res.statistic == pytest.approx(100 * max(kl12, kl21) / (kl12 + kl21), rel=1e-12)
    assert res.p_value is None and res.null_value == 50.0
    # equal spreads: exactly 50 however far apart the means are
    assert stats.kl_divergence_score(ster, ster + 25.0).statistic == pytest.approx(50.0, abs=1e-9)
    assert stats.kl_divergence_score(ster, ster).statistic == 50.0  # identical: defined as 50
    # large mean shift: tends to 100 max(var) / (sum of var)
    far = stats.kl_divergence_score(ster, anster + 1e6).statistic
    assert far == pytest.approx(100 * max(s1**2, s2**2) / (s1**2 + s2**2), rel=1e-3)


def test_kl_score_groups_are_size_weighted(rng):
    ster = np.concatenate([rng.normal(0, 1, 30), rng.normal(0, 1, 70)])
    anster = np.concatenate([rng.normal(0, 2, 30), rng.normal(1, 1.1, 70)])
    groups = np.array(["a"] * 30 + ["b"] * 70)
    res = stats.kl_divergence_score(ster, anster, groups=groups)
    sa = stats.kl_divergence_score(ster[:30], anster[:30]).statistic
    sb = stats.kl_divergence_score(ster[30:], anster[30:]).statistic
    assert res.statistic == pytest.approx(0.3 * sa + 0.7 * sb, rel=1e-12)
    assert [g["group"] for g in res.details["by_group"]] == ["a", "b"]
    with pytest.raises(ValueError, match="fewer than 2"):
        stats.kl_divergence_score(ster, anster, groups=np.array(["a"] * 99 + ["c"]))
