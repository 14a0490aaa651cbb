"""The models biaskit provides itself, and which model a notebook runs when none is named.

* The **random-weight stand-ins** :func:`tiny_masked_lm` (a 1-layer BERT) and :func:`tiny_causal_lm` (a
  1-layer GPT-2), built in a fraction of a second over a WordPiece vocabulary from the bundled Spanish
  CrowS-Pairs sentences, for tests, benchmarks and quick runs.  **Their scores mean nothing about bias**:
  they exercise tokenisation, batching, caching and reporting on real text.
* The **trained-here models** bundled under ``data/models`` (masked ``es-mlm`` / ``en-mlm``, causal
  ``en-clm``, and the planted-bias controls ``en-planted-sXX`` / ``en-clm-planted-sXX``), trained by
  :mod:`biaskit.training.recipes`; :func:`get_lm` loads them by name.
* :func:`resolve_default_model` picks, for a language and kind, a pretrained model when it is on this
  machine, else the bundled trained one, and says which in plain words.

**Never a guess.**  A model name must name something on this machine: a bundled model (or a stand-in
asked for by name, ``"tiny"`` / ``"tiny-causal"``), an existing folder (a relative path starts from
:func:`biaskit.core.paths.caller_cwd`) or a hub id in the local Hugging Face cache.  Anything else
raises :class:`~biaskit.lm.loading.ModelNotFoundError`, which names what was looked for and how to
get it ("did you mean 'en-mlm'?" for a near-miss of a bundled name).  The random stand-ins run only
when asked for by name or, for the automatic choice, with ``allow_fallback=True``; a WARNING then
says that the numbers come from random weights.

Determinism of the stand-ins: the ``tokenizers`` library's ``WordPieceTrainer`` picks different
sub-words from run to run when merge counts tie (its hash maps are randomly seeded per process), so the
vocabulary is chosen deterministically instead (:func:`biaskit.training.pretrain.build_wordpiece_vocab`:
frequency, then alphabetical order); weights come from ``torch.manual_seed(seed)``.  Same ``seed`` ->
same model, in every process.
"""

from __future__ import annotations

import difflib
import functools
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from biaskit.core.paths import resolve_user_path
from biaskit.lm.base import CausalLM, LanguageModel, MaskedLM, ModelKind, resolve_device
from biaskit.lm.loading import (
    BETO,
    ModelNotAvailableError,
    ModelNotFoundError,
    hf_cache_dir,
    how_to_get_model,
    load_lm,
    load_masked_lm,
    model_kind,
    quiet_hf_progress,
    resolve_dtype,
)
from biaskit.lm.tokenizers import bert_wordpiece_tokenizer, build_wordpiece_vocab

__all__ = [
    "FALLBACK_CAUSAL_MODEL",
    "FALLBACK_MODEL",
    "ModelChoice",
    "did_you_mean",
    "get_lm",
    "get_masked_lm",
    "kind_of_name",
    "model_not_found_error",
    "resolve_default_model",
    "tiny_causal_lm",
    "tiny_masked_lm",
    "tiny_tokenizer",
    "trained_model_message",
]

logger = logging.getLogger(__name__)

#: Name of the offline fallback: :func:`tiny_masked_lm` (random weights).
FALLBACK_MODEL = "tiny"
#: Name of the causal offline fallback: :func:`tiny_causal_lm` (random weights).
FALLBACK_CAUSAL_MODEL = "tiny-causal"


@dataclass(frozen=True)
class ModelChoice:
    """Which model a notebook will run, and a plain-language message saying which and why.

    ``kind`` is ``"pretrained"`` (a downloaded or local model such as BETO), ``"trained-here"`` (a
    small model trained by biaskit and bundled under ``data/models``, :mod:`biaskit.training.recipes`)
    or ``"random"`` (the tiny random-weight stand-in).  ``is_fallback`` is True only for the random
    stand-in, whose numbers mean nothing.
    """

    name: str
    is_fallback: bool
    message: str
    kind: str = "pretrained"


