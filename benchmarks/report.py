"""The Benchmarks page of the docs from a benchmark record (``python -m benchmarks.report``; ``make docs``
writes it into ``docs/_generated/benchmarks.md`` at build time).

Every number of the page comes from one record file of ``benchmarks/records/`` (written by
``python -m benchmarks --only peers --record ...``: the rows of one run with its date, machine, thread count
and versions) and, when a GPU was lent, from the JSON of ``make bench-gpu``; nothing is typed by hand.
Without a GPU record the page says that the GPU figures are not yet measured.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RECORDS = ROOT / "benchmarks" / "records"


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def _latest(pattern: str) -> Path | None:
    found = sorted(RECORDS.glob(pattern))
    return found[-1] if found else None


def _s(x: float) -> str:
    return f"{x:.2f} s" if x >= 0.1 else f"{x * 1000:.1f} ms"


def _pct(x: float | None, digits: int = 1) -> str:
    return "" if x is None else f"{100 * x:.{digits}f} %"


def _peer_rows(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "| comparison | peer | peer time | biaskit | peer / biaskit | largest score difference | "
        "biaskit padding (before) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r.get("name", "").startswith("roofline") or r.get("module") != "bench_peers":
            continue
        if r.get("skipped"):
            out.append(f"| {r['name']} | | skipped: {r['skipped']} | | | | |")
            continue
        pad = ""
        if r.get("pad_share") is not None:
            pad = f"{_pct(r['pad_share'], 2)} ({_pct(r.get('pad_share_before'), 2)})"
            if r.get("shared_share"):
                pad += f"; prefix tree: {_pct(r['shared_share'], 0)} fewer tokens"
        out.append(
            f"| {r['name']} | {r.get('peer', '')} | {_s(r['naive_s'])} | {_s(r['fast_s'])} | "
            f"**{r['naive_s'] / r['fast_s']:.2f}×** | {r.get('max_abs_diff', float('nan')):.1e} | {pad} |"
        )
    return out


def _roofline_rows(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "| scorer, shape | biaskit CPU time | GFLOP/s reached | one-thread sgemm, same shapes | "
        "share of sgemm |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        if not r.get("name", "").startswith("roofline") or r.get("skipped"):
            continue
        out.append(
            f"| {r['name'].removeprefix('roofline: ').split(', vs')[0]} | {_s(r['fast_s'])} | "
            f"{r['gflops']:.1f} | {r['sgemm_gflops']:.1f} | **{_pct(r['gflops'] / r['sgemm_gflops'], 0)}** |"
        )
    return out


def _target(goal: str, met: bool, detail: str) -> str:
    """One target's line: the goal, reached or not, and the figures behind it."""
    return f"- {goal}: **{'reached' if met else 'not reached'}** ({detail})."


def _targets(rows: list[dict[str, Any]]) -> list[str]:
    """The issue's targets, reached or not, from the rows."""
    ok = [r for r in rows if not r.get("skipped") and r.get("module") == "bench_peers"]
    causal = [r for r in ok if r["name"].startswith("causal ll vs lm-evaluation-harness")]
    roof = [r for r in ok if r["name"].startswith("roofline")]
    slower = [r for r in ok if not r["name"].startswith("roofline") and r["naive_s"] < r["fast_s"]]
    out = ["## Targets", ""]
    if causal:
        ratios = ", ".join(f"{r['naive_s'] / r['fast_s']:.2f}× ({r['name'].split(', ')[1]})" for r in causal)
        met = all(r["naive_s"] / r["fast_s"] >= 1.2 for r in causal)
        out.append(
            _target("causal log-likelihood at least 1.2× lm-evaluation-harness on both models", met, ratios)
        )
    if roof:
        shares = ", ".join(
            f"{r['name'].split(', ')[0].removeprefix('roofline: ')} "
            f"{_pct(r['gflops'] / r['sgemm_gflops'], 0)}"
            for r in roof
        )
        met = all(r["gflops"] / r["sgemm_gflops"] >= 0.9 for r in roof)
        out.append(
            _target(
                "causal and masked scorers at 90 % or more of the one-thread sgemm throughput", met, shares
            )
        )
    if slower:
        names = ", ".join(
            f"{r['name'].split(' vs ')[0]} ({r['naive_s'] / r['fast_s']:.2f}×: {_s(r['fast_s'])} against "
            f"{_s(r['naive_s'])})"
            for r in slower
        )
        out.append(f"- slower than the peer: {names}; the values agree (table).")
    return [*out, ""]


