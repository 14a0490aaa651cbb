"""Write notebooks/14_calibration.ipynb (run once; the notebook is the maintained artefact)."""

from __future__ import annotations

import json
from pathlib import Path

CELLS: list[tuple[str, str, list[str] | None]] = []


def md(text: str) -> None:
    CELLS.append(("markdown", text.strip("\n"), None))


def code(text: str, tags: list[str] | None = None) -> None:
    CELLS.append(("code", text.strip("\n"), tags))


md(r"""
# 14 · Calibrating the bias measures: do they find a bias that we planted, and only then?

Every other notebook applies a bias measure to a model or a corpus and reports what it finds. This one asks
the question that comes first: **can the measure be trusted?** A thermometer is checked in ice water and in
boiling water; a bias measure can be checked on text where *we* decided how strong the bias is.

**How the test corpora were made.** We took real English sentences (BUG: Wikipedia, PubMed and Covid-19
papers, each mentioning a profession and a gendered word such as *he*, *her*, *wife*). For 40 professions we
tossed a coin to decide, once and for all, whether the profession would be "planted" **male** or **female**
(so the plan has nothing to do with real-world stereotypes). Then, for every profession, we rewrote its
sentences so that a chosen share **s** of them refer to the planted gender: *"the nurse said **he** …"* becomes
*"the nurse said **she** …"* with all the other gendered words of the sentence swapped along (*his* → *her*,
*husband* → *wife*). All other sentences were swapped with probability ½, which erases the corpus's own gender
associations. This is the *counterfactual data substitution* of seed 002, used here with a dial:

* **s = 0.5**: every profession appears equally often with *he* and with *she*. Nothing is planted. A good
  measure should find **no bias** here, except by the chance it admits (its *false-positive rate*, which
  should be close to the significance level α = 5 %).
* **s = 0.6, 0.7, 0.8, 0.9**: a bias of known strength. A good measure should find it, in the planted
  direction, and show a larger effect for a larger s.

On each of the five corpora we trained the same small language model (a 2-layer BERT) and word2vec, with
`python -m biaskit train-models` (the weights are bundled, so this notebook only loads them). Seed 000
(section 3.5.4) states what every measure should do on a corpus biased *a priori* and on one that is not; the
thesis never tested that expectation. Here it is tested, for the thesis's measures (PMI, DirectBias, WEAT; the
proportion, KS and KL tests on pseudo-log-likelihoods) and for those of the other studies.
""")

code(
    r"""
quick = False        # True: fewer resamples and two skews only (a smoke run, about a minute)
alpha = 0.05         # significance level of every test
power_skew = 0.6     # the planted strength at which power is measured
n_resamples = 200    # resamples for power and for the false-positive rate (at least 200 for the report)
results_dir = ""     # folder for this run's JSON and figures; empty: beside the executed notebook or a new results/runs/ folder
""",
    tags=["parameters"],
)

code(r"""
import logging

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from IPython.display import Markdown, display

from biaskit import calibration as cal
from biaskit import trained_models as tm
from biaskit.corpus import tokenize
from biaskit.reporting import format_table, resolve_results_dir, save_figure, save_results, setup_notebook_logging, where_saved
from biaskit.results import format_p_value

NAME = "14_calibration"
PARAMS = dict(quick=quick, alpha=alpha, power_skew=power_skew, n_resamples=n_resamples, results_dir=results_dir)
OUT = resolve_results_dir(NAME, results_dir, output_path=globals().get("PAPERMILL_OUTPUT_PATH"))
setup_notebook_logging()
logging.getLogger("biaskit").setLevel(logging.ERROR)  # scoring notes are summarised in the tables
torch.set_num_threads(2)
skews = (0.5, 0.8) if quick else tm.CONTROL_SKEWS
if quick:
    n_resamples = 40
    power_skew = 0.8


def num(v):  # an effect for a table cell: 1 decimal above 10 (percentages), else 4; never e-notation
    return f"{v:.1f}" if abs(v) >= 10 else f"{v:.4f}"


def p_text(p):
    if p is None or not np.isfinite(p):
        return "no p-value"
    t = format_p_value(p)
    return f"p {t}" if t.startswith("<") else f"p = {t}"
""")

