"""Small in-memory inputs on which every registered metric's example runs (its ``example`` hook).

The conformance tests (``tests/metrics/test_metric_conformance.py``) call each metric's ``example()``, which
runs the metric on these toys in well under a second, and check what comes back.  A metric of a plug-in
package may use them too.  Everything here is built in memory, deterministically (fixed seeds), with
no download and no bundled file, and cached per process; this module imports no metric module, so
that every metric module may import it:

* :func:`toy_vectors`: word vectors in which the male words and :data:`TOY_X` share one direction and
  the female words and :data:`TOY_Y` another (a planted association, so that tests have something to
  find), plus neutral :data:`TOY_PROFESSIONS`;
* the WEAT query (X, Y, A, B) of those words is :func:`biaskit.metrics.weat.toy_query`;
* :func:`toy_masked_lm` / :func:`toy_causal_lm`: the random-weight stand-ins of :mod:`biaskit.lm` with a
  tokenizer trained on :data:`TOY_SENTENCES` (the toy words are whole tokens); **their numbers mean
  nothing about bias**, they only show that a metric runs end to end;
* :func:`toy_pairs`, :func:`toy_corpus`: CrowS-style sentence pairs and a tokenised corpus of the same words;
  :func:`toy_scores`: the toy pairs scored by one PLL reading.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "TOY_FEMALE",
    "TOY_MALE",
    "TOY_NAMES",
    "TOY_PROFESSIONS",
    "TOY_SENTENCES",
    "TOY_X",
    "TOY_Y",
    "toy_causal_lm",
    "toy_corpus",
    "toy_masked_lm",
    "toy_model",
    "toy_pairs",
    "toy_scores",
    "toy_vectors",
]

TOY_MALE: tuple[str, ...] = ("he", "him", "his", "man", "boy", "father", "son", "brother")
TOY_FEMALE: tuple[str, ...] = ("she", "her", "hers", "woman", "girl", "mother", "daughter", "sister")
#: the targets the male words are planted with, and those the female words are planted with
TOY_X: tuple[str, ...] = ("maths", "algebra", "geometry", "physics", "numbers", "equation")
TOY_Y: tuple[str, ...] = ("poetry", "art", "dance", "novel", "drama", "music")
TOY_PROFESSIONS: tuple[str, ...] = (
    "nurse",
    "engineer",
    "doctor",
    "teacher",
    "pilot",
    "secretary",
    "lawyer",
    "baker",
)
#: first names, male then female (the indirect-bias bridge)
TOY_NAMES: tuple[str, ...] = ("john", "james", "david", "mary", "anna", "linda")
#: sentences that name every toy word (the toy language models' tokenizer is trained on them), and a
#: pangram, so that any English word is at worst split into known pieces
_LISTED: tuple[str, ...] = (
    *TOY_MALE,
    *TOY_FEMALE,
    *TOY_X,
    *TOY_Y,
    *TOY_PROFESSIONS,
    *TOY_NAMES,
    "male",
    "female",
)
TOY_SENTENCES: tuple[str, ...] = (
    *(
        f"The {p} said that {m} likes {x} and {f} likes {y}."
        for p, m, f, x, y in zip(
            TOY_PROFESSIONS * 2, TOY_MALE * 2, TOY_FEMALE * 2, TOY_X * 3, TOY_Y * 3, strict=False
        )
    ),
    # each word three times, so that the tokenizer keeps it whole
    *(f"{w.capitalize()} is here." for w in _LISTED for _ in range(3)),
    "The quick brown fox jumps over the lazy dog, 0 1 2 3 4 5 6 7 8 9.",
)


@functools.lru_cache(maxsize=1)
def toy_vectors(dim: int = 24, seed: int = 0) -> Any:
    """Gensim ``KeyedVectors`` of every toy word: male words and :data:`TOY_X` lean one way, female words
    and :data:`TOY_Y` the other, professions in between (unit-variance noise around the two directions)."""
    from biaskit.embeddings.vectors import from_dict

    rng = np.random.default_rng(seed)
    male_dir, female_dir = rng.normal(size=dim), rng.normal(size=dim)
    rows: dict[str, np.ndarray] = {}
    for words, direction in (
        (TOY_MALE, male_dir),
        (TOY_X, male_dir),
        (TOY_FEMALE, female_dir),
        (TOY_Y, female_dir),
    ):
        for w in words:
            rows[w] = 1.5 * direction + rng.normal(size=dim)
    for i, w in enumerate(TOY_PROFESSIONS):
        lean = male_dir if i % 2 == 0 else female_dir
        rows[w] = 0.5 * lean + rng.normal(size=dim)
    return from_dict(rows)


@functools.lru_cache(maxsize=1)
def toy_masked_lm() -> Any:
    """A random-weight masked language model whose tokenizer knows the toy words (meaningless numbers)."""
    import logging

    from biaskit.lm import tiny_masked_lm

    logging.getLogger("biaskit.lm").debug("toy masked LM: random weights")
    return tiny_masked_lm(texts=list(TOY_SENTENCES), vocab_size=400)


@functools.lru_cache(maxsize=1)
def toy_causal_lm() -> Any:
    """A random-weight causal language model whose tokenizer knows the toy words (meaningless numbers)."""
    from biaskit.lm import tiny_causal_lm

    return tiny_causal_lm(texts=list(TOY_SENTENCES), vocab_size=400)


def toy_pairs(n: int = 6) -> pd.DataFrame:
    """``n`` CrowS-style pairs (``sent_more`` with a male word, ``sent_less`` with its female twin, a
    ``bias_type``), one profession each."""
    rows = []
    for i in range(n):
        p, m, f = TOY_PROFESSIONS[i % len(TOY_PROFESSIONS)], TOY_MALE[i % 8], TOY_FEMALE[i % 8]
        rows.append(
            {
                "sent_more": f"The {p} said that {m} likes {TOY_X[i % 6]}.",
                "sent_less": f"The {p} said that {f} likes {TOY_X[i % 6]}.",
                "bias_type": "gender" if i % 2 == 0 else "profession",
            }
        )
    return pd.DataFrame(rows)


def toy_corpus() -> list[list[str]]:
    """:data:`TOY_SENTENCES`, lower-cased and split into tokens (punctuation dropped)."""
    return [[w.strip(".,").lower() for w in s.split()] for s in TOY_SENTENCES]


def toy_scores(reading: str, n: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """The scores of the :func:`toy_pairs` by the PLL reading ``reading`` (``"cp"``, ``"sz"``, ``"aul"`` on
    the toy masked model, ``"ll"``, ``"shared"`` on the toy causal one): ``(sent_more, sent_less)``."""
    from biaskit.lm import score_pairs

    pairs = toy_pairs(n)
    lm = toy_causal_lm() if reading in ("ll", "shared") else toy_masked_lm()
    res = score_pairs(
        lm, pairs["sent_more"].tolist(), pairs["sent_less"].tolist(), reading, cache=False, progress=False
    )
    sc = res.scores.set_index("row").reindex(range(len(pairs)))
    return sc["sent_more_score"].to_numpy(float), sc["sent_less_score"].to_numpy(float)


def toy_model(kind: str) -> Any:
    """The toy model of a kind: ``"static"`` word vectors (:func:`toy_vectors`), a ``"masked"`` (the grid's
    ``"masked"``) or a ``"causal"`` language model (:func:`toy_masked_lm`, :func:`toy_causal_lm`)."""
    if kind == "static":
        return toy_vectors()
    if kind == "masked":
        return toy_masked_lm()
    if kind == "causal":
        return toy_causal_lm()
    raise ValueError(f"no toy model of kind {kind!r}; choose static, masked (mlm) or causal")
