"""Build a static, offline HTML report of every executed study notebook.

``make reproduce`` leaves, for every study ``NN_name``, the executed notebook
``results/NN_name.ipynb``, its headline numbers ``results/NN_name.json``
(written by :func:`biaskit.report.notebook_output.save_results`) and its figures
``results/NN_name_*.png`` (:func:`biaskit.report.notebook_output.save_figure`).  This module
turns them into a small web site a reader without programming experience can
open from disk::

    python -m biaskit.report.html_report build --results results --out results/site

* one page per study (``NN_name.html``), converted with nbconvert's
  :class:`~nbconvert.exporters.HTMLExporter` (``lab`` template): prose, tables
  and figures are kept, code cells are folded under a "Show the code" switch,
  figures are embedded in the page (``data:`` URIs), formulas are turned into
  MathML (rendered by the browser itself, no MathJax) when ``latex2mathml`` is
  installed;
* ``index.html`` listing every study in a box that leads with what the run found
  (the JSON's ``finding`` sentence, else the first point of the notebook's "What
  this shows" section), then its two or three headline numbers (the JSON's
  ``headline``; rounded for display, the exact JSON value kept in a
  ``data-value`` attribute), then where it comes from and the settings it ran
  with, then every number of the run folded under "All numbers of this run",
  and thumbnails of its figures (with their alternative text).

Numbers are shown for people: p-values (keys such as ``p_value`` or ending in
``_p``) with :func:`biaskit.core.results.format_p_value` (``"< 0.001"``), other
numbers with 4 significant digits and never in e-notation, missing values as
``n/a``.

**Same run.**  A notebook and its JSON are paired by name (``NN_name.ipynb`` and
``NN_name.json`` in the same folder) and must come from the same run: the
parameters recorded in the JSON must equal those papermill injected into the
notebook, and the JSON must have been written while papermill ran the notebook.
When they disagree the study's box and page carry a visible banner and a
WARNING is logged.

**A clean page.**  Every figure gets alternative text (the notebook output's
``{"image/png": {"alt": ...}}`` metadata written by
:func:`biaskit.report.notebook_output.save_figure`, else "Figure N of <study>"); progress
bars are removed; raw log lines on stderr become the same short "Note" boxes the
notebooks show (warnings and errors) or go into a folded "Technical messages"
box (everything else); an error keeps a visible box with the folded traceback.

No page loads anything from the network: the CDN scripts of the nbconvert
template (require.js, MathJax, mermaid, the widget renderer) are removed and a
Content-Security-Policy forbids any remote resource, so the site works offline
and a stray remote reference shows up as a browser console error (which
``tests/test_report.py`` checks for in headless Chromium).
"""

from __future__ import annotations

import argparse
import base64
import datetime as _dt
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
    "add_missing_alt",
    "build_site",
    "check_same_run",
    "discover_studies",
    "flatten_results",
    "format_value",
    "is_p_value_key",
    "main",
    "notebook_finding",
    "notebook_source",
    "notebook_title",
    "plain_numbers",
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

#: Settings not shown to readers (machine-specific paths); still compared by the same-run check.
HIDDEN_PARAMETERS = frozenset({"results_dir", "PAPERMILL_INPUT_PATH", "PAPERMILL_OUTPUT_PATH"})
#: Slack, in seconds, when checking that a JSON was written while papermill ran its notebook
#: (``created`` is stored to the second).
RUN_TIME_SLACK_S = 2.0

