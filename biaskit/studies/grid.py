r"""Batches of bias experiments: models x datasets x metrics from a small YAML file.

The BIAS Detection Framework (seed 001, Puttick et al. 2024, section 3 and Figure 1) lets a
user pick models, datasets and metrics, runs every combination, and leaves "a logfile,
pre-formatted LaTeX tables and a graphical visualization".  This module does the same for
biaskit's metrics:

* ``weat``  -- WEAT (Caliskan et al. 2017) on bare words: on static vectors directly
  (:class:`biaskit.metrics.weat.WEAT`), or through a BERT-family encoder (``[CLS] w [SEP]``)
  with each pooling method;
* ``seat``  -- SEAT (May et al. 2019) on template sentences (:mod:`biaskit.metrics.seat`),
  static (mean word vector) or contextual (``cls``, ``target_first``, ``target_pooled``);
* ``lpbs``  -- the log probability bias score (Kurita et al. 2019; :mod:`biaskit.metrics.lpbs`);
* ``crows`` -- the CrowS-Pairs score B_CrowS overall and per bias type (Nangia et al. 2020;
  :func:`biaskit.lm.score_pairs` + :func:`biaskit.metrics.crows.crows_score`).

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

Every compatible (model, dataset, metric[, pooling]) cell is run: ``weat`` needs a word
dataset, ``seat`` a sentence dataset, ``lpbs`` an LPBS dataset, ``crows`` a CrowS-Pairs
dataset, and ``lpbs`` / ``crows`` a masked language model; other combinations are not cells
(they are listed in the log).  **A failing cell** (a model path that does not exist, a set
without any word in the vocabulary ...) becomes a row with ``status="error"`` and the message,
logged with its traceback, while the other cells run on.  Outputs, per experiment, in
``output_dir``: ``<name>.log``, ``<name>.csv`` (tidy, one row per result),
``<name>.tex`` (``pandas.io.formats.style.Styler.to_latex``: tests x models, significant
results in bold), ``<name>_effect_sizes.png`` and ``<name>_crows.png``, and the resolved
configuration ``<name>_config.yaml``.

Command line: ``python -m biaskit run CONFIG`` (see :mod:`biaskit.__main__`); notebooks call
:func:`run_experiments` and get the tidy :class:`pandas.DataFrame`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import biaskit.metrics  # noqa: F401  (registers every metric)
from biaskit.core.paths import results_dir
from biaskit.core.registry import REGISTRY, GridCall, GridSupport
from biaskit.metrics.crows import crows_by_bias_type

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
]


def grid_metrics() -> tuple[str, ...]:
    """The metrics a grid can run: every registered metric with grid support
    (:attr:`biaskit.core.registry.Metric.grid`), in registry order."""
    return tuple(m.name for m in REGISTRY.with_grid())


#: the grid's model kinds as the registry names them
_REGISTRY_KIND = {"mlm": "masked"}


def _grid_of(metric: str) -> GridSupport:
    grid = REGISTRY[metric].grid
    if grid is None:  # pragma: no cover - load_config refuses such metrics
        raise ValueError(f"metric {metric!r} has no grid support")
    return grid


_DEFAULT_OPTIONS: dict[str, Any] = {
    "n_permutations": 10_000,
    "exact_threshold": 100_000,
    "random_state": 0,
    "ddof": 1,
    "alpha": 0.05,
    "methods": ["cls", "target_first", "target_pooled"],
    "layer": -1,
    "batch_size": 32,
    "device": "auto",
    "weat_alternative": "greater",
    "lpbs_alternative": "two-sided",
    "lpbs_multi_token": "masks",
    "lpbs_prior_attribute_masks": "one",
    "lpbs_groups": None,
    "crows_metric": "cp",
    "crows_causal_metric": "ll",
    "crows_unk": "skip",
    "crows_cache": True,
    "oov_policy": "drop",
}
#: Columns of the tidy result table, in order.  ``method``: pooling (``vectors`` = WEAT on static
#: vectors, ``mean`` = SEAT on static vectors, ``cls`` / ``target_first`` / ``target_pooled``), ``-``
#: for LPBS, the PLL metric for CrowS; ``bias_type``: CrowS only (``all`` or one type); ``n``: stimuli
#: in X u Y (WEAT/SEAT), attribute words (LPBS), scored pairs (CrowS); ``statistic``: s(X,Y,A,B)
#: (WEAT/SEAT), sum_A s_log - sum_B s_log (LPBS), pairs preferring the stereotype (CrowS);
#: ``effect_size``: d; ``score``: B_CrowS in percent; ``permutation``: exact / sampled / exact
#: binomial; ``status``: ok / error; ``error``: why a cell failed; ``note``: dropped words, skipped
#: combinations or unscored pairs of a cell that ran; ``seconds``: run time of the cell.
COLUMNS: tuple[str, ...] = (
    "experiment",
    "model",
    "model_kind",
    "dataset",
    "language",
    "metric",
    "method",
    "bias_type",
    "targets",
    "attributes",
    "n",
    "statistic",
    "effect_size",
    "score",
    "p_value",
    "significant",
    "permutation",
    "status",
    "error",
    "note",
    "seconds",
)


# =============================================================================================
# configuration
# =============================================================================================
@dataclass(frozen=True)
class ModelSpec:
    """A model of the grid.

    ``path``: reference-vector name (``word2vec-googlenews-wefe`` ...), a vector file,
    ``word2vec:<corpus>`` (skip-gram trained offline on a biaskit corpus, cached; extra keys
    such as ``vector_size``, ``epochs``, ``sample`` go to :func:`biaskit.embeddings.vectors.train_word2vec`
    / :func:`biaskit.data.corpus.load_corpus`), ``tiny`` or a Hugging Face folder / hub id.
    ``kind``: ``"static"``, ``"mlm"`` (masked LM) or ``"causal"`` (causal LM: CrowS-Pairs with
    ``options.crows_causal_metric``, default ``"ll"``; SEAT, WEAT and LPBS are skipped, with the reason),
    guessed from ``path`` when ``None`` (a folder's ``config.json`` says which kind of language model).
    ``methods``: pooling methods for this model (default: ``options.methods``).
    ``language``: when given (``"en"``, ``"es"`` ...), the model only runs on datasets of that
    language (English vectors have no Spanish words); ``None`` = every dataset.
    """

    name: str
    path: str
    kind: str | None = None
    methods: tuple[str, ...] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    language: str | None = None

    @property
    def resolved_kind(self) -> str:
        if self.kind is not None:
            return self.kind
        from biaskit.embeddings.vectors import REFERENCE_VECTORS

        p = self.path
        if p in REFERENCE_VECTORS or p.startswith("word2vec:"):
            return "static"
        if p.lower().endswith((".kv", ".bin", ".vec", ".txt", ".gz", ".model")):
            return "static"
        if p == "tiny-causal" or "-clm" in p:
            return "causal"
        folder = Path(p).expanduser()
        if (folder / "config.json").exists():
            from biaskit.lm import model_kind

            return "causal" if model_kind(folder) == "causal" else "mlm"
        return "mlm"


@dataclass(frozen=True)
class DatasetSpec:
    """A dataset of the grid: ``path`` is an identifier of :func:`load_dataset` or a file path.

    ``sample``: for CrowS-Pairs, score a random sample of that many pairs (``random_state``).
    """

    name: str
    path: str
    sample: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ExperimentConfig:
    """A parsed experiment configuration (see the module docstring)."""

    name: str
    models: tuple[ModelSpec, ...]
    datasets: tuple[DatasetSpec, ...]
    metrics: tuple[str, ...]
    options: Mapping[str, Any] = field(default_factory=dict)
    output_dir: Path | None = None

    def option(self, key: str) -> Any:
        return self.options.get(key, _DEFAULT_OPTIONS.get(key))

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "output_dir": None if self.output_dir is None else str(self.output_dir),
            "models": [
                {
                    "name": m.name,
                    "path": m.path,
                    "kind": m.kind,
                    **({"language": m.language} if m.language else {}),
                    **({"methods": list(m.methods)} if m.methods else {}),
                    **m.extra,
                }
                for m in self.models
            ],
            "datasets": [
                {"name": d.name, "path": d.path, **({"sample": d.sample} if d.sample else {}), **d.extra}
                for d in self.datasets
            ],
            "metrics": list(self.metrics),
            "options": {**_DEFAULT_OPTIONS, **dict(self.options)},
        }


def _entries(value: Any, what: str) -> list[dict[str, Any]]:
    if value is None:
        raise ValueError(f"the configuration needs a non-empty '{what}' list")
    if isinstance(value, (str, Mapping)):
        value = [value]
    out = []
    for i, v in enumerate(value):
        if isinstance(v, str):
            out.append({"name": v, "path": v})
        elif isinstance(v, Mapping):
            d = dict(v)
            if "path" not in d:
                if len(d) == 1:  # {label: spec}
                    ((k, p),) = d.items()
                    if isinstance(p, str):
                        d = {"name": str(k), "path": p}
                    elif isinstance(p, Mapping):
                        d = {"name": str(k), **dict(p)}
                if "path" not in d:
                    raise ValueError(f"{what}[{i}] needs a 'path' (got keys {sorted(d)})")
            d.setdefault("name", str(d["path"]))
            out.append(d)
        else:
            raise ValueError(f"{what}[{i}] must be a string or a mapping, got {type(v).__name__}")
    if not out:
        raise ValueError(f"the configuration needs a non-empty '{what}' list")
    names = [d["name"] for d in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"{what}: duplicate names {dup}; give each entry a distinct 'name'")
    return out


def load_config(source: str | Path | Mapping[str, Any] | ExperimentConfig) -> ExperimentConfig:
    """Parse a configuration: a YAML file path, a YAML string, a dict, or an :class:`ExperimentConfig`.

    Unknown top-level keys and options raise ``ValueError`` listing the allowed ones; relative
    ``output_dir`` values of a file are relative to the file's folder.
    """
    if isinstance(source, ExperimentConfig):
        return source
    base: Path | None = None
    if isinstance(source, Mapping):
        raw = dict(source)
    else:
        import yaml

        text = str(source)
        p = Path(text).expanduser()
        is_file = "\n" not in text and (p.suffix.lower() in (".yaml", ".yml", ".json") or p.exists())
        if is_file:
            if not p.exists():
                raise FileNotFoundError(f"experiment configuration not found: {p}")
            base = p.resolve().parent
            text = p.read_text(encoding="utf-8")
        try:
            raw = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ValueError(f"the experiment configuration is not valid YAML: {exc}") from exc
        if not isinstance(raw, Mapping):
            raise ValueError("the experiment configuration must be a mapping with models, datasets, metrics")
        raw = dict(raw)
        if is_file:
            raw.setdefault("name", p.stem)
    allowed = {"name", "models", "datasets", "metrics", "options", "output_dir", "description"}
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise ValueError(f"unknown configuration key(s) {unknown}; allowed: {sorted(allowed)}")
    metrics_raw = raw.get("metrics") or list(grid_metrics())
    if isinstance(metrics_raw, str):
        metrics_raw = [metrics_raw]
    metrics = tuple(str(m).lower() for m in metrics_raw)
    bad = [m for m in metrics if m not in grid_metrics()]
    if bad:
        raise ValueError(f"unknown metric(s) {bad}; choose from {list(grid_metrics())}")
    options = dict(raw.get("options") or {})
    unknown_opts = sorted(set(options) - set(_DEFAULT_OPTIONS))
    if unknown_opts:
        raise ValueError(f"unknown option(s) {unknown_opts}; allowed: {sorted(_DEFAULT_OPTIONS)}")
    from biaskit.embeddings.encoders import POOLING_METHODS

    methods = options.get("methods", _DEFAULT_OPTIONS["methods"])
    if isinstance(methods, str):
        methods = [methods]
    if any(m not in POOLING_METHODS for m in methods):
        raise ValueError(f"options.methods must be taken from {POOLING_METHODS}, got {methods}")
    options["methods"] = list(methods)
    models = []
    for d in _entries(raw.get("models"), "models"):
        name, path = str(d.pop("name")), str(d.pop("path"))
        kind = d.pop("kind", None)
        if kind not in (None, "static", "mlm", "causal"):
            raise ValueError(f"model {name!r}: kind must be 'static', 'mlm' or 'causal', got {kind!r}")
        lang = d.pop("language", None)
        ms = d.pop("methods", None)
        if isinstance(ms, str):
            ms = [ms]
        if ms is not None and any(m not in POOLING_METHODS for m in ms):
            raise ValueError(f"model {name!r}: methods must be taken from {POOLING_METHODS}")
        models.append(ModelSpec(name, path, kind, tuple(ms) if ms else None, d, lang))
    datasets = []
    for d in _entries(raw.get("datasets"), "datasets"):
        name, path = str(d.pop("name")), str(d.pop("path"))
        sample = d.pop("sample", None)
        datasets.append(DatasetSpec(name, path, int(sample) if sample else None, d))
    out_dir = raw.get("output_dir")
    if out_dir is not None:
        out_dir = Path(str(out_dir)).expanduser()
        if not out_dir.is_absolute() and base is not None:
            out_dir = base / out_dir
    name = str(raw.get("name") or "experiment")
    if not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise ValueError(
            f"experiment name {name!r} must be letters, digits, '-', '_' or '.' (it names files)"
        )
    return ExperimentConfig(name, tuple(models), tuple(datasets), metrics, options, out_dir)


# =============================================================================================
# datasets
# =============================================================================================
def _guess_kind(path: str) -> str:
    p = path.lower()
    if p.startswith("crows:") or "crows" in Path(p).name:
        return "crows"
    if "/lpbs/" in p or p.startswith("lpbs:") or p.endswith("/lpbs"):
        return "lpbs"
    if p.startswith("may2019:weat") or "/weat/" in p or p.endswith("/words") or p.endswith(".txt"):
        return "words"
    return "sentences"


def load_dataset(spec: str | DatasetSpec, *, random_state: int = 0) -> tuple[str, Any]:
    """Load a dataset; return ``(kind, data)``.

    Identifiers: ``may2019:sent-weat7`` / ``bfh:de/SEAT/CW1_context`` / ``es:seat_math_arts``
    (SEAT sentences -> :class:`~biaskit.metrics.seat.SEATQuery`), ``may2019:weat7`` /
    ``bfh:de/WEAT/CW1`` / ``es:seat_math_arts/words`` (words -> ``WEATQuery``),
    ``bfh:en/LPBS/LPBS_7``, ``es:seat_math_arts/lpbs`` (-> :class:`~biaskit.metrics.lpbs.LPBSQuery`), ``crows:en``,
    ``crows:es`` (``crows:es-paraphrased``, ``crows:es-random``) -> a DataFrame with
    ``sent_more, sent_less, bias_type``; or a file path.  ``DatasetSpec.sample`` draws a
    random sample of CrowS pairs.
    """
    ds = spec if isinstance(spec, DatasetSpec) else DatasetSpec(str(spec), str(spec))
    path = ds.path
    kind = _guess_kind(path)
    if kind == "crows":
        return "crows", _load_crows(path, ds.sample, random_state)
    if kind == "lpbs":
        from biaskit.metrics.lpbs import load_lpbs

        return "lpbs", load_lpbs(path[5:] if path.startswith("lpbs:") else path)
    from biaskit.metrics.seat import SEATQuery, load_seat

    q = load_seat(path)
    return ("sentences" if isinstance(q, SEATQuery) else "words"), q


def _path_of(cfg: ExperimentConfig, name: str) -> str:
    return next((d.path for d in cfg.datasets if d.name == name), name)


def _load_crows(path: str, sample: int | None, random_state: int) -> pd.DataFrame:
    from biaskit.data import datasets as bds

    which = path.split(":", 1)[1] if path.lower().startswith("crows:") else path
    if which == "en":
        df, lang = bds.load_crows_pairs_en(), "en"
    elif which in ("es", "es-original", "es-paraphrased", "es-random"):
        variant = {"es": "original", "es-original": "original"}.get(which, which[3:])
        df, lang = bds.load_crows_pairs_es(variant), "es"  # type: ignore[arg-type]
    elif Path(which).exists():
        df, lang = pd.read_csv(which), "?"
        missing = [c for c in ("sent_more", "sent_less") if c not in df]
        if missing:
            raise ValueError(
                f"{which}: a CrowS-Pairs file needs columns sent_more, sent_less (missing {missing})"
            )
    else:
        raise ValueError(
            f"unknown CrowS-Pairs dataset {path!r}; use crows:en, crows:es, crows:es-paraphrased, crows:es-random or a CSV path"
        )
    if "encoding_ok" in df:
        bad = int((~df["encoding_ok"].astype(bool)).sum())
        if bad:
            logger.warning("%s: %d pair(s) with unrepairable encoding left out", path, bad)
            df = df[df["encoding_ok"].astype(bool)]
    if "bias_type" not in df:
        df = df.assign(bias_type="(none)")
    n_unl = int(df["bias_type"].isna().sum())
    if n_unl:
        logger.info("%s: %d pair(s) without a bias type are grouped as '(unlabelled)'", path, n_unl)
        df = df.assign(bias_type=df["bias_type"].fillna("(unlabelled)"))
    if sample is not None and sample < len(df):
        df = df.sample(n=sample, random_state=random_state).sort_index()
        logger.info("%s: random sample of %d pairs (random_state=%d)", path, sample, random_state)
    df = df.reset_index(drop=True)
    df.attrs["language"] = lang
    return df


# =============================================================================================
# models
# =============================================================================================
class ModelLoadError(RuntimeError):
    """A model of the grid could not be loaded (the message names the model and the cause)."""


def _first_line(msg: str, limit: int = 300) -> str:
    line = msg.strip().splitlines()[0] if msg.strip() else msg
    return line if len(line) <= limit else line[: limit - 3] + "..."


class _ModelCache:
    """Loads each model once; a failure is remembered and reported for every cell of that model."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.options = options
        self._store: dict[str, Any] = {}

    def get(self, spec: ModelSpec) -> Any:
        if spec.name not in self._store:
            try:
                self._store[spec.name] = self._load(spec)
            except Exception as exc:  # reported per cell
                logger.info("model %r: loading failed\n%s", spec.name, traceback.format_exc())
                self._store[spec.name] = ModelLoadError(
                    f"model {spec.name!r} not loaded: {type(exc).__name__}: {exc}"
                )
        obj = self._store[spec.name]
        if isinstance(obj, ModelLoadError):
            raise ModelLoadError(str(obj))
        return obj

    def _load(self, spec: ModelSpec) -> Any:
        t0 = time.perf_counter()
        kind = spec.resolved_kind
        if kind == "static":
            from biaskit.embeddings.vectors import REFERENCE_VECTORS, load_reference_vectors, load_vectors

            if spec.path in REFERENCE_VECTORS:
                obj = load_reference_vectors(spec.path)
            elif spec.path.startswith("word2vec:"):
                obj = _train_static(spec)
            else:
                obj = load_vectors(spec.path)
        else:
            from biaskit.lm import get_lm

            p = spec.path
            if p.startswith((".", "/", "~")) and not Path(p).expanduser().exists():
                raise FileNotFoundError(f"model folder {p} does not exist")
            lm_kind = "causal" if kind == "causal" else "masked"
            obj = get_lm(p, kind=lm_kind, device=str(self.options.get("device", "auto")))
        logger.info("loaded model %r (%s) in %.1f s", spec.name, kind, time.perf_counter() - t0)
        return obj


def _train_static(spec: ModelSpec) -> Any:
    from biaskit.data.corpus import load_corpus
    from biaskit.embeddings.vectors import train_word2vec

    corpus = spec.path.split(":", 1)[1]
    ex = dict(spec.extra)
    sample = ex.pop("sample", None)
    params = {"vector_size": 30, "window": 5, "min_count": 2, "epochs": 20, "seed": 0}
    params.update(
        {
            k: ex.pop(k)
            for k in list(ex)
            if k in ("vector_size", "window", "min_count", "epochs", "seed", "sg", "negative")
        }
    )
    if ex:
        raise ValueError(f"model {spec.name!r}: unknown training option(s) {sorted(ex)}")
    sentences = load_corpus(corpus, sample=sample, random_state=42)
    return train_word2vec(sentences, **params)


# =============================================================================================
# cells
# =============================================================================================
@dataclass(frozen=True)
class _Cell:
    model: ModelSpec
    dataset: DatasetSpec
    metric: str
    method: str


def _base_row(cfg: ExperimentConfig, cell: _Cell, language: str = "") -> dict[str, Any]:
    return {
        "experiment": cfg.name,
        "model": cell.model.name,
        "model_kind": cell.model.resolved_kind,
        "dataset": cell.dataset.name,
        "language": language,
        "metric": cell.metric,
        "method": cell.method,
        "bias_type": "",
        "targets": "",
        "attributes": "",
        "n": np.nan,
        "statistic": np.nan,
        "effect_size": np.nan,
        "score": np.nan,
        "p_value": np.nan,
        "significant": np.nan,
        "permutation": "",
        "status": "ok",
        "error": "",
        "note": "",
        "seconds": np.nan,
    }


def _run_cell(
    cfg: ExperimentConfig, cell: _Cell, data: Any, models: _ModelCache, lang: str = ""
) -> list[dict[str, Any]]:
    """The rows of one cell: the metric's registered grid runner
    (:attr:`biaskit.core.registry.GridSupport.run`) on the loaded model and dataset."""
    model = models.get(cell.model)
    row = _base_row(cfg, cell, lang)
    call = GridCall(
        model=model,
        model_kind=cell.model.resolved_kind,
        model_name=cell.model.name,
        data=data,
        method=cell.method,
        options=_options(cfg, cell.model),
        language=lang,
    )
    return [{**row, **r} for r in _grid_of(cell.metric).runner()(call)]


def _options(cfg: ExperimentConfig, model: ModelSpec) -> dict[str, Any]:
    """Every grid option with its default filled in; a model's own ``methods`` replace the grid's."""
    out = {k: cfg.option(k) for k in _DEFAULT_OPTIONS}
    if model.methods:
        out["methods"] = list(model.methods)
    return out


def _dataset_language(data: Any, path: str = "") -> str:
    """Language of a loaded dataset: its ``language`` attribute, else guessed from the identifier."""
    if isinstance(data, pd.DataFrame):
        lang = str(data.attrs.get("language", ""))
    else:
        lang = str(getattr(data, "language", "") or "")
    if lang:
        return lang
    if path.startswith("may2019:"):
        return "en"
    if path.startswith("bfh:"):
        return path[4:].split("/", 1)[0]
    if path.startswith("es:"):
        return "es"
    return ""


def _cells(
    cfg: ExperimentConfig, kinds: Mapping[str, str], langs: Mapping[str, str] | None = None
) -> tuple[list[_Cell], list[str]]:
    cells, skipped = [], []
    langs = langs or {}
    for m in cfg.models:
        mk = m.resolved_kind
        methods = list(m.methods or cfg.option("methods"))
        for d in cfg.datasets:
            dk = kinds[d.name]
            dl = langs.get(d.name, "")
            if m.language and dl and dl not in ("?", m.language):
                skipped.append(f"{m.name} ({m.language}) x {d.name} ({dl}): different languages")
                continue
            for metric in cfg.metrics:
                grid = _grid_of(metric)
                if grid.dataset_kind != dk:
                    continue
                reads = REGISTRY[metric].model_kinds
                if mk in grid.not_for or _REGISTRY_KIND.get(mk, mk) not in reads:
                    why = grid.not_for.get(mk) or f"{metric} reads {', '.join(reads)} models, not {mk}"
                    skipped.append(f"{m.name} x {d.name} x {metric}: {why}")
                    continue
                options = {**{k: cfg.option(k) for k in _DEFAULT_OPTIONS}, "methods": methods}
                cells += [_Cell(m, d, metric, meth) for meth in grid.cell_methods(mk, options)]
    for d in cfg.datasets:
        if not any(_grid_of(mt).dataset_kind == kinds[d.name] for mt in cfg.metrics):
            skipped.append(
                f"dataset {d.name} ({kinds[d.name]}) matches none of the metrics {list(cfg.metrics)}"
            )
    return cells, skipped


# =============================================================================================
# reporting
# =============================================================================================
def _test_label(df: pd.DataFrame) -> pd.Series:
    lab = df["dataset"].astype(str) + " | " + df["metric"].str.upper() + " | " + df["method"].astype(str)
    bt = df["bias_type"].fillna("").astype(str)
    return lab.where(bt == "", lab + " | " + bt)


def summary_table(
    results: pd.DataFrame, *, alpha: float = 0.05, digits: int = 2
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Wide table (tests x models) of formatted cells, and a same-shaped boolean significance mask.

    A cell reads ``"d (p)"`` for WEAT/SEAT/LPBS (``d`` = effect size), ``"B% (p)"`` for CrowS
    (``B`` = B_CrowS in percent), ``"error"`` for a failed cell and ``""`` where the model was
    not run on that test.  p-values read as :func:`biaskit.core.results.format_p_value` writes them
    (``"0.023"``, ``"< 0.001"``; never e-notation).
    """
    from biaskit.core.results import format_p_value

    if results.empty:
        return pd.DataFrame(), pd.DataFrame()
    df = results.copy()
    df["test"] = _test_label(df)

    def fmt(r: pd.Series) -> str:
        if r["status"] != "ok":
            return "error"
        p = r["p_value"]
        ptxt = "" if not np.isfinite(p) else f" ({format_p_value(float(p), digits=max(3, digits + 1))})"
        if r["metric"] == "crows":
            return f"{r['score']:.1f}%{ptxt}"
        v = r["effect_size"]
        return ("n/a" if not np.isfinite(v) else f"{v:.{digits}f}") + ptxt

    df["cell"] = df.apply(fmt, axis=1)
    df["sig"] = (df["status"] == "ok") & (df["p_value"] < alpha)
    tests = list(dict.fromkeys(df["test"]))
    models = list(dict.fromkeys(df["model"]))
    wide = df.pivot_table(index="test", columns="model", values="cell", aggfunc="first").reindex(
        index=tests, columns=models
    )
    sig = df.pivot_table(index="test", columns="model", values="sig", aggfunc="first").reindex(
        index=tests, columns=models
    )
    wide = wide.fillna("")
    sig = sig.astype("boolean").fillna(False).astype(bool)
    wide.index.name = "test (dataset | metric | pooling [| bias type])"
    wide.columns.name = None
    return wide, sig


def styled_table(results: pd.DataFrame, *, alpha: float = 0.05, digits: int = 2) -> Any:
    """A :class:`pandas.io.formats.style.Styler` of :func:`summary_table` (significant cells bold)."""
    wide, sig = summary_table(results, alpha=alpha, digits=digits)
    css = sig.map(lambda s: "font-weight: bold" if s else "")
    return wide.style.apply(lambda _: css, axis=None)


def latex_table(
    results: pd.DataFrame,
    *,
    alpha: float = 0.05,
    digits: int = 2,
    caption: str | None = None,
    label: str | None = None,
) -> str:
    """LaTeX source of the summary table via ``Styler.to_latex`` (booktabs; p < alpha in bold).

    Text is escaped for LaTeX (``escape="latex"``), so underscores in dataset names are safe.
    """
    wide, sig = summary_table(results, alpha=alpha, digits=digits)
    if wide.empty:
        return "% no results\n"
    css = sig.map(lambda s: "font-weight: bold;" if s else "")
    st = (
        wide.style.apply(lambda _: css, axis=None)
        .format(escape="latex")
        .format_index(escape="latex", axis=0)
        .format_index(escape="latex", axis=1)
    )
    cap = caption or (
        f"Bias tests: effect size $d$ (WEAT, SEAT, LPBS) or $B_{{CrowS}}$ (\\%), p-value in brackets; bold: $p < {alpha}$."
    )
    tex = st.to_latex(
        caption=cap,
        label=label,
        hrules=True,
        convert_css=True,
        position_float="centering",
        column_format="l" + "r" * wide.shape[1],
    )
    # "(< 0.001)": a text-mode "<" prints as an inverted exclamation mark in LaTeX's OT1 encoding
    return tex.replace("(< ", "($<$ ")


#: what each pooling method of an encoder means, for the legend of :func:`plot_results` ("-": LPBS, which pools nothing)
POOLING_LABELS: dict[str, str] = {
    "vectors": "vectors (WEAT on static word vectors)",
    "mean": "mean (average of the words' or pieces' vectors)",
    "cls": "cls (vector of the [CLS] token)",
    "target_first": "target_first (first piece of the target word)",
    "target_pooled": "target_pooled (average over the target word's pieces)",
    "-": "n/a (LPBS: no pooling, it reads the probability at the mask)",
}


def _centred(n: int, height: float = 0.8) -> tuple[list[float], float]:
    """Offsets and height of ``n`` bars side by side, centred on their row."""
    h = height / max(1, n)
    return [(k - (n - 1) / 2) * h for k in range(n)], h


def plot_results(results: pd.DataFrame, *, alpha: float = 0.05, title: str = "") -> dict[str, Any]:
    """Bar charts: effect sizes of the WEAT/SEAT/LPBS rows, B_CrowS per bias type; returns ``{name: Figure}``.

    Each row (a test, or a CrowS-Pairs data set and bias type) gets only the bars it has, centred on
    its own label, so that no bar can be read as one of the neighbouring row's; one legend explains
    the colours (pooling methods, :data:`POOLING_LABELS`, or models); a star marks ``p < alpha``.
    """
    import matplotlib.pyplot as plt

    figs: dict[str, Any] = {}
    ok = results[results["status"] == "ok"]
    eff = ok[ok["metric"] != "crows"]
    if not eff.empty:  # one panel per model; one row per test (dataset | metric), one bar per pooling method
        eff = eff.assign(test=eff["dataset"].astype(str) + " | " + eff["metric"].str.upper())
        models = list(dict.fromkeys(eff["model"]))
        methods = list(dict.fromkeys(eff["method"]))
        colours = {me: plt.cm.tab10(k % 10) for k, me in enumerate(methods)}
        n_rows = max(eff.loc[eff["model"] == m, "test"].nunique() for m in models)
        height = 0.5 * n_rows + 2.6
        fig, axes = plt.subplots(1, len(models), figsize=(4.2 * len(models) + 1.5, height), squeeze=False)
        for ax, m in zip(axes[0], models, strict=True):
            sub = eff[eff["model"] == m]
            tests = list(dict.fromkeys(sub["test"]))
            ends = [0.0]
            for i, t in enumerate(tests):
                row = sub[sub["test"] == t].sort_values("method", key=lambda c: c.map(methods.index))
                offsets, h = _centred(len(row))
                for dy, (_, r) in zip(offsets, row.iterrows(), strict=True):
                    v = float(r["effect_size"]) if np.isfinite(r["effect_size"]) else 0.0
                    ax.barh(i + dy, v, height=h, color=colours[r["method"]])
                    ends.append(v)
                    if np.isfinite(r["p_value"]) and r["p_value"] < alpha:
                        ax.text(
                            v, i + dy, " *" if v >= 0 else "* ", va="center", ha="left" if v >= 0 else "right"
                        )
            lo, hi = min(ends), max(ends)
            pad = 0.12 * ((hi - lo) or 1.0)  # room for the stars
            ax.set_xlim(lo - pad, hi + pad)
            ax.axvline(0, color="black", lw=0.8)
            ax.set_yticks(np.arange(len(tests)), tests, fontsize="small")
            ax.set_ylim(len(tests) - 0.5, -0.5)
            ax.set_title(str(m))
            ax.set_xlabel("effect size d")
        fig.legend(
            [plt.Rectangle((0, 0), 1, 1, color=colours[me]) for me in methods],
            [POOLING_LABELS.get(me, me) for me in methods],
            loc="lower center",
            ncol=3,
            fontsize="small",
            title="pooling: how the vector of a word or sentence is read off the model",
            title_fontsize="small",
            frameon=False,
        )
        fig.suptitle(
            (title + ": " if title else "")
            + "effect sizes (positive: the first target set leans to the first attribute set); "
            + f"* p < {alpha:.2g}"
        )
        fig.tight_layout(rect=(0, 0.8 / height, 1, 1))
        figs["effect_sizes"] = fig
    cr = ok[(ok["metric"] == "crows") & (ok["bias_type"] != "all") & ok["score"].notna()]
    if not cr.empty:  # one row per data set and bias type, one bar per model that ran on it
        cr = cr.assign(test=cr["dataset"] + " | " + cr["bias_type"]).drop_duplicates(["test", "model"])
        tests = sorted(set(cr["test"]))
        cr_models = list(dict.fromkeys(cr["model"]))
        colours = {m: plt.cm.tab10(k % 10) for k, m in enumerate(cr_models)}
        fig, ax = plt.subplots(figsize=(8, 0.35 * len(tests) + 1.5))
        for i, t in enumerate(tests):
            row = cr[cr["test"] == t]
            offsets, h = _centred(len(row))
            for dy, (_, r) in zip(offsets, row.iterrows(), strict=True):
                ax.barh(i + dy, float(r["score"]), height=h, color=colours[r["model"]])
        ax.axvline(50, color="black", lw=0.8, ls="--")
        ax.set_yticks(np.arange(len(tests)), tests)
        ax.set_ylim(len(tests) - 0.5, -0.5)
        ax.set_xlim(0, 100)
        ax.set_xlabel(
            "B_CrowS (% of pairs where the stereotypical sentence is more likely; 50 = no preference)"
        )
        ax.set_title((title + " -- " if title else "") + "CrowS-Pairs by bias type")
        ax.legend(
            [plt.Rectangle((0, 0), 1, 1, color=colours[m]) for m in cr_models]
            + [plt.Line2D([], [], color="black", lw=0.8, ls="--")],
            [*cr_models, "50% = no preference"],
            title="model",
            fontsize="small",
            loc="best",
        )
        fig.tight_layout()
        figs["crows"] = fig
    return figs


# ---------------------------------------------------------------------------------------------
# for a reader: what a batch run did, in sentences (notebooks; the files keep every detail)
# ---------------------------------------------------------------------------------------------
_PY_LIST = re.compile(r"\[((?:'[^']*'(?:, )?)+)\]")


def _metric_label(metric: str) -> str:
    return REGISTRY[metric].label if metric in REGISTRY else metric


def _plain_reason(msg: str, limit: int = 160) -> str:
    """An error message as a reader should see it: no exception class, no Python list syntax."""
    text = str(msg).strip()
    text = re.sub(r"^model '[^']*' not loaded: ", "", text)
    text = re.sub(r"^[A-Z][A-Za-z]*(?:Error|Exception|Warning): ", "", text)
    text = _PY_LIST.sub(lambda m: ", ".join(re.findall(r"'([^']*)'", m.group(1))), text)
    if len(text) > limit:
        cut = text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:")
        text = cut + "…"
    return text


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def failure_summary(results: pd.DataFrame, *, max_other: int = 3) -> str:
    """What failed in a batch run and what still ran, as a few plain sentences (for a notebook page).

    A model that could not be loaded is named once with the reason and the number of its
    cells marked ``error``; other failed cells (e.g. a word set left without any word in a
    model's vocabulary) are listed, at most ``max_other`` of them, with their reason.  The
    tidy CSV and the log file keep every failed cell with its full message.
    """
    if results.empty:
        return "The batch run produced no results."
    failed = results[results["status"] == "error"]
    n_ok = int((results["status"] == "ok").sum())
    if failed.empty:
        return f"Every cell of the batch ran: {_count(n_ok, 'result')}, none failed."
    errors = failed["error"].fillna("").astype(str)
    load = errors.str.extract(r"^model '(.+?)' not loaded: ", expand=False)
    parts: list[str] = []
    for model in dict.fromkeys(load.dropna()):
        rows = failed[load == model]
        parts.append(
            f"the model '{model}' could not be loaded ({_plain_reason(rows['error'].iloc[0])}), "
            f"so its {_count(len(rows), 'cell')} are marked failed"
        )
    other = failed[load.isna()]
    for _, r in other.head(max_other).iterrows():
        parts.append(
            f"{_metric_label(r['metric'])} of '{r['model']}' on {r['dataset']} failed "
            f"({_plain_reason(r['error'])})"
        )
    if len(other) > max_other:
        parts.append(f"{_count(len(other) - max_other, 'other cell')} failed (see the CSV)")
    lead = "The batch runner survives a broken cell: " if len(parts) else ""
    return lead + "; ".join(parts) + f"; the other {_count(n_ok, 'result')} were computed."


def _option_text(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return {True: "yes", False: "no", None: "default"}[value]
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_option_text(v) for v in value) if value else "none"
    return str(value)


def config_overview(config: str | Path | Mapping[str, Any] | ExperimentConfig) -> str:
    """The configuration of a batch run as a short Markdown list (models, datasets, metrics, options).

    For the page a reader sees; the resolved configuration itself is written as YAML beside the
    results (``<name>_config.yaml``).  Only the options the configuration sets are listed.
    """
    cfg = load_config(config)

    def model(m: ModelSpec) -> str:
        lang = f", {m.language} only" if m.language else ""
        return f"{m.name} (`{m.path}`{lang})"

    def dataset(d: DatasetSpec) -> str:
        extra = f", random sample of {d.sample:,} pairs" if d.sample else ""
        return f"`{d.path}`" + (f" as {d.name}" if d.name != d.path else "") + extra

    opts = dict(cfg.options)
    lines = [
        f"* **{_count(len(cfg.models), 'model')}:** " + "; ".join(model(m) for m in cfg.models),
        f"* **{_count(len(cfg.datasets), 'dataset')}:** " + "; ".join(dataset(d) for d in cfg.datasets),
        "* **Metrics:** " + ", ".join(_metric_label(m) for m in cfg.metrics),
    ]
    if opts:
        lines.append("* **Options:** " + "; ".join(f"{k} = {_option_text(v)}" for k, v in opts.items()))
    return "\n".join(lines)


@contextlib.contextmanager
def captured_log(logger_name: str = "biaskit") -> Iterator[list[logging.LogRecord]]:
    """Keep log lines off a notebook page: collect them in a list instead of showing them.

    Inside the ``with`` block every record of ``logger_name`` (and its children) at INFO or
    above goes to the yielded list and nowhere else on screen: the handlers already attached
    (e.g. the notebook notes of :func:`biaskit.report.notebook_output.setup_notebook_logging`) are detached
    and restored after the block, and :func:`run_experiments` adds no console handler, so a
    batch run's per-cell lines reach only its log *file*.  Use the list to count the lines or
    to show what matters once, in plain words (:func:`failure_summary`).
    """
    log = logging.getLogger(logger_name)
    saved_handlers, saved_level, saved_propagate = list(log.handlers), log.level, log.propagate
    records: list[logging.LogRecord] = []

    class _Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    collector = _Collect(logging.DEBUG)
    for h in saved_handlers:
        log.removeHandler(h)
    log.addHandler(collector)
    log.setLevel(logging.INFO)  # at INFO, run_experiments adds no console handler of its own
    log.propagate = False
    try:
        yield records
    finally:
        log.removeHandler(collector)
        for h in saved_handlers:
            log.addHandler(h)
        log.setLevel(saved_level)
        log.propagate = saved_propagate


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
    """Run every cell of the grid; return the tidy results (:data:`COLUMNS`), one row per result.

    Writes (``write=True``) the log, CSV, LaTeX table, plots and resolved configuration into
    ``output_dir`` (argument > ``config.output_dir`` > ``results/experiments/<name>``); their
    paths are in ``df.attrs["outputs"]``.  A cell that raises is recorded with
    ``status="error"`` and its message (traceback in the log); the others still run.

    ``scheduler`` says where the cells run (issue 17):

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
        Path(output_dir)
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
                + "; ".join(f"{k} ({_path_of(cfg, k)}): {v}" for k, v in errors.items())
                + ". Check the identifiers (may2019:weat7, bfh:de/SEAT/CW1_context, es:seat_math_arts, "
                "crows:en, crows:es, lpbs:..., or a file path)"
            )
        paths = {d.name: d.path for d in cfg.datasets}
        langs = {k: _dataset_language(v, paths[k]) for k, v in data.items()}
        cells, skipped = _cells(cfg, kinds, langs)
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
            df.attrs["outputs"] = _write_outputs(df, cfg, out)
        return df
    finally:
        for h in (handler, console):
            if h is not None:
                pkg_logger.removeHandler(h)
                h.close()
        pkg_logger.setLevel(old_level)
        pkg_logger.propagate = old_propagate


# =============================================================================================
# executing the cells: in process, or one task per model on Dask (issue 17)
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


def _run_one(grid: _GridData, cell: _Cell, models: _ModelCache, reported: set[str]) -> list[dict[str, Any]]:
    """Run one cell; a failure becomes an error row (logged once per broken model at ERROR)."""
    cfg = grid.cfg
    t0 = time.perf_counter()
    lang = grid.langs.get(cell.dataset.name, "")
    try:
        if cell.dataset.name in grid.errors:
            raise RuntimeError(f"dataset not loaded: {grid.errors[cell.dataset.name]}")
        new = _run_cell(cfg, cell, grid.data[cell.dataset.name], models, lang)
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
            _first_line(msg),
        )
        if not isinstance(exc, ModelLoadError):
            logger.info("traceback of the failed cell:\n%s", traceback.format_exc())
        r = _base_row(cfg, cell, lang)
        r.update(status="error", error=_first_line(msg))
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
            f"d={r['effect_size']:.3f} p={r['p_value']:.4g}"
            if r["status"] == "ok" and r["metric"] != "crows"
            else f"B_CrowS={r['score']:.1f}% p={r['p_value']:.4g}"
            if r["status"] == "ok"
            else f"ERROR {r['error']}",
        )
    return new


