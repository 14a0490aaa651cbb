"""Integrity of the slot-score cache: every ``.npz`` file of :mod:`biaskit.lm.slot_cache` stores
its cache key and the sha256 of the key and its arrays; a flipped byte, a truncated file, a changed number,
bytes that are not a cache file, a file of an earlier format (no checksum, no key), a file swapped in from
another call and arrays of another shape are reported with a WARNING naming the file, never used, and
recomputed, so the scores equal a fresh computation."""

from __future__ import annotations

import hashlib
import logging

import numpy as np
import pytest

from biaskit.data import louis_alexandre as la
from biaskit.lm import slot_cache
from biaskit.lm.slot_scores import slot_scores
from biaskit.lm.xlnet import tiny_bridge_lm

NAMES = ["Emma", "Noah", "Olivia", "Liam"]
TRAITS = ["ambitious", "caring", "lazy"]


@pytest.fixture(scope="module")
def bert(one_torch_thread):
    return tiny_bridge_lm("bert", seed=3)


@pytest.fixture(scope="module")
def templates():
    return la.load_louis_alexandre_templates()["name-trait"].subset(3)


def _warnings(caplog) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.name == slot_cache.__name__
    ]


def _run(bert, templates):
    return slot_scores(bert, templates, NAMES, TRAITS, progress=False)


def _fresh_and_cached(bert, templates, cache_dir):
    fresh = slot_scores(bert, templates, NAMES, TRAITS, cache=False, progress=False)
    first = _run(bert, templates)
    assert first.n_cached == 0
    (path,) = (cache_dir / "indirect_bias").rglob("*.npz")
    return fresh, path


def _assert_recomputed_and_rewritten(bert, templates, fresh, path, caplog):
    """The call after the damage: one WARNING naming ``path``, nothing read from it, the values of a fresh
    computation; the file is then replaced by a sound one, read quietly by the next call."""
    with caplog.at_level(logging.WARNING):
        again = _run(bert, templates)
    (msg,) = _warnings(caplog)
    assert str(path) in msg and "not used and is recomputed" in msg
    assert again.n_cached == 0
    np.testing.assert_array_equal(again.log_p_tgt, fresh.log_p_tgt)
    np.testing.assert_array_equal(again.log_p_prior, fresh.log_p_prior)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        third = _run(bert, templates)
    assert _warnings(caplog) == [] and third.n_cached == 1
    np.testing.assert_array_equal(third.log_p_tgt, fresh.log_p_tgt)
    return msg


def test_a_slot_cache_file_stores_its_format_and_the_sha256_of_its_arrays(bert, templates, cache_dir):
    fresh, path = _fresh_and_cached(bert, templates, cache_dir)
    with np.load(path, allow_pickle=False) as z:
        assert sorted(z.files) == ["format", "key", "log_p_prior", "log_p_tgt", "sha256"]
        assert int(z["format"]) == slot_cache.SLOT_CACHE_FORMAT == 3
        tgt, prior, stored, key = z["log_p_tgt"], z["log_p_prior"], str(z["sha256"]), str(z["key"])
    np.testing.assert_array_equal(tgt, fresh.log_p_tgt)
    assert tgt.shape == (3, len(NAMES), len(TRAITS)) and prior.shape == (3, len(TRAITS))
    assert key == path.stem and len(key) == 20  # the call's key, which names the file
    # an independent recomputation of the documented digest: format and key, then name, dtype, shape, bytes
    h = hashlib.sha256(f"biaskit slot cache|3|key|{key}".encode())
    for name, a in (("log_p_tgt", tgt), ("log_p_prior", prior)):
        h.update(f"|{name}|{a.dtype.str}|{a.shape}|".encode() + a.tobytes())
    assert stored == h.hexdigest()
    assert _run(bert, templates).n_cached == 1
    assert not [p for p in path.parent.iterdir() if p != path]  # no temporary file left behind


@pytest.mark.parametrize("where", ["log_p_tgt", "log_p_prior"])
def test_a_flipped_byte_in_a_slot_cache_file_is_named_and_recomputed(
    bert, templates, cache_dir, caplog, where
):
    fresh, path = _fresh_and_cached(bert, templates, cache_dir)
    raw = bytearray(path.read_bytes())
    at = raw.find(np.ascontiguousarray(getattr(fresh, where)).tobytes())
    assert at > 0
    raw[at + 13] ^= 0x01  # one bit of one stored number
    path.write_bytes(bytes(raw))
    _assert_recomputed_and_rewritten(bert, templates, fresh, path, caplog)


@pytest.mark.parametrize("keep", [0.5, 0.97, 0.0])
def test_a_truncated_slot_cache_file_is_named_and_recomputed(bert, templates, cache_dir, caplog, keep):
    fresh, path = _fresh_and_cached(bert, templates, cache_dir)
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])  # a killed copy, a full disk
    msg = _assert_recomputed_and_rewritten(bert, templates, fresh, path, caplog)
    assert "unreadable" in msg


