"""The disk cache of sentence scores: one JSON-lines file per model, metric and dataset; resumable,
checksummed.

Sentence scores (with their per-token log-probabilities) are appended, chunk by chunk, to a file under
``cache_dir()/pll/``, keyed by the model (name + revision, or a hash of the weights for in-process models:
:meth:`biaskit.lm.base.LanguageModel.fingerprint`), the metric and the dataset hash; an interrupted run
resumes where it stopped.  Each record carries a key of its texts (:func:`example_key`), so a changed row
is recomputed.  Masked and causal scores share the layout (causal fingerprints include the kind).

Integrity: each record (one line) names the cache file it belongs to (:func:`cache_key`: the model folder
and the file name, i.e. model, fingerprint, metric and dataset hash) and ends with the sha256 of the rest of
its bytes (:func:`encode_record`).  On read (:func:`read_cache`) a record whose checksum does not match (one
changed digit), a record of another cache file (a file swapped in from another model or dataset), a
truncated line (an interrupted write), bytes that do not decode and records of an earlier cache format
(version 1: no checksum; 2: no file key) are never used: one WARNING names the file, how many records and
which lines, the file is rewritten without them (under a unique temporary name, then renamed), and the
caller recomputes those rows.  A file that others could have written
(:func:`biaskit.core.io.unsafe_permissions`) is not used at all.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from biaskit.core.io import atomic_write_bytes, unsafe_permissions
from biaskit.core.paths import cache_dir, cache_name
from biaskit.lm.base import LanguageModel

__all__ = [
    "CACHE_VERSION",
    "append_records",
    "cache_file",
    "cache_key",
    "encode_record",
    "example_key",
    "open_for_append",
    "read_cache",
]

logger = logging.getLogger(__name__)

#: version of the record layout; records of another version are not used (recomputed, with a WARNING).
#: 3: every record names its cache file (``"file"``, :func:`cache_key`) and ends with the sha256 of its
#: payload (:func:`encode_record`); 2 had the checksum only
CACHE_VERSION = 3

_SHA_MARK = b', "sha256": "'
_SHA_TAIL = len(_SHA_MARK) + 64 + 2  # the mark, 64 hex digits, '"}'


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


def cache_key(path: Path) -> str:
    """The key every record of the cache file ``path`` carries: ``"<model folder>/<file name>"``, which
    :func:`cache_file` builds from the model's name and fingerprint, the metric and the dataset hash."""
    return f"{path.parent.name}/{path.name}"


def encode_record(rec: dict[str, Any], key: str) -> str:
    """One cache line (with its ``"\\n"``): ``rec`` as JSON (ASCII) with the version ``"v"``, the cache file's
    key ``"file"`` (:func:`cache_key`) and a last field ``"sha256"``, the sha256 of the JSON of the rest,
    so :func:`read_cache` checks the bytes as written without serialising them again."""
    payload = json.dumps({**rec, "v": CACHE_VERSION, "file": key}).encode("ascii")
    digest = hashlib.sha256(payload).hexdigest()
    return payload[:-1].decode("ascii") + f'{_SHA_MARK.decode()}{digest}"}}\n'


def _decode_line(line: bytes, key: str) -> tuple[dict[str, Any] | None, str]:
    """``(record, "")`` for a sound line of the cache file of key ``key``; ``(None, why)`` otherwise (``why``
    = ``"old"`` for a record of an earlier format, else the damage)."""
    cut = len(line) - _SHA_TAIL
    if cut > 0 and line[cut : cut + len(_SHA_MARK)] == _SHA_MARK and line.endswith(b'"}'):
        payload = line[:cut] + b"}"
        if hashlib.sha256(payload).hexdigest().encode() != line[cut + len(_SHA_MARK) : -2]:
            return None, "checksum mismatch"
        try:
            rec = json.loads(payload)
        except ValueError:  # cannot happen for a line biaskit wrote: the checksum matched
            return None, "undecodable"
        if (
            not isinstance(rec, dict)
            or rec.get("v") != CACHE_VERSION
            or "row" not in rec
            or "sides" not in rec
        ):
            return None, "old" if isinstance(rec, dict) and "v" in rec else "not a score record"
        if rec.get("file") != key:
            return None, "a record of another cache file"
        return rec, ""
    try:
        rec = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None, "truncated or undecodable"
    if isinstance(rec, dict) and isinstance(rec.get("v"), int) and rec.get("v") != CACHE_VERSION:
        return None, "old"
    return None, "no checksum"


