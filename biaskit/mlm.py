r"""Masked language models: loading (offline-safe) and batched pseudo-log-likelihood scoring.

Seed 000 (Maddalozzo 2023), chapter 4: every bias metric on a masked language model
(MLM) ``m`` is built from conditional probabilities :math:`P_m(w_t \mid W_{\setminus t})`
of a token given the rest of the sentence.  This module computes them:

* :func:`score_pairs` / :func:`score_sentences` - sentence scores

  - ``"sz"``: the pseudo-log-likelihood of Salazar et al. (2020), seed 000 section 4.1.3,
    :math:`PLL(W) = \sum_{t=1}^{|W|} \log P_m(w_t \mid W_{\setminus t})`: every token
    but ``[CLS]`` / ``[SEP]`` is masked once;
  - ``"cp"``: the CrowS-Pairs score of Nangia et al. (2020), seed 000 section 4.1.6,
    :math:`score(T) = \sum_{u \in U} \log P_m(u \mid U_{\setminus u}, O)`: only the
    tokens ``U`` shared by the two sentences of a pair are masked, one at a time;
    ``U`` is found with :class:`difflib.SequenceMatcher` over the token ids, exactly as
    the official ``metric.py`` of nyu-mll/crows-pairs does (``get_span`` /
    ``mask_unigram``; see :func:`crows_template`);
  - ``"aul"``: All Unmasked Likelihood of Kaneko & Bollegala (2022): one forward pass
    with nothing masked, the *mean* of :math:`\log P_m(w_t \mid W)` over the tokens;

* :func:`fill_blank_probabilities` - probability of a word at a single mask (seed 000
  sections 4.1.2 and 4.1.5: the baseline :math:`P(\text{stereotypical sentence})` and
  StereoSet intrasentence options);
* :func:`load_masked_lm` / :func:`resolve_default_model` / :func:`get_masked_lm` - loading.

Speed: the masked copies of one or many sentences are scored together, ``batch_size``
copies per forward pass (padding + attention mask, :func:`torch.inference_mode`); for
BERT-layout encoders (BERT, RoBERTa, XLM-R, CamemBERT) the last encoder layer and the
output layer run only at the masked position of each copy (exact: only the keys and values
of the last layer are needed at the other positions).  ``benchmarks/bench_pll.py``
compares with the official one-forward-per-mask loop.

Caching: sentence scores (with their per-token log-probabilities) are appended, chunk by
chunk, to a JSON-lines file under ``cache_dir()/pll/``, keyed by the model (name +
revision, or a hash of the weights for in-process models), the metric and the dataset
hash; an interrupted run resumes where it stopped.

Bad input is never handled silently: every row concerned is listed with its row (and file
line) in a :class:`~biaskit.datasets.ValidationReport` and logged as a WARNING.

* Skipped (``action="skipped"``; ``errors="raise"`` raises instead): empty, missing or
  mis-encoded sentences, sentences longer than the model window, sentences containing
  special-token text, and (``unk="skip"``) sentences with ``[UNK]`` tokens.
* Kept (``action="kept"``), as the official ``metric.py`` and the thesis (seed 000
  section 4.2.1: N = 1,503 Spanish pairs) count them: pairs whose two sentences are
  **identical after tokenisation** (scored once; both sides get the same value, an exact
  tie) and, for ``"cp"``, pairs that **share no token besides [CLS]/[SEP]** (both scores
  are empty sums, 0.0: an exact tie).  They are flagged in the ``tie_reason`` column of
  :attr:`PLLScores.scores` (:attr:`PLLScores.tie_rows`) and stay in the denominator of
  :func:`biaskit.metrics.crows.crows_score` as ties.  With ``unk="score"`` (the default
  of :func:`score_pairs`, as ``metric.py``) sentences with ``[UNK]`` are kept too.

CrowS-Pairs order: ``metric.py`` aligns ``(sent1, sent2)`` = ``(sent_more, sent_less)`` for
``stereo`` rows but ``(sent_less, sent_more)`` for ``antistereo`` rows, and
:class:`difflib.SequenceMatcher` is not symmetric, so the shared tokens can differ between
the two orders.  :func:`score_pairs` takes the per-pair ``direction`` (the
``stereo_antistereo`` column) and aligns each pair in the official order.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import logging
import math
import os
import re
import socket
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import torch

from biaskit.datasets import ValidationReport, dataset_fingerprint, detect_encoding_problem
from biaskit.paths import cache_dir, cache_name

logger = logging.getLogger(__name__)

__all__ = [
    "BETO",
    "DEFAULT_MODEL",
    "FALLBACK_MODEL",
    "MaskedLM",
    "ModelChoice",
    "ModelNotAvailableError",
    "PLLScores",
    "PLLMetric",
    "TIE_IDENTICAL",
    "TIE_NO_SHARED",
    "crows_template",
    "baseline_probabilities",
    "fill_blank_probabilities",
    "get_masked_lm",
    "how_to_get_model",
    "load_masked_lm",
    "resolve_default_model",
    "resolve_device",
    "score_pairs",
    "score_sentences",
]

#: BETO uncased (Cañete et al. 2020), the model of the thesis (seed 000, section 4.4.1).
BETO = "dccuchile/bert-base-spanish-wwm-uncased"
DEFAULT_MODEL = BETO
#: Name of the offline fallback: :func:`biaskit.testing.tiny_masked_lm` (random weights).
FALLBACK_MODEL = "tiny"

PLLMetric = Literal["sz", "cp", "aul"]
Errors = Literal["report", "raise"]
_CACHE_VERSION = 1
#: per example index: one (token ids, scored positions, log-probabilities) per sentence side
_Done = dict[int, list[tuple[list[int], list[int], np.ndarray]]]


# =============================================================================================
# loading
# =============================================================================================
class ModelNotAvailableError(FileNotFoundError):
    """The requested model is neither a local folder nor in the Hugging Face cache, and the hub
    cannot be reached (or offline mode is on)."""


_HUB_ID = re.compile(r"^(?:[A-Za-z0-9][\w.-]*/)?[A-Za-z0-9][\w.-]*$")


def _is_hub_id(name: str) -> bool:
    """True when ``name`` is spelled like a Hugging Face hub id (``name`` or ``org/name``)."""
    return (
        len(name) <= 96
        and bool(_HUB_ID.match(name))
        and "--" not in name
        and ".." not in name
        and not name.endswith((".", "-"))
    )


def _looks_like_path(name: str) -> bool:
    """True when ``name`` is meant as a folder on this machine rather than a hub id.

    A path: absolute, starting with ``~``, ``./`` or ``../`` (or ``.``/``..``), containing a
    backslash, a name with a separator whose parent folder exists here (``models/bert`` with a
    local ``models/``), or any name that is not a valid hub id (``a/b/c``, spaces, ...).
    """
    if not name:
        return False
    if os.path.isabs(name) or name in (".", "..") or name.startswith(("~", "./", "../", ".\\", "..\\")):
        return True
    if "\\" in name:
        return True
    if "/" in name or os.sep in name:
        parent = Path(name).expanduser().parent
        if str(parent) not in ("", ".") and parent.is_dir():
            return True
    return not _is_hub_id(name)


def how_to_get_model(name: str) -> str:
    """Instructions (for an error message) on getting the model ``name`` for offline use.

    For a hub id: how to download it once with ``huggingface-cli`` and point biaskit at the
    folder.  For a name that is a local path (:func:`_looks_like_path`): that the folder
    (resolved to an absolute path) was not found or is not a saved model, and how to put a
    model there; a path is never passed to ``huggingface-cli download`` as if it were a hub id.
    """
    if _looks_like_path(name):
        p = Path(name).expanduser().resolve()
        if not p.exists():
            state = "the folder was not found"
        elif not p.is_dir():
            state = "it is a file, not a model folder"
        else:
            state = "the folder is not a saved model (it has no config.json)"
        return (
            f"{name!r} is a local path, not a Hugging Face hub id: {p}: {state} "
            f"(relative paths start from the working directory {Path.cwd()}).\n"
            "Check the path, or save a model there once on a machine with internet access, e.g.\n"
            f"    huggingface-cli download <hub-id, e.g. {BETO}> --local-dir {p}\n"
            "and copy the folder to this machine."
        )
    return (
        f"To use {name!r} offline, download it once on a machine with internet access:\n"
        f"    huggingface-cli download {name} --local-dir ./models/{name.split('/')[-1]}\n"
        f'(or: python -c "from transformers import AutoModelForMaskedLM as M, AutoTokenizer as T; '
        f"T.from_pretrained('{name}').save_pretrained('./models/x'); "
        f"M.from_pretrained('{name}').save_pretrained('./models/x')\")\n"
        "then pass the folder path as the model name (e.g. model='./models/...'), or copy the "
        "Hugging Face cache (~/.cache/huggingface/hub) to this machine."
    )


def _hf_offline() -> bool:
    return any(
        os.environ.get(v, "").strip().lower() in {"1", "true", "yes", "on"}
        for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def _hub_reachable(timeout: float = 3.0) -> bool:
    """True when a TCP connection to the Hugging Face endpoint opens within ``timeout`` seconds."""
    from urllib.parse import urlparse

    url = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    host, port = url.hostname or "huggingface.co", url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


@dataclass(eq=False)
class MaskedLM:
    """A masked language model with its tokenizer and the metadata the scorers need.

    Attributes
    ----------
    model, tokenizer:
        A ``transformers`` masked-LM (eval mode) and its tokenizer.
    name:
        Hub id, local path, or a descriptive name for in-process models.
    revision:
        Hub revision (branch, tag or commit) when known.
    lowercase:
        Lower-case sentences with ``str.lower()`` before tokenising, as the official
        CrowS-Pairs ``metric.py`` does for uncased models (``uncased=True`` there).
        ``None`` -> inferred: ``True`` when the name contains ``"uncased"`` or the
        tokenizer lower-cases.
    in_process:
        True for models built in memory (:mod:`biaskit.testing`): caches are then keyed
        by a hash of the weights and vocabulary instead of the name.
    is_fallback:
        True for the offline stand-in; notebooks say so and treat its numbers as meaningless.
    """

    model: Any
    tokenizer: Any
    name: str
    revision: str | None = None
    lowercase: bool | None = None
    in_process: bool = False
    is_fallback: bool = False
    _fingerprint: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.lowercase is None:
            self.lowercase = bool(
                "uncased" in self.name.lower() or getattr(self.tokenizer, "do_lower_case", False)
            )
        if self.tokenizer.mask_token_id is None:
            raise ValueError(f"{self.name}: the tokenizer has no mask token; not a masked language model")

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def max_length(self) -> int:
        """Longest token sequence (special tokens included) the model accepts."""
        n_pos = int(getattr(self.model.config, "max_position_embeddings", 512) or 512)
        tok_max = int(getattr(self.tokenizer, "model_max_length", n_pos) or n_pos)
        if tok_max > 1_000_000:
            tok_max = n_pos
        return min(n_pos, tok_max)

    def fingerprint(self) -> str:
        """Cache key of the model: name + revision, or a sha256 of weights + vocabulary."""
        if self._fingerprint is None:
            h = hashlib.sha256()
            if self.in_process:
                for k, v in sorted(self.model.state_dict().items()):
                    h.update(k.encode())
                    h.update(v.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
                h.update(json.dumps(sorted(self.tokenizer.get_vocab().items())).encode())
            else:
                commit = getattr(self.model.config, "_commit_hash", None)
                h.update(f"{self.name}|{self.revision}|{commit}".encode())
                p = Path(self.name)
                if p.is_dir():  # a local folder: changes when its files change
                    for f in sorted(p.iterdir()):
                        if f.is_file():
                            st = f.stat()
                            h.update(f"{f.name}:{st.st_size}:{st.st_mtime_ns}".encode())
            h.update(f"lower={self.lowercase}".encode())
            self._fingerprint = h.hexdigest()[:16]
        return self._fingerprint

    def __repr__(self) -> str:
        n = sum(p.numel() for p in self.model.parameters())
        return f"MaskedLM({self.name!r}, params={n:,}, device={self.device}, lowercase={self.lowercase})"


def resolve_device(device: str | torch.device) -> torch.device:
    """``"auto"`` -> CUDA when available, else CPU; any other value -> ``torch.device(device)``."""
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def load_masked_lm(
    name_or_path: str | Path,
    *,
    device: str | torch.device = "auto",
    revision: str | None = None,
    local_files_only: bool | None = None,
    lowercase: bool | None = None,
    hub_timeout: float = 3.0,
) -> MaskedLM:
    """Load a Hugging Face masked LM (``AutoTokenizer`` + ``AutoModelForMaskedLM``) in eval mode.

    ``name_or_path`` is a local folder (used as is) or a hub id.  A hub id is first looked
    up in the local Hugging Face cache only; the network is tried only when offline mode
    is off (``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE`` unset and ``local_files_only``
    not ``True``) **and** the hub answers a TCP connection within ``hub_timeout`` seconds,
    so nothing hangs without a network.  A model that cannot be found raises
    :class:`ModelNotAvailableError` naming the model and how to download it.

    ``device="auto"`` picks CUDA when available, else CPU.  Weights stored in half precision (the
    bundled trained models, :mod:`biaskit.trained_models`) are loaded as float32 on a CPU, where
    half-precision arithmetic is slow and inexact; on a GPU they stay as stored.
    """
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    name = str(name_or_path)
    dev = resolve_device(device)
    path = Path(name).expanduser()

    def _load(src: str, local_only: bool) -> tuple[Any, Any]:
        tok = AutoTokenizer.from_pretrained(src, revision=revision, local_files_only=local_only)
        mdl = AutoModelForMaskedLM.from_pretrained(src, revision=revision, local_files_only=local_only)
        return tok, mdl

    if not path.exists() and _looks_like_path(name):
        raise ModelNotAvailableError(how_to_get_model(name))
    if path.exists():
        if not path.is_dir() or not (path / "config.json").exists():
            raise ModelNotAvailableError(how_to_get_model(str(path.resolve())))
        tok, mdl = _load(str(path), True)
        name = str(path)
    else:
        try:
            tok, mdl = _load(name, True)
        except (OSError, ValueError) as exc:
            offline = _hf_offline() if local_files_only is None else local_files_only
            if offline:
                raise ModelNotAvailableError(
                    f"model {name!r} is not in the local Hugging Face cache and offline mode is on "
                    f"(HF_HUB_OFFLINE / local_files_only). " + how_to_get_model(name)
                ) from exc
            if not _hub_reachable(hub_timeout):
                raise ModelNotAvailableError(
                    f"model {name!r} is not in the local Hugging Face cache and the hub cannot be "
                    f"reached (no network). " + how_to_get_model(name)
                ) from exc
            try:
                tok, mdl = _load(name, False)
            except (OSError, ValueError) as exc2:
                raise ModelNotAvailableError(
                    f"could not load {name!r} from the hub: {exc2}. " + how_to_get_model(name)
                ) from exc2
    mdl.eval()
    if dev.type == "cpu" and mdl.dtype in (torch.float16, torch.bfloat16):
        mdl = mdl.float()
    mdl.to(dev)
    return MaskedLM(model=mdl, tokenizer=tok, name=name, revision=revision, lowercase=lowercase)


@dataclass(frozen=True)
class ModelChoice:
    """Which model a notebook will run, and a plain-language message saying which and why.

    ``kind`` is ``"pretrained"`` (a downloaded or local model such as BETO), ``"trained-here"`` (a
    small model trained by biaskit and bundled under ``data/models``, :mod:`biaskit.trained_models`)
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
#: what each bundled default model was trained on, in words a lay reader can follow
_TRAINED_TEXT: dict[str, str] = {
    "es-mlm": "the bundled Spanish Europarl sample",
    "en-mlm": "English sentences from the BUG, GAP and BOLD data sets",
}