#: the pretrained model tried first by ``resolve_default_model(language=...)``
PRETRAINED_BY_LANGUAGE: dict[str, str] = {"es": BETO, "en": "bert-base-uncased"}
#: the bundled trained-here model used when that pretrained model is not on this machine
TRAINED_BY_LANGUAGE: dict[str, str] = {"es": "es-mlm", "en": "en-mlm"}
#: the causal counterparts: pretrained GPT-2 models, then the bundled causal model (none for Spanish)
PRETRAINED_CAUSAL_BY_LANGUAGE: dict[str, str] = {"es": "DeepESP/gpt2-spanish", "en": "gpt2"}
TRAINED_CAUSAL_BY_LANGUAGE: dict[str, str] = {"en": "en-clm", "es": "es-clm"}
#: what each bundled default model was trained on, in words a lay reader can follow
_TRAINED_TEXT: dict[str, str] = {
    "es-mlm": "the bundled Spanish Europarl sample",
    "en-mlm": "English sentences from the BUG, GAP and BOLD data sets",
    "en-clm": "English sentences from the BUG, GAP and BOLD data sets",
    "es-clm": "the bundled Spanish Europarl sample",
}


def _locally_available(name: str) -> bool:
    p = resolve_user_path(name)
    if p.exists():
        return (p / "config.json").exists()
    try:
        from huggingface_hub import try_to_load_from_cache

        hit = try_to_load_from_cache(name, "config.json")
        return isinstance(hit, str) and Path(hit).exists()
    except Exception:  # pragma: no cover - defensive: any hub-cache oddity means "not available"
        return False


def _trained_available(name: str) -> bool:
    """True when the bundled model ``name`` (:data:`biaskit.lm.catalogue.MODEL_NAMES`) is on disk."""
    from biaskit.lm import catalogue

    try:
        catalogue.model_path(name)
    except (FileNotFoundError, KeyError):
        return False
    return True


def trained_model_message(name: str, *, instead_of: str | None = None) -> str:
    """One plain sentence saying that the bundled trained-here model ``name`` runs, and what it is."""
    from biaskit.lm import catalogue

    causal = _is_causal_name(name)
    text = _TRAINED_TEXT.get(name)
    pppl = None
    try:
        rec = catalogue.training_record(name)
        text = text or rec.get("corpus")
        pppl = rec.get("bundled_held_out_ppl" if causal else "bundled_held_out_pppl")
    except (FileNotFoundError, KeyError, ValueError):
        pass
    on = f" on {text}" if text else ""
    what = "perplexity" if causal else "pseudo-perplexity"
    quality = f" (held-out {what} {float(pppl):,.0f})" if isinstance(pppl, (int, float)) else ""
    versus = f", not of {_short_name(instead_of)}" if instead_of else ""
    style = "GPT-2-style causal" if causal else "BERT-style"
    return (
        f"Using {name}, a small {style} model trained by biaskit{on}{quality}: a weak but real model; "
        f"its numbers are real measurements of that model{versus}."
    )


def _short_name(name: str) -> str:
    return "BETO" if name == BETO else name


