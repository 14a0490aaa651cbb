"""biaskit.report.notebook_output: where a run writes, what it writes, and how a reader sees numbers and
messages."""

from __future__ import annotations

import json
import logging
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from PIL import Image

from biaskit.core.paths import REPO_ROOT
from biaskit.core.results import TestResult, format_p_value
from biaskit.data.datasets import ValidationReport
from biaskit.report.notebook_output import (
    NotebookNoteHandler,
    describe_folder,
    figure_alt_text,
    format_table,
    p_phrase,
    plural,
    resolve_results_dir,
    save_figure,
    save_results,
    setup_notebook_logging,
    shown_path,
    table_records,
    validation_summary,
    vectors_label,
    where_saved,
)


# ----------------------------------------------------------------------------- resolve_results_dir
def test_results_dir_parameter_wins_over_the_output_path(tmp_path):
    chosen = tmp_path / "chosen"
    out = resolve_results_dir("03_weat", str(chosen), output_path=tmp_path / "elsewhere" / "03_weat.ipynb")
    assert out == chosen
    assert out.is_dir()
    assert not (tmp_path / "elsewhere").exists()


def test_output_path_folder_when_no_results_dir(tmp_path):
    nb = tmp_path / "run" / "03_weat.ipynb"
    nb.parent.mkdir()
    assert resolve_results_dir("03_weat", "", output_path=str(nb)) == nb.parent.resolve()
    assert resolve_results_dir("03_weat", None, output_path=nb) == nb.parent.resolve()


def test_without_folder_or_output_path_a_new_runs_folder_each_time(tmp_path, monkeypatch):
    monkeypatch.setenv("BIASKIT_RESULTS_DIR", str(tmp_path / "root"))
    first = resolve_results_dir("03_weat", "")
    second = resolve_results_dir("03_weat", "")
    third = resolve_results_dir("03_weat")
    assert len({first, second, third}) == 3, "a folder was reused"
    for out in (first, second, third):
        assert out.parent == tmp_path / "root" / "runs"
        assert out.name.startswith("03_weat-") and str(os.getpid()) in out.name
        assert out.is_dir()
    assert sorted(p.name for p in (tmp_path / "root").iterdir()) == ["runs"], "wrote into the results root"


@pytest.mark.parametrize("bad", ["", "a/b", "..\\x"])
def test_resolve_results_dir_wants_a_plain_name(bad, tmp_path):
    with pytest.raises(ValueError, match="plain notebook name"):
        resolve_results_dir(bad, str(tmp_path))


# ----------------------------------------------------------------------------- save_results
def test_save_results_roundtrip(tmp_path):
    res = TestResult(statistic=1.0, p_value=0.2, method="m")
    path = save_results(
        "demo",
        {"a": np.float32(1.5), "nan": float("nan"), "test": res, "arr": np.arange(2), "where": tmp_path},
        out_dir=tmp_path,
    )
    data = json.loads(path.read_text(encoding="utf-8"))
    assert path == tmp_path / "demo.json"
    assert data["notebook"] == "demo"
    assert data["results"]["a"] == 1.5
    assert data["results"]["nan"] is None
    assert data["results"]["test"]["p_value"] == 0.2
    assert data["results"]["arr"] == [0, 1]
    assert data["results"]["where"] == str(tmp_path)
    assert "finding" not in data and "headline" not in data and "parameters" not in data


