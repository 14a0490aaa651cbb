"""Build a static, offline HTML report of every executed study notebook.

``make reproduce`` leaves, for every study ``NN_name``, the executed notebook
``results/NN_name.ipynb``, its headline numbers ``results/NN_name.json``
(written by :func:`biaskit.reporting.save_results`) and its figures
``results/NN_name_*.png`` (:func:`biaskit.reporting.save_figure`).  This module
turns them into a small web site a reader without programming experience can
open from disk::

    python -m biaskit.report build --results results --out results/site

* one page per study (``NN_name.html``), converted with nbconvert's
  :class:`~nbconvert.exporters.HTMLExporter` (``lab`` template): prose, tables
  and figures are kept, code cells are folded under a "Show the code" switch,
  figures are embedded in the page (``data:`` URIs), formulas are turned into
  MathML (rendered by the browser itself, no MathJax) when ``latex2mathml`` is
  installed;
* ``index.html`` listing every study with its title (the first markdown
  heading), its source (notebook metadata ``biaskit: {source: ...}``, else the
  first markdown cell), the parameters it ran with, its headline numbers
  flattened into a table (rounded for display, the exact JSON value kept in a
  ``data-value`` attribute) and thumbnails of its figures.

No page loads anything from the network: the CDN scripts of the nbconvert
template (require.js, MathJax, mermaid, the widget renderer) are removed and a
Content-Security-Policy forbids any remote resource, so the site works offline
and a stray remote reference shows up as a browser console error (which
``tests/test_report.py`` checks for in headless Chromium).
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import json
import logging
import math
import re
import shutil
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

__all__ = [
    "CSP",
    "HeadlineRow",
    "Study",
    "add_build_arguments",
    "build_site",
    "discover_studies",
    "flatten_results",
    "format_value",
    "main",
    "notebook_source",
    "notebook_title",
    "render_index",
    "render_study_page",
    "run_build",
]

#: Content-Security-Policy of every generated page: nothing may be fetched from
#: anywhere (images and fonts only as ``data:`` URIs, inline styles/scripts only).
CSP = (
    "default-src 'none'; img-src data:; font-src data:; style-src 'unsafe-inline'; "
    "script-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
)

#: At most this many rows per list in the headline table (longer lists are summarised).
MAX_LIST_ITEMS = 20
#: At most this many rows per study in the headline table.
MAX_ROWS = 300
#: Width in pixels of the figure thumbnails on the index page.
THUMB_WIDTH = 220

_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
_TQDM_TEXT = re.compile(r"^\s*\d{1,3}%\|")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)
_SOURCE_LINE = re.compile(
    r"^\s*[*_]*\s*sources?\s*[*_]*\s*:\s*[*_]*\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE
)
_STUDY_STEM = re.compile(r"^\d+_")
_SEED_MENTION = re.compile(r"\bseeds?\s+0\d\d\b", re.IGNORECASE)

# ----------------------------------------------------------------------------- data model


@dataclass(frozen=True)
class HeadlineRow:
    """One row of a study's headline table: a path into the JSON and the value found there."""

    path: tuple[str, ...]
    value: Any
    note: str | None = None  # set for summary rows ("... 480 more values"), which carry no value

    @property
    def label(self) -> str:
        """Readable label: the JSON keys joined with a chevron, underscores shown as spaces."""
        return " › ".join(p.replace("_", " ") for p in self.path) if self.path else "value"


@dataclass(frozen=True)
class Study:
    """Everything the index shows about one study ``NN_name``."""

    stem: str
    title: str
    source: str | None = None
    notebook: Path | None = None
    results_file: Path | None = None
    results: dict[str, Any] | None = None
    figures: tuple[Path, ...] = ()
    parameters: dict[str, Any] = field(default_factory=dict)
    has_error: bool = False

    @property
    def page(self) -> str | None:
        """File name of the study page inside the site (``None`` when no executed notebook exists)."""
        return f"{self.stem}.html" if self.notebook is not None else None


