"""The explorers of notebook 13 and the seed-word form of notebook 00 in a real JupyterLab and Chromium.

Seed 004 (sections 4.1-4.2) describes views that are explored by clicking: a column or
row header re-sorts the table, a cell or a point opens its details, hover shows a name and its score,
and every drop-down keeps the other controls true to the view.  These tests do what a reader does:

* start JupyterLab from this environment on 127.0.0.1 (a free port, a token, every Jupyter folder in
  the test's temporary folder) with copies of the notebooks, ``quick`` set to True;
* open each notebook in the system Chromium, driven by Playwright for Python (launched with
  ``executable_path``; ``playwright install`` downloads browsers and is never used), and run all cells;
* click a column header, a row header, a cell, a point and each drop-down in turn, and assert on what
  the page shows: the order changed, details appeared, the dependent options followed (country x
  beverage, the thesis's *beer* example, is reachable), no traceback, no "Error displaying widget", no
  error line in the widgets, no console errors; then the seed-word form runs edited words, with the
  whole button label visible and no horizontal scrolling; it names the words it left out, warns when the
  sets are too small to reach alpha, and words its verdict with the reader's set names;
* reload the page (the notebook saved first): the explorer views are drawn again from the running kernel,
  not blank; save, shut the kernel down and open the notebook again: each explorer's cell shows its static
  figure and the one line "Run this cell to explore", never "Error displaying widget".

Screenshots go to the test's temporary folder (``tmp_path``) for inspection.  Without Chromium
(``scripts/install_chromium.sh`` installs it; ``BIASKIT_CHROMIUM`` names another binary), Playwright
or JupyterLab the tests skip and say why.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"

CHROMIUM = os.environ.get("BIASKIT_CHROMIUM") or next(
    (
        shutil.which(n)
        for n in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
        if shutil.which(n)
    ),
    None,
)

pytestmark = pytest.mark.slow

#: console messages of JupyterLab itself that say nothing about the page under test (none so far)
BENIGN_CONSOLE: tuple[str, ...] = ()


def _need_browser() -> None:
    if CHROMIUM is None or not Path(CHROMIUM).exists():
        where = f" (BIASKIT_CHROMIUM={CHROMIUM} does not exist)" if CHROMIUM else ""
        pytest.skip(
            f"Chromium is not installed{where} (run scripts/install_chromium.sh or set BIASKIT_CHROMIUM): "
            "browser test of the explorers not run"
        )
    pytest.importorskip(
        "playwright.sync_api",
        reason="Playwright for Python is not installed (pip install playwright; no browser download needed)",
    )
    pytest.importorskip("jupyterlab", reason="JupyterLab is not installed (pip install -e .[notebooks])")
    pytest.importorskip("anywidget", reason="anywidget is not installed (plotly FigureWidget needs it)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _copy_notebook(name: str, dest: Path, results: Path) -> str:
    """Copy a notebook with ``quick = True`` and ``results_dir`` set in its parameters cell."""
    nb = json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    src = "".join(cell["source"])
    src, n = re.subn(r"(?m)^quick(\s*:\s*bool)?\s*=\s*False", r"quick\1 = True", src)
    assert n == 1, f"{name}: no `quick = False` line in the parameters cell"
    src = re.sub(r'(?m)^results_dir(\s*:\s*str)?\s*=\s*""', rf"results_dir\1 = {str(results)!r}", src)
    cell["source"] = src.splitlines(keepends=True)
    # the kernel of this environment, chosen without the "Select Kernel" dialog
    nb.setdefault("metadata", {})["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    (dest / name).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return name


class Lab:
    """A JupyterLab server of this environment, everything it writes kept under ``base``."""

    def __init__(self, base: Path) -> None:
        self.root = base / "root"
        self.root.mkdir()
        self.results = base / "results"
        self.results.mkdir()
        for name in ("13_indirect_bias_explorer.ipynb", "00_tour.ipynb"):
            _copy_notebook(name, self.root, self.results)
        self.port = _free_port()
        self.token = secrets.token_hex(16)
        env = dict(os.environ)
        for var, sub in (
            ("JUPYTER_RUNTIME_DIR", "runtime"),
            ("JUPYTER_CONFIG_DIR", "config"),
            ("IPYTHONDIR", "ipython"),
            ("JUPYTERLAB_SETTINGS_DIR", "settings"),
            ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
        ):
            (base / sub).mkdir()
            env[var] = str(base / sub)
        # every cell stays in the page (no virtual scrolling), so the widgets can be found and clicked;
        # no news and update checks (the machine may be offline)
        tracker = base / "settings" / "@jupyterlab" / "notebook-extension"
        tracker.mkdir(parents=True)
        (tracker / "tracker.jupyterlab-settings").write_text(
            json.dumps({"windowingMode": "none", "autoStartDefaultKernel": True})
        )
        news = base / "settings" / "@jupyterlab" / "apputils-extension"
        news.mkdir(parents=True)
        (news / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False})
        )
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
        env["BIASKIT_RESULTS_DIR"] = str(self.results)
        self.log = (base / "jupyterlab.log").open("wb")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyterlab",
                "--no-browser",
                "--ip=127.0.0.1",
                f"--port={self.port}",
                "--port-retries=0",
                f"--IdentityProvider.token={self.token}",
                f"--ServerApp.root_dir={self.root}",
                "--ServerApp.open_browser=False",
                "--ServerApp.terminals_enabled=False",
                "--LabApp.extension_manager=readonly",
                *(["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
                "--LabApp.news_url=",
                "--LabServerApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            ],
            cwd=self.root,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=5):
                    break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.close()
                    raise RuntimeError(f"JupyterLab did not start; see {base / 'jupyterlab.log'}") from None
                time.sleep(0.3)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def shut_down_kernels(self) -> None:
        """End every session and its kernel (what "Shut Down All Kernels" does)."""
        api = f"{self.url}/api/sessions"
        with urllib.request.urlopen(f"{api}?token={self.token}", timeout=30) as r:
            sessions = json.load(r)
        for s in sessions:
            req = urllib.request.Request(f"{api}/{s['id']}?token={self.token}", method="DELETE")
            with urllib.request.urlopen(req, timeout=60):
                pass

    def notebook_url(self, name: str) -> str:
        return f"{self.url}/lab/tree/{name}?token={self.token}&reset"

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.log.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    _need_browser()
    server = Lab(tmp_path_factory.mktemp("jupyterlab"))
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def browser(lab: Lab) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
        )
        try:
            yield b
        finally:
            b.close()


class Page:
    """One JupyterLab tab with a notebook, its console errors and screenshots."""

    def __init__(self, browser: Any, lab: Lab, name: str, shots: Path) -> None:
        self.ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.page = self.ctx.new_page()
        self.page.set_default_timeout(60_000)  # generous: a loaded CI machine, not a speed check
        self.console: list[str] = []
        self.page.on("console", lambda m: self.console.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.console.append(f"uncaught: {e}"))
        self.shots = shots
        self.n = 0
        self.page.goto(lab.notebook_url(name))
        self.page.wait_for_selector(".jp-Notebook .jp-Cell", state="attached")
        select = self.page.locator(".jp-Dialog button", has_text=re.compile(r"^Select$"))
        try:  # JupyterLab may still ask which kernel to start: the notebook's own one
            select.wait_for(timeout=3000)
            select.click()
        except Exception:  # no dialog: the kernel started by itself
            pass
        self.page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", state="attached")

    def shot(self, label: str) -> Path:
        self.n += 1
        path = self.shots / f"{self.n:02d}_{label}.png"
        self.page.screenshot(path=str(path), full_page=False)
        return path

    def run_all(self, timeout_s: float = 600) -> None:
        """Run all cells (the Run menu) and wait until the kernel is idle and every cell has run."""
        p = self.page
        deadline = time.monotonic() + timeout_s
        for _attempt in range(
            3
        ):  # on a loaded machine the first click can land before the kernel is connected
            p.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
            p.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
            started = time.monotonic() + 90
            while time.monotonic() < started:
                p.wait_for_timeout(500)
                prompts = p.locator(".jp-CodeCell .jp-InputPrompt").all_inner_texts()
                if any(re.search(r"\[(\*|\d+)\]", t) for t in prompts):
                    break
            else:
                continue  # nothing started: click Run All again
            break
        while True:
            p.wait_for_timeout(500)
            prompts = p.locator(".jp-CodeCell .jp-InputPrompt").all_inner_texts()
            busy = p.locator(".jp-Notebook-ExecutionIndicator[data-status='busy']").count()
            if prompts and not busy and all(re.search(r"\[\d+\]", t) for t in prompts):
                break
            assert time.monotonic() < deadline, f"notebook still running after {timeout_s} s: {prompts}"
        p.wait_for_timeout(1000)  # widgets render after the last message

    def save(self) -> None:
        """Save the notebook (Ctrl+S) and wait until JupyterLab says it is saved."""
        p = self.page
        p.locator(".jp-Notebook").first.click(position={"x": 5, "y": 5})
        p.keyboard.press("Control+s")
        _wait_for(p, lambda: p.locator(".jp-mod-dirty").count() == 0, "the notebook to be saved")
        p.wait_for_timeout(1000)

    def reload(self) -> None:
        """Reload the browser page; the notebook comes back from its saved file, the kernel keeps running."""
        self.page.reload()
        self.page.wait_for_selector(".jp-Notebook .jp-Cell", state="attached")
        self.page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", state="attached")

    def assert_clean(self, ignore: tuple[str, ...] = ()) -> None:
        """No traceback, no "Error displaying widget", no error on stderr or in a widget, no console error
        (but those containing one of ``ignore``)."""
        text = self.page.locator(".jp-Notebook").inner_text()
        assert "Traceback" not in text, "a traceback is on the page"
        assert "Error displaying widget" not in text
        errors = self.page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
        assert not [t for t in errors.all_inner_texts() if "Error" in t], "an error on stderr"
        lines = [t.strip() for t in self.page.locator(".bk-error").all_inner_texts() if t.strip()]
        assert not lines, f"an error line in a widget: {lines}"
        console = [m for m in self.console if not any(b in m for b in (*BENIGN_CONSOLE, *ignore))]
        assert not console, f"console errors: {console}"

    def close(self) -> None:
        self.ctx.close()


def _dropdown(box: Any, label: str) -> Any:
    """The ``<select>`` of the ipywidgets Dropdown described ``label`` inside ``box``."""
    return box.locator(
        ".widget-dropdown", has=box.page.locator("label", has_text=re.compile(f"^{label}$"))
    ).locator("select")


def _text(t: str) -> str:
    return " ".join(t.replace("\xa0", " ").split())


def _options(select: Any) -> list[str]:
    """The options shown, without the " (sensitive)" mark of sensitive feature categories."""
    return [_text(t).removesuffix(" (sensitive)") for t in select.locator("option").all_inner_texts()]


def _value(select: Any) -> str:
    """The option shown as chosen, without the " (sensitive)" mark."""
    text = select.evaluate("s => s.selectedIndex < 0 ? '' : s.options[s.selectedIndex].text")
    return _text(str(text)).removesuffix(" (sensitive)")


def _choose(select: Any, text: str) -> None:
    """Choose the option ``text`` (or ``text (sensitive)``) as a reader does."""
    labels = select.locator("option").all_inner_texts()
    label = next((x for x in labels if _text(x) in (text, f"{text} (sensitive)")), None)
    assert label is not None, f"no option {text!r} in {labels}"
    select.select_option(label=label)


def _ticks(fig: Any, axis: str) -> list[str]:
    """Tick labels of a plotly axis in screen order (``x2``: the column headers left to right, ``y3``:
    the row headers top to bottom)."""
    key = "x" if axis.startswith("x") else "y"
    found = fig.locator(f"g.{axis}tick text").evaluate_all(
        "els => els.map(e => { const r = e.getBoundingClientRect();"
        " return [e.textContent, r.x + r.width / 2, r.y + r.height / 2]; })"
    )
    return [t.strip() for t, *_ in sorted(found, key=lambda f: f[1] if key == "x" else f[2])]


def _click_subplot(page: Any, fig: Any, subplot: str, fx: float, fy: float) -> None:
    """Click at the fraction (fx, fy) of a plotly subplot's plotting area (like a reader, with a hover first)."""
    rect = fig.locator(f"g.draglayer g.{subplot} rect.nsewdrag").first
    rect.scroll_into_view_if_needed()
    box = rect.bounding_box()
    assert box, f"subplot {subplot} not drawn"
    x, y = box["x"] + fx * box["width"], box["y"] + fy * box["height"]
    page.mouse.move(x, y)
    page.wait_for_timeout(150)
    page.mouse.click(x, y)


