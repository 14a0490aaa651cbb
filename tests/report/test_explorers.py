"""The table and scatter views of seed 004 chapter 4: ordering rules (three-click cycle, top/bottom 5,
cosine sort, persistence across model / category changes), search, colours and the static renderings,
all without a browser."""

from __future__ import annotations

import html
import logging
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from biaskit.report import explorer_views
from biaskit.report import explorers as ex

TRAITS = [
    "ambitious",
    "brave",
    "Caring",
    "diligent",
    "eager",
    "fair",
    "gentle",
    "honest",
    "idle",
    "jolly",
    "kind",
    "lazy",
    "mean",
    "naive",
]
GENDER = ["woman", "man", "girl", "boy", "female", "male"]
OCCS = [
    "nurse",
    "engineer",
    "teacher",
    "pilot",
    "baker",
    "judge",
    "dancer",
    "farmer",
    "writer",
    "coach",
    "chef",
    "actor",
]
COUNTRIES = ["France", "Japan", "Peru", "Chile", "Kenya", "Egypt", "Spain", "Cuba"]


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    rows = []
    for model in ("bert-base", "xl-base"):
        for tc, targets in (("occupation", OCCS), ("country", COUNTRIES)):
            for fc, feats in (("trait", TRAITS), ("gender", GENDER)):
                for t in targets:
                    for f in feats:
                        rows.append((model, tc, fc, t, f, float(np.tanh(rng.normal())), float(rng.normal())))
    return pd.DataFrame(
        rows, columns=["model", "target_category", "feature_category", "target", "feature", "ibs", "direct"]
    )


@pytest.fixture()
def store() -> ex.ScoreStore:
    return ex.ScoreStore(_frame())


def _desc(series: pd.Series) -> list[str]:
    """Independent ordering: decreasing value with numpy (values are distinct)."""
    idx = np.argsort(-series.to_numpy(dtype=float), kind="stable")
    return [series.index[i] for i in idx]


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / np.sqrt(np.dot(a, a) * np.dot(b, b)))


# =============================================================================================
# orders
# =============================================================================================
def test_default_order_rules():
    assert ex.default_order(["beta", "Alpha", "gamma"]) == ["Alpha", "beta", "gamma"]
    assert ex.default_order(GENDER, "gender") == ["male", "female", "boy", "girl", "man", "woman"]
    assert ex.default_order(["10", "9", "100", "1"]) == ["1", "9", "10", "100"]


def test_top_bottom_is_inclusive_of_the_last_five():
    labels = [f"x{i}" for i in range(12)]
    assert ex.top_bottom(labels) == labels[:5] + labels[7:]
    assert ex.top_bottom(labels[:11]) == labels[:11]  # 11 = 2*5+1 -> no truncation
    with pytest.raises(ValueError):
        ex.top_bottom(labels, 0)


def test_three_click_cycle_and_counter_reset():
    st = ex.SortState()
    assert [st.click("column", "nurse") for _ in range(4)] == [1, 2, 0, 1]
    assert st.click("row", "ambitious") == 1  # another attribute starts again at the score sort
    assert st.click("column", "nurse") == 1  # ... and the previous one's counter was reset
    assert st.click("column", "nurse") == 2
    with pytest.raises(ValueError):
        st.click("diagonal", "x")  # type: ignore[arg-type]


def test_column_click_score_then_cosine_then_reset(store):
    table = store.table("bert-base", "occupation", "trait")
    sorter = ex.TableSorter()
    kw = {"model": "bert-base", "target_category": "occupation", "feature_category": "trait"}
    o0 = sorter.order(table, **kw)
    assert o0.rows == ex.default_order(TRAITS) and o0.columns == ex.default_order(OCCS)

    assert sorter.click("column", "engineer") == 1
    o1 = sorter.order(table, **kw)
    ranked = _desc(table["engineer"])
    assert o1.rows == ranked[:5] + ranked[-5:]
    assert o1.columns == ex.default_order(OCCS)
    assert "engineer" in o1.legend

    assert sorter.click("column", "engineer") == 2
    o2 = sorter.order(table, **kw)
    assert o2.rows == ranked  # the IBS-sorted axis is not truncated in the cosine state (Algorithm B.4)
    cos = pd.Series(
        {t: _cos(table["engineer"].to_numpy(), table[t].to_numpy()) for t in OCCS if t != "engineer"}
    )
    cranked = ["engineer", *_desc(cos)]
    assert o2.columns == cranked[:5] + cranked[-5:]

    assert sorter.click("column", "engineer") == 0
    o3 = sorter.order(table, **kw)
    assert o3.rows == o0.rows and o3.columns == o0.columns


