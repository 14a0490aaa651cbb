"""Loading language models offline-safely: a local folder, the Hugging Face cache, or the hub when reachable.

The same rules hold for masked (:func:`load_masked_lm`) and causal (:func:`load_causal_lm`) models;
:func:`load_lm` reads the model's ``config.json`` and picks the kind.  A hub id is first looked up in the
local Hugging Face cache only; the network is tried only when offline mode is off and the hub answers,
so nothing hangs without a network.  A model that cannot be found raises
:class:`ModelNotAvailableError` naming it and how to download it.  Bundled trained-here models and the
random stand-ins are resolved by name in :mod:`biaskit.lm.builtin`.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import json
import logging
import os
import re
import shutil
import socket
import struct
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from biaskit.core.io import (
    CHECKSUM_SUFFIX,
    DiskFullError,
    cache_file_problem,
    checksum_sidecar,
    write_cache_checksum,
)
from biaskit.core.paths import caller_cwd, resolve_user_path
from biaskit.lm.base import CausalLM, LanguageModel, MaskedLM, ModelKind, resolve_device

__all__ = [
    "BETO",
    "DEFAULT_MODEL",
    "ModelNotAvailableError",
    "ModelFolderError",
    "ModelNotFoundError",
    "check_model_folder",
    "hf_cache_dir",
    "how_to_get_model",
    "load_causal_lm",
    "load_lm",
    "load_masked_lm",
    "model_folder_problem",
    "model_kind",
    "quiet_hf_progress",
    "recorded_key",
    "resolve_dtype",
    "save_model_folder",
    "sealed_files",
]

logger = logging.getLogger(__name__)

#: BETO uncased (Cañete et al. 2020), the model of the thesis (seed 000, section 4.4.1).
BETO = "dccuchile/bert-base-spanish-wwm-uncased"
DEFAULT_MODEL = BETO


class ModelNotAvailableError(FileNotFoundError):
    """The requested model is neither a local folder nor in the Hugging Face cache, and the hub
    cannot be reached (or offline mode is on)."""


class ModelNotFoundError(ModelNotAvailableError, ValueError):
    """A model name that names nothing on this machine: not a bundled model, not an existing folder, not a
    hub id in the local Hugging Face cache (:func:`biaskit.lm.builtin.resolve_default_model`,
    :func:`biaskit.lm.builtin.get_lm`).  The message says what was looked for (the name, the absolute
    folder, the cache) and how to get the model; nothing random is run in its place.  Both a
    ``FileNotFoundError`` (a :class:`ModelNotAvailableError`) and a ``ValueError``."""


class ModelFolderError(ValueError):
    """A local model folder that cannot be loaded as it is: a file missing (weights, tokenizer), truncated
    or not decodable.  The message names the file and what is wrong (:func:`check_model_folder`)."""


#: files that hold a model's weights (one of them, or a sharded index, must be in a folder)
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
    "tf_model.h5",
    "flax_model.msgpack",
)
#: files from which transformers builds a tokenizer (one of these sets must be in a folder)
TOKENIZER_FILES = (
    ("tokenizer.json",),
    ("vocab.txt",),
    ("vocab.json", "merges.txt"),
    ("spiece.model",),
    ("sentencepiece.bpe.model",),
    ("tokenizer.model",),
)

#: the other files ``transformers`` reads from a model folder to build a model or its tokenizer
MODEL_CONFIG_FILES = ("config.json", "generation_config.json")
TOKENIZER_CONFIG_FILES = (
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "chat_template.jinja",
    "chat_template.json",
)
#: sharded weights: ``model-00001-of-00002.safetensors`` and the like
_WEIGHT_SHARDS = ("model-*.safetensors", "pytorch_model-*.bin")


def _is_weight_file(name: str) -> bool:
    return name in WEIGHT_FILES or any(fnmatch.fnmatchcase(name, pat) for pat in _WEIGHT_SHARDS)


def _is_tokenizer_file(name: str) -> bool:
    return name in TOKENIZER_CONFIG_FILES or any(name in group for group in TOKENIZER_FILES)


def _is_model_file(name: str) -> bool:
    return _is_weight_file(name) or name in MODEL_CONFIG_FILES or _is_tokenizer_file(name)


#: the record a training run writes beside its model: not a model file (its trainer checks it)
RECORD_FILE = "training.json"


def sealed_files(folder: str | Path) -> list[Path]:
    """The files of a model folder that a load reads and that a seal covers (:func:`save_model_folder`).

    Every top-level file ``transformers`` reads to build the model or its tokenizer: the configuration
    (``config.json``, ``generation_config.json``), the weights (:data:`WEIGHT_FILES` and shards) and the
    tokenizer files (:data:`TOKENIZER_FILES`, ``tokenizer_config.json``, ...), and any other top-level
    file that has a sha256 sidecar; not the sidecars, hidden files, sub-folders (``checkpoint/``) or the
    training record ``training.json``, which its trainer checks.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(
        f
        for f in folder.iterdir()
        if f.is_file()
        and not f.name.startswith(".")
        and not f.name.endswith(CHECKSUM_SUFFIX)
        and f.name != RECORD_FILE
        and (_is_model_file(f.name) or checksum_sidecar(f).exists())
    )


