"""Every hint an error message gives works when followed.

Each case writes a bad file under ``tmp_path`` (or builds a degenerate table), checks that the error
names the file (and the line where there is one), then does what the message says, taken from the
message itself (the header it proposes, the ``encoding=`` it names, the Python it spells out), and
checks that the result is right against values written by the test, not read back from biaskit.
"""

from __future__ import annotations

import ast
import logging
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from biaskit.core.io import decode_text, read_csv_lines, wide_text_encoding
from biaskit.core.registry import REGISTRY, GridSupport, register_metric
from biaskit.data import datasets as ds
from biaskit.data import wordlists as wl
from biaskit.embeddings.vectors import FASTTEXT_MAGIC, detect_format, from_dict, load_vectors, save_vectors
from biaskit.metrics.seat import load_weat_words
from biaskit.metrics.sentence_pairs import asld_table
from biaskit.studies.grid_config import grid_metrics, load_config

ROWS = {"man": [0.1, 0.2, 0.3], "woman": [0.4, 0.5, 0.6]}
BODY = "".join(f"{w} {' '.join(map(str, v))}\n" for w, v in ROWS.items())


def _error(call, *args, **kwargs) -> str:
    with pytest.raises(ValueError) as info:
        call(*args, **kwargs)
    return str(info.value)


def _assert_rows(kv) -> None:
    assert kv.index_to_key == list(ROWS)
    for w, v in ROWS.items():
        np.testing.assert_allclose(kv[w], v, rtol=0, atol=1e-7)


def _proposed_header(msg: str) -> str:
    m = re.search(r"line 1 should read '(\d+ \d+)'|to the header '(\d+ \d+)'|would read '(\d+ \d+)'", msg)
    assert m, msg
    return next(g for g in m.groups() if g)


def _replace_line_1(path: Path, new: str | None) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text(("" if new is None else new + "\n") + "".join(lines[1:]), encoding="utf-8")


def _run_python_hint(msg: str, **names: object) -> None:
    """Run the Python the message spells out (after 'in Python: ' / 'for its path p: ')."""
    code = r"(p = Path\(.*?\); )?(p\.write_text\(p\.read_text\(encoding='[\w-]+'\), encoding='utf-8'\))"
    m = re.search(r"(?:in Python: |in Python, for its path p: )" + code, msg)
    assert m, msg
    exec((m.group(1) or "") + m.group(2), {"Path": Path, **names})


# ================================================================== word vectors: headers
@pytest.mark.parametrize("declared_dim", [2, 4, 1])
def test_header_with_another_dimension_than_the_rows_is_text_never_binary(tmp_path, declared_dim):
    path = tmp_path / "v.txt"
    path.write_text(f"2 {declared_dim}\n" + BODY, encoding="utf-8")
    assert detect_format(path) == "word2vec"  # was 'word2vec-binary': keys 'man', '0.2', values 1e-19
    for fmt in ("auto", "word2vec", "fasttext"):
        msg = _error(load_vectors, path, fmt)
        assert msg.startswith(f"{path}, line 2: expected the word followed by {declared_dim} numbers")
        assert "the header on line 1" in msg and "found 3 fields after 'man'" in msg
    assert _proposed_header(msg) == "2 3"
    _replace_line_1(path, _proposed_header(msg))
    _assert_rows(load_vectors(path))


def test_header_file_read_as_glove_is_sent_to_word2vec_then_to_the_right_header(tmp_path):
    path = tmp_path / "v.txt"
    path.write_text("2 2\n" + BODY, encoding="utf-8")
    msg = _error(load_vectors, path, "glove")
    assert msg.startswith(f"{path}, line 2:") and "pass format='word2vec'" in msg
    msg = _error(load_vectors, path, "word2vec")  # the hint, followed: the next step names the header
    _replace_line_1(path, _proposed_header(msg))
    _assert_rows(load_vectors(path, "word2vec"))