md(r"""
## 1. The planted plan and the models

The table lists the 40 professions, the gender each was planted with, and, for the strongest control
(s = 0.9), how many of its training sentences mention a gender and what share of them points to the planted
gender before and after the rewrite. "Before" is the real corpus: for most professions it leans male, because
the source texts do.
""")

code(r"""
rec90 = tm.training_record(tm.control_name(max(skews)))
plan = pd.DataFrame(rec90["targets"]).rename(columns={
    "target": "profession", "direction": "planted gender", "n": "gendered sentences",
    "original": "share toward planted gender, real text", "realised": f"share after planting (s = {max(skews)})"})
plan = plan.drop(columns=["n_direction"]).sort_values(["planted gender", "profession"]).reset_index(drop=True)
directions = {t: d for t, d in rec90["directions"].items()}
display(format_table(plan, digits=2, index=False))
""")

code(r"""
models = []
for s in skews:
    r = tm.training_record(tm.control_name(s))
    models.append({"planted s": s, "model": r["name"], "training sentences": r["n_train_sentences"],
                   "training time (s)": r["train_seconds"], "held-out pseudo-perplexity": r["bundled_held_out_pppl"]})
models = pd.DataFrame(models)
display(format_table(models, digits=1, index=False))
display(Markdown(
    f"Each model saw about {models['training sentences'].iloc[0]:,} sentences. Pseudo-perplexity measures how well "
    "a masked model predicts held-out text (lower is better; an untrained model scores around the size of its "
    f"vocabulary, {rec90['config']['vocab_size']:,}). The five models are equally good language models: "
    "only the planted association differs."
))
""")

md(r"""
## 2. Measuring every control with every measure

For the language models we build test items from the 40 professions, in the style of each study:
CrowS-Pairs-style sentence pairs that differ only in the pronoun (*"The nurse said that **he/she** would be
late."*), StereoSet-style blanks, Barza's templates (*"[MASK] is a nurse."*) and sentence pairs, Kurita's LPBS
templates and SEAT's "bleached" sentences (*"This is the nurse."*). For the word vectors: WEAT (professions
against *he, man, father, …* and *she, woman, mother, …*), Bolukbasi's gender direction, and PMI counted in the
corpus itself. Every effect is oriented so that **larger means "more toward the planted gender"**; the
"no bias" value is 50 % for the measures that count pairs and 0 for the others.

Each measure comes with **its own test**, the one its study uses (the thesis's proportion z test for the
shares of pairs, a t test for mean differences, the KS test, WEAT's and SEAT's permutation tests). Those tests
treat every sentence pair or template as an independent observation. Ours are not: twelve pairs share a
profession, and a model may prefer *she* (or *he*) in every sentence whatever the profession. So we add a
second test that needs no such assumption, the **label-permutation test**: we shuffle which professions are
called "planted male" and "planted female" thousands of times and ask how often a shuffled labelling gives an
effect as large as the real one. If nothing was planted, the real labelling is just one more shuffle.
""")

