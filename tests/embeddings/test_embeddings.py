"""Tests for biaskit.embeddings.vectors: loaders in every format, malformed files, reference vectors,
word2vec, OOV."""

from __future__ import annotations

import gzip
import logging

import numpy as np
import pytest

from biaskit.data.wordlists import OOVError
from biaskit.embeddings import vectors as emb
from biaskit.embeddings.vectors import (
    detect_format,
    from_dict,
    load_reference_vectors,
    load_vectors,
    save_vectors,
    train_word2vec,
    word_matrix,
)


@pytest.fixture()
def tiny():
    rng = np.random.default_rng(1)
    words = ["casa", "niño", "ñandú", "él", "x_y", "word2"]
    return from_dict({w: rng.standard_normal(7) for w in words})


def _assert_same(a, b):
    assert a.index_to_key == b.index_to_key
    assert all(type(k) is str for k in b.index_to_key)
    np.testing.assert_array_equal(a.vectors, b.vectors)


# ----------------------------------------------------------------------------- round trips
@pytest.mark.parametrize(
    ("name", "fmt", "expected_detected"),
    [
        ("v.kv", "auto", "kv"),
        ("v.bin", "auto", "word2vec-binary"),
        ("v.vec", "auto", "fasttext"),
        ("v.txt", "auto", "glove"),
        ("w2v.txt", "word2vec", "word2vec"),  # header, non-.vec extension: detected from the first line
        ("w2vbin.dat", "word2vec-binary", "word2vec-binary"),  # binary, no extension hint
    ],
)
def test_round_trip_every_format(tmp_path, tiny, name, fmt, expected_detected):
    path = save_vectors(tiny, tmp_path / name, format=fmt)
    assert detect_format(path) == expected_detected
    _assert_same(tiny, load_vectors(path))
    _assert_same(tiny, load_vectors(path, format=expected_detected))


@pytest.mark.parametrize("name", ["v.txt", "v.vec", "v.bin"])
def test_gzip_round_trip(tmp_path, tiny, name):
    plain = save_vectors(tiny, tmp_path / name)
    gz = tmp_path / (name + ".gz")
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    _assert_same(tiny, load_vectors(gz))


def test_limit_keeps_first_words(tmp_path, tiny):
    for name in ("v.txt", "v.vec", "v.bin", "v.kv"):
        kv = load_vectors(save_vectors(tiny, tmp_path / name), limit=3)
        assert kv.index_to_key == tiny.index_to_key[:3]
        np.testing.assert_array_equal(kv.vectors, tiny.vectors[:3])


def test_saved_full_word2vec_model_gives_its_vectors(tmp_path):
    from gensim.models import Word2Vec

    model = Word2Vec([["a", "b", "c"]] * 5, vector_size=4, min_count=1, workers=1, seed=0)
    model.save(str(tmp_path / "m.model"))
    kv = load_vectors(tmp_path / "m.model")
    np.testing.assert_array_equal(kv["a"], model.wv["a"])


# ----------------------------------------------------------------------------- malformed files
def test_missing_file_says_how_to_get_vectors(tmp_path):
    with pytest.raises(FileNotFoundError, match="dccuchile/spanish-word-embeddings"):
        load_vectors(tmp_path / "nope.vec")


@pytest.mark.parametrize(
    ("content", "fmt", "pattern"),
    [
        ("a 1 2 3\nb 1 2\nc 1 2 3\n", "glove", r"line 2: expected the word followed by 3 numbers"),
        (
            "3 2\na 1 2\nb 1 2\nc 1 oops\n",
            "word2vec",
            r"line 4, field 3 \(vector of 'c'\): 'oops' is not a number",
        ),
        ("5 2\na 1 2\nb 1 2\n", "word2vec", r"declares 5 vectors but the file holds 2"),
        (
            "a 1 2\nb 1 2\n",
            "word2vec",
            r"line 1: expected a header .*'a 1 2': it has 3 fields, a header has 2",
        ),
        ("2 2\na 1 nan\nb 1 2\n", "fasttext", r"line 2, field 3: the vector of 'a' has inf/nan"),
    ],
)
def test_malformed_text_reports_line(tmp_path, content, fmt, pattern):
    path = tmp_path / "bad.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=pattern):
        load_vectors(path, format=fmt)


def test_invalid_utf8_reports_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"a 1 2\nb 1 2\n\xff\xfe 1 2\n")
    with pytest.raises(ValueError, match=r"line 3: not valid utf-8"):
        load_vectors(path, format="glove")
    kv = load_vectors(path, format="glove", unicode_errors="replace")
    assert len(kv) == 3


