"""Statistical tests used across the studies, all returning :class:`~biaskit.results.TestResult`.

The functions wrap well-tested implementations (scipy, statsmodels) and add
the thesis's conventions: hypotheses stated in words, the thesis's choice of
alternative, and a uniform result object.  Sources are given per function;
"seed 000" is Maddalozzo (2023), the Spanish thesis at the core of biaskit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats as sps
from statsmodels.stats import proportion as smp
from statsmodels.stats import weightstats as smw

from biaskit.results import Alternative, TestResult

__all__ = [
    "bootstrap_ci",
    "binomial_test",
    "correlation",
    "proportion_ztest",
    "t_test_mean",
    "z_test_mean",
]

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
