"""One study's page of the HTML report (:mod:`biaskit.report.html_report`): an executed notebook
converted with nbconvert's :class:`~nbconvert.exporters.HTMLExporter` (``lab`` template) into a
self-contained, offline page (:func:`render_study_page`).

Code cells are folded under "Show the code", figures are embedded and get alternative text
(:func:`add_missing_alt`), progress bars are removed, raw log lines become short "Note" boxes or a folded
"Technical messages" box, formulas become MathML when ``latex2mathml`` is installed, and the
Content-Security-Policy :data:`CSP` forbids any remote resource.

**Nothing on a page runs.**  Every Markdown cell (rendered by nbconvert, raw HTML included), every HTML
and Markdown output and every raw cell passes :func:`biaskit.core.html.sanitize_html` (an allowlist:
no ``<script>``, no ``on*=`` handler, no ``javascript:`` link); JavaScript and widget outputs are
dropped.  :data:`CSP` allows no script but the inline scripts biaskit itself puts on a page
(:data:`PAGE_SCRIPTS`, none today), each by its sha256 hash: no ``'unsafe-inline'`` for scripts.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from biaskit.core.html import escape_html, safe_href, sanitize_html, script_hash
from biaskit.report.html_studies import Study, notebook_title, read_notebook, shown_parameters
from biaskit.report.widgets import PLOTLY_WARM_UP_KEY

logger = logging.getLogger(__name__)

__all__ = [
    "CSP",
    "PAGE_SCRIPTS",
    "add_missing_alt",
    "content_security_policy",
    "mismatch_text",
    "render_study_page",
]

#: The inline scripts biaskit itself writes on a report page, each exactly as written inside its
#: ``<script>`` element.  None today: the pages need no script.  A script added here is allowed by
#: the sha256 of its text in :data:`CSP`, and no other script can run.
PAGE_SCRIPTS: tuple[str, ...] = ()


def content_security_policy(scripts: Sequence[str] = PAGE_SCRIPTS) -> str:
    """The Content-Security-Policy of a report page that runs exactly ``scripts`` (inline, by hash).

    Nothing may be fetched from anywhere (images and fonts only as ``data:`` URIs, inline styles
    only); scripts: ``'sha256-...'`` of each of ``scripts`` (:func:`biaskit.core.html.script_hash`),
    ``'none'`` when there is none; never ``'unsafe-inline'``, so an inline script or ``on*=``
    handler that slipped into a page would not run.
    """
    script_src = " ".join(dict.fromkeys(script_hash(s) for s in scripts)) or "'none'"
    return (
        "default-src 'none'; img-src data:; font-src data:; style-src 'unsafe-inline'; "
        f"script-src {script_src}; object-src 'none'; base-uri 'none'; form-action 'none'"
    )


#: Content-Security-Policy of every generated page (:func:`content_security_policy` of :data:`PAGE_SCRIPTS`).
CSP = content_security_policy()

#: The output types a static page shows; any other (JavaScript, widget views, PDF, ...) is dropped.
_SHOWN_MIME_TYPES = frozenset(
    {"text/html", "text/markdown", "text/plain", "text/latex", "image/png", "image/jpeg", "image/svg+xml"}
)

_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
#: The text of a tqdm bar, with or without its description: "occupation-name:   0%|          | 0/2600".
_TQDM_TEXT = re.compile(r"^[^\n|%]{0,120}?\d{1,3}%\|")
#: A progress-bar line (tqdm and friends): "Map:  50%|#####     | 5/10 [00:01<00:01, 4.5it/s]".
_PROGRESS_LINE = re.compile(r"\d{1,3}%\|.*\||\d+(\.\d+)?\s*(it/s|s/it)\]?\s*$")
#: A raw log line of the logging module ("WARNING:biaskit.x:msg", "ERROR biaskit.x: msg",
#: "2024-01-01 12:00:00,123 - biaskit.x - WARNING - msg", "[W 12:00:00.123 App] msg").
_LOG_LEVELS = "DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL"
_LOG_LINE_PATTERNS = (
    re.compile(rf"^(?P<level>{_LOG_LEVELS})(?::| +)(?P<name>[\w.\-]+): ?(?P<msg>.*)$"),
    re.compile(
        rf"^\[?\d{{4}}-\d{{2}}-\d{{2}}[ T][\d:.,]+\]?\s*(?:[-|:]\s*)?(?:(?P<name>[\w.\-]+)\s*[-|:]\s*)?"
        rf"\[?(?P<level>{_LOG_LEVELS})\]?\s*[-|:]?\s*(?P<msg>.*)$"
    ),
    re.compile(r"^\[(?P<level>[DIWEC]) [\d\-:. ]+(?P<name>[\w.\-]*)\]\s*(?P<msg>.*)$"),
)
_LOG_LETTER = {"D": "DEBUG", "I": "INFO", "W": "WARNING", "E": "ERROR", "C": "CRITICAL"}
#: "path/file.py:12: UserWarning: message" (Python's warnings module) and its source line.
_PY_WARNING = re.compile(r"^\S.*?:\d+: (?P<cat>\w*Warning): (?P<msg>.*)$")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_IMG_TAG = re.compile(r"<img\b[^>]*>", re.IGNORECASE)
_SELF_CLOSED_A = re.compile(r"<a\b([^<>]*?)\s*/>", re.IGNORECASE)
_ALT_ATTR = re.compile(r"""\salt\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE)


