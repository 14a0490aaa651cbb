"""The metric registry: every bias metric of biaskit declared once, beside its code.

A metric module declares each of its metrics with the :func:`metric` decorator on its public entry
point (a function or a class), or with a keyword call of :func:`register_metric`; everything that
lists, runs or documents metrics reads them here instead of keeping a list of its own: the batch grid
(:mod:`biaskit.studies.grid`), the calibration on planted controls (:mod:`biaskit.studies.calibration`),
the CLI (``python -m biaskit metrics``), the documentation and the conformance tests
(``tests/metrics/test_metric_conformance.py``).  In the manner of lm-evaluation-harness's task registry
(``lm_eval/api/registry.py``) and of WEFE's metric templates, which declare each metric's inputs.

A declaration says what a reader needs to choose a metric (every field is a keyword):

* ``name`` / ``label``: the identifier used in configurations and tables, and its words;
* ``family``: the kind of input it reads (:data:`FAMILIES`: a corpus, word vectors, language
  models, classifiers);
* ``inputs``: what a user supplies (:data:`INPUT_KINDS`: word sets, sentence pairs, ...);
* ``model_kinds``: which models it applies to (:data:`MODEL_KINDS`; ``()`` for a corpus metric);
* ``directional``: whether its value can point to one group (the thesis's KL score cannot);
* ``test``: the statistical test its :class:`~biaskit.core.results.TestResult` carries;
* ``citation`` and ``section`` (the seed study's section it implements);
* ``entry_point``: the public callable or class (stored as ``"module:qualname"``; the decorator
  takes the object it decorates);
* ``summary`` and ``returns``: one line on what it measures, and the type it returns.

Three optional hooks let the other layers run a metric without knowing it:

* ``grid`` (:class:`GridSupport`): the dataset kinds of a batch grid it reads (:data:`DATASET_KINDS`,
  each with a registered loader, :class:`DatasetLoader`), its own options with their defaults
  (:class:`Option`) and how one cell is run (``run(call: GridCall) -> rows``);
* ``calibration`` (:class:`CalibrationSupport`): the measures it contributes to the planted-control
  calibration, each computed by ``values(call: CalibrationCall) -> MetricValues`` (one signature for
  every kind of control: the call carries the model, its kind, the targets, the corpus and a score
  cache that the measures of one model share);
* ``example``: ``example() -> result``, the metric on small toy inputs (the conformance tests run it).

A metric without ``grid`` support says why in ``no_grid`` (a built-in one must): what it reads that one
model x dataset cell of a grid does not give (a corpus instead of a model, two models, a classifier's
predictions).

**Plug-in packages.**  A metric of another installed package is found through the entry-point group
``biaskit.metrics`` (:data:`ENTRY_POINT_GROUP`): its ``pyproject.toml`` names the module that declares
the metrics, e.g. ``[project.entry-points."biaskit.metrics"] toy = "biaskit_toy_metric.metric"``.
:func:`discover_plugins` (called when :mod:`biaskit.metrics` is imported, after the built-in modules)
imports each such module, whose :func:`metric` decorators register its metrics; from then on the CLI,
the grid, the calibration and the documentation list them with the built-in ones, and each metric
records the distribution it came from (:attr:`Metric.package`).  A plug-in that fails to import is
left out with a WARNING naming the plug-in, its package and the error (the CLI and the rest of
biaskit keep working; :attr:`MetricRegistry.plugin_problems` keeps the messages); a plug-in metric
whose name is already registered is an error (:class:`MetricClashError`) naming both packages.

This module is a foundation: it imports no other part of biaskit, and the metric modules (a layer
above) register into it when they are imported (``import biaskit.metrics`` imports them all, see
:func:`biaskit.metrics.registered_metrics`).
"""

from __future__ import annotations

import contextvars
import difflib
import importlib
import inspect
import logging
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import numpy as np

