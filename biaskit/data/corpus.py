"""Spanish corpus handling: reading, sentence splitting, tokenisation, stop-words and frequencies.

This module turns raw text into the ``D`` of seed 000 (Maddalozzo 2023, section 3.6.1):
a list of sentences, each a list of lower-cased tokens with punctuation and stop-words
removed.  Every choice of the thesis's preprocessing is a documented field of
:class:`Preprocessing`, and :meth:`Preprocessing.thesis` reproduces the thesis's code
(``gen_tokens_and_seeds.ipynb`` / ``preprocessing_text.py`` in github
nicolaMaddalozzo/biashandler) as closely as a clean tokenizer allows.

Corpora are addressed by name (:data:`CORPORA`, :func:`available_corpora`) or by path:

* ``"europarl-es-sample"`` (default): both bundled real Spanish Europarl samples below;
* ``"europarl-es-opus-sample"``: 3,000 sentences of the Spanish side of OPUS Europarl v8
  bg-es (the thesis's first file), one sentence per line;
* ``"europarl-es-uds-sample"``: 4,065 verbatim proceedings paragraphs (1999-2011),
  split into sentences here (about 11.6k);
* ``"europarl-es-full"``, ``"europarl-bg-es"``, ``"europarl-en-es"``: the thesis's full
  files, downloaded once with ``make data-full`` (``python -m biaskit download-europarl``).

:func:`load_corpus` caches the preprocessed sentences under ``cache_dir()/corpus``, keyed
by the content hash of the input files and the preprocessing settings, as gzipped JSON (data only,
never a pickle) with a checksum file that names the file and its key.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import hashlib
import json
import logging
import random
import re
import unicodedata
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Literal

from tqdm.auto import tqdm

from biaskit.core.io import atomic_write_bytes, cache_file_problem, checksum_sidecar, write_cache_checksum
from biaskit.core.paths import cache_dir, data_dir, resolve_user_path, wordlists_dir
from biaskit.data.downloads import sha256_file

logger = logging.getLogger(__name__)

__all__ = [
    "CORPORA",
    "DEFAULT_CORPUS",
    "THESIS_EXTRA_STOPWORDS",
    "THESIS_KEEP_WORDS",
    "CorpusSpec",
    "Preprocessing",
    "available_corpora",
    "corpus_files",
    "default_keep_words",
    "load_corpus",
    "load_stopwords",
    "preprocess",
    "read_lines",
    "split_sentences",
    "tokenize",
    "word_frequencies",
]

#: version of the corpus cache (part of its key): 3 = a gzipped JSON file ``{"format", "version", "key",
#: "sentences", "warnings"}``, which holds data only; 2 was a pickle, which could run code when read, so
#: a file of version 2 is never opened (it is removed with a WARNING)
_CACHE_VERSION = 3
_CACHE_FORMAT = "biaskit corpus cache"
_CACHE_SUFFIX = ".json.gz"

DigitsPolicy = Literal["drop", "keep", "mask"]

# --------------------------------------------------------------------------- corpora


@dataclass(frozen=True)
class CorpusSpec:
    """A named corpus: its files and where they live.

    ``location="bundled"`` files are relative to :func:`biaskit.core.paths.data_dir`;
    ``location="cache"`` files are relative to :func:`biaskit.core.paths.cache_dir` (downloads).
    ``unit`` says whether a line is a sentence or a paragraph (paragraphs are split into
    sentences when ``Preprocessing.split_sentences`` is true).
    """

    name: str
    files: tuple[str, ...]
    location: Literal["bundled", "cache"]
    unit: Literal["sentence", "paragraph"]
    description: str


_OPUS_SAMPLE = tuple(
    f"europarl-es/opus-bg-es-sample/{part}_sentences.txt" for part in ("train", "valid", "test")
)
_UDS_SAMPLE = ("europarl-es/uds-proceedings-sample/europarl_es_uds_paragraphs.txt.gz",)
_FULL_BG = ("europarl/Europarl-bg-es-es.txt",)
_FULL_EN = ("europarl/Europarl-en-es-es.txt",)

CORPORA: dict[str, CorpusSpec] = {
    spec.name: spec
    for spec in (
        CorpusSpec(
            "europarl-es-sample",
            _OPUS_SAMPLE + _UDS_SAMPLE,
            "bundled",
            "paragraph",
            "both bundled Spanish Europarl samples (OPUS bg-es sentences + UDS proceedings paragraphs); "
            "the offline default, about 14k sentences",
        ),
        CorpusSpec(
            "europarl-es-opus-sample",
            _OPUS_SAMPLE,
            "bundled",
            "sentence",
            "3,000 sentences of the Spanish side of OPUS Europarl v8 bg-es (the thesis's first file)",
        ),
        CorpusSpec(
            "europarl-es-uds-sample",
            _UDS_SAMPLE,
            "bundled",
            "paragraph",
            "4,065 verbatim Spanish Europarl proceedings paragraphs, 1999-2011 (about 11.6k sentences)",
        ),
        CorpusSpec(
            "europarl-es-full",
            _FULL_BG + _FULL_EN,
            "cache",
            "sentence",
            "the thesis's D: Spanish sides of OPUS Europarl v8 bg-es and en-es (download: make data-full)",
        ),
        CorpusSpec(
            "europarl-bg-es",
            _FULL_BG,
            "cache",
            "sentence",
            "Spanish side of OPUS Europarl v8 bg-es, 'Europarl-bg-es-es.txt' (download: make data-full)",
        ),
        CorpusSpec(
            "europarl-en-es",
            _FULL_EN,
            "cache",
            "sentence",
            "Spanish side of OPUS Europarl v8 en-es, 'Europarl-en-es-es.txt' (download: make data-full)",
        ),
    )
}

DEFAULT_CORPUS = "europarl-es-sample"


def available_corpora() -> dict[str, str]:
    """Names of the known corpora with a one-line description and whether they are present."""
    out = {}
    for name, spec in CORPORA.items():
        try:
            corpus_files(name)
            status = "available"
        except FileNotFoundError:
            status = "not downloaded"
        out[name] = f"{spec.description} [{status}]"
    return out


def corpus_files(name: str) -> list[Path]:
    """The files of the named corpus, checked to exist.

    Raises ``FileNotFoundError`` naming the missing files and how to get them
    (``make data-full`` for the full Europarl files).
    """
    if name not in CORPORA:
        raise KeyError(f"unknown corpus {name!r}; known corpora: {sorted(CORPORA)} (or pass a file path)")
    spec = CORPORA[name]
    root = data_dir() if spec.location == "bundled" else cache_dir()
    files = [root / f for f in spec.files]
    missing = [str(f) for f in files if not f.exists()]
    if missing:
        if spec.location == "cache":
            how = (
                "download the full Spanish Europarl files first with `make data-full` "
                "(or `python -m biaskit download-europarl`; needs internet, about 400 MB of text), "
                "or use the bundled offline sample 'europarl-es-sample'"
            )
        else:
            how = "the bundled data folder is incomplete: restore data/europarl-es from the repository"
        raise FileNotFoundError(f"corpus {name!r}: missing {missing}; {how}")
    return files


# --------------------------------------------------------------------------- reading

# UTF-8 text decoded as latin-1 / cp1252 shows up as 'Ã' followed by a character in U+0080-U+00BF.
_MOJIBAKE_RE = re.compile("Ã[\u0080-\u00bf]")
# characters that survive decoding but mean the text was damaged before: U+FFFD (bytes that could
# not be decoded when the file was made) and C1 controls (cp1252 punctuation read as latin-1)
_DAMAGE_RE = re.compile("[\ufffd\u0080-\u009f]")


def _lines_list(numbers: Sequence[int], n: int = 10) -> str:
    shown = ", ".join(str(x) for x in numbers[:n])
    return shown + (f" (+{len(numbers) - n} more)" if len(numbers) > n else "")


def read_lines(path: str | Path, *, encoding: str = "utf-8", check_mojibake: bool = True) -> list[str]:
    """Read the non-empty lines of a text file (``.gz`` is decompressed transparently).

    Decoding is strict: a byte sequence that is not valid in ``encoding`` raises a
    ``ValueError`` naming the file, the line and the byte offset (a latin-1 file read as
    UTF-8, for instance).  With ``check_mojibake`` (default), text that decodes but looks
    like UTF-8 read with the wrong codec (``'Ã©'`` for ``'é'``) also raises, naming the first
    lines.  The text is normalised to Unicode NFC so that precomposed and decomposed accents
    compare equal.

    Blank lines are skipped and counted in a WARNING with their line numbers (the final line
    break of the file is not a blank line); lines holding U+FFFD replacement characters or
    C1 control characters (damage done before the file was written) are kept and listed in
    a WARNING.  Line numbers count ``\\n``-separated lines; a line that other Unicode line
    separators (U+2028, U+0085 ...) split further gives several lines.
    """
    path = resolve_user_path(path)
    if not path.exists():
        raise FileNotFoundError(f"corpus file not found: {path}")
    if path.suffix == ".gz":
        try:
            with gzip.open(path, "rb") as fh:
                raw = fh.read()
        except (EOFError, OSError, zlib.error) as exc:
            raise ValueError(f"{path}: truncated or corrupt gzip file ({type(exc).__name__}: {exc})") from exc
    else:
        raw = path.read_bytes()
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as exc:
        line_no = raw.count(b"\n", 0, exc.start) + 1
        raise ValueError(
            f"{path}: cannot decode byte {raw[exc.start : exc.start + 1]!r} at offset {exc.start} "
            f"(line {line_no}) as {encoding}. The file is probably in another encoding (e.g. latin-1 / "
            f"cp1252): convert it to UTF-8 or pass encoding='latin-1'."
        ) from exc
    except LookupError as exc:
        raise ValueError(f"unknown encoding {encoding!r}") from exc
    if text.startswith("\ufeff"):
        text = text[1:]
    physical = text.split("\n")
    if physical and physical[-1] == "":
        physical.pop()  # the final line break ends the last line; it does not start a blank one
    if check_mojibake:
        bad = [n for n, ln in enumerate(physical, start=1) if _MOJIBAKE_RE.search(ln)]
        if bad:
            first = _MOJIBAKE_RE.search(physical[bad[0] - 1])
            assert first is not None
            raise ValueError(
                f"{path}: decoded with {encoding!r} but {len(bad)} line(s) contain mojibake sequences "
                f"such as {first.group()!r} (lines {_lines_list(bad)}): UTF-8 text read with the wrong "
                "encoding; read it with encoding='utf-8', or pass check_mojibake=False if these "
                "characters are genuine."
            )
    out: list[str] = []
    blank: list[int] = []
    damaged: list[int] = []
    for n, ln in enumerate(physical, start=1):
        pieces = [p.strip() for p in unicodedata.normalize("NFC", ln).splitlines()]
        pieces = [p for p in pieces if p]
        if not pieces:
            blank.append(n)
            continue
        if _DAMAGE_RE.search(ln):
            damaged.append(n)
        out.extend(pieces)
    if blank:
        logger.warning("%s: skipped %d blank line(s) (lines %s)", path, len(blank), _lines_list(blank))
    if damaged:
        logger.warning(
            "%s: %d line(s) hold U+FFFD replacement or C1 control characters, i.e. text damaged by a "
            "wrong encoding before this file was written; kept as they are (lines %s)",
            path,
            len(damaged),
            _lines_list(damaged),
        )
    return out


# --------------------------------------------------------------------------- sentences

# Abbreviations after which a period does not end a sentence (lower-cased, without the dot).
_ABBREVIATIONS = frozenset(
    """sr sra sres sras srta srs dr dra drs dras dña ud uds vd vds lic ing arq prof profa
    art arts núm nº pág págs p pp ej apdo cap caps vol vols fig figs ee uu excmo excma excmos
    ilmo ilma sto sta vs aprox cía av avda dpto admón gral col cols ref párr inc""".split()
)
# candidate boundary: terminal punctuation, optional closers, whitespace, optional openers,
# then (lookahead) the next word character; split_sentences checks it is upper-case or a digit.
_BOUNDARY_RE = re.compile(r"([.!?…]+)([\"'»”’)\]]*)\s+(?=[¿¡«“\"'(\[]*(\w))")
_WORD_BEFORE_RE = re.compile(r"(\w+)$")


def split_sentences(text: str) -> list[str]:
    """Split a Spanish paragraph into sentences.

    A boundary is one or more of ``. ! ? …`` (optionally followed by closing quotes or
    brackets), whitespace, then an optional opener (``¿ ¡ « “ " ( [``) and an upper-case
    letter (accented ones included) or a digit.  A period after a known abbreviation
    (``Sr.``, ``Sra.``, ``art.``, ``núm.``, ``EE.UU.`` ...) or after a single capital
    letter (initials such as ``J. M. Barroso``) is not a boundary.  Lower-case
    continuations are never split.  Rule-based, like the counting rule of the UDS
    sample's provenance; good enough for sentence co-occurrence counts.
    """
    text = text.strip()
    if not text:
        return []
    out: list[str] = []
    start = 0
    for m in _BOUNDARY_RE.finditer(text):
        nxt = m.group(3)
        if not (nxt.isupper() or nxt.isdigit()):
            continue
        if m.group(1) == ".":
            before = _WORD_BEFORE_RE.search(text, start, m.start())
            if before is not None:
                word = before.group(1)
                if word.lower() in _ABBREVIATIONS or (len(word) == 1 and word.isupper()):
                    continue
        piece = text[start : m.end()].strip()
        if piece:
            out.append(piece)
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


# --------------------------------------------------------------------------- tokens

# A token is a maximal run of letters and digits (Unicode-aware, so á é í ó ú ü ñ and
# other accented letters stay inside the word); underscores, punctuation, quotes,
# hyphens and apostrophes separate tokens.
_TOKEN_RE = re.compile(r"[^\W_]+")
_DIGIT_RE = re.compile(r"\d")
NUMBER_TOKEN = "<num>"


def tokenize(sentence: str, *, lowercase: bool = True, digits: DigitsPolicy = "drop") -> list[str]:
    """Split a sentence into word tokens.

    Parameters
    ----------
    lowercase:
        Lower-case the tokens (the thesis does, section 3.6.1).
    digits:
        What to do with a token that contains a digit (``2010``, ``co2``, ``1º``):
        ``"drop"`` removes it (default; numbers carry no social-group meaning here),
        ``"keep"`` keeps it, ``"mask"`` replaces it by ``"<num>"``.

    Notes
    -----
    Punctuation is removed by construction (tokens are runs of letters/digits), hyphenated
    compounds are split into their parts (``euro-mediterráneo`` -> ``euro``,
    ``mediterráneo``; the thesis's code instead deleted the hyphen and joined them).
    """
    if digits not in ("drop", "keep", "mask"):
        raise ValueError(f"digits must be 'drop', 'keep' or 'mask', got {digits!r}")
    text = sentence.lower() if lowercase else sentence
    tokens = _TOKEN_RE.findall(text)
    if digits == "keep":
        return tokens
    if digits == "drop":
        return [t for t in tokens if not _DIGIT_RE.search(t)]
    return [NUMBER_TOKEN if _DIGIT_RE.search(t) else t for t in tokens]


# --------------------------------------------------------------------------- stop-words

# What the thesis's get_stopwords() adds to NLTK's Spanish list ('-' and '%' are punctuation,
# which our tokenizer removes anyway) and what it takes out of it (preprocessing_text.py).
THESIS_EXTRA_STOPWORDS: tuple[str, ...] = ("ce", "nº", "si", "y")
THESIS_KEEP_WORDS: tuple[str, ...] = ("él", "ella", "ellas", "ellos", "los", "las")

_STOPWORD_FILES = {"snowball-es": "es/stopwords_snowball_es.txt"}


@lru_cache(maxsize=8)
def load_stopwords(name: str = "snowball-es") -> frozenset[str]:
    """A bundled stop-word list (``wordlists/``), parsed from Snowball format.

    ``"snowball-es"`` is the Snowball project's Spanish stop list (308 words; BSD licence;
    see ``wordlists/PROVENANCE.md``), the list behind NLTK's ``stopwords.words('spanish')``
    that the thesis used.  Lines are ``word | comment``; comment-only lines are skipped.

    Examples
    --------
    >>> stopwords = load_stopwords("snowball-es")
    >>> len(stopwords), "de" in stopwords, "parlamento" in stopwords
    (308, True, False)
    """
    if name not in _STOPWORD_FILES:
        raise KeyError(f"unknown stop-word list {name!r}; bundled lists: {sorted(_STOPWORD_FILES)}")
    path = wordlists_dir() / _STOPWORD_FILES[name]
    if not path.exists():
        raise FileNotFoundError(f"stop-word list not found: {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    words: set[str] = set()
    for line in text.splitlines():  # blank and comment-only lines are part of the Snowball format
        words.update(line.split("|")[0].split())
    return frozenset(unicodedata.normalize("NFC", w.lower()) for w in words)


@lru_cache(maxsize=1)
def default_keep_words() -> frozenset[str]:
    """Words never removed as stop-words by default.

    The thesis's own keep list (:data:`THESIS_KEEP_WORDS`: ``él ella ellas ellos los las``)
    plus every single-word seed of the thesis's 39 seed groups (``wordlists/es/
    thesis_seed_groups.json``).  The gender attribute sets contain ``él`` and ``ella``,
    which every Spanish stop list removes; removing them would silently shrink A and B.
    """
    from biaskit.data.wordlists import load_seed_groups

    seeds = {w for words in load_seed_groups().values() for w in words if " " not in w}
    return frozenset(unicodedata.normalize("NFC", w) for w in set(THESIS_KEEP_WORDS) | seeds)


# --------------------------------------------------------------------------- preprocessing


@dataclass(frozen=True)
class Preprocessing:
    """The preprocessing choices of seed 000 section 3.6.1, one documented field each.

    Attributes
    ----------
    lowercase:
        Lower-case every token (thesis: yes).
    split_sentences:
        Split each line into sentences with :func:`split_sentences` (needed for the UDS
        paragraphs; harmless for sentence-per-line files).  The thesis's files are one
        sentence per line and were not split.
    drop_parenthesized:
        Drop sentences containing a parenthesised part ``( ... )``.  The thesis's code
        does this (``is_in_par``: "details about the developments of the sitting"), which
        also drops sentences with language tags such as ``(SV)``.  Default ``False``.
    digits:
        Policy for tokens with digits, see :func:`tokenize` (default ``"drop"``).
    stopwords:
        A bundled list name (``"snowball-es"``), an explicit collection of words, or
        ``None`` for no stop-word removal.
    extra_stopwords:
        Added to the list (default: the thesis's additions ``ce nº si y``).
    keep:
        Words never removed.  ``None`` means :func:`default_keep_words` (the thesis's keep
        list plus every single-word thesis seed); pass ``()`` to keep nothing.
    min_length:
        Drop tokens shorter than this many characters (default 1: keep all).
    dedupe:
        Keep one occurrence of each token per sentence (the thesis's code does this;
        sentence co-occurrence counts are unaffected, token frequencies become sentence
        frequencies).  Default ``False``; see also ``word_frequencies(unit=...)``.
    """

    lowercase: bool = True
    split_sentences: bool = True
    drop_parenthesized: bool = False
    digits: DigitsPolicy = "drop"
    stopwords: str | tuple[str, ...] | None = "snowball-es"
    extra_stopwords: tuple[str, ...] = THESIS_EXTRA_STOPWORDS
    keep: tuple[str, ...] | None = None
    min_length: int = 1
    dedupe: bool = False

    def __post_init__(self) -> None:
        if self.digits not in ("drop", "keep", "mask"):
            raise ValueError(f"digits must be 'drop', 'keep' or 'mask', got {self.digits!r}")
        if self.min_length < 1:
            raise ValueError("min_length must be at least 1")
        # accept any iterable for the word collections, store sorted tuples (hashable, stable key)
        for name in ("extra_stopwords", "keep"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(sorted(value)))
        if self.stopwords is not None and not isinstance(self.stopwords, (str, tuple)):
            object.__setattr__(self, "stopwords", tuple(sorted(self.stopwords)))

    @classmethod
    def thesis(cls) -> Preprocessing:
        """The settings closest to the thesis's code (``gen_tokens_and_seeds.ipynb``).

        Drops sentences with parentheses, keeps digits (the thesis only stripped
        punctuation marks from the ends of whitespace tokens), no sentence splitting
        (one sentence per line), token dedupe per sentence, Snowball/NLTK stop-words plus
        ``ce nº si y`` minus ``él ella ellas ellos los las`` (exactly the thesis's keep
        list, no seed-based additions).
        """
        return cls(
            split_sentences=False,
            drop_parenthesized=True,
            digits="keep",
            keep=THESIS_KEEP_WORDS,
            dedupe=True,
        )

    def stopword_set(self) -> frozenset[str]:
        """The resolved set of words removed (stop-words + extras - keep)."""
        if self.stopwords is None:
            base: frozenset[str] = frozenset()
        elif isinstance(self.stopwords, str):
            base = load_stopwords(self.stopwords)
        else:
            base = frozenset(self.stopwords)
        keep = default_keep_words() if self.keep is None else frozenset(self.keep)
        return frozenset((base | set(self.extra_stopwords)) - keep)

    def cache_key(self) -> dict:
        """JSON-able description of the settings, with the resolved stop-word set."""
        d = dataclasses.asdict(self)
        d["stopword_set_sha256"] = hashlib.sha256(
            "\n".join(sorted(self.stopword_set())).encode("utf-8")
        ).hexdigest()
        return d


_PAREN_RE = re.compile(r"\([^)]*\)")


def preprocess(
    lines: Iterable[str],
    preprocessing: Preprocessing | None = None,
    *,
    sample: int | None = None,
    random_state: int = 42,
    progress: bool | None = None,
) -> list[list[str]]:
    """Turn raw lines into sentences of tokens (seed 000 section 3.6.1).

    Steps: sentence splitting (optional) -> drop parenthesised sentences (optional) ->
    random sample of ``sample`` sentences (optional; the thesis sampled 900,000 sentences
    with ``random.seed(42)``; :class:`random.Random` with ``random_state`` reproduces that
    draw for the same input order) -> tokenise (lower-case, punctuation, digits policy) ->
    remove stop-words (except ``keep``) and short tokens -> optional per-sentence dedupe.
    Sentences left empty are dropped; their number (with a few examples) is logged as a
    WARNING.  The optional drops the settings ask for (parenthesised sentences, sampling) are
    logged at INFO.
    """
    cfg = preprocessing or Preprocessing()
    sentences: list[str] = []
    for line in lines:
        if cfg.split_sentences:
            sentences.extend(split_sentences(line))
        elif line.strip():
            sentences.append(line.strip())
    if cfg.drop_parenthesized:
        before = len(sentences)
        sentences = [s for s in sentences if not _PAREN_RE.search(s)]
        logger.info("dropped %d of %d sentences containing parentheses", before - len(sentences), before)
    if sample is not None:
        if sample < 1:
            raise ValueError("sample must be a positive number of sentences")
        if sample < len(sentences):
            sentences = random.Random(random_state).sample(sentences, sample)
        else:
            logger.info("sample=%d >= %d sentences: using all of them", sample, len(sentences))
    stop = cfg.stopword_set()
    out: list[list[str]] = []
    n_empty = 0
    examples: list[str] = []
    show = progress if progress is not None else len(sentences) > 200_000
    for s in tqdm(sentences, desc="tokenising", unit="sent", disable=not show):
        toks = [
            t
            for t in tokenize(s, lowercase=cfg.lowercase, digits=cfg.digits)
            if t not in stop and len(t) >= cfg.min_length
        ]
        if cfg.dedupe:
            toks = list(dict.fromkeys(toks))
        if toks:
            out.append(toks)
        else:
            n_empty += 1
            if len(examples) < 5:
                examples.append(s[:60])
    if n_empty:
        logger.warning(
            "dropped %d of %d sentences with no token left after preprocessing (only stop-words, "
            "punctuation or dropped digits), e.g. %s",
            n_empty,
            len(sentences),
            examples,
        )
    return out


# --------------------------------------------------------------------------- loading


def _resolve_source(name_or_path: str | Path) -> tuple[str, list[Path]]:
    if isinstance(name_or_path, str) and name_or_path in CORPORA:
        return name_or_path, corpus_files(name_or_path)
    path = resolve_user_path(name_or_path)
    if path.is_dir():
        entries = sorted(path.iterdir())
        files = [p for p in entries if p.is_file() and p.name.endswith((".txt", ".txt.gz"))]
        if not files:
            raise FileNotFoundError(f"no .txt or .txt.gz files in {path}")
        others = [p.name for p in entries if p not in files and not p.name.startswith(".")]
        if others:
            logger.warning(
                "%s: reading the %d .txt / .txt.gz file(s); %d other entr(y/ies) not read: %s",
                path,
                len(files),
                len(others),
                others[:10],
            )
        return path.name, files
    if path.is_file():
        return path.name, [path]
    raise FileNotFoundError(
        f"{name_or_path!r} is neither a known corpus ({sorted(CORPORA)}) nor an existing file or folder "
        f"(looked for {path})"
    )


class _WarningCollector(logging.Handler):
    """Keeps the WARNING messages logged while a corpus is built, to store them with its cache."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def load_corpus(
    name_or_path: str | Path = DEFAULT_CORPUS,
    *,
    preprocessing: Preprocessing | None = None,
    encoding: str = "utf-8",
    sample: int | None = None,
    random_state: int = 42,
    cache: bool = True,
    progress: bool | None = None,
) -> list[list[str]]:
    """Load a corpus as a list of sentences, each a list of tokens (seed 000 section 3.6.1).

    Parameters
    ----------
    name_or_path:
        A corpus name (:data:`CORPORA`; default ``"europarl-es-sample"``, the bundled real
        Spanish Europarl text), a text file (``.txt`` or ``.txt.gz``, UTF-8, one sentence
        or paragraph per line) or a folder of such files (read in name order).
    preprocessing:
        :class:`Preprocessing` settings (default: ``Preprocessing()``).
    encoding:
        Encoding of the files; decoding errors raise a ``ValueError`` naming the line.
    sample, random_state:
        Optional random sample of sentences, as the thesis did (900,000 with seed 42).
    cache:
        Reuse / store the result under ``cache_dir()/corpus`` (key: file contents +
        settings), so a second call is a quick load.  The file is gzipped JSON, used only when its
        checksum file vouches for it and it holds this key's corpus (else a WARNING, and the corpus is
        preprocessed again); a failed write (a full disk) is a WARNING, and the corpus is still returned.

    A missing named corpus raises ``FileNotFoundError`` saying how to get it
    (``make data-full`` for the full Europarl files).  The WARNINGs of the first build (blank
    or damaged lines, sentences left empty) are stored with the cache and logged again on
    every cache hit, so a cached corpus never hides what was dropped.

    Examples
    --------
    >>> sentences = load_corpus("europarl-es-sample", sample=3, cache=False, progress=False)
    >>> len(sentences), sentences[0][:4]
    (3, ['además', 'señalo', 'aras', 'alcanzar'])
    """
    cfg = preprocessing or Preprocessing()
    label, files = _resolve_source(name_or_path)
    key_src = {
        "version": _CACHE_VERSION,
        "files": [sha256_file(f) for f in files],
        "preprocessing": cfg.cache_key(),
        "encoding": encoding,
        "sample": sample,
        "random_state": random_state,
    }
    key = _digest(key_src)
    safe_label = re.sub(r"[^A-Za-z0-9_.-]", "_", label)
    cache_path = cache_dir() / "corpus" / f"{safe_label}-{key[:20]}{_CACHE_SUFFIX}"
    if cache:
        _drop_pickle_cache(cache_path.parent, safe_label, key_src)
        cached = _read_corpus_cache(cache_path, key)
        if cached is not None:
            sentences, found = cached
            logger.info("loaded %d preprocessed sentences from cache %s", len(sentences), cache_path)
            # what was dropped when the cache was built stays visible on every load
            for msg in found:
                logger.warning("%s [found when the cached corpus %s was built]", msg, cache_path.name)
            return sentences
    collect = _WarningCollector()
    logger.addHandler(collect)
    try:
        lines: list[str] = []
        for f in files:
            lines.extend(read_lines(f, encoding=encoding))
        sentences = preprocess(lines, cfg, sample=sample, random_state=random_state, progress=progress)
    finally:
        logger.removeHandler(collect)
    if not sentences:
        raise ValueError(f"corpus {label!r} has no sentence left after preprocessing")
    if cache:
        _write_corpus_cache(cache_path, key, sentences, collect.messages)
    return sentences


