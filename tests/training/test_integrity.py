"""Integrity on disk: the bundled models are checked against their sha256 manifest when
loaded by name, once per process and folder; training checkpoints carry a sha256, and one that does not
match it is not trusted: the run resumes from the earlier verified checkpoint."""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path

import pytest
import torch

from biaskit import lm as lms
from biaskit.core.io import ChecksumError, checksum_sidecar, sha256_file
from biaskit.lm import catalogue
from biaskit.training.loop import checkpoint_files
from biaskit.training.pretrain import MLMTrainingConfig, train_masked_lm, train_wordpiece_tokenizer

REAL_MODELS = catalogue.models_dir()
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _flip_byte(path: Path, at: int | None = None) -> None:
    raw = bytearray(path.read_bytes())
    i = len(raw) // 2 if at is None else at
    raw[i] ^= 0xFF
    path.write_bytes(bytes(raw))


def _truncate(path: Path, keep: int) -> None:
    path.write_bytes(path.read_bytes()[:keep])


@pytest.fixture
def data_copy(tmp_path, monkeypatch):
    """A data folder holding copies of some bundled models and the real manifest (``BIASKIT_DATA_DIR``)."""

    def make(*names: str) -> Path:
        models = tmp_path / "data" / "models"
        models.mkdir(parents=True, exist_ok=True)
        for name in names:
            shutil.copytree(REAL_MODELS / name, models / name)
        shutil.copy(REAL_MODELS / catalogue.MANIFEST_JSON, models / catalogue.MANIFEST_JSON)
        monkeypatch.setenv("BIASKIT_DATA_DIR", str(tmp_path / "data"))
        return models

    return make


