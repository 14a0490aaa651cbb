"""Build biaskit's distributions, offline: the code wheel and sdist, and the companion data
wheel and sdist ``biaskit-data`` (``make dist``).

Why two distributions: the code is about 0.5 MB, the bundled files (``data/`` with the small
trained models, ``wordlists/``, the numbered notebooks and ``experiments/``) about 57 MB.  The data
change far less often than the code and are the same on every platform, so a user who upgrades
biaskit for a fix should not download 57 MB again, and a project that brings its own data (or a
cluster worker that reads ``BIASKIT_DATA_DIR`` from a shared disk) needs no copy at all.
``biaskit-data`` requires ``biaskit`` at exactly its own version and biaskit refuses a
``biaskit-data`` of another version (``biaskit.core.paths.installed_data_root``).

Each build runs in a temporary copy (the repository is never written to, except ``--out``), with
setuptools' PEP 517 hooks and no build isolation, so no network is needed.  Before the data are
packed, every file that a ``PROVENANCE.md`` lists with a sha256 is checked against it (a mismatch
stops the build); ``MANIFEST.json`` then records the size and sha256 of every packed file, which
``biaskit_data.verify()`` checks after installation.

Usage::

    python packaging/build_dists.py [--out dist] [--no-sdist] [--only biaskit|biaskit-data]

Prints one line per file and writes ``<out>/BUILD.json`` (names, sizes, sha256, seconds), which the
documentation reads for its table of sizes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA_PROJECT = ROOT / "packaging" / "biaskit-data"
#: repository folders shipped in biaskit-data, with the files of each that are taken
DATA_FOLDERS: dict[str, str] = {
    "data": "**/*",
    "wordlists": "**/*",
    "notebooks": "[0-9][0-9]_*.ipynb",
    "experiments": "*.yaml",
}
_HEX = re.compile(r"\b[0-9a-f]{64}\b")
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints", "*.egg-info")


def biaskit_version() -> str:
    """``__version__`` of ``biaskit/__init__.py``; it must equal pyproject's ``version``."""
    init = (ROOT / "biaskit" / "__init__.py").read_text(encoding="utf-8")
    m = re.search(r'^__version__\s*=\s*"([^"]+)"', init, re.M)
    if not m:
        raise SystemExit("biaskit/__init__.py has no __version__")
    meta = re.search(r'^version\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M)
    if not meta or meta.group(1) != m.group(1):
        raise SystemExit(f"pyproject.toml's version {meta and meta.group(1)!r} != biaskit.__version__ {m.group(1)!r}")
    return m.group(1)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def provenance_hashes(root: Path = ROOT) -> dict[Path, str]:
    """File -> sha256 as recorded in the tables of every ``PROVENANCE.md`` under ``data/`` and
    ``wordlists/``: a table row whose last cell holds a sha256 and whose first cell names a file
    (relative to the ``PROVENANCE.md``, or a file name found once below it).  Rows naming a file
    that is not bundled (e.g. "not copied: = ...") are skipped."""
    found: dict[Path, str] = {}
    for prov in sorted([*(root / "data").rglob("PROVENANCE.md"), *(root / "wordlists").rglob("PROVENANCE.md")]):
        folder = prov.parent
        for line in prov.read_text(encoding="utf-8").splitlines():
            if not line.startswith("|"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            hexes = _HEX.findall(cells[-1])
            name = cells[0].strip("`* ")
            if not hexes or not name:
                continue
            path = folder / name
            if not path.is_file():
                matches = [p for p in folder.rglob(Path(name).name) if p.is_file()]
                if len(matches) != 1:
                    continue
                path = matches[0]
            found[path.resolve()] = hexes[-1]
    return found


def check_provenance(root: Path = ROOT) -> tuple[int, int]:
    """Every file a ``PROVENANCE.md`` lists with a sha256 has that sha256; ``(checked, bundled files)``.
    Raises ``SystemExit`` naming the files that differ."""
    recorded = provenance_hashes(root)
    bad = [str(p.relative_to(root)) for p, h in recorded.items() if sha256(p) != h]
    if bad:
        raise SystemExit(
            f"{len(bad)} bundled file(s) differ from the sha256 in their PROVENANCE.md: {', '.join(bad[:10])} "
            "(update the PROVENANCE.md with the new file's source and sha256, or restore the file)"
        )
    total = sum(1 for folder in ("data", "wordlists") for p in (root / folder).rglob("*") if p.is_file())
    return len(recorded), total


def data_files(root: Path = ROOT) -> list[tuple[str, Path]]:
    """``(path inside biaskit_data, source file)`` of every file biaskit-data ships, sorted."""
    out = []
    for folder, pattern in DATA_FOLDERS.items():
        for p in sorted((root / folder).glob(pattern)):
            if p.is_file() and "__pycache__" not in p.parts and ".ipynb_checkpoints" not in p.parts:
                out.append((f"{folder}/{p.relative_to(root / folder).as_posix()}", p))
    return out


def _pep517(project: Path, hook: str, out: Path) -> Path:
    """Run setuptools' PEP 517 ``hook`` (build_wheel / build_sdist) in ``project``, without isolation."""
    code = f"from setuptools import build_meta as b; print(b.{hook}({str(out)!r}))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=project, capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise SystemExit(f"{hook} failed in {project}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return out / done.stdout.strip().splitlines()[-1]


def stage_biaskit(dest: Path) -> Path:
    """A copy of what the code distribution is built from: pyproject, README, LICENSE, biaskit/."""
    dest.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, dest / name)
    shutil.copytree(ROOT / "biaskit", dest / "biaskit", ignore=_IGNORE)
    return dest


def stage_data(dest: Path, version: str) -> tuple[Path, int]:
    """packaging/biaskit-data with the bundled files, the version, the pin on biaskit and the manifest."""
    shutil.copytree(DATA_PROJECT, dest, ignore=_IGNORE)
    pkg = dest / "src" / "biaskit_data"
    init = pkg / "__init__.py"
    text, n = re.subn(r'^__version__ = "[^"]*"', f'__version__ = "{version}"', init.read_text("utf-8"), flags=re.M)
    if n != 1:
        raise SystemExit(f"{init} has no __version__ line to set")
    init.write_text(text, encoding="utf-8")
    (dest / "requirements.txt").write_text(f"biaskit=={version}\n", encoding="utf-8")
    files = {}
    for rel, src in data_files():
        target = pkg / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
        files[rel] = {"size": src.stat().st_size, "sha256": sha256(src)}
    manifest = {"distribution": "biaskit-data", "version": version, "files": files}
    (pkg / "MANIFEST.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return dest, len(files)


def build(out: Path, *, sdist: bool = True, only: str | None = None) -> dict:
    """Build the distributions into ``out``; returns (and writes to ``out/BUILD.json``) the record."""
    version = biaskit_version()
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    record: dict = {"version": version, "files": []}
    with tempfile.TemporaryDirectory(prefix="biaskit-dist-") as tmp:
        projects: list[tuple[str, Path]] = []
        if only in (None, "biaskit"):
            projects.append(("biaskit", stage_biaskit(Path(tmp) / "biaskit")))
        if only in (None, "biaskit-data"):
            checked, total = check_provenance()
            record["provenance_checked"] = checked
            record["bundled_files"] = total
            project, n = stage_data(Path(tmp) / "biaskit-data", version)
            record["data_files"] = n
            projects.append(("biaskit-data", project))
        for dist, project in projects:
            for hook in ("build_wheel", "build_sdist") if sdist else ("build_wheel",):
                t0 = time.perf_counter()
                path = _pep517(project, hook, out)
                record["files"].append(
                    {
                        "distribution": dist,
                        "kind": "wheel" if hook == "build_wheel" else "sdist",
                        "file": path.name,
                        "bytes": path.stat().st_size,
                        "sha256": sha256(path),
                        "seconds": round(time.perf_counter() - t0, 2),
                    }
                )
    (out / "BUILD.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "dist"), help="folder of the built files (default: dist/)")
    parser.add_argument("--no-sdist", action="store_true", help="wheels only")
    parser.add_argument("--only", choices=("biaskit", "biaskit-data"), default=None)
    args = parser.parse_args(argv)
    record = build(Path(args.out), sdist=not args.no_sdist, only=args.only)
    for f in record["files"]:
        print(f"{f['file']}: {f['bytes'] / 1e6:.2f} MB ({f['seconds']:.1f} s)")
    if "provenance_checked" in record:
        print(
            f"biaskit-data: {record['data_files']} files; {record['provenance_checked']} of the "
            f"{record['bundled_files']} files under data/ and wordlists/ match the sha256 of their PROVENANCE.md"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
