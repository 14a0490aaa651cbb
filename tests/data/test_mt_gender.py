"""MT Gender rebuilt from WinoBias and Winogender (seed 002 section 6.1): size, balance and provenance."""

from __future__ import annotations

import re

import pytest

from biaskit.core.paths import data_dir
from biaskit.data.mt_gender import MT_GENDER_COUNTS, load_mt_gender, mt_gender_sample, mt_gender_sentences


@pytest.fixture(scope="module")
def mtg():
    return load_mt_gender()


def test_sizes_match_the_original(mtg):
    # the original en.txt (gabrielStanovsky/mt_gender): 3,888 lines, WinoBias 3,168 + Winogender 720
    assert len(mtg) == 3888
    assert mtg["source"].value_counts().to_dict() == {"WinoBias": 3168, "Winogender": 720}
    assert mtg["gender"].value_counts().to_dict() == {"male": 1826, "female": 1822, "neutral": 240}
    # en_pro.txt / en_anti.txt: the WinoBias halves, 1,584 each
    wb = mtg[mtg["source"] == "WinoBias"]
    assert wb.groupby("stereotype")["gender"].value_counts().to_dict() == {
        ("anti", "female"): 790,
        ("anti", "male"): 794,
        ("pro", "female"): 792,
        ("pro", "male"): 792,
    }
    assert mtg.loc[mtg["source"] == "Winogender", "stereotype"].isna().all()
    counts = {
        "total": len(mtg),
        **mtg["source"].value_counts().to_dict(),
        **mtg["gender"].value_counts().to_dict(),
        **mtg["stereotype"].value_counts().to_dict(),
    }
    assert counts == MT_GENDER_COUNTS


def test_rows_follow_mt_gender_format(mtg):
    first = mtg.iloc[0]
    # en.txt line 1:
    #   female  1  The developer argued with the designer because she did not like the design.  developer
    assert (first["gender"], first["entity_index"], first["entity"]) == ("female", 1, "developer")
    assert first["sentence"] == "The developer argued with the designer because she did not like the design."
    assert not mtg["sentence"].str.contains(r"[\[\]]").any()
    words = mtg["sentence"].str.lower().str.replace(r"[!,.;?]", " ", regex=True).str.split(" ")
    at = [w[i] if i < len(w) else "" for w, i in zip(words, mtg["entity_index"], strict=True)]
    ent_first = mtg["entity"].str.lower().str.split().str[0]
    assert (
        sum(a == e for a, e in zip(at, ent_first, strict=True)) / len(mtg) > 0.99
    )  # the index points at the entity


def test_pairs_are_pronoun_counterparts(mtg):
    wb = mtg[mtg["source"] == "WinoBias"]
    sizes = wb.groupby("pair").size()
    assert (sizes == 2).all() and len(sizes) == 1584
    mixed = wb.groupby("pair")["gender"].nunique()
    assert (mixed == 2).sum() == 1582  # 2 WinoBias line pairs have 'him' twice (PROVENANCE.md)
    wg = mtg[mtg["source"] == "Winogender"].groupby("pair")["gender"].agg(lambda s: tuple(sorted(s)))
    assert len(wg) == 240 and set(wg) == {("female", "male", "neutral")}


def test_sample_keeps_balance():
    sub = mt_gender_sample(600, seed=3)
    assert 600 <= len(sub) <= 602
    g = sub["gender"].value_counts()
    assert abs(int(g["male"]) - int(g["female"])) <= 2
    full = load_mt_gender().groupby("pair").size()
    drawn = sub.groupby("pair").size()
    assert (drawn == full[drawn.index]).all()  # whole counterpart groups
    assert mt_gender_sentences(600, seed=3) == sub["sentence"].tolist()
    assert len(mt_gender_sentences(None, neutral=False)) == 3648


def test_provenance_lists_the_source_hashes(mtg):
    text = (data_dir() / "mt-gender" / "PROVENANCE.md").read_text(encoding="utf-8")
    for rel, sha in mtg.attrs["files_sha256"].items():
        row = next(line for line in text.splitlines() if line.startswith(f"| `{rel}`"))
        assert re.findall(r"[0-9a-f]{64}", row) == [sha]
    assert "3,888" in text and "1,584" in text
