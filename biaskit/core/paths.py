"""Locations of the bundled resources and of the on-disk cache.

Where the bundled resources come from:

* **in a checkout of the repository** (the folder holding ``pyproject.toml`` and ``biaskit/``):
  its ``data/``, ``wordlists/``, ``notebooks/`` and ``experiments/`` folders, as always;
* **installed from a wheel** (``pip install biaskit biaskit-data``): the companion distribution
  ``biaskit-data``, built from this repository (``python packaging/build_dists.py``), pinned to
  the same version and read through :mod:`importlib.resources`.  Its files are checked against
  its sha256 manifest once per process (``BIASKIT_DATA_VERIFY=0`` skips the check).

Environment variables override both, so a user can point biaskit at their own copies:

* ``BIASKIT_DATA_DIR``      bundled datasets (default ``<repo>/data``)
* ``BIASKIT_WORDLISTS_DIR`` word lists (default ``<repo>/wordlists``)
* ``BIASKIT_CACHE_DIR``     downloads and cached model scores
  (default ``~/.cache/biaskit``)
* ``BIASKIT_RESULTS_DIR``   where notebooks write their JSON and figures (default ``<repo>/results``
  in a checkout, ``./results`` elsewhere)
* ``BIASKIT_CALLER_CWD``    the folder that relative paths given by the user start from (set by
  ``python -m biaskit notebook`` / ``reproduce`` before the kernel starts in ``notebooks/``, so that
  ``-p model ./mymodel`` means the user's ``./mymodel``; default: the working directory):
  :func:`resolve_user_path`
"""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent.parent

#: the companion distribution that carries the bundled files of an installed biaskit
DATA_DISTRIBUTION = "biaskit-data"
#: its import name
DATA_PACKAGE = "biaskit_data"

_verified: set[Path] = set()


class BundledDataMissing(FileNotFoundError):
    """The bundled files are neither in a repository checkout nor installed (``biaskit-data``)."""


def in_repository() -> bool:
    """True when biaskit runs from a checkout of its repository (an editable install or the
    source tree), whose ``data/``, ``wordlists/`` and ``notebooks/`` folders are then used."""
    return (REPO_ROOT / "pyproject.toml").is_file() and (
        REPO_ROOT / "biaskit" / "core" / "paths.py"
    ).is_file()


def package_version() -> str:
    """The installed biaskit distribution's version (``biaskit.__version__``, read from its metadata)."""
    return importlib.metadata.version("biaskit")


def data_wheel_name(version: str) -> str:
    """The file name of the ``biaskit-data`` wheel of ``version``
    (``biaskit_data-<version>-py3-none-any.whl``)."""
    return f"{DATA_PACKAGE}-{version}-py3-none-any.whl"


def installed_data_root() -> Path:
    """Root folder of the installed ``biaskit-data`` distribution (``data/``, ``wordlists/``,
    ``notebooks/``, ``experiments/`` and ``MANIFEST.json``).

    Raises :class:`BundledDataMissing` when it is not installed, or installed at another version
    than biaskit; checks every file's sha256 against the manifest once per process (unless
    ``BIASKIT_DATA_VERIFY=0``) and raises ``ValueError`` naming the damaged files.
    """
    version = package_version()
    try:
        import biaskit_data
    except ImportError:
        raise BundledDataMissing(
            f"biaskit's bundled data (word lists, datasets, the small trained models, the notebooks) are not "
            f"installed. They come as a second wheel that `make dist` builds in a checkout of the repository "
            f"beside the code wheel: `pip install dist/{data_wheel_name(version)}`. Or point "
            "BIASKIT_DATA_DIR and BIASKIT_WORDLISTS_DIR at copies of the repository's data/ and wordlists/ "
            "folders. (Third-party reference vectors are another matter: "
            "`python -m biaskit fetch reference-vectors`.)"
        ) from None
    if biaskit_data.__version__ != version:
        raise BundledDataMissing(
            f"{DATA_DISTRIBUTION} {biaskit_data.__version__} is installed but biaskit is {version}: "
            f"the two are built and installed together; install the data wheel of the same version, "
            f"built by `make dist`: `pip install dist/{data_wheel_name(version)}`"
        )
    root = Path(str(importlib.resources.files(DATA_PACKAGE)))
    if root not in _verified and os.environ.get("BIASKIT_DATA_VERIFY", "1") != "0":
        biaskit_data.verify()
        _verified.add(root)
    return root


