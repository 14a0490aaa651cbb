r"""The two exploratory views of indirect bias scores (seed 004, chapter 4), for Jupyter.

Louis-Alexandre (2022) built two D3.js prototypes over precomputed Indirect Logarithmic Probability
Bias Scores (IBS, :mod:`biaskit.metrics.indirect_bias`); this module rebuilds them for Jupyter, and keeps
every rule that decides *what is shown* in plain, browser-free code that the tests exercise.

**Why plotly** (issue 18).  The views are explored by clicking (seed 004 section 4.1.2: a header click
re-sorts, a cell or point click opens its details, hover names it).  They are drawn with one
interactive library, plotly's ``go.FigureWidget`` inside ipywidgets (:class:`TableWidget`,
:class:`ScatterWidget`): it is maintained, already pinned for the project, and its click and hover
events reach Python in JupyterLab 4 with no extra front-end build (since plotly 6 the widget is an
``anywidget``, which brings its own JavaScript); the same figures also write self-contained offline
HTML (``include_plotlyjs=True``).  ipympl would re-send a whole image on every hover and has no
per-label events; bqplot is barely maintained.  The static images of the report stay matplotlib
(:meth:`TableExplorer.figure`, :meth:`ScatterExplorer.figure`), the same views drawn for papermill.

The rules:

**Table view** (section 4.1, Algorithms B.1-B.4).  Targets in columns, features in rows, cells
coloured by IBS with the diverging PuOr map (-1 orange ... 0 white ... +1 purple).  Clicking a header
cycles through three states (:class:`TableSorter`):

1. *score sort*: the other axis is sorted by IBS with the clicked attribute, decreasing, and only the
   5 most and 5 least associated are shown (when there are more than 2 x 5 + 1);
2. *cosine sort*: the other axis stays sorted by IBS (all of it, as in Algorithm B.4), and the clicked
   axis is sorted by cosine similarity to the clicked attribute (itself first), 5 most + 5 least;
3. *reset*: alphabetical order (gender keeps *male, female, boy, girl, man, woman*).

The click counter is per attribute and starts again at the first state when another attribute is
clicked (B.1's note).  As printed, B.1 tests ``clicks % 3`` *before* incrementing, so the first click
would reset; the prose (and this module) make the first click sort.  **Persistence** (section 4.1.2):
switching the model re-applies the sort with the new model's scores; when the target category changes
the feature (row) order is kept, and when the feature category changes the target (column) order is
kept, until the next click, so a reader can sort occupations by *ambitious* and then switch the rows
to Gender.  Numbers (ages, years) sort numerically in the default order.

**Scatter view** (section 4.2).  Each target is a point placed by a 2-D embedding of its IBS vector
over the features of the chosen category: t-SNE (perplexity 5, ``random_state=33``), ISOMAP (5
neighbours) or UMAP (5 neighbours, ``random_state=33``) -- the thesis's parameters, "no optimisation".
Points are coloured by IBS with any feature of that category or of a sensitive category (the
three-way view), and selecting a point (a click, or the "Details of" dropdown) shows a bar plot of its
IBS with every feature (the thesis's own future-work proposal) and the per-name indirect scatterplot
behind one score.

Both views have the **search box** the study participants asked for (section 5.2): a
case-insensitive substring filter (table) or highlight (scatter).  Both render a static matplotlib
figure (:meth:`TableExplorer.figure`, :meth:`ScatterExplorer.figure`) for papermill and HTML output.

**The live views** (:meth:`TableExplorer.widget`, :meth:`ScatterExplorer.widget`; issue 18) keep the
controls true to the view: options that depend on another choice (Features on Targets and Model,
Attribute on Colour by) are recomputed when it changes, the controls start from the explorer's state,
details are recomputed or cleared with a note when the table or plot changes, a long table is paged
(:data:`ROWS_PER_PAGE` x :data:`COLUMNS_PER_PAGE`, plus plotly's zoom) instead of truncated, and any
error shows as one readable line inside the widget (:func:`error_line`), never as a traceback.
``tests/test_browser_explorers.py`` drives them in JupyterLab and Chromium.
"""

from __future__ import annotations