__all__ = [
    "DATASET_KINDS",
    "ENTRY_POINT_GROUP",
    "FAMILIES",
    "INPUT_KINDS",
    "MODEL_KINDS",
    "REGISTRY",
    "CalibrationCall",
    "CalibrationMeasure",
    "CalibrationSupport",
    "DatasetKind",
    "DatasetLoader",
    "GridCall",
    "GridSupport",
    "Kind",
    "Metric",
    "MetricClashError",
    "MetricRegistry",
    "MetricValues",
    "Option",
    "ScoreCache",
    "UnknownMetricError",
    "dataset_loaders",
    "discover_plugins",
    "metric",
    "register_dataset_kind",
    "register_dataset_loader",
    "register_metric",
]

logger = logging.getLogger(__name__)

#: the families, one per kind of input read (WEFE and the thesis group their metrics the same way)
FAMILIES: tuple[str, ...] = ("corpus", "word vectors", "language models", "classifiers")
#: what a user supplies to a metric
INPUT_KINDS: tuple[str, ...] = (
    "corpus",
    "word sets",
    "sentence sets",
    "sentence pairs",
    "templates",
    "blanks",
    "names",
    "predictions",
    "scores",
)
#: the models a metric can read: word vectors, masked and causal language models, classifiers
MODEL_KINDS: tuple[str, ...] = ("static", "masked", "causal", "classifier")
#: the entry-point group through which other installed packages add metrics (:func:`discover_plugins`)
ENTRY_POINT_GROUP = "biaskit.metrics"
#: the package that declares a metric while a plug-in module is imported (:func:`discover_plugins`)
_CURRENT_PACKAGE: contextvars.ContextVar[str | None] = contextvars.ContextVar("biaskit_plugin", default=None)


def _load(reference: str) -> Any:
    """The object named by ``"module:qualname"``."""
    module, _, qualname = reference.partition(":")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


class UnknownMetricError(KeyError):
    """A metric name that is not registered; the message lists the nearest registered names."""

    def __str__(self) -> str:  # KeyError quotes its argument; show the message as written
        return str(self.args[0]) if self.args else ""


class MetricClashError(ValueError):
    """A metric name registered twice (by two modules, or by a plug-in package and another package)."""


# =============================================================================================
# the batch grid's hooks: options, dataset kinds and loaders, the cell call
# =============================================================================================
@dataclass(frozen=True)
class Option:
    """An option of a metric in the batch grid, with its default.

    ``name`` is the option's own name; in a grid configuration (and in :attr:`GridCall.options`) it is
    ``<metric>_<name>`` (the option ``alternative`` of ``weat`` is ``weat_alternative``).  ``choices``
    (allowed values) or ``types`` (allowed Python types) check a value given by a user (:meth:`check`);
    ``help`` says what it does.  ``None`` is allowed when it is the default.
    """

    name: str
    default: Any
    help: str
    choices: tuple[Any, ...] | None = None
    types: tuple[type, ...] | None = None

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("_", "").isalnum() or not self.name[0].isalpha():
            raise ValueError(
                f"option name {self.name!r}: use letters, digits and '_', starting with a letter"
            )
        if not self.help.strip():
            raise ValueError(f"option {self.name!r}: say what it does (help)")

    def check(self, value: Any, key: str) -> Any:
        """``value`` when it is allowed, else ``ValueError`` naming ``key`` and what is allowed."""
        if value is None and self.default is None:
            return value
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"option {key}={value!r} is not one of {list(self.choices)} ({self.help})")
        if self.types is not None and not isinstance(value, self.types):
            allowed = " or ".join(t.__name__ for t in self.types)
            raise ValueError(f"option {key}={value!r} must be a {allowed} ({self.help})")
        return value


@dataclass(frozen=True)
class DatasetKind:
    """A kind of batch-grid dataset: its ``name``, one line on what it holds (``description``), and
    ``example() -> data``, a small dataset of that kind (the conformance tests run a toy grid cell on it)."""

    name: str
    description: str
    example: Callable[[], Any] | None = None


#: the kinds of dataset a batch grid can load, name -> :class:`DatasetKind` (:func:`register_dataset_kind`)
DATASET_KINDS: dict[str, DatasetKind] = {}


