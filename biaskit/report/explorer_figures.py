"""The figures of the explorers of indirect bias scores (seed 004, chapter 4): the PuOr colours, the
static matplotlib pieces (heat-map, indirect scatterplot) and the plotly figures the live views and the
offline HTML pages show (:func:`table_plotly`, :func:`scatter_plotly`, :func:`indirect_scatter_plotly`,
:func:`bars_plotly`).  Each builds a figure from the data it is given and keeps no state; what to show is
decided in :mod:`biaskit.report.explorer_data`.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from biaskit.report.explorer_data import Axis

__all__ = [
    "CMAP",
    "bars_plotly",
    "draw_heatmap",
    "indirect_scatter",
    "indirect_scatter_plotly",
    "plotly_puor",
    "puor_cmap",
    "puor_hex",
    "scatter_plotly",
    "score_text",
    "table_plotly",
]

CMAP = "PuOr"


# =============================================================================================
# colours
# =============================================================================================
def puor_cmap() -> Any:
    """Matplotlib's PuOr resampled to 255 colours, so that 0 on [-1, 1] is exactly the centre ``#f7f7f7``."""
    import matplotlib as mpl

    return mpl.colormaps[CMAP].resampled(255)


def puor_hex(
    values: float | Sequence[float] | np.ndarray, vmin: float = -1.0, vmax: float = 1.0
) -> list[str]:
    """PuOr colours for IBS values (``vmin`` dark orange ``#7f3b08``, centre white, ``vmax`` dark purple
    ``#2d004b``); NaN grey."""
    from matplotlib.colors import Normalize, to_hex

    cmap = puor_cmap()
    norm = Normalize(vmin, vmax, clip=True)
    arr = np.atleast_1d(np.asarray(values, dtype=float))
    return [to_hex(cmap(norm(v))) if math.isfinite(v) else "#bdbdbd" for v in arr]


def plotly_puor() -> list[list[Any]]:
    """The PuOr colour scale of the static figures as a plotly ``colorscale`` on [-1, 1]."""
    stops = np.linspace(-1.0, 1.0, 21)
    return [[float(i) / 20, c] for i, c in enumerate(puor_hex(stops))]


# =============================================================================================
# rendering helpers (matplotlib)
# =============================================================================================
def _cell_text(v: float) -> str:
    """A heat-map cell's number at two decimals; a value that rounds to zero (-0.0005) reads 0.00,
    not -0.00."""
    return f"{round(v, 2) + 0.0:.2f}"


def draw_heatmap(
    ax: Any, data: pd.DataFrame, *, vmin: float = -1.0, vmax: float = 1.0, annotate: bool | None = None
) -> Any:
    cmap = puor_cmap().with_extremes(bad="#bdbdbd")
    arr = np.ma.masked_invalid(data.to_numpy(dtype=float))
    im = ax.imshow(arr, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(data.shape[1]), [str(c) for c in data.columns], rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(data.shape[0]), [str(r) for r in data.index], fontsize=8)
    if annotate is None:
        annotate = data.size <= 150
    if annotate:
        for i in range(data.shape[0]):
            for j in range(data.shape[1]):
                v = arr[i, j]
                if v is not np.ma.masked:
                    ax.text(
                        j,
                        i,
                        _cell_text(float(v)),
                        ha="center",
                        va="center",
                        fontsize=6,
                        color="white" if abs(v) > 0.6 * max(abs(vmin), abs(vmax)) else "black",
                    )
    return im


