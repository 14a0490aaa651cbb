"""Helpers the notebooks use to save headline numbers and figures under ``results/``.

Every study notebook ends with :func:`save_results` so that reruns can be
compared file by file (``results/<notebook>.json``) and the HTML report can
show the headline numbers next to the figures.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import platform
from pathlib import Path
from typing import Any

from biaskit.paths import results_dir
from biaskit.results import TestResult

__all__ = ["save_figure", "save_results", "to_jsonable"]


def to_jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays, TestResults, tuples, paths and NaN to plain JSON values."""
    if isinstance(obj, TestResult):
        return obj.to_dict()
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "to_dict") and callable(obj.to_dict) and not isinstance(obj, type):
        try:
            return to_jsonable(obj.to_dict())
        except TypeError:
            pass
    try:
        import numpy as np

        if isinstance(obj, np.ndarray):
            return to_jsonable(obj.tolist())
        if isinstance(obj, np.generic):
            obj = obj.item()
    except ImportError:  # pragma: no cover
        pass
    if isinstance(obj, float) and (math.isnan(obj) or math.isinf(obj)):
        return None
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return str(obj)


def save_results(name: str, results: dict[str, Any], *, out_dir: str | Path | None = None) -> Path:
    """Write ``results/<name>.json`` with the headline numbers and run metadata; return its path."""
    out = Path(out_dir) if out_dir is not None else results_dir()
    out.mkdir(parents=True, exist_ok=True)
    payload = {
        "notebook": name,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "results": to_jsonable(results),
    }
    path = out / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def save_figure(fig: Any, name: str, *, out_dir: str | Path | None = None, dpi: int = 120) -> Path:
    """Save a matplotlib figure as ``results/<name>.png`` (tight bounding box); return its path."""
    out = Path(out_dir) if out_dir is not None else results_dir()
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.png"
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    return path