def test_row_click_is_symmetric(store):
    table = store.table("bert-base", "occupation", "trait")
    sorter = ex.TableSorter()
    kw = {"model": "bert-base", "target_category": "occupation", "feature_category": "trait"}
    sorter.click("row", "ambitious")
    o1 = sorter.order(table, **kw)
    ranked = _desc(table.loc["ambitious"])
    assert o1.columns == ranked[:5] + ranked[-5:]
    assert o1.rows == ex.default_order(TRAITS)
    sorter.click("row", "ambitious")
    o2 = sorter.order(table, **kw)
    assert o2.columns == ranked
    cos = pd.Series(
        {
            f: _cos(table.loc["ambitious"].to_numpy(), table.loc[f].to_numpy())
            for f in TRAITS
            if f != "ambitious"
        }
    )
    cr = ["ambitious", *_desc(cos)]
    assert o2.rows == cr[:5] + cr[-5:]


def test_truncation_flag_in_cosine_state(store):
    table = store.table("bert-base", "occupation", "trait")
    sorter = ex.TableSorter(truncate_score_axis_in_cosine=True)
    sorter.click("column", "engineer")
    sorter.click("column", "engineer")
    assert len(sorter.order(table, target_category="occupation", feature_category="trait").rows) == 10


# =============================================================================================
# persistence (section 4.1.2)
# =============================================================================================
def test_sort_persists_when_the_model_changes(store):
    sorter = ex.TableSorter()
    sorter.click("row", "ambitious")
    a = sorter.order(
        store.table("bert-base", "occupation", "trait"),
        model="bert-base",
        target_category="occupation",
        feature_category="trait",
    )
    t2 = store.table("xl-base", "occupation", "trait")
    b = sorter.order(t2, model="xl-base", target_category="occupation", feature_category="trait")
    r2 = _desc(t2.loc["ambitious"])
    assert b.columns == r2[:5] + r2[-5:]  # same sort, the new model's scores
    assert a.columns != b.columns


def test_targets_keep_their_order_when_the_feature_category_changes(store):
    """Sort occupations by 'ambitious', then show the gender rows for those occupations (Figure 4.4)."""
    ex_t = ex.TableExplorer(store, model="bert-base", target_category="occupation", feature_category="trait")
    ex_t.click("row", "ambitious")
    before = ex_t.order()
    ex_t.set(feature_category="gender")
    after = ex_t.order()
    assert after.columns == before.columns and len(after.columns) == 10
    assert after.rows == ["male", "female", "boy", "girl", "man", "woman"]
    assert after.kept == "column" and "kept" in after.legend
    ex_t.set(model="xl-base")  # still kept while nothing is clicked
    assert ex_t.order().columns == before.columns
    ex_t.set(feature_category="trait")
    assert ex_t.order().columns == before.columns  # the kept order still wins until the next click
    ex_t.click("row", "brave")
    t = store.table("xl-base", "occupation", "trait")
    r = _desc(t.loc["brave"])
    o = ex_t.order()
    assert o.kept is None and o.columns == r[:5] + r[-5:]


def test_features_keep_their_order_when_the_target_category_changes(store):
    ex_t = ex.TableExplorer(store, model="bert-base", target_category="occupation", feature_category="trait")
    ex_t.click("column", "engineer")
    before = ex_t.order()
    ex_t.set(target_category="country")
    after = ex_t.order()
    assert after.rows == before.rows
    assert after.columns == ex.default_order(COUNTRIES)
    assert after.kept == "row"


def test_cosine_state_feature_category_change_keeps_targets_and_resorts_features(store):
    ex_t = ex.TableExplorer(store, model="bert-base", target_category="occupation", feature_category="trait")
    ex_t.click("column", "engineer")
    ex_t.click("column", "engineer")
    before = ex_t.order()
    ex_t.set(feature_category="gender")
    after = ex_t.order()
    assert after.columns == before.columns  # the cosine order of the targets is kept
    g = store.table("bert-base", "occupation", "gender")["engineer"]
    assert after.rows == _desc(g)  # features re-sorted by IBS with engineer


def test_unknown_category_is_refused_and_state_kept(store):
    ex_t = ex.TableExplorer(store)
    with pytest.raises(KeyError, match="no scores"):
        ex_t.set(feature_category="religion")
    assert ex_t.feature_category == "trait"
    with pytest.raises(KeyError, match="not a target"):
        ex_t.click("column", "ambitious")


