"""Batch experiments: configuration checks, a grid with a broken model, outputs and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from grid_support import TEXTS, make_toy_grid, toy_grid_config

from biaskit.studies.grid import (
    COLUMNS,
    DatasetSpec,
    latex_table,
    load_config,
    load_dataset,
    run_experiments,
    summary_table,
)


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    """Files for a small grid: toy static vectors, a saved tiny masked LM, four datasets."""
    return make_toy_grid(tmp_path_factory.mktemp("grid"))


def test_grid_with_a_broken_model_completes_and_reports_it(grid, tmp_path):
    df = run_experiments(toy_grid_config(grid), output_dir=tmp_path, progress=False)
    assert list(df.columns) == list(COLUMNS)
    broken = df[df["model"] == "broken"]
    # the broken model gets one error row per cell it would have run: weat x2, seat x2, lpbs, crows
    assert len(broken) == 6
    assert (broken["status"] == "error").all()
    assert broken["error"].str.contains("no-such-model").all()
    ok = df[df["model"] != "broken"]
    assert (ok["status"] == "ok").all(), ok[["model", "dataset", "metric", "error"]]
    assert set(zip(ok["model"], ok["metric"], ok["method"], strict=True)) >= {
        ("toy-static", "weat", "vectors"),
        ("toy-static", "seat", "mean"),
        ("tiny-mlm", "weat", "cls"),
        ("tiny-mlm", "seat", "target_pooled"),
        ("tiny-mlm", "lpbs", "-"),
        ("tiny-mlm", "crows", "cp"),
    }
    assert not ((ok["model"] == "toy-static") & ok["metric"].isin(["lpbs", "crows"])).any()
    # CrowS: overall + per bias type, B_CrowS recomputed by hand from the per-type counts
    cr = ok[ok["metric"] == "crows"].set_index("bias_type")
    assert set(cr.index) == {"all", "gender", "age"}
    assert cr.loc["all", "n"] == 4
    assert cr.loc["all", "score"] == pytest.approx(
        100 * (cr.loc["gender", "statistic"] + cr.loc["age", "statistic"]) / 4
    )
    # outputs
    out = df.attrs["outputs"]
    for key in ("csv", "tex", "log", "config"):
        assert out[key].exists(), key
    assert len(out["plots"]) == 2 and all(p.exists() for p in out["plots"])
    back = pd.read_csv(out["csv"])
    assert len(back) == len(df) and (back["status"] == "error").sum() == 6
    tex = out["tex"].read_text(encoding="utf-8")
    assert "\\begin{tabular}" in tex and "error" in tex and "broken" in tex
    log = out["log"].read_text(encoding="utf-8")
    assert "broken" in log and "ERROR" in log and "6 error(s)" in log
    assert yaml.safe_load(out["config"].read_text(encoding="utf-8"))["name"] == "toy_grid"


def test_runner_static_seat_row_equals_direct_seat_call(grid, tmp_path):
    from biaskit.embeddings.encoders import StaticSentenceEncoder
    from biaskit.embeddings.vectors import load_vectors
    from biaskit.metrics.seat import load_seat_file, seat
    from biaskit.metrics.weat import WEAT

    cfg = toy_grid_config(grid)
    cfg["models"] = cfg["models"][:1]
    cfg["metrics"] = ["seat"]
    df = run_experiments(cfg, progress=False, write=False)
    assert len(df) == 1 and df.loc[0, "status"] == "ok"
    q = load_seat_file(grid / "toy_seat.jsonl")
    r = seat(q, StaticSentenceEncoder(load_vectors(grid / "toy.kv")), WEAT(n_permutations=200))
    assert df.loc[0, "effect_size"] == pytest.approx(r.effect_size, rel=1e-12)
    assert df.loc[0, "p_value"] == pytest.approx(r.p_value, rel=1e-12)


def test_cli_run(grid, tmp_path, capsys):
    from biaskit.__main__ import main

    cfg = toy_grid_config(grid)
    cfg["datasets"] = cfg["datasets"][1:2]  # words only: fast
    cfg["metrics"] = ["weat"]
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    assert main(["run", str(path), "--no-progress", "--output-dir", str(tmp_path / "o")]) == 0
    printed = capsys.readouterr().out
    assert "failed cell(s)" in printed and (tmp_path / "o" / "toy_grid.csv").exists()
    assert main(["run", str(path), "--no-progress", "--output-dir", str(tmp_path / "o"), "--strict"]) == 1


def test_config_validation(tmp_path):
    base = {"models": ["tiny"], "datasets": ["may2019:weat7"], "metrics": ["weat"]}
    cfg = load_config(base)
    assert cfg.models[0].resolved_kind == "masked" and cfg.option("n_permutations") == 10_000
    assert load_config({**base, "models": ["word2vec-googlenews-wefe"]}).models[0].resolved_kind == "static"
    assert load_config({**base, "models": [{"w2v": "word2vec-googlenews-wefe"}]}).models[0].name == "w2v"
    with pytest.raises(ValueError, match="unknown configuration key"):
        load_config({**base, "model": ["x"]})
    with pytest.raises(ValueError, match="unknown metric"):
        load_config({**base, "metrics": ["weat", "glove"]})
    with pytest.raises(ValueError, match="unknown option"):
        load_config({**base, "options": {"permutations": 3}})
    with pytest.raises(ValueError, match="duplicate"):
        load_config({**base, "models": ["tiny", "tiny"]})
    with pytest.raises(ValueError, match="methods"):
        load_config({**base, "options": {"methods": ["mean"]}})
    with pytest.raises(FileNotFoundError):
        load_config(str(tmp_path / "missing.yaml"))
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump({**base, "output_dir": "out"}), encoding="utf-8")
    c = load_config(p)
    assert c.name == "c" and c.output_dir == tmp_path / "out"


def test_load_dataset_kinds():
    assert load_dataset("may2019:weat7")[0] == "words"
    assert load_dataset("may2019:sent-weat7")[0] == "sentences"
    assert load_dataset("bfh:en/LPBS/LPBS_7")[0] == "lpbs"
    assert load_dataset("es:seat_math_arts")[0] == "sentences"
    with pytest.raises(ValueError, match="CrowS"):
        load_dataset("crows:fr")
    kind, gold = load_dataset(DatasetSpec("ss", "stereoset:dev", sample=50))
    assert kind == "stereoset" and len(gold["data"]["intrasentence"]) == 50
    with pytest.raises(ValueError, match="stereoset:dev"):
        load_dataset("stereoset:fr")


def _toy_stereoset_file(path):
    """Six StereoSet-style blanks of the toy grid's words, in the official gold format."""
    data = []
    for i, (ster, anti, unrel) in enumerate(
        [("he", "she", "math"), ("she", "he", "art"), ("man", "woman", "dance"),
         ("woman", "man", "poetry"), ("boy", "girl", "geometry"), ("girl", "boy", "algebra")]
    ):  # fmt: skip
        data.append(
            {
                "id": f"e{i}", "target": f"t{i % 3}", "bias_type": "gender" if i < 4 else "profession",
                "context": "This is BLANK.",
                "sentences": [
                    {"id": f"e{i}{j}", "sentence": f"This is {w}.", "gold_label": g}
                    for j, (w, g) in enumerate(
                        [(ster, "stereotype"), (anti, "anti-stereotype"), (unrel, "unrelated")]
                    )
                ],
            }
        )  # fmt: skip
    path.write_text(json.dumps({"version": "toy", "data": {"intrasentence": data}}), encoding="utf-8")
    return path


