"""The metric-trust study (biaskit.studies.metric_trust): its statistics against independent implementations
and hand-computed cases, toy measures whose answers are known, the seeded recipes, resuming, and the
committed record."""

from __future__ import annotations

import itertools
import json
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from biaskit.core.registry import MetricValues
from biaskit.lm.catalogue import CONTROL_SKEWS, CONTROL_TARGETS
from biaskit.studies import metric_trust as mt
from biaskit.training import recipes as tm

RECORD = mt.default_record_dir()


# ----------------------------------------------------------------------------- independent references
def naive_kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b by counting every pair (Kendall 1945): (C - D) / sqrt((n0 - n1)(n0 - n2))."""
    c = d = tx = ty = 0
    n = len(x)
    for i, j in itertools.combinations(range(n), 2):
        sx, sy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
        if sx == 0 and sy == 0:
            continue
        if sx == 0:
            tx += 1
        elif sy == 0:
            ty += 1
        elif sx == sy:
            c += 1
        else:
            d += 1
    return (c - d) / math.sqrt((c + d + tx) * (c + d + ty))


def anova_icc_2_1(df: pd.DataFrame) -> float:
    """ICC(2,1) from statsmodels' two-way ANOVA table (mean squares of s, seed and the residual)."""
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    a = anova_lm(smf.ols("effect ~ C(s) + C(seed)", data=df).fit())
    msr, msc, mse = a.loc["C(s)", "mean_sq"], a.loc["C(seed)", "mean_sq"], a.loc["Residual", "mean_sq"]
    n, k = df["s"].nunique(), df["seed"].nunique()
    return float((msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n))


def pingouin_icc_2_1(df: pd.DataFrame) -> float:
    """pingouin's ICC(A,1) (= ICC(2,1)) of the strengths x seeds table."""
    import pingouin as pg

    res = pg.intraclass_corr(data=df, targets="s", raters="seed", ratings="effect")
    return float(res.set_index("Type").loc["ICC(A,1)", "ICC"])


# ----------------------------------------------------------------------------- the formulas
def _synthetic_tables():
    rng = np.random.default_rng(3)
    for n, k, signal in ((5, 5, 1.0), (4, 7, 0.2), (6, 3, 3.0)):
        y = rng.normal(size=(n, 1)) * signal + rng.normal(size=(1, k)) * 0.3 + rng.normal(size=(n, k))
        yield y, pd.DataFrame([{"s": i, "seed": j, "effect": y[i, j]} for i in range(n) for j in range(k)])


def test_icc_equals_an_anova_on_synthetic_tables():
    for y, df in _synthetic_tables():
        assert mt.icc(y, "2,1") == pytest.approx(anova_icc_2_1(df), abs=1e-12)


def test_icc_equals_pingouin_on_synthetic_tables():
    pg = pytest.importorskip("pingouin")  # in the dev extra (pip install -e '.[dev]')
    for y, df in _synthetic_tables():
        res = pg.intraclass_corr(data=df, targets="s", raters="seed", ratings="effect").set_index("Type")
        assert mt.icc(y, "2,1") == pytest.approx(float(res.loc["ICC(A,1)", "ICC"]), abs=1e-12)
        assert mt.icc(y, "3,1") == pytest.approx(float(res.loc["ICC(C,1)", "ICC"]), abs=1e-12)


def test_icc_refuses_what_it_cannot_compute():
    with pytest.raises(ValueError, match="at least 2 subjects and 2 raters"):
        mt.icc(np.ones((1, 4)))
    with pytest.raises(ValueError, match="complete table"):
        mt.icc(np.array([[1.0, np.nan], [2.0, 3.0]]))
    with pytest.raises(ValueError, match="0 / 0"):
        mt.icc(np.full((3, 3), 2.0))
    # subjects differ, raters agree exactly: perfect reliability
    assert mt.icc(np.array([[1.0, 1.0], [2.0, 2.0], [4.0, 4.0]])) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("x", "shown"),
    [(0.0000411, "0.0000411"), (2.1, "2.10"), (-0.5, "-0.500"), (123.4, "123"), (98765.4, "98765"),
     (0.0, "0"), (None, "—"), (float("nan"), "—")],
)  # fmt: skip
def test_plain_number_gives_three_significant_digits_without_e_notation(x, shown):
    assert mt.plain_number(x) == shown


