"""Pages and fragments that the documentation generates at build time, never typed by hand.

Everything here is written into ``docs/_generated/`` (not committed) when the build starts:

* ``api/``: one page per public module of biaskit (autodoc + an autosummary table of its names),
  and ``api/index.rst`` grouping them by layer;
* ``fragments/registry.md``: the metric registry (``biaskit.metrics.registered_metrics``), each
  metric cross-referenced to its entry point in the API reference;
* ``fragments/models.md``: the bundled models from their ``data/models/*/training.json``;
* ``fragments/studies.md`` and ``studies/``: one page per numbered notebook.  When the results folder
  (``BIASKIT_DOCS_RESULTS``, default ``results/``) holds an executed copy (``make reproduce``), it
  is rendered with its outputs (myst-nb, never executed here) and the table shows its JSON's finding
  and headline numbers; otherwise, when the gallery of a recorded run (``docs/records/gallery/``,
  ``scripts/record_gallery.py``; ``BIASKIT_DOCS_GALLERY`` for another folder) has the notebook, the
  page gives its introduction, that run's finding, headline numbers and figures, and says which run
  they come from; otherwise the page gives the notebook's introduction and how to produce it;
* ``fragments/dist_sizes.md``: the sizes of the built distributions from ``dist/BUILD.json``
  (``make dist``), and the size of the bundled folders measured now;
* ``fragments/record_<name>.md``: the tables of ``docs/records/<name>.json``, records of runs
  (each entry with its command, date, machine and source);
* ``benchmarks.md``: the Benchmarks page, rendered by ``benchmarks.report`` from the newest record of
  ``benchmarks/records/`` (``python -m benchmarks --only peers --record ...``) and the newest GPU record.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import re
import shutil
import unicodedata
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent.parent
ROOT = DOCS.parent
OUT = DOCS / "_generated"

#: layer folders in the order of docs/DEVELOPING.md, with a one-line description
LAYERS = {
    "biaskit.core": "results, statistical tests, paths, readers, the permutation engine, the metric registry",
    "biaskit.data": "corpora, word lists, datasets, counterfactual text, downloads",
    "biaskit.lm": "masked and causal language models: loading, scoring, the bundled models",
    "biaskit.embeddings": "word vectors, sentence encoders, a language model's representations",
    "biaskit.metrics": "one module per family of metrics, each registered once",
    "biaskit.debiasing": "hard debiasing, INLP, SentenceDebias, GLPP, CDS, dropout, and their costs",
    "biaskit.training": "pre-training the bundled models, fine-tuning, the recipes",
    "biaskit.studies": "batch grids, Dask, calibration and metric trust on planted controls, debiasing verdicts, replays, records",
    "biaskit.report": "what a notebook writes and shows, the static report, the explorers",
}
SKIP_MODULES = ("biaskit._testing", "biaskit.__main__")


# ----------------------------------------------------------------------------- helpers
def _write(path: Path, text: str) -> None:
    """Write only when changed, so that Sphinx's incremental build re-reads only what changed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _number(value: Any, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != 0 and abs(value) < 10 ** (-digits):
            return f"< {10 ** (-digits):g}" if value > 0 else f"{value:.1e}"
        return f"{value:,.{digits}g}" if abs(value) >= 1000 else f"{value:.{digits}g}"
    return str(value)


# ----------------------------------------------------------------------------- API reference
def public_modules() -> list[str]:
    import biaskit

    names = ["biaskit"]
    for info in pkgutil.walk_packages(biaskit.__path__, "biaskit."):
        leaf = info.name.rsplit(".", 1)[-1]
        if info.name.startswith(SKIP_MODULES) or leaf.startswith("_"):
            continue
        names.append(info.name)
    return sorted(names)


def _attr_docs(name: str) -> set[str]:
    """Module-level names with a ``#:`` doc comment or a docstring after them (Sphinx's analyser)."""
    from sphinx.pycode import ModuleAnalyzer

    try:
        return {attr for (_, attr) in ModuleAnalyzer.for_module(name).find_attr_docs()}
    except Exception:
        return set()