def test_a_stereoset_cell_equals_the_share_of_examples_and_statsmodels_z_test(grid, tmp_path):
    """StereoSet in a grid: the row's ss is the share of examples whose stereotypical option the model scores
    above the anti-stereotypical one (counted here from the option scores), and its p-value statsmodels'
    one-sample z test with the sample proportion's standard error (the thesis's E^Stereo)."""
    from statsmodels.stats.proportion import proportions_ztest

    from biaskit.lm import get_lm
    from biaskit.metrics.stereoset import stereoset_option_scores

    gold_file = _toy_stereoset_file(tmp_path / "toy_stereoset.json")
    cfg = toy_grid_config(grid)
    cfg["models"] = [cfg["models"][1]]
    cfg["datasets"] = [{"name": "ss", "path": f"stereoset:{gold_file}"}]
    cfg["metrics"] = ["stereoset"]
    df = run_experiments(cfg, progress=False, write=False)
    assert (df["status"] == "ok").all() and set(df["bias_type"]) == {"all", "gender", "profession"}
    gold = json.loads(gold_file.read_text(encoding="utf-8"))
    opts = stereoset_option_scores(get_lm(str(grid / "tiny")), gold, progress=False)
    wide = opts.pivot(index="example_id", columns="gold_label", values="prob")
    pro = (wide["stereotype"] > wide["anti-stereotype"]).to_numpy()
    overall = df[df["bias_type"] == "all"].iloc[0]
    assert overall["n"] == 6 and overall["score"] == pytest.approx(100 * pro.mean())
    count = int(pro.sum())
    assert 0 < count < 6  # the z test is defined (the toy model is seeded)
    z, p = proportions_ztest(count, 6, 0.5, prop_var=False)
    assert overall["statistic"] == pytest.approx(z) and overall["p_value"] == pytest.approx(p)
    one_sided = run_experiments(
        {**cfg, "options": {**cfg["options"], "stereoset_alternative": "greater"}},
        progress=False,
        write=False,
    )
    row = one_sided[one_sided["bias_type"] == "all"].iloc[0]
    assert row["score"] == overall["score"]
    assert row["p_value"] == pytest.approx(proportions_ztest(count, 6, 0.5, "larger", prop_var=False)[1])


