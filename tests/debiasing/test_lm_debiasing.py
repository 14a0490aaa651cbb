"""Tests of the language-model debiasing methods: SentenceDebias and INLP hooked into the forward pass
(bias-bench's construction), dropout debiasing (Webster et al. 2020), and the contextual representations
the recovery tests read (biaskit.embeddings.contextual)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from biaskit.debiasing.dropout import dropout_debias, with_dropout
from biaskit.debiasing.sentence_debias import (
    SentenceDebias,
    fit_sentence_inlp,
    gendered_sentences,
    project_hidden_states,
)
from biaskit.embeddings.contextual import contextual_word_vectors, sentence_representations
from biaskit.lm import tiny_causal_lm, tiny_masked_lm

TEXTS = [
    "he is a doctor and his wife is a nurse .",
    "she is a doctor and her husband is a nurse .",
    "the man said he would come .",
    "the woman said she would come .",
    "my brother is an engineer .",
    "my sister is an engineer .",
    "this is the teacher .",
    "that is the pilot .",
]
PAIRS = [(TEXTS[0], TEXTS[1]), (TEXTS[2], TEXTS[3]), (TEXTS[4], TEXTS[5]),
         ("he is here .", "she is here ."), ("his son sleeps .", "her daughter sleeps .")]  # fmt: skip


@pytest.fixture(scope="module")
def mlm():
    return tiny_masked_lm(seed=1, texts=TEXTS)


@pytest.fixture(scope="module")
def clm():
    return tiny_causal_lm(seed=1, texts=TEXTS)


def _projector(d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    v = np.random.default_rng(seed).normal(size=d)
    v /= np.linalg.norm(v)
    return np.eye(d) - np.outer(v, v), v


# --------------------------------------------------------------------------- the hook
@pytest.mark.parametrize("kind", ["masked", "causal"])
def test_projection_hook_reaches_the_representations_and_the_head(kind, mlm, clm):
    lm = mlm if kind == "masked" else clm
    d = lm.model.config.hidden_size if kind == "masked" else lm.model.config.n_embd
    P, v = _projector(d)
    deb = project_hidden_states(lm, P, name="test")
    R = sentence_representations(deb, TEXTS)
    assert np.abs(R @ v).max() < 1e-5  # every token state lies in v's null space, so does their mean
    R0 = sentence_representations(lm, TEXTS)
    assert np.abs(R0 @ v).max() > 1e-3  # the original model is left alone
    assert deb.fingerprint() != lm.fingerprint()
    # the logits of the full forward are the head applied to the projected body states, by hand
    ids = torch.as_tensor([lm.tokenizer(TEXTS[0])["input_ids"]])
    with torch.no_grad():
        full = deb.model(input_ids=ids).logits
        h = lm.model.base_model(input_ids=ids)[0] @ torch.as_tensor(P, dtype=torch.float32)
        head = lm.model.cls if kind == "masked" else lm.model.lm_head
        hand = head(h)
    torch.testing.assert_close(full, hand, atol=1e-5, rtol=1e-5)


def test_projection_hook_changes_masked_scores_consistently(mlm):
    """biaskit's fast masked scorer (last layer evaluated at the masked position, head fed directly)
    gives the same log-probabilities as the full forward pass of the hooked model."""
    from biaskit.lm.masked import masked_log_probs

    P, _ = _projector(mlm.model.config.hidden_size, 3)
    deb = project_hidden_states(mlm, P, name="test")
    ids = mlm.tokenizer(TEXTS[2])["input_ids"]
    items = [(0, j, ids[j]) for j in range(1, len(ids) - 1)]
    fast = masked_log_probs(deb, [ids], items)
    hand = []
    with torch.no_grad():
        for _, j, t in items:
            x = list(ids)
            x[j] = mlm.tokenizer.mask_token_id
            logits = deb.model(input_ids=torch.as_tensor([x])).logits[0, j]
            hand.append(float(torch.log_softmax(logits.double(), -1)[t]))
    np.testing.assert_allclose(fast, hand, atol=1e-4)
    assert np.abs(fast - masked_log_probs(mlm, [ids], items)).max() > 1e-4


def test_projection_hook_refuses_a_map_that_is_not_a_projection(mlm):
    d = mlm.model.config.hidden_size
    with pytest.raises(ValueError, match="orthogonal projection"):
        project_hidden_states(mlm, 2 * np.eye(d), name="x")
    with pytest.raises(ValueError, match="must be"):
        project_hidden_states(mlm, np.eye(d + 1), name="x")


# --------------------------------------------------------------------------- the two methods
def test_sentence_debias_removes_its_subspace(mlm):
    sd = SentenceDebias(2).fit(mlm, PAIRS)
    V = sd.components_
    np.testing.assert_allclose(V @ V.T, np.eye(2), atol=1e-8)
    # the subspace is the PCA of the pair-centred differences, by hand
    a = sentence_representations(mlm, [p[0] for p in PAIRS])
    b = sentence_representations(mlm, [p[1] for p in PAIRS])
    D = np.vstack([a - (a + b) / 2, b - (a + b) / 2])
    _, _, Vt = np.linalg.svd(D - D.mean(0), full_matrices=False)
    assert abs(abs(V[0] @ Vt[0]) - 1) < 1e-6
    deb = sd.apply(mlm)
    assert np.abs(sentence_representations(deb, TEXTS) @ V.T).max() < 1e-5
    np.testing.assert_allclose(sd.transform(a) @ V.T, 0, atol=1e-10)


def test_sentence_debias_refuses_pairs_without_a_difference(mlm, caplog):
    """Identical pairs gave a NaN direction (PCA of zeros) that was then removed; now a clear error, and a
    WARNING with the count when only some pairs are identical (they leave the subspace unchanged)."""
    with pytest.raises(ValueError, match="all 4 SentenceDebias pairs are two identical sentences"):
        SentenceDebias().fit(mlm, [(t, t) for t in TEXTS[:4]])
    # different texts the model cannot tell apart (both words unknown to it: the same [UNK] token)
    assert "zqxv" not in mlm.tokenizer.get_vocab() and "wvkj" not in mlm.tokenizer.get_vocab()
    with pytest.raises(ValueError, match="only 0 of the 2 pairs have different representations"):
        SentenceDebias().fit(mlm, [("zqxv is here .", "wvkj is here ."), ("the zqxv .", "the wvkj .")])
    with caplog.at_level("WARNING", logger="biaskit.debiasing.sentence_debias"):
        sd = SentenceDebias(1).fit(mlm, [*PAIRS, (TEXTS[6], TEXTS[6])])
    assert "1 of 6 pairs are two identical sentences" in caplog.text
    ref = SentenceDebias(1).fit(mlm, PAIRS)
    assert np.isfinite(sd.components_).all()
    assert abs(abs(float(sd.components_[0] @ ref.components_[0])) - 1) < 1e-6


def test_sentence_inlp_with_held_out_sentences(mlm):
    male, female = gendered_sentences(PAIRS)
    inlp = fit_sentence_inlp(mlm, male, female, n_iterations=3, held_out_share=0.4)
    probe = inlp.held_out_probe_
    n_test = round(0.4 * len(male)) + round(0.4 * len(female))
    assert probe["n"] == n_test and 0 <= probe["accuracy"] <= 1 and 0 < probe["p_value"] <= 1
    assert inlp.rank_removed_ == len(inlp.coefs_) <= 3
    assert fit_sentence_inlp(mlm, male, female, n_iterations=2).held_out_probe_ is None
    with pytest.raises(ValueError, match="held_out_share"):
        fit_sentence_inlp(mlm, male, female, held_out_share=1.0)


def test_sentence_inlp_nulls_its_classifiers(mlm):
    male, female = gendered_sentences(PAIRS)
    assert len(male) >= 3 and len(female) >= 3
    inlp = fit_sentence_inlp(mlm, male, female, n_iterations=3)
    deb = project_hidden_states(mlm, inlp.projection_, name="inlp")
    R = sentence_representations(deb, [*male, *female])
    for W in inlp.coefs_:
        assert np.abs(R @ W.T).max() < 1e-4


# --------------------------------------------------------------------------- representations
def test_word_pooling_equals_the_seat_encoder_target_pooled(mlm):
    """An independent code path: SEAT's TransformerEncoder with target_pooled spans."""
    from biaskit.embeddings.encoders import TransformerEncoder

    sents = ["This is the doctor.", "That is the nurse."]
    spans = [(12, 18), (12, 17)]
    mine = sentence_representations(mlm, sents, spans=spans)
    enc = TransformerEncoder(mlm.model, mlm.tokenizer, method="target_pooled")
    theirs = enc.encode([s.lower() for s in sents], spans).vectors
    np.testing.assert_allclose(mine, theirs, atol=1e-6)
    kv = contextual_word_vectors(mlm, ["doctor", "nurse", "pilot"], center=False)
    np.testing.assert_allclose(
        kv["doctor"],
        sentence_representations(
            mlm,
            [
                t.replace("{w}", "doctor")
                for t in ("This is the {w}.", "That is the {w}.", "Here is the {w}.")
            ],
            spans=[(12, 18), (12, 18), (12, 18)],
        ).mean(0),
        atol=1e-5,
    )
    centred = contextual_word_vectors(mlm, ["doctor", "nurse", "pilot"])
    np.testing.assert_allclose(centred.vectors.mean(0), 0, atol=1e-5)