_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
_TQDM_TEXT = re.compile(r"^\s*\d{1,3}%\|")
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
_ALT_ATTR = re.compile(r"""\salt\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE)
_P_VALUE_KEY = re.compile(r"(^|[^a-z])p[_\- ]?value|(^|[_\W])p$", re.IGNORECASE)  # not "group_value"
_E_NUMBER = re.compile(r"(?<![\w.])([-+−]?\d+(?:\.\d+)?[eE][-+−]?\d+)(?!\w|\.\d)")
_P_BEFORE = re.compile(r"\bp(?:[- ]?values?)?\s*(?:=|≈|is|of)\s*$", re.IGNORECASE)
_WHAT_THIS_SHOWS = re.compile(r"^\s{0,3}#{1,6}\s*what this shows\b.*$", re.IGNORECASE | re.MULTILINE)
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
    """Everything the index shows about one study ``NN_name``.

    ``parameters`` are the settings shown to the reader: the JSON's ``parameters``
    overridden by what papermill recorded in the notebook.  ``finding`` is the JSON's
    one-sentence finding or, for older JSON files, the first point of the notebook's
    "What this shows" section (``finding_from_notebook`` is then true).
    ``run_mismatch`` lists why the notebook and its JSON do not come from the same run.
    """

    stem: str
    title: str
    source: str | None = None
    notebook: Path | None = None
    results_file: Path | None = None
    results: dict[str, Any] | None = None
    figures: tuple[Path, ...] = ()
    parameters: dict[str, Any] = field(default_factory=dict)
    has_error: bool = False
    finding: str | None = None
    finding_from_notebook: bool = False
    run_mismatch: tuple[str, ...] = ()

    @property
    def page(self) -> str | None:
        """File name of the study page inside the site (``None`` when no executed notebook exists)."""
        return f"{self.stem}.html" if self.notebook is not None else None

    @property
    def headline(self) -> dict[str, Any]:
        """The JSON's ``headline`` numbers (``{}`` for older files)."""
        h = self.results.get("headline") if self.results is not None else None
        return h if isinstance(h, dict) and _is_wrapped(self.results) else {}


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


def is_p_value_key(key: str | None) -> bool:
    """True for names of p-values: containing ``p_value`` / ``p-value`` / ``pvalue`` / ``p value``
    (any case, not inside a word: ``group_value`` is no p-value), ending in ``_p``, or just ``p``."""
    return bool(key) and bool(_P_VALUE_KEY.search(str(key)))


def _group_thousands(text: str) -> str:
    return text.replace(",", "\u2009")


def _format_float(value: float) -> str:
    """4 significant digits in plain decimal notation (never e-notation)."""
    if math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    if value == 0:
        return "0"
    if abs(value) < 1e-9:
        return "≈ 0"
    if abs(value) >= 1e4:
        return _group_thousands(f"{value:,.0f}")
    decimals = max(0, 3 - math.floor(math.log10(abs(value))))
    text = f"{value:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    if abs(float(text)) >= 1e4:  # 9999.7 rounds up to 10000
        return _group_thousands(f"{value:,.0f}")
    return "0" if text in ("-0", "") else text


def plain_numbers(text: str) -> str:
    """Rewrite numbers in e-notation inside a sentence for a reader (never e-notation on the index).

    After "p =" / "p-value of" a number becomes :func:`biaskit.core.results.format_p_value`'s text
    (``p = 4.76e-05`` -> ``p < 0.001``); any other one is written out in plain decimals
    (``5.6e-16`` -> ``≈ 0``, ``1.2e-05`` -> ``0.000012``).
    """

    def fix(m: re.Match[str]) -> str:
        try:
            value = float(m.group(1).replace("−", "-"))
        except ValueError:  # pragma: no cover - the pattern only matches numbers
            return m.group(0)
        before = m.string[: m.start()]
        if _P_BEFORE.search(before) and 0.0 <= value <= 1.0:
            from biaskit.core.results import format_p_value

            shown = format_p_value(value)
        else:
            shown = _format_float(value)
        if shown.startswith(("<", "≈")) and re.search(r"(?:=|≈)\s*$", before):
            return "\0" + shown  # "p = < 0.001" reads badly: the "=" before is dropped below
        return shown

    out = _E_NUMBER.sub(fix, text)
    return re.sub(r"\s*(?:=|≈)\s*\0", " ", out).replace("\0", "")


def format_value(value: Any, key: str | None = None) -> str:
    """Format a JSON value for a reader: numbers rounded, the exact value stays in ``data-value``.

    * ``True`` / ``False`` -> ``yes`` / ``no``; ``None`` and NaN -> ``n/a``;
    * a number whose ``key`` names a p-value (:func:`is_p_value_key`) and lies in [0, 1] ->
      :func:`biaskit.core.results.format_p_value` (``"< 0.001"``, ``"0.016"``);
    * integers in full (thousands separated with a thin space when >= 10 000);
    * other floats with 4 significant digits in plain decimal notation, never e-notation
      (``4.2e-05`` reads ``0.000042``; below 1e-9 ``≈ 0``), large floats without decimals;
    * strings as they are (an empty string as ``(empty)``); empty containers as ``(none)``.

    Never returns an empty string.
    """
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float) and is_p_value_key(key):
        from biaskit.core.results import format_p_value

        if not (isinstance(value, float) and math.isnan(value)) and 0.0 <= value <= 1.0:
            return format_p_value(float(value))
    if isinstance(value, int):
        return _group_thousands(f"{value:,}") if abs(value) >= 10_000 else str(value)
    if isinstance(value, float):
        return _format_float(value)
    if isinstance(value, dict | list):
        if not value:
            return "(none)"
        return json.dumps(value, ensure_ascii=False)
    text = plain_numbers(str(value))
    return text if text.strip() else "(empty)"


