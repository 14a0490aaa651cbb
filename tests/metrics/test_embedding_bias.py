"""WEFE's embedding metrics (RND, RNSB, ECT, MAC, RIPA), WEFAT and Bolukbasi's indirect bias β.

Values are compared with WEFE 1.0.1 on its test model (``wefe/datasets/data/test_model.kv``,
word2vec float32 vectors) on two or more queries per metric; the permutation p-values with a
brute-force enumeration that recomputes each metric from scratch on a tiny synthetic example.
Tolerances: WEFE computes in float32, biaskit in float64, so values agree to ``rel=1e-5`` (RND,
RIPA, MAC, RNSB with the same seed and settings), ECT (a rank correlation) to ``1e-12``.
"""

from __future__ import annotations

import itertools
import logging
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats as sps

from biaskit.core.results import TestResult
from biaskit.data.wordlists import OOVError
from biaskit.metrics.direct_bias import BiasDirection, indirect_bias
from biaskit.metrics.embedding_bias import ECT, MAC, RIPA, RND, RNSB, WEFAT

REL = 1e-5  # float32 (WEFE) vs float64 (biaskit)


# --------------------------------------------------------------------------- WEFE fixtures
@pytest.fixture(scope="module")
def wefe_env():
    pytest.importorskip("wefe")
    import wefe
    from gensim.models import KeyedVectors
    from wefe.datasets import load_weat

    kv = KeyedVectors.load(str(Path(wefe.__file__).parent / "datasets" / "data" / "test_model.kv"))
    weat = load_weat()
    sets = {k: [w for w in v if w in kv.key_to_index] for k, v in weat.items()}
    for key in (
        "female_terms",
        "male_terms",
        "family",
        "career",
        "flowers",
        "insects",
        "pleasant_5",
        "unpleasant_5a",
    ):
        assert len(sets[key]) >= 6, key
    return kv, sets


def _wefe(metric, kv, targets, attributes, **kw):
    from wefe.query import Query
    from wefe.word_embedding_model import WordEmbeddingModel

    q = Query(
        [list(t) for t in targets],
        [list(a) for a in attributes],
        [f"T{i}" for i in range(len(targets))],
        [f"A{i}" for i in range(len(attributes))],
    )
    return metric().run_query(q, WordEmbeddingModel(kv, "test"), **kw)


def _queries(sets, *pairs):
    return [([sets[t0], sets[t1]], [sets[a] for a in attrs]) for t0, t1, attrs in pairs]


TWO_ONE = [
    ("female_terms", "male_terms", ("family",)),
    ("female_terms", "male_terms", ("career",)),
    ("flowers", "insects", ("pleasant_5",)),
]
TWO_TWO = [
    ("female_terms", "male_terms", ("family", "career")),
    ("flowers", "insects", ("pleasant_5", "unpleasant_5a")),
]


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("distance", ["norm", "cos"])
def test_rnd_against_wefe(wefe_env, distance, normalize):
    from wefe.metrics import RND as WefeRND

    kv, sets = wefe_env
    for targets, attrs in _queries(sets, *TWO_ONE):
        ref = _wefe(WefeRND, kv, targets, attrs, distance=distance, normalize=normalize)
        ours = RND(distance=distance, normalize=normalize, n_permutations=200, exact=False).run(
            targets, attrs, kv
        )
        assert ours.estimate == pytest.approx(ref["rnd"], rel=REL, abs=1e-7)
        for w, v in ref["distance_by_word"].items():
            assert ours.details["per_word"][w] == pytest.approx(float(v), rel=REL, abs=1e-6)


@pytest.mark.parametrize("normalize", [False, True])
def test_ect_against_wefe(wefe_env, normalize):
    from wefe.metrics import ECT as WefeECT

    kv, sets = wefe_env
    for targets, attrs in _queries(sets, *TWO_ONE):
        ref = _wefe(WefeECT, kv, targets, attrs, normalize=normalize)
        ours = ECT(normalize=normalize, n_permutations=200, exact=False).run(targets, attrs, kv)
        assert ours.estimate == pytest.approx(ref["ect"], abs=1e-12)


