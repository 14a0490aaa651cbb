"""results/<name>.json writer."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from biaskit.reporting import save_figure, save_results
from biaskit.results import TestResult


def test_save_results_roundtrip(tmp_path):
    res = TestResult(statistic=1.0, p_value=0.2, method="m")
    path = save_results(
        "demo",
        {"a": np.float32(1.5), "nan": float("nan"), "test": res, "arr": np.arange(2)},
        out_dir=tmp_path,
    )
    data = json.loads(path.read_text(encoding="utf-8"))
    assert path.name == "demo.json"
    assert data["notebook"] == "demo"
    assert data["results"]["a"] == 1.5
    assert data["results"]["nan"] is None
    assert data["results"]["test"]["p_value"] == 0.2
    assert data["results"]["arr"] == [0, 1]


def test_save_figure(tmp_path):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    path = save_figure(fig, "demo_fig", out_dir=tmp_path)
    plt.close(fig)
    assert path.exists() and path.stat().st_size > 1000
    assert path.read_bytes()[:4] == b"\x89PNG"