def resolve_default_model(
    preferred: str | None = None,
    *,
    language: str = "es",
    lm_kind: ModelKind = "masked",
    allow_fallback: bool = False,
) -> ModelChoice:
    """The model a notebook runs: a pretrained one if on this machine, else a bundled trained-here one.

    ``preferred`` (or the environment variable ``BIASKIT_MLM``) names a model: a hub id in the local
    Hugging Face cache or a local folder (looked up locally, never on the network; a relative folder
    starts from :func:`biaskit.core.paths.caller_cwd`), a bundled model of :mod:`biaskit.lm.catalogue`
    (``"es-mlm"``, ``"en-mlm"``, ...) or a random stand-in by name (``"tiny"``, ``"tiny-causal"``).
    A named model that is none of these raises :class:`~biaskit.lm.loading.ModelNotFoundError` naming
    what was looked for and how to get it (a near-miss of a bundled name: "did you mean 'en-mlm'?"; a
    missing bundled model: ``python -m biaskit train-models NAME``); it never falls back to a stand-in.

    With neither (or ``"auto"``) the choice for ``language`` is, in order: the pretrained model (BETO
    for ``"es"``, ``bert-base-uncased`` for ``"en"``) if it is available locally; the bundled model
    trained by biaskit (``"es-mlm"`` / ``"en-mlm"``).  When neither is here,
    :class:`~biaskit.lm.loading.ModelNotFoundError` again, unless ``allow_fallback=True`` (a quick run
    that only checks the pipeline), which takes the random stand-in.  The returned
    :class:`ModelChoice` carries the message the notebooks print.

    ``lm_kind="causal"`` does the same for causal models: ``BIASKIT_CLM``, then ``gpt2`` (English) /
    ``DeepESP/gpt2-spanish`` (Spanish) when on this machine, the bundled ``en-clm`` / ``es-clm``, the
    causal stand-in ``"tiny-causal"`` (only with ``allow_fallback=True``).
    """
    if language not in PRETRAINED_BY_LANGUAGE:
        raise ValueError(f"language must be one of {sorted(PRETRAINED_BY_LANGUAGE)}, got {language!r}")
    if lm_kind not in ("masked", "causal"):
        raise ValueError(f"lm_kind must be 'masked' or 'causal', got {lm_kind!r}")
    causal = lm_kind == "causal"
    fallback = FALLBACK_CAUSAL_MODEL if causal else FALLBACK_MODEL
    env_var = "BIASKIT_CLM" if causal else "BIASKIT_MLM"
    env = os.environ.get(env_var)
    want = preferred if preferred not in (None, "auto") else env or None
    if want in (None, "auto"):
        pretrained = (PRETRAINED_CAUSAL_BY_LANGUAGE if causal else PRETRAINED_BY_LANGUAGE)[language]
        if _locally_available(pretrained):
            return ModelChoice(pretrained, False, _pretrained_message(pretrained, lm_kind), "pretrained")
        trained = (TRAINED_CAUSAL_BY_LANGUAGE if causal else TRAINED_BY_LANGUAGE).get(language)
        if trained is not None and _trained_available(trained):
            return ModelChoice(
                trained, False, trained_model_message(trained, instead_of=pretrained), "trained-here"
            )
        if allow_fallback:
            return ModelChoice(fallback, True, _fallback_message(pretrained, requested=False), "random")
        raise _no_default_error(language, lm_kind, pretrained, trained)
    if want in (FALLBACK_MODEL, FALLBACK_CAUSAL_MODEL):
        return ModelChoice(want, True, _fallback_message(want, requested=True), "random")
    if is_trained_name(want):
        if _trained_available(want):
            return ModelChoice(want, False, trained_model_message(want), "trained-here")
        raise model_not_found_error(want, lm_kind)
    if _locally_available(want):
        local = resolve_user_path(want)
        name = str(local) if local.exists() else want  # a relative folder: absolute from here on
        return ModelChoice(name, False, _pretrained_message(name, lm_kind), "pretrained")
    where = f" (from {env_var})" if preferred in (None, "auto") else ""
    raise model_not_found_error(want, lm_kind, where=where)


def did_you_mean(name: str) -> str | None:
    """The bundled model or stand-in name closest to ``name`` when ``name`` looks like a typo of it
    (:func:`difflib.get_close_matches`, cutoff 0.75: ``"en-mlmm"`` -> ``"en-mlm"``), else ``None``."""
    from biaskit.lm import catalogue

    known = [*catalogue.MODEL_NAMES, FALLBACK_MODEL, FALLBACK_CAUSAL_MODEL]
    if name in known:
        return None
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
    return close[0] if close else None


def model_not_found_error(
    name: str, lm_kind: ModelKind | None = None, *, where: str = ""
) -> ModelNotFoundError:
    """The :class:`~biaskit.lm.loading.ModelNotFoundError` for a model name that names nothing here.

    It says what was looked for: the bundled models (and, for a bundled name, its folder under
    ``data/models``), the folder ``name`` would be (absolute, from :func:`biaskit.core.paths.caller_cwd`)
    and the local Hugging Face cache; and how to get the model: "did you mean 'en-mlm'?" for a near-miss
    of a bundled name, ``python -m biaskit train-models NAME`` for a missing bundled model, the download
    instructions of :func:`~biaskit.lm.loading.how_to_get_model` for a hub id or folder.
    """
    from biaskit.lm import catalogue

    what = f"{lm_kind} language model" if lm_kind else "model"
    if is_trained_name(name):
        folder = catalogue.models_dir() / name
        return ModelNotFoundError(
            f"the bundled {what} {name!r}{where} is missing: looked for {folder / catalogue.TRAINING_JSON} "
            f"(not there). Retrain it with `python -m biaskit train-models {name}`, or restore "
            f"data/models/{name} from the repository (git checkout -- data/models). Nothing random is run in "
            "its place."
        )
    guess = did_you_mean(name)
    hint = f" Did you mean {guess!r}?" if guess else ""
    return ModelNotFoundError(
        f"{what} {name!r}{where} was not found.{hint} Looked for: a bundled model of biaskit (not one of "
        f"{', '.join(catalogue.MODEL_NAMES)}, nor a stand-in '{FALLBACK_MODEL}' / "
        f"'{FALLBACK_CAUSAL_MODEL}'), a folder {resolve_user_path(name)} (not there), the local Hugging Face "
        f"cache {hf_cache_dir()} (not there). Nothing random is run in its place. " + how_to_get_model(name)
    )


