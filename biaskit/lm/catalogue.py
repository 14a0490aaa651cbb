"""The catalogue of the models biaskit bundles under ``data/models``: their names, folders and records.

The recipes that train them live in :mod:`biaskit.training.recipes` (a layer above); what a model *is*
and where it lies is here, in the model layer, so that :mod:`biaskit.lm.builtin` can load a bundled model
by name without reaching up to the trainer.  Word vectors are loaded by
:func:`biaskit.embeddings.vectors.load_trained_vectors`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from biaskit.core.paths import data_dir

MODELS_DIR = "models"
TRAINING_JSON = "training.json"

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

MODEL_NAMES: tuple[str, ...] = (
    "en-mlm-balanced",
    "en-mlm",
    "es-mlm",
    "es-w2v",
    *(control_name(s) for s in CONTROL_SKEWS),
    "en-planted-w2v",
    *CLM_NAMES,
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
            f"bundled model {name!r} is missing at {path}; retrain it with `python -m biaskit train-models {name}`"
        )
    return path


def verified_model_path(name: str) -> Path:
    """:func:`model_path` of a bundled model, for loading it."""
    return model_path(name)


def training_record(name: str) -> dict[str, Any]:
    """The ``training.json`` of a bundled model."""
    return json.loads((model_path(name) / TRAINING_JSON).read_text(encoding="utf-8"))


def load_trained_mlm(name: str = "en-mlm", *, device: str = "auto"):
    """Load a bundled masked LM as a :class:`biaskit.lm.base.MaskedLM` (its name is the model's folder)."""
    from biaskit.lm.loading import load_masked_lm

    return load_masked_lm(model_path(name), device=device)


def load_trained_clm(name: str = "en-clm", *, device: str = "auto"):
    """Load a bundled causal LM (:data:`CLM_NAMES`) with :func:`biaskit.lm.loading.load_causal_lm`."""
    from biaskit.lm.loading import load_causal_lm

    if name not in CLM_NAMES:
        raise KeyError(f"{name!r} is not a bundled causal LM; known: {', '.join(CLM_NAMES)}")
    return load_causal_lm(model_path(name), device=device)


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
