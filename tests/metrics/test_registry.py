"""The metric registry: every metric declared once, read by the grid, the calibration and the CLI.

The toy metric of ``docs/adding_a_metric.md`` is executed as the guide shows it: the ``toy`` fixture writes
the guide's code block into a module of its own and imports it, so that its ``@metric`` declaration
registers it (and unregisters it afterwards).  That is all it takes for the batch grid, the calibration,
the conformance checks and ``python -m biaskit metrics`` to run and list it: no other file of biaskit
changes.
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import numpy as np
import pytest

import biaskit.metrics
from biaskit.core.registry import (
    REGISTRY,
    GridSupport,
    MetricClashError,
    MetricRegistry,
    UnknownMetricError,
    metric,
    register_metric,
)
from biaskit.core.results import TestResult

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "adding_a_metric.md"

#: every metric the issue names, by registry name
EXPECTED = {
    "pmi", "pmi_test", "pmi_frequency_baseline", "direct_bias", "bolukbasi_indirect", "weat", "wefat", "rnd",
    "rnsb", "ect", "mac", "ripa", "seat", "lpbs", "crows", "cp", "sz", "aul", "ll", "shared", "stereoset",
    "comp_baseline", "barza_templates", "barza_pairs", "dpccb", "dicobi", "same", "domain_gain",
    "indirect_bias", "thesis_ks", "thesis_kl", "robustness",
}  # fmt: skip


# ----------------------------------------------------------------------------------- toy metric
def guide_module_source() -> str:
    """The guide's code block that defines the toy metric (the one with ``@metric``)."""
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), flags=re.S)
    toy = [b for b in blocks if "@metric(" in b]
    assert len(toy) == 1, "docs/adding_a_metric.md must show the toy metric in one python block"
    return toy[0]


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The guide's toy metric module, imported (its @metric registers centroid_gap), then unregistered."""
    import importlib
    import sys

    (tmp_path / "centroid_gap_guide.py").write_text(guide_module_source(), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("centroid_gap_guide")
    try:
        yield module
    finally:
        REGISTRY.remove("centroid_gap")
        sys.modules.pop("centroid_gap_guide", None)


def _unit(m):
    """A private helper (refused as an entry point)."""
    return m


def centroid_gap(X, Y, A, B, vectors):
    """A public stand-in entry point for the declarations refused below."""
    return X


# ----------------------------------------------------------------------------------- the registry itself
def test_every_metric_of_the_workbench_is_registered_once_with_a_loadable_entry_point():
    names = [m.name for m in biaskit.metrics.registered_metrics()]
    assert len(names) == len(set(names))
    assert EXPECTED <= set(names), sorted(EXPECTED - set(names))
    for m in biaskit.metrics.registered_metrics():
        obj = m.load()
        assert callable(obj), m.name
        assert m.module.startswith("biaskit.metrics.") or m.package != "biaskit", m.name
        assert (obj.__doc__ or "").strip(), f"{m.name}: the entry point has no docstring"
        assert m.citation and m.section and m.test, m.name


def test_the_calibration_and_the_grid_read_the_registry():
    """The calibration's measures and the grid's metrics are whatever the registry holds (no fixed list)."""
    from biaskit.studies import calibration as cal
    from biaskit.studies.grid import grid_metrics

    keys = [cm.key for _, cm in REGISTRY.calibration_measures()]
    assert keys and len(keys) == len(set(keys))
    for kind, names in (
        ("masked", cal.LM_METRICS),
        ("causal", cal.CAUSAL_LM_METRICS),
        ("static", cal.STATIC_METRICS),
    ):
        assert names == tuple(cm.key for _, cm in REGISTRY.calibration_measures(kind))
    for m, cm in REGISTRY.calibration_measures():
        assert cal.METRIC_LABELS[cm.key] == cm.label and cm.key in m.as_row()["calibration"]
    assert grid_metrics() == tuple(m.name for m in REGISTRY.values() if m.grid is not None)


def test_unknown_metric_names_the_nearest_and_a_second_declaration_is_refused():
    with pytest.raises(UnknownMetricError, match="did you mean weat"):
        REGISTRY["waet"]
    with pytest.raises(
        MetricClashError, match=r"'weat' is registered twice: by package 'biaskit' \(biaskit.metrics.weat\)"
    ):
        register_metric(
            "weat", label="x", family="word vectors", inputs=("word sets",), model_kinds=("static",),
            directional=True, test="t", citation="c", section="s", entry_point=centroid_gap,
            registry=REGISTRY,
        )  # fmt: skip
    local = MetricRegistry()
    with pytest.raises(ValueError, match="family 'vectors'"):
        register_metric(
            "x", label="x", family="vectors", inputs=("word sets",), model_kinds=(), directional=True,
            test="t", citation="c", section="s", entry_point=centroid_gap, registry=local,
        )  # fmt: skip
    with pytest.raises(ValueError, match="must be public"):
        register_metric(
            "x", label="x", family="corpus", inputs=("corpus",), model_kinds=(), directional=True,
            test="t", citation="c", section="s", entry_point=_unit, registry=local,
        )  # fmt: skip
    with pytest.raises(ValueError, match="grid dataset kind 'tables' is not declared"):
        register_metric(
            "x", label="x", family="corpus", inputs=("corpus",), model_kinds=(), directional=True,
            test="t", citation="c", section="s", entry_point=centroid_gap, registry=local,
            grid=GridSupport("tables", centroid_gap),
        )  # fmt: skip
    with pytest.raises(TypeError):  # every field but the name is a keyword
        register_metric("x", "x", "corpus", registry=local)  # type: ignore[misc]
    assert len(local) == 0


_DECORATED = MetricRegistry()


@metric(
    name="decorated_gap", label="Decorated", family="word vectors", inputs=("word sets",),
    model_kinds=("static",), directional=True, test="none", citation="c", section="s", registry=_DECORATED,
)  # fmt: skip
def decorated_gap(words, vectors):
    """A decorated toy (registered into a registry of its own)."""
    return words


def test_the_decorator_registers_its_function_as_the_entry_point():
    assert decorated_gap(["a"], None) == ["a"]  # the function itself comes back
    m = _DECORATED["decorated_gap"]
    assert m.load() is decorated_gap and m.entry_point == f"{__name__}:decorated_gap"
    assert m.package == __name__.partition(".")[0] and "decorated_gap" not in REGISTRY

    def inner(words):
        """Not importable by name."""

    with pytest.raises(ValueError, match="defined inside a function"):
        metric(name="inner", label="x", family="corpus", inputs=("corpus",), model_kinds=(), directional=True,
               test="t", citation="c", section="s", registry=MetricRegistry())(inner)  # fmt: skip


def _fake_plugin(root: Path, dist: str, module: str, source: str) -> None:
    """An installed-looking distribution in ``root``: a module and a dist-info with an entry point in the
    ``biaskit.metrics`` group (what pip writes for a package's ``[project.entry-points]``)."""
    (root / f"{module}.py").write_text(source, encoding="utf-8")
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[biaskit.metrics]\n{module} = {module}\n", encoding="utf-8")


def test_a_plugin_that_fails_to_import_is_left_out_with_a_warning_and_a_clash_names_both_packages(
    tmp_path, monkeypatch, caplog
):
    from biaskit.core.registry import discover_plugins

    _fake_plugin(tmp_path, "broken-plugin", "broken_plugin_mod", "raise ImportError('needs torch 9')\n")
    clash = (
        "from biaskit.core.registry import metric\n"
        "@metric(name='weat', label='x', family='word vectors', inputs=('word sets',), "
        "model_kinds=('static',),\n"
        "        directional=True, test='t', citation='c', section='s')\n"
        "def fake_weat():\n    'A clash.'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    local = MetricRegistry()
    with caplog.at_level("WARNING", logger="biaskit.core.registry"):
        assert discover_plugins(local) == []
    assert "metric plug-in 'broken_plugin_mod' of package 'broken-plugin'" in caplog.text
    assert "ImportError: needs torch 9" in caplog.text and "pip uninstall broken-plugin" in caplog.text
    assert local.plugin_problems and len(local) == 0
    # the CLI still lists the built-in metrics and repeats the warning
    from biaskit.__main__ import main

    monkeypatch.setattr(REGISTRY, "plugin_problems", list(local.plugin_problems))
    assert main(["metrics", "--format", "csv"]) == 0
    # a plug-in metric whose name is taken: an error naming both packages
    _fake_plugin(tmp_path, "clash-plugin", "clash_plugin_mod", clash)
    with pytest.raises(MetricClashError, match=r"by package 'biaskit' .* and by package 'clash-plugin'"):
        discover_plugins(REGISTRY)
    assert REGISTRY["weat"].package == "biaskit"


def test_cli_lists_every_metric(capsys):
    from biaskit.__main__ import main

    assert main(["metrics", "--format", "json", "--all-columns"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["name"] for r in rows} == set(REGISTRY)
    weat = next(r for r in rows if r["name"] == "weat")
    assert weat["family"] == "word vectors" and weat["grid"] == "words" and weat["calibration"] == "weat"
    assert main(["metrics", "--family", "corpus"]) == 0
    out = capsys.readouterr().out
    assert "== corpus (3)" in out and "weat" not in out
    assert main(["metrics", "--family", "nope"]) == 1


# --------------------------------------------------------------------------------- the toy metric, end to end
def test_toy_metric_runs_through_the_batch_grid(toy, tmp_path, capsys, caplog):
    """The guide's toy in a grid, with its own option: its exact p equals WEAT's on the same per-word leans
    (the difference of means is an increasing function of WEAT's sum statistic for fixed set sizes)."""
    from grid_support import WORDS, make_toy_grid, toy_grid_config

    from biaskit.__main__ import main
    from biaskit.embeddings.vectors import load_vectors
    from biaskit.metrics.weat import permutation_pvalue
    from biaskit.studies.grid import run_experiments

    d = make_toy_grid(tmp_path / "grid")
    cfg = toy_grid_config(d, centroid_gap_alternative="greater")
    cfg["models"] = cfg["models"][:2]  # static vectors and a masked LM
    cfg["datasets"] = [ds for ds in cfg["datasets"] if ds["name"] == "weat"]
    cfg["metrics"] = ["weat", "centroid_gap"]
    with caplog.at_level("INFO", logger="biaskit.studies.grid"):
        df = run_experiments(cfg, progress=False, write=False)
    row = df[(df["metric"] == "centroid_gap")]
    assert len(row) == 1 and row["status"].iloc[0] == "ok" and row["model"].iloc[0] == "toy-static"
    g = toy.centroid_lean([*WORDS["X"], *WORDS["Y"]], WORDS["A"], WORDS["B"], load_vectors(d / "toy.kv"))
    k = len(WORDS["X"])
    assert row["effect_size"].iloc[0] == pytest.approx(
        g[:k].mean() - g[k:].mean(), rel=1e-6
    )  # float32 vectors
    assert row["p_value"].iloc[0] == permutation_pvalue(g[:k], g[k:], alternative="greater").p_value
    assert row["permutation"].iloc[0] == "exact"
    assert set(df[df["metric"] == "weat"]["model"]) == {"toy-static", "tiny-mlm"}
    assert "tiny-mlm x weat x centroid_gap: centroid_gap reads static models, not masked" in caplog.text
    assert main(["metrics", "--format", "csv"]) == 0
    assert "centroid_gap,Centroid gap (toy),word vectors" in capsys.readouterr().out


@pytest.mark.slow
def test_toy_metric_runs_through_the_calibration(toy):
    from biaskit.data.counterfactual import assign_directions
    from biaskit.studies import calibration as cal
    from biaskit.training import recipes as tm

    plan = assign_directions(list(tm.CONTROL_TARGETS), seed=tm.CONTROL_SEED)
    vectors = {s: tm.load_trained_vectors("en-planted-w2v", s=s) for s in (0.5, 0.8)}
    result = cal.run_calibration({}, vectors, None, plan, power_s=0.8, n_resamples=40)
    eff = result.effects.set_index(["metric", "planted"])
    row = eff.loc[("centroid_gap", 0.8)]
    assert row["label"] == "Centroid gap (word2vec), mean lean" and row["family"] == "static"
    # the effect of a "groups" measure: mean lean of the male-planted professions minus the female-planted
    mv = result.values["centroid_gap"][0.8]
    male = np.array([plan[t] == "male" for t in mv.target])
    assert row["effect"] == pytest.approx(mv.value[male].mean() - mv.value[~male].mean(), rel=1e-9)
    assert row["toward_planted"] and row["p_value"] < 0.01
    summary = result.summary.set_index("metric").loc["centroid_gap"]
    assert summary["found_at_0_8"] and summary["fpr"] is not None
    static = [m for m in cal.STATIC_METRICS if m != "pmi"]  # no corpus: no PMI
    assert list(result.effects["metric"].unique()) == static and "centroid_gap" in static


def test_the_guides_toy_passes_every_conformance_check(toy):
    from test_metric_conformance import CHECKS, _applies

    m = REGISTRY["centroid_gap"]
    assert m.module == "centroid_gap_guide" and m.load() is toy.centroid_gap
    for check in CHECKS:
        if _applies(check, m):
            check(m)


def test_the_guide_covers_every_dataset_kind_and_the_plugin_packaging():
    from biaskit.core.registry import DATASET_KINDS

    text = GUIDE.read_text(encoding="utf-8")
    for kind in DATASET_KINDS:
        if REGISTRY and any(
            kind in m.grid.dataset_kinds for m in REGISTRY.with_grid() if m.package == "biaskit"
        ):
            assert f"| `{kind}` |" in text, f"the guide's table of dataset kinds lacks {kind!r}"
    for name in ("permutation_test", "Partitions", "CalibrationCall", "register_dataset_loader", "Option("):
        assert name in text
    toml = re.findall(r"```toml\n(.*?)```", text, flags=re.S)
    pyproject = (REPO / "tests" / "plugins" / "biaskit_toy_metric" / "pyproject.toml").read_text(
        encoding="utf-8"
    )
    assert toml and all(line in pyproject.splitlines() for line in toml[0].strip().splitlines())


# ---------------------------------------------------------------------------------- what every metric returns
def _returned_type(entry_point):
    """The return annotation of a registered entry point; for a class, the class itself when it has a
    ``summary``, else the annotation of its ``run`` method (WEAT, LPBS, WEFE's family)."""
    import typing

    if inspect.isclass(entry_point):
        if callable(getattr(entry_point, "summary", None)):
            return entry_point
        entry_point = getattr(entry_point, "run", None) or entry_point.__call__
    return typing.get_type_hints(entry_point).get("return")


def test_every_metric_returns_a_test_result_or_a_result_that_summarises_itself():
    """Every registered entry point returns a TestResult or a documented result object
    with ``summary(alpha=0.05) -> str``, and its registration's ``returns`` names that type first."""
    bad = {}
    for m in biaskit.metrics.registered_metrics():
        ret = _returned_type(m.load())
        if ret is not TestResult:
            summary = getattr(ret, "summary", None) if inspect.isclass(ret) else None
            if not callable(summary):
                bad[m.name] = f"returns {ret!r}, which has no summary()"
                continue
            params = inspect.signature(summary).parameters
            if "alpha" not in params or params["alpha"].default != 0.05:
                bad[m.name] = f"{ret.__name__}.summary has no alpha=0.05 parameter"
                continue
            if not (ret.__doc__ or "").strip() or not (summary.__doc__ or "").strip():
                bad[m.name] = f"{ret.__name__} or its summary() has no docstring"
                continue
        if not m.returns.startswith(ret.__name__):
            bad[m.name] = f"returns text {m.returns!r} does not start with {ret.__name__}"
    assert not bad, bad


# ----------------------------------------------------------------------------------- a plug-in package
@pytest.mark.slow
def test_a_plugin_package_adds_its_metric_through_its_entry_point(toy_plugin):
    """tests/plugins/biaskit_toy_metric, pip-installed into a temporary folder: its entry point puts its
    metric into the registry, the CLI of a fresh process and the docs' registry page."""
    import os
    import subprocess
    import sys

    m = REGISTRY["mean_cosine_gap"]
    assert m.package == "biaskit-toy-metric" and m.module == "biaskit_toy_metric.metric"
    assert m.grid is not None and m.calibration is not None and m.example is not None
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(toy_plugin), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "biaskit", "metrics", "--format", "json", "--all-columns"],
        env=env, cwd=REPO, capture_output=True, text=True, check=True,
    )  # fmt: skip
    rows = {r["name"]: r for r in json.loads(done.stdout)}
    assert set(rows) == set(REGISTRY)
    row = rows["mean_cosine_gap"]
    assert row["package"] == "biaskit-toy-metric" and row["grid"] == "words"
    assert (
        row["options"] == "mean_cosine_gap_alternative='two-sided'"
        and row["calibration"] == "mean_cosine_gap"
    )
    # without the folder on the path, a fresh process has no such metric
    plain = subprocess.run(
        [sys.executable, "-m", "biaskit", "metrics", "--format", "csv"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert plain.returncode == 0 and "mean_cosine_gap" not in plain.stdout
    # the docs' registry page lists it, naming its package (no link into biaskit's API pages)
    sys.path.insert(0, str(REPO / "docs" / "_ext"))
    try:
        import biaskit_docs
    finally:
        sys.path.remove(str(REPO / "docs" / "_ext"))
    page = biaskit_docs.registry_markdown()
    line = next(ln for ln in page.splitlines() if ln.startswith("| `mean_cosine_gap`"))
    assert (
        "(package `biaskit-toy-metric`)" in line
        and "py:obj" not in line
        and "mean_cosine_gap_alternative" in line
    )


def test_a_plugin_metric_runs_in_the_grid_with_its_own_option_and_in_the_calibration(toy_plugin, tmp_path):
    """The plug-in's metric reads a word dataset in the grid with its own option
    (mean_cosine_gap_alternative, refused with a bad value), and its calibration hook runs on the controls."""
    from grid_support import WORDS, make_toy_grid, toy_grid_config

    from biaskit.core.permutation import TIE_RTOL
    from biaskit.data.counterfactual import assign_directions
    from biaskit.embeddings.vectors import load_vectors
    from biaskit.metrics.weat import permutation_pvalue
    from biaskit.studies import calibration as cal
    from biaskit.studies.grid import load_config, run_experiments
    from biaskit.training import recipes as tm

    d = make_toy_grid(tmp_path / "grid")
    cfg = toy_grid_config(d, mean_cosine_gap_alternative="greater")
    cfg["models"] = cfg["models"][:1]
    cfg["datasets"] = [ds for ds in cfg["datasets"] if ds["name"] == "weat"]
    cfg["metrics"] = ["mean_cosine_gap"]
    df = run_experiments(cfg, progress=False, write=False)
    assert len(df) == 1 and df["status"].iloc[0] == "ok", df["error"].tolist()
    # independent check: the exact p equals WEAT's on the same per-word gaps (the mean difference is an
    # increasing function of WEAT's sum statistic for fixed set sizes)
    import biaskit_toy_metric.metric as plugin

    kv = load_vectors(d / "toy.kv")
    g = plugin.cosine_gaps([*WORDS["X"], *WORDS["Y"]], WORDS["A"], WORDS["B"], kv)
    k = len(WORDS["X"])
    weat = permutation_pvalue(g[:k], g[k:], alternative="greater")
    assert df["p_value"].iloc[0] == pytest.approx(weat.p_value, rel=1e-12)
    assert df["statistic"].iloc[0] == pytest.approx(g[:k].mean() - g[k:].mean(), abs=10 * TIE_RTOL)
    with pytest.raises(ValueError, match="mean_cosine_gap_alternative='up' is not one of"):
        load_config({**cfg, "options": {"mean_cosine_gap_alternative": "up"}})
    # the calibration: the plug-in's static measure beside the built-in ones
    plan = assign_directions(list(tm.CONTROL_TARGETS), seed=tm.CONTROL_SEED)
    vectors = {s: tm.load_trained_vectors("en-planted-w2v", s=s) for s in (0.5, 0.8)}
    result = cal.run_calibration({}, vectors, None, plan, power_s=0.8, n_resamples=20)
    mv = result.values["mean_cosine_gap"][0.8]
    row = result.effects.set_index(["metric", "planted"]).loc[("mean_cosine_gap", 0.8)]
    male = np.array([plan[t] == "male" for t in mv.target])
    assert row["effect"] == pytest.approx(mv.value[male].mean() - mv.value[~male].mean(), rel=1e-9)
    assert "mean_cosine_gap" in cal.STATIC_METRICS and cal.METRIC_LABELS["mean_cosine_gap"].startswith(
        "Mean cosine"
    )
