r"""The statistics of the metric-trust study, recomputed from its record: spread, sensitivity, detection,
false alarms, reliability and agreement of every measure; the ranked table, the findings and the figures.

Part of :mod:`biaskit.studies.metric_trust` (the study, its record and the definitions of every statistic;
that module re-exports every name here).  The input is a long table with one row per model and measure
(:func:`biaskit.studies.metric_trust.measure_rows`): ``kind, s, seed, measure, label, value_kind,
directional, effect, p_value, p_label, toward_planted, fpr, fpr_label, halves``.  Nothing here trains or
scores a model, so the statistics of a committed record are recomputed in a second.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

__all__ = [
    "DETECTION_SHARE",
    "N_BOOT",
    "TrustStatistics",
    "plain_number",
    "detection_table",
    "false_alarm_table",
    "icc",
    "kendall_agreement",
    "plot_agreement",
    "plot_effect_vs_strength",
    "ranked_table",
    "reliability_table",
    "sensitivity_table",
    "spearman_brown",
    "split_half",
    "spread_table",
    "statistics_from_json",
    "trust_findings",
    "trust_statistics",
]

#: share of seeds in which a measure's own test must find the plan for that strength to count as detected
DETECTION_SHARE = 0.8
#: seed-bootstrap draws of the sensitivity interval
N_BOOT = 2000
#: the balanced control: nothing planted
BALANCED = 0.5

_NOT_DIRECTIONAL = {
    "kl": "the KL score points to no gender and has no test of its own (its study computes none)",
    "agreement": (
        "the robustness agreement is a check of another measure's preferences, not a test of direction"
    ),
}


def _not_directional(value_kind: str) -> str:
    return _NOT_DIRECTIONAL.get(value_kind, "not a test of direction")


# =============================================================================================
# the formulas
# =============================================================================================
def icc(table: np.ndarray | pd.DataFrame, form: str = "2,1") -> float:
    r"""Intraclass correlation of an ``n`` subjects x ``k`` raters table (no missing cell).

    From the two-way ANOVA mean squares (rows :math:`MS_R`, columns :math:`MS_C`, residual :math:`MS_E`;
    Shrout & Fleiss 1979, McGraw & Wong 1996):

    * ``"2,1"``: two-way random effects, absolute agreement, one rater (McGraw & Wong's ICC(A,1))
      :math:`\frac{MS_R - MS_E}{MS_R + (k-1) MS_E + k (MS_C - MS_E)/n}`;
    * ``"3,1"``: two-way mixed effects, consistency, one rater (ICC(C,1))
      :math:`\frac{MS_R - MS_E}{MS_R + (k-1) MS_E}`.

    ``ValueError`` for fewer than two rows or columns, a missing value, or a table with no variation at all
    (the coefficient is 0 / 0).
    """
    y = np.asarray(table, dtype=float)
    if y.ndim != 2 or y.shape[0] < 2 or y.shape[1] < 2:
        raise ValueError(f"an ICC needs at least 2 subjects and 2 raters, got a table of shape {y.shape}")
    if not np.isfinite(y).all():
        raise ValueError("an ICC needs a complete table (a value for every subject and rater)")
    if form not in ("2,1", "3,1"):
        raise ValueError(f"form must be '2,1' or '3,1', not {form!r}")
    n, k = y.shape
    grand = y.mean()
    ms_r = k * ((y.mean(axis=1) - grand) ** 2).sum() / (n - 1)
    ms_c = n * ((y.mean(axis=0) - grand) ** 2).sum() / (k - 1)
    resid = y - y.mean(axis=1, keepdims=True) - y.mean(axis=0, keepdims=True) + grand
    ms_e = (resid**2).sum() / ((n - 1) * (k - 1))
    den = ms_r + (k - 1) * ms_e + (k * (ms_c - ms_e) / n if form == "2,1" else 0.0)
    if den <= 1e-15 * max(1.0, abs(grand)) ** 2:
        raise ValueError("no variation in the table: the ICC is 0 / 0")
    return float((ms_r - ms_e) / den)


def spearman_brown(r: float, factor: float = 2.0) -> float:
    r"""The Spearman-Brown prophecy: the reliability of a test ``factor`` times as long as one whose
    reliability is ``r``, :math:`\rho = \frac{f r}{1 + (f - 1) r}` (Spearman 1910; Brown 1910); with
    ``factor = 2`` the split-half step-up :math:`2r / (1 + r)`."""
    if factor <= 0:
        raise ValueError(f"factor must be positive, not {factor}")
    den = 1 + (factor - 1) * r
    if den == 0:
        raise ValueError(f"the Spearman-Brown formula is undefined at r = {r} with factor {factor}")
    return float(factor * r / den)


def split_half(halves: np.ndarray) -> dict[str, float | int]:
    """Split-half reliability from the halves' effects: ``halves[i, j, h]`` is the effect of half ``h`` (0, 1)
    of split ``j`` on model ``i``.

    For each split, :math:`r_j` is the Pearson correlation over the models of the two halves' effects and
    :math:`\\rho_j = 2 r_j / (1 + r_j)` its Spearman-Brown step-up (:func:`spearman_brown`); returns the means
    ``r`` and ``spearman_brown`` over the splits, ``n_models`` and ``n_splits`` (splits whose halves do not
    vary are left out).  ``ValueError`` when fewer than 3 models or no split can be used.
    """
    h = np.asarray(halves, dtype=float)
    if h.ndim != 3 or h.shape[2] != 2:
        raise ValueError(f"halves must have shape (models, splits, 2), not {h.shape}")
    rs, sbs = [], []
    for j in range(h.shape[1]):
        a, b = h[:, j, 0], h[:, j, 1]
        ok = np.isfinite(a) & np.isfinite(b)
        if ok.sum() < 3 or np.ptp(a[ok]) == 0 or np.ptp(b[ok]) == 0:
            continue
        r = float(np.corrcoef(a[ok], b[ok])[0, 1])
        rs.append(r)
        sbs.append(spearman_brown(r) if r > -1 else float("nan"))
    if h.shape[0] < 3:
        raise ValueError(f"a split-half correlation needs at least 3 models, got {h.shape[0]}")
    if not rs:
        raise ValueError("the halves' effects do not vary across models in any split")
    return {"r": float(np.mean(rs)), "spearman_brown": float(np.nanmean(sbs)), "n_models": int(h.shape[0]),
            "n_splits": len(rs)}  # fmt: skip


# =============================================================================================
# the tables
# =============================================================================================
def _measures(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per measure, in the order of the record: ``measure, label, kind, value_kind, directional``."""
    first = rows.drop_duplicates("measure")
    return first[["measure", "label", "kind", "value_kind", "directional"]].reset_index(drop=True)


def spread_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Seed-to-seed spread of each measure's effect at each ``s``: ``n_seeds, mean, sd`` (``ddof = 1``; NaN
    with one seed), ``min, max, range``."""
    g = rows.dropna(subset=["effect"]).groupby(["measure", "s"], sort=False)["effect"]
    out = pd.DataFrame(
        {"n_seeds": g.count(), "mean": g.mean(), "sd": g.std(ddof=1), "min": g.min(), "max": g.max()}
    ).reset_index()
    out["range"] = out["max"] - out["min"]
    return out


def _pooled_sd(sub: pd.DataFrame) -> float:
    """The pooled within-``s`` standard deviation:
    :math:`\\sqrt{\\sum_s \\sum_i (e_{si} - \\bar e_s)^2 / (N - S)}`."""
    dev = sub["effect"] - sub.groupby("s")["effect"].transform("mean")
    dof = len(sub) - sub["s"].nunique()
    return float(np.sqrt((dev**2).sum() / dof)) if dof > 0 else float("nan")


def sensitivity_table(
    rows: pd.DataFrame, *, n_boot: int = N_BOOT, random_state: int = 0
) -> tuple[pd.DataFrame, dict[str, str]]:
    r"""Each measure's slope against ``s`` (least squares over every model), its 95 % seed-bootstrap interval
    and the slope per 0.1 of ``s`` in units of the pooled within-``s`` seed SD (``per_sd``).

    Seed bootstrap: at each ``s`` the seeds are drawn with replacement (``n_boot`` times) and the slope
    refitted; the interval is the 2.5 and 97.5 percentiles.  Since each ``s`` keeps its count, the ``s``
    values are fixed and a draw's slope is :math:`\sum_i (s_i - \bar s) e^*_i / \sum_i (s_i - \bar s)^2`.
    Returns the table and the reasons of the measures (or columns) left empty.
    """
    rng = np.random.default_rng(random_state)
    out, reasons = [], {}
    for m in _measures(rows)["measure"]:
        sub = rows[(rows["measure"] == m) & rows["effect"].notna()]
        rec: dict[str, Any] = {"measure": m, "slope": None, "ci_low": None, "ci_high": None,
                               "pooled_sd": None, "per_sd": None}  # fmt: skip
        if sub["s"].nunique() < 2:
            reasons[m] = "needs models at two planted strengths or more"
            out.append(rec)
            continue
        s = sub["s"].to_numpy(float)
        e = sub["effect"].to_numpy(float)
        dx = s - s.mean()
        sxx = float((dx**2).sum())
        rec["slope"] = float((dx * e).sum() / sxx)
        idx = np.empty((n_boot, len(sub)), dtype=int)
        for s_val in np.unique(s):
            members = np.flatnonzero(s == s_val)
            idx[:, members] = rng.choice(members, size=(n_boot, len(members)), replace=True)
        boot = (e[idx] * dx[None, :]).sum(axis=1) / sxx
        if sub.groupby("s").size().max() >= 2:
            rec["ci_low"], rec["ci_high"] = (float(x) for x in np.percentile(boot, [2.5, 97.5]))
        sd = _pooled_sd(sub)
        rec["pooled_sd"] = None if not np.isfinite(sd) else sd
        if not np.isfinite(sd):
            reasons[m] = "one seed per planted strength: no seed-to-seed spread to compare the slope with"
        elif sd == 0:
            reasons[m] = (
                "its value is the same for every seed at each strength "
                "(it does not depend on the training seed)"
            )
        else:
            rec["per_sd"] = rec["slope"] * 0.1 / sd
        out.append(rec)
    return pd.DataFrame(out), reasons


def detection_table(
    rows: pd.DataFrame, *, alpha: float = 0.05, share: float = DETECTION_SHARE
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, str]]:
    """Per measure and planted ``s > 0.5``: how many seeds its own test detects in the planted direction
    (oriented effect toward the plan and ``p_value < alpha``), and per measure the smallest such ``s``
    detected in at least ``share`` of the seeds (``detectable_from``; ``None``: at no strength of the record),
    whether every stronger ``s`` is too (``holds_above``) and the strongest ``s`` looked at.  Returns
    ``(by_s, summary, reasons)``."""
    by_s, summary, reasons = [], [], {}
    for info in _measures(rows).itertuples():
        m = info.measure
        sub = rows[(rows["measure"] == m) & (rows["s"] > BALANCED)]
        rec: dict[str, Any] = {"measure": m, "detectable_from": None, "holds_above": None, "max_s": None}
        if not info.directional:
            reasons[m] = _not_directional(info.value_kind)
        elif sub.empty:
            reasons[m] = "no model with a planted strength above 0.5 in the record"
        elif sub["p_value"].isna().all():
            reasons[m] = "no test of its own"
        else:
            shares = {}
            for s_val, g in sub.groupby("s"):
                hit = g["toward_planted"].astype(bool) & (g["p_value"] < alpha)
                shares[float(s_val)] = float(hit.mean())
                by_s.append({"measure": m, "s": float(s_val), "n_seeds": len(g), "detected": int(hit.sum()),
                             "share": float(hit.mean())})  # fmt: skip
            passing = [s_val for s_val, v in shares.items() if v >= share]
            rec["max_s"] = max(shares)
            if passing:
                first = min(passing)
                rec["detectable_from"] = first
                rec["holds_above"] = all(v >= share for s_val, v in shares.items() if s_val >= first)
        summary.append(rec)
    return (
        pd.DataFrame(by_s, columns=["measure", "s", "n_seeds", "detected", "share"]),
        pd.DataFrame(summary),
        reasons,
    )


def _clopper_pearson(k: int, n: int) -> tuple[float, float]:
    ci = sps.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return float(ci.low), float(ci.high)


def false_alarm_table(rows: pd.DataFrame, *, alpha: float = 0.05) -> tuple[pd.DataFrame, dict[str, str]]:
    """False alarms on the balanced controls (``s = 0.5``) of each directional measure.

    ``flagged`` / ``n_seeds``: the balanced models whose own test gives ``p < alpha`` (either direction), with
    ``share`` and its Clopper-Pearson 95 % interval; ``flagged_label``: the same with the label-permutation
    test; ``fpr_within`` / ``fpr_label_within``: notebook 14's within-model rates (random relabellings of one
    balanced model's professions), the mean over the balanced seeds, and ``*_seed0`` those of the bundled
    model.
    """
    out, reasons = [], {}
    for info in _measures(rows).itertuples():
        m = info.measure
        sub = rows[(rows["measure"] == m) & np.isclose(rows["s"], BALANCED)]
        rec: dict[str, Any] = {"measure": m, "n_seeds": len(sub)}
        if not info.directional:
            reasons[m] = (
                _not_directional(info.value_kind) + " (notebook 14 gives it no false-positive rate either)"
            )
            out.append(rec)
            continue
        if sub.empty:
            reasons[m] = "no balanced (s = 0.5) model in the record"
            out.append(rec)
            continue
        own = sub["p_value"].dropna()
        if len(own):
            k = int((own < alpha).sum())
            lo, hi = _clopper_pearson(k, len(own))
            rec.update(flagged=k, share=k / len(own), ci_low=lo, ci_high=hi)
        else:
            reasons[m] = "no test of its own"
        lab = sub["p_label"].dropna()
        if len(lab):
            rec.update(flagged_label=int((lab < alpha).sum()), share_label=float((lab < alpha).mean()))
        rec["fpr_within"] = float(sub["fpr"].mean()) if sub["fpr"].notna().any() else None
        rec["fpr_label_within"] = float(sub["fpr_label"].mean()) if sub["fpr_label"].notna().any() else None
        seed0 = sub[sub["seed"] == 0]
        rec["fpr_seed0"] = (
            float(seed0["fpr"].iloc[0]) if len(seed0) and pd.notna(seed0["fpr"].iloc[0]) else None
        )
        rec["fpr_label_seed0"] = (
            float(seed0["fpr_label"].iloc[0]) if len(seed0) and pd.notna(seed0["fpr_label"].iloc[0]) else None
        )
        out.append(rec)
    return pd.DataFrame(out), reasons


def reliability_table(rows: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
    """ICC(2,1) of each measure's strengths x seeds table (seeds with a model at every strength) and its
    split-half reliability across professions (:func:`split_half`).  Returns the table and reasons
    (``"<measure>"`` for the ICC, ``"<measure>:split_half"`` for the split halves)."""
    out, reasons = [], {}
    for m in _measures(rows)["measure"]:
        sub = rows[rows["measure"] == m]
        rec: dict[str, Any] = {"measure": m, "icc": None, "icc_seeds": 0, "icc_strengths": 0,
                               "split_half_r": None, "split_half_sb": None,
                               "split_half_models": 0}  # fmt: skip
        wide = sub.pivot_table(index="s", columns="seed", values="effect", aggfunc="first").dropna(axis=1)
        rec["icc_seeds"], rec["icc_strengths"] = int(wide.shape[1]), int(wide.shape[0])
        try:
            rec["icc"] = icc(wide.to_numpy(), "2,1")
        except ValueError as exc:
            reasons[m] = f"ICC(2,1) not computed: {exc}"
        halves = [h for h in sub["halves"] if len(h)]
        try:
            if not halves or len({len(h) for h in halves}) != 1:
                raise ValueError("no split halves recorded" if not halves else "models with different splits")
            sh = split_half(np.array(halves, dtype=float))
            rec.update(
                split_half_r=sh["r"], split_half_sb=sh["spearman_brown"], split_half_models=sh["n_models"]
            )
        except ValueError as exc:
            reasons[f"{m}:split_half"] = f"split-half reliability not computed: {exc}"
        out.append(rec)
    return pd.DataFrame(out), reasons


def kendall_agreement(rows: pd.DataFrame) -> pd.DataFrame:
    """Kendall's tau-b (:func:`scipy.stats.kendalltau`) of every pair of measures over the models both
    measured, ``measure_a, measure_b, tau, p_value, n, same_models``: measures of one kind of model are paired
    model by model; measures of different kinds by planted strength and seed (different models trained on the
    same corpus; ``same_models`` false).  ``tau`` is NaN (with ``reason``) for fewer than 3 pairs or a
    constant measure."""
    info = _measures(rows).set_index("measure")
    wide = rows.pivot_table(index=["s", "seed"], columns="measure", values="effect", aggfunc="first")
    names = list(info.index)
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            x, y = wide.get(a), wide.get(b)
            rec: dict[str, Any] = {"measure_a": a, "measure_b": b, "tau": np.nan, "p_value": np.nan, "n": 0,
                                   "same_models": bool(info.loc[a, "kind"] == info.loc[b, "kind"]),
                                   "reason": None}  # fmt: skip
            if x is None or y is None:
                rec["reason"] = "no models in common"
                out.append(rec)
                continue
            ok = x.notna() & y.notna()
            rec["n"] = int(ok.sum())
            if rec["n"] < 3:
                rec["reason"] = "fewer than 3 models in common"
            elif x[ok].nunique() < 2 or y[ok].nunique() < 2:
                rec["reason"] = "a measure with the same value on every model"
            else:
                res = sps.kendalltau(x[ok].to_numpy(), y[ok].to_numpy())
                rec["tau"], rec["p_value"] = float(res.statistic), float(res.pvalue)
            out.append(rec)
    return pd.DataFrame(out)


# =============================================================================================
# all of them
# =============================================================================================
@dataclass
class TrustStatistics:
    """Every statistic of the study (:func:`trust_statistics`), one table each, and ``reasons``: measure ->
    statistic -> why it was not computed."""

    measures: pd.DataFrame
    spread: pd.DataFrame
    sensitivity: pd.DataFrame
    detection_by_s: pd.DataFrame
    detection: pd.DataFrame
    false_alarms: pd.DataFrame
    reliability: pd.DataFrame
    agreement: pd.DataFrame
    alpha: float
    share: float
    n_boot: int
    models: pd.DataFrame
    reasons: dict[str, dict[str, str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Every table as records (NaN as null) and the reasons."""

        def recs(df: pd.DataFrame) -> list[dict[str, Any]]:
            return [
                {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()}
                for r in df.astype(object).where(df.notna(), None).to_dict("records")
            ]

        return {
            "alpha": self.alpha,
            "detection_share": self.share,
            "n_boot": self.n_boot,
            "icc_form": "ICC(2,1): two-way random effects, absolute agreement, one rater (strengths x seeds)",
            "models": recs(self.models),
            "measures": recs(self.measures),
            "spread": recs(self.spread),
            "sensitivity": recs(self.sensitivity),
            "detection_by_s": recs(self.detection_by_s),
            "detection": recs(self.detection),
            "false_alarms": recs(self.false_alarms),
            "reliability": recs(self.reliability),
            "agreement": recs(self.agreement),
            "reasons": self.reasons,
        }


