"""Files biaskit did not write can neither run code nor pass as its data, and every write is whole or absent.

* a planted pickle (its ``__reduce__`` creates a marker file) where the corpus or word2vec cache is, beside
  a checksum file of the earlier plain format or a forged one of the current format (right sha256, file
  name and key): the marker is never created, and the result equals a fresh computation;
* cache files swapped together with their checksum files, or with forged checksum files: neither is used
  (a WARNING names the file), the results are correct;
* three processes loading one corpus at once, several rounds: no crash, no unreadable checksum;
* a full disk (the write fails with ENOSPC after part of the bytes): a cache write is skipped with a
  WARNING naming the file and the result is still returned; ``score --out`` stops with an error naming
  the file and leaves neither a partial CSV nor a temporary file; an unusable ``--out`` is refused
  before any scoring;
* the cache folder: created 0700 whatever the umask, refused when others can write it (the fix in the
  message works), accepted with ``BIASKIT_SHARED_CACHE=1``, a relative ``BIASKIT_CACHE_DIR`` taken from
  the caller's folder, and passed to a notebook kernel as an absolute path.
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import json
import logging
import multiprocessing
import os
import pickle
import re
import shlex
import stat
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from biaskit.core import io as core_io
from biaskit.core.io import DiskFullError, cache_file_problem, write_cache_checksum
from biaskit.core.paths import CALLER_CWD_ENV, SHARED_CACHE_ENV, UnsafeCacheError, cache_dir
from biaskit.data import corpus as C
from biaskit.embeddings.vectors import train_word2vec
from biaskit.lm import slot_cache

TEXT_A = "El niño habló con la niña. ¿Dónde está él?\n\nLa señora votó.\nEl señor habló con ella.\n"
TEXT_B = "La ingeniera diseñó el puente.\nEl enfermero cuidó al paciente.\n"
SENTENCES = [["he", "said", "she", "is", "a", "doctor"], ["she", "said", "he", "is", "a", "nurse"]] * 20
W2V = dict(vector_size=8, window=2, min_count=1, epochs=2, seed=0)


class Payload:
    """Unpickling it opens (creates) ``marker`` for writing: proof that a pickle was loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (self.marker, "w"))


def _payload(marker: Path) -> bytes:
    data = pickle.dumps({"sentences": [["planted"]], "warnings": [], "obj": Payload(marker)})
    pickle.loads(data).pop("obj").close()  # the payload works: loading it creates the marker
    assert marker.exists()
    marker.unlink()
    return data


