"""Indirect Logarithmic Probability Bias Score (seed 004): bundled data, the vectorised score against a
slow one-forward-pass-per-(template, name) reference (BERT and XLNet, both perm_mask variants), the prior
cancellation property, caching and bad input."""

from __future__ import annotations

import json
import logging
import re

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.stats import pearsonr

from biaskit.core.paths import data_dir
from biaskit.data import louis_alexandre as la
from biaskit.lm import ModelNotAvailableError
from biaskit.lm.slot_scores import slot_scores
from biaskit.lm.xlnet import BridgeLM, load_bridge_lm, tiny_bridge_lm
from biaskit.metrics import indirect_bias as ib
from biaskit.studies.louis_alexandre_replay import (
    check_published_tables,
    published_correlation_frame,
    user_study_likert,
)

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def bert():
    # float64 weights: the batched (padded) and the one-by-one passes then agree to ~1e-13, so the
    # comparison with the reference can use a tight tolerance (float32 agrees to ~1e-6 only)
    b = tiny_bridge_lm("bert", seed=3)
    b.lm.model.double()
    return b


@pytest.fixture(scope="module")
def xlnet():
    # a short padding text keeps the test fast; the real default is checked separately
    # float32: transformers' XLNet query stream (target_mapping) does not run in float64
    return tiny_bridge_lm("xlnet", seed=5, padding_text="The story of a family . <eod> </s>")


# =============================================================================================
# bundled data
# =============================================================================================
def test_word_lists_sizes_as_printed():
    w = la.load_louis_alexandre_words()
    sizes = {k: len(v) for k, v in w.items()}
    assert sizes == {
        "beverage": 18,
        "country": 61,
        "occupation": 99,
        "sport": 30,
        "trait": 617,
        "age": 102,
        "year_of_birth": 102,
        "gender": 12,
        "race": 7,
        "religion": 12,
        "sexual_orientation": 7,
        "name": 779,
    }
    assert len(set(w["name"])) == 779
    assert w["name"][:3] == ["Aaliyah", "Aaron", "Abigail"] and w["name"][-1] == "Zoey"
    assert "horling" in w["sport"]  # verbatim typo kept


def test_55_template_sets_and_table_3_1_markers():
    sets = la.load_louis_alexandre_templates()
    assert len(sets) == 55
    incomplete = sorted(k for k, s in sets.items() if not s.complete)
    assert incomplete == sorted(
        [
            "occupation-trait",
            "occupation-name",
            "occupation-gender",
            "occupation-race",
            "occupation-religion",
            "occupation-sexual_orientation",
            "sport-trait",
            "sport-race",
            "sport-sexual_orientation",
            "name-country",
        ]
    )
    # the singular/plural (*) and adjective/noun (•) split of Table 3.1 is what template_form finds
    for key, s in sets.items():
        if not s.complete:
            continue
        m = re.fullmatch(r"(\d+) \+ (\d+)([*•])", s.table_count)
        if m:
            forms = ("singular", "plural") if m.group(3) == "*" else ("adjective", "noun")
            assert s.forms.count(forms[0]) == int(m.group(1)), key
            assert s.forms.count(forms[1]) == int(m.group(2)), key
        else:
            assert len(s) == int(s.table_count), key


def test_role_swapped_sections_are_bound_by_role():
    sets = la.load_louis_alexandre_templates()
    s = sets["sport-age"]  # printed "He practices [FEATURE] and he is [TARGET] years old."
    assert s.verbatim[0] == "He practices [FEATURE] and he is [TARGET] years old."
    assert s.templates[0] == "He practices {target} and he is {feature} years old."
    bt = sets["beverage-trait"]
    assert bt.templates[0] == "People who drink a lot of {target} are {feature}."
    occ = sets["occupation-gender"]
    assert occ.verbatim[1] == "[TARGET] s are [FEATURE]."
    assert occ.templates[1] == "{target_pl} are {feature}."
    assert occ.forms == ("singular", "plural")
    assert "{target}'s religion" in sets["name-religion"].templates[2]
    assert (
        la.feature_mask_index("{feature} is {target}") == 0
        and la.feature_mask_index("{target} is {feature}") == 1
    )


def test_pluralize_and_country_article():
    assert [
        la.pluralize(w)
        for w in ("barman", "nanny", "coach", "engineer", "police officer", "secretary", "waitress")
    ] == ["barmen", "nannies", "coaches", "engineers", "police officers", "secretaries", "waitresses"]
    assert la.pluralize("bus", {}) == "buses" and la.pluralize("day", {}) == "days"


def test_feature_set_classes():
    g = la.feature_set("gender")
    assert g.classes == ("male", "female", "boy", "girl", "man", "woman")
    assert g.surface("woman", "plural") == "women" and g.surface("man", "singular") == "man"
    r = la.feature_set("religion", ["Islam", "Christian"])
    assert r.classes == ("Muslim", "Christian") and r.surface("Muslim", "noun") == "Islam"
    with pytest.raises(ValueError, match="not a gender class"):
        la.feature_set("gender", ["wizard"])


def test_published_tables_consistency():
    t = la.load_louis_alexandre_tables()
    corr = t["direct_vs_indirect_correlation"]["corrected"]
    # Table 3.5's "gender-defining words" column is the Gender x Occupation cell of Tables A.1-A.4
    for model, (words_r, _f, _m) in t["table_3_5"]["rows"].items():
        cell = corr[model]["rows"]["Gender"][corr[model]["columns"].index("Occupation")]
        assert round(words_r, 4) == pytest.approx(cell, abs=1e-9), model
    # the diagonal of every model is empty once the misaligned xl-base Country row is corrected
    for model, tab in corr.items():
        for cat in ("Beverage", "Country", "Occupation", "Sport"):
            assert tab["rows"][cat][tab["columns"].index(cat)] is None, (model, cat)
    assert t["direct_vs_indirect_correlation"]["as_printed"]["xl-base"]["rows"]["Country"][2] is None


