"""Tests of biaskit.studies.debiasing_study: the ground-truth study of debiasing on the planted controls."""

from __future__ import annotations

import json

import numpy as np
import pytest
from gensim.models import KeyedVectors

from biaskit.studies import calibration as cal
from biaskit.studies import debiasing_study as ds


def unit(kind: str, value, target, effect: float, p: float | None, toward: bool = True) -> ds.UnitMeasure:
    return ds.UnitMeasure("m", kind, np.array(target, object), np.asarray(value, float), effect, p, toward)


DIRS = {"a": "male", "b": "male", "c": "female", "d": "female"}


def test_effect_of_each_kind_by_hand():
    s = np.array([1, 1, -1, -1])
    assert ds.effect_of("groups", np.array([3.0, 1.0, 0.0, 2.0]), s)[0] == pytest.approx(2.0 - 1.0)
    assert ds.effect_of("cluster", np.array([1.0, 0, 0, 0]), s)[0] == pytest.approx(75.0)
    assert ds.effect_of("accuracy", np.array([1.0, 1, 1, 0]), s)[0] == pytest.approx(75.0)
    v = np.array([0.9, 0.7, 0.2, 0.4])
    assert ds.effect_of("correlation", v, s)[0] == pytest.approx(np.corrcoef(v, s)[0, 1])


def test_share_left_point_and_interval():
    t = list(DIRS)
    before = unit("groups", [2.0, 2.0, -2.0, -2.0], t, 4.0, 0.001)
    after = unit("groups", [0.5, 0.5, -0.5, -0.5], t, 1.0, 0.5)
    share, lo, hi = ds.share_left(before, after, DIRS, n_boot=200)
    assert share == pytest.approx(0.25)
    assert lo == pytest.approx(0.25) and hi == pytest.approx(0.25)  # every draw gives the same ratio
    # accuracies are measured from 50 %
    b = unit("accuracy", [1, 1, 1, 1], t, 100.0, 0.01)
    a = unit("accuracy", [1, 1, 1, 0], t, 75.0, 0.3)
    assert ds.share_left(b, a, DIRS, n_boot=100)[0] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="same professions"):
        ds.share_left(b, unit("accuracy", [1, 1, 1, 0], ["d", "c", "b", "a"], 75.0, 0.3), DIRS)


def test_verdict_rules():
    t = list(DIRS)
    found = unit("groups", [1, 1, 0, 0], t, 1.0, 0.001)
    lost = unit("groups", [0, 0, 0, 0], t, 0.0, 0.9)
    rec_yes = {"x": unit("accuracy", [1, 1, 1, 1], t, 100, 0.001), "y": unit("accuracy", [1] * 4, t, 50, 0.9)}
    rec_weak = {"x": unit("accuracy", [1] * 4, t, 70, 0.03), "y": unit("accuracy", [1] * 4, t, 50, 0.9)}
    rec_no = {"x": unit("accuracy", [0] * 4, t, 50, 0.6)}
    assert ds.verdict(0.9, found, found, rec_no) == "intact"
    assert ds.verdict(0.9, found, lost, rec_yes) == "hidden"
    assert ds.verdict(0.9, found, lost, rec_weak) == "removed"  # 0.03 > 0.05 / 2 (Bonferroni)
    assert ds.verdict(0.9, found, lost, rec_no) == "removed"
    assert ds.verdict(0.9, lost, lost, rec_yes) == "not found before"
    assert ds.verdict(0.5, lost, found, rec_no) == "created"
    assert ds.verdict(0.5, lost, lost, rec_yes) == "none created"
    weak = unit("groups", [1, 1, 0, 0], t, 1.0, 0.03)
    assert ds.verdict(0.5, lost, weak, rec_no) == "created"
    assert ds.verdict(0.5, lost, weak, rec_no, n_measures=2) == "none created"
    wrong_way = unit("groups", [0, 0, 1, 1], t, -1.0, 0.001, toward=False)
    assert ds.verdict(0.9, found, wrong_way, rec_no) == "removed"