def test_split_half_formula_against_a_hand_computed_case():
    # four models; half A = 1, 2, 3, 4 and half B = 1, 3, 2, 4: deviations (-1.5, -0.5, 0.5, 1.5) and
    # (-1.5, 0.5, -0.5, 1.5), cross products 2.25 - 0.25 - 0.25 + 2.25 = 4, sums of squares 5 and 5: r = 0.8;
    # Spearman-Brown 2 * 0.8 / 1.8 = 0.8889
    halves = np.array([[[1.0, 1.0]], [[2.0, 3.0]], [[3.0, 2.0]], [[4.0, 4.0]]])
    res = mt.split_half(halves)
    assert res["r"] == pytest.approx(0.8)
    assert res["spearman_brown"] == pytest.approx(16 / 18)
    assert (res["n_models"], res["n_splits"]) == (4, 1)
    # the prophecy for a test three times as long: 3 * 0.5 / (1 + 2 * 0.5) = 0.75
    assert mt.spearman_brown(0.5, 3) == pytest.approx(0.75)
    with pytest.raises(ValueError, match="at least 3 models"):
        mt.split_half(halves[:2])


def test_profession_splits_are_stratified_halves_and_seeded():
    directions = mt.planted_directions()
    splits = mt.profession_splits(directions, 5)
    assert splits == mt.profession_splits(directions, 5)
    assert len({frozenset(s) for s in splits}) == 5
    for half in splits:
        for g in ("male", "female"):
            members = [t for t, d in directions.items() if d == g]
            assert len(half & set(members)) == len(members) // 2


# ----------------------------------------------------------------------------- toy measures, known answers
def _toy_models(per_unit, seeds_at: dict[float, int], *, rng) -> list[dict]:
    """Models with two toy measures whose unit values come from ``per_unit(s, signs, rng)`` (640 items over
    the 40 professions), each evaluated by the calibration's own test (a t test on the oriented mean)."""
    from biaskit.studies import calibration as cal

    directions = mt.planted_directions()
    target = np.repeat(np.array(CONTROL_TARGETS, dtype=object), 16)
    signs = np.array([1.0 if directions[t] == "male" else -1.0 for t in target])
    models = []
    for s, k in seeds_at.items():
        for seed in range(k):
            measures = {}
            for key, fn in per_unit.items():
                mv = MetricValues(key, "mean", target, fn(s, signs, rng))
                ev = cal.evaluate(mv, directions, label_test=False)
                measures[key] = {"label": key, "kind": "mean", "directional": True, "effect": ev.effect,
                                 "no_effect": 0.0, "p_value": ev.p_value, "p_label": None,
                                 "toward_planted": ev.toward_planted, "halves": []}  # fmt: skip
            models.append({"kind": "masked", "s": s, "seed": seed, "measures": measures})
    return models


