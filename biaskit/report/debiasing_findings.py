"""The sentences of notebook 17 (debiasing against a planted bias), built from the numbers it saves.

Each function takes the records the notebook saves in its JSON (``results["static"]["effects"]``,
``results["language_models"]["effects"]``: one dict per method x measure x skew, the columns of
:class:`biaskit.studies.debiasing_study.DebiasingStudyResult`, ``None`` for a missing number; the
``fitted`` blocks: what each method did, by skew as a string) and returns one sentence.
:func:`debiasing_sentences` builds all of them from the ``results`` block; the notebook stores them beside
the numbers and :func:`biaskit.report.findings.stored_and_rebuilt` rebuilds them, so a sentence cannot
disagree with the numbers saved with it.  A sentence states what the numbers support: a verdict is
judged against the balanced control (s = 0.5), and where the earlier rule (against chance) or a
measure's own statistic says otherwise, the sentence says which statistic the verdict uses.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from biaskit.report.notebook_output import p_phrase

__all__ = [
    "CAUSAL_METHOD_WORDS",
    "METHOD_WORDS",
    "balanced_control_recovery",
    "causal_debiasing",
    "companion_disagreements",
    "debiasing_headline",
    "debiasing_sentences",
    "hard_debias_construction",
    "inlp_fit",
    "method_verdicts",
    "rule_changes",
]

#: the debiasing methods of notebook 17 as a sentence names them
METHOD_WORDS: dict[str, str] = {
    "hard_debias": "hard debiasing",
    "inlp": "INLP",
    "glpp": "GLPP",
    "cds": "CDS fine-tuning",
    "dropout": "dropout debiasing",
    "inlp_sentence": "INLP on the sentence representation",
    "sentence_debias": "SentenceDebias",
}
#: the language-model methods (the names :func:`causal_debiasing` uses)
CAUSAL_METHOD_WORDS: dict[str, str] = {
    k: METHOD_WORDS[k] for k in ("cds", "dropout", "inlp_sentence", "sentence_debias")
}
MODEL_WORDS: dict[str, str] = {
    "word2vec": "word vectors",
    "masked LM": "masked model",
    "causal LM": "GPT-style model",
}
MEASURE_WORDS: dict[str, str] = {
    "weat": "WEAT",
    "direct_bias": "DirectBias (PCA direction)",
    "direct_bias_pairs": "DirectBias along the mean pair difference",
    "gg_clustering": "the clustering",
    "gg_classifier": "the RBF-SVM classifier",
    "gg_neighbours": "the neighbour test",
    "linear_probe": "the linear probe",
    "stereoset_ss": "the StereoSet-style share of blanks",
    "stereoset_log_ratio": "the StereoSet-style mean log-probability difference",
    "causal_ll": "the share of sentence pairs (log-likelihood)",
    "causal_ll_mean": "the mean log-likelihood difference of the sentence pairs",
    "causal_next_word": "the share of next-word blanks",
    "causal_next_word_log_ratio": "the mean next-word log-probability difference",
    "causal_sld": "the sentence-likelihood difference",
    "barza_tbe": "Barza's templates",
    "barza_sld": "Barza's sentence pairs",
    "lpbs": "LPBS",
    "seat": "SEAT",
}
CONTROL_S = 0.5


# ----------------------------------------------------------------------------- formatting
def _words(items: Sequence[str], conj: str = "and") -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {conj} " + items[-1]


def _ok(x: Any) -> bool:
    return x is not None and isinstance(x, (int, float)) and math.isfinite(float(x))


def _points(r: Mapping[str, Any]) -> bool:
    """Whether the row's effects are percentages (accuracies, shares of items)."""
    return float(r["no_effect"]) == 50.0


def _decimals(ref: float, pct: bool) -> int:
    if pct:
        return 1
    a = abs(ref)
    return 3 if a >= 0.01 or a == 0 else min(6, 2 - math.floor(math.log10(a)))


def _fmt(x: float, pct: bool, *, signed: bool = False, ref: float | None = None) -> str:
    d = _decimals(x if ref is None else ref, pct)
    return f"{x:+.{d}f}" if signed else f"{x:.{d}f}"


