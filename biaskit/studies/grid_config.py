"""The batch grid's configuration, datasets, models and cells: which (model, dataset, metric, pooling) run.

Part of :mod:`biaskit.studies.grid` (its public front, which re-exports the public names here): the
configuration (:func:`load_config`, :class:`ExperimentConfig`), the datasets (:func:`load_dataset`), the
models (:class:`ModelCache`), and the compatible cells of a grid (:func:`grid_cells`) with the rows of
one cell (:func:`run_cell`).
"""

from __future__ import annotations

import copy
import difflib
import functools
import logging
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import biaskit.metrics  # noqa: F401  (registers every metric)
from biaskit.core.paths import resolve_user_path
from biaskit.core.registry import REGISTRY, GridCall, GridSupport, Option, dataset_loaders

# the grid's one logger: every line of a batch run's log names ``biaskit.studies.grid``,
# whichever part wrote it
logger = logging.getLogger("biaskit.studies.grid")


def grid_metrics() -> tuple[str, ...]:
    """The metrics a grid can run: every registered metric with grid support
    (:attr:`biaskit.core.registry.Metric.grid`), in registry order."""
    return tuple(m.name for m in REGISTRY.with_grid())


def _grid_of(metric: str) -> GridSupport:
    grid = REGISTRY[metric].grid
    if grid is None:  # pragma: no cover - load_config refuses such metrics
        raise ValueError(f"metric {metric!r} has no grid support")
    return grid


def _metric_problem(bad: list[str]) -> str:
    """Why the grid refuses the metrics ``bad``: registered without grid support (``python -m biaskit
    metrics`` lists them, but the grid cannot run them), or unknown (with near names); then the metrics
    the grid runs, read from the registry."""
    no_grid = [m for m in bad if m in REGISTRY]
    unknown = [m for m in bad if m not in REGISTRY]
    parts = []
    if no_grid:
        parts.append(
            f"metric(s) {no_grid} are registered but have no grid support (the grid cannot run them; call "
            "them directly, e.g. biaskit.core.registry.REGISTRY[name].load())"
        )
    if unknown:
        grid = list(grid_metrics())
        near = sorted({n for m in unknown for n in difflib.get_close_matches(m, grid, n=3, cutoff=0.6)})
        hint = f" (did you mean {', '.join(near)}?)" if near else ""
        parts.append(
            f"unknown metric(s) {unknown}{hint} (`python -m biaskit metrics` lists the registered ones)"
        )
    return "; ".join(parts) + f"; the metrics with grid support are {list(grid_metrics())}"


#: the grid's own options, which every metric may read; each metric declares its own options in its
#: grid support (``<metric>_<name>``: ``weat_alternative``, ``crows_metric``, ..., :func:`grid_options`)
GRID_OPTIONS: tuple[Option, ...] = (
    Option("n_permutations", 10_000, "permutations of a sampled permutation test", types=(int,)),
    Option(
        "exact_threshold", 100_000, "largest number of partitions a permutation test enumerates", types=(int,)
    ),
    Option("random_state", 0, "seed of the sampled tests and of the CrowS-Pairs samples", types=(int,)),
    Option("ddof", 1, "degrees of freedom of the SD in an effect size (1: Caliskan et al.)", types=(int,)),
    Option("alpha", 0.05, "significance level of the 'significant' column", types=(float, int)),
    Option(
        "methods", ["cls", "target_first", "target_pooled"], "pooling methods of a masked model's encodings"
    ),
    Option("layer", -1, "hidden layer of a language model's encodings", types=(int,)),
    Option("batch_size", 32, "sentences per forward pass of a language model", types=(int,)),
    Option("device", "auto", "device of the language models (auto, cpu, cuda, ...)", types=(str,)),
    Option(
        "oov_policy", "drop", "words without a vector: drop them (logged) or raise", choices=("drop", "raise")
    ),
)


def grid_options(metrics: Sequence[str] | None = None) -> dict[str, Option]:
    """The options a grid configuration takes, key -> :class:`~biaskit.core.registry.Option`: the grid's own
    (:data:`GRID_OPTIONS`), then every metric's (``<metric>_<name>``, in registry order), or those of
    ``metrics`` only."""
    out = {o.name: o for o in GRID_OPTIONS}
    for m in REGISTRY.with_grid():
        if metrics is not None and m.name not in metrics:
            continue
        for key, option in m.grid_option_keys().items():
            if key in out:
                raise ValueError(
                    f"metric {m.name!r}: its grid option {key!r} is one of the grid's own; rename it"
                )
            out[key] = option
    return out


