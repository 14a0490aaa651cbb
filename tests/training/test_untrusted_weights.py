"""Files biaskit did not write can neither run code nor pass as its data: training checkpoints, trained models
and cached fine-tunes (biaskit.training.loop, biaskit.training.fine_tune, biaskit.lm.loading)."""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from test_fine_tuning import TRAIN as FT_TRAIN
from test_fine_tuning import VOCAB_TEXT
from test_training import TRAIN, Crash, crash_at

from biaskit.core.io import DiskFullError, cache_file_problem, checksum_sidecar, write_cache_checksum
from biaskit.lm import load_masked_lm, score_sentences, tiny_masked_lm
from biaskit.lm.loading import ModelFolderError
from biaskit.training.fine_tune import BARTL, find_fine_tuned, fine_tune
from biaskit.training.loop import (
    CHECKPOINT_KEY,
    LEGACY_CHECKPOINT,
    checkpoint_files,
    read_checkpoint,
)
from biaskit.training.pretrain import MLMTrainingConfig, train_masked_lm, train_wordpiece_tokenizer

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _config(**kw) -> MLMTrainingConfig:
    """A 1 x 16 BERT, 12 steps, a checkpoint every 5 (at steps 5 and 10): a second or two on a CPU."""
    base = dict(
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_length=24,
        batch_size=16,
        learning_rate=3e-3,
        warmup_steps=2,
        max_steps=12,
        checkpoint_every=5,
        seed=0,
        device="cpu",
    )
    return MLMTrainingConfig(**{**base, **kw})


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tensor_data_start(path: Path) -> int:
    """Offset of the first tensor byte of a safetensors file (8-byte header length, then the header)."""
    return 8 + int.from_bytes(path.read_bytes()[:8], "little")


def _flip_exponent(path: Path) -> None:
    """Flip one exponent bit of the first float32 of the tensor data (its high byte: sign + exponent)."""
    raw = bytearray(path.read_bytes())
    raw[_tensor_data_start(path) + 3] ^= 0x40
    path.write_bytes(bytes(raw))