def _assigned_names(mod: Any) -> set[str]:
    """Names assigned at the top level of a module's source (its own constants, not imported ones)."""
    import ast

    try:
        tree = ast.parse(inspect.getsource(mod))
    except (OSError, TypeError, SyntaxError):
        return set()
    names = set()
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def module_members(name: str) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """The module's public API: (classes and functions defined in it, documented constants, names
    re-exported from another biaskit module as ``(name, home module)``).  Public = listed in
    ``__all__``, or defined here with a name that does not start with ``_``."""
    mod = importlib.import_module(name)
    exported = list(getattr(mod, "__all__", []))
    documented = _attr_docs(name)
    own, data, reexported = [], [], []
    names = exported + [n for n in vars(mod) if not n.startswith("_") and n not in exported]
    for attr in names:
        obj = getattr(mod, attr, None)
        if obj is None or inspect.ismodule(obj):
            continue
        if inspect.isclass(obj) or inspect.isfunction(inspect.unwrap(obj)):
            home = getattr(obj, "__module__", None)
            if home == name:
                own.append(attr)
            elif attr in exported and home and home.startswith("biaskit"):
                reexported.append((attr, home))
        elif attr in documented or (attr.isupper() and attr in _assigned_names(mod)):
            data.append(attr)
    return own, data, reexported


def write_api() -> list[str]:
    modules = public_modules()
    folder = OUT / "api"
    written = []
    for name in modules:
        own, data, reexported = module_members(name)
        documented = _attr_docs(name)
        title = f"``{name}``"
        lines = [title, "=" * len(title), "", f".. automodule:: {name}", ""]
        summarised = own + [d for d in data if d in documented]
        if summarised:
            lines += [".. rubric:: Summary", "", ".. autosummary::", ""]
            lines += [f"   {n}" for n in summarised] + [""]
        if reexported:
            lines += [".. rubric:: Also importable from here", ""]
            lines += [
                f"* :py:obj:`{attr} <{home}.{attr}>` (defined in :py:mod:`{home}`)"
                for attr, home in reexported
            ]
            lines += [""]
        if own or data:
            lines += [".. rubric:: Reference", ""]
            mod = importlib.import_module(name)
            for n in own:
                obj = getattr(mod, n)
                if inspect.isclass(obj):
                    lines += [
                        f".. autoclass:: {n}",
                        "   :members:",
                        "   :undoc-members:",
                        "   :show-inheritance:",
                        "",
                    ]
                else:
                    lines += [f".. autofunction:: {n}", ""]
            for n in data:
                if n in documented:
                    lines += [f".. autodata:: {n}", "   :no-value:", ""]
                else:  # a constant without a doc comment: named, typed, no borrowed docstring of its type
                    lines += [f".. py:data:: {n}", f"   :type: {type(getattr(mod, n)).__name__}", ""]
        _write(folder / f"{name}.rst", "\n".join(lines))
        written.append(name)
    index = ["API reference", "=============", "",
             "Every public module of biaskit, generated from the docstrings (formulas, citations and the seed "
             "sections they implement).  The layers are those of :doc:`/DEVELOPING`; a module imports only from its "
             "own layer and those below.", ""]  # fmt: skip
    groups: dict[str, list[str]] = {"biaskit": ["biaskit"]}
    for layer in LAYERS:
        groups[layer] = [m for m in written if m == layer or m.startswith(layer + ".")]
    for layer, mods in groups.items():
        if not mods:
            continue
        head = f"{layer}" + (f": {LAYERS[layer]}" if layer in LAYERS else ": the package")
        index += [head, "-" * len(head), "", ".. toctree::", "   :maxdepth: 1", ""]
        index += [f"   {m}" for m in mods] + [""]
    _write(folder / "index.rst", "\n".join(index))
    return written


# ----------------------------------------------------------------------------- registry
def registry_markdown(metrics: list | None = None) -> str:
    """The metric registry as Markdown tables, one per family (``registered_metrics()`` by default): the
    metrics of biaskit link to their API page; a plug-in package's metric names its package instead."""
    from biaskit.core.registry import FAMILIES
    from biaskit.metrics import registered_metrics

    metrics = registered_metrics() if metrics is None else metrics
    plugins = sorted({m.package for m in metrics if m.package != "biaskit"})
    parts = [
        f"{len(metrics)} metrics are registered (`python -m biaskit metrics` prints the same registry). "
        "Each name links to the function or class that computes it"
        + (f"; metrics of plug-in packages ({', '.join(plugins)}) name their package" if plugins else "")
        + ". The grid column gives the dataset kinds a metric reads in a batch grid, with its own options, or "
        "why it cannot run in a grid cell.\n"
    ]
    for family in FAMILIES:
        rows = []
        for m in metrics:
            if m.family != family:
                continue
            row = m.as_row()
            module, _, func = row["entry_point"].partition(":")
            if m.package != "biaskit":
                ref = f"{row['label']} (package `{m.package}`)"
            else:
                ref = f"{{py:obj}}`{row['label']} <{module}.{func}>`" if func else row["label"]
            grid = row["grid"] + (f" ({row['options']})" if row["options"] else "")
            if not row["grid"] and row["no_grid"]:
                grid = f"none: it reads {row['no_grid']}"
            rows.append([f"`{row['name']}`", ref, row["inputs"], row["models"], row["test"], grid,
                         row["citation"], row["section"]])  # fmt: skip
        if rows:
            parts.append(f"\n### {family.capitalize()}\n\n")
            parts.append(
                _table(["name", "metric", "inputs", "models", "test", "grid", "citation", "section"], rows)
            )
    return "".join(parts)