def _digest(key_src: dict) -> str:
    """The full sha256 (hex) of a cache key description; the file name holds its first 20 digits."""
    return hashlib.sha256(json.dumps(key_src, sort_keys=True).encode()).hexdigest()


def _drop_pickle_cache(folder: Path, safe_label: str, key_src: dict) -> None:
    """Remove, with a WARNING, this corpus's cache file of biaskit before cache version 3: a pickle, which
    could run code when read, so it is never opened (its key is the same description with version 2)."""
    old = folder / f"{safe_label}-{_digest({**key_src, 'version': 2})[:20]}.pkl"
    if not old.exists():
        return
    logger.warning(
        "not reading the corpus cache %s written by an earlier biaskit: it is a pickle, which could run code "
        "when read; it is removed and the corpus is preprocessed again (the cache is now a JSON file)",
        old,
    )
    for f in (old, checksum_sidecar(old)):
        with contextlib.suppress(OSError):
            f.unlink()


def _read_corpus_cache(path: Path, key: str) -> tuple[list[list[str]], list[str]] | None:
    """``(sentences, warnings)`` of the cache file ``path`` of cache key ``key``, or None.

    None when there is no file, and, with a WARNING naming the file and the reason, when its checksum file
    does not vouch for it (:func:`biaskit.core.io.cache_file_problem`: permissions, a checksum file missing,
    unreadable, of another file or key, a size or sha256 that differs) or when it does not decode to this
    cache key's corpus.  The file is gzipped JSON: it holds data only, whoever wrote it.
    """
    if not path.exists():
        return None
    problem = cache_file_problem(path, key)
    if problem is None:
        try:
            doc = json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))
        except (OSError, EOFError, zlib.error, UnicodeDecodeError, ValueError, RecursionError) as exc:
            doc, problem = None, f"it is unreadable ({type(exc).__name__}: {exc})"
        if problem is None:
            problem = _corpus_cache_doc_problem(doc, key)
    if problem is not None:
        logger.warning("not using the corpus cache %s: %s; preprocessing again", path, problem)
        return None
    return doc["sentences"], doc["warnings"]


