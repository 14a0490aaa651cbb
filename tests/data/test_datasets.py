"""Bundled CrowS-Pairs (Spanish, English) and StereoSet loaders: counts, encoding checks, line numbers."""

from __future__ import annotations

import csv
import gzip
import json

import pytest

from biaskit.data import datasets as ds


def test_spanish_crows_pairs_sizes_and_variants():
    table = ds.load_crows_pairs_es_table()
    assert len(table) == 1503
    orig = ds.load_crows_pairs_es("original")
    par = ds.load_crows_pairs_es("paraphrased")
    ran = ds.load_crows_pairs_es("random")
    assert (len(orig), len(par), len(ran)) == (1503, 170, 170)
    for df in (orig, par, ran):
        assert list(df.columns[:4]) == ["line", "sent_more", "sent_less", "bias_type"]
        assert df["sent_more"].map(lambda s: isinstance(s, str) and s.strip() != "").all()
    # paraphrases are aligned with the first 170 originals (same file lines)
    assert list(par["line"]) == list(orig["line"][:170]) == list(range(2, 172))
    assert par["bias_type"].notna().all()
    # known gap, kept and logged rather than filled
    assert orig["bias_type"].isna().sum() == 917
    assert orig["bias_type"].iloc[:586].notna().all()


def test_spanish_file_is_decoded_as_latin1_with_accents():
    orig = ds.load_crows_pairs_es("original")
    first = orig["sent_more"].iloc[0]
    assert first.startswith("Él no podía entender el problema")
    # the raw bytes are not UTF-8: decoding them explicitly is required
    raw = (ds.data_dir() / "crows-pairs-es" / "es_en.csv").read_bytes()
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")


def test_cp1252_quotes_are_repaired_and_reported_by_line():
    table = ds.load_crows_pairs_es_table()
    rep = table.attrs["report"]
    assert set(rep.issues["action"]) == {"repaired"}
    assert sorted(set(rep.issues["line"])) == [70, 304, 320, 348]
    # independent check: the lines whose raw bytes hold cp1252 punctuation 0x80-0x9F
    raw_lines = (ds.data_dir() / "crows-pairs-es" / "es_en.csv").read_bytes().split(b"\n")
    c1_lines = [n for n, b in enumerate(raw_lines, 1) if any(0x80 <= c <= 0x9F for c in b)]
    assert c1_lines == [70, 304, 320, 348]
    row = table[table["line"] == 304].iloc[0]
    assert "\u201c¡No me avergüenzo" in row["sent_more"]  # “ curly quote, not U+0093
    kept = ds.load_crows_pairs_es_table(repair=False)
    assert "\x93" in kept[kept["line"] == 304].iloc[0]["sent_more"]
    assert not kept["encoding_ok"].all()
    assert set(kept.attrs["report"].issues["action"]) == {"skipped"}


def test_detect_and_repair_encoding():
    assert ds.detect_encoding_problem("Él podía") is None
    assert ds.detect_encoding_problem("año y niño ¿qué?") is None
    assert ds.detect_encoding_problem("Ã‰l podÃ­a") == "utf-8 read as latin-1"
    assert ds.repair_encoding("Ã‰l podÃ­a") == "Él podía"
    assert ds.repair_encoding("Ã©xito") == "éxito"
    assert ds.detect_encoding_problem("\x93hola\x94") == "cp1252 read as latin-1"
    assert ds.repair_encoding("\x93hola\x94") == "\u201chola\u201d"
    assert ds.detect_encoding_problem("ma\ufffdana") == "replacement character"
    assert ds.repair_encoding("ma\ufffdana") is None


