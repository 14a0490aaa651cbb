"""Downloads with an on-disk cache and checksums, and the full Spanish Europarl of seed 000.

:func:`download` fetches a ``file://``, ``http://`` or ``https://`` URL into
``cache_dir()/downloads`` (or a given path):

* **cache / idempotent**: an existing file is reused (after checking its sha256 when one is given);
* **checksum**: with ``sha256=...`` the download is verified; a mismatch raises
  :class:`ChecksumError` and the downloaded bytes are removed;
* **atomic**: bytes go to ``<dest>.part`` and are renamed to ``<dest>`` only once complete and
  verified, so an interrupted run never leaves a truncated file under the final name;
* **resumable**: an interrupted download keeps its ``.part`` file and the next call continues it
  (HTTP ``Range`` request; a server that ignores ``Range`` makes it start again);
* **one writer at a time**: the ``.part`` name is fixed so that it can be resumed, so a download
  holds an exclusive lock on ``.<dest name>.lock`` beside it; a parallel call for the same file
  waits, then finds it downloaded (two writers never append to one ``.part``);
* **never hangs**: a network ``timeout`` applies, and a failure raises ``ConnectionError``
  saying what to do offline.

:func:`download_europarl` fetches the thesis's corpus ``D`` (seed 000 section 3.6.1): the
Spanish sides of OPUS Europarl v8 bg-es and en-es ('Europarl-bg-es-es.txt',
'Europarl-en-es-es.txt'), from the OPUS Moses zips.  Their sha256 could not be known when this
code was written (no internet), so it uses **trust on first use** (TOFU): the checksum of the
first download of each zip is recorded in ``SHA256SUMS`` next to it, and every later use
verifies against that record.  ``make data-full`` runs it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from tqdm.auto import tqdm

from biaskit.core.io import ChecksumError, atomic_write, atomic_write_text, sha256_file
from biaskit.core.paths import cache_dir

logger = logging.getLogger(__name__)

__all__ = [
    "OPUS_EUROPARL_V8_MOSES",
    "THESIS_EUROPARL_TEXT",
    "ChecksumError",
    "download",
    "download_europarl",
    "europarl_dir",
    "read_sha256sums",
    "sha256_file",
]

#: Base URL of the OPUS Europarl v8 Moses-format zips (``<base>/<pair>.txt.zip``).
OPUS_EUROPARL_V8_MOSES = "https://object.pouta.csc.fi/OPUS-Europarl/v8/moses"

#: sha256 and size of the thesis's own copies of the two Spanish texts (Git LFS pointers of
#: ``data/texts/es1.txt`` and ``es2.txt`` in github nicolaMaddalozzo/biashandler @ d16cc52).
#: Used only for an informative comparison after extraction: the thesis may have used
#: another OPUS release, so a difference is logged, not an error.
THESIS_EUROPARL_TEXT: dict[str, tuple[str, int]] = {
    "bg-es": ("45801fbcd39a0497e755593fef522ab0ac474776ea183dcaeb10516c22f4780d", 64_431_764),
    "en-es": ("3125ac379c890dd8113de022c4cbe3b5fb24360f3d8bb3b770775b5001d30ebf", 332_011_874),
}

_CHUNK = 1 << 20


def _filename_from_url(url: str) -> str:
    name = Path(urllib.parse.unquote(urllib.parse.urlparse(url).path)).name
    if not name:
        raise ValueError(f"cannot derive a file name from {url!r}; pass dest=")
    return name


def _fetch(url: str, part: Path, *, timeout: float, progress: bool) -> None:
    """Append the bytes of ``url`` to ``part`` from its current size (resume), or restart."""
    parsed = urllib.parse.urlparse(url)
    offset = part.stat().st_size if part.exists() else 0
    if parsed.scheme == "file":
        src = Path(urllib.request.url2pathname(parsed.path))
        if not src.is_file():
            raise FileNotFoundError(f"{url}: no such file {src}")
        size = src.stat().st_size
        if offset > size:
            offset = 0
        with open(src, "rb") as fin, open(part, "ab" if offset else "wb") as fout:
            fin.seek(offset)
            with tqdm(
                total=size, initial=offset, unit="B", unit_scale=True, desc=src.name, disable=not progress
            ) as bar:
                for chunk in iter(lambda: fin.read(_CHUNK), b""):
                    fout.write(chunk)
                    bar.update(len(chunk))
        return
    if parsed.scheme not in ("http", "https"):
        raise ValueError(
            f"unsupported URL scheme {parsed.scheme!r} in {url!r} (use file://, http:// or https://)"
        )
    headers = {"User-Agent": "biaskit (python urllib)"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    request = urllib.request.Request(url, headers=headers)
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and offset:  # range not satisfiable: the .part is already complete
            logger.info("%s: server says the partial file is already complete", url)
            return
        raise ConnectionError(f"download of {url} failed: HTTP {exc.code} {exc.reason}") from exc
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise ConnectionError(
            f"could not download {url}: {getattr(exc, 'reason', exc)}. If you are offline, use the bundled "
            "sample corpus, or copy the file into the biaskit cache by hand."
        ) from exc
    with response:
        status = getattr(response, "status", 200)
        if offset and status != 206:
            logger.info("%s: server ignored the Range request; downloading from the start", url)
            offset = 0
        length = response.headers.get("Content-Length")
        total = offset + int(length) if length is not None else None
        try:
            with (
                open(part, "ab" if offset else "wb") as fout,
                tqdm(
                    total=total, initial=offset, unit="B", unit_scale=True,
                    desc=_filename_from_url(url), disable=not progress,
                ) as bar,
            ):  # fmt: skip
                for chunk in iter(lambda: response.read(_CHUNK), b""):
                    fout.write(chunk)
                    bar.update(len(chunk))
        except (TimeoutError, OSError) as exc:
            raise ConnectionError(
                f"download of {url} interrupted ({exc}); the partial file {part} is kept and the next "
                "call resumes it"
            ) from exc
    if total is not None and part.stat().st_size != total:
        raise ConnectionError(
            f"download of {url} incomplete: {part.stat().st_size} of {total} bytes; call again to resume"
        )


def download(
    url: str,
    dest: str | Path | None = None,
    sha256: str | None = None,
    *,
    overwrite: bool = False,
    timeout: float = 60.0,
    progress: bool = True,
) -> Path:
    """Download ``url`` to ``dest`` (default ``cache_dir()/downloads/<file name>``) and return the path.

    Parameters
    ----------
    url:
        ``file://``, ``http://`` or ``https://`` URL.
    dest:
        Target file.  When it exists it is reused (a cache hit) unless ``overwrite``; with
        ``sha256`` it is verified first and fetched again if it does not match.
    sha256:
        Expected hex digest.  A mismatch after downloading raises :class:`ChecksumError`
        and removes the downloaded bytes.
    timeout:
        Seconds before a stalled connection fails (``ConnectionError``); nothing hangs.

    The bytes are written to ``<dest>.part`` and renamed atomically once complete and
    verified; an interrupted download leaves the ``.part`` file and the next call resumes it.
    """
    dest = Path(dest) if dest is not None else cache_dir() / "downloads" / _filename_from_url(url)
    dest.parent.mkdir(parents=True, exist_ok=True)
    expected = sha256.lower().strip() if sha256 else None
    with _exclusive(dest.with_name(f".{dest.name}.lock")):
        return _download_locked(url, dest, expected, overwrite=overwrite, timeout=timeout, progress=progress)


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_path`` (``fcntl.flock``; created, readable by the owner only) for
    the block: parallel downloads of one file take turns.  Without ``fcntl`` (Windows) there is no lock."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _download_locked(
    url: str, dest: Path, expected: str | None, *, overwrite: bool, timeout: float, progress: bool
) -> Path:
    """:func:`download` once the lock on ``dest`` is held."""
    if dest.exists() and not overwrite:
        if expected is None:
            logger.info("using cached %s", dest)
            return dest
        actual = sha256_file(dest)
        if actual == expected:
            logger.info("using cached %s (sha256 verified)", dest)
            return dest
        logger.warning("cached %s has sha256 %s, expected %s: downloading it again", dest, actual, expected)
        dest.unlink()
    part = dest.with_name(dest.name + ".part")
    if overwrite and part.exists():
        part.unlink()
    _fetch(url, part, timeout=timeout, progress=progress)
    if expected is not None:
        actual = sha256_file(part)
        if actual != expected:
            part.unlink(missing_ok=True)
            raise ChecksumError(
                f"checksum mismatch for {url}: expected sha256 {expected}, got {actual}. The partial file "
                "was removed. The server's file changed or the transfer was corrupted; retry, and if the "
                "file legitimately changed update the expected checksum."
            )
    os.replace(part, dest)
    return dest


# --------------------------------------------------------------------------- Europarl


def europarl_dir() -> Path:
    """Folder of the downloaded Europarl files (``cache_dir()/europarl``)."""
    return cache_dir() / "europarl"


def read_sha256sums(path: str | Path) -> dict[str, str]:
    """Parse a ``sha256sum``-style file (``<hex>  <name>`` per line) into ``{name: hex}``.

    Blank lines and ``#`` comments are skipped.  A malformed line (not 64 hex digits and a
    name), a file that is not UTF-8, and a name listed twice with different digests (which
    one to trust?) raise ``ValueError`` naming the file and line; a name listed twice with
    the same digest is logged as a WARNING.
    """
    path = Path(path)
    out: dict[str, str] = {}
    if not path.exists():
        return out
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_no = raw.count(b"\n", 0, exc.start) + 1
        raise ValueError(f"{path}:{line_no}: not UTF-8 text ({exc.reason})") from exc
    first_line: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(maxsplit=1)
        if len(parts) != 2 or not re.fullmatch(r"[0-9a-fA-F]{64}", parts[0]):
            raise ValueError(f"{path}:{n}: malformed line {line!r} (expected '<sha256>  <file name>')")
        name, digest = parts[1].lstrip("*").strip(), parts[0].lower()
        if name in out:
            if out[name] != digest:
                raise ValueError(
                    f"{path}:{n}: {name!r} is listed again with sha256 {digest}, but line "
                    f"{first_line[name]} says {out[name]}; delete the wrong line"
                )
            logger.warning(
                "%s:%d: %r is listed twice (also line %d, same sha256)", path, n, name, first_line[name]
            )
            continue
        out[name] = digest
        first_line[name] = n
    return out


def _record_sha256(path: Path, name: str, digest: str) -> None:
    """Add the line ``"<digest>  <name>"`` to the ``SHA256SUMS`` file ``path``, rewritten whole (atomically:
    a full disk leaves the file as it was, never half a line)."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if text and not text.endswith("\n"):
        text += "\n"
    atomic_write_text(path, f"{text}{digest}  {name}\n")


