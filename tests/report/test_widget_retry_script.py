"""The live hints' script that draws a view again after a lost wait for its widget model.

:func:`biaskit.report.widgets.live_hint_html` carries a script that replaces the ``restoredStatus`` getter
of JupyterLab's widget manager (``@jupyter-widgets/jupyterlab-manager``): for a few seconds after the first
"model not found" it answers "not restored yet" and emits ``restored`` again, so that the renderer that
gave up draws its view once its model is there.  These tests run the script in Chromium against a stand-in
of the manager (what it does, and that it does nothing where it finds something else), and read the
installed manager's code for the three things the script relies on.  The real manager is driven in
JupyterLab by ``tests/report/test_browser_explorers.py`` (``make test-browser``).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import CHROMIUM

from biaskit.report import widgets

pytestmark = pytest.mark.slow


#: a stand-in of the manager's module as the federation container gives it: the class with the getter of
#: ``@jupyter-widgets/jupyterlab-manager`` 5 (``get restoredStatus() { return this._restoredStatus; }``) and a
#: ``restored`` signal that counts its emissions
_FAKE_MANAGER = """
class Signal { constructor() { this.emitted = 0; } emit() { this.emitted += 1; } }
class LabWidgetManager {
  constructor() { this._restored = new Signal(); this._restoredStatus = false; }
  get restoredStatus() { return this._restoredStatus; }
}
class WidgetManager extends LabWidgetManager {}
window.WidgetManager = WidgetManager;
"""


def _script() -> str:
    found = re.search(r"<script>(.*)</script>", widgets.live_hint_html("Run this cell."), re.S)
    assert found, "the live hint carries no script"
    return found.group(1)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if CHROMIUM is None or not Path(CHROMIUM).exists():
        pytest.skip("Chromium is not installed (run scripts/install_chromium.sh or set BIASKIT_CHROMIUM)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A new page: a new ``window``, without what an earlier test's script left there."""
    context = browser.new_context()
    try:
        yield context.new_page()
    finally:
        context.close()


def _load(page: Any, container: str) -> dict[str, Any]:
    """A fresh page with ``window._JUPYTERLAB`` set by ``container`` (JavaScript), the script run twice (two
    hints); returns ``window.biaskitWidgetRetry`` once the script has settled."""
    page.set_content("<html><body></body></html>")
    page.evaluate(f"() => {{ {_FAKE_MANAGER}\n{container} }}")
    page.add_script_tag(content=_script())
    page.add_script_tag(content=_script())
    page.wait_for_function("() => window.biaskitWidgetRetry && window.biaskitWidgetRetry.state !== 'loading'")
    return dict(page.evaluate("() => window.biaskitWidgetRetry"))


_CONTAINER = (
    "window._JUPYTERLAB = {'@jupyter-widgets/jupyterlab-manager': "
    "{get: name => name === './extension' ? Promise.resolve(() => ({LabWidgetManager: "
    "Object.getPrototypeOf(window.WidgetManager)})) : Promise.reject(new Error(name))}};"
)


def test_a_lost_wait_is_answered_not_restored_and_restored_is_emitted_again(page: Any) -> None:
    assert _load(page, _CONTAINER) == {"state": "on", "retries": 0}
    seen = page.evaluate(
        """async () => {
          const m = new window.WidgetManager();
          const wait = ms => new Promise(r => setTimeout(r, ms));
          const out = {before: m.restoredStatus};           // not restored: the manager's own answer
          await wait(300);
          out.emittedBefore = m._restored.emitted;
          m._restoredStatus = true;
          out.lost = [m.restoredStatus, m.restoredStatus];   // two renderers gave up at once
          await wait(400);
          out.emitted = m._restored.emitted;                 // one emission for both
          out.retries = window.biaskitWidgetRetry.retries;
          m.biaskitRetry.since -= 5100;                      // after the grace: the manager's answer
          out.after = m.restoredStatus;
          await wait(400);
          out.emittedAfter = m._restored.emitted;
          const other = new window.WidgetManager();          // another notebook's manager: its own grace
          other._restoredStatus = true;
          out.other = other.restoredStatus;
          return out;
        }"""
    )
    assert seen == {
        "before": False,
        "emittedBefore": 0,
        "lost": [False, False],
        "emitted": 1,
        "retries": 1,
        "after": True,
        "emittedAfter": 1,
        "other": False,
    }
    assert widgets.WIDGET_RETRY_GRACE_MS == 5000


@pytest.mark.parametrize(
    ("container", "state"),
    [
        ("", "no JupyterLab widget manager"),  # VS Code, Notebook 6, a report page
        (
            "window._JUPYTERLAB = {'@jupyter-widgets/jupyterlab-manager': {get: () => Promise.resolve("
            "() => ({LabWidgetManager: class { get other() { return 1; } }}))}};",
            "unknown widget manager",
        ),
        (
            "window._JUPYTERLAB = {'@jupyter-widgets/jupyterlab-manager': "
            "{get: () => { throw new Error('x'); }}};",
            "failed to load the widget manager",
        ),
        (
            "window._JUPYTERLAB = {'@jupyter-widgets/jupyterlab-manager': {get: () => Promise.resolve("
            "() => { throw new Error('x'); })}};",
            "failed to load the widget manager",
        ),
    ],
)
def test_the_script_does_nothing_where_it_finds_something_else(page: Any, container: str, state: str) -> None:
    assert _load(page, container) == {"state": state, "retries": 0}


def test_switched_off_by_setting_the_variable_first(page: Any) -> None:
    page.set_content("<html><body></body></html>")
    page.evaluate(f"() => {{ {_FAKE_MANAGER}\n{_CONTAINER}\nwindow.biaskitWidgetRetry = {{state: 'off'}}; }}")
    page.add_script_tag(content=_script())
    page.wait_for_timeout(200)
    assert page.evaluate("() => window.biaskitWidgetRetry.state") == "off"
    assert page.evaluate(
        "() => { const m = new window.WidgetManager(); m._restoredStatus = true; return m.restoredStatus; }"
    )


def _manager_code() -> str:
    static = Path(sys.prefix, "share", "jupyter", "labextensions", "@jupyter-widgets", "jupyterlab-manager")
    files = sorted((static / "static").glob("*.js")) if static.is_dir() else []
    if not files:
        pytest.skip("JupyterLab's widget manager (jupyterlab_widgets) is not installed in this environment")
    return "\n".join(f.read_text(encoding="utf-8", errors="replace") for f in files)


def test_the_installed_widget_manager_has_what_the_script_relies_on() -> None:
    """The shapes of ``@jupyter-widgets/jupyterlab-manager`` 5 (``jupyterlab_widgets`` 3) that the script
    uses; a new version without them makes this fail, not the explorers silently."""
    code = _manager_code()
    # the getter the script replaces, on the class the container exposes
    assert re.search(r"get restoredStatus\(\)\{return this\._restoredStatus\}", code)
    assert re.search(r"LabWidgetManager:\(\)=>", code) and "this._restored=new " in code
    # the renderer that asks it after a failed get_model, and draws again on `restored`
    assert re.search(
        r"catch\(\w\)\{if\(\w\.restoredStatus\)\{"
        r"this\.node\.textContent=\"Error displaying widget: model not found\"",
        code,
    )
    assert re.search(r"\.restored\.connect\(this\._rerender,this\)", code)
    # the wait that can give up without a last look (ManagerBase.get_model of @jupyter-widgets/base-manager)
    assert re.search(r"for\(;Date\.now\(\)-\w<2e3;\)", code)