# --------------------------------------------------------------------------- against the balanced control
def test_compare_with_control_exact_cases():
    """A shift that every draw sees whole gives a degenerate interval at the shift; a copy of the control
    gives [0, 0] (not above); the point difference is the two effects' difference."""
    t = list(DIRS)
    s = np.array([1.0, 1, -1, -1])
    ctrl = unit("mean", [0.3, -0.2, 0.1, 0.4], t, float(np.mean(s * [0.3, -0.2, 0.1, 0.4])), 0.5)
    shifted_v = (
        np.array([0.3, -0.2, 0.1, 0.4]) + 0.25 * s
    )  # every unit 0.25 further toward its planted gender
    shifted = unit("mean", shifted_v, t, float(np.mean(s * shifted_v)), 0.01)
    c = ds.compare_with_control(shifted, ctrl, DIRS, n_boot=300)
    assert (
        c.difference == pytest.approx(0.25) and c.low == pytest.approx(0.25) and c.high == pytest.approx(0.25)
    )
    assert c.above
    same = ds.compare_with_control(ctrl, ctrl, DIRS, n_boot=300)
    assert (same.difference, same.low, same.high) == (0.0, 0.0, 0.0) and not same.above
    with pytest.raises(ValueError, match="different professions"):
        ds.compare_with_control(shifted, unit("mean", [0.1] * 3, ["a", "b", "c"], 0.0, 0.5), DIRS)


def test_compare_with_control_interval_against_a_naive_bootstrap():
    """The interval of the difference equals a naive loop over the same bootstrap draws (professions
    resampled within gender, the same draw for both models), computed here without effect_of."""
    rng = np.random.default_rng(5)
    dirs = {f"p{i}": ("male" if i % 2 else "female") for i in range(12)}
    t = [p for p in dirs for _ in range(3)]  # three units per profession
    sg = np.array([1.0 if dirs[p] == "male" else -1.0 for p in t])
    va, vc = rng.normal(size=36) + 0.3 * sg, rng.normal(size=36)
    a = unit("mean", va, t, float(np.mean(sg * va)), 0.1)
    c = unit("mean", vc, t, float(np.mean(sg * vc)), 0.5)
    res = ds.compare_with_control(a, c, dirs, n_boot=400, confidence=0.9, random_state=3)
    counts = ds.bootstrap_counts(list(dirs), dirs, 400, random_state=3)
    diffs = []
    for row in counts:
        units = [i for i, p in enumerate(t) for _ in range(int(row[list(dirs).index(p)]))]
        diffs.append(np.mean(sg[units] * va[units]) - np.mean(sg[units] * vc[units]))
    lo, hi = np.quantile(diffs, [0.05, 0.95])
    assert res.low == pytest.approx(lo) and res.high == pytest.approx(hi)
    assert res.difference == pytest.approx(np.mean(sg * va) - np.mean(sg * vc))
    # every draw resamples within gender: each draw holds 6 male and 6 female professions
    males = [i for i, p in enumerate(dirs) if dirs[p] == "male"]
    assert (counts[:, males].sum(1) == 6).all() and (counts.sum(1) == 12).all()


def cmp(lo: float, hi: float) -> ds.ControlComparison:
    return ds.ControlComparison((lo + hi) / 2, lo, hi, 0.95)


def test_verdict_against_control_rules():
    up, level, down = cmp(0.1, 0.5), cmp(-0.2, 0.3), cmp(-0.5, -0.1)
    rec_up = {"gg_classifier": up, "gg_neighbours": level}
    rec_level = {"gg_classifier": level, "gg_neighbours": down}
    assert ds.verdict_against_control(True, {"weat": up}, rec_level) == ("intact", "weat")
    assert ds.verdict_against_control(True, {"weat": level}, rec_up) == ("hidden", "gg_classifier")
    v, basis = ds.verdict_against_control(True, {"weat": level}, rec_level)
    assert v == "removed" and basis == "weat, gg_classifier, gg_neighbours"
    assert ds.verdict_against_control(True, {"weat": down}, rec_level)[0] == "removed"  # below the control
    assert ds.verdict_against_control(False, {"weat": up}, rec_up)[0] == "not found before"
    # the robust companion decides when the measure's own statistic is blind
    assert ds.verdict_against_control(True, {"direct_bias": level, "direct_bias_pairs": up}, rec_up) == (
        "intact",
        "direct_bias_pairs",
    )
    nan = ds.ControlComparison(0.1, float("nan"), float("nan"), 0.95)
    assert not nan.above


