"""`make test` on both cores: tests that share an expensive fixture run on one pytest-xdist worker.

A small suite with this folder's ``conftest.py`` is run in a subprocess with ``-n 2 --dist loadgroup``, as
``make test`` runs the real one; each fixture writes down the worker that built it and each test the worker
that ran it.  Without the groups (or with groups that never reach the scheduler: pytest-xdist 3.8 under
pytest 9.2) the two workers each take tests of the module and build its fixture twice.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import xdist_support
from xdist_support import assign_groups, start_order

pytest.importorskip("xdist", reason="pytest-xdist is not installed (the dev extra; make setup installs it)")

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"
SUPPORT = CONFTEST.with_name("xdist_support.py")

SHARED = """
import os
import time
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def note(name: str) -> None:
    time.sleep(0.3)  # long enough that, without the groups, the idle worker takes some of the tests
    with (HERE / "log.txt").open("a", encoding="utf-8") as f:
        f.write(f"{name} {os.environ['PYTEST_XDIST_WORKER']}\\n")


@pytest.fixture(scope="module")
def expensive():
    note("built")
    return 42


@pytest.mark.parametrize("i", range(6))
def test_uses_the_module_fixture(expensive, i):
    note("shared")
    assert expensive == 42


@pytest.mark.parametrize("i", range(8))
def test_alone(i):
    note("alone")
"""

NOTEBOOKS = """
import os
import time
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def reproduced_results():  # stands in for conftest's run of every notebook
    return None


@pytest.mark.parametrize("i", range(3))
def test_reads_the_run(reproduced_results, i):
    time.sleep(0.3)
    with (Path(__file__).parent / "log.txt").open("a", encoding="utf-8") as f:
        f.write(f"notebooks {os.environ['PYTEST_XDIST_WORKER']}\\n")
"""


def _run_suite(tmp_path: Path) -> dict[str, list[str]]:
    """Run the small suite on two workers; ``{what: [worker, ...]}`` from its log."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    for helper in (CONFTEST, SUPPORT):
        (tmp_path / helper.name).write_text(helper.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "test_shared.py").write_text(textwrap.dedent(SHARED), encoding="utf-8")
    (tmp_path / "test_nb_a.py").write_text(textwrap.dedent(NOTEBOOKS), encoding="utf-8")
    (tmp_path / "test_nb_b.py").write_text(textwrap.dedent(NOTEBOOKS), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "20 passed" in done.stdout, done.stdout[-3000:]
    log: dict[str, list[str]] = {}
    for line in (tmp_path / "log.txt").read_text(encoding="utf-8").splitlines():
        what, worker = line.split()
        log.setdefault(what, []).append(worker)
    return log


@pytest.mark.slow
def test_a_module_fixture_is_built_once_and_its_tests_share_one_worker(tmp_path):
    log = _run_suite(tmp_path)
    assert len(log["built"]) == 1, f"the module fixture was built on {log['built']}"
    assert len(log["shared"]) == 6 and set(log["shared"]) == set(log["built"])
    # the tests without a shared fixture are handed out one by one: both workers ran some
    assert len(log["alone"]) == 8 and set(log["alone"]) | set(log["shared"]) == {"gw0", "gw1"}
    # the tests of the notebook run, in two modules, all ran on one worker
    assert len(log["notebooks"]) == 6 and len(set(log["notebooks"])) == 1


class FakeItem:
    """What :func:`assign_groups` and :func:`start_order` read of a test: its id, keys, marks and stash."""

    def __init__(self, nodeid: str, keys: set[str], slow: bool = False) -> None:
        self.nodeid, self.keys, self.slow, self.stash = nodeid, keys, slow, {}

    def get_closest_marker(self, name: str):
        return object() if name == "slow" and self.slow else None


def test_tests_linked_through_shared_fixtures_are_one_group_and_long_work_starts_first(monkeypatch):
    monkeypatch.setattr(xdist_support, "shared_keys", lambda item: set(item.keys))
    items = [
        FakeItem("a.py::fast", set()),
        FakeItem("a.py::model", {"module:a.py"}),
        FakeItem("a.py::slow_alone", set(), slow=True),
        FakeItem("b.py::plugin", {"session:toy_plugin"}),
        FakeItem("c.py::site", {"session:reproduced_site", "session:reproduced_results"}, slow=True),
        FakeItem("c.py::site_and_model", {"session:reproduced_site", "module:c.py"}),
        FakeItem("c.py::model", {"module:c.py"}),
        FakeItem("d.py::run", {"session:reproduced_results"}, slow=True),
        FakeItem("e.py::by_hand", {"mark:port", "session:toy_plugin"}),
    ]
    groups = assign_groups(items)
    # c.py's module fixture, reproduced_site and reproduced_results are linked through c.py's tests
    assert groups == {
        "a.py::model": "a.py",
        "b.py::plugin": "port+toy_plugin",
        "c.py::site": "notebooks",
        "c.py::site_and_model": "notebooks",
        "c.py::model": "notebooks",
        "d.py::run": "notebooks",
        "e.py::by_hand": "port+toy_plugin",
    }
    assert all(item.stash.get(xdist_support._GROUP) == groups.get(item.nodeid) for item in items)
    order = [item.nodeid for item in start_order(items, groups)]
    assert order == [
        "c.py::site",  # the group with slow tests, its tests together and in their order
        "c.py::site_and_model",
        "c.py::model",
        "d.py::run",
        "a.py::slow_alone",  # a slow test on its own
        "a.py::model",  # the other groups
        "b.py::plugin",
        "e.py::by_hand",
        "a.py::fast",  # the rest
    ]