def recorded_key(path: str | Path) -> str | None:
    """The cache key the sha256 sidecar of ``path`` records (:func:`biaskit.core.io.write_cache_checksum`),
    or None when there is none or it is unreadable."""
    try:
        record = json.loads(checksum_sidecar(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    key = record.get("key") if isinstance(record, dict) else None
    return key if isinstance(key, str) else None


def model_folder_problem(folder: str | Path, key: str | None = None, *, require: bool = False) -> str | None:
    """Why the model saved in ``folder`` must not be used, or None when its sha256 files vouch for it.

    A folder biaskit saved (a trained model, a fine-tune, :func:`save_model_folder` with a ``key``) has a
    sha256 sidecar beside each of its model files (:func:`sealed_files`), written by
    :func:`biaskit.core.io.write_cache_checksum` with the run's key.  Each model file present must match
    its sidecar (:func:`biaskit.core.io.cache_file_problem`: a changed or truncated byte, a missing or
    unreadable sidecar, a sidecar of another file or run, a file others may write), and a weights file
    must be there.  The answer names the file: ``"model.safetensors: its sha256 ... differs ..."``.

    ``key``: the run the folder must belong to (the trainer's); ``None`` takes the key its weights'
    sidecar records, so that only the files' integrity is checked (:func:`check_model_folder`).  A folder
    with no sidecar at all (a model biaskit did not save) is not checked (``None``) unless ``key`` is
    given or ``require`` is true, when it is refused as not written by biaskit.
    """
    folder = Path(folder)
    files = sealed_files(folder)
    sealed = [f for f in files if checksum_sidecar(f).exists()]
    if key is None:
        if not sealed:
            return f"{folder} has no sha256 files (not saved by biaskit)" if require else None
        weights = [f for f in sealed if _is_weight_file(f.name)]
        key = recorded_key((weights or sealed)[0])
        if key is None:
            return (
                f"{(weights or sealed)[0].name}: its checksum file is unreadable or of an earlier biaskit's "
                "format"
            )
    if not any(_is_weight_file(f.name) for f in files):
        return f"no weights file ({WEIGHT_FILES[0]}) in {folder}"
    for f in files:
        problem = cache_file_problem(f, key)
        if problem:
            return f"{f.name}: {problem}"
    return None


def _disk_full(exc: OSError, path: Path) -> DiskFullError:
    """The :class:`biaskit.core.io.DiskFullError` of a model save that ran out of space at ``path``."""
    try:
        free = f"; {shutil.disk_usage(path.parent).free:,} bytes are free there"
    except OSError:
        free = ""
    err = DiskFullError(
        exc.errno,
        f"no space left to write {path}{free}: free some space on that disk, or write elsewhere (another "
        f"output folder, or BIASKIT_CACHE_DIR on a larger disk); the files in {path.parent} were left as "
        "they were",
    )
    err.filename = str(path)
    return err


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_model_folder(
    folder: str | Path, *, model: Any = None, tokenizer: Any = None, key: str | None = None
) -> list[Path]:
    """Save ``model`` and / or ``tokenizer`` (``save_pretrained``, safetensors) into ``folder``, file by file
    atomically; with ``key``, seal each model file with a sha256 sidecar.  Returns the files written.

    Everything is first written to a unique temporary folder inside ``folder``, flushed to disk, then each
    file moved onto its name with :func:`os.replace` (a reader sees the old file or the new one, never
    half of one).  A full disk raises :class:`biaskit.core.io.DiskFullError` naming the file; the
    temporary folder is removed and ``folder``'s files are left as they were.  Weights files (shards,
    ``pytorch_model.bin``) and tokenizer files left in ``folder`` by another model, that this save did not
    write, are removed with a WARNING: they would be read with the new ones.

    ``key`` (the training run's, :func:`biaskit.training.loop.training_key`): each model file of the
    folder (:func:`sealed_files`) gets its sidecar (:func:`biaskit.core.io.write_cache_checksum`) and
    loses any group / other write permission, so that :func:`model_folder_problem` vouches for it and
    :func:`check_model_folder` checks it at every load.  Without a key (the bundled models, checked against
    ``data/models/MANIFEST.json`` instead) no sidecar is written.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder, prefix=".saving-"))
    written: list[Path] = []
    try:
        target = folder
        try:
            if model is not None:
                model.save_pretrained(str(tmp), safe_serialization=True)
            if tokenizer is not None:
                tokenizer.save_pretrained(str(tmp))
            new = sorted(f for f in tmp.iterdir() if f.is_file())
            for f in new:
                target = folder / f.name
                _fsync(f)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
                where = folder / Path(exc.filename).name if exc.filename else target
                raise _disk_full(exc, where) from exc
            raise
        names = {f.name for f in new}
        for old in sealed_files(folder):
            stale = old.name not in names and (
                (model is not None and _is_weight_file(old.name))
                or (tokenizer is not None and _is_tokenizer_file(old.name))
            )
            if stale:
                logger.warning("%s: removed, a file of another model that this save did not write", old)
                old.unlink()
                checksum_sidecar(old).unlink(missing_ok=True)
        for f in new:
            os.replace(f, folder / f.name)
            written.append(folder / f.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if key is not None:
        for f in sealed_files(folder):
            mode = f.stat().st_mode
            if os.name == "posix" and mode & 0o022:
                os.chmod(f, mode & ~0o022 & 0o7777)
            write_cache_checksum(f, key)
    return written


def _safetensors_problem(f: Path) -> str | None:
    """Why the safetensors file ``f`` cannot be read whole (truncated, a damaged header), else ``None``.

    The format: 8 bytes (little-endian header length ``n``), ``n`` bytes of JSON giving each tensor's
    ``data_offsets``, then the data; the file must be ``8 + n + max(end offset)`` bytes long.
    """
    size = f.stat().st_size
    with open(f, "rb") as fh:
        raw = fh.read(8)
        if len(raw) < 8:
            return f"truncated: {size} bytes, not even the 8-byte header length"
        (n,) = struct.unpack("<Q", raw)
        if n > size - 8:
            return f"truncated or not safetensors: the header declares {n:,} bytes but the file has {size:,}"
        try:
            header = json.loads(fh.read(n).decode("utf-8"))
            end = max(
                (int(t["data_offsets"][1]) for k, t in header.items() if k != "__metadata__"), default=0
            )
        except (UnicodeDecodeError, ValueError, KeyError, TypeError, IndexError) as exc:
            return f"its header is not valid safetensors JSON ({type(exc).__name__}: {exc})"
    want = 8 + n + end
    if size < want:
        return f"truncated: {size:,} of {want:,} bytes"
    if size > want:
        return f"{size - want:,} bytes after the end of the last tensor (damaged or not safetensors)"
    return None


def _declared_kinds(config: dict) -> set[str]:
    """``{"masked"}`` / ``{"causal"}`` from ``config["architectures"]`` (empty when it names neither)."""
    kinds = set()
    for arch in config.get("architectures") or []:
        if str(arch).endswith("ForMaskedLM"):
            kinds.add("masked")
        elif str(arch).endswith(("ForCausalLM", "LMHeadModel")) and not str(arch).startswith("XLNet"):
            kinds.add("causal")
    return kinds


def check_model_folder(path: str | Path, kind: ModelKind | None = None) -> None:
    """Check that the local folder ``path`` holds a loadable model of ``kind``, before transformers reads it.

    :class:`ModelFolderError` (a ``ValueError``) naming the file and what is wrong: ``config.json`` that
    is not valid JSON; no weights file (:data:`WEIGHT_FILES`); a safetensors file that is truncated or
    whose header is damaged; a ``pytorch_model.bin`` zip archive that is cut short; no tokenizer files
    (:data:`TOKENIZER_FILES`) or a ``tokenizer.json`` that is not valid JSON; in a folder biaskit saved
    (sha256 sidecars beside its files, :func:`save_model_folder`), a file that no longer matches its
    sidecar (:func:`model_folder_problem`).  ``TypeError`` when the
    configuration declares the other kind of model (a causal folder given to the masked loader, or the
    reverse), naming the architecture and the loader to use.
    """
    folder = Path(path)
    cfg_file = folder / "config.json"
    try:
        config = json.loads(cfg_file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ModelFolderError(
            f"{cfg_file}: not valid JSON ({type(exc).__name__}: {exc}); the folder is damaged: save the "
            "model there again (model.save_pretrained(folder))"
        ) from exc
    if kind is not None:
        declared = _declared_kinds(config if isinstance(config, dict) else {})
        if declared and kind not in declared:
            other = declared.pop()
            loader = "load_causal_lm" if other == "causal" else "load_masked_lm"
            raise TypeError(
                f"{folder} holds a {other} language model ({', '.join(config['architectures'])} in "
                f"{cfg_file.name}), not a {kind} one: load it with biaskit.lm.{loader}, or with "
                "biaskit.lm.get_lm / load_lm, which read the kind from its configuration"
            )
    weights = [folder / w for w in WEIGHT_FILES if (folder / w).is_file()]
    weights += [f for f in sorted(folder.glob("model-*.safetensors")) if f not in weights]
    if not weights:
        raise ModelFolderError(
            f"{folder}: no weights file ({' or '.join(WEIGHT_FILES[:3])}): the folder is incomplete; save "
            "the model there with model.save_pretrained(folder)"
        )
    for f in weights:
        problem = None
        if f.suffix == ".safetensors":
            problem = _safetensors_problem(f)
        elif f.name == "pytorch_model.bin":
            with open(f, "rb") as fh:
                zipped = fh.read(2) == b"PK"
            if zipped and not zipfile.is_zipfile(f):
                problem = f"truncated: the zip archive of {f.stat().st_size:,} bytes has no end record"
        if problem:
            raise ModelFolderError(
                f"{f}: {problem}. The weights cannot be loaded; copy or save the model there again"
            )
    if not any(all((folder / n).is_file() for n in group) for group in TOKENIZER_FILES):
        names = ", ".join(" + ".join(g) for g in TOKENIZER_FILES)
        raise ModelFolderError(
            f"{folder}: no tokenizer files (one of: {names}): save the tokenizer there too, "
            "tokenizer.save_pretrained(folder)"
        )
    tok_json = folder / "tokenizer.json"
    if tok_json.is_file():
        try:
            json.loads(tok_json.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ModelFolderError(
                f"{tok_json}: not valid JSON ({type(exc).__name__}: {exc}); the tokenizer file is damaged: "
                "save the tokenizer there again"
            ) from exc
    problem = model_folder_problem(folder)
    if problem:
        raise ModelFolderError(
            f"{folder}: {problem}. biaskit saved this model with a sha256 file beside each of its files, and "
            "they no longer vouch for it: nothing was loaded from it. Fix: run the same training or "
            "fine-tuning call again (it writes the model again, from its verified checkpoint or by "
            "training), or delete the folder"
        )


def hf_cache_dir() -> Path:
    """The local Hugging Face hub cache (``HF_HUB_CACHE``, ``HF_HOME``; default
    ``~/.cache/huggingface/hub``)."""
    try:
        from huggingface_hub import constants

        return Path(constants.HF_HUB_CACHE)
    except Exception:  # pragma: no cover - huggingface_hub is a dependency of transformers
        return Path.home() / ".cache" / "huggingface" / "hub"


def where_looked(name: str) -> str:
    """``"looked for a folder /abs/name (not there) and in the Hugging Face cache /.../hub (not there)"``."""
    return (
        f"looked for a folder {resolve_user_path(name)} (not there) and in the local Hugging Face cache "
        f"{hf_cache_dir()} (not there)"
    )


_HUB_ID = re.compile(r"^(?:[A-Za-z0-9][\w.-]*/)?[A-Za-z0-9][\w.-]*$")


def _is_hub_id(name: str) -> bool:
    """True when ``name`` is spelled like a Hugging Face hub id (``name`` or ``org/name``)."""
    return (
        len(name) <= 96
        and bool(_HUB_ID.match(name))
        and "--" not in name
        and ".." not in name
        and not name.endswith((".", "-"))
    )


def _looks_like_path(name: str) -> bool:
    """True when ``name`` is meant as a folder on this machine rather than a hub id.

    A path: absolute, starting with ``~``, ``./`` or ``../`` (or ``.``/``..``), containing a
    backslash, a name with a separator whose parent folder exists here (``models/bert`` with a
    local ``models/``), or any name that is not a valid hub id (``a/b/c``, spaces, ...).
    """
    if not name:
        return False
    if os.path.isabs(name) or name in (".", "..") or name.startswith(("~", "./", "../", ".\\", "..\\")):
        return True
    if "\\" in name:
        return True
    if "/" in name or os.sep in name:
        parent = Path(name).expanduser().parent
        if str(parent) not in ("", ".") and resolve_user_path(parent).is_dir():
            return True
    return not _is_hub_id(name)


def how_to_get_model(name: str) -> str:
    """Instructions (for an error message) on getting the model ``name`` for offline use.

    For a hub id: how to download it once with ``huggingface-cli`` and point biaskit at the
    folder.  For a name that is a local path (:func:`_looks_like_path`): that the folder
    (resolved to an absolute path) was not found or is not a saved model, and how to put a
    model there; a path is never passed to ``huggingface-cli download`` as if it were a hub id.
    """
    if _looks_like_path(name):
        p = resolve_user_path(name).resolve()
        if not p.exists():
            state = "the folder was not found"
        elif not p.is_dir():
            state = "it is a file, not a model folder"
        else:
            state = "the folder is not a saved model (it has no config.json)"
        return (
            f"{name!r} is a local path, not a Hugging Face hub id: {p}: {state} "
            f"(relative paths start from the working directory {caller_cwd()}).\n"
            "Check the path, or save a model there once on a machine with internet access, e.g.\n"
            f"    huggingface-cli download <hub-id, e.g. {BETO}> --local-dir {p}\n"
            "and copy the folder to this machine."
        )
    return (
        f"To use {name!r} offline, download it once on a machine with internet access:\n"
        f"    huggingface-cli download {name} --local-dir ./models/{name.split('/')[-1]}\n"
        f'(or: python -c "from transformers import AutoModelForMaskedLM as M, AutoTokenizer as T; '
        f"T.from_pretrained('{name}').save_pretrained('./models/x'); "
        f"M.from_pretrained('{name}').save_pretrained('./models/x')\")\n"
        "then pass the folder path as the model name (e.g. model='./models/...'), or copy the "
        "Hugging Face cache (~/.cache/huggingface/hub) to this machine."
    )


def _hf_offline() -> bool:
    return any(
        os.environ.get(v, "").strip().lower() in {"1", "true", "yes", "on"}
        for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def _hub_reachable(timeout: float = 3.0) -> bool:
    """True when a TCP connection to the Hugging Face endpoint opens within ``timeout`` seconds."""
    from urllib.parse import urlparse

    url = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    host, port = url.hostname or "huggingface.co", url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _load_pretrained(
    name_or_path: str | Path,
    auto_class: Any,
    *,
    device: str | torch.device,
    revision: str | None,
    local_files_only: bool | None,
    hub_timeout: float,
    dtype: str | torch.dtype | None = None,
    kind: ModelKind | None = None,
) -> tuple[Any, Any, str]:
    """Tokenizer + model of ``auto_class`` from a folder, the local HF cache or (when allowed and
    reachable) the hub; eval mode, on ``device``; half precision widened to float32 on a CPU unless
    ``dtype`` asks for a precision (:func:`resolve_dtype`).  A folder is checked first
    (:func:`check_model_folder`: files present and whole, of the ``kind`` asked for)."""
    from transformers import AutoTokenizer

    name = str(name_or_path)
    dev = resolve_device(device)
    path = resolve_user_path(name)

    def _load(src: str, local_only: bool) -> tuple[Any, Any]:
        tok = AutoTokenizer.from_pretrained(src, revision=revision, local_files_only=local_only)
        mdl = auto_class.from_pretrained(src, revision=revision, local_files_only=local_only)
        return tok, mdl

    if not path.exists() and _looks_like_path(name):
        raise ModelNotAvailableError(how_to_get_model(name))
    if path.exists():
        if not path.is_dir() or not (path / "config.json").exists():
            raise ModelNotAvailableError(how_to_get_model(str(path.resolve())))
        check_model_folder(path, kind)
        tok, mdl = _load(str(path), True)
        name = str(path)
    else:
        try:
            tok, mdl = _load(name, True)
        except (OSError, ValueError) as exc:
            offline = _hf_offline() if local_files_only is None else local_files_only
            if offline:
                raise ModelNotAvailableError(
                    f"model {name!r} is not in the local Hugging Face cache and offline mode is on "
                    f"(HF_HUB_OFFLINE / local_files_only): {where_looked(name)}. " + how_to_get_model(name)
                ) from exc
            if not _hub_reachable(hub_timeout):
                raise ModelNotAvailableError(
                    f"model {name!r} is not in the local Hugging Face cache and the hub cannot be "
                    f"reached (no network): {where_looked(name)}. " + how_to_get_model(name)
                ) from exc
            try:
                tok, mdl = _load(name, False)
            except (OSError, ValueError) as exc2:
                raise ModelNotAvailableError(
                    f"could not load {name!r} from the hub: {exc2}. " + how_to_get_model(name)
                ) from exc2
    mdl.eval()
    want = resolve_dtype(dtype)
    if want is not None:
        mdl = mdl.to(want)
    elif dev.type == "cpu" and mdl.dtype in (torch.float16, torch.bfloat16):
        mdl = mdl.float()
    mdl.to(dev)
    return tok, mdl, name


_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def resolve_dtype(dtype: str | torch.dtype | None) -> torch.dtype | None:
    """``None`` (keep the default: float32 on a CPU, the stored precision on a GPU), or the weights'
    precision.

    ``"float32"``, ``"bfloat16"`` or ``"float16"`` (or the ``torch.dtype``).  Half precision halves the
    memory and, on a GPU, speeds scoring up; the scorers still take the log-softmax in float32, and the
    deviation of the scores from float32 is measured by ``benchmarks/bench_precision.py`` (see the README).
    """
    if dtype is None:
        return None
    if isinstance(dtype, torch.dtype):
        if dtype not in _DTYPES.values():
            raise ValueError(f"dtype must be float32, bfloat16 or float16, got {dtype}")
        return dtype
    if str(dtype) not in _DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(_DTYPES)}, got {dtype!r}")
    return _DTYPES[str(dtype)]


def load_masked_lm(
    name_or_path: str | Path,
    *,
    device: str | torch.device = "auto",
    revision: str | None = None,
    local_files_only: bool | None = None,
    lowercase: bool | None = None,
    hub_timeout: float = 3.0,
    dtype: str | torch.dtype | None = None,
) -> MaskedLM:
    """Load a Hugging Face masked LM (``AutoTokenizer`` + ``AutoModelForMaskedLM``) in eval mode.

    ``name_or_path`` is a local folder (used as is) or a hub id.  A hub id is first looked
    up in the local Hugging Face cache only; the network is tried only when offline mode
    is off (``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE`` unset and ``local_files_only``
    not ``True``) **and** the hub answers a TCP connection within ``hub_timeout`` seconds,
    so nothing hangs without a network.  A model that cannot be found raises
    :class:`ModelNotAvailableError` naming the model and how to download it.  A folder is checked
    before it is read (:func:`check_model_folder`): a missing or truncated weights or tokenizer file
    raises :class:`ModelFolderError` naming it, a causal model's folder raises ``TypeError``.

    ``device="auto"`` picks CUDA when available, else CPU.  Weights stored in half precision (the
    bundled trained models, :mod:`biaskit.training.recipes`) are loaded as float32 on a CPU, where
    half-precision arithmetic is slow and inexact; on a GPU they stay as stored.  ``dtype``
    (``"float32"``, ``"bfloat16"``, ``"float16"``) sets the precision explicitly (:func:`resolve_dtype`).
    """
    from transformers import AutoModelForMaskedLM

    tok, mdl, name = _load_pretrained(
        name_or_path,
        AutoModelForMaskedLM,
        device=device,
        revision=revision,
        local_files_only=local_files_only,
        hub_timeout=hub_timeout,
        dtype=dtype,
        kind="masked",
    )
    return MaskedLM(model=mdl, tokenizer=tok, name=name, revision=revision, lowercase=lowercase)


def load_causal_lm(
    name_or_path: str | Path,
    *,
    device: str | torch.device = "auto",
    revision: str | None = None,
    local_files_only: bool | None = None,
    lowercase: bool | None = None,
    hub_timeout: float = 3.0,
    dtype: str | torch.dtype | None = None,
) -> CausalLM:
    """Load a Hugging Face causal LM (``AutoTokenizer`` + ``AutoModelForCausalLM``) in eval mode.

    GPT-2, Llama, Mistral, Qwen, ... or a folder written by :func:`biaskit.training.pretrain.train_causal_lm`.
    The offline rules, devices and precision are those of :func:`load_masked_lm`.  Sentences are
    scored after the tokenizer's BOS token (else its EOS: :attr:`CausalLM.prefix_token_id`).
    """
    from transformers import AutoModelForCausalLM

    tok, mdl, name = _load_pretrained(
        name_or_path,
        AutoModelForCausalLM,
        device=device,
        revision=revision,
        local_files_only=local_files_only,
        hub_timeout=hub_timeout,
        dtype=dtype,
        kind="causal",
    )
    return CausalLM(model=mdl, tokenizer=tok, name=name, revision=revision, lowercase=lowercase)


def model_kind(name_or_path: str | Path, *, revision: str | None = None) -> ModelKind:
    """``"masked"`` or ``"causal"``: what the model's ``config.json`` declares (looked up locally only).

    The ``architectures`` entry decides (``...ForMaskedLM`` -> masked; ``...ForCausalLM`` /
    ``...LMHeadModel`` -> causal); without it, the ``model_type``: masked when transformers knows a
    masked-LM class for it and no causal one, else causal.  :class:`ModelNotAvailableError` when the
    configuration is not on this machine.
    """
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    name = str(name_or_path)
    path = resolve_user_path(name)
    if path.exists() and not (path / "config.json").exists():
        raise ModelNotAvailableError(how_to_get_model(str(path.resolve())))
    try:
        src = str(path) if path.exists() else name
        cfg = AutoConfig.from_pretrained(src, revision=revision, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ModelNotAvailableError(
            f"the configuration of {name!r} is not on this machine ({where_looked(name)}). "
            + how_to_get_model(name)
        ) from exc
    for arch in getattr(cfg, "architectures", None) or []:
        if arch.endswith("ForMaskedLM"):
            return "masked"
        if arch.endswith(("ForCausalLM", "LMHeadModel")):
            return "causal"
    mt = getattr(cfg, "model_type", "")
    if mt in MODEL_FOR_MASKED_LM_MAPPING_NAMES and mt not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return "masked"
    return "causal" if mt in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES else "masked"


def load_lm(
    name_or_path: str | Path,
    *,
    kind: ModelKind | None = None,
    device: str | torch.device = "auto",
    revision: str | None = None,
    local_files_only: bool | None = None,
    lowercase: bool | None = None,
    dtype: str | torch.dtype | None = None,
) -> LanguageModel:
    """Load a masked or causal model: ``kind`` if given, else what :func:`model_kind` reads from its
    config."""
    kind = kind or model_kind(name_or_path, revision=revision)
    loader = load_causal_lm if kind == "causal" else load_masked_lm
    return loader(
        name_or_path,
        device=device,
        revision=revision,
        local_files_only=local_files_only,
        lowercase=lowercase,
        dtype=dtype,
    )


@contextlib.contextmanager
def quiet_hf_progress(quiet: bool = True) -> Iterator[None]:
    """Hide transformers' own progress bars ("Loading weights", "Writing model shards") inside the block.

    With ``quiet=False`` nothing changes.  The previous setting is restored on exit.
    """
    from transformers.utils import logging as hf_logging

    was = hf_logging.is_progress_bar_enabled()
    if quiet:
        hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if quiet and was:
            hf_logging.enable_progress_bar()
