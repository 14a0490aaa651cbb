"""The permutation engine (biaskit.core.permutation): exact p-values against brute-force enumeration,
the +1 convention of sampled p-values, the two two-sided conventions, the draws."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from biaskit.core import permutation as P


def _brute_force_counts(pool: np.ndarray, k: int, observed: float, center: float, tol: float):
    """Counts of partitions (all C(n, k) of them) whose sum statistic 2 * sum_X - total is >=, <=
    and at least as far from ``center`` as the observed one, from a plain loop."""
    total = pool.sum()
    ge = le = far = 0
    for idx in itertools.combinations(range(pool.size), k):
        t = 2.0 * pool[list(idx)].sum() - total
        ge += t >= observed - tol
        le += t <= observed + tol
        far += abs(t - center) >= abs(observed - center) - tol
    return ge, le, far


@pytest.mark.parametrize(("n", "k"), [(8, 4), (9, 2), (7, 3)])
def test_exact_pvalue_equals_brute_force_enumeration(n, k):
    pool = np.random.default_rng(n * 10 + k).normal(size=n)
    total = pool.sum()
    observed = float(2.0 * pool[:k].sum() - total)
    center = (2 * k - n) / n * float(total)
    tol = 1e-9
    ge, le, far = _brute_force_counts(pool, k, observed, center, tol)
    N = math.comb(n, k)
    for alternative, count in (("greater", ge), ("less", le), ("two-sided", far)):
        chunks = (2.0 * pool[idx].sum(axis=1) - total for idx in P.combination_chunks(n, k, 7))
        tally = P.tally_null(chunks, observed, alternative=alternative, tol=tol, center=center)
        assert tally.n_evaluated == N
        assert tally.n_extreme == count
        assert tally.p_value(exact=True) == count / N
        # the observed partition is among those enumerated and counts itself
        assert tally.p_value(exact=True) >= 1 / N
    # the doubled two-sided convention from the same counts
    chunks = (2.0 * pool[idx].sum(axis=1) - total for idx in P.combination_chunks(n, k, 5))
    tally = P.tally_null(chunks, observed, alternative="two-sided", tol=tol, two_sided="doubled")
    assert (tally.n_ge, tally.n_le) == (ge, le)
    assert tally.p_value(exact=True) == min(1.0, 2.0 * min(ge / N, le / N))


def test_null_mean_and_sd_are_those_of_the_enumerated_statistics():
    pool = np.random.default_rng(3).normal(size=10)
    total = pool.sum()
    stats = np.array([2.0 * pool[list(c)].sum() - total for c in itertools.combinations(range(10), 4)])
    tally = P.tally_null(
        (2.0 * pool[idx].sum(axis=1) - total for idx in P.combination_chunks(10, 4, 50)),
        float(stats[0]),
        alternative="greater",
        keep=True,
    )
    np.testing.assert_array_equal(tally.null_distribution, stats)
    assert tally.mean == pytest.approx(stats.mean(), rel=1e-12, abs=1e-12)
    # exact null mean of the sum statistic: (2k - n) / n * sum(pool)
    assert tally.mean == pytest.approx((2 * 4 - 10) / 10 * total, rel=1e-9)
    assert tally.sd == pytest.approx(stats.std(), rel=1e-9)


def test_sampled_pvalue_counts_the_observed_partition_once():
    n, k, m = 12, 5, 300
    pool = np.random.default_rng(7).normal(size=n)
    total = pool.sum()
    observed = float(2.0 * pool[:k].sum() - total)
    mem = np.vstack(list(P.sample_partitions(n, k, m, np.random.default_rng(1), 64)))
    stats = 2.0 * (mem @ pool) - total
    extreme = int(np.sum(stats >= observed))
    tally = P.tally_null(
        (
            2.0 * P.mask_sums(masks, pool) - total
            for masks in P.sample_distinct_masks(n, k, m, np.random.default_rng(1), 64)
        ),
        observed,
        alternative="greater",
    )
    assert tally.n_evaluated == m
    assert tally.n_extreme == extreme
    assert tally.p_value(exact=False) == (extreme + 1) / (m + 1)
    # the strict comparison: the observed partition does not count itself
    strict = P.tally_null([stats], observed, alternative="greater", comparison=">")
    assert strict.p_value(exact=False) == int(np.sum(stats > observed)) / (m + 1)


def test_pvalue_from_counts_and_tails():
    assert P.pvalue_from_counts(3, 10, exact=True) == 0.3
    assert P.pvalue_from_counts(3, 9, exact=False) == 0.4
    assert P.pvalue_from_counts(3, 9, exact=False, observed_counts=False) == 0.3
    assert P.pvalue_from_counts(0, 99, exact=False) == 0.01  # never 0 (Phipson & Smyth 2010)
    assert P.pvalue_from_tails(2, 9, 10, exact=True, alternative="greater") == 0.2
    assert P.pvalue_from_tails(2, 9, 10, exact=True, alternative="less") == 0.9
    assert P.pvalue_from_tails(2, 9, 10, exact=True, alternative="two-sided") == 0.4
    assert P.pvalue_from_tails(7, 9, 10, exact=True, alternative="two-sided") == 1.0  # capped at 1
    assert P.pvalue_from_tails(1, 8, 9, exact=False, alternative="two-sided") == 0.4


def test_extreme_mask_ties_and_centre():
    stats = np.array([1.0, 2.0, 2.0 + 1e-12, 3.0, -4.0])
    assert P.extreme_mask(stats, 2.0, "greater", ">=", tol=1e-9).tolist() == [False, True, True, True, False]
    assert P.extreme_mask(stats, 2.0, "greater", ">", tol=1e-9).tolist() == [False, False, False, True, False]
    assert P.extreme_mask(stats, 2.0, "less", ">=", tol=1e-9).tolist() == [True, True, True, False, True]
    # two-sided: distances from the centre 1.0 -> 0, 1, 1, 2, 5 against |2 - 1| = 1
    assert P.extreme_mask(stats, 2.0, "two-sided", ">=", tol=1e-9, center=1.0).tolist() == [
        False,
        True,
        True,
        True,
        True,
    ]


def test_non_finite_null_values_are_left_out_unless_asked():
    st = np.array([1.0, np.nan, 3.0, np.inf, 0.5])
    kept = P.tally_null([st], 1.0, alternative="greater")
    assert kept.n_evaluated == 3 and kept.n_extreme == 2
    assert kept.p_value(exact=True) == 2 / 3
    everything = P.tally_null([st], 1.0, alternative="greater", finite_only=False)
    assert everything.n_evaluated == 5 and everything.n_extreme == 3  # inf >= 1, nan never


def test_draws():
    # exact subset masks: every k-subset once, in itertools order
    masks = np.vstack(list(P.subset_masks(6, 2, exact=True, m=0, rng=np.random.default_rng(0), batch=4)))
    assert [tuple(np.flatnonzero(r)) for r in masks] == list(itertools.combinations(range(6), 2))
    # sampled subset masks: the right size, drawn with replacement, m rows
    masks = np.vstack(list(P.subset_masks(5, 2, exact=False, m=500, rng=np.random.default_rng(0), batch=64)))
    assert masks.shape == (500, 5) and (masks.sum(axis=1) == 2).all()
    assert len({tuple(r) for r in masks}) == math.comb(5, 2)  # repeats: only 10 exist
    # sign patterns: all 2**n once, the observed (no flip) first
    signs = np.vstack(list(P.sign_masks(4, exact=True, m=0, rng=np.random.default_rng(0), batch=5)))
    assert signs.shape == (16, 4) and len({tuple(r) for r in signs}) == 16 and not signs[0].any()
    # relabellings: one rng.permutation per row
    lab = np.array([1.0, -1.0, 1.0, -1.0, -1.0])
    rows = P.random_relabellings(lab, 6, np.random.default_rng(5))
    rng = np.random.default_rng(5)
    np.testing.assert_array_equal(rows, np.vstack([rng.permutation(lab) for _ in range(6)]))
    # distinct draws refuse more partitions than exist besides the observed one
    with pytest.raises(ValueError, match="cannot draw 10 distinct partitions: only 9"):
        next(P.sample_distinct_masks(5, 3, 10, np.random.default_rng(0), 8))
    with pytest.raises(ValueError, match="need 0 < k < n <= 64"):
        next(P.sample_distinct_masks(65, 3, 10, np.random.default_rng(0), 8))


def test_index_row_draws_for_large_pools_are_distinct_and_exclude_the_observed_partition():
    rows = np.vstack(list(P.sample_distinct_index_rows(70, 2, 400, np.random.default_rng(2), 128)))
    subsets = {tuple(sorted(r)) for r in rows.tolist()}
    assert rows.shape == (400, 2) and len(subsets) == 400 and (0, 1) not in subsets


def test_check_settings_messages():
    P.check_settings("greater", "auto", 1)
    with pytest.raises(ValueError, match="alternative must be 'greater', 'less' or 'two-sided', got 'up'"):
        P.check_settings("up", "auto", 10)
    with pytest.raises(ValueError, match="comparison must be '>=' or '>', got '=='"):
        P.check_settings("less", "auto", 10, "==")
    with pytest.raises(ValueError, match="exact must be 'auto', True or False, got 'yes'"):
        P.check_settings("less", "yes", 10)
    with pytest.raises(ValueError, match="n_permutations must be >= 1, got 0"):
        P.check_settings("less", True, 0)


def test_details_and_label():
    perm = {
        "method": "exact",
        "n_partitions_total": 12870,
        "n_partitions_evaluated": 12870,
        "n_extreme": 5,
        "comparison": ">=",
        "p_value": 5 / 12870,
    }
    assert P.permutation_details(perm) == {
        "permutation_method": "exact",
        "n_partitions_total": 12870,
        "n_partitions_evaluated": 12870,
        "n_extreme": 5,
        "comparison": ">=",
    }
    assert P.partitions_label(perm) == "exact, 12,870 of 12,870 partitions"


def test_weat_and_sign_flip_use_the_engine_with_brute_force_values():
    from biaskit.metrics.weat import permutation_pvalue

    rng = np.random.default_rng(11)
    sx, sy = rng.normal(size=5), rng.normal(size=4)
    pool = np.concatenate([sx, sy])
    tol = P.TIE_RTOL * (1.0 + np.abs(pool).sum())
    observed = float(2.0 * pool[:5].sum() - pool.sum())
    center = (2 * 5 - 9) / 9 * float(pool.sum())
    ge, le, far = _brute_force_counts(pool, 5, observed, center, tol)
    for alt, count in (("greater", ge), ("less", le), ("two-sided", far)):
        r = permutation_pvalue(sx, sy, exact=True, alternative=alt)
        assert r["p_value"] == count / math.comb(9, 5)
        assert r["n_extreme"] == count
    # sign flips of paired contributions: mean of +-s_i over all 2**n patterns
    s_pair = rng.normal(size=6)
    obs = float(s_pair.mean())
    flips = [
        np.where(np.array(bits, bool), -s_pair, s_pair).mean() for bits in itertools.product([0, 1], repeat=6)
    ]
    tally = P.tally_null(
        (
            np.where(m, -s_pair, s_pair).mean(axis=1)
            for m in P.sign_masks(6, exact=True, m=0, rng=rng, batch=16)
        ),
        obs,
        alternative="greater",
        tol=1e-9,
        two_sided="doubled",
    )
    assert tally.p_value(exact=True) == sum(f >= obs - 1e-9 for f in flips) / 64


# ----------------------------------------------------------------------------------- the one driver
def _sum_difference(masks: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """A toy metric's statistic: sum over the first group minus sum over the second, from boolean rows
    (WEAT's s(X, Y, A, B) computed another way: a matrix product instead of WEAT's gather-sums)."""
    m = masks.astype(np.float64)
    return m @ pool - (1.0 - m) @ pool


@pytest.mark.parametrize("alternative", ["greater", "less", "two-sided"])
@pytest.mark.parametrize("grid", [0.0, 0.1])  # 0.1: scores on a grid, so that many partitions tie exactly
def test_a_toy_metric_gets_weats_exact_p_on_the_same_statistic(alternative, grid):
    """8 + 8 words: all 12,870 partitions.  A metric that only hands the driver its statistic (computed
    its own way, observed value included) gets WEAT's exact p-value and count, the observed partition
    counting itself, with the ties of the grid scores counted alike."""
    from biaskit.metrics.weat import permutation_pvalue

    rng = np.random.default_rng(4)
    pool = rng.normal(size=16)
    if grid:
        pool = np.round(pool / grid) * grid
    weat = permutation_pvalue(pool[:8], pool[8:], exact=True, alternative=alternative)
    toy = P.permutation_test(lambda m: _sum_difference(m, pool), P.Partitions(16, 8), alternative=alternative)
    assert toy.method == weat.method == "exact"
    assert toy.n_partitions_total == toy.n_partitions_evaluated == math.comb(16, 8) == 12_870
    assert toy.n_extreme == weat.n_extreme
    assert toy.p_value == weat.p_value
    assert toy.p_value >= 1 / 12_870  # the observed partition counts itself
    # and both equal the brute-force count with WEAT's tolerance
    total = pool.sum()
    observed = float(2.0 * pool[:8].sum() - total)
    ge, le, far = _brute_force_counts(pool, 8, observed, 0.0, P.TIE_RTOL * (1 + np.abs(pool).sum()))
    assert weat.n_extreme == {"greater": ge, "less": le, "two-sided": far}[alternative]
    # ties: counted by both (the observed partition among them); a strict count would find fewer
    stats = _sum_difference(np.vstack(list(P.Partitions(16, 8).batches(True, 0, rng, 20_000))), pool)
    strict = P.extreme_mask(stats, observed, alternative, ">", tol=toy.tie_tolerance).sum()
    assert toy.n_extreme - strict >= (2 if grid else 1)


def test_a_toy_metric_gets_weats_sampled_p_from_the_same_draws():
    """Sampled: the same seed draws the same distinct partitions for WEAT's fast path and for boolean rows."""
    from biaskit.metrics.weat import permutation_pvalue

    pool = np.round(np.random.default_rng(9).normal(size=20) * 10) / 10
    weat = permutation_pvalue(pool[:10], pool[10:], exact=False, n_permutations=3000, random_state=5)
    toy = P.permutation_test(
        lambda m: _sum_difference(m, pool),
        P.Partitions(20, 10),
        exact=False,
        n_permutations=3000,
        random_state=5,
    )
    assert toy.method == weat.method == "sampled" and toy.n_partitions_evaluated == 3000
    assert toy.n_extreme == weat.n_extreme and toy.p_value == weat.p_value == (weat.n_extreme + 1) / 3001