def test_diff_rank_recomputed_finds_the_five_printing_errors():
    occ = la.load_louis_alexandre_tables()["gender_rank_tables"]["occupations"]
    wrong = sorted(
        (o, meth, model)
        for o, by in occ.items()
        for meth, rows in by.items()
        for model, r in rows.items()
        if r["female_rank"] - r["male_rank"] != r["diff_rank_printed"]
    )
    assert wrong == sorted(
        [
            ("hairdresser", "indirect", "xl-base"),
            ("stylist", "indirect", "bert-large"),
            ("housekeeper", "direct", "xl-base"),
            ("interior designer", "indirect", "xl-base"),
            ("hairdresser", "direct", "bert-large"),
        ]
    )


def test_gender_rank_table():
    scores = pd.DataFrame(
        {
            "female": [0.9, 0.1, 0.5, 0.0],
            "girl": [0.7, 0.1, 0.3, 0.0],
            "woman": [0.8, 0.1, 0.4, 0.0],
            "male": [0.0, 0.8, 0.3, 0.9],
            "boy": [0.0, 0.6, 0.3, 0.9],
            "man": [0.0, 0.7, 0.3, 0.9],
        },
        index=["nurse", "pilot", "teacher", "barman"],
    )
    r = ib.gender_rank_table(scores, exclude=["barman"])
    assert list(r.index) == ["nurse", "pilot", "teacher"]
    assert r.loc["nurse", "female_rank"] == 1 and r.loc["nurse", "male_rank"] == 3
    assert (r["diff_rank"] == r["female_rank"] - r["male_rank"]).all()
    assert r.loc["nurse", "female"] == pytest.approx(0.8)


# =============================================================================================
# slow reference: Algorithm 3.1 literally, one forward pass per (template, name)
# =============================================================================================
PLURALS = {"nanny": "nannies", "engineer": "engineers", "air traffic controller": "air traffic controllers"}


def _ref_sentence(lm, verbatim, ctx_ph, pred_ph, context, padding=""):
    """Fill a *verbatim* Appendix template: context word (or mask) and a mask for the predicted slot."""
    tok = lm.tokenizer
    t = verbatim.replace("’", "'").replace(ctx_ph + " s ", ctx_ph + "s ")
    sentinel = "\x01"
    if context is None:
        t = t.replace(ctx_ph + "s", sentinel).replace(ctx_ph, sentinel)
    else:
        t = t.replace(ctx_ph + "s", PLURALS.get(context, context + "s")).replace(ctx_ph, context)
    t = t.replace(pred_ph, sentinel)
    if lm.lowercase:
        t = t.lower()
    t = t.replace(sentinel, tok.mask_token)
    return (padding + " " + t) if padding else t


def _ref_prob(lm, sentence, which, word, *, xlnet_mode=None):
    tok = lm.tokenizer
    ids = tok(sentence, return_tensors="pt")["input_ids"]
    masks = (ids[0] == tok.mask_token_id).nonzero().flatten().tolist()
    pos = masks[which]
    wid = tok.convert_tokens_to_ids(tok.tokenize(word.lower() if lm.lowercase else word))
    assert len(wid) == 1
    with torch.no_grad():
        if xlnet_mode == "perm_mask":
            n = ids.shape[1]
            dt = next(lm.model.parameters()).dtype
            perm = torch.zeros((1, n, n), dtype=dt)
            perm[0, :, masks] = 1.0
            tmap = torch.zeros((1, 1, n), dtype=dt)
            tmap[0, 0, pos] = 1.0
            logits = lm.model(ids, perm_mask=perm, target_mapping=tmap).logits[0, 0]
        else:
            logits = lm.model(ids).logits[0, pos]
    return torch.softmax(logits.double(), dim=-1)[wid[0]].item()


def _ref_bias_scores(lm, ts_raw, contexts, predicted, *, padding="", xlnet_mode=None, forms=None):
    """BS(c, w) = log(mean_i p_tgt_i / mean_i p_prior_i), template by template, word by word."""
    ctx_ph, pred_ph = ts_raw["context_placeholder"], ts_raw["predicted_placeholder"]
    out = pd.DataFrame(index=contexts, columns=list(predicted), dtype=float)
    for w in predicted:
        p_prior, p_tgt = [], {c: [] for c in contexts}
        for t in ts_raw["templates"]:
            word = forms(w, t) if forms else w
            prior_which = 0 if t.index(pred_ph) < t.index(ctx_ph) else 1
            p_prior.append(
                _ref_prob(
                    lm,
                    _ref_sentence(lm, t, ctx_ph, pred_ph, None, padding),
                    prior_which,
                    word,
                    xlnet_mode=xlnet_mode,
                )
            )
            for c in contexts:
                p_tgt[c].append(
                    _ref_prob(
                        lm, _ref_sentence(lm, t, ctx_ph, pred_ph, c, padding), 0, word, xlnet_mode=xlnet_mode
                    )
                )
        for c in contexts:
            out.loc[c, w] = np.log(np.mean(p_tgt[c]) / np.mean(p_prior))
    return out


def _raw_sets():
    return json.loads((data_dir() / "louis-alexandre" / "templates.json").read_text(encoding="utf-8"))["sets"]


def _first(raw, key, n):
    s = dict(raw[key])
    s["templates"] = s["templates"][:n]
    return s


TARGETS = ["nanny", "engineer", "air traffic controller"]
NAMES = ["Emma", "Noah", "Olivia", "Liam", "Mary", "John", "Linda", "James", "Susan", "Robert"]
TRAITS = ["ambitious", "caring", "lazy"]


