"""The records behind the docs' tables (docs/records/*.json) hold no number typed by hand.

* ``validation.json``: every number of an entry's "biaskit" column is a numeric literal of the test
  file(s) its "test" column names (so the number the docs show is the number ``make test`` asserts), or
  is listed in the entry's ``from_results`` (a notebook's results JSON, checked when a run is there).
* any record: an entry's ``from_results`` list ties a displayed number to a key of ``results/<notebook>.json``
  (written by ``make reproduce``); it is compared at the displayed precision when that file exists, and
  skipped, with the reason, when it does not.  ``BIASKIT_DOCS_RESULTS`` names another results folder, as
  for ``make docs``.
* any record: an entry's ``from_file`` list ties a displayed number to a key of a committed JSON file (the
  bundled models' ``data/models/<name>/training.json``); always compared, never skipped.
* a check may say ``"abs": true`` (the entry shows −1.32, the parser reads 1.32), ``"scale": 100`` (a share
  shown as a percentage), ``"below": true`` (the entry shows a bound, ``p < 0.001``: the value is below it)
  or ``"count": {"where": field, "among": field}`` (how many rows of a list or dict have ``where`` true).
* every record says where its numbers come from (its "source"), and a one-off measurement says the
  command, the date and the machine.
* every number a reader sees in prose, the static Markdown of a notebook and the pages ``docs/*.md``,
  ``docs/studies/*.md`` and ``docs/user_guide/*.md``, is recorded somewhere: a value of the notebook's default
  run (or of a notebook it names), a kept record (``records/``, ``docs/records/``, a bundled model's
  ``training.json``) or an entry of ``tests/numbers_allowed.json`` (a seed study's own number with its
  section, or a constant with its reason).  The rules: structural numbers (names of tables, figures,
  sections, notebooks, ...; years; headings and list items; code, formulas, paths, versions; statistical
  conventions such as a 95 % interval; bounds after < or "at most") are left out (:func:`prose_numbers`); a
  number matches at its shown precision, thousands separators ignored, a percentage also as a share, a
  rounded integer ("about 14,000") at its significant digits, signs ignored (:func:`number_is_recorded`).
  Without a default run the notebook checks skip with the reason; the docs pages are checked against the
  records and the allow-list always.  A number a run did not write fails
  (``test_an_unrecorded_number_in_a_sentence_is_caught``); a short number can still match a value of a large
  run by chance, so the ``from_results`` ties stay the strict form for a table's numbers.
"""

from __future__ import annotations

import ast
import io
import json
import math
import os
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "docs" / "records"
TESTS = ROOT / "tests"

#: a displayed number: 0.0805, 1,503, 1.5e-5, 97.4 % (not part of a word such as weat7, float32, W1)
NUMBER = re.compile(r"(?<![\w.^-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?:e([-+]?\d+))?(?!\w)(\s?%)?")
#: names, not measurements: "Table 4.6", "Tables 4.2-4.10", "§3.5.4", "ch. 4", "notebook 14", "seed 000",
#: "tests 3-5, 10", "Appendix B"; a run of numbers joined by "-", "–", "," or "and" after one of these words
REFERENCE = re.compile(
    r"(?:\bTables?|\bFigs?\.|\bFigures?|§|\bch\.|\bchapter|\bnotebooks?|\bseed|\bsections?|\btests?|\beq\.)"
    r"\s*\d+(?:\.\d+)*(?:\s*(?:-|–|,|and)\s*\d+(?:\.\d+)*)*",
    re.IGNORECASE,
)


def displayed_numbers(text: str) -> list[tuple[str, float, bool]]:
    """The numbers a reader sees in ``text``: ``(as written, value, is a percentage)``.

    >>> displayed_numbers("Table 4.2 cp 0.53 / p 0.016; N = 1,503; diff 1.5e-5; 97.4 %")
    [('0.53', 0.53, False), ('0.016', 0.016, False), ('1,503', 1503.0, False), ('1.5e-5', 1.5e-05, False), ('97.4 %', 97.4, True)]
    """  # noqa: E501 (a doctest line: its input and output cannot be broken)
    text = REFERENCE.sub(" ", text)
    out = []
    for m in NUMBER.finditer(text):
        whole, frac, exp, pct = m.groups()
        value = float(whole.replace(",", "") + (frac or "") + (f"e{exp}" if exp else ""))
        out.append((m.group(0).strip(), value, bool(pct)))
    return out


