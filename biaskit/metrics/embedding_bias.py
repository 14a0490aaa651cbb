r"""WEFE's family of static-embedding bias metrics, with the tests WEFE does not give.

WEFE (Badilla, Bravo-Marquez & Pérez 2020, github dccuchile/wefe) offers, beside WEAT
(:mod:`biaskit.metrics.weat`), five query metrics: RND, RNSB, ECT, MAC and RIPA.  This module
implements them independently (``tests/metrics/test_embedding_bias.py`` checks every value against WEFE
1.0.1) together with Caliskan et al.'s per-word WEFAT, and adds what WEFE lacks: a seeded,
vectorised **permutation p-value** (or, where no permutation null exists, a **bootstrap
confidence interval**).  Seed 003 (Sayenju 2023) chapter 2 reviews these measures (section 2.3,
Table 2.2, lists WEFAT and ECT among the evaluation techniques; section 2.4.1, Table 2.9, defines
WEFAT, eq. 2.3, and MAC, eq. 2.4-2.5); seed 000 (Maddalozzo 2023) chapter 2 sets the rule the
tests follow: "statistical tests are considered more important than the metrics".

Every metric is a frozen dataclass with ``run(target_sets, attribute_sets, vectors, *,
target_names=None, attribute_names=None)`` and ``run_query(query, vectors)`` (any object with
WEFE's ``Query`` attributes ``target_sets``, ``attribute_sets``, ``target_sets_names``,
``attribute_sets_names``), and returns one :class:`~biaskit.core.results.TestResult`
(``estimate`` = ``statistic`` = the metric's value, per-word values in ``details``).

======  ==================  ===========================================  ===========================
metric  sets (targets,      value                                        added inference
        attributes)
======  ==================  ===========================================  ===========================
RND     2, 1                mean_a ‖a − t̄₁‖ − ‖a − t̄₂‖                  re-split T₁ ∪ T₂; bootstrap CI
RNSB    ≥ 2, 2              KL(normalised P(negative | t) ‖ uniform)     re-split A₁ ∪ A₂ (retrain)
ECT     2, 1                Spearman ρ(cos(t̄₁, a), cos(t̄₂, a))          re-split T₁ ∪ T₂ (one-sided)
MAC     ≥ 1, ≥ 1            mean_{t, j} mean_{a∈A_j} (1 − cos(t, a))     bootstrap CI over t
RIPA    2 (paired), 1       mean_a mean_i a · unit(x_i − y_i)            swap within pairs (signs)
WEFAT   ≥ 1 (pooled), 2     per word s(w,A,B) / sd_{x∈A∪B} cos(w, x)     re-split A ∪ B, per word
======  ==================  ===========================================  ===========================

Input checks (all metrics): the number of target and attribute sets must match the metric's
template (``ValueError``); an empty set raises ``ValueError``; words are de-duplicated; words
without a vector are dropped with a logged WARNING that names and counts them
(:func:`biaskit.data.wordlists.resolve_words`; ``oov_policy="raise"`` refuses them instead), and a set
left empty raises ``ValueError``.  Vectors are used as stored (``normalize=False``, WEFE's
default) unless ``normalize=True`` (RND, ECT, RIPA, RNSB); MAC and WEFAT use cosines only.

Permutation tests.  With ``exact="auto"`` all re-splits (or sign patterns) are enumerated when
there are at most ``exact_threshold`` of them, and the p-value is the share of them (the observed
one included) at least as extreme as the observed value; otherwise ``n_permutations`` random
re-splits are drawn with ``random_state`` and p = (1 + #extreme) / (1 + n_permutations).  The
two-sided p is ``min(1, 2 min(p_greater, p_less))``.  Values within ``1e-9 (1 + |observed|)``
of the observed one count as ties (as extreme).  Re-splits are evaluated in batches with
matrix products (no Python loop per re-split), except RNSB, which refits its classifier.  Every
test is :func:`biaskit.core.permutation.permutation_test` (the driver WEAT, LPBS and the
calibration study share), with its :class:`~biaskit.core.permutation.PermutationResult` entries in
``details`` (``permutation_method``, ``n_partitions_total``, ``n_partitions_evaluated``,
``n_extreme``, ``comparison``, ``null_mean``, ``null_sd``); unlike WEAT's, the re-splits here are
drawn with replacement (``Partitions(..., replacement=True)``).  ``n_permutations=0`` runs no test (RND, ECT,
RIPA, RNSB): the result has the estimate, its per-word details and its bootstrap interval, and ``p_value``
None, as WEFE's metrics give it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
from scipy import stats as sps

from biaskit.core.linalg import unit_rows
from biaskit.core.permutation import (
    ExactMode,
    Partitions,
    PermutationResult,
    Relabellings,
    SignFlips,
    permutation_test,
)
from biaskit.core.registry import GridCall, GridSupport, Option, register_metric
from biaskit.core.results import Alternative, TestResult
from biaskit.core.stats import bootstrap_ci
from biaskit.data.wordlists import OOVPolicy, resolve_words, vector_vocabulary
from biaskit.metrics.weat import dedupe_words, unit_word_rows, word_rows

logger = logging.getLogger(__name__)

Distance = Literal["norm", "cos"]

__all__ = ["ECT", "MAC", "RIPA", "RND", "RNSB", "WEFAT", "Distance"]

_BATCH = 4096  # masks per batch


# --------------------------------------------------------------------------- inputs
@dataclass(frozen=True)
class _Sets:
    """Resolved word sets: words kept per set, their names, and the words dropped per set."""

    words: list[list[str]]
    names: list[str]
    oov: dict[str, list[str]]


def _sets_details(T: _Sets, A: _Sets) -> dict[str, dict[str, Any]]:
    """The ``details`` entries every metric reports: words kept, set names and dropped words."""
    return {
        "words": {"targets": T.words, "attributes": A.words},
        "names": {"targets": T.names, "attributes": A.names},
        "oov": {"targets": T.oov, "attributes": A.oov},
    }


def _resolve_sets(
    sets: Any,
    names: Sequence[str] | None,
    role: str,
    expected: int | tuple[int, None],
    vocab: Any,
    policy: OOVPolicy,
    metric: str,
) -> _Sets:
    """Check the number of sets (``expected`` = exact count, or ``(minimum, None)``), that each
    is a non-empty list of words, then apply the OOV policy (a set left empty raises)."""
    if isinstance(sets, str) or not isinstance(sets, Sequence):
        raise TypeError(f"{metric}: {role} sets must be a list of word lists, got {type(sets).__name__}")
    n = len(sets)
    if isinstance(expected, int):
        if n != expected:
            raise ValueError(f"{metric} needs exactly {expected} {role} set(s), got {n}")
    elif n < expected[0]:
        raise ValueError(f"{metric} needs at least {expected[0]} {role} set(s), got {n}")
    if names is None:
        names = [f"{role} {i + 1}" for i in range(n)]
    names = [str(x) for x in names]
    if len(names) != n:
        raise ValueError(f"{metric}: {len(names)} {role} names for {n} {role} sets")
    words: list[list[str]] = []
    oov: dict[str, list[str]] = {}
    for ws, nm in zip(sets, names, strict=True):
        label = f"{metric} {role} set {nm!r}"
        if isinstance(ws, str):
            raise TypeError(f"{label}: expected a list of words, got the string {ws!r}")
        if len(ws) == 0:
            raise ValueError(f"{label} is empty")
        r = resolve_words(dedupe_words(list(ws), label), vocab, name=label, policy=policy, min_size=1)
        words.append(list(r.kept))
        oov[nm] = list(r.missing)
    return _Sets(words, names, oov)


def _matrix(vectors: Any, words: Sequence[str], name: str, normalize: bool) -> np.ndarray:
    if normalize:
        return unit_word_rows(vectors, words, name)
    mat = word_rows(vectors, words)
    if not np.all(np.isfinite(mat)):
        raise ValueError(f"{name}: some vectors contain NaN or infinite values")
    return mat


def _query_parts(query: Any) -> tuple[Any, Any, Any, Any]:
    try:
        return (
            query.target_sets,
            query.attribute_sets,
            getattr(query, "target_sets_names", None),
            getattr(query, "attribute_sets_names", None),
        )
    except AttributeError as exc:
        raise TypeError("query needs the attributes target_sets and attribute_sets (a WEFE Query)") from exc


# --------------------------------------------------------------------------- permutation test
def _with_test(name: str, perm: PermutationResult | None, what: str, test: str = "permutation test") -> str:
    """``TestResult.method``: the metric and its test, or that no test ran (``n_permutations=0``)."""
    return f"{name}, {test} ({perm.label(what)})" if perm else f"{name}, no test (n_permutations=0)"


def _perm_details(perm: PermutationResult | None) -> dict[str, Any]:
    """The permutation entries of a result's ``details`` (:meth:`PermutationResult.details`); none without a
    test."""
    return perm.details() if perm else {}


def _bootstrap(values: np.ndarray, n_bootstrap: int, confidence: float, seed: Any) -> tuple[Any, Any]:
    """Percentile bootstrap CI of the mean of ``values`` (None when disabled or < 2 values)."""
    if n_bootstrap <= 0 or values.size < 2 or np.ptp(values) == 0:
        return None, None
    r = bootstrap_ci(
        values, confidence=confidence, n_resamples=int(n_bootstrap), method="percentile", random_state=seed
    )
    return r.ci, confidence


def _target_resplits(n: int, k: int) -> Partitions:
    """The re-splits of T1 u T2 (the first ``k`` of ``n`` target words in T1), drawn with replacement."""
    return Partitions(n, k, replacement=True, what="re-splits of the target words")


def _subset_means(mask: np.ndarray, pool: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per re-split, the mean rows of the first and second group: (P, d) each."""
    m = mask.astype(np.float64)
    k = m.sum(axis=1, keepdims=True)
    return (m @ pool) / k, ((1.0 - m) @ pool) / (pool.shape[0] - k)


