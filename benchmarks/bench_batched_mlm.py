"""Batched masked-LM metrics vs one forward pass per sentence, on tiny in-process models.

Four metrics, each comparing the batched biaskit routine with a naive reference on the same
model and the same sentences (the references are minimal copies of the independent
computations in the tests, kept here so that tests and benchmarks stay independent):

* **Barza PPD** (seed 002 section 4.2.2):
  :func:`biaskit.metrics.gender_templates.pronoun_probability_difference` vs one unbatched ``model(...)`` call
  per template sentence, full logits, softmax at the mask
  (``tests/metrics/test_gender_templates.py::_naive_mask_probs``).
* **Indirect bias score** (seed 004 Algorithm 3.1): :func:`biaskit.metrics.indirect_bias.indirect_bias_scores`
  (one pass per (template, context word) reading every predicted word at once, batched) vs
  Algorithm 3.1 literally, one forward pass per (template, context, predicted word) on the
  verbatim Appendix templates (``tests/metrics/test_indirect_bias.py::_ref_bias_scores``).
* **LPBS** (Kurita et al. 2019; seed 001 section 4.3): :meth:`biaskit.metrics.lpbs.LPBS.associations`
  (deduplicated sequences, batched, output layer only at the read positions) vs two unbatched
  forward passes per asc value (``tests/metrics/test_lpbs.py::_direct_asc``).
* **SEAT encoder** (seed 001 section 4.2): :class:`biaskit.embeddings.encoders.TransformerEncoder`
  (``target_pooled``, batches of 32) vs one sentence per pass of the full masked LM with
  ``output_hidden_states`` (``tests/embeddings/test_encoders.py::_manual``).

Models: :func:`biaskit.lm.builtin.tiny_masked_lm` (random BERT, 2 layers x 64 hidden, WordPiece
vocabulary trained on the metric's own sentences) and :func:`biaskit.metrics.indirect_bias.tiny_bridge_lm`
(1 layer x 16 hidden, as in the tests).  Such models are overhead-bound: the ratios show what
batching removes (per-call Python/tokeniser/framework cost and the full-vocabulary output layer
at every position), not what a 110M-parameter model would gain on a CPU (see ``bench_pll.py``
for larger encoders).  Everything runs with ``torch.set_num_threads(1)`` and is timed in process
CPU seconds (:func:`time.process_time`).  Results are checked to agree (max abs difference in
``note``; float32 weights, so agreement is to ~1e-6).
"""

from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd
import torch

_SMALL_BERT = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 256,
}


def _check(diff: float, what: str, tol: float) -> None:
    if not np.isfinite(diff) or diff > tol:
        raise AssertionError(f"{what}: batched and naive results differ (max |diff| = {diff})")


# ============================================================================================= Barza PPD
def _naive_mask_probs(lm, sentence: str, words: tuple[str, str]) -> np.ndarray:
    tok, model = lm.tokenizer, lm.model
    enc = tok(sentence.replace("[MASK]", tok.mask_token), return_tensors="pt")
    pos = int((enc["input_ids"][0] == tok.mask_token_id).nonzero()[0, 0])
    with torch.no_grad():
        logits = model(**enc).logits[0, pos].double()
    p = torch.exp(logits - torch.logsumexp(logits, 0))
    return np.array([float(p[tok.convert_tokens_to_ids(w)]) for w in words])


def _barza(quick: bool) -> dict:
    from biaskit.lm import tiny_masked_lm
    from biaskit.metrics import gender_templates as gt

    instances = gt.build_tbd_instances("clean")
    texts = [
        s.replace("[MASK]", p) for s in instances["sentence"].unique() for p in ("he", "she", "his", "her")
    ]
    lm = tiny_masked_lm(seed=3, texts=texts, **_SMALL_BERT)
    sub = instances.groupby("category").head(10).reset_index(drop=True) if quick else instances
    t0 = time.process_time()
    out = gt.pronoun_probability_difference(lm, sub, batch_size=64)
    fast_s = time.process_time() - t0
    t0 = time.process_time()
    ref = np.array(
        [
            _naive_mask_probs(lm, s, gt.DEFAULT_PRONOUNS[slot])
            for s, slot in zip(sub["sentence"], sub["slot"], strict=True)
        ]
    )
    naive_s = time.process_time() - t0
    diff = float(np.abs(out[["p_male", "p_female"]].to_numpy() - ref).max())
    _check(diff, "Barza PPD", 1e-5)
    return {
        "name": f"Barza PPD: {len(sub)} template sentences, BERT 2x64",
        "fast_s": fast_s,
        "naive_s": naive_s,
        "note": f"CPU s, 1 thread; batch 64 vs 1 sentence per pass; max |diff| = {diff:.1e}",
    }


