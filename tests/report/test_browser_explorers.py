"""The explorers of notebook 13 and the seed-word form of notebook 00 in a real JupyterLab and Chromium.

Seed 004 (sections 4.1-4.2) describes views that are explored by sorting, choosing a cell or a point for
its details, colouring, searching and hovering.  These tests do what a reader does:

* start JupyterLab from this environment on 127.0.0.1 (a free port, a token, every Jupyter folder in
  the test's temporary folder) with copies of the notebooks, ``quick`` set to True;
* open each notebook in the system Chromium, driven by Playwright for Python (launched with
  ``executable_path``; ``playwright install`` downloads browsers and is never used), and run all cells;
* **plots that never go dead** (:func:`test_explorers_never_go_dead`): a notebook with four explorers (two
  tables, two scatters, on made-up scores) is run, then reloaded, then closed and opened again with its
  kernel still running; each time EVERY control of EVERY explorer is used (each menu, the search box, the
  page buttons, the reset button, the keyboard on a menu, the scatter's in-plot Colour by menu and its
  legend) and the plot it drives must change on the page; no console error may appear, above all no
  ``[anywidget] Failed to initialize model``; CSV links download the table; the busy line names a slow
  computation while it runs;
* notebook 13 itself, quick: its two explorers answer each kind of control after Run All and after a
  reload, and reopened without a kernel each shows its static figure and the line saying which cells to
  run, never "Error displaying widget";
* the seed-word form of notebook 00 runs edited words, two-sided by default, names left-out words, warns
  when the sets are too small, resets to the default words, and words its verdict with the reader's names.

**The race of a reload, on every run.**  After a reload or a reopen each live view's output waits at most
2 s for its widget model, and a page busy drawing the first view can make the others give up although their
models are there (a loaded machine did that: ``docs/records/browser_runs.json``).  The tests hold the page for
:data:`HOLD_PAGE_MS` when the first live view is drawn, so the race happens on every reload and reopen; the
live hints' script (:func:`biaskit.report.widgets.live_hint_html`) has those views drawn again, and the test
prints how many times it did.  ``BIASKIT_TEST_NO_WIDGET_RETRY=1`` switches that script off (the fix
reverted): the reload then loses views and the test fails.

``BIASKIT_TEST_FIGUREWIDGET=1`` draws the four explorers with plotly's ``FigureWidget`` (an ``anywidget``)
instead, the rendering the explorers used before: the check that :func:`test_explorers_never_go_dead`
catches plots that die on a loaded machine.

Screenshots go to the test's temporary folder (``tmp_path``) for inspection.  Without Chromium
(``scripts/install_chromium.sh`` installs it; ``BIASKIT_CHROMIUM`` names another binary), Playwright
or JupyterLab the tests skip and say why.
"""

from __future__ import annotations

import json
import os
import re
import secrets
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
from browser_support import CHROMIUM

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"


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
    if os.environ.get("BIASKIT_TEST_FIGUREWIDGET"):
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


CHECK_NOTEBOOK = "explorers_check.ipynb"

