"""The metric-trust study's retrained controls: one model after another in one process vs 2 Dask workers.

The study (:func:`biaskit.studies.metric_trust.run_trust_study`, notebook 18) trains a planted-bias control
for every (training seed, planted strength) and measures every registered calibration measure on it; the
models are independent tasks.  Here: the word2vec controls of seeds 1 and 2 at s = 0.5 and 0.9 (the grid of
notebook 18's quick run; seed 1 alone at s = 0.5 and 0.9 in a quick benchmark), each side in a cache folder
of its own, so that both train every model from the start.  naive = ``scheduler="local"`` (this process,
one model after another); fast = ``scheduler="dask"`` with 2 worker processes of one thread each.  Wall
clock of the whole study, records checked equal (the weights' sha256 and every measure's value).
"""

from __future__ import annotations

import os
import time
from typing import Any


def _run(scheduler: str, cache: str, out: str, seeds: list[int], skews: list[float]) -> tuple[float, Any]:
    from biaskit.studies.metric_trust import run_trust_study

    before = os.environ.get("BIASKIT_CACHE_DIR")
    os.environ["BIASKIT_CACHE_DIR"] = cache
    try:
        t0 = time.perf_counter()
        record = run_trust_study(
            ("word2vec",), seeds, skews, out=out, scheduler=scheduler, n_workers=2, threads=1, progress=False
        )
        return time.perf_counter() - t0, record
    finally:
        if before is None:
            os.environ.pop("BIASKIT_CACHE_DIR", None)
        else:
            os.environ["BIASKIT_CACHE_DIR"] = before


def _fingerprint(record: Any) -> list[tuple[Any, ...]]:
    """Per model: seed, strength, the weights' sha256 and every measure's effect (rounded to 1e-9)."""
    rows = []
    for m in sorted(record.models, key=lambda r: (r["seed"], r["s"])):
        effects = tuple(
            sorted((k, round(float(v["effect"]), 9)) for k, v in m["measures"].items() if "effect" in v)
        )
        rows.append((m["seed"], m["s"], tuple(sorted(m["weights_sha256"].items())), effects))
    return rows


def run(quick: bool = False) -> list[dict]:
    import tempfile

    seeds = [1] if quick else [1, 2]
    skews = [0.5, 0.9]
    with tempfile.TemporaryDirectory() as tmp:
        t_local, local = _run("local", f"{tmp}/cache-local", f"{tmp}/local.json", seeds, skews)
        t_dask, dask = _run("dask", f"{tmp}/cache-dask", f"{tmp}/dask.json", seeds, skews)
        same = _fingerprint(local) == _fingerprint(dask)
        n = len(local.models)
    return [
        {
            "name": f"metric-trust study, {n} word2vec controls (seeds {seeds} x s {skews}), 2 Dask workers",
            "naive_s": t_local,
            "fast_s": t_dask,
            "note": f"records identical (sha256 of the weights, every measure): {same} (wall clock)",
        }
    ]
