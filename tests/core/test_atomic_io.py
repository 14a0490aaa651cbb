"""The shared write and cache-verification helpers of ``biaskit.core.io`` and the private cache folder.

Every write biaskit makes goes through :func:`atomic_write` / :func:`atomic_path`: a unique temporary
name in the target folder, then ``os.replace``.  These tests check what a user relies on: the target is
either the old file or the whole new one, parallel writers never collide, a full disk names the file
and leaves nothing behind, and a cache file is used only when its sidecar names it, its key and its
sha256.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import threading
from pathlib import Path

import pytest

from biaskit.core import io as bio
from biaskit.core.paths import UnsafeCacheError, cache_dir


def _leftovers(folder: Path, name: str) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != name and not p.name.endswith(".sha256"))


def test_atomic_write_replaces_the_whole_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.csv"
    target.write_text("old\n", encoding="utf-8")
    with bio.atomic_write(target) as fh:
        fh.write("a,b\n1,2\n")
        # until the block ends, the reader still sees the old file
        assert target.read_text(encoding="utf-8") == "old\n"
    assert target.read_text(encoding="utf-8") == "a,b\n1,2\n"
    assert _leftovers(tmp_path, "out.csv") == []


def test_a_failure_inside_the_block_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "results.json"
    target.write_text('{"a": 1}', encoding="utf-8")
    with pytest.raises(RuntimeError, match="boom"):
        with bio.atomic_write(target) as fh:
            fh.write('{"a": 2, "b": ')
            raise RuntimeError("boom")
    assert json.loads(target.read_text(encoding="utf-8")) == {"a": 1}
    assert _leftovers(tmp_path, "results.json") == []


def test_atomic_path_keeps_the_suffix_for_writers_that_choose_a_format_by_name(tmp_path: Path) -> None:
    import numpy as np

    target = tmp_path / "arrays.npz"
    with bio.atomic_path(target) as tmp:
        assert tmp.suffix == ".npz" and tmp.parent == tmp_path and tmp != target
        np.savez(tmp, x=np.arange(3))
    with np.load(target, allow_pickle=False) as z:
        assert z["x"].tolist() == [0, 1, 2]
    assert _leftovers(tmp_path, "arrays.npz") == []


def test_new_files_follow_the_umask_and_private_files_are_0600(tmp_path: Path) -> None:
    public, private = tmp_path / "public.txt", tmp_path / "private.txt"
    bio.atomic_write_text(public, "x")
    bio.atomic_write_text(private, "x", private=True)
    assert stat.S_IMODE(public.stat().st_mode) == 0o666 & ~bio._current_umask()
    assert stat.S_IMODE(private.stat().st_mode) == 0o600


def test_a_full_disk_names_the_file_and_the_bytes_and_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "scores.csv"
    target.write_text("previous\n", encoding="utf-8")
    real_fsync = os.fsync

    def no_space(fd: int) -> None:
        real_fsync(fd)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(bio.os, "fsync", no_space)
    payload = b"x" * 5000
    with pytest.raises(bio.DiskFullError) as info:
        bio.atomic_write_bytes(target, payload)
    msg = str(info.value)
    assert str(target) in msg and "5,000 bytes" in msg and "free some space" in msg
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(target)
    assert target.read_text(encoding="utf-8") == "previous\n"
    assert _leftovers(tmp_path, "scores.csv") == []


def test_parallel_writers_never_collide(tmp_path: Path) -> None:
    """Eight threads write the same file and its sidecar 25 times each; a reader never sees a partial file."""
    target = tmp_path / "corpus.json"
    errors: list[BaseException] = []
    seen_bad: list[str] = []
    stop = threading.Event()

    def writer(i: int) -> None:
        try:
            for k in range(25):
                text = json.dumps({"writer": i, "round": k, "pad": "y" * 2000})
                bio.atomic_write_text(target, text, private=True)
                bio.write_cache_checksum(target, key="same-key")
        except BaseException as exc:
            errors.append(exc)

    def reader() -> None:
        while not stop.is_set():
            try:
                json.loads(target.read_text(encoding="utf-8"))
            except FileNotFoundError:
                continue
            except ValueError as exc:
                seen_bad.append(str(exc))

    r = threading.Thread(target=reader)
    r.start()
    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    r.join()
    assert errors == [] and seen_bad == []
    assert _leftovers(tmp_path, "corpus.json") == []
    # a sidecar never vouches for another key; rewritten after the race, it vouches for the file
    assert bio.cache_file_problem(target, key="other-key") is not None
    bio.write_cache_checksum(target, key="same-key")
    assert bio.cache_file_problem(target, key="same-key") is None


def _cache_file(folder: Path, name: str, text: str, key: str) -> Path:
    path = folder / name
    bio.atomic_write_text(path, text, private=True)
    bio.write_cache_checksum(path, key)
    return path


def test_a_sound_cache_file_is_accepted_and_its_sidecar_records_name_key_sha_size(tmp_path: Path) -> None:
    path = _cache_file(tmp_path, "a.json", "[1, 2, 3]", "key-a")
    assert bio.cache_file_problem(path, "key-a") is None
    record = json.loads(bio.checksum_sidecar(path).read_text(encoding="utf-8"))
    assert record == {
        "format": bio.CACHE_SIDECAR_FORMAT,
        "file": "a.json",
        "key": "key-a",
        "sha256": hashlib.sha256(b"[1, 2, 3]").hexdigest(),
        "size": 9,
    }


def test_files_swapped_together_with_their_sidecars_are_refused(tmp_path: Path) -> None:
    a = _cache_file(tmp_path, "a.json", '["sentences of a"]', "key-a")
    b = _cache_file(tmp_path, "b.json", '["sentences of b"]', "key-b")
    a_bytes, a_side = a.read_bytes(), bio.checksum_sidecar(a).read_bytes()
    a.write_bytes(b.read_bytes())
    bio.checksum_sidecar(a).write_bytes(bio.checksum_sidecar(b).read_bytes())
    assert "another file" in bio.cache_file_problem(a, "key-a")
    # same file name in another cache folder, same name, other key
    b.write_bytes(a_bytes)
    side = json.loads(a_side)
    side["file"] = "b.json"
    bio.checksum_sidecar(b).write_text(json.dumps(side), encoding="utf-8")
    assert "another cache entry" in bio.cache_file_problem(b, "key-b")


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        ("flip", "sha256"),
        ("truncate", "size"),
        ("no-sidecar", "no checksum file"),
        ("old-sidecar", "earlier biaskit"),
        ("garbled-sidecar", "unreadable"),
        ("world-writable", "writable by everyone"),
        ("group-writable", "writable by other users"),
    ],
)
def test_a_damaged_cache_file_is_refused_with_its_reason(tmp_path: Path, damage: str, reason: str) -> None:
    path = _cache_file(tmp_path, "c.json", '{"values": [0.25, 0.5]}', "k")
    side = bio.checksum_sidecar(path)
    if damage == "flip":
        path.write_text('{"values": [0.35, 0.5]}', encoding="utf-8")
    elif damage == "truncate":
        path.write_text('{"values": [0.25', encoding="utf-8")
    elif damage == "no-sidecar":
        side.unlink()
    elif damage == "old-sidecar":  # the plain "<sha256>  <name>" line of the format before
        side.write_text(f"{bio.sha256_file(path)}  c.json\n", encoding="utf-8")
    elif damage == "garbled-sidecar":
        side.write_bytes(b"\xff\xfe{")
    elif damage == "world-writable":
        os.chmod(path, 0o666)
    elif damage == "group-writable":
        os.chmod(path, 0o660)
    problem = bio.cache_file_problem(path, "k")
    assert problem is not None and reason in problem


def test_the_cache_folder_is_created_private_whatever_the_umask(tmp_path: Path, monkeypatch) -> None:
    folder = tmp_path / "fresh" / "cache"
    monkeypatch.setenv("BIASKIT_CACHE_DIR", str(folder))
    old = os.umask(0)
    try:
        assert cache_dir() == folder
    finally:
        os.umask(old)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_a_world_writable_cache_folder_is_refused_and_the_hint_works(tmp_path: Path, monkeypatch) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    os.chmod(folder, 0o777)
    monkeypatch.setenv("BIASKIT_CACHE_DIR", str(folder))
    monkeypatch.delenv("BIASKIT_SHARED_CACHE", raising=False)
    with pytest.raises(UnsafeCacheError, match=r"writable by everyone \(mode 777\)") as info:
        cache_dir()
    assert f"chmod 700 {folder}" in str(info.value)
    os.chmod(folder, 0o700)  # the fix the message names
    assert cache_dir() == folder


def test_a_shared_cache_is_accepted_only_when_declared(tmp_path: Path, monkeypatch) -> None:
    folder = tmp_path / "team"
    folder.mkdir()
    os.chmod(folder, 0o770)
    monkeypatch.setenv("BIASKIT_CACHE_DIR", str(folder))
    monkeypatch.delenv("BIASKIT_SHARED_CACHE", raising=False)
    with pytest.raises(UnsafeCacheError, match="BIASKIT_SHARED_CACHE=1"):
        cache_dir()
    monkeypatch.setenv("BIASKIT_SHARED_CACHE", "1")
    assert cache_dir() == folder
    # a group-writable file of the shared cache is accepted; one everyone can write never is
    path = _cache_file(folder, "f.json", "[]", "k")
    os.chmod(path, 0o660)
    assert bio.cache_file_problem(path, "k") is None
    os.chmod(path, 0o666)
    assert "writable by everyone" in bio.cache_file_problem(path, "k")


def test_a_folder_everyone_can_write_is_refused_even_when_declared_shared(
    tmp_path: Path, monkeypatch
) -> None:
    folder = tmp_path / "open"
    folder.mkdir()
    os.chmod(folder, 0o777)
    monkeypatch.setenv("BIASKIT_CACHE_DIR", str(folder))
    monkeypatch.setenv("BIASKIT_SHARED_CACHE", "1")
    with pytest.raises(UnsafeCacheError, match="writable by everyone") as info:
        cache_dir()
    assert "SHARED_CACHE" not in str(info.value).split("Fix:")[1]  # no hint the user already followed
    os.chmod(folder, 0o2770)  # the fix for a team's shared cache
    assert cache_dir() == folder


def test_a_relative_cache_folder_starts_from_the_callers_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BIASKIT_CALLER_CWD", str(tmp_path / "user"))
    monkeypatch.setenv("BIASKIT_CACHE_DIR", "mycache")
    assert cache_dir() == tmp_path / "user" / "mycache"
    assert (tmp_path / "user" / "mycache").is_dir()