# --------------------------------------------------------------------------- shared settings
@dataclass(frozen=True)
class _PermutationSettings:
    n_permutations: int = 10_000
    exact: ExactMode = "auto"
    exact_threshold: int = 20_000
    random_state: int | None = 0
    oov_policy: OOVPolicy = "drop"

    #: how many target and attribute sets the metric takes: a count, or ``(minimum, None)``
    TARGET_SETS: ClassVar[int | tuple[int, None]] = 2
    ATTRIBUTE_SETS: ClassVar[int | tuple[int, None]] = 1

    def _sets(
        self,
        target_sets: Sequence[Sequence[str]],
        attribute_sets: Sequence[Sequence[str]],
        vectors: Any,
        target_names: Sequence[str] | None,
        attribute_names: Sequence[str] | None,
    ) -> tuple[_Sets, _Sets]:
        """The target and attribute sets checked against :attr:`TARGET_SETS` / :attr:`ATTRIBUTE_SETS`, named,
        and filtered by the OOV policy in the vocabulary of ``vectors`` (:func:`_resolve_sets`)."""
        vocab = vector_vocabulary(vectors)
        metric = type(self).__name__
        return (
            _resolve_sets(
                target_sets, target_names, "target", self.TARGET_SETS, vocab, self.oov_policy, metric
            ),
            _resolve_sets(
                attribute_sets,
                attribute_names,
                "attribute",
                self.ATTRIBUTE_SETS,
                vocab,
                self.oov_policy,
                metric,
            ),
        )

    @staticmethod
    def _result(
        value: float,
        perm: PermutationResult | None,
        T: _Sets,
        A: _Sets,
        *,
        details: dict[str, Any],
        p_value: float | None = None,
        **fields: Any,
    ) -> TestResult:
        """The metric's :class:`TestResult`: ``value`` as statistic and estimate, the permutation test's p
        (unless ``p_value`` is given), and ``details`` between the permutation entries and the sets'."""
        return TestResult(
            statistic=value,
            estimate=value,
            p_value=p_value if p_value is not None else (perm.p_value if perm else None),
            details={**_perm_details(perm), **details, **_sets_details(T, A)},
            **fields,
        )

    def run_query(self, query: Any, vectors: Any) -> TestResult:
        """:meth:`run` on a WEFE-like query (``target_sets``, ``attribute_sets`` and their names)."""
        t, a, tn, an = _query_parts(query)
        return self.run(t, a, vectors, target_names=tn, attribute_names=an)  # type: ignore[attr-defined]

    def __call__(self, *args: Any, **kwargs: Any) -> TestResult:
        return self.run(*args, **kwargs)  # type: ignore[attr-defined]

    def _perm(
        self,
        observed: float,
        statistic: Callable[[np.ndarray], np.ndarray],
        relabellings: Relabellings,
        alternative: Alternative,
        *,
        exact_threshold: int | None = None,
    ) -> PermutationResult | None:
        """The permutation test of :func:`biaskit.core.permutation.permutation_test` (two-sided:
        ``min(1, 2 min(p_greater, p_less))``); ``None`` (no test) when ``n_permutations == 0``."""
        if self.n_permutations == 0:
            return None
        return permutation_test(
            statistic,
            relabellings,
            observed=observed,
            alternative=alternative,
            two_sided="doubled",
            exact=self.exact,
            exact_threshold=self.exact_threshold if exact_threshold is None else exact_threshold,
            n_permutations=self.n_permutations,
            random_state=self.random_state,
            batch_size=_BATCH,
        )