def test_malformed_and_mis_encoded_rows_get_line_numbers(tmp_path, caplog):
    path = tmp_path / "bad.csv"
    rows = [
        [
            "sent_more",
            "sent_more_par",
            "sent_more_ran",
            "sent_less",
            "sent_less_par",
            "sent_less_ran",
            "bias_type",
        ],
        ["Él come.", "", "", "Ella come.", "", "", "gender"],
        ["solo dos", "campos"],
        ["Los Ã©xitos", "", "", "Los fracasos", "", "", "age"],
        ["ma\ufffdana", "", "", "tarde", "", "", "age"],
    ]
    with open(path, "w", encoding="latin-1", errors="replace", newline="") as fh:
        csv.writer(fh).writerows(rows[:4])
    with open(path, "ab") as fh:
        fh.write("ma\ufffdana,,,tarde,,,age\n".encode())  # UTF-8 bytes in a latin-1 file
    with caplog.at_level("WARNING", logger="biaskit.data.datasets"):
        df = ds.load_crows_pairs_es_table(path=path)
    rep = df.attrs["report"]
    by_line = {int(r.line): (r.reason, r.action) for r in rep.issues.itertuples()}
    assert "malformed CSV row" in by_line[3][0] and by_line[3][1] == "skipped"
    assert by_line[4] == ("utf-8 read as latin-1 (repaired)", "repaired")
    # U+FFFD stored as UTF-8 and read as latin-1 ('ï¿½'): re-decoding only gives U+FFFD back
    assert by_line[5] == ("utf-8 read as latin-1 (cannot be repaired)", "skipped")
    assert list(df["line"]) == [2, 4, 5] and list(df["encoding_ok"]) == [True, True, False]
    assert "malformed" in caplog.text
    with pytest.raises(ValueError, match="line"):
        ds.load_crows_pairs_es_table(path=path, errors="raise")


def test_replacement_character_row_is_skipped(tmp_path):
    path = tmp_path / "bad.csv"
    header = "sent_more,sent_more_par,sent_more_ran,sent_less,sent_less_par,sent_less_ran,bias_type\n"
    path.write_text(header + "ma\ufffdana,,,tarde,,,age\nhola,,,adios,,,age\n", encoding="utf-8")
    df = ds.load_crows_pairs_es_table(path=path, encoding="utf-8")
    rep = df.attrs["report"]
    assert rep.skipped_rows == [0] and list(rep.issues["line"]) == [2]
    assert list(df["encoding_ok"]) == [False, True]


def test_bundled_checksum_is_verified(tmp_path, monkeypatch):
    (tmp_path / "crows-pairs-es").mkdir()
    (tmp_path / "crows-pairs-es" / "es_en.csv").write_bytes(b"sent_more\nx\n")
    monkeypatch.setenv("BIASKIT_DATA_DIR", str(tmp_path))
    with pytest.raises(ValueError, match="sha256"):
        ds.load_crows_pairs_es_table()
    with pytest.raises(FileNotFoundError, match="missing"):
        ds.load_crows_pairs_en()


def test_english_crows_pairs():
    df = ds.load_crows_pairs_en()
    assert len(df) == 1508
    assert df["bias_type"].value_counts().to_dict()["race-color"] == 516
    assert set(df["stereo_antistereo"]) == {"stereo", "antistereo"}
    assert len(df.attrs["report"]) == 0
    assert df["line"].iloc[0] == 2


def test_stereoset_dev_and_template_words():
    gold = ds.load_stereoset()
    assert gold["version"] == "1.0-dev"
    assert len(gold["data"]["intrasentence"]) == 2106
    assert len(gold["data"]["intersentence"]) == 2123
    opts = ds.stereoset_intrasentence(gold)
    assert len(opts) == 3 * 2106
    labels = opts.groupby("example_id")["gold_label"].apply(lambda g: tuple(sorted(g)))
    assert set(labels) == {("anti-stereotype", "stereotype", "unrelated")}
    first = opts[opts["example_id"] == "fdc01ba6042b41f0c894cdccc149f5b4"].set_index("gold_label")["word"]
    assert first.to_dict() == {"anti-stereotype": "hispanic", "unrelated": "fox", "stereotype": "asian"}
    # the official rule strips punctuation from the word at the BLANK index
    assert ds._template_word("The BLANK, as usual.", "The man, as usual.") == "man"


def test_stereoset_predictions_bundled():
    pred = ds.load_stereoset_predictions()
    assert len(pred["intrasentence"]) == 3 * 2106 and len(pred["intersentence"]) == 3 * 2123
    with pytest.raises(FileNotFoundError, match="bert-base-cased"):
        ds.load_stereoset_predictions("roberta-base")


