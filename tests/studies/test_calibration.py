"""Calibration machinery (biaskit.studies.calibration) on synthetic values with a known truth."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from biaskit.core.registry import REGISTRY
from biaskit.studies import calibration as cal
from biaskit.studies import calibration_stats as cal_stats

TARGETS = [f"job{i}" for i in range(40)]
DIRS = {t: ("male" if i % 2 else "female") for i, t in enumerate(TARGETS)}


def _items(effect: float, per_target: int = 12, *, kind="sign", seed=0, target_sd=0.0):
    """Item values male-minus-female: planted effect toward each target's direction plus noise."""
    rng = np.random.default_rng(seed)
    tg, val = [], []
    for t in TARGETS:
        u = rng.normal(0, target_sd)
        sign = 1 if DIRS[t] == "male" else -1
        tg += [t] * per_target
        val += list(sign * effect + u + rng.normal(0, 1, per_target))
    return cal.MetricValues("x", kind, np.array(tg, object), np.array(val))


def test_control_items_differ_only_in_gendered_words():
    pairs = cal.control_pairs(["nurse"])
    assert len(pairs) == len(cal.PAIR_TEMPLATES)
    for m, f in zip(pairs["male"], pairs["female"], strict=True):
        diff = [(a, b) for a, b in zip(m.split(), f.split(), strict=True) if a != b]
        assert len(diff) == 1 and diff[0][0].strip(".,").lower() in {"he", "his", "him"}
    para = cal.control_pairs(["nurse"], cal.PARAPHRASE_TEMPLATES)
    assert len(cal.PARAPHRASE_TEMPLATES) == len(cal.PAIR_TEMPLATES)
    gendered = {"he", "his", "him", "she", "her"}

    def words(x: str) -> set[str]:
        return {w.strip(".,").lower() for w in x.split()} & gendered

    for j in range(len(pairs)):
        assert para["male"][j] != pairs["male"][j]  # other words ...
        assert words(para["male"][j]) == words(pairs["male"][j])  # ... the same gendered word
        assert words(para["female"][j]) == words(pairs["female"][j])
    blanks = cal.control_blanks(["nurse"], cal.TBE_TEMPLATES)
    assert all(s.count("[MASK]") == 1 and "nurse" in s for s in blanks["sentence"])


def test_evaluate_sign_is_the_proportion_test():
    mv = _items(0.4)
    ev = cal.evaluate(mv, DIRS)
    a = np.where([DIRS[t] == "male" for t in mv.target], 1, -1) * mv.value
    k, n = int((a > 0).sum()), a.size
    assert ev.effect == pytest.approx(100 * k / n)
    z = (k / n - 0.5) / np.sqrt((k / n) * (1 - k / n) / n)  # the thesis's sample-proportion SE
    assert ev.p_value == pytest.approx(2 * stats.norm.sf(abs(z)), rel=1e-6)
    assert ev.toward_planted and ev.p_value < 1e-6
    every = cal.evaluate(_items(5.0), DIRS)  # all pairs toward: the exact binomial test takes over
    assert every.effect == 100 and every.p_value == pytest.approx(2 * 0.5**480)


def test_evaluate_mean_and_groups_orientation():
    mv = _items(0.5, kind="mean")
    ev = cal.evaluate(mv, DIRS)
    assert ev.effect == pytest.approx(0.5, abs=0.1) and ev.toward_planted
    flipped = {t: ("female" if d == "male" else "male") for t, d in DIRS.items()}
    assert cal.evaluate(mv, flipped).effect == pytest.approx(-ev.effect)
    g = cal.MetricValues(
        "g",
        "groups",
        np.array(TARGETS, object),
        np.array([1.0 if DIRS[t] == "male" else -1.0 for t in TARGETS]) + np.linspace(0, 0.1, 40),
    )
    evg = cal.evaluate(g, DIRS)
    assert (
        evg.toward_planted
        and evg.p_value < 0.01
        and evg.effect == pytest.approx(2.0, abs=0.05)
        and evg.effect_size > 1.5
    )


def test_power_matches_the_analytic_power_of_the_t_test():
    # subsets of a pool much larger than n behave like independent samples (near the pool size the
    # power is conditional on the pool's own realised effect; the docstring says so)
    delta = 0.3
    mv = _items(delta, per_target=24, kind="mean", seed=2)
    a = np.where([DIRS[t] == "male" for t in mv.target], 1, -1) * mv.value
    d_pool = a.mean() / a.std(ddof=1)  # resampling estimates the power at the pool's own effect
    assert d_pool == pytest.approx(delta, abs=0.1)
    curve = cal.power_curve(mv, DIRS, [20, 40, 80, 120], n_resamples=200)
    assert list(curve["n"]) == [20, 40, 80, 120]
    for n, pw in zip(curve["n"], curve["power"], strict=True):
        crit = stats.t.ppf(0.975, n - 1)
        analytic = stats.nct.sf(crit, n - 1, d_pool * np.sqrt(n))  # one direction (the planted one)
        assert pw == pytest.approx(analytic, abs=0.12), n
    assert cal.sample_size_for_power(curve, 0.6) in (80, 120)


