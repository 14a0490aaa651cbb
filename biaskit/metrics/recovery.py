r"""Gonen & Goldberg's recovery tests: is the gender still in the geometry after debiasing?

Gonen & Goldberg (2019), "Lipstick on a pig: debiasing methods cover up systematic gender biases in
word embeddings but do not remove them", NAACL, section 4 (their code:
``gonenhila/gender_bias_lipstick``, ``remaining_bias_2016.ipynb``; responsibly's
``BiasWordEmbedding.plot_most_biased_clustering``).  Seed 000 (Maddalozzo 2023) section 3.4.1 and
seed 002 (Barza 2023) sections 2.3.1 and 2.6.1 cite it: a debiasing method that zeroes the
projections on the gender direction can leave the gender of a word recoverable from its position
among the other words.

Three tests, each against chance, for word vectors (``KeyedVectors`` and a word list) or any
representations (an ``(n, d)`` array, e.g. contextual sentence embeddings):

``cluster_recovery``
    k-means with k = 2 on the unit-length representations of words labelled by their gender
    (G&G: the 500 most male- and 500 most female-biased words by their *original* projection on the
    gender direction).  Accuracy :math:`\max(a, 1 - a)`, :math:`a` = share of words whose cluster
    matches their label (a cluster has no name).  Test: permutation test of the labels against the
    fixed clustering, :math:`p = (1 + \#\{\mathrm{acc}_\pi \ge \mathrm{acc}\})/(P + 1)`
    (:mod:`biaskit.core.permutation`); chance is not 50 % but the mean of the permuted accuracies.
``classifier_recovery``
    an RBF-kernel SVM trained to recover the label (G&G: trained on 1,000 random words of the 5,000
    most biased, tested on the other 4,000); here either that one split (``train_size``) or
    stratified k-fold out-of-fold predictions.  Test: exact binomial test of the correct test
    predictions against the majority-class share (0.5 for balanced labels), one-sided.
``neighbour_recovery``
    *bias by neighbours*: for every word, the share of its k nearest neighbours (cosine, k = 100 in
    G&G) whose *original* bias points to the male side, correlated (Pearson) with a value of the word,
    its original bias (G&G) or a label.  Test: permutation of the words' values (one-sided, H1:
    positive correlation); the Pearson t-test p-value is in ``details``.

:func:`gonen_goldberg_tests` runs the three with G&G's word selection on an original and a debiased
embedding.  G&G report, for Bolukbasi's hard-debiased GoogleNews word2vec: clustering accuracy 92.5 %
(99.9 % before), classification 88.9 % (98.3 % before), and a bias-by-neighbours correlation of 0.69
(0.74 before); ``tests/metrics/test_recovery.py`` reproduces the direction of these results on the bundled
26,423-word GoogleNews subset.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from gensim.models import KeyedVectors

from biaskit.core.permutation import LabelShuffles, permutation_test
from biaskit.core.registry import GridCall, GridSupport, register_metric
from biaskit.core.results import TestResult, format_p_value
from biaskit.core.stats import binomial_test, correlation
from biaskit.metrics.direct_bias import BiasDirection

logger = logging.getLogger(__name__)

__all__ = [
    "RecoveryResult",
    "bias_by_projection",
    "classifier_recovery",
    "cluster_recovery",
    "contextual_recovery",
    "gonen_goldberg_tests",
    "most_biased_words",
    "neighbour_recovery",
    "neighbour_shares",
    "recovery_table",
    "representation_matrix",
]

GG_CITATION = (
    "Gonen & Goldberg (2019), Lipstick on a pig: debiasing methods cover up systematic gender biases in "
    "word embeddings but do not remove them, NAACL"
)


# --------------------------------------------------------------------------- inputs
def representation_matrix(
    representations: KeyedVectors | np.ndarray,
    words: Sequence[str] | None = None,
    *,
    normalize: bool = True,
) -> np.ndarray:
    """The ``(n, d)`` float64 rows to test: ``representations[words]`` for ``KeyedVectors`` (every word
    must be in the vocabulary), the array itself otherwise; unit length when ``normalize`` (a zero row
    stays zero)."""
    if isinstance(representations, KeyedVectors):
        if words is None:
            raise ValueError("KeyedVectors need the words to test (words=...)")
        missing = [w for w in words if w not in representations.key_to_index]
        if missing:
            raise ValueError(f"{len(missing)} word(s) are not in the vocabulary: {missing[:10]}")
        X = np.asarray(representations[list(words)], dtype=np.float64)
    else:
        X = np.asarray(representations, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"representations must be a 2-D array (n, d), got shape {X.shape}")
        if words is not None and len(words) != X.shape[0]:
            raise ValueError(f"{len(words)} words for {X.shape[0]} rows")
    if normalize:
        n = np.linalg.norm(X, axis=1, keepdims=True)
        X = np.divide(X, n, out=np.zeros_like(X), where=n > 0)
    return X


def _binary_labels(labels: Sequence[Any] | np.ndarray, n: int) -> tuple[np.ndarray, list[Any]]:
    lab = np.asarray(labels)
    if lab.shape[0] != n:
        raise ValueError(f"{lab.shape[0]} labels for {n} representations")
    classes = sorted(set(lab.tolist()), key=str)
    if len(classes) != 2:
        raise ValueError(f"the recovery tests need exactly two label values, got {classes[:5]}")
    return (lab == classes[1]).astype(np.int64), classes


def bias_by_projection(
    vectors: KeyedVectors, words: Sequence[str], direction: BiasDirection | np.ndarray
) -> np.ndarray:
    r"""Original bias of each word: :math:`\cos(w, g)` (positive: toward the side ``g`` points to)."""
    g = direction.vector if isinstance(direction, BiasDirection) else np.asarray(direction, dtype=np.float64)
    X = representation_matrix(vectors, words)
    return X @ (g / np.linalg.norm(g))


def most_biased_words(
    vectors: KeyedVectors,
    direction: BiasDirection | np.ndarray,
    n: int = 500,
    *,
    candidates: Sequence[str] | None = None,
    exclude: Iterable[str] = (),
) -> tuple[list[str], list[str]]:
    """The ``n`` words with the largest and the ``n`` with the smallest :func:`bias_by_projection`.

    ``candidates`` (default: the whole vocabulary, in its order) minus ``exclude`` (G&G leave out the
    gender-specific words).  Returns ``(positive side, negative side)``, most extreme first.
    """
    ex = set(exclude)
    pool = [w for w in (vectors.index_to_key if candidates is None else candidates) if w not in ex]
    pool = [w for w in pool if w in vectors.key_to_index]
    if 2 * n > len(pool):
        raise ValueError(f"asked for 2 x {n} words but only {len(pool)} candidates remain")
    b = bias_by_projection(vectors, pool, direction)
    order = np.argsort(b, kind="stable")
    return [pool[i] for i in order[::-1][:n]], [pool[i] for i in order[:n]]


# --------------------------------------------------------------------------- the three tests
def cluster_recovery(
    representations: KeyedVectors | np.ndarray,
    labels: Sequence[Any] | np.ndarray,
    *,
    words: Sequence[str] | None = None,
    n_init: int = 10,
    n_permutations: int = 2000,
    random_state: int = 0,
) -> TestResult:
    """Gonen & Goldberg's clustering test: k-means (k = 2) accuracy against the labels, permutation test.

    See the module docstring.  ``statistic`` = accuracy in [0.5, 1]; ``details``: ``clusters`` (the
    assignment of every row), ``chance`` (mean accuracy under permuted labels), ``n_permutations``.

    Examples
    --------
    >>> from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, toy_vectors
    >>> labels = [1] * len(TOY_MALE) + [0] * len(TOY_FEMALE)
    >>> result = cluster_recovery(toy_vectors(), labels, words=[*TOY_MALE, *TOY_FEMALE], n_permutations=200)
    >>> result.n, round(result.statistic, 3), round(result.p_value, 4)
    (16, 1.0, 0.005)
    """
    from sklearn.cluster import KMeans

    X = representation_matrix(representations, words)
    y, classes = _binary_labels(labels, X.shape[0])
    clusters = KMeans(n_clusters=2, n_init=n_init, random_state=random_state).fit_predict(X)

    def acc(Y: np.ndarray) -> np.ndarray:
        a = (Y == clusters[None, :]).mean(axis=1)
        return np.maximum(a, 1 - a)

    perm = permutation_test(
        acc,
        LabelShuffles(y, "relabellings of the words"),
        n_permutations=n_permutations,
        random_state=random_state,
    )
    observed = float(perm.observed)
    return TestResult(
        statistic=observed,
        p_value=perm.p_value,
        method="k-means (k = 2) clustering accuracy against the labels, permutation test",
        alternative="greater",
        n=int(X.shape[0]),
        estimate=observed,
        null_value=perm.null_mean,
        h0="the clusters are unrelated to the labels",
        h1="the clusters recover the labels",
        details={
            "clusters": clusters,
            "chance": perm.null_mean,
            "n_permutations": int(n_permutations),
            "classes": classes,
            "citation": GG_CITATION,
        },
    )


def classifier_recovery(
    representations: KeyedVectors | np.ndarray,
    labels: Sequence[Any] | np.ndarray,
    *,
    words: Sequence[str] | None = None,
    classifier: Any | None = None,
    train_size: int | float | None = None,
    n_splits: int = 5,
    random_state: int = 0,
) -> TestResult:
    """Gonen & Goldberg's classification test: accuracy of an RBF SVM on held-out rows, binomial test.

    ``train_size`` (a count or a share): one stratified train/test split, as G&G (1,000 of 5,000);
    ``None``: out-of-fold predictions of a stratified ``n_splits``-fold cross-validation, every row
    predicted once.  ``classifier``: any scikit-learn classifier (default ``SVC(kernel="rbf")``).
    ``statistic`` = test accuracy; ``details``: ``correct`` (bool per tested row, aligned with
    ``test_index``), ``predictions``.

    Examples
    --------
    >>> from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, toy_vectors
    >>> labels = [1] * len(TOY_MALE) + [0] * len(TOY_FEMALE)
    >>> result = classifier_recovery(toy_vectors(), labels, words=[*TOY_MALE, *TOY_FEMALE], n_splits=4)
    >>> result.n, round(result.statistic, 3), f"{result.p_value:.6f}"
    (16, 1.0, '0.000015')
    """
    from sklearn.base import clone
    from sklearn.model_selection import StratifiedKFold, cross_val_predict, train_test_split
    from sklearn.svm import SVC

    X = representation_matrix(representations, words)
    y, classes = _binary_labels(labels, X.shape[0])
    clf = SVC(kernel="rbf") if classifier is None else clone(classifier)
    if train_size is None:
        cv = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=random_state)
        pred = cross_val_predict(clf, X, y, cv=cv)
        test_index = np.arange(X.shape[0])
        how = f"{n_splits}-fold cross-validated predictions"
    else:
        idx = np.arange(X.shape[0])
        tr, te = train_test_split(idx, train_size=train_size, stratify=y, random_state=random_state)
        pred = clone(clf).fit(X[tr], y[tr]).predict(X[te])
        test_index = np.sort(te)
        pred = pred[np.argsort(te)]
        how = f"trained on {tr.size}, tested on {te.size}"
    correct = pred == y[test_index]
    chance = float(max(np.mean(y[test_index]), 1 - np.mean(y[test_index])))
    res = binomial_test(int(correct.sum()), int(correct.size), p0=chance, alternative="greater")
    return TestResult(
        statistic=float(correct.mean()),
        p_value=res.p_value,
        method=f"RBF-SVM accuracy ({how}), exact binomial test against {chance:.2f}",
        alternative="greater",
        n=int(correct.size),
        estimate=float(correct.mean()),
        ci=res.ci,
        confidence=res.confidence,
        null_value=chance,
        h0="the classifier does no better than guessing the majority label",
        h1="the labels can be recovered",
        details={
            "correct": correct,
            "test_index": test_index,
            "predictions": pred,
            "classes": classes,
            "citation": GG_CITATION,
        },
    )


def neighbour_shares(
    X: np.ndarray,
    X_pool: np.ndarray,
    pool_bias: np.ndarray,
    *,
    k: int = 100,
    self_index: np.ndarray | None = None,
) -> np.ndarray:
    """For each row of ``X``, the share of its ``k`` nearest rows of ``X_pool`` (cosine, in float32) with
    ``pool_bias > 0``.  ``self_index[i]`` (or -1) is row ``i``'s own position in the pool, left out."""
    import torch

    A = representation_matrix(X).astype(np.float32)
    B = representation_matrix(X_pool).astype(np.float32)
    pool_bias = np.asarray(pool_bias, dtype=np.float64)
    if B.shape[0] != pool_bias.size:
        raise ValueError(f"{pool_bias.size} pool biases for {B.shape[0]} pool rows")
    n_avail = B.shape[0] - (0 if self_index is None else 1)
    if not 1 <= k <= n_avail:
        raise ValueError(f"k must be in [1, {n_avail}], got {k}")
    male = pool_bias > 0
    out = np.empty(A.shape[0])
    for start in range(0, A.shape[0], 1024):
        S = A[start : start + 1024] @ B.T
        if self_index is not None:
            rows = np.arange(S.shape[0])
            own = self_index[start : start + 1024]
            S[rows[own >= 0], own[own >= 0]] = -np.inf
        nn = torch.topk(torch.from_numpy(S), k, dim=1).indices.numpy()  # 10x numpy's argpartition
        out[start : start + S.shape[0]] = male[nn].mean(axis=1)
    return out


