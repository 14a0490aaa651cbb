"""The catalogue of the models biaskit bundles under ``data/models``: their names, folders and records.

The recipes that train them live in :mod:`biaskit.training.recipes` (a layer above); what a model *is*
and where it lies is here, in the model layer, so that :mod:`biaskit.lm.builtin` can load a bundled model
by name without reaching up to the trainer.  Word vectors are loaded by
:func:`biaskit.embeddings.vectors.load_trained_vectors`.

**Integrity.**  ``data/models/MANIFEST.json`` records the size and sha256 of every file of every bundled
model folder (``training.json`` aside, which the recipes update after training); it is written by
:func:`write_manifest` (:func:`biaskit.training.recipes.write_provenance` and ``train_model`` call it).  A
model loaded by name (:func:`verified_model_path`: ``get_lm``, ``load_trained_mlm``, ``load_trained_clm``,
``load_trained_vectors``) is first checked against it, once per process and folder
(:func:`verify_model`): a missing, truncated or changed file raises :class:`biaskit.core.io.ChecksumError`
naming the file and the fix.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from biaskit.core.io import ChecksumError, atomic_write_text, sha256_file
from biaskit.core.paths import data_dir

logger = logging.getLogger(__name__)

MODELS_DIR = "models"
TRAINING_JSON = "training.json"
#: the sha256 manifest of the bundled model folders, in :func:`models_dir`
MANIFEST_JSON = "MANIFEST.json"
#: folders verified in this process (:func:`verify_model` checks each once)
_verified: set[Path] = set()

#: planted skews of the control models (s = 0.5: nothing planted)
CONTROL_SKEWS: tuple[float, ...] = (0.5, 0.6, 0.7, 0.8, 0.9)
#: target words of the controls: 40 BUG professions with >= 370 gendered sentences, generic
#: person nouns (patient, child, friend, person, student, user) left out
CONTROL_TARGETS: tuple[str, ...] = (
    "author", "artist", "singer", "director", "writer", "president", "doctor", "officer",
    "coach", "manager", "teacher", "editor", "judge", "driver", "captain", "professor",
    "physician", "priest", "journalist", "producer", "agent", "painter", "chief", "pilot",
    "lawyer", "surgeon", "nurse", "musician", "farmer", "scientist", "architect", "engineer",
    "boss", "reporter", "designer", "secretary", "photographer", "guitarist", "guard", "politician",
)  # fmt: skip
CONTROL_SEED = 0
#: at most this many sentences per target in a control corpus (keeps training short)
CONTROL_MAX_PER_TARGET = 600
#: background sentences (no target) in a control corpus
CONTROL_BACKGROUND = 6_000


def control_name(s: float) -> str:
    """``0.8`` -> ``"en-planted-s80"``."""
    return f"en-planted-s{round(s * 100):02d}"


def causal_control_name(s: float) -> str:
    """``0.8`` -> ``"en-clm-planted-s80"`` (the causal twin of :func:`control_name`)."""
    return f"en-clm-planted-s{round(s * 100):02d}"


#: the bundled causal LMs (GPT-2 layout), in training order
CLM_NAMES: tuple[str, ...] = (
    "en-clm-balanced",
    "en-clm",
    "es-clm",
    *(causal_control_name(s) for s in CONTROL_SKEWS),
)

#: the bundled XLNet (permutation LM, Yang et al. 2019), for seed 004's padding-text experiment (section
#: 3.3.3)
XLNET_NAMES: tuple[str, ...] = ("en-xlnet",)

MODEL_NAMES: tuple[str, ...] = (
    "en-mlm-balanced",
    "en-mlm",
    "es-mlm",
    "es-w2v",
    *(control_name(s) for s in CONTROL_SKEWS),
    "en-planted-w2v",
    *CLM_NAMES,
    *XLNET_NAMES,
)


def models_dir() -> Path:
    """``data/models`` (follows ``BIASKIT_DATA_DIR``)."""
    return data_dir() / MODELS_DIR


def model_path(name: str) -> Path:
    """Folder of a bundled model; ``FileNotFoundError`` with the retrain command when absent."""
    if name not in MODEL_NAMES:
        raise KeyError(f"unknown bundled model {name!r}; known: {', '.join(MODEL_NAMES)}")
    path = models_dir() / name
    if not (path / TRAINING_JSON).exists():
        raise FileNotFoundError(
            f"bundled model {name!r} is missing at {path}; retrain it with `python -m biaskit train-models "
            f"{name}`"
        )
    return path


def manifest_path() -> Path:
    """``data/models/MANIFEST.json`` (follows ``BIASKIT_DATA_DIR``)."""
    return models_dir() / MANIFEST_JSON


def folder_records(folder: Path) -> dict[str, dict[str, Any]]:
    """``{relative path: {"bytes": n, "sha256": hex}}`` of every file of ``folder`` but ``training.json``."""
    return {
        f.relative_to(folder).as_posix(): {"bytes": f.stat().st_size, "sha256": sha256_file(f)}
        for f in sorted(folder.rglob("*"))
        if f.is_file() and f.name != TRAINING_JSON and not f.name.startswith(".")
    }


def read_manifest() -> dict[str, dict[str, dict[str, Any]]] | None:
    """The ``models`` table of :func:`manifest_path` (model -> file -> size and sha256), ``None`` without
    one."""
    path = manifest_path()
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return dict(data["models"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ChecksumError(
            f"{path} is damaged ({type(exc).__name__}: {exc}): restore it from the repository "
            "(git checkout -- data/models/MANIFEST.json) or regenerate it with "
            "`python -c 'from biaskit.training.recipes import write_provenance; write_provenance()'`"
        ) from exc


def write_manifest(names: list[str] | tuple[str, ...] | None = None) -> Path:
    """Record the size and sha256 of every file of the bundled models ``names`` (default: every bundled
    model on disk) in :func:`manifest_path`, keeping the other models' records; written atomically.

    :func:`biaskit.training.recipes.write_provenance` rewrites every record; ``train_model`` the record of
    the model it has just trained, so a retrained model loads at once.
    """
    models = read_manifest() or {}
    todo = list(MODEL_NAMES) if names is None else list(names)
    for name in todo:
        folder = models_dir() / name
        if (folder / TRAINING_JSON).exists():
            models[name] = folder_records(folder)
        elif names is None:
            models.pop(name, None)
    path = manifest_path()
    doc = {
        "about": (
            "size and sha256 of every file of each bundled model folder (training.json aside); written by "
            "biaskit.training.recipes.write_provenance and train_model, checked once per process when a "
            "model is loaded by name (biaskit.lm.catalogue.verify_model)"
        ),
        "models": {k: models[k] for k in sorted(models, key=lambda n: (n not in MODEL_NAMES, n))},
    }
    atomic_write_text(path, json.dumps(doc, indent=1) + "\n")  # unique temporary name, then renamed
    for name in todo:
        _verified.discard((models_dir() / name).resolve())
    return path


def _damaged(name: str, file: Path, problem: str) -> ChecksumError:
    return ChecksumError(
        f"bundled model {name!r} is damaged: {file}: {problem}. Nothing was loaded from it. Fix: restore the "
        f"folder from the repository (git checkout -- data/models/{name}) or retrain it with "
        f"`python -m biaskit train-models {name}`"
    )


def verify_model(name: str, *, force: bool = False) -> Path:
    """Check the folder of the bundled model ``name`` against :func:`manifest_path`; return the folder.

    Every recorded file must exist with its recorded size and sha256; otherwise
    :class:`~biaskit.core.io.ChecksumError` names the file, what is wrong ("missing", "truncated: 1,000
    of 2,912,712 bytes", "its bytes differ from the recorded ones") and the fix (restore it from the
    repository, or ``python -m biaskit train-models NAME``).  Done once per process per folder (``force``
    checks again).  Without a manifest (a data folder of the user's, ``BIASKIT_DATA_DIR``) nothing is
    checked (logged at INFO); a model the manifest does not list is loaded with a WARNING.
    """
    folder = model_path(name)
    key = folder.resolve()
    if key in _verified and not force:
        return folder
    manifest = read_manifest()
    if manifest is None:
        logger.info("%s: no %s, the bundled model %r is not checked", models_dir(), MANIFEST_JSON, name)
        return folder
    records = manifest.get(name)
    if records is None:
        logger.warning(
            "the bundled model %r is not in %s: its files are not checked (regenerate the manifest with "
            "biaskit.training.recipes.write_provenance())",
            name,
            manifest_path(),
        )
        return folder
    for rel, rec in records.items():
        f = folder / rel
        if not f.is_file():
            raise _damaged(name, f, "the file is missing")
        size, want = f.stat().st_size, int(rec["bytes"])
        if size != want:
            what = (
                f"truncated: {size:,} of {want:,} bytes"
                if size < want
                else f"{size:,} bytes, {want:,} recorded"
            )
            raise _damaged(name, f, what)
        got = sha256_file(f)
        if got != rec["sha256"]:
            raise _damaged(
                name,
                f,
                f"its bytes differ from the recorded ones (sha256 {got[:16]}..., {rec['sha256'][:16]}... "
                "recorded)",
            )
    _verified.add(key)
    return folder


def verified_model_path(name: str) -> Path:
    """:func:`model_path` of a bundled model, checked against the manifest first (:func:`verify_model`)."""
    return verify_model(name)


def training_record(name: str) -> dict[str, Any]:
    """The ``training.json`` of a bundled model."""
    return json.loads((model_path(name) / TRAINING_JSON).read_text(encoding="utf-8"))


def load_trained_mlm(name: str = "en-mlm", *, device: str = "auto"):
    """Load a bundled masked LM as a :class:`biaskit.lm.base.MaskedLM` (its name is the model's folder)."""
    from biaskit.lm.loading import load_masked_lm

    return load_masked_lm(verified_model_path(name), device=device)


def load_trained_clm(name: str = "en-clm", *, device: str = "auto"):
    """Load a bundled causal LM (:data:`CLM_NAMES`) with :func:`biaskit.lm.loading.load_causal_lm`."""
    from biaskit.lm.loading import load_causal_lm

    if name not in CLM_NAMES:
        raise KeyError(f"{name!r} is not a bundled causal LM; known: {', '.join(CLM_NAMES)}")
    return load_causal_lm(verified_model_path(name), device=device)


def load_trained_xlnet(name: str = "en-xlnet", *, device: str = "auto"):
    """Load a bundled XLNet (:data:`XLNET_NAMES`) as a :class:`biaskit.lm.base.MaskedLM`: ``XLNetLMHeadModel``
    (float16 weights loaded as float32 on a CPU) and its tokenizer, in eval mode; its name is its folder.

    Read it at a mask with :class:`biaskit.lm.xlnet.BridgeLM` (:func:`biaskit.lm.xlnet.load_bridge_lm`
    ``("en-xlnet")``): XLNet is not a masked LM of ``transformers``' Auto classes.
    """
    import torch
    from transformers import AutoTokenizer, XLNetLMHeadModel

    from biaskit.lm.base import MaskedLM, resolve_device

    if name not in XLNET_NAMES:
        raise KeyError(f"{name!r} is not a bundled XLNet; known: {', '.join(XLNET_NAMES)}")
    path = verified_model_path(name)
    dev = resolve_device(device)
    dtype = torch.float32 if dev.type == "cpu" else None
    model = XLNetLMHeadModel.from_pretrained(str(path), dtype=dtype).eval().to(dev)
    return MaskedLM(model=model, tokenizer=AutoTokenizer.from_pretrained(str(path)), name=str(path))


def masked_twin(name: str) -> str:
    """The masked LM whose data (and, when trained from scratch, tokenizer) a causal LM takes: ``en-clm`` ->
    ``en-mlm``, ``en-clm-balanced`` -> ``en-mlm-balanced``, ``en-clm-planted-s80`` -> ``en-planted-s80``,
    ``es-clm`` -> ``es-mlm``."""
    if name not in CLM_NAMES:
        raise KeyError(f"{name!r} is not a bundled causal LM")
    return (
        name.replace("en-clm-planted-", "en-planted-").replace("en-clm", "en-mlm").replace("es-clm", "es-mlm")
    )


def skew_of(name: str) -> float:
    """``"en-planted-s80"`` -> 0.8."""
    return float(name.rsplit("-s", 1)[1]) / 100
