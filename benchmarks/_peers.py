"""Shared pieces of the peer benchmarks (``bench_peers.py``) and the GPU script (``gpu.py``).

* the models: the bundled ``en-clm`` / ``en-mlm`` and random models of GPT-2 small's and BERT-base's shape
  (12 layers x 768, 12 heads, 3,072-wide feed-forward) that use their tokenizers (8,000 word pieces);
* the peers' code paths, called as their tasks call them: lm-evaluation-harness ``HFLM.loglikelihood`` with
  empty contexts (its ``crows_pairs`` task), the mlm-bias package's CrowS-Pairs scoring (``BiasMLM`` with
  the ``csps`` measure) and its ``compute_csps`` with every token masked (the Salazar PLL);
* FLOP counts of the scorers and the one-thread sgemm reference of the roofline.

Peers are optional (the ``bench`` extra, ``requirements-bench.txt``): :func:`peer_missing` says why a peer
row is skipped.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch

#: the shapes of the benchmarks: GPT-2 small / BERT-base (layers, width, heads, feed-forward width)
BASE_SHAPE = {"layers": 12, "hidden": 768, "heads": 12, "ffn": 3072}

#: peer -> (import name, pip requirement); the pins are in requirements-bench.txt
PEERS = {
    "lm-eval": ("lm_eval.models.huggingface", "lm-eval==0.4.13 (with --no-deps, see requirements-bench.txt)"),
    "mlm-bias": ("mlm_bias", "mlm-bias==0.1.7 (with --no-deps)"),
    "wefe": ("wefe.metrics", "wefe==1.0.1 (with --no-deps)"),
}


def peer_missing(peer: str) -> str | None:
    """``None`` when ``peer`` imports, else why its rows are skipped and how to install it."""
    module, req = PEERS[peer]
    try:
        importlib.import_module(module)
    except Exception as exc:  # ImportError, or a dependency of the peer that is missing
        return (
            f"{peer} is not importable ({type(exc).__name__}: {exc}); install it with `make bench-peers` "
            f"({req})"
        )
    return None


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Torch, BLAS and the tokenizers on one thread (restored afterwards)."""
    from threadpoolctl import threadpool_limits

    old = torch.get_num_threads()
    env = os.environ.get("TOKENIZERS_PARALLELISM")
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    torch.set_num_threads(1)
    try:
        with threadpool_limits(1):
            yield
    finally:
        torch.set_num_threads(old)
        if env is None:
            os.environ.pop("TOKENIZERS_PARALLELISM", None)
        else:
            os.environ["TOKENIZERS_PARALLELISM"] = env


def cpu_clock() -> float:
    return time.process_time()


def interleaved(fns: dict[str, Callable[[], Any]], repeat: int, clock: Callable[[], float] = cpu_clock):
    """Run every function ``repeat`` times, interleaved (a, b, c, a, b, c, ...); best time and last result of
    each.

    The machine is shared: interleaving spreads a busy spell over every contender, and the minimum is the
    run least disturbed."""
    best: dict[str, float] = {}
    out: dict[str, Any] = {}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = clock()
            out[name] = fn()
            dt = clock() - t0
            best[name] = min(best.get(name, float("inf")), dt)
    return best, out