code(r"""
lms = {s: tm.load_trained_mlm(tm.control_name(s), device="cpu") for s in skews}
vectors = {s: tm.load_trained_vectors("en-planted-w2v", s=s) for s in skews}
base = tm.control_base_corpus()
corpora = {s: [tokenize(x) for x in tm.planted_corpus(s, base.train).sentences] for s in skews}
result = cal.run_calibration(lms, vectors, corpora, directions, alpha=alpha, power_s=power_skew, n_resamples=n_resamples)
eff = result.effects
table = eff.pivot_table(index="label", columns="planted", values="effect", sort=False)
ptab = eff.pivot_table(index="label", columns="planted", values="p_value", sort=False, dropna=False)
pltab = eff.pivot_table(index="label", columns="planted", values="p_label", sort=False, dropna=False)
shown = table.copy().astype(object)
for c in table.columns:
    shown[c] = [f"{num(v)} ({p_text(p)}; label test {p_text(q)})" if np.isfinite(q) else f"{num(v)} ({p_text(p)})"
                for v, p, q in zip(table[c], ptab[c], pltab[c].astype(float))]
shown.columns = [f"s = {c}" for c in table.columns]
display(format_table(shown))
""")

code(r"""
metrics = list(dict.fromkeys(eff["metric"]))
ncol = 4
nrow = int(np.ceil(len(metrics) / ncol))
fig, axes = plt.subplots(nrow, ncol, figsize=(4 * ncol, 3 * nrow), squeeze=False)
for ax, m in zip(axes.ravel(), metrics):
    g = eff[eff["metric"] == m]
    sig = g["p_value"].fillna(1) < alpha
    ax.plot(g["planted"], g["effect"], color="grey", lw=1)
    ax.scatter(g["planted"][sig], g["effect"][sig], color="C3", label=f"p < {alpha}", zorder=3)
    ax.scatter(g["planted"][~sig], g["effect"][~sig], facecolor="white", edgecolor="C0", label="not significant", zorder=3)
    ax.axhline(g["no_effect"].iloc[0], ls=":", color="black", lw=0.8)
    ax.set_title(cal.METRIC_LABELS[m], fontsize=9)
    ax.set_xlabel("planted s")
for ax in axes.ravel()[len(metrics):]:
    ax.axis("off")
axes[0, 0].legend(fontsize=7)
fig.tight_layout()
_ = save_figure(fig, f"{NAME}_effect_vs_planted", out_dir=OUT,
                alt="Small multiples, one per bias measure: the measured effect against the planted skew s from 0.5 "
                    "to 0.9; filled red points are significant at the 5 % level, open points are not; the dotted line "
                    "is the no-bias value.")
""")

md(r"""
## 3. Power: how much data does a measure need?

A measure that finds a strong bias with all its items may miss a weaker one when it has fewer. We take the
control with a weak planted bias (s = 0.6 by default) and, many times over, draw a random subset of *n* items
(sentence pairs or templates; for the measures that compare groups of professions, *n* professions) and run
the test. **Power** is the share of those draws in which the test finds the planted direction at α. The usual
target is 80 %: with less, a real bias is missed more often than one time in five.
""")

code(r"""
pw = result.power
if len(pw):
    fig, axes = plt.subplots(1, 2, figsize=(13, 4))
    for ax, unit_is_prof in zip(axes, (False, True)):
        sub = pw[(pw["unit"] == "profession") == unit_is_prof]
        for i, (m, g) in enumerate(sub.groupby("metric", sort=False)):
            ax.plot(g["n"], g["power"], marker="o", label=cal.METRIC_LABELS[m], color=f"C{i}")
            ax.plot(g["n"], g["power_label"], marker="x", ls="--", color=f"C{i}", alpha=0.7)
        ax.axhline(0.8, ls="--", color="grey", lw=0.8)
        ax.axhline(alpha, ls=":", color="black", lw=0.8)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("professions per test" if unit_is_prof else "items per test (pairs, blanks or templates)")
        ax.set_ylabel(f"power at s = {power_skew}")
        ax.legend(fontsize=7)
    fig.tight_layout()
    _ = save_figure(fig, f"{NAME}_power", out_dir=OUT,
                    alt=f"Power curves at planted s = {power_skew}: the share of random subsets in which each measure "
                        "finds the planted direction, against the number of items (left) or professions (right), with "
                        "the measure's own test (solid, circles) and the label-permutation test (dashed, crosses); the "
                        "grey dashed line marks 80 % power.")
    display(Markdown("Solid lines with circles: the measure's own test; dashed lines with crosses: the label-permutation test."))
summ = result.summary.set_index("metric")
rows = []
for m in summ.index:
    curve = pw[pw["metric"] == m]
    unit = curve["unit"].iloc[0] if len(curve) else ""
    most = int(curve["n"].max()) if len(curve) else None

    def needed(col, n80):
        if not len(curve):
            return "not a directional test"
        if pd.notna(n80):
            return f"{int(n80)} {unit}s"
        return f"more than the {most} {unit}s available ({curve[col].iloc[-1]:.0%} with all)"

    rows.append({"measure": cal.METRIC_LABELS[m],
                 f"own test: needed for 80 % power at s = {power_skew}": needed("power", summ.loc[m, "n_for_80_power"]),
                 "label-permutation test": needed("power_label", summ.loc[m, "n_for_80_power_label"])})
display(format_table(pd.DataFrame(rows), index=False))
""")