def test_summary_and_latex_escape_and_mark_significance():
    rows = [
        {
            "model": "m_1",
            "dataset": "set_a",
            "metric": "seat",
            "method": "cls",
            "bias_type": "",
            "effect_size": 1.234,
            "score": np.nan,
            "p_value": 0.001,
            "status": "ok",
        },
        {
            "model": "m_1",
            "dataset": "set_b",
            "metric": "crows",
            "method": "cp",
            "bias_type": "all",
            "effect_size": np.nan,
            "score": 55.5,
            "p_value": 0.5,
            "status": "ok",
        },
        {
            "model": "m_2",
            "dataset": "set_a",
            "metric": "seat",
            "method": "cls",
            "bias_type": "",
            "effect_size": np.nan,
            "score": np.nan,
            "p_value": np.nan,
            "status": "error",
        },
    ]
    df = pd.DataFrame(rows)
    wide, sig = summary_table(df)
    assert wide.loc["set_a | SEAT | cls", "m_1"] == "1.23 (0.001)"
    assert wide.loc["set_b | CROWS | cp | all", "m_1"] == "55.5% (0.500)"
    assert wide.loc["set_a | SEAT | cls", "m_2"] == "error"
    assert bool(sig.loc["set_a | SEAT | cls", "m_1"]) and not bool(sig.loc["set_b | CROWS | cp | all", "m_1"])
    tex = latex_table(df)
    assert "set\\_a" in tex and "m\\_1" in tex and "55.5\\%" in tex
    assert "\\bfseries 1.23 (0.001)" in tex


def test_a_causal_model_runs_crows_with_log_likelihoods_and_skips_the_masked_only_metrics(grid, tmp_path):
    """A causal model goes through the same experiment configuration as a masked one."""
    from biaskit.lm import get_lm, score_pairs, tiny_causal_lm
    from biaskit.metrics.crows import crows_score

    clm = tiny_causal_lm(seed=2, texts=TEXTS, vocab_size=120)
    (grid / "tiny-gpt").mkdir(exist_ok=True)
    clm.model.save_pretrained(grid / "tiny-gpt")
    clm.tokenizer.save_pretrained(grid / "tiny-gpt")
    cfg = toy_grid_config(grid)
    cfg["models"] = [{"name": "tiny-gpt", "path": str(grid / "tiny-gpt")}]
    assert load_config(cfg).models[0].resolved_kind == "causal"
    df = run_experiments(cfg, output_dir=tmp_path, progress=False)
    assert set(df["metric"]) == {"crows"} and (df["status"] == "ok").all()
    overall = df[df["bias_type"] == "all"].iloc[0]
    assert overall["method"] == "ll"
    pairs = pd.read_csv(grid / "toy_crows.csv")
    lm = get_lm(str(grid / "tiny-gpt"))
    sc = score_pairs(lm, pairs["sent_more"], pairs["sent_less"], "ll", cache=False, progress=False).scores
    assert overall["score"] == pytest.approx(crows_score(sc["sent_more_score"], sc["sent_less_score"]).score)


