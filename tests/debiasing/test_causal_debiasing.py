"""CDS fine-tuning and dropout debiasing on causal (GPT-2-layout) models, and their rows in the
ground-truth study on the planted causal controls (``en-clm-planted-sXX``)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

# the eight gendered sentences the tiny models of the language-model debiasing tests read
from test_lm_debiasing import TEXTS

from biaskit.data.counterfactual import cds
from biaskit.debiasing.dropout import dropout_debias, with_dropout
from biaskit.lm import CausalLM, tiny_causal_lm
from biaskit.training.fine_tune import (
    BARTL,
    dropout_rates,
    find_fine_tuned,
    fine_tune,
    fine_tune_record,
    set_dropout,
)

CFG = replace(
    BARTL, epochs=1, batch_size=4, learning_rate=1e-3, max_steps=3, device="cpu", checkpoint_every=0
)
GPT2_RATES = ("attn_pdrop", "resid_pdrop", "embd_pdrop")


@pytest.fixture(scope="module")
def clm():
    return tiny_causal_lm(seed=1, texts=TEXTS)


def _weights(lm) -> dict[str, torch.Tensor]:
    return {k: v.detach().float().clone() for k, v in lm.model.state_dict().items()}


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_causal_fine_tune_is_deterministic_and_changes_the_weights(clm, tmp_path, one_torch_thread):
    base = _weights(clm)
    a = fine_tune(clm, TEXTS, config=CFG, output_dir=tmp_path / "a", progress=False)
    b = fine_tune(clm, TEXTS, config=CFG, output_dir=tmp_path / "b", progress=False)
    other_seed = fine_tune(clm, TEXTS, config=replace(CFG, seed=7), output_dir=tmp_path / "c", progress=False)
    assert isinstance(a, CausalLM) and a.kind == "causal"
    wa, wb = _weights(a), _weights(b)
    assert _same(wa, wb)  # same seed, same data: the same weights, bit for bit
    assert not _same(wa, base)  # the fine-tune moved them
    assert not _same(wa, _weights(other_seed))  # another seed, another order: other weights
    assert _same(_weights(clm), base)  # the caller's model is left unchanged
    rec = fine_tune_record(a)
    assert rec["steps"] == 3 and rec["config"]["objective"] == "causal"
    assert np.isfinite(rec["final_loss"]) and rec["final_loss"] > 0


def test_causal_fine_tune_loss_is_the_next_token_loss(clm, tmp_path, one_torch_thread):
    """The first step's recorded loss is the mean next-token cross-entropy of its batch on the base model
    (no dropout in the tiny model): recomputed here with the model's own ``labels`` loss."""
    from biaskit.training.objectives import epoch_batches

    cfg = replace(CFG, max_steps=1)
    tuned = fine_tune(clm, TEXTS, config=cfg, output_dir=tmp_path / "one", progress=False)
    max_length = fine_tune_record(tuned)["config"]["max_length"]  # Bartl's rule: 16 for these sentences
    enc = [clm.tokenizer(t, truncation=True, max_length=max_length)["input_ids"] for t in TEXTS]
    assert all(ids[0] == clm.prefix_token_id for ids in enc)
    first = epoch_batches([len(x) for x in enc], cfg.batch_size, cfg.seed, 0, length_grouped=False)[0]
    total, n = 0.0, 0
    with torch.no_grad():
        for i in first:
            ids = torch.tensor([enc[i]])
            out = clm.model(input_ids=ids, labels=ids)
            total += float(out.loss) * (ids.shape[1] - 1)
            n += ids.shape[1] - 1
    assert fine_tune_record(tuned)["losses"][0] == pytest.approx(total / n, rel=1e-4)


def test_causal_fine_tune_is_cached_and_found_again(clm, one_torch_thread):
    first = fine_tune(clm, TEXTS, config=CFG, progress=False)
    folder = Path(first.name)
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    again = fine_tune(clm, TEXTS, config=CFG, progress=False)
    assert (
        again.name == first.name and (folder / "model.safetensors").stat().st_mtime_ns == stamp
    )  # not retrained
    found = find_fine_tuned(clm, TEXTS, config=CFG)
    assert found is not None and found.name == first.name and found.kind == "causal"
    assert find_fine_tuned(clm, TEXTS[:4], config=CFG) is None  # other data: another run


