"""``make test-install``: what a new user gets from ``pip install``, in a fresh environment, from the index.

The README's path outside the repository, run literally:

1. ``make dist`` builds the code wheel and the data wheel (``dist/``);
2. a fresh virtual environment (``python3.11 -m venv``: no system site packages, nothing of the development
   environment) gets torch's CPU build first (``--index-url https://download.pytorch.org/whl/cpu``; where
   that index cannot be reached, the ``torch==<version of the Makefile>`` that pip's own configuration
   resolves), then ``pip install "dist/biaskit-<v>-py3-none-any.whl[notebooks]" dist/biaskit_data-<v>-...``
   with every other dependency resolved from the package index by pip;
3. in a folder outside the repository, with a fresh home folder (so a fresh biaskit cache): ``pip check``
   must report nothing; ``python -m biaskit --version``; the README quickstart
   (``docs/examples/quickstart.py``); ``python -m biaskit notebooks my-biaskit``; ``jupyter lab --version``;
   a notebook that needs reference vectors stops before its kernel starts and names
   ``python -m biaskit fetch reference-vectors``; that command; then notebooks 00, 03 and 05 with
   ``-p quick True`` under plain ``papermill`` and under ``python -m biaskit notebook``, their JSON results
   landing in the user's folder; and nothing is written into ``site-packages`` meanwhile (a listing of its
   files, sizes and times before and after; the ``.pyc`` files Python itself caches are counted apart);
4. the code wheel alone, in a second fresh environment: ``pip check``, ``python -m biaskit metrics``, every
   module imports (those needing an extra name it), ``python -m biaskit notebooks x`` says which wheel to
   install, and a WEAT on the user's own tiny vector file matches a computation by hand.

Exit status: 0 when everything passed, 1 on the first failure (its output is shown), and **77 (SKIP)**
when the package index cannot be reached (nothing is tested then; the message says so).  ``make``
reports the 77 as ``Error 77``.  Prints the wall time of each step, the size of each environment and
``pip check``'s output, and writes them to ``--record`` (default ``dist/test-install.json``).

Options: ``--keep`` keeps the temporary folder; ``--skip-dist`` uses the wheels already in ``dist/``;
``--only full|code`` runs one of the two environments.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP = 77
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
NOTEBOOKS = ("00_tour", "03_weat", "05_crows_pairs_pll")


class Failed(RuntimeError):
    pass


class Skipped(RuntimeError):
    pass


def log(msg: str) -> None:
    print(f"[test-install] {msg}", flush=True)


class Runner:
    """Runs commands with one environment and records each step's wall time."""

    def __init__(self, env: dict[str, str], record: dict) -> None:
        self.env = env
        self.record = record

    def run(
        self, step: str, cmd: list[str], *, cwd: Path, expect: int = 0, timeout: float = 1800
    ) -> subprocess.CompletedProcess:
        log(f"{step}: {' '.join(cmd)}  (in {cwd})")
        t0 = time.perf_counter()
        try:
            done = subprocess.run(
                cmd, cwd=cwd, env=self.env, capture_output=True, text=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise Failed(f"{step}: no answer after {timeout:.0f} s") from exc
        seconds = round(time.perf_counter() - t0, 1)
        self.record.setdefault("steps", []).append(
            {"step": step, "seconds": seconds, "returncode": done.returncode}
        )
        if done.returncode != expect:
            raise Failed(
                f"{step}: exit status {done.returncode} (expected {expect}) after {seconds} s\n"
                f"--- stdout (end)\n{done.stdout[-6000:]}\n--- stderr (end)\n{done.stderr[-6000:]}"
            )
        log(f"{step}: done in {seconds} s")
        return done


def index_reachable(python: str, tmp: Path) -> str | None:
    """Why the package index cannot be used (None when it can): pip downloads one small wheel biaskit
    fetches later (wefe 1.0.1), through pip's own configuration."""
    cmd = [
        python,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--dest",
        str(tmp),
        "wefe==1.0.1",
    ]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    except subprocess.TimeoutExpired:
        return "pip download did not answer within 300 s"
    if done.returncode:
        return "pip download wefe==1.0.1 failed: " + " | ".join(done.stderr.strip().splitlines()[-2:])
    return None


def cpu_index_reachable() -> bool:
    try:
        with urllib.request.urlopen(f"{CPU_INDEX}/torch/", timeout=20) as r:
            return r.status == 200
    except OSError:
        return False


def makefile_torch() -> str:
    m = re.search(r'install\s+"torch==([^"]+)"', (ROOT / "Makefile").read_text(encoding="utf-8"))
    if not m:
        raise Failed("the Makefile no longer pins torch")
    return m.group(1)


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def site_listing(site: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under site-packages: (size, mtime_ns, sha256 of the first 64 kB)."""
    out = {}
    for p in site.rglob("*"):
        if p.is_file() and not p.is_symlink():
            st = p.stat()
            with open(p, "rb") as fh:
                head = hashlib.sha256(fh.read(65536)).hexdigest()[:16]
            out[p.relative_to(site).as_posix()] = (st.st_size, st.st_mtime_ns, head)
    return out


def compare_listings(before: dict, after: dict) -> dict[str, list[str]]:
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    is_pyc = lambda k: k.endswith(".pyc") and "/__pycache__/" in f"/{k}"  # noqa: E731
    return {
        "added": [k for k in added if not is_pyc(k)],
        "removed": removed,
        "changed": [k for k in changed if not is_pyc(k)],
        "pyc_added": [k for k in added if is_pyc(k)],
    }


def new_env(base: Path, name: str, python: str, record: dict) -> tuple[Path, Path, Runner]:
    """A fresh venv (pip included, no system site packages), its site-packages and a Runner for it."""
    venv = base / name
    t0 = time.perf_counter()
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    record.setdefault("steps", []).append(
        {"step": f"{name}: python -m venv", "seconds": round(time.perf_counter() - t0, 1)}
    )
    py = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    )  # fmt: skip
    home = base / f"{name}-home"
    home.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("BIASKIT_", "PYTHON", "JUPYTER", "VIRTUAL_ENV", "CONDA"))
    }
    env.update(
        HOME=str(home),
        PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        VIRTUAL_ENV=str(venv),
        # pip's download cache is the user's usual one (an empty one would only measure the network)
        PIP_CACHE_DIR=os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip")),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        HF_HUB_OFFLINE="1",  # a bundled model must never be looked for on the hub
        MPLBACKEND="Agg",
        TOKENIZERS_PARALLELISM="false",
    )
    return py, site, Runner(env, record)


def install_torch(r: Runner, py: Path, work: Path, record: dict) -> None:
    if os.environ.get("BIASKIT_TORCH_INDEX"):
        index = os.environ["BIASKIT_TORCH_INDEX"]
    elif cpu_index_reachable():
        index = CPU_INDEX
    else:
        index = ""
    if index:
        record["torch_from"] = index
        r.run("torch (CPU build)", [str(py), "-m", "pip", "install", "torch", "--index-url", index], cwd=work)
    else:
        version = makefile_torch()
        record["torch_from"] = f"torch=={version} through pip's configuration ({CPU_INDEX} unreachable)"
        log(f"{CPU_INDEX} cannot be reached: installing torch=={version} through pip's own configuration")
        r.run("torch (pip's configuration)", [str(py), "-m", "pip", "install", f"torch=={version}"], cwd=work)
    record["torch"] = r.run(
        "torch version", [str(py), "-c", "import torch; print(torch.__version__)"], cwd=work
    ).stdout.strip()


def pip_check(r: Runner, py: Path, work: Path, record: dict, key: str) -> None:
    done = subprocess.run(
        [str(py), "-m", "pip", "check"], cwd=work, env=r.env, capture_output=True, text=True
    )
    record[key] = (done.stdout + done.stderr).strip()
    log(f"pip check: {record[key]}")
    if done.returncode:
        raise Failed(f"pip check reports problems:\n{record[key]}")


def full_install(base: Path, python: str, wheels: dict[str, Path], record: dict) -> None:
    rec: dict = {}
    record["full"] = rec
    py, site, r = new_env(base, "venv-full", python, rec)
    work = base / "user"
    work.mkdir()
    t0 = time.perf_counter()
    install_torch(r, py, work, rec)
    code, data = wheels["biaskit"], wheels["biaskit-data"]
    r.run(
        "pip install biaskit[notebooks] + biaskit-data",
        [str(py), "-m", "pip", "install", f"{code}[notebooks]", str(data)],
        cwd=work,
    )
    rec["install_seconds"] = round(time.perf_counter() - t0, 1)
    rec["venv_bytes"] = du(base / "venv-full")
    freeze = r.run("pip freeze", [str(py), "-m", "pip", "freeze"], cwd=work).stdout
    rec["installed"] = len(freeze.splitlines())
    rec["nvidia_packages"] = sorted(
        line.split("==")[0] for line in freeze.splitlines() if line.lower().startswith("nvidia")
    )
    pip_check(r, py, work, rec, "pip_check")
    before = site_listing(site)

    version = r.run("--version", [str(py), "-m", "biaskit", "--version"], cwd=work).stdout.strip()
    rec["version_line"] = version
    if "biaskit-data" not in version or str(ROOT) in version:
        raise Failed(f"--version does not name the installed biaskit-data: {version}")
    shutil.copy2(ROOT / "docs" / "examples" / "quickstart.py", work / "quickstart.py")
    out = r.run("README quickstart", [str(py), "quickstart.py"], cwd=work).stdout
    if "WEAT permutation test" not in out or "n = 200" not in out:
        raise Failed(f"the quickstart printed something else:\n{out}")
    r.run("notebooks my-biaskit", [str(py), "-m", "biaskit", "notebooks", "my-biaskit"], cwd=work)
    n_copied = len(list((work / "my-biaskit").glob("[0-9][0-9]_*.ipynb")))
    rec["notebooks_copied"] = n_copied
    lab = r.run(
        "jupyter lab --version", [str(base / "venv-full" / "bin" / "jupyter"), "lab", "--version"], cwd=work
    )
    rec["jupyterlab"] = lab.stdout.strip()

    # before the fetch: a notebook that needs reference vectors stops at once, naming the command
    missing = r.run(
        "03_weat before the fetch (must stop up front)",
        [
            str(py),
            "-m",
            "biaskit",
            "notebook",
            "my-biaskit/03_weat.ipynb",
            "early/03_weat.ipynb",
            "-p",
            "quick",
            "True",
        ],
        cwd=work,
        expect=1,
    )
    if "python -m biaskit fetch reference-vectors" not in missing.stderr or "Traceback" in missing.stderr:
        raise Failed(
            f"a missing reference set is not reported with its fetch command:\n{missing.stderr[-3000:]}"
        )
    fetched = r.run(
        "fetch reference-vectors", [str(py), "-m", "biaskit", "fetch", "reference-vectors"], cwd=work
    )
    rec["fetch"] = fetched.stdout.strip().splitlines()

    (work / "runs").mkdir()
    for nb in NOTEBOOKS:
        r.run(
            f"papermill {nb} quick",
            [
                str(base / "venv-full" / "bin" / "papermill"),
                f"my-biaskit/{nb}.ipynb",
                f"runs/{nb}.ipynb",
                "-p",
                "quick",
                "True",
            ],
            cwd=work,
        )
        # plain papermill: a new run folder results/runs/<name>-<time>-<pid>/ in the user's folder
        if not list((work / "results" / "runs").glob(f"{nb}-*/{nb}.json")):
            raise Failed(f"papermill {nb}: no results/runs/{nb}-*/{nb}.json in the user's folder {work}")
        r.run(
            f"python -m biaskit notebook {nb} quick",
            [
                str(py),
                "-m",
                "biaskit",
                "notebook",
                f"my-biaskit/{nb}.ipynb",
                f"biaskit-runs/{nb}.ipynb",
                "-p",
                "quick",
                "True",
            ],
            cwd=work,
        )
        result = work / "biaskit-runs" / f"{nb}.json"
        if not result.is_file():
            raise Failed(f"python -m biaskit notebook {nb}: no {result}")
        if json.loads(result.read_text(encoding="utf-8"))["parameters"].get("quick") is not True:
            raise Failed(f"{result} does not record quick=True")
    rec["results"] = sorted(
        p.relative_to(work).as_posix() for p in work.rglob("*.json") if "my-biaskit" not in p.parts
    )

    diff = compare_listings(before, site_listing(site))
    rec["site_packages_after_use"] = {k: v[:20] for k, v in diff.items()} | {
        "pyc_added_count": len(diff["pyc_added"])
    }
    if diff["added"] or diff["removed"] or diff["changed"]:
        raise Failed(
            f"the runs wrote into {site}: {json.dumps({k: v[:20] for k, v in diff.items()}, indent=1)}"
        )
    rec["venv_bytes_after_use"] = du(base / "venv-full")
    rec["cache_bytes"] = (
        du(base / "venv-full-home" / ".cache" / "biaskit")
        if (base / "venv-full-home" / ".cache" / "biaskit").exists()
        else 0
    )


OWN_WEAT = """
import numpy as np
from biaskit.embeddings.vectors import load_vectors
from biaskit.metrics.weat import weat

kv = load_vectors("my_vectors.txt")
X, Y, A, B = ["rose", "tulip"], ["spider", "moth"], ["love", "peace"], ["hate", "war"]
r = weat(X, Y, A, B, kv)
print(r.summary())
# by hand: s(w) = mean cos(w, A) - mean cos(w, B); d = (mean s(X) - mean s(Y)) / sd(s(X u Y)), ddof=1
u = {w: kv[w] / np.linalg.norm(kv[w]) for w in X + Y + A + B}
s = {w: np.mean([u[w] @ u[a] for a in A]) - np.mean([u[w] @ u[b] for b in B]) for w in X + Y}
d = (np.mean([s[w] for w in X]) - np.mean([s[w] for w in Y])) / np.std([s[w] for w in X + Y], ddof=1)
assert abs(r.effect_size - d) < 1e-6, (r.effect_size, d)
print("effect size", round(float(r.effect_size), 6), "= by hand", round(float(d), 6))
"""

IMPORT_ALL = """
import importlib, json, pkgutil, biaskit
bad = {}
for m in pkgutil.walk_packages(biaskit.__path__, "biaskit."):
    try:
        importlib.import_module(m.name)
    except ModuleNotFoundError as exc:
        bad[m.name] = f"needs {exc.name}"
    except Exception as exc:
        bad[m.name] = f"{type(exc).__name__}: {exc}"
print(json.dumps(bad))
"""


def code_only_install(base: Path, python: str, wheels: dict[str, Path], record: dict) -> None:
    rec: dict = {}
    record["code_only"] = rec
    py, _site, r = new_env(base, "venv-code", python, rec)
    work = base / "user-code"
    work.mkdir()
    t0 = time.perf_counter()
    install_torch(r, py, work, rec)
    r.run(
        "pip install the code wheel alone",
        [str(py), "-m", "pip", "install", str(wheels["biaskit"])],
        cwd=work,
    )
    rec["install_seconds"] = round(time.perf_counter() - t0, 1)
    rec["venv_bytes"] = du(base / "venv-code")
    pip_check(r, py, work, rec, "pip_check")
    rec["version_line"] = r.run("--version", [str(py), "-m", "biaskit", "--version"], cwd=work).stdout.strip()
    metrics = r.run("metrics", [str(py), "-m", "biaskit", "metrics"], cwd=work).stdout
    if "citation" not in metrics.splitlines()[1] or "Caliskan" not in metrics:
        raise Failed(f"python -m biaskit metrics shows no citations:\n{metrics[:2000]}")
    rec["metrics_lines"] = len(metrics.splitlines())
    nb = r.run(
        "notebooks x (no data wheel)", [str(py), "-m", "biaskit", "notebooks", "x"], cwd=work, expect=1
    )
    want = f"pip install dist/{wheels['biaskit-data'].name}"
    if want not in nb.stderr or "Traceback" in nb.stderr:
        raise Failed(f"`notebooks x` without the data wheel does not say `{want}`:\n{nb.stderr[-2000:]}")
    rec["notebooks_message"] = nb.stderr.strip()
    imports = json.loads(r.run("import every module", [str(py), "-c", IMPORT_ALL], cwd=work).stdout)
    rec["modules_needing_an_extra"] = imports
    wrong = {m: why for m, why in imports.items() if not why.startswith("needs ") or "biaskit" in why}
    if wrong:
        raise Failed(f"modules that fail to import without biaskit-data: {wrong}")
    rng = __import__("random").Random(0)
    words = ["rose", "tulip", "spider", "moth", "love", "peace", "hate", "war"]
    lines = [f"{len(words)} 5"] + [
        w + " " + " ".join(f"{rng.uniform(-1, 1):.4f}" for _ in range(5)) for w in words
    ]
    (work / "my_vectors.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (work / "own_weat.py").write_text(OWN_WEAT, encoding="utf-8")
    rec["own_weat"] = r.run(
        "WEAT on the user's own vectors", [str(py), "own_weat.py"], cwd=work
    ).stdout.strip()


def build(skip_dist: bool, record: dict) -> dict[str, Path]:
    if not skip_dist:
        t0 = time.perf_counter()
        done = subprocess.run(
            ["make", "--no-print-directory", "dist"], cwd=ROOT, capture_output=True, text=True, check=False
        )
        if done.returncode:
            raise Failed(f"make dist failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        record.setdefault("steps", []).append(
            {"step": "make dist", "seconds": round(time.perf_counter() - t0, 1)}
        )
    build_json = ROOT / "dist" / "BUILD.json"
    if not build_json.is_file():
        raise Failed("dist/BUILD.json is missing: run make dist")
    built = json.loads(build_json.read_text(encoding="utf-8"))
    wheels = {f["distribution"]: ROOT / "dist" / f["file"] for f in built["files"] if f["kind"] == "wheel"}
    record["wheels"] = {k: {"file": v.name, "bytes": v.stat().st_size} for k, v in wheels.items()}
    return wheels


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--python",
        default=os.environ.get("PYTHON", "python3.11"),
        help="the interpreter of the new environments",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--skip-dist", action="store_true", help="use the wheels already in dist/")
    parser.add_argument("--only", choices=("full", "code"), default=None)
    parser.add_argument("--record", default=str(ROOT / "dist" / "test-install.json"))
    args = parser.parse_args(argv)
    if shutil.which(args.python) is None:
        print(f"test-install: {args.python} not found (set PYTHON=...)", file=sys.stderr)
        return 1
    record: dict = {"python": args.python, "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    t0 = time.perf_counter()
    base = Path(tempfile.mkdtemp(prefix="biaskit-test-install-"))
    status = 0
    try:
        probe = base / "probe"
        probe.mkdir()
        why = index_reachable(sys.executable, probe)
        if why:
            raise Skipped(why)
        wheels = build(args.skip_dist, record)
        if args.only in (None, "full"):
            full_install(base, args.python, wheels, record)
        if args.only in (None, "code"):
            code_only_install(base, args.python, wheels, record)
    except Skipped as exc:
        status = SKIP
        record["skipped"] = str(exc)
        print(
            f"\nSKIP: make test-install tested nothing: the package index cannot be reached ({exc}).",
            file=sys.stderr,
        )
    except Failed as exc:
        status = 1
        record["failed"] = str(exc)[:4000]
        print(f"\nFAIL: {exc}", file=sys.stderr)
    finally:
        record["wall_seconds"] = round(time.perf_counter() - t0, 1)
        Path(args.record).parent.mkdir(parents=True, exist_ok=True)
        Path(args.record).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        if args.keep:
            log(f"kept {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    for key in ("full", "code_only"):
        rec = record.get(key)
        if rec:
            log(
                f"{key}: install {rec.get('install_seconds')} s, venv {rec.get('venv_bytes', 0) / 1e9:.2f} "
                f"GB, torch {rec.get('torch')} ({len(rec.get('nvidia_packages', []))} nvidia packages), "
                f"pip check: {rec.get('pip_check')}"
            )
    log(f"wall time {record['wall_seconds']} s; record: {args.record}")
    if status == 0:
        log("PASS")
    return status


if __name__ == "__main__":
    sys.exit(main())