def test_save_results_writes_finding_headline_and_parameters(tmp_path):
    path = save_results(
        "03_weat",
        {"d": 1.54},
        out_dir=tmp_path / "run",
        finding="On the bundled sample 3 of 10 WEAT tests are significant at 5%.",
        headline={"WEAT 1 effect size d": np.float64(1.54), "tests significant (of 10)": np.int64(3)},
        parameters={"quick": True, "n_permutations": 2000, "english_vectors": "glove-6b-50d", "sample": None},
    )
    data = json.loads(path.read_text(encoding="utf-8"))
    assert path.parent == tmp_path / "run"
    assert data["finding"] == "On the bundled sample 3 of 10 WEAT tests are significant at 5%."
    assert data["headline"] == {"WEAT 1 effect size d": 1.54, "tests significant (of 10)": 3}
    assert type(data["headline"]["tests significant (of 10)"]) is int
    assert data["parameters"] == {
        "quick": True,
        "n_permutations": 2000,
        "english_vectors": "glove-6b-50d",
        "sample": None,
    }
    assert list(data)[:3] == ["notebook", "created", "python"] and list(data)[-1] == "results"


def test_table_records_keeps_the_listed_columns_the_table_has_and_writes_nan_as_none(tmp_path):
    df = pd.DataFrame(
        {"test": ["WEAT 7", "WEAT 8"], "d": [1.54, np.nan], "p_value": [0.0004, 0.21], "n_X": [8, 8]},
        index=["a", "b"],
    )
    assert table_records(df, ["test", "d", "missing column", "p_value"]) == [
        {"test": "WEAT 7", "d": 1.54, "p_value": 0.0004},
        {"test": "WEAT 8", "d": None, "p_value": 0.21},
    ]
    assert table_records(df) == [
        {"test": "WEAT 7", "d": 1.54, "p_value": 0.0004, "n_X": 8},
        {"test": "WEAT 8", "d": None, "p_value": 0.21, "n_X": 8},
    ]
    assert table_records(df.reset_index(), ["index", "d"]) == [
        {"index": "a", "d": 1.54},
        {"index": "b", "d": None},
    ]
    assert table_records(df.iloc[:0], ["test"]) == []
    path = save_results("demo", {"rows": table_records(df, ["d"])}, out_dir=tmp_path)
    assert json.loads(path.read_text(encoding="utf-8"))["results"]["rows"] == [{"d": 1.54}, {"d": None}]


# ----------------------------------------------------------------------------- save_figure
def test_save_figure_writes_the_alt_text_into_the_png(tmp_path):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    path = save_figure(fig, "demo_fig", out_dir=tmp_path, alt="A rising line from 0 to 1.", show=False)
    plt.close(fig)
    assert path == tmp_path / "demo_fig.png"
    assert path.read_bytes()[:4] == b"\x89PNG" and path.stat().st_size > 1000
    with Image.open(path) as img:
        assert img.info["Description"] == "A rising line from 0 to 1."


def test_save_figure_default_alt_text_comes_from_titles_and_labels(tmp_path):
    fig, ax = plt.subplots()
    ax.bar(["a", "b"], [1, 2])
    ax.set(title="Counts", xlabel="group", ylabel="count")
    fig.suptitle("Two groups")
    expected = figure_alt_text(fig)
    path = save_figure(fig, "bars", out_dir=tmp_path, show=False)
    plt.close(fig)
    assert expected == "Figure: Two groups; Counts (count against group)"
    with Image.open(path) as img:
        assert img.info["Description"] == expected


# ----------------------------------------------------------------------------- p-values and tables
@pytest.mark.parametrize(
    ("p", "text"),
    [
        (1.4432e-25, "< 0.001"),
        (0.0, "< 0.001"),
        (0.00099, "< 0.001"),
        (0.001, "0.001"),
        (0.016, "0.016"),
        (0.0156, "0.016"),
        (0.32, "0.320"),
        (1.0, "1.000"),
        (1.0 + 1e-13, "1.000"),
        (None, "n/a"),
        (float("nan"), "n/a"),
    ],
)
def test_format_p_value(p, text):
    assert format_p_value(p) == text


def test_format_p_value_other_digits_and_bad_values():
    assert format_p_value(0.00005, digits=4) == "< 0.0001"
    assert format_p_value(0.00012, digits=4) == "0.0001"
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        format_p_value(1.5)
    with pytest.raises(ValueError):
        format_p_value(-0.1)