def neighbour_recovery(
    representations: KeyedVectors | np.ndarray,
    values: Sequence[float] | np.ndarray,
    *,
    words: Sequence[str] | None = None,
    pool: KeyedVectors | np.ndarray | None = None,
    pool_words: Sequence[str] | None = None,
    pool_bias: Mapping[str, float] | Sequence[float] | np.ndarray,
    k: int = 100,
    n_permutations: int = 2000,
    random_state: int = 0,
) -> TestResult:
    r"""Gonen & Goldberg's bias-by-neighbours: Pearson r of ``values`` with the male share of the
    k nearest neighbours, permutation test (one-sided, H1: r > 0).

    .. math:: r = \mathrm{corr}_w\big(v_w,\ \tfrac{1}{k}\#\{u \in N_k(w): b_u > 0\}\big)

    Word vectors: ``representations`` (the debiased ``KeyedVectors``) and ``words``; the neighbours are
    searched among ``pool_words`` (default: the keys of ``pool_bias`` when it is a mapping) in ``pool``
    (default: the same vectors), each word itself left out; ``pool_bias`` gives each pool word's
    *original* bias (a mapping word -> bias, or values aligned with ``pool_words``).  Arrays: ``pool`` an
    ``(m, d)`` array (default: the same rows, each row itself left out) and ``pool_bias`` aligned with it.
    ``details``: ``shares`` (per word), ``pearson_p`` (t-test), ``chance`` (the mean of the permuted
    correlations, near 0), ``k``.

    Examples
    --------
    >>> from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, TOY_X, TOY_Y, toy_vectors
    >>> pool_bias = {**{w: 1.0 for w in TOY_MALE}, **{w: -1.0 for w in TOY_FEMALE}}
    >>> values = [1.0] * len(TOY_X) + [-1.0] * len(TOY_Y)
    >>> result = neighbour_recovery(toy_vectors(), values, words=[*TOY_X, *TOY_Y], pool_bias=pool_bias, k=4,
    ...                             n_permutations=200)
    >>> result.n, round(result.statistic, 3), round(result.p_value, 4)
    (12, 1.0, 0.005)
    """
    vals = np.asarray(values, dtype=np.float64)
    if isinstance(representations, KeyedVectors):
        if words is None:
            raise ValueError("KeyedVectors need the words to test (words=...)")
        src = representations if pool is None else pool
        if not isinstance(src, KeyedVectors):
            raise ValueError("with KeyedVectors, pool must be KeyedVectors too (or None)")
        if isinstance(pool_bias, Mapping):
            pw = list(pool_bias) if pool_words is None else list(pool_words)
            pb = np.array([pool_bias[w] for w in pw], dtype=np.float64)
        else:
            if pool_words is None:
                raise ValueError("give pool_words with a sequence of pool biases (or a mapping word -> bias)")
            pw, pb = list(pool_words), np.asarray(pool_bias, dtype=np.float64)
        X = representation_matrix(representations, words)
        Xp = representation_matrix(src, pw)
        pos = {w: i for i, w in enumerate(pw)}
        self_index = np.array([pos.get(w, -1) for w in words])
    else:
        X = representation_matrix(representations, normalize=False)
        if pool is None:
            Xp, self_index = X, np.arange(X.shape[0])
        else:
            Xp, self_index = representation_matrix(pool, normalize=False), None
        pb = np.asarray(pool_bias, dtype=np.float64)
    if vals.size != X.shape[0]:
        raise ValueError(f"{vals.size} values for {X.shape[0]} words")
    shares = neighbour_shares(X, Xp, pb, k=k, self_index=self_index)
    constant = np.std(shares) == 0 or np.std(vals) == 0
    if constant:  # no correlation to test: r = 0 and every relabelling ties with it
        r, p_t = 0.0, 1.0
    else:
        ct = correlation(vals, shares, method="pearson", alternative="greater")
        r, p_t = float(ct.statistic), float(ct.p_value)
    sc = shares - shares.mean()

    def pearson(V: np.ndarray) -> np.ndarray:
        if constant:
            return np.zeros(V.shape[0])
        Vc = V - V.mean(axis=1, keepdims=True)
        return (Vc @ sc) / (np.linalg.norm(Vc, axis=1) * np.linalg.norm(sc))

    perm = permutation_test(
        pearson,
        LabelShuffles(vals, "relabellings of the values"),
        observed=r,
        n_permutations=n_permutations,
        random_state=random_state,
    )
    return TestResult(
        statistic=r,
        p_value=perm.p_value,
        method=f"bias by neighbours: Pearson r of the value with the male share of the {k} nearest "
        "neighbours, permutation test",
        alternative="greater",
        n=int(X.shape[0]),
        estimate=r,
        null_value=0.0,
        h0="a word's neighbours say nothing about its value",
        h1="words with a male value have more male neighbours",
        details={
            "shares": shares,
            "pearson_p": p_t,
            "chance": perm.null_mean,
            "k": int(k),
            "n_permutations": int(n_permutations),
            "citation": GG_CITATION,
        },
    )