def test_plot_results_centres_each_rows_bars_on_its_label():
    """Each test row gets only the bars it has, centred on its own tick (a row that one model alone ran must
    not sit half-way to the next label), LPBS's pooling "-" is named in the legend, stars stay inside the
    axes."""
    import matplotlib.pyplot as plt

    from biaskit.studies.grid import POOLING_LABELS, plot_results

    rows = [
        # model A: WEAT with two pooling methods, LPBS with none; model B: SEAT with one
        ("A", "weat", "w7", "cls", 1.2, 0.001),
        ("A", "weat", "w7", "target_first", -0.4, 0.3),
        ("A", "lpbs", "l1", "-", 0.8, 0.01),
        ("B", "seat", "s6", "mean", 0.5, 0.2),
    ]
    eff = pd.DataFrame(rows, columns=["model", "metric", "dataset", "method", "effect_size", "p_value"])
    crows = pd.DataFrame(
        {
            "model": ["en", "es"],
            "metric": "crows",
            "dataset": ["crows-en", "crows-es"],
            "bias_type": "gender",
            "score": [55.0, 48.0],
            "method": "-",
            "effect_size": np.nan,
            "p_value": np.nan,
        }
    )
    figs = plot_results(pd.concat([eff, crows], ignore_index=True).assign(status="ok"), alpha=0.05)
    try:
        a, b = figs["effect_sizes"].axes
        centres = sorted(round(p.get_y() + p.get_height() / 2, 6) for p in a.patches)
        assert centres == pytest.approx(
            [-0.2, 0.2, 1.0]
        )  # WEAT's two bars straddle row 0, LPBS's sits on row 1
        assert [p.get_y() + p.get_height() / 2 for p in b.patches] == pytest.approx([0.0])
        legend = [t.get_text() for t in figs["effect_sizes"].legends[0].get_texts()]
        assert POOLING_LABELS["-"] in legend and "-" not in legend
        lo, hi = a.get_xlim()
        assert lo < -0.4 and hi > 1.2  # room for the stars beyond the longest bars
        (ax,) = figs["crows"].axes
        assert [p.get_y() + p.get_height() / 2 for p in ax.patches] == pytest.approx(
            [0.0, 1.0]
        )  # one bar per row
    finally:
        for fig in figs.values():
            plt.close(fig)


# --- strict means strict -----------------------------------------------------------------------------
def test_a_misspelled_dataset_id_stops_the_grid_before_any_cell(grid, tmp_path):
    cfg = toy_grid_config(grid)
    cfg["datasets"] = [{"name": "weat", "path": "may2019:weat77"}]
    with pytest.raises(ValueError, match=r"nothing was run: weat \(may2019:weat77\)"):
        run_experiments(cfg, progress=False, write=False)


def test_incompatible_cells_are_warnings_and_strict_fails_on_them(grid, tmp_path, caplog, capsys):
    from biaskit.__main__ import main

    cfg = toy_grid_config(grid)
    cfg["models"] = cfg["models"][:1]  # static vectors only
    cfg["datasets"] = [d for d in cfg["datasets"] if d["name"] in ("weat", "lpbs")]
    cfg["metrics"] = ["weat", "lpbs"]
    with caplog.at_level("WARNING", logger="biaskit.studies.grid"):
        df = run_experiments(cfg, progress=False, write=False)
    assert list(df["metric"]) == ["weat"] and df.attrs["skipped"] == [
        "toy-static x lpbs x lpbs: lpbs needs a language model"
    ]
    assert "WARNING" in caplog.text and "not a cell: toy-static x lpbs x lpbs" in caplog.text
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    out = str(tmp_path / "o")
    assert main(["run", str(path), "--no-progress", "--output-dir", out]) == 0
    assert main(["run", str(path), "--no-progress", "--output-dir", out, "--strict"]) == 1
    assert "--strict: 1 skipped cell(s)" in capsys.readouterr().err


def test_strict_fails_on_a_grid_without_rows(grid, tmp_path, capsys):
    from biaskit.__main__ import main

    cfg = toy_grid_config(grid)
    cfg["models"] = cfg["models"][:1]
    cfg["datasets"] = [d for d in cfg["datasets"] if d["name"] == "lpbs"]
    cfg["metrics"] = ["lpbs"]
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    assert main(["run", str(path), "--no-progress", "--output-dir", str(tmp_path / "o"), "--strict"]) == 1
    err = capsys.readouterr().err
    assert "1 skipped cell(s)" in err and "the grid produced no result row" in err
    bad = {**cfg, "datasets": [{"name": "x", "path": "bfh:xx/SEAT/nope"}]}
    path.write_text(yaml.safe_dump(bad), encoding="utf-8")
    assert main(["run", str(path), "--no-progress", "--output-dir", str(tmp_path / "o")]) == 1
    assert "nothing was run" in capsys.readouterr().err


