"""The live explorers of indirect bias scores: plotly ``FigureWidget`` inside ipywidgets (seed 004
sections 4.1-4.2, zones A-E).

:class:`TableWidget` and :class:`ScatterWidget` are built by :meth:`TableExplorer.widget
<biaskit.report.explorer_views.TableExplorer.widget>` and :meth:`ScatterExplorer.widget
<biaskit.report.explorer_views.ScatterExplorer.widget>` around an explorer, whose state they show and
change.  Their controls stay true to the view (options that depend on another choice are recomputed,
details are recomputed or cleared with a note), a long table is paged (:func:`page_bounds`), and any
error shows as one readable line inside the widget (:func:`error_line`), never as a traceback.
"""

from __future__ import annotations

import html
import logging
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from biaskit.report.explorer_data import METHODS, Axis, ScoreStore, top_bottom
from biaskit.report.explorer_figures import (
    bars_plotly,
    indirect_scatter_plotly,
    scatter_plotly,
    score_text,
    table_plotly,
)

if TYPE_CHECKING:  # pragma: no cover
    from biaskit.report.explorer_views import ScatterExplorer, TableExplorer

logger = logging.getLogger(__name__)

__all__ = [
    "COLUMNS_PER_PAGE",
    "ROWS_PER_PAGE",
    "ScatterWidget",
    "TableWidget",
    "error_line",
    "page_bounds",
    "sync_figure_state",
]

#: rows and columns of the table drawn per page: 589 traits or 99 occupations stay readable by paging
#: (and plotly's zoom), never by dropping labels
ROWS_PER_PAGE = 40
COLUMNS_PER_PAGE = 40
_ERROR_STYLE = "color:#b00020;font-family:system-ui,sans-serif;margin:2px 0"
_NOTE_STYLE = "color:#57606a;font-family:system-ui,sans-serif;margin:2px 0"


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


def _restyle(fig: Any, new: Any, keys: Sequence[str]) -> None:
    """Copy ``keys`` of every trace of ``new`` onto the same trace of the ``FigureWidget`` ``fig``.

    One update per trace (never one batch over several traces: plotly's front end then receives
    per-trace lists with holes, and ``marker: undefined`` breaks its next render), and nested
    properties are replaced, not merged (a grey marker loses the colour scale it had)."""
    for old, fresh in zip(fig.data, new.data, strict=True):
        old.update({k: fresh[k] for k in keys if k in fresh}, overwrite=True)


def sync_figure_state(fig: Any) -> None:
    """Copy what a plotly ``FigureWidget`` shows into the state a reloaded page draws it from.

    plotly sends every later change (``restyle``, ``update_layout``) as a one-off message and keeps the
    synchronised ``_widget_data`` / ``_widget_layout`` at the figure it was built with; a browser reload
    asks the kernel for the widgets' state and would draw that first figure (a blank or stale plot).
    Its front end only stores new values of these two, so the copy redraws nothing in the open page.
    """
    from copy import deepcopy

    data, layout = getattr(fig, "_data", None), getattr(getattr(fig, "_layout_obj", None), "_props", None)
    if (
        data is None or layout is None or not hasattr(fig, "_widget_data")
    ):  # pragma: no cover - plotly changed
        return
    with fig.hold_sync():
        fig._widget_data = deepcopy(data)
        fig._widget_layout = deepcopy(layout)