def test_empty_and_unrecognised_files(tmp_path):
    empty = tmp_path / "e.dat"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="empty"):
        load_vectors(empty)
    junk = tmp_path / "j.dat"
    junk.write_text("hello world\nthis is prose\n")
    with pytest.raises(ValueError, match="cannot recognise the vector format"):
        load_vectors(junk)
    with pytest.raises(ValueError, match="format must be one of"):
        load_vectors(junk, format="csv")  # type: ignore[arg-type]


def test_broken_binary_and_kv(tmp_path):
    trunc = tmp_path / "t.bin"
    trunc.write_bytes(b"3 4\nabc " + b"\x00" * 5)
    with pytest.raises(ValueError, match="not a valid word2vec binary file"):
        load_vectors(trunc)
    badkv = tmp_path / "x.kv"
    badkv.write_bytes(b"not a pickle")
    with pytest.raises(ValueError, match="not a gensim KeyedVectors"):
        load_vectors(badkv)


def test_duplicates_and_blank_lines_are_logged(tmp_path, caplog):
    path = tmp_path / "d.txt"
    path.write_text("a 1 2\n\nb 3 4\na 5 6\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="biaskit.embeddings.vectors"):
        kv = load_vectors(path, format="glove")
    assert kv.index_to_key == ["a", "b"]
    np.testing.assert_array_equal(kv["a"], [1, 2])  # first occurrence kept
    assert "duplicate" in caplog.text and "blank line" in caplog.text


# ----------------------------------------------------------------------------- from_dict / word_matrix
def test_from_dict_validates():
    with pytest.raises(ValueError, match="different lengths"):
        from_dict({"a": [1, 2], "b": [1, 2, 3]})
    with pytest.raises(ValueError, match="inf/nan"):
        from_dict({"a": [1, np.nan]})
    with pytest.raises(ValueError, match="at least one"):
        from_dict({})
    kv = from_dict({"a": [1, 2], "b": [3, 4]})
    assert kv.most_similar("a", topn=1)[0][0] == "b"


def test_word_matrix_oov_policy(tiny, caplog):
    with caplog.at_level(logging.WARNING):
        mat, res = word_matrix(tiny, ["niño", "missing", "casa"], name="X")
    assert res.kept == ("niño", "casa") and res.missing == ("missing",)
    assert "missing" in caplog.text
    np.testing.assert_allclose(mat, np.vstack([tiny["niño"], tiny["casa"]]))
    with pytest.raises(OOVError, match="missing"):
        word_matrix(tiny, ["niño", "missing"], policy="raise")
    with pytest.raises(ValueError, match="only 0 word"):
        word_matrix(tiny, ["missing"])
    unit, _ = word_matrix(tiny, ["niño", "casa"], normalize=True)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0)


# ----------------------------------------------------------------------------- reference vectors
def test_reference_word2vec_subsets():
    wefe = load_reference_vectors("word2vec-googlenews-wefe")
    boluk = load_reference_vectors("word2vec-googlenews-bolukbasi")
    assert (len(wefe), wefe.vector_size) == (13013, 300)
    assert (len(boluk), boluk.vector_size) == (26423, 300)
    assert all(type(k) is str for k in wefe.index_to_key[:50])
    # both are subsets of the same GoogleNews vectors (wefe's copy is length-normalised)
    for w in ("doctor", "nurse", "queen"):
        assert float(wefe[w] @ boluk[w]) / float(
            np.linalg.norm(wefe[w]) * np.linalg.norm(boluk[w])
        ) == pytest.approx(1.0, abs=1e-6)


def test_reference_glove():
    glove = load_reference_vectors("glove-6b-50d", limit=1000)
    assert (len(glove), glove.vector_size) == (1000, 50)
    assert glove.index_to_key[:3] == ["the", ",", "."]
    # first numbers of glove.6B.50d.txt: "the 0.418 0.24968 -0.41242 0.1217 0.34527 ..."
    np.testing.assert_allclose(glove["the"][:5], [0.418, 0.24968, -0.41242, 0.1217, 0.34527], rtol=1e-6)