def register_dataset_kind(
    name: str, description: str, *, example: Callable[[], Any] | None = None
) -> DatasetKind:
    """Declare a kind of grid dataset (``"words"``, ``"crows"``, ...) with one line on what it holds and a
    toy example; declaring a kind again with the same description does nothing, with another is a
    ``ValueError``.  A loader that gives the kind is declared with :func:`register_dataset_loader`."""
    old = DATASET_KINDS.get(name)
    if old is not None:
        if old.description != description:
            raise ValueError(
                f"dataset kind {name!r} is declared twice, as {old.description!r} and as {description!r}"
            )
        return old
    DATASET_KINDS[name] = kind = DatasetKind(name, description, example)
    return kind


@dataclass(frozen=True)
class DatasetLoader:
    """How the batch grid loads a dataset identifier of some kinds.

    ``claims(path) -> bool`` says whether an identifier or file path is this loader's (``crows:en``,
    ``bfh:en/LPBS/LPBS_7``); ``load(path, *, sample, random_state) -> (kind, data)`` loads it and says
    which of ``kinds`` it is; ``identifiers`` lists, for a reader, what it accepts.  The grid asks the
    loaders in registration order; a ``fallback`` loader takes what no other claims.
    """

    name: str
    kinds: tuple[str, ...]
    claims: Callable[[str], bool]
    load: Callable[..., tuple[str, Any]]
    identifiers: str
    fallback: bool = False
    module: str = ""


_LOADERS: dict[str, DatasetLoader] = {}


def register_dataset_loader(
    *,
    name: str,
    kinds: Sequence[str],
    claims: Callable[[str], bool],
    load: Callable[..., tuple[str, Any]],
    identifiers: str,
    fallback: bool = False,
) -> DatasetLoader:
    """Declare a :class:`DatasetLoader` (its kinds must be declared with :func:`register_dataset_kind`).
    A second loader of the same name, or a second fallback, is a ``ValueError``."""
    unknown = [k for k in kinds if k not in DATASET_KINDS]
    if unknown:
        raise ValueError(f"dataset loader {name!r}: undeclared dataset kind(s) {unknown}; declare them first")
    if name in _LOADERS:
        raise ValueError(f"dataset loader {name!r} is registered twice ({_LOADERS[name].module})")
    if fallback and any(ld.fallback for ld in _LOADERS.values()):
        raise ValueError(f"dataset loader {name!r}: there is already a fallback loader")
    loader = DatasetLoader(
        name, tuple(kinds), claims, load, identifiers, fallback, getattr(load, "__module__", "")
    )
    _LOADERS[name] = loader
    return loader


def dataset_loaders() -> list[DatasetLoader]:
    """The registered dataset loaders, in the order the grid asks them (the fallback last)."""
    return sorted(_LOADERS.values(), key=lambda ld: ld.fallback)


@dataclass(frozen=True)
class GridCall:
    """One cell of a batch grid, as the grid hands it to :attr:`GridSupport.run`.

    ``model`` is the loaded model (``KeyedVectors``, :class:`~biaskit.lm.MaskedLM` or
    :class:`~biaskit.lm.CausalLM`), ``model_kind`` one of ``"static"``, ``"masked"``, ``"causal"`` (the
    registry's model kinds), ``data`` the loaded dataset and ``dataset_kind`` its kind, ``method`` the pooling
    method or scoring variant of the cell, ``options`` the grid's options (the grid's own, such as
    ``n_permutations``, and every metric's ``<metric>_<option>``, defaults filled in), ``language``
    the dataset's language (``""`` when unknown), ``model_name`` the model's name in the grid,
    ``metric`` the metric's registered name.
    """

    model: Any
    model_kind: str
    model_name: str
    data: Any
    method: str
    options: Mapping[str, Any]
    language: str = ""
    metric: str = ""
    dataset_kind: str = ""

    def option(self, name: str) -> Any:
        """This metric's own option ``name`` (``options[f"{metric}_{name}"]``)."""
        return self.options[f"{self.metric}_{name}"]