def _vs(r: Mapping[str, Any]) -> str:
    """'+0.204 [-0.175, 0.632] (98.75 % interval)' for a row's difference from the balanced control."""
    pct = _points(r)
    unit = " points" if pct else ""
    if not _ok(r.get("vs_control")):
        return "not compared"
    x = float(r["vs_control"])
    has_ci = _ok(r.get("vs_control_low")) and _ok(r.get("vs_control_high"))
    ref = (
        max(abs(x), *(abs(float(r[k])) for k in ("vs_control_low", "vs_control_high"))) if has_ci else abs(x)
    )
    text = _fmt(x, pct, signed=True, ref=ref) + unit
    if has_ci:
        conf = float(r.get("vs_control_confidence") or 0.95)
        text += (f" [{_fmt(float(r['vs_control_low']), pct, ref=ref)}, "
                 f"{_fmt(float(r['vs_control_high']), pct, ref=ref)}]"
                 f" ({100 * conf:g} % interval)")  # fmt: skip
    return text


def _skews(values: Sequence[float]) -> str:
    return "s = " + _words([f"{v:g}" for v in sorted(set(values))])


def _measure(key: str) -> str:
    return MEASURE_WORDS.get(key, key)


def _rows(rows: Sequence[Mapping[str, Any]], **match: Any) -> list[Mapping[str, Any]]:
    out = []
    for r in rows:
        if all(
            (math.isclose(float(r[k]), float(v)) if k == "planted" else r.get(k) == v)
            for k, v in match.items()
        ):
            out.append(r)
    return out


def _planted(rows: Sequence[Mapping[str, Any]]) -> list[float]:
    return sorted({float(r["planted"]) for r in rows if float(r["planted"]) > CONTROL_S + 1e-9})


# ----------------------------------------------------------------------------- the sentences
def balanced_control_recovery(rows: Sequence[Mapping[str, Any]], *, alpha: float) -> str:
    """Which recovery tests already find the plan on the balanced controls (s = 0.5) before any debiasing,
    when tested against chance."""
    seen: dict[tuple[str, str], Mapping[str, Any]] = {}
    for r in rows:
        if r["family"] == "recovery" and math.isclose(float(r["planted"]), CONTROL_S):
            seen.setdefault((r["model"], r["measure"]), r)
    fired = [r for r in seen.values() if _ok(r.get("p_before")) and float(r["p_before"]) < alpha]
    if not seen:
        return "No balanced control (s = 0.5) was measured in this run."
    if not fired:
        return (f"Before any debiasing, no recovery test finds the plan on the balanced controls (s = 0.5, "
                f"nothing planted) at p < {alpha:g}; every verdict still compares a skew with the "
                "control's level.")  # fmt: skip
    parts = []
    for model in dict.fromkeys(r["model"] for r in fired):
        mine = [r for r in fired if r["model"] == model]
        tests = []
        for r in mine:
            pct = _points(r)
            val = f"{float(r['before']):.1f} %" if pct else f"r = {float(r['before']):.3f}"
            chance = f"; chance {float(r['chance']):.1f} %" if pct and _ok(r.get("chance")) else ""
            tests.append(f"{_measure(r['measure'])} {val} ({p_phrase(r['p_before'])}{chance})")
        parts.append(f"on the {MODEL_WORDS.get(model, model)}, {_words(tests)}")
    return (
        "Before any debiasing, on the balanced controls (s = 0.5, nothing planted), "
        + "; ".join(parts)
        + ": tested against chance, these 'recover' a plan that was never planted (all the controls share "
        "their base text and the planted labels, and the labels happen to align with it). Every verdict here "
        "compares a skew with the balanced control's level instead, under the same method."
    )


