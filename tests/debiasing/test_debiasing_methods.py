"""Tests of the static debiasing methods: hard debias (Bolukbasi et al. 2016) and INLP (Ravfogel et al. 2020).

Hard debias is checked against its invariants on a toy embedding and against an independent
implementation, WEFE 1.0.1's ``HardDebias``, on the same vectors and word lists (to float32
precision).  INLP is checked against its invariants and against Algorithm 1 of the paper written
here a second way (the product of single nullspace projections through :func:`scipy.linalg.null_space`,
instead of biaskit's projection on the intersection of nullspaces), with the same classifier and seed.
"""

from __future__ import annotations

import contextlib
import copy
import io

import numpy as np
import pytest
import scipy.linalg
import scipy.stats
from gensim.models import KeyedVectors
from sklearn.svm import LinearSVC

from biaskit.data.wordlists import load_bolukbasi_wordlists
from biaskit.debiasing.costs import analogy_accuracy, load_google_analogies
from biaskit.debiasing.hard_debias import HardDebias, case_forms, hard_debias
from biaskit.debiasing.inlp import INLP, nullspace_intersection_projection, rowspace_projection


def toy_embedding(seed: int = 0, d: int = 12) -> KeyedVectors:
    """Gendered pairs along one axis plus noise, and neutral words with a gender component."""
    rng = np.random.default_rng(seed)
    gender = np.zeros(d)
    gender[0] = 1.0
    words, vecs = [], []
    pairs = [("he", "she"), ("man", "woman"), ("boy", "girl"), ("father", "mother"), ("king", "queen")]
    for a, b in pairs:
        base = rng.normal(size=d)
        words += [a, b]
        vecs += [base + 2 * gender + 0.1 * rng.normal(size=d), base - 2 * gender + 0.1 * rng.normal(size=d)]
    for i in range(30):
        words.append(f"neutral{i}")
        vecs.append(rng.normal(size=d) + rng.choice([-1, 1]) * gender)
    kv = KeyedVectors(d)
    kv.add_vectors(words, np.array(vecs, dtype=np.float32))
    return kv


PAIRS = [("he", "she"), ("man", "woman"), ("boy", "girl"), ("father", "mother")]
SPECIFIC = ["he", "she", "man", "woman", "boy", "girl", "father", "mother", "king", "queen"]


# --------------------------------------------------------------------------- hard debias: invariants
def test_hard_debias_neutralises_equalises_and_keeps_the_gender_specific_words():
    kv = toy_embedding()
    hd = HardDebias(n_components=4).fit(kv, PAIRS, [("king", "queen"), ("man", "woman")], SPECIFIC)
    out = hd.transform(kv)
    g = hd.g
    assert out.index_to_key == kv.index_to_key and out.vector_size == kv.vector_size
    np.testing.assert_allclose(np.linalg.norm(out.vectors, axis=1), 1.0, atol=1e-6)
    neutral = [w for w in kv.index_to_key if w not in SPECIFIC]
    # neutralised words have zero projection on the direction
    assert np.max(np.abs(out[neutral] @ g)) < 1e-6
    # and keep their direction otherwise: w' is the unit rejection of w from g
    for w in neutral[:5]:
        u = kv[w] / np.linalg.norm(kv[w])
        r = u - (u @ g) * g
        np.testing.assert_allclose(out[w], r / np.linalg.norm(r), atol=1e-6)
    # gender-specific words outside the equality pairs are untouched (up to unit length)
    for w in ("he", "boy", "father"):
        np.testing.assert_allclose(out[w], kv[w] / np.linalg.norm(kv[w]), atol=1e-6)
    # equalised pairs: opposite projections, identical rejections, so every neutral word is equidistant
    for a, b in (("king", "queen"), ("man", "woman")):
        assert out[a] @ g == pytest.approx(-(out[b] @ g), abs=1e-6)
        np.testing.assert_allclose(out[a] - (out[a] @ g) * g, out[b] - (out[b] @ g) * g, atol=1e-6)
        np.testing.assert_allclose(out[neutral] @ out[a], out[neutral] @ out[b], atol=1e-6)
        # the orientation of the pair is kept
        assert np.sign(out[a] @ g - out[b] @ g) == np.sign((kv[a] - kv[b]) @ g)


def test_hard_debias_is_deterministic_and_the_function_matches_the_class():
    kv = toy_embedding(1)
    a = HardDebias(4).fit(kv, PAIRS, [("king", "queen")], SPECIFIC).transform(kv)
    b = HardDebias(4).fit(kv, PAIRS, [("king", "queen")], SPECIFIC).transform(kv)
    c = hard_debias(kv, PAIRS, [("king", "queen")], SPECIFIC, n_components=4)
    np.testing.assert_array_equal(a.vectors, b.vectors)
    np.testing.assert_array_equal(a.vectors, c.vectors)


