"""The live explorers of indirect bias scores (seed 004 sections 4.1-4.2, zones A-E): plots that cannot
silently die.

**How a plot is drawn.**  Each plot is a plotly figure sent to the page as a plain output
(``application/vnd.plotly.v1+json``, :func:`plotly_bundle`) inside an ``ipywidgets.Output``.  JupyterLab
draws it with the plotly renderer that ships in plotly's own wheel (``jupyterlab-plotly``), which needs no
widget model of its own: nothing has to start, connect or restore for a plot to be drawn, so a plot
drawn once stays drawn after Run All, a reload or a reopen.  (The views were first built on plotly's
``FigureWidget``; since plotly 6 that is an ``anywidget`` whose model must load its JavaScript when the page
restores it, and on a loaded machine that start-up failed -- ``[anywidget] Failed to initialize model`` --
leaving plots that ignored their controls.)

What needs no Python runs in the page, with no kernel round trip: hover (name and score), zoom, the
legend (click an entry to hide or show it), the scatter's **Colour by** menu inside the plot (one entry per
feature of the colour categories, the colour-bar title and the plot title follow it), and the camera
button (a PNG of the plot as shown).  What needs Python -- a model, categories, projection, sort, search,
page or details -- is an ipywidgets control whose handler draws the figure again.  Every control is a
native ``<select>``, text box or button, so the views are used with the keyboard as well as the mouse (the
table's sort and details are menus, not mouse clicks on the heat-map).

**After a reload.**  A reloaded page, or the notebook opened again while its kernel runs, restores every
widget model from the kernel while each view's output waits for its model -- 2 s at most (``get_model`` of
``@jupyter-widgets/base``); the outputs then pick their models up one after another, each drawing its view
at once, so the time spent drawing the first views counts against the wait of the others, and an output
still waiting after 2 s says "Error displaying widget: model not found" although its model exists.  Two
things keep that time short.  Plotly.js is loaded before: the view is displayed after an empty, hidden
plotly figure that the page draws with its other outputs (:func:`biaskit.report.widgets.display_live`),
since evaluating plotly.js for a view's first figure took a second of a loaded page's time.  And a view is
few widget models: ONE ``Box`` in which the controls flow in rows and the lines and plots take the whole
width, two ``HTML`` widgets for all its lines (above the plot the CSS, the kernel and busy lines, status,
note and error; under it the downloads, images and the title of the details: :class:`_Lines`), the two plot
areas, and one layout and one style per kind of widget, shared by all of them -- 26 models for a table view
and 20 for a scatter view (each widget with a layout and a style of its own, in nested boxes, made 71 and
54).  Handlers never create or close a widget (a saved output never points at a model that is gone), and a
view replaced by running its cell again closes every model of it, its layouts and styles included.  If a
reload still loses a view, the output shows the static figure and the line saying what to run.

**Telling the reader when to wait or re-run.**  A handler first shows a busy line naming what it computes
("Computing the UMAP projection of 99 occupations ...") and dims the plot until the new one is drawn
(:meth:`_LiveView.busy`).  Lines that CSS shows from the notebook's kernel status say when the kernel is
busy with something else (a choice made then is applied when it is free) or not running at all (run the
cells again), and a reopened notebook without a kernel shows its static figure and a hint
(:func:`biaskit.report.widgets.display_live`).  Any error shows as one readable line inside the widget
(:func:`error_line`), never as a traceback.

**Exports.**  Every table and the current selection download as CSV from links under the plot (no
kernel needed once drawn); the button "PNG and SVG" makes both images of every plot shown (the static
matplotlib versions of the same views); "Reset view" goes back to the view as the cell first showed it.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import math
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pandas as pd

from biaskit.core.html import escape_html
from biaskit.report.explorer_data import METHODS, Axis, ScoreStore
from biaskit.report.explorer_figures import indirect_scatter_plotly

if TYPE_CHECKING:  # pragma: no cover
    from biaskit.report.explorer_views import ScatterExplorer, TableExplorer

logger = logging.getLogger(__name__)

__all__ = [
    "COLUMNS_PER_PAGE",
    "PLOTLY_MIME",
    "ROWS_PER_PAGE",
    "ScatterWidget",
    "TableWidget",
    "download_link",
    "error_line",
    "page_bounds",
    "plotly_bundle",
]

#: rows and columns of the table drawn per page: 589 traits or 99 occupations stay readable by paging
#: (and plotly's zoom), never by dropping labels
ROWS_PER_PAGE = 40
COLUMNS_PER_PAGE = 40
#: the MIME type of a plotly figure, drawn by the renderer in plotly's wheel (JupyterLab, Notebook 7, VS Code)
PLOTLY_MIME = "application/vnd.plotly.v1+json"
NONE = "(none)"
_ERROR_STYLE = "color:#b00020;font-family:system-ui,sans-serif;margin:2px 0"
_NOTE_STYLE = "color:#57606a;font-family:system-ui,sans-serif;margin:2px 0"

#: The CSS of a live view.  A busy view dims its plots and the lines that describe them (they still describe
#: the previous view until the new one is drawn).  The two kernel lines are hidden unless the notebook's
#: kernel status (JupyterLab's execution indicator in the same notebook panel) says the kernel is busy -- a
#: choice made now waits for it -- or not running -- the controls do nothing until the cells run again.
_VIEW_CSS = """<style>
.bk-explorer.bk-busy :is(.bk-plot, .bk-status, .bk-legend, .bk-downloads) \
{ opacity: 0.35; transition: opacity 0.2s; }
.bk-explorer .bk-busy-line \
{ color: #8a5a00; font-family: system-ui, sans-serif; margin: 2px 0; font-weight: 600; }
.bk-explorer .bk-kernel-line { display: none; font-family: system-ui, sans-serif; margin: 2px 0; }
.jp-NotebookPanel:has(.jp-Notebook-ExecutionIndicator[data-status='busy']) \
.bk-explorer:not(.bk-busy) .bk-kernel-busy { display: block; color: #8a5a00; }
.jp-NotebookPanel:has(.jp-Notebook-ExecutionIndicator:is([data-status='dead'], [data-status='disconnected'], \
[data-status='unknown'], [data-status='terminating'])) \
.bk-explorer .bk-kernel-gone { display: block; color: #b00020; }
.bk-explorer .bk-downloads a { margin-right: 1em; }
</style>"""
_KERNEL_LINES = (
    "<div class='bk-kernel-line bk-kernel-busy' role='status'>⏳ The notebook is busy (a cell or a "
    "computation is running): what you choose now is applied when it is free.</div>"
    "<div class='bk-kernel-line bk-kernel-gone' role='status'>⚠ No kernel is running, so the controls do "
    "nothing: run the notebook again (Run → Run All Cells) to explore.</div>"
)


def error_line(exc: BaseException) -> str:
    """One readable line for an exception shown inside a widget (seed 004 section 4.1).

    A ``KeyError`` reads as its message (not as ``"'nurse'"`` with quotes); blanks and line breaks
    collapse, so a message never becomes a traceback-like block.
    """
    msg: Any = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
    text = " ".join(str(msg).split())
    return text or type(exc).__name__


def page_bounds(n: int, page: int, size: int) -> tuple[int, int, int]:
    """``(start, stop, page)`` of page ``page`` (0-based, clamped to the pages there are) of ``n`` items."""
    if size < 1:
        raise ValueError("page size must be >= 1")
    n_pages = max(1, math.ceil(n / size))
    page = min(max(int(page), 0), n_pages - 1)
    return page * size, min(n, (page + 1) * size), page


def slug(*parts: Any) -> str:
    """A file name from labels: letters, digits, ``.``, ``_`` and ``-`` only (``"bert-base_occupation"``)."""
    text = "_".join(str(p) for p in parts if str(p))
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "explorer"


def plotly_bundle(fig: Any, *, filename: str, description: str) -> dict[str, Any]:
    """The MIME bundle of a plotly figure, drawn in the page by plotly's own renderer.

    ``application/vnd.plotly.v1+json`` holds the figure (``data``, ``layout``) and its ``config``: no plotly
    logo, a camera button that saves ``<filename>.png`` (twice the size shown); ``text/plain`` is
    ``description`` for a front end without the renderer.  Nothing here is a widget model: the page draws
    the figure from this JSON alone.
    """
    import plotly.io as pio

    spec = json.loads(pio.to_json(fig, validate=False))
    spec["config"] = {
        "displaylogo": False,
        "toImageButtonOptions": {"format": "png", "filename": slug(filename), "scale": 2},
    }
    return {PLOTLY_MIME: spec, "text/plain": description}


def download_link(data: bytes | str, filename: str, mime: str, label: str) -> str:
    """An ``<a download>`` link that saves ``data`` as ``filename`` (a ``data:`` URI: no kernel needed to
    follow it, and the keyboard reaches it like any link)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    b64 = base64.b64encode(raw).decode("ascii")
    return (
        f"<a class='bk-download' download='{escape_html(filename)}' href='data:{mime};base64,{b64}'>"
        f"{escape_html(label)}</a>"
    )


def csv_text(frame: pd.DataFrame, *, index: bool = True) -> str:
    """``frame`` as CSV text (UTF-8, comma, ``.`` decimals, full precision)."""
    return frame.to_csv(index=index, lineterminator="\n")


def _figure_images(fig: Any, name: str) -> list[str]:
    """PNG and SVG download links of a matplotlib figure (closed afterwards)."""
    import matplotlib.pyplot as plt

    links = []
    try:
        for fmt, mime in (("png", "image/png"), ("svg", "image/svg+xml")):
            buf = io.BytesIO()
            fig.savefig(buf, format=fmt, dpi=150 if fmt == "png" else None, bbox_inches="tight")
            links.append(download_link(buf.getvalue(), f"{slug(name)}.{fmt}", mime, f"{name}.{fmt}"))
    finally:
        plt.close(fig)
    return links


class _PlotArea:
    """An ``ipywidgets.Output`` showing plotly figures as plain outputs (:func:`plotly_bundle`)."""

    def __init__(self, css_class: str, layout: Any = None) -> None:
        import ipywidgets as w

        self.out = w.Output(layout=layout if layout is not None else w.Layout(width="100%"))
        self.out.add_class("bk-plot")
        self.out.add_class(css_class)
        self.bundles: list[dict[str, Any]] = []

    def show(self, bundles: Sequence[dict[str, Any]]) -> None:
        self.bundles = list(bundles)
        self.out.outputs = tuple(
            {"output_type": "display_data", "data": b, "metadata": {}} for b in self.bundles
        )

    def figures(self) -> list[dict[str, Any]]:
        """The plotly JSON of each figure shown (``data``, ``layout``, ``config``)."""
        return [b[PLOTLY_MIME] for b in self.bundles if PLOTLY_MIME in b]


class _Line:
    """One line of a :class:`_Lines`: its ``value`` is HTML, as an ``ipywidgets.HTML``'s, but it is no widget
    model of its own -- setting it redraws the one ``HTML`` widget that shows all the lines."""

    def __init__(self, lines: _Lines, css_class: str) -> None:
        self._lines = lines
        self.css_class = css_class
        self._value = ""

    @property
    def value(self) -> str:
        return self._value

    @value.setter
    def value(self, html_text: str) -> None:
        if html_text != self._value:
            self._value = html_text
            self._lines.refresh()


class _Lines:
    """Several lines of a live view (status, note, error, ... or the downloads) shown by ONE
    ``ipywidgets.HTML``: one widget model for all of them, not one each (:class:`_LiveView`).  ``fixed`` is
    HTML shown before the lines (the view's CSS and kernel lines); an empty line takes no room."""

    def __init__(self, widget: Any, fixed: str = "") -> None:
        self.widget = widget
        self.fixed = fixed
        self.lines: list[_Line] = []
        self.refresh()

    def line(self, css_class: str = "") -> _Line:
        line = _Line(self, css_class)
        self.lines.append(line)
        return line

    def refresh(self) -> None:
        parts = [self.fixed]
        for line in self.lines:
            if line.value:
                parts.append(
                    f"<div class='{line.css_class}'>{line.value}</div>" if line.css_class else line.value
                )
        self.widget.value = "".join(parts)


class _LiveView:
    """Common plumbing of the two live views: their few widget models (shared layouts and styles, one box,
    two ``HTML`` widgets for every line), the busy line, the error and note lines, the exports, the guard that
    turns any exception of a handler into one readable line inside the widget, and the display with a static
    fallback and a hint (:func:`biaskit.report.widgets.display_live`)."""

    fallback_html = ""
    error: _Line
    note: _Line
    details_title: _Line
    #: the line JupyterLab shows instead of the view when it cannot draw it (a saved notebook reopened
    #: without its kernel, or a view a reloaded page could not restore); it must work when followed
    hint = (
        "To explore: run the notebook down to this cell (Run → Run All Above Selected Cell), then this cell. "
        "The figure above is the static version of the view."
    )

    def __init__(self, lines: Sequence[str]) -> None:
        import ipywidgets as w
        from ipywidgets.widgets.widget_description import DescriptionStyle
        from ipywidgets.widgets.widget_string import HTMLStyle, TextStyle

        self._busy = False
        # the few layouts and styles every widget of the view shares: by default each control brings a
        # Layout and a Style model of its own, three models a control for a reloaded page to restore
        self.layouts = {
            "box": w.Layout(flex_flow="row wrap", width="100%"),
            "full": w.Layout(width="100%"),
            "inline": w.Layout(width="auto"),
        }
        self.styles = {
            "menu": DescriptionStyle(),
            "text": TextStyle(),
            "button": w.ButtonStyle(),
            "html": HTMLStyle(),
        }
        # two HTML widgets show every line of the view: above the plots, the CSS, the kernel lines, the busy
        # line and the state lines (``lines``: their attribute names, e.g. "status", "note", "error"); under
        # the plot, the downloads, the images and the title of the details
        self.head = _Lines(self.html(), _VIEW_CSS + _KERNEL_LINES)
        self.busy_line = self.head.line()
        for name in lines:
            setattr(self, name, self.head.line())
        self.foot = _Lines(self.html())
        self.downloads = self.foot.line("bk-downloads")
        self.images = self.foot.line("bk-downloads")
        self.details_title = self.foot.line()
        self.images_button = self.button(
            "PNG and SVG of these plots",
            icon="download",
            tooltip="Make PNG and SVG files of the plots as they are shown (download links appear below)",
        )
        self.reset = self.button(
            "Reset view", icon="undo", tooltip="Back to the view as this cell first showed it"
        )
        self.last_error = ""
        self.busy_log: list[str] = []  # what each busy line said (kept for the tests and the log)
        self.box: Any = None

    # -- the widgets of a view, few models in all ----------------------------------------------------------
    def html(self) -> Any:
        """A full-width ``ipywidgets.HTML`` with the view's shared layout and style."""
        import ipywidgets as w

        return w.HTML(layout=self.layouts["full"], style=self.styles["html"])

    def menu(self, description: str, **kwargs: Any) -> Any:
        import ipywidgets as w

        return w.Dropdown(
            description=description, layout=self.layouts["inline"], style=self.styles["menu"], **kwargs
        )

    def button(self, description: str, **kwargs: Any) -> Any:
        import ipywidgets as w

        return w.Button(
            description=description, layout=self.layouts["inline"], style=self.styles["button"], **kwargs
        )

    def plot_area(self, css_class: str) -> _PlotArea:
        return _PlotArea(css_class, self.layouts["full"])

    def _make_box(self, children: Sequence[Any], kind: str) -> None:
        """The view: ONE ``Box`` whose controls flow in rows (wrapped to the width of the page) and whose
        lines and plots take the whole width -- no nest of HBoxes, each one more model to restore."""
        import ipywidgets as w

        self.box = w.Box(list(children), layout=self.layouts["box"])
        self.box.add_class("bk-explorer")
        self.box.add_class(f"bk-{kind}-explorer")

    def widget_models(self) -> list[Any]:
        """Every widget model of the view (the box, its children, the shared layouts and styles): what a
        reloaded page restores for it."""
        found: dict[str, Any] = {}

        def walk(widget: Any) -> None:
            if widget is None or getattr(widget, "model_id", None) in found:
                return
            found[widget.model_id] = widget
            for attr in ("layout", "style"):
                walk(getattr(widget, attr, None))
            for child in getattr(widget, "children", ()):
                walk(child)

        walk(self.box)
        for shared in (*self.layouts.values(), *self.styles.values()):
            walk(shared)
        return [m for m in found.values() if m.comm is not None]

    # -- state lines --------------------------------------------------------------------------------------
    def show_error(self, exc: BaseException | str) -> None:
        """Show ``exc`` as one line in the widget (and log it at INFO, without a traceback)."""
        line = exc if isinstance(exc, str) else error_line(exc)
        self.last_error = line
        self.error.value = f"<div class='bk-error' style='{_ERROR_STYLE}'>⚠ {escape_html(line)}</div>"
        logger.info("explorer: %s", line)

    def clear_error(self) -> None:
        self.last_error = ""
        self.error.value = ""

    def busy(self, what: str) -> None:
        """Say what is being computed and dim the plots until the handler ends (:meth:`_run` clears it).

        The message leaves the kernel at once (ipykernel sends widget updates from its I/O thread), so the
        reader sees it during the computation, not after."""
        self.busy_log.append(what)
        self.busy_line.value = (
            f"<div class='bk-busy-line' role='status' aria-live='polite'>⏳ {escape_html(what)} …</div>"
        )
        if self.box is not None:
            self.box.add_class("bk-busy")

    def _idle(self) -> None:
        self.busy_line.value = ""
        if self.box is not None:
            self.box.remove_class("bk-busy")

    # -- handlers -----------------------------------------------------------------------------------------
    def _run(self, action: Callable[..., Any], *args: Any) -> None:
        """Run a handler unless another one is running (programmatic control updates), errors as a line."""
        if self._busy:
            return
        self.clear_error()
        try:
            self._guarded(action, *args)
            # a choice the reader made while the handler ran (the kernel may queue it, and the muted
            # handler would lose it) is applied now, so that the controls and the view never disagree
            resync = None if self.last_error else self._resync()
            if resync is not None:
                self._guarded(resync)
        finally:
            self._idle()

    def _guarded(self, action: Callable[..., Any], *args: Any) -> None:
        """Run ``action`` with the other handlers muted; an exception becomes the widget's error line."""
        self._busy = True
        try:
            action(*args)
        except Exception as exc:  # shown to the reader as one line; a handler must never raise
            self.show_error(exc)
        finally:
            self._busy = False

    def _resync(self) -> Callable[[], None] | None:
        """The handler that applies a choice the view does not show yet, or ``None`` (all in step)."""
        return None

    @contextmanager
    def _muted(self) -> Iterator[None]:
        busy, self._busy = self._busy, True
        try:
            yield
        finally:
            self._busy = busy

    def _set_options(self, dd: Any, options: Sequence[Any], value: Any) -> None:
        """Replace a dropdown's options and value while handlers are muted."""
        values = [o[1] if isinstance(o, tuple) else o for o in options]
        # one message to the browser: options and choice together, so it never shows (or sends back)
        # the first option for a moment while the kernel keeps another one
        with self._muted(), dd.hold_sync():
            dd.options = list(options)
            dd.value = value if value in values else (values[0] if values else None)

    def plot_areas(self) -> list[_PlotArea]:
        return []

    def figures(self) -> list[dict[str, Any]]:
        """The plotly JSON of every plot the view shows (the main plot first, then the details)."""
        return [f for area in self.plot_areas() for f in area.figures()]

    def make_images(self) -> None:
        """PNG and SVG links of every plot shown (their static matplotlib versions)."""
        self.busy("Drawing the PNG and SVG files of the plots")
        links: list[str] = []
        for fig, name in self.static_figures():
            links += _figure_images(fig, name)
        self.images.value = (
            "<div style='font-family:system-ui,sans-serif'>Images of the view as shown: "
            + " ".join(links)
            + "</div>"
        )

    def static_figures(self) -> list[tuple[Any, str]]:
        """``(matplotlib figure, file name)`` of each plot shown."""
        return []

    def _exports_changed(self) -> None:
        """The view changed: images made for the previous view are withdrawn (never a stale file)."""
        if self.images.value:
            self.images.value = (
                f"<div style='{_NOTE_STYLE}'>The view changed: press “PNG and SVG of these plots” again for "
                "images of this one.</div>"
            )

    def close(self) -> None:
        """Close the view and every widget model in it, its layouts and styles included (a view replaced by
        a new one must not stay a live model: a reloaded page would restore it for nothing)."""
        if self.box is not None:
            for model in self.widget_models():
                model.close()

    # -- display ------------------------------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        from biaskit.report.widgets import with_static_fallback

        return with_static_fallback(
            self.box,
            self.fallback_html,
            "Interactive explorer (open the notebook in Jupyter to use it)",
            **kwargs,
        )

    def _ipython_display_(self) -> None:
        """The view after a hint line shown only where it cannot be drawn: a saved notebook reopened
        without its kernel shows the static figure and the hint, never "Error displaying widget"."""
        from biaskit.report.widgets import display_live

        display_live(self._repr_mimebundle_(), self.hint, plotly=True)


def _feature_options(store: ScoreStore, model: str, target_category: str) -> list[tuple[str, str]]:
    """Feature categories with scores for (model, target category), non-sensitive first; sensitive
    ones labelled so (section 4.1.1, zone A)."""
    cats = store.feature_categories(model, target_category)
    nons = [c for c in cats if c not in store.sensitive]
    sens = [c for c in cats if c in store.sensitive]
    return [(c, c) for c in nons] + [(f"{c} (sensitive)", c) for c in sens]


def _labelled(labels: Sequence[Any]) -> list[tuple[str, Any]]:
    return [(str(x), x) for x in labels]


# =============================================================================================
# the table view
# =============================================================================================
class TableWidget(_LiveView):
    """The live table view (seed 004 section 4.1): the heat-map of one model and two categories, sorted by
    the **Sort by** and **Order** menus (the thesis's three header clicks: by score, by similarity,
    alphabetical, :class:`~biaskit.report.explorer_data.TableSorter`), filtered by the search box, paged,
    with the per-name scatterplot of one cell (**Details of** a target **with** a feature, zone C).
    Options that depend on another choice are recomputed when it changes; details are recomputed, or
    cleared with a note, when the table changes.
    """

    fallback_html = (
        "<p><i>Here the notebook shows the interactive table view (sort by any target or feature, search, "
        "and the per-name scatterplot behind each score). Open the notebook in Jupyter and run it to use the "
        "view; the figure above is its static version.</i></p>"
    )
    ORDERS = (("by score: most and least associated", 1), ("by similarity (cosine) to it", 2))
    legend: _Line
    pages: _Line

    def __init__(
        self,
        explorer: TableExplorer,
        *,
        rows_per_page: int = ROWS_PER_PAGE,
        columns_per_page: int = COLUMNS_PER_PAGE,
        hint: str | None = None,
    ) -> None:
        import ipywidgets as w

        super().__init__(("legend", "note", "error", "pages"))
        if hint:
            self.hint = hint
        self.ex = explorer
        st = explorer.store
        self.initial = explorer.snapshot()
        self.rows_per_page = rows_per_page
        self.columns_per_page = columns_per_page
        self.row_page = 0
        self.column_page = 0
        self.cell: tuple[Any, Any] | None = None
        self._view = self._page = pd.DataFrame()
        self.dd_model = self.menu("Model", options=st.models(), value=explorer.model)
        self.dd_target = self.menu("Targets")
        self.dd_feature = self.menu("Features")
        self.dd_sort = self.menu("Sort by")
        self.dd_order = self.menu("Order", options=list(self.ORDERS), value=1)
        self.search = w.Text(
            value=explorer.query,
            description="Search",
            placeholder="a target or feature",
            continuous_update=False,
            layout=self.layouts["inline"],
            style=self.styles["text"],
        )
        self.row_prev = self.button("◀ rows")
        self.row_next = self.button("rows ▶")
        self.col_prev = self.button("◀ columns")
        self.col_next = self.button("columns ▶")
        self.dd_cell_target = self.menu("Details of")
        self.dd_cell_feature = self.menu("with")
        self.plot = self.plot_area("bk-table-plot")
        self.details = self.plot_area("bk-details-plot")
        self._sync_controls()
        for dd in (self.dd_model, self.dd_target, self.dd_feature):
            dd.observe(lambda _c: self._run(self.change), names="value")
        self.search.observe(lambda _c: self._run(self.change), names="value")
        self.dd_sort.observe(lambda _c: self._run(self.sort_changed), names="value")
        self.dd_order.observe(lambda _c: self._run(self.sort_changed), names="value")
        self.dd_cell_target.observe(lambda _c: self._run(self.cell_changed), names="value")
        self.dd_cell_feature.observe(lambda _c: self._run(self.cell_changed), names="value")
        self.reset.on_click(lambda _b: self._run(self.reset_view))
        self.images_button.on_click(lambda _b: self._run(self.make_images))
        self.row_prev.on_click(lambda _b: self._run(self.turn, "row", -1))
        self.row_next.on_click(lambda _b: self._run(self.turn, "row", 1))
        self.col_prev.on_click(lambda _b: self._run(self.turn, "column", -1))
        self.col_next.on_click(lambda _b: self._run(self.turn, "column", 1))
        self._make_box(
            [
                *(self.dd_model, self.dd_target, self.dd_feature, self.dd_sort, self.dd_order, self.search),
                *(self.dd_cell_target, self.dd_cell_feature, self.reset, self.images_button),
                self.head.widget,
                *(self.row_prev, self.row_next, self.col_prev, self.col_next),
                self.plot.out,
                self.foot.widget,
                self.details.out,
            ],
            "table",
        )
        self._run(self.redraw)

    def plot_areas(self) -> list[_PlotArea]:
        return [self.plot, self.details]

    # -- the controls show the explorer's state ----------------------------------------------------------
    def _sort_options(self) -> list[tuple[str, Any]]:
        ex_, st = self.ex, self.ex.store
        table = st.table(ex_.model, ex_.target_category, ex_.feature_category, ex_.value)
        from biaskit.report.explorer_data import default_order

        opts: list[tuple[str, Any]] = [("alphabetical order", ("none", ""))]
        opts += [
            (f"target: {c}", ("column", c)) for c in default_order(list(table.columns), ex_.target_category)
        ]
        opts += [
            (f"feature: {r}", ("row", r)) for r in default_order(list(table.index), ex_.feature_category)
        ]
        s = ex_.sorter.state
        if s.phase and (s.axis, s.attribute) not in [v for _, v in opts]:
            what = "target" if s.axis == "column" else "feature"
            opts.append((f"{what}: {s.attribute} (previous table: its order is kept)", (s.axis, s.attribute)))
        return opts

    def _sync_controls(self) -> None:
        """Make every control show the explorer's state (handlers muted)."""
        ex_, st = self.ex, self.ex.store
        with self._muted():
            self._set_options(self.dd_model, st.models(), ex_.model)
            self._set_options(self.dd_target, st.target_categories(ex_.model), ex_.target_category)
            self._set_options(
                self.dd_feature, _feature_options(st, ex_.model, ex_.target_category), ex_.feature_category
            )
            s = ex_.sorter.state
            self._set_options(
                self.dd_sort, self._sort_options(), (s.axis, s.attribute) if s.phase else ("none", "")
            )
            # alphabetical: Order goes back to "by score", the first of the thesis's clicks
            self.dd_order.value = s.phase if s.phase else 1
            self.dd_order.disabled = not s.phase
            self.search.value = ex_.query

    def _sync_cell_controls(self) -> None:
        view = self._view
        t, f = self.cell if self.cell is not None else (NONE, None)
        self._set_options(self.dd_cell_target, [(NONE, NONE), *_labelled(view.columns)], t)
        self._set_options(self.dd_cell_feature, _labelled(view.index), f)
        self.dd_cell_feature.disabled = self.cell is None

    def _resync(self) -> Callable[[], None] | None:
        ex_ = self.ex
        shown = (self.dd_model.value, self.dd_target.value, self.dd_feature.value, self.search.value or "")
        if shown != (ex_.model, ex_.target_category, ex_.feature_category, ex_.query):
            return self.change
        s = ex_.sorter.state
        want = self.dd_sort.value
        if want is not None and (want[0] == "none") != (s.phase == 0):
            return self.sort_changed
        if (
            want is not None
            and want[0] != "none"
            and ((want[0], want[1], self.dd_order.value) != (s.axis, s.attribute, s.phase))
        ):
            return self.sort_changed
        return None

    # -- handlers (each runs through _run: errors become one line) ---------------------------------
    def change(self) -> None:
        """A model, category or the search text changed: recompute dependent options, then redraw."""
        st = self.ex.store
        model = self.dd_model.value
        self._set_options(self.dd_target, st.target_categories(model), self.dd_target.value)
        self._set_options(
            self.dd_feature, _feature_options(st, model, self.dd_target.value), self.dd_feature.value
        )
        self.busy(f"Drawing {model}: {self.dd_target.value} × {self.dd_feature.value}")
        self.ex.set(
            model=model,
            target_category=self.dd_target.value,
            feature_category=self.dd_feature.value,
            query=self.search.value or "",
        )
        self.row_page = self.column_page = 0
        self.redraw()

    def sort_changed(self) -> None:
        """Sort by or Order changed: the thesis's header clicks, chosen from menus (keyboard or mouse)."""
        axis, attribute = self.dd_sort.value or ("none", "")
        if axis == "none":
            self.busy("Sorting the table alphabetically")
            self.ex.sort_by(None, None, 0)
        else:
            phase = int(self.dd_order.value)
            self.busy(f"Sorting the table by {'score' if phase == 1 else 'similarity'} with '{attribute}'")
            self.ex.sort_by(axis, attribute, phase)
        view = self.ex.view()
        # the pages start again at the first, except on the chosen axis: its page shows the chosen label
        self.row_page = self.column_page = 0
        if axis != "none":
            labels = list(view.columns if axis == "column" else view.index)
            if attribute in labels:
                if axis == "column":
                    self.column_page = labels.index(attribute) // self.columns_per_page
                else:
                    self.row_page = labels.index(attribute) // self.rows_per_page
        self.redraw()

    def header_click(self, axis: Axis, attribute: Any) -> int:
        """One click on a column (target) or row (feature) header, as in the thesis (B.1/B.2): the next state
        of the three-click cycle.  Returns the phase (1 score, 2 similarity, 0 alphabetical)."""
        phase = self.ex.click(axis, attribute)
        self._sync_controls()
        self.sort_changed()
        return phase

    def reset_view(self) -> None:
        """Back to the view the cell first showed: model, categories, sort, search, first pages, no
        details."""
        self.busy("Resetting the view")
        self.ex.restore(self.initial)
        self.row_page = self.column_page = 0
        self.cell = None
        self.images.value = ""
        self._sync_controls()
        self.redraw()

    def turn(self, axis: Axis, step: int) -> None:
        """Show the previous (-1) or next (+1) page of rows or columns."""
        self.busy(f"Turning to the {'next' if step > 0 else 'previous'} page of {axis}s")
        if axis == "row":
            self.row_page += step
        else:
            self.column_page += step
        self.redraw()

    def cell_changed(self) -> None:
        t = self.dd_cell_target.value
        if t in (None, NONE):
            self.cell = None
        else:
            f = self.dd_cell_feature.value
            if f is None or f not in list(self._view.index):
                f = self._view.index[0]
            self.cell = (t, f)
        self.show_cell()

    def cell_click(self, target: Any, feature: Any) -> None:
        """The details of one cell (zone C): its per-name scatterplot."""
        self.cell = (target, feature)
        self.show_cell()

    # -- drawing --------------------------------------------------------------------------------
    def figure(self) -> Any:
        """The plotly figure of the page shown."""
        ex_ = self.ex
        o = ex_.last_order
        return ex_.plotly_figure(self._page, order=o)

    def redraw(self) -> None:
        """Redraw the table page, legend, page line and downloads; recompute (or clear) the cell details."""
        ex_ = self.ex
        view = ex_.view()
        self._view = view
        o = ex_.last_order
        r0, r1, self.row_page = page_bounds(view.shape[0], self.row_page, self.rows_per_page)
        c0, c1, self.column_page = page_bounds(view.shape[1], self.column_page, self.columns_per_page)
        self._page = view.iloc[r0:r1, c0:c1]
        name = slug(ex_.model, ex_.target_category, "x", ex_.feature_category)
        self.plot.show(
            [
                plotly_bundle(
                    self.figure(),
                    filename=f"{name}_table",
                    description=f"Table view: {ex_.model}, {ex_.target_category} × {ex_.feature_category}",
                )
            ]
        )
        title = (
            f"<b>{escape_html(ex_.model)}</b>: {escape_html(ex_.target_category)} (columns) × "
            f"{escape_html(ex_.feature_category)} (rows)."
        )
        legend = escape_html((o.legend if o is not None else "") + (f" {ex_.message}" if ex_.message else ""))
        self.legend.value = (
            f"<div class='bk-legend' style='{_NOTE_STYLE}'>{title} {legend} <i>Sort with the Sort by and "
            "Order menus; choose a cell with the Details of and with menus for its per-name scores.</i></div>"
        )
        self.pages.value = (
            f"<div class='bk-pages' style='{_NOTE_STYLE}'>Page: rows {r0 + 1}–{r1} of {view.shape[0]}, "
            f"columns {c0 + 1}–{c1} of {view.shape[1]} (the buttons below turn the pages)</div>"
        )
        self.row_prev.disabled = r0 == 0
        self.row_next.disabled = r1 >= view.shape[0]
        self.col_prev.disabled = c0 == 0
        self.col_next.disabled = c1 >= view.shape[1]
        caveat = ex_.store.notes.get(ex_.model, "")
        self.note.value = f"<div style='{_ERROR_STYLE}'>{escape_html(caveat)}</div>" if caveat else ""
        self._sync_controls()
        self._exports_changed()
        self.show_cell()

    def _downloads(self) -> None:
        ex_ = self.ex
        name = slug(ex_.model, ex_.target_category, "x", ex_.feature_category)
        full = ex_.store.table(ex_.model, ex_.target_category, ex_.feature_category, ex_.value)
        links = [
            download_link(csv_text(self._view), f"{name}_as_shown.csv", "text/csv", "table as shown (CSV)"),
            download_link(csv_text(full), f"{name}_whole_table.csv", "text/csv", "whole table (CSV)"),
        ]
        if self.cell is not None and self._cell_points is not None:
            t, f = self.cell
            links.append(
                download_link(
                    csv_text(self._cell_points, index=False),
                    f"{slug(ex_.model, t, 'x', f)}_per_name.csv",
                    "text/csv",
                    f"{t} × {f}: per-name scores (CSV)",
                )
            )
        self.downloads.value = (
            "<div style='font-family:system-ui,sans-serif'>Download: " + " ".join(links) + "</div>"
        )

    def show_cell(self) -> None:
        """The details of :attr:`cell` for the current table, or a note saying why there are none."""
        ex_ = self.ex
        self._cell_points: pd.DataFrame | None = None
        try:
            if self.cell is None:
                self.details.show([])
                self.details_title.value = (
                    f"<div style='{_NOTE_STYLE}'>No cell chosen: choose a target in “Details of” (and a "
                    "feature in “with”) for the per-name scores behind its score.</div>"
                )
                return
            target, feature = self.cell
            table = ex_.store.table(ex_.model, ex_.target_category, ex_.feature_category, ex_.value)
            if target not in table.columns or feature not in table.index:
                self.cell = None
                self.details.show([])
                self.details_title.value = (
                    f"<div style='{_NOTE_STYLE}'>Details cleared: {escape_html(target)} × "
                    f"{escape_html(feature)} is not in this table. Choose a cell in “Details of”.</div>"
                )
                return
            res = ex_.store.result(ex_.model, ex_.target_category, ex_.feature_category)
            from biaskit.report.explorer_figures import score_text

            score = score_text(table.loc[feature, target])
            head = (
                f"<div class='bk-details' style='{_NOTE_STYLE}'><b>Details: {escape_html(target)} × "
                f"{escape_html(feature)}</b> ({escape_html(ex_.model)}), score {score}."
            )
            if res is None:
                self.details.show([])
                self.details_title.value = (
                    head + " No per-name scores are stored for this table (published values), so there is no "
                    "scatterplot.</div>"
                )
                return
            pts = res.bridge_points(target, feature)
            self._cell_points = pts
            self.details_title.value = (
                head + " One dot per first name of the bridge (hover for the name).</div>"
            )
            fig = indirect_scatter_plotly(pts, str(target), str(feature), float(res.ibs.loc[target, feature]))
            self.details.show(
                [
                    plotly_bundle(
                        fig,
                        filename=f"{slug(ex_.model, target, 'x', feature)}_per_name",
                        description=f"Per-name scores of {target} × {feature}",
                    )
                ]
            )
        finally:
            self._sync_cell_controls()
            self._downloads()

    def static_figures(self) -> list[tuple[Any, str]]:
        ex_ = self.ex
        out = [(ex_.figure(), f"{slug(ex_.model, ex_.target_category, 'x', ex_.feature_category)}_table")]
        if self.cell is not None and self._cell_points is not None:
            t, f = self.cell
            out.append((ex_.cell_figure(t, f), f"{slug(ex_.model, t, 'x', f)}_per_name"))
        return out


# =============================================================================================
# the scatter view
# =============================================================================================
class ScatterWidget(_LiveView):
    """The live scatter view (seed 004 section 4.2): the targets placed by a 2-D embedding of their scores
    (hover for name and score, the in-plot **Colour by** menu for any feature of the colour categories,
    zone E), the search box (matches ringed), and **Details of** one target: its most and least associated
    features and the per-name scatterplot behind one score (zone C).  Options that depend on another
    choice are recomputed when it changes; a selection that no longer exists is cleared with a note.
    """

    fallback_html = (
        "<p><i>Here the notebook shows the interactive scatter view (choose the projection, the categories "
        "and the colour, search, and see the details of a target). Open the notebook in Jupyter and run it "
        "to use the view; the figures above are its static version.</i></p>"
    )
    NONE = NONE
    status: _Line

    def __init__(self, explorer: ScatterExplorer, *, hint: str | None = None) -> None:
        import ipywidgets as w

        super().__init__(("status", "note", "error"))
        if hint:
            self.hint = hint
        self.ex = explorer
        self.initial = explorer.snapshot()
        st = explorer.store
        self.dd_model = self.menu("Model", options=st.models(), value=explorer.model)
        self.dd_method = self.menu("Projection", options=list(METHODS), value=explorer.method)
        self.dd_target = self.menu("Targets")
        self.dd_feature = self.menu("Features")
        self.search = w.Combobox(
            value=explorer.query,
            placeholder="find a target",
            description="Search",
            ensure_option=False,
            continuous_update=False,
            layout=self.layouts["inline"],
            style=self.styles["text"],
        )
        self.dd_sel = self.menu("Details of")
        self.plot = self.plot_area("bk-scatter-plot")
        self.details = self.plot_area("bk-details-plot")
        self._sync_controls()
        for dd in (self.dd_model, self.dd_method, self.dd_target, self.dd_feature, self.search):
            dd.observe(lambda _c: self._run(self.change), names="value")
        self.dd_sel.observe(lambda _c: self._run(self.selection_changed), names="value")
        self.reset.on_click(lambda _b: self._run(self.reset_view))
        self.images_button.on_click(lambda _b: self._run(self.make_images))
        self._make_box(
            [
                *(self.dd_model, self.dd_method, self.dd_target, self.dd_feature, self.search, self.dd_sel),
                *(self.reset, self.images_button),
                self.head.widget,
                self.plot.out,
                self.foot.widget,
                self.details.out,
            ],
            "scatter",
        )
        self._run(self.redraw)

    def plot_areas(self) -> list[_PlotArea]:
        return [self.plot, self.details]

    def _labels(self) -> list[Any]:
        return list(
            self.ex.store.matrix(self.ex.model, self.ex.target_category, self.ex.feature_category).index
        )

    def _sync_controls(self) -> None:
        """Make every control show the explorer's state (called with handlers muted)."""
        ex_, st = self.ex, self.ex.store
        with self._muted():
            self._set_options(self.dd_model, st.models(), ex_.model)
            self.dd_method.value = ex_.method
            self._set_options(self.dd_target, st.target_categories(ex_.model), ex_.target_category)
            self._set_options(
                self.dd_feature, _feature_options(st, ex_.model, ex_.target_category), ex_.feature_category
            )
            labels = self._labels()
            self.search.options = [str(t) for t in labels]
            self.search.value = ex_.query
            self._set_options(
                self.dd_sel,
                [(NONE, NONE), *_labelled(labels)],
                ex_.selected if ex_.selected is not None else NONE,
            )

    def _resync(self) -> Callable[[], None] | None:
        ex_ = self.ex
        shown = (
            self.dd_model.value,
            self.dd_method.value,
            self.dd_target.value,
            self.dd_feature.value,
            self.search.value or "",
        )
        if shown != (ex_.model, ex_.method, ex_.target_category, ex_.feature_category, ex_.query):
            return self.change
        sel = None if self.dd_sel.value in (None, NONE) else self.dd_sel.value
        if sel != ex_.selected:
            return self.selection_changed
        return None

    # -- handlers ---------------------------------------------------------------------------------
    def change(self) -> None:
        """Model, projection, categories or search changed: recompute the dependent options, redraw."""
        st, ex_ = self.ex.store, self.ex
        model = self.dd_model.value
        self._set_options(self.dd_target, st.target_categories(model), self.dd_target.value)
        self._set_options(
            self.dd_feature, _feature_options(st, model, self.dd_target.value), self.dd_feature.value
        )
        method, tc, fc = self.dd_method.value, self.dd_target.value, self.dd_feature.value
        if not ex_.has_coordinates(model=model, target_category=tc, feature_category=fc, method=method):
            n = len(st.matrix(model, tc, fc))
            self.busy(
                f"Computing the {method} projection of {n} {tc} targets from their scores with "
                f"{fc} ({model}); "
                + ("UMAP can take a minute or two the first time" if method == "UMAP" else "a few seconds")
            )
        else:
            self.busy(f"Drawing the {method} projection of {model}: {tc} × {fc}")
        before = (ex_.colour_category, ex_.selected)
        ex_.set(
            model=model, target_category=tc, feature_category=fc, method=method, query=self.search.value or ""
        )
        notes = []
        if before[0] is not None and ex_.colour_category is None:
            notes.append(f"colour by {before[0]} is not available for these categories: colour removed")
        if before[1] is not None and ex_.selected is None:
            notes.append(f"{before[1]} is not a target here: details cleared")
        self._sync_controls()
        self.redraw(note="; ".join(notes))

    def selection_changed(self) -> None:
        self.select(None if self.dd_sel.value in (None, NONE) else self.dd_sel.value)

    def select(self, target: Any) -> None:
        """Select a target (the Details dropdown) and show its details."""
        self.busy("Drawing the details" if target is not None else "Clearing the details")
        self.ex.select(target)
        with self._muted():
            self.dd_sel.value = self.ex.selected if self.ex.selected is not None else NONE
        self.redraw()

    def reset_view(self) -> None:
        """Back to the view the cell first showed: model, categories, projection, search, colour, details."""
        self.busy("Resetting the view")
        self.ex.restore(self.initial)
        self.images.value = ""
        self._sync_controls()
        self.redraw()

    # -- drawing ----------------------------------------------------------------------------------
    def redraw(self, note: str = "") -> None:
        ex_ = self.ex
        self._shown: list[Any] = []
        try:
            fig = ex_.plotly_figure()
        except (ValueError, KeyError):
            self.plot.show([])
            self.details.show([])
            self.details_title.value = ""
            self.downloads.value = ""
            raise
        xy = ex_.coordinates()
        self._shown = list(xy.index)
        name = slug(ex_.model, ex_.target_category, "x", ex_.feature_category, ex_.method)
        self.plot.show(
            [
                plotly_bundle(
                    fig,
                    filename=f"{name}_scatter",
                    description=f"Scatter view: {ex_.model}, {ex_.target_category} by {ex_.method}",
                )
            ]
        )
        self.status.value = (
            f"<div class='bk-status' style='{_NOTE_STYLE}'><b>{escape_html(ex_.model)}</b>: {len(xy)} "
            f"targets ({escape_html(ex_.target_category)}) placed by {escape_html(ex_.method)} from their "
            f"scores with {escape_html(ex_.feature_category)}."
            + (
                f" Search '{escape_html(ex_.query)}': {len(ex_.matches())} match(es), ringed."
                if ex_.query.strip()
                else ""
            )
            + " <i>Colour: the Colour by menu in the plot. Details: the Details of menu.</i>"
            + (f" <b>{escape_html(note)}.</b>" if note else "")
            + "</div>"
        )
        caveat = ex_.store.notes.get(ex_.model, "")
        self.note.value = f"<div style='{_ERROR_STYLE}'>{escape_html(caveat)}</div>" if caveat else ""
        self._exports_changed()
        self.show_details()

    def show_details(self) -> None:
        """Bars of the selected target's scores and its indirect scatterplot (zone C), or a note."""
        ex_ = self.ex
        t = ex_.selected
        self._detail_points: pd.DataFrame | None = None
        self._detail_feature: Any = None
        bundles: list[dict[str, Any]] = []
        if t is None:
            self.details_title.value = (
                f"<div style='{_NOTE_STYLE}'>No target chosen: choose one in “Details of”.</div>"
            )
        else:
            bars, pts, feat, scatter = ex_.details_plotly(t)
            self._detail_points, self._detail_feature = pts, feat
            base = slug(ex_.model, t)
            bundles.append(plotly_bundle(bars, filename=f"{base}_scores", description=f"Scores of {t}"))
            if scatter is not None:
                bundles.append(
                    plotly_bundle(scatter, filename=f"{base}_x_{feat}_per_name", description=f"{t} × {feat}")
                )
            self.details_title.value = (
                f"<div class='bk-details' style='{_NOTE_STYLE}'><b>Details: {escape_html(t)}</b> "
                f"({escape_html(ex_.model)}, {escape_html(ex_.target_category)} × "
                f"{escape_html(ex_.feature_category)}).</div>"
            )
        self.details.show(bundles)
        self._downloads()

    def _downloads(self) -> None:
        ex_ = self.ex
        name = slug(ex_.model, ex_.target_category, "x", ex_.feature_category, ex_.method)
        links = [
            download_link(
                csv_text(ex_.points_frame(), index=False),
                f"{name}_points.csv",
                "text/csv",
                "points as shown, with every colour score (CSV)",
            )
        ]
        t = ex_.selected
        if t is not None:
            scores = ex_.details(t).rename("score").rename_axis(ex_.feature_category).reset_index()
            links.append(
                download_link(
                    csv_text(scores, index=False),
                    f"{slug(ex_.model, t)}_scores.csv",
                    "text/csv",
                    f"{t}: scores with every {ex_.feature_category} (CSV)",
                )
            )
            if self._detail_points is not None:
                links.append(
                    download_link(
                        csv_text(self._detail_points, index=False),
                        f"{slug(ex_.model, t, 'x', self._detail_feature)}_per_name.csv",
                        "text/csv",
                        f"{t} × {self._detail_feature}: per-name scores (CSV)",
                    )
                )
        self.downloads.value = (
            "<div style='font-family:system-ui,sans-serif'>Download: " + " ".join(links) + "</div>"
        )

    def static_figures(self) -> list[tuple[Any, str]]:
        ex_ = self.ex
        name = slug(ex_.model, ex_.target_category, "x", ex_.feature_category, ex_.method)
        out = [(ex_.figure(), f"{name}_scatter")]
        if ex_.selected is not None:
            out.append((ex_.details_figure(), f"{slug(ex_.model, ex_.selected)}_details"))
        return out