def rule_changes(rows: Sequence[Mapping[str, Any]]) -> str:
    """Where the earlier rule (p-values against chance) and the rule against the balanced control disagree,
    for the calibrated measures at s > 0.5, with the numbers that decide."""
    cal = [r for r in rows if r["family"] == "calibrated" and float(r["planted"]) > CONTROL_S + 1e-9]
    changed = [r for r in cal if r.get("verdict_vs_chance") != r["verdict"]]
    if not changed:
        return (
            "The earlier rule (against chance) and the rule against the balanced control "
            "agree on every verdict."
        )
    parts = []
    groups = dict.fromkeys((r["model"], r["method"], r["verdict_vs_chance"], r["verdict"]) for r in changed)
    for model, method, old, new in groups:
        mine = [r for r in changed if (r["model"], r["method"], r["verdict_vs_chance"], r["verdict"])
                == (model, method, old, new)]  # fmt: skip
        skews = [float(r["planted"]) for r in mine]
        measures = list(dict.fromkeys(_measure(r["measure"]) for r in mine))
        text = (f"{METHOD_WORDS.get(method, method)} on the {MODEL_WORDS.get(model, model)} "
                f"at {_skews(skews)} ({_words(measures)}): {old} against chance, "
                f"{new} against the control")  # fmt: skip
        why = []
        for s in sorted(set(skews)):
            here = _rows(rows, model=model, method=method, planted=s)
            rec = [r for r in here if r["family"] == "recovery"]
            if new == "intact":  # a surface statistic above the control decides
                for r in mine:
                    if math.isclose(float(r["planted"]), s):
                        b = next(x for x in here if x["measure"] == (r.get("verdict_basis") or r["measure"]))
                        why.append(f"{_measure(b['measure'])} at s = {s:g} is {_vs(b)} from the control")
            elif new == "hidden":  # a recovery test above the control decides
                why += [f"{_measure(r['measure'])} at s = {s:g} is {_vs(r)} from the control"
                        for r in rec if r.get("above_control")]  # fmt: skip
            elif old == "hidden":  # a recovery test that fired against chance is at the control's level
                why += [f"{_measure(r['measure'])} at s = {s:g} is {_vs(r)} from the control"
                        for r in rec if r.get("verdict_vs_chance") == "recovers the plan"]  # fmt: skip
            else:  # the measure itself, significant against chance, is at the control's level
                why += [f"{_measure(r['measure'])} at s = {s:g} is {_vs(r)} from the control"
                        for r in mine if math.isclose(float(r["planted"]), s)]  # fmt: skip
        if why:
            text += " (" + "; ".join(dict.fromkeys(why)) + ")"
        parts.append(text)
    return "Where the earlier rule and this one disagree: " + "; ".join(parts) + "."


def _pc1_range(
    fitted: Mapping[str, Any], method: str, key: str, skews: Sequence[float]
) -> tuple[float, float] | None:
    vals = [float(fitted[method][f"{s:g}"][key]) for s in skews
            if method in fitted and f"{s:g}" in fitted[method]
            and _ok(fitted[method][f"{s:g}"].get(key))]  # fmt: skip
    return (min(vals), max(vals)) if vals else None


def _range(lo: float, hi: float, fmt: str = "{:.0%}") -> str:
    a, b = fmt.format(lo), fmt.format(hi)
    return a if a == b else f"{a} to {b}"


