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

import csv
import gzip
import hashlib
import io
import json
import logging
import math
import re
import string
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from biaskit.core.paths import data_dir
from biaskit.data.downloads import sha256_file

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
    "validate_stereoset_predictions",
]

#: sha256 of every bundled file this module reads (also listed in each PROVENANCE.md).
CHECKSUMS: dict[str, str] = {
    "crows-pairs-es/es_en.csv": "2bf31d1a9cf2d03e5fcdcd07878abbe08fb8f7bec6a0c60870310b67da7ab383",
    "crows-pairs/crows_pairs_anonymized.csv": "dfb36986ce0502abbaf7055b9176da3d08d48e07df1251991b5dfbcbceab9d0c",
    "stereoset/dev.json.gz": "ad81222e550aa3ad52f69b6592bb8f73d673fde1ee1e66dc536ab53192db4b26",
    "stereoset/predictions_bert-base-cased.json.gz": "16baf047762db5993c4b6c0b0e54166529949d43203a6d196a15d452533500cd",
}

CrowsVariant = Literal["original", "paraphrased", "random"]
_VARIANT_SUFFIX = {"original": "", "paraphrased": "_par", "random": "_ran"}


# ---------------------------------------------------------------------------------------------
# validation report
# ---------------------------------------------------------------------------------------------
_REPORT_COLUMNS = ["row", "line", "column", "reason", "action", "text"]


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

    issues: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=_REPORT_COLUMNS))
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
        df = pd.DataFrame(list(records), columns=_REPORT_COLUMNS)
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

    def _repr_html_(self) -> str:  # pragma: no cover - display only
        counts = self.counts_line()
        head = f"<p><b>{self.context}</b>: {counts + '; ' if counts else ''}{len(self)} issue(s)</p>"
        return head + (self.issues.to_html(index=False) if len(self) else "")

    def log(self, log: logging.Logger | None = None, level: int = logging.WARNING) -> None:
        """Write :meth:`summary` to the log (when there is anything to say)."""
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
        return {
            "context": self.context,
            "n_records": self.n_records,
            "n_loaded": self.n_loaded,
            "issues": self.issues.to_dict(orient="records"),
        }

    def __add__(self, other: ValidationReport) -> ValidationReport:
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
        p = Path(path)
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


@dataclass
class _CsvParse:
    """What :func:`_read_csv_lines` found: the header, the good ``(line, fields)`` records, the
    problems, and the number of data records the file holds (see :class:`ValidationReport`)."""

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


def _record(
    line: int | None, reason: str, action: str, text: Any = "", *, row: Any = None, column: Any = None
) -> dict[str, Any]:
    """One issue for :class:`ValidationReport`."""
    return {
        "row": row,
        "line": line,
        "column": column,
        "reason": reason,
        "action": action,
        "text": _short(text),
    }


