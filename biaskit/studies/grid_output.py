"""The batch grid's outputs: summary and LaTeX tables, plots, plain sentences for a reader, the files.

Part of :mod:`biaskit.studies.grid` (its public front, which re-exports the public names here):
:func:`summary_table`, :func:`styled_table`, :func:`latex_table`, :func:`plot_results`,
:func:`failure_summary`, :func:`config_overview`, :func:`captured_log` and :func:`write_outputs`
(the CSV, LaTeX, plots and resolved configuration of a run).
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biaskit.core.io import atomic_path, atomic_write, atomic_write_text
from biaskit.core.registry import REGISTRY
from biaskit.studies.grid_config import DatasetSpec, ExperimentConfig, ModelSpec, load_config

# the grid's one logger: every line of a batch run's log names ``biaskit.studies.grid``,
# whichever part wrote it
logger = logging.getLogger("biaskit.studies.grid")


# =============================================================================================
# reporting
# =============================================================================================
#: the metrics whose table cell is their effect size d (the others show their statistic when they give no d)
_WITH_EFFECT_SIZE = ("weat", "seat", "lpbs")


def _test_label(df: pd.DataFrame) -> pd.Series:
    lab = df["dataset"].astype(str) + " | " + df["metric"].str.upper() + " | " + df["method"].astype(str)
    bt = df["bias_type"].fillna("").astype(str)
    return lab.where(bt == "", lab + " | " + bt)


def summary_table(
    results: pd.DataFrame, *, alpha: float = 0.05, digits: int = 2
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Wide table (tests x models) of formatted cells, and a same-shaped boolean significance mask.

    A cell reads ``"d (p)"`` for WEAT/SEAT/LPBS (``d`` = effect size, or the statistic of a metric
    without one), ``"B% (p)"`` for a metric with a score (CrowS-Pairs and its PLL readings: ``B`` =
    B_CrowS in percent), ``"error"`` for a failed cell and ``""`` where the model was
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
        if np.isfinite(r["score"]):
            return f"{r['score']:.1f}%{ptxt}"
        v = (
            r["effect_size"]
            if r["metric"] in _WITH_EFFECT_SIZE or np.isfinite(r["effect_size"])
            else r["statistic"]
        )
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
    """A :class:`pandas.io.formats.style.Styler` of :func:`summary_table` (significant cells bold).

    Its HTML escapes every cell and every test and model name (``escape="html"``): a model folder
    named ``<img src=x onerror=...>`` is shown as those characters.
    """
    wide, sig = summary_table(results, alpha=alpha, digits=digits)
    css = sig.map(lambda s: "font-weight: bold" if s else "")
    return (
        wide.style.apply(lambda _: css, axis=None)
        .format(escape="html")
        .format_index(escape="html", axis=0)
        .format_index(escape="html", axis=1)
    )


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
        f"Bias tests: effect size $d$ (WEAT, SEAT, LPBS) or $B_{{CrowS}}$ (\\%), p-value in brackets; "
        f"bold: $p < {alpha}$."
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


#: what each pooling method of an encoder means, for the legend of :func:`plot_results`
#: ("-": LPBS, which pools nothing)
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
    eff = ok[ok["score"].isna()]  # CrowS-Pairs and its readings give a score, drawn below
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
    cr = ok[(ok["bias_type"] != "all") & ok["score"].notna()]
    if not cr.empty:  # one row per data set (and reading) and bias type, one bar per model that ran on it
        reading = np.where(cr["metric"] == "crows", "", " | " + cr["metric"].astype(str))
        cr = cr.assign(test=cr["dataset"] + reading + " | " + cr["bias_type"]).drop_duplicates(
            ["test", "model"]
        )
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
    and restored after the block, and :func:`~biaskit.studies.grid.run_experiments` adds no console handler,
    so a batch run's per-cell lines reach only its log *file*.  Use the list to count the lines or
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


def write_outputs(df: pd.DataFrame, cfg: ExperimentConfig, out: Path) -> dict[str, Any]:
    """Write the CSV, the LaTeX table, the resolved configuration and the plots of a run into ``out``;
    return their paths (and the log's, which :func:`biaskit.studies.grid.run_experiments` writes)."""
    import matplotlib.pyplot as plt
    import yaml

    alpha = float(cfg.option("alpha"))
    paths: dict[str, Any] = {"log": out / f"{cfg.name}.log"}
    # every file whole or not at all, under a unique temporary name
    # (a full disk raises DiskFullError naming it)
    csv = out / f"{cfg.name}.csv"
    with atomic_write(csv, "w", newline="") as fh:
        df.to_csv(fh, index=False)
    paths["csv"] = csv
    tex = out / f"{cfg.name}.tex"
    atomic_write_text(tex, latex_table(df, alpha=alpha, label=f"tab:{cfg.name}"))
    paths["tex"] = tex
    conf = out / f"{cfg.name}_config.yaml"
    atomic_write_text(conf, yaml.safe_dump(cfg.to_dict(), sort_keys=False, allow_unicode=True))
    paths["config"] = conf
    paths["plots"] = []
    for key, fig in plot_results(df, alpha=alpha, title=cfg.name).items():
        p = out / f"{cfg.name}_{key}.png"
        with atomic_path(p) as tmp:
            fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
        plt.close(fig)
        paths["plots"].append(p)
    logger.info("outputs written to %s", out)
    return paths
