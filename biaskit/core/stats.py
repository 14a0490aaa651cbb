"""Statistical tests used across the studies, all returning :class:`~biaskit.core.results.TestResult`.

The functions wrap well-tested implementations (scipy, statsmodels) and add
the thesis's conventions: hypotheses stated in words, the thesis's choice of
alternative, and a uniform result object.  Sources are given per function;
"seed 000" is Maddalozzo (2023), the Spanish thesis at the core of biaskit.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps
from statsmodels.stats import proportion as smp
from statsmodels.stats import weightstats as smw

from biaskit.core.results import Alternative, TestResult

__all__ = [
    "THESIS_CANDIDATES",
    "bootstrap_ci",
    "binomial_test",
    "correlation",
    "fit_distributions",
    "gaussian_kl",
    "kl_scores",
    "kl_divergence_score",
    "ks_2samp_test",
    "ks_test",
    "proportion_ztest",
    "shapiro_wilk",
    "t_test_mean",
    "two_proportion_ztest",
    "z_test_mean",
]

logger = logging.getLogger(__name__)

_SM_ALT = {"two-sided": "two-sided", "greater": "larger", "less": "smaller"}


def _as_sample(x: Sequence[float] | np.ndarray, *, name: str = "sample", min_n: int = 2) -> np.ndarray:
    arr = np.asarray(x, dtype=float).ravel()
    if arr.size < min_n:
        raise ValueError(f"{name} needs at least {min_n} values, got {arr.size}")
    if not np.all(np.isfinite(arr)):
        bad = np.flatnonzero(~np.isfinite(arr))[:10].tolist()
        raise ValueError(f"{name} contains non-finite values at positions {bad}")
    return arr


def _check_alternative(alternative: str) -> None:
    if alternative not in _SM_ALT:
        raise ValueError(f"alternative must be one of {sorted(_SM_ALT)}, got {alternative!r}")


def z_test_mean(
    x: Sequence[float] | np.ndarray,
    mu0: float = 0.0,
    alternative: Alternative = "two-sided",
    *,
    h0: str = "no bias (mean = mu0)",
    h1: str = "bias",
) -> TestResult:
    r"""Approximate (large-sample, CLT) z test on a mean.

    .. math:: z = \frac{\bar{x} - \mu_0}{s / \sqrt{n}}, \quad s \text{ with ddof}=1

    The p-value comes from the standard normal.  This is the "TLC" test of
    seed 000 sections 3.1.2 (PMI over n phenomena, H1: mu != 0) and 3.5.2
    (DirectBias over n = 30 neutral groups, H1: mu > 0); implemented with
    :func:`statsmodels.stats.weightstats.ztest`.
    """
    _check_alternative(alternative)
    arr = _as_sample(x)
    z, p = smw.ztest(arr, value=mu0, alternative=_SM_ALT[alternative])
    se = arr.std(ddof=1) / np.sqrt(arr.size)
    return TestResult(
        statistic=float(z),
        p_value=float(p),
        method="one-sample z test on the mean (CLT approximation)",
        alternative=alternative,
        n=int(arr.size),
        estimate=float(arr.mean()),
        null_value=float(mu0),
        effect_size=float((arr.mean() - mu0) / arr.std(ddof=1)) if arr.std(ddof=1) > 0 else None,
        h0=h0,
        h1=h1,
        details={"standard_error": float(se)},
    )


def t_test_mean(
    x: Sequence[float] | np.ndarray,
    mu0: float = 0.0,
    alternative: Alternative = "two-sided",
    *,
    confidence: float = 0.95,
    h0: str = "no bias (mean = mu0)",
    h1: str = "bias",
) -> TestResult:
    r"""Student's one-sample t test on a mean (exact under normality).

    .. math:: t = \frac{\bar{x} - \mu_0}{s / \sqrt{n}} \sim t_{n-1}

    Offered beside :func:`z_test_mean` because seed 000 (section 3.6.2) notes
    that the choice between an exact t test and the approximate z test depends
    on whether the values look Gaussian.  Uses :func:`scipy.stats.ttest_1samp`.
    """
    _check_alternative(alternative)
    arr = _as_sample(x)
    res = sps.ttest_1samp(arr, popmean=mu0, alternative=alternative)
    ci = res.confidence_interval(confidence_level=confidence)
    return TestResult(
        statistic=float(res.statistic),
        p_value=float(res.pvalue),
        method="one-sample t test on the mean",
        alternative=alternative,
        n=int(arr.size),
        estimate=float(arr.mean()),
        null_value=float(mu0),
        ci=(float(ci.low), float(ci.high)),
        confidence=confidence,
        effect_size=float((arr.mean() - mu0) / arr.std(ddof=1)) if arr.std(ddof=1) > 0 else None,
        h0=h0,
        h1=h1,
        details={"df": int(arr.size - 1)},
    )


def proportion_ztest(
    count: int,
    nobs: int,
    p0: float = 0.5,
    alternative: Alternative = "two-sided",
    *,
    h0: str = "no bias (proportion = p0)",
    h1: str = "bias",
) -> TestResult:
    r"""One-sample z test for a proportion, as :func:`statsmodels.stats.proportion.proportions_ztest`.

    .. math:: z = \frac{\hat{p} - p_0}{\sqrt{\hat{p}(1-\hat{p})/n}}

    The standard error uses the *sample* proportion (statsmodels' default,
    ``prop_var=False``); this is the convention that reproduces the thesis's
    p-values (seed 000, eq. 3.3 for the frequency baseline ``prop`` and
    sections 4.4.2-4.4.3 for the CrowS-Pairs / StereoSet proportions).
    A 95% Wald interval is attached; :func:`binomial_test` gives the exact
    alternative.
    """
    _check_alternative(alternative)
    if nobs <= 0:
        raise ValueError("nobs must be positive")
    if not 0 <= count <= nobs:
        raise ValueError(f"count must lie in [0, nobs={nobs}], got {count}")
    if not 0 < p0 < 1:
        raise ValueError("p0 must lie strictly between 0 and 1")
    phat = count / nobs
    if phat in (0.0, 1.0):
        raise ValueError(
            "the z test with the sample-proportion variance is undefined when all or none of the "
            "observations are successes; use binomial_test instead"
        )
    z, p = smp.proportions_ztest(count, nobs, value=p0, alternative=_SM_ALT[alternative])
    lo, hi = smp.proportion_confint(count, nobs, alpha=0.05, method="normal")
    return TestResult(
        statistic=float(z),
        p_value=float(p),
        method="one-sample z test for a proportion",
        alternative=alternative,
        n=int(nobs),
        estimate=float(phat),
        null_value=float(p0),
        ci=(float(lo), float(hi)),
        confidence=0.95,
        h0=h0,
        h1=h1,
        details={"count": int(count)},
    )


def binomial_test(
    count: int,
    nobs: int,
    p0: float = 0.5,
    alternative: Alternative = "two-sided",
    *,
    confidence: float = 0.95,
    h0: str = "no bias (proportion = p0)",
    h1: str = "bias",
) -> TestResult:
    """Exact binomial test (:func:`scipy.stats.binomtest`) with a Clopper-Pearson interval.

    The exact counterpart of :func:`proportion_ztest`, recommended for small n.
    """
    _check_alternative(alternative)
    if nobs <= 0 or not 0 <= count <= nobs:
        raise ValueError(f"need 0 <= count <= nobs and nobs > 0, got count={count}, nobs={nobs}")
    res = sps.binomtest(int(count), int(nobs), p=p0, alternative=alternative)
    ci = res.proportion_ci(confidence_level=confidence, method="exact")
    return TestResult(
        statistic=float(count),
        p_value=float(res.pvalue),
        method="exact binomial test",
        alternative=alternative,
        n=int(nobs),
        estimate=float(count / nobs),
        null_value=float(p0),
        ci=(float(ci.low), float(ci.high)),
        confidence=confidence,
        h0=h0,
        h1=h1,
    )


def bootstrap_ci(
    x: Sequence[float] | np.ndarray,
    statistic: Callable[[np.ndarray], float] = np.mean,
    *,
    confidence: float = 0.95,
    n_resamples: int = 9999,
    method: str = "BCa",
    random_state: int | np.random.Generator | None = 0,
) -> TestResult:
    """Bootstrap confidence interval for a statistic of one sample (:func:`scipy.stats.bootstrap`).

    Returned as a :class:`TestResult` with ``p_value=None`` (a descriptive
    interval, not a test).  Used beside the z and t tests of seed 000
    section 3.5.2 so the mean DirectBias comes with its uncertainty.
    """
    arr = _as_sample(x)
    res = sps.bootstrap(
        (arr,),
        lambda a, axis=-1: np.apply_along_axis(statistic, axis, a),
        confidence_level=confidence,
        n_resamples=n_resamples,
        method=method,
        random_state=random_state,
    )
    return TestResult(
        statistic=float(statistic(arr)),
        p_value=None,
        method=f"bootstrap {method} confidence interval ({n_resamples} resamples)",
        n=int(arr.size),
        estimate=float(statistic(arr)),
        ci=(float(res.confidence_interval.low), float(res.confidence_interval.high)),
        confidence=confidence,
        details={"standard_error": float(res.standard_error)},
    )


def correlation(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    method: str = "pearson",
    alternative: Alternative = "two-sided",
) -> TestResult:
    """Pearson or Spearman correlation with its p-value (H0: no correlation).

    Seed 000 section 3.6.3 correlates mean seed frequency with PMI, DirectBias
    and WEAT effect sizes (Figures 3.7-3.8).  Pearson uses
    :func:`scipy.stats.pearsonr` (with its Fisher-z 95% CI), Spearman
    :func:`scipy.stats.spearmanr`.
    """
    _check_alternative(alternative)
    xa = _as_sample(x, name="x", min_n=3)
    ya = _as_sample(y, name="y", min_n=3)
    if xa.size != ya.size:
        raise ValueError(f"x and y must have the same length, got {xa.size} and {ya.size}")
    if method == "pearson":
        res = sps.pearsonr(xa, ya, alternative=alternative)
        ci = res.confidence_interval(0.95)
        return TestResult(
            statistic=float(res.statistic),
            p_value=float(res.pvalue),
            method="Pearson correlation",
            alternative=alternative,
            n=int(xa.size),
            estimate=float(res.statistic),
            ci=(float(ci.low), float(ci.high)),
            confidence=0.95,
            null_value=0.0,
            h0="no linear association",
            h1="a linear association",
        )
    if method == "spearman":
        res = sps.spearmanr(xa, ya, alternative=alternative)
        return TestResult(
            statistic=float(res.statistic),
            p_value=float(res.pvalue),
            method="Spearman rank correlation",
            alternative=alternative,
            n=int(xa.size),
            estimate=float(res.statistic),
            null_value=0.0,
            h0="no monotonic association",
            h1="a monotonic association",
        )
    raise ValueError(f"method must be 'pearson' or 'spearman', got {method!r}")


# ============================================================================ chapter 4 battery
# Two-sample proportions, normality and goodness-of-fit tests, distribution fitting and the
# KL divergence score used on the PLL distributions of seed 000 section 4.4.


def two_proportion_ztest(
    count1: int,
    nobs1: int,
    count2: int,
    nobs2: int,
    alternative: Alternative = "two-sided",
    *,
    h0: str = "the two proportions are equal",
    h1: str = "the two proportions differ",
) -> TestResult:
    r"""Two-sample z test for the difference of two independent proportions.

    .. math::

        z = \frac{\hat{p}_1 - \hat{p}_2}{\sqrt{\bar{p}(1-\bar{p})\,(1/n_1 + 1/n_2)}},
        \qquad \bar{p} = \frac{x_1 + x_2}{n_1 + n_2}

    (pooled variance under H0), computed by
    :func:`statsmodels.stats.proportion.proportions_ztest` with two counts.  Seed 000
    section 4.3 (hypothesis system 4.6, H0: l1 = l1') and section 4.4.3: the thesis
    compares l1 = 133/170 (original vs paraphrased) with l1' = 98/170 (original vs
    random) and reports p ≈ 0.00004.  ``estimate`` is p1 - p2 with a 95% Wald interval
    (:func:`statsmodels.stats.proportion.confint_proportions_2indep`); ``effect_size`` is
    Cohen's h = 2 asin(sqrt(p1)) - 2 asin(sqrt(p2)).
    """
    _check_alternative(alternative)
    for c, n, name in ((count1, nobs1, "1"), (count2, nobs2, "2")):
        if n <= 0 or not 0 <= c <= n:
            raise ValueError(f"need 0 <= count{name} <= nobs{name} and nobs{name} > 0, got {c} / {n}")
    pooled = (count1 + count2) / (nobs1 + nobs2)
    if pooled in (0.0, 1.0):
        raise ValueError("the pooled proportion is 0 or 1: the z test is undefined (no variability)")
    z, p = smp.proportions_ztest(
        np.array([count1, count2]), np.array([nobs1, nobs2]), value=0, alternative=_SM_ALT[alternative]
    )
    p1, p2 = count1 / nobs1, count2 / nobs2
    lo, hi = smp.confint_proportions_2indep(count1, nobs1, count2, nobs2, method="wald", compare="diff")
    return TestResult(
        statistic=float(z),
        p_value=float(p),
        method="two-sample z test for proportions (pooled variance)",
        alternative=alternative,
        n=int(nobs1 + nobs2),
        estimate=float(p1 - p2),
        null_value=0.0,
        ci=(float(lo), float(hi)),
        confidence=0.95,
        effect_size=float(smp.proportion_effectsize(p1, p2)),
        h0=h0,
        h1=h1,
        details={
            "p1": p1,
            "p2": p2,
            "count1": int(count1),
            "nobs1": int(nobs1),
            "count2": int(count2),
            "nobs2": int(nobs2),
            "pooled_proportion": float(pooled),
        },
    )


def shapiro_wilk(x: Sequence[float] | np.ndarray, *, name: str = "sample") -> TestResult:
    r"""Shapiro-Wilk test of normality (:func:`scipy.stats.shapiro`).

    .. math:: W = \frac{\left(\sum_i a_i x_{(i)}\right)^2}{\sum_i (x_i - \bar{x})^2}

    H0: the values are a sample from a normal distribution.  Seed 000 sections 4.2.1
    and 4.4.2 (Table 4.3: p ≈ 0 for the four PLL distributions ster/anster x cp/sz,
    n = 1503; also the PLL differences of Figure 4.12).  Shapiro & Wilk (1965).
    scipy warns that the p-value may be inaccurate for n > 5000; with samples that
    large almost any departure from normality is "significant" anyway.
    """
    arr = _as_sample(x, name=name, min_n=3)
    if np.ptp(arr) == 0:
        raise ValueError(f"{name} is constant: the Shapiro-Wilk test is undefined")
    res = sps.shapiro(arr)
    return TestResult(
        statistic=float(res.statistic),
        p_value=float(res.pvalue),
        method="Shapiro-Wilk normality test",
        alternative="two-sided",
        n=int(arr.size),
        h0="the values come from a normal distribution",
        h1="the values are not normally distributed",
    )


def _get_dist(dist: str | sps.rv_continuous) -> sps.rv_continuous:
    if isinstance(dist, str):
        obj = getattr(sps, dist, None)
        if not isinstance(obj, sps.rv_continuous):
            raise ValueError(f"{dist!r} is not a continuous distribution of scipy.stats")
        return obj
    if isinstance(dist, sps.rv_continuous):
        return dist
    raise TypeError(f"dist must be a scipy.stats distribution name or object, got {type(dist).__name__}")


def _fit(dist: sps.rv_continuous, arr: np.ndarray) -> tuple[float, ...]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return tuple(float(p) for p in dist.fit(arr))


def ks_test(
    x: Sequence[float] | np.ndarray,
    dist: str | sps.rv_continuous = "norm",
    params: Sequence[float] | None = None,
    *,
    n_mc_samples: int = 0,
    random_state: int | np.random.Generator | None = 0,
) -> TestResult:
    r"""One-sample Kolmogorov-Smirnov test against a scipy distribution, optionally fitted.

    .. math:: D_n = \sup_x \left| F_n(x) - F(x; \hat\theta) \right|

    ``dist`` is a :mod:`scipy.stats` name (``"genextreme"`` for the GEV of seed 000
    section 4.4.2, Table 4.4; ``"norm"``; ...).  Without ``params`` the parameters are
    fitted by maximum likelihood (``dist.fit``), exactly what the thesis did through
    the ``fitter`` package, and the p-value is :func:`scipy.stats.kstest`'s.

    **Caveat.** When the parameters are estimated from the same data the standard KS
    p-value is too large (the fitted curve is pulled towards the data: Lilliefors
    1967), so "cannot reject the GEV" is weaker evidence than it looks.  With
    ``n_mc_samples > 0`` a parametric-bootstrap p-value is computed with
    :func:`scipy.stats.goodness_of_fit` (simulate from the fitted distribution, refit
    every simulated sample, recompute D); it then becomes ``p_value`` and the naive one
    is kept in ``details["p_value_naive"]``.  Each bootstrap sample refits the model
    (about 50 ms for a GEV on 1500 values).
    """
    arr = _as_sample(x, min_n=3)
    d = _get_dist(dist)
    fitted = params is None
    theta = _fit(d, arr) if fitted else tuple(float(p) for p in params)
    res = sps.kstest(arr, d.cdf, args=theta)
    details: dict = {
        "distribution": d.name,
        "params": list(theta),
        "param_names": _param_names(d),
        "params_fitted_on_same_data": fitted,
    }
    p_value = float(res.pvalue)
    method = f"one-sample Kolmogorov-Smirnov test against {d.name}"
    if n_mc_samples and n_mc_samples > 0:
        if fitted:
            gof = sps.goodness_of_fit(
                d, arr, statistic="ks", n_mc_samples=int(n_mc_samples), rng=_rng(random_state)
            )
        else:
            known = dict(zip(_param_names(d), theta, strict=True))
            gof = sps.goodness_of_fit(
                d,
                arr,
                known_params=known,
                statistic="ks",
                n_mc_samples=int(n_mc_samples),
                rng=_rng(random_state),
            )
        details["p_value_naive"] = p_value
        details["n_mc_samples"] = int(n_mc_samples)
        p_value = float(gof.pvalue)
        method += " (parametric-bootstrap p-value)"
    elif fitted:
        method += " (parameters fitted on the same data: p-value optimistic)"
    return TestResult(
        statistic=float(res.statistic),
        p_value=p_value,
        method=method,
        alternative="two-sided",
        n=int(arr.size),
        h0=f"the values follow the {'fitted ' if fitted else ''}{d.name} distribution",
        h1=f"the values do not follow the {d.name} distribution",
        details=details,
    )


def _rng(random_state: int | np.random.Generator | None) -> np.random.Generator:
    return (
        random_state if isinstance(random_state, np.random.Generator) else np.random.default_rng(random_state)
    )


def _param_names(d: sps.rv_continuous) -> list[str]:
    shapes = [s.strip() for s in d.shapes.split(",")] if d.shapes else []
    return [*shapes, "loc", "scale"]


def ks_2samp_test(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    alternative: Alternative = "two-sided",
) -> TestResult:
    r"""Two-sample Kolmogorov-Smirnov test (:func:`scipy.stats.ks_2samp`).

    .. math:: D = \sup_t \left| F_{x}(t) - F_{y}(t) \right|

    H0: both samples come from the same continuous distribution.  Seed 000 section
    4.4.2, Table 4.5 (ster vs anster PLLs: p = 0.995 for cp, 0.402 for sz) and section
    4.4.3 (M_diff of original vs paraphrased pairs, p = 0.704).  The two PLL samples of
    CrowS-Pairs are *paired* (one per sentence of the same example), which the KS test
    ignores: it compares only the two marginal distributions.
    """
    _check_alternative(alternative)
    xa = _as_sample(x, name="x")
    ya = _as_sample(y, name="y")
    res = sps.ks_2samp(xa, ya, alternative=alternative)
    return TestResult(
        statistic=float(res.statistic),
        p_value=float(res.pvalue),
        method="two-sample Kolmogorov-Smirnov test",
        alternative=alternative,
        n=int(xa.size + ya.size),
        h0="the two samples come from the same distribution",
        h1="the two distributions differ",
        details={
            "n_x": int(xa.size),
            "n_y": int(ya.size),
            "statistic_location": float(res.statistic_location),
        },
    )


#: The candidates the thesis gave ``fitter`` (seed 000 section 4.4.2, Figures 4.10-4.11).
THESIS_CANDIDATES: tuple[str, ...] = ("gamma", "lognorm", "skewnorm", "genextreme", "beta", "burr", "norm")


def fit_distributions(
    x: Sequence[float] | np.ndarray,
    distributions: Sequence[str] = THESIS_CANDIDATES,
    *,
    sort_by: str = "ks_statistic",
    bins: int = 100,
) -> pd.DataFrame:
    r"""Fit candidate scipy distributions by maximum likelihood and rank them.

    A scipy re-implementation of what the thesis did with the ``fitter`` package
    (seed 000 section 4.4.2, Figures 4.10-4.11: the GEV fitted the PLL
    distributions best).  For every candidate ``d`` with fitted parameters
    :math:`\hat\theta` (``k`` of them) on ``n`` values:

    * ``loglik`` :math:`= \sum_i \log f(x_i; \hat\theta)`,
      ``aic`` :math:`= 2k - 2\,loglik`, ``bic`` :math:`= k \log n - 2\,loglik`
      (computed on the data; ``fitter`` evaluates the log-pdf at histogram bin centres
      instead, so its AIC/BIC values differ);
    * ``ks_statistic`` / ``ks_pvalue``: :func:`scipy.stats.kstest` against the fitted
      distribution (p-value optimistic, see :func:`ks_test`);
    * ``sumsquare_error``: :math:`\sum_b (h_b - f(c_b; \hat\theta))^2` over a density
      histogram with ``bins`` bins (``h_b`` heights, ``c_b`` centres), ``fitter``'s
      default ranking criterion.

    Returns a DataFrame with one row per distribution (``distribution``, ``params``,
    ``n_params``, the criteria above and ``error`` when a fit failed, in which case the
    criteria are NaN), sorted by ``sort_by`` ascending (``"ks_statistic"``, ``"aic"``,
    ``"bic"`` or ``"sumsquare_error"``).
    """
    arr = _as_sample(x, min_n=3)
    if sort_by not in ("ks_statistic", "aic", "bic", "sumsquare_error"):
        raise ValueError(f"sort_by must be ks_statistic, aic, bic or sumsquare_error, got {sort_by!r}")
    if not distributions:
        raise ValueError("give at least one candidate distribution")
    heights, edges = np.histogram(arr, bins=bins, density=True)
    centres = (edges[:-1] + edges[1:]) / 2
    rows = []
    n = arr.size
    for name in distributions:
        d = _get_dist(name)
        row: dict = {"distribution": d.name}
        try:
            theta = _fit(d, arr)
            with np.errstate(all="ignore"):
                ll = float(np.sum(d.logpdf(arr, *theta)))
                sse = float(np.sum((heights - d.pdf(centres, *theta)) ** 2))
            ks = sps.kstest(arr, d.cdf, args=theta)
            k = len(theta)
            row.update(
                params=theta,
                n_params=k,
                loglik=ll,
                aic=2 * k - 2 * ll,
                bic=k * np.log(n) - 2 * ll,
                ks_statistic=float(ks.statistic),
                ks_pvalue=float(ks.pvalue),
                sumsquare_error=sse,
                error=None,
            )
        except Exception as exc:  # a failed candidate must not sink the comparison
            logger.warning("fit_distributions: %s failed: %s", d.name, exc)
            row.update(
                params=None,
                n_params=np.nan,
                loglik=np.nan,
                aic=np.nan,
                bic=np.nan,
                ks_statistic=np.nan,
                ks_pvalue=np.nan,
                sumsquare_error=np.nan,
                error=str(exc),
            )
        rows.append(row)
    out = pd.DataFrame(rows)
    for col in ("aic", "bic", "loglik"):
        out.loc[~np.isfinite(out[col].astype(float)), col] = np.nan
    return out.sort_values(sort_by, na_position="last", kind="stable").reset_index(drop=True)


def gaussian_kl(mu1: Any, sd1: Any, mu2: Any, sd2: Any) -> Any:
    r"""KL divergence between two univariate normals,
    :math:`KL(N(\mu_1,\sigma_1^2)\,\|\,N(\mu_2,\sigma_2^2))`.

    .. math:: \log\frac{\sigma_2}{\sigma_1} + \frac{\sigma_1^2 + (\mu_1-\mu_2)^2}{2\sigma_2^2} - \frac12

    (the closed form behind ``torch.distributions.kl_divergence`` for two ``Normal``).  Scalars give a
    float; arrays (broadcast together) give one divergence per element.
    """
    sd1, sd2 = np.asarray(sd1, dtype=float), np.asarray(sd2, dtype=float)
    if np.any(sd1 <= 0) or np.any(sd2 <= 0):
        raise ValueError(f"standard deviations must be positive, got {sd1} and {sd2}")
    kl = np.log(sd2 / sd1) + (sd1**2 + (np.asarray(mu1, dtype=float) - mu2) ** 2) / (2 * sd2**2) - 0.5
    return float(kl) if np.ndim(kl) == 0 else kl


def _kl_share(kl12: Any, kl21: Any) -> Any:
    """KLDivS from the two divergences: 100 max / sum, 50 where both are 0 (scalars or arrays)."""
    total = np.asarray(kl12) + kl21
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.where(total == 0, 50.0, 100.0 * np.maximum(kl12, kl21) / total)
    return float(score) if np.ndim(score) == 0 else score


def _kl_score_one(ster: np.ndarray, anster: np.ndarray, ddof: int) -> dict:
    m1, m2 = float(ster.mean()), float(anster.mean())
    s1, s2 = float(ster.std(ddof=ddof)), float(anster.std(ddof=ddof))
    kl12 = gaussian_kl(m1, s1, m2, s2)
    kl21 = gaussian_kl(m2, s2, m1, s1)
    return {
        "score": _kl_share(kl12, kl21),
        "kl_ster_anster": kl12,
        "kl_anster_ster": kl21,
        "mean_ster": m1,
        "sd_ster": s1,
        "mean_anster": m2,
        "sd_anster": s2,
        "n_ster": int(ster.size),
        "n_anster": int(anster.size),
    }


def kl_scores(ster: Any, anster: Any, *, ddof: int = 1) -> np.ndarray:
    """The pooled KL divergence score of :func:`kl_divergence_score` of each row pair of ``ster`` and
    ``anster`` (r, n), in one vectorised pass (the label-permutation test of
    :mod:`biaskit.studies.calibration` scores thousands of labellings at once)."""
    s, a = np.atleast_2d(np.asarray(ster, dtype=float)), np.atleast_2d(np.asarray(anster, dtype=float))
    m1, m2 = s.mean(axis=1), a.mean(axis=1)
    s1, s2 = s.std(axis=1, ddof=ddof), a.std(axis=1, ddof=ddof)
    if np.any(s1 <= 0) or np.any(s2 <= 0):
        raise ValueError("kl_scores: a sample with zero spread has no normal summary")
    return np.atleast_1d(_kl_share(gaussian_kl(m1, s1, m2, s2), gaussian_kl(m2, s2, m1, s1)))


def kl_divergence_score(
    ster: Sequence[float] | np.ndarray,
    anster: Sequence[float] | np.ndarray,
    groups: Sequence[str] | np.ndarray | None = None,
    *,
    ddof: int = 1,
) -> TestResult:
    r"""KL divergence score (KLDivS) of Liu & Hou (2023), seed 000 section 4.1.4 and Table 4.6.

    Each sample (PLLs of the stereotypical / anti-stereotypical sentences) is summarised
    by a normal :math:`N(\mu, \sigma^2)` (sample mean, standard deviation with ``ddof=1``
    as ``torch.std_mean`` in the authors' code).  With :math:`KL_{sa} = KL(st\|at)` and
    :math:`KL_{as} = KL(at\|st)` (:func:`gaussian_kl`):

    .. math::

        KLDivS = 100 \cdot \max\left(\frac{KL_{sa}}{KL_{sa} + KL_{as}},
                                     \frac{KL_{as}}{KL_{sa} + KL_{as}}\right) \in [50, 100]

    With ``groups`` (bias types) the score is computed per group and combined as the
    size-weighted mean :math:`\sum_h \frac{|h|}{\sum_g |g|} KLDivS_h` (the authors' code,
    ``scoring.py`` of nlply/evaluate_bias_by_gaussian; the seed prints the weights as
    :math:`|h| / |\mathcal{H}|`, which would not stay in [50, 100]).  Without groups the
    two samples are pooled, as the thesis did (Table 4.6: 50.012 for cp, 50.011 for sz).

    **What it measures.** With :math:`\Delta = \mu_s - \mu_a`, equal standard deviations
    give :math:`KL_{sa} = KL_{as} = \Delta^2 / (2\sigma^2)`, so KLDivS = 50 *whatever the
    difference of the means*; and as :math:`|\Delta|` grows the score tends to
    :math:`100 \max(\sigma_s^2, \sigma_a^2) / (\sigma_s^2 + \sigma_a^2)`.  The score is thus
    a measure of how asymmetric the two *spreads* are (the mean shift only modulates
    it), not of whether the model prefers the stereotypical sentences: 50 does not mean
    "no bias".  When the two Gaussians are identical (both divergences 0) it is 50.
    ``p_value`` is ``None``: the score has no sampling distribution.
    """
    s = _as_sample(ster, name="ster")
    a = _as_sample(anster, name="anster")
    if groups is None:
        one = _kl_score_one(s, a, ddof)
        details = dict(one)
        score = one["score"]
    else:
        g = np.asarray(groups, dtype=object).ravel()
        if g.size != s.size or s.size != a.size:
            raise ValueError("with groups, ster, anster and groups must be aligned (same length)")
        per = []
        for name in sorted(set(g.tolist()), key=str):
            mask = g == name
            if mask.sum() < 2:
                raise ValueError(
                    f"group {name!r} has fewer than 2 pairs: its standard deviation is undefined"
                )
            per.append({"group": name, **_kl_score_one(s[mask], a[mask], ddof)})
        weights = np.array([r["n_ster"] for r in per], dtype=float)
        score = float(np.sum(weights / weights.sum() * np.array([r["score"] for r in per])))
        details = {"by_group": per, "weighting": "group size / total pairs"}
    return TestResult(
        statistic=float(score),
        p_value=None,
        method="KL divergence score (Gaussian approximation, Liu & Hou 2023)",
        n=int(s.size + a.size),
        estimate=float(score),
        null_value=50.0,
        h0="the two PLL distributions have the same spread (score 50)",
        h1="asymmetric spreads",
        details=details,
    )
