r"""A recorded run of seed 002's learning curve (Barza 2023, section 6.4, Fig. 13), outside
``make reproduce``.

The thesis fine-tunes a fresh BERT on n random CDS-GAP sentences, n in 500, 1,000, 2,000, 4,000, 6,000,
8,000, 10,000 and 12,000, five times per n, 3 epochs each (Bartl et al.'s 2020 procedure), measures each
model (SBE: ASLD per pair category) and averages the five; it reports that the bias stops falling from
about 6,000 sentences.  Notebook 15's default run covers 500-2,000 only; the thesis's grid is hours of CPU
time, too long for a notebook.  This module runs (a stated part of) that grid once, on the machine at
hand, and writes a **record**, a folder committed under ``records/fig13/``:

``record.json``
    parameters (model, sizes, repetitions, epochs, seed, the fine-tuning settings, the evaluation sets),
    the sha256 of every file of the model it started from, dates, the machine (``lscpu`` model name,
    cores), software versions and git commit, the measures of the model before fine-tuning and one row
    per finished fine-tune (n, repetition, every measure, steps, training seconds), plus what part of the
    thesis's grid it covers.
``runs.csv``
    the same rows as a table.
``fig13_learning_curve.png``
    the figure (:func:`plot_learning_curve`).

Each fine-tune is one cached :func:`biaskit.training.fine_tune.fine_tune` (the draw is
:func:`biaskit.debiasing.cds.curve_sample`, the notebook's), run by
:func:`biaskit.debiasing.cds.fine_tune_many` in parallel processes, each measuring the model it trained
with :func:`biaskit.debiasing.cds.debiasing_metrics` (the measures of notebook 15's curve: mean |APPD| of
the ordinary professions and ASLD per pair set).  The record is rewritten after every finished fine-tune,
so an interrupted run leaves a valid partial record, and running the same command again resumes it (rows
already recorded are kept, finished models are found in the cache).

:func:`load_record` reads a record back (:class:`LearningCurveRecord`: the rows, their mean and SD per n,
and the provenance sentence a notebook prints); ``scripts/record_fig13.py`` is the command line.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from biaskit.core.io import atomic_path, atomic_write, atomic_write_text
from biaskit.core.paths import REPO_ROOT
from biaskit.studies import run_provenance as rp

logger = logging.getLogger(__name__)

__all__ = [
    "FIGURE_FILE",
    "RECORD_FILE",
    "RUNS_FILE",
    "THESIS_GRID",
    "LearningCurveRecord",
    "default_record_dir",
    "load_record",
    "plot_learning_curve",
    "run_record",
]

#: the thesis's grid (seed 002 section 6.4.1): sizes, repetitions per size, epochs of each fine-tune
THESIS_GRID: dict[str, Any] = {
    "sizes": (500, 1000, 2000, 4000, 6000, 8000, 10000, 12000),
    "samples": 5,
    "epochs": 3,
    "model": "bert-base-uncased",
}
RECORD_FILE = rp.RECORD_FILE
RUNS_FILE = "runs.csv"
FIGURE_FILE = "fig13_learning_curve.png"
#: what the record describes (its ``what`` field; a reader checks it)
WHAT = "seed 002 (Barza 2023) section 6.4, Fig. 13: CDS-GAP learning curve, recorded run"


def default_record_dir() -> Path | None:
    """``<repository>/records/fig13`` in a checkout of the repository; ``None`` when installed from a
    wheel."""
    return rp.record_dir("fig13")


# =============================================================================================
# reading
# =============================================================================================
@dataclass
class LearningCurveRecord:
    """A recorded learning curve: its metadata (``meta``, the ``record.json`` without the rows) and
    ``runs``."""

    path: Path
    meta: dict[str, Any]
    runs: pd.DataFrame
    before: dict[str, float] = field(default_factory=dict)

    @property
    def parameters(self) -> dict[str, Any]:
        return self.meta["parameters"]

    @property
    def measures(self) -> list[str]:
        """The measure columns (mean |APPD| and one ASLD per pair set), in the record's order."""
        return list(self.before) or [
            c for c in self.runs.columns if c not in ("n", "sample", "steps", "train_seconds")
        ]

    def summary(self) -> pd.DataFrame:
        """Mean, SD and number of repetitions of every measure per n (columns ``(measure, stat)``)."""
        if self.runs.empty:
            return pd.DataFrame()
        g = self.runs.groupby("n")[self.measures]
        return pd.concat({"mean": g.mean(), "std": g.std(), "runs": g.count()}, axis=1).swaplevel(axis=1)

    def coverage(self) -> dict[str, Any]:
        """What part of the thesis's grid the record holds (sizes, repetitions, epochs, runs done /
        planned)."""
        return self.meta["coverage"]

    def provenance(self) -> str:
        """One sentence: what ran, where, when, on which model, and how it differs from the thesis's grid."""
        p, cov, m = self.parameters, self.coverage(), self.meta
        done = cov["runs_done"]
        sizes = sorted({int(n) for n in self.runs["n"]}) if not self.runs.empty else []
        per_n = self.runs.groupby("n").size() if not self.runs.empty else pd.Series(dtype=int)
        reps = (
            f"{int(per_n.min())}"
            if len(per_n) and per_n.min() == per_n.max()
            else f"{dict(per_n.astype(int))}"
        )
        short = ", ".join(f"{n:,}" for n in sizes) or "none yet"
        return (
            f"Recorded run (`{self.path.name}/{RECORD_FILE}`, {m.get('finished') or m.get('updated')}): "
            f"{done} of {cov['runs_planned']} planned fine-tunes of `{m['model']['name']}`"
            + rp.weights_note(m["model"].get("files_sha256", {}))
            + f", n = {short} sentences, {reps} repetition(s) per n, {p['epochs']} epoch(s) each, on "
            f"{m['machine']['cpu']} ({m['machine']['cores']} cores, {p['n_jobs']} fine-tunes side by side), "
            f"{m.get('wall_seconds', 0) / 60:,.0f} min of wall time"
            + self._cache_note()
            + "; the thesis: n = 500-12,000, "
            f"{THESIS_GRID['samples']} repetitions, {THESIS_GRID['epochs']} epochs, BERT-base. "
            + cov["versus_thesis"]
        )

    def _cache_note(self) -> str:
        if "model_folder" not in self.runs.columns or self.runs.empty:
            return ""
        return (
            " (fine-tunes are cached by model, data and settings and shared with notebook 15: one found "
            "finished is loaded, not retrained; each row names its model folder)"
        )


