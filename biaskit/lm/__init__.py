"""Language models, masked and causal: loading, scoring, caching and the models biaskit provides.

One home, one file per concern (seed 000 chapter 4, extended to causal models):

=============================  ===============================================================================
:mod:`biaskit.lm.base`         :class:`MaskedLM`, :class:`CausalLM` (model + tokenizer + what scoring needs)
:mod:`biaskit.lm.loading`      offline-safe loading from a folder, the HF cache or the hub (both kinds)
:mod:`biaskit.lm.scoring`      :func:`score_pairs` / :func:`score_sentences`: validated, batched, cached
                               scores
:mod:`biaskit.lm.masked`       masked scoring core (pseudo-log-likelihoods: ``cp``, ``sz``, ``aul``)
:mod:`biaskit.lm.causal`       causal scoring core (exact log-likelihoods: ``ll``, ``ll_mean``, ``shared``)
:mod:`biaskit.lm.alignment`    which tokens the two sentences of a pair share (CrowS-Pairs ``get_span``)
:mod:`biaskit.lm.cache`        the resumable disk cache of sentence scores
:mod:`biaskit.lm.fill_mask`    probabilities of words at one mask (StereoSet, the thesis's baseline)
:mod:`biaskit.lm.builtin`      random stand-ins, bundled trained models by name, the default model choice
:mod:`biaskit.lm.catalogue`    the bundled models: names, folders, training records (recipes: training layer)
:mod:`biaskit.lm.tokenizers`   the deterministic WordPiece tokenizers of the models biaskit trains
:mod:`biaskit.lm.xlnet`        the bridge language model of the indirect-bias study (XLNet or a masked LM)
:mod:`biaskit.lm.slot_scores`  per-template slot scores of the bridge model, :mod:`biaskit.lm.slot_cache`
                               their cache
=============================  ===============================================================================

The names below are importable from ``biaskit.lm`` directly; they are loaded on first use, so importing
``biaskit.lm`` is cheap and the subpackage stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    # base
    "LanguageModel": "base",
    "MaskedLM": "base",
    "CausalLM": "base",
    "ModelKind": "base",
    "require_kind": "base",
    "resolve_device": "base",
    # loading
    "BETO": "loading",
    "DEFAULT_MODEL": "loading",
    "ModelNotAvailableError": "loading",
    "ModelNotFoundError": "loading",
    "how_to_get_model": "loading",
    "load_causal_lm": "loading",
    "load_lm": "loading",
    "load_masked_lm": "loading",
    "model_kind": "loading",
    "quiet_hf_progress": "loading",
    # scoring
    "CAUSAL_METRICS": "scoring",
    "MASKED_METRICS": "scoring",
    "METRIC_MEANINGS": "scoring",
    "PLLMetric": "scoring",
    "PLLScores": "scoring",
    "ScoreMetric": "scoring",
    "TIE_IDENTICAL": "scoring",
    "TIE_NOTHING_AFTER": "scoring",
    "TIE_NO_SHARED": "scoring",
    "check_metric": "scoring",
    "counterpart_metric": "scoring",
    "score_pairs": "scoring",
    "score_sentences": "scoring",
    # alignment
    "crows_template": "alignment",
    "shared_after_difference": "alignment",
    # fill-mask
    "baseline_probabilities": "fill_mask",
    "fill_blank_probabilities": "fill_mask",
    # built-in models
    "FALLBACK_CAUSAL_MODEL": "builtin",
    "FALLBACK_MODEL": "builtin",
    "ModelChoice": "builtin",
    "get_lm": "builtin",
    "get_masked_lm": "builtin",
    "kind_of_name": "builtin",
    "resolve_default_model": "builtin",
    "tiny_causal_lm": "builtin",
    "tiny_masked_lm": "builtin",
    "tiny_tokenizer": "builtin",
    "trained_model_message": "builtin",
}

__all__ = [
    "BETO",
    "CAUSAL_METRICS",
    "CausalLM",
    "DEFAULT_MODEL",
    "FALLBACK_CAUSAL_MODEL",
    "FALLBACK_MODEL",
    "LanguageModel",
    "MASKED_METRICS",
    "METRIC_MEANINGS",
    "MaskedLM",
    "ModelChoice",
    "ModelKind",
    "ModelNotAvailableError",
    "ModelNotFoundError",
    "PLLMetric",
    "PLLScores",
    "ScoreMetric",
    "TIE_IDENTICAL",
    "TIE_NOTHING_AFTER",
    "TIE_NO_SHARED",
    "baseline_probabilities",
    "check_metric",
    "counterpart_metric",
    "crows_template",
    "fill_blank_probabilities",
    "get_lm",
    "get_masked_lm",
    "how_to_get_model",
    "kind_of_name",
    "load_causal_lm",
    "load_lm",
    "load_masked_lm",
    "model_kind",
    "quiet_hf_progress",
    "require_kind",
    "resolve_default_model",
    "resolve_device",
    "score_pairs",
    "score_sentences",
    "shared_after_difference",
    "tiny_causal_lm",
    "tiny_masked_lm",
    "tiny_tokenizer",
    "trained_model_message",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from biaskit.lm.alignment import crows_template, shared_after_difference
    from biaskit.lm.base import CausalLM, LanguageModel, MaskedLM, ModelKind, require_kind, resolve_device
    from biaskit.lm.builtin import (
        FALLBACK_CAUSAL_MODEL,
        FALLBACK_MODEL,
        ModelChoice,
        get_lm,
        get_masked_lm,
        kind_of_name,
        resolve_default_model,
        tiny_causal_lm,
        tiny_masked_lm,
        tiny_tokenizer,
        trained_model_message,
    )
    from biaskit.lm.fill_mask import baseline_probabilities, fill_blank_probabilities
    from biaskit.lm.loading import (
        BETO,
        DEFAULT_MODEL,
        ModelNotAvailableError,
        ModelNotFoundError,
        how_to_get_model,
        load_causal_lm,
        load_lm,
        load_masked_lm,
        model_kind,
        quiet_hf_progress,
    )
    from biaskit.lm.scoring import (
        CAUSAL_METRICS,
        MASKED_METRICS,
        METRIC_MEANINGS,
        TIE_IDENTICAL,
        TIE_NO_SHARED,
        TIE_NOTHING_AFTER,
        PLLMetric,
        PLLScores,
        ScoreMetric,
        check_metric,
        counterpart_metric,
        score_pairs,
        score_sentences,
    )