def _json_exact(value: Any) -> str:
    """The exact JSON text of a value (floats keep every digit: Python's repr round-trips)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=True)


def _plain_exact(value: float) -> str:
    """Every digit of a number in positional notation (a tooltip a reader may see: no e-notation)."""
    if isinstance(value, float) and math.isfinite(value):
        import numpy as np

        return np.format_float_positional(value, trim="-")
    return _json_exact(value)


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


def _shorten(text: str, limit: int = 320) -> str:
    """Cut ``text`` at the last sentence end before ``limit`` characters (else at a word, with …)."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    end = max(cut.rfind(". "), cut.rfind("! "), cut.rfind("? "))
    if end >= 80:
        return cut[: end + 1]
    return cut[: cut.rfind(" ")].rstrip(",;:") + " …"


def notebook_finding(nb: Any) -> str | None:
    """The first point of the notebook's "What this shows" section, as one plain paragraph.

    Used on the index for JSON files written before ``save_results`` recorded a ``finding``:
    the first paragraph (or first bullet point) after a "What this shows" heading, skipping a
    note in parentheses, without markdown or TeX markup, shortened to about 320 characters.
    ``None`` when the notebook has no such section.
    """
    sources = _markdown_sources(nb)
    for i, src in enumerate(sources):
        m = _WHAT_THIS_SHOWS.search(src)
        if not m:
            continue
        text = src[m.end() :] + "\n\n" + "\n\n".join(sources[i + 1 : i + 2])
        for block in re.split(r"\n\s*\n|\n(?=\s{0,3}[-*+]\s)|\n(?=\s{0,3}\d+[.)]\s)", text):
            block = block.strip()
            if not block or _HEADING.match(block.splitlines()[0]):
                if block:
                    break  # the next section starts: no paragraph under the heading
                continue
            block = re.sub(r"^\s{0,3}(?:[-*+]|\d+[.)])\s+", "", block)
            plain = _strip_inline_markdown(" ".join(block.split()))
            plain = re.sub(r"\$+([^$]*)\$+", r"\1", plain).strip()
            if not plain or (plain.startswith("(") and plain.endswith(")")):
                continue  # "(Numbers quoted here are from ...)": a note, not the finding
            if plain.endswith(":") and len(plain) < 120:
                continue  # "In replay mode (...):" introduces the points that follow
            return _shorten(plain)
        return None
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