def test_header_with_the_wrong_count_proposes_the_count_found(tmp_path):
    path = tmp_path / "v.txt"
    path.write_text("5 3\n" + BODY, encoding="utf-8")
    msg = _error(load_vectors, path)
    assert f"{path}: the header declares 5 vectors but the file holds 2 (ends at line 3)" in msg
    _replace_line_1(path, _proposed_header(msg))
    _assert_rows(load_vectors(path))


@pytest.mark.parametrize("first", ["2 x", "2 3.0", "x 3", "2 3 4", "vectors"])
def test_broken_header_names_line_1_and_both_fixes_work(tmp_path, first):
    path = tmp_path / "v.txt"
    path.write_text(f"{first}\n" + BODY, encoding="utf-8")
    msgs = [_error(load_vectors, path, "word2vec")]
    if first != "2 3 4":  # '2 3 4' is a valid GloVe row: auto reads it so and line 2 is at fault
        msgs.append(_error(load_vectors, path))
        assert msgs[-1].startswith(f"{path}: cannot recognise the vector format: line 1")
    for msg in msgs:
        assert "format= one of" not in msg  # the old hint: every format it listed was refused
        assert _proposed_header(msg) == "2 3" and "or delete line 1" in msg
    _replace_line_1(path, "2 3")
    _assert_rows(load_vectors(path))
    path.write_text(f"{first}\n" + BODY, encoding="utf-8")
    _replace_line_1(path, None)  # the other fix: delete line 1 (GloVe)
    assert detect_format(path) == "glove"
    _assert_rows(load_vectors(path))


def test_glove_row_of_numbers_on_line_1_is_named_as_a_broken_header(tmp_path):
    path = tmp_path / "v.txt"
    path.write_text("2 3 4\n" + BODY, encoding="utf-8")
    msg = _error(load_vectors, path)
    assert msg.startswith(f"{path}, line 2:") and "may be a broken word2vec header" in msg
    _replace_line_1(path, _proposed_header(msg))
    _assert_rows(load_vectors(path))


def test_glove_file_with_a_bad_first_row_loads_the_rest_as_told(tmp_path, caplog):
    path = tmp_path / "v.txt"
    path.write_text("the 0.1 abc 0.3\n" + BODY, encoding="utf-8")
    msg = _error(load_vectors, path)
    assert msg.startswith(f"{path}: cannot recognise the vector format: line 1, field 3: 'abc'")
    assert "pass format='glove', errors='report'" in msg
    with caplog.at_level(logging.WARNING, logger="biaskit.embeddings.vectors"):
        kv = load_vectors(path, format="glove", errors="report")
    _assert_rows(kv)
    assert "line 1, field 3 (vector of 'the'): 'abc' is not a number" in caplog.text


def test_text_given_as_binary_is_refused_with_a_format_that_loads(tmp_path):
    path = tmp_path / "v.bin"
    path.write_text("2 3\n" + BODY, encoding="utf-8")
    msg = _error(load_vectors, path, "word2vec-binary")
    fmt = re.search(r"pass format='([\w-]+)'", msg).group(1)
    _assert_rows(load_vectors(path, fmt))


def test_damaged_binary_names_its_header_and_suggests_no_refused_format(tmp_path):
    kv = from_dict(ROWS)
    good = save_vectors(kv, tmp_path / "v.bin")
    path = tmp_path / "cut.bin"
    path.write_bytes(good.read_bytes()[:-5])
    assert detect_format(path) == "word2vec-binary"
    msg = _error(load_vectors, path)
    assert msg.startswith(f"{path}: not a valid word2vec binary file")
    assert "declares 2 vectors of dimension 3" in msg and "12 bytes" in msg and "truncated" in msg
    assert "format=" not in msg.split(")", 1)[1]  # no format hint: word2vec text would be refused