def test_reference_errors(monkeypatch, tmp_path):
    from biaskit.data import reference_data

    with pytest.raises(ValueError, match="unknown reference vectors"):
        load_reference_vectors("word2vec-full")
    # neither fetched (an empty cache) nor installed: the error names the one command that fetches them
    monkeypatch.setenv("BIASKIT_CACHE_DIR", str(tmp_path / "cache"))
    real = reference_data.installed_root
    monkeypatch.setattr(reference_data, "installed_root", lambda key: None if key == "wefe" else real(key))
    with pytest.raises(
        reference_data.ReferenceDataMissing, match=r"run `python -m biaskit fetch reference-vectors`"
    ):
        load_reference_vectors("word2vec-googlenews-wefe")
    assert len(load_reference_vectors("word2vec-googlenews-bolukbasi", limit=10)) == 10  # the installed one


# ----------------------------------------------------------------------------- word2vec
def _toy_corpus():
    rng = np.random.default_rng(0)
    animals = [f"animal{i}" for i in range(15)]
    tools = [f"tool{i}" for i in range(15)]
    sents = [list(rng.choice(animals if rng.random() < 0.5 else tools, size=8)) for _ in range(400)]
    return sents, animals, tools


def test_train_word2vec_is_deterministic_and_learns_topics():
    sents, animals, tools = _toy_corpus()
    # sample=0: gensim's default down-sampling (1e-3) would drop most tokens of a 30-word vocabulary
    kw = dict(vector_size=16, window=3, min_count=1, epochs=5, seed=3, sample=0, cache=False)
    a = train_word2vec(sents, **kw)
    b = train_word2vec(sents, **kw)
    np.testing.assert_array_equal(a.vectors, b.vectors)
    # words of one topic end up closer together than words of different topics (centred cosines)
    V = a.vectors - a.vectors.mean(axis=0)
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    ia = [a.key_to_index[w] for w in animals]
    it = [a.key_to_index[w] for w in tools]
    within = (V[ia] @ V[ia].T)[~np.eye(len(ia), dtype=bool)].mean()
    across = (V[ia] @ V[it].T).mean()
    assert within > 0.5 and across < -0.5


def test_train_word2vec_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BIASKIT_CACHE_DIR", str(tmp_path))
    sents, _, _ = _toy_corpus()
    kw = dict(vector_size=8, min_count=1, epochs=2, seed=0)
    first = train_word2vec(sents, **kw)
    files = list((tmp_path / "word2vec").glob("*.npz"))  # numbers and text, never gensim's pickled .kv
    assert len(files) == 1 and not list((tmp_path / "word2vec").glob("*.kv"))
    second = train_word2vec(sents, **kw)  # loaded from the cache
    assert second is not first
    # the same KeyedVectors bit for bit: vectors, word order, counts and gensim's other per-word numbers
    assert second.vectors.dtype == first.vectors.dtype and second.vectors.tobytes() == first.vectors.tobytes()
    assert second.index_to_key == first.index_to_key and second.key_to_index == first.key_to_index
    assert sorted(second.expandos) == sorted(first.expandos) == ["count", "sample_int"]
    for name, values in first.expandos.items():
        assert second.expandos[name].dtype == values.dtype
        np.testing.assert_array_equal(second.expandos[name], values)
    assert [second.get_vecattr(w, "count") for w in first.index_to_key[:5]] == [
        sum(s.count(w) for s in sents) for w in first.index_to_key[:5]
    ]
    assert second.most_similar(first.index_to_key[0]) == first.most_similar(first.index_to_key[0])
    train_word2vec(sents, **{**kw, "seed": 1})
    assert len(list((tmp_path / "word2vec").glob("*.npz"))) == 2


def test_train_word2vec_input_errors():
    with pytest.raises(ValueError, match="is a string"):
        train_word2vec(["el perro come"], cache=False)
    with pytest.raises(ValueError, match="no tokens"):
        train_word2vec([[]], cache=False)


# ----------------------------------------------------------------------------- native fastText .bin
_FT_SENTENCES = [
    ["der", "hund", "läuft", "schnell", "über", "die", "wiese"],
    ["die", "katze", "schläft", "ruhig", "auf", "dem", "sofa"],
    ["der", "arzt", "arbeitet", "im", "krankenhaus"],
    ["die", "ärztin", "arbeitet", "in", "der", "praxis"],
] * 25


@pytest.fixture(scope="module")
def fasttext_bin(tmp_path_factory):
    """A tiny fastText model trained here, saved in Facebook's native .bin format."""
    from gensim.models import FastText
    from gensim.models.fasttext import save_facebook_model

    # bucket: a small n-gram table keeps the file (and the test) small; min_n..max_n: fastText's 3..6
    model = FastText(_FT_SENTENCES, vector_size=8, min_count=1, epochs=5, seed=7, workers=1, bucket=2000)
    path = tmp_path_factory.mktemp("fasttext") / "tiny.bin"
    save_facebook_model(model, str(path))
    return model, path


