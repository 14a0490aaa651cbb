"""Louis-Alexandre (2022, seed 004) recomputed from its printed tables, without a model: the user study
(Figs. 5.1/5.2 from the answers of Tables C.1/C.2), the table-view frame of Tables 3.6/A.1-A.4 and the
internal consistency checks of the published tables.

Nothing here computes a score of a model; the indirect score is :mod:`biaskit.metrics.indirect_bias`,
and the tables are loaded by :func:`biaskit.data.louis_alexandre.load_louis_alexandre_tables`.

=================================  =================================================================
:func:`user_study_likert`          the Likert answers behind Figs. 5.1/5.2, one row per (item, prototype)
:func:`published_correlation_frame`  Tables 3.6/A.1-A.4 as a tidy frame for the table view
:func:`check_published_tables`     the tables' internal consistency, recomputed
=================================  =================================================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from biaskit.data.louis_alexandre import load_louis_alexandre_tables, load_user_study_figures

__all__ = ["check_published_tables", "published_correlation_frame", "user_study_likert"]


# =============================================================================================
# the user study (chapter 5)
# =============================================================================================
def user_study_likert(
    *, tables: Mapping[str, Any] | None = None, figures: Mapping[str, Any] | None = None
) -> pd.DataFrame:
    r"""The published Likert answers behind Figs. 5.1/5.2 of seed 004, one row per (item, prototype).

    The thesis's Tables C.1/C.2 (Appendix C.2, p. 123) print every participant's answer (0-9; 5 per
    prototype, between-subjects); its Figs. 5.1/5.2 draw them but their numbers are not printed, so the
    summaries here are **computed from the printed answers** (exact, not read off a figure):
    ``mean`` :math:`= \frac1n \sum_i x_i`, ``sd`` the sample SD (``ddof=1``), ``min``/``max``, ``n``
    and the five ``answers`` (P1..P5 as printed; table-based P4's "8,5" read as 8.5).  Columns:
    ``group`` (C.1's row group = the Fig. 5.2 panel), ``item``, ``question`` (C.1 wording), ``low``/``high``
    (the scale anchors), ``prototype`` (``table_based`` / ``scatterplot_based``), ``fig_5_1_panel``
    (``a`` table-based, ``b`` scatterplot-based), ``fig_5_2_panel`` (``a``/``b``/``c``).  Only the 11
    evaluation items; the "User background" rows are not an evaluation and are left out.
    """
    t = tables if tables is not None else load_louis_alexandre_tables()
    fig = figures if figures is not None else load_user_study_figures()
    answers = t["user_study_likert"]["items"]
    p51 = {v["prototype"]: k for k, v in fig["figures"]["5.1"]["panels"].items()}
    p52 = {v["group"]: k for k, v in fig["figures"]["5.2"]["panels"].items()}
    rows = []
    for item, meta in fig["items"].items():
        if item not in answers:
            raise KeyError(f"item {item!r} of the figure layout is not in Tables C.1/C.2")
        if answers[item]["group"] != meta["group"]:
            raise ValueError(f"item {item!r}: group {meta['group']!r} differs from Tables C.1/C.2")
        for proto in fig["prototypes"]:
            x = np.asarray(answers[item][proto], dtype=np.float64)
            rows.append(
                {
                    "group": meta["group"],
                    "item": item,
                    "question": meta["question"],
                    "low": meta["low"],
                    "high": meta["high"],
                    "prototype": proto,
                    "n": len(x),
                    "mean": float(x.mean()),
                    "sd": float(x.std(ddof=1)) if len(x) > 1 else float("nan"),
                    "min": float(x.min()),
                    "max": float(x.max()),
                    "answers": tuple(float(v) for v in x),
                    "fig_5_1_panel": p51[proto],
                    "fig_5_2_panel": p52[meta["group"]],
                }
            )
    return pd.DataFrame(rows)


# =============================================================================================
# the published tables: fixtures for the views and internal checks
# =============================================================================================
def published_correlation_frame(
    *, corrected: bool = True, tables: Mapping[str, Any] | None = None
) -> pd.DataFrame:
    """Tables 3.6/A.1-A.4 (correlation of direct and indirect scores) as a tidy frame for the table view.

    Columns ``model, target_category, feature_category, target, feature, r``: ``target`` = the target
    category (columns of the printed tables), ``feature`` = the feature category (rows), split into
    ``feature_category`` ``"non-sensitive"`` / ``"sensitive"`` as the thesis's two row dropdowns;
    ``target_category`` is ``"category"``.  ``corrected`` applies the xl-base Country-row fix.
    Diagonal cells ("-") are NaN.
    """
    t = tables if tables is not None else load_louis_alexandre_tables()
    src = t["direct_vs_indirect_correlation"]["corrected" if corrected else "as_printed"]
    sensitive = {"Age", "Year of Birth", "Gender", "Race", "Religion", "Sexual Orientation"}
    rows = []
    for model, tab in src.items():
        for feat, vals in tab["rows"].items():
            for tgt, v in zip(tab["columns"], vals, strict=True):
                rows.append(
                    (
                        model,
                        "category",
                        "sensitive" if feat in sensitive else "non-sensitive",
                        tgt,
                        feat,
                        np.nan if v is None else float(v),
                    )
                )
    return pd.DataFrame(
        rows, columns=["model", "target_category", "feature_category", "target", "feature", "r"]
    )


def _denominators(values: Sequence[float], candidates: Sequence[int]) -> list[int]:
    """Sample sizes ``n`` for which every percentage is ``100 k / n`` as printed: rounded to one decimal
    or to an integer, rounded twice (to two, then one decimal) or truncated to one decimal (Table 3.2
    mixes these: 56/101 = 55.45 is printed 55.4 for xl-large and 55.5 for xl-base)."""

    def half_up(x: np.ndarray, d: int) -> np.ndarray:
        return np.floor(x * 10**d + 0.5 + 1e-9) / 10**d

    ok = []
    for n in candidates:
        pct = 100.0 * np.arange(n + 1) / n
        forms = np.concatenate(
            [half_up(pct, 1), half_up(pct, 0), half_up(half_up(pct, 2), 1), np.floor(pct * 10 + 1e-9) / 10]
        )
        if all(np.any(np.isclose(forms, v)) for v in values):
            ok.append(int(n))
    return ok


def check_published_tables(tables: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Internal consistency of the seed 004 tables, recomputed (what can be checked without the models).

    * ``table_3_5_vs_appendix``: Table 3.5's "gender-defining words" column against the
      Gender x Occupation cells of Tables A.1-A.4 (the same correlation printed twice);
    * ``diff_rank_errors``: rank-table cells where the printed Diff. Rank is not Female - Male Rank;
    * ``top10_overlap``: occupations in both the direct and the indirect top-10 (Tables 3.3/3.4; the
      colouring of the original is lost), on the printed words (typos included);
    * ``table_4_1``: signs of the *beer* scores (indirect negative for every female word, direct not);
    * ``table_3_2_n``: the numbers of occupations consistent with every Table 3.2 percentage;
    * ``likert_means``: mean questionnaire answer per item and prototype (Tables C.1/C.2).
    """
    t = tables if tables is not None else load_louis_alexandre_tables()
    corr = t["direct_vs_indirect_correlation"]["corrected"]
    t35 = {}
    for model, (words_r, _f, _m) in t["table_3_5"]["rows"].items():
        cell = corr[model]["rows"]["Gender"][corr[model]["columns"].index("Occupation")]
        t35[model] = {
            "table_3_5": words_r,
            "appendix": cell,
            "equal_at_4_decimals": bool(round(words_r, 4) == cell),
        }
    errors = []
    for occ, by in t["gender_rank_tables"]["occupations"].items():
        for method, rows in by.items():
            for model, r in rows.items():
                d = r["female_rank"] - r["male_rank"]
                if d != r["diff_rank_printed"]:
                    errors.append(
                        {
                            "occupation": occ,
                            "method": method,
                            "model": model,
                            "printed": r["diff_rank_printed"],
                            "recomputed": d,
                        }
                    )
    overlap: dict[str, dict[str, list[str]]] = {}
    for gender, key in (("female", "table_3_3_female_top10"), ("male", "table_3_4_male_top10")):
        for model, lists in t[key]["lists"].items():
            overlap.setdefault(gender, {})[model] = sorted(set(lists["direct"]) & set(lists["indirect"]))
    beer = t["table_4_1"]["rows"]
    female_words = ("female", "girl", "woman")
    t41 = {
        "indirect_negative_for_all_female_words": all(beer[w][1] < 0 for w in female_words),
        "direct_negative_for_all_female_words": all(beer[w][0] < 0 for w in female_words),
        "direct_signs": {w: int(np.sign(beer[w][0])) for w in beer},
        "indirect_signs": {w: int(np.sign(beer[w][1])) for w in beer},
    }
    values = [
        v
        for model in t["table_3_2"]["values"].values()
        for feat in model.values()
        for thr in feat.values()
        for v in thr.values()
    ]
    likert = {
        item: {
            "table_based": float(np.mean(v["table_based"])),
            "scatterplot_based": float(np.mean(v["scatterplot_based"])),
        }
        for item, v in t["user_study_likert"]["items"].items()
    }
    return {
        "table_3_5_vs_appendix": t35,
        "diff_rank_errors": errors,
        "top10_overlap": overlap,
        "table_4_1": t41,
        "table_3_2_n": _denominators(values, range(80, 121)),
        "likert_means": likert,
    }
