"""The disk cache of :func:`biaskit.lm.slot_scores.slot_scores`: one ``.npz`` file per call.

The per-template log-probabilities of each (template set, context words, predicted words) call are stored
under ``cache_dir()/indirect_bias/<model>-<cache id>/<key>.npz``, keyed by a hash of the model
(:meth:`biaskit.lm.xlnet.BridgeLM.cache_id`: its fingerprint and the reading options) and all inputs, so a
full run of the indirect score (minutes on a GPU, an hour-scale batch job on CPU for the base models)
resumes call by call.  Like the sentence-score cache (:mod:`biaskit.lm.cache`) the folder is named after
the model and its fingerprint, and a record of another :data:`SLOT_CACHE_VERSION` is never read; a file is
written under a unique temporary name and renamed (:func:`biaskit.core.io.atomic_write`), so an
interrupted write leaves no half file and parallel writers never collide.  Writing is best effort: a full
disk is a WARNING naming the file, and the scores are still returned.

Integrity: each file stores, beside the two arrays, its format (:data:`SLOT_CACHE_FORMAT`), its cache key
and the sha256 of the key and of the arrays' dtype, shape and bytes (:func:`slot_cache_checksum`).  On read
(:func:`read_slot_cache`) a file whose checksum does not match (one changed number), a file of another
cache key (a file swapped in from another call or model), a truncated file, bytes that do not decode, a
file of an earlier format (no key or no checksum), a file others could have written, and arrays of
another shape than the call's are never used: a WARNING names the file and why, and the caller recomputes
the call (and overwrites the file).  Files are read with ``allow_pickle=False``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from biaskit.core.io import atomic_write, unsafe_permissions
from biaskit.core.paths import cache_dir, cache_name
from biaskit.data.louis_alexandre import FeatureSet, TemplateSet
from biaskit.lm.xlnet import BridgeLM

__all__ = [
    "SLOT_CACHE_FORMAT",
    "SLOT_CACHE_VERSION",
    "read_slot_cache",
    "slot_cache_checksum",
    "slot_cache_key",
    "slot_cache_path",
    "write_slot_cache",
]

logger = logging.getLogger(__name__)

#: version of the key layout; a changed version gives new keys (the old files are not read)
SLOT_CACHE_VERSION = 1

#: version of the file layout; a file of another format is not used (recomputed, with a WARNING).
#: 3: the file stores ``format``, its cache ``key`` and ``sha256`` (:func:`slot_cache_checksum`, over the
#: key and the arrays) beside the arrays (2: format and checksum, no key; 1: the arrays only).  Unlike
#: :data:`SLOT_CACHE_VERSION` it is not part of the key, so an old file is found, reported and replaced
#: rather than left behind unread.
SLOT_CACHE_FORMAT = 3

_ARRAYS = ("log_p_tgt", "log_p_prior")


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


def slot_cache_checksum(log_p_tgt: np.ndarray, log_p_prior: np.ndarray, key: str) -> str:
    """The sha256 (hex) of a file's content as stored: the format and the cache key, then each array's
    name, dtype, shape and C-order bytes."""
    h = hashlib.sha256(f"biaskit slot cache|{SLOT_CACHE_FORMAT}|key|{key}".encode())
    for name, a in zip(_ARRAYS, (log_p_tgt, log_p_prior), strict=True):
        a = np.ascontiguousarray(a)
        h.update(f"|{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def read_slot_cache(
    path: Path, shape: tuple[int, int, int] | None = None, key: str | None = None
) -> tuple[np.ndarray, np.ndarray] | None:
    """``(log_p_tgt, log_p_prior)`` stored at ``path``, or None when there is no file or it must not be used.

    ``key`` is the call's cache key (:func:`slot_cache_key`; default: the file's name without ``.npz``,
    which :func:`slot_cache_path` makes it).  A file that others could have written
    (:func:`biaskit.core.io.unsafe_permissions`), that cannot be read or decoded (truncated, damaged
    bytes), of an earlier format (no key or no checksum), of another cache key (swapped in from another
    call), whose checksum does not match, or (given ``shape``, the ``(templates, context words, predicted
    words)`` of the call) whose arrays have another shape, is not used: a WARNING names the file and why,
    and None is returned so that the caller recomputes (and overwrites the file).
    """
    if not path.exists():
        return None
    why = unsafe_permissions(path) or _check(path, shape, path.stem if key is None else key)
    if isinstance(why, str):
        logger.warning("slot-score cache %s: %s; it is not used and is recomputed", path, why)
        return None
    return why


def _check(path: Path, shape: tuple[int, int, int] | None, key: str) -> tuple[np.ndarray, np.ndarray] | str:
    """The arrays of a sound file of cache key ``key``, or the reason it is not used."""
    try:
        with np.load(path, allow_pickle=False) as z:
            names = set(z.files)
            if "sha256" not in names or "format" not in names:
                return (
                    "a file of an earlier cache format (no checksum; this biaskit writes format "
                    f"{SLOT_CACHE_FORMAT})"
                )
            fmt = int(z["format"])
            if fmt != SLOT_CACHE_FORMAT or "key" not in names:
                return f"a file of cache format {fmt} (this biaskit writes format {SLOT_CACHE_FORMAT})"
            stored, stored_key = str(z["sha256"]), str(z["key"])
            tgt, prior = z["log_p_tgt"], z["log_p_prior"]
    except Exception as exc:  # any failure to decode a damaged zip or npy is reported, never raised
        return f"unreadable: truncated or damaged ({type(exc).__name__}: {exc})"
    if stored_key != key:
        return (
            f"a file of another cache key ({stored_key[:20]!r}, not {key[:20]!r}): swapped in from another "
            "call"
        )
    if slot_cache_checksum(tgt, prior, stored_key) != stored:
        return "checksum mismatch (the stored numbers were changed)"
    if shape is not None and (tgt.shape != tuple(shape) or prior.shape != (shape[0], shape[2])):
        return f"arrays of shape {tgt.shape} / {prior.shape}, not {tuple(shape)} / {(shape[0], shape[2])}"
    return tgt, prior


def write_slot_cache(
    path: Path, log_p_tgt: np.ndarray, log_p_prior: np.ndarray, key: str | None = None
) -> bool:
    """Store one call's log-probabilities with their format, cache key (default: the file's name without
    ``.npz``) and checksum, under a unique temporary name then renamed, readable by the owner only.

    Best effort: a full disk or another write error is a WARNING naming the file (nothing is left behind)
    and False is returned; True when the file is in place."""
    key = path.stem if key is None else key
    log_p_tgt, log_p_prior = np.ascontiguousarray(log_p_tgt), np.ascontiguousarray(log_p_prior)
    try:
        with atomic_write(path, "wb", private=True) as fh:
            np.savez(
                fh,
                allow_pickle=False,
                log_p_tgt=log_p_tgt,
                log_p_prior=log_p_prior,
                format=np.int64(SLOT_CACHE_FORMAT),
                key=np.str_(key),
                sha256=np.str_(slot_cache_checksum(log_p_tgt, log_p_prior, key)),
            )
    except OSError as exc:
        logger.warning(
            "slot-score cache %s could not be written (%s); the scores are used without it and are "
            "computed again next time",
            path,
            exc,
        )
        return False
    return True
