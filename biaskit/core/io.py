"""One family of readers for the whole package: CSV, JSON (plain, gzipped, strict), checksums, reports.

Every reader here fails loudly and names the file: a problem it can pin down (a byte that is not
UTF-8, a JSON syntax error, a key given twice, a CSV record with the wrong number of fields, a quote
never closed) becomes a ``ValueError`` with the file, line and column, or an issue record for a
:class:`ValidationReport` with its file line, never a silent drop.

* :class:`ValidationReport` (with :func:`issue_record`): what a loader repaired, left out or kept
  despite a doubt, with line numbers and counts ("loaded 29 of 1503 data records");
* :func:`read_csv_lines` (-> :class:`CsvParse`) and :func:`check_csv_header`: a CSV parsed record
  by record, every unusable record reported with its lines;
* :func:`read_json_file`: a ``.json`` / ``.json.gz`` file (truncated gzip, bad JSON, not UTF-8);
* :func:`read_json`: a strict UTF-8 JSON file that refuses repeated keys;
* :func:`decode_text` (with :func:`wide_text_encoding`): bytes to text, a byte that cannot be
  decoded named with its line, a UTF-16 / UTF-32 file named as such, and a fix that works;
* :func:`sha256_file` and :class:`ChecksumError`: file checksums;
* :func:`unique_in_order`: the first occurrence of each item, and the repeats (every de-duplicating
  helper of the package logs its own message from it).

pandas is imported when a report is built, not with this module, so that the readers of plain
files stay light to import (:mod:`biaskit.data.corpus` uses :func:`sha256_file`).
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import errno
import gzip
import hashlib
import io
import json
import logging
import os
import shutil
import stat
import tempfile
import zlib
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

from biaskit.core.paths import SHARED_CACHE_ENV

if TYPE_CHECKING:
    import pandas as pd

logger = logging.getLogger(__name__)

__all__ = [
    "REPORT_COLUMNS",
    "ChecksumError",
    "CsvParse",
    "ValidationReport",
    "check_csv_header",
    "decode_text",
    "issue_record",
    "read_csv_lines",
    "read_json",
    "read_json_file",
    "CACHE_SIDECAR_FORMAT",
    "CHECKSUM_SUFFIX",
    "DiskFullError",
    "atomic_path",
    "atomic_write",
    "atomic_write_bytes",
    "atomic_write_text",
    "cache_file_problem",
    "checksum_line",
    "checksum_sidecar",
    "recorded_sha256",
    "sha256_file",
    "unique_in_order",
    "unsafe_permissions",
    "wide_text_encoding",
    "write_cache_checksum",
]

H = TypeVar("H", bound=Hashable)

_CHUNK = 1 << 20


# ---------------------------------------------------------------------------------------------
# de-duplication
# ---------------------------------------------------------------------------------------------
def unique_in_order(items: Iterable[H]) -> tuple[list[H], list[H]]:
    """``(kept, repeated)``: each item's first occurrence in order, and every later occurrence in order.

    ``len(kept) + len(repeated)`` is the number of items.  The callers (word lists, WEAT's word
    sets, training sentences) log the repeats each in their own words.
    """
    seen: set[H] = set()
    kept: list[H] = []
    repeated: list[H] = []
    for item in items:
        if item in seen:
            repeated.append(item)
            continue
        seen.add(item)
        kept.append(item)
    return kept, repeated


# ---------------------------------------------------------------------------------------------
# checksums
# ---------------------------------------------------------------------------------------------
class ChecksumError(ValueError):
    """A file does not have the expected sha256 or size: a download, a cached file, a bundled model
    (:func:`biaskit.lm.catalogue.verify_model`) or a trained model about to be bundled
    (:func:`biaskit.training.recipes.train_model`) that is damaged, truncated or replaced.  The message
    names the file and the fix; nothing is loaded from it."""


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


#: the suffix of a file's sha256 sidecar (``corpus.json.gz`` -> ``corpus.json.gz.sha256``): the cache files,
#: the training checkpoints and the files of trained models (:mod:`biaskit.training.loop`) all write theirs
#: with :func:`write_cache_checksum`
CHECKSUM_SUFFIX = ".sha256"


def checksum_sidecar(path: str | Path) -> Path:
    """The sha256 sidecar of ``path``: ``path`` + :data:`CHECKSUM_SUFFIX`."""
    path = Path(path)
    return path.with_name(path.name + CHECKSUM_SUFFIX)


def checksum_line(data_file: str | Path, name: str) -> str:
    """The sidecar text for ``data_file`` recorded under the file name ``name``: ``"<sha256>  <name>\\n"``."""
    return f"{sha256_file(data_file)}  {name}\n"


def recorded_sha256(side: str | Path) -> str | None:
    """The sha256 a sidecar records, or None when it is missing, unreadable or holds no 64-digit sum."""
    try:
        text = Path(side).read_text(encoding="utf-8").split()
    except (OSError, UnicodeDecodeError):
        return None
    return text[0] if text and len(text[0]) == 64 else None


#: the format of a cache file's sidecar written by :func:`write_cache_checksum` (JSON: file name, cache
#: key, sha256 and size); a sidecar of another format (the plain ``"<sha256>  <name>"`` line of biaskit before
#: it) makes its file unusable, so it is rebuilt
CACHE_SIDECAR_FORMAT = 2


class DiskFullError(OSError):
    """A write ran out of space (``ENOSPC``) or quota (``EDQUOT``).  The message names the file and the
    bytes it needed; the target file is left as it was (no partial file)."""


def _disk_full(exc: OSError, path: Path, needed: int | None) -> DiskFullError:
    try:
        free = shutil.disk_usage(path.parent).free
        free_txt = f"; {free:,} bytes are free there"
    except OSError:
        free_txt = ""
    need_txt = f" (at least {needed:,} bytes)" if needed else ""
    err = DiskFullError(
        exc.errno,
        f"no space left to write {path}{need_txt}{free_txt}: free some space on that disk, or write "
        f"elsewhere (another --out, or BIASKIT_CACHE_DIR / BIASKIT_RESULTS_DIR on a larger disk); "
        f"{path.name} was left as it was",
    )
    err.filename = str(path)
    return err


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


def _is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))


@contextlib.contextmanager
def atomic_path(
    path: str | os.PathLike[str], *, suffix: str | None = None, private: bool = False
) -> Iterator[Path]:
    """A unique temporary path in ``path``'s folder to write ``path`` to; renamed onto ``path`` on success.

    For writers that take a file name (``np.savez``, ``safetensors.torch.save_file``, ``torch.save``,
    ``fig.savefig``): ``with atomic_path(out) as tmp: writer(tmp)``.  The temporary name is made by
    :func:`tempfile.mkstemp` (unique across processes and threads, so parallel writers never share or
    delete each other's file) and keeps ``suffix`` (default: ``path``'s own suffix) so that writers that
    choose a format from the name still do.  On success it is moved onto ``path`` with :func:`os.replace`
    (atomic on one file system: a reader sees the old file or the new one, never half of one); on any
    failure it is removed and ``path`` is left as it was.  A full disk raises :class:`DiskFullError`
    naming ``path``.  The folder is created when missing.  The file gets the permissions of a plain new
    file (``0o666`` less the umask), or ``0o600`` with ``private=True`` (cache files).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sfx = path.suffix if suffix is None else suffix
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=f".tmp{sfx}")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        os.chmod(tmp, 0o600 if private else 0o666 & ~_UMASK)
        yield tmp
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if _is_disk_full(exc) and not isinstance(exc, DiskFullError):
            raise _disk_full(exc, path, None) from exc  # type: ignore[arg-type]
        raise


