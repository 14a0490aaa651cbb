"""The one-shot GPU script (``benchmarks/gpu.py``, ``make bench-gpu``) runs end to end on the CPU in its dry
mode.

No GPU is needed anywhere: ``--dry-run`` takes every section (PLL batched vs one pass per mask, causal vs the
harness, half vs full precision, training tokens per second) through tiny sizes on the CPU and writes the
JSON a GPU run writes.  The numbers are checked for what they must be (positive speeds, agreeing scores),
not for their size.
"""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow
def test_gpu_script_dry_run_writes_every_section(tmp_path, one_torch_thread):
    from benchmarks import gpu

    out = tmp_path / "gpu.json"
    assert gpu.main(["--dry-run", "--out", str(out)]) == 0
    rec = json.loads(out.read_text())
    assert rec["dry_run"] is True and rec["device"]["kind"] == "cpu"
    assert set(gpu.SECTIONS) <= set(rec)
    for name in gpu.SECTIONS:
        assert "error" not in rec[name], rec[name]

    pll = rec["pll"]
    assert pll["batched"]["sentences_per_s"] > 0 and pll["one_forward_per_mask"]["sentences_per_s"] > 0
    assert pll["max_abs_diff"] < 1e-4  # batched and one-pass-per-mask scores agree
    assert 0 <= pll["batched"]["batching"]["pad_share"] < 1

    causal = rec["causal"]
    assert causal["biaskit"]["sentences_per_s"] > 0
    for key in ("harness_bs16", "harness_bs64"):
        if key in causal and "seconds" in causal[key]:
            assert causal[key]["max_abs_diff"] < 1e-4
    if "harness" in causal:  # lm-eval not installed: the row says why
        assert "skipped" in causal["harness"]

    prec = rec["precision"]
    for label in ("en-mlm", "en-clm"):
        assert prec[label]["bfloat16"]["max_abs_change"] >= prec[label]["bfloat16"]["mean_abs_change"] >= 0
        assert 0 <= prec[label]["bfloat16"]["same_verdict"] <= 1

    for name in ("en-mlm", "en-clm"):
        for precision in ("bfloat16", "float32"):
            run = rec["training"][name][precision]
            assert run["steps"] == 2 and run["tokens_per_s"] > 0


def test_gpu_script_refuses_to_run_without_a_gpu_unless_dry(tmp_path, monkeypatch, capsys):
    import torch

    from benchmarks import gpu

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu.main(["--out", str(tmp_path / "x.json")]) == 2
    assert "--dry-run" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("section", ["pll"])
def test_gpu_script_runs_one_section(tmp_path, section, one_torch_thread):
    from benchmarks import gpu

    out = tmp_path / "one.json"
    assert gpu.main(["--dry-run", "--only", section, "--out", str(out)]) == 0
    rec = json.loads(out.read_text())
    assert section in rec and not (set(gpu.SECTIONS) - {section}) & set(rec)


def test_benchmark_page_is_generated_from_a_record_and_says_when_gpu_figures_are_missing(tmp_path):
    """The Benchmarks page (docs/_generated/benchmarks.md, written at docs build time) is rendered by
    benchmarks.report from a record; without a GPU record (or with a dry run's) it says that the GPU figures
    are not yet measured."""
    from benchmarks import report

    record = {
        "meta": {
            "date": "2026-01-01",
            "machine": "Test CPU",
            "threads": 1,
            "cores": 2,
            "versions": {"torch": "x"},
        },
        "rows": [
            {
                "module": "bench_peers",
                "name": "causal ll vs lm-evaluation-harness, en-clm, 3 CrowS pairs (6 sentences)",
                "peer": "lm-eval harness bs 16",
                "naive_s": 2.6,
                "fast_s": 2.0,
                "max_abs_diff": 3e-5,
                "pad_share": 0.02,
                "pad_share_before": 0.2,
                "shared_share": 0.22,
            },
            {"module": "bench_peers", "name": "masked cp vs mlm-bias, en-mlm", "skipped": "not installed"},
            {
                "module": "bench_peers",
                "name": "roofline: causal ll, GPT-2 small shape, 6 sentences, vs 1-thread sgemm",
                "naive_s": 0.9,
                "fast_s": 1.0,
                "gflops": 81.0,
                "sgemm_gflops": 90.0,
            },
        ],
    }
    path = report.RECORDS / "test-peers.json"
    for gpu in (None, {"dry_run": True}):
        text = report.render(record, path, gpu, None)
        assert "1.30×" in text and "3.0e-05" in text and "2.00 % (20.00 %)" in text
        assert "skipped: not installed" in text
        assert "| causal ll, GPT-2 small shape, 6 sentences | 1.00 s | 81.0 | 90.0 | **90 %** |" in text
        assert "**Not yet measured.**" in text
    dask = {
        "meta": {"date": "2026-01-02", "machine": "Test CPU", "cores": 2, "commit": "abc1234"},
        "rows": [
            {"name": "metric-trust study, 4 controls", "naive_s": 300.0, "fast_s": 160.0, "note": "same"}
        ],
    }
    text = report.render(record, path, None, None, dask, report.RECORDS / "test-dask.json")
    assert "## On Dask workers" in text
    assert "| metric-trust study, 4 controls | 300.00 s | 160.00 s | 1.88x | same |" in text
    assert "## On Dask workers" not in report.render(record, path, None, None)
