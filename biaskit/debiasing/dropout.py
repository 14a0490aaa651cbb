r"""Dropout debiasing: continue pre-training with more dropout (Webster et al. 2020).

Webster, Wang, Tenney, Beutel, Pitler, Pavlick, Chen, Chi & Petrov (2020), "Measuring and reducing
gendered correlations in pre-trained models", arXiv:2010.06032, section 5.1: continuing BERT's
masked-LM pre-training on ordinary text with the dropout rates raised to 0.20 on the hidden
activations and 0.15 on the attention weights reduces the gendered correlations the model learned,
presumably by disturbing the co-adapted units that carry them (bias-bench, Meade et al. 2022, evaluates
the same recipe, for GPT-2 too).  Dropout replaces an activation :math:`a` by :math:`a\,\xi/(1-p)`,
:math:`\xi \sim \mathrm{Bernoulli}(1-p)`, during training only.

:func:`dropout_debias` fine-tunes the model with those rates (:func:`biaskit.training.fine_tune.fine_tune`
with ``FineTuneConfig.hidden_dropout`` / ``attention_dropout``): masked LMs with the masked-LM objective,
causal LMs (GPT-2 layout: ``resid_pdrop`` and ``embd_pdrop`` are the hidden rate, ``attn_pdrop`` the
attention rate) with the next-token objective.  The rates are in the fine-tune's cache key, so the run
never collides with a fine-tune without them; the saved model keeps its base's rates in its configuration
(the raised rates are a training device, not part of the model).  The text is *not* swapped (that would
be CDS): the effect is the dropout's alone.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Sequence
from dataclasses import replace

from biaskit.training.fine_tune import FineTuneConfig, set_dropout

__all__ = ["WEBSTER_ATTENTION_DROPOUT", "WEBSTER_HIDDEN_DROPOUT", "dropout_debias", "with_dropout"]

#: Webster et al.'s (2020) rates
WEBSTER_HIDDEN_DROPOUT = 0.20
WEBSTER_ATTENTION_DROPOUT = 0.15

#: configuration fields of the hidden and the attention rate, per layout (BERT-like, GPT-2)
_CONFIG_FIELDS = {
    "hidden_dropout_prob": (("hidden_dropout_prob",), ("attention_probs_dropout_prob",)),
    "resid_pdrop": (("resid_pdrop", "embd_pdrop"), ("attn_pdrop",)),
}


def with_dropout(lm, hidden: float = WEBSTER_HIDDEN_DROPOUT, attention: float = WEBSTER_ATTENTION_DROPOUT):
    """A copy of the masked or causal LM ``lm`` with its dropout rates set (config and every dropout module).

    BERT-like configs: ``hidden_dropout_prob`` / ``attention_probs_dropout_prob``; GPT-2 configs:
    ``resid_pdrop`` and ``embd_pdrop`` / ``attn_pdrop``.  The copy's fingerprint includes the rates.

    Examples
    --------
    >>> from biaskit.metrics.toys import toy_masked_lm
    >>> lm = with_dropout(toy_masked_lm(), hidden=0.3, attention=0.2)
    >>> lm.model.config.hidden_dropout_prob, lm.model.config.attention_probs_dropout_prob
    (0.3, 0.2)
    """
    from biaskit.lm import CausalLM, MaskedLM

    if not isinstance(lm, (MaskedLM, CausalLM)):
        raise TypeError("dropout debiasing fine-tunes a language model (biaskit.lm.MaskedLM or CausalLM)")
    for p in (hidden, attention):
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout rates must be in [0, 1), got {p}")
    model = copy.deepcopy(lm.model)
    cfg = model.config
    layout = next((k for k in _CONFIG_FIELDS if hasattr(cfg, k)), None)
    if layout is None:
        raise TypeError(
            f"{type(model).__name__}: neither hidden_dropout_prob (BERT-like) nor resid_pdrop (GPT-2) in its "
            "config"
        )
    hidden_fields, attention_fields = _CONFIG_FIELDS[layout]
    for f in hidden_fields:
        setattr(cfg, f, hidden)
    for f in attention_fields:
        setattr(cfg, f, attention)
    set_dropout(model, hidden, attention)
    h = hashlib.sha256(f"{lm.fingerprint()}|dropout={hidden},{attention}".encode())
    return type(lm)(model=model, tokenizer=lm.tokenizer, name=f"{lm.name}+dropout{hidden:g}-{attention:g}",
                    revision=lm.revision, lowercase=lm.lowercase, in_process=True,
                    is_fallback=lm.is_fallback, _fingerprint=h.hexdigest()[:16])  # fmt: skip


def dropout_debias(
    lm,
    sentences: Sequence[str],
    *,
    config: FineTuneConfig,
    hidden: float = WEBSTER_HIDDEN_DROPOUT,
    attention: float = WEBSTER_ATTENTION_DROPOUT,
    progress: bool = False,
):
    """Continue training ``lm`` (masked: masked-LM objective; causal: next-token) on ``sentences`` with
    Webster et al.'s dropout rates (cached by model, text and settings, the rates included); the returned
    model's configuration keeps ``lm``'s own rates.

    Examples
    --------
    >>> from biaskit.metrics.toys import TOY_SENTENCES, toy_masked_lm
    >>> from biaskit.training.fine_tune import FineTuneConfig
    >>> base = toy_masked_lm()
    >>> lm = dropout_debias(base, TOY_SENTENCES[:4], config=FineTuneConfig(max_steps=2, batch_size=2))
    >>> type(lm).__name__, lm.model.config.hidden_dropout_prob == base.model.config.hidden_dropout_prob
    ('MaskedLM', True)
    """
    from biaskit.lm import CausalLM, MaskedLM
    from biaskit.training.fine_tune import fine_tune

    if not isinstance(lm, (MaskedLM, CausalLM)):
        raise TypeError("dropout debiasing fine-tunes a language model (biaskit.lm.MaskedLM or CausalLM)")
    cfg = replace(config, hidden_dropout=hidden, attention_dropout=attention)
    return fine_tune(lm, sentences, config=cfg, progress=progress)
