"""biaskit.debiasing.cds and the before/after helpers of gender_templates (seed 002 chapters 5-6)."""

from __future__ import annotations

import dataclasses
import json
import logging
import random

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import torch
from scipy import stats as sps

from biaskit.core.results import TestResult
from biaskit.data.counterfactual import load_gender_lexicon
from biaskit.data.training_text import read_redditbias_comments
from biaskit.debiasing import cds as db
from biaskit.lm import quiet_hf_progress, tiny_masked_lm
from biaskit.metrics import gender_templates as gt
from biaskit.training.fine_tune import BARTL, fine_tune, fine_tune_record

WORD = __import__("re").compile(r"[A-Za-z]+")


# ----------------------------------------------------------------------------- SBE pairs from the TBD
def test_tbd_pronoun_pairs_fill_subject_and_possessive_slots():
    inst = pd.DataFrame(
        {
            "category": ["medical", "medical"],
            "profession": ["doctor", "doctor"],
            "slot": ["subject", "possessive"],
            "sentence": ["[MASK] is a competent doctor.", "the doctor carried [MASK] own bag."],
        }
    )
    p = gt.tbd_pronoun_pairs(inst)
    assert p["sent_stereo"].tolist() == ["He is a competent doctor.", "the doctor carried his own bag."]
    assert p["sent_anti"].tolist() == ["She is a competent doctor.", "the doctor carried her own bag."]
    with pytest.raises(ValueError, match="no pronoun pair"):
        gt.tbd_pronoun_pairs(inst.assign(slot=["object", "subject"]))


def test_tbd_pronoun_pairs_cover_every_template_and_differ_only_in_the_pronoun():
    inst = gt.build_tbd_instances()
    p = gt.tbd_pronoun_pairs(inst)
    assert len(p) == len(inst)
    for a, b in zip(p["sent_stereo"], p["sent_anti"], strict=True):
        wa, wb = a.lower().split(), b.lower().split()
        diff = [(x, y) for x, y in zip(wa, wb, strict=True) if x != y]
        assert (
            len(diff) == 1
            and diff[0][0].strip(".,") in ("he", "his")
            and diff[0][1].strip(".,") in ("she", "her")
        )


def test_sbe_evaluation_pairs_sets_and_sizes():
    pairs = db.sbe_evaluation_pairs()
    counts = pairs["category"].value_counts()
    n_ordinary = int((gt.build_tbd_instances()["expected_sign"] == 0).sum())
    assert counts["occupation (TBD)"] == n_ordinary
    assert counts["stereotypes (CrowS-Pairs gender)"] == 262  # CrowS-Pairs' gender pairs (Nangia et al. 2020)
    assert counts["thesis pairs"] == 10
    assert not pairs[["sent_stereo", "sent_anti"]].isna().any().any()


# ----------------------------------------------------------------------------- compare_tbe / compare_sbe
def _ppd_table(values: dict[tuple[str, str], list[float]]) -> pd.DataFrame:
    rows = []
    for (cat, prof), vs in values.items():
        for i, v in enumerate(vs):
            rows.append(
                {"category": cat, "profession": prof, "sentence": f"{prof} {i}", "ppd": v, "expected_sign": 0}
            )
    return pd.DataFrame(rows)


def test_compare_tbe_per_category_values_and_tests():
    rng = np.random.default_rng(0)
    before = {("a", f"p{i}"): list(0.3 + 0.05 * rng.standard_normal(4)) for i in range(8)}
    before.update({("b", f"q{i}"): list(0.2 + 0.05 * rng.standard_normal(4)) for i in range(3)})
    after = {k: [v * 0.4 for v in vs] for k, vs in before.items()}
    tb, ta = _ppd_table(before), _ppd_table(after)
    out = gt.compare_tbe(tb, ta).set_index("category")
    assert list(out.index) == ["a", "b", "all occupations"]
    a = out.loc["a"]
    assert a["n_professions"] == 8 and a["n_sentences"] == 32
    per_prof_before = np.array([np.mean(v) for k, v in before.items() if k[0] == "a"])
    assert a["appd_before"] == pytest.approx(per_prof_before.mean())
    assert a["abs_appd_after"] == pytest.approx(0.4 * np.abs(per_prof_before).mean())
    # independent: scipy's one-sided Wilcoxon on |PPD| and on |APPD|
    sa = tb[tb.category == "a"]["ppd"].abs().to_numpy()
    assert a["p_sentences"] == pytest.approx(sps.wilcoxon(sa, 0.4 * sa, alternative="greater").pvalue)
    assert a["p_professions"] == pytest.approx(
        sps.wilcoxon(np.abs(per_prof_before), 0.4 * np.abs(per_prof_before), alternative="greater").pvalue
    )
    assert a["p_professions"] == pytest.approx(1 / 256)  # all 8 professions shrink: exact p = 2^-8
    assert np.isnan(out.loc["b", "p_professions"])  # 3 professions: too few for that test
    assert out.loc["all occupations", "n_professions"] == 11