# ----------------------------------------------------------------------------- bundled models
def test_the_manifest_lists_every_bundled_file_as_provenance_does_and_they_verify():
    manifest = catalogue.read_manifest()
    on_disk = {n for n in catalogue.MODEL_NAMES if (REAL_MODELS / n / catalogue.TRAINING_JSON).exists()}
    # a model added to data/models needs its record: biaskit.training.recipes.write_provenance() writes it
    assert manifest is not None and set(manifest) == on_disk
    prov = (REAL_MODELS / "PROVENANCE.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"\| `([^`]+)` \| [\d,]+ \| ([0-9a-f]{64}) \|", prov))
    listed = {f"{name}/{f}": rec["sha256"] for name, files in manifest.items() for f, rec in files.items()}
    assert listed == rows  # the same files, the same sums
    for name in sorted(on_disk):
        assert catalogue.verify_model(name, force=True) == REAL_MODELS / name


def test_a_flipped_byte_in_a_bundled_model_names_the_file_and_the_fix(data_copy):
    models = data_copy("en-mlm")
    weights = models / "en-mlm" / "model.safetensors"
    _flip_byte(weights)
    with pytest.raises(ChecksumError) as err:
        lms.get_lm("en-mlm")
    msg = str(err.value)
    assert f"bundled model 'en-mlm' is damaged: {weights}: its bytes differ from the recorded ones" in msg
    assert "python -m biaskit train-models en-mlm" in msg and "git checkout -- data/models/en-mlm" in msg
    with pytest.raises(ChecksumError, match=r"model\.safetensors"):  # every by-name loader checks
        catalogue.load_trained_mlm("en-mlm")


def test_a_truncated_or_missing_bundled_file_is_named(data_copy):
    models = data_copy("en-clm", "es-mlm")
    weights = models / "en-clm" / "model.safetensors"
    full = weights.stat().st_size
    _truncate(weights, 1000)
    with pytest.raises(
        ChecksumError, match=rf"{re.escape(str(weights))}: truncated: 1,000 of {full:,} bytes"
    ):
        lms.get_lm("en-clm")
    (models / "es-mlm" / "tokenizer.json").unlink()
    with pytest.raises(ChecksumError, match=r"tokenizer\.json: the file is missing.*train-models es-mlm"):
        lms.get_masked_lm("es-mlm")


def test_bundled_word_vectors_are_checked_too(data_copy):
    from biaskit.embeddings.vectors import load_trained_vectors

    models = data_copy("es-w2v")
    _flip_byte(models / "es-w2v" / "vectors.bin", at=200)
    with pytest.raises(ChecksumError, match=r"es-w2v.*vectors\.bin: its bytes differ"):
        load_trained_vectors("es-w2v")


def test_verification_is_done_once_per_process_per_folder(data_copy, monkeypatch):
    models = data_copy("en-planted-s50")
    calls = []
    real = catalogue.sha256_file
    monkeypatch.setattr(catalogue, "sha256_file", lambda p: calls.append(Path(p).name) or real(p))
    assert catalogue.verify_model("en-planted-s50") == models / "en-planted-s50"
    n_files = len(catalogue.read_manifest()["en-planted-s50"])
    assert len(calls) == n_files
    lm = lms.get_lm("en-planted-s50", device="cpu")  # loads without hashing again
    assert isinstance(lm, lms.MaskedLM) and len(calls) == n_files
    catalogue.verify_model("en-planted-s50", force=True)
    assert len(calls) == 2 * n_files


def test_write_provenance_regenerates_the_manifest(data_copy, tmp_path):
    from biaskit.training.recipes import write_provenance

    models = data_copy("en-mlm")
    (models / catalogue.MANIFEST_JSON).unlink()
    assert catalogue.read_manifest() is None
    catalogue.verify_model("en-mlm", force=True)  # no manifest (a user's data folder): nothing to check
    write_provenance(tmp_path / "PROVENANCE.md")
    assert catalogue.read_manifest() == {
        "en-mlm": json.loads((REAL_MODELS / "MANIFEST.json").read_text())["models"]["en-mlm"]
    }
    # a retrained model (new bytes) loads once its record is rewritten, as train_model does
    _flip_byte(models / "en-mlm" / "tokenizer_config.json", at=0)
    with pytest.raises(ChecksumError):
        catalogue.verify_model("en-mlm", force=True)
    catalogue.write_manifest(["en-mlm"])
    assert catalogue.verify_model("en-mlm") == models / "en-mlm"


def test_a_damaged_manifest_is_an_error(data_copy):
    models = data_copy("en-mlm")
    (models / catalogue.MANIFEST_JSON).write_text("{not json", encoding="utf-8")
    with pytest.raises(ChecksumError, match=r"MANIFEST\.json is damaged"):
        catalogue.verify_model("en-mlm", force=True)


# ----------------------------------------------------------------------------- checkpoints
TRAIN = [f"the {w} reads a {o} in the {p} ." for w in ("doctor", "nurse", "judge", "pilot") for o in
         ("book", "letter", "paper") for p in ("city", "school", "market", "village")] * 3  # fmt: skip


def _config(**kw) -> MLMTrainingConfig:
    base = dict(
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_length=16,
        batch_size=8,
        learning_rate=3e-3,
        warmup_steps=2,
        max_steps=20,
        checkpoint_every=5,
        seed=0,
        device="cpu",
    )
    return MLMTrainingConfig(**{**base, **kw})


class Crash(RuntimeError):
    pass


def _crash_at(step: int):
    def callback(current: int, loss: float) -> None:
        if current == step:
            raise Crash

    return callback


@pytest.fixture(scope="module")
def tokenizer():
    return train_wordpiece_tokenizer(TRAIN, 120, min_frequency=1)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, tokenizer):
    out = tmp_path_factory.mktemp("ckpt") / "full"
    train_masked_lm(TRAIN, out, _config(), tokenizer=tokenizer, progress=False)
    return out


def _crashed(folder: Path, tokenizer) -> Path:
    """A run killed at step 12: checkpoints of steps 5 and 10; returns the latest."""
    with pytest.raises(Crash):
        train_masked_lm(TRAIN, folder, _config(), tokenizer=tokenizer, progress=False, callback=_crash_at(12))
    return checkpoint_files(folder / "checkpoint")[0]


def _weights(folder: Path) -> dict:
    from transformers import BertForMaskedLM

    return BertForMaskedLM.from_pretrained(str(folder)).state_dict()


def test_a_checkpoint_carries_its_sha256_and_resumes_bit_identically(uninterrupted, tokenizer, tmp_path):
    ckpt = _crashed(tmp_path / "run", tokenizer)
    assert ckpt.name == "state-000000010.safetensors"
    side = json.loads(checksum_sidecar(ckpt).read_text(encoding="utf-8"))
    assert (side["file"], side["sha256"], side["size"]) == (ckpt.name, sha256_file(ckpt), ckpt.stat().st_size)
    assert not [p for p in ckpt.parent.iterdir() if p.name.startswith(".") or ".tmp" in p.name]
    res = train_masked_lm(TRAIN, tmp_path / "run", _config(), progress=False)
    assert res.resumed_from_step == 10 and res.completed
    a, b = _weights(uninterrupted), _weights(tmp_path / "run")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_a_damaged_checkpoint_is_not_trusted_and_the_earlier_one_resumes(
    uninterrupted, tokenizer, tmp_path, caplog, damage
):
    ckpt = _crashed(tmp_path / "run", tokenizer)
    if damage == "flip":
        _flip_byte(ckpt)
    else:
        _truncate(ckpt, ckpt.stat().st_size // 3)
    with caplog.at_level(logging.WARNING, logger="biaskit.training.loop"):
        res = train_masked_lm(TRAIN, tmp_path / "run", _config(), progress=False)
    what = "its sha256" if damage == "flip" else "its size"
    assert f"checkpoint not trusted: {ckpt}: {what}" in caplog.text
    earlier = ckpt.parent / "state-000000005.safetensors"
    assert f"resuming from the earlier verified checkpoint {earlier} (step 5)" in caplog.text
    assert res.resumed_from_step == 5 and res.completed
    a, b = _weights(uninterrupted), _weights(tmp_path / "run")
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_checkpoint_without_its_sha256_file_is_not_trusted(tokenizer, tmp_path, caplog):
    ckpt = _crashed(tmp_path / "run", tokenizer)
    checksum_sidecar(ckpt).unlink()
    with caplog.at_level(logging.WARNING, logger="biaskit.training.loop"):
        res = train_masked_lm(TRAIN, tmp_path / "run", _config(), progress=False)
    assert f"checkpoint not trusted: {ckpt}: it has no checksum file" in caplog.text
    assert res.resumed_from_step == 5 and res.completed