class _LiveView:
    """Common plumbing of the two live views: the error line, the note line and the guard that turns
    any exception of a handler into one readable line inside the widget (never a traceback,
    never only in the log console)."""

    fallback_html = ""

    def __init__(self) -> None:
        import ipywidgets as w

        self._busy = False
        self.error = w.HTML(layout=w.Layout(min_height="1.4em"))
        self.note = w.HTML()
        self.last_error = ""
        self.box: Any = None

    def show_error(self, exc: BaseException | str) -> None:
        """Show ``exc`` as one line in the widget (and log it at INFO, without a traceback)."""
        line = exc if isinstance(exc, str) else error_line(exc)
        self.last_error = line
        self.error.value = f"<div class='bk-error' style='{_ERROR_STYLE}'>⚠ {html.escape(line)}</div>"
        logger.info("explorer: %s", line)

    def clear_error(self) -> None:
        self.last_error = ""
        self.error.value = ""

    def _run(self, action: Any, *args: Any) -> None:
        """Run a handler unless another one is running (programmatic control updates), errors as a line."""
        if self._busy:
            return
        self.clear_error()
        self._guarded(action, *args)
        # The kernel may take the reader's next choice while a handler still runs (a new FigureWidget
        # lets it read messages), and the muted handler would lose it: apply what the controls show
        # now, so that the controls and the view never disagree.
        resync = None if self.last_error else self._resync()
        if resync is not None:
            self._guarded(resync)
        self.sync_state()

    def figures(self) -> list[Any]:
        """The plotly figure widgets of the view: the main one and those of the details panel."""
        import plotly.graph_objects as go

        details = getattr(self, "details", None)
        children = list(details.children) if details is not None else []
        main = getattr(self, "fig", None)
        return [f for f in (main, *children) if isinstance(f, go.FigureWidget)]

    def set_details(self, children: Sequence[Any]) -> None:
        """Show ``children`` in the details panel and close the figures they replace: a replaced figure left
        open would stay a live model that a reloaded page has to restore (slowly, for nothing)."""
        keep = {id(c) for c in children}
        old = [c for c in self.details.children if id(c) not in keep]
        self.details.children = list(children)
        for c in old:
            c.close()

    def close(self) -> None:
        """Close the view and every widget in it (a view replaced by a new one must not stay a live model)."""

        def close_all(widget: Any) -> None:
            for child in getattr(widget, "children", ()):
                close_all(child)
            widget.close()

        if self.box is not None:
            close_all(self.box)

    def sync_state(self) -> None:
        """Keep every figure's restorable state equal to what it shows (:func:`sync_figure_state`), so that a
        reloaded page draws the view as it is, not as it was first built."""
        for fig in self.figures():
            sync_figure_state(fig)

    def _guarded(self, action: Any, *args: Any) -> None:
        """Run ``action`` with the other handlers muted; an exception becomes the widget's error line."""
        self._busy = True
        try:
            action(*args)
        except Exception as exc:  # shown to the reader as one line; a handler must never raise
            self.show_error(exc)
        finally:
            self._busy = False

    def _resync(self) -> Any:
        """The handler that applies a choice the view does not show yet, or ``None`` (all in step)."""
        return None

    def _set_options(self, dd: Any, options: Sequence[Any], value: Any) -> None:
        """Replace a dropdown's options and value while handlers are muted (``_busy``)."""
        values = [o[1] if isinstance(o, tuple) else o for o in options]
        # one message to the browser: options and choice together, so it never shows (or sends back)
        # the first option for a moment while the kernel keeps another one
        with dd.hold_sync():
            dd.options = list(options)
            dd.value = value if value in values else (values[0] if values else None)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        from biaskit.report.widgets import with_static_fallback

        return with_static_fallback(
            self.box,
            self.fallback_html,
            "Interactive explorer (open the notebook in Jupyter to use it)",
            **kwargs,
        )

    #: the line JupyterLab shows instead of the view when it cannot draw it (a saved notebook reopened)
    hint = (
        "Run this cell to explore: the interactive view needs the running notebook; "
        "the figure above is its static version."
    )

    def _ipython_display_(self) -> None:
        """The view after a hint line shown only where it cannot be drawn: a saved notebook reopened
        without running the cell shows the static figure and the hint, never "Error displaying widget"."""
        from biaskit.report.widgets import display_live

        display_live(self._repr_mimebundle_(), self.hint)


def _feature_options(store: ScoreStore, model: str, target_category: str) -> list[tuple[str, str]]:
    """Feature categories with scores for (model, target category), non-sensitive first; sensitive
    ones labelled so (section 4.1.1, zone A)."""
    cats = store.feature_categories(model, target_category)
    nons = [c for c in cats if c not in store.sensitive]
    sens = [c for c in cats if c in store.sensitive]
    return [(c, c) for c in nons] + [(f"{c} (sensitive)", c) for c in sens]


