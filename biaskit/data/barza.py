"""The bundled data of Barza's Gender Bias Evaluation Framework (seed 002): templates, professions, pairs.

Seed 002: K. G. Barza (2023), *Towards a Robust Gender Bias Evaluation in NLP*, MSc thesis, American
University of Beirut.  Appendix II's templates (section 4.2) and Appendix I's professions, the sentence pairs
and example sentences the thesis prints (section 4.1) and its result tables, read from ``data/barza/`` and
``wordlists/en/barza_*`` (see ``data/barza/PROVENANCE.md``).  The tests that use them live in
:mod:`biaskit.metrics.gender_templates`, which re-exports these loaders.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from biaskit.core.io import ValidationReport, check_csv_header, issue_record, read_csv_lines, read_json_file

logger = logging.getLogger(__name__)

Version = Literal["raw", "clean"]

__all__ = [
    "Version",
    "load_barza_published",
    "load_tbd_professions",
    "load_tbd_templates",
    "load_tgb_examples",
    "load_tgb_pairs",
]


def _data(*parts: str) -> Any:
    from biaskit.core.paths import data_dir

    path = data_dir().joinpath("barza", *parts)
    if not path.exists():
        raise FileNotFoundError(f"bundled Barza (seed 002) file not found: {path}")
    return path


def load_tbd_templates(version: Version = "clean") -> dict[str, list[dict[str, Any]]]:
    """Appendix II templates per category, each ``{"template", "slot", "source_index"[, "fix"]}``.

    ``version="raw"``: verbatim, typos and defects preserved (stray quotes, the literal
    word "profession" in two Food Service templates, "his" leaking into Protective #7,
    Testicle #1 duplicating Breastfeed #10, ...).  ``"clean"``: those defects corrected,
    each change described in the entry's ``fix``; the duplicate dropped.  ``slot`` is
    ``"subject"`` (he/she) or ``"possessive"`` (his/her).  See ``data/barza/PROVENANCE.md``.

    Examples
    --------
    >>> templates = load_tbd_templates()
    >>> len(templates), sorted(templates["medical"][0])
    (12, ['slot', 'source_index', 'template'])
    """
    if version not in ("raw", "clean"):
        raise ValueError(f"version must be 'raw' or 'clean', got {version!r}")
    doc = read_json_file(_data(f"tbd_templates_{version}.json"), "Barza templates")
    return doc["categories"]


def load_tbd_professions(
    version: Version = "clean", *, farming_substitute: bool = False
) -> dict[str, list[str]]:
    """Appendix I professions per category (``gender_related_words`` = pregnant, testicles, breastfeed).

    ``"raw"``: verbatim (capitals, "database architecture", plural Protective entries).
    ``"clean"``: lower-cased, "database architect", singular Protective entries,
    "supervisor of retail sales workers".  Appendix I lists no Farming & Fishing
    professions although Appendix II has 13 templates for them; ``farming_substitute=True``
    adds biaskit's substitute list (BLS farming/fishing/forestry occupations; not the
    thesis's), clearly a substitute.

    Examples
    --------
    >>> professions = load_tbd_professions()
    >>> len(professions), professions["medical"][:3]
    (9, ['doctor', 'surgeon', 'paramedic'])
    """
    from biaskit.core.paths import wordlists_dir
    from biaskit.data.wordlists import load_wordlist_file

    if version not in ("raw", "clean"):
        raise ValueError(f"version must be 'raw' or 'clean', got {version!r}")
    prof = load_wordlist_file(wordlists_dir() / "en" / f"barza_tbd_professions_{version}.json")
    if farming_substitute:
        sub = load_wordlist_file(wordlists_dir() / "en" / "barza_tbd_professions_farming_substitute.json")
        logger.info(
            "adding biaskit's SUBSTITUTE Farming & Fishing professions (not in the thesis): %s",
            sub["farming_fishing"],
        )
        prof = {**prof, **sub}
    return prof


def _read_sentence_csv(
    path: Path, what: str, columns: Sequence[str], required: Sequence[str], *, empty: Any
) -> pd.DataFrame:
    """Read a bundled CSV of sentences (every column, in file order), checking every record.

    The file is parsed with the CSV reader of :mod:`biaskit.data.datasets`, which knows each
    record's file line.  A missing or repeated column among ``columns`` raises ``ValueError``.
    Records that cannot be used are left out: a malformed record (a wrong number of fields,
    e.g. a file cut mid-row, or a quote never closed) and a record whose ``required`` cells
    are empty.  They, and problems that lose no data (blank lines, no line break at the end
    of the file), are logged as a WARNING with the counts ("loaded N of M data records") and
    the file lines, and listed in ``df.attrs["report"]`` (a
    :class:`biaskit.data.datasets.ValidationReport`).  Other empty cells become ``empty``.
    """
    context = f"{what} ({path})"
    parsed = read_csv_lines(path.read_bytes(), "utf-8", context)
    header = parsed.header
    check_csv_header(header, columns, context, all_unique=True)
    issues = list(parsed.issues)
    kept: list[list[str]] = []
    for line, fields in parsed.rows:
        blank = [c for c in required if not fields[header.index(c)].strip()]
        if blank:
            issues.append(
                issue_record(
                    line,
                    f"empty {' and '.join(blank)}: record left out",
                    "skipped",
                    ",".join(fields),
                    column=blank[0],
                )
            )
            continue
        kept.append(fields)
    df = pd.DataFrame({c: [f[j] if f[j] != "" else empty for f in kept] for j, c in enumerate(header)})
    report = ValidationReport.from_records(
        issues, context=context, n_records=parsed.n_records, n_loaded=len(df)
    )
    report.log(logger, logging.WARNING)
    df.attrs["report"] = report
    return df


def load_tgb_pairs(which: Literal["tgb", "thesis_other", "all"] = "tgb") -> pd.DataFrame:
    """Gender-swapped sentence pairs printed in the thesis: columns
    ``category, sent_stereo, sent_anti, source``.

    ``"tgb"``: the four occupation pairs the thesis prints as TGB examples (sections
    4.1.1.2-4.1.2).  ``"thesis_other"``: six other swapped pairs it prints (the
    stethoscope example, CrowS-Pairs, WinoBias, MT Gender and NLI examples; the first /
    second sentence as printed).  The 300 TGB pairs are unpublished and are not
    reconstructed; load your own CSV with the same columns instead.

    A malformed record (e.g. a file cut mid-row) and a pair with an empty sentence are left
    out, logged as a WARNING with the file lines, and listed in ``df.attrs["report"]``;
    other empty cells are ``NaN``.  A missing column raises ``ValueError``.

    Examples
    --------
    >>> pairs = load_tgb_pairs()
    >>> pairs.shape, list(pairs.columns[:3])
    ((4, 5), ['category', 'sent_stereo', 'sent_anti'])
    """
    if which not in ("tgb", "thesis_other", "all"):
        raise ValueError(f"which must be 'tgb', 'thesis_other' or 'all', got {which!r}")
    columns = ["category", "sent_stereo", "sent_anti", "source"]
    frames, reports = [], []
    for name, file in (("tgb", "tgb_published_pairs.csv"), ("thesis_other", "thesis_other_pairs.csv")):
        if which in (name, "all"):
            df = _read_sentence_csv(
                _data(file), "Barza sentence pairs", columns, ["sent_stereo", "sent_anti"], empty=np.nan
            )
            reports.append(df.attrs["report"])
            frames.append(df.assign(set=name))
    out = pd.concat(frames, ignore_index=True)
    out.attrs["report"] = reports[0] if len(reports) == 1 else reports[0] + reports[1]
    return out


def load_tgb_examples() -> pd.DataFrame:
    """The hostile / benevolent sexism example sentences of section 4.1.1.1 (no counterparts are published).

    Columns as in the file (``category, sentence, source``; empty cells are ``""``).  A
    malformed record (e.g. a file cut mid-row) and a record with an empty ``sentence`` are
    left out, logged as a WARNING with the file lines, and listed in ``df.attrs["report"]``.

    Examples
    --------
    >>> examples = load_tgb_examples()
    >>> examples.shape, list(examples.columns)
    ((7, 3), ['category', 'sentence', 'source'])
    """
    return _read_sentence_csv(
        _data("tgb_published_examples.csv"), "Barza example sentences", ["sentence"], ["sentence"], empty=""
    )


def load_barza_published() -> dict[str, Any]:
    """The thesis's result tables 3, 4, 5 and its worked examples, verbatim
    (``data/barza/published_results.json``).

    Invalid JSON raises ``ValueError`` naming the file, line and column.

    Examples
    --------
    >>> published = load_barza_published()
    >>> sorted(k for k in published if not k.startswith("_"))
    ['table3_asld_models', 'table4_asld_corpus', 'table5_appd_gender_words', 'worked_examples']
    """
    return read_json_file(_data("published_results.json"), "Barza published results")