def _corpus_cache_doc_problem(doc: object, key: str) -> str | None:
    """Why a decoded corpus cache document is not this cache key's corpus, or None."""
    if not isinstance(doc, dict) or doc.get("format") != _CACHE_FORMAT:
        return "it is not a biaskit corpus cache file"
    if doc.get("version") != _CACHE_VERSION:
        return f"it is of cache version {doc.get('version')!r} (this biaskit writes {_CACHE_VERSION})"
    if doc.get("key") != key:
        return f"it holds the corpus of another cache key ({str(doc.get('key'))[:20]}...)"
    sentences, found = doc.get("sentences"), doc.get("warnings")
    if not (
        isinstance(sentences, list)
        and all(type(s) is list and all(type(t) is str for t in s) for s in sentences)
        and isinstance(found, list)
        and all(type(m) is str for m in found)
    ):
        return "its sentences or warnings are not lists of text"
    return None


def _write_corpus_cache(path: Path, key: str, sentences: list[list[str]], found: list[str]) -> None:
    """Store ``sentences`` and the WARNING messages ``found`` as gzipped JSON, then the checksum file.

    Written under a unique temporary name and renamed (:func:`biaskit.core.io.atomic_write_bytes`), so
    parallel writers and readers never see half a file.  Best effort: a full disk or another write error
    is logged as a WARNING naming the file, and nothing is left behind; the caller still returns its
    corpus.
    """
    doc = {
        "format": _CACHE_FORMAT,
        "version": _CACHE_VERSION,
        "key": key,
        "sentences": sentences,
        "warnings": list(found),
    }
    # ASCII JSON (\u escapes) keeps every str exact, lone surrogates included; mtime=0: same bytes each time
    data = gzip.compress(json.dumps(doc, separators=(",", ":")).encode("ascii"), compresslevel=1, mtime=0)
    try:
        atomic_write_bytes(path, data, private=True)
        write_cache_checksum(path, key)
    except OSError as exc:
        with contextlib.suppress(OSError):
            path.unlink()
        logger.warning(
            "could not write the corpus cache %s (%s); the corpus is used without it and will be "
            "preprocessed again next time",
            path,
            exc,
        )


