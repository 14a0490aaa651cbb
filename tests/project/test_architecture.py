"""The package's shape: one-way layers by folder, no cycle, no private name imported across modules.

Imports are read from the source with :mod:`ast`: module-level *and* function-level ones (a lazy
import inside a function still makes a dependency a reader has to untangle), ``if TYPE_CHECKING``
blocks excepted.  ``from biaskit.lm import X`` counts as an import of the submodule that defines
``X`` (``biaskit.lm`` loads its names lazily).

The layers, bottom to top (``docs/DEVELOPING.md`` draws them)::

    core  ->  data  ->  lm  ->  embeddings  ->  metrics | debiasing | training  ->  studies | report  ->  CLI

A module may import from its own folder and from folders of a lower layer; folders of one layer may
import each other only while the folder graph stays acyclic.  Each rule has a negative test below that
builds a small package which breaks it and checks that the rule reports exactly that break.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import biaskit
from biaskit import lm

ROOT = Path(biaskit.__file__).parent

#: folder (package) -> layer, bottom (0) to top; the root modules (``__init__``, ``__main__``) are the CLI
LAYERS: dict[str, int] = {
    "biaskit.core": 0,
    "biaskit.data": 1,
    "biaskit.lm": 2,
    "biaskit.embeddings": 3,
    "biaskit.metrics": 4,
    "biaskit.debiasing": 4,
    "biaskit.training": 4,
    "biaskit.studies": 5,
    "biaskit.report": 5,
    "biaskit": 6,
}
#: private test helpers: no production module may import them
TEST_HELPERS = {"biaskit._testing"}


@dataclass(frozen=True)
class Import:
    source: str  # importing module
    target: str  # imported module
    name: str | None  # the name taken from it (``from target import name``), None for ``import target``
    line: int


def modules(root: Path, package: str = "biaskit") -> dict[str, Path]:
    out = {}
    for p in root.rglob("*.py"):
        parts = (package, *p.relative_to(root).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports(name: str, path: Path, mods: dict[str, Path], lazy: dict[str, dict[str, str]]) -> list[Import]:
    """Every import of a module in ``mods`` made anywhere in ``path`` (TYPE_CHECKING blocks skipped).
    ``lazy`` maps a package to its lazily exported names (name -> submodule)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if _is_type_checking(node):
            skip |= {id(n) for n in ast.walk(node)}
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: list[Import] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in mods:
                    found.append(Import(name, full, None, node.lineno))
                elif alias.name in lazy.get(base, {}):
                    found.append(Import(name, f"{base}.{lazy[base][alias.name]}", alias.name, node.lineno))
                elif base in mods:
                    found.append(Import(name, base, alias.name, node.lineno))
        elif isinstance(node, ast.Import):
            found += [Import(name, a.name, None, node.lineno) for a in node.names if a.name in mods]
    return [i for i in found if i.target != name]


def folder_of(module: str, mods: dict[str, Path], layers: dict[str, int]) -> str:
    """The layer folder of a module: its longest prefix named in ``layers``."""
    parts = module.split(".")
    for k in range(len(parts), 0, -1):
        if ".".join(parts[:k]) in layers and (k < len(parts) or mods[module].name == "__init__.py"):
            return ".".join(parts[:k])
    return parts[0]


def upward_imports(found: list[Import], mods, layers) -> list[str]:
    out = []
    for i in found:
        a, b = folder_of(i.source, mods, layers), folder_of(i.target, mods, layers)
        if layers[b] > layers[a]:
            out.append(f"{i.source}:{i.line} imports {i.target} ({b} is above {a})")
    return sorted(out)


def private_imports(found: list[Import], helpers: set[str] = TEST_HELPERS) -> list[str]:
    out = []
    for i in found:
        if i.name and i.name.startswith("_") and not i.name.startswith("__"):
            out.append(f"{i.source}:{i.line} imports the private name {i.target}.{i.name}")
        if i.target in helpers or any(
            p.startswith("_") and not p.startswith("__") for p in i.target.split(".")
        ):
            if i.source not in helpers:
                out.append(f"{i.source}:{i.line} imports the private module {i.target}")
    return sorted(out)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def analyse(root: Path, package: str, layers: dict[str, int], lazy: dict[str, dict[str, str]]):
    mods = modules(root, package)
    found = [i for m, p in sorted(mods.items()) for i in imports(m, p, mods, lazy)]
    module_graph: dict[str, set[str]] = {m: set() for m in mods}
    folder_graph: dict[str, set[str]] = {}
    for i in found:
        module_graph[i.source].add(i.target)
        a, b = folder_of(i.source, mods, layers), folder_of(i.target, mods, layers)
        folder_graph.setdefault(a, set())
        if a != b:
            folder_graph[a].add(b)
    return mods, found, module_graph, folder_graph


LAZY = {"biaskit.lm": dict(lm._EXPORTS)}


@pytest.fixture(scope="module")
def biaskit_graph():
    return analyse(ROOT, "biaskit", LAYERS, LAZY)


# --- the rules hold for biaskit ----------------------------------------------------------------------


def test_every_module_lives_in_a_layer_folder(biaskit_graph):
    mods = biaskit_graph[0]
    loose = sorted(
        m
        for m in mods
        if folder_of(m, mods, LAYERS) == "biaskit" and m not in {"biaskit", "biaskit.__main__"}
    )
    assert loose == sorted(TEST_HELPERS), "root modules other than the CLI and the private test helpers"
    assert {folder_of(m, mods, LAYERS) for m in mods} == set(LAYERS)