@dataclass(frozen=True)
class GridSupport:
    """How the batch grid (:func:`biaskit.studies.grid.run_experiments`) runs a metric.

    ``reads``
        the kind(s) of grid dataset the metric reads (:data:`DATASET_KINDS`: ``"words"``,
        ``"sentences"``, ``"lpbs"``, ``"crows"``, ...; a dataset's kind is decided by its loader).
    ``run``
        ``run(call: GridCall) -> list[dict]``: the table rows of one cell, each a mapping of the
        grid's result columns (``n``, ``statistic``, ``effect_size``, ``score``, ``p_value``,
        ``permutation``, ``targets``, ``attributes``, ``bias_type``, ``note``, ``significant``);
        :meth:`rows_from_result` turns a :class:`~biaskit.core.results.TestResult` into one.  Given as
        ``"module:qualname"`` it is loaded when first used.
    ``methods``
        ``methods(model_kind, options) -> tuple[str, ...]``: the cells to run for one model (e.g.
        one per pooling method); default one cell with method ``"-"``.
    ``not_for``
        grid model kinds the metric cannot read, with the reason shown when a cell is skipped.
    ``options``
        the metric's own options (:class:`Option`), ``<metric>_<name>`` in a configuration.
    """

    reads: str | tuple[str, ...]
    run: Callable[[GridCall], list[dict[str, Any]]] | str
    methods: Callable[[str, Mapping[str, Any]], tuple[str, ...]] | None = None
    not_for: Mapping[str, str] = field(default_factory=dict)
    options: tuple[Option, ...] = ()

    @property
    def dataset_kinds(self) -> tuple[str, ...]:
        """:attr:`reads` as a tuple."""
        return (self.reads,) if isinstance(self.reads, str) else tuple(self.reads)

    def runner(self) -> Callable[[GridCall], list[dict[str, Any]]]:
        """:attr:`run`, loaded when it is given as ``"module:qualname"`` (a metric whose cell runner
        lives in a module that imports the metric's own)."""
        return _load(self.run) if isinstance(self.run, str) else self.run

    def cell_methods(self, model_kind: str, options: Mapping[str, Any]) -> tuple[str, ...]:
        return ("-",) if self.methods is None else tuple(self.methods(model_kind, options))

    @staticmethod
    def rows_from_result(result: Any, **extra: Any) -> list[dict[str, Any]]:
        """One grid row from a :class:`~biaskit.core.results.TestResult` (``n``, ``statistic``,
        ``effect_size``, ``p_value``, ``permutation`` from ``details["permutation_method"]`` or the
        test's name; a number the result does not give is NaN) plus ``extra`` columns."""
        nan = float("nan")
        row = {
            "n": nan if result.n is None else result.n,
            "statistic": nan if result.statistic is None else result.statistic,
            "effect_size": nan if result.effect_size is None else result.effect_size,
            "p_value": nan if result.p_value is None else result.p_value,
            "permutation": (result.details or {}).get("permutation_method", result.method),
        }
        row.update(extra)
        return [row]


# =============================================================================================
# the calibration's hooks
# =============================================================================================
#: the calibration's kinds of measure, each with its own test (:func:`biaskit.studies.calibration.evaluate`)
Kind = Literal["sign", "mean", "groups", "ks", "kl", "agreement"]
_T = TypeVar("_T")