def _no_default_error(
    language: str, lm_kind: ModelKind, pretrained: str, trained: str | None
) -> ModelNotFoundError:
    """No model for the automatic choice: neither the pretrained one nor the bundled one is here."""
    from biaskit.lm import catalogue

    bundled = (
        f"the bundled {trained!r} is missing at {catalogue.models_dir() / trained} (retrain it with "
        f"`python -m biaskit train-models {trained}`)"
        if trained
        else "there is no bundled model for it"
    )
    return ModelNotFoundError(
        f"no {lm_kind} language model for language {language!r} on this machine: {pretrained!r} is not in "
        f"the local Hugging Face cache {hf_cache_dir()} and {bundled}. Name a model (a folder, a cached hub "
        f"id), get one ({how_to_get_model(pretrained)}), or, for a pipeline check only, ask for the random "
        f"stand-in by name ('{FALLBACK_CAUSAL_MODEL if lm_kind == 'causal' else FALLBACK_MODEL}') or pass "
        "allow_fallback=True: its numbers mean nothing about bias."
    )


def _pretrained_message(name: str, lm_kind: ModelKind = "masked") -> str:
    return f"Using the pretrained {lm_kind} language model {name!r} (found on this machine)."


def _fallback_message(want: str, *, requested: bool) -> str:
    if requested:
        why = "as requested"
    elif is_trained_name(want):
        why = f"because the bundled model {want!r} is missing from data/models"
    else:
        why = f"because {want!r} is not available on this machine"
    if not requested and is_trained_name(want):
        how = f"Retrain it with `python -m biaskit train-models {want}`."
    else:
        how = "" if requested else how_to_get_model(want)
    return (
        f"Using the TINY RANDOM stand-in model {why}. It has random weights: its numbers are "
        "meaningless for bias and only show that the pipeline runs end to end. " + how
    ).strip()


def is_trained_name(name: str) -> bool:
    from biaskit.lm import catalogue

    return name in catalogue.MODEL_NAMES and not resolve_user_path(name).exists()


def _is_causal_name(name: str) -> bool:
    """True for the bundled causal models (``en-clm``, ``en-clm-planted-sXX``, ...) and the causal
    stand-in."""
    return name == FALLBACK_CAUSAL_MODEL or "-clm" in name


def kind_of_name(name: str) -> ModelKind | None:
    """The kind of the model ``name`` when it can be told without loading weights, else ``None``.

    The stand-ins and bundled names by name (``"tiny-causal"``, ``"en-clm..."`` are causal), a local
    folder by its ``config.json`` (:func:`~biaskit.lm.loading.model_kind`); a hub id not on this
    machine gives ``None``.
    """
    if name == FALLBACK_MODEL:
        return "masked"
    if _is_causal_name(name):
        return "causal"
    if is_trained_name(name):
        return "masked"
    try:
        return model_kind(name)
    except (ModelNotAvailableError, OSError, ValueError):
        return None


def _warn_random(name: str) -> None:
    logger.warning(
        "model %r is a random-weight stand-in: the numbers it gives come from RANDOM WEIGHTS and mean "
        "nothing about bias (a pipeline check only)",
        name,
    )


def _refuse_near_miss(name: str, lm_kind: ModelKind | None) -> None:
    """A name that is no folder here, not cached, and a near-miss of a bundled name: a typo, refused before
    any hub look-up (:func:`model_not_found_error`, "did you mean ...?")."""
    if resolve_user_path(name).exists() or did_you_mean(name) is None or _locally_available(name):
        return
    raise model_not_found_error(name, lm_kind)