def test_no_import_from_a_higher_layer(biaskit_graph):
    mods, found, _, _ = biaskit_graph
    assert any(i.source == "biaskit.lm.scoring" and i.target == "biaskit.lm.causal" for i in found)
    assert upward_imports(found, mods, LAYERS) == []


def test_no_cycle_between_folders_or_modules(biaskit_graph):
    _, _, module_graph, folder_graph = biaskit_graph
    assert "biaskit.lm" in folder_graph["biaskit.metrics"]
    assert cycles(folder_graph) == []
    assert cycles(module_graph) == []


def test_no_private_name_or_test_helper_imported_across_modules(biaskit_graph):
    assert private_imports(biaskit_graph[1]) == []


# --- each rule fails when broken (a small package written for the purpose) ------------------------


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / "pkg" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root / "pkg"


TOY_LAYERS = {"pkg.low": 0, "pkg.mid": 1, "pkg.midb": 1, "pkg.high": 2, "pkg": 3}


def _toy(tmp_path, files):
    base = {
        "__init__.py": "",
        "low/__init__.py": "",
        "low/a.py": "X = 1\n_hidden = 2\n",
        "mid/__init__.py": "",
        "midb/__init__.py": "",
        "high/__init__.py": "",
    }
    return analyse(_write(tmp_path, {**base, **files}), "pkg", TOY_LAYERS, {})


def test_an_upward_import_inside_a_function_is_reported(tmp_path):
    mods, found, _, _ = _toy(
        tmp_path,
        {
            "mid/b.py": "from pkg.low.a import X\n",
            "high/c.py": "from pkg.mid import b\n",
            "low/d.py": "def f():\n    from pkg.high.c import b\n    return b\n",
        },
    )
    assert upward_imports(found, mods, TOY_LAYERS) == [
        "pkg.low.d:2 imports pkg.high.c (pkg.high is above pkg.low)"
    ]


def test_a_type_checking_import_is_not_a_dependency(tmp_path):
    mods, found, _, _ = _toy(
        tmp_path,
        {
            "high/c.py": "",
            "low/d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.high.c import Y\n",
        },
    )
    assert upward_imports(found, mods, TOY_LAYERS) == []


def test_a_cycle_between_folders_of_one_layer_is_reported(tmp_path):
    _, _, module_graph, folder_graph = _toy(
        tmp_path,
        {
            "mid/b.py": "from pkg.midb.e import Z\n",
            "midb/e.py": "Z = 0\ndef f():\n    from pkg.mid.g import W\n",
            "mid/g.py": "W = 1\n",
        },
    )
    assert cycles(folder_graph) == [["pkg.mid", "pkg.midb"]]
    assert cycles(module_graph) == []  # no module cycle: the folders alone go round


def test_a_module_cycle_is_reported(tmp_path):
    _, _, module_graph, _ = _toy(
        tmp_path,
        {"mid/b.py": "from pkg.mid.g import W\nV = 0\n", "mid/g.py": "from pkg.mid.b import V\nW = 1\n"},
    )
    assert cycles(module_graph) == [["pkg.mid.b", "pkg.mid.g"]]


def test_a_private_import_across_modules_is_reported(tmp_path):
    _, found, _, _ = _toy(
        tmp_path,
        {
            "mid/b.py": "from pkg.low.a import X, _hidden\n",
            "_testing.py": "",
            "high/c.py": "import pkg._testing\n",
        },
    )
    assert private_imports(found, {"pkg._testing"}) == [
        "pkg.high.c:1 imports the private module pkg._testing",
        "pkg.mid.b:1 imports the private name pkg.low.a._hidden",
    ]


def test_relative_imports_are_resolved(tmp_path):
    mods, found, _, _ = _toy(tmp_path, {"low/d.py": "from ..high import c\n", "high/c.py": ""})
    assert upward_imports(found, mods, TOY_LAYERS) == [
        "pkg.low.d:1 imports pkg.high.c (pkg.high is above pkg.low)"
    ]


# --- the deprecated shims are gone, the lazy names of biaskit.lm resolve ----------------------------


def test_deprecated_shims_are_gone_and_nothing_uses_them():
    import importlib

    for old in ("biaskit.mlm", "biaskit.reporting", "biaskit.testing"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(old)
    # names that moved before the first release are not kept under their old names
    from biaskit import _testing
    from biaskit.studies import replay

    for module, name in (
        (_testing, "tiny_masked_lm"),
        (_testing, "tiny_tokenizer"),
        (replay, "published_values"),
    ):
        assert not hasattr(module, name), f"{module.__name__}.{name} is still there"
    repo = ROOT.parent
    for p in [*sorted((repo / "notebooks").glob("*.ipynb")), *sorted((repo / "benchmarks").glob("*.py"))]:
        text = p.read_text(encoding="utf-8")
        for old in ("biaskit.mlm", "biaskit import mlm", "biaskit.reporting", "biaskit.testing"):
            assert old not in text, f"{p.name} still uses {old!r}"


def test_every_lazy_name_of_biaskit_lm_resolves():
    import importlib

    for name, sub in lm._EXPORTS.items():
        assert getattr(lm, name) is getattr(importlib.import_module(f"biaskit.lm.{sub}"), name)
    assert sorted(lm.__all__) == sorted(lm._EXPORTS)