#: the check notebook's cells: made-up scores with per-name details (two models; occupations x traits or
#: gender, countries x beverages or gender), then two table views and two scatter views, each after its
#: static figure as notebook 13 shows them
_CHECK_SETUP = """\
import io
import os

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Image, display

from biaskit.report import explorers as ex

rng = np.random.default_rng(5)
OCCS = ["nurse", "engineer", "teacher", "pilot", "baker", "judge", "dancer", "farmer", "writer", "coach",
        "chef", "actor"]
COUNTRIES = ["France", "Japan", "Peru", "Chile", "Kenya", "Egypt", "Spain", "Cuba"]
CATS = {"occupation": (OCCS, {"trait": ["ambitious", "brave", "caring", "diligent", "eager", "fair", "gentle",
                                       "honest", "idle", "jolly", "kind", "lazy", "mean", "naive"],
                              "gender": ["male", "female", "boy", "girl", "man", "woman"]}),
        "country": (COUNTRIES, {"beverage": ["beer", "tea", "wine", "water"],
                                "gender": ["male", "female", "boy", "girl", "man", "woman"]})}
NAMES = [f"name{i:02d}" for i in range(30)]


class Bridge:
    \"\"\"Per-name scores behind one table, like an IndirectBiasResult: IBS = corr(BS1 row, BS2 column).\"\"\"

    def __init__(self, targets, features):
        self.bs1 = pd.DataFrame(rng.normal(size=(len(targets), len(NAMES))), index=targets, columns=NAMES)
        self.bs2 = pd.DataFrame(rng.normal(size=(len(NAMES), len(features))), index=NAMES, columns=features)
        self.ibs = pd.DataFrame([[float(np.corrcoef(self.bs1.loc[t], self.bs2[f])[0, 1]) for f in features]
                                 for t in targets], index=targets, columns=features)

    def bridge_points(self, target, feature):
        return pd.DataFrame({"name": NAMES, "x": self.bs1.loc[target].to_numpy(),
                             "y": self.bs2[feature].to_numpy()})


rows, results = [], {}
for model in ("m-a", "m-b"):
    for tc, (targets, fcs) in CATS.items():
        for fc, feats in fcs.items():
            b = results[(model, tc, fc)] = Bridge(targets, feats)
            rows += [(model, tc, fc, t, f, b.ibs.loc[t, f]) for t in targets for f in feats]
store = ex.ScoreStore(pd.DataFrame(rows, columns=["model", "target_category", "feature_category", "target",
                                                  "feature", "ibs"]), results)


def show_static(fig):
    \"\"\"The static figure a cell shows before its live view (a PNG, whatever the matplotlib backend).\"\"\"
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=60)
    plt.close(fig)
    display(Image(buf.getvalue()))

if os.environ.get("BIASKIT_TEST_FIGUREWIDGET"):
    # the rendering the explorers had before: each plot a plotly FigureWidget (an anywidget model), built
    # with a placeholder and then updated in place by messages, its restorable state kept equal to what it
    # shows (what the old views' _restyle and sync_figure_state did)
    from copy import deepcopy

    import ipywidgets as w
    import plotly.graph_objects as go

    from biaskit.report import explorer_widgets as ew

    _bundle = ew.plotly_bundle

    def _with_figure(fig, **kw):
        out = _bundle(fig, **kw)
        out["_figure"] = fig
        return out

    class _FigureWidgetArea(ew._PlotArea):
        def __init__(self, css_class):
            self.out = w.Box(layout=w.Layout(width="100%", flex_flow="row wrap"))
            self.out.add_class("bk-plot")
            self.out.add_class(css_class)
            self.bundles = []
            self.fig = go.FigureWidget(go.Figure(go.Scatter(x=[0.0], y=[0.0])))

        def show(self, bundles):
            self.bundles = list(bundles)
            figs = [b["_figure"] for b in self.bundles]
            old = [c for c in self.out.children if c is not self.fig]
            if figs:
                new = figs[0]
                if [t.type for t in self.fig.data] == [t.type for t in new.data]:
                    for trace, fresh in zip(self.fig.data, new.data):
                        props = fresh.to_plotly_json()
                        props.pop("type", None)
                        trace.update(props, overwrite=True)
                else:
                    self.fig.data = []
                    self.fig.add_traces(list(new.data))
                self.fig.update_layout(new.layout.to_plotly_json(), overwrite=True)
                with self.fig.hold_sync():
                    self.fig._widget_data = deepcopy(self.fig._data)
                    self.fig._widget_layout = deepcopy(self.fig._layout_obj._props)
            self.out.children = ([self.fig] if figs else []) + [go.FigureWidget(f) for f in figs[1:]]
            for c in old:
                c.close()

    ew.plotly_bundle = _with_figure
    ew._PlotArea = _FigureWidgetArea
"""


def _check_view_cell(kind: str, n: int) -> str:
    if kind == "table":
        return f"""\
table{n} = ex.TableExplorer(store, model="m-a", target_category="occupation", feature_category="trait")
show_static(table{n}.figure())
table{n}.widget(rows_per_page=5, columns_per_page=6)"""
    return f"""\
scatter{n} = ex.ScatterExplorer(store, model="m-a", target_category="occupation", feature_category="trait",
                               method="ISOMAP")
scatter{n}.colour_by("gender", "woman")
scatter{n}.set(query="nurse")
show_static(scatter{n}.figure())
scatter{n}.widget()"""


