"""Bad input is never dropped without the user seeing it.

Every loader is fed a small truncated or malformed file (written into ``tmp_path``).  Each test
checks that a WARNING (visible with default logging) names the count and the file lines or
words, that the returned object keeps the information where the loader has a place for it
(``df.attrs["report"]``), and that ``errors="raise"`` raises where it exists.
"""

from __future__ import annotations

import gzip
import json
import logging

import numpy as np
import pytest

from biaskit.data import corpus as C
from biaskit.data import datasets as ds
from biaskit.data import wordlists as wl
from biaskit.data.downloads import read_sha256sums
from biaskit.embeddings.vectors import detect_format, load_vectors
from biaskit.metrics import stereoset as st

ES_HEADER = "sent_more,sent_more_par,sent_more_ran,sent_less,sent_less_par,sent_less_ran,bias_type\n"


def _warnings(caplog, logger: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == logger and r.levelno == logging.WARNING]


def _es_rows(n: int = 1503, pad: int = 0) -> list[str]:
    return [f"El {i} come{'x' * pad}.,,,Ella {i} come.,,,gender\n" for i in range(n)]


# ============================================================================ CrowS-Pairs CSV
def test_unclosed_quote_swallowing_the_rest_is_a_warning_with_counts_and_lines(tmp_path, caplog):
    """The issue's case: 29 of 1503 rows loaded, formerly with one INFO message only."""
    rows = _es_rows()
    rows[29] = '"' + rows[29]  # record on file line 31 opens a quote that is never closed
    path = tmp_path / "cut.csv"
    path.write_text(ES_HEADER + "".join(rows), encoding="latin-1")
    with caplog.at_level(logging.WARNING, logger="biaskit.data.datasets"):
        df = ds.load_crows_pairs_es_table(path=path)
    assert len(df) == 29 and list(df["line"]) == list(range(2, 31))
    rep = df.attrs["report"]
    assert (rep.n_loaded, rep.n_records) == (29, 1503)
    assert rep.skipped_lines == [31] and rep.n_skipped == 1 and rep.skipped_rows == []
    (msg,) = _warnings(caplog, "biaskit.data.datasets")
    assert "loaded 29 of 1503 data records" in msg
    assert "quote opened on line 31 is never closed" in msg and "lines 31-1504" in msg
    assert "1474 non-blank lines" in msg
    with pytest.raises(ValueError, match=r"loaded 29 of 1503 data records[\s\S]*lines 31-1504"):
        ds.load_crows_pairs_es_table(path=path, errors="raise")


def test_unclosed_quote_in_the_last_column_is_caught_although_the_field_count_matches(tmp_path, caplog):
    rows = _es_rows(10)
    rows[7] = rows[7].replace(",gender", ',"gender')  # file line 9: 7 fields, last one swallows 2 lines
    path = tmp_path / "q.csv"
    path.write_text(ES_HEADER + "".join(rows), encoding="latin-1")
    with caplog.at_level(logging.WARNING, logger="biaskit.data.datasets"):
        df = ds.load_crows_pairs_es_table(path=path)
    assert list(df["line"]) == list(range(2, 9)) and set(df["bias_type"]) == {"gender"}
    assert (df.attrs["report"].n_loaded, df.attrs["report"].n_records) == (7, 10)
    assert "truncated CSV record" in caplog.text and "lines 9-11" in caplog.text


def test_unclosed_quote_over_the_csv_field_limit_is_reported_not_raised(tmp_path, caplog):
    rows = _es_rows(1503, pad=200)  # the swallowed text exceeds csv's 131072-character field limit
    rows[29] = '"' + rows[29]
    path = tmp_path / "big.csv"
    path.write_text(ES_HEADER + "".join(rows), encoding="latin-1")
    with caplog.at_level(logging.WARNING, logger="biaskit.data.datasets"):
        df = ds.load_crows_pairs_es_table(path=path)
    assert len(df) == 29
    assert (df.attrs["report"].n_loaded, df.attrs["report"].n_records) == (29, 1503)
    assert "field limit" in caplog.text and "quote opened on line 31 is never closed" in caplog.text
    assert "lines 31-1504" in caplog.text


