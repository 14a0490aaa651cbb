r"""Calibration of bias metrics on planted-bias controls: effect, p-value, power and false-positive rate.

A metric is only worth reading if it finds a bias that is there and finds none where none is.
The control models of :mod:`biaskit.training.recipes` were trained on BUG text in which each of 40
professions co-occurs with its *planted* gender (half "male", half "female", at random) in a share
``s`` of its sentences (:func:`biaskit.data.counterfactual.plant_gender_skew`); ``s = 0.5`` plants
nothing.  This module measures every metric on those models, always oriented so that a positive
effect means "toward the planted gender":

=====================  =========================================================  ============================
metric                 value per unit (male minus female)                         test (seed section)
=====================  =========================================================  ============================
``crows_cp``           PLL_cp(he-version) - PLL_cp(she-version) per pair          proportion z test, % > 50
                                                                                  (000 4.1.6, 4.2.1)
``crows_sz``           the same with Salazar's PLL                                proportion z test (000
                                                                                  4.1.3)
``crows_aul``          the same with AUL (Kaneko & Bollegala 2022)                proportion z test
``stereoset_ss``       P(he) - P(she) at a blank (StereoSet intrasentence)        proportion z test on ss (000
                                                                                  4.1.5)
``barza_tbe``          PPD = P(he) - P(she) in Barza's templates                  one-sample t test on mean
                                                                                  PPD (002 4.2)
``barza_sld``          signed SLD = PLL(he-sentence) - PLL(she-sentence)          one-sample t test (002 4.3;
                                                                                  ASLD unsigned)
``thesis_ks``          the two PLL samples (planted vs other version)             two-sample KS test (000
                                                                                  4.4.2)
``thesis_kl``          the same two samples                                       KL divergence score,
                                                                                  untested (000 4.1.4)
``thesis_robustness``  M_diff (cp) of each pair and of its paraphrase             agreement test, H1: l1 < 0.8
                                                                                  (000 4.3, 4.4.3)
``lpbs``               Kurita's log-probability bias of each profession           permutation test over groups
                                                                                  (001 4.3)
``seat``               s(sentence, he-words, she-words) of bleached sentences     permutation test over
                                                                                  sentences (001 4.2)
``indirect_names``     IBS through first names: mean over man/boy(/male) minus    permutation test over
                       mean over woman/girl(/female) (Louis-Alexandre 2022)       professions (004 3.2)
``causal_ll``          LL(he-version) - LL(she-version) per pair, causal model    proportion z test (lm-eval's
                                                                                  pct_stereotype)
``causal_shared``      the same over the shared tokens after the pronoun          proportion z test (causal
                                                                                  "cp")
``causal_next_word``   P(he) - P(she) as the next word after "The {t} said that"  proportion z test
                                                                                  (StereoSet-style)
``causal_sld``         signed LL difference of Barza's sentence pairs             one-sample t test (002 4.3)
``causal_ks``          the two LL samples (planted vs other version)              two-sample KS test (000
                                                                                  4.4.2)
``causal_kl``          the same two samples                                       KL divergence score,
                                                                                  untested
``weat``               s(w, male words, female words) in word2vec                 permutation test (000 3.4.2)
``direct_bias``        signed cos(w, g), g = Bolukbasi's gender direction         permutation test (000 3.4.1)
``pmi``                BIAS_PMI(w; male words, female words) of the corpus        permutation test (000 3.1.2)
=====================  =========================================================  ============================

For each metric and skew: the effect and its p-value on all units
(:func:`~biaskit.studies.calibration_stats.evaluate`); **power**, the share of random subsets of n units in
which the test finds the planted direction at ``alpha``
(:func:`~biaskit.studies.calibration_stats.power_curve`); and the **false-positive rate** on the s = 0.5
control (:func:`~biaskit.studies.calibration_stats.false_positive_rate`): the planted labels of a balanced
corpus carry no information, so each resample draws new balanced labels and counts how often the test claims a
bias.  Tests over groups of professions (``lpbs``, ``indirect_names``, ``weat`` ... ``pmi``) are permutation
tests of those labels, valid by construction; tests over pairs, templates or sentences (SEAT's own test
shuffles its sentences, five per profession) treat the units as independent, which the shared profession of
several units can break, and the false-positive rate shows whether it does. Every metric also gets the
**label-permutation test** (:func:`~biaskit.studies.calibration_stats.label_permutation_pvalue`), valid
whatever the units share; it is the only test of the KL score, whose study computes it without one (there it
asks whether the planted labelling's score is unusual, not which way it points).
:func:`~biaskit.studies.calibration_stats.effect_trend` asks whether an effect grows with ``s`` beyond noise,
and :func:`~biaskit.studies.calibration_stats.effects_by_item_group` where a measure can see the plan at all
(e.g. the causal ``shared`` reading, which sees a profession only in the pairs that name it after the
pronoun).

The parts (this module is their public front; ``from biaskit.studies import calibration as cal``):
:mod:`biaskit.studies.calibration_values` (controlled items, measures, values per unit),
:mod:`biaskit.studies.calibration_stats` (effects, tests, power, false positives, trends) and, here,
:func:`run_calibration` and its :class:`CalibrationResult`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from biaskit.core.registry import MetricValues
from biaskit.studies.calibration_stats import (
    ITEM_KINDS,
    Evaluation,
    effect_trend,
    effects_by_item_group,
    effects_by_planted_direction,
    evaluate,
    extrapolated_sample_size,
    false_positive_rate,
    grows_within_noise,
    ks_statistics,
    label_permutation_pvalue,
    power_curve,
    sample_size_for_power,
)
from biaskit.studies.calibration_values import (
    BLANK_TEMPLATES,
    FEMALE_WORDS,
    IBS_GENDER_WORDS,
    LPBS_TEMPLATES,
    MALE_WORDS,
    NO_EFFECT,
    PAIR_TEMPLATES,
    PARAPHRASE_TEMPLATES,
    PROFESSION_FIRST,
    PRONOUN_FIRST,
    SEAT_ATTRIBUTES,
    SEAT_TEMPLATES,
    SLD_TEMPLATES,
    TBE_TEMPLATES,
    calibration_measures,
    causal_language_model_values,
    control_blanks,
    control_pairs,
    fill_template,
    indirect_name_values,
    language_model_values,
    measure_values,
    pair_template_order,
    pmi_values,
    static_values,
)

__all__ = [
    "ITEM_SIZES",
    "TARGET_SIZES",
    "CalibrationResult",
    "finds_planted",
    "run_calibration",
    # defined in the modules above, re-exported here for their users (notebooks, tests, docs, the studies)
    "BLANK_TEMPLATES",
    "FEMALE_WORDS",
    "IBS_GENDER_WORDS",
    "ITEM_KINDS",
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
    "Evaluation",
    "MetricValues",
    "calibration_measures",
    "causal_language_model_values",
    "control_blanks",
    "control_pairs",
    "fill_template",
    "effect_trend",
    "effects_by_item_group",
    "effects_by_planted_direction",
    "evaluate",
    "extrapolated_sample_size",
    "false_positive_rate",
    "grows_within_noise",
    "indirect_name_values",
    "ks_statistics",
    "label_permutation_pvalue",
    "language_model_values",
    "measure_values",
    "pair_template_order",
    "pmi_values",
    "power_curve",
    "sample_size_for_power",
    "static_values",
]


def __getattr__(name: str) -> Any:
    """``LM_METRICS``, ``CAUSAL_LM_METRICS``, ``STATIC_METRICS`` and ``METRIC_LABELS``, read from the registry
    when used (:mod:`biaskit.studies.calibration_values`)."""
    from biaskit.studies import calibration_values

    if name in ("LM_METRICS", "CAUSAL_LM_METRICS", "STATIC_METRICS", "METRIC_LABELS"):
        return getattr(calibration_values, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --------------------------------------------------------------------------------------------
# the whole calibration
# --------------------------------------------------------------------------------------------
ITEM_SIZES: tuple[int, ...] = (20, 40, 80, 160, 320, 640)
TARGET_SIZES: tuple[int, ...] = (6, 10, 16, 24, 32, 40)


@dataclass
class CalibrationResult:
    """Tables of :func:`run_calibration`.

    ``effects``: one row per metric and skew (``metric, label, family, planted, effect, no_effect,
    p_value, toward_planted, n``).  ``power``: power curves at ``power_s``.  ``summary``: one row
    per metric (``n_for_80_power``, ``n_for_80_power_extrapolated``
    (:func:`~biaskit.studies.calibration_stats.extrapolated_sample_size`), ``fpr``, ``fpr_se``, ``monotone``
    (every step up), ``monotone_within_noise``
    (:func:`~biaskit.studies.calibration_stats.grows_within_noise`), ``found_at_0_8``).  ``trend``: the steps
    of each directional metric's effect between skews, with bootstrap intervals
    (:func:`~biaskit.studies.calibration_stats.effect_trend`).  ``values``: the per-unit values behind the
    tables, metric -> skew -> :class:`MetricValues`, for further analyses on the same units without scoring
    the models again (e.g. :func:`~biaskit.studies.calibration_stats.effects_by_item_group`).
    """

    effects: pd.DataFrame
    power: pd.DataFrame
    summary: pd.DataFrame
    alpha: float
    power_s: float
    n_resamples: int
    directions: dict[str, str]
    trend: pd.DataFrame = field(default_factory=pd.DataFrame)
    values: dict[str, dict[float, MetricValues]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Per metric and skew: planted, effect, p-value, power and false-positive rate."""
        out: dict[str, Any] = {}
        summ = self.summary.set_index("metric")
        for m, grp in self.effects.groupby("metric", sort=False):
            row = summ.loc[m]
            curve = self.power[self.power["metric"] == m]
            out[m] = {
                "label": _label(m),
                "family": grp["family"].iloc[0],
                "by_skew": [
                    {
                        "planted": float(r.planted),
                        "effect": float(r.effect),
                        "p_value": None if pd.isna(r.p_value) else float(r.p_value),
                        "p_value_label_permutation": None if pd.isna(r.p_label) else float(r.p_label),
                        "toward_planted": bool(r.toward_planted),
                        "n": int(r.n),
                    }
                    for r in grp.itertuples()
                ],
                "power": {
                    "planted": self.power_s,
                    "alpha": self.alpha,
                    "curve": {int(r.n): float(r.power) for r in curve.itertuples()},
                    "curve_label_permutation": {int(r.n): float(r.power_label) for r in curve.itertuples()},
                    "n_for_80_percent": None
                    if pd.isna(row["n_for_80_power"])
                    else int(row["n_for_80_power"]),
                    "n_for_80_percent_label_permutation": None
                    if pd.isna(row["n_for_80_power_label"])
                    else int(row["n_for_80_power_label"]),
                    # own test, normal approximation (extrapolated_sample_size); null: never or no closed form
                    "n_for_80_percent_extrapolated": None
                    if pd.isna(row["n_for_80_power_extrapolated"])
                    or np.isinf(row["n_for_80_power_extrapolated"])
                    else int(row["n_for_80_power_extrapolated"]),
                    "unit": None if curve.empty else curve["unit"].iloc[0],
                },
                "false_positive_rate": None if pd.isna(row["fpr"]) else float(row["fpr"]),
                "false_positive_rate_label_permutation": None
                if pd.isna(row["fpr_label"])
                else float(row["fpr_label"]),
                "false_positive_se": float(row["fpr_se"]),
                "monotone_in_s": bool(row["monotone"]),
                "monotone_within_noise": bool(row["monotone_within_noise"]),
                "trend": [
                    {
                        "from": float(r.from_s),
                        "to": float(r.to_s),
                        "step": float(r.step),
                        "ci_low": float(r.ci_low),
                        "ci_high": float(r.ci_high),
                    }
                    for r in self.trend[self.trend["metric"] == m].itertuples()
                ]
                if not self.trend.empty
                else [],
                "directional": bool(row["directional"]),
            }
        return out