# --------------------------------------------------------------------------- G&G's protocol
def gonen_goldberg_tests(
    original: KeyedVectors,
    debiased: KeyedVectors | Mapping[str, KeyedVectors],
    *,
    direction: BiasDirection | np.ndarray | None = None,
    exclude: Iterable[str] | None = None,
    n_cluster: int = 500,
    n_classify: int = 2500,
    train_size: int = 1000,
    k: int = 100,
    vocabulary_limit: int | None = 50_000,
    random_state: int = 0,
    n_permutations: int = 2000,
) -> dict[str, dict[str, TestResult]]:
    """The three tests of Gonen & Goldberg (2019, section 4) on ``original`` and ``debiased`` vectors.

    Words: the first ``vocabulary_limit`` words of ``original`` (G&G: the 50,000 most frequent) minus
    ``exclude`` (default: Bolukbasi's gender-specific words in every case form, as responsibly does),
    ranked by their original bias :math:`\\cos(w, g)` (``direction``, default Bolukbasi's PCA direction
    of ``original``, oriented so that + is male).  Clustering: the ``n_cluster`` most male- and
    female-biased words.  Classification: the ``n_classify`` most biased of each side, an RBF SVM
    trained on ``train_size`` of them.  Bias by neighbours: the same words, their original bias
    against the male share of their ``k`` neighbours among all the candidate words.
    ``debiased``: one embedding (its results under ``"debiased"``) or several, by name.
    Returns ``{"original": {...}, "debiased": {...}}`` (or one entry per name) with keys ``cluster``,
    ``classifier``, ``neighbours``.
    """
    from biaskit.data.wordlists import load_bolukbasi_wordlists
    from biaskit.metrics.direct_bias import bolukbasi_gender_direction

    if direction is None:
        d = bolukbasi_gender_direction(original)
        g = d.vector
        he = original["he"] if "he" in original.key_to_index else None
        if he is not None and float(np.dot(he, g)) < 0:
            g = -g
    else:
        g = (
            direction.vector
            if isinstance(direction, BiasDirection)
            else np.asarray(direction, dtype=np.float64)
        )
    if exclude is None:
        spec = load_bolukbasi_wordlists()["specific_full"]
        exclude = {f(w) for w in spec for f in (str, str.lower, str.upper, str.title)}
    ex = set(exclude)
    vocab = original.index_to_key[: vocabulary_limit or len(original)]
    spaces = {"debiased": debiased} if isinstance(debiased, KeyedVectors) else dict(debiased)
    if "original" in spaces:
        raise ValueError("'original' names the undebiased embedding; give the debiased ones other names")
    candidates = [w for w in vocab if w not in ex and all(w in sp.key_to_index for sp in spaces.values())]
    bias = bias_by_projection(original, candidates, g)
    by_word = dict(zip(candidates, bias, strict=True))
    out: dict[str, dict[str, TestResult]] = {}
    m_c, f_c = most_biased_words(original, g, n_cluster, candidates=candidates)
    m_k, f_k = most_biased_words(original, g, n_classify, candidates=candidates)
    for name, space in {"original": original, **spaces}.items():
        cw = m_c + f_c
        kw = m_k + f_k
        out[name] = {
            "cluster": cluster_recovery(space, [1] * n_cluster + [0] * n_cluster, words=cw,
                                        random_state=random_state, n_permutations=n_permutations),
            "classifier": classifier_recovery(space, [1] * n_classify + [0] * n_classify, words=kw,
                                              train_size=train_size, random_state=random_state),
            "neighbours": neighbour_recovery(space, [by_word[w] for w in kw], words=kw, pool_words=candidates,
                                             pool_bias=bias, k=k, random_state=random_state,
                                             n_permutations=n_permutations),
        }  # fmt: skip
    return out