def test_mac_against_wefe(wefe_env):
    from wefe.metrics import MAC as WefeMAC

    kv, sets = wefe_env
    for targets, attrs in _queries(sets, *TWO_TWO, ("female_terms", "male_terms", ("family",))):
        ref = _wefe(WefeMAC, kv, targets, attrs)
        ours = MAC().run(
            targets,
            attrs,
            kv,
            target_names=["T0", "T1"],
            attribute_names=[f"A{i}" for i in range(len(attrs))],
        )
        assert ours.estimate == pytest.approx(ref["mac"], rel=REL)
        for tn, words in ref["targets_eval"].items():
            for w, by_attr in words.items():
                for an, v in by_attr.items():
                    assert ours.details["per_word"][tn][w][an] == pytest.approx(float(v), rel=REL, abs=1e-6)
        lo, hi = ours.ci
        assert lo < ours.estimate < hi


@pytest.mark.parametrize("normalize", [False, True])
def test_ripa_against_wefe(wefe_env, normalize):
    from wefe.metrics import RIPA as WefeRIPA

    kv, sets = wefe_env
    pairs = [
        (f, m)
        for f, m in zip(
            ["female", "woman", "girl", "sister", "she", "her", "hers", "daughter"],
            ["male", "man", "boy", "brother", "he", "him", "his", "son"],
            strict=True,
        )
        if f in kv.key_to_index and m in kv.key_to_index
    ]
    assert len(pairs) >= 6
    targets = [[p[0] for p in pairs], [p[1] for p in pairs]]
    for attr in ("family", "career", "pleasant_5"):
        ref = _wefe(WefeRIPA, kv, targets, [sets[attr]], normalize=normalize)
        ours = RIPA(normalize=normalize).run(targets, [sets[attr]], kv)
        assert ours.estimate == pytest.approx(ref["ripa"], rel=REL, abs=1e-7)
        for w, v in ref["word_values"].items():
            assert ours.details["per_word"][w]["mean"] == pytest.approx(float(v["mean"]), rel=REL, abs=1e-6)
            assert ours.details["per_word"][w]["std"] == pytest.approx(float(v["std"]), rel=REL, abs=1e-6)
        assert ours.details["permutation_method"] == "exact"  # 2^n swap patterns, n <= 8


@pytest.mark.parametrize("holdout", [True, False])
def test_rnsb_against_wefe_same_seed(wefe_env, holdout):
    """WEFE's RNSB is randomised (holdout split, classifier): with the same seed and settings
    (its defaults: liblinear, max_iter=10000, 80/20 stratified split) the values coincide."""
    from wefe.metrics import RNSB as WefeRNSB

    kv, sets = wefe_env
    for (targets, attrs), seed in itertools.product(_queries(sets, *TWO_TWO), (0, 7)):
        ref = _wefe(WefeRNSB, kv, targets, attrs, random_state=seed, holdout=holdout)
        ours = RNSB(random_state=seed, holdout=holdout, n_permutations=0).run(targets, attrs, kv)
        assert ours.estimate == pytest.approx(ref["rnsb"], rel=1e-6)
        for w, v in ref["negative_sentiment_probabilities"].items():
            assert ours.details["negative_probability"][w] == pytest.approx(float(v), rel=1e-6)
        assert ours.p_value is None


def test_rnsb_average_over_iterations_agrees_with_wefe(wefe_env):
    """n_iterations: the mean of WEFE's runs seeded 0..29 equals ours (seeds random_state + i)."""
    from wefe.metrics import RNSB as WefeRNSB

    kv, sets = wefe_env
    targets, attrs = _queries(sets, TWO_TWO[0])[0]
    ref = [_wefe(WefeRNSB, kv, targets, attrs, random_state=s)["rnsb"] for s in range(30)]
    ours = RNSB(n_iterations=30, n_permutations=0).run(targets, attrs, kv)
    assert ours.estimate == pytest.approx(float(np.mean(ref)), rel=1e-6)
    assert ours.details["n_iterations"] == 30


# --------------------------------------------------------------------------- brute force
def _toy(seed=1, dim=6, names=("x", "y", "a", "b"), sizes=(3, 3, 4, 4)):
    rng = np.random.default_rng(seed)
    words = {nm: [f"{nm}{i}" for i in range(k)] for nm, k in zip(names, sizes, strict=True)}
    vecs = {w: rng.normal(size=dim) for ws in words.values() for w in ws}
    return words, vecs