_STUDY_TEMPLATE = """
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
<span class="bk-hint">The computer code is folded away: click <em>Show the code</em> \
under a step to see it.</span>
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

{#- every image carries alternative text: the output's metadata {"image/png": {"alt": ...}}
    (set for every image by _clean_outputs_for_static_page, which numbers the figures) -#}
{% block data_png scoped %}
{%- set alt = (output | get_metadata('alt', 'image/png')) or resources.biaskit_figure_alt -%}
<div class="jp-RenderedImage jp-OutputArea-output {{ extra_class }}">
<img src="data:image/png;base64,{{ output.data['image/png'] | escape_html }}" alt="{{ alt | escape_html }}"
{%- set width=output | get_metadata('width', 'image/png') -%}
{%- if width is not none %} width="{{ width | escape_html }}"{% endif -%}
{%- set height=output | get_metadata('height', 'image/png') -%}
{%- if height is not none %} height="{{ height | escape_html }}"{% endif %} class="
{%- if output | get_metadata('unconfined', 'image/png') %}unconfined {% endif -%}
{%- if output | get_metadata('needs_background', 'image/png') == 'light' %}\
jp-needs-light-background{% endif -%}
{%- if output | get_metadata('needs_background', 'image/png') == 'dark' %}jp-needs-dark-background{% endif -%}
">
</div>
{%- endblock data_png %}

{% block data_jpg scoped %}
{%- set alt = (output | get_metadata('alt', 'image/jpeg')) or resources.biaskit_figure_alt -%}
<div class="jp-RenderedImage jp-OutputArea-output {{ extra_class }}">
<img src="data:image/jpeg;base64,{{ output.data['image/jpeg'] | escape_html }}" alt="{{ alt | escape_html }}"
{%- set width=output | get_metadata('width', 'image/jpeg') -%}
{%- if width is not none %} width="{{ width | escape_html }}"{% endif -%}
{%- set height=output | get_metadata('height', 'image/jpeg') -%}
{%- if height is not none %} height="{{ height | escape_html }}"{% endif %} class="
{%- if output | get_metadata('unconfined', 'image/jpeg') %}unconfined {% endif -%}
{%- if output | get_metadata('needs_background', 'image/jpeg') == 'light' %}\
jp-needs-light-background{% endif -%}
{%- if output | get_metadata('needs_background', 'image/jpeg') == 'dark' %}\
jp-needs-dark-background{% endif -%}
">
</div>
{%- endblock data_jpg %}

{% block data_svg scoped -%}
{%- set alt = (output | get_metadata('alt', 'image/svg+xml')) or resources.biaskit_figure_alt -%}
<div class="jp-RenderedSVG jp-OutputArea-output {{ extra_class }}" data-mime-type="image/svg+xml">
<img src="data:image/svg+xml;base64,{{ output.data['image/svg+xml'] | text_base64 | escape_html }}" \
alt="{{ alt | escape_html }}">
</div>
{%- endblock data_svg %}

{#- an error stays visible (its name and message); the traceback is folded -#}
{% block error -%}
<div class="bk-error-box" role="alert"><b>This step stopped with an error:</b>
{{ output.ename | strip_ansi | escape_html }}: {{ output.evalue | strip_ansi | escape_html }}</div>
<details class="bk-traceback"><summary>Technical details of the error</summary>
{{ super() }}
</details>
{%- endblock error %}

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
.bk-finding { font-size: 15px; }
.bk-note { font-family: system-ui, sans-serif; background: #fff8c5; border-left: 4px solid #d4a72c;
  padding: 6px 10px; margin: 6px 0; font-size: 0.92em; }
.bk-note.bk-note-error { background: #ffebe9; border-left-color: #cf222e; }
details.bk-log, details.bk-traceback { margin: .3em 0; font-family: system-ui, sans-serif; font-size: 12px; }
details.bk-log > summary, details.bk-traceback > summary { cursor: pointer; color: #57606a; }
details.bk-log pre { font-size: 11px; white-space: pre-wrap; background: #f6f8fa; padding: .4em .6em; }
.bk-error-box { font-family: system-ui, sans-serif; background: #ffebe9; border-left: 4px solid #cf222e;
  padding: 6px 10px; margin: 6px 0; }
.jp-InputPrompt, .jp-OutputPrompt { display: none; }
math { font-size: 1.1em; }
math[display="block"] { margin: .6em 0; }
"""