def _same_parameter(a: Any, b: Any) -> bool:
    """Equality of two parameter values as JSON and papermill store them (1 == 1.0, tuples == lists)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return a == b or math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same_parameter(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(_same_parameter(a[k], b[k]) for k in a)
    if isinstance(a, str) and isinstance(b, str) and a and b and a != b:
        import os.path

        return os.path.normpath(a) == os.path.normpath(b)  # "results/" == "results"
    return a == b


def _parse_time(text: Any) -> Any:
    import datetime as dt

    if not isinstance(text, str) or not text:
        return None
    try:
        t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=dt.UTC)  # papermill writes UTC


def check_same_run(nb: Any, payload: dict[str, Any], *, stem: str | None = None) -> list[str]:
    """Why a notebook and its JSON do not come from the same run (``[]`` when they agree).

    * the JSON's ``parameters`` must equal the parameters papermill injected into the notebook
      (``metadata.papermill.parameters``), compared on the keys present in both (1 == 1.0);
    * the JSON's ``created`` time must fall between papermill's ``start_time`` and
      ``end_time`` of the notebook (with :data:`RUN_TIME_SLACK_S` seconds of slack);
    * the JSON's ``notebook`` name, when given, must be ``stem``.

    A check is skipped when either side lacks what it needs (older JSON files, notebooks not
    run by papermill).
    """
    problems: list[str] = []
    if stem and isinstance(payload.get("notebook"), str) and payload["notebook"] != stem:
        problems.append(f"it was written by notebook {payload['notebook']!r}, not {stem!r}")
    nb_params = _notebook_parameters(nb)
    js_params = payload.get("parameters") if _is_wrapped(payload) else None
    if isinstance(js_params, dict):
        for key in nb_params.keys() & js_params.keys():
            if not _same_parameter(nb_params[key], js_params[key]):
                problems.append(
                    f"parameter {key} is {_parameter_text(nb_params[key])} on this page "
                    f"but {_parameter_text(js_params[key])} in the numbers file"
                )
    pm = nb.metadata.get("papermill", {}) if hasattr(nb, "metadata") else {}
    if isinstance(pm, dict) and _is_wrapped(payload):
        created = _parse_time(payload.get("created"))
        start, end = _parse_time(pm.get("start_time")), _parse_time(pm.get("end_time"))
        if created is not None and start is not None and end is not None:
            import datetime as dt

            slack = dt.timedelta(seconds=RUN_TIME_SLACK_S)
            if not (start - slack <= created <= end + slack):
                problems.append(
                    f"the numbers file was written at {payload['created']}, outside the run of this "
                    f"notebook ({pm.get('start_time')} to {pm.get('end_time')})"
                )
    return problems


def _parameter_text(value: Any) -> str:
    """A parameter value as a reader sees it (numbers without e-notation, text without quotes)."""
    if isinstance(value, str):
        return value if value else '""'
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int | float):
        return format_value(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_parameter_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_parameter_text(v)}" for k, v in value.items()) + "}"
    return str(value)


def _shown_parameters(params: dict[str, Any]) -> str:
    """``name = value, ...`` (HTML-escaped) without :data:`HIDDEN_PARAMETERS`; ``""`` when none."""
    return ", ".join(
        f"{html.escape(str(k))} = {html.escape(_parameter_text(v))}"
        for k, v in params.items()
        if k not in HIDDEN_PARAMETERS
    )


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


def _drop_stale_figures(pngs: list[Path], nb: Any, stem: str) -> list[Path]:
    """The figures written by the run of the executed notebook ``nb``; older ones are left out with a WARNING.

    A run that draws fewer figures than an earlier one (a parameter turned a plot off) leaves the
    earlier run's PNGs in the folder; they belong to another run and must not be shown as this
    one's.  The run's start is papermill's ``metadata.papermill.start_time``; without it every
    figure is kept.
    """
    start = (
        (nb.get("metadata", {}).get("papermill", {}) or {}).get("start_time")
        if isinstance(nb, dict)
        else None
    )
    if not start:
        return pngs
    try:
        t0 = _dt.datetime.fromisoformat(str(start)).timestamp()
    except ValueError:
        return pngs
    stale = [p for p in pngs if p.stat().st_mtime < t0 - 1.0]
    if stale:
        logger.warning(
            "%s: %d figure(s) predate this run of the notebook (left from an earlier run), not shown: %s",
            stem,
            len(stale),
            ", ".join(p.name for p in stale),
        )
    return [p for p in pngs if p not in stale]


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
        wrapped = results is not None and _is_wrapped(results)
        js_params = results.get("parameters") if wrapped else None
        params: dict[str, Any] = dict(js_params) if isinstance(js_params, dict) else {}
        finding = results.get("finding") if wrapped else None
        finding = (
            plain_numbers(" ".join(finding.split())) if isinstance(finding, str) and finding.strip() else None
        )
        title, source, has_error, from_nb = stem, None, False, False
        mismatch: list[str] = []
        notebook = None
        if nb_path.exists():
            nb = _read_notebook(nb_path)
            notebook = nb_path
            title = notebook_title(nb, stem)
            source = notebook_source(nb)
            source = plain_numbers(source) if source else None
            params.update(_notebook_parameters(nb))  # what papermill injected wins
            has_error = _notebook_has_error(nb)
            if finding is None:
                finding = notebook_finding(nb)
                from_nb = finding is not None
                finding = plain_numbers(finding) if finding else None
            if results is not None:
                mismatch = check_same_run(nb, results, stem=stem)
                if mismatch:
                    logger.warning(
                        "%s: the numbers file %s comes from a different run than the notebook %s: %s",
                        stem,
                        js_path.name,
                        nb_path.name,
                        "; ".join(mismatch),
                    )
            figures[stem] = _drop_stale_figures(figures[stem], nb, stem)
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
                finding=finding,
                finding_from_notebook=from_nb,
                run_mismatch=tuple(mismatch),
            )
        )
    return studies


#: Top-level keys of a file written by :func:`biaskit.report.notebook_output.save_results`.
_PAYLOAD_KEYS = frozenset({"notebook", "created", "python", "finding", "headline", "parameters", "results"})


def _is_wrapped(payload: dict[str, Any] | None) -> bool:
    """True for a ``save_results`` payload (``results`` plus run metadata), not a bare JSON object."""
    return isinstance(payload, dict) and "results" in payload and set(payload) <= _PAYLOAD_KEYS


def _headline_payload(results: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Split a ``save_results`` payload into (all numbers, run metadata).

    Files written by :func:`biaskit.report.notebook_output.save_results` hold
    ``{"notebook", "created", "python", ["finding", "headline", "parameters",] "results": {...}}``;
    any other JSON object is shown whole.
    """
    if _is_wrapped(results):
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
{%- if output | get_metadata('needs_background', 'image/png') == 'light' %}jp-needs-light-background{% endif -%}
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
{%- if output | get_metadata('needs_background', 'image/jpeg') == 'light' %}jp-needs-light-background{% endif -%}
{%- if output | get_metadata('needs_background', 'image/jpeg') == 'dark' %}jp-needs-dark-background{% endif -%}
">
</div>
{%- endblock data_jpg %}