def test_small_binary_without_control_bytes_is_binary(tmp_path):
    # float32 b'AAAA' = 12.078431..., b'BBBB' = 48.564705...: raw bytes that look like printable text
    v = np.frombuffer(b"AAAABBBB", dtype=np.float32)
    path = save_vectors(from_dict({"a": v, "b": v[::-1]}), tmp_path / "v.bin")
    assert detect_format(path) == "word2vec-binary"
    got = load_vectors(path)
    np.testing.assert_array_equal(got["a"], v)
    np.testing.assert_array_equal(got["b"], v[::-1])


def test_broken_fasttext_model_is_called_damaged_not_word2vec(tmp_path):
    path = tmp_path / "m.bin"
    path.write_bytes(FASTTEXT_MAGIC + b"\x0c\x00\x00\x00" + b"\x01" * 20)
    msg = _error(load_vectors, path)
    assert msg.startswith(f"{path}: not a valid fastText .bin model") and "truncated or damaged" in msg
    assert "word2vec-binary" not in msg


# ================================================================== word vectors: encodings
def test_utf8_byte_order_mark_is_not_part_of_the_first_word(tmp_path):
    for name, text in (("g.txt", BODY), ("w.txt", "2 3\n" + BODY)):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8-sig")
        _assert_rows(load_vectors(path))


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-32"])
def test_utf16_vector_file_is_named_and_the_conversion_given_works(tmp_path, codec):
    path = tmp_path / "v.txt"
    path.write_text("2 3\n" + BODY, encoding=codec)
    for fmt in ("auto", "word2vec", "glove"):
        msg = _error(load_vectors, path, fmt)
        assert msg.startswith(f"{path}: the file is {codec.upper()} text")
    msg = _error(load_vectors, path, encoding=codec)  # the loader splits lines on the byte '\n'
    assert msg.startswith(f"{path}: the file is {codec.upper()} text") and "convert it" in msg
    _run_python_hint(msg)
    _assert_rows(load_vectors(path))


def test_undecodable_vector_line_names_an_encoding_that_reads_it(tmp_path):
    path = tmp_path / "v.txt"
    path.write_bytes(b"man 0.1 0.2 0.3\nni\xf1o 0.4 0.5 0.6\n")
    msg = _error(load_vectors, path)
    assert msg.startswith(f"{path}, line 2: not valid utf-8 text") and "b'\\xf1'" in msg
    assert "format='word2vec-binary'" not in msg  # the old hint: refused for a text file
    enc = re.search(r"pass encoding='([\w-]+)'", msg).group(1)
    kv = load_vectors(path, encoding=enc)
    assert kv.index_to_key == ["man", "niño"]
    np.testing.assert_allclose(kv["niño"], [0.4, 0.5, 0.6], atol=1e-7)


# ================================================================== CrowS-Pairs
EN_HEADER = ",sent_more,sent_less,stereo_antistereo,bias_type\n"
EN_ROW = "0,He is “bad”.,She is “bad”.,stereo,gender\n"


@pytest.mark.parametrize(
    ("codec", "named"), [("utf-16", "UTF-16"), ("utf-16-le", "UTF-16-LE"), ("utf-16-be", "UTF-16-BE")]
)
def test_crows_en_utf16_is_named_and_the_encoding_given_loads_it(tmp_path, codec, named):
    path = tmp_path / "crows.csv"
    path.write_text(EN_HEADER + EN_ROW, encoding=codec)
    msg = _error(ds.load_crows_pairs_en, path=path)
    assert f"({path})" in msg and f"the file is {named} text" in msg
    enc = re.search(r"pass encoding='([\w-]+)'", msg).group(1)
    df = ds.load_crows_pairs_en(path=path, encoding=enc)
    assert df["sent_more"].tolist() == ["He is “bad”."] and df["sent_less"].tolist() == ["She is “bad”."]


