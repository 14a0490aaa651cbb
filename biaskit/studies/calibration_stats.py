r"""The calibration's statistics on per-unit values: effect and tests, power, false positives, trends.

Part of :mod:`biaskit.studies.calibration` (its public front, which re-exports every name here):
:func:`evaluate` (the metric's own test and the label-permutation test), :func:`power_curve`,
:func:`sample_size_for_power`, :func:`extrapolated_sample_size`, :func:`false_positive_rate`,
:func:`effect_trend` and the splits of a metric's units (:func:`effects_by_item_group`,
:func:`effects_by_planted_direction`), all on :class:`~biaskit.core.registry.MetricValues`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from biaskit.core.registry import MetricValues
from biaskit.studies.calibration_values import NO_EFFECT


@dataclass(frozen=True)
class Evaluation:
    """Effect (oriented toward the planted gender), p-value and whether it points the planted way."""

    effect: float
    p_value: float | None
    toward_planted: bool
    n: int
    effect_size: float | None = None  # standardised (WEAT's d) for the group tests
    p_label: float | None = None  # label-permutation test (see :func:`label_permutation_pvalue`)


def _signs(directions: Mapping[str, str], target: np.ndarray) -> np.ndarray:
    return np.array([1.0 if directions[t] == "male" else -1.0 for t in target])


def evaluate(
    mv: MetricValues,
    directions: Mapping[str, str],
    *,
    n_permutations: int = 2000,
    random_state: int = 0,
    label_test: bool = True,
) -> Evaluation:
    """The metric's effect, its own test and the label-permutation test on ``mv``.

    ``p_value`` is the test the metric's study uses (proportion z test, t test, KS, the WEAT / SEAT /
    LPBS permutation test over units; ``None`` for the KL score, which its study does not test);
    ``p_label`` is :func:`label_permutation_pvalue` (``None`` for the robustness agreement, which
    relabelling cannot change).  For the KL score ``p_label`` says whether the planted labelling
    gives a score unusual among random labellings; it is not a test of direction.
    """
    ev = _own_test(mv, directions, n_permutations=n_permutations, random_state=random_state)
    if label_test and mv.label_testable:
        p = label_permutation_pvalue(mv, directions, n_permutations=n_permutations, random_state=random_state)
        ev = replace(ev, p_label=p)
    return ev


def _row_sums(x: np.ndarray, W: np.ndarray | None) -> np.ndarray:
    """Each row's sum over the units, unit ``i`` counted ``W[b, i]`` times in row ``b`` (once without
    ``W``)."""
    return x.sum(axis=1) if W is None else (W * x).sum(axis=1)


def _effects_for_signs(mv: MetricValues, S: np.ndarray, W: np.ndarray | None = None) -> np.ndarray:
    """The oriented effect for each row of ``S`` (rows: +-1 per unit, one labelling of the targets).

    ``W`` (same shape, optional) weights unit ``i`` by ``W[b, i]`` in row ``b``: a bootstrap draw's
    counts (:func:`effect_trend`); no weights is every unit once (the label-permutation test's hot
    path, which takes no extra work for it).  The KL score takes no weights.
    """
    if mv.kind == "sign":
        a = S * mv.value[None, :]
        nz = _row_sums(a != 0, W)
        return 100.0 * _row_sums(a > 0, W) / np.where(nz > 0, nz, 1)
    if mv.kind == "mean":
        return _row_sums(S * mv.value[None, :], W) / (S.shape[1] if W is None else W.sum(axis=1))
    if mv.kind == "groups":
        m = S > 0
        with np.errstate(invalid="ignore", divide="ignore"):  # a bootstrap draw without one side: NaN
            return _row_sums(np.where(m, mv.value, 0), W) / _row_sums(m, W) - _row_sums(
                np.where(~m, mv.value, 0), W
            ) / _row_sums(~m, W)
    if mv.kind in ("ks", "kl"):
        from biaskit.core.stats import kl_scores

        planted = np.where(S > 0, mv.male[None, :], mv.female[None, :])
        other = np.where(S > 0, mv.female[None, :], mv.male[None, :])
        if mv.kind == "kl":
            if W is not None:
                raise ValueError("the KL score takes no unit weights")
            return kl_scores(planted, other)
        return ks_statistics(planted, other, weights=W) * np.sign(_row_sums(planted - other, W))
    raise ValueError(f"no label-permutation statistic for kind {mv.kind!r}")


def ks_statistics(x: np.ndarray, y: np.ndarray, *, weights: np.ndarray | None = None) -> np.ndarray:
    """Two-sample Kolmogorov-Smirnov :math:`D = \\sup_t |F_x(t) - F_y(t)|` of each row pair of ``x`` and
    ``y``.

    ``x`` (r, n) and ``y`` (r, m): row ``i`` of each is one sample; returns the r statistics of
    :func:`scipy.stats.ks_2samp` (without its p-value) in one vectorised pass.  The two rows are
    merged and sorted, and :math:`n m (F_x - F_y)` is accumulated in integers (+m per x value,
    -n per y value), read only after the last of tied values, so D is exact, ties included.

    ``weights`` (r, n), for paired samples (``n = m``): value ``j`` of both rows counts
    ``weights[i, j]`` times, so that integer weights give the D of the samples with each value
    repeated (a bootstrap draw, :func:`effect_trend`); the ECDFs are then accumulated in floats.
    """
    x, y = np.atleast_2d(np.asarray(x, dtype=float)), np.atleast_2d(np.asarray(y, dtype=float))
    if x.shape[0] != y.shape[0] or x.shape[1] == 0 or y.shape[1] == 0:
        raise ValueError(f"ks_statistics needs row-aligned, non-empty samples; got {x.shape} and {y.shape}")
    n, m = x.shape[1], y.shape[1]
    z = np.concatenate([x, y], axis=1)
    order = np.argsort(z, axis=1)  # the order within tied values does not matter: D is read after the last
    zs = np.take_along_axis(z, order, axis=1)
    if weights is None:
        steps = np.where(order < n, m, -n)
        scale = n * m
    else:
        w = np.atleast_2d(np.asarray(weights, dtype=float))
        if w.shape != x.shape or n != m:
            raise ValueError(
                f"weights must match paired samples of equal size; got {w.shape}, {x.shape}, {y.shape}"
            )
        w = w / w.sum(axis=1, keepdims=True)
        steps = np.take_along_axis(np.concatenate([w, -w], axis=1), order, axis=1)
        scale = 1
    diff = np.cumsum(steps, axis=1)
    last_of_tie = np.ones_like(zs, dtype=bool)
    last_of_tie[:, :-1] = zs[:, 1:] != zs[:, :-1]
    return np.max(np.where(last_of_tie, np.abs(diff), 0), axis=1) / scale


def _profession_index(target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct professions of the units, and each unit's position among them."""
    targets = np.array(sorted(set(target.tolist())), dtype=object)
    pos = {t: i for i, t in enumerate(targets)}
    return targets, np.array([pos[t] for t in target])


