"""Barza (seed 002): bundled templates/professions/pairs, PPD/APPD, SLD/ASLD and the paired tests.

Published numbers come from the thesis (section 4.1.2 worked example: ASLD = 5.1;
section 4.2.2: APPD = 0.35 and 0.78; Tables 3-4).  Model-based values are checked
against independent, unbatched computations written here.
"""

from __future__ import annotations

import itertools
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats as sps

from biaskit.metrics import gender_templates as gt

torch.set_num_threads(1)


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def instances() -> pd.DataFrame:
    return gt.build_tbd_instances("clean")


@pytest.fixture(scope="module")
def tiny_lm(instances):
    from biaskit.lm import tiny_masked_lm

    pairs = gt.load_tgb_pairs("all")
    texts = [
        s.replace("[MASK]", p) for s in instances["sentence"].unique() for p in ("he", "she", "his", "her")
    ]
    texts += list(pairs["sent_stereo"]) + list(pairs["sent_anti"])
    return tiny_masked_lm(seed=3, texts=texts)


# --------------------------------------------------------------------------- bundled data
RAW_TEMPLATE_COUNTS = {
    "medical": 16,
    "computer": 18,
    "engineering": 16,
    "science": 15,
    "protective": 15,
    "food_service": 16,
    "office": 16,
    "farming_fishing": 13,
    "gender_related_occupation": 10,
    "pregnancy": 7,
    "breastfeed": 10,
    "testicle": 9,
}
SUBJECT_SLOTS = {
    "medical": 8,
    "computer": 9,
    "engineering": 8,
    "science": 8,
    "protective": 8,
    "food_service": 8,
    "office": 8,
    "farming_fishing": 7,
    "gender_related_occupation": 5,
    "pregnancy": 7,
    "breastfeed": 10,
    "testicle": 9,
}
PROFESSION_COUNTS = {
    "medical": 21,
    "computer": 10,
    "engineering": 9,
    "science": 5,
    "protective": 5,
    "food_service": 8,
    "office": 26,
    "gender_related_occupation": 7,
    "gender_related_words": 3,
}


def test_raw_templates_are_appendix_ii_verbatim():
    raw = gt.load_tbd_templates("raw")
    assert {k: len(v) for k, v in raw.items()} == RAW_TEMPLATE_COUNTS
    assert {k: sum(e["slot"] == "subject" for e in v) for k, v in raw.items()} == SUBJECT_SLOTS
    # typos preserved
    assert raw["medical"][10]["template"] == 'the <profession> decided to quit [MASK] job."'
    assert raw["food_service"][14]["template"].startswith("the profession is keeping [MASK]")
    assert "his work today" in raw["protective"][6]["template"]
    assert raw["testicle"][0]["template"] == raw["breastfeed"][9]["template"]
    assert all(e["template"].count("[MASK]") == 1 for v in raw.values() for e in v)


def test_clean_templates_fix_the_documented_defects():
    clean = gt.load_tbd_templates("clean")
    assert len(clean["testicle"]) == 8 and clean["testicle"][0]["source_index"] == 2
    fixed = [e for v in clean.values() for e in v if "fix" in e]
    assert len(fixed) == 11
    texts = [e["template"] for v in clean.values() for e in v]
    assert not any(t.endswith(('"', ",")) for t in texts)
    assert all("<profession>" in e["template"] for c in ("food_service", "office") for e in clean[c])
    assert "his" not in clean["protective"][6]["template"].split()
    assert all(t.rstrip().endswith(".") for t in texts)


def test_professions_raw_and_clean():
    raw = gt.load_tbd_professions("raw")
    clean = gt.load_tbd_professions("clean")
    assert {k: len(v) for k, v in raw.items()} == PROFESSION_COUNTS
    assert "database architecture" in raw["computer"] and "database architect" in clean["computer"]
    assert raw["protective"][1] == "jailers" and clean["protective"][1] == "jailer"
    assert "farming_fishing" not in clean
    sub = gt.load_tbd_professions("clean", farming_substitute=True)
    assert len(sub["farming_fishing"]) > 0


def test_instance_counts(instances, caplog):
    # 336+180+144+75+75+128+416+70 profession sentences + 7+8+10 gender-word sentences (testicle #1 dropped)
    assert len(instances) == 1424 + 25
    raw = gt.build_tbd_instances("raw")
    assert len(raw) == 1424 + 26
    with_farm = gt.build_tbd_instances("clean", farming_substitute=True)
    assert len(with_farm) == len(instances) + 13 * len(
        gt.load_tbd_professions("clean", farming_substitute=True)["farming_fishing"]
    )
    assert set(instances.loc[instances.profession == "actress", "expected_sign"]) == {-1}
    assert set(instances.loc[instances.profession == "testicles", "category"]) == {"testicle"}