@contextlib.contextmanager
def atomic_write(
    path: str | os.PathLike[str],
    mode: str = "w",
    *,
    encoding: str | None = "utf-8",
    newline: str | None = None,
    private: bool = False,
) -> Iterator[IO[Any]]:
    """Open a unique temporary file beside ``path`` for writing; on success it replaces ``path`` atomically.

    ``with atomic_write(out) as fh: fh.write(text)``.  ``mode`` is ``"w"`` (text, ``encoding``) or ``"wb"``.
    The data are flushed and fsync'ed before the rename, so a crash leaves the old file or the whole new
    one.  A failure inside the block, or a full disk (:class:`DiskFullError`, naming ``path`` and the bytes
    it needed), removes the temporary file and leaves ``path`` untouched.  See :func:`atomic_path`.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write writes a whole file: mode must be 'w' or 'wb', got {mode!r}")
    path = Path(path)
    with atomic_path(path, private=private) as tmp:
        kwargs: dict[str, Any] = {} if mode == "wb" else {"encoding": encoding, "newline": newline}
        with open(tmp, mode, **kwargs) as fh:
            try:
                yield fh
                fh.flush()
                os.fsync(fh.fileno())
            except OSError as exc:
                if _is_disk_full(exc) and not isinstance(exc, DiskFullError):
                    raise _disk_full(exc, path, _written(fh)) from exc
                raise


def _written(fh: IO[Any]) -> int | None:
    try:
        return fh.tell() or None
    except (OSError, ValueError):
        return None


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, private: bool = False) -> None:
    """Write ``data`` to ``path`` atomically (:func:`atomic_write`); a full disk raises
    :class:`DiskFullError` naming ``path`` and ``len(data)``."""
    path = Path(path)
    try:
        with atomic_write(path, "wb", private=private) as fh:
            fh.write(data)
    except DiskFullError as exc:
        raise _disk_full(exc, path, len(data)) from exc.__cause__


def atomic_write_text(
    path: str | os.PathLike[str], text: str, *, encoding: str = "utf-8", private: bool = False
) -> None:
    """Write ``text`` to ``path`` atomically (:func:`atomic_write_bytes`)."""
    atomic_write_bytes(path, text.encode(encoding), private=private)


def write_cache_checksum(path: str | Path, key: str) -> None:
    """Record the sha256 of the cache file ``path`` beside it (``path.sha256``), with its name and cache key.

    The sidecar is JSON, ``{"format": 2, "file": name, "key": key, "sha256": ..., "size": ...}``, written
    atomically under a unique temporary name (parallel writers never collide).  ``key`` is what the
    cache entry was computed from (the digest in its file name, or a longer description): a file swapped
    in from another entry, even together with its sidecar, is refused by :func:`cache_file_problem`
    because the sidecar names another file or key.  Call it after the cache file itself is in place.
    """
    path = Path(path)
    record = {
        "format": CACHE_SIDECAR_FORMAT,
        "file": path.name,
        "key": str(key),
        "sha256": sha256_file(path),
        "size": path.stat().st_size,
    }
    atomic_write_text(checksum_sidecar(path), json.dumps(record, sort_keys=True) + "\n", private=True)


def cache_file_problem(path: str | Path, key: str) -> str | None:
    """Why the cache file ``path`` must not be used, or None when its sidecar vouches for it.

    Refused, with the reason returned for the caller to log (with the path) before it recomputes:

    * a file or folder that others may write, or owned by another user (:func:`unsafe_permissions`);
    * no ``.sha256`` sidecar (written by an earlier biaskit, or by a run killed between the two writes),
      an unreadable sidecar or one of an earlier format;
    * a sidecar that names another file or another cache key (a file swapped in with its sidecar);
    * a size or sha256 that differs from the recorded one (a changed or truncated byte).
    """
    path = Path(path)
    bad = unsafe_permissions(path)
    if bad:
        return bad
    side = checksum_sidecar(path)
    if not side.exists():
        return f"it has no checksum file {side.name} (written by an earlier biaskit, or cut short)"
    try:
        record = json.loads(side.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return f"its checksum file {side.name} is unreadable or of an earlier biaskit's format"
    if not isinstance(record, dict) or record.get("format") != CACHE_SIDECAR_FORMAT:
        return f"its checksum file {side.name} is of an earlier biaskit's format"
    if record.get("file") != path.name:
        return f"its checksum file {side.name} belongs to another file ({str(record.get('file'))[:80]!r})"
    if record.get("key") != str(key):
        return (
            f"its checksum file {side.name} belongs to another cache entry "
            f"(key {str(record.get('key'))[:40]!r})"
        )
    recorded = record.get("sha256")
    if not isinstance(recorded, str) or len(recorded) != 64:
        return f"its checksum file {side.name} holds no sha256"
    try:
        size = path.stat().st_size
    except OSError as exc:
        return f"it cannot be read ({exc.strerror})"
    if record.get("size") != size:
        return (
            f"its size {size:,} bytes differs from the {record.get('size')} bytes recorded "
            "when it was written"
        )
    got = sha256_file(path)
    if got != recorded:
        return f"its sha256 {got[:16]}... differs from the {recorded[:16]}... recorded when it was written"
    return None


def unsafe_permissions(path: str | Path) -> str | None:
    """Why ``path`` (a cache file or folder) could have been written by someone else, or None.

    A file or folder owned by another user, or writable by the group or by everyone, is not trusted
    (whoever can write it can plant a file and its checksum).  With ``BIASKIT_SHARED_CACHE=1`` (a cache
    shared on purpose by one team, :func:`biaskit.core.paths.cache_dir`) another owner and group write
    access are accepted, but a file or folder everyone can write never is.  Not checked on Windows.
    """
    if os.name != "posix":
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o002:
        return f"it is writable by everyone (mode {mode:o}), so it could hold anything"
    if os.environ.get(SHARED_CACHE_ENV, "") == "1":
        return None
    if st.st_uid != os.getuid():
        return f"it is owned by another user (uid {st.st_uid}), so it could hold anything"
    if mode & 0o020:
        return f"it is writable by other users (mode {mode:o}), so it could hold anything"
    return None


# ---------------------------------------------------------------------------------------------
# validation report
# ---------------------------------------------------------------------------------------------
#: The columns of :attr:`ValidationReport.issues`, in order.
REPORT_COLUMNS = ["row", "line", "column", "reason", "action", "text"]


def _empty_issues() -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(columns=REPORT_COLUMNS)


@dataclass(eq=False)  # identity: field-wise equality of DataFrames is ambiguous (pandas attrs compare)
class ValidationReport:
    """Rows of an input that were repaired or could not be used, and why.

    Attributes
    ----------
    issues:
        One row per problem: ``row`` (0-based position in the returned / given data, ``None``
        for a record that is not in the returned data at all, e.g. a malformed CSV record),
        ``line`` (1-based line in the source file when known, else ``None``),
        ``column``, ``reason`` (plain words), ``action`` (``"skipped"``: left out or unusable;
        ``"repaired"``; ``"kept"``: used as it is, but worth a look; ``"ignored"``: no data lost,
        e.g. a blank line) and ``text`` (the offending value, shortened).
    context:
        What was being validated ("Spanish CrowS-Pairs (original)", "cp scoring", ...).
    n_records, n_loaded:
        For a file loader: how many data records the file holds and how many were loaded
        (``None`` when not applicable).  A span of a CSV file that could not be split into
        records (a quote never closed) counts one record per non-blank line.
    """

    issues: pd.DataFrame = field(default_factory=_empty_issues)
    context: str = ""
    n_records: int | None = None
    n_loaded: int | None = None

    @classmethod
    def from_records(
        cls,
        records: Iterable[dict[str, Any]],
        context: str = "",
        *,
        n_records: int | None = None,
        n_loaded: int | None = None,
    ) -> ValidationReport:
        """A report from :func:`issue_record` dicts (any iterable of them, possibly empty)."""
        import pandas as pd

        df = pd.DataFrame(list(records), columns=REPORT_COLUMNS)
        return cls(issues=df.reset_index(drop=True), context=context, n_records=n_records, n_loaded=n_loaded)

    def __len__(self) -> int:
        return len(self.issues)

    @property
    def skipped_rows(self) -> list[int]:
        """0-based rows of the returned data that are unusable (sorted, unique).

        Records left out of the returned data altogether (``row`` is ``None``, e.g. a
        malformed CSV record) are not here: see :attr:`skipped_lines` and :attr:`n_skipped`.
        """
        sk = self.issues.loc[self.issues["action"] == "skipped", "row"]
        return sorted({int(r) for r in sk.dropna()})

    @property
    def skipped_lines(self) -> list[int]:
        """File lines (1-based) of every skipped problem, including records left out entirely."""
        sk = self.issues.loc[self.issues["action"] == "skipped", "line"]
        return sorted({int(r) for r in sk.dropna()})

    @property
    def n_skipped(self) -> int:
        """Number of problems whose action is ``"skipped"`` (with or without a row number)."""
        return int((self.issues["action"] == "skipped").sum())

    @property
    def repaired_rows(self) -> list[int]:
        """0-based rows of the returned data with a repaired cell (sorted, unique)."""
        sk = self.issues.loc[self.issues["action"] == "repaired", "row"]
        return sorted({int(r) for r in sk.dropna()})

    def counts_line(self) -> str | None:
        """``"loaded N of M data records"`` when the counts are known, else ``None``."""
        if self.n_records is None or self.n_loaded is None:
            return None
        return f"loaded {self.n_loaded} of {self.n_records} data records"

    def summary(self) -> str:
        """A few lines a non-programmer can read."""
        counts = self.counts_line()
        head = f"{self.context}: {counts}; " if counts else f"{self.context}: "
        if not len(self):
            return head + "no problems found."
        lines = [head + f"{len(self)} issue(s)"]
        for (reason, action), grp in self.issues.groupby(["reason", "action"], sort=False):
            where = grp["line"] if grp["line"].notna().all() else grp["row"]
            label = "lines" if grp["line"].notna().all() else "rows"
            uniq = sorted({int(x) for x in where.dropna()})
            shown = ", ".join(str(x) for x in uniq[:12])
            more = f" (+{len(uniq) - 12} more)" if len(uniq) > 12 else ""
            place = f" ({label} {shown}{more})" if uniq else ""
            lines.append(f"  - {action} {len(grp)}: {reason}{place}")
        return "\n".join(lines)

    def __str__(self) -> str:  # pragma: no cover - thin wrapper
        return self.summary()

    def _repr_html_(self) -> str:
        """The report in a notebook: its context (a file name, escaped) and the issues as a table."""
        from biaskit.core.html import escape_html, frame_html

        counts = self.counts_line()
        head = (
            f"<p><b>{escape_html(self.context)}</b>: {escape_html(counts + '; ' if counts else '')}"
            f"{len(self)} issue(s)</p>"
        )
        return head + (frame_html(self.issues, index=False) if len(self) else "")

    def log(self, log: logging.Logger | None = None, level: int = logging.WARNING) -> None:
        """Write :meth:`summary` to ``log`` (this module's logger by default), when there is anything to
        say."""
        if len(self):
            (log or logger).log(level, "%s", self.summary())

    def raise_if_any(self, actions: Sequence[str] = ("skipped",)) -> None:
        """Raise :class:`ValueError` listing the problems whose action is in ``actions``."""
        bad = self.issues[self.issues["action"].isin(actions)]
        if len(bad):
            sub = ValidationReport(
                issues=bad, context=self.context, n_records=self.n_records, n_loaded=self.n_loaded
            )
            raise ValueError(sub.summary() + "\n(pass errors='report' to skip these rows and go on)")

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data (JSON-ready apart from the cell values themselves)."""
        return {
            "context": self.context,
            "n_records": self.n_records,
            "n_loaded": self.n_loaded,
            "issues": self.issues.to_dict(orient="records"),
        }

    def __add__(self, other: ValidationReport) -> ValidationReport:
        import pandas as pd

        frames = [f for f in (self.issues, other.issues) if len(f)]
        issues = pd.concat(frames, ignore_index=True) if frames else self.issues.copy()
        ctx = (
            self.context
            if not other.context or other.context == self.context
            else f"{self.context}; {other.context}"
        )

        def _sum(a: int | None, b: int | None) -> int | None:
            return a if b is None else b if a is None else a + b

        return ValidationReport(
            issues=issues,
            context=ctx,
            n_records=_sum(self.n_records, other.n_records),
            n_loaded=_sum(self.n_loaded, other.n_loaded),
        )


def _short(text: Any, n: int = 80) -> str:
    s = repr(text) if not isinstance(text, str) else text
    return s if len(s) <= n else s[: n - 1] + "…"


def issue_record(
    line: int | None, reason: str, action: str, text: Any = "", *, row: Any = None, column: Any = None
) -> dict[str, Any]:
    """One issue for :class:`ValidationReport` (its :data:`REPORT_COLUMNS`; ``text`` shortened to 80
    characters)."""
    return {
        "row": row,
        "line": line,
        "column": column,
        "reason": reason,
        "action": action,
        "text": _short(text),
    }


# ---------------------------------------------------------------------------------------------
# text
# ---------------------------------------------------------------------------------------------
#: UTF-16 / UTF-32 byte-order marks, UTF-32 first (its little-endian mark starts with UTF-16's)
_WIDE_BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
)


