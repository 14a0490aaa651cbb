"""Integrity of the sentence-score cache: every record carries the sha256 of its payload; a record
changed by one digit or one byte, a truncated file and records of the earlier format (no checksum) are
reported with a WARNING naming the file and the number of records, never used, and recomputed, so the
scores equal a fresh computation."""

from __future__ import annotations

import hashlib
import json
import logging
import re

import pandas as pd
import pytest

from biaskit import lm as lms
from biaskit.lm import cache as lm_cache
from biaskit.lm import tiny_causal_lm, tiny_masked_lm

SENTENCES = [
    f"the {w} said that {p} would come back {t} ."
    for w in ("nurse", "doctor", "teacher", "pilot")
    for p in ("he", "she")
    for t in ("soon", "today")
]
KW = {"progress": False, "chunk_size": 4}


@pytest.fixture(scope="module")
def mlm(one_torch_thread):
    return tiny_masked_lm(seed=7)


@pytest.fixture(scope="module")
def clm(one_torch_thread):
    return tiny_causal_lm(seed=7)


def _warnings(caplog) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and r.name == lm_cache.__name__
    ]


def _fresh_and_cached(lm, cache_dir):
    fresh = lms.score_sentences(lm, SENTENCES, cache=False, **KW)
    first = lms.score_sentences(lm, SENTENCES, **KW)
    assert first.n_computed == len(SENTENCES) and first.cache_path.parent.parent.parent == cache_dir
    return fresh, first.cache_path


def _change_one_digit(line: str) -> str:
    """The line with one digit of its first log-probability changed: still valid JSON, a different number."""
    m = re.search(r'"lp": \[-?\d+\.(\d)', line)
    assert m is not None
    d = m.group(1)
    return line[: m.start(1)] + str((int(d) + 1) % 10) + line[m.end(1) :]


def test_every_record_carries_the_sha256_of_its_payload(mlm, cache_dir):
    _, path = _fresh_and_cached(mlm, cache_dir)
    lines = path.read_bytes().splitlines()
    assert len(lines) == len(SENTENCES)
    for line in lines:
        rec = json.loads(line)
        assert rec["v"] == lm_cache.CACHE_VERSION == 3
        assert rec["file"] == f"{path.parent.name}/{path.name}"  # the model folder and the file: its key
        payload = json.dumps({k: v for k, v in rec.items() if k != "sha256"}).encode()
        assert rec["sha256"] == hashlib.sha256(payload).hexdigest()  # an independent recomputation


