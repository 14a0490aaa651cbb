"""Tests of the static HTML report (biaskit.report).

Two layers:

* without a browser: the flattening / formatting helpers, title and source
  extraction, the index builder (parsed back with the standard library's HTML
  parser and compared with the JSON by walking the JSON independently), and the
  offline guarantees of the study pages (no remote script, images embedded);
* as a person would see it: the site built from a small fixture (an executed
  notebook with a figure, plus its JSON and PNG) is opened in headless Chromium
  through the DevTools protocol; the test fails on any console error or
  uncaught exception (remote loads are blocked by the pages' CSP and would show
  up as errors), checks that every image is decoded, that the code is folded
  and that the numbers on the page equal the JSON.  Skipped, with the reason,
  when Chromium is not installed (``scripts/install_chromium.sh``).
"""

from __future__ import annotations

import base64
import io
import json
import math
import os
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
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from biaskit import report
from biaskit.report import (
    HeadlineRow,
    build_site,
    discover_studies,
    flatten_results,
    format_value,
    notebook_source,
    notebook_title,
    render_index,
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


def _png_bytes(title: str = "squares") -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([1, 2, 3], [1, 4, 9], marker="o")
    ax.set(title=title, xlabel="x", ylabel="x squared")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=60)
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


@pytest.fixture
def results_dir(tmp_path: Path) -> Path:
    """A results folder as `make reproduce` leaves it, with one study and one figure."""
    d = tmp_path / "results"
    d.mkdir()
    png = _png_bytes()
    nbformat.write(_tiny_executed_notebook(png), d / "01_tiny.ipynb")
    (d / "01_tiny_squares.png").write_bytes(png)
    payload = {
        "notebook": "01_tiny",
        "created": "2024-01-01T00:00:00+00:00",
        "python": "3.11",
        "results": RESULTS,
    }
    (d / "01_tiny.json").write_text(json.dumps(payload), encoding="utf-8")
    return d


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


def _check_displayed(text: str, value: Any) -> None:
    """The rounded text shown to the reader must agree with the exact value."""
    text = text.strip()
    if value is None:
        assert text == "n/a"
    elif isinstance(value, bool):
        assert text == ("yes" if value else "no")
    elif isinstance(value, int | float):
        shown = float(text.replace("\u2009", "").replace(",", ""))
        assert shown == pytest.approx(value, rel=1e-3, abs=1e-12), (text, value)
    elif isinstance(value, str):
        assert text == value


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


def _assert_numbers_match(cells: list[tuple[str, str, str]], results: dict[str, Any]) -> None:
    assert len(cells) == _count_leaves(results)
    for key, value, text in cells:
        path = json.loads(key)
        expected = _walk(results, path)
        got = json.loads(value)
        assert _same(got, expected), (path, got, expected)
        _check_displayed(text, expected)


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
        (4.2e-05, "4.2e-05"),
        (0.00099, "9.9e-04"),
        (123456.7, "123\u2009457"),
        ("WEAT", "WEAT"),
        (float("nan"), "nan"),
    ],
)
def test_format_value(value: Any, text: str) -> None:
    assert format_value(value) == text


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
    _assert_numbers_match(parser.cells, RESULTS)
    # the thumbnail is embedded and links to the study page
    assert len(parser.imgs) == 1 and str(parser.imgs[0]["src"]).startswith("data:image/png;base64,")
    assert 'href="01_tiny.html"' in page
    assert "seed 000, section 3.4.2 (WEAT)" in page and "quick = True" in page


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


# ----------------------------------------------------------------------------- in a real browser

CHROMIUM = os.environ.get("BIASKIT_CHROMIUM") or next(
    (
        shutil.which(n)
        for n in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
        if shutil.which(n)
    ),
    None,
)
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
  h: i.naturalHeight, ok: i.complete}))"""
_JS_CELLS = """Array.from(document.querySelectorAll('[data-value]')).map(td =>
  [td.dataset.key, td.dataset.value, td.innerText])"""
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
    _assert_numbers_match([tuple(c) for c in browser.eval(_JS_CELLS)], RESULTS)
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