def statistics_from_json(data: Mapping[str, Any]) -> TrustStatistics:
    """The :class:`TrustStatistics` saved by :meth:`TrustStatistics.to_json` (a notebook's JSON), so that its
    sentences can be rebuilt from the numbers saved beside them (:func:`trust_findings`)."""
    tables = ("measures", "spread", "sensitivity", "detection_by_s", "detection", "false_alarms",
              "reliability", "agreement", "models")  # fmt: skip
    missing = [k for k in (*tables, "alpha", "detection_share", "n_boot") if k not in data]
    if missing:
        raise ValueError(f"not saved metric-trust statistics: missing {', '.join(missing)}")
    frames = {k: pd.DataFrame(list(data[k])) for k in tables}
    return TrustStatistics(
        **frames,
        alpha=float(data["alpha"]),
        share=float(data["detection_share"]),
        n_boot=int(data["n_boot"]),
        reasons={m: dict(r) for m, r in data.get("reasons", {}).items()},
    )


def trust_statistics(
    rows: pd.DataFrame,
    *,
    alpha: float = 0.05,
    share: float = DETECTION_SHARE,
    n_boot: int = N_BOOT,
    random_state: int = 0,
) -> TrustStatistics:
    """Every statistic of the study from its rows (:func:`biaskit.studies.metric_trust.measure_rows`)."""
    if rows.empty:
        raise ValueError("no measurements: the record holds no model")
    if not 0 < alpha < 1 or not 0 < share <= 1:
        raise ValueError(f"alpha must be in (0, 1) and share in (0, 1], got {alpha} and {share}")
    reasons: dict[str, dict[str, str]] = {}

    def note(stat: str, found: Mapping[str, str]) -> None:
        for key, why in found.items():
            m, _, sub = key.partition(":")
            reasons.setdefault(m, {})[sub or stat] = why

    sens, r = sensitivity_table(rows, n_boot=n_boot, random_state=random_state)
    note("sensitivity", r)
    by_s, det, r = detection_table(rows, alpha=alpha, share=share)
    note("detection", r)
    fa, r = false_alarm_table(rows, alpha=alpha)
    note("false_alarms", r)
    rel, r = reliability_table(rows)
    note("icc", r)
    per_model = rows.drop_duplicates(["kind", "s", "seed"])
    models = per_model.groupby("kind", sort=False).agg(
        models=("seed", "size"), seeds=("seed", "nunique"), strengths=("s", "nunique")
    )
    per_s = per_model.groupby(["kind", "s"], sort=False).size().groupby(level=0, sort=False)
    models["min_seeds"], models["max_seeds"] = per_s.min(), per_s.max()
    return TrustStatistics(
        measures=_measures(rows),
        spread=spread_table(rows),
        sensitivity=sens,
        detection_by_s=by_s,
        detection=det,
        false_alarms=fa,
        reliability=rel,
        agreement=kendall_agreement(rows),
        alpha=alpha,
        share=share,
        n_boot=n_boot,
        models=models.reset_index(),
        reasons=reasons,
    )


