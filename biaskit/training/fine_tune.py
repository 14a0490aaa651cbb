r"""Fine-tune any masked or causal language model on a list of sentences, with Bartl et al.'s (2020)
procedure.

Seed 002 (Barza 2023) debiases BERT by counterfactual
data substitution (CDS, :func:`biaskit.data.counterfactual.cds`) followed by masked-LM fine-tuning,
"following the exact fine-tuning procedure of Bartl et al. (2020)" (seed 002 sections 4.4 and
5.1; extraction section 2.2.3), and measures a corpus's bias by fine-tuning the debiased model
further on it (section 5.2.1).  :func:`fine_tune` is that fine-tuning step.

Procedure (Bartl, Marchiori & Lenci 2020, "Unmasking Contextual Stereotypes: Measuring and
Mitigating BERT's Gender Bias", GeBNLP; their code ``marionbartl/gender-bias-BERT``,
``code/main.py`` and ``code/bias_utils/utils.py``), the preset :data:`BARTL_2020`:

* masked-LM objective of Devlin et al. (2019): 15 % of the non-special tokens of each sequence
  are targets, 80 % of them replaced by [MASK], 10 % by a random token, 10 % kept; the loss is
  the mean cross-entropy over the targets,
  :math:`\mathcal{L} = -\frac{1}{|M|}\sum_{t\in M}\log P_\theta(w_t \mid \tilde W)`;
* AdamW with learning rate :math:`\eta = 2\cdot 10^{-5}`, :math:`\epsilon = 10^{-8}`, no weight
  decay; linear schedule with no warm-up over the :math:`T` steps of the run: the update of step
  :math:`s = 0, \dots, T-1` uses :math:`\eta_s = \eta\,(T - s)/T`;
* gradients clipped to global norm 1.0: :math:`g \leftarrow g \cdot \min(1, 1/\lVert g\rVert_2)`;
* 3 epochs, batch size 1, seed 42;
* sequences truncated to ``max_len``, the smallest power of two at least as large as the longest
  sentence counted in whitespace-separated words (256 for the CDS-flipped GAP corpus); here
  further capped at the model's window.

**Bartl's padding quirk** (``FineTuneConfig.bartl_pad_quirk``, off by default).  Bartl's code pads
every sequence to ``max_len`` with the **[MASK]** id (103), not the pad id (0), and builds the
attention mask as ``id > 0``.  The padding is therefore *attended*, and since the masking
function excludes only [CLS], [SEP] and the pad id, padding positions are also drawn as MLM
targets (label [MASK]).  With batch size 1 and ``max_len`` 256, a typical 25-token GAP sentence
is followed by ~230 attended [MASK] tokens, ~35 of which are targets: most of the loss is spent
on predicting [MASK] after the end of a sentence, and every sentence is seen through a long
[MASK] tail.  Off (the default) is standard padding: the pad id, the attention mask of the
tokenizer (padding not attended), padding never a target; batches are then padded only to
their longest sequence, which gives the same result as padding to ``max_len`` (up to float
rounding) at a fraction of the cost.  Turn the quirk on to replicate Bartl's or Barza's models
as they were trained; :func:`biaskit.training.pretrain.build_mlm_batch` builds both kinds of batch.

Other, minor differences from Bartl's script: the random streams (example order, masking,
dropout) are this package's (deterministic and resumable, :mod:`biaskit.training.pretrain`), not
``RandomSampler`` / ``torch.bernoulli`` under ``torch.manual_seed(42)``, so a run is not
bit-for-bit Bartl's; ``torch.optim.AdamW`` adds :math:`\epsilon` after the bias correction of
the second moment, transformers 2.x's ``AdamW`` before it (a difference of order
:math:`\epsilon`); over-long sentences keep their [SEP] when truncated (keras ``pad_sequences``
cut it off); sentence splitting (Bartl: ``nltk.sent_tokenize``) is the caller's.

The training loop itself is :mod:`biaskit.training.pretrain`'s (shared with
:func:`biaskit.training.pretrain.train_masked_lm`): deterministic given the seed, a tqdm progress bar,
checkpoints and bit-identical resuming, CUDA when available.

**Causal models**.  Given a causal LM (:class:`biaskit.lm.CausalLM`, e.g. the planted controls
``en-clm-planted-sXX``), :func:`fine_tune` runs the same loop, optimiser, schedule, clipping, cache and
checkpoints with the next-token objective of :func:`biaskit.training.pretrain.train_causal_lm` (Radford et
al. 2019): each sentence is ``[BOS] w_1 .. w_n [EOS]`` (the model's prefix token,
:attr:`biaskit.lm.base.CausalLM.prefix_token_id`, is put in front when its tokenizer does not add it) and the
loss is :math:`-\frac{1}{\sum_i (|x_i|-1)}\sum_i\sum_{t\ge 1}\log P_\theta(x_{i,t}\mid x_{i,<t})`.  The
masking fields and ``bartl_pad_quirk`` are not read; the run's cache key records ``"objective": "causal"``.

**Training-time dropout** (``FineTuneConfig.hidden_dropout`` / ``attention_dropout``; Webster et al.'s
dropout debiasing, :mod:`biaskit.debiasing.dropout`): the rates are set on the dropout modules of the
training copy (:func:`set_dropout`: BERT's attention-probability dropout / GPT-2's ``attn_pdrop`` for
attention, every other dropout -- BERT's ``hidden_dropout_prob``, GPT-2's ``resid_pdrop`` and
``embd_pdrop`` -- for hidden), which is what dropout reads while training.  The model's configuration is
not changed, so the saved model keeps its base's rates and loads, scores and trains further like it.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from biaskit.core.paths import cache_dir, cache_name
from biaskit.lm import CausalLM, MaskedLM, quiet_hf_progress
from biaskit.lm.loading import model_folder_problem, recorded_key
from biaskit.lm.tokenizers import MAX_UNK_SHARE
from biaskit.training.pretrain import (
    CHECKPOINT_DIR,
    TRAINING_JSON,
    MLMTrainingConfig,
    as_text,
    data_hash,
    encode_for_training,
    has_saved_model,
    load_checkpoint,
    train_loop,
    training_key,
    training_steps,
)

__all__ = [
    "BARTL",
    "BARTL_2020",
    "KEY_WHEN_SET",
    "FineTuneConfig",
    "bartl_max_length",
    "dropout_rates",
    "find_fine_tuned",
    "fine_tune",
    "fine_tune_output_dir",
    "fine_tune_record",
    "set_dropout",
]

logger = logging.getLogger(__name__)

#: sub-folder of :func:`biaskit.core.paths.cache_dir` that holds the fine-tuned models
CACHE_SUBDIR = "fine_tuned"
#: settings that do not change the trained weights: left out of the cache key and resume check
_NOT_IN_KEY = ("device", "checkpoint_every", "deterministic_cuda")
#: settings left out of the cache key (and out of the records that name a fine-tune) while unset, so that
#: the keys of earlier fine-tunes stay as they were
KEY_WHEN_SET = ("hidden_dropout", "attention_dropout")


@dataclass(frozen=True)
class FineTuneConfig:
    """Hyper-parameters of :func:`fine_tune`; the defaults are Bartl et al.'s (2020), :data:`BARTL_2020`.

    Attributes
    ----------
    learning_rate, adam_epsilon, weight_decay:
        AdamW's :math:`\\eta`, :math:`\\epsilon` and decoupled weight decay (Bartl: 2e-5, 1e-8, 0;
        decay, when set, spares biases and LayerNorm weights).
    warmup_steps:
        Linear warm-up steps before the linear decay to 0 at the last step (Bartl: 0).
    max_grad_norm:
        Gradient clipping to this global L2 norm; 0 switches clipping off (Bartl: 1.0).
    epochs, batch_size, seed:
        Bartl: 3, 1, 42.  ``max_steps`` (if set) stops after that many steps instead (the
        schedule then decays to 0 over ``max_steps``).
    mask_probability, mask_replace, mask_random:
        BERT masking, 15 % of the tokens with 80 % [MASK] / 10 % random / 10 % kept.
    bartl_pad_quirk:
        Pad with [MASK] to ``max_length``, attend to it and let it be drawn as targets, as
        Bartl's code does (module docstring).  Default ``False``: standard padding.
    max_length:
        Longest sequence in tokens ([CLS]/[SEP] included); longer sentences are truncated (a
        WARNING counts them).  ``None``: Bartl's rule, :func:`bartl_max_length` of the
        sentences, capped at the model's window.
    hidden_dropout, attention_dropout:
        Dropout rates while training (:func:`set_dropout`: attention-probability dropout, and every other
        dropout of the model); ``None`` (default): the model's own (``bert-base-uncased``: 0.1, as in
        Bartl's run).  Webster et al.'s (2020) dropout debiasing uses 0.20 / 0.15
        (:func:`biaskit.debiasing.dropout.dropout_debias`).  The saved model keeps its base's rates in
        its configuration.
    checkpoint_every:
        Steps between checkpoints (0: only at the end).  ``device``: ``"auto"`` (CUDA when
        available), ``"cpu"``, ``"cuda"``...; ``deterministic_cuda``: deterministic CUDA kernels
        (:mod:`biaskit.training.pretrain`).  These three do not change the result and are not part of
        the cache key.
    """

    learning_rate: float = 2e-5
    adam_epsilon: float = 1e-8
    weight_decay: float = 0.0
    warmup_steps: int = 0
    max_grad_norm: float = 1.0
    epochs: int = 3
    batch_size: int = 1
    seed: int = 42
    mask_probability: float = 0.15
    mask_replace: float = 0.8
    mask_random: float = 0.1
    bartl_pad_quirk: bool = False
    max_length: int | None = None
    max_steps: int | None = None
    hidden_dropout: float | None = None
    attention_dropout: float | None = None
    checkpoint_every: int = 1000
    device: str = "auto"
    deterministic_cuda: bool = False

    def __post_init__(self) -> None:
        self.training_config(self.max_length or 512)  # MLMTrainingConfig checks every value
        for name in KEY_WHEN_SET:
            p = getattr(self, name)
            if p is not None and not 0.0 <= p < 1.0:
                raise ValueError(f"{name} must be in [0, 1) or None, got {p}")

    def training_config(self, max_length: int) -> MLMTrainingConfig:
        """The :class:`biaskit.training.pretrain.MLMTrainingConfig` the shared loop runs with (architecture
        fields unused: the model's own configuration rules)."""
        return MLMTrainingConfig(
            max_length=max_length,
            batch_size=self.batch_size,
            learning_rate=self.learning_rate,
            adam_epsilon=self.adam_epsilon,
            weight_decay=self.weight_decay,
            warmup_steps=self.warmup_steps,
            epochs=self.epochs,
            max_steps=self.max_steps,
            max_grad_norm=self.max_grad_norm,
            mask_probability=self.mask_probability,
            mask_replace=self.mask_replace,
            mask_random=self.mask_random,
            seed=self.seed,
            checkpoint_every=self.checkpoint_every,
            device=self.device,
            deterministic_cuda=self.deterministic_cuda,
            bartl_pad_quirk=self.bartl_pad_quirk,
        )


#: Bartl, Marchiori & Lenci (2020), verified from their code; the procedure of seed 002 (Barza 2023)
BARTL_2020 = FineTuneConfig()
BARTL = BARTL_2020


def bartl_max_length(sentences: Sequence[str]) -> int:
    """Bartl's ``max_len``: the smallest power of two >= the longest sentence's whitespace word count."""
    longest = max((len(s.split()) for s in sentences), default=0)
    if longest < 1:
        raise ValueError("no non-empty sentence")
    return 2 ** math.ceil(math.log2(longest))


def _is_attention_dropout(name: str) -> bool:
    """BERT-like ``...attention.self.dropout`` and GPT-2's ``...attn.attn_dropout`` drop attention
    probabilities."""
    return "attention.self" in name or name.endswith("attn_dropout")


def dropout_rates(model: Any) -> dict[str, float]:
    """Module name -> rate of every ``torch.nn.Dropout`` of ``model`` (a ``transformers`` model)."""
    import torch

    return {n: float(m.p) for n, m in model.named_modules() if isinstance(m, torch.nn.Dropout)}


def set_dropout(model: Any, hidden: float | None = None, attention: float | None = None) -> dict[str, float]:
    """Set the dropout rates of ``model``'s modules in place; returns the rates they had
    (:func:`dropout_rates`).

    ``attention`` goes to the dropout on the attention probabilities (BERT ``attention.self.dropout``, whose
    config field is ``attention_probs_dropout_prob``; GPT-2 ``attn.attn_dropout``, ``attn_pdrop``),
    ``hidden`` to every other dropout (BERT ``hidden_dropout_prob``: embeddings, attention output,
    feed-forward output; GPT-2 ``resid_pdrop`` and ``embd_pdrop``); ``None`` leaves those modules as
    they are.  The model's configuration is not changed.  ``TypeError`` for a model without dropout
    modules (whose rates could only be changed through its configuration).
    """
    import torch

    for what, p in (("hidden", hidden), ("attention", attention)):
        if p is not None and not 0.0 <= p < 1.0:
            raise ValueError(f"{what} dropout must be in [0, 1), got {p}")
    before = dropout_rates(model)
    if not before:
        raise TypeError(f"{type(model).__name__} has no torch.nn.Dropout module whose rate could be set")
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Dropout):
            p = attention if _is_attention_dropout(name) else hidden
            if p is not None:
                module.p = float(p)
    return before