def _wait_for(page: Any, check: Any, what: str, timeout_ms: int = 60_000, box: Any = None) -> None:
    """Wait until ``check()`` holds (the kernel computes an embedding or a table: seconds on 2 cores);
    on time-out say what the widget ``box`` shows."""
    waited = 0
    while not check():
        shown = f"; the widget shows: {box.inner_text()[-600:]!r}" if box is not None and box.count() else ""
        assert waited < timeout_ms, f"timed out waiting for {what}{shown}"
        page.wait_for_timeout(200)
        waited += 200


def test_notebook_13_explorers_in_jupyterlab(lab: Lab, browser: Any, tmp_path: Path) -> None:
    nb = Page(browser, lab, "13_indirect_bias_explorer.ipynb", tmp_path)
    page = nb.page
    try:
        nb.run_all()
        nb.assert_clean()
        table = page.locator(".bk-table-explorer")
        scatter = page.locator(".bk-scatter-explorer")
        table.wait_for()
        scatter.wait_for()
        tfig = table.locator(".js-plotly-plot").first
        tfig.wait_for()
        tfig.scroll_into_view_if_needed()
        nb.shot("table_initial")
        legend = table.locator(".widget-html").first

        # -- the controls show the state the code set: Targets occupation, Features gender (kept sort)
        assert _value(_dropdown(table, "Targets")) == "occupation"
        assert _value(_dropdown(table, "Features")) == "gender"

        # -- a column-header click re-sorts the rows (features) by that target
        cols0, rows0 = _ticks(tfig, "x2"), _ticks(tfig, "y3")
        assert cols0 and rows0, "no header labels drawn"
        _click_subplot(page, tfig, "x2y2", (len(cols0) - 0.5) / len(cols0), 0.5)  # the last target
        target = cols0[-1]
        _wait_for(page, lambda: f"target '{target}'" in legend.inner_text(), "the sort legend")
        _wait_for(page, lambda: _ticks(tfig, "y3") != rows0, "the row order to change after a header click")
        nb.shot("table_sorted_by_column")

        # -- a second click on the same header: cosine order, the clicked target first
        cols1 = _ticks(tfig, "x2")  # the columns may have moved: click the same target again
        _click_subplot(page, tfig, "x2y2", (cols1.index(target) + 0.5) / len(cols1), 0.5)
        _wait_for(page, lambda: "cosine similarity" in legend.inner_text(), "the cosine legend")
        assert _ticks(tfig, "x2")[0] == target

        # -- a row-header click sorts the columns by that feature
        rows = _ticks(tfig, "y3")
        _click_subplot(page, tfig, "x3y3", 0.5, 0.5 / len(rows))
        _wait_for(page, lambda: f"feature '{rows[0]}'" in legend.inner_text(), "the row sort legend")
        nb.shot("table_sorted_by_row")

        # -- a cell click opens its per-name scatterplot
        _click_subplot(page, tfig, "xy", 0.5 / len(_ticks(tfig, "x2")), 0.5 / len(_ticks(tfig, "y3")))
        details = table.locator(".bk-details")
        _wait_for(page, lambda: details.count() and "Details:" in details.inner_text(), "the cell details")
        _wait_for(page, lambda: table.locator(".js-plotly-plot").count() >= 2, "the cell scatterplot")
        nb.shot("table_cell_details")

        # -- each drop-down in turn; Targets = country offers Features = beverage (the beer example)
        _choose(_dropdown(table, "Targets"), "country")
        _wait_for(page, lambda: "country (columns)" in legend.inner_text(), "Targets = country")
        assert "beverage" in _options(_dropdown(table, "Features")), "Features does not offer beverage"
        _choose(_dropdown(table, "Features"), "beverage")
        _wait_for(
            page, lambda: "country (columns) × beverage (rows)" in legend.inner_text(), "country × beverage"
        )
        nb.shot("table_country_beverage")
        for model in _options(_dropdown(table, "Model"))[1:]:
            _choose(_dropdown(table, "Model"), model)
            page.wait_for_timeout(500)
        nb.assert_clean()

        # -- paging: the full 99 occupations are reachable, page by page
        _choose(_dropdown(table, "Targets"), "occupation")
        _wait_for(page, lambda: "occupation (columns)" in legend.inner_text(), "Targets = occupation")
        assert "trait" in _options(_dropdown(table, "Features"))
        _choose(_dropdown(table, "Features"), "trait")
        pages = table.locator(".bk-pages")
        _wait_for(page, lambda: "columns 1–" in pages.inner_text(), "the page line")
        before = _ticks(tfig, "x2")
        nxt = table.get_by_role("button", name="columns ▶")
        if nxt.is_enabled():
            nxt.click()
            _wait_for(page, lambda: _ticks(tfig, "x2") != before, "the next page of columns")
            nb.shot("table_next_columns")

        # -- the scatter view: the controls show the initial state (colour by gender / woman, search engineer)
        sfig = scatter.locator(".js-plotly-plot").first
        sfig.scroll_into_view_if_needed()
        assert _value(_dropdown(scatter, "Colour by")) == "gender"
        assert _value(_dropdown(scatter, "Attribute")) == "woman"
        assert scatter.locator("input").first.input_value() == "engineer"
        assert _value(_dropdown(scatter, "Details of")) == "engineer"
        nb.shot("scatter_initial")

        # -- hover shows the name and the score
        point = sfig.locator("g.trace.scatter").first.locator("path.point").nth(3)
        box = point.bounding_box()
        assert box, "no point drawn"
        px, py = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.mouse.move(px, py)
        _wait_for(page, lambda: page.locator("g.hovertext").count() > 0, "a hover label")
        lines = page.locator("g.hovertext").first.evaluate(
            "g => { const l = Array.from(g.querySelectorAll('tspan.line')).map(t => t.textContent);"
            " return l.length ? l : [g.textContent]; }"
        )
        hover = "\n".join(lines)
        assert "IBS with 'woman'" in hover and re.search(r"-?\d\.\d{3}", hover), hover

        # -- a point click selects it and opens its details
        name = hover.splitlines()[0].strip()
        page.mouse.click(px, py)
        sdet = scatter.locator(".bk-details")
        _wait_for(
            page, lambda: sdet.count() and f"Details: {name}" in sdet.inner_text(), f"details of {name}"
        )
        assert _value(_dropdown(scatter, "Details of")) == name
        nb.shot("scatter_point_details")

        # -- colour by gender fills Attribute; each other drop-down in turn
        _choose(_dropdown(scatter, "Colour by"), "(none)")
        _wait_for(page, lambda: "not coloured" in scatter.inner_text(), "colour removed", box=scatter)
        _choose(_dropdown(scatter, "Colour by"), "gender")
        _wait_for(
            page, lambda: _value(_dropdown(scatter, "Attribute")) != "", "Attribute filled", box=scatter
        )
        _choose(_dropdown(scatter, "Projection"), "t-SNE")
        _wait_for(
            page, lambda: "placed by t-SNE" in scatter.inner_text(), "the t-SNE projection", box=scatter
        )
        # nurse selected, then Features = gender (once a KeyError traceback): details recomputed
        _choose(_dropdown(scatter, "Details of"), "nurse")
        _wait_for(page, lambda: "Details: nurse" in sdet.inner_text(), "details of nurse")
        _choose(_dropdown(scatter, "Features"), "gender")
        _wait_for(
            page, lambda: "scores with gender" in scatter.inner_text(), "Features = gender", box=scatter
        )
        _wait_for(page, lambda: "Details: nurse" in sdet.inner_text(), "details of nurse with gender")
        nb.assert_clean()
        nb.shot("scatter_nurse_gender")
        # Targets = country: nurse is no target there, so its details are cleared with a note, and
        # Features offers beverage (country x beverage, the beer example)
        _choose(_dropdown(scatter, "Targets"), "country")
        _wait_for(
            page, lambda: "details cleared" in scatter.inner_text(), "the details-cleared note", box=scatter
        )
        assert not sdet.count(), "stale details of nurse after the target category changed"
        assert "beverage" in _options(_dropdown(scatter, "Features")), "Features does not offer beverage"
        _choose(_dropdown(scatter, "Features"), "beverage")
        _wait_for(
            page, lambda: "scores with beverage" in scatter.inner_text(), "country × beverage", box=scatter
        )
        nb.shot("scatter_country_beverage")
        nb.assert_clean()

        # -- a reload draws the views again from the running kernel (the page reads the saved notebook)
        table_state = _text(table.locator(".widget-html").first.inner_text())
        scatter_state = _text(scatter.locator(".widget-html").first.inner_text())
        nb.save()
        nb.console.clear()
        nb.reload()
        table, scatter = page.locator(".bk-table-explorer"), page.locator(".bk-scatter-explorer")
        live_cells = page.locator(".jp-CodeCell", has=page.locator(".bk-live-hint"))
        _wait_for(
            page,
            lambda: table.count() == 1 and scatter.count() == 1,
            "the two explorers drawn again from the kernel after the reload",
            timeout_ms=180_000,
            box=live_cells.first,
        )
        tfig = table.locator(".js-plotly-plot").first
        tfig.wait_for()
        tfig.scroll_into_view_if_needed()
        _wait_for(
            page, lambda: bool(_ticks(tfig, "x2")) and bool(_ticks(tfig, "y3")), "the table drawn again"
        )
        assert table.locator("g.hm, g.heatmaplayer image, g.hm image").count() > 0, (
            "blank heat-map after reload"
        )
        assert _text(table.locator(".widget-html").first.inner_text()) == table_state, (
            "the table lost its state"
        )
        sfig = scatter.locator(".js-plotly-plot").first
        sfig.scroll_into_view_if_needed()
        _wait_for(page, lambda: sfig.locator("path.point").count() > 0, "the scatter points drawn again")
        assert _text(scatter.locator(".widget-html").first.inner_text()) == scatter_state, (
            "the scatter lost its state"
        )
        assert not page.locator(".bk-live-hint:visible").count(), "the hint shows beside a live view"
        nb.shot("after_reload")
        # anywidget gives each restored model 2 s to start and logs this when plotly's takes longer (a loaded
        # machine restores a dozen figures at once); the views above were drawn all the same
        nb.assert_clean(ignore=("[anywidget] Failed to initialize model.",))

        # -- saved, kernel shut down, opened again: static figure and hint, never "Error displaying widget"
        nb.save()
        lab.shut_down_kernels()
        nb.close()
        nb = Page(browser, lab, "13_indirect_bias_explorer.ipynb", tmp_path)
        page = nb.page
        hints = page.locator(".bk-live-hint")
        _wait_for(
            page, lambda: page.locator(".bk-live-hint:visible").count() == 2, "the two run-this-cell hints"
        )
        cells = page.locator(".jp-CodeCell", has=hints)
        assert cells.count() == 2
        for i in range(2):
            cell = cells.nth(i)
            assert "Run this cell to explore" in cell.locator(".bk-live-hint").inner_text()
            figure = cell.locator(".jp-OutputArea-output img").first
            figure.scroll_into_view_if_needed()
            assert figure.is_visible() and figure.evaluate("i => i.naturalWidth > 100"), "no static figure"
        text = page.locator(".jp-Notebook").inner_text()
        assert "Error displaying widget" not in text and "Traceback" not in text
        assert not page.locator(".bk-table-explorer, .bk-scatter-explorer").count()
        nb.shot("reopened_without_running")
    finally:
        nb.shot("notebook_13_end")
        nb.close()


