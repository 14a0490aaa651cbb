"""The language-model wrappers every scorer takes: a model, its tokenizer and what scoring needs to know.

:class:`MaskedLM` wraps an ``AutoModelForMaskedLM`` (BERT, RoBERTa, ...: seed 000 chapter 4 scores
them with pseudo-log-likelihoods), :class:`CausalLM` an ``AutoModelForCausalLM`` (GPT-2, Llama,
Mistral, Qwen, ...: scored with exact left-to-right log-likelihoods).  Both share
:class:`LanguageModel`: the name and revision, lower-casing, the cache fingerprint, the window
length and the device.  A metric that only has a meaning for one kind checks it with
:func:`require_kind`, which says in plain words why the other kind cannot be used.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import torch

__all__ = [
    "DEFAULT_BATCH_TOKENS",
    "BatchStats",
    "CausalLM",
    "LanguageModel",
    "MaskedLM",
    "ModelKind",
    "batch_token_budget",
    "fused_activations",
    "head_log_probs",
    "plan_batches",
    "require_kind",
    "resolve_device",
]

ModelKind = Literal["masked", "causal"]


@dataclass(eq=False)
class LanguageModel:
    """A Hugging Face language model with its tokenizer and the metadata the scorers need.

    Attributes
    ----------
    model, tokenizer:
        A ``transformers`` model (eval mode) and its tokenizer.
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
        True for models built in memory (:mod:`biaskit.lm.builtin`): caches are then keyed
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

    #: ``"masked"`` or ``"causal"``: which scorers apply (see the README's masked-vs-causal table)
    kind: ClassVar[str] = ""

    def __post_init__(self) -> None:
        if self.lowercase is None:
            self.lowercase = bool(
                "uncased" in self.name.lower() or getattr(self.tokenizer, "do_lower_case", False)
            )

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
            if self.kind != "masked":  # masked keys stay as they were before causal models existed
                h.update(f"kind={self.kind}".encode())
            dtype = next(self.model.parameters()).dtype
            if dtype != torch.float32:  # half-precision scores are cached apart (float32 keys unchanged)
                h.update(f"dtype={dtype}".encode())
            self._fingerprint = h.hexdigest()[:16]
        return self._fingerprint

    def __repr__(self) -> str:
        n = sum(p.numel() for p in self.model.parameters())
        return (
            f"{type(self).__name__}({self.name!r}, params={n:,}, device={self.device}, "
            f"lowercase={self.lowercase})"
        )


@dataclass(eq=False, repr=False)
class MaskedLM(LanguageModel):
    """A masked language model (``AutoModelForMaskedLM``): scored with pseudo-log-likelihoods.

    See :class:`LanguageModel` for the attributes.  The tokenizer must have a mask token.
    """

    kind: ClassVar[str] = "masked"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.tokenizer.mask_token_id is None:
            raise ValueError(f"{self.name}: the tokenizer has no mask token; not a masked language model")


@dataclass(eq=False, repr=False)
class CausalLM(LanguageModel):
    """A causal (decoder, left-to-right) language model (``AutoModelForCausalLM``).

    Scored with exact log-likelihoods :math:`\\log P(w_t \\mid w_{<t})`
    (:mod:`biaskit.lm.causal`).  See :class:`LanguageModel` for the attributes.
    """

    kind: ClassVar[str] = "causal"

    @property
    def prefix_token_id(self) -> int | None:
        """The token every sentence is conditioned on: the tokenizer's BOS, else its EOS, else ``None``.

        The rule of lm-evaluation-harness (``HFLM.prefix_token_id``): the log-likelihood of a
        sentence with an empty context is :math:`\\sum_{t=1}^{n} \\log P(w_t \\mid \\text{prefix},
        w_{<t})`, so that the first word is scored too (GPT-2's prefix is ``<|endoftext|>``,
        Llama's ``<s>``, biaskit's trained models' ``[CLS]``).  With neither token the first
        word cannot be scored (:mod:`biaskit.lm.causal` then starts at the second, with a WARNING).
        """
        tok = self.tokenizer
        for tid in (getattr(tok, "bos_token_id", None), getattr(tok, "eos_token_id", None)):
            if tid is not None:
                return int(tid)
        return None