import html
import logging
import math
import unicodedata
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    from biaskit.metrics.indirect_bias import IndirectBiasResult

logger = logging.getLogger(__name__)

__all__ = [
    "METHODS",
    "SENSITIVE_CATEGORIES",
    "ScatterExplorer",
    "ScatterWidget",
    "ScoreStore",
    "SortState",
    "TableExplorer",
    "TableOrder",
    "TableSorter",
    "TableWidget",
    "error_line",
    "page_bounds",
    "scatter_plotly",
    "table_plotly",
    "colour_options",
    "cosine_similarity_to",
    "default_order",
    "embed_targets",
    "filter_order",
    "indirect_scatter",
    "puor_hex",
    "search_labels",
    "top_bottom",
]

Axis = Literal["column", "row"]
METHODS = ("t-SNE", "ISOMAP", "UMAP")
SENSITIVE_CATEGORIES = ("age", "year_of_birth", "gender", "race", "religion", "sexual_orientation")
GENDER_ORDER = ("male", "female", "boy", "girl", "man", "woman")
CMAP = "PuOr"


def _puor() -> Any:
    """Matplotlib's PuOr resampled to 255 colours, so that 0 on [-1, 1] is exactly the centre ``#f7f7f7``."""
    import matplotlib as mpl

    return mpl.colormaps[CMAP].resampled(255)


# =============================================================================================
# data the views read
# =============================================================================================
@dataclass
class ScoreStore:
    """Tidy scores for several models and category pairs, as both views read them (section 4.1.3).

    ``scores`` has the columns ``model, target_category, feature_category, target, feature`` and one
    or more value columns (``ibs``, ``direct``, or e.g. ``r`` for the published correlation tables).  ``results`` optionally keeps the :class:`IndirectBiasResult` of each
    ``(model, target_category, feature_category)`` for the per-name drill-down plots.
    """

    scores: pd.DataFrame
    results: dict[tuple[str, str, str], Any] = field(default_factory=dict)
    sensitive: tuple[str, ...] = SENSITIVE_CATEGORIES
    #: ``{model: caveat}`` shown by the live views whenever that model is chosen, e.g. for a random-weight
    #: stand-in ("pipeline demonstration only, not a finding")
    notes: dict[str, str] = field(default_factory=dict)

    _REQUIRED = ("model", "target_category", "feature_category", "target", "feature")

    def __post_init__(self) -> None:
        missing = [c for c in self._REQUIRED if c not in self.scores.columns]
        if missing:
            raise ValueError(f"scores lack the column(s) {missing}; need {list(self._REQUIRED)}")
        dup = self.scores.duplicated(["model", "target_category", "feature_category", "target", "feature"])
        if dup.any():
            raise ValueError(f"{int(dup.sum())} duplicated (model, categories, target, feature) rows")
        if len(self.scores.columns) == len(self._REQUIRED):
            raise ValueError("scores have no value column (e.g. 'ibs')")

    @classmethod
    def from_results(cls, results: Iterable[IndirectBiasResult], **kwargs: Any) -> ScoreStore:
        res = list(results)
        if not res:
            raise ValueError("no results given")
        frame = pd.concat([r.tidy() for r in res], ignore_index=True)
        keyed = {(r.model, r.target_category, r.feature_category): r for r in res}
        return cls(frame, keyed, **kwargs)

    def models(self) -> list[str]:
        return list(dict.fromkeys(self.scores["model"]))

    def target_categories(self, model: str | None = None) -> list[str]:
        s = self.scores if model is None else self.scores[self.scores["model"] == model]
        return list(dict.fromkeys(s["target_category"]))

    def feature_categories(self, model: str | None = None, target_category: str | None = None) -> list[str]:
        s = self.scores
        if model is not None:
            s = s[s["model"] == model]
        if target_category is not None:
            s = s[s["target_category"] == target_category]
        return list(dict.fromkeys(s["feature_category"]))

    def has(self, model: str, target_category: str, feature_category: str) -> bool:
        s = self.scores
        return bool(
            (
                (s["model"] == model)
                & (s["target_category"] == target_category)
                & (s["feature_category"] == feature_category)
            ).any()
        )

    def matrix(
        self, model: str, target_category: str, feature_category: str, value: str = "ibs"
    ) -> pd.DataFrame:
        """targets x features (first-seen order)."""
        s = self.scores
        sel = s[
            (s["model"] == model)
            & (s["target_category"] == target_category)
            & (s["feature_category"] == feature_category)
        ]
        if sel.empty:
            raise KeyError(
                f"no scores for model={model!r}, target_category={target_category!r}, feature_category={feature_category!r}"
            )
        if value not in sel.columns:
            raise KeyError(f"no {value!r} scores in the store")
        m = sel.pivot(index="target", columns="feature", values=value)
        return m.reindex(
            index=list(dict.fromkeys(sel["target"])), columns=list(dict.fromkeys(sel["feature"]))
        )

    def table(
        self, model: str, target_category: str, feature_category: str, value: str = "ibs"
    ) -> pd.DataFrame:
        """features (rows) x targets (columns), the layout of the table view."""
        return self.matrix(model, target_category, feature_category, value).T

    def result(self, model: str, target_category: str, feature_category: str) -> Any | None:
        return self.results.get((model, target_category, feature_category))