def _causal_name(name: str) -> bool:
    """Whether the model named ``name`` (bundled name or local folder) is a causal LM."""
    from biaskit.lm import FALLBACK_CAUSAL_MODEL, model_kind
    from biaskit.lm.catalogue import CLM_NAMES

    if name in CLM_NAMES or name == FALLBACK_CAUSAL_MODEL:
        return True
    if Path(name).is_dir():
        try:
            return model_kind(name) == "causal"
        except (OSError, ValueError):
            return False
    return False


def _resolve_model(model: str | Path | MaskedLM | CausalLM) -> tuple[MaskedLM | CausalLM, bool]:
    """``(lm, shared)``: ``shared`` when ``lm`` belongs to the caller (its weights must not change)."""
    from biaskit.lm import get_lm, get_masked_lm, load_causal_lm, load_masked_lm

    if isinstance(model, (MaskedLM, CausalLM)):
        return model, True
    if isinstance(model, Path):
        if _causal_name(str(model)):
            return load_causal_lm(model, device="cpu"), False
        return load_masked_lm(model, device="cpu"), False
    if isinstance(model, str):
        if _causal_name(model):
            return get_lm(model, kind="causal", device="cpu"), False
        return get_masked_lm(model, device="cpu"), False
    raise TypeError(
        f"model must be a model name, a folder, a MaskedLM or a CausalLM, not {type(model).__name__}"
    )


