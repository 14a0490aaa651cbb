"""The studies of a results folder, as the HTML report (:mod:`biaskit.report.html_report`) lists them.

:func:`discover_studies` pairs every executed notebook ``NN_name.ipynb`` with its numbers
``NN_name.json`` and figures ``NN_name_*.png`` into a :class:`Study`: title, source and finding read from
the notebook (:func:`notebook_title`, :func:`notebook_source`, :func:`notebook_finding`), the settings it
ran with, and whether the notebook and the JSON come from the same run (:func:`check_same_run`).
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biaskit.core.html import escape_html
from biaskit.report.html_numbers import format_value, plain_numbers

logger = logging.getLogger(__name__)

__all__ = [
    "HIDDEN_PARAMETERS",
    "RUN_TIME_SLACK_S",
    "Study",
    "check_same_run",
    "discover_studies",
    "headline_payload",
    "is_wrapped",
    "notebook_finding",
    "notebook_source",
    "notebook_title",
    "read_notebook",
    "shown_parameters",
]

#: Settings not shown to readers (machine-specific paths); still compared by the same-run check.
HIDDEN_PARAMETERS = frozenset({"results_dir", "PAPERMILL_INPUT_PATH", "PAPERMILL_OUTPUT_PATH"})
#: Slack, in seconds, when checking that a JSON was written while papermill ran its notebook
#: (``created`` is stored to the second).
RUN_TIME_SLACK_S = 2.0

_WHAT_THIS_SHOWS = re.compile(r"^\s{0,3}#{1,6}\s*what this shows\b.*$", re.IGNORECASE | re.MULTILINE)
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)
_SOURCE_LINE = re.compile(
    r"^\s*[*_]*\s*sources?\s*[*_]*\s*:\s*[*_]*\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE
)
_STUDY_STEM = re.compile(r"^\d+_")
_SEED_MENTION = re.compile(r"\bseeds?\s+0\d\d\b", re.IGNORECASE)


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
        return h if isinstance(h, dict) and is_wrapped(self.results) else {}


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


def read_notebook(path: Path) -> Any:
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
    js_params = payload.get("parameters") if is_wrapped(payload) else None
    if isinstance(js_params, dict):
        for key in nb_params.keys() & js_params.keys():
            if not _same_parameter(nb_params[key], js_params[key]):
                problems.append(
                    f"parameter {key} is {_parameter_text(nb_params[key])} on this page "
                    f"but {_parameter_text(js_params[key])} in the numbers file"
                )
    pm = nb.metadata.get("papermill", {}) if hasattr(nb, "metadata") else {}
    if isinstance(pm, dict) and is_wrapped(payload):
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


def shown_parameters(params: dict[str, Any]) -> str:
    """``name = value, ...`` (HTML-escaped) without :data:`HIDDEN_PARAMETERS`; ``""`` when none."""
    return ", ".join(
        f"{escape_html(k)} = {escape_html(_parameter_text(v))}"
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
        wrapped = results is not None and is_wrapped(results)
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
            nb = read_notebook(nb_path)
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


def is_wrapped(payload: dict[str, Any] | None) -> bool:
    """True for a ``save_results`` payload (``results`` plus run metadata), not a bare JSON object."""
    return isinstance(payload, dict) and "results" in payload and set(payload) <= _PAYLOAD_KEYS


def headline_payload(results: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Split a ``save_results`` payload into (all numbers, run metadata).

    Files written by :func:`biaskit.report.notebook_output.save_results` hold
    ``{"notebook", "created", "python", ["finding", "headline", "parameters",] "results": {...}}``;
    any other JSON object is shown whole.
    """
    if is_wrapped(results):
        meta = {k: v for k, v in results.items() if k != "results"}
        return results["results"], meta
    return results, {}