def _bundled_folder(name: str, lm_kind: ModelKind | None) -> Path:
    """The verified folder of the bundled model ``name`` (:func:`biaskit.lm.catalogue.verified_model_path`);
    :class:`~biaskit.lm.loading.ModelNotFoundError` with the retrain command when it is missing."""
    from biaskit.lm import catalogue

    if name.endswith("-w2v"):
        raise ValueError(
            f"{name!r} is a bundled set of word vectors, not a language model: load it with "
            f"biaskit.embeddings.vectors.load_trained_vectors({name!r})"
        )
    try:
        return catalogue.verified_model_path(name)
    except FileNotFoundError as exc:
        raise model_not_found_error(name, lm_kind) from exc


def get_masked_lm(
    name: str | None = None,
    *,
    device: str | torch.device = "auto",
    seed: int = 0,
    allow_fallback: bool = False,
) -> MaskedLM:
    """Load ``name``: ``None``/``"auto"`` -> :func:`resolve_default_model` (Spanish; ``allow_fallback``
    as there); ``"tiny"`` -> the random stand-in (with a WARNING that its numbers come from random
    weights); a bundled name (``"es-mlm"``, ``"en-mlm"``, ...) -> its folder under ``data/models``, checked
    against its sha256 manifest (:func:`biaskit.lm.catalogue.verified_model_path`); anything else ->
    :func:`~biaskit.lm.loading.load_masked_lm`.  A name that names nothing here raises
    :class:`~biaskit.lm.loading.ModelNotFoundError` (:func:`model_not_found_error`)."""
    if name in (None, "auto"):
        name = resolve_default_model(allow_fallback=allow_fallback).name
    if name == FALLBACK_MODEL:
        _warn_random(name)
        return tiny_masked_lm(seed=seed, device=str(resolve_device(device)))
    if is_trained_name(name):
        folder = _bundled_folder(name, "masked")
        with quiet_hf_progress():  # a 2-layer model loads in a blink: no "Loading weights" bar
            return load_masked_lm(folder, device=device)
    _refuse_near_miss(name, "masked")
    return load_masked_lm(name, device=device)


def get_lm(
    name: str | ModelChoice | None = None,
    *,
    kind: ModelKind | None = None,
    device: str | torch.device = "auto",
    seed: int = 0,
    language: str = "es",
    dtype: str | torch.dtype | None = None,
    allow_fallback: bool = False,
) -> LanguageModel:
    """Load any model by name, masked or causal: the one entry point notebooks and experiment configs use.

    ``None``/``"auto"`` -> :func:`resolve_default_model` for ``language`` and ``kind`` (masked when
    ``kind`` is ``None``); ``"tiny"`` / ``"tiny-causal"`` -> the random stand-ins
    (:func:`tiny_masked_lm`, :func:`tiny_causal_lm`); a bundled name (``"en-mlm"``, ``"en-clm"``,
    ``"en-planted-s80"``, ``"en-clm-planted-s80"``, ...) -> its folder under ``data/models``; anything
    else (a hub id or folder) -> :func:`~biaskit.lm.loading.load_lm`, which reads the kind from the
    model's configuration unless ``kind`` is given.  ``dtype`` sets the weights' precision
    (:func:`~biaskit.lm.loading.resolve_dtype`; the stand-ins are converted too).

    Never a guess: a bundled model is checked against its sha256 manifest
    (:func:`biaskit.lm.catalogue.verified_model_path`); a name that is no bundled model, no folder
    (relative folders start from :func:`biaskit.core.paths.caller_cwd`) and a near-miss of a bundled name
    (``"en-mlmm"``) raises :class:`~biaskit.lm.loading.ModelNotFoundError` ("did you mean 'en-mlm'?");
    a stand-in runs only when named (a WARNING says its numbers come from random weights) or, for
    ``None``/``"auto"``, with ``allow_fallback=True``.

    ``name`` may also be the :class:`ModelChoice` :func:`resolve_default_model` returned: the model is then
    loaded as that choice says (a stand-in, a bundled model or a pretrained one), without classifying its
    name a second time.
    """
    if name in (None, "auto"):
        name = resolve_default_model(
            language=language, lm_kind=kind or "masked", allow_fallback=allow_fallback
        )
    if isinstance(name, ModelChoice):
        return _load_choice(name, kind=kind, device=device, seed=seed, dtype=dtype)
    if name in (FALLBACK_MODEL, FALLBACK_CAUSAL_MODEL):
        _warn_random(name)
        make = tiny_masked_lm if name == FALLBACK_MODEL else tiny_causal_lm
        lm = make(seed=seed, device=str(resolve_device(device)))
        want = resolve_dtype(dtype)
        if want is not None:
            lm.model.to(want)
        return lm
    if is_trained_name(name):
        folder = _bundled_folder(name, kind)
        with quiet_hf_progress():
            return load_lm(folder, kind=kind, device=device, dtype=dtype)
    _refuse_near_miss(name, kind)
    return load_lm(name, kind=kind, device=device, dtype=dtype)