def _load_tuned(out: Path, base: MaskedLM | CausalLM, device: str) -> MaskedLM | CausalLM:
    """The fine-tuned model saved in ``out``, of ``base``'s kind."""
    from biaskit.lm import load_causal_lm, load_masked_lm

    load = load_causal_lm if base.kind == "causal" else load_masked_lm
    tuned = load(out, device=device, lowercase=base.lowercase)
    tuned.is_fallback = base.is_fallback  # a fine-tuned random stand-in still measures nothing
    return tuned


def _resolve_max_length(texts: Sequence[str], config: FineTuneConfig, window: int) -> int:
    if config.max_length is not None:
        if config.max_length > window:
            raise ValueError(f"max_length={config.max_length} exceeds the model's window of {window} tokens")
        return config.max_length
    return max(3, min(bartl_max_length(texts), window))


def fine_tune_output_dir(base_name: str, record: dict[str, Any], data_key: str) -> Path:
    """Default output folder: ``<cache>/fine_tuned/<model>-<sha256(settings, data, model)[:16]>``."""
    h = hashlib.sha256(json.dumps(record, sort_keys=True).encode())
    h.update(data_key.encode())
    folder = f"{cache_name(Path(base_name).name or base_name, 40)}-{h.hexdigest()[:16]}"
    return cache_dir() / CACHE_SUBDIR / folder