def _gpu_section(gpu: dict[str, Any] | None, path: Path | None) -> list[str]:
    head = ["## GPU", ""]
    if gpu is None or gpu.get("dry_run"):
        return [
            *head,
            "**Not yet measured.** No GPU was lent to the session that built these benchmarks. "
            "On a machine with a",
            "CUDA device, `make bench-gpu` (`python -m benchmarks.gpu`, at most 8 minutes) writes",
            "`results/gpu_benchmarks.json`: PLL batched against one forward pass per mask at BETO's shape, "
            "causal",
            "log-likelihood against lm-evaluation-harness at GPT-2 small's shape, "
            "bfloat16 / float16 against float32",
            "(score changes and verdicts), training tokens per second of the bundled recipes and the peak "
            "GPU memory",
            "of each. Copy it to `benchmarks/records/<date>-gpu.json` and rerun `python -m "
            "benchmarks.report`",
            "to put the figures here. (`python -m benchmarks.gpu --dry-run` runs the same script on the CPU "
            "with",
            "tiny sizes; `tests/project/test_gpu_script.py` does so.)",
            "",
        ]
    d = gpu["device"]
    lines = [
        *head,
        f"From `{_rel(path) if path else 'gpu JSON'}` ({gpu['date']}, {d['name']}, "
        f"{d.get('memory_mib', 0) / 1024:.0f} GiB, torch {d['torch']}, CUDA {d['cuda']}).",
        "",
    ]
    pll = gpu.get("pll", {})
    if "batched" in pll:
        lines += [
            f"- PLL `cp` at BETO's shape: batched {pll['batched']['sentences_per_s']:.0f} sentences/s "
            f"({pll['batched']['peak_mib']:.0f} MiB peak) against one forward pass per mask "
            f"{pll['one_forward_per_mask']['sentences_per_s']:.1f} sentences/s: "
            f"**{pll['speedup_per_sentence']:.0f}×**; largest score difference {pll['max_abs_diff']:.1e}.",
        ]
    ca = gpu.get("causal", {})
    if "biaskit" in ca:
        hs = [
            f"batch {k[-2:]}: {v['sentences_per_s']:.0f} sentences/s ({v['ratio_harness_over_biaskit']:.2f}× "
            "slower)"
            for k, v in ca.items()
            if k.startswith("harness_bs") and "seconds" in v
        ]
        lines += [
            f"- causal `ll` at GPT-2 small's shape, {ca['pairs']} pairs: biaskit "
            f"{ca['biaskit']['sentences_per_s']:.0f} sentences/s ({ca['biaskit']['peak_mib']:.0f} MiB peak); "
            "lm-evaluation-harness " + ("; ".join(hs) if hs else "skipped") + ".",
        ]
    for label, e in gpu.get("precision", {}).items():
        if not isinstance(e, dict) or "float32" not in e:
            continue
        parts = [
            f"{dt}: mean / largest change {e[dt]['mean_abs_change']:.3f} / {e[dt]['max_abs_change']:.3f} "
            f"nats, same verdict {e[dt]['same_verdict']:.1%}, "
            f"{e['float32']['seconds'] / e[dt]['seconds']:.1f}× the float32 speed"
            for dt in ("bfloat16", "float16")
            if dt in e and "mean_abs_change" in e[dt]
        ]
        lines.append(f"- {label} `{e['metric']}`, {e['pairs']} pairs: " + "; ".join(parts) + ".")
    for name, e in gpu.get("training", {}).items():
        if not isinstance(e, dict):
            continue
        parts = [
            f"{p}: {v['tokens_per_s']:,.0f} tokens/s ({v['peak_mib']:.0f} MiB peak)"
            for p, v in e.items()
            if isinstance(v, dict) and "tokens_per_s" in v
        ]
        if parts:
            lines.append(f"- training, `{name}` recipe: " + "; ".join(parts) + ".")
    return [*lines, ""]