def test_sentence_representations_bad_input(mlm):
    with pytest.raises(TypeError):
        sentence_representations(mlm, "one string")
    with pytest.raises(ValueError, match="covers no token"):
        sentence_representations(mlm, ["This is it."], spans=[(0, 0)])


# --------------------------------------------------------------------------- dropout
def test_with_dropout_sets_every_rate_and_a_fingerprint_of_its_own(mlm):
    before = [m.p for m in mlm.model.modules() if isinstance(m, torch.nn.Dropout)]
    d = with_dropout(mlm, 0.2, 0.15)
    cfg = d.model.config
    assert cfg.hidden_dropout_prob == 0.2 and cfg.attention_probs_dropout_prob == 0.15
    rates = {n: m.p for n, m in d.model.named_modules() if isinstance(m, torch.nn.Dropout)}
    assert rates and all(p == (0.15 if "attention.self" in n else 0.2) for n, p in rates.items())
    assert d.fingerprint() != mlm.fingerprint()
    assert [
        m.p for m in mlm.model.modules() if isinstance(m, torch.nn.Dropout)
    ] == before  # the original untouched
    with pytest.raises(ValueError):
        with_dropout(mlm, 1.0)
    with pytest.raises(TypeError):
        with_dropout(mlm.model)  # a bare transformers model, not a biaskit language model


