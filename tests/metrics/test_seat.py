"""SEAT: target location, bundled data, and SEAT == WEAT on independently averaged embeddings."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from biaskit.core.paths import data_dir, wordlists_dir
from biaskit.data.wordlists import load_seed_groups
from biaskit.embeddings.encoders import StaticSentenceEncoder
from biaskit.embeddings.vectors import from_dict
from biaskit.metrics.seat import (
    SEATItem,
    SEATQuery,
    available_seat_tests,
    load_seat,
    load_weat_words,
    locate_target,
    seat,
    seat_table,
    weat_through_encoder,
)
from biaskit.metrics.weat import WEAT, WEATQuery


# ------------------------------------------------------------------------------ locating targets
@pytest.mark.parametrize(
    ("sentence", "lang", "target"),
    [
        ("This is a caress.", "en", "caress"),
        ("The person's name is Tiffany.", "en", "Tiffany"),
        ("European Americans are people.", "en", "European Americans"),
        ("This will stink.", "en", "stink"),
        ("Here he is.", "en", "he"),
        ("Die Effizienz ist eine Sache.", "de", "Effizienz"),
        ("Der Sohn ist ein Mensch.", "de", "Sohn"),
        ("Esto es una guitarra.", "es", "guitarra"),
    ],
)
def test_locate_target(sentence, lang, target):
    a, b = locate_target(sentence, lang)
    assert sentence[a:b] == target


def test_locate_target_failures_and_candidates():
    assert locate_target("This is.", "en") is None  # nothing left
    assert locate_target("Math is here and art.", "en") is None  # gapped run
    assert locate_target("This is algebra.", "en", candidates=["ALGEBRA", "math"]) == (8, 15)
    with pytest.raises(ValueError, match="bleached"):
        locate_target("Ceci est un test.", "fr")


def test_every_bundled_sentence_has_a_located_target():
    n = 0
    for key in available_seat_tests():
        q = load_seat(key)
        if not isinstance(q, SEATQuery):
            continue
        for r in "XYAB":
            for it in q.items(r):
                assert it.span is not None, (key, it.text)
                t = it.target
                assert t.strip() == t and t, (key, it.text)
                assert t.lower() not in {"this", "is", "the", "a", "will", "es", "ist"}
                n += 1
    assert n > 5000


def test_may_targets_match_the_bare_words():
    """The located targets of sent-weat7 are the weat7 words or their inflections."""
    sent = load_seat("may2019:sent-weat7")
    words = load_seat("may2019:weat7")
    for r in "XY":
        bare = {w.lower() for w in getattr(words, r)}
        for it in sent.items(r):
            t = it.target.lower()
            assert any(t.startswith(w[:4]) for w in bare), t


def test_bundled_files_match_provenance_sha256():
    import hashlib

    prov = (data_dir() / "seat" / "PROVENANCE.md").read_text(encoding="utf-8")
    prov += (data_dir() / "bfh-bias" / "PROVENANCE.md").read_text(encoding="utf-8")
    files = sorted((data_dir() / "seat").glob("*.jsonl")) + sorted((data_dir() / "bfh-bias").rglob("*.*"))
    files = [f for f in files if f.name != "PROVENANCE.md"]
    assert len(files) > 40
    for f in files:
        assert hashlib.sha256(f.read_bytes()).hexdigest() in prov, f


def test_load_weat_words_strips_spaces_and_reads_category_comments():
    q = load_weat_words(data_dir() / "bfh-bias" / "en" / "WEAT" / "WEAT_7.txt")
    assert q.X[:2] == ("math", "algebra")  # the file has "math, algebra, ..."
    assert all(w == w.strip() for s in (q.X, q.Y, q.A, q.B) for w in s)
    de = load_seat("bfh:de/WEAT/CW1")
    assert de.names == ("productive", "unproductive", "business", "children")
    assert de.X[0] == "Effizienz" and len(de.X) == 10


# ------------------------------------------------------------------------------ Spanish sets
@pytest.mark.parametrize("path", sorted(wordlists_dir().glob("es/seat_*.json")), ids=lambda p: p.stem)
def test_spanish_sets_are_the_thesis_seed_groups(path):
    spec = json.loads(path.read_text(encoding="utf-8"))
    groups = load_seed_groups()
    q = load_seat(f"es:{path.stem}")
    for key, role in zip(("targ1", "targ2", "attr1", "attr2"), "XYAB", strict=True):
        words = [w for w, _ in spec[key]["words"]]
        assert words == groups[spec[key]["seed_group"]]
        items = q.items(role)
        n_templates = [len(spec["templates"][c]) for _, c in spec[key]["words"]]
        assert len(items) == sum(n_templates)
        # every sentence's span points at its word (capitalised or not)
        expected = [w for (w, _), n in zip(spec[key]["words"], n_templates, strict=True) for _ in range(n)]
        assert [it.target.lower() for it in items] == [w.lower() for w in expected]
        assert all(it.text.endswith(".") and it.text[0].isupper() for it in items)
    assert q.language == "es"
    words = load_seat(f"es:{path.stem}/words")
    assert isinstance(words, WEATQuery) and words.X == tuple(w for w, _ in spec["targ1"]["words"])


def test_from_templates_spans():
    q = SEATQuery.from_templates(["math"], ["art"], ["he"], ["she"], ["This is {}.", "{} is here."])
    assert [it.target for it in q.X] == ["math", "math"]
    assert q.X[1] == SEATItem("math is here.", 0, 4)
    with pytest.raises(ValueError, match="exactly one"):
        SEATQuery.from_templates(["a"], ["b"], ["c"], ["d"], ["no slot"])


# ------------------------------------------------------------------------------ SEAT == WEAT
def _naive_average(kv, sentence):
    """Independent mean word vector: split on spaces, strip the final full stop, exact or lower-case key."""
    vecs = []
    for tok in sentence.rstrip(".").split():
        for key in (tok, tok.lower()):
            if key in kv.key_to_index:
                vecs.append(np.asarray(kv[key], dtype=np.float64))
                break
    return np.mean(vecs, axis=0)


def _toy_vectors(words, dim=12, seed=0):
    rng = np.random.default_rng(seed)
    return from_dict({w: rng.normal(size=dim) for w in words})


def test_seat_static_equals_weat_on_averaged_template_embeddings_toy():
    X, Y, A, B = (
        ["rose", "tulip", "daisy"],
        ["ant", "wasp", "moth"],
        ["love", "peace", "joy"],
        ["death", "war", "filth"],
    )
    kv = _toy_vectors(X + Y + A + B + ["this", "is", "here", "that"])
    q = SEATQuery.from_templates(X, Y, A, B, ["This is {}.", "{} is here.", "That is {}."])
    test = WEAT(n_permutations=5000, exact=False, random_state=1)
    got = seat(q, StaticSentenceEncoder(kv), test)
    sents = {r: q.sentences(r) for r in "XYAB"}
    mean_kv = from_dict({s: _naive_average(kv, s) for r in "XYAB" for s in sents[r]})
    ref = test.run(sents["X"], sents["Y"], sents["A"], sents["B"], mean_kv)
    assert got.effect_size == pytest.approx(ref.effect_size, rel=1e-6)
    assert got.statistic == pytest.approx(ref.statistic, rel=1e-6)
    assert got.p_value == pytest.approx(ref.p_value, rel=1e-9)
    assert got.details["permutation_method"] == ref.details["permutation_method"] == "sampled"

    # and against a fully naive effect size
    def cos(u, v):
        return float(u @ v / np.linalg.norm(u) / np.linalg.norm(v))

    emb = {s: _naive_average(kv, s) for r in "XYAB" for s in sents[r]}
    s_w = {
        w: np.mean([cos(emb[w], emb[a]) for a in sents["A"]])
        - np.mean([cos(emb[w], emb[b]) for b in sents["B"]])
        for w in sents["X"] + sents["Y"]
    }
    sx = [s_w[w] for w in sents["X"]]
    sy = [s_w[w] for w in sents["Y"]]
    d = (np.mean(sx) - np.mean(sy)) / np.std(sx + sy, ddof=1)
    assert got.effect_size == pytest.approx(d, rel=1e-6)


@pytest.fixture(scope="module")
def googlenews():
    from biaskit.embeddings.vectors import load_reference_vectors

    return load_reference_vectors("word2vec-googlenews-wefe")


def test_seat_static_equals_weat_on_googlenews_sent_weat7(googlenews):
    q = load_seat("may2019:sent-weat7")
    test = WEAT(n_permutations=2000, random_state=0)
    got = seat(q, StaticSentenceEncoder(googlenews, name="w2v"), test)
    sents = {r: q.sentences(r) for r in "XYAB"}
    assert all(
        re.fullmatch(r"[A-Za-z' ]+\.", s) for r in "XYAB" for s in sents[r]
    )  # the naive split is valid
    mean_kv = from_dict({s: _naive_average(googlenews, s) for r in "XYAB" for s in sents[r]})
    ref = test.run(sents["X"], sents["Y"], sents["A"], sents["B"], mean_kv)
    assert got.effect_size == pytest.approx(ref.effect_size, rel=1e-6)
    assert got.p_value == pytest.approx(ref.p_value, rel=1e-9)
    assert got.effect_size > 0.3  # math ~ male in GoogleNews word2vec (sanity, not a published value)
    assert got.effect_size == pytest.approx(0.7244, abs=5e-5)  # the d docs/records/validation.json shows


def test_not_embeddable_sentences_are_dropped_and_listed_or_raise():
    kv = _toy_vectors(["rose", "tulip", "ant", "wasp", "love", "joy", "war", "death"])
    q = SEATQuery.from_templates(
        ["rose", "tulip", "lily"], ["ant", "wasp"], ["love", "joy"], ["war", "death"], ["{}."]
    )
    r = seat(q, StaticSentenceEncoder(kv), WEAT())
    assert r.details["n_stimuli"]["X"] == 2
    assert "lily." in r.details["not_embedded"]["X"][0]
    with pytest.raises(ValueError, match="could not be embedded"):
        seat(q, StaticSentenceEncoder(kv), WEAT(oov_policy="raise"))


def test_weat_through_static_encoder_equals_weat_on_vectors():
    X, Y, A, B = ["rose", "tulip", "daisy"], ["ant", "wasp", "moth"], ["love", "peace"], ["death", "war"]
    kv = _toy_vectors(X + Y + A + B)
    wq = WEATQuery.from_lists(X, Y, A, B)
    a = weat_through_encoder(wq, StaticSentenceEncoder(kv), WEAT())
    b = WEAT().run_query(wq, kv)
    assert a.effect_size == pytest.approx(b.effect_size, rel=1e-9)
    assert a.p_value == pytest.approx(b.p_value, rel=1e-12)
    assert a.method.startswith("WEAT via encoder")


def test_seat_table_reports_failures_as_rows():
    kv = _toy_vectors(["rose", "tulip", "ant", "wasp", "love", "joy", "war", "death"])
    ok = SEATQuery.from_templates(
        ["rose", "tulip"], ["ant", "wasp"], ["love", "joy"], ["war", "death"], ["{}."]
    )
    bad = SEATQuery.from_templates(["xx"], ["ant", "wasp"], ["love", "joy"], ["war", "death"], ["{}."])
    t = seat_table({"ok": ok, "bad": bad}, StaticSentenceEncoder(kv))
    assert t.loc[0, "error"] == "" and np.isfinite(t.loc[0, "d"])
    assert "no embeddable" in t.loc[1, "error"] and np.isnan(t.loc[1, "d"])
