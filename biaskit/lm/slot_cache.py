"""The disk cache of :func:`biaskit.lm.slot_scores.slot_scores`: one ``.npz`` file per call.

The per-template log-probabilities of each (template set, context words, predicted words) call are stored
under ``cache_dir()/indirect_bias/<model>-<cache id>/<key>.npz``, keyed by a hash of the model
(:meth:`biaskit.lm.xlnet.BridgeLM.cache_id`: its fingerprint and the reading options) and all inputs, so a
full run of the indirect score (minutes on a GPU, an hour-scale batch job on CPU for the base models)
resumes call by call.  Like the sentence-score cache (:mod:`biaskit.lm.cache`) the folder is named after
the model and its fingerprint, and a record of another :data:`SLOT_CACHE_VERSION` is never read; a file is
written to a temporary name and renamed, so an interrupted write leaves no half file, and an unreadable
one is logged and recomputed.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from biaskit.core.paths import cache_dir, cache_name
from biaskit.data.louis_alexandre import FeatureSet, TemplateSet
from biaskit.lm.xlnet import BridgeLM

__all__ = ["SLOT_CACHE_VERSION", "read_slot_cache", "slot_cache_key", "slot_cache_path", "write_slot_cache"]

logger = logging.getLogger(__name__)

#: version of the key layout; a changed version gives new keys (the old files are not read)
SLOT_CACHE_VERSION = 1


def slot_cache_key(
    bridge: BridgeLM, ts: TemplateSet, context: Sequence[str], fs: FeatureSet, rules: Mapping[str, Any]
) -> str:
    """The cache key of one :func:`~biaskit.lm.slot_scores.slot_scores` call: a hash of the model's
    :meth:`~biaskit.lm.xlnet.BridgeLM.cache_id` and every input that changes the numbers."""
    h = hashlib.sha256()
    payload = [
        SLOT_CACHE_VERSION,
        bridge.cache_id(),
        ts.target_category,
        list(ts.templates),
        list(ts.forms),
        list(context),
        fs.category,
        list(fs.classes),
        {c: dict(fs.forms[c]) for c in fs.classes},
        {k: rules.get(k) for k in ("irregular_plurals", "countries_with_article")},
    ]
    h.update(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode())
    return h.hexdigest()[:20]


def slot_cache_path(bridge: BridgeLM, key: str) -> Path:
    """``cache_dir()/indirect_bias/<model>-<cache id>/<key>.npz``."""
    return cache_dir() / "indirect_bias" / f"{cache_name(bridge.name, 50)}-{bridge.cache_id()}" / f"{key}.npz"


def read_slot_cache(path: Path) -> tuple[np.ndarray, np.ndarray] | None:
    """``(log_p_tgt, log_p_prior)`` stored at ``path``; None when there is no file or it is unreadable (logged)."""
    if not path.exists():
        return None
    try:
        with np.load(path) as z:
            return z["log_p_tgt"], z["log_p_prior"]
    except (OSError, ValueError, KeyError):
        logger.warning("cache file %s is unreadable; recomputing", path)
        return None


def write_slot_cache(path: Path, log_p_tgt: np.ndarray, log_p_prior: np.ndarray) -> None:
    """Store one call's log-probabilities (written to a temporary file, then renamed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, log_p_tgt=log_p_tgt, log_p_prior=log_p_prior)
    tmp.replace(path)
