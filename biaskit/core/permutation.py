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

**The driver.**  :func:`permutation_test` is the one entry point every permutation test of biaskit
goes through (WEAT, SEAT, LPBS, the WEFE-family metrics, the calibration's label test, the
recovery tests and any metric of a plug-in package): it takes the statistic as a function of a
batch of relabellings, one of the relabelling schemes :class:`Partitions`, :class:`SignFlips`,
:class:`LabelShuffles`, and returns one :class:`PermutationResult`, whose fields are the one key
vocabulary of every result (``p_value``, ``method``, ``n_partitions_total``,
``n_partitions_evaluated``, ``n_extreme``, ``comparison``, ``tie_tolerance``, ``observed``,
``null_mean``, ``null_sd``) and whose :meth:`PermutationResult.details` are the entries every
permutation-tested :class:`~biaskit.core.results.TestResult` carries.  Its one tie rule: values
within ``TIE_RTOL * (1 + scale)`` of the observed one are ties, ``scale`` being the size of the
terms the statistic adds up (WEAT: :math:`\sum |s(w, A, B)|`) or, by default, :math:`|T_0|`; with
``comparison=">="`` ties count as extreme, and an exact enumeration includes the observed
relabelling, which counts itself (:math:`p \ge 1/N`), as Caliskan et al.'s WEAT test does.  When
the caller gives no ``observed`` value the driver computes it with the same statistic on the
observed relabelling, in the same batch as the null values (an exact enumeration's first row), so
that a metric's observed value and its null values go through the same arithmetic.

The draws: :func:`combination_chunks` (every k-subset, in :func:`itertools.combinations` order),
:func:`sample_distinct_masks` / :func:`sample_distinct_index_rows` (distinct k-subsets without
replacement, never the observed one; WEAT, LPBS), :func:`subset_masks` (every k-subset, or k-subsets
drawn with replacement; the WEFE-family metrics), :func:`sign_masks` (sign-flip patterns) and
:func:`random_relabellings` (random permutations of a label vector).  :func:`tally_null` counts the
extreme values over batches of null statistics, with their mean and SD, and gives the p-value.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

from biaskit.core.results import Alternative

Comparison = Literal[">=", ">"]
ExactMode = Literal["auto"] | bool
TwoSided = Literal["centred", "doubled"]

logger = logging.getLogger(__name__)

__all__ = [
    "HARD_EXACT_LIMIT",
    "TIE_RTOL",
    "Comparison",
    "ExactMode",
    "LabelShuffles",
    "NullTally",
    "Partitions",
    "PermutationResult",
    "Relabellings",
    "SignFlips",
    "TwoSided",
    "check_settings",
    "choose_exact",
    "combination_chunks",
    "extreme_mask",
    "mask_sums",
    "partitions_label",
    "permutation_details",
    "permutation_test",
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
    """``ValueError`` for an unknown ``alternative``, ``comparison`` or ``exact``, or
    ``n_permutations < 1``."""
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

    A vector ``observed`` (one value per column: WEFAT's per-word tests) counts each column of the
    batches (shape (rows, columns)) against its own observed value and tolerance: the counts, sums,
    mean, SD and p-values are then arrays, and ``finite_only`` leaves out the rows with a
    non-finite value.
    """

    observed: Any
    alternative: Alternative
    comparison: Comparison = ">="
    tol: Any = 0.0
    center: Any = 0.0
    two_sided: TwoSided = "centred"
    finite_only: bool = True
    keep: bool = False
    n_extreme: Any = 0
    n_ge: Any = 0
    n_le: Any = 0
    n_evaluated: int = 0
    total: Any = 0.0
    total_sq: Any = 0.0
    parts: list[np.ndarray] = field(default_factory=list)

    @property
    def vector(self) -> bool:
        """Whether ``observed`` holds one value per column."""
        return np.ndim(self.observed) > 0

    def add(self, stats: Any) -> None:
        """Count one batch of null statistics (non-finite ones left out with ``finite_only``)."""
        st = np.asarray(stats, dtype=np.float64)
        if self.vector:
            self._add_columns(st)
            return
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

    def _add_columns(self, st: np.ndarray) -> None:
        st = st.reshape(st.shape[0], -1)
        if self.finite_only and not np.all(np.isfinite(st)):
            st = st[np.isfinite(st).all(axis=1)]
        obs = np.asarray(self.observed, dtype=np.float64)
        if self.two_sided == "doubled":
            self.n_ge = self.n_ge + np.count_nonzero(
                extreme_mask(st, obs, "greater", self.comparison, self.tol), axis=0
            )
            self.n_le = self.n_le + np.count_nonzero(
                extreme_mask(st, obs, "less", self.comparison, self.tol), axis=0
            )
        else:
            self.n_extreme = self.n_extreme + np.count_nonzero(
                extreme_mask(st, obs, self.alternative, self.comparison, self.tol, self.center), axis=0
            )
        self.n_evaluated += st.shape[0]
        self.total = self.total + st.sum(axis=0)
        self.total_sq = self.total_sq + np.square(st).sum(axis=0)
        if self.keep:
            self.parts.append(st)

    def p_value(self, *, exact: bool) -> Any:
        """The p-value (module docstring): exact ``e / N`` or sampled ``(e + 1) / (N + 1)``; an array of
        them for a vector ``observed``."""
        if self.vector:
            if self.two_sided == "doubled":
                p_ge = pvalue_from_counts(np.asarray(self.n_ge), self.n_evaluated, exact=exact)
                p_le = pvalue_from_counts(np.asarray(self.n_le), self.n_evaluated, exact=exact)
                return {"greater": p_ge, "less": p_le}.get(
                    self.alternative, np.minimum(1.0, 2.0 * np.minimum(p_ge, p_le))
                )
            return pvalue_from_counts(
                np.asarray(self.n_extreme),
                self.n_evaluated,
                exact=exact,
                observed_counts=self.comparison == ">=",
            )
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
    def extreme_count(self) -> Any:
        """The number of null values at least as extreme as the observed one, in the tail the p-value
        reads: ``n_extreme`` (centred), else ``n_ge`` (``"greater"``), ``n_le`` (``"less"``) or, for the
        doubled two-sided test, the smaller tail."""
        if self.two_sided != "doubled":
            return self.n_extreme
        if self.alternative == "greater":
            return self.n_ge
        if self.alternative == "less":
            return self.n_le
        return np.minimum(self.n_ge, self.n_le) if self.vector else min(self.n_ge, self.n_le)

    @property
    def mean(self) -> Any:
        """Mean of the null statistics."""
        if self.vector:
            return self.total / self.n_evaluated
        return float(self.total / self.n_evaluated)

    @property
    def sd(self) -> Any:
        """Population SD of the null statistics, from the running sums."""
        mean = self.total / self.n_evaluated
        if self.vector:
            return np.sqrt(np.maximum(self.total_sq / self.n_evaluated - mean**2, 0.0))
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


# --------------------------------------------------------------------------- relabelling schemes
class Relabellings(Protocol):
    """What :func:`permutation_test` relabels: ``n_total`` relabellings (the observed one among them),
    drawn by :meth:`batches` as boolean rows, the observed one given by :meth:`observed`.

    ``enumerable``: whether an exact test may enumerate them all (in an order that starts with the
    observed relabelling); ``replacement``: whether sampled draws may repeat (and include the
    observed relabelling), else they are distinct and never the observed one; ``what`` names them
    in a result's method (``"partitions"``, ``"sign patterns"``).
    """

    what: str
    replacement: bool
    enumerable: bool

    @property
    def n_total(self) -> int: ...

    def observed(self) -> np.ndarray: ...

    def batches(self, exact: bool, m: int, rng: np.random.Generator, batch: int) -> Iterator[np.ndarray]: ...


def _index_rows_to_mask(idx: np.ndarray, n: int) -> np.ndarray:
    mask = np.zeros((idx.shape[0], n), dtype=bool)
    np.put_along_axis(mask, idx, True, axis=1)
    return mask


@dataclass(frozen=True)
class Partitions:
    """The partitions of a pool of ``n`` items into a first group of ``k`` (the observed one: items
    0 to k - 1) and the rest: WEAT's X u Y, LPBS's A u B, RND's T1 u T2.

    Batches are boolean rows (True = the item goes to the first group).  Exact: every partition once,
    in :func:`itertools.combinations` order (the observed one first).  Sampled: ``m`` distinct
    partitions other than the observed one, drawn uniformly without replacement
    (:func:`sample_distinct_masks`, :func:`sample_distinct_index_rows`; WEAT, SEAT, LPBS), or with
    ``replacement=True`` ``m`` uniform partitions that may repeat (:func:`subset_masks`; the
    WEFE-family metrics, as they always drew them).
    """

    n: int
    k: int
    replacement: bool = False
    what: str = "partitions"
    enumerable: bool = True

    def __post_init__(self) -> None:
        if not 0 < self.k < self.n:
            raise ValueError(f"a partition needs 0 < k < n, got k={self.k}, n={self.n}")

    @property
    def n_total(self) -> int:
        return math.comb(self.n, self.k)

    def observed(self) -> np.ndarray:
        row = np.zeros((1, self.n), dtype=bool)
        row[0, : self.k] = True
        return row

    def batches(self, exact: bool, m: int, rng: np.random.Generator, batch: int) -> Iterator[np.ndarray]:
        n, k = self.n, self.k
        if exact:
            for idx in combination_chunks(n, k, batch):
                yield _index_rows_to_mask(idx, n)
        elif self.replacement:
            yield from subset_masks(n, k, exact=False, m=m, rng=rng, batch=batch)
        else:
            yield from sample_partitions(n, k, m, rng, batch)

    def sums(
        self, values: np.ndarray, exact: bool, m: int, rng: np.random.Generator, batch: int
    ) -> Iterator[np.ndarray]:
        """The same relabellings as :meth:`batches` (same rng, same batch), each given as the sum of
        ``values`` over its first group: WEAT's fast path (gather-sums of index rows, byte tables of
        64-bit masks), for a statistic that is a function of that sum."""
        n, k = self.n, self.k
        if exact:
            for idx in combination_chunks(n, k, batch):
                yield values[idx].sum(axis=1)
        elif self.replacement:
            for mask in subset_masks(n, k, exact=False, m=m, rng=rng, batch=batch):
                yield mask.astype(np.float64) @ values
        elif n <= 64:
            for masks in sample_distinct_masks(n, k, m, rng, batch):
                yield mask_sums(masks, values)
        else:
            for idx in sample_distinct_index_rows(n, k, m, rng, batch):
                yield values[idx].sum(axis=1)

    def observed_sum(self, values: np.ndarray) -> np.ndarray:
        """The observed partition's sum of ``values`` (for :meth:`sums`), as a one-element array."""
        return np.array([values[: self.k].sum()])


@dataclass(frozen=True)
class SignFlips:
    """The ``2**n`` sign patterns of ``n`` paired items (True = swap the pair: RIPA); the observed one
    flips nothing.  Exact: every pattern once, the observed first; sampled: ``m`` random patterns
    (each pair swapped with probability 1/2; they may repeat)."""

    n: int
    what: str = "sign patterns"
    replacement: bool = True
    enumerable: bool = True

    @property
    def n_total(self) -> int:
        return 2**self.n

    def observed(self) -> np.ndarray:
        return np.zeros((1, self.n), dtype=bool)

    def batches(self, exact: bool, m: int, rng: np.random.Generator, batch: int) -> Iterator[np.ndarray]:
        yield from sign_masks(self.n, exact=exact, m=m, rng=rng, batch=batch)


@dataclass(frozen=True, eq=False)
class LabelShuffles:
    """Random permutations of a label vector (the calibration's relabelled targets, the recovery tests'
    labels): batches are label rows (:func:`random_relabellings`, one batch of ``m`` rows); they may
    repeat, and they are not enumerated (``exact=True`` is refused)."""

    labels: np.ndarray
    what: str = "relabellings"
    replacement: bool = True
    enumerable: bool = False

    @property
    def n_total(self) -> int:
        """The number of distinct relabellings: the multinomial coefficient of the label counts."""
        _, counts = np.unique(np.asarray(self.labels), return_counts=True)
        total = math.factorial(int(counts.sum()))
        for c in counts:
            total //= math.factorial(int(c))
        return total

    def observed(self) -> np.ndarray:
        return np.asarray(self.labels)[None, :]

    def batches(self, exact: bool, m: int, rng: np.random.Generator, batch: int) -> Iterator[np.ndarray]:
        yield random_relabellings(np.asarray(self.labels), m, rng)


# --------------------------------------------------------------------------- the driver
_FIELDS = (
    "p_value",
    "method",
    "n_partitions_total",
    "n_partitions_evaluated",
    "n_extreme",
    "comparison",
    "tie_tolerance",
    "observed",
    "null_mean",
    "null_sd",
    "null_distribution",
)


@dataclass(frozen=True, eq=False)
class PermutationResult:
    """The result of :func:`permutation_test`, the one result type of every permutation test.

    ``p_value``; ``method`` (``"exact"`` or ``"sampled"``); ``n_partitions_total`` (relabellings
    there are) and ``n_partitions_evaluated`` (counted); ``n_extreme`` (at least as extreme as the
    observed one, in the tail the p-value reads); ``comparison``; ``tie_tolerance``; ``observed``;
    ``null_mean`` / ``null_sd`` of the null values; ``null_distribution`` (with ``keep_null``).
    With a vector statistic (one test per column) the p-values, counts, tolerances and null moments
    are arrays.  It reads like the dict older code expects (``perm["p_value"]``, the same keys).
    """

    p_value: Any
    method: str
    n_partitions_total: int
    n_partitions_evaluated: int
    n_extreme: Any
    comparison: str
    tie_tolerance: Any
    observed: Any
    null_mean: Any
    null_sd: Any
    alternative: str = "greater"
    two_sided: str = "centred"
    what: str = "partitions"
    null_distribution: np.ndarray | None = None

    def __getitem__(self, key: str) -> Any:
        if key not in _FIELDS or (key == "null_distribution" and self.null_distribution is None):
            raise KeyError(key)
        return getattr(self, key)

    def __contains__(self, key: object) -> bool:
        return key in _FIELDS and (key != "null_distribution" or self.null_distribution is not None)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def keys(self) -> list[str]:
        return [k for k in _FIELDS if k in self]

    def as_dict(self) -> dict[str, Any]:
        """The fields as a dict (the key vocabulary)."""
        return {k: self[k] for k in self.keys()}

    @property
    def exact(self) -> bool:
        return self.method == "exact"

    def details(self) -> dict[str, Any]:
        """The ``details`` entries of a permutation-tested :class:`~biaskit.core.results.TestResult`:
        ``permutation_method``, ``n_partitions_total``, ``n_partitions_evaluated``, ``n_extreme``,
        ``comparison``, ``null_mean``, ``null_sd``."""
        return {
            **permutation_details(self),
            "null_mean": self.null_mean,
            "null_sd": self.null_sd,
        }

    def label(self, what: str | None = None) -> str:
        """``"exact, 70 of 70 partitions"``: the permutation part of a result's ``method``."""
        return partitions_label(self, self.what if what is None else what)


def choose_exact(
    relabellings: Relabellings, exact: ExactMode, exact_threshold: int, n_permutations: int
) -> bool:
    """Whether :func:`permutation_test` enumerates every relabelling.

    ``exact="auto"``: when there are at most ``exact_threshold``, or when distinct draws would need
    all of them (``n_permutations >= n_total - 1`` without replacement); ``True``: always (``ValueError``
    beyond :data:`HARD_EXACT_LIMIT`, or for relabellings that are not enumerated); ``False``: never,
    unless distinct draws would need all of them (logged).
    """
    n_total = relabellings.n_total
    what = relabellings.what
    covers = not relabellings.replacement and n_permutations >= n_total - 1
    if not relabellings.enumerable:
        if exact is True:
            raise ValueError(f"the {what} are not enumerated: use exact='auto' or exact=False")
        return False
    if exact == "auto":
        return n_total <= exact_threshold or covers
    if exact is True:
        if n_total > HARD_EXACT_LIMIT:
            raise ValueError(
                f"exact=True would enumerate {n_total:.3g} {what} (limit {HARD_EXACT_LIMIT:.0e}); "
                "use exact='auto' or exact=False with n_permutations"
            )
        return True
    if covers:
        logger.info(
            "n_permutations=%d covers all %d %s; computing the exact p-value instead",
            n_permutations,
            n_total,
            what,
        )
    return covers


def permutation_test(
    statistic: Callable[[np.ndarray], Any],
    relabellings: Relabellings,
    *,
    alternative: Alternative = "greater",
    n_permutations: int = 10_000,
    exact: ExactMode = "auto",
    exact_threshold: int = 100_000,
    comparison: Comparison = ">=",
    random_state: int | np.random.Generator | None = 0,
    observed: Any = None,
    scale: Any = None,
    center: float | Literal["null_mean"] = 0.0,
    two_sided: TwoSided = "centred",
    finite_only: bool = True,
    keep_null: bool = False,
    batch_size: int = 4096,
    sums_of: np.ndarray | None = None,
) -> PermutationResult:
    r"""The permutation test of a statistic: the one driver of biaskit (module docstring).

    ``statistic(batch)`` maps a batch of relabellings (boolean rows of :class:`Partitions` /
    :class:`SignFlips`, label rows of :class:`LabelShuffles`; with ``sums_of``, the sums of
    ``sums_of`` over each partition's first group, :meth:`Partitions.sums`) to one value per row, or
    to one row of values per relabelling for several tests at once (then ``observed`` is a vector).

    * exact or sampled: :func:`choose_exact` (``exact``, ``exact_threshold``, ``n_permutations``);
      sampled draws come from ``random_state`` (a seed or a :class:`numpy.random.Generator`);
    * ``observed``: the observed value; ``None`` computes it with ``statistic`` on the observed
      relabelling, in the same batch as the first null values (for an exact enumeration, its first
      row), so that both go through the same arithmetic;
    * ties (the one rule): within ``TIE_RTOL * (1 + scale)`` of ``observed``; ``scale`` defaults to
      ``|observed|``; give the size of the terms the statistic adds up when it is larger (WEAT:
      :math:`\sum_w |s(w, A, B)|`);
    * ``alternative`` / ``comparison`` / ``two_sided`` / ``center``: :func:`extreme_mask` and
      :class:`NullTally`; ``center="null_mean"`` centres the two-sided test on the mean of the null
      values (the calibration's label test);
    * p-value: exact ``e / N`` (the observed relabelling among the ``N``), sampled
      ``(e + 1) / (N + 1)`` (Phipson & Smyth 2010; ``e / (N + 1)`` with ``comparison=">"``);
    * ``finite_only`` leaves out relabellings whose statistic is not finite; ``keep_null`` keeps the
      null values in the result.

    ``ValueError`` for bad settings (:func:`check_settings`) or when no relabelling gives a finite value.
    """
    check_settings(alternative, exact, n_permutations, comparison)
    m = int(n_permutations)
    use_exact = choose_exact(relabellings, exact, exact_threshold, m)
    rng = (
        random_state if isinstance(random_state, np.random.Generator) else np.random.default_rng(random_state)
    )
    if sums_of is not None:
        if not isinstance(relabellings, Partitions):
            raise TypeError("sums_of needs Partitions relabellings")
        values = np.asarray(sums_of, dtype=np.float64)
        source: Iterator[np.ndarray] = relabellings.sums(values, use_exact, m, rng, batch_size)
        observed_input = relabellings.observed_sum(values)
    else:
        source = relabellings.batches(use_exact, m, rng, batch_size)
        observed_input = relabellings.observed()
    stats: Iterator[np.ndarray] = (np.asarray(statistic(b), dtype=np.float64) for b in source)
    if observed is None:
        if use_exact:  # the enumeration starts with the observed relabelling: it counts itself
            first = next(stats)
            observed_value = first[0]
            stats = itertools.chain([first], stats)
        else:
            head = next(source, None)
            batch0 = observed_input if head is None else np.concatenate([observed_input, head])
            first = np.asarray(statistic(batch0), dtype=np.float64)
            observed_value = first[0]
            stats = itertools.chain([first[1:]], stats)
    else:
        observed_value = observed
    if np.ndim(observed_value) == 0:
        observed_value = float(observed_value)
        tol: Any = TIE_RTOL * (1.0 + (abs(observed_value) if scale is None else float(scale)))
    else:
        observed_value = np.asarray(observed_value, dtype=np.float64)
        tol = TIE_RTOL * (
            1.0 + (np.abs(observed_value) if scale is None else np.asarray(scale, dtype=np.float64))
        )
    centre: Any = center
    if isinstance(center, str):
        if center != "null_mean":
            raise ValueError(f"center must be a number or 'null_mean', got {center!r}")
        parts = list(stats)
        centre = np.concatenate(parts).mean(axis=0)
        stats = iter(parts)
    tally = tally_null(
        stats,
        observed_value,
        alternative=alternative,
        comparison=comparison,
        tol=tol,
        center=centre,
        two_sided=two_sided,
        finite_only=finite_only,
        keep=keep_null,
    )
    if tally.n_evaluated == 0:
        raise ValueError(f"no {relabellings.what} gave a finite statistic")
    return PermutationResult(
        p_value=tally.p_value(exact=use_exact),
        method="exact" if use_exact else "sampled",
        n_partitions_total=int(relabellings.n_total),
        n_partitions_evaluated=int(tally.n_evaluated),
        n_extreme=tally.extreme_count,
        comparison=comparison,
        tie_tolerance=tol,
        observed=observed_value,
        null_mean=tally.mean,
        null_sd=tally.sd,
        alternative=alternative,
        two_sided=two_sided,
        what=relabellings.what,
        null_distribution=tally.null_distribution if keep_null else None,
    )


# --------------------------------------------------------------------------- reporting
def permutation_details(perm: Mapping[str, Any] | PermutationResult) -> dict[str, Any]:
    """The ``details`` entries every partition-tested result carries (WEAT, SEAT, LPBS), from a
    :class:`PermutationResult` (or a dict with its keys): ``permutation_method``
    (``"exact"`` / ``"sampled"``), ``n_partitions_total``, ``n_partitions_evaluated``, ``n_extreme``,
    ``comparison``."""
    return {
        "permutation_method": perm["method"],
        "n_partitions_total": perm["n_partitions_total"],
        "n_partitions_evaluated": perm["n_partitions_evaluated"],
        "n_extreme": perm["n_extreme"],
        "comparison": perm["comparison"],
    }


def partitions_label(perm: Mapping[str, Any] | PermutationResult, what: str = "partitions") -> str:
    """``"exact, 70 of 70 partitions"``: the permutation part of a result's ``method``."""
    return f"{perm['method']}, {perm['n_partitions_evaluated']:,} of {perm['n_partitions_total']:,} {what}"