def test_compare_tbe_refuses_different_sentences():
    tb = _ppd_table({("a", "p"): [0.1, 0.2]})
    ta = _ppd_table({("a", "p"): [0.1]})
    with pytest.raises(ValueError, match="same sentences"):
        gt.compare_tbe(tb, ta)


def test_compare_sbe_matches_hand_computation():
    rng = np.random.default_rng(1)
    b = rng.uniform(1, 3, 30)
    a = b - rng.uniform(0, 0.5, 30)
    cats = ["x"] * 20 + ["y"] * 10
    sb = pd.DataFrame({"category": cats, "sld": b})
    sa = pd.DataFrame({"category": cats, "sld": a})
    out = gt.compare_sbe(sb, sa).set_index("category")
    assert out.loc["x", "asld_before"] == pytest.approx(b[:20].mean())
    assert out.loc["combined", "change"] == pytest.approx(a.mean() - b.mean())
    assert out.loc["y", "p"] == pytest.approx(sps.wilcoxon(b[20:], a[20:], alternative="greater").pvalue)
    assert out.loc["y", "p"] == pytest.approx(1 / 1024)  # every pair shrinks: exact 2^-10
    with pytest.raises(ValueError, match="same pairs"):
        gt.compare_sbe(sb, sa.iloc[::-1].reset_index(drop=True))


def test_appd_shrinkage_slope_interval_matches_statsmodels():
    rng = np.random.default_rng(2)
    x = rng.uniform(-0.1, 0.4, 40)
    y = 0.05 + 0.3 * x + 0.02 * rng.standard_normal(40)
    res = gt.appd_shrinkage(x, y)
    ols = sm.OLS(y, sm.add_constant(x)).fit()
    lo, hi = ols.conf_int(0.05)[1]
    assert res["slope"] == pytest.approx(ols.params[1])
    assert res["slope_ci"] == pytest.approx((lo, hi))


# ----------------------------------------------------------------------------- corpora
def test_size_matched_subsamples_to_the_smallest(caplog):
    groups = {"a": [f"a{i}" for i in range(50)], "b": [f"b{i}" for i in range(20)]}
    with caplog.at_level(logging.WARNING, logger="biaskit.debiasing.cds"):
        out = db.size_matched(groups, seed=3)
    assert {k: len(v) for k, v in out.items()} == {"a": 20, "b": 20}
    assert set(out["a"]) <= set(groups["a"]) and out["b"] == groups["b"]
    assert out == db.size_matched(groups, seed=3)
    assert "sub-sampled to 20" in caplog.text
    with pytest.raises(ValueError, match="empty"):
        db.size_matched({"a": ["x"], "b": []})


def test_reinforcement_sentences_are_fifty_each_female_and_not_test_sentences():
    tbe = {
        s.lower()
        for s in gt.tbd_pronoun_pairs(gt.build_tbd_instances())[["sent_stereo", "sent_anti"]].stack()
    }
    lex = load_gender_lexicon()
    for word, stem in (("pregnant", "pregnan"), ("breastfeed", "breastf")):
        sents = db.load_reinforcement_sentences(word)
        assert len(sents) == 50 and len(set(sents)) == 50
        assert all(stem in s.lower() for s in sents)
        assert not {s.lower() for s in sents} & tbe
        female = sum(any(lex.gender_of(w) == "female" for w in WORD.findall(s)) for s in sents)
        assert female == 50
    with pytest.raises(ValueError, match="available"):
        db.load_reinforcement_sentences("testicles")


