"""Tests for biaskit.data.corpus: reading, sentence splitting, tokenising, stop-words, caching,
frequencies."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from biaskit.core.paths import data_dir
from biaskit.data import corpus as C
from biaskit.data.wordlists import load_seed_groups

# ----------------------------------------------------------------------------- tokens


def test_tokenize_keeps_spanish_letters_and_drops_punctuation():
    toks = C.tokenize("¡Él y la NIÑA comieron piñas, pingüinos... y acción!")
    assert toks == ["él", "y", "la", "niña", "comieron", "piñas", "pingüinos", "y", "acción"]


def test_tokenize_accents_all_letters():
    assert C.tokenize("Á É Í Ó Ú Ü Ñ á é í ó ú ü ñ") == list("áéíóúüñáéíóúüñ")


def test_tokenize_digit_policies():
    s = "En 2010 el CO2 bajó un 3,5 %"
    assert C.tokenize(s) == ["en", "el", "bajó", "un"]
    assert C.tokenize(s, digits="keep") == ["en", "2010", "el", "co2", "bajó", "un", "3", "5"]
    assert C.tokenize(s, digits="mask") == ["en", "<num>", "el", "<num>", "bajó", "un", "<num>", "<num>"]
    with pytest.raises(ValueError, match="digits"):
        C.tokenize(s, digits="zap")


def test_tokenize_case_and_hyphen():
    assert C.tokenize("Euro-Mediterráneo", lowercase=False) == ["Euro", "Mediterráneo"]


# ----------------------------------------------------------------------------- sentences


def test_split_sentences_rules():
    text = (
        "Señora Presidenta, el Sr. Barroso y J. M. Aznar hablaron. ¿Hay alguna observación? "
        "«No», dijo él. El art. 5 se aplica... y nada más. 2010 fue duro. Los EE.UU. Apoyan."
    )
    assert C.split_sentences(text) == [
        "Señora Presidenta, el Sr. Barroso y J. M. Aznar hablaron.",
        "¿Hay alguna observación?",
        "«No», dijo él.",
        "El art. 5 se aplica... y nada más.",
        "2010 fue duro.",
        "Los EE.UU. Apoyan.",
    ]
    assert C.split_sentences("   ") == []
    assert C.split_sentences("sin punto final") == ["sin punto final"]


# ----------------------------------------------------------------------------- stop-words


def test_stopwords_loaded_and_seeds_kept():
    sw = C.load_stopwords()
    assert len(sw) == 308
    assert {"de", "la", "que", "él", "ella", "los", "estuviéramos"} <= sw
    keep = C.default_keep_words()
    assert {"él", "ella", "ellos", "ellas", "los", "las"} <= keep
    removed = C.Preprocessing().stopword_set()
    assert "él" not in removed and "ella" not in removed
    assert {"de", "la", "que", "si", "ce"} <= removed
    # no single-token thesis seed is removed by the default preprocessing
    seeds = {w for ws in load_seed_groups().values() for w in ws if re.fullmatch(r"[^\W\d_]+", w)}
    assert seeds, "seed list unexpectedly empty"
    out = C.preprocess(sorted(seeds), C.Preprocessing(split_sentences=False))
    assert {t for s in out for t in s} == seeds


def test_preprocess_stopwords_and_keep():
    lines = ["Él dijo que la mujer y ella son de la casa."]
    assert C.preprocess(lines) == [["él", "dijo", "mujer", "ella", "casa"]]
    # without the keep list the pronouns go too (what a plain stop list would do)
    assert C.preprocess(lines, C.Preprocessing(keep=())) == [["dijo", "mujer", "casa"]]
    assert C.preprocess(lines, C.Preprocessing(stopwords=None, extra_stopwords=())) == [
        ["él", "dijo", "que", "la", "mujer", "y", "ella", "son", "de", "la", "casa"]
    ]
    # a custom list given as any iterable
    assert C.preprocess(lines, C.Preprocessing(stopwords={"dijo"}, extra_stopwords=(), keep=())) == [
        ["él", "que", "la", "mujer", "y", "ella", "son", "de", "la", "casa"]
    ]


def test_thesis_preset():
    cfg = C.Preprocessing.thesis()
    lines = ["Los diputados votaron (SV) hoy.", "Las mujeres, las mujeres y él votaron 2 veces."]
    out = C.preprocess(lines, cfg)
    assert out == [["las", "mujeres", "él", "votaron", "2", "veces"]]  # parenthesised line dropped, dedupe


def test_preprocess_sample_is_reproducible():
    lines = [f"palabra{chr(97 + i % 26)} número{i}." for i in range(100)]
    a = C.preprocess(lines, sample=10, random_state=1)
    b = C.preprocess(lines, sample=10, random_state=1)
    c = C.preprocess(lines, sample=10, random_state=2)
    assert a == b and len(a) == 10 and a != c


# ----------------------------------------------------------------------------- reading


def test_load_corpus_file_and_cache(tmp_path):
    f = tmp_path / "mini.txt"
    f.write_text("El niño habló con la niña. ¿Dónde está él?\n\nLa señora votó.\n", encoding="utf-8")
    got = C.load_corpus(f)
    assert got == [["niño", "habló", "niña"], ["dónde", "él"], ["señora", "votó"]]
    cached = list((Path(C.cache_dir()) / "corpus").glob("mini.txt-*.json.gz"))
    assert len(cached) == 1
    doc = json.loads(gzip.decompress(cached[0].read_bytes()))  # data only: gzipped JSON, never a pickle
    assert doc["sentences"] == got and doc["format"] == "biaskit corpus cache" and doc["version"] == 3
    assert C.load_corpus(f) == got  # cache hit gives the same
    f.write_text("Otra frase distinta.\n", encoding="utf-8")
    assert C.load_corpus(f) == [["frase", "distinta"]]  # content change -> new key


def test_load_corpus_gzip_and_folder(tmp_path):
    (tmp_path / "b.txt.gz").write_bytes(gzip.compress("Segunda frase aquí.\n".encode()))
    (tmp_path / "a.txt").write_text("Primera frase.\n", encoding="utf-8")
    (tmp_path / "ignored.csv").write_text("x\n", encoding="utf-8")
    assert C.load_corpus(tmp_path, cache=False) == [["primera", "frase"], ["segunda", "frase", "aquí"]]


def test_latin1_file_raises_clear_error(tmp_path):
    f = tmp_path / "latin.txt"
    f.write_bytes("primera línea\nla niña española\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"line 1.*latin-1"):
        C.load_corpus(f, cache=False)
    # reading it with the right encoding works
    assert C.load_corpus(f, encoding="latin-1", cache=False) == [["primera", "línea"], ["niña", "española"]]


def test_mojibake_raises(tmp_path):
    f = tmp_path / "moji.txt"
    f.write_text("la niÃ±a y el camiÃ³n\n", encoding="utf-8")  # UTF-8 once decoded as latin-1
    with pytest.raises(ValueError, match="mojibake"):
        C.read_lines(f)
    assert C.read_lines(f, check_mojibake=False) == ["la niÃ±a y el camiÃ³n"]


def test_unknown_encoding_and_missing_paths(tmp_path):
    f = tmp_path / "x.txt"
    f.write_text("hola\n", encoding="utf-8")
    with pytest.raises(ValueError, match="unknown encoding"):
        C.read_lines(f, encoding="no-such-codec")
    with pytest.raises(FileNotFoundError, match="neither a known corpus"):
        C.load_corpus(tmp_path / "nope.txt")
    empty = tmp_path / "empty_dir"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match=r"no \.txt"):
        C.load_corpus(empty)


def test_missing_full_corpus_says_how_to_get_it():
    with pytest.raises(FileNotFoundError, match="make data-full"):
        C.load_corpus("europarl-es-full")
    with pytest.raises(KeyError, match="unknown corpus"):
        C.corpus_files("no-such-corpus")
    assert "not downloaded" in C.available_corpora()["europarl-en-es"]


def test_empty_corpus_raises(tmp_path):
    f = tmp_path / "stop.txt"
    f.write_text("de la que\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no sentence left"):
        C.load_corpus(f, cache=False)


# ----------------------------------------------------------------------------- bundled data


def _provenance_sha256() -> dict[str, str]:
    text = (data_dir() / "europarl-es" / "PROVENANCE.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\|\s*`([^`]+)`\s*\|.*\|\s*([0-9a-f]{64})\s*\|\s*$", text, flags=re.M)
    return dict(rows)


def test_bundled_files_match_provenance():
    sums = _provenance_sha256()
    assert len(sums) == 4
    for rel, digest in sums.items():
        path = data_dir() / "europarl-es" / rel
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, rel


def test_bundled_default_corpus():
    sents = C.load_corpus()
    stats = C.corpus_stats(sents)
    assert 13_000 < stats.n_sentences < 16_000
    assert stats.n_tokens > 150_000
    vocab = {t for s in sents for t in s}
    assert {"él", "ella", "mujer", "hombre", "señora", "acción"} <= vocab
    assert not {"de", "la", "que", "y"} & vocab
    assert not any(any(ch.isdigit() for ch in t) for t in vocab)
    assert C.CORPORA[C.DEFAULT_CORPUS].files  # default names both samples
    opus = C.load_corpus("europarl-es-opus-sample")
    uds = C.load_corpus("europarl-es-uds-sample")
    assert len(opus) + len(uds) == len(sents)


# ----------------------------------------------------------------------------- frequencies


def test_word_frequencies_units():
    sents = [["a", "b", "a"], ["a", "c"], ["c"]]
    assert C.word_frequencies(sents) == Counter({"a": 3, "b": 1, "c": 2})
    assert C.word_frequencies(sents, unit="sentence") == Counter({"a": 2, "b": 1, "c": 2})
    with pytest.raises(ValueError, match="unit"):
        C.word_frequencies(sents, unit="doc")