@pytest.mark.slow
def test_a_noise_measure_detects_nothing_and_raises_false_alarms_at_alpha_an_oracle_detects_the_weakest():
    rng = np.random.default_rng(0)
    toys = {
        "noise": lambda s, signs, rng: rng.normal(size=signs.size),
        "oracle": lambda s, signs, rng: signs * (s - 0.5) + rng.normal(scale=0.01, size=signs.size),
        "weak": lambda s, signs, rng: signs * max(0.0, s - 0.75) + rng.normal(size=signs.size),
    }
    seeds_at = {0.5: 400, **{s: 40 for s in CONTROL_SKEWS if s > 0.5}}
    rows = mt.measure_rows(_toy_models(toys, seeds_at, rng=rng))
    st = mt.trust_statistics(rows, alpha=0.05, n_boot=200)
    det = st.detection.set_index("measure")
    assert pd.isna(det.loc["noise", "detectable_from"])
    assert det.loc["oracle", "detectable_from"] == 0.6 and det.loc["oracle", "holds_above"]
    # the weak measure's mean moves by 0.05 at s = 0.8 (t of about 1.3 over 640 items) and 0.15 at s = 0.9
    assert det.loc["weak", "detectable_from"] == 0.9
    fa = st.false_alarms.set_index("measure")
    se = math.sqrt(0.05 * 0.95 / 400)
    for key in ("noise", "oracle", "weak"):  # all three are pure noise at s = 0.5
        assert abs(fa.loc[key, "share"] - 0.05) < 3 * se, key
        # the interval is Clopper-Pearson's (statsmodels' "beta" method)
        from statsmodels.stats.proportion import proportion_confint

        lo, hi = proportion_confint(int(fa.loc[key, "flagged"]), 400, alpha=0.05, method="beta")
        assert (fa.loc[key, "ci_low"], fa.loc[key, "ci_high"]) == (pytest.approx(lo), pytest.approx(hi))
    rel = st.reliability.set_index("measure")
    assert abs(rel.loc["noise", "icc"]) < 0.05  # 40 complete seeds x 5 strengths
    assert rel.loc["oracle", "icc"] > 0.999
    sens = st.sensitivity.set_index("measure")
    assert sens.loc["oracle", "slope"] == pytest.approx(1.0, abs=1e-3)
    assert sens.loc["oracle", "ci_low"] <= 1.0 <= sens.loc["oracle", "ci_high"]
    assert sens.loc["noise", "ci_low"] < 0 < sens.loc["noise", "ci_high"]
    sentences = " ".join(mt.trust_findings(st))
    assert "From s = 0.6: oracle." in sentences and "From s = 0.9: weak." in sentences
    assert "At no planted strength up to s = 0.9: noise." in sentences
    assert "That is at least 32 of 40 seeds." in sentences  # 80 % of the 40 seeds of every planted strength


def test_what_cannot_be_computed_gets_its_reason():
    rows = mt.measure_rows(
        [
            {"kind": "masked", "s": s, "seed": 0, "measures": {
                "kl": {"label": "KL", "kind": "kl", "directional": False, "effect": 50 + s, "p_value": None,
                       "p_label": 0.5, "toward_planted": False, "halves": []},
                "flat": {"label": "flat", "kind": "mean", "directional": True, "effect": 0.0, "p_value": 0.9,
                         "p_label": 0.9, "toward_planted": False, "halves": []},
            }}
            for s in (0.5, 0.7)
        ]
    )  # fmt: skip
    st = mt.trust_statistics(rows, n_boot=50)
    assert (
        "no gender" in st.reasons["kl"]["detection"]
        and "no false-positive rate" in st.reasons["kl"]["false_alarms"]
    )
    assert "ICC(2,1) not computed" in st.reasons["kl"]["icc"]  # one seed
    assert "no split halves" in st.reasons["flat"]["split_half"]
    assert "one seed per planted strength" in st.reasons["flat"]["sensitivity"]
    assert st.agreement.set_index(["measure_a", "measure_b"]).loc[("kl", "flat"), "reason"] == (
        "fewer than 3 models in common"
    )


# ----------------------------------------------------------------------------- recipes with a seed
def test_planted_recipes_take_a_training_seed_and_keep_the_bundled_one_by_default():
    for name in ("en-planted-s60", "en-clm-planted-s90"):
        config, init = tm.recipe(name)
        seeded, init3 = tm.recipe(name, seed=3)
        assert init3 == init and seeded.seed == 3 and config.seed == 0
        assert seeded == type(config)(**{**config.__dict__, "seed": 3})
        assert tm.recipe(name, seed=0) == tm.recipe(name)
    assert tm.recipe("en-planted-s80") == (tm.control_config(), "en-mlm-balanced")
    with pytest.raises(ValueError, match="takes no training seed"):
        tm.recipe("en-mlm", seed=1)
    with pytest.raises(ValueError, match="whole number >= 0"):
        tm.recipe("en-planted-s60", seed=-1)
    with pytest.raises(ValueError, match="whole number >= 0"):
        tm.planted_w2v_vectors(0.5, seed=1.5)
    with pytest.raises(ValueError, match="unknown kind"):
        mt.ModelSpec("glove", 0.5, 1)
    with pytest.raises(ValueError, match="not a control's"):
        mt.ModelSpec("masked", 0.55, 1)