def test_a_global_shift_does_not_pass_for_removal():
    """A model that prefers 'she' on every item by a wide margin: the share of items toward the planted gender
    falls to the control's 50 %, but the mean paired difference still finds the plan, so the verdict is
    intact on the magnitude statistic, and the measure's own verdict says hidden."""
    rng = np.random.default_rng(0)
    dirs = {f"p{i}": ("male" if i < 20 else "female") for i in range(40)}
    t = [p for p in dirs for _ in range(6)]
    sg = np.array([1.0 if dirs[p] == "male" else -1.0 for p in t])
    noise = 0.05 * rng.normal(size=sg.size)
    planted_v, control_v = -5 + 0.5 * sg + noise, -5 + noise  # a shift of -5 (toward she) on every item
    cfg = ds.StaticStudyConfig(n_boot=300)

    def measures(v: np.ndarray, recovered: bool) -> dict[str, ds.UnitMeasure]:
        sign = ds.UnitMeasure("causal_next_word", "sign", np.array(t, object), v,
                              float(ds.effect_of("sign", v, sg)[0]), 0.5, True)  # fmt: skip
        mean = ds.UnitMeasure("causal_next_word_log_ratio", "mean", np.array(t, object), v,
                              float(ds.effect_of("mean", v, sg)[0]), 0.001, True)  # fmt: skip
        acc = np.ones(40) if recovered else np.tile([1.0, 0.0], 20)
        rec = ds.UnitMeasure("gg_classifier", "accuracy", np.array(list(dirs), object), acc, 100 * acc.mean(),
                             0.001, True, 50.0)  # fmt: skip
        return {"causal_next_word": sign, "causal_next_word_log_ratio": mean, "gg_classifier": rec}

    before_planted, before_ctrl = measures(-0 + 1.0 * sg, True), measures(noise, False)
    after_planted, after_ctrl = measures(planted_v, True), measures(control_v, False)
    assert after_planted["causal_next_word"].effect == pytest.approx(50.0)  # the sign count is blind
    rows = ds.compare_rows(
        "m",
        0.8,
        before_planted,
        after_planted,
        ["causal_next_word"],
        dirs,
        cfg,
        model="causal LM",
        control_before=before_ctrl,
        control_after=after_ctrl,
    )
    r = {x["measure"]: x for x in rows}
    assert r["causal_next_word"]["verdict"] == "intact"
    assert r["causal_next_word"]["verdict_basis"] == "causal_next_word_log_ratio"
    assert r["causal_next_word"]["own_verdict"] == "hidden"
    assert r["causal_next_word_log_ratio"]["family"] == "robust"
    assert r["causal_next_word_log_ratio"]["companion_of"] == "causal_next_word"
    assert r["causal_next_word_log_ratio"]["vs_control"] == pytest.approx(0.5, abs=0.02)
    assert r["gg_classifier"]["verdict"] == ds.ABOVE
    with pytest.raises(ValueError, match="balanced control"):
        ds.compare_rows("m", 0.8, before_planted, after_planted, ["causal_next_word"], dirs, cfg, model="x")


# --------------------------------------------------------------------------- ground truth for the rule
GT_DIM = 40


