r"""Masked-LM scoring core: log-probabilities of tokens at masks, batched, one layer cheaper for BERT-like
encoders.

Seed 000 chapter 4: every bias metric on a masked language model ``m`` is built from conditional
probabilities :math:`P_m(w_t \mid W_{\setminus t})`.  :func:`masked_log_probs` gives them for any set of
``(sentence, position, target)`` triples: masked copies are sorted by length, longest first, and scored in
batches sized by a token budget (padding + attention mask, :func:`torch.inference_mode`); for BERT-layout
encoders (BERT, RoBERTa, XLM-R, CamemBERT) the last encoder layer and the output layer run only at the masked
position of each copy (exact: only the keys and values of the last layer are needed at the other positions).
:func:`unmasked_log_probs` reads :math:`\log P_m(w_t \mid W)` with nothing masked (AUL, Kaneko &
Bollegala 2022).  The sentence-level scorers built on them are in :mod:`biaskit.lm.scoring`;
``benchmarks/bench_pll.py`` compares them with the official one-forward-per-mask loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from biaskit.lm.base import (
    BatchStats,
    MaskedLM,
    batch_token_budget,
    head_log_probs,
    log_probs_at,
    pad_sequences,
    plan_batches,
)

__all__ = ["masked_log_probs", "mlm_head", "unmasked_log_probs"]

# masked-LM classes whose forward is exactly ``head(base_model(...)[0])``: the output layer can then be
# applied to the masked positions only; any other class goes through its full forward pass
_HEADS = {
    "BertForMaskedLM": "cls",
    "RobertaForMaskedLM": "lm_head",
    "XLMRobertaForMaskedLM": "lm_head",
    "CamembertForMaskedLM": "lm_head",
    "AlbertForMaskedLM": "predictions",
}


def mlm_head(model: Any) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """The output layer of a known masked-LM class, to apply it at the masked positions only."""
    attr = _HEADS.get(type(model).__name__)
    head = getattr(model, attr, None) if attr else None
    return head if isinstance(head, torch.nn.Module) else None


def _hidden_and_head(
    lm: MaskedLM, input_ids: torch.Tensor, attention_mask: torch.Tensor | None
) -> tuple[torch.Tensor, Callable | None]:
    head = mlm_head(lm.model)
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
    if mlm_head(model) is None or type(model).__name__ == "AlbertForMaskedLM":
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
    (equal to float rounding; ``tests/lm/test_masked_scoring.py`` checks it), one layer's work cheaper.
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
    return last.output(last.intermediate(att_out), att_out), mlm_head(lm.model)


def masked_log_probs(
    lm: MaskedLM,
    seqs: Sequence[Sequence[int]],
    items: Sequence[tuple[int, int, int]],
    *,
    batch_size: int | None = None,
    batch_tokens: int | None = None,
    pbar: Any = None,
    stats: BatchStats | None = None,
) -> np.ndarray:
    """log P(target | sequence with a [MASK] at position) for each ``(seq, position, target)``.

    Masked copies are sorted by length, longest first (then by sequence and position), and cut into
    batches by a token budget (:func:`biaskit.lm.base.plan_batches`: ``rows x width <= batch_tokens``,
    default :data:`~biaskit.lm.base.DEFAULT_BATCH_TOKENS` of the model's device; at most ``batch_size``
    rows when given).  ``stats`` collects the batches' padding.
    """
    out = np.empty(len(items), dtype=np.float64)
    if not items:
        return out
    tok = lm.tokenizer
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
    mask_id = tok.mask_token_id
    dev = lm.device
    mat, lengths = pad_sequences(seqs, pad_id)
    item_arr = torch.as_tensor(np.asarray(items, dtype=np.int64).reshape(-1, 3))
    item_len = lengths[item_arr[:, 0]].numpy()
    budget = batch_token_budget(batch_tokens, dev)
    batches = plan_batches(
        item_len,
        batch_tokens=budget,
        batch_size=batch_size,
        keys=(item_arr[:, 0].numpy(), item_arr[:, 1].numpy()),
    )
    vocab = getattr(lm.model.config, "vocab_size", None)
    with torch.inference_mode():
        for order in batches:
            idx = torch.as_tensor(order)
            si, pos, tgt = item_arr[idx, 0], item_arr[idx, 1], item_arr[idx, 2]
            lens = lengths[si]
            width = int(lens.max())
            if stats is not None:
                stats.add(lens.numpy())
            inp = mat[si, :width].clone()
            rows = torch.arange(len(idx))
            inp[rows, pos] = mask_id
            att = (torch.arange(width)[None, :] < lens[:, None]).long()
            sel, head = _hidden_at(lm, inp.to(dev), att.to(dev), pos.to(dev))
            out[order] = head_log_probs(sel, head, tgt.to(dev), vocab_size=vocab).double().cpu().numpy()
            if pbar is not None:
                pbar.update(len(idx))
    return out


def unmasked_log_probs(
    lm: MaskedLM,
    seqs: Sequence[Sequence[int]],
    positions: Sequence[Sequence[int]],
    *,
    batch_size: int | None = None,
    batch_tokens: int | None = None,
    pbar: Any = None,
    stats: BatchStats | None = None,
) -> list[np.ndarray]:
    """log P(w_t | W) with nothing masked (AUL), for the given positions of each sequence (token-budget
    batches)."""

    def hidden_at(
        inp: torch.Tensor, att: torch.Tensor | None, rows: torch.Tensor, pos: torch.Tensor
    ) -> tuple[torch.Tensor, Callable | None]:
        hidden, head = _hidden_and_head(lm, inp, att)
        return hidden[rows, pos], head

    pad_id = lm.tokenizer.pad_token_id if lm.tokenizer.pad_token_id is not None else 0
    return log_probs_at(
        lm,
        seqs,
        positions,
        hidden_at,
        pad_id=pad_id,
        batch_size=batch_size,
        batch_tokens=batch_token_budget(batch_tokens, lm.device),
        pbar=pbar,
        stats=stats,
    )