def test_ibs_equals_slow_reference_bert(bert):
    raw = _raw_sets()
    sets = la.load_louis_alexandre_templates()
    # S1 templates 8..13 include "{target}" singular and the he/she variants; direct uses plural "[TARGET]s"
    s1_raw = dict(raw["occupation-name"])
    s1_raw["templates"] = raw["occupation-name"]["templates"][6:12]
    s1 = la.TemplateSet(
        "occupation-name",
        "occupation",
        "name",
        sets["occupation-name"].templates[6:12],
        sets["occupation-name"].forms[6:12],
    )
    s2 = sets["name-trait"]
    d_raw = _first(raw, "occupation-trait", 5)
    dt = sets["occupation-trait"].subset(5)
    res = ib.indirect_bias_scores(
        bert, TARGETS, TRAITS, NAMES, s1, s2, direct_templates=dt, cache=False, progress=False
    )
    bs1_ref = _ref_bias_scores(bert.lm, s1_raw, TARGETS, NAMES)
    bs2_ref = _ref_bias_scores(bert.lm, raw["name-trait"], NAMES, TRAITS)
    direct_ref = _ref_bias_scores(bert.lm, d_raw, TARGETS, TRAITS)
    np.testing.assert_allclose(res.bs1.loc[TARGETS, NAMES].to_numpy(), bs1_ref.to_numpy(), rtol=0, atol=1e-9)
    np.testing.assert_allclose(res.bs2.loc[NAMES, TRAITS].to_numpy(), bs2_ref.to_numpy(), rtol=0, atol=1e-9)
    np.testing.assert_allclose(
        res.direct.loc[TARGETS, TRAITS].to_numpy(), direct_ref.to_numpy(), rtol=0, atol=1e-9
    )
    for t in TARGETS:
        for f in TRAITS:
            r_ref = pearsonr(bs1_ref.loc[t].to_numpy(float), bs2_ref[f].to_numpy(float)).statistic
            assert res.ibs.loc[t, f] == pytest.approx(r_ref, abs=1e-9)
    # the scores are not degenerate (a wrong mask position would still give finite numbers)
    assert res.ibs.abs().to_numpy().max() > 0.05
    assert res.bs1.std(axis=1).min() > 1e-4


def _gender_form(word, template):
    plural = {"male": "males", "female": "females", "man": "men", "woman": "women"}
    return word if re.search(r"\ba \[FEATURE\]", template) else plural[word]


XL_TOL = 2e-5  # float32 batched (padded) vs one-by-one passes; a wrong position or mask differs by > 1e-3


@pytest.mark.parametrize("mode", ["naive", "perm_mask"])
def test_ibs_equals_slow_reference_xlnet(xlnet, mode):
    x = BridgeLM(xlnet.lm, xlnet_mode=mode, padding_text=xlnet.padding_text, batch_size=7)
    raw = _raw_sets()
    sets = la.load_louis_alexandre_templates()
    targets = ["nanny", "engineer"]
    names = NAMES[:6]
    feats = ["male", "female", "man", "woman"]
    s1_raw = _first(raw, "country-name", 3)  # "Hi! My name is [FEATURE] and I live in [TARGET]."
    s1 = sets["country-name"].subset(3)
    targets_c = ["France", "Japan"]
    s2 = sets["name-gender"]
    dt = sets["occupation-gender"]  # singular "a [FEATURE]" and plural "[TARGET] s are [FEATURE]"
    res = ib.indirect_bias_scores(x, targets_c, feats, names, s1, s2, cache=False, progress=False)
    bs1_ref = _ref_bias_scores(x.lm, s1_raw, targets_c, names, padding=x.padding_text, xlnet_mode=mode)
    bs2_ref = _ref_bias_scores(
        x.lm, raw["name-gender"], names, feats, padding=x.padding_text, xlnet_mode=mode, forms=_gender_form
    )
    np.testing.assert_allclose(
        res.bs1.loc[targets_c, names].to_numpy(), bs1_ref.to_numpy(), rtol=0, atol=XL_TOL
    )
    np.testing.assert_allclose(res.bs2.loc[names, feats].to_numpy(), bs2_ref.to_numpy(), rtol=0, atol=XL_TOL)
    for t in targets_c:
        for f in feats:
            r_ref = pearsonr(bs1_ref.loc[t].to_numpy(float), bs2_ref[f].to_numpy(float)).statistic
            assert res.ibs.loc[t, f] == pytest.approx(r_ref, abs=XL_TOL)
    # the direct score reads singular forms in singular templates and plural forms in plural ones
    d = slot_scores(
        x, dt, targets, la.feature_set("gender", feats), cache=False, progress=False
    ).bias_scores()
    d_ref = _ref_bias_scores(
        x.lm,
        raw["occupation-gender"],
        targets,
        feats,
        padding=x.padding_text,
        xlnet_mode=mode,
        forms=_gender_form,
    )
    np.testing.assert_allclose(d.loc[targets, feats].to_numpy(), d_ref.to_numpy(), rtol=0, atol=XL_TOL)


@pytest.mark.slow
def test_float32_batched_agrees_with_reference_to_float_precision():
    b = tiny_bridge_lm("bert", seed=3)  # float32 weights, as real checkpoints
    raw = _raw_sets()
    ts = la.load_louis_alexandre_templates()["name-trait"]
    got = slot_scores(b, ts, NAMES, TRAITS, cache=False, progress=False).bias_scores()
    ref = _ref_bias_scores(b.lm, raw["name-trait"], NAMES, TRAITS)
    np.testing.assert_allclose(got.to_numpy(), ref.to_numpy(), rtol=0, atol=1e-4)


def test_xlnet_modes_differ_and_default_padding_is_used(xlnet):
    naive = BridgeLM(xlnet.lm, xlnet_mode="naive", padding_text=xlnet.padding_text)
    perm = BridgeLM(xlnet.lm, xlnet_mode="perm_mask", padding_text=xlnet.padding_text)
    ts = la.load_louis_alexandre_templates()["name-trait"]
    a = slot_scores(naive, ts, NAMES[:4], TRAITS, cache=False, progress=False).log_p_tgt
    b = slot_scores(perm, ts, NAMES[:4], TRAITS, cache=False, progress=False).log_p_tgt
    assert np.abs(a - b).max() > 1e-3
    assert naive.cache_id() != perm.cache_id()
    default = BridgeLM(xlnet.lm)
    assert default.padding_text == la.PADDING_TEXT
    s = default.fill("{target} is {feature}.", "Emma")
    assert s.startswith("In 1991, the remains") and s.endswith("Emma is <mask>.")