def test_reinforced_corpus():
    assert db.reinforced_corpus(["a", "b"], ["x", "y"], 3) == ["a", "b"] + ["x", "y"] * 3
    assert db.reinforced_corpus(["a"], ["x"], 0) == ["a"]
    with pytest.raises(ValueError):
        db.reinforced_corpus(["a"], ["x"], -1)


def test_cds_gap_corpus_keeps_held_out_out_and_swaps():
    train, held = db.gap_split()
    c = db.cds_gap_corpus(300, seed=5)
    assert len(c) == 300 and not set(c.original) & set(held)
    assert c.n_available == len(train) and c.n_held_out_excluded == len(held)
    assert c.n_swapped == sum(a != b for a, b in zip(c.original, c.sentences, strict=True))
    assert c.sentences == db.cds_gap_corpus(300, seed=5).sentences
    ex = c.examples(2)
    assert list(ex.columns) == ["original", "after CDS"] and len(ex) == 2
    with pytest.raises(ValueError, match="available"):
        db.cds_gap_corpus(10**6)


def test_neutral_held_out_sentences_have_no_gendered_word():
    lex = load_gender_lexicon()
    neutral = db.neutral_held_out_sentences(100)
    assert 0 < len(neutral) <= 100
    assert not any(lex.gender_of(w) for s in neutral for w in WORD.findall(s))
    assert not set(neutral) & set(db.gap_split()[0])


def test_professions_in_corpus_whole_words_and_plurals():
    got = db.professions_in_corpus(
        ["nurse", "web developer"], ["Two nurses came.", "a nursery", "Web  developers"]
    )
    assert got == {"nurse": 1, "web developer": 1}


def test_redditbias_gender_file_counts():
    rows = read_redditbias_comments("gender")
    labels = pd.Series([r["label"] for r in rows]).value_counts().to_dict()
    assert labels == {"biased": 2033, "unbiased": 943, "unsure": 24}
    c = db.redditbias_corpora("gender")
    assert len(c["biased"]) == len(c["unbiased"]) == 943


def test_redditbias_reader_reports_bad_rows(tmp_path, caplog):
    folder = tmp_path / "RedditBias" / "data" / "gender"
    folder.mkdir(parents=True)
    content = (
        b"comment,bias_sent\n"
        b"women are too emotional,1\n"
        b"my wife is a nurse,0\n"
        b",1\n"
        b"no label here,\n"
        b"caf\xe9 owner is a woman,2\n"
    )
    (folder / "reddit_comments_gender_female_processed_phrase_annotated.csv").write_bytes(content)
    with caplog.at_level(logging.WARNING, logger="biaskit.data.training_text"):
        rows = read_redditbias_comments("gender", root=tmp_path)
    assert [(r["line"], r["label"]) for r in rows] == [(2, "biased"), (3, "unbiased"), (6, "unsure")]
    assert "\ufffd" in rows[-1]["comment"]
    assert "1 empty comment(s) skipped (lines [4])" in caplog.text
    assert "1 comment(s) with no bias label" in caplog.text and "lines [5]" in caplog.text
    assert "not valid UTF-8: 1 line(s)" in caplog.text and "lines [6]" in caplog.text
    with pytest.raises(ValueError, match="unknown RedditBias demographic"):
        read_redditbias_comments("age", root=tmp_path)


def test_jigsaw_corpora_split_toxic_and_severe(tmp_path):
    df = pd.DataFrame(
        {
            "comment_text": ["a b", "c d", "e f", "g h", "i j", "  "],
            "toxic": [1, 1, 1, 1, 0, 1],
            "severe_toxic": [0, 0, 1, 1, 0, 0],
        }
    )
    path = tmp_path / "train.csv"
    df.to_csv(path, index=False)
    raw = db.jigsaw_corpora(str(path), match_sizes=False)
    assert raw == {"toxic": ["a b", "c d"], "severe_toxic": ["e f", "g h"]}
    df.drop(columns="severe_toxic").to_csv(path, index=False)
    with pytest.raises(ValueError, match="severe_toxic"):
        db.jigsaw_corpora(str(path))
    with pytest.raises(FileNotFoundError):
        db.jigsaw_corpora(str(tmp_path / "nope.csv"))


# --------------------------------------------------------------------------- repeated fine-tunes (tiny model)
SUBJ = ["he", "she", "the doctor", "the nurse", "my friend"]
REST = ["reads a book", "sells a car", "paints the house", "writes a letter", "buys bread"]