def write_registry() -> None:
    _write(OUT / "fragments" / "registry.md", registry_markdown())


# ----------------------------------------------------------------------------- bundled models
def write_models() -> None:
    rows = []
    for path in sorted((ROOT / "data" / "models").glob("*/training.json")):
        rec = json.loads(path.read_text(encoding="utf-8"))
        pppl = rec.get("bundled_held_out_pppl")
        ppl = rec.get("bundled_held_out_ppl")
        held = f"PPPL {pppl:.1f}" if pppl else (f"PPL {ppl:.1f}" if ppl else "—")
        minutes = rec.get("train_seconds")
        rows.append(
            [
                f"`{rec.get('name', path.parent.name)}`",
                _number(rec.get("n_parameters")),
                _number(rec.get("steps")),
                _number(rec.get("n_train_sentences")),
                held,
                f"{minutes / 60:.1f}" if isinstance(minutes, int | float) else "—",
                rec.get("initialised_from") or "scratch",
                rec.get("corpus", ""),
            ]
        )
    text = (
        "Generated from each model's `training.json` (written by `python -m biaskit train-models`). "
        "PPPL: held-out pseudo-perplexity of a masked model; PPL: held-out perplexity of a causal one "
        "(the two are not comparable).\n\n"
    )
    text += _table(
        [
            "model",
            "parameters",
            "steps",
            "training sentences",
            "held-out",
            "training minutes",
            "continued from",
            "text",
        ],
        rows,
    )
    _write(OUT / "fragments" / "models.md", text)


# ----------------------------------------------------------------------------- studies
def _notebook_intro(path: Path) -> tuple[str, str]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    first = next((c for c in nb["cells"] if c["cell_type"] == "markdown"), None)
    text = "".join(first["source"]) if first else path.stem
    title_line, _, rest = text.partition("\n")
    title = title_line.lstrip("# ").strip() or path.stem
    return title, rest.strip()


def results_folder() -> Path:
    return Path(os.environ.get("BIASKIT_DOCS_RESULTS", ROOT / "results")).expanduser().resolve()


def gallery_folder() -> Path:
    return Path(os.environ.get("BIASKIT_DOCS_GALLERY", DOCS / "records" / "gallery")).expanduser().resolve()


#: a figure's file name in a gallery record: a plain PNG name, never a path
_GALLERY_FILE = re.compile(r"^[\w.-]+\.png$")


def _md_text(value: Any) -> str:
    """Text from a record as Markdown that shows exactly those characters (no HTML, no markup)."""
    from biaskit.core.html import escape_markdown

    return escape_markdown(" ".join(str(value).split()))


def _md_cell(value: Any) -> str:
    """:func:`_md_text` for a :func:`_table` cell (which escapes ``|`` itself)."""
    return _md_text(value).replace("\\|", "|")


def _md_code(value: Any) -> str:
    from biaskit.core.html import markdown_code

    return markdown_code(value)


def _gallery_run(gallery: Path) -> dict[str, Any]:
    manifest = gallery / "gallery.json"
    try:
        return json.loads(manifest.read_text(encoding="utf-8")) if manifest.is_file() else {}
    except ValueError:
        return {}