def _locally_available(name: str) -> bool:
    p = Path(name).expanduser()
    if p.exists():
        return (p / "config.json").exists()
    try:
        from huggingface_hub import try_to_load_from_cache

        hit = try_to_load_from_cache(name, "config.json")
        return isinstance(hit, str) and Path(hit).exists()
    except Exception:  # pragma: no cover - defensive: any hub-cache oddity means "not available"
        return False


def _trained_available(name: str) -> bool:
    """True when the bundled model ``name`` (:data:`biaskit.trained_models.MODEL_NAMES`) is on disk."""
    from biaskit import trained_models

    try:
        trained_models.model_path(name)
    except (FileNotFoundError, KeyError):
        return False
    return True


def trained_model_message(name: str, *, instead_of: str | None = None) -> str:
    """One plain sentence saying that the bundled trained-here model ``name`` runs, and what it is."""
    from biaskit import trained_models

    text = _TRAINED_TEXT.get(name)
    pppl = None
    try:
        rec = trained_models.training_record(name)
        text = text or rec.get("corpus")
        pppl = rec.get("bundled_held_out_pppl")
    except (FileNotFoundError, KeyError, ValueError):
        pass
    on = f" on {text}" if text else ""
    quality = f" (held-out pseudo-perplexity {float(pppl):,.0f})" if isinstance(pppl, (int, float)) else ""
    versus = f", not of {_short_name(instead_of)}" if instead_of else ""
    return (
        f"Using {name}, a small BERT-style model trained by biaskit{on}{quality}: a weak but real model; "
        f"its numbers are real measurements of that model{versus}."
    )


