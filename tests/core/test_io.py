"""The shared readers (biaskit.core.io): each one on good input, and each one refusing bad input
with a message that names the file, line or key."""

from __future__ import annotations

import gzip
import hashlib
import json

import pytest

from biaskit.core import io as bio


# ----------------------------------------------------------------------------- CSV
def test_read_csv_lines_keeps_good_records_with_their_lines():
    raw = b"a,b\n1,2\n\n3,4\n"
    parsed = bio.read_csv_lines(raw, "utf-8", "toy")
    assert parsed.header == ["a", "b"]
    assert parsed.rows == [(2, ["1", "2"]), (4, ["3", "4"])]
    assert parsed.n_records == 2
    assert [(i["line"], i["reason"], i["action"]) for i in parsed.issues] == [(3, "blank line", "ignored")]


def test_read_csv_lines_reports_a_record_with_the_wrong_number_of_fields():
    parsed = bio.read_csv_lines(b"a,b,c\n1,2,3\n4,5\n6,7,8,9\n", "utf-8", "toy")
    assert [ln for ln, _ in parsed.rows] == [2]
    assert parsed.n_records == 3
    (few, many) = parsed.issues
    assert (few["line"], few["action"]) == (3, "skipped")
    assert few["reason"] == "malformed CSV row: 2 fields, header has 3 (too few: truncated?)"
    assert (many["line"], many["text"]) == (4, "6,7,8,9")
    assert "too many: unquoted comma?" in many["reason"]


def test_read_csv_lines_reports_a_quote_never_closed_and_a_missing_last_line_break():
    parsed = bio.read_csv_lines(b'a,b\n1,2\n"3,4\n5,6\n7,8\n', "utf-8", "toy")
    assert [ln for ln, _ in parsed.rows] == [2]
    (issue,) = parsed.issues
    assert issue["line"] == 3 and issue["action"] == "skipped"
    assert "the quote opened on line 3 is never closed, so lines 3-5 (3 non-blank lines" in issue["reason"]
    assert parsed.n_records == 4  # the record on line 2 and the three lines swallowed
    cut = bio.read_csv_lines(b"a,b\n1,2\n3,4", "utf-8", "toy")
    assert [ln for ln, _ in cut.rows] == [2, 3]
    (issue,) = cut.issues
    assert (issue["line"], issue["row"], issue["action"]) == (3, 1, "kept")
    assert "does not end with a line break" in issue["reason"]


def test_read_csv_lines_refuses_undecodable_bytes_and_an_empty_file():
    with pytest.raises(ValueError, match=r"toy: cannot decode byte b'\\xe9' on line 3 as 'utf-8'"):
        bio.read_csv_lines(b"a,b\n1,2\n\xe9,3\n", "utf-8", "toy")
    with pytest.raises(ValueError, match="toy: the file is empty"):
        bio.read_csv_lines(b"", "utf-8", "toy")
    # a byte-order mark is not part of the first column's name
    assert bio.read_csv_lines("\ufeffa,b\n1,2\n".encode(), "utf-8", "toy").header == ["a", "b"]


def test_check_csv_header_names_missing_and_repeated_columns():
    bio.check_csv_header(["a", "b", "c"], ["a", "c"], "toy")
    with pytest.raises(
        ValueError, match=r"toy: column\(s\) \['d'\] missing; header \(line 1\) is \['a', 'b'\]"
    ):
        bio.check_csv_header(["a", "b"], ["a", "d"], "toy")
    with pytest.raises(ValueError, match=r"toy: column\(s\) \['a'\] appear twice"):
        bio.check_csv_header(["a", "b", "a"], ["a"], "toy")
    bio.check_csv_header(["a", "b", "b"], ["a"], "toy")  # a repeat outside the needed columns ...
    with pytest.raises(ValueError, match=r"column\(s\) \['b'\] appear twice"):
        bio.check_csv_header(["a", "b", "b"], ["a"], "toy", all_unique=True)  # ... unless all must be unique


# ----------------------------------------------------------------------------- JSON
def test_read_json_file_reads_plain_and_gzipped_json(tmp_path):
    (tmp_path / "a.json").write_text('{"x": [1, 2]}', encoding="utf-8")
    with gzip.open(tmp_path / "a.json.gz", "wt", encoding="utf-8") as fh:
        fh.write('{"x": [1, 2]}')
    assert bio.read_json_file(tmp_path / "a.json", "toy") == {"x": [1, 2]}
    assert bio.read_json_file(tmp_path / "a.json.gz", "toy") == {"x": [1, 2]}


