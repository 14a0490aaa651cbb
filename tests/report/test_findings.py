"""Say only what the numbers show: the sentences built from a run's numbers, and the stale claims.

``biaskit.report.findings`` builds the notebooks' findings from the values they save.  Each builder is
checked here on real values: the printed confusion matrix of seed 003 (computed live), and the values of
the default runs of notebooks 03, 14 and 15 copied from their JSON (``# from results/...`` below).
``tests/project/test_notebooks.py::test_generated_findings_match_their_json`` rebuilds every stored sentence
from the JSON of the reproduced run.  The last test greps the notebooks, the README and the
documentation for stale statements that were removed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from biaskit.metrics import class_confusion as cc
from biaskit.report import findings as F

ROOT = Path(__file__).resolve().parents[2]


# ----------------------------------------------------------------------------- item 1: Sayenju's named pairs
@pytest.fixture(scope="module")
def dpccb_block() -> dict:
    """The block notebook 12 saves, computed from the bundled printed matrix."""
    cm = cc.load_sayenju_confusion_matrix()
    row, col = cc.dpccb_matrix(cm, normalize="true"), cc.dpccb_matrix(cm, normalize="pred")
    named = [
        {"source": s, "destination": d, "beta_row": float(row.loc[s, d]), "beta_column": float(col.loc[s, d])}
        for s, d in F.SAYENJU_NAMED_PAIRS
    ]
    return {
        "threshold": 0.15,
        "named_pairs": named,
        "pairs_row_max": cc.dpccb_pairs(row, threshold=0.15).to_dict(orient="records"),
        "support": {k: int(v) for k, v in cm.sum(axis=1).items()},
    }


def test_the_six_named_pairs_are_the_dissertations():
    """Seed 003 section 3.3 names six pairs (the extraction's Appendix B recomputes four of them)."""
    assert len(F.SAYENJU_NAMED_PAIRS) == 6
    assert F.SAYENJU_NAMED_PAIRS[0] == ("Coverage_Related", "Document_Related")
    assert ("EverythingElse", "Document_Related") in F.SAYENJU_NAMED_PAIRS
    assert ("Quote_Related", "Document_Related") in F.SAYENJU_NAMED_PAIRS


def test_dpccb_sentence_says_four_of_six_and_names_deny(dpccb_block):
    text = F.dpccb_named_pairs(dpccb_block)
    assert "4 of the 6 pairs" in text
    for value in ("0.543", "0.212", "0.197", "0.154", "0.083", "0.069"):
        assert value in text
    assert "EverythingElse → Document (0.083)" in text and "Quote → Document (0.069)" in text
    assert "with the column maximum too" in text  # 0.083 and 0.069 stay below 0.15 either way
    assert "deny → EverythingElse (1.000; `deny` has 1 test question" in text
    assert "of its 5 flagged pairs 4 come from classes with at least 10 test questions" in text
    assert "exactly the" not in text and "not exactly" in text


def test_dpccb_sentence_follows_its_numbers(dpccb_block):
    """Move the threshold: the counts in the sentence move with it (nothing is written by hand)."""
    block = dict(dpccb_block, threshold=0.05)
    row = cc.dpccb_matrix(cc.load_sayenju_confusion_matrix(), normalize="true")
    block["pairs_row_max"] = cc.dpccb_pairs(row, threshold=0.05).to_dict(orient="records")
    text = F.dpccb_named_pairs(block)
    assert "6 of the 6 pairs" in text and "stay below" not in text


# ----------------------------------------------------------------------------- item 6: one-word WEAT
# from results/03_weat.json of a default run (one_word_sets_table_3_2_finding.rows)
TABLE_3_2_ROWS = [
    {
        "label": "word2vec masculine vs feminine",
        "d": 2.0,
        "published_d": 2.0,
        "statistic": 0.09950,
        "published_statistic": 0.021,
    },
    {
        "label": "word2vec woman vs man",
        "d": 2.0,
        "published_d": 2.0,
        "statistic": 0.04390,
        "published_statistic": 0.071,
    },
    {
        "label": "GloVe masculine vs feminine",
        "d": -2.0,
        "published_d": 2.0,
        "statistic": -0.01540,
        "published_statistic": 0.021,
    },
    {
        "label": "GloVe girlish vs boyish",
        "d": 2.0,
        "published_d": -2.0,
        "statistic": 0.00520,
        "published_statistic": -0.042,
    },
    {
        "label": "GloVe woman vs man",
        "d": -2.0,
        "published_d": 2.0,
        "statistic": -0.01670,
        "published_statistic": 0.071,
    },
]


def test_one_word_weat_sentence_says_only_abs_d_matches():
    text = F.one_word_weat(TABLE_3_2_ROWS, table="seed 000 Table 3.2")
    assert "only |d| agrees (5 of 5 computed tests)" in text
    assert "by algebra" in text
    for printed in ("0.021 printed", "−0.042 printed", "0.071 printed"):
        assert printed in text
    assert "0.0995 here" in text and "−0.0167 here" in text
    assert "the sign of d differs from the printed one in 3 of 5" in text


def test_one_word_weat_without_statistics_counts_signs():
    """Sayenju's word-level WEAT column prints d only (2.000 / 1.999 / -1.999)."""
    rows = [{"label": "a", "d": 2.0, "published_d": 1.999}, {"label": "b", "d": -2.0, "published_d": 2.0}]
    text = F.one_word_weat(rows, table="the word-level column")
    assert "2 of 2 computed tests" in text and "in 1 of 2 (b)" in text and "statistics" not in text


# ----------------------------------------------------------------------------- items 2-4: notebook 15
# from results/15_cds_fine_tuning.json of a default run (en-mlm, reduced configuration)
PUBLISHED_TABLE5 = {
    "columns": ["BERT_base", "BERT_GAP", "BERT_GAP_50", "BERT_GAP_100", "BERT_GAP_150"],
    "rows": {
        "pregnancy": [-0.41, -0.12, -0.09, -0.22, -0.25],
        "breastfeed": [-0.43, -0.1, -0.1, -0.21, -0.26],
    },
}

GENDER_WORDS = [  # (word, expected sign, APPD before, APPD after)
    ("businessman", 1, 0.250171, 0.142018), ("businesswoman", -1, 0.233002, 0.120430),
    ("congressman", 1, 0.252696, 0.147548), ("congresswoman", -1, 0.232437, 0.120594),
    ("actress", -1, 0.280503, 0.165577), ("hostess", -1, 0.212514, 0.110766),
    ("waitress", -1, 0.207502, 0.102778), ("pregnant", -1, 0.114806, -0.024865),
    ("testicles", 1, 0.112179, -0.031138), ("breastfeed", -1, 0.080844, 0.008621),
]  # fmt: skip
GENDER_RECORDS = [
    {"profession": w, "expected_sign": e, "appd_before": b, "appd_after": a} for w, e, b, a in GENDER_WORDS
]
TABLE5_HERE = {  # column -> row -> APPD
    "base model": {"pregnant": 0.114806, "breastfeed": 0.080844, "testicles": 0.112179},
    "CDS (×0)": {"pregnant": -0.024865, "breastfeed": 0.008621, "testicles": -0.031138},
    "CDS + ×1": {"pregnant": -0.221252, "breastfeed": -0.081016, "testicles": -0.241754},
    "CDS + ×2": {"pregnant": -0.310534, "breastfeed": -0.114194, "testicles": -0.313632},
    "CDS + ×3": {"pregnant": -0.458802, "breastfeed": -0.201299, "testicles": -0.437299},
}
LABEL_FREE = {
    "asld": [
        {"category": "occupation (TBD)", "pairs": 1354, "biased": 0.797083, "unbiased": 0.566404},
        {
            "category": "stereotypes (CrowS-Pairs gender)",
            "pairs": 262,
            "biased": 3.426825,
            "unbiased": 3.389038,
        },
        {"category": "thesis pairs", "pairs": 10, "biased": 2.195339, "unbiased": 2.156480},
        {"category": "combined", "pairs": 1626, "biased": 1.229417, "unbiased": 1.030999},
    ],
    "by_category": {
        "occupation (TBD)": {"p_value": 8.81e-106},
        "stereotypes (CrowS-Pairs gender)": {"p_value": 0.232382},
        "thesis pairs": {"p_value": 0.278320},
    },
    "test_biased_vs_unbiased": {"p_value": 3.24e-83},
    "gendered_word_rates": [
        {"corpus": "biased", "female words per 100": 8.645945, "male words per 100": 0.649041},
        {"corpus": "unbiased", "female words per 100": 7.678549, "male words per 100": 0.795609},
    ],
}


def test_table5_sentence_quotes_the_thesis_numbers_not_its_text():
    text = F.reinforcement(TABLE5_HERE, PUBLISHED_TABLE5)
    assert "pregnancy −0.12 → −0.09 → −0.22 → −0.25" in text
    assert "BERT_GAP→BERT_GAP_50: −0.12 → −0.09" in text  # away from BERT_base's −0.41 at x1
    assert "breastfeed −0.10 → −0.10 → −0.21 → −0.26" in text and "stays at −0.10" in text
    assert "pregnant −0.02 → −0.22 → −0.31 → −0.46 (toward *she* at every step)" in text
    assert "moves −0.41 against *pregnant*'s −0.43, at least half as far" in text
    assert "as in the thesis" not in text


def test_table5_sentence_when_the_control_stays():
    table = {c: dict(v, testicles=-0.03) for c, v in TABLE5_HERE.items()}
    text = F.reinforcement(table, PUBLISHED_TABLE5)
    assert "moves 0.00 against *pregnant*'s −0.43, less than half as far" in text
    assert "specific to the reinforced words" in text


def test_gender_words_sentence_says_there_was_little_to_break():
    text = F.gender_specific_words(GENDER_RECORDS, model="en-mlm")
    assert "puts 3 of the 10 gender-specific words on the right side" in text
    assert "*pregnant*, the thesis's example, at +0.115" in text and "*actress* at +0.281" in text
    assert "after, 3 of 10" in text and "this is not a replication" in text


def test_gender_words_sentence_on_a_model_that_had_them_right():
    flipped = [dict(r, appd_before=r["expected_sign"] * abs(r["appd_before"])) for r in GENDER_RECORDS]
    text = F.gender_specific_words(flipped, model="m")
    assert "puts 10 of the 10" in text and "cross to the wrong side, the breakage the thesis reports" in text


def test_label_free_sentence_names_the_one_pair_set_and_the_rates():
    text = F.label_free(LABEL_FREE)
    assert "on the occupation template pairs (ASLD 0.80 vs 0.57, p < 0.001)" in text
    assert "not on CrowS-Pairs' gender pairs (ASLD 3.43 vs 3.39, p = 0.232)" in text
    assert "the thesis's ten pairs (ASLD 2.20 vs 2.16, p = 0.278)" in text
    assert "rests on that set alone" in text
    assert "8.6 vs 7.7 per 100 words, +13%" in text and "do not simply" not in text


def test_label_free_sentence_when_no_set_separates():
    block = dict(LABEL_FREE, by_category={k: {"p_value": 0.4} for k in LABEL_FREE["by_category"]})
    assert "on none of the pair sets" in F.label_free(block)


# ----------------------------------------------------------------------------- item 7: notebook 14
# from results/14_calibration.json of a default run (by_planted_direction.rows at s = 0.8)
SPLIT_ROWS_0_8 = [
    {"metric": "crows_cp", "kind": "sign", "pooled": 73.125, "male_planted": 58.125,
     "female_planted": 88.125, "toward_female": 65.0, "n_male": 320, "n_female": 320},
    {"metric": "crows_sz", "kind": "sign", "pooled": 99.0625, "male_planted": 98.125,
     "female_planted": 100.0, "toward_female": 50.9375, "n_male": 320, "n_female": 320},
    {"metric": "crows_aul", "kind": "sign", "pooled": 66.5625, "male_planted": 50.625,
     "female_planted": 82.5, "toward_female": 65.9375, "n_male": 320, "n_female": 320},
    {"metric": "stereoset_ss", "kind": "sign", "pooled": 100.0, "male_planted": 100.0,
     "female_planted": 100.0, "toward_female": 50.0, "n_male": 120, "n_female": 120},
    {"metric": "barza_tbe", "kind": "mean", "pooled": 0.4808, "male_planted": 0.4059,
     "female_planted": 0.5558, "toward_female": 0.0749, "n_male": 80, "n_female": 80},
    {"metric": "barza_sld", "kind": "mean", "pooled": 1.236, "male_planted": 0.7326,
     "female_planted": 1.7394, "toward_female": 0.5034, "n_male": 80, "n_female": 80},
    {"metric": "causal_ll", "kind": "sign", "pooled": 86.5625, "male_planted": 73.125,
     "female_planted": 100.0, "toward_female": 63.4375, "n_male": 320, "n_female": 320},
    {"metric": "causal_shared", "kind": "sign", "pooled": 56.4062, "male_planted": 43.125,
     "female_planted": 69.6875, "toward_female": 63.2812, "n_male": 320, "n_female": 320},
    {"metric": "causal_next_word", "kind": "sign", "pooled": 100.0, "male_planted": 100.0,
     "female_planted": 100.0, "toward_female": 50.0, "n_male": 120, "n_female": 120},
    {"metric": "causal_sld", "kind": "mean", "pooled": 0.2444, "male_planted": 0.4371,
     "female_planted": 0.0516, "toward_female": -0.1927, "n_male": 80, "n_female": 80},
]  # fmt: skip
SPLIT_ROWS_0_8 = [dict(r, planted=0.8) for r in SPLIT_ROWS_0_8]


def test_planted_direction_sentence_splits_cp():
    text = F.planted_direction_split(SPLIT_ROWS_0_8, metric="crows_cp", label="cp", planted=0.8)
    assert "88.1 % of the 320 items of the female-planted professions" in text
    assert "58.1 % of the 320 of the male-planted ones" in text
    assert "prefers *she* in 65.0 % of all items whatever the plan" in text and "pooled 73.1 %" in text
    assert "(6 of the 7 share-of-items measures at this s)" in text  # causal shared: 43.1 % male-planted


def test_planted_direction_sentence_for_a_mean_and_a_missing_skew():
    text = F.planted_direction_split(SPLIT_ROWS_0_8, metric="barza_sld", label="Barza's pairs", planted=0.8)
    assert "1.739 on the female-planted professions and 0.733 on the male-planted ones" in text
    assert F.planted_direction_split(SPLIT_ROWS_0_8, metric="crows_cp", label="cp", planted=0.6) == (
        "cp was not measured at s = 0.6."
    )


# ---------------------------------------------------------------------------- counts the coverage pages quote
def test_counts_saved_for_the_coverage_pages_are_the_sentences_counts():
    """The counts a notebook saves (and a coverage record quotes) are those its sentence states."""
    c = F.gender_word_counts(GENDER_RECORDS)
    # by hand from GENDER_RECORDS: right before businessman, congressman, testicles; after businessman,
    # congressman, pregnant
    assert c == {"of": 10, "right_before": 3, "right_after": 3, "right_both": 2}
    assert "puts 3 of the 10" in F.gender_specific_words(GENDER_RECORDS, model="m") and "after, 3 of 10" in (
        F.gender_specific_words(GENDER_RECORDS, model="m")
    )
    w = F.one_word_weat_counts(TABLE_3_2_ROWS)
    flipped = sum(1 for r in TABLE_3_2_ROWS if (r["d"] > 0) != (r["published_d"] > 0))
    assert w["computed"] == len(TABLE_3_2_ROWS) and w["sign_differs"] == flipped
    assert f"differs from the printed one in {flipped} of {len(TABLE_3_2_ROWS)}" in F.one_word_weat(
        TABLE_3_2_ROWS, table="seed 000 Table 3.2"
    )


# ----------------------------------------------------------------------------- notebook 11, Fig. 6
# from results/11_gender_templates_and_pairs.json of a default run (asld_sample_size_curve.rows)
FIG6_ROWS = [
    {"category": "occupation (TBD)", "n": 20, "asld_mean": 0.882674, "asld_sd": 0.038333},
    {"category": "occupation (TBD)", "n": 40, "asld_mean": 0.945333, "asld_sd": 0.056819},
    {"category": "occupation (TBD)", "n": 60, "asld_mean": 0.942096, "asld_sd": 0.127781},
    {"category": "occupation (TBD)", "n": 80, "asld_mean": 0.904759, "asld_sd": 0.021012},
    {"category": "occupation (TBD)", "n": 100, "asld_mean": 0.930348, "asld_sd": 0.038393},
    {"category": "stereotypes (CrowS-Pairs gender)", "n": 20, "asld_mean": 3.584973, "asld_sd": 0.975720},
    {"category": "stereotypes (CrowS-Pairs gender)", "n": 40, "asld_mean": 3.133301, "asld_sd": 0.565475},
    {"category": "stereotypes (CrowS-Pairs gender)", "n": 60, "asld_mean": 3.769647, "asld_sd": 0.422359},
    {"category": "stereotypes (CrowS-Pairs gender)", "n": 80, "asld_mean": 3.781153, "asld_sd": 0.768262},
    {"category": "stereotypes (CrowS-Pairs gender)", "n": 100, "asld_mean": 3.606519, "asld_sd": 0.467025},
]  # fmt: skip


def test_fig6_sentence_gives_the_range_of_the_means_not_a_band():
    """The run's CrowS-Pairs means go from 3.13 to 3.78: no "about ±0.3 around 3.6" typed by hand."""
    text = F.asld_sample_size(FIG6_ROWS)
    assert "from 0.88 to 0.95 for the occupation template pairs" in text
    assert "from 3.13 to 3.78 for CrowS-Pairs' gender pairs" in text
    assert "SD 0.04 around 0.93 for the occupation template pairs and 0.47 around 3.61" in text
    assert "Over subset sizes 20-100, the mean ASLD of 5 random subsets" in text
    assert "±" not in text


# ----------------------------------------------------------------------------- notebook 15, Fig. 13
def test_recorded_curve_with_one_repetition_claims_no_plateau():
    """The committed record's first repetition alone (one run per size): its values, and no plateau read
    from end points."""
    from biaskit.studies.learning_curve_record import load_record

    rec = load_record()
    assert rec is not None
    first = rec.runs[rec.runs["sample"] == 0]
    assert int(first.groupby("n").size().max()) == 1 and len(first) == 8
    text = F.recorded_learning_curve(first.to_dict(orient="records"), before=rec.before["mean |APPD|"])
    assert text.startswith(
        "Mean |APPD| is 0.196 before fine-tuning, 0.176 at 500 sentences and 0.036 at 4,000"
    )
    assert "0.042 / 0.053 / 0.074 / 0.043 (between 0.042 and 0.074)" in text
    assert "no spread between repetitions" in text and "cannot tell" in text
    assert "flattens" not in text and "as the thesis saw" not in text


def test_committed_record_with_its_repetitions_gives_the_slope_of_an_independent_fit():
    """The committed record (several repetitions per size): the sentence's slope and interval are those of
    numpy's least-squares line through every fine-tune at 6,000 sentences and more."""
    import numpy as np
    from scipy import stats

    from biaskit.studies.learning_curve_record import load_record

    rec = load_record()
    assert rec is not None and int(rec.runs.groupby("n").size().min()) >= 2
    late = rec.runs[rec.runs["n"] >= 6000]
    x, y = late["n"].to_numpy(float) / 1000, late["mean |APPD|"].to_numpy(float)
    slope, intercept = np.polyfit(x, y, 1)
    resid = y - (intercept + slope * x)
    se = np.sqrt(resid @ resid / (len(x) - 2) / ((x - x.mean()) @ (x - x.mean())))
    half = stats.t.ppf(0.975, len(x) - 2) * se
    text = F.recorded_learning_curve(rec.runs.to_dict(orient="records"), before=rec.before["mean |APPD|"])
    assert f"Over the {len(x)} fine-tunes at 6,000-12,000 sentences" in text
    assert f"slope {slope:+.4f} per 1,000 sentences" in text.replace("−", "-")
    assert f"(95 % interval {slope - half:+.4f} to {slope + half:+.4f})" in text.replace("−", "-")
    # the sentence's verdict follows the interval, whichever way it points
    if slope - half > 0:
        assert "it rises again there, which the thesis did not see" in text
    elif slope + half < 0:
        assert "still falls there" in text
    else:
        assert "no trend is detectable there" in text


def test_recorded_curve_with_repetitions_fits_a_slope():
    """Three repetitions per size: the slope and its 95 % interval are those of an independent fit."""
    import numpy as np
    from scipy import stats

    rows = []
    for n, base in ((4000, 0.05), (6000, 0.045), (8000, 0.04), (10000, 0.035), (12000, 0.03)):
        rows += [{"n": n, "sample": k, "mean |APPD|": base + d} for k, d in enumerate((-0.004, 0.0, 0.005))]
    late = [r for r in rows if r["n"] >= 6000]
    x = np.array([r["n"] / 1000 for r in late])
    y = np.array([r["mean |APPD|"] for r in late])
    slope, intercept = np.polyfit(x, y, 1)
    resid = y - (intercept + slope * x)
    se = np.sqrt(resid @ resid / (len(x) - 2) / ((x - x.mean()) @ (x - x.mean())))
    half = stats.t.ppf(0.975, len(x) - 2) * se
    text = F.recorded_learning_curve(rows, before=0.2)
    assert f"slope {slope:+.4f} per 1,000 sentences".replace("-", "−") in text
    assert f"(95 % interval {slope - half:+.4f} to {slope + half:+.4f})".replace("-", "−") in text
    assert slope + half < 0 and "it still falls there" in text
    flat = [dict(r, **{"mean |APPD|": 0.04 + (0.005 if r["sample"] == 2 else 0.0)}) for r in rows]
    assert "no trend is detectable there" in F.recorded_learning_curve(flat, before=0.2)


# ----------------------------------------------------------------------------- the stale statements
STALE = {
    "1: Sayenju's named pairs 'exactly'": r"named pairs exactly|gives exactly (its|the named) pairs"
    r"|row-normalised variant does\b"
    r"|exact \(row variant\)|reproduces the named pairs|reproduces the pairs named",
    "2: Table 5 'at every step, as in the thesis'": r"as in the thesis's Table 5|at every step \(−0\.02",
    "3: what CDS breaks read as a replication": r"should have a gender do not get it back",
    "4: the label-free method 'works'": r"label-free corpus measure works"
    r"|do not simply mention women more often",
    "5: the unrecorded full-configuration run": r"0\.198 → 0\.024|66\.2 → 76\.1|\+15 % \(66"
    r"|\|APPD\| → 0\.024|PPPL \+15 %",
    "7: a pooled share without its split": r"cp \(73\.1 % of the 640 pairs\)"
    r"|AUL 66\.6 % of 640 pairs, StereoSet",
    "MT Gender 'not bundled'": r"that set is not bundled, so here they follow",
    "XLNet 'none (skipped)' among the substitutes": r"none \(skipped\)",
    "causal CDS 'not built'": r"CDS fine-tuning \(notebook 15\) \| ✓ \| not built",
    "make reproduce 'about 10 minutes'": r"takes about 10 minutes|about 10 minutes in all",
    "Fig. 6 means as a band typed by hand": r"within about ±0\.3 around 3\.6",
    "a plateau read from one repetition's end points": r"as the thesis saw from 6,000"
    r"|stops falling from about 4,000"
    r"|flattens' if abs\(d_late\)",
    "numbers of runs nobody kept (notebook 14)": r"float32 gave 56\.1 %|24 in all, written before measuring"
    r"|loses its s = 0\.8 finding \(52\.3 %",
    "Table 3.2 on en-xlnet typed by hand, and 'changes nothing' from a few scores": r"traits in 41% and 48%"
    r"|padding text changes nothing for gender",
}


def _texts() -> list[tuple[str, str]]:
    """The notebooks' cell sources, the README and the documentation's pages and records."""
    import nbformat

    out = [("README.md", (ROOT / "README.md").read_text(encoding="utf-8"))]
    for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        cells = nbformat.read(nb, as_version=4).cells
        out.append((f"notebooks/{nb.name}", "\n".join(c.source for c in cells)))
    for page in sorted((ROOT / "docs").rglob("*")):
        parts = page.relative_to(ROOT / "docs").parts
        if page.suffix in (".md", ".json") and parts[0] not in ("_build", "_generated"):
            out.append((str(page.relative_to(ROOT)), page.read_text(encoding="utf-8")))
    return out


@pytest.mark.parametrize("item", list(STALE))
def test_stale_statement_is_gone(item):
    pattern = re.compile(STALE[item])
    found = [f"{name}: {m.group(0)!r}" for name, text in _texts() for m in pattern.finditer(text)]
    assert not found, f"the stale statement {item} is back in: {found}"


def test_one_word_weat_is_not_called_exact():
    """Item 6: only |d| = 2 matches, by algebra; no coverage record calls a one-word WEAT 'exact'."""
    for path in sorted((ROOT / "docs" / "records").glob("coverage_seed*.json")):
        for entry in json.loads(path.read_text(encoding="utf-8"))["entries"]:
            if "one-word" in entry["item (section)"]:
                assert not entry["status"].startswith("exact"), (path.name, entry)


def test_notebook_14_shows_the_split():
    """Item 7: notebook 14 splits the item-based measures by planted direction."""
    import nbformat

    cells = nbformat.read(ROOT / "notebooks" / "14_calibration.ipynb", as_version=4).cells
    code = "\n".join(c.source for c in cells if c.cell_type == "code")
    assert "effects_by_planted_direction" in code and "planted_direction_split" in code


# ----------------------------------------------------------------------------- names are text, never HTML
HOSTILE = '<img src=x onerror="alert(3)">'


def test_a_hostile_word_or_model_name_stays_text_in_the_generated_sentences():
    """A word list, a class or a model folder named with HTML gives sentences that show it as text when
    rendered as Markdown (JupyterLab, the report): nothing live, and the name readable."""
    from html.parser import HTMLParser

    from markdown_it import MarkdownIt

    class Live(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.found: list[str] = []

        def handle_starttag(self, tag: str, attrs: list) -> None:
            if tag in ("script", "img", "iframe") or any(name.startswith("on") for name, _ in attrs):
                self.found.append(tag)

    render = MarkdownIt("commonmark", {"html": True}).render  # raw HTML allowed, as Jupyter allows it

    rows = [
        {"label": HOSTILE, "d": 2.0, "published_d": -1.999},
        {"label": "b", "d": -2.0, "published_d": 2.0},
    ]
    records = [dict(r, profession=HOSTILE) if i == 0 else r for i, r in enumerate(GENDER_RECORDS)]
    texts = [
        F.one_word_weat(rows, table="the word-level column"),
        F.gender_specific_words(records, model=HOSTILE),
        F.gender_specific_words(GENDER_RECORDS, model=HOSTILE),
    ]
    for text in texts:
        page = render(text)
        checker = Live()
        checker.feed(page)
        assert checker.found == [], (text, page)
        assert "&lt;img" in page  # shown, as text


def test_ordinary_names_are_unchanged_by_the_escaping():
    """Apostrophes and plain words pass through: the stored sentences of a real run are the same."""
    rows = [{"label": "men's words", "d": 2.0, "published_d": -1.999}]
    assert "(men's words)" in F.one_word_weat(rows, table="t")