# --------------------------------------------------------------------------- RND
@dataclass(frozen=True)
class RND(_PermutationSettings):
    r"""Relative Norm Distance (Garg, Schiebinger, Jurafsky & Zou 2018, PNAS 115:E3635).

    Two target sets T₁, T₂ (e.g. female and male words) and one attribute set A (neutral words,
    e.g. occupations)::

        RND = (1/|A|) Σ_{a∈A} ( dist(a, t̄₁) − dist(a, t̄₂) ),   t̄_i = mean of the vectors of T_i

    with ``dist`` the Euclidean norm (``distance="norm"``).  > 0: the attribute words lie closer
    to T₂ than to T₁.  As in WEFE, the mean (not Garg et al.'s sum) is reported, the vectors are
    used as stored unless ``normalize=True`` (Garg et al. normalise them), and
    ``distance="cos"`` replaces dist by the *cosine similarity* (so there > 0 means closer to
    T₁).  Reviewed with WEFE's metrics in seed 003 chapter 2 (section 2.4).

    Inference (not in WEFE): a permutation test re-splitting T₁ ∪ T₂ into groups of the observed
    sizes (H0: the two target groups are exchangeable with respect to A), two-sided by default,
    and a percentile bootstrap CI of the mean over the attribute words (``n_bootstrap``; 0 = off).

    Examples
    --------
    >>> from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, TOY_X, toy_vectors
    >>> result = RND(n_permutations=200).run([list(TOY_MALE), list(TOY_FEMALE)], [list(TOY_X)], toy_vectors())
    >>> result.n, round(result.statistic, 3), round(result.p_value, 4)
    (6, -6.231, 0.0002)
    """

    distance: Distance = "norm"
    normalize: bool = False
    alternative: Alternative = "two-sided"
    n_bootstrap: int = 2000
    confidence: float = 0.95

    def run(
        self,
        target_sets: Sequence[Sequence[str]],
        attribute_sets: Sequence[Sequence[str]],
        vectors: Any,
        *,
        target_names: Sequence[str] | None = None,
        attribute_names: Sequence[str] | None = None,
    ) -> TestResult:
        if self.distance not in ("norm", "cos"):
            raise ValueError(f"distance must be 'norm' or 'cos', got {self.distance!r}")
        T, A = self._sets(target_sets, attribute_sets, vectors, target_names, attribute_names)
        t1 = _matrix(vectors, T.words[0], "RND targets", self.normalize)
        t2 = _matrix(vectors, T.words[1], "RND targets", self.normalize)
        a = _matrix(vectors, A.words[0], "RND attributes", self.normalize)
        per_word = self._dist(a, t1.mean(axis=0)) - self._dist(a, t2.mean(axis=0))
        value = float(per_word.mean())

        pool = np.vstack([t1, t2])
        a_sq = np.einsum("ij,ij->i", a, a)

        def null_stats(mask: np.ndarray) -> np.ndarray:
            m1, m2 = _subset_means(mask, pool)
            return (self._dist_batch(a, a_sq, m1) - self._dist_batch(a, a_sq, m2)).mean(axis=1)

        perm = self._perm(value, null_stats, _target_resplits(pool.shape[0], t1.shape[0]), self.alternative)
        ci, conf = _bootstrap(per_word, self.n_bootstrap, self.confidence, self.random_state)
        n1, n2 = T.names
        return self._result(
            value,
            perm,
            T,
            A,
            method=_with_test(f"RND ({self.distance})", perm, "re-splits of the targets"),
            alternative=self.alternative,
            n=len(A.words[0]),
            ci=ci,
            confidence=conf,
            null_value=0.0,
            h0=f"the words of '{A.names[0]}' are as close to '{n1}' as to '{n2}'",
            h1=f"the words of '{A.names[0]}' are closer to one of '{n1}', '{n2}'",
            details={
                "distance": self.distance,
                "normalize": self.normalize,
                "per_word": dict(zip(A.words[0], per_word.tolist(), strict=True)),
            },
        )

    def _dist(self, a: np.ndarray, c: np.ndarray) -> np.ndarray:
        if self.distance == "norm":
            return np.linalg.norm(a - c, axis=1)
        return (a @ c) / (np.linalg.norm(a, axis=1) * np.linalg.norm(c))

    def _dist_batch(self, a: np.ndarray, a_sq: np.ndarray, m: np.ndarray) -> np.ndarray:
        """dist(a, m_p) for every re-split p (rows of ``m``) and attribute a: shape (P, |A|)."""
        dots = m @ a.T
        m_sq = np.einsum("ij,ij->i", m, m)[:, None]
        if self.distance == "norm":
            return np.sqrt(np.maximum(a_sq[None, :] - 2.0 * dots + m_sq, 0.0))
        return dots / (np.sqrt(a_sq)[None, :] * np.sqrt(m_sq))


