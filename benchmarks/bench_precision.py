"""Half-precision scoring: how far bfloat16 / float16 weights move the scores from float32.

Same model, same pairs (the first ``n`` English CrowS-Pairs), scored with the weights in float32 and in
half precision (``biaskit.lm.get_lm(..., dtype=...)``; the log-softmax is taken in float32 either way):
``naive_s`` is the float32 time, ``fast_s`` the half-precision time, and ``note`` gives the deviation:
the mean and largest absolute change of the sentence scores (nats) and the share of pairs whose verdict
(more vs less stereotypical sentence preferred) stays the same.  On a CPU half precision is usually *slower*
(few kernels); the time ratio matters on a GPU, the deviation everywhere.  float16 runs only on a GPU.
"""

from __future__ import annotations

import time

import numpy as np
import torch


def _scores(lm, pairs, metric: str) -> tuple[np.ndarray, np.ndarray, float]:
    from biaskit.lm import score_pairs

    t0 = time.process_time() if lm.device.type == "cpu" else time.perf_counter()
    res = score_pairs(lm, pairs["sent_more"], pairs["sent_less"], metric, cache=False, progress=False)
    if lm.device.type == "cuda":
        torch.cuda.synchronize()
    dt = (time.process_time() if lm.device.type == "cpu" else time.perf_counter()) - t0
    sc = res.scores.sort_values("row")
    return sc["sent_more_score"].to_numpy(), sc["sent_less_score"].to_numpy(), dt


def run(quick: bool = False) -> list[dict]:
    from biaskit.data.datasets import load_crows_pairs_en
    from biaskit.lm import get_lm

    pairs = load_crows_pairs_en().head(60 if quick else 500)
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    rows = []
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for name, metric in (("en-mlm", "cp"), ("en-clm", "ll")):
            for device in devices:
                m32, l32, t32 = _scores(get_lm(name, device=device, dtype="float32"), pairs, metric)
                for dtype in ("bfloat16", "float16") if device == "cuda" else ("bfloat16",):
                    mh, lh, th = _scores(get_lm(name, device=device, dtype=dtype), pairs, metric)
                    dev = np.abs(np.r_[mh - m32, lh - l32])
                    same = float(np.mean((mh > lh) == (m32 > l32)))
                    rows.append(
                        {
                            "name": f"{name} {metric}, {len(pairs)} CrowS pairs, {dtype} vs float32 "
                            f"({device})",
                            "naive_s": t32,
                            "fast_s": th,
                            "note": f"|score change| mean {dev.mean():.3f}, max {dev.max():.3f} nats; "
                            f"same verdict in {same:.1%} of pairs",
                        }
                    )
    finally:
        torch.set_num_threads(old)
    return rows
