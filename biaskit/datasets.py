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

Every loader returns a :class:`pandas.DataFrame` whose ``attrs["report"]`` is a
:class:`ValidationReport`: the rows that were repaired or cannot be used, with
their CSV line numbers and the reason.  Nothing is dropped silently: problems are
logged, and ``errors="raise"`` turns them into a :class:`ValueError`.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import logging
import re
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from biaskit.data import sha256_file
from biaskit.paths import data_dir

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
    "stereoset_intrasentence",
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


@dataclass
class ValidationReport:
    """Rows of an input that were repaired or could not be used, and why.

    Attributes
    ----------
    issues:
        One row per problem: ``row`` (0-based position in the returned / given data),
        ``line`` (1-based line in the source file when known, else ``None``),
        ``column``, ``reason`` (plain words), ``action`` (``"skipped"``, ``"repaired"``
        or ``"kept"``) and ``text`` (the offending value, shortened).
    context:
        What was being validated ("Spanish CrowS-Pairs (original)", "cp scoring", ...).
    """

    issues: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=_REPORT_COLUMNS))
    context: str = ""

    @classmethod
    def from_records(cls, records: Iterable[dict[str, Any]], context: str = "") -> ValidationReport:
        df = pd.DataFrame(list(records), columns=_REPORT_COLUMNS)
        return cls(issues=df.reset_index(drop=True), context=context)

    def __len__(self) -> int:
        return len(self.issues)

    @property
    def skipped_rows(self) -> list[int]:
        """0-based rows that were left out (sorted, unique)."""
        sk = self.issues.loc[self.issues["action"] == "skipped", "row"]
        return sorted({int(r) for r in sk.dropna()})

    @property
    def repaired_rows(self) -> list[int]:
        sk = self.issues.loc[self.issues["action"] == "repaired", "row"]
        return sorted({int(r) for r in sk.dropna()})

    def summary(self) -> str:
        """A few lines a non-programmer can read."""
        if not len(self):
            return f"{self.context}: no problems found."
        lines = [f"{self.context}: {len(self)} issue(s)"]
        for (reason, action), grp in self.issues.groupby(["reason", "action"], sort=False):
            where = grp["line"] if grp["line"].notna().all() else grp["row"]
            label = "lines" if grp["line"].notna().all() else "rows"
            uniq = sorted({int(x) for x in where.dropna()})
            shown = ", ".join(str(x) for x in uniq[:12])
            more = f" (+{len(uniq) - 12} more)" if len(uniq) > 12 else ""
            lines.append(f"  - {action} {len(grp)}: {reason} ({label} {shown}{more})")
        return "\n".join(lines)

    def __str__(self) -> str:  # pragma: no cover - thin wrapper
        return self.summary()

    def _repr_html_(self) -> str:  # pragma: no cover - display only
        head = f"<p><b>{self.context}</b>: {len(self)} issue(s)</p>"
        return head + (self.issues.to_html(index=False) if len(self) else "")

    def log(self, log: logging.Logger | None = None, level: int = logging.WARNING) -> None:
        """Write :meth:`summary` to the log (when there is anything to say)."""
        if len(self):
            (log or logger).log(level, "%s", self.summary())

    def raise_if_any(self, actions: Sequence[str] = ("skipped",)) -> None:
        """Raise :class:`ValueError` listing the problems whose action is in ``actions``."""
        bad = self.issues[self.issues["action"].isin(actions)]
        if len(bad):
            sub = ValidationReport(issues=bad, context=self.context)
            raise ValueError(sub.summary() + "\n(pass errors='report' to skip these rows and go on)")

    def to_dict(self) -> dict[str, Any]:
        return {"context": self.context, "issues": self.issues.to_dict(orient="records")}

    def __add__(self, other: ValidationReport) -> ValidationReport:
        frames = [f for f in (self.issues, other.issues) if len(f)]
        issues = pd.concat(frames, ignore_index=True) if frames else self.issues.copy()
        ctx = (
            self.context
            if not other.context or other.context == self.context
            else f"{self.context}; {other.context}"
        )
        return ValidationReport(issues=issues, context=ctx)


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


