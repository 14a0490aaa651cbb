"""The ``index.html`` of the HTML report (:mod:`biaskit.report.html_report`): one box per study
(:func:`render_index`) that leads with what the run found, then its headline numbers (rounded, the exact
JSON value in a ``data-value`` attribute), where it comes from and the settings it ran with, every number
of the run folded under "All numbers of this run", and thumbnails of its figures.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from biaskit.core.html import escape_html, safe_href
from biaskit.report.html_numbers import HeadlineRow, flatten_results, format_value, json_exact, plain_exact
from biaskit.report.html_studies import Study, headline_payload, is_wrapped, shown_parameters
from biaskit.report.html_study_page import CSP, mismatch_text

__all__ = ["MAX_ROWS", "THUMB_WIDTH", "render_index"]

#: At most this many rows per study in the headline table.
MAX_ROWS = 300
#: Width in pixels of the figure thumbnails on the index page.
THUMB_WIDTH = 220


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
.bk-finding { font-size: 1.05em; margin: .5em 0 .3em; max-width: 60em; }
.bk-finding.bk-from-notebook b, .bk-finding.bk-none { color: #57606a; }
table.bk-keynumbers { border-collapse: collapse; margin: .3em 0 .6em; font-size: 1em; }
table.bk-keynumbers th, table.bk-keynumbers td { padding: .2em .8em .2em 0; text-align: left;
  vertical-align: baseline; border-bottom: 1px solid #eaeef2; }
table.bk-keynumbers th { font-weight: normal; color: #3d444d; }
table.bk-keynumbers td.bk-num { font-weight: 600; font-size: 1.1em; font-variant-numeric: tabular-nums;
  white-space: nowrap; }
details.bk-all { margin-top: .5em; }
details.bk-all > summary { cursor: pointer; color: #0b5cad; font-size: .95em; }
details.bk-all[open] > summary { margin-bottom: .4em; }
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
language models, following a published work (its <b>source</b>). Each box starts with what the study
found, in one sentence, and its two or three key numbers; then come the settings it ran with, and every
number it computed, folded under <i>All numbers of this run</i>. Click a study's title to read it step by
step, with its explanations, tables and figures; the computer code is folded away.</p>
<p>Numbers are rounded for reading; the exact values are in the JSON file linked under each list. A
<b>p-value</b> below 0.05 is the usual sign that a difference is unlikely to be due to chance alone
("&lt; 0.001" means smaller than one in a thousand); an <b>effect size</b> says how large the difference
is. Neither says <i>why</i> the difference exists: each study ends with a section "What this shows".</p>
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


def _png_description(png: Path) -> str | None:
    """The ``Description`` text of a PNG (the alternative text ``save_figure`` writes), if any."""
    from PIL import Image

    try:
        with Image.open(png) as im:
            text = im.info.get("Description")
    except OSError:
        return None
    return " ".join(str(text).split()) if text and str(text).strip() else None


def _row_key(path: Sequence[str]) -> str | None:
    """The name that says what a flattened value is (its last key that is not a list index)."""
    return next((p for p in reversed(path) if not p.startswith("[") and p != "…"), None)


def _headline_table(
    rows: Sequence[HeadlineRow],
    max_rows: int = MAX_ROWS,
    *,
    key_prefix: tuple[str, ...] = (),
    css_class: str = "bk-headline",
    header: bool = True,
) -> str:
    """Rows as an HTML table; every value cell carries ``data-key`` (its path into the JSON file,
    after ``key_prefix``) and ``data-value`` (the exact JSON value)."""
    out = [
        f'<div class="bk-scroll"><table class="{css_class}">' if header else f'<table class="{css_class}">'
    ]
    if header:
        out.append('<thead><tr><th scope="col">quantity</th><th scope="col">value</th></tr></thead>')
    out.append("<tbody>")
    for row in rows[:max_rows]:
        label = escape_html(row.label) if row.label.strip() else "(unnamed)"
        if row.note is not None:
            out.append(
                f'<tr><th scope="row">{label}</th><td class="bk-note">{escape_html(row.note)}</td></tr>'
            )
            continue
        key = escape_html(json.dumps([*key_prefix, *row.path], ensure_ascii=False))
        exact = escape_html(json_exact(row.value))
        is_num = isinstance(row.value, int | float) and not isinstance(row.value, bool)
        cls = "bk-num" if is_num else "bk-text"
        title = f' title="exact value: {escape_html(plain_exact(row.value))}"' if is_num else ""
        shown = format_value(row.value, _row_key(row.path))
        out.append(
            f'<tr><th scope="row">{label}</th><td class="{cls}" data-key="{key}" data-value="{exact}"{title}>'
            f"{escape_html(shown)}</td></tr>"
        )
    if len(rows) > max_rows:
        out.append(
            f'<tr><th scope="row">…</th><td class="bk-note">{len(rows) - max_rows} more row(s): '
            "see the JSON file</td></tr>"
        )
    out.append("</tbody></table></div>" if header else "</tbody></table>")
    return "\n".join(out)


def _study_box(study: Study, *, data_href: str | None) -> str:
    """One study on the index: finding, headline numbers, source and settings, all numbers (folded),
    figures."""
    stem = escape_html(study.stem)
    title = escape_html(study.title)
    head = f'<a href="{safe_href(study.page)}">{title}</a>' if study.page else title
    parts = [f'<section class="bk-study" id="{stem}" data-stem="{stem}">']
    parts.append(f'<h2>{head} <span class="bk-stem">{stem}</span></h2>')
    # what may make the numbers below unreliable comes first
    if study.notebook is None:
        parts.append('<p class="bk-meta bk-warn">No executed notebook for this study: only its numbers.</p>')
    if study.has_error:
        parts.append(
            '<p class="bk-meta bk-warn">This notebook stopped with an error: some results are missing.</p>'
        )
    if study.run_mismatch:
        parts.append(f'<p class="bk-meta bk-warn bk-mismatch" role="alert">{mismatch_text(study)}</p>')
    # 1. the finding, in one sentence
    if study.finding and not study.finding_from_notebook:
        parts.append(f'<p class="bk-finding"><b>Finding:</b> {escape_html(study.finding)}</p>')
    elif study.finding:
        parts.append(
            f'<p class="bk-finding bk-from-notebook"><b>What this shows:</b> {escape_html(study.finding)}</p>'
        )
    else:
        what = "open the study to read what it shows" if study.page else "see its numbers below"
        parts.append(f'<p class="bk-finding bk-none">This run saved no one-sentence finding: {what}.</p>')
    parts.append('<div class="bk-cols">')
    parts.append('<div class="bk-numbers">')
    wrapped = study.results is not None and is_wrapped(study.results)
    # 2. the headline numbers
    if study.headline:
        parts.append(
            _headline_table(
                flatten_results(study.headline),
                key_prefix=("headline",),
                css_class="bk-keynumbers",
                header=False,
            )
        )
    # 3. where it comes from, the settings, then every number (folded)
    if study.source:
        parts.append(f'<p class="bk-meta"><b>Source:</b> {escape_html(study.source)}</p>')
    shown = shown_parameters(study.parameters)
    if shown:
        parts.append(f'<p class="bk-meta bk-settings"><b>Settings of this run:</b> {shown}</p>')
    if study.results is not None:
        numbers, meta = headline_payload(study.results)
        rows = flatten_results(numbers)
        n = sum(1 for r in rows if r.note is None)
        parts.append(
            f'<details class="bk-all"><summary>All numbers of this run ({n} value{"s" if n != 1 else ""})'
            "</summary>"
        )
        parts.append(_headline_table(rows, key_prefix=("results",) if wrapped else ()))
        small = []
        if meta.get("created"):
            small.append(f"computed {escape_html(str(meta['created']))}")
        if data_href:
            small.append(
                f'exact values: <a href="{safe_href(data_href)}">{escape_html(Path(data_href).name)}</a>'
            )
        if small:
            parts.append(f'<p class="bk-small">{" · ".join(small)}</p>')
        parts.append("</details>")
    else:
        parts.append('<p class="bk-small">This study saved no numbers file.</p>')
    parts.append("</div>")
    if study.figures:
        parts.append('<div class="bk-figs">')
        for png in study.figures:
            caption = png.stem[len(study.stem) + 1 :].replace("_", " ") or png.stem
            alt = escape_html(_png_description(png) or f"Figure “{caption}” of {study.title}")
            img = f'<img src="{_thumbnail_data_uri(png)}" alt="{alt}" loading="eager">'
            link = f'<a href="{safe_href(study.page)}">{img}</a>' if study.page else img
            parts.append(f"<figure>{link}<figcaption>{escape_html(caption)}</figcaption></figure>")
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
    toc = "".join(f'<li><a href="#{escape_html(s.stem)}">{escape_html(s.title)}</a></li>' for s in studies)
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
<title>{escape_html(title)}</title>
<style type="text/css">{_INDEX_CSS}</style>
</head>
<body>
<h1>{escape_html(title)}</h1>
{_INDEX_INTRO}
<h2 class="bk-small">{len(studies)} stud{"y" if len(studies) == 1 else "ies"}</h2>
<ol class="bk-toc">{toc}</ol>
{empty}
{boxes}
</body>
</html>
"""