def _short_name(name: str) -> str:
    return "BETO" if name == BETO else name


def resolve_default_model(preferred: str | None = None, *, language: str = "es") -> ModelChoice:
    """The model a notebook runs: a pretrained one if on this machine, else a bundled trained-here one.

    ``preferred`` (or the environment variable ``BIASKIT_MLM``) names a model: a hub id or local
    folder (looked up locally, never on the network), a bundled model of
    :mod:`biaskit.trained_models` (``"es-mlm"``, ``"en-mlm"``, ...) or ``"tiny"``.  With neither
    (or ``"auto"``) the choice for ``language`` is, in order: the pretrained model (BETO for
    ``"es"``, ``bert-base-uncased`` for ``"en"``) if it is available locally; the bundled model
    trained by biaskit (``"es-mlm"`` / ``"en-mlm"``); the tiny random-weight stand-in.  A named
    model that is not available falls back to the tiny stand-in, as before.  The returned
    :class:`ModelChoice` carries the message the notebooks print.
    """
    if language not in PRETRAINED_BY_LANGUAGE:
        raise ValueError(f"language must be one of {sorted(PRETRAINED_BY_LANGUAGE)}, got {language!r}")
    want = preferred if preferred not in (None, "auto") else os.environ.get("BIASKIT_MLM") or None
    if want in (None, "auto"):
        pretrained = PRETRAINED_BY_LANGUAGE[language]
        if _locally_available(pretrained):
            return ModelChoice(pretrained, False, _pretrained_message(pretrained), "pretrained")
        trained = TRAINED_BY_LANGUAGE[language]
        if _trained_available(trained):
            return ModelChoice(
                trained, False, trained_model_message(trained, instead_of=pretrained), "trained-here"
            )
        return ModelChoice(FALLBACK_MODEL, True, _fallback_message(pretrained, requested=False), "random")
    if want == FALLBACK_MODEL:
        return ModelChoice(FALLBACK_MODEL, True, _fallback_message(want, requested=True), "random")
    if _is_trained_name(want):
        if _trained_available(want):
            return ModelChoice(want, False, trained_model_message(want), "trained-here")
        return ModelChoice(FALLBACK_MODEL, True, _fallback_message(want, requested=False), "random")
    if _locally_available(want):
        return ModelChoice(want, False, _pretrained_message(want), "pretrained")
    return ModelChoice(FALLBACK_MODEL, True, _fallback_message(want, requested=False), "random")


def _is_trained_name(name: str) -> bool:
    from biaskit import trained_models

    return name in trained_models.MODEL_NAMES and not Path(name).expanduser().exists()


def _pretrained_message(name: str) -> str:
    return f"Using the pretrained masked language model {name!r} (found on this machine)."


def _fallback_message(want: str, *, requested: bool) -> str:
    if requested:
        why = "as requested"
    elif _is_trained_name(want):
        why = f"because the bundled model {want!r} is missing from data/models"
    else:
        why = f"because {want!r} is not available on this machine"
    if not requested and _is_trained_name(want):
        how = f"Retrain it with `python -m biaskit train-models {want}`."
    else:
        how = "" if requested else how_to_get_model(want)
    return (
        f"Using the TINY RANDOM stand-in model {why}. It has random weights: its numbers are "
        "meaningless for bias and only show that the pipeline runs end to end. " + how
    )


def get_masked_lm(name: str | None = None, *, device: str | torch.device = "auto", seed: int = 0) -> MaskedLM:
    """Load ``name``: ``None``/``"auto"`` -> :func:`resolve_default_model` (Spanish); ``"tiny"`` -> the
    random stand-in; a bundled name (``"es-mlm"``, ``"en-mlm"``, ...) ->
    :func:`biaskit.trained_models.load_trained_mlm`; anything else -> :func:`load_masked_lm`."""
    if name in (None, "auto"):
        name = resolve_default_model().name
    if name == FALLBACK_MODEL:
        from biaskit.testing import tiny_masked_lm

        return tiny_masked_lm(seed=seed, device=str(resolve_device(device)))
    if _is_trained_name(name):
        from biaskit import trained_models

        with quiet_hf_progress():  # a 2-layer model loads in a blink: no "Loading weights" bar
            return trained_models.load_trained_mlm(name, device=str(device))
    return load_masked_lm(name, device=device)


@contextlib.contextmanager
def quiet_hf_progress(quiet: bool = True) -> Iterator[None]:
    """Hide transformers' own progress bars ("Loading weights", "Writing model shards") inside the block.

    With ``quiet=False`` nothing changes.  The previous setting is restored on exit.
    """
    from transformers.utils import logging as hf_logging

    was = hf_logging.is_progress_bar_enabled()
    if quiet:
        hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if quiet and was:
            hf_logging.enable_progress_bar()


# =============================================================================================
# the batched scoring core
# =============================================================================================
# masked-LM classes whose forward is exactly ``head(base_model(...)[0])``: the output layer can then be
# applied to the masked positions only; any other class goes through its full forward pass
_HEADS = {
    "BertForMaskedLM": "cls",
    "RobertaForMaskedLM": "lm_head",
    "XLMRobertaForMaskedLM": "lm_head",
    "CamembertForMaskedLM": "lm_head",
    "AlbertForMaskedLM": "predictions",
}


def _mlm_head(model: Any) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """The output layer of a known masked-LM class, to apply it at the masked positions only."""
    attr = _HEADS.get(type(model).__name__)
    head = getattr(model, attr, None) if attr else None
    return head if isinstance(head, torch.nn.Module) else None


def _hidden_and_head(
    lm: MaskedLM, input_ids: torch.Tensor, attention_mask: torch.Tensor
) -> tuple[torch.Tensor, Callable | None]:
    head = _mlm_head(lm.model)
    if head is not None:
        out = lm.model.base_model(input_ids=input_ids, attention_mask=attention_mask)
        return out[0], head
    logits = lm.model(input_ids=input_ids, attention_mask=attention_mask).logits
    return logits, None


class _LastLayerInput(Exception):
    """Carries the input of the encoder's last layer out of a forward pass that stops there."""

    def __init__(self, hidden: torch.Tensor) -> None:
        super().__init__()
        self.hidden = hidden


def _bert_like_last_layer(model: Any) -> Any | None:
    """The last encoder layer when it has the plain BERT layout (query/key/value self-attention,
    post-LayerNorm sub-layers, absolute positions, encoder only), else ``None``."""
    if _mlm_head(model) is None or type(model).__name__ == "AlbertForMaskedLM":
        return None
    cfg = model.config
    if getattr(cfg, "is_decoder", False) or getattr(cfg, "add_cross_attention", False):
        return None
    if getattr(cfg, "position_embedding_type", "absolute") not in (None, "absolute"):
        return None
    if getattr(cfg, "chunk_size_feed_forward", 0):
        return None
    layers = getattr(getattr(model.base_model, "encoder", None), "layer", None)
    if not isinstance(layers, torch.nn.ModuleList) or len(layers) == 0:
        return None
    last = layers[-1]
    try:
        att = last.attention
        parts = (att.self.query, att.self.key, att.self.value, att.output, last.intermediate, last.output)
    except AttributeError:
        return None
    if not all(isinstance(m, torch.nn.Module) for m in parts):
        return None
    return last