# =============================================================================================
# pure ordering logic (tested without a browser)
# =============================================================================================
def _natural_key(label: Any) -> tuple[int, float, str]:
    s = str(label)
    try:
        return (0, float(s), s)
    except ValueError:
        return (1, 0.0, s.casefold())


def default_order(labels: Sequence[Any], category: str | None = None) -> list[Any]:
    """Alphabetical (case-insensitive; numbers numerically); gender in the order male, female, boy, girl, man, woman."""
    labels = list(labels)
    if category == "gender":
        first = [g for g in GENDER_ORDER if g in labels]
        return first + sorted((x for x in labels if x not in GENDER_ORDER), key=_natural_key)
    return sorted(labels, key=_natural_key)


def top_bottom(ordered: Sequence[Any], k: int = 5) -> list[Any]:
    """The ``k`` first and ``k`` last items when there are more than ``2k + 1`` (Algorithm B.3), else all.

    B.3's ``rows[n-5 : n-1]`` means the last five, inclusive.
    """
    ordered = list(ordered)
    if k < 1:
        raise ValueError("k must be >= 1")
    if len(ordered) > 2 * k + 1:
        return ordered[:k] + ordered[-k:]
    return ordered


def _sorted_by(values: pd.Series) -> tuple[list[Any], list[Any]]:
    """Labels sorted by decreasing value (ties: default order), and the NaN labels apart."""
    nan = [
        i for i, v in values.items() if not (isinstance(v, (int, float, np.floating)) and math.isfinite(v))
    ]
    good = values.drop(index=nan).astype(float)
    order = default_order(list(good.index))
    good = good.reindex(order)
    ranked = list(good.sort_values(ascending=False, kind="stable").index)
    return ranked, nan


def cosine_similarity_to(matrix: pd.DataFrame, label: Any, axis: Axis) -> pd.Series:
    """Cosine similarity of every column (``axis="column"``) or row with ``label``'s, over the other axis.

    Pairs are compared over the entries finite in both (features NaN for a model are left out pairwise);
    a zero vector gives NaN.
    """
    m = matrix if axis == "column" else matrix.T
    if label not in m.columns:
        raise KeyError(f"{label!r} is not a {axis} of the table")
    ref = m[label].to_numpy(dtype=float)
    out = {}
    for c in m.columns:
        v = m[c].to_numpy(dtype=float)
        ok = np.isfinite(ref) & np.isfinite(v)
        a, b = ref[ok], v[ok]
        den = float(np.linalg.norm(a) * np.linalg.norm(b))
        out[c] = float(a @ b / den) if den > 0 else float("nan")
    return pd.Series(out, name=f"cosine to {label}")