def numeric_literals(path: Path) -> set[float]:
    """The numbers written as code in a Python file (tokens, not strings or comments): ``1503``, ``1_503``,
    ``1.5e-5`` and ``0.000015`` are all there as the same value."""
    values = set()
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
        if tok.type == tokenize.NUMBER and not tok.string.lower().endswith("j"):
            values.add(float(ast.literal_eval(tok.string)))
    return values


def _is_in(value: float, literals: set[float]) -> bool:
    return any(math.isclose(value, x, rel_tol=1e-12, abs_tol=0.0) for x in literals)


def _load(name: str) -> dict:
    return json.loads((RECORDS / name).read_text(encoding="utf-8"))


def results_folder() -> Path:
    return Path(os.environ.get("BIASKIT_DOCS_RESULTS", ROOT / "results")).expanduser().resolve()


def _lookup(data, key: str):
    """``"english_weat/test=weat1/d"``: dict keys, list indices, or ``field=value`` to pick a list's row.

    A dict key that itself holds ``/`` (``"proportion + 0.5 / gender"``) is found by joining the parts.
    """
    parts = key.split("/")
    i = 0
    while i < len(parts):
        part = parts[i]
        if isinstance(data, list):
            if "=" in part:
                field, want = part.split("=", 1)
                rows = [r for r in data if str(r.get(field)) == want]
                assert len(rows) == 1, f"{len(rows)} rows with {field} = {want!r}"
                data = rows[0]
            else:
                data = data[int(part)]
        else:
            j = i
            while part not in data and j + 1 < len(parts):
                j += 1
                part = "/".join(parts[i : j + 1])
            data = data[part if part in data else parts[i]]
            i = j
        i += 1
    return data


def _decimals(shown: str) -> int:
    """The decimal places a displayed number is written to: ``0.016`` 3, ``97.4 %`` 1, ``4.76e-05`` 7."""
    m = NUMBER.search(shown)
    assert m, shown
    _, frac, exp, _ = m.groups()
    return max(0, len(frac or ".") - 1 - (int(exp) if exp else 0))


def _compare(record: str, check: dict, data, where: str) -> None:
    """The value at ``check["key"]`` of ``data`` is the number ``check["shows"]`` at its precision."""
    got = _lookup(data, check["key"])
    if "count" in check:  # how many rows (of a dict or list) have `where` true, among those with `among` true
        rows = list(got.values()) if isinstance(got, dict) else got
        rows = [r for r in rows if "among" not in check["count"] or r.get(check["count"]["among"])]
        got = (
            sum(1 for r in rows if r.get(check["count"]["where"])) if "where" in check["count"] else len(rows)
        )
    got = float(got) * check.get("scale", 1)
    got = abs(got) if check.get("abs") else got
    shown = displayed_numbers(check["shows"])[0][1]
    if check.get("below"):
        assert got < shown, (
            f"{record}: {check['shows']} is shown as a bound, {where} [{check['key']}] gives {got!r}"
        )
        return
    assert round(got, _decimals(check["shows"])) == pytest.approx(shown, abs=1e-12), (
        f"{record}: {check['shows']} is shown, {where} [{check['key']}] gives {got!r}"
    )


VALIDATION = _load("validation.json")


def _test_files(entry: dict) -> list[Path]:
    """The test files an entry names (by file name; each lives in the folder of its layer under tests/)."""
    named = re.findall(r"`(test_\w+\.py)`", entry["test"])
    return [next(TESTS.rglob(name), TESTS / name) for name in named]


# ----------------------------------------------------------------------------- the normaliser
def test_displayed_numbers_skip_names_and_read_every_way_of_writing_a_number():
    got = displayed_numbers(
        "Tables 4.2-4.10 and §3.5.4; notebook 14, seed 000, tests 3-5, 10 weaker; weat7 float32"
    )
    assert got == []
    got = displayed_numbers("d = ±2; 1,508 pairs; 2.2e-5; 86.6 %; 5.10; 0.5 → 0.8; 80/10/10")
    assert [v for _, v, _ in got] == [2.0, 1508.0, 2.2e-5, 86.6, 5.10, 0.5, 0.8, 80.0, 10.0, 10.0]
    assert [p for *_, p in got] == [False, False, False, True, False, False, False, False, False, False]