def add_missing_alt(fragment: str, fallback: str) -> str:
    """Give every ``<img>`` of an HTML fragment without (or with empty) alternative text ``fallback``."""
    attr = escape_html(fallback)

    def fix(m: re.Match[str]) -> str:
        tag = m.group(0)
        alt = _ALT_ATTR.search(tag)
        if alt is None:
            return re.sub(r"^<img\b", f'<img alt="{attr}"', tag, count=1, flags=re.IGNORECASE)
        if any((g or "").strip() for g in alt.groups()):
            return tag
        return tag[: alt.start()] + f' alt="{attr}"' + tag[alt.end() :]

    return _IMG_TAG.sub(fix, fragment)


def _log_record(line: str) -> tuple[str, str] | None:
    """``(LEVEL, message)`` when ``line`` is a raw log line of the logging module, else ``None``."""
    for pattern in _LOG_LINE_PATTERNS:
        m = pattern.match(line)
        if m:
            level = _LOG_LETTER.get(m.group("level"), m.group("level"))
            return ("WARNING" if level == "WARN" else level), m.group("msg").strip()
    return None


def _is_progress(line: str) -> bool:
    return bool(_PROGRESS_LINE.search(line)) or bool(_TQDM_TEXT.match(line))


def _note_output(level: str, message: str) -> Any:
    """A display output showing a log message as a short labelled box (like the notebooks' notes)."""
    from nbformat.v4 import new_output

    from biaskit.report.notebook_output import note_html

    problem = level in ("ERROR", "CRITICAL", "FATAL")
    label = "Problem" if problem else "Note"
    box = note_html(message, logging.ERROR if problem else logging.WARNING)
    return new_output("display_data", data={"text/html": box, "text/plain": f"{label}: {message}"})


def _technical_output(lines: Sequence[str]) -> Any:
    """A display output with technical messages folded under a small labelled switch."""
    from nbformat.v4 import new_output

    n = len(lines)
    text = "\n".join(lines)
    box = (
        f'<details class="bk-log"><summary>Technical messages ({n} line{"s" if n != 1 else ""})</summary>'
        f"<pre>{escape_html(text)}</pre></details>"
    )
    return new_output("display_data", data={"text/html": box, "text/plain": text})


