"""Batched causal log-likelihood scoring vs one sentence at a time.

Same model, same sentences (the Spanish CrowS-Pairs ``sent_more`` / ``sent_less``), same metric
(``"ll"``: the log-likelihood of each sentence after the BOS token):

* naive: one sentence per ``model(...)`` call, full-vocabulary log-softmax at every position, as
  lm-evaluation-harness's loop does with batch size 1 (a transcription, not biaskit's code);
* fast: :func:`biaskit.lm.score_sentences` (``batch_size`` sentences per forward pass, longest first,
  right padding + attention mask, the output layer only at the scored positions, no disk cache).

Models: random GPT-2-layout decoders (:func:`biaskit.lm.tiny_causal_lm`): the 2 x 128 shape of the
bundled ``en-clm`` with an 8,000-row output layer, and GPT-2 small's shape (12 layers x 768, 12 heads,
50,257-row output layer, 124 M parameters) on fewer sentences.  CPU runs use one thread and process CPU
seconds (:func:`time.process_time`).  When a CUDA GPU is present the 124 M model is also timed there
(wall-clock, synchronised) and reported as sentences per second.  Scores are checked to agree.
"""

from __future__ import annotations

import time

import numpy as np
import torch


def _naive(lm, sentences: list[str]) -> np.ndarray:
    out = []
    bos = lm.prefix_token_id
    with torch.inference_mode():
        for s in sentences:
            ids = [bos, *lm.tokenizer.encode(s.lower() if lm.lowercase else s, add_special_tokens=False)]
            x = torch.tensor([ids], device=lm.device)
            lp = torch.log_softmax(lm.model(x).logits[0].float(), dim=-1)
            out.append(float(lp[torch.arange(len(ids) - 1), x[0, 1:]].sum()))
    return np.asarray(out)


def _fast(lm, sentences: list[str], batch_size: int) -> np.ndarray:
    from biaskit.lm import score_sentences

    res = score_sentences(lm, sentences, "ll", batch_size=batch_size, cache=False, progress=False)
    return res.scores.sort_values("row")["score"].to_numpy()


def _timed(fn, *, cuda: bool) -> tuple[float, np.ndarray]:
    if cuda:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        v = fn()
        torch.cuda.synchronize()
        return time.perf_counter() - t0, v
    t0 = time.process_time()
    v = fn()
    return time.process_time() - t0, v


def run(quick: bool = False) -> list[dict]:
    from biaskit.data.datasets import load_crows_pairs_es
    from biaskit.lm import tiny_causal_lm

    pairs = load_crows_pairs_es("original")
    all_sents = [s for p in zip(pairs["sent_more"], pairs["sent_less"], strict=True) for s in p]
    old_threads = torch.get_num_threads()
    rows = []
    configs = [
        (
            "GPT-2 2x128 (en-clm shape), vocab 8000",
            {"hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 512},
            8000,
            60 if quick else 600,
        ),
        (
            "GPT-2 small shape 12x768, vocab 50257 (124M, random)",
            {
                "hidden_size": 768,
                "num_hidden_layers": 12,
                "num_attention_heads": 12,
                "intermediate_size": 3072,
            },
            50257,
            10 if quick else 60,
        ),
    ]
    try:
        torch.set_num_threads(1)
        for label, kw, vocab, n in configs:
            lm = tiny_causal_lm(seed=0, vocab_size=5000, model_vocab_size=vocab, initializer_range=0.02, **kw)
            sents = all_sents[:n]
            t_naive, naive = _timed(lambda lm=lm, sents=sents: _naive(lm, sents), cuda=False)
            t_fast, fast = _timed(lambda lm=lm, sents=sents: _fast(lm, sents, 64), cuda=False)
            rows.append(
                {
                    "name": f"causal ll, {label}, {n} sentences (CPU, 1 thread)",
                    "naive_s": t_naive,
                    "fast_s": t_fast,
                    "note": f"max |diff| {np.max(np.abs(naive - fast)):.1e}; "
                    f"{n / t_fast:,.0f} vs {n / t_naive:,.0f} sentences/s",
                }
            )
            if torch.cuda.is_available() and vocab == 50257:
                lm.model.to("cuda")
                m = min(len(all_sents), 300 if quick else 3000)
                big = all_sents[:m]
                _fast(lm, big[:64], 64)  # warm-up (kernels, allocator)
                t_naive, naive = _timed(lambda lm=lm, big=big: _naive(lm, big), cuda=True)
                t_fast, fast = _timed(lambda lm=lm, big=big: _fast(lm, big, 128), cuda=True)
                rows.append(
                    {
                        "name": f"causal ll, {label}, {m} sentences ({torch.cuda.get_device_name(0)})",
                        "naive_s": t_naive,
                        "fast_s": t_fast,
                        "note": f"max |diff| {np.max(np.abs(naive - fast)):.1e}; "
                        f"{m / t_fast:,.0f} vs {m / t_naive:,.0f} sentences/s (wall clock)",
                    }
                )
    finally:
        torch.set_num_threads(old_threads)
    return rows