@pytest.mark.parametrize("kind", ["sign", "mean"])
def test_false_positive_rate_is_alpha_without_clustering(kind):
    fpr = cal.false_positive_rate(_items(0.0, kind=kind, seed=3), TARGETS, n_resamples=300, seed=1)
    assert abs(fpr["fpr"] - 0.05) < 3 * fpr["se"]


def test_false_positive_rate_exposes_clustered_items():
    # a per-profession random effect makes items of one profession alike: tests that treat them as
    # independent reject far too often; the group (permutation) test over professions does not
    clustered = _items(0.0, kind="mean", target_sd=1.0, seed=5)
    assert cal.false_positive_rate(clustered, TARGETS, n_resamples=200)["fpr"] > 0.3
    per_target = cal.MetricValues("g", "groups", clustered.target, clustered.value)
    by_word = np.array([per_target.value[per_target.target == t].mean() for t in TARGETS])
    g = cal.MetricValues("g", "groups", np.array(TARGETS, object), by_word)
    fpr = cal.false_positive_rate(g, TARGETS, n_resamples=200)
    assert abs(fpr["fpr"] - 0.05) < 3 * fpr["se"]


def test_vectorised_kl_scores_are_the_thesis_score():
    from biaskit.core.stats import kl_divergence_score, kl_scores

    rng = np.random.default_rng(8)
    s, a = rng.normal(-20, 3, size=(5, 60)), rng.normal(-21, 5, size=(5, 60))
    want = [kl_divergence_score(x, y).statistic for x, y in zip(s, a, strict=True)]
    assert kl_scores(s, a) == pytest.approx(want, rel=1e-12)
    assert kl_scores([[1.0, 2.0, 3.0]], [[1.0, 2.0, 3.0]])[0] == 50.0  # identical samples
    with pytest.raises(ValueError, match="zero spread"):
        kl_scores([[1.0, 1.0]], [[1.0, 2.0]])


def _kl_items(spread: float, seed: int) -> cal.MetricValues:
    """Paired PLL-like samples; the planted side of every pair gets ``spread`` times the other's noise."""
    rng = np.random.default_rng(seed)
    target = np.repeat(np.array(TARGETS, object), 12)
    base = rng.normal(-20, 2, target.size)
    planted = base + rng.normal(0, 1, target.size) * spread
    other = base + rng.normal(0, 1, target.size)
    male_planted = np.array([DIRS[t] == "male" for t in target])
    male, female = np.where(male_planted, planted, other), np.where(male_planted, other, planted)
    return cal.MetricValues("kl", "kl", target, male - female, male=male, female=female)


def test_kl_score_gets_a_label_permutation_test_but_no_direction():
    planted = cal.evaluate(_kl_items(2.0, 9), DIRS, n_permutations=500)
    assert planted.p_value is None and not planted.toward_planted  # the study gives it no test, nor a side
    # variances 4 + 4 = 8 (planted side) and 4 + 1 = 5, equal means: KL(8 || 5) = 0.065 and
    # KL(5 || 8) = 0.0475, so the score is 100 * 0.065 / 0.1125 = 57.8
    assert planted.effect == pytest.approx(57.8, abs=1.5)
    assert planted.p_label < 0.01  # the planted labelling is unusual among random ones
    null = [cal.evaluate(_kl_items(1.0, k), DIRS, n_permutations=200).p_label for k in range(10, 30)]
    assert sum(p < 0.05 for p in null) <= 4 and min(null) > 0  # nothing planted: few rejections
    fpr = cal.false_positive_rate(_kl_items(1.0, 31), TARGETS, n_resamples=40)
    assert fpr["fpr"] is None and fpr["fpr_label"] is not None
    robust = cal.MetricValues("r", "agreement", np.array(TARGETS, object), np.ones(40), other=np.ones(40))
    assert not robust.label_testable and cal.evaluate(robust, DIRS).p_label is None