def _clean_stream(out: Any, seen_notes: set[tuple[str, str]]) -> list[Any]:
    """Replace one stream output by what a reader should see (see ``_clean_outputs_for_static_page``)."""
    from nbformat.v4 import new_output

    name = out.get("name", "stdout")
    text = _ANSI.sub("", str(out.get("text", "")))
    result: list[Any] = []
    kept: list[str] = []  # stdout text, in order
    technical: list[str] = []  # stderr lines that are neither notes nor progress bars
    after_py_warning = False

    def flush_kept() -> None:
        if kept and any(x.strip() for x in kept):
            result.append(new_output("stream", name=name, text="\n".join(kept) + "\n"))
        kept.clear()

    for raw in text.split("\n"):
        segments = [seg for seg in raw.split("\r") if seg.strip()]  # tqdm redraws with \r
        if segments and all(_is_progress(seg) for seg in segments):
            continue
        line = segments[-1] if segments else ""
        if name != "stderr":  # printed on purpose (a table, a log file shown as an example): kept
            kept.append(line)
            continue
        if after_py_warning and line.startswith((" ", "\t")):
            technical.append(line)  # the source line Python's warnings module prints
            after_py_warning = False
            continue
        after_py_warning = False
        record = _log_record(line)
        if record is not None:
            level, message = record
            if level in ("WARNING", "ERROR", "CRITICAL", "FATAL"):
                key = ("Problem" if level != "WARNING" else "Note", message)
                if key not in seen_notes:
                    seen_notes.add(key)
                    flush_kept()
                    result.append(_note_output(level, message))
            else:
                technical.append(line)
            continue
        if _PY_WARNING.match(line):
            technical.append(line)
            after_py_warning = True
            continue
        if line.strip():
            technical.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    flush_kept()
    if technical:
        result.append(_technical_output(technical))
    return result


def _clean_outputs_for_static_page(nb: Any, title: str = "this study") -> None:
    """Make the outputs of an executed notebook fit a static page for readers (in place).

    * notebook-level widget state is removed (it would make the template load
      the widget renderer from a CDN);
    * a widget view with an HTML fallback (e.g. the seed-word form of
      :func:`biaskit.report.widgets.seed_word_form`) keeps the fallback;
    * a tqdm progress bar (its text fallback is the bar at 0%, which would
      mislead) is removed, and so are progress-bar lines in stdout / stderr;
    * any other widget view becomes a short note for the reader, and the hidden "run this cell" hint
      shown beside a live view (:func:`biaskit.report.widgets.display_live`) is removed, and so is the
      empty plotly figure shown with it;
    * every image gets alternative text: the output's ``{"image/png": {"alt": ...}}``
      metadata when the notebook gave it, else "Figure N of <title>"; images inside HTML
      outputs without ``alt`` get a fallback as well;
    * nothing runs: an HTML output and a raw cell pass :func:`biaskit.core.html.sanitize_html` (no
      script, no event handler), and an output type a static page does not show (JavaScript, a
      widget view without an HTML fallback, ...) is dropped;
    * on stderr, raw log lines (``WARNING:biaskit.x:...``) become the short "Note" /
      "Problem" boxes the notebooks show (once per message and page); DEBUG / INFO log lines,
      Python warnings and any other stderr text go into a folded "Technical messages" box
      (stdout is what the notebook printed on purpose and is kept, without progress bars).
    """
    nb.metadata.pop("widgets", None)
    note = (
        '<p class="bk-widget-note">(An interactive element was here: open the notebook in '
        "Jupyter to use it.)</p>"
    )
    figure = 0
    seen_notes: set[tuple[str, str]] = set()
    for cell in nb.cells:
        if cell.cell_type == "raw":
            source = cell.get("source", "")
            cell.source = sanitize_html("".join(source) if isinstance(source, list) else str(source))
            continue
        if cell.cell_type != "code":
            continue
        kept = []
        for out in cell.get("outputs", []):
            if not isinstance(out, dict):
                kept.append(out)
                continue
            if out.get("output_type") == "stream":
                kept.extend(_clean_stream(out, seen_notes))
                continue
            data = out.get("data")
            if data and "bk-live-hint" in str(data.get("text/html", "")):
                # the hint JupyterLab shows for a live view it cannot draw: nothing for a static page
                continue
            if (out.get("metadata") or {}).get(PLOTLY_WARM_UP_KEY):
                continue  # the empty figure that has JupyterLab load plotly.js early: nothing to show
            if data and _WIDGET_VIEW in data:
                del data[_WIDGET_VIEW]
                data.pop(_WIDGET_STATE, None)
                if "text/html" not in data:
                    if _TQDM_TEXT.match(str(data.get("text/plain", ""))):
                        continue
                    data.clear()
                    data["text/html"] = note
            if data:
                for mime in [m for m in data if m not in _SHOWN_MIME_TYPES]:
                    del data[mime]  # JavaScript and the like: nothing on a static page may run
                if not data:
                    continue
                images = [m for m in ("image/png", "image/jpeg", "image/svg+xml") if m in data]
                if images:
                    figure += 1
                    meta = out.setdefault("metadata", {})
                    given = next(
                        (
                            str(meta[m]["alt"]).strip()
                            for m in images
                            if isinstance(meta.get(m), dict) and str(meta[m].get("alt") or "").strip()
                        ),
                        "",
                    )
                    alt = given or f"Figure {figure} of {title}"
                    for m in images:
                        if not isinstance(meta.get(m), dict):
                            meta[m] = {}
                        meta[m]["alt"] = alt
                if "text/html" in data:
                    fragment = data["text/html"]
                    fragment = "".join(fragment) if isinstance(fragment, list) else str(fragment)
                    data["text/html"] = add_missing_alt(sanitize_html(fragment), f"Picture in {title}")
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
            return f'<code class="bk-tex">{escape_html(fallback)}</code>'

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
            """Markdown (a cell, or a text/markdown output) as HTML, sanitised: raw HTML in it stays inert."""
            resources = context.get("resources", {})
            fallback = f"Picture in {resources.get('metadata', {}).get('name') or 'this study'}"
            # nbconvert writes an empty heading anchor as <a ... />, which an HTML parser reads as an open
            # link around the rest of the cell: close it before the page is parsed
            rendered = _SELF_CLOSED_A.sub(r"<a\1></a>", self._markdown2html(context, source))
            return add_missing_alt(sanitize_html(rendered), fallback)

        def _markdown2html(self, context: Any, source: str) -> str:
            if renderer_cls is None:
                return HTMLExporter.markdown2html(self, context, source)
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
    # nbconvert's own messages go through this module's logger (so `make report` and the tests see them)
    exporter.log = logger.getChild("nbconvert")
    # Not loaded (the template blocks are emptied), but make sure no CDN address is left anywhere.
    for trait in ("require_js_url", "mathjax_url", "jquery_url", "mermaid_js_url", "widget_renderer_url"):
        if exporter.has_trait(trait):
            setattr(exporter, trait, "")
    return exporter