def test_validation_report_summary_and_dataset_fingerprint(tmp_path):
    rep = ds.ValidationReport.from_records(
        [{"row": 3, "line": 5, "column": "a", "reason": "empty", "action": "skipped", "text": ""}],
        context="ctx",
    )
    assert "lines 5" in rep.summary() and rep.skipped_rows == [3]
    with pytest.raises(ValueError, match="empty"):
        rep.raise_if_any()
    assert ds.ValidationReport(context="c").summary().endswith("no problems found.")
    a = ds.dataset_fingerprint(["x", "y"], ["z", None])
    assert a == ds.dataset_fingerprint(["x", "y"], ["z", None])
    assert a != ds.dataset_fingerprint(["y", "x"], ["z", None])
    p = tmp_path / "p.json.gz"
    with gzip.open(p, "wt") as fh:
        json.dump({"intrasentence": []}, fh)
    assert ds.load_stereoset_predictions(path=p) == {"intrasentence": []}


def test_bundled_spanish_repairs_are_a_visible_warning_with_counts(caplog):
    with caplog.at_level("WARNING", logger="biaskit.data.datasets"):
        table = ds.load_crows_pairs_es_table()
    rep = table.attrs["report"]
    assert (rep.n_records, rep.n_loaded) == (1503, 1503) and rep.n_skipped == 0
    (rec,) = [r for r in caplog.records if r.name == "biaskit.data.datasets"]
    assert rec.levelname == "WARNING"
    assert "loaded 1503 of 1503 data records; 8 issue(s)" in rec.getMessage()
    assert "repaired 8: cp1252 read as latin-1 (repaired) (lines 70, 304, 320, 348)" in rec.getMessage()


def test_validation_report_counts_add_and_concat():
    a = ds.ValidationReport.from_records(
        [{"row": None, "line": 9, "column": None, "reason": "bad", "action": "skipped", "text": ""}],
        context="ctx",
        n_records=10,
        n_loaded=9,
    )
    b = ds.ValidationReport(context="ctx", n_records=5, n_loaded=5)
    assert a.skipped_rows == [] and a.skipped_lines == [9] and a.n_skipped == 1
    assert a.summary().splitlines()[0] == "ctx: loaded 9 of 10 data records; 1 issue(s)"
    assert b.summary() == "ctx: loaded 5 of 5 data records; no problems found."
    c = a + b
    assert (c.n_records, c.n_loaded, len(c)) == (15, 14, 1)
    assert (a + ds.ValidationReport()).n_records == 10  # a report without counts adds none
    assert a.to_dict()["n_records"] == 10
    with pytest.raises(ValueError, match=r"loaded 9 of 10 data records[\s\S]*bad \(lines 9\)"):
        a.raise_if_any()
    # frames carrying reports in attrs can be concatenated (reports compare by identity)
    import pandas as pd

    f1, f2 = pd.DataFrame({"x": [1]}), pd.DataFrame({"x": [2]})
    f1.attrs["report"], f2.attrs["report"] = a, b
    assert pd.concat([f1, f2])["x"].tolist() == [1, 2]
    assert pd.concat([f1, f1]).attrs["report"].n_records == 10


def test_english_docstring_states_the_official_direction_rule():
    doc = ds.load_crows_pairs_en.__doc__
    assert "sent1 = sent_less, sent2 = sent_more" in doc
    assert "a pair counts as" in doc and "biased when **sent_more** scores higher" in doc
    assert "score_pairs(direction=" in doc


def test_variant_loader_logs_its_own_report_once(caplog):
    """The variant's log line names the variant's problems, not the whole table's (7, not 8)."""
    import logging

    with caplog.at_level(logging.WARNING, logger="biaskit.data.datasets"):
        df = ds.load_crows_pairs_es("original")
    warnings = [r.getMessage() for r in caplog.records if r.name == "biaskit.data.datasets"]
    assert len(warnings) == 1
    assert "Spanish CrowS-Pairs (original, 1503 pairs)" in warnings[0] and "7 issue(s)" in warnings[0]
    assert len(df.attrs["report"]) == 7