def test_a_damaged_causal_checkpoint_is_not_trusted_and_the_run_trained_again(
    clm, tmp_path, caplog, one_torch_thread
):
    import logging

    from biaskit.training.loop import checkpoint_files

    first = _weights(fine_tune(clm, TEXTS, config=CFG, output_dir=tmp_path / "d", progress=False))
    (ckpt,) = checkpoint_files(tmp_path / "d" / "checkpoint")
    ckpt.write_bytes(ckpt.read_bytes()[:100])
    with caplog.at_level(logging.WARNING, logger="biaskit.training.loop"):
        assert find_fine_tuned(clm, TEXTS, config=CFG, output_dir=tmp_path / "d") is None
        again = fine_tune(clm, TEXTS, config=CFG, output_dir=tmp_path / "d", progress=False)
    assert f"checkpoint not trusted: {ckpt}: its size 100 bytes differs" in caplog.text
    assert "training restarts from step 0" in caplog.text
    assert _same(_weights(again), first)  # trained again, to the same weights


def test_set_dropout_maps_gpt2_modules(clm):
    import copy

    model = copy.deepcopy(clm.model)
    before = set_dropout(model, hidden=0.2, attention=0.15)
    assert before == dropout_rates(clm.model)
    rates = dropout_rates(model)
    assert rates and all(p == (0.15 if n.endswith("attn.attn_dropout") else 0.2) for n, p in rates.items())
    assert "transformer.drop" in rates and rates["transformer.drop"] == 0.2  # embd_pdrop
    assert all(
        getattr(model.config, f) == getattr(clm.model.config, f) for f in GPT2_RATES
    )  # config untouched
    with pytest.raises(ValueError):
        set_dropout(model, hidden=1.0)


def test_with_dropout_on_a_causal_model(clm):
    d = with_dropout(clm, 0.2, 0.15)
    cfg = d.model.config
    assert (cfg.attn_pdrop, cfg.resid_pdrop, cfg.embd_pdrop) == (0.15, 0.2, 0.2)
    assert isinstance(d, CausalLM) and d.fingerprint() != clm.fingerprint()
    assert all(getattr(clm.model.config, f) == 0.0 for f in GPT2_RATES)  # the original untouched


def test_causal_dropout_debias_trains_with_the_rates_and_saves_the_original_ones(clm, one_torch_thread):
    original = {f: getattr(clm.model.config, f) for f in GPT2_RATES}
    tuned = dropout_debias(clm, TEXTS, config=CFG)
    plain = fine_tune(clm, TEXTS, config=CFG, progress=False)
    assert tuned.name != plain.name  # cached apart
    saved = json.loads((Path(tuned.name) / "config.json").read_text())
    assert {f: saved[f] for f in GPT2_RATES} == original  # restored in the saved model
    assert dropout_rates(tuned.model) == dropout_rates(clm.model)
    rec = fine_tune_record(tuned)["config"]
    assert (rec["hidden_dropout"], rec["attention_dropout"]) == (0.2, 0.15) and rec["objective"] == "causal"
    # the tiny model has no dropout of its own: the only difference from the plain fine-tune is the dropout
    assert not _same(_weights(tuned), _weights(plain))
    again = dropout_debias(clm, TEXTS, config=CFG)
    assert _same(_weights(again), _weights(tuned))  # cached (and deterministic)


def test_cds_swaps_both_ways():
    out = cds(
        ["he is a doctor and his wife is a nurse .", "she said her brother is a pilot ."], p=1.0
    ).sentences
    assert out == ["she is a doctor and her husband is a nurse .", "he said his sister is a pilot ."]
    # Hall Maudslay et al.'s p = 1/2: some sentences swapped, some kept, in both directions
    src = ["he is a doctor .", "she is a doctor ."] * 20
    res = cds(src, p=0.5, seed=0)
    pairs = set(zip(src, res.sentences, strict=True))
    assert {("he is a doctor .", "she is a doctor ."), ("she is a doctor .", "he is a doctor .")} <= pairs
    assert {("he is a doctor .", "he is a doctor ."), ("she is a doctor .", "she is a doctor .")} <= pairs


