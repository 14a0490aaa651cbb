"""Formats are read from the bytes, not trusted from the name: vector files whatever
their extension, model folders that are incomplete, truncated or of the other kind, sentence encoders on a
causal model."""

from __future__ import annotations

import gzip
import shutil

import numpy as np
import pytest

from biaskit import lm as lms
from biaskit.embeddings.encoders import TransformerEncoder, load_encoder
from biaskit.embeddings.vectors import detect_format, from_dict, load_vectors, save_vectors
from biaskit.lm.loading import ModelFolderError, check_model_folder


@pytest.fixture(scope="module")
def kv():
    rng = np.random.default_rng(0)
    return from_dict({w: rng.normal(size=5) for w in ["he", "she", "doctor", "nurse", "é-word"]})


def _same(a, b) -> None:
    assert b.index_to_key == a.index_to_key
    np.testing.assert_allclose(b.vectors, a.vectors, rtol=1e-6)


# ----------------------------------------------------------------------------- vector files
@pytest.mark.parametrize(
    ("written_as", "named", "detected"),
    [
        ("word2vec", "v.bin", "word2vec"),  # text named .bin: read as text, never binary garbage
        ("word2vec-binary", "v.vec", "word2vec-binary"),  # binary named .vec
        ("word2vec-binary", "v.txt", "word2vec-binary"),
        ("word2vec", "v.kv", "word2vec"),  # text named .kv
        ("kv", "v.bin", "kv"),  # gensim's pickle named .bin
        ("kv", "v.dat", "kv"),
    ],
)
def test_the_first_bytes_decide_the_format_not_the_name(tmp_path, kv, written_as, named, detected):
    path = save_vectors(kv, tmp_path / named, format=written_as)
    assert detect_format(path) == detected
    _same(kv, load_vectors(path))


def test_a_format_the_bytes_contradict_is_refused(tmp_path, kv):
    text = save_vectors(kv, tmp_path / "v.bin", format="word2vec")
    with pytest.raises(
        ValueError,
        match=r"format='word2vec-binary' was given but the file's first bytes are "
        r"those of 'word2vec'; pass format='word2vec' or format='auto'",
    ):
        load_vectors(text, format="word2vec-binary")
    binary = save_vectors(kv, tmp_path / "b.bin", format="word2vec-binary")
    with pytest.raises(ValueError, match="first bytes are those of 'word2vec-binary'"):
        load_vectors(binary, format="glove")
    _same(kv, load_vectors(text, format="fasttext"))  # text variants read alike


def test_compression_is_read_from_the_bytes(tmp_path, kv):
    text = save_vectors(kv, tmp_path / "v.txt", format="word2vec")
    hidden = tmp_path / "v-compressed.txt"  # gzip without a .gz name
    hidden.write_bytes(gzip.compress(text.read_bytes()))
    assert detect_format(hidden) == "word2vec"
    _same(kv, load_vectors(hidden))
    binary = save_vectors(kv, tmp_path / "b.bin", format="word2vec-binary")
    zipped = tmp_path / "b2.bin"
    zipped.write_bytes(gzip.compress(binary.read_bytes()))
    with pytest.raises(
        ValueError, match=r"b2\.bin: gzip-compressed but not named \.gz; rename it \(add the \.gz\)"
    ):
        load_vectors(zipped)
    (tmp_path / "b3.bin.gz").write_bytes(gzip.compress(binary.read_bytes()))
    _same(kv, load_vectors(tmp_path / "b3.bin.gz"))