def indirect_scatter(
    ax: Any,
    points: pd.DataFrame,
    target: str,
    feature: str,
    r: float | None = None,
    highlight: Sequence[str] = (),
) -> None:
    """Draw the indirect scatterplot of one (target, feature): one dot per bridge name, x = BS1, y = BS2,
    with the least-squares line; ``r`` (the IBS) goes in the title, ``highlight`` names are labelled."""
    ax.scatter(points["x"], points["y"], s=8, alpha=0.5, color="#5e3c99")
    if len(points) >= 2 and np.ptp(points["x"].to_numpy()) > 0:
        slope, icpt = np.polyfit(points["x"], points["y"], 1)
        xs = np.linspace(points["x"].min(), points["x"].max(), 10)
        ax.plot(xs, slope * xs + icpt, color="#e66101", lw=1)
    for name in highlight:
        row = points[points["name"] == name]
        if not row.empty:
            ax.annotate(name, (row["x"].iloc[0], row["y"].iloc[0]), fontsize=7)
    title = f"{target} vs {feature}" + (f" (IBS r = {r:.3f})" if r is not None and math.isfinite(r) else "")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(f"BS1: log-prob. bias score of the name given '{target}'", fontsize=8)
    ax.set_ylabel(f"BS2: score of '{feature}' given the name", fontsize=8)


# =============================================================================================
# plotly figures (the live views and the offline HTML pages)
# =============================================================================================
def score_text(v: Any) -> str:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return "no score"
    return f"{f:.3f}" if math.isfinite(f) else "no score"


def table_plotly(
    data: pd.DataFrame,
    *,
    value_label: str = "indirect bias score",
    sorted_axis: Axis | None = None,
    attribute: Any = None,
    annotate: bool | None = None,
) -> Any:
    """The table view as a plotly figure: header strips around the heat-map (section 4.1).

    Three heat-map traces: 0 = the column-header strip (one cell per target, above the table), 1 = the
    row-header strip (one cell per feature, left of it), 2 = the scores (features x targets).  A strip cell
    names a target or feature to sort by (the live view's Sort by menu); hover shows
    the target, the feature and the score.  The strip cell of the attribute the table is sorted by is
    orange.  Cells sit at integer positions (column ``j``, row ``i``) with the labels as tick texts:
    numeric axes follow a new order at once, where plotly's categorical axes keep the first order
    they saw.  The strips follow the table's zoom and pan (``matches``).
    """
    import plotly.graph_objects as go

    cols = [str(c) for c in data.columns]
    rows = [str(r) for r in data.index]
    xs, ys = list(range(len(cols))), list(range(len(rows)))
    z = data.to_numpy(dtype=float)
    if annotate is None:
        annotate = data.size <= 150
    hover = [
        [
            f"<b>{html.escape(c)}</b> × <b>{html.escape(r)}</b><br>score {score_text(v)}"
            for c, v in zip(cols, row, strict=True)
        ]
        for r, row in zip(rows, z, strict=True)
    ]
    zc = [[1.0 if sorted_axis == "column" and c == str(attribute) else 0.0 for c in cols]]
    zr = [[1.0 if sorted_axis == "row" and r == str(attribute) else 0.0] for r in rows]
    # the two header strips: grey cells, the one the table is sorted by orange; hover says how to sort by it
    strip: dict[str, Any] = {
        "zmin": 0,
        "zmax": 1,
        "colorscale": [[0.0, "#e8e8e8"], [1.0, "#fdb863"]],
        "showscale": False,
        "hovertemplate": "%{text}<extra></extra>",
    }
    height = 170 + 22 + 20 * max(len(rows), 3)
    fig = go.Figure(
        data=[
            go.Heatmap(
                x=xs,
                y=[0],
                z=zc,
                text=[[f"target <b>{html.escape(c)}</b> (sort by it: Sort by menu)" for c in cols]],
                xgap=1,
                xaxis="x2",
                yaxis="y2",
                name="column headers",
                **strip,
            ),
            go.Heatmap(
                x=[0],
                y=ys,
                z=zr,
                text=[[f"feature <b>{html.escape(r)}</b> (sort by it: Sort by menu)"] for r in rows],
                ygap=1,
                xaxis="x3",
                yaxis="y3",
                name="row headers",
                **strip,
            ),
            go.Heatmap(
                x=xs,
                y=ys,
                z=[[None if not math.isfinite(v) else float(v) for v in row] for row in z],
                text=hover,
                texttemplate="%{z:.2f}" if annotate else "",
                textfont={"size": 9},
                zmin=-1,
                zmax=1,
                colorscale=plotly_puor(),
                colorbar={"title": {"text": value_label, "side": "right"}, "len": 0.8},
                hovertemplate="%{text}<extra></extra>",
                xaxis="x",
                yaxis="y",
                name="scores",
            ),
        ]
    )
    head = 22 / height
    lin: dict[str, Any] = {"showgrid": False, "zeroline": False}
    xr = [-0.5, len(cols) - 0.5]
    yr = [len(rows) - 0.5, -0.5]  # first row on top
    fig.update_layout(
        height=height,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        plot_bgcolor="#bdbdbd",
        xaxis={**lin, "domain": [0.03, 1.0], "anchor": "y", "showticklabels": False, "range": xr},
        yaxis={**lin, "domain": [0.0, 1.0 - head], "anchor": "x", "showticklabels": False, "range": yr},
        xaxis2={
            **lin,
            "domain": [0.03, 1.0],
            "anchor": "y2",
            "matches": "x",
            "side": "top",
            "tickangle": -60,
            "tickfont": {"size": 11},
            "automargin": True,
            "tickmode": "array",
            "tickvals": xs,
            "ticktext": cols,
            "range": xr,
        },
        yaxis2={
            **lin,
            "domain": [1.0 - head + 0.002, 1.0],
            "anchor": "x2",
            "showticklabels": False,
            "fixedrange": True,
            "range": [-0.5, 0.5],
        },
        xaxis3={
            **lin,
            "domain": [0.0, 0.025],
            "anchor": "y3",
            "showticklabels": False,
            "fixedrange": True,
            "range": [-0.5, 0.5],
        },
        yaxis3={
            **lin,
            "domain": [0.0, 1.0 - head],
            "anchor": "x3",
            "matches": "y",
            "tickfont": {"size": 11},
            "automargin": True,
            "tickmode": "array",
            "tickvals": ys,
            "ticktext": rows,
            "range": yr,
        },
    )
    return fig


