"""Bias metrics, one module per family, each declared once in the metric registry.

Importing :mod:`biaskit.metrics` imports every metric module below, in this order, and each registers
its metrics into :data:`biaskit.core.registry.REGISTRY` (the order is the registry's order, which the
calibration's tables and the batch grid's defaults follow).  :func:`registered_metrics` returns them;
``python -m biaskit metrics`` prints them; ``docs/adding_a_metric.md`` shows how to add one.

=====================================  =============================================================
module                                 metrics
=====================================  =============================================================
:mod:`~biaskit.metrics.crows`          CrowS-Pairs (B_CrowS) and its PLL readings cp, sz, AUL, ll, shared
:mod:`~biaskit.metrics.stereoset`      StereoSet ss / lms / icat, the thesis's E^Comp baseline
:mod:`~biaskit.metrics.gender_templates`  Barza's templates (PPD) and sentence pairs (SLD)
:mod:`~biaskit.metrics.pll_distributions`  the thesis's KS test and KL score of two PLL samples
:mod:`~biaskit.metrics.robustness`     the thesis's paraphrase robustness (agreement)
:mod:`~biaskit.metrics.lpbs`           LPBS (Kurita et al.)
:mod:`~biaskit.metrics.seat`           SEAT (May et al.)
:mod:`~biaskit.metrics.indirect_bias`  indirect bias through names (Louis-Alexandre)
:mod:`~biaskit.metrics.weat`           WEAT (Caliskan et al.)
:mod:`~biaskit.metrics.direct_bias`    DirectBias and indirect beta (Bolukbasi et al.)
:mod:`~biaskit.metrics.pmi`            BIAS_PMI, its group test and frequency baseline
:mod:`~biaskit.metrics.embedding_bias` WEFAT, RND, RNSB, ECT, MAC, RIPA (WEFE's family)
:mod:`~biaskit.metrics.class_confusion`  DPCCB (Sayenju)
:mod:`~biaskit.metrics.dicobi`         DiCoBi, SAME, domain gain (Sayenju)
=====================================  =============================================================

Analyses built on the metrics (:mod:`~biaskit.metrics.frequency`, :mod:`~biaskit.metrics.analogies`,
:mod:`~biaskit.metrics.corpus_to_model`) declare nothing of their own.
"""

from __future__ import annotations

import importlib

from biaskit.core.registry import REGISTRY, Metric, discover_plugins

#: the metric modules, in registry order
METRIC_MODULES: tuple[str, ...] = (
    "crows",
    "stereoset",
    "gender_templates",
    "pll_distributions",
    "robustness",
    "lpbs",
    "seat",
    "indirect_bias",
    "weat",
    "direct_bias",
    "pmi",
    "embedding_bias",
    "class_confusion",
    "dicobi",
    "recovery",
)

__all__ = ["METRIC_MODULES", "registered_metrics"]

for _name in METRIC_MODULES:
    importlib.import_module(f"{__name__}.{_name}")
discover_plugins()


def registered_metrics() -> list[Metric]:
    """Every registered metric, in registry order: the built-in ones, those of plug-in packages found when
    this package was imported (and by any later :func:`~biaskit.core.registry.discover_plugins`), and any
    a user registered."""
    return list(REGISTRY.values())