def test_lookup_finds_keys_with_a_slash_and_decimals_read_exponents():
    data = {"a": {"proportion + 0.5 / gender": 0.4, "rows": [{"test": "w1", "d": 1.5}]}}
    assert _lookup(data, "a/proportion + 0.5 / gender") == 0.4
    assert _lookup(data, "a/rows/test=w1/d") == _lookup(data, "a/rows/0/d") == 1.5
    shown = ("0.016", "97.4 %", "55 %", "1,503", "4.76e-05", "1.5e-5")
    assert [_decimals(s) for s in shown] == [3, 1, 0, 0, 7, 6]


def test_numeric_literals_are_code_not_comments(tmp_path):
    f = tmp_path / "t.py"
    f.write_text('x = 1_503 + 1.5e-05  # 99.1\n"""0.724365"""\ny = 0.000022\n', encoding="utf-8")
    lits = numeric_literals(f)
    assert _is_in(1503, lits) and _is_in(1.5e-5, lits) and _is_in(2.2e-5, lits)
    assert not _is_in(99.1, lits) and not _is_in(0.724365, lits)


# ----------------------------------------------------------------------------- validation.json
@pytest.mark.parametrize("entry", VALIDATION["entries"], ids=[e["what"][:40] for e in VALIDATION["entries"]])
def test_validation_numbers_are_what_the_named_tests_assert(entry):
    files = _test_files(entry)
    assert files, f"{entry['what']!r} names no test file"
    literals: set[float] = set()
    for f in files:
        assert f.is_file(), f"{entry['what']!r} names {f.name}, which does not exist"
        literals |= numeric_literals(f)
    from_results = {c["shows"] for c in entry.get("from_results", [])}
    missing = []
    for shown, value, pct in displayed_numbers(entry["biaskit"]):
        if shown in from_results:
            continue
        if _is_in(value, literals) or (pct and _is_in(value / 100, literals)):
            continue
        missing.append(shown)
    assert not missing, (
        f"validation.json, {entry['what']!r}: {missing} not asserted by {', '.join(f.name for f in files)} "
        "(assert the number there, correct the record to what the test asserts, or name the results key "
        "in the entry's from_results)"
    )


def test_validation_note_says_the_column_is_asserted():
    assert "the biaskit column is what the named test asserts" in VALIDATION["note"]


# ----------------------------------------------------------------------------- results of a default run
def _checks(kind: str) -> list[tuple[str, dict, dict]]:
    """(record file, entry, check) for every ``kind`` check (``from_results`` / ``from_file``) of the
    records."""
    out = []
    for path in sorted(RECORDS.glob("*.json")):
        rec = json.loads(path.read_text(encoding="utf-8"))
        for entry in rec["entries"]:
            for check in entry.get(kind, []):
                out.append((path.name, entry, check))
    return out


FROM_RESULTS = _checks("from_results")


def test_from_results_checks_show_their_number_in_the_entry():
    """A ``from_results`` number is one the table shows; its results file is a notebook's."""
    assert FROM_RESULTS, "no record number is tied to a notebook's results"
    notebooks = {p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")}
    for name, entry, check in FROM_RESULTS:
        shown = [s for col in entry.values() if isinstance(col, str) for s, *_ in displayed_numbers(col)]
        assert check["shows"] in shown, f"{name}: {check['shows']!r} is not shown by its entry"
        assert Path(check["results"]).stem in notebooks, (
            f"{name}: {check['results']} is no notebook's results"
        )


@pytest.mark.parametrize(
    ("record", "entry", "check"),
    FROM_RESULTS,
    ids=[f"{n}:{c['results']}:{c['key']}" for n, _, c in FROM_RESULTS],
)
def test_record_number_equals_the_notebooks_results(record, entry, check):
    path = results_folder() / check["results"]
    if not path.is_file():
        pytest.skip(
            f"{path} does not exist: run `make reproduce` (or that notebook) to check {record}'s "
            f"{check['shows']} against it"
        )
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("parameters", {}).get("quick"):
        pytest.skip(f"{path} is a quick=True run; the record holds the default run's numbers")
    _compare(record, check, data, path.name)


# ---------------------------------------------------------------------------- committed files (training.json)
FROM_FILE = _checks("from_file")


def test_from_file_checks_show_their_number_in_the_entry():
    """A ``from_file`` number is one the table shows; its file is a committed JSON file of the repository."""
    for name, entry, check in FROM_FILE:
        shown = [s for col in entry.values() if isinstance(col, str) for s, *_ in displayed_numbers(col)]
        assert check["shows"] in shown, f"{name}: {check['shows']!r} is not shown by its entry"
        assert not Path(check["file"]).is_absolute() and ".." not in Path(check["file"]).parts, check["file"]


@pytest.mark.parametrize(
    ("record", "entry", "check"),
    FROM_FILE,
    ids=[f"{n}:{c['file']}:{c['key']}" for n, _, c in FROM_FILE],
)
def test_record_number_equals_its_file(record, entry, check):
    path = ROOT / check["file"]
    assert path.is_file(), f"{record}: {check['file']} does not exist"
    _compare(record, check, json.loads(path.read_text(encoding="utf-8")), check["file"])


# ----------------------------------------------------------------------------- where the numbers come from
HAND = "recorded by hand"
#: measured once by a command: the source names the command and the machine
ONE_OFF = ["benchmarks_1", "benchmarks_2", "benchmarks_3", "benchmarks_4", "benchmarks_5", "dask",
           "fine_tuning", "training_notes", "timings"]  # fmt: skip
#: still only "recorded by hand" in README.md at 46eb479: the notebooks' default runs when each row was
#: written (a few numbers tied to results/*.json through from_results).  Seeds 000 and 001, substitutes and
#: models_readme have every measured number tied (from_results / from_file)
UNTRACED: list[str] = []  # every record is tied to results, files or tests


@pytest.mark.parametrize("path", sorted(RECORDS.glob("*.json")), ids=lambda p: p.name)
def test_every_record_says_where_its_numbers_come_from(path):
    rec = json.loads(path.read_text(encoding="utf-8"))
    assert {"title", "columns", "entries"} <= set(rec), path.name
    assert rec.get("source"), f"{path.name} has no source"
    if path.stem in ONE_OFF:
        named = re.search(r"`[^`]*(make|python|pytest)[^`]*`", rec["source"])
        assert named or all(e.get("command") for e in rec["entries"]), f"{path.name}: no command named"
        # the project's machine was an AMD EPYC, later an Intel Xeon: the source names the processor
        assert "2-core" in rec["source"] and re.search(r"\bEPYC\b|\bXeon\b", rec["source"]), (
            f"{path.name}: its source names no machine"
        )
        assert HAND not in rec["source"], path.name


def test_records_recorded_only_by_hand_are_the_known_ones():
    """A new record says how its numbers were made; the list shrinks as records are tied to runs."""
    hand = sorted(
        p.stem for p in RECORDS.glob("*.json") if HAND in json.loads(p.read_text(encoding="utf-8"))["source"]
    )
    assert hand == UNTRACED


# ----------------------------------------------------------------------------- every number a reader sees
NUMBERS_ALLOWED = TESTS / "numbers_allowed.json"
#: names that carry numbers but measure nothing, besides REFERENCE's: "Tables 3.3/3.4", "Eq. 2.6",
#: "Appendix C.1", "step 9", "part 2", "layer 4", "item 3", "WEAT 1-10", "SEAT 6", "CW1-CW5"
PROSE_REFERENCE = re.compile(
    r"(?:\bTables?|\bFigs?\.|\bFigures?|§|\bch\.|\bchapters?|\bnotebooks?|\bseeds?|\bsections?|\btests?|\beqs?\.|"
    r"\bequations?|\bAppendix|\bApp\.|\bsteps?|\bparts?|\blayers?|\bitems?|\bWEATs?|\bSEATs?)"
    r"\s*[A-Z]?\d+(?:\.\d+)*[a-z]?′?(?:\s*(?:-|–|,|/|and|or|to)\s*[A-Z]?\d+(?:\.\d+)*[a-z]?′?)*",
    re.IGNORECASE,
)
#: code, formulas, links and pictures: ```...```, `...`, $...$, <tag>, (target) of a link, URLs and file paths
PROSE_CODE = re.compile(
    r"```.*?```|`[^`\n]*`|\$\$.*?\$\$|\$[^$\n]+\$|<[a-zA-Z/!][^>\n]*>|\]\([^)\s]*\)|https?://\S+|\b[\w.-]+(?:/[\w.*-]+)+",
    re.S,
)
#: versions and addresses (0.1.3, Python 3.9, 127.0.0.1) and a citation's volume:pages (13:2943–2956)
PROSE_VERSION = re.compile(
    r"\b\d+(?:\.\d+){2,}\b|\b(?:Python|version|v)(?:\s+(?:below|above|from|to))?\s?[<>=]*\s?\d+(?:\.\d+)+"
    r"|\b\d+:\d+(?:[–-]\d+)?\b"
)
#: statistical conventions, not measurements: "95 % interval", "at the 5 % level", "80 % power", "α = 0.05"
PROSE_CONVENTION = re.compile(
    r"\b\d+(?:\.\d+)?\s?%\s(?:confidence\s|bootstrap\s|credible\s)?(?:intervals?|CIs?)\b|\b95\s?%\s?CI\b"
    r"|\b(?:at|to|on) the \d+(?:\.\d+)?\s?% (?:level|significance level)\b"
    r"|\b\d+\s?% power\b|[α]\s*=\s*0?\.\d+",
    re.IGNORECASE,
)
#: a bound is a threshold, not a value: "p < 0.001", "≥ 0.6", "<= 5", "at most 0.015"
PROSE_BOUND = re.compile(r"(?:<=?|>=?|≤|≥|&lt;|&gt;|\bat most|\bat least)\s*$", re.IGNORECASE)
#: a rounded number: "about 14,000", "≈ 0.79", "~1,450", "roughly 60x"
PROSE_APPROX = re.compile(
    r"(?:\babout|\baround|\bapproximately|\broughly|\bnearly|\balmost|≈|~)\s*[−-]?$", re.IGNORECASE
)
#: a year: four digits from 1900 to 2099 without a thousands separator or decimals ("Barza 2023", "(2019)")
PROSE_YEAR = re.compile(r"^(?:19|20)\d\d$")


def prose_numbers(text: str) -> list[tuple[str, float, bool, bool]]:
    """The measured-looking numbers of Markdown prose: ``(as written, value, is a percentage, is rounded)``.

    Left out by rule, not listed one by one (the structural numbers): code spans and blocks, formulas ($...$),
    links, URLs and file paths (and fractions written as paths, 2/20); versions, addresses and a citation's
    volume:pages (``PROSE_VERSION``); names of tables, figures, sections, equations, notebooks, seeds, steps,
    tests and appendices (``PROSE_REFERENCE``, after :data:`REFERENCE`); heading and list-item numbers at a
    line's start; years (1900-2099 written without separator); statistical conventions (``PROSE_CONVENTION``:
    a 95 % interval, the 5 % level, 80 % power, α = 0.05); and bounds (a number right after ``<``, ``>``,
    ``≤``, ``≥``, "at most" or "at least": a threshold; whether the value is below it is what a record's
    ``"below"`` check asserts).  A number is a percentage when ``%`` follows it or follows the number after it
    ("41 and 48 %"), and rounded when "about", "around", "≈", "~", "nearly", ... precede it.

    >>> [(s, p, a) for s, _, p, a in prose_numbers("## 4. Fig. 3.2: about 14,000 (2019); `n=5`; p < 0.001; 41 and 48 %")]
    [('14,000', False, True), ('41', True, False), ('48 %', True, False)]
    """  # noqa: E501 (a doctest line: its input and output cannot be broken)
    text = PROSE_CODE.sub(" ", text)
    text = PROSE_REFERENCE.sub(
        lambda m: " " * len(m.group(0)), REFERENCE.sub(lambda m: " " * len(m.group(0)), text)
    )
    text = PROSE_VERSION.sub(" ", text)
    text = PROSE_CONVENTION.sub(" ", text)
    text = re.sub(
        r"(?m)^(\s*(?:#+\s*[\w.′]*|\d+\.(?=\s)|[-*+](?=\s)))", lambda m: re.sub(r"\w", " ", m.group(1)), text
    )
    out = []
    for m in NUMBER.finditer(text):
        whole, frac, exp, pct = m.groups()
        shown = m.group(0).strip()
        if PROSE_YEAR.match(shown) or PROSE_BOUND.search(text[max(0, m.start() - 10) : m.start()]):
            continue
        value = float(whole.replace(",", "") + (frac or "") + (f"e{exp}" if exp else ""))
        after = text[m.end() : m.end() + 24]
        pct_near = bool(pct) or bool(re.match(r"\s*(?:and|to|or|-|–)\s*\d[\d.,]*\s?%", after))
        approx = bool(PROSE_APPROX.search(text[max(0, m.start() - 16) : m.start()]))
        out.append((shown, value, pct_near, approx))
    return out


def recorded_values(data, out: set[float] | None = None, *, longest: int = 200) -> set[float]:
    """Every number of a JSON value: numeric leaves (as absolute values) and the numbers shown in its strings
    (a stored sentence is made from the run). Lists longer than ``longest`` (per-item scores) are left out:
    they would match nearly any shown number by chance."""
    out = set() if out is None else out
    if isinstance(data, dict):
        for v in data.values():
            recorded_values(v, out, longest=longest)
    elif isinstance(data, list):
        if len(data) <= longest:
            for v in data:
                recorded_values(v, out, longest=longest)
    elif isinstance(data, bool) or data is None:
        pass
    elif isinstance(data, (int, float)):
        if math.isfinite(data):
            out.add(abs(float(data)))
    elif isinstance(data, str):
        out.update(v for _, v, _ in displayed_numbers(data))
    return out


def _tolerance(shown: str, approx: bool) -> float:
    """Half a unit of the last shown digit; for a rounded integer ("about 14,000"), of its last non-zero
    digit."""
    tol = 0.5 * 10.0 ** -_decimals(shown)
    digits = re.sub(r"\D", "", shown.split(".")[0].split("e")[0])
    if approx and "." not in shown and digits.rstrip("0") != digits:
        tol = 0.5 * 10.0 ** (len(digits) - len(digits.rstrip("0")))
    return tol + 1e-9


def number_is_recorded(shown: str, value: float, pct: bool, approx: bool, values: set[float]) -> bool:
    """``shown`` is one of ``values`` at its shown precision: rounded to the shown decimals (0.54 for 0.5371),
    with or without thousands separators (1,701 and 1701 are read alike), a percentage also as a share
    (54 % for 0.54), a rounded integer at its significant digits ("about 14,000" for 13,889), signs
    ignored."""
    tol = _tolerance(shown, approx)
    return any(abs(x - value) <= tol or (pct and abs(100 * x - value) <= tol) for x in values)


def _allowed(where: str) -> set[str]:
    return {
        a["number"]
        for a in json.loads(NUMBERS_ALLOWED.read_text(encoding="utf-8"))["numbers"]
        if a["where"] == where
    }


def unrecorded_numbers(text: str, values: set[float], allowed: set[str]) -> list[str]:
    """The numbers of ``text`` that match none of ``values`` and are not in ``allowed`` (as written)."""
    return [
        shown
        for shown, value, pct, approx in prose_numbers(text)
        if shown not in allowed
        and shown.replace(" %", "%") not in allowed
        and not number_is_recorded(shown, value, pct, approx, values)
    ]


def _json_values(paths) -> set[float]:
    out: set[float] = set()
    for p in paths:
        recorded_values(json.loads(Path(p).read_text(encoding="utf-8")), out)
    return out


def _kept_records() -> list[Path]:
    """Committed records of one-off runs (``records/**/*.json``, the one-off measurements of ``docs/records``:
    timings, benchmarks, fine-tuning, training notes) and the bundled models' ``training.json``."""
    return (
        sorted((ROOT / "records").rglob("*.json"))
        + [RECORDS / f"{name}.json" for name in ONE_OFF if (RECORDS / f"{name}.json").is_file()]
        + sorted((ROOT / "data" / "models").glob("*/training.json"))
    )


def notebook_markdown(path: Path) -> str:
    """The static Markdown cells of a notebook (what a reader reads whatever the run)."""
    import nbformat

    return "\n\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")


NOTEBOOK_FILES = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
DOC_PAGES = sorted(
    [
        *(ROOT / "docs").glob("*.md"),
        *(ROOT / "docs" / "studies").glob("*.md"),
        *(ROOT / "docs" / "user_guide").glob("*.md"),
    ]
)


def named_notebooks(text: str) -> set[str]:
    """The two-digit notebook numbers a text names: "notebook 05", "notebooks 02-04 and 09" ->
    {02, 03, 04, 09}."""
    out: set[str] = set()
    for m in re.finditer(r"\bnotebooks?\s+(\d\d(?:\s*(?:,|and|-|–)\s*\d\d)*)", text, re.IGNORECASE):
        for a, dash, b in re.findall(r"(\d\d)(?:\s*([-–])\s*(\d\d))?", m.group(1)):
            out.update(f"{k:02d}" for k in range(int(a), int(b) + 1)) if dash else out.add(a)
    return out


def _results_of(stem: str) -> tuple[Path | None, str]:
    """The default run's results JSON of a notebook, or None and why it cannot be used."""
    path = results_folder() / f"{stem}.json"
    if not path.is_file():
        return None, f"{path} does not exist: run `make reproduce` (or that notebook) to check its numbers"
    if json.loads(path.read_text(encoding="utf-8")).get("parameters", {}).get("quick"):
        return None, f"{path} is a quick=True run; the notebook's prose quotes the default run"
    return path, ""