class ScoreCache:
    """Values computed once per control model and shared by the calibration measures that read it.

    ``get(key, compute)`` returns the value stored under ``key``, computing it with ``compute()`` the
    first time: the cp scores of the CrowS-style pairs serve ``crows_cp`` and the robustness agreement,
    the sz scores ``crows_sz`` and the thesis's KS test and KL score, so each pair is scored once per
    model.  :attr:`computed` lists the keys in the order they were computed.
    """

    def __init__(self) -> None:
        self._store: dict[Hashable, Any] = {}
        self.computed: list[Hashable] = []

    def get(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        if key not in self._store:
            self._store[key] = compute()
            self.computed.append(key)
        return self._store[key]

    def __contains__(self, key: object) -> bool:
        return key in self._store

    def __len__(self) -> int:
        return len(self._store)


@dataclass(frozen=True)
class CalibrationCall:
    """What a calibration measure's ``values`` hook gets: one control model and its context.

    ``model`` is the control (a :class:`~biaskit.lm.MaskedLM`, a :class:`~biaskit.lm.CausalLM` or word
    vectors), ``kind`` its kind (``"masked"``, ``"causal"``, ``"static"``), ``targets`` the controlled
    professions (the planted plan's keys), ``corpus`` the tokenised planted corpus of a static control
    (``None`` when not given), ``cache`` the :class:`ScoreCache` every measure of this model shares,
    ``progress`` whether to show progress bars, ``skew`` the planted share ``s`` (for messages).
    """

    model: Any
    kind: str
    targets: tuple[str, ...]
    corpus: Sequence[Sequence[str]] | None = None
    cache: ScoreCache = field(default_factory=ScoreCache)
    progress: bool = False
    skew: float | None = None

    def cached(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        """:meth:`ScoreCache.get` of this model's cache."""
        return self.cache.get(key, compute)


@dataclass(frozen=True)
class CalibrationMeasure:
    """One measure a metric contributes to the calibration on planted controls.

    ``key`` names it in the calibration's tables (``"crows_cp"``); ``label`` says what a unit's value
    is; ``kind`` picks the calibration's test (``"sign"``, ``"mean"``, ``"groups"``, ``"ks"``,
    ``"kl"``, ``"agreement"``; :func:`biaskit.studies.calibration.evaluate`); ``model_kind`` the
    controls it runs on (``"masked"``, ``"causal"``, ``"static"``); ``values(call: CalibrationCall)
    -> MetricValues`` computes its values on one control (positive = leans male), or returns ``None`` when
    the control lacks an input the measure needs (BIAS_PMI without a corpus): the measure is then left out.
    """

    key: str
    label: str
    kind: str
    model_kind: str
    values: Callable[[CalibrationCall], Any] | None = None


@dataclass(frozen=True)
class CalibrationSupport:
    """The measures (:class:`CalibrationMeasure`) a metric contributes to the calibration."""

    measures: tuple[CalibrationMeasure, ...]


# =============================================================================================
# the registry
# =============================================================================================
@dataclass(frozen=True)
class Metric:
    """One registered metric (see the module docstring for the fields)."""

    name: str
    label: str
    family: str
    inputs: tuple[str, ...]
    model_kinds: tuple[str, ...]
    directional: bool
    test: str
    citation: str
    section: str
    entry_point: str
    module: str
    summary: str = ""
    returns: str = "TestResult"
    grid: GridSupport | None = None
    calibration: CalibrationSupport | None = None
    example: Callable[[], Any] | None = None
    package: str = "biaskit"
    no_grid: str = ""

    def load(self) -> Any:
        """The public callable or class named by :attr:`entry_point`."""
        return _load(self.entry_point)

    def grid_option_keys(self) -> dict[str, Option]:
        """The metric's grid options under their configuration keys (``<metric>_<name>``)."""
        return {f"{self.name}_{o.name}": o for o in (self.grid.options if self.grid else ())}

    def as_row(self) -> dict[str, Any]:
        """The metric as one table row (what ``python -m biaskit metrics`` prints)."""
        return {
            "name": self.name,
            "label": self.label,
            "family": self.family,
            "inputs": ", ".join(self.inputs),
            "models": ", ".join(self.model_kinds) or "-",
            "directional": self.directional,
            "test": self.test,
            "grid": ", ".join(self.grid.dataset_kinds) if self.grid else "",
            "no_grid": self.no_grid,
            "options": ", ".join(f"{k}={o.default!r}" for k, o in self.grid_option_keys().items()),
            "calibration": ", ".join(m.key for m in self.calibration.measures) if self.calibration else "",
            "section": self.section,
            "citation": self.citation,
            "package": self.package,
            "entry_point": self.entry_point,
        }


class MetricRegistry(Mapping[str, Metric]):
    """Name -> :class:`Metric`, in declaration order; a name is registered once."""

    def __init__(self) -> None:
        self._metrics: dict[str, Metric] = {}
        #: WARNING messages of plug-ins that could not be loaded (:func:`discover_plugins`)
        self.plugin_problems: list[str] = []
        self._plugins_seen: set[tuple[str, str, str]] = set()

    def __getitem__(self, name: str) -> Metric:
        try:
            return self._metrics[name]
        except KeyError:
            near = difflib.get_close_matches(name, list(self._metrics), n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(near)}?" if near else ""
            raise UnknownMetricError(
                f"unknown metric {name!r}{hint} (registered: {', '.join(self._metrics) or 'none'}; "
                "`python -m biaskit metrics` lists them)"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._metrics)

    def __len__(self) -> int:
        return len(self._metrics)

    def add(self, metric: Metric) -> Metric:
        """Register ``metric``: :class:`MetricClashError` for a name (or a grid option key) that is taken."""
        if metric.name in self._metrics:
            old = self._metrics[metric.name]
            raise MetricClashError(
                f"metric {metric.name!r} is registered twice: by package {old.package!r} ({old.module}) "
                f"and by package {metric.package!r} ({metric.module}). "
                f"Declare each metric once, beside its code; a plug-in package must give its metric another "
                f"name (or uninstall one of the two packages)"
            )
        taken = {k: m.name for m in self._metrics.values() for k in m.grid_option_keys()}
        for key in metric.grid_option_keys():
            if key in taken:
                raise MetricClashError(
                    f"metric {metric.name!r}: its grid option {key!r} is also an option of {taken[key]!r}; "
                    "rename the option"
                )
        self._metrics[metric.name] = metric
        return metric

    def remove(self, name: str) -> Metric:
        """Unregister ``name`` (for tests that register a metric of their own)."""
        return self._metrics.pop(name)

    def remove_package(self, package: str) -> list[str]:
        """Unregister every metric of the plug-in ``package`` (a distribution name) and forget its entry
        points, so that a later :func:`discover_plugins` loads them again; returns the names removed."""
        names = [n for n, m in self._metrics.items() if m.package == package]
        for n in names:
            del self._metrics[n]
        self._plugins_seen = {k for k in self._plugins_seen if k[0] != package}
        return names

    def with_grid(self) -> list[Metric]:
        return [m for m in self._metrics.values() if m.grid is not None]

    def calibration_measures(self, model_kind: str | None = None) -> list[tuple[Metric, CalibrationMeasure]]:
        """Every calibration measure, in declaration order (optionally of one model kind)."""
        out = []
        for m in self._metrics.values():
            for cm in m.calibration.measures if m.calibration else ():
                if model_kind is None or cm.model_kind == model_kind:
                    out.append((m, cm))
        return out

    def grid_options(self) -> dict[str, Option]:
        """Every metric's grid options, ``<metric>_<name>`` -> :class:`Option`, in registry order."""
        return {k: o for m in self.with_grid() for k, o in m.grid_option_keys().items()}


#: the one registry of the package
REGISTRY = MetricRegistry()


@dataclass
class MetricValues:
    """One metric's raw values on one model: ``value[i]`` leans male when positive.

    ``target[i]`` is the profession unit ``i`` belongs to.  ``kind`` picks the test
    (:func:`evaluate`).  For ``ks`` / ``kl`` ``value`` is the male-minus-female difference and
    ``male`` / ``female`` hold the two PLL samples.  For ``agreement`` ``value`` is the difference on
    the original pair and ``other`` the same on its paraphrase.
    """

    metric: str
    kind: Kind
    target: np.ndarray
    value: np.ndarray
    male: np.ndarray | None = None
    female: np.ndarray | None = None
    unit: str = "pair"
    details: dict[str, Any] = field(default_factory=dict)
    other: np.ndarray | None = None

    @property
    def label(self) -> str:
        """The registered calibration measure's label (:class:`CalibrationMeasure`), else the key."""
        for _, cm in REGISTRY.calibration_measures():
            if cm.key == self.metric:
                return cm.label
        return self.metric

    @property
    def directional(self) -> bool:
        """Whether the metric can point to a gender (the KL score and the robustness agreement cannot)."""
        return self.kind not in ("kl", "agreement")

    @property
    def label_testable(self) -> bool:
        """Whether relabelling the targets can change the statistic, so that the label-permutation test
        applies: every kind but the robustness agreement (relabelling a target flips a pair and its
        paraphrase together, so their agreement stays the same)."""
        return self.kind != "agreement"

    def subset(self, idx: np.ndarray) -> MetricValues:
        return MetricValues(
            self.metric,
            self.kind,
            self.target[idx],
            self.value[idx],
            None if self.male is None else self.male[idx],
            None if self.female is None else self.female[idx],
            self.unit,
            self.details,
            None if self.other is None else self.other[idx],
        )


# =============================================================================================
# declaring a metric
# =============================================================================================
def _check_choice(value: str, allowed: Sequence[str], what: str, name: str) -> None:
    if value not in allowed:
        raise ValueError(f"metric {name!r}: {what} {value!r} is not one of {list(allowed)}")


def _package_of(module: str) -> str:
    """The installed distribution a module belongs to (its top-level package's), else the top-level name."""
    current = _CURRENT_PACKAGE.get()
    if current is not None:
        return current
    top = module.partition(".")[0]
    if top == "biaskit":
        return "biaskit"
    from importlib import metadata

    dists = metadata.packages_distributions().get(top)
    return dists[0] if dists else top


def register_metric(
    name: str,
    *,
    label: str,
    family: str,
    inputs: Sequence[str],
    model_kinds: Sequence[str],
    directional: bool,
    test: str,
    citation: str,
    section: str,
    entry_point: str | Callable[..., Any] | type,
    summary: str = "",
    returns: str = "TestResult",
    grid: GridSupport | None = None,
    calibration: CalibrationSupport | None = None,
    example: Callable[[], Any] | None = None,
    no_grid: str = "",
    registry: MetricRegistry | None = None,
) -> Metric:
    """Declare a metric (once, at module level, beside the metric's code; :func:`metric` is the same as a
    decorator).

    ``entry_point`` is the public callable or class (or its ``"module:qualname"``); it must exist.
    Raises ``ValueError`` for an unknown family, input kind, model kind or grid dataset kind, a private
    entry point, a calibration measure without ``values``, and :class:`MetricClashError` for a name
    registered twice.  ``no_grid`` says why a metric without ``grid`` support cannot run in a batch grid
    (what it reads that a model x dataset cell does not give); it is shown by ``python -m biaskit metrics
    --all-columns`` and in the docs, and giving both is a ``ValueError``.
    """
    if grid is not None and no_grid:
        raise ValueError(
            f"metric {name!r}: grid support and a reason for having none (no_grid) exclude each other"
        )
    if not name or not name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"metric name {name!r}: use letters, digits, '_' or '-'")
    _check_choice(family, FAMILIES, "family", name)
    for i in inputs:
        _check_choice(i, INPUT_KINDS, "input kind", name)
    for k in model_kinds:
        _check_choice(k, MODEL_KINDS, "model kind", name)
    if not inputs:
        raise ValueError(f"metric {name!r}: name at least one input kind")
    if callable(entry_point) or inspect.isclass(entry_point):
        ep = f"{entry_point.__module__}:{entry_point.__qualname__}"
    else:
        ep = str(entry_point)
    if "<locals>" in ep:
        raise ValueError(
            f"metric {name!r}: the entry point {ep!r} is defined inside a function; define it at module "
            "level so that it can be imported by name"
        )
    if any(p.startswith("_") for p in ep.replace(":", ".").split(".")):
        raise ValueError(f"metric {name!r}: the entry point {ep!r} must be public")
    module = ep.partition(":")[0]
    if grid is not None:
        for kind in grid.dataset_kinds:
            if kind not in DATASET_KINDS:
                raise ValueError(
                    f"metric {name!r}: grid dataset kind {kind!r} is not declared "
                    f"(known: {sorted(DATASET_KINDS)}); "
                    "declare it with register_dataset_kind and give it a loader (register_dataset_loader)"
                )
        names = [o.name for o in grid.options]
        if len(names) != len(set(names)):
            raise ValueError(f"metric {name!r}: grid options named twice in {names}")
    if calibration is not None:
        for cm in calibration.measures:
            _check_choice(cm.model_kind, ("masked", "causal", "static"), "calibration model kind", name)
            if not callable(cm.values):
                raise ValueError(
                    f"metric {name!r}: calibration measure {cm.key!r} needs values=..., a function "
                    "values(call: CalibrationCall) -> MetricValues"
                )
            _check_choice(
                cm.kind, ("sign", "mean", "groups", "ks", "kl", "agreement"), "calibration kind", name
            )
    metric_ = Metric(
        name=name,
        label=label,
        family=family,
        inputs=tuple(inputs),
        model_kinds=tuple(model_kinds),
        directional=directional,
        test=test,
        citation=citation,
        section=section,
        entry_point=ep,
        module=module,
        summary=summary,
        returns=returns,
        grid=grid,
        calibration=calibration,
        example=example,
        package=_package_of(module),
        no_grid=no_grid,
    )
    return (REGISTRY if registry is None else registry).add(metric_)


_Decorated = TypeVar("_Decorated", bound=Callable[..., Any])


def metric(
    *, name: str, registry: MetricRegistry | None = None, **fields: Any
) -> Callable[[_Decorated], _Decorated]:
    """Decorator form of :func:`register_metric`: the decorated function or class is the entry point.

    ::

        @metric(name="centroid_gap", label="Centroid gap", family="word vectors", inputs=("word sets",),
                model_kinds=("static",), directional=True, test="Welch t test", citation="...",
                section="...", grid=GridSupport(...), calibration=CalibrationSupport(...), example=...)
        def centroid_gap(X, Y, A, B, vectors) -> TestResult: ...

    The object is returned unchanged (the registered :class:`Metric` is in ``REGISTRY[name]``).
    """

    def declare(obj: _Decorated) -> _Decorated:
        register_metric(name, entry_point=obj, registry=registry, **fields)
        return obj

    return declare


# =============================================================================================
# plug-in packages
# =============================================================================================
def discover_plugins(registry: MetricRegistry | None = None, *, group: str = ENTRY_POINT_GROUP) -> list[str]:
    """Import the metric modules of installed plug-in packages (entry-point group ``group``).

    Each entry point names a module (``biaskit_toy_metric.metric``) whose :func:`metric` decorators
    register its metrics; each is imported once per registry (a second call finds only new ones) and
    its metrics record the distribution they come from.  Returns the names of the metrics registered.

    A plug-in that fails to import (or raises while registering) is left out, its partial registrations
    undone, with a WARNING naming the entry point, its package and the error (also kept in
    :attr:`MetricRegistry.plugin_problems`); a plug-in metric whose name is taken raises
    :class:`MetricClashError` naming both packages.
    """
    from importlib import metadata

    reg = REGISTRY if registry is None else registry
    added: list[str] = []
    for ep in metadata.entry_points(group=group):
        dist = ep.dist.name if ep.dist is not None else "an unknown package"
        key = (dist, ep.name, ep.value)
        if key in reg._plugins_seen:
            continue
        reg._plugins_seen.add(key)
        before = set(reg)
        token = _CURRENT_PACKAGE.set(dist)
        try:
            ep.load()
        except MetricClashError:
            for new in set(reg) - before:
                reg.remove(new)
            raise
        except Exception as exc:  # a broken plug-in must not break biaskit: it is left out, loudly
            for new in set(reg) - before:
                reg.remove(new)
            msg = (
                f"metric plug-in {ep.name!r} of package {dist!r} "
                f"(entry point {ep.value!r} in group {group!r}) "
                f"could not be loaded and is left out: {type(exc).__name__}: {exc}. Fix the package or "
                f"uninstall it (pip uninstall {dist})"
            )
            logger.warning(msg)
            reg.plugin_problems.append(msg)
            continue
        finally:
            _CURRENT_PACKAGE.reset(token)
        added += [n for n in reg if n not in before]
    return added
