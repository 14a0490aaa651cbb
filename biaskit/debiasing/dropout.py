r"""Dropout debiasing: continue pre-training with more dropout (Webster et al. 2020).

Webster, Wang, Tenney, Beutel, Pitler, Pavlick, Chen, Chi & Petrov (2020), "Measuring and reducing
gendered correlations in pre-trained models", arXiv:2010.06032, section 5.1: continuing BERT's
masked-LM pre-training on ordinary text with the dropout rates raised to 0.20 on the hidden
activations and 0.15 on the attention weights reduces the gendered correlations the model learned,
presumably by disturbing the co-adapted units that carry them (bias-bench, Meade et al. 2022, evaluates
the same recipe).  Dropout replaces an activation :math:`a` by :math:`a\,\xi/(1-p)`,
:math:`\xi \sim \mathrm{Bernoulli}(1-p)`, during training only.

:func:`dropout_debias` sets those rates in a copy of the model and fine-tunes it with
:func:`biaskit.training.fine_tune.fine_tune` (masked-LM objective, cached by model, data and settings:
the copy's fingerprint includes the rates, so it never collides with a fine-tune without them).  The
text is *not* swapped (that would be CDS): the effect is the dropout's alone.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Sequence

from biaskit.training.fine_tune import FineTuneConfig

__all__ = ["WEBSTER_ATTENTION_DROPOUT", "WEBSTER_HIDDEN_DROPOUT", "dropout_debias", "with_dropout"]

#: Webster et al.'s (2020) rates
WEBSTER_HIDDEN_DROPOUT = 0.20
WEBSTER_ATTENTION_DROPOUT = 0.15


def with_dropout(lm, hidden: float = WEBSTER_HIDDEN_DROPOUT, attention: float = WEBSTER_ATTENTION_DROPOUT):
    """A copy of the masked LM ``lm`` with its dropout rates set (config and every dropout module)."""
    import torch

    from biaskit.lm import MaskedLM

    if not isinstance(lm, MaskedLM):
        raise TypeError("dropout debiasing fine-tunes a masked LM (biaskit.lm.MaskedLM)")
    for p in (hidden, attention):
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout rates must be in [0, 1), got {p}")
    model = copy.deepcopy(lm.model)
    cfg = model.config
    if not hasattr(cfg, "hidden_dropout_prob"):
        raise TypeError(f"{type(model).__name__}: no hidden_dropout_prob in its config (a BERT-like model is needed)")
    cfg.hidden_dropout_prob = hidden
    cfg.attention_probs_dropout_prob = attention
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = attention if "attention.self" in name else hidden
    h = hashlib.sha256(f"{lm.fingerprint()}|dropout={hidden},{attention}".encode())
    return MaskedLM(model=model, tokenizer=lm.tokenizer, name=f"{lm.name}+dropout{hidden:g}-{attention:g}",
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
    """Continue masked-LM training of ``lm`` on ``sentences`` with Webster et al.'s dropout (cached)."""
    from biaskit.training.fine_tune import fine_tune

    return fine_tune(with_dropout(lm, hidden, attention), sentences, config=config, progress=progress)