def test_format_table_formats_every_cell_for_a_reader():
    df = pd.DataFrame(
        {
            "test": ["weat1", "weat3"],
            "n": [1503, 32],
            "d": [1.53934, np.nan],
            "p": [1.4432e-25, np.nan],
            "significant": [True, None],
            "note": ["", "not computed: 32 of 32 names missing from the vectors' vocabulary"],
        }
    )
    out = format_table(df, p_columns=["p"], digits={"d": 2}, index=False)
    assert out.to_dict("list") == {
        "test": ["weat1", "weat3"],
        "n": ["1,503", "32"],
        "d": ["1.54", "—"],
        "p": ["< 0.001", "—"],
        "significant": ["yes", "—"],
        "note": ["", "not computed: 32 of 32 names missing from the vectors' vocabulary"],
    }
    text = out.to_html()
    assert "e-25" not in text and "NaN" not in text and "None" not in text
    assert list(out.index) == [0, 1]


def test_format_table_defaults_keeps_the_index_and_separates_thousands():
    df = pd.DataFrame({"value": [13889.0, 0.5]}, index=["sentences", "share"])
    out = format_table(df)
    assert list(out.index) == ["sentences", "share"]
    assert out["value"].tolist() == ["13,889.000", "0.500"]
    assert format_table(df, digits=1, missing="n/a")["value"].tolist() == ["13,889.0", "0.5"]
    assert format_table(pd.DataFrame({"x": [None]}), missing="n/a")["x"].tolist() == ["n/a"]


def test_format_table_is_shown_whole_and_without_row_numbers():
    note = "more than the 640 pairs available (0% with all; about 4,099 by extrapolation)"  # 78 characters
    df = pd.DataFrame({"measure": ["AUL", "cp"], "needed": [note, "40 pairs"]})
    out = format_table(df, index=False)
    html_text = out._repr_html_()  # what JupyterLab and the HTML report show
    assert note in html_text and "..." not in html_text  # pandas alone cuts cells at 50 characters
    assert "<th>0</th>" not in html_text and "<th>1</th>" not in html_text  # no row numbers
    assert "..." in pd.DataFrame(df)._repr_html_()  # (the default it replaces)
    assert list(out.index) == [0, 1] and out.iloc[:1].show_index is False  # a DataFrame all the same
    labelled = format_table(pd.DataFrame({"value": [1.0]}, index=["sentences"]))
    assert "<th>sentences</th>" in labelled._repr_html_()  # a meaningful index stays
    long = format_table(pd.DataFrame({"i": range(500)}), index=False)._repr_html_()
    assert long.count("<tr>") < 100 and "500 rows" in long  # rows are still cut as pandas cuts them


def test_format_table_rejects_unknown_p_columns():
    with pytest.raises(KeyError, match="p_columns not in the table"):
        format_table(pd.DataFrame({"p_value": [0.5]}), p_columns=["p"])


# ----------------------------------------------------------------------------- sentences for readers
def test_plural_and_p_phrase():
    assert plural(1, "pair") == "1 pair"
    assert plural(1503, "pair") == "1,503 pairs"
    assert plural(0, "entry", "entries") == "0 entries"
    assert p_phrase(1e-9) == "p < 0.001"
    assert p_phrase(0.028) == "p = 0.028"
    assert p_phrase(None) == "p not available"
    assert p_phrase(float("nan")) == "p not available"
    assert p_phrase(np.float32("nan")) == "p not available"
    assert p_phrase(np.float64(0.0164)) == "p = 0.016"
    assert p_phrase(0.0164, digits=2) == "p = 0.02"
    assert p_phrase(0.0004, digits=4) == "p = 0.0004"
    assert p_phrase(None, missing="p not computed") == "p not computed"
    assert p_phrase(np.nan, missing="p not computed") == "p not computed"
    assert p_phrase(0.5, missing="p not computed") == "p = 0.500"