def _old_sidecar(path: Path) -> None:
    """The checksum file of biaskit before the current format: ``"<sha256>  <name>"``."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    path.with_name(path.name + ".sha256").write_text(f"{digest}  {path.name}\n", encoding="utf-8")


def _sidecar_key(path: Path) -> str:
    return json.loads(path.with_name(path.name + ".sha256").read_text(encoding="utf-8"))["key"]


def _warnings(caplog, name: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and r.name == name]


def _corpus(tmp_path: Path, name: str, text: str) -> Path:
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    return f


def _only_cache_file(folder: Path, pattern: str) -> Path:
    (path,) = folder.glob(pattern)
    return path


# ------------------------------------------------------------------------------------ (a) planted payloads
def test_a_planted_pickle_where_the_old_corpus_cache_was_is_removed_unread(tmp_path, cache_dir, caplog):
    f = _corpus(tmp_path, "mini.txt", TEXT_A)
    fresh = C.load_corpus(f, cache=False)
    # where biaskit before the JSON cache looked: <label>-<20 digits of the key of version 2>.pkl
    key_src = {
        "version": 2,
        "files": [hashlib.sha256(f.read_bytes()).hexdigest()],
        "preprocessing": C.Preprocessing().cache_key(),
        "encoding": "utf-8",
        "sample": None,
        "random_state": 42,
    }
    old_key = hashlib.sha256(json.dumps(key_src, sort_keys=True).encode()).hexdigest()[:20]
    old = cache_dir / "corpus" / f"mini.txt-{old_key}.pkl"
    old.parent.mkdir(parents=True)
    marker = tmp_path / "marker"
    old.write_bytes(_payload(marker))
    _old_sidecar(old)
    with caplog.at_level(logging.WARNING):
        got = C.load_corpus(f)
    assert not marker.exists()
    assert got == fresh != [["planted"]]
    (msg,) = [m for m in _warnings(caplog, C.__name__) if "earlier biaskit" in m]
    assert str(old) in msg and "pickle" in msg
    assert not old.exists() and not old.with_name(old.name + ".sha256").exists()
    new = _only_cache_file(cache_dir / "corpus", "mini.txt-*.json.gz")
    assert cache_file_problem(new, _sidecar_key(new)) is None


@pytest.mark.parametrize("what", ["pickle", "gzipped pickle", "deeply nested JSON"])
def test_a_planted_corpus_cache_with_a_forged_checksum_file_is_not_used(tmp_path, cache_dir, caplog, what):
    f = _corpus(tmp_path, "mini.txt", TEXT_A)
    fresh = C.load_corpus(f)
    path = _only_cache_file(cache_dir / "corpus", "mini.txt-*.json.gz")
    key = _sidecar_key(path)
    marker = tmp_path / "marker"
    data = {
        "pickle": _payload(marker),
        "gzipped pickle": gzip.compress(_payload(marker)),
        "deeply nested JSON": gzip.compress(b"[" * 100_000 + b"]" * 100_000),
    }[what]
    path.write_bytes(data)
    write_cache_checksum(path, key)  # a perfect forgery: right file name, key, size and sha256
    assert cache_file_problem(path, key) is None
    with caplog.at_level(logging.WARNING):
        got = C.load_corpus(f)
    assert not marker.exists()
    assert got == fresh
    (msg,) = [m for m in _warnings(caplog, C.__name__) if "not using the corpus cache" in m]
    assert str(path) in msg and "unreadable" in msg
    assert C.load_corpus(f) == fresh  # rewritten by biaskit: used again


def test_a_planted_pickle_where_the_old_word2vec_cache_was_is_removed_unread(tmp_path, cache_dir, caplog):
    fresh = train_word2vec(SENTENCES, **W2V, cache=False)
    train_word2vec(SENTENCES, **W2V)
    npz = _only_cache_file(cache_dir / "word2vec", "*.npz")
    key = _sidecar_key(npz)
    npz.unlink()
    npz.with_name(npz.name + ".sha256").unlink()
    old = npz.with_suffix(".kv")  # biaskit before the .npz cache saved gensim's pickled .kv there
    marker = tmp_path / "marker"
    old.write_bytes(_payload(marker))
    _old_sidecar(old)
    with caplog.at_level(logging.WARNING):
        got = train_word2vec(SENTENCES, **W2V)
    assert not marker.exists()
    assert got.vectors.tobytes() == fresh.vectors.tobytes() and got.index_to_key == fresh.index_to_key
    (msg,) = _warnings(caplog, "biaskit.embeddings.vectors")
    assert str(old) in msg and "pickle" in msg
    assert not old.exists() and not old.with_name(old.name + ".sha256").exists()
    assert cache_file_problem(npz, key) is None


@pytest.mark.parametrize("what", ["pickle", "npz with a pickled array"])
def test_a_planted_word2vec_cache_with_a_forged_checksum_file_is_not_used(tmp_path, cache_dir, caplog, what):
    fresh = train_word2vec(SENTENCES, **W2V)
    npz = _only_cache_file(cache_dir / "word2vec", "*.npz")
    key = _sidecar_key(npz)
    marker = tmp_path / "marker"
    if what == "pickle":
        npz.write_bytes(_payload(marker))
    else:  # a well-formed .npz of the right format and key, one array of which is a pickle
        with np.load(npz, allow_pickle=False) as z:
            parts: dict[str, Any] = {k: z[k] for k in z.files}
        parts["attr_count"] = np.array([Payload(marker)] * len(fresh), dtype=object)
        with open(npz, "wb") as fh:
            np.savez(fh, **parts)
    write_cache_checksum(npz, key)
    assert cache_file_problem(npz, key) is None
    with caplog.at_level(logging.WARNING):
        got = train_word2vec(SENTENCES, **W2V)
    assert not marker.exists()
    assert got.vectors.tobytes() == fresh.vectors.tobytes()
    np.testing.assert_array_equal(got.expandos["count"], fresh.expandos["count"])
    (msg,) = _warnings(caplog, "biaskit.embeddings.vectors")
    assert str(npz) in msg and "unreadable" in msg


def test_a_slot_cache_file_holding_a_pickled_array_is_not_loaded(tmp_path, caplog):
    path = tmp_path / "0123456789abcdef0123.npz"
    marker = tmp_path / "marker"
    np.savez(
        path,
        log_p_tgt=np.array([Payload(marker)], dtype=object),
        log_p_prior=np.zeros((1, 1)),
        format=np.int64(slot_cache.SLOT_CACHE_FORMAT),
        key=np.str_(path.stem),
        sha256=np.str_("0" * 64),
    )
    with caplog.at_level(logging.WARNING):
        assert slot_cache.read_slot_cache(path) is None
    assert not marker.exists()
    (msg,) = _warnings(caplog, slot_cache.__name__)
    assert str(path) in msg and "unreadable" in msg


# ------------------------------------------------------------------------------------ (b) swapped files
def _swap(a: Path, b: Path) -> None:
    """Exchange two files' bytes (each keeps its own name)."""
    data_a, data_b = a.read_bytes(), b.read_bytes()
    a.write_bytes(data_b)
    b.write_bytes(data_a)