def mismatch_text(study: Study) -> str:
    """The visible explanation of a notebook / JSON mismatch (HTML)."""
    name = study.results_file.name if study.results_file is not None else f"{study.stem}.json"
    reasons = "; ".join(escape_html(r) for r in study.run_mismatch)
    return (
        f"<b>The numbers file ({escape_html(name)}) comes from a different run than this page</b>: "
        f"{reasons}. Run the notebook again (<code>make reproduce</code>) "
        "so that both come from the same run."
    )


def _banner(study: Study | None) -> str:
    if study is None:
        return ""
    out = ""
    if study.run_mismatch:
        out += f'<div class="bk-banner bk-error bk-mismatch" role="alert">{mismatch_text(study)}</div>'
    if study.has_error:
        out += (
            '<div class="bk-banner bk-error" role="alert"><b>This notebook stopped with an error</b>: the '
            "steps after the error did not run and their results are missing.</div>"
        )
    parts = []
    if study.finding and not study.finding_from_notebook:
        parts.append(f'<span class="bk-finding"><b>In short:</b> {escape_html(study.finding)}</span>')
    if study.source:
        parts.append(f"<b>Source:</b> {escape_html(study.source)}")
    shown = shown_parameters(study.parameters)
    if shown:
        parts.append(f"<b>Run with:</b> {shown}")
    if parts:
        out += f'<div class="bk-banner">{"<br>".join(parts)}</div>'
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
    nb = read_notebook(notebook)
    title = notebook_title(nb, notebook.stem)
    _clean_outputs_for_static_page(nb, title)
    exporter = _make_exporter(exclude_input=exclude_input)
    resources = {
        "metadata": {"path": str(notebook.parent), "name": title},
        "biaskit_figure_alt": f"Figure of {title}",
        "biaskit_csp": CSP,
        "biaskit_css": _STUDY_CSS,
        "biaskit_index_href": safe_href(index_href),
        "biaskit_banner": _banner(study),
    }
    body, _ = exporter.from_notebook_node(nb, resources=resources)
    return body