def bundled_dir(name: str) -> Path:
    """A bundled folder (``"data"``, ``"wordlists"``, ``"notebooks"`` or ``"experiments"``): the
    repository's own in a checkout, else the one of the installed ``biaskit-data``."""
    if name not in ("data", "wordlists", "notebooks", "experiments"):
        raise ValueError(f"unknown bundled folder {name!r}")
    if in_repository():
        return REPO_ROOT / name
    return installed_data_root() / name


def data_dir() -> Path:
    """Folder of the bundled datasets (``BIASKIT_DATA_DIR``, else :func:`bundled_dir` ``("data")``)."""
    if "BIASKIT_DATA_DIR" in os.environ:
        return Path(os.environ["BIASKIT_DATA_DIR"])
    return bundled_dir("data")


def wordlists_dir() -> Path:
    """Folder of the bundled word lists (``BIASKIT_WORDLISTS_DIR``, else :func:`bundled_dir`
    ``("wordlists")``)."""
    if "BIASKIT_WORDLISTS_DIR" in os.environ:
        return Path(os.environ["BIASKIT_WORDLISTS_DIR"])
    return bundled_dir("wordlists")


def notebooks_dir() -> Path:
    """Folder of the numbered study notebooks (``BIASKIT_NOTEBOOKS_DIR``, else :func:`bundled_dir`
    ``("notebooks")``)."""
    if "BIASKIT_NOTEBOOKS_DIR" in os.environ:
        return Path(os.environ["BIASKIT_NOTEBOOKS_DIR"])
    return bundled_dir("notebooks")


#: environment variable that declares a deliberately shared cache folder (for Dask workers of one team)
SHARED_CACHE_ENV = "BIASKIT_SHARED_CACHE"


class UnsafeCacheError(PermissionError):
    """The cache folder could have been written by someone else: it is owned by another user or writable
    by the group or by everyone.  biaskit reads what it finds in its cache, so it refuses such a folder;
    the message names the folder and the fix."""


def cache_dir() -> Path:
    """Folder for downloads and cached expensive results: ``BIASKIT_CACHE_DIR``, else ``~/.cache/biaskit``.

    The cache is private.  A missing folder is created with mode ``0o700`` (whatever the umask); a
    relative ``BIASKIT_CACHE_DIR`` is taken from the caller's folder (:func:`resolve_user_path`).  An
    existing folder owned by another user, or writable by the group or by everyone, raises
    :class:`UnsafeCacheError` naming the fix (``chmod 700``, or another folder), since whoever can write
    there could plant a file biaskit would read.  A cache shared on purpose (one folder every Dask worker
    sees) is declared with ``BIASKIT_SHARED_CACHE=1``: another owner and group write access are then
    accepted (a folder everyone can write never is), and every file is still verified against its checksum
    and cache key before use (docs: *Bad input and damaged files*, section Security).
    """
    env = os.environ.get("BIASKIT_CACHE_DIR", "").strip()
    path = resolve_user_path(env) if env else Path.home() / ".cache" / "biaskit"
    if not path.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            pass
        else:
            os.chmod(path, 0o700)  # mkdir's mode is reduced by the umask; 0o700 whatever it is
    if os.name == "posix":
        st = path.stat()
        shared = os.environ.get(SHARED_CACHE_ENV, "") == "1"
        if st.st_mode & 0o002:
            raise UnsafeCacheError(
                f"the biaskit cache folder {path} is writable by everyone (mode {st.st_mode & 0o777:o}): "
                f"anyone could plant a file biaskit would read. Fix: `chmod 700 {path}`, or point "
                "BIASKIT_CACHE_DIR at a private folder"
                + (
                    ""
                    if shared
                    else f"; for a cache shared on purpose by your team's Dask workers, give it "
                    f"to your group only (`chmod 2770 {path}`) and set {SHARED_CACHE_ENV}=1"
                )
            )
        if not shared and st.st_uid != os.getuid():
            raise UnsafeCacheError(
                f"the biaskit cache folder {path} belongs to another user (uid {st.st_uid}): "
                "biaskit would read files it did not write. Point BIASKIT_CACHE_DIR at a folder of your own "
                "(e.g. ~/.cache/biaskit), or, for a cache shared on purpose by your Dask workers, set "
                f"{SHARED_CACHE_ENV}=1"
            )
        if not shared and st.st_mode & 0o020:
            raise UnsafeCacheError(
                f"the biaskit cache folder {path} is writable by other users (mode {st.st_mode & 0o777:o}): "
                f"anyone could plant a file biaskit would read. Fix: `chmod 700 {path}`, or point "
                "BIASKIT_CACHE_DIR at a private folder; for a cache shared on purpose by your Dask workers, "
                f"set {SHARED_CACHE_ENV}=1"
            )
    return path