def _write_check_notebook(path: Path) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(_CHECK_SETUP)] + [
        nbformat.v4.new_code_cell(_check_view_cell(kind, n))
        for kind, n in (("table", 1), ("scatter", 1), ("table", 2), ("scatter", 2))
    ]
    nbformat.write(nb, str(path))


class Lab:
    """A JupyterLab server of this environment, everything it writes kept under ``base``."""

    def __init__(self, base: Path) -> None:
        self.root = base / "root"
        self.root.mkdir()
        self.results = base / "results"
        self.results.mkdir()
        for name in ("13_indirect_bias_explorer.ipynb", "00_tour.ipynb"):
            _copy_notebook(name, self.root, self.results)
        _write_check_notebook(self.root / CHECK_NOTEBOOK)
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


#: the first live view drawn after a page loads holds the page this long (ms; ``BIASKIT_TEST_HOLD_PAGE_MS``
#: sets another, 0 none), as drawing a view's plotly figures does on a loaded machine, while the other
#: views' outputs still wait for their models: more than the 2 s of their wait, so that a reload or a
#: reopen meets the race the live hints' script answers on every run, not only on a loaded machine
HOLD_PAGE_MS = 2500
_HOLD_PAGE_JS = """(() => {
  let held = false;
  new MutationObserver((records, observer) => {
    if (held || !document.querySelector('.bk-explorer')) { return; }
    held = true;
    observer.disconnect();
    const until = Date.now() + HOLD_MS;
    while (Date.now() < until) { /* the page is busy drawing */ }
  }).observe(document, {childList: true, subtree: true});
})();"""


class Page:
    """One JupyterLab tab with a notebook, its console errors and screenshots."""

    def __init__(self, browser: Any, lab: Lab, name: str, shots: Path) -> None:
        self.ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        if os.environ.get("BIASKIT_TEST_NO_WIDGET_RETRY"):  # the fix reverted: the hint's script does nothing
            self.ctx.add_init_script("window.biaskitWidgetRetry = {state: 'off (test)', retries: 0};")
        hold = int(os.environ.get("BIASKIT_TEST_HOLD_PAGE_MS") or HOLD_PAGE_MS)
        if hold > 0:  # a view that takes long to draw, as plotly figures do on a loaded machine
            self.ctx.add_init_script(_HOLD_PAGE_JS.replace("HOLD_MS", str(hold)))
        self.page = self.ctx.new_page()
        self.page.set_default_timeout(60_000)  # generous: a loaded CI machine, not a speed check
        self.console: list[str] = []
        self.phase = "opening"  # what the test was doing, written before each console error
        self.page.on(
            "console",
            lambda m: self.console.append(f"[{self.phase}] {m.text}") if m.type == "error" else None,
        )
        self.page.on("pageerror", lambda e: self.console.append(f"[{self.phase}] uncaught: {e}"))
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
        self.phase = "run all"
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
        self.phase = "save"
        p.locator(".jp-Notebook").first.click(position={"x": 5, "y": 5})
        p.keyboard.press("Control+s")
        _wait_for(p, lambda: p.locator(".jp-mod-dirty").count() == 0, "the notebook to be saved")
        p.wait_for_timeout(1000)

    def reload(self) -> None:
        """Reload the browser page; the notebook comes back from its saved file, the kernel keeps running."""
        self.phase = "reload"
        self.page.reload()
        self.page.wait_for_selector(".jp-Notebook .jp-Cell", state="attached")
        self.page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", state="attached")

    def widget_retry(self) -> dict[str, Any]:
        """What the live hints' script did on this page (``window.biaskitWidgetRetry``: state, retries)."""
        found = self.page.evaluate("() => window.biaskitWidgetRetry || null")
        return dict(found) if found else {"state": "absent", "retries": 0}

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


def _wait_for(page: Any, check: Any, what: str, timeout_ms: int = 60_000, box: Any = None) -> None:
    """Wait until ``check()`` holds (the kernel computes an embedding or a table: seconds on 2 cores);
    on time-out say what the widget ``box`` shows."""
    waited = 0
    while not check():
        shown = f"; the widget shows: {box.inner_text()[-600:]!r}" if box is not None and box.count() else ""
        assert waited < timeout_ms, f"timed out waiting for {what}{shown}"
        page.wait_for_timeout(200)
        waited += 200


