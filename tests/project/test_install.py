"""biaskit installed from its wheels, outside the repository, offline.

``packaging/build_dists.py`` builds the code wheel and the companion data wheel ``biaskit-data``;
they are installed with ``pip --no-index --no-deps`` into a fresh virtual environment in a temporary
folder.  The third-party dependencies are not installed again (there is no network): a ``.pth``
file in the new environment appends the project environment's ``site-packages`` to ``sys.path``.
Such a path line does not run the ``.pth`` files found there, so the editable install's finder
stays inert, and the tests check that ``biaskit`` is imported from the new environment.

From a working folder outside the repository, the environment then runs the README's quickstart
(``docs/examples/quickstart.py``), ``python -m biaskit notebooks DIR`` and one copied notebook with
``quick=True`` under papermill, and a damaged data file is refused with its name.
"""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path

import nbformat
import pytest
from wheel_support import build_wheels, install_into_fresh_venv

# every test needs the wheels built and installed into a fresh environment (the module fixture)
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "docs" / "examples" / "quickstart.py"
#: a cheap notebook for the installed run (quick=True)
NOTEBOOK = "03_weat"


def _run(
    cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: int = 600
) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, (
        f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    )
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Both wheels built, and installed into a fresh venv outside the repository."""
    base = tmp_path_factory.mktemp("install")
    assert not base.is_relative_to(ROOT)
    record = build_wheels(base / "dist")
    wheels = {f["distribution"]: base / "dist" / f["file"] for f in record["files"]}
    fresh = install_into_fresh_venv(
        base,
        [wheels["biaskit"], wheels["biaskit-data"]],
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        JUPYTER_DATA_DIR=str(base / "jupyter-data"),
        JUPYTER_CONFIG_DIR=str(base / "jupyter-config"),
    )
    python, venv, site, env, work = fresh.python, fresh.venv, fresh.site, fresh.env, fresh.work
    # the "python3" kernel of papermill: this environment's interpreter
    _run([str(python), "-m", "ipykernel", "install", "--sys-prefix", "--name", "python3"], cwd=work, env=env)
    return {
        "python": python,
        "venv": venv,
        "site": site,
        "env": env,
        "work": work,
        "wheels": wheels,
        "record": record,
    }


def test_wheels_hold_the_code_and_the_data_apart(installed):
    """The code wheel has no bundled file; the data wheel has all of them, a manifest and the pin."""
    with zipfile.ZipFile(installed["wheels"]["biaskit"]) as z:
        names = z.namelist()
    assert "biaskit/core/paths.py" in names and "biaskit/studies/workspace.py" in names
    assert not [n for n in names if n.endswith((".safetensors", ".ipynb", ".bin"))]
    with zipfile.ZipFile(installed["wheels"]["biaskit-data"]) as z:
        names = set(z.namelist())
        meta = next(z.read(n).decode() for n in names if n.endswith("METADATA"))
        manifest = json.loads(z.read("biaskit_data/MANIFEST.json"))
    version = installed["record"]["version"]
    assert f"Requires-Dist: biaskit=={version}" in meta
    assert manifest["version"] == version
    repo_files = {
        f"{d}/{p.relative_to(ROOT / d).as_posix()}"
        for d in ("data", "wordlists")
        for p in (ROOT / d).rglob("*")
        if p.is_file()
    }
    repo_files |= {f"notebooks/{p.name}" for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")}
    assert repo_files <= set(manifest["files"])
    assert {f"biaskit_data/{f}" for f in manifest["files"]} <= names
    assert manifest["files"]["data/models/en-mlm/model.safetensors"]["size"] > 1_000_000


def test_biaskit_is_imported_from_the_new_environment_with_its_data(installed):
    code = (
        "import biaskit, biaskit_data, json\n"
        "from biaskit.core import paths\n"
        "print(json.dumps({'biaskit': biaskit.__file__, 'data': biaskit_data.__file__, 'in_repo': "
        "paths.in_repository(), 'data_dir': str(paths.data_dir()), 'wordlists': str(paths.wordlists_dir()), "
        "'version': paths.package_version(), 'results': str(paths.results_dir())}))"
    )
    out = json.loads(
        _run([str(installed["python"]), "-c", code], cwd=installed["work"], env=installed["env"]).stdout
    )
    venv = str(installed["venv"])
    assert out["biaskit"].startswith(venv) and out["data"].startswith(venv), out
    assert out["in_repo"] is False
    assert out["data_dir"].startswith(venv) and Path(out["data_dir"]).name == "data"
    assert out["wordlists"].startswith(venv)
    assert out["version"] == installed["record"]["version"]
    assert out["results"] == str(
        installed["work"] / "results"
    )  # beside the user's work, not in site-packages
    assert str(ROOT) not in json.dumps(out)


def test_quickstart_runs_from_the_installed_wheels(installed):
    """The README's ten lines: WEAT on the bundled planted-skew vectors, CrowS-Pairs on en-mlm."""
    done = _run([str(installed["python"]), str(QUICKSTART)], cwd=installed["work"], env=installed["env"])
    assert "WEAT permutation test" in done.stdout and "reject H0" in done.stdout
    assert "one-sample z test for a proportion" in done.stdout and "n = 200" in done.stdout