@dataclass
class _Plan:
    """What a fine-tune is, before any training: the base model, the data and the cache folder."""

    base: MaskedLM | CausalLM
    shared: bool  # the base belongs to the caller: train a copy
    encoded: list[list[int]]
    record: dict[str, Any]
    data_key: str
    max_length: int
    out: Path

    @property
    def objective(self) -> str:
        return "causal" if self.base.kind == "causal" else "masked"


def _plan(
    model: str | Path | MaskedLM | CausalLM,
    sentences: Sequence[str],
    config: FineTuneConfig,
    output_dir: str | Path | None,
    max_unk_share: float | None = MAX_UNK_SHARE,
) -> _Plan:
    """Check the input, encode the sentences and name the run's folder (:func:`fine_tune`)."""
    if isinstance(sentences, str):
        raise TypeError("sentences must be a sequence of sentences, not one string")
    sentences = list(sentences)
    if not sentences:
        raise ValueError("fine_tune needs at least one sentence; got an empty list")
    texts = as_text(sentences)
    if not any(t.strip() for t in texts):
        raise ValueError(f"fine_tune: all {len(texts)} sentence(s) are empty")

    base, shared = _resolve_model(model)
    tokenizer = base.tokenizer
    if base.lowercase and not getattr(tokenizer, "do_lower_case", False):
        texts = [t.lower() for t in texts]
    max_length = _resolve_max_length([t for t in texts if t.strip()], config, base.max_length)
    encoded = encode_for_training(texts, tokenizer, max_length, who="fine_tune", max_unk_share=max_unk_share)
    causal = base.kind == "causal"
    if causal:  # every sequence starts with the token sentences are scored after (CausalLM.prefix_token_id)
        pre = base.prefix_token_id
        if pre is not None:
            encoded = [ids if ids[:1] == [pre] else [pre, *ids][:max_length] for ids in encoded]

    record: dict[str, Any] = {
        k: v
        for k, v in asdict(config).items()
        if k not in _NOT_IN_KEY and not (k in KEY_WHEN_SET and v is None)
    }
    record.update(max_length=max_length, base_model=base.name, base_fingerprint=base.fingerprint())
    if causal:
        record["objective"] = "causal"
    data_key = f"{'causal|' if causal else ''}{data_hash(encoded)}|base={base.fingerprint()}"
    folder_name = base.name
    if config.hidden_dropout is not None or config.attention_dropout is not None:
        folder_name = (
            f"{Path(base.name).name or base.name}+dropout{config.hidden_dropout}-{config.attention_dropout}"
        )
    out = Path(output_dir) if output_dir is not None else fine_tune_output_dir(folder_name, record, data_key)
    return _Plan(base, shared, encoded, record, data_key, max_length, out)