#: a fingerprint of what the plots in an element show: a hash of each plot's drawn SVG (points, colours,
#: heat-map images, tick labels, titles), so that "the plot changed" is checked on the page itself
_SIGNATURE_JS = """(root) => Array.from(root.querySelectorAll('.js-plotly-plot')).map(p => {
  const s = Array.from(p.querySelectorAll('svg.main-svg')).map(x => x.outerHTML).join('|');
  let h = 5381;
  for (let i = 0; i < s.length; i++) { h = ((h * 33) ^ s.charCodeAt(i)) >>> 0; }
  return h + ':' + s.length;
}).join(',')"""


def _signature(area: Any) -> str:
    return str(area.first.evaluate(_SIGNATURE_JS)) if area.count() else "<no plot area>"


def _errors(box: Any) -> list[str]:
    return [t.strip() for t in box.locator(".bk-error").all_inner_texts() if t.strip()]


class Explorer:
    """One live explorer on the page: its controls and the plot areas they drive."""

    def __init__(self, nb: Page, box: Any, name: str) -> None:
        self.nb, self.page, self.box, self.name = nb, nb.page, box, name
        self.main = box.locator(".bk-table-plot, .bk-scatter-plot")
        self.details = box.locator(".bk-details-plot")
        self.steps = 0

    def areas(self) -> dict[str, Any]:
        return {"plot": self.main, "details": self.details}

    def step(
        self, label: str, action: Any, changes: tuple[str, ...] = ("plot",), timeout_ms: int = 120_000
    ) -> float:
        """Use one control (``action``) and wait until each plot area in ``changes`` shows something else
        (and has settled); fail with what the widget shows if it does not, or on an error line."""
        p = self.page
        self.nb.phase = f"{self.name}: {label}"
        p.mouse.move(1, 1)  # no hover label in the fingerprint
        before = {k: _signature(a) for k, a in self.areas().items()}
        t0 = time.monotonic()
        action()
        p.mouse.move(1, 1)
        waited, last, stable = 0, None, 0
        while True:
            errors = _errors(self.box)
            assert not errors, f"{self.name}, {label}: an error line in the widget: {errors}"
            now = {k: _signature(self.areas()[k]) for k in changes}
            done = all(now[k] != before[k] and "<no plot" not in now[k] for k in changes)
            stable = stable + 1 if done and now == last else 0
            if done and stable >= 2:
                break
            last = now
            assert waited < timeout_ms, (
                f"{self.name}: the plot did not change after '{label}' (dead plot?); "
                f"the widget shows: {self.box.inner_text()[-500:]!r}"
            )
            p.wait_for_timeout(250)
            waited += 250
        self.steps += 1
        return time.monotonic() - t0

    # -- controls ------------------------------------------------------------------------------------------
    def choose(self, label: str, option: str | int) -> Any:
        """The action that chooses ``option`` (its text, or its position) in the menu ``label``."""

        def act() -> None:
            select = _dropdown(self.box, label)
            if isinstance(option, int):
                select.select_option(index=option)
            else:
                _choose(select, option)

        return act

    def other(self, label: str) -> Any:
        """The action that chooses an option of ``label`` other than the one shown (the next one)."""

        def act() -> None:
            select = _dropdown(self.box, label)
            n = select.locator("option").count()
            i = select.evaluate("s => s.selectedIndex")
            assert n > 1, f"{self.name}: {label} offers one option only"
            select.select_option(index=(i + 1) % n)

        return act

    def search(self, text: str) -> Any:
        def act() -> None:
            box = self.box.locator(".widget-inline-hbox", has=self.page.locator("label", has_text="Search"))
            field = box.locator("input").first
            field.fill(text)
            field.press("Enter")

        return act

    def button(self, name: str) -> Any:
        return lambda: self.box.get_by_role("button", name=name).click()

    def keyboard(self, label: str, key: str) -> Any:
        """Focus the menu ``label`` and press ``key`` (no mouse)."""

        def act() -> None:
            select = _dropdown(self.box, label)
            select.focus()
            self.page.keyboard.press(key)

        return act

    def colour_menu(self, entry: str) -> Any:
        """Choose ``entry`` in the Colour by menu drawn inside the scatter plot (plotly.js, no kernel); a long
        menu is a scroll box, which the reader scrolls with the mouse wheel until the entry shows."""

        def act() -> None:
            fig = self.main.locator(".js-plotly-plot").first
            fig.evaluate("e => e.scrollIntoView({block: 'center'})")
            header = fig.locator(".updatemenu-header").first
            header.click()
            self.page.wait_for_timeout(500)  # plotly.js fades the entries in
            item = fig.locator(
                ".updatemenu-dropdown-button", has_text=re.compile(f"^{re.escape(entry)}$")
            ).first
            for _ in range(60):
                fig.evaluate("e => e.scrollIntoView({block: 'center'})")  # the wheel scrolls the page too
                ib, hb = item.bounding_box(), header.bounding_box()
                assert ib and hb, f"no entry {entry!r} in the Colour by menu"
                x, y = ib["x"] + ib["width"] / 2, ib["y"] + ib["height"] / 2
                shown = item.evaluate(
                    "(e, [x, y]) => { const t = document.elementFromPoint(x, y); "
                    "return !!t && e.contains(t); }",
                    [x, y],
                )
                if shown:
                    self.page.mouse.click(x, y)
                    return
                self.page.mouse.move(hb["x"] + hb["width"] / 2, hb["y"] + hb["height"] * 2.5)  # over the list
                self.page.mouse.wheel(0, -60 if ib["y"] < hb["y"] else 60)
                self.page.wait_for_timeout(150)
            raise AssertionError(f"could not scroll the Colour by menu to {entry!r}")

        return act

    def legend(self, entry: str) -> Any:
        """Click the legend entry that starts with ``entry`` (hides or shows its points, in the page)."""

        def act() -> None:
            fig = self.main.locator(".js-plotly-plot").first
            fig.evaluate("e => e.scrollIntoView({block: 'center'})")
            fig.locator(
                "g.legend g.traces", has=self.page.locator("text.legendtext", has_text=entry)
            ).first.click()

        return act

    def check_csv(self) -> None:
        """The first download link of the view saves a CSV file with a header and rows."""
        link = self.box.locator("a.bk-download").first
        link.scroll_into_view_if_needed()
        with self.page.expect_download() as dl:
            link.click()
        path = dl.value.path()
        text = Path(path).read_text(encoding="utf-8")
        lines = [line for line in text.splitlines() if line.strip()]
        assert dl.value.suggested_filename.endswith(".csv") and len(lines) >= 3, (
            dl.value.suggested_filename,
            text[:200],
        )