# ------------------------------------------------------------------------------------------------ models
def _seeded_random_lm(lm_class, model_class, cfg, base, name: str, device: str, dtype: torch.dtype):
    """``model_class(cfg)`` with weights drawn from torch seed 0 (the global RNG left as it was), moved to
    ``device`` / ``dtype`` in eval mode, wrapped as ``lm_class`` with ``base``'s tokenizer and casing."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = model_class(cfg).eval().to(device=device, dtype=dtype)
    return lm_class(
        model=model,
        tokenizer=base.tokenizer,
        name=name,
        lowercase=base.lowercase,
        in_process=True,
        is_fallback=True,
    )


def base_shaped_causal(device: str = "cpu", dtype: torch.dtype = torch.float32):
    """A random GPT-2 of GPT-2 small's shape (12 x 768) with ``en-clm``'s tokenizer and 8,000-word output
    layer."""
    from transformers import GPT2Config, GPT2LMHeadModel

    from biaskit.lm import CausalLM, get_lm

    base = get_lm("en-clm")
    c = base.model.config
    cfg = GPT2Config(
        vocab_size=c.vocab_size,
        n_embd=BASE_SHAPE["hidden"],
        n_layer=BASE_SHAPE["layers"],
        n_head=BASE_SHAPE["heads"],
        n_inner=BASE_SHAPE["ffn"],
        n_positions=max(128, c.n_positions),
        bos_token_id=c.bos_token_id,
        eos_token_id=c.eos_token_id,
        pad_token_id=c.pad_token_id,
    )
    return _seeded_random_lm(
        CausalLM, GPT2LMHeadModel, cfg, base, "gpt2-small-shape(random, en-clm tokenizer)", device, dtype
    )


def base_shaped_masked(device: str = "cpu", dtype: torch.dtype = torch.float32):
    """A random BERT of BERT-base's shape (12 x 768) with ``en-mlm``'s tokenizer and 8,000-word output
    layer."""
    from transformers import BertConfig, BertForMaskedLM

    from biaskit.lm import MaskedLM, get_lm

    base = get_lm("en-mlm")
    c = base.model.config
    cfg = BertConfig(
        vocab_size=c.vocab_size,
        hidden_size=BASE_SHAPE["hidden"],
        num_hidden_layers=BASE_SHAPE["layers"],
        num_attention_heads=BASE_SHAPE["heads"],
        intermediate_size=BASE_SHAPE["ffn"],
        max_position_embeddings=max(128, c.max_position_embeddings),
        pad_token_id=c.pad_token_id,
    )
    return _seeded_random_lm(
        MaskedLM, BertForMaskedLM, cfg, base, "bert-base-shape(random, en-mlm tokenizer)", device, dtype
    )


# ------------------------------------------------------------------------------------------------ inputs
def crows_pairs_for(lm: Any, n_pairs: int | None, *, masked: bool) -> tuple[list[str], list[str]]:
    """The first ``n_pairs`` English CrowS-Pairs that every tool scores the same way.

    Left out: pairs with a sentence longer than the model window (the harness would cut it from the left,
    biaskit reports it), pairs identical after tokenisation, and for masked models pairs that share no token
    (mlm-bias cannot score them).  Sentences are lower-cased first when the model is uncased, for every tool.
    """
    from biaskit.data.datasets import load_crows_pairs_en
    from biaskit.lm import crows_template
    from biaskit.lm.causal import encode_causal_sentence

    df = load_crows_pairs_en()
    more, less = [], []
    for a, b in zip(df["sent_more"], df["sent_less"], strict=True):
        if lm.lowercase:
            a, b = a.lower(), b.lower()
        if masked:
            ia, ib = lm.tokenizer.encode(a), lm.tokenizer.encode(b)
        else:
            ia, ib = encode_causal_sentence(lm, a)[0], encode_causal_sentence(lm, b)[0]
        if max(len(ia), len(ib)) > lm.max_length or ia == ib:
            continue
        if masked and len(crows_template(ia, ib)[0]) <= 2:
            continue
        more.append(a)
        less.append(b)
        if n_pairs is not None and len(more) >= n_pairs:
            break
    return more, less


# ------------------------------------------------------------------------------------------------ peers
def harness(lm: Any, batch_size: int) -> Any:
    """lm-evaluation-harness's ``HFLM`` around the model object (no copy, no download)."""
    import logging

    from lm_eval.models.huggingface import HFLM

    for name in ("lm_eval", "lm-eval"):
        logging.getLogger(name).setLevel(logging.ERROR)
    return HFLM(pretrained=lm.model, tokenizer=lm.tokenizer, batch_size=batch_size, device=str(lm.device))


def harness_loglikelihood(hflm: Any, sentences: list[str]) -> np.ndarray:
    """``HFLM.loglikelihood`` of ``("", sentence)`` requests: the code path of the ``crows_pairs`` task."""
    from lm_eval.api.instance import Instance

    reqs = [Instance("loglikelihood", {}, ("", s), i) for i, s in enumerate(sentences)]
    return np.array([r[0] for r in hflm.loglikelihood(reqs, disable_tqdm=True)], dtype=np.float64)


def mlm_bias_scorer(lm: Any, more: list[str], less: list[str]) -> Any:
    """mlm-bias's ``BiasMLM`` on ``lm``'s model and tokenizer.

    Its constructor reads a model name and builds ``AutoModelForMaskedLM.from_config`` (random weights), so
    the object is assembled here with the same attributes around the benchmark's model instead."""
    from mlm_bias import BiasMLM
    from mlm_bias.bias_datasets import BiasDataset
    from mlm_bias.bias_results import BiasResults
    from mlm_bias.utils import SUPPORTED_MEASURES, SUPPORTED_MEASURES_ATTENTION

    bm = BiasMLM.__new__(BiasMLM)
    bm.results = BiasResults()
    bm.dataset = BiasDataset(["x"] * len(more), list(more), list(less))
    bm.model_name_or_path = lm.name
    bm.model = lm.model
    bm.tokenizer = lm.tokenizer
    bm.mask_id = lm.tokenizer.mask_token_id
    bm.device = None
    special = lm.tokenizer.encode("test", add_special_tokens=True)
    bm.special_tok_s, bm.special_tok_e = special[0], special[-1]
    bm.supported_measures = SUPPORTED_MEASURES
    bm.supported_measures_attention = SUPPORTED_MEASURES_ATTENTION
    return bm