def _load_choice(
    choice: ModelChoice,
    *,
    kind: ModelKind | None,
    device: str | torch.device,
    seed: int,
    dtype: str | torch.dtype | None,
) -> LanguageModel:
    """The model of a :class:`ModelChoice`, by its kind: the random stand-in, the bundled folder (checked
    against its manifest) or :func:`~biaskit.lm.loading.load_lm` of the pretrained name or folder."""
    if choice.kind == "random":
        _warn_random(choice.name)
        make = tiny_causal_lm if choice.name == FALLBACK_CAUSAL_MODEL else tiny_masked_lm
        lm = make(seed=seed, device=str(resolve_device(device)))
        want = resolve_dtype(dtype)
        if want is not None:
            lm.model.to(want)
        return lm
    if choice.kind == "trained-here":
        folder = _bundled_folder(choice.name, kind)
        with quiet_hf_progress():
            return load_lm(folder, kind=kind, device=device, dtype=dtype)
    return load_lm(choice.name, kind=kind, device=device, dtype=dtype)


# =============================================================================================
# random-weight stand-ins (tests, benchmarks, quick runs): their numbers mean nothing about bias
# =============================================================================================
def _default_texts() -> list[str]:
    from biaskit.data.datasets import load_crows_pairs_es_table

    table = load_crows_pairs_es_table()
    cols = ["sent_more", "sent_less", "sent_more_par", "sent_less_par", "sent_more_ran", "sent_less_ran"]
    return [s for c in cols for s in table[c] if isinstance(s, str)]


@functools.lru_cache(maxsize=4)
def _default_vocab(vocab_size: int, lowercase: bool) -> tuple[str, ...]:
    return tuple(build_wordpiece_vocab(_default_texts(), vocab_size, lowercase=lowercase))


def tiny_tokenizer(
    texts: Sequence[str] | None = None,
    vocab_size: int = 1500,
    *,
    lowercase: bool = True,
    model_max_length: int = 128,
):
    """A ``transformers`` BERT tokenizer over :func:`build_wordpiece_vocab` (bundled Spanish text by
    default)."""
    if texts is None:
        vocab = _default_vocab(vocab_size, lowercase)
    else:
        vocab = tuple(build_wordpiece_vocab(list(texts), vocab_size, lowercase=lowercase))
    return bert_wordpiece_tokenizer(vocab, lowercase=lowercase, model_max_length=model_max_length)


def _output_rows(tokenizer: Any, model_vocab_size: int | None) -> int:
    """Rows of a stand-in's embedding / output layer: the tokenizer's vocabulary, or ``model_vocab_size``."""
    n_vocab = len(tokenizer.get_vocab())
    if model_vocab_size is not None and model_vocab_size < n_vocab:
        raise ValueError(f"model_vocab_size must be >= the tokenizer's {n_vocab} entries")
    return model_vocab_size or n_vocab