def _exercise_table(ex: Explorer, *, first_round: bool) -> None:
    """Every control of a table view once; each must change the plot (or the details) it drives."""
    ex.step("Model", ex.other("Model"))
    ex.step("Targets = country", ex.choose("Targets", "country"))
    ex.step("Features = gender", ex.choose("Features", "gender"))
    ex.step("Targets = occupation", ex.choose("Targets", "occupation"))
    ex.step("Features = trait", ex.choose("Features", "trait"))
    ex.step("Sort by nurse", ex.choose("Sort by", "target: nurse"))
    ex.step("Order by similarity", ex.choose("Order", "by similarity (cosine) to it"))
    ex.step("Sort by, keyboard", ex.keyboard("Sort by", "f"))  # type-ahead: the first "feature: ..."
    ex.step("Search 'e'", ex.search("e"))
    ex.step("Search cleared", ex.search(""))
    ex.step("rows ▶", ex.button("rows ▶"))
    ex.step("◀ rows", ex.button("◀ rows"))
    ex.step("columns ▶", ex.button("columns ▶"))
    ex.step("◀ columns", ex.button("◀ columns"))
    ex.step("Details of", ex.choose("Details of", 1), changes=("details",))
    ex.step("with", ex.other("with"), changes=("details",))
    if first_round:
        ex.check_csv()
        ex.box.get_by_role("button", name="PNG and SVG of these plots").click()
        _wait_for(
            ex.page, lambda: ex.box.locator("a[download$='.svg']").count() >= 2, "the PNG and SVG links"
        )
    ex.step("Reset view", ex.button("Reset view"), changes=("plot", "details"))


