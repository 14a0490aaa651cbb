"""Bundled sentence datasets for masked-language-model bias metrics, with validation.

Three datasets live under ``data/`` (each folder has a ``PROVENANCE.md`` with the
source commit, licence and sha256 of every file; the checksums are verified on load):

* ``data/crows-pairs-es/es_en.csv``: the Spanish CrowS-Pairs of the thesis (seed 000,
  section 4.4.1): 1503 pairs ``sent_more`` / ``sent_less``, paraphrases
  (``*_par``) and random sentences (``*_ran``) for the first 170 pairs, ``bias_type``.
  The file is **not UTF-8**: it is Windows-1252 / latin-1 bytes.  We decode it
  explicitly as latin-1 (what the thesis did) and then check every cell for
  encoding damage, repairing what can be repaired and reporting it by line number.
* ``data/crows-pairs/crows_pairs_anonymized.csv``: the English CrowS-Pairs
  (Nangia et al. 2020, 1508 pairs, CC BY-SA 4.0).
* ``data/stereoset/dev.json.gz``: StereoSet dev (Nadeem et al. 2021; 2106
  intrasentence and 2123 intersentence examples, CC BY-SA 4.0) and the official
  bert-base-cased predictions used to check our scorer.

Every CSV loader returns a :class:`pandas.DataFrame` whose ``attrs["report"]`` is a
:class:`ValidationReport`: the records that were left out, repaired or cannot be used, with
their CSV line numbers and the reason, and how many data records the file holds and how many
were loaded (``report.summary()``: "loaded 29 of 1503 data records ...").  Nothing is dropped
silently: every problem is logged as a WARNING with its count and lines (truncated files,
malformed records, quotes never closed, blank lines included), and ``errors="raise"`` turns
left-out records into a :class:`ValueError`.  The StereoSet loaders check every example and
prediction record the same way (:func:`stereoset_example_problem`,
:func:`validate_stereoset_predictions`).
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
import string
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from biaskit.core.io import (
    ValidationReport,
    check_csv_header,
    issue_record,
    read_csv_lines,
    read_json_file,
    sha256_file,
)
from biaskit.core.paths import data_dir, resolve_user_path

logger = logging.getLogger(__name__)

Errors = Literal["report", "raise"]

__all__ = [
    "CHECKSUMS",
    "CrowsVariant",
    "ValidationReport",
    "dataset_fingerprint",
    "detect_encoding_problem",
    "load_crows_pairs_en",
    "load_crows_pairs_es",
    "load_crows_pairs_es_table",
    "load_stereoset",
    "load_stereoset_predictions",
    "repair_encoding",
    "stereoset_example_problem",
    "stereoset_intrasentence",
    "stereoset_issues",
    "validate_stereoset_predictions",
]

#: sha256 of every bundled file this module reads (also listed in each PROVENANCE.md).
CHECKSUMS: dict[str, str] = {
    "crows-pairs-es/es_en.csv": "2bf31d1a9cf2d03e5fcdcd07878abbe08fb8f7bec6a0c60870310b67da7ab383",
    "crows-pairs/crows_pairs_anonymized.csv": (
        "dfb36986ce0502abbaf7055b9176da3d08d48e07df1251991b5dfbcbceab9d0c"
    ),
    "stereoset/dev.json.gz": "ad81222e550aa3ad52f69b6592bb8f73d673fde1ee1e66dc536ab53192db4b26",
    "stereoset/predictions_bert-base-cased.json.gz": (
        "16baf047762db5993c4b6c0b0e54166529949d43203a6d196a15d452533500cd"
    ),
}

CrowsVariant = Literal["original", "paraphrased", "random"]
_VARIANT_SUFFIX = {"original": "", "paraphrased": "_par", "random": "_ran"}


# ---------------------------------------------------------------------------------------------
# validation report
# ---------------------------------------------------------------------------------------------
# :class:`ValidationReport` lives in :mod:`biaskit.core.io` (with the CSV and JSON readers) and is
# imported here, so ``from biaskit.data.datasets import ValidationReport`` keeps working.


# ---------------------------------------------------------------------------------------------
# encoding checks
# ---------------------------------------------------------------------------------------------
_C1 = re.compile("[\u0080-\u009f]")
# characters that start the latin-1 / cp1252 reading of a UTF-8 multi-byte sequence ("Ã©" = "é")
_MOJIBAKE_LEAD = re.compile("[\u00c2-\u00f4]")


def _utf8_round_trip(text: str) -> str | None:
    """``text`` re-encoded as latin-1 or cp1252 and decoded as UTF-8, when that works and changes it."""
    for enc in ("latin-1", "cp1252"):
        try:
            fixed = text.encode(enc).decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            continue
        if fixed != text:
            return fixed
    return None


def detect_encoding_problem(text: str) -> str | None:
    """Name the encoding damage in ``text`` or return ``None`` when it looks clean.

    Three kinds are recognised:

    * ``"replacement character"``: U+FFFD, bytes that could not be decoded at all;
    * ``"utf-8 read as latin-1"`` (mojibake such as ``"Ã©"`` for ``"é"``): the text
      re-encoded as latin-1 (or cp1252) is valid UTF-8 and differs.  Genuine latin-1
      Spanish text is almost never valid UTF-8 once encoded, so this has few false alarms;
    * ``"cp1252 read as latin-1"``: C1 control characters (U+0080-U+009F), i.e. Windows
      smart quotes / ellipses decoded with latin-1 (the Spanish CrowS-Pairs has them).
    """
    if "\ufffd" in text:
        return "replacement character"
    if _MOJIBAKE_LEAD.search(text) and _utf8_round_trip(text) is not None:
        return "utf-8 read as latin-1"
    if _C1.search(text):
        return "cp1252 read as latin-1"
    return None


def repair_encoding(text: str) -> str | None:
    """Repair the damage :func:`detect_encoding_problem` names; ``None`` when impossible."""
    problem = detect_encoding_problem(text)
    if problem is None:
        return text
    fixed: str | None = None
    if problem == "utf-8 read as latin-1":
        fixed = _utf8_round_trip(text)
    elif problem == "cp1252 read as latin-1":
        try:
            fixed = text.encode("latin-1").decode("cp1252")
        except (UnicodeEncodeError, UnicodeDecodeError):
            fixed = None
    # a repair that leaves damage behind (e.g. an encoded U+FFFD) is no repair
    if fixed is None or detect_encoding_problem(fixed) is not None:
        return None
    return fixed


# ---------------------------------------------------------------------------------------------
# files
# ---------------------------------------------------------------------------------------------
def _bundled(rel: str, path: str | Path | None) -> Path:
    """Path of a bundled file (checksum verified) or of a user-given file (not verified)."""
    if path is not None:
        p = resolve_user_path(path)
        if not p.exists():
            raise FileNotFoundError(f"{p} does not exist")
        return p
    p = data_dir() / rel
    if not p.exists():
        raise FileNotFoundError(
            f"bundled dataset {rel!r} is missing under {data_dir()} (BIASKIT_DATA_DIR); "
            "restore it from the repository (see its PROVENANCE.md)"
        )
    expected = CHECKSUMS.get(rel)
    if expected is not None and (got := sha256_file(p)) != expected:
        raise ValueError(
            f"{p} has sha256 {got}, expected {expected} (PROVENANCE.md): the bundled file was "
            "modified or corrupted; restore it, or pass path=... to load your own copy"
        )
    return p


def _read_csv_frame(
    p: Path, encoding: str, context: str, columns: Sequence[str]
) -> tuple[pd.DataFrame, list[dict[str, Any]], int]:
    """:func:`~biaskit.core.io.read_csv_lines` as a frame of ``columns`` (empty cells -> ``None``) led by the
    file ``line`` number, the parse issues and the number of data records in the file;
    ``ValueError`` if a column is missing, or if the bytes are not ``encoding`` text (a UTF-16 file,
    a byte that does not decode: the message names the line and the ``encoding=`` that reads it;
    every caller has that parameter)."""
    parsed = read_csv_lines(p.read_bytes(), encoding, context, fix="pass encoding={encoding!r}")
    header = parsed.header
    check_csv_header(header, columns, context)
    df = pd.DataFrame([f for _, f in parsed.rows], columns=header)[list(columns)]
    df = df.astype(object).where(df != "", None)
    df.insert(0, "line", [ln for ln, _ in parsed.rows])
    return df, parsed.issues, parsed.n_records


def _check_cells(
    df: pd.DataFrame, columns: Sequence[str], *, repair: bool, issues: list[dict[str, Any]]
) -> pd.DataFrame:
    """Check each text cell for encoding damage; repair in place or mark the row unusable."""
    unusable = pd.Series(False, index=df.index)
    for col in columns:
        for i, val in df[col].items():
            if not isinstance(val, str):
                continue
            problem = detect_encoding_problem(val)
            if problem is None:
                continue
            fixed = repair_encoding(val) if repair else None
            if fixed is not None:
                df.at[i, col] = fixed
                issues.append(
                    issue_record(
                        df.at[i, "line"], f"{problem} (repaired)", "repaired", val, row=i, column=col
                    )
                )
            else:
                unusable[i] = True
                issues.append(
                    issue_record(
                        df.at[i, "line"], f"{problem} (cannot be repaired)", "skipped", val, row=i, column=col
                    )
                )
    df["encoding_ok"] = ~unusable
    return df


def _finish(
    df: pd.DataFrame,
    issues: list[dict[str, Any]],
    context: str,
    errors: Errors,
    n_records: int | None = None,
    *,
    log: bool = True,
) -> pd.DataFrame:
    """Attach the :class:`ValidationReport` to ``df.attrs["report"]``, log it and apply ``errors``.

    Any problem (a record left out, a row marked unusable, a repaired or suspicious cell, a
    blank line) is logged as a WARNING with the counts ("loaded N of M data records") and the
    file lines; a clean file gets one INFO line.  ``errors="raise"`` raises on skipped records.
    """
    if errors not in ("report", "raise"):
        raise ValueError("errors must be 'report' or 'raise'")
    report = ValidationReport.from_records(issues, context=context, n_records=n_records, n_loaded=len(df))
    if errors == "raise":
        report.raise_if_any(("skipped",))
    if log:
        _log_report(report)
    df.attrs["report"] = report
    return df


def _log_report(report: ValidationReport) -> None:
    """A report with problems as a WARNING (counts and lines), a clean one as one INFO line."""
    if len(report):
        report.log(logger, logging.WARNING)
    else:
        logger.info("%s", report.summary())


# ---------------------------------------------------------------------------------------------
# CrowS-Pairs (Spanish, thesis)
# ---------------------------------------------------------------------------------------------
_ES_COLUMNS = [
    "sent_more",
    "sent_more_par",
    "sent_more_ran",
    "sent_less",
    "sent_less_par",
    "sent_less_ran",
    "bias_type",
]


def _check_pairs(
    df: pd.DataFrame, pairs: Sequence[tuple[str, str]], issues: list[dict[str, Any]], *, required: bool
) -> None:
    """Report pairs with one sentence empty (``"kept"``: the pair cannot be scored) and, when the
    pair is ``required`` (the original sentences), rows with both empty (``"skipped"``)."""
    for more, less in pairs:
        has_more, has_less = df[more].notna(), df[less].notna()
        for i in df.index[has_more ^ has_less]:
            empty, other = (less, more) if has_more[i] else (more, less)
            issues.append(
                issue_record(
                    int(df.at[i, "line"]),
                    f"incomplete pair: {empty} is empty but {other} is not (the pair cannot be scored)",
                    "kept",
                    df.at[i, other],
                    row=i,
                    column=empty,
                )
            )
        if required:
            for i in df.index[~has_more & ~has_less]:
                issues.append(
                    issue_record(
                        int(df.at[i, "line"]),
                        f"empty pair: {more} and {less} are both empty",
                        "skipped",
                        row=i,
                        column=more,
                    )
                )


def load_crows_pairs_es_table(
    *,
    path: str | Path | None = None,
    encoding: str = "latin-1",
    repair: bool = True,
    errors: Errors = "report",
) -> pd.DataFrame:
    """The whole Spanish CrowS-Pairs table of the thesis (1503 rows, 7 columns + ``line``).

    Seed 000, section 4.4.1 (the file ``es_en.csv`` of the thesis repository).  The bytes
    are decoded explicitly with ``encoding`` (latin-1, as the thesis did).  Every text cell
    is then checked with :func:`detect_encoding_problem`: with ``repair=True`` the 8 cells
    holding Windows-1252 curly quotes / ellipses (lines 304, 320, 348 ...) are re-decoded
    as cp1252 and listed as ``"repaired"`` in ``df.attrs["report"]``; cells that cannot be
    repaired mark the row ``encoding_ok = False`` and are listed as ``"skipped"``
    (``errors="raise"`` raises instead).  ``repair=False`` keeps the thesis's latin-1 text
    byte for byte (the BERT tokenizer then deletes the control characters).

    Malformed CSV records (a wrong number of fields, a quote never closed, e.g. a file cut off
    in the middle of a row) are left out and listed as ``"skipped"`` with their file lines;
    ``report.n_records`` / ``report.n_loaded`` say how many data records the file holds and
    how many were loaded.  A pair with one sentence empty is listed as ``"kept"``; a row
    whose two original sentences are both empty as ``"skipped"``.  Every problem is logged
    as a WARNING with the counts and lines; ``errors="raise"`` raises on skipped records.

    Empty cells are ``None`` (paraphrases and random sentences exist only for rows 0-169).
    ``bias_type`` is missing for rows 586-1502 in the source; they are kept, the count is
    logged, and they are labelled ``None`` (callers group them as they see fit).
    ``line`` is the 1-based line of the row in the CSV file (header = line 1).

    Examples
    --------
    >>> table = load_crows_pairs_es_table()
    >>> table.shape, list(table.columns[:4])
    ((1503, 9), ['line', 'sent_more', 'sent_more_par', 'sent_more_ran'])
    """
    return _load_es_table(path, encoding, repair, errors, log=True)


def _load_es_table(
    path: str | Path | None, encoding: str, repair: bool, errors: Errors, *, log: bool
) -> pd.DataFrame:
    """:func:`load_crows_pairs_es_table`; ``log=False`` leaves the logging to the caller."""
    context = "Spanish CrowS-Pairs (es_en.csv)" if path is None else f"Spanish CrowS-Pairs ({path})"
    p = _bundled("crows-pairs-es/es_en.csv", path)
    df, issues, n_records = _read_csv_frame(p, encoding, context, _ES_COLUMNS)
    df = _check_cells(df, _ES_COLUMNS[:-1], repair=repair, issues=issues)
    _check_pairs(df, [("sent_more", "sent_less")], issues, required=True)
    _check_pairs(
        df, [("sent_more_par", "sent_less_par"), ("sent_more_ran", "sent_less_ran")], issues, required=False
    )
    n_missing_type = int(df["bias_type"].isna().sum())
    if n_missing_type:
        lines = df.loc[df["bias_type"].isna(), "line"]
        logger.info(
            "%s: bias_type is empty for %d of %d rows (lines %d-%d); kept with bias_type=None",
            context,
            n_missing_type,
            len(df),
            int(lines.min()),
            int(lines.max()),
        )
    return _finish(df, issues, context, errors, n_records, log=log)


def load_crows_pairs_es(
    variant: CrowsVariant = "original",
    *,
    path: str | Path | None = None,
    encoding: str = "latin-1",
    repair: bool = True,
    errors: Errors = "report",
) -> pd.DataFrame:
    """Spanish CrowS-Pairs pairs of one variant, as ``sent_more, sent_less, bias_type, line``.

    ``variant="original"`` gives the 1503 translated pairs (seed 000, Tables 4.2-4.7);
    ``"paraphrased"`` and ``"random"`` the 170 paraphrased / random pairs aligned with the
    first 170 originals (section 4.3, Tables 4.8-4.10).  The columns are renamed to
    ``sent_more`` / ``sent_less`` in every variant, so the same scoring code applies.
    ``row`` numbers in ``attrs["report"]`` refer to the returned frame (``None`` for records
    that are not in it); the report keeps the file's problems that concern this variant's
    columns and the malformed records, and the file's ``n_records`` / ``n_loaded``.  See
    :func:`load_crows_pairs_es_table` for the checks; the log shows this variant's report only.

    Examples
    --------
    >>> pairs = load_crows_pairs_es()
    >>> len(pairs), list(pairs.columns)
    (1503, ['line', 'sent_more', 'sent_less', 'bias_type', 'encoding_ok'])
    """
    if variant not in _VARIANT_SUFFIX:
        raise ValueError(f"variant must be one of {list(_VARIANT_SUFFIX)}, got {variant!r}")
    table = _load_es_table(path, encoding, repair, errors, log=False)
    sfx = _VARIANT_SUFFIX[variant]
    more, less = f"sent_more{sfx}", f"sent_less{sfx}"
    keep = table[more].notna() | table[less].notna()
    df = table.loc[keep, ["line", more, less, "bias_type", "encoding_ok"]].rename(
        columns={more: "sent_more", less: "sent_less"}
    )
    df = df.reset_index(drop=True)
    # re-target the report to this variant's rows and columns (record-level problems have no column)
    rep: ValidationReport = table.attrs["report"]
    line_to_row = {int(ln): i for i, ln in enumerate(df["line"])}
    iss = rep.issues.copy()
    iss = iss[iss["column"].isin([more, less]) | iss["column"].isna()]
    iss["row"] = [
        line_to_row.get(int(ln)) if pd.notna(ln) and pd.notna(r) else None
        for ln, r in zip(iss["line"], iss["row"], strict=True)
    ]
    report = ValidationReport(
        issues=iss.reset_index(drop=True),
        context=f"Spanish CrowS-Pairs ({variant}, {len(df)} pairs)",
        n_records=rep.n_records,
        n_loaded=rep.n_loaded,
    )
    _log_report(report)
    df.attrs["report"] = report
    df.attrs["variant"] = variant
    df.attrs["source"] = "data/crows-pairs-es/es_en.csv" if path is None else str(path)
    return df


# ---------------------------------------------------------------------------------------------
# CrowS-Pairs (English)
# ---------------------------------------------------------------------------------------------
_DIRECTIONS = ("stereo", "antistereo")


def load_crows_pairs_en(
    *, path: str | Path | None = None, encoding: str = "utf-8", errors: Errors = "report"
) -> pd.DataFrame:
    """The English CrowS-Pairs (Nangia et al. 2020): 1508 pairs, UTF-8, CC BY-SA 4.0.

    Columns ``line, sent_more, sent_less, stereo_antistereo, bias_type, encoding_ok``.
    ``sent_more`` is always the sentence that is *more* biased against the disadvantaged
    group; ``stereo_antistereo`` says whether it does so by stating a stereotype
    (``"stereo"``) or by violating an anti-stereotype (``"antistereo"``).  The official
    ``metric.py`` reads a ``stereo`` row as ``sent1 = sent_more, sent2 = sent_less`` and an
    ``antistereo`` row as ``sent1 = sent_less, sent2 = sent_more``, and counts the pair as
    biased when ``sent1`` (stereo) resp. ``sent2`` (antistereo) scores higher: in both
    directions a pair counts as biased when **sent_more** scores higher.  The direction only
    changes the order in which the two sentences are aligned; pass this column as
    ``biaskit.lm.score_pairs(direction=df["stereo_antistereo"])`` to reproduce the official
    alignment (see :mod:`biaskit.metrics.crows`).

    Malformed records are left out and reported like in :func:`load_crows_pairs_es_table`;
    a ``stereo_antistereo`` other than ``"stereo"`` / ``"antistereo"`` and a pair with an
    empty sentence are listed as ``"kept"`` (scoring with ``direction=`` refuses them).

    ``encoding`` decodes the file (the official file is UTF-8, a leading byte-order mark is
    dropped).  A file in another encoding (a UTF-16 export, Windows cp1252 bytes) raises
    ``ValueError`` naming the file, the line of the first byte that does not decode, and the
    ``encoding=`` that reads it.

    Examples
    --------
    >>> pairs = load_crows_pairs_en()
    >>> len(pairs), pairs["bias_type"].value_counts().index[0]
    (1508, 'race-color')
    """
    context = (
        "English CrowS-Pairs (crows_pairs_anonymized.csv)"
        if path is None
        else f"English CrowS-Pairs ({path})"
    )
    p = _bundled("crows-pairs/crows_pairs_anonymized.csv", path)
    df, issues, n_records = _read_csv_frame(
        p, encoding, context, ["sent_more", "sent_less", "stereo_antistereo", "bias_type"]
    )
    df = _check_cells(df, ["sent_more", "sent_less"], repair=True, issues=issues)
    _check_pairs(df, [("sent_more", "sent_less")], issues, required=True)
    for i in df.index[~df["stereo_antistereo"].isin(_DIRECTIONS)]:
        issues.append(
            issue_record(
                int(df.at[i, "line"]),
                "stereo_antistereo is not 'stereo' or 'antistereo'",
                "kept",
                df.at[i, "stereo_antistereo"],
                row=i,
                column="stereo_antistereo",
            )
        )
    return _finish(df, issues, context, errors, n_records)


# ---------------------------------------------------------------------------------------------
# StereoSet
# ---------------------------------------------------------------------------------------------
STEREOSET_LABELS = ("stereotype", "anti-stereotype", "unrelated")


def stereoset_example_problem(ex: Any, split: str = "intrasentence") -> str | None:
    """Why the StereoSet example ``ex`` cannot be used, or ``None`` when it is well formed.

    An example needs the strings ``id``, ``target``, ``bias_type``, ``context`` and exactly
    three ``sentences`` (each with string ``id`` and ``sentence``) whose ``gold_label`` are
    ``stereotype``, ``anti-stereotype`` and ``unrelated`` once each; an intrasentence context
    needs a ``BLANK`` whose word the official loader can find in every sentence.
    """
    if not isinstance(ex, dict):
        return f"not an object but {type(ex).__name__}"
    bad = [k for k in ("id", "target", "bias_type", "context") if not isinstance(ex.get(k), str)]
    if bad:
        return f"missing or non-string field(s) {bad}"
    sents = ex.get("sentences")
    if not isinstance(sents, list) or not all(isinstance(s, dict) for s in sents):
        return "'sentences' is not a list of objects"
    bad_s = [
        i
        for i, s in enumerate(sents)
        if not (isinstance(s.get("id"), str) and isinstance(s.get("sentence"), str))
    ]
    if bad_s:
        return f"sentence(s) {bad_s} lack a string 'id' or 'sentence'"
    labels = sorted(str(s.get("gold_label")) for s in sents)
    if labels != sorted(STEREOSET_LABELS):
        return f"gold labels are {labels}, expected one each of {list(STEREOSET_LABELS)}"
    if split == "intrasentence":
        if "BLANK" not in ex["context"]:
            return "no BLANK in the context"
        for s in sents:
            try:
                _template_word(ex["context"], s["sentence"])
            except IndexError:
                return f"the BLANK word cannot be found in the {s['gold_label']} sentence {s['sentence']!r}"
    return None


def stereoset_issues(gold: dict[str, Any], splits: Sequence[str]) -> list[dict[str, Any]]:
    """One ``"skipped"`` issue per malformed example and per repeated example / sentence id.

    ``gold`` is the official StereoSet JSON (:func:`load_stereoset`), ``splits`` the splits to check
    (``"intrasentence"``, ``"intersentence"``).  Each issue (:func:`biaskit.core.io.issue_record`)
    has ``row`` = the example's position in its split, ``column`` = the split and ``text`` = its id;
    the reason is :func:`stereoset_example_problem`'s, or the repetition.  Ids are checked across
    all the given splits.
    """
    issues: list[dict[str, Any]] = []
    seen_ex: set[str] = set()
    seen_sent: set[str] = set()
    for split in splits:
        for i, ex in enumerate(gold["data"].get(split, [])):
            problem = stereoset_example_problem(ex, split)
            ex_id = ex.get("id") if isinstance(ex, dict) else None
            if problem is None:
                dup = [s["id"] for s in ex["sentences"] if s["id"] in seen_sent]
                if ex_id in seen_ex:
                    problem = "repeated example id"
                elif dup:
                    problem = f"sentence id(s) {dup} already used by another example"
                seen_ex.add(ex_id)
                seen_sent.update(s["id"] for s in ex["sentences"])
            if problem is not None:
                issues.append(
                    issue_record(
                        None, f"malformed {split} example: {problem}", "skipped", ex_id, row=i, column=split
                    )
                )
    return issues


def load_stereoset(*, path: str | Path | None = None, errors: Errors = "report") -> dict[str, Any]:
    """The StereoSet dev set as the official JSON (``{"version", "data": {"intrasentence", ...}}``).

    Nadeem et al. 2021, version ``1.0-dev`` (2106 intrasentence, 2123 intersentence
    examples); seed 000 section 4.1.5.  ``path`` may point at a ``.json`` or ``.json.gz``.

    A truncated or invalid file raises ``ValueError`` (with the JSON line and column).  Every
    example is checked with :func:`stereoset_example_problem`; malformed examples and repeated
    ids are logged as a WARNING (split, position, id, reason) and kept in the returned data,
    which stays the official JSON: :func:`stereoset_intrasentence` and the scorer
    (:func:`biaskit.metrics.stereoset.example_table`) leave them out and list them in their
    ``attrs["report"]``.  ``errors="raise"`` raises instead.

    Examples
    --------
    >>> dev = load_stereoset()
    >>> sorted(dev["data"]), len(dev["data"]["intrasentence"])
    (['intersentence', 'intrasentence'], 2106)
    """
    if errors not in ("report", "raise"):
        raise ValueError("errors must be 'report' or 'raise'")
    p = _bundled("stereoset/dev.json.gz", path)
    data = read_json_file(p, "StereoSet")
    if not isinstance(data, dict) or not isinstance(data.get("data"), dict):
        raise ValueError(f"{p} is not a StereoSet file: no 'data' object")
    splits = [s for s in ("intrasentence", "intersentence") if s in data["data"]]
    if "intrasentence" not in splits:
        raise ValueError(f"{p} is not a StereoSet file: no data.intrasentence")
    for s in splits:
        if not isinstance(data["data"][s], list):
            raise ValueError(f"{p}: data.{s} is not a list of examples")
    n = sum(len(data["data"][s]) for s in splits)
    report = ValidationReport.from_records(
        stereoset_issues(data, splits), context=f"StereoSet ({p.name})", n_records=n, n_loaded=n
    )
    if errors == "raise":
        report.raise_if_any()
    report.log(logger, logging.WARNING)
    return data


def validate_stereoset_predictions(
    predictions: Any, *, source: str = "predictions", errors: Errors = "report"
) -> tuple[dict[str, list[dict[str, Any]]], ValidationReport]:
    """Check official-format StereoSet predictions and return the usable ones with a report.

    Records that are not ``{"id": str, "score": finite number}`` are left out (``"skipped"``);
    a repeated id is kept, and the last score wins as in the official scorer (``"kept"``,
    so the repetition is visible).  Problems are logged as a WARNING with their counts and
    positions (``split[index]``); ``errors="raise"`` raises on left-out records.  A top-level
    object that is not ``{split: [records]}`` raises ``ValueError``.
    """
    if errors not in ("report", "raise"):
        raise ValueError("errors must be 'report' or 'raise'")
    if not isinstance(predictions, dict) or not all(isinstance(v, list) for v in predictions.values()):
        raise ValueError(
            f"{source}: expected the official format "
            '{"intrasentence": [{"id": ..., "score": ...}, ...], "intersentence": [...]}'
        )
    clean: dict[str, list[dict[str, Any]]] = {}
    issues: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    n = 0
    for split, recs in predictions.items():
        out = []
        for i, rec in enumerate(recs):
            n += 1
            where = f"{split}[{i}]"
            rid = rec.get("id") if isinstance(rec, dict) else None
            score = rec.get("score") if isinstance(rec, dict) else None
            problem = None
            if not isinstance(rid, str):
                problem = "no string 'id'"
            elif isinstance(score, bool) or not isinstance(score, (int, float)):
                problem = f"'score' is {score!r}, not a number"
            elif not math.isfinite(score):
                problem = f"'score' is {score!r}"
            if problem is not None:
                issues.append(
                    issue_record(None, f"prediction {problem}", "skipped", rec, row=i, column=where)
                )
                continue
            if rid in seen:
                issues.append(
                    issue_record(
                        None,
                        f"repeated prediction id (also at {seen[rid]}); the last score is used, as the "
                        "official scorer does",
                        "kept",
                        rid,
                        row=i,
                        column=where,
                    )
                )
            seen[rid] = where
            out.append(rec)
        clean[split] = out
    report = ValidationReport.from_records(
        issues,
        context=f"StereoSet predictions ({source})",
        n_records=n,
        n_loaded=n - sum(1 for r in issues if r["action"] == "skipped"),
    )
    if errors == "raise":
        report.raise_if_any()
    report.log(logger, logging.WARNING)
    return clean, report


def load_stereoset_predictions(
    model: str = "bert-base-cased", *, path: str | Path | None = None, errors: Errors = "report"
) -> dict[str, list[dict[str, Any]]]:
    """Official-format StereoSet predictions (``{"intrasentence": [{"id", "score"}, ...], ...}``).

    The bundled file is the StereoSet authors' bert-base-cased dev predictions
    (moinnadeem/StereoSet, ``predictions_bert-base-cased_BertNextSentence_BertLM.json``),
    on which the official scorer gives overall LMS 85.772, SS 59.556, ICAT 69.380.
    Records are checked with :func:`validate_stereoset_predictions` (malformed ones are left
    out with a WARNING, or raise with ``errors="raise"``); a truncated file raises.

    Examples
    --------
    >>> predictions = load_stereoset_predictions("bert-base-cased")
    >>> sorted(predictions), sorted(predictions["intrasentence"][0])
    (['intersentence', 'intrasentence'], ['id', 'score'])
    """
    if path is None:
        if model != "bert-base-cased":
            raise FileNotFoundError(
                f"no bundled StereoSet predictions for {model!r}; only 'bert-base-cased' is bundled. "
                "Pass path=... to an official-format predictions JSON"
            )
        p = _bundled("stereoset/predictions_bert-base-cased.json.gz", None)
    else:
        p = _bundled("", path)
    preds, _ = validate_stereoset_predictions(
        read_json_file(p, "StereoSet predictions"), source=str(p), errors=errors
    )
    return preds


def _template_word(context: str, sentence: str) -> str:
    """The word filling BLANK, exactly as the official ``dataloader.StereoSet`` extracts it.

    The index of the (last) space-separated context word containing ``BLANK`` is looked up
    in the space-split sentence, and punctuation is stripped.  ``IndexError`` when the
    sentence has fewer words than that index.
    """
    word_idx = None
    for idx, word in enumerate(context.split(" ")):
        if "BLANK" in word:
            word_idx = idx
    if word_idx is None:
        raise ValueError(f"no BLANK in StereoSet context {context!r}")
    return sentence.split(" ")[word_idx].translate(str.maketrans("", "", string.punctuation))


def stereoset_intrasentence(gold: dict[str, Any] | None = None, *, errors: Errors = "report") -> pd.DataFrame:
    """StereoSet intrasentence examples as one row per (example, option).

    Columns: ``example_id, target, bias_type, context, gold_label`` (``stereotype``,
    ``anti-stereotype``, ``unrelated``), ``sentence_id, sentence, word`` (the BLANK filler,
    extracted as the official data loader does).  2106 examples x 3 options on dev.

    Malformed examples (:func:`stereoset_example_problem`) and examples repeating an id are
    left out and listed in ``df.attrs["report"]`` (``row`` = position in
    ``gold["data"]["intrasentence"]``), with a WARNING; ``errors="raise"`` raises instead.
    """
    gold = load_stereoset() if gold is None else gold
    if errors not in ("report", "raise"):
        raise ValueError("errors must be 'report' or 'raise'")
    examples = gold["data"]["intrasentence"]
    issues = stereoset_issues(gold, ["intrasentence"])
    bad = {int(r["row"]) for r in issues}
    rows = []
    for i, ex in enumerate(examples):
        if i in bad:
            continue
        for s in ex["sentences"]:
            rows.append(
                {
                    "example_id": ex["id"],
                    "target": ex["target"],
                    "bias_type": ex["bias_type"],
                    "context": ex["context"],
                    "gold_label": s["gold_label"],
                    "sentence_id": s["id"],
                    "sentence": s["sentence"],
                    "word": _template_word(ex["context"], s["sentence"]),
                }
            )
    columns = [
        "example_id",
        "target",
        "bias_type",
        "context",
        "gold_label",
        "sentence_id",
        "sentence",
        "word",
    ]
    df = pd.DataFrame(rows, columns=columns)
    report = ValidationReport.from_records(
        issues,
        context="StereoSet intrasentence examples",
        n_records=len(examples),
        n_loaded=len(examples) - len(bad),
    )
    if errors == "raise":
        report.raise_if_any()
    report.log(logger, logging.WARNING)
    df.attrs["report"] = report
    return df


# ---------------------------------------------------------------------------------------------
# fingerprints (cache keys)
# ---------------------------------------------------------------------------------------------
def dataset_fingerprint(*columns: Sequence[Any]) -> str:
    """sha256 (hex, 16 chars) of the given text columns, order-sensitive; a dataset cache key."""
    h = hashlib.sha256()
    for col in columns:
        h.update(b"\x1e")
        for v in col:
            h.update(b"\x1f")
            h.update(("\x00" if v is None else str(v)).encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:16]