def label_permutation_pvalue(
    mv: MetricValues, directions: Mapping[str, str], *, n_permutations: int = 2000, random_state: int = 0
) -> float:
    r"""Two-sided p-value of the oriented effect against random relabellings of the targets.

    Randomization inference for a planted design: under H0 (nothing planted) the model does not
    depend on which targets were labelled "male", so the observed labelling is one draw among all
    labellings with the same number of male targets.  The statistic is the metric's own effect
    (for KS, D signed by the direction of the mean difference; for the KL score, the score itself,
    :func:`biaskit.core.stats.kl_scores`); with :math:`T_0` the observed value,
    :math:`T_1 \dots T_P` those of ``n_permutations`` random labellings and :math:`c` their mean,
    :math:`p = (1 + \#\{|T_i - c| \ge |T_0 - c|\}) / (P + 1)` (ties within :math:`10^{-9}(1 + |T_0|)`
    count; the centred two-sided test of :func:`biaskit.core.permutation.permutation_test`).  Valid whatever
    the items share (a profession, a template, a global preference for one pronoun), which the metrics' own
    tests assume away; see :func:`false_positive_rate`.
    """
    from biaskit.core.permutation import LabelShuffles, permutation_test

    targets, unit_t = _profession_index(mv.target)
    lab = np.array([1.0 if directions[t] == "male" else -1.0 for t in targets])
    if mv.kind == "groups" and (lab[unit_t] > 0).all() | (lab[unit_t] < 0).all():
        return float("nan")
    perm = permutation_test(
        lambda labels: _effects_for_signs(mv, labels[:, unit_t]),
        LabelShuffles(lab, "relabellings of the targets"),
        alternative="two-sided",
        center="null_mean",
        finite_only=False,
        n_permutations=n_permutations,
        random_state=random_state,
    )
    return float(perm.p_value)