@pytest.mark.slow
def test_the_default_word2vec_path_rebuilds_the_bundled_file_byte_for_byte(tmp_path):
    from biaskit.core.io import atomic_path
    from biaskit.lm.catalogue import model_path

    kv, info = tm.planted_w2v_vectors(0.5)
    with atomic_path(tmp_path / "s50.bin") as tmp:
        kv.save_word2vec_format(str(tmp), binary=True)
    bundled = model_path("en-planted-w2v") / "s50.bin"
    assert (tmp_path / "s50.bin").read_bytes() == bundled.read_bytes()
    assert info == {
        k: v for k, v in tm.training_record("en-planted-w2v")["files"]["s50.bin"].items() if k != "planted_s"
    }


# ----------------------------------------------------------------------------- running and resuming
@pytest.fixture
def fast_word2vec(monkeypatch, cache_dir):
    """The word2vec trainer replaced by the bundled vectors plus seeded noise (no training), and a small
    corpus for BIAS_PMI; returns the list of (s, seed) it was called with."""
    from biaskit.embeddings.vectors import load_trained_vectors

    calls: list[tuple[float, int]] = []

    def fake(s, *, seed=None, sentences=None):
        calls.append((s, seed))
        kv = load_trained_vectors("en-planted-w2v", s=s)
        kv.vectors = kv.vectors + np.random.default_rng(seed).normal(
            scale=0.05, size=kv.vectors.shape
        ).astype(kv.vectors.dtype)
        return kv, {"vocabulary_trained": len(kv), "kept": len(kv)}

    directions = mt.planted_directions()
    corpus = tuple(
        tuple(f"the {t} said {p} was late".split())
        for t, d in directions.items()
        for p in (["he"] * 3 + ["she"] if d == "male" else ["she"] * 3 + ["he"])
    )
    monkeypatch.setattr(tm, "planted_w2v_vectors", fake)
    monkeypatch.setattr(mt, "_base_train", lambda: ("a sentence",))
    monkeypatch.setattr(mt, "_pmi_tokens", lambda s: corpus)
    return calls