def test_vectorised_ks_statistics_are_scipys():
    rng = np.random.default_rng(4)
    for n, m in [(30, 30), (50, 20), (7, 90)]:
        x, y = rng.normal(size=(6, n)), rng.normal(0.3, 1.2, size=(6, m))
        x[:, : n // 3] = np.round(x[:, : n // 3], 1)  # ties, within and across the two samples
        y[:, : m // 3] = np.round(y[:, : m // 3], 1)
        got = cal.ks_statistics(x, y)
        want = [stats.ks_2samp(a, b).statistic for a, b in zip(x, y, strict=True)]
        assert got == pytest.approx(want, abs=1e-12)
    assert cal.ks_statistics([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])[0] == 0.0  # identical samples
    assert cal.ks_statistics([1.0, 2.0], [3.0, 4.0])[0] == 1.0  # disjoint samples
    with pytest.raises(ValueError, match="row-aligned"):
        cal.ks_statistics(np.zeros((2, 3)), np.zeros((3, 3)))


def test_label_permutation_test_is_calibrated_where_the_proportion_test_is_not():
    # every item prefers "male" by a global offset: a balanced labelling always gives exactly 50 %
    offset = _items(0.0, seed=6)
    offset.value = offset.value * 0.01 + 1.0
    fpr = cal.false_positive_rate(offset, TARGETS, n_resamples=100)
    assert fpr["fpr"] == 0.0  # the proportion test never rejects: conservative
    strong = _items(0.6, kind="mean", seed=7)
    ev = cal.evaluate(strong, DIRS, n_permutations=999)
    assert ev.p_label == pytest.approx(1 / 1000) and ev.toward_planted


# ----------------------------------------------------------------------------- the bundled controls
@pytest.fixture(scope="module")
def plan():
    from biaskit.data.counterfactual import assign_directions
    from biaskit.training import recipes as tm

    return assign_directions(list(tm.CONTROL_TARGETS), seed=tm.CONTROL_SEED)


#: biaskit's own static measures (WEAT, DirectBias, BIAS_PMI), from the registry
BUILTIN_STATIC = tuple(cm.key for m, cm in REGISTRY.calibration_measures("static") if m.package == "biaskit")


@pytest.mark.slow
@pytest.mark.parametrize("s", [0.5, 0.8])
def test_bundled_static_controls_find_the_planted_skew_and_only_it(s, plan):
    """Seed 000 section 3.5.4's expectation, on the bundled planted word2vec and the planted corpus."""
    from biaskit.data.corpus import tokenize
    from biaskit.training import recipes as tm

    corpus = [tokenize(x) for x in tm.planted_corpus(s, tm.control_base_corpus().train).sentences]
    values = cal.static_values(tm.load_trained_vectors("en-planted-w2v", s=s), corpus, list(plan))
    assert tuple(values) == cal.STATIC_METRICS  # every static measure of the registry, in its order
    for m, mv in values.items():
        if m not in BUILTIN_STATIC:  # a plug-in's measure is not held to biaskit's expectations
            continue
        ev = cal.evaluate(mv, plan)
        if s == 0.5:
            assert ev.p_value > 0.05 and ev.p_label > 0.05, m
        else:
            assert ev.toward_planted and ev.p_value < 0.01 and ev.p_label < 0.01, m


@pytest.mark.slow
def test_run_calibration_tables_come_from_the_values_it_keeps(plan):
    """run_calibration's effect rows are :func:`evaluate` of the values it returns (``result.values``), which
    an analysis such as :func:`effects_by_item_group` reuses without scoring the models again."""
    from biaskit.data.corpus import tokenize
    from biaskit.training import recipes as tm

    skews = (0.5, 0.8)
    vectors = {s: tm.load_trained_vectors("en-planted-w2v", s=s) for s in skews}
    base = tm.control_base_corpus().train
    corpora = {s: [tokenize(x) for x in tm.planted_corpus(s, base).sentences] for s in skews}
    result = cal.run_calibration({}, vectors, corpora, plan, power_s=0.8, n_resamples=20)
    assert tuple(result.values) == cal.STATIC_METRICS
    assert all(set(by_s) == set(skews) for by_s in result.values.values())
    fresh = cal.static_values(vectors[0.8], corpora[0.8], list(plan))
    for m, by_s in result.values.items():
        np.testing.assert_array_equal(by_s[0.8].value, fresh[m].value)
        for s, mv in by_s.items():
            row = result.effects[(result.effects["metric"] == m) & (result.effects["planted"] == s)].iloc[0]
            ev = cal.evaluate(mv, plan)
            assert row["effect"] == pytest.approx(ev.effect) and row["p_value"] == pytest.approx(
                ev.p_value
            ), (m, s)
    assert result.summary.set_index("metric").loc[list(BUILTIN_STATIC), "found_at_0_8"].all()


@pytest.mark.slow
def test_bundled_language_model_controls(plan, one_torch_thread):
    """At s = 0.8 every directional masked-LM measure finds the plan with its own test and the label test
    (p < 0.01); at s = 0.5 none does with the label test, nor with its own test except SEAT, whose permutation
    of sentences ignores that five sentences share a profession (measured: own p = 0.0005, label p = 0.053).
    Measured at s = 0.8: cp 73.1 %, sz 99.1 %, AUL 66.6 % of 640 pairs, KS D = 0.13 (p = 2e-5)."""
    from biaskit.training import recipes as tm

    want = [
        "crows_cp",
        "crows_sz",
        "crows_aul",
        "thesis_ks",
        "stereoset_ss",
        "barza_tbe",
        "barza_sld",
        "lpbs",
        "seat",
    ]
    robust = {}
    for s in (0.5, 0.8):
        values = cal.language_model_values(
            tm.load_trained_mlm(tm.control_name(s), device="cpu"),
            list(plan),
            metrics=[*want, "thesis_robustness"],
        )
        assert set(values) == {*want, "thesis_robustness"}
        robust[s] = cal.evaluate(values["thesis_robustness"], plan)
        for m in want:
            ev = cal.evaluate(values[m], plan)
            if s == 0.5:
                assert ev.p_label > 0.05, m
                assert m == "seat" or ev.p_value > 0.05, m
            else:
                assert ev.toward_planted and ev.p_value < 0.01 and ev.p_label < 0.01, m
        if s == 0.8:
            assert values["crows_cp"].value.size == 640
            assert cal.evaluate(values["crows_cp"], plan).effect == pytest.approx(73.1, abs=0.1)
            assert cal.evaluate(values["crows_aul"], plan).effect == pytest.approx(66.6, abs=0.1)
            assert cal.evaluate(values["crows_sz"], plan).effect == pytest.approx(99.1, abs=0.1)
    # the thesis's robustness agreement l1: without a bias few cp preferences survive paraphrasing (61 %, far
    # below the 80 % threshold: "not robust"); with the planted bias many more do (72.8 % at s = 0.8)
    assert robust[0.5].effect == pytest.approx(60.9, abs=0.1) and robust[0.5].p_value < 1e-10
    assert robust[0.8].effect == pytest.approx(72.8, abs=0.1) and robust[0.8].effect > robust[0.5].effect + 10


def test_bundled_controls_indirect_score_through_planted_names(plan, one_torch_thread):
    """The names' gender is planted along with the pronouns: the IBS through names leans to the plan
    at s = 0.8 and not at s = 0.5 (measured: p = 0.0005 and 0.08, label test 0.0005 and 0.07)."""
    from biaskit.training import recipes as tm

    got = {}
    for s in (0.5, 0.8):
        mv = cal.indirect_name_values(tm.load_trained_mlm(tm.control_name(s), device="cpu"), list(plan))
        assert mv.unit == "profession" and mv.details["n_bridge"] >= 60
        assert set(mv.target) == set(plan) and np.isfinite(mv.value).all()
        got[s] = cal.evaluate(mv, plan)
    assert got[0.5].p_label > 0.05 and got[0.5].p_value > 0.05
    assert got[0.8].toward_planted and got[0.8].p_label < 0.01 and got[0.8].p_value < 0.01


@pytest.mark.slow
def test_bundled_causal_controls(plan, one_torch_thread):
    """The causal twins of the controls.  At s = 0.8 the log-likelihood, next-word and sentence-pair
    readings find the plan with their own test and the label test (p < 0.01); the thesis's KS test on the
    log-likelihoods finds it with the label test but only at p = 0.018 with its own; the ``shared`` reading
    finds it (56.4 % of 640 pairs, p = 0.001) but does not grow with s.  Split by template order, the shared
    reading grows steadily on the 160 pronoun-first pairs (50.0, 51.2, 52.5, 59.4, 66.2 %) and not on the 480
    profession-first pairs, whose words after the pronoun never include the profession.  At s = 0.5 no
    reading finds anything with the label test."""
    from biaskit.training import recipes as tm

    want = ["causal_ll", "causal_shared", "causal_next_word", "causal_sld", "causal_ks"]
    values = {
        s: cal.causal_language_model_values(
            tm.load_trained_clm(tm.causal_control_name(s), device="cpu"), list(plan), metrics=want
        )
        for s in tm.CONTROL_SKEWS
    }
    for m in want:
        null, at08 = cal.evaluate(values[0.5][m], plan), cal.evaluate(values[0.8][m], plan)
        assert null.p_label > 0.05, m
        assert at08.toward_planted and at08.p_label < 0.01, m
        assert m == "causal_ks" or at08.p_value < 0.01, m
    assert cal.evaluate(values[0.8]["causal_ll"], plan).effect == pytest.approx(86.6, abs=0.1)
    ks = cal.evaluate(values[0.8]["causal_ks"], plan)
    assert ks.effect == pytest.approx(0.0859, abs=0.001) and ks.p_value == pytest.approx(0.018, abs=0.002)
    shared = {s: v["causal_shared"] for s, v in values.items()}
    assert cal.evaluate(shared[0.8], plan).effect == pytest.approx(56.4, abs=0.1)
    assert not cal.grows_within_noise(cal.effect_trend(shared, plan))
    groups = cal.control_pairs(list(plan))["order"].to_numpy(object)
    tab = cal.effects_by_item_group(shared, plan, groups, n_permutations=500, n_boot=500).set_index("group")
    first = tab.loc[cal.PRONOUN_FIRST]
    assert first["n"].eq(160).all() and first["grows"].all()
    assert list(first["effect"]) == pytest.approx([50.0, 51.2, 52.5, 59.4, 66.2], abs=0.1)
    assert not tab.loc[cal.PROFESSION_FIRST, "grows"].any()


def test_monotone_allows_only_a_share_that_stays_at_100():
    assert cal._monotone([50.0, 60.0, 80.0, 100.0, 100.0], 100.0)
    assert not cal._monotone([50.0, 60.0, 60.0, 70.0, 80.0], 100.0)  # a tie below the ceiling
    assert not cal._monotone([50.0, 60.0, 100.0, 100.0])  # no ceiling given: ties fail
    assert not cal._monotone([0.1, 0.3, 0.2, 0.4])


def test_robustness_agreement_is_the_thesis_agreement_test():
    from biaskit.metrics.robustness import agreement_test

    rng = np.random.default_rng(3)
    base = _items(0.3)
    keep = rng.random(base.value.size) < 0.7  # the paraphrase keeps 70 % of the preferences
    other = np.where(keep, base.value, -base.value) * rng.uniform(0.5, 2.0, base.value.size)
    mv = cal.MetricValues("thesis_robustness", "agreement", base.target, base.value, other=other)
    assert not mv.directional
    ev = cal.evaluate(mv, DIRS)
    d = np.where([DIRS[t] == "male" for t in mv.target], 1, -1)
    ref = agreement_test(d * mv.value, d * other, pr_rob=0.8)
    assert ev.effect == pytest.approx(100 * ref.details["agreeing"] / mv.value.size)
    assert ev.effect == pytest.approx(100 * keep.mean())
    assert ev.p_value == pytest.approx(ref.p_value) and ev.p_value < 0.01  # 70 % < 80 %: not robust
    assert ev.p_label is None and not ev.toward_planted
    half = mv.subset(np.arange(0, mv.value.size, 2))
    assert half.other is not None and half.other.size == half.value.size
    with pytest.raises(ValueError, match="paraphrased values"):
        cal.evaluate(cal.MetricValues("r", "agreement", base.target, base.value), DIRS)


def test_weighted_ks_statistics_repeat_each_value_by_its_weight():
    rng = np.random.default_rng(12)
    x, y = np.round(rng.normal(size=(4, 25)), 1), np.round(rng.normal(0.4, 1.0, size=(4, 25)), 1)  # ties
    w = rng.integers(0, 4, size=(4, 25)).astype(float)
    w[:, 0] += 1  # no row without weight
    got = cal.ks_statistics(x, y, weights=w)
    want = [
        stats.ks_2samp(np.repeat(a, k.astype(int)), np.repeat(b, k.astype(int))).statistic
        for a, b, k in zip(x, y, w, strict=True)
    ]
    assert got == pytest.approx(want, abs=1e-12)
    assert cal.ks_statistics(x, y, weights=np.ones_like(x)) == pytest.approx(
        cal.ks_statistics(x, y), abs=1e-12
    )
    with pytest.raises(ValueError, match="paired samples"):
        cal.ks_statistics(x, y[:, :20], weights=w)


def _ks_items(shift: float, seed: int) -> cal.MetricValues:
    rng = np.random.default_rng(seed)
    target = np.repeat(np.array(TARGETS, object), 12)
    sign = np.array([1.0 if DIRS[t] == "male" else -1.0 for t in target])
    male = rng.normal(-20, 2, target.size) + sign * shift
    female = rng.normal(-20, 2, target.size)
    return cal.MetricValues("k", "ks", target, male - female, male=male, female=female)


@pytest.mark.parametrize("kind", ["sign", "mean", "groups", "ks"])
def test_weighted_effects_are_the_effect_of_the_repeated_units(kind):
    mv = _ks_items(0.8, 13) if kind == "ks" else _items(0.3, kind=kind, seed=13)
    d = cal_stats._signs(DIRS, mv.target)
    assert cal_stats._effects_for_signs(mv, d[None, :], np.ones((1, d.size)))[0] == pytest.approx(
        cal_stats._effects_for_signs(mv, d[None, :])[0], abs=1e-12
    )
    # integer weights = each unit repeated that many times, and the effect computed as evaluate does
    w = np.random.default_rng(14).integers(0, 3, d.size)
    w[0] = w[-1] = 1  # keep both planted sides
    rep = mv.subset(np.repeat(np.arange(d.size), w))
    want = cal.evaluate(rep, DIRS, n_permutations=10, label_test=False)
    got = cal_stats._effects_for_signs(mv, d[None, :], w[None, :].astype(float))[0]
    assert got == pytest.approx(
        want.effect if kind != "ks" else want.effect * (1 if want.toward_planted else -1)
    )


def _growing(effects: list[float], seed: int = 0, kind: str = "mean") -> dict[float, cal.MetricValues]:
    skews = [0.5, 0.6, 0.7, 0.8, 0.9]
    return {
        s: _items(e, kind=kind, seed=seed + k) for k, (s, e) in enumerate(zip(skews, effects, strict=True))
    }


def test_effect_trend_separates_noise_dips_from_real_falls():
    # steady growth, with a dip at 0.6 far smaller than the noise of 480 items (SE of a mean ~0.05)
    grow = cal.effect_trend(_growing([0.0, -0.01, 0.3, 0.6, 0.9]), DIRS, n_boot=500)
    assert list(zip(grow["from_s"], grow["to_s"], strict=True)) == [
        (0.5, 0.6), (0.6, 0.7), (0.7, 0.8), (0.8, 0.9), (0.5, 0.9),
    ]  # fmt: skip
    assert not grow["falls"].any() and grow["rises"].iloc[-1] and cal.grows_within_noise(grow)
    # every step's interval covers its step; the whole run rises by about 0.9
    assert ((grow["ci_low"] <= grow["step"]) & (grow["step"] <= grow["ci_high"])).all()
    assert grow["step"].iloc[-1] == pytest.approx(0.9, abs=0.15)
    # a real fall (0.6 -> 0.2, eight standard errors) is caught, and growth is then denied
    fall = cal.effect_trend(_growing([0.0, 0.3, 0.6, 0.2, 0.9]), DIRS, n_boot=500)
    assert fall["falls"].iloc[2] and not fall["falls"].iloc[:2].any()  # 0.7 -> 0.8 falls, nothing before
    assert not cal.grows_within_noise(fall)
    # flat: no rise from first to last, so no growth either
    flat = cal.effect_trend(_growing([0.0, 0.0, 0.0, 0.0, 0.0], seed=20), DIRS, n_boot=500)
    assert not flat["rises"].iloc[-1] and not cal.grows_within_noise(flat)


def test_effect_trend_interval_matches_the_cluster_bootstrap_standard_error():
    # a per-profession effect makes the items of one profession alike; the interval must be as wide as
    # the professions' spread says (SE of a mean of 40 profession means), not as narrow as 480 items
    vals = {
        s: _items(e, kind="mean", seed=30 + k, target_sd=1.0)
        for k, (s, e) in enumerate([(0.5, 0.0), (0.9, 0.0)])
    }
    tr = cal.effect_trend(vals, DIRS, n_boot=2000)
    diff = vals[0.9].value - vals[0.5].value
    d = cal_stats._signs(DIRS, vals[0.5].target)
    per_target = np.array([(d * diff)[vals[0.5].target == t].mean() for t in TARGETS])
    se_cluster = per_target.std(ddof=1) / np.sqrt(len(TARGETS))
    width = (tr["ci_high"] - tr["ci_low"]).item()
    assert width == pytest.approx(2 * 1.96 * se_cluster, rel=0.15)
    assert width > 2 * 2 * 1.96 * (d * diff).std(ddof=1) / np.sqrt(diff.size)  # far wider than the naive one


def test_effect_trend_rejects_unpaired_or_undirected_values():
    a, b = _items(0.1, seed=1), _items(0.2, seed=2)
    with pytest.raises(ValueError, match="same items"):
        cal.effect_trend({0.5: a, 0.9: b.subset(np.arange(100))}, DIRS)
    with pytest.raises(ValueError, match="two skews"):
        cal.effect_trend({0.5: a}, DIRS)
    kl = _kl_items(1.0, 3)
    with pytest.raises(ValueError, match="points to no gender"):
        cal.effect_trend({0.5: kl, 0.9: kl}, DIRS)


def test_finds_planted_counts_an_underflowed_p_value_of_zero():
    import pandas as pd

    row = pd.DataFrame({"toward_planted": [True], "p_value": [0.0], "p_label": [None]})
    assert cal.finds_planted(row, "p_value")  # a z test's tail that underflows to 0 is the strongest evidence
    assert not cal.finds_planted(row, "p_label")  # no p-value is no finding
    assert not cal.finds_planted(row.assign(toward_planted=False), "p_value")  # the wrong direction
    assert not cal.finds_planted(row.assign(p_value=0.01), "p_value")  # the bar is strict
    assert not cal.finds_planted(row.iloc[:0], "p_value")


def test_pair_template_order_names_where_the_gendered_word_stands():
    order = cal.pair_template_order()
    assert order == (cal.PROFESSION_FIRST,) * 12 + (cal.PRONOUN_FIRST,) * 4
    assert cal.pair_template_order(cal.SLD_TEMPLATES) == (
        cal.PRONOUN_FIRST, cal.PRONOUN_FIRST, cal.PRONOUN_FIRST, cal.PROFESSION_FIRST,
    )  # fmt: skip
    pairs = cal.control_pairs(["nurse", "pilot"])
    assert list(pairs["order"]) == list(order) * 2
    with pytest.raises(ValueError, match="gendered slot"):
        cal.pair_template_order(["The {t} is here."])


def test_effects_by_item_group_measures_each_group_on_its_own():
    # items 0-5 of each profession carry a growing plan, items 6-11 nothing: pooled, the plan is diluted
    skews, planted = [0.5, 0.7, 0.9], [0.0, 0.4, 0.8]
    groups = np.tile(np.array(["sees"] * 6 + ["blind"] * 6, dtype=object), len(TARGETS))
    values = {}
    for k, (s, e) in enumerate(zip(skews, planted, strict=True)):
        mv = _items(e, kind="sign", seed=50 + k)
        d = cal_stats._signs(DIRS, mv.target)
        blind = groups == "blind"
        mv.value[blind] = np.random.default_rng(60 + k).normal(0, 1, blind.sum())  # no plan at all
        mv.value[~blind] = d[~blind] * e + np.random.default_rng(70 + k).normal(0, 1, (~blind).sum())
        values[s] = mv
    tab = cal.effects_by_item_group(values, DIRS, groups, n_permutations=500, n_boot=500)
    assert list(dict.fromkeys(tab["group"])) == ["sees", "blind"] and len(tab) == 6
    for r in tab.itertuples():
        idx = np.flatnonzero(groups == r.group)
        want = cal.evaluate(values[r.planted].subset(idx), DIRS, n_permutations=500)
        assert (r.n, r.effect, r.p_value, r.p_label) == (240, want.effect, want.p_value, want.p_label)
    sees, blind = tab[tab["group"] == "sees"], tab[tab["group"] == "blind"]
    assert sees["grows"].all() and not blind["grows"].any()
    se = 100 * np.sqrt(0.25 / 240)  # of a share of 240 items under no plan
    assert sees["effect"].iloc[-1] > 50 + 6 * se and (abs(blind["effect"] - 50) < 3 * se).all()
    with pytest.raises(ValueError, match="group labels"):
        cal.effects_by_item_group(values, DIRS, groups[:-1])


def test_effects_by_planted_direction_against_plain_counts():
    """Split by planted direction: a model that leans to *she* everywhere, plus a plan; counts by hand."""
    rng = np.random.default_rng(3)
    targets = [t for t in TARGETS for _ in range(10)]
    tg = np.array(targets, dtype=object)
    plan = np.array([1.0 if DIRS[t] == "male" else -1.0 for t in targets])  # +1: the male version is planted
    value = 0.5 * plan - 0.8 + rng.normal(0, 1, tg.size)  # male minus female: plan, a lean to she, noise
    value[::17] = 0.0  # ties, which a share leaves out
    sign = cal.MetricValues("crows_cp", "sign", tg, value)
    mean = cal.MetricValues("barza_sld", "mean", tg, value.copy())
    by_profession = cal.MetricValues(
        "lpbs", "groups", np.array(TARGETS, dtype=object), rng.normal(0, 1, len(TARGETS)), unit="profession"
    )
    values = {"crows_cp": {0.5: sign, 0.8: sign}, "barza_sld": {0.8: mean}, "lpbs": {0.8: by_profession}}
    tab = cal.effects_by_planted_direction(values, DIRS)
    assert list(zip(tab["metric"], tab["planted"], strict=True)) == [
        ("crows_cp", 0.5),
        ("crows_cp", 0.8),
        ("barza_sld", 0.8),
    ]

    def share(v):  # % of the untied items whose planted version scores higher, in plain Python
        toward = [x for x in v if x != 0]
        return 100.0 * sum(1 for x in toward if x > 0) / len(toward)

    oriented = [x * p for x, p in zip(value, plan, strict=True)]
    male = [x for x, p in zip(oriented, plan, strict=True) if p > 0]
    female = [x for x, p in zip(oriented, plan, strict=True) if p < 0]
    row = tab[(tab["metric"] == "crows_cp") & (tab["planted"] == 0.8)].iloc[0]
    assert row["male_planted"] == pytest.approx(share(male))
    assert row["female_planted"] == pytest.approx(share(female))
    assert row["pooled"] == pytest.approx(share(oriented))
    assert row["toward_female"] == pytest.approx(share([-x for x in value]))
    assert (row["n_male"], row["n_female"], row["n"]) == (len(male), len(female), len(value))
    assert row["female_planted"] > row["pooled"] > row["male_planted"]  # the lean to she splits the sides
    p_female = stats.binomtest(sum(1 for x in female if x > 0), sum(1 for x in female if x != 0)).pvalue
    assert row["p_female"] == pytest.approx(p_female, rel=0.5)  # the own test: z test, about the binomial
    m = tab[tab["metric"] == "barza_sld"].iloc[0]
    assert m["male_planted"] == pytest.approx(np.mean(male)) and m["female_planted"] == pytest.approx(
        np.mean(female)
    )
    assert m["pooled"] == pytest.approx(np.mean(oriented)) and m["toward_female"] == pytest.approx(
        -np.mean(value)
    )
    assert cal.effects_by_planted_direction(values, DIRS, metrics=["barza_sld"])["metric"].tolist() == [
        "barza_sld"
    ]


@pytest.mark.parametrize(("kind", "effect", "per_target"), [("mean", 0.15, 60), ("sign", 0.15, 100)])
def test_extrapolated_sample_size_gives_the_power_that_resampling_measures(kind, effect, per_target):
    # a pool far larger than the answer, so that subsets of that size are nearly independent draws
    mv = _items(effect, per_target=per_target, kind=kind, seed=80)
    n = cal.extrapolated_sample_size(mv, DIRS, alpha=0.05, power=0.8)
    a = cal_stats._signs(DIRS, mv.target) * mv.value
    if kind == "mean":
        # independent check: the normal-approximation formula (z_a/2 + z_b)^2 / d^2, plus ~2 for t
        d = a.mean() / a.std(ddof=1)
        assert n == pytest.approx((stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) ** 2 / d**2, abs=3)
    else:  # (z_a/2 sqrt(p0 q0) + z_b sqrt(p1 q1))^2 / (p1 - p0)^2, the textbook one-sample proportion size
        p1 = (a > 0).mean()
        want = (
            (stats.norm.ppf(0.975) * 0.5 + stats.norm.ppf(0.8) * np.sqrt(p1 * (1 - p1))) / (p1 - 0.5)
        ) ** 2
        assert n == pytest.approx(want, rel=0.03)
    assert 150 < n < 0.25 * mv.value.size
    curve = cal.power_curve(mv, DIRS, [int(n)], alpha=0.05, n_resamples=400, n_permutations=20)
    assert curve["power"].item() == pytest.approx(0.8, abs=0.06)


def test_extrapolated_sample_size_says_never_and_not_available():
    import math

    # an effect that points away from the plan: no number of such items finds it
    assert cal.extrapolated_sample_size(_items(-0.2, kind="sign"), DIRS) == math.inf
    assert cal.extrapolated_sample_size(_items(-0.2, kind="mean"), DIRS) == math.inf
    assert cal.extrapolated_sample_size(_ks_items(0.3, 1), DIRS) is None  # KS: no closed form
    # groups: one value per profession, a two-sample t test of the 20 + 20 profession values
    rng = np.random.default_rng(5)
    val = np.array([(0.8 if DIRS[t] == "male" else 0.0) + rng.normal() for t in TARGETS])
    mv = cal.MetricValues("g", "groups", np.array(TARGETS, object), val, unit="profession")
    n = cal.extrapolated_sample_size(mv, DIRS)
    s_m, s_f = val[[DIRS[t] == "male" for t in TARGETS]], val[[DIRS[t] == "female" for t in TARGETS]]
    d = (s_m.mean() - s_f.mean()) / np.sqrt((s_m.var(ddof=1) + s_f.var(ddof=1)) / 2)
    assert n == pytest.approx(2 * 2 * (stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) ** 2 / d**2, abs=4)


def test_extrapolated_sample_size_of_an_overwhelming_effect_is_the_smallest_test():
    val = np.array([(10.0 if DIRS[t] == "male" else 0.0) + 0.01 * i for i, t in enumerate(TARGETS)])
    mv = cal.MetricValues("g", "groups", np.array(TARGETS, object), val, unit="profession")
    assert cal.extrapolated_sample_size(mv, DIRS) == 4  # two professions per planted gender
    # two items already give a t test (1 degree of freedom) over 80 % power when d is about 20: resampling
    # agrees
    mv = _items(20.0, kind="mean")
    assert cal.extrapolated_sample_size(mv, DIRS) == 2
    assert cal.power_curve(mv, DIRS, [2], n_resamples=400, n_permutations=20)["power"].item() > 0.9
