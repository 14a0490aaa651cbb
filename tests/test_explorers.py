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
    pytest.importorskip("ipywidgets")
    pytest.importorskip("anywidget")
    t = ex.TableExplorer(store)
    w = t.widget()
    assert w.box.children and not w.last_error
    s = ex.ScatterExplorer(store, method="ISOMAP")
    assert s.widget().box.children


# =============================================================================================
# the live views (seed 004 sections 4.1-4.2), driven without a browser: the plotly click
# callbacks are called as the front end calls them, and every control is read back


def _points(xs=(), ys=(), inds=()):
    """What plotly's FigureWidget passes to an on_click callback."""
    return SimpleNamespace(xs=list(xs), ys=list(ys), point_inds=list(inds))


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


def test_table_widget_clicks_sort_open_details_and_errors_are_one_line(store):
    pytest.importorskip("anywidget")
    t = ex.TableExplorer(store, target_category="occupation", feature_category="trait")
    w = t.widget()
    assert (w.dd_model.value, w.dd_target.value, w.dd_feature.value) == ("bert-base", "occupation", "trait")
    cols0 = list(w.fig.layout.xaxis2.ticktext)
    # a click on the column-header strip at "nurse": rows sorted by IBS with nurse (5 most, 5 least)
    w._clicked_column(None, _points(xs=[cols0.index("nurse")], ys=[0]), None)
    assert not w.last_error and t.sorter.state.phase == 1
    rows = list(w.fig.layout.yaxis3.ticktext)
    assert rows == ex.top_bottom(_desc(store.table("bert-base", "occupation", "trait")["nurse"]), 5)
    assert "'nurse'" in html.unescape(w.legend.value) and w.fig.data[0].z[0][cols0.index("nurse")] == 1.0
    # second click on the same header (it may have moved): cosine order, nurse first
    cols1 = list(w.fig.layout.xaxis2.ticktext)
    w._clicked_column(None, _points(xs=[cols1.index("nurse")], ys=[0]), None)
    assert t.sorter.state.phase == 2 and w.fig.layout.xaxis2.ticktext[0] == "nurse"
    # a row-header click
    w._clicked_row(None, _points(xs=[0], ys=[0]), None)
    assert t.sorter.state.axis == "row" and t.sorter.state.attribute == rows[0]
    # a cell click: its details (no per-name scores in this store: one line says so)
    w._clicked_cell(None, _points(xs=[0], ys=[1]), None)
    assert "Details:" in w.details_title.value and "No per-name scores" in w.details_title.value
    # a click where nothing is drawn any more: one readable line, no exception
    w._clicked_row(None, _points(xs=[0], ys=[99]), None)
    assert w.last_error == "nothing is drawn at position 99 any more; click again"
    assert "Traceback" not in w.error.value and "bk-error" in w.error.value
    w.reset.click()
    assert t.sorter.state.phase == 0 and not w.last_error


def test_table_widget_dependent_options_paging_and_stale_details():
    pytest.importorskip("anywidget")
    store = _beer_store()
    t = ex.TableExplorer(store, target_category="occupation", feature_category="trait")
    w = t.widget()
    assert [v for _, v in w.dd_feature.options] == ["trait", "gender"]
    w._clicked_cell(None, _points(xs=[0], ys=[0]), None)
    assert "Details:" in w.details_title.value
    w.dd_target.value = "country"  # Features recomputed: beverage offered, trait gone
    assert [v for _, v in w.dd_feature.options] == ["beverage", "gender"]
    assert dict(w.dd_feature.options)["gender (sensitive)"] == "gender"
    assert (t.target_category, t.feature_category) == ("country", "beverage")
    assert "country (columns) × beverage (rows)" in w.legend.value and not w.last_error
    assert "Details cleared" in w.details_title.value and not w.details.children  # no stale panel
    assert "beer" in list(w.fig.layout.yaxis3.ticktext)
    # paging: a small page size shows every row, page by page, never a truncated table
    w.rows_per_page = 3
    w.redraw()
    assert list(w.fig.layout.yaxis3.ticktext) == ex.default_order(["beer", "tea", "wine", "water"])[:3]
    assert "rows 1–3 of 4" in w.pages.value and w.row_prev.disabled and not w.row_next.disabled
    w.row_next.click()
    assert "rows 4–4 of 4" in w.pages.value and w.row_next.disabled
    assert len(w.fig.layout.yaxis3.ticktext) == 1