def test_bytes_that_are_no_vector_file_fail_clearly(tmp_path):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(ValueError, match=r"junk\.bin: cannot recognise the vector format"):
        load_vectors(junk)
    fake_kv = tmp_path / "fake.kv"
    fake_kv.write_text("not vectors at all\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"fake\.kv: named \.kv but not a gensim KeyedVectors file"):
        load_vectors(fake_kv)


# ----------------------------------------------------------------------------- model folders
@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Saved folders of the two random stand-ins: ``{"masked": path, "causal": path}``."""
    root = tmp_path_factory.mktemp("folders")
    out = {}
    for kind, lm in (("masked", lms.tiny_masked_lm(seed=2)), ("causal", lms.tiny_causal_lm(seed=2))):
        lm.model.save_pretrained(root / kind)
        lm.tokenizer.save_pretrained(root / kind)
        out[kind] = root / kind
    return out


@pytest.fixture
def masked_copy(folders, tmp_path):
    return shutil.copytree(folders["masked"], tmp_path / "copy")


def test_a_folder_without_tokenizer_files_is_named(masked_copy):
    for f in ("tokenizer.json", "vocab.txt"):
        (masked_copy / f).unlink(missing_ok=True)
    with pytest.raises(
        ModelFolderError, match=rf"{masked_copy}: no tokenizer files \(one of: tokenizer\.json, vocab\.txt"
    ):
        lms.load_masked_lm(masked_copy)


def test_a_truncated_weights_file_is_named_with_its_size(masked_copy):
    weights = masked_copy / "model.safetensors"
    full = weights.stat().st_size
    weights.write_bytes(weights.read_bytes()[: full - 100])
    with pytest.raises(
        ModelFolderError, match=rf"model\.safetensors: truncated: {full - 100:,} of {full:,} bytes"
    ):
        lms.get_lm(str(masked_copy))
    weights.write_bytes(b"\x05\x00")
    with pytest.raises(ModelFolderError, match="not even the 8-byte header length"):
        check_model_folder(masked_copy)


def test_a_folder_without_weights_or_with_a_damaged_config_is_named(masked_copy):
    (masked_copy / "config.json").write_bytes(b'{"architectures": ["BertForMaskedLM"], \xff')
    with pytest.raises(ModelFolderError, match=r"config\.json: not valid JSON"):
        lms.load_masked_lm(masked_copy)
    (masked_copy / "config.json").write_text('{"architectures": ["BertForMaskedLM"]}', encoding="utf-8")
    (masked_copy / "model.safetensors").unlink()
    with pytest.raises(ModelFolderError, match=rf"{masked_copy}: no weights file \(model\.safetensors or"):
        lms.load_masked_lm(masked_copy)


def test_a_folder_of_the_other_kind_is_refused_by_the_loader(folders):
    with pytest.raises(
        TypeError,
        match=r"holds a causal language model \(GPT2LMHeadModel in config\.json\), not a "
        r"masked one: load it with biaskit\.lm\.load_causal_lm",
    ):
        lms.load_masked_lm(folders["causal"])
    with pytest.raises(TypeError, match=r"holds a masked language model \(BertForMaskedLM .*load_masked_lm"):
        lms.load_causal_lm(folders["masked"])
    with pytest.raises(TypeError, match="holds a causal language model"):
        lms.get_lm(str(folders["causal"]), kind="masked")
    with pytest.raises(TypeError, match="holds a causal language model"):
        lms.get_masked_lm("en-clm")  # a bundled causal model by name, to the masked loader
    # read by kind, both load
    assert lms.get_lm(str(folders["causal"])).kind == "causal"
    assert lms.get_lm(str(folders["masked"])).kind == "masked"


# ----------------------------------------------------------------------------- sentence encoders
def test_a_sentence_encoder_refuses_a_causal_model(folders):
    causal = lms.tiny_causal_lm(seed=2)
    with pytest.raises(
        TypeError,
        match=r"needs a bidirectional \(BERT-family\) encoder; .* causal, left-to-right "
        r"model \(GPT2LMHeadModel\)",
    ):
        TransformerEncoder(causal.model, causal.tokenizer)
    with pytest.raises(TypeError, match="causal, left-to-right model"):
        load_encoder(causal)
    with pytest.raises(TypeError, match="holds a causal language model"):
        load_encoder(str(folders["causal"]))
    masked = lms.tiny_masked_lm(seed=2)
    enc = load_encoder(masked).encode(["This is a doctor."])
    assert enc.ok.all()