def _subsets(pool, k):
    for comb in itertools.combinations(range(len(pool)), k):
        yield [pool[i] for i in comb], [pool[i] for i in range(len(pool)) if i not in comb]


def _p(stats, obs, alternative):
    stats = np.asarray(stats)
    tol = 1e-9 * (1 + abs(obs))
    ge, le = np.mean(stats >= obs - tol), np.mean(stats <= obs + tol)
    return {"greater": ge, "less": le, "two-sided": min(1.0, 2 * min(ge, le))}[alternative]


def _naive_rnd(t1, t2, A, vecs):
    m1 = np.mean([vecs[w] for w in t1], axis=0)
    m2 = np.mean([vecs[w] for w in t2], axis=0)
    return float(np.mean([np.linalg.norm(vecs[a] - m1) - np.linalg.norm(vecs[a] - m2) for a in A]))


def _cos(u, v):
    return float(u @ v / (np.linalg.norm(u) * np.linalg.norm(v)))


def _naive_ect(t1, t2, A, vecs):
    m1 = np.mean([vecs[w] for w in t1], axis=0)
    m2 = np.mean([vecs[w] for w in t2], axis=0)
    return float(sps.spearmanr([_cos(m1, vecs[a]) for a in A], [_cos(m2, vecs[a]) for a in A]).statistic)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_rnd_permutation_p_brute_force(alternative):
    w, vecs = _toy(sizes=(4, 3, 5, 1))
    pool = w["x"] + w["y"]
    null = [_naive_rnd(t1, t2, w["a"], vecs) for t1, t2 in _subsets(pool, 4)]
    obs = _naive_rnd(w["x"], w["y"], w["a"], vecs)
    r = RND(alternative=alternative).run([w["x"], w["y"]], [w["a"]], vecs)
    assert r.estimate == pytest.approx(obs, rel=1e-12)
    assert r.details["permutation_method"] == "exact" and r.details["n_partitions_evaluated"] == math.comb(
        7, 4
    )
    assert r.p_value == pytest.approx(_p(null, obs, alternative), abs=1e-12)
    assert r.details["null_mean"] == pytest.approx(float(np.mean(null)), abs=1e-12)
    # sampled re-splits agree statistically with the exact p
    s = RND(alternative=alternative, exact=False, n_permutations=4000, random_state=3).run(
        [w["x"], w["y"]], [w["a"]], vecs
    )
    assert s.details["permutation_method"] == "sampled"
    assert abs(s.p_value - r.p_value) < 0.04


def test_ect_permutation_p_brute_force():
    w, vecs = _toy(seed=4, sizes=(4, 4, 6, 1))
    pool = w["x"] + w["y"]
    null = [_naive_ect(t1, t2, w["a"], vecs) for t1, t2 in _subsets(pool, 4)]
    obs = _naive_ect(w["x"], w["y"], w["a"], vecs)
    r = ECT().run([w["x"], w["y"]], [w["a"]], vecs)
    assert r.estimate == pytest.approx(obs, abs=1e-12)
    assert r.alternative == "less"
    assert r.p_value == pytest.approx(_p(null, obs, "less"), abs=1e-12)
    assert 0 < r.p_value <= 1


def test_ripa_sign_flip_p_brute_force():
    w, vecs = _toy(seed=5, sizes=(5, 5, 4, 1))
    A = w["a"]

    def ripa(xs, ys):
        b = [(vecs[x] - vecs[y]) / np.linalg.norm(vecs[x] - vecs[y]) for x, y in zip(xs, ys, strict=True)]
        return float(np.mean([[vecs[a] @ bi for bi in b] for a in A]))

    null = []
    for flips in itertools.product([False, True], repeat=5):
        xs = [y if f else x for x, y, f in zip(w["x"], w["y"], flips, strict=True)]
        ys = [x if f else y for x, y, f in zip(w["x"], w["y"], flips, strict=True)]
        null.append(ripa(xs, ys))
    obs = ripa(w["x"], w["y"])
    for alternative in ("two-sided", "greater", "less"):
        r = RIPA(alternative=alternative).run([w["x"], w["y"]], [A], vecs)
        assert r.estimate == pytest.approx(obs, rel=1e-12)
        assert r.p_value == pytest.approx(_p(null, obs, alternative), abs=1e-12)
        assert r.details["n_partitions_evaluated"] == 32