def test_nan_scores_are_not_in_top_or_bottom():
    t = pd.DataFrame(
        {"a": [0.9, np.nan, 0.1] + [0.5 - 0.05 * i for i in range(10)], "b": np.linspace(-1, 1, 13)},
        index=[f"f{i:02d}" for i in range(13)],
    )
    sorter = ex.TableSorter()
    sorter.click("column", "a")
    o = sorter.order(t)
    assert "f01" not in o.rows and o.hidden_nan == ["f01"]
    cos = ex.cosine_similarity_to(t, "a", "column")
    ok = np.isfinite(t["a"].to_numpy())
    assert cos["b"] == pytest.approx(_cos(t["a"].to_numpy()[ok], t["b"].to_numpy()[ok]))


# =============================================================================================
# search
# =============================================================================================
def test_search_labels():
    assert ex.search_labels(["Engineer", "engine driver", "nurse"], "ENGIN") == ["Engineer", "engine driver"]
    assert ex.search_labels(["Zoë", "Zoey"], "zoe") == ["Zoë", "Zoey"]  # accent-insensitive
    assert ex.search_labels(["a", "b"], "  ") == ["a", "b"]


def test_search_filters_the_table_keeping_the_sort(store):
    ex_t = ex.TableExplorer(store, model="bert-base", target_category="occupation", feature_category="trait")
    ex_t.click("column", "engineer")
    ex_t.click("column", "engineer")
    sorted_rows = ex_t.order().rows
    ex_t.set(query="er")  # targets: engineer, teacher, farmer, writer (those shown); features: eager
    v = ex_t.view()
    shown_before = ex_t.sorter.order(
        store.table("bert-base", "occupation", "trait"),
        model="bert-base",
        target_category="occupation",
        feature_category="trait",
    ).columns
    assert list(v.columns) == [c for c in shown_before if "er" in c.lower()]
    assert list(v.index) == [r for r in sorted_rows if "er" in r] == ["eager"]
    assert "match" in ex_t.message
    ex_t.set(query="engin")  # only a target matches: every feature row stays, in its sorted order
    assert list(ex_t.view().index) == sorted_rows and list(ex_t.view().columns) == ["engineer"]
    ex_t.set(query="zzz")
    assert list(ex_t.view().columns) == shown_before and "No target or feature" in ex_t.message
    ex_t.set(query="")
    ex_t.view()
    assert ex_t.message == ""


# =============================================================================================
# colours, embeddings, scatter view
# =============================================================================================
def test_puor_endpoints():
    assert ex.puor_hex([-1, 0, 1]) == ["#7f3b08", "#f7f7f7", "#2d004b"]
    assert ex.puor_hex([float("nan")]) == ["#bdbdbd"]
    assert ex.puor_hex(-5.0) == ["#7f3b08"]  # clipped


@pytest.mark.parametrize("method", [pytest.param("t-SNE", marks=pytest.mark.slow), "ISOMAP"])
def test_embedding_parameters_and_determinism(store, method):
    m = store.matrix("bert-base", "occupation", "trait")
    a = ex.embed_targets(m, method)
    b = ex.embed_targets(m, method)
    assert a.shape == (12, 2) and list(a.index) == OCCS
    np.testing.assert_allclose(a.to_numpy(), b.to_numpy())
    if method == "ISOMAP":  # independent: sklearn Isomap with 5 neighbours
        from sklearn.manifold import Isomap

        ref = Isomap(n_components=2, n_neighbors=5).fit_transform(m.to_numpy())
        np.testing.assert_allclose(np.abs(a.to_numpy()), np.abs(ref), atol=1e-8)


@pytest.mark.slow
def test_umap_embedding(store):
    m = store.matrix("bert-base", "occupation", "trait")
    a = ex.embed_targets(m, "UMAP")
    assert a.shape == (12, 2) and np.isfinite(a.to_numpy()).all()


def test_embedding_bad_input(store, caplog):
    m = store.matrix("bert-base", "country", "trait")
    with pytest.raises(ValueError, match="more than 5"):
        ex.embed_targets(m.iloc[:5], "t-SNE")
    with pytest.raises(ValueError, match="method"):
        ex.embed_targets(m, "PCA")
    m2 = store.matrix("bert-base", "occupation", "trait").copy()
    m2.iloc[0, 0] = np.nan
    with caplog.at_level(logging.WARNING):
        out = ex.embed_targets(m2, "ISOMAP")
    assert out.shape == (12, 2) and "leaving out 1 feature" in caplog.text


def test_colour_options(store):
    assert ex.colour_options(store, "bert-base", "occupation", "trait") == ["trait", "gender"]
    assert ex.colour_options(store, "bert-base", "occupation", "gender") == ["gender"]


