"""Model names never guess: a name that names nothing here is an error saying what was
looked for and how to get it; random stand-ins run only when asked for; relative paths start from the
caller's folder (``BIASKIT_CALLER_CWD``) for models, vectors, corpora and word lists alike."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np
import pytest

from biaskit import lm as mlm
from biaskit.core.paths import CALLER_CWD_ENV, caller_cwd, resolve_user_path
from biaskit.lm import builtin as lm_builtin
from biaskit.lm.loading import hf_cache_dir


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("BIASKIT_MLM", raising=False)
    monkeypatch.delenv("BIASKIT_CLM", raising=False)
    monkeypatch.delenv(CALLER_CWD_ENV, raising=False)


@pytest.fixture(scope="module")
def saved_tiny(tmp_path_factory):
    """A saved masked-LM folder (the tiny stand-in's weights), for loading by path."""
    lm = mlm.tiny_masked_lm(seed=1)
    folder = tmp_path_factory.mktemp("models") / "mymodel"
    lm.model.save_pretrained(folder)
    lm.tokenizer.save_pretrained(folder)
    return folder


def test_model_not_found_error_is_both_a_value_error_and_a_file_not_found_error():
    assert issubclass(mlm.ModelNotFoundError, ValueError)
    assert issubclass(mlm.ModelNotFoundError, FileNotFoundError)
    assert issubclass(mlm.ModelNotFoundError, mlm.ModelNotAvailableError)


@pytest.mark.parametrize("loader", ["resolve_default_model", "get_lm", "get_masked_lm"])
def test_a_typo_of_a_bundled_name_is_an_error_never_the_random_stand_in(
    offline, tmp_path, monkeypatch, loader
):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(mlm.ModelNotFoundError) as err:
        getattr(mlm, loader)("en-mlmm")
    msg = str(err.value)
    assert "Did you mean 'en-mlm'?" in msg
    assert f"a folder {tmp_path / 'en-mlmm'} (not there)" in msg  # the absolute folder it tried
    assert str(hf_cache_dir()) in msg  # the Hugging Face cache it looked in
    assert "Nothing random is run in its place" in msg


def test_an_unknown_hub_id_names_where_it_looked_and_how_to_download(offline, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(mlm.ModelNotFoundError) as err:
        mlm.resolve_default_model("some-org/some-model", language="en")
    msg = str(err.value)
    assert "'some-org/some-model' was not found" in msg and "Did you mean" not in msg
    assert str(hf_cache_dir()) in msg
    assert "huggingface-cli download some-org/some-model" in msg
    # the loader itself (offline) says where it looked too
    with pytest.raises(mlm.ModelNotAvailableError, match="local Hugging Face cache"):
        mlm.get_lm("some-org/some-model")


def test_the_environment_variable_is_named_when_it_names_nothing(offline, monkeypatch):
    monkeypatch.setenv("BIASKIT_MLM", "en-mlmm")
    with pytest.raises(
        mlm.ModelNotFoundError, match=r"'en-mlmm' \(from BIASKIT_MLM\).*Did you mean 'en-mlm'"
    ):
        mlm.resolve_default_model()


def test_a_missing_bundled_model_names_its_folder_and_the_retrain_command(offline, tmp_path, monkeypatch):
    monkeypatch.setenv("BIASKIT_DATA_DIR", str(tmp_path))
    for call in (
        lambda: mlm.resolve_default_model("en-clm", lm_kind="causal"),
        lambda: mlm.get_lm("en-clm"),
        lambda: mlm.get_masked_lm("en-mlm"),
    ):
        with pytest.raises(mlm.ModelNotFoundError) as err:
            call()
        msg = str(err.value)
        assert "python -m biaskit train-models" in msg and str(tmp_path / "models") in msg
        assert "Nothing random is run in its place" in msg


def test_bundled_word_vectors_are_not_loaded_as_a_language_model(offline):
    with pytest.raises(ValueError, match=r"load_trained_vectors\('es-w2v'\)"):
        mlm.get_lm("es-w2v")


def test_stand_ins_run_only_when_named_and_say_their_weights_are_random(offline, caplog):
    with caplog.at_level(logging.WARNING, logger="biaskit.lm.builtin"):
        tiny = mlm.get_lm("tiny")
        causal = mlm.get_lm("tiny-causal")
        masked = mlm.get_masked_lm("tiny")
    assert tiny.is_fallback and causal.is_fallback and masked.is_fallback
    random_warnings = [r.getMessage() for r in caplog.records if "RANDOM WEIGHTS" in r.getMessage()]
    assert len(random_warnings) == 3 and "'tiny-causal'" in random_warnings[1]


def test_auto_takes_the_stand_in_only_with_allow_fallback(offline, tmp_path, monkeypatch, caplog):
    mlm.tiny_masked_lm(seed=0)  # its vocabulary comes from the real data folder: build it first
    monkeypatch.setenv("BIASKIT_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(lm_builtin, "_locally_available", lambda name: False)
    with pytest.raises(mlm.ModelNotFoundError, match="allow_fallback=True"):
        mlm.get_lm(None, language="en")
    with caplog.at_level(logging.WARNING, logger="biaskit.lm.builtin"):
        lm = mlm.get_lm(None, language="en", allow_fallback=True)
    assert lm.is_fallback and any("RANDOM WEIGHTS" in r.getMessage() for r in caplog.records)
    assert mlm.get_masked_lm(None, allow_fallback=True).is_fallback


# ------------------------------------------------------------------------------ relative paths
def test_resolve_user_path_honours_the_caller_folder(monkeypatch, tmp_path):
    monkeypatch.delenv(CALLER_CWD_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert caller_cwd() == Path(os.getcwd())
    assert resolve_user_path("a/b.txt") == Path(os.getcwd()) / "a" / "b.txt"
    assert resolve_user_path(tmp_path / "x") == tmp_path / "x"  # absolute: unchanged
    assert resolve_user_path("~/x") == Path.home() / "x"
    user = tmp_path / "user"
    user.mkdir()
    monkeypatch.setenv(CALLER_CWD_ENV, str(user))
    assert caller_cwd() == user and resolve_user_path("./m") == user / "m"


def test_a_relative_model_folder_means_the_callers_folder(offline, saved_tiny, tmp_path, monkeypatch):
    kernel = tmp_path / "notebooks"  # where papermill runs the kernel
    kernel.mkdir()
    monkeypatch.chdir(kernel)
    monkeypatch.setenv(CALLER_CWD_ENV, str(saved_tiny.parent))
    choice = mlm.resolve_default_model("./mymodel", language="en")
    assert choice.kind == "pretrained" and Path(choice.name) == saved_tiny  # absolute from here on
    lm = mlm.get_lm("./mymodel", device="cpu")
    assert isinstance(lm, mlm.MaskedLM) and not lm.is_fallback and Path(lm.name) == saved_tiny
    # without the variable the same name means the kernel's folder: not there, and said so
    monkeypatch.delenv(CALLER_CWD_ENV)
    with pytest.raises(mlm.ModelNotFoundError, match=f"{kernel / 'mymodel'}: the folder was not found"):
        mlm.resolve_default_model("./mymodel")


def test_vectors_corpora_and_word_lists_resolve_relative_paths_the_same_way(tmp_path, monkeypatch):
    from biaskit.data.corpus import Preprocessing, load_corpus
    from biaskit.data.counterfactual import load_gender_lexicon
    from biaskit.data.wordlists import load_wordlist_file
    from biaskit.embeddings.vectors import load_vectors

    user = tmp_path / "user"
    user.mkdir()
    (user / "v.txt").write_text("3 2\nhe 1 0\nshe 0 1\ndoctor 0.5 0.5\n", encoding="utf-8")
    (user / "corpus.txt").write_text("the doctor said she was late\nhe was not\n", encoding="utf-8")
    (user / "groups.json").write_text(json.dumps({"female": ["she"], "male": ["he"]}), encoding="utf-8")
    (user / "lex.json").write_text(json.dumps({"pairs": [["he", "she"]]}), encoding="utf-8")
    kernel = tmp_path / "notebooks"
    kernel.mkdir()
    monkeypatch.chdir(kernel)
    monkeypatch.setenv(CALLER_CWD_ENV, str(user))
    kv = load_vectors("v.txt")
    assert kv.index_to_key == ["he", "she", "doctor"] and np.allclose(kv["she"], [0, 1])
    sents = load_corpus("./corpus.txt", preprocessing=Preprocessing(stopwords=None), cache=False)
    assert sents == [["the", "doctor", "said", "she", "was", "late"], ["he", "was", "not"]]
    assert load_wordlist_file("groups.json") == {"female": ["she"], "male": ["he"]}
    assert load_gender_lexicon("lex.json").to_female == {"he": "she"}
    # not found: the message names the absolute path it tried
    with pytest.raises(FileNotFoundError, match=str(user / "missing.txt")):
        load_vectors("missing.txt")


def test_the_notebook_command_passes_the_callers_folder_to_the_kernel(tmp_path, monkeypatch):
    import papermill

    from biaskit import __main__ as cli

    seen = {}

    def fake_execute(src, dst, **kwargs):
        seen["env"] = os.environ.get(CALLER_CWD_ENV)
        seen["cwd"] = kwargs["cwd"]

    monkeypatch.setattr(papermill, "execute_notebook", fake_execute)
    monkeypatch.delenv(CALLER_CWD_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    nb = tmp_path / "nbs" / "01_x.ipynb"
    assert cli._execute_notebook(nb, tmp_path / "out" / "01_x.ipynb", {}) == 0
    assert seen == {"env": os.getcwd(), "cwd": str(nb.parent)}
    assert CALLER_CWD_ENV not in os.environ  # restored afterwards