def test_read_json_file_refuses_truncated_and_corrupt_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"x": [1,\n 2', encoding="utf-8")
    with pytest.raises(ValueError, match=r"not a valid toy JSON file: .* at line 2, column 3"):
        bio.read_json_file(bad, "toy")
    full = gzip.compress(json.dumps({"x": list(range(1000))}).encode())
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(full[: len(full) // 2])
    with pytest.raises(ValueError, match="truncated or corrupt gzip file"):
        bio.read_json_file(cut, "toy")
    latin = tmp_path / "latin.json"
    latin.write_bytes('{"x": "é"}'.encode("latin-1"))
    with pytest.raises(ValueError, match="not UTF-8 text"):
        bio.read_json_file(latin, "toy")


def test_read_json_is_strict(tmp_path):
    good = tmp_path / "g.json"
    good.write_bytes(b'\xef\xbb\xbf{"a": 1}')  # a byte-order mark is allowed
    assert bio.read_json(good, "toy") == {"a": 1}
    with pytest.raises(FileNotFoundError, match="toy not found"):
        bio.read_json(tmp_path / "missing.json", "toy")
    dup = tmp_path / "dup.json"
    dup.write_text('{"a": 1, "b": {"c": 2, "c": 3}}', encoding="utf-8")
    with pytest.raises(
        ValueError, match=r"dup.json: repeated key\(s\) \['c'\]: only the last value would be kept"
    ):
        bio.read_json(dup, "toy")
    latin = tmp_path / "latin.json"
    latin.write_bytes('{"a":\n "é"}'.encode("latin-1"))
    with pytest.raises(ValueError, match=r"not UTF-8 text \(byte b'\\xe9' on line 2\)"):
        bio.read_json(latin, "toy")
    broken = tmp_path / "broken.json"
    broken.write_text('{"a": }', encoding="utf-8")
    with pytest.raises(ValueError, match=r"broken.json is not valid JSON: .*line 1 column 7"):
        bio.read_json(broken, "toy")


# ----------------------------------------------------------------------------- the rest
def test_sha256_file_and_the_checksum_error(tmp_path):
    from biaskit.data import downloads

    p = tmp_path / "blob.bin"
    data = bytes(range(256)) * 5000  # over one 1 MiB chunk
    p.write_bytes(data)
    assert bio.sha256_file(p) == hashlib.sha256(data).hexdigest()
    assert downloads.sha256_file is bio.sha256_file and downloads.ChecksumError is bio.ChecksumError
    assert issubclass(bio.ChecksumError, ValueError)
    with pytest.raises(FileNotFoundError):
        bio.sha256_file(tmp_path / "missing.bin")


def test_unique_in_order():
    assert bio.unique_in_order(["b", "a", "b", "c", "a", "b"]) == (["b", "a", "c"], ["b", "a", "b"])
    assert bio.unique_in_order([]) == ([], [])


def test_validation_report_counts_and_summary():
    from biaskit.data.datasets import ValidationReport

    assert ValidationReport is bio.ValidationReport
    rec = bio.issue_record(4, "bad thing", "skipped", "x" * 100, row=2, column="a")
    assert rec["text"] == "x" * 79 + "…" and list(rec) == bio.REPORT_COLUMNS
    rep = bio.ValidationReport.from_records(
        [rec, bio.issue_record(None, "odd", "kept", "y", row=5)], "toy", n_records=10, n_loaded=9
    )
    assert len(rep) == 2 and rep.n_skipped == 1 and rep.skipped_rows == [2] and rep.skipped_lines == [4]
    assert rep.summary() == (
        "toy: loaded 9 of 10 data records; 2 issue(s)\n  - skipped 1: bad thing (lines 4)\n"
        "  - kept 1: odd (rows 5)"
    )
    with pytest.raises(ValueError, match=r"skipped 1: bad thing \(lines 4\)"):
        rep.raise_if_any()
    both = rep + bio.ValidationReport(context="other", n_records=1, n_loaded=1)
    assert (both.context, both.n_records, both.n_loaded, len(both)) == ("toy; other", 11, 10, 2)
    assert bio.ValidationReport().summary() == ": no problems found."