def test_scatter_explorer_pick_colour_search_and_details(store):
    import matplotlib.pyplot as plt

    sc = ex.ScatterExplorer(
        store, model="bert-base", target_category="occupation", feature_category="trait", method="ISOMAP"
    )
    sc.colour_by("gender", "woman")
    np.testing.assert_allclose(
        sc.colours().to_numpy(), store.matrix("bert-base", "occupation", "gender")["woman"].to_numpy()
    )
    with pytest.raises(ValueError, match="cannot colour"):
        sc.colour_by("religion", "Muslim")
    sc.set(query="ENG")
    fig = sc.figure(connect_pick=True)
    assert sc.matches() == ["engineer"]
    assert sc.on_pick(SimpleNamespace(ind=[3])) == OCCS[3]
    assert sc.on_pick(SimpleNamespace(ind=[])) is None
    d = sc.details()
    assert list(d.index) == _desc(store.matrix("bert-base", "occupation", "trait").loc[OCCS[3]])
    fig2 = sc.details_figure()
    plt.close(fig)
    plt.close(fig2)
    sc.set(feature_category="gender")  # colour category still allowed (itself)
    assert sc.colour_category == "gender"
    sc.set(feature_category="trait")
    with pytest.raises(KeyError):
        sc.select("France")


def test_static_images_are_saved(store, tmp_path, monkeypatch):
    monkeypatch.setenv("BIASKIT_RESULTS_DIR", str(tmp_path))
    t = ex.TableExplorer(store)
    t.click("row", "ambitious")
    p1 = t.save_static("t13_table")
    s = ex.ScatterExplorer(store, method="ISOMAP")
    p2 = s.save_static("t13_scatter")
    assert p1.exists() and p2.exists() and p1.stat().st_size > 1000


def test_widgets_build_headless(store):
    """The live views build without a browser, and their plots are plain plotly outputs (no widget model
    of their own that a page would have to start or restore)."""
    pytest.importorskip("ipywidgets")
    t = ex.TableExplorer(store)
    w = t.widget()
    assert w.box.children and not w.last_error
    (item,) = w.plot.out.outputs
    assert item["output_type"] == "display_data" and ex.PLOTLY_MIME in item["data"]
    assert "bk-table-explorer" in w.box._dom_classes and "bk-plot" in w.plot.out._dom_classes
    s = ex.ScatterExplorer(store, method="ISOMAP")
    assert s.widget().box.children
    import plotly.graph_objects as go

    def widgets_in(box):
        for c in getattr(box, "children", ()):
            yield c
            yield from widgets_in(c)

    assert not [c for c in widgets_in(w.box) if isinstance(c, go.FigureWidget)]


# =============================================================================================
# the live views (seed 004 sections 4.1-4.2), driven without a browser: each control is set as the
# page sets it, and what the page would draw is read back from the plotly JSON it receives


def _values(v):
    """A plotly JSON array as a list (plotly writes numeric arrays as base64 typed arrays)."""
    import base64

    if isinstance(v, dict) and "bdata" in v:
        arr = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        if "shape" in v:
            arr = arr.reshape([int(n) for n in str(v["shape"]).split(",")])
        return arr.tolist()
    return v


def _csv(link_html: str, n: int = 0) -> pd.DataFrame:
    """The CSV behind the ``n``-th download link of a widget's HTML."""
    import base64
    import io
    import re

    links = re.findall(r"href='data:text/csv;base64,([^']+)'", link_html)
    return pd.read_csv(io.StringIO(base64.b64decode(links[n]).decode("utf-8")))


class _Bridge:
    """Per-name scores behind one table, like an IndirectBiasResult (IBS = corr of BS1 row and BS2 column)."""

    def __init__(self, targets, features, seed=0):
        rng = np.random.default_rng(seed)
        names = [f"n{i}" for i in range(20)]
        self.bs1 = pd.DataFrame(rng.normal(size=(len(targets), 20)), index=targets, columns=names)
        self.bs2 = pd.DataFrame(rng.normal(size=(20, len(features))), index=names, columns=features)
        self.ibs = pd.DataFrame(
            [[float(np.corrcoef(self.bs1.loc[t], self.bs2[f])[0, 1]) for f in features] for t in targets],
            index=targets,
            columns=features,
        )

    def bridge_points(self, target, feature):
        return pd.DataFrame(
            {
                "name": list(self.bs2.index),
                "x": self.bs1.loc[target].to_numpy(),
                "y": self.bs2[feature].to_numpy(),
            }
        )