def companion_disagreements(
    rows: Sequence[Mapping[str, Any]], fitted: Mapping[str, Any] | None = None, *, alpha: float = 0.05
) -> str:
    """Where a measure's own statistic and its robust companion disagree (one above the balanced control,
    the other not), and the share-of-items measures blinded by a global lean, with the statistic each
    verdict uses.  ``fitted``: the word vectors' ``fitted`` block (the definitional pairs' PC1 share)."""
    fitted = fitted or {}
    parts = []
    cal = [r for r in rows if r["family"] == "calibrated" and float(r["planted"]) > CONTROL_S + 1e-9]
    for r in cal:
        comp = next((x for x in _rows(rows, model=r["model"], method=r["method"], planted=r["planted"])
                     if x.get("companion_of") == r["measure"]), None)  # fmt: skip
        if comp is None:
            continue
        s = float(r["planted"])
        who = (
            f"{METHOD_WORDS.get(r['method'], r['method'])} on the {MODEL_WORDS.get(r['model'], r['model'])}, "
            f"s = {s:g}"
        )
        lean = r.get("toward_female_after")
        leaning = _ok(lean) and (float(lean) >= 90 or float(lean) <= 10)
        if bool(r.get("above_control")) == bool(comp.get("above_control")) and not leaning:
            continue
        text = (f"{who}: {_measure(r['measure'])} is {float(r['after']):.{1 if _points(r) else 3}f}"
                f"{' %' if _points(r) else ''} ({p_phrase(r['p_after'])} against chance; {_vs(r)} from the "
                f"control), {_measure(comp['measure'])} {_fmt(float(comp['after']), False)} "
                f"({p_phrase(comp['p_after'])}; {_vs(comp)})")  # fmt: skip
        if leaning:
            side = "she" if float(lean) >= 90 else "he"
            share = float(lean) if side == "she" else 100 - float(lean)
            text += (f"; after debiasing the model prefers *{side}* on {share:.0f} % of the items whatever "
                     "the plan, which squeezes the share toward the planted gender to 50 %")  # fmt: skip
        if r["measure"] == "direct_bias":
            after = _pc1_range(fitted, r["method"], "definitional_pc1_after", [s])
            orig = _pc1_range(fitted, "hard_debias", "explained_variance_pc1", [s])
            if after and orig:
                text += (f"; in the {METHOD_WORDS.get(r['method'], r['method'])} space the definitional "
                         f"pairs' first principal component explains {after[0]:.0%} of their variance "
                         f"({orig[0]:.0%} in the original vectors), so they no longer share one direction "
                         "for DirectBias to read")  # fmt: skip
        basis = r.get("verdict_basis") or r["measure"]
        text += (
            f". Verdict: {r['verdict']}, "
            f"on {_measure(basis.split(', ')[0]) if r['verdict'] == 'intact' else 'both'}"
        )
        parts.append(text)
    if not parts:
        return ("Every measure and its robust companion (the mean pair-difference direction beside "
                "DirectBias, the mean log-probability difference beside each share of items) agree on "
                "whether the plan is above the balanced control.")  # fmt: skip
    return "Where a measure and its robust companion disagree: " + "; ".join(parts) + "."


def inlp_fit(
    rows: Sequence[Mapping[str, Any]],
    fitted: Mapping[str, Any],
    *,
    iterations: int,
    lm_fitted: Mapping[str, Any] | None = None,
    lm_iterations: int | None = None,
) -> str:
    """What INLP on the word vectors was fitted on, when it stopped, what a fresh linear probe reads after
    it (on its held-out words and on the professions); with ``lm_fitted`` (the language models' ``fitted``
    block, keys ``"<model>: inlp_sentence"``) the same for INLP on the sentence representation."""
    info = fitted.get("inlp") or {}
    skews = sorted(float(s) for s in info)
    if not skews:
        return "INLP was not run on the word vectors."
    f = [info[f"{s:g}"] for s in skews]
    n_fit = [sum(x["fit_words"].values()) for x in f]
    n_held = [sum(x["held_out_words"].values()) for x in f]
    ranks = [int(x["rank_removed"]) for x in f]
    stopped = [s for s, x in zip(skews, f, strict=True) if x.get("stopped")]
    text = (f"INLP on the word vectors was fitted on {_range(min(n_fit), max(n_fit), '{:d}')} gendered "
            f"words and first names of the CDS word list (the words the measures read and the professions "
            f"left out; {_range(min(n_held), max(n_held), '{:d}')} more held out) and removed "
            f"{_range(min(ranks), max(ranks), '{:d}')} of the {iterations} directions it was "
            "allowed")  # fmt: skip
    if stopped:
        last = [float(x["last_accuracy"]) for x in f if x.get("stopped")]
        ch = [float(x["chance"]) for x in f if x.get("stopped")]
        text += (f", stopping at {_skews(stopped)} when its next classifier was at chance on the held-out "
                 f"words (accuracy {_range(min(last), max(last), '{:.2f}')}, larger class "
                 f"{_range(min(ch), max(ch), '{:.2f}')})")  # fmt: skip
    pa = [float(x["probe_accuracy"]) for x in f]
    pb = [float(x["probe_accuracy_before"]) for x in f]
    text += (f". A fresh logistic regression then reads the held-out gendered words at "
             f"{_range(min(pa), max(pa), '{:.2f}')} "
             f"({_range(min(pb), max(pb), '{:.2f}')} before INLP)")  # fmt: skip
    top = max(skews)
    lp = _rows(rows, model="word2vec", method="inlp", planted=top, measure="linear_probe")
    if lp:
        r = lp[0]
        above = bool(r.get("above_control"))
        text += (f". On the professions, a linear probe reads the planted gender at s = {top:g} for "
                 f"{float(r['after']):.1f} % of them ({p_phrase(r['p_after'])} against chance), "
                 f"{'above' if above else 'not above'} the balanced control's "
                 f"{float(r['control_after']):.1f} % ({_vs(r)})")  # fmt: skip
        text += (": INLP removes what separates the words it was fitted on, not every direction a linear "
                 "classifier can use to read the plan" if above else
                 ": with 40 professions, what the probe reads after INLP cannot be told from the balanced "
                 "control")  # fmt: skip
    text += "."
    runs = [(key.split(":")[0], float(sk), x) for key, by_s in (lm_fitted or {}).items()
            if key.endswith("inlp_sentence")
            for sk, x in by_s.items()]  # fmt: skip
    if runs:
        ranks = [int(x["rank_removed"]) for _, _, x in runs]
        stops = [f"the {MODEL_WORDS.get(m, m)} at s = {sk:g}" for m, sk, x in runs if x.get("stopped")]
        text += (f" On the language models, INLP on the sentence representation removed "
                 f"{_range(min(ranks), max(ranks), '{:d}')} of {lm_iterations or max(ranks)} "
                 "directions")  # fmt: skip
        if stops:
            text += f" (stopping at chance on the held-out sentences for {_words(stops)})"
        pa = [float(x["probe_accuracy"]) for _, _, x in runs if _ok(x.get("probe_accuracy"))]
        pb = [float(x["probe_accuracy_before"]) for _, _, x in runs if _ok(x.get("probe_accuracy_before"))]
        if pa and pb:
            text += (f"; a fresh logistic regression then reads the gender of the held-out sentences at "
                     f"{_range(min(pa), max(pa), '{:.2f}')} "
                     f"({_range(min(pb), max(pb), '{:.2f}')} before)")  # fmt: skip
        text += "."
    return text