def _own_test(
    mv: MetricValues,
    directions: Mapping[str, str],
    *,
    n_permutations: int = 2000,
    random_state: int = 0,
) -> Evaluation:
    """The metric's effect and its study's own test with the planted ``directions``."""
    from biaskit.core.stats import (
        binomial_test,
        kl_divergence_score,
        ks_2samp_test,
        proportion_ztest,
        t_test_mean,
    )
    from biaskit.metrics.weat import permutation_pvalue, weat_effect_size

    d = _signs(directions, mv.target)
    a = d * mv.value
    n = int(a.size)
    if mv.kind == "sign":
        non_tie = a[a != 0]
        k = int((non_tie > 0).sum())
        effect = 100.0 * k / max(non_tie.size, 1)
        if not non_tie.size:
            p = None
        elif 0 < k < non_tie.size:
            p = proportion_ztest(k, int(non_tie.size)).p_value  # the thesis's test (sample-proportion SE)
        else:  # all or none toward: the z test is undefined, the exact test is not
            p = binomial_test(k, int(non_tie.size)).p_value
        return Evaluation(effect, p, effect > 50, n)
    if mv.kind == "mean":
        r = t_test_mean(a)
        return Evaluation(float(a.mean()), r.p_value, float(a.mean()) > 0, n)
    if mv.kind in ("ks", "kl"):
        planted = np.where(d > 0, mv.male, mv.female)
        other = np.where(d > 0, mv.female, mv.male)
        if mv.kind == "kl":
            return Evaluation(float(kl_divergence_score(planted, other).statistic), None, False, n)
        r = ks_2samp_test(planted, other)
        return Evaluation(float(r.statistic), r.p_value, float(np.mean(planted - other)) > 0, n)
    if mv.kind == "agreement":
        from biaskit.metrics.robustness import agreement_test

        if mv.other is None:
            raise ValueError(f"{mv.metric}: an agreement metric needs the paraphrased values (other)")
        # M_diff = PLL(planted version) - PLL(other version), of each pair and of its paraphrase; sign rule
        r = agreement_test(a, d * mv.other, pr_rob=NO_EFFECT["agreement"] / 100)
        return Evaluation(100.0 * r.details["agreeing"] / n, r.p_value, False, n)
    # groups: male-planted units vs female-planted units, permutation test of the labels
    s_m, s_f = mv.value[d > 0], mv.value[d < 0]
    if s_m.size == 0 or s_f.size == 0:
        return Evaluation(float("nan"), None, False, n)
    diff = float(s_m.mean() - s_f.mean())  # raw effect: grows with the planted skew (d saturates near 2)
    perm = permutation_pvalue(
        s_m - mv.value.mean(),
        s_f - mv.value.mean(),
        alternative="two-sided",
        n_permutations=n_permutations,
        random_state=random_state,
    )
    return Evaluation(
        diff, float(perm["p_value"]), bool(diff > 0), n, effect_size=float(weat_effect_size(s_m, s_f))
    )


def _units(mv: MetricValues) -> tuple[np.ndarray, bool]:
    """Resampling units: items for item tests, professions for group tests."""
    if mv.kind == "groups":
        return np.unique(mv.target), True
    return np.arange(mv.target.size), False