@pytest.mark.parametrize("sidecars", ["swapped with the files", "forged for the new place"])
def test_corpus_cache_files_swapped_with_their_checksum_files_are_not_used(
    tmp_path, cache_dir, caplog, sidecars
):
    fa, fb = _corpus(tmp_path, "a.txt", TEXT_A), _corpus(tmp_path, "b.txt", TEXT_B)
    fresh_a, fresh_b = C.load_corpus(fa), C.load_corpus(fb)
    assert fresh_a != fresh_b
    pa = _only_cache_file(cache_dir / "corpus", "a.txt-*.json.gz")
    pb = _only_cache_file(cache_dir / "corpus", "b.txt-*.json.gz")
    key_a, key_b = _sidecar_key(pa), _sidecar_key(pb)
    _swap(pa, pb)
    if sidecars == "swapped with the files":
        _swap(pa.with_name(pa.name + ".sha256"), pb.with_name(pb.name + ".sha256"))
        why = "belongs to another file"
    else:  # checksum files rewritten for the swapped bytes under each place's own name and key
        write_cache_checksum(pa, key_a)
        write_cache_checksum(pb, key_b)
        why = "holds the corpus of another cache key"
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        got_a, got_b = C.load_corpus(fa), C.load_corpus(fb)
    assert got_a == fresh_a and got_b == fresh_b
    msgs = [m for m in _warnings(caplog, C.__name__) if "not using the corpus cache" in m]
    assert len(msgs) == 2 and all(why in m for m in msgs)
    assert str(pa) in msgs[0] and str(pb) in msgs[1]


@pytest.mark.parametrize("sidecars", ["swapped with the files", "forged for the new place"])
def test_word2vec_cache_files_swapped_with_their_checksum_files_are_not_used(cache_dir, caplog, sidecars):
    fresh_a = train_word2vec(SENTENCES, **W2V)
    fresh_b = train_word2vec(SENTENCES, **{**W2V, "seed": 1})
    assert fresh_a.vectors.tobytes() != fresh_b.vectors.tobytes()
    pa, pb = sorted((cache_dir / "word2vec").glob("*.npz"), key=lambda p: p.stat().st_mtime_ns)
    key_a, key_b = _sidecar_key(pa), _sidecar_key(pb)
    _swap(pa, pb)
    if sidecars == "swapped with the files":
        _swap(pa.with_name(pa.name + ".sha256"), pb.with_name(pb.name + ".sha256"))
        why = "belongs to another file"
    else:
        write_cache_checksum(pa, key_a)
        write_cache_checksum(pb, key_b)
        why = "holds the model of another cache key"
    with caplog.at_level(logging.WARNING):
        got_a = train_word2vec(SENTENCES, **W2V)
        got_b = train_word2vec(SENTENCES, **{**W2V, "seed": 1})
    assert got_a.vectors.tobytes() == fresh_a.vectors.tobytes()
    assert got_b.vectors.tobytes() == fresh_b.vectors.tobytes()
    msgs = _warnings(caplog, "biaskit.embeddings.vectors")
    assert len(msgs) == 2 and all(why in m for m in msgs)
    assert str(pa) in msgs[0] and str(pb) in msgs[1]