def synthetic_control(
    strength: float, *, seed: int = 0, n_pool: int = 300
) -> tuple[KeyedVectors, dict[str, str]]:
    """Word vectors with a planted plan of known strength, built like the controls: every skew shares the
    professions' and pool words' base vectors (the base text), and the plan adds ``strength`` x label along
    a surface axis (e0, the gender direction the measures read: he/she words sit at +-2 on it) and a
    second, hidden axis (e1), which the pool words share with their original lean (so a profession's
    neighbours lean its way).  A little noise of its own per skew (``seed``)."""
    from biaskit.data.wordlists import load_bolukbasi_wordlists

    base = np.random.default_rng(1234)  # the shared base text
    own = np.random.default_rng(seed)
    wl = load_bolukbasi_wordlists()
    words, vecs = [], []
    g, h = np.eye(GT_DIM)[0], np.eye(GT_DIM)[1]

    def noise(rng: np.random.Generator) -> np.ndarray:
        v = rng.normal(size=GT_DIM)
        v[:2] = 0
        return v

    males, females = (
        [w.lower() for w in wl["definitional_male"]],
        [w.lower() for w in wl["definitional_female"]],
    )
    pairs = [*zip(males, females, strict=True), *zip(cal.MALE_WORDS, cal.FEMALE_WORDS, strict=True)]
    for m, f in dict.fromkeys(pairs):
        b = noise(base)
        for w, sgn in ((m, 1), (f, -1)):
            if w not in words:
                words.append(w)
                vecs.append(b + 2.5 * sgn * g + 0.1 * noise(own))
    dirs = {f"prof{i:02d}": ("male" if i % 2 else "female") for i in range(40)}
    for p, side in dirs.items():
        sgn = 1 if side == "male" else -1
        words.append(p)
        vecs.append(noise(base) + strength * sgn * (g + h) + 0.1 * noise(own))
    for i in range(n_pool):
        lean = base.choice([-1.0, 1.0])
        words.append(f"pool{i:03d}")
        vecs.append(noise(base) + lean * 1.5 * (g + h) + 0.1 * noise(own))
    kv = KeyedVectors(GT_DIM)
    kv.add_vectors(words, np.array(vecs, dtype=np.float32))
    return kv, dirs


def _project_out(kv: KeyedVectors, axes: list[int], keep: set[str]) -> KeyedVectors:
    X = np.array(kv.vectors, dtype=np.float64)
    rows = [i for i, w in enumerate(kv.index_to_key) if w not in keep]
    for a in axes:
        X[rows, a] = 0.0
    out = KeyedVectors(kv.vector_size)
    out.add_vectors(list(kv.index_to_key), X.astype(np.float32))
    return out


def test_verdicts_on_synthetic_ground_truth():
    """Three methods whose effect we know, on controls whose plan we know:

    * ``untouched`` leaves the plan: intact;
    * ``surface`` removes the gender direction the measures read (hard debiasing's neutralise step) but
      not the second axis that carries the plan into the neighbourhoods: hidden, with the recovery tests
      above the control;
    * ``removed`` projects out both axes from every word that is not gendered, so the professions sit
      among their neighbours as on the balanced control: removed.

    On the balanced control no verdict is ``hidden``, and a second control with nothing planted (its own
    noise) is ``not found before`` for every method: a test that fires on both controls is never evidence."""
    gendered = set(cal.MALE_WORDS) | set(cal.FEMALE_WORDS) | ds.measured_gender_words()
    vec, dirs = {}, {}
    for s, strength, seed in ((0.5, 0.0, 1), (0.7, 0.0, 2), (0.9, 2.5, 3)):  # s = 0.7: nothing planted either
        vec[s], dirs = synthetic_control(strength, seed=seed)
    debiasers = {"untouched": lambda kv: kv,
                 "surface": lambda kv: _project_out(kv, [0], gendered),
                 "removed": lambda kv: _project_out(kv, [0, 1], gendered)}  # fmt: skip
    cfg = ds.StaticStudyConfig(n_permutations=200, n_boot=300, neighbour_k=20)
    res = ds.run_static_study(vec, dirs, cfg, costs=False, debiasers=debiasers)
    e = res.effects.set_index(["method", "measure", "planted"])
    for m in ("weat", "direct_bias"):
        assert e.loc[("untouched", m, 0.9), "verdict"] == "intact"
        assert e.loc[("surface", m, 0.9), "verdict"] == "hidden"
        assert e.loc[("removed", m, 0.9), "verdict"] == "removed"
        assert e.loc[("surface", m, 0.9), "before_above_control"]
    for test in ("gg_classifier", "linear_probe", "gg_neighbours"):
        assert e.loc[("surface", test, 0.9), "verdict"] == ds.ABOVE
        assert e.loc[("removed", test, 0.9), "verdict"] == ds.AT_CONTROL
    # the surface methods' DirectBias and WEAT fall to the control's level
    assert abs(e.loc[("surface", "direct_bias", 0.9), "vs_control"]) < 0.05
    cal_rows = res.effects[res.effects["family"] != "recovery"]
    assert "hidden" not in set(cal_rows[cal_rows["planted"] == 0.5]["verdict"])
    assert set(cal_rows[cal_rows["planted"] == 0.5]["verdict"]) <= {"none created", "created"}
    assert set(cal_rows[cal_rows["planted"] == 0.7]["verdict"]) == {"not found before"}
    mv = res.method_verdicts().set_index(["method", "planted"])
    assert (
        mv.loc[("surface", 0.9), "verdict"] == "hidden" and mv.loc[("removed", 0.9), "verdict"] == "removed"
    )
    assert mv.loc[("untouched", 0.9), "verdict"] == "intact"
    json.dumps(res.to_json())
    with pytest.raises(ValueError, match="balanced control"):
        ds.run_static_study({0.9: vec[0.9]}, dirs, cfg, costs=False, debiasers=debiasers)