def power_curve(
    mv: MetricValues,
    directions: Mapping[str, str],
    sizes: Sequence[int],
    *,
    alpha: float = 0.05,
    n_resamples: int = 200,
    seed: int = 0,
    n_permutations: int = 200,
) -> pd.DataFrame:
    """Share of random subsets of ``n`` units (pairs/templates, or professions for group tests)
    in which the test finds the planted direction at ``alpha``; ``n`` above the pool is skipped.

    Subsets are drawn without replacement (so no unit counts twice); for group tests each subset
    keeps at least two professions of each planted gender.  For ``n`` well below the pool size this
    is the power for ``n`` fresh units like these; near the pool size the subsets overlap and the
    power tends to 0 or 1, whatever this model's own items show (read it as conditional on them).
    """
    units, by_target = _units(mv)
    rng = np.random.default_rng(seed)
    rows = []
    for n in sizes:
        if n > units.size or n < (4 if by_target else 2):
            continue
        hits = hits_label = 0
        for r in range(n_resamples):
            while True:
                pick = rng.choice(units, n, replace=False)
                if not by_target:
                    idx = pick
                    break
                g = [directions[t] for t in pick]
                if g.count("male") >= 2 and g.count("female") >= 2:
                    idx = np.flatnonzero(np.isin(mv.target, pick))
                    break
            ev = evaluate(mv.subset(idx), directions, n_permutations=n_permutations, random_state=r)
            hits += bool(ev.p_value is not None and ev.p_value < alpha and ev.toward_planted)
            hits_label += bool(ev.p_label is not None and ev.p_label < alpha and ev.toward_planted)
        rows.append(
            {
                "metric": mv.metric,
                "n": int(n),
                "unit": "profession" if by_target else mv.unit,
                "power": hits / n_resamples,
                "power_label": hits_label / n_resamples,
                "n_resamples": n_resamples,
            }
        )
    return pd.DataFrame(rows)


def sample_size_for_power(curve: pd.DataFrame, power: float = 0.8, *, column: str = "power") -> int | None:
    """Smallest ``n`` of ``curve`` whose power (``column``) reaches ``power`` (None: none does)."""
    ok = curve.loc[curve[column] >= power, "n"]
    return int(ok.min()) if len(ok) else None


def extrapolated_sample_size(
    mv: MetricValues, directions: Mapping[str, str], *, alpha: float = 0.05, power: float = 0.8
) -> float | None:
    r"""Units the metric's own test needs for ``power`` at ``alpha``, extrapolated from the effect on all
    units.

    Where :func:`power_curve` runs out of items ("more than the 640 pairs available"), a standard
    sample-size calculation says how many *more* items like these it would take, assuming independent
    units, as the tests themselves do (:func:`false_positive_rate` shows where that fails).  Two-sided
    power; the answer is the smallest integer ``n`` that reaches ``power`` (Cohen 1988, *Statistical
    Power Analysis for the Behavioral Sciences*, ch. 2 and 6):

    * ``sign`` (share of non-tied units toward the plan, :math:`\hat p`): one-sample proportion test,
      Cohen's :math:`h = 2\arcsin\sqrt{\hat p} - 2\arcsin\sqrt{0.5}`, power
      :math:`\Phi(h\sqrt n - z_{1-\alpha/2}) + \Phi(-h\sqrt n - z_{1-\alpha/2})` (statsmodels'
      ``NormalIndPower`` with ``ratio=0``): the number of non-tied units;
    * ``mean`` (oriented values :math:`a`): one-sample t test, :math:`d = \bar a / s_a`, noncentral t with
      :math:`n - 1` degrees of freedom and noncentrality :math:`d\sqrt n` (scipy; statsmodels'
      ``TTestPower`` returns NaN for 1 degree of freedom and a large noncentrality);
    * ``groups``: two-sample t test of the planted-male and planted-female units (the permutation test's
      large-sample equivalent), Cohen's :math:`d` with the pooled within-group SD, noncentral t with
      :math:`2m - 2` degrees of freedom and noncentrality :math:`d\sqrt{m/2}` for :math:`m` units per
      group: the number of professions, both groups together, at least 4 (a profession brings all its
      units, e.g. SEAT's five sentences, which its test counts as independent).

    Returns ``math.inf`` when the effect does not point to the plan (no number of such units would find it)
    or would need more than a billion of them, and ``None`` for the kinds without a closed form (``ks``,
    ``kl``, ``agreement``).
    """
    import math

    from scipy import stats
    from statsmodels.stats.power import NormalIndPower
    from statsmodels.stats.proportion import proportion_effectsize

    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must be in (0, 1); got {alpha}, {power}")

    def t_power(df: int, ncp: float) -> float:
        crit = stats.t.ppf(1 - alpha / 2, df)
        wrong_side = stats.nct.cdf(-crit, df, ncp)  # underflows to NaN for a large ncp, where it is 0
        return float(stats.nct.sf(crit, df, ncp) + (wrong_side if np.isfinite(wrong_side) else 0.0))

    a = _signs(directions, mv.target) * mv.value
    if mv.kind == "sign":
        non_tie = a[a != 0]
        share = float((non_tie > 0).mean()) if non_tie.size else 0.5
        if share <= 0.5:
            return math.inf
        h = float(proportion_effectsize(share, 0.5))
        return float(_smallest_n(lambda n: NormalIndPower().power(h, n, alpha, ratio=0), power, start=1))
    if mv.kind == "mean":
        if a.size < 2 or a.mean() <= 0:
            return math.inf
        d = float(a.mean() / a.std(ddof=1))
        return float(_smallest_n(lambda n: t_power(n - 1, d * np.sqrt(n)), power))
    if mv.kind == "groups":
        sign = _signs(directions, mv.target)
        s_m, s_f = mv.value[sign > 0], mv.value[sign < 0]
        if s_m.size < 2 or s_f.size < 2 or s_m.mean() <= s_f.mean():
            return math.inf
        pooled = np.sqrt(
            ((s_m.size - 1) * s_m.var(ddof=1) + (s_f.size - 1) * s_f.var(ddof=1)) / (s_m.size + s_f.size - 2)
        )
        d = float((s_m.mean() - s_f.mean()) / pooled)
        m = _smallest_n(lambda n: t_power(2 * n - 2, d * np.sqrt(n / 2)), power)  # units per group
        per_profession = mv.target.size / np.unique(mv.target).size  # SEAT: several sentences per profession
        return float(max(4, math.ceil(2 * m / per_profession))) if math.isfinite(m) else math.inf
    return None