@pytest.mark.slow
def test_study_rows_for_a_causal_control(one_torch_thread):
    """CDS and dropout on the causal controls s = 0.5 and 0.8 (a few steps): every causal measure and recovery
    test before and after, a share left with its interval, the comparison with the balanced control, a
    verdict, and the perplexity cost."""
    from biaskit.studies import debiasing_study as ds

    cfg = ds.ContextualStudyConfig(
        methods=(),
        causal_methods=("cds", "dropout"),
        causal_measures=("causal_sld", "causal_ll"),
        causal_max_steps=3,
        n_train=64,
        n_pool=60,
        n_fit_pairs=40,
        n_permutations=99,
        n_boot=99,
        n_held_out=10,
    )
    res = ds.run_contextual_study((0.5, 0.8), cfg, causal=True)
    e = res.effects
    assert set(e["model"]) == {"causal LM"} and set(e["method"]) == {"cds", "dropout"}
    e8 = e[e["planted"] == 0.8]
    for method in ("cds", "dropout"):
        g = e8[e8["method"] == method].set_index("measure")
        assert set(g.index) == {"causal_sld", "causal_ll", "causal_ll_mean", *ds.RECOVERY_TESTS}
        sld = g.loc["causal_sld"]
        assert (
            sld["family"] == "calibrated" and sld["before"] > 0 and sld["p_before"] < 0.05
        )  # the plan is found
        assert sld["verdict"] in ("intact", "hidden", "removed") and sld["before_above_control"]
        assert np.isfinite(sld["share_left"]) and sld["ci_low"] <= sld["share_left"] <= sld["ci_high"]
        assert sld["share_left"] == pytest.approx((sld["after"] - 0) / (sld["before"] - 0))
        ctrl = e[(e["planted"] == 0.5) & (e["method"] == method) & (e["measure"] == "causal_sld")].iloc[0]
        assert sld["control_after"] == pytest.approx(ctrl["after"])
        assert sld["vs_control"] == pytest.approx(sld["after"] - ctrl["after"])
        assert sld["vs_control_low"] <= sld["vs_control"] <= sld["vs_control_high"]
        # the magnitude companion of the sign count reads the same pairs' log-likelihood differences
        assert (
            g.loc["causal_ll_mean", "companion_of"] == "causal_ll" and g.loc["causal_ll_mean", "before"] > 0
        )
        assert res.fitted[f"causal LM: {method}"][0.8]["steps"] == 3
        assert res.fitted[f"causal LM: {method}"][0.8]["objective"] == "causal"
    before = e8[e8["measure"] == "causal_sld"]["before"]
    assert before.nunique() == 1  # one undebiased model, measured once
    c = res.costs[res.costs["model"] == "causal LM"].set_index("method")
    assert set(c.index) == {"original", "cds", "dropout"} and np.isfinite(c["held_out_perplexity"]).all()
    js = res.to_json()
    assert {r["method"] for r in js["effects"]} == {"cds", "dropout"}


def test_causal_finding_sentence_follows_its_numbers():
    from biaskit.report.findings import causal_debiasing

    def row(method, measure, family, share, verdict):
        return {"method": method, "measure": measure, "family": family, "planted": 0.8, "share_left": share,
                "verdict": verdict}  # fmt: skip

    rows = [
        row("cds", "causal_ll", "calibrated", 0.98, "intact"),
        row("cds", "causal_sld", "calibrated", 0.83, "intact"),
        row("cds", "gg_classifier", "recovery", 1.0, "above the control"),
        row("cds", "gg_neighbours", "recovery", 0.6, "at the control's level"),
        row("sentence_debias", "causal_ll", "calibrated", 0.16, "intact"),
        row("sentence_debias", "causal_sld", "calibrated", 0.04, "hidden"),
        row("sentence_debias", "gg_classifier", "recovery", 0.97, "above the control"),
        row("sentence_debias", "gg_neighbours", "recovery", 0.9, "above the control"),
    ]
    costs = [{"method": "original", "planted": 0.8, "held_out_perplexity": 92.69},
             {"method": "cds", "planted": 0.8, "held_out_perplexity": 99.92},
             {"method": "sentence_debias", "planted": 0.8, "held_out_perplexity": 93.49}]  # fmt: skip
    text = causal_debiasing(rows, costs, planted=0.8)
    assert "CDS fine-tuning: intact on all 2 causal measures (83% to 98% of the planted effect left)" in text
    assert (
        "1 of 2 recovery tests still find the plan above the balanced control, "
        "held-out perplexity 92.7 → 99.9" in text
    )
    assert "SentenceDebias: intact on 1 and hidden on 1 of the 2 causal measures" in text
    assert "(4% to 16% of the planted effect left), 2 of 2 recovery tests still find the plan above" in text
    assert "SentenceDebias: intact on 1 and hidden on 1 of the 2 causal measures (4% to 16%" in text
    assert "The fine-tunes (CDS fine-tuning) leave every causal measure finding the planted bias." in text
    assert text.endswith("No method removes it from a causal measure.")
    rows[0]["verdict"] = "removed"
    assert causal_debiasing(rows, costs, planted=0.8).endswith("by CDS fine-tuning.")
    assert "No causal control" in causal_debiasing(rows, costs, planted=0.9)
