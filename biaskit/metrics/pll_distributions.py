"""The thesis's statistical battery on the two PLL samples of a pair set (seed 000 section 4.4).

The thesis compares the pseudo-log-likelihoods of the stereotypical sentences with those of the
anti-stereotypical ones as two *samples*: a two-sample Kolmogorov-Smirnov test (section 4.4.2,
Table 4.5) and the KL divergence score of Liu & Hou (2023) (section 4.1.4, Table 4.6).  The tests
themselves live in :mod:`biaskit.core.stats`; this module declares them as metrics of a pair set so
that the batch tools and the calibration (notebook 14) find them in the registry.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from biaskit.core import stats
from biaskit.core.registry import CalibrationMeasure, CalibrationSupport, register_metric
from biaskit.core.results import TestResult

__all__ = ["pll_kl_score", "pll_ks_test"]


def pll_ks_test(ster: Sequence[float] | np.ndarray, anster: Sequence[float] | np.ndarray) -> TestResult:
    r"""Two-sample KS test of the stereotypical against the anti-stereotypical PLLs (seed 000 section 4.4.2).

    .. math:: D = \sup_t \left| F_{ster}(t) - F_{anster}(t) \right|

    :func:`biaskit.core.stats.ks_2samp_test` (two-sided); the thesis's Table 4.5 reads p = 0.995 for cp.
    """
    return stats.ks_2samp_test(ster, anster)


def pll_kl_score(
    ster: Sequence[float] | np.ndarray,
    anster: Sequence[float] | np.ndarray,
    groups: Sequence[str] | np.ndarray | None = None,
) -> TestResult:
    r"""KL divergence score of the two PLL samples (Liu & Hou 2023; seed 000 section 4.1.4, Table 4.6).

    :func:`biaskit.core.stats.kl_divergence_score`: 50 when the two spreads are equal, up to 100; it has
    no direction and no test of its own (the calibration gives it a label-permutation test).
    """
    return stats.kl_divergence_score(ster, anster, groups)


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
    summary="do the stereotypical and anti-stereotypical PLLs come from one distribution?",
    calibration=CalibrationSupport(
        (
            CalibrationMeasure(key="thesis_ks", label="Thesis KS test, D", kind="ks", model_kind="masked"),
            CalibrationMeasure(
                key="causal_ks",
                label="Thesis KS test on causal log-likelihoods, D",
                kind="ks",
                model_kind="causal",
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
    summary="how asymmetric the spreads of the two PLL samples are",
    calibration=CalibrationSupport(
        (
            CalibrationMeasure(
                key="thesis_kl", label="Thesis KL divergence score", kind="kl", model_kind="masked"
            ),
            CalibrationMeasure(
                key="causal_kl",
                label="Thesis KL score on causal log-likelihoods",
                kind="kl",
                model_kind="causal",
            ),
        )
    ),
)
