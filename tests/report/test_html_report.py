"""Tests of the static HTML report (biaskit.report.html_report).

Two layers:

* without a browser: the flattening / formatting helpers, title and source
  extraction, the index builder (parsed back with the standard library's HTML
  parser and compared with the JSON by walking the JSON independently), and the
  offline guarantees of the study pages (no remote script, images embedded);
* the index layout (finding first, then the headline numbers, then the settings, all
  numbers folded), the same-run check of a notebook and its JSON, alternative text
  on every image, and the clean-up of log lines / progress bars on study pages;
* a noise check (:func:`page_noise`) run on every page of the site built from the
  ``reproduced_results`` run (every notebook executed once, see ``tests/conftest.py``):
  no "NaN" in a table, no ``PosixPath``, no ``dtype:``, no raw log line, no traceback,
  no number in e-notation in the text a reader sees; a negative test proves it catches each;
* as a person would see it: the site built from a small fixture (an executed
  notebook with a figure, plus its JSON and PNG), and every page of the site built
  from the reproduced run, are opened in headless Chromium through the DevTools
  protocol; the tests fail on any console error or uncaught exception (remote loads
  are blocked by the pages' CSP and would show up as errors), check that every image
  is decoded and has alternative text, that the code is folded and that the numbers
  on the index equal the JSON.  Skipped, with the reason, when Chromium is not
  installed (``scripts/install_chromium.sh``).
"""

from __future__ import annotations

import base64
import datetime
import html
import io
import json
import logging
import math
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import nbformat
import pytest
from browser_support import CHROMIUM
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from biaskit.core.results import format_p_value
from biaskit.report import html_report as report
from biaskit.report.html_report import (
    HeadlineRow,
    build_site,
    discover_studies,
    flatten_results,
    format_value,
    notebook_source,
    notebook_title,
    render_index,
    render_study_page,
)

try:  # formulas become MathML when latex2mathml is installed, else they stay as TeX text
    import latex2mathml  # noqa: F401

    HAVE_MATHML = True
except ImportError:  # pragma: no cover - depends on the environment
    HAVE_MATHML = False

# ----------------------------------------------------------------------------- fixture

RESULTS = {
    "weat": {
        "statistic": 0.123456789,
        "effect_size": 1.2345678912345,
        "p_value": 4.2e-05,
        "n": 8,
        "reject": True,
        "method": "WEAT (exact permutation test)",
        "ci": [-0.5, 1.75],
    },
    "pmi": {"mean": -0.031, "z": -2.5758293035489, "n_groups": 30},
    "crows_score": 0.5632,
    "n_pairs": 1503,
    "big_count": 123456789,
    "missing": None,
    "empty": {},
}


#: What a notebook run writes now: a finding, headline numbers and its parameters.
FINDING = "Squares grow fast: the bias score is 1.23 standard deviations (p < 0.001)."
HEADLINE = {"WEAT effect size d": 1.2345678912345, "WEAT p-value": 4.2e-05, "pairs": 1503}


def _png_bytes(title: str = "squares", description: str | None = None) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([1, 2, 3], [1, 4, 9], marker="o")
    ax.set(title=title, xlabel="x", ylabel="x squared")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=60, metadata={"Description": description} if description else None)
    plt.close(fig)
    return buf.getvalue()


def _tiny_executed_notebook(png: bytes, *, source_in_metadata: bool = True) -> Any:
    """An executed notebook as papermill leaves it: parameters, outputs (figure, table, widget, tqdm)."""
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["papermill"] = {"parameters": {"quick": True}}
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    if source_in_metadata:
        nb.metadata["biaskit"] = {"source": "seed 000, section 3.4.2 (WEAT)"}
    b64 = base64.b64encode(png).decode("ascii")
    fig_cell = new_code_cell(
        "fig, ax = plt.subplots()\nax.plot([1, 2, 3], [1, 4, 9])",
        outputs=[new_output("display_data", data={"image/png": b64, "text/plain": "<Figure size 400x300>"})],
        execution_count=2,
    )
    table_cell = new_code_cell(
        "pd.DataFrame({'a': [1, 2]})",
        outputs=[
            new_output(
                "execute_result",
                data={"text/html": "<table class='dataframe'><tr><td>1</td></tr></table>", "text/plain": "a"},
                execution_count=3,
            )
        ],
        execution_count=3,
    )
    widget_cells = new_code_cell(
        "for _ in tqdm(range(3)): pass\nform",
        outputs=[
            new_output(
                "display_data",
                data={
                    "application/vnd.jupyter.widget-view+json": {"model_id": "abc", "version_major": 2},
                    "text/plain": "  0%|          | 0/3 [00:00<?, ?it/s]",
                },
            ),
            new_output(
                "display_data",
                data={
                    "application/vnd.jupyter.widget-view+json": {"model_id": "def", "version_major": 2},
                    "text/plain": "VBox(children=(...))",
                },
            ),
        ],
        execution_count=4,
    )
    nb.cells = [
        new_markdown_cell(
            "# A tiny study of *squares*\n\nSource: seed 000, section 3.2\n\n"
            "We test $H_0: \\mu = 0$ against $H_1: \\mu \\neq 0$.\n\n"
            "$$s(X,Y,A,B)=\\sum_{x\\in X} s(x,A,B) - \\sum_{y\\in Y} s(y,A,B)$$"
        ),
        new_code_cell("quick = False", metadata={"tags": ["parameters"]}, execution_count=1),
        fig_cell,
        table_cell,
        widget_cells,
        new_markdown_cell("## What this shows\n\nSquares grow fast."),
    ]
    return nb


OLD_PAYLOAD = {  # a JSON written before save_results recorded finding / headline / parameters
    "notebook": "01_tiny",
    "created": "2024-01-01T00:00:00+00:00",
    "python": "3.11",
    "results": RESULTS,
}
NEW_PAYLOAD = {
    "notebook": "01_tiny",
    "created": "2024-01-01T00:00:00+00:00",
    "python": "3.11",
    "finding": FINDING,
    "headline": HEADLINE,
    "parameters": {"quick": True, "model": "tiny-bert", "n_permutations": 2000},
    "results": RESULTS,
}


def _make_results_dir(d: Path, payload: dict[str, Any] | None) -> Path:
    d.mkdir()
    png = _png_bytes()
    nbformat.write(_tiny_executed_notebook(png), d / "01_tiny.ipynb")
    (d / "01_tiny_squares.png").write_bytes(png)
    if payload is not None:
        (d / "01_tiny.json").write_text(json.dumps(payload), encoding="utf-8")
    return d


@pytest.fixture
def results_dir(tmp_path: Path) -> Path:
    """A results folder as an older `make reproduce` left it: one study, one figure, old JSON."""
    return _make_results_dir(tmp_path / "results", OLD_PAYLOAD)