def _dask_section(dask: dict[str, Any] | None, path: Path | None) -> list[str]:
    """The rows of the newest ``*-dask.json`` record (``python -m benchmarks --only trust_study --record
    benchmarks/records/<date>-dask.json``): one process against Dask workers, wall clock."""
    if dask is None or path is None:
        return []
    meta = dask["meta"]
    lines = [
        "## On Dask workers",
        "",
        f"Record: `{_rel(path)}`, {meta['date']}, {meta['machine']} ({meta.get('cores')} cores), "
        f"biaskit commit {meta.get('commit', '')}"
        + (" (quick sizes)" if meta.get("quick") else "")
        + ". Wall clock.",
        "",
        "| job | one process | 2 Dask workers | ratio | check |",
        "|---|---|---|---|---|",
    ]
    for r in dask["rows"]:
        if r.get("skipped"):
            lines.append(f"| {r['name']} | - | - | - | skipped: {r['skipped']} |")
            continue
        lines.append(
            f"| {r['name']} | {_s(r['naive_s'])} | {_s(r['fast_s'])} | {r['naive_s'] / r['fast_s']:.2f}x | "
            f"{r.get('note', '')} |"
        )
    return [*lines, ""]


def render(
    record: dict[str, Any],
    record_path: Path,
    gpu: dict[str, Any] | None,
    gpu_path: Path | None,
    dask: dict[str, Any] | None = None,
    dask_path: Path | None = None,
) -> str:
    meta, rows = record["meta"], record["rows"]
    v = meta.get("versions", {})
    versions = ", ".join(f"{k} {val}" for k, val in v.items() if val)
    lines = [
        "# Benchmarks: biaskit against the tools it replaces",
        "",
        "<!-- generated by `python -m benchmarks.report` from the record named below; "
        "do not edit by hand -->",
        "",
        "`make bench` compares every vectorised routine with a naive reference (the Measurements page) and,",
        "in `benchmarks/bench_peers.py`, with the tools a user would otherwise run, **side by",
        "side in one run**: the same model object, the same sentences or word sets, float32 everywhere, one",
        "thread for every tool (torch, BLAS and the tokenizers), process CPU seconds, the contenders",
        "interleaved and the best of the repeats kept (the machine is shared). Every row gives the largest",
        "difference between the two tools' scores, so that no speed is bought with other numbers.",
        "",
        f"Record: `{_rel(record_path)}`, {meta['date']}, {meta['machine']} "
        f"({meta.get('cpu_capability', '')}, {meta.get('cores')} cores, {meta['threads']} thread per tool), "
        f"Python {meta.get('python', '')}, {versions}; biaskit commit {meta.get('commit', '')}"
        + (" (quick sizes)" if meta.get("quick") else "")
        + ".",
        "",
        *_targets(rows),
        "## Against the peers",
        "",
        *_peer_rows(rows),
        "",
        '- **Causal log-likelihood** (`score_pairs(lm, more, less, "ll")`) against lm-evaluation-harness',
        '  `HFLM.loglikelihood` on `("", sentence)` requests, the code path of its `crows_pairs` task; '
        "the peer",
        "  time is the better of batch sizes 16 and 64. biaskit sorts every sentence of a job once, cuts",
        "  batches by a token budget (4,096 token slots on a CPU) with at most 2 % padding per full batch, "
        "feeds",
        "  no attention mask to a right-padded causal model, runs GPT-2's tanh-GELU as PyTorch's fused "
        "kernel",
        "  of the same formula, applies the output layer only where a token is read, and reads a beginning",
        "  that several sentences share once: the sentences are packed into the rows of a prefix tree with",
        "  position ids and a tree-shaped attention mask, so that each sentence sees exactly its own past "
        "(the",
        "  two sentences of a CrowS pair share the words before their difference). The scores are the same",
        "  to float rounding (largest difference in the table).",
        "- **Masked scores** against the mlm-bias package: `cp` against its CrowS-Pairs scoring (`BiasMLM`",
        "  with the `csps` measure, which masks the shared tokens as the official `metric.py` does, one",
        "  forward pass per sentence over all of its masked copies, full logits), `sz` against its",
        "  `compute_csps` with every token masked. biaskit batches the copies of many sentences by the token",
        "  budget and runs the last encoder layer and the output layer at the masked position only.",
        "- **WEFE's metrics** against WEFE 1.0.1 on its `test_model.kv` and the queries of",
        "  `tests/metrics/test_embedding_bias.py`; biaskit's permutation test and bootstrap interval, "
        "which WEFE",
        "  does not compute, are switched off (`n_permutations=0`, `n_bootstrap=0`), so both compute the",
        "  estimate with its per-word details.",
        "",
        "## Roofline",
        "",
        "Floating-point throughput of biaskit's scorers at GPT-2 small's and BERT-base's shape (random",
        "weights, 12 layers × 768, the bundled tokenizers' 8,000-word output layer): the FLOPs of the matrix",
        "products the scorer must do on the real tokens (every layer on every token read; for masked copies",
        "the last layer's keys and values on every token and the rest of it, the head transform and the",
        "output layer at the mask only; attention scores, under 1 %, left out) over its CPU time, against",
        "float32 matrix products of the same shapes with 2,048 rows on one thread (FLOP-weighted).",
        "",
        *_roofline_rows(rows),
        "",
        *_gpu_section(gpu, gpu_path),
        *_dask_section(dask, dask_path),
        "## Reproduce",
        "",
        "```",
        "make bench                                   # every benchmark; installs the peers when it can",
        "python -m benchmarks --only peers --record benchmarks/records/$(date +%F)-peers.json",
        "python -m benchmarks --only trust_study --record benchmarks/records/$(date +%F)-dask.json",
        "python -m benchmarks.report                  # this page, from the newest records",
        "make bench-gpu                               # on a CUDA machine: results/gpu_benchmarks.json",
        "```",
        "",
        "The peers are pinned in `requirements-bench.txt` and installed by `make bench-peers` (lm-eval and",
        "mlm-bias without their declared dependencies, which would change the locked stack; see that file).",
        "Offline, `make bench` runs every other row and prints why the peer rows were skipped.",
        "",
    ]
    return "\n".join(lines)