def find_fine_tuned(
    model: str | Path | MaskedLM | CausalLM,
    sentences: Sequence[str],
    *,
    config: FineTuneConfig = BARTL,
    output_dir: str | Path | None = None,
    max_unk_share: float | None = MAX_UNK_SHARE,
) -> MaskedLM | CausalLM | None:
    """The model :func:`fine_tune` would return for these arguments if that run is finished, else ``None``.

    Nothing is trained or written: the run's folder (the cache folder of the model, data and
    settings, or ``output_dir``) is looked up, and a finished run (its checkpoint at the last step
    and its weights saved, with the same settings and data) is loaded.  An unfinished or missing
    run gives ``None``; a folder written with other settings or data raises ``ValueError`` as
    :func:`fine_tune` would.  Only what biaskit wrote is used: a checkpoint or a saved model whose files
    no longer match their sha256 files (:func:`biaskit.lm.loading.model_folder_problem`) gives ``None``
    with a WARNING naming the file and the reason (:func:`fine_tune` then writes the model again from
    its verified checkpoint, or trains it again).  :func:`biaskit.debiasing.cds.fine_tune_many` uses it
    to start worker processes only for the runs that still need training.
    """
    run = _plan(model, sentences, config, output_dir, max_unk_share)
    if not has_saved_model(run.out):
        return None
    state = load_checkpoint(run.out / CHECKPOINT_DIR, run.record)
    if state is None or state["data"] != run.data_key:
        return None
    if int(state["step"]) < training_steps(config.training_config(run.max_length), len(run.encoded)):
        return None
    problem = model_folder_problem(run.out, training_key(run.record, run.data_key))
    if problem:
        logger.warning(
            "fine-tuned model %s is not used: %s; fine_tune writes it again from its verified checkpoint",
            run.out,
            problem,
        )
        return None
    with quiet_hf_progress():
        return _load_tuned(run.out, run.base, config.device)


