"""GLPP fit (seed 000 section 3.3.6): sparse kNN graph versus a naive dense N x N implementation.

The fast path is :class:`biaskit.debiasing.glpp.GLPP` (exact kNN with scikit-learn, sparse S / D / L,
M x M scatter matrices from sparse x dense products).  The naive reference below builds the full
N x N distance matrix, sorts every row, and forms dense S, D, L and W L W^T with dense matrix
products, as a direct transcription of the seed's steps 1-4 would.  Both solve the same M x M
generalised eigenproblem, and the benchmark checks that their eigenvalues agree.

Vectors: the first N words of the 300-d word2vec GoogleNews subset of Bolukbasi et al.
(``biaskit.embeddings.vectors.load_reference_vectors("word2vec-googlenews-bolukbasi")``), or Gaussian
random vectors when that package is not installed.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from benchmarks import best_of
from biaskit.debiasing.glpp import GLPP

K, M_COMPONENTS, ETA, SIGMA2, REG = 10, 50, 0.5, 1.0, 1e-6


def _vectors(n: int) -> tuple[np.ndarray, str]:
    try:
        from biaskit.embeddings.vectors import load_reference_vectors

        kv = load_reference_vectors("word2vec-googlenews-bolukbasi", limit=n)
        return np.asarray(kv.vectors, dtype=np.float64), "GoogleNews (Bolukbasi subset)"
    except (ImportError, FileNotFoundError, ValueError):
        rng = np.random.default_rng(0)
        return rng.normal(size=(n, 300)), "random normal"


def naive_glpp(X: np.ndarray, m: int, k: int, sigma2: float, eta: float, reg: float) -> np.ndarray:
    """Dense transcription of seed 000 section 3.3.6 steps 1-4; returns the m smallest eigenvalues."""
    Xc = X - X.mean(axis=0)
    sq = np.sum(Xc**2, axis=1)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2 * Xc @ Xc.T, 0.0)  # N x N
    np.fill_diagonal(d2, np.inf)
    nbrs = np.argsort(d2, axis=1)[:, :k]
    adj = np.zeros(d2.shape, dtype=bool)
    np.put_along_axis(adj, nbrs, True, axis=1)
    adj |= adj.T
    np.fill_diagonal(d2, 0.0)
    S = np.where(adj, np.exp(-d2 / sigma2), 0.0)
    D = np.diag(S.sum(axis=1))
    L = D - S
    A = Xc.T @ L @ Xc
    B = Xc.T @ D @ Xc
    C = Xc.T @ (np.eye(len(X)) - 1.0 / len(X)) @ Xc  # W H W^T, H the N x N centring matrix
    C *= np.trace(B) / np.trace(C)
    Breg = B + reg * np.trace(B) / B.shape[0] * np.eye(B.shape[0])
    return scipy.linalg.eigh(A - eta * C, Breg, eigvals_only=True)[:m]


def run(quick: bool = False) -> list[dict]:
    rows: list[dict] = []
    sizes = [500] if quick else [2000, 6000]
    naive_last = None
    for n in sizes:
        X, source = _vectors(n)
        fast_s, g = best_of(
            lambda X=X: GLPP(M_COMPONENTS, n_neighbors=K, sigma2=SIGMA2, eta=ETA, reg=REG).fit(X), repeat=3
        )
        naive_s, ev = best_of(lambda X=X: naive_glpp(X, M_COMPONENTS, K, SIGMA2, ETA, REG), repeat=3)
        diff = float(np.max(np.abs(ev - g.eigenvalues_)))
        naive_last = (n, naive_s)
        rows.append(
            {
                "name": f"glpp fit N={n} x 300, k={K}, m={M_COMPONENTS}",
                "fast_s": fast_s,
                "naive_s": naive_s,
                "note": f"{source}; max |eigenvalue diff| = {diff:.1e}",
            }
        )
    if not quick:
        n = 20000
        X, source = _vectors(n)
        fast_s, _ = best_of(lambda: GLPP(M_COMPONENTS, n_neighbors=K, sigma2=SIGMA2, eta=ETA, reg=REG).fit(X))
        n0, t0 = naive_last
        rows.append(
            {
                "name": f"glpp fit N={n} x 300, k={K}, m={M_COMPONENTS}",
                "fast_s": fast_s,
                "naive_s": t0 * (n / n0) ** 2,
                "note": f"{source}; naive NOT run (3.2 GB per dense N x N matrix): "
                f"extrapolated as {t0:.1f}s x (N/{n0})^2",
            }
        )
    return rows


if __name__ == "__main__":
    for row in run(quick=True):
        print(row)
