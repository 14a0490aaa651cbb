"""Sentences that say what a run's numbers show, built from the numbers a notebook saves.

A notebook's closing prose goes stale when it quotes numbers by hand: the run changes, the sentence
does not.  Each function here takes the values as the notebook saves them in its JSON (plain dicts
and lists, see :func:`biaskit.report.notebook_output.save_results`) and returns one sentence; the
notebook stores the sentence beside its inputs, and ``tests/report/test_findings.py`` rebuilds it from them.
A sentence states what the numbers support and no more: where a study's claim rests on a number that
the run does not reproduce, it says which.

* :func:`dpccb_named_pairs` — Sayenju's confused pairs (notebook 12; seed 003 section 3.3);
* :func:`one_word_weat` — WEAT on one-word sets (notebook 03, seed 000 Table 3.2; notebook 12,
  seed 003 Tables 2.10-2.11 and 4.2-4.3);
* :func:`asld_sample_size` — ASLD of random pair subsets against their size (notebook 11; seed 002
  section 4.1.3, Fig. 6);
* :func:`reinforcement` — Barza's Table 5 (notebook 15; seed 002 section 6.3);
* :func:`gender_specific_words` — what CDS breaks (notebook 15; seed 002 section 6.2);
* :func:`label_free` — the label-free corpus-bias method (notebook 15; seed 002 section 5.2.1);
* :func:`recorded_learning_curve` — the recorded Fig. 13 beyond 6,000 sentences (notebook 15; seed 002
  section 6.4);
* :func:`planted_direction_split` — a pooled share read by planted direction (notebook 14);
* :func:`causal_debiasing` — the debiasing methods on the planted causal controls (notebook 17; it and
  notebook 17's other sentences live in :mod:`biaskit.report.debiasing_findings`).
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any

from biaskit.core.html import markdown_code
from biaskit.report.debiasing_findings import CAUSAL_METHOD_WORDS, causal_debiasing, debiasing_sentences
from biaskit.report.notebook_output import p_phrase

__all__ = [
    "CAUSAL_METHOD_WORDS",
    "LABEL_FREE_PAIR_SETS",
    "SAYENJU_NAMED_PAIRS",
    "asld_sample_size",
    "causal_debiasing",
    "dpccb_named_pairs",
    "gender_specific_words",
    "gender_word_counts",
    "label_free",
    "one_word_weat",
    "one_word_weat_counts",
    "planted_direction_split",
    "recorded_learning_curve",
    "reinforcement",
    "stored_and_rebuilt",
]

#: the confused pairs seed 003 names (section 3.3, after Fig. 3.6: the strongest first), as (source,
#: destination)
SAYENJU_NAMED_PAIRS: tuple[tuple[str, str], ...] = (
    ("Coverage_Related", "Document_Related"),
    ("Billing_Related", "Payment_Related"),
    ("Coverage_Related", "Quote_Related"),
    ("EverythingElse", "Escalation"),
    ("EverythingElse", "Document_Related"),
    ("Quote_Related", "Document_Related"),
)


#: the pair sets of notebook 15's ASLD (``biaskit.debiasing.cds.sbe_evaluation_pairs``) as a sentence names
#: them
LABEL_FREE_PAIR_SETS: dict[str, str] = {
    "occupation (TBD)": "the occupation template pairs",
    "stereotypes (CrowS-Pairs gender)": "CrowS-Pairs' gender pairs",
    "thesis pairs": "the thesis's ten pairs",
}


def _text(value: object) -> str:
    """A word, a class or a set name as sentence text: ``& < >`` written as character references, so a
    sentence shown as Markdown (in JupyterLab or the report) never turns a name into live HTML; every
    other character, apostrophes included, is kept as it is."""
    return html.escape(str(value), quote=False)


def _words(items: Sequence[str], conj: str = "and") -> str:
    """'a', 'a and b', 'a, b and c' (``conj="or"``: 'a or b'); the items are sentence parts, so names in
    them went through :func:`_text` already."""
    items = list(items)
    if not items:
        return "none"
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" {conj} " + items[-1]


def _num(x: float, digits: int = 3) -> str:
    """A signed-when-negative number with a real minus sign."""
    text = f"{x:.{digits}f}"
    return text.replace("-", "−")


def _signed(x: float, digits: int = 3) -> str:
    return ("+" if x > 0 else "") + _num(x, digits)


def _short(name: str) -> str:
    """A class name of seed 003 as the prose writes it (``Coverage_Related`` -> ``Coverage``)."""
    return _text(name.removesuffix("_Related"))


# ----------------------------------------------------------------------------- notebook 12
def dpccb_named_pairs(dpccb: Mapping[str, Any]) -> str:
    """What the row-normalised DPCCB gives for the pairs seed 003 names, and what else it flags.

    ``dpccb`` holds ``threshold``, ``named_pairs`` (records ``source, destination, beta_row,
    beta_column``: the value of each pair the dissertation names, divided by the row and by the
    column maximum), ``pairs_row_max`` (records ``source, destination, beta`` above the threshold)
    and ``support`` (test questions per true class).
    """
    theta = float(dpccb["threshold"])
    named = list(dpccb["named_pairs"])
    support = {str(k): int(v) for k, v in dpccb["support"].items()}
    flagged = list(dpccb["pairs_row_max"])
    named_keys = {(r["source"], r["destination"]) for r in named}

    def pair(r: Mapping[str, Any], key: str = "beta_row") -> str:
        return f"{_short(r['source'])} → {_short(r['destination'])} ({float(r[key]):.3f})"

    passing = [r for r in named if float(r["beta_row"]) > theta]
    below = [r for r in named if float(r["beta_row"]) <= theta]
    below_both = [r for r in below if float(r["beta_column"]) <= theta]
    extra = [r for r in flagged if (r["source"], r["destination"]) not in named_keys]
    text = (
        f"Divided by the row maximum, DPCCB passes {theta:g} for {len(passing)} of the {len(named)} pairs "
        f"that the dissertation names ({_words([pair(r) for r in passing])})"
    )
    if below:
        text += f"; {_words([pair(r) for r in below])} stay below {theta:g}" + (
            " with the column maximum too" if len(below_both) == len(below) else ""
        )
    if extra:

        def flagged_pair(r: Mapping[str, Any]) -> str:
            n = support.get(r["source"], 0)
            few = (
                f"; {markdown_code(r['source'])} has {n} test question{'' if n == 1 else 's'}, "
                "too few for a rate"
                if n < 10
                else ""
            )
            return f"{_short(r['source'])} → {_short(r['destination'])} ({float(r['beta']):.3f}{few})"

        text += f". It also flags {_words([flagged_pair(r) for r in extra])}"
        if any(support.get(r["source"], 0) >= 10 for r in extra):
            text += ", which the dissertation does not name"
    n_real = sum(1 for r in flagged if support.get(r["source"], 0) >= 10)
    text += (
        f", so of its {len(flagged)} flagged pairs {n_real} come from classes with at least 10 test "
        "questions: the row variant matches the named pairs in part, not exactly."
    )
    return text


# ----------------------------------------------------------------------------- notebooks 03 and 12
def _sign_differs(r: Mapping[str, Any]) -> bool:
    return math.copysign(1, float(r["d"])) != math.copysign(1, float(r["published_d"]))


def one_word_weat_counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """The counts :func:`one_word_weat` states, for a notebook to save as results keys.

    ``computed``: rows with both ``d`` and ``published_d``; ``abs_d_agrees``: |d| equal to the printed
    |d| within 0.002; ``sign_differs``: the sign of d is not the printed one.
    """
    rows = [r for r in rows if r.get("d") is not None and r.get("published_d") is not None]
    return {
        "computed": len(rows),
        "abs_d_agrees": sum(
            1 for r in rows if math.isclose(abs(float(r["d"])), abs(float(r["published_d"])), abs_tol=2e-3)
        ),
        "sign_differs": sum(1 for r in rows if _sign_differs(r)),
    }


def one_word_weat(rows: Sequence[Mapping[str, Any]], *, table: str) -> str:
    """What agrees between a study's one-word WEATs and ours: |d| only, by algebra.

    ``rows``: one record per computed test with ``label`` (how the reader knows the row), ``d`` and
    ``published_d``, and, where the study printed it, ``statistic`` and ``published_statistic``.
    ``table`` names the study's table ("seed 000 Table 3.2").
    """
    rows = [r for r in rows if r.get("d") is not None and r.get("published_d") is not None]
    if not rows:
        return f"No one-word WEAT of {table} could be computed on these vectors."
    abs_two = one_word_weat_counts(rows)["abs_d_agrees"]
    flipped = [r for r in rows if _sign_differs(r)]
    text = (
        f"Of {table}, only |d| agrees ({abs_two} of {len(rows)} computed tests), and that holds for any "
        "one-word sets by algebra, not because the vectors agree"
    )
    with_stat = [
        r for r in rows if r.get("statistic") is not None and r.get("published_statistic") is not None
    ]
    if with_stat:
        text += (
            "; the statistics are not reproduced ("
            + "; ".join(
                f"{_text(r['label'])}: {_num(float(r['statistic']), 4)} here, "
                f"{_num(float(r['published_statistic']))} printed"
                for r in with_stat
            )
            + ")"
        )
    text += (
        f", and the sign of d differs from the printed one in {len(flipped)} of {len(rows)}"
        + (f" ({_words([_text(r['label']) for r in flipped])})" if 0 < len(flipped) <= 4 else "")
        + "."
    )
    return text


# ----------------------------------------------------------------------------- notebook 15
def _path(values: Sequence[float]) -> str:
    return " → ".join(_num(float(v), 2) for v in values)


def _steps_not_toward_she(values: Sequence[float]) -> list[int]:
    """Indices k of the steps values[k-1] -> values[k] that do not move further below 0."""
    return [k for k in range(1, len(values)) if not float(values[k]) < float(values[k - 1])]


def reinforcement(table: Mapping[str, Mapping[str, float]], published: Mapping[str, Any]) -> str:
    """Barza's Table 5 as printed against its text, and this run's copy of it with the control.

    ``table``: this run's APPD table as saved (``{column: {row: value}}``; columns ``base model``,
    ``CDS (×0)``, ``CDS + ×1``, ...; rows ``pregnant``, ``breastfeed``, ``testicles``, ...).
    ``published``: the thesis's Table 5 (``columns`` BERT_base, BERT_GAP, BERT_GAP_50, ...; ``rows``
    pregnancy and breastfeed).
    """
    cols = list(published["columns"])
    parts = []
    for word, vals in published["rows"].items():
        steps = vals[1:]  # from BERT_GAP on
        bad = _steps_not_toward_she(steps)
        where = _words(
            [
                f"{cols[k]}→{cols[k + 1]}: {_num(steps[k - 1], 2)} → {_num(steps[k], 2)}"
                if float(steps[k]) != float(steps[k - 1])
                else f"{cols[k]}→{cols[k + 1]}: stays at {_num(steps[k], 2)}"
                for k in bad
            ]
        )
        parts.append(
            f"{_text(word)} {_path(steps)}"
            + (f" (not toward BERT_base's {_num(vals[0], 2)} at {where})" if bad else "")
        )
    text = (
        "The thesis's text says that each added copy brings APPD closer to BERT_base's; "
        "its own Table 5 reads " + "; ".join(parts)
    )
    steps = [c for c in table if c != "base model"]
    here = []
    for word in ("pregnant", "breastfeed", "testicles"):
        col = {c: table[c].get(word) for c in steps}
        if any(v is None for v in col.values()):
            continue
        vals = [float(col[c]) for c in steps]
        bad = _steps_not_toward_she(vals)
        here.append(
            f"{_text(word)} {_path(vals)}"
            + (" (toward *she* at every step)" if not bad else " (not at every step)")
        )
    if here:
        text += ". Here (CDS, then ×1, ×2, ...): " + "; ".join(here)
        t = [table[c].get("testicles") for c in steps]
        p = [table[c].get("pregnant") for c in steps]
        if None not in t and None not in p:
            move_t, move_p = float(t[-1]) - float(t[0]), float(p[-1]) - float(p[0])
            text += (
                f"; *testicles*, which the added sentences never mention, moves {_signed(move_t, 2)} against "
                f"*pregnant*'s {_signed(move_p, 2)}"
            )
            if move_p >= 0:
                text += ", so *pregnant* does not move toward *she* at all"
            elif move_t / move_p >= 0.5:
                text += (
                    ", at least half as far, so most of the move makes *she* more likely everywhere rather "
                    "than teaching a word's gender"
                )
            else:
                text += ", less than half as far, so part of the move is specific to the reinforced words"
    return text + "."


def _right_side(r: Mapping[str, Any], key: str) -> bool:
    """Whether APPD ``r[key]`` has the word's expected sign (+1 he, -1 she); 0 is on neither side."""
    return math.copysign(1, float(r[key])) == float(r["expected_sign"]) and float(r[key]) != 0