@pytest.fixture
def new_results_dir(tmp_path: Path) -> Path:
    """The same study with a JSON carrying finding, headline numbers and parameters."""
    return _make_results_dir(tmp_path / "results-new", NEW_PAYLOAD)


# ----------------------------------------------------------------------------- independent helpers


def _walk(obj: Any, path: list[str]) -> Any:
    """Follow a data-key path (dict keys and "[i]" list indexes) into the JSON."""
    for part in path:
        if isinstance(obj, list):
            assert part.startswith("[") and part.endswith("]"), part
            obj = obj[int(part[1:-1])]
        else:
            obj = obj[part]
    return obj


def _count_leaves(obj: Any) -> int:
    if isinstance(obj, dict):
        return sum(_count_leaves(v) for v in obj.values()) if obj else 1
    if isinstance(obj, list):
        return sum(_count_leaves(v) for v in obj) if obj else 1
    return 1


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def _key_of(path: list[str]) -> str | None:
    return next((p for p in reversed(path) if not p.startswith("[")), None)


def _check_displayed(text: str, value: Any, key: str | None = None) -> None:
    """The rounded text shown to the reader must agree with the exact value (and never be blank)."""
    text = text.strip()
    assert text, f"blank cell for {key}={value!r}"
    assert "NaN" not in text and "nan" != text
    # a commit hash ("commit 26e2b850be") is a name, not a number: e-notation is looked for outside them
    numbers = re.sub(r"\bcommit [0-9a-f]{7,40}\b", "commit", text)
    assert not re.search(r"\d[eE][-+]?\d", numbers), f"e-notation: {text!r}"
    if value is None or (isinstance(value, float) and math.isnan(value)):
        assert text == "n/a"
    elif isinstance(value, bool):
        assert text == ("yes" if value else "no")
    elif isinstance(value, int | float):
        p_like = key is not None and re.search(r"(^|[^a-z])p[_\- ]?value|(^|[_\W])p$", key, re.IGNORECASE)
        if p_like and 0 <= value <= 1:
            assert text == format_p_value(value), (text, value)
        elif text == "≈ 0":
            assert abs(value) < 1e-9
        elif math.isinf(value):
            assert text in ("∞", "−∞")
        else:
            shown = float(text.replace("\u2009", "").replace(",", "").replace("−", "-"))
            assert shown == pytest.approx(value, rel=1e-3, abs=1e-12), (text, value)
    elif isinstance(value, str):
        assert text == value or re.search(r"\d[eE][-+]\d", value) or (value == "" and text == "(empty)")
    elif isinstance(value, dict | list) and not value:
        assert text == "(none)"