def _bridge_store() -> ex.ScoreStore:
    rows, results = [], {}
    for fc, feats in (("trait", TRAITS), ("gender", GENDER)):
        b = results[("bert-base", "occupation", fc)] = _Bridge(OCCS, feats, seed=len(feats))
        rows += [("bert-base", "occupation", fc, t, f, b.ibs.loc[t, f]) for t in OCCS for f in feats]
    cols = ["model", "target_category", "feature_category", "target", "feature", "ibs"]
    return ex.ScoreStore(pd.DataFrame(rows, columns=cols), results)


def _beer_store() -> ex.ScoreStore:
    """The fixture plus country x beverage (the thesis's beer example), without country x trait."""
    f = _frame()
    rng = np.random.default_rng(3)
    rows = [
        ("bert-base", "country", "beverage", c, b, float(np.tanh(rng.normal())), 0.0)
        for c in COUNTRIES
        for b in ("beer", "tea", "wine", "water")
    ]
    f = pd.concat([f, pd.DataFrame(rows, columns=f.columns)], ignore_index=True)
    keep = ~((f["target_category"] == "country") & (f["feature_category"] == "trait"))
    return ex.ScoreStore(f[keep].reset_index(drop=True))


def test_error_line_and_pages():
    assert ex.error_line(KeyError("None is not a feature (row) of the table")) == (
        "None is not a feature (row) of the table"
    )
    assert ex.error_line(KeyError("nurse")) == "nurse"
    assert ex.error_line(ValueError("two\n  lines")) == "two lines"
    assert ex.page_bounds(589, 0, 40) == (0, 40, 0)
    assert ex.page_bounds(589, 14, 40) == (560, 589, 14)
    assert ex.page_bounds(589, 99, 40) == (560, 589, 14)  # clamped
    assert ex.page_bounds(0, 3, 40) == (0, 0, 0)
    with pytest.raises(ValueError):
        ex.page_bounds(10, 0, 0)


def test_table_plotly_layout_hover_and_header_marks():
    pytest.importorskip("plotly")
    data = pd.DataFrame([[0.5, np.nan], [-0.25, 1.0]], index=["brave", "kind"], columns=["nurse", "pilot"])
    fig = ex.table_plotly(data, sorted_axis="column", attribute="pilot")
    heads, rows, cells = fig.data
    assert list(fig.layout.xaxis2.ticktext) == ["nurse", "pilot"]
    assert list(fig.layout.yaxis3.ticktext) == ["brave", "kind"]
    assert list(heads.z[0]) == [0.0, 1.0]  # the column the table is sorted by is marked
    assert [list(r) for r in rows.z] == [[0.0], [0.0]]
    assert "score 0.500" in cells.text[0][0] and "score no score" in cells.text[0][1]
    assert cells.z[0][1] is None  # NaN drawn grey (no colour), not as 0
    assert list(fig.layout.yaxis.range) == [1.5, -0.5]  # first row on top
    assert "click" not in cells.hovertemplate  # nothing in the page answers a click on a cell