def _is_wide(encoding: str) -> bool:
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        return False  # decoding names the unknown encoding
    return name.startswith(("utf-16", "utf-32"))


def wide_text_encoding(raw: bytes) -> tuple[str, str] | None:
    """``(codec, evidence)`` when ``raw`` is UTF-16 or UTF-32 text, else ``None``.

    Read from a byte-order mark (``ff fe`` / ``fe ff``: codec ``"utf-16"``; ``ff fe 00 00`` /
    ``00 00 fe ff``: ``"utf-32"``) or, without one, from NUL bytes in every second (UTF-16) or in
    three of every four (UTF-32) positions of the first 4 KiB, as ASCII-heavy text has them
    (codec ``"utf-16-le"``, ``"utf-32-be"`` ...).  The codec is one Python decodes the file with;
    the evidence says what was seen ("a UTF-16 byte-order mark (ff fe)").
    """
    for bom, codec in _WIDE_BOMS:
        if raw.startswith(bom):
            return codec, f"a {codec.upper()} byte-order mark ({bom.hex(' ')})"
    sample = raw[:4096]
    n4 = len(sample) // 4 * 4
    if n4 >= 8:
        quads = [sample[i : i + 4] for i in range(0, n4, 4)]
        for codec, nul in (("utf-32-le", slice(1, 4)), ("utf-32-be", slice(0, 3))):
            if sum(q[nul] == b"\x00\x00\x00" for q in quads) >= 0.9 * len(quads):
                return _checked_wide(sample[:n4], codec, "NUL bytes in three of every four positions")
    n2 = len(sample) // 2 * 2
    if n2 >= 4:
        half = n2 // 2
        even, odd = sample[0:n2:2].count(0) / half, sample[1:n2:2].count(0) / half
        if odd >= 0.9 and even <= 0.1:
            return _checked_wide(sample[:n2], "utf-16-le", "a NUL byte after every character")
        if even >= 0.9 and odd <= 0.1:
            return _checked_wide(sample[:n2], "utf-16-be", "a NUL byte before every character")
    return None


