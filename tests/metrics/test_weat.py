"""WEAT: formulas against plain-Python loops and WEFE, exact p-values against itertools,
published numbers (Caliskan et al. 2017; responsibly's word2vec table), the +-2 of one-word sets."""

from __future__ import annotations

import itertools
import math
import statistics

import numpy as np
import pytest

from biaskit.data.wordlists import OOVError
from biaskit.metrics.weat import (
    CALISKAN_2017_TABLE1,
    RESPONSIBLY_WORD2VEC_D,
    WEAT,
    WEATQuery,
    association_scores,
    load_caliskan_weat,
    one_word_effect_size,
    permutation_pvalue,
    weat,
    weat_effect_size,
    weat_table,
)


# --------------------------------------------------------------------------- references
def _cos(u, v) -> float:
    return float(
        sum(a * b for a, b in zip(u, v, strict=True))
        / (math.sqrt(sum(a * a for a in u)) * math.sqrt(sum(b * b for b in v)))
    )


def _naive_s(w, A, B) -> float:
    return statistics.fmean(_cos(w, a) for a in A) - statistics.fmean(_cos(w, b) for b in B)


def _naive_weat(X, Y, A, B):
    """Plain-Python WEAT: statistic, effect size (sample SD) and the exact p (>= convention)."""
    sx = [_naive_s(x, A, B) for x in X]
    sy = [_naive_s(y, A, B) for y in Y]
    stat = sum(sx) - sum(sy)
    d = (statistics.fmean(sx) - statistics.fmean(sy)) / statistics.stdev(sx + sy)
    return stat, d, sx, sy


def _brute_force_p(sx, sy, alternative="greater", strict=False) -> float:
    pool = list(sx) + list(sy)
    obs = sum(sx) - sum(sy)
    stats = []
    for comb in itertools.combinations(range(len(pool)), len(sx)):
        inside = set(comb)
        stats.append(sum(pool[i] for i in comb) - sum(pool[i] for i in range(len(pool)) if i not in inside))
    center = sum(stats) / len(stats)  # the null mean, found by enumeration (0 when |X| = |Y|)
    count = total = 0
    for st in stats:
        total += 1
        eps = 1e-9
        if alternative == "greater":
            count += st > obs + eps if strict else st >= obs - eps
        elif alternative == "less":
            count += st < obs - eps if strict else st <= obs + eps
        else:
            dist, dobs = abs(st - center), abs(obs - center)
            count += dist > dobs + eps if strict else dist >= dobs - eps
    return count / total