def require_kind(lm: Any, kind: ModelKind, what: str, why: str) -> None:
    """Raise a ``TypeError`` saying in plain words that ``what`` needs a ``kind`` language model, and ``why``.

    Used where a metric has no meaning for the other kind, e.g. a masked-token probability
    (fill-in-the-blank, LPBS's prior, the ``cp`` / ``sz`` pseudo-log-likelihoods) on a causal model.
    """
    got = getattr(lm, "kind", None)
    if got == kind:
        return
    name = getattr(lm, "name", type(lm).__name__)
    raise TypeError(
        f"{what} needs a {kind} language model, but {name!r} is "
        f"{f'a {got} one' if got else 'not a biaskit language model'}: {why}"
    )


_FUSABLE_GELU = ("NewGELUActivation", "FastGELUActivation")
#: parents whose activation's input is a fresh intermediate that nothing else reads (GPT-2's feed-forward:
#: ``act(c_fc(x))``), where the fused GELU may overwrite it in inference mode instead of allocating
_INPLACE_PARENTS = ("GPT2MLP",)


class FusedTanhGELU(torch.nn.Module):
    """The tanh form of GELU in PyTorch's single kernel; with ``inplace``, written over its input in
    inference mode (no allocation of a tokens x 3,072 output; the same numbers)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.inplace and torch.is_inference_mode_enabled():
            return torch.ops.aten.gelu_(x, approximate="tanh")
        return torch.nn.functional.gelu(x, approximate="tanh")


_fuse_lock = threading.Lock()
_fused: dict[int, tuple[int, list[tuple[torch.nn.Module, str, torch.nn.Module]]]] = {}


@contextmanager
def fused_activations(model: Any) -> Iterator[None]:
    r"""Run ``model`` with PyTorch's fused tanh-GELU kernel in place of transformers' Python one, then
    restore.

    GPT-2's ``gelu_new`` (``NewGELUActivation``, also ``FastGELUActivation``) computes
    :math:`0.5x(1 + \tanh(\sqrt{2/\pi}(x + 0.044715x^3)))` in eight elementwise operations;
    ``torch.nn.functional.gelu(x, approximate="tanh")`` is the same formula in one kernel (transformers'
    own ``GELUTanh`` says so: equal up to float rounding), about a tenth of a GPT-2-small forward pass on a
    CPU; inside GPT-2's feed-forward block, whose activation input nothing else reads, it overwrites its
    input in inference mode (:class:`FusedTanhGELU`), which saves allocating a tokens x 3,072 output.  The
    modules are swapped for the duration of the ``with`` block and put back afterwards (nested and concurrent
    uses of one model are counted, so the last one out restores them); the weights, and so the cache
    fingerprint, are untouched.  Models without such modules are left as they are.
    """
    key = id(model)
    with _fuse_lock:
        count, swapped = _fused.get(key, (0, []))
        if count == 0 and isinstance(model, torch.nn.Module):
            swapped = []
            for parent in model.modules():
                for name, child in parent.named_children():
                    if type(child).__name__ in _FUSABLE_GELU:
                        swapped.append((parent, name, child))
            for parent, name, _child in swapped:
                setattr(parent, name, FusedTanhGELU(inplace=type(parent).__name__ in _INPLACE_PARENTS))
        _fused[key] = (count + 1, swapped)
    try:
        yield
    finally:
        with _fuse_lock:
            count, swapped = _fused[key]
            if count == 1:
                for parent, name, child in swapped:
                    setattr(parent, name, child)
                del _fused[key]
            else:
                _fused[key] = (count - 1, swapped)


def resolve_device(device: str | torch.device) -> torch.device:
    """``"auto"`` -> CUDA when available, else CPU; any other value -> ``torch.device(device)``."""
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


#: default token budget of one forward pass (rows x padded width) on a CPU and on a GPU: large enough for
#: the matrix products to run near the machine's peak (``benchmarks/bench_peers.py`` measures it), small
#: enough that the activations of a BERT-base / GPT-2-small pass stay in the low hundreds of MiB
DEFAULT_BATCH_TOKENS = {"cpu": 4096, "cuda": 32768}


def batch_token_budget(batch_tokens: int | None, device: torch.device | str | None = None) -> int:
    """``batch_tokens``, or the default budget of ``device`` (:data:`DEFAULT_BATCH_TOKENS`) when ``None``."""
    if batch_tokens is None:
        kind = torch.device(device).type if device is not None else "cpu"
        return DEFAULT_BATCH_TOKENS.get(kind, DEFAULT_BATCH_TOKENS["cuda"] if kind != "cpu" else 4096)
    if int(batch_tokens) < 1:
        raise ValueError(f"batch_tokens must be >= 1, got {batch_tokens}")
    return int(batch_tokens)


@dataclass
class BatchStats:
    """What the batches of a scoring run held: forward passes, token slots and how many of them were padding.

    ``slots`` counts ``rows x padded width`` over every batch, ``tokens`` the real tokens among them;
    :attr:`pad_share` is the share of padding, the work a batch spends on nothing.  ``unpacked``: the
    tokens the sequences have before a shared beginning is packed once (causal prefix trees;
    :attr:`shared_share` is the share saved), 0 when nothing is packed.
    """

    batches: int = 0
    rows: int = 0
    tokens: int = 0
    slots: int = 0
    unpacked: int = 0  # tokens of the sequences before prefix sharing (0: none was shared)

    @property
    def pad_share(self) -> float:
        return 1.0 - self.tokens / self.slots if self.slots else 0.0

    @property
    def shared_share(self) -> float:
        return 1.0 - self.tokens / self.unpacked if self.unpacked else 0.0

    def add(self, lengths: Sequence[int] | np.ndarray) -> None:
        n = len(lengths)
        if n:
            self.batches += 1
            self.rows += n
            self.tokens += int(np.sum(lengths))
            self.slots += n * int(np.max(lengths))

    def as_dict(self) -> dict[str, float]:
        return {
            "batches": self.batches,
            "rows": self.rows,
            "tokens": self.tokens,
            "slots": self.slots,
            "pad_share": self.pad_share,
            "unpacked": self.unpacked or self.tokens,
            "shared_share": self.shared_share,
        }


#: largest share of padding a batch may take on once it fills a sixteenth of its token budget
MAX_PAD_SHARE = 0.02


def plan_batches(
    lengths: Sequence[int] | np.ndarray,
    *,
    batch_tokens: int,
    batch_size: int | None = None,
    keys: Sequence[Sequence[int]] | np.ndarray | None = None,
    max_pad: float = MAX_PAD_SHARE,
) -> list[np.ndarray]:
    """Batches of the positions of ``lengths``: longest first, each sized by a token budget.

    The positions are sorted by length, longest first (ties in input order, or by ``keys``: extra sort
    keys, most significant first), and cut greedily.  A batch's width is its first (longest) sequence's
    length, as in lm-evaluation-harness; it takes the next sequence while

    * ``rows x width <= batch_tokens`` (a single sequence longer than the budget is a batch of its own),
    * at most ``batch_size`` rows, when given,
    * and its padding stays at most ``max_pad`` of its slots, once the batch fills a sixteenth of the budget
      (small batches of the long tail may pad more rather than run nearly empty).

    Deterministic: the same lengths give the same batches, which makes a resumed run bit-identical to an
    uninterrupted one.
    """
    lens = np.asarray(lengths, dtype=np.int64).reshape(-1)
    if batch_tokens < 1:
        raise ValueError(f"batch_tokens must be >= 1, got {batch_tokens}")
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if keys is None:
        order = np.argsort(-lens, kind="stable")
    else:
        order = np.lexsort((*[np.asarray(k) for k in reversed(list(keys))], -lens))
    srt = lens[order]
    out: list[np.ndarray] = []
    start, n = 0, len(order)
    cap = batch_size or n
    free = batch_tokens // 16
    while start < n:
        width = max(1, int(srt[start]))
        rows = max(1, min(cap, batch_tokens // width, n - start))
        if rows > 1 and max_pad < 1:
            # the padding of the first k rows: k * width - their tokens; keep the longest prefix within bounds
            k = np.arange(1, rows + 1)
            pad = k * width - np.cumsum(srt[start : start + rows])
            ok = (pad <= max_pad * k * width) | (k * width <= free)
            rows = int(np.argmin(ok)) if not ok.all() else rows
            rows = max(1, rows)
        out.append(order[start : start + rows])
        start += rows
    return out


def pad_sequences(seqs: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad token-id sequences into a ``(n, longest)`` matrix; return it and the lengths."""
    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    mat = torch.full((len(seqs), int(lengths.max()) if len(seqs) else 0), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        mat[i, : len(s)] = torch.as_tensor(s, dtype=torch.long)
    return mat, lengths


def padded_batches(
    seqs: Sequence[Sequence[int]],
    pad_id: int,
    batch_size: int | None = None,
    *,
    batch_tokens: int | None = None,
    stats: BatchStats | None = None,
) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]]:
    """``(idx, input_ids, attention_mask)`` batches of ``seqs``, longest first, right-padded to each batch's
    longest.

    Batches are cut by :func:`plan_batches`: at most ``batch_tokens`` token slots (default
    :data:`DEFAULT_BATCH_TOKENS` of a CPU) and at most ``batch_size`` rows when given.  ``idx`` holds the
    positions of the batch's sequences in ``seqs``; right padding keeps every token's absolute position,
    and the attention mask is 1 on the tokens, 0 on the padding, or ``None`` when the batch has no padding
    (every sequence as long as the longest).  ``stats`` collects the batches' padding.
    """
    if not len(seqs):
        return
    mat, lengths = pad_sequences(seqs, pad_id)
    budget = batch_token_budget(batch_tokens)
    for order in plan_batches(lengths.numpy(), batch_tokens=budget, batch_size=batch_size):
        idx = torch.as_tensor(order)
        lens = lengths[idx]
        width = int(lens.max())
        if stats is not None:
            stats.add(lens.numpy())
        att = None if int(lens.min()) == width else (torch.arange(width)[None, :] < lens[:, None]).long()
        yield idx, mat[idx, :width], att