# --------------------------------------------------------------------------- ECT
@dataclass(frozen=True)
class ECT(_PermutationSettings):
    r"""Embedding Coherence Test (Dev & Phillips 2019, AISTATS, "Attenuating bias in word vectors").

    Two target sets T₁, T₂ (e.g. male and female names) and one attribute set A (e.g.
    professions)::

        ECT = Spearman ρ( [cos(t̄₁, a)]_{a∈A}, [cos(t̄₂, a)]_{a∈A} )

    ρ = 1: both groups rank the attribute words the same way (no bias); lower values mean the two
    groups' similarity profiles disagree.  The target means t̄_i are taken over the vectors as
    stored (WEFE's default) or over unit vectors (``normalize=True``).  Listed among the evaluation techniques
    of seed 003 chapter 2 (section 2.3, Table 2.2).  Needs at least 3 attribute words.

    Inference (not in WEFE): a permutation test re-splitting T₁ ∪ T₂ into groups of the observed
    sizes; by default one-sided ``alternative="less"``: H0 is that the observed ρ is no lower
    than that of random re-groupings of the target words (bias = lower coherence).

    Examples
    --------
    >>> from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, TOY_X, toy_vectors
    >>> result = ECT(n_permutations=200).run([list(TOY_MALE), list(TOY_FEMALE)], [list(TOY_X)], toy_vectors())
    >>> result.n, round(result.statistic, 3), round(result.p_value, 4)
    (6, -0.143, 0.0078)
    """

    normalize: bool = False
    alternative: Alternative = "less"

    def run(
        self,
        target_sets: Sequence[Sequence[str]],
        attribute_sets: Sequence[Sequence[str]],
        vectors: Any,
        *,
        target_names: Sequence[str] | None = None,
        attribute_names: Sequence[str] | None = None,
    ) -> TestResult:
        T, A = self._sets(target_sets, attribute_sets, vectors, target_names, attribute_names)
        if len(A.words[0]) < 3:
            raise ValueError(
                f"ECT needs at least 3 attribute words for a rank correlation, got {len(A.words[0])}"
            )
        t1 = _matrix(vectors, T.words[0], "ECT targets", self.normalize)
        t2 = _matrix(vectors, T.words[1], "ECT targets", self.normalize)
        a = unit_word_rows(vectors, A.words[0], "ECT attributes")
        c1 = a @ (unit_rows(t1.mean(axis=0), "ECT mean of target 1"))
        c2 = a @ (unit_rows(t2.mean(axis=0), "ECT mean of target 2"))
        value = float(sps.spearmanr(c1, c2).statistic)
        if not np.isfinite(value):
            raise ValueError("ECT undefined: one similarity profile is constant")

        pool = np.vstack([t1, t2])

        def null_stats(mask: np.ndarray) -> np.ndarray:
            m1, m2 = _subset_means(mask, pool)
            r1 = sps.rankdata(m1 @ a.T, axis=1)  # cosine ranks do not depend on |m|
            r2 = sps.rankdata(m2 @ a.T, axis=1)
            r1 -= r1.mean(axis=1, keepdims=True)
            r2 -= r2.mean(axis=1, keepdims=True)
            den = np.sqrt((r1 * r1).sum(axis=1) * (r2 * r2).sum(axis=1))
            with np.errstate(invalid="ignore", divide="ignore"):
                return (r1 * r2).sum(axis=1) / den

        perm = self._perm(value, null_stats, _target_resplits(pool.shape[0], t1.shape[0]), self.alternative)
        n1, n2 = T.names
        return self._result(
            value,
            perm,
            T,
            A,
            method=_with_test("ECT (Spearman)", perm, "re-splits of the targets"),
            alternative=self.alternative,
            n=len(A.words[0]),
            null_value=1.0,
            h0=f"'{n1}' and '{n2}' rank the words of '{A.names[0]}' as coherently as random regroupings",
            h1=f"'{n1}' and '{n2}' rank the words of '{A.names[0]}' less coherently (bias)",
            details={
                "similarity": {
                    w: {n1: float(x), n2: float(y)} for w, x, y in zip(A.words[0], c1, c2, strict=True)
                },
            },
        )


# --------------------------------------------------------------------------- MAC
@dataclass(frozen=True)
class MAC(_PermutationSettings):
    r"""Mean Average Cosine distance (Manzini, Lim, Tsvetkov & Black 2019, NAACL, "Black is to
    criminal as Caucasian is to police").

    Target sets T_1..T_n (their words pooled as T) and attribute sets A_1..A_m::

        S(t, A_j) = (1/|A_j|) Σ_{a∈A_j} (1 − cos(t, a))
        MAC       = (1/(|T| m)) Σ_{t∈T} Σ_j S(t, A_j)

    Seed 003 chapter 2 (section 2.4.1, Table 2.9, eq. 2.4-2.5; it writes cos for WEFE's and
    Manzini et al.'s cosine *distance*).  0 = every target word points like every attribute
    word, 1 = orthogonal on average; lower = closer associations.

    Inference (not in WEFE): MAC does not change when target or attribute words are relabelled
    between sets, so there is no permutation null; a percentile bootstrap CI of the mean over the
    target words (resampling t with its average S over the attribute sets) is given instead.

    Examples
    --------
    >>> from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, TOY_X, TOY_Y, toy_vectors
    >>> result = MAC().run([list(TOY_X), list(TOY_Y)], [list(TOY_MALE), list(TOY_FEMALE)], toy_vectors())
    >>> result.n, round(result.statistic, 3)
    (12, 0.735)
    """

    TARGET_SETS: ClassVar[int | tuple[int, None]] = (1, None)
    ATTRIBUTE_SETS: ClassVar[int | tuple[int, None]] = (1, None)

    n_bootstrap: int = 2000
    confidence: float = 0.95

    def run(
        self,
        target_sets: Sequence[Sequence[str]],
        attribute_sets: Sequence[Sequence[str]],
        vectors: Any,
        *,
        target_names: Sequence[str] | None = None,
        attribute_names: Sequence[str] | None = None,
    ) -> TestResult:
        T, A = self._sets(target_sets, attribute_sets, vectors, target_names, attribute_names)
        scores: dict[str, dict[str, dict[str, float]]] = {}
        per_target: list[np.ndarray] = []
        attr_units = [
            unit_word_rows(vectors, ws, f"MAC attribute set {nm!r}")
            for ws, nm in zip(A.words, A.names, strict=True)
        ]
        for ws, nm in zip(T.words, T.names, strict=True):
            t = unit_word_rows(vectors, ws, f"MAC target set {nm!r}")
            s = np.column_stack([1.0 - (t @ au.T).mean(axis=1) for au in attr_units])  # (|T_i|, m)
            per_target.append(s)
            scores[nm] = {
                w: dict(zip(A.names, row.tolist(), strict=True)) for w, row in zip(ws, s, strict=True)
            }
        allS = np.vstack(per_target)
        value = float(allS.mean())
        ci, conf = _bootstrap(allS.mean(axis=1), self.n_bootstrap, self.confidence, self.random_state)
        return self._result(
            value,
            None,
            T,
            A,
            method="MAC (mean average cosine distance)"
            + (", percentile bootstrap CI over target words" if ci else ""),
            n=int(allS.shape[0]),
            ci=ci,
            confidence=conf,
            h0="target and attribute words are unrelated (cosine distance about 1)",
            h1="target words are close to the attribute words",
            details={
                "per_word": scores,
                "by_sets": {
                    tn: dict(zip(A.names, s.mean(axis=0).tolist(), strict=True))
                    for tn, s in zip(T.names, per_target, strict=True)
                },
            },
        )