def scatter_plotly(
    coords: pd.DataFrame,
    *,
    colours: pd.Series | None = None,
    colour_label: str = "",
    hits: Sequence[Any] = (),
    selected: Any = None,
    annotate_all: bool | None = None,
    method: str = "",
) -> Any:
    """The scatter view as a plotly figure (section 4.2, zone B).

    Trace 0: the targets (hover: name and, when coloured, the score; labels drawn for up to 40 points
    or for search hits and the selected one); trace 1: rings around the search hits; trace 2: the
    selected target (the live view's Details of menu chooses it).
    """
    import plotly.graph_objects as go

    labels = [str(t) for t in coords.index]
    if annotate_all is None:
        annotate_all = len(labels) <= 40
    hit_set = {str(h) for h in hits}
    shown = [t if annotate_all or t in hit_set or t == str(selected) else "" for t in labels]
    marker: dict[str, Any] = {"size": 10, "line": {"width": 0.6, "color": "#555555"}}
    if colours is None:
        marker.update(color="#9e9e9e", showscale=False)
        custom = [[""] for _ in labels]
        hover = "<b>%{hovertext}</b><extra></extra>"
    else:
        vals = colours.reindex(coords.index).to_numpy(dtype=float)
        marker.update(
            color=[float(v) if math.isfinite(v) else 0.0 for v in vals],
            colorscale=plotly_puor(),
            cmin=-1,
            cmax=1,
            showscale=True,
            colorbar={"title": {"text": colour_label, "side": "right"}, "len": 0.8},
        )
        custom = [[score_text(v)] for v in vals]
        hover = f"<b>%{{hovertext}}</b><br>{colour_label}: %{{customdata[0]}}<extra></extra>"
    hit_labels = [t for t in labels if t in hit_set]
    sel = [t for t in labels if t == str(selected)]
    xs = coords["x"].to_numpy(dtype=float)
    ys = coords["y"].to_numpy(dtype=float)
    pos = {t: i for i, t in enumerate(labels)}
    fig = go.Figure(
        data=[
            go.Scatter(
                x=xs,
                y=ys,
                mode="markers+text",
                text=shown,
                textposition="top center",
                textfont={"size": 10},
                hovertext=labels,
                customdata=custom,
                hovertemplate=hover,
                marker=marker,
                name="targets",
                showlegend=False,
            ),
            go.Scatter(
                x=[xs[pos[t]] for t in hit_labels],
                y=[ys[pos[t]] for t in hit_labels],
                mode="markers",
                marker={"size": 20, "color": "rgba(0,0,0,0)", "line": {"width": 2, "color": "#e66101"}},
                hoverinfo="skip",
                name="search",
                showlegend=False,
            ),
            go.Scatter(
                x=[xs[pos[t]] for t in sel],
                y=[ys[pos[t]] for t in sel],
                mode="markers",
                marker={
                    "size": 16,
                    "symbol": "star",
                    "color": "#e66101",
                    "line": {"width": 1, "color": "black"},
                },
                hoverinfo="skip",
                name="selected",
                showlegend=False,
            ),
        ]
    )
    fig.update_layout(
        height=520,
        margin={"l": 50, "r": 10, "t": 10, "b": 40},
        xaxis={"title": {"text": f"{method} dimension 1"}, "zeroline": False},
        yaxis={"title": {"text": f"{method} dimension 2"}, "zeroline": False},
        plot_bgcolor="#fafafa",
        hovermode="closest",
        clickmode="event",
    )
    return fig