def _run_group(
    grid: _GridData,
    group: Sequence[tuple[int, _Cell]],
    *,
    collect: bool = False,
    on_cell: Callable[[], None] | None = None,
) -> list[_Outcome]:
    """Run the cells of one model in order, loading the model once.

    ``collect=True`` (a Dask task) keeps each cell's log records of this thread with its outcome.
    """
    models = _ModelCache(grid.cfg.options)
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


def _grid_task(grid: _GridData, group: Sequence[tuple[int, _Cell]]) -> list[_Outcome]:
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


def _model_groups(cells: Sequence[_Cell]) -> list[list[tuple[int, _Cell]]]:
    """The cells of each model, in grid order (a model's cells are contiguous in :func:`_cells`)."""
    groups: dict[str, list[tuple[int, _Cell]]] = {}
    for i, cell in enumerate(cells):
        groups.setdefault(cell.model.name, []).append((i, cell))
    return list(groups.values())


def _execute(
    grid: _GridData,
    cells: Sequence[_Cell],
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
    groups: Sequence[Sequence[tuple[int, _Cell]]],
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
        futures: dict[Any, Sequence[tuple[int, _Cell]]] = {}
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
                resources=gpu if model.resolved_kind in ("mlm", "causal") else None,
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
                msg = _first_line(f"{type(exc).__name__}: {exc}")
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
                    r = _base_row(grid.cfg, cell, grid.langs.get(cell.dataset.name, ""))
                    r.update(status="error", error=f"Dask task failed: {msg}")
                    outcomes.append((i, [r], [rec] if k == 0 else []))
            bar.update(len(group))
    return outcomes


def _write_outputs(df: pd.DataFrame, cfg: ExperimentConfig, out: Path) -> dict[str, Any]:
    import matplotlib.pyplot as plt
    import yaml

    alpha = float(cfg.option("alpha"))
    paths: dict[str, Any] = {"log": out / f"{cfg.name}.log"}
    csv = out / f"{cfg.name}.csv"
    df.to_csv(csv, index=False)
    paths["csv"] = csv
    tex = out / f"{cfg.name}.tex"
    tex.write_text(latex_table(df, alpha=alpha, label=f"tab:{cfg.name}"), encoding="utf-8")
    paths["tex"] = tex
    conf = out / f"{cfg.name}_config.yaml"
    conf.write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False, allow_unicode=True), encoding="utf-8")
    paths["config"] = conf
    paths["plots"] = []
    for key, fig in plot_results(df, alpha=alpha, title=cfg.name).items():
        p = out / f"{cfg.name}_{key}.png"
        fig.savefig(p, dpi=120, bbox_inches="tight")
        plt.close(fig)
        paths["plots"].append(p)
    logger.info("outputs written to %s", out)
    return paths