def test_a_cache_file_others_can_write_is_not_used(tmp_path, cache_dir, caplog):
    f = _corpus(tmp_path, "mini.txt", TEXT_A)
    fresh = C.load_corpus(f)
    path = _only_cache_file(cache_dir / "corpus", "mini.txt-*.json.gz")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # written readable by its owner only
    os.chmod(path, 0o666)
    with caplog.at_level(logging.WARNING):
        assert C.load_corpus(f) == fresh
    (msg,) = [m for m in _warnings(caplog, C.__name__) if "not using the corpus cache" in m]
    assert str(path) in msg and "writable by everyone" in msg
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # replaced by a private file


# ------------------------------------------------------------------------------------ (c) parallel runs
def _load_many(args: tuple[str, str, int]) -> tuple[str, list[str], list[str]]:
    """In a worker process: load the corpus ``1 + n_reads`` times; the distinct results (JSON) and every
    WARNING of biaskit, or the exception."""
    cache, text, n_reads = args
    os.environ["BIASKIT_CACHE_DIR"] = cache
    from biaskit.data import corpus

    messages: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    handler = Keep(logging.WARNING)
    logging.getLogger("biaskit").addHandler(handler)
    try:
        seen = {json.dumps(corpus.load_corpus(text)) for _ in range(1 + n_reads)}
    except Exception as exc:  # reported to the test, which fails on it
        return f"{type(exc).__name__}: {exc}", [], messages
    finally:
        logging.getLogger("biaskit").removeHandler(handler)
    return "ok", sorted(seen), messages


@pytest.mark.slow
def test_three_processes_loading_one_corpus_at_once_never_crash_nor_see_an_unreadable_checksum(tmp_path):
    lines = [f"El diputado número {i} habló con la diputada del grupo {i % 7}." for i in range(1500)]
    text = _corpus(tmp_path, "big.txt", "\n".join(lines) + "\n")
    expected = json.dumps(C.load_corpus(text, cache=False))
    rounds, n_reads = 4, 10
    with multiprocessing.get_context("spawn").Pool(3) as pool:
        outcomes = [
            pool.map(_load_many, [(str(tmp_path / f"cache-{r}"), str(text), n_reads)] * 3, chunksize=1)
            for r in range(rounds)
        ]
    flat = [o for round_ in outcomes for o in round_]
    assert [status for status, _, _ in flat] == ["ok"] * (3 * rounds)
    assert all(seen == [expected] for _, seen, _ in flat)
    messages = [m for _, _, msgs in flat for m in msgs]
    assert not [m for m in messages if "unreadable" in m]
    for r in range(rounds):  # each round leaves one sound cache file and its checksum file, no temporary file
        folder = tmp_path / f"cache-{r}" / "corpus"
        path = _only_cache_file(folder, "big.txt-*.json.gz")
        assert sorted(p.name for p in folder.iterdir()) == [path.name, path.name + ".sha256"]
        assert cache_file_problem(path, _sidecar_key(path)) is None


# ------------------------------------------------------------------------------------ (d) a full disk
class _FillingFile:
    """A file whose disk fills after ``room`` bytes: the bytes that fit are written, then ENOSPC."""

    def __init__(self, fh: Any, room: int) -> None:
        self._fh, self._room = fh, room

    def write(self, data: Any) -> int:
        if len(data) > self._room:
            self._fh.write(data[: self._room])
            self._room = 0
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self._room -= len(data)
        return self._fh.write(data)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fh, name)

    def __enter__(self) -> _FillingFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._fh.close()