@dataclass
class SortState:
    """Which header was clicked last and how many times (the ``clicks`` of Algorithms B.1/B.2)."""

    axis: Axis | None = None
    attribute: Any = None
    clicks: int = 0

    @property
    def phase(self) -> int:
        """0 = default order, 1 = score sort, 2 = cosine sort."""
        return self.clicks % 3

    def click(self, axis: Axis, attribute: Any) -> int:
        """Register a click; a new attribute starts again at the score sort (its counter is reset)."""
        if axis not in ("column", "row"):
            raise ValueError("axis must be 'column' (a target) or 'row' (a feature)")
        if (axis, attribute) != (self.axis, self.attribute):
            self.axis, self.attribute, self.clicks = axis, attribute, 1
        else:
            self.clicks += 1
        return self.phase


@dataclass
class TableOrder:
    """What the table view shows: the row (feature) and column (target) labels in display order."""

    rows: list[Any]
    columns: list[Any]
    phase: int = 0
    axis: Axis | None = None
    attribute: Any = None
    kept: Axis | None = None  # the axis whose order was carried over from the previous table
    legend: str = ""
    hidden_nan: list[Any] = field(default_factory=list)


class TableSorter:
    """The three-click sort of the table view with persistence across model and category changes.

    Parameters
    ----------
    top_k:
        Items shown at each end of a truncated axis (5 in the thesis).
    truncate_score_axis_in_cosine:
        Also truncate the IBS-sorted axis in the cosine state (Algorithm B.4 does not; default False).
    """

    def __init__(self, top_k: int = 5, *, truncate_score_axis_in_cosine: bool = False) -> None:
        if top_k < 1:
            raise ValueError("top_k must be >= 1")
        self.top_k = top_k
        self.truncate_score_axis_in_cosine = truncate_score_axis_in_cosine
        self.state = SortState()
        self._last: dict[str, Any] | None = None
        self._kept: tuple[Axis, list[Any]] | None = None

    def click(self, axis: Axis, attribute: Any) -> int:
        """A click on a column header (a target) or a row header (a feature); returns the new phase."""
        self._kept = None
        return self.state.click(axis, attribute)

    def reset(self) -> None:
        self.state = SortState()
        self._kept = None

    def _sorted_axes(
        self, table: pd.DataFrame, rows0: list[Any], cols0: list[Any]
    ) -> tuple[list[Any], list[Any], list[Any]]:
        st = self.state
        k = self.top_k
        if st.axis == "column":
            ranked, nan = _sorted_by(table[st.attribute])
            if st.phase == 1:
                return top_bottom(ranked, k), cols0, nan
            rows = top_bottom(ranked, k) if self.truncate_score_axis_in_cosine else ranked + nan
            cos = cosine_similarity_to(table, st.attribute, "column")
            cranked, cnan = _sorted_by(cos.drop(index=st.attribute))
            return rows, top_bottom([st.attribute, *cranked], k), nan + cnan
        ranked, nan = _sorted_by(table.loc[st.attribute])
        if st.phase == 1:
            return rows0, top_bottom(ranked, k), nan
        cols = top_bottom(ranked, k) if self.truncate_score_axis_in_cosine else ranked + nan
        cos = cosine_similarity_to(table, st.attribute, "row")
        rranked, rnan = _sorted_by(cos.drop(index=st.attribute))
        return top_bottom([st.attribute, *rranked], k), cols, nan + rnan

    def order(
        self,
        table: pd.DataFrame,
        *,
        model: str = "",
        target_category: str = "",
        feature_category: str = "",
    ) -> TableOrder:
        """Row and column order of ``table`` (rows = features, columns = targets) under the current state."""
        rows0 = default_order(list(table.index), feature_category)
        cols0 = default_order(list(table.columns), target_category)
        st = self.state
        last = self._last
        if st.phase != 0 and last is not None:
            tc_changed = last["target_category"] != target_category
            fc_changed = last["feature_category"] != feature_category
            if tc_changed and not fc_changed:
                self._kept = ("row", list(last["rows"]))
            elif fc_changed and not tc_changed:
                self._kept = ("column", list(last["columns"]))
            elif tc_changed and fc_changed:
                self._kept = None
        rows, cols, hidden = rows0, cols0, []
        kept_axis: Axis | None = None
        legend = "Default order (alphabetical)."
        if st.phase != 0:
            present = st.attribute in (table.columns if st.axis == "column" else table.index)
            if present:
                rows, cols, hidden = self._sorted_axes(table, rows0, cols0)
                what = "target" if st.axis == "column" else "feature"
                other = "features" if st.axis == "column" else "targets"
                if st.phase == 1:
                    legend = f"{other.capitalize()} sorted by IBS with the {what} '{st.attribute}' (most and least associated)."
                else:
                    legend = (
                        f"{other.capitalize()} sorted by IBS with the {what} '{st.attribute}'; {what}s sorted by "
                        f"cosine similarity to '{st.attribute}' (most and least similar)."
                    )
            else:
                legend = f"'{st.attribute}' is not in this table; the order it gave is kept."
            if self._kept is not None:
                axis, labels = self._kept
                labels_here = [x for x in labels if x in (table.index if axis == "row" else table.columns)]
                if labels_here:
                    kept_axis = axis
                    if axis == "row":
                        rows = labels_here
                    else:
                        cols = labels_here
                    legend += (
                        f" {'Feature' if axis == 'row' else 'Target'} order kept from the previous table."
                    )
            elif not present:
                legend = f"Default order ('{st.attribute}' is not in this table)."
        out = TableOrder(rows, cols, st.phase, st.axis, st.attribute, kept_axis, legend, hidden)
        self._last = {
            "model": model,
            "target_category": target_category,
            "feature_category": feature_category,
            "rows": rows,
            "columns": cols,
        }
        return out


