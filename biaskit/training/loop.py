"""The training loop shared by :func:`biaskit.training.pretrain.train_masked_lm`,
:func:`biaskit.training.pretrain.train_causal_lm` and :func:`biaskit.training.fine_tune.fine_tune`, with
its checkpoints.

:func:`train_loop` trains a model in place (AdamW, linear warm-up + decay, clipping, optional bfloat16
mixed precision), deterministic given the seed and resumable from a checkpoint to bit-identical weights
(the scheme is described in :mod:`biaskit.training.pretrain`); it saves the model, the tokenizer and
``training.json``.  :func:`encode_for_training` turns sentences into the token ids it trains on,
:func:`load_checkpoint` reads the latest verified checkpoint back, :func:`training_steps` counts a run's
steps.

**Nothing read from disk can run code or pass for biaskit's data.**  A checkpoint
(:func:`save_checkpoint`) is one safetensors file with JSON in its header, never a pickle; it and every
file of a saved model (:func:`biaskit.lm.loading.save_model_folder`) and ``training.json`` carry a sha256
sidecar (:func:`biaskit.core.io.write_cache_checksum`) that is checked before they are used.  A
checkpoint that does not match is not trusted (the earlier verified one is used, or the run restarts),
a saved model that does not match is written again from its verified checkpoint, each with a WARNING
naming the file and the reason.  Every file is written under a unique temporary name and renamed into
place, so a full disk (:class:`biaskit.core.io.DiskFullError`, naming the file) leaves the last verified
checkpoint as it was.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from biaskit.core.io import (
    CHECKSUM_SUFFIX,
    atomic_write_text,
    cache_file_problem,
    checksum_sidecar,
    write_cache_checksum,
)
from biaskit.lm.loading import model_folder_problem, save_model_folder
from biaskit.lm.tokenizers import MAX_UNK_SHARE, as_text, check_unk_share
from biaskit.training.config import MLMTrainingConfig, TrainingResult
from biaskit.training.evaluation import causal_perplexity, pseudo_perplexity, xlnet_pseudo_perplexity
from biaskit.training.objectives import (
    build_clm_batch,
    build_mlm_batch,
    build_plm_batch,
    clm_loss,
    epoch_batches,
    mask_salient_groups,
    mask_tokens,
    mlm_loss,
    plm_loss,
    salient_group_ids,
    seed_of,
)

logger = logging.getLogger(__name__)

__all__ = [
    "CHECKPOINT_DIR",
    "CHECKPOINT_KEY",
    "CHECKSUM_SUFFIX",
    "LEGACY_CHECKPOINT",
    "TRAINING_JSON",
    "checkpoint_files",
    "checkpoint_tokenizer",
    "data_hash",
    "encode_for_training",
    "has_saved_model",
    "load_checkpoint",
    "read_checkpoint",
    "save_checkpoint",
    "tokenizer_files",
    "train_loop",
    "training_key",
    "training_steps",
]

CHECKPOINT_DIR = "checkpoint"
#: a checkpoint is ``checkpoint/state-<step, 9 digits>.safetensors`` (:func:`save_checkpoint`)
CHECKPOINT_PREFIX = "state-"
CHECKPOINT_SUFFIX = ".safetensors"
#: the checkpoint file of biaskit before safetensors checkpoints, a pickle (which can run code when read).
#: It is never read (:func:`load_checkpoint` says so in a WARNING) and is removed by the next checkpoint
LEGACY_CHECKPOINT = "state.pt"
#: the cache key of a checkpoint's sha256 sidecar (:func:`biaskit.core.io.write_cache_checksum`); the run
#: it belongs to is checked on its recorded configuration and data instead (:func:`load_checkpoint`)
CHECKPOINT_KEY = "biaskit training checkpoint"
#: the format of the checkpoint files (``__metadata__["format"]`` of the safetensors header)
CHECKPOINT_FORMAT = "biaskit-checkpoint-1"
TRAINING_JSON = "training.json"


def data_hash(encoded: list[list[int]]) -> str:
    """A short hash of the encoded training data (the key checkpoints are matched on)."""
    h = hashlib.sha256()
    for ids in encoded:
        h.update(np.asarray(ids, dtype=np.int64).tobytes())
        h.update(b"|")
    return h.hexdigest()[:16]


def _plain(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples become lists): how configurations are compared."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def training_key(record: dict[str, Any], data_key: str) -> str:
    """The key of a training run: sha256 of its recorded configuration and its data key.

    The sha256 sidecars of the model files a run saves (:func:`biaskit.lm.loading.save_model_folder`) and of
    its ``training.json`` record it, so that a model of another run (other settings or data), even copied in
    with its sidecars, is not taken for this run's (:func:`biaskit.lm.loading.model_folder_problem`).
    """
    text = json.dumps({"config": _plain(record), "data": data_key}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------------------------
# checkpoints: safetensors (tensors) + JSON (everything else), with a sha256 sidecar
# ---------------------------------------------------------------------------------------------
def checkpoint_files(ckpt_dir: Path) -> list[Path]:
    """The checkpoint files of ``ckpt_dir`` (``state-<step>.safetensors``), the latest step first."""
    found = []
    for f in Path(ckpt_dir).glob(f"{CHECKPOINT_PREFIX}*{CHECKPOINT_SUFFIX}"):
        digits = f.name[len(CHECKPOINT_PREFIX) : -len(CHECKPOINT_SUFFIX)]
        if digits.isdigit() and f.is_file():
            found.append((int(digits), f))
    return [f for _, f in sorted(found, reverse=True)]


def _checkpoint_path(ckpt_dir: Path, step: int) -> Path:
    return ckpt_dir / f"{CHECKPOINT_PREFIX}{step:09d}{CHECKPOINT_SUFFIX}"


def _own_tensors(named: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """CPU tensors safetensors can write: a tensor that shares its storage with another one (tied
    embeddings) or views part of a larger storage is copied; the others are written as they are."""
    seen: set[int] = set()
    out = {}
    for name, t in named.items():
        t = t.detach().cpu().contiguous()
        storage = t.untyped_storage()
        if storage.data_ptr() in seen or storage.nbytes() != t.numel() * t.element_size():
            t = t.clone()
        seen.add(t.untyped_storage().data_ptr())
        out[name] = t
    return out


def _bytes_tensor(data: bytes) -> torch.Tensor:
    return torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else torch.zeros(0, dtype=torch.uint8)


def tokenizer_files(tokenizer: Any) -> dict[str, bytes]:
    """The files ``tokenizer.save_pretrained`` writes, by name (kept in a checkpoint:
    :func:`save_checkpoint`)."""
    with tempfile.TemporaryDirectory(prefix="biaskit-tokenizer-") as tmp:
        tokenizer.save_pretrained(tmp)
        return {f.name: f.read_bytes() for f in sorted(Path(tmp).iterdir()) if f.is_file()}


def save_checkpoint(
    ckpt_dir: Path,
    *,
    step: int,
    model: Any,
    optimizer: Any,
    scheduler: Any,
    rng: dict[str, Any],
    scalars: dict[str, Any],
    tokenizer: dict[str, bytes],
    keep: Path | None = None,
) -> Path:
    """Write the checkpoint of ``step`` to ``ckpt_dir/state-<step>.safetensors`` and its sha256 sidecar.

    One safetensors file (which holds tensors and text, never code): the model's and the optimizer's
    tensors, the RNG states (``torch.get_rng_state()`` is a uint8 tensor, as is each CUDA one) and the
    tokenizer's files as uint8 tensors; everything else (``scalars``: step, losses, tokens seen, time,
    configuration, data key; the scheduler's state and the optimizer's parameter groups) as JSON in the
    header's ``__metadata__``.  Floats go through JSON's shortest round-trip form, so they read back
    exactly.

    Written under a unique temporary name and renamed into place (:func:`biaskit.core.io.atomic_path`),
    then its sidecar (:func:`biaskit.core.io.write_cache_checksum`, key :data:`CHECKPOINT_KEY`); a file
    whose sidecar could not be written is removed.  Before writing, every other checkpoint of the folder
    but ``keep`` (the last verified one) is removed, and the checkpoint of an earlier biaskit
    (:data:`LEGACY_CHECKPOINT`); so the folder holds at most ``keep`` and the new one.  A full disk raises
    :class:`biaskit.core.io.DiskFullError` naming the file: no temporary file or half checkpoint is left,
    and ``keep`` is untouched.
    """
    from safetensors.torch import save_file

    from biaskit.core.io import atomic_path

    named: dict[str, torch.Tensor] = {f"model/{k}": v for k, v in model.state_dict().items()}
    opt = optimizer.state_dict()
    per_param: dict[str, dict[str, Any]] = {}
    for pid, fields in opt["state"].items():
        for field, value in fields.items():
            if isinstance(value, torch.Tensor):
                named[f"optimizer/{pid}/{field}"] = value
            else:
                per_param.setdefault(str(pid), {})[field] = value
    named["rng/torch"] = rng["torch"]
    cuda = rng.get("cuda") or []
    for i, t in enumerate(cuda):
        named[f"rng/cuda/{i}"] = t
    for name, data in tokenizer.items():
        named[f"tokenizer/{name}"] = _bytes_tensor(data)
    meta = {
        **scalars,
        "step": step,
        "scheduler": scheduler.state_dict(),
        "optimizer": {"param_groups": opt["param_groups"], "state": per_param, "ids": sorted(opt["state"])},
        "cuda_rng": len(cuda) if rng.get("cuda") is not None else None,
        "tokenizer_files": sorted(tokenizer),
    }
    text = json.dumps(meta, sort_keys=True)
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    path = _checkpoint_path(ckpt_dir, step)
    for old in checkpoint_files(ckpt_dir):
        if old != keep and old != path:
            old.unlink(missing_ok=True)
            checksum_sidecar(old).unlink(missing_ok=True)
    for name in (LEGACY_CHECKPOINT, f"{LEGACY_CHECKPOINT}{CHECKSUM_SUFFIX}", "state.tmp",
                 f"{LEGACY_CHECKPOINT}{CHECKSUM_SUFFIX}.tmp"):  # fmt: skip
        (ckpt_dir / name).unlink(missing_ok=True)
    with atomic_path(path, private=True) as tmp:
        save_file(_own_tensors(named), str(tmp), metadata={"format": CHECKPOINT_FORMAT, "state": text})
    try:
        write_cache_checksum(path, CHECKPOINT_KEY)
    except BaseException:
        path.unlink(missing_ok=True)
        checksum_sidecar(path).unlink(missing_ok=True)
        raise
    return path


def read_checkpoint(path: Path) -> dict[str, Any]:
    """The state in the checkpoint file ``path`` (:func:`save_checkpoint`), without checking its sidecar
    (:func:`load_checkpoint` does that first).  ``ValueError`` when it is not a checkpoint of this format.

    Keys: ``model`` (state dict), ``optimizer`` (state dict), ``scheduler``, ``rng`` (``torch``, ``cuda``),
    ``step``, ``losses``, ``tokens_seen``, ``train_seconds``, ``config``, ``data``, ``tokenizer_files``
    (name -> bytes) and ``file`` (``path``).  Only safetensors and JSON are parsed: nothing in the file can
    run code.
    """
    from safetensors import safe_open

    with safe_open(str(path), framework="pt", device="cpu") as fh:
        header = fh.metadata() or {}
        if header.get("format") != CHECKPOINT_FORMAT:
            raise ValueError(f"not a biaskit checkpoint (format {str(header.get('format'))[:40]!r})")
        meta = json.loads(header["state"])
        tensors = {k: fh.get_tensor(k) for k in fh.keys()}

    def under(prefix: str) -> dict[str, torch.Tensor]:
        return {k[len(prefix) :]: v for k, v in tensors.items() if k.startswith(prefix)}

    opt_state: dict[int, dict[str, Any]] = {int(pid): {} for pid in meta["optimizer"]["ids"]}
    for key, value in under("optimizer/").items():
        pid, field = key.split("/", 1)
        opt_state[int(pid)][field] = value
    for pid, fields in meta["optimizer"]["state"].items():
        opt_state[int(pid)].update(fields)
    groups = meta["optimizer"]["param_groups"]
    for g in groups:
        if isinstance(g.get("betas"), list):
            g["betas"] = tuple(g["betas"])
    n_cuda = meta["cuda_rng"]
    tok = under("tokenizer/")
    state = {
        "model": under("model/"),
        "optimizer": {"state": opt_state, "param_groups": groups},
        "scheduler": meta["scheduler"],
        "rng": {
            "torch": tensors["rng/torch"],
            "cuda": None if n_cuda is None else [tensors[f"rng/cuda/{i}"] for i in range(n_cuda)],
        },
        "tokenizer_files": {name: tok[name].numpy().tobytes() for name in meta["tokenizer_files"]},
        "file": Path(path),
    }
    for field in ("step", "losses", "tokens_seen", "train_seconds", "config", "data"):
        state[field] = meta[field]
    if not isinstance(state["step"], int) or not isinstance(state["losses"], list):
        raise ValueError("its step or losses are not of the recorded types")
    return state


def checkpoint_tokenizer(state: dict[str, Any]) -> Any:
    """The tokenizer a checkpoint holds (:func:`read_checkpoint`'s ``tokenizer_files``), loaded with
    ``transformers.AutoTokenizer`` from a temporary folder (which is removed)."""
    from transformers import AutoTokenizer

    with tempfile.TemporaryDirectory(prefix="biaskit-tokenizer-") as tmp:
        for name, data in state["tokenizer_files"].items():
            (Path(tmp) / Path(name).name).write_bytes(data)
        return AutoTokenizer.from_pretrained(tmp)


def encode_for_training(
    sentences: Sequence[Any],
    tokenizer: Any,
    max_length: int,
    *,
    who: str = "train_masked_lm",
    max_unk_share: float | None = MAX_UNK_SHARE,
) -> list[list[int]]:
    """Token ids of the training sentences, as :func:`train_masked_lm` and ``fine_tune`` use them.

    Empty sentences are dropped and over-long ones truncated to ``max_length`` tokens (the
    tokenizer's own truncation, ``[SEP]`` kept), each with a WARNING that counts them (prefixed
    by ``who``); sequences with no token between ``[CLS]`` and ``[SEP]`` are left out.
    ``ValueError`` when nothing is left.

    Text the model cannot read: the share of the tokens that are the tokenizer's unknown token
    (``[UNK]``, :func:`biaskit.lm.tokenizers.unk_share`) is logged (INFO; a WARNING above 5 %), and
    above ``max_unk_share`` (default :data:`biaskit.lm.tokenizers.MAX_UNK_SHARE`, 20 %; ``None`` never
    stops) training stops with a ``ValueError`` giving the share, the worst sentence and its unknown
    words (:func:`biaskit.lm.tokenizers.check_unk_share`): a model trained on it would learn to predict
    ``[UNK]``, not the text.
    """
    all_texts = as_text(sentences)
    texts = [t for t in all_texts if t.strip()]
    if len(texts) < len(all_texts):
        logger.warning("%s: %d empty sentence(s) skipped", who, len(all_texts) - len(texts))
    full = tokenizer(texts, truncation=False, verbose=False)["input_ids"] if texts else []
    long = [i for i, ids in enumerate(full) if len(ids) > max_length]
    if long:
        logger.warning(
            "%s: %d of %d sentence(s) are longer than max_length=%d tokens and are truncated",
            who,
            len(long),
            len(texts),
            max_length,
        )
        # only the long ones are tokenised again, with the tokenizer's own truncation
        cut = tokenizer([texts[i] for i in long], truncation=True, max_length=max_length)["input_ids"]
        for i, ids in zip(long, cut, strict=True):
            full[i] = ids
    _check_unk_share(texts, full, tokenizer, who, max_unk_share)
    encoded = [ids for ids in full if len(ids) > 2]
    if not encoded:
        raise ValueError("no training sentence left after tokenising")
    return encoded


def _check_unk_share(
    texts: Sequence[str], full: Sequence[Sequence[int]], tokenizer: Any, who: str, max_unk_share: float | None
) -> None:
    unk = getattr(tokenizer, "unk_token", None) or "[UNK]"
    check_unk_share(
        texts,
        full,
        tokenizer,
        who=who,
        max_unk_share=max_unk_share,
        what="the training text",
        consequence=f", and a model trained on it would learn {unk}",
        fix="Use a model whose tokenizer covers this text's language and characters (or train a tokenizer on "
        "it: tokenizer=None), clean the text, or pass a larger max_unk_share",
        log=logger,
    )


def load_checkpoint(
    ckpt_dir: Path, record: dict[str, Any], defaults: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """The state of the latest verified checkpoint in ``ckpt_dir`` (:func:`read_checkpoint`), or ``None``.

    Checkpoints are tried from the latest step down.  One is used only when its sha256 sidecar vouches
    for it (:func:`biaskit.core.io.cache_file_problem`: present, of this file, same size and sha256, not
    writable by others) and it reads as a checkpoint of this format; one that fails is not trusted, and a
    WARNING names each such file with its reason and says what happens instead: the run resumes from the
    earlier verified checkpoint (naming it and its step), or, with none left, restarts from step 0.  The
    checkpoint of an earlier biaskit (:data:`LEGACY_CHECKPOINT`, a pickle that could run code) is never
    read, with the same WARNING.  Nothing in a checkpoint can run code: safetensors and JSON only.

    ``ValueError`` when the verified checkpoint was written with another configuration than ``record``
    (keys of ``defaults`` missing from the stored configuration, fields added since, count as their
    defaults): use the same configuration, or ``resume=False``.
    """
    ckpt_dir = Path(ckpt_dir)
    refused: list[tuple[Path, str]] = []
    state = None
    for f in checkpoint_files(ckpt_dir):
        problem = cache_file_problem(f, CHECKPOINT_KEY)
        if problem is None:
            try:
                state = read_checkpoint(f)
                break
            except Exception as exc:  # safetensors, JSON and missing-field errors come in many types
                problem = f"it cannot be read as a checkpoint ({type(exc).__name__}: {str(exc)[:200]})"
        refused.append((f, problem))
    legacy = ckpt_dir / LEGACY_CHECKPOINT
    if legacy.exists():
        why = "a checkpoint of an earlier biaskit, a pickle that could run code when read: it is never read"
        refused.append((legacy, why))
    if refused:
        instead = (
            f"resuming from the earlier verified checkpoint {state['file']} (step {state['step']})"
            if state is not None
            else "no verified checkpoint is left: training restarts from step 0 (the same weights in the end)"
        )
        logger.warning(
            "checkpoint not trusted: %s; %s",
            "; ".join(f"{f}: {why}" for f, why in refused),
            instead,
        )
    if state is None:
        return None
    stored = state["config"] if isinstance(state["config"], dict) else {}
    saved = {**{k: v for k, v in (defaults or {}).items() if k not in stored}, **stored}
    if _plain(saved) != _plain(record):
        raise ValueError(
            f"checkpoint {state['file']} was written with another configuration; "
            "use the same config or resume=False"
        )
    return state


def has_saved_model(folder: Path) -> bool:
    """Whether ``folder`` holds saved weights (``config.json`` and a ``*.safetensors`` file); whether they
    can be trusted is :func:`biaskit.lm.loading.model_folder_problem`'s question."""
    return (folder / "config.json").exists() and any(folder.glob("*.safetensors"))


def training_steps(config: MLMTrainingConfig, n_sequences: int) -> int:
    """Optimiser steps of a run on ``n_sequences`` sequences: ``max_steps`` when set, else
    ``epochs * ceil(n_sequences / batch_size)`` (the last batch of an epoch may be short)."""
    if config.max_steps is not None:
        return config.max_steps
    return config.epochs * math.ceil(n_sequences / config.batch_size)


def _no_weight_decay(name: str) -> bool:
    """Biases and LayerNorm weights (BERT ``LayerNorm``, GPT-2 ``ln_1`` / ``ln_2`` / ``ln_f``) get no
    decay."""
    return name.endswith("bias") or "LayerNorm" in name or ".ln_" in name or name.startswith("ln_")


def train_loop(
    model: Any,
    tokenizer: Any,
    encoded: list[list[int]],
    out: Path,
    config: MLMTrainingConfig,
    *,
    data_key: str,
    record: dict[str, Any],
    state: dict[str, Any] | None,
    held_out: Sequence[str] | None,
    progress: bool,
    callback: Callable[[int, float], None] | None,
    desc: str,
    objective: str = "masked",
) -> TrainingResult:
    """The training loop shared by :func:`train_masked_lm`, :func:`train_causal_lm` and ``fine_tune``.

    ``objective``: ``"masked"`` (BERT masking, :func:`mlm_loss`, held-out PPPL), ``"causal"``
    (:func:`build_clm_batch` + :func:`clm_loss`, held-out perplexity by :func:`causal_perplexity`;
    the masking and padding-quirk settings of ``config`` are not read) or ``"permutation"`` (XLNet:
    :func:`build_plm_batch` + :func:`plm_loss`, ``config.mask_probability`` the share of predicted
    tokens; held-out PPPL by :func:`xlnet_pseudo_perplexity`).

    Trains ``model`` (moved to ``config.device``, trained in place) on the token-id sequences
    ``encoded`` with the optimiser, schedule, clipping, masking and padding settings of
    ``config`` (its architecture and vocabulary fields are not read here); resumes from
    ``state`` (a loaded checkpoint: ``state["data"]`` must equal ``data_key``); writes
    checkpoints (with ``record`` as their config), the model, the tokenizer and
    ``training.json`` to ``out``.  See the module docstring for the determinism scheme.
    """
    from tqdm.auto import tqdm
    from transformers import get_linear_schedule_with_warmup

    from biaskit.lm.base import MaskedLM, resolve_device

    ckpt_dir = out / CHECKPOINT_DIR
    if objective not in ("masked", "causal", "permutation"):
        raise ValueError(f"objective must be 'masked', 'causal' or 'permutation', not {objective!r}")
    causal = objective == "causal"
    permutation = objective == "permutation"
    device = resolve_device(config.device)
    if state is not None and state["data"] != data_key:
        raise ValueError(f"checkpoint {state['file']} was written for other training data; use resume=False")

    n = len(encoded)
    bs = config.batch_size
    steps_per_epoch = math.ceil(n / bs)
    total_steps = training_steps(config, n)
    vocab_n = len(tokenizer.get_vocab())
    mask_id = tokenizer.mask_token_id
    pad_to = config.max_length if config.bartl_pad_quirk else None
    salient = (
        salient_group_ids(config.salient_groups, tokenizer)
        if objective == "masked" and config.salient_probability > 0
        else []
    )

    model = model.to(device)
    # bfloat16 on a CPU trains with the eager attention (matrix products + softmax, which autocast runs in
    # float32): torch's CPU scaled-dot-product (flash) attention kernel in bfloat16 made training slower and
    # worse (measured on es-mlm from scratch: held-out PPPL 112 against 71.5 eager, 68.9 in float32).  The
    # model's own attention is restored after training, so the saved model and its scoring are unchanged.
    attn_saved = getattr(model.config, "_attn_implementation", None)
    eager_for_bf16 = config.precision == "bfloat16" and device.type == "cpu" and attn_saved == "sdpa"
    attn_now = attn_saved
    with torch.no_grad():  # fresh, aligned storage: weights loaded from safetensors sit at arbitrary
        for prm in model.parameters():  # offsets, which changes the float rounding of the CPU kernels
            prm.data = prm.data.clone(memory_format=torch.contiguous_format)
    decay = [p for nm, p in model.named_parameters() if not _no_weight_decay(nm)]
    no_decay = [p for nm, p in model.named_parameters() if _no_weight_decay(nm)]
    optimizer = torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": config.weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ],
        lr=config.learning_rate,
        eps=config.adam_epsilon,
        # one kernel per op for all tensors: bit-identical to the per-tensor loop, faster on a CPU
        foreach=True,
    )
    scheduler = get_linear_schedule_with_warmup(optimizer, config.warmup_steps, total_steps)

    step = 0
    losses: list[float] = []
    tokens_seen = 0
    elapsed = 0.0
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        step, losses = int(state["step"]), list(state["losses"])
        tokens_seen, elapsed = int(state["tokens_seen"]), float(state["train_seconds"])
        logger.info("resuming %s from step %d of %d", out, step, total_steps)
    resumed_from = step

    tok_files = tokenizer_files(tokenizer)
    last_ckpt: list[Path | None] = [None if state is None else state["file"]]

    def checkpoint() -> None:
        rng = {"torch": torch.get_rng_state()}
        rng["cuda"] = torch.cuda.get_rng_state_all() if device.type == "cuda" else None
        last_ckpt[0] = save_checkpoint(
            ckpt_dir,
            step=step,
            model=model,
            optimizer=optimizer,
            scheduler=scheduler,
            rng=rng,
            scalars={
                "losses": losses,
                "tokens_seen": tokens_seen,
                "train_seconds": elapsed,
                "config": record,
                "data": data_key,
            },
            tokenizer=tok_files,
            keep=last_ckpt[0],
        )

    epoch_cache: dict[int, list[np.ndarray]] = {}
    lengths = [len(x) for x in encoded]

    def batch_for(s: int) -> list[list[int]]:
        epoch, k = divmod(s, steps_per_epoch)
        if epoch not in epoch_cache:
            epoch_cache.clear()
            epoch_cache[epoch] = epoch_batches(
                lengths, bs, config.seed, epoch, length_grouped=config.length_grouped
            )
        return [encoded[i] for i in epoch_cache[epoch][k]]

    # mixed precision: the loss (forward pass) under autocast, backward and optimiser in float32 weights;
    # the first config.float32_steps steps in float32
    def mixed(s: int) -> bool:
        return config.precision == "bfloat16" and s >= config.float32_steps

    def autocast(s: int) -> contextlib.AbstractContextManager:
        return torch.autocast(device.type, dtype=torch.bfloat16) if mixed(s) else contextlib.nullcontext()

    model.train()
    t_start = time.perf_counter() - elapsed
    was_deterministic = torch.are_deterministic_algorithms_enabled()
    if device.type == "cuda" and config.deterministic_cuda:
        # CUBLAS_WORKSPACE_CONFIG only takes effect if set before cuBLAS starts: best set in the shell
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
    rng_devices = [device.index or 0] if device.type == "cuda" else []
    # the dropout generator of the device: torch.manual_seed would also queue a CUDA seeding (with a
    # stack trace) on every step of a CPU run, ~1 ms each; the CPU generator alone gives the same draws
    seed_dropout = torch.manual_seed if device.type != "cpu" else torch.default_generator.manual_seed
    try:
        with (
            torch.random.fork_rng(devices=rng_devices),  # the caller's RNG state is left as it was
            tqdm(total=total_steps, initial=step, disable=not progress, desc=desc, unit="step") as bar,
        ):
            if state is not None:  # inside fork_rng: the caller's RNG state is not touched
                # (every step re-seeds from (seed, step) anyway; the states are restored for completeness)
                torch.set_rng_state(state["rng"]["torch"])
                if device.type == "cuda" and state["rng"].get("cuda") is not None:
                    torch.cuda.set_rng_state_all(state["rng"]["cuda"])
            while step < total_steps:
                want = (
                    "eager" if eager_for_bf16 and mixed(step) else attn_saved
                )  # float32 steps: as in float32
                if want != attn_now:
                    model.set_attn_implementation(want)
                    attn_now = want
                if causal:
                    inputs, attn, labels = build_clm_batch(batch_for(step), tokenizer.pad_token_id)
                    seed_dropout(seed_of(config.seed, step, 2))
                    with autocast(step):
                        loss = clm_loss(
                            model,
                            inputs.to(device),
                            attn.to(device),
                            labels.to(device),
                            precision="bfloat16" if mixed(step) else "float32",
                        )
                elif permutation:
                    gen = torch.Generator().manual_seed(seed_of(config.seed, step, 1))
                    inputs, attn, perm, tmap, labels = build_plm_batch(
                        batch_for(step), tokenizer, gen, predict_fraction=config.mask_probability
                    )
                    seed_dropout(seed_of(config.seed, step, 2))
                    with autocast(step):
                        loss = plm_loss(
                            model,
                            inputs.to(device),
                            attn.to(device),
                            perm.to(device),
                            tmap.to(device),
                            labels.to(device),
                        )
                else:
                    ids, attn, special = build_mlm_batch(
                        batch_for(step), tokenizer, bartl_pad_quirk=config.bartl_pad_quirk, pad_to=pad_to
                    )
                    gen = torch.Generator().manual_seed(seed_of(config.seed, step, 1))
                    inputs, labels = mask_tokens(
                        ids,
                        special,
                        vocab_n,
                        mask_id,
                        gen,
                        mask_probability=config.mask_probability,
                        mask_replace=config.mask_replace,
                        mask_random=config.mask_random,
                    )
                    if salient:
                        inputs, labels = mask_salient_groups(
                            ids, inputs, labels, salient, mask_id, gen, probability=config.salient_probability
                        )
                    seed_dropout(seed_of(config.seed, step, 2))
                    with autocast(step):
                        loss = mlm_loss(model, inputs.to(device), attn.to(device), labels.to(device))
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if config.max_grad_norm:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm, foreach=True)
                optimizer.step()
                scheduler.step()
                step += 1
                lv = float(loss.detach().cpu())
                losses.append(lv)
                tokens_seen += int(attn.sum())
                elapsed = time.perf_counter() - t_start
                bar.update(1)
                bar.set_postfix(loss=f"{lv:.3f}", tok_s=f"{tokens_seen / max(elapsed, 1e-9):,.0f}")
                if config.checkpoint_every and step % config.checkpoint_every == 0 and step < total_steps:
                    checkpoint()
                if callback is not None:
                    callback(step, lv)
    finally:
        torch.use_deterministic_algorithms(was_deterministic)
        if attn_now != attn_saved:
            model.set_attn_implementation(attn_saved)
    elapsed = time.perf_counter() - t_start if step > resumed_from else elapsed

    model.eval()
    # a run found complete (nothing trained in this call) rewrites nothing, if its saved model is intact
    key = training_key(record, data_key)
    found_complete = step == resumed_from and state is not None and has_saved_model(out)
    if found_complete:
        problem = model_folder_problem(out, key)
        if problem:
            logger.warning(
                "the saved model in %s is not used: %s; it is written again from the verified checkpoint of "
                "step %d (the same weights)",
                out,
                problem,
                step,
            )
            found_complete = False
    if not found_complete:
        if state is None or step > resumed_from:
            checkpoint()
        save_model_folder(out, model=model, tokenizer=tokenizer, key=key)
        for old in checkpoint_files(ckpt_dir):  # a finished run keeps its last checkpoint only
            if old != last_ckpt[0]:
                old.unlink(missing_ok=True)
                checksum_sidecar(old).unlink(missing_ok=True)

    pppl = ppl = held_n = None
    if held_out and causal:
        ppl, held_n = causal_perplexity(model, tokenizer, held_out)
    elif held_out and permutation:
        pppl, held_n = xlnet_pseudo_perplexity(model, tokenizer, held_out)
    elif held_out:
        lm = MaskedLM(model=model, tokenizer=tokenizer, name=str(out), in_process=True)
        pppl, held_n = pseudo_perplexity(lm, held_out)

    tail = losses[-min(10, len(losses)) :] if losses else []
    result = TrainingResult(
        out_dir=out,
        steps=step,
        total_steps=total_steps,
        completed=step >= total_steps,
        resumed_from_step=resumed_from,
        train_seconds=elapsed,
        tokens_seen=tokens_seen,
        tokens_per_second=tokens_seen / elapsed if elapsed > 0 else float("nan"),
        final_loss=float(np.mean(tail)) if tail else None,
        held_out_pppl=pppl,
        held_out_tokens=held_n,
        losses=losses,
        objective=objective,
        held_out_ppl=ppl,
        device=str(device),
        n_parameters=sum(p.numel() for p in model.parameters()),
        config=record,
    )
    json_file = out / TRAINING_JSON
    record_json = result.to_json()
    if found_complete and json_file.exists():  # keep the record of the run that trained it
        problem = cache_file_problem(json_file, key)
        if problem:
            logger.warning(
                "%s is not used: %s; it is written again from this run's figures", json_file, problem
            )
        else:
            old = json.loads(json_file.read_text(encoding="utf-8"))
            measured = {"held_out_ppl": ppl} if causal else {"held_out_pppl": pppl}
            record_json = {**old, **({**measured, "held_out_tokens": held_n} if held_out else {})}
            if record_json == old:
                return result
    atomic_write_text(json_file, json.dumps(record_json, indent=2))
    write_cache_checksum(json_file, key)
    return result
