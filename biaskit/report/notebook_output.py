"""Where a notebook run writes its headline numbers and figures, and how they are written.

Every study notebook ends with :func:`save_results` so that reruns can be compared file
by file (``<name>.json``) and the HTML report (:mod:`biaskit.report.html_report`) can show the
headline numbers next to the figures.

**One run, one folder.**  A run never overwrites another run's results.  The folder is
chosen by :func:`resolve_results_dir`, in this order:

1. the notebook's ``results_dir`` parameter, when it is not empty;
2. the folder of the executed notebook, when papermill was asked to inject it
   (``papermill --inject-output-path`` defines ``PAPERMILL_OUTPUT_PATH``): the JSON and
   the figures then sit beside the output notebook (``make reproduce`` does this, so its
   outputs land in ``results/``; ``python -m biaskit notebook`` does it too);
3. otherwise a new folder ``<results root>/runs/<name>-<UTC time>-<process id>/`` (an
   interactive run in JupyterLab, or papermill without ``--inject-output-path``).

The results root is ``results/`` at the repository root (``BIASKIT_RESULTS_DIR``
overrides it).  The JSON also records the parameters of the run, so the report can check
that a notebook and its JSON come from the same run.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import math
import os
import platform
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from biaskit.core.html import escape_html, frame_html, markdown_code
from biaskit.core.io import atomic_path, atomic_write_text
from biaskit.core.paths import REPO_ROOT, resolve_user_path
from biaskit.core.paths import results_dir as results_root
from biaskit.core.results import TestResult, format_p_value

__all__ = [
    "NotebookNoteHandler",
    "ReaderTable",
    "describe_folder",
    "figure_alt_text",
    "format_table",
    "label_points",
    "note_html",
    "p_phrase",
    "plural",
    "resolve_results_dir",
    "save_figure",
    "save_results",
    "setup_notebook_logging",
    "shown_path",
    "table_records",
    "to_jsonable",
    "validation_summary",
    "vectors_label",
    "where_saved",
]


def to_jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays, TestResults, tuples, paths and NaN to plain JSON values."""
    if isinstance(obj, TestResult):
        return obj.to_dict()
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "to_dict") and callable(obj.to_dict) and not isinstance(obj, type):
        try:
            return to_jsonable(obj.to_dict())
        except TypeError:
            pass
    try:
        import numpy as np

        if isinstance(obj, np.ndarray):
            return to_jsonable(obj.tolist())
        if isinstance(obj, np.generic):
            obj = obj.item()
    except ImportError:  # pragma: no cover
        pass
    if isinstance(obj, float) and (math.isnan(obj) or math.isinf(obj)):
        return None
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return str(obj)