def test_hard_debias_explicit_neutralise_list_and_bad_input():
    kv = toy_embedding(2)
    hd = HardDebias(4).fit(kv, PAIRS, (), SPECIFIC)
    out = hd.transform(kv, neutralise=["neutral0"])
    assert abs(out["neutral0"] @ hd.g) < 1e-6
    assert abs(out["neutral1"] @ hd.g) > 1e-3  # not in the list: only scaled
    with pytest.raises(ValueError, match="not fitted"):
        HardDebias().transform(kv)
    with pytest.raises(ValueError, match="pairs"):
        HardDebias().fit(kv, [("he", "she", "it")])


def test_case_forms_order_and_duplicates():
    assert case_forms([("he", "she"), ("He", "She")]) == [("he", "she"), ("He", "She"), ("HE", "SHE")]


# --------------------------------------------------------------------------- hard debias: WEFE
def _wefe_hard_debias(kv: KeyedVectors, definitional, equalize, specific) -> KeyedVectors:
    from wefe.debias.hard_debias import HardDebias as WefeHardDebias
    from wefe.word_embedding_model import WordEmbeddingModel

    model = WordEmbeddingModel(copy.deepcopy(kv), "test")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        hd = WefeHardDebias().fit(model, definitional_pairs=definitional, equalize_pairs=equalize)
        return hd.transform(model, ignore=specific, copy=True).wv


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_hard_debias_equals_wefe_on_googlenews_to_float_precision():
    """WEFE's HardDebias (an independent implementation) on its own 13,013-word GoogleNews model with
    Bolukbasi's lists: every vector equal to float32 precision."""
    pytest.importorskip("wefe")
    from biaskit.embeddings.vectors import load_reference_vectors

    kv = load_reference_vectors("word2vec-googlenews-wefe")
    wl = load_bolukbasi_wordlists()
    definitional = [list(p) for p in zip(wl["definitional_female"], wl["definitional_male"], strict=True)]
    equalize = [list(p) for p in zip(wl["equalize_first"], wl["equalize_second"], strict=True)]
    ours = HardDebias().fit(kv, definitional, equalize, wl["specific_full"]).transform(kv)
    theirs = _wefe_hard_debias(kv, definitional, equalize, wl["specific_full"])
    W = np.stack([theirs[w] for w in kv.index_to_key])
    diff = np.abs(W - ours.vectors).max()
    assert diff < 1e-6, diff
    # the comparison is not vacuous: the debiasing moved the vectors far more than that
    unit = kv.vectors / np.linalg.norm(kv.vectors, axis=1, keepdims=True)
    assert np.abs(unit - ours.vectors).max() > 0.1


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_hard_debias_equals_wefe_on_a_planted_control():
    pytest.importorskip("wefe")
    from biaskit.embeddings.vectors import load_trained_vectors

    kv = load_trained_vectors("en-planted-w2v", s=0.8)
    wl = load_bolukbasi_wordlists()
    definitional = [list(p) for p in zip(wl["definitional_female"], wl["definitional_male"], strict=True)]
    equalize = [list(p) for p in zip(wl["equalize_first"], wl["equalize_second"], strict=True)]
    ours = HardDebias().fit(kv, definitional, equalize, wl["specific_full"]).transform(kv)
    theirs = _wefe_hard_debias(kv, definitional, equalize, wl["specific_full"])
    assert np.abs(np.stack([theirs[w] for w in kv.index_to_key]) - ours.vectors).max() < 1e-6