def hard_debias_construction(rows: Sequence[Mapping[str, Any]], fitted: Mapping[str, Any]) -> str:
    """Which measures hard debiasing sets to zero by construction (DirectBias), and which it does not (WEAT,
    whose words are not all equalised)."""
    hd = [r for r in rows if r["method"] == "hard_debias" and r["model"] == "word2vec"]
    if not hd:
        return "Hard debiasing was not run on the word vectors."
    db = [abs(float(r["after"])) for r in hd if r["measure"] == "direct_bias"]
    weat = {float(r["planted"]): float(r["after"]) for r in hd if r["measure"] == "weat"}
    ctrl = weat.get(CONTROL_S)
    planted = {s: v for s, v in weat.items() if s > CONTROL_S + 1e-9}
    info = fitted.get("hard_debias") or {}
    loose = next(
        (x.get("weat_words_not_equalised") for x in info.values() if x.get("weat_words_not_equalised")), []
    )
    text = (f"Hard debiasing sets each profession's position along the gender direction to zero, so "
            f"DirectBias falls by construction (at most {max(db):.4f} after it at any s). WEAT is not "
            "forced to zero")  # fmt: skip
    if loose:
        text += f": its words {_words([f'*{w}*' for w in loose])} are not among the equalised pairs"
    if planted:
        lo, hi = min(planted.values()), max(planted.values())
        text += (f", and WEAT after hard debiasing is {_range(lo, hi, '{:.4f}')} at "
                 f"{_skews(list(planted))}"
                 + (f" ({ctrl:.4f} on the balanced control)" if ctrl is not None else ""))  # fmt: skip
    return text + "."


