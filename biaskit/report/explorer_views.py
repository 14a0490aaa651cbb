"""The two explorers of indirect bias scores (seed 004, chapter 4): :class:`TableExplorer` (section 4.1)
and :class:`ScatterExplorer` (section 4.2).

Each keeps the state of its view (model, categories, search text, sort, colour, selection), applies the
rules of :mod:`biaskit.report.explorer_data` and draws the static matplotlib figure, the offline HTML page
(:mod:`biaskit.report.explorer_figures`) or the live widget (:mod:`biaskit.report.explorer_widgets`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pandas as pd

from biaskit.report.explorer_data import (
    METHODS,
    Axis,
    ScoreStore,
    TableOrder,
    TableSorter,
    colour_options,
    embed_targets,
    filter_order,
    search_labels,
    top_bottom,
)
from biaskit.report.explorer_figures import (
    draw_heatmap,
    indirect_scatter,
    puor_cmap,
    puor_hex,
    scatter_plotly,
    table_plotly,
)
from biaskit.report.explorer_widgets import ScatterWidget, TableWidget

logger = logging.getLogger(__name__)

__all__ = ["ScatterExplorer", "TableExplorer"]


class _Explorer:
    """Shared selection state of both views."""

    def __init__(
        self, store: ScoreStore, model: str | None, target_category: str | None, feature_category: str | None
    ) -> None:
        self.store = store
        self.model = model or store.models()[0]
        self.target_category = target_category or store.target_categories(self.model)[0]
        cats = store.feature_categories(self.model, self.target_category)
        self.feature_category = feature_category or cats[0]
        self.query = ""
        self.live: Any = None  # the live view of :meth:`widget`, kept alive while the explorer is
        self._check()

    def _check(self) -> None:
        if not self.store.has(self.model, self.target_category, self.feature_category):
            raise KeyError(
                f"no scores for model={self.model!r}, {self.target_category!r} x {self.feature_category!r}; "
                f"feature categories: {self.store.feature_categories(self.model, self.target_category)}"
            )

    def set(
        self,
        *,
        model: str | None = None,
        target_category: str | None = None,
        feature_category: str | None = None,
        query: str | None = None,
    ) -> None:
        """Change the model, a category or the search text (what the dropdowns do)."""
        old = (self.model, self.target_category, self.feature_category)
        if model is not None:
            self.model = model
        if target_category is not None:
            self.target_category = target_category
        if feature_category is not None:
            self.feature_category = feature_category
        if query is not None:
            self.query = query
        try:
            self._check()
        except KeyError:
            self.model, self.target_category, self.feature_category = old
            raise

    def save_static(self, name: str, **kwargs: Any) -> Path:
        """Render :meth:`figure` and save it with :func:`biaskit.report.notebook_output.save_figure`."""
        import matplotlib.pyplot as plt

        from biaskit.report.notebook_output import save_figure

        fig = self.figure(**kwargs)  # type: ignore[attr-defined]
        try:
            return save_figure(fig, name)
        finally:
            plt.close(fig)


# =============================================================================================
# the table view
# =============================================================================================
class TableExplorer(_Explorer):
    """The table-based view (seed 004 section 4.1): heat-map with the three-click sort, search and drill-down.

    ``click("column", "engineer")`` / ``click("row", "ambitious")`` are the header clicks;
    ``set(model=..., target_category=..., feature_category=..., query=...)`` the dropdowns and the
    search box; :meth:`view` returns the table as displayed; :meth:`widget` builds the live ipywidgets
    interface; :meth:`figure` the static image.
    """

    def __init__(
        self,
        store: ScoreStore,
        *,
        model: str | None = None,
        target_category: str | None = None,
        feature_category: str | None = None,
        value: str = "ibs",
        top_k: int = 5,
        max_rows: int = 40,
        truncate_score_axis_in_cosine: bool = False,
    ) -> None:
        super().__init__(store, model, target_category, feature_category)
        if value not in store.scores.columns:
            raise KeyError(f"no {value!r} column in the scores; columns: {list(store.scores.columns)}")
        self.value = value
        self.max_rows = max_rows
        self.sorter = TableSorter(top_k, truncate_score_axis_in_cosine=truncate_score_axis_in_cosine)
        self.message = ""
        self.last_order: TableOrder | None = None

    def set(self, **kwargs: Any) -> None:  # type: ignore[override]
        """Change model / categories / search text and re-apply the sort (what a re-render does)."""
        super().set(**kwargs)
        self.order()

    def click(self, axis: Axis, attribute: Any) -> int:
        """A header click; returns the phase (1 score sort, 2 cosine sort, 0 reset)."""
        table = self.store.table(self.model, self.target_category, self.feature_category, self.value)
        labels = table.columns if axis == "column" else table.index
        if attribute not in labels:
            raise KeyError(
                f"{attribute!r} is not a {'target (column)' if axis == 'column' else 'feature (row)'} of the table"
            )
        return self.sorter.click(axis, attribute)

    def order(self) -> TableOrder:
        table = self.store.table(self.model, self.target_category, self.feature_category, self.value)
        order = self.sorter.order(
            table,
            model=self.model,
            target_category=self.target_category,
            feature_category=self.feature_category,
        )
        order, self.message = filter_order(order, self.query)
        self.last_order = order
        return order

    def view(self) -> pd.DataFrame:
        """The table exactly as shown: features (rows) x targets (columns) in display order."""
        table = self.store.table(self.model, self.target_category, self.feature_category, self.value)
        o = self.order()
        return table.loc[o.rows, o.columns]

    def figure(self, *, max_rows: int | None = None, annotate: bool | None = None) -> Any:
        import matplotlib.pyplot as plt

        data = self.view()
        limit = max_rows or self.max_rows
        more = max(0, data.shape[0] - limit)
        data = data.iloc[:limit]
        h = max(2.5, 0.28 * data.shape[0] + 2.0)
        w = max(4.0, 0.38 * data.shape[1] + 3.0)
        fig, ax = plt.subplots(figsize=(min(w, 22), min(h, 18)))
        im = draw_heatmap(ax, data, annotate=annotate)
        fig.colorbar(
            im, ax=ax, shrink=0.6, label="indirect bias score" if self.value == "ibs" else self.value
        )
        title = f"{self.model}: {self.target_category} (columns) x {self.feature_category} (rows)"
        ax.set_title(title, fontsize=10)
        note = (
            self.last_order.legend
            + (f" {self.message}" if self.message else "")
            + (f" ({more} more rows not drawn.)" if more else "")
        )
        fig.text(0.01, 0.005, note, fontsize=7, ha="left", va="bottom", wrap=True)
        fig.tight_layout(rect=(0, 0.04, 1, 1))
        return fig

    def cell_figure(self, target: str, feature: str) -> Any:
        """The indirect scatterplot of one cell (zone C): one dot per bridge name."""
        import matplotlib.pyplot as plt

        res = self.store.result(self.model, self.target_category, self.feature_category)
        if res is None:
            raise KeyError("no per-name scores stored for this table (only published or summary scores)")
        pts = res.bridge_points(target, feature)
        fig, ax = plt.subplots(figsize=(4.5, 3.6))
        indirect_scatter(ax, pts, target, feature, float(res.ibs.loc[target, feature]))
        fig.tight_layout()
        return fig

    def interactive_html(self) -> str:
        """The table as it is shown, whole (every row and column, zoomable), as one self-contained HTML
        page with plotly.js inline: it works offline, e.g. beside the static report.
        Hover shows target, feature and score; the clicks need the live widget."""
        o = self.order()
        fig = table_plotly(self.view(), sorted_axis=o.axis if o.phase else None, attribute=o.attribute)
        return str(fig.to_html(include_plotlyjs=True, full_html=True))

    def widget(self) -> TableWidget:
        """The live interface (zones A-E): a :class:`TableWidget` (plotly ``FigureWidget`` heat-map with
        clickable headers and cells, paging, search); display it by leaving it last in a cell.  The explorer
        keeps it (:attr:`live`): a widget that is garbage-collected closes, and a reloaded page could not
        draw it again from the kernel."""
        if self.live is not None:  # the cell run again: the old view goes (a reload would restore it too)
            self.live.close()
        self.live = TableWidget(self)
        return self.live


# =============================================================================================
# the scatter view
# =============================================================================================
class ScatterExplorer(_Explorer):
    """The scatterplot-based view (seed 004 section 4.2): targets embedded by their IBS vectors.

    ``set(...)`` changes model / categories / search; ``colour_by(category, attribute)`` the colour
    scale (zone E); ``select(target)`` (or a pick event on a point) the target whose details are shown.
    """

    def __init__(
        self,
        store: ScoreStore,
        *,
        model: str | None = None,
        target_category: str | None = None,
        feature_category: str | None = None,
        method: str = "UMAP",
        random_state: int = 33,
    ) -> None:
        super().__init__(store, model, target_category, feature_category)
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}")
        self.method = method
        self.random_state = random_state
        self.colour_category: str | None = None
        self.colour_attribute: str | None = None
        self.selected: str | None = None
        self._coords: dict[tuple[str, str, str, str], pd.DataFrame] = {}
        self._labels: list[str] = []

    def set(self, *, method: str | None = None, **kwargs: Any) -> None:  # type: ignore[override]
        if method is not None:
            if method not in METHODS:
                raise ValueError(f"method must be one of {METHODS}")
            self.method = method
        super().set(**kwargs)
        if self.colour_category is not None and self.colour_category not in self.colour_options():
            logger.info("colour category %r is not available here; colour removed", self.colour_category)
            self.colour_category = self.colour_attribute = None
        if self.selected is not None:  # a selection the new plot lacks is cleared, never left stale
            targets = self.store.matrix(self.model, self.target_category, self.feature_category).index
            if self.selected not in targets:
                logger.info("%r is not a target of this plot; selection cleared", self.selected)
                self.selected = None

    def colour_options(self) -> list[str]:
        return colour_options(self.store, self.model, self.target_category, self.feature_category)

    def colour_by(self, category: str | None, attribute: str | None) -> None:
        """Colour the targets by IBS with ``attribute`` of ``category`` (``None``: grey)."""
        if category is None:
            self.colour_category = self.colour_attribute = None
            return
        if category not in self.colour_options():
            raise ValueError(f"cannot colour by {category!r} here; options: {self.colour_options()}")
        feats = self.store.matrix(self.model, self.target_category, category).columns
        if attribute not in feats:
            raise KeyError(f"{attribute!r} is not a feature of {category!r}")
        self.colour_category, self.colour_attribute = category, attribute

    def coordinates(self) -> pd.DataFrame:
        key = (self.model, self.target_category, self.feature_category, self.method)
        if key not in self._coords:
            m = self.store.matrix(self.model, self.target_category, self.feature_category)
            self._coords[key] = embed_targets(m, self.method, random_state=self.random_state)
        return self._coords[key]

    def colours(self) -> pd.Series | None:
        if self.colour_category is None:
            return None
        m = self.store.matrix(self.model, self.target_category, self.colour_category)
        return m[self.colour_attribute].reindex(self.coordinates().index)

    def matches(self) -> list[str]:
        return search_labels(list(self.coordinates().index), self.query) if self.query.strip() else []

    def select(self, target: str | None) -> None:
        if target is not None and target not in self.coordinates().index:
            raise KeyError(f"{target!r} is not a target of this plot")
        self.selected = target

    def on_pick(self, event: Any) -> str | None:
        """Matplotlib ``pick_event`` handler: select the first picked point; returns its label."""
        ind = list(getattr(event, "ind", []) or [])
        if not ind or not self._labels:
            return None
        self.select(self._labels[int(ind[0])])
        return self.selected

    def figure(self, *, connect_pick: bool = False, annotate_all: bool | None = None) -> Any:
        import matplotlib.pyplot as plt
        from matplotlib.colors import Normalize

        xy = self.coordinates()
        self._labels = list(xy.index)
        fig, ax = plt.subplots(figsize=(7, 5.5))
        col = self.colours()
        if col is None:
            sc = ax.scatter(
                xy["x"], xy["y"], s=30, color="#9e9e9e", picker=True, edgecolor="white", linewidth=0.5
            )
        else:
            sc = ax.scatter(
                xy["x"],
                xy["y"],
                s=30,
                c=col.to_numpy(dtype=float),
                cmap=puor_cmap(),
                norm=Normalize(-1, 1),
                picker=True,
                edgecolor="#555555",
                linewidth=0.4,
                plotnonfinite=True,
            )
            fig.colorbar(
                sc, ax=ax, shrink=0.8, label=f"IBS with '{self.colour_attribute}' ({self.colour_category})"
            )
        hits = self.matches()
        if annotate_all is None:
            annotate_all = len(xy) <= 40
        for t in xy.index:
            if annotate_all or t in hits or t == self.selected:
                ax.annotate(
                    str(t),
                    (xy.loc[t, "x"], xy.loc[t, "y"]),
                    fontsize=7,
                    fontweight="bold" if t in hits or t == self.selected else "normal",
                )
        if hits:
            ax.scatter(
                xy.loc[hits, "x"],
                xy.loc[hits, "y"],
                s=120,
                facecolor="none",
                edgecolor="#e66101",
                linewidth=1.5,
                label=f"search: {self.query!r}",
            )
            ax.legend(loc="best", fontsize=8)
        ax.set_xlabel(f"{self.method} dimension 1")
        ax.set_ylabel(f"{self.method} dimension 2")
        ax.set_title(
            f"{self.model}: {self.target_category} embedded by their IBS with {self.feature_category}",
            fontsize=10,
        )
        fig.tight_layout()
        if connect_pick:
            fig.canvas.mpl_connect("pick_event", self.on_pick)
        return fig

    def details(self, target: str | None = None) -> pd.Series:
        """IBS of ``target`` (default: the selected one) with every feature of the category, decreasing."""
        t = target or self.selected
        if t is None:
            raise ValueError("no target selected")
        m = self.store.matrix(self.model, self.target_category, self.feature_category)
        return m.loc[t].astype(float).sort_values(ascending=False)

    def details_figure(self, target: str | None = None, *, k: int = 10) -> Any:
        """Bar plot of IBS(target, features) (k most and k least associated) and, when per-name scores are
        stored, the indirect scatterplot for the colour attribute (or the top feature)."""
        import matplotlib.pyplot as plt

        t = target or self.selected
        s = self.details(t).dropna()
        shown = s.loc[top_bottom(list(s.index), k)]
        res = self.store.result(self.model, self.target_category, self.feature_category)
        feat = (
            self.colour_attribute
            if (self.colour_category == self.feature_category and self.colour_attribute)
            else (shown.index[0] if len(shown) else None)
        )
        ncols = 2 if res is not None and feat is not None else 1
        fig, axes = plt.subplots(
            1, ncols, figsize=(5.2 * ncols, max(3.0, 0.25 * len(shown) + 1.5)), squeeze=False
        )
        ax = axes[0, 0]
        ax.barh(range(len(shown)), shown.to_numpy(), color=puor_hex(shown.to_numpy()), edgecolor="#555555")
        ax.set_yticks(range(len(shown)), [str(i) for i in shown.index], fontsize=8)
        ax.invert_yaxis()
        ax.axvline(0, color="black", lw=0.6)
        ax.set_xlim(-1, 1)
        ax.set_xlabel("indirect bias score")
        ax.set_title(f"{t}: most and least associated {self.feature_category}", fontsize=9)
        if ncols == 2:
            pts = res.bridge_points(t, feat)
            indirect_scatter(axes[0, 1], pts, str(t), str(feat), float(res.ibs.loc[t, feat]))
        fig.tight_layout()
        return fig

    def interactive_html(self) -> str:
        """The scatter as it is shown (colour, search rings, selection) as one self-contained HTML page with
        plotly.js inline (works offline; hover shows name and score; clicks need the live widget)."""
        col = self.colours()
        fig = scatter_plotly(
            self.coordinates(),
            colours=col,
            colour_label=f"IBS with '{self.colour_attribute}'" if col is not None else "",
            hits=self.matches(),
            selected=self.selected,
            method=self.method,
        )
        return str(fig.to_html(include_plotlyjs=True, full_html=True))

    def widget(self) -> ScatterWidget:
        """The live interface (zones A-E): a :class:`ScatterWidget` (plotly ``FigureWidget`` scatter with
        clickable points, colour controls, search, details); display it by leaving it last in a cell.  The
        explorer keeps it (:attr:`live`), so that a reloaded page draws it again from the kernel."""
        if self.live is not None:
            self.live.close()
        self.live = ScatterWidget(self)
        return self.live
