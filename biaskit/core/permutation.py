r"""One permutation-test engine for the package: WEAT, SEAT, LPBS, the WEFE-family metrics, calibration.

A permutation (randomization) test compares the observed value :math:`T_0` of a statistic with its
values :math:`T_1 \dots T_N` on relabellings of the data that are exchangeable under H0: the
partitions of a pool into two sets of the observed sizes (WEAT's X u Y, LPBS's A u B, RND's T1 u T2),
the sign patterns of paired data (RIPA), or the relabellings of the targets (the calibration study).
Fisher (1935, *The Design of Experiments*, section 21); Pitman (1937); Ernst (2004, "Permutation
methods: a basis for exact inference", *Statistical Science* 19:676).

**p-value.**  With ``e`` the number of relabellings at least as extreme as the observed one:

* exact (all :math:`N` relabellings enumerated, the observed one among them, so it counts itself):
  :math:`p = e / N`;
* sampled (:math:`N` relabellings drawn at random, the observed one not among them):
  :math:`p = (e + 1) / (N + 1)`, the observed relabelling counted once.  Phipson & Smyth (2010,
  "Permutation p-values should never be zero", *Stat. Appl. Genet. Mol. Biol.* 9:39): the +1 makes
  the test valid, :math:`P(p \le \alpha) \le \alpha` under H0, and p never 0.  With ``comparison=">"``
  (the letter of Caliskan et al.'s 2017 formula, strictly greater) the observed relabelling does
  not count itself: :math:`p = e / (N + 1)`.

**Alternatives.**  ``"greater"`` counts :math:`T_i \ge T_0`, ``"less"`` :math:`T_i \le T_0`.  Two
two-sided conventions are in use here, and both are kept (they give different numbers):

* ``two_sided="centred"``: :math:`|T_i - c| \ge |T_0 - c|`, with :math:`c` the centre of the null
  distribution: its exact mean when it is known (WEAT: :math:`(2|X| - n)/n \cdot \sum s`, 0 for equal
  sizes) or the mean of the sampled values (the calibration study's label-permutation test);
* ``two_sided="doubled"``: :math:`\min(1, 2 \min(p_{greater}, p_{less}))` (the WEFE-family metrics).

**Ties.**  Values within ``tol`` of the observed one count as ties (as extreme with ``>=``, not with
``>``), so that floating-point noise does not decide a comparison; each caller sets ``tol``
(:data:`TIE_RTOL` relative to the size of its statistic, or an absolute 1e-12).

The draws: :func:`combination_chunks` (every k-subset, in :func:`itertools.combinations` order),
:func:`sample_distinct_masks` / :func:`sample_distinct_index_rows` (distinct k-subsets without
replacement, never the observed one; WEAT, LPBS), :func:`subset_masks` (every k-subset, or k-subsets
drawn with replacement; the WEFE-family metrics), :func:`sign_masks` (sign-flip patterns) and
:func:`random_relabellings` (random permutations of a label vector).  :func:`tally_null` counts the
extreme values over batches of null statistics, with their mean and SD, and gives the p-value.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from biaskit.core.results import Alternative

Comparison = Literal[">=", ">"]
ExactMode = Literal["auto"] | bool
TwoSided = Literal["centred", "doubled"]

__all__ = [
    "HARD_EXACT_LIMIT",
    "TIE_RTOL",
    "Comparison",
    "ExactMode",
    "NullTally",
    "TwoSided",
    "check_settings",
    "combination_chunks",
    "extreme_mask",
    "mask_sums",
    "partitions_label",
    "permutation_details",
    "pvalue_from_counts",
    "pvalue_from_tails",
    "random_relabellings",
    "sample_distinct_index_rows",
    "sample_distinct_masks",
    "sample_partitions",
    "sign_masks",
    "subset_masks",
    "tally_null",
]

#: Relative tie tolerance: values within ``TIE_RTOL * (1 + scale)`` of the observed one are ties.
TIE_RTOL = 1e-9
#: The most relabellings an exact test may enumerate.
HARD_EXACT_LIMIT = 50_000_000
_POW2 = np.uint64(1) << np.arange(64, dtype=np.uint64)


def check_settings(alternative: Any, exact: Any, n_permutations: Any, comparison: Any = ">=") -> None:
    """``ValueError`` for an unknown ``alternative``, ``comparison`` or ``exact``, or ``n_permutations < 1``."""
    if alternative not in ("greater", "less", "two-sided"):
        raise ValueError(f"alternative must be 'greater', 'less' or 'two-sided', got {alternative!r}")
    if comparison not in (">=", ">"):
        raise ValueError(f"comparison must be '>=' or '>', got {comparison!r}")
    if exact not in ("auto", True, False):
        raise ValueError(f"exact must be 'auto', True or False, got {exact!r}")
    if int(n_permutations) < 1:
        raise ValueError(f"n_permutations must be >= 1, got {n_permutations}")


# --------------------------------------------------------------------------- exact enumeration
def combination_chunks(n: int, k: int, chunk: int) -> Iterator[np.ndarray]:
    """Every k-subset of ``range(n)`` as index rows, in :func:`itertools.combinations` order (the
    observed partition, ``range(k)``, first), in arrays of at most ``chunk`` rows of shape (rows, k)."""
    it = itertools.combinations(range(n), k)
    while True:
        flat = np.fromiter(itertools.chain.from_iterable(itertools.islice(it, chunk)), dtype=np.intp)
        if flat.size == 0:
            return
        yield flat.reshape(-1, k)


# --------------------------------------------------------------------------- sampling without replacement
def sample_distinct_masks(
    n: int, k: int, m: int, rng: np.random.Generator, batch: int
) -> Iterator[np.ndarray]:
    """Yield ``m`` distinct uniformly random k-subsets of range(n) (n <= 64) as 64-bit masks
    (bit i set = item i in the first set), never the observed mask 2**k - 1, in chunks.

    Candidates are Bernoulli(k/n) masks (uniform random bits when 2k = n) kept when they have
    exactly k bits: conditionally on its size every k-subset is equally likely, so accepted
    masks are uniform.  Duplicates (with earlier draws or inside the batch) are rejected
    keeping first occurrences in draw order: a uniform draw without replacement.
    """
    if not (0 < k < n <= 64):
        raise ValueError(f"need 0 < k < n <= 64, got k={k}, n={n}")
    if m > math.comb(n, k) - 1:
        raise ValueError(
            f"cannot draw {m} distinct partitions: only {math.comb(n, k) - 1} besides the observed one"
        )
    accept = math.comb(n, k) * (k / n) ** k * (1 - k / n) ** (n - k)
    seen = np.array([(1 << k) - 1], dtype=np.uint64)
    produced = 0
    while produced < m:
        want = min(batch, m - produced)
        size = int(want / accept * 1.2) + 64
        if 2 * k == n:
            cand = rng.integers(0, 1 << n, size=size, dtype=np.uint64, endpoint=False)
        else:
            bits = rng.random((size, n)) < k / n
            cand = (bits * _POW2[:n]).sum(axis=1, dtype=np.uint64)
        cand = cand[np.bitwise_count(cand) == k]
        cs = np.sort(cand)
        if cs.size > 1 and np.any(cs[1:] == cs[:-1]):  # repeats inside the batch: keep first draws
            order = np.argsort(cand, kind="stable")
            co = cand[order]
            cand = cand[np.sort(order[np.r_[True, co[1:] != co[:-1]]])]
            cs = np.sort(cand)
        pos = np.minimum(np.searchsorted(seen, cs), seen.size - 1)
        hit = seen[pos] == cs
        if hit.any():  # drawn in an earlier batch, or the observed partition
            cand = cand[~np.isin(cand, cs[hit])]
        new = cand[:want]
        if new.size:
            # merge of two sorted runs (timsort): all keys distinct by construction
            seen = np.sort(np.concatenate([seen, np.sort(new)]), kind="stable")
            produced += new.size
            yield new


def mask_sums(masks: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """sum of pool[i] over the set bits i of each 64-bit mask, with one 256-entry table per byte."""
    nb = (pool.size + 7) // 8
    padded = np.zeros(nb * 8)
    padded[: pool.size] = pool
    byte_bits = ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(np.float64)  # (256, 8)
    lut = padded.reshape(nb, 8) @ byte_bits.T  # (nb, 256): sum of the pool values of each byte pattern
    out = np.zeros(masks.size)
    for b in range(nb):
        out += lut[b, ((masks >> np.uint64(8 * b)) & np.uint64(255)).astype(np.intp)]
    return out


def sample_distinct_index_rows(
    n: int, k: int, m: int, rng: np.random.Generator, batch: int
) -> Iterator[np.ndarray]:
    """Like :func:`sample_distinct_masks` for any n (used when n > 64): index arrays of shape
    (rows, k) from the k smallest of n uniform keys per row, deduplicated on packed bytes."""
    if not 0 < k < n:
        raise ValueError(f"need 0 < k < n, got k={k}, n={n}")
    if m > math.comb(n, k) - 1:
        raise ValueError(
            f"cannot draw {m} distinct partitions: only {math.comb(n, k) - 1} besides the observed one"
        )
    observed = np.zeros(n, dtype=bool)
    observed[:k] = True
    seen = {np.packbits(observed).tobytes()}
    produced = 0
    while produced < m:
        size = min(batch, int((m - produced) * 1.05) + 8)
        idx = np.argpartition(rng.random((size, n)), k - 1, axis=1)[:, :k]
        mem = np.zeros((size, n), dtype=bool)
        np.put_along_axis(mem, idx, True, axis=1)
        packed = np.packbits(mem, axis=1)
        keep: list[int] = []
        for i in range(size):
            key = packed[i].tobytes()
            if key not in seen:
                seen.add(key)
                keep.append(i)
                if produced + len(keep) == m:
                    break
        if keep:
            produced += len(keep)
            yield idx[keep]


def sample_partitions(n: int, k: int, m: int, rng: np.random.Generator, batch: int) -> Iterator[np.ndarray]:
    """The distinct partitions :func:`sample_distinct_masks` (n <= 64) or
    :func:`sample_distinct_index_rows` draw (same rng, same batch), as boolean membership matrices
    (rows, n): True = the item goes to the first set.  For tests and benchmarks."""
    if n <= 64:
        for masks in sample_distinct_masks(n, k, m, rng, batch):
            yield ((masks[:, None] >> np.arange(n, dtype=np.uint64)) & np.uint64(1)).astype(bool)
    else:
        for idx in sample_distinct_index_rows(n, k, m, rng, batch):
            mem = np.zeros((idx.shape[0], n), dtype=bool)
            np.put_along_axis(mem, idx, True, axis=1)
            yield mem


# --------------------------------------------------------------------------- boolean rows, with replacement
def subset_masks(
    n: int, k: int, *, exact: bool, m: int, rng: np.random.Generator, batch: int = 4096
) -> Iterator[np.ndarray]:
    """Boolean rows (True = first group) of every k-subset of range(n) (``exact``, in
    :func:`combination_chunks` order) or of ``m`` uniformly random k-subsets drawn **with**
    replacement (the k smallest of n uniform keys per row), ``batch`` rows at a time."""
    if exact:
        for idx in combination_chunks(n, k, batch):
            mask = np.zeros((idx.shape[0], n), dtype=bool)
            np.put_along_axis(mask, idx, True, axis=1)
            yield mask
    else:
        done = 0
        while done < m:
            size = min(batch, m - done)
            order = np.argsort(rng.random((size, n)), axis=1)
            mask = np.zeros((size, n), dtype=bool)
            np.put_along_axis(mask, order[:, :k], True, axis=1)
            done += size
            yield mask


def sign_masks(
    n: int, *, exact: bool, m: int, rng: np.random.Generator, batch: int = 4096
) -> Iterator[np.ndarray]:
    """Boolean rows (True = swap the pair / flip the sign) of all 2**n patterns (``exact``, pattern
    ``c`` flipping the set bits of ``c``, the observed all-False first) or of ``m`` random ones
    (each pair swapped with probability 1/2), ``batch`` rows at a time."""
    if exact:
        for start in range(0, 2**n, batch):
            codes = np.arange(start, min(2**n, start + batch), dtype=np.int64)
            yield ((codes[:, None] >> np.arange(n, dtype=np.int64)) & 1).astype(bool)
    else:
        done = 0
        while done < m:
            size = min(batch, m - done)
            done += size
            yield rng.random((size, n)) < 0.5


def random_relabellings(labels: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
    """``m`` random permutations of ``labels``, one per row (shape (m, len(labels))); row ``i`` is
    what the ``i``-th of ``m`` successive ``rng.permutation(labels)`` calls would give."""
    return rng.permuted(np.tile(labels, (m, 1)), axis=1)


# --------------------------------------------------------------------------- counting and the p-value
def extreme_mask(
    stats: np.ndarray,
    observed: float,
    alternative: str,
    comparison: str = ">=",
    tol: float = 0.0,
    center: float = 0.0,
) -> np.ndarray:
    """Which of ``stats`` are at least as extreme as ``observed`` (ties within ``tol`` included with ``>=``).

    ``"greater"``: ``stats >= observed - tol``; ``"less"``: ``stats <= observed + tol``;
    ``"two-sided"``: distances from ``center``, ``|stats - center| >= |observed - center| - tol``
    (the ``>`` comparison moves the tolerance to the other side and drops the equality).
    """
    if alternative == "greater":
        return stats >= observed - tol if comparison == ">=" else stats > observed + tol
    if alternative == "less":
        return stats <= observed + tol if comparison == ">=" else stats < observed - tol
    a, o = np.abs(stats - center), abs(observed - center)
    return a >= o - tol if comparison == ">=" else a > o + tol


def pvalue_from_counts(
    n_extreme: int, n_evaluated: int, *, exact: bool, observed_counts: bool = True
) -> float:
    """``n_extreme / n_evaluated`` for an exact test (the observed relabelling among those
    evaluated), ``(n_extreme + 1) / (n_evaluated + 1)`` for a sampled one (Phipson & Smyth 2010;
    ``+ 0`` when ``observed_counts`` is false, the strict ``>`` comparison)."""
    if exact:
        return n_extreme / n_evaluated
    return (n_extreme + (1 if observed_counts else 0)) / (n_evaluated + 1)


def pvalue_from_tails(n_ge: int, n_le: int, n_evaluated: int, *, exact: bool, alternative: str) -> float:
    """p-value from the numbers of relabellings >= and <= the observed value (ties included):
    :func:`pvalue_from_counts` of the upper tail (``"greater"``), of the lower tail (``"less"``), or
    ``min(1, 2 min(p_greater, p_less))`` (``"two-sided"``, the doubled convention)."""
    p_ge = pvalue_from_counts(n_ge, n_evaluated, exact=exact)
    p_le = pvalue_from_counts(n_le, n_evaluated, exact=exact)
    return float({"greater": p_ge, "less": p_le, "two-sided": min(1.0, 2.0 * min(p_ge, p_le))}[alternative])


@dataclass
class NullTally:
    """Counts over the null statistics seen so far (:func:`tally_null` fills it batch by batch).

    With ``two_sided="centred"`` only ``n_extreme`` is counted (:func:`extreme_mask` with the
    alternative, comparison, tolerance and centre); with ``"doubled"`` the two tails ``n_ge``,
    ``n_le``.  ``total`` and ``total_sq`` are the running sums of the values and of their squares
    (one float sum per batch), for :attr:`mean` and :attr:`sd`.
    """

    observed: float
    alternative: Alternative
    comparison: Comparison = ">="
    tol: float = 0.0
    center: float = 0.0
    two_sided: TwoSided = "centred"
    finite_only: bool = True
    keep: bool = False
    n_extreme: int = 0
    n_ge: int = 0
    n_le: int = 0
    n_evaluated: int = 0
    total: float = 0.0
    total_sq: float = 0.0
    parts: list[np.ndarray] = field(default_factory=list)

    def add(self, stats: Any) -> None:
        """Count one batch of null statistics (non-finite ones left out with ``finite_only``)."""
        st = np.asarray(stats, dtype=np.float64)
        if self.finite_only and not np.all(np.isfinite(st)):
            st = st[np.isfinite(st)]
        if self.two_sided == "doubled":
            self.n_ge += int(
                np.count_nonzero(extreme_mask(st, self.observed, "greater", self.comparison, self.tol))
            )
            self.n_le += int(
                np.count_nonzero(extreme_mask(st, self.observed, "less", self.comparison, self.tol))
            )
        else:
            self.n_extreme += int(
                extreme_mask(
                    st, self.observed, self.alternative, self.comparison, self.tol, self.center
                ).sum()
            )
        self.n_evaluated += st.size
        self.total += float(st.sum())
        self.total_sq += float(np.square(st).sum())
        if self.keep:
            self.parts.append(st)

    def p_value(self, *, exact: bool) -> float:
        """The p-value (module docstring): exact ``e / N`` or sampled ``(e + 1) / (N + 1)``."""
        if self.two_sided == "doubled":
            return pvalue_from_tails(
                self.n_ge, self.n_le, self.n_evaluated, exact=exact, alternative=self.alternative
            )
        return float(
            pvalue_from_counts(
                self.n_extreme, self.n_evaluated, exact=exact, observed_counts=self.comparison == ">="
            )
        )

    @property
    def mean(self) -> float:
        """Mean of the null statistics."""
        return float(self.total / self.n_evaluated)

    @property
    def sd(self) -> float:
        """Population SD of the null statistics, from the running sums."""
        mean = self.total / self.n_evaluated
        return float(math.sqrt(max(self.total_sq / self.n_evaluated - mean**2, 0.0)))

    @property
    def null_distribution(self) -> np.ndarray:
        """Every null statistic counted, in order (only with ``keep=True``)."""
        return np.concatenate(self.parts)


def tally_null(
    batches: Iterable[Any],
    observed: float,
    *,
    alternative: Alternative,
    comparison: Comparison = ">=",
    tol: float = 0.0,
    center: float = 0.0,
    two_sided: TwoSided = "centred",
    finite_only: bool = True,
    keep: bool = False,
) -> NullTally:
    """Count the batches of null statistics against ``observed`` (:class:`NullTally`).

    ``batches`` yields arrays of null statistics, e.g. the statistic evaluated on the masks of
    :func:`subset_masks`.  ``finite_only`` leaves out non-finite values (an undefined statistic);
    ``keep`` stores the values (:attr:`NullTally.null_distribution`).
    """
    tally = NullTally(
        observed,
        alternative,
        comparison=comparison,
        tol=tol,
        center=center,
        two_sided=two_sided,
        finite_only=finite_only,
        keep=keep,
    )
    for stats in batches:
        tally.add(stats)
    return tally


# --------------------------------------------------------------------------- reporting
def permutation_details(perm: Mapping[str, Any]) -> dict[str, Any]:
    """The ``details`` entries every partition-tested result carries (WEAT, SEAT, LPBS), from the
    dict :func:`biaskit.metrics.weat.permutation_pvalue` returns: ``permutation_method``
    (``"exact"`` / ``"sampled"``), ``n_partitions_total``, ``n_partitions_evaluated``, ``n_extreme``,
    ``comparison``."""
    return {
        "permutation_method": perm["method"],
        "n_partitions_total": perm["n_partitions_total"],
        "n_partitions_evaluated": perm["n_partitions_evaluated"],
        "n_extreme": perm["n_extreme"],
        "comparison": perm["comparison"],
    }


def partitions_label(perm: Mapping[str, Any], what: str = "partitions") -> str:
    """``"exact, 70 of 70 partitions"``: the permutation part of a result's ``method``."""
    return f"{perm['method']}, {perm['n_partitions_evaluated']:,} of {perm['n_partitions_total']:,} {what}"
