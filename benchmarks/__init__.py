"""Benchmarks: each ``bench_*.py`` module compares a vectorised biaskit routine with a naive reference."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def best_of(fn: Callable[[], Any], repeat: int = 1) -> tuple[float, Any]:
    """Best of ``repeat`` wall-clock timings of ``fn()`` (the machine is shared) and its last result."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out
