r"""Train small language models on any corpus: WordPiece tokenizer + BERT-layout masked LM or GPT-2-layout causal LM.

Project issue 13, step 1: models trained here on real text (and later on corpora with
planted biases of known strength), so that the workbench's metrics mean something offline.

* :func:`train_wordpiece_tokenizer` -- a BERT WordPiece tokenizer (``[PAD] [UNK] [CLS]
  [SEP] [MASK]``, ``BertNormalizer`` / ``BertPreTokenizer`` / ``WordPiece`` decoder) whose
  vocabulary is chosen deterministically by :func:`build_wordpiece_vocab`
  (the ``tokenizers`` ``WordPieceTrainer`` breaks ties between equally frequent merges with
  per-process randomly seeded hash maps, so two runs may differ; see :func:`build_wordpiece_vocab`).
* :func:`train_masked_lm` -- a ``BertForMaskedLM`` trained with a plain PyTorch loop (AdamW,
  linear warm-up + decay), deterministic given a seed, resumable from checkpoints to
  bit-identical weights, with a tqdm progress bar, on CUDA when available.  The output
  folder loads with :func:`biaskit.lm.loading.load_masked_lm`.
* :func:`train_causal_lm` -- a ``GPT2LMHeadModel`` (the GPT-2 layout of Radford et al. 2019,
  "Language Models are Unsupervised Multitask Learners") trained by the same loop (same optimiser,
  schedule, checkpoints, determinism), on the same BERT WordPiece tokens, with ``[CLS]`` as BOS and
  ``[SEP]`` as EOS; the folder loads with ``transformers.AutoModelForCausalLM`` and
  :func:`biaskit.lm.loading.load_causal_lm`.
* word2vec on the same text: call :func:`biaskit.embeddings.vectors.train_word2vec` on
  ``[biaskit.data.corpus.tokenize(s) for s in sentences]`` (seeded and reproducible with
  ``workers=1``).

Masked-LM objective (Devlin et al. 2019, section 3.1 "Task #1: Masked LM"): 15 % of the
non-special tokens of each sequence are chosen as prediction targets; of those, 80 % are
replaced by ``[MASK]``, 10 % by a random token and 10 % are left unchanged.  The loss is the
mean cross-entropy over the chosen positions,

.. math:: \mathcal{L} = -\frac{1}{|M|} \sum_{t \in M} \log P_\theta(w_t \mid \tilde W),

where :math:`M` is the set of chosen positions and :math:`\tilde W` the corrupted sequence.

Optional salient-group masking (:func:`mask_salient_groups`, ``MLMTrainingConfig.salient_groups``): in a
share of the sequences that contain words of two or more groups (e.g. gendered words and professions),
every token of one group is masked and the other groups stay visible, so that the model must predict one
group from the other.  This is the salient-span / entity masking of Sun et al. (2019, ERNIE) and Guu et al.
(2020, REALM), restricted to word lists; biaskit's planted-bias controls use it (see
:mod:`biaskit.training.recipes`).

Held-out quality is reported as the pseudo-perplexity of Salazar et al. (2020, "Masked
Language Model Scoring", ACL), built on the pseudo-log-likelihood of seed 000 section 4.1.3
(:func:`biaskit.lm.scoring.score_sentences` with ``"sz"``):

.. math:: PPPL(\mathcal{W}) = \exp\Big(-\frac{1}{N} \sum_{W \in \mathcal{W}} PLL(W)\Big),
          \qquad PLL(W) = \sum_{t=1}^{|W|} \log P_\theta(w_t \mid W_{\setminus t}),

with :math:`N` the total number of scored tokens (``[CLS]``/``[SEP]`` excluded).

Causal-LM objective (Radford et al. 2019): each sequence :math:`x = ([CLS], w_1, \dots, w_n, [SEP])`
is predicted left to right, every token after ``[CLS]`` from its prefix (:func:`clm_loss`),

.. math:: \mathcal{L} = -\frac{1}{\sum_i (|x_i| - 1)} \sum_i \sum_{t=1}^{|x_i|-1} \log P_\theta(x_{i,t} \mid x_{i,<t}).

Its held-out quality is the perplexity (:func:`causal_perplexity`): with
:math:`ids = ([BOS], w_1, \dots, w_n)` (no EOS scored, as the lm-evaluation-harness scores a string
given a prefix token),

.. math:: PPL(\mathcal{W}) = \exp\Big(-\frac{1}{N} \sum_{W \in \mathcal{W}} \sum_{t=1}^{n}
          \log P_\theta(w_t \mid [BOS], w_{<t})\Big),

:math:`N` the number of scored tokens.  PPL and PPPL are different quantities: do not compare them.

Determinism and resuming: the order of the examples in epoch ``e`` is a permutation drawn
from ``numpy.random.default_rng([seed, e])`` (cut into batches, or regrouped by length:
:func:`epoch_batches`); the masking of step ``s`` (masked objective) uses a
``torch.Generator`` seeded with ``(seed, s)``; the global torch RNG (dropout) is re-seeded
from ``(seed, s)`` before every step.  Nothing random therefore depends on how many steps
ran in this process, and a run resumed from a checkpoint (model + optimizer + scheduler +
RNG states + step) ends with the same weights, bit for bit, as an uninterrupted one on the
same device and software with the same number of CPU threads (the float rounding of the CPU's
matrix kernels depends on how the work is split: 1 and 2 threads give different weights).  On CUDA, bit-identity also needs deterministic kernels
(``torch.use_deterministic_algorithms(True)``, best with ``CUBLAS_WORKSPACE_CONFIG=:4096:8`` set
before the process starts): ``config.deterministic_cuda=True`` switches them on for the training
loop only.  Not yet checked on a GPU.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from biaskit.lm.tokenizers import (
    SPECIAL_TOKENS,
    as_text,
    bert_wordpiece_tokenizer,
    build_wordpiece_vocab,
    train_wordpiece_tokenizer,
)

__all__ = [
    "SPECIAL_TOKENS",
    "MLMTrainingConfig",
    "bert_wordpiece_tokenizer",
    "build_wordpiece_vocab",
    "TrainingResult",
    "build_clm_batch",
    "build_mlm_batch",
    "causal_perplexity",
    "clm_loss",
    "epoch_batches",
    "linear_cross_entropy",
    "mask_tokens",
    "mlm_loss",
    "pseudo_perplexity",
    "train_causal_lm",
    "train_masked_lm",
    "train_wordpiece_tokenizer",
]

logger = logging.getLogger(__name__)

#: ``MLMTrainingConfig.precision``: float32 training, or bfloat16 mixed precision (``torch.autocast``)
PRECISIONS = ("float32", "bfloat16")
#: batches per length-sorted mega-batch of :func:`epoch_batches` (Hugging Face's ``LengthGroupedSampler``: 50)
LENGTH_GROUP_BATCHES = 50
CHECKPOINT_DIR = "checkpoint"
CHECKPOINT_FILE = "state.pt"
TRAINING_JSON = "training.json"


# =============================================================================================
# configuration and result
# =============================================================================================
@dataclass
class MLMTrainingConfig:
    """Settings of :func:`train_masked_lm` and :func:`train_causal_lm` (defaults: a small model for a CPU).

    For a causal LM, the architecture fields map to GPT-2's (``n_layer``, ``n_embd``, ``n_head``,
    ``n_inner``, ``n_positions = max_length``) and the masking fields (``mask_probability``,
    ``mask_replace``, ``mask_random``) and ``bartl_pad_quirk`` are not used.

    ``max_steps`` (if set) overrides ``epochs``.  ``mask_probability`` / ``mask_replace`` /
    ``mask_random`` are BERT's 15 % and 80/10/10 (Devlin et al. 2019).  ``max_length``
    counts ``[CLS]``/``[SEP]``; longer sentences are truncated.  ``checkpoint_every=0``
    writes a checkpoint only at the end.  ``device="auto"``: CUDA when available, else CPU.
    The optimiser is ``torch.optim.AdamW(lr=learning_rate, eps=adam_epsilon)`` with
    ``weight_decay`` on all but biases and LayerNorm weights, under a linear schedule
    (``warmup_steps`` of linear warm-up, then linear decay to 0 at the last step); gradients
    are clipped to norm ``max_grad_norm`` (0: no clipping).  ``bartl_pad_quirk`` (default off)
    builds the batches as Bartl et al.'s fine-tuning code does, [MASK] padding attended and
    drawn as targets: see :func:`build_mlm_batch`; :mod:`biaskit.training.fine_tune` explains it.
    ``salient_groups`` (word lists, lower case) and ``salient_probability`` (default 0: off) turn on
    salient-group masking after BERT's masking (:func:`mask_salient_groups`); words that are not
    one token of the tokenizer are left to the random masking, with a WARNING that counts them.

    Speed (off by default; the recipes of :mod:`biaskit.training.recipes` use bfloat16, see its ``SPEED``):

    * ``precision="bfloat16"``: mixed precision, the forward pass and the loss under ``torch.autocast`` in
      bfloat16 while the weights, gradients and optimiser state stay float32 (Micikevicius et al. 2018,
      "Mixed Precision Training", ICLR; bfloat16: Kalamkar et al. 2019, "A Study of BFLOAT16 for Deep
      Learning Training").  On a CPU the model trains with its eager attention (the CPU's bfloat16
      scaled-dot-product kernel trained worse); a causal LM's output layer and loss run in
      :func:`linear_cross_entropy`.  It pays where matrix products dominate, on a CPU with AVX512-BF16 or
      AMX (AMD Zen 4, Intel Cooper Lake / Sapphire Rapids and later) and on recent GPUs; elsewhere it can
      be slower than float32.  ``float32_steps``: the first steps of such a run in float32 (a small BERT
      trained from scratch in bfloat16 left the unigram plateau worse).
    * ``length_grouped=True``: each epoch's batches hold sentences of similar length (:func:`epoch_batches`,
      the ``group_by_length`` of Hugging Face's ``Trainer``), so a batch carries little padding (on BUG text
      with ``max_length=64`` a random batch of 32 is 61 % tokens, a grouped one 99 %).  Each step then sees
      sentences of one length only: harmless when continuing a trained model, but it hindered a small
      BERT's escape from the unigram plateau when training from scratch.
    """

    hidden_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 2
    intermediate_size: int = 512
    max_length: int = 64
    vocab_size: int = 8000  # tokenizer vocabulary when train_masked_lm builds the tokenizer
    batch_size: int = 32
    learning_rate: float = 5e-4
    weight_decay: float = 0.01
    warmup_steps: int = 100
    epochs: int = 1
    max_steps: int | None = None
    max_grad_norm: float = 1.0
    mask_probability: float = 0.15
    mask_replace: float = 0.8
    mask_random: float = 0.1
    dropout: float = 0.1
    initializer_range: float = 0.02
    seed: int = 0
    checkpoint_every: int = 500
    device: str = "auto"
    deterministic_cuda: bool = False
    adam_epsilon: float = 1e-8  # torch's AdamW default
    bartl_pad_quirk: bool = False
    salient_groups: tuple[tuple[str, ...], ...] = ()
    salient_probability: float = 0.0
    length_grouped: bool = False
    precision: str = "float32"
    float32_steps: int = 0

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if not self.learning_rate > 0:
            raise ValueError("learning_rate must be > 0")
        if not self.adam_epsilon > 0:
            raise ValueError("adam_epsilon must be > 0")
        if self.epochs < 1:
            raise ValueError("epochs must be >= 1")
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError("max_steps must be >= 1 (or None)")
        if self.warmup_steps < 0 or self.max_grad_norm < 0 or self.weight_decay < 0:
            raise ValueError("warmup_steps, max_grad_norm and weight_decay must be >= 0")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError("hidden_size must be a multiple of num_attention_heads")
        if not 0 < self.mask_probability < 1:
            raise ValueError("mask_probability must be in (0, 1)")
        if self.mask_replace + self.mask_random > 1:
            raise ValueError("mask_replace + mask_random must be <= 1")
        if self.max_length < 3:
            raise ValueError("max_length must be >= 3")
        if self.float32_steps < 0:
            raise ValueError("float32_steps must be >= 0")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {self.precision!r}")
        if not 0 <= self.salient_probability <= 1:
            raise ValueError("salient_probability must be in [0, 1]")
        if self.salient_probability > 0:
            if len(self.salient_groups) < 2 or any(not g for g in self.salient_groups):
                raise ValueError("salient_probability > 0 needs at least two non-empty salient_groups")
            seen: dict[str, int] = {}
            for j, group in enumerate(self.salient_groups):
                for w in group:
                    if seen.setdefault(w, j) != j:
                        raise ValueError(f"salient word {w!r} is in groups {seen[w]} and {j}")


@dataclass
class TrainingResult:
    """What :func:`train_masked_lm` / :func:`train_causal_lm` did; also written as ``training.json``.

    ``objective`` is ``"masked"`` or ``"causal"``.  Held-out quality: ``held_out_pppl``
    (pseudo-perplexity, masked LMs) or ``held_out_ppl`` (perplexity, causal LMs), the other one
    ``None``; ``held_out_tokens`` counts the scored tokens of whichever was measured.
    """

    out_dir: Path
    steps: int
    total_steps: int
    completed: bool
    resumed_from_step: int
    train_seconds: float
    tokens_seen: int
    tokens_per_second: float
    final_loss: float | None
    held_out_pppl: float | None = None
    held_out_tokens: int | None = None
    losses: list[float] = field(default_factory=list, repr=False)
    objective: str = "masked"
    #: held-out perplexity of a causal LM (:func:`causal_perplexity`); ``None`` for a masked LM,
    #: whose held-out quality is the pseudo-perplexity ``held_out_pppl``
    held_out_ppl: float | None = None
    device: str = "cpu"
    n_parameters: int = 0
    config: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["out_dir"] = str(self.out_dir)
        return d


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
                "salient masking: %d of %d word(s) of group %d are not one token (or are unknown) and are left "
                "to the random masking: %s%s", len(split), len(group), j, ", ".join(split[:10]), " ..." if len(split) > 10 else "",
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


def _seed_of(*parts: int) -> int:
    h = hashlib.sha256(",".join(str(int(p)) for p in parts).encode()).digest()
    return int.from_bytes(h[:8], "little") & ((1 << 63) - 1)


# =============================================================================================
# pseudo-perplexity
# =============================================================================================
def pseudo_perplexity(lm, sentences: Sequence[str], *, batch_size: int = 64) -> tuple[float, int]:
    """Corpus pseudo-perplexity (Salazar et al. 2020): ``exp(-sum PLL / N)``; returns ``(PPPL, N)``.

    PLLs come from :func:`biaskit.lm.scoring.score_sentences` (``"sz"``, seed 000 section 4.1.3), without
    disk cache; sentences it skips (e.g. with ``[UNK]``) are left out of both sums.
    """
    from biaskit.lm.scoring import score_sentences

    res = score_sentences(
        lm, list(sentences), "sz", batch_size=batch_size, cache=False, progress=False, errors="report"
    )
    n = int(res.scores["n_tokens"].sum())
    if n == 0:
        raise ValueError("no held-out token could be scored")
    return float(math.exp(-float(res.scores["score"].sum()) / n)), n


def causal_perplexity(
    model, tokenizer, sentences: Sequence[str], *, batch_size: int = 64
) -> tuple[float, int]:
    r"""Corpus perplexity of a causal LM: ``exp(-sum LL / N)``; returns ``(PPL, N)``.

    Each sentence is scored as ``ids = [BOS] + tokenizer(sentence, add_special_tokens=False)``
    (lower-casing etc. by the tokenizer), its log-likelihood being

    .. math:: LL(W) = \sum_{t=1}^{|ids|-1} \log P_\theta(ids_t \mid ids_{<t}),
              \qquad PPL(\mathcal W) = \exp\Big(-\frac{1}{N}\sum_{W \in \mathcal W} LL(W)\Big),

    with :math:`N` the number of scored tokens (the BOS is conditioned on, not scored; no EOS is
    scored: the convention of the lm-evaluation-harness ``loglikelihood`` of a string given a
    prefix token).  The BOS is ``tokenizer.bos_token_id`` (else ``cls_token_id``: ``[CLS]`` is the
    BOS of the models :func:`train_causal_lm` trains).  Batched with right padding and an attention
    mask; sentences with no token, and those longer than the model's ``n_positions`` (BOS
    included), are skipped with a WARNING that counts them.  The model runs without dropout (its
    train/eval mode is restored afterwards); the soft-max is taken in float32 (float64 for a float64
    model), the sums in float64.
    ``ValueError`` when nothing could be scored.
    """
    bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.cls_token_id
    if bos is None:
        raise ValueError("the tokenizer has neither a BOS nor a [CLS] token")
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else bos
    limit = getattr(model.config, "n_positions", None) or getattr(
        model.config, "max_position_embeddings", None
    )
    texts = as_text(sentences)
    encoded = (
        tokenizer(texts, add_special_tokens=False, truncation=False, verbose=False)["input_ids"]
        if texts
        else []
    )
    seqs = [[int(bos), *ids] for ids in encoded]
    empty = sum(len(x) < 2 for x in seqs)
    too_long = sum(len(x) >= 2 and limit is not None and len(x) > limit for x in seqs)
    if empty:
        logger.warning(
            "causal_perplexity: %d of %d sentence(s) have no token and are skipped", empty, len(seqs)
        )
    if too_long:
        logger.warning(
            "causal_perplexity: %d of %d sentence(s) are longer than n_positions=%d tokens (BOS included) "
            "and are skipped",
            too_long,
            len(seqs),
            limit,
        )
    seqs = [x for x in seqs if len(x) >= 2 and (limit is None or len(x) <= limit)]
    if not seqs:
        raise ValueError("no held-out sentence could be scored")
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    total = 0.0
    n = 0
    try:
        with torch.no_grad():
            for b in range(0, len(seqs), batch_size):
                ids, attn, labels = build_clm_batch(seqs[b : b + batch_size], pad)
                logits = model(input_ids=ids.to(device), attention_mask=attn.to(device)).logits
                if logits.dtype not in (torch.float32, torch.float64):  # half precision: soft-max in float32
                    logits = logits.float()
                logp = torch.log_softmax(logits[:, :-1], dim=-1)
                target = labels[:, 1:].to(device)
                sel = target != -100
                ll = logp.gather(-1, target.clamp(min=0).unsqueeze(-1)).squeeze(-1)
                total += float(ll[sel].double().sum())
                n += int(sel.sum())
    finally:
        model.train(was_training)
    return float(math.exp(-total / n)), n


# =============================================================================================
# training
# =============================================================================================
def data_hash(encoded: list[list[int]]) -> str:
    h = hashlib.sha256()
    for ids in encoded:
        h.update(np.asarray(ids, dtype=np.int64).tobytes())
        h.update(b"|")
    return h.hexdigest()[:16]


def _atomic_torch_save(obj: Any, path: Path) -> None:
    tmp = path.with_suffix(".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def _build_model(config: MLMTrainingConfig, tokenizer):
    from transformers import BertConfig, BertForMaskedLM

    bert_config = BertConfig(
        vocab_size=len(tokenizer.get_vocab()),
        hidden_size=config.hidden_size,
        num_hidden_layers=config.num_hidden_layers,
        num_attention_heads=config.num_attention_heads,
        intermediate_size=config.intermediate_size,
        max_position_embeddings=config.max_length,
        hidden_dropout_prob=config.dropout,
        attention_probs_dropout_prob=config.dropout,
        initializer_range=config.initializer_range,
        pad_token_id=tokenizer.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(_seed_of(config.seed, -1))
        model = BertForMaskedLM(bert_config)
    return model


def _build_causal_model(config: MLMTrainingConfig, tokenizer):
    """A fresh ``GPT2LMHeadModel`` (Radford et al. 2019 layout) of ``config``'s size, seeded by ``config.seed``."""
    from transformers import GPT2Config, GPT2LMHeadModel

    gpt2_config = GPT2Config(
        vocab_size=len(tokenizer.get_vocab()),
        n_positions=config.max_length,
        n_embd=config.hidden_size,
        n_layer=config.num_hidden_layers,
        n_head=config.num_attention_heads,
        n_inner=config.intermediate_size,
        resid_pdrop=config.dropout,
        embd_pdrop=config.dropout,
        attn_pdrop=config.dropout,
        initializer_range=config.initializer_range,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(_seed_of(config.seed, -1))
        model = GPT2LMHeadModel(gpt2_config)
    return model


def _as_causal_tokenizer(tokenizer):
    """``tokenizer`` with ``[CLS]`` as its BOS and ``[SEP]`` as its EOS (set in place; saved with it)."""
    if tokenizer.cls_token is None or tokenizer.sep_token is None:
        raise ValueError("train_causal_lm needs a BERT-style tokenizer with [CLS] and [SEP] tokens")
    tokenizer.bos_token = tokenizer.cls_token
    tokenizer.eos_token = tokenizer.sep_token
    return tokenizer


def encode_for_training(
    sentences: Sequence[Any], tokenizer: Any, max_length: int, *, who: str = "train_masked_lm"
) -> list[list[int]]:
    """Token ids of the training sentences, as :func:`train_masked_lm` and ``fine_tune`` use them.

    Empty sentences are dropped and over-long ones truncated to ``max_length`` tokens (the
    tokenizer's own truncation, ``[SEP]`` kept), each with a WARNING that counts them (prefixed
    by ``who``); sequences with no token between ``[CLS]`` and ``[SEP]`` are left out.
    ``ValueError`` when nothing is left.
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
    encoded = [ids for ids in full if len(ids) > 2]
    if not encoded:
        raise ValueError("no training sentence left after tokenising")
    return encoded


def load_checkpoint(
    ckpt_file: Path, record: dict[str, Any], defaults: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """The checkpoint's state, or ``None`` when there is none; ``ValueError`` if its config differs.

    Keys of ``defaults`` missing from the stored config (fields added since it was written)
    count as their default values.
    """
    if not ckpt_file.exists():
        return None
    state = torch.load(ckpt_file, map_location="cpu", weights_only=False)
    saved = {**{k: v for k, v in (defaults or {}).items() if k not in state["config"]}, **state["config"]}
    if saved != record:
        raise ValueError(
            f"checkpoint {ckpt_file} was written with another configuration; "
            "use the same config or resume=False"
        )
    return state


def _prepare_run(
    sentences: Sequence[Any],
    out_dir: str | Path,
    config: MLMTrainingConfig,
    tokenizer: Any,
    init_model: str | Path | None,
    resume: bool,
    *,
    objective: str,
) -> tuple[Path, dict[str, Any], dict[str, Any] | None, Any, list[list[int]], str]:
    """What :func:`train_masked_lm` and :func:`train_causal_lm` share before building the model.

    Returns ``(out, record, state, tokenizer, encoded, data_key)``: the output folder (created), the
    configuration recorded in checkpoints (a causal run's includes ``"objective": "causal"``, so a masked
    checkpoint is never resumed as causal; a masked run's keeps its earlier layout), the checkpoint to
    resume (``None`` without one or with ``resume=False``), the tokenizer (given, else the checkpoint's,
    else ``init_model``'s, else a new WordPiece one; a causal run's gets ``[CLS]``/``[SEP]`` as BOS/EOS),
    the encoded sentences and the data key checkpoints are matched on.
    """
    from transformers import AutoTokenizer

    causal = objective == "causal"
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ckpt_dir = out / CHECKPOINT_DIR
    record = {**asdict(config), "objective": "causal"} if causal else asdict(config)
    defaults = (
        {**asdict(MLMTrainingConfig()), "objective": "masked"} if causal else asdict(MLMTrainingConfig())
    )
    state = load_checkpoint(ckpt_dir / CHECKPOINT_FILE, record, defaults) if resume else None
    if state is not None and tokenizer is None:
        tokenizer = AutoTokenizer.from_pretrained(str(ckpt_dir))
    if tokenizer is None and init_model is not None:
        tokenizer = AutoTokenizer.from_pretrained(str(init_model))
    if tokenizer is None:
        tokenizer = train_wordpiece_tokenizer(
            sentences, config.vocab_size, model_max_length=config.max_length
        )
    if causal:
        tokenizer = _as_causal_tokenizer(tokenizer)
    tokenizer.model_max_length = config.max_length
    encoded = encode_for_training(
        sentences, tokenizer, config.max_length, who="train_causal_lm" if causal else "train_masked_lm"
    )
    data_key = (
        ("causal|" if causal else "")
        + data_hash(encoded)
        + (f"|init={Path(init_model).resolve()}" if init_model is not None else "")
    )
    return out, record, state, tokenizer, encoded, data_key


def train_masked_lm(
    sentences: Sequence[Any],
    out_dir: str | Path,
    config: MLMTrainingConfig | None = None,
    *,
    tokenizer=None,
    held_out: Sequence[str] | None = None,
    resume: bool = True,
    progress: bool = True,
    callback: Callable[[int, float], None] | None = None,
    init_model: str | Path | None = None,
) -> TrainingResult:
    """Train a BERT-layout masked LM on ``sentences``; save it to ``out_dir``.

    Parameters
    ----------
    sentences:
        Training text: strings, or tokenised sentences (joined with spaces).  Empty ones are
        dropped; sequences are truncated to ``config.max_length`` tokens.
    out_dir:
        Receives the model (``save_pretrained``, safetensors), the tokenizer and
        ``training.json``; checkpoints go to ``out_dir/checkpoint/state.pt``.  The folder loads
        with ``biaskit.lm.loading.load_masked_lm(out_dir)``.
    config:
        :class:`MLMTrainingConfig` (default: its defaults).
    tokenizer:
        A tokenizer to use; ``None`` -> :func:`train_wordpiece_tokenizer` on ``sentences``
        with ``config.vocab_size`` (or, when resuming, the tokenizer saved in the checkpoint).
    held_out:
        Sentences whose pseudo-perplexity (:func:`pseudo_perplexity`) is measured at the end.
    resume:
        Continue from ``out_dir/checkpoint`` when it exists (its config and data must match,
        else ``ValueError``); ``False`` starts afresh, overwriting the checkpoint.  A run found
        complete writes nothing (the saved weights keep their file times, so caches keyed on
        them stay valid).
    progress:
        tqdm progress bar (loss and tokens/s in its postfix).
    callback:
        Called as ``callback(step, loss)`` after every step (and after a checkpoint is
        written at that step); an exception it raises stops training as a crash would.
    init_model:
        A masked-LM folder to start from (continued pre-training / fine-tuning) instead of
        random weights; its tokenizer is used unless ``tokenizer`` is given, and the
        architecture fields of ``config`` are ignored (the folder's config rules).
        :func:`biaskit.training.fine_tune.fine_tune` is the entry point for fine-tuning any masked LM
        with Bartl et al.'s (2020) settings.

    Returns a :class:`TrainingResult`, also stored as ``out_dir/training.json`` with the
    training time, steps, tokens/s, final training loss (mean of the last
    ``min(10, steps)`` step losses) and held-out PPPL.
    """
    config = config or MLMTrainingConfig()
    run = _prepare_run(sentences, out_dir, config, tokenizer, init_model, resume, objective="masked")
    out, record, state, tokenizer, encoded, data_key = run
    if init_model is not None:
        from transformers import BertForMaskedLM

        model = BertForMaskedLM.from_pretrained(str(init_model), dtype=torch.float32)
    else:
        model = _build_model(config, tokenizer)
    return train_loop(
        model,
        tokenizer,
        encoded,
        out,
        config,
        data_key=data_key,
        record=record,
        state=state,
        held_out=held_out,
        progress=progress,
        callback=callback,
        desc="masked LM",
    )


def train_causal_lm(
    sentences: Sequence[Any],
    out_dir: str | Path,
    config: MLMTrainingConfig | None = None,
    *,
    tokenizer=None,
    held_out: Sequence[str] | None = None,
    resume: bool = True,
    progress: bool = True,
    callback: Callable[[int, float], None] | None = None,
    init_model: str | Path | None = None,
) -> TrainingResult:
    r"""Train a GPT-2-layout causal LM (Radford et al. 2019) on ``sentences``; save it to ``out_dir``.

    The same loop as :func:`train_masked_lm` (optimiser, schedule, clipping, checkpoints, bit-identical
    resuming, determinism, progress bar: see the module docstring), with the causal objective
    (:func:`clm_loss`): each training sequence is ``[CLS] w1..wn [SEP]`` (the BERT WordPiece
    tokenizer's ``add_special_tokens=True`` output, ``[CLS]`` playing BOS and ``[SEP]`` EOS), and
    every token after ``[CLS]`` (``w1..wn`` and ``[SEP]``) is predicted from its prefix.

    The model is a ``transformers.GPT2LMHeadModel`` with ``n_layer=num_hidden_layers``,
    ``n_embd=hidden_size``, ``n_head=num_attention_heads``, ``n_inner=intermediate_size``,
    ``n_positions=max_length``, dropout ``config.dropout`` (residual, embedding and attention) and
    tied input/output embeddings.  ``config`` is a :class:`MLMTrainingConfig`: its ``mask_*`` and
    ``bartl_pad_quirk`` fields are not used by the causal objective.

    ``sentences``, ``out_dir``, ``config``, ``tokenizer``, ``resume``, ``progress``, ``callback`` as in
    :func:`train_masked_lm`; ``init_model`` is a causal-LM folder to continue from (its tokenizer is
    used unless ``tokenizer`` is given; the architecture fields of ``config`` are then ignored).  The
    tokenizer is saved with ``bos_token="[CLS]"`` and ``eos_token="[SEP]"``, so the folder loads with
    ``transformers.AutoModelForCausalLM`` + ``AutoTokenizer`` and ``bos_token_id`` is the ``[CLS]``
    id.  ``held_out``: sentences whose perplexity (:func:`causal_perplexity`) is measured at the
    end, stored as ``held_out_ppl`` (``held_out_pppl`` stays ``None``).  A checkpoint of a masked
    run is never resumed as a causal one (the recorded configuration includes the objective).
    """
    config = config or MLMTrainingConfig()
    run = _prepare_run(sentences, out_dir, config, tokenizer, init_model, resume, objective="causal")
    out, record, state, tokenizer, encoded, data_key = run
    if init_model is not None:
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(str(init_model), dtype=torch.float32)
    else:
        model = _build_causal_model(config, tokenizer)
    return train_loop(
        model,
        tokenizer,
        encoded,
        out,
        config,
        data_key=data_key,
        record=record,
        state=state,
        held_out=held_out,
        progress=progress,
        callback=callback,
        desc="causal LM",
        objective="causal",
    )


def has_saved_model(folder: Path) -> bool:
    """Whether ``folder`` holds saved weights (``config.json`` and a ``*.safetensors`` file)."""
    return (folder / "config.json").exists() and any(folder.glob("*.safetensors"))


def training_steps(config: MLMTrainingConfig, n_sequences: int) -> int:
    """Optimiser steps of a run on ``n_sequences`` sequences: ``max_steps`` when set, else
    ``epochs * ceil(n_sequences / batch_size)`` (the last batch of an epoch may be short)."""
    if config.max_steps is not None:
        return config.max_steps
    return config.epochs * math.ceil(n_sequences / config.batch_size)


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

    ``objective``: ``"masked"`` (BERT masking, :func:`mlm_loss`, held-out PPPL) or ``"causal"``
    (:func:`build_clm_batch` + :func:`clm_loss`, held-out perplexity by :func:`causal_perplexity`;
    the masking and padding-quirk settings of ``config`` are not read).

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
    if objective not in ("masked", "causal"):
        raise ValueError(f"objective must be 'masked' or 'causal', not {objective!r}")
    causal = objective == "causal"
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
        if not causal and config.salient_probability > 0
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
                    seed_dropout(_seed_of(config.seed, step, 2))
                    with autocast(step):
                        loss = clm_loss(
                            model,
                            inputs.to(device),
                            attn.to(device),
                            labels.to(device),
                            precision="bfloat16" if mixed(step) else "float32",
                        )
                else:
                    ids, attn, special = build_mlm_batch(
                        batch_for(step), tokenizer, bartl_pad_quirk=config.bartl_pad_quirk, pad_to=pad_to
                    )
                    gen = torch.Generator().manual_seed(_seed_of(config.seed, step, 1))
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
                    seed_dropout(_seed_of(config.seed, step, 2))
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