# =============================================================================================
# properties of the score
# =============================================================================================
def test_prior_cancellation(bert):
    """The S2 prior is a per-feature constant: removing it leaves IBS unchanged; the S1 prior is per-name and
    matters."""
    res = ib.indirect_bias(
        bert,
        "occupation",
        "trait",
        targets=la.load_louis_alexandre_words()["occupation"][:12],
        features=[*TRAITS, "honest", "kind"],
        names=la.load_louis_alexandre_words()["name"][:40],
        direct=False,
        max_templates=6,
        cache=False,
        progress=False,
    )
    names = res.bridge
    bs2_no_prior = pd.DataFrame(res.s2.log_mean_tgt(), index=res.s2.context, columns=res.s2.predicted)
    ibs_no_s2_prior = ib.ibs_from_bridge_scores(res.bs1, bs2_no_prior)
    np.testing.assert_allclose(ibs_no_s2_prior.to_numpy(), res.ibs.to_numpy(), rtol=0, atol=1e-12)
    bs1_no_prior = pd.DataFrame(res.s1.log_mean_tgt(), index=res.s1.context, columns=res.s1.predicted)
    ibs_no_s1_prior = ib.ibs_from_bridge_scores(bs1_no_prior, res.bs2)
    assert np.abs(ibs_no_s1_prior.to_numpy() - res.ibs.to_numpy()).max() > 1e-3
    # the priors themselves are not constant across names (otherwise the second check is vacuous)
    assert np.std(res.s1.log_mean_prior()) > 1e-3
    assert len(names) == 40


def test_ibs_vectorised_matches_pandas_and_linear_cases(caplog):
    rng = np.random.default_rng(0)
    names = [f"n{i}" for i in range(30)]
    bs1 = pd.DataFrame(rng.normal(size=(4, 30)), index=list("abcd"), columns=names)
    bs2 = pd.DataFrame(rng.normal(size=(30, 3)), index=names, columns=["x", "y", "z"])
    bs2["x"] = 2.0 * bs1.loc["a"].to_numpy() + 1.0  # exact linear relation
    bs2["y"] = -0.5 * bs1.loc["b"].to_numpy()
    ibs = ib.ibs_from_bridge_scores(bs1, bs2)
    ref = pd.concat([bs1.T, bs2], axis=1).corr().loc[list("abcd"), ["x", "y", "z"]]
    np.testing.assert_allclose(ibs.to_numpy(), ref.to_numpy(), atol=1e-12)
    assert ibs.loc["a", "x"] == pytest.approx(1.0) and ibs.loc["b", "y"] == pytest.approx(-1.0)
    bs1.loc["d"] = 3.0  # constant over names -> undefined
    with caplog.at_level(logging.WARNING):
        ibs = ib.ibs_from_bridge_scores(bs1, bs2)
    assert ibs.loc["d"].isna().all() and "undefined" in caplog.text
    with pytest.raises(ValueError, match="shared"):
        ib.ibs_from_bridge_scores(bs1, bs2.rename(index=lambda n: n + "_other"))


def test_cache_roundtrip(bert):
    ts = la.load_louis_alexandre_templates()["name-trait"]
    a = slot_scores(bert, ts, NAMES[:5], TRAITS, progress=False)
    b = slot_scores(bert, ts, NAMES[:5], TRAITS, progress=False)
    assert a.n_cached == 0 and b.n_cached == 1
    np.testing.assert_array_equal(a.log_p_tgt, b.log_p_tgt)
    c = slot_scores(bert, ts.subset(2), NAMES[:5], TRAITS, progress=False)
    assert c.n_cached == 0 and c.log_p_tgt.shape == (2, 5, 3)


def test_multi_token_words_are_dropped_or_raise(bert, caplog):
    ts = la.load_louis_alexandre_templates()["name-trait"]
    with caplog.at_level(logging.WARNING):
        r = slot_scores(
            bert,
            ts,
            NAMES[:3],
            ["ambitious", "easily discouraged", "self-reliant"],
            cache=False,
            progress=False,
        )
    assert r.predicted == ("ambitious",)
    assert set(r.dropped) == {"easily discouraged", "self-reliant"}
    assert "not single tokens" in caplog.text
    with pytest.raises(ValueError, match="easily discouraged"):
        slot_scores(
            bert,
            ts,
            NAMES[:3],
            ["ambitious", "easily discouraged"],
            multi_token="raise",
            cache=False,
            progress=False,
        )
    # a name that is not one token leaves the bridge
    s1 = la.load_louis_alexandre_templates()["occupation-name"].subset(2)
    res = ib.indirect_bias_scores(
        bert, TARGETS[:2], TRAITS, [*NAMES, "Zzyzxqw"], s1, ts, cache=False, progress=False
    )
    assert "Zzyzxqw" not in res.bridge and "Zzyzxqw" in res.dropped["names"]


def test_bad_input_messages(bert):
    with pytest.raises(ValueError, match="target_category"):
        ib.indirect_bias(bert, "trait", "occupation")
    with pytest.raises(ValueError, match="feature_category"):
        ib.indirect_bias(bert, "occupation", "occupation")
    with pytest.raises(KeyError, match="no template set"):
        la.template_set("trait", "name")
    with pytest.raises(ValueError, match="exactly one"):
        la.TemplateSet.from_strings(["{target} works."])
    with pytest.raises(ValueError, match="empty or non-text"):
        slot_scores(
            bert, la.TemplateSet.from_strings(["{target} is {feature}."]), ["Emma", ""], TRAITS, cache=False
        )
    with pytest.raises(ModelNotAvailableError):
        load_bridge_lm("/nonexistent/model/folder")


