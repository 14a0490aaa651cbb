"""Where and how a recorded run ran: the machine, the package versions and commit, the model's files, the
time.

A kept record of a long run (``records/<name>/record.json``, written by a script outside ``make
reproduce``) carries these so that a reader can tell what produced its numbers; :func:`write_record` and
:func:`read_record` write such a file atomically and read it back only when it is the record asked for and
carries its provenance.  Used by :mod:`biaskit.studies.mt_gender_record`,
:mod:`biaskit.studies.domain_model_record`, :mod:`biaskit.studies.xlnet_tables` and
:mod:`biaskit.studies.learning_curve_record`.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from biaskit.core.paths import REPO_ROOT, in_repository

__all__ = [
    "PROVENANCE_KEYS",
    "RECORD_FILE",
    "git_commit",
    "machine",
    "model_files",
    "model_identity",
    "now",
    "plain",
    "ran_on",
    "read_record",
    "record_dir",
    "versions",
    "write_record",
]

#: the file of a kept record in its folder (``records/<name>/record.json``)
RECORD_FILE = "record.json"
#: the keys every kept record carries besides its parameters and results (what :func:`read_record` needs)
PROVENANCE_KEYS = ("model", "machine", "versions", "started", "finished", "wall_seconds")


def record_dir(name: str) -> Path | None:
    """``<repository>/records/<name>`` in a checkout; ``None`` when installed from a wheel."""
    return REPO_ROOT / "records" / name if in_repository() else None


def machine() -> dict[str, Any]:
    """The CPU model (from ``lscpu`` where there is one), the number of cores, the platform and the host
    name."""
    cpu = platform.processor() or platform.machine()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False, timeout=10).stdout
        for line in out.splitlines():
            if line.lower().startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except (OSError, subprocess.SubprocessError):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "platform": platform.platform(), "node": platform.node()}


def git_commit() -> str | None:
    """The commit of biaskit's checkout (``git rev-parse HEAD``), or ``None`` outside a checkout."""
    try:
        res = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip() or None