def test_describe_folder_and_where_saved(tmp_path):
    assert describe_folder(REPO_ROOT / "results") == "results/"
    assert describe_folder(REPO_ROOT / "results" / "runs" / "03_weat-1") == "results/runs/03_weat-1/"
    assert describe_folder(REPO_ROOT) == "./"
    assert describe_folder(tmp_path / "glove run") == "glove run/"
    sentence = where_saved(tmp_path / "glove run" / "03_weat.json")
    assert (
        sentence == "The numbers of this run are saved in `03_weat.json`, next to its figures, "
        "in the folder `glove run/`."
    )
    assert "PosixPath" not in sentence and str(tmp_path) not in sentence
    assert where_saved(REPO_ROOT / "results" / "x.json", figures=False).endswith("in the folder `results/`.")


def test_shown_path_is_relative_to_the_repository_or_absolute(tmp_path):
    run = REPO_ROOT / "results" / "runs" / "07_pll_distributions-20250101-120000-42"
    assert shown_path(run) == "results/runs/07_pll_distributions-20250101-120000-42"
    assert shown_path(str(REPO_ROOT / "notebooks" / ".." / "results")) == "results"
    assert shown_path(REPO_ROOT) == "."
    outside = tmp_path / "glove run"
    assert shown_path(outside) == outside.resolve().as_posix()  # in full: never shortened to its name
    assert shown_path(outside).startswith("/") and "PosixPath" not in shown_path(outside)


def test_validation_summary_in_plain_words():
    rep = ValidationReport.from_records(
        [
            {
                "row": 302,
                "line": 304,
                "column": "sent_more",
                "reason": "cp1252 read as latin-1 (repaired)",
                "action": "repaired",
                "text": "x",
            },
            {
                "row": 68,
                "line": 70,
                "column": "sent_less",
                "reason": "cp1252 read as latin-1 (repaired)",
                "action": "repaired",
                "text": "y",
            },
            {
                "row": 5,
                "line": 7,
                "column": None,
                "reason": "empty sentence",
                "action": "skipped",
                "text": "",
            },
        ],
        context="Spanish CrowS-Pairs",
    )
    assert validation_summary(rep, n=1503, unit="pairs") == (
        "Data check: 1,503 pairs loaded; 2 cells repaired (cp1252 read as latin-1: lines 70, 304); "
        "1 row skipped (empty sentence: line 7)."
    )
    assert validation_summary(ValidationReport(), n=2106, unit="examples") == (
        "Data check: 2,106 examples loaded; no problems found."
    )
    assert validation_summary(None, n=3) == "Data check: 3 rows loaded; no validation report was produced."
    many = ValidationReport.from_records(
        [
            {"row": i, "line": i + 2, "column": None, "reason": "tie", "action": "kept", "text": ""}
            for i in range(9)
        ]
    )
    assert validation_summary(many, n=60, unit="pairs", verb="given", label="Scoring check (cp)") == (
        "Scoring check (cp): 60 pairs given; 9 rows kept (tie: lines 2, 3, 4, 5, 6, 7 and 3 more)."
    )


def test_vectors_label():
    assert vectors_label("glove-6b-50d") == "GloVe 6B (Wikipedia and Gigaword, 50 dimensions)"
    assert vectors_label("word2vec-googlenews-wefe") == "word2vec GoogleNews (13,000-word subset)"
    assert vectors_label("~/data/embeddings-m-model.vec") == "embeddings-m-model.vec"


# ----------------------------------------------------------------------------- notebook logging
@pytest.fixture
def biaskit_logger():
    """The biaskit logger, restored after the test (other tests rely on propagation to caplog)."""
    log = logging.getLogger("biaskit")
    saved = (list(log.handlers), log.level, log.propagate)
    yield log
    log.handlers[:] = saved[0]
    log.setLevel(saved[1])
    log.propagate = saved[2]


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


