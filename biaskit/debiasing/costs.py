"""What debiasing costs word vectors: word similarity (SimLex-999) and the Google analogies.

A debiasing method that removes a bias but also the meaning of words is no use.  Two standard checks
(as in Bolukbasi et al. 2016 section 7, Ravfogel et al. 2020 section 6.1 and Gonen & Goldberg 2019):

* :func:`similarity_cost`: Spearman rho between SimLex-999's human similarity ratings (Hill, Reichart &
  Korhonen 2015; gensim's copy, :func:`biaskit.debiasing.glpp.load_similarity_benchmark`) and the
  cosine similarity of the vectors, before and after;
* :func:`analogy_accuracy`: accuracy on Mikolov et al.'s (2013) Google analogy questions
  ("a : b :: c : ?", 19,544 questions in 14 sections; gensim's ``questions-words.txt``), answered by
  3CosAdd, :math:`\\arg\\max_{d \\notin \\{a, b, c\\}} \\cos(d, b - a + c)` over unit vectors (gensim's
  ``evaluate_word_analogies``), vectorised.  Questions with a word outside the vocabulary are left
  out and counted.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from gensim.models import KeyedVectors

logger = logging.getLogger(__name__)

__all__ = ["AnalogyQuestion", "analogy_accuracy", "load_google_analogies", "similarity_cost"]


@dataclass(frozen=True)
class AnalogyQuestion:
    """One analogy ``a : b :: c : d`` of a section (``"family"``, ``"gram1-adjective-to-adverb"``, ...).

    Examples
    --------
    >>> question = AnalogyQuestion("family", "he", "she", "boy", "girl")
    >>> question.section, question.d
    ('family', 'girl')
    """

    section: str
    a: str
    b: str
    c: str
    d: str


def load_google_analogies(path: str | Path | None = None, *, lowercase: bool = True) -> list[AnalogyQuestion]:
    """The Google analogy questions (gensim's ``questions-words.txt`` unless ``path`` is given).

    Examples
    --------
    >>> questions = load_google_analogies()
    >>> len(questions), questions[0]
    (19544, AnalogyQuestion(section='capital-common-countries', a='athens', b='greece', c='baghdad',
     d='iraq'))
    """
    if path is None:
        from gensim.test.utils import datapath

        path = datapath("questions-words.txt")
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; reinstall gensim or pass the file's path")
    out: list[AnalogyQuestion] = []
    section = ""
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        if line.startswith(":"):
            section = line[1:].strip()
            continue
        parts = line.lower().split() if lowercase else line.split()
        if len(parts) != 4:
            raise ValueError(f"{path}:{lineno}: expected four words, got {line!r}")
        out.append(AnalogyQuestion(section, *parts))
    return out


def analogy_accuracy(
    vectors: KeyedVectors,
    questions: Sequence[AnalogyQuestion] | None = None,
    *,
    sample: int | None = None,
    random_state: int = 0,
    batch: int = 512,
) -> dict[str, float | int]:
    """3CosAdd accuracy on the analogy ``questions`` (default: all Google questions in the vocabulary).

    ``sample``: answer a random sample of that many in-vocabulary questions (fixed ``random_state``).
    Returns ``accuracy``, ``n`` (answered), ``n_oov`` (left out), ``accuracy_family`` and ``n_family``
    (the gendered section: *king : queen :: man : woman*, which equalising pairs along the gender
    direction makes easier), ``accuracy_other`` and ``n_other`` (every other section).

    Examples
    --------
    >>> from biaskit.metrics.toys import toy_vectors
    >>> questions = [AnalogyQuestion("family", "he", "she", "boy", "girl"),
    ...              AnalogyQuestion("family", "man", "woman", "father", "mother")]
    >>> scores = analogy_accuracy(toy_vectors(), questions)
    >>> scores["n"], round(scores["accuracy"], 3)
    (2, 0.0)
    """
    qs = load_google_analogies() if questions is None else list(questions)
    kti = vectors.key_to_index
    kept = [q for q in qs if all(w in kti for w in (q.a, q.b, q.c, q.d))]
    n_oov = len(qs) - len(kept)
    if sample is not None and sample < len(kept):
        idx = np.sort(np.random.default_rng(random_state).choice(len(kept), size=sample, replace=False))
        kept = [kept[i] for i in idx]
    if not kept:
        nan = float("nan")
        return {"accuracy": nan, "n": 0, "n_oov": n_oov, "accuracy_family": nan, "n_family": 0,
                "accuracy_other": nan, "n_other": 0}  # fmt: skip
    V = np.asarray(vectors.vectors, dtype=np.float32)
    n = np.linalg.norm(V, axis=1, keepdims=True)
    V = np.divide(V, n, out=np.zeros_like(V), where=n > 0)
    ia = np.array([kti[q.a] for q in kept])
    ib = np.array([kti[q.b] for q in kept])
    ic = np.array([kti[q.c] for q in kept])
    idd = np.array([kti[q.d] for q in kept])
    correct = np.zeros(len(kept), bool)
    for s in range(0, len(kept), batch):
        sl = slice(s, s + batch)
        T = V[ib[sl]] - V[ia[sl]] + V[ic[sl]]
        S = T @ V.T
        rows = np.arange(S.shape[0])
        for col in (ia[sl], ib[sl], ic[sl]):
            S[rows, col] = -np.inf
        correct[sl] = S.argmax(axis=1) == idd[sl]
    fam = np.array([q.section == "family" for q in kept])
    return {
        "accuracy": float(correct.mean()),
        "n": int(correct.size),
        "n_oov": int(n_oov),
        "accuracy_family": float(correct[fam].mean()) if fam.any() else float("nan"),
        "n_family": int(fam.sum()),
        "accuracy_other": float(correct[~fam].mean()) if (~fam).any() else float("nan"),
        "n_other": int((~fam).sum()),
    }


def similarity_cost(spaces: dict[str, KeyedVectors], benchmark: str = "simlex999") -> pd.DataFrame:
    """Spearman rho with the human ratings of ``benchmark`` (pairs in the vocabulary) for each space.

    Examples
    --------
    >>> import numpy as np
    >>> from biaskit.debiasing.glpp import load_similarity_benchmark
    >>> from biaskit.embeddings.vectors import from_dict
    >>> rng = np.random.default_rng(0)
    >>> words = {w for a, b, _ in load_similarity_benchmark("simlex999")[:40] for w in (a, b)}
    >>> random_space = from_dict({w: rng.normal(size=8) for w in sorted(words)})
    >>> similarity_cost({"random": random_space}).round(3)
        space    rho  p_value  pairs
    0  random -0.045    0.749     54
    """
    from biaskit.debiasing.glpp import word_similarity_spearman

    rows = []
    for name, kv in spaces.items():
        r = word_similarity_spearman(kv, benchmark)
        rows.append({"space": name, "rho": r.statistic, "p_value": r.p_value, "pairs": r.details["n_pairs"]})
    return pd.DataFrame(rows)