@pytest.fixture
def full_disk(monkeypatch):
    """Every file biaskit writes through :mod:`biaskit.core.io` meets a full disk after 100 bytes."""
    real_open = open

    def filling_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        fh = real_open(file, mode, *args, **kwargs)
        return _FillingFile(fh, 100) if any(c in mode for c in "wax") else fh

    monkeypatch.setattr(core_io, "open", filling_open, raising=False)


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def test_a_full_disk_skips_the_corpus_cache_with_a_warning_and_returns_the_corpus(
    tmp_path, cache_dir, caplog, full_disk
):
    f = _corpus(tmp_path, "mini.txt", TEXT_A)
    fresh = C.load_corpus(f, cache=False)
    with caplog.at_level(logging.WARNING):
        got = C.load_corpus(f)
    assert got == fresh and got[0] == ["niño", "habló", "niña"]
    (msg,) = [m for m in _warnings(caplog, C.__name__) if "could not write" in m]
    assert "mini.txt-" in msg and str(cache_dir / "corpus") in msg and "no space left" in msg
    assert _leftovers(cache_dir / "corpus") == []  # no partial file, no temporary file


def test_a_full_disk_skips_the_word2vec_cache_with_a_warning_and_returns_the_model(
    cache_dir, caplog, full_disk
):
    fresh = train_word2vec(SENTENCES, **W2V, cache=False)
    with caplog.at_level(logging.WARNING):
        got = train_word2vec(SENTENCES, **W2V)
    assert got.vectors.tobytes() == fresh.vectors.tobytes()
    (msg,) = _warnings(caplog, "biaskit.embeddings.vectors")
    assert "could not write the word2vec cache" in msg and str(cache_dir / "word2vec") in msg
    assert _leftovers(cache_dir / "word2vec") == []


def test_a_full_disk_skips_the_slot_cache_with_a_warning(tmp_path, caplog, full_disk):
    path = tmp_path / "slots" / "0123456789abcdef0123.npz"
    with caplog.at_level(logging.WARNING):
        assert slot_cache.write_slot_cache(path, np.zeros((2, 3, 4)), np.ones((2, 4))) is False
    (msg,) = _warnings(caplog, slot_cache.__name__)
    assert str(path) in msg and "could not be written" in msg
    assert _leftovers(path.parent) == []


@pytest.mark.slow
def test_a_full_disk_stops_appending_to_the_score_cache_with_a_warning(
    cache_dir, caplog, monkeypatch, one_torch_thread
):
    from biaskit import lm as lms
    from biaskit.lm import cache as lm_cache
    from biaskit.lm import tiny_masked_lm

    lm = tiny_masked_lm(seed=7)
    sentences = [f"the {w} said {p} would come ." for w in ("nurse", "pilot", "cook") for p in ("he", "she")]
    kw = {"progress": False, "chunk_size": 2}  # the same batches in every run: the same bits
    fresh = lms.score_sentences(lm, sentences, cache=False, **kw)
    real_fdopen = os.fdopen
    with monkeypatch.context() as m, caplog.at_level(logging.WARNING):
        m.setattr(lm_cache.os, "fdopen", lambda *a, **k: _FillingFile(real_fdopen(*a, **k), 3000))
        got = lms.score_sentences(lm, sentences, **kw)
    assert got.cache_path is not None and got.cache_path.parent.parent.parent == cache_dir
    pd.testing.assert_frame_equal(got.scores, fresh.scores, check_exact=True)
    msgs = _warnings(caplog, lm_cache.__name__)
    assert len(msgs) == 1 and str(got.cache_path) in msgs[0] and "not cached" in msgs[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING):  # the half record at the end is found and dropped, then rescored
        again = lms.score_sentences(lm, sentences, **kw)
    pd.testing.assert_frame_equal(again.scores, fresh.scores, check_exact=True)
    assert 0 < again.n_cached < len(sentences)  # the records written before the disk filled are used
    (msg,) = _warnings(caplog, lm_cache.__name__)
    assert str(got.cache_path) in msg and "truncated" in msg


SCORE_TEXT = "the nurse said she would come .\nthe pilot said he would come .\n"


def _score(out: str | Path, text: Path) -> list[str]:
    return ["score", "tiny", str(text), "--metric", "sz", "--no-progress", "--out", str(out)]


def test_score_out_on_a_full_disk_names_the_file_and_leaves_no_partial_csv(tmp_path, capsys, full_disk):
    from biaskit.__main__ import main

    text = _corpus(tmp_path, "s.txt", SCORE_TEXT)
    out = tmp_path / "out" / "scores.csv"
    out.parent.mkdir()
    out.write_text("the earlier run's CSV\n", encoding="utf-8")
    assert main(_score(out, text)) == 1
    err = capsys.readouterr().err
    assert f"no space left to write {out}" in err
    assert out.read_text(encoding="utf-8") == "the earlier run's CSV\n"  # left as it was
    assert _leftovers(out.parent) == ["scores.csv"]  # no temporary file