def page_text(record: Path | None = None, gpu: Path | None = None) -> str | None:
    """The page from ``record`` (default: the newest ``*-peers.json`` of ``benchmarks/records/``) and ``gpu``
    (default: the newest ``*-gpu.json``); None when there is no record.  The docs build calls this."""
    rec_path = record or _latest("*-peers.json")
    if rec_path is None:
        return None
    gpu_path = gpu or _latest("*-gpu.json")
    gpu_rec = json.loads(gpu_path.read_text()) if gpu_path else None
    dask_path = _latest("*-dask.json")
    return render(
        json.loads(rec_path.read_text()),
        rec_path.resolve(),
        gpu_rec,
        gpu_path.resolve() if gpu_path else None,
        json.loads(dask_path.read_text()) if dask_path else None,
        dask_path.resolve() if dask_path else None,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--record", default=None, help="record JSON (default: the newest *-peers.json)")
    parser.add_argument("--gpu", default=None, help="GPU JSON of make bench-gpu (default: newest *-gpu.json)")
    parser.add_argument("--out", default=str(ROOT / "docs" / "_generated" / "benchmarks.md"))
    args = parser.parse_args(argv)
    text = page_text(Path(args.record) if args.record else None, Path(args.gpu) if args.gpu else None)
    if text is None:
        raise SystemExit(
            "no record in benchmarks/records/: run python -m benchmarks --only peers --record ..."
        )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