def recovery_table(results: Mapping[str, Mapping[str, TestResult]]) -> pd.DataFrame:
    """One row per space and test (statistic, p-value, n) of :func:`gonen_goldberg_tests`' output."""
    rows = []
    for space, tests in results.items():
        for test, r in tests.items():
            rows.append(
                {"space": space, "test": test, "statistic": r.statistic, "p_value": r.p_value, "n": r.n}
            )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- language models
@dataclass(frozen=True)
class RecoveryResult:
    """Gonen & Goldberg's tests on one model: ``tests`` maps ``"cluster"``, ``"classifier"`` and, when
    computed, ``"neighbours"`` to their :class:`~biaskit.core.results.TestResult`."""

    tests: Mapping[str, TestResult]

    def __getitem__(self, name: str) -> TestResult:
        return self.tests[name]

    def summary(self, alpha: float = 0.05) -> str:
        """One line per test: its statistic, p-value and whether it recovers the labels at ``alpha``."""
        lines = []
        for name, r in self.tests.items():
            found = r.p_value is not None and r.p_value < alpha
            lines.append(f"{name}: {r.statistic:.3f} (p {format_p_value(r.p_value)}) -> "
                         + ("recovers the labels" if found else "not above chance")
                         + f" at alpha = {alpha}")  # fmt: skip
        return "\n".join(lines)


