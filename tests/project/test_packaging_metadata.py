"""What ``pip install biaskit[...]`` promises: ranges on every requirement, extras that hold what the
notebooks import, and the version, citation and notebook list said the same way everywhere."""

from __future__ import annotations

import ast
import importlib.metadata as md
import json
import re
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
META = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
EXTRAS: dict[str, list[str]] = META["optional-dependencies"]
#: calendar-versioned: no major release to stop at
NO_UPPER = {"dask"}


def _requirements() -> list[tuple[str, Requirement]]:
    out = [("dependencies", Requirement(r)) for r in META["dependencies"]]
    for extra, reqs in EXTRAS.items():
        out += [(extra, Requirement(r)) for r in reqs if Requirement(r).name != META["name"]]
    return out


@pytest.mark.parametrize(("where", "req"), _requirements(), ids=lambda x: str(x))
def test_every_requirement_has_a_tested_lower_bound_and_an_upper_bound(where, req):
    ops = {s.operator for s in req.specifier}
    assert ">=" in ops, f"{where}: {req} has no lower bound"
    if canonicalize_name(req.name) not in NO_UPPER:
        assert "<" in ops, f"{where}: {req} has no upper bound"
        lower = next(s.version for s in req.specifier if s.operator == ">=")
        upper = next(s.version for s in req.specifier if s.operator == "<")
        major = int(lower.split(".")[0])
        # the next major release (for 0.x: 1.0)
        assert int(upper.split(".")[0]) == (major + 1 if major else 1), f"{where}: {req}"


def test_all_is_every_user_extra():
    assert EXTRAS["all"] == [f"{META['name']}[notebooks,distributed]"]


def _closure(extras: tuple[str, ...]) -> set[str]:
    """Distributions pip installs for ``biaskit[extras]``, from the installed packages' own metadata."""
    todo = [(Requirement(r), "") for r in META["dependencies"]]
    todo += [(Requirement(r), "") for e in extras for r in EXTRAS[e] if Requirement(r).name != META["name"]]
    seen: set[str] = set()
    while todo:
        req, _ = todo.pop()
        key = canonicalize_name(req.name)
        if key in seen:
            continue
        seen.add(key)
        try:
            requires = md.requires(req.name) or []
        except md.PackageNotFoundError:
            continue
        for raw in requires:
            sub = Requirement(raw)
            envs = [{**default_environment(), "extra": e} for e in ("", *req.extras)]
            if sub.marker is None or any(sub.marker.evaluate(env) for env in envs):
                todo.append((sub, ""))
    return seen


def _notebook_imports() -> set[str]:
    names: set[str] = set()
    for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell in json.loads(nb.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] != "code":
                continue
            try:
                tree = ast.parse("".join(cell["source"]))
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names |= {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names.add(node.module.split(".")[0])
    return names


def test_the_notebooks_extra_installs_what_the_notebooks_import():
    import sys

    provided = md.packages_distributions()
    closure = _closure(("notebooks",))
    missing = {}
    for module in sorted(_notebook_imports() - set(sys.stdlib_module_names) - {"biaskit"}):
        dists = {canonicalize_name(d) for d in provided.get(module, [])}
        assert dists, f"a notebook imports {module}, which no installed distribution provides"
        if not dists & closure:
            missing[module] = sorted(dists)
    # the papermill kernel, JupyterLab, the widgets: named, not only reached through another package
    named = {canonicalize_name(Requirement(r).name) for r in EXTRAS["notebooks"]}
    assert {"jupyterlab", "papermill", "ipykernel", "ipywidgets", "anywidget", "nbformat", "plotly"} <= named
    assert not missing, f"imported by the notebooks but not installed by biaskit[notebooks]: {missing}"


def test_version_citation_and_notebook_table_agree():
    version = META["version"]
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0" and cff["version"] == version and cff["authors"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    bib = re.search(r"@software\{biaskit,(.*?)\n\}", readme, re.S)
    assert bib, "README has no @software entry"
    fields = dict(re.findall(r"(\w+)\s*=\s*\{(.*?)\},?\n", bib.group(1) + "\n", re.S))
    assert {"author", "title", "year", "version"} <= set(fields), fields
    assert fields["version"] == version
    assert f"dist/biaskit-{version}-py3-none-any.whl[notebooks]" in readme
    assert f"dist/biaskit_data-{version}-py3-none-any.whl" in readme
    for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        assert f"| `{nb.stem}` |" in readme, f"README's notebook table lacks {nb.stem}"
