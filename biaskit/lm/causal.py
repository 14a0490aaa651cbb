r"""Causal-LM scoring core: exact left-to-right log-likelihoods of sentences, batched.

A causal (decoder) language model gives the exact probability of a sentence by the chain rule,

.. math:: \log P(W) = \sum_{t=1}^{n} \log P(w_t \mid \text{prefix}, w_1, \dots, w_{t-1}),

where the prefix is the tokenizer's BOS token (else its EOS:
:attr:`biaskit.lm.base.CausalLM.prefix_token_id`), as lm-evaluation-harness scores a continuation with an
empty context, so the first word is scored too. No end-of-sentence token is scored (lm-evaluation-harness does
not score one either).  One forward pass per sentence gives every term: the logits at position :math:`t-1`
predict token :math:`t`. :func:`causal_log_probs` batches sentences (sorted by length, longest first, batches
sized by a token budget, right padding, so absolute positions are unchanged) and, for GPT-2 / Llama / Mistral
/ Qwen layouts, applies the output layer only at the positions asked for.  The sentence-level scorers
(``"ll"``, ``"ll_mean"``, ``"shared"``) are in :mod:`biaskit.lm.scoring`; ``benchmarks/bench_causal.py``
compares with one sentence at a time.

A model whose tokenizer has neither BOS nor EOS cannot condition the first word on anything: its
sentences are then scored from the second token on (:func:`encode_causal_sentence` logs a WARNING once per
model).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from biaskit.lm.base import (
    BatchStats,
    CausalLM,
    batch_token_budget,
    fused_activations,
    head_log_probs,
    log_probs_at,
    padded_batches,
    plan_batches,
)

__all__ = [
    "TREE_ROW_TOKENS",
    "TreeRow",
    "causal_log_probs",
    "encode_causal_sentence",
    "next_token_probabilities",
    "prefix_tree_rows",
]

logger = logging.getLogger(__name__)

# causal-LM classes whose logits are exactly ``lm_head(base_model(...)[0])`` (no soft-capping or
# scaling): the output layer can then run at the scored positions only
_CAUSAL_HEADS = {
    "GPT2LMHeadModel": "lm_head",
    "LlamaForCausalLM": "lm_head",
    "MistralForCausalLM": "lm_head",
    "Qwen2ForCausalLM": "lm_head",
}
_warned_no_prefix: set[str] = set()


def _causal_head(model: Any) -> Callable[[torch.Tensor], torch.Tensor] | None:
    attr = _CAUSAL_HEADS.get(type(model).__name__)
    head = getattr(model, attr, None) if attr else None
    return head if isinstance(head, torch.nn.Module) else None


def encode_causal_sentence(lm: CausalLM, text: str) -> tuple[list[int], list[tuple[int, int]] | None]:
    """Token ids of ``text`` as the causal scorers read it, ``[prefix] + tokens`` (no end token), and the
    character offsets of the tokens (``None`` when the tokenizer cannot give them).

    ``text`` is lower-cased first when ``lm.lowercase``; the tokenizer adds no special token of its own
    (``add_special_tokens=False``); the prefix is :attr:`~biaskit.lm.base.CausalLM.prefix_token_id`
    (offset ``(0, 0)``), or nothing when the tokenizer has neither BOS nor EOS (a WARNING, once per model).
    """
    t = text.lower() if lm.lowercase else text
    try:
        enc = lm.tokenizer(
            t, add_special_tokens=False, truncation=False, return_offsets_mapping=True, verbose=False
        )
        ids, offsets = list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]
    except (NotImplementedError, TypeError, ValueError):
        ids = list(lm.tokenizer(t, add_special_tokens=False, truncation=False, verbose=False)["input_ids"])
        offsets = None
    prefix = lm.prefix_token_id
    if prefix is None:
        if lm.name not in _warned_no_prefix:
            _warned_no_prefix.add(lm.name)
            logger.warning(
                "%s: the tokenizer has neither a BOS nor an EOS token, so the first token of each sentence "
                "has nothing to be conditioned on and is not scored (scores start at the second token)",
                lm.name,
            )
        return ids, offsets
    return [prefix, *ids], (None if offsets is None else [(0, 0), *offsets])


#: longest row (in tokens) into which :func:`prefix_tree_rows` packs sentences that share a beginning: the
#: attention of a row costs its length squared, so rows stay short (a longer sentence is a row of its own)
TREE_ROW_TOKENS = 64


@dataclass
class TreeRow:
    """One packed row of a prefix tree: its tokens, their position ids (depth in the sentence) and parents."""

    tokens: list[int]
    positions: list[int]
    parents: list[int]  # the row index of each token's predecessor in its sentence (-1: none)

    def ancestors(self) -> np.ndarray:
        """``mask[i, j]``: token ``i`` may attend to token ``j`` (``j`` is ``i`` or comes before it in every
        sentence through ``i``): the causal mask of a tree."""
        n = len(self.tokens)
        anc = np.zeros((n, n), dtype=bool)
        for i, par in enumerate(self.parents):
            if par >= 0:
                anc[i] = anc[par]
            anc[i, i] = True
        return anc


def prefix_tree_rows(
    inputs: Sequence[Sequence[int]], cap: int = TREE_ROW_TOKENS
) -> tuple[list[TreeRow], list[tuple[int, list[int]]]]:
    """Pack token sequences into rows of a prefix tree, so that a beginning several of them share is read
    once.

    The sequences are merged into a trie (one node per distinct prefix); its nodes are cut into rows of at
    most ``cap`` tokens: a subtree that fits is one row, preceded by the path from the root to it (the
    context its tokens attend to); a larger one is split among its children (the path repeated in each
    row).  Each token's position id is its position in its sentence, and it attends to its ancestors only
    (:meth:`TreeRow.ancestors`), so every sentence is read exactly as if it were alone (tree attention, as
    in speculative decoding).  Returns the rows and, for each input, ``(row, row index of each of its
    tokens)``.  Two CrowS-Pairs sentences share the words before their difference: about a fifth of the
    tokens of the English set.
    """
    token, parent, depth = [-1], [-1], [0]
    children: list[dict[int, int]] = [{}]
    ends: list[int] = []
    for seq in inputs:
        node = 0
        for t in seq:
            nxt = children[node].get(int(t))
            if nxt is None:
                nxt = len(token)
                children[node][int(t)] = nxt
                token.append(int(t))
                parent.append(node)
                depth.append(depth[node] + 1)
                children.append({})
            node = nxt
        ends.append(node)
    size = [0] * len(token)  # descendants of each node
    for v in range(len(token) - 1, 0, -1):
        size[parent[v]] += 1 + size[v]

    def subtree(v: int) -> list[int]:
        out, stack = [], list(reversed(children[v].values()))
        while stack:
            u = stack.pop()
            out.append(u)
            stack.extend(reversed(children[u].values()))
        return out

    row_nodes: list[list[int]] = []

    def emit(v: int, path: list[int]) -> None:
        if len(path) + size[v] <= cap or not children[v]:
            row_nodes.append(path + subtree(v))
            return
        group: list[int] = []
        for c in children[v].values():
            extra = 1 + size[c]
            if len(path) + extra > cap:
                emit(c, [*path, c])
                continue
            if group and len(path) + len(group) + extra > cap:
                row_nodes.append(path + group)
                group = []
            group += [c, *subtree(c)]
        if group:
            row_nodes.append(path + group)

    emit(0, [])
    rows: list[TreeRow] = []
    where: dict[int, tuple[int, int]] = {}  # node -> (first row holding it, its index there)
    for r, nodes in enumerate(row_nodes):
        at = {v: k for k, v in enumerate(nodes)}
        rows.append(
            TreeRow(
                tokens=[token[v] for v in nodes],
                positions=[depth[v] - 1 for v in nodes],
                parents=[at.get(parent[v], -1) for v in nodes],
            )
        )
        for v, k in at.items():
            where.setdefault(v, (r, k))
    placed: list[tuple[int, list[int]]] = []
    for seq, end in zip(inputs, ends, strict=True):
        if not len(seq):
            placed.append((-1, []))
            continue
        r = where[end][0]
        at = {v: k for k, v in enumerate(row_nodes[r])}
        path, v = [], end
        while v:
            path.append(at[v])
            v = parent[v]
        placed.append((r, path[::-1]))
    return rows, placed


def _tree_packing_ok(lm: CausalLM, longest: int) -> bool:
    """Classes that take position ids and a 4-D attention mask as given (checked by
    ``tests/lm/test_causal_scoring.py``); a sliding-window model only when no sentence is longer than its
    window."""
    if _causal_head(lm.model) is None:
        return False
    window = getattr(lm.model.config, "sliding_window", None)
    return not (isinstance(window, int) and longest > window)


def causal_log_probs(
    lm: CausalLM,
    seqs: Sequence[Sequence[int]],
    positions: Sequence[Sequence[int]],
    *,
    batch_size: int | None = None,
    batch_tokens: int | None = None,
    pbar: Any = None,
    stats: BatchStats | None = None,
    share_prefixes: bool = True,
) -> list[np.ndarray]:
    r""":math:`\log P(w_p \mid w_{<p})` for the given positions ``p >= 1`` of each token-id sequence.

    One forward pass per sequence, batched by a token budget (:func:`biaskit.lm.base.plan_batches`:
    ``batch_tokens``, default :data:`~biaskit.lm.base.DEFAULT_BATCH_TOKENS` of the model's device, at most
    ``batch_size`` rows when given; longest first; right padding); the logits at ``p - 1`` are read for
    token ``p``.  The model reads only the tokens it conditions on, ``w_0 .. w_{max(p) - 1}`` (the last
    token of a sentence predicts nothing, so it is not fed), as lm-evaluation-harness does.

    For the classes of the output-layer shortcut (GPT-2, Llama, Mistral, Qwen2), ``share_prefixes``
    (default) packs the sequences into the rows of a prefix tree (:func:`prefix_tree_rows`): a beginning
    that several sentences share (BOS and the words before a CrowS-Pairs difference) is read once, with
    position ids and a tree-shaped attention mask so that each sentence sees exactly its own past; a hidden
    state read by several sentences goes through the output layer once.  Otherwise (or with
    ``share_prefixes=False``) each sequence is a row, and a padded batch gets its attention mask (with
    right padding a causal model's tokens never attend to the padding after them anyway; without the mask
    transformers prints a warning).  GPT-2's Python tanh-GELU runs as PyTorch's fused kernel of the same
    formula (:func:`biaskit.lm.base.fused_activations`).  Equal, to float rounding, to a token-by-token loop
    that feeds each prefix alone (``tests/lm/test_causal_scoring.py``).
    """
    for i, pos in enumerate(positions):
        if any(p < 1 or p >= len(seqs[i]) for p in pos):
            raise ValueError(f"sequence {i}: positions must lie in 1..{len(seqs[i]) - 1}, got {list(pos)}")
    head = _causal_head(lm.model)
    budget = batch_token_budget(batch_tokens, lm.device)
    input_lengths = [max(pos, default=0) for pos in positions]
    if share_prefixes and _tree_packing_ok(lm, max(input_lengths, default=0)):
        with fused_activations(lm.model):
            return _tree_log_probs(lm, seqs, positions, input_lengths, batch_size, budget, pbar, stats)

    def hidden_at(
        inp: torch.Tensor, att: torch.Tensor | None, rows: torch.Tensor, pos: torch.Tensor
    ) -> tuple[torch.Tensor, Callable[[torch.Tensor], torch.Tensor] | None]:
        if head is not None:  # the mask of a padded batch (transformers warns without one)
            hidden = lm.model.base_model(input_ids=inp, attention_mask=att, use_cache=False)[0]
            return hidden[rows, pos - 1], head  # the output layer at the read positions only
        return lm.model(input_ids=inp, attention_mask=att, use_cache=False).logits[rows, pos - 1], None

    with fused_activations(lm.model):
        return log_probs_at(
            lm,
            seqs,
            positions,
            hidden_at,
            pad_id=_pad_id(lm),
            batch_size=batch_size,
            batch_tokens=budget,
            input_lengths=input_lengths,
            pbar=pbar,
            stats=stats,
        )


def _tree_log_probs(
    lm: CausalLM,
    seqs: Sequence[Sequence[int]],
    positions: Sequence[Sequence[int]],
    input_lengths: Sequence[int],
    batch_size: int | None,
    budget: int,
    pbar: Any,
    stats: BatchStats | None,
) -> list[np.ndarray]:
    """:func:`causal_log_probs` on the rows of a prefix tree (see there)."""
    res: list[np.ndarray] = [np.empty(0)] * len(seqs)
    live = [i for i in range(len(seqs)) if input_lengths[i] and len(positions[i])]
    if pbar is not None and len(live) < len(seqs):
        pbar.update(len(seqs) - len(live))
    if not live:
        return res
    rows, placed = prefix_tree_rows([list(seqs[i][: input_lengths[i]]) for i in live])
    members: list[list[int]] = [[] for _ in rows]
    for k, (r, _path) in enumerate(placed):
        members[r].append(k)
    head = _causal_head(lm.model)
    vocab = getattr(lm.model.config, "vocab_size", None)
    dev = lm.device
    pad_id = _pad_id(lm)
    lengths = np.array([len(r.tokens) for r in rows])
    if stats is not None:
        stats.unpacked += int(sum(input_lengths[i] for i in live))
    with torch.inference_mode():
        for batch in plan_batches(lengths, batch_tokens=budget, batch_size=batch_size):
            width = int(lengths[batch].max())
            n = len(batch)
            ids = np.full((n, width), pad_id, dtype=np.int64)
            pos_ids = np.zeros((n, width), dtype=np.int64)
            mask = np.zeros((n, 1, width, width), dtype=bool)
            mask[:, 0, np.arange(width), np.arange(width)] = True  # padding attends to itself only
            b_idx, r_idx, tgt, owners = [], [], [], []
            for b, r in enumerate(batch):
                row = rows[r]
                m = len(row.tokens)
                ids[b, :m] = row.tokens
                pos_ids[b, :m] = row.positions
                mask[b, 0, :m, :m] = row.ancestors()
                for k in members[r]:
                    i = live[k]
                    path = placed[k][1]
                    for p in positions[i]:
                        b_idx.append(b)
                        r_idx.append(path[p - 1])
                        tgt.append(seqs[i][p])
                    owners.append((i, len(positions[i])))
            if stats is not None:
                stats.add(lengths[batch])
            hidden = lm.model.base_model(
                input_ids=torch.as_tensor(ids).to(dev),
                attention_mask=torch.as_tensor(mask).to(dev),
                position_ids=torch.as_tensor(pos_ids).to(dev),
                use_cache=False,
            )[0]
            flat = torch.as_tensor(np.asarray(b_idx) * width + np.asarray(r_idx))
            uniq, inverse = torch.unique(flat, return_inverse=True)
            sel = hidden.reshape(n * width, -1)[uniq.to(dev)]
            vals = head_log_probs(
                sel, head, torch.as_tensor(tgt).to(dev), vocab_size=vocab, index=inverse.to(dev)
            )
            vals = vals.double().cpu().numpy()
            k0 = 0
            for i, cnt in owners:
                res[i] = vals[k0 : k0 + cnt]
                k0 += cnt
            if pbar is not None:
                pbar.update(len(owners))
    return res


def _pad_id(lm: CausalLM) -> int:
    tok = lm.tokenizer
    return tok.pad_token_id if tok.pad_token_id is not None else (tok.eos_token_id or 0)


def next_token_probabilities(
    lm: CausalLM,
    prefixes: Sequence[str],
    token_ids: Sequence[Sequence[int]],
    *,
    batch_size: int | None = None,
    batch_tokens: int | None = None,
) -> np.ndarray:
    r""":math:`P(v \mid \text{BOS}, \text{prefix})` for the token ids ``token_ids[i]`` after ``prefixes[i]``.

    The causal counterpart of a masked model's probability at a mask placed at the end of the text
    read so far: one forward pass per prefix (batched, right padding), full-vocabulary softmax at its
    last position.  Returns an array ``(len(prefixes), k)``; every ``token_ids[i]`` has the same
    length ``k``.  Prefixes are encoded like sentences (:func:`encode_causal_sentence`) and batched
    longest first by a token budget (``batch_tokens``; at most ``batch_size`` rows when given), as
    :func:`causal_log_probs`.
    """
    if len(prefixes) != len(token_ids):
        raise ValueError(f"{len(prefixes)} prefixes but {len(token_ids)} candidate lists")
    if not len(prefixes):
        return np.zeros((0, 0))
    k = len(token_ids[0])
    if k == 0 or any(len(t) != k for t in token_ids):
        raise ValueError("every prefix needs the same, non-zero number of candidate tokens")
    seqs = [encode_causal_sentence(lm, p)[0] for p in prefixes]
    empty = [i for i, s in enumerate(seqs) if not s]
    if empty:
        raise ValueError(f"prefixes {empty[:5]} have no token to condition on (empty, and no BOS token)")
    too_long = [i for i, s in enumerate(seqs) if len(s) > lm.max_length]
    if too_long:
        raise ValueError(f"prefixes {too_long[:5]} are longer than the model window ({lm.max_length} tokens)")
    dev = lm.device
    cand = torch.as_tensor(np.asarray(token_ids, dtype=np.int64))
    out = np.empty((len(seqs), k), dtype=np.float64)
    budget = batch_token_budget(batch_tokens, dev)
    head = _causal_head(lm.model)
    with torch.inference_mode(), fused_activations(lm.model):
        for idx, inp, att in padded_batches(seqs, _pad_id(lm), batch_size, batch_tokens=budget):
            last_pos = torch.as_tensor([len(seqs[i]) - 1 for i in idx.tolist()], dtype=torch.long).to(dev)
            rows = torch.arange(len(idx), device=dev)
            # the mask of a padded batch (transformers warns without one); the output layer at the last
            # position only
            mask = None if att is None else att.to(dev)
            if head is not None:
                last = head(
                    lm.model.base_model(input_ids=inp.to(dev), attention_mask=mask, use_cache=False)[0][
                        rows, last_pos
                    ]
                )
            else:
                last = lm.model(input_ids=inp.to(dev), attention_mask=mask, use_cache=False).logits[
                    rows, last_pos
                ]
            probs = torch.softmax(last.double(), dim=-1)
            out[idx.numpy()] = torch.gather(probs, 1, cand[idx].to(dev)).cpu().numpy()
    return out
