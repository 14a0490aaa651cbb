"""Tests of biaskit.metrics.recovery, Gonen & Goldberg's (2019) recovery tests.

Values against hand computations on toy embeddings, p-values against exact enumerations of the
relabellings (or scipy's binomial test), and the direction of Gonen & Goldberg's reported results on
the bundled GoogleNews subset: after Bolukbasi's hard debiasing the most biased words still cluster,
classify and neighbour by their original gender far above chance.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.stats as sps
from gensim.models import KeyedVectors

from biaskit.core.registry import REGISTRY
from biaskit.metrics.recovery import (
    bias_by_projection,
    classifier_recovery,
    cluster_recovery,
    gonen_goldberg_tests,
    most_biased_words,
    neighbour_recovery,
    neighbour_shares,
    recovery_table,
)


def blobs(n: int = 20, d: int = 5, sep: float = 4.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    X = rng.normal(size=(n, d))
    X[:, 0] += np.where(y == 1, sep, -sep)
    X[:, 1] += 3.0  # keep the blobs apart in cosine terms too
    return X, y


# --------------------------------------------------------------------------- clustering
def test_cluster_recovery_separated_blobs_and_the_permutation_p_value():
    X, y = blobs()
    r = cluster_recovery(X, y, n_permutations=999)
    assert r.statistic == 1.0
    # no relabelling of 10 + 10 reaches accuracy 1 except the observed one and its complement (2 of C(20,10))
    assert r.p_value == pytest.approx(1 / 1000, abs=2 / 1000)
    assert 0.5 < r.details["chance"] < 0.7  # chance is above 50 %: max(a, 1 - a)


def test_cluster_accuracy_and_p_value_against_exact_enumeration():
    """A fixed clustering of 8 points: accuracy by hand, p-value against all C(8, 4) relabellings."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(8, 3))
    y = np.array([1, 1, 1, 0, 1, 0, 0, 0])
    r = cluster_recovery(X, y, n_permutations=20000, random_state=1)
    clusters = r.details["clusters"]
    a = np.mean(clusters == y)
    assert r.statistic == pytest.approx(max(a, 1 - a))

    def acc(lab):
        a = np.mean(clusters == lab)
        return max(a, 1 - a)

    exact = []
    for ones in itertools.combinations(range(8), 4):
        lab = np.zeros(8, int)
        lab[list(ones)] = 1
        exact.append(acc(lab))
    p_exact = np.mean(np.array(exact) >= r.statistic - 1e-12)
    assert r.p_value == pytest.approx(p_exact, abs=0.01)


# --------------------------------------------------------------------------- classifier
def test_classifier_recovery_binomial_p_value_and_split():
    X, y = blobs(40, sep=1.0, seed=1)
    r = classifier_recovery(X, y, n_splits=5)
    k = int(r.details["correct"].sum())
    assert r.statistic == pytest.approx(k / 40)
    assert r.p_value == pytest.approx(sps.binomtest(k, 40, 0.5, alternative="greater").pvalue)
    assert r.details["test_index"].tolist() == list(range(40))
    one = classifier_recovery(X, y, train_size=10)
    assert one.n == 30 and 0 <= one.statistic <= 1
    # noise: no better than chance on average, and the test rejects at about its level
    res = [classifier_recovery(np.random.default_rng(s).normal(size=(60, 5)), np.repeat([0, 1], 30),
                               random_state=s) for s in range(30)]  # fmt: skip
    assert abs(np.mean([r.statistic for r in res]) - 0.5) < 0.05
    assert np.mean([r.p_value < 0.05 for r in res]) <= 0.1


def test_classifier_recovery_rejects_other_than_two_labels():
    X, _ = blobs()
    with pytest.raises(ValueError, match="exactly two"):
        classifier_recovery(X, np.arange(20) % 3)


# --------------------------------------------------------------------------- neighbours
def test_neighbour_shares_by_hand():
    # 2-D: the pool on the unit circle at angles 0, 10, 20, 100, 110, 120 degrees
    ang = np.deg2rad([0, 10, 20, 100, 110, 120])
    pool = np.c_[np.cos(ang), np.sin(ang)]
    bias = np.array([1, 1, -1, -1, -1, 1.0])
    X = np.array([[1.0, 0.05], [np.cos(np.deg2rad(112)), np.sin(np.deg2rad(112))]])
    # nearest two of the first: 0 and 10 degrees (both male); of the second: 110 and 120 (one male)
    np.testing.assert_allclose(neighbour_shares(X, pool, bias, k=2), [1.0, 0.5])
    # leaving itself out: row 0 of the pool (0 degrees) as the word itself
    np.testing.assert_allclose(neighbour_shares(pool[:1], pool, bias, k=2, self_index=np.array([0])), [0.5])


def test_neighbour_recovery_correlation_and_exact_permutation_p_value():
    words = [f"w{i}" for i in range(7)]
    rng = np.random.default_rng(5)
    kv = KeyedVectors(3)
    kv.add_vectors(words, rng.normal(size=(7, 3)).astype(np.float32))
    pool_bias = dict(zip(words, rng.normal(size=7), strict=True))
    values = np.array([pool_bias[w] for w in words])
    r = neighbour_recovery(kv, values, words=words, pool_bias=pool_bias, k=3, n_permutations=20000)
    shares = r.details["shares"]
    # shares by hand: each word's 3 nearest other words by cosine
    U = kv.vectors / np.linalg.norm(kv.vectors, axis=1, keepdims=True)
    S = U @ U.T
    np.fill_diagonal(S, -np.inf)
    hand = [np.mean(values[np.argsort(-S[i])[:3]] > 0) for i in range(7)]
    np.testing.assert_allclose(shares, hand)
    assert r.statistic == pytest.approx(np.corrcoef(values, shares)[0, 1])
    exact = [np.corrcoef(np.array(p), shares)[0, 1] for p in itertools.permutations(values)]
    p_exact = np.mean(np.array(exact) >= r.statistic - 1e-12)
    assert r.p_value == pytest.approx(p_exact, abs=0.01)


def test_most_biased_words_and_projection():
    kv = KeyedVectors(2)
    kv.add_vectors(
        ["a", "b", "c", "d", "e"], np.array([[1, 0], [0.9, 0.1], [0, 1], [-1, 0.1], [-1, 0]], np.float32)
    )
    g = np.array([1.0, 0.0])
    np.testing.assert_allclose(bias_by_projection(kv, ["a", "c"], g), [1.0, 0.0], atol=1e-7)
    pos, neg = most_biased_words(kv, g, 2, exclude=["a"])
    assert pos == ["b", "c"] and neg == ["e", "d"]


def test_recovery_tests_are_registered():
    for name in ("gg_clustering", "gg_classifier", "gg_neighbours"):
        m = REGISTRY[name]
        assert m.family == "word vectors" and "Gonen" in m.citation
        assert callable(m.load())


# --------------------------------------------------------------------------- Gonen & Goldberg, real vectors
@pytest.mark.slow
def test_gonen_goldberg_direction_on_hard_debiased_googlenews():
    """G&G (2019): after hard debiasing, the 500 most biased male / female words still cluster by their
    original gender (reported 92.5 %, 99.9 % before), an RBF SVM still classifies them (88.9 %) and a
    word's original bias still goes with its neighbours' (r = 0.69).  Their direction, on the bundled
    26,423-word GoogleNews subset debiased here with Bolukbasi's lists."""
    from biaskit.data.wordlists import load_bolukbasi_wordlists
    from biaskit.debiasing.hard_debias import HardDebias
    from biaskit.embeddings.vectors import load_reference_vectors

    kv = load_reference_vectors("word2vec-googlenews-bolukbasi")
    spec = load_bolukbasi_wordlists()["specific_full"]
    specific = {f(w) for w in spec for f in (str, str.lower, str.upper, str.title)}
    deb = HardDebias().fit(kv, gender_specific=specific).transform(kv)
    res = gonen_goldberg_tests(kv, deb, n_cluster=500, n_classify=1000, train_size=500, n_permutations=500)
    before, after = res["original"], res["debiased"]
    assert before["cluster"].statistic > 0.99
    assert after["cluster"].statistic > 0.65 and after["cluster"].p_value < 0.01
    assert after["classifier"].statistic > 0.85 and after["classifier"].p_value < 1e-10
    assert after["neighbours"].statistic > 0.5 and after["neighbours"].p_value < 0.01
    # and the debiasing did act: the neutral words have no projection on the direction any more
    g = HardDebias().fit(kv, gender_specific=specific).g
    biased = [w for w in kv.index_to_key[:2000] if w not in specific]
    assert np.abs(bias_by_projection(deb, biased, g)).max() < 1e-5
    t = recovery_table(res)
    assert set(t["space"]) == {"original", "debiased"} and len(t) == 6