def test_notebook_00_seed_word_form_in_jupyterlab(lab: Lab, browser: Any, tmp_path: Path) -> None:
    nb = Page(browser, lab, "00_tour.ipynb", tmp_path)
    page = nb.page
    try:
        nb.run_all()
        nb.assert_clean()
        form = page.locator(".bk-seed-form")
        form.wait_for()
        form.scroll_into_view_if_needed()
        nb.shot("seed_form_initial")
        button = form.locator("button")
        label = button.inner_text().strip()
        assert label == "Run with these words", label
        # the whole label is visible and the form does not scroll sideways
        assert page.evaluate("b => b.scrollWidth <= b.clientWidth + 1", button.element_handle())
        out = form.locator("xpath=ancestor::div[contains(@class,'jp-OutputArea-output')][1]")
        assert page.evaluate("e => e.scrollWidth <= e.clientWidth + 1", out.element_handle())
        box = form.locator("textarea").first
        box.fill(box.input_value() + ", qwxzqy")
        button.click()
        _wait_for(page, lambda: form.locator(".jp-OutputArea-output").count() > 0, "the form's result")
        result = form.locator(".bk-seed-weat")
        _wait_for(page, lambda: result.count() > 0, "the WEAT result of the form", box=form)
        shown = _text(result.inner_text())
        assert "Left out of Math (no vector for it): qwxzqy." in shown, shown
        assert shown.startswith("Math is more associated with MaleTerms (and Arts with FemaleTerms)"), shown
        nb.shot("seed_form_run")
        # renamed sets of three words each: the verdict uses the new names and says 0.05 cannot be reached
        names = form.locator("input[type='text']")
        assert names.count() == 4 and names.first.input_value() == "Math"
        words = form.locator("textarea")
        names.nth(0).fill("Care")
        words.nth(0).fill("nurse, teacher, secretary")
        names.nth(1).fill("Technical")
        words.nth(1).fill("engineer, pilot, carpenter")
        button.click()
        _wait_for(page, lambda: "Care" in result.inner_text(), "the result with the new names", box=form)
        shown = _text(result.inner_text())
        assert "3 + 3 words in Care and Technical" in shown and "1/20 = 0.05" in shown, shown
        assert "that Care is more associated with MaleTerms" in shown and "'X'" not in shown, shown
        nb.shot("seed_form_small_sets")
        box.fill("")
        button.click()
        _wait_for(
            page, lambda: "Could not run with these words" in form.inner_text(), "the empty-set message"
        )
        nb.shot("seed_form_empty_set")
        nb.assert_clean()
    finally:
        nb.close()
