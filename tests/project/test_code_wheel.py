"""The code wheel alone, without biaskit-data, offline: everything imports and the user's own data work.

The code wheel is built and installed with ``pip --no-index --no-deps`` into a fresh virtual environment
whose third-party packages come from the project's environment (``tests/wheel_support.py``, shared with
``tests/project/test_install.py``; the editable install's finder stays inert).  ``biaskit_data`` is not there.
``make test-install`` does the same from the package index (``scripts/test_install.py``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from wheel_support import build_wheels, install_into_fresh_venv

ROOT = Path(__file__).resolve().parents[2]
DATA_WHEEL = "biaskit_data-{version}-py3-none-any.whl"


def _run(cmd: list[str], env: dict[str, str], cwd: Path, expect: int = 0) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == expect, (
        f"{cmd}: {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done


@pytest.fixture(scope="module")
def code_only(tmp_path_factory: pytest.TempPathFactory) -> dict:
    base = tmp_path_factory.mktemp("code-wheel")
    record = build_wheels(base / "dist", "--only", "biaskit")
    fresh = install_into_fresh_venv(base, [base / "dist" / record["files"][0]["file"]])
    return {
        "python": str(fresh.python),
        "env": fresh.env,
        "work": fresh.work,
        "venv": fresh.venv,
        "version": record["version"],
    }


@pytest.mark.slow
def test_every_module_imports_without_the_data_wheel(code_only):
    code = (
        "import importlib, json, pkgutil, biaskit\n"
        "bad = {}\n"
        "for m in pkgutil.walk_packages(biaskit.__path__, 'biaskit.'):\n"
        "    try:\n"
        "        importlib.import_module(m.name)\n"
        "    except Exception as exc:\n"
        "        bad[m.name] = f'{type(exc).__name__}: {exc}'\n"
        "print(json.dumps({'file': biaskit.__file__, 'bad': bad}))\n"
    )
    out = json.loads(_run([code_only["python"], "-c", code], code_only["env"], code_only["work"]).stdout)
    assert out["file"].startswith(str(code_only["venv"])), out["file"]
    assert out["bad"] == {}


@pytest.mark.slow
def test_commands_without_the_data_wheel(code_only):
    py, env, work = code_only["python"], code_only["env"], code_only["work"]
    version = _run([py, "-m", "biaskit", "--version"], env, work).stdout
    assert version.startswith(f"biaskit {code_only['version']} ") and "biaskit-data not installed" in version
    table = _run([py, "-m", "biaskit", "metrics"], env, work).stdout
    assert "citation" in table.splitlines()[1] and "Caliskan et al. 2017" in table
    # the notebooks are in the data wheel: the error names it, as a file make dist builds, and no traceback
    done = _run([py, "-m", "biaskit", "notebooks", "x"], env, work, expect=1)
    wheel = DATA_WHEEL.format(version=code_only["version"])
    assert f"`pip install dist/{wheel}`" in done.stderr and "make dist" in done.stderr
    assert "Traceback" not in done.stderr and not (work / "x").exists()
    # a published table is read where it is used, and its absence is explained the same way
    done = _run([py, "-c", "from biaskit.metrics.weat import CALISKAN_2017_TABLE1"], env, work, expect=1)
    assert "BundledDataMissing" in done.stderr and f"pip install dist/{wheel}" in done.stderr


@pytest.mark.slow
def test_weat_on_ones_own_vector_file(code_only):
    """WEAT (Caliskan et al. 2017) on a five-dimensional text file of eight words: d and the exact
    permutation p-value equal a computation by hand (s(w) = mean cos(w, A) - mean cos(w, B);
    d = (mean s(X) - mean s(Y)) / sd(s(X u Y)) with ddof = 1; p over all 6 splits of X u Y, one-sided)."""
    rng = np.random.default_rng(7)
    words = ["rose", "tulip", "spider", "moth", "love", "peace", "hate", "war"]
    vecs = rng.normal(size=(len(words), 5)).round(4)
    lines = [f"{len(words)} 5"] + [
        w + " " + " ".join(f"{x:.4f}" for x in v) for w, v in zip(words, vecs, strict=True)
    ]
    (code_only["work"] / "mine.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code = (
        "import json\n"
        "from biaskit.embeddings.vectors import load_vectors\n"
        "from biaskit.metrics.weat import weat\n"
        "r = weat(['rose', 'tulip'], ['spider', 'moth'], ['love', 'peace'], ['hate', 'war'], "
        "load_vectors('mine.txt'))\n"
        "print(json.dumps({'d': r.effect_size, 'p': r.p_value}))\n"
    )
    got = json.loads(_run([code_only["python"], "-c", code], code_only["env"], code_only["work"]).stdout)
    unit = {w: v / np.linalg.norm(v) for w, v in zip(words, vecs, strict=True)}
    s = {
        w: np.mean([unit[w] @ unit[a] for a in ("love", "peace")])
        - np.mean([unit[w] @ unit[b] for b in ("hate", "war")])
        for w in words[:4]
    }
    d = (np.mean([s["rose"], s["tulip"]]) - np.mean([s["spider"], s["moth"]])) / np.std(
        list(s.values()), ddof=1
    )
    stat = s["rose"] + s["tulip"] - s["spider"] - s["moth"]
    splits = [(a, b) for a in range(4) for b in range(a + 1, 4)]
    targets = words[:4]
    stats = [
        sum(s[targets[i]] for i in (a, b)) - sum(s[targets[i]] for i in range(4) if i not in (a, b))
        for a, b in splits
    ]
    p = np.mean([x >= stat - 1e-12 for x in stats])
    assert got["d"] == pytest.approx(d, abs=1e-6)
    assert got["p"] == pytest.approx(p, abs=1e-12)