def _exercise_scatter(ex: Explorer, *, first_round: bool) -> None:
    """Every control of a scatter view once, the in-plot Colour by menu and the legend included."""
    ex.step("Colour by: no colour", ex.colour_menu("no colour"))
    ex.step("Colour by: trait: brave", ex.colour_menu("trait: brave"))
    ex.step("legend: search entry", ex.legend("search"))
    ex.step("Projection = t-SNE", ex.choose("Projection", "t-SNE"))
    if first_round:  # a slow computation says what it does while it runs
        seen: list[str] = []

        def umap() -> None:
            ex.choose("Projection", "UMAP")()
            for _ in range(20):
                text = ex.box.locator(".bk-busy-line").all_inner_texts()
                if any("UMAP" in t for t in text):
                    seen.extend(text)
                    return
                ex.page.wait_for_timeout(100)

        took = ex.step("Projection = UMAP", umap, timeout_ms=400_000)
        assert seen or took < 3, f"UMAP took {took:.0f} s and no busy line named it"
        assert not ex.box.locator(".bk-busy-line").all_inner_texts() or not any(
            t.strip() for t in ex.box.locator(".bk-busy-line").all_inner_texts()
        ), "the busy line stays after the plot is drawn"
    ex.step("Model", ex.other("Model"))
    ex.step("Features = gender", ex.choose("Features", "gender"))
    ex.step("Targets = country", ex.choose("Targets", "country"))
    ex.step("Search 'a'", ex.search("a"))
    ex.step("Details of", ex.choose("Details of", 1), changes=("plot", "details"))
    if first_round:
        ex.check_csv()
        # hover: name and score, drawn by plotly.js in the page
        point = ex.main.locator("g.trace.scatter path.point").first
        point.scroll_into_view_if_needed()
        box = point.bounding_box()
        assert box, "no point drawn"
        ex.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        _wait_for(ex.page, lambda: ex.page.locator("g.hovertext").count() > 0, "a hover label")
    ex.step("Reset view", ex.button("Reset view"), changes=("plot", "details"))


def _explorers(nb: Page) -> list[Explorer]:
    p = nb.page
    out = []
    for kind in ("table", "scatter"):
        boxes = p.locator(f".bk-{kind}-explorer")
        out += [Explorer(nb, boxes.nth(i), f"{kind} {i + 1}") for i in range(boxes.count())]
    return out


def _round(nb: Page, label: str, *, first_round: bool) -> int:
    """Every control of every explorer on the page; returns the number of controls checked."""
    p = nb.page
    _wait_for(
        p, lambda: p.locator(".bk-explorer").count() == 4, f"the four explorers ({label})", timeout_ms=180_000
    )
    views = _explorers(nb)
    for ex in views:
        ex.box.scroll_into_view_if_needed()
        _wait_for(
            p,
            lambda ex=ex: ex.main.locator(".js-plotly-plot path, .js-plotly-plot image").count() > 0,
            f"{ex.name} drawn ({label})",
            timeout_ms=180_000,
            box=ex.box,
        )
    nb.shot(f"{label}_drawn")
    for ex in views:
        (_exercise_table if ex.name.startswith("table") else _exercise_scatter)(ex, first_round=first_round)
    nb.shot(f"{label}_done")
    return sum(ex.steps for ex in views)