def test_a_changed_number_in_a_well_formed_slot_cache_file_fails_its_checksum(
    bert, templates, cache_dir, caplog
):
    fresh, path = _fresh_and_cached(bert, templates, cache_dir)
    with np.load(path, allow_pickle=False) as z:
        parts = {k: z[k] for k in z.files}
    parts["log_p_tgt"] = parts["log_p_tgt"].copy()
    parts["log_p_tgt"][1, 2, 0] += 1e-6  # a valid file (sound zip, sound npy): only the checksum can tell
    np.savez(path, **parts)
    msg = _assert_recomputed_and_rewritten(bert, templates, fresh, path, caplog)
    assert "checksum mismatch" in msg


def test_a_slot_cache_file_of_the_earlier_format_is_named_and_recomputed(bert, templates, cache_dir, caplog):
    fresh, path = _fresh_and_cached(bert, templates, cache_dir)
    # format 1 stored the two arrays only; what it holds cannot be checked, so it must not be used
    np.savez(path, log_p_tgt=fresh.log_p_tgt + 0.5, log_p_prior=fresh.log_p_prior)
    msg = _assert_recomputed_and_rewritten(bert, templates, fresh, path, caplog)
    assert "earlier cache format" in msg
    with np.load(path, allow_pickle=False) as z:
        assert int(z["format"]) == slot_cache.SLOT_CACHE_FORMAT


def test_a_slot_cache_file_of_format_2_without_its_key_is_named_and_recomputed(
    bert, templates, cache_dir, caplog
):
    fresh, path = _fresh_and_cached(bert, templates, cache_dir)
    # format 2 stored a checksum of the arrays but no key: a file swapped in from another call passed
    tgt, prior = fresh.log_p_tgt + 0.5, fresh.log_p_prior
    h = hashlib.sha256(b"biaskit slot cache|2")
    for name, a in (("log_p_tgt", tgt), ("log_p_prior", prior)):
        h.update(f"|{name}|{a.dtype.str}|{a.shape}|".encode() + a.tobytes())
    np.savez(path, log_p_tgt=tgt, log_p_prior=prior, format=np.int64(2), sha256=np.str_(h.hexdigest()))
    msg = _assert_recomputed_and_rewritten(bert, templates, fresh, path, caplog)
    assert "cache format 2" in msg


def test_slot_cache_files_swapped_between_two_calls_are_named_and_recomputed(
    bert, templates, cache_dir, caplog
):
    """Two calls' files exchanged (each a sound file of its own key): neither is used, both recomputed."""
    other = ["Ava", "Lucas", "Mia", "Ethan"]
    fresh_a = slot_scores(bert, templates, NAMES, TRAITS, cache=False, progress=False)
    fresh_b = slot_scores(bert, templates, other, TRAITS, cache=False, progress=False)
    _run(bert, templates)
    slot_scores(bert, templates, other, TRAITS, progress=False)
    path_a, path_b = sorted((cache_dir / "indirect_bias").rglob("*.npz"), key=lambda p: p.stat().st_mtime_ns)
    data_a, data_b = path_a.read_bytes(), path_b.read_bytes()
    path_a.write_bytes(data_b)
    path_b.write_bytes(data_a)
    with caplog.at_level(logging.WARNING):
        got_a = _run(bert, templates)
        got_b = slot_scores(bert, templates, other, TRAITS, progress=False)
    msgs = _warnings(caplog)
    assert len(msgs) == 2 and all("another cache key" in m for m in msgs)
    assert str(path_a) in msgs[0] and str(path_b) in msgs[1]
    assert got_a.n_cached == 0 and got_b.n_cached == 0
    np.testing.assert_array_equal(got_a.log_p_tgt, fresh_a.log_p_tgt)
    np.testing.assert_array_equal(got_b.log_p_tgt, fresh_b.log_p_tgt)
    assert not np.array_equal(fresh_a.log_p_tgt, fresh_b.log_p_tgt)  # the swap would have changed the scores


def test_garbage_or_arrays_of_another_shape_are_not_used(tmp_path, caplog):
    path = tmp_path / "x.npz"
    path.write_bytes(b"\x00\xff not a zip file \xfe")
    with caplog.at_level(logging.WARNING):
        assert slot_cache.read_slot_cache(path) is None
    (msg,) = _warnings(caplog)
    assert str(path) in msg and "unreadable" in msg

    caplog.clear()
    tgt, prior = np.zeros((2, 3, 4)), np.ones((2, 4))
    slot_cache.write_slot_cache(path, tgt, prior)
    got = slot_cache.read_slot_cache(path, (2, 3, 4))
    assert got is not None
    np.testing.assert_array_equal(got[0], tgt)
    np.testing.assert_array_equal(got[1], prior)
    assert _warnings(caplog) == []
    with caplog.at_level(logging.WARNING):
        assert slot_cache.read_slot_cache(path, (2, 5, 4)) is None
    (msg,) = _warnings(caplog)
    assert str(path) in msg and "shape (2, 3, 4)" in msg
    assert slot_cache.read_slot_cache(tmp_path / "missing.npz") is None
