"""Every registered metric, built-in or from a plug-in package, keeps the contract of the registry.

In the spirit of scikit-learn's ``parametrize_with_checks``: one list of checks, run on every metric the
registry holds when the tests are collected (``test_builtin_metric``), and on the metrics of the toy
plug-in package (``test_plugin_metric``, which installs ``tests/plugins/biaskit_toy_metric``).  A metric
that is declared correctly passes all of them, so adding one breaks no test:

* it loads (its entry point is a public callable) and is documented (a docstring with a formula, its
  citation's author named in it or in its module's docstring);
* its ``example`` hook runs it on the toy inputs of :mod:`biaskit.metrics.toys` and returns a
  ``TestResult`` (or a result object that summarises itself), of the type its ``returns`` names;
* with grid support: every dataset kind it reads is declared with a loader and a toy dataset, a toy
  cell runs and gives rows of the grid's columns, and its options round-trip through a configuration;
* with calibration support: each measure's ``values(call)`` gives :class:`MetricValues` of the declared
  key and kind on a toy control, and the calibration's own test can evaluate them.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable

import numpy as np
import pytest

import biaskit.metrics
from biaskit.core.registry import (
    DATASET_KINDS,
    FAMILIES,
    INPUT_KINDS,
    MODEL_KINDS,
    REGISTRY,
    CalibrationCall,
    GridCall,
    Metric,
    MetricValues,
    ScoreCache,
    dataset_loaders,
)
from biaskit.core.results import TestResult

#: the metrics registered when the tests are collected (built-in, and any plug-in installed in the
#: environment)
COLLECTED = [m.name for m in biaskit.metrics.registered_metrics()]
#: the grid's names of the registry's model kinds
GRID_KIND = {"static": "static", "masked": "masked", "causal": "causal"}


# ----------------------------------------------------------------------------------- the checks
def check_loads_and_is_documented(m: Metric) -> None:
    obj = m.load()
    assert callable(obj), f"{m.name}: entry point {m.entry_point} is not callable"
    assert not m.entry_point.partition(":")[2].startswith("_")
    doc = inspect.getdoc(obj) or ""
    assert doc.strip(), f"{m.name}: {m.entry_point} has no docstring"
    assert re.search(r"=|math::|:math:", doc), f"{m.name}: the docstring of {m.entry_point} gives no formula"
    # the citation: one of its authors (a name before a year) or the seed study it names, in its docs
    cited = re.findall(r"([A-Z][\w'-]+)(?:\s+et al\.|\s*&\s*[A-Z][\w-]+)?,?\s+\(?\d{4}", m.citation)
    cited += re.findall(r"seed \d{3}", f"{m.citation} {m.section}")
    assert cited, f"{m.name}: the citation {m.citation!r} names no author and year"
    docs = (doc + (inspect.getdoc(inspect.getmodule(obj)) or "")).lower()
    assert any(c.lower() in docs for c in cited), (
        f"{m.name}: none of {cited} (its citation) is named in its docs"
    )


def check_declaration(m: Metric) -> None:
    assert (
        m.family in FAMILIES and set(m.inputs) <= set(INPUT_KINDS) and set(m.model_kinds) <= set(MODEL_KINDS)
    )
    for field in ("label", "test", "citation", "section", "summary", "returns"):
        assert str(getattr(m, field)).strip(), f"{m.name}: empty {field}"
    assert m.package and m.module == m.entry_point.partition(":")[0]
    assert m.example is not None, f"{m.name}: no example hook (example=...) to run it on toy inputs"
    if m.package == "biaskit":  # a built-in metric runs in a grid or says why it cannot
        assert (m.grid is None) == bool(m.no_grid.strip()), (
            f"{m.name}: give grid=GridSupport(...) or no_grid='why a grid cell cannot run it'"
        )


def check_example(m: Metric) -> None:
    result = m.example()
    kind = type(result)
    if kind is not TestResult:
        summary = getattr(result, "summary", None)
        assert callable(summary), f"{m.name}: example returned a {kind.__name__} without summary()"
        assert isinstance(summary(0.05), str) and summary(0.05).strip()
    else:
        assert result.method and result.n is not None
        assert result.p_value is None or 0 <= result.p_value <= 1, f"{m.name}: p = {result.p_value}"
        assert np.isfinite(result.statistic), f"{m.name}: statistic {result.statistic}"
    assert m.returns.startswith(kind.__name__), (
        f"{m.name}: returns {m.returns!r}, the example gave a {kind.__name__}"
    )


def _grid_model_kind(m: Metric) -> str | None:
    """A grid model kind the metric runs on (static vectors first), or None."""
    for kind in ("static", "masked", "causal"):
        grid_kind = GRID_KIND[kind]
        if kind in m.model_kinds and grid_kind not in m.grid.not_for:
            return grid_kind
    return None


def check_grid(m: Metric) -> None:
    from biaskit.metrics.toys import toy_model
    from biaskit.studies.grid_config import COLUMNS, default_options

    loaded_kinds = {k for ld in dataset_loaders() for k in ld.kinds}
    for kind in m.grid.dataset_kinds:
        assert kind in DATASET_KINDS, f"{m.name}: dataset kind {kind!r} not declared"
        assert kind in loaded_kinds, f"{m.name}: no loader gives dataset kind {kind!r}"
        assert DATASET_KINDS[kind].example is not None, f"{m.name}: dataset kind {kind!r} has no toy example"
    model_kind = _grid_model_kind(m)
    assert model_kind is not None, f"{m.name}: grid support but no model kind the grid can give it"
    options = default_options()
    kind = m.grid.dataset_kinds[0]
    for method in m.grid.cell_methods(model_kind, options)[:1]:
        call = GridCall(
            model=toy_model(model_kind),
            model_kind=model_kind,
            model_name="toy",
            data=DATASET_KINDS[kind].example(),
            method=method,
            options={**options, "n_permutations": 100},
            language="en",
            metric=m.name,
            dataset_kind=kind,
        )
        rows = m.grid.runner()(call)
        assert isinstance(rows, list) and rows, f"{m.name}: a grid cell gave no rows"
        for row in rows:
            assert set(row) <= set(COLUMNS), f"{m.name}: unknown grid columns {set(row) - set(COLUMNS)}"
            p = row.get("p_value")
            assert p is None or (isinstance(p, float) and math.isnan(p)) or 0 <= p <= 1


def check_grid_options_round_trip(m: Metric) -> None:
    from biaskit.studies.grid_config import load_config

    base = {"models": ["toy-vectors"], "datasets": ["may2019:weat7"], "metrics": [m.name]}
    for key, option in m.grid_option_keys().items():
        cfg = load_config({**base, "options": {key: option.default}})
        assert cfg.option(key) == option.default
        again = load_config({**base, **{k: v for k, v in cfg.to_dict().items() if k in ("options", "name")}})
        assert again.option(key) == option.default and again.options == cfg.options
        if option.choices:
            with pytest.raises(ValueError, match=re.escape(key)):
                load_config({**base, "options": {key: "no such value"}})


def check_calibration(m: Metric) -> None:
    from biaskit.metrics.toys import TOY_PROFESSIONS, toy_corpus, toy_model
    from biaskit.studies.calibration_stats import evaluate

    directions = {t: ("male" if i % 2 == 0 else "female") for i, t in enumerate(TOY_PROFESSIONS)}
    caches: dict[str, ScoreCache] = {}
    for cm in m.calibration.measures:
        assert callable(cm.values), f"{m.name}: calibration measure {cm.key!r} has no values(call) hook"
        call = CalibrationCall(
            model=toy_model(cm.model_kind),
            kind=cm.model_kind,
            targets=tuple(TOY_PROFESSIONS),
            corpus=toy_corpus(),
            cache=caches.setdefault(cm.model_kind, ScoreCache()),
        )
        mv = cm.values(call)
        assert isinstance(mv, MetricValues) and mv.metric == cm.key and mv.kind == cm.kind, (m.name, cm.key)
        assert mv.target.shape == mv.value.shape and mv.value.size > 0
        assert set(mv.target) <= set(TOY_PROFESSIONS)
        assert np.all(np.isfinite(mv.value)), f"{m.name}: {cm.key} gave non-finite values"
        ev = evaluate(mv, directions, n_permutations=50)
        assert np.isfinite(ev.effect) or cm.kind == "groups"


CHECKS: tuple[Callable[[Metric], None], ...] = (
    check_declaration,
    check_loads_and_is_documented,
    check_example,
    check_grid,
    check_grid_options_round_trip,
    check_calibration,
)


def _applies(check: Callable[[Metric], None], m: Metric) -> bool:
    if check in (check_grid, check_grid_options_round_trip):
        return m.grid is not None
    if check is check_calibration:
        return m.calibration is not None
    return True


# ----------------------------------------------------------------------------------- the tests
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("name", COLLECTED)
def test_builtin_metric(name, check):
    m = REGISTRY[name]
    if not _applies(check, m):
        pytest.skip(f"{name} has no {'grid' if 'grid' in check.__name__ else 'calibration'} support")
    check(m)


@pytest.mark.slow
def test_plugin_metric(toy_plugin):
    """The toy plug-in package's metric passes every check (tests/plugins/biaskit_toy_metric)."""
    plugin = [m for m in REGISTRY.values() if m.package == "biaskit-toy-metric"]
    assert [m.name for m in plugin] == ["mean_cosine_gap"]
    for m in plugin:
        for check in CHECKS:
            if _applies(check, m):
                check(m)


def test_every_grid_dataset_kind_has_a_loader_and_a_toy():
    for name, kind in DATASET_KINDS.items():
        assert kind.description and kind.example is not None, name
        assert any(name in ld.kinds for ld in dataset_loaders()), f"no loader gives {name!r}"
