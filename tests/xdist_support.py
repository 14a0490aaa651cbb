"""Parallel test runs with pytest-xdist: `make test` runs ``pytest -n 2 --dist loadgroup``.

Tests that share an expensive fixture form one group, and a group runs on one worker, in one go, so the
fixture is built once per run (not once per worker, nor again each time a worker comes back to a module):

* a session- or package-scoped fixture of this suite (``reproduced_results``, every notebook executed once;
  ``toy_plugin``): every test that uses it, whatever its module;
* a module- or class-scoped fixture (a trained toy model, scored pairs, the built docs site): the tests of
  that module that use it;
* an ``xdist_group`` mark given by hand.

Tests linked through any of these are one group (``reproduced_site`` uses ``reproduced_results``, so the
report's tests of the notebook run join the notebooks).  Other tests are handed out one by one.  On each
worker the items are put in :func:`start_order`: the groups with slow tests and the slow tests that run
alone start first, so that no long test starts last.

pytest-xdist 3.8 passes the groups from the workers to the scheduler inside the test ids, which pytest 9.2
no longer lets a plugin change, so the groups would be silently ignored.  Each worker therefore also writes
its groups into a folder of the run, and the scheduler (:func:`pytest_xdist_make_scheduler`) reads them.
``tests/conftest.py`` imports the hooks; ``tests/project/test_parallel_runs.py`` runs a small suite on two
workers.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

#: fixtures that are cheap to build again: sharing one is no reason to keep tests together
CHEAP_SHARED_FIXTURES = frozenset({"one_torch_thread"})
#: the group of the tests of ``reproduced_results`` (every notebook executed once)
NOTEBOOKS_GROUP = "notebooks"
_GROUPS_KEY = "biaskit_xdist_groups"  # workerinput entry: the folder where each worker writes its groups
_GROUPS_FOLDER = pytest.StashKey[Path]()
_GROUP = pytest.StashKey[str]()

# on a worker, before torch or numpy is imported: one BLAS / OpenMP thread per worker and core (as many
# threads as cores in all, not twice as many)
if os.environ.get("PYTEST_XDIST_WORKER"):
    _threads = str(max(1, (os.cpu_count() or 1) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)))
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, _threads)


def shared_keys(item: pytest.Item) -> set[str]:
    """What ``item`` shares with other tests that is expensive to build again: ``session:<fixture>`` for a
    session- or package-scoped fixture of this suite (pytest's own, such as ``tmp_path_factory``, do not
    count), ``module:<file>`` for a module- or class-scoped one, ``mark:<name>`` for an ``xdist_group``."""
    keys = {
        f"mark:{m.args[0] if m.args else m.kwargs.get('name', 'default')}"
        for m in item.iter_markers("xdist_group")
    }
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return keys
    for name in getattr(item, "fixturenames", ()):
        defs = info.name2fixturedefs.get(name) or ()
        if not defs or name in CHEAP_SHARED_FIXTURES or not defs[-1].baseid:
            continue
        if defs[-1].scope in ("session", "package"):
            keys.add(f"session:{name}")
        elif defs[-1].scope in ("module", "class"):
            keys.add(f"module:{item.path.name}")
    return keys


def assign_groups(items: list[pytest.Item]) -> dict[str, str]:
    """``{test id: group}`` for the tests that share something (:func:`shared_keys`); tests linked through a
    shared key, directly or not, are one group.  The group name is stored on each item as well."""
    parent: dict[str, str] = {}

    def root(key: str) -> str:
        while parent[key] != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    keys_of = {}
    for item in items:
        keys = sorted(shared_keys(item))
        keys_of[item.nodeid] = keys
        for key in keys:
            parent.setdefault(key, key)
        for key in keys[1:]:
            parent[root(key)] = root(keys[0])
    members: dict[str, set[str]] = {}
    for key in parent:
        members.setdefault(root(key), set()).add(key)

    def name(keys: set[str]) -> str:
        if "session:reproduced_results" in keys:
            return NOTEBOOKS_GROUP
        return "+".join(sorted(k.split(":", 1)[1] for k in keys))

    names = {r: name(keys) for r, keys in members.items()}
    groups = {}
    for item in items:
        if keys_of[item.nodeid]:
            groups[item.nodeid] = item.stash[_GROUP] = names[root(keys_of[item.nodeid][0])]
    return groups


def start_order(items: list[pytest.Item], groups: dict[str, str]) -> list[pytest.Item]:
    """``items`` in the order the scheduler hands them out: the groups with slow tests (most slow tests
    first), the slow tests that run alone, the other groups, the rest.  A group's tests stay together, in
    their order; the sort is stable, so every worker gets the same order."""
    slow_in: dict[str, int] = {}
    first: dict[str, int] = {}
    for i, item in enumerate(items):
        if (group := groups.get(item.nodeid)) is not None:
            first.setdefault(group, i)
            slow_in[group] = slow_in.get(group, 0) + bool(item.get_closest_marker("slow"))

    def key(pair: tuple[int, pytest.Item]) -> tuple[int, int, int]:
        i, item = pair
        if (group := groups.get(item.nodeid)) is not None:
            return (0, -slow_in[group], first[group]) if slow_in[group] else (2, 0, first[group])
        return (1, 0, i) if item.get_closest_marker("slow") else (3, 0, i)

    return [item for _, item in sorted(enumerate(items), key=key)]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a worker of a ``--dist loadgroup`` run: the groups (:func:`assign_groups`), written for the
    scheduler, and the items in :func:`start_order`."""
    folder = getattr(config, "workerinput", {}).get(_GROUPS_KEY)
    if folder is None:
        return
    groups = assign_groups(items)
    for item in items:
        if item.nodeid in groups and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(groups[item.nodeid]))
    items[:] = start_order(items, groups)
    worker = config.workerinput.get("workerid", "gw")  # type: ignore[attr-defined]
    tmp = Path(folder) / f".{worker}.json.tmp"
    tmp.write_text(json.dumps(groups), encoding="utf-8")
    os.replace(tmp, Path(folder) / f"{worker}.json")