def _fold(s: str) -> str:
    return "".join(
        c for c in unicodedata.normalize("NFKD", str(s)) if not unicodedata.combining(c)
    ).casefold()


def search_labels(labels: Sequence[Any], query: str) -> list[Any]:
    """Labels containing ``query`` (case- and accent-insensitive substring), in the given order; empty query: all."""
    q = _fold(query.strip()) if query else ""
    if not q:
        return list(labels)
    return [x for x in labels if q in _fold(str(x))]


def filter_order(order: TableOrder, query: str) -> tuple[TableOrder, str]:
    """Apply the search box to a table order: each axis with a match is reduced to its matches (order kept).

    Returns the filtered order and a message (empty when nothing was filtered).
    """
    if not query or not query.strip():
        return order, ""
    rows = search_labels(order.rows, query)
    cols = search_labels(order.columns, query)
    if not rows and not cols:
        return order, f"No target or feature shown matches {query!r}."
    new = TableOrder(
        rows or order.rows,
        cols or order.columns,
        order.phase,
        order.axis,
        order.attribute,
        order.kept,
        order.legend,
        order.hidden_nan,
    )
    parts = []
    if cols:
        parts.append(f"{len(cols)} target(s)")
    if rows:
        parts.append(f"{len(rows)} feature(s)")
    return new, f"Search {query!r}: showing " + " and ".join(parts) + " that match."


def puor_hex(
    values: float | Sequence[float] | np.ndarray, vmin: float = -1.0, vmax: float = 1.0
) -> list[str]:
    """PuOr colours for IBS values (``vmin`` dark orange ``#7f3b08``, centre white, ``vmax`` dark purple ``#2d004b``); NaN grey."""
    from matplotlib.colors import Normalize, to_hex

    cmap = _puor()
    norm = Normalize(vmin, vmax, clip=True)
    arr = np.atleast_1d(np.asarray(values, dtype=float))
    return [to_hex(cmap(norm(v))) if math.isfinite(v) else "#bdbdbd" for v in arr]