class TableWidget(_LiveView):
    """The live table view (seed 004 section 4.1): a plotly ``FigureWidget`` heat-map with clickable
    header strips (three-click sort, :class:`TableSorter`), clickable cells (the indirect scatterplot of
    the cell, zone C), paging of rows and columns, the search box, and controls that always show the
    state of the view: the Features options are recomputed whenever the model or Targets change, and
    the cell details are recomputed (or cleared with a note) when the table changes.
    """

    fallback_html = (
        "<p><i>Here the notebook shows the interactive table view (click a column or row header to sort, "
        "a cell for its per-name scatterplot). Open the notebook in Jupyter and run this cell to use it; the "
        "figure above is its static version.</i></p>"
    )

    def __init__(
        self,
        explorer: TableExplorer,
        *,
        rows_per_page: int = ROWS_PER_PAGE,
        columns_per_page: int = COLUMNS_PER_PAGE,
    ) -> None:
        import ipywidgets as w
        import plotly.graph_objects as go

        super().__init__()
        self.ex = explorer
        st = explorer.store
        self.rows_per_page = rows_per_page
        self.columns_per_page = columns_per_page
        self.row_page = 0
        self.column_page = 0
        self.cell: tuple[Any, Any] | None = None
        self._view = self._page = pd.DataFrame()
        wide = w.Layout(width="auto")
        self.dd_model = w.Dropdown(
            options=st.models(), value=explorer.model, description="Model", layout=wide
        )
        self.dd_target = w.Dropdown(description="Targets", layout=wide)
        self.dd_feature = w.Dropdown(description="Features", layout=wide)
        self._set_options(self.dd_target, st.target_categories(explorer.model), explorer.target_category)
        self._set_options(
            self.dd_feature,
            _feature_options(st, explorer.model, explorer.target_category),
            explorer.feature_category,
        )
        self.search = w.Text(
            value=explorer.query,
            description="Search",
            placeholder="a target or feature",
            continuous_update=False,
        )
        self.reset = w.Button(description="Alphabetical order", icon="sort-alpha-asc", layout=wide)
        self.row_prev = w.Button(description="◀ rows", layout=wide)
        self.row_next = w.Button(description="rows ▶", layout=wide)
        self.col_prev = w.Button(description="◀ columns", layout=wide)
        self.col_next = w.Button(description="columns ▶", layout=wide)
        self.pages = w.HTML()
        self.legend = w.HTML()
        self.fig = go.FigureWidget(table_plotly(pd.DataFrame([[0.0]], index=["-"], columns=["-"])))
        self.fig.data[0].on_click(self._clicked_column)
        self.fig.data[1].on_click(self._clicked_row)
        self.fig.data[2].on_click(self._clicked_cell)
        self.details_title = w.HTML()
        self.details = w.Box(layout=w.Layout(width="100%"))
        self.dd_model.observe(lambda _c: self._run(self.change), names="value")
        self.dd_target.observe(lambda _c: self._run(self.change), names="value")
        self.dd_feature.observe(lambda _c: self._run(self.change), names="value")
        self.search.observe(lambda _c: self._run(self.change), names="value")
        self.reset.on_click(lambda _b: self._run(self.reset_order))
        self.row_prev.on_click(lambda _b: self._run(self.turn, "row", -1))
        self.row_next.on_click(lambda _b: self._run(self.turn, "row", 1))
        self.col_prev.on_click(lambda _b: self._run(self.turn, "column", -1))
        self.col_next.on_click(lambda _b: self._run(self.turn, "column", 1))
        row = w.Layout(flex_flow="row wrap", width="100%")
        self.box = w.VBox(
            [
                w.HBox([self.dd_model, self.dd_target, self.dd_feature], layout=row),
                w.HBox([self.search, self.reset], layout=row),
                self.legend,
                self.note,
                self.error,
                w.HBox([self.row_prev, self.row_next, self.col_prev, self.col_next, self.pages], layout=row),
                self.fig,
                self.details_title,
                self.details,
            ],
            layout=w.Layout(width="100%"),
        )
        self.box.add_class("bk-table-explorer")
        self._run(self.redraw)

    def _resync(self) -> Any:
        ex_ = self.ex
        shown = (self.dd_model.value, self.dd_target.value, self.dd_feature.value, self.search.value or "")
        return (
            self.change
            if shown != (ex_.model, ex_.target_category, ex_.feature_category, ex_.query)
            else None
        )

    # -- handlers (each runs through _run: errors become one line) ---------------------------------
    def change(self) -> None:
        """A dropdown or the search box changed: recompute dependent options, then redraw."""
        st = self.ex.store
        model = self.dd_model.value
        self._set_options(self.dd_target, st.target_categories(model), self.dd_target.value)
        self._set_options(
            self.dd_feature, _feature_options(st, model, self.dd_target.value), self.dd_feature.value
        )
        self.ex.set(
            model=model,
            target_category=self.dd_target.value,
            feature_category=self.dd_feature.value,
            query=self.search.value or "",
        )
        self.row_page = self.column_page = 0
        self.redraw()

    def header_click(self, axis: Axis, attribute: Any) -> int:
        """A click on a column (target) or row (feature) header: the three-click sort (B.1/B.2)."""
        phase = self.ex.click(axis, attribute)
        view = self.ex.view()
        # the pages start again at the first, except on the clicked axis: its page shows the clicked header
        self.row_page = self.column_page = 0
        labels = list(view.columns if axis == "column" else view.index)
        if attribute in labels:
            if axis == "column":
                self.column_page = labels.index(attribute) // self.columns_per_page
            else:
                self.row_page = labels.index(attribute) // self.rows_per_page
        self.redraw()
        return phase

    def reset_order(self) -> None:
        self.ex.sorter.reset()
        self.redraw()

    def turn(self, axis: Axis, step: int) -> None:
        """Show the previous (-1) or next (+1) page of rows or columns."""
        if axis == "row":
            self.row_page += step
        else:
            self.column_page += step
        self.redraw()

    def cell_click(self, target: Any, feature: Any) -> None:
        """A click on a cell: its indirect scatterplot (zone C)."""
        self.cell = (target, feature)
        self.show_cell()

    # -- plotly click callbacks -----------------------------------------------------------------
    @staticmethod
    def _label(labels: Sequence[Any], position: Any) -> Any:
        """The label drawn at a clicked position (cells sit at 0, 1, 2, ... of the page shown)."""
        i = round(float(position))
        if not 0 <= i < len(labels):
            raise KeyError(f"nothing is drawn at position {position} any more; click again")
        return labels[i]

    def _clicked_column(self, _trace: Any, points: Any, _state: Any) -> None:
        if points.xs:
            self._run(lambda: self.header_click("column", self._label(self._page.columns, points.xs[0])))

    def _clicked_row(self, _trace: Any, points: Any, _state: Any) -> None:
        if points.ys:
            self._run(lambda: self.header_click("row", self._label(self._page.index, points.ys[0])))

    def _clicked_cell(self, _trace: Any, points: Any, _state: Any) -> None:
        if points.xs and points.ys:
            self._run(
                lambda: self.cell_click(
                    self._label(self._page.columns, points.xs[0]), self._label(self._page.index, points.ys[0])
                )
            )

    # -- drawing --------------------------------------------------------------------------------
    def redraw(self) -> None:
        """Redraw the table page, legend and page line; recompute (or clear) the cell details."""
        ex_ = self.ex
        view = ex_.view()
        self._view = view
        o = ex_.last_order
        r0, r1, self.row_page = page_bounds(view.shape[0], self.row_page, self.rows_per_page)
        c0, c1, self.column_page = page_bounds(view.shape[1], self.column_page, self.columns_per_page)
        page = view.iloc[r0:r1, c0:c1]
        self._page = page
        new = table_plotly(
            page,
            value_label="indirect bias score" if ex_.value == "ibs" else ex_.value,
            sorted_axis=o.axis if o is not None and o.phase else None,
            attribute=o.attribute if o is not None else None,
        )
        keys = ("x", "y", "z", "text", "texttemplate", "colorbar")
        _restyle(self.fig, new, keys)
        self.fig.update_layout(
            height=new.layout.height,
            yaxis_domain=new.layout.yaxis.domain,
            yaxis2_domain=new.layout.yaxis2.domain,
            yaxis3_domain=new.layout.yaxis3.domain,
            xaxis2_tickvals=new.layout.xaxis2.tickvals,
            xaxis2_ticktext=new.layout.xaxis2.ticktext,
            yaxis3_tickvals=new.layout.yaxis3.tickvals,
            yaxis3_ticktext=new.layout.yaxis3.ticktext,
            # a new page starts unzoomed
            xaxis_range=new.layout.xaxis.range,
            xaxis2_range=new.layout.xaxis2.range,
            yaxis_range=new.layout.yaxis.range,
            yaxis3_range=new.layout.yaxis3.range,
        )
        title = f"<b>{html.escape(str(ex_.model))}</b>: {html.escape(ex_.target_category)} (columns) × {html.escape(ex_.feature_category)} (rows)."
        legend = html.escape((o.legend if o is not None else "") + (f" {ex_.message}" if ex_.message else ""))
        self.legend.value = (
            f"<div style='{_NOTE_STYLE}'>{title} {legend} <i>Click a column or row header to sort "
            "(1st click: by score, 2nd: by similarity, 3rd: alphabetical); click a cell for its details.</i></div>"
        )
        self.pages.value = (
            f"<span class='bk-pages' style='{_NOTE_STYLE}'>rows {r0 + 1}–{r1} of {view.shape[0]}, "
            f"columns {c0 + 1}–{c1} of {view.shape[1]}</span>"
        )
        self.row_prev.disabled = r0 == 0
        self.row_next.disabled = r1 >= view.shape[0]
        self.col_prev.disabled = c0 == 0
        self.col_next.disabled = c1 >= view.shape[1]
        caveat = ex_.store.notes.get(ex_.model, "")
        self.note.value = f"<div style='{_ERROR_STYLE}'>{html.escape(caveat)}</div>" if caveat else ""
        if self.cell is not None:
            self.show_cell()

    def show_cell(self) -> None:
        """The details of :attr:`cell` for the current table, or a note saying why there are none."""
        import plotly.graph_objects as go

        ex_ = self.ex
        self.set_details([])
        if self.cell is None:
            self.details_title.value = ""
            return
        target, feature = self.cell
        table = ex_.store.table(ex_.model, ex_.target_category, ex_.feature_category, ex_.value)
        if target not in table.columns or feature not in table.index:
            self.cell = None
            self.details_title.value = (
                f"<div style='{_NOTE_STYLE}'>Details cleared: {html.escape(str(target))} × "
                f"{html.escape(str(feature))} is not in this table. Click a cell to see its details.</div>"
            )
            return
        res = ex_.store.result(ex_.model, ex_.target_category, ex_.feature_category)
        score = score_text(table.loc[feature, target])
        head = (
            f"<div class='bk-details' style='{_NOTE_STYLE}'><b>Details: {html.escape(str(target))} × "
            f"{html.escape(str(feature))}</b> ({html.escape(str(ex_.model))}), score {score}."
        )
        if res is None:
            self.details_title.value = (
                head
                + " No per-name scores are stored for this table (published values), so there is no scatterplot.</div>"
            )
            return
        pts = res.bridge_points(target, feature)
        self.details_title.value = head + " One dot per first name of the bridge (hover for the name).</div>"
        self.set_details(
            [
                go.FigureWidget(
                    indirect_scatter_plotly(
                        pts, str(target), str(feature), float(res.ibs.loc[target, feature])
                    )
                )
            ]
        )


