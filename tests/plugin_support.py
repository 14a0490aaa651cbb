"""The toy plug-in package (``tests/plugins/biaskit_toy_metric``), installed for a test session.

``pip install --no-deps --no-build-isolation --target DIR`` puts the package and its ``dist-info`` (with
its ``biaskit.metrics`` entry point) into a temporary folder; with that folder on ``sys.path``,
:func:`importlib.metadata.entry_points` finds it exactly as it finds a package installed into the
environment, so :func:`biaskit.core.registry.discover_plugins` registers its metric.  Nothing is installed
into the virtual environment, and the source tree stays clean (pip builds a copy).
"""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PLUGIN_SOURCE = Path(__file__).resolve().parent / "plugins" / "biaskit_toy_metric"
PLUGIN_DIST = "biaskit-toy-metric"
PLUGIN_METRIC = "mean_cosine_gap"


def install_plugin(folder: Path, source: Path = PLUGIN_SOURCE) -> Path:
    """Install the plug-in at ``source`` into ``folder / "site"`` (returned) with pip, offline."""
    build = folder / "source"
    shutil.copytree(source, build, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    site = folder / "site"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "--quiet",
         "--disable-pip-version-check", "--target", str(site), str(build)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"pip could not install the toy plug-in:\n{done.stdout}\n{done.stderr}")
    return site


@contextmanager
def plugin_on_path(site: Path) -> Iterator[list[str]]:
    """``site`` on ``sys.path`` and its plug-ins registered (their names yielded); undone afterwards."""
    from biaskit.core.registry import REGISTRY, discover_plugins

    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    try:
        yield discover_plugins()
    finally:
        REGISTRY.remove_package(PLUGIN_DIST)
        sys.path.remove(str(site))
        for name in [m for m in sys.modules if m.partition(".")[0] == "biaskit_toy_metric"]:
            del sys.modules[name]
        importlib.invalidate_caches()
