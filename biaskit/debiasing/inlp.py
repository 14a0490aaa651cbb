r"""Iterative Nullspace Projection (INLP): remove every linear direction from which gender can be read.

Ravfogel, Elazar, Gonen, Twiton & Goldberg (2020), "Null it out: guarding protected attributes by
iterative nullspace projection", ACL, section 3 and Algorithm 1 (their code:
``shauli-ravfogel/nullspace_projection``, ``src/debias.py``).  Seed 002 (Barza 2023) section 2.6.1
reviews it as the answer to Gonen & Goldberg (2019): hard debiasing removes one direction, but "the
gender subspace is spanned by dozens to hundreds of orthogonal directions".

The algorithm
-------------
Given representations :math:`X` (rows) and the protected labels :math:`z` (e.g. male / female):

.. math::
   P_0 = I;\qquad \text{for } i = 1 \dots n:\quad
   W_i = \mathrm{train}(X P_{i-1},\ z), \qquad
   R_i = \mathrm{proj}_{\mathrm{row}(W_i)}
       = B_i B_i^{\top}\ \ (B_i \text{ an orthonormal basis of } W_i^{\top}),

.. math::
   P_i = I - \mathrm{proj}_{\mathrm{row}(R_1 + \dots + R_i)} ,

so :math:`P_i` projects on the intersection of the nullspaces :math:`N(W_1) \cap \dots \cap N(W_i)`
(the authors' ``get_projection_to_intersection_of_nullspaces``), and :math:`X P_n` is the guarded
representation.  A linear classifier trained on :math:`X P_{i-1}` has its weights in the row space of
that data (the regularised solution lies in the span of the data), so each :math:`W_i` is orthogonal to
the earlier ones and :math:`P_n` equals the product :math:`P_{N(W_n)} \cdots P_{N(W_1)}` of the
single nullspace projections of the paper's Algorithm 1 (``tests/debiasing/test_debiasing_methods.py`` checks
this against an independent implementation through :func:`scipy.linalg.null_space`).

The classifier is the authors' choice for word vectors: a linear SVM without intercept
(:class:`sklearn.svm.LinearSVC` with ``fit_intercept=False, dual=False``), one weight vector per class
beyond two.  An iteration whose classifier scores below ``min_accuracy`` on the evaluation data
stops the loop (the authors' code ``continue``-s, which with a deterministic classifier retrains the
same classifier on the same data, i.e. changes nothing afterwards).  35 iterations on 300-d GloVe in
the paper; on our 100-d control vectors a binary classifier removes one direction per iteration.

Two degenerate fits are refused with a WARNING (``stopped_`` says why), never run to the end:

* the classifier is **at chance**: its accuracy on the evaluation data is no better than always
  guessing the larger class (``stop_at_chance``); nothing it found is removed.  Giving ``X_dev`` makes
  this the authors' stopping rule on held-out data (on the training data a linear classifier in many
  dimensions is rarely at chance, so the loop would go on removing directions that only fit noise);
* the **rank would reach the dimension**: removing the classifier's directions would leave nothing of
  the space (``n_iterations`` as large as ``d`` used to zero every vector without a word).

After fitting, :meth:`INLP.held_out_probe` trains a fresh linear probe (logistic regression) on the
projected training rows and scores it on projected held-out rows: the test Ravfogel et al. use to show
what a linear classifier can still read, reported beside INLP's own last accuracy (``accuracies_[-1]``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.linalg
from gensim.models import KeyedVectors
from sklearn.base import clone
from sklearn.svm import LinearSVC

from biaskit.data.wordlists import OOVPolicy, resolve_words

logger = logging.getLogger(__name__)

__all__ = ["INLP", "held_out_rows", "nullspace_intersection_projection", "rowspace_projection"]


def rowspace_projection(W: np.ndarray) -> np.ndarray:
    """Orthogonal projection on the row space of ``W`` (k x d): :math:`B B^T`, ``B = orth(W^T)``.

    Examples
    --------
    >>> import numpy as np
    >>> P = rowspace_projection(np.array([[1.0, 1.0, 0.0]]))
    >>> P.shape, round(float(np.trace(P)), 3), bool(np.allclose(P @ P, P))
    ((3, 3), 1.0, True)
    """
    W = np.atleast_2d(np.asarray(W, dtype=np.float64))
    if np.allclose(W, 0):
        return np.zeros((W.shape[1], W.shape[1]))
    B = scipy.linalg.orth(W.T)
    return B @ B.T


def nullspace_intersection_projection(rowspace_projections: Sequence[np.ndarray], dim: int) -> np.ndarray:
    """Projection on the intersection of the nullspaces:
    :math:`I - \\mathrm{proj}_{\\mathrm{row}(\\sum_i R_i)}`.

    Examples
    --------
    >>> import numpy as np
    >>> R1 = rowspace_projection(np.array([[1.0, 0.0, 0.0]]))
    >>> R2 = rowspace_projection(np.array([[0.0, 1.0, 0.0]]))
    >>> P = nullspace_intersection_projection([R1, R2], 3)
    >>> bool(np.allclose(P, np.diag([0.0, 0.0, 1.0])))
    True
    """
    if not rowspace_projections:
        return np.eye(dim)
    Q = np.sum(rowspace_projections, axis=0)
    return np.eye(dim) - rowspace_projection(Q)


def _default_classifier(random_state: int | None) -> LinearSVC:
    return LinearSVC(fit_intercept=False, class_weight=None, dual=False, random_state=random_state)


class INLP:
    """Iterative Nullspace Projection (Ravfogel et al. 2020, Algorithm 1); see the module docstring.

    Parameters
    ----------
    n_iterations:
        Classifiers to train and null out (35 in the paper's word-vector experiment).
    classifier:
        A scikit-learn linear classifier with ``coef_`` (cloned at every iteration); default
        ``LinearSVC(fit_intercept=False, dual=False, random_state=random_state)``, the authors'.
    min_accuracy:
        Stop when a classifier's accuracy on the evaluation data (``X_dev`` or, without it, the
        training data) falls below this (0: never stop early).
    stop_at_chance:
        Stop, with a WARNING, when a classifier's accuracy on the evaluation data is at or below
        chance (the share of the larger class there): its direction is not removed.
    random_state:
        Seed of the default classifier.

    Attributes
    ----------
    projection_ : (d, d) :math:`P_n` (symmetric, idempotent).
    coefs_ : list of the weight matrices :math:`W_i`.
    rowspace_projections_ : list of :math:`R_i`.
    accuracies_ : accuracy of each classifier on the evaluation data, before its direction is removed.
    chance_ : the accuracy of always guessing the larger class of the evaluation data.
    stopped_ : why the loop ended before ``n_iterations`` (``None`` when it ran them all).

    Examples
    --------
    >>> from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, toy_vectors
    >>> X = toy_vectors()[list(TOY_MALE + TOY_FEMALE)]
    >>> inlp = INLP(n_iterations=3).fit(X, [1] * len(TOY_MALE) + [0] * len(TOY_FEMALE))
    >>> inlp.projection_.shape, len(inlp.rowspace_projections_) <= 3
    ((24, 24), True)
    """

    def __init__(
        self,
        n_iterations: int = 35,
        *,
        classifier: Any | None = None,
        min_accuracy: float = 0.0,
        stop_at_chance: bool = True,
        random_state: int | None = 0,
    ) -> None:
        if n_iterations < 1:
            raise ValueError(f"n_iterations must be at least 1, got {n_iterations}")
        self.n_iterations = n_iterations
        self.classifier = classifier
        self.min_accuracy = min_accuracy
        self.stop_at_chance = stop_at_chance
        self.random_state = random_state

    def _new_classifier(self) -> Any:
        return _default_classifier(self.random_state) if self.classifier is None else clone(self.classifier)

    def fit(
        self,
        X: np.ndarray,
        y: Sequence[Any] | np.ndarray,
        *,
        X_dev: np.ndarray | None = None,
        y_dev: Sequence[Any] | np.ndarray | None = None,
        progress: Callable[[int, float], None] | None = None,
    ) -> INLP:
        """Learn :math:`P_n` from ``X`` (n x d) and labels ``y``; ``X_dev, y_dev`` score each classifier."""
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y)
        if X.ndim != 2 or X.shape[0] != y.shape[0]:
            raise ValueError(f"X must be (n, d) with one label per row; got X {X.shape}, y {y.shape}")
        if np.unique(y).size < 2:
            raise ValueError("INLP needs at least two classes in y")
        if (X_dev is None) != (y_dev is None):
            raise ValueError("give both X_dev and y_dev, or neither")
        Xd = X if X_dev is None else np.asarray(X_dev, dtype=np.float64)
        yd = y if y_dev is None else np.asarray(y_dev)
        dim = X.shape[1]
        P = np.eye(dim)
        _, counts = np.unique(yd, return_counts=True)
        self.chance_ = float(counts.max() / counts.sum())
        self.coefs_: list[np.ndarray] = []
        self.rowspace_projections_: list[np.ndarray] = []
        self.accuracies_: list[float] = []
        self.stopped_: str | None = None
        where = "held-out" if X_dev is not None else "training"
        for i in range(self.n_iterations):
            clf = self._new_classifier().fit(X @ P, y)
            acc = float(clf.score(Xd @ P, yd))
            self.accuracies_.append(acc)
            if progress is not None:
                progress(i, acc)
            if acc < self.min_accuracy:
                self.stopped_ = (
                    f"iteration {i + 1}: accuracy {acc:.3f} below min_accuracy {self.min_accuracy:.3f}"
                )
                logger.info("INLP: %s; stopping", self.stopped_)
                break
            if self.stop_at_chance and acc <= self.chance_ + 1e-12:
                self.stopped_ = (
                    f"iteration {i + 1} of {self.n_iterations}: the classifier's {where} accuracy "
                    f"{acc:.3f} is at chance (larger class {self.chance_:.3f})"
                )
                logger.warning(
                    "INLP stopped at %s; its direction is not removed, %d direction(s) removed in all "
                    "(%d %s rows, %d dimensions)", self.stopped_, len(self.coefs_), Xd.shape[0], where, dim,
                )  # fmt: skip
                break
            W = np.atleast_2d(np.asarray(clf.coef_, dtype=np.float64))
            R = rowspace_projection(W)
            P_next = nullspace_intersection_projection([*self.rowspace_projections_, R], dim)
            if np.trace(P_next) < 0.5:  # nothing of the space would be left
                removed = round(float(dim - np.trace(P)))
                self.stopped_ = (f"iteration {i + 1} of {self.n_iterations}: removing its direction(s) would "
                                 f"remove all {dim} dimensions")  # fmt: skip
                logger.warning(
                    "INLP stopped at %s (rank %d removed so far); ask for fewer iterations than dimensions",
                    self.stopped_, removed,
                )  # fmt: skip
                break
            self.coefs_.append(W)
            self.rowspace_projections_.append(R)
            P = P_next
        self.projection_ = P
        self.n_features_in_ = dim
        return self

    def held_out_probe(
        self,
        X_train: np.ndarray,
        y_train: Sequence[Any] | np.ndarray,
        X_test: np.ndarray,
        y_test: Sequence[Any] | np.ndarray,
    ) -> dict[str, Any]:
        """What a fresh linear classifier can still read after INLP: a logistic regression trained on
        the projected ``X_train`` and scored on the projected ``X_test`` (Ravfogel et al. 2020, section 6:
        a new classifier after the projection).

        Returns ``accuracy``, ``chance`` (the larger class's share of ``y_test``), ``p_value`` (exact
        one-sided binomial test of the correct predictions against ``chance``), ``n`` (test rows) and
        ``accuracy_before`` (the same probe without the projection).
        """
        from sklearn.linear_model import LogisticRegression

        from biaskit.core.stats import binomial_test

        yt, ys = np.asarray(y_train), np.asarray(y_test)
        if np.unique(yt).size < 2 or ys.size == 0:
            raise ValueError("the probe needs two classes in y_train and at least one test row")
        Xtr, Xte = np.asarray(X_train, dtype=np.float64), np.asarray(X_test, dtype=np.float64)

        def score(A: np.ndarray, B: np.ndarray) -> tuple[float, int]:
            pred = LogisticRegression(max_iter=2000).fit(A, yt).predict(B)
            return float(np.mean(pred == ys)), int(np.sum(pred == ys))

        acc, k = score(self.transform(Xtr), self.transform(Xte))
        before, _ = score(Xtr, Xte)
        _, counts = np.unique(ys, return_counts=True)
        chance = float(counts.max() / counts.sum())
        p = binomial_test(k, int(ys.size), p0=chance, alternative="greater").p_value
        return {
            "accuracy": acc,
            "chance": chance,
            "p_value": float(p),
            "n": int(ys.size),
            "accuracy_before": before,
        }

    @property
    def rank_removed_(self) -> int:
        """Dimensions removed: d - rank(:math:`P_n`)."""
        return round(float(self.n_features_in_ - np.trace(self.projection_)))

    def transform(self, X: np.ndarray) -> np.ndarray:
        """:math:`X P_n` (rows projected on the intersection of the nullspaces)."""
        if not hasattr(self, "projection_"):
            raise ValueError("INLP is not fitted: call fit(X, y) first")
        X = np.asarray(X, dtype=np.float64)
        if X.shape[-1] != self.n_features_in_:
            raise ValueError(f"fitted on {self.n_features_in_}-d data, got {X.shape[-1]}-d")
        return X @ self.projection_

    def fit_transform(self, X: np.ndarray, y: Sequence[Any] | np.ndarray, **fit_params: Any) -> np.ndarray:
        return self.fit(X, y, **fit_params).transform(X)

    # ------------------------------------------------------------------ word vectors
    def fit_words(
        self,
        vectors: KeyedVectors,
        word_sets: Mapping[str, Sequence[str]],
        *,
        normalize: bool = True,
        policy: OOVPolicy = "drop",
    ) -> INLP:
        """Fit on word sets, one class per set (e.g. ``{"male": [...], "female": [...], "neutral": [...]}``,
        the paper's three classes of the most male-, female- and least-biased words).  ``normalize``
        scales the vectors to unit length first (as the paper's GloVe vectors)."""
        X, y = self.word_set_matrix(vectors, word_sets, normalize=normalize, policy=policy)
        return self.fit(X, y)

    @staticmethod
    def word_set_matrix(
        vectors: KeyedVectors,
        word_sets: Mapping[str, Sequence[str]],
        *,
        normalize: bool = True,
        policy: OOVPolicy = "drop",
    ) -> tuple[np.ndarray, np.ndarray]:
        """The rows and labels of ``word_sets`` (the OOV ``policy`` applied to each set)."""
        rows, labels = [], []
        for label, words in word_sets.items():
            kept = resolve_words(
                list(words), vectors.key_to_index, name=f"INLP class {label!r}", policy=policy
            ).kept
            rows.extend(kept)
            labels.extend([label] * len(kept))
        if len(set(labels)) < 2:
            raise ValueError("INLP needs at least two non-empty word sets")
        X = np.asarray(vectors[rows], dtype=np.float64)
        if normalize:
            X = X / np.linalg.norm(X, axis=1, keepdims=True)
        return X, np.array(labels)

    def transform_vectors(self, vectors: KeyedVectors, *, normalize: bool = True) -> KeyedVectors:
        """Every vector of ``vectors`` projected with :math:`P_n` (after scaling to unit length when
        ``normalize``, as in :meth:`fit_words`), as new float32 ``KeyedVectors``."""
        X = np.asarray(vectors.vectors, dtype=np.float64)
        if normalize:
            n = np.linalg.norm(X, axis=1, keepdims=True)
            X = np.divide(X, n, out=np.zeros_like(X), where=n > 0)
        out = KeyedVectors(vector_size=X.shape[1], dtype=np.float32)
        out.add_vectors(list(vectors.index_to_key), self.transform(X).astype(np.float32))
        return out


def held_out_rows(y: np.ndarray, share: float, *, random_state: int = 0) -> np.ndarray:
    """A boolean mask keeping ``share`` of each class of ``y`` out (at least one row per class, and at
    least one left in), drawn with ``numpy.random.default_rng(random_state)``.

    Examples
    --------
    >>> import numpy as np
    >>> mask = held_out_rows(np.array([0, 0, 0, 0, 1, 1, 1, 1]), 0.25)
    >>> int(mask.sum()), mask.dtype.name
    (2, 'bool')
    """
    y = np.asarray(y)
    rng = np.random.default_rng(random_state)
    out = np.zeros(y.size, dtype=bool)
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        if idx.size < 2:
            raise ValueError(
                f"class {c!r} has {idx.size} row(s): a held-out split needs at least two of each"
            )
        k = min(max(1, round(share * idx.size)), idx.size - 1)
        out[rng.choice(idx, size=k, replace=False)] = True
    return out
