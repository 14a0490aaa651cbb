"""Seed-frequency statistics, their correlations with metrics and the attribute-swap experiment."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from biaskit.metrics.direct_bias import direct_bias_experiment
from biaskit.metrics.frequency import (
    THESIS_SWAP_GENDER,
    THESIS_SWAP_RELIGION,
    attribute_set_pairs,
    attribute_swap_experiment,
    frequency_correlations,
    frequency_table,
    group_frequency_stats,
    mean_frequency,
    missing_vector_note,
    missing_vector_reasons,
    pmi_direct_bias_cells,
    pmi_direct_bias_correlations,
    seed_frequency_stats,
    weat_pmi_correlations,
    weat_pmi_experiment,
)
from biaskit.metrics.pmi import bias_pmi_table
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


def test_missing_vector_reasons_match_gensim_min_count():
    # independent check: gensim's own vocabulary decides which corpus words fall below min_count
    from gensim.models import Word2Vec

    rng = np.random.default_rng(3)
    vocab = [f"w{i}" for i in range(12)]
    sentences = [list(rng.choice(vocab, size=6, p=np.arange(12, 0, -1) / 78)) for _ in range(15)]
    sentences.append(["raro"])  # seen once
    model = Word2Vec(sentences, vector_size=8, min_count=3, epochs=1, workers=1, seed=0)
    kv = model.wv
    tokens = Counter(w for s in sentences for w in s)
    dropped_by_gensim = set(tokens) - set(kv.key_to_index)
    assert "raro" in dropped_by_gensim and len(dropped_by_gensim) >= 2  # the test can fail
    words = [*tokens, "nunca", "pantalones cortos", "raro"]
    reasons = missing_vector_reasons(words, kv, tokens, min_count=3)
    assert {w for w, r in reasons.items() if r == "below_min_count"} == dropped_by_gensim
    assert {w for w, r in reasons.items() if r == "below_min_count"} == {
        w for w, c in tokens.items() if c < 3
    }
    assert reasons["nunca"] == "absent" and reasons["pantalones cortos"] == "multiword"
    assert not set(reasons) & set(kv.key_to_index)  # words with a vector are never reported
    assert list(reasons).count("raro") == 1  # duplicates reported once
    # vectors cut to a subset (a file read with a limit): frequent words without a vector
    small = {w: kv[w] for w in kv.index_to_key[1:]}
    assert missing_vector_reasons([kv.index_to_key[0]], small, tokens, min_count=3) == {
        kv.index_to_key[0]: "not_in_vectors"
    }
    assert missing_vector_reasons(["nunca"], kv) == {"nunca": "not_in_vectors"}  # no counts: no reason
    with pytest.raises(TypeError):
        missing_vector_reasons("raro", kv)


def test_missing_vector_note_text():
    vec = {"señor": np.ones(3), "ella": np.ones(3)}
    counts = {"señor": 9, "ella": 7, "chico": 1, "abuela": 1, "cristiano": 2, "musulmán": 4, "raro": 8}
    words = ["señor", "chico", "abuelo", "abuela", "ella", "chica"]
    assert missing_vector_note(words, vec, counts, min_count=2, corpus_label="europarl-es-sample") == (
        "no vector for: chico, abuela (1 time each in europarl-es-sample, below min_count 2); "
        "abuelo, chica (not in europarl-es-sample)"
    )
    assert missing_vector_note(["cristiano", "musulmán", "raro"], vec, counts, min_count=5) == (
        "no vector for: cristiano, musulmán (2 and 4 times in the corpus, below min_count 5); "
        "raro (in the corpus, but not among the vectors' words)"
    )
    assert missing_vector_note(["chico"], vec, counts, min_count=2) == (
        "no vector for: chico (1 time in the corpus, below min_count 2)"
    )
    assert missing_vector_note(["señor", "ella"], vec, counts, min_count=2) == ""


def test_attribute_swap_notes_and_target_size():
    vec = _toy_vectors(2)
    tokens = {"a1": 9, "a2": 9, "b1": 9, "b2": 9, "q1": 2}
    sets = {
        "partial": (["a1", "q1"], ["b1", "b2"]),
        "rare": (["zz", "q1"], ["qq"]),
    }
    X, Y = ["x1", "x2", "nox"], ["y1", "y2"]
    df = attribute_swap_experiment(
        X,
        Y,
        sets,
        vec,
        language=None,
        token_counts=tokens,
        min_count=5,
        corpus_label="toy",
        names=("tx", "ty"),
    )
    # the partial row is WEAT on the words that have a vector, computed independently
    want = weat(["x1", "x2"], ["y1", "y2"], ["a1"], ["b1", "b2"], vec)
    assert df.loc[0, "d"] == pytest.approx(want.effect_size) and df.loc[0, "p_value"] == pytest.approx(
        want.p_value
    )
    assert df.loc[0, "coverage"] == "X 2/3 · Y 2/2 · A 1/2 · B 2/2"
    assert 1 / math.comb(4, 2) > 0.05  # 2 + 2 target words: 6 splits, p >= 1/6
    assert df.loc[0, "note"] == (
        "only 2 + 2 target words have a vector, so p cannot fall below 0.167; "
        "computed without the words that have no vector: q1 (2 times in toy, below min_count 5)"
    )
    assert np.isnan(df.loc[1, "d"]) and df.loc[1, "error"]
    assert df.loc[1, "note"] == (
        "not computed: neither A nor B has a word with a vector; no vector for: zz, qq (not in toy); "
        "q1 (2 times in toy, below min_count 5)"
    )
    # one word per target set: d = (a - b) / (|a - b| / sqrt 2) = +-sqrt(2) whatever the vectors ...
    for seed in (0, 1, 2):
        forced = weat(["x1"], ["y1"], ["a1", "a2"], ["b1"], _toy_vectors(seed))
        assert abs(forced.effect_size) == pytest.approx(math.sqrt(2))
    # ... so such a row is not computed, with the reason
    one = attribute_swap_experiment(["x1", "nox"], ["y1"], {"s": (["a1", "a2"], ["b1"])}, vec, language=None)
    assert np.isnan(one.loc[0, "d"])
    assert one.loc[0, "note"] == (
        "not computed: only 1 of the 2 words of 'X' has a vector (1 not among the vectors' words) and only "
        "1 of the 1 words of 'Y' has a vector; with one word per target set, d is ±1.41 whatever the vectors"
    )
    # 1 + 2 target words: C(3, 1) = 3 splits, p >= 1/3; computed, with that caveat
    few = attribute_swap_experiment(["x1"], ["y1", "y2"], {"s": (["a1", "q1"], ["b1"])}, vec, language=None)
    want = weat(["x1"], ["y1", "y2"], ["a1"], ["b1"], vec)
    assert few.loc[0, "d"] == pytest.approx(want.effect_size) and few.loc[0, "p_value"] >= 1 / 3 - 1e-12
    assert few.loc[0, "note"] == (
        "only 1 + 2 target words have a vector, so p cannot fall below 0.333; "
        "computed without the words that have no vector: q1 (not among the vectors' words)"
    )
    # ... so min_target_words=2 leaves such a row uncomputed, with the reason
    two = attribute_swap_experiment(
        ["x1", "nox"],
        Y,
        {"s": (["a1"], ["b1", "q9"])},
        vec,
        language=None,
        token_counts={"nox": 0, "q9": 1},
        min_count=2,
        names=("tx", "ty"),
        min_target_words=2,
    )
    assert np.isnan(two.loc[0, "d"])
    assert two.loc[0, "note"] == (
        "not computed: only 1 of the 2 words of 'tx' has a vector (1 not in the corpus); at least 2 per "
        "target set are needed; among the attribute words, no vector for: q9 (1 time in the corpus, "
        "below min_count 2)"
    )
    with pytest.raises(ValueError, match="min_target_words"):
        attribute_swap_experiment(X, Y, sets, vec, language=None, min_target_words=0)


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


# --------------------------------------------------------------------------- seed 000 §3.5.2 and §3.5.3
def _toy_corpus(seed: int = 0, n_sentences: int = 600) -> tuple[list[list[str]], list[str]]:
    """Random sentences over a small vocabulary with Zipf-like word probabilities."""
    rng = np.random.default_rng(seed)
    vocab = [f"n{i}_{k}" for i in range(8) for k in range(3)]
    vocab += ["m1", "m2", "m3", "f1", "f2", "f3", "c1", "c2", "i1", "i2"]
    vocab += ["x1", "x2", "x3", "y1", "y2", "y3"] + [f"z{k}" for k in range(10)]
    p = 1 / np.arange(1, len(vocab) + 1) ** 0.6
    p = p[rng.permutation(len(vocab))]
    p /= p.sum()
    sentences = [list(rng.choice(vocab, size=8, p=p)) for _ in range(n_sentences)]
    return sentences, vocab


def _hand_pmi(X, A, B, sentences) -> float:
    """log p(X|A) / p(X|B) with sentence counts, by plain set arithmetic (seed 000 section 3.1.2)."""
    sets = [set(s) for s in sentences]
    with_a = [s for s in sets if s & set(A)]
    with_b = [s for s in sets if s & set(B)]
    p_xa = sum(bool(s & set(X)) for s in with_a) / len(with_a)
    p_xb = sum(bool(s & set(X)) for s in with_b) / len(with_b)
    return math.log(p_xa / p_xb)


def test_pmi_direct_bias_correlations_match_hand_computation():
    from gensim.models import KeyedVectors

    sentences, vocab = _toy_corpus()
    rng = np.random.default_rng(1)
    kv = KeyedVectors(vector_size=12)
    kv.add_vectors(vocab, rng.normal(size=(len(vocab), 12)).astype(np.float32))
    neutral = {f"N{i}": [f"n{i}_{k}" for k in range(3)] for i in range(8)}
    chars = {"gender": (["m1", "m2"], ["f1", "f2"]), "religion": (["c1"], ["i1"])}
    dirs = {ch: rng.normal(size=12) for ch in chars}

    # the library's pipeline, as notebook 04 runs it
    pmi = bias_pmi_table(neutral, chars, sentences).pivot(
        index="group", columns="characteristic", values="pmi"
    )
    db = {ch: direct_bias_experiment(kv, neutral, g, n_resamples=99).values for ch, g in dirs.items()}
    counts = Counter(w for s in sentences for w in set(s))
    freq = group_frequency_stats(frequency_table(neutral, counts, language=None))
    cells = pmi_direct_bias_cells(pmi, db, freq)
    res = pmi_direct_bias_correlations(cells)

    # the same quantities by hand
    hand = []
    for ch, (A, B) in chars.items():
        g = dirs[ch] / np.linalg.norm(dirs[ch])
        for words in neutral.values():
            W = np.array([kv[w] for w in words], dtype=float)
            cos = W @ g / np.linalg.norm(W, axis=1)
            c = [counts[w] for w in words]
            hand.append(
                (ch, _hand_pmi(words, A, B, sentences), np.abs(cos).mean(), np.mean(c), np.var(c, ddof=1))
            )
    hand_df = pd.DataFrame(hand, columns=["ch", "pmi", "db", "mean", "var"])
    assert len(cells) == 16 and np.isfinite(hand_df.to_numpy()[:, 1:].astype(float)).all()
    np.testing.assert_allclose(cells["BIAS_PMI"], hand_df["pmi"], rtol=1e-10)
    np.testing.assert_allclose(cells["DirectBias"], hand_df["db"], rtol=1e-6)

    def get(scope, x, method):
        return res[(res.scope == scope) & (res.x == x) & (res.method == method)].iloc[0]

    for scope, sub in [("all", hand_df), ("gender", hand_df[hand_df.ch == "gender"])]:
        for x, col in [("BIAS_PMI", "pmi"), ("mean_count", "mean"), ("var_count", "var")]:
            for method, fn in [("pearson", sps.pearsonr), ("spearman", sps.spearmanr)]:
                want = fn(sub[col], sub["db"])
                row = get(scope, x, method)
                assert row.n == len(sub)
                assert row.r == pytest.approx(want.statistic, abs=1e-6)
                assert row.p_value == pytest.approx(want.pvalue, rel=1e-5)
        want = sps.pearsonr(sub["pmi"].abs(), sub["db"])
        assert get(scope, "|BIAS_PMI|", "pearson").r == pytest.approx(want.statistic, abs=1e-6)
    assert set(res.scope) == {"all", "gender", "religion"}
    assert get("all", "BIAS_PMI", "pearson").result.ci is not None


def test_pmi_direct_bias_cells_align_and_drop():
    pmi = pd.DataFrame(
        {"gender": [0.1, np.nan, 0.3, -0.2], "religion": [1.0, 2.0, 4.0, 3.0]}, index=["a", "b", "c", "d"]
    )
    db = {
        "gender": pd.Series([0.2, 0.5, 0.1, 0.4], index=["c", "b", "a", "d"]),
        "other": pd.Series([1.0], index=["a"]),
    }
    cells = pmi_direct_bias_cells(pmi, db)
    assert list(cells["cell"]) == ["a / gender", "b / gender", "c / gender", "d / gender"]  # shared only
    assert cells.set_index("group").loc["c", "DirectBias"] == pytest.approx(0.2)  # aligned by name
    res = pmi_direct_bias_correlations(cells, x_columns=("BIAS_PMI",))
    row = res[(res.scope == "all") & (res.method == "pearson")].iloc[0]
    assert row.n == 3 and row.dropped == ["b / gender"]
    assert row.r == pytest.approx(sps.pearsonr([0.1, 0.3, -0.2], [0.1, 0.2, 0.4]).statistic)
    too_few = pmi_direct_bias_correlations(cells, x_columns=("BIAS_PMI",), min_n=4)
    assert too_few["r"].isna().all() and (too_few["n"] == 3).all()
    with pytest.raises(ValueError, match="share no characteristic"):
        pmi_direct_bias_cells(pmi, {"x": db["gender"]})


def test_attribute_set_pairs():
    A, B = ["m1", "m2", "m3", "m4", "m5"], ["f1", "f2", "f3", "f4", "f5"]
    every = attribute_set_pairs(A, B, size=2, n_pairs=30)
    assert len(every) == 10  # C(5, 2): fewer than asked, all of them
    assert every["m1, m2 vs f1, f2"] == (["m1", "m2"], ["f1", "f2"])
    for a, b in every.values():  # aligned: the same positions on both sides
        assert [w[1] for w in a] == [w[1] for w in b]
    some = attribute_set_pairs(A, B, size=2, n_pairs=4, random_state=3)
    assert len(some) == 4 and set(some) <= set(every)
    assert some == attribute_set_pairs(A, B, size=2, n_pairs=4, random_state=3)
    free = attribute_set_pairs(["c1", "c2", "c3"], ["i1", "i2", "i3", "i4"], aligned=False, n_pairs=100)
    assert len(free) == 3 * 6
    with pytest.raises(ValueError, match="equal length"):
        attribute_set_pairs(["a"], ["b", "c"])


def test_weat_pmi_experiment_matches_hand_computation():
    sentences, _ = _toy_corpus(seed=2, n_sentences=800)
    vec = {w: v for w, v in _toy_vectors(3).items()}
    rng = np.random.default_rng(4)
    for w in ("m1", "m2", "m3", "f1", "f2", "f3"):
        vec[w] = rng.normal(size=25)
    X, Y = ["x1", "x2", "x3"], ["y1", "y2", "y3"]
    pairs = attribute_set_pairs(["m1", "m2", "m3"], ["f1", "f2", "f3"], size=1, n_pairs=30)
    pairs.update(attribute_set_pairs(["m1", "m2", "m3"], ["f1", "f2", "f3"], size=2, n_pairs=30))
    pairs["missing"] = (["qq"], ["rr"])
    table = weat_pmi_experiment(X, Y, pairs, vec, sentences, test=WEAT(n_permutations=100))
    assert len(table) == 7 and np.isnan(table.iloc[-1]["d"]) and "WEAT" in table.iloc[-1]["error"]

    def unit(w):
        return vec[w] / np.linalg.norm(vec[w])

    hand_d, hand_delta = [], []
    for A, B in list(pairs.values())[:6]:
        s = np.array(
            [np.mean([unit(w) @ unit(a) for a in A]) - np.mean([unit(w) @ unit(b) for b in B]) for w in X + Y]
        )
        hand_d.append((s[:3].mean() - s[3:].mean()) / s.std(ddof=1))
        hand_delta.append(_hand_pmi(X, A, B, sentences) - _hand_pmi(Y, A, B, sentences))
    np.testing.assert_allclose(table["d"].iloc[:6], hand_d, rtol=1e-9)
    np.testing.assert_allclose(table["delta_pmi"].iloc[:6], hand_delta, rtol=1e-10)

    res = weat_pmi_correlations(table)
    for method, fn in [("pearson", sps.pearsonr), ("spearman", sps.spearmanr)]:
        want = fn(hand_delta, hand_d)
        row = res[res.method == method].iloc[0]
        assert row.n == 6 and row.dropped == ["missing"]
        assert row.r == pytest.approx(want.statistic, abs=1e-9)
        assert row.p_value == pytest.approx(want.pvalue, rel=1e-6)