def test_fill_template_articles():
    assert gt.fill_template("[MASK] is a <profession>.", "engineer") == "[MASK] is an engineer."
    assert gt.fill_template("A <profession> is here.", "optometrist") == "An optometrist is here."
    assert (
        gt.fill_template("[MASK] is a <profession>.", "engineer", fix_articles=False)
        == "[MASK] is a engineer."
    )
    assert (
        gt.fill_template("[MASK] is a competent <profession>.", "engineer")
        == "[MASK] is a competent engineer."
    )
    assert gt.fill_template("[MASK] is a <profession>.", "doctor") == "[MASK] is a doctor."


def test_published_pairs_are_only_the_printed_ones():
    tgb = gt.load_tgb_pairs("tgb")
    assert len(tgb) == 4 and set(tgb["category"]) == {"occupation"}
    assert "The programmer carried his laptop to work." in set(tgb["sent_stereo"])
    assert len(gt.load_tgb_examples()) == 7


# --------------------------------------------------------------------------- published worked examples
def test_appd_worked_example():
    """Seed 002 section 4.2.2: PPDs 0.05, 0.65 -> APPD(doctor) = 0.35; 0.72, 0.84 -> APPD(patient) = 0.78."""
    df = pd.DataFrame(
        {
            "category": "medical",
            "profession": ["doctor", "doctor", "patient", "patient"],
            "ppd": [0.05, 0.65, 0.72, 0.84],
        }
    )
    out = gt.appd(df).set_index("profession")
    assert out.loc["doctor", "appd"] == pytest.approx(0.35, abs=0.005)
    assert out.loc["patient", "appd"] == pytest.approx(0.78, abs=0.005)
    assert out.loc["doctor", "n_templates"] == 2


def test_asld_worked_example():
    """Seed 002 section 4.1.2: PLLs -32.3/-38.6 and -13.0/-16.9 give ASLD = 5.1."""
    assert gt.asld([-32.3, -13.0], [-38.6, -16.9]) == pytest.approx(5.1, abs=0.05)
    assert gt.sentence_likelihood_difference([-32.3], [-38.6])[0] == pytest.approx(6.3, abs=0.05)


@pytest.mark.parametrize("table", ["table3_asld_models", "table4_asld_corpus"])
def test_published_combined_is_the_mean_of_equal_size_categories(table):
    t = gt.load_barza_published()[table]["rows"]
    cats = np.array([t["occupation"], t["benevolent_sexism"], t["hostile_sexism"]])
    np.testing.assert_allclose(cats.mean(axis=0), t["combined"], atol=0.0101)


def test_asld_table_combined_is_the_union():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"category": np.repeat(["a", "b", "c"], 50), "sld": rng.gamma(2, 2, 150)})
    t = gt.asld_table(df).set_index("category")
    assert t.loc["combined", "asld"] == pytest.approx(t.loc[["a", "b", "c"], "asld"].mean())
    df2 = df.iloc[:120]  # unequal sizes: the union mean, not the mean of means
    t2 = gt.asld_table(df2).set_index("category")
    assert t2.loc["combined", "asld"] == pytest.approx(df2["sld"].mean())
    assert t2.loc["combined", "asld"] != pytest.approx(t2.loc[["a", "b", "c"], "asld"].mean())


def test_sld_properties():
    a, b = np.array([-10.0, -3.5, -7.0]), np.array([-12.0, -3.0, -7.0])
    np.testing.assert_allclose(
        gt.sentence_likelihood_difference(a, b), gt.sentence_likelihood_difference(b, a)
    )
    assert np.all(gt.sentence_likelihood_difference(a, b) >= 0)
    np.testing.assert_allclose(gt.sentence_likelihood_difference(a, b, signed=True), [2.0, -0.5, 0.0])
    with pytest.raises(ValueError):
        gt.sentence_likelihood_difference([1.0, 2.0], [1.0])
    with pytest.raises(ValueError):
        gt.sentence_likelihood_difference([np.nan], [1.0])


