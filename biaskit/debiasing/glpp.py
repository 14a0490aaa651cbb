"""Global-Locality Preserving Projection (GLPP) for refining word vectors.

Seed 000 section 3.3.6 (after Wang et al. 2022, "Global-locality preserving projection for word
embedding", Int. J. Mach. Learn. & Cyber. 13:2943-2956, equation (5)).  GLPP learns a linear map U
(M x m) from a "window" of word vectors and re-embeds any word vector x (M-dimensional) as
y = U^T x (m-dimensional), so that

* words that are k-nearest neighbours in the original space stay close (the *local* term of
  Locality Preserving Projections, He & Niyogi 2003), and
* the words as a whole stay spread out (the *global* term, weighted by eta).

Conventions
-----------
The seed writes the window as W in R^{M x N} with **columns** = words.  This module follows
scikit-learn: ``fit(X)`` takes ``X`` of shape ``(N, M)`` with **rows** = words, i.e. ``X = W^T``.
Every formula below is written in the seed's notation; the code computes the same M x M matrices
as ``X^T L X`` etc.  The projection matrix is stored as ``projection_`` = U (M x m, as in the seed)
and, for scikit-learn compatibility, ``components_`` = U^T (m x M); ``transform(X)`` returns
``(X - mean_) @ U`` = (U^T (W - mean))^T.

The algorithm (seed 000 section 3.3.6, steps 1-4)
-------------------------------------------------
1. kNN graph on the window: w_i and w_j are connected when w_i is among the k nearest neighbours
   (Euclidean) of w_j **or** w_j among those of w_i (symmetrised kNN graph).
2. Heat-kernel weights on the edges, S_ij = exp(-||w_i - w_j||^2 / sigma^2), else 0
   (sigma^2 = 1 in the seed; ``sigma2="median"`` uses the median squared kNN distance, which keeps
   the weights away from 0 / 1 whatever the scale of the vectors; ``sigma2=inf`` gives 0/1 weights).
   D = diag(sum_j S_ij) (degrees), L = D - S (graph Laplacian).  S, D, L are ``scipy.sparse``; the
   M x M matrices W L W^T, W D W^T and C are formed from sparse x dense products, never N x N dense.
3. Local scatter  W L W^T = 1/2 sum_ij S_ij (w_i - w_j)(w_i - w_j)^T.
   Global scatter C.  The seed (and the abstract of Wang et al.) does not spell C out; we use

   * ``global_scatter="total"`` (default): the total scatter
     C = sum_i (w_i - mean)(w_i - mean)^T = W H W^T = 1/(2N) sum_ij (w_i - w_j)(w_i - w_j)^T,
     H = I - 11^T/N: the unweighted scatter over *all* pairs of words, i.e. the PCA objective
     (the usual global term of methods that combine PCA and LPP); it is cheap (M x M) and needs no
     N x N matrix;
   * ``global_scatter="nonlocal"``: the scatter of the pairs weighted by (1 - S_ij),
     C = 1/2 sum_ij (1 - S_ij)(w_i - w_j)(w_i - w_j)^T = N W H W^T - W L W^T, which counts only
     what the kNN graph does not already hold close.

   With ``eta_scaling="trace"`` (default) C is rescaled so that tr(C) = tr(W D W^T): eta is then
   dimensionless and comparable to the LPP Rayleigh quotients u^T W L W^T u / u^T W D W^T u, which
   lie in [0, 2]; ``eta_scaling="none"`` uses C as defined (eta then depends on N and the scale).
4. Solve the generalised symmetric eigenproblem (seed equation 3.6)

       (W L W^T - eta C) u = lambda W D W^T u

   with :func:`scipy.linalg.eigh` after the ridge  B = W D W^T + reg * tr(W D W^T)/M * I  (W D W^T is
   singular when N < M or when the heat kernel underflows).  The solver returns B-orthonormal
   eigenvectors, U^T B U = I: every projected coordinate then has unit degree-weighted scatter,
   which *whitens* the space (directions of tiny variance are blown up to the same scale as the
   large ones) and changes every cosine similarity downstream.  ``scaling="unit"`` (default)
   rescales every column to unit Euclidean length, so that y_j = u_j^T x is the ordinary
   projection of x on the direction u_j (as Deng Cai's widely used LPP code does);
   ``scaling="B"`` keeps U^T B U = I.  Rescaling columns does not change the eigen-equation.

Which end of the spectrum
-------------------------
GLPP minimises the local scatter of the projection while maximising its global scatter,

    min_u  1/2 sum_ij S_ij (u^T w_i - u^T w_j)^2 - eta u^T C u = u^T (W L W^T - eta C) u
    s.t.   u^T W D W^T u = 1          (removes the arbitrary scale of u).

The Lagrangian u^T A u - lambda (u^T B u - 1) is stationary at A u = lambda B u, and there the
objective equals u^T A u = lambda.  The minimisers are therefore the eigenvectors of the
**smallest** eigenvalues (exactly as in LPP, where eta = 0).  Step 4.i of the seed reads "sort the
eigenvalues from highest to lowest and choose the first m"; taken literally this keeps the
directions of *largest* local scatter, the opposite of the stated aim.  The wording probably comes
from the equivalent form with S instead of L, (W S W^T + eta C) u = mu W D W^T u with mu = 1 - lambda
(used e.g. by Deng Cai's LPP code), where the *largest* mu are kept; with L, as in equation 3.6, the
smallest lambda are.  ``order="smallest"`` (default) follows the derivation; ``order="largest"``
reproduces the seed's literal wording.  (The seed also speaks of "N eigenvalues": the problem is
M x M, so there are M.)

A consequence worth knowing: when the data are centred and all degrees are equal (D = d I),
C = W H W^T = W D W^T / d and the global term only shifts every eigenvalue by a constant without
changing the eigenvectors.  The global term therefore acts through the difference between the
unweighted and the degree-weighted scatter, i.e. through words of unusually low or high degree
(isolated words versus words in dense clusters).

Reconstruction (seed step 6)
----------------------------
The seed reconstructs X_rec = U Y.  The columns of U are not orthogonal (whatever their scaling),
so U U^T is not a projection and U Y is not a reconstruction of x.  ``inverse_transform`` uses by default
(``inverse="pinv"``) the least-squares / minimum-norm solution x = (U^T)^+ y = U (U^T U)^{-1} y, the
orthogonal projection of x onto the span of U (the best reconstruction in that subspace, comparable with
PCA's); ``inverse="seed"`` gives the literal U Y.  The reconstruction error is the Frobenius norm
d(X_rec, X) = sqrt(sum_ij (X_rec_ij - X_ij)^2) of seed step 6 (:func:`reconstruction_error`).

Default parameters: k = 10, sigma^2 = 1 (the seed), eta = 0.5 (the seed gives no value; on a noisy
S-curve in 50-D, eta = 0.5 kept the most neighbours of the values tried, see ``tests/debiasing/test_glpp.py``;
``notebooks/09_glpp.ipynb`` shows the effect of eta on word vectors).

Reference: Wang, B., Sun, Y., Chu, Y., Zhao, Z., Yang, L., & Kuang, X. (2022).  Global-locality
preserving projection for word embedding.  Int. J. Mach. Learn. & Cyber. 13, 2943-2956.
He, X. & Niyogi, P. (2003).  Locality preserving projections.  NIPS 16.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from gensim.models import KeyedVectors
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.neighbors import NearestNeighbors
from sklearn.utils.validation import check_array, check_is_fitted

from biaskit.core.results import TestResult
from biaskit.data.wordlists import OOVPolicy, resolve_words

logger = logging.getLogger(__name__)

KnnBackend = Literal["sklearn", "pynndescent"]
GlobalScatter = Literal["total", "nonlocal"]
EigenOrder = Literal["smallest", "largest"]
InverseMethod = Literal["pinv", "seed"]
Scaling = Literal["unit", "B"]

SIMILARITY_BENCHMARKS: dict[str, str] = {
    "wordsim353": "wordsim353.tsv",
    "simlex999": "simlex999.txt",
}
# sha256 of the gensim 4.4.0 copies (data/similarity/PROVENANCE.md)
_SIMILARITY_SHA256: dict[str, str] = {
    "wordsim353": "f92a022fc2537793a15bc3a8c162ebcd74990e033a228bb6388cb71e4c0b1e1d",
    "simlex999": "d5e0501971478a511430ee880bd0121e94ac701ba86d90544d83e6d2ba3db05d",
}

__all__ = [
    "GLPP",
    "SIMILARITY_BENCHMARKS",
    "apply_to_keyed_vectors",
    "knn_graph",
    "load_similarity_benchmark",
    "neighbour_preservation",
    "frequency_predictability",
    "reconstruction_error",
    "window_split",
    "word_similarity_spearman",
]


# --------------------------------------------------------------------------- kNN graph
def _knn(
    X: np.ndarray, n_neighbors: int, backend: KnnBackend, random_state: int | None, n_jobs: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """Indices and squared Euclidean distances of the k nearest neighbours of every row, self excluded."""
    n = X.shape[0]
    if backend == "sklearn":
        nn = NearestNeighbors(n_neighbors=n_neighbors, algorithm="brute", metric="euclidean", n_jobs=n_jobs)
        nn.fit(X)
        dist, ind = nn.kneighbors()  # X=None: every point's neighbours, the point itself excluded
        return ind, dist.astype(np.float64) ** 2
    if backend == "pynndescent":
        try:
            from pynndescent import NNDescent
        except ImportError as exc:  # pragma: no cover - optional dependency
            raise ModuleNotFoundError(
                "knn_backend='pynndescent' needs the PyPI package pynndescent (pip install pynndescent)"
            ) from exc
        index = NNDescent(
            X,
            n_neighbors=n_neighbors + 1,
            metric="euclidean",
            random_state=random_state,
            n_jobs=1 if n_jobs is None else n_jobs,
        )
        ind_all, dist_all = index.neighbor_graph
        ind_all = np.asarray(ind_all)
        dist_all = np.asarray(dist_all, dtype=np.float64)
        # drop the point itself (normally in column 0; duplicates may move it), keep the first k others
        not_self = (ind_all != np.arange(n)[:, None]) & (ind_all >= 0)
        order = np.argsort(~not_self, axis=1, kind="stable")[:, :n_neighbors]
        ind = np.take_along_axis(ind_all, order, axis=1)
        dist = np.take_along_axis(dist_all, order, axis=1)
        ok = np.take_along_axis(not_self, order, axis=1)
        if not ok.all():
            raise RuntimeError(
                f"pynndescent returned fewer than {n_neighbors} neighbours for {int((~ok.all(1)).sum())} "
                "points; use knn_backend='sklearn'"
            )
        return ind, dist**2
    raise ValueError(f"knn_backend must be 'sklearn' or 'pynndescent', got {backend!r}")


def knn_graph(
    X: np.ndarray,
    n_neighbors: int = 10,
    *,
    sigma2: float | Literal["median"] = 1.0,
    backend: KnnBackend = "sklearn",
    random_state: int | None = 0,
    n_jobs: int | None = None,
) -> tuple[sp.csr_matrix, float]:
    """Heat-kernel weight matrix S of the symmetrised kNN graph (seed 000 section 3.3.6, steps 2-3).

    S_ij = exp(-||x_i - x_j||^2 / sigma^2) when x_i is among the ``n_neighbors`` nearest neighbours of
    x_j or x_j among those of x_i, else 0.  Rows of ``X`` are the points.  ``sigma2`` is sigma^2
    (1 in the seed), ``"median"`` for the median squared kNN distance, or ``inf`` for 0/1 weights.
    Returns the symmetric sparse ``S`` (CSR, no diagonal) and the sigma^2 used.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(10, 4))
    >>> S, sigma2 = knn_graph(X, n_neighbors=3)
    >>> S.shape, (S != S.T).nnz, sigma2
    ((10, 10), 0, 1.0)
    """
    n = X.shape[0]
    if not 1 <= n_neighbors < n:
        raise ValueError(f"n_neighbors must be in [1, {n - 1}] for {n} points, got {n_neighbors}")
    ind, d2 = _knn(X, n_neighbors, backend, random_state, n_jobs)
    if isinstance(sigma2, str):
        if sigma2 != "median":
            raise ValueError(f"sigma2 must be a positive number, inf or 'median', got {sigma2!r}")
        s2 = float(np.median(d2))
        if not s2 > 0:
            raise ValueError("sigma2='median': the median squared kNN distance is 0 (duplicated vectors?)")
    else:
        s2 = float(sigma2)
        if not s2 > 0:
            raise ValueError(f"sigma2 must be > 0, got {sigma2!r}")
    weights = np.ones_like(d2) if math.isinf(s2) else np.exp(-d2 / s2)
    rows = np.repeat(np.arange(n), n_neighbors)
    directed = sp.csr_matrix((weights.ravel(), (rows, ind.ravel())), shape=(n, n))
    # "i in N(j) or j in N(i)": union of the two directed graphs.  The weight depends only on the
    # distance, so the elementwise maximum gives the weight of every edge of the union.
    S = directed.maximum(directed.T).tocsr()
    S.setdiag(0)
    S.eliminate_zeros()
    return S, s2


# --------------------------------------------------------------------------- the estimator
class GLPP(TransformerMixin, BaseEstimator):
    """Global-Locality Preserving Projection (seed 000 section 3.3.6; Wang et al. 2022, eq. 5).

    Solves (W L W^T - eta C) U = Lambda W D W^T U and keeps ``n_components`` eigenvectors; see the
    module docstring for the definitions of S, D, L and C, the derivation of which end of the
    spectrum to keep, and the row (scikit-learn) versus column (seed) convention.

    Parameters
    ----------
    n_components:
        m, the reduced dimension (m < M).
    n_neighbors:
        k of the kNN graph.
    sigma2:
        sigma^2 of the heat kernel: a positive number (seed: 1), ``"median"`` (median squared kNN
        distance of the window) or ``float("inf")`` (0/1 weights).
    eta:
        Weight of the global scatter; ``eta=0`` is LPP (He & Niyogi 2003).
    reg:
        Ridge on the right-hand side: B = W D W^T + reg * tr(W D W^T) / M * I.
    knn_backend:
        ``"sklearn"`` (exact, brute force) or ``"pynndescent"`` (approximate, for large windows; its
        first call compiles with numba, which takes about a minute).
    center:
        Subtract the window's mean before projecting (the mean is added back by inverse_transform).
    global_scatter:
        ``"total"`` (default) or ``"nonlocal"``; see the module docstring.
    eta_scaling:
        ``"trace"`` (default: C rescaled to tr(C) = tr(W D W^T)) or ``"none"``.
    order:
        ``"smallest"`` (default, derived: minimises the objective) or ``"largest"`` (seed's wording).
    inverse:
        ``"pinv"`` (default: least-squares reconstruction U (U^T U)^{-1} y) or ``"seed"`` (U y).
    scaling:
        ``"unit"`` (default: unit-length columns of U) or ``"B"`` (U^T W D W^T U = I, whitened).
    random_state:
        Seed of the approximate kNN search (the exact backend and the eigen solver are deterministic).
    n_jobs:
        Threads for the kNN search.

    Attributes
    ----------
    projection_ : (M, m) U, unit-length (``scaling="unit"``) or B-orthonormal (``"B"``) columns, sign
        fixed so that the largest absolute entry of every column is positive.
    components_ : (m, M) U^T.
    eigenvalues_ : (m,) the kept eigenvalues, in the order of the columns of U.
    all_eigenvalues_ : (M,) every eigenvalue, ascending.
    mean_ : (M,) the window's mean (zeros when ``center=False``).
    sigma2_ : the sigma^2 used.
    affinity_ : sparse (N, N) S.  degrees_ : (N,) diagonal of D.
    local_scatter_, degree_scatter_, global_scatter_ : (M, M) W L W^T, W D W^T and C (C after scaling).
    lhs_matrix_, rhs_matrix_ : (M, M) A = W L W^T - eta C and the regularised B.

    Examples
    --------
    >>> from biaskit.metrics.toys import toy_vectors
    >>> X = toy_vectors().vectors
    >>> glpp = GLPP(n_components=2, n_neighbors=5).fit(X)
    >>> glpp.transform(X).shape, glpp.inverse_transform(glpp.transform(X)).shape
    ((36, 2), (36, 24))
    """

    def __init__(
        self,
        n_components: int = 2,
        *,
        n_neighbors: int = 10,
        sigma2: float | Literal["median"] = 1.0,
        eta: float = 0.5,
        reg: float = 1e-6,
        knn_backend: KnnBackend = "sklearn",
        center: bool = True,
        global_scatter: GlobalScatter = "total",
        eta_scaling: Literal["trace", "none"] = "trace",
        order: EigenOrder = "smallest",
        inverse: InverseMethod = "pinv",
        scaling: Scaling = "unit",
        random_state: int | None = 0,
        n_jobs: int | None = None,
    ) -> None:
        self.n_components = n_components
        self.n_neighbors = n_neighbors
        self.sigma2 = sigma2
        self.eta = eta
        self.reg = reg
        self.knn_backend = knn_backend
        self.center = center
        self.global_scatter = global_scatter
        self.eta_scaling = eta_scaling
        self.order = order
        self.inverse = inverse
        self.scaling = scaling
        self.random_state = random_state
        self.n_jobs = n_jobs

    # ------------------------------------------------------------------ validation
    def _check_params(self, n_samples: int, n_features: int) -> None:
        if not isinstance(self.n_components, (int, np.integer)) or not 1 <= self.n_components <= n_features:
            raise ValueError(
                f"n_components must be an integer in [1, {n_features}], got {self.n_components!r}"
            )
        if not isinstance(self.n_neighbors, (int, np.integer)) or not 1 <= self.n_neighbors < n_samples:
            raise ValueError(
                f"n_neighbors must be an integer in [1, {n_samples - 1}] for a window of {n_samples} "
                f"words, got {self.n_neighbors!r}"
            )
        if not (np.isfinite(self.eta) and self.eta >= 0):
            raise ValueError(f"eta must be a finite number >= 0, got {self.eta!r}")
        if not (np.isfinite(self.reg) and self.reg >= 0):
            raise ValueError(f"reg must be a finite number >= 0, got {self.reg!r}")
        for name, value, allowed in (
            ("global_scatter", self.global_scatter, ("total", "nonlocal")),
            ("eta_scaling", self.eta_scaling, ("trace", "none")),
            ("order", self.order, ("smallest", "largest")),
            ("inverse", self.inverse, ("pinv", "seed")),
            ("scaling", self.scaling, ("unit", "B")),
            ("knn_backend", self.knn_backend, ("sklearn", "pynndescent")),
        ):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {value!r}")

    # ------------------------------------------------------------------ fitting
    def fit(self, X: Any, y: Any = None) -> GLPP:
        """Learn U from the window ``X`` (N words x M dimensions; the seed's W transposed)."""
        X = check_array(X, dtype=np.float64, ensure_min_samples=3)
        n, m_dim = X.shape
        self._check_params(n, m_dim)
        if n < m_dim:
            logger.warning(
                "GLPP window has fewer words (%d) than dimensions (%d): W D W^T is singular and only "
                "the ridge reg=%g makes the problem solvable",
                n,
                m_dim,
                self.reg,
            )
        self.n_features_in_ = m_dim
        self.mean_ = X.mean(axis=0) if self.center else np.zeros(m_dim)
        Xc = X - self.mean_

        S, s2 = knn_graph(
            Xc,
            int(self.n_neighbors),
            sigma2=self.sigma2,
            backend=self.knn_backend,
            random_state=self.random_state,
            n_jobs=self.n_jobs,
        )
        deg = np.asarray(S.sum(axis=1)).ravel()
        if np.any(deg <= 0):
            n_zero = int(np.sum(deg <= 0))
            if n_zero == n:
                raise ValueError(
                    f"every heat-kernel weight underflowed to 0 with sigma2={s2:g}: the squared kNN "
                    f"distances are far larger than sigma^2; use sigma2='median' or a larger sigma2"
                )
            logger.warning(
                "%d of %d words have degree 0 (their heat-kernel weights underflowed with sigma2=%g); "
                "they do not enter the local scatter. Consider sigma2='median'.",
                n_zero,
                n,
                s2,
            )
        pos = deg[deg > 0]
        if pos.size and pos.max() / pos.min() > 1e12:
            logger.warning(
                "heat-kernel degrees span %.1e orders of magnitude with sigma2=%g; a few dense words "
                "dominate W D W^T. sigma2='median' gives balanced weights.",
                math.log10(pos.max() / pos.min()),
                s2,
            )

        # M x M products from sparse x dense: W D W^T, W S W^T, W L W^T = W D W^T - W S W^T
        degree_scatter = Xc.T @ (deg[:, None] * Xc)
        local = degree_scatter - Xc.T @ (S @ Xc)
        local = (local + local.T) / 2
        degree_scatter = (degree_scatter + degree_scatter.T) / 2
        total = Xc.T @ (Xc - Xc.mean(axis=0))  # sum_i (x_i - mean)(x_i - mean)^T
        C = n * total - local if self.global_scatter == "nonlocal" else total
        C = (C + C.T) / 2
        tr_b = float(np.trace(degree_scatter))
        if not tr_b > 0:
            raise ValueError("W D W^T has zero trace: the window vectors are all equal or the graph is empty")
        if self.eta_scaling == "trace":
            tr_c = float(np.trace(C))
            scale = tr_b / tr_c if tr_c > 0 else 0.0
            C = C * scale
        A = local - self.eta * C
        B = degree_scatter + (self.reg * tr_b / m_dim) * np.eye(m_dim)
        try:
            evals, evecs = scipy.linalg.eigh(A, B)
        except np.linalg.LinAlgError as exc:
            raise np.linalg.LinAlgError(
                f"W D W^T + ridge is not positive definite (reg={self.reg:g}); increase reg ({exc})"
            ) from exc
        k = int(self.n_components)
        idx = np.arange(k) if self.order == "smallest" else np.arange(m_dim - 1, m_dim - 1 - k, -1)
        U = evecs[:, idx]
        if self.scaling == "unit":
            U = U / np.linalg.norm(U, axis=0)
        # deterministic sign: the entry of largest magnitude of every column is positive
        signs = np.sign(U[np.argmax(np.abs(U), axis=0), np.arange(k)])
        signs[signs == 0] = 1.0
        U = U * signs

        self.projection_ = U
        self.eigenvalues_ = evals[idx]
        self.all_eigenvalues_ = evals
        self.sigma2_ = s2
        self.affinity_ = S
        self.degrees_ = deg
        self.local_scatter_ = local
        self.degree_scatter_ = degree_scatter
        self.global_scatter_ = C
        self.lhs_matrix_ = A
        self.rhs_matrix_ = B
        self.n_samples_fit_ = n
        self._pinv = np.linalg.pinv(U)  # (m, M): least-squares inverse of y = U^T x
        return self

    @property
    def components_(self) -> np.ndarray:
        """U^T, shape (m, M) (scikit-learn convention)."""
        check_is_fitted(self, "projection_")
        return self.projection_.T

    # ------------------------------------------------------------------ projecting
    def transform(self, X: Any) -> np.ndarray:
        """Y = U^T (x - mean) for every row x of ``X`` (seed step 5), shape (n, m)."""
        check_is_fitted(self, "projection_")
        X = check_array(X, dtype=np.float64)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, GLPP was fitted on {self.n_features_in_}")
        return (X - self.mean_) @ self.projection_

    def inverse_transform(self, Y: Any) -> np.ndarray:
        """Reconstruct M-dimensional vectors from Y (seed step 6): pinv (default) or literal U y."""
        check_is_fitted(self, "projection_")
        Y = check_array(Y, dtype=np.float64)
        k = self.projection_.shape[1]
        if Y.shape[1] != k:
            raise ValueError(f"Y has {Y.shape[1]} columns, GLPP has {k} components")
        back = self.projection_.T if self.inverse == "seed" else self._pinv
        return Y @ back + self.mean_

    def reconstruction_error(self, X: Any, *, relative: bool = False) -> float:
        """d(X_rec, X) of seed step 6 for the rows of ``X`` (see :func:`reconstruction_error`)."""
        X = check_array(X, dtype=np.float64)
        rec = self.inverse_transform(self.transform(X))
        return reconstruction_error(X, rec, relative=relative, center=self.mean_ if relative else None)

    # ------------------------------------------------------------------ gensim KeyedVectors
    def fit_keyed_vectors(
        self, kv: KeyedVectors, words: Sequence[str] | None = None, *, policy: OOVPolicy = "drop"
    ) -> GLPP:
        """Fit on the vectors of ``words`` (default: every word of ``kv``, in its order)."""
        X, _ = _kv_matrix(kv, words, policy=policy, name="GLPP window")
        return self.fit(X)

    def transform_keyed_vectors(
        self, kv: KeyedVectors, words: Sequence[str] | None = None, *, policy: OOVPolicy = "drop"
    ) -> KeyedVectors:
        """New m-dimensional KeyedVectors holding U^T (x - mean) for ``words`` (default: all of ``kv``).

        Word order (and so frequency rank) is kept; a ``count`` attribute of ``kv`` is copied.
        """
        return apply_to_keyed_vectors(self, kv, words, policy=policy)


def apply_to_keyed_vectors(
    transformer: Any, kv: KeyedVectors, words: Sequence[str] | None = None, *, policy: OOVPolicy = "drop"
) -> KeyedVectors:
    """Apply any fitted scikit-learn transformer (GLPP, PCA, ...) to KeyedVectors; return new KeyedVectors.

    ``words`` (default: every word of ``kv``) keep their order (and so their frequency rank); a
    ``count`` attribute of ``kv`` is copied.  Missing words follow the OOV ``policy``.

    Examples
    --------
    >>> from sklearn.decomposition import PCA
    >>> from biaskit.metrics.toys import toy_vectors
    >>> kv = toy_vectors()
    >>> low = apply_to_keyed_vectors(PCA(n_components=3).fit(kv.vectors), kv)
    >>> low.vector_size, len(low) == len(kv)
    (3, True)
    """
    X, kept = _kv_matrix(kv, words, policy=policy, name="words to project")
    Y = np.asarray(transformer.transform(X))
    out = KeyedVectors(vector_size=Y.shape[1], dtype=np.float32)
    out.add_vectors(list(kept), Y.astype(np.float32))
    if "count" in getattr(kv, "expandos", {}):
        counts = np.asarray(kv.expandos["count"])[[kv.key_to_index[w] for w in kept]]
        out.allocate_vecattrs(attrs=["count"], types=[counts.dtype])
        out.expandos["count"][:] = counts
    return out


def _kv_matrix(
    kv: KeyedVectors, words: Sequence[str] | None, *, policy: OOVPolicy, name: str
) -> tuple[np.ndarray, tuple[str, ...]]:
    if not isinstance(kv, KeyedVectors):
        raise TypeError(f"expected gensim KeyedVectors, got {type(kv).__name__}")
    if words is None:
        kept = tuple(kv.index_to_key)
        return np.asarray(kv.vectors, dtype=np.float64), kept
    resolved = resolve_words(list(words), kv.key_to_index, name=name, policy=policy, min_size=1)
    idx = [kv.key_to_index[w] for w in resolved.kept]
    return np.asarray(kv.vectors[idx], dtype=np.float64), resolved.kept


# --------------------------------------------------------------------------- evaluation
def reconstruction_error(
    X: np.ndarray, X_rec: np.ndarray, *, relative: bool = False, center: np.ndarray | None = None
) -> float:
    """Frobenius distance d(X_rec, X) = sqrt(sum_ij (X_rec_ij - X_ij)^2) (seed 000 section 3.3.6, step 6).

    ``relative=True`` divides by ||X - center||_F (``center`` defaults to the column means of X), so
    that 0 is a perfect reconstruction and 1 is as bad as reconstructing every word by the mean.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[3.0, 0.0], [0.0, 4.0]])
    >>> zeros = np.zeros_like(X)
    >>> reconstruction_error(X, zeros), round(reconstruction_error(X, zeros, relative=True), 3)
    (5.0, 1.414)
    """
    X = np.asarray(X, dtype=np.float64)
    X_rec = np.asarray(X_rec, dtype=np.float64)
    if X.shape != X_rec.shape:
        raise ValueError(f"X and X_rec differ in shape: {X.shape} vs {X_rec.shape}")
    err = float(np.linalg.norm(X - X_rec))
    if not relative:
        return err
    mu = X.mean(axis=0) if center is None else np.asarray(center, dtype=np.float64)
    denom = float(np.linalg.norm(X - mu))
    return err / denom if denom > 0 else float("nan")


def neighbour_preservation(
    X_high: np.ndarray,
    X_low: np.ndarray,
    n_neighbors: int = 10,
    *,
    metric: str = "euclidean",
    return_per_point: bool = False,
) -> float | np.ndarray:
    """Share of every point's k nearest neighbours kept after the projection (seed step 6, 2nd check).

    For every row i: |kNN_high(i) ∩ kNN_low(i)| / k, with exact kNN (self excluded) under ``metric``
    ("euclidean" or "cosine") in the two spaces; the mean over points (or the per-point array).
    1 = every neighbourhood kept, k/(N-1) = what a random map keeps on average.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(30, 5))
    >>> neighbour_preservation(X, X, n_neighbors=5)
    1.0
    >>> round(neighbour_preservation(X, X[:, :2], n_neighbors=5), 3)
    0.4
    """
    X_high = np.asarray(X_high, dtype=np.float64)
    X_low = np.asarray(X_low, dtype=np.float64)
    if X_high.shape[0] != X_low.shape[0]:
        raise ValueError(f"X_high has {X_high.shape[0]} rows but X_low {X_low.shape[0]}")
    n = X_high.shape[0]
    if not 1 <= n_neighbors < n:
        raise ValueError(f"n_neighbors must be in [1, {n - 1}], got {n_neighbors}")
    if metric not in ("euclidean", "cosine"):
        raise ValueError(f"metric must be 'euclidean' or 'cosine', got {metric!r}")

    def knn(Z: np.ndarray) -> np.ndarray:
        return (
            NearestNeighbors(n_neighbors=n_neighbors, algorithm="brute", metric=metric)
            .fit(Z)
            .kneighbors(return_distance=False)
        )

    a, b = np.sort(knn(X_high), axis=1), knn(X_low)
    # membership of every low-space neighbour in the sorted high-space row
    pos = np.clip(np.array([np.searchsorted(a[i], b[i]) for i in range(n)]), 0, n_neighbors - 1)
    hits = np.take_along_axis(a, pos, axis=1) == b
    per_point = hits.sum(axis=1) / n_neighbors
    return per_point if return_per_point else float(per_point.mean())


def frequency_predictability(
    kv: KeyedVectors,
    frequencies: Mapping[str, float],
    *,
    words: Sequence[str] | None = None,
    log: bool = True,
    n_splits: int = 5,
    alpha: float = 1.0,
    random_state: int | None = 0,
) -> dict[str, float]:
    """How much of a word's frequency can be read off its vector: cross-validated R^2 of a ridge regression.

    y_i = log10(f_i) (``log=True``; words with f_i <= 0 are left out, logged) is regressed on the
    vector x_i with ridge regression (``alpha``), R^2 averaged over ``n_splits`` shuffled folds.
    Frequency is strongly encoded in SGNS / GloVe vectors (Ethayarajh et al. 2019; seed 000 section
    3.4.2, "Criticism"); seed 000 section 3.6.3 asks whether GLPP reduces that dependence.  Compare
    spaces of the same dimension (a PCA with the same m is the natural control).  Returns
    ``{"r2": mean, "r2_sd": sd over folds, "n": words used}``.

    Examples
    --------
    >>> from biaskit.metrics.toys import toy_vectors
    >>> kv = toy_vectors()
    >>> frequencies = {w: 1000 / (rank + 1) for rank, w in enumerate(kv.index_to_key)}
    >>> result = frequency_predictability(kv, frequencies, n_splits=3)
    >>> sorted(result)
    ['n', 'r2', 'r2_sd']
    """
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import KFold, cross_val_score

    candidates = list(kv.index_to_key) if words is None else list(words)
    kept = [w for w in candidates if w in kv.key_to_index and w in frequencies]
    missing = len(candidates) - len(kept)
    y = np.array([float(frequencies[w]) for w in kept])
    if log:
        pos = y > 0
        if not pos.all():
            logger.warning(
                "frequency_predictability: %d words with frequency <= 0 left out", int((~pos).sum())
            )
        kept = [w for w, ok in zip(kept, pos, strict=True) if ok]
        y = np.log10(y[pos])
    if missing:
        logger.warning("frequency_predictability: %d words without a vector or a frequency left out", missing)
    if len(kept) < 2 * n_splits:
        raise ValueError(
            f"only {len(kept)} words have a vector and a frequency; need at least {2 * n_splits}"
        )
    X = np.asarray(kv[kept], dtype=np.float64)
    folds = KFold(n_splits=n_splits, shuffle=True, random_state=random_state)
    scores = cross_val_score(Ridge(alpha=alpha), X, y, cv=folds, scoring="r2")
    return {"r2": float(scores.mean()), "r2_sd": float(scores.std(ddof=1)), "n": len(kept)}


def window_split(
    words: Sequence[str], *, n_window: int, n_test: int, random_state: int | None = 0
) -> tuple[list[str], list[str]]:
    """Split a frequency-ordered vocabulary into the GLPP window and held-out test words (seed 3.3.6).

    ``n_test`` test words X_test are drawn uniformly at random from the first ``n_window + n_test``
    words; the window W is the remaining ``n_window`` (so x_i not in W, as the seed requires).

    Examples
    --------
    >>> vocabulary = [f"w{i}" for i in range(20)]
    >>> window, test = window_split(vocabulary, n_window=10, n_test=4)
    >>> len(window), len(test), set(window) & set(test)
    (10, 4, set())
    """
    words = list(words)
    if n_window < 1 or n_test < 1 or n_window + n_test > len(words):
        raise ValueError(
            f"need 1 <= n_window, 1 <= n_test and n_window + n_test <= {len(words)} words, "
            f"got n_window={n_window}, n_test={n_test}"
        )
    pool = words[: n_window + n_test]
    rng = np.random.default_rng(random_state)
    test_idx = np.sort(rng.choice(len(pool), size=n_test, replace=False))
    is_test = np.zeros(len(pool), dtype=bool)
    is_test[test_idx] = True
    return [w for w, t in zip(pool, is_test, strict=True) if not t], [pool[i] for i in test_idx]


# --------------------------------------------------------------------------- word similarity
def _benchmark_path(name: str) -> Path:
    """The file of a word-similarity benchmark: ``data/similarity/`` first, then gensim's test data."""
    if name not in SIMILARITY_BENCHMARKS:
        raise ValueError(f"unknown benchmark {name!r}; choose one of {sorted(SIMILARITY_BENCHMARKS)}")
    from biaskit.core.paths import data_dir

    local = data_dir() / "similarity" / SIMILARITY_BENCHMARKS[name]
    if local.exists():
        return local
    from gensim.test.utils import datapath

    path = Path(datapath(SIMILARITY_BENCHMARKS[name]))
    if not path.exists():
        raise FileNotFoundError(
            f"{name}: neither {local} nor gensim's copy {path} exists; reinstall gensim "
            f"(pip install --force-reinstall gensim) or put the file in {local.parent}"
        )
    return path


def load_similarity_benchmark(name: str = "wordsim353") -> list[tuple[str, str, float]]:
    """English word-similarity pairs ``(word1, word2, human score)``.

    ``"wordsim353"`` (Finkelstein et al. 2002; 353 pairs, relatedness 0-10) and ``"simlex999"``
    (Hill, Reichart & Korhonen 2015; 999 pairs, similarity 0-10), read from the copies that gensim
    ships as test data (``gensim/test/test_data``; see ``data/similarity/PROVENANCE.md``).

    Lines starting with ``#`` are comments.  A line that is not ``word1<TAB>word2<TAB>score``
    (a wrong number of fields, an empty word, a score that is not a finite number) and a file
    that is not UTF-8 raise ``ValueError`` naming the file and the line (and, for a bad score,
    the column).  Blank lines, a missing line break at the end of the file (its last line may
    be cut off) and a file that is not the documented version (sha256) are logged as a WARNING.

    Examples
    --------
    >>> pairs = load_similarity_benchmark("wordsim353")
    >>> len(pairs), pairs[0]
    (353, ('love', 'sex', 6.77))
    """
    path = _benchmark_path(name)
    raw = path.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != _SIMILARITY_SHA256[name]:
        logger.warning(
            "%s: %s has sha256 %s, not the documented version's %s; results may differ from the notebooks",
            name,
            path,
            digest,
            _SIMILARITY_SHA256[name],
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_no = raw.count(b"\n", 0, exc.start) + 1
        raise ValueError(
            f"{path}:{line_no}: not UTF-8 text (byte {raw[exc.start : exc.start + 1]!r}: {exc.reason})"
        ) from None
    pairs: list[tuple[str, str, float]] = []
    blank: list[int] = []
    lines = text.splitlines()
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            blank.append(lineno)
            continue
        if line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 3 or not parts[0].strip() or not parts[1].strip():
            raise ValueError(
                f"{path}:{lineno}: expected 'word1<TAB>word2<TAB>score' (3 fields, both words non-empty), "
                f"got {len(parts)} field(s): {line!r}"
            )
        try:
            score = float(parts[2])
        except ValueError:
            score = math.nan
        if not math.isfinite(score):
            raise ValueError(
                f"{path}:{lineno}: column 3 (score) must be a finite number, got {parts[2]!r} in {line!r}"
            )
        pairs.append((parts[0], parts[1], score))
    if blank:
        logger.warning(
            "%s: %s: skipped %d blank line(s) (lines %s); no data lost",
            name,
            path,
            len(blank),
            ", ".join(map(str, blank[:12])) + (f" (+{len(blank) - 12} more)" if len(blank) > 12 else ""),
        )
    if lines and not text.endswith(("\n", "\r")):
        logger.warning(
            "%s: %s does not end with a line break: its last line (line %d, %r) may be cut off",
            name,
            path,
            len(lines),
            lines[-1],
        )
    return pairs


def word_similarity_spearman(
    kv: KeyedVectors,
    benchmark: str | Sequence[tuple[str, str, float]] = "wordsim353",
    *,
    lowercase: bool = True,
) -> TestResult:
    """Spearman rho between human similarity scores and the cosine similarity of the word vectors.

    The standard intrinsic evaluation of Wang et al. (2022) (seed 000 section 3.3.6 asks whether the
    refined space keeps the semantic relations).  Pairs with a word missing from ``kv`` are left out
    with a logged warning; their number is in ``details["n_oov_pairs"]``.

    Examples
    --------
    >>> from biaskit.metrics.toys import toy_vectors
    >>> ratings = [("he", "him", 9.0), ("she", "her", 8.5), ("maths", "algebra", 8.0),
    ...            ("he", "poetry", 1.0), ("art", "physics", 2.0)]
    >>> result = word_similarity_spearman(toy_vectors(), ratings)
    >>> result.n, round(result.statistic, 3)
    (5, 0.8)
    """
    from biaskit.core.stats import correlation

    pairs = load_similarity_benchmark(benchmark) if isinstance(benchmark, str) else list(benchmark)
    name = benchmark if isinstance(benchmark, str) else "custom pairs"
    vocab = kv.key_to_index
    kept, oov = [], []
    for w1, w2, score in pairs:
        a, b = (w1.lower(), w2.lower()) if lowercase else (w1, w2)
        (kept if a in vocab and b in vocab else oov).append((a, b, score))
    if oov:
        logger.warning(
            "%s: %d of %d pairs left out (a word is not in the vocabulary): %s",
            name,
            len(oov),
            len(pairs),
            [(a, b) for a, b, _ in oov[:10]],
        )
    if len(kept) < 3:
        raise ValueError(f"{name}: only {len(kept)} pairs have both words in the vocabulary")
    A = np.asarray(kv[[a for a, _, _ in kept]], dtype=np.float64)
    B = np.asarray(kv[[b for _, b, _ in kept]], dtype=np.float64)
    cos = np.sum(A * B, axis=1) / (np.linalg.norm(A, axis=1) * np.linalg.norm(B, axis=1))
    res = correlation([s for _, _, s in kept], cos, method="spearman")
    details = dict(res.details, benchmark=name, n_pairs=len(kept), n_oov_pairs=len(oov))
    return replace(res, method=f"Spearman rank correlation, {name} human scores vs cosine", details=details)
