"""CDS swaps and planted-bias corpora (biaskit.data.counterfactual)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from biaskit.data.counterfactual import (
    assign_directions,
    cds,
    load_gender_lexicon,
    plant_gender_skew,
    sentence_gender,
    swap_gender,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("He told her that his book was hers.", "She told him that her book was his."),
        ("She gave her book to him.", "He gave his book to her."),
        ("Ask HER and John about it.", "Ask HIM and Mary about it."),
        ("The nurse said: \"she's here\", didn't she?", "The nurse said: \"he's here\", didn't he?"),
        ("My wife, my son and I.", "My husband, my daughter and I."),
        ("That car is his.", "That car is hers."),
        ("The cat sat on the mat.", "The cat sat on the mat."),
    ],
)
def test_swap_keeps_case_and_punctuation(text, expected):
    assert swap_gender(text)[0] == expected


def test_swap_twice_is_identity_on_unambiguous_words():
    s = "The king and his wife met the prince, the actress and her nephew."
    once, n = swap_gender(s)
    assert n == 7
    assert swap_gender(once)[0] == s


def test_swap_to_one_gender_and_names_off():
    assert swap_gender("He and his wife", to="female")[0] == "She and her wife"
    assert swap_gender("John met him", names=False)[0] == "John met her"


def test_sentence_gender_majority_and_tie():
    assert sentence_gender("He saw her and his son.") == "male"
    assert sentence_gender("He saw her.") is None
    assert sentence_gender("No gendered words here.") is None


def test_cds_probability_and_nonsense_count(caplog):
    sents = [f"He saw item {i}." for i in range(2000)]
    half = cds(sents, p=0.5, seed=1)
    assert 900 < half.n_swapped < 1100
    full = cds(sents, p=1.0)
    assert full.n_swapped == 2000 and all(s.startswith("She") for s in full.sentences)
    with caplog.at_level(logging.WARNING):
        r = cds(["She gave birth in May.", "She is pregnant.", "She left."], p=1.0)
    assert r.nonsense == [0, 1]
    assert "sex-specific" in caplog.text and "2 of 3" in caplog.text


def test_lexicon_is_a_bijection_except_her():
    lex = load_gender_lexicon()
    assert lex.to_female["him"] == "her" and lex.to_female["his"] == "her"
    assert lex.to_male["hers"] == "his"
    assert not set(lex.to_female) & set(lex.to_male)


def test_assign_directions_balanced_and_seeded():
    t = [f"w{i}" for i in range(10)]
    d = assign_directions(t, seed=3)
    assert sorted(d.values()).count("female") == 5
    assert d == assign_directions(t, seed=3)
    assert d != assign_directions(t, seed=4)


@pytest.mark.parametrize("s", [0.5, 0.6, 0.9])
def test_plant_sets_exact_share(s):
    rng = np.random.default_rng(0)
    words = ["nurse", "pilot", "judge", "baker"]
    sents = []
    for i in range(800):
        w = words[i % 4]
        g = "He" if rng.random() < 0.7 else "She"  # the corpus's own skew: 70 % male
        sents.append(f"{g} is a {w} and {g.lower()} likes item {i}.")
    sents += [f"He walked {i} miles." for i in range(300)]  # background
    dirs = {"nurse": "male", "pilot": "female", "judge": "male", "baker": "female"}
    pc = plant_gender_skew(sents, dirs, s, seed=0)
    for t, d in dirs.items():
        mine = [x for x in pc.sentences if f" {t} " in x]
        share = np.mean([sentence_gender(x) == d for x in mine])
        assert share == pytest.approx(round(s * 200) / 200)
    row = pc.targets.set_index("target").loc["nurse"]
    assert row["n"] == 200 and row["realised"] == pytest.approx(round(s * 200) / 200)
    bg = [x for x in pc.sentences if "walked" in x]
    assert 100 < sum(x.startswith("She") for x in bg) < 200  # background swapped with p = 0.5
    assert pc.counts["target"] == 800 and pc.counts["background"] == 300


def test_plant_rejects_bad_input():
    with pytest.raises(ValueError, match="s must be"):
        plant_gender_skew(["He is a nurse."], {"nurse": "male"}, 0.3)
    with pytest.raises(ValueError, match="directions"):
        plant_gender_skew(["He is a nurse."], {"nurse": "m"}, 0.6)


def test_word_genders_is_gender_of_for_every_listed_word():
    """The one-lookup table that plant_gender_skew reads gives gender_of's answer for every word of the
    lexicon (names in or out), and no gender to an unlisted word."""
    lex = load_gender_lexicon()
    words = {*lex.to_female, *lex.to_male, *lex.name_to_female, *lex.name_to_male}
    for names in (True, False):
        table = lex.word_genders(names=names)
        assert {w: table.get(w) for w in words} == {w: lex.gender_of(w, names=names) for w in words}
        assert lex.gender_of("table", names=names) is None and "table" not in table
    assert len(lex.word_genders(names=False)) < len(lex.word_genders())
