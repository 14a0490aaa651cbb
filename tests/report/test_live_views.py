"""Live views that survive a reload and a reopen: what the kernel sends, without a browser.

A live view (an explorer of notebook 13, the seed-word form of notebook 00) is displayed as two outputs: a
one-line hint, hidden by its own CSS while the view is drawn, and the widget's bundle with an HTML
fallback (an explorer has a hidden, empty plotly figure between them, so that a reopened page loads
plotly.js before it restores the views).  The view is kept alive by its explorer (a widget that is
garbage-collected closes, and a reloaded page could not draw it again), and it is built of few standard
ipywidgets only: its plots are plain plotly outputs, with no widget model of their own that a page would
have to start.  A cell that shows a view, run
alone in a fresh kernel, works or says in one line which cells to run first (executed here with nbclient).
``tests/report/test_browser_explorers.py`` checks the same in JupyterLab.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import nbformat
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
    # the plotly warm-up right after the hint takes no room
    assert ".jp-OutputArea-child:has(.bk-live-hint) + .jp-OutputArea-child:has(> .jp-RenderedPlotly)" in hint
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
    hint, warm_up, bundle = shown
    assert "Run All Above Selected Cell" in hint["text/html"] and "static version" in hint["text/html"]
    # an empty plotly figure between them: the page loads plotly.js while it draws its outputs, not while it
    # restores the views (evaluating it inside the first view made the others wait past their 2 s)
    assert warm_up == widgets.plotly_warm_up() and warm_up[ex.PLOTLY_MIME]["data"] == []
    assert bundle[WIDGET_VIEW]["model_id"] == model_id
    assert "run it to use" in bundle["text/html"]  # the fallback of a front end without widgets
    sv = ex.ScatterExplorer(st, method="ISOMAP")
    assert sv.widget() is sv.live


def test_the_report_drops_the_hint_and_keeps_the_fallback():
    hint = {"text/html": widgets.live_hint_html("Run this cell to explore."), "text/plain": ""}
    form = widgets.seed_word_form({"X": ["math"]}, lambda g: None)
    warm_up = new_output(
        "display_data", data=widgets.plotly_warm_up(), metadata={widgets.PLOTLY_WARM_UP_KEY: True}
    )
    nb = new_notebook(
        cells=[
            new_code_cell(
                "form",
                outputs=[
                    new_output("display_data", data=hint),
                    warm_up,
                    new_output("display_data", data=form._repr_mimebundle_()),
                ],
            )
        ]
    )
    _clean_outputs_for_static_page(nb)
    outs = nb.cells[0].outputs
    assert len(outs) == 1 and outs[0]["data"]["text/html"] == widgets.STATIC_FALLBACK


def _all_widgets(widget: Any) -> list[Any]:
    out = [widget]
    for child in getattr(widget, "children", ()):
        out += _all_widgets(child)
    return out


def test_a_view_is_made_of_standard_widgets_only(store):
    """Every model of a live view is one of ipywidgets' own (controls, output, layout and style), which
    JupyterLab's widget manager restores from the kernel after a reload; the plots are outputs inside an
    ``Output`` (no anywidget, whose start-up failed on a loaded machine)."""
    ex, st = store
    views = [ex.TableExplorer(st).widget(), ex.ScatterExplorer(st, method="ISOMAP").widget()]
    standard = {"@jupyter-widgets/controls", "@jupyter-widgets/output", "@jupyter-widgets/base"}
    for view in views:
        for w in _all_widgets(view.box):
            assert w._model_module in standard and w._view_module in standard, type(w)
            for attr in ("layout", "style"):
                sub = getattr(w, attr, None)
                assert sub is None or sub._model_module in standard
        for item in view.plot.out.outputs:
            assert set(item["data"]) == {ex.PLOTLY_MIME, "text/plain"}


def test_replaced_views_are_closed(store):
    """A view replaced by running the cell again is closed, every widget in it: left open, each would be one
    more model for a reloaded page to restore."""
    ex, st = store
    sv = ex.ScatterExplorer(st, method="ISOMAP")
    view = sv.widget()
    old = _all_widgets(view.box)
    again = sv.widget()
    assert again is sv.live and all(w.comm is None for w in old)
    assert all(w.comm is not None for w in _all_widgets(again.box))


def test_a_view_is_few_widget_models_and_its_handlers_make_none(store):
    """A reloaded page restores every widget model of the kernel while each view's output waits (2 s) for its
    own; the longer the page is busy creating them, the likelier an output gives up ("Error displaying
    widget: model not found").  A view is therefore few models (one box, two HTML widgets for all its lines,
    shared layouts and styles); its handlers neither create nor close one (a saved output never points at a
    model that is gone); a replaced view closes every model of it, its layouts and styles included."""
    from ipywidgets.widgets.widget import _instances

    ex, st = store
    before = set(_instances)
    tv, sv = ex.TableExplorer(st), ex.ScatterExplorer(st, method="ISOMAP")
    table, scatter = tv.widget(rows_per_page=3, columns_per_page=3), sv.widget()
    made = set(_instances) - before
    assert len(table.widget_models()) == 26 and len(scatter.widget_models()) == 20
    assert made == {m.model_id for m in (*table.widget_models(), *scatter.widget_models())}
    table.dd_feature.value, table.dd_sort.value = "trait", ("column", "nurse")
    table.row_next.click()
    table.dd_cell_target.value = "nurse"
    table.images_button.click()
    table.reset.click()
    scatter.dd_method.value, scatter.dd_sel.value, scatter.search.value = "t-SNE", "nurse", "e"
    scatter.reset.click()
    assert not table.last_error and not scatter.last_error
    assert set(_instances) - before == made, "a handler made or closed a widget model"
    tv.widget(), sv.widget()  # both cells run again
    assert not made & set(_instances), "a replaced view left a model open"


def test_progress_bars_with_a_description_leave_the_static_report():
    """A tqdm bar in an executed notebook is a widget whose text fallback is the bar at 0% (with its
    description, "occupation-name:   0%|"): the report drops it, never an "interactive element" note."""
    bar = {
        WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": "abc"},
        "text/plain": "occupation-name:   0%|          | 0/2600 [00:00<?, ?sent/s]",
    }
    other = {WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": "def"}, "text/plain": "VBox()"}
    nb = new_notebook(
        cells=[
            new_code_cell(
                "run",
                outputs=[new_output("display_data", data=bar), new_output("display_data", data=other)],
            )
        ]
    )
    _clean_outputs_for_static_page(nb)
    outs = nb.cells[0].outputs
    assert len(outs) == 1 and "interactive element" in outs[0]["data"]["text/html"]


# ---------------------------------------------------------------------- cells run alone in a fresh kernel
ROOT = Path(__file__).resolve().parents[2]


def _view_cells(name: str) -> list[tuple[int, str]]:
    """The code cells of a notebook that show an explorer or the seed-word form."""
    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    marks = ("weat_form(", ".widget(", "ex.TableExplorer(", "ex.ScatterExplorer(")
    return [
        (i, c.source)
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and any(m in c.source for m in marks)
    ]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["00_tour.ipynb", "13_indirect_bias_explorer.ipynb"])
def test_each_view_cell_run_alone_works_or_names_the_cells_to_run_first(name, tmp_path, monkeypatch):
    """Each cell that shows a view, executed alone in a fresh kernel (what a reader does after reopening a
    notebook and following the hint): it works, or stops with one line naming the cells to run first and
    how; never a ``NameError`` (notebook 00's form once raised ``name 'weat7' is not defined``)."""
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    from nbclient import NotebookClient

    monkeypatch.setenv("BIASKIT_RESULTS_DIR", str(tmp_path))
    cells = _view_cells(name)
    assert cells, f"{name}: no cell shows a view"
    for index, source in cells:
        nb = new_notebook(cells=[new_code_cell(source)])
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        client = NotebookClient(
            nb,
            timeout=900,
            kernel_name="python3",
            allow_errors=True,
            resources={"metadata": {"path": str(ROOT / "notebooks")}},
        )
        client.execute()
        outputs = nb.cells[0].outputs
        errors = [o for o in outputs if o.output_type == "error"]
        where = f"{name} cell {index}"
        if not errors:
            continue  # it ran on its own
        (err,) = errors
        assert err.ename == "CellNeedsEarlierCells", f"{where}: {err.ename}: {err.evalue}"
        assert len(err.traceback) == 1, f"{where}: more than one line: {err.traceback}"
        line = err.traceback[0]
        assert line.startswith("▶ Run ") and "(Run → Run All Above Selected Cell), then this cell" in line, (
            line
        )
    if name == "00_tour.ipynb":  # the form needs nothing from above: it must run alone
        assert not errors, f"{name}: the form's cell did not run alone"