@pytest.mark.slow
def test_table_widget_sort_menus_details_exports_and_reset():
    """The thesis's three header clicks chosen from menus (keyboard-reachable), the cell details from menus,
    CSV of the table as shown, and Reset view."""
    pytest.importorskip("ipywidgets")
    store = _bridge_store()
    t = ex.TableExplorer(store, target_category="occupation", feature_category="trait")
    w = t.widget()
    (fig,) = w.plot.figures()
    assert fig["layout"]["xaxis2"]["ticktext"] == ex.default_order(OCCS)
    # Sort by the target nurse: features sorted by IBS with nurse, 5 most and 5 least (an independent sort)
    w.dd_sort.value = ("column", "nurse")
    assert not w.last_error and t.sorter.state.phase == 1
    (fig,) = w.plot.figures()
    table = store.table("bert-base", "occupation", "trait")
    assert fig["layout"]["yaxis3"]["ticktext"] == ex.top_bottom(_desc(table["nurse"]), 5)
    heads = _values(fig["data"][0]["z"])
    cols = fig["layout"]["xaxis2"]["ticktext"]
    assert heads[0][cols.index("nurse")] == 1.0  # the sort column marked
    assert "'nurse'" in html.unescape(w.legend.value)
    # Order = similarity: the second click of the thesis (nurse first, cosine order)
    w.dd_order.value = 2
    (fig,) = w.plot.figures()
    assert t.sorter.state.phase == 2 and fig["layout"]["xaxis2"]["ticktext"][0] == "nurse"
    # a header click (the thesis's gesture, e.g. from code) moves the menus with it
    w._run(w.header_click, "row", "brave")
    assert t.sorter.state.axis == "row" and w.dd_sort.value == ("row", "brave") and w.dd_order.value == 1
    # the table as shown, as CSV: exactly the explorer's view
    shown = _csv(w.downloads.value, 0).set_index("feature")
    view = t.view()
    assert list(shown.columns) == [str(c) for c in view.columns] and list(shown.index) == list(view.index)
    np.testing.assert_allclose(shown.to_numpy(), view.to_numpy(), rtol=1e-12)
    # cell details from the menus: the per-name scatter of (nurse, brave), its points as CSV
    w.dd_cell_target.value = "nurse"
    w.dd_cell_feature.value = "brave"
    assert w.cell == ("nurse", "brave") and "Details: nurse × brave" in w.details_title.value
    (det,) = w.details.figures()
    np.testing.assert_allclose(
        _values(det["data"][0]["x"]), store.results[("bert-base", "occupation", "trait")].bs1.loc["nurse"]
    )
    pts = _csv(w.downloads.value, 2)
    assert list(pts.columns) == ["name", "x", "y"] and len(pts) == 20
    # PNG and SVG of both plots
    w.images_button.click()
    assert w.images.value.count("download=") == 4 and "data:image/svg+xml;base64," in w.images.value
    # a change withdraws those images (never a stale file), Reset view goes back to the first view
    w.dd_feature.value = "gender"
    assert "download=" not in w.images.value and "changed" in w.images.value
    w.reset.click()
    assert (t.feature_category, t.sorter.state.phase, w.cell, w.dd_sort.value) == (
        "trait",
        0,
        None,
        ("none", ""),
    )
    assert not w.details.figures() and "No cell chosen" in w.details_title.value and not w.last_error
    assert w.dd_order.value == 1 and w.dd_order.disabled  # a new sort starts by score, as the first click
    assert w.busy_log[-1] == "Resetting the view" and w.busy_line.value == ""


def test_table_widget_dependent_options_paging_and_stale_details():
    pytest.importorskip("ipywidgets")
    store = _beer_store()
    t = ex.TableExplorer(store, target_category="occupation", feature_category="trait")
    w = t.widget()
    assert [v for _, v in w.dd_feature.options] == ["trait", "gender"]
    w._run(w.cell_click, "nurse", "brave")
    assert "Details:" in w.details_title.value and "No per-name scores" in w.details_title.value
    w.dd_target.value = "country"  # Features recomputed: beverage offered, trait gone
    assert [v for _, v in w.dd_feature.options] == ["beverage", "gender"]
    assert dict(w.dd_feature.options)["gender (sensitive)"] == "gender"
    assert (t.target_category, t.feature_category) == ("country", "beverage")
    assert "country (columns) × beverage (rows)" in w.legend.value and not w.last_error
    assert "Details cleared" in w.details_title.value and not w.details.figures()  # no stale panel
    assert w.dd_cell_target.value == "(none)"
    (fig,) = w.plot.figures()
    assert "beer" in fig["layout"]["yaxis3"]["ticktext"]
    # paging: a small page size shows every row, page by page, never a truncated table
    w.rows_per_page = 3
    w.redraw()
    (fig,) = w.plot.figures()
    assert fig["layout"]["yaxis3"]["ticktext"] == ex.default_order(["beer", "tea", "wine", "water"])[:3]
    assert "rows 1–3 of 4" in w.pages.value and w.row_prev.disabled and not w.row_next.disabled
    w.row_next.click()
    (fig,) = w.plot.figures()
    assert "rows 4–4 of 4" in w.pages.value and w.row_next.disabled
    assert len(fig["layout"]["yaxis3"]["ticktext"]) == 1