def test_score_out_writes_the_same_bytes_as_pandas(tmp_path, capsys):
    from biaskit.__main__ import main
    from biaskit.lm import get_lm, score_sentences

    text = _corpus(tmp_path, "s.txt", SCORE_TEXT)
    out = tmp_path / "scores.csv"
    assert main(_score(out, text)) == 0
    res = score_sentences(get_lm("tiny"), C.read_lines(text), "sz", progress=False)
    res.scores.to_csv(tmp_path / "direct.csv", index=False)
    assert out.read_bytes() == (tmp_path / "direct.csv").read_bytes()
    assert _leftovers(tmp_path) == ["direct.csv", "s.txt", "scores.csv"]


@pytest.mark.parametrize("fix", ["an --out in the current folder", "move the file away"])
def test_score_out_below_a_file_is_refused_before_scoring_and_the_fix_works(
    tmp_path, monkeypatch, capsys, fix
):
    from biaskit import lm as lms
    from biaskit.__main__ import main

    text = _corpus(tmp_path, "s.txt", SCORE_TEXT)
    afile = tmp_path / "afile"
    afile.write_text("not a folder\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)

    def no_scoring(*args: object, **kwargs: object) -> None:
        raise AssertionError("scored before checking --out")

    with monkeypatch.context() as m:
        m.setattr(lms, "get_lm", no_scoring)
        assert main(_score("afile/x.csv", text)) == 1
    err = capsys.readouterr().err
    assert "--out afile/x.csv: afile is a file, not a folder, so x.csv cannot be written there" in err
    if fix == "an --out in the current folder":
        assert "e.g. --out x.csv in the current folder" in err
        assert main(_score("x.csv", text)) == 0
        assert pd.read_csv(tmp_path / "x.csv")["sentence"].tolist() == SCORE_TEXT.splitlines()
    else:
        assert "or move afile away" in err
        afile.rename(tmp_path / "elsewhere")
        assert main(_score("afile/x.csv", text)) == 0
        assert (tmp_path / "afile" / "x.csv").is_file()


def test_score_out_that_is_a_folder_is_refused_before_scoring(tmp_path, monkeypatch, capsys):
    from biaskit import lm as lms
    from biaskit.__main__ import main

    text = _corpus(tmp_path, "s.txt", SCORE_TEXT)
    monkeypatch.setattr(lms, "get_lm", lambda *a, **k: pytest.fail("scored before checking --out"))
    assert main(_score(tmp_path, text)) == 1
    assert f"--out {tmp_path} is a folder; give a file name, e.g. --out {tmp_path / 'scores.csv'}" in (
        capsys.readouterr().err
    )


def test_results_json_and_figures_are_written_whole_or_not_at_all(tmp_path, full_disk):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from biaskit.report.notebook_output import save_figure, save_results

    (tmp_path / "r.json").write_text("{}", encoding="utf-8")
    with pytest.raises(DiskFullError, match=re.escape(f"no space left to write {tmp_path / 'r.json'}")):
        save_results("r", {"x": list(range(100))}, out_dir=tmp_path)
    fig, ax = plt.subplots()
    ax.plot([1, 2, 3])
    real_savefig = fig.savefig

    def savefig_on_a_full_disk(fname: Any, **kwargs: Any) -> None:
        real_savefig(fname, **kwargs)  # the whole PNG, then the disk fills, as matplotlib would report it
        with open(fname, "r+b") as fh:
            fh.truncate(100)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(fname))

    fig.savefig = savefig_on_a_full_disk
    (tmp_path / "f.png").write_bytes(b"the earlier figure")
    with pytest.raises(DiskFullError, match=re.escape(f"no space left to write {tmp_path / 'f.png'}")):
        save_figure(fig, "f", out_dir=tmp_path, show=False)
    plt.close(fig)
    assert _leftovers(tmp_path) == ["f.png", "r.json"]  # no partial file, no temporary file
    assert (tmp_path / "r.json").read_text() == "{}" and (
        tmp_path / "f.png"
    ).read_bytes() == b"the earlier figure"