def contextual_recovery(
    lm: Any,
    words: Sequence[str],
    labels: Sequence[Any] | np.ndarray,
    *,
    pool_bias: Mapping[str, float] | None = None,
    k: int = 20,
    n_permutations: int = 2000,
    random_state: int = 0,
) -> RecoveryResult:
    r"""Gonen & Goldberg's tests on a language model: ``words`` represented by the model
    (:func:`biaskit.embeddings.contextual.contextual_word_vectors`: the mean of the word's own last hidden
    states in bleached templates, centred over the words), labelled by ``labels`` (two values).

    Returns a :class:`RecoveryResult` with ``"cluster"``, ``"classifier"`` and, when ``pool_bias``
    (pool word -> original bias, read on the undebiased model) is given, ``"neighbours"``: the correlation of
    the labels (the second label value as +1) with the share of male-biased pool words among each word's
    ``k`` nearest.
    The representation of a word is :math:`h_w = \frac{1}{|T|}\sum_{t \in T} h_L(w \mid t) - \bar h`
    (its last hidden states over the templates T, centred over the words).

    Examples
    --------
    >>> from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, toy_masked_lm
    >>> labels = [1] * len(TOY_MALE) + [0] * len(TOY_FEMALE)
    >>> result = contextual_recovery(toy_masked_lm(), [*TOY_MALE, *TOY_FEMALE], labels, n_permutations=200)
    >>> sorted(result.tests)
    ['classifier', 'cluster']
    """
    from biaskit.embeddings.contextual import contextual_word_vectors

    words = list(words)
    pool = [w for w in (pool_bias or {}) if w not in set(words)]
    kv = contextual_word_vectors(lm, [*words, *pool])
    y, _ = _binary_labels(labels, len(words))
    out = {
        "cluster": cluster_recovery(
            kv, y, words=words, n_permutations=n_permutations, random_state=random_state
        ),
        "classifier": classifier_recovery(kv, y, words=words, random_state=random_state),
    }
    if pool_bias is not None:
        out["neighbours"] = neighbour_recovery(kv, 2.0 * y - 1, words=words, pool_words=pool,
                                               pool_bias=[pool_bias[w] for w in pool], k=k,
                                               n_permutations=n_permutations,
                                               random_state=random_state)  # fmt: skip
    return RecoveryResult(out)