def indirect_scatter_plotly(points: pd.DataFrame, target: str, feature: str, r: float | None = None) -> Any:
    """The indirect scatterplot of one (target, feature) as plotly (zone C): one dot per bridge name
    (hover: the name), x = BS1, y = BS2, with the least-squares line; ``r`` (the IBS) in the title."""
    import plotly.graph_objects as go

    fig = go.Figure(
        go.Scatter(
            x=points["x"],
            y=points["y"],
            mode="markers",
            hovertext=points["name"],
            hovertemplate="<b>%{hovertext}</b><br>BS1 %{x:.3f}, BS2 %{y:.3f}<extra></extra>",
            marker={"size": 6, "color": "#5e3c99", "opacity": 0.6},
            name="names",
            showlegend=False,
        )
    )
    if len(points) >= 2 and np.ptp(points["x"].to_numpy(dtype=float)) > 0:
        slope, icpt = np.polyfit(points["x"].astype(float), points["y"].astype(float), 1)
        xs = np.linspace(float(points["x"].min()), float(points["x"].max()), 10)
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=slope * xs + icpt,
                mode="lines",
                line={"color": "#e66101"},
                hoverinfo="skip",
                showlegend=False,
            )
        )
    title = f"{target} vs {feature}" + (f" (IBS r = {r:.3f})" if r is not None and math.isfinite(r) else "")
    fig.update_layout(
        title={"text": title, "font": {"size": 13}},
        height=360,
        margin={"l": 50, "r": 10, "t": 40, "b": 45},
        xaxis={"title": {"text": f"BS1: how much '{target}' raises the name"}},
        yaxis={"title": {"text": f"BS2: '{feature}' given the name"}},
    )
    return fig


def bars_plotly(scores: pd.Series, title: str) -> Any:
    """Horizontal bars of IBS(target, features), coloured by PuOr, most associated on top (zone C)."""
    import plotly.graph_objects as go

    vals = scores.to_numpy(dtype=float)
    fig = go.Figure(
        go.Bar(
            x=vals,
            y=[str(i) for i in scores.index],
            orientation="h",
            marker={"color": puor_hex(vals), "line": {"color": "#555555", "width": 0.5}},
            hovertemplate="<b>%{y}</b><br>score %{x:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        title={"text": title, "font": {"size": 13}},
        height=max(260, 22 * len(scores) + 90),
        margin={"l": 10, "r": 10, "t": 40, "b": 40},
        xaxis={"range": [-1, 1], "title": {"text": "indirect bias score"}},
        yaxis={"autorange": "reversed", "type": "category", "automargin": True},
    )
    return fig