@pytest.mark.slow
def test_static_study_on_two_controls():
    """The word-vector controls s = 0.5 and 0.9: hard debias makes WEAT and DirectBias fall to the balanced
    control's level at s = 0.9 while the classifiers still read the plan above the control (hidden); INLP is
    fitted on the outside word list and stops when its held-out classifier is at chance; nothing is
    created."""
    from biaskit.embeddings.vectors import load_trained_vectors

    vec = {s: load_trained_vectors("en-planted-w2v", s=s) for s in (0.5, 0.9)}
    cfg = ds.StaticStudyConfig(
        methods=("hard_debias", "inlp"), inlp_iterations=10, n_permutations=300, n_boot=300
    )
    res = ds.run_static_study(vec, config=cfg)
    e = res.effects.set_index(["method", "measure", "planted"])
    assert len(res.effects) == 2 * 2 * (2 + 1 + len(ds.RECOVERY_TESTS))  # 2 skews x 2 methods x 7 rows
    hd_weat = e.loc[("hard_debias", "weat", 0.9)]
    assert hd_weat["p_before"] < 0.01 and hd_weat["before"] > 0.1
    assert abs(hd_weat["share_left"]) < 0.1 and hd_weat["ci_high"] < 0.2
    assert e.loc[("hard_debias", "direct_bias", 0.9)]["after"] == pytest.approx(0.0, abs=0.01)
    assert not hd_weat["above_control"] and hd_weat["verdict"] == "hidden"
    assert e.loc[("hard_debias", "gg_classifier", 0.9)]["verdict"] == ds.ABOVE
    assert "hard_debias" in res.hiding_methods()
    assert "hard_debias" not in set(res.created_bias()["method"])
    assert set(e.xs(0.5, level="planted")["verdict"]) <= {"none created", "created", ds.IS_CONTROL}
    assert set(res.costs["method"]) == {"original", "hard_debias", "inlp"} and len(res.costs) == 6
    f = res.fitted["inlp"][0.9]
    assert 1 <= f["rank_removed"] < 10 and "at chance" in f["stopped"]
    assert f["last_accuracy"] <= f["chance"] and f["fit_words"]["male"] > 30 and f["probe_n"] > 20
    assert res.fitted["hard_debias"][0.9]["weat_words_not_equalised"] == ["him", "husband", "hers", "wife"]
    json.dumps(res.to_json())
    assert res.verdicts().loc[("hard_debias", "weat"), 0.9] == "hidden"


