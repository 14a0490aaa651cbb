r"""Batches of bias experiments: models x datasets x metrics from a small YAML file.

The BIAS Detection Framework (seed 001, Puttick et al. 2024, section 3 and Figure 1) lets a
user pick models, datasets and metrics, runs every combination, and leaves "a logfile,
pre-formatted LaTeX tables and a graphical visualization".  This module does the same for every
metric of the registry with grid support (:mod:`biaskit.core.registry`; ``python -m biaskit metrics
--all-columns`` lists them with the dataset kinds they read and their options), among them:

* ``weat``  -- WEAT (Caliskan et al. 2017) on bare words: on static vectors directly
  (:class:`biaskit.metrics.weat.WEAT`), or through a BERT-family encoder (``[CLS] w [SEP]``)
  with each pooling method;
* ``seat``  -- SEAT (May et al. 2019) on template sentences (:mod:`biaskit.metrics.seat`),
  static (mean word vector) or contextual (``cls``, ``target_first``, ``target_pooled``);
* ``lpbs``  -- the log probability bias score (Kurita et al. 2019; :mod:`biaskit.metrics.lpbs`);
* ``crows`` -- the CrowS-Pairs score B_CrowS overall and per bias type (Nangia et al. 2020;
  :func:`biaskit.lm.score_pairs` + :func:`biaskit.metrics.crows.crows_score`), and each PLL reading
  (``cp``, ``sz``, ``aul``, ``ll``, ``shared``) as a metric of its own;
* WEFE's family (``wefat``, ``rnd``, ``rnsb``, ``ect``, ``mac``, ``ripa``), ``direct_bias``,
  ``bolukbasi_indirect``, ``dicobi``, ``same``, ``domain_gain`` and the recovery tests on word datasets;
  the thesis's KS test and KL score and Barza's sentence pairs on CrowS-Pairs datasets;
* the metrics of installed plug-in packages (entry-point group ``biaskit.metrics``).

A configuration (YAML or a dict)::

    name: offline_demo                    # file stem of the outputs
    output_dir: null                      # default: results/experiments/<name>
    models:                               # a spec, or {name, path, kind, ...}
      - word2vec-googlenews-wefe          # offline reference vectors (static)
      - {name: tiny, path: tiny}          # in-process random BERT (meaningless numbers)
      - {name: bert, path: ./models/bert-base-uncased}
    datasets:                             # an identifier, or {name, path, sample, ...}
      - may2019:sent-weat7                # SEAT sentences
      - may2019:weat7                     # WEAT words
      - bfh:en/LPBS/LPBS_7                # LPBS
      - {name: crows-en, path: "crows:en", sample: 300}
    metrics: [weat, seat, lpbs, crows]
    options: {n_permutations: 10000, methods: [cls, target_first, target_pooled]}

Every compatible (model, dataset, metric[, pooling]) cell is run: a metric reads the dataset kinds it
declares (``weat`` a word dataset, ``seat`` a sentence dataset, ``lpbs`` an LPBS dataset, ``crows`` a
CrowS-Pairs dataset, each loaded by the loader registered for it) and the model kinds it declares
(``lpbs`` a masked language model, ...); other combinations are not cells (they are listed in the log).
``options`` holds the grid's own options (``n_permutations``, ``methods``, ...) and each metric's own,
``<metric>_<name>`` (``weat_alternative``, ``crows_metric``, ...); an unknown option, or a value outside
an option's choices, is refused with the allowed ones.  **A failing cell** (a model path that does not exist,
a set without any word in the vocabulary ...) becomes a row with ``status="error"`` and the message,
logged with its traceback, while the other cells run on.  Outputs, per experiment, in
``output_dir``: ``<name>.log``, ``<name>.csv`` (tidy, one row per result),
``<name>.tex`` (``pandas.io.formats.style.Styler.to_latex``: tests x models, significant
results in bold), ``<name>_effect_sizes.png`` and ``<name>_crows.png``, and the resolved
configuration ``<name>_config.yaml``.

Command line: ``python -m biaskit run CONFIG`` (see :mod:`biaskit.__main__`); notebooks call
:func:`run_experiments` and get the tidy :class:`pandas.DataFrame`.

The parts (this module is their public front and keeps the runner, :func:`run_experiments`):
:mod:`biaskit.studies.grid_config` (configuration, datasets, models, the compatible cells) and
:mod:`biaskit.studies.grid_output` (tables, plots, sentences for a reader, the output files).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biaskit.core.paths import resolve_user_path, results_dir
from biaskit.metrics.crows import crows_by_bias_type
from biaskit.studies.grid_config import (
    COLUMNS,
    Cell,
    DatasetSpec,
    ExperimentConfig,
    ModelCache,
    ModelLoadError,
    ModelSpec,
    base_row,
    dataset_language,
    dataset_path,
    first_line,
    grid_cells,
    grid_metrics,
    load_config,
    load_dataset,
    run_cell,
)
from biaskit.studies.grid_output import (
    POOLING_LABELS,
    captured_log,
    config_overview,
    failure_summary,
    latex_table,
    plot_results,
    styled_table,
    summary_table,
    write_outputs,
)

logger = logging.getLogger(__name__)

__all__ = [
    "COLUMNS",
    "DatasetSpec",
    "ExperimentConfig",
    "ModelSpec",
    "captured_log",
    "config_overview",
    "crows_by_bias_type",
    "grid_metrics",
    "failure_summary",
    "latex_table",
    "load_config",
    "load_dataset",
    "plot_results",
    "run_experiments",
    "styled_table",
    "summary_table",
    # defined in the modules above, re-exported here for their users
    "POOLING_LABELS",
    "ModelLoadError",
]


# =============================================================================================
# the runner
# =============================================================================================
def run_experiments(
    config: str | Path | Mapping[str, Any] | ExperimentConfig,
    *,
    output_dir: str | Path | None = None,
    progress: bool = True,
    write: bool = True,
    scheduler: Any = "local",
    n_workers: int | None = None,
) -> pd.DataFrame:
    """Run every cell of the grid; return the tidy results (:data:`~biaskit.studies.grid_config.COLUMNS`), one
    row per result.

    Writes (``write=True``) the log, CSV, LaTeX table, plots and resolved configuration into
    ``output_dir`` (argument > ``config.output_dir`` > ``results/experiments/<name>``; a relative
    ``output_dir`` argument starts from the folder the user started in,
    :func:`biaskit.core.paths.resolve_user_path`); their paths are in ``df.attrs["outputs"]``.  A cell that
    raises is recorded with ``status="error"`` and its message (traceback in the log); the others still run.

    ``scheduler`` says where the cells run:

    * ``"local"`` (default): one after another in this process;
    * ``"dask"``: on a :class:`distributed.LocalCluster` of ``n_workers`` processes (default: one per
      core, at most one per model) started for this run;
    * an address (``"tcp://host:8786"``) or a :class:`distributed.Client`: on a running cluster, e.g.
      one started by ``dask-jobqueue`` on SLURM / PBS.

    On Dask each model's group of cells is one task, so a model loads once per worker; language-model
    groups ask for a ``GPU`` resource when ``options.device`` names CUDA (or is ``auto`` and a worker
    offers one).  The results, the log lines, the LaTeX table and the plots are those of the local run,
    in the same order (the ``seconds`` column and the log's clock times aside): the log records of each
    task are collected on its worker and written here in cell order.  A task whose worker dies is run
    again elsewhere (Dask's ``allowed-failures``); a failing cell is an error row, as locally.
    """
    cfg = load_config(config)
    out = (
        resolve_user_path(output_dir)
        if output_dir is not None
        else cfg.output_dir or (results_dir() / "experiments" / cfg.name)
    )
    handler: logging.Handler | None = None
    console: logging.Handler | None = None
    pkg_logger = logging.getLogger("biaskit")
    old_level, old_propagate = pkg_logger.level, pkg_logger.propagate
    if write:
        out.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(out / f"{cfg.name}.log", mode="w", encoding="utf-8")
        handler.setLevel(logging.INFO)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        pkg_logger.addHandler(handler)
        level = pkg_logger.getEffectiveLevel()
        if level > logging.INFO:
            # the log file gets INFO; the console keeps the level it had (no INFO flood)
            console = logging.StreamHandler()
            console.setLevel(level)
            console.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
            pkg_logger.addHandler(console)
            pkg_logger.propagate = False
            pkg_logger.setLevel(logging.INFO)
    try:
        logger.info(
            "experiment %r: %d model(s), %d dataset(s), metrics %s",
            cfg.name,
            len(cfg.models),
            len(cfg.datasets),
            list(cfg.metrics),
        )
        logger.info("configuration: %s", json.dumps(cfg.to_dict(), default=str))
        data: dict[str, Any] = {}
        kinds: dict[str, str] = {}
        errors: dict[str, str] = {}
        for d in cfg.datasets:
            try:
                kinds[d.name], data[d.name] = load_dataset(
                    d, random_state=int(cfg.option("random_state") or 0)
                )
            except Exception as exc:  # an unknown or unreadable dataset stops the run before any cell
                errors[d.name] = f"{type(exc).__name__}: {exc}"
                logger.error("dataset %r could not be loaded: %s", d.name, errors[d.name])
        if errors:
            raise ValueError(
                "dataset(s) could not be loaded, nothing was run: "
                + "; ".join(f"{k} ({dataset_path(cfg, k)}): {v}" for k, v in errors.items())
                + ". Check the identifiers (may2019:weat7, bfh:de/SEAT/CW1_context, es:seat_math_arts, "
                "crows:en, crows:es, lpbs:..., or a file path)"
            )
        paths = {d.name: d.path for d in cfg.datasets}
        langs = {k: dataset_language(v, paths[k]) for k, v in data.items()}
        cells, skipped = grid_cells(cfg, kinds, langs)
        for s in skipped:
            logger.warning("not a cell: %s", s)
        logger.info("%d cell(s) to run", len(cells))
        rows = _execute(
            _GridData(cfg, data, errors, langs),
            cells,
            scheduler=scheduler,
            n_workers=n_workers,
            progress=progress,
        )
        df = pd.DataFrame(rows, columns=list(COLUMNS))
        df.attrs["skipped"] = list(skipped)
        n_err = int((df["status"] == "error").sum())
        logger.info("experiment %r finished: %d result row(s), %d error(s)", cfg.name, len(df), n_err)
        if write:
            df.attrs["outputs"] = write_outputs(df, cfg, out)
        return df
    finally:
        for h in (handler, console):
            if h is not None:
                pkg_logger.removeHandler(h)
                h.close()
        pkg_logger.setLevel(old_level)
        pkg_logger.propagate = old_propagate


# =============================================================================================
# executing the cells: in process, or one task per model on Dask
# =============================================================================================
@dataclass(frozen=True)
class _GridData:
    """What every cell of a run reads: the configuration, the loaded datasets (by name), why a dataset
    could not be loaded, and each dataset's language."""

    cfg: ExperimentConfig
    data: Mapping[str, Any]
    errors: Mapping[str, str]
    langs: Mapping[str, str]


#: one cell's outcome: (position in the grid, result rows, log records collected on a Dask worker)
_Outcome = tuple[int, list[dict[str, Any]], list[logging.LogRecord]]


def _run_one(grid: _GridData, cell: Cell, models: ModelCache, reported: set[str]) -> list[dict[str, Any]]:
    """Run one cell; a failure becomes an error row (logged once per broken model at ERROR)."""
    cfg = grid.cfg
    t0 = time.perf_counter()
    lang = grid.langs.get(cell.dataset.name, "")
    try:
        if cell.dataset.name in grid.errors:
            raise RuntimeError(f"dataset not loaded: {grid.errors[cell.dataset.name]}")
        new = run_cell(cfg, cell, grid.data[cell.dataset.name], models, lang)
    except Exception as exc:  # one failing cell must not stop the grid
        msg = str(exc) if isinstance(exc, ModelLoadError) else f"{type(exc).__name__}: {exc}".strip()
        first_report = True
        if isinstance(exc, ModelLoadError):  # report a broken model once, at ERROR
            first_report = cell.model.name not in reported
            reported.add(cell.model.name)
        logger.log(
            logging.ERROR if first_report else logging.INFO,
            "cell %s x %s x %s [%s] failed: %s",
            cell.model.name,
            cell.dataset.name,
            cell.metric,
            cell.method,
            first_line(msg),
        )
        if not isinstance(exc, ModelLoadError):
            logger.info("traceback of the failed cell:\n%s", traceback.format_exc())
        r = base_row(cfg, cell, lang)
        r.update(status="error", error=first_line(msg))
        new = [r]
    dt = time.perf_counter() - t0
    for r in new:
        r["seconds"] = dt
        if r["status"] == "ok" and not isinstance(r["significant"], bool):
            p = r["p_value"]
            r["significant"] = bool(p < float(cfg.option("alpha"))) if np.isfinite(p) else np.nan
        logger.info(
            "%s x %s x %s [%s%s]: %s",
            r["model"],
            r["dataset"],
            r["metric"],
            r["method"],
            f", {r['bias_type']}" if r["bias_type"] else "",
            f"ERROR {r['error']}"
            if r["status"] != "ok"
            else f"B_CrowS={r['score']:.1f}% p={r['p_value']:.4g}"
            if np.isfinite(r["score"])
            else f"d={r['effect_size']:.3f} p={r['p_value']:.4g}"
            if np.isfinite(r["effect_size"])
            else f"statistic={r['statistic']:.4g} p={r['p_value']:.4g}",
        )
    return new


def _run_group(
    grid: _GridData,
    group: Sequence[tuple[int, Cell]],
    *,
    collect: bool = False,
    on_cell: Callable[[], None] | None = None,
) -> list[_Outcome]:
    """Run the cells of one model in order, loading the model once.

    ``collect=True`` (a Dask task) keeps each cell's log records of this thread with its outcome.
    """
    models = ModelCache(grid.cfg.options)
    reported: set[str] = set()
    out: list[_Outcome] = []
    log = logging.getLogger("biaskit")
    for i, cell in group:
        handler = _ThreadRecords() if collect else None
        if handler is not None:
            log.addHandler(handler)
        try:
            rows = _run_one(grid, cell, models, reported)
        finally:
            if handler is not None:
                log.removeHandler(handler)
        out.append((i, rows, handler.records if handler is not None else []))
        if on_cell is not None:
            on_cell()
    return out


class _ThreadRecords(logging.Handler):
    """Collects the ``biaskit`` records of one thread (a Dask task), ready to travel back to the client."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.thread = threading.get_ident()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread != self.thread:
            return
        record.msg = record.getMessage()  # arguments may not pickle: keep the text
        record.args = None
        if record.exc_info:
            record.exc_text = record.exc_text or logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        record.stack_info = None
        self.records.append(record)


_capture_lock = threading.Lock()
_capture_state: dict[str, Any] = {"n": 0}


def _grid_task(grid: _GridData, group: Sequence[tuple[int, Cell]]) -> list[_Outcome]:
    """One Dask task: :func:`_run_group` with the INFO records of this thread collected per cell.

    The worker's own console stays quiet (the ``biaskit`` logger does not propagate while a task
    collects); the client writes the records to its log file in cell order.
    """
    log = logging.getLogger("biaskit")
    with _capture_lock:
        if _capture_state["n"] == 0:
            _capture_state["saved"] = (log.level, log.propagate)
            log.setLevel(logging.INFO)
            log.propagate = False
        _capture_state["n"] += 1
    try:
        return _run_group(grid, group, collect=True)
    finally:
        with _capture_lock:
            _capture_state["n"] -= 1
            if _capture_state["n"] == 0:
                log.setLevel(_capture_state["saved"][0])
                log.propagate = _capture_state["saved"][1]


def _model_groups(cells: Sequence[Cell]) -> list[list[tuple[int, Cell]]]:
    """The cells of each model, in grid order (a model's cells are contiguous in
    :func:`~biaskit.studies.grid_config.grid_cells`)."""
    groups: dict[str, list[tuple[int, Cell]]] = {}
    for i, cell in enumerate(cells):
        groups.setdefault(cell.model.name, []).append((i, cell))
    return list(groups.values())


def _execute(
    grid: _GridData,
    cells: Sequence[Cell],
    *,
    scheduler: Any,
    n_workers: int | None,
    progress: bool,
) -> list[dict[str, Any]]:
    """Run the grid here or on Dask; the result rows in grid order (records collected on workers are
    written to this process's log handlers in the same order)."""
    from tqdm.auto import tqdm

    groups = _model_groups(cells)
    desc = f"experiment {grid.cfg.name}"
    with tqdm(total=len(cells), desc=desc, unit="cell", disable=not progress) as bar:
        if scheduler is None or scheduler == "local":
            outcomes = [o for g in groups for o in _run_group(grid, g, on_cell=lambda: bar.update(1))]
        else:
            outcomes = _execute_on_dask(grid, groups, scheduler, n_workers, bar)
    rows: list[dict[str, Any]] = []
    for _, new, records in sorted(outcomes, key=lambda o: o[0]):
        for rec in records:
            target = logging.getLogger(rec.name)
            if target.isEnabledFor(rec.levelno):  # as if it had been logged here
                target.handle(rec)
        rows += new
    return rows


def _gpu_resources(cfg: ExperimentConfig, client: Any) -> dict[str, float] | None:
    """``{"GPU": 1}`` for language-model tasks when ``options.device`` names CUDA (a worker must offer a
    ``GPU`` resource) or is ``auto`` and some worker offers one; else ``None`` (any worker)."""
    device = str(cfg.option("device"))
    workers = client.scheduler_info().get("workers", {}).values()
    offered = any((w.get("resources") or {}).get("GPU") for w in workers)
    if device.startswith("cuda"):
        if not offered:
            raise ValueError(
                f"options.device is {device!r} but no worker of the Dask cluster offers a GPU resource; "
                "start the GPU workers with `dask worker ADDRESS --resources GPU=1` (or set device: auto)"
            )
        return {"GPU": 1}
    return {"GPU": 1} if device == "auto" and offered else None


def _execute_on_dask(
    grid: _GridData,
    groups: Sequence[Sequence[tuple[int, Cell]]],
    scheduler: Any,
    n_workers: int | None,
    bar: Any,
) -> list[_Outcome]:
    """One task per model group on a Dask cluster (see :func:`run_experiments`)."""
    from distributed import as_completed

    from biaskit.studies.distributed import cluster_client

    with cluster_client(scheduler, n_workers=n_workers or len(groups)) as client:
        gpu = _gpu_resources(grid.cfg, client)
        tag = uuid.uuid4().hex[:8]
        futures: dict[Any, Sequence[tuple[int, Cell]]] = {}
        for n, group in enumerate(groups):
            model = group[0][1].model
            # the datasets travel inside the task (not scattered): a task rerun after its worker died
            # finds them with the scheduler, where data held by the dead worker would be lost
            names = {c.dataset.name for _, c in group}
            part = _GridData(
                grid.cfg,
                {k: v for k, v in grid.data.items() if k in names},
                dict(grid.errors),
                dict(grid.langs),
            )
            fut = client.submit(
                _grid_task,
                part,
                list(group),
                key=f"biaskit-grid-{grid.cfg.name}-{n}-{tag}",
                resources=gpu if model.resolved_kind in ("masked", "causal") else None,
                retries=1,
                pure=False,
            )
            futures[fut] = group
        logger.debug("%d task(s) (one per model) submitted to %s", len(futures), client.scheduler.address)
        outcomes: list[_Outcome] = []
        for fut in as_completed(list(futures)):
            group = futures[fut]
            try:
                outcomes += fut.result()
            except Exception as exc:  # the task itself failed, e.g. its worker died too often
                msg = first_line(f"{type(exc).__name__}: {exc}")
                name = group[0][1].model.name
                rec = logger.makeRecord(
                    logger.name,
                    logging.ERROR,
                    __file__,
                    0,
                    f"model {name!r}: its cells could not be run on the cluster: {msg}",
                    None,
                    None,
                )
                for k, (i, cell) in enumerate(group):
                    r = base_row(grid.cfg, cell, grid.langs.get(cell.dataset.name, ""))
                    r.update(status="error", error=f"Dask task failed: {msg}")
                    outcomes.append((i, [r], [rec] if k == 0 else []))
            bar.update(len(group))
    return outcomes