def _monotone(effects: Sequence[float], ceiling: float | None = None) -> bool:
    """Whether the effect grows with every step of s; a share that has reached its ``ceiling`` (100 %) may
    stay there."""
    e = np.asarray(effects, float)
    d = np.diff(e)
    at_ceiling = np.zeros(d.shape, bool) if ceiling is None else np.isclose(e[1:], ceiling) & np.isclose(d, 0)
    return bool(np.all((d > 0) | at_ceiling))


def finds_planted(rows: pd.DataFrame, column: str = "p_value", level: float = 0.01) -> bool:
    """Whether the first of ``rows`` (a row of :attr:`CalibrationResult.effects`) finds the plan: it
    points to the planted gender and its p-value in ``column`` is below ``level`` (the calibration criterion:
    s = 0.8, level 0.01).

    A p-value of exactly 0 (a z test whose tail underflows) counts as found; a missing one does not.
    """
    if not len(rows):
        return False
    p = rows[column].iloc[0]
    return bool(rows["toward_planted"].iloc[0] and p is not None and not pd.isna(p) and p < level)


_FAMILY_OF_KIND = {"static": "static", "causal": "causal language model", "masked": "language model"}


def _chosen(wanted: Sequence[str] | None, model_kind: str) -> tuple[str, ...]:
    """The measures of ``model_kind`` to run, in registry order; an unknown one is an error."""
    known = calibration_measures(model_kind)
    if wanted is None:
        return tuple(known)
    unknown = [m for m in wanted if m not in known]
    if unknown:
        raise ValueError(f"unknown {model_kind} calibration measure(s) {unknown}; known: {', '.join(known)}")
    return tuple(m for m in known if m in set(wanted))