def test_load_bridge_lm_bundled_trained_model():
    """The bundled model trained by biaskit (en-mlm) loads by its short name: a real BERT-style
    model, not the random stand-in, lower-casing, with the everyday words it was trained on."""
    b = load_bridge_lm("en-mlm", device="cpu")
    assert b.kind == "bert" and b.name == "en-mlm"
    assert not b.lm.is_fallback and b.lm.lowercase
    assert b.word_id("nurse") is not None and b.word_id("john") is not None
    assert b.word_id("John") == b.word_id("john")
    assert b.word_id("easily discouraged") is None
    lp = slot_scores(
        b,
        la.TemplateSet.from_strings(["{target} is a {feature}."]),
        ["john", "mary"],
        ["nurse"],
        cache=False,
        progress=False,
    )
    assert np.isfinite(lp.log_p_tgt).all()


def _custom_template_scores(bert):
    """Indirect bias scores of ``bert`` with templates given as strings (two steps and the direct one)."""
    s1 = la.TemplateSet.from_strings(
        ["{feature} works as a {target}.", "{feature} is a {target}."],
        target_category="occupation",
        feature_category="name",
    )
    s2 = la.TemplateSet.from_strings(
        ["{target} is {feature}."], target_category="name", feature_category="trait"
    )
    dt = la.TemplateSet.from_strings(
        ["The {target} is {feature}."], target_category="occupation", feature_category="trait"
    )
    return ib.indirect_bias_scores(
        bert, TARGETS, TRAITS, NAMES, s1, s2, direct_templates=dt, cache=False, progress=False
    )


def test_custom_templates_and_result_helpers(bert):
    res = _custom_template_scores(bert)
    tidy = res.tidy()
    assert len(tidy) == 9 and set(tidy.columns) >= {"model", "target", "feature", "ibs", "direct"}
    pts = res.bridge_points("nanny", "caring")
    assert list(pts["name"]) == NAMES
    assert pearsonr(pts["x"], pts["y"]).statistic == pytest.approx(res.ibs.loc["nanny", "caring"], abs=1e-9)
    tr = res.direct_indirect_correlation()
    assert tr.n == 9 and -1 <= tr.statistic <= 1


def test_check_published_tables():
    c = check_published_tables()
    assert all(v["equal_at_4_decimals"] for v in c["table_3_5_vs_appendix"].values())
    assert len(c["diff_rank_errors"]) == 5
    # overlaps counted by hand on the printed top-10 lists (typos such as 'fisherma' count as printed)
    counts = {g: {m: len(v) for m, v in by.items()} for g, by in c["top10_overlap"].items()}
    assert counts == {
        "female": {"bert-base": 6, "bert-large": 2, "xl-base": 5, "xl-large": 5},
        "male": {"bert-base": 4, "bert-large": 5, "xl-base": 0, "xl-large": 3},
    }
    assert c["table_4_1"]["indirect_negative_for_all_female_words"]
    assert not c["table_4_1"]["direct_negative_for_all_female_words"]
    assert c["table_3_2_n"] == [101]  # 101 occupations at the time, 99 in the final list
    assert c["likert_means"]["Usefulness of introduction message"] == {
        "table_based": 3.6,
        "scatterplot_based": 6.0,
    }
    f = published_correlation_frame()
    assert f.shape == (4 * 11 * 4, 6) and f["r"].isna().sum() == 4 * 4
    assert (
        f.query("model == 'bert-base' and target == 'Occupation' and feature == 'Gender'")["r"].item()
        == 0.4477
    )


def test_mask_text_inside_a_word_is_refused(xlnet):
    ts = la.TemplateSet.from_strings(
        ["{target} is {feature}."], target_category="name", feature_category="trait"
    )
    with pytest.raises(ValueError, match="mask token"):
        slot_scores(xlnet, ts, ["Emma <mask>"], TRAITS, cache=False, progress=False)


# =============================================================================================
# Tables 3.7/3.8 (Bolukbasi ranks), A.1-A.4 (agreement per category pair), 3.2 (padding texts)
# =============================================================================================
GW6 = ["female", "girl", "woman", "male", "boy", "man"]


def _gender_scores(seed):
    occ = la.load_louis_alexandre_words()["occupation"]
    rng = np.random.default_rng(seed)
    return pd.DataFrame(rng.normal(size=(len(occ), 6)), index=occ, columns=GW6)