# --------------------------------------------------------------------------- RIPA
@dataclass(frozen=True)
class RIPA(_PermutationSettings):
    r"""Relational Inner Product Association (Ethayarajh, Duvenaud & Hirst 2019, ACL,
    "Understanding undesirable word embedding associations").

    Two *paired* target sets (x_i, y_i), e.g. (man, woman), (he, she), and one attribute set A::

        b_i  = (x_i − y_i) / ‖x_i − y_i‖          (relation vector of pair i)
        RIPA = (1/|A|) Σ_{a∈A} (1/n) Σ_i a · b_i

    > 0: the attribute words lean towards the x side.  As in WEFE the attribute vectors are used
    as stored (``normalize=False``; Ethayarajh et al. use the raw word vectors too) and the
    per-word mean and (population) SD over the pairs are reported.  Seed 000 cites Ethayarajh et
    al. (2019) for the flaws of WEAT that RIPA answers.  The two sets must have equal sizes.

    Inference (not in WEFE): a sign-flip permutation test swapping x_i and y_i within pairs
    (H0: the labels inside each pair are exchangeable, so RIPA is symmetric around 0; exact over
    the 2^n swap patterns when feasible), two-sided by default, and a percentile bootstrap CI of
    the mean over the attribute words.  The sign-flip test is conditional on the attribute words:
    it asks whether the pairs agree on the lean of *these* words (with pairs that all point the
    same way, even a small lean of random words can be significant); the bootstrap CI shows how
    much the value depends on the choice of attribute words.

    Examples
    --------
    >>> from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, TOY_X, toy_vectors
    >>> result = RIPA(n_permutations=200).run([list(TOY_MALE), list(TOY_FEMALE)], [list(TOY_X)],
    ...                                       toy_vectors())
    >>> result.n, round(result.statistic, 3), round(result.p_value, 4)
    (6, 4.497, 0.0078)
    """

    normalize: bool = False
    alternative: Alternative = "two-sided"
    n_bootstrap: int = 2000
    confidence: float = 0.95

    def run(
        self,
        target_sets: Sequence[Sequence[str]],
        attribute_sets: Sequence[Sequence[str]],
        vectors: Any,
        *,
        target_names: Sequence[str] | None = None,
        attribute_names: Sequence[str] | None = None,
    ) -> TestResult:
        if not isinstance(target_sets, str) and isinstance(target_sets, Sequence) and len(target_sets) == 2:
            if len(target_sets[0]) != len(target_sets[1]):
                raise ValueError(
                    f"RIPA needs two paired target sets of equal size, got {len(target_sets[0])} and "
                    f"{len(target_sets[1])} words"
                )
        T, A = self._sets(target_sets, attribute_sets, vectors, target_names, attribute_names)
        if len(T.words[0]) != len(T.words[1]):
            raise ValueError(
                "RIPA: the paired target sets have unequal sizes after de-duplication / dropping "
                f"out-of-vocabulary words ({len(T.words[0])} vs {len(T.words[1])}); drop whole pairs"
            )
        x = _matrix(vectors, T.words[0], "RIPA targets", self.normalize)
        y = _matrix(vectors, T.words[1], "RIPA targets", self.normalize)
        pairs = list(zip(T.words[0], T.words[1], strict=True))
        b = unit_rows(x - y, "RIPA relation vectors x_i - y_i", labels=[f"{p}-{q}" for p, q in pairs])
        a = _matrix(vectors, A.words[0], "RIPA attributes", self.normalize)
        scores = a @ b.T  # (|A|, n)
        per_word = scores.mean(axis=1)
        value = float(per_word.mean())
        s_pair = scores.mean(axis=0)  # contribution of each pair: mean_a a . b_i

        def null_stats(flip: np.ndarray) -> np.ndarray:
            return np.where(flip, -s_pair, s_pair).mean(axis=1)

        perm = self._perm(
            value, null_stats, SignFlips(len(pairs), "swap patterns of the pairs"), self.alternative
        )
        ci, conf = _bootstrap(per_word, self.n_bootstrap, self.confidence, self.random_state)
        n1, n2 = T.names
        return self._result(
            value,
            perm,
            T,
            A,
            method=_with_test("RIPA", perm, "swap patterns", "sign-flip permutation test"),
            alternative=self.alternative,
            n=len(A.words[0]),
            ci=ci,
            confidence=conf,
            null_value=0.0,
            h0=f"the words of '{A.names[0]}' lean neither to '{n1}' nor to '{n2}'",
            h1=f"the words of '{A.names[0]}' lean to '{n1}' or to '{n2}'",
            details={
                "normalize": self.normalize,
                "per_word": {
                    w: {"mean": float(m), "std": float(s)}
                    for w, m, s in zip(A.words[0], per_word, scores.std(axis=1), strict=True)
                },
                "per_pair": {f"{p}-{q}": float(v) for (p, q), v in zip(pairs, s_pair, strict=True)},
            },
        )