# =============================================================================================
# for a reader
# =============================================================================================
def _fmt(x: Any, digits: int = 2) -> str:
    return "—" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.{digits}f}"


def plain_number(x: Any) -> str:
    """Three significant digits in fixed-point notation (``0.0000411``, ``2.10``), never e-notation."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    if x == 0:
        return "0"
    return f"{x:.{max(0, 2 - math.floor(math.log10(abs(x))))}f}"


def ranked_table(st: TrustStatistics) -> pd.DataFrame:
    """One row per measure, best first: the smallest strength its own test detects in at least 80 % of the
    seeds (smaller first; measures that detect none, then those with no test of direction, last), then fewer
    false alarms across the balanced seeds, then the higher ICC.  Columns in plain words."""
    t = st.measures.merge(st.detection, on="measure").merge(st.false_alarms, on="measure", how="left")
    t = t.merge(st.sensitivity, on="measure").merge(st.reliability, on="measure")
    t["_det"] = [
        (0, d) if d is not None and not pd.isna(d) else ((1, 0.0) if directional else (2, 0.0))
        for d, directional in zip(t["detectable_from"], t["directional"], strict=True)
    ]
    t["_fa"] = t.get("share", pd.Series(np.nan, index=t.index)).fillna(2.0)
    t["_icc"] = -t["icc"].astype(float).fillna(-2.0)
    t = t.sort_values(["_det", "_fa", "_icc"], kind="stable").reset_index(drop=True)

    def detect(r: Any) -> str:
        if not r.directional:
            return "no test of direction"
        if r.detectable_from is None or pd.isna(r.detectable_from):
            return (
                "no test of its own"
                if r.measure in st.reasons and "detection" in st.reasons[r.measure]
                else f"not up to s = {r.max_s:g}"
                if r.max_s is not None and not pd.isna(r.max_s)
                else "—"
            )
        return f"s = {r.detectable_from:g}" + ("" if r.holds_above else " (not every stronger s)")

    def alarms(r: Any) -> str:
        if "flagged" not in t.columns or pd.isna(r.flagged):
            return "—"
        return f"{int(r.flagged)} of {int(r.n_seeds)}"

    return pd.DataFrame(
        {
            "measure": t["label"],
            "key": t["measure"],
            "model": t["kind"],
            "detects in ≥ 80 % of seeds from": [detect(r) for r in t.itertuples()],
            "balanced seeds its own test flags": [alarms(r) for r in t.itertuples()],
            "within-model false-positive rate (label test, notebook 14)": [
                "—" if pd.isna(v) else f"{v:.1%}"
                for v in t.get("fpr_label_within", pd.Series(np.nan, index=t.index))
            ],
            "seed SD (pooled over s)": [plain_number(v) for v in t["pooled_sd"]],
            "sensitivity (seed SDs per 0.1 of s)": [_fmt(v, 1) for v in t["per_sd"]],
            "ICC(2,1) across seeds": [_fmt(v) for v in t["icc"]],
            "split-half reliability (Spearman-Brown)": [_fmt(v) for v in t["split_half_sb"]],
        }
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _names(keys: Sequence[str], labels: Mapping[str, str]) -> str:
    """The measures' labels, separated by semicolons (a label may hold a comma)."""
    return "; ".join(f"{labels.get(k, k)}" for k in keys)


