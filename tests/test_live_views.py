"""Live views that survive a reload and a reopen: what the kernel sends, without a browser.

A live view (an explorer of notebook 13, the seed-word form of notebook 00) is displayed as two outputs: a
one-line hint, hidden by its own CSS while the view is drawn, and the widget's bundle with an HTML
fallback.  The view is kept alive by its explorer (a widget that is garbage-collected closes, and a reloaded
page could not draw it again).  ``tests/test_browser_explorers.py`` checks the same in JupyterLab.
"""

from __future__ import annotations

import gc
from typing import Any

import pytest

pytest.importorskip("ipywidgets")

from nbformat.v4 import new_code_cell, new_notebook, new_output

from biaskit.report import widgets
from biaskit.report.html_study_page import _clean_outputs_for_static_page

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _captured(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    shown: list[dict[str, Any]] = []

    def fake_display(obj: Any, raw: bool = False, **_: Any) -> None:
        assert raw, "display_live sends raw MIME bundles"
        shown.append(obj)

    import IPython.display

    monkeypatch.setattr(IPython.display, "display", fake_display)
    return shown


def test_the_hint_is_hidden_unless_the_view_cannot_be_drawn():
    hint = widgets.live_hint_html("Run this cell to explore <now>")
    assert "class='bk-live-hint'" in hint and "display:none" in hint
    assert "Run this cell to explore &lt;now&gt;" in hint  # escaped
    # the CSS: a widget output JupyterLab could not draw (its own "jupyter-widgets" mark) is hidden and the
    # hint shown instead; never a :has() inside a :has() (invalid CSS: the browser drops the whole rule)
    assert ":has(> .jp-OutputArea-output.jupyter-widgets) { display: none; }" in hint
    assert ".bk-live-hint { display: block !important; }" in hint
    for rule in widgets._LIVE_HINT_CSS.splitlines():
        for part in rule.split(":has(")[1:]:
            assert part.count("(") <= part.count(")"), rule
        assert rule.count(":has(") <= 2 and ":has(*)" not in rule


def test_a_live_view_is_displayed_as_a_hint_then_the_widget(monkeypatch):
    shown = _captured(monkeypatch)
    form = widgets.seed_word_form({"X": ["math"], "Y": ["art"]}, lambda g: None)
    form._ipython_display_()
    assert len(shown) == 2
    hint, view = shown
    assert "bk-live-hint" in hint["text/html"] and "Run this cell" in hint["text/html"]
    assert hint["text/plain"] == ""
    assert WIDGET_VIEW in view and view["text/html"] == widgets.STATIC_FALLBACK
    assert view[WIDGET_VIEW]["model_id"] == form.widget.model_id


@pytest.fixture(scope="module")
def store():
    import numpy as np
    import pandas as pd

    from biaskit.report import explorers as ex

    rng = np.random.default_rng(3)
    occs = ["nurse", "engineer", "teacher", "pilot", "baker", "judge", "dancer", "farmer"]
    traits = ["brave", "caring", "honest", "lazy", "kind", "mean"]
    rows = [
        ("bert-base", "occupation", "trait", t, f, float(np.tanh(rng.normal())), float(rng.normal()))
        for t in occs
        for f in traits
    ]
    cols = ["model", "target_category", "feature_category", "target", "feature", "ibs", "direct"]
    return ex, ex.ScoreStore(pd.DataFrame(rows, columns=cols))


def test_an_explorer_keeps_its_live_view_and_displays_it_with_the_hint(store, monkeypatch):
    ex, st = store
    tv = ex.TableExplorer(st)
    view = tv.widget()
    assert tv.live is view
    model_id = view.box.model_id
    del view
    gc.collect()
    assert tv.live.box.comm is not None, "the view closed: a reloaded page could not draw it again"
    assert tv.live.box.model_id == model_id
    shown = _captured(monkeypatch)
    tv.live._ipython_display_()
    hint, bundle = shown
    assert "Run this cell to explore" in hint["text/html"] and "static version" in hint["text/html"]
    assert bundle[WIDGET_VIEW]["model_id"] == model_id
    assert "run this cell" in bundle["text/html"]  # the fallback of a front end without widgets
    sv = ex.ScatterExplorer(st, method="ISOMAP")
    assert sv.widget() is sv.live


def test_the_report_drops_the_hint_and_keeps_the_fallback():
    hint = {"text/html": widgets.live_hint_html("Run this cell to explore."), "text/plain": ""}
    form = widgets.seed_word_form({"X": ["math"]}, lambda g: None)
    nb = new_notebook(
        cells=[
            new_code_cell(
                "form",
                outputs=[
                    new_output("display_data", data=hint),
                    new_output("display_data", data=form._repr_mimebundle_()),
                ],
            )
        ]
    )
    _clean_outputs_for_static_page(nb)
    outs = nb.cells[0].outputs
    assert len(outs) == 1 and outs[0]["data"]["text/html"] == widgets.STATIC_FALLBACK


def test_every_figure_keeps_the_state_a_reloaded_page_draws(store):
    """plotly sends later changes as one-off messages; a reload draws the synchronised state, which the
    views keep equal to what they show (a stale copy drew the first, placeholder figure)."""
    ex, st = store
    sv = ex.ScatterExplorer(st, method="ISOMAP")
    view = sv.widget()
    assert len(view.fig.data[0].x) == 8  # the placeholder it was built with had one point
    view._run(view.select, "nurse")  # what a click on a point does
    figs = view.figures()
    assert len(figs) >= 2, "the details of nurse are drawn"
    for fig in figs:
        assert _same_state(fig)
    tv = ex.TableExplorer(st)
    table = tv.widget()
    table._run(table.header_click, "column", "nurse")
    assert _same_state(table.fig)


def _same_state(fig: Any) -> bool:
    import json

    from plotly.utils import PlotlyJSONEncoder

    def text(v: Any) -> str:
        return json.dumps(v, cls=PlotlyJSONEncoder, sort_keys=True)

    return text(fig._widget_data) == text(fig._data) and text(fig._widget_layout) == text(
        fig._layout_obj._props
    )


def test_replaced_figures_and_views_are_closed(store):
    """A figure the details panel no longer shows, and a view replaced by running the cell again, are closed:
    left open, each would be one more model for a reloaded page to restore."""
    ex, st = store
    sv = ex.ScatterExplorer(st, method="ISOMAP")
    view = sv.widget()
    view._run(view.select, "nurse")
    first = list(view.details.children)
    view._run(view.select, "engineer")
    assert first and all(f.comm is None for f in first), "replaced detail figures stay open"
    assert all(f.comm is not None for f in view.details.children)
    again = sv.widget()
    assert again is sv.live and view.box.comm is None and view.fig.comm is None
    assert again.box.comm is not None
