"""Word lists and the OOV policy."""

from __future__ import annotations

import json
import logging

import pytest

from biaskit.data import wordlists as wl


def test_thesis_groups_loaded_and_deduplicated(caplog):
    raw = wl.load_seed_groups(dedupe=False)
    assert len(raw) == 39
    assert raw["unpleasant"].count("accidente") == 2
    with caplog.at_level(logging.WARNING, logger="biaskit.data.wordlists"):
        groups = wl.load_seed_groups()
    assert groups["unpleasant"].count("accidente") == 1
    assert "seed group 'unpleasant': removed 2 duplicate entries (first occurrence kept)" in caplog.text
    assert groups["espacio_m"][:2] == ["hombre", "él"]


def test_thesis_neutral_groups_are_the_30_of_appendix_a():
    neutral = wl.thesis_neutral_groups()
    assert len(neutral) == 30
    assert list(neutral) == list(wl.THESIS_NEUTRAL_KEYS)
    for attr in wl.THESIS_GENDER_ATTRIBUTES + wl.THESIS_RELIGION_ATTRIBUTES:
        assert attr not in neutral


def test_resolve_words_drop_logs_and_records(caplog):
    with caplog.at_level(logging.WARNING, logger="biaskit.data.wordlists"):
        res = wl.resolve_words(["a", "b", "zz"], {"a", "b"}, name="target X")
    assert res.kept == ("a", "b") and res.missing == ("zz",)
    assert res.coverage == pytest.approx(2 / 3)
    assert "target X" in caplog.text and "zz" in caplog.text


def test_resolve_words_raise_and_min_size():
    with pytest.raises(wl.OOVError, match="zz"):
        wl.resolve_words(["a", "zz"], {"a"}, policy="raise")
    with pytest.raises(ValueError, match="empty"):
        wl.resolve_words([], {"a"})
    with pytest.raises(ValueError, match="only 1 word"):
        wl.resolve_words(["a", "zz"], {"a"}, min_size=2)
    with pytest.raises(ValueError, match="policy"):
        wl.resolve_words(["a"], {"a"}, policy="ignore")  # type: ignore[arg-type]


def test_malformed_wordlist_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="not valid JSON"):
        wl.load_wordlist_file(bad)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"g": "not a list"}), encoding="utf-8")
    with pytest.raises(ValueError, match="lists of strings"):
        wl.load_wordlist_file(wrong)
    with pytest.raises(FileNotFoundError):
        wl.load_wordlist_file(tmp_path / "missing.json")
