"""Tests of biaskit.studies.debiasing_study: the ground-truth study of debiasing on the planted controls."""

from __future__ import annotations

import json

import numpy as np
import pytest

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


@pytest.mark.slow
def test_static_study_on_two_controls():
    """Hard debias on the planted controls: WEAT and DirectBias fall to almost nothing at s = 0.9 while
    the recovery tests still find the plan (the method hides the bias), and on the balanced control
    it creates no bias."""
    from biaskit.embeddings.vectors import load_trained_vectors

    vec = {s: load_trained_vectors("en-planted-w2v", s=s) for s in (0.5, 0.9)}
    cfg = ds.StaticStudyConfig(methods=("hard_debias", "inlp"), inlp_iterations=10, n_permutations=300, n_boot=300)
    res = ds.run_static_study(vec, config=cfg)
    e = res.effects.set_index(["method", "measure", "planted"])
    assert len(res.effects) == 2 * 2 * 5
    hd_weat = e.loc[("hard_debias", "weat", 0.9)]
    assert hd_weat["p_before"] < 0.01 and hd_weat["before"] > 0.1
    assert abs(hd_weat["share_left"]) < 0.1 and hd_weat["ci_high"] < 0.2
    assert e.loc[("hard_debias", "direct_bias", 0.9)]["after"] == pytest.approx(0.0, abs=0.01)
    assert hd_weat["verdict"] == "hidden"
    assert "hard_debias" in res.hiding_methods()
    assert e.loc[("hard_debias", "gg_classifier", 0.9)]["verdict"] == "recovers the plan"
    # hard debias cannot create a bias: the professions have no projection left on the direction
    assert "hard_debias" not in set(res.created_bias()["method"])
    assert set(e.xs(0.5, level="planted")["verdict"]) <= {"none created", "created", "chance level",
                                                           "recovers the plan"}  # fmt: skip
    # costs for the original and each method at each skew
    assert set(res.costs["method"]) == {"original", "hard_debias", "inlp"} and len(res.costs) == 6
    assert res.fitted["inlp"][0.9]["rank_removed"] == 10
    json.dumps(res.to_json())
    v = res.verdicts()
    assert v.loc[("hard_debias", "weat"), 0.9] == "hidden"


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
    """SentenceDebias on the s = 0.8 masked control: the template effect shrinks but stays (intact),
    and a classifier still reads the planted gender from the professions' representations."""
    cfg = ds.ContextualStudyConfig(methods=("sentence_debias",), measures=("barza_tbe",), n_pool=80,
                                   n_fit_pairs=200, n_permutations=200, n_boot=200, n_held_out=20)  # fmt: skip
    res = ds.run_contextual_study((0.8,), cfg)
    e = res.effects.set_index("measure")
    assert set(e.index) == {"barza_tbe", "gg_clustering", "gg_classifier", "gg_neighbours"}
    tbe = e.loc["barza_tbe"]
    assert tbe["before"] > 0.3 and tbe["p_before"] < 0.01
    assert 0 < tbe["share_left"] < 0.6 and tbe["verdict"] in ("intact", "hidden", "removed")
    assert e.loc["gg_classifier", "after"] > 80 and e.loc["gg_classifier", "verdict"] == "recovers the plan"
    assert len(res.costs) == 2 and np.isfinite(res.costs["held_out_perplexity"]).all()