def test_bundled_file_cut_mid_row_warns_with_line_and_total(tmp_path, caplog):
    raw = (ds.data_dir() / "crows-pairs-es" / "es_en.csv").read_bytes()
    cut = raw[:5000]
    n_lines = cut.count(b"\n") + 1  # the last, partial line included
    path = tmp_path / "cut.csv"
    path.write_bytes(cut)
    with caplog.at_level(logging.WARNING, logger="biaskit.data.datasets"):
        df = ds.load_crows_pairs_es_table(path=path)
    rep = df.attrs["report"]
    assert (rep.n_loaded, rep.n_records) == (n_lines - 2, n_lines - 1)
    assert rep.skipped_lines == [n_lines]
    (msg,) = _warnings(caplog, "biaskit.data.datasets")
    assert f"loaded {n_lines - 2} of {n_lines - 1} data records" in msg
    assert f"malformed CSV row: 4 fields, header has 7 (too few: truncated?) (lines {n_lines})" in msg
    # the variant loader keeps the record-level problem and the file's counts
    orig = ds.load_crows_pairs_es("original", path=path)
    assert orig.attrs["report"].skipped_lines == [n_lines]
    assert orig.attrs["report"].n_records == n_lines - 1
    with pytest.raises(ValueError, match=f"lines {n_lines}"):
        ds.load_crows_pairs_es("original", path=path, errors="raise")


def test_last_field_cut_without_final_line_break_is_flagged(tmp_path, caplog):
    path = tmp_path / "nolf.csv"
    path.write_text(ES_HEADER + "".join(_es_rows(3)) + "El x come.,,,Ella x come.,,,gen", encoding="latin-1")
    with caplog.at_level(logging.WARNING, logger="biaskit.data.datasets"):
        df = ds.load_crows_pairs_es_table(path=path)
    assert len(df) == 4  # kept: it may be complete
    issue = df.attrs["report"].issues.iloc[0]
    assert (issue["line"], issue["row"], issue["action"]) == (5, 3, "kept")
    assert "does not end with a line break" in caplog.text and "lines 5" in caplog.text


def test_blank_lines_and_incomplete_pairs_are_listed(tmp_path, caplog):
    body = (
        "El a come.,,,Ella a come.,,,gender\n"
        "\n"
        "El b come.,,,,,,gender\n"  # sent_less empty: kept, cannot be scored
        ",,,,,,age\n"  # both original sentences empty: left out of the original variant
        "El c come.,El c par.,,Ella c come.,,,gender\n"  # paraphrase pair incomplete
    )
    path = tmp_path / "pairs.csv"
    path.write_text(ES_HEADER + body, encoding="latin-1")
    with caplog.at_level(logging.WARNING, logger="biaskit.data.datasets"):
        table = ds.load_crows_pairs_es_table(path=path)
    rep = table.attrs["report"]
    got = {
        (int(r.line), r.action, r.column if isinstance(r.column, str) else None)
        for r in rep.issues.itertuples()
    }
    assert got == {
        (3, "ignored", None),
        (4, "kept", "sent_less"),
        (5, "skipped", "sent_more"),
        (6, "kept", "sent_less_par"),
    }
    assert (rep.n_loaded, rep.n_records) == (4, 4)
    assert "blank line (lines 3)" in caplog.text and "incomplete pair" in caplog.text
    orig = ds.load_crows_pairs_es("original", path=path)
    assert list(orig["line"]) == [2, 4, 6]
    orep = orig.attrs["report"]
    assert sorted(int(x) for x in orep.issues["line"]) == [3, 4, 5]
    assert orep.skipped_lines == [5] and orep.skipped_rows == []  # left out: no row in the frame
    par = ds.load_crows_pairs_es("paraphrased", path=path)
    assert list(par["line"]) == [6]
    assert [c if isinstance(c, str) else None for c in par.attrs["report"].issues["column"]] == [
        None,
        "sent_less_par",
    ]
    with pytest.raises(ValueError, match="empty pair"):
        ds.load_crows_pairs_es_table(path=path, errors="raise")