#: ``hidden_at(input_ids, attention_mask, rows, positions)``: the final hidden states (and the output layer
#: to apply to them) that predict the tokens read at ``(rows, positions)``, or their logits with ``None`` as
#: the head; ``attention_mask`` is ``None`` for a batch without padding (every tensor on the model's device)
HiddenAt = Callable[
    [torch.Tensor, torch.Tensor | None, torch.Tensor, torch.Tensor],
    tuple[torch.Tensor, Callable[[torch.Tensor], torch.Tensor] | None],
]

#: rows of logits whose log-softmax is taken at once (the output layer and the log-softmax run on slices of
#: this many read positions, so that a 50k-word vocabulary never materialises a 4096 x 50k matrix)
LOGIT_ELEMENTS = 1 << 22


def head_log_probs(
    hidden: torch.Tensor,
    head: Callable[[torch.Tensor], torch.Tensor] | None,
    targets: torch.Tensor,
    *,
    vocab_size: int | None = None,
    index: torch.Tensor | None = None,
) -> torch.Tensor:
    """``log_softmax(head(hidden))[index[k], targets[k]]`` for every read ``k``, in float32, slice by slice.

    ``index`` (default: ``k`` itself) says which row of ``hidden`` each read uses, so that one hidden
    state read by several sequences (a shared prefix) goes through the output layer once.  ``head=None``:
    ``hidden`` already holds the logits.  The output layer and the log-softmax run on slices of about
    :data:`LOGIT_ELEMENTS` logits, the same numbers as one call on all rows (float rounding aside).
    """
    n = targets.shape[0]
    out = torch.empty(n, dtype=torch.float32, device=hidden.device)
    if n == 0:
        return out
    width = hidden.shape[-1] if head is None else (vocab_size or 32768)
    step = max(1, LOGIT_ELEMENTS // max(1, width))
    if index is None:
        for r0 in range(0, n, step):
            h = hidden[r0 : r0 + step]
            logits = head(h) if head is not None else h
            lp = torch.log_softmax(logits.float(), dim=-1)
            out[r0 : r0 + step] = lp[torch.arange(lp.shape[0], device=lp.device), targets[r0 : r0 + step]]
        return out
    order = torch.argsort(index, stable=True)
    idx_sorted = index[order]
    bounds = torch.searchsorted(
        idx_sorted, torch.arange(0, hidden.shape[0] + step, step, device=index.device)
    )
    for k, r0 in enumerate(range(0, hidden.shape[0], step)):
        a, b = int(bounds[k]), int(bounds[k + 1])
        if a == b:
            continue
        h = hidden[r0 : r0 + step]
        logits = head(h) if head is not None else h
        lp = torch.log_softmax(logits.float(), dim=-1)
        reads = order[a:b]
        out[reads] = lp[index[reads] - r0, targets[reads]]
    return out


def log_probs_at(
    lm: LanguageModel,
    seqs: Sequence[Sequence[int]],
    positions: Sequence[Sequence[int]],
    hidden_at: HiddenAt,
    *,
    pad_id: int,
    batch_size: int | None = None,
    batch_tokens: int | None = None,
    input_lengths: Sequence[int] | None = None,
    pbar: Any = None,
    stats: BatchStats | None = None,
) -> list[np.ndarray]:
    """The log-probability of each sequence's own token at each of its ``positions``, one forward pass per
    batch.

    The scoring loop shared by a masked model with nothing masked (AUL) and a causal model: they differ
    only in which hidden states predict a token (``hidden_at``: at its own position, or at the one before)
    and in how much of a sequence the model must read (``input_lengths``: a causal model needs only the
    tokens before the last one it predicts; default: all of it).  Batches: :func:`padded_batches` over the
    inputs (longest first, a token budget).  The log-softmax is taken in float32
    (:func:`head_log_probs`); one array of log-probabilities per sequence.
    """
    res: list[np.ndarray] = [np.empty(0)] * len(seqs)
    if not seqs:
        return res
    dev = lm.device
    inputs = (
        list(seqs) if input_lengths is None else [s[:n] for s, n in zip(seqs, input_lengths, strict=True)]
    )
    todo = [i for i, s in enumerate(inputs) if len(s) and len(positions[i])]
    if pbar is not None and len(todo) < len(seqs):
        pbar.update(len(seqs) - len(todo))  # nothing to read: no forward pass
    if not todo:
        return res
    vocab = getattr(getattr(lm.model, "config", None), "vocab_size", None)
    with torch.inference_mode():
        for sub, inp, att in padded_batches(
            [inputs[i] for i in todo], pad_id, batch_size, batch_tokens=batch_tokens, stats=stats
        ):
            ids = [todo[k] for k in sub.tolist()]
            rows = torch.cat(
                [torch.full((len(positions[i]),), k, dtype=torch.long) for k, i in enumerate(ids)]
            )
            pos = torch.cat([torch.as_tensor(list(positions[i]), dtype=torch.long) for i in ids])
            tgt = torch.cat(
                [torch.as_tensor([seqs[i][p] for p in positions[i]], dtype=torch.long) for i in ids]
            )
            hidden, head = hidden_at(
                inp.to(dev), None if att is None else att.to(dev), rows.to(dev), pos.to(dev)
            )
            vals = head_log_probs(hidden, head, tgt.to(dev), vocab_size=vocab).double().cpu().numpy()
            k0 = 0
            for i in ids:
                n = len(positions[i])
                res[i] = vals[k0 : k0 + n]
                k0 += n
            if pbar is not None:
                pbar.update(len(ids))
    return res