def _hidden_at(
    lm: MaskedLM, input_ids: torch.Tensor, attention_mask: torch.Tensor, positions: torch.Tensor
) -> tuple[torch.Tensor, Callable | None]:
    """Final hidden state of row ``i`` at ``positions[i]`` (or its logits when no head is known).

    For BERT-layout encoders the last layer is evaluated for that one query position only:
    its keys and values still come from every position, but its query, attention output,
    LayerNorms and feed-forward block (about 5/6 of the layer's work) run on one row per
    copy instead of all of them.  The result is the same computation as the full forward pass
    (equal to float rounding; ``tests/test_mlm.py`` checks it), one layer's work cheaper.
    """
    rows = torch.arange(input_ids.shape[0], device=input_ids.device)
    last = _bert_like_last_layer(lm.model)
    if last is None:
        hidden, head = _hidden_and_head(lm, input_ids, attention_mask)
        return hidden[rows, positions], head

    def stop(_module: Any, args: tuple, kwargs: dict) -> None:
        raise _LastLayerInput(args[0] if args else kwargs["hidden_states"])

    handle = last.register_forward_pre_hook(stop, with_kwargs=True)
    try:
        lm.model.base_model(input_ids=input_ids, attention_mask=attention_mask)
    except _LastLayerInput as got:
        h = got.hidden
    else:  # pragma: no cover - the hook always fires for these classes
        raise RuntimeError("the last encoder layer was not reached")
    finally:
        handle.remove()
    sa = last.attention.self
    n_heads, d_head = sa.num_attention_heads, sa.attention_head_size
    b, t, _ = h.shape
    h_sel = h[rows, positions]  # (b, d)
    q = sa.query(h_sel).view(b, n_heads, 1, d_head)
    k = sa.key(h).view(b, t, n_heads, d_head).transpose(1, 2)
    v = sa.value(h).view(b, t, n_heads, d_head).transpose(1, 2)
    keep = attention_mask.bool()[:, None, None, :]
    scale = float(getattr(sa, "scaling", d_head**-0.5))
    ctx = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=keep, scale=scale)
    ctx = ctx.reshape(b, n_heads * d_head)
    att_out = last.attention.output(ctx, h_sel)
    return last.output(last.intermediate(att_out), att_out), _mlm_head(lm.model)


