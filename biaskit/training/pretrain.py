r"""Train small language models on any corpus: WordPiece tokenizer + BERT-layout masked LM or GPT-2-layout
causal LM.

Models trained here on real text (and on corpora with
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

.. math:: \mathcal{L} = -\frac{1}{\sum_i (|x_i| - 1)} \sum_i \sum_{t=1}^{|x_i|-1}
          \log P_\theta(x_{i,t} \mid x_{i,<t}).

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
matrix kernels depends on how the work is split: 1 and 2 threads give different weights).  On CUDA,
bit-identity also needs deterministic kernels (``torch.use_deterministic_algorithms(True)``, best with
``CUBLAS_WORKSPACE_CONFIG=:4096:8`` set before the process starts): ``config.deterministic_cuda=True``
switches them on for the training loop only.  Not yet checked on a GPU.

Where the parts live (this module trains the two kinds of model and re-exports the rest):

====================================  ======================================================================
:mod:`biaskit.training.config`        :class:`MLMTrainingConfig` (the settings), :class:`TrainingResult`
:mod:`biaskit.training.objectives`    batches, masking (BERT's and salient groups), losses, epoch order
:mod:`biaskit.training.loop`          :func:`train_loop` and its checkpoints, shared with ``fine_tune``
:mod:`biaskit.training.evaluation`    :func:`pseudo_perplexity`, :func:`causal_perplexity`
:mod:`biaskit.lm.tokenizers`          the WordPiece tokenizer (:func:`train_wordpiece_tokenizer`)
====================================  ======================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from biaskit.lm.tokenizers import (
    SPECIAL_TOKENS,
    as_text,
    bert_wordpiece_tokenizer,
    build_wordpiece_vocab,
    train_wordpiece_tokenizer,
)
from biaskit.training.config import PRECISIONS, MLMTrainingConfig, TrainingResult
from biaskit.training.evaluation import causal_perplexity, pseudo_perplexity
from biaskit.training.loop import (
    CHECKPOINT_DIR,
    MAX_UNK_SHARE,
    TRAINING_JSON,
    checkpoint_tokenizer,
    data_hash,
    encode_for_training,
    has_saved_model,
    load_checkpoint,
    train_loop,
    training_key,
    training_steps,
)
from biaskit.training.objectives import (
    LENGTH_GROUP_BATCHES,
    build_clm_batch,
    build_mlm_batch,
    clm_loss,
    epoch_batches,
    linear_cross_entropy,
    mask_salient_groups,
    mask_tokens,
    mlm_loss,
    salient_group_ids,
    seed_of,
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
    "train_xlnet_lm",
    # defined in the modules above, re-exported here for their users (fine_tune, recipes, the tests)
    "CHECKPOINT_DIR",
    "LENGTH_GROUP_BATCHES",
    "PRECISIONS",
    "TRAINING_JSON",
    "as_text",
    "data_hash",
    "encode_for_training",
    "has_saved_model",
    "load_checkpoint",
    "mask_salient_groups",
    "salient_group_ids",
    "train_loop",
    "training_key",
    "training_steps",
]


# =============================================================================================
# the models and the run set-up
# =============================================================================================
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
        torch.manual_seed(seed_of(config.seed, -1))
        model = BertForMaskedLM(bert_config)
    return model


def _build_causal_model(config: MLMTrainingConfig, tokenizer):
    """A fresh ``GPT2LMHeadModel`` (Radford et al. 2019 layout) of ``config``'s size, seeded by
    ``config.seed``."""
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
        torch.manual_seed(seed_of(config.seed, -1))
        model = GPT2LMHeadModel(gpt2_config)
    return model


def _build_xlnet_model(config: MLMTrainingConfig, tokenizer):
    """A fresh ``XLNetLMHeadModel`` (Yang et al. 2019) of ``config``'s size, seeded by ``config.seed``.

    ``d_model = hidden_size``, ``n_layer``, ``n_head``, ``d_inner = intermediate_size``, GELU, dropout
    ``config.dropout``, bidirectional attention, no memory (``mem_len=None``: sentences, not a stream), tied
    input and output embeddings; relative positions, so no position table and no window.
    """
    from transformers import XLNetConfig, XLNetLMHeadModel

    xl_config = XLNetConfig(
        vocab_size=len(tokenizer.get_vocab()),
        d_model=config.hidden_size,
        n_layer=config.num_hidden_layers,
        n_head=config.num_attention_heads,
        d_inner=config.intermediate_size,
        ff_activation="gelu",
        dropout=config.dropout,
        initializer_range=config.initializer_range,
        attn_type="bi",
        mem_len=None,
        use_mems_eval=False,
        use_mems_train=False,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.cls_token_id,
        eos_token_id=tokenizer.sep_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed_of(config.seed, -1))
        model = XLNetLMHeadModel(xl_config)
    return model


def _as_causal_tokenizer(tokenizer):
    """``tokenizer`` with ``[CLS]`` as its BOS and ``[SEP]`` as its EOS (set in place; saved with it)."""
    if tokenizer.cls_token is None or tokenizer.sep_token is None:
        raise ValueError("train_causal_lm needs a BERT-style tokenizer with [CLS] and [SEP] tokens")
    tokenizer.bos_token = tokenizer.cls_token
    tokenizer.eos_token = tokenizer.sep_token
    return tokenizer


def _prepare_run(
    sentences: Sequence[Any],
    out_dir: str | Path,
    config: MLMTrainingConfig,
    tokenizer: Any,
    init_model: str | Path | None,
    resume: bool,
    *,
    objective: str,
    max_unk_share: float | None = MAX_UNK_SHARE,
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
    masked = objective == "masked"
    record = asdict(config) if masked else {**asdict(config), "objective": objective}
    defaults = (
        asdict(MLMTrainingConfig()) if masked else {**asdict(MLMTrainingConfig()), "objective": "masked"}
    )
    state = load_checkpoint(ckpt_dir, record, defaults) if resume else None
    if state is not None and tokenizer is None:
        tokenizer = checkpoint_tokenizer(state)
    if tokenizer is None and init_model is not None:
        tokenizer = AutoTokenizer.from_pretrained(str(init_model))
    if tokenizer is None:
        tokenizer = train_wordpiece_tokenizer(
            sentences, config.vocab_size, model_max_length=config.max_length
        )
    if causal:
        tokenizer = _as_causal_tokenizer(tokenizer)
    tokenizer.model_max_length = config.max_length
    who = {"causal": "train_causal_lm", "permutation": "train_xlnet_lm"}.get(objective, "train_masked_lm")
    encoded = encode_for_training(
        sentences, tokenizer, config.max_length, who=who, max_unk_share=max_unk_share
    )
    data_key = (
        ("" if masked else f"{objective}|")
        + data_hash(encoded)
        + (f"|init={Path(init_model).resolve()}" if init_model is not None else "")
    )
    return out, record, state, tokenizer, encoded, data_key


# =============================================================================================
# training
# =============================================================================================
def _train_objective(
    sentences: Sequence[Any],
    out_dir: str | Path,
    config: MLMTrainingConfig | None,
    *,
    objective: str,
    desc: str,
    build_model: Callable[[MLMTrainingConfig, Any], Any],
    pretrained_class: str | None,
    tokenizer: Any,
    held_out: Sequence[str] | None,
    resume: bool,
    progress: bool,
    callback: Callable[[int, float], None] | None,
    init_model: str | Path | None = None,
    max_unk_share: float | None = MAX_UNK_SHARE,
    prepare_data: Callable[[Any, list[list[int]], str], tuple[list[list[int]], str]] | None = None,
) -> TrainingResult:
    """The body :func:`train_masked_lm`, :func:`train_causal_lm` and :func:`train_xlnet_lm` share.

    :func:`_prepare_run` for ``objective``, then the model: ``init_model`` loaded with the
    ``transformers`` class named ``pretrained_class`` (float32), else ``build_model(config, tokenizer)``;
    ``prepare_data(tokenizer, encoded, data_key)`` may rework the encoded text and its key (XLNet's
    packing); then :func:`train_loop` with the objective and the progress bar's ``desc``.
    """
    config = config or MLMTrainingConfig()
    run = _prepare_run(
        sentences,
        out_dir,
        config,
        tokenizer,
        init_model,
        resume,
        objective=objective,
        max_unk_share=max_unk_share,
    )
    out, record, state, tokenizer, encoded, data_key = run
    if prepare_data is not None:
        encoded, data_key = prepare_data(tokenizer, encoded, data_key)
    if init_model is not None and pretrained_class is not None:
        import transformers

        model_class = getattr(transformers, pretrained_class)
        model = model_class.from_pretrained(str(init_model), dtype=torch.float32)
    else:
        model = build_model(config, tokenizer)
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
        desc=desc,
        objective=objective,
    )


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
    max_unk_share: float | None = MAX_UNK_SHARE,
) -> TrainingResult:
    """Train a BERT-layout masked LM on ``sentences``; save it to ``out_dir``.

    Parameters
    ----------
    sentences:
        Training text: strings, or tokenised sentences (joined with spaces).  Empty ones are
        dropped; sequences are truncated to ``config.max_length`` tokens.
    out_dir:
        Receives the model (``save_pretrained``, safetensors), the tokenizer and
        ``training.json``; checkpoints go to ``out_dir/checkpoint/`` (safetensors with a sha256 file:
        :func:`biaskit.training.loop.save_checkpoint`).  The folder loads
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
    max_unk_share:
        Text the tokenizer cannot read: the share of the training tokens that are ``[UNK]`` is logged,
        and above this share (default 0.2; ``None``: never) training stops before it starts with a
        ``ValueError`` giving the share and the worst sentence with its unknown words
        (:func:`biaskit.training.loop.encode_for_training`).

    Notes
    -----
    Returns a :class:`TrainingResult`, also stored as ``out_dir/training.json`` with the
    training time, steps, tokens/s, final training loss (mean of the last
    ``min(10, steps)`` step losses) and held-out PPPL.
    """
    return _train_objective(
        sentences,
        out_dir,
        config,
        objective="masked",
        desc="masked LM",
        build_model=_build_model,
        pretrained_class="BertForMaskedLM",
        tokenizer=tokenizer,
        held_out=held_out,
        resume=resume,
        progress=progress,
        callback=callback,
        init_model=init_model,
        max_unk_share=max_unk_share,
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
    max_unk_share: float | None = MAX_UNK_SHARE,
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

    ``sentences``, ``out_dir``, ``config``, ``tokenizer``, ``resume``, ``progress``, ``callback``,
    ``max_unk_share`` as in :func:`train_masked_lm`; ``init_model`` is a causal-LM folder to continue from
    (its tokenizer is used unless ``tokenizer`` is given; the architecture fields of ``config`` are then
    ignored).  The tokenizer is saved with ``bos_token="[CLS]"`` and ``eos_token="[SEP]"``, so the folder
    loads with ``transformers.AutoModelForCausalLM`` + ``AutoTokenizer`` and ``bos_token_id`` is the ``[CLS]``
    id.  ``held_out``: sentences whose perplexity (:func:`causal_perplexity`) is measured at the
    end, stored as ``held_out_ppl`` (``held_out_pppl`` stays ``None``).  A checkpoint of a masked
    run is never resumed as a causal one (the recorded configuration includes the objective).
    """
    return _train_objective(
        sentences,
        out_dir,
        config,
        objective="causal",
        desc="causal LM",
        build_model=_build_causal_model,
        pretrained_class="AutoModelForCausalLM",
        tokenizer=tokenizer,
        held_out=held_out,
        resume=resume,
        progress=progress,
        callback=callback,
        init_model=init_model,
        max_unk_share=max_unk_share,
    )


