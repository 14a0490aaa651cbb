"""Batched pseudo-log-likelihood scoring vs the official one-forward-per-mask loop.

Same model (a randomly initialised 4-layer x 256-hidden BERT with a 5000-piece WordPiece
vocabulary built from the bundled Spanish CrowS-Pairs; run once with a 5000-row output layer
and once with BETO's 31,002 rows, the size that matters for the thesis's model), same
sentences (the first ``n`` Spanish CrowS-Pairs pairs, i.e. 2n sentences), same metric:

* naive: :func:`biaskit._testing.reference_pair_scores`, a transcription of
  nyu-mll/crows-pairs ``metric.py`` ``mask_unigram``: one ``model(...)`` call per masked
  token, full logits, one sentence at a time;
* fast: :func:`biaskit.lm.score_pairs` (``batch_size`` masked copies per forward pass,
  padding + attention mask, last encoder layer and output layer only at the masked
  positions, no disk cache).

Both run with ``torch.set_num_threads(1)`` and are timed in process CPU seconds
(:func:`time.process_time`), so the ratio does not depend on how busy the shared machine
is.  The scores are checked to agree (max abs difference reported in ``note``).

What to expect on a CPU: batching removes the per-call overhead and the full-vocabulary
output layer at every position, but each masked copy still needs its own pass through the
encoder, so once the encoder dominates (4x256 and larger) the gain is a few-fold; it is
large for small models (overhead-bound) and on GPUs (where one copy leaves the device idle).
A third configuration (2x64) shows the overhead-bound case, and a fourth has BETO's own
shape (12 layers x 768, 12 heads, 31,002-row output layer; random weights) on a few pairs:
there the encoder is almost all the work in both paths (about 1.4x fewer floating-point
operations in the batched one), and the rest of the measured gain (3.3x on a 2-core CPU)
comes from reading the weights once per batch instead of once per masked copy.
"""

from __future__ import annotations

import time

import numpy as np
import torch


def run(quick: bool = False) -> list[dict]:
    from biaskit.data.datasets import load_crows_pairs_es
    from biaskit.lm import tiny_masked_lm

    old_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        n = 15 if quick else 150
        pairs = load_crows_pairs_es("original")
        rows = []
        configs = [
            # (label, tiny_masked_lm kwargs, metrics, number of pairs)
            (
                "BERT 4x256, vocab 5000",
                {
                    "hidden_size": 256,
                    "num_hidden_layers": 4,
                    "num_attention_heads": 4,
                    "intermediate_size": 1024,
                    "vocab_size": 5000,
                },
                ("cp", "sz"),
                n,
            ),
            (
                "BERT 4x256, BETO-size output layer 31002",
                {
                    "hidden_size": 256,
                    "num_hidden_layers": 4,
                    "num_attention_heads": 4,
                    "intermediate_size": 1024,
                    "vocab_size": 5000,
                    "model_vocab_size": 31002,
                },
                ("cp",),
                n,
            ),
            (
                "BERT 2x64, vocab 1500",
                {
                    "hidden_size": 64,
                    "num_hidden_layers": 2,
                    "num_attention_heads": 2,
                    "intermediate_size": 256,
                    "vocab_size": 1500,
                },
                ("cp",),
                n,
            ),
            (
                "BERT 12x768 (BETO's shape), output layer 31002",
                {
                    "hidden_size": 768,
                    "num_hidden_layers": 12,
                    "num_attention_heads": 12,
                    "intermediate_size": 3072,
                    "vocab_size": 5000,
                    "model_vocab_size": 31002,
                },
                ("cp",),
                2 if quick else 12,
            ),
        ]
        for label, kwargs, metrics, n_pairs in configs:
            lm = tiny_masked_lm(seed=0, initializer_range=0.02, **kwargs)
            for metric in metrics:
                t = _time_pair_scoring(lm, pairs.iloc[:n_pairs], metric, time.process_time)
                rows.append(
                    {
                        "name": f"PLL {metric}: {t['pairs']} pairs, {t['masks']} masks, {label}",
                        "fast_s": t["fast_s"],
                        "naive_s": t["naive_s"],
                        "note": f"CPU s, 1 thread; max |diff| = {t['diff']:.1e}",
                    }
                )
        # The same comparison with every CPU core torch may use (its default thread count), in
        # wall-clock seconds: the setting a user runs.  One masked copy per forward pass cannot
        # use several cores; a batch of copies can.
        torch.set_num_threads(old_threads)
        label, kwargs, _, n_pairs = configs[1]
        rows.append(_wall_clock(pairs.iloc[:n_pairs], label, kwargs, "cpu", f"{old_threads} threads"))
        # On a GPU (when there is one): both paths on the device, wall-clock seconds.  Every
        # score ends in ``.cpu()`` / ``.item()``, which waits for the device, so no extra
        # synchronisation is needed.
        if torch.cuda.is_available():
            gpu = torch.cuda.get_device_name(0)
            for label, kwargs, _, _n in (configs[1], configs[3]):
                rows.append(_wall_clock(pairs.iloc[:n], label, kwargs, "cuda", gpu))
        return rows
    finally:
        torch.set_num_threads(old_threads)


def _time_pair_scoring(lm, df, metric: str, clock) -> dict:
    """Score ``df``'s pairs batched and with the one-forward-per-mask loop, timed with ``clock``.

    Returns the two times, the number of pairs and masked tokens scored, and the largest
    absolute difference between the two paths' sentence scores (both sentences of a pair).
    """
    from biaskit._testing import reference_pair_scores
    from biaskit.lm import score_pairs

    t0 = clock()
    fast = score_pairs(
        lm, df["sent_more"], df["sent_less"], metric, batch_size=128, cache=False, progress=False
    )
    fast_s = clock() - t0
    sub = df.iloc[fast.scores["row"].to_numpy()]
    t0 = clock()
    ref = [
        reference_pair_scores(lm, a, b, metric)
        for a, b in zip(sub["sent_more"], sub["sent_less"], strict=True)
    ]
    naive_s = clock() - t0
    diff = max(
        np.abs(np.array([r["sent1_score"] for r in ref]) - fast.scores["sent_more_score"].to_numpy()).max(),
        np.abs(np.array([r["sent2_score"] for r in ref]) - fast.scores["sent_less_score"].to_numpy()).max(),
    )
    masks = int(fast.scores["n_more"].sum() + fast.scores["n_less"].sum())
    return {"fast_s": fast_s, "naive_s": naive_s, "diff": diff, "pairs": len(sub), "masks": masks}


def _wall_clock(df, label: str, kwargs: dict, device: str, where: str) -> dict:
    """Batched vs one-forward-per-mask ``cp`` scores on ``device``, wall-clock seconds."""
    from biaskit.lm import tiny_masked_lm

    lm = tiny_masked_lm(seed=0, initializer_range=0.02, device=device, **kwargs)
    cuda = device.startswith("cuda")
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    t = _time_pair_scoring(lm, df, "cp", time.perf_counter)
    extra = ""
    if cuda:  # sentences per second of the batched path and the peak memory of both paths
        extra = (
            f"; batched {2 * t['pairs'] / t['fast_s']:.0f} sentences/s"
            f"; peak GPU memory {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB"
        )
    return {
        "name": f"PLL cp: {t['pairs']} pairs, {label}, {where}",
        "fast_s": t["fast_s"],
        "naive_s": t["naive_s"],
        "note": f"wall-clock s, {where}; max |diff| = {t['diff']:.1e}{extra}",
    }


if __name__ == "__main__":  # pragma: no cover
    for r in run(quick=True):
        print(r)