# =============================================================================================
# scatter-view logic
# =============================================================================================
def embed_targets(
    matrix: pd.DataFrame,
    method: str = "UMAP",
    *,
    random_state: int = 33,
    perplexity: float = 5.0,
    n_neighbors: int = 5,
) -> pd.DataFrame:
    """2-D coordinates of the targets (rows of ``matrix``, targets x features) with the thesis's parameters.

    ``"t-SNE"``: ``sklearn.manifold.TSNE(n_components=2, perplexity=5, random_state=33)``;
    ``"ISOMAP"``: ``sklearn.manifold.Isomap(n_components=2, n_neighbors=5)``;
    ``"UMAP"``: ``umap.UMAP(n_components=2, n_neighbors=5, random_state=33)`` (seed 004 Appendix B.2).
    Features with a NaN score for some target are left out (logged); too few targets raise a ValueError.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    m = matrix.astype(float)
    bad_cols = [c for c in m.columns if not np.isfinite(m[c].to_numpy()).all()]
    if bad_cols:
        logger.warning(
            "embedding: leaving out %d feature(s) with missing scores: %s", len(bad_cols), bad_cols[:10]
        )
        m = m.drop(columns=bad_cols)
    if m.shape[1] < 2:
        raise ValueError(
            f"embedding needs at least 2 features with scores for every target, got {m.shape[1]}"
        )
    n = m.shape[0]
    x = m.to_numpy()
    if method == "t-SNE":
        from sklearn.manifold import TSNE

        if n <= perplexity:
            raise ValueError(
                f"t-SNE with perplexity {perplexity} needs more than {perplexity:g} targets, got {n}"
            )
        xy = TSNE(n_components=2, perplexity=perplexity, random_state=random_state, init="pca").fit_transform(
            x
        )
    elif method == "ISOMAP":
        from sklearn.manifold import Isomap

        if n <= n_neighbors:
            raise ValueError(
                f"ISOMAP with {n_neighbors} neighbours needs more than {n_neighbors} targets, got {n}"
            )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            xy = Isomap(n_components=2, n_neighbors=n_neighbors).fit_transform(x)
        for w in caught:  # a disconnected 5-NN graph is worth knowing; sklearn's other notes are not
            level = logging.WARNING if "connected components" in str(w.message) else logging.DEBUG
            logger.log(level, "ISOMAP: %s", w.message)
    else:
        import umap

        if n <= n_neighbors + 1:
            raise ValueError(
                f"UMAP with {n_neighbors} neighbours needs more than {n_neighbors + 1} targets, got {n}"
            )
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*n_jobs value.*")
            xy = umap.UMAP(n_components=2, n_neighbors=n_neighbors, random_state=random_state).fit_transform(
                x
            )
    return pd.DataFrame(np.asarray(xy, dtype=float), index=m.index, columns=["x", "y"])


def colour_options(store: ScoreStore, model: str, target_category: str, feature_category: str) -> list[str]:
    """Categories the scatter can be coloured by (section 4.2.1, zone E).

    A non-sensitive feature category: itself and every sensitive category with scores for these
    targets; a sensitive one: only itself.
    """
    cats = [feature_category]
    if feature_category not in store.sensitive:
        cats += [
            c
            for c in store.feature_categories(model, target_category)
            if c in store.sensitive and c != feature_category
        ]
    return cats


# =============================================================================================
# rendering helpers
# =============================================================================================
def _cell_text(v: float) -> str:
    """A heat-map cell's number at two decimals; a value that rounds to zero (-0.0005) reads 0.00, not -0.00."""
    return f"{round(v, 2) + 0.0:.2f}"


def _heatmap(
    ax: Any, data: pd.DataFrame, *, vmin: float = -1.0, vmax: float = 1.0, annotate: bool | None = None
) -> Any:
    cmap = _puor().with_extremes(bad="#bdbdbd")
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
        im = _heatmap(ax, data, annotate=annotate)
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
        page with plotly.js inline: it works offline, e.g. beside the static report (issue 18).
        Hover shows target, feature and score; the clicks need the live widget."""
        o = self.order()
        fig = table_plotly(self.view(), sorted_axis=o.axis if o.phase else None, attribute=o.attribute)
        return str(fig.to_html(include_plotlyjs=True, full_html=True))

    def widget(self) -> TableWidget:
        """The live interface (zones A-E): a :class:`TableWidget` (plotly ``FigureWidget`` heat-map with
        clickable headers and cells, paging, search); display it by leaving it last in a cell."""
        return TableWidget(self)


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
                cmap=_puor(),
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
        clickable points, colour controls, search, details); display it by leaving it last in a cell."""
        return ScatterWidget(self)


# =============================================================================================
# the live views: plotly FigureWidget inside ipywidgets (seed 004 sections 4.1-4.2, zones A-E)
# =============================================================================================
#: rows and columns of the table drawn per page: 589 traits or 99 occupations stay readable by paging
#: (and plotly's zoom), never by dropping labels (issue 18)
ROWS_PER_PAGE = 40
COLUMNS_PER_PAGE = 40
_ERROR_STYLE = "color:#b00020;font-family:system-ui,sans-serif;margin:2px 0"
_NOTE_STYLE = "color:#57606a;font-family:system-ui,sans-serif;margin:2px 0"