def test_notebooks_command_and_one_notebook_run_in_a_folder_of_ones_own(installed):
    python, env, work = installed["python"], installed["env"], installed["work"]
    folder = work / "my notebooks"
    done = _run([str(python), "-m", "biaskit", "notebooks", str(folder)], cwd=work, env=env)
    copied = sorted(p.name for p in folder.glob("*.ipynb"))
    assert copied == sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert (folder / "experiments" / "offline_demo.yaml").is_file()
    assert f"{len(copied)} notebook(s)" in done.stdout
    # the kernel papermill starts is this environment's interpreter, importing the installed biaskit
    probe = nbformat.v4.new_notebook()
    probe.cells = [
        nbformat.v4.new_code_cell("import sys, biaskit\nprint(sys.executable)\nprint(biaskit.__file__)")
    ]
    probe.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(probe, folder / "probe.ipynb")
    _run(
        [
            str(python),
            "-m",
            "biaskit",
            "notebook",
            str(folder / "probe.ipynb"),
            str(work / "probe-out" / "probe.ipynb"),
        ],
        cwd=work,
        env=env,
    )
    printed = nbformat.read(work / "probe-out" / "probe.ipynb", as_version=4).cells[-1].outputs[0]["text"]
    assert printed.splitlines()[0].startswith(str(installed["venv"])), printed
    assert printed.splitlines()[1].startswith(str(installed["venv"])), printed
    # one study notebook, unchanged, with quick=True
    out = work / "run" / f"{NOTEBOOK}.ipynb"
    _run(
        [
            str(python),
            "-m",
            "biaskit",
            "notebook",
            str(folder / f"{NOTEBOOK}.ipynb"),
            str(out),
            "-p",
            "quick",
            "True",
        ],
        cwd=work,
        env=env,
    )
    data = json.loads((out.parent / f"{NOTEBOOK}.json").read_text(encoding="utf-8"))
    assert data["notebook"] == NOTEBOOK and data["parameters"]["quick"] is True and data["results"]
    assert list(out.parent.glob(f"{NOTEBOOK}_*.png")), "no figure beside the executed notebook"


def test_a_damaged_data_file_is_refused_with_its_name(installed, tmp_path):
    """The installed files are checked against the manifest's sha256 (``BIASKIT_DATA_VERIFY=0`` skips it)."""
    code = "from biaskit.core.paths import wordlists_dir; print(wordlists_dir())"
    target = (
        Path(
            _run(
                [str(installed["python"]), "-c", code], cwd=installed["work"], env=installed["env"]
            ).stdout.strip()
        )
        / "en"
        / "weat_caliskan.json"
    )
    original = target.read_bytes()
    try:
        target.write_bytes(original.replace(b"aster", b"ASTER", 1))
        bad = subprocess.run(
            [str(installed["python"]), "-c", code],
            cwd=installed["work"],
            env=installed["env"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert bad.returncode != 0
        assert "wordlists/en/weat_caliskan.json: sha256 differs" in bad.stderr and "Reinstall" in bad.stderr
        skip = {**installed["env"], "BIASKIT_DATA_VERIFY": "0"}
        _run([str(installed["python"]), "-c", code], cwd=installed["work"], env=skip)
    finally:
        target.write_bytes(original)