def test_setup_notebook_logging_shows_a_message_once_and_not_on_the_root_logger(biaskit_logger, capsys):
    root_collect = _Collect()
    logging.getLogger().addHandler(root_collect)
    try:
        handler = setup_notebook_logging()
        assert isinstance(handler, NotebookNoteHandler)
        assert biaskit_logger.propagate is False
        assert [h for h in biaskit_logger.handlers if isinstance(h, NotebookNoteHandler)] == [handler]
        log = logging.getLogger("biaskit.data.wordlists")
        log.warning("seed %r: %d words missing", "pleasant", 3)
        log.warning("seed %r: %d words missing", "pleasant", 3)  # the same message again
        log.warning("another message")
        log.info("progress details")  # below WARNING: not shown
        assert capsys.readouterr().out == "Note: seed 'pleasant': 3 words missing\nNote: another message\n"
        assert root_collect.records == [], "the messages also reached the root logger (printed twice)"
        log.error("it broke")
        assert capsys.readouterr().out == "Problem: it broke\n"
    finally:
        logging.getLogger().removeHandler(root_collect)


def test_setup_notebook_logging_twice_keeps_one_handler(biaskit_logger, capsys):
    setup_notebook_logging()
    second = setup_notebook_logging()
    notes = [h for h in biaskit_logger.handlers if isinstance(h, NotebookNoteHandler)]
    assert notes == [second]
    logging.getLogger("biaskit").warning("once")
    assert capsys.readouterr().out == "Note: once\n"
    assert biaskit_logger.level == logging.WARNING


def test_note_handler_shows_an_html_box_in_a_kernel(monkeypatch):
    shown = []
    monkeypatch.setattr("biaskit.report.notebook_output._in_ipython_kernel", lambda: True)
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    handler = NotebookNoteHandler()
    record = logging.LogRecord("biaskit.x", logging.WARNING, __file__, 1, "a < b & %s", ("c",), None)
    handler.emit(record)
    handler.emit(record)
    assert len(shown) == 1
    box = shown[0].data
    assert "<b>Note:</b> a &lt; b &amp; c" in box and 'role="note"' in box


def test_note_html_labels_escapes_and_keeps_line_breaks():
    import logging

    from biaskit.report.notebook_output import note_html

    warn = note_html("loaded 29 of 1503 records\n<lines 31-1504>")
    assert warn.startswith('<div class="bk-note" role="note"') and "<b>Note:</b>" in warn
    assert "records<br>&lt;lines 31-1504&gt;" in warn
    err = note_html("model not found", logging.ERROR)
    assert 'class="bk-note bk-note-error"' in err and "<b>Problem:</b>" in err and "#ffebe9" in err
    assert "<b>Info:</b>" in note_html("x", logging.DEBUG)


def test_label_points_keeps_crowded_labels_apart():
    """Twelve words on nearly the same spot: placed at their points the labels overlap; label_points moves
    them apart (no two bounding boxes intersect) and leaves each label's text and count as given."""
    from biaskit.report.notebook_output import label_points

    rng = np.random.default_rng(0)
    x, y = 1 + 0.01 * rng.standard_normal(12), 1 + 0.01 * rng.standard_normal(12)
    words = [f"word {i}" for i in range(12)]

    def overlaps(texts, fig):
        fig.canvas.draw()
        boxes = [t.get_window_extent() for t in texts]
        return sum(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])

    fig, ax = plt.subplots(figsize=(5, 4))
    ax.scatter(x, y)
    ax.set_xlim(0.8, 1.2)
    ax.set_ylim(0.8, 1.2)
    naive = [ax.text(a, b, w, fontsize=8) for a, b, w in zip(x, y, words, strict=True)]
    assert overlaps(naive, fig) > 20  # the problem: stacked on one another
    for t in naive:
        t.remove()
    texts = label_points(ax, x, y, words)
    assert [t.get_text() for t in texts] == words
    assert overlaps(texts, fig) == 0
    plt.close(fig)
    with pytest.raises(ValueError, match="3 labels"):
        label_points(ax, x, y, words[:3])