def test_english_direction_values_and_clean_load(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="biaskit.data.datasets"):
        clean = ds.load_crows_pairs_en()
    assert not _warnings(caplog, "biaskit.data.datasets")
    assert clean.attrs["report"].summary().endswith("loaded 1508 of 1508 data records; no problems found.")
    caplog.clear()
    path = tmp_path / "en.csv"
    path.write_text(
        ",sent_more,sent_less,stereo_antistereo,bias_type\n"
        "0,He is bad.,She is bad.,stereo,gender\n"
        "1,He is good.,She is good.,sterreo,gender\n"
        '2,"He is cut,She\n',
        encoding="utf-8",
    )
    with caplog.at_level(logging.WARNING, logger="biaskit.data.datasets"):
        df = ds.load_crows_pairs_en(path=path)
    assert list(df["line"]) == [2, 3]
    got = {(int(r.line), r.action) for r in df.attrs["report"].issues.itertuples()}
    assert got == {(3, "kept"), (4, "skipped")}
    (msg,) = _warnings(caplog, "biaskit.data.datasets")
    assert "loaded 2 of 3 data records" in msg and "stereo_antistereo is not" in msg
    assert "quote opened on line 4 is never closed" in msg
    with pytest.raises(ValueError, match="line 4"):
        ds.load_crows_pairs_en(path=path, errors="raise")


def test_undecodable_csv_names_the_line(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_bytes(b",sent_more,sent_less,stereo_antistereo,bias_type\n0,a,b,stereo,x\n1,\xff,b,stereo,x\n")
    with pytest.raises(ValueError, match=r"byte b'\\xff' on line 3 as 'utf-8'"):
        ds.load_crows_pairs_en(path=path)


# ============================================================================ StereoSet
def _gold(examples):
    return {"version": "test", "data": {"intrasentence": examples, "intersentence": []}}


def test_stereoset_truncated_files_raise_with_position(tmp_path, stereoset_example):
    gz = tmp_path / "dev.json.gz"
    gz.write_bytes(gzip.compress(json.dumps(_gold([stereoset_example(0)])).encode())[:-12])
    with pytest.raises(ValueError, match=r"dev\.json\.gz: truncated or corrupt gzip"):
        ds.load_stereoset(path=gz)
    plain = tmp_path / "dev.json"
    plain.write_text(json.dumps(_gold([stereoset_example(0)]), indent=1)[:-30], encoding="utf-8")
    with pytest.raises(
        ValueError, match=r"dev\.json: not a valid StereoSet JSON file: .* at line \d+, column"
    ):
        ds.load_stereoset(path=plain)
    pred = tmp_path / "pred.json"
    pred.write_text('{"intrasentence": [{"id": "a", "score": 0.5}, {"id"', encoding="utf-8")
    with pytest.raises(ValueError, match=r"pred\.json: not a valid StereoSet predictions JSON file"):
        ds.load_stereoset_predictions(path=pred)


def test_stereoset_malformed_examples_are_reported_and_left_out(tmp_path, caplog, stereoset_example):
    examples = [
        stereoset_example(0),
        stereoset_example(1, context="The man is here."),  # no BLANK
        stereoset_example(2, labels=("stereotype", "stereotype", "unrelated")),  # a repeated gold label
        stereoset_example(0),  # repeated id
    ]
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(_gold(examples)), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="biaskit.data.datasets"):
        gold = ds.load_stereoset(path=path)
    assert len(gold["data"]["intrasentence"]) == 4  # the official JSON is returned as it is
    (msg,) = _warnings(caplog, "biaskit.data.datasets")
    assert "loaded 4 of 4 data records; 3 issue(s)" in msg
    assert "no BLANK in the context" in msg and "gold labels are" in msg and "repeated example id" in msg
    with pytest.raises(ValueError, match="no BLANK"):
        ds.load_stereoset(path=path, errors="raise")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="biaskit.data.datasets"):
        opts = ds.stereoset_intrasentence(gold)
    assert set(opts["example_id"]) == {"ex0"} and len(opts) == 3
    rep = opts.attrs["report"]
    assert rep.issues["row"].tolist() == [1, 2, 3] and (rep.n_loaded, rep.n_records) == (1, 4)
    assert rep.issues["text"].tolist() == ["ex1", "ex2", "ex0"]
    assert _warnings(caplog, "biaskit.data.datasets")
    with pytest.raises(ValueError, match="repeated example id"):
        ds.stereoset_intrasentence(gold, errors="raise")