class _CellCollector(HTMLParser):
    """Collects every element carrying data-value: (data-key, data-value, text)."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: list[tuple[str, str, str]] = []
        self.imgs: list[dict[str, str | None]] = []
        self._open: list[Any] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "img":
            self.imgs.append(a)
        if "data-value" in a:
            self._open = [a["data-key"], a["data-value"], ""]

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._open[2] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._open is not None:
            self.cells.append(tuple(self._open))  # type: ignore[arg-type]
            self._open = None


def _assert_numbers_match(
    cells: list[tuple[str, str, str]], payload: dict[str, Any], *, exact_count: bool = True
) -> None:
    """Every value cell (``data-key`` = its path into the JSON file) equals the JSON and reads right.

    With ``exact_count`` there is one cell per leaf of ``results`` (and of ``headline``): nothing
    dropped, nothing invented (long lists are summarised, so the reproduced run checks without).
    """
    wrapped = "results" in payload and "notebook" in payload
    if exact_count:
        expected = (
            _count_leaves(payload["results"])
            + (_count_leaves(payload["headline"]) if "headline" in payload else 0)
            if wrapped
            else _count_leaves(payload)
        )
        assert len(cells) == expected
    assert cells, "no numbers on the page"
    for key, value, text in cells:
        path = json.loads(key)
        expected_value = _walk(payload, path)
        got = json.loads(value)
        assert _same(got, expected_value), (path, got, expected_value)
        _check_displayed(text, expected_value, _key_of(path))
    if wrapped and isinstance(payload.get("headline"), dict):
        shown = {tuple(json.loads(k)) for k, _, _ in cells}
        for label in payload["headline"]:
            assert ("headline", label) in shown, f"headline number {label!r} not on the page"


# ----------------------------------------------------------------------------- noise on a page

#: A raw log line of the logging module (what a notebook shows when its log goes to stderr).
RAW_LOG_LINE = re.compile(r"^(DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]+:|WARNING:biaskit", re.MULTILINE)
#: A number in e-notation (a p-value printed as 4.2e-05) in the text a reader sees.
E_NOTATION = re.compile(r"\b\d(\.\d+)?[eE][-+]\d+\b")
_BLOCK_TAGS = frozenset(
    "p div pre tr li br td th table h1 h2 h3 h4 h5 h6 section details summary figure figcaption ul ol "
    "dl dd dt blockquote hr body tbody thead nav".split()
)
_VOID_TAGS = frozenset("br img meta link hr input col wbr source area base embed param track".split())


class _VisibleText(HTMLParser):
    """The text a reader sees on a page: no <script>/<style>, no folded code (details.bk-code).

    ``text`` also skips the folded "Technical messages" box (details.bk-log) for the log-line
    check (log lines belong there); ``all_text`` keeps it for everything else; ``cells`` holds
    the text of every table cell.
    """

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._stack: list[tuple[str, str | None]] = []
        self._hidden = 0
        self._log = 0
        self._cell: list[str] | None = None
        self.all_parts: list[str] = []
        self.parts: list[str] = []
        self.cells: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        why = None
        if tag in ("script", "style") or (tag == "details" and "bk-code" in classes):
            why = "hidden"
        elif tag == "details" and "bk-log" in classes:
            why = "log"
        if tag not in _VOID_TAGS:
            self._stack.append((tag, why))
            self._hidden += why == "hidden"
            self._log += why == "log"
        if tag in _BLOCK_TAGS:
            self._add("\n")
        if tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self._stack) - 1, -1, -1):
            if self._stack[i][0] == tag:
                for _, why in self._stack[i:]:
                    self._hidden -= why == "hidden"
                    self._log -= why == "log"
                del self._stack[i:]
                break
        if tag in _BLOCK_TAGS:
            self._add("\n")
        if tag in ("td", "th") and self._cell is not None:
            if not self._hidden:
                self.cells.append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        self._add(data)

    def _add(self, text: str) -> None:
        if self._hidden:
            return
        self.all_parts.append(text)
        if not self._log:
            self.parts.append(text)
        if self._cell is not None:
            self._cell.append(text)


def page_noise(page: str) -> list[str]:
    """What a lay reader should not see on a page: one line per problem found (``[]``: clean).

    Checked in the visible text (script, style and the folded code ignored): "NaN" in a table
    cell, ``PosixPath``, ``dtype:``, a raw log line (:data:`RAW_LOG_LINE`; the folded
    "Technical messages" box is the place for those), a Python traceback, a number in
    e-notation (:data:`E_NOTATION`).
    """
    parser = _VisibleText()
    parser.feed(page)
    parser.close()
    text, every = "".join(parser.parts), "".join(parser.all_parts)

    def around(t: str, m: re.Match[str]) -> str:
        return " ".join(t[max(0, m.start() - 50) : m.end() + 50].split())

    found = [
        f"NaN in a table: {' '.join(c.split())[:80]!r}" for c in parser.cells if re.search(r"\bNaN\b", c)
    ]
    for pattern, what in (
        (re.compile(r"PosixPath"), "PosixPath"),
        (re.compile(r"dtype:"), "dtype:"),
        (re.compile(r"Traceback \(most recent call last\)"), "a traceback"),
        (E_NOTATION, "e-notation"),
    ):
        found += [f"{what}: {around(every, m)!r}" for m in pattern.finditer(every)]
    found += [f"raw log line: {around(text, m)!r}" for m in RAW_LOG_LINE.finditer(text)]
    return found


# ----------------------------------------------------------------------------- unit tests


def test_flatten_results_paths_and_truncation() -> None:
    rows = flatten_results({"a": {"b": 1, "c": [1.5, {"d": None}]}, "e": "x", "f": []}, max_list_items=5)
    assert [(r.path, r.value) for r in rows] == [
        (("a", "b"), 1),
        (("a", "c", "[0]"), 1.5),
        (("a", "c", "[1]", "d"), None),
        (("e",), "x"),
        (("f",), []),
    ]
    long = flatten_results({"v": list(range(30))}, max_list_items=10)
    assert [r.value for r in long[:10]] == list(range(10))
    assert len(long) == 11 and long[-1].note is not None and "20 more" in long[-1].note
    assert HeadlineRow(("weat", "p_value"), 0.1).label == "weat › p value"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "n/a"),
        (True, "yes"),
        (False, "no"),
        (8, "8"),
        (1503, "1503"),
        (123456789, "123\u2009456\u2009789"),
        (0.0, "0"),
        (1.2345678, "1.235"),
        (-0.5352, "-0.5352"),
        (4.2e-05, "0.000042"),
        (0.00099, "0.00099"),
        (-3.4e-06, "-0.0000034"),
        (1e-12, "≈ 0"),
        (12345.6, "12\u2009346"),
        (9999.7, "10\u2009000"),
        (123456.7, "123\u2009457"),
        ("WEAT", "WEAT"),
        ("", "(empty)"),
        ({}, "(none)"),
        ([], "(none)"),
        (float("nan"), "n/a"),
        (float("inf"), "∞"),
    ],
)
def test_format_value(value: Any, text: str) -> None:
    assert format_value(value) == text


@pytest.mark.parametrize(
    ("key", "value", "text"),
    [
        ("p_value", 4.2e-05, "< 0.001"),
        ("p-value", 0.0162, "0.016"),
        ("pvalue", 0.5, "0.500"),
        ("weat_p", 0.0162, "0.016"),
        ("p", 1, "1.000"),
        ("WEAT p-value", 0.0004, "< 0.001"),
        ("p_values", 0.2, "0.200"),
        ("p_value", 1.5, "1.5"),  # not a probability: shown as a number
        ("p_value", None, "n/a"),
        ("pairs", 0.0004, "0.0004"),
        ("top", 0.0004, "0.0004"),
        ("group_value", 0.0004, "0.0004"),
        ("step value", 0.5, "0.5"),
    ],
)
def test_format_value_p_values(key: str, value: Any, text: str) -> None:
    assert report.is_p_value_key(key) == (key not in ("pairs", "top", "group_value", "step value"))
    assert format_value(value, key) == text


def test_plain_numbers_in_sentences() -> None:
    assert (
        report.plain_numbers("statsmodels gives p = 4.76e-05, which") == "statsmodels gives p < 0.001, which"
    )
    assert report.plain_numbers("a p-value of 3.2e-02.") == "a p-value of 0.032."
    assert report.plain_numbers("change = 5.6e-16 (rounding)") == "change ≈ 0 (rounding)"
    assert (
        report.plain_numbers("x 1.2e-05 y, id 855484664e331c670e1b")
        == "x 0.000012 y, id 855484664e331c670e1b"
    )


def test_title_and_source_extraction() -> None:
    nb = _tiny_executed_notebook(b"", source_in_metadata=True)
    assert notebook_title(nb, "x") == "A tiny study of squares"
    assert notebook_source(nb) == "seed 000, section 3.4.2 (WEAT)"  # metadata wins
    nb.metadata.pop("biaskit")
    assert notebook_source(nb) == "seed 000, section 3.2"  # "Source:" line of the first markdown cell
    nb.cells[0].source = "# Title\n\nWe follow seed 000 section 4.1.6 (CrowS-Pairs).\n\nMore."
    assert notebook_source(nb) == "We follow seed 000 section 4.1.6 (CrowS-Pairs)."
    nb.cells[0].source = "# Title\n\nA first paragraph.\n\nMore."
    assert notebook_source(nb) == "A first paragraph."
    empty = new_notebook(cells=[new_code_cell("1")])
    assert notebook_title(empty, "07_x") == "07_x"
    assert notebook_source(empty) is None


def test_discover_assigns_figures_to_longest_stem(tmp_path: Path) -> None:
    for name in ("01_a.json", "01_a_b.json"):
        (tmp_path / name).write_text('{"results": {"x": 1}}', encoding="utf-8")
    (tmp_path / "benchmarks.json").write_text('{"x": 1}', encoding="utf-8")  # not a study name
    for name in ("01_a_fig.png", "01_a_b_fig.png", "99_orphan.png"):
        (tmp_path / name).write_bytes(_png_bytes())
    studies = {s.stem: s for s in discover_studies(tmp_path)}
    assert sorted(studies) == ["01_a", "01_a_b"]
    assert [p.name for p in studies["01_a"].figures] == ["01_a_fig.png"]
    assert [p.name for p in studies["01_a_b"].figures] == ["01_a_b_fig.png"]
    assert studies["01_a"].notebook is None and studies["01_a"].page is None


def test_discover_leaves_out_figures_of_an_earlier_run(tmp_path: Path, caplog) -> None:
    import nbformat

    nb = new_notebook(cells=[new_code_cell("1")])
    start = time.time()
    nb.metadata["papermill"] = {
        "start_time": datetime.datetime.fromtimestamp(start, tz=datetime.UTC).isoformat()
    }
    nbformat.write(nb, tmp_path / "01_a.ipynb")
    for name in ("01_a_old.png", "01_a_new.png"):
        (tmp_path / name).write_bytes(_png_bytes())
    os.utime(tmp_path / "01_a_old.png", (start - 3600, start - 3600))  # drawn an hour before this run
    with caplog.at_level(logging.WARNING, logger="biaskit.report.html_studies"):
        (study,) = discover_studies(tmp_path)
    assert [p.name for p in study.figures] == ["01_a_new.png"]
    assert "1 figure(s) predate this run" in caplog.text and "01_a_old.png" in caplog.text
    del nb.metadata["papermill"]  # no start time: every figure is kept
    nbformat.write(nb, tmp_path / "01_a.ipynb")
    (study,) = discover_studies(tmp_path)
    assert len(study.figures) == 2


def test_discover_rejects_bad_input(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="make reproduce"):
        discover_studies(tmp_path / "nope")
    (tmp_path / "01_x.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match=r"01_x\.json is not valid JSON"):
        discover_studies(tmp_path)
    (tmp_path / "01_x.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ValueError, match="JSON object"):
        discover_studies(tmp_path)


def test_index_numbers_equal_json_without_browser(results_dir: Path) -> None:
    studies = discover_studies(results_dir)
    assert [s.stem for s in studies] == ["01_tiny"]
    s = studies[0]
    assert s.title == "A tiny study of squares"
    assert s.parameters == {"quick": True}
    page = render_index(studies)
    parser = _CellCollector()
    parser.feed(page)
    _assert_numbers_match(parser.cells, OLD_PAYLOAD)
    # the thumbnail is embedded and links to the study page
    assert len(parser.imgs) == 1 and str(parser.imgs[0]["src"]).startswith("data:image/png;base64,")
    assert 'href="01_tiny.html"' in page
    assert "seed 000, section 3.4.2 (WEAT)" in page and "quick = True" in page
    assert page_noise(page) == []


def test_index_tooltips_give_exact_values_without_e_notation(tmp_path: Path) -> None:
    """The hover text keeps every digit but in positional notation; data-value keeps the JSON text."""
    d = _make_results_dir(
        tmp_path / "r", {"notebook": "01_tiny", "results": {"weat": {"p_value": 1.6161734743280753e-05}}}
    )
    page = render_index(discover_studies(d))
    assert 'title="exact value: 0.000016161734743280753"' in page
    assert 'data-value="1.6161734743280753e-05"' in page
    assert not re.search(r'title="[^"]*\de-\d', page)


def test_build_site_is_offline_and_folds_code(results_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    index = build_site(results_dir, out)
    assert index == out / "index.html"
    page = (out / "01_tiny.html").read_text(encoding="utf-8")
    assert (out / "data" / "01_tiny.json").read_text(encoding="utf-8") == (
        results_dir / "01_tiny.json"
    ).read_text(encoding="utf-8")
    for text in (index.read_text(encoding="utf-8"), page):
        assert "<script src" not in text and "<link" not in text
        for cdn in ("cdnjs", "unpkg", "jsdelivr", "require.min.js", "MathJax.js", "mermaid.esm"):
            assert cdn not in text
        assert "Content-Security-Policy" in text
    # figure of the notebook embedded, code folded, prose kept, formulas as MathML
    b64 = base64.b64encode((results_dir / "01_tiny_squares.png").read_bytes()).decode("ascii")
    assert f"data:image/png;base64,{b64}" in page
    assert page.count('<details class="bk-code">') == 4
    assert "What this shows" in page
    assert ("<math" in page) if HAVE_MATHML else ("H_0" in page)
    # tqdm bar (misleading 0%) removed; other widget replaced by a note; no widget state left
    assert "0/3" not in page
    assert "An interactive element was here" in page
    assert "widget-state" not in page
    assert 'href="index.html"' in page


def test_build_site_flags_failed_notebooks(results_dir: Path, tmp_path: Path) -> None:
    nb = nbformat.read(results_dir / "01_tiny.ipynb", as_version=4)
    nb.cells[2].outputs.append(
        new_output("error", ename="ValueError", evalue="boom", traceback=["ValueError: boom"])
    )
    nbformat.write(nb, results_dir / "01_tiny.ipynb")
    index = build_site(results_dir, tmp_path / "site").read_text(encoding="utf-8")
    assert "stopped with an error" in index
    assert "stopped with an error" in (tmp_path / "site" / "01_tiny.html").read_text(encoding="utf-8")


def test_cli(results_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert report.main(["build", "--results", str(results_dir), "--out", str(tmp_path / "s"), "-q"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "s" / "index.html")
    assert report.main(["build", "--results", str(tmp_path / "missing")]) == 1
    assert "make reproduce" in capsys.readouterr().err


# ----------------------------------------------------------------------------- index layout


#: The parts of a study box on the index: (tag, class) -> part.
_BOX_PARTS = {
    ("p", "bk-finding"): "finding",
    ("table", "bk-keynumbers"): "headline",
    ("p", "bk-settings"): "settings",
    ("details", "bk-all"): "all numbers",
    ("div", "bk-figs"): "figures",
}


class _BoxOutline(HTMLParser):
    """The order of the parts of each study box on the index: [(stem, part), ...]."""

    def __init__(self) -> None:
        super().__init__()
        self.stem: str | None = None
        self.parts: list[tuple[str, str]] = []
        self.open_details: list[str] = []
        self.finding_kind: dict[str, str] = {}  # stem -> "json" / "notebook" (fallback) / "none"

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "section" and "bk-study" in classes:
            self.stem = a.get("data-stem")
        for cls in classes:
            part = _BOX_PARTS.get((tag, cls))
            if part and self.stem:
                self.parts.append((self.stem, part))
        if tag == "p" and "bk-finding" in classes and self.stem:
            kind = "json"
            kind = "notebook" if "bk-from-notebook" in classes else kind
            self.finding_kind[self.stem] = "none" if "bk-none" in classes else kind
        if tag == "details" and "open" in a:
            self.open_details.append(a.get("class") or "")


def _outline(page: str) -> _BoxOutline:
    parser = _BoxOutline()
    parser.feed(page)
    return parser


def test_index_box_leads_with_finding_then_headline_then_settings(new_results_dir: Path) -> None:
    studies = discover_studies(new_results_dir)
    (s,) = studies
    assert s.finding == FINDING and not s.finding_from_notebook
    page = render_index(studies)
    outline = _outline(page)
    assert [part for _, part in outline.parts] == [
        "finding",
        "headline",
        "settings",
        "all numbers",
        "figures",
    ]
    assert outline.open_details == []  # every number of the run is folded
    assert f"<b>Finding:</b> {html.escape(FINDING)}" in page
    assert "All numbers of this run" in page
    # headline numbers: rounded, the p-value as format_p_value gives it, exact values kept
    cells = _CellCollector()
    cells.feed(page)
    _assert_numbers_match(cells.cells, NEW_PAYLOAD)
    shown = {tuple(json.loads(k)): text for k, _, text in cells.cells}
    assert shown[("headline", "WEAT effect size d")] == "1.235"
    assert shown[("headline", "WEAT p-value")] == "< 0.001"
    assert shown[("headline", "pairs")] == "1503"
    assert shown[("results", "weat", "p_value")] == "< 0.001"
    # settings: the JSON's parameters, what papermill injected winning; no machine paths
    assert "<b>Settings of this run:</b> quick = True, model = tiny-bert, n_permutations = 2000" in page
    # nothing a lay reader should not see: no blank cell, no NaN, no e-notation
    visible = _VisibleText()
    visible.feed(page)
    assert all(c.strip() for c in visible.cells), "blank table cell"
    assert page_noise(page) == []
    # the study page starts with the finding too
    page_html = render_study_page(new_results_dir / "01_tiny.ipynb", study=s)
    assert f"<b>In short:</b> {html.escape(FINDING)}" in page_html


def test_index_old_json_falls_back_to_what_this_shows(results_dir: Path) -> None:
    (s,) = discover_studies(results_dir)
    assert s.finding == "Squares grow fast." and s.finding_from_notebook
    page = render_index([s])
    assert [part for _, part in _outline(page).parts] == ["finding", "settings", "all numbers", "figures"]
    assert "<b>What this shows:</b> Squares grow fast." in page
    assert '<table class="bk-keynumbers"' not in page  # no headline numbers in an old JSON: none invented


def test_index_box_never_empty(tmp_path: Path) -> None:
    """A JSON alone (no notebook, no finding) still says something, and so does a notebook alone."""
    (tmp_path / "01_bare.json").write_text(json.dumps({"notebook": "01_bare", "results": {"x": 1}}), "utf-8")
    nb = new_notebook(cells=[new_markdown_cell("# Only a notebook"), new_code_cell("1")])
    nbformat.write(nb, tmp_path / "02_nb.ipynb")
    page = render_index(discover_studies(tmp_path))
    outline = _outline(page).parts
    assert ("01_bare", "finding") in outline and ("01_bare", "all numbers") in outline
    assert ("02_nb", "finding") in outline
    assert "This run saved no one-sentence finding" in page
    assert "This study saved no numbers file" in page
    assert page_noise(page) == []


def test_notebook_finding_skips_notes_and_shortens() -> None:
    nb = new_notebook(
        cells=[
            new_markdown_cell("# T"),
            new_markdown_cell(
                "## What this shows\n\n*(Numbers quoted here are from a default run.)*\n\n"
                "In replay mode:\n\n* **The thesis is reproduced** with $p = 0.03$.\n* Second point."
            ),
        ]
    )
    assert report.notebook_finding(nb) == "The thesis is reproduced with p = 0.03."
    nb.cells[1].source = "## What this shows\n\n" + "A long sentence about bias. " * 30
    found = report.notebook_finding(nb)
    assert found is not None and len(found) <= 320 and found.endswith(".")
    assert report.notebook_finding(new_notebook(cells=[new_markdown_cell("# T\n\nNo such section.")])) is None


# ----------------------------------------------------------------------------- same run


def _set_json(d: Path, **changes: Any) -> None:
    payload = json.loads((d / "01_tiny.json").read_text("utf-8"))
    payload.update(changes)
    (d / "01_tiny.json").write_text(json.dumps(payload), "utf-8")


def _set_papermill(d: Path, **meta: Any) -> None:
    nb = nbformat.read(d / "01_tiny.ipynb", as_version=4)
    nb.metadata["papermill"].update(meta)
    nbformat.write(nb, d / "01_tiny.ipynb")


def test_same_run_parameters_agree(new_results_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    # papermill injected quick=True and n_permutations=2000 (an int); the JSON has 2000.0: the same
    _set_papermill(
        new_results_dir,
        parameters={
            "quick": True,
            "n_permutations": 2000.0,
            "results_dir": str(new_results_dir),
            "PAPERMILL_OUTPUT_PATH": str(new_results_dir / "01_tiny.ipynb"),
        },
    )
    with caplog.at_level(logging.WARNING):
        (s,) = discover_studies(new_results_dir)
    assert s.run_mismatch == ()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    page = render_index([s])
    assert "different run" not in page
    # machine-specific paths are not settings a reader needs
    assert str(new_results_dir) not in page and "PAPERMILL_OUTPUT_PATH" not in page
    assert "quick = True, model = tiny-bert, n_permutations = 2000" in page


def test_same_run_parameter_mismatch_is_flagged(
    new_results_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _set_json(new_results_dir, parameters={"quick": False, "model": "tiny-bert"})
    with caplog.at_level(logging.WARNING, logger="biaskit.report.html_studies"):
        index = build_site(new_results_dir, tmp_path / "site").read_text("utf-8")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("01_tiny" in w and "different run" in w and "quick" in w for w in warnings), warnings
    page = (tmp_path / "site" / "01_tiny.html").read_text("utf-8")
    for html_text in (index, page):
        assert "comes from a different run than this page" in html_text
        assert "parameter quick is True on this page but False in the numbers file" in html_text
    # the settings shown are the notebook's (what papermill injected)
    assert "quick = True" in index and "quick = False" not in index


def test_same_run_time_mismatch_is_flagged(new_results_dir: Path) -> None:
    _set_papermill(
        new_results_dir, start_time="2024-03-01T10:00:00.5+00:00", end_time="2024-03-01T10:00:09.9+00:00"
    )
    _set_json(new_results_dir, created="2024-03-01T10:00:09+00:00")  # written during the run
    assert discover_studies(new_results_dir)[0].run_mismatch == ()
    _set_json(new_results_dir, created="2024-02-28T17:00:00+00:00")  # a JSON left by an earlier run
    (s,) = discover_studies(new_results_dir)
    assert len(s.run_mismatch) == 1 and "outside the run of this notebook" in s.run_mismatch[0]
    assert "comes from a different run than this page" in render_index([s])


def test_check_same_run_rules() -> None:
    nb = new_notebook()
    nb.metadata["papermill"] = {"parameters": {"quick": True, "alpha": 0.05, "seeds": [1, 2], "out": "res/"}}
    ok = {"notebook": "01_x", "results": {}, "parameters": {"quick": True, "alpha": 0.05, "seeds": [1, 2.0]}}
    assert report.check_same_run(nb, ok, stem="01_x") == []
    assert report.check_same_run(nb, {**ok, "parameters": {"out": "res"}}, stem="01_x") == []
    assert report.check_same_run(nb, {"results": {"parameters": {"quick": False}}}, stem="01_x") == []
    bad = report.check_same_run(nb, {**ok, "parameters": {"quick": 0, "seeds": [1]}}, stem="01_x")
    assert len(bad) == 2
    assert report.check_same_run(nb, ok, stem="02_y") == ["it was written by notebook '01_x', not '02_y'"]


# ----------------------------------------------------------------------------- alt text, clean pages


class _ListHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _build_capturing_logs(results: Path, out: Path) -> tuple[Path, list[str]]:
    """Build the site and return every log message of nbconvert / traitlets / biaskit / the root."""
    handler = _ListHandler()
    loggers = [logging.getLogger(n) for n in ("", "traitlets", "NbConvertApp", "nbconvert", "biaskit")]
    for lg in loggers:
        lg.addHandler(handler)
    try:
        index = build_site(results, out)
    finally:
        for lg in loggers:
            lg.removeHandler(handler)
    return index, handler.messages


def test_every_image_has_alt_text_and_nbconvert_does_not_warn(results_dir: Path, tmp_path: Path) -> None:
    nb = nbformat.read(results_dir / "01_tiny.ipynb", as_version=4)
    b64 = base64.b64encode(_png_bytes("second")).decode("ascii")
    nb.cells.append(
        new_code_cell(
            "save_figure(fig, 'x', alt=...)",
            outputs=[
                new_output(
                    "display_data",
                    data={"image/png": b64},
                    metadata={"image/png": {"alt": "Squares against x: they grow fast"}},
                ),
                new_output(
                    "display_data", data={"text/html": "<p>inline</p><img src='data:image/png;base64,'>"}
                ),
            ],
        )
    )
    nb.cells.append(new_markdown_cell(f"An image in the text: ![](data:image/png;base64,{b64})"))
    nbformat.write(nb, results_dir / "01_tiny.ipynb")
    (results_dir / "01_tiny_described.png").write_bytes(
        _png_bytes(description="Squares, described in the PNG")
    )

    index, messages = _build_capturing_logs(results_dir, tmp_path / "site")
    assert not [m for m in messages if "Alternative text is missing" in m], messages
    page = (tmp_path / "site" / "01_tiny.html").read_text("utf-8")
    for html_text in (page, index.read_text("utf-8")):
        collector = _CellCollector()
        collector.feed(html_text)
        assert collector.imgs
        assert all((i.get("alt") or "").strip() for i in collector.imgs), [
            i.get("alt") for i in collector.imgs
        ]
    alts = [i["alt"] for i in _images(page)]
    assert alts[:2] == ["Figure 1 of A tiny study of squares", "Squares against x: they grow fast"]
    assert "No description has been provided" not in page
    # thumbnails on the index: the PNG's Description when it has one
    index_alts = [i["alt"] for i in _images(index.read_text("utf-8"))]
    assert "Squares, described in the PNG" in index_alts
    assert any("squares" in (a or "") and "A tiny study of squares" in (a or "") for a in index_alts)


def _images(page: str) -> list[dict[str, str | None]]:
    collector = _CellCollector()
    collector.feed(page)
    return collector.imgs


def test_study_page_shows_no_raw_logs_or_progress_bars(results_dir: Path, tmp_path: Path) -> None:
    nb = nbformat.read(results_dir / "01_tiny.ipynb", as_version=4)
    stderr = (
        "WARNING:biaskit.data.wordlists:set Y: dropping 1 of 7 out-of-vocabulary words: ['middle eastern']\n"
        "INFO:biaskit.embeddings.vectors:loaded 3,680 vectors\n"
        " 40%|████      | 2/5 [00:01<00:01,  2.00it/s]\r100%|██████████| 5/5 [00:02<00:00,  2.10it/s]\n"
        "/x/site-packages/pkg/mod.py:12: FutureWarning: the default will change\n"
        "  warnings.warn(\n"
    )
    nb.cells.append(
        new_code_cell(
            "run()",
            outputs=[
                new_output("stream", name="stderr", text=stderr),
                new_output("stream", name="stdout", text="mean = 0.42\n"),
                new_output("stream", name="stderr", text="ERROR biaskit.studies.grid: cell x failed\n"),
                new_output(
                    "stream",
                    name="stderr",
                    text="WARNING:biaskit.data.wordlists:set Y: dropping 1 of 7 out-of-vocabulary words: "
                    "['middle eastern']\n",
                ),
            ],
        )
    )
    nbformat.write(nb, results_dir / "01_tiny.ipynb")
    build_site(results_dir, tmp_path / "site")
    page = (tmp_path / "site" / "01_tiny.html").read_text("utf-8")
    assert page_noise(page) == []
    assert page.count("out-of-vocabulary words") == 1  # shown once, as a note
    assert "<b>Note:</b> set Y: dropping 1 of 7" in page
    assert "<b>Problem:</b> cell x failed" in page
    assert "mean = 0.42" in page  # printed on purpose: kept
    assert "it/s" not in page and "5/5" not in page  # progress bars gone
    # INFO lines and Python warnings: folded, labelled, not lost
    folded = re.search(r'<details class="bk-log"><summary>Technical messages \((\d+) lines\)</summary>', page)
    assert folded is not None and folded.group(1) == "3"
    assert "loaded 3,680 vectors" in page and "FutureWarning" in page
    assert not re.search(r"<details class=\"bk-log\" open", page)


def test_failed_step_keeps_its_error_visible(results_dir: Path, tmp_path: Path) -> None:
    nb = nbformat.read(results_dir / "01_tiny.ipynb", as_version=4)
    tb = [
        "\x1b[0;31mValueError\x1b[0m   Traceback (most recent call last)",
        "Cell In[2], line 1",
        "ValueError: boom",
    ]
    nb.cells[2].outputs.append(new_output("error", ename="ValueError", evalue="boom", traceback=tb))
    nbformat.write(nb, results_dir / "01_tiny.ipynb")
    build_site(results_dir, tmp_path / "site")
    page = (tmp_path / "site" / "01_tiny.html").read_text("utf-8")
    assert "This notebook stopped with an error" in page
    assert "<b>This step stopped with an error:</b>\nValueError: boom" in page
    assert '<details class="bk-traceback">' in page  # the traceback: folded, still there
    assert any("traceback" in p for p in page_noise(page))  # and a failed run is never "clean"


# ----------------------------------------------------------------------------- the noise check itself


def test_page_noise_catches_each_pattern() -> None:
    def page(body: str) -> str:
        return f"<html><head><style>.x{{}}</style></head><body>{body}</body></html>"

    cases = {
        "NaN in a table": "<table><tr><td>WEAT 1</td><td>NaN</td></tr></table>",
        "PosixPath": "<pre>PosixPath('/tmp/results/03_weat.json')</pre>",
        "dtype:": "<pre>a    1\nb    2\ndtype: int64</pre>",
        "raw log line": "<pre>WARNING:biaskit.data.wordlists:set Y: dropping 1 word</pre>",
        "a traceback": "<pre>Traceback (most recent call last):\n  File ...</pre>",
        "e-notation": "<p>the difference is significant (p = 4.2e-05)</p>",
    }
    for what, body in cases.items():
        found = page_noise(page(f"<p>Some prose.</p>{body}"))
        assert len(found) == 1 and found[0].startswith(what), (what, found)
    assert page_noise(page("<pre>INFO:biaskit.x:loaded</pre>")) != []
    # the same texts where a reader does not see them: folded code, script, style, attributes
    hidden = (
        '<details class="bk-code"><summary>Show the code</summary><pre>x = float("NaN")  # 1e-05\n'
        "print(PosixPath('.'), s.dtype)\nWARNING:biaskit.x:y</pre></details>"
        "<script>var p = 4.2e-05;</script>"
        '<details class="bk-log"><summary>Technical messages (1 line)</summary>'
        "<pre>INFO:biaskit.x:loaded</pre></details>"
        '<td data-value="4.2e-05">0.000042</td><p>NaN-free prose, 42 pairs, p &lt; 0.001</p>'
    )
    assert page_noise(page(hidden)) == []


# ----------------------------------------------------------------------------- the reproduced run


@pytest.fixture(scope="session")
def reproduced_site(
    reproduced_results: Any, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, list[str]]:
    """The site built from a copy of the ``reproduced_results`` run (and every log message of the build)."""
    root = tmp_path_factory.mktemp("reproduced-report")
    results = root / "results"
    shutil.copytree(reproduced_results.folder, results)
    return _build_capturing_logs(results, root / "site")


def _reproduced_errors(reproduced_results: Any) -> str:
    return "; ".join(
        f"{stem}: {(err.splitlines() or [''])[0][:300]}" for stem, err in reproduced_results.errors.items()
    )


@pytest.mark.slow
def test_reproduced_site_has_no_noise(
    reproduced_results: Any, reproduced_site: tuple[Path, list[str]]
) -> None:
    """Every page of the report of a full run (quick=True) reads clean: see :func:`page_noise`."""
    index, messages = reproduced_site
    site = index.parent
    problems: list[tuple[str, str]] = []  # (where, what)
    if reproduced_results.errors:
        problems.append(("notebooks that failed", _reproduced_errors(reproduced_results)))
    pages = [index, *sorted(p for p in site.glob("*.html") if p != index)]
    stems = {nb.stem for nb in reproduced_results.folder.glob("[0-9][0-9]_*.ipynb")}
    assert {p.stem for p in pages[1:]} == stems, "a study page is missing"
    for page in pages:
        text = page.read_text("utf-8")
        problems += [(page.name, p) for p in page_noise(text)]
        problems += [
            (page.name, "image without alt text") for i in _images(text) if not (i.get("alt") or "").strip()
        ]
    problems += [("build log", m) for m in messages if "Alternative text is missing" in m]
    problems += [("build log", m) for m in messages if "different run" in m]  # one run: must agree
    outline = _outline(index.read_text("utf-8"))
    for stem in sorted(stems):
        if outline.finding_kind.get(stem) != "json":
            problems.append(("index.html", f"the box of {stem} does not lead with the finding of its JSON"))
    if problems:  # a summary per page and kind of problem, then a few examples of each
        groups: dict[tuple[str, str], list[str]] = {}
        for where, what in problems:
            groups.setdefault((where, what.split(":")[0]), []).append(what)
        lines = [f"{len(problems)} problem(s) on the pages of the reproduced run:"]
        for (where, kind), items in sorted(groups.items()):
            lines.append(f"  {where}: {kind} x{len(items)}")
            lines += [f"      {x[:200]}" for x in items[:2]]
        pytest.fail("\n".join(lines), pytrace=False)


@pytest.mark.slow
def test_reproduced_index_numbers_equal_json(
    reproduced_results: Any, reproduced_site: tuple[Path, list[str]]
) -> None:
    """On the index of the reproduced run, every number shown equals its JSON file and reads right."""
    assert not reproduced_results.errors, f"notebooks that failed: {_reproduced_errors(reproduced_results)}"
    index, _ = reproduced_site
    by_stem = _cells_by_stem(index.read_text("utf-8"))
    jsons = sorted(reproduced_results.folder.glob("[0-9][0-9]_*.json"))
    assert jsons, "the run wrote no JSON"
    for js in jsons:
        payload = json.loads(js.read_text("utf-8"))
        assert js.stem in by_stem, f"no numbers of {js.stem} on the index"
        _assert_numbers_match(by_stem[js.stem], payload, exact_count=False)


class _StemCells(_CellCollector):
    def __init__(self) -> None:
        super().__init__()
        self.stem: str | None = None
        self.by_stem: dict[str, list[tuple[str, str, str]]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "section" and a.get("data-stem"):
            self.stem = a["data-stem"]
        super().handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        n = len(self.cells)
        super().handle_endtag(tag)
        if len(self.cells) > n and self.stem is not None:
            self.by_stem.setdefault(self.stem, []).append(self.cells[-1])


def _cells_by_stem(page: str) -> dict[str, list[tuple[str, str, str]]]:
    parser = _StemCells()
    parser.feed(page)
    return parser.by_stem


# ----------------------------------------------------------------------------- in a real browser

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--remote-allow-origins=*",
    "--remote-debugging-port=0",
]


class Browser:
    """Headless Chromium driven over the DevTools protocol (websocket-client), one page."""

    def __init__(self, profile: Path) -> None:
        import websocket

        self.proc = subprocess.Popen(
            [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # own process group: closed as a whole in close()
        )
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("Chromium did not start (no DevToolsActivePort)")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as r:
            targets = json.load(r)
        ws_url = next(t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page")
        self.ws = websocket.create_connection(ws_url, timeout=60, suppress_origin=True)
        self._id = 0
        self.events: list[dict[str, Any]] = []
        for method in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.send(method)
        self.send(
            "Emulation.setDeviceMetricsOverride", width=1200, height=1400, deviceScaleFactor=1, mobile=False
        )

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def open(self, url: str) -> None:
        self.events.clear()
        self.send("Page.navigate", url=url)
        deadline = time.monotonic() + 60
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            assert time.monotonic() < deadline, f"{url} did not finish loading"
            self.events.append(json.loads(self.ws.recv()))
        self.eval("new Promise(r => setTimeout(r, 300))")  # let late errors arrive

    def eval(self, expression: str) -> Any:
        res = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise RuntimeError(res["exceptionDetails"])
        return res["result"].get("value")

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors (e.g. CSP-blocked loads)."""
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append(json.dumps(p.get("exceptionDetails", {}))[:500])
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(json.dumps(p.get("args", []))[:500])
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(p["entry"].get("text", ""))
        return out

    def screenshot(self, path: Path) -> bytes:
        data = base64.b64decode(self.send("Page.captureScreenshot", format="png")["data"])
        path.write_bytes(data)
        return data

    def close(self) -> None:
        ws = getattr(self, "ws", None)
        if ws is not None:
            ws.close()
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