def _range_text(df: pd.DataFrame, col: str, labels: Mapping[str, str]) -> str:
    """``"ranges from 0.12 (A) to 0.98 (B)"``, or ``"is 1.00 for all 3 measures"`` when they agree to 2
    decimals."""
    lo, hi = df.loc[df[col].idxmin()], df.loc[df[col].idxmax()]
    if f"{lo[col]:.2f}" == f"{hi[col]:.2f}":
        return f"is {hi[col]:.2f} for " + (
            f"all {len(df)} measures" if len(df) > 1 else labels[hi["measure"]]
        )
    return f"ranges from {lo[col]:.2f} ({labels[lo['measure']]}) to {hi[col]:.2f} ({labels[hi['measure']]})"


def trust_findings(st: TrustStatistics) -> list[str]:
    """Plain sentences built only from the statistics (one per topic); the notebook shows them and saves
    them."""
    labels = dict(zip(st.measures["measure"], st.measures["label"], strict=True))
    out = []
    mod = st.models
    parts = [
        f"{_count(int(r.models), r.kind + ' model')} ({_count(int(r.seeds), 'seed')} x "
        f"{_count(int(r.strengths), 'strength')})"
        if int(r.models) == int(r.seeds) * int(r.strengths)
        else f"{_count(int(r.models), r.kind + ' model')} ({_count(int(r.strengths), 'strength')}, "
        f"{int(r.min_seeds)} to {int(r.max_seeds)} seeds each)"
        for r in mod.itertuples()
    ]
    out.append(f"The record holds {len(st.measures)} measures on " + "; ".join(parts) + ".")
    det = st.detection
    found = det[det["detectable_from"].notna()]
    directional = st.measures[st.measures["directional"]]["measure"]
    seeds_needed = (
        {k: math.ceil(st.share * k) for k in sorted(set(st.detection_by_s["n_seeds"].astype(int)))}
        if not st.detection_by_s.empty
        else {}
    )
    if len(directional):
        groups = []
        for s_val, g in found.groupby("detectable_from"):
            groups.append(f"From s = {s_val:g}: {_names(list(g['measure']), labels)}.")
        none = [m for m in directional if m in set(det["measure"]) and m not in set(found["measure"])
                and "detection" not in st.reasons.get(m, {})]  # fmt: skip
        text = (
            f"With its own test at α = {st.alpha:g}, {len(found)} of {len(directional)} directional measures "
            f"find the planted direction in at least {st.share:.0%} of the seeds"
        )
        text += ". " + " ".join(groups) if groups else "."
        if none:
            top = det.set_index("measure").loc[none, "max_s"].max()
            text += f" At no planted strength up to s = {top:g}: {_names(none, labels)}."
        if seeds_needed:
            text += " That is at least " + ", or ".join(
                f"{v} of {k} seed{'s' if k > 1 else ''}" for k, v in seeds_needed.items()
            )
            text += "."
        out.append(text)
    fa = st.false_alarms
    if "flagged" in fa.columns and fa["flagged"].notna().any():
        fa = fa[fa["flagged"].notna()]
        flagged = fa[fa["flagged"] > 0]
        counts = sorted({int(k) for k in fa["n_seeds"]})
        seeds = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"
        text = (
            f"On the balanced controls (s = 0.5, {seeds} seed{'s' if counts[-1] > 1 else ''} per measure), "
        )
        if flagged.empty:
            text += f"no measure's own test flagged a bias in any seed ({len(fa)} measures)."
        else:
            text += (
                "the own tests of "
                + _names(
                    [
                        f"{labels[r.measure]} ({int(r.flagged)} of {int(r.n_seeds)})"
                        for r in flagged.itertuples()
                    ],
                    {},
                )
                + f" flagged a bias at α = {st.alpha:g}; those of the other "
                f"{len(fa) - len(flagged)} flagged none."
            )
        if fa["fpr_label_within"].notna().any():
            w = fa["fpr_label_within"].dropna()
            text += (
                f" Notebook 14's within-model label-permutation rate, averaged over the balanced seeds, "
                f"ranges from {w.min():.1%} to {w.max():.1%} (nominal {st.alpha:.0%})."
            )
        out.append(text)
    rel = st.reliability.dropna(subset=["icc"])
    if len(rel):
        out.append(
            "ICC(2,1) (the share of a model's value explained by the planted strength rather than the "
            "training seed) " + _range_text(rel, "icc", labels) + "."
        )
    sh = st.reliability.dropna(subset=["split_half_sb"])
    if len(sh):
        out.append(
            "Split-half reliability across professions (Spearman-Brown) "
            + _range_text(sh, "split_half_sb", labels)
            + "."
        )
    ag = st.agreement.dropna(subset=["tau"])
    same = ag[ag["same_models"]]
    if len(same):
        lo, hi = same.loc[same["tau"].idxmin()], same.loc[same["tau"].idxmax()]
        pair = "pair" if len(same) == 1 else "pairs"
        text = f"Kendall's τ between measures read on the same models, over {len(same)} {pair}: "
        if len(same) == 1:
            text += f"{lo['tau']:.2f} ({labels[lo['measure_a']]} vs {labels[lo['measure_b']]})."
        else:
            text += (
                f"from {lo['tau']:.2f} ({labels[lo['measure_a']]} vs {labels[lo['measure_b']]}) "
                f"to {hi['tau']:.2f} ({labels[hi['measure_a']]} vs {labels[hi['measure_b']]}), "
                f"median {same['tau'].median():.2f}."
            )
        out.append(text)
    return out