def test_bolukbasi_rank_comparison_against_hand_ranks():
    direct, indirect = _gender_scores(1), _gender_scores(2)
    cmp_all = ib.bolukbasi_rank_comparison({"direct": direct, "indirect": indirect})
    assert len(cmp_all) == 2 * 21 and (cmp_all["n_ranked"] == 99).all()
    assert cmp_all.groupby("group").size().to_dict() == {"female-associated": 24, "male-associated": 18}
    # independent ranks: 1 + number of occupations with a strictly larger mean score
    for method, sc in (("direct", direct), ("indirect", indirect)):
        f = sc[["female", "girl", "woman"]].mean(axis=1)
        m = sc[["male", "boy", "man"]].mean(axis=1)
        for occ in ("homemaker", "maestro", "guidance counselor"):
            row = cmp_all[(cmp_all["method"] == method) & (cmp_all["occupation"] == occ)].iloc[0]
            assert row["female_rank"] == 1 + int((f > f[occ]).sum())
            assert row["male_rank"] == 1 + int((m > m[occ]).sum())
            assert row["diff_rank"] == row["female_rank"] - row["male_rank"]
    # published ranks (Table 3.7, bert-base): homemaker direct 3 / 35, nurse indirect 5 / 90
    hm = cmp_all.query("method == 'direct' and occupation == 'homemaker'").iloc[0]
    assert (hm["thesis_female_rank"], hm["thesis_male_rank"], hm["thesis_diff_rank"]) == (3, 35, -32)
    assert hm["thesis_lean"] == "female"
    nu = cmp_all.query("method == 'indirect' and occupation == 'nurse'").iloc[0]
    assert (nu["thesis_female_rank"], nu["thesis_male_rank"]) == (5, 90)
    # xl-base: the misprinted Diff. Rank of hairdresser (indirect, printed 83) is recomputed and noted
    xb = ib.bolukbasi_rank_comparison({"indirect": indirect}, model="xl-base")
    hd = xb.query("occupation == 'hairdresser'").iloc[0]
    assert hd["thesis_diff_rank"] == 3 - 86 and "misprint" in hd["note"]
    # excluding the gendered occupations: 89 ranked, and an excluded Bolukbasi word would be noted
    cmp_ex = ib.bolukbasi_rank_comparison({"direct": direct}, exclude=ib.GENDERED_OCCUPATIONS)
    assert (cmp_ex["n_ranked"] == 89).all()
    f = direct.drop(index=list(ib.GENDERED_OCCUPATIONS))[["female", "girl", "woman"]].mean(axis=1)
    assert cmp_ex.query("occupation == 'nanny'")["female_rank"].item() == 1 + int((f > f["nanny"]).sum())
    cmp_nurse = ib.bolukbasi_rank_comparison({"direct": direct}, exclude=["nurse"])
    row = cmp_nurse.query("occupation == 'nurse'").iloc[0]
    assert pd.isna(row["female_rank"]) and row["note"] == "excluded from the ranking" and row["lean"] == "—"
    # summary: counted directly
    s = ib.bolukbasi_rank_summary(cmp_all).set_index(["method", "group"])
    g = cmp_all.query("method == 'indirect' and group == 'male-associated'")
    assert s.loc[("indirect", "male-associated"), "run_agrees"] == int((g["diff_rank"] > 0).sum())
    # the thesis, bert-base indirect: 11 of 12 female-associated occupations rank more female
    fem = cmp_all.query("method == 'indirect' and group == 'female-associated'")
    assert s.loc[("indirect", "female-associated"), "thesis_agrees"] == int(
        (fem["thesis_diff_rank"] < 0).sum()
    )
    assert s.loc[("indirect", "female-associated"), "n"] == 12


def _result(target_cat, feature_cat, ibs, direct):
    empty = pd.DataFrame()
    return ib.IndirectBiasResult(
        model="m",
        target_category=target_cat,
        feature_category=feature_cat,
        ibs=ibs,
        bs1=empty,
        bs2=empty,
        direct=direct,
    )


def test_direct_indirect_agreement_every_pair():
    rng = np.random.default_rng(0)
    ibs = pd.DataFrame(rng.normal(size=(5, 6)), index=list("abcde"), columns=GW6)
    direct = 0.5 * ibs + pd.DataFrame(rng.normal(size=(5, 6)), index=ibs.index, columns=GW6)
    direct.iloc[0, 0] = np.nan  # one pair without a direct score
    tr = pd.DataFrame(rng.normal(size=(4, 3)), index=list("wxyz"), columns=["kind", "lazy", "calm"])
    short = _result("beverage", "gender", ibs.iloc[:1, :2], direct.iloc[:1, :2].fillna(0.1))
    res = [
        _result("occupation", "gender", ibs, direct),
        _result("country", "trait", tr, tr * 2 + 1),
        _result("sport", "age", tr, None),
        short,
    ]
    a = ib.direct_indirect_agreement(res)
    assert list(a["target_category"]) == ["Occupation", "Country", "Beverage"]  # no direct: skipped
    ok = ~np.isnan(direct.to_numpy().ravel())
    r_ref = pearsonr(direct.to_numpy().ravel()[ok], ibs.to_numpy().ravel()[ok]).statistic
    assert a.loc[0, "r"] == pytest.approx(r_ref, abs=1e-12) and a.loc[0, "n_pairs"] == 29
    assert a.loc[1, "r"] == pytest.approx(1.0) and a.loc[1, "n_pairs"] == 12
    # published cells (Tables A.1-A.4): rows = feature category, columns = target category
    assert a.loc[0, "thesis bert-base"] == 0.4477 and a.loc[0, "thesis xl-large"] == 0.1963
    assert a.loc[1, "thesis bert-base"] == 0.294 and a.loc[2, "thesis bert-large"] == -0.2011
    assert np.isnan(a.loc[2, "r"]) and "only 2 pairs" in a.loc[2, "note"]
    assert a.loc[0, "note"] == ""


def test_padding_text_ttests_against_scipy():
    from scipy.stats import ttest_ind, ttest_rel

    rng = np.random.default_rng(4)
    idx, cols = [f"o{i}" for i in range(20)], [f"f{j}" for j in range(12)]
    base = pd.DataFrame(rng.normal(size=(20, 12)), index=idx, columns=cols)
    texts = {
        "1": base,
        "2": base + rng.normal(scale=0.01, size=base.shape),  # nearly the same
        "3": base + 3.0,  # shifted for every occupation
    }
    t = ib.padding_text_ttests(texts).set_index(["text_a", "text_b"])
    assert list(t.index) == [("1", "2"), ("1", "3"), ("2", "3")]
    ps = [ttest_ind(texts["1"].loc[o], texts["2"].loc[o]).pvalue for o in idx]
    assert t.loc[("1", "2"), "pct_p<0.05"] == pytest.approx(100 * np.mean(np.array(ps) < 0.05))
    assert t.loc[("1", "2"), "median_p"] == pytest.approx(np.median(ps))
    assert t.loc[("1", "2"), "pct_p<0.05"] == 0.0
    assert t.loc[("1", "3"), "pct_p<0.05"] == 100.0 and t.loc[("1", "3"), "mean_abs_diff"] == pytest.approx(
        3.0
    )
    # paired: a constant shift of 0.01 plus tiny noise is detected by the paired test only
    texts2 = {"1": base, "2": base + 0.01 + rng.normal(scale=1e-4, size=base.shape)}
    tp = ib.padding_text_ttests(texts2, paired=True)
    ps_rel = [ttest_rel(texts2["1"].loc[o], texts2["2"].loc[o]).pvalue for o in idx]
    assert tp.loc[0, "median_p"] == pytest.approx(np.median(ps_rel)) and tp.loc[0, "pct_p<0.01"] == 100.0
    assert ib.padding_text_ttests(texts2).loc[0, "pct_p<0.05"] == 0.0
    # a feature missing under one text is left out of that occupation's test
    t3 = {"1": base, "2": base.copy()}
    t3["2"].iloc[0, :11] = np.nan
    assert ib.padding_text_ttests(t3).loc[0, "n_targets"] == 19