# --------------------------------------------------------------------------- RNSB
def _kl_from_uniform(p: np.ndarray) -> float:
    """KL(p ‖ uniform) in nats for a probability vector p (scipy.stats.entropy(p, uniform))."""
    p = p / p.sum()
    nz = p > 0
    return float(np.sum(p[nz] * np.log(p[nz] * p.size)))


@dataclass(frozen=True)
class RNSB(_PermutationSettings):
    r"""Relative Negative Sentiment Bias (Sweeney & Najafian 2019, ACL, "A transparent framework
    for evaluating unintended demographic bias in word embeddings").

    Attribute sets A₁ (positive, label +1) and A₂ (negative, label −1) train a logistic
    regression on their word vectors; for every word t of the target sets T_1..T_n (identity
    terms, at least two sets) p(t) = P(negative | t), normalised to a distribution P over the
    target words::

        RNSB = KL(P ‖ U) = Σ_t P(t) log(P(t) · N)      (nats, N = number of target words)

    0 = every identity term gets the same negative probability.  WEFE 1.0.1's defaults, used
    here: ``LogisticRegression(solver="liblinear", max_iter=10000)``, trained on a stratified
    80 % holdout split (``train_test_split(test_size=0.2, shuffle=True, stratify=labels)``;
    ``holdout=False`` trains on all attribute words), vectors as stored.  The classifier and
    the split are randomised: ``random_state`` seeds both (WEFE's ``random_state``; WEFE's
    default ``None`` is not reproducible), and ``n_iterations > 1`` averages the KL over
    iterations seeded ``random_state + i`` (WEFE's ``n_iterations`` with unseeded runs).  With
    the same seed and settings the value equals WEFE's.  Reviewed with WEFE's metrics in seed 003
    chapter 2 (section 2.4).

    Inference (not in WEFE): a permutation test re-splitting A₁ ∪ A₂ into groups of the observed
    sizes and refitting the classifier each time (H0: the positive/negative labelling carries no
    more information about the identity terms than an arbitrary split of the attribute words);
    one-sided, large KL = bias.  Each re-split refits a model, so ``n_permutations`` defaults to
    200 and ``n_permutations=0`` skips the test.

    Examples
    --------
    >>> from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, TOY_X, TOY_Y, toy_vectors
    >>> result = RNSB().run([list(TOY_X), list(TOY_Y)], [list(TOY_MALE), list(TOY_FEMALE)], toy_vectors())
    >>> result.n, round(result.statistic, 3), round(result.p_value, 3)
    (12, 0.63, 0.005)
    """

    TARGET_SETS: ClassVar[int | tuple[int, None]] = (2, None)
    ATTRIBUTE_SETS: ClassVar[int | tuple[int, None]] = 2

    n_permutations: int = 200
    normalize: bool = False
    holdout: bool = True
    test_size: float = 0.2
    n_iterations: int = 1
    estimator_params: dict[str, Any] = field(
        default_factory=lambda: {"solver": "liblinear", "max_iter": 10000}
    )

    def _kl(self, X: np.ndarray, y: np.ndarray, targets: np.ndarray) -> tuple[float, np.ndarray]:
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import train_test_split

        kls, probs = [], []
        for i in range(int(self.n_iterations)):
            seed = None if self.random_state is None else int(self.random_state) + i
            params = dict(self.estimator_params)
            if seed is not None:
                params["random_state"] = seed
            Xtr, ytr = X, y
            if self.holdout:
                Xtr, _, ytr, _ = train_test_split(
                    X, y, shuffle=True, random_state=seed, test_size=self.test_size, stratify=y
                )
            clf = LogisticRegression(**params).fit(Xtr, ytr)
            p = clf.predict_proba(targets)[:, int(np.flatnonzero(clf.classes_ == -1)[0])]
            kls.append(_kl_from_uniform(p))
            probs.append(p)
        return float(np.mean(kls)), np.mean(probs, axis=0)

    def run(
        self,
        target_sets: Sequence[Sequence[str]],
        attribute_sets: Sequence[Sequence[str]],
        vectors: Any,
        *,
        target_names: Sequence[str] | None = None,
        attribute_names: Sequence[str] | None = None,
    ) -> TestResult:
        if int(self.n_iterations) < 1:
            raise ValueError(f"n_iterations must be >= 1, got {self.n_iterations}")
        T, A = self._sets(target_sets, attribute_sets, vectors, target_names, attribute_names)
        for ws, nm in zip(A.words, A.names, strict=True):
            if self.holdout and len(ws) < 2:
                raise ValueError(
                    f"RNSB attribute set {nm!r} has {len(ws)} word: a stratified holdout split needs at "
                    "least 2 words per attribute set (or use holdout=False)"
                )
        pos = _matrix(vectors, A.words[0], "RNSB attributes", self.normalize)
        neg = _matrix(vectors, A.words[1], "RNSB attributes", self.normalize)
        X = np.vstack([pos, neg])
        y = np.concatenate([np.ones(len(pos)), -np.ones(len(neg))])
        tw = [w for ws in T.words for w in ws]
        targets = np.vstack([_matrix(vectors, ws, "RNSB targets", self.normalize) for ws in T.words])
        value, probs = self._kl(X, y, targets)

        def null_stats(mask: np.ndarray) -> np.ndarray:
            return np.array([self._kl(X, np.where(row, 1.0, -1.0), targets)[0] for row in mask])

        # each re-split refits the classifier: at most n_permutations of them are enumerated
        perm = self._perm(
            value,
            null_stats,
            Partitions(len(y), len(pos), replacement=True, what="re-splits of the attribute words"),
            "greater",
            exact_threshold=min(self.exact_threshold, self.n_permutations),
        )
        method = "RNSB (logistic regression, KL from uniform)"
        if perm:
            method += f", permutation test ({perm.label('re-splits of the attributes')})"
        return self._result(
            value,
            perm,
            T,
            A,
            method=method,
            alternative="greater",
            n=len(tw),
            null_value=0.0,
            h0=f"'{A.names[1]}' vs '{A.names[0]}' separates the target words no more than a random split",
            h1=f"some target words are more '{A.names[1]}' than others (bias)",
            details={
                "negative_probability": dict(zip(tw, probs.tolist(), strict=True)),
                "negative_distribution": dict(zip(tw, (probs / probs.sum()).tolist(), strict=True)),
                "estimator_params": dict(self.estimator_params),
                "holdout": self.holdout,
                "n_iterations": int(self.n_iterations),
            },
        )