# ------------------------------------------------------------------------------------ (e) the cache folder
@pytest.fixture
def umask_000():
    old = os.umask(0)
    yield
    os.umask(old)


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_the_cache_folder_is_created_private_whatever_the_umask(tmp_path, monkeypatch, umask_000):
    monkeypatch.setenv("BIASKIT_CACHE_DIR", str(tmp_path / "new" / "cache"))
    path = cache_dir()
    assert path == tmp_path / "new" / "cache"
    assert stat.S_IMODE(path.stat().st_mode) == 0o700
    f = _corpus(tmp_path, "mini.txt", TEXT_A)
    C.load_corpus(f)
    written = _only_cache_file(path / "corpus", "mini.txt-*.json.gz")
    for p in (written, written.with_name(written.name + ".sha256")):
        assert stat.S_IMODE(p.stat().st_mode) == 0o600
    assert C.load_corpus(f) == C.load_corpus(f, cache=False)


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_a_cache_folder_others_can_write_is_refused_and_the_fix_in_the_message_works(tmp_path, monkeypatch):
    folder = tmp_path / "shared"
    folder.mkdir()
    os.chmod(folder, 0o777)
    monkeypatch.setenv("BIASKIT_CACHE_DIR", str(folder))
    monkeypatch.delenv(SHARED_CACHE_ENV, raising=False)
    with pytest.raises(UnsafeCacheError, match="writable by everyone") as info:
        cache_dir()
    fix = re.search(r"Fix: `([^`]+)`", str(info.value))
    assert fix is not None and fix.group(1) == f"chmod 700 {folder}"
    subprocess.run(shlex.split(fix.group(1)), check=True)  # the fix, as the message gives it
    assert cache_dir() == folder


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_a_shared_cache_is_accepted_when_declared(tmp_path, monkeypatch):
    folder = tmp_path / "team"
    folder.mkdir()
    os.chmod(folder, 0o770)
    monkeypatch.setenv("BIASKIT_CACHE_DIR", str(folder))
    with pytest.raises(UnsafeCacheError, match="BIASKIT_SHARED_CACHE=1"):
        cache_dir()
    monkeypatch.setenv(SHARED_CACHE_ENV, "1")
    assert cache_dir() == folder
    f = _corpus(tmp_path, "mini.txt", TEXT_A)
    assert C.load_corpus(f) == C.load_corpus(f, cache=False)  # written, then read back, checksum checked


def test_a_relative_cache_folder_starts_from_the_callers_folder(tmp_path, monkeypatch):
    caller = tmp_path / "caller"
    caller.mkdir()
    monkeypatch.chdir(tmp_path)  # the working folder is elsewhere, as in a notebook kernel
    monkeypatch.setenv(CALLER_CWD_ENV, str(caller))
    monkeypatch.setenv("BIASKIT_CACHE_DIR", "rel/cache")
    assert cache_dir() == caller / "rel" / "cache"
    assert (caller / "rel" / "cache").is_dir() and not (tmp_path / "rel").exists()


@pytest.mark.slow
def test_the_notebook_command_gives_the_kernel_an_absolute_cache_folder(tmp_path, monkeypatch):
    import papermill

    from biaskit import __main__ as cli

    seen: dict[str, str | None] = {}

    def fake_execute(src: str, dst: str, **kwargs: object) -> None:
        seen["cache"] = os.environ.get("BIASKIT_CACHE_DIR")
        seen["results"] = os.environ.get("BIASKIT_RESULTS_DIR")

    monkeypatch.setattr(papermill, "execute_notebook", fake_execute)
    monkeypatch.delenv(CALLER_CWD_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BIASKIT_CACHE_DIR", "mycache")
    monkeypatch.setenv("BIASKIT_RESULTS_DIR", str(tmp_path / "abs-results"))
    nb = tmp_path / "nbs" / "01_x.ipynb"
    assert cli._execute_notebook(nb, tmp_path / "out" / "01_x.ipynb", {}) == 0
    assert seen == {"cache": str(tmp_path / "mycache"), "results": str(tmp_path / "abs-results")}
    assert os.environ["BIASKIT_CACHE_DIR"] == "mycache"  # restored afterwards
