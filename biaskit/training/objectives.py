"""The two training objectives, batch by batch: padding, masking and losses (no loop, no model building).

* masked LM (Devlin et al. 2019): :func:`build_mlm_batch` pads a batch, :func:`mask_tokens` chooses 15 %
  of the tokens as targets (80 % ``[MASK]``, 10 % random, 10 % unchanged), :func:`mask_salient_groups`
  optionally hides whole word groups (:func:`salient_group_ids`), :func:`mlm_loss` is the mean
  cross-entropy over the targets;
* causal LM (Radford et al. 2019): :func:`build_clm_batch` pads a batch and labels every token after the
  first, :func:`clm_loss` is the next-token cross-entropy (its output layer in bfloat16 through
  :func:`linear_cross_entropy`);
* :func:`epoch_batches`: the batches of one epoch, random or grouped by length, from ``(seed, epoch)``;
  :func:`seed_of`: the seeds of the determinism scheme (:mod:`biaskit.training.pretrain` explains it).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

logger = logging.getLogger(__name__)

__all__ = [
    "LENGTH_GROUP_BATCHES",
    "PLM_PREDICT_FRACTION",
    "build_clm_batch",
    "build_plm_batch",
    "build_mlm_batch",
    "clm_loss",
    "epoch_batches",
    "linear_cross_entropy",
    "mask_salient_groups",
    "mask_tokens",
    "mlm_loss",
    "pack_sequences",
    "plm_loss",
    "salient_group_ids",
    "seed_of",
]

#: batches per length-sorted mega-batch of :func:`epoch_batches` (Hugging Face's ``LengthGroupedSampler``: 50)
LENGTH_GROUP_BATCHES = 50


# =============================================================================================
# batches and masking
# =============================================================================================
def build_mlm_batch(
    seqs: Sequence[Sequence[int]],
    tokenizer: Any,
    *,
    bartl_pad_quirk: bool = False,
    pad_to: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Pad token-id sequences into one masked-LM batch: ``(input_ids, attention_mask, special)``.

    ``special`` (bool) marks the positions :func:`mask_tokens` never picks as prediction targets.
    Each sequence is padded "post" to the longest one of the batch, or to ``pad_to`` tokens
    when that is longer.

    Default (standard padding): the padding is the tokenizer's pad id; the attention mask is
    1 on the tokens and 0 on the padding, as the tokenizer itself returns it; special tokens
    (``tokenizer.all_special_ids``) and the padding are never targets.

    ``bartl_pad_quirk=True``: the batches of Bartl, Marchiori & Lenci's (2020) fine-tuning code
    (``input_pipeline``, ``attention_mask_creator`` and ``mask_tokens`` in
    ``marionbartl/gender-bias-BERT/code/bias_utils/utils.py``), reproduced on purpose:

    * the padding value is the **[MASK]** id (keras ``pad_sequences(value=tokenizer.mask_token_id)``,
      103 for ``bert-base-uncased``), not the pad id;
    * the attention mask is ``id > 0`` (meant to hide ``[PAD]`` = 0, of which there is none), so
      the [MASK] padding **is attended**;
    * only [CLS], [SEP] (what the transformers 2.x ``BertTokenizer.get_special_tokens_mask(...,
      already_has_special_tokens=True)`` marked) and the pad id are excluded from the targets,
      so padding positions are drawn as targets with probability ``mask_probability`` and label
      [MASK]: the model is also trained to predict [MASK] after a sentence.

    Bartl's code pads every sequence to a fixed ``max_len`` (``pad_to``), so the quirk acts
    even with batch size 1; :func:`biaskit.training.pretrain.train_masked_lm` and
    :func:`biaskit.training.fine_tune.fine_tune` pass ``pad_to=max_length`` when the quirk is on.
    """
    lengths = [len(x) for x in seqs]
    if not seqs or min(lengths) == 0:
        raise ValueError("build_mlm_batch needs at least one non-empty sequence")
    width = max(max(lengths), pad_to or 0)
    pad_id = tokenizer.pad_token_id
    fill = tokenizer.mask_token_id if bartl_pad_quirk else pad_id
    if fill is None:
        raise ValueError("the tokenizer has no pad token" if not bartl_pad_quirk else "no mask token")
    ids = torch.full((len(seqs), width), int(fill), dtype=torch.long)
    for i, x in enumerate(seqs):
        ids[i, : len(x)] = torch.as_tensor(list(x), dtype=torch.long)
    padding = torch.arange(width)[None, :] >= torch.tensor(lengths)[:, None]
    if bartl_pad_quirk:
        attention = (ids > 0).long()
        never = [tokenizer.cls_token_id, tokenizer.sep_token_id, pad_id]
        special = torch.isin(ids, torch.tensor([t for t in never if t is not None], dtype=torch.long))
    else:
        attention = (~padding).long()
        special = torch.isin(ids, torch.tensor(sorted(set(tokenizer.all_special_ids)), dtype=torch.long))
        special |= padding
    return ids, attention, special