# ----------------------------------------------------------------------------- headline numbers


def flatten_results(
    obj: Any,
    path: tuple[str, ...] = (),
    *,
    max_list_items: int = MAX_LIST_ITEMS,
) -> list[HeadlineRow]:
    """Flatten nested dicts / lists from a results JSON into table rows.

    Dict keys become path components; list items become ``[i]`` components.  A
    list longer than ``max_list_items`` shows its first ``max_list_items`` items
    and one summary row (``note``) saying how many more are in the JSON file,
    so the table stays readable and nothing is dropped without saying so.
    Empty dicts and lists appear as one row with the value ``{}`` / ``[]``.
    """
    if isinstance(obj, dict):
        if not obj:
            return [HeadlineRow(path, {})]
        rows: list[HeadlineRow] = []
        for key, value in obj.items():
            rows.extend(flatten_results(value, (*path, str(key)), max_list_items=max_list_items))
        return rows
    if isinstance(obj, list):
        if not obj:
            return [HeadlineRow(path, [])]
        rows = []
        for i, value in enumerate(obj[:max_list_items]):
            rows.extend(flatten_results(value, (*path, f"[{i}]"), max_list_items=max_list_items))
        if len(obj) > max_list_items:
            more = len(obj) - max_list_items
            rows.append(
                HeadlineRow((*path, "…"), None, note=f"{more} more value(s) in this list: see the JSON file")
            )
        return rows
    return [HeadlineRow(path, obj)]


def format_value(value: Any) -> str:
    """Format a JSON value for a reader: numbers rounded, the exact value stays in ``data-value``.

    * ``True`` / ``False`` -> ``yes`` / ``no``; ``None`` -> ``n/a``;
    * integers in full (thousands separated with a thin space when >= 10 000);
    * floats with 4 significant digits (scientific notation below 1e-3, so a
      p-value of 0.00004 reads ``4.0e-05`` and not ``0``), large floats without decimals;
    * strings as they are; empty containers as ``{}`` / ``[]``.
    """
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}".replace(",", "\u2009") if abs(value) >= 10_000 else str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        if value == 0:
            return "0"
        if abs(value) < 1e-3:
            return f"{value:.1e}"
        if abs(value) >= 1e5:
            return f"{value:,.0f}".replace(",", "\u2009")
        return f"{value:.4g}"
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


