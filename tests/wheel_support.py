"""Wheels built from this checkout and installed into a fresh virtual environment, for the install tests.

``tests/project/test_install.py`` (both wheels) and ``tests/project/test_code_wheel.py`` (the code wheel
alone) build with ``packaging/build_dists.py`` and install with ``pip --no-index --no-deps`` into a venv
outside the repository.  The venv's third-party packages come from the project's environment through a
plain path line (``biaskit-test-dependencies.pth``): the environment's own ``.pth`` files, the editable
install's finder among them, stay unread, so ``biaskit`` is imported from the new environment.
``make test-install`` does the same from the package index (``scripts/test_install.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def build_wheels(out: Path, *options: str) -> dict[str, Any]:
    """``packaging/build_dists.py --out OUT --no-sdist OPTIONS``; returns its ``BUILD.json``."""
    build = subprocess.run(
        [
            sys.executable,
            str(ROOT / "packaging" / "build_dists.py"),
            "--out",
            str(out),
            "--no-sdist",
            *options,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    return json.loads((out / "BUILD.json").read_text(encoding="utf-8"))


@dataclass
class FreshVenv:
    """A venv with the wheels installed: its interpreter, folder, site-packages, environment and an empty
    working folder of its own."""

    python: Path
    venv: Path
    site: Path
    env: dict[str, str]
    work: Path


def install_into_fresh_venv(base: Path, wheels: Sequence[Path], **env_extra: str) -> FreshVenv:
    """A new venv under ``base`` with ``wheels`` installed, offline, and an environment for it: this
    process's variables without ``BIASKIT_*``, ``PYTHON*`` and ``JUPYTER*``, offline Hugging Face, the Agg
    backend, a cache under ``base``, the venv first on ``PATH``, and ``env_extra``."""
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    # the project's dependencies, as a plain path line (its .pth files, the editable finder among them, stay
    # unread)
    (site / "biaskit-test-dependencies.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BIASKIT_", "PYTHON", "JUPYTER"))}
    env.update(
        HF_HUB_OFFLINE="1",
        MPLBACKEND="Agg",
        BIASKIT_CACHE_DIR=str(base / "cache"),
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        VIRTUAL_ENV=str(venv),
        **env_extra,
    )
    work = base / "work"
    work.mkdir()
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "--python",
        str(python),
        "install",
        "--no-index",
        "--no-deps",
        "--quiet",
    ]
    done = subprocess.run(
        [*cmd, *map(str, wheels)], cwd=work, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, f"{cmd}: {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return FreshVenv(python=python, venv=venv, site=site, env=env, work=work)