def _random_vectors(n: int, dim: int = 20, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {f"w{i}": rng.normal(size=dim) for i in range(n)}


@pytest.fixture(scope="module")
def w2v():
    from biaskit.embeddings.vectors import load_reference_vectors

    return load_reference_vectors("word2vec-googlenews-wefe")


# --------------------------------------------------------------------------- formulas
def test_association_scores_match_loop():
    vec = _random_vectors(12, seed=1)
    W = np.array([vec[f"w{i}"] for i in range(4)])
    A = np.array([vec[f"w{i}"] for i in range(4, 8)])
    B = np.array([vec[f"w{i}"] for i in range(8, 12)])
    got = association_scores(W, A, B)
    want = [_naive_s(w, A, B) for w in W]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(("nx", "ny", "na", "nb"), [(4, 4, 3, 3), (3, 5, 2, 4), (1, 1, 1, 1), (6, 2, 5, 1)])
def test_statistic_effect_size_and_exact_p_match_naive(nx, ny, na, nb):
    vec = _random_vectors(nx + ny + na + nb, seed=nx * 7 + ny)
    words = list(vec)
    X, Y = words[:nx], words[nx : nx + ny]
    A, B = words[nx + ny : nx + ny + na], words[nx + ny + na :]
    res = weat(X, Y, A, B, vec, exact=True)
    stat, d, sx, sy = _naive_weat(*([vec[w] for w in s] for s in (X, Y, A, B)))
    assert res.statistic == pytest.approx(stat, rel=1e-10, abs=1e-12)
    assert res.effect_size == pytest.approx(d, rel=1e-10)
    assert res.details["permutation_method"] == "exact"
    assert res.details["n_partitions_total"] == math.comb(nx + ny, nx)
    for alternative in ("greater", "less", "two-sided"):
        for comparison in (">=", ">"):
            r = weat(X, Y, A, B, vec, exact=True, alternative=alternative, comparison=comparison)
            want = _brute_force_p(sx, sy, alternative, strict=comparison == ">")
            assert r.p_value == pytest.approx(want, abs=1e-12), (alternative, comparison)


def test_exact_p_matches_itertools_on_real_vectors(w2v):
    X = ["math", "algebra", "geometry", "calculus", "equations"]
    Y = ["poetry", "art", "dance", "literature", "novel"]
    A = ["male", "man", "boy", "brother", "he"]
    B = ["female", "woman", "girl", "sister", "she"]
    res = weat(X, Y, A, B, w2v, exact=True)
    _, _, sx, sy = _naive_weat(*([w2v[w].astype(float) for w in s] for s in (X, Y, A, B)))
    assert res.p_value == pytest.approx(_brute_force_p(sx, sy), abs=1e-12)
    assert res.details["n_partitions_evaluated"] == math.comb(10, 5) == 252


def test_ties_count_the_observed_partition():
    # identical scores everywhere: every partition ties with the observed one
    p_ge = permutation_pvalue(np.zeros(3), np.zeros(3), exact=True)
    p_gt = permutation_pvalue(np.zeros(3), np.zeros(3), exact=True, comparison=">")
    assert p_ge["p_value"] == 1.0
    assert p_gt["p_value"] == 0.0
    # >= never gives less than 1 / #partitions
    r = permutation_pvalue(np.array([5.0, 4.0]), np.array([0.0, 1.0]), exact=True)
    assert r["p_value"] == pytest.approx(1 / 6)


def test_sampled_is_without_replacement_and_close_to_exact():
    rng = np.random.default_rng(3)
    sx, sy = rng.normal(0.2, 1, 8), rng.normal(0, 1, 8)
    exact = permutation_pvalue(sx, sy, exact=True)
    # C(16, 8) = 12870: asking for all but the observed partition reproduces the exact p
    full = permutation_pvalue(sx, sy, exact=False, n_permutations=12869, random_state=1)
    assert full["method"] == "exact"  # switched, logged
    sampled = permutation_pvalue(sx, sy, exact=False, n_permutations=5000, random_state=1, return_null=True)
    assert sampled["method"] == "sampled"
    assert sampled["n_partitions_evaluated"] == 5000
    assert sampled["p_value"] == pytest.approx(exact["p_value"], abs=0.03)
    # distinct partitions of the right size, never the observed one; both paths (n <= 64, n > 64)
    from biaskit.metrics.weat import _mask_sums, _sample_masks, _sample_partitions

    for n, k, m in ((16, 8, 12000), (9, 2, 35), (70, 3, 5000)):
        mem = np.vstack(list(_sample_partitions(n, k, m, np.random.default_rng(0), 3000)))
        assert mem.shape == (m, n)
        assert (mem.sum(axis=1) == k).all()
        subsets = {tuple(np.flatnonzero(row)) for row in mem}
        assert len(subsets) == m
        assert tuple(range(k)) not in subsets
    # C(9, 2) - 1 = 35: asking for all of them returns every non-observed partition
    assert len(subsets) == 5000
    # uniform: each word lands in X_i with probability k/n (balanced and unbalanced cases)
    for n, k in ((16, 8), (20, 5)):
        mem = np.vstack(list(_sample_partitions(n, k, 12000, np.random.default_rng(1), 3000)))
        np.testing.assert_allclose(mem.mean(axis=0), k / n, atol=0.02)
    # the byte-table sums equal the membership products
    pool = np.random.default_rng(2).normal(size=40)
    masks = next(iter(_sample_masks(40, 13, 500, np.random.default_rng(3), 500)))
    bits = ((masks[:, None] >> np.arange(40, dtype=np.uint64)) & np.uint64(1)).astype(float)
    np.testing.assert_allclose(_mask_sums(masks, pool), bits @ pool, rtol=1e-12, atol=1e-12)


def test_sampled_reproducible_and_auto_threshold():
    rng = np.random.default_rng(5)
    sx, sy = rng.normal(size=12), rng.normal(size=12)  # C(24,12) = 2.7M partitions
    a = permutation_pvalue(sx, sy, n_permutations=2000, random_state=7)
    b = permutation_pvalue(sx, sy, n_permutations=2000, random_state=7)
    assert a["method"] == "sampled" and a["p_value"] == b["p_value"]
    c = permutation_pvalue(sx[:4], sy[:4], n_permutations=2000)
    assert c["method"] == "exact" and c["n_partitions_total"] == 70


def test_unequal_sizes_use_means_and_partitions_of_original_sizes():
    vec = _random_vectors(11, seed=9)
    w = list(vec)
    X, Y, A, B = w[:2], w[2:7], w[7:9], w[9:]
    r = weat(X, Y, A, B, vec, exact=True)
    _, d, sx, sy = _naive_weat(*([vec[t] for t in s] for s in (X, Y, A, B)))
    assert r.effect_size == pytest.approx(d)
    assert r.details["n_partitions_total"] == math.comb(7, 2)
    assert r.p_value == pytest.approx(_brute_force_p(sx, sy))


# --------------------------------------------------------------------------- +-2 property
@pytest.mark.parametrize("seed", range(5))
def test_one_word_sets_give_constant_effect_size(seed):
    vec = _random_vectors(4, dim=30, seed=seed)
    X, Y, A, B = (["w0"], ["w1"], ["w2"], ["w3"])
    d0 = weat(X, Y, A, B, vec, ddof=0).effect_size
    d1 = weat(X, Y, A, B, vec, ddof=1).effect_size
    assert abs(d0) == pytest.approx(2.0) == one_word_effect_size(0)
    assert abs(d1) == pytest.approx(math.sqrt(2)) == one_word_effect_size(1)
    assert np.sign(d0) == np.sign(d1)


def test_table_3_2_signs_on_word2vec_bolukbasi():
    """Seed 000 Table 3.2 (Ethayarajh et al. 2019): {door} vs {curtain}.  d = +2 (ddof=0) and
    p = 0.0 with the strict '>' of responsibly for masculine/feminine and woman/man."""
    from biaskit.embeddings.vectors import load_reference_vectors

    kv = load_reference_vectors("word2vec-googlenews-bolukbasi")
    test = WEAT(ddof=0, comparison=">")
    for A, B in (["masculine"], ["feminine"]), (["woman"], ["man"]):
        r = test.run(["door"], ["curtain"], A, B, kv)
        assert r.effect_size == pytest.approx(2.0)
        assert r.statistic > 0  # thesis: 0.021 and 0.071 (different vectors; same sign)
        assert r.p_value == 0.0
    # the default (>=) convention counts the observed partition: p = 1/2 for two partitions
    assert WEAT(ddof=0).run(["door"], ["curtain"], ["woman"], ["man"], kv).p_value == 0.5


# --------------------------------------------------------------------------- WEFE and published
def test_against_wefe(w2v):
    from wefe.metrics import WEAT as WefeWEAT
    from wefe.query import Query
    from wefe.word_embedding_model import WordEmbeddingModel

    q = load_caliskan_weat()["weat7"]
    query = Query([list(q.X), list(q.Y)], [list(q.A), list(q.B)], list(q.names[:2]), list(q.names[2:]))
    ref = WefeWEAT().run_query(query, WordEmbeddingModel(w2v, "w2v"), return_effect_size=True)
    ours = WEAT().run_query(q, w2v)
    assert ours.statistic == pytest.approx(ref["weat"], rel=1e-6)
    n = ours.n
    # WEFE uses the population SD (ddof=0): d_ours = d_wefe * sqrt((n-1)/n)
    assert ours.effect_size == pytest.approx(ref["effect_size"] * math.sqrt((n - 1) / n), rel=1e-6)
    assert WEAT(ddof=0).run_query(q, w2v).effect_size == pytest.approx(ref["effect_size"], rel=1e-6)
    assert ours.effect_size == pytest.approx(0.97, abs=0.005)  # docs/records/validation.json, WEAT 1-10 row


#: the sample-SD effect sizes on this subset that docs/records/validation.json shows (two decimals)
WORD2VEC_D = {"weat1": 1.54, "weat2": 1.63, "weat6": 1.89, "weat8": 1.24, "weat9": 1.38}


@pytest.mark.parametrize("key", ["weat1", "weat2", "weat6", "weat8", "weat9"])
def test_caliskan_sets_on_word2vec(w2v, key):
    """On word2vec GoogleNews, effect sizes close to responsibly's published word2vec table
    (population SD) and to Caliskan et al.'s GloVe numbers; all significant at 5%."""
    q = load_caliskan_weat()[key]
    r = WEAT(n_permutations=5000).run_query(q, w2v)
    r0 = WEAT(ddof=0, n_permutations=200).run_query(q, w2v)
    assert r0.effect_size == pytest.approx(RESPONSIBLY_WORD2VEC_D[key], abs=0.05)
    assert r.effect_size == pytest.approx(CALISKAN_2017_TABLE1[key]["d"], abs=0.15)
    assert r.effect_size == pytest.approx(WORD2VEC_D[key], abs=0.005)
    assert r.p_value < 0.05


def test_weat_table_and_query_loading(w2v):
    qs = load_caliskan_weat()
    assert list(qs) == [f"weat{i}" for i in range(1, 11)]
    assert qs["weat1"].names == ("Flowers", "Insects", "Pleasant", "Unpleasant")
    assert len(qs["weat3"].X) == 32 and len(qs["weat9"].A) == 7
    df = weat_table({k: qs[k] for k in ("weat7", "weat9")}, w2v, WEAT(n_permutations=500))
    assert list(df["test"]) == ["weat7", "weat9"]
    assert "short-term" in df.loc[1, "oov"]
    assert df.loc[0, "permutation"] == "exact"


# --------------------------------------------------------------------------- bad input
def test_oov_reported_and_policies():
    vec = _random_vectors(8, seed=2)
    r = weat(["w0", "w1", "zzz"], ["w2", "w3"], ["w4", "w5"], ["w6", "w7", "qqq"], vec)
    assert r.details["oov"] == {"X": ["zzz"], "Y": [], "A": [], "B": ["qqq"]}
    assert r.details["sizes"] == {"X": 2, "Y": 2, "A": 2, "B": 2}
    with pytest.raises(OOVError, match="zzz"):
        weat(["w0", "zzz"], ["w2"], ["w4"], ["w6"], vec, oov_policy="raise")
    with pytest.raises(ValueError, match="only 0 word"):
        weat(["zzz"], ["w2"], ["w4"], ["w6"], vec)
    with pytest.raises(ValueError, match="empty"):
        weat([], ["w2"], ["w4"], ["w6"], vec)


def test_bad_input_errors():
    vec = _random_vectors(6, seed=4)
    with pytest.raises(ValueError, match="share words"):
        weat(["w0", "w1"], ["w1", "w2"], ["w3"], ["w4"], vec)
    with pytest.raises(TypeError, match="list of words"):
        weat("w0", ["w1"], ["w3"], ["w4"], vec)
    vec["zero"] = np.zeros(20)
    with pytest.raises(ValueError, match="zero vectors"):
        weat(["zero"], ["w1"], ["w3"], ["w4"], vec)
    with pytest.raises(ValueError, match="alternative"):
        weat(["w0"], ["w1"], ["w3"], ["w4"], vec, alternative="bigger")
    with pytest.raises(ValueError, match="exact=True"):
        permutation_pvalue(np.arange(30.0), np.arange(30.0), exact=True)
    assert math.isnan(weat_effect_size(np.ones(3), np.ones(3)))


def test_result_object_is_serialisable_and_readable():
    vec = _random_vectors(8, seed=6)
    q = WEATQuery.from_lists(["w0", "w1"], ["w2", "w3"], ["w4", "w5"], ["w6", "w7"], names="ABCD")
    r = WEAT(keep_null_distribution=True).run_query(q, vec)
    assert len(r.details["null_distribution"]) == 6
    d = r.to_dict()
    assert d["details"]["permutation_method"] == "exact"
    assert "reject" in r.summary() or "do not reject" in r.summary()
