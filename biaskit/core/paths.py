"""Locations of the bundled resources and of the on-disk cache.

The bundled ``data/`` and ``wordlists/`` folders sit at the repository root
next to the package.  Both can be overridden with environment variables so a
user can point biaskit at their own copies:

* ``BIASKIT_DATA_DIR``      bundled datasets (default ``<repo>/data``)
* ``BIASKIT_WORDLISTS_DIR`` word lists (default ``<repo>/wordlists``)
* ``BIASKIT_CACHE_DIR``     downloads and cached model scores
  (default ``~/.cache/biaskit``)
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent.parent


def data_dir() -> Path:
    """Folder of the bundled datasets."""
    return Path(os.environ.get("BIASKIT_DATA_DIR", REPO_ROOT / "data"))


def wordlists_dir() -> Path:
    """Folder of the bundled word lists."""
    return Path(os.environ.get("BIASKIT_WORDLISTS_DIR", REPO_ROOT / "wordlists"))


def cache_dir() -> Path:
    """Folder for downloads and cached expensive results (created on demand)."""
    path = Path(os.environ.get("BIASKIT_CACHE_DIR", Path.home() / ".cache" / "biaskit"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def results_dir() -> Path:
    """Folder where notebooks write ``<name>.json`` and figures (created on demand)."""
    path = Path(os.environ.get("BIASKIT_RESULTS_DIR", REPO_ROOT / "results"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_name(name: str, max_chars: int) -> str:
    """``name`` (a model id or path) as a cache folder name: characters other than letters, digits
    and ``-._`` become ``_``; the last ``max_chars`` are kept (the informative end of a path)."""
    return "".join(c if c.isalnum() or c in "-._" else "_" for c in name)[-max_chars:]