def load_record(path: str | Path | None = None) -> LearningCurveRecord | None:
    """Read a record folder (default :func:`default_record_dir`); ``None`` when there is none.

    ``ValueError`` when the folder holds a ``record.json`` that is not a learning-curve record or lacks
    its parameters, model hashes or machine (a record without its provenance is not read).
    """
    folder = Path(path) if path is not None else default_record_dir()
    need = ("parameters", "model", "machine", "versions", "coverage", "runs")
    meta = rp.read_record(folder, what=WHAT, kind="a Fig. 13 learning-curve record", need=need)
    if meta is None or folder is None:
        return None
    rows = meta.pop("runs")
    runs = pd.DataFrame(rows)
    if not runs.empty:
        runs = runs.sort_values(["n", "sample"], kind="stable").reset_index(drop=True)
    return LearningCurveRecord(path=folder, meta=meta, runs=runs, before=dict(meta.get("before") or {}))


# =============================================================================================
# the figure
# =============================================================================================
def plot_learning_curve(record: LearningCurveRecord, *, labels: dict[str, str] | None = None):
    """Fig. 13 from a record: mean |APPD| (left) and the ASLD of each pair set (right) against n.

    Each point is the mean over the repetitions, the bar their SD; n = 0 is the model before fine-tuning.
    ``labels`` renames measures in the legend.  Returns the matplotlib figure.
    """
    import matplotlib.pyplot as plt

    labels = labels or {}
    summ = record.summary()
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.9))
    for col in record.measures:
        ax = axes[0] if col == "mean |APPD|" else axes[1]
        xs = [0, *summ.index] if col in record.before else list(summ.index)
        ys = ([record.before[col]] if col in record.before else []) + list(summ[(col, "mean")])
        err = ([0.0] if col in record.before else []) + list(summ[(col, "std")].fillna(0.0))
        ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=labels.get(col, col))
    axes[0].set_ylabel("mean |APPD| (template test)")
    axes[1].set_ylabel("ASLD (sentence pairs)")
    for ax in axes:
        ax.set_xlabel("CDS-GAP sentences used for fine-tuning (0: before)")
        ax.axvline(6000, color="grey", lw=0.6, ls=":")
    axes[1].legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
    p = record.parameters
    fig.suptitle(
        f"Learning curve (Fig. 13), recorded run: {record.meta['model']['name']}, "
        f"{p['epochs']} epoch(s), mean ± SD over repetitions "
        "(dotted: 6,000, where the thesis saw it flatten)",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


# =============================================================================================
# running
# =============================================================================================
def _machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False, timeout=10).stdout
        for line in out.splitlines():
            if line.lower().startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except (OSError, subprocess.SubprocessError):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "platform": platform.platform(), "node": platform.node()}