{% block data_svg scoped -%}
{%- set alt = (output | get_metadata('alt', 'image/svg+xml')) or resources.biaskit_figure_alt -%}
<div class="jp-RenderedSVG jp-OutputArea-output {{ extra_class }}" data-mime-type="image/svg+xml">
<img src="data:image/svg+xml;base64,{{ output.data['image/svg+xml'] | text_base64 | escape_html }}" alt="{{ alt | escape_html }}">
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
    attr = html.escape(fallback, quote=True)

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
        f"<pre>{html.escape(text)}</pre></details>"
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
    * any other widget view becomes a short note for the reader;
    * every image gets alternative text: the output's ``{"image/png": {"alt": ...}}``
      metadata when the notebook gave it, else "Figure N of <title>"; images inside HTML
      outputs without ``alt`` get a fallback as well;
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
            if data and _WIDGET_VIEW in data:
                del data[_WIDGET_VIEW]
                data.pop(_WIDGET_STATE, None)
                if "text/html" not in data:
                    if _TQDM_TEXT.match(str(data.get("text/plain", ""))):
                        continue
                    data.clear()
                    data["text/html"] = note
            if data:
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
                    data["text/html"] = add_missing_alt(fragment, f"Picture in {title}")
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
            resources = context.get("resources", {})
            fallback = f"Picture in {resources.get('metadata', {}).get('name') or 'this study'}"
            return add_missing_alt(self._markdown2html(context, source), fallback)

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


def _mismatch_text(study: Study) -> str:
    """The visible explanation of a notebook / JSON mismatch (HTML)."""
    name = study.results_file.name if study.results_file is not None else f"{study.stem}.json"
    reasons = "; ".join(html.escape(r) for r in study.run_mismatch)
    return (
        f"<b>The numbers file ({html.escape(name)}) comes from a different run than this page</b>: "
        f"{reasons}. Run the notebook again (<code>make reproduce</code>) so that both come from the same run."
    )