def _toy_gendered() -> tuple[list[str], np.ndarray]:
    """The toy male and female words and their labels (1 = male)."""
    from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE

    return [*TOY_MALE, *TOY_FEMALE], np.array([1] * len(TOY_MALE) + [0] * len(TOY_FEMALE))


def _cluster_example() -> TestResult:
    """k-means recovery of the toy male / female words from the toy vectors."""
    from biaskit.metrics.toys import toy_vectors

    words, y = _toy_gendered()
    return cluster_recovery(toy_vectors(), y, words=words, n_permutations=200)


def _classifier_example() -> TestResult:
    """SVM recovery of the toy male / female words from the toy vectors."""
    from biaskit.metrics.toys import toy_vectors

    words, y = _toy_gendered()
    return classifier_recovery(toy_vectors(), y, words=words, n_splits=4)


def _neighbours_example() -> TestResult:
    """Bias by neighbours of the toy maths and arts words (maths +1, arts -1) among the gendered words."""
    from biaskit.metrics.toys import TOY_X, TOY_Y, toy_vectors

    words, y = _toy_gendered()
    values = [1.0] * len(TOY_X) + [-1.0] * len(TOY_Y)
    pool_bias = dict(zip(words, (2.0 * y - 1).tolist(), strict=True))
    return neighbour_recovery(
        toy_vectors(), values, words=[*TOY_X, *TOY_Y], pool_bias=pool_bias, k=4, n_permutations=200
    )