class _Payload:
    """Unpickling this writes ``marker``: what a planted pickle could do on
    ``torch.load(weights_only=False)``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (self.marker, "code ran"))


def _pickle_bomb(path: Path, marker: Path) -> None:
    """A ``torch.save`` file whose unpickling writes ``marker``."""
    torch.save({"step": 10, "model": _Payload(marker)}, path)


@pytest.fixture(scope="module")
def tokenizer():
    return train_wordpiece_tokenizer(TRAIN, 300, min_frequency=2)


@pytest.fixture(scope="module")
def clean(tmp_path_factory, tokenizer) -> Path:
    """An uninterrupted run: the weights every resumed, restored or retrained run must equal, byte for
    byte."""
    out = tmp_path_factory.mktemp("clean") / "run"
    train_masked_lm(TRAIN, out, _config(), tokenizer=tokenizer, progress=False)
    return out


def _crashed(folder: Path, tokenizer, at: int = 12) -> Path:
    with pytest.raises(Crash):
        train_masked_lm(TRAIN, folder, _config(), tokenizer=tokenizer, progress=False, callback=crash_at(at))
    return folder / "checkpoint"


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.name.startswith(".") or ".tmp" in p.name)


# ----------------------------------------------------------------------------- no code from disk
def test_the_pickle_payload_of_these_tests_is_live(tmp_path):
    """The planted file really runs code when unpickled: the tests below would fail if biaskit read it."""
    marker = tmp_path / "marker"
    _pickle_bomb(tmp_path / "bomb.pt", marker)
    torch.load(tmp_path / "bomb.pt", weights_only=False)
    assert marker.read_text() == "code ran"


@pytest.mark.parametrize("sidecar", ["none", "old format", "forged cache format"])
def test_a_planted_legacy_state_pt_never_runs(clean, tokenizer, tmp_path, caplog, sidecar):
    ckpt = tmp_path / "run" / "checkpoint"
    ckpt.mkdir(parents=True)
    marker = tmp_path / "marker"
    planted = ckpt / LEGACY_CHECKPOINT
    _pickle_bomb(planted, marker)
    if sidecar == "old format":  # biaskit's sidecar before safetensors checkpoints
        checksum_sidecar(planted).write_text(f"{_sha(planted)}  {planted.name}\n", encoding="utf-8")
    elif sidecar == "forged cache format":
        write_cache_checksum(planted, CHECKPOINT_KEY)
    with caplog.at_level(logging.WARNING, logger="biaskit.training.loop"):
        res = train_masked_lm(TRAIN, tmp_path / "run", _config(), tokenizer=tokenizer, progress=False)
    assert not marker.exists()
    assert f"{planted}: a checkpoint of an earlier biaskit, a pickle that could run code" in caplog.text
    assert "training restarts from step 0" in caplog.text
    assert res.resumed_from_step == 0 and res.completed
    assert _sha(tmp_path / "run" / "model.safetensors") == _sha(clean / "model.safetensors")
    assert not planted.exists()  # the next checkpoint removed it


@pytest.mark.parametrize("forged", [False, True])
def test_a_pickle_planted_under_a_checkpoint_name_never_runs(clean, tokenizer, tmp_path, caplog, forged):
    ckpt = _crashed(tmp_path / "run", tokenizer)
    newest = checkpoint_files(ckpt)[0]
    assert newest.name == "state-000000010.safetensors"
    marker = tmp_path / "marker"
    _pickle_bomb(newest, marker)
    if forged:  # a sidecar that vouches for the planted bytes
        write_cache_checksum(newest, CHECKPOINT_KEY)
        assert cache_file_problem(newest, CHECKPOINT_KEY) is None
    with caplog.at_level(logging.WARNING, logger="biaskit.training.loop"):
        res = train_masked_lm(TRAIN, tmp_path / "run", _config(), progress=False)
    assert not marker.exists()
    reason = "it cannot be read as a checkpoint" if forged else "its "  # its size / sha256 differs
    assert f"checkpoint not trusted: {newest}: {reason}" in caplog.text
    assert "resuming from the earlier verified checkpoint" in caplog.text and "(step 5)" in caplog.text
    assert res.resumed_from_step == 5 and res.completed
    assert _sha(tmp_path / "run" / "model.safetensors") == _sha(clean / "model.safetensors")


def test_a_pickle_planted_as_weights_in_a_trained_folder_is_refused_and_never_runs(clean, tmp_path, caplog):
    import shutil

    folder = tmp_path / "run"
    shutil.copytree(clean, folder)
    marker = tmp_path / "marker"
    _pickle_bomb(folder / "pytorch_model.bin", marker)
    with pytest.raises(ModelFolderError, match=r"pytorch_model\.bin: it has no checksum file") as err:
        load_masked_lm(folder, device="cpu")
    assert "run the same training or fine-tuning call again" in str(err.value)
    # the hint works: the same call removes the stray file and writes the model again
    with caplog.at_level(logging.WARNING):
        res = train_masked_lm(TRAIN, folder, _config(), progress=False)
    assert res.resumed_from_step == 12 and not (folder / "pytorch_model.bin").exists()
    assert "pytorch_model.bin: removed" in caplog.text
    assert isinstance(load_masked_lm(folder, device="cpu").model, torch.nn.Module)
    assert not marker.exists()


def test_no_pickle_is_read_by_the_training_and_model_layers():
    found = subprocess.run(
        ["grep", "-rnE", r"weights_only=False|pickle\.load", "biaskit/training", "biaskit/lm"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert found.returncode == 1 and found.stdout == "", found.stdout  # grep: 1 = no line matched


# ----------------------------------------------------------------------------- checkpoints
def test_a_checkpoint_is_safetensors_and_json_and_resumes_to_the_same_bytes(clean, tokenizer, tmp_path):
    ckpt = _crashed(tmp_path / "run", tokenizer)
    files = checkpoint_files(ckpt)
    assert [f.name for f in files] == ["state-000000010.safetensors", "state-000000005.safetensors"]
    for f in files:
        side = json.loads(checksum_sidecar(f).read_text(encoding="utf-8"))
        assert side["file"] == f.name and side["key"] == CHECKPOINT_KEY and side["sha256"] == _sha(f)
        assert f.read_bytes()[8:9] == b"{"  # a safetensors JSON header, not a pickle or a zip
    state = read_checkpoint(files[0])
    assert state["step"] == 10 and len(state["losses"]) == 10
    assert state["rng"]["torch"].dtype == torch.uint8 and state["rng"]["torch"].numel() > 1000
    assert {"tokenizer.json", "tokenizer_config.json"} <= set(state["tokenizer_files"])
    assert _leftovers(tmp_path / "run") == []
    res = train_masked_lm(TRAIN, tmp_path / "run", _config(), progress=False)  # tokenizer from the checkpoint
    assert res.resumed_from_step == 10 and res.completed
    assert _sha(tmp_path / "run" / "model.safetensors") == _sha(clean / "model.safetensors")
    # a finished run keeps its last checkpoint only
    assert [f.name for f in checkpoint_files(ckpt)] == ["state-000000012.safetensors"]


def test_the_rng_state_and_the_scalars_round_trip_exactly(tmp_path):
    from biaskit.training.loop import save_checkpoint

    torch.manual_seed(12345)
    torch.rand(7)
    want = torch.get_rng_state()
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.AdamW(model.parameters())
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    path = save_checkpoint(
        tmp_path / "c",
        step=3,
        model=model,
        optimizer=opt,
        scheduler=sched,
        rng={"torch": want, "cuda": None},
        scalars={
            "losses": [0.1, float("nan"), 1 / 3],
            "tokens_seen": 9,
            "train_seconds": 0.1 + 0.2,
            "config": {"salient_groups": (("he", "she"), ("nurse",))},
            "data": "d",
        },
        tokenizer={"empty.txt": b"", "tokenizer.json": b"\x00\xff{"},
    )
    back = read_checkpoint(path)
    assert torch.equal(back["rng"]["torch"], want) and back["rng"]["cuda"] is None
    assert back["losses"][0] == 0.1 and np.isnan(back["losses"][1]) and back["losses"][2] == 1 / 3
    assert back["train_seconds"] == 0.1 + 0.2 and back["tokenizer_files"]["tokenizer.json"] == b"\x00\xff{"
    assert back["tokenizer_files"]["empty.txt"] == b""
    assert back["config"] == {"salient_groups": [["he", "she"], ["nurse"]]}  # JSON: tuples read back as lists


@pytest.mark.parametrize("damage", ["no sidecar", "flipped byte", "truncated"])
def test_an_unverified_checkpoint_is_not_trusted_the_earlier_one_is_used(
    clean, tokenizer, tmp_path, caplog, damage
):
    ckpt = _crashed(tmp_path / "run", tokenizer)
    newest = checkpoint_files(ckpt)[0]
    if damage == "no sidecar":
        checksum_sidecar(newest).unlink()
    elif damage == "flipped byte":
        _flip_exponent(newest)
    else:
        newest.write_bytes(newest.read_bytes()[:2000])
    with caplog.at_level(logging.WARNING, logger="biaskit.training.loop"):
        res = train_masked_lm(TRAIN, tmp_path / "run", _config(), progress=False)
    reason = {
        "no sidecar": "it has no checksum file",
        "flipped byte": "its sha256",
        "truncated": "its size 2,000",
    }
    assert f"checkpoint not trusted: {newest}: {reason[damage]}" in caplog.text
    earlier = ckpt / "state-000000005.safetensors"
    assert f"resuming from the earlier verified checkpoint {earlier} (step 5)" in caplog.text
    assert res.resumed_from_step == 5 and res.completed
    assert _sha(tmp_path / "run" / "model.safetensors") == _sha(clean / "model.safetensors")


def test_with_no_verified_checkpoint_left_training_restarts_from_scratch(clean, tokenizer, tmp_path, caplog):
    ckpt = _crashed(tmp_path / "run", tokenizer)
    for f in checkpoint_files(ckpt):
        checksum_sidecar(f).unlink()
    with caplog.at_level(logging.WARNING, logger="biaskit.training.loop"):
        res = train_masked_lm(TRAIN, tmp_path / "run", _config(), tokenizer=tokenizer, progress=False)
    assert caplog.text.count("it has no checksum file") == 2
    assert "no verified checkpoint is left: training restarts from step 0" in caplog.text
    assert res.resumed_from_step == 0 and res.completed
    assert _sha(tmp_path / "run" / "model.safetensors") == _sha(clean / "model.safetensors")


def test_a_full_disk_while_checkpointing_names_the_file_and_leaves_the_last_checkpoint(
    clean, tokenizer, tmp_path, monkeypatch
):
    import safetensors.torch

    real = safetensors.torch.save_file
    calls = []

    def disk_full_at_the_second(tensors, filename, metadata=None):
        calls.append(filename)
        if len(calls) == 2:  # the checkpoint of step 10: half written, then the disk is full
            Path(filename).write_bytes(b"\0" * 1000)
            raise OSError(errno.ENOSPC, "No space left on device", filename)
        return real(tensors, filename, metadata=metadata)

    monkeypatch.setattr(safetensors.torch, "save_file", disk_full_at_the_second)
    run = tmp_path / "run"
    with pytest.raises(DiskFullError) as err:
        train_masked_lm(TRAIN, run, _config(), tokenizer=tokenizer, progress=False)
    target = run / "checkpoint" / "state-000000010.safetensors"
    assert err.value.filename == str(target) and f"no space left to write {target}" in str(err.value)
    assert _leftovers(run) == [] and not target.exists()
    assert [f.name for f in checkpoint_files(run / "checkpoint")] == ["state-000000005.safetensors"]
    assert cache_file_problem(run / "checkpoint" / "state-000000005.safetensors", CHECKPOINT_KEY) is None
    monkeypatch.setattr(safetensors.torch, "save_file", real)
    res = train_masked_lm(TRAIN, run, _config(), progress=False)
    assert res.resumed_from_step == 5 and res.completed
    assert _sha(run / "model.safetensors") == _sha(clean / "model.safetensors")


def test_a_full_disk_while_saving_the_model_leaves_no_half_model(clean, tokenizer, tmp_path, monkeypatch):
    import transformers.modeling_utils as mu

    real = mu.safe_save_file

    def disk_full(tensors, filename, metadata=None):
        Path(filename).write_bytes(b"\0" * 1000)
        raise OSError(errno.ENOSPC, "No space left on device", filename)

    monkeypatch.setattr(mu, "safe_save_file", disk_full)
    run = tmp_path / "run"
    with pytest.raises(DiskFullError, match=re.escape(f"no space left to write {run / 'model.safetensors'}")):
        train_masked_lm(TRAIN, run, _config(), tokenizer=tokenizer, progress=False)
    assert _leftovers(run) == [] and not (run / "model.safetensors").exists()
    monkeypatch.setattr(mu, "safe_save_file", real)
    res = train_masked_lm(TRAIN, run, _config(), progress=False)
    assert res.resumed_from_step == 12  # the final checkpoint was written before the model: nothing retrained
    assert _sha(run / "model.safetensors") == _sha(clean / "model.safetensors")


def test_a_full_disk_while_writing_a_sidecar_leaves_no_checkpoint_without_one(
    tokenizer, tmp_path, monkeypatch
):
    from biaskit.training import loop

    real = loop.write_cache_checksum

    def full(path, key):
        if Path(path).name == "state-000000010.safetensors":
            raise DiskFullError(errno.ENOSPC, f"no space left to write {checksum_sidecar(path)}")
        return real(path, key)

    monkeypatch.setattr(loop, "write_cache_checksum", full)
    with pytest.raises(DiskFullError, match=r"state-000000010\.safetensors\.sha256"):
        train_masked_lm(TRAIN, tmp_path / "run", _config(), tokenizer=tokenizer, progress=False)
    assert [f.name for f in checkpoint_files(tmp_path / "run" / "checkpoint")] == [
        "state-000000005.safetensors"
    ]
    assert _leftovers(tmp_path / "run") == []


# ----------------------------------------------------------------------------- trained models
def test_a_trained_model_carries_sha256_files_naming_each_file_and_the_run(clean):
    names = sorted(p.name for p in clean.iterdir() if p.is_file() and not p.name.endswith(".sha256"))
    assert names == [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "training.json",
    ]
    keys = set()
    for name in names:
        side = json.loads((clean / f"{name}.sha256").read_text(encoding="utf-8"))
        assert side["file"] == name and side["sha256"] == _sha(clean / name)
        assert side["size"] == (clean / name).stat().st_size
        keys.add(side["key"])
    assert len(keys) == 1 and re.fullmatch(r"[0-9a-f]{64}", keys.pop())


def test_a_flipped_byte_in_a_trained_model_is_refused_then_written_again(clean, tokenizer, tmp_path, caplog):
    import shutil

    from transformers import BertForMaskedLM

    folder = tmp_path / "run"
    shutil.copytree(clean, folder)
    weights = folder / "model.safetensors"
    _flip_exponent(weights)
    # the damage is real: read without biaskit's check, one weight is off by a factor of 2**128 (or 2**-128)
    damaged = BertForMaskedLM.from_pretrained(str(folder)).state_dict()
    reference = BertForMaskedLM.from_pretrained(str(clean)).state_dict()
    assert any(not torch.equal(damaged[k], reference[k]) for k in reference)
    with pytest.raises(ModelFolderError, match=r"model\.safetensors: its sha256 [0-9a-f]{16}\.\.\. differs"):
        load_masked_lm(folder, device="cpu")
    with caplog.at_level(logging.WARNING, logger="biaskit.training.loop"):
        res = train_masked_lm(TRAIN, folder, _config(), progress=False)
    assert f"the saved model in {folder} is not used: model.safetensors: its sha256" in caplog.text
    assert "written again from the verified checkpoint of step 12" in caplog.text
    assert res.resumed_from_step == 12
    assert _sha(weights) == _sha(clean / "model.safetensors")
    # the model and its checkpoint both damaged: trained again from scratch, to the same bytes
    _flip_exponent(weights)
    _flip_exponent(checkpoint_files(folder / "checkpoint")[0])
    res = train_masked_lm(TRAIN, folder, _config(), tokenizer=tokenizer, progress=False)
    assert res.resumed_from_step == 0 and _sha(weights) == _sha(clean / "model.safetensors")


# ----------------------------------------------------------------------------- cached fine-tunes
@pytest.fixture(scope="module")
def base():
    return tiny_masked_lm(0, texts=VOCAB_TEXT, vocab_size=300, initializer_range=0.2)


FT = dataclasses.replace(BARTL, device="cpu", epochs=1, checkpoint_every=4)  # 12 steps


def _scores(lm) -> np.ndarray:
    return score_sentences(lm, FT_TRAIN[:4], "sz", cache=False, progress=False).scores["score"].to_numpy()


def test_a_flipped_byte_in_a_cached_fine_tune_is_detected_and_the_model_written_again(
    base, cache_dir, caplog
):
    tuned = fine_tune(base, FT_TRAIN, config=FT, progress=False)
    folder = Path(tuned.name)
    assert folder.is_relative_to(cache_dir)
    want = _scores(tuned)
    clean_sha = _sha(folder / "model.safetensors")
    _flip_exponent(folder / "model.safetensors")
    with caplog.at_level(logging.WARNING, logger="biaskit.training"):
        assert find_fine_tuned(base, FT_TRAIN, config=FT) is None
    assert f"fine-tuned model {folder} is not used: model.safetensors: its sha256" in caplog.text
    with pytest.raises(ModelFolderError, match=r"model\.safetensors: its sha256"):
        load_masked_lm(folder, device="cpu")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="biaskit.training"):
        again = fine_tune(base, FT_TRAIN, config=FT, progress=False)
    assert f"the saved model in {folder} is not used: model.safetensors: its sha256" in caplog.text
    got = _scores(again)
    assert np.isfinite(got).all() and np.array_equal(got, want)
    assert _sha(folder / "model.safetensors") == clean_sha
    found = find_fine_tuned(base, FT_TRAIN, config=FT)
    assert found is not None and np.array_equal(_scores(found), want)


def test_a_fine_tune_with_a_damaged_checkpoint_and_model_is_trained_again(base, cache_dir, caplog):
    tuned = fine_tune(base, FT_TRAIN, config=FT, progress=False)
    folder = Path(tuned.name)
    want, clean_sha = _scores(tuned), _sha(folder / "model.safetensors")
    (folder / "config.json").write_text(
        (folder / "config.json")
        .read_text(encoding="utf-8")
        .replace('"hidden_act": "gelu"', '"hidden_act": "relu"'),
        encoding="utf-8",
    )
    checksum_sidecar(checkpoint_files(folder / "checkpoint")[0]).unlink()
    with caplog.at_level(logging.WARNING, logger="biaskit.training"):
        assert find_fine_tuned(base, FT_TRAIN, config=FT) is None
        again = fine_tune(base, FT_TRAIN, config=FT, progress=False)
    assert "no verified checkpoint is left: training restarts from step 0" in caplog.text
    got = _scores(again)
    assert np.isfinite(got).all() and np.array_equal(got, want)
    assert (
        _sha(folder / "model.safetensors") == clean_sha and '"gelu"' in (folder / "config.json").read_text()
    )


def test_a_fine_tune_of_an_earlier_biaskit_is_trained_again_without_reading_its_pickle(
    base, cache_dir, tmp_path, caplog
):
    tuned = fine_tune(base, FT_TRAIN, config=FT, progress=False)
    folder = Path(tuned.name)
    want = _scores(tuned)
    ckpt = folder / "checkpoint"
    for f in checkpoint_files(ckpt):
        f.unlink()
        checksum_sidecar(f).unlink()
    for f in folder.glob("*.sha256"):
        f.unlink()  # an earlier biaskit wrote no sha256 files beside the model
    marker = tmp_path / "marker"
    _pickle_bomb(ckpt / LEGACY_CHECKPOINT, marker)
    checksum_sidecar(ckpt / LEGACY_CHECKPOINT).write_text(f"{_sha(ckpt / LEGACY_CHECKPOINT)}  state.pt\n")
    with caplog.at_level(logging.WARNING, logger="biaskit.training"):
        assert find_fine_tuned(base, FT_TRAIN, config=FT) is None
        again = fine_tune(base, FT_TRAIN, config=FT, progress=False)
    assert not marker.exists() and "is never read" in caplog.text
    assert np.array_equal(_scores(again), want)


def test_a_fine_tune_record_that_does_not_match_its_sha256_is_not_read(base, cache_dir, caplog):
    from biaskit.training.fine_tune import fine_tune_record

    tuned = fine_tune(base, FT_TRAIN, config=FT, progress=False)
    assert fine_tune_record(tuned)["steps"] == 12
    path = Path(tuned.name) / "training.json"
    path.write_text(path.read_text(encoding="utf-8").replace('"steps": 12', '"steps": 99'), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="biaskit.training.fine_tune"):
        assert fine_tune_record(tuned) == {}
    assert f"{path} is not read: its" in caplog.text


@pytest.mark.slow
def test_a_python_process_never_imports_pickle_to_resume(tokenizer, tmp_path):
    """Belt and braces: resuming in a fresh interpreter with ``pickle.load`` / ``torch.load`` disabled
    works."""
    _crashed(tmp_path / "run", tokenizer)
    code = (
        "import pickle, torch, sys\n"
        "def no(*a, **k): raise AssertionError('unpickling called')\n"
        "pickle.load = pickle.loads = torch.load = no\n"
        f"sys.path.insert(0, {str(ROOT / 'tests' / 'training')!r})\n"
        "from test_untrusted_weights import TRAIN, _config\n"
        "from biaskit.training.pretrain import train_masked_lm\n"
        f"r = train_masked_lm(TRAIN, {str(tmp_path / 'run')!r}, _config(), progress=False)\n"
        "assert r.resumed_from_step == 10, r.resumed_from_step\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