@pytest.mark.slow
def test_a_rerun_resumes_and_a_damaged_model_is_trained_again(fast_word2vec, tmp_path, caplog):
    from biaskit.lm.catalogue import read_manifest

    out = tmp_path / "record.json"
    kw = dict(seeds=[0, 1], skews=[0.5, 0.9], out=out, progress=False, n_resamples=10, n_splits=4)

    class Killed(Exception):
        pass

    def kill_after_three(row):
        if len(json.loads(out.read_text())["models"]) == 3:
            raise Killed

    with pytest.raises(Killed):
        mt.run_trust_study(["word2vec"], **kw, on_model=kill_after_three)
    stopped = json.loads(out.read_text())
    assert not stopped["complete"] and stopped["models_done"] == 3 and stopped["finished"] is None
    rec = mt.run_trust_study(["word2vec"], **kw)
    assert sorted(fast_word2vec) == [(0.5, 1), (0.9, 1)]  # seed 0 is the bundled model; nothing trained twice
    assert [m["trained_now"] for m in rec.models if m["seed"] == 1] == [False, True]  # (0.5, 1) was done
    data = json.loads(out.read_text())
    assert data["complete"] and data["models_done"] == 4 and data["versions"]["git_commit"]
    assert data["started"] == stopped["started"] and data["wall_seconds"] > stopped["wall_seconds"]
    assert {"cpu", "cores"} <= set(data["machine"]) and data["wall_seconds"] > 0
    manifest = read_manifest()["en-planted-w2v"]
    # the static measures of the registry at the time of the run: a plug-in registered by another test in
    # this worker (the toy plug-in's mean_cosine_gap) is measured too, so the set is read, not counted
    from biaskit.studies.calibration_values import calibration_measures

    static = set(calibration_measures("static"))
    assert {"weat", "direct_bias", "pmi"} <= static
    for m in rec.models:
        assert set(m["measures"]) == static
        if m["seed"] == 0:
            f = f"s{round(m['s'] * 100)}.bin"
            assert m["weights_sha256"] == {f: manifest[f]["sha256"]}
        for v in m["measures"].values():
            assert len(v["halves"]) == 4 and v["effect"] is not None
            assert (v["fpr"] is not None) == (m["s"] == 0.5)

    fast_word2vec.clear()
    again = mt.run_trust_study(["word2vec"], **kw)
    assert fast_word2vec == [] and not any(m["trained_now"] or m["measured_now"] for m in again.models)
    assert [m["measures"] for m in again.models] == [m["measures"] for m in rec.models]

    vec = (
        mt.model_dir(Path(os.environ["BIASKIT_CACHE_DIR"]), mt.ModelSpec("word2vec", 0.9, 1)) / "vectors.bin"
    )
    vec.write_bytes(vec.read_bytes() + b"x")
    with caplog.at_level("WARNING", logger="biaskit.studies.metric_trust"):
        mt.run_trust_study(["word2vec"], **kw)
    assert fast_word2vec == [(0.9, 1)]
    assert "retrained" in caplog.text and "vectors.bin" in caplog.text


@pytest.mark.slow
def test_the_seeds_run_as_dask_tasks(fast_word2vec, tmp_path):
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster,
        Client(cluster) as client,
    ):
        rec = mt.run_trust_study(
            ["word2vec"],
            seeds=[1, 2],
            skews=[0.5],
            out=tmp_path / "r.json",
            scheduler=client,
            progress=False,
            n_resamples=10,
            n_splits=4,
        )
    assert sorted(fast_word2vec) == [(0.5, 1), (0.5, 2)]
    assert [m["seed"] for m in rec.models] == [1, 2] and all(m["trained_now"] for m in rec.models)


def test_the_command_refuses_an_unknown_kind(tmp_path, capsys):
    from biaskit.__main__ import main

    assert main(["trust-study", "--kinds", "glove", "--out", str(tmp_path / "r.json")]) == 1
    assert "unknown kind(s) of control ['glove']" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


# ----------------------------------------------------------------------------- the committed record
def _committed():
    rec = mt.load_record()
    assert rec is not None, f"no committed record in {RECORD}: run `python -m biaskit trust-study`"
    return rec


def test_the_committed_record_has_its_provenance_and_every_model_its_facts():
    from biaskit.lm.catalogue import read_manifest

    rec = _committed()
    for meta in rec.meta:
        assert meta["what"] == mt.RECORD_WHAT and len(meta["versions"]["git_commit"]) == 40
        assert meta["started"] and meta["wall_seconds"] > 0 and meta["machine"]["cores"] >= 1
        assert meta["command"].startswith("python -m biaskit trust-study")
    manifest = read_manifest()
    word2vec = [m for m in rec.models if m["kind"] == "word2vec"]
    assert len({m["seed"] for m in word2vec}) >= 5 and {m["s"] for m in word2vec} == set(CONTROL_SKEWS)
    for m in rec.models:
        assert m["recipe"] and m["name"].endswith(f"seed{m['seed']}") and "held_out" in m
        assert m["weights_sha256"] and all(len(h) == 64 for h in m["weights_sha256"].values())
        if m["bundled"]:
            folder = manifest[m["recipe"]]
            for f, h in m["weights_sha256"].items():
                assert folder[f]["sha256"] == h, f"{m['name']}: {f} is not the bundled file"
        for key, v in m["measures"].items():
            assert v["effect"] is not None, (m["name"], key)
            assert v["p_value"] is not None or v["kind"] == "kl", (m["name"], key)
    # seeds differ: no two models of one strength share their weights
    shas = [json.dumps(m["weights_sha256"], sort_keys=True) for m in rec.models]
    assert len(set(shas)) == len(shas)