def test_scatter_widget_controls_colour_menu_and_details():
    pytest.importorskip("ipywidgets")
    store = _beer_store()
    s = ex.ScatterExplorer(store, target_category="occupation", feature_category="trait", method="ISOMAP")
    s.colour_by("gender", "woman")
    s.set(query="engineer")
    s.select("engineer")
    w = s.widget()
    # the initial state is in the controls
    assert (w.search.value, w.dd_sel.value) == ("engineer", "engineer")
    assert "Details: engineer" in w.details_title.value and len(w.details.figures()) == 1
    # the Colour by menu in the plot: "no colour" and one entry per feature of trait and gender, the
    # entry of woman active; each entry's colours are the store's scores (in the plot's point order)
    (fig,) = w.plot.figures()
    menu = fig["layout"]["updatemenus"][0]
    labels = [b["label"] for b in menu["buttons"]]
    assert labels == ["no colour", *[f"trait: {f}" for f in TRAITS], *[f"gender: {g}" for g in GENDER]]
    assert labels[menu["active"]] == "gender: woman"
    order = list(_values(fig["data"][0]["hovertext"]))
    assert sorted(order) == sorted(OCCS)
    man = menu["buttons"][labels.index("gender: man")]["args"]
    np.testing.assert_allclose(
        man[0]["marker.color"][0], store.matrix("bert-base", "occupation", "gender")["man"].reindex(order)
    )
    assert man[1]["title.text"] == "Coloured by the score with 'man' (gender)" and man[2] == [0]
    assert menu["buttons"][0]["args"][0]["marker.showscale"] == [False]
    # the figure starts as its active entry says: woman's scores and hover text, colour-bar title
    np.testing.assert_allclose(
        _values(fig["data"][0]["marker"]["color"]),
        store.matrix("bert-base", "occupation", "gender")["woman"].reindex(order),
    )
    i = order.index("nurse")
    woman = store.matrix("bert-base", "occupation", "gender").loc["nurse", "woman"]
    assert fig["data"][0]["customdata"][i] == [f"{woman:.3f}"]
    assert fig["layout"]["title"]["text"].startswith("Coloured by the score with 'woman'")
    assert "click" not in fig["data"][0]["hovertemplate"]
    # Details of nurse, then Features = gender: details recomputed, no KeyError
    w.dd_sel.value = "nurse"
    assert s.selected == "nurse" and "Details: nurse" in w.details_title.value
    w.dd_feature.value = "gender"
    assert not w.last_error and "Details: nurse" in w.details_title.value
    # Targets = country: beverage offered; nurse is no target there, so its details are cleared
    w.dd_target.value = "country"
    assert [v for _, v in w.dd_feature.options] == ["beverage", "gender"]
    assert s.selected is None and w.dd_sel.value == "(none)" and not w.details.figures()
    assert "details cleared" in w.status.value
    w.dd_feature.value = "beverage"
    assert (s.target_category, s.feature_category) == ("country", "beverage") and not w.last_error
    (fig,) = w.plot.figures()
    labels = [b["label"] for b in fig["layout"]["updatemenus"][0]["buttons"]]
    assert labels[1:] == [f"beverage: {b}" for b in ("beer", "tea", "wine", "water")] + [
        f"gender: {g}" for g in GENDER
    ]
    w.dd_method.value = "t-SNE"
    assert not w.last_error and "placed by t-SNE" in w.status.value
    assert "Interactive explorer" in w._repr_mimebundle_()["text/plain"]
    # the points as CSV, with every colour score; Reset view goes back to the first view
    points = _csv(w.downloads.value, 0)
    assert list(points.columns[:5]) == ["target", "x", "y", "search_match", "selected"]
    np.testing.assert_allclose(
        points.set_index("target")["gender: woman"],
        store.matrix("bert-base", "country", "gender")["woman"].reindex(points["target"]),
    )
    w.reset.click()
    assert (s.target_category, s.method, s.selected, s.colour_attribute) == (
        "occupation",
        "ISOMAP",
        "engineer",
        "woman",
    )
    assert w.dd_target.value == "occupation" and w.dd_sel.value == "engineer" and not w.last_error


def test_scatter_widget_errors_are_one_line_in_the_widget(monkeypatch):
    pytest.importorskip("ipywidgets")
    s = ex.ScatterExplorer(_beer_store(), method="ISOMAP")
    w = s.widget()

    def boom(*_a, **_k):
        raise ValueError("embedding needs at least 2 features with scores for every target, got 1")

    monkeypatch.setattr(explorer_views, "embed_targets", boom)  # where ScatterExplorer looks it up
    w.dd_method.value = "t-SNE"
    assert w.last_error.startswith("embedding needs at least 2 features")
    assert "Traceback" not in w.error.value
    assert not w.plot.figures()  # the plot no longer shows the previous projection
    assert w.busy_line.value == "" and "bk-busy" not in w.box._dom_classes


def test_the_busy_line_names_the_computation_while_it_runs(monkeypatch):
    """A projection that is not computed yet: while it runs, the widget says which (method, how many
    targets) and dims the plot; afterwards both are gone."""
    pytest.importorskip("ipywidgets")
    s = ex.ScatterExplorer(_beer_store(), method="ISOMAP")
    w = s.widget()
    seen = []
    real = explorer_views.embed_targets

    def watched(matrix, method, **kw):
        seen.append((w.busy_line.value, "bk-busy" in w.box._dom_classes))
        return real(matrix, method, **kw)

    monkeypatch.setattr(explorer_views, "embed_targets", watched)
    w.dd_method.value = "t-SNE"
    ((line, dimmed),) = seen
    assert "Computing the t-SNE projection of 12 occupation targets" in html.unescape(line) and dimmed
    assert w.busy_line.value == "" and "bk-busy" not in w.box._dom_classes
    w.dd_method.value = "ISOMAP"  # computed before: drawn again, without a new computation
    assert len(seen) == 1 and w.busy_log[-1].startswith("Drawing the ISOMAP projection")


