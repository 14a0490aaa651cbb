"""The experiment grid on a Dask cluster of 2 worker processes vs 1.

The same CPU-bound grid both times: four bundled English masked LMs (``en-mlm``, ``en-mlm-balanced`` and two
planted-bias controls) x a CrowS-Pairs sample scored with the official ``cp`` pseudo-log-likelihood (no disk
cache, so every pair is computed), i.e. four tasks of about equal cost.  naive = ``run_experiments(...,
scheduler=client)`` on a ``LocalCluster`` with 1 worker process (1 thread), fast = the same with 2 worker
processes (1 thread each); the clusters are started, and torch and transformers imported on their
workers, before the clock.  The result tables are checked equal.
A third row gives the in-process run (``scheduler="local"``, PyTorch's own 2 threads) against 2 workers.
"""

from __future__ import annotations

import tempfile
import time


def _config(sample: int) -> dict:
    return {
        "name": "bench_grid",
        "models": [
            {"name": m, "path": m} for m in ("en-mlm", "en-mlm-balanced", "en-planted-s50", "en-planted-s90")
        ],
        "datasets": [{"name": "crows-en", "path": "crows:en", "sample": sample}],
        "metrics": ["crows"],
        "options": {"crows_cache": False, "device": "cpu"},
    }


def _warm_up() -> None:
    import transformers.models.bert.modeling_bert  # noqa: F401


def run(quick: bool = False) -> list[dict]:
    from distributed import Client, LocalCluster

    from biaskit.studies.grid import run_experiments

    cfg = _config(40 if quick else 600)
    times, tables = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1, 2):
            with (
                LocalCluster(
                    n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None
                ) as cluster,
                Client(cluster) as client,
            ):
                client.run(_warm_up)  # workers up, with torch and transformers imported, before timing
                t0 = time.perf_counter()
                tables[n] = run_experiments(cfg, output_dir=f"{tmp}/{n}", progress=False, scheduler=client)
                times[n] = time.perf_counter() - t0
        t0 = time.perf_counter()
        tables[0] = run_experiments(cfg, output_dir=f"{tmp}/local", progress=False)
        times[0] = time.perf_counter() - t0

    def same(a, b) -> bool:
        cols = ["model", "bias_type", "n", "statistic", "score", "p_value"]
        return bool(a[cols].equals(b[cols]))

    ok = all((t["status"] == "ok").all() for t in tables.values())
    what = f"4 masked LMs x CrowS-Pairs ({cfg['datasets'][0]['sample']} pairs, cp)"
    return [
        {
            "name": f"Experiment grid, {what}: 2 Dask workers vs 1",
            "naive_s": times[1],
            "fast_s": times[2],
            "note": f"tables identical: {same(tables[1], tables[2]) and ok} (wall clock)",
        },
        {
            "name": f"Experiment grid, {what}: 2 Dask workers vs in-process (2 threads)",
            "naive_s": times[0],
            "fast_s": times[2],
            "note": f"tables identical: {same(tables[0], tables[2]) and ok} (wall clock)",
        },
    ]
