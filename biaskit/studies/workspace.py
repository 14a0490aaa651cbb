"""A folder of one's own with the study notebooks: ``python -m biaskit notebooks DIR``.

The numbered notebooks (``NN_topic.ipynb``) live in the repository's ``notebooks/`` folder, and in
an installed biaskit in the companion distribution ``biaskit-data``
(:func:`biaskit.core.paths.notebooks_dir`).  :func:`copy_notebooks` copies them, with the batch
configurations of ``experiments/`` that notebook 10 and the documentation refer to, into a folder
the user opens in JupyterLab.  They run there unchanged: they import biaskit, read the bundled files
through :mod:`biaskit.core.paths` and write their JSON and figures into ``DIR/results/`` (papermill
through ``python -m biaskit notebook``: beside the executed copy).
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Sequence
from pathlib import Path

from biaskit.core.io import atomic_path
from biaskit.core.paths import bundled_dir, notebooks_dir

log = logging.getLogger(__name__)

#: the study notebooks' file names
NOTEBOOK_GLOB = "[0-9][0-9]_*.ipynb"


def study_notebooks() -> list[Path]:
    """The numbered study notebooks, in order."""
    folder = notebooks_dir()
    found = sorted(folder.glob(NOTEBOOK_GLOB))
    if not found:
        raise FileNotFoundError(f"no study notebooks ({NOTEBOOK_GLOB}) in {folder}")
    return found


def _select(notebooks: list[Path], names: Sequence[str]) -> list[Path]:
    chosen = []
    for name in names:
        stem = Path(name).name.removesuffix(".ipynb")
        match = [p for p in notebooks if p.stem == stem or p.stem.split("_", 1)[0] == stem]
        if not match:
            known = ", ".join(p.stem for p in notebooks)
            raise ValueError(f"no study notebook {name!r}; the notebooks are: {known}")
        chosen.extend(m for m in match if m not in chosen)
    return chosen


def copy_notebooks(
    dest: str | Path,
    names: Sequence[str] = (),
    *,
    overwrite: bool = False,
    experiments: bool = True,
) -> list[Path]:
    """Copy the study notebooks (all, or ``names``: ``"03_weat"`` or ``"03"``) into ``dest``.

    With ``experiments`` the batch configurations go to ``dest/experiments/`` too.  An existing
    file is never replaced unless ``overwrite`` (a ``FileExistsError`` names them all first, so
    nothing is half copied).  Returns the copied files, notebooks first.
    """
    dest = Path(dest).expanduser()
    if dest.exists() and not dest.is_dir():
        raise NotADirectoryError(f"{dest} is a file: give a folder to copy the notebooks into")
    notebooks = study_notebooks()
    if names:
        notebooks = _select(notebooks, names)
    plan = [(p, dest / p.name) for p in notebooks]
    if experiments:
        configs = sorted(bundled_dir("experiments").glob("*.yaml"))
        plan += [(p, dest / "experiments" / p.name) for p in configs]
    existing = [str(target) for _, target in plan if target.exists()]
    if existing and not overwrite:
        raise FileExistsError(
            f"{len(existing)} file(s) already exist, e.g. {existing[0]}: choose an empty folder, or pass "
            "--overwrite to replace them (your edits in them would be lost)"
        )
    for src, target in plan:
        with atomic_path(target) as tmp:  # whole or not at all (a full disk leaves no half notebook)
            shutil.copyfile(src, tmp)
    log.info(
        "copied %d notebook(s) and %d other file(s) to %s", len(notebooks), len(plan) - len(notebooks), dest
    )
    return [target for _, target in plan]