def _contextual_example() -> RecoveryResult:
    """The recovery tests on the toy masked model's representations of the toy male / female words."""
    from biaskit.metrics.toys import toy_masked_lm

    words, y = _toy_gendered()
    return contextual_recovery(toy_masked_lm(), words, y, n_permutations=200)


# --------------------------------------------------------------------------- the batch grid
def _gendered_words(q: Any) -> tuple[list[str], np.ndarray, str]:
    """The words of a WEAT query's attribute sets A and B, labelled 1 (A) and 0 (B), and their names."""
    return [*q.A, *q.B], np.array([1] * len(q.A) + [0] * len(q.B)), f"{q.names[2]} vs {q.names[3]}"


def _present(vectors: Any, words: list[str], y: np.ndarray) -> tuple[list[str], np.ndarray, int]:
    """The words with a vector (the others dropped and counted)."""
    keep = [i for i, w in enumerate(words) if w in vectors.key_to_index]
    return [words[i] for i in keep], y[keep], len(words) - len(keep)


def _recovery_grid(test: Callable[..., TestResult]) -> GridSupport:
    """Grid support of a recovery test on word vectors: can the split of the attribute words A / B be read
    from the vectors (the dataset's A and B as the two labels)?"""

    def run(call: GridCall) -> list[dict[str, Any]]:
        words, y, name = _gendered_words(call.data)
        words, y, dropped = _present(call.model, words, y)
        extra = {"n_permutations": int(call.options["n_permutations"])} if test is cluster_recovery else {}
        res = test(call.model, y, words=words, random_state=int(call.options["random_state"]), **extra)
        row = GridSupport.rows_from_result(res, targets=name, attributes="")[0]
        row["note"] = f"words without a vector left out: {dropped}" if dropped else ""
        return [row]

    return GridSupport("words", run)