def test_inlp_word_sets_leave_out_the_plan_and_the_measures():
    from biaskit.embeddings.vectors import load_trained_vectors

    kv = load_trained_vectors("en-planted-w2v", s=0.8)
    dirs = ds.control_directions()
    sets = ds.inlp_word_sets(kv, list(dirs))
    words = set(sets["male"]) | set(sets["female"])
    assert not words & set(dirs) and not words & ds.measured_gender_words()
    assert not set(sets["male"]) & set(sets["female"])
    assert {"he", "she", "man", "woman", "him", "wife"}.isdisjoint(words)
    assert {"king", "queen", "uncle", "aunt"} <= words
    assert len(sets["male"]) > 40 and len(sets["female"]) > 40


def test_effect_of_sign_and_mean_with_bootstrap_weights():
    s = np.array([1, 1, -1, -1])
    v = np.array([0.3, -0.1, -0.2, 0.0])  # toward, away, toward, tie
    assert ds.effect_of("sign", v, s)[0] == pytest.approx(100 * 2 / 3)
    assert ds.effect_of("mean", v, s)[0] == pytest.approx((0.3 - 0.1 + 0.2 + 0.0) / 4)
    W = np.array([[2, 0, 1, 1], [1, 1, 1, 1]])  # a draw with unit 0 twice and unit 1 left out
    np.testing.assert_allclose(ds.effect_of("sign", v, s, W), [100.0, 100 * 2 / 3])
    np.testing.assert_allclose(ds.effect_of("mean", v, s, W), [(0.6 + 0.2) / 4, 0.1])


@pytest.mark.slow
def test_contextual_study_on_one_masked_control():
    """SentenceDebias on the masked controls s = 0.5 and 0.8: the template effect shrinks but stays above the
    balanced control (intact), the classifier still reads the planted gender from the professions'
    representations, and the StereoSet-style blanks get their log-probability companion."""
    cfg = ds.ContextualStudyConfig(
        methods=("sentence_debias",),
        measures=("barza_tbe", "stereoset_ss"),
        n_pool=80,
        n_fit_pairs=200,
        n_permutations=200,
        n_boot=200,
        n_held_out=20,
    )
    res = ds.run_contextual_study((0.5, 0.8), cfg)
    e = res.effects[res.effects["planted"] == 0.8].set_index("measure")
    assert set(e.index) == {"barza_tbe", "stereoset_ss", "stereoset_log_ratio", *ds.RECOVERY_TESTS}
    tbe = e.loc["barza_tbe"]
    assert tbe["before"] > 0.3 and tbe["p_before"] < 0.01
    assert 0 < tbe["share_left"] < 0.6 and tbe["verdict"] == "intact" and tbe["above_control"]
    assert e.loc["gg_classifier", "after"] > 80 and e.loc["gg_classifier", "verdict"] == ds.ABOVE
    assert e.loc["stereoset_log_ratio", "family"] == "robust" and e.loc["stereoset_log_ratio", "before"] > 0
    assert len(res.costs) == 4 and np.isfinite(res.costs["held_out_perplexity"]).all()
    with pytest.raises(ValueError, match=r"include s = 0\.5"):
        ds.run_contextual_study((0.8,), cfg)


# --------------------------------------------------------------------------- the notebook's sentences
def _row(model, method, measure, family, s, **kw):
    base = {
        "model": model,
        "method": method,
        "measure": measure,
        "family": family,
        "planted": s,
        "no_effect": 0.0,
        "before": 0.0,
        "after": 0.0,
        "chance": 0.0,
        "p_before": 0.5,
        "p_after": 0.5,
        "share_left": None,
        "ci_low": None,
        "ci_high": None,
        "control_after": None,
        "vs_control": None,
        "vs_control_low": None,
        "vs_control_high": None,
        "vs_control_confidence": 0.95,
        "above_control": False,
        "companion_of": None,
        "verdict": None,
        "verdict_basis": None,
        "own_verdict": None,
        "verdict_vs_chance": None,
        "toward_female_after": None,
    }
    base.update(kw)
    return base