def test_padding_texts_bundled_and_padding_text_ibs(xlnet, bert):
    texts = la.load_padding_texts()
    assert list(texts) == ["original", "austen", "melville", "dickens", "carroll"]
    assert texts["original"] == la.PADDING_TEXT
    assert texts["austen"].startswith("It is a truth universally acknowledged")
    assert all(t.endswith("<eod> </s> <eos>") for t in texts.values())
    two = {"short": xlnet.padding_text, "austen": texts["austen"]}
    kw = dict(
        targets=["nanny", "engineer", "pilot"],
        features=["male", "female", "man", "woman"],
        names=NAMES,
        max_templates=2,
        cache=False,
        progress=False,
    )
    got = ib.padding_text_ibs(xlnet, two, "occupation", "gender", **kw)
    same = ib.indirect_bias(xlnet, "occupation", "gender", direct=False, **kw).ibs
    np.testing.assert_allclose(got["short"].to_numpy(), same.to_numpy(), rtol=0, atol=1e-6)
    assert np.abs(got["short"] - got["austen"]).to_numpy().max() > 1e-3  # the padding text is read
    with pytest.raises(ValueError, match="XLNet"):
        ib.padding_text_ibs(bert, two, "occupation", "gender", **kw)


# =============================================================================================
# the model-generated bridge (seed 004 section 3.3.1, experiment E6)
# =============================================================================================
def _ref_generated(lm, verbatim, targets, top_n):
    """Top-n tokens at the name mask, one forward pass per target, then the whole-word/letters filter."""
    tok = lm.tokenizer
    per_target = {}
    for t in targets:
        sent = _ref_sentence(lm, verbatim, "[TARGET]", "[FEATURE]", t)
        ids = tok(sent, return_tensors="pt")["input_ids"]
        pos = (ids[0] == tok.mask_token_id).nonzero().flatten().tolist()
        assert len(pos) == 1
        with torch.no_grad():
            p = torch.softmax(lm.model(ids).logits[0, pos[0]].double(), dim=-1)
        top = torch.topk(p, top_n).indices.tolist()
        kept = []
        for i in top:
            piece = tok.convert_ids_to_tokens(i)
            if i in tok.all_special_ids or piece.startswith("##"):
                continue
            if len(piece) < 2 or not piece.isalpha() or tok.tokenize(piece) != [piece]:
                continue
            kept.append(piece)
        per_target[t] = kept
    return per_target


def test_generate_bridge_equals_independent_topn(bert):
    raw = _raw_sets()["occupation-name"]
    targets = ["nanny", "engineer", "pilot", "nurse"]
    gb = ib.generate_bridge(bert, "occupation", targets, top_n=12)
    ref = _ref_generated(bert.lm, raw["templates"][0], targets, 12)
    assert gb.per_target == ref
    assert gb.templates == (la.template_set("occupation", "name").templates[0],)
    # merged: every kept word once, most often generated first, ties in order of first appearance
    counts = {}
    for t in targets:
        for w in ref[t]:
            counts[w] = counts.get(w, 0) + 1
    assert gb.counts == {w: counts[w] for w in gb.names}
    assert set(gb.names) == set(counts)
    assert [gb.counts[w] for w in gb.names] == sorted(gb.counts.values(), reverse=True)
    flat = [w for t in targets for w in ref[t]]
    for a, b in zip(gb.names, gb.names[1:], strict=False):
        if gb.counts[a] == gb.counts[b]:
            assert flat.index(a) < flat.index(b)
    # every rejected token has a reason, and nothing kept was also rejected
    assert all(gb.rejected.values())
    assert not set(gb.rejected) & set(gb.names)


def test_indirect_bias_generated_equals_reference(bert):
    raw = _raw_sets()
    targets = ["nanny", "engineer", "pilot"]
    res = ib.indirect_bias_generated(
        bert,
        "occupation",
        "trait",
        top_n=8,
        targets=targets,
        features=TRAITS,
        max_templates=3,
        direct=False,
        cache=False,
        progress=False,
    )
    gb = res.details["generated_bridge"]
    assert isinstance(gb, ib.GeneratedBridge) and len(gb.names) >= 3
    assert res.bridge == gb.names  # every generated word is a single token, so none leaves the bridge
    bs1_ref = _ref_bias_scores(bert.lm, _first(raw, "occupation-name", 3), targets, gb.names)
    bs2_ref = _ref_bias_scores(bert.lm, _first(raw, "name-trait", 3), gb.names, TRAITS)
    np.testing.assert_allclose(
        res.bs1.loc[targets, gb.names].to_numpy(), bs1_ref.to_numpy(), rtol=0, atol=1e-9
    )
    np.testing.assert_allclose(
        res.bs2.loc[gb.names, TRAITS].to_numpy(), bs2_ref.to_numpy(), rtol=0, atol=1e-9
    )
    for t in targets:
        for f in TRAITS:
            r_ref = pearsonr(bs1_ref.loc[t].to_numpy(float), bs2_ref[f].to_numpy(float)).statistic
            assert res.ibs.loc[t, f] == pytest.approx(r_ref, abs=1e-9)
    with pytest.raises(TypeError, match="own names"):
        ib.indirect_bias_generated(bert, "occupation", "trait", names=NAMES)


