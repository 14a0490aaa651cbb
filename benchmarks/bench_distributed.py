"""Corpus co-occurrence counts sharded over Dask workers vs one pass in one process.

The bundled Spanish Europarl sample, replicated until it holds at least 10 million words (1 million in a
quick run) and written as 16 text files (shards).  naive = read and tokenise all of it in one process
(:func:`biaskit.data.corpus.load_corpus`), one :class:`~biaskit.metrics.pmi.SentenceIncidence` pass and its
group counts; fast = :func:`biaskit.studies.distributed.sharded_cooccurrence` on the file paths with a
``LocalCluster`` of 2 worker processes (one thread each): each worker reads, tokenises and counts its own
shards, and only the small count matrices come back.  A second row sends already tokenised shards from the
client instead (the data then travels, which costs more than it saves on one machine).  Wall-clock seconds;
counts checked equal.
"""

from __future__ import annotations

import time

import numpy as np


def run(quick: bool = False) -> list[dict]:
    import tempfile
    from pathlib import Path

    from distributed import Client, LocalCluster

    from biaskit.data.corpus import load_corpus
    from biaskit.data.wordlists import load_seed_groups
    from biaskit.metrics.pmi import SentenceIncidence
    from biaskit.studies.distributed import sharded_cooccurrence

    base = load_corpus("europarl-es-sample")
    n_words = sum(len(s) for s in base)
    target = 1_000_000 if quick else 10_000_000
    reps = -(-target // n_words)
    groups = load_seed_groups()
    rows = [list(v) for v in list(groups.values())[:10]]
    cols = [list(v) for v in list(groups.values())[10:40]]
    k = 16
    lines = [" ".join(s) for s in base] * reps
    step = -(-len(lines) // k)
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for j, i in enumerate(range(0, len(lines), step)):
            p = Path(tmp) / f"shard{j:02d}.txt"
            p.write_text("\n".join(lines[i : i + step]) + "\n", encoding="utf-8")
            paths.append(p)
        whole = Path(tmp) / "all.txt"
        whole.write_text("\n".join(lines) + "\n", encoding="utf-8")

        t0 = time.perf_counter()
        sentences = load_corpus(whole, cache=False, progress=False)
        one = SentenceIncidence(sentences).cooccurrence(rows, cols)
        t_one = time.perf_counter() - t0
        shards = [sentences[i : i + step] for i in range(0, len(sentences), step)]
        with (
            LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster,
            Client(cluster) as client,
        ):
            client.submit(sum, [1, 2]).result()  # workers up before timing
            t0 = time.perf_counter()
            from_files = sharded_cooccurrence(paths, rows, cols, scheduler=client)
            t_files = time.perf_counter() - t0
            t0 = time.perf_counter()
            shipped = sharded_cooccurrence(shards, rows, cols, scheduler=client)
            t_shipped = time.perf_counter() - t0
    words = f"{n_words * reps / 1e6:.1f} M words in {k} shards, 2 Dask workers"
    return [
        {
            "name": f"PMI counts, {words}, each worker reads its files",
            "naive_s": t_one,
            "fast_s": t_files,
            "note": f"counts identical: {bool(np.array_equal(from_files['cooccurrence'], one))} (wall clock)",
        },
        {
            "name": f"PMI counts, {words}, tokenised shards sent from the client",
            "naive_s": t_one,
            "fast_s": t_shipped,
            "note": f"counts identical: {bool(np.array_equal(shipped['cooccurrence'], one))} (wall clock)",
        },
    ]
