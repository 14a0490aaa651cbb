"""The examples in the docstrings run, and every public metric, debiasing method and loader has one.

Each docstring's ``Examples`` section is a doctest (standard library :mod:`doctest`), run here one module
per test so that pytest-xdist spreads them: the modules of the registered metrics
(:data:`~biaskit.core.registry.REGISTRY`) and every module of :mod:`biaskit.debiasing` and
:mod:`biaskit.data`, found by walking the packages.  The examples read the toy inputs of
:mod:`biaskit.metrics.toys` and the bundled data, so they are small, offline and fast.

The ``test_*_have_examples`` tests check that every registered metric's entry point (of biaskit itself;
a plug-in package documents its own), every ``load_*`` function of :mod:`biaskit.data` (its modules'
``__all__``, or the functions a module without ``__all__`` defines) and every public function or class
of :mod:`biaskit.debiasing` (its modules' ``__all__``) shows an example (``>>>``) in its docstring.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

import biaskit.data
import biaskit.debiasing
import biaskit.metrics
from biaskit.core.registry import REGISTRY

# the examples of the toy language models give the same numbers on one thread (see conftest.py)
pytestmark = pytest.mark.usefixtures("one_torch_thread")

OPTIONFLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


def _package_modules(package: ModuleType) -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages(package.__path__, package.__name__ + "."))


def _builtin_metric_modules() -> list[str]:
    # plug-in metrics (another distribution's modules) document themselves in their own package
    return sorted({REGISTRY[n].module for n in REGISTRY if REGISTRY[n].package == "biaskit"})


DOCTEST_MODULES = sorted(
    {*_builtin_metric_modules(), *_package_modules(biaskit.debiasing), *_package_modules(biaskit.data)}
)


def _public(module_name: str, *, without_all: bool = False) -> list[tuple[str, object]]:
    """The functions and classes a module lists in ``__all__`` (constants and aliases left out).

    With ``without_all``, a module that has no ``__all__`` gives the functions and classes it defines
    whose names do not start with ``_``.
    """
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, o in vars(module).items() if not n.startswith("_")] if without_all else []
        names = [n for n in names if getattr(vars(module)[n], "__module__", None) == module_name]
    objects = [(name, getattr(module, name)) for name in names]
    # inspect.unwrap: a function behind functools.lru_cache counts as a function
    return [(n, o) for n, o in objects if inspect.isfunction(inspect.unwrap(o)) or inspect.isclass(o)]


@pytest.mark.parametrize("module_name", DOCTEST_MODULES)
def test_docstring_examples_run(module_name: str) -> None:
    module = importlib.import_module(module_name)
    tests = doctest.DocTestFinder().find(module, module_name)
    runner = doctest.DocTestRunner(optionflags=OPTIONFLAGS)
    report: list[str] = []
    for test in sorted(tests, key=lambda t: t.name):
        if test.examples:
            runner.run(test, out=report.append)
    result = runner.summarize(verbose=False)
    failed = f"{result.failed} of {result.attempted} doctests of {module_name} failed:\n"
    assert result.failed == 0, failed + "".join(report)


def test_metrics_have_examples() -> None:
    missing = [
        f"metric {name!r}: {metric.entry_point} (module {metric.module})"
        for name, metric in REGISTRY.items()
        if metric.package == "biaskit" and ">>>" not in (inspect.getdoc(metric.load()) or "")
    ]
    assert not missing, "no example (>>>) in the docstring of:\n" + "\n".join(missing)


def test_loaders_have_examples() -> None:
    missing = [
        f"loader {module_name}.{name}"
        for module_name in _package_modules(biaskit.data)
        for name, obj in _public(module_name, without_all=True)
        if name.startswith("load_") and ">>>" not in (inspect.getdoc(obj) or "")
    ]
    assert not missing, "no example (>>>) in the docstring of:\n" + "\n".join(missing)


def test_debiasing_methods_have_examples() -> None:
    missing = [
        f"debiasing {module_name}.{name}"
        for module_name in _package_modules(biaskit.debiasing)
        for name, obj in _public(module_name)
        if ">>>" not in (inspect.getdoc(obj) or "")
    ]
    assert not missing, "no example (>>>) in the docstring of:\n" + "\n".join(missing)


def test_the_lists_are_not_empty() -> None:
    """A renamed package or registry that the walk no longer finds fails here, not silently."""
    assert REGISTRY and biaskit.metrics.__name__ in {m.rsplit(".", 1)[0] for m in DOCTEST_MODULES}
    assert any(m.startswith("biaskit.data.") for m in DOCTEST_MODULES)
    assert any(m.startswith("biaskit.debiasing.") for m in DOCTEST_MODULES)
