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

ROOT = Path(__file__).resolve().parents[1]
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
    """
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
    return [TESTS / name for name in re.findall(r"`(test_\w+\.py)`", entry["test"])]


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
    """(record file, entry, check) for every ``kind`` check (``from_results`` / ``from_file``) of the records."""
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


# ----------------------------------------------------------------------------- committed files (training.json)
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
ONE_OFF = ["benchmarks_1", "benchmarks_2", "benchmarks_3", "benchmarks_4", "benchmarks_5", "dask", "fine_tuning",
           "training_notes", "timings"]  # fmt: skip
#: still only "recorded by hand" in README.md at 46eb479: the notebooks' default runs when each row was written
#: (a few numbers tied to results/*.json through from_results).  Seeds 000 and 001, substitutes and
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
        assert "2-core" in rec["source"] and "EPYC" in rec["source"], (
            f"{path.name}: its source names no machine"
        )
        assert HAND not in rec["source"], path.name


def test_records_recorded_only_by_hand_are_the_known_ones():
    """A new record says how its numbers were made; the list shrinks as records are tied to runs."""
    hand = sorted(
        p.stem for p in RECORDS.glob("*.json") if HAND in json.loads(p.read_text(encoding="utf-8"))["source"]
    )
    assert hand == UNTRACED