@pytest.fixture
def browser(tmp_path: Path):
    if CHROMIUM is None:
        pytest.skip(
            "Chromium is not installed (run scripts/install_chromium.sh or set BIASKIT_CHROMIUM): "
            "browser check of the report not run"
        )
    pytest.importorskip("websocket", reason="websocket-client is needed to drive Chromium")
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    b = Browser(profile)
    try:
        yield b
    finally:
        b.close()


_JS_IMAGES = """Array.from(document.images).map(i => ({src: i.src.slice(0, 22), w: i.naturalWidth,
  h: i.naturalHeight, ok: i.complete, alt: i.getAttribute('alt') || ''}))"""
_JS_CELLS = """(() => { document.querySelectorAll('details.bk-all').forEach(d => { d.open = true; });
  return Array.from(document.querySelectorAll('[data-value]')).map(td =>
    [td.dataset.key, td.dataset.value, td.innerText]); })()"""
_JS_REMOTE = """performance.getEntriesByType('resource').map(e => e.name)
  .filter(n => !n.startsWith('data:') && !n.startsWith('file:'))"""


@pytest.mark.slow
def test_site_in_headless_chromium(results_dir: Path, tmp_path: Path, browser: Browser) -> None:
    index = build_site(results_dir, tmp_path / "site")

    # index: loads cleanly, thumbnail decoded, numbers equal the JSON
    browser.open(index.as_uri())
    assert browser.errors() == []
    assert browser.eval("document.title") == "biaskit: results of every study"
    imgs = browser.eval(_JS_IMAGES)
    assert len(imgs) == 1
    assert all(i["ok"] and i["w"] > 0 and i["h"] > 0 and i["src"].startswith("data:image/png") for i in imgs)
    assert all(i["alt"].strip() for i in imgs)
    assert browser.eval("document.querySelectorAll('details.bk-all[open]').length") == 0  # folded
    _assert_numbers_match([tuple(c) for c in browser.eval(_JS_CELLS)], OLD_PAYLOAD)
    assert browser.eval(_JS_REMOTE) == []
    shot = browser.screenshot(tmp_path / "index.png")
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 10_000

    # the link from the index leads to the study page
    href = browser.eval("document.querySelector('section.bk-study h2 a').href")
    assert href == (index.parent / "01_tiny.html").as_uri()

    # study page: loads cleanly, figure decoded, code folded (not visible), formulas as MathML
    browser.open(href)
    assert browser.errors() == []
    imgs = browser.eval(_JS_IMAGES)
    assert len(imgs) == 1 and imgs[0]["w"] > 0 and imgs[0]["src"].startswith("data:image/png")
    text = browser.eval("document.body.innerText")
    assert "A tiny study of squares" in text and "What this shows" in text
    assert "Show the code" in text and "plt.subplots" not in text  # folded
    assert browser.eval("document.querySelectorAll('details.bk-code[open]').length") == 0
    if HAVE_MATHML:
        assert browser.eval("document.querySelectorAll('math').length") >= 3
    assert browser.eval(_JS_REMOTE) == []
    browser.eval("document.querySelector('details.bk-code').open = true")
    assert "quick = False" in browser.eval("document.body.innerText")
    browser.screenshot(tmp_path / "study.png")


