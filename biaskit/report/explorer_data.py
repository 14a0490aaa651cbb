"""What the explorers of indirect bias scores show, decided without a browser (seed 004, chapter 4).

The tidy score store both views read (:class:`ScoreStore`), the table view's three-click sort with its
persistence across model and category changes (:class:`TableSorter`, Algorithms B.1-B.4), the search box
(:func:`search_labels`, :func:`filter_order`) and the scatter view's 2-D embedding of the targets
(:func:`embed_targets`) and colour categories (:func:`colour_options`).  The rules are written out in
:mod:`biaskit.report.explorers`; the tests exercise them here, with no figure drawn.
"""

from __future__ import annotations

import logging
import math
import unicodedata
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    from biaskit.metrics.indirect_bias import IndirectBiasResult

logger = logging.getLogger(__name__)

__all__ = [
    "GENDER_ORDER",
    "METHODS",
    "SENSITIVE_CATEGORIES",
    "Axis",
    "ScoreStore",
    "SortState",
    "TableOrder",
    "TableSorter",
    "colour_options",
    "cosine_similarity_to",
    "default_order",
    "embed_targets",
    "filter_order",
    "search_labels",
    "top_bottom",
]

Axis = Literal["column", "row"]
METHODS = ("t-SNE", "ISOMAP", "UMAP")
SENSITIVE_CATEGORIES = ("age", "year_of_birth", "gender", "race", "religion", "sexual_orientation")
GENDER_ORDER = ("male", "female", "boy", "girl", "man", "woman")


# =============================================================================================
# data the views read
# =============================================================================================
@dataclass
class ScoreStore:
    """Tidy scores for several models and category pairs, as both views read them (section 4.1.3).

    ``scores`` has the columns ``model, target_category, feature_category, target, feature`` and one
    or more value columns (``ibs``, ``direct``, or e.g. ``r`` for the published correlation tables).
    ``results`` optionally keeps the :class:`IndirectBiasResult` of each
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
                f"no scores for model={model!r}, target_category={target_category!r}, "
                f"feature_category={feature_category!r}"
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
    """Alphabetical (case-insensitive; numbers numerically); gender in the order male, female, boy, girl, man,
    woman."""
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
                    legend = (
                        f"{other.capitalize()} sorted by IBS with the {what} '{st.attribute}' "
                        "(most and least associated)."
                    )
                else:
                    legend = (
                        f"{other.capitalize()} sorted by IBS with the {what} '{st.attribute}'; {what}s "
                        f"sorted by cosine similarity to '{st.attribute}' (most and least similar)."
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
    """Labels containing ``query`` (case- and accent-insensitive substring), in the given order; empty query:
    all."""
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
