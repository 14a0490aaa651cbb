"""The corpus and word2vec caches are checked against the sha256 written beside them.

A changed byte, a cut-short file, a missing or garbled checksum file: the cache file is named in a WARNING
with the reason, never used, and the result is computed again (equal to a fresh computation)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from biaskit.core.io import cache_file_problem, write_cache_checksum
from biaskit.data import corpus as C
from biaskit.embeddings.vectors import train_word2vec

TEXT = "El niño habló con la niña. ¿Dónde está él?\n\nLa señora votó.\nEl señor habló con ella.\n"
SENTENCES = [["he", "said", "she", "is", "a", "doctor"], ["she", "said", "he", "is", "a", "nurse"]] * 20


def _damage(path: Path, how: str) -> None:
    raw = bytearray(path.read_bytes())
    if how == "flip":
        raw[len(raw) // 2] ^= 0x01
        path.write_bytes(bytes(raw))
    elif how == "truncate":
        path.write_bytes(bytes(raw[: len(raw) // 2]))
    elif how == "no checksum":
        path.with_name(path.name + ".sha256").unlink()
    elif how == "garbled checksum":
        path.with_name(path.name + ".sha256").write_text("not a sum\n", encoding="utf-8")


def test_a_cache_file_matches_its_checksum_until_one_byte_changes(tmp_path):
    f = tmp_path / "x.bin"
    f.write_bytes(b"0123456789" * 10)
    write_cache_checksum(f)
    assert cache_file_problem(f) is None
    assert (tmp_path / "x.bin.sha256").read_text().split()[1] == "x.bin"
    _damage(f, "flip")
    assert "differs from the" in cache_file_problem(f)
    _damage(f, "no checksum")
    assert "has no checksum file x.bin.sha256" in cache_file_problem(f)


@pytest.mark.parametrize("how", ["flip", "truncate", "no checksum", "garbled checksum"])
def test_a_damaged_corpus_cache_is_named_and_preprocessed_again(tmp_path, cache_dir, caplog, how):
    f = tmp_path / "mini.txt"
    f.write_text(TEXT, encoding="utf-8")
    fresh = C.load_corpus(f)
    (pkl,) = (cache_dir / "corpus").glob("mini.txt-*.pkl")
    assert cache_file_problem(pkl) is None
    _damage(pkl, how)
    with caplog.at_level(logging.WARNING, logger="biaskit.data.corpus"):
        again = C.load_corpus(f)
    assert again == fresh
    warned = [r.getMessage() for r in caplog.records if "not using the corpus cache" in r.getMessage()]
    assert len(warned) == 1 and str(pkl) in warned[0]
    assert cache_file_problem(pkl) is None  # written again, with its checksum
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="biaskit.data.corpus"):
        assert C.load_corpus(f) == fresh
    assert "not using" not in caplog.text


@pytest.mark.parametrize("how", ["flip", "truncate", "no checksum"])
def test_a_damaged_word2vec_cache_is_named_and_trained_again(cache_dir, caplog, how):
    kw = dict(vector_size=8, window=2, min_count=1, epochs=2, seed=0)
    fresh = train_word2vec(SENTENCES, **kw)
    (kv_file,) = (cache_dir / "word2vec").glob("*.kv")
    assert {p.name for p in kv_file.parent.iterdir()} == {kv_file.name, kv_file.name + ".sha256"}  # no .npy
    _damage(kv_file, how)
    with caplog.at_level(logging.WARNING, logger="biaskit.embeddings.vectors"):
        again = train_word2vec(SENTENCES, **kw)
    assert any(
        "not using the cached word2vec model" in r.getMessage() and str(kv_file) in r.getMessage()
        for r in caplog.records
    )
    np.testing.assert_array_equal(again.vectors, fresh.vectors)
    assert cache_file_problem(kv_file) is None