def test_dropout_debias_trains_with_the_rates(mlm, tmp_path):
    from dataclasses import replace

    from biaskit.training.fine_tune import BARTL, fine_tune, fine_tune_record

    cfg = replace(BARTL, epochs=1, batch_size=4, learning_rate=1e-3, max_steps=2, device="cpu")
    tuned = dropout_debias(mlm, TEXTS, config=cfg)
    # trained with the rates (recorded in the run's settings), saved with the model's own
    rec = fine_tune_record(tuned)
    assert (rec["config"]["hidden_dropout"], rec["config"]["attention_dropout"]) == (0.2, 0.15)
    assert tuned.model.config.hidden_dropout_prob == mlm.model.config.hidden_dropout_prob
    assert tuned.model.config.attention_probs_dropout_prob == mlm.model.config.attention_probs_dropout_prob
    assert rec["steps"] == 2
    plain = fine_tune(mlm, TEXTS, config=cfg, progress=False)
    assert plain.name != tuned.name  # a fine-tune without the dropout is cached apart


def test_contextual_recovery_on_a_tiny_model(mlm):
    """The registered language-model entry point: the same tests on the model's word representations."""
    from biaskit.core.registry import REGISTRY
    from biaskit.metrics.recovery import classifier_recovery, contextual_recovery

    words = ["doctor", "nurse", "pilot", "teacher", "engineer", "wife", "husband", "brother", "sister", "man"]
    labels = ["a", "b"] * 5
    pool_bias = {"is": 0.5, "the": -0.2, "this": 0.1, "that": -0.4, "here": 0.3, "and": -0.1}
    res = contextual_recovery(mlm, words, labels, pool_bias=pool_bias, k=3, n_permutations=99)
    assert set(res.tests) == {"cluster", "classifier", "neighbours"}
    assert "classifier" in res.summary(alpha=0.05)
    kv = contextual_word_vectors(mlm, [*words, *pool_bias])
    again = classifier_recovery(kv, np.array([0, 1] * 5), words=words)
    assert res["classifier"].statistic == pytest.approx(again.statistic)
    assert REGISTRY["gg_contextual"].family == "language models"