def test_wefat_per_word_and_overall_p_brute_force():
    w, vecs = _toy(seed=6, sizes=(3, 2, 4, 3))
    A, B = w["a"], w["b"]

    def s(word, a_set, b_set):
        return np.mean([_cos(vecs[word], vecs[a]) for a in a_set]) - np.mean(
            [_cos(vecs[word], vecs[b]) for b in b_set]
        )

    words = w["x"] + w["y"]
    r = WEFAT().run([w["x"], w["y"]], [A, B], vecs)
    splits = list(_subsets(A + B, len(A)))
    assert r.details["n_partitions_evaluated"] == math.comb(7, 4) == len(splits)
    for word in words:
        obs = s(word, A, B)
        sims = [_cos(vecs[word], vecs[x]) for x in A + B]
        per = r.details["per_word"][word]
        assert per["s"] == pytest.approx(obs, abs=1e-12)
        assert per["wefat"] == pytest.approx(obs / np.std(sims, ddof=1), rel=1e-10)
        assert per["p_value"] == pytest.approx(
            _p([s(word, a, b) for a, b in splits], obs, "greater"), abs=1e-12
        )
    obs_mean = np.mean([s(x, A, B) for x in words])
    null_mean = [np.mean([s(x, a, b) for x in words]) for a, b in splits]
    assert r.estimate == pytest.approx(obs_mean, abs=1e-12)
    assert r.p_value == pytest.approx(_p(null_mean, obs_mean, "greater"), abs=1e-12)


def test_rnsb_permutation_p_brute_force():
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split

    w, vecs = _toy(seed=7, dim=4, sizes=(2, 2, 3, 3))
    T = w["x"] + w["y"]
    pool = w["a"] + w["b"]

    def rnsb(pos):
        # rows in the fixed order A u B, labels +1 (positive) / -1, as RNSB refits them
        X = np.array([vecs[x] for x in pool])
        y = np.array([1.0 if x in pos else -1.0 for x in pool])
        Xtr, _, ytr, _ = train_test_split(X, y, shuffle=True, random_state=0, test_size=0.2, stratify=y)
        clf = LogisticRegression(solver="liblinear", max_iter=10000, random_state=0).fit(Xtr, ytr)
        p = clf.predict_proba(np.array([vecs[t] for t in T]))[:, list(clf.classes_).index(-1)]
        p = p / p.sum()
        return float(np.sum(p * np.log(p * len(p))))

    obs = rnsb(w["a"])
    null = [rnsb(a) for a, _ in _subsets(pool, 3)]
    r = RNSB(n_permutations=20).run([w["x"], w["y"]], [w["a"], w["b"]], vecs)
    assert r.estimate == pytest.approx(obs, rel=1e-10)
    assert r.details["permutation_method"] == "exact"
    assert r.p_value == pytest.approx(_p(null, obs, "greater"), abs=1e-12)


# --------------------------------------------------------------------------- inputs
@pytest.fixture
def toy():
    return _toy(seed=2, sizes=(4, 4, 5, 5))


def test_wrong_number_of_sets(toy):
    w, vecs = toy
    X, Y, A, B = w["x"], w["y"], w["a"], w["b"]
    with pytest.raises(ValueError, match="exactly 2 target"):
        RND().run([X], [A], vecs)
    with pytest.raises(ValueError, match="exactly 1 attribute"):
        ECT().run([X, Y], [A, B], vecs)
    with pytest.raises(ValueError, match="exactly 2 attribute"):
        RNSB().run([X, Y], [A], vecs)
    with pytest.raises(ValueError, match="at least 2 target"):
        RNSB().run([X], [A, B], vecs)
    with pytest.raises(ValueError, match="exactly 2 attribute"):
        WEFAT().run([X], [A], vecs)
    with pytest.raises(ValueError, match="at least 1 attribute"):
        MAC().run([X, Y], [], vecs)
    with pytest.raises(ValueError, match="3 target names for 2"):
        RND().run([X, Y], [A], vecs, target_names=["a", "b", "c"])
    with pytest.raises(TypeError, match="string"):
        RND().run([X, "word"], [A], vecs)