def test_fasttext_bin_is_detected_by_its_magic_number(fasttext_bin, tmp_path, tiny):
    _, path = fasttext_bin
    assert path.read_bytes()[:4] == emb.FASTTEXT_MAGIC
    assert detect_format(path) == "fasttext-bin"
    other = tmp_path / "model.dat"  # content, not the extension, decides
    other.write_bytes(path.read_bytes())
    assert detect_format(other) == "fasttext-bin"
    gz = tmp_path / "tiny.bin.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert detect_format(gz) == "fasttext-bin"
    # a word2vec binary with the same .bin extension still loads as word2vec
    w2v = save_vectors(tiny, tmp_path / "w2v.bin")
    assert detect_format(w2v) == "word2vec-binary"
    kv = load_vectors(w2v)
    assert not emb.has_subwords(kv)
    _assert_same(tiny, kv)


def test_fasttext_bin_vocabulary_vectors_match_the_trained_model(fasttext_bin):
    model, path = fasttext_bin
    kv = load_vectors(path)
    assert emb.has_subwords(kv)
    assert kv.index_to_key == model.wv.index_to_key
    np.testing.assert_allclose(kv.vectors, model.wv.vectors, rtol=0, atol=1e-6)
    assert np.abs(model.wv.vectors).max() > 1e-3  # not a trivially zero model
    np.testing.assert_allclose(
        load_vectors(path, format="fasttext-bin").vectors, model.wv.vectors, rtol=0, atol=1e-6
    )


def test_fasttext_bin_oov_word_from_subwords(fasttext_bin):
    model, path = fasttext_bin
    kv = load_vectors(path)
    words = ["hund", "hunde", "ärztinnen", "katze"]  # 'hunde', 'ärztinnen' are not in the vocabulary
    assert "hunde" not in kv.key_to_index and "ärztinnen" not in kv.key_to_index
    mat, res = word_matrix(kv, words, oov="subword", name="X")
    assert res.kept == tuple(words) and res.missing == ()
    expected = np.vstack([model.wv[w] for w in words])  # gensim's own n-gram composition
    np.testing.assert_allclose(mat, expected, rtol=0, atol=1e-6)
    # the OOV vector is a real composition: close to the vocabulary word it shares n-grams with
    assert not np.allclose(mat[1], mat[0])
    small = emb.word_vectors(kv, [*words, "hund"], oov="subword")
    assert small.index_to_key == words
    np.testing.assert_allclose(small["ärztinnen"], model.wv["ärztinnen"], rtol=0, atol=1e-6)


def test_fasttext_bin_oov_default_is_dropped_with_warning(fasttext_bin, caplog):
    model, path = fasttext_bin
    kv = load_vectors(path)
    with caplog.at_level(logging.WARNING, logger="biaskit"):
        mat, res = word_matrix(kv, ["hund", "hunde", "katze"], name="X")
    assert res.kept == ("hund", "katze") and res.missing == ("hunde",)
    np.testing.assert_allclose(mat, np.vstack([model.wv["hund"], model.wv["katze"]]), rtol=0, atol=1e-6)
    warned = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "'hunde'" in warned[0].getMessage()
    with pytest.raises(OOVError, match="hunde"):
        word_matrix(kv, ["hund", "hunde"], policy="raise")
    assert emb.word_vectors(kv, ["hund", "hunde"]).index_to_key == ["hund"]


def test_fasttext_oov_option_errors(fasttext_bin, tiny, tmp_path):
    _, path = fasttext_bin
    with pytest.raises(ValueError, match="oov='subword' needs fastText vectors"):
        word_matrix(tiny, ["casa", "casas"], oov="subword")
    with pytest.raises(ValueError, match="oov must be one of"):
        word_matrix(tiny, ["casa"], oov="ngrams")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="limit= is not available"):
        load_vectors(path, limit=3)
    broken = tmp_path / "broken.bin"
    broken.write_bytes(path.read_bytes()[:200])
    with pytest.raises(ValueError, match=r"not a valid fastText \.bin model"):
        load_vectors(broken)
    with pytest.raises(ValueError, match="save_facebook_model"):
        save_vectors(tiny, tmp_path / "x.bin", format="fasttext-bin")