class ScatterWidget(_LiveView):
    """The live scatter view (seed 004 section 4.2): a plotly ``FigureWidget`` of the embedded targets
    (click a point for its details, hover for its name and score), the colour controls of zone E (the
    Attribute options follow the colour category, and the first attribute is chosen at once), the
    search box, and controls that show the explorer's state from the start.  Options that depend on
    another choice are recomputed when it changes; a selection that no longer exists is cleared with a
    note, never left as a stale panel.
    """

    fallback_html = (
        "<p><i>Here the notebook shows the interactive scatter view (click a point for its details, choose "
        "the projection, the colour and the categories). Open the notebook in Jupyter and run this cell to use "
        "it; the figures above are its static version.</i></p>"
    )
    NONE = "(none)"

    def __init__(self, explorer: ScatterExplorer) -> None:
        import ipywidgets as w
        import plotly.graph_objects as go

        super().__init__()
        self.ex = explorer
        st = explorer.store
        wide = w.Layout(width="auto")
        self.dd_model = w.Dropdown(
            options=st.models(), value=explorer.model, description="Model", layout=wide
        )
        self.dd_method = w.Dropdown(
            options=list(METHODS), value=explorer.method, description="Projection", layout=wide
        )
        self.dd_target = w.Dropdown(description="Targets", layout=wide)
        self.dd_feature = w.Dropdown(description="Features", layout=wide)
        self.dd_ccat = w.Dropdown(description="Colour by", layout=wide)
        self.dd_cattr = w.Dropdown(description="Attribute", layout=wide)
        self.search = w.Combobox(
            value=explorer.query,
            placeholder="find a target",
            description="Search",
            ensure_option=False,
            layout=wide,
        )
        self.dd_sel = w.Dropdown(description="Details of", layout=wide)
        self.status = w.HTML()
        self.fig = go.FigureWidget(scatter_plotly(pd.DataFrame({"x": [0.0], "y": [0.0]}, index=["-"])))
        self.fig.data[0].on_click(self._clicked_point)
        self.details_title = w.HTML()
        self.details = w.Box(layout=w.Layout(width="100%", flex_flow="row wrap"))
        self._sync_controls()
        for dd in (self.dd_model, self.dd_method, self.dd_target, self.dd_feature, self.search):
            dd.observe(lambda _c: self._run(self.change), names="value")
        self.dd_ccat.observe(lambda _c: self._run(self.colour_changed), names="value")
        self.dd_cattr.observe(lambda _c: self._run(self.colour_changed), names="value")
        self.dd_sel.observe(lambda _c: self._run(self.selection_changed), names="value")
        row = w.Layout(flex_flow="row wrap", width="100%")
        self.box = w.VBox(
            [
                w.HBox([self.dd_model, self.dd_method], layout=row),
                w.HBox([self.dd_target, self.dd_feature], layout=row),
                w.HBox([self.dd_ccat, self.dd_cattr], layout=row),
                w.HBox([self.search, self.dd_sel], layout=row),
                self.status,
                self.note,
                self.error,
                self.fig,
                self.details_title,
                self.details,
            ],
            layout=w.Layout(width="100%"),
        )
        self.box.add_class("bk-scatter-explorer")
        self._run(self.redraw)

    def _labels(self) -> list[Any]:
        return list(
            self.ex.store.matrix(self.ex.model, self.ex.target_category, self.ex.feature_category).index
        )

    def _sync_controls(self) -> None:
        """Make every control show the explorer's state (called with handlers muted)."""
        ex_, st = self.ex, self.ex.store
        busy, self._busy = self._busy, True
        try:
            self.dd_model.value = ex_.model
            self.dd_method.value = ex_.method
            self._set_options(self.dd_target, st.target_categories(ex_.model), ex_.target_category)
            self._set_options(
                self.dd_feature, _feature_options(st, ex_.model, ex_.target_category), ex_.feature_category
            )
            self._set_options(
                self.dd_ccat, [self.NONE, *ex_.colour_options()], ex_.colour_category or self.NONE
            )
            if ex_.colour_category is None:
                self._set_options(self.dd_cattr, [], None)
            else:
                feats = list(st.matrix(ex_.model, ex_.target_category, ex_.colour_category).columns)
                self._set_options(self.dd_cattr, feats, ex_.colour_attribute)
            labels = [str(t) for t in self._labels()]
            self.search.options = labels
            self.search.value = ex_.query
            self._set_options(
                self.dd_sel, [self.NONE, *labels], str(ex_.selected) if ex_.selected else self.NONE
            )
        finally:
            self._busy = busy

    def _resync(self) -> Any:
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
        cat = None if self.dd_ccat.value in (None, self.NONE) else self.dd_ccat.value
        attr = self.dd_cattr.value if cat is not None else None
        if (cat, attr) != (ex_.colour_category, ex_.colour_attribute):
            return self.colour_changed
        sel = None if self.dd_sel.value in (None, self.NONE) else self.dd_sel.value
        if sel != (None if ex_.selected is None else str(ex_.selected)):
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
        before = (ex_.colour_category, ex_.selected)
        ex_.set(
            model=model,
            target_category=self.dd_target.value,
            feature_category=self.dd_feature.value,
            method=self.dd_method.value,
            query=self.search.value or "",
        )
        notes = []
        if before[0] is not None and ex_.colour_category is None:
            notes.append(f"colour by {before[0]} is not available for these categories: colour removed")
        if before[1] is not None and ex_.selected is None:
            notes.append(f"{before[1]} is not a target here: details cleared")
        self._sync_controls()
        self.redraw(note="; ".join(notes))

    def colour_changed(self) -> None:
        """Colour category or attribute changed; a new category fills Attribute with its first word."""
        ex_ = self.ex
        cat = self.dd_ccat.value
        if cat in (None, self.NONE):
            ex_.colour_by(None, None)
            self._set_options(self.dd_cattr, [], None)
        else:
            feats = list(ex_.store.matrix(ex_.model, ex_.target_category, cat).columns)
            keep = self.dd_cattr.value if self.dd_cattr.value in feats else feats[0]
            self._set_options(self.dd_cattr, feats, keep)
            ex_.colour_by(cat, self.dd_cattr.value)
        self.redraw()

    def selection_changed(self) -> None:
        self.select(None if self.dd_sel.value in (None, self.NONE) else self.dd_sel.value)

    def select(self, target: Any) -> None:
        """Select a target (a click on its point, or the Details dropdown) and show its details."""
        labels = {str(t): t for t in self._labels()}
        self.ex.select(None if target is None else labels.get(str(target), target))
        busy, self._busy = self._busy, True
        try:
            self.dd_sel.value = str(self.ex.selected) if self.ex.selected is not None else self.NONE
        finally:
            self._busy = busy
        self.redraw()

    def _clicked_point(self, _trace: Any, points: Any, _state: Any) -> None:
        if points.point_inds:
            i = int(points.point_inds[0])
            self._run(lambda: self.select(self._shown[i]))

    # -- drawing ----------------------------------------------------------------------------------
    def redraw(self, note: str = "") -> None:
        ex_ = self.ex
        self._shown: list[Any] = []
        try:
            xy = ex_.coordinates()
        except (ValueError, KeyError):
            for tr in self.fig.data:
                tr.update(x=[], y=[])
            self.set_details([])
            self.details_title.value = ""
            raise
        self._shown = list(xy.index)
        col = ex_.colours()
        label = f"IBS with '{ex_.colour_attribute}'" if col is not None else ""
        new = scatter_plotly(
            xy, colours=col, colour_label=label, hits=ex_.matches(), selected=ex_.selected, method=ex_.method
        )
        _restyle(self.fig, new, ("x", "y", "text", "hovertext", "customdata", "hovertemplate", "marker"))
        self.fig.update_layout(
            xaxis_title_text=new.layout.xaxis.title.text,
            yaxis_title_text=new.layout.yaxis.title.text,
            xaxis_autorange=True,
            yaxis_autorange=True,
        )
        colour = (
            f"coloured by the score with '{ex_.colour_attribute}' ({ex_.colour_category})"
            if col is not None
            else "not coloured (choose Colour by)"
        )
        self.status.value = (
            f"<div style='{_NOTE_STYLE}'><b>{html.escape(str(ex_.model))}</b>: {len(xy)} "
            f"targets ({html.escape(ex_.target_category)}) placed by {ex_.method} from their scores with "
            f"{html.escape(ex_.feature_category)}, {html.escape(colour)}."
            + (
                f" Search '{html.escape(ex_.query)}': {len(ex_.matches())} match(es), ringed."
                if ex_.query.strip()
                else ""
            )
            + " <i>Click a point for its details.</i>"
            + (f" <b>{html.escape(note)}.</b>" if note else "")
            + "</div>"
        )
        caveat = ex_.store.notes.get(ex_.model, "")
        self.note.value = f"<div style='{_ERROR_STYLE}'>{html.escape(caveat)}</div>" if caveat else ""
        self.show_details()

    def show_details(self) -> None:
        """Bars of the selected target's scores and its indirect scatterplot (zone C), or nothing."""
        import plotly.graph_objects as go

        ex_ = self.ex
        t = ex_.selected
        if t is None:
            self.set_details([])
            self.details_title.value = f"<div style='{_NOTE_STYLE}'>No target selected: click a point.</div>"
            return
        s = ex_.details(t).dropna()
        shown = s.loc[top_bottom(list(s.index), 10)]
        children = [
            go.FigureWidget(bars_plotly(shown, f"{t}: most and least associated {ex_.feature_category}"))
        ]
        res = ex_.store.result(ex_.model, ex_.target_category, ex_.feature_category)
        feat = (
            ex_.colour_attribute
            if (ex_.colour_category == ex_.feature_category and ex_.colour_attribute)
            else (shown.index[0] if len(shown) else None)
        )
        if res is not None and feat is not None:
            pts = res.bridge_points(t, feat)
            children.append(
                go.FigureWidget(indirect_scatter_plotly(pts, str(t), str(feat), float(res.ibs.loc[t, feat])))
            )
        for c in children:
            c.layout.width = 460
        self.set_details(children)
        self.details_title.value = (
            f"<div class='bk-details' style='{_NOTE_STYLE}'><b>Details: {html.escape(str(t))}</b> "
            f"({html.escape(str(ex_.model))}, {html.escape(ex_.target_category)} × {html.escape(ex_.feature_category)}).</div>"
        )