def test_store_notes_are_shown_for_stand_in_models(store):
    pytest.importorskip("ipywidgets")
    st = ex.ScoreStore(store.scores, notes={"xl-base": "xl-base has random weights: not a finding."})
    w = ex.TableExplorer(st).widget()
    assert w.note.value == ""
    w.dd_model.value = "xl-base"
    assert "random weights" in w.note.value


def test_labels_from_the_data_are_escaped_in_the_views():
    """A model or word that looks like markup is shown as text: escaped in every HTML line and plot title."""
    pytest.importorskip("ipywidgets")
    f = _frame()
    f["model"] = f["model"].replace("bert-base", "<img src=x onerror=alert(1)>")
    st = ex.ScoreStore(f)
    w = ex.TableExplorer(st).widget()
    assert "<img" not in w.legend.value and "&lt;img src=x" in w.legend.value
    s = ex.ScatterExplorer(st, method="ISOMAP")
    s.set(query="<b>")
    sw = s.widget()
    assert "<img" not in sw.status.value and "Search '&lt;b&gt;'" in sw.status.value
    (fig,) = sw.plot.figures()
    assert "&lt;b&gt;" in fig["data"][1]["name"]


def test_store_validation(store):
    with pytest.raises(ValueError, match="lack the column"):
        ex.ScoreStore(pd.DataFrame({"model": ["m"]}))
    f = _frame()
    with pytest.raises(ValueError, match="duplicated"):
        ex.ScoreStore(pd.concat([f, f.iloc[:1]]))
    assert store.models() == ["bert-base", "xl-base"]
    assert store.feature_categories("bert-base", "occupation") == ["trait", "gender"]
    with pytest.raises(KeyError):
        store.matrix("bert-base", "occupation", "religion")


def test_interactive_html_is_self_contained(store):
    """The same views as offline HTML for the report: plotly.js inline, no script from the network, and the
    scatter's Colour by menu in the page."""
    pytest.importorskip("plotly")
    t = ex.TableExplorer(store)
    t.click("column", "nurse")
    page = t.interactive_html()
    assert "<script src=" not in page.replace('<script src="data:', "") and "Plotly.newPlot" in page
    assert len(page) > 1_000_000  # plotly.js itself is in the page
    s = ex.ScatterExplorer(store, method="ISOMAP")
    s.colour_by("gender", "woman")
    page = s.interactive_html()
    assert "updatemenus" in page and "gender: woman" in page


def test_a_choice_made_while_a_handler_runs_is_applied_after_it():
    """The kernel may take the reader's next choice while a handler runs, and the muted handler would drop it
    (the Projection control would show t-SNE over an ISOMAP plot).  The widget applies what its controls show
    once the handler ends."""
    pytest.importorskip("ipywidgets")
    s = ex.ScatterExplorer(_beer_store(), method="ISOMAP")
    w = s.widget()
    selection_changed = w.selection_changed

    def selection_then_projection() -> None:
        selection_changed()
        w.dd_method.value = "t-SNE"  # arrives while the selection handler runs: muted

    w.selection_changed = selection_then_projection  # type: ignore[method-assign]
    w.dd_sel.value = "nurse"
    assert s.method == "t-SNE" and "placed by t-SNE" in w.status.value and not w.last_error
    assert s.selected == "nurse" and w.dd_sel.value == "nurse"


def test_table_figure_prints_no_negative_zero():
    """A score that rounds to 0 from below (the thesis's bert-base Age x Sport r = -0.0005) reads 0.00,
    not -0.00."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    f = pd.DataFrame(
        [
            ("m", "occupation", "gender", t, g, v, 0.0)
            for (t, g), v in {
                ("nurse", "woman"): -0.0005,
                ("nurse", "man"): -0.004,
                ("pilot", "woman"): -0.006,
                ("pilot", "man"): 0.3,
            }.items()
        ],
        columns=["model", "target_category", "feature_category", "target", "feature", "ibs", "direct"],
    )
    tv = ex.TableExplorer(
        ex.ScoreStore(f), model="m", target_category="occupation", feature_category="gender"
    )
    fig = tv.figure(annotate=True)
    cells = sorted(t.get_text() for t in fig.axes[0].texts)
    assert cells == ["-0.01", "0.00", "0.00", "0.30"]
    plt.close(fig)
