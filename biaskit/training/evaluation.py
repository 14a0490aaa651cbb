"""Held-out quality of a trained model: the pseudo-perplexity of a masked LM (:func:`pseudo_perplexity`,
Salazar et al. 2020) and the perplexity of a causal LM (:func:`causal_perplexity`).

PPL and PPPL are different quantities: do not compare them (:mod:`biaskit.training.pretrain` gives both
formulas).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence

import torch

from biaskit.lm.tokenizers import as_text
from biaskit.training.objectives import build_clm_batch

logger = logging.getLogger(__name__)

__all__ = ["causal_perplexity", "pseudo_perplexity", "xlnet_pseudo_perplexity"]


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


def xlnet_pseudo_perplexity(
    model, tokenizer, sentences: Sequence[str], *, batch_size: int = 256
) -> tuple[float, int]:
    r"""Corpus pseudo-perplexity of an ``XLNetLMHeadModel``, each token read through XLNet's query stream.

    For every non-special token :math:`w_t` of a sentence (encoded with the tokenizer's special tokens), the
    model predicts it with its own position hidden from every position (``perm_mask[:, :, t] = 1``) and the
    query stream at :math:`t` (``target_mapping``): :math:`\log P_\theta(w_t \mid W_{\setminus t})`, every
    other token visible, the last step of a factorisation order that ends at :math:`t`.  As the masked LMs'
    PPPL (Salazar et al. 2020; :func:`pseudo_perplexity`),

    .. math:: PPPL(\mathcal W) = \exp\Big(-\frac1N \sum_{W} \sum_t
              \log P_\theta(w_t \mid W_{\setminus t})\Big),

    :math:`N` the number of scored tokens; sentences with an unknown token are skipped (WARNING with the
    count), as the masked scorer skips them.  Returns ``(PPPL, N)``.  It is a pseudo-perplexity, not
    XLNet's permutation-LM perplexity (which would depend on drawn orders); it is comparable in kind, not
    in value, with the BERT models' PPPL (another architecture and objective).
    """
    texts = as_text(sentences)
    enc = (
        tokenizer(texts, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
        if texts
        else []
    )
    special = set(tokenizer.all_special_ids)
    unk = tokenizer.unk_token_id
    with_unk = sum(unk is not None and unk in ids for ids in enc)
    if with_unk:
        logger.warning(
            "xlnet_pseudo_perplexity: %d of %d sentence(s) have an unknown token and are skipped",
            with_unk,
            len(enc),
        )
    rows = [
        (ids, t)
        for ids in enc
        if unk is None or unk not in ids
        for t, tok in enumerate(ids)
        if tok not in special
    ]
    if not rows:
        raise ValueError("no held-out token could be scored")
    rows.sort(key=lambda r: -len(r[0]))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    device = next(model.parameters()).device
    dtype = next(model.parameters()).dtype
    was_training = model.training
    model.eval()
    total = 0.0
    try:
        with torch.no_grad():
            for s in range(0, len(rows), batch_size):
                chunk = rows[s : s + batch_size]
                b, width = len(chunk), len(chunk[0][0])
                ids = torch.full((b, width), int(pad), dtype=torch.long)
                att = torch.zeros((b, width), dtype=torch.long)
                perm = torch.zeros((b, width, width), dtype=dtype)
                tmap = torch.zeros((b, 1, width), dtype=dtype)
                target = torch.empty(b, dtype=torch.long)
                for r, (seq, t) in enumerate(chunk):
                    ids[r, : len(seq)] = torch.as_tensor(seq, dtype=torch.long)
                    att[r, : len(seq)] = 1
                    perm[r, :, t] = 1.0
                    tmap[r, 0, t] = 1.0
                    target[r] = seq[t]
                hid = model.transformer(
                    input_ids=ids.to(device),
                    attention_mask=att.to(device),
                    perm_mask=perm.to(device),
                    target_mapping=tmap.to(device),
                    use_mems=False,
                )[0][:, 0]
                logp = torch.log_softmax(model.lm_loss(hid).double(), dim=-1)
                total += float(logp.gather(1, target.to(device)[:, None]).sum())
    finally:
        model.train(was_training)
    return float(math.exp(-total / len(rows))), len(rows)