def test_empty_and_unequal_sets(toy):
    w, vecs = toy
    X, Y, A = w["x"], w["y"], w["a"]
    with pytest.raises(ValueError, match="is empty"):
        RND().run([X, []], [A], vecs)
    with pytest.raises(ValueError, match="is empty"):
        MAC().run([X], [[]], vecs)
    with pytest.raises(ValueError, match="equal size"):
        RIPA().run([X, Y[:3]], [A], vecs)
    with pytest.raises(ValueError, match="unequal sizes after"):
        RIPA().run([X, [*Y[:3], "nope"]], [A], vecs)
    with pytest.raises(ValueError, match="at least 3 attribute words"):
        ECT().run([X, Y], [A[:2]], vecs)


def test_oov_words_dropped_with_warning(toy, caplog):
    w, vecs = toy
    X, Y, A = w["x"], w["y"], w["a"]
    with caplog.at_level(logging.WARNING):
        r = RND().run([X, Y], [[*A, "zzz_missing", "qqq_missing"]], vecs, attribute_names=["jobs"])
    msgs = [rec.getMessage() for rec in caplog.records if rec.levelno == logging.WARNING]
    assert any("2 of 7" in m and "zzz_missing" in m and "qqq_missing" in m and "jobs" in m for m in msgs)
    assert r.details["oov"]["attributes"]["jobs"] == ["zzz_missing", "qqq_missing"]
    assert r.n == len(A)
    ref = RND().run([X, Y], [A], vecs)
    assert r.estimate == ref.estimate and r.p_value == ref.p_value
    with pytest.raises(ValueError, match="only 0 word"):
        MAC().run([X], [["zzz_missing"]], vecs)
    with pytest.raises(OOVError):
        RND(oov_policy="raise").run([X, Y], [[*A, "zzz_missing"]], vecs)


def test_results_are_testresults_and_seeded(toy):
    w, vecs = toy
    X, Y, A, B = w["x"], w["y"], w["a"], w["b"]
    runs = [
        RND(exact=False, n_permutations=500).run([X, Y], [A], vecs),
        ECT(exact=False, n_permutations=500).run([X, Y], [A], vecs),
        MAC().run([X, Y], [A, B], vecs),
        RIPA().run([X, Y], [A], vecs),
        RNSB(n_permutations=30).run([X, Y], [A, B], vecs),
        WEFAT(exact=False, n_permutations=500).run([X, Y], [A, B], vecs),
    ]
    again = [
        RND(exact=False, n_permutations=500).run([X, Y], [A], vecs),
        ECT(exact=False, n_permutations=500).run([X, Y], [A], vecs),
    ]
    for r in runs:
        assert isinstance(r, TestResult)
        assert r.estimate == r.statistic and np.isfinite(r.estimate)
        assert r.h0 and r.h1 and r.method
        r.to_dict()  # JSON-friendly
        assert r.p_value is None or 0 < r.p_value <= 1
    assert [r.p_value for r in again] == [runs[0].p_value, runs[1].p_value]
    assert runs[2].p_value is None and runs[2].ci is not None
    assert runs[0].ci is not None and runs[0].ci[0] <= runs[0].estimate <= runs[0].ci[1]


def test_run_query_accepts_a_wefe_like_query(toy):
    w, vecs = toy

    q = SimpleNamespace(
        target_sets=[w["x"], w["y"]],
        attribute_sets=[w["a"]],
        target_sets_names=["X", "Y"],
        attribute_sets_names=["jobs"],
    )
    r = RND().run_query(q, vecs)
    assert r.details["names"] == {"targets": ["X", "Y"], "attributes": ["jobs"]}
    assert r.estimate == RND().run([w["x"], w["y"]], [w["a"]], vecs).estimate