@pytest.mark.parametrize("model", ["mlm", "clm"])
def test_a_cache_record_with_one_changed_digit_is_named_and_recomputed(request, model, cache_dir, caplog):
    lm = request.getfixturevalue(model)
    fresh, path = _fresh_and_cached(lm, cache_dir)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[3] = _change_one_digit(lines[3])
    json.loads(lines[3])  # still a well-formed record: only the checksum can tell
    path.write_text("".join(lines), encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        again = lms.score_sentences(lm, SENTENCES, **KW)
    (msg,) = _warnings(caplog)
    assert str(path) in msg and "1 damaged record(s) (checksum mismatch) at line(s) [4]" in msg
    assert again.n_cached == len(SENTENCES) - 1 and again.n_computed == 1
    pd.testing.assert_frame_equal(again.scores, fresh.scores, check_exact=True)
    pd.testing.assert_frame_equal(again.tokens, fresh.tokens, check_exact=True)
    # the damaged line is gone and the recomputed record appended: the next run reads all, quietly
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        third = lms.score_sentences(lm, SENTENCES, **KW)
    assert _warnings(caplog) == [] and third.n_cached == len(SENTENCES)
    pd.testing.assert_frame_equal(third.scores, fresh.scores, check_exact=True)


def test_a_flipped_byte_or_a_truncated_cache_file_is_named_and_recomputed(mlm, cache_dir, caplog):
    fresh, path = _fresh_and_cached(mlm, cache_dir)
    raw = bytearray(path.read_bytes())
    starts = [0, *(k + 1 for k, b in enumerate(raw) if b == ord("\n"))]
    raw[starts[5] + 40] ^= 0xFF  # a byte that is no longer UTF-8, inside record 6
    path.write_bytes(bytes(raw))
    with caplog.at_level(logging.WARNING):
        again = lms.score_sentences(mlm, SENTENCES, **KW)
    (msg,) = _warnings(caplog)
    assert str(path) in msg and "1 damaged record(s)" in msg and "line(s) [6]" in msg
    assert again.n_cached == len(SENTENCES) - 1
    pd.testing.assert_frame_equal(again.scores, fresh.scores, check_exact=True)

    caplog.clear()
    data = path.read_bytes()
    path.write_bytes(
        data[: len(data) // 2]
    )  # cut in the middle of a record, as a killed write or a full disk
    n_whole = data[: len(data) // 2].count(b"\n")
    with caplog.at_level(logging.WARNING):
        cut = lms.score_sentences(mlm, SENTENCES, **KW)
    (msg,) = _warnings(caplog)
    assert str(path) in msg and "1 damaged record(s) (truncated or undecodable)" in msg
    assert cut.n_cached == n_whole
    pd.testing.assert_frame_equal(cut.scores, fresh.scores, check_exact=True)
    assert path.read_bytes().count(b"\n") == len(SENTENCES)  # no half line left for the appended records


def test_records_of_the_earlier_cache_format_are_recomputed_with_a_warning(mlm, cache_dir, caplog):
    fresh, path = _fresh_and_cached(mlm, cache_dir)
    old = []
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        del rec["sha256"], rec["file"]
        rec["v"] = 1
        rec["sides"][0]["lp"][0] += 0.5  # what a v1 record holds cannot be checked: it must not be used
        old.append(json.dumps(rec))
    path.write_text("\n".join(old) + "\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        again = lms.score_sentences(mlm, SENTENCES, **KW)
    (msg,) = _warnings(caplog)
    assert str(path) in msg and f"{len(SENTENCES)} record(s) of an earlier cache format" in msg
    assert again.n_cached == 0 and again.n_computed == len(SENTENCES)
    pd.testing.assert_frame_equal(again.scores, fresh.scores, check_exact=True)
    assert lms.score_sentences(mlm, SENTENCES, **KW).n_cached == len(SENTENCES)


def test_checksummed_records_of_version_2_without_a_file_key_are_not_used(mlm, cache_dir, caplog):
    """Version 2 records carried a checksum but not the file they belong to, so a file copied from another
    model's folder passed; they are recomputed, with a WARNING."""
    fresh, path = _fresh_and_cached(mlm, cache_dir)
    old = []
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        del rec["sha256"], rec["file"]
        rec["v"] = 2
        rec["sides"][0]["lp"][0] += 0.5
        payload = json.dumps(rec).encode()
        old.append(payload[:-1].decode() + f', "sha256": "{hashlib.sha256(payload).hexdigest()}"}}')
    path.write_text("\n".join(old) + "\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        again = lms.score_sentences(mlm, SENTENCES, **KW)
    (msg,) = _warnings(caplog)
    assert str(path) in msg and f"{len(SENTENCES)} record(s) of an earlier cache format" in msg
    assert again.n_cached == 0
    pd.testing.assert_frame_equal(again.scores, fresh.scores, check_exact=True)


def test_score_cache_files_swapped_between_two_models_are_not_used(cache_dir, caplog, one_torch_thread):
    """Two models' cache files of the same sentences exchanged, each sound: no record is used for the other
    model (its example keys match, since they hash the texts only); both are recomputed."""
    lm_a, lm_b = tiny_masked_lm(seed=7), tiny_masked_lm(seed=8)
    fresh_a = lms.score_sentences(lm_a, SENTENCES, cache=False, **KW)
    fresh_b = lms.score_sentences(lm_b, SENTENCES, cache=False, **KW)
    path_a = lms.score_sentences(lm_a, SENTENCES, **KW).cache_path
    path_b = lms.score_sentences(lm_b, SENTENCES, **KW).cache_path
    assert path_a.name == path_b.name and path_a.parent != path_b.parent  # same metric and data, two models
    data_a, data_b = path_a.read_bytes(), path_b.read_bytes()
    path_a.write_bytes(data_b)
    path_b.write_bytes(data_a)
    with caplog.at_level(logging.WARNING):
        again_a = lms.score_sentences(lm_a, SENTENCES, **KW)
        again_b = lms.score_sentences(lm_b, SENTENCES, **KW)
    msgs = _warnings(caplog)
    assert len(msgs) == 2 and all("a record of another cache file" in m for m in msgs)
    assert str(path_a) in msgs[0] and str(path_b) in msgs[1]
    assert again_a.n_cached == 0 and again_b.n_cached == 0
    pd.testing.assert_frame_equal(again_a.scores, fresh_a.scores, check_exact=True)
    pd.testing.assert_frame_equal(again_b.scores, fresh_b.scores, check_exact=True)
    assert not fresh_a.scores["score"].equals(fresh_b.scores["score"])  # the swap would have changed them


def test_a_cache_record_without_checksum_or_garbage_is_not_used(tmp_path, caplog):
    path = tmp_path / "m" / "x.jsonl"
    path.parent.mkdir()
    good = lm_cache.encode_record(
        {"row": 0, "key": "k", "sides": [{"ids": [1, 2], "pos": [1], "lp": [-1.5]}]}, "m/x.jsonl"
    )
    plain = json.dumps({"v": 3, "file": "m/x.jsonl", "row": 1, "key": "k", "sides": []})  # no checksum
    path.write_bytes(good.encode() + plain.encode() + b"\n\xff\xfe{\n" + b"[1, 2]\n")
    with caplog.at_level(logging.WARNING):
        recs = lm_cache.read_cache(path)
    assert list(recs) == [0] and recs[0]["sides"][0]["lp"] == [-1.5]
    (msg,) = _warnings(caplog)
    assert str(path) in msg and "3 damaged record(s)" in msg and "line(s) [2, 3, 4] of 4" in msg
    assert path.read_bytes() == good.encode()


# --------------------------------------------------------------------------------------- the score command
@pytest.mark.slow
@pytest.mark.parametrize(
    ("model", "metric", "budget", "base"),
    [
        ("tiny", "sz", 96, "transformers.models.bert.modeling_bert.BertModel"),
        ("tiny-causal", "ll", 24, "transformers.models.gpt2.modeling_gpt2.GPT2Model"),
    ],
)
def test_a_score_job_killed_mid_chunk_and_resumed_writes_the_same_csv_bytes(
    model, metric, budget, base, tmp_path, monkeypatch, capsys, one_torch_thread
):
    """``python -m biaskit score``: interrupted in the middle of a chunk (the model's forward pass raises, as
    a Ctrl-C would), with a half-written record at the end of the cache and a damaged one inside, then
    started again: the CSV is byte for byte that of an uninterrupted job, and only the missing rows were
    computed (the tiny models' scores change in the last bits with the batches: 57 of 60 sentences
    between two token budgets, so a resumed job that batched differently would fail here)."""
    import importlib

    from biaskit.__main__ import main

    sents = [
        f"the {w} told the {o} that {p} would {v} {t} ."
        for w in ("nurse", "doctor", "teacher", "pilot", "engineer")
        for o in ("patient", "boss", "child")
        for p in ("he", "she")
        for v in ("come back", "leave")
        for t in ("soon", "today")
    ][:60]
    text = tmp_path / "s.txt"
    text.write_text("\n".join(sents) + "\n", encoding="utf-8")
    args = [
        "score",
        model,
        str(text),
        "--metric",
        metric,
        "--batch-tokens",
        str(budget),
        "--no-progress",
        "--out",
    ]
    module, name = base.rsplit(".", 1)
    cls = getattr(importlib.import_module(module), name)
    real, calls = cls.forward, {"n": 0, "stop": None}

    def counted(self, *a, **kw):  # every forward pass of the model; the kill comes at pass "stop"
        calls["n"] += 1
        if calls["stop"] is not None and calls["n"] >= calls["stop"]:
            raise KeyboardInterrupt("simulated kill")
        return real(self, *a, **kw)

    monkeypatch.setattr(cls, "forward", counted)
    monkeypatch.setenv("BIASKIT_CACHE_DIR", str(tmp_path / "cache-a"))
    assert main([*args, str(tmp_path / "a.csv")]) == 0
    n_passes = calls["n"]
    assert n_passes > 10
    calls.update(n=0, stop=n_passes // 2)
    monkeypatch.setenv("BIASKIT_CACHE_DIR", str(tmp_path / "cache-b"))
    with pytest.raises(KeyboardInterrupt):
        main([*args, str(tmp_path / "b.csv")])
    calls["stop"] = None
    (cache,) = (tmp_path / "cache-b").rglob("*.jsonl")
    written = cache.read_bytes()
    n_written = written.count(b"\n")
    assert 0 < n_written < len(sents)  # killed part-way: some chunks are on disk, not all
    lines = written.decode().splitlines(keepends=True)
    # a record cut mid-write at the end, and one damaged record inside a chunk: the resumed job recomputes
    # that row in its chunk's own batches, so its bits do not depend on what else was cached
    lines[1] = _change_one_digit(lines[1])
    cache.write_text("".join(lines) + lines[0][:50], encoding="utf-8")
    capsys.readouterr()
    assert main([*args, str(tmp_path / "c.csv")]) == 0
    out = capsys.readouterr().out
    assert f"({len(sents) - n_written + 1} computed, {n_written - 1} from the cache)" in out
    a, c = (tmp_path / "a.csv").read_bytes(), (tmp_path / "c.csv").read_bytes()
    assert a == c and len(pd.read_csv(tmp_path / "c.csv")) == len(sents)