# --------------------------------------------------------------------------- WEFAT
@dataclass(frozen=True)
class WEFAT(_PermutationSettings):
    r"""Word Embedding Factual Association Test (Caliskan, Bryson & Narayanan 2017, Science 356:183).

    For each target word w (the target sets are pooled) and two attribute sets A, B::

        s(w, A, B) = mean_{a∈A} cos(w, a) − mean_{b∈B} cos(w, b)
        WEFAT(w)   = s(w, A, B) / sd_{x∈A∪B} cos(w, x)          (normalised association)

    Seed 003 chapter 2 (section 2.4.1, Table 2.9, eq. 2.3).  ``ddof=1`` (sample SD) by default,
    as in :class:`biaskit.metrics.weat.WEAT`.  Caliskan et al. correlate WEFAT(w) with real-world
    data (e.g. the share of women in an occupation).

    Inference: Caliskan et al.'s per-word permutation test over the re-partitions (A_i, B_i) of
    A ∪ B into sets of sizes |A|, |B|: p(w) = Pr_i[s(w, A_i, B_i) ≥ s(w, A, B)] (one-sided,
    ``alternative="greater"``), reported per word in ``details["per_word"]``.  The result's
    ``statistic`` / ``estimate`` is the mean association mean_w s(w, A, B), tested with the same
    re-partitions (``p_value``); ``effect_size`` is the mean of WEFAT(w).

    Examples
    --------
    >>> from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, TOY_X, toy_vectors
    >>> result = WEFAT(n_permutations=200).run([list(TOY_X)], [list(TOY_MALE), list(TOY_FEMALE)],
    ...                                        toy_vectors())
    >>> result.n, round(result.statistic, 3), round(result.p_value, 4)
    (6, 0.806, 0.0001)
    """

    TARGET_SETS: ClassVar[int | tuple[int, None]] = (1, None)
    ATTRIBUTE_SETS: ClassVar[int | tuple[int, None]] = 2

    alternative: Alternative = "greater"
    ddof: int = 1

    def run(
        self,
        target_sets: Sequence[Sequence[str]],
        attribute_sets: Sequence[Sequence[str]],
        vectors: Any,
        *,
        target_names: Sequence[str] | None = None,
        attribute_names: Sequence[str] | None = None,
    ) -> TestResult:
        T, A = self._sets(target_sets, attribute_sets, vectors, target_names, attribute_names)
        words = [w for ws in T.words for w in ws]
        set_of = {w: nm for ws, nm in zip(T.words, T.names, strict=True) for w in ws}
        na, nb = len(A.words[0]), len(A.words[1])
        if na + nb - self.ddof <= 0:
            raise ValueError(f"WEFAT: A u B has {na + nb} words, too few for ddof={self.ddof}")
        W = unit_word_rows(vectors, words, "WEFAT targets")
        P = unit_word_rows(vectors, A.words[0] + A.words[1], "WEFAT attributes")
        C = W @ P.T  # (|W|, |A|+|B|)
        s = C[:, :na].mean(axis=1) - C[:, na:].mean(axis=1)
        sd = C.std(axis=1, ddof=self.ddof)
        with np.errstate(divide="ignore", invalid="ignore"):
            eff = np.where(sd > 0, s / sd, np.nan)
        value = float(s.mean())

        # one pass over the re-partitions of A u B: the per-word statistics s(w, A_i, B_i) and, in the last
        # column, their mean (the result's statistic); each column is tested against its own observed value
        def null_stats(mask: np.ndarray) -> np.ndarray:
            m = mask.astype(np.float64)
            S = (m @ C.T) / na - ((1.0 - m) @ C.T) / nb  # (P, |W|)
            return np.column_stack([S, S.mean(axis=1)])

        res = permutation_test(
            null_stats,
            Partitions(na + nb, na, replacement=True, what="re-partitions of the attributes"),
            observed=np.append(s, value),
            alternative=self.alternative,
            two_sided="doubled",
            finite_only=False,
            exact=self.exact,
            exact_threshold=self.exact_threshold,
            n_permutations=self.n_permutations,
            random_state=self.random_state,
            batch_size=_BATCH,
        )
        p_word = res.p_value[:-1]
        perm = PermutationResult(
            p_value=float(res.p_value[-1]),
            method=res.method,
            n_partitions_total=res.n_partitions_total,
            n_partitions_evaluated=res.n_partitions_evaluated,
            n_extreme=int(res.n_extreme[-1]),
            comparison=res.comparison,
            tie_tolerance=float(res.tie_tolerance[-1]),
            observed=value,
            null_mean=float(res.null_mean[-1]),
            null_sd=float(res.null_sd[-1]),
            alternative=res.alternative,
            two_sided=res.two_sided,
            what=res.what,
        )
        a_name, b_name = A.names
        return self._result(
            value,
            perm,
            T,
            A,
            method=f"WEFAT, permutation test ({perm.label()})",
            alternative=self.alternative,
            n=len(words),
            effect_size=float(np.nanmean(eff)) if np.any(np.isfinite(eff)) else None,
            null_value=0.0,
            h0=f"the target words are as close to '{a_name}' as to '{b_name}'",
            h1=(
                f"the target words are closer to '{a_name}'"
                if self.alternative == "greater"
                else f"the target words are closer to '{b_name}'"
                if self.alternative == "less"
                else f"the target words lean to '{a_name}' or '{b_name}'"
            ),
            details={
                "ddof": self.ddof,
                "per_word": {
                    w: {
                        "set": set_of[w],
                        "s": float(si),
                        "wefat": float(ei),
                        "p_value": float(pi),
                    }
                    for w, si, ei, pi in zip(words, s, eff, p_word, strict=True)
                },
            },
        )