def gallery_page(
    title: str, intro: str, nb: Path, record: dict[str, Any], run: dict[str, Any], gallery: Path, folder: Path
) -> str:
    """A study's page from the gallery of a recorded run: the introduction, a note naming the run, the
    finding, the headline numbers and the figures (copied beside the page, under ``gallery/<notebook>/``)."""
    commit = str(run.get("commit") or "unknown")[:12]
    date = str(record.get("created") or run.get("date") or "an unknown date")[:10]
    page = [f"# {title}", "", "```{note}", f"These figures and numbers are from the recorded run of commit "
            f"{_md_code(commit)} on {_md_text(date)} (`docs/records/gallery`); run `make reproduce` to see your "
            f"own (then `make docs`: this page shows the executed `{nb.name}` with all its outputs).", "```", "",
            intro, ""]  # fmt: skip
    if record.get("finding"):
        page += ["## Finding", "", _md_text(record["finding"]), ""]
    headline = record.get("headline") or {}
    if isinstance(headline, dict) and headline:
        page += [
            "## Headline numbers",
            "",
            _table(["number", "value"], [[_md_cell(k), _md_cell(_number(v))] for k, v in headline.items()]),
        ]
    figures = []
    for fig in record.get("figures") or []:
        name = str(fig.get("file", "")) if isinstance(fig, dict) else ""
        source = gallery / name
        if not _GALLERY_FILE.match(name) or not source.is_file():
            continue
        target = folder / "gallery" / nb.stem / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        alt = " ".join(str(fig.get("alt") or name).split())
        # a double-quoted option value (JSON string syntax): any character of the alt text stays text
        figures += [
            "```{image} " + f"gallery/{nb.stem}/{name}",
            f":alt: {json.dumps(alt, ensure_ascii=False)}",
            ":width: 100%",
            "```",
            "",
        ]
    if figures:
        page += ["## Figures", "", *figures]
    return "\n".join(page)


def write_studies() -> dict[str, int]:
    folder = OUT / "studies"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    results = results_folder()
    gallery = gallery_folder()
    run = _gallery_run(gallery)
    rows, counts = [], {"rendered": 0, "recorded": 0, "not run": 0}
    for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        title, intro = _notebook_intro(nb)
        executed = results / nb.name
        data_path = results / f"{nb.stem}.json"
        data = json.loads(data_path.read_text(encoding="utf-8")) if data_path.is_file() else None
        recorded = gallery / f"{nb.stem}.json"
        finding, headline = "", ""  # the table's cells: from the run's JSON, else from the gallery
        if executed.is_file():
            shutil.copyfile(executed, folder / nb.name)
            counts["rendered"] += 1
            state = "executed copy"
        elif recorded.is_file():
            record = json.loads(recorded.read_text(encoding="utf-8"))
            _write(folder / f"{nb.stem}.md", gallery_page(title, intro, nb, record, run, gallery, folder))
            counts["recorded"] += 1
            state = "recorded run"
            if not data:  # the table shows the recorded finding and numbers, escaped
                finding = _md_cell(record.get("finding") or "")
                headline = "; ".join(
                    f"{_md_cell(k)}: {_md_cell(_number(v))}"
                    for k, v in (record.get("headline") or {}).items()
                )
        else:
            page = [f"# {title}", "", "```{note}", f"This results folder has no executed `{nb.name}`. Run "
                    f"`make reproduce` (or `python -m biaskit notebook {nb.stem} results/{nb.name}`), then "
                    "`make docs`, to see it here with its outputs; `make report` builds the same pages as a "
                    "static site.", "```", "", intro, ""]  # fmt: skip
            _write(folder / f"{nb.stem}.md", "\n".join(page))
            counts["not run"] += 1
            state = "not run"
        if data:
            finding = data.get("finding", "")
            headline = "; ".join(f"{k}: {_number(v)}" for k, v in (data.get("headline") or {}).items())
        rows.append(
            [
                f"{{doc}}`{nb.stem} <../_generated/studies/{nb.stem}>`",
                title,
                finding or "—",
                headline or "—",
                state,
            ]
        )
    where = results.relative_to(ROOT) if results.is_relative_to(ROOT) else results.name
    text = (
        f"Generated from the results folder `{where}/` ({counts['rendered']} executed notebooks, "
        f"{counts['not run']} not run): the finding and headline numbers are those of each notebook's JSON."
    )
    if counts["recorded"]:
        text += (
            f" {counts['recorded']} notebooks not in it show the gallery of the recorded run of commit "
            f"{_md_code(str(run.get('commit') or 'unknown')[:12])} on {_md_text(run.get('date') or 'an unknown date')} "
            "(`docs/records/gallery`, page: recorded run); run `make reproduce` to see your own."
        )
    text += "\n\n"
    text += _table(["notebook", "study", "finding", "headline numbers", "page"], rows)
    _write(OUT / "fragments" / "studies.md", text)
    return counts


# ----------------------------------------------------------------------------- distributions
def _folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def write_dist_sizes() -> None:
    rows = [
        [f"`{name}/`", f"{_folder_bytes(ROOT / name) / 1e6:.1f} MB"]
        for name in ("biaskit", "data", "wordlists", "notebooks")
    ]
    text = "Measured when these pages were built:\n\n" + _table(["folder", "size on disk"], rows) + "\n"
    build = ROOT / "dist" / "BUILD.json"
    if build.is_file():
        rec = json.loads(build.read_text(encoding="utf-8"))
        rows = [
            [f"`{f['file']}`", f["kind"], f"{f['bytes'] / 1e6:.2f} MB", f"{f['seconds']:.1f} s"]
            for f in rec["files"]
        ]
        text += (
            f"The distributions of version {rec['version']} built by `make dist` (from `dist/BUILD.json`; "
            f"{rec.get('provenance_checked', '?')} bundled files checked against their `PROVENANCE.md`):\n\n"
        )
        text += _table(["file", "kind", "size", "build time"], rows)
    else:
        text += "No `dist/BUILD.json` here: run `make dist`, then `make docs`, to list the built files and their sizes.\n"
    _write(OUT / "fragments" / "dist_sizes.md", text)


# ----------------------------------------------------------------------------- records of runs
def write_records() -> list[str]:
    """``docs/records/<name>.json`` = ``{"title", "note", "columns": [...], "entries": [{...}]}``."""
    written = []
    for path in sorted((DOCS / "records").glob("*.json")):
        rec = json.loads(path.read_text(encoding="utf-8"))
        cols = rec["columns"]
        rows = [[e.get(c, "") for c in cols] for e in rec["entries"]]
        text = (rec.get("note", "") + "\n\n" if rec.get("note") else "") + _table(cols, rows)
        text += f"\n*Record: `docs/records/{path.name}`.*\n"
        _write(OUT / "fragments" / f"record_{path.stem}.md", text)
        written.append(path.stem)
    return written


# ----------------------------------------------------------------------------- Sphinx hooks
def generate(app: Any = None) -> dict[str, Any]:
    summary = {
        "api": len(write_api()),
        "studies": write_studies(),
        "records": write_records(),
    }
    write_registry()
    write_models()
    write_metric_trust()
    write_long_runs()
    write_dist_sizes()
    write_reference_toc(write_benchmarks())
    return summary


#: the kept records of runs too long for a notebook: folder of ``records/``, the script that writes it, the
#: notebook section that shows it
LONG_RUNS = (
    ("fig13", "scripts/record_fig13.py", "notebook 15, section 10"),
    ("cds_full", "scripts/record_cds.py", "notebook 15, section 3b"),
    ("mt_gender", "scripts/record_mt_gender.py", "notebook 15, section 9"),
    ("domain_model", "scripts/record_domain_model.py", "notebook 12, Part D"),
    ("xlnet_tables", "scripts/record_xlnet_tables.py", "notebook 13, section 6c″"),
)


def write_long_runs() -> None:
    """``_generated/fragments/long_runs.md``: one row per kept record of ``records/`` (:data:`LONG_RUNS`), with
    what it holds, when and where it ran, its wall time and commit, read from its ``record.json``."""
    rows = []
    for folder, script, shown in LONG_RUNS:
        path = ROOT / "records" / folder / "record.json"
        if not path.is_file():
            rows.append([f"`records/{folder}/`", "(not recorded yet)", "", "", "", f"`{script}`", shown])
            continue
        meta = json.loads(path.read_text(encoding="utf-8"))
        machine = meta.get("machine", {})
        rows.append(
            [
                f"`records/{folder}/`",
                _md_cell(meta.get("what", "")),
                _md_cell(str(meta.get("finished", ""))[:10]),
                _md_cell(f"{machine.get('cpu', '')} ({machine.get('cores', '')} cores)"),
                _md_cell(f"{float(meta.get('wall_seconds', 0)) / 60:,.1f} min"),
                f"`{script}` at {str(meta.get('versions', {}).get('git_commit', ''))[:10]}",
                shown,
            ]
        )
    _write(
        OUT / "fragments" / "long_runs.md",
        _table(["record", "what", "finished", "machine", "wall time", "written by", "shown in"], rows),
    )