def test_crows_en_windows_bytes_name_the_line_and_the_encoding_given_loads_them(tmp_path):
    path = tmp_path / "crows.csv"
    path.write_bytes((EN_HEADER + "0,He is good.,She is good.,stereo,gender\n" + EN_ROW).encode("cp1252"))
    msg = _error(ds.load_crows_pairs_en, path=path)
    assert f"({path})" in msg and "cannot decode byte b'\\x93' on line 3 as 'utf-8'" in msg
    enc = re.search(r"pass encoding='([\w-]+)'", msg).group(1)
    df = ds.load_crows_pairs_en(path=path, encoding=enc)
    assert df["sent_more"].tolist() == ["He is good.", "He is “bad”."]
    assert df["line"].tolist() == [2, 3]


def test_crows_es_utf16_is_named_and_the_encoding_given_loads_it(tmp_path):
    path = tmp_path / "es.csv"
    header = ",sent_more,sent_more_par,sent_more_ran,sent_less,sent_less_par,sent_less_ran,bias_type\n"
    path.write_text(header + "0,Él es malo.,,,Ella es mala.,,,gender\n", encoding="utf-16")
    msg = _error(ds.load_crows_pairs_es_table, path=path)  # latin-1 would decode it as NUL-riddled text
    assert f"({path})" in msg and "the file is UTF-16 text" in msg and "not 'latin-1'" in msg
    enc = re.search(r"pass encoding='([\w-]+)'", msg).group(1)
    df = ds.load_crows_pairs_es(path=path, encoding=enc)
    assert df["sent_more"].tolist() == ["Él es malo."] and df["sent_less"].tolist() == ["Ella es mala."]


# ================================================================== word lists and WEAT files
WEAT = "# Target: a\nman, boy\nwoman, girl\n# Attribute: c\nniño, child\nfire, water\n"


def test_weat_words_not_utf8_names_file_line_and_the_encoding_given_loads_it(tmp_path):
    path = tmp_path / "weat.txt"
    path.write_bytes(WEAT.encode("latin-1"))
    msg = _error(load_weat_words, path)  # was a bare UnicodeDecodeError without the file
    assert msg.startswith(f"{path}: cannot decode byte b'\\xf1' on line 5 as 'utf-8'")
    enc = re.search(r"pass encoding='([\w-]+)'", msg).group(1)
    q = load_weat_words(path, encoding=enc)
    assert q.A == ("niño", "child") and q.X == ("man", "boy")


def test_weat_words_utf16(tmp_path):
    path = tmp_path / "weat.txt"
    path.write_text(WEAT, encoding="utf-16")
    msg = _error(load_weat_words, path)
    assert msg.startswith(f"{path}: the file is UTF-16 text")
    enc = re.search(r"pass encoding='([\w-]+)'", msg).group(1)
    assert load_weat_words(path, encoding=enc).A == ("niño", "child")


def test_wordlist_json_utf16_is_named_and_the_conversion_given_works(tmp_path):
    path = tmp_path / "groups.json"
    path.write_text('{"g": ["niño", "niña"]}', encoding="utf-16")
    msg = _error(wl.load_wordlist_file, path)
    assert msg.startswith(f"{path}: the file is UTF-16 text")
    _run_python_hint(msg, p=path)
    assert wl.load_wordlist_file(path) == {"g": ["niño", "niña"]}


def test_csv_reader_default_fix_converts_the_file(tmp_path):
    """Loaders without an ``encoding=`` parameter (Barza, the replays, Sayenju's tables) get the
    conversion to UTF-8 spelled out, never a parameter they do not have."""
    path = tmp_path / "t.csv"
    path.write_bytes("a,b\ncafé,1\n".encode("cp1252"))
    with pytest.raises(ValueError) as info:
        read_csv_lines(path.read_bytes(), "utf-8", str(path))
    msg = str(info.value)
    assert msg.startswith(f"{path}: cannot decode byte b'\\xe9' on line 2") and "pass encoding" not in msg
    _run_python_hint(msg, p=path)
    assert read_csv_lines(path.read_bytes(), "utf-8", str(path)).rows == [(2, ["café", "1"])]


