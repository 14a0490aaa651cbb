"""Contextual representations of sentences and words from a language model (masked or causal).

* :func:`sentence_representations`: the mean over a sentence's tokens of the last hidden layer, the
  sentence representation that SentenceDebias (Liang et al. 2020) and INLP (Ravfogel et al. 2020)
  are fitted on in bias-bench (Meade, Poole-Dayan & Reddy 2022);
* :func:`contextual_word_vectors`: a word's representation in "bleached" templates that only name it
  ("This is the {w}.", May et al. 2019's SEAT): the mean of its own tokens' last hidden states,
  averaged over the templates, as ``KeyedVectors``, so that every word-vector test (Gonen &
  Goldberg's recovery tests, :mod:`biaskit.metrics.recovery`) runs on a language model unchanged.

The hidden states are those the model's body returns (``model.base_model``), so a projection hooked
onto it (:func:`biaskit.debiasing.sentence_debias.project_hidden_states`) is seen here too.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
from gensim.models import KeyedVectors

logger = logging.getLogger(__name__)

__all__ = ["BLEACHED_TEMPLATES", "contextual_word_vectors", "sentence_representations"]

#: SEAT-style templates that name a word and say nothing else (May et al. 2019)
BLEACHED_TEMPLATES: tuple[str, ...] = ("This is the {w}.", "That is the {w}.", "Here is the {w}.")


def sentence_representations(
    lm, sentences: Sequence[str], *, spans: Sequence[tuple[int, int]] | None = None, batch_size: int = 64
) -> np.ndarray:
    """``(n, d)``: the mean of the last hidden layer over each sentence's tokens (special tokens
    included, padding excluded; a sentence longer than the model's window is cut to it, with a logged
    count), float64; with ``spans`` (character ``[start, end)`` per sentence) the
    mean over the tokens of that span only (:func:`biaskit.embeddings.encoders.target_token_positions`;
    needs a fast tokenizer).  ``lm``: a :class:`biaskit.lm.MaskedLM` or ``CausalLM``."""
    import torch

    from biaskit.embeddings.encoders import target_token_positions

    if isinstance(sentences, str):
        raise TypeError("sentences must be a sequence of strings")
    sentences = list(sentences)
    if not sentences:
        raise ValueError("no sentences to represent")
    if spans is not None and len(spans) != len(sentences):
        raise ValueError(f"{len(spans)} spans for {len(sentences)} sentences")
    texts = [t.lower() for t in sentences] if lm.lowercase else sentences
    tok = lm.tokenizer
    if spans is not None and not getattr(tok, "is_fast", False):
        raise ValueError("pooling over a span needs a fast tokenizer (offset mappings)")
    body = getattr(lm.model, "base_model", None) or lm.model
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    masked = lm.kind == "masked"
    prefix = None if masked else lm.prefix_token_id
    seqs, keep = [], []
    n_cut = 0
    for k, t in enumerate(texts):
        enc = tok(t, add_special_tokens=masked, return_offsets_mapping=spans is not None,
                  return_special_tokens_mask=spans is not None)  # fmt: skip
        ids = list(enc["input_ids"])
        if spans is not None:
            pos = target_token_positions(enc["offset_mapping"], enc["special_tokens_mask"], spans[k])
            if not pos:
                raise ValueError(f"the span {spans[k]} of {sentences[k]!r} covers no token")
        else:
            pos = list(range(len(ids)))
        if prefix is not None:
            ids = [prefix, *ids]
            pos = [p + 1 for p in pos] if spans is not None else list(range(len(ids)))
        if len(ids) > lm.max_length:
            if spans is not None and max(pos) >= lm.max_length:
                raise ValueError(f"the span {spans[k]} of {sentences[k]!r} lies beyond the model's window")
            ids = ids[: lm.max_length]
            pos = [p for p in pos if p < lm.max_length]
            n_cut += 1
        seqs.append(ids)
        keep.append(pos)
    if n_cut:
        logger.info(
            "%d of %d sentence(s) cut to the model's window of %d tokens", n_cut, len(seqs), lm.max_length
        )
    order = np.argsort([-len(x) for x in seqs], kind="stable")
    out: np.ndarray | None = None
    dev = lm.device
    was_training = lm.model.training
    lm.model.eval()
    try:
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                idx = order[start : start + batch_size]
                width = max(len(seqs[i]) for i in idx)
                ids = torch.full((len(idx), width), pad, dtype=torch.long)
                att = torch.zeros((len(idx), width), dtype=torch.long)
                sel = torch.zeros((len(idx), width), dtype=torch.float64)
                for r, i in enumerate(idx):
                    ids[r, : len(seqs[i])] = torch.as_tensor(seqs[i], dtype=torch.long)
                    att[r, : len(seqs[i])] = 1
                    sel[r, keep[i]] = 1.0
                res = body(input_ids=ids.to(dev), attention_mask=att.to(dev))
                h = (res[0] if isinstance(res, tuple) else res.last_hidden_state).to("cpu", torch.float64)
                mean = (h * sel.unsqueeze(-1)).sum(1) / sel.sum(1, keepdim=True)
                if out is None:
                    out = np.zeros((len(seqs), mean.shape[1]))
                out[idx] = mean.numpy()
    finally:
        lm.model.train(was_training)
    assert out is not None
    return out


def contextual_word_vectors(
    lm,
    words: Sequence[str],
    templates: Sequence[str] = BLEACHED_TEMPLATES,
    *,
    pooling: str = "word",
    center: bool = True,
    batch_size: int = 64,
) -> KeyedVectors:
    """Each word's representation in ``templates`` (``{w}`` the word), averaged over the templates.

    ``pooling="word"`` (default): the mean of the last hidden states of the word's own tokens (Tan &
    Celis 2019; Delobelle et al. 2022's ``target_pooled``); ``"sentence"``: the mean over the whole
    sentence (:func:`sentence_representations`).  ``center`` subtracts the mean over ``words`` (a
    language model's representations share a large common component, Ethayarajh 2019, which would
    otherwise dominate every cosine similarity).
    """
    words = list(dict.fromkeys(words))
    if not words:
        raise ValueError("no words to represent")
    if not templates or any("{w}" not in t for t in templates):
        raise ValueError("every template needs a {w} slot")
    if pooling not in ("word", "sentence"):
        raise ValueError(f"pooling must be 'word' or 'sentence', got {pooling!r}")
    sents, spans = [], []
    for w in words:
        for t in templates:
            a = t.index("{w}")
            sents.append(t.replace("{w}", w))
            spans.append((a, a + len(w)))
    R = sentence_representations(lm, sents, spans=spans if pooling == "word" else None, batch_size=batch_size)
    V = R.reshape(len(words), len(templates), -1).mean(axis=1)
    if center:
        V = V - V.mean(axis=0, keepdims=True)
    kv = KeyedVectors(V.shape[1], dtype=np.float32)
    kv.add_vectors(words, V.astype(np.float32))
    return kv