@pytest.mark.parametrize("path", NOTEBOOK_FILES, ids=lambda p: p.stem)
def test_every_number_of_a_notebooks_prose_is_recorded(path):
    """A number in a notebook's Markdown is a value of its default run (``results/<notebook>.json``) or of the
    default run of a notebook it names ("notebook 05"), of a kept record (``records/``, a bundled model's
    ``training.json``) or an allowed number (``tests/numbers_allowed.json``: the seed studies' own numbers,
    each with its section, and a few constants, each with its reason); structural numbers are left out by rule
    (:func:`prose_numbers`).

    Skipped, with the reason, without a default run of the notebook.  The match is at the shown precision,
    so a number with two significant digits can match a value of the run by chance: this test catches a
    number that no run wrote (a typed or stale one), and ``from_results`` ties in the records are the strict
    form for the numbers a table shows."""
    results, why = _results_of(path.stem)
    if results is None:
        pytest.skip(why)
    where = f"notebooks/{path.name}"
    text = notebook_markdown(path)
    named = [
        r
        for r in (_results_of(p.stem)[0] for p in NOTEBOOK_FILES if p.stem[:2] in named_notebooks(text))
        if r
    ]
    missing = unrecorded_numbers(text, _json_values([results, *named, *_kept_records()]), _allowed(where))
    assert not missing, (
        f"{where}: {missing} in its Markdown match no value of {results.name}, no kept record and no entry "
        f"of {NUMBERS_ALLOWED.name} (generate the sentence from the run, save the number as a results key, "
        "or, for a number quoted from a seed study, add it there with its section)"
    )