def _checked_wide(sample: bytes, codec: str, evidence: str) -> tuple[str, str] | None:
    try:
        sample.decode(codec)
    except UnicodeDecodeError:
        return None
    return codec, evidence


def _likely_encoding(raw: bytes) -> str:
    """An encoding that decodes ``raw``: UTF-16/32 when :func:`wide_text_encoding` says so, else the
    first of UTF-8, cp1252 (Windows) and latin-1 (which decodes any bytes) that works."""
    wide = wide_text_encoding(raw)
    if wide is not None:
        return wide[0]
    for enc in ("utf-8", "cp1252"):
        try:
            raw.decode(enc)
        except UnicodeDecodeError:
            continue
        return enc
    return "latin-1"


def decode_text(raw: bytes, encoding: str, context: str, *, fix: str | None = None) -> str:
    """``raw`` decoded with ``encoding``, a leading byte-order mark dropped; ``ValueError`` otherwise.

    The error names ``context`` (the file), what is wrong and a fix that works when followed:

    * UTF-16 / UTF-32 text (:func:`wide_text_encoding`) read with another encoding (it would decode
      as NUL-riddled garbage, or not at all): "the file is UTF-16 text (a UTF-16 byte-order mark
      (ff fe)), not 'utf-8'";
    * a byte that ``encoding`` cannot decode: the byte and its line.

    ``fix`` is the caller's way out, with ``{encoding}`` standing for an encoding that decodes the
    file (e.g. ``"pass encoding={encoding!r}"`` for a loader that has that parameter); by default
    the fix is to convert the file to UTF-8, spelled out in Python.
    """
    if not _is_wide(encoding):
        wide = wide_text_encoding(raw)
        if wide is not None:
            codec, evidence = wide
            raise ValueError(
                f"{context}: the file is {codec.upper()} text ({evidence}), not {encoding!r}; "
                + _fix_text(fix, codec)
            )
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as exc:
        line_no = raw.count(b"\n", 0, exc.start) + 1
        raise ValueError(
            f"{context}: cannot decode byte {raw[exc.start : exc.start + 1]!r} on line {line_no} as "
            f"{encoding!r} ({exc.reason}); " + _fix_text(fix, _likely_encoding(raw))
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


def _fix_text(fix: str | None, encoding: str) -> str:
    if fix is not None:
        return fix.format(encoding=encoding)
    return (
        f"the file reads as {encoding!r}: convert it to UTF-8 (in Python, for its path p: "
        f"p.write_text(p.read_text(encoding={encoding!r}), encoding='utf-8'))"
    )


# ---------------------------------------------------------------------------------------------
# CSV
# ---------------------------------------------------------------------------------------------
@dataclass
class CsvParse:
    """What :func:`read_csv_lines` found: the header, the good ``(line, fields)`` records, the
    problems (:func:`issue_record` dicts), and the number of data records the file holds (see
    :class:`ValidationReport`)."""

    header: list[str]
    rows: list[tuple[int, list[str]]]
    issues: list[dict[str, Any]]
    n_records: int


def _ends_inside_quotes(span: Sequence[str]) -> bool:
    """Whether the CSV text ``span`` (physical lines) ends inside a quoted field.

    A strict re-parse says "unexpected end of data" exactly then; when the re-parse stops on a
    field over the csv module's size limit, an odd number of ``"`` decides (escaped quotes come
    in pairs).
    """
    try:
        for _ in csv.reader(span, strict=True):
            pass
    except csv.Error as exc:
        if "unexpected end of data" in str(exc):
            return True
        if "field limit" in str(exc):
            return "".join(span).count('"') % 2 == 1
    return False


def read_csv_lines(raw: bytes, encoding: str, context: str, *, fix: str | None = None) -> CsvParse:
    """Decode and parse a CSV; return header, ``(line_number, fields)`` rows, issues and counts.

    ``raw`` is the file's bytes, decoded with :func:`decode_text` (a leading byte-order mark is
    dropped): a byte that cannot be decoded raises ``ValueError`` naming ``context``, the byte and its
    line, UTF-16 / UTF-32 text read with another encoding is named as such, both with ``fix`` (see
    :func:`decode_text`; by default: convert the file to UTF-8); an empty file or a header that
    cannot be parsed raises ``ValueError`` too.  Line numbers are 1-based physical
    lines (header = line 1), split as the csv module splits them (``\\n``, ``\\r\\n``, ``\\r``).

    Every record that cannot be used becomes a ``"skipped"`` issue with its file line(s):

    * a record with the wrong number of fields (a truncated last record has too few);
    * a record that opens a quote never closed: Python's csv module then reads the rest of the
      file as one field.  This is reported even when the field count happens to match, and
      the lines it swallowed count as records in ``n_records``;
    * a span the csv module cannot parse at all (e.g. a field over its size limit): the rest of
      the file is reported as not read.

    Blank lines hold no data; they are listed as ``"ignored"``.  A file whose last record has no
    line break after it gets a ``"kept"`` issue (the record may be cut off).
    """
    text = decode_text(raw, encoding, context, fix=fix)
    # the same line splitting as the csv module's (\n, \r\n, \r), so line numbers agree
    physical = io.StringIO(text, newline="").readlines()
    reader = csv.reader(physical)
    try:
        header = next(reader)
    except StopIteration:
        raise ValueError(f"{context}: the file is empty") from None
    except csv.Error as exc:
        raise ValueError(f"{context}: cannot parse the header on line 1 ({exc})") from None
    n_fields = len(header)
    rows: list[tuple[int, list[str]]] = []
    issues: list[dict[str, Any]] = []
    n_records = 0

    def n_data_lines(first: int, last: int) -> int:
        return sum(1 for ln in physical[first - 1 : last] if ln.strip())

    start = reader.line_num + 1
    line = end = 0
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            last = len(physical)
            n_lost = n_data_lines(start, last)
            hint = (
                f": a quote opened on line {start} is never closed"
                if _ends_inside_quotes(physical[start - 1 :])
                else ""
            )
            issues.append(
                issue_record(
                    start,
                    f"CSV parse error ({exc}){hint}; lines {start}-{last} "
                    f"({n_lost} non-blank lines) not read",
                    "skipped",
                    physical[start - 1],
                )
            )
            n_records += n_lost
            break
        line, end = start, reader.line_num
        start = end + 1
        if not fields:
            issues.append(issue_record(line, "blank line", "ignored"))
            continue
        span = f"line {line}" if end == line else f"lines {line}-{end}"
        if end == len(physical) and _ends_inside_quotes(physical[line - 1 : end]):
            n_lost = n_data_lines(line, end)
            issues.append(
                issue_record(
                    line,
                    f"truncated CSV record: the quote opened on line {line} is never closed, so {span} "
                    f"({n_lost} non-blank lines, to the end of the file) were read as one record",
                    "skipped",
                    physical[line - 1],
                )
            )
            n_records += n_lost
            continue
        if len(fields) != n_fields:
            what = "too few: truncated?" if len(fields) < n_fields else "too many: unquoted comma?"
            reason = f"malformed CSV row: {len(fields)} fields, header has {n_fields} ({what})"
            if end > line:  # a quoted field ran over several lines: probably a stray quote
                n_lost = n_data_lines(line, end)
                reason += f"; a quoted field runs over {span} ({n_lost} non-blank lines): stray quote?"
                n_records += n_lost
            else:
                n_records += 1
            issues.append(issue_record(line, reason, "skipped", ",".join(fields)))
            continue
        n_records += 1
        rows.append((line, fields))
    if rows and end == len(physical) and rows[-1][0] == line and not physical[-1].endswith(("\n", "\r")):
        issues.append(
            issue_record(
                rows[-1][0],
                "the file does not end with a line break: its last record may be cut off",
                "kept",
                physical[-1],
                row=len(rows) - 1,
            )
        )
    return CsvParse(header, rows, issues, n_records)


def check_csv_header(
    header: Sequence[str], columns: Sequence[str], context: str, *, all_unique: bool = False
) -> None:
    """``ValueError`` naming ``context`` when a column of ``columns`` is missing from the CSV
    ``header`` (line 1) or appears in it twice (every header column with ``all_unique``)."""
    missing = [c for c in columns if c not in header]
    if missing:
        raise ValueError(f"{context}: column(s) {missing} missing; header (line 1) is {list(header)}")
    pool = header if all_unique else columns
    repeated = sorted({c for c in pool if list(header).count(c) > 1})
    if repeated:
        raise ValueError(
            f"{context}: column(s) {repeated} appear twice in the header (line 1): {list(header)}"
        )


# ---------------------------------------------------------------------------------------------
# JSON
# ---------------------------------------------------------------------------------------------
def read_json_file(p: Path, what: str) -> Any:
    """Parse a ``.json`` / ``.json.gz`` file (gzip when the name ends in ``.gz``), UTF-8.

    A truncated or corrupt file raises ``ValueError`` naming the file and, for bad JSON, the line
    and column where parsing stopped (``what`` names the kind of file: "StereoSet", "published
    values" ...); text that is not UTF-8 and a broken gzip stream raise ``ValueError`` too.
    """
    opener = gzip.open if p.suffix == ".gz" else open
    try:
        with opener(p, "rt", encoding="utf-8") as fh:
            return json.load(fh)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{p}: not a valid {what} JSON file: {exc.msg} at line {exc.lineno}, column {exc.colno} "
            "(a file cut off early ends in the middle of the JSON)"
        ) from exc
    except UnicodeDecodeError as exc:
        raise ValueError(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise ValueError(f"{p}: truncated or corrupt gzip file ({type(exc).__name__}: {exc})") from exc


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json`` object hook: a key given twice would silently keep only its last value; refuse it."""
    keys = [k for k, _ in pairs]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        raise ValueError(f"repeated key(s) {repeated}: only the last value would be kept")
    return dict(pairs)


def read_json(path: str | Path, what: str) -> Any:
    """Parse the UTF-8 JSON file ``path`` strictly (a leading byte-order mark is allowed).

    ``FileNotFoundError`` ("``what`` not found") if it is missing; ``ValueError`` naming the file
    (and the line and column) if it is not valid JSON, not UTF-8 (with the byte and its line), or
    repeats a key within an object (JSON parsers keep the last value silently).  A relative ``path``
    starts from :func:`biaskit.core.paths.caller_cwd`.
    """
    from biaskit.core.paths import resolve_user_path

    path = resolve_user_path(path)
    if not path.exists():
        raise FileNotFoundError(f"{what} not found: {path}")
    raw = path.read_bytes()
    if wide_text_encoding(raw) is not None:
        decode_text(raw, "utf-8", str(path))  # raises, naming the UTF-16 / UTF-32 file and the fix
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line_no = raw.count(b"\n", 0, exc.start) + 1
        raise ValueError(
            f"{path}: not UTF-8 text (byte {raw[exc.start : exc.start + 1]!r} on line {line_no}); "
            "save the file as UTF-8"
        ) from exc
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from exc
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from exc