def _sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.choice(SUBJ)} {rng.choice(REST)} ." for _ in range(n)]


@pytest.fixture(scope="module")
def tiny():
    return tiny_masked_lm(0, texts=_sentences(200, 0), vocab_size=200, initializer_range=0.2)


def _cfg():
    return dataclasses.replace(BARTL, device="cpu", epochs=1)


PAIRS = pd.DataFrame(
    {
        "category": ["x", "x", "x", "y", "y"],
        "sent_stereo": [
            "he reads a book .",
            "he sells a car .",
            "he buys bread .",
            "the doctor reads .",
            "he paints .",
        ],
        "sent_anti": [
            "she reads a book .",
            "she sells a car .",
            "she buys bread .",
            "the nurse reads .",
            "she paints .",
        ],
    }
)


def test_corpus_bias_by_fine_tuning_is_deterministic_and_tested(tiny):
    corpora = {"biased": _sentences(8, 1), "unbiased": _sentences(8, 2)}
    r1 = db.corpus_bias_by_fine_tuning(tiny, corpora, PAIRS, seeds=(1, 2), config=_cfg(), progress=False)
    r2 = db.corpus_bias_by_fine_tuning(tiny, corpora, PAIRS, seeds=(1, 2), config=_cfg(), progress=False)
    assert r1.sld["biased"].shape == (5, 2)
    np.testing.assert_array_equal(r1.sld["biased"], r2.sld["biased"])
    assert not np.array_equal(r1.sld["biased"][:, 0], r1.sld["biased"][:, 1])  # the seeds differ
    table = r1.table().set_index("category")
    assert table.loc["combined", "biased"] == pytest.approx(r1.sld["biased"].mean())
    assert table.loc["x", "debiased reference"] == pytest.approx(r1.reference[:3].mean())
    t = r1.compare("biased", "unbiased")
    assert isinstance(t, TestResult) and t.alternative == "greater"
    expected = sps.wilcoxon(
        r1.sld["biased"].mean(axis=1), r1.sld["unbiased"].mean(axis=1), alternative="greater"
    )
    assert t.p_value == pytest.approx(expected.pvalue)
    s = r1.seed_level("biased", "unbiased")
    assert 0 <= s["share_a_larger"] <= 1 and len(s["biased"]) == 2
    with pytest.raises(KeyError):
        r1.compare("toxic", "unbiased")


def test_learning_curve_rows_and_training_record(tiny):
    corpus = _sentences(40, 3)
    seen = []

    def evaluate(m):
        seen.append(m.name)
        return {"metric": float(len(seen))}

    curve = db.learning_curve(
        tiny, corpus, evaluate, sizes=(5, 10), n_samples=2, config=_cfg(), progress=False
    )
    assert curve[["n", "sample"]].values.tolist() == [[5, 0], [5, 1], [10, 0], [10, 1]]
    assert curve["steps"].tolist() == [5, 5, 10, 10]  # batch 1, one epoch: one step per sentence
    assert len(set(seen)) == 4  # four different fine-tunes
    with pytest.raises(ValueError, match="sizes"):
        db.learning_curve(tiny, corpus, evaluate, sizes=(50,), n_samples=1, config=_cfg(), progress=False)


def test_fine_tune_record_and_quiet_progress(tiny, tmp_path):
    from transformers.utils import logging as hf_logging

    before = hf_logging.is_progress_bar_enabled()
    with quiet_hf_progress():
        assert not hf_logging.is_progress_bar_enabled()
    assert hf_logging.is_progress_bar_enabled() == before
    tuned = fine_tune(tiny, _sentences(6, 4), config=_cfg(), output_dir=tmp_path / "ft", progress=False)
    rec = fine_tune_record(tuned)
    assert rec["steps"] == 6 and rec["completed"] and len(rec["losses"]) == 6
    assert fine_tune_record(tmp_path / "nothing") == {}
    assert json.loads((tmp_path / "ft" / "training.json").read_text())["steps"] == 6


def test_presets():
    assert db.BARZA_2023.n_debias is None and db.BARZA_2023.epochs == 3
    assert db.BARZA_2023.curve_sizes == (500, 1000, 2000, 4000, 6000, 8000, 10000, 12000)
    assert db.BARZA_2023.curve_samples == 5 and db.BARZA_2023.reinforce_separately
    assert db.CPU_REDUCED.config().epochs == 1 and db.CPU_REDUCED.config().learning_rate == 2e-5


