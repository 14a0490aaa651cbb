"""Sentence embeddings: static means and the three BERT pooling methods against manual computations."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from biaskit.embeddings.encoders import (
    StaticSentenceEncoder,
    TransformerEncoder,
    load_encoder,
    target_token_positions,
)
from biaskit.embeddings.vectors import from_dict

ALPHABET = "a b c d e f g h i j k l m n o p q r s t u v w x y z"
TEXTS = [
    "This is math.",
    "That is poetry.",
    "he likes math and poetry",
    "she likes art",
    "The equations are here.",
    "Here is a caress.",
    "This is a sculpture.",
    ALPHABET,
] * 3


@pytest.fixture(scope="module")
def tiny():
    from biaskit.lm import tiny_masked_lm

    torch.set_num_threads(1)
    return tiny_masked_lm(seed=3, texts=TEXTS, vocab_size=120, num_hidden_layers=2)


# ------------------------------------------------------------------------------ static vectors
def test_static_mean_matches_manual_average_with_case_fallback_and_missing_words():
    rng = np.random.default_rng(0)
    vocab = ["This", "is", "math", "poetry", "here"]
    kv = from_dict({w: rng.normal(size=5) for w in vocab})
    enc = StaticSentenceEncoder(kv, name="toy")
    out = enc.encode(["This is math.", "Poetry is here!", "nothing known."])
    # manual: exact key, else lower-case key; unknown words skipped
    m0 = np.mean([kv["This"], kv["is"], kv["math"]], axis=0, dtype=np.float64)
    m1 = np.mean([kv["poetry"], kv["is"], kv["here"]], axis=0, dtype=np.float64)
    np.testing.assert_allclose(out.vectors[0], m0, rtol=1e-12)
    np.testing.assert_allclose(out.vectors[1], m1, rtol=1e-12)
    assert out.ok.tolist() == [True, True, False]
    assert np.all(np.isnan(out.vectors[2]))
    assert out.report.loc[2, "problem"] != ""
    assert out.report.loc[2, "missing"] == ["nothing", "known"]
    assert out.report.loc[1, "units"] == ["poetry", "is", "here"]


def test_static_without_case_fallback_drops_capitalised_words():
    kv = from_dict({"poetry": [1.0, 0.0], "is": [0.0, 1.0]})
    enc = StaticSentenceEncoder(kv, case_fallback=False)
    out = enc.encode(["Poetry is."])
    np.testing.assert_allclose(out.vectors[0], [0.0, 1.0])
    assert out.report.loc[0, "missing"] == ["Poetry"]


def test_static_tokeniser_keeps_inner_apostrophes_and_ignores_punctuation():
    enc = StaticSentenceEncoder(from_dict({"x": [1.0]}))
    assert enc.tokenize("The person's name is Anne-Marie.") == ["The", "person's", "name", "is", "Anne-Marie"]


def test_bad_inputs_raise():
    enc = StaticSentenceEncoder(from_dict({"x": [1.0]}))
    with pytest.raises(TypeError):
        enc.encode("a string")
    with pytest.raises(ValueError, match="empty"):
        enc.encode(["ok", " "])
    with pytest.raises(ValueError, match="outside"):
        enc.encode(["abc"], [(1, 9)])


# ------------------------------------------------------------------------------ offsets
def test_target_token_positions_overlap_rule():
    # [CLS] this is a car ##ess . [SEP]
    offsets = [(0, 0), (0, 4), (5, 7), (8, 9), (10, 13), (13, 16), (16, 17), (0, 0)]
    special = [1, 0, 0, 0, 0, 0, 0, 1]
    assert target_token_positions(offsets, special, (10, 16)) == [4, 5]
    assert target_token_positions(offsets, special, (0, 4)) == [1]
    assert target_token_positions(offsets, special, (11, 12)) == [4]  # partial overlap still counts
    assert target_token_positions(offsets, special, (17, 18)) == []


# ------------------------------------------------------------------------------ transformer pooling
def _manual(lm, sentence: str, start: int, end: int, layer: int = -1):
    """Unbatched forward of the full masked LM with output_hidden_states, target tokens located by
    tokenising the prefix (no offset mappings): the independent reference."""
    tok = lm.tokenizer
    ids = tok(sentence, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        out = lm.model(input_ids=ids, output_hidden_states=True)
    hs = out.hidden_states[layer][0].double().numpy()
    first = 1 + len(tok.tokenize(sentence[:start]))
    k = len(tok.tokenize(sentence[start:end]))
    return hs[0], hs[first], hs[first : first + k].mean(axis=0), k


SENTS = [  # target words absent from the tiny vocabulary are split into sub-tokens
    ("Here are caresses.", "caresses"),
    ("This is mathematics.", "mathematics"),
    ("That is poetry.", "poetry"),
    ("These are sculptures.", "sculptures"),
    ("The equation is here.", "equation"),
]


@pytest.mark.parametrize("layer", [-1, 1])
def test_three_methods_differ_only_in_pooling(tiny, layer):
    sentences = [s for s, _ in SENTS]
    spans = [(s.index(w), s.index(w) + len(w)) for s, w in SENTS]
    encs = {
        m: TransformerEncoder(tiny.model, tiny.tokenizer, m, layer=layer, batch_size=2)
        for m in ("cls", "target_first", "target_pooled")
    }
    got = {m: e.encode(sentences, spans) for m, e in encs.items()}
    n_multi = 0
    for i, (s, (a, b)) in enumerate(zip(sentences, spans, strict=True)):
        cls, first, pooled, k = _manual(tiny, s, a, b, layer)
        np.testing.assert_allclose(got["cls"].vectors[i], cls, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got["target_first"].vectors[i], first, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got["target_pooled"].vectors[i], pooled, rtol=1e-5, atol=1e-6)
        assert len(got["target_pooled"].report.loc[i, "units"]) == k
        n_multi += k > 1
    assert n_multi >= 2, "the test needs words split into several sub-tokens"
    # the same hidden states underlie all three
    h = [e.hidden_states(sentences) for e in encs.values()]
    for a_, b_ in zip(h[0], h[1], strict=True):
        np.testing.assert_array_equal(a_, b_)
    assert not np.allclose(got["cls"].vectors, got["target_first"].vectors)


def test_batching_and_padding_do_not_change_embeddings(tiny):
    sentences = [s for s, _ in SENTS] + ["he likes math and poetry"]
    one = TransformerEncoder(tiny.model, tiny.tokenizer, "cls", batch_size=1).encode(sentences)
    many = TransformerEncoder(tiny.model, tiny.tokenizer, "cls", batch_size=16).encode(sentences)
    np.testing.assert_allclose(one.vectors, many.vectors, rtol=1e-5, atol=1e-6)


def test_target_method_reports_sentences_without_span(tiny):
    enc = TransformerEncoder(tiny.model, tiny.tokenizer, "target_pooled")
    out = enc.encode(["This is math.", "That is poetry."], [(8, 12), None])
    assert out.ok.tolist() == [True, False]
    assert "no target span" in out.report.loc[1, "problem"]
    assert np.all(np.isnan(out.vectors[1]))


def test_duplicate_sentences_with_different_spans(tiny):
    enc = TransformerEncoder(tiny.model, tiny.tokenizer, "target_first")
    s = "he likes math and poetry"
    out = enc.encode([s, s], [(9, 13), (18, 24)])
    _, f1, _, _ = _manual(tiny, s, 9, 13)
    _, f2, _, _ = _manual(tiny, s, 18, 24)
    np.testing.assert_allclose(out.vectors[0], f1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.vectors[1], f2, rtol=1e-5, atol=1e-6)


def test_bad_method_and_load_encoder(tiny):
    with pytest.raises(ValueError, match="method"):
        TransformerEncoder(tiny.model, tiny.tokenizer, "mean")
    enc = load_encoder(tiny, method="target_first")
    assert isinstance(enc, TransformerEncoder) and enc.method == "target_first"
    assert enc.with_method("cls").method == "cls"
    st = load_encoder(from_dict({"a": [1.0, 2.0]}), name="toy")
    assert isinstance(st, StaticSentenceEncoder) and st.name == "toy"
    with pytest.raises(TypeError):
        load_encoder(3.5)