def _example(cls: type, targets: str, attributes: str, **settings: Any) -> Callable[[], TestResult]:
    """The example of one of WEFE's metrics on the toy vectors: ``targets`` / ``attributes`` name the toy
    word sets (``"XY"``: maths and arts words; ``"AB"``: male and female words; ``"X"``: maths words)."""

    def example() -> TestResult:
        from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, TOY_X, TOY_Y, toy_vectors

        sets = {"X": list(TOY_X), "Y": list(TOY_Y), "A": list(TOY_MALE), "B": list(TOY_FEMALE)}
        return cls(**settings).run([sets[c] for c in targets], [sets[c] for c in attributes], toy_vectors())

    return example


# --------------------------------------------------------------------------- the batch grid
_ALTERNATIVES = ("two-sided", "greater", "less")


def _wefe_grid(cls: type, layout: str, *options: Option) -> GridSupport:
    """Grid support of one of WEFE's metrics on a word dataset (a WEAT query X, Y, A, B).

    ``layout`` ``"XY|AB"``: targets X, Y and attributes A, B, one row; ``"AB|X,Y"``: targets A, B (the two
    groups, e.g. male and female terms) against the attribute set X, then Y, one row each.  The grid's
    ``n_permutations``, ``exact_threshold``, ``random_state``, ``oov_policy`` (and ``ddof`` for WEFAT) set
    the test; the metric's own ``options`` (``<metric>_<name>``) override them.
    """
    fields = {f for f in cls.__dataclass_fields__}  # type: ignore[attr-defined]

    def run(call: GridCall) -> list[dict[str, Any]]:
        q = call.data
        sets = {"X": list(q.X), "Y": list(q.Y), "A": list(q.A), "B": list(q.B)}
        names = dict(zip("XYAB", q.names, strict=True))
        common = ("n_permutations", "exact_threshold", "random_state", "oov_policy", "ddof")
        settings = {k: call.options[k] for k in common if k in fields}
        settings.update({o.name: call.option(o.name) for o in options})
        runs = [("XY", "AB")] if layout == "XY|AB" else [("AB", "X"), ("AB", "Y")]
        rows = []
        for targets, attributes in runs:
            res = cls(**settings).run(
                [sets[c] for c in targets], [sets[c] for c in attributes], call.model,
                target_names=[names[c] for c in targets], attribute_names=[names[c] for c in attributes],
            )  # fmt: skip
            row = GridSupport.rows_from_result(
                res,
                targets=" vs ".join(names[c] for c in targets),
                attributes=" vs ".join(names[c] for c in attributes),
            )[0]
            dropped = {k: v for part in res.details.get("oov", {}).values() for k, v in part.items() if v}
            if dropped:
                row["note"] = "dropped (no vector): " + "; ".join(
                    f"{k}: {len(v)}" for k, v in dropped.items()
                )
            rows.append(row)
        return rows

    return GridSupport("words", run, options=tuple(options))


# --------------------------------------------------------------------------- the registry
#: the fields WEFE's family shares
_WEFE = {
    "family": "word vectors",
    "inputs": ("word sets",),
    "model_kinds": ("static",),
    "section": "seed 003 section 2.3 (Table 2.2), 2.4.1 (Table 2.9); WEFE 1.0.1's metrics",
}
register_metric(
    "wefat",
    label="WEFAT",
    directional=True,
    test="permutation test per word (re-split A u B)",
    citation="Caliskan et al. 2017",
    entry_point=WEFAT,
    grid=_wefe_grid(
        WEFAT,
        "XY|AB",
        Option("alternative", "greater", "alternative of the permutation test", choices=_ALTERNATIVES),
    ),
    example=_example(WEFAT, "XY", "AB", n_permutations=200),
    summary="association of each target word with two attribute sets, per word",
    **_WEFE,
)
register_metric(
    "rnd",
    label="RND",
    directional=True,
    test="re-split permutation test; bootstrap CI",
    citation="Garg et al. 2018",
    entry_point=RND,
    grid=_wefe_grid(
        RND,
        "AB|X,Y",
        Option("alternative", "two-sided", "alternative of the permutation test", choices=_ALTERNATIVES),
        Option("distance", "norm", "Euclidean distance or cosine similarity", choices=("norm", "cos")),
    ),
    example=_example(RND, "AB", "X", n_permutations=200),
    summary="relative norm distance of the attribute words to two target centroids",
    **_WEFE,
)
register_metric(
    "rnsb",
    label="RNSB",
    directional=False,
    test="re-split permutation test (retrained classifier)",
    citation="Sweeney & Najafian 2019",
    entry_point=RNSB,
    grid=_wefe_grid(
        RNSB, "XY|AB", Option("n_permutations", 200, "re-splits, each refitting the classifier", types=(int,))
    ),
    example=_example(RNSB, "XY", "AB", n_permutations=20),
    summary="KL divergence of the negative-sentiment probabilities of the targets from uniform",
    **_WEFE,
)
register_metric(
    "ect",
    label="ECT",
    directional=True,
    test="re-split permutation test (one-sided)",
    citation="Dev & Phillips 2019",
    entry_point=ECT,
    grid=_wefe_grid(
        ECT,
        "AB|X,Y",
        Option("alternative", "less", "alternative of the permutation test", choices=_ALTERNATIVES),
    ),
    example=_example(ECT, "AB", "X", n_permutations=200),
    summary="Spearman correlation of the attribute words' similarities to two target centroids",
    **_WEFE,
)
register_metric(
    "mac",
    label="MAC",
    directional=False,
    test="bootstrap CI over the targets",
    citation="Manzini et al. 2019",
    entry_point=MAC,
    grid=_wefe_grid(MAC, "XY|AB"),
    example=_example(MAC, "XY", "AB", n_bootstrap=200),
    summary="mean average cosine distance of targets to attribute sets",
    **_WEFE,
)
register_metric(
    "ripa",
    label="RIPA",
    directional=True,
    test="sign-flip permutation test within pairs",
    citation="Ethayarajh et al. 2019",
    entry_point=RIPA,
    grid=_wefe_grid(
        RIPA,
        "AB|X,Y",
        Option("alternative", "two-sided", "alternative of the permutation test", choices=_ALTERNATIVES),
    ),
    example=_example(RIPA, "AB", "X", n_permutations=200),
    summary="relational inner product association with the direction of paired target words",
    **_WEFE,
)