def test_stereoset_bad_prediction_records(tmp_path, caplog):
    preds = {
        "intrasentence": [
            {"id": "s00", "score": 0.5},
            {"id": "s01", "score": float("nan")},
            {"score": 0.1},
            {"id": "s02", "score": "high"},
            {"id": "s00", "score": 0.7},
        ]
    }
    path = tmp_path / "p.json"
    path.write_text(json.dumps(preds), encoding="utf-8")  # NaN is written as the token NaN
    with caplog.at_level(logging.WARNING, logger="biaskit.data.datasets"):
        clean = ds.load_stereoset_predictions(path=path)
    assert clean == {"intrasentence": [{"id": "s00", "score": 0.5}, {"id": "s00", "score": 0.7}]}
    (msg,) = _warnings(caplog, "biaskit.data.datasets")
    assert "loaded 2 of 5 data records; 4 issue(s)" in msg
    assert "'score' is nan" in msg and "no string 'id'" in msg and "'high', not a number" in msg
    assert "repeated prediction id (also at intrasentence[0])" in msg
    with pytest.raises(ValueError, match="'score' is nan"):
        ds.load_stereoset_predictions(path=path, errors="raise")
    with pytest.raises(ValueError, match="official format"):
        ds.validate_stereoset_predictions({"intrasentence": {"id": "x"}})


def test_scorer_reports_nan_scores_as_missing_and_unmatched_ids(caplog, stereoset_example):
    gold = _gold([stereoset_example(0), stereoset_example(1)])
    preds = {
        "intrasentence": [
            {"id": "s00", "score": 0.9},
            {"id": "s01", "score": 0.1},
            {"id": "s02", "score": 0.0},
            {"id": "s10", "score": 0.9},
            {"id": "s11", "score": float("nan")},  # formerly compared as False: silently "anti"
            {"id": "s12", "score": 0.0},
            {"id": "zz", "score": 0.3},  # matches no gold sentence
        ]
    }
    with pytest.raises(
        ValueError, match=r"1 of 2 intrasentence examples have no prediction[\s\S]*anti-stereotype"
    ):
        st.example_table(preds, gold)
    with caplog.at_level(logging.WARNING):
        tab = st.example_table(preds, gold, missing="drop")
    assert tab["example_id"].tolist() == ["ex0"] and tab.attrs["missing"] == ["ex1"]
    rep = tab.attrs["report"]
    assert rep.issues["reason"].tolist() == ["no prediction for the anti-stereotype option"]
    assert "1 of 6 prediction ids match no sentence" in caplog.text and "'zz'" in caplog.text
    assert "'score' is nan" in caplog.text


def test_scorer_reports_malformed_gold_examples(stereoset_example):
    gold = _gold(
        [stereoset_example(0), stereoset_example(1, labels=("stereotype", "unrelated", "unrelated"))]
    )
    preds = {"intrasentence": [{"id": f"s{i}{k}", "score": 0.5} for i in range(2) for k in range(3)]}
    with pytest.raises(ValueError, match="1 of 2 intrasentence examples are malformed in the gold data"):
        st.stereoset_scores(preds, gold, splits=("intrasentence",))
    tab = st.example_table(preds, gold, missing="drop")
    assert tab.attrs["missing"] == ["ex1"]
    assert "gold labels are" in tab.attrs["report"].issues["reason"].iloc[0]


# ============================================================================ word vectors
@pytest.mark.parametrize(
    ("content", "pattern"),
    [
        ("3 abc\nx 1 2 3\n", r"line 1, field 2: 'abc' is not a number; expected a header 'N D' \(word2vec\)"),
        ("abc 3\nx 1 2 3\n", r"line 1, field 1: 'abc' is not a number"),
        ("3 2.5\nx 1 2\n", r"line 1, field 2: '2\.5' is not a whole number"),
        (
            "hello 0.1 abc 0.3\n",
            r"line 1, field 3: 'abc' is not a number; .*'word v1 \.\.\. vD' \(GloVe/fastText\)",
        ),
        ("hello\n", r"line 1 has a single field"),
    ],
)
def test_bad_first_line_names_file_line_and_field(tmp_path, content, pattern):
    path = tmp_path / "vectors.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=r"vectors\.txt: cannot recognise the vector format: " + pattern):
        detect_format(path)