md(r"""
## 4. False alarms on the balanced control

On the s = 0.5 corpus no profession is tied to a gender, so the labels "planted male / planted female" mean
nothing. We draw new labels at random (half of the professions each way) many times and run each test on all
its items. The share of draws in which a test declares a bias is its **false-positive rate**. For a test that
does what it claims, this share is close to α = 5 %, give or take the resampling error (the band in the
figure: α ± 2 standard errors).
""")

code(r"""
fp = result.summary.dropna(subset=["fpr"]).copy()
fig, ax = plt.subplots(figsize=(9, 0.35 * len(fp) + 1.2))
lo, hi = alpha - 2 * fp["fpr_se"].iloc[0], alpha + 2 * fp["fpr_se"].iloc[0]
ax.axvspan(max(lo, 0), hi, color="C2", alpha=0.15, label="α ± 2 standard errors")
ypos = np.arange(len(fp))
ax.barh(ypos - 0.2, fp["fpr"], height=0.4, color="C0", label="the measure's own test")
ax.barh(ypos + 0.2, fp["fpr_label"].astype(float), height=0.4, color="C1", label="label-permutation test")
ax.set_yticks(ypos, [cal.METRIC_LABELS[m] for m in fp["metric"]])
ax.axvline(alpha, color="C2", lw=1)
ax.invert_yaxis()
ax.set_xlabel(f"false-positive rate on the balanced control ({n_resamples} random labellings)")
ax.legend(fontsize=8)
fig.tight_layout()
_ = save_figure(fig, f"{NAME}_false_positives", out_dir=OUT,
                alt="Horizontal bars: each measure's false-positive rate on the balanced control; a green band marks "
                    "the nominal 5 % level plus or minus two standard errors.")
def verdict(x):
    return ("as advertised" if lo <= x <= hi else "too many false alarms" if x > hi else
            "fewer false alarms than advertised (conservative)")


fp_rows = []
for r in fp.itertuples():
    fp_rows.append({"measure": cal.METRIC_LABELS[r.metric], "own test": f"{r.fpr:.1%}", "verdict": verdict(r.fpr),
                    "label-permutation test": f"{r.fpr_label:.1%}", "verdict ": verdict(r.fpr_label)})
display(format_table(pd.DataFrame(fp_rows), index=False))
""")

md(r"""
## 5. What the thesis expected (seed 000, section 3.5.4)

The thesis states two expectations for its corpus-level experiments (E^PMI, E^Boluk, E^WEAT): on a corpus
biased *a priori* every test rejects "no bias", and large DirectBias and WEAT effects go with large PMI; on a
corpus that is not biased, no test rejects. The controls answer both, profession by profession: below, each
point is one profession on the s = 0.8 control, its PMI with the male vs female words in the corpus against
its association in the word vectors.
""")