def _versions() -> dict[str, Any]:
    import numpy
    import torch
    import transformers

    from biaskit.core.paths import package_version

    commit = None
    try:
        res = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
        )
        commit = res.stdout.strip() or None
    except OSError:
        pass
    return {
        "biaskit": package_version(),
        "git_commit": commit,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "numpy": numpy.__version__,
        "pandas": pd.__version__,
    }


def _model_files(lm: Any) -> dict[str, str]:
    """sha256 of every file of the model's folder (its name is the folder for a bundled or local model)."""
    from biaskit.core.io import sha256_file

    folder = Path(str(lm.name))
    if not folder.is_dir():
        return {}
    return {f.name: sha256_file(f) for f in sorted(folder.iterdir()) if f.is_file()}


def _written(tuned: Any) -> str | None:
    """When the fine-tuned model's ``training.json`` was written (UTC): a model found finished in the shared
    cache (trained before, or by another process, with the same draw and settings) is loaded, not
    retrained."""
    f = Path(str(tuned.name)) / "training.json"
    if not f.is_file():
        return None
    stamp = datetime.datetime.fromtimestamp(f.stat().st_mtime, datetime.UTC)
    return stamp.replace(microsecond=0).isoformat()


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat()


def _versus_thesis(
    model: str, sizes: Sequence[int], samples: Sequence[int], epochs: int, done: int, planned: int
) -> str:
    parts = []
    if tuple(sorted(sizes)) != THESIS_GRID["sizes"]:
        parts.append(f"sizes {', '.join(f'{n:,}' for n in sorted(sizes))} instead of 500-12,000")
    if len(samples) != THESIS_GRID["samples"]:
        parts.append(f"{len(samples)} repetition(s) per n instead of {THESIS_GRID['samples']}")
    if epochs != THESIS_GRID["epochs"]:
        parts.append(f"{epochs} epoch(s) instead of {THESIS_GRID['epochs']}")
    if done < planned:
        parts.append(f"only {done} of the {planned} planned fine-tunes finished")
    grid = "The thesis's grid" if not parts else "Differs from the thesis's grid: " + "; ".join(parts)
    what = (
        " (the bundled model trained by biaskit: 2 layers, 1.5 million parameters)"
        if model == "en-mlm"
        else ""
    )
    return (
        grid
        + f". The model is `{model}`{what}, not BERT-base, and the ASLD pairs are stand-ins (the thesis's "
        "are unpublished), so the values are not comparable one to one."
    )


def _by_n(rows: Sequence[dict[str, Any]], measures: Sequence[str]) -> list[dict[str, Any]]:
    """Per n: the number of repetitions and each of ``measures``' mean and SD over them (SD None for one
    run)."""
    out = []
    for n in sorted({int(r["n"]) for r in rows}):
        at = [r for r in rows if int(r["n"]) == n]
        row: dict[str, Any] = {"n": n, "runs": len(at)}
        for m in measures:
            vals = [float(r[m]) for r in at if r.get(m) is not None]
            row[m] = sum(vals) / len(vals) if vals else None
            row[f"{m} sd"] = statistics.stdev(vals) if len(vals) > 1 else None
        out.append(row)
    return out