@pytest.mark.slow
def test_fine_tune_many_in_processes_equals_serial(tiny, tmp_path, monkeypatch, caplog):
    from pathlib import Path

    long = " ".join(["he reads a book"] * 40) + " ."  # over the window: truncated, with a WARNING
    jobs = [(_sentences(6, 7), _cfg()), ([*_sentences(5, 8), long], dataclasses.replace(_cfg(), seed=3))]
    monkeypatch.setenv("BIASKIT_CACHE_DIR", str(tmp_path / "parallel"))  # inherited by the worker processes
    done = []
    with caplog.at_level(logging.WARNING, logger="biaskit"):
        parallel = db.fine_tune_many(
            tiny, jobs, n_jobs=2, progress=False, on_done=lambda i, m: done.append(i)
        )
    # the worker's WARNING is logged again in the parent, with the job's number
    assert "1 of 6 sentence(s) are longer than" in caplog.text and "(fine-tune 2 of 2)" in caplog.text
    monkeypatch.setenv("BIASKIT_CACHE_DIR", str(tmp_path / "serial"))  # trained again, not found in a cache
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in the workers: the thread count changes the float rounding of CPU kernels
    try:
        serial = db.fine_tune_many(tiny, jobs, n_jobs=1, progress=False)
    finally:
        torch.set_num_threads(threads)
    assert sorted(done) == [0, 1]
    for a, b in zip(serial, parallel, strict=True):
        assert str(tmp_path / "serial") in a.name and str(tmp_path / "parallel") in b.name
        assert Path(a.name).name == Path(b.name).name  # the same cache key: same model, data and settings
        sa, sb = a.model.state_dict(), b.model.state_dict()
        assert all(np.array_equal(sa[k].numpy(), sb[k].numpy()) for k in sa)
    bias = [m.model.state_dict()["cls.predictions.bias"].numpy() for m in serial]
    assert not np.array_equal(bias[0], bias[1])
    with pytest.raises(ValueError, match="n_jobs"):
        db.fine_tune_many(tiny, jobs, n_jobs=0)


@pytest.mark.slow
def test_fine_tune_many_loads_finished_runs_without_workers(tiny, tmp_path, monkeypatch, caplog):
    import concurrent.futures as cf

    long = " ".join(["he reads a book"] * 40) + " ."  # over the window: truncated, with a WARNING
    jobs = [([*_sentences(5, 8), long], _cfg()), (_sentences(9, 9), _cfg()), (_sentences(4, 10), _cfg())]
    monkeypatch.setenv("BIASKIT_CACHE_DIR", str(tmp_path))
    first = db.fine_tune_many(tiny, jobs[:1], n_jobs=2, progress=False)  # one job: trained in this process
    submitted = []
    real_pool = cf.ProcessPoolExecutor

    class Recording(real_pool):
        def submit(self, fn, model, sentences, *rest):
            submitted.append(len(sentences))
            return super().submit(fn, model, sentences, *rest)

    monkeypatch.setattr(cf, "ProcessPoolExecutor", Recording)
    done = []
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="biaskit"):
        models = db.fine_tune_many(tiny, jobs, n_jobs=2, progress=False, on_done=lambda i, m: done.append(i))
    assert submitted == [9, 4]  # the finished job is not sent to a worker; the longest pending goes first
    assert done[0] == 0 and sorted(done) == [0, 1, 2]
    assert models[0].name == first[0].name
    sa, sb = models[0].model.state_dict(), first[0].model.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    # the finished job's data WARNING is still shown, once, with its number
    assert (
        caplog.text.count("1 of 6 sentence(s) are longer than") == 1 and "(fine-tune 1 of 3)" in caplog.text
    )

    def no_pool(*a, **k):
        raise AssertionError("no worker process should start when every run is finished")

    monkeypatch.setattr(cf, "ProcessPoolExecutor", no_pool)
    again = db.fine_tune_many(tiny, jobs, n_jobs=2, progress=False)
    assert [m.name for m in again] == [m.name for m in models]


