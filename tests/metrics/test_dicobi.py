"""Sayenju (seed 003, chapters 2, 4, 5): DiCoBi, SAME, one-word WEAT, domain_gain, zones and arrows.

DiCoBi, SAME and WEAT values in the dissertation need bert-base-uncased (not available
offline), so those metrics are checked against naive loops and algebraic properties;
the domain_gain tables are recomputed from the printed Table 5.4 values.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from biaskit.metrics import dicobi as dc


def _cos(u, v):
    return float(np.dot(u, v) / (np.linalg.norm(u) * np.linalg.norm(v)))


@pytest.fixture
def rng():
    return np.random.default_rng(0)


# --------------------------------------------------------------------------- DiCoBi
def test_singleton_is_the_cosine_of_differences(rng):
    x, y, a, b = rng.normal(size=(4, 20))
    r = dc.dicobi_vectors(x, y, a, b)
    assert r.value == pytest.approx(_cos(x - y, a - b))
    assert r.cosines.shape == (1, 1, 1, 1) and r.argmax == (0, 0, 0, 0)


@pytest.mark.parametrize("agg", ["max", "min", "mean", "maxabs"])
def test_general_form_equals_naive_loops(rng, agg):
    X, Y, A, B = (
        rng.normal(size=(2, 8)),
        rng.normal(size=(3, 8)),
        rng.normal(size=(2, 8)),
        rng.normal(size=(4, 8)),
    )
    vals = {
        (i, j, k, t): _cos(X[i] - Y[j], A[k] - B[t])
        for i, j, k, t in itertools.product(range(2), range(3), range(2), range(4))
    }
    r = dc.dicobi_vectors(X, Y, A, B, aggregate=agg)
    v = np.array(list(vals.values()))
    expected = {"max": v.max(), "min": v.min(), "mean": v.mean(), "maxabs": v[np.argmax(np.abs(v))]}[agg]
    assert r.value == pytest.approx(expected)
    if agg != "mean":
        assert vals[r.argmax] == pytest.approx(r.value)


def test_dicobi_properties(rng):
    X, Y, A, B = (rng.normal(size=(3, 10)) for _ in range(4))
    base = dc.dicobi_vectors(X[0], Y[0], A[0], B[0]).value
    assert dc.dicobi_vectors(Y[0], X[0], A[0], B[0]).value == pytest.approx(-base)  # antisymmetric in x <-> y
    assert dc.dicobi_vectors(A[0], B[0], X[0], Y[0]).value == pytest.approx(base)  # (X,Y) <-> (A,B)
    off = rng.normal(size=10) * 5
    g = dc.dicobi_vectors(X, Y, A, B, aggregate="maxabs").value
    assert dc.dicobi_vectors(X + off, Y + off, A + off, B + off, aggregate="maxabs").value == pytest.approx(
        g
    )  # common offset
    assert dc.dicobi_vectors(3 * X, 3 * Y, 3 * A, 3 * B, aggregate="maxabs").value == pytest.approx(
        g
    )  # scale
    assert -1 <= g <= 1


def test_zero_difference_vectors_are_left_out(rng, caplog):
    v = rng.normal(size=(3, 6))
    r = dc.dicobi_vectors(v[[0, 1]], v[[0]], v[[1]], v[[2]])  # x_0 - y_0 = 0
    assert r.n_undefined == 1 and np.isfinite(r.value)
    assert r.value == pytest.approx(_cos(v[1] - v[0], v[1] - v[2]))
    with pytest.raises(ValueError, match="undefined"):
        dc.dicobi_vectors(v[0], v[0], v[1], v[2])
    with pytest.raises(ValueError, match="dimension"):
        dc.dicobi_vectors(v[0], v[1], v[2], np.ones(5))


def test_dicobi_on_words_and_worked_example_shapes(rng):
    ex = dc.load_dicobi_experiments()["dicobi_example"]  # Eqs. 4.3-4.8
    words = ex["X"] + ex["Y"] + ex["A"] + ex["B"]
    kv = {w: rng.normal(size=12) for w in words}
    r = dc.dicobi(kv, ex["X"], ex["Y"], ex["A"], ex["B"])
    assert r.cosines.shape == (2, 3, 2, 2)  # diff(X, Y) is 2x3, diff(A, B) is 2x2
    x, y, a, b = r.argmax
    assert r.value == pytest.approx(_cos(kv[x] - kv[y], kv[a] - kv[b]))
    assert r.words["Y"] == ["female", "woman", "lady"]
    with pytest.raises(KeyError):
        dc.dicobi(kv, ["nope"], ex["Y"], ex["A"], ex["B"], policy="raise")


# --------------------------------------------------------------------------- WEAT and SAME
@pytest.mark.parametrize("seed", range(5))
def test_one_word_weat_is_plus_minus_two(seed):
    from biaskit.metrics.weat import one_word_effect_size

    x, y, a, b = np.random.default_rng(seed).normal(size=(4, 768))
    d0 = dc.sayenju_weat(x, y, a, b, ddof=0)
    assert abs(d0) == pytest.approx(2.0, abs=1e-12) == one_word_effect_size(0)
    assert abs(dc.sayenju_weat(x, y, a, b, ddof=1)) == pytest.approx(math.sqrt(2))


def test_printed_weat_values_are_two_at_printed_precision():
    exp = dc.load_dicobi_experiments()
    for row in exp["word_level"]:  # 2.000 / 1.999 / -1.999: +-2 truncated to three decimals
        assert abs(abs(row["weat"]) - 2.0) <= 0.001


def test_same_against_naive(rng):
    W, A1, A2 = rng.normal(size=(5, 9)), rng.normal(size=(3, 9)), rng.normal(size=(4, 9))
    a1 = np.mean([v / np.linalg.norm(v) for v in A1], axis=0)
    a2 = np.mean([v / np.linalg.norm(v) for v in A2], axis=0)
    per = [_cos(w, a1 - a2) for w in W]
    s = dc.same_vectors(W, A1, A2)
    assert s["same"] == pytest.approx(np.mean(per)) == pytest.approx(s["skew"])
    assert dc.same_vectors(W, A1, A2, absolute=True)["same"] == pytest.approx(np.mean(np.abs(per)))
    assert s["stereotype"] == pytest.approx(np.std(per))
    # swapping the attribute sets flips the signed value: negative SAME values (as printed) need the signed
    # form
    assert dc.same_vectors(W, A2, A1)["same"] == pytest.approx(-s["same"])
    assert dc.same_vectors(W, A2, A1, absolute=True)["same"] >= 0


def test_word_level_table_on_bundled_glove():
    """Categorical validation of seed 003 Table 4.2 on the bundled GloVe subset: every correct
    country-capital quadruple scores a higher DiCoBi than every incorrect one, while the
    one-word WEAT is +-2 everywhere (it cannot separate them)."""
    from biaskit.core.paths import data_dir
    from biaskit.embeddings.vectors import load_vectors

    kv = load_vectors(data_dir() / "sayenju" / "glove_6b_50d_subset.txt.gz", format="glove")
    exp = dc.load_dicobi_experiments()
    t = dc.word_level_table(kv, exp["word_level"], lowercase=True)
    assert (t["error"] == "").all()
    np.testing.assert_allclose(np.abs(t["weat"]), 2.0, atol=1e-9)
    correct = t.loc[t.bias_type == "correct_capital", "dicobi"]
    incorrect = t.loc[t.bias_type == "incorrect_capital", "dicobi"]
    assert correct.min() > incorrect.max()
    assert (t["dicobi"].abs() <= 1).all()
    assert "published_dicobi" in t.columns


# --------------------------------------------------------------------------- domain_gain
def test_domain_gain_against_naive(rng):
    x, A, B = rng.normal(size=6), rng.normal(size=(4, 6)), rng.normal(size=(3, 6)) + 0.5
    da = np.mean([np.linalg.norm(x - a) for a in A])
    db = np.mean([np.linalg.norm(x - b) for b in B])
    assert dc.domain_gain_difference(x, A, B) == pytest.approx(da - db)
    assert dc.domain_gain(x, A, B) == pytest.approx(np.clip((da - db) / min(da, db), -1, 1))
    near_b = B.mean(axis=0)
    assert dc.domain_gain(near_b, A + 10, B) > 0  # close to the domain words -> positive
    far = dc.domain_gain(np.zeros(2), [[0.1, 0.0]], [[10.0, 0.0]], clip=False)
    assert far < -1 and dc.domain_gain(np.zeros(2), [[0.1, 0.0]], [[10.0, 0.0]]) == -1.0
    with pytest.raises(ValueError):
        dc.domain_gain(np.zeros(2), [[0.0, 0.0]], [[1.0, 0.0]])


TABLE_5_4 = {  # seed 003, Table 5.4: (Model_General, Model_Domain)
    "examination": (0.168, 0.200),
    "Resident": (0.010, 0.013),
    "heart": (-0.005, 0.013),
    "drug": (-0.041, -0.031),
    "Private": (0.106, 0.089),
    "Premium": (-0.011, 0.001),
    "admit": (-0.033, -0.025),
    "shot": (-0.165, -0.174),
    "blood": (-0.173, -0.116),
}


def test_neutral_zone_from_table_5_4():
    general = [g for g, _ in TABLE_5_4.values()]
    assert np.percentile(np.abs(general), 80) == pytest.approx(0.166, abs=5e-4)  # "0.166" in section 5.4
    assert dc.neutral_zone_alpha(general) == (-0.1, 0.1)
    assert dc.neutral_zone_alpha([0.37, 0.37, 0.37]) == (-0.3, 0.3)  # the dissertation's example (truncation)


def test_table_5_5_averages():
    g = np.mean([v[0] for v in TABLE_5_4.values()])
    d = np.mean([v[1] for v in TABLE_5_4.values()])
    assert g == pytest.approx(-0.016, abs=5e-4) and d == pytest.approx(-0.003, abs=5e-4)
    t = dc.tendency_change(g, d, -0.1, 0.1)
    assert (t.zone_from, t.zone_to, t.tendency) == ("Neutral-", "Neutral-", "Positive")


EXPECTED_ARROWS = {
    "examination": ("Domain", "Domain", "Domain gain further increases", "Positive"),
    "Resident": ("Neutral+", "Neutral+", "Further Neutral+ increase", "Positive"),
    "heart": ("Neutral-", "Neutral+", "Further Neutral domain gain", "Positive"),
    "drug": ("Neutral-", "Neutral-", "Further Neutral- increase", "Positive"),
    "Private": ("Domain", "Neutral+", "Word shifts from Domain to Neutral+", "Negative"),
    "Premium": ("Neutral-", "Neutral+", "Further Neutral domain gain", "Positive"),
    "admit": ("Neutral-", "Neutral-", "Further Neutral- increase", "Positive"),
    "shot": ("Layman", "Layman", "Layman gain further increases", "Negative"),
    "blood": ("Layman", "Layman", "Layman gain further decreases", "Positive"),
}


@pytest.mark.parametrize("word", list(TABLE_5_4))
def test_table_5_4_arrows(word):
    g, d = TABLE_5_4[word]
    t = dc.tendency_change(g, d, -0.1, 0.1)
    assert (t.zone_from, t.zone_to, t.description, t.tendency) == EXPECTED_ARROWS[word]


def test_text_claims_on_table_5_4():
    decreasing = {w for w, (g, d) in TABLE_5_4.items() if d < g}
    assert decreasing == {"Private", "shot"}  # "higher ... for all words except 'Private' and 'shot'"
    assert {w for w, (g, _) in TABLE_5_4.items() if g > 0} == {"examination", "Resident", "Private"}


def test_zones_and_transitions():
    assert dc.domain_zone(0.1, -0.1, 0.1) == "Neutral+"  # a bound counts as neutral
    assert dc.domain_zone(0.0, -0.1, 0.1) == "Neutral+"
    assert dc.domain_zone(-0.2, -0.1, 0.1) == "Layman"
    t = dc.tendency_change(-0.5, 0.5, -0.1, 0.1)
    assert t.description == "Word shifts from Layman to Domain" and t.zones_traversed == (
        "Layman",
        "Neutral",
        "Domain",
    )
    assert dc.tendency_change(0.05, -0.3, -0.1, 0.1).description == "Word shifts from Neutral+ to Layman"
    with pytest.raises(ValueError):
        dc.domain_zone(0.0, 0.1, 0.2)


def test_arrow_plot_smoke():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    words = list(TABLE_5_4)
    ax = dc.plot_tendency_arrows(
        words, [v[0] for v in TABLE_5_4.values()], [v[1] for v in TABLE_5_4.values()], (-0.1, 0.1)
    )
    assert [t.get_text() for t in ax.get_yticklabels()] == words[::-1]
    texts = [t.get_text() for t in ax.texts]
    # the right-hand column of Positive / Negative has a header, and the shaded zones are named
    assert "Tendency" in texts
    assert {"Layman zone", "Neutral zone", "Domain zone"} <= set(texts)
    assert texts.count("Positive") + texts.count("Negative") == len(words)
    # a legend says what the arrow colours and the tendency words mean
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("layman zone" in t for t in legend) and any("neutral zone" in t for t in legend)
    assert any("domain zone" in t for t in legend)
    assert any(t.startswith("Positive:") for t in legend) and any(t.startswith("Negative:") for t in legend)
    plt.close("all")


def test_domain_gain_table_reports_oov():
    kv = {w: np.full(3, float(i)) for i, w in enumerate(["heart", "love", "organ", "blood"])}
    t = dc.domain_gain_table(
        kv,
        [
            {"x": "heart", "A": ["love", "zzz"], "B": ["organ", "blood"]},
            {"x": "nope", "A": ["love"], "B": ["organ"]},
        ],
    )
    assert t.loc[0, "missing"] == ["zzz"] and t.loc[0, "n_A"] == 1
    assert math.isnan(t.loc[1, "domain_gain"]) and "nope" in t.loc[1, "error"]


# --------------------------------------------------------------------------- contextual vectors
def test_mlm_word_vectors_last_four_layers():
    import torch

    from biaskit.lm import tiny_masked_lm

    torch.set_num_threads(1)
    words = ["rome", "italy", "kathmandu", "he"]
    lm = tiny_masked_lm(
        seed=1, texts=["rome is in italy", "he went to rome", "the capital of italy"], num_hidden_layers=4
    )
    kv = dc.mlm_word_vectors(lm.model, lm.tokenizer, words, batch_size=3)
    assert kv.vector_size == lm.model.config.hidden_size
    for w in words:  # unbatched reference: mean of the last 4 hidden states over the word's sub-words
        enc = lm.tokenizer(w, return_tensors="pt")
        with torch.no_grad():
            hs = lm.model(**enc, output_hidden_states=True).hidden_states
        ref = torch.stack(hs[-4:]).mean(0)[0, 1:-1].mean(0).numpy()
        np.testing.assert_allclose(kv[w], ref, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="out of range"):
        dc.mlm_word_vectors(lm.model, lm.tokenizer, words, layers=(-9,))


# --------------------------------------------------------------------------- summary() and the result objects
def test_dicobi_summary_states_the_value_and_where_it_is_attained(rng):
    ex = dc.load_dicobi_experiments()["dicobi_example"]
    kv = {w: rng.normal(size=12) for w in ex["X"] + ex["Y"] + ex["A"] + ex["B"]}
    r = dc.dicobi(kv, ex["X"], ex["Y"], ex["A"], ex["B"])
    text = r.summary()
    x, y, a, b = r.argmax
    assert f"DiCoBi (max) = {r.value:.4f}: the largest of 24 cosines" in text
    assert f"attained at x = {x}, y = {y}, a = {a}, b = {b}" in text
    assert (
        "0 = unrelated directions (no bias)" in text and "no statistical test: a descriptive number" in text
    )
    mean = dc.dicobi(kv, ex["X"], ex["Y"], ex["A"], ex["B"], aggregate="mean").summary(alpha=0.01)
    assert "the mean of 24 cosines" in mean and "attained" not in mean


def test_same_result_keeps_the_per_word_values_and_summarises_them(rng):
    words = ["w0", "w1", "w2", "w3", "w4", "a0", "a1", "b0", "b1", "b2"]
    kv = {w: rng.normal(size=9) for w in words}
    W, A1, A2 = [*words[:5], "zzz"], ["a0", "a1"], ["b0", "b1", "b2"]
    res = dc.same_result(kv, W, A1, A2)
    ref = dc.same_vectors(np.array([kv[w] for w in words[:5]]), [kv[w] for w in A1], [kv[w] for w in A2])
    assert res.value == pytest.approx(ref["same"]) == pytest.approx(dc.same(kv, W, A1, A2))
    np.testing.assert_allclose(res.per_word.to_numpy(), ref["per_word"])
    assert list(res.per_word.index) == words[:5] and res.words["W"] == words[:5]
    assert res.stereotype == pytest.approx(ref["stereotype"]) and float(res) == res.value
    text = res.summary()
    pw = res.per_word
    assert f"SAME = {res.value:.4f}: the signed mean of the values of 5 target word(s)" in text
    assert f"leans most to A1: {pw.idxmax()} ({pw.max():.3f})" in text
    assert f"leans most to A2: {pw.idxmin()} ({pw.min():.3f})" in text
    assert "no statistical test: a descriptive number" in text
    assert "mean size" in dc.same_result(kv, W, A1, A2, absolute=True).summary()
    assert set(res.to_dict()["per_word"]) == set(words[:5])


def test_domain_gain_result_keeps_the_distances_and_summarises_them(rng):
    kv = {w: rng.normal(size=6) for w in ["heart", "love", "kind", "organ", "blood", "vein"]}
    kv["organ"] = kv["heart"] + 0.1  # the domain words sit near x
    res = dc.domain_gain_result(kv, "heart", ["love", "kind", "zzz"], ["organ", "blood", "vein"])
    A = np.array([kv["love"], kv["kind"]])
    B = np.array([kv["organ"], kv["blood"], kv["vein"]])
    assert res.value == pytest.approx(dc.domain_gain(kv["heart"], A, B))
    assert res.difference == pytest.approx(dc.domain_gain_difference(kv["heart"], A, B))
    assert list(res.distances["word"]) == ["love", "kind", "organ", "blood", "vein"]
    assert res.distances.loc[2, "distance"] == pytest.approx(np.linalg.norm(kv["heart"] - kv["organ"]))
    assert res.distance_layman == pytest.approx(res.distances.query("set == 'layman'")["distance"].mean())
    text = res.summary()
    assert f"domain_gain of 'heart' = {res.value:.3f}" in text
    assert f"to the 2 everyday (layman) words = {res.distance_layman:.3f}" in text
    assert f"to the 3 domain words = {res.distance_domain:.3f}" in text
    assert "no statistical test: a descriptive number" in text
    lean = "its domain sense" if res.value > 0 else "its everyday (layman) sense"
    assert lean in text
    with pytest.raises(KeyError, match="nope"):
        dc.domain_gain_result(kv, "nope", ["love"], ["organ"])
