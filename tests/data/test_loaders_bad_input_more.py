"""Bad input is never dropped without the user seeing it: the loaders outside ``biaskit.data.datasets``.

The thesis scores (``biaskit.studies.replay``), the Sayenju tables (``metrics.class_confusion``), the
Barza sentence files (``metrics.gender_templates``) and the word-similarity benchmarks
(``metrics.glpp``) are fed small truncated or malformed copies written under ``tmp_path``
(pointed at with ``BIASKIT_DATA_DIR``).  A damaged file either raises ``ValueError`` naming the
file, the line and (for a bad number) the column, or is loaded with a WARNING that names the
count and the file lines; the bundled files load unchanged (see also the modules' own tests).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pandas as pd
import pytest

from biaskit.core.paths import data_dir
from biaskit.debiasing import glpp
from biaskit.metrics import class_confusion as cc
from biaskit.metrics import gender_templates as gt
from biaskit.studies import replay


def _warnings(caplog: pytest.LogCaptureFixture, logger: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == logger and r.levelno == logging.WARNING]


def _copy(tmp_path: Path, folder: str) -> Path:
    """A writable copy of ``data/<folder>`` under ``tmp_path`` (the new ``BIASKIT_DATA_DIR``)."""
    dst = tmp_path / folder
    shutil.copytree(data_dir() / folder, dst)
    for f in dst.iterdir():
        f.chmod(0o644)
    return dst


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


# ============================================================================ thesis scores
@pytest.fixture
def scores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    dst = _copy(tmp_path, "thesis-scores")
    monkeypatch.setenv("BIASKIT_DATA_DIR", str(tmp_path))
    return dst


def test_thesis_scores_cut_mid_row_raise_with_file_and_line(scores: Path) -> None:
    path = scores / "cp_beto_or.csv"
    cut = path.read_bytes()[:5000]
    n_lines = cut.count(b"\n") + 1  # the partial last line included
    path.write_bytes(cut)
    with pytest.raises(ValueError) as err:
        replay.load_thesis_scores("cp", "original")
    msg = str(err.value)
    assert str(path) in msg
    assert f"loaded {n_lines - 2} of {n_lines - 1} data records" in msg
    assert "header has 6 (too few: truncated?)" in msg and f"(lines {n_lines})" in msg


def test_thesis_scores_unclosed_quote_raises_with_its_line(scores: Path) -> None:
    path = scores / "sz_beto_ran.csv"  # a file without quotes: the quote runs to the end
    lines = _lines(path)
    lines[30] = lines[30].replace(",", ',"', 1)  # file line 31 opens a quote that is never closed
    path.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(ValueError, match=r"sz_beto_ran\.csv: loaded 29 of 170 data records") as err:
        replay.load_thesis_scores("sz", "random")
    assert "quote opened on line 31 is never closed" in str(err.value) and "lines 31-171" in str(err.value)


def test_thesis_scores_cut_at_a_line_break_names_the_last_line(scores: Path) -> None:
    path = scores / "cp_beto_ran.csv"
    path.write_text("".join(_lines(path)[:31]), encoding="utf-8")
    with pytest.raises(ValueError, match=r"expected 170 rows, found 30 \(data on file lines 2-31\)"):
        replay.load_thesis_scores("cp", "random")


def test_thesis_scores_bad_cells_name_file_line_and_column(scores: Path) -> None:
    path = scores / "sz_beto_ran.csv"
    lines = _lines(path)
    lines.insert(3, "\n")  # a blank line: the data after it is one file line further down
    head, less, s_more, _old_score, bias = lines[10].rstrip("\n").rsplit(",", 4)  # file line 11
    lines[10] = ",".join([head, less, s_more, "", bias]) + "\n"  # empty score
    fields = lines[20].rstrip("\n").rsplit(",", 2)  # file line 21
    lines[20] = ",".join([fields[0], "inf", fields[2]]) + "\n"  # non-finite score, same column
    path.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(ValueError) as err:
        replay.load_thesis_scores("sz", "random")
    msg = str(err.value)
    assert msg.startswith(f"{path}: column 'sent_less_ran_score' has 2 missing or non-numeric value(s)")
    assert "file line(s) [11, 21]" in msg and "e.g. ''" in msg


def test_thesis_scores_empty_sentence_names_its_real_line(scores: Path) -> None:
    path = scores / "cp_beto_par.csv"
    lines = _lines(path)
    lines.insert(5, "\n")
    lines[40] = lines[40].split(",", 1)[0] + ",," + lines[40].split(",", 2)[2]  # sent_more_par empty
    path.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(ValueError, match=r"column 'sent_more_par' is empty at file line\(s\) \[41\]"):
        replay.load_thesis_scores("cp", "paraphrased")


def test_thesis_scores_blank_line_and_no_final_break_warn_but_load_the_same_data(
    scores: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BIASKIT_DATA_DIR")
    bundled = replay.load_thesis_scores("sz", "original")  # the repository's copy
    monkeypatch.setenv("BIASKIT_DATA_DIR", str(scores.parent))
    path = scores / "sz_beto_or.csv"
    lines = _lines(path)
    lines.insert(50, "\n")  # file line 51
    lines[-1] = lines[-1].rstrip("\n")
    path.write_text("".join(lines), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="biaskit.studies.replay"):
        df = replay.load_thesis_scores("sz", "original")
    pd.testing.assert_frame_equal(df, bundled, check_exact=True)
    msg, checksum = _warnings(caplog, "biaskit.studies.replay")
    assert "sha256" in checksum  # the bytes differ from the published file, the data do not
    assert "loaded 1503 of 1503 data records; 2 issue(s)" in msg
    assert (
        "blank line (lines 51)" in msg and "does not end with a line break" in msg and "(lines 1505)" in msg
    )


def test_thesis_published_values_truncated_json_names_the_file(scores: Path) -> None:
    path = scores / "published_ch4.json"
    path.write_text(path.read_text(encoding="utf-8")[:300], encoding="utf-8")
    with pytest.raises(
        ValueError, match=r"published_ch4\.json: not a valid published values JSON file: .* at line \d+"
    ):
        replay.load_published()


# ============================================================================ Sayenju tables
@pytest.fixture
def sayenju(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    dst = _copy(tmp_path, "sayenju")
    monkeypatch.setenv("BIASKIT_DATA_DIR", str(tmp_path))
    return dst


def test_confusion_matrix_cut_mid_row_raises_with_line(sayenju: Path) -> None:
    path = sayenju / "fig3_2_confusion_matrix.csv"
    raw = path.read_bytes()
    path.write_bytes(raw[: raw.index(b"Policy_Related,21") + 30])  # file line 12 cut after "3,": 8 fields
    with pytest.raises(ValueError) as err:
        cc.load_sayenju_confusion_matrix()
    msg = str(err.value)
    assert str(path) in msg and "loaded 10 of 11 data records" in msg
    assert "malformed CSV row: 8 fields, header has 16 (too few: truncated?) (lines 12)" in msg


def test_confusion_matrix_bad_counts_name_line_and_column(sayenju: Path) -> None:
    path = sayenju / "fig3_2_confusion_matrix.csv"
    text = path.read_text(encoding="utf-8")
    text = text.replace("Account_Related,182,12,", "Account_Related,182,12.5,", 1)  # line 2
    text = text.replace("Claim_Related,0,3,1,376,", "Claim_Related,0,3,,376,", 1)  # line 5
    text = text.replace("deny,0,0,0,", "deny,0,x,0,", 1)  # line 16
    text = text.replace("SmallTalk,4,1,", "Escalation,4,1,", 1)  # line 15 repeats line 9's label
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError) as err:
        cc.load_sayenju_confusion_matrix()
    msg = str(err.value)
    assert "4 unusable cell(s)" in msg
    assert "line 15: row label 'Escalation' repeats line 9" in msg
    assert "line 2, column 'Billing_Related': '12.5' is not a whole number" in msg
    assert "line 16, column 'Billing_Related': 'x' is not a whole number" in msg
    assert "line 5, column 'Cancel_Related': empty" in msg


def test_confusion_matrix_blank_line_warns_and_loads_the_same_matrix(
    sayenju: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BIASKIT_DATA_DIR")
    bundled = cc.load_sayenju_confusion_matrix()
    monkeypatch.setenv("BIASKIT_DATA_DIR", str(sayenju.parent))
    path = sayenju / "fig3_2_confusion_matrix.csv"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines.insert(4, "\r\n")  # file line 5
    path.write_text("".join(lines), encoding="utf-8", newline="")
    with caplog.at_level(logging.WARNING, logger="biaskit.metrics.class_confusion"):
        cm = cc.load_sayenju_confusion_matrix()
    pd.testing.assert_frame_equal(cm, bundled, check_exact=True)
    assert int(cm.to_numpy().sum()) == 17656
    (msg,) = _warnings(caplog, "biaskit.metrics.class_confusion")
    assert "loaded 15 of 15 data records" in msg and "blank line (lines 5)" in msg


def test_classification_report_bad_cells_and_extra_field(sayenju: Path) -> None:
    path = sayenju / "fig3_8_classification_report.csv"
    text = path.read_text(encoding="utf-8")
    good = text
    text = text.replace("Cancel_Related,0.93,", "Cancel_Related,abc,", 1)  # line 4
    text = text.replace(",0.65,0.62,0.64,682", ",0.65,0.62,0.64,682.5", 1)  # line 10
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError) as err:
        cc.load_sayenju_classification_report()
    msg = str(err.value)
    assert "line 4, column 'precision': 'abc' is not a finite number" in msg
    assert "line 10, column 'support': '682.5' is not a whole number" in msg
    path.write_text(good.replace("deny,0.00,0.00,0.00,1", "deny,0.00,0.00,0.00,1,7", 1), encoding="utf-8")
    with pytest.raises(
        ValueError, match=r"6 fields, header has 5 \(too many: unquoted comma\?\) \(lines 16\)"
    ):
        cc.load_sayenju_classification_report()


# ============================================================================ Barza sentences
@pytest.fixture
def barza(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    dst = _copy(tmp_path, "barza")
    monkeypatch.setenv("BIASKIT_DATA_DIR", str(tmp_path))
    return dst


def test_tgb_pairs_cut_mid_row_is_left_out_with_a_warning(
    barza: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = barza / "tgb_published_pairs.csv"
    raw = path.read_bytes()
    path.write_bytes(raw[: raw.index(b"the actuary is having") + 40])  # line 5 cut inside its 2nd field
    with caplog.at_level(logging.WARNING, logger="biaskit.data.barza"):
        df = gt.load_tgb_pairs("tgb")
    assert list(df["sent_stereo"].str[:20]) == [
        "To make work life be",
        "The programmer carri",
        "The doctor is having",
    ]
    rep = df.attrs["report"]
    assert (rep.n_loaded, rep.n_records, rep.skipped_lines) == (3, 4, [5])
    (msg,) = _warnings(caplog, "biaskit.data.barza")
    assert "loaded 3 of 4 data records" in msg
    assert "malformed CSV row: 2 fields, header has 4 (too few: truncated?) (lines 5)" in msg


def test_tgb_pairs_empty_sentence_and_blank_line_are_reported(
    barza: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = barza / "thesis_other_pairs.csv"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[5] = (
        "occupation,The doctor asked the nurse to help her.,,section 6.1.1\r\n"  # line 6: no counterpart
    )
    lines.insert(3, "\r\n")  # line 4
    path.write_text("".join(lines), encoding="utf-8", newline="")
    with caplog.at_level(logging.WARNING, logger="biaskit.data.barza"):
        df = gt.load_tgb_pairs("all")
    assert len(df) == 9 and list(df["set"]).count("thesis_other") == 5
    assert df["sent_anti"].notna().all()
    rep = df.attrs["report"]
    assert (rep.n_loaded, rep.n_records, rep.skipped_lines) == (9, 10, [7])
    (msg,) = [m for m in _warnings(caplog, "biaskit.data.barza") if "thesis_other" in m]
    assert "loaded 5 of 6 data records" in msg
    assert "empty sent_anti: record left out (lines 7)" in msg and "blank line (lines 4)" in msg


def test_tgb_examples_malformed_rows_are_no_longer_padded_with_none(
    barza: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = barza / "tgb_published_examples.csv"
    text = path.read_text(encoding="utf-8")
    text = text.replace(
        "Women are incompetent at work.,section 4.1.1.1.2", "Women are incompetent at work.", 1
    )
    text = text.replace("Be his sexy spring chicken.,section", "Be his sexy spring chicken.,extra,section", 1)
    text += "benevolent_sexism,,section 9\r\n"
    path.write_text(text, encoding="utf-8", newline="")
    with caplog.at_level(logging.WARNING, logger="biaskit.data.barza"):
        df = gt.load_tgb_examples()
    assert list(df.columns) == ["category", "sentence", "source"]
    assert len(df) == 5 and df["source"].str.startswith("section 4.1.1.1").all()
    (msg,) = _warnings(caplog, "biaskit.data.barza")
    assert "loaded 5 of 8 data records; 3 issue(s)" in msg
    assert "2 fields, header has 3 (too few: truncated?) (lines 4)" in msg
    assert "4 fields, header has 3 (too many: unquoted comma?) (lines 5)" in msg
    assert "empty sentence: record left out (lines 9)" in msg


def test_tgb_pairs_missing_column_raises(barza: Path) -> None:
    (barza / "tgb_published_pairs.csv").write_text("category,sent_stereo,source\nx,a,b\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"column\(s\) \['sent_anti'\] missing; header \(line 1\)"):
        gt.load_tgb_pairs("tgb")


def test_barza_templates_bad_json_names_the_file(barza: Path) -> None:
    (barza / "tbd_templates_clean.json").write_text('{"categories": {"a": [\n', encoding="utf-8")
    with pytest.raises(
        ValueError, match=r"tbd_templates_clean\.json: not a valid Barza templates JSON file: .* line 2"
    ):
        gt.load_tbd_templates("clean")


# ============================================================================ similarity benchmarks
@pytest.fixture
def sim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BIASKIT_DATA_DIR", str(tmp_path))
    (tmp_path / "similarity").mkdir()
    return tmp_path / "similarity" / "wordsim353.tsv"


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (
            "cat\tdog\t7.5\ncar\ttrain\tseven\n",
            r":3: column 3 \(score\) must be a finite number, got 'seven'",
        ),
        ("cat\tdog\t7.5\ncar\ttrain\tnan\n", r":3: column 3 \(score\) must be a finite number, got 'nan'"),
        ("cat\tdog\t7.5\ncar\ttrain\t\n", r":3: column 3 \(score\) must be a finite number, got ''"),
        (
            "cat\tdog\t7.5\ncar\ttrain\t6\t1\n",
            r":3: expected 'word1<TAB>word2<TAB>score' .* got 4 field\(s\)",
        ),
        ("cat\tdog\t7.5\n\ttrain\t6\n", r":3: expected 'word1<TAB>word2<TAB>score' .* got 3 field\(s\)"),
        ("cat\tdog\t7.5\ncar\ttra", r":3: expected 'word1<TAB>word2<TAB>score' .* got 2 field\(s\)"),
    ],
)
def test_similarity_bad_lines_raise_with_file_and_line(sim: Path, body: str, match: str) -> None:
    sim.write_text("# header\n" + body, encoding="utf-8")
    with pytest.raises(ValueError, match=r"wordsim353\.tsv" + match):
        glpp.load_similarity_benchmark("wordsim353")


def test_similarity_not_utf8_names_the_line(sim: Path) -> None:
    sim.write_bytes(b"# header\ncat\tdog\t7.5\ncaf\xe9\tbar\t5\n")
    with pytest.raises(ValueError, match=r"wordsim353\.tsv:3: not UTF-8 text \(byte b'\\xe9'"):
        glpp.load_similarity_benchmark("wordsim353")


def test_similarity_blank_lines_and_cut_last_line_warn(sim: Path, caplog: pytest.LogCaptureFixture) -> None:
    sim.write_text("# header\ncat\tdog\t7.5\n\n\ncar\ttrain\t6.25\nsun\tmoon\t3.1", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="biaskit.debiasing.glpp"):
        pairs = glpp.load_similarity_benchmark("wordsim353")
    assert pairs == [("cat", "dog", 7.5), ("car", "train", 6.25), ("sun", "moon", 3.1)]
    msgs = _warnings(caplog, "biaskit.debiasing.glpp")
    assert len(msgs) == 3 and "sha256" in msgs[0]
    assert "skipped 2 blank line(s) (lines 3, 4); no data lost" in msgs[1]
    assert (
        "does not end with a line break: its last line (line 6, 'sun\\tmoon\\t3.1') may be cut off" in msgs[2]
    )


def test_thesis_scores_cut_inside_the_last_number_warn_by_checksum(
    scores: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A last line cut mid-digits keeps all its fields: only the sha256 check can see it."""
    path = scores / "sz_beto_par.csv"
    data = path.read_bytes().rstrip(b"\n")
    path.write_bytes(data[:-3])  # drop the last three digits of the last score
    replay._load_cached.cache_clear()
    with caplog.at_level(logging.WARNING, logger="biaskit.studies.replay"):
        df = replay.load_thesis_scores("sz", "paraphrased")
    assert len(df) == 170
    msgs = _warnings(caplog, "biaskit.studies.replay")
    assert any(
        "sz_beto_par.csv parses, but its sha256" in m and replay.SCORE_CHECKSUMS["sz_beto_par.csv"] in m
        for m in msgs
    )


def test_bundled_thesis_scores_match_their_checksums(caplog: pytest.LogCaptureFixture) -> None:
    replay._load_cached.cache_clear()
    with caplog.at_level(logging.WARNING, logger="biaskit.studies.replay"):
        for metric in ("cp", "sz"):
            for variant in ("original", "paraphrased", "random"):
                replay.load_thesis_scores(metric, variant)
    assert not [m for m in _warnings(caplog, "biaskit.studies.replay") if "sha256" in m]