@pytest.mark.slow
def test_fine_tune_many_evaluates_in_the_workers(tiny, tmp_path, monkeypatch, caplog):
    import functools

    jobs = [(_sentences(6, 11), _cfg()), (_sentences(7, 12), _cfg()), (_sentences(5, 13), _cfg())]
    evaluate = functools.partial(db.pair_slds, pairs=PAIRS)
    monkeypatch.setenv("BIASKIT_CACHE_DIR", str(tmp_path / "parallel"))
    got = {}
    models = db.fine_tune_many(
        tiny, jobs, n_jobs=2, progress=False, evaluate=evaluate, on_done=lambda i, m, v: got.setdefault(i, v)
    )
    assert sorted(got) == [0, 1, 2]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in the workers
    try:
        for i, m in enumerate(models):  # the parent measures the same models the same way
            np.testing.assert_array_equal(got[i], db.pair_slds(m, PAIRS))
    finally:
        torch.set_num_threads(threads)
    assert not np.array_equal(got[0], got[1])
    # a closure cannot go to a worker: it runs in the parent, with an INFO record saying so, for a finished
    # run (found in the cache) and for a new one (trained in a worker)
    seen = []

    def closure(m):
        seen.append(m.name)
        return len(seen)

    with caplog.at_level(logging.INFO, logger="biaskit"):
        again = db.fine_tune_many(
            tiny,
            [jobs[0], (_sentences(4, 14), _cfg())],
            n_jobs=2,
            progress=False,
            evaluate=closure,
            on_done=lambda i, m, v: None,
        )
    assert seen == [m.name for m in again] and again[0].name == models[0].name
    assert "cannot be sent to a worker process" in caplog.text
    assert not db._sendable(closure) and db._sendable(evaluate)


def test_debiasing_summary_by_hand():
    ppd = pd.DataFrame(
        {
            "category": ["a", "a", "a", "a", "b", "b"],
            "profession": ["p", "p", "q", "q", "pregnant", "pregnant"],
            "ppd": [0.2, 0.4, -0.1, -0.3, -0.5, -0.7],
            "expected_sign": [0, 0, 0, 0, -1, -1],
        }
    )
    scored = pd.DataFrame({"category": ["x", "y", "x"], "sld": [1.0, 3.0, 2.0]})
    got = db.debiasing_summary(ppd, scored)
    # APPD(p) = 0.3, APPD(q) = -0.2 -> mean |APPD| 0.25; "pregnant" is gender-specific and left out
    assert got == pytest.approx({"mean |APPD|": 0.25, "ASLD x": 1.5, "ASLD y": 3.0})
    assert list(got) == ["mean |APPD|", "ASLD x", "ASLD y"]


def test_reinforcement_runs_follow_the_preset():
    both = db.reinforcement_runs(["a", "b"], db.CPU_REDUCED, n_extra=3)
    assert [(r.times, r.word) for r in both] == [(1, None), (2, None), (3, None)]
    extra = (
        db.load_reinforcement_sentences("pregnant")[:3] + db.load_reinforcement_sentences("breastfeed")[:3]
    )
    assert both[1].sentences == ["a", "b"] + extra * 2
    each = db.reinforcement_runs(["a"], db.BARZA_2023)
    assert [(r.times, r.word) for r in each] == [
        (k, w) for k in (1, 2, 3) for w in ("pregnant", "breastfeed")
    ]
    assert each[5].sentences == ["a"] + db.load_reinforcement_sentences("breastfeed") * 3
    assert len(each[0].sentences) == 51


def test_corpus_bias_reuses_a_given_reference(tiny):
    corpora = {"biased": _sentences(6, 1), "unbiased": _sentences(6, 2)}
    full = db.corpus_bias_by_fine_tuning(tiny, corpora, PAIRS, seeds=(1,), config=_cfg(), progress=False)
    given = db.corpus_bias_by_fine_tuning(
        tiny, corpora, PAIRS, seeds=(1,), config=_cfg(), reference_sld=full.reference, progress=False
    )
    np.testing.assert_array_equal(given.reference, full.reference)
    np.testing.assert_array_equal(given.sld["biased"], full.sld["biased"])
    with pytest.raises(ValueError, match="reference_sld"):
        db.corpus_bias_by_fine_tuning(
            tiny, corpora, PAIRS, seeds=(1,), config=_cfg(), reference_sld=[1.0], progress=False
        )