def versions() -> dict[str, Any]:
    """biaskit's version and git commit (``None`` outside a checkout), Python, torch, transformers, numpy,
    pandas."""
    import numpy
    import pandas
    import torch
    import transformers

    from biaskit.core.paths import package_version

    return {
        "biaskit": package_version(),
        "git_commit": git_commit(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "numpy": numpy.__version__,
        "pandas": pandas.__version__,
    }


def model_files(lm: Any) -> dict[str, str]:
    """sha256 of every file of a model's folder (a bundled or local model's name is its folder);
    {} otherwise."""
    from biaskit.core.io import sha256_file

    folder = Path(str(getattr(lm, "name", lm)))
    if not folder.is_dir():
        return {}
    return {f.name: sha256_file(f) for f in sorted(folder.iterdir()) if f.is_file()}


def model_identity(lm: Any) -> dict[str, str]:
    """:func:`model_files` of ``lm``, or ``{"(not a folder)": <its name>}`` for a model without a folder of
    its own (a hub id), so that a record always names the model it ran on."""
    return model_files(lm) or {"(not a folder)": str(getattr(lm, "name", lm))}


#: what a record keeps of :func:`biaskit.training.fine_tune.fine_tune_record`
TRAINING_KEYS = ("steps", "train_seconds", "tokens_per_second", "device")


def run_fields(
    name: str, files_sha256: Mapping[str, str], started: str, training: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The provenance entries a record writes before its results: ``model`` (``name`` and the sha256 of its
    files, :func:`model_identity`), ``machine``, ``versions``, ``started`` and, for a fine-tune, ``training``
    (the :data:`TRAINING_KEYS` of its ``fine_tune_record``)."""
    out: dict[str, Any] = {
        "model": {"name": name, "files_sha256": dict(files_sha256)},
        "machine": machine(),
        "versions": versions(),
        "started": started,
    }
    if training is not None:
        out["training"] = {k: training.get(k) for k in TRAINING_KEYS}
    return out


def weights_note(files_sha256: Mapping[str, str]) -> str:
    """`` (weights sha256 <first 12 digits>…)`` for the ``.safetensors`` file of a record's model, or
    ``""``."""
    weights = next((v for k, v in files_sha256.items() if k.endswith(".safetensors")), None)
    return f" (weights sha256 {weights[:12]}…)" if weights else ""


def fine_tune_provenance(
    path: Path,
    meta: Mapping[str, Any],
    *,
    corpus: str,
    reference: str,
    reference_model: str,
    differs: list[str],
) -> str:
    """The provenance sentence of a recorded debiasing fine-tune: what ran, on which model (and weights),
    how many ``corpus`` sentences and passes, steps, :func:`ran_on`, and ``differs`` from ``reference``
    (``"the thesis"``, ``"the study"``), whose model is ``reference_model``."""
    p, m = meta["parameters"], meta
    return (
        f"Recorded run (`{path.name}/{RECORD_FILE}`, {m['finished']}): `{m['model']['name']}`"
        + weights_note(m["model"]["files_sha256"])
        + f" fine-tuned on {p['sentences']:,} {corpus} sentences for {p['epochs']} pass(es), "
        f"{m['training'].get('steps', 0):,} steps, {ran_on(m)}; "
        + (f"{reference}'s size" if not differs else f"differs from {reference}: " + "; ".join(differs))
        + f", on {m['model']['name']}, not {reference_model}."
    )


def ran_on(meta: Mapping[str, Any], *, minute_digits: int = 0) -> str:
    """The end of a record's provenance sentence:
    "on <cpu> (<n> cores), <m> min of wall time, commit <hash>"."""
    m = meta
    return (
        f"on {m['machine']['cpu']} ({m['machine']['cores']} cores), "
        f"{m['wall_seconds'] / 60:,.{minute_digits}f} min of wall time, "
        f"commit {str(m['versions'].get('git_commit'))[:10]}"
    )


def now() -> str:
    """The current time in UTC, to the second, ISO 8601."""
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat()


def plain(obj: Any) -> Any:
    """A JSON-ready copy: numpy scalars and arrays as Python values, tuples as lists, NaN and infinities as
    ``None``, objects with ``to_dict`` (a TestResult, a table) as their dict, paths as strings."""
    if isinstance(obj, Mapping):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [plain(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "to_dict") and callable(obj.to_dict) and not isinstance(obj, type):
        return plain(obj.to_dict())
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):
        return plain(obj.tolist())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return str(obj)


def write_record(folder: str | Path, meta: Mapping[str, Any]) -> dict[str, Any]:
    """Write ``meta`` (made JSON-ready by :func:`plain`) as ``<folder>/record.json``, atomically (the folder
    is created); return it as read back."""
    from biaskit.core.io import atomic_write_text

    path = Path(folder) / RECORD_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(plain(meta), indent=1, ensure_ascii=False) + "\n")
    return json.loads(path.read_text(encoding="utf-8"))


def read_record(
    folder: str | Path | None, *, what: str, kind: str, need: Sequence[str]
) -> dict[str, Any] | None:
    """The ``record.json`` of ``folder``; ``None`` when there is none (or no folder).  ``ValueError`` when its
    ``what`` is not ``what`` ("... is not <kind> (what = ...)") or it lacks one of the keys ``need`` or the
    sha256 of its model's files ("... lacks its provenance: missing ...")."""
    if folder is None or not (Path(folder) / RECORD_FILE).is_file():
        return None
    path = Path(folder) / RECORD_FILE
    meta = json.loads(path.read_text(encoding="utf-8"))
    if meta.get("what") != what:
        raise ValueError(f"{path} is not {kind} (what = {meta.get('what')!r})")
    missing = [k for k in need if k not in meta]
    if missing or not meta.get("model", {}).get("files_sha256"):
        raise ValueError(f"{path} lacks its provenance: missing {', '.join(missing) or 'model files_sha256'}")
    return meta