def _stand_in(
    wrapper: type[LanguageModel],
    model_class: Any,
    config: Any,
    tokenizer: Any,
    name: str,
    *,
    seed: int,
    device: str,
) -> Any:
    """A random-weight model from ``config`` (weights from ``torch.manual_seed(seed)``, the global RNG left
    as it was), in eval mode on ``device``, wrapped as an in-process fallback model."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = model_class(config)
    model.eval()
    model.to(device)
    return wrapper(
        model=model,
        tokenizer=tokenizer,
        name=name,
        revision=None,
        lowercase=True,
        in_process=True,
        is_fallback=True,
    )


def tiny_masked_lm(
    seed: int = 0,
    *,
    hidden_size: int = 16,
    num_hidden_layers: int = 1,
    num_attention_heads: int = 2,
    intermediate_size: int = 32,
    vocab_size: int = 1500,
    max_position_embeddings: int = 128,
    initializer_range: float = 0.4,
    texts: Sequence[str] | None = None,
    model_vocab_size: int | None = None,
    device: str = "cpu",
) -> MaskedLM:
    """A randomly initialised ``BertForMaskedLM`` + WordPiece tokenizer, wrapped as :class:`MaskedLM`.

    Defaults give a model of ~60k parameters that scores the 1503 Spanish CrowS-Pairs
    pairs in seconds on one CPU core.  ``initializer_range`` is larger than BERT's
    0.02 so that the predicted distributions are far from uniform (a wrong position or
    target id then changes the scores visibly).  The model window is
    ``max_position_embeddings`` tokens.  ``name`` is ``"tiny-random-bert(seed=...)"``;
    caches are keyed by a hash of the weights and vocabulary.  ``model_vocab_size`` (>= the
    tokenizer's vocabulary) widens the embedding / output layer, e.g. to BETO's 31,002 rows
    for realistic benchmark timings; the extra rows are ids the tokenizer never produces.
    """
    from transformers import BertConfig, BertForMaskedLM

    tokenizer = tiny_tokenizer(texts, vocab_size, model_max_length=max_position_embeddings)
    n_rows = _output_rows(tokenizer, model_vocab_size)
    config = BertConfig(
        vocab_size=n_rows,
        hidden_size=hidden_size,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads,
        intermediate_size=intermediate_size,
        max_position_embeddings=max_position_embeddings,
        initializer_range=initializer_range,
        pad_token_id=tokenizer.pad_token_id,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    name = f"tiny-random-bert(seed={seed},h={hidden_size},l={num_hidden_layers},v={n_rows})"
    return _stand_in(MaskedLM, BertForMaskedLM, config, tokenizer, name, seed=seed, device=device)


def tiny_causal_lm(
    seed: int = 0,
    *,
    hidden_size: int = 16,
    num_hidden_layers: int = 1,
    num_attention_heads: int = 2,
    intermediate_size: int = 32,
    vocab_size: int = 1500,
    max_position_embeddings: int = 128,
    initializer_range: float = 0.4,
    texts: Sequence[str] | None = None,
    model_vocab_size: int | None = None,
    device: str = "cpu",
) -> CausalLM:
    """A randomly initialised ``GPT2LMHeadModel`` + the WordPiece tokenizer of :func:`tiny_masked_lm`.

    The causal twin of :func:`tiny_masked_lm` (same vocabulary and sizes, ~60k parameters): the
    tokenizer's ``[CLS]`` is its BOS token (every sentence is scored after it) and ``[SEP]`` its EOS.
    ``initializer_range`` is large so that predictions are far from uniform.  Name
    ``"tiny-random-gpt2(seed=...)"``; caches are keyed by a hash of the weights and vocabulary.
    ``model_vocab_size`` widens the embedding / output layer (e.g. to GPT-2's 50,257 rows for
    realistic benchmark timings).  **Its scores mean nothing about bias**: the weights are random.
    """
    from transformers import GPT2Config, GPT2LMHeadModel

    tokenizer = tiny_tokenizer(texts, vocab_size, model_max_length=max_position_embeddings)
    tokenizer.bos_token, tokenizer.eos_token = "[CLS]", "[SEP]"
    n_rows = _output_rows(tokenizer, model_vocab_size)
    config = GPT2Config(
        vocab_size=n_rows,
        n_embd=hidden_size,
        n_layer=num_hidden_layers,
        n_head=num_attention_heads,
        n_inner=intermediate_size,
        n_positions=max_position_embeddings,
        initializer_range=initializer_range,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    name = f"tiny-random-gpt2(seed={seed},h={hidden_size},l={num_hidden_layers},v={n_rows})"
    return _stand_in(CausalLM, GPT2LMHeadModel, config, tokenizer, name, seed=seed, device=device)