def mask_tokens(
    input_ids: torch.Tensor,
    special_mask: torch.Tensor,
    vocab_size: int,
    mask_id: int,
    generator: torch.Generator,
    *,
    mask_probability: float = 0.15,
    mask_replace: float = 0.8,
    mask_random: float = 0.1,
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT masking (Devlin et al. 2019): returns ``(corrupted_ids, labels)``.

    Each non-special position is a target with probability ``mask_probability``; a target
    becomes ``[MASK]`` with probability ``mask_replace``, a uniformly random token with
    probability ``mask_random``, else stays.  ``labels`` is ``-100`` off target.  Every
    sequence with a maskable token gets at least one target (its first maskable token if
    the draw chose none), so no step has an empty loss.  All draws come from ``generator``
    (CPU), so the result depends only on its seed.
    """
    ids = input_ids.clone()
    shape = ids.shape
    u = torch.rand(shape, generator=generator)
    maskable = ~special_mask
    target = (u < mask_probability) & maskable
    none = ~target.any(dim=1) & maskable.any(dim=1)
    if none.any():
        first = maskable.float().argmax(dim=1)
        rows = none.nonzero().squeeze(1)
        target[rows, first[rows]] = True
    labels = torch.where(target, ids, torch.full_like(ids, -100))
    v = torch.rand(shape, generator=generator)
    rand_tok = torch.randint(0, vocab_size, shape, generator=generator, dtype=ids.dtype)
    to_mask = target & (v < mask_replace)
    to_rand = target & (v >= mask_replace) & (v < mask_replace + mask_random)
    ids[to_mask] = mask_id
    ids[to_rand] = rand_tok[to_rand]
    return ids, labels


def salient_group_ids(groups: Sequence[Sequence[str]], tokenizer: Any) -> list[torch.Tensor]:
    """The token ids of each salient word group: the words that are one token of ``tokenizer``.

    A word that the tokenizer splits into several pieces is left out (it stays under BERT's random
    masking); a WARNING counts them per group and names up to ten.  ``ValueError`` when a group keeps
    no word, or when two groups share a token.
    """
    out: list[torch.Tensor] = []
    owner: dict[int, int] = {}
    special = set(tokenizer.all_special_ids)  # an out-of-vocabulary word is one [UNK]: not a word token
    for j, group in enumerate(groups):
        pieces = tokenizer(list(group), add_special_tokens=False)["input_ids"] if group else []
        whole = [len(p) == 1 and p[0] not in special for p in pieces]
        ids = sorted({p[0] for p, ok in zip(pieces, whole, strict=True) if ok})
        split = [w for w, ok in zip(group, whole, strict=True) if not ok]
        if split:
            logger.warning(
                "salient masking: %d of %d word(s) of group %d are not one token (or are unknown) and are "
                "left to the random masking: %s%s",
                len(split), len(group), j, ", ".join(split[:10]), " ..." if len(split) > 10 else "",
            )  # fmt: skip
        if not ids:
            raise ValueError(f"salient group {j} has no word that is one token of the tokenizer")
        for i in ids:
            if owner.setdefault(i, j) != j:
                raise ValueError(f"token id {i} belongs to salient groups {owner[i]} and {j}")
        out.append(torch.tensor(ids, dtype=torch.long))
    return out


def mask_salient_groups(
    input_ids: torch.Tensor,
    corrupted: torch.Tensor,
    labels: torch.Tensor,
    groups: Sequence[torch.Tensor],
    mask_id: int,
    generator: torch.Generator,
    *,
    probability: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Salient-group masking on top of BERT's: returns the new ``(corrupted, labels)``.

    A sequence is *eligible* when its original ``input_ids`` hold tokens of at least two of the
    ``groups`` (token-id tensors, :func:`salient_group_ids`).  Each eligible sequence is picked with
    ``probability``; in a picked sequence one of its present groups is drawn uniformly, **every** token
    of that group becomes ``[MASK]`` and a target, and every token of the other groups is restored
    and is no target, so the model predicts one group from the other (e.g. the pronouns of a
    sentence from its profession, or the profession from its pronouns).  Other positions keep
    the random masking of :func:`mask_tokens`; sequences not picked are unchanged.

    Why: with BERT's random 15 %, a masked pronoun is nearly always predictable from the *other*
    gendered words of the same sentence ("he ... his ..."), so a word's association with a gender
    is learned only from the rare steps where all of them are hidden together.  Masking a whole
    word group is the salient-span / entity-level masking of Sun et al. (2019, "ERNIE: Enhanced
    Representation through Knowledge Integration") and Guu et al. (2020, "REALM", section 3.4),
    restricted to word lists.  Draws come from ``generator`` (two uniform numbers per sequence),
    after those of :func:`mask_tokens`, so a step's masking depends only on its seed.
    """
    n = input_ids.shape[0]
    u_pick = torch.rand(n, generator=generator)
    u_group = torch.rand(n, generator=generator)
    present = torch.stack([torch.isin(input_ids, g) for g in groups])  # (groups, n, len)
    has = present.any(dim=2).T  # (n, groups)
    n_present = has.sum(dim=1)
    picked = (n_present >= 2) & (u_pick < probability)
    if not picked.any():
        return corrupted, labels
    # the k-th present group (k uniform in 0 .. n_present - 1) of each sequence
    k = torch.minimum((u_group * n_present).long(), (n_present - 1).clamp(min=0))
    rank = has.long().cumsum(dim=1) - 1  # rank of each present group among the present ones
    chosen = has & (rank == k[:, None]) & picked[:, None]  # (n, groups)
    hide = (present & chosen.T[:, :, None]).any(dim=0)
    show = (present & (has & picked[:, None] & ~chosen).T[:, :, None]).any(dim=0)
    corrupted = torch.where(show, input_ids, corrupted)
    labels = torch.where(show, torch.full_like(labels, -100), labels)
    corrupted = torch.where(hide, torch.full_like(corrupted, mask_id), corrupted)
    labels = torch.where(hide, input_ids, labels)
    return corrupted, labels


def mlm_loss(
    model, input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor
) -> torch.Tensor:
    """Masked-LM cross-entropy, the output layer applied to the target positions only.

    Equal (up to float rounding) to ``model(input_ids, attention_mask, labels=labels).loss``, but the
    vocabulary logits are computed for the ~15 % of positions with a label instead of all of them
    (about 10x faster training for a small model with an 8k vocabulary on a CPU).  For the
    classes whose forward is ``head(base_model(...)[0])`` (BERT, RoBERTa, ALBERT, ...;
    :func:`biaskit.lm.masked.mlm_head`); any other masked LM goes through its own forward and loss.
    """
    from biaskit.lm.masked import mlm_head

    head = mlm_head(model)
    if head is None:
        return model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
    hidden = model.base_model(input_ids=input_ids, attention_mask=attention_mask)[0]
    sel = labels != -100
    return torch.nn.functional.cross_entropy(head(hidden[sel]), labels[sel])


def build_clm_batch(
    seqs: Sequence[Sequence[int]], pad_id: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Pad token-id sequences into one causal-LM batch: ``(input_ids, attention_mask, labels)``.

    Right ("post") padding with ``pad_id`` to the longest sequence; the attention mask is 1 on the
    tokens, 0 on the padding; ``labels`` are the input ids with the padding set to ``-100``.  The
    labels are *not* shifted: position ``t`` of the logits predicts ``labels[t + 1]``
    (:func:`clm_loss`, as ``GPT2LMHeadModel`` does internally).
    """
    lengths = [len(x) for x in seqs]
    if not seqs or min(lengths) == 0:
        raise ValueError("build_clm_batch needs at least one non-empty sequence")
    width = max(lengths)
    ids = torch.full((len(seqs), width), int(pad_id), dtype=torch.long)
    for i, x in enumerate(seqs):
        ids[i, : len(x)] = torch.as_tensor(list(x), dtype=torch.long)
    attention = (torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]).long()
    labels = ids.masked_fill(attention == 0, -100)
    return ids, attention, labels


class _LinearCrossEntropy(torch.autograd.Function):
    """Forward and gradients of :func:`linear_cross_entropy`, row chunk by row chunk."""

    @staticmethod
    def forward(ctx, hidden, weight, targets, chunk_size, compute_dtype):
        n = hidden.shape[0]
        need = hidden.requires_grad or weight.requires_grad
        with torch.autocast(hidden.device.type, enabled=False):
            w = weight.to(compute_dtype)
            grad_h = torch.empty_like(hidden) if need else None
            grad_w = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device) if need else None
            total = torch.zeros((), dtype=torch.float32, device=hidden.device)
            for i in range(0, n, chunk_size):
                h = hidden[i : i + chunk_size].to(compute_dtype)
                t = targets[i : i + chunk_size]
                z = (h @ w.T).float()  # logits of the chunk, float32
                lse = torch.logsumexp(z, dim=1)
                total += (lse - z.gather(1, t[:, None])[:, 0]).sum()
                if not need:
                    continue
                z.sub_(lse[:, None]).exp_()  # softmax, in place
                z[torch.arange(z.shape[0], device=z.device), t] -= 1.0  # minus the one-hot target
                z.div_(n)  # d(mean loss) / d(logits)
                g = z.to(compute_dtype)
                grad_h[i : i + chunk_size] = (g @ w).float()
                grad_w += (g.T @ h).float()
        ctx.save_for_backward(grad_h, grad_w)
        return total / n

    @staticmethod
    def backward(ctx, grad_out):
        grad_h, grad_w = ctx.saved_tensors
        return grad_h * grad_out, grad_w * grad_out, None, None, None


def linear_cross_entropy(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    targets: torch.Tensor,
    *,
    compute_dtype: torch.dtype = torch.float32,
    chunk_size: int = 128,
) -> torch.Tensor:
    r"""Mean cross-entropy of a linear output layer, without the full ``(N, V)`` logits in memory.

    .. math:: \mathcal{L} = \frac{1}{N} \sum_{i=1}^{N} \Big(\log \sum_{v=1}^{V} e^{z_{iv}} - z_{i,t_i}\Big),
              \qquad z = H W^\top,

    for ``hidden`` :math:`H` (``N x d``), output ``weight`` :math:`W` (``V x d``, no bias) and ``targets``
    :math:`t` (``N`` class ids, no ignored ones).  Equal to
    ``torch.nn.functional.cross_entropy(hidden @ weight.T, targets)`` up to float rounding, with the same
    gradients for ``hidden`` and ``weight``; they are computed in the forward pass, ``chunk_size`` rows at a
    time (:math:`\partial \mathcal{L} / \partial z = (\mathrm{softmax}(z) - \mathrm{onehot}(t)) / N`), so only
    a ``chunk_size x V`` block of logits exists at once and stays in the CPU's cache: the fused linear
    cross-entropy of the Liger kernels (Hsu et al. 2024, "Liger Kernel: Efficient Triton Kernels for LLM
    Training") and of Wijmans et al. (2025, "Cut Your Losses in Large-Vocabulary Language Models", ICLR).
    The matrix products run in ``compute_dtype`` (bfloat16: mixed precision) with the logits, softmax and
    loss in float32.  For a causal LM the output layer over the vocabulary is most of a training step: with
    an 8,000-word vocabulary, batches of 32 sentences and bfloat16, the layer and its loss took 22 ms
    instead of 60 ms under ``torch.autocast`` (85 ms in float32) on this project's 2-core CPU.
    """
    if hidden.ndim != 2 or weight.ndim != 2 or hidden.shape[1] != weight.shape[1]:
        raise ValueError(
            f"hidden (N, d) and weight (V, d) do not fit: {tuple(hidden.shape)}, {tuple(weight.shape)}"
        )
    if targets.shape != hidden.shape[:1]:
        raise ValueError(
            f"targets must have one id per row of hidden ({hidden.shape[0]}), not {tuple(targets.shape)}"
        )
    if chunk_size < 1:
        raise ValueError("chunk_size must be >= 1")
    return _LinearCrossEntropy.apply(hidden, weight, targets, chunk_size, compute_dtype)


def clm_loss(
    model,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    labels: torch.Tensor,
    *,
    precision: str = "float32",
) -> torch.Tensor:
    r"""Causal-LM cross-entropy, the output layer applied to the predicted positions only.

    .. math:: \mathcal{L} = -\frac{1}{\sum_i (n_i - 1)} \sum_i \sum_{t=1}^{n_i - 1}
              \log P_\theta(x_{i,t} \mid x_{i,<t}),

    over the sequences :math:`x_i = (x_{i,0}, \dots, x_{i,n_i-1})` = ``[CLS] w1..wn [SEP]`` of the
    batch: every token but the first (the BOS) is predicted from its prefix.  ``labels`` are the
    unshifted input ids with ``-100`` on the padding (:func:`build_clm_batch`).  Equal (up to float
    rounding) to ``model(input_ids, attention_mask, labels=labels).loss`` of a Hugging Face causal
    LM, but the vocabulary logits are computed only where a label exists (no padding), which is
    cheaper.  For models with ``base_model`` + ``get_output_embeddings()`` (GPT-2 and the like);
    others go through their own forward and loss.  ``precision="bfloat16"`` (the training loop's mixed
    precision; call it under ``torch.autocast``) computes the output layer and the loss with
    :func:`linear_cross_entropy` in bfloat16 when the output layer has no bias, as GPT-2's has not.
    """
    head = model.get_output_embeddings()
    base = getattr(model, "base_model", None)
    if head is None or base is None or base is model:
        return model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
    hidden = base(input_ids=input_ids, attention_mask=attention_mask)[0]
    target = labels[:, 1:]
    sel = target != -100
    if precision == "bfloat16" and getattr(head, "bias", None) is None:
        return linear_cross_entropy(
            hidden[:, :-1][sel].float(), head.weight, target[sel], compute_dtype=torch.bfloat16
        )
    return torch.nn.functional.cross_entropy(head(hidden[:, :-1][sel]), target[sel])


# =============================================================================================
# the permutation language model (XLNet)
# =============================================================================================
#: XLNet's partial prediction (Yang et al. 2019, section 2.3): 1/K of the tokens are predicted, K = 6 in
#: their pre-training (85 of 512 tokens, seed 004 section 3.3.3)
PLM_PREDICT_FRACTION = 1 / 6


def pack_sequences(
    encoded: Sequence[Sequence[int]], max_length: int, cls_id: int, sep_id: int
) -> list[list[int]]:
    """Pack consecutive ``[CLS] s [SEP]`` sequences into ``[CLS] s1 [SEP] s2 [SEP] ...`` of at most
    ``max_length``.

    XLNet is pre-trained on long segments that run across sentence and document boundaries; packing the
    training sentences, in corpus order, into segments of up to ``max_length`` tokens gives a small XLNet
    contexts of several unrelated sentences, so that text in front of a sentence (the padding text of seed
    004 section 3.3.3) is something it has learnt to read past.  Greedy: a sentence that does not fit
    starts the next segment; one longer than ``max_length`` alone is kept as it is (already truncated).
    """
    out: list[list[int]] = []
    cur: list[int] = []
    for ids in encoded:
        body = list(ids[1:]) if ids and ids[0] == cls_id else list(ids)
        if cur and len(cur) + len(body) > max_length:
            out.append(cur)
            cur = []
        if not cur:
            cur = [cls_id]
        cur.extend(body)
        if body and body[-1] != sep_id:
            cur.append(sep_id)
    if len(cur) > 1:
        out.append(cur)
    return out


def build_plm_batch(
    seqs: Sequence[Sequence[int]],
    tokenizer: Any,
    generator: torch.Generator,
    *,
    predict_fraction: float = PLM_PREDICT_FRACTION,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""One permutation-LM batch (Yang et al. 2019, "XLNet", NeurIPS): ``(input_ids, attention_mask,
    perm_mask, target_mapping, labels)`` for ``XLNetLMHeadModel``.

    For each sequence a factorisation order :math:`z` is drawn (``generator``); with partial prediction only
    its last :math:`c = \max(1, \mathrm{round}(f \cdot n))` positions are predicted (``predict_fraction``
    :math:`f = 1/K`, :math:`n` the non-special tokens), each from the tokens before it in :math:`z`: all
    the non-targets (bidirectional context) and the targets ranked earlier.  The objective is

    .. math:: \max_\theta\; \mathbb{E}_{z}\Big[\sum_{t = |z| - c + 1}^{|z|}
              \log p_\theta(x_{z_t} \mid x_{z_{<t}})\Big].

    ``perm_mask[b, i, j] = 1`` when position ``i`` may not attend to ``j``: ``j`` is a target and ``i`` is
    not a target ranked after it (so no position sees a target's own token in the query stream; the
    content stream adds the token itself, as in the Hugging Face model).  ``target_mapping[b, k]`` is the
    one-hot position of the ``k``-th target in factorisation order, ``labels[b, k]`` its token id
    (``-100`` on the padding slots of sequences with fewer targets).  Special tokens and the padding
    (right, the tokenizer's pad id, attention 0) are context only, never targets.  The input ids are not
    corrupted: the permutation mask alone hides the targets, as in XLNet.
    """
    lengths = [len(x) for x in seqs]
    if not seqs or min(lengths) == 0:
        raise ValueError("build_plm_batch needs at least one non-empty sequence")
    if not 0 < predict_fraction < 1:
        raise ValueError("predict_fraction must be in (0, 1)")
    b, width = len(seqs), max(lengths)
    pad_id = tokenizer.pad_token_id
    if pad_id is None:
        raise ValueError("the tokenizer has no pad token")
    ids = torch.full((b, width), int(pad_id), dtype=torch.long)
    for i, x in enumerate(seqs):
        ids[i, : len(x)] = torch.as_tensor(list(x), dtype=torch.long)
    attention = (torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]).long()
    special = torch.isin(ids, torch.tensor(sorted(set(tokenizer.all_special_ids)), dtype=torch.long))
    special |= attention == 0
    rank = torch.full((b, width), -1, dtype=torch.long)
    targets: list[torch.Tensor] = []
    for r in range(b):
        cand = torch.nonzero(~special[r]).flatten()
        if cand.numel() == 0:
            targets.append(cand)
            continue
        c = max(1, round(predict_fraction * cand.numel()))
        order = cand[torch.randperm(cand.numel(), generator=generator)]
        tgt = order[-c:]  # the last c positions of the factorisation order, in that order
        rank[r, tgt] = torch.arange(c)
        targets.append(tgt)
    is_target = rank >= 0
    perm_mask = ((rank[:, :, None] <= rank[:, None, :]) & is_target[:, None, :]).float()
    n_pred = max(1, max(t.numel() for t in targets))
    target_mapping = torch.zeros((b, n_pred, width), dtype=torch.float)
    labels = torch.full((b, n_pred), -100, dtype=torch.long)
    for r, tgt in enumerate(targets):
        k = torch.arange(tgt.numel())
        target_mapping[r, k, tgt] = 1.0
        labels[r, : tgt.numel()] = ids[r, tgt]
    return ids, attention, perm_mask, target_mapping, labels


def plm_loss(
    model,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    perm_mask: torch.Tensor,
    target_mapping: torch.Tensor,
    labels: torch.Tensor,
) -> torch.Tensor:
    """Permutation-LM cross-entropy of an ``XLNetLMHeadModel`` over the predicted positions
    (:func:`build_plm_batch`); the output layer is applied to the real targets only (the query stream)."""
    hidden = model.transformer(
        input_ids=input_ids,
        attention_mask=attention_mask,
        perm_mask=perm_mask.to(model.dtype),
        target_mapping=target_mapping.to(model.dtype),
        use_mems=False,
    )[0]
    sel = labels != -100
    return torch.nn.functional.cross_entropy(model.lm_loss(hidden[sel]).float(), labels[sel])


# =============================================================================================
# the order of the batches and the seeds
# =============================================================================================
def epoch_batches(
    lengths: Sequence[int], batch_size: int, seed: int, epoch: int, *, length_grouped: bool = False
) -> list[np.ndarray]:
    """The batches of one training epoch, in training order, as arrays of sequence indices.

    Both ways start from the epoch's permutation ``numpy.random.default_rng([seed, epoch]).permutation(n)``
    (``n = len(lengths)``) and give ``ceil(n / batch_size)`` batches that cover every sequence once:

    * ``length_grouped=False``: the permutation cut into consecutive batches (the last may be short);
    * ``length_grouped=True`` (Hugging Face ``Trainer``'s ``group_by_length``, ``LengthGroupedSampler``):
      the permutation cut into mega-batches of :data:`LENGTH_GROUP_BATCHES` x ``batch_size`` sequences,
      each sorted by decreasing length (``lengths``; ties keep their random order) and cut into
      batches; then the order of all the epoch's batches is shuffled by the same generator.  A batch
      then holds sentences of similar length, so padding to its longest costs little, while which
      sentences meet in a batch and in which order the batches come stay random.
    """
    n = len(lengths)
    rng = np.random.default_rng([seed, epoch])
    order = rng.permutation(n)
    if not length_grouped:
        return [order[k : k + batch_size] for k in range(0, n, batch_size)]
    size = np.asarray(lengths)
    mega = LENGTH_GROUP_BATCHES * batch_size
    batches: list[np.ndarray] = []
    for m in range(0, n, mega):
        chunk = order[m : m + mega]
        chunk = chunk[np.argsort(-size[chunk], kind="stable")]
        batches.extend(chunk[k : k + batch_size] for k in range(0, chunk.size, batch_size))
    return [batches[i] for i in rng.permutation(len(batches))]


def seed_of(*parts: int) -> int:
    """A 63-bit seed from integers (e.g. ``(seed, step, 1)``): the same parts give the same seed in any
    process."""
    h = hashlib.sha256(",".join(str(int(p)) for p in parts).encode()).digest()
    return int.from_bytes(h[:8], "little") & ((1 << 63) - 1)
