"""The disk cache of sentence scores: one JSON-lines file per model, metric and dataset; resumable.

Sentence scores (with their per-token log-probabilities) are appended, chunk by chunk, to a file under
``cache_dir()/pll/``, keyed by the model (name + revision, or a hash of the weights for in-process models:
:meth:`biaskit.lm.base.LanguageModel.fingerprint`), the metric and the dataset hash; an interrupted run
resumes where it stopped.  Each record carries a key of its texts (:func:`example_key`), so a changed row
is recomputed.  Masked and causal scores share the layout (causal fingerprints include the kind).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from biaskit.core.paths import cache_dir, cache_name
from biaskit.lm.base import LanguageModel

__all__ = ["CACHE_VERSION", "cache_file", "example_key", "read_cache"]

logger = logging.getLogger(__name__)

#: version of the record layout; records of another version are ignored (recomputed)
CACHE_VERSION = 1


def example_key(metric: str, lowercase: bool, texts: Sequence[Any], order: str | None = None) -> str:
    """Cache key of one example; ``order="antistereo"`` (``cp`` pairs aligned as (side 1, side 0))
    gives a different key from the default order, whose keys are unchanged from earlier versions."""
    h = hashlib.sha256(f"{metric}|{lowercase}|".encode())
    for t in texts:
        h.update(b"\x1f" + str(t).encode("utf-8", "surrogatepass"))
    if order is not None and order != "stereo":
        h.update(f"\x1eorder={order}".encode())
    return h.hexdigest()[:16]


def cache_file(lm: LanguageModel, metric: str, dataset_hash: str) -> Path:
    """The JSON-lines file of one model, metric and dataset: ``cache_dir()/pll/<model>-<fingerprint>/``."""
    folder = f"{cache_name(lm.name, 60)}-{lm.fingerprint()}"
    return cache_dir() / "pll" / folder / f"{metric}-{dataset_hash}.jsonl"


def read_cache(path: Path) -> dict[int, dict[str, Any]]:
    """The cached records of ``path`` by row; truncated lines (an interrupted write) are logged and skipped."""
    out: dict[int, dict[str, Any]] = {}
    if not path.exists():
        return out
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                logger.warning("%s line %d is truncated (interrupted write?); it will be recomputed", path, n)
                continue
            if rec.get("v") != CACHE_VERSION or "row" not in rec:
                continue
            out[int(rec["row"])] = rec
    return out