@pytest.mark.parametrize("path", DOC_PAGES, ids=lambda p: str(p.relative_to(ROOT / "docs")))
def test_every_number_of_a_docs_page_is_recorded(path):
    """A number in a documentation page is one of the records (``docs/records/*.json``, ``records/``, the
    bundled models' ``training.json``), an allowed number, or, when a default run is there, a value of one of
    its ``results/*.json``.  Checked against the records without a run; a number that only a run could
    match makes the test skip, with the numbers named, until ``make reproduce`` has run."""
    where = str(path.relative_to(ROOT))
    values = _json_values([*sorted(RECORDS.glob("*.json")), *_kept_records()])
    missing = unrecorded_numbers(path.read_text(encoding="utf-8"), values, _allowed(where))
    if missing:
        runs = [p for p in sorted(results_folder().glob("[0-9][0-9]_*.json")) if _results_of(p.stem)[0]]
        if not runs:
            pytest.skip(
                f"{where}: {missing} match no record; without a default run in {results_folder()} they "
                "cannot be checked"
            )
        missing = [
            s
            for s in missing
            if s in unrecorded_numbers(path.read_text(encoding="utf-8"), _json_values(runs), set())
        ]
    assert not missing, (
        f"{where}: {missing} match no record, no value of a default run and no entry of "
        f"{NUMBERS_ALLOWED.name}"
    )


def test_allowed_numbers_are_quoted_where_they_say_with_their_source():
    """Every allowed number names its seed section (or, for a constant, its reason) and still appears, as
    written, in the prose of the file it names: an entry is removed with the sentence it allowed."""
    entries = json.loads(NUMBERS_ALLOWED.read_text(encoding="utf-8"))["numbers"]
    assert entries
    stale = []
    for a in entries:
        assert set(a) <= {"number", "where", "seed", "why"} and (a.get("seed") or a.get("why")), a
        path = ROOT / a["where"]
        assert path.is_file(), f"{a['where']} does not exist"
        text = notebook_markdown(path) if path.suffix == ".ipynb" else path.read_text(encoding="utf-8")
        if not any(s in (a["number"], a["number"].replace("%", " %")) for s, *_ in prose_numbers(text)):
            stale.append(a)
    assert not stale, f"allowed numbers no longer in their file's prose (remove them): {stale}"


