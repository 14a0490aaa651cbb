"""The corpus and word2vec caches are checked against the checksum file written beside them.

A changed byte, a cut-short file, a missing or garbled checksum file, or one of the earlier plain
``"<sha256>  <name>"`` format: the cache file is named in a WARNING with the reason, never used, and the
result is computed again (equal to a fresh computation).  The checksum file names the cache file and its
cache key, so a file swapped in from another entry is refused too (tests/core/test_untrusted_cache.py)."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

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
    elif how == "old checksum format":  # the right sha256, in the plain line biaskit wrote before
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        path.with_name(path.name + ".sha256").write_text(f"{digest}  {path.name}\n", encoding="utf-8")


def test_a_cache_file_matches_its_checksum_until_one_byte_changes(tmp_path):
    f = tmp_path / "x.bin"
    data = b"0123456789" * 10
    f.write_bytes(data)
    write_cache_checksum(f, "key-1")
    assert cache_file_problem(f, "key-1") is None
    record = json.loads((tmp_path / "x.bin.sha256").read_text())
    assert record == {
        "format": 2,
        "file": "x.bin",
        "key": "key-1",
        "sha256": hashlib.sha256(data).hexdigest(),
        "size": 100,
    }
    assert "belongs to another cache entry" in cache_file_problem(f, "key-2")
    _damage(f, "flip")
    assert "differs from the" in cache_file_problem(f, "key-1")
    _damage(f, "no checksum")
    assert "has no checksum file x.bin.sha256" in cache_file_problem(f, "key-1")
    _damage(f, "old checksum format")
    assert "earlier biaskit's format" in cache_file_problem(f, "key-1")


@pytest.mark.parametrize(
    "how", ["flip", "truncate", "no checksum", "garbled checksum", "old checksum format"]
)
def test_a_damaged_corpus_cache_is_named_and_preprocessed_again(tmp_path, cache_dir, caplog, how):
    f = tmp_path / "mini.txt"
    f.write_text(TEXT, encoding="utf-8")
    fresh = C.load_corpus(f)
    (pkl,) = (cache_dir / "corpus").glob("mini.txt-*.json.gz")
    key = json.loads(pkl.with_name(pkl.name + ".sha256").read_text())["key"]
    assert pkl.name.startswith(f"mini.txt-{key[:20]}") and cache_file_problem(pkl, key) is None
    _damage(pkl, how)
    with caplog.at_level(logging.WARNING, logger="biaskit.data.corpus"):
        again = C.load_corpus(f)
    assert again == fresh
    warned = [r.getMessage() for r in caplog.records if "not using the corpus cache" in r.getMessage()]
    assert len(warned) == 1 and str(pkl) in warned[0]
    assert cache_file_problem(pkl, key) is None  # written again, with its checksum
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="biaskit.data.corpus"):
        assert C.load_corpus(f) == fresh
    assert "not using" not in caplog.text


@pytest.mark.parametrize("how", ["flip", "truncate", "no checksum", "old checksum format"])
def test_a_damaged_word2vec_cache_is_named_and_trained_again(cache_dir, caplog, how):
    kw = dict(vector_size=8, window=2, min_count=1, epochs=2, seed=0)
    fresh = train_word2vec(SENTENCES, **kw)
    (kv_file,) = (cache_dir / "word2vec").glob("*.npz")
    # one data file and its checksum file; no temporary file left behind
    assert {p.name for p in kv_file.parent.iterdir()} == {kv_file.name, kv_file.name + ".sha256"}
    key = json.loads(kv_file.with_name(kv_file.name + ".sha256").read_text())["key"]
    _damage(kv_file, how)
    with caplog.at_level(logging.WARNING, logger="biaskit.embeddings.vectors"):
        again = train_word2vec(SENTENCES, **kw)
    assert any(
        "not using the cached word2vec model" in r.getMessage() and str(kv_file) in r.getMessage()
        for r in caplog.records
    )
    assert again.vectors.tobytes() == fresh.vectors.tobytes()
    assert cache_file_problem(kv_file, key) is None