@pytest.mark.widget_restore
def test_explorers_never_go_dead(lab: Lab, browser: Any, tmp_path: Path) -> None:
    """After Run All, a reload and a reopen (kernel running), every plot answers every control, and the
    console never says a widget model failed to start."""
    nb = Page(browser, lab, CHECK_NOTEBOOK, tmp_path)
    counts, retry = {}, {}
    reverted = bool(os.environ.get("BIASKIT_TEST_NO_WIDGET_RETRY"))
    try:
        nb.run_all()
        nb.assert_clean()
        counts["run all"] = _round(nb, "run_all", first_round=True)
        nb.assert_clean()
        # a reload: the page reads the saved notebook and draws the views again from the running kernel
        nb.save()
        nb.console.clear()
        nb.reload()
        counts["reload"] = _round(nb, "reload", first_round=False)
        retry["reload"] = nb.widget_retry()
        nb.assert_clean()
        # closed and opened again, the kernel still running
        nb.save()
        nb.close()
        nb = Page(browser, lab, CHECK_NOTEBOOK, tmp_path)
        counts["reopen"] = _round(nb, "reopen", first_round=False)
        retry["reopen"] = nb.widget_retry()
        nb.assert_clean()
        print(f"views drawn again after a lost wait for their model: {retry}")
        # the hints' script found JupyterLab's widget manager and is on (unless switched off for the check)
        assert all(r["state"] == ("off (test)" if reverted else "on") for r in retry.values()), retry
        assert not nb.page.locator(".bk-live-hint:visible").count(), (
            "the run-this-cell hint beside a live view"
        )
        assert not nb.page.locator(".bk-kernel-gone:visible").count(), (
            "'no kernel' shown with a running kernel"
        )
        # saved, kernel shut down, opened again: each view's static figure and the line saying what to run
        nb.save()
        lab.shut_down_kernels()
        nb.close()
        nb = Page(browser, lab, CHECK_NOTEBOOK, tmp_path)
        page = nb.page
        _wait_for(page, lambda: page.locator(".bk-live-hint:visible").count() == 4, "the four hints")
        for i in range(4):
            cell = page.locator(".jp-CodeCell", has=page.locator(".bk-live-hint")).nth(i)
            assert "Run All Above Selected Cell" in cell.locator(".bk-live-hint").inner_text()
            figure = cell.locator(".jp-OutputArea-output img").first
            figure.scroll_into_view_if_needed()
            assert figure.is_visible() and figure.evaluate("i => i.naturalWidth > 100"), "no static figure"
        text = page.locator(".jp-Notebook").inner_text()
        assert "Error displaying widget" not in text and "Traceback" not in text
        nb.shot("reopened_without_kernel")
        print(f"controls checked: {counts}")
        assert all(n >= 4 * 10 for n in counts.values()), counts
    finally:  # the last screenshot and the console, kept for a failure
        nb.shot("end")
        print("console:", nb.console[-20:])
        nb.close()