def test_scatter_widget_controls_show_the_state_and_follow_choices():
    pytest.importorskip("anywidget")
    store = _beer_store()
    s = ex.ScatterExplorer(store, target_category="occupation", feature_category="trait", method="ISOMAP")
    s.colour_by("gender", "woman")
    s.set(query="engineer")
    s.select("engineer")
    w = s.widget()
    # the initial state is in the controls (not "(none)" while the plot is coloured / has a selection)
    assert (w.dd_ccat.value, w.dd_cattr.value) == ("gender", "woman")
    assert (w.search.value, w.dd_sel.value) == ("engineer", "engineer")
    assert "Details: engineer" in w.details_title.value and len(w.details.children) == 1
    # hover text carries name and score
    trace = w.fig.data[0]
    i = list(trace.hovertext).index("nurse")
    assert (
        trace.customdata[i][0]
        == f"{store.matrix('bert-base', 'occupation', 'gender').loc['nurse', 'woman']:.3f}"
    )
    assert "IBS with 'woman'" in trace.hovertemplate
    # a click on a point selects it and shows its details; the dropdown follows
    w._clicked_point(None, _points(inds=[i]), None)
    assert s.selected == "nurse" and w.dd_sel.value == "nurse" and "Details: nurse" in w.details_title.value
    # nurse selected, then Features = gender: details recomputed, no KeyError
    w.dd_feature.value = "gender"
    assert not w.last_error and "Details: nurse" in w.details_title.value
    # colour: none, then gender fills Attribute with its first word at once
    w.dd_ccat.value = "(none)"
    assert w.dd_cattr.value is None and s.colour_category is None
    w.dd_ccat.value = "gender"
    assert w.dd_cattr.value == "woman" and s.colour_attribute == "woman"
    # Targets = country: beverage offered; nurse is no target there, so its details are cleared
    w.dd_target.value = "country"
    assert [v for _, v in w.dd_feature.options] == ["beverage", "gender"]
    assert s.selected is None and w.dd_sel.value == "(none)" and not w.details.children
    assert "details cleared" in w.status.value
    w.dd_feature.value = "beverage"
    assert (s.target_category, s.feature_category) == ("country", "beverage") and not w.last_error
    assert w.dd_ccat.options == ("(none)", "beverage", "gender")
    # an embedding that cannot be made (t-SNE needs more than 5 targets: 8 here, so make it fail)
    w.dd_method.value = "t-SNE"
    assert not w.last_error
    assert "Interactive explorer" in w._repr_mimebundle_()["text/plain"]


def test_scatter_widget_errors_are_one_line_in_the_widget(monkeypatch):
    pytest.importorskip("anywidget")
    s = ex.ScatterExplorer(_beer_store(), method="ISOMAP")
    w = s.widget()

    def boom(*_a, **_k):
        raise ValueError("embedding needs at least 2 features with scores for every target, got 1")

    monkeypatch.setattr(explorer_views, "embed_targets", boom)  # where ScatterExplorer looks it up
    w.dd_method.value = "t-SNE"
    assert w.last_error.startswith("embedding needs at least 2 features")
    assert "Traceback" not in w.error.value
    assert list(w.fig.data[0].x) == []  # the plot no longer shows the previous projection


def test_store_notes_are_shown_for_stand_in_models(store):
    pytest.importorskip("anywidget")
    st = ex.ScoreStore(store.scores, notes={"xl-base": "xl-base has random weights: not a finding."})
    w = ex.TableExplorer(st).widget()
    assert w.note.value == ""
    w.dd_model.value = "xl-base"
    assert "random weights" in w.note.value


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
    """The same views as offline HTML for the report: plotly.js inline, no script from the network."""
    pytest.importorskip("plotly")
    t = ex.TableExplorer(store)
    t.click("column", "nurse")
    page = t.interactive_html()
    assert "<script src=" not in page.replace('<script src="data:', "") and "Plotly.newPlot" in page
    assert len(page) > 1_000_000  # plotly.js itself is in the page
    s = ex.ScatterExplorer(store, method="ISOMAP")
    s.colour_by("gender", "woman")
    assert "IBS with &#x27;woman&#x27;" in s.interactive_html() or "IBS with 'woman'" in s.interactive_html()


def test_a_choice_made_while_a_handler_runs_is_applied_after_it():
    """In JupyterLab the kernel may take the reader's next choice while a handler still runs (creating a
    FigureWidget lets it read messages); the muted handler would drop it and the Projection control would
    show t-SNE over an ISOMAP plot.  The widget applies what its controls show once the handler ends."""
    pytest.importorskip("anywidget")
    s = ex.ScatterExplorer(_beer_store(), method="ISOMAP")
    s.colour_by("gender", "woman")
    w = s.widget()
    colour_changed = w.colour_changed

    def colour_then_projection() -> None:
        colour_changed()
        w.dd_method.value = "t-SNE"  # arrives while the colour handler runs: muted

    w.colour_changed = colour_then_projection  # type: ignore[method-assign]
    w.dd_ccat.value = "(none)"
    assert s.method == "t-SNE" and "placed by t-SNE" in w.status.value and not w.last_error
    assert s.colour_category is None and w.dd_ccat.value == "(none)"


def test_table_figure_prints_no_negative_zero():
    """A score that rounds to 0 from below (the thesis's bert-base Age x Sport r = -0.0005) reads 0.00, not -0.00."""
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
