"""Tests of the seed-word form (biaskit.report.widgets) used by the guided tour."""

from __future__ import annotations

import sys
from typing import Any

import pytest

pytest.importorskip("ipywidgets")

from nbformat.v4 import new_code_cell, new_notebook, new_output

from biaskit.report import widgets
from biaskit.report.html_study_page import _clean_outputs_for_static_page
from biaskit.report.widgets import STATIC_FALLBACK, format_words, parse_words, seed_word_form

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("he, him,his", ["he", "him", "his"]),
        ("  she ;her\n\nhers , ", ["she", "her", "hers"]),
        ("Paris, paris", ["Paris", "paris"]),  # case is kept: vocabularies are case-sensitive
        ("computer programmer, nurse", ["computer programmer", "nurse"]),  # multi-word kept as written
        ("a, b, a, c, b", ["a", "b", "c"]),  # duplicates kept once, first occurrence
        ("", []),
        (" , ;\n", []),
    ],
)
def test_parse_words(text: str, words: list[str]) -> None:
    assert parse_words(text) == words


def test_format_then_parse_round_trip() -> None:
    words = ["math", "algebra", "computer programmer", "Paris"]
    assert parse_words(format_words(words)) == words


def _form(on_run: Any) -> widgets.SeedWordForm:
    form = seed_word_form({"X (targets)": ["math", "algebra"], "A (attributes)": ["he", "him"]}, on_run)
    assert form is not None
    return form


def test_form_prefilled_and_runs_edited_words() -> None:
    calls: list[dict[str, list[str]]] = []

    def on_run(groups: dict[str, list[str]]) -> str:
        calls.append(groups)
        return f"{sum(len(v) for v in groups.values())} words"

    form = _form(on_run)
    assert list(form.boxes) == ["X (targets)", "A (attributes)"]
    assert form.boxes["X (targets)"].value == "math, algebra"
    assert form.values() == {"X (targets)": ["math", "algebra"], "A (attributes)": ["he", "him"]}
    assert calls == []  # the form does not run by itself

    form.boxes["X (targets)"].value = "poetry, art,  dance"
    form.button.click()  # what a reader's click does
    assert calls == [{"X (targets)": ["poetry", "art", "dance"], "A (attributes)": ["he", "him"]}]
    assert form.last_result == "5 words" and form.last_error is None


def test_form_shows_errors_instead_of_raising(capsys: pytest.CaptureFixture[str]) -> None:
    def on_run(groups: dict[str, list[str]]) -> None:
        raise ValueError("X: only 0 word(s) in the vocabulary")

    form = _form(on_run)
    form.button.click()  # must not raise
    assert isinstance(form.last_error, ValueError)
    assert form.last_result is None
    # outside a kernel the output area prints to stdout; the message is readable, not a traceback
    out = capsys.readouterr().out
    assert "Could not run with these words" in out and "only 0 word(s)" in out
    assert "Traceback" not in out


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="at least one word group"):
        seed_word_form({}, lambda g: None)
    with pytest.raises(TypeError, match="list of words"):
        seed_word_form({"X": "math, algebra"}, lambda g: None)  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="callable"):
        seed_word_form({"X": ["a"]}, None)  # type: ignore[arg-type]


def test_without_ipywidgets_returns_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # makes `import ipywidgets` fail
    assert seed_word_form({"X": ["a"]}, lambda g: None) is None


def test_static_fallback_survives_the_report() -> None:
    """The display bundle has the live widget and an HTML fallback; the report keeps the fallback."""
    form = _form(lambda g: None)
    bundle = form._repr_mimebundle_()
    assert WIDGET_VIEW in bundle and bundle["text/html"] == STATIC_FALLBACK
    nb = new_notebook(cells=[new_code_cell("form", outputs=[new_output("display_data", data=bundle)])])
    _clean_outputs_for_static_page(nb)
    data = nb.cells[0].outputs[0]["data"]
    assert WIDGET_VIEW not in data and data["text/html"] == STATIC_FALLBACK


def test_layout_fits_the_notebook_width() -> None:
    """The button shows its whole label ("Run with these words", not "Run with these…") and
    the form never scrolls sideways: boxes fill the row beside their label ("auto", not 100% plus the
    label), the button is as wide as its label.  tests/report/test_browser_explorers.py checks the same in
    JupyterLab."""
    form = _form(lambda g: None)
    assert form.button.description == "Run with these words"
    assert form.button.layout.width == "auto" and form.button.layout.min_width == "fit-content"
    assert all(box.layout.width == "auto" for box in form.boxes.values())
    assert form.widget.layout.width == "100%" and form.widget.layout.overflow == "hidden"
    assert "bk-seed-form" in form.widget._dom_classes


def test_choices_are_passed_to_on_run_and_reset_restores_the_defaults() -> None:
    calls: list[tuple[dict[str, list[str]], dict[str, str]]] = []

    def on_run(groups: dict[str, list[str]], **kw: str) -> str:
        calls.append((groups, kw))
        return "ran"

    form = seed_word_form(
        {"X": ["math", "algebra"], "A": ["he"]},
        on_run,
        choices={"alternative": ("Test", [("two-sided", "two-sided"), ("one-sided", "greater")])},
    )
    assert form is not None and form.menus["alternative"].value == "two-sided"  # the first option
    form.button.click()
    assert calls[-1] == ({"X": ["math", "algebra"], "A": ["he"]}, {"alternative": "two-sided"})
    form.menus["alternative"].value = "greater"
    form.boxes["X"].value = "poetry"
    form.button.click()
    assert calls[-1] == ({"X": ["poetry"], "A": ["he"]}, {"alternative": "greater"})
    form.reset_button.click()  # the defaults back in the boxes; nothing runs until the reader says so
    assert form.boxes["X"].value == "math, algebra" and form.menus["alternative"].value == "two-sided"
    assert len(calls) == 2
    with pytest.raises(ValueError, match="no option"):
        seed_word_form({"X": ["a"]}, on_run, choices={"k": ("K", [])})


def test_reset_restores_the_names_too() -> None:
    form = seed_word_form({"Math": ["math"], "Arts": ["poetry"]}, lambda g: None, roles=["X", "Y"])
    assert form is not None
    form.name_boxes["Math"].value = "Care"
    form.boxes["Math"].value = "nurse"
    form.reset()
    assert form.name_boxes["Math"].value == "Math" and form.boxes["Math"].value == "math"
    assert form.values() == {"Math": ["math"], "Arts": ["poetry"]}


def test_a_cell_run_too_early_says_in_one_line_what_to_run_first() -> None:
    """:func:`needs`: a missing name stops the cell with one line naming the cells to run (its IPython
    rendering is that line, not a traceback), and the hint it gives is a real JupyterLab menu item."""
    widgets.needs({"store": 1}, ["store"], "every cell above this one")  # all there: nothing happens
    with pytest.raises(widgets.CellNeedsEarlierCells) as err:
        widgets.needs({"store": 1}, ["store", "bert", "results"], "every cell above this one")
    msg = str(err.value)
    assert msg == (
        "Run every cell above this one first (Run → Run All Above Selected Cell), then this cell: it uses "
        "`bert`, `results`, which they make."
    )
    assert err.value._render_traceback_() == [f"▶ {msg}"]
    assert not isinstance(err.value, NameError)