def read_cache(path: Path, key: str | None = None) -> dict[int, dict[str, Any]]:
    """The sound cached records of ``path`` by row (a later record of a row wins).

    ``key`` is the file's cache key (default :func:`cache_key` of ``path``).  Records that fail their
    checksum, belong to another cache file, are truncated (an interrupted write) or do not decode, and
    records of an earlier cache format, are not returned: a WARNING names ``path``, how many there are
    and their lines, and the file is rewritten with the sound records only (so the rows recomputed and
    appended next are not joined to a half line, and the warning is not repeated).  An unreadable file
    is logged and treated as empty; a file others could have written is logged, not read, and replaced
    by an empty one of the owner's.
    """
    out: dict[int, dict[str, Any]] = {}
    if not path.exists():
        return out
    key = cache_key(path) if key is None else key
    unsafe = unsafe_permissions(path)
    if unsafe:
        logger.warning("score cache %s is not used: %s; every row is recomputed", path, unsafe)
        _rewrite(path, [])
        return out
    try:
        data = path.read_bytes()
    except OSError as exc:
        logger.warning("score cache %s cannot be read (%s); every row is recomputed", path, exc)
        return out
    kept: list[bytes] = []
    damaged: list[tuple[int, str]] = []
    old: list[int] = []
    for n, raw in enumerate(data.split(b"\n"), 1):
        line = raw.strip()
        if not line:
            continue
        rec, why = _decode_line(line, key)
        if rec is None:
            if why == "old":
                old.append(n)
            else:
                damaged.append((n, why))
            continue
        out[int(rec["row"])] = rec
        kept.append(line)
    if damaged:
        kinds = sorted({why for _, why in damaged})
        logger.warning(
            "score cache %s: %d damaged record(s) (%s) at line(s) %s of %d; they are not used and are "
            "recomputed",
            path,
            len(damaged),
            ", ".join(kinds),
            [n for n, _ in damaged[:10]] + (["..."] if len(damaged) > 10 else []),
            len(kept) + len(damaged) + len(old),
        )
    if old:
        logger.warning(
            "score cache %s: %d record(s) of an earlier cache format (no checksum; this biaskit writes "
            "version %d) are not used and are recomputed",
            path,
            len(old),
            CACHE_VERSION,
        )
    if damaged or old or (data and not data.endswith(b"\n")):
        _rewrite(path, kept)
    return out


def _rewrite(path: Path, lines: list[bytes]) -> None:
    """Replace ``path`` by ``lines`` (a unique temporary file, then renamed; readable by the owner only).
    Best effort: a failure (a full disk) is a WARNING naming the file."""
    try:
        atomic_write_bytes(path, b"".join(line + b"\n" for line in lines), private=True)
    except OSError as exc:
        logger.warning("score cache %s could not be rewritten without its unused records (%s)", path, exc)


def open_for_append(path: Path) -> IO[str] | None:
    """``path`` opened to append records (created readable by the owner only), or None with a WARNING
    naming the file when it cannot be (a full disk, no permission): the scores are then computed without
    the cache."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        return os.fdopen(fd, "a", encoding="utf-8")
    except OSError as exc:
        logger.warning("score cache %s cannot be written (%s); the scores are computed without it", path, exc)
        return None


def append_records(fh: IO[str], lines: Sequence[str], path: Path) -> bool:
    """Append encoded records (:func:`encode_record`) to ``fh`` and flush; False, with a WARNING naming
    ``path``, when the write fails (a full disk): the caller stops caching (the scores are still computed
    and returned; a record cut short is found and dropped by the next :func:`read_cache`)."""
    try:
        fh.writelines(lines)
        fh.flush()
    except OSError as exc:
        logger.warning(
            "score cache %s: writing records failed (%s); the rest of the job is not cached", path, exc
        )
        return False
    return True
