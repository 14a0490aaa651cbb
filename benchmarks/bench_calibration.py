"""Label-permutation test of a KS metric (notebook 14): one vectorised pass vs a loop over labellings.

The test (:func:`biaskit.studies.calibration.label_permutation_pvalue`) relabels the targets at random and
recomputes the metric's signed KS statistic for each labelling.  The naive reference draws one
``rng.permutation`` per labelling and calls :func:`scipy.stats.ks_2samp` on each, as a reader of the
formula would write it; the fast path draws every labelling in one ``rng.permuted`` call (the same
random stream) and computes all statistics at once (:func:`biaskit.studies.calibration.ks_statistics`).  Both
run on the same synthetic items (640 pairs over 40 professions, as the planted controls) and must give
the same p-value (checked here).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from benchmarks import best_of
from biaskit.studies import calibration as cal


def _items(n_targets: int, per_target: int, seed: int) -> tuple[cal.MetricValues, dict[str, str]]:
    rng = np.random.default_rng(seed)
    targets = [f"job{i}" for i in range(n_targets)]
    directions = {t: ("male" if i % 2 else "female") for i, t in enumerate(targets)}
    target = np.repeat(np.array(targets, dtype=object), per_target)
    shift = np.repeat(rng.normal(0, 0.3, n_targets), per_target)
    male = rng.normal(-20, 4, target.size) + shift
    female = male - rng.normal(0.2, 1.0, target.size)
    mv = cal.MetricValues("ks", "ks", target, male - female, male=male, female=female)
    return mv, directions


def _naive_pvalue(mv: cal.MetricValues, directions: dict[str, str], n_permutations: int, seed: int) -> float:
    targets = np.array(sorted(set(mv.target.tolist())), dtype=object)
    lab = np.array([1.0 if directions[t] == "male" else -1.0 for t in targets])
    pos = {t: i for i, t in enumerate(targets)}
    unit_t = np.array([pos[t] for t in mv.target])
    rng = np.random.default_rng(seed)
    labellings = [lab] + [rng.permutation(lab) for _ in range(n_permutations)]
    T = []
    for row in labellings:
        s = row[unit_t]
        planted = np.where(s > 0, mv.male, mv.female)
        other = np.where(s > 0, mv.female, mv.male)
        T.append(stats.ks_2samp(planted, other).statistic * np.sign(np.mean(planted - other)))
    T = np.asarray(T)
    c = T[1:].mean()
    return float((1 + np.sum(np.abs(T[1:] - c) >= np.abs(T[0] - c) - 1e-12)) / (n_permutations + 1))


def run(quick: bool = False) -> list[dict]:
    n_perm = 200 if quick else 2000
    mv, directions = _items(40, 16, seed=0)
    fast_s, fast_p = best_of(
        lambda: cal.label_permutation_pvalue(mv, directions, n_permutations=n_perm, random_state=0), 3
    )
    naive_s, naive_p = best_of(lambda: _naive_pvalue(mv, directions, n_perm, 0), 1)
    if abs(fast_p - naive_p) > 1e-12:
        raise AssertionError(f"label-permutation p-values differ: fast {fast_p} vs naive {naive_p}")
    return [
        {
            "name": f"calibration: KS label-permutation test, {n_perm} labellings",
            "fast_s": fast_s,
            "naive_s": naive_s,
            "note": f"640 pairs over 40 professions, p = {fast_p:.4f} in both",
        }
    ]