def _banner(study: Study | None) -> str:
    if study is None:
        return ""
    out = ""
    if study.run_mismatch:
        out += f'<div class="bk-banner bk-error bk-mismatch" role="alert">{_mismatch_text(study)}</div>'
    if study.has_error:
        out += (
            '<div class="bk-banner bk-error" role="alert"><b>This notebook stopped with an error</b>: the '
            "steps after the error did not run and their results are missing.</div>"
        )
    parts = []
    if study.finding and not study.finding_from_notebook:
        parts.append(f'<span class="bk-finding"><b>In short:</b> {html.escape(study.finding)}</span>')
    if study.source:
        parts.append(f"<b>Source:</b> {html.escape(study.source)}")
    shown = _shown_parameters(study.parameters)
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
    nb = _read_notebook(notebook)
    title = notebook_title(nb, notebook.stem)
    _clean_outputs_for_static_page(nb, title)
    exporter = _make_exporter(exclude_input=exclude_input)
    resources = {
        "metadata": {"path": str(notebook.parent), "name": title},
        "biaskit_figure_alt": f"Figure of {title}",
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
        label = html.escape(row.label) if row.label.strip() else "(unnamed)"
        if row.note is not None:
            out.append(
                f'<tr><th scope="row">{label}</th><td class="bk-note">{html.escape(row.note)}</td></tr>'
            )
            continue
        key = html.escape(json.dumps([*key_prefix, *row.path], ensure_ascii=False), quote=True)
        exact = html.escape(_json_exact(row.value), quote=True)
        is_num = isinstance(row.value, int | float) and not isinstance(row.value, bool)
        cls = "bk-num" if is_num else "bk-text"
        title = f' title="exact value: {html.escape(_plain_exact(row.value), quote=True)}"' if is_num else ""
        shown = format_value(row.value, _row_key(row.path))
        out.append(
            f'<tr><th scope="row">{label}</th><td class="{cls}" data-key="{key}" data-value="{exact}"{title}>'
            f"{html.escape(shown)}</td></tr>"
        )
    if len(rows) > max_rows:
        out.append(
            f'<tr><th scope="row">…</th><td class="bk-note">{len(rows) - max_rows} more row(s): '
            "see the JSON file</td></tr>"
        )
    out.append("</tbody></table></div>" if header else "</tbody></table>")
    return "\n".join(out)


def _study_box(study: Study, *, data_href: str | None) -> str:
    """One study on the index: finding, headline numbers, source and settings, all numbers (folded), figures."""
    stem = html.escape(study.stem)
    title = html.escape(study.title)
    head = f'<a href="{html.escape(study.page)}">{title}</a>' if study.page else title
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
        parts.append(f'<p class="bk-meta bk-warn bk-mismatch" role="alert">{_mismatch_text(study)}</p>')
    # 1. the finding, in one sentence
    if study.finding and not study.finding_from_notebook:
        parts.append(f'<p class="bk-finding"><b>Finding:</b> {html.escape(study.finding)}</p>')
    elif study.finding:
        parts.append(
            f'<p class="bk-finding bk-from-notebook"><b>What this shows:</b> {html.escape(study.finding)}</p>'
        )
    else:
        what = "open the study to read what it shows" if study.page else "see its numbers below"
        parts.append(f'<p class="bk-finding bk-none">This run saved no one-sentence finding: {what}.</p>')
    parts.append('<div class="bk-cols">')
    parts.append('<div class="bk-numbers">')
    wrapped = study.results is not None and _is_wrapped(study.results)
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
        parts.append(f'<p class="bk-meta"><b>Source:</b> {html.escape(study.source)}</p>')
    shown = _shown_parameters(study.parameters)
    if shown:
        parts.append(f'<p class="bk-meta bk-settings"><b>Settings of this run:</b> {shown}</p>')
    if study.results is not None:
        numbers, meta = _headline_payload(study.results)
        rows = flatten_results(numbers)
        n = sum(1 for r in rows if r.note is None)
        parts.append(
            f'<details class="bk-all"><summary>All numbers of this run ({n} value{"s" if n != 1 else ""})'
            "</summary>"
        )
        parts.append(_headline_table(rows, key_prefix=("results",) if wrapped else ()))
        small = []
        if meta.get("created"):
            small.append(f"computed {html.escape(str(meta['created']))}")
        if data_href:
            small.append(
                f'exact values: <a href="{html.escape(data_href)}">{html.escape(Path(data_href).name)}</a>'
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
            alt = html.escape(_png_description(png) or f"Figure “{caption}” of {study.title}", quote=True)
            img = f'<img src="{_thumbnail_data_uri(png)}" alt="{alt}" loading="eager">'
            link = f'<a href="{html.escape(study.page)}">{img}</a>' if study.page else img
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
    """Command line: ``python -m biaskit.report.html_report build --results results --out results/site``."""
    parser = argparse.ArgumentParser(
        prog="python -m biaskit.report.html_report",
        description="Build the static HTML report of the executed studies.",
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