def _read_csv_lines(
    raw: bytes, encoding: str, context: str
) -> tuple[list[str], list[tuple[int, list[str]]], list[dict[str, Any]]]:
    """Decode and parse a CSV; return header, ``(line_number, fields)`` rows and issues."""
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{context}: cannot decode the file as {encoding!r} ({exc}); pass the right encoding="
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise ValueError(f"{context}: the file is empty") from None
    rows: list[tuple[int, list[str]]] = []
    issues: list[dict[str, Any]] = []
    start = reader.line_num + 1
    for fields in reader:
        line = start
        start = reader.line_num + 1
        if not fields:
            continue
        if len(fields) != len(header):
            issues.append(
                {
                    "row": None,
                    "line": line,
                    "column": None,
                    "reason": f"malformed CSV row: {len(fields)} fields, header has {len(header)}",
                    "action": "skipped",
                    "text": _short(",".join(fields)),
                }
            )
            continue
        rows.append((line, fields))
    return header, rows, issues


def _read_csv_frame(
    p: Path, encoding: str, context: str, columns: Sequence[str]
) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """:func:`_read_csv_lines` as a frame of ``columns`` (empty cells -> ``None``) led by the
    file ``line`` number, and the parse issues; ``ValueError`` if a column is missing."""
    header, rows, issues = _read_csv_lines(p.read_bytes(), encoding, context)
    missing = [c for c in columns if c not in header]
    if missing:
        raise ValueError(f"{context}: columns {missing} missing; header is {header}")
    df = pd.DataFrame([f for _, f in rows], columns=header)[list(columns)]
    df = df.astype(object).where(df != "", None)
    df.insert(0, "line", [ln for ln, _ in rows])
    return df, issues


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


def _finish(df: pd.DataFrame, issues: list[dict[str, Any]], context: str, errors: Errors) -> pd.DataFrame:
    report = ValidationReport.from_records(issues, context=context)
    report.log(logger, logging.WARNING if report.skipped_rows else logging.INFO)
    if errors == "raise":
        report.raise_if_any(("skipped",))
    elif errors != "report":
        raise ValueError("errors must be 'report' or 'raise'")
    df.attrs["report"] = report
    return df


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

    Empty cells are ``None`` (paraphrases and random sentences exist only for rows 0-169).
    ``bias_type`` is missing for rows 586-1502 in the source; they are kept, the count is
    logged, and they are labelled ``None`` (callers group them as they see fit).
    ``line`` is the 1-based line of the row in the CSV file (header = line 1).
    """
    context = "Spanish CrowS-Pairs (es_en.csv)"
    p = _bundled("crows-pairs-es/es_en.csv", path)
    df, issues = _read_csv_frame(p, encoding, context, _ES_COLUMNS)
    df = _check_cells(df, _ES_COLUMNS[:-1], repair=repair, issues=issues)
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
    return _finish(df, issues, context, errors)


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
    ``row`` numbers in ``attrs["report"]`` refer to the returned frame.  See
    :func:`load_crows_pairs_es_table` for the encoding checks.
    """
    if variant not in _VARIANT_SUFFIX:
        raise ValueError(f"variant must be one of {list(_VARIANT_SUFFIX)}, got {variant!r}")
    table = load_crows_pairs_es_table(path=path, encoding=encoding, repair=repair, errors=errors)
    sfx = _VARIANT_SUFFIX[variant]
    more, less = f"sent_more{sfx}", f"sent_less{sfx}"
    keep = table[more].notna() | table[less].notna()
    df = table.loc[keep, ["line", more, less, "bias_type", "encoding_ok"]].rename(
        columns={more: "sent_more", less: "sent_less"}
    )
    df = df.reset_index(drop=True)
    # re-target the report to this variant's rows and columns
    rep: ValidationReport = table.attrs["report"]
    line_to_row = {int(ln): i for i, ln in enumerate(df["line"])}
    iss = rep.issues.copy()
    iss = iss[iss["column"].isin([more, less]) | iss["column"].isna()]
    iss["row"] = [line_to_row.get(int(ln)) if pd.notna(ln) else None for ln in iss["line"]]
    iss = iss[iss["row"].notna() | iss["column"].isna()]
    report = ValidationReport(issues=iss.reset_index(drop=True), context=f"Spanish CrowS-Pairs ({variant})")
    df.attrs["report"] = report
    df.attrs["variant"] = variant
    df.attrs["source"] = "data/crows-pairs-es/es_en.csv"
    return df