def test_permutation_result_reads_like_the_dict_it_replaces():
    r = P.permutation_test(lambda m: _sum_difference(m, np.arange(6.0)), P.Partitions(6, 3), keep_null=True)
    assert r["p_value"] == r.p_value and r["method"] == "exact" and "null_distribution" in r
    assert r.keys()[:4] == ["p_value", "method", "n_partitions_total", "n_partitions_evaluated"]
    assert r.details() == {
        "permutation_method": "exact",
        "n_partitions_total": 20,
        "n_partitions_evaluated": 20,
        "n_extreme": r.n_extreme,
        "comparison": ">=",
        "null_mean": r.null_mean,
        "null_sd": r.null_sd,
    }
    assert r.label() == "exact, 20 of 20 partitions"
    # observed 0+1+2 - (3+4+5) = -9 is the smallest of the 20 sums: only it (and its tie-free self) is <=
    assert r.observed == -9.0 and r.n_extreme == 20 and r.p_value == 1.0
    less = P.permutation_test(
        lambda m: _sum_difference(m, np.arange(6.0)), P.Partitions(6, 3), alternative="less"
    )
    assert less.n_extreme == 1 and less.p_value == 1 / 20
    with pytest.raises(KeyError):
        r["n_total"]


def test_the_driver_refuses_what_it_cannot_do():
    with pytest.raises(ValueError, match="not enumerated"):
        P.permutation_test(lambda L: L[:, 0], P.LabelShuffles(np.array([1.0, -1.0, 1.0])), exact=True)
    with pytest.raises(ValueError, match=r"exact=True would enumerate .* partitions"):
        P.permutation_test(lambda m: m.sum(axis=1), P.Partitions(60, 30), exact=True)
    with pytest.raises(ValueError, match="0 < k < n"):
        P.Partitions(4, 4)
    with pytest.raises(ValueError, match="no partitions gave a finite statistic"):
        P.permutation_test(lambda m: np.full(m.shape[0], np.nan), P.Partitions(5, 2), observed=1.0)
    # distinct draws of more partitions than there are: the exact test instead
    r = P.permutation_test(
        lambda m: _sum_difference(m, np.arange(5.0)), P.Partitions(5, 2), exact=False, n_permutations=50
    )
    assert r.method == "exact" and r.n_partitions_evaluated == 10


def test_label_shuffles_compute_the_observed_value_with_the_null_values():
    """The calibration's label test: the observed labelling is scored in the same batch as the shuffles."""
    lab = np.array([1.0, -1.0] * 5)
    value = np.random.default_rng(0).normal(size=10)
    r = P.permutation_test(
        lambda L: (L * value).mean(axis=1), P.LabelShuffles(lab), alternative="two-sided", center="null_mean",
        n_permutations=500, random_state=3, keep_null=True,
    )  # fmt: skip
    perms = P.random_relabellings(lab, 500, np.random.default_rng(3))
    null = (perms * value).mean(axis=1)
    obs = float((lab * value).mean())
    c = null.mean()
    expected = (1 + np.sum(np.abs(null - c) >= abs(obs - c) - P.TIE_RTOL * (1 + abs(obs)))) / 501
    assert r.observed == obs and r.p_value == expected and r.n_partitions_total == math.comb(10, 5)
    np.testing.assert_array_equal(r.null_distribution, null)