# --------------------------------------------------------------------------- INLP
def toy_gender_data(seed: int = 0, n: int = 300, d: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """Gender written along three directions (one strong, two weaker), plus noise."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = 2 * y - 1
    X = rng.normal(size=(n, d))
    X[:, 0] += 2.0 * s
    X[:, 1] += 0.8 * s
    X[:, 2] += 0.5 * s
    return X, y


def reference_inlp(
    X: np.ndarray, y: np.ndarray, n_iterations: int, *, product: bool, random_state: int = 0
) -> np.ndarray:
    """Ravfogel et al. (2020) INLP written independently, with scipy.linalg.null_space.

    ``product=False``: the authors' code path (``get_projection_to_intersection_of_nullspaces``): P is the
    projection on the null space of all the weights so far, here an orthonormal basis of
    ``null_space(vstack(W_1..W_i))``.  ``product=True``: the paper's Algorithm 1 as printed,
    P <- P_N(W_i) P with each classifier's own null space.  The classifier is retrained on X P^T.
    """
    d = X.shape[1]
    P = np.eye(d)
    Ws = []
    for _ in range(n_iterations):
        clf = LinearSVC(fit_intercept=False, dual=False, random_state=random_state).fit(X @ P.T, y)
        Ws.append(np.atleast_2d(clf.coef_))
        if product:
            N = scipy.linalg.null_space(Ws[-1])
            P = (N @ N.T) @ P
        else:
            N = scipy.linalg.null_space(np.vstack(Ws))
            P = N @ N.T
    return P


def test_inlp_equals_the_reference_algorithm_on_a_fixed_seed():
    X, y = toy_gender_data()
    ours = INLP(8, random_state=0, stop_at_chance=False).fit(X, y)  # the reference runs every iteration
    # the authors' construction (projection on the intersection of the null spaces): same to rounding
    ref = reference_inlp(X, y, 8, product=False)
    assert np.abs(ours.projection_ - ref).max() < 1e-9
    np.testing.assert_allclose(ours.transform(X), X @ ref.T, atol=1e-8)
    # Algorithm 1's product of single null-space projections: the same projection up to the solver's
    # tolerance (each W_i is orthogonal to the earlier ones only as far as liblinear converges)
    prod = reference_inlp(X, y, 8, product=True)
    assert np.abs(ours.projection_ - prod).max() < 1e-5
    assert np.trace(prod) == pytest.approx(np.trace(ours.projection_), abs=1e-5)


def test_inlp_projection_invariants():
    X, y = toy_gender_data(1)
    inlp = INLP(5, stop_at_chance=False).fit(X, y)
    P = inlp.projection_
    np.testing.assert_allclose(P, P.T, atol=1e-10)  # symmetric
    np.testing.assert_allclose(P @ P, P, atol=1e-10)  # idempotent
    assert inlp.rank_removed_ == 5  # a binary classifier removes one direction per iteration
    for W in inlp.coefs_:  # every classifier's weights are nulled
        assert np.abs(inlp.transform(X) @ W.T).max() < 1e-8
    # the first classifier reads the gender well, a fresh one on the projected data hardly at all
    assert inlp.accuracies_[0] > 0.9
    fresh = LinearSVC(fit_intercept=False, dual=False).fit(inlp.transform(X), y)
    assert fresh.score(inlp.transform(X), y) < 0.65
    # and the intersection projection of single rowspaces equals the product of the nullspace projections
    Rs = [rowspace_projection(W) for W in inlp.coefs_]
    prod = np.eye(X.shape[1])
    for R in Rs:
        prod = (np.eye(X.shape[1]) - R) @ prod
    np.testing.assert_allclose(nullspace_intersection_projection(Rs, X.shape[1]), prod, atol=1e-8)


def test_inlp_is_deterministic_and_stops_below_min_accuracy():
    X, y = toy_gender_data(2)
    a, b = INLP(6).fit(X, y), INLP(6).fit(X, y)
    np.testing.assert_array_equal(a.projection_, b.projection_)
    early = INLP(30, min_accuracy=0.6).fit(X, y)
    assert early.rank_removed_ < 30 and early.accuracies_[-1] < 0.6
    with pytest.raises(ValueError, match="two classes"):
        INLP(3).fit(X, np.zeros(len(y)))


def toy_held_out(
    seed: int, n: int = 600, d: int = 20
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The gender written along one direction, (2, 1, 0, ...), in two halves (the class means differ only
    along it, and the noise is the same in both classes, so nothing linear is left once it is removed)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, d))
    X[:, 0] += 2.0 * (2 * y - 1)
    X[:, 1] += 1.0 * (2 * y - 1)
    return X[: n // 2], y[: n // 2], X[n // 2 :], y[n // 2 :]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_inlp_stops_when_the_held_out_accuracy_is_at_chance(caplog, seed):
    """Gender along one direction: once INLP's classifiers have removed it (a few steps, as each SVM's weights
    are only roughly along it), the next classifier is at chance on held-out rows and INLP stops there with a
    WARNING instead of removing directions that only fit noise."""
    X, y, Xd, yd = toy_held_out(seed)
    with caplog.at_level("WARNING", logger="biaskit.debiasing.inlp"):
        inlp = INLP(15).fit(X, y, X_dev=Xd, y_dev=yd)
    chance = max(np.mean(yd), 1 - np.mean(yd))
    assert inlp.chance_ == pytest.approx(chance)
    assert inlp.accuracies_[-1] <= chance and all(a > chance for a in inlp.accuracies_[:-1])
    assert 1 <= inlp.rank_removed_ <= 6 and inlp.rank_removed_ == len(inlp.accuracies_) - 1
    assert (
        "at chance" in inlp.stopped_ and "at chance" in caplog.text and "direction(s) removed" in caplog.text
    )
    # the planted direction is (almost) gone from the projected space
    m = np.zeros(X.shape[1])
    m[:2] = [2, 1]
    m /= np.linalg.norm(m)
    assert np.linalg.norm(inlp.projection_ @ m) < 0.3
    # without the stop it goes on removing directions of noise
    assert (
        INLP(15, stop_at_chance=False).fit(X, y, X_dev=Xd, y_dev=yd).rank_removed_ >= inlp.rank_removed_ + 5
    )


def test_inlp_at_chance_from_the_first_step_removes_nothing(caplog):
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(200, 10)), np.array([0, 1] * 100)
    Xd, yd = rng.normal(size=(200, 10)), np.array([0, 1] * 100)
    with caplog.at_level("WARNING", logger="biaskit.debiasing.inlp"):
        inlp = INLP(5).fit(X, y, X_dev=Xd, y_dev=yd)
    if inlp.accuracies_[0] <= 0.5:  # noise: the first classifier reads nothing on held-out rows
        assert inlp.rank_removed_ == 0 and "iteration 1 of 5" in inlp.stopped_
        np.testing.assert_array_equal(inlp.projection_, np.eye(10))
    else:  # or a little, by luck: then it stops soon after
        assert inlp.rank_removed_ < 5 and "at chance" in caplog.text


def test_inlp_refuses_to_remove_every_dimension(caplog):
    """As many iterations as dimensions used to zero the whole space; INLP now stops one short, says so,
    and leaves a non-zero projection."""
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 400)
    X = rng.normal(size=(400, 4)) + 1.5 * (2 * y - 1)[:, None]  # every dimension carries the gender
    with caplog.at_level("WARNING", logger="biaskit.debiasing.inlp"):
        inlp = INLP(4, stop_at_chance=False).fit(X, y)
    assert inlp.rank_removed_ == 3 and np.trace(inlp.projection_) == pytest.approx(1.0)
    assert (
        "would remove all 4 dimensions" in inlp.stopped_ and "fewer iterations than dimensions" in caplog.text
    )
    assert np.abs(inlp.transform(X)).max() > 0.1


def test_inlp_held_out_probe_against_sklearn():
    from sklearn.linear_model import LogisticRegression

    X, y, Xd, yd = toy_held_out(4)
    inlp = INLP(1, stop_at_chance=False).fit(X, y)  # one SVM direction: part of the planted one is left
    probe = inlp.held_out_probe(X, y, Xd, yd)
    P = inlp.projection_
    expected = LogisticRegression(max_iter=2000).fit(X @ P, y).score(Xd @ P, yd)
    assert probe["accuracy"] == pytest.approx(expected)
    assert probe["accuracy_before"] == pytest.approx(
        LogisticRegression(max_iter=2000).fit(X, y).score(Xd, yd)
    )
    assert probe["chance"] == pytest.approx(max(np.mean(yd), 1 - np.mean(yd)))
    assert probe["n"] == len(yd) and probe["p_value"] == pytest.approx(
        scipy.stats.binomtest(round(probe["accuracy"] * len(yd)), len(yd), probe["chance"], "greater").pvalue
    )
    assert probe["accuracy_before"] > probe["accuracy"]


def test_inlp_on_word_sets_and_keyed_vectors():
    kv = toy_embedding(3)
    inlp = INLP(2).fit_words(kv, {"m": ["he", "man", "boy", "father", "king"],
                                  "f": ["she", "woman", "girl", "mother", "queen"]})  # fmt: skip
    out = inlp.transform_vectors(kv)
    assert out.index_to_key == kv.index_to_key
    u = kv["neutral0"] / np.linalg.norm(kv["neutral0"])
    np.testing.assert_allclose(out["neutral0"], u @ inlp.projection_, atol=1e-6)


# --------------------------------------------------------------------------- costs
def test_analogy_accuracy_against_gensim():
    """3CosAdd accuracy equals gensim's evaluate_word_analogies on the same questions (planted control)."""
    from gensim.test.utils import datapath

    from biaskit.embeddings.vectors import load_trained_vectors

    kv = load_trained_vectors("en-planted-w2v", s=0.7)
    ours = analogy_accuracy(kv)
    score, sections = kv.evaluate_word_analogies(datapath("questions-words.txt"), restrict_vocab=len(kv))
    total = next(s for s in sections if s["section"] == "Total accuracy")
    n = len(total["correct"]) + len(total["incorrect"])
    assert ours["n"] == n
    assert ours["accuracy"] == pytest.approx(score, abs=1e-12)
    assert ours["n_family"] + ours["n_other"] == ours["n"]
    assert len(load_google_analogies()) == 19544