# ============================================================================================= indirect bias
_PLURALS = {"nanny": "nannies", "air traffic controller": "air traffic controllers"}


def _ref_sentence(lm, verbatim: str, ctx_ph: str, pred_ph: str, context: str | None) -> str:
    tok = lm.tokenizer
    t = verbatim.replace("’", "'").replace(ctx_ph + " s ", ctx_ph + "s ")
    sentinel = "\x01"
    if context is None:
        t = t.replace(ctx_ph + "s", sentinel).replace(ctx_ph, sentinel)
    else:
        t = t.replace(ctx_ph + "s", _PLURALS.get(context, context + "s")).replace(ctx_ph, context)
    t = t.replace(pred_ph, sentinel)
    if lm.lowercase:
        t = t.lower()
    return t.replace(sentinel, tok.mask_token)


def _ref_prob(lm, sentence: str, which: int, word: str) -> float:
    tok = lm.tokenizer
    ids = tok(sentence, return_tensors="pt")["input_ids"]
    pos = (ids[0] == tok.mask_token_id).nonzero().flatten().tolist()[which]
    wid = tok.convert_tokens_to_ids(tok.tokenize(word.lower() if lm.lowercase else word))
    if len(wid) != 1:
        raise ValueError(f"{word!r} is not a single token")
    with torch.no_grad():
        logits = lm.model(ids).logits[0, pos]
    return torch.softmax(logits.double(), dim=-1)[wid[0]].item()


def _ref_bias_scores(lm, ts_raw: dict, contexts: list[str], predicted: list[str]) -> pd.DataFrame:
    """BS(c, w) = log(mean_i p_tgt_i / mean_i p_prior_i), template by template, word by word."""
    ctx_ph, pred_ph = ts_raw["context_placeholder"], ts_raw["predicted_placeholder"]
    out = pd.DataFrame(index=contexts, columns=list(predicted), dtype=float)
    for w in predicted:
        p_prior, p_tgt = [], {c: [] for c in contexts}
        for t in ts_raw["templates"]:
            prior_which = 0 if t.index(pred_ph) < t.index(ctx_ph) else 1
            p_prior.append(_ref_prob(lm, _ref_sentence(lm, t, ctx_ph, pred_ph, None), prior_which, w))
            for c in contexts:
                p_tgt[c].append(_ref_prob(lm, _ref_sentence(lm, t, ctx_ph, pred_ph, c), 0, w))
        for c in contexts:
            out.loc[c, w] = np.log(np.mean(p_tgt[c]) / np.mean(p_prior))
    return out