def run_record(
    out_dir: str | Path | None = None,
    *,
    model: str = "en-mlm",
    sizes: Sequence[int] = THESIS_GRID["sizes"],
    samples: Sequence[int] = tuple(range(THESIS_GRID["samples"])),
    epochs: int = THESIS_GRID["epochs"],
    seed: int = 0,
    n_jobs: int = 0,
    batch_size: int = 64,
    figure: bool = True,
    progress: bool = True,
) -> LearningCurveRecord:
    """Run the learning curve for ``sizes`` x ``samples`` (repetition indices) and write the record.

    The fine-tunes are notebook 15's (:func:`biaskit.debiasing.cds.curve_sample` of the whole CDS-GAP with
    ``seed``; Bartl's settings with ``epochs``; model loaded as the notebook loads it), so they share its
    cache.  Runs are ordered repetition by repetition (all sizes of repetition 0 first), so a run stopped
    early covers every size with fewer repetitions.  An existing record in ``out_dir`` with the same model,
    epochs, seed and evaluation is resumed: its rows are kept and only the missing ``(n, sample)`` run.
    ``n_jobs``: parallel fine-tunes (0: one per CPU core).  Returns the record as read back.
    """
    import torch

    from biaskit.debiasing import cds as db
    from biaskit.lm import get_masked_lm
    from biaskit.metrics import gender_templates as gt
    from biaskit.training.fine_tune import KEY_WHEN_SET

    folder = Path(out_dir) if out_dir is not None else default_record_dir()
    if folder is None:
        raise ValueError("give out_dir: there is no repository checkout to hold records/fig13")
    folder.mkdir(parents=True, exist_ok=True)
    n_jobs = n_jobs if n_jobs > 0 else (os.cpu_count() or 1)
    torch.set_num_threads(1)
    t0 = time.perf_counter()

    base = get_masked_lm(model)
    corpus = db.cds_gap_corpus(None, seed=seed).sentences
    instances = gt.build_tbd_instances("clean")
    pairs = db.sbe_evaluation_pairs(tbd_instances=instances)
    cfg = replace(db.BARTL, epochs=epochs)
    evaluate = partial(db.debiasing_metrics, instances=instances, pairs=pairs, batch_size=batch_size)
    params = {
        "model": model,
        "sizes": [int(n) for n in sizes],
        "samples": [int(k) for k in samples],
        "epochs": int(epochs),
        "seed": int(seed),
        "n_jobs": int(n_jobs),
        "batch_size": int(batch_size),
        "corpus": (
            f"CDS-GAP, all {len(corpus):,} sentences "
            f"(biaskit.debiasing.cds.cds_gap_corpus(None, seed={seed}))"
        ),
        "draw": "biaskit.debiasing.cds.curve_sample: default_rng([seed, n, k]), without replacement",
        "fine_tune": {
            k: v
            for k, v in asdict(cfg).items()
            if k not in ("device", "checkpoint_every") and not (k in KEY_WHEN_SET and v is None)
        },
        "evaluation": {
            "template_test": (
                f"TBD 'clean', {len(instances):,} instances (mean |APPD| of the ordinary professions)"
            ),
            "sentence_pairs": {str(c): int(v) for c, v in pairs["category"].value_counts(sort=False).items()},
        },
    }
    key = {k: params[k] for k in ("model", "epochs", "seed", "fine_tune", "evaluation")}

    old = None
    if (folder / RECORD_FILE).is_file():
        old = json.loads((folder / RECORD_FILE).read_text(encoding="utf-8"))
        if {k: old.get("parameters", {}).get(k) for k in key} != key:
            raise ValueError(
                f"{folder / RECORD_FILE} was recorded with other settings; "
                "move it away or use another out_dir"
            )
    rows: list[dict[str, Any]] = list(old["runs"]) if old else []
    have = {(int(r["n"]), int(r["sample"])) for r in rows}
    # repetitions added to a record (--first-sample 1 --samples 4) keep the earlier ones in its parameters
    params["samples"] = sorted({int(k) for k in samples} | {k for _, k in have})
    planned = [(int(n), int(k)) for k in samples for n in sorted(sizes)]
    todo = [nk for nk in planned if nk not in have]
    before = old.get("before") if old else None
    if not before:
        before = evaluate(base)
    meta: dict[str, Any] = {
        "what": WHAT,
        "thesis": {**THESIS_GRID, "sizes": list(THESIS_GRID["sizes"])},
        "parameters": params,
        "model": {
            "name": model,
            "folder": str(base.name),
            "fingerprint": base.fingerprint(),
            "files_sha256": _model_files(base),
        },
        "started": old.get("started") if old else _now(),
        "machine": _machine(),
        "versions": _versions(),
        "before": before,
    }
    wall0 = float(old.get("wall_seconds", 0.0)) if old else 0.0

    def write(finished: bool) -> None:
        done_keys = {(int(r["n"]), int(r["sample"])) for r in rows}
        all_sizes = sorted({n for n, _ in planned} | {n for n, _ in done_keys})
        all_samples = sorted({k for _, k in planned} | {k for _, k in done_keys})
        n_planned = len(set(planned) | done_keys)
        rec = {
            **meta,
            "updated": _now(),
            "finished": _now() if finished else None,
            "wall_seconds": wall0 + time.perf_counter() - t0,
            "coverage": {
                "runs_done": len(done_keys),
                "runs_planned": n_planned,
                "complete": len(done_keys) >= n_planned,
                "sizes_done": sorted({n for n, _ in done_keys}),
                "versus_thesis": _versus_thesis(
                    model, all_sizes, all_samples, epochs, len(done_keys), n_planned
                ),
            },
            "by_n": _by_n(rows, list(before)),
            "runs": sorted(rows, key=lambda r: (r["n"], r["sample"])),
        }
        # each file whole or not at all, under a unique temporary name (a parallel run never shares it)
        atomic_write_text(folder / RECORD_FILE, json.dumps(rec, indent=1, default=float) + "\n")
        with atomic_write(folder / RUNS_FILE, "w", newline="") as fh:
            pd.DataFrame(rec["runs"]).to_csv(fh, index=False)

    write(finished=not todo)
    if todo:
        from biaskit.training.fine_tune import fine_tune_record

        # one call per repetition: fine_tune_many starts the longest jobs first, so within a call the order is
        # its own, but repetition k + 1 starts only when every size of repetition k is recorded
        for k in sorted({k for _, k in todo}):
            chunk = [n for n, kk in todo if kk == k]
            jobs = [(db.curve_sample(corpus, n, k, seed=seed), cfg) for n in chunk]

            def done(i: int, tuned: Any, metrics: dict[str, float], chunk=chunk, k=k) -> None:
                rec = fine_tune_record(tuned)
                rows.append(
                    {
                        "n": chunk[i],
                        "sample": k,
                        **{m: float(v) for m, v in metrics.items()},
                        "steps": rec.get("steps"),
                        "train_seconds": rec.get("train_seconds"),
                        "model_folder": Path(str(tuned.name)).name,
                        "model_written": _written(tuned),
                    }
                )
                write(finished=False)
                logger.info("Fig. 13 record: n=%d sample=%d done (%d rows)", chunk[i], k, len(rows))

            db.fine_tune_many(
                base,
                jobs,
                n_jobs=n_jobs,
                on_done=done,
                progress=progress,
                desc=f"Fig. 13 record, repetition {k}",
                evaluate=evaluate,
            )
        write(finished=True)
    record = load_record(folder)
    assert record is not None
    if figure and not record.runs.empty:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig = plot_learning_curve(
            record, labels={f"ASLD {c}": lab for c, lab in db.SBE_CATEGORY_LABELS.items()}
        )
        with atomic_path(folder / FIGURE_FILE) as tmp:
            fig.savefig(tmp, format="png", dpi=120)
        plt.close(fig)
    return record