def _smallest_n(power_at: Any, target: float, *, start: int = 2, limit: int = 10**9) -> float:
    """The smallest integer ``n >= start`` with ``power_at(n) >= target`` (power grows with n), ``math.inf``
    beyond ``limit``: doubling, then bisection, where a root finder (statsmodels' ``solve_power``) fails to
    converge for very large effects."""
    if power_at(start) >= target:
        return start
    lo, hi = start, 2 * start
    while power_at(hi) < target:
        lo, hi = hi, 2 * hi
        if hi > limit:
            return float("inf")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if power_at(mid) < target else (lo, mid)
    return hi


def false_positive_rate(
    mv: MetricValues,
    targets: Sequence[str],
    *,
    alpha: float = 0.05,
    n_resamples: int = 200,
    seed: int = 0,
    n_permutations: int = 200,
) -> dict[str, float]:
    """Share of resamples in which the test rejects H0 (either direction) on a balanced control.

    Each resample draws new balanced labels (half the targets "male") at random, uses every unit and
    runs the test; on the s = 0.5 corpus no labelling is planted, so every rejection is a false
    positive.  Returns ``fpr``, its binomial standard error ``se`` and ``n_resamples``.
    """
    from biaskit.core.permutation import random_relabellings

    rng = np.random.default_rng(seed)
    targets = list(targets)
    half = len(targets) // 2
    rejections = rejections_label = 0
    for r in range(n_resamples):
        order = random_relabellings(np.arange(len(targets)), 1, rng)[0]  # = rng.permutation(len(targets))
        labels = {targets[i]: ("female" if k < half else "male") for k, i in enumerate(order)}
        ev = evaluate(mv, labels, n_permutations=n_permutations, random_state=r)
        rejections += bool(ev.p_value is not None and ev.p_value < alpha)
        rejections_label += bool(ev.p_label is not None and ev.p_label < alpha)
    return {
        "fpr": rejections / n_resamples if mv.kind != "kl" else None,  # the KL score has no own test
        "fpr_label": rejections_label / n_resamples if mv.label_testable else None,
        "se": float(np.sqrt(alpha * (1 - alpha) / n_resamples)),
        "n_resamples": n_resamples,
    }


