"""The calibration's controlled items, its measures (the registry's) and their values on a control model.

Part of :mod:`biaskit.studies.calibration` (its public front, which re-exports every name here).  The
controlled items (:func:`control_pairs`, :func:`control_blanks`, the templates and word sets) are those of
:mod:`biaskit.metrics.controls`, re-exported here.  The measures are the registry's
(:func:`calibration_measures`); each metric computes its own values through its calibration hook
(:class:`~biaskit.core.registry.CalibrationMeasure` ``values(call)``), and :func:`measure_values` runs the
hooks of one control model with one :class:`~biaskit.core.registry.CalibrationCall`, whose score cache lets
the measures that read the same scores (cp: ``crows_cp`` and the robustness agreement; sz: ``crows_sz``,
the KS test and the KL score; causal ll: ``causal_ll``, ``causal_ks``, ``causal_kl``) score each pair once.
:func:`language_model_values`, :func:`causal_language_model_values` and :func:`static_values` do it for one
kind of control.  :data:`LM_METRICS`, :data:`CAUSAL_LM_METRICS`, :data:`STATIC_METRICS` and
:data:`METRIC_LABELS` are read from the registry each time they are used (a metric registered later, a
plug-in's, is among them).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

import biaskit.metrics  # noqa: F401  (registers every metric and its calibration measures)
from biaskit.core.registry import (
    REGISTRY,
    CalibrationCall,
    CalibrationMeasure,
    Kind,
    MetricValues,
    ScoreCache,
)
from biaskit.metrics.controls import (
    BLANK_TEMPLATES,
    FEMALE_WORDS,
    IBS_GENDER_WORDS,
    LPBS_TEMPLATES,
    MALE_WORDS,
    PAIR_TEMPLATES,
    PARAPHRASE_TEMPLATES,
    PROFESSION_FIRST,
    PRONOUN_FIRST,
    SEAT_ATTRIBUTES,
    SEAT_TEMPLATES,
    SLD_TEMPLATES,
    TBE_TEMPLATES,
    control_blanks,
    control_pairs,
    fill_template,
    pair_template_order,
)
from biaskit.metrics.indirect_bias import indirect_name_values
from biaskit.metrics.pmi import gender_pmi_values

logger = logging.getLogger(__name__)

__all__ = [
    "BLANK_TEMPLATES",
    "FEMALE_WORDS",
    "IBS_GENDER_WORDS",
    "LPBS_TEMPLATES",
    "MALE_WORDS",
    "NO_EFFECT",
    "PAIR_TEMPLATES",
    "PARAPHRASE_TEMPLATES",
    "PROFESSION_FIRST",
    "PRONOUN_FIRST",
    "SEAT_ATTRIBUTES",
    "SEAT_TEMPLATES",
    "SLD_TEMPLATES",
    "TBE_TEMPLATES",
    "calibration_measures",
    "causal_language_model_values",
    "control_blanks",
    "control_pairs",
    "fill_template",
    "indirect_name_values",
    "language_model_values",
    "measure_values",
    "pair_template_order",
    "pmi_values",
    "static_values",
]

_fill = fill_template  # the name the controlled items' filler had here


def calibration_measures(model_kind: str | None = None) -> dict[str, CalibrationMeasure]:
    """Every calibration measure of the metric registry (:mod:`biaskit.core.registry`), key -> measure,
    in registry order; ``model_kind`` keeps those of one kind (``"masked"``, ``"causal"``, ``"static"``)."""
    return {cm.key: cm for _, cm in REGISTRY.calibration_measures(model_kind)}


def __getattr__(name: str) -> Any:
    """:data:`LM_METRICS`, :data:`CAUSAL_LM_METRICS`, :data:`STATIC_METRICS` (the measure keys of each kind of
    control, in registry order) and :data:`METRIC_LABELS` (key -> what a unit's value is), read from the
    registry when used."""
    kinds = {"LM_METRICS": "masked", "CAUSAL_LM_METRICS": "causal", "STATIC_METRICS": "static"}
    if name in kinds:
        return tuple(calibration_measures(kinds[name]))
    if name == "METRIC_LABELS":
        return {k: cm.label for k, cm in calibration_measures().items()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: value of the effect when there is no bias (for ``agreement``, which is no bias measure: the thesis's
#: robustness threshold pr_rob = 80 %, the reference line of the plots)
NO_EFFECT: dict[Kind, float] = {
    "sign": 50.0,
    "mean": 0.0,
    "groups": 0.0,
    "ks": 0.0,
    "kl": 50.0,
    "agreement": 80.0,
}


# --------------------------------------------------------------------------------------------
# values per unit: the registry's hooks
# --------------------------------------------------------------------------------------------
def measure_values(
    model: Any,
    kind: str,
    targets: Sequence[str],
    *,
    metrics: Sequence[str] | None = None,
    corpus: Sequence[Sequence[str]] | None = None,
    progress: bool = False,
    cache: ScoreCache | None = None,
    skew: float | None = None,
) -> dict[str, MetricValues]:
    """The values of the calibration measures of ``kind`` (``"masked"``, ``"causal"``, ``"static"``) on one
    control ``model``, key -> :class:`MetricValues`, in registry order.

    ``metrics`` chooses among the measures of that kind (default: all; an unknown key is a ``ValueError``
    naming the known ones).  Every hook gets the same :class:`~biaskit.core.registry.CalibrationCall`
    (``targets``, ``corpus``, one shared ``cache``); a hook that returns ``None`` (an input it needs is
    missing, such as the corpus of BIAS_PMI) is left out, and values of another kind than the registry
    declares are a ``ValueError``.
    """
    known = calibration_measures(kind)
    if metrics is not None:
        unknown = [m for m in metrics if m not in known]
        if unknown:
            raise ValueError(f"not {kind} calibration measures: {sorted(unknown)}; known: {', '.join(known)}")
    wanted = known if metrics is None else {k: cm for k, cm in known.items() if k in set(metrics)}
    call = CalibrationCall(
        model=model,
        kind=kind,
        targets=tuple(targets),
        corpus=corpus,
        cache=ScoreCache() if cache is None else cache,
        progress=progress,
        skew=skew,
    )
    out: dict[str, MetricValues] = {}
    for key, cm in wanted.items():
        mv = cm.values(call)
        if mv is None:
            logger.info(
                "calibration measure %s: not computed on this control (an input it needs is missing)", key
            )
            continue
        if not isinstance(mv, MetricValues) or mv.metric != key:
            raise ValueError(
                f"calibration measure {key!r}: its hook must return MetricValues({key!r}, ...), "
                f"got {mv!r:.80}"
            )
        if mv.kind != cm.kind:
            raise ValueError(
                f"calibration measure {key!r}: its values are of kind {mv.kind!r}, "
                f"but the registry declares {cm.kind!r}"
            )
        out[key] = mv
    return out


def causal_language_model_values(
    lm: Any,
    targets: Sequence[str],
    *,
    metrics: Sequence[str] | None = None,
    progress: bool = False,
) -> dict[str, MetricValues]:
    """The causal measures' values on a causal ``lm`` (:data:`CAUSAL_LM_METRICS`) for ``targets``.

    The same controlled items as the masked metrics: CrowS-style pairs scored with ``"ll"`` and
    ``"shared"``, StereoSet-style blanks read as the next word (every blank template has the
    profession before the pronoun), Barza's sentence pairs with ``"ll"``, and the thesis's KS test and
    KL score on the two log-likelihood samples.  Barza's "[MASK] is a {t}." templates have no causal
    reading (the pronoun comes first) and are not used.
    """
    return measure_values(lm, "causal", targets, metrics=metrics, progress=progress)


def language_model_values(
    lm: Any,
    targets: Sequence[str],
    *,
    metrics: Sequence[str] | None = None,
    progress: bool = False,
) -> dict[str, MetricValues]:
    """Every language-model measure's values on ``lm`` for the controlled ``targets`` (:data:`LM_METRICS`).

    A causal ``lm`` gets the causal measures (:func:`causal_language_model_values`).
    """
    if getattr(lm, "kind", "masked") == "causal":
        return causal_language_model_values(lm, targets, metrics=metrics, progress=progress)
    return measure_values(lm, "masked", targets, metrics=metrics, progress=progress)


def static_values(
    vectors: Any, corpus_tokens: Sequence[Sequence[str]] | None, targets: Sequence[str]
) -> dict[str, MetricValues]:
    """The static measures' values (:data:`STATIC_METRICS`: WEAT and DirectBias association per target in
    ``vectors``, BIAS_PMI per target in ``corpus_tokens`` when given)."""
    return measure_values(vectors, "static", targets, corpus=corpus_tokens)


def pmi_values(corpus_tokens: Sequence[Sequence[str]], targets: Sequence[str]) -> np.ndarray:
    """BIAS_PMI(target; MALE_WORDS, FEMALE_WORDS) per target, sentence co-occurrence (seed 000 3.1.2);
    :func:`biaskit.metrics.pmi.gender_pmi_values`."""
    return gender_pmi_values(corpus_tokens, targets)