def mlm_bias_cp(lm: Any, more: list[str], less: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """mlm-bias's CrowS-Pairs score (``evaluate(measures=["csps"], attention=False)``), both sides."""
    import contextlib as _c
    import io

    bm = mlm_bias_scorer(lm, more, less)
    with _c.redirect_stdout(io.StringIO()), torch.inference_mode():  # its progress bar prints to stdout
        bm.evaluate(measures=["csps"], attention=False)
    return np.asarray(bm.eval_results["S1"]["csps"]), np.asarray(bm.eval_results["S2"]["csps"])


def mlm_bias_pll(lm: Any, sentences: list[str]) -> np.ndarray:
    """mlm-bias's ``compute_csps`` with every token but [CLS]/[SEP] masked: the Salazar PLL (``sz``)."""
    from mlm_bias.utils import compute_csps

    out = []
    with torch.inference_mode():
        for s in sentences:
            ids = lm.tokenizer.encode(s, return_tensors="pt")
            out.append(
                compute_csps(lm.model, ids, list(range(ids.shape[1])), lm.tokenizer.mask_token_id)["csps"]
            )
    return np.asarray(out, dtype=np.float64)


# ------------------------------------------------------------------------------------------------ FLOPs
def _layer_flops_per_token(cfg: Any) -> float:
    d = cfg.hidden_size
    ffn = getattr(cfg, "intermediate_size", None) or getattr(cfg, "n_inner", None) or 4 * d
    return 2.0 * (4 * d * d + 2 * d * ffn)


def causal_flops(lm: Any, tokens: int, reads: int) -> float:
    """Matrix-product FLOPs of a causal pass: every layer on ``tokens`` tokens, the output layer on ``reads``
    read positions (attention scores left out: under 1 % at these lengths)."""
    cfg = lm.model.config
    return (
        tokens * cfg.num_hidden_layers * _layer_flops_per_token(cfg)
        + reads * 2.0 * cfg.hidden_size * cfg.vocab_size
    )


def masked_flops(lm: Any, copy_lengths: np.ndarray) -> float:
    """Matrix-product FLOPs of biaskit's masked pass over masked copies of the given lengths: every layer but
    the last on every token; the last layer's keys and values on every token and the rest of it, the head
    transform and the output layer at the masked position only."""
    cfg = lm.model.config
    d, L = cfg.hidden_size, cfg.num_hidden_layers
    tok = float(np.sum(copy_lengths))
    n = float(len(copy_lengths))
    per_layer = _layer_flops_per_token(cfg)
    return tok * ((L - 1) * per_layer + 2.0 * 2 * d * d) + n * (
        per_layer - 2.0 * 2 * d * d + 2.0 * d * d + 2.0 * d * cfg.vocab_size
    )


def layer_shapes(lm: Any) -> list[tuple[int, int]]:
    """``(in, out)`` of the matrix products of one layer and of the output layer."""
    cfg = lm.model.config
    d = cfg.hidden_size
    ffn = getattr(cfg, "intermediate_size", None) or getattr(cfg, "n_inner", None) or 4 * d
    qkv = [(d, 3 * d)] if lm.kind == "causal" else [(d, d)] * 3
    return [*qkv, (d, d), (d, ffn), (ffn, d), (d, cfg.vocab_size)]


def sgemm_gflops(shapes: list[tuple[int, int]], rows: int = 2048, repeat: int = 3) -> float:
    """One-thread float32 matrix-product throughput on ``shapes`` (``rows x in @ in x out``), FLOP-weighted:
    total FLOPs over the summed best times.  The roofline's ceiling: what the scorer's products alone run
    at."""
    flops = secs = 0.0
    for k, n in shapes:
        a, b = torch.randn(rows, k), torch.randn(k, n)
        best = float("inf")
        for _ in range(repeat):
            t0 = time.process_time()
            a @ b
            best = min(best, time.process_time() - t0)
        flops += 2.0 * rows * k * n
        secs += best
    return flops / secs / 1e9


# ------------------------------------------------------------------------------------------------ record
def machine_info(threads: int = 1) -> dict[str, Any]:
    """What a benchmark record names: date, CPU (``lscpu``'s model name), threads, versions, commit."""
    import datetime
    import importlib.metadata as md
    import platform
    import subprocess

    model = platform.processor() or ""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        model = next(
            (ln.split(":", 1)[1].strip() for ln in out.splitlines() if ln.startswith("Model name")), model
        )
    except OSError:
        pass
    versions = {}
    for dist in ("torch", "transformers", "tokenizers", "numpy", "lm-eval", "mlm-bias", "wefe", "accelerate"):
        try:
            versions[dist] = md.version(dist)
        except md.PackageNotFoundError:
            versions[dist] = None
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        commit = ""
    return {
        "date": datetime.date.today().isoformat(),
        "machine": model,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cores": os.cpu_count(),
        "threads": threads,
        "python": platform.python_version(),
        "versions": versions,
        "commit": commit,
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }
