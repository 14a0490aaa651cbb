"""The metric registry: every bias metric of biaskit declared once, beside its code.

A metric module declares each of its metrics with :func:`register_metric`; everything that lists,
runs or documents metrics reads them here instead of keeping a list of its own: the batch grid
(:mod:`biaskit.studies.grid`), the calibration on planted controls (:mod:`biaskit.studies.calibration`),
the CLI (``python -m biaskit metrics``) and the documentation.  In the manner of
lm-evaluation-harness's task registry (``lm_eval/api/registry.py``) and of WEFE's metric templates,
which declare each metric's inputs.

A declaration says what a reader needs to choose a metric:

* ``name`` / ``label``: the identifier used in configurations and tables, and its words;
* ``family``: the kind of input it reads (:data:`FAMILIES`: a corpus, word vectors, language
  models, classifiers);
* ``inputs``: what a user supplies (:data:`INPUT_KINDS`: word sets, sentence pairs, ...);
* ``model_kinds``: which models it applies to (:data:`MODEL_KINDS`; ``()`` for a corpus metric);
* ``directional``: whether its value can point to one group (the thesis's KL score cannot);
* ``test``: the statistical test its :class:`~biaskit.core.results.TestResult` carries;
* ``citation`` and ``section`` (the seed study's section it implements);
* ``entry_point``: the public callable or class (stored as ``"module:qualname"``; ``tests/test_registry.py``
  loads every one).

Two optional hooks let the studies layer run a metric without knowing it: ``grid``
(:class:`GridSupport`: which dataset kind of a batch grid it reads and how one cell is run) and
``calibration`` (:class:`CalibrationSupport`: the measures it contributes to the planted-control
calibration).  This module is a foundation: it imports no other part of biaskit, and the metric
modules (a layer above) register into it when they are imported (``import biaskit.metrics`` imports
them all, see :func:`biaskit.metrics.registered_metrics`).
"""

from __future__ import annotations

import difflib
import importlib
import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

__all__ = [
    "Kind",
    "MetricValues",
    "FAMILIES",
    "INPUT_KINDS",
    "MODEL_KINDS",
    "CalibrationMeasure",
    "CalibrationSupport",
    "GridCall",
    "GridSupport",
    "Metric",
    "MetricRegistry",
    "REGISTRY",
    "UnknownMetricError",
    "calibration_support",
    "metric_table",
    "register_metric",
    "register_metrics",
]

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


@dataclass(frozen=True)
class GridCall:
    """One cell of a batch grid, as the grid hands it to :attr:`GridSupport.run`.

    ``model`` is the loaded model (``KeyedVectors``, :class:`~biaskit.lm.MaskedLM` or
    :class:`~biaskit.lm.CausalLM`), ``model_kind`` one of ``"static"``, ``"mlm"``, ``"causal"`` (the
    grid's names), ``data`` the loaded dataset, ``method`` the pooling method or scoring variant of the
    cell, ``options`` the grid's options (a mapping with defaults filled in), ``language`` the
    dataset's language (``""`` when unknown), ``model_name`` the model's name in the grid.
    """

    model: Any
    model_kind: str
    model_name: str
    data: Any
    method: str
    options: Mapping[str, Any]
    language: str = ""


@dataclass(frozen=True)
class GridSupport:
    """How the batch grid (:func:`biaskit.studies.grid.run_experiments`) runs a metric.

    ``dataset_kind``
        the kind of grid dataset the metric reads (``"words"``, ``"sentences"``, ``"lpbs"``,
        ``"crows"``; a dataset identifier's kind is decided by the grid's loader).
    ``run``
        ``run(call: GridCall) -> list[dict]``: the table rows of one cell, each a mapping of the
        grid's result columns (``n``, ``statistic``, ``effect_size``, ``score``, ``p_value``,
        ``permutation``, ``targets``, ``attributes``, ``bias_type``, ``note``, ``significant``);
        :meth:`rows_from_result` turns a :class:`~biaskit.core.results.TestResult` into one.
    ``methods``
        ``methods(model_kind, options) -> tuple[str, ...]``: the cells to run for one model (e.g.
        one per pooling method); default one cell with method ``"-"``.
    ``not_for``
        grid model kinds the metric cannot read, with the reason shown when a cell is skipped.
    """

    dataset_kind: str
    run: Callable[[GridCall], list[dict[str, Any]]] | str
    methods: Callable[[str, Mapping[str, Any]], tuple[str, ...]] | None = None
    not_for: Mapping[str, str] = field(default_factory=dict)

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
        test's name) plus ``extra`` columns."""
        row = {
            "n": result.n,
            "statistic": result.statistic,
            "effect_size": result.effect_size,
            "p_value": result.p_value,
            "permutation": (result.details or {}).get("permutation_method", result.method),
        }
        row.update(extra)
        return [row]


@dataclass(frozen=True)
class CalibrationMeasure:
    """One measure a metric contributes to the calibration on planted controls.

    ``key`` names it in the calibration's tables (``"crows_cp"``); ``label`` says what a unit's value
    is; ``kind`` picks the calibration's test (``"sign"``, ``"mean"``, ``"groups"``, ``"ks"``,
    ``"kl"``, ``"agreement"``; :func:`biaskit.studies.calibration.evaluate`); ``model_kind`` the
    controls it runs on (``"masked"``, ``"causal"``, ``"static"``).  ``values`` is ``None`` for the
    measures the calibration computes together from shared scores
    (:func:`biaskit.studies.calibration.language_model_values`), or a callable
    ``values(model, targets, *, progress) -> MetricValues`` (for static measures
    ``values(vectors, corpus, targets, *, progress)``) for a metric that brings its own.
    """

    key: str
    label: str
    kind: str
    model_kind: str
    values: Callable[..., Any] | None = None


@dataclass(frozen=True)
class CalibrationSupport:
    """The measures (:class:`CalibrationMeasure`) a metric contributes to the calibration."""

    measures: tuple[CalibrationMeasure, ...]


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

    def load(self) -> Any:
        """The public callable or class named by :attr:`entry_point`."""
        return _load(self.entry_point)

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
            "grid": self.grid.dataset_kind if self.grid else "",
            "calibration": ", ".join(m.key for m in self.calibration.measures) if self.calibration else "",
            "section": self.section,
            "citation": self.citation,
            "entry_point": self.entry_point,
        }


class MetricRegistry(Mapping[str, Metric]):
    """Name -> :class:`Metric`, in declaration order; a name is registered once."""

    def __init__(self) -> None:
        self._metrics: dict[str, Metric] = {}

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
        if metric.name in self._metrics:
            old = self._metrics[metric.name]
            raise ValueError(
                f"metric {metric.name!r} is registered twice ({old.module} and {metric.module}); "
                "declare each metric once, beside its code"
            )
        self._metrics[metric.name] = metric
        return metric

    def remove(self, name: str) -> Metric:
        """Unregister ``name`` (for tests that register a metric of their own)."""
        return self._metrics.pop(name)

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


#: the one registry of the package
REGISTRY = MetricRegistry()

#: the calibration's kinds of measure, each with its own test (:func:`biaskit.studies.calibration.evaluate`)
Kind = Literal["sign", "mean", "groups", "ks", "kl", "agreement"]


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


def _check_choice(value: str, allowed: Sequence[str], what: str, name: str) -> None:
    if value not in allowed:
        raise ValueError(f"metric {name!r}: {what} {value!r} is not one of {list(allowed)}")


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
    registry: MetricRegistry | None = None,
) -> Metric:
    """Declare a metric (call it once, at module level, beside the metric's code).

    ``entry_point`` is the public callable or class (or its ``"module:qualname"``); it must exist.
    Raises ``ValueError`` for an unknown family, input kind or model kind, a name registered twice,
    or a private entry point.
    """
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
    if any(p.startswith("_") for p in ep.replace(":", ".").split(".")):
        raise ValueError(f"metric {name!r}: the entry point {ep!r} must be public")
    module = ep.partition(":")[0]
    metric = Metric(
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
    )
    if calibration is not None:
        for cm in calibration.measures:
            _check_choice(cm.model_kind, ("masked", "causal", "static"), "calibration model kind", name)
    return (registry or REGISTRY).add(metric)


def register_metrics(*declarations: Mapping[str, Any], **shared: Any) -> list[Metric]:
    """Declare several metrics whose declarations share fields (the PLL readings of CrowS-Pairs, ...).

    ``shared`` holds the keyword arguments of :func:`register_metric` common to all of them; each
    declaration holds the rest, its ``name`` among them (a key it gives replaces the shared one).  The
    metrics are registered in the order given, each as :func:`register_metric` would.
    """
    return [register_metric(**{**shared, **d}) for d in declarations]


#: the fields of a row of :func:`metric_table`, in order
METRIC_TABLE_FIELDS = (
    "name",
    "label",
    "test",
    "citation",
    "section",
    "entry_point",
    "summary",
    "returns",
    "calibration",
)


def metric_table(*rows: Sequence[Any]) -> list[dict[str, Any]]:
    """Declarations for :func:`register_metrics` from rows of a module's table of metrics, one row a metric:
    ``(name, label, test, citation, section, entry_point, summary, returns, calibration)``
    (:data:`METRIC_TABLE_FIELDS`; ``returns="TestResult"`` and ``calibration=None`` are
    :func:`register_metric`'s defaults), optionally followed by a dict of further fields of that metric
    (``model_kinds``, ``inputs``, ...).  ``ValueError`` for a row of another length."""
    out = []
    for row in rows:
        n = len(METRIC_TABLE_FIELDS)
        if len(row) not in (n, n + 1):
            raise ValueError(f"metric table row {row[:1]!r}: give the {n} fields {METRIC_TABLE_FIELDS}")
        out.append(
            {**dict(zip(METRIC_TABLE_FIELDS, row[:n], strict=True)), **(row[n] if len(row) > n else {})}
        )
    return out


def calibration_support(*measures: tuple[str, str, str, str]) -> CalibrationSupport:
    """A :class:`CalibrationSupport` of measures each given as ``(key, label, kind, model_kind)``
    (:class:`CalibrationMeasure` without a ``values`` callable)."""
    return CalibrationSupport(tuple(CalibrationMeasure(*m) for m in measures))
