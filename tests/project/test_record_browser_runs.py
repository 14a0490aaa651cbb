"""``scripts/record_browser_runs.py`` reads a run's result and the views drawn again from its output."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location(
        "record_browser_runs", ROOT / "scripts" / "record_browser_runs.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PASSED = """\
tests/report/test_browser_explorers.py ..                                [100%]
==================================== PASSES ====================================
----------------------------- Captured stdout call -----------------------------
views drawn again after a lost wait for their model: {'reload': {'state': 'on', 'retries': 1}, \
'reopen': {'state': 'on', 'retries': 0}}
controls checked: {'run all': 56, 'reload': 54, 'reopen': 54}
================= 2 passed, 1 deselected in 395.51s (0:06:35) ==================
"""

FAILED = """\
E           AssertionError: timed out waiting for the four explorers (reload)
E           assert 180000 < 180000
E           AssertionError: timed out waiting for the two explorers (reload)
=========================== short test summary info ============================
FAILED tests/report/test_browser_explorers.py::test_explorers_never_go_dead
============ 2 failed, 1 deselected in 589.12s (0:09:49) ============
"""


def test_a_passed_run_and_its_views_drawn_again() -> None:
    script = _script()
    assert script._result(PASSED, 0) == "2 passed, 1 deselected"
    assert script._retries(PASSED) == "reload 1 (on), reopen 0 (on)"


def test_a_failed_run_names_its_first_assertion() -> None:
    script = _script()
    assert script._result(FAILED, 1) == (
        "2 failed, 1 deselected; AssertionError: timed out waiting for the four explorers (reload)"
    )
    assert script._retries(FAILED) == "(not printed)"
    assert script._result("make: *** No rule", 2) == "exit status 2"
    assert script.clock(395.51) == "6 min 36 s" and script.clock(42.4) == "42 s"