def _check_pair(pair: str) -> None:
    langs = pair.split("-")
    if len(langs) != 2 or "es" not in langs or not all(len(x) == 2 and x.isalpha() for x in langs):
        raise ValueError(
            f"pair must look like 'bg-es' or 'en-es' (two language codes, one 'es'), got {pair!r}"
        )


def download_europarl(
    pairs: Sequence[str] = ("bg-es", "en-es"),
    *,
    base_url: str = OPUS_EUROPARL_V8_MOSES,
    dest_dir: str | Path | None = None,
    timeout: float = 60.0,
    progress: bool = True,
) -> dict[str, Path]:
    """Download the thesis's Spanish Europarl files and return ``{pair: text path}``.

    Seed 000 section 3.6.1: ``D`` is 'Europarl-bg-es-es.txt' and 'Europarl-en-es-es.txt',
    the Spanish sides of the OPUS Europarl v8 bg-es and en-es bitexts.  For each pair this
    fetches ``<base_url>/<pair>.txt.zip`` (Moses format) into ``dest_dir`` (default
    ``cache_dir()/europarl``), extracts ``Europarl.<pair>.es`` to ``Europarl-<pair>-es.txt``
    and returns the text paths; :func:`biaskit.data.corpus.load_corpus` then finds them under the
    names ``"europarl-es-full"``, ``"europarl-bg-es"``, ``"europarl-en-es"``.

    **Trust on first use.**  The real sha256 of the OPUS zips was not knowable offline, so
    the checksum of the first download of each zip is appended to ``<dest_dir>/SHA256SUMS``;
    later calls (a re-download after the cached zip was deleted or corrupted) must match it,
    or :class:`ChecksumError` is raised.  Delete the line to accept a new upstream release.
    The extracted text is compared with the size and sha256 of the thesis's own copies
    (:data:`THESIS_EUROPARL_TEXT`) and the outcome is logged.

    ``base_url`` can point to a mirror or, in tests, a local server (``http://127.0.0.1:...``
    or ``file://``).  Calls are idempotent: present and verified files are not fetched again.
    """
    if isinstance(pairs, str):
        pairs = (pairs,)
    if not pairs:
        raise ValueError("pairs is empty")
    for pair in pairs:
        _check_pair(pair)
    out_dir = Path(dest_dir) if dest_dir is not None else europarl_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    sums_path = out_dir / "SHA256SUMS"
    result: dict[str, Path] = {}
    for pair in pairs:
        zip_name = f"{pair}.txt.zip"
        url = f"{base_url.rstrip('/')}/{zip_name}"
        recorded = read_sha256sums(sums_path).get(zip_name)
        zip_path = download(url, out_dir / zip_name, sha256=recorded, timeout=timeout, progress=progress)
        if recorded is None:
            digest = sha256_file(zip_path)
            _record_sha256(sums_path, zip_name, digest)
            logger.warning(
                "trust on first use: recorded sha256 %s of %s in %s; later downloads must match it",
                digest,
                zip_name,
                sums_path,
            )
        text_path = out_dir / f"Europarl-{pair}-es.txt"
        if not text_path.exists() or text_path.stat().st_mtime < zip_path.stat().st_mtime:
            _extract_member(zip_path, f"Europarl.{pair}.es", text_path)
        _compare_with_thesis(pair, text_path)
        result[pair] = text_path
    return result


def _extract_member(zip_path: Path, member: str, dest: Path) -> None:
    try:
        zf = zipfile.ZipFile(zip_path)
    except zipfile.BadZipFile as exc:
        raise ValueError(f"{zip_path} is not a valid zip file; delete it and download again") from exc
    with zf:
        if member not in zf.namelist():
            raise ValueError(f"{zip_path} has no member {member!r}; members: {zf.namelist()}")
        # a unique temporary name beside dest, renamed once whole (parallel extractions never share it)
        with zf.open(member) as fin, atomic_write(dest, "wb") as fout:
            shutil.copyfileobj(fin, fout, _CHUNK)
    logger.info("extracted %s from %s", dest.name, zip_path.name)


def _compare_with_thesis(pair: str, text_path: Path) -> None:
    ref = THESIS_EUROPARL_TEXT.get(pair)
    if ref is None:
        return
    size = text_path.stat().st_size
    if size == ref[1] and sha256_file(text_path) == ref[0]:
        logger.info("%s is byte-identical to the thesis's copy", text_path.name)
    else:
        logger.info(
            "%s (%d bytes) differs from the thesis's copy (%d bytes): the thesis may have used another "
            "OPUS release; counts will differ slightly",
            text_path.name,
            size,
            ref[1],
        )