def test_generate_bridge_templates_filter_and_errors(bert, xlnet):
    targets = ["nanny", "engineer", "pilot"]
    s1 = la.template_set("occupation", "name")
    assert "His name is" in s1.templates[8] and "Her name is" in s1.templates[17]
    gb = ib.generate_bridge(bert, "occupation", targets, top_n=10, templates=(8, 17))
    his = ib.generate_bridge(bert, "occupation", targets, top_n=10, templates=(8,))
    her = ib.generate_bridge(bert, "occupation", targets, top_n=10, templates=(17,))
    for t in targets:  # the per-target set is the ordered union over the gendered templates
        assert gb.per_target[t] == list(dict.fromkeys(his.per_target[t] + her.per_target[t]))
    assert set(gb.names) == set(his.names) | set(her.names)
    assert gb.jaccard(his) == pytest.approx(len(set(his.names)) / len(set(gb.names)))
    assert gb.in_list([w.upper() for w in his.names[:2]]) == [w for w in gb.names if w in his.names[:2]]
    only = ib.generate_bridge(bert, "occupation", targets, top_n=10, templates=(8,), keep=lambda w: "e" in w)
    assert only.names == [w for w in his.names if "e" in w]
    assert all(why == "rejected by the keep filter" for w, why in only.rejected.items() if w in his.names)
    # a cased model keeps capitalised whole words only
    gx = ib.generate_bridge(xlnet, "occupation", targets, top_n=30)
    assert gx.details["cased_filter"] is True
    assert all(w[0].isupper() and w.isalpha() for w in gx.names)
    with pytest.raises(ValueError, match="top_n"):
        ib.generate_bridge(bert, "occupation", targets, top_n=0)
    with pytest.raises(ValueError, match="indices"):
        ib.generate_bridge(bert, "occupation", targets, templates=(99,))
    with pytest.raises(ValueError, match="predict a name"):
        ib.generate_bridge(bert, "occupation", targets, s1=la.template_set("occupation", "trait"))


# =============================================================================================
# the user study's Likert figures (Figs. 5.1/5.2 from Tables C.1/C.2)
# =============================================================================================
def test_user_study_likert_returns_the_printed_answers():
    fig = la.load_user_study_figures()
    assert fig["n_per_prototype"] == 5 and fig["scale"] == {
        "min": 0,
        "max": 9,
        "printed": fig["scale"]["printed"],
    }
    assert fig["figures"]["5.1"]["caption"] == "Thinking-aloud study: Evaluation of the visualizations."
    assert fig["figures"]["5.2"]["panels"]["c"]["caption"] == (
        "Thinking-aloud study: Evaluation of the helping messages and legends."
    )
    lik = user_study_likert().set_index(["item", "prototype"])
    assert len(lik) == 22 and (lik["n"] == 5).all()
    # answers as printed in Tables C.1/C.2 (P1..P5)
    assert lik.loc[("Usefulness of highlighting elements", "table_based"), "answers"] == (9, 9, 9, 8.5, 9)
    assert lik.loc[("Usefulness of introduction message", "table_based"), "answers"] == (8, 6, 0, 1, 3)
    assert lik.loc[("Clarity of indication messages and legends", "scatterplot_based"), "answers"] == (
        7,
        9,
        8,
        9,
        8,
    )
    assert lik.loc[("Getting started with the system", "table_based"), "answers"] == (6, 8, 6.5, 7, 6)
    # summaries computed by hand from the printed answers
    assert lik.loc[("Usefulness of introduction message", "table_based"), "mean"] == pytest.approx(3.6)
    assert lik.loc[("Usefulness of introduction message", "scatterplot_based"), "mean"] == pytest.approx(6.0)
    assert lik.loc[("Usefulness of highlighting elements", "table_based"), "mean"] == pytest.approx(8.9)
    assert lik.loc[
        ("Clarity of indication messages and legends", "scatterplot_based"), "mean"
    ] == pytest.approx(8.2)
    assert lik.loc[("Usefulness of introduction message", "table_based"), "sd"] == pytest.approx(
        np.sqrt(((8 - 3.6) ** 2 + (6 - 3.6) ** 2 + 3.6**2 + 2.6**2 + 0.6**2) / 4)
    )
    assert lik.loc[("Ease of reading", "table_based"), ["min", "max"]].tolist() == [4.0, 9.0]
    # panels: Fig. 5.1 a/b = prototype, Fig. 5.2 a/b/c = C.1's three evaluation groups; no background rows
    assert set(lik.reset_index().query("prototype == 'table_based'")["fig_5_1_panel"]) == {"a"}
    by_panel = lik.reset_index().groupby("fig_5_2_panel")["item"].nunique().to_dict()
    assert by_panel == {"a": 3, "b": 4, "c": 4}
    assert "Knowledge in NLP" not in lik.index.get_level_values("item")
    assert lik.loc[("Choice of colors", "scatterplot_based"), "question"] == "Choice of colours"


# =============================================================================================
# summary() (every registered metric explains its result)
# =============================================================================================
def test_indirect_bias_result_summary_names_the_scores_and_the_agreement_test(bert):
    from biaskit.core.results import format_p_value

    res = _custom_template_scores(bert)
    text = res.summary()
    tidy = res.tidy().dropna(subset=["ibs"])
    top = tidy.loc[tidy["ibs"].idxmax()]
    assert f"through {len(NAMES)} first names" in text and "from -1 to 1" in text
    assert f"mean {tidy['ibs'].mean():.3f}" in text
    assert f"{top['target']} - {top['feature']} (IBS = {top['ibs']:.3f})" in text
    r = res.direct_indirect_correlation()
    assert f"Pearson r = {r.statistic:.3f}, p-value = {format_p_value(r.p_value)}" in text
    assert "no statistical test of a single score" in text
    no_direct = _result("occupation", "trait", res.ibs, None).summary(alpha=0.01)
    assert "Pearson" not in no_direct and f"mean {tidy['ibs'].mean():.3f}" in no_direct