def _indirect(quick: bool) -> dict:
    from scipy.stats import pearsonr

    from biaskit.core.paths import data_dir
    from biaskit.data import louis_alexandre as la
    from biaskit.lm.xlnet import tiny_bridge_lm
    from biaskit.metrics import indirect_bias as ib

    bridge = tiny_bridge_lm("bert", seed=3)
    raw = json.loads((data_dir() / "louis-alexandre" / "templates.json").read_text(encoding="utf-8"))["sets"]
    words = la.load_louis_alexandre_words()
    if quick:
        targets = ["nanny", "engineer", "air traffic controller"]
        names = ["Emma", "Noah", "Olivia", "Liam", "Mary", "John", "Linda", "James", "Susan", "Robert"]
        traits = ["ambitious", "caring", "lazy"]
        s1_slice, n_direct = slice(6, 12), 5
    else:
        targets = ["nanny", "engineer", "air traffic controller", "architect", "baker", "doctor", "farmer"]
        names = words["name"][:60]
        traits = ["ambitious", "caring", "lazy", "aggressive", "alert", "amiable", "angry", "active"]
        s1_slice, n_direct = slice(0, 26), 10
    sets = la.load_louis_alexandre_templates()
    s1 = la.TemplateSet(
        "occupation-name",
        "occupation",
        "name",
        sets["occupation-name"].templates[s1_slice],
        sets["occupation-name"].forms[s1_slice],
    )
    s2 = sets["name-trait"]
    dt = sets["occupation-trait"].subset(n_direct)
    t0 = time.process_time()
    res = ib.indirect_bias_scores(
        bridge, targets, traits, names, s1, s2, direct_templates=dt, cache=False, progress=False
    )
    fast_s = time.process_time() - t0
    bridge_names = list(res.bs1.columns)
    kept_traits = list(res.bs2.columns)
    s1_raw = dict(raw["occupation-name"], templates=raw["occupation-name"]["templates"][s1_slice])
    d_raw = dict(raw["occupation-trait"], templates=raw["occupation-trait"]["templates"][:n_direct])
    t0 = time.process_time()
    bs1 = _ref_bias_scores(bridge.lm, s1_raw, targets, bridge_names)
    bs2 = _ref_bias_scores(bridge.lm, raw["name-trait"], bridge_names, kept_traits)
    direct = _ref_bias_scores(bridge.lm, d_raw, targets, kept_traits)
    ibs = np.array(
        [
            [pearsonr(bs1.loc[t].to_numpy(float), bs2[f].to_numpy(float)).statistic for f in kept_traits]
            for t in targets
        ]
    )
    naive_s = time.process_time() - t0
    diff = max(
        float(np.abs(res.bs1.loc[targets, bridge_names].to_numpy() - bs1.to_numpy(float)).max()),
        float(np.abs(res.bs2.loc[bridge_names, kept_traits].to_numpy() - bs2.to_numpy(float)).max()),
        float(np.abs(res.direct.loc[targets, kept_traits].to_numpy() - direct.to_numpy(float)).max()),
        float(np.abs(res.ibs.loc[targets, kept_traits].to_numpy() - ibs).max()),
    )
    _check(diff, "indirect bias", 1e-4)
    n_naive = (
        len(bridge_names) * len(s1_raw["templates"]) * (1 + len(targets))
        + len(kept_traits) * len(raw["name-trait"]["templates"]) * (1 + len(bridge_names))
        + len(kept_traits) * n_direct * (1 + len(targets))
    )
    return {
        "name": (
            f"Indirect bias (Alg. 3.1): {len(targets)} targets x {len(bridge_names)} names x "
            f"{len(kept_traits)} traits, tiny BERT 1x16"
        ),
        "fast_s": fast_s,
        "naive_s": naive_s,
        "note": f"CPU s, 1 thread; naive {n_naive} forward passes; max |diff| (BS1, BS2, direct, IBS) = "
        f"{diff:.1e}",
    }


# ============================================================================================= LPBS
def _probs(lm, text: str) -> tuple[list[int], torch.Tensor]:
    ids = lm.tokenizer(text)["input_ids"]
    with torch.no_grad():
        logits = lm.model(input_ids=torch.tensor([ids])).logits[0]
    return ids, torch.softmax(logits.double(), dim=-1)


def _direct_asc(lm, template: str, target: str, attribute: str) -> float:
    """log(p_tgt / p_prior) from two forward passes (single-token target, one mask per slot)."""
    from biaskit.metrics.lpbs import ATTRIBUTE, TARGET

    tok = lm.tokenizer
    tid = tok.convert_tokens_to_ids(target)
    if tid == tok.unk_token_id:
        raise ValueError(f"target {target!r} is not a single token")
    tgt_text = template.replace(TARGET, "[MASK]").replace(ATTRIBUTE, attribute.lower())
    prior_text = template.replace(TARGET, "[MASK]").replace(ATTRIBUTE, "[MASK]")
    which_prior = 0 if template.index(TARGET) < template.index(ATTRIBUTE) else 1
    ids, p = _probs(lm, tgt_text)
    m = next(i for i, t in enumerate(ids) if t == tok.mask_token_id)
    p_tgt = float(p[m, tid])
    ids, p = _probs(lm, prior_text)
    m = [i for i, t in enumerate(ids) if t == tok.mask_token_id][which_prior]
    return float(np.log(p_tgt / float(p[m, tid])))