def effect_trend(
    values: Mapping[float, MetricValues],
    directions: Mapping[str, str],
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Does a metric's effect grow with the planted skew beyond noise?  Steps with bootstrap intervals.

    ``values`` maps each skew s to the metric's values on that control: the same items (same
    targets in the same order) scored by each model.  For each step between neighbouring skews, and
    from the first to the last, the change of the oriented effect (:func:`_effects_for_signs`; for
    KS the D signed toward the plan) and its percentile bootstrap interval at ``level``: the
    professions are drawn with replacement (a cluster bootstrap: the items of one profession share it),
    the *same* draw for every skew, so each interval is that of a paired difference.  A step
    ``falls`` when its interval lies below 0, ``rises`` when above.  Efron & Tibshirani (1993),
    *An Introduction to the Bootstrap*, ch. 13 (percentile interval); Davison & Hinkley (1997) 3.8
    (clustered data).  The issue's criterion "the effect grows monotonically over s" read with
    its noise: the first-to-last step rises and no step falls.

    Returns one row per step: ``metric, from_s, to_s, step, ci_low, ci_high, rises, falls``.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1); got {level}")
    skews = sorted(values)
    if len(skews) < 2:
        raise ValueError(f"effect_trend needs values at two skews at least; got {skews}")
    first = values[skews[0]]
    if not first.directional:
        raise ValueError(
            f"{first.metric}: a {first.kind} score points to no gender; it has no trend toward a plan"
        )
    for s in skews[1:]:
        mv = values[s]
        if (
            mv.kind != first.kind
            or mv.target.shape != first.target.shape
            or (mv.target != first.target).any()
        ):
            raise ValueError(
                f"{first.metric}: the values at s = {s} are not the same items as at s = {skews[0]} "
                "(effect_trend pairs the skews item by item)"
            )
    targets, unit_t = _profession_index(first.target)
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(targets.size, np.full(targets.size, 1.0 / targets.size), size=n_boot)
    W = np.vstack([np.ones(first.target.size), counts[:, unit_t]]).astype(float)  # row 0: the sample itself
    S = np.broadcast_to(_signs(directions, first.target), W.shape)
    E = {s: _effects_for_signs(values[s], S, W) for s in skews}
    tail = 100 * (1 - level) / 2
    steps = [*itertools.pairwise(skews)] + ([(skews[0], skews[-1])] if len(skews) > 2 else [])
    rows = []
    for a, b in steps:
        d = E[b] - E[a]
        boot = d[1:][np.isfinite(d[1:])]
        lo, hi = np.percentile(boot, [tail, 100 - tail]) if boot.size else (np.nan, np.nan)
        rows.append(
            {
                "metric": first.metric,
                "from_s": float(a),
                "to_s": float(b),
                "step": float(d[0]),
                "ci_low": float(lo),
                "ci_high": float(hi),
                "rises": bool(lo > 0),
                "falls": bool(hi < 0),
            }
        )
    return pd.DataFrame(rows)


def grows_within_noise(trend: pd.DataFrame) -> bool:
    """Whether an :func:`effect_trend` table shows growth: the first-to-last step rises, no step falls."""
    if trend.empty:
        return False
    whole = trend[(trend["from_s"] == trend["from_s"].min()) & (trend["to_s"] == trend["to_s"].max())]
    return bool(whole["rises"].all() and not trend["falls"].any())