def _read_csv_lines(raw: bytes, encoding: str, context: str) -> _CsvParse:
    """Decode and parse a CSV; return header, ``(line_number, fields)`` rows, issues and counts.

    Every record that cannot be used becomes a ``"skipped"`` issue with its file line(s):

    * a record with the wrong number of fields (a truncated last record has too few);
    * a record that opens a quote never closed: Python's csv module then reads the rest of the
      file as one field.  This is reported even when the field count happens to match, and
      the lines it swallowed count as records in ``n_records``;
    * a span the csv module cannot parse at all (e.g. a field over its size limit): the rest of
      the file is reported as not read.

    Blank lines hold no data; they are listed as ``"ignored"``.
    """
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as exc:
        line_no = raw.count(b"\n", 0, exc.start) + 1
        raise ValueError(
            f"{context}: cannot decode byte {raw[exc.start : exc.start + 1]!r} on line {line_no} as "
            f"{encoding!r} ({exc.reason}); pass the right encoding="
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
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
                _record(
                    start,
                    f"CSV parse error ({exc}){hint}; lines {start}-{last} ({n_lost} non-blank lines) not read",
                    "skipped",
                    physical[start - 1],
                )
            )
            n_records += n_lost
            break
        line, end = start, reader.line_num
        start = end + 1
        if not fields:
            issues.append(_record(line, "blank line", "ignored"))
            continue
        span = f"line {line}" if end == line else f"lines {line}-{end}"
        if end == len(physical) and _ends_inside_quotes(physical[line - 1 : end]):
            n_lost = n_data_lines(line, end)
            issues.append(
                _record(
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
            issues.append(_record(line, reason, "skipped", ",".join(fields)))
            continue
        n_records += 1
        rows.append((line, fields))
    if rows and end == len(physical) and rows[-1][0] == line and not physical[-1].endswith(("\n", "\r")):
        issues.append(
            _record(
                rows[-1][0],
                "the file does not end with a line break: its last record may be cut off",
                "kept",
                physical[-1],
                row=len(rows) - 1,
            )
        )
    return _CsvParse(header, rows, issues, n_records)


def _check_csv_header(
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


def _read_csv_frame(
    p: Path, encoding: str, context: str, columns: Sequence[str]
) -> tuple[pd.DataFrame, list[dict[str, Any]], int]:
    """:func:`_read_csv_lines` as a frame of ``columns`` (empty cells -> ``None``) led by the
    file ``line`` number, the parse issues and the number of data records in the file;
    ``ValueError`` if a column is missing."""
    parsed = _read_csv_lines(p.read_bytes(), encoding, context)
    header = parsed.header
    _check_csv_header(header, columns, context)
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
                    {
                        "row": i,
                        "line": df.at[i, "line"],
                        "column": col,
                        "reason": f"{problem} (repaired)",
                        "action": "repaired",
                        "text": _short(val),
                    }
                )
            else:
                unusable[i] = True
                issues.append(
                    {
                        "row": i,
                        "line": df.at[i, "line"],
                        "column": col,
                        "reason": f"{problem} (cannot be repaired)",
                        "action": "skipped",
                        "text": _short(val),
                    }
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
                _record(
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
                    _record(
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


def load_crows_pairs_en(*, path: str | Path | None = None, errors: Errors = "report") -> pd.DataFrame:
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
    """
    context = (
        "English CrowS-Pairs (crows_pairs_anonymized.csv)"
        if path is None
        else f"English CrowS-Pairs ({path})"
    )
    p = _bundled("crows-pairs/crows_pairs_anonymized.csv", path)
    df, issues, n_records = _read_csv_frame(
        p, "utf-8", context, ["sent_more", "sent_less", "stereo_antistereo", "bias_type"]
    )
    df = _check_cells(df, ["sent_more", "sent_less"], repair=True, issues=issues)
    _check_pairs(df, [("sent_more", "sent_less")], issues, required=True)
    for i in df.index[~df["stereo_antistereo"].isin(_DIRECTIONS)]:
        issues.append(
            _record(
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


def _read_json_file(p: Path, what: str) -> Any:
    """Parse a ``.json`` / ``.json.gz`` file; a truncated or corrupt file raises ``ValueError``
    naming the file and, for bad JSON, the line and column where parsing stopped."""
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


def _stereoset_issues(gold: dict[str, Any], splits: Sequence[str]) -> list[dict[str, Any]]:
    """One ``"skipped"`` issue per malformed example and per repeated example / sentence id."""
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
                    _record(
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
    """
    if errors not in ("report", "raise"):
        raise ValueError("errors must be 'report' or 'raise'")
    p = _bundled("stereoset/dev.json.gz", path)
    data = _read_json_file(p, "StereoSet")
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
        _stereoset_issues(data, splits), context=f"StereoSet ({p.name})", n_records=n, n_loaded=n
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
                issues.append(_record(None, f"prediction {problem}", "skipped", rec, row=i, column=where))
                continue
            if rid in seen:
                issues.append(
                    _record(
                        None,
                        f"repeated prediction id (also at {seen[rid]}); the last score is used, as the official scorer does",
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
        _read_json_file(p, "StereoSet predictions"), source=str(p), errors=errors
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
    issues = _stereoset_issues(gold, ["intrasentence"])
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