def test_wide_text_encoding_does_not_fire_on_plain_or_binary_bytes(tmp_path):
    assert wide_text_encoding("plain text, niño\n".encode()) is None
    assert wide_text_encoding(save_vectors(from_dict(ROWS), tmp_path / "v.bin").read_bytes()) is None
    assert wide_text_encoding("abc\n".encode("utf-16-le")) == (
        "utf-16-le",
        "a NUL byte after every character",
    )
    assert decode_text("\ufeffabc".encode(), "utf-8", "ctx") == "abc"


# ================================================================== the grid's metrics
def test_grid_names_a_registered_metric_without_grid_support_and_lists_those_with(tmp_path):
    base = {"models": ["tiny"], "datasets": ["may2019:weat7"]}
    no_grid = next(
        m.name for m in REGISTRY.values() if m.grid is None
    )  # `python -m biaskit metrics` lists it
    msg = _error(load_config, {**base, "metrics": [no_grid]})
    assert f"[{no_grid!r}] are registered but have no grid support" in msg and "unknown" not in msg
    listed = re.search(r"the metrics with grid support are (\[.*\])", msg).group(1)
    assert set(ast.literal_eval(listed)) == {m.name for m in REGISTRY.with_grid()} == set(grid_metrics())
    assert load_config({**base, "metrics": ast.literal_eval(listed)[:1]}).metrics == tuple(
        ast.literal_eval(listed)[:1]
    )
    msg = _error(load_config, {**base, "metrics": ["weet"]})
    assert "unknown metric(s) ['weet'] (did you mean weat" in msg  # and the other near names


def test_grid_metric_list_is_read_from_the_registry():
    register_metric(
        "hint_probe",
        label="probe",
        family="word vectors",
        inputs=("word sets",),
        model_kinds=("static",),
        directional=False,
        test="none",
        citation="none",
        section="none",
        entry_point=asld_table,
        grid=GridSupport("words", lambda call: []),
    )
    try:
        no_grid = next(m.name for m in REGISTRY.values() if m.grid is None)
        msg = _error(load_config, {"models": ["tiny"], "datasets": ["may2019:weat7"], "metrics": [no_grid]})
        assert "'hint_probe'" in msg.split("the metrics with grid support are")[1]
    finally:
        REGISTRY.remove("hint_probe")


# ================================================================== ASLD table
def test_asld_table_of_no_pairs_raises():
    msg = _error(asld_table, pd.DataFrame({"category": [], "sld": []}))
    assert "no pairs (0 rows)" in msg


@pytest.mark.parametrize("bad", [np.nan, np.inf, None])
def test_asld_table_non_finite_rows_are_named_and_the_filter_given_works(bad):
    scored = pd.DataFrame(
        {"category": ["a", "a", "b", "b"], "sld": [1.0, bad, 3.0, 5.0]}, index=[10, 11, 12, 13]
    )
    msg = _error(asld_table, scored)
    assert "'sld' is not a finite number in 1 of 4 rows (index 11)" in msg
    kept = eval(msg.split("if that is meant: ")[1], {"np": np, "scored": scored})
    t = asld_table(kept).set_index("category")
    assert t.loc["a", "asld"] == pytest.approx(1.0) and t.loc["b", "asld"] == pytest.approx(4.0)
    assert t.loc["combined", "asld"] == pytest.approx((1 + 3 + 5) / 3)


def test_asld_table_missing_category_is_named_and_the_filter_given_works():
    scored = pd.DataFrame({"category": ["a", None, "b"], "sld": [1.0, 2.0, 4.0]})
    msg = _error(asld_table, scored)
    assert "'category' is missing in 1 of 3 rows (index 1)" in msg
    kept = eval(msg.split("if that is meant: ")[1], {"np": np, "scored": scored})
    t = asld_table(kept).set_index("category")
    assert t.loc["combined", "asld"] == pytest.approx(2.5) and t.loc["combined", "n_pairs"] == 2