def test_a_barza_templates_cell_equals_pronoun_probabilities_read_from_the_model_and_scipy_t_test(
    grid, tmp_path
):
    """Barza's templates in a grid: the row's mean APPD equals P(he) - P(she) read here from the model's
    logits at the mask (softmax over the vocabulary), averaged per profession, and its p-value scipy's
    one-sample t test of those APPDs (seed 002 section 4.2.2)."""
    from scipy import stats

    from biaskit.lm import get_lm

    rows = [
        {"profession": p, "slot": "subject", "sentence": s.format(p=p)}
        for p in ("math", "art", "dance", "poetry")
        for s in ("[MASK] likes {p}.", "This is {p} and [MASK] likes it.")
    ]
    pd.DataFrame(rows).to_csv(tmp_path / "templates.csv", index=False)
    cfg = toy_grid_config(grid)
    cfg["models"] = [cfg["models"][1]]
    cfg["datasets"] = [{"name": "tpl", "path": f"tbd:{tmp_path / 'templates.csv'}"}]
    cfg["metrics"] = ["barza_templates"]
    df = run_experiments(cfg, progress=False, write=False)
    assert (df["status"] == "ok").all() and list(df["bias_type"]) == ["all", "(none)"]
    lm = get_lm(str(grid / "tiny"))
    tok, model = lm.tokenizer, lm.model.eval()
    ppd = []
    for r in rows:
        enc = tok(r["sentence"].replace("[MASK]", tok.mask_token), return_tensors="pt")
        with torch.no_grad():
            logits = model(**enc).logits[0]
        at = int((enc["input_ids"][0] == tok.mask_token_id).nonzero()[0, 0])
        prob = torch.softmax(logits[at].double(), -1)
        ppd.append(float(prob[tok.convert_tokens_to_ids("he")] - prob[tok.convert_tokens_to_ids("she")]))
    appd_values = pd.Series(ppd).groupby([r["profession"] for r in rows], sort=False).mean().to_numpy()
    overall = df.iloc[0]
    assert overall["n"] == 4 and overall["score"] == pytest.approx(appd_values.mean(), rel=1e-4, abs=1e-9)
    assert overall["p_value"] == pytest.approx(stats.ttest_1samp(appd_values, 0).pvalue, rel=1e-3)
    per_sentence = run_experiments(
        {**cfg, "options": {**cfg["options"], "barza_templates_unit": "sentence"}},
        progress=False,
        write=False,
    ).iloc[0]
    assert per_sentence["n"] == 8 and per_sentence["p_value"] == pytest.approx(
        stats.ttest_1samp(ppd, 0).pvalue, rel=1e-3
    )
    with pytest.raises(ValueError, match="tbd:clean"):
        load_dataset("tbd:nowhere.csv")


def test_a_robustness_cell_counts_the_pairs_whose_preference_survives_the_paraphrase(grid, tmp_path):
    """The thesis's robustness test in a grid (seed 000 section 4.3): l1 is the share of pairs whose cp
    preference (the sign of M_diff) is the same in the paraphrase, counted here from the scored pairs, and
    its p-value statsmodels' one-sided z test of l1 = 0.8 with the sample proportion's standard error."""
    from statsmodels.stats.proportion import proportions_ztest

    from biaskit.lm import get_lm, score_pairs

    base = pd.read_csv(grid / "toy_crows.csv")
    more = [*base["sent_more"], "he likes art", "the boy likes math", "she likes poetry"]
    less = [*base["sent_less"], "she likes art", "the girl likes math", "he likes poetry"]
    table = pd.DataFrame({"sent_more": more, "sent_less": less})
    table["sent_more_par"] = [s.replace("likes", "is liking") for s in more]
    table["sent_less_par"] = [s.replace("likes", "is liking") for s in less]
    table.to_csv(tmp_path / "para.csv", index=False)
    cfg = toy_grid_config(grid)
    cfg["models"] = [cfg["models"][1]]
    cfg["datasets"] = [{"name": "para", "path": f"paraphrases:{tmp_path / 'para.csv'}"}]
    cfg["metrics"] = ["robustness"]
    df = run_experiments(cfg, progress=False, write=False)
    assert (df["status"] == "ok").all() and len(df) == 1
    lm = get_lm(str(grid / "tiny"))

    def m_diff(a, b):
        sc = score_pairs(lm, table[a], table[b], "cp", cache=False, progress=False).scores
        return (sc["sent_more_score"] - sc["sent_less_score"]).to_numpy()

    agree = int(
        ((m_diff("sent_more", "sent_less") > 0) == (m_diff("sent_more_par", "sent_less_par") > 0)).sum()
    )
    row = df.iloc[0]
    assert row["n"] == 7 and row["score"] == pytest.approx(100 * agree / 7)
    assert 0 < agree < 7  # the z test is defined (the toy model is seeded)
    z, p = proportions_ztest(agree, 7, 0.8, alternative="smaller", prop_var=False)
    assert row["statistic"] == pytest.approx(z) and row["p_value"] == pytest.approx(p)
    kind, es = load_dataset("paraphrases:es")
    assert kind == "paraphrases" and len(es) == 170


