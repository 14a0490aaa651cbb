"""The training loop shared by :func:`biaskit.training.pretrain.train_masked_lm`,
:func:`biaskit.training.pretrain.train_causal_lm` and :func:`biaskit.training.fine_tune.fine_tune`, with
its checkpoints.

:func:`train_loop` trains a model in place (AdamW, linear warm-up + decay, clipping, optional bfloat16
mixed precision), deterministic given the seed and resumable from a checkpoint to bit-identical weights
(the scheme is described in :mod:`biaskit.training.pretrain`); it saves the model, the tokenizer and
``training.json``.  :func:`encode_for_training` turns sentences into the token ids it trains on,
:func:`load_checkpoint` reads a checkpoint back, :func:`training_steps` counts a run's steps.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import shlex
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from biaskit.core.io import (
    CHECKSUM_SUFFIX,
    ChecksumError,
    checksum_line,
    checksum_sidecar,
    recorded_sha256,
    sha256_file,
)
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
    "CHECKPOINT_FILE",
    "CHECKSUM_SUFFIX",
    "TRAINING_JSON",
    "data_hash",
    "encode_for_training",
    "has_saved_model",
    "load_checkpoint",
    "train_loop",
    "training_steps",
    "verify_checkpoint",
]

CHECKPOINT_DIR = "checkpoint"
CHECKPOINT_FILE = "state.pt"
TRAINING_JSON = "training.json"


def data_hash(encoded: list[list[int]]) -> str:
    """A short hash of the encoded training data (the key checkpoints are matched on)."""
    h = hashlib.sha256()
    for ids in encoded:
        h.update(np.asarray(ids, dtype=np.int64).tobytes())
        h.update(b"|")
    return h.hexdigest()[:16]


def _atomic_torch_save(obj: Any, path: Path) -> None:
    """``torch.save`` to ``path`` atomically, then its sha256 to ``path.sha256`` (:data:`CHECKSUM_SUFFIX`).

    Order: the checkpoint to ``state.tmp``, its sha256 to ``state.pt.sha256.tmp``, the checkpoint renamed
    into place, then the sidecar.  A crash between the two renames leaves the new checkpoint with the
    new sum still in the ``.tmp`` sidecar, which :func:`load_checkpoint` accepts.
    """
    tmp = path.with_suffix(".tmp")
    torch.save(obj, tmp)
    side = checksum_sidecar(path)
    side_tmp = side.with_name(side.name + ".tmp")
    side_tmp.write_text(checksum_line(tmp, path.name), encoding="utf-8")
    os.replace(tmp, path)
    os.replace(side_tmp, side)


def _damaged_checkpoint(ckpt_file: Path, problem: str) -> ChecksumError:
    folder = shlex.quote(str(ckpt_file.parent))
    return ChecksumError(
        f"checkpoint {ckpt_file} is damaged ({problem}): the run cannot resume from it. Discard it and start "
        f"again: `rm -r {folder}` then the same command (or pass resume=False); the steps since the start "
        "are trained again, to the same weights"
    )


def verify_checkpoint(ckpt_file: Path) -> bool:
    """Check ``state.pt`` against its sha256 sidecar (``state.pt.sha256``): True when it matches,
    :class:`~biaskit.core.io.ChecksumError` with the command to discard it when it differs (or the sidecar
    is unreadable), False when there is no sidecar (a checkpoint written before biaskit wrote them)."""
    side = checksum_sidecar(ckpt_file)
    if not side.exists() and not side.with_name(side.name + ".tmp").exists():
        return False
    got = sha256_file(ckpt_file)
    sums = [recorded_sha256(side), recorded_sha256(side.with_name(side.name + ".tmp"))]
    if got in sums:
        return True
    if not any(sums):
        raise _damaged_checkpoint(ckpt_file, f"its sha256 file {side.name} is unreadable")
    raise _damaged_checkpoint(
        ckpt_file,
        f"sha256 {got[:16]}... but {next(x for x in sums if x)[:16]}... was recorded when it was written: "
        "a truncated or changed file",
    )


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
    ckpt_file: Path, record: dict[str, Any], defaults: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """The checkpoint's state, or ``None`` when there is none; ``ValueError`` if its config differs.

    Keys of ``defaults`` missing from the stored config (fields added since it was written)
    count as their default values.  The file is first checked against the sha256 written beside it
    (:func:`verify_checkpoint`): a truncated or changed checkpoint raises
    :class:`~biaskit.core.io.ChecksumError` with the command that discards it (``rm -r <folder>/checkpoint``,
    then the same command) instead of resuming from damaged state.  A checkpoint of an earlier biaskit
    (no sha256 file) is used when it reads whole, with a WARNING, and gets its sha256 file; one that does
    not read raises the same error.
    """
    if not ckpt_file.exists():
        return None
    verified = verify_checkpoint(ckpt_file)
    try:
        state = torch.load(ckpt_file, map_location="cpu", weights_only=False)
    except Exception as exc:  # unpickling / zip errors come in many types
        raise _damaged_checkpoint(ckpt_file, f"it cannot be read: {type(exc).__name__}: {exc}") from exc
    if not verified:
        logger.warning(
            "checkpoint %s has no sha256 file (written by an earlier biaskit); it reads whole and is used, "
            "and its sha256 is recorded now",
            ckpt_file,
        )
        checksum_sidecar(ckpt_file).write_text(checksum_line(ckpt_file, ckpt_file.name), encoding="utf-8")
    saved = {**{k: v for k, v in (defaults or {}).items() if k not in state["config"]}, **state["config"]}
    if saved != record:
        raise ValueError(
            f"checkpoint {ckpt_file} was written with another configuration; "
            "use the same config or resume=False"
        )
    return state


def has_saved_model(folder: Path) -> bool:
    """Whether ``folder`` holds saved weights (``config.json`` and a ``*.safetensors`` file)."""
    return (folder / "config.json").exists() and any(folder.glob("*.safetensors"))


def training_steps(config: MLMTrainingConfig, n_sequences: int) -> int:
    """Optimiser steps of a run on ``n_sequences`` sequences: ``max_steps`` when set, else
    ``epochs * ceil(n_sequences / batch_size)`` (the last batch of an epoch may be short)."""
    if config.max_steps is not None:
        return config.max_steps
    return config.epochs * math.ceil(n_sequences / config.batch_size)


def _no_weight_decay(name: str) -> bool:
    """Biases and LayerNorm weights (BERT ``LayerNorm``, GPT-2 ``ln_1`` / ``ln_2`` / ``ln_f``) get no decay."""
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
    ckpt_file = ckpt_dir / CHECKPOINT_FILE
    if objective not in ("masked", "causal", "permutation"):
        raise ValueError(f"objective must be 'masked', 'causal' or 'permutation', not {objective!r}")
    causal = objective == "causal"
    permutation = objective == "permutation"
    device = resolve_device(config.device)
    if state is not None and state["data"] != data_key:
        raise ValueError(f"checkpoint {ckpt_file} was written for other training data; use resume=False")

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
        foreach=True,  # one kernel per op for all tensors: bit-identical to the per-tensor loop, faster on a CPU
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

    def save_checkpoint() -> None:
        ckpt_dir.mkdir(parents=True, exist_ok=True)
        tokenizer.save_pretrained(str(ckpt_dir))
        rng = {"torch": torch.get_rng_state()}
        rng["cuda"] = torch.cuda.get_rng_state_all() if device.type == "cuda" else None
        _atomic_torch_save(
            {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "rng": rng,
                "step": step,
                "losses": losses,
                "tokens_seen": tokens_seen,
                "train_seconds": elapsed,
                "config": record,
                "data": data_key,
            },
            ckpt_file,
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
                    save_checkpoint()
                if callback is not None:
                    callback(step, lv)
    finally:
        torch.use_deterministic_algorithms(was_deterministic)
        if attn_now != attn_saved:
            model.set_attn_implementation(attn_saved)
    elapsed = time.perf_counter() - t_start if step > resumed_from else elapsed

    model.eval()
    # a run found complete (nothing trained in this call) rewrites nothing
    saved = has_saved_model(out)
    found_complete = step == resumed_from and state is not None and saved
    if not found_complete:
        save_checkpoint()
        model.save_pretrained(str(out), safe_serialization=True)
        tokenizer.save_pretrained(str(out))

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
        old = json.loads(json_file.read_text(encoding="utf-8"))
        measured = {"held_out_ppl": ppl} if causal else {"held_out_pppl": pppl}
        record_json = {**old, **({**measured, "held_out_tokens": held_n} if held_out else {})}
        if record_json == old:
            return result
    json_file.write_text(json.dumps(record_json, indent=2), encoding="utf-8")
    return result