# ---------------------------------------------------------------------------------------------
# CrowS-Pairs (English)
# ---------------------------------------------------------------------------------------------
def load_crows_pairs_en(*, path: str | Path | None = None, errors: Errors = "report") -> pd.DataFrame:
    """The English CrowS-Pairs (Nangia et al. 2020): 1508 pairs, UTF-8, CC BY-SA 4.0.

    Columns ``line, sent_more, sent_less, stereo_antistereo, bias_type, encoding_ok``.
    ``stereo_antistereo`` says whether ``sent_more`` states (``"stereo"``) or violates
    (``"antistereo"``) the stereotype; the official metric counts a pair as biased when
    the more-stereotypical sentence wins (``sent_more`` for ``stereo``, ``sent_less`` for
    ``antistereo``), see :mod:`biaskit.metrics.crows`.
    """
    context = "English CrowS-Pairs (crows_pairs_anonymized.csv)"
    p = _bundled("crows-pairs/crows_pairs_anonymized.csv", path)
    df, issues = _read_csv_frame(
        p, "utf-8", context, ["sent_more", "sent_less", "stereo_antistereo", "bias_type"]
    )
    df = _check_cells(df, ["sent_more", "sent_less"], repair=True, issues=issues)
    return _finish(df, issues, context, errors)


# ---------------------------------------------------------------------------------------------
# StereoSet
# ---------------------------------------------------------------------------------------------
def load_stereoset(*, path: str | Path | None = None) -> dict[str, Any]:
    """The StereoSet dev set as the official JSON (``{"version", "data": {"intrasentence", ...}}``).

    Nadeem et al. 2021, version ``1.0-dev`` (2106 intrasentence, 2123 intersentence
    examples); seed 000 section 4.1.5.  ``path`` may point at a ``.json`` or ``.json.gz``.
    """
    p = _bundled("stereoset/dev.json.gz", path)
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    if "data" not in data or "intrasentence" not in data["data"]:
        raise ValueError(f"{p} is not a StereoSet file: no data.intrasentence")
    return data


def load_stereoset_predictions(
    model: str = "bert-base-cased", *, path: str | Path | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Official-format StereoSet predictions (``{"intrasentence": [{"id", "score"}, ...], ...}``).

    The bundled file is the StereoSet authors' bert-base-cased dev predictions
    (moinnadeem/StereoSet, ``predictions_bert-base-cased_BertNextSentence_BertLM.json``),
    on which the official scorer gives overall LMS 85.772, SS 59.556, ICAT 69.380.
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
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def _template_word(context: str, sentence: str) -> str:
    """The word filling BLANK, exactly as the official ``dataloader.StereoSet`` extracts it.

    The index of the (last) space-separated context word containing ``BLANK`` is looked up
    in the space-split sentence, and punctuation is stripped.
    """
    word_idx = None
    for idx, word in enumerate(context.split(" ")):
        if "BLANK" in word:
            word_idx = idx
    if word_idx is None:
        raise ValueError(f"no BLANK in StereoSet context {context!r}")
    return sentence.split(" ")[word_idx].translate(str.maketrans("", "", string.punctuation))


def stereoset_intrasentence(gold: dict[str, Any] | None = None) -> pd.DataFrame:
    """StereoSet intrasentence examples as one row per (example, option).

    Columns: ``example_id, target, bias_type, context, gold_label`` (``stereotype``,
    ``anti-stereotype``, ``unrelated``), ``sentence_id, sentence, word`` (the BLANK filler,
    extracted as the official data loader does).  2106 examples x 3 options on dev.
    """
    gold = load_stereoset() if gold is None else gold
    rows = []
    for ex in gold["data"]["intrasentence"]:
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
    return pd.DataFrame(rows)


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