def table_records(df: pd.DataFrame, columns: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """The rows of a table as ``{column: value}`` dicts for :func:`save_results`, missing values as ``None``.

    ``columns`` picks the columns, in that order; a listed column that the table lacks is left out,
    so that one list serves tables with and without an optional column.  The index is not kept
    (pass ``df.reset_index()`` to keep it).  ``table_records(pd.DataFrame({"d": [1.5, nan]}))`` is
    ``[{"d": 1.5}, {"d": None}]``.
    """
    if columns is not None:
        df = df[[c for c in columns if c in df]]
    return df.replace({np.nan: None}).to_dict("records")


def resolve_results_dir(
    name: str,
    results_dir: str | os.PathLike[str] | None = "",
    *,
    output_path: str | os.PathLike[str] | None = None,
) -> Path:
    """The folder where this run of notebook ``name`` writes its JSON and figures (created).

    ``results_dir`` (the notebook parameter) wins when it is not empty (a relative folder starts from the
    folder the user started in, :func:`biaskit.core.paths.resolve_user_path`); else the folder of
    ``output_path`` (papermill's injected ``PAPERMILL_OUTPUT_PATH``); else a new folder
    ``<results root>/runs/<name>-<UTC time>-<pid>/`` that no other run uses.  See the
    module docstring.
    """
    if not name or any(c in name for c in "/\\"):
        raise ValueError(f"name must be a plain notebook name such as '03_weat', got {name!r}")
    if results_dir:
        out = resolve_user_path(results_dir)  # relative: from the folder the user started in
    elif output_path:
        out = Path(output_path).expanduser().resolve().parent
    else:
        stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%d-%H%M%S")
        out = results_root() / "runs" / f"{name}-{stamp}-{os.getpid()}"
        k = 1
        while out.exists():  # two runs of the same notebook in the same second and process
            k += 1
            out = out.with_name(f"{name}-{stamp}-{os.getpid()}-{k}")
    out.mkdir(parents=True, exist_ok=True)
    return out


def save_results(
    name: str,
    results: Mapping[str, Any],
    *,
    out_dir: str | os.PathLike[str] | None = None,
    finding: str | None = None,
    headline: Mapping[str, Any] | None = None,
    parameters: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``<out_dir>/<name>.json`` with the run's numbers and metadata; return its path.

    Parameters
    ----------
    results:
        Every number worth keeping (exact values; the report rounds for display).
    out_dir:
        The run's folder, from :func:`resolve_results_dir` (``None``: the results root,
        kept for scripts; notebooks always pass their run folder).
    finding:
        One plain sentence saying what this run found; the report's index leads the
        study's box with it.
    headline:
        The two or three numbers a reader should see first, as ``{label: value}``
        (labels in plain words, e.g. ``{"WEAT 1 effect size d": 1.54}``).
    parameters:
        The notebook's parameters for this run (what papermill injected, or the defaults).
    """
    out = Path(out_dir) if out_dir is not None else results_root()
    out.mkdir(parents=True, exist_ok=True)
    payload: dict[str, Any] = {
        "notebook": name,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
    }
    if finding is not None:
        payload["finding"] = str(finding)
    if headline is not None:
        payload["headline"] = to_jsonable(dict(headline))
    if parameters is not None:
        payload["parameters"] = to_jsonable(dict(parameters))
    payload["results"] = to_jsonable(results)
    path = out / f"{name}.json"
    # atomic, under a unique temporary name: a reader (the report, a rerun) sees the old file or the whole
    # new one, and a full disk raises DiskFullError naming the file and leaves no partial JSON
    atomic_write_text(path, json.dumps(payload, indent=2, ensure_ascii=False))
    return path


def figure_alt_text(fig: Any) -> str:
    """A plain description of a matplotlib figure built from its titles and axis labels.

    Used as the alternative text of a figure when the notebook gives none (``save_figure``).
    """
    parts: list[str] = []
    sup = getattr(fig, "_suptitle", None)
    if sup is not None and sup.get_text().strip():
        parts.append(sup.get_text().strip())
    for ax in getattr(fig, "axes", []):
        title, x, y = (t.strip() for t in (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()))
        axes = f"{y} against {x}" if x and y else (x or y)
        if title or axes:
            parts.append(f"{title} ({axes})" if title and axes else title or axes)
    return "Figure: " + "; ".join(dict.fromkeys(parts)) if parts else "Figure"


def _in_ipython_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return False
    ip = get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


def save_figure(
    fig: Any,
    name: str,
    *,
    out_dir: str | os.PathLike[str] | None = None,
    dpi: int = 120,
    alt: str | None = None,
    show: bool | None = None,
) -> Path:
    """Save a matplotlib figure as ``<out_dir>/<name>.png`` (tight bounding box); return its path.

    ``alt`` is a plain-language description of the figure (alternative text for readers who
    cannot see it; default: :func:`figure_alt_text`).  It is written into the PNG's metadata
    (``Description``).  In a Jupyter kernel (``show=None``) the saved PNG is also displayed
    with the alternative text in the output's metadata (``{"image/png": {"alt": ...}}``, which
    the HTML report turns into the ``alt`` attribute) and the figure is closed so that it is
    not shown a second time by the inline backend.
    """
    out = Path(out_dir) if out_dir is not None else results_root()
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.png"
    text = alt if alt else figure_alt_text(fig)
    with atomic_path(path) as tmp:  # a whole PNG or none (a full disk raises DiskFullError naming path)
        fig.savefig(tmp, format="png", dpi=dpi, bbox_inches="tight", metadata={"Description": text})
    if show is None:
        show = _in_ipython_kernel()
    if show:
        import matplotlib.pyplot as plt
        from IPython.display import Image, display

        display(Image(data=path.read_bytes(), format="png", metadata={"alt": text}))
        plt.close(fig)
    return path


def label_points(
    ax: Any,
    x: Iterable[float],
    y: Iterable[float],
    labels: Iterable[str],
    *,
    fontsize: float = 8,
    **text_kwargs: Any,
) -> list[Any]:
    """Write ``labels[i]`` beside the point ``(x[i], y[i])`` of ``ax`` so that no two labels overlap.

    Scatter plots of words or topics put many points close together; text placed at each point then
    prints over its neighbours ("élnegocio").  The labels are placed with adjustText (Flavell,
    https://github.com/Phlya/adjustText), which pushes them apart and away from the points and draws
    a thin grey line from a moved label to its point; the axis limits grow where a label needs room
    at the edge.  Call it after the points are drawn.  Returns the text artists.
    """
    from adjustText import adjust_text

    xs, ys = [float(v) for v in x], [float(v) for v in y]
    names = [str(v) for v in labels]
    if not len(xs) == len(ys) == len(names):
        raise ValueError(f"label_points: {len(xs)} x, {len(ys)} y and {len(names)} labels")
    texts = [
        ax.text(a, b, t, fontsize=fontsize, **text_kwargs) for a, b, t in zip(xs, ys, names, strict=True)
    ]
    if texts:
        adjust_text(
            texts,
            x=xs,
            y=ys,
            ax=ax,
            expand_axes=True,  # widen the limits rather than press a label against the frame
            arrowprops={"arrowstyle": "-", "color": "grey", "lw": 0.5},
        )
    return texts


# ----------------------------------------------------------------------------- notebook display
_NOTE_STYLE = {
    logging.WARNING: ("Note", "#fff8c5", "#d4a72c"),
    logging.ERROR: ("Problem", "#ffebe9", "#cf222e"),
    logging.INFO: ("Info", "#ddf4ff", "#54aeff"),
}


def _note_style(level: int) -> tuple[str, str, str]:
    """(label, background, border colour) of a note for a log ``level``."""
    return _NOTE_STYLE[max(lv for lv in _NOTE_STYLE if lv <= max(level, logging.INFO))]


def note_html(message: str, level: int = logging.WARNING) -> str:
    """A log message as a short labelled box: "Note" (WARNING), "Problem" (ERROR and above), "Info".

    The one rendering of a note, in notebooks (:class:`NotebookNoteHandler`) and on the report's
    pages (stderr log lines, :mod:`biaskit.report.html_report`): the text is the message itself, escaped,
    with line breaks kept; the style is inline so that it needs no page CSS.
    """
    label, bg, border = _note_style(level)
    cls = "bk-note bk-note-error" if level >= logging.ERROR else "bk-note"
    body = escape_html(message).replace("\n", "<br>")
    return (
        f'<div class="{cls}" role="note" style="background:{bg};border-left:4px solid {border};'
        f'padding:6px 10px;margin:6px 0;font-size:0.92em"><b>{label}:</b> {body}</div>'
    )


class NotebookNoteHandler(logging.Handler):
    """Shows a log record in a notebook as a short labelled box instead of a raw log line.

    ``WARNING`` records become a yellow "Note" box, ``ERROR`` a red "Problem" box; the text is
    the message itself (no logger name, no level prefix).  The same message is shown only once
    per kernel, however often it is logged (re-running a cell does not repeat it).
    """

    def __init__(self, level: int = logging.WARNING) -> None:
        super().__init__(level)
        self._seen: set[str] = set()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
        except Exception:  # pragma: no cover - a broken format string must not kill the notebook
            self.handleError(record)
            return
        if msg in self._seen:
            return
        self._seen.add(msg)
        box = note_html(msg, record.levelno)
        if _in_ipython_kernel():
            from IPython.display import HTML, display

            display(HTML(box))
        else:  # pragma: no cover - scripts get a plain line
            print(f"{_note_style(record.levelno)[0]}: {msg}")


def setup_notebook_logging(level: int = logging.WARNING) -> logging.Handler:
    """Route biaskit's log messages of ``level`` and above to :class:`NotebookNoteHandler`.

    Call once at the top of a notebook.  Replaces any handler an earlier call installed and
    stops the messages from also reaching the root logger (which would print them a second
    time, as raw ``WARNING:biaskit...`` lines on stderr).  Returns the handler.
    """
    log = logging.getLogger("biaskit")
    for h in list(log.handlers):
        if isinstance(h, NotebookNoteHandler):
            log.removeHandler(h)
    handler = NotebookNoteHandler(level)
    log.addHandler(handler)
    if log.level == logging.NOTSET or log.level > level:
        log.setLevel(level)
    log.propagate = False
    return handler


class ReaderTable(pd.DataFrame):
    """What :func:`format_table` returns: a DataFrame of display text that a notebook shows as a reader should
    see it.

    Its HTML (what JupyterLab and the HTML report show) keeps every cell whole, where pandas would cut
    text at ``display.max_colwidth`` (50 characters: *"more than the 640 pairs available (0% with all..."*),
    and leaves out the row numbers 0, 1, 2 ... of a table made with ``index=False``.  Rows are still cut
    at ``display.max_rows`` as pandas does.  In every other respect it is a DataFrame.
    """

    _metadata: ClassVar[list[str]] = ["show_index"]

    def __init__(self, *args: Any, show_index: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.show_index = show_index

    @property
    def _constructor(self) -> type[ReaderTable]:
        return ReaderTable

    def _repr_html_(self) -> str:
        with pd.option_context("display.max_colwidth", None):
            return frame_html(
                self,
                index=getattr(self, "show_index", True),
                max_rows=pd.get_option("display.max_rows"),
                show_dimensions=len(self) > pd.get_option("display.max_rows"),
                notebook=True,
            )


def format_table(
    df: pd.DataFrame,
    *,
    p_columns: Iterable[str] = (),
    digits: int | Mapping[str, int] = 3,
    missing: str = "—",
    index: bool = True,
) -> ReaderTable:
    """A copy of ``df`` with every cell as display text: for tables a reader sees, not for computing.

    ``p_columns`` are shown with :func:`biaskit.core.results.format_p_value` (``"< 0.001"``); other
    floats with ``digits`` decimals (an int, or ``{column: digits}``; thousands separated);
    integers as integers; missing values (NaN / None) as ``missing``.  Say in the prose or in a
    note column *why* a value is missing: this function only prints the placeholder.
    The result is a :class:`ReaderTable`: shown with every cell whole and, with ``index=False``,
    without row numbers.
    """
    p_cols = set(p_columns)
    unknown = p_cols - set(df.columns)
    if unknown:
        raise KeyError(f"p_columns not in the table: {sorted(unknown)}")

    def fmt(col: str, v: Any) -> str:
        if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
            return missing
        if col in p_cols:
            return format_p_value(float(v))
        if isinstance(v, bool):
            return "yes" if v else "no"
        if isinstance(v, int) or (hasattr(v, "dtype") and getattr(v.dtype, "kind", "") in "iu"):
            return f"{int(v):,}"
        if isinstance(v, float) or (hasattr(v, "dtype") and getattr(v.dtype, "kind", "") == "f"):
            d = digits.get(col, 3) if isinstance(digits, Mapping) else digits
            return f"{float(v):,.{d}f}"
        return str(v)

    out = ReaderTable(
        {c: [fmt(str(c), v) for v in df[c].tolist()] for c in df.columns},
        index=df.index if index else None,
        show_index=index,
    )
    if not index:
        out = out.reset_index(drop=True)  # keeps show_index (pandas copies _metadata)
    return out


# ----------------------------------------------------------------------------- sentences for readers
def plural(n: int, singular: str, plural_form: str | None = None) -> str:
    """``"1 pair"``, ``"1,503 pairs"``, ``"0 pairs"``: a count with its noun, thousands separated."""
    word = singular if n == 1 else (plural_form or singular + "s")
    return f"{n:,} {word}"


def p_phrase(p: float | None, *, digits: int = 3, missing: str = "p not available") -> str:
    """A p-value inside a sentence: ``"p < 0.001"``, ``"p = 0.028"``; ``missing`` for None/NaN.

    Never ``"p = < 0.001"``.  ``missing`` is the words for a p-value that was not computed
    (``"p not available"``; e.g. ``missing="p not computed"``).
    """
    if p is None or math.isnan(float(p)):
        return missing
    text = format_p_value(float(p), digits=digits)
    return f"p {text}" if text.startswith("<") else f"p = {text}"


def describe_folder(path: str | os.PathLike[str]) -> str:
    """A folder as a reader should see it: never a ``PosixPath(...)`` repr, never a long temporary path.

    Inside the repository: the path relative to its root, with a trailing slash (``"results/"``,
    ``"results/runs/03_weat-20250101-120000-42/"``).  Elsewhere: the folder's own name
    (``"my-run/"``): the sentence around it says that the folder is beside the executed notebook.
    """
    p = Path(path).expanduser().resolve()
    try:
        rel = p.relative_to(REPO_ROOT.resolve())
    except ValueError:
        return f"{p.name}/" if p.name else str(p)
    text = rel.as_posix()
    return "./" if text in ("", ".") else f"{text}/"


def shown_path(path: str | os.PathLike[str]) -> str:
    """A path in full, as a reader can find it: relative to the repository root when inside it, else absolute.

    ``"results/runs/07_pll_distributions-20250101-120000-42"`` for a run folder in the repository,
    ``"/tmp/my-run"`` for one outside it (no trailing slash).  Unlike :func:`describe_folder`, a
    path outside the repository keeps every part: use it in a sentence that does not say where the
    folder is ("... were written to the folder `/tmp/my-run`.").
    """
    p = Path(path).resolve()
    try:
        return p.relative_to(REPO_ROOT.resolve()).as_posix()
    except ValueError:
        return p.as_posix()


def where_saved(json_path: str | os.PathLike[str], *, figures: bool = True) -> str:
    """One sentence saying where a run wrote its results, for the end of a notebook.

    ``where_saved(save_results(...))`` gives e.g. "The numbers of this run are saved in
    `03_weat.json`, next to its figures, in the folder `results/`." (Markdown: the file and folder
    names are code spans, :func:`biaskit.core.html.markdown_code`, so that no name can become markup.)
    """
    p = Path(json_path)
    beside = ", next to its figures," if figures else ""
    return (
        f"The numbers of this run are saved in {markdown_code(p.name)}{beside} in the folder "
        f"{markdown_code(describe_folder(p.parent))}."
    )


def _issue_noun(group: pd.DataFrame) -> tuple[str, str]:
    cells = "column" in group and group["column"].notna().all() and bool(len(group))
    return ("cell", "cells") if cells else ("row", "rows")


def validation_summary(
    report: Any,
    *,
    n: int | None = None,
    unit: str = "rows",
    verb: str = "loaded",
    label: str = "Data check",
    max_places: int = 6,
) -> str:
    """A validation report in one line a reader can follow.

    ``report`` is a :class:`biaskit.data.datasets.ValidationReport` (anything with an ``issues``
    table of ``row``, ``line``, ``column``, ``reason``, ``action``), or ``None`` when the
    loader ran no check.  ``n`` is the number of ``unit`` loaded (default: the report's
    ``n_loaded`` when it has one).  Example::

        Data check: 1,503 pairs loaded; 7 cells repaired (cp1252 read as latin-1: lines 70, 304, 320, 348).

    ``verb`` and ``label`` change the wording for other checks, e.g. ``validation_summary(result.report,
    n=60, unit="pairs", verb="given", label="Scoring check (cp)")``.  At most ``max_places`` line
    (or row) numbers are listed per kind of problem.
    """
    head = label
    if n is None and report is not None and isinstance(getattr(report, "n_loaded", None), int):
        n = report.n_loaded
    loaded = f"{n:,} {unit} {verb}" if n is not None else ""
    if report is None:
        return f"{head}: {loaded or 'data ' + verb}; no validation report was produced."
    issues = getattr(report, "issues", None)
    if issues is None or not len(issues):
        return f"{head}: {loaded + '; ' if loaded else ''}no problems found."
    parts = []
    for (action, reason), grp in issues.groupby(["action", "reason"], sort=False, dropna=False):
        one, many = _issue_noun(grp)
        use_lines = "line" in grp and grp["line"].notna().all()
        where = grp["line"] if use_lines else grp["row"]
        places = sorted({int(x) for x in where.dropna()})
        shown = ", ".join(str(x) for x in places[:max_places])
        more = f" and {len(places) - max_places:,} more" if len(places) > max_places else ""
        place_word = (
            ("line " if len(places) == 1 else "lines ")
            if use_lines
            else ("row " if len(places) == 1 else "rows ")
        )
        loc = f": {place_word}{shown}{more}" if places else ""
        count = len(grp)
        reason = str(reason)
        if reason.endswith(f"({action})"):  # "... (repaired)" repaired: say it once
            reason = reason[: -len(f"({action})")].rstrip()
        parts.append(f"{count:,} {one if count == 1 else many} {action} ({reason}{loc})")
    return f"{head}: {loaded + '; ' if loaded else ''}" + "; ".join(parts) + "."


#: Short reader-facing names of the offline reference vectors
#: (:data:`biaskit.embeddings.vectors.REFERENCE_VECTORS`).
_VECTOR_LABELS = {
    "word2vec-googlenews-wefe": "word2vec GoogleNews (13,000-word subset)",
    "word2vec-googlenews-bolukbasi": "word2vec GoogleNews (Bolukbasi et al.'s 26,000-word subset)",
    "glove-6b-50d": "GloVe 6B (Wikipedia and Gigaword, 50 dimensions)",
}


def vectors_label(name: str | os.PathLike[str]) -> str:
    """A plain name for a vectors parameter: a known reference name, else the file's name.

    ``vectors_label("glove-6b-50d")`` is "GloVe 6B (Wikipedia and Gigaword, 50 dimensions)";
    ``vectors_label("~/data/embeddings-m-model.vec")`` is "embeddings-m-model.vec".
    """
    text = str(name)
    if text in _VECTOR_LABELS:
        return _VECTOR_LABELS[text]
    return Path(text).name or text