def gender_word_counts(records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """The counts :func:`gender_specific_words` states, for a notebook to save as results keys.

    ``of``: the words measured before and after; ``right_before`` / ``right_after``: on the side of their
    gender; ``right_both``: right before and still right after (the same words).
    """
    recs = [r for r in records if r.get("appd_before") is not None and r.get("appd_after") is not None]
    before = {r["profession"] for r in recs if _right_side(r, "appd_before")}
    after = {r["profession"] for r in recs if _right_side(r, "appd_after")}
    return {
        "of": len(recs),
        "right_before": len(before),
        "right_after": len(after),
        "right_both": len(before & after),
    }


def gender_specific_words(records: Sequence[Mapping[str, Any]], *, model: str) -> str:
    """Whether the model had the gender-specific words right before CDS, so that CDS could break them.

    ``records``: one per word with ``profession`` (the word), ``expected_sign`` (+1 he, -1 she),
    ``appd_before`` and ``appd_after``.
    """
    recs = [r for r in records if r.get("appd_before") is not None and r.get("appd_after") is not None]
    if not recs:
        return "No gender-specific word was measured."

    right = _right_side
    before = [r for r in recs if right(r, "appd_before")]
    after = [r for r in recs if right(r, "appd_after")]
    lost = [r for r in before if not right(r, "appd_after")]
    worst = max(
        (r for r in recs if not right(r, "appd_before")),
        key=lambda r: -float(r["expected_sign"]) * float(r["appd_before"]),
        default=None,
    )
    n = len(recs)
    text = (
        f"Before fine-tuning, {markdown_code(model)} puts {len(before)} of the {n} gender-specific words on "
        "the right side"
    )
    if worst is not None:
        text += (
            f" (the farthest off: *{worst['profession']}* at {_signed(float(worst['appd_before']))}, toward "
            f"*{'she' if float(worst['appd_before']) < 0 else 'he'}*)"
        )
    preg = next((r for r in recs if r["profession"] == "pregnant"), None)
    if preg is not None and worst is not None and preg is not worst and not right(preg, "appd_before"):
        text += f"; *pregnant*, the thesis's example, at {_signed(float(preg['appd_before']))}"
    text += f"; after, {len(after)} of {n}"
    if len(before) < n / 2:
        text += (
            ". A model that never had most of these words right cannot show the thesis's breakage (correct "
            "associations fading, Figs. 11-12); this is not a replication of it"
        )
    else:
        text += f"; {len(lost)} of the {len(before)} that were right cross to the wrong side" + (
            ", the breakage the thesis reports" if lost else ", so the thesis's breakage does not appear here"
        )
    return text + "."


def label_free(
    label_free: Mapping[str, Any],
    *,
    labels: Mapping[str, str] | None = None,
    a: str = "biased",
    b: str = "unbiased",
    alpha: float = 0.05,
) -> str:
    """Which pair sets tell the two corpora apart, and how often each corpus mentions women.

    ``label_free`` is the notebook's saved block: ``asld`` (records ``category, n_pairs, <corpus>,
    ...``), ``by_category`` (``{category: TestResult dict}``: one-sided paired test of "``a`` gives
    larger SLDs than ``b``"), ``test_biased_vs_unbiased`` (the same over all pairs) and
    ``gendered_word_rates`` (records ``corpus, female words per 100, male words per 100``).
    ``labels`` gives each category the words a reader knows it by.
    """
    labels = dict(LABEL_FREE_PAIR_SETS if labels is None else labels)
    asld = {r["category"]: r for r in label_free["asld"]}
    tests = label_free["by_category"]
    sep: list[str] = []
    not_sep: list[str] = []
    for cat, t in tests.items():
        p = t.get("p_value")
        row = asld.get(cat, {})
        name = labels.get(cat, cat)
        va, vb = row.get(a), row.get(b)
        nums = f"ASLD {float(va):.2f} vs {float(vb):.2f}, " if va is not None and vb is not None else ""
        item = f"{_text(name)} ({nums}{p_phrase(p)})"
        (sep if p is not None and p < alpha else not_sep).append(item)
    overall = p_phrase(label_free["test_biased_vs_unbiased"].get("p_value"))
    if not sep:
        text = (
            f"The {a} comments give larger ASLDs than the {b} ones on none of the pair sets: "
            f"{_words(not_sep)}"
        )
        text += f" (pooled over all pairs, {overall})"
    elif not not_sep:
        text = f"The {a} comments give larger ASLDs than the {b} ones on every pair set: {_words(sep)}"
        text += f" (pooled over all pairs, {overall})"
    else:
        text = (
            f"The {a} comments give larger ASLDs than the {b} ones on {_words(sep)}, not on "
            f"{_words(not_sep, 'or')}, so the pooled result ({overall}) rests on "
            f"{'that set' if len(sep) == 1 else 'those sets'} alone"
        )
    rates = {r["corpus"]: r for r in label_free.get("gendered_word_rates", [])}
    if a in rates and b in rates:
        fa, fb = float(rates[a]["female words per 100"]), float(rates[b]["female words per 100"])
        text += (
            f". The {a} comments also use more female words ({fa:.1f} vs {fb:.1f} per 100 words, "
            f"{(fa / fb - 1):+.0%})"
            + (", so mentioning women more often may explain part of the difference" if sep else "")
            if fa > fb
            else f". The {a} comments use no more female words than the {b} ones ({fa:.1f} vs {fb:.1f} "
            "per 100 words)"
        )
    return text + "."


# ----------------------------------------------------------------------------- notebook 11, Fig. 6
def asld_sample_size(rows: Sequence[Mapping[str, Any]], *, draws: int = 5) -> str:
    """How the ASLD of random pair subsets moves with their size (seed 002 section 4.1.3, Fig. 6).

    ``rows``: :func:`biaskit.metrics.gender_templates.asld_sample_size_curve` records (``category``, ``n``,
    ``asld_mean`` over ``draws`` subsets, ``asld_sd`` between them).  Per pair set the sentence gives the
    range of the means over the sizes and the spread of single subsets at the largest size; the thesis
    reads a flat mean as "100 pairs per category suffice", which a mean of five draws cannot show for one
    evaluation set.
    """
    by_set: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        by_set.setdefault(str(r["category"]), []).append(r)
    if not by_set:
        return "No pair set was sampled."
    parts, spreads = [], []
    sizes: set[int] = set()
    for cat, rs in by_set.items():
        rs = sorted(rs, key=lambda r: int(r["n"]))
        sizes |= {int(r["n"]) for r in rs}
        means = [float(r["asld_mean"]) for r in rs]
        name = LABEL_FREE_PAIR_SETS.get(cat, cat)
        parts.append(f"from {_num(min(means), 2)} to {_num(max(means), 2)} for {_text(name)}")
        last = rs[-1]
        spreads.append(
            f"{_num(float(last['asld_sd']), 2)} around {_num(float(last['asld_mean']), 2)} for {_text(name)}"
        )
    lo, hi = min(sizes), max(sizes)
    return (
        f"Over subset sizes {lo}-{hi}, the mean ASLD of {draws} random subsets goes "
        + _words(parts)
        + f"; single subsets of {hi} pairs spread with SD "
        + _words(spreads)
        + f". The mean of {draws} draws is what the thesis reads as flat; one evaluation set of {hi} pairs "
        "can land about one SD away from it, so a flat mean does not show that one such set is enough."
    )


# ----------------------------------------------------------------------------- notebook 15, Fig. 13
def recorded_learning_curve(
    runs: Sequence[Mapping[str, Any]],
    *,
    before: float,
    measure: str = "mean |APPD|",
    split: int = 6000,
) -> str:
    """What a recorded learning curve (seed 002 section 6.4, Fig. 13) shows beyond ``split`` sentences.

    ``runs``: one row per fine-tune with ``n``, ``sample`` and ``measure`` (``records/fig13`` as
    :class:`biaskit.studies.learning_curve_record.LearningCurveRecord` holds them); ``before``: the
    measure before fine-tuning.  The thesis reads its curve as flat from about 6,000 sentences.

    With one repetition per size there is no spread between repetitions, so the sentence gives the
    values and says that a plateau cannot be told from noise.  With two or more, it fits a straight line
    to the runs at ``n >= split`` (least squares, ``scipy.stats.linregress``) and gives the slope per
    1,000 sentences with its 95 % interval (t distribution, ``len - 2`` degrees of freedom): an interval
    that holds 0 is consistent with a plateau but does not prove one (a fall smaller than the
    interval's half-width would go unseen).
    """
    from scipy import stats

    rows = [r for r in runs if r.get(measure) is not None and math.isfinite(float(r[measure]))]
    by_n: dict[int, list[float]] = {}
    for r in rows:
        by_n.setdefault(int(r["n"]), []).append(float(r[measure]))
    early = sorted(n for n in by_n if n < split)
    late = sorted(n for n in by_n if n >= split)
    if len(late) < 2:
        return (
            f"The record has {len(late)} size(s) from {split:,} sentences on, too few to say how {measure} "
            "goes beyond them."
        )
    reps = min(len(v) for v in by_n.values())
    mean = {n: sum(v) / len(v) for n, v in by_n.items()}
    late_vals = [mean[n] for n in late]
    text = f"{measure[:1].upper()}{measure[1:]} is {_num(before)} before fine-tuning"
    if early:
        text += (
            f", {_num(mean[early[0]])} at {early[0]:,} sentences and {_num(mean[early[-1]])} at {early[-1]:,}"
        )
    text += (
        f"; from {late[0]:,} to {late[-1]:,} sentences it is "
        + " / ".join(_num(v) for v in late_vals)
        + f" (between {_num(min(late_vals))} and {_num(max(late_vals))})"
    )
    if reps < 2:
        return text + (
            ". With one repetition per size the record has no spread between repetitions, so it cannot tell "
            "whether the curve has stopped falling (the thesis's reading, from about 6,000 sentences) or "
            "still moves by less than one fine-tune's luck; repetitions per size would "
            "(`scripts/record_fig13.py --first-sample 1 --samples 4`)."
        )
    xs = [n / 1000 for n in late for _ in by_n[n]]
    ys = [v for n in late for v in by_n[n]]
    fit = stats.linregress(xs, ys)
    half = float(stats.t.ppf(0.975, len(xs) - 2)) * float(fit.stderr)
    lo, hi = float(fit.slope) - half, float(fit.slope) + half
    text += (
        f". Over the {len(xs)} fine-tunes at {late[0]:,}-{late[-1]:,} sentences ({reps} or more per size), a "
        f"straight line has slope {_signed(float(fit.slope), 4)} per 1,000 sentences (95 % interval "
        f"{_signed(lo, 4)} to {_signed(hi, 4)})"
    )
    if lo <= 0 <= hi:
        text += (
            ": no trend is detectable there, consistent with the plateau the thesis saw from about 6,000 "
            "sentences, though a change of up to "
            f"{_num(max(abs(lo), abs(hi)) * (late[-1] - late[0]) / 1000)} over that range would go unseen"
        )
    elif hi < 0:
        text += ": it still falls there, unlike the plateau the thesis saw from about 6,000 sentences"
    else:
        text += ": it rises again there, which the thesis did not see"
    return text + "."


# ----------------------------------------------------------------------------- notebook 14
def planted_direction_split(
    rows: Sequence[Mapping[str, Any]], *, metric: str, label: str, planted: float
) -> str:
    """How a pooled share of one measure splits between male- and female-planted professions.

    ``rows``: records of :func:`biaskit.studies.calibration.effects_by_planted_direction`.
    """
    r = next((x for x in rows if x["metric"] == metric and math.isclose(float(x["planted"]), planted)), None)
    if r is None:
        return f"{_text(label)} was not measured at s = {planted:g}."
    m, f, pooled, fem = (float(r[k]) for k in ("male_planted", "female_planted", "pooled", "toward_female"))
    if r["kind"] == "sign":
        lean, side = (fem, "she") if fem >= 50 else (100 - fem, "he")
        both = [x for x in rows if x["kind"] == "sign" and math.isclose(float(x["planted"]), planted)]
        n_both = sum(1 for x in both if float(x["male_planted"]) > 50 and float(x["female_planted"]) > 50)
        return (
            f"At s = {planted:g}, {_text(label)} prefers the planted gender in {f:.1f} % of the "
            f"{r['n_female']} items of the female-planted professions but in {m:.1f} % of the {r['n_male']} "
            f"of the male-planted ones; the model prefers *{side}* in {lean:.1f} % of all items whatever the "
            f"plan, and the pooled {pooled:.1f} % mixes that lean with the plan. A pooled percentage is read "
            f"with its two sides: the plan shows on both only where both exceed 50 % ({n_both} of the "
            f"{len(both)} share-of-items measures at this s)."
        )
    return (
        f"At s = {planted:g}, {_text(label)} leans toward the planted gender by {f:.3f} on the "
        f"female-planted professions and {m:.3f} on the male-planted ones (pooled {pooled:.3f}; toward *she* "
        f"whatever the plan: {fem:+.3f})."
    )


# ----------------------------------------------------------------------------- the notebooks' JSON
def stored_and_rebuilt(notebook: str, results: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """Every sentence notebook ``notebook`` stored, and the same sentence rebuilt from the values beside it.

    ``results`` is the ``results`` block of the notebook's JSON.  Returns ``(name, stored, rebuilt)``
    triples (empty for a notebook without generated sentences); a test asserts ``stored == rebuilt``, so a
    sentence can never disagree with the numbers saved with it.
    """
    out: list[tuple[str, str, str]] = []
    if notebook == "11_gender_templates_and_pairs":
        c = results["asld_sample_size_curve"]
        if c.get("finding"):
            out.append(("Fig. 6", c["finding"], asld_sample_size(c["rows"], draws=int(c.get("draws", 5)))))
    elif notebook == "03_weat":
        b = results["one_word_sets_table_3_2_finding"]
        out.append(("one-word WEAT", b["finding"], one_word_weat(b["rows"], table=b["table"])))
    elif notebook == "12_class_confusion_and_domain_bias":
        d = results["dpccb"]
        block = {k: d[k] for k in ("threshold", "named_pairs", "pairs_row_max", "support")}
        out.append(("named pairs", d["named_pairs_finding"], dpccb_named_pairs(block)))
        w = results["one_word_weat_vs_printed"]
        out.append(("WEAT column", w["finding"], one_word_weat(w["rows"], table=w["table"])))
    elif notebook == "14_calibration":
        b = results["by_planted_direction"]
        rebuilt = planted_direction_split(
            b["rows"], metric=b["metric"], label=b["label"], planted=b["planted"]
        )
        out.append(("planted direction", b["finding"], rebuilt))
    elif notebook == "15_cds_fine_tuning":
        f = results["findings"]
        out.append(
            (
                "gender-specific words",
                f["gender_specific_words"],
                gender_specific_words(results["gender_specific_words"], model=results["model"]),
            )
        )
        rebuilt = reinforcement(results["reinforcement"]["table"], results["published"]["table5"])
        out.append(("Table 5", f["reinforcement"], rebuilt))
        out.append(("label-free", f["label_free"], label_free(results["label_free"])))
        rec = results.get("learning_curve_recorded") or {}
        if rec.get("finding"):
            rebuilt = recorded_learning_curve(rec["runs"], before=rec["before"]["mean |APPD|"])
            out.append(("recorded Fig. 13", rec["finding"], rebuilt))
    elif notebook == "17_debiasing_ground_truth":
        c = (results.get("language_models") or {}).get("causal_finding")
        if c:
            out.append(
                (
                    "causal controls",
                    c["finding"],
                    causal_debiasing(c["rows"], c["costs"], planted=c["planted"]),
                )
            )
        stored = results.get("sentences") or {}
        for name, rebuilt in debiasing_sentences(results).items():
            out.append((name, stored.get(name), rebuilt))
    return out
