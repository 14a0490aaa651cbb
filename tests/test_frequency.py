"""Seed-frequency statistics, their correlations with metrics and the attribute-swap experiment."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from biaskit.metrics.frequency import (
    THESIS_SWAP_GENDER,
    THESIS_SWAP_RELIGION,
    attribute_swap_experiment,
    frequency_correlations,
    frequency_table,
    group_frequency_stats,
    mean_frequency,
    seed_frequency_stats,
)
from biaskit.metrics.weat import WEAT, group_associations, weat

GROUPS = {
    "g1": ["casa", "perro", "gato"],
    "g2": ["mesa", "silla", "pantalones cortos", "mesa"],
    "g3": ["zzz", "casa"],
}
COUNTS = Counter({"casa": 10, "perro": 4, "gato": 1, "mesa": 7, "silla": 3})


def test_frequency_table_rows_and_decisions():
    df = frequency_table(GROUPS, COUNTS, language=None, n_units=1000)
    # duplicate 'mesa' counted once; multi-word kept in the table, excluded from corpus statistics
    assert df.groupby("group").size().to_dict() == {"g1": 3, "g2": 3, "g3": 2}
    row = df[(df.group == "g2") & (df.word == "pantalones cortos")].iloc[0]
    assert row.multiword and not row.use_corpus and row.corpus_count == 0
    assert df.loc[df.word == "zzz", "corpus_count"].item() == 0
    assert df.loc[(df.group == "g1") & (df.word == "casa"), "per_million"].item() == pytest.approx(10_000)


def test_group_stats_match_numpy():
    stats = group_frequency_stats(frequency_table(GROUPS, COUNTS, language=None))
    assert list(stats.index) == ["g1", "g2", "g3"]
    assert stats.loc["g1", "mean_count"] == pytest.approx(np.mean([10, 4, 1]))
    assert stats.loc["g1", "var_count"] == pytest.approx(np.var([10, 4, 1], ddof=1))
    assert stats.loc["g2", "mean_count"] == pytest.approx(5.0)  # multi-word left out
    assert stats.loc["g3", "mean_count"] == pytest.approx(5.0)  # absent word counts 0
    assert stats.loc["g3", "n_in_corpus"] == 1
    excl = group_frequency_stats(frequency_table(GROUPS, COUNTS, language=None), absent="exclude")
    assert excl.loc["g3", "mean_count"] == pytest.approx(10.0)
    assert math.isnan(excl.loc["g3", "var_count"])  # one value: no sample variance
    zero = group_frequency_stats(frequency_table(GROUPS, COUNTS, language=None, multiword="zero"))
    assert zero.loc["g2", "mean_count"] == pytest.approx(10 / 3)


def test_wordfreq_columns_consistent():
    df = frequency_table({"g": ["señor", "señora", "abuela"]}, language="es")
    # Zipf = log10(frequency per billion words), rounded to 2 decimals by wordfreq
    np.testing.assert_allclose(df["zipf"], np.log10(df["wordfreq"] * 1e9), atol=0.01)
    assert df.set_index("word").loc["señor", "wordfreq"] > df.set_index("word").loc["abuela", "wordfreq"]
    stats = seed_frequency_stats({"g": ["señor", "señora", "abuela"]}, None)
    assert stats.loc["g", "mean_zipf"] == pytest.approx(df["zipf"].mean())
    assert "mean_count" not in stats


def test_mean_frequency_thesis_arithmetic():
    # the thesis's "mean frequency of the attribute set" is the plain mean over A u B
    counts = {"señor": 40000, "él": 30000, "señora": 5000, "ella": 4883}
    assert mean_frequency(["señor", "él", "señora", "ella"], counts) == pytest.approx(19970.75)
    assert mean_frequency(["nada"], counts) == 0.0
    with pytest.raises(ValueError):
        mean_frequency([], counts)


def test_correlations_match_scipy_and_align_by_name():
    rng = np.random.default_rng(0)
    names = [f"g{i}" for i in range(12)]
    freq = pd.DataFrame({"mean_count": rng.gamma(2, 50, 12), "var_count": rng.gamma(2, 500, 12)}, index=names)
    metric = pd.Series(rng.normal(size=12), index=names)
    metric.iloc[3] = np.nan
    shuffled = metric.sample(frac=1, random_state=1)  # different order: must align by group name
    res = frequency_correlations(freq, {"pmi": shuffled}, frequency_columns=("mean_count", "var_count"))
    assert len(res) == 4
    ok = ~metric.isna()
    r = res[(res.frequency == "mean_count") & (res.method == "pearson")].iloc[0]
    want = sps.pearsonr(freq["mean_count"][ok], metric[ok])
    assert r.r == pytest.approx(want.statistic) and r.p_value == pytest.approx(want.pvalue)
    assert r.n == 11 and r.dropped == ["g3"]
    s = res[(res.frequency == "var_count") & (res.method == "spearman")].iloc[0]
    want = sps.spearmanr(freq["var_count"][ok], metric[ok])
    assert s.r == pytest.approx(want.statistic) and s.p_value == pytest.approx(want.pvalue)
    with pytest.raises(ValueError, match="lacks columns"):
        frequency_correlations(freq, {"pmi": metric}, frequency_columns=("mean_zipf",))


def _toy_vectors(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    words = ["x1", "x2", "x3", "y1", "y2", "y3", "a1", "a2", "b1", "b2", "c1", "c2", "d1", "d2"]
    return {w: rng.normal(size=25) for w in words}


def test_attribute_swap_matches_direct_weat():
    vec = _toy_vectors()
    counts = {"a1": 100, "a2": 50, "b1": 30, "b2": 20, "c1": 1, "c2": 2, "d1": 3}
    sets = {
        "frequent": (["a1", "a2"], ["b1", "b2"]),
        "rare": (["c1", "c2"], ["d1", "d2"]),
        "oov": (["q"], ["r"]),
    }
    df = attribute_swap_experiment(["x1", "x2", "x3"], ["y1", "y2", "y3"], sets, vec, counts, language=None)
    assert list(df.attributes) == ["frequent", "rare", "oov"]
    for i, (A, B) in enumerate([sets["frequent"], sets["rare"]]):
        r = weat(["x1", "x2", "x3"], ["y1", "y2", "y3"], A, B, vec)
        assert df.loc[i, "d"] == pytest.approx(r.effect_size)
        assert df.loc[i, "p_value"] == pytest.approx(r.p_value)
        assert df.loc[i, "permutation"] == "exact"
    assert df.loc[0, "mean_freq"] == pytest.approx(50.0)
    assert df.loc[1, "mean_freq"] == pytest.approx(1.5)
    assert df.loc[0, "freq_ratio_A_B"] == pytest.approx(3.0)
    assert np.isnan(df.loc[2, "d"]) and "vocabulary" in df.loc[2, "error"]


def test_group_associations_match_weat_scores():
    vec = _toy_vectors(1)
    groups = {"X": ["x1", "x2", "x3"], "Y": ["y1", "y2"], "none": ["qq"]}
    ga = group_associations(groups, ["a1", "a2"], ["b1", "b2"], vec)
    r = WEAT().run(["x1", "x2", "x3"], ["y1", "y2"], ["a1", "a2"], ["b1", "b2"], vec)
    assert ga.loc["X", "mean_s"] == pytest.approx(r.details["mean_s_X"])
    assert ga.loc["Y", "mean_s"] == pytest.approx(r.details["mean_s_Y"])
    s = np.array([r.details["association"][w] for w in ["x1", "x2", "x3"]])
    assert ga.loc["X", "sc_weat_d"] == pytest.approx(s.mean() / s.std(ddof=1))
    assert np.isnan(ga.loc["none", "mean_s"])


def test_thesis_swap_definitions():
    for spec in (THESIS_SWAP_GENDER, THESIS_SWAP_RELIGION):
        assert set(spec["attribute_sets"]) == set(spec["published"])
        for A, B in spec["attribute_sets"].values():
            assert len(A) == len(B) == 2
    pub = THESIS_SWAP_GENDER["published"]
    # frequent attribute words: larger p than rare ones in the thesis (Table 3.6)
    assert pub["señor, él vs señora, ella"]["p"] > pub["chico, abuelo vs chica, abuela"]["p"]


def test_bad_input():
    with pytest.raises(ValueError, match="empty"):
        frequency_table({"g": []}, COUNTS, language=None)
    with pytest.raises(TypeError, match="list of words"):
        frequency_table({"g": "casa"}, COUNTS, language=None)
    with pytest.raises(ValueError, match="multiword"):
        frequency_table(GROUPS, COUNTS, language=None, multiword="drop")
    with pytest.raises(ValueError, match="pair"):
        attribute_swap_experiment(["x1"], ["y1"], {"bad": (["a1"],)}, _toy_vectors(), language=None)