@pytest.mark.slow
def test_browser_check_detects_remote_resources(tmp_path: Path, browser: Browser) -> None:
    """The console-error check can fail: a page with a remote script is caught (CSP blocks it offline)."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        f'<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="{report.CSP}">'
        '<script src="https://cdnjs.cloudflare.com/ajax/libs/require.js/2.1.10/require.min.js"></script>'
        "</head><body><img src='missing.png'></body></html>",
        encoding="utf-8",
    )
    browser.open(bad.as_uri())
    assert len(browser.errors()) >= 1


_JS_CELLS_BY_STEM = """(() => { document.querySelectorAll('details.bk-all').forEach(d => { d.open = true; });
  return Array.from(document.querySelectorAll('[data-value]')).map(td =>
    [td.closest('section').dataset.stem, td.dataset.key, td.dataset.value, td.innerText]); })()"""


@pytest.mark.slow
def test_reproduced_site_in_headless_chromium(
    reproduced_results: Any, reproduced_site: tuple[Path, list[str]], browser: Browser
) -> None:
    """Every page of the report of the reproduced run, opened in Chromium as a reader would."""
    index, _ = reproduced_site
    site = index.parent
    pages = [index, *sorted(p for p in site.glob("*.html") if p != index)]
    problems: list[str] = []
    if reproduced_results.errors:
        problems.append(f"notebooks that failed: {_reproduced_errors(reproduced_results)}")
    for page in pages:
        browser.open(page.as_uri())
        problems += [f"{page.name}: console error {e}" for e in browser.errors()]
        for i, img in enumerate(browser.eval(_JS_IMAGES)):
            if not (img["ok"] and img["w"] > 0 and img["h"] > 0):
                problems.append(f"{page.name}: image {i + 1} not decoded ({img['src']})")
            if not img["alt"].strip():
                problems.append(f"{page.name}: image {i + 1} has no alternative text")
        if browser.eval(_JS_REMOTE):
            problems.append(f"{page.name}: remote resources {browser.eval(_JS_REMOTE)}")
        if page == index:
            if browser.eval("document.querySelectorAll('details.bk-all[open]').length"):
                problems.append("index: 'All numbers of this run' is not folded")
            links = browser.eval(
                "Array.from(document.querySelectorAll('section.bk-study h2 a')).map(a => a.href)"
            )
            problems += [
                f"index: broken link {h}"
                for h in links
                if not Path(urllib.request.url2pathname(h[7:])).exists()
            ]
            cells: dict[str, list[tuple[str, str, str]]] = {}
            for stem, key, value, text in browser.eval(_JS_CELLS_BY_STEM):
                cells.setdefault(stem, []).append((key, value, text))
            for js in sorted(reproduced_results.folder.glob("[0-9][0-9]_*.json")):
                try:
                    _assert_numbers_match(
                        cells.get(js.stem, []), json.loads(js.read_text("utf-8")), exact_count=False
                    )
                except AssertionError as exc:
                    problems.append(f"index: numbers of {js.stem} differ from its JSON: {exc}")
        else:
            if browser.eval("document.querySelectorAll('details.bk-code').length") == 0:
                problems.append(f"{page.name}: no folded code")
            if browser.eval("document.querySelectorAll('details.bk-code[open]').length"):
                problems.append(f"{page.name}: code is not folded")
            if "What this shows" not in browser.eval("document.body.innerText"):
                problems.append(f"{page.name}: no 'What this shows' section")
    assert not problems, f"{len(problems)} problem(s):\n" + "\n".join(problems[:60])
