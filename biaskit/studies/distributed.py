"""Scale-out on Dask: clusters, sharded corpus counts and chunked language-model scoring.

Three jobs outgrow one process, and each runs here on `dask.distributed` (an existing engine; no
home-made scheduler):

* **experiment grids** (:func:`biaskit.studies.grid.run_experiments` with ``scheduler="dask"`` or an
  address; ``python -m biaskit run CONFIG --scheduler dask``): one task per model, see that function;
  :func:`cluster_client` gives the client for ``"dask"`` (a :class:`distributed.LocalCluster`), an
  address (a running cluster, e.g. from ``dask-jobqueue`` on SLURM / PBS) or a client;
* **corpus counts**: the PMI of seed 000 section 3.1.2 needs, for word groups, the number of sentences
  that mention each group and each pair of groups (:class:`biaskit.metrics.pmi.SentenceIncidence`).
  Every shard (a list of tokenised sentences, or a file a worker reads) is counted on a worker
  (``dask.bag``: one partition per shard) and the results are combined on the client:

  - :func:`sharded_incidence` returns the whole sentence x vocabulary incidence matrix, the shards'
    matrices stacked with their vocabularies merged in shard order: **identical** (same vocabulary ids,
    same rows) to ``SentenceIncidence(all sentences)``, so every PMI function takes it unchanged;
  - :func:`sharded_cooccurrence` keeps only the small group x group count matrices per shard and sums
    them, for corpora whose incidence matrix does not fit on the client.  The sums equal the one-pass
    counts exactly (they are integer counts of disjoint sets of sentences);
* **large scoring jobs**: :func:`score_sentences_distributed` splits the sentences into chunks, scores
  each chunk on a worker (PLL / AUL for masked models, log-likelihood for causal ones: seed 000 section
  4.1.3) and writes it to the resumable disk cache of :mod:`biaskit.lm.cache`, which all workers share:
  a killed job, run again, recomputes only the chunks (and the rows of a chunk) that were not written.

Dask is an optional extra (``pip install biaskit[distributed]``); this module imports it on first use.
``scheduler`` of the counting functions: ``None`` / ``"sync"`` (in process), ``"threads"``,
``"processes"``, or a ``distributed.Client``.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import operator
import os
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from biaskit.lm.tokenizers import MAX_UNK_SHARE
from biaskit.metrics.pmi import SentenceIncidence

__all__ = ["cluster_client", "score_sentences_distributed", "sharded_cooccurrence", "sharded_incidence"]

logger = logging.getLogger(__name__)

_NEEDS_DASK = "needs Dask: pip install 'biaskit[distributed]' (or 'dask[distributed]')"

#: a shard: tokenised sentences, or the path of a text file that the worker reads and tokenises itself
#: (:func:`biaskit.data.corpus.load_corpus`, the thesis's preprocessing), so only paths travel to the workers
Shard = Sequence[Sequence[str]] | str | Path


def _sentences(shard: Shard) -> Sequence[Sequence[str]]:
    if isinstance(shard, (str, Path)):
        from biaskit.data.corpus import load_corpus

        return load_corpus(shard, cache=False, progress=False)
    return shard


def _compute(bag: Any, scheduler: Any) -> list[Any]:
    if scheduler is None or scheduler == "sync":
        return bag.compute(scheduler="sync")
    if isinstance(scheduler, str):
        return bag.compute(scheduler=scheduler)
    return scheduler.compute(bag).result()  # a distributed.Client


def _bag(shards: Sequence[Shard]) -> Any:
    try:
        import dask.bag as db
    except ImportError as exc:  # pragma: no cover - the extra is installed by make setup
        raise ImportError(f"sharded counting {_NEEDS_DASK}") from exc
    if isinstance(shards, (str, bytes)) or len(shards) == 0:
        raise ValueError("need a non-empty list of shards (each a list of tokenised sentences)")
    empty = [i for i, s in enumerate(shards) if not isinstance(s, (str, Path)) and len(s) == 0]
    if empty:
        raise ValueError(f"shards {empty[:10]} have no sentence; drop them before counting")
    items = [s if isinstance(s, (str, Path)) else list(s) for s in shards]
    return db.from_sequence(items, npartitions=len(items))


def _shard_incidence(shard: Shard) -> tuple[sparse.csr_matrix, list[str]]:
    inc = SentenceIncidence(_sentences(shard))
    return inc.matrix, list(inc.vocabulary)  # vocabulary in id order (first occurrence)


def sharded_incidence(shards: Sequence[Shard], *, scheduler: Any = None) -> SentenceIncidence:
    """The :class:`~biaskit.metrics.pmi.SentenceIncidence` of all shards' sentences, counted shard by shard.

    Each shard's matrix is built on a worker; the vocabularies are merged in shard order (a word keeps
    the id of its first occurrence in the concatenated corpus) and the rows stacked, so the result is
    identical to the one-pass ``SentenceIncidence([s for shard in shards for s in shard])``.
    """
    parts = _compute(_bag(shards).map(_shard_incidence), scheduler)  # one partition per shard
    vocab: dict[str, int] = {}
    blocks = []
    for matrix, words in parts:
        remap = np.fromiter(
            (vocab.setdefault(w, len(vocab)) for w in words), dtype=np.int32, count=len(words)
        )
        blocks.append((matrix, remap))
    rows = []
    for matrix, remap in blocks:
        m = matrix.tocoo()
        rows.append(
            sparse.csr_matrix(
                (m.data, (m.row, remap[m.col])), shape=(matrix.shape[0], len(vocab)), dtype=np.int32
            )
        )
    out = SentenceIncidence.__new__(SentenceIncidence)
    out.matrix = sparse.vstack(rows, format="csr", dtype=np.int32)
    out.matrix.sort_indices()
    out.vocabulary = vocab
    return out


def sharded_cooccurrence(
    shards: Sequence[Shard],
    row_groups: Sequence[Sequence[str]],
    col_groups: Sequence[Sequence[str]],
    *,
    scheduler: Any = None,
) -> dict[str, np.ndarray]:
    """Sentence counts of word groups, counted per shard and summed: only small matrices travel.

    Returns ``{"cooccurrence": C, "row_counts": r, "col_counts": c, "n_sentences": n}`` with
    ``C[i, j]`` the number of sentences with a word of ``row_groups[i]`` and one of ``col_groups[j]``
    (:meth:`SentenceIncidence.cooccurrence`), ``r`` / ``c`` the sentences mentioning each group
    (:meth:`SentenceIncidence.sentence_counts`) and ``n`` the number of sentences: the inputs of
    :func:`biaskit.metrics.pmi.pmi_from_counts`, equal to the one-pass counts.
    """
    rg = [list(g) for g in row_groups]
    cg = [list(g) for g in col_groups]

    def count(shard: Shard) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        inc = SentenceIncidence(_sentences(shard))
        return inc.cooccurrence(rg, cg), inc.sentence_counts(rg), inc.sentence_counts(cg), inc.n_sentences

    parts = _compute(_bag(shards).map(count), scheduler)
    return {
        "cooccurrence": np.sum([p[0] for p in parts], axis=0),
        "row_counts": np.sum([p[1] for p in parts], axis=0),
        "col_counts": np.sum([p[2] for p in parts], axis=0),
        "n_sentences": int(sum(p[3] for p in parts)),
    }


# ---------------------------------------------------------------------------------------------
# clusters
# ---------------------------------------------------------------------------------------------
@contextlib.contextmanager
def cluster_client(scheduler: Any = "dask", *, n_workers: int | None = None) -> Iterator[Any]:
    """A :class:`distributed.Client` for ``scheduler``, closed (with any cluster it started) on exit.

    * ``"dask"``: a :class:`distributed.LocalCluster` of ``n_workers`` processes (default and maximum:
      one per core) with one thread each; every worker offers a ``GPU`` resource when this machine has
      CUDA (several workers then share the card: for one worker per GPU use dask-cuda's
      ``LocalCUDACluster`` and pass its address);
    * an address such as ``"tcp://10.0.0.5:8786"``: a running scheduler (``dask scheduler`` +
      ``dask worker``, or a ``dask_jobqueue.SLURMCluster``); left running on exit;
    * a ``distributed.Client``: used as it is and left open.
    """
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - the extra is installed by make setup
        raise ImportError(f"running on a cluster {_NEEDS_DASK}") from exc
    if isinstance(scheduler, Client):
        yield scheduler
        return
    if not isinstance(scheduler, str) or not scheduler:
        raise ValueError(
            f"scheduler must be 'dask', a scheduler address or a distributed.Client, not {scheduler!r}"
        )
    if scheduler == "dask":
        cores = os.cpu_count() or 1
        n = max(1, min(int(n_workers or cores), cores))
        from biaskit.lm.base import resolve_device

        resources = {"GPU": 1} if resolve_device("auto").type == "cuda" else None
        logger.debug(
            "starting a local Dask cluster: %d worker process(es), 1 thread each%s",
            n,
            ", GPU resource on each" if resources else "",
        )
        with (
            _quiet_distributed(),  # Dask's own INFO lines (start, stop) would flood a console or a page
            LocalCluster(
                n_workers=n,
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",
                resources=resources,
            ) as cluster,
            Client(cluster) as client,
        ):
            logger.debug("Dask dashboard: %s", client.dashboard_link)
            yield client
        return
    if "://" not in scheduler and ":" not in scheduler:
        raise ValueError(
            f"unknown scheduler {scheduler!r}: use 'local', 'dask' or a scheduler address like tcp://host:8786"
        )
    with Client(scheduler) as client:
        yield client


@contextlib.contextmanager
def _quiet_distributed() -> Iterator[None]:
    """Raise the ``distributed`` logger to WARNING for a ``with`` block (its INFO lines are about the
    cluster's start and stop; warnings and errors still show), then restore its level."""
    log = logging.getLogger("distributed")
    level = log.level
    if log.getEffectiveLevel() < logging.WARNING:
        log.setLevel(logging.WARNING)
    try:
        yield
    finally:
        log.setLevel(level)


# ---------------------------------------------------------------------------------------------
# chunked scoring
# ---------------------------------------------------------------------------------------------
#: language models loaded in this (worker) process, by (name, kind, device, dtype)
_WORKER_MODELS: dict[tuple[str, str | None, str, str | None], Any] = {}


def _score_chunk(
    model: str,
    kind: str | None,
    device: str,
    dtype: str | None,
    cache_folder: str,
    chunk: list[str],
    metric: str | None,
    batch_size: int | None,
    unk: str,
    batch_tokens: int | None = None,
    max_unk_share: float | None = MAX_UNK_SHARE,
) -> Any:
    """One task: score ``chunk`` with the worker's copy of ``model`` into the shared cache."""
    from biaskit.lm import get_lm, score_sentences

    os.environ["BIASKIT_CACHE_DIR"] = cache_folder  # the shared cache: the same folder as the client's
    key = (model, kind, device, dtype)
    if key not in _WORKER_MODELS:
        _WORKER_MODELS[key] = get_lm(model, kind=kind, device=device, dtype=dtype)  # type: ignore[arg-type]
    return score_sentences(
        _WORKER_MODELS[key],
        chunk,
        metric,
        batch_size=batch_size,
        batch_tokens=batch_tokens,
        cache=True,
        progress=False,
        unk=unk,  # type: ignore[arg-type]
        max_unk_share=max_unk_share,
    )


def score_sentences_distributed(
    model: str,
    sentences: Sequence[str],
    metric: str | None = None,
    *,
    scheduler: Any = "dask",
    n_workers: int | None = None,
    chunk_size: int = 1000,
    batch_size: int | None = None,
    batch_tokens: int | None = None,
    unk: str = "skip",
    kind: str | None = None,
    device: str = "auto",
    dtype: str | None = None,
    cache_folder: str | Path | None = None,
    progress: bool = True,
    max_unk_share: float | None = MAX_UNK_SHARE,
) -> Any:
    """:func:`biaskit.lm.score_sentences` of a large dataset, chunk by chunk on Dask workers.

    ``model`` is a name or folder that every worker can load (:func:`biaskit.lm.get_lm`, e.g.
    ``"en-mlm"`` or ``./models/bert-base-uncased``); each worker loads it once.  The sentences are
    split into chunks of ``chunk_size``; each chunk is one task and its scores go to the disk cache
    (:mod:`biaskit.lm.cache`, one file per model, metric and chunk) under ``cache_folder`` (default:
    this process's :func:`biaskit.core.paths.cache_dir`; on a cluster, a folder every worker sees).  Run
    again after an interruption, only what was not written is computed (``n_computed`` /
    ``n_cached`` of the result say how much).  A task whose worker dies is run again on another.
    ``batch_tokens`` / ``batch_size``: the forward passes of each task, as in
    :func:`biaskit.lm.score_sentences`.
    ``max_unk_share``: as in :func:`biaskit.lm.score_sentences`, checked on each chunk (a chunk whose share of
    ``[UNK]`` tokens is above it stops the job with a ``ValueError``; its rows are numbered within the chunk).

    Returns one :class:`biaskit.lm.PLLScores` for all sentences: rows numbered from 0 over the whole
    input, the chunks' validation reports joined.  Scores equal the one-process scores up to
    floating-point rounding of the batched matrix products (different batches).
    """
    from tqdm.auto import tqdm

    from biaskit.core.paths import cache_dir
    from biaskit.lm.scoring import PLLScores

    sentences = list(sentences)
    if not sentences:
        raise ValueError("no sentences to score")
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, not {chunk_size}")
    folder = str(Path(cache_folder) if cache_folder is not None else cache_dir())
    starts = list(range(0, len(sentences), chunk_size))
    with cluster_client(scheduler, n_workers=n_workers or len(starts)) as client:
        futures = [
            client.submit(
                _score_chunk,
                model,
                kind,
                device,
                dtype,
                folder,
                sentences[a : a + chunk_size],
                metric,
                batch_size,
                unk,
                batch_tokens,
                max_unk_share,
                pure=False,
                retries=1,
            )
            for a in starts
        ]
        parts = []
        with tqdm(
            total=len(sentences), desc=f"scoring with {model}", unit="sentence", disable=not progress
        ) as bar:
            for a, fut in zip(starts, futures, strict=True):
                part = fut.result()
                bar.update(len(part.scores) + len(part.report.skipped_rows))
                parts.append((a, part))
    first = parts[0][1]
    return PLLScores(
        scores=pd.concat([_shift_rows(p.scores, a) for a, p in parts], ignore_index=True),
        tokens=pd.concat([_shift_rows(p.tokens, a) for a, p in parts], ignore_index=True),
        # the chunks' reports joined (ValidationReport.__add__), their rows numbered over the whole input
        report=functools.reduce(
            operator.add, (replace(p.report, issues=_shift_rows(p.report.issues, a)) for a, p in parts)
        ),
        metric=first.metric,
        model=first.model,
        n_computed=sum(p.n_computed for _, p in parts),
        n_cached=sum(p.n_cached for _, p in parts),
        cache_path=first.cache_path.parent if first.cache_path is not None else None,
    )


def _shift_rows(frame: pd.DataFrame, offset: int) -> pd.DataFrame:
    """``frame`` with its 0-based ``row`` numbers moved by ``offset`` (a report's ``None`` rows stay)."""
    frame = frame.copy()
    if len(frame) and "row" in frame:
        if pd.api.types.is_numeric_dtype(frame["row"]):
            frame["row"] = frame["row"] + offset
        else:
            frame["row"] = [r if r is None or r != r else int(r) + offset for r in frame["row"]]
    return frame
