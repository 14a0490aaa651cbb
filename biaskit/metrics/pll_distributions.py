"""The thesis's statistical battery on the two PLL samples of a pair set (seed 000 section 4.4).

The thesis compares the pseudo-log-likelihoods of the stereotypical sentences with those of the
anti-stereotypical ones as two *samples*: a two-sample Kolmogorov-Smirnov test (section 4.4.2,
Table 4.5) and the KL divergence score of Liu & Hou (2023) (section 4.1.4, Table 4.6).  The tests
themselves live in :mod:`biaskit.core.stats`; this module declares them as metrics of a pair set so
that the batch tools and the calibration (notebook 14) find them in the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from biaskit.core import stats
from biaskit.core.registry import (
    CalibrationCall,
    CalibrationMeasure,
    CalibrationSupport,
    GridCall,
    GridSupport,
    Kind,
    MetricValues,
    register_metric,
)
from biaskit.core.results import TestResult

__all__ = ["pll_kl_score", "pll_ks_test"]


def pll_ks_test(ster: Sequence[float] | np.ndarray, anster: Sequence[float] | np.ndarray) -> TestResult:
    r"""Two-sample KS test of the stereotypical against the anti-stereotypical PLLs (seed 000 section 4.4.2).

    .. math:: D = \sup_t \left| F_{ster}(t) - F_{anster}(t) \right|

    :func:`biaskit.core.stats.ks_2samp_test` (two-sided); the thesis's Table 4.5 reads p = 0.995 for cp.

    Examples
    --------
    >>> ster = [-20.1, -18.4, -25.0, -22.3, -19.8, -21.0]
    >>> anster = [-23.9, -24.0, -26.2, -25.1, -22.5, -27.3]
    >>> result = pll_ks_test(ster, anster)
    >>> result.n, round(result.statistic, 3), round(result.p_value, 4)
    (12, 0.833, 0.026)
    """
    return stats.ks_2samp_test(ster, anster)


def pll_kl_score(
    ster: Sequence[float] | np.ndarray,
    anster: Sequence[float] | np.ndarray,
    groups: Sequence[str] | np.ndarray | None = None,
) -> TestResult:
    r"""KL divergence score of the two PLL samples (Liu & Hou 2023; seed 000 section 4.1.4, Table 4.6).

    .. math:: KLDivS = 100 \cdot \max\left(\frac{KL_{sa}}{KL_{sa} + KL_{as}},
              \frac{KL_{as}}{KL_{sa} + KL_{as}}\right), \quad KL_{sa} = KL(st \| at)

    (the two samples fitted by normal distributions).

    :func:`biaskit.core.stats.kl_divergence_score`: 50 when the two spreads are equal, up to 100; it has
    no direction and no test of its own (the calibration gives it a label-permutation test).

    Examples
    --------
    >>> ster = [-20.1, -18.4, -25.0, -22.3, -19.8, -21.0]
    >>> anster = [-23.9, -24.0, -26.2, -25.1, -22.5, -27.3]
    >>> result = pll_kl_score(ster, anster)
    >>> result.n, round(result.statistic, 3)
    (12, 63.727)
    """
    return stats.kl_divergence_score(ster, anster, groups)


def _samples(key: str, kind: Kind, reading: str) -> Callable[[CalibrationCall], MetricValues]:
    """The calibration hook of the battery: the two samples of the control pairs by ``reading`` (sz on a
    masked control, ll on a causal one), the male-minus-female difference as the value."""

    def values(call: CalibrationCall) -> MetricValues:
        from biaskit.metrics.controls import pair_values

        return pair_values(call, key, kind, reading)

    return values


def _battery_grid(test: Callable[..., TestResult], name: str) -> GridSupport:
    """Grid support of the battery: ``test`` of the two samples of a CrowS-Pairs dataset (the sentences
    with more and with less stereotype), scored by the metric's options ``reading`` (masked) and
    ``causal_reading`` (causal)."""
    from biaskit.metrics.crows import grid_pair_scores, reading_methods, reading_options

    def run(call: GridCall) -> list[dict[str, Any]]:
        more, less, n_skipped = grid_pair_scores(call, call.method)
        row = GridSupport.rows_from_result(test(more, less), targets="sent_more vs sent_less")[0]
        row["note"] = f"pairs not scored (see the log): {n_skipped}" if n_skipped else ""
        return [row]

    return GridSupport(
        "crows",
        run,
        reading_methods(f"{name}_reading", f"{name}_causal_reading"),
        {"static": f"{name} needs a language model"},
        options=reading_options("cp"),
    )


def _ks_example() -> TestResult:
    """The KS test of the toy pairs' two PLL samples (Salazar's PLL, toy masked model)."""
    from biaskit.metrics.toys import toy_scores

    return pll_ks_test(*toy_scores("sz"))


def _kl_example() -> TestResult:
    """The KL score of the toy pairs' two PLL samples (Salazar's PLL, toy masked model)."""
    from biaskit.metrics.toys import toy_scores

    return pll_kl_score(*toy_scores("sz"))


register_metric(
    "thesis_ks",
    label="Thesis KS test of the two PLL samples",
    family="language models",
    inputs=("sentence pairs", "scores"),
    model_kinds=("masked", "causal"),
    directional=True,
    test="two-sample Kolmogorov-Smirnov test",
    citation="Maddalozzo 2023 (seed 000)",
    section="seed 000 section 4.4.2",
    entry_point=pll_ks_test,
    grid=_battery_grid(pll_ks_test, "thesis_ks"),
    summary="do the stereotypical and anti-stereotypical PLLs come from one distribution?",
    example=_ks_example,
    calibration=CalibrationSupport(
        (
            CalibrationMeasure(
                key="thesis_ks",
                label="Thesis KS test, D",
                kind="ks",
                model_kind="masked",
                values=_samples("thesis_ks", "ks", "sz"),
            ),
            CalibrationMeasure(
                key="causal_ks",
                label="Thesis KS test on causal log-likelihoods, D",
                kind="ks",
                model_kind="causal",
                values=_samples("causal_ks", "ks", "ll"),
            ),
        )
    ),
)
register_metric(
    "thesis_kl",
    label="Thesis KL divergence score",
    family="language models",
    inputs=("sentence pairs", "scores"),
    model_kinds=("masked", "causal"),
    directional=False,
    test="none of its own (a score in [50, 100]); the calibration adds a label-permutation test",
    citation="Liu & Hou 2023; Maddalozzo 2023 (seed 000)",
    section="seed 000 section 4.1.4",
    entry_point=pll_kl_score,
    grid=_battery_grid(pll_kl_score, "thesis_kl"),
    summary="how asymmetric the spreads of the two PLL samples are",
    example=_kl_example,
    calibration=CalibrationSupport(
        (
            CalibrationMeasure(
                key="thesis_kl",
                label="Thesis KL divergence score",
                kind="kl",
                model_kind="masked",
                values=_samples("thesis_kl", "kl", "sz"),
            ),
            CalibrationMeasure(
                key="causal_kl",
                label="Thesis KL score on causal log-likelihoods",
                kind="kl",
                model_kind="causal",
                values=_samples("causal_kl", "kl", "ll"),
            ),
        )
    ),
)