def write_metric_trust() -> None:
    """``_generated/fragments/metric_trust.md``: per kind of planted control in the metric-trust record
    (``docs/records/metric_trust``), the findings and the ranked table of
    :mod:`biaskit.studies.metric_trust`, computed from the record at build time, as notebook 18 computes
    them (the same statistics; the bootstrap only sets the slopes' intervals, which the table leaves out)."""
    from biaskit.studies import metric_trust as mt

    out = OUT / "fragments" / "metric_trust.md"
    rec = mt.load_record(None)
    if rec is None:
        _write(
            out, "The repository holds no metric-trust record (`python -m biaskit trust-study` makes one).\n"
        )
        return
    rows = rec.rows()
    lines: list[str] = []
    for kind in [k for k in ("word2vec", "masked", "causal") if k in set(rows["kind"])]:
        part = rows[rows["kind"] == kind].reset_index(drop=True)
        st = mt.trust_statistics(part, alpha=0.05)
        findings = mt.trust_findings(st)
        done = [m for m in rec.models if m["kind"] == kind]
        lines += [f"### {kind} controls", ""]
        lines += [" ".join(_md_text(f) for f in findings), ""]
        ranked = mt.ranked_table(st)
        lines.append(
            _table(
                list(ranked.columns), [[_md_cell(v) for v in row] for row in ranked.itertuples(index=False)]
            )
        )
        lines.append(
            f"Computed when these pages were built from `docs/records/metric_trust/{kind}.json` "
            f"({len(done)} models).\n"
        )
    _write(out, "\n".join(lines))


def write_benchmarks() -> bool:
    """``_generated/benchmarks.md`` from the newest peer record of ``benchmarks/records/`` (and GPU record);
    False when there is none (a checkout without records: the page is left out of the index)."""
    import sys

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from benchmarks import report

    text = report.page_text()
    if text is None:
        return False
    _write(OUT / "benchmarks.md", text)
    return True


def write_reference_toc(with_benchmarks: bool) -> None:
    """The Reference toctree of the index; ``benchmarks`` joins it when a benchmark record exists."""
    pages = ["api/index", "metrics", "validation", "measurements"]
    if with_benchmarks:
        pages.insert(3, "benchmarks")
    _write(
        OUT / "fragments" / "toc_reference.md",
        "```{toctree}\n:maxdepth: 1\n:caption: Reference\n\n"
        + "\n".join(f"_generated/{p}" if p.startswith(("api", "benchmarks")) else p for p in pages)
        + "\n```\n",
    )


def _on_builder_inited(app: Any) -> None:
    summary = generate(app)
    from sphinx.util import logging

    logging.getLogger(__name__).info(f"biaskit_docs: generated {summary}")


def canonical_name(target: str) -> str | None:
    """``biaskit.lm.MaskedLM`` (a name re-exported by a package) -> ``biaskit.lm.base.MaskedLM``, the
    name under which the API reference documents it; None when ``target`` is not an importable object."""
    module, _, attr = target.rpartition(".")
    rest: list[str] = [attr]
    while module:
        try:
            obj: Any = importlib.import_module(module)
        except ImportError:
            module, _, head = module.rpartition(".")
            rest.insert(0, head)
            continue
        for part in rest:
            obj = getattr(obj, part, None)
            if obj is None:
                return None
        home = getattr(obj, "__module__", None)
        qual = getattr(obj, "__qualname__", None)
        if home and qual and f"{home}.{qual}" != target:
            return f"{home}.{qual}"
        return None
    return None


def _typing_construct(target: str, contnode: Any) -> Any:
    """A TypeVar or a type alias of biaskit named in a signature: shown as text (it has no page)."""
    import typing

    module, _, attr = target.rpartition(".")
    try:
        obj = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError):
        return None
    if (
        isinstance(obj, typing.TypeVar)
        or typing.get_origin(obj) is not None
        or type(obj).__module__ == "typing"
    ):
        return contnode
    return None


def _on_missing_reference(app: Any, env: Any, node: Any, contnode: Any) -> Any:
    """Resolve a reference to a re-exported name (``biaskit.lm.get_lm``) to where it is documented."""
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "")
    if not target.startswith("biaskit."):
        return None
    canonical = canonical_name(target)
    if canonical is None:
        return _typing_construct(target, contnode)
    domain = env.get_domain("py")
    node = node.deepcopy()
    node["reftarget"] = canonical
    return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], canonical, node, contnode)


