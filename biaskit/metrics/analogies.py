"""Word analogies (PairDistance, 3CosAdd, 3CosAvg, LRCos) and projections on a bias direction.

Seed 000 (Maddalozzo 2023) sections 3.3.2-3.3.5; Mikolov et al. (2013); Levy & Goldberg (2014);
Drozd, Gladkova & Matsuoka (2016), "Word embeddings, analogies, and machine learning: beyond
king - man + woman = queen", COLING.

Notation of the thesis: "a is to b as c is to d" (``a = man, b = king, c = woman -> d = queen``).
Every vector is unit-normalised first (Levy & Goldberg 2014; gensim's ``most_similar``), and the
scores are computed for the whole vocabulary at once (one matrix product per query).

Excluded answers.  An analogy never returns one of its own query words: ``a``, ``b`` and ``c`` for
PairDistance and 3CosAdd (as gensim and Mikolov's ``compute-accuracy`` do), ``c`` for 3CosAvg and
LRCos (as Drozd et al.'s ``vecto`` does; the training pairs stay candidates).  Without it the answer
to "man : king :: woman : ?" is usually "king" itself (the critique of seed 000 section 3.3.4 and
Nissim et al. 2020: "analogies do not allow two terms to be equal").  ``exclude_query=False``
switches this off; ``exclude=`` removes further words.

Projections (eq. 3.5): ``cs_i = ω_i·g / (‖ω_i‖‖g‖)``, returned as a tidy DataFrame.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from gensim.models import KeyedVectors

from biaskit.core.linalg import unit_rows
from biaskit.data.wordlists import OOVError, OOVPolicy, resolve_words
from biaskit.metrics.direct_bias import BiasDirection, cosine_to_direction

logger = logging.getLogger(__name__)

__all__ = [
    "lrcos",
    "pair_distance",
    "projections",
    "three_cos_add",
    "three_cos_avg",
]


# --------------------------------------------------------------------------- helpers
def _candidates(vectors: KeyedVectors, restrict_vocab: int | None) -> tuple[np.ndarray, list[str]]:
    """Unit-normalised candidate matrix (float32) and its words (the first ``restrict_vocab`` words)."""
    n = len(vectors) if restrict_vocab is None else min(int(restrict_vocab), len(vectors))
    if n <= 0:
        raise ValueError("no candidate words")
    mat = np.asarray(vectors.vectors[:n], dtype=np.float32)
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    norms[norms == 0] = 1.0  # a zero vector gets cosine 0 with everything
    return mat / norms, list(vectors.index_to_key[:n])


def _vec(vectors: KeyedVectors, word: str, role: str) -> np.ndarray:
    if word not in vectors.key_to_index:
        raise OOVError(f"analogy {role} {word!r} is not in the vocabulary")
    v = np.asarray(vectors[word], dtype=np.float64)
    n = np.linalg.norm(v)
    if n == 0:
        raise ValueError(f"analogy {role} {word!r} has a zero vector")
    return v / n


def _top(
    scores: np.ndarray,
    words: list[str],
    excluded: set[str],
    topn: int,
    key_to_index: Mapping[str, int],
    extra: Mapping[str, np.ndarray] | None = None,
    query: str | None = None,
) -> pd.DataFrame:
    """The ``topn`` best candidates (descending score), skipping ``excluded`` words.

    Candidates are the first ``len(words)`` words of the vocabulary, so a word's candidate row is its
    ``key_to_index`` position.
    """
    if topn < 1:
        raise ValueError("topn must be >= 1")
    scores = np.array(scores, dtype=np.float64)
    idx = [key_to_index[w] for w in excluded if w in key_to_index and key_to_index[w] < len(words)]
    scores[idx] = -np.inf
    scores[~np.isfinite(scores)] = -np.inf
    k = min(topn, int(np.isfinite(scores).sum()))
    if k == 0:
        raise ValueError("no candidate answer left after the exclusions")
    part = np.argpartition(-scores, k - 1)[:k]
    order = part[np.argsort(-scores[part], kind="stable")]
    data: dict[str, object] = {
        "rank": np.arange(1, k + 1),
        "word": [words[i] for i in order],
        "score": scores[order],
    }
    for name, arr in (extra or {}).items():
        data[name] = np.asarray(arr)[order]
    df = pd.DataFrame(data)
    if query is not None:
        df.insert(0, "query", query)
    return df


def _excluded(query_words: Sequence[str], exclude_query: bool, exclude: Sequence[str]) -> set[str]:
    out = set(exclude)
    if exclude_query:
        out.update(query_words)
    return out


# --------------------------------------------------------------------------- single-pair methods
def pair_distance(
    vectors: KeyedVectors,
    a: str,
    b: str,
    c: str,
    *,
    topn: int = 5,
    exclude_query: bool = True,
    exclude: Sequence[str] = (),
    restrict_vocab: int | None = None,
) -> pd.DataFrame:
    """PairDistance: "a is to b as c is to d", ``d = argmax_d cos(ω_d − ω_c, ω_b − ω_a)``.

    Seed 000 section 3.3.3 (PairDistance); Drozd et al. (2016).  The offset of the candidate from
    ``c`` must point the same way as ``b`` from ``a``; its length does not matter.  Returns the ``topn``
    answers (columns ``rank``, ``word``, ``score``); ``a``, ``b``, ``c`` are excluded by default.
    """
    va, vb, vc = _vec(vectors, a, "a"), _vec(vectors, b, "b"), _vec(vectors, c, "c")
    U, words = _candidates(vectors, restrict_vocab)
    offset = vb - va
    on = np.linalg.norm(offset)
    if on == 0:
        raise ValueError(f"{a!r} and {b!r} have the same vector: no offset to follow")
    D = U - vc.astype(np.float32)
    dn = np.linalg.norm(D, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = (D @ (offset / on).astype(np.float32)) / dn
    scores[dn == 0] = -np.inf
    return _top(scores, words, _excluded([a, b, c], exclude_query, exclude), topn, vectors.key_to_index)


def three_cos_add(
    vectors: KeyedVectors,
    a: str,
    b: str,
    c: str,
    *,
    topn: int = 5,
    exclude_query: bool = True,
    exclude: Sequence[str] = (),
    restrict_vocab: int | None = None,
) -> pd.DataFrame:
    """3CosAdd: "a is to b as c is to d", ``d = argmax_d cos(ω_d, ω_c − ω_a + ω_b)`` (unit vectors).

    Seed 000 section 3.3.3; Mikolov et al. (2013); Levy & Goldberg (2014).  Same answers as gensim's
    ``most_similar(positive=[b, c], negative=[a])``.  ``a``, ``b``, ``c`` are excluded by default.
    """
    va, vb, vc = _vec(vectors, a, "a"), _vec(vectors, b, "b"), _vec(vectors, c, "c")
    U, words = _candidates(vectors, restrict_vocab)
    target = vc - va + vb
    tn = np.linalg.norm(target)
    if tn == 0:
        raise ValueError("c - a + b is the zero vector")
    scores = U @ (target / tn).astype(np.float32)
    return _top(scores, words, _excluded([a, b, c], exclude_query, exclude), topn, vectors.key_to_index)


# --------------------------------------------------------------------------- multi-pair methods
def _pairs_matrices(
    vectors: KeyedVectors, sources: Sequence[str], targets: Sequence[str], policy: OOVPolicy
) -> tuple[np.ndarray, np.ndarray, tuple[str, ...], tuple[str, ...]]:
    rs = resolve_words(list(sources), vectors.key_to_index, name="source words", policy=policy)
    rt = resolve_words(list(targets), vectors.key_to_index, name="target words", policy=policy)
    S = unit_rows(np.asarray([vectors[w] for w in rs.kept]), "analogy sources", labels=rs.kept)
    T = unit_rows(np.asarray([vectors[w] for w in rt.kept]), "analogy targets", labels=rt.kept)
    return S, T, rs.kept, rt.kept


def _queries(c: str | Sequence[str]) -> list[str]:
    qs = [c] if isinstance(c, str) else list(c)
    if not qs:
        raise ValueError("no query word c")
    return qs


def three_cos_avg(
    vectors: KeyedVectors,
    sources: Sequence[str],
    targets: Sequence[str],
    c: str | Sequence[str],
    *,
    topn: int = 5,
    exclude_query: bool = True,
    exclude: Sequence[str] = (),
    restrict_vocab: int | None = None,
    policy: OOVPolicy = "drop",
) -> pd.DataFrame:
    """3CosAvg (Drozd et al. 2016): ``d = argmax_d cos(ω_d, ω_c + avg_offset)``.

    .. math:: \\mathrm{avg\\_offset} = \\frac{1}{m}\\sum_j \\hat\\omega_{t_j}
              - \\frac{1}{n}\\sum_i \\hat\\omega_{s_i}

    with sources ``s_i`` (e.g. countries) and targets ``t_j`` (their capitals); ``m`` and ``n`` may
    differ.  Seed 000 section 3.3.4 writes ``avg_offset = mean(sources) − mean(targets)``; that sign
    would move *away* from the target class ("China + (France − Paris)"), so we follow Drozd et al.
    (and vecto), target minus source.  ``c`` may be a list of queries (one tidy DataFrame with a
    ``query`` column).  Each query excludes itself from its answers.
    """
    S, T, _, _ = _pairs_matrices(vectors, sources, targets, policy)
    offset = T.mean(axis=0) - S.mean(axis=0)
    U, words = _candidates(vectors, restrict_vocab)
    out = []
    for q in _queries(c):
        target = _vec(vectors, q, "c") + offset
        tn = np.linalg.norm(target)
        if tn == 0:
            raise ValueError(f"{q!r} + avg_offset is the zero vector")
        scores = U @ (target / tn).astype(np.float32)
        out.append(
            _top(scores, words, _excluded([q], exclude_query, exclude), topn, vectors.key_to_index, query=q)
        )
    return pd.concat(out, ignore_index=True)


def lrcos(
    vectors: KeyedVectors,
    sources: Sequence[str],
    targets: Sequence[str],
    c: str | Sequence[str],
    *,
    topn: int = 5,
    n_random: int | None = None,
    C: float = 1.0,
    random_state: int | np.random.Generator | None = 0,
    exclude_query: bool = True,
    exclude: Sequence[str] = (),
    restrict_vocab: int | None = None,
    policy: OOVPolicy = "drop",
) -> pd.DataFrame:
    """LRCos (Drozd et al. 2016): ``d = argmax_d P(d ∈ target class) × cos(ω_d, ω_c)``.

    Seed 000 section 3.3.4.  A :class:`sklearn.linear_model.LogisticRegression` (``C``, balanced
    class weights, lbfgs) is trained on unit vectors: the target words are the positive class; the
    source words and ``n_random`` random vocabulary words (default: as many as the sources, drawn
    with ``random_state`` from the candidates, never a source/target) are the negative class, as in
    Drozd et al.'s ``vecto`` (which repeats the sources four times; class weighting makes that
    unnecessary here).  The result has the columns ``score``, ``probability`` and ``cosine``.
    """
    from sklearn.linear_model import LogisticRegression

    S, T, skept, tkept = _pairs_matrices(vectors, sources, targets, policy)
    U, words = _candidates(vectors, restrict_vocab)
    rng = np.random.default_rng(random_state)
    n_noise = S.shape[0] if n_random is None else int(n_random)
    taken = set(skept) | set(tkept)
    pool = np.array([i for i, w in enumerate(words) if w not in taken])
    if n_noise > 0:
        if pool.size < n_noise:
            raise ValueError(f"only {pool.size} candidate words left for {n_noise} random negatives")
        noise = U[rng.choice(pool, size=n_noise, replace=False)].astype(np.float64)
        neg = np.vstack([S, noise])
    else:
        neg = S
    X = np.vstack([T, neg])
    y = np.r_[np.ones(T.shape[0]), np.zeros(neg.shape[0])]
    clf = LogisticRegression(C=C, class_weight="balanced", solver="lbfgs", max_iter=1000)
    clf.fit(X, y)
    prob = clf.predict_proba(U)[:, list(clf.classes_).index(1.0)]
    out = []
    for q in _queries(c):
        cos = U @ _vec(vectors, q, "c").astype(np.float32)
        scores = prob * cos
        out.append(
            _top(
                scores,
                words,
                _excluded([q], exclude_query, exclude),
                topn,
                vectors.key_to_index,
                extra={"probability": prob, "cosine": cos},
                query=q,
            )
        )
    return pd.concat(out, ignore_index=True)


# --------------------------------------------------------------------------- projections
def projections(
    vectors: KeyedVectors,
    words: Sequence[str] | Mapping[str, Sequence[str]],
    direction: BiasDirection | np.ndarray,
    *,
    policy: OOVPolicy = "drop",
    positive_label: str = "positive",
    negative_label: str = "negative",
) -> pd.DataFrame:
    """Projections of words on a bias direction g (seed 000 eq. 3.5, Figures 3.2 and B.2-B.3).

    .. math:: cs_i = \\frac{\\omega_i \\cdot g}{\\lVert\\omega_i\\rVert \\lVert g\\rVert}

    ``words`` is a list or a mapping ``{group: words}``.  Returns one row per word with the columns
    ``word``, ``group`` (when a mapping is given), ``projection`` (the cosine), ``abs_projection`` and
    ``side`` (``positive_label`` when ``projection > 0``: closer to the direction's positive words),
    sorted by ``projection`` descending.  OOV words follow ``policy`` (dropped with a warning by default).
    """
    frames = []
    items = words.items() if isinstance(words, Mapping) else [(None, words)]
    for group, ws in items:
        cos = cosine_to_direction(
            vectors, list(ws), direction, policy=policy, name=f"group {group!r}" if group else "words"
        )
        df = cos.rename("projection").reset_index()
        if group is not None:
            df.insert(1, "group", group)
        frames.append(df)
    out = pd.concat(frames, ignore_index=True)
    out["abs_projection"] = out["projection"].abs()
    out["side"] = np.where(out["projection"] > 0, positive_label, negative_label)
    return out.sort_values("projection", ascending=False, kind="stable").reset_index(drop=True)