code(r"""
from biaskit.stats import correlation

s_hi = 0.8 if 0.8 in skews else max(skews)
st = cal.static_values(vectors[s_hi], corpora[s_hi], list(directions))
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
corr_rows = []
for ax, m in zip(axes, ("weat", "direct_bias")):
    x, y = st["pmi"].value, st[m].value
    ok = np.isfinite(x) & np.isfinite(y)
    colors = ["C0" if directions[t] == "male" else "C3" for t in st["pmi"].target]
    ax.scatter(x[ok], y[ok], c=np.array(colors)[ok], s=18)
    r = correlation(x[ok], y[ok], method="spearman")
    corr_rows.append({"measure": cal.METRIC_LABELS[m], "Spearman ρ with PMI": f"{r.statistic:.2f}", "test": p_text(r.p_value),
                      "professions": int(ok.sum())})
    ax.set_xlabel("BIAS_PMI (male vs female words), planted corpus")
    ax.set_ylabel(cal.METRIC_LABELS[m])
    ax.set_title(f"s = {s_hi}: blue = planted male, red = planted female", fontsize=9)
fig.tight_layout()
_ = save_figure(fig, f"{NAME}_pmi_vs_vectors", out_dir=OUT,
                alt="Two scatter plots, one point per profession on the s = 0.8 control: corpus PMI against the WEAT "
                    "association (left) and against the signed cosine with Bolukbasi's gender direction (right); blue "
                    "points were planted male and red ones female.")
display(format_table(pd.DataFrame(corr_rows), index=False))
static = eff[eff["family"] == "static"]
rej = {s: int((static.loc[static["planted"] == s, "p_value"] < alpha).sum()) for s in skews}
display(Markdown(
    f"On the balanced control (s = 0.5), {rej[0.5]} of the 3 corpus-level tests reject \"no bias\"; on the controls with a "
    "planted bias, " + ", ".join(f"{rej[s]} of 3 at s = {s}" for s in skews if s > 0.5) + "."
))
""")

md(r"""
## 6. Summary and saved results
""")

code(r"""
summary_rows = []
for r in result.summary.itertuples():
    summary_rows.append({
        "measure": cal.METRIC_LABELS[r.metric],
        "finds s = 0.8 (p < 0.01), own test": "yes" if r.found_at_0_8 else "no",
        "label test": "yes" if r.found_at_0_8_label else "no",
        "effect grows with s": "yes" if r.monotone else "no",
        f"n for 80 % power at s = {power_skew}, own test": "—" if pd.isna(r.n_for_80_power) else int(r.n_for_80_power),
        "label test ": "—" if pd.isna(r.n_for_80_power_label) else int(r.n_for_80_power_label),
        "false-positive rate, own test": "—" if pd.isna(r.fpr) else f"{r.fpr:.1%}",
        "label test  ": "—" if pd.isna(r.fpr_label) else f"{r.fpr_label:.1%}",
    })
summary_table = pd.DataFrame(summary_rows)
display(format_table(summary_table, index=False))
found = int(result.summary["found_at_0_8"].sum())
found_label = int(result.summary["found_at_0_8_label"].sum())
n_metrics = len(result.summary)
calibrated = fp[(fp["fpr"] >= lo) & (fp["fpr"] <= hi)]
calibrated_label = fp[(fp["fpr_label"].astype(float) >= lo) & (fp["fpr_label"].astype(float) <= hi)]
finding = (
    f"On small BERT models and word2vec trained on BUG text with a planted gender skew, {found} of {n_metrics} bias "
    f"measures find a planted skew of s = 0.8 with their own test (p < 0.01) and {found_label} with the label-permutation "
    f"test; on the balanced control {len(calibrated)} of the {len(fp)} own tests and {len(calibrated_label)} of the "
    f"label-permutation tests keep their false-positive rate within {alpha:.0%} ± 2 standard errors."
)
headline = {
    "measures that find the s = 0.8 planted bias (own test, p < 0.01)": f"{found} of {n_metrics}",
    "own tests with a calibrated false-positive rate": f"{len(calibrated)} of {len(fp)}",
    "label-permutation tests with a calibrated false-positive rate": f"{len(calibrated_label)} of {len(fp)}",
}
path = save_results(NAME, {"calibration": result.to_json(), "models": models.to_dict("records"),
                           "plan": plan.to_dict("records"), "pmi_correlation": corr_rows, "rejections_static": rej},
                    out_dir=OUT, finding=finding, headline=headline, parameters=PARAMS)
display(Markdown(f"**This run:** {finding}\n\n{where_saved(path)}"))
""")

