"""Batched log-probabilities of predicted words in template sentences, with and without the context word
(Louis-Alexandre 2022, seed 004; the model side of :mod:`biaskit.metrics.indirect_bias`).

:func:`slot_scores` fills every template of a :class:`~biaskit.data.louis_alexandre.TemplateSet` with each
context word (and with none: the prior), masks the predicted slot and reads all predicted classes there
in one pass per sentence (:meth:`biaskit.lm.xlnet.BridgeLM.log_probs_at_masks`).  Predicted words that
are not single tokens of the model are dropped (logged) or raise.  Each call is cached on disk
(:mod:`biaskit.lm.slot_cache`).  :meth:`SlotScores.bias_scores` gives Kurita et al.'s (2019)
log-probability bias scores, probabilities averaged over the templates before the log-ratio.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from biaskit.data.louis_alexandre import (
    FeatureSet,
    TemplateSet,
    dedupe_words,
    feature_mask_index,
    feature_set,
    load_louis_alexandre_rules,
)
from biaskit.lm.slot_cache import read_slot_cache, slot_cache_key, slot_cache_path, write_slot_cache
from biaskit.lm.xlnet import BridgeLM

__all__ = ["MultiToken", "SlotScores", "slot_scores"]

logger = logging.getLogger(__name__)

MultiToken = Literal["drop", "raise"]


@dataclass
class SlotScores:
    r"""Per-template log-probabilities of the predicted classes, with and without the context word.

    ``log_p_tgt[i, j, k] = log P(class k | template i with context j, feature masked)`` and
    ``log_p_prior[i, k] = log P(class k | template i with both slots masked)``.
    """

    key: str
    context: tuple[str, ...]
    predicted: tuple[str, ...]
    log_p_tgt: np.ndarray
    log_p_prior: np.ndarray
    dropped: dict[str, str] = field(default_factory=dict)
    n_cached: int = 0

    @staticmethod
    def _log_mean(lp: np.ndarray, axis: int = 0) -> np.ndarray:
        m = lp.max(axis=axis, keepdims=True)
        return np.squeeze(m, axis=axis) + np.log(np.exp(lp - m).mean(axis=axis))

    def log_mean_tgt(self) -> np.ndarray:
        r""":math:`\log \frac1n \sum_i P(k \mid s_i(j, [MASK]))`, shape (contexts, classes)."""
        return self._log_mean(self.log_p_tgt, 0)

    def log_mean_prior(self) -> np.ndarray:
        r""":math:`\log \frac1n \sum_i P(k \mid s_i([MASK], [MASK]))`, shape (classes,)."""
        return self._log_mean(self.log_p_prior, 0)

    def bias_scores(self) -> pd.DataFrame:
        """The log-probability bias scores, rows = context words, columns = predicted classes."""
        return pd.DataFrame(
            self.log_mean_tgt() - self.log_mean_prior()[None, :],
            index=pd.Index(self.context, name="context"),
            columns=pd.Index(self.predicted, name="predicted"),
        )


def _resolve_predicted(
    bridge: BridgeLM, fs: FeatureSet, forms_used: Sequence[str], multi_token: MultiToken, what: str
) -> tuple[list[str], dict[str, np.ndarray], dict[str, str]]:
    kept: list[str] = []
    ids: dict[str, list[int]] = {f: [] for f in forms_used}
    dropped: dict[str, str] = {}
    for c in fs.classes:
        row = {}
        bad = None
        for f in forms_used:
            w = fs.surface(c, f)
            i = bridge.word_id(w)
            if i is None:
                bad = w
                break
            row[f] = i
        if bad is not None:
            dropped[c] = f"{bad!r} is not a single token of {bridge.name}"
            continue
        kept.append(c)
        for f in forms_used:
            ids[f].append(row[f])
    if dropped:
        msg = (
            f"{what}: {len(dropped)} of {len(fs.classes)} words are not single tokens of {bridge.name} and "
            "cannot be predicted at a mask"
        )
        if multi_token == "raise":
            raise ValueError(msg + f": {sorted(dropped)}")
        logger.warning("%s; dropped: %s", msg, sorted(dropped)[:30])
    if not kept:
        raise ValueError(f"{what}: no word left to predict (none is a single token of {bridge.name})")
    return kept, {f: np.asarray(v, dtype=np.int64) for f, v in ids.items()}, dropped


def slot_scores(
    bridge: BridgeLM,
    templates: TemplateSet,
    context: Sequence[str],
    predicted: FeatureSet | Sequence[str],
    *,
    multi_token: MultiToken = "drop",
    rules: Mapping[str, Any] | None = None,
    cache: bool = True,
    progress: bool = True,
) -> SlotScores:
    """Batched log-probabilities of every predicted class in every template, with each context word and with
    none.

    One forward pass per (template, context word) plus one prior pass per template, each reading
    all predicted classes at once (the feature's ``[MASK]``).  Predicted words that are not single
    tokens are dropped (logged; ``SlotScores.dropped``) or raise (``multi_token="raise"``).
    Results are cached on disk (:mod:`biaskit.lm.slot_cache`).
    """
    rules = rules if rules is not None else load_louis_alexandre_rules()
    fs = (
        predicted
        if isinstance(predicted, FeatureSet)
        else feature_set(templates.feature_category, list(predicted), rules)
    )
    ctx = dedupe_words(list(context), f"context words of {templates.key}")
    forms_used = sorted(set(templates.forms))
    kept, ids, dropped = _resolve_predicted(
        bridge, fs, forms_used, multi_token, f"{templates.key} predicted {fs.category}"
    )
    fs_kept = FeatureSet(fs.category, tuple(kept), {c: fs.forms[c] for c in kept})
    key = slot_cache_key(bridge, templates, ctx, fs_kept, rules)
    path = slot_cache_path(bridge, key)
    n_t, n_c, n_k = len(templates), len(ctx), len(kept)
    hit = read_slot_cache(path, (n_t, n_c, n_k), key) if cache else None
    if hit is not None:
        return SlotScores(templates.key, tuple(ctx), tuple(kept), hit[0], hit[1], dropped, n_cached=1)
    sentences: list[str] = []
    which: list[int] = []
    cand_rows: list[np.ndarray] = []
    for t, form in zip(templates.templates, templates.forms, strict=True):
        prior_mask = feature_mask_index(t)
        for target in [None, *ctx]:
            sentences.append(bridge.fill(t, target, target_category=templates.target_category, rules=rules))
            which.append(prior_mask if target is None else 0)
            cand_rows.append(ids[form])
    seqs = bridge.encode(sentences)
    mask_id = bridge.lm.tokenizer.mask_token_id
    for k, (sq, sent) in enumerate(zip(seqs, sentences, strict=True)):
        want = 2 if k % (n_c + 1) == 0 else 1  # the prior sentence of each template comes first
        if sum(1 for x in sq if x == mask_id) != want:
            raise ValueError(
                f"{templates.key}: expected {want} mask token(s) after tokenising {sent[-120:]!r}; "
                "a context word or the template contains the mask token text"
            )
    lp = bridge.log_probs_at_masks(seqs, which, np.stack(cand_rows), progress=progress, desc=templates.key)
    lp = lp.reshape(n_t, n_c + 1, n_k)
    res = SlotScores(templates.key, tuple(ctx), tuple(kept), lp[:, 1:, :].copy(), lp[:, 0, :].copy(), dropped)
    if cache:
        write_slot_cache(path, res.log_p_tgt, res.log_p_prior, key)  # best effort: a WARNING if it fails
    return res
