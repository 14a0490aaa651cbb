"""biaskit-data: the bundled files of biaskit, as a companion distribution.

Word lists (``wordlists/``), datasets and the small trained models (``data/``), the numbered study
notebooks (``notebooks/``) and the batch configurations (``experiments/``) of the biaskit
repository, at the same version as the ``biaskit`` wheel built beside it
(``python packaging/build_dists.py``).  biaskit finds them through :mod:`importlib.resources`
(``biaskit.core.paths``); nothing here needs importing by hand.

``MANIFEST.json`` lists every file with its size and sha256 (taken when the wheel was built, after
checking each file against the sha256 its ``PROVENANCE.md`` records); :func:`verify` checks the
installed files against it.
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path

__version__ = "0.0.0"  # replaced by the build (packaging/build_dists.py) with biaskit's version

MANIFEST = "MANIFEST.json"


def root() -> Path:
    """The folder holding ``data/``, ``wordlists/``, ``notebooks/``, ``experiments/`` and the manifest."""
    return Path(str(resources.files(__name__)))


def manifest() -> dict:
    """The build's manifest: ``{"version": ..., "files": {relative path: {"size": n, "sha256": hex}}}``."""
    return json.loads((root() / MANIFEST).read_text(encoding="utf-8"))


def verify() -> int:
    """Check every installed file against the manifest (presence, size, sha256); returns the number
    of files checked.  Raises ``ValueError`` naming the missing or damaged files and the fix."""
    base = root()
    files = manifest()["files"]
    problems = []
    for rel, entry in files.items():
        path = base / rel
        if not path.is_file():
            problems.append(f"{rel}: missing")
        elif path.stat().st_size != entry["size"]:
            problems.append(f"{rel}: {path.stat().st_size} bytes, the manifest says {entry['size']}")
        elif hashlib.sha256(path.read_bytes()).hexdigest() != entry["sha256"]:
            problems.append(f"{rel}: sha256 differs from the manifest")
    if problems:
        shown = "; ".join(problems[:10]) + (f"; and {len(problems) - 10} more" if len(problems) > 10 else "")
        raise ValueError(
            f"biaskit-data {__version__} at {base} is damaged ({len(problems)} of {len(files)} files): {shown}. "
            f"Reinstall it: pip install --force-reinstall dist/biaskit_data-{__version__}-py3-none-any.whl "
            "(the data wheel `make dist` builds in a checkout of the repository)"
        )
    return len(files)