def plot_effect_vs_strength(rows: pd.DataFrame, *, ncol: int = 4):
    """Small multiples, one per measure: each seed's effect against ``s`` (thin lines; the bundled seed 0
    darker), the band from the lowest to the highest seed at each ``s`` and the mean; the dotted line is the
    no-bias value of notebook 14 when the rows carry it.  Returns the matplotlib figure."""
    import matplotlib.pyplot as plt

    info = _measures(rows)
    ncol = max(1, min(ncol, len(info)))
    nrow = max(1, math.ceil(len(info) / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.6 * ncol, 2.8 * nrow), squeeze=False)
    for ax, r in zip(axes.ravel(), info.itertuples(), strict=False):
        sub = rows[rows["measure"] == r.measure].dropna(subset=["effect"])
        g = sub.groupby("s")["effect"]
        ax.fill_between(g.min().index, g.min().to_numpy(), g.max().to_numpy(), color="C0", alpha=0.2,
                        label="seed band (lowest-highest)")  # fmt: skip
        for seed, one in sub.groupby("seed"):
            one = one.sort_values("s")
            ax.plot(one["s"], one["effect"], color="C0" if seed else "black", lw=0.7 if seed else 1.2,
                    alpha=0.5 if seed else 0.9, marker="." if seed else "o", ms=3)  # fmt: skip
        ax.plot(g.mean().index, g.mean().to_numpy(), color="C3", lw=1.6, label="mean over seeds")
        if "no_effect" in sub.columns and sub["no_effect"].notna().any():
            ax.axhline(float(sub["no_effect"].dropna().iloc[0]), ls=":", color="grey", lw=0.8)
        ax.set_title(f"{r.label}\n({r.kind})", fontsize=8)
        ax.set_xlabel("planted strength s", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes.ravel()[len(info) :]:
        ax.axis("off")
    axes[0, 0].legend(fontsize=6, loc="upper left")
    fig.tight_layout()
    return fig


def plot_agreement(st: TrustStatistics):
    """Heatmap of Kendall's τ between every pair of measures (pairs of different model kinds, paired by
    strength and seed, are marked with a dot); grey: not computed.  Rows name each measure and its key,
    columns its key.  Returns the matplotlib figure."""
    import matplotlib.pyplot as plt

    keys = list(st.measures["measure"])
    labels = dict(zip(st.measures["measure"], st.measures["label"], strict=True))
    n = len(keys)
    mat = np.full((n, n), np.nan)
    cross = np.zeros((n, n), bool)
    pos = {k: i for i, k in enumerate(keys)}
    for r in st.agreement.itertuples():
        i, j = pos[r.measure_a], pos[r.measure_b]
        mat[i, j] = mat[j, i] = r.tau
        cross[i, j] = cross[j, i] = not r.same_models
    np.fill_diagonal(mat, 1.0)
    size = max(5.0, 0.42 * n + 2.5)
    fig, ax = plt.subplots(figsize=(size + 1.2, size))
    cmap = plt.get_cmap("RdBu_r").copy()
    cmap.set_bad("#dddddd")
    im = ax.imshow(np.ma.masked_invalid(mat), cmap=cmap, vmin=-1, vmax=1)
    for i in range(n):
        for j in range(n):
            if i != j and np.isfinite(mat[i, j]):
                ax.text(j, i, f"{mat[i, j]:.2f}" + ("·" if cross[i, j] else ""), ha="center", va="center",
                        fontsize=6, color="white" if abs(mat[i, j]) > 0.6 else "black")  # fmt: skip
    ax.set_xticks(range(n), keys, rotation=60, ha="right", fontsize=7)
    ax.set_yticks(
        range(n), [f"{labels[k][:40]}{'…' if len(labels[k]) > 40 else ''} ({k})" for k in keys], fontsize=7
    )
    fig.colorbar(im, ax=ax, shrink=0.7, label="Kendall's τ over the models")
    ax.set_title(
        "Do the measures rank the models alike? (· : different model kinds, paired by s and seed)", fontsize=9
    )
    fig.tight_layout()
    return fig
