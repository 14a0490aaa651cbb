"""Shared pytest fixtures.  Tests never use the network and never read ../shared."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Each test session writes caches and results into a temporary folder, never into ~/.cache."""
    base = tmp_path_factory.getbasetemp()
    monkeypatch.setenv("BIASKIT_CACHE_DIR", str(base / "cache"))
    monkeypatch.setenv("BIASKIT_RESULTS_DIR", str(base / "results"))