# --------------------------------------------------------------------------- frequencies


def word_frequencies(
    sentences: Iterable[Sequence[str]], *, unit: Literal["token", "sentence"] = "token"
) -> Counter:
    """Absolute frequency of every token.

    ``unit="token"`` counts every occurrence; ``unit="sentence"`` counts the number of
    sentences containing the word (what the thesis's ``freq`` measured, because its
    sentences were deduplicated; seed 000 section 3.6.3).
    """
    if unit == "token":
        counter: Counter = Counter()
        for s in sentences:
            counter.update(s)
        return counter
    if unit == "sentence":
        counter = Counter()
        for s in sentences:
            counter.update(set(s))
        return counter
    raise ValueError(f"unit must be 'token' or 'sentence', got {unit!r}")


@dataclass(frozen=True)
class CorpusStats:
    """Size of a preprocessed corpus (for notebooks)."""

    n_sentences: int
    n_tokens: int
    n_types: int
    mean_sentence_length: float
    extra: dict = field(default_factory=dict)


def corpus_stats(sentences: Sequence[Sequence[str]]) -> CorpusStats:
    """Number of sentences, tokens and distinct words, and the mean sentence length."""
    n_tokens = sum(len(s) for s in sentences)
    types = {t for s in sentences for t in s}
    return CorpusStats(
        n_sentences=len(sentences),
        n_tokens=n_tokens,
        n_types=len(types),
        mean_sentence_length=n_tokens / len(sentences) if sentences else 0.0,
    )


__all__ += ["CorpusStats", "corpus_stats"]