def test_malformed_vector_lines_raise_or_are_skipped_with_a_warning(tmp_path, caplog):
    path = tmp_path / "v.txt"
    path.write_text(
        "a 1 2 3\n"
        "b 1 2\n"  # wrong dimension
        "c 1 x 3\n"  # not a number
        "d 1 inf 3\n"  # inf
        " 1 2 3\n"  # empty word
        "e 4 5 6\n"
        "a 7 8 9\n",  # duplicate
        encoding="utf-8",
    )
    with pytest.raises(
        ValueError, match=r"v\.txt, line 2: expected the word followed by 3 numbers \(line 1\)"
    ):
        load_vectors(path, format="glove")
    with caplog.at_level(logging.WARNING, logger="biaskit.embeddings.vectors"):
        kv = load_vectors(path, format="glove", errors="report")
    assert kv.index_to_key == ["a", "e"]
    np.testing.assert_array_equal(kv["a"], [1, 2, 3])
    msgs = _warnings(caplog, "biaskit.embeddings.vectors")
    assert len(msgs) == 2
    assert "skipped 4 malformed line(s)" in msgs[0]
    for piece in (
        "line 2:",
        "line 3, field 3 (vector of 'c'): 'x' is not a number",
        "line 4, field 3",
        "line 5:",
    ):
        assert piece in msgs[0]
    assert "1 duplicate word(s)" in msgs[1] and "'a' line 7 (first on line 1)" in msgs[1]
    with pytest.raises(ValueError, match="errors must be"):
        load_vectors(path, format="glove", errors="ignore")  # type: ignore[arg-type]


def test_word2vec_header_count_mismatch_raises_or_warns(tmp_path, caplog):
    path = tmp_path / "w.vec"
    path.write_text("4 2\na 1 2\nb 1\nc 3 4\n", encoding="utf-8")  # a short line and one vector missing
    with pytest.raises(ValueError, match=r"w\.vec, line 3: expected the word followed by 2 numbers"):
        load_vectors(path)
    with caplog.at_level(logging.WARNING, logger="biaskit.embeddings.vectors"):
        kv = load_vectors(path, errors="report")
    assert kv.index_to_key == ["a", "c"]
    assert "header declares 4 vectors but the file holds 3" in caplog.text and "line 3" in caplog.text


# ============================================================================ word lists
def test_seed_group_repairs_are_warnings():
    # the thesis's file has ' cohete' (leading space) and repeated seeds
    logger = logging.getLogger("biaskit.data.wordlists")
    records: list[logging.LogRecord] = []
    handler = logging.Handler(level=logging.WARNING)
    handler.emit = records.append  # type: ignore[method-assign]
    logger.addHandler(handler)
    try:
        groups = wl.load_seed_groups()
    finally:
        logger.removeHandler(handler)
    text = "\n".join(r.getMessage() for r in records)
    assert "cohete" in groups["terrorism"] and " cohete" not in groups["terrorism"]
    assert "stripped surrounding whitespace from 6 entr(y/ies)" in text and "' cohete'" in text
    assert "seed group 'unpleasant': removed 2 duplicate entries" in text and "accidente" in text


def test_wordlist_file_problems_are_named(tmp_path, caplog):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"g": ["a", 5, None], "h": "x"}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"group 'g', entry 1: 5 is not a string; group 'g', entry 2: None"):
        wl.load_wordlist_file(bad)
    dup = tmp_path / "dup.json"
    dup.write_text('{"g": ["a"], "g": ["b"]}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"dup\.json: repeated key\(s\) \['g'\]"):
        wl.load_wordlist_file(dup)
    latin = tmp_path / "latin.json"
    latin.write_bytes('{"g": ["a"],\n "h": ["niño"]}'.encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin\.json: not UTF-8 text .* on line 2"):
        wl.load_wordlist_file(latin)
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"g": ["a"], "h": []}), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="biaskit.data.wordlists"):
        assert wl.load_wordlist_file(empty) == {"g": ["a"], "h": []}
    assert "1 empty group(s): 'h'" in caplog.text