def _json_exact(value: Any) -> str:
    """The exact JSON text of a value (floats keep every digit: Python's repr round-trips)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=True)


# ----------------------------------------------------------------------------- notebooks


def _strip_inline_markdown(text: str) -> str:
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links / images -> their text
    text = re.sub(r"(\*\*|__|\*|_|`)", "", text)
    return text.strip()


def _markdown_sources(nb: Any) -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == "markdown" and c.source.strip()]


def notebook_title(nb: Any, default: str) -> str:
    """The first markdown heading of the notebook (any level), as plain text; ``default`` if none."""
    for src in _markdown_sources(nb):
        m = _HEADING.search(src)
        if m:
            return _strip_inline_markdown(m.group(2))
    return default


def notebook_source(nb: Any) -> str | None:
    """Where the study comes from (seed / section), for the index.

    Order: notebook metadata ``biaskit.source``; else, in the first markdown
    cell, a ``Source: ...`` line; else its first line mentioning a seed
    ("seed 000 ..."); else its first paragraph that is not a heading
    (shortened to 300 characters).  ``None`` when the notebook has no markdown.
    """
    meta = nb.metadata.get("biaskit", {}) if hasattr(nb, "metadata") else {}
    if isinstance(meta, dict) and meta.get("source"):
        return str(meta["source"]).strip()
    sources = _markdown_sources(nb)
    if not sources:
        return None
    first = sources[0]
    m = _SOURCE_LINE.search(first)
    if m:
        return _strip_inline_markdown(m.group(1))
    for line in first.splitlines():
        if _SEED_MENTION.search(line) and not _HEADING.match(line):
            return _strip_inline_markdown(line)
    for para in re.split(r"\n\s*\n", first):
        if para.strip() and not _HEADING.match(para.strip().splitlines()[0]):
            text = _strip_inline_markdown(" ".join(para.split()))
            return text if len(text) <= 300 else text[:297] + "…"
    return None


def _notebook_parameters(nb: Any) -> dict[str, Any]:
    """The parameters papermill ran the notebook with (``metadata.papermill.parameters``)."""
    pm = nb.metadata.get("papermill", {})
    params = pm.get("parameters", {}) if isinstance(pm, dict) else {}
    return dict(params) if isinstance(params, dict) else {}


def _notebook_has_error(nb: Any) -> bool:
    return any(
        o.get("output_type") == "error"
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
    )


def _read_notebook(path: Path) -> Any:
    import nbformat

    try:
        return nbformat.read(path, as_version=4)
    except Exception as exc:  # nbformat raises several types for a damaged file
        raise ValueError(f"{path} is not a readable Jupyter notebook: {exc}") from exc


# ----------------------------------------------------------------------------- discovery


def _figures_by_stem(results_dir: Path, stems: Sequence[str]) -> dict[str, list[Path]]:
    """Assign every ``results/*.png`` to the study whose ``<stem>_`` is its longest prefix."""
    out: dict[str, list[Path]] = {s: [] for s in stems}
    by_length = sorted(stems, key=len, reverse=True)
    for png in sorted(results_dir.glob("*.png")):
        owner = next((s for s in by_length if png.stem.startswith(s + "_") or png.stem == s), None)
        if owner is None:
            logger.info("figure %s matches no study notebook or JSON; not shown on the index", png.name)
            continue
        out[owner].append(png)
    return out


def discover_studies(results_dir: str | Path) -> list[Study]:
    """Collect every study found in ``results_dir``, in file-name (reading) order.

    A study is any ``NN_name.ipynb`` or ``NN_name.json`` directly in the folder (names that do
    not start with digits and ``_`` are logged and skipped).
    A JSON without a notebook (or the reverse) is listed all the same, with a
    note on the index; a damaged JSON or notebook raises ``ValueError`` naming it.
    """
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise FileNotFoundError(
            f"results folder not found: {results_dir} (run `make reproduce` first, or pass --results)"
        )
    all_stems = {p.stem for p in results_dir.glob("*.ipynb")} | {p.stem for p in results_dir.glob("*.json")}
    stems = sorted(st for st in all_stems if _STUDY_STEM.match(st))
    for st in sorted(all_stems - set(stems)):
        logger.info("%s is not named like a study (NN_name): not listed", st)
    figures = _figures_by_stem(results_dir, stems)
    studies: list[Study] = []
    for stem in stems:
        nb_path = results_dir / f"{stem}.ipynb"
        js_path = results_dir / f"{stem}.json"
        title, source, params, has_error = stem, None, {}, False
        notebook = None
        if nb_path.exists():
            nb = _read_notebook(nb_path)
            notebook = nb_path
            title = notebook_title(nb, stem)
            source = notebook_source(nb)
            params = _notebook_parameters(nb)
            has_error = _notebook_has_error(nb)
        results = None
        results_file = None
        if js_path.exists():
            try:
                results = json.loads(js_path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{js_path} is not valid JSON: {exc}") from exc
            if not isinstance(results, dict):
                raise ValueError(f"{js_path} must hold a JSON object, got {type(results).__name__}")
            results_file = js_path
        studies.append(
            Study(
                stem=stem,
                title=title,
                source=source,
                notebook=notebook,
                results_file=results_file,
                results=results,
                figures=tuple(figures[stem]),
                parameters=params,
                has_error=has_error,
            )
        )
    return studies


def _headline_payload(results: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Split a ``save_results`` payload into (headline numbers, run metadata).

    Files written by :func:`biaskit.reporting.save_results` hold
    ``{"notebook", "created", "python", "results": {...}}``; any other JSON
    object is shown whole.
    """
    if "results" in results and set(results) <= {"notebook", "created", "python", "results"}:
        meta = {k: v for k, v in results.items() if k != "results"}
        return results["results"], meta
    return results, {}


# ----------------------------------------------------------------------------- study pages

_STUDY_TEMPLATE = r"""
{%- extends 'index.html.j2' -%}

{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}

{% block extra_css %}
<meta http-equiv="Content-Security-Policy" content="{{ resources.biaskit_csp }}">
<style type="text/css">
{{ resources.biaskit_css }}
</style>
{% endblock extra_css %}

{%- block body_header -%}
{{ super() }}
<nav class="bk-nav"><a href="{{ resources.biaskit_index_href }}">&larr; All studies</a>
<span class="bk-hint">The computer code is folded away: click <em>Show the code</em> under a step to see it.</span>
</nav>
{{ resources.biaskit_banner }}
{%- endblock body_header -%}

{% block input_group -%}
{%- if resources.global_content_filter.include_input -%}
<details class="bk-code"><summary>Show the code</summary>
{{ super() }}
</details>
{%- endif -%}
{%- endblock input_group %}

{%- block footer -%}
</html>
{%- endblock footer -%}
"""

_STUDY_CSS = """
body.jp-Notebook { max-width: 980px; margin: 0 auto; padding: 0 1.2em 3em; }
.bk-nav { position: sticky; top: 0; z-index: 10; background: #f4f6f8; border-bottom: 1px solid #d0d7de;
  padding: .5em .8em; margin: 0 -1.2em 1em; font-family: system-ui, sans-serif; font-size: 15px; }
.bk-nav a { font-weight: 600; text-decoration: none; color: #0b5cad; margin-right: 1.5em; }
.bk-hint { color: #57606a; font-size: 13px; }
.bk-banner { font-family: system-ui, sans-serif; background: #fff8e1; border: 1px solid #e0c36a;
  border-radius: 6px; padding: .6em .9em; margin: 0 0 1em; font-size: 14px; }
.bk-banner.bk-error { background: #fdecea; border-color: #e29b94; }
details.bk-code { margin: .2em 0 .4em; }
details.bk-code > summary { cursor: pointer; color: #57606a; font-family: system-ui, sans-serif;
  font-size: 12px; list-style: disclosure-closed; }
details.bk-code[open] > summary { list-style: disclosure-open; }
.bk-widget-note { color: #57606a; font-style: italic; font-family: system-ui, sans-serif; }
.jp-InputPrompt, .jp-OutputPrompt { display: none; }
math { font-size: 1.1em; }
math[display="block"] { margin: .6em 0; }
"""


def _clean_outputs_for_static_page(nb: Any) -> None:
    """Make widget outputs and widget state harmless in a static page (in place).

    * notebook-level widget state is removed (it would make the template load
      the widget renderer from a CDN);
    * a widget view with an HTML fallback (e.g. the seed-word form of
      :func:`biaskit.widgets.seed_word_form`) keeps the fallback;
    * a tqdm progress bar (its text fallback is the bar at 0%, which would
      mislead) is removed;
    * any other widget view becomes a short note for the reader.
    """
    nb.metadata.pop("widgets", None)
    note = (
        '<p class="bk-widget-note">(An interactive element was here: open the notebook in '
        "Jupyter to use it.)</p>"
    )
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for out in cell.get("outputs", []):
            data = out.get("data") if isinstance(out, dict) else None
            if data and _WIDGET_VIEW in data:
                del data[_WIDGET_VIEW]
                data.pop(_WIDGET_STATE, None)
                if "text/html" not in data:
                    if _TQDM_TEXT.match(str(data.get("text/plain", ""))):
                        continue
                    data.clear()
                    data["text/html"] = note
            kept.append(out)
        cell.outputs = kept


def _mathml_renderer_class() -> type | None:
    """An nbconvert markdown renderer that writes formulas as MathML (``None`` without latex2mathml)."""
    try:
        from latex2mathml.converter import convert
    except ImportError:
        return None
    from nbconvert.filters.markdown_mistune import IPythonRenderer

    def _to_mathml(tex: str, display: str, fallback: str) -> str:
        try:
            return convert(tex.strip(), display=display)
        except Exception as exc:  # latex2mathml raises various errors on unsupported TeX
            logger.info("formula %r not converted to MathML (%s); shown as TeX", tex, exc)
            return f'<code class="bk-tex">{html.escape(fallback)}</code>'

    class MathMLRenderer(IPythonRenderer):  # type: ignore[misc,valid-type]
        def inline_math(self, body: str) -> str:
            return _to_mathml(body, "inline", f"${body}$")

        def block_math(self, body: str) -> str:
            return _to_mathml(body, "block", f"$${body}$$")

        def latex_environment(self, name: str, body: str) -> str:
            tex = f"\\begin{{{name}}}{body}\\end{{{name}}}"
            return _to_mathml(tex, "block", tex)

    return MathMLRenderer


def _make_exporter(exclude_input: bool = False) -> Any:
    """nbconvert HTMLExporter on the ``lab`` template, without any CDN script, formulas as MathML."""
    from jinja2 import DictLoader, pass_context
    from nbconvert import HTMLExporter
    from nbconvert.filters.markdown_mistune import MarkdownWithMath
    from traitlets.config import Config

    renderer_cls = _mathml_renderer_class()
    if renderer_cls is None:
        logger.warning(
            "latex2mathml is not installed: formulas in the report are shown as TeX text "
            "(pip install latex2mathml to render them)"
        )

    class _OfflineHTMLExporter(HTMLExporter):  # type: ignore[misc,valid-type]
        @pass_context
        def markdown2html(self, context: Any, source: str) -> str:
            if renderer_cls is None:
                return super().markdown2html(context, source)
            cell = context.get("cell", {})
            path = context.get("resources", {}).get("metadata", {}).get("path", "")
            renderer = renderer_cls(
                escape=False,
                attachments=cell.get("attachments", {}),
                embed_images=self.embed_images,
                path=path,
                anchor_link_text=self.anchor_link_text,
                exclude_anchor_links=self.exclude_anchor_links,
                **self.lexer_options,
            )
            return MarkdownWithMath(renderer=renderer).render(source)

    c = Config()
    c.TagRemovePreprocessor.enabled = True
    c.TagRemovePreprocessor.remove_cell_tags = {"remove-cell", "remove_cell"}
    c.TagRemovePreprocessor.remove_input_tags = {"remove-input", "remove_input", "hide-input", "hide_input"}
    c.TagRemovePreprocessor.remove_all_outputs_tags = {"remove-output", "remove_output"}
    exporter = _OfflineHTMLExporter(
        config=c,
        template_name="lab",
        extra_loaders=[DictLoader({"biaskit_study.html.j2": _STUDY_TEMPLATE})],
        template_file="biaskit_study.html.j2",
        embed_images=True,
        exclude_input=exclude_input,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
        anchor_link_text="",
    )
    # Not loaded (the template blocks are emptied), but make sure no CDN address is left anywhere.
    for trait in ("require_js_url", "mathjax_url", "jquery_url", "mermaid_js_url", "widget_renderer_url"):
        if exporter.has_trait(trait):
            setattr(exporter, trait, "")
    return exporter


def _banner(study: Study | None) -> str:
    if study is None:
        return ""
    parts = []
    if study.source:
        parts.append(f"<b>Source:</b> {html.escape(study.source)}")
    if study.parameters:
        ps = ", ".join(f"{html.escape(str(k))} = {html.escape(repr(v))}" for k, v in study.parameters.items())
        parts.append(f"<b>Run with:</b> {ps}")
    body = "<br>".join(parts)
    out = f'<div class="bk-banner">{body}</div>' if parts else ""
    if study.has_error:
        out += (
            '<div class="bk-banner bk-error"><b>This notebook stopped with an error</b>: the steps after '
            "the error did not run and their results are missing.</div>"
        )
    return out


def render_study_page(
    notebook: str | Path,
    *,
    index_href: str = "index.html",
    study: Study | None = None,
    exclude_input: bool = False,
) -> str:
    """Convert one executed notebook into a self-contained HTML page (returned as a string).

    Code cells are folded under "Show the code" (or removed with
    ``exclude_input=True``); prose, tables and figures are kept; images are
    embedded; nothing is loaded from the network (see :data:`CSP`).
    """
    notebook = Path(notebook)
    nb = _read_notebook(notebook)
    _clean_outputs_for_static_page(nb)
    exporter = _make_exporter(exclude_input=exclude_input)
    resources = {
        "metadata": {"path": str(notebook.parent), "name": notebook_title(nb, notebook.stem)},
        "biaskit_csp": CSP,
        "biaskit_css": _STUDY_CSS,
        "biaskit_index_href": html.escape(index_href, quote=True),
        "biaskit_banner": _banner(study),
    }
    body, _ = exporter.from_notebook_node(nb, resources=resources)
    return body


# ----------------------------------------------------------------------------- index page

_INDEX_CSS = """
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2328;
  max-width: 1100px; margin: 0 auto; padding: 1.5em 1.2em 3em; line-height: 1.45; background: #fff; }
h1 { font-size: 1.8em; margin: 0 0 .3em; }
.bk-intro { color: #3d444d; max-width: 60em; }
.bk-intro p { margin: .4em 0; }
.bk-toc { columns: 2; margin: 1em 0 1.5em; padding-left: 1.2em; }
.bk-study { border: 1px solid #d0d7de; border-radius: 8px; padding: 1em 1.2em; margin: 1.2em 0;
  background: #fcfcfd; }
.bk-study h2 { margin: 0 0 .2em; font-size: 1.3em; }
.bk-study h2 a { color: #0b5cad; text-decoration: none; }
.bk-study h2 a:hover { text-decoration: underline; }
.bk-stem { color: #57606a; font-family: ui-monospace, monospace; font-size: .85em; }
.bk-meta { margin: .2em 0; font-size: .95em; }
.bk-meta b { color: #3d444d; }
.bk-warn { background: #fdecea; border: 1px solid #e29b94; border-radius: 6px; padding: .3em .6em; }
.bk-cols { display: flex; flex-wrap: wrap; gap: 1.2em; margin-top: .6em; }
.bk-numbers { flex: 1 1 380px; min-width: 0; max-width: 520px; }
.bk-figs { flex: 1 1 400px; display: flex; flex-wrap: wrap; gap: .6em; align-content: flex-start; }
.bk-scroll { max-height: 26em; overflow: auto; border: 1px solid #e1e4e8; border-radius: 6px; }
table.bk-headline { border-collapse: collapse; width: 100%; font-size: .9em; }
table.bk-headline th, table.bk-headline td { padding: .25em .6em; border-bottom: 1px solid #eaeef2;
  text-align: left; vertical-align: top; }
table.bk-headline td.bk-num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.bk-headline th { font-weight: normal; color: #3d444d; }
table.bk-headline thead th { position: sticky; top: 0; background: #f4f6f8; font-weight: 600; }
td.bk-note { color: #57606a; font-style: italic; }
.bk-figs figure { margin: 0; width: THUMBpx; }
.bk-figs img { width: auto; max-width: 100%; height: auto; border: 1px solid #d0d7de;
  border-radius: 4px; background: #fff; }
.bk-figs figcaption { font-size: .8em; color: #57606a; max-width: THUMBpx; overflow-wrap: anywhere; }
.bk-small { font-size: .85em; color: #57606a; }
""".replace("THUMB", str(THUMB_WIDTH))

_INDEX_INTRO = """
<div class="bk-intro">
<p>Each box below is one <b>study</b>: a notebook that measures social bias in texts, word vectors or
language models, following a published work (its <b>source</b>). Click a study's title to read it step
by step, with its explanations, tables and figures; the computer code is folded away.</p>
<p>The table in each box lists the study's <b>headline numbers</b>, rounded for reading; the exact values
are in the JSON file linked under the table. A <b>p-value</b> below 0.05 is the usual sign that a
difference is unlikely to be due to chance alone; an <b>effect size</b> says how large the difference is.
Neither says <i>why</i> the difference exists: each study ends with a section "What this shows".</p>
</div>
"""


def _thumbnail_data_uri(png: Path, width: int = THUMB_WIDTH) -> str:
    """A downscaled copy of a figure as a ``data:`` URI (so the index needs no other file)."""
    from PIL import Image

    with Image.open(png) as im:
        im.load()
        img = im.convert("RGBA") if im.mode not in ("RGB", "RGBA") else im.copy()
    if img.width > 2 * width:
        target = 2 * width  # 2x for sharp thumbnails on high-density screens
        img = img.resize((target, max(1, round(img.height * target / img.width))), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _headline_table(rows: Sequence[HeadlineRow], max_rows: int = MAX_ROWS) -> str:
    out = [
        '<div class="bk-scroll"><table class="bk-headline">',
        '<thead><tr><th scope="col">quantity</th><th scope="col">value</th></tr></thead><tbody>',
    ]
    for row in rows[:max_rows]:
        label = html.escape(row.label)
        if row.note is not None:
            out.append(
                f'<tr><th scope="row">{label}</th><td class="bk-note">{html.escape(row.note)}</td></tr>'
            )
            continue
        key = html.escape(json.dumps(list(row.path), ensure_ascii=False), quote=True)
        exact = html.escape(_json_exact(row.value), quote=True)
        is_num = isinstance(row.value, int | float) and not isinstance(row.value, bool)
        cls = "bk-num" if is_num else "bk-text"
        title = f' title="exact value: {exact}"' if is_num else ""
        out.append(
            f'<tr><th scope="row">{label}</th><td class="{cls}" data-key="{key}" data-value="{exact}"{title}>'
            f"{html.escape(format_value(row.value))}</td></tr>"
        )
    if len(rows) > max_rows:
        out.append(
            f'<tr><th scope="row">…</th><td class="bk-note">{len(rows) - max_rows} more row(s): '
            "see the JSON file</td></tr>"
        )
    out.append("</tbody></table></div>")
    return "\n".join(out)


def _study_box(study: Study, *, data_href: str | None) -> str:
    stem = html.escape(study.stem)
    title = html.escape(study.title)
    head = f'<a href="{html.escape(study.page)}">{title}</a>' if study.page else title
    parts = [f'<section class="bk-study" id="{stem}" data-stem="{stem}">']
    parts.append(f'<h2>{head} <span class="bk-stem">{stem}</span></h2>')
    if study.source:
        parts.append(f'<p class="bk-meta"><b>Source:</b> {html.escape(study.source)}</p>')
    if study.parameters:
        ps = ", ".join(f"{html.escape(str(k))} = {html.escape(repr(v))}" for k, v in study.parameters.items())
        parts.append(f'<p class="bk-meta"><b>Run with:</b> {ps}</p>')
    if study.notebook is None:
        parts.append('<p class="bk-meta bk-warn">No executed notebook for this study: only its numbers.</p>')
    if study.has_error:
        parts.append(
            '<p class="bk-meta bk-warn">This notebook stopped with an error: some results are missing.</p>'
        )
    parts.append('<div class="bk-cols">')
    parts.append('<div class="bk-numbers">')
    if study.results is not None:
        headline, meta = _headline_payload(study.results)
        rows = flatten_results(headline)
        parts.append(_headline_table(rows))
        small = []
        if meta.get("created"):
            small.append(f"computed {html.escape(str(meta['created']))}")
        if data_href:
            small.append(
                f'exact values: <a href="{html.escape(data_href)}">{html.escape(Path(data_href).name)}</a>'
            )
        if small:
            parts.append(f'<p class="bk-small">{" · ".join(small)}</p>')
    else:
        parts.append('<p class="bk-small">This study saved no headline numbers.</p>')
    parts.append("</div>")
    if study.figures:
        parts.append('<div class="bk-figs">')
        for png in study.figures:
            alt = html.escape(f"figure {png.stem} of {study.title}", quote=True)
            img = f'<img src="{_thumbnail_data_uri(png)}" alt="{alt}" loading="eager">'
            link = f'<a href="{html.escape(study.page)}">{img}</a>' if study.page else img
            caption = png.stem[len(study.stem) + 1 :].replace("_", " ") or png.stem
            parts.append(f"<figure>{link}<figcaption>{html.escape(caption)}</figcaption></figure>")
        parts.append("</div>")
    parts.append("</div></section>")
    return "\n".join(parts)


def render_index(
    studies: Iterable[Study], *, title: str = "biaskit: results of every study", data_dir: str | None = "data"
) -> str:
    """The ``index.html`` text listing every study (see the module docstring).

    ``data_dir`` is the site sub-folder holding copies of the JSON files (linked
    under each table); ``None`` links nothing.
    """
    studies = list(studies)
    toc = "".join(f'<li><a href="#{html.escape(s.stem)}">{html.escape(s.title)}</a></li>' for s in studies)
    boxes = "\n".join(
        _study_box(
            s,
            data_href=f"{data_dir}/{s.stem}.json" if data_dir and s.results_file is not None else None,
        )
        for s in studies
    )
    empty = (
        "" if studies else "<p><b>No executed study was found.</b> Run <code>make reproduce</code> first.</p>"
    )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>{html.escape(title)}</title>
<style type="text/css">{_INDEX_CSS}</style>
</head>
<body>
<h1>{html.escape(title)}</h1>
{_INDEX_INTRO}
<h2 class="bk-small">{len(studies)} stud{"y" if len(studies) == 1 else "ies"}</h2>
<ol class="bk-toc">{toc}</ol>
{empty}
{boxes}
</body>
</html>
"""


# ----------------------------------------------------------------------------- build


def build_site(results_dir: str | Path = "results", out_dir: str | Path | None = None) -> Path:
    """Build the report site from ``results_dir`` into ``out_dir``; return the path of ``index.html``.

    ``out_dir`` defaults to ``<results_dir>/site``.  Pages of studies that no
    longer exist are not removed automatically; the folder's ``index.html``,
    study pages and ``data/`` copies are overwritten.
    """
    results_dir = Path(results_dir)
    out = Path(out_dir) if out_dir is not None else results_dir / "site"
    studies = discover_studies(results_dir)
    out.mkdir(parents=True, exist_ok=True)
    data_out = out / "data"
    data_out.mkdir(exist_ok=True)
    for study in studies:
        if study.notebook is not None:
            logger.info("converting %s", study.notebook)
            page = render_study_page(study.notebook, study=study)
            (out / f"{study.stem}.html").write_text(page, encoding="utf-8")
        if study.results_file is not None:
            shutil.copyfile(study.results_file, data_out / study.results_file.name)
    index = out / "index.html"
    index.write_text(render_index(studies), encoding="utf-8")
    logger.info("report: %d studies -> %s", len(studies), index)
    return index


def add_build_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``build`` (shared with ``python -m biaskit report``)."""
    parser.add_argument(
        "--results", default="results", help="folder with NN_name.ipynb/.json/_*.png (default: results)"
    )
    parser.add_argument("--out", default=None, help="output folder (default: <results>/site)")


def run_build(args: argparse.Namespace) -> int:
    """Build the site from parsed arguments; print the path of ``index.html``; return the exit status."""
    try:
        index = build_site(args.results, args.out)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(index)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m biaskit.report build --results results --out results/site``."""
    parser = argparse.ArgumentParser(
        prog="python -m biaskit.report", description="Build the static HTML report of the executed studies."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build index.html and one page per executed notebook")
    add_build_arguments(b)
    b.add_argument("-q", "--quiet", action="store_true", help="only print the path of index.html")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO, format="%(message)s")
    return run_build(args)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
