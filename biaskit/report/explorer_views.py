"""The two explorers of indirect bias scores (seed 004, chapter 4): :class:`TableExplorer` (section 4.1)
and :class:`ScatterExplorer` (section 4.2).

Each keeps the state of its view (model, categories, search text, sort, colour, selection), applies the
rules of :mod:`biaskit.report.explorer_data` and draws the static matplotlib figure, the offline HTML page
(:mod:`biaskit.report.explorer_figures`) or the live widget (:mod:`biaskit.report.explorer_widgets`).
"""

from __future__ import annotations

import copy
import logging
import math
from pathlib import Path
from typing import Any

import pandas as pd

from biaskit.core.html import escape_html
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
    bars_plotly,
    draw_heatmap,
    indirect_scatter,
    indirect_scatter_plotly,
    plotly_puor,
    puor_cmap,
    puor_hex,
    scatter_plotly,
    score_text,
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

    #: the attributes :meth:`snapshot` keeps (the views add theirs)
    _STATE: tuple[str, ...] = ("model", "target_category", "feature_category", "query")

    def snapshot(self) -> dict[str, Any]:
        """The explorer's state (model, categories, search, sort or colour and selection): what the live
        view's "Reset view" button goes back to."""
        return {k: copy.deepcopy(getattr(self, k)) for k in self._STATE}

    def restore(self, state: dict[str, Any]) -> None:
        """Go back to a :meth:`snapshot`."""
        for k in self._STATE:
            setattr(self, k, copy.deepcopy(state[k]))
        self._check()

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

    _STATE = (*_Explorer._STATE, "sorter")

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
                f"{attribute!r} is not a {'target (column)' if axis == 'column' else 'feature (row)'} of the "
                "table"
            )
        return self.sorter.click(axis, attribute)

    def sort_by(self, axis: Axis | None, attribute: Any, phase: int) -> int:
        """Put the sort in ``phase`` (1 by score, 2 by similarity, 0 alphabetical) for ``attribute``: the
        state the thesis's header clicks reach (B.1/B.2), chosen directly (the live view's Sort by and Order
        menus).  A new choice ends an order kept from the previous table, as a click does."""
        if phase not in (0, 1, 2):
            raise ValueError(f"phase must be 0 (alphabetical), 1 (score) or 2 (similarity), got {phase!r}")
        if phase == 0 or axis is None:
            self.sorter.reset()
            return 0
        table = self.store.table(self.model, self.target_category, self.feature_category, self.value)
        labels = table.columns if axis == "column" else table.index
        if attribute not in labels:
            raise KeyError(
                f"{attribute!r} is not a {'target (column)' if axis == 'column' else 'feature (row)'} of the "
                "table"
            )
        st = self.sorter.state
        if (st.axis, st.attribute, st.phase) != (axis, attribute, phase):
            self.sorter.reset()
            for _ in range(phase):
                self.sorter.click(axis, attribute)
        return self.sorter.state.phase

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
        Hover shows target, feature and score."""
        return str(self.plotly_figure().to_html(include_plotlyjs=True, full_html=True))

    def plotly_figure(self, data: pd.DataFrame | None = None, *, order: TableOrder | None = None) -> Any:
        """The table (or ``data``, a page of it) as a plotly figure: the heat-map with its header strips, the
        header of the sort attribute marked."""
        o = order if order is not None else self.order()
        page = self.view() if data is None else data
        return table_plotly(
            page,
            value_label="indirect bias score" if self.value == "ibs" else self.value,
            sorted_axis=o.axis if o.phase else None,
            attribute=o.attribute,
        )

    def widget(self, *, hint: str | None = None, **kwargs: Any) -> TableWidget:
        """The live interface (zones A-E): a :class:`TableWidget` (heat-map, Sort by / Order menus, search,
        pages, cell details, CSV / PNG / SVG exports, reset); display it by leaving it last in a cell.
        ``hint`` is the line shown instead of the view in a notebook reopened without its kernel (it must
        work when followed; the default asks to run the cells above first); ``kwargs`` go to
        :class:`TableWidget` (``rows_per_page``, ``columns_per_page``).  The explorer keeps the view
        (:attr:`live`): a widget that is garbage-collected closes, and a reloaded page could not draw it."""
        if self.live is not None:  # the cell run again: the old view goes (a reload would restore it too)
            self.live.close()
        self.live = TableWidget(self, hint=hint, **kwargs)
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

    _STATE = (*_Explorer._STATE, "method", "colour_category", "colour_attribute", "selected")

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

    def has_coordinates(
        self,
        *,
        model: str | None = None,
        target_category: str | None = None,
        feature_category: str | None = None,
        method: str | None = None,
    ) -> bool:
        """Whether the embedding of these settings (default: the current ones) is computed already."""
        key = (
            model or self.model,
            target_category or self.target_category,
            feature_category or self.feature_category,
            method or self.method,
        )
        return key in self._coords

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

    def colour_choices(self) -> list[tuple[str, Any, pd.Series]]:
        """``(category, feature, scores of the targets shown)`` for every feature the plot can be coloured by
        (zone E: the feature category itself and, for a non-sensitive one, each sensitive category)."""
        index = self.coordinates().index
        out = []
        for cat in self.colour_options():
            m = self.store.matrix(self.model, self.target_category, cat)
            out += [(cat, f, m[f].reindex(index).astype(float)) for f in m.columns]
        return out

    def points_frame(self) -> pd.DataFrame:
        """The points as shown (target, x, y, search match, selected) with one column of scores per colour
        choice (``"gender: woman"``): the CSV export of the scatter view."""
        xy = self.coordinates()
        hits = set(self.matches())
        frame = pd.DataFrame(
            {
                "target": list(xy.index),
                "x": xy["x"].to_numpy(),
                "y": xy["y"].to_numpy(),
                "search_match": [t in hits for t in xy.index],
                "selected": [t == self.selected for t in xy.index],
            }
        )
        for cat, feat, vals in self.colour_choices():
            frame[f"{cat}: {feat}"] = vals.to_numpy()
        return frame

    def plotly_figure(self) -> Any:
        """The scatter as shown, as a plotly figure whose colour is chosen in the page.

        Trace 0 holds the targets, 1 the search rings, 2 the selected target (legend entries: click to hide
        or show).  The **Colour by** menu (a plotly ``updatemenu``, drawn and applied by plotly.js with no
        Python behind it) has one entry per feature of :meth:`colour_choices` and "no colour"; each entry sets
        the points' colours, their hover score, the colour-bar title and the plot title together, so the
        legend and the points never disagree.  The entry of :attr:`colour_attribute` is active at first."""
        xy = self.coordinates()
        hits = self.matches()
        fig = scatter_plotly(xy, hits=hits, selected=self.selected, method=self.method)
        n = len(xy)
        q = escape_html(self.query.strip())
        fig.data[0].update(name=f"{escape_html(self.target_category)} ({n})", showlegend=True)
        fig.data[1].update(name=f"search '{q}' ({len(hits)})", showlegend=bool(hits))
        fig.data[2].update(
            name=f"details of {escape_html(self.selected)}", showlegend=self.selected is not None
        )
        plain = "<b>%{hovertext}</b><extra></extra>"
        none_title = "Not coloured: choose a colour in the Colour by menu"
        buttons = [
            {
                "label": "no colour",
                "method": "update",
                "args": [
                    {
                        "marker.color": ["#9e9e9e"],
                        "marker.showscale": [False],
                        "customdata": [[[""] for _ in range(n)]],
                        "hovertemplate": [plain],
                    },
                    {"title.text": none_title},
                    [0],
                ],
            }
        ]
        active = 0
        for cat, feat, vals in self.colour_choices():
            label = f"IBS with '{escape_html(feat)}'"
            title = f"Coloured by the score with '{escape_html(feat)}' ({escape_html(cat)})"
            colours = [float(v) if math.isfinite(v) else None for v in vals.to_numpy(dtype=float)]
            buttons.append(
                {
                    "label": f"{escape_html(cat)}: {escape_html(feat)}",
                    "method": "update",
                    "args": [
                        {
                            "marker.color": [colours],
                            "marker.colorscale": [plotly_puor()],
                            "marker.cmin": [-1],
                            "marker.cmax": [1],
                            "marker.showscale": [True],
                            "marker.colorbar.title.text": [label],
                            "customdata": [[[score_text(v)] for v in vals.to_numpy(dtype=float)]],
                            "hovertemplate": [
                                f"<b>%{{hovertext}}</b><br>{label}: %{{customdata[0]}}<extra></extra>"
                            ],
                        },
                        {"title.text": title},
                        [0],
                    ],
                }
            )
            if (cat, feat) == (self.colour_category, self.colour_attribute):
                active = len(buttons) - 1
        # the figure starts as its active entry says (the same arrays the menu applies)
        data_update, layout_update, _ = buttons[active]["args"]
        marker = {k.removeprefix("marker."): v[0] for k, v in data_update.items() if k.startswith("marker.")}
        colorbar_title = marker.pop("colorbar.title.text", None)
        fig.data[0].marker.update(marker)
        if colorbar_title is not None:
            fig.data[0].marker.colorbar = {"title": {"text": colorbar_title, "side": "right"}, "len": 0.8}
        fig.data[0].update(
            customdata=data_update["customdata"][0], hovertemplate=data_update["hovertemplate"][0]
        )
        fig.update_layout(
            title={"text": layout_update["title.text"], "x": 0.5, "xanchor": "center", "font": {"size": 13}},
            margin={"l": 50, "r": 10, "t": 90, "b": 90},
            height=620,
            updatemenus=[
                {
                    "type": "dropdown",
                    "direction": "down",
                    "buttons": buttons,
                    "active": active,
                    "showactive": True,
                    "x": 0.0,
                    "xanchor": "left",
                    "y": 1.16,
                    "yanchor": "top",
                    "pad": {"l": 70},
                    "font": {"size": 11},
                }
            ],
            annotations=[
                {
                    "text": "Colour by",
                    "x": 0.0,
                    "xref": "paper",
                    "y": 1.145,
                    "yref": "paper",
                    "xanchor": "left",
                    "yanchor": "top",
                    "showarrow": False,
                    "font": {"size": 12},
                }
            ],
            legend={"orientation": "h", "x": 0.0, "xanchor": "left", "y": -0.12, "yanchor": "top"},
        )
        return fig

    def details_plotly(self, target: str | None = None, *, k: int = 10) -> tuple[Any, Any, Any, Any]:
        """The details of ``target`` (default: the selected one) as plotly figures: ``(bars, points, feature,
        per-name scatter)``; the bars show its ``k`` most and ``k`` least associated features, the scatter
        (``None`` when no per-name scores are stored) the per-name scores behind its score with ``feature``
        (the colour attribute when it is of this category, else its most associated feature)."""
        t = target or self.selected
        s = self.details(t).dropna()
        shown = s.loc[top_bottom(list(s.index), k)]
        bars = bars_plotly(shown, f"{t}: most and least associated {self.feature_category}")
        bars.update_layout(width=460)
        res = self.store.result(self.model, self.target_category, self.feature_category)
        feat = (
            self.colour_attribute
            if (self.colour_category == self.feature_category and self.colour_attribute)
            else (shown.index[0] if len(shown) else None)
        )
        if res is None or feat is None:
            return bars, None, feat, None
        pts = res.bridge_points(t, feat)
        scatter = indirect_scatter_plotly(pts, str(t), str(feat), float(res.ibs.loc[t, feat]))
        scatter.update_layout(width=460)
        return bars, pts, feat, scatter

    def interactive_html(self) -> str:
        """The scatter as it is shown (colour menu, search rings, selection) as one self-contained HTML page
        with plotly.js inline (works offline; hover shows name and score; the Colour by menu works in the
        page)."""
        return str(self.plotly_figure().to_html(include_plotlyjs=True, full_html=True))

    def widget(self, *, hint: str | None = None) -> ScatterWidget:
        """The live interface (zones A-E): a :class:`ScatterWidget` (scatter with its in-plot Colour by
        menu, projection, categories, search, details, CSV / PNG / SVG exports, reset); display it by leaving
        it last in a cell.  ``hint``: as :meth:`TableExplorer.widget`.  The explorer keeps the view
        (:attr:`live`), so that a reloaded page draws it again from the kernel."""
        if self.live is not None:
            self.live.close()
        self.live = ScatterWidget(self, hint=hint)
        return self.live