def _lpbs(quick: bool) -> list[dict]:
    from biaskit.lm import tiny_masked_lm
    from biaskit.metrics.lpbs import ATTRIBUTE, LPBS, TARGET, load_lpbs

    rows = []
    specs = ["bfh:en/LPBS/LPBS_7"] if quick else ["bfh:en/LPBS/LPBS_7", "bfh:en/LPBS/LPBS_1"]
    for spec in specs:
        q = load_lpbs(spec)
        texts = [
            t.replace(TARGET, w).replace(ATTRIBUTE, a).lower()
            for g, ts in q.templates.items()
            for t in ts
            for w in (*q.X.get(g, ()), *q.Y.get(g, ()))
            for a in (*q.A, *q.B)
        ]
        lm = tiny_masked_lm(seed=5, texts=texts * 3, vocab_size=400, **_SMALL_BERT)
        t0 = time.process_time()
        df = LPBS(batch_size=32).associations(q, lm)
        fast_s = time.process_time() - t0
        t0 = time.process_time()
        ref = [
            _direct_asc(lm, r.template, r.target, r.attribute)
            for r in df[["template", "target", "attribute"]].itertuples()
        ]
        naive_s = time.process_time() - t0
        diff = float(np.abs(df["asc"].to_numpy() - np.array(ref)).max())
        _check(diff, f"LPBS {spec}", 1e-4)
        rows.append(
            {
                "name": f"LPBS asc: {spec.split('/')[-1]}, {len(df)} asc values, BERT 2x64",
                "fast_s": fast_s,
                "naive_s": naive_s,
                "note": (
                    f"CPU s, 1 thread; {df.attrs['n_forward_sequences']} distinct sequences vs "
                    f"{2 * len(df)} passes; max |diff| = {diff:.1e}"
                ),
            }
        )
    return rows


# ============================================================================================= SEAT encoder
def _manual_pooled(lm, sentence: str, start: int, end: int) -> np.ndarray:
    tok = lm.tokenizer
    ids = tok(sentence, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        out = lm.model(input_ids=ids, output_hidden_states=True)
    hs = out.hidden_states[-1][0].double().numpy()
    first = 1 + len(tok.tokenize(sentence[:start]))
    k = len(tok.tokenize(sentence[start:end]))
    return hs[first : first + k].mean(axis=0)


def _seat(quick: bool) -> dict:
    from biaskit.embeddings.encoders import TransformerEncoder
    from biaskit.lm import tiny_masked_lm
    from biaskit.metrics.seat import load_seat

    specs = (
        ["may2019:sent-weat1"]
        if quick
        else ["may2019:sent-weat1", "may2019:sent-weat6", "may2019:sent-weat7"]
    )
    items = []
    for spec in specs:
        q = load_seat(spec)
        items += [it for role in ("X", "Y", "A", "B") for it in getattr(q, role)]
    items = list(dict.fromkeys(it for it in items if it.span is not None))
    if quick:
        items = items[::6]  # every 6th sentence: all four roles, a few seconds
    sentences = [it.text for it in items]
    spans = [it.span for it in items]
    lm = tiny_masked_lm(seed=3, texts=sentences, vocab_size=600, **_SMALL_BERT)
    enc = TransformerEncoder(lm.model, lm.tokenizer, "target_pooled", batch_size=32)
    t0 = time.process_time()
    fast = enc.encode(sentences, spans)
    fast_s = time.process_time() - t0
    t0 = time.process_time()
    ref = np.vstack([_manual_pooled(lm, it.text, it.start, it.end) for it in items])
    naive_s = time.process_time() - t0
    if not fast.ok.all():
        raise AssertionError(f"{int((~fast.ok).sum())} sentences could not be embedded")
    diff = float(np.abs(fast.vectors - ref).max())
    _check(diff, "SEAT encoder", 1e-4)
    return {
        "name": f"SEAT encoder (target_pooled): {len(items)} sentences "
        f"({', '.join(s.split('-')[-1] for s in specs)}), BERT 2x64",
        "fast_s": fast_s,
        "naive_s": naive_s,
        "note": f"CPU s, 1 thread; batch 32 vs 1; max |diff| = {diff:.1e}",
    }


def run(quick: bool = False) -> list[dict]:
    old_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return [_barza(quick), _indirect(quick), *_lpbs(quick), _seat(quick)]
    finally:
        torch.set_num_threads(old_threads)


if __name__ == "__main__":  # pragma: no cover
    for r in run(quick=True):
        print(r, f"ratio {r['naive_s'] / r['fast_s']:.1f}x")
