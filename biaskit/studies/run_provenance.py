"""Where and how a recorded run ran: the machine, the package versions and commit, the model's files, the time.

A kept record of a long run (``records/<name>/record.json``, written by a script outside ``make
reproduce``) carries these so that a reader can tell what produced its numbers.  Used by
:mod:`biaskit.studies.mt_gender_record` and :mod:`biaskit.studies.domain_model_record`.
"""

from __future__ import annotations

import datetime
import math
import os
import platform
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from biaskit.core.paths import REPO_ROOT

__all__ = ["git_commit", "machine", "model_files", "now", "plain", "versions"]


def machine() -> dict[str, Any]:
    """The CPU model (from ``lscpu`` where there is one), the number of cores, the platform and the host name."""
    cpu = platform.processor() or platform.machine()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False, timeout=10).stdout
        for line in out.splitlines():
            if line.lower().startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except (OSError, subprocess.SubprocessError):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "platform": platform.platform(), "node": platform.node()}


def git_commit() -> str | None:
    """The commit of biaskit's checkout (``git rev-parse HEAD``), or ``None`` outside a checkout."""
    try:
        res = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip() or None


def versions() -> dict[str, Any]:
    """biaskit's version and git commit (``None`` outside a checkout), Python, torch, transformers, numpy, pandas."""
    import numpy
    import pandas
    import torch
    import transformers

    from biaskit.core.paths import package_version

    return {
        "biaskit": package_version(),
        "git_commit": git_commit(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "numpy": numpy.__version__,
        "pandas": pandas.__version__,
    }


def model_files(lm: Any) -> dict[str, str]:
    """sha256 of every file of a model's folder (a bundled or local model's name is its folder); {} otherwise."""
    from biaskit.core.io import sha256_file

    folder = Path(str(getattr(lm, "name", lm)))
    if not folder.is_dir():
        return {}
    return {f.name: sha256_file(f) for f in sorted(folder.iterdir()) if f.is_file()}


def now() -> str:
    """The current time in UTC, to the second, ISO 8601."""
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat()


def plain(obj: Any) -> Any:
    """A JSON-ready copy: numpy scalars and arrays as Python values, tuples as lists, NaN and infinities as
    ``None``, objects with ``to_dict`` (a TestResult, a table) as their dict, paths as strings."""
    if isinstance(obj, Mapping):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [plain(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "to_dict") and callable(obj.to_dict) and not isinstance(obj, type):
        return plain(obj.to_dict())
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):
        return plain(obj.tolist())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return str(obj)