def test_planted_bias_is_detected():
    """Attribute words built near one target group: RND, RIPA and WEFAT find it (p < 0.05)."""
    rng = np.random.default_rng(0)
    g = rng.normal(size=20)
    vecs = {}
    for i in range(8):
        vecs[f"m{i}"] = rng.normal(size=20) + 2 * g
        vecs[f"f{i}"] = rng.normal(size=20) - 2 * g
    for i in range(10):
        vecs[f"job{i}"] = rng.normal(size=20) + 1.5 * g
        vecs[f"home{i}"] = rng.normal(size=20) - 1.5 * g
    M, F = [f"m{i}" for i in range(8)], [f"f{i}" for i in range(8)]
    jobs = [f"job{i}" for i in range(10)]
    rnd = RND().run([M, F], [jobs], vecs)
    assert rnd.estimate < 0 and rnd.p_value < 0.01  # jobs closer to M
    ripa = RIPA().run([M, F], [jobs], vecs)
    assert ripa.estimate > 0 and ripa.p_value < 0.05
    wefat = WEFAT().run([jobs], [M, F], vecs)
    assert wefat.estimate > 0 and wefat.p_value < 0.01
    # neutral words with no component along g: the pairs disagree in sign, p is not small
    gu = g / np.linalg.norm(g)
    neutral = [f"n{i}" for i in range(10)]
    for nm in neutral:
        r = rng.normal(size=20)
        vecs[nm] = r - (r @ gu) * gu
    res = RIPA().run([M, F], [neutral], vecs)
    assert abs(res.estimate) < 0.5 * abs(ripa.estimate) and res.p_value > 0.2


# --------------------------------------------------------------------------- indirect bias
def test_indirect_bias_hand_computation():
    vecs = {"w": np.array([1.0, 1.0, 1.0]), "v": np.array([1.0, 1.0, 0.0]), "u": np.array([1.0, 0.0, 1.0])}
    g = np.array([0.0, 0.0, 2.0])  # normalised inside
    # w.v = 2/sqrt(6); w_perp ~ (1,1,0) = v, so the perpendicular cosine is 1
    assert indirect_bias(vecs, "w", "v", g) == pytest.approx(1 - math.sqrt(6) / 2, abs=1e-12)
    # v.u = 1/2 with unit vectors; along g=(1,0,0) the perpendicular parts are orthogonal -> beta = 1
    direction = BiasDirection(vector=np.array([1.0, 0.0, 0.0]), method="given")
    assert indirect_bias(vecs, "v", "u", direction) == pytest.approx(1.0, abs=1e-12)
    # a direction orthogonal to both words changes nothing: beta = 0
    vecs2 = {"p": np.array([1.0, 2.0, 0.0]), "q": np.array([3.0, 1.0, 0.0])}
    assert indirect_bias(vecs2, "p", "q", np.array([0.0, 0.0, 1.0])) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(KeyError, match="nope"):
        indirect_bias(vecs, "w", "nope", g)
    with pytest.raises(ValueError, match="orthogonal"):
        indirect_bias({"a": np.array([1.0, 0, 0]), "b": np.array([0, 1.0, 0])}, "a", "b", g)
    with pytest.raises(ValueError, match="shape"):
        indirect_bias(vecs, "w", "v", np.array([1.0, 0.0]))


def test_indirect_bias_does_not_embed_words_outside_a_fasttext_vocabulary():
    from gensim.models import FastText

    sents = [["the", "doctor", "and", "the", "nurse", "work"], ["he", "and", "she", "work"]] * 20
    ft = FastText(sents, vector_size=8, min_count=1, epochs=2, seed=1, workers=1, bucket=500).wv
    assert "doctors" in ft  # gensim's fastText vectors accept any word (subwords) ...
    with pytest.raises(KeyError, match="not in the vocabulary"):  # ... indirect_bias does not
        indirect_bias(ft, "doctors", "nurse", np.ones(8))
    assert np.isfinite(indirect_bias(ft, "doctor", "nurse", ft["he"] - ft["she"]))


@pytest.mark.parametrize("name", ["RND", "ECT", "RIPA"])
def test_n_permutations_zero_gives_the_estimate_without_a_test(name):
    """n_permutations=0 skips the permutation test: same estimate and per-word details, p_value None."""
    w, kv = _toy()
    T, A = [w["x"], w["y"]], [w["a"]]
    cls = {"RND": RND, "ECT": ECT, "RIPA": RIPA}[name]
    kw = {} if name == "ECT" else {"n_bootstrap": 0}  # ECT has no bootstrap interval
    with_test = cls(n_permutations=200, exact=False, **kw).run(T, A, kv)
    without = cls(n_permutations=0, **kw).run(T, A, kv)
    assert without.p_value is None and "no test (n_permutations=0)" in without.method
    assert without.estimate == with_test.estimate
    assert "n_partitions_evaluated" not in without.details and "n_partitions_evaluated" in with_test.details