md(r"""
## What this shows

*(Numbers quoted here are from a run with the default parameters, 200 resamples; `quick=True` uses two controls
and fewer resamples, and gives other values.)*

* **The thesis's corpus-level measures behave as its section 3.5.4 expects.** On word2vec vectors and PMI counts
  from the planted corpora, WEAT, Bolukbasi's gender direction and BIAS_PMI separate the planted-male from the
  planted-female professions from s = 0.6 on (p < 0.001), their effects grow with s, 10 professions are enough
  for 80 % power at s = 0.6, and on the balanced corpus they raise a false alarm 3-5 % of the time, as
  advertised. A profession's PMI predicts its bias in the vectors (Spearman ρ 0.73-0.77 at s = 0.8).
* **A small language model takes up a planted association only partly, and the measures see it unequally.** The
  measures that read the pronoun's own probability grow with s: Salazar's PLL (sz) share of pairs (51 % at
  s = 0.5, 62.5 % at s = 0.8), Barza's templates (mean P(planted) − P(other) from 0.008 to 0.044), the signed
  sentence-pair difference and Kurita's LPBS. At s = 0.8, sz, the StereoSet-style blanks, Barza's templates
  and LPBS find the planted direction with p < 0.01. Three measures do not move at all: the CrowS-Pairs cp
  score (it scores only the words the two sentences share, so it sees the pronoun only through its effect on
  the other words), AUL and SEAT on the [CLS] vector. A null result from them says little about a model.
* **Power.** To detect a weak skew (s = 0.6) 80 % of the time, sz needs about 320 sentence pairs and Barza's
  templates about 160 filled templates; with the 40 professions here LPBS never reaches 80 %.
* **Most of the measures' own tests are not calibrated; the label-permutation test is.** The proportion tests
  on the sz, AUL and StereoSet-style shares, the KS test, the sentence-pair t test and SEAT's test almost never
  raise a false alarm (0-0.5 %): a model that prefers one pronoun in nearly every sentence puts a balanced pair
  set near 50 % whatever the professions, so these tests are conservative (and would be the opposite on an
  unbalanced set). Barza's t test on the templates treats the four templates of a profession as independent
  and raises a false alarm 9 % of the time. The label-permutation test stays between 2 and 6 % for 11 of the
  12 measures: use it when items share a word or a template.
* **The KL divergence score** measures how differently spread the two PLL samples are, not which one is higher
  (notebook 07): it stays at 50 whatever is planted and cannot tell a direction.
""")


def main() -> None:
    cells = []
    for i, (kind, text, tags) in enumerate(CELLS):
        lines = text.splitlines(keepends=True)
        cell = {"cell_type": kind, "id": f"nb14-{i:02d}", "metadata": {}, "source": lines}
        if tags:
            cell["metadata"]["tags"] = tags
        if kind == "code":
            cell["execution_count"] = None
            cell["outputs"] = []
        cells.append(cell)
    nb = {
        "cells": cells,
        "metadata": {
            "biaskit": {
                "source": "calibration on planted-bias controls (seed 000 section 3.5.4; all studies' measures)"
            },
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = Path(__file__).resolve().parent.parent / "notebooks" / "14_calibration.ipynb"
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(path)


if __name__ == "__main__":
    main()
