"""One-shot GPU figures: ``make bench-gpu`` or ``python -m benchmarks.gpu [--dry-run]``; one JSON.

On a CUDA device, within a time budget (default 8 minutes, wall clock), each section timed with the device
synchronised and its peak GPU memory recorded:

1. ``pll``: masked ``cp`` scores at BETO's shape (12 x 768, 12 heads, 31,002-row output layer, random
   weights): biaskit's batched scorer against one forward pass per masked token (the official
   ``metric.py`` loop, :func:`biaskit._testing.reference_pair_scores`), sentences per second, largest score
   difference;
2. ``causal``: causal ``ll`` at GPT-2 small's shape (random weights, ``en-clm``'s tokenizer) against
   lm-evaluation-harness ``HFLM.loglikelihood`` (batch sizes 16 and 64) when it is installed;
3. ``precision``: bfloat16 and float16 weights against float32 on the bundled ``en-mlm`` (``cp``) and
   ``en-clm`` (``ll``) and the two base-shaped models: mean / largest score change, pairs whose verdict stays,
   time;
4. ``training``: tokens per second of the bundled ``en-mlm`` and ``en-clm`` recipes (their first steps,
   bfloat16 mixed precision as the recipes run, and float32);
5. ``device``: the card's name, its memory, torch / CUDA versions.

``--dry-run`` runs every section on the CPU with tiny sizes (a few sentences, tiny models, two training
steps), so that the script is tested without a GPU (``tests/project/test_gpu_script.py``); its JSON says
``"dry_run": true`` and its numbers mean nothing.  Nothing in biaskit depends on a GPU.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch


class _Clock:
    """Wall clock with the device synchronised, and the time left of the budget."""

    def __init__(self, device: str, budget_s: float) -> None:
        self.cuda = device.startswith("cuda")
        self.start = time.perf_counter()
        self.budget_s = budget_s

    def now(self) -> float:
        if self.cuda:
            torch.cuda.synchronize()
        return time.perf_counter()

    def left(self) -> float:
        return self.budget_s - (time.perf_counter() - self.start)

    def timed(self, fn: Callable[[], Any]) -> tuple[float, Any]:
        t0 = self.now()
        out = fn()
        return self.now() - t0, out


def _peak_mib(device: str) -> float | None:
    if not device.startswith("cuda"):
        return None
    return torch.cuda.max_memory_allocated() / 2**20


def _reset_peak(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


# ----------------------------------------------------------------------------------------------- sections
def section_pll(device: str, dry: bool, clock: _Clock) -> dict[str, Any]:
    from biaskit._testing import reference_pair_scores
    from biaskit.data.datasets import load_crows_pairs_es
    from biaskit.lm import score_pairs, tiny_masked_lm

    shape = (
        {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}
        if dry
        else {
            "hidden_size": 768,
            "num_hidden_layers": 12,
            "num_attention_heads": 12,
            "intermediate_size": 3072,
        }
    )
    lm = tiny_masked_lm(
        seed=0,
        initializer_range=0.02,
        vocab_size=5000,
        model_vocab_size=None if dry else 31002,
        device=device,
        **shape,
    )
    pairs = load_crows_pairs_es("original")
    n_fast, n_naive = (6, 3) if dry else (600, 30)
    _reset_peak(device)
    score_pairs(
        lm, pairs["sent_more"][:8], pairs["sent_less"][:8], "cp", cache=False, progress=False
    )  # warm-up
    t_fast, fast = clock.timed(
        lambda: score_pairs(
            lm, pairs["sent_more"][:n_fast], pairs["sent_less"][:n_fast], "cp", cache=False, progress=False
        )
    )
    peak_fast = _peak_mib(device)
    sub = pairs.iloc[fast.scores["row"].to_numpy()[:n_naive]]
    _reset_peak(device)
    t_naive, ref = clock.timed(
        lambda: [
            reference_pair_scores(lm, a, b, "cp")
            for a, b in zip(sub["sent_more"], sub["sent_less"], strict=True)
        ]
    )
    diff = float(
        np.max(
            np.abs(
                np.array([r["sent1_score"] for r in ref])
                - fast.scores["sent_more_score"].to_numpy()[: len(ref)]
            )
        )
    )
    n_s = 2 * len(fast.scores)
    return {
        "model": "BERT 12x768, 31,002-row output (BETO's shape, random)"
        if not dry
        else "tiny BERT (dry run)",
        "batched": {
            "pairs": len(fast.scores),
            "seconds": t_fast,
            "sentences_per_s": n_s / t_fast,
            "peak_mib": peak_fast,
            "batching": fast.batching,
        },
        "one_forward_per_mask": {
            "pairs": len(ref),
            "seconds": t_naive,
            "sentences_per_s": 2 * len(ref) / t_naive,
            "peak_mib": _peak_mib(device),
        },
        "speedup_per_sentence": (n_s / t_fast) / (2 * len(ref) / t_naive),
        "max_abs_diff": diff,
    }


def section_causal(device: str, dry: bool, clock: _Clock) -> dict[str, Any]:
    from benchmarks import _peers as P
    from biaskit.lm import score_pairs, tiny_causal_lm

    lm = tiny_causal_lm(seed=0, device=device) if dry else P.base_shaped_causal(device=device)
    more, less = P.crows_pairs_for(lm, 10 if dry else 1500, masked=False)
    sents = [s for p in zip(more, less, strict=True) for s in p]
    _reset_peak(device)
    score_pairs(lm, more[:8], less[:8], "ll", cache=False, progress=False)  # warm-up
    t_b, res = clock.timed(lambda: score_pairs(lm, more, less, "ll", cache=False, progress=False))
    out: dict[str, Any] = {
        "model": "GPT-2 small shape (random, en-clm tokenizer)" if not dry else "tiny GPT-2 (dry run)",
        "pairs": len(more),
        "biaskit": {
            "seconds": t_b,
            "sentences_per_s": len(sents) / t_b,
            "peak_mib": _peak_mib(device),
            "batching": res.batching,
        },
    }
    why = P.peer_missing("lm-eval")
    if why is not None:
        out["harness"] = {"skipped": why}
        return out
    ours = np.ravel(np.column_stack([res.scores["sent_more_score"], res.scores["sent_less_score"]]))
    for bs in (16, 64):
        if clock.left() < 60 and not dry:
            out[f"harness_bs{bs}"] = {"skipped": "time budget spent"}
            continue
        h = P.harness(lm, bs)
        _reset_peak(device)
        t_h, v = clock.timed(lambda h=h: P.harness_loglikelihood(h, sents))
        out[f"harness_bs{bs}"] = {
            "seconds": t_h,
            "sentences_per_s": len(sents) / t_h,
            "peak_mib": _peak_mib(device),
            "max_abs_diff": float(np.max(np.abs(v - ours))),
            "ratio_harness_over_biaskit": t_h / t_b,
        }
    return out


def section_precision(device: str, dry: bool, clock: _Clock) -> dict[str, Any]:
    from benchmarks import _peers as P
    from biaskit.data.datasets import load_crows_pairs_en
    from biaskit.lm import get_lm, score_pairs, tiny_causal_lm, tiny_masked_lm

    pairs = load_crows_pairs_en().head(20 if dry else 1000)
    dtypes = ("bfloat16",) if not device.startswith("cuda") else ("bfloat16", "float16")
    models: list[tuple[str, str, Callable[[torch.dtype], Any]]] = [
        ("en-mlm", "cp", lambda dt: get_lm("en-mlm", device=device, dtype=str(dt).split(".")[-1])),
        ("en-clm", "ll", lambda dt: get_lm("en-clm", device=device, dtype=str(dt).split(".")[-1])),
    ]
    if dry:
        models += [
            ("tiny BERT", "cp", lambda dt: _cast(tiny_masked_lm(seed=0, device=device), dt)),
            ("tiny GPT-2", "ll", lambda dt: _cast(tiny_causal_lm(seed=0, device=device), dt)),
        ]
    else:
        models += [
            ("BERT-base shape", "cp", lambda dt: P.base_shaped_masked(device=device, dtype=dt)),
            ("GPT-2 small shape", "ll", lambda dt: P.base_shaped_causal(device=device, dtype=dt)),
        ]
    out: dict[str, Any] = {}
    for label, metric, make in models:
        if clock.left() < 45 and not dry:
            out[label] = {"skipped": "time budget spent"}
            continue
        base = None
        entry: dict[str, Any] = {"metric": metric, "pairs": len(pairs)}
        for dt in (torch.float32, *[getattr(torch, d) for d in dtypes]):
            lm = make(dt)
            _reset_peak(device)
            t, res = clock.timed(
                lambda lm=lm, metric=metric: score_pairs(
                    lm, pairs["sent_more"], pairs["sent_less"], metric, cache=False, progress=False
                )
            )
            sc = res.scores.sort_values("row")
            m, le = sc["sent_more_score"].to_numpy(), sc["sent_less_score"].to_numpy()
            name = str(dt).split(".")[-1]
            entry[name] = {"seconds": t, "peak_mib": _peak_mib(device)}
            if base is None:
                base = (m, le)
            else:
                dev_ = np.abs(np.r_[m - base[0], le - base[1]])
                entry[name].update(
                    {
                        "mean_abs_change": float(dev_.mean()),
                        "max_abs_change": float(dev_.max()),
                        "same_verdict": float(np.mean((m > le) == (base[0] > base[1]))),
                    }
                )
        out[label] = entry
    return out


def _cast(lm: Any, dtype: torch.dtype) -> Any:
    lm.model.to(dtype=dtype)
    lm._fingerprint = None
    return lm


def section_training(device: str, dry: bool, clock: _Clock) -> dict[str, Any]:
    from biaskit.training import recipes as tm
    from biaskit.training.pretrain import train_causal_lm, train_masked_lm

    steps = 2 if dry else 200
    out: dict[str, Any] = {}
    for name, trainer in (("en-mlm", train_masked_lm), ("en-clm", train_causal_lm)):
        config, init = tm.recipe(name)
        train, _, _ = tm.recipe_data(name)
        if dry:
            train = train[:256]
        entry: dict[str, Any] = {}
        for precision in ("bfloat16", "float32"):
            if clock.left() < 30 and not dry:
                entry[precision] = {"skipped": "time budget spent"}
                continue
            cfg = replace(config, max_steps=steps, checkpoint_every=0, device=device, precision=precision)
            _reset_peak(device)
            with tempfile.TemporaryDirectory() as tmp:
                res = trainer(
                    train, Path(tmp), cfg, init_model=tm.model_path(init), progress=False, resume=False
                )
            entry[precision] = {
                "steps": res.steps,
                "train_seconds": res.train_seconds,
                "tokens_per_s": res.tokens_per_second,
                "final_loss": res.final_loss,
                "peak_mib": _peak_mib(device),
            }
        out[name] = entry
    return out


SECTIONS: dict[str, Callable[[str, bool, _Clock], dict[str, Any]]] = {
    "pll": section_pll,
    "causal": section_causal,
    "precision": section_precision,
    "training": section_training,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes on the CPU (tests the script)")
    parser.add_argument("--out", default="results/gpu_benchmarks.json")
    parser.add_argument("--budget-s", type=float, default=480.0, help="wall-clock budget of the whole run")
    parser.add_argument("--only", default=None, help="comma-separated sections: " + ", ".join(SECTIONS))
    args = parser.parse_args(argv)
    if args.dry_run:
        device = "cpu"
    elif torch.cuda.is_available():
        device = "cuda"
    else:
        print("no CUDA device: run with --dry-run to test the script on the CPU", file=sys.stderr)
        return 2
    clock = _Clock(device, args.budget_s)
    record: dict[str, Any] = {
        "dry_run": bool(args.dry_run),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "device": {
            "kind": device,
            "name": torch.cuda.get_device_name(0) if device == "cuda" else platform.processor() or "cpu",
            "memory_mib": torch.cuda.get_device_properties(0).total_memory / 2**20
            if device == "cuda"
            else None,
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
        },
        "budget_s": args.budget_s,
    }
    only = set(args.only.split(",")) if args.only else set(SECTIONS)
    for name, fn in SECTIONS.items():
        if name not in only:
            continue
        if clock.left() <= 0:
            record[name] = {"skipped": "time budget spent"}
            continue
        t0 = time.perf_counter()
        try:
            record[name] = fn(device, args.dry_run, clock)
        except Exception as exc:  # one failing section must not lose the others' numbers
            record[name] = {"error": f"{type(exc).__name__}: {exc}"}
        record[name]["section_seconds"] = time.perf_counter() - t0
        print(f"{name}: {time.perf_counter() - t0:.1f} s", flush=True)
    record["total_seconds"] = time.perf_counter() - clock.start
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2, default=str))
    print(f"wrote {out}")
    return 0 if not any(isinstance(v, dict) and "error" in v for v in record.values()) else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