def default_options(metrics: Sequence[str] | None = None) -> dict[str, Any]:
    """Every option of :func:`grid_options` with its default value."""
    return {k: copy.deepcopy(o.default) for k, o in grid_options(metrics).items()}


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
    ``kind``: ``"static"``, ``"masked"`` (masked LM) or ``"causal"`` (causal LM: CrowS-Pairs with
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

    @functools.cached_property
    def resolved_kind(self) -> str:
        """``kind``, or the kind read from ``path`` (once per model: the grid asks for it for every cell)."""
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
        folder = resolve_user_path(p)
        if (folder / "config.json").exists():
            from biaskit.lm import model_kind

            return "causal" if model_kind(folder) == "causal" else "masked"
        return "masked"


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
        """The value of option ``key`` (:func:`load_config` fills every default in once)."""
        if key in self.options:
            return self.options[key]
        return default_options().get(key)

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
            "options": {**default_options(self.metrics), **dict(self.options)},
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

    Unknown top-level keys and options raise ``ValueError`` listing the allowed ones.  A relative path
    (the configuration file, the paths of its models and datasets) starts from the folder the user started
    in (:func:`biaskit.core.paths.resolve_user_path`), except ``output_dir`` in a file, which is relative to
    the file's folder.
    """
    if isinstance(source, ExperimentConfig):
        return source
    base: Path | None = None
    if isinstance(source, Mapping):
        raw = dict(source)
    else:
        import yaml

        text = str(source)
        p = resolve_user_path(text)
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
        raise ValueError(_metric_problem(bad))
    options = _checked_options(dict(raw.get("options") or {}), metrics)
    from biaskit.embeddings.encoders import POOLING_METHODS

    models = []
    for d in _entries(raw.get("models"), "models"):
        name, path = str(d.pop("name")), str(d.pop("path"))
        kind = d.pop("kind", None)
        if kind not in (None, "static", "masked", "causal"):
            raise ValueError(f"model {name!r}: kind must be 'static', 'masked' or 'causal', got {kind!r}")
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
        if not out_dir.is_absolute():
            out_dir = base / out_dir if base is not None else resolve_user_path(out_dir)
    name = str(raw.get("name") or "experiment")
    if not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise ValueError(
            f"experiment name {name!r} must be letters, digits, '-', '_' or '.' (it names files)"
        )
    return ExperimentConfig(name, tuple(models), tuple(datasets), metrics, options, out_dir)


def _checked_options(given: dict[str, Any], metrics: Sequence[str]) -> dict[str, Any]:
    """The options of a configuration, every default filled in once: those ``given`` (each known to
    :func:`grid_options` and allowed by its :meth:`~biaskit.core.registry.Option.check`), then the defaults
    of the grid's own options and of the options of ``metrics``."""
    from biaskit.embeddings.encoders import POOLING_METHODS

    known = grid_options()
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise ValueError(
            f"unknown option(s) {unknown}; allowed: {sorted(known)} "
            "(a metric's own option is <metric>_<name>; "
            "`python -m biaskit metrics --all-columns` lists them with their defaults)"
        )
    for key, value in given.items():
        if key != "methods":
            known[key].check(value, key)
    methods = given.get("methods", known["methods"].default)
    if isinstance(methods, str):
        methods = [methods]
    if any(m not in POOLING_METHODS for m in methods):
        raise ValueError(f"options.methods must be taken from {POOLING_METHODS}, got {methods}")
    return {**default_options(metrics), **given, "methods": list(methods)}


# =============================================================================================
# datasets
# =============================================================================================
def load_dataset(spec: str | DatasetSpec, *, random_state: int = 0) -> tuple[str, Any]:
    """Load a dataset; return ``(kind, data)``.

    The registered dataset loaders (:func:`biaskit.core.registry.dataset_loaders`, declared by the metric
    modules; ``python -m biaskit metrics --all-columns`` shows which kinds each metric reads) are asked in
    turn; the first that claims the identifier or file path loads it: ``may2019:sent-weat7`` /
    ``bfh:de/SEAT/CW1_context`` / ``es:seat_math_arts`` (SEAT sentences, kind ``"sentences"``),
    ``may2019:weat7`` / ``bfh:de/WEAT/CW1`` / ``es:seat_math_arts/words`` (words, kind ``"words"``),
    ``bfh:en/LPBS/LPBS_7``, ``es:seat_math_arts/lpbs`` (kind ``"lpbs"``), ``crows:en``, ``crows:es``
    (``crows:es-paraphrased``, ``crows:es-random``; kind ``"crows"``), or a file path.
    ``DatasetSpec.sample`` draws a random sample of CrowS pairs.
    """
    ds = spec if isinstance(spec, DatasetSpec) else DatasetSpec(str(spec), str(spec))
    for loader in dataset_loaders():
        if loader.fallback or loader.claims(ds.path):
            kind, data = loader.load(ds.path, sample=ds.sample, random_state=random_state)
            if kind not in loader.kinds:
                raise ValueError(
                    f"dataset loader {loader.name!r} gave kind {kind!r}, not one of {loader.kinds}"
                )
            return kind, data
    raise ValueError(f"no dataset loader takes {ds.path!r}")  # pragma: no cover - the fallback takes all


def dataset_path(cfg: ExperimentConfig, name: str) -> str:
    return next((d.path for d in cfg.datasets if d.name == name), name)


# =============================================================================================
# models
# =============================================================================================
class ModelLoadError(RuntimeError):
    """A model of the grid could not be loaded (the message names the model and the cause)."""


def first_line(msg: str, limit: int = 300) -> str:
    line = msg.strip().splitlines()[0] if msg.strip() else msg
    return line if len(line) <= limit else line[: limit - 3] + "..."


class ModelCache:
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
            if p.startswith((".", "/", "~")) and not resolve_user_path(p).exists():
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
class Cell:
    model: ModelSpec
    dataset: DatasetSpec
    metric: str
    method: str
    dataset_kind: str = ""


def base_row(cfg: ExperimentConfig, cell: Cell, language: str = "") -> dict[str, Any]:
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


def run_cell(
    cfg: ExperimentConfig, cell: Cell, data: Any, models: ModelCache, lang: str = ""
) -> list[dict[str, Any]]:
    """The rows of one cell: the metric's registered grid runner
    (:attr:`biaskit.core.registry.GridSupport.run`) on the loaded model and dataset."""
    model = models.get(cell.model)
    row = base_row(cfg, cell, lang)
    call = GridCall(
        model=model,
        model_kind=cell.model.resolved_kind,
        model_name=cell.model.name,
        data=data,
        method=cell.method,
        options=_options(cfg, cell.model),
        language=lang,
        metric=cell.metric,
        dataset_kind=cell.dataset_kind,
    )
    return [{**row, **r} for r in _grid_of(cell.metric).runner()(call)]


def _options(cfg: ExperimentConfig, model: ModelSpec) -> dict[str, Any]:
    """The configuration's options (every default filled in by :func:`load_config`); a model's own
    ``methods`` replace the grid's."""
    out = {**default_options(), **dict(cfg.options)}
    if model.methods:
        out["methods"] = list(model.methods)
    return out


def dataset_language(data: Any, path: str = "") -> str:
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


def grid_cells(
    cfg: ExperimentConfig, kinds: Mapping[str, str], langs: Mapping[str, str] | None = None
) -> tuple[list[Cell], list[str]]:
    cells, skipped = [], []
    langs = langs or {}
    for m in cfg.models:
        mk = m.resolved_kind
        options = _options(cfg, m)
        for d in cfg.datasets:
            dk = kinds[d.name]
            dl = langs.get(d.name, "")
            if m.language and dl and dl not in ("?", m.language):
                skipped.append(f"{m.name} ({m.language}) x {d.name} ({dl}): different languages")
                continue
            for metric in cfg.metrics:
                grid = _grid_of(metric)
                if dk not in grid.dataset_kinds:
                    continue
                reads = REGISTRY[metric].model_kinds
                if mk in grid.not_for or mk not in reads:
                    why = grid.not_for.get(mk) or f"{metric} reads {', '.join(reads)} models, not {mk}"
                    skipped.append(f"{m.name} x {d.name} x {metric}: {why}")
                    continue
                cells += [Cell(m, d, metric, meth, dk) for meth in grid.cell_methods(mk, options)]
    for d in cfg.datasets:
        if not any(kinds[d.name] in _grid_of(mt).dataset_kinds for mt in cfg.metrics):
            skipped.append(
                f"dataset {d.name} ({kinds[d.name]}) matches none of the metrics {list(cfg.metrics)}"
            )
    return cells, skipped