@pytest.mark.widget_restore
def test_notebook_13_explorers_in_jupyterlab(lab: Lab, browser: Any, tmp_path: Path) -> None:
    """Notebook 13 itself (quick): its two explorers answer their controls after Run All and after a reload;
    reopened without a kernel each shows its static figure and the line saying which cells to run."""
    nb = Page(browser, lab, "13_indirect_bias_explorer.ipynb", tmp_path)
    page = nb.page
    try:
        nb.run_all(timeout_s=1500)
        nb.assert_clean()
        for label in ("run_all", "reload"):
            table = Explorer(nb, page.locator(".bk-table-explorer"), "table")
            scatter = Explorer(nb, page.locator(".bk-scatter-explorer"), "scatter")
            _wait_for(
                page,
                lambda t=table, s=scatter: t.main.count() == 1 and s.main.count() == 1,
                f"the two explorers ({label})",
                timeout_ms=180_000,
            )
            for ex in (table, scatter):
                ex.box.scroll_into_view_if_needed()
                _wait_for(
                    page, lambda ex=ex: ex.main.locator(".js-plotly-plot").count() > 0, f"{ex.name} drawn"
                )
            if label == "run_all":
                # the controls show the state the code set: occupation x gender, sorted (kept from the
                # trait sort)
                assert _value(_dropdown(table.box, "Targets")) == "occupation"
                assert _value(_dropdown(table.box, "Features")) == "gender"
                assert _value(_dropdown(table.box, "Sort by")).startswith("feature: ")
                assert scatter.box.locator("input").first.input_value() == "engineer"
                assert _value(_dropdown(scatter.box, "Details of")) == "engineer"
            # Targets = country offers Features = beverage (the thesis's beer example)
            table.step("Targets = country", table.choose("Targets", "country"))
            assert "beverage" in _options(_dropdown(table.box, "Features")), (
                "Features does not offer beverage"
            )
            table.step("Features = beverage", table.choose("Features", "beverage"))
            table.step("Sort by", table.choose("Sort by", 1))
            table.step("Details of", table.choose("Details of", 1), changes=("details",))
            table.step("Reset view", table.button("Reset view"), changes=("plot", "details"))
            scatter.step("Colour by: no colour", scatter.colour_menu("no colour"))
            scatter.step("Projection = t-SNE", scatter.choose("Projection", "t-SNE"))
            scatter.step("Details of", scatter.choose("Details of", 2), changes=("plot", "details"))
            scatter.step("Reset view", scatter.button("Reset view"), changes=("plot", "details"))
            nb.assert_clean()
            nb.shot(f"notebook13_{label}")
            if label == "run_all":
                nb.save()
                nb.console.clear()
                nb.reload()
        # saved, kernel shut down, opened again: static figure and the hint, never "Error displaying widget"
        nb.save()
        lab.shut_down_kernels()
        nb.close()
        nb = Page(browser, lab, "13_indirect_bias_explorer.ipynb", tmp_path)
        page = nb.page
        _wait_for(page, lambda: page.locator(".bk-live-hint:visible").count() == 2, "the two hints")
        cells = page.locator(".jp-CodeCell", has=page.locator(".bk-live-hint"))
        for i in range(2):
            cell = cells.nth(i)
            assert "Run All Above Selected Cell" in cell.locator(".bk-live-hint").inner_text()
            figure = cell.locator(".jp-OutputArea-output img").first
            figure.scroll_into_view_if_needed()
            assert figure.is_visible() and figure.evaluate("i => i.naturalWidth > 100"), "no static figure"
        text = page.locator(".jp-Notebook").inner_text()
        assert "Error displaying widget" not in text and "Traceback" not in text
        nb.shot("notebook13_reopened_without_kernel")
    finally:
        nb.shot("notebook13_end")
        print("console:", nb.console[-20:])
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
        button = form.get_by_role("button", name="Run with these words")
        # the whole label is visible and the form does not scroll sideways
        assert page.evaluate("b => b.scrollWidth <= b.clientWidth + 1", button.element_handle())
        out = form.locator("xpath=ancestor::div[contains(@class,'jp-OutputArea-output')][1]")
        assert page.evaluate("e => e.scrollWidth <= e.clientWidth + 1", out.element_handle())
        assert _value(_dropdown(form, "Test")).startswith("two-sided"), "the test is not two-sided by default"
        names, words = form.locator("input[type='text']"), form.locator("textarea")
        assert names.count() == 4 and names.first.input_value() == "Math"
        math_words, arts_words = words.nth(0).input_value(), words.nth(1).input_value()
        words.nth(0).fill(math_words + ", qwxzqy")
        button.click()
        result = form.locator(".bk-seed-weat")
        _wait_for(page, lambda: result.count() > 0, "the WEAT result of the form", box=form)
        shown = _text(result.inner_text())
        assert "Left out of Math (no vector for it): qwxzqy." in shown, shown
        assert shown.startswith("Math is more associated with MaleTerms than Arts is"), shown
        first = _text(result.locator("p").first.inner_text())
        nb.shot("seed_form_run")
        # the target sets typed the other way round: the same verdict, only the sign of d flips
        names.nth(0).fill("Arts")
        words.nth(0).fill(arts_words)
        names.nth(1).fill("Math")
        words.nth(1).fill(math_words)
        button.click()
        _wait_for(page, lambda: "qwxzqy" not in result.inner_text(), "the swapped sets' result", box=form)
        swapped = _text(result.locator("p").first.inner_text())
        d = re.search(r"d = (-?\d\.\d\d)", first)
        assert d, first
        assert swapped == first.replace(f"d = {d.group(1)}", f"d = {-float(d.group(1)):.2f}"), (
            first,
            swapped,
        )
        # renamed sets of three words each: the verdict uses the new names and says 0.05 cannot be reached
        names.nth(0).fill("Care")
        words.nth(0).fill("nurse, teacher, secretary")
        names.nth(1).fill("Technical")
        words.nth(1).fill("engineer, pilot, carpenter")
        button.click()
        _wait_for(page, lambda: "Care" in result.inner_text(), "the result with the new names", box=form)
        shown = _text(result.inner_text())
        assert "3 + 3 target words of Care and Technical" in shown and "2/20 = 0.1" in shown, shown
        assert "'X'" not in shown, shown
        nb.shot("seed_form_small_sets")
        words.nth(0).fill("")
        button.click()
        _wait_for(
            page, lambda: "Could not run with these words" in form.inner_text(), "the empty-set message"
        )
        form.get_by_role("button", name="Reset to the default words").click()
        _wait_for(page, lambda: names.first.input_value() == "Math", "the default words back")
        assert words.nth(0).input_value() == math_words
        nb.shot("seed_form_reset")
        nb.assert_clean()
    finally:
        nb.close()