def _label(measure: str) -> str:
    cm = calibration_measures().get(measure)
    return cm.label if cm is not None else measure


def run_calibration(
    lms: Mapping[float, Any],
    vectors: Mapping[float, Any],
    corpora: Mapping[float, Sequence[Sequence[str]]] | None,
    directions: Mapping[str, str],
    *,
    alpha: float = 0.05,
    power_s: float = 0.6,
    n_resamples: int = 200,
    lm_metrics: Sequence[str] | None = None,
    causal_lms: Mapping[float, Any] | None = None,
    causal_metrics: Sequence[str] | None = None,
    progress: bool = False,
) -> CalibrationResult:
    """Every metric on every control: effects and p-values, power at ``power_s``, FPR at s = 0.5.

    ``lms`` / ``vectors`` / ``corpora`` map a planted skew to a masked LM, word vectors and the
    tokenised planted corpus (for PMI); ``directions`` is the planted plan (target -> gender).
    ``causal_lms`` maps skews to the causal twins of the controls
    (:func:`~biaskit.studies.calibration_values.causal_language_model_values`).

    The measures are the registry's (:func:`~biaskit.studies.calibration_values.calibration_measures`):
    ``lm_metrics`` / ``causal_metrics`` choose among those of the masked / causal controls (default: all of
    them); every static measure runs on ``vectors``.  Each is computed by its metric's hook ``values(call)``
    (:func:`~biaskit.studies.calibration_values.measure_values`: one
    :class:`~biaskit.core.registry.CalibrationCall` per control model, whose score cache the measures share).
    """
    targets = list(directions)
    causal_lms = causal_lms or {}
    measures = calibration_measures()
    chosen = {
        "masked": _chosen(lm_metrics, "masked"),
        "causal": _chosen(causal_metrics, "causal"),
        "static": tuple(calibration_measures("static")),
    }
    values: dict[float, dict[str, MetricValues]] = {}
    for s in sorted(set(lms) | set(vectors) | set(causal_lms)):
        v: dict[str, MetricValues] = {}
        for kind, model in (
            ("masked", lms.get(s)),
            ("causal", causal_lms.get(s)),
            ("static", vectors.get(s)),
        ):
            if model is None or not chosen[kind]:
                continue
            corpus = None if corpora is None or kind != "static" else corpora.get(s)
            v.update(
                measure_values(
                    model, kind, targets, metrics=chosen[kind], corpus=corpus, progress=progress, skew=s
                )
            )
        values[s] = v
    by_metric: dict[str, dict[float, MetricValues]] = {}  # the same values, metric -> skew
    for s, v in values.items():
        for m, mv in v.items():
            by_metric.setdefault(m, {})[s] = mv
    rows = []
    for s, v in values.items():
        for m, mv in v.items():
            ev = evaluate(mv, directions)
            rows.append(
                {
                    "metric": m,
                    "label": mv.label,
                    "family": _FAMILY_OF_KIND[measures[m].model_kind] if m in measures else "language model",
                    "planted": s,
                    "effect": ev.effect,
                    "effect_size": ev.effect_size,
                    "no_effect": NO_EFFECT[mv.kind],
                    "p_value": ev.p_value,
                    "p_label": ev.p_label,
                    "toward_planted": ev.toward_planted,
                    "n": ev.n,
                    "directional": mv.directional,
                }
            )
    effects = pd.DataFrame(rows)
    order = {m: i for i, m in enumerate((*chosen["masked"], *chosen["causal"], *chosen["static"]))}
    effects = effects.sort_values(
        ["metric", "planted"], key=lambda c: c.map(order) if c.name == "metric" else c
    )
    effects = effects.reset_index(drop=True)
    curves = []
    summary = []
    trends = []
    for m in effects["metric"].unique():
        by_s = by_metric[m]
        first = next(iter(by_s.values()))
        trend = effect_trend(by_s, directions) if len(by_s) > 1 and first.directional else pd.DataFrame()
        trends.append(trend)
        mv_p = by_s.get(power_s)
        curve = pd.DataFrame()
        if mv_p is not None and mv_p.directional:
            sizes = TARGET_SIZES if mv_p.kind == "groups" else ITEM_SIZES
            curve = power_curve(mv_p, directions, sizes, alpha=alpha, n_resamples=n_resamples)
            curves.append(curve)
        mv0 = by_s.get(0.5)
        fpr = (
            false_positive_rate(mv0, targets, alpha=alpha, n_resamples=n_resamples)
            if mv0 is not None and mv0.directional
            else None
        )
        eff = effects[effects["metric"] == m]
        at08 = eff[eff["planted"] == 0.8]

        summary.append(
            {
                "metric": m,
                "label": _label(m),
                "n_for_80_power": sample_size_for_power(curve) if not curve.empty else None,
                "n_for_80_power_label": sample_size_for_power(curve, column="power_label")
                if not curve.empty
                else None,
                "n_for_80_power_extrapolated": extrapolated_sample_size(mv_p, directions, alpha=alpha)
                if mv_p is not None and mv_p.directional
                else None,
                "fpr": None if fpr is None else fpr["fpr"],
                "fpr_label": None if fpr is None else fpr["fpr_label"],
                "fpr_se": float(np.sqrt(alpha * (1 - alpha) / n_resamples)),
                "monotone": _monotone(eff["effect"].to_numpy(), 100.0 if first.kind == "sign" else None)
                if bool(eff["directional"].iloc[0])
                else False,
                "monotone_within_noise": grows_within_noise(trend),
                "directional": bool(eff["directional"].iloc[0]),
                "found_at_0_8": finds_planted(at08, "p_value"),
                "found_at_0_8_label": finds_planted(at08, "p_label"),
            }
        )
    power = (
        pd.concat(curves, ignore_index=True)
        if curves
        else pd.DataFrame(columns=["metric", "n", "unit", "power", "power_label", "n_resamples"])
    )
    trend_cols = ["metric", "from_s", "to_s", "step", "ci_low", "ci_high", "rises", "falls"]
    trend_table = pd.concat(
        [t for t in trends if not t.empty] or [pd.DataFrame(columns=trend_cols)], ignore_index=True
    )
    return CalibrationResult(
        effects,
        power,
        pd.DataFrame(summary),
        alpha,
        power_s,
        n_resamples,
        dict(directions),
        trend_table,
        by_metric,
    )