def _pad_matrix(seqs: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    mat = torch.full((len(seqs), int(lengths.max()) if len(seqs) else 0), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        mat[i, : len(s)] = torch.as_tensor(s, dtype=torch.long)
    return mat, lengths


def _masked_log_probs(
    lm: MaskedLM,
    seqs: Sequence[Sequence[int]],
    items: Sequence[tuple[int, int, int]],
    *,
    batch_size: int,
    pbar: Any = None,
) -> np.ndarray:
    """log P(target | sequence with a [MASK] at position) for each ``(seq, position, target)``.

    Masked copies are sorted by length and scored ``batch_size`` per forward pass.
    """
    out = np.empty(len(items), dtype=np.float64)
    if not items:
        return out
    tok = lm.tokenizer
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
    mask_id = tok.mask_token_id
    dev = lm.device
    mat, lengths = _pad_matrix(seqs, pad_id)
    item_arr = torch.as_tensor(np.asarray(items, dtype=np.int64).reshape(-1, 3))
    order = np.lexsort((item_arr[:, 1].numpy(), item_arr[:, 0].numpy(), -lengths[item_arr[:, 0]].numpy()))
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            idx = torch.as_tensor(order[start : start + batch_size])
            si, pos, tgt = item_arr[idx, 0], item_arr[idx, 1], item_arr[idx, 2]
            lens = lengths[si]
            width = int(lens.max())
            inp = mat[si, :width].clone()
            rows = torch.arange(len(idx))
            inp[rows, pos] = mask_id
            att = (torch.arange(width)[None, :] < lens[:, None]).long()
            sel, head = _hidden_at(lm, inp.to(dev), att.to(dev), pos.to(dev))
            logits = head(sel) if head is not None else sel
            lp = torch.log_softmax(logits.float(), dim=-1)
            out[idx.numpy()] = lp[rows.to(dev), tgt.to(dev)].double().cpu().numpy()
            if pbar is not None:
                pbar.update(len(idx))
    return out


def _unmasked_log_probs(
    lm: MaskedLM,
    seqs: Sequence[Sequence[int]],
    positions: Sequence[Sequence[int]],
    *,
    batch_size: int,
    pbar: Any = None,
) -> list[np.ndarray]:
    """log P(w_t | W) with nothing masked (AUL), for the given positions of each sequence."""
    res: list[np.ndarray] = [np.empty(0)] * len(seqs)
    if not seqs:
        return res
    tok = lm.tokenizer
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
    dev = lm.device
    mat, lengths = _pad_matrix(seqs, pad_id)
    order = np.argsort(-lengths.numpy(), kind="stable")
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            idx = torch.as_tensor(order[start : start + batch_size])
            lens = lengths[idx]
            width = int(lens.max())
            inp = mat[idx, :width]
            att = (torch.arange(width)[None, :] < lens[:, None]).long()
            hidden, head = _hidden_and_head(lm, inp.to(dev), att.to(dev))
            r = torch.cat(
                [torch.full((len(positions[i]),), k, dtype=torch.long) for k, i in enumerate(idx.tolist())]
            )
            p = torch.cat([torch.as_tensor(positions[i], dtype=torch.long) for i in idx.tolist()])
            sel = hidden[r.to(dev), p.to(dev)]
            logits = head(sel) if head is not None else sel
            lp = torch.log_softmax(logits.float(), dim=-1)
            vals = lp[torch.arange(len(p), device=dev), inp[r, p].to(dev)].double().cpu().numpy()
            k0 = 0
            for i in idx.tolist():
                n = len(positions[i])
                res[i] = vals[k0 : k0 + n]
                k0 += n
            if pbar is not None:
                pbar.update(len(idx))
    return res


# =============================================================================================
# CrowS-Pairs template (official metric.py logic)
# =============================================================================================
def crows_template(ids1: Sequence[int], ids2: Sequence[int]) -> tuple[list[int], list[int]]:
    """Positions of the tokens shared by two token-id sequences: ``get_span`` of the official metric.

    Mirrors ``get_span`` in nyu-mll/crows-pairs ``metric.py``: the ids are turned into
    strings, :class:`difflib.SequenceMatcher` (``isjunk=None``, default ``autojunk``)
    aligns them, and the positions of every ``"equal"`` opcode are collected, in order.
    The sequences include ``[CLS]`` and ``[SEP]``, so ``template[0]`` and ``template[-1]``
    are those and the official loop ``for i in range(1, N - 1)`` skips them.
    """
    s1 = [str(x) for x in ids1]
    s2 = [str(x) for x in ids2]
    t1: list[int] = []
    t2: list[int] = []
    for op in difflib.SequenceMatcher(None, s1, s2).get_opcodes():
        if op[0] == "equal":
            t1 += list(range(op[1], op[2]))
            t2 += list(range(op[3], op[4]))
    return t1, t2


# =============================================================================================
# results
# =============================================================================================
@dataclass
class PLLScores:
    """Scores of sentences or sentence pairs, with per-token detail and a validation report.

    Attributes
    ----------
    scores:
        One row per scored example.  Pairs: ``row, sent_more, sent_less, sent_more_score,
        sent_less_score, n_more, n_less`` (+ ``bias_type`` / ``direction`` when given),
        ``tie_reason`` (+ ``line`` when given), the same layout as the thesis's CSVs
        (:mod:`biaskit.replay`) plus columns.  ``tie_reason`` is ``None`` for an ordinary
        pair, ``"identical"`` for a pair identical after tokenisation and ``"no shared
        token"`` for a ``cp`` pair sharing nothing but ``[CLS]``/``[SEP]``: both are exact
        ties by construction (see the module docstring).  Single sentences:
        ``row, sentence, score, n_tokens``.  ``row`` is the 0-based input position.
    tokens:
        Long table of the scored tokens: ``row, side`` (``"more"``, ``"less"`` or
        ``"sentence"``), ``position`` (in the token sequence, ``[CLS]`` = 0), ``token``,
        ``token_id``, ``log_prob``.
    report:
        The rows that were not scored (or scored with a caveat) and why.
    n_computed, n_cached:
        Examples computed in this call / read back from the disk cache.
    """

    scores: pd.DataFrame
    tokens: pd.DataFrame
    report: ValidationReport
    metric: str
    model: str
    n_computed: int = 0
    n_cached: int = 0
    cache_path: Path | None = None

    def __len__(self) -> int:
        return len(self.scores)

    @property
    def tie_rows(self) -> list[int]:
        """Rows kept as exact ties by construction (``tie_reason`` set: identical pairs, and
        ``cp`` pairs sharing no token); they count in the CrowS-Pairs denominator."""
        if "tie_reason" not in self.scores:
            return []
        return [int(r) for r in self.scores.loc[self.scores["tie_reason"].notna(), "row"]]

    def _repr_html_(self) -> str:  # pragma: no cover - display only
        head = (
            f"<p><b>{self.metric}</b> scores with <code>{self.model}</code>: {len(self.scores)} scored "
            f"({len(self.tie_rows)} kept as ties), {len(self.report.skipped_rows)} skipped "
            f"({self.n_cached} from cache)</p>"
        )
        return head + self.scores.head(10).to_html(index=False)


# =============================================================================================
# validation and preparation
# =============================================================================================
def _encode(lm: MaskedLM, text: str) -> tuple[list[int], list[tuple[int, int]] | None]:
    t = text.lower() if lm.lowercase else text
    try:
        enc = lm.tokenizer(
            t, add_special_tokens=True, truncation=False, return_offsets_mapping=True, verbose=False
        )
        return list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]
    except (NotImplementedError, TypeError, ValueError):
        enc = lm.tokenizer(t, add_special_tokens=True, truncation=False, verbose=False)
        return list(enc["input_ids"]), None


def _special_ids(lm: MaskedLM) -> set[int]:
    return {int(i) for i in lm.tokenizer.all_special_ids}


#: ``_Prepared.tie`` values: pairs that are exact ties by construction (kept, flagged, reported)
TIE_IDENTICAL = "identical"
TIE_NO_SHARED = "no shared token"
_TIE_REASONS = {
    TIE_IDENTICAL: "identical after tokenisation: counted as a tie (scored once, both sides get that score)",
    TIE_NO_SHARED: (
        "the two sentences share no token besides [CLS]/[SEP]: both cp scores are empty sums (0.0), "
        "counted as a tie (as metric.py)"
    ),
}
Direction = Literal["stereo", "antistereo"]
_DIRECTIONS = ("stereo", "antistereo")


@dataclass
class _Prepared:
    ids: list[list[int]]  # one per side
    positions: list[list[int]]
    tie: str | None = None  # TIE_IDENTICAL: score side 0 only and copy it; TIE_NO_SHARED: nothing to score


def _check_sentence(
    lm: MaskedLM, text: Any, specials: set[int]
) -> tuple[list[int] | None, str | None, str | None]:
    """Tokenise one sentence; return (ids, problem, unk_note)."""
    if not isinstance(text, str):
        return None, f"missing sentence ({type(text).__name__}, not text)", None
    if not text.strip():
        return None, "empty sentence", None
    enc_problem = detect_encoding_problem(text)
    if enc_problem is not None:
        return None, f"mis-encoded text ({enc_problem})", None
    ids, offsets = _encode(lm, text)
    if len(ids) > lm.max_length:
        return None, f"longer than the model window ({len(ids)} tokens > {lm.max_length})", None
    if len(ids) < 3:
        return None, "no token to score (only special tokens)", None
    if ids[0] not in specials or ids[-1] not in specials:
        raise ValueError(
            f"{lm.name}: the tokenizer does not add one special token at each end of a sentence "
            f"({lm.tokenizer.convert_ids_to_tokens(ids[:2])}...); this scorer supports BERT/RoBERTa-style tokenizers"
        )
    unk = lm.tokenizer.unk_token_id
    inner = ids[1:-1]
    if any(i in specials and i != unk for i in inner):
        bad = sorted({lm.tokenizer.convert_ids_to_tokens(i) for i in inner if i in specials and i != unk})
        return None, f"contains special token text {bad}", None
    unk_note = None
    if unk is not None and unk in inner:
        where = [k for k, i in enumerate(ids) if i == unk]
        pieces = []
        if offsets is not None:
            t = text.lower() if lm.lowercase else text
            pieces = [t[offsets[k][0] : offsets[k][1]] for k in where]
        unk_note = f"unknown token(s) {lm.tokenizer.unk_token} for {pieces or len(where)}"
    return ids, None, unk_note


def _prepare(
    lm: MaskedLM,
    examples: Sequence[Sequence[Any]],
    metric: PLLMetric,
    unk: str,
    lines: Sequence[Any] | None,
    columns: Sequence[str],
    directions: Sequence[str] | None = None,
) -> tuple[dict[int, _Prepared], list[dict[str, Any]]]:
    """Tokenise and validate every example; find the positions to score.

    Pairs are aligned (``cp``) with :func:`crows_template` in the official order:
    ``(side 0, side 1)`` for ``"stereo"`` (and ``directions=None``), ``(side 1, side 0)`` for
    ``"antistereo"``, the positions being mapped back to their own side.  Pairs identical after
    tokenisation, and ``cp`` pairs sharing no token, are kept as ties (``_Prepared.tie``).
    """
    specials = _special_ids(lm)
    prepared: dict[int, _Prepared] = {}
    issues: list[dict[str, Any]] = []

    def issue(i: int, col: str | None, reason: str, action: str, text: Any) -> None:
        line = lines[i] if lines is not None else None
        issues.append(
            {
                "row": i,
                "line": None if line is None or (isinstance(line, float) and math.isnan(line)) else int(line),
                "column": col,
                "reason": reason,
                "action": action,
                "text": str(text)[:80],
            }
        )

    for i, ex in enumerate(examples):
        ids_list: list[list[int]] = []
        ok = True
        for col, text in zip(columns, ex, strict=True):
            ids, problem, unk_note = _check_sentence(lm, text, specials)
            if problem is not None:
                issue(i, col, problem, "skipped", text)
                ok = False
                continue
            if unk_note is not None:
                if unk == "skip":
                    issue(i, col, unk_note, "skipped", text)
                    ok = False
                    continue
                issue(i, col, unk_note + " (scored anyway)", "kept", text)
            ids_list.append(ids)  # type: ignore[arg-type]
        if not ok:
            continue
        tie = TIE_IDENTICAL if len(ids_list) == 2 and ids_list[0] == ids_list[1] else None
        if metric == "cp":
            if directions is not None and directions[i] == "antistereo":
                t_less, t_more = crows_template(ids_list[1], ids_list[0])  # metric.py: sent1 = sent_less
                t1, t2 = t_more, t_less
            else:
                t1, t2 = crows_template(ids_list[0], ids_list[1])
            n = len(t1)
            if t1[0] != 0 or t2[0] != 0 or t1[-1] != len(ids_list[0]) - 1 or t2[-1] != len(ids_list[1]) - 1:
                raise AssertionError("difflib template does not start/end with [CLS]/[SEP]")  # cannot happen
            positions = [t1[1 : n - 1], t2[1 : n - 1]]
            if tie == TIE_IDENTICAL and positions[0] != positions[1]:
                # difflib's "popular token" heuristic (sequences >= 200 tokens) can align identical
                # sequences unevenly; metric.py then scores two different position sets: do the same
                tie = None
            if tie is None and n <= 2:
                tie = TIE_NO_SHARED
        else:
            positions = [list(range(1, len(ids) - 1)) for ids in ids_list]
        if tie is not None:
            issue(i, None, _TIE_REASONS[tie], "kept", ex[0])
        prepared[i] = _Prepared(ids=ids_list, positions=positions, tie=tie)
    return prepared, issues


# =============================================================================================
# cache
# =============================================================================================
def _example_key(metric: str, lowercase: bool, texts: Sequence[Any], order: str | None = None) -> str:
    """Cache key of one example; ``order="antistereo"`` (``cp`` pairs aligned as (side 1, side 0))
    gives a different key from the default order, whose keys are unchanged from earlier versions."""
    h = hashlib.sha256(f"{metric}|{lowercase}|".encode())
    for t in texts:
        h.update(b"\x1f" + str(t).encode("utf-8", "surrogatepass"))
    if order is not None and order != "stereo":
        h.update(f"\x1eorder={order}".encode())
    return h.hexdigest()[:16]


def _cache_file(lm: MaskedLM, metric: str, dataset_hash: str) -> Path:
    folder = f"{cache_name(lm.name, 60)}-{lm.fingerprint()}"
    return cache_dir() / "pll" / folder / f"{metric}-{dataset_hash}.jsonl"


def _read_cache(path: Path) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    if not path.exists():
        return out
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                logger.warning("%s line %d is truncated (interrupted write?); it will be recomputed", path, n)
                continue
            if rec.get("v") != _CACHE_VERSION or "row" not in rec:
                continue
            out[int(rec["row"])] = rec
    return out


# =============================================================================================
# public scoring API
# =============================================================================================
def _run(
    lm: MaskedLM,
    examples: list[tuple[Any, ...]],
    columns: Sequence[str],
    metric: PLLMetric,
    *,
    batch_size: int,
    cache: bool,
    progress: bool,
    errors: Errors,
    unk: str,
    lines: Sequence[Any] | None,
    chunk_size: int | None,
    context: str,
    directions: Sequence[str] | None = None,
) -> tuple[_Done, dict[int, str], ValidationReport, int, int, Path | None]:
    """Validate, read the cache, score what is left; return ``(done, ties, report, n_computed,
    n_cached, cache_path)`` where ``ties`` maps the rows kept as ties to their reason."""
    if metric not in ("sz", "cp", "aul"):
        raise ValueError(f"metric must be 'sz', 'cp' or 'aul', got {metric!r}")
    if errors not in ("report", "raise"):
        raise ValueError("errors must be 'report' or 'raise'")
    if unk not in ("skip", "score"):
        raise ValueError("unk must be 'skip' or 'score'")
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    lines = list(lines) if lines is not None else None  # positional, whatever the input's index
    prepared, issues = _prepare(lm, examples, metric, unk, lines, columns, directions)
    report = ValidationReport.from_records(issues, context=f"{context} ({metric}, {lm.name})")
    if errors == "raise":
        report.raise_if_any(("skipped",))
    report.log(logger, logging.WARNING if len(report) else logging.INFO)
    ties = {i: p.tie for i, p in prepared.items() if p.tie is not None}

    # the alignment order matters for cp only; the default order keeps the earlier cache keys
    orders = list(directions) if metric == "cp" and directions is not None else None
    keys = {
        i: _example_key(metric, bool(lm.lowercase), examples[i], None if orders is None else orders[i])
        for i in prepared
    }
    path: Path | None = None
    done: _Done = {}
    if cache:
        cols = [[ex[k] for ex in examples] for k in range(len(columns))]
        if orders is not None and "antistereo" in orders:
            cols.append(orders)
        dhash = dataset_fingerprint(*cols)
        path = _cache_file(lm, metric, dhash)
        for i, rec in _read_cache(path).items():
            if i in prepared and rec.get("key") == keys[i]:
                done[i] = [(p["ids"], p["pos"], np.asarray(p["lp"], dtype=np.float64)) for p in rec["sides"]]
    n_cached = len(done)
    todo = [i for i in sorted(prepared) if i not in done]

    from tqdm.auto import tqdm

    def sides_to_score(p: _Prepared) -> int:
        return 1 if p.tie == TIE_IDENTICAL else len(p.ids)

    n_items = sum(
        (1 if metric == "aul" else len(pos))
        for i in todo
        for pos in prepared[i].positions[: sides_to_score(prepared[i])]
    )
    avg_items = n_items / max(1, len(todo))
    per_chunk = chunk_size or max(1, math.ceil(batch_size * 16 / max(1.0, avg_items)))
    pbar = tqdm(
        total=n_items,
        desc=f"{metric} PLL",
        unit="mask" if metric != "aul" else "sent",
        disable=not progress or not todo,
        leave=False,
    )
    fh = None
    try:
        if path is not None and todo:
            path.parent.mkdir(parents=True, exist_ok=True)
            fh = open(path, "a", encoding="utf-8")
        for c0 in range(0, len(todo), per_chunk):
            chunk = todo[c0 : c0 + per_chunk]
            seqs: list[list[int]] = []
            pos_lists: list[list[int]] = []
            owner: list[tuple[int, int]] = []
            for i in chunk:
                p = prepared[i]
                for s in range(sides_to_score(p)):
                    seqs.append(p.ids[s])
                    pos_lists.append(p.positions[s])
                    owner.append((i, s))
            if metric == "aul":
                vals = _unmasked_log_probs(lm, seqs, pos_lists, batch_size=batch_size, pbar=pbar)
            else:
                items = [(k, p, seqs[k][p]) for k, pos in enumerate(pos_lists) for p in pos]
                flat = _masked_log_probs(lm, seqs, items, batch_size=batch_size, pbar=pbar)
                vals, k0 = [], 0
                for pos in pos_lists:
                    vals.append(flat[k0 : k0 + len(pos)])
                    k0 += len(pos)
            new: _Done = {i: [] for i in chunk}
            for (i, _s), ids, pos, v in zip(owner, seqs, pos_lists, vals, strict=True):
                new[i].append((ids, pos, v))
            for i in chunk:
                if prepared[i].tie == TIE_IDENTICAL:  # the same sentence: the same score, exactly
                    ids0, pos0, v0 = new[i][0]
                    new[i].append((list(ids0), list(pos0), v0.copy()))
            done.update(new)
            if fh is not None:
                for i, sides in new.items():
                    rec = {
                        "v": _CACHE_VERSION,
                        "row": i,
                        "key": keys[i],
                        "sides": [
                            {"ids": ids, "pos": pos, "lp": [float(x) for x in v]} for ids, pos, v in sides
                        ],
                    }
                    fh.write(json.dumps(rec) + "\n")
                fh.flush()
    finally:
        pbar.close()
        if fh is not None:
            fh.close()
    return done, ties, report, len(todo), n_cached, path


def _aggregate(metric: str, v: np.ndarray) -> float:
    if metric == "aul":
        return float(v.mean()) if len(v) else float("nan")
    return float(v.sum())


def _tokens_frame(lm: MaskedLM, done: _Done, sides: Sequence[str]) -> pd.DataFrame:
    rows, side_col, pos_col, tid_col, lp_col = [], [], [], [], []
    for i in sorted(done):
        for s, (ids, pos, v) in enumerate(done[i]):
            rows += [i] * len(pos)
            side_col += [sides[s]] * len(pos)
            pos_col += list(pos)
            tid_col += [ids[p] for p in pos]
            lp_col += list(map(float, v))
    toks = lm.tokenizer.convert_ids_to_tokens(tid_col) if tid_col else []
    return pd.DataFrame(
        {
            "row": rows,
            "side": side_col,
            "position": pos_col,
            "token": toks,
            "token_id": tid_col,
            "log_prob": lp_col,
        }
    )


def _score_examples(
    lm: MaskedLM,
    examples: list[tuple[Any, ...]],
    columns: Sequence[str],
    sides: Sequence[str],
    metric: PLLMetric,
    frame: Callable[[list[int], _Done], dict[str, list[Any]]],
    *,
    lines: Sequence[Any] | None,
    **run_kw: Any,
) -> PLLScores:
    """:func:`_run` on ``examples``, then the :class:`PLLScores` of :func:`score_pairs` /
    :func:`score_sentences`: a ``row`` column, the columns ``frame(rows, done)`` builds, the
    file ``line`` when ``lines`` is given, and the per-token table over ``sides``."""
    done, ties, report, n_comp, n_cached, path = _run(lm, examples, columns, metric, lines=lines, **run_kw)
    idx = sorted(done)
    df = pd.DataFrame({"row": idx, **frame(idx, done)})
    if len(columns) == 2:
        df["tie_reason"] = pd.Series([ties.get(i) for i in idx], index=df.index, dtype=object)
    if lines is not None:
        ln = list(lines)
        df["line"] = [ln[i] for i in idx]
    return PLLScores(
        scores=df,
        tokens=_tokens_frame(lm, done, sides),
        report=report,
        metric=metric,
        model=lm.name,
        n_computed=n_comp,
        n_cached=n_cached,
        cache_path=path,
    )


def _check_directions(
    direction: Sequence[Any] | None, n: int, lines: Sequence[Any] | None
) -> list[str] | None:
    """``direction`` as a list of ``"stereo"`` / ``"antistereo"`` (``None`` stays ``None``); a
    ``ValueError`` naming the rows (and file lines) of any other value."""
    if direction is None:
        return None
    if isinstance(direction, str):
        raise ValueError(
            f"direction must give one value per pair ('stereo' or 'antistereo', e.g. the "
            f"stereo_antistereo column of CrowS-Pairs), not the single string {direction!r}"
        )
    d = list(direction)
    if len(d) != n:
        raise ValueError(f"direction has {len(d)} entries for {n} pairs (one per pair is needed)")
    bad = [k for k, v in enumerate(d) if not (isinstance(v, str) and v in _DIRECTIONS)]
    if bad:
        where = f"rows {bad[:10]}"
        if lines is not None:
            ln = list(lines)
            where += f" (file lines [{', '.join(str(ln[k]) for k in bad[:10])}])"
        raise ValueError(
            f"direction must be 'stereo' or 'antistereo' for every pair; {len(bad)} pair(s) have "
            f"another value at {where}{' ...' if len(bad) > 10 else ''}: "
            f"{sorted({repr(d[k]) for k in bad})[:5]}"
        )
    return d


def score_pairs(
    lm: MaskedLM,
    sent_more: Sequence[str],
    sent_less: Sequence[str],
    metric: PLLMetric = "cp",
    *,
    direction: Sequence[Direction] | None = None,
    bias_types: Sequence[Any] | None = None,
    lines: Sequence[Any] | None = None,
    batch_size: int = 64,
    cache: bool = True,
    progress: bool = True,
    errors: Errors = "report",
    unk: Literal["skip", "score"] = "score",
    chunk_size: int | None = None,
) -> PLLScores:
    r"""Score CrowS-Pairs-style sentence pairs with ``"cp"``, ``"sz"`` or ``"aul"``.

    ``"cp"`` (Nangia et al. 2020, seed 000 section 4.1.6, experiment :math:`E^{CrowS}`):
    :math:`score(S) = \sum_{i=1}^{|U|-2} \log P(u_i \mid U_{\setminus u_i}, O)` where ``U`` =
    :func:`crows_template` of the two token sequences; token for token the official
    ``mask_unigram`` of nyu-mll/crows-pairs ``metric.py`` (sentences lower-cased first when
    ``lm.lowercase``).  ``"sz"`` (Salazar et al. 2020, section 4.1.3, :math:`E^{Sal}`): every
    token but ``[CLS]``/``[SEP]`` masked once, log-probabilities summed.  ``"aul"`` (Kaneko &
    Bollegala 2022): mean log-probability with nothing masked.

    ``direction`` (one ``"stereo"`` / ``"antistereo"`` per pair: the ``stereo_antistereo``
    column of the English CrowS-Pairs, :func:`biaskit.datasets.load_crows_pairs_en`) sets the
    order in which ``cp`` aligns a pair, as ``metric.py``'s ``read_data`` does: ``stereo`` ->
    ``crows_template(sent_more, sent_less)``; ``antistereo`` -> ``crows_template(sent_less,
    sent_more)``.  difflib's alignment is not symmetric, so the shared tokens (and the scores)
    can differ between the two orders.  The returned columns keep their meaning
    (``sent_more_score`` is always the score of ``sent_more``).  ``None`` (default) = every
    pair ``"stereo"``, which is the case of the thesis's Spanish CrowS-Pairs (seed 000 section
    4.2.1).  Any other value raises :class:`ValueError` naming the rows.  ``sz`` and ``aul`` do
    not align, so ``direction`` does not change them.

    Pairs identical after tokenisation, and ``cp`` pairs that share no token besides
    ``[CLS]``/``[SEP]``, are **kept** as exact ties (``tie_reason`` column,
    :attr:`PLLScores.tie_rows`, action ``"kept"`` in ``result.report``), as ``metric.py`` and
    the thesis count them (N = 1,503 Spanish pairs).  Sentences with ``[UNK]`` are scored
    (``unk="score"``, the default: ``metric.py`` scores them) and reported as ``"kept"``;
    ``unk="skip"`` leaves those pairs out.  Rows that cannot be scored (see the module
    docstring) are listed in ``result.report`` with ``row`` and, when ``lines`` is given (e.g.
    the ``line`` column of :func:`biaskit.datasets.load_crows_pairs_es`), the file line;
    ``errors="raise"`` raises :class:`ValueError` for them instead.  Scores are cached on disk
    (``cache``; the key includes the alignment order); ``result.n_cached`` tells how many came
    from the cache.  ``chunk_size`` = examples per cache write (default: about 16 batches' worth).
    """
    if len(sent_more) != len(sent_less):
        raise ValueError(f"sent_more has {len(sent_more)} sentences but sent_less has {len(sent_less)}")
    if bias_types is not None and len(bias_types) != len(sent_more):
        raise ValueError("bias_types must have one entry per pair")
    if lines is not None and len(lines) != len(sent_more):
        raise ValueError("lines must have one entry per pair")
    dirs = _check_directions(direction, len(sent_more), lines)
    examples = list(zip(list(sent_more), list(sent_less), strict=True))
    bt = None if bias_types is None else list(bias_types)

    def frame(idx: list[int], done: _Done) -> dict[str, list[Any]]:
        cols = {
            "sent_more": [examples[i][0] for i in idx],
            "sent_less": [examples[i][1] for i in idx],
            "sent_more_score": [_aggregate(metric, done[i][0][2]) for i in idx],
            "sent_less_score": [_aggregate(metric, done[i][1][2]) for i in idx],
            "n_more": [len(done[i][0][1]) for i in idx],
            "n_less": [len(done[i][1][1]) for i in idx],
        }
        if bt is not None:
            cols["bias_type"] = [bt[i] for i in idx]
        if dirs is not None:
            cols["direction"] = [dirs[i] for i in idx]
        return cols

    return _score_examples(
        lm,
        examples,
        ("sent_more", "sent_less"),
        ("more", "less"),
        metric,
        frame,
        batch_size=batch_size,
        cache=cache,
        progress=progress,
        errors=errors,
        unk=unk,
        lines=lines,
        chunk_size=chunk_size,
        context="pair scoring",
        directions=dirs,
    )


def score_sentences(
    lm: MaskedLM,
    sentences: Sequence[str],
    metric: Literal["sz", "aul"] = "sz",
    *,
    lines: Sequence[Any] | None = None,
    batch_size: int = 64,
    cache: bool = True,
    progress: bool = True,
    errors: Errors = "report",
    unk: Literal["skip", "score"] = "skip",
    chunk_size: int | None = None,
) -> PLLScores:
    r"""Pseudo-log-likelihood of single sentences: ``"sz"`` (sum, Salazar et al. 2020) or ``"aul"`` (mean).

    .. math:: PLL(W) = \sum_{t=1}^{|W|} \log P_m(w_t \mid W_{\setminus t}) \qquad
              AUL(W) = \frac{1}{|W|} \sum_{t=1}^{|W|} \log P_m(w_t \mid W)

    Seed 000 section 4.1.3.  ``[CLS]``/``[SEP]`` are never scored.  See :func:`score_pairs`
    for validation, caching and the ``tokens`` table; unlike :func:`score_pairs` (which follows
    the CrowS-Pairs ``metric.py``), sentences with ``[UNK]`` are skipped by default here
    (``unk="skip"``; ``unk="score"`` keeps them, reported as "kept").
    """
    if metric == "cp":
        raise ValueError("'cp' needs sentence pairs: use score_pairs")
    examples = [(s,) for s in sentences]

    def frame(idx: list[int], done: _Done) -> dict[str, list[Any]]:
        return {
            "sentence": [examples[i][0] for i in idx],
            "score": [_aggregate(metric, done[i][0][2]) for i in idx],
            "n_tokens": [len(done[i][0][1]) for i in idx],
        }

    return _score_examples(
        lm,
        examples,
        ("sentence",),
        ("sentence",),
        metric,
        frame,
        batch_size=batch_size,
        cache=cache,
        progress=progress,
        errors=errors,
        unk=unk,
        lines=lines,
        chunk_size=chunk_size,
        context="sentence scoring",
    )


# =============================================================================================
# single-mask probabilities (baseline 4.1.2, StereoSet 4.1.5)
# =============================================================================================
def fill_blank_probabilities(
    lm: MaskedLM,
    contexts: Sequence[str],
    words: Sequence[str],
    *,
    placeholder: str = "BLANK",
    batch_size: int = 64,
    progress: bool = True,
    errors: Errors = "report",
) -> pd.DataFrame:
    r"""Probability that ``word`` fills the ``placeholder`` of ``context``, for each (context, word).

    Seed 000 sections 4.1.2 (:math:`p^{ster}`, :math:`p^{anster}` of the baseline) and 4.1.5
    (StereoSet intrasentence options).  **Multi-token words** follow the official StereoSet
    discriminative evaluation (moinnadeem/StereoSet ``code/eval_discriminative_models.py``,
    ``IntrasentenceLoader``): the word is split into sub-words :math:`s_1..s_K`; for each
    :math:`k` the placeholder is replaced by ``decode(s_1..s_{k-1}) + [MASK]`` and
    :math:`p_k = P(s_k \mid \text{that sentence})` is read at the mask; the score is the
    **mean of the probabilities**, :math:`\bar p = \frac{1}{K}\sum_k p_k` (column ``prob``,
    what the official predictions file stores).  ``log_prob_sum`` (:math:`\sum_k \log p_k`)
    is given as well.  Single-token words: ``prob`` is the plain probability at the mask.
    Sentences are not lower-cased here (as in the official code; uncased tokenizers lower-case).

    A context with the placeholder more than once (2 StereoSet dev examples) has every
    occurrence filled the same way, as the official ``str.replace`` does; the probabilities
    read at all its masks are averaged (the official batch code misaligns such rows, so
    there is nothing exact to mirror).

    Returns one row per input: ``row, context, word, n_subwords, prob, log_prob_sum,
    subword_probs``.  Rows whose context lacks the placeholder, whose word is empty or
    tokenises to ``[UNK]``, or that exceed the model window are reported in
    ``df.attrs["report"]`` and left out (``errors="raise"`` raises).
    """
    if len(contexts) != len(words):
        raise ValueError("contexts and words must have the same length")
    tok = lm.tokenizer
    mask_id = tok.mask_token_id
    seqs: list[list[int]] = []
    items: list[tuple[int, int, int]] = []
    owner: list[tuple[int, int]] = []
    n_sub: dict[int, int] = {}
    issues: list[dict[str, Any]] = []

    def issue(i: int, reason: str, text: Any) -> None:
        issues.append(
            {
                "row": i,
                "line": None,
                "column": None,
                "reason": reason,
                "action": "skipped",
                "text": str(text)[:80],
            }
        )

    for i, (ctx, word) in enumerate(zip(contexts, words, strict=True)):
        if not isinstance(ctx, str) or ctx.count(placeholder) < 1:
            issue(i, f"context does not contain {placeholder!r}", ctx)
            continue
        n_blanks = ctx.count(placeholder)
        if not isinstance(word, str) or not word.strip():
            issue(i, "empty word", word)
            continue
        sub = tok.encode(word, add_special_tokens=False)
        if not sub:
            issue(i, "word has no tokens", word)
            continue
        if tok.unk_token_id is not None and tok.unk_token_id in sub:
            issue(i, f"word tokenises to {tok.unk_token}", word)
            continue
        local_seqs: list[list[int]] = []
        local_items: list[tuple[int, int, int]] = []
        ok = True
        for k in range(len(sub)):
            insertion = tok.decode(sub[:k])
            ids = tok(ctx.replace(placeholder, f"{insertion}{tok.mask_token}"), verbose=False)["input_ids"]
            where = [j for j, t in enumerate(ids) if t == mask_id]
            if len(ids) > lm.max_length or len(where) != n_blanks:
                ok = False
                issue(
                    i,
                    f"longer than the model window ({len(ids)} > {lm.max_length} tokens)"
                    if len(ids) > lm.max_length
                    else f"the {placeholder} was not turned into a {tok.mask_token} token",
                    ctx,
                )
                break
            local_items += [(len(seqs) + len(local_seqs), w, sub[k]) for w in where]
            owner += [(i, k)] * len(where)
            local_seqs.append(list(ids))
        if not ok:
            owner = [o for o in owner if o[0] != i]
            continue
        seqs += local_seqs
        items += local_items
        n_sub[i] = len(sub)
    report = ValidationReport.from_records(issues, context=f"fill-in-the-blank ({lm.name})")
    if errors == "raise":
        report.raise_if_any(("skipped",))
    report.log(logger, logging.WARNING if len(report) else logging.INFO)
    from tqdm.auto import tqdm

    with tqdm(total=len(items), desc="fill-blank", unit="mask", disable=not progress, leave=False) as pbar:
        lp = _masked_log_probs(lm, seqs, items, batch_size=batch_size, pbar=pbar)
    # p_k = probability of sub-word k (averaged over the masks when the placeholder repeats)
    per: dict[int, dict[int, list[float]]] = {}
    for (i, k), v in zip(owner, lp, strict=True):
        per.setdefault(i, {}).setdefault(k, []).append(math.exp(float(v)))
    idx = sorted(per)
    p_k = {i: [float(np.mean(per[i][k])) for k in sorted(per[i])] for i in idx}
    df = pd.DataFrame(
        {
            "row": idx,
            "context": [contexts[i] for i in idx],
            "word": [words[i] for i in idx],
            "n_subwords": [n_sub[i] for i in idx],
            "prob": [float(np.mean(p_k[i])) for i in idx],
            "log_prob_sum": [float(np.sum(np.log(p_k[i]))) for i in idx],
            "subword_probs": [p_k[i] for i in idx],
        }
    )
    df.attrs["report"] = report
    return df


def baseline_probabilities(
    lm: MaskedLM,
    contexts: Sequence[str],
    stereo_words: Sequence[Sequence[str]],
    anti_words: Sequence[Sequence[str]],
    *,
    placeholder: str = "BLANK",
    batch_size: int = 64,
    progress: bool = True,
) -> pd.DataFrame:
    r"""The baseline of seed 000 section 4.1.2: :math:`P(\text{ster.})` and :math:`P(\text{anti-ster.})` per context.

    .. math:: P(\text{stereotypical sentence}) = \sum_{v \in V^{ster}} p_v, \qquad
              P(\text{anti-stereotypical sentence}) = \sum_{v \in V^{anster}} p_v

    (eqs. 4.2-4.3), where :math:`p_v` is the probability of word ``v`` at the ``placeholder``
    (:func:`fill_blank_probabilities`; multi-token words: mean sub-word probability, the
    StereoSet rule).  ``stereo_words[i]`` / ``anti_words[i]`` are the sets :math:`V^{ster}`,
    :math:`V^{anster}` of context ``i``.  Returns ``row, context, p_ster, p_anster, n_ster,
    n_anster`` (words actually scored); words that cannot be scored are in
    ``df.attrs["report"]`` and contribute nothing to the sums.  Feed ``p_ster`` / ``p_anster``
    to :func:`biaskit.metrics.stereoset.comp_baseline_test` (experiment :math:`E^{Comp}`), or use
    :func:`biaskit.metrics.stereoset.comp_baseline_sets`, which does both.
    """
    if not len(contexts) == len(stereo_words) == len(anti_words):
        raise ValueError("contexts, stereo_words and anti_words must have the same length")
    ctx, words, owner = [], [], []
    for i, (c, vs, va) in enumerate(zip(contexts, stereo_words, anti_words, strict=True)):
        if isinstance(vs, str) or isinstance(va, str):
            raise ValueError(
                "stereo_words / anti_words hold one list of words per context (V^ster, V^anster)"
            )
        for side, vv in (("ster", vs), ("anster", va)):
            for w in vv:
                ctx.append(c)
                words.append(w)
                owner.append((i, side))
    fb = fill_blank_probabilities(
        lm, ctx, words, placeholder=placeholder, batch_size=batch_size, progress=progress
    )
    p = {(i, side): 0.0 for i in range(len(contexts)) for side in ("ster", "anster")}
    n = dict.fromkeys(p, 0)
    for r, prob in zip(fb["row"], fb["prob"], strict=True):
        p[owner[r]] += float(prob)
        n[owner[r]] += 1
    rep = fb.attrs["report"]
    issues = rep.issues.copy()
    if len(issues):
        issues["text"] = [f"{words[int(r)]!r} in {ctx[int(r)][:60]!r}" for r in issues["row"]]
        issues["row"] = [owner[int(r)][0] for r in issues["row"]]
    out = pd.DataFrame(
        {
            "row": range(len(contexts)),
            "context": list(contexts),
            "p_ster": [p[(i, "ster")] for i in range(len(contexts))],
            "p_anster": [p[(i, "anster")] for i in range(len(contexts))],
            "n_ster": [n[(i, "ster")] for i in range(len(contexts))],
            "n_anster": [n[(i, "anster")] for i in range(len(contexts))],
        }
    )
    out.attrs["report"] = ValidationReport(
        issues=issues.reset_index(drop=True), context=f"baseline 4.1.2 ({lm.name})"
    )
    return out