def results_dir() -> Path:
    """Folder where notebooks write ``<name>.json`` and figures (created on demand): ``BIASKIT_RESULTS_DIR``,
    else ``<repo>/results`` in a checkout and ``./results`` (beside the running notebook) elsewhere."""
    default = REPO_ROOT / "results" if in_repository() else Path.cwd() / "results"
    path = Path(os.environ.get("BIASKIT_RESULTS_DIR", default))
    path.mkdir(parents=True, exist_ok=True)
    return path


#: environment variable naming the folder that relative user paths start from (:func:`caller_cwd`)
CALLER_CWD_ENV = "BIASKIT_CALLER_CWD"


def caller_cwd() -> Path:
    """The folder a relative path given by the user starts from: ``BIASKIT_CALLER_CWD`` when set (the
    command-line ``notebook`` / ``reproduce`` commands set it to the folder they were started in, since
    the notebook kernel runs in ``notebooks/``), else the working directory (``os.getcwd()``)."""
    env = os.environ.get(CALLER_CWD_ENV, "").strip()
    if env:
        p = Path(env).expanduser()
        return p if p.is_absolute() else Path.cwd() / p
    return Path.cwd()


def resolve_user_path(path: str | os.PathLike[str]) -> Path:
    """A path given by the user (a model folder, a vector file, a corpus, a word list) as an absolute path.

    ``~`` is expanded; a relative path is joined to :func:`caller_cwd` (``BIASKIT_CALLER_CWD``, else the
    working directory), so ``./mymodel`` means the same folder whether the code runs in the user's shell
    or in a notebook kernel started by ``python -m biaskit notebook`` in ``notebooks/``.  Every loader of
    biaskit that takes a path resolves it here.  ``..`` parts are kept (no symbolic link is resolved).
    """
    p = Path(path).expanduser()
    return p if p.is_absolute() else caller_cwd() / p


def user_file_or_identifier(path: str) -> str:
    """A dataset the user named: a file path resolved by :func:`resolve_user_path` (as a string), or an
    identifier with a ``source:`` prefix (``may2019:weat7``, ``bfh:de/SEAT/CW1``, ``es:...``) left as it is
    when no such file exists."""
    if ":" in path and not resolve_user_path(path).exists():
        return path
    return str(resolve_user_path(path))


def cache_name(name: str, max_chars: int) -> str:
    """``name`` (a model id or path) as a cache folder name: characters other than letters, digits
    and ``-._`` become ``_``; the last ``max_chars`` are kept (the informative end of a path)."""
    return "".join(c if c.isalnum() or c in "-._" else "_" for c in name)[-max_chars:]