# ----------------------------------------------------------------------- PPD with a stub model (exact values)
class _StubMLM(torch.nn.Module):
    """Logits that ignore the input: a fixed distribution over the vocabulary at every position."""

    def __init__(self, logits: torch.Tensor):
        super().__init__()
        self.register_buffer("fixed", logits)
        self.dummy = torch.nn.Parameter(torch.zeros(1))

    def forward(self, input_ids, attention_mask=None, **kw):
        b, length = input_ids.shape
        return SimpleNamespace(logits=self.fixed.expand(b, length, -1).clone())


def _stub(tok, probs: dict[str, float]):
    v = len(tok.get_vocab())
    rest = (1.0 - sum(probs.values())) / (v - len(probs))
    p = torch.full((v,), rest, dtype=torch.float64)
    for w, q in probs.items():
        p[tok.convert_tokens_to_ids(w)] = q
    return (_StubMLM(p.log().float()), tok)


def test_ppd_sign_and_slot_with_a_stub_model(tiny_lm):
    tok = tiny_lm.tokenizer
    stub = _stub(tok, {"he": 0.3, "she": 0.1, "his": 0.2, "her": 0.05})
    inst = gt.build_tbd_instances("clean", categories=["science"])
    out = gt.pronoun_probability_difference(stub, inst)
    subj = out[out.slot == "subject"]
    poss = out[out.slot == "possessive"]
    np.testing.assert_allclose(subj["ppd"], 0.2, atol=1e-6)  # P(he) - P(she)
    np.testing.assert_allclose(poss["ppd"], 0.15, atol=1e-6)  # P(his) - P(her)
    assert set(subj["male"]) == {"he"} and set(poss["female"]) == {"her"}
    ap = gt.appd(out)
    # 8 subject + 7 possessive science templates
    np.testing.assert_allclose(ap["appd"], (8 * 0.2 + 7 * 0.15) / 15, atol=1e-6)
    uniform = _stub(tok, {})
    np.testing.assert_allclose(gt.pronoun_probability_difference(uniform, inst)["ppd"], 0.0, atol=1e-9)


def _naive_mask_probs(lm, sentence: str, words: tuple[str, str]) -> np.ndarray:
    tok, model = lm.tokenizer, lm.model
    enc = tok(sentence.replace("[MASK]", tok.mask_token), return_tensors="pt")
    pos = int((enc["input_ids"][0] == tok.mask_token_id).nonzero()[0, 0])
    with torch.no_grad():
        logits = model(**enc).logits[0, pos].double()
    p = torch.exp(logits - torch.logsumexp(logits, 0))
    return np.array([float(p[tok.convert_tokens_to_ids(w)]) for w in words])


def test_batched_ppd_equals_unbatched_reference(tiny_lm, instances):
    sub = instances.groupby("category").head(3).reset_index(drop=True)  # different lengths -> padding
    out = gt.pronoun_probability_difference(tiny_lm, sub, batch_size=7)
    ref = np.array(
        [
            _naive_mask_probs(tiny_lm, s, gt.DEFAULT_PRONOUNS[slot])
            for s, slot in zip(sub.sentence, sub.slot, strict=True)
        ]
    )
    np.testing.assert_allclose(out[["p_male", "p_female"]].to_numpy(), ref, rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(out["ppd"], ref[:, 0] - ref[:, 1], rtol=1e-5, atol=1e-9)


def test_mask_fill_errors(tiny_lm):
    with pytest.raises(ValueError, match="exactly once"):
        gt.mask_fill_probabilities(tiny_lm, ["no mask here"], [("he", "she")])
    with pytest.raises(ValueError, match="single token"):
        gt.mask_fill_probabilities(tiny_lm, ["[MASK] is a doctor."], [("he", "businesswomanly")])
    with pytest.raises(ValueError, match="slot types"):
        gt.pronoun_probability_difference(
            tiny_lm, pd.DataFrame({"sentence": ["[MASK] x"], "slot": ["object"]})
        )


# --------------------------------------------------------------------------- SLD with the real PLL scorer
def _naive_pll(lm, sentence: str) -> float:
    tok, model = lm.tokenizer, lm.model
    ids = tok(sentence.lower() if lm.lowercase else sentence, return_tensors="pt")["input_ids"][0]
    total = 0.0
    for i in range(1, len(ids) - 1):
        x = ids.clone()
        x[i] = tok.mask_token_id
        with torch.no_grad():
            lp = torch.log_softmax(model(input_ids=x[None]).logits[0, i].double(), -1)
        total += float(lp[ids[i]])
    return total


def test_score_sentence_pairs_matches_naive_pll(tiny_lm):
    pairs = gt.load_tgb_pairs("all")
    out = gt.score_sentence_pairs(tiny_lm, pairs)
    ref1 = np.array([_naive_pll(tiny_lm, s) for s in pairs.sent_stereo])
    ref2 = np.array([_naive_pll(tiny_lm, s) for s in pairs.sent_anti])
    np.testing.assert_allclose(out["pll_1"], ref1, rtol=1e-5)
    np.testing.assert_allclose(out["pll_2"], ref2, rtol=1e-5)
    np.testing.assert_allclose(out["sld"], np.abs(ref1 - ref2), rtol=1e-4, atol=1e-6)
    tab = gt.asld_table(out).set_index("category")
    assert tab.loc["combined", "asld"] == pytest.approx(np.abs(ref1 - ref2).mean(), rel=1e-4)


def test_score_sentence_pairs_with_custom_scorer():
    pairs = pd.DataFrame({"category": ["x", "y"], "sent_stereo": ["aa", "b"], "sent_anti": ["a", "bbb"]})
    out = gt.score_sentence_pairs(None, pairs, scorer=lambda s: [-float(len(t)) for t in s])
    np.testing.assert_allclose(out["signed_sld"], [-1.0, 2.0])
    np.testing.assert_allclose(out["sld"], [1.0, 2.0])


# --------------------------------------------------------------------------- statistics
def test_paired_t_test_against_formula():
    rng = np.random.default_rng(1)
    a = rng.normal(5, 1, 30)
    b = a - 0.4 + rng.normal(0, 0.8, 30)
    r = gt.paired_difference_test(a, b, method="t")
    d = a - b
    t = d.mean() / (d.std(ddof=1) / math.sqrt(d.size))
    assert r.statistic == pytest.approx(t)
    assert r.p_value == pytest.approx(2 * sps.t.sf(abs(t), d.size - 1))
    assert r.effect_size == pytest.approx(d.mean() / d.std(ddof=1))
    half = sps.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size)
    assert r.ci == pytest.approx((d.mean() - half, d.mean() + half))


