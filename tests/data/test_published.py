"""Published tables as data files: checked by sha256 before use, refused when altered."""

from __future__ import annotations

import re
import shutil

import pytest

from biaskit.core.io import ChecksumError
from biaskit.core.paths import data_dir
from biaskit.data.published import PUBLISHED_CHECKSUMS, published_dir, published_table


def test_every_table_is_listed_with_its_checksum_in_the_provenance():
    text = (published_dir() / "PROVENANCE.md").read_text(encoding="utf-8")
    listed = dict(re.findall(r"\| `([a-z0-9_]+)\.json` \|.*\| `([0-9a-f]{64})` \|", text))
    assert listed == PUBLISHED_CHECKSUMS
    assert sorted(p.stem for p in published_dir().glob("*.json")) == sorted(PUBLISHED_CHECKSUMS)


def test_the_metric_modules_read_their_tables_from_the_files():
    from biaskit.metrics import frequency, weat

    assert weat.CALISKAN_2017_TABLE1 == published_table("caliskan2017_table1")
    assert len(weat.CALISKAN_2017_TABLE1) == 10 and weat.CALISKAN_2017_TABLE1["weat7"]["n_target"] == 8
    assert frequency.THESIS_SWAP_GENDER["targets"] == ("career words", "family words")
    a, b = frequency.THESIS_SWAP_RELIGION["attribute_sets"]["mesías, bautismo vs sultan, allah"]
    assert a == ["mesías", "bautismo"] and b == ["sultan", "allah"]


def test_an_altered_table_is_refused_with_its_path(tmp_path, monkeypatch):
    copy = tmp_path / "data"
    shutil.copytree(data_dir() / "published", copy / "published")
    f = copy / "published" / "thesis_table_3_4.json"
    f.write_text(f.read_text(encoding="utf-8").replace("1.53", "1.35"), encoding="utf-8")
    monkeypatch.setenv("BIASKIT_DATA_DIR", str(copy))
    with pytest.raises(ChecksumError, match=r"thesis_table_3_4\.json: sha256 .* differs"):
        published_table("thesis_table_3_4")
    assert published_table("thesis_table_3_5")[0]["d"] == pytest.approx(1.453)  # the others still load
    (copy / "published" / "thesis_table_3_5.json").unlink()
    with pytest.raises(FileNotFoundError, match="thesis_table_3_5"):
        published_table("thesis_table_3_5")
    with pytest.raises(KeyError, match="unknown published table"):
        published_table("table_9_9")