def error_line(exc: BaseException) -> str:
    """One readable line for an exception shown inside a widget (seed 004 section 4.1, issue 18).

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


def plotly_puor() -> list[list[Any]]:
    """The PuOr colour scale of the static figures as a plotly ``colorscale`` on [-1, 1]."""
    stops = np.linspace(-1.0, 1.0, 21)
    return [[float(i) / 20, c] for i, c in enumerate(puor_hex(stops))]


def _score_text(v: Any) -> str:
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
    """The table view as a plotly figure: clickable header strips around the heat-map (section 4.1).

    Three heat-map traces: 0 = the column-header strip (one cell per target, above the table), 1 = the
    row-header strip (one cell per feature, left of it), 2 = the scores (features x targets).  Clicking a
    strip cell is a header click, clicking a score cell opens the cell's details (zone C); hover shows
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
            f"<b>{html.escape(c)}</b> × <b>{html.escape(r)}</b><br>score {_score_text(v)}"
            for c, v in zip(cols, row, strict=True)
        ]
        for r, row in zip(rows, z, strict=True)
    ]
    zc = [[1.0 if sorted_axis == "column" and c == str(attribute) else 0.0 for c in cols]]
    zr = [[1.0 if sorted_axis == "row" and r == str(attribute) else 0.0] for r in rows]
    # the two header strips: grey cells, the one the table is sorted by orange; hover says what a click does
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
                text=[[f"Click to sort by the target <b>{html.escape(c)}</b>" for c in cols]],
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
                text=[[f"Click to sort by the feature <b>{html.escape(r)}</b>"] for r in rows],
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
                hovertemplate="%{text}<br>click for details<extra></extra>",
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
    selected target.  Clicking a point of trace 0 selects it.
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
        hover = "<b>%{hovertext}</b><br>click for details<extra></extra>"
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
        custom = [[_score_text(v)] for v in vals]
        hover = (
            f"<b>%{{hovertext}}</b><br>{colour_label}: %{{customdata[0]}}<br>click for details<extra></extra>"
        )
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


def _restyle(fig: Any, new: Any, keys: Sequence[str]) -> None:
    """Copy ``keys`` of every trace of ``new`` onto the same trace of the ``FigureWidget`` ``fig``.

    One update per trace (never one batch over several traces: plotly's front end then receives
    per-trace lists with holes, and ``marker: undefined`` breaks its next render), and nested
    properties are replaced, not merged (a grey marker loses the colour scale it had)."""
    for old, fresh in zip(fig.data, new.data, strict=True):
        old.update({k: fresh[k] for k in keys if k in fresh}, overwrite=True)


class _LiveView:
    """Common plumbing of the two live views: the error line, the note line and the guard that turns
    any exception of a handler into one readable line inside the widget (issue 18: never a traceback,
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
        # now, so that the controls and the view never disagree (issue 18).
        resync = None if self.last_error else self._resync()
        if resync is not None:
            self._guarded(resync)

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
        "a cell for its per-name scatterplot). Open the notebook in Jupyter to use it; the figure above "
        "is its static version.</i></p>"
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
        self.details.children = []
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
        score = _score_text(table.loc[feature, target])
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
        self.details.children = [
            go.FigureWidget(
                indirect_scatter_plotly(pts, str(target), str(feature), float(res.ibs.loc[target, feature]))
            )
        ]


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
        "the projection, the colour and the categories). Open the notebook in Jupyter to use it; the "
        "figures above are its static version.</i></p>"
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
            self.details.children = []
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
            self.details.children = []
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
        self.details.children = children
        self.details_title.value = (
            f"<div class='bk-details' style='{_NOTE_STYLE}'><b>Details: {html.escape(str(t))}</b> "
            f"({html.escape(str(ex_.model))}, {html.escape(ex_.target_category)} × {html.escape(ex_.feature_category)}).</div>"
        )