def test_an_unrecorded_number_in_a_sentence_is_caught(tmp_path, monkeypatch):
    """A temporary copy of a notebook and of a docs page, each with one typed number, against a fake run."""
    import nbformat

    nb = nbformat.read(ROOT / "notebooks" / "11_gender_templates_and_pairs.ipynb", as_version=4)
    md = next(c for c in nb.cells if c.cell_type == "markdown")
    md.source += "\n\nOn this model the stereotype share is 73.46 %, and 1,503 pairs were scored."
    copy = tmp_path / "notebooks" / "11_gender_templates_and_pairs.ipynb"
    copy.parent.mkdir()
    nbformat.write(nb, copy)
    run = {"results": {"pairs": 1503, "share": 0.1}, "parameters": {"quick": False}}
    values = _json_values([*_kept_records()]) | recorded_values(run)
    text = notebook_markdown(copy)
    assert "73.46 %" in unrecorded_numbers(
        text, values, _allowed("notebooks/11_gender_templates_and_pairs.ipynb")
    )
    assert "1,503" not in unrecorded_numbers(text, values, set())  # 1503 in the run: recorded
    run["results"]["share"] = 0.73458  # the run wrote it: 73.46 % at the shown precision
    assert "73.46 %" not in unrecorded_numbers(
        text, _json_values([*_kept_records()]) | recorded_values(run), set()
    )
    # the notebook test itself, on the copy and a fake results folder
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / copy.with_suffix(".json").name).write_text(
        json.dumps({"results": {"pairs": 1503}, "parameters": {"quick": False}}), encoding="utf-8"
    )
    monkeypatch.setenv("BIASKIT_DOCS_RESULTS", str(tmp_path / "results"))
    with pytest.raises(AssertionError, match=r"73\.46 %"):
        test_every_number_of_a_notebooks_prose_is_recorded(copy)
    page = tmp_path / "for_readers.md"
    page.write_text(
        (ROOT / "docs" / "for_readers.md").read_text(encoding="utf-8") + "\nIt took 4,711.37 s.\n",
        encoding="utf-8",
    )
    missing = unrecorded_numbers(
        page.read_text(encoding="utf-8"), _json_values(sorted(RECORDS.glob("*.json"))), set()
    )
    assert "4,711.37" in missing


def test_prose_numbers_rules():
    """The structural rules and the matching rules, one case each."""
    got = prose_numbers(
        "## 6c′ · Table 3.2\n"
        "1. First, see Tables 3.3/3.4, Eq. 2.6, Appendix C.1, step 9 and WEAT 1-10 (Barza 2023).\n"
        "A 95 % interval, at the 5 % level, with 80 % power and α = 0.05: p < 0.001, `n = 2,000`, "
        "data/models/en-mlm/training.json, [a](https://x.org/1.5). Kept: 0.54, 54 %, 1,701, "
        "about 14,000, 41 and 48 %."
    )
    assert [(s, p, a) for s, _, p, a in got] == [
        ("0.54", False, False), ("54 %", True, False), ("1,701", False, False), ("14,000", False, True),
        ("41", True, False), ("48 %", True, False),
    ]  # fmt: skip
    vals = {0.5371, 1701.0, 13889.0, 0.4149}
    assert number_is_recorded("0.54", 0.54, False, False, vals)
    assert number_is_recorded("54 %", 54.0, True, False, vals)  # a share shown as a percentage
    assert not number_is_recorded("54", 54.0, False, False, vals)  # no % sign: not read as a share
    assert number_is_recorded("1,701", 1701.0, False, False, vals) and number_is_recorded(
        "1701", 1701.0, False, False, vals
    )
    assert number_is_recorded("14,000", 14000.0, False, True, vals)  # about 14,000 for 13,889
    assert not number_is_recorded("14,000", 14000.0, False, False, vals)  # but not when written as exact
    assert number_is_recorded("41", 41.0, True, False, vals) and not number_is_recorded(
        "0.53", 0.53, False, False, vals
    )