def method_verdicts(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per model and method: its verdict at each planted skew (``intact`` if some measure still finds
    the plan above the balanced control, else ``hidden`` if a recovery test does, else ``removed``), with the
    recovery tests above the control where it is hidden."""
    lines = []
    for model, method in dict.fromkeys((r["model"], r["method"]) for r in rows):
        mine = [r for r in rows if r["model"] == model and r["method"] == method]
        by_s: dict[str, list[float]] = {}
        notes = []
        for s in _planted(mine):
            cal = [r for r in _rows(mine, planted=s) if r["family"] == "calibrated"]
            verdicts = [r["verdict"] for r in cal]
            v = next((x for x in ("intact", "hidden", "removed") if x in verdicts), "not found before")
            by_s.setdefault(v, []).append(s)
            if v == "hidden":
                up = [r for r in _rows(mine, planted=s, family="recovery") if r.get("above_control")]
                notes.append(f"s = {s:g}: " + _words([f"{_measure(r['measure'])} {_vs(r)}" for r in up])
                             + " above the balanced control")  # fmt: skip
            if v == "intact":
                n = sum(1 for x in verdicts if x == "intact")
                notes.append(f"s = {s:g}: {n} of {len(cal)} measure{'s' if len(cal) > 1 else ''} "
                             "above the balanced control")  # fmt: skip
        said = "; ".join(f"{v} at {_skews(ss)}" for v, ss in by_s.items())
        line = (
            f"{METHOD_WORDS.get(method, method)} ({MODEL_WORDS.get(model, model)}): "
            f"{said or 'no planted skew run'}"
        )
        if notes:
            line += " (" + "; ".join(notes) + ")"
        lines.append(line[0].upper() + line[1:] + ".")
    return lines


def debiasing_headline(rows: Sequence[Mapping[str, Any]]) -> str:
    """The notebook's finding: hard debiasing on the word vectors at the strongest skew, judged against the
    balanced control, and which methods hide or create a bias anywhere."""
    hd = [r for r in rows if r["model"] == "word2vec" and r["method"] == "hard_debias"]
    skews = _planted(hd)
    if not skews:
        return "Hard debiasing was not run on a planted word-vector control in this run."
    top = max(skews)
    w = _rows(hd, planted=top, measure="weat")[0]
    rec = [r for r in _rows(hd, planted=top, family="recovery") if r.get("above_control")]
    share = ((f"{float(w['share_left']):.0%} of the planted WEAT effect left, 95 % interval "
              f"{float(w['ci_low']):.0%} to {float(w['ci_high']):.0%}")
             if _ok(w.get("ci_low")) else "share left unknown")  # fmt: skip
    at_level = not w.get("above_control")
    text = (f"On word vectors with a planted gender bias (s = {top:g}), hard debiasing "
            + ("brings WEAT to the balanced control's level" if at_level
               else "leaves WEAT above the balanced control")
            + f" ({share}; {_vs(w)} from the control)")  # fmt: skip
    if w["verdict"] == "hidden" and rec:
        r = max(rec, key=lambda x: float(x["vs_control"]))
        text += (f", yet {_measure(r['measure'])} still recovers the planted gender of "
                 f"{float(r['after']):.0f} % of the professions, {_vs(r)} above the balanced control: "
                 "at this skew it hides the bias")  # fmt: skip
    else:
        text += f": verdict {w['verdict']}"
    others = {
        float(r["planted"]): r["verdict"] for r in hd if r["measure"] == "weat" and float(r["planted"]) < top
    }
    removed = [s for s, v in others.items() if v == "removed" and s > CONTROL_S + 1e-9]
    if removed:
        text += f"; at {_skews(removed)} no measure or recovery test tells it from the balanced control"
    cal = [r for r in rows if r["family"] == "calibrated" and float(r["planted"]) > CONTROL_S + 1e-9]
    hiders = list(dict.fromkeys(f"{METHOD_WORDS.get(r['method'], r['method'])} on the "
                                f"{MODEL_WORDS.get(r['model'], r['model'])}"
                                for r in cal if r["verdict"] == "hidden"))  # fmt: skip
    created = [r for r in rows if r["verdict"] == "created"]
    text += ("; " + _words(hiders) + " hide it from at least one measure at some skew" if hiders
             else "; no method only hides it")  # fmt: skip
    text += (f", and {len(created)} measure(s) on the balanced control show a bias created by a method."
             if created
             else ", and no method creates a bias on the balanced control.")  # fmt: skip
    return text


def causal_debiasing(
    rows: Sequence[Mapping[str, Any]], costs: Sequence[Mapping[str, Any]], *, planted: float
) -> str:
    """What each method did to the planted bias of the causal (GPT-style) control ``planted`` (notebook 17).

    ``rows``: the language-model effect records of the causal control (``model == "causal LM"``, keys
    ``method, measure, family, planted, share_left, verdict``; the recovery tests' verdict ``"above the
    control"`` when a test still finds the plan above the balanced control); ``costs``: its cost records
    (``method``, ``planted``, ``held_out_perplexity``; method ``original`` for the undebiased model).  Per
    method: the verdicts over the calibrated causal measures (against the balanced control), the range of
    the share of the planted effect left, the recovery tests above the control, and the held-out perplexity
    before and after.
    """
    cal = [r for r in rows if r["family"] == "calibrated" and math.isclose(r["planted"], planted)]
    rec = [r for r in rows if r["family"] == "recovery" and math.isclose(r["planted"], planted)]
    if not cal:
        return f"No causal control with s = {planted:g} was debiased in this run."
    ppl = {c["method"]: c["held_out_perplexity"] for c in costs if math.isclose(c["planted"], planted)}
    parts = []
    for method in dict.fromkeys(r["method"] for r in cal):
        mine = [r for r in cal if r["method"] == method]
        verdicts: dict[str, int] = {}
        for r in mine:
            verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
        shares = [
            r["share_left"] for r in mine if r["share_left"] is not None and math.isfinite(r["share_left"])
        ]
        found = [r for r in rec if r["method"] == method and r["verdict"] == "above the control"]
        n = len(mine)
        if len(verdicts) == 1:
            said = f"{next(iter(verdicts))} on " + (
                f"all {n} causal measures" if n > 1 else "the causal measure"
            )
        else:
            said = _words([f"{v} on {k}" for v, k in verdicts.items()]) + f" of the {n} causal measures"
        text = f"{CAUSAL_METHOD_WORDS.get(method, method)}: {said}"
        if shares:
            lo, hi = min(shares), max(shares)
            text += (
                f" ({lo:.0%} of the planted effect left)"
                if round(lo, 2) == round(hi, 2)
                else (f" ({lo:.0%} to {hi:.0%} of the planted effect left)")
            )
        text += (f", {len(found)} of {len({r['measure'] for r in rec})} recovery tests still find the plan "
                 "above the balanced control")  # fmt: skip
        if method in ppl and "original" in ppl:
            text += f", held-out perplexity {ppl['original']:.1f} → {ppl[method]:.1f}"
        parts.append(text)
    tuned = [m for m in ("cds", "dropout") if any(r["method"] == m for r in cal)]
    intact_tuned = [m for m in tuned if all(r["verdict"] == "intact" for r in cal if r["method"] == m)]
    removed = sorted({r["method"] for r in cal if r["verdict"] == "removed"})
    end = ""
    if tuned and intact_tuned == tuned:
        end = (" The fine-tunes (" + _words([CAUSAL_METHOD_WORDS[m] for m in tuned])
               + ") leave every causal measure finding the planted bias.")  # fmt: skip
    end += (" No method removes it from a causal measure." if not removed else
            " Removed from at least one causal measure by "
            + _words([CAUSAL_METHOD_WORDS.get(m, m) for m in removed]) + ".")  # fmt: skip
    return f"On the causal control with s = {planted:g}: " + "; ".join(parts) + "." + end


def debiasing_sentences(results: Mapping[str, Any]) -> dict[str, Any]:
    """Every generated sentence of notebook 17 from its ``results`` block (the JSON's ``results``):
    ``headline``, ``balanced_control``, ``rule_changes``, ``companions``, ``inlp``, ``construction`` (str)
    and ``methods`` (a list of lines)."""
    static = results["static"]
    lm = results.get("language_models") or {}
    rows = [*static["effects"], *(lm.get("effects") or [])]
    alpha = float(static["config"]["alpha"])
    return {
        "headline": debiasing_headline(rows),
        "balanced_control": balanced_control_recovery(rows, alpha=alpha),
        "rule_changes": rule_changes(rows),
        "companions": companion_disagreements(rows, static["fitted"], alpha=alpha),
        "inlp": inlp_fit(
            static["effects"],
            static["fitted"],
            iterations=int(static["config"]["inlp_iterations"]),
            lm_fitted=lm.get("fitted"),
            lm_iterations=int(lm["config"]["inlp_iterations"]) if lm.get("config") else None,
        ),
        "construction": hard_debias_construction(static["effects"], static["fitted"]),
        "methods": method_verdicts(rows),
    }