def pytest_configure(config: pytest.Config) -> None:
    """On the controller of a ``--dist loadgroup`` run: a folder for the workers' groups, and the workers'
    order (:func:`start_order`) as the order in which the scheduler hands out the work."""
    distributed = config.pluginmanager.hasplugin("xdist") and config.getoption("tx", None)
    if distributed and not hasattr(config, "workerinput") and config.getoption("dist", "no") == "loadgroup":
        config.stash[_GROUPS_FOLDER] = Path(tempfile.mkdtemp(prefix="biaskit-xdist-groups-"))
        config.option.loadscopereorder = False


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_GROUPS_FOLDER, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Tell each pytest-xdist worker where to write its groups."""
    folder = node.config.stash.get(_GROUPS_FOLDER, None)
    if folder is not None:
        node.workerinput[_GROUPS_KEY] = str(folder)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist's ``loadgroup`` scheduling, with the groups the workers wrote."""
    folder = config.stash.get(_GROUPS_FOLDER, None)
    if folder is None:
        return None
    from xdist.scheduler import LoadGroupScheduling

    class FixtureGroupScheduling(LoadGroupScheduling):
        def __init__(self, config: pytest.Config, log: Any = None) -> None:
            super().__init__(config, log)
            self.groups: dict[str, str] = {}  # test id -> group, from the workers' files

        def schedule(self) -> None:
            if self.collection is None:  # every worker has collected: their files are written
                for path in sorted(folder.glob("*.json")):
                    self.groups.update(json.loads(path.read_text(encoding="utf-8")))
            super().schedule()

        def _split_scope(self, nodeid: str) -> str:
            # a pytest-xdist that can mark ids again appends "@group" (after any parameters)
            plain = nodeid.rsplit("@", 1)[0] if nodeid.rfind("@") > nodeid.rfind("]") else nodeid
            return self.groups.get(plain) or super()._split_scope(nodeid)

    return FixtureGroupScheduling(config, log)