def test_notebook_sentences_follow_their_numbers():
    from biaskit.report import debiasing_findings as f

    w = "word2vec"
    rows = [
        # the balanced control: the neighbour test fires against chance, the clustering does not
        _row(w, "hard_debias", "gg_neighbours", "recovery", 0.5, before=0.2853, p_before=0.04),
        _row(w, "hard_debias", "gg_clustering", "recovery", 0.5, before=62.5, p_before=0.19, no_effect=50.0),
        _row(w, "hard_debias", "weat", "calibrated", 0.5, after=0.0042, verdict="none created"),
        _row(w, "hard_debias", "direct_bias", "calibrated", 0.5, after=0.0004, verdict="none created"),
        # s = 0.8: the neighbour test fired against chance, not against the control
        _row(w, "hard_debias", "weat", "calibrated", 0.8, after=0.0042, verdict="removed",
             verdict_vs_chance="hidden", share_left=0.02, ci_low=-0.01, ci_high=0.05, vs_control=0.0,
             vs_control_low=-0.003, vs_control_high=0.003),
        _row(w, "hard_debias", "direct_bias", "calibrated", 0.8, after=0.0004, verdict="removed",
             verdict_vs_chance="hidden"),
        _row(w, "hard_debias", "gg_neighbours", "recovery", 0.8, after=0.4886, p_after=0.002,
             vs_control=0.2014, vs_control_low=-0.1471, vs_control_high=0.6056, vs_control_confidence=0.9875,
             verdict="at the control's level", verdict_vs_chance="recovers the plan"),
        # GLPP: DirectBias's PCA direction is blind, the mean pair difference is not
        _row(w, "glpp", "direct_bias", "calibrated", 0.8, after=-0.0616, p_after=0.18, vs_control=-0.0543,
             vs_control_low=-0.1514, vs_control_high=0.04, verdict="intact", own_verdict="hidden",
             verdict_basis="direct_bias_pairs", verdict_vs_chance="hidden"),
        _row(w, "glpp", "direct_bias_pairs", "robust", 0.8, after=0.2763, p_after=0.0009, vs_control=0.2478,
             vs_control_low=0.1449, vs_control_high=0.3496, above_control=True, companion_of="direct_bias",
             verdict="intact"),
        _row(w, "glpp", "gg_classifier", "recovery", 0.8, after=85.0, no_effect=50.0, vs_control=35.0,
             vs_control_low=15.0, vs_control_high=56.9, vs_control_confidence=0.9875, above_control=True,
             verdict="above the control"),
    ]  # fmt: skip
    fitted = {"glpp": {"0.8": {"definitional_pc1_after": 0.29}}, "hard_debias": {"0.8": {
        "explained_variance_pc1": 0.63, "weat_words_not_equalised": ["him", "wife"]}}}  # fmt: skip
    text = f.balanced_control_recovery(rows, alpha=0.05)
    assert (
        "on the word vectors, the neighbour test r = 0.285 (p = 0.040)" in text and "clustering" not in text
    )
    changes = f.rule_changes(rows)
    assert (
        "hard debiasing on the word vectors at s = 0.8 (WEAT and DirectBias (PCA direction)): hidden against "
        "chance, removed against the control (the neighbour test at s = 0.8 is +0.201 [-0.147, 0.606] "
        "(98.75 % interval) from the control)"
    ) in changes
    assert (
        "GLPP on the word vectors at s = 0.8 (DirectBias (PCA direction)): hidden against chance, "
        "intact against the control (DirectBias along the mean pair difference at s = 0.8 is +0.248 "
        "[0.145, 0.350] (95 % interval) from the control)"
    ) in changes
    comp = f.companion_disagreements(rows, fitted)
    assert (
        "GLPP on the word vectors, s = 0.8: DirectBias (PCA direction) is -0.062 (p = 0.180 against chance"
        in comp
    )
    assert "explains 29% of their variance (63% in the original vectors)" in comp
    assert comp.endswith("Verdict: intact, on DirectBias along the mean pair difference.")
    constr = f.hard_debias_construction(rows, fitted)
    assert "its words *him* and *wife* are not among the equalised pairs" in constr
    assert "WEAT after hard debiasing is 0.0042 at s = 0.8 (0.0042 on the balanced control)" in constr
    lines = f.method_verdicts(rows)
    assert lines[0] == "Hard debiasing (word vectors): removed at s = 0.8."
    assert lines[1].startswith("GLPP (word vectors): intact at s = 0.8 (s = 0.8: 1 of 1 measure above")
    head = f.debiasing_headline(rows)
    assert head.startswith(
        "On word vectors with a planted gender bias (s = 0.8), hard debiasing brings WEAT to the "
        "balanced control's level (2% of the planted WEAT effect left, 95 % interval -1% to 5%"
    )
    assert "verdict removed" in head and "no method only hides it" in head
    # a method hidden at the top skew: the recovery test above the control is named with its numbers
    rows[4].update(verdict="hidden")
    rows.append(
        _row(
            w,
            "hard_debias",
            "gg_classifier",
            "recovery",
            0.8,
            after=90.0,
            no_effect=50.0,
            vs_control=32.5,
            vs_control_low=15.0,
            vs_control_high=49.4,
            vs_control_confidence=0.9875,
            above_control=True,
        )
    )
    head = f.debiasing_headline(rows)
    assert (
        "yet the RBF-SVM classifier still recovers the planted gender of 90 % of the professions, "
        "+32.5 points [15.0, 49.4] (98.75 % interval) above the balanced control: "
        "at this skew it hides the bias"
    ) in head
    assert "hard debiasing on the word vectors hide it from at least one measure" in head