def contextual_grid_cell(call: GridCall) -> list[dict[str, Any]]:
    """One cell of a batch grid: the recovery tests on a language model's representations of the attribute
    words A and B, one row per test (clustering, classifier)."""
    words, y, name = _gendered_words(call.data)
    res = contextual_recovery(
        call.model, words, y, n_permutations=int(call.options["n_permutations"]),
        random_state=int(call.options["random_state"]),
    )  # fmt: skip
    return [
        {**GridSupport.rows_from_result(r, targets=name, attributes="")[0], "bias_type": test}
        for test, r in res.tests.items()
    ]


# --------------------------------------------------------------------------- registry
#: the fields the four recovery tests share
_RECOVERY = {
    "inputs": ("word sets",),
    "section": "seed 000 section 3.4.1 and seed 002 sections 2.3.1, 2.6.1 (citing Gonen & Goldberg 2019)",
}
register_metric(
    "gg_clustering",
    label="Recovery: k-means clustering accuracy (Gonen & Goldberg)",
    family="word vectors",
    model_kinds=("static",),
    directional=False,
    test="permutation test of the labels against the fixed clustering",
    citation=GG_CITATION + ", section 4",
    entry_point=cluster_recovery,
    grid=_recovery_grid(cluster_recovery),
    example=_cluster_example,
    summary="Whether words labelled by gender still fall into two gendered clusters after debiasing.",
    **_RECOVERY,
)
register_metric(
    "gg_classifier",
    label="Recovery: RBF-SVM classification accuracy (Gonen & Goldberg)",
    family="word vectors",
    model_kinds=("static",),
    directional=False,
    test="exact binomial test of the held-out accuracy against the majority share",
    citation=GG_CITATION + ", section 4",
    entry_point=classifier_recovery,
    grid=_recovery_grid(classifier_recovery),
    example=_classifier_example,
    summary="Whether a classifier can still recover a word's gender from its debiased vector.",
    **_RECOVERY,
)
register_metric(
    "gg_neighbours",
    label="Recovery: bias by neighbours (Gonen & Goldberg)",
    family="word vectors",
    model_kinds=("static",),
    directional=True,
    test="permutation test of the Pearson correlation (one-sided)",
    citation=GG_CITATION + ", section 4",
    entry_point=neighbour_recovery,
    example=_neighbours_example,
    summary="Correlation of a word's original bias with the male share of its nearest neighbours.",
    no_grid="two models: each word's bias in the original vectors and its neighbours in the debiased ones "
    "(a grid cell gives one model); call neighbour_recovery with both (notebook 17)",
    **_RECOVERY,
)
register_metric(
    "gg_contextual",
    label="Recovery on a language model's word representations (Gonen & Goldberg)",
    family="language models",
    model_kinds=("masked", "causal"),
    directional=False,
    test="permutation test (clustering, neighbours) and exact binomial test (classifier), "
    "as for word vectors",
    citation=GG_CITATION + ", section 4; representations as in May et al. (2019) and Delobelle et al. (2022)",
    entry_point=contextual_recovery,
    grid=GridSupport("words", contextual_grid_cell),
    example=_contextual_example,
    returns="RecoveryResult (cluster, classifier, neighbours: TestResult each)",
    summary="Whether the gender of words can still be read from a (debiased) language model's "
    "representations.",
    **_RECOVERY,
)