def train_xlnet_lm(
    sentences: Sequence[Any],
    out_dir: str | Path,
    config: MLMTrainingConfig | None = None,
    *,
    tokenizer=None,
    held_out: Sequence[str] | None = None,
    resume: bool = True,
    progress: bool = True,
    callback: Callable[[int, float], None] | None = None,
    pack: bool = True,
) -> TrainingResult:
    r"""Train an XLNet (``XLNetLMHeadModel``, Yang et al. 2019) with the permutation-LM objective; save it.

    The same loop as :func:`train_masked_lm` (optimiser, schedule, clipping, checkpoints, bit-identical
    resuming, determinism: the module docstring) with the objective of
    :func:`biaskit.training.objectives.build_plm_batch` / :func:`~biaskit.training.objectives.plm_loss`: a
    factorisation order drawn per sequence and step, the last ``config.mask_probability`` of it predicted
    through the query stream (XLNet's partial prediction; its own 1/6 is
    :data:`~biaskit.training.objectives.PLM_PREDICT_FRACTION`).  ``pack=True`` packs the encoded sentences,
    in order, into segments of up to ``config.max_length`` tokens
    (:func:`~biaskit.training.objectives.pack_sequences`), as XLNet reads long segments.

    The model: a fresh ``XLNetLMHeadModel`` (architecture fields of ``config``); the tokenizer as in
    :func:`train_masked_lm` (a BERT WordPiece one works: XLNet reads token ids, ``[CLS]``/``[SEP]`` mark the
    sentences, ``[MASK]`` is the mask token a :class:`biaskit.lm.xlnet.BridgeLM` reads at).  ``held_out``:
    sentences whose pseudo-perplexity through the query stream
    (:func:`biaskit.training.evaluation.xlnet_pseudo_perplexity`) is stored as ``held_out_pppl``.  The
    folder loads with ``transformers.XLNetLMHeadModel`` + ``AutoTokenizer``
    (``biaskit.lm.catalogue.load_trained_xlnet``).
    """
    from biaskit.training.objectives import pack_sequences

    def packed(tokenizer: Any, encoded: list[list[int]], data_key: str) -> tuple[list[list[int]], str]:
        if not pack:
            return encoded, data_key
        segments = pack_sequences(encoded, config.max_length, tokenizer.cls_token_id, tokenizer.sep_token_id)
        return segments, data_key + "|packed"

    config = config or MLMTrainingConfig()
    return _train_objective(
        sentences,
        out_dir,
        config,
        objective="permutation",
        desc="XLNet",
        build_model=_build_xlnet_model,
        pretrained_class=None,
        tokenizer=tokenizer,
        held_out=held_out,
        resume=resume,
        progress=progress,
        callback=callback,
        prepare_data=packed,
    )