def test_inlp_sentence_follows_its_numbers():
    from biaskit.report import debiasing_findings as f

    def info(rank, last, stopped, probe, before):
        return {"rank_removed": rank, "last_accuracy": last, "chance": 0.5, "stopped": stopped,
                "fit_words": {"male": 52, "female": 50}, "held_out_words": {"male": 17, "female": 17},
                "probe_accuracy": probe, "probe_accuracy_before": before}  # fmt: skip

    fitted = {"inlp": {"0.5": info(1, 0.5, "iteration 2 of 20: at chance", 0.53, 0.76),
                       "0.9": info(2, 0.45, "iteration 3 of 20: at chance", 0.46, 0.80)}}  # fmt: skip
    probe = _row(
        "word2vec",
        "inlp",
        "linear_probe",
        "recovery",
        0.9,
        after=72.5,
        p_after=0.0032,
        no_effect=50.0,
        control_after=55.0,
        vs_control=17.5,
        vs_control_low=-12.5,
        vs_control_high=45.0,
        vs_control_confidence=0.9875,
        above_control=False,
    )
    lm = {
        "masked LM: inlp_sentence": {
            "0.5": {
                "rank_removed": 0,
                "stopped": "at chance",
                "probe_accuracy": 0.46,
                "probe_accuracy_before": 0.46,
            },
            "0.8": {
                "rank_removed": 10,
                "stopped": None,
                "probe_accuracy": 0.585,
                "probe_accuracy_before": 0.68,
            },
        }
    }
    text = f.inlp_fit([probe], fitted, iterations=20, lm_fitted=lm, lm_iterations=10)
    assert text.startswith("INLP on the word vectors was fitted on 102 gendered words and first names")
    assert "(the words the measures read and the professions left out; 34 more held out)" in text
    assert "removed 1 to 2 of the 20 directions it was allowed, stopping at s = 0.5 and 0.9" in text
    assert "(accuracy 0.45 to 0.50, larger class 0.50)" in text
    assert "reads the held-out gendered words at 0.46 to 0.53 (0.76 to 0.80 before INLP)" in text
    assert (
        "a linear probe reads the planted gender at s = 0.9 for 72.5 % of them (p = 0.003 against chance), "
        "not above the balanced control's 55.0 % (+17.5 points [-12.5, 45.0] (98.75 % interval))"
    ) in text
    assert "cannot be told from the balanced control" in text
    assert (
        "INLP on the sentence representation removed 0 to 10 of 10 directions (stopping at chance on the "
        "held-out sentences for the masked model at s = 0.5); a fresh logistic regression then reads the "
        "gender of the held-out sentences at 0.46 to 0.58 (0.46 to 0.68 before)."
    ) in text
    probe.update(above_control=True, vs_control_low=2.5)
    assert "not every direction a linear classifier can use" in f.inlp_fit([probe], fitted, iterations=20)