# ----------------------------------------------------------------------------- docstrings as written
#: inline code, roles and literals, left untouched: ``x``, :math:`x`, `x`
_CODE = re.compile(r"(?::[\w:]+:)?`+[^`]*`+_?")
_BORDER = re.compile(r"^(\s*)(=+)(\s+=+)+\s*$")


def _plain_text(segment: str) -> str:
    """Plain-text notation that reStructuredText would misread: ``|X|`` (a set's size, not a
    substitution) and ``word_`` (a trailing underscore, not a link target)."""
    segment = segment.replace("|", "\\|")
    return re.sub(r"(?<=\w)_(?=[\s.,;:)]|$)", "\\_", segment)


def _width(text: str) -> int:
    """Display width as docutils counts it: combining characters (the macron of t̄) take no column."""
    return sum(0 if unicodedata.combining(ch) else 1 for ch in text)


def _char_index(line: str, column: int) -> int:
    """Index of the character of ``line`` that starts display column ``column``."""
    col = 0
    for k, ch in enumerate(line):
        if col >= column and not unicodedata.combining(ch):
            return k
        col += 0 if unicodedata.combining(ch) else 1
    return len(line)


def _split_row(line: str, starts: list[int]) -> list[str]:
    """Cells of a simple-table row at the border's column starts (display columns); a cell that
    runs past its column ends at the next space instead."""
    pieces = re.split(r"\s{2,}", line.strip())
    if len(pieces) == len(starts) and line[: _char_index(line, starts[0]) + 1].strip():
        return pieces
    cells, begin = [], _char_index(line, starts[0])
    for start in starts[1:]:
        cut = max(_char_index(line, start), begin)
        if 0 < cut < len(line) and line[cut - 1] != " ":
            nxt = line.find(" ", cut)
            cut = nxt if nxt != -1 else len(line)
        cells.append(line[begin:cut].strip())
        begin = cut
    cells.append(line[begin:].strip())
    return cells


def _relayout_table(block: list[str]) -> list[str]:
    """A simple table whose cells outgrew their columns, laid out again with wider columns."""
    indent = _BORDER.match(block[0]).group(1)
    starts = [m.start() for m in re.finditer(r"=+", block[0])]
    rows = [None if _BORDER.match(line) else _split_row(line, starts) for line in block]
    widths = [max(_width(r[k]) for r in rows if r is not None) for k in range(len(starts))]
    border = indent + "  ".join("=" * w for w in widths)
    out = []
    for r in rows:
        if r is None:
            out.append(border)
        else:
            out.append(
                (
                    indent + "  ".join(c + " " * (w - _width(c)) for c, w in zip(r, widths, strict=True))
                ).rstrip()
            )
    return out


def _table_end(lines: list[str], i: int) -> int:
    """Index after the simple table that starts with the border at ``i``."""
    j = i + 1
    while j < len(lines):
        if _BORDER.match(lines[j]) and (j + 1 == len(lines) or not lines[j + 1].strip()):
            return j + 1
        j += 1
    return len(lines)


def fix_docstring_markup(lines: list[str]) -> list[str]:
    """Read plain-text notation in docstrings as the authors meant it (see :func:`_plain_text`) and
    re-lay simple tables; ``.. math::`` blocks and code are left as they are."""
    out: list[str] = []
    in_math, math_indent, i = False, 0, 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if in_math and stripped and indent <= math_indent:
            in_math = False
        if stripped.startswith(".. math::") or stripped.startswith(".. code") or stripped.endswith("::"):
            in_math, math_indent = True, indent
            out.append(line)
            i += 1
            continue
        if not in_math and _BORDER.match(line):
            j = _table_end(lines, i)
            out.extend(_relayout_table(lines[i:j]))
            i = j
            continue
        if in_math or stripped.startswith(("| ", "+-", ">>>")):
            out.append(line)
        else:
            pieces, last = [], 0
            for m in _CODE.finditer(line):
                pieces.append(_plain_text(line[last : m.start()]))
                pieces.append(m.group(0))
                last = m.end()
            pieces.append(_plain_text(line[last:]))
            out.append("".join(pieces))
        i += 1
    return out


def _on_docstring(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    if name.startswith("biaskit"):
        lines[:] = fix_docstring_markup(lines)


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", _on_builder_inited)
    app.connect("autodoc-process-docstring", _on_docstring, priority=400)
    app.connect("missing-reference", _on_missing_reference)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