# ============================================================================ corpora
def test_read_lines_reports_blank_and_damaged_lines(tmp_path, caplog):
    f = tmp_path / "c.txt"
    f.write_text("Primera.\n\n   \nSegunda ma\ufffdana.\nTercera.\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="biaskit.data.corpus"):
        lines = C.read_lines(f)
    assert lines == ["Primera.", "Segunda ma\ufffdana.", "Tercera."]
    assert "skipped 2 blank line(s) (lines 2, 3)" in caplog.text
    assert "1 line(s) hold U+FFFD" in caplog.text and "(lines 4)" in caplog.text
    caplog.clear()
    ok = tmp_path / "ok.txt"
    ok.write_text("Una.\nDos.\n", encoding="utf-8")  # the final line break is not a blank line
    with caplog.at_level(logging.WARNING, logger="biaskit.data.corpus"):
        assert C.read_lines(ok) == ["Una.", "Dos."]
    assert not caplog.records
    moji = tmp_path / "m.txt"
    moji.write_text("bien\nla niÃ±a\notra\nel camiÃ³n\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"2 line\(s\) contain mojibake .*lines 2, 4"):
        C.read_lines(moji)


def test_truncated_gzip_corpus_raises(tmp_path):
    f = tmp_path / "c.txt.gz"
    f.write_bytes(gzip.compress(("Una frase larga. " * 200).encode())[:-20])
    with pytest.raises(ValueError, match=r"c\.txt\.gz: truncated or corrupt gzip"):
        C.read_lines(f)


def test_corpus_folder_and_empty_sentences_are_reported(tmp_path, caplog):
    (tmp_path / "a.txt").write_text("El gato come pescado.\nY de la que.\n", encoding="utf-8")
    (tmp_path / "notes.csv").write_text("x\n", encoding="utf-8")
    (tmp_path / "b.txt.bz2").write_bytes(b"BZh")
    with caplog.at_level(logging.WARNING, logger="biaskit.data.corpus"):
        sents = C.load_corpus(tmp_path, cache=False)
    assert sents == [["gato", "come", "pescado"]]
    assert "2 other entr(y/ies) not read: ['b.txt.bz2', 'notes.csv']" in caplog.text
    assert "dropped 1 of 2 sentences with no token left" in caplog.text and "Y de la que." in caplog.text


# ============================================================================ checksum lists
def test_sha256sums_conflicts_and_bad_digests(tmp_path, caplog):
    a, b = "a" * 64, "b" * 64
    f = tmp_path / "SHA256SUMS"
    f.write_text(f"{a}  x.zip\n{a}  x.zip\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="biaskit.data.downloads"):
        assert read_sha256sums(f) == {"x.zip": a}
    assert "'x.zip' is listed twice (also line 1" in caplog.text
    f.write_text(f"{a}  x.zip\n\n{b}  x.zip\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"SHA256SUMS:3: 'x.zip' is listed again .* line 1 says"):
        read_sha256sums(f)
    f.write_text(f"{'g' * 64}  x.zip\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"SHA256SUMS:1: malformed line"):
        read_sha256sums(f)


def test_csv_header_problems_raise(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text(ES_HEADER.replace("sent_less,", "sent_more,") + "a,,,b,,,c\n", encoding="latin-1")
    with pytest.raises(ValueError, match=r"column\(s\) \['sent_less'\] missing; header \(line 1\)"):
        ds.load_crows_pairs_es_table(path=path)
    path.write_text(ES_HEADER.rstrip("\n") + ",sent_more\na,,,b,,,c,d\n", encoding="latin-1")
    with pytest.raises(ValueError, match=r"column\(s\) \['sent_more'\] appear twice in the header"):
        ds.load_crows_pairs_es_table(path=path)
    path.write_bytes(b"")
    with pytest.raises(ValueError, match="the file is empty"):
        ds.load_crows_pairs_es_table(path=path)


def test_cached_corpus_repeats_the_warnings_of_its_build(tmp_path, caplog, monkeypatch):
    monkeypatch.setenv("BIASKIT_CACHE_DIR", str(tmp_path / "cache"))
    f = tmp_path / "built.txt"
    f.write_text("El gato come.\n\nY de la que.\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="biaskit.data.corpus"):
        first = C.load_corpus(f)
    built = _warnings(caplog, "biaskit.data.corpus")
    assert len(built) == 2 and "blank line(s) (lines 2)" in built[0] and "dropped 1 of 2" in built[1]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="biaskit.data.corpus"):
        assert C.load_corpus(f) == first == [["gato", "come"]]
    again = _warnings(caplog, "biaskit.data.corpus")
    assert [m.split(" [found when")[0] for m in again] == built
    assert all("[found when the cached corpus built.txt-" in m for m in again)


def test_unscored_options_are_named_when_building_predictions(caplog):
    import pandas as pd

    opts = pd.DataFrame({"sentence_id": ["a", "b", "c"], "prob": [0.2, float("nan"), 0.5]})
    with caplog.at_level(logging.WARNING, logger="biaskit.metrics.stereoset"):
        preds = st.predictions_from_option_scores(opts)
    assert preds == {"intrasentence": [{"id": "a", "score": 0.2}, {"id": "c", "score": 0.5}]}
    assert "1 of 3 options have no 'prob' score" in caplog.text and "['b']" in caplog.text
