"""The settings of a training run (:class:`MLMTrainingConfig`) and its record (:class:`TrainingResult`).

Shared by :func:`biaskit.training.pretrain.train_masked_lm`,
:func:`biaskit.training.pretrain.train_causal_lm`, the loop they run
(:func:`biaskit.training.loop.train_loop`) and :mod:`biaskit.training.fine_tune`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["PRECISIONS", "MLMTrainingConfig", "TrainingResult"]

#: ``MLMTrainingConfig.precision``: float32 training, or bfloat16 mixed precision (``torch.autocast``)
PRECISIONS = ("float32", "bfloat16")


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