def effects_by_item_group(
    values: Mapping[float, MetricValues],
    directions: Mapping[str, str],
    groups: Sequence[str] | np.ndarray,
    *,
    n_permutations: int = 2000,
    n_boot: int = 2000,
) -> pd.DataFrame:
    """One metric on each group of its items separately: effect and tests at every skew, and growth with s.

    Where can a measure see the plan?  ``values`` maps each skew to the metric's values on the *same*
    items (as for :func:`effect_trend`), and ``groups[i]`` names the group of item ``i``, e.g. the
    ``order`` column of :func:`~biaskit.studies.calibration_values.control_pairs`
    (:func:`~biaskit.studies.calibration_values.pair_template_order`).  Each group is measured on its own with
    :func:`evaluate` (the metric's own test and the label-permutation test) and :func:`effect_trend` /
    :func:`grows_within_noise` (``grows``; ``None`` for a score that points to no gender).  A measure that
    responds to the plan only in some groups is diluted by the others when all its items are pooled.

    Returns one row per group and skew: ``metric, group, planted, n, effect, p_value, p_label,
    toward_planted, grows``, groups in order of first appearance.
    """
    skews = sorted(values)
    if not skews:
        raise ValueError("effects_by_item_group needs the values at one skew at least")
    first = values[skews[0]]
    g = np.asarray(groups, dtype=object)
    if g.shape != first.target.shape:
        raise ValueError(f"{first.metric}: {g.size} group labels for {first.target.size} items")
    rows = []
    for name in dict.fromkeys(g.tolist()):
        idx = np.flatnonzero(g == name)
        sub = {s: values[s].subset(idx) for s in skews}
        grows = (
            grows_within_noise(effect_trend(sub, directions, n_boot=n_boot))
            if first.directional and len(skews) > 1
            else None
        )
        for s in skews:
            ev = evaluate(sub[s], directions, n_permutations=n_permutations)
            rows.append(
                {
                    "metric": first.metric,
                    "group": name,
                    "planted": float(s),
                    "n": ev.n,
                    "effect": ev.effect,
                    "p_value": ev.p_value,
                    "p_label": ev.p_label,
                    "toward_planted": ev.toward_planted,
                    "grows": grows,
                }
            )
    return pd.DataFrame(rows)


#: the kinds of measure whose effect is read item by item (a share of pairs or blanks, a mean over items)
ITEM_KINDS: tuple[str, ...] = ("sign", "mean")


def effects_by_planted_direction(
    values: Mapping[str, Mapping[float, MetricValues]],
    directions: Mapping[str, str],
    *,
    metrics: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Each item-based measure on the items of the male-planted and the female-planted professions apart.

    A pooled share such as "cp prefers the planted gender in 73 % of the pairs" mixes two things: the
    plan, and the model's overall preference for one pronoun whatever the profession.  A model that
    prefers *she* everywhere scores high on the female-planted professions and low on the male-planted
    ones; the pooled share is their average.  ``values`` is ``CalibrationResult.values`` (metric
    -> skew -> :class:`MetricValues`); only the measures read item by item (kind ``"sign"``: the share
    of pairs or blanks toward the planted gender, in %; kind ``"mean"``: the mean difference toward it)
    are split, and ``metrics`` narrows them further.

    Returns one row per metric and skew: ``metric, kind, unit, planted, pooled, n`` (the effect of
    :func:`evaluate` on all items), ``male_planted, n_male, p_male`` and ``female_planted, n_female,
    p_female`` (the same effect and the measure's own test on the items of each side's professions),
    and ``toward_female``: the model's preference for the female version whatever the plan (kind
    ``"sign"``: the share of untied items whose female version scores higher, in %; kind ``"mean"``:
    the mean of female minus male), so that ``pooled`` can be read against it.
    """
    wanted = None if metrics is None else set(metrics)
    rows = []
    for metric, by_skew in values.items():
        if wanted is not None and metric not in wanted:
            continue
        for s in sorted(by_skew):
            mv = by_skew[s]
            if mv.kind not in ITEM_KINDS or mv.unit == "profession":
                continue
            planted = np.array([directions[t] for t in mv.target], dtype=object)
            pooled = _own_test(mv, directions)
            if mv.kind == "sign":
                untied = mv.value[mv.value != 0]
                toward_female = 100.0 * float((untied < 0).sum()) / max(untied.size, 1)
            else:
                toward_female = float(-mv.value.mean())
            row: dict[str, Any] = {
                "metric": metric,
                "kind": mv.kind,
                "unit": mv.unit,
                "planted": float(s),
                "pooled": pooled.effect,
                "n": pooled.n,
            }
            for side in ("male", "female"):
                idx = np.flatnonzero(planted == side)
                ev = _own_test(mv.subset(idx), directions) if idx.size else None
                row[f"{side}_planted"] = float("nan") if ev is None else ev.effect
                row[f"n_{side}"] = int(idx.size)
                row[f"p_{side}"] = None if ev is None else ev.p_value
            row["toward_female"] = toward_female
            rows.append(row)
    return pd.DataFrame(rows)