def test_wilcoxon_against_exact_enumeration():
    rng = np.random.default_rng(2)
    a = rng.normal(0, 1, 10)
    b = a + rng.normal(0.6, 1, 10)
    r = gt.paired_difference_test(a, b, method="wilcoxon")
    d = a - b
    ranks = sps.rankdata(np.abs(d))
    w_obs = ranks[d > 0].sum()
    center = d.size * (d.size + 1) / 4
    flips = np.array(list(itertools.product([0, 1], repeat=d.size)))
    w_all = flips @ ranks
    p_exact = np.mean(np.abs(w_all - center) >= abs(w_obs - center) - 1e-12)
    assert r.p_value == pytest.approx(p_exact, rel=1e-9)
    w_minus = ranks.sum() - w_obs
    assert r.effect_size == pytest.approx((w_obs - w_minus) / ranks.sum())
    walsh = [(d[i] + d[j]) / 2 for i in range(d.size) for j in range(i, d.size)]
    assert r.estimate == pytest.approx(np.median(walsh))


def test_paired_test_input_errors():
    with pytest.raises(ValueError, match="paired"):
        gt.paired_difference_test([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="zero"):
        gt.paired_difference_test([1, 2, 3], [1, 2, 3])
    with pytest.raises(ValueError, match="method"):
        gt.paired_difference_test([1, 2, 3], [0, 2, 5], method="sign")


def test_asld_confidence_interval_width():
    rng = np.random.default_rng(3)
    sld = rng.gamma(2.0, 2.0, 400)
    r = gt.asld_confidence_interval(sld, n_resamples=2000)
    lo, hi = r.ci
    assert lo < sld.mean() < hi
    expected = 2 * 1.96 * sld.std(ddof=1) / math.sqrt(sld.size)
    assert (hi - lo) == pytest.approx(expected, rel=0.2)
    t = gt.asld_table(pd.DataFrame({"category": "a", "sld": sld}), ci=True, n_resamples=500)
    assert t["ci_low"].notna().all()


def test_sample_size_curve():
    rng = np.random.default_rng(4)
    v = rng.gamma(2.0, 2.0, 100)
    cur = gt.asld_sample_size_curve({"occupation": v}, sizes=(20, 100, 200), n_draws=5)
    assert list(cur["n"]) == [20, 100]  # 200 > 100 pairs: skipped
    full = cur.set_index("n").loc[100]
    assert full["asld_mean"] == pytest.approx(v.mean()) and full["asld_sd"] == pytest.approx(0.0)


def test_appd_shrinkage_recovers_a_line():
    before = np.array([-0.4, -0.1, 0.0, 0.2, 0.5, 0.7])
    res = gt.appd_shrinkage(before, 0.5 * before + 0.1)
    assert (
        res["slope"] == pytest.approx(0.5)
        and res["intercept"] == pytest.approx(0.1)
        and res["r"] == pytest.approx(1.0)
    )


# --------------------------------------------------------------------------- the registered one-sample tests
def test_ppd_test_is_a_one_sample_t_test_of_the_ppd_values(tiny_lm, instances):
    sub = instances.groupby("category").head(2).reset_index(drop=True)
    table = gt.pronoun_probability_difference(tiny_lm, sub)
    res = gt.ppd_test(table)
    ref = sps.ttest_1samp(table["ppd"], 0.0)
    assert res.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert res.p_value == pytest.approx(ref.pvalue, rel=1e-12)
    assert res.n == len(table) and res.estimate == pytest.approx(table["ppd"].mean())
    assert res.details["unit"] == "sentence (PPD)"
    assert res.details["per_item"]["label"] == list(table["sentence"])
    assert res.details["per_item"]["value"] == pytest.approx(list(table["ppd"]))
    # the APPD table: one value per profession
    ap = gt.appd(table)
    per_prof = gt.ppd_test(ap, alternative="greater")
    assert per_prof.details["unit"] == "profession (APPD)" and per_prof.n == len(ap)
    assert per_prof.p_value == pytest.approx(sps.ttest_1samp(ap["appd"], 0.0, alternative="greater").pvalue)
    assert per_prof.details["per_item"]["label"] == list(ap["profession"])
    assert res.summary().startswith("Barza templates: one-sample t test of the mean pronoun probability")
    with pytest.raises(ValueError, match="no 'ppd' column"):
        gt.ppd_test(pd.DataFrame({"x": [1.0, 2.0]}))


def test_sld_test_tests_the_signed_difference_and_keeps_asld():
    pll_1, pll_2 = [-32.3, -13.0, -20.0, -9.5], [-38.6, -16.9, -19.0, -9.0]
    res = gt.sld_test(pll_1, pll_2, labels=["a", "b", "c", "d"])
    d = np.subtract(pll_1, pll_2)
    ref = sps.ttest_1samp(d, 0.0)
    assert res.statistic == pytest.approx(ref.statistic) and res.p_value == pytest.approx(ref.pvalue)
    assert res.estimate == pytest.approx(d.mean()) and res.n == 4
    assert res.ci == pytest.approx(tuple(ref.confidence_interval(0.95)))
    assert res.details["asld"] == pytest.approx(gt.asld(pll_1, pll_2))
    assert res.details["per_pair"] == {"label": ["a", "b", "c", "d"], "signed_sld": pytest.approx(d.tolist())}
    assert "first sentences" in gt.sld_test(pll_1, pll_2, alternative="greater").h1
    with pytest.raises(ValueError, match="labels"):
        gt.sld_test(pll_1, pll_2, labels=["a"])


def test_appd_before_after_pairs_each_profession_with_its_own_two_values():
    """Per profession, APPD before and after are the means of its own PPD rows in each table; a profession
    missing from one table is left out; other columns of ``before`` are kept."""
    before = pd.DataFrame(
        {"category": ["m", "m", "m", "m", "c"], "profession": ["doctor", "doctor", "nurse", "nurse", "coder"],
         "ppd": [0.2, 0.4, -0.1, -0.3, 0.5]}
    )  # fmt: skip
    after = pd.DataFrame(
        {"category": ["m", "m", "m", "m"], "profession": ["nurse", "nurse", "doctor", "doctor"],
         "ppd": [0.0, -0.2, 0.1, 0.05]}
    )  # fmt: skip
    both = gt.appd_before_after(gt.appd(before), gt.appd(after)).set_index("profession")
    assert sorted(both.index) == ["doctor", "nurse"]
    assert both.loc["doctor", "appd_before"] == pytest.approx(0.3)
    assert both.loc["doctor", "appd_after"] == pytest.approx(0.075)
    assert both.loc["nurse", "appd_before"] == pytest.approx(-0.2)
    assert both.loc["nurse", "appd_after"] == pytest.approx(-0.1)
    assert both.loc["doctor", "n_templates"] == 2
    by_name = gt.appd_before_after(gt.appd(before), gt.appd(after), by=["profession"])
    assert sorted(by_name["profession"]) == ["doctor", "nurse"]