@pytest.mark.parametrize("with_pingouin", [False, True], ids=["anova-naive", "pingouin"])
def test_statistics_of_the_committed_record_agree_with_independent_implementations(with_pingouin):
    pingouin = pytest.importorskip("pingouin") if with_pingouin else None  # in the dev extra
    rows = _committed().rows()
    st = mt.trust_statistics(rows)
    rel = st.reliability.set_index("measure")
    checked = 0
    for m, sub in rows.groupby("measure"):
        # the strengths x seeds table of the seeds with a model at every strength
        complete = sub.groupby("seed")["s"].nunique() == sub["s"].nunique()
        df = sub[sub["seed"].isin(complete[complete].index)][["s", "seed", "effect"]]
        if df["seed"].nunique() < 2 or df["s"].nunique() < 2:
            assert pd.isna(rel.loc[m, "icc"]) and "icc" in st.reasons[m], m
            continue
        if df.groupby("s")["effect"].nunique().max() == 1:  # identical over seeds (a corpus measure)
            assert rel.loc[m, "icc"] == pytest.approx(1.0)
            continue
        assert rel.loc[m, "icc"] == pytest.approx(anova_icc_2_1(df), abs=1e-10), m
        if pingouin is not None:
            assert rel.loc[m, "icc"] == pytest.approx(pingouin_icc_2_1(df), abs=1e-10), m
        checked += 1
    assert checked >= 2
    wide = rows.pivot_table(index=["s", "seed"], columns="measure", values="effect")
    taus = st.agreement.dropna(subset=["tau"])
    assert len(taus) >= 3
    for r in taus.itertuples():
        ok = wide[r.measure_a].notna() & wide[r.measure_b].notna()
        x, y = wide.loc[ok, r.measure_a].to_numpy(), wide.loc[ok, r.measure_b].to_numpy()
        assert r.tau == pytest.approx(naive_kendall_tau_b(x, y), abs=1e-12)
    # every statistic of every measure is there or has a reason
    for m in st.measures["measure"]:
        why = st.reasons.get(m, {})
        assert pd.notna(rel.loc[m, "icc"]) or "icc" in why, m
        assert pd.notna(rel.loc[m, "split_half_sb"]) or "split_half" in why, m
        det = st.detection.set_index("measure").loc[m]
        assert pd.notna(det["max_s"]) or "detection" in why, m
        sens = st.sensitivity.set_index("measure").loc[m]
        assert pd.notna(sens["per_sd"]) or "sensitivity" in why, m


def test_saved_statistics_rebuild_the_same_sentences():
    rows = _committed().rows()
    st = mt.trust_statistics(rows, n_boot=200)
    saved = json.loads(json.dumps(st.to_json()))  # as a notebook's JSON holds them
    assert mt.trust_findings(mt.statistics_from_json(saved)) == mt.trust_findings(st)
    with pytest.raises(ValueError, match="missing agreement"):
        mt.statistics_from_json({k: v for k, v in saved.items() if k != "agreement"})


@pytest.mark.slow
def test_notebook_18_sentences_are_those_of_the_numbers_saved_beside_them(reproduced_results):
    stem = "18_which_metric_to_trust"
    if stem in reproduced_results.errors:
        pytest.fail(f"{stem} failed under papermill:\n{reproduced_results.errors[stem]}")
    data = json.loads((reproduced_results.folder / f"{stem}.json").read_text(encoding="utf-8"))
    res = data["results"]
    assert res["trained_here"] and data["parameters"]["quick"] is True
    assert res["findings"] == mt.trust_findings(mt.statistics_from_json(res["statistics"]))
    assert data["finding"] in res["findings"]