def test_a_comp_baseline_cell_compares_the_two_words_probabilities_read_from_the_model(grid, tmp_path):
    """The thesis's E^Comp in a grid on StereoSet blanks (seed 000 section 4.1.2): the share of contexts
    where the stereotypical word's probability at the blank, read here from the model's logits, is at least
    the anti-stereotypical one's, and statsmodels' z test of that share against 50 %."""
    from statsmodels.stats.proportion import proportions_ztest

    from biaskit.lm import get_lm

    gold_file = _toy_stereoset_file(tmp_path / "toy_stereoset.json")
    cfg = toy_grid_config(grid)
    cfg["models"] = [cfg["models"][1]]
    cfg["datasets"] = [{"name": "ss", "path": str(gold_file)}]
    cfg["metrics"] = ["comp_baseline"]
    row = run_experiments(cfg, progress=False, write=False).iloc[0]
    lm = get_lm(str(grid / "tiny"))
    tok, model = lm.tokenizer, lm.model.eval()
    enc = tok(f"This is {tok.mask_token}.", return_tensors="pt")
    with torch.no_grad():
        logits = model(**enc).logits[0]
    prob = torch.softmax(logits[int((enc["input_ids"][0] == tok.mask_token_id).nonzero()[0, 0])], -1)
    gold = json.loads(gold_file.read_text(encoding="utf-8"))["data"]["intrasentence"]
    words = [{s["gold_label"]: s["sentence"][len("This is ") : -1] for s in ex["sentences"]} for ex in gold]
    preferred = [
        float(prob[tok.convert_tokens_to_ids(w["stereotype"])])
        >= float(prob[tok.convert_tokens_to_ids(w["anti-stereotype"])])
        for w in words
    ]
    count = sum(preferred)
    assert row["status"] == "ok" and row["n"] == 6 and row["score"] == pytest.approx(100 * count / 6)
    assert 0 < count < 6
    assert row["p_value"] == pytest.approx(proportions_ztest(count, 6, 0.5, prop_var=False)[1])


@pytest.mark.slow
def test_an_indirect_bias_cell_gives_each_features_mean_ibs_over_the_sampled_targets(grid, cache_dir):
    """Indirect bias in a grid: ``sample`` draws the targets, ``indirect_bias_max_templates`` is passed on,
    and each feature's row is the mean of its IBS column from :func:`indirect_bias` (itself checked against
    the published tables in tests/metrics/test_indirect_bias.py); no p-value, as in the study."""
    from biaskit.lm import get_lm
    from biaskit.lm.xlnet import BridgeLM
    from biaskit.metrics.indirect_bias import indirect_bias

    cfg = toy_grid_config(grid, indirect_bias_max_templates=1)
    cfg["models"] = ["en-mlm"]  # the bundled English model knows the first names as single tokens
    cfg["datasets"] = [{"name": "occ", "path": "louis-alexandre:occupation/gender", "sample": 3}]
    cfg["metrics"] = ["indirect_bias"]
    df = run_experiments(cfg, progress=False, write=False)
    assert (df["status"] == "ok").all() and df["p_value"].isna().all()
    _, data = load_dataset(DatasetSpec("occ", "louis-alexandre:occupation/gender", sample=3))
    assert len(data["targets"]) == 3
    ibs = indirect_bias(
        BridgeLM(get_lm("en-mlm")), "occupation", "gender", targets=data["targets"], direct=False,
        max_templates=1, cache=False, progress=False,
    ).ibs  # fmt: skip
    got = df.set_index("bias_type")["score"]
    assert sorted(got.index) == sorted(map(str, ibs.columns))
    for feature in ibs.columns:
        assert got[str(feature)] == pytest.approx(ibs[feature].dropna().mean(), rel=1e-9)
    with pytest.raises(ValueError, match="occupation"):
        load_dataset("louis-alexandre:occupation/occupation")