def fine_tune(
    model: str | Path | MaskedLM | CausalLM,
    sentences: Sequence[str],
    *,
    config: FineTuneConfig = BARTL,
    output_dir: str | Path | None = None,
    resume: bool = True,
    progress: bool = True,
    held_out: Sequence[str] | None = None,
    callback: Callable[[int, float], None] | None = None,
    max_unk_share: float | None = MAX_UNK_SHARE,
) -> MaskedLM | CausalLM:
    """Masked-LM (or, for a causal ``model``, next-token) fine-tuning of ``model`` on ``sentences``; returns
    the fine-tuned model.

    The procedure and its citations are in the module docstring; by default Bartl et al.'s
    (2020) settings (:data:`BARTL_2020`: AdamW lr 2e-5, eps 1e-8, linear schedule without warm-up,
    clipping 1.0, 3 epochs, batch size 1, seed 42, 15 % masking with 80/10/10), as in seed 002
    (Barza 2023, sections 4.4 and 5.1).  Each step's loss is
    :math:`-\\frac{1}{|M|}\\sum_{t \\in M} \\log P_\\theta(w_t \\mid \\tilde W)` over the masked
    positions :math:`M`.

    Parameters
    ----------
    model:
        A Hugging Face id or a local folder (offline: only what is on this machine), a bundled
        trained-here name such as ``"en-mlm"`` (:func:`biaskit.lm.get_masked_lm`) or ``"en-clm-planted-s80"``
        (a causal one, :data:`biaskit.lm.catalogue.CLM_NAMES`), or a loaded :class:`biaskit.lm.MaskedLM` or
        :class:`biaskit.lm.CausalLM`, which is left unchanged (a copy is trained).  A causal model is
        trained with the next-token objective (module docstring), a masked one with BERT's masking.
    sentences:
        Training sentences (one string each; split passages first).  Empty strings are dropped
        and over-long sentences truncated to ``max_length``, each with a WARNING that counts
        them.  Lower-cased first when the model is uncased but its tokenizer does not
        lower-case (``MaskedLM.lowercase``), as the metrics do.
    config:
        :class:`FineTuneConfig`; every hyper-parameter is a field.  ``bartl_pad_quirk=True``
        reproduces Bartl's [MASK]-padding quirk (module docstring).
    output_dir:
        Receives the fine-tuned weights (safetensors), the tokenizer, ``training.json`` (steps,
        losses, time, tokens/s, the settings) and ``checkpoint/``.  ``None``: a folder of the
        cache (:func:`biaskit.core.paths.cache_dir`) keyed by the model's fingerprint, the token ids
        of the data and the settings, so the same call finds the finished model again.
    resume:
        Continue from the checkpoint in ``output_dir`` (settings and data must match, else
        ``ValueError``); a finished run is loaded without training or rewriting anything.
        ``False`` starts afresh.
    progress:
        tqdm progress bar.
    held_out:
        Sentences whose pseudo-perplexity is measured at the end (``training.json``).
    callback:
        ``callback(step, loss)`` after every step; an exception it raises stops the run as a
        crash would (the last checkpoint stays).
    max_unk_share:
        Text the model cannot read: the share of the sentences' tokens that the model's tokenizer
        maps to ``[UNK]`` is logged, and above this share (default 0.2; ``None``: never) the run stops
        before any training with a ``ValueError`` giving the share and the worst sentence with its
        unknown words (:func:`biaskit.training.loop.encode_for_training`).  Not part of the cache key.

    Notes
    -----
    Returns the fine-tuned model loaded from ``output_dir`` (:func:`biaskit.lm.load_masked_lm` or
    :func:`biaskit.lm.load_causal_lm`, on ``config.device``): every metric of its kind accepts it.
    """
    run = _plan(model, sentences, config, output_dir, max_unk_share)
    base, shared, tokenizer, out = run.base, run.shared, run.base.tokenizer, run.out
    encoded, record, data_key, max_length = run.encoded, run.record, run.data_key, run.max_length
    out.mkdir(parents=True, exist_ok=True)
    state = load_checkpoint(out / CHECKPOINT_DIR, record) if resume else None

    net = copy.deepcopy(base.model) if shared else base.model
    if config.hidden_dropout is not None or config.attention_dropout is not None:
        set_dropout(
            net, config.hidden_dropout, config.attention_dropout
        )  # modules only: the config keeps the base's
    with quiet_hf_progress(not progress):  # no "Writing model shards" / "Loading weights" bars either
        train_loop(
            net.float(),
            tokenizer,
            encoded,
            out,
            config.training_config(max_length),
            data_key=data_key,
            record=record,
            state=state,
            held_out=held_out,
            progress=progress,
            callback=callback,
            desc="fine-tune",
            objective=run.objective,
        )
        del net
        return _load_tuned(out, base, config.device)


def fine_tune_record(model: MaskedLM | CausalLM | str | Path) -> dict[str, Any]:
    """The ``training.json`` of a fine-tuned model (steps, losses, time, tokens/s, settings); ``{}`` when it
    has none.

    ``model`` is what :func:`fine_tune` returned (its ``name`` is its folder) or the folder itself.  A record
    whose sha256 file no longer vouches for it (:func:`biaskit.core.io.cache_file_problem`, with the key its
    model files record) is not read: a WARNING names it and the reason, and ``{}`` is returned.
    """
    from biaskit.core.io import cache_file_problem, checksum_sidecar

    folder = Path(str(model.name if isinstance(model, (MaskedLM, CausalLM)) else model))
    path = folder / TRAINING_JSON
    if not path.is_file():
        return {}
    key = recorded_key(folder / "model.safetensors")
    if key is not None or checksum_sidecar(path).exists():  # saved by biaskit: checked
        problem = cache_file_problem(path, key or "")
        if problem:
            logger.warning("%s is not read: %s", path, problem)
            return {}
    return json.loads(path.read_text(encoding="utf-8"))
