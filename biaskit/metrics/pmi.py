r"""Sentence co-occurrence, ``BIAS_PMI`` and the frequency baseline (seed 000, chapter 3).

Metrics that read a set of documents ``D`` directly (seed 000 section 3.1; Maddalozzo 2023):

* the **frequency baseline** ``prop`` (section 3.1.1, eq. 3.2) with its proportion test (eq. 3.3):
  :func:`frequency_baseline`;
* **BIAS_PMI** (section 3.1.2; Valentini et al. 2021, "On the interpretation and significance
  of bias metrics in texts: a PMI-based approach", arXiv:2104.06474):
  :func:`bias_pmi` (alias :data:`BIAS_PMI`), :func:`bias_pmi_groups`, :func:`bias_pmi_table`;
* the **E^PMI experiment** (sections 3.1.2 step 4 and 3.5.1): :func:`pmi_test`, a z test that
  the mean BIAS_PMI over n phenomena X_1..X_n is 0 (the thesis: n = 30, Table 3.3).

What is counted
---------------
The unit of co-occurrence is the **sentence** (the thesis: "the number of times they appear in
the same sentence").  For word sets ``A`` (a social group) and ``X`` (a phenomenon):

* ``f_AX``  = number of sentences that contain at least one word of A **and** at least one word of X;
* ``f_AnX`` = number of sentences that contain at least one word of A and **no** word of X;

so ``f_AX + f_AnX`` is the number of sentences mentioning A.  This is exactly what the
thesis's code counts (``calc_fY_Z_fY_nZ`` in ``computing_PMI.py``, github
nicolaMaddalozzo/biashandler).  A sentence with words of both A and B counts for both.  A word
that belongs to both A and X (the thesis's neutral group ``christianity`` equals the
attribute set ``christianity words``) makes every A-sentence an X-sentence.

The variants
------------
.. math::

    \text{proportion (text, eq. of 3.1.2):}\quad
    \log \frac{f_{AX} / (f_{AX} + f_{AnX})}{f_{BX} / (f_{BX} + f_{BnX})}
    = \log \frac{\hat p(X \mid A)}{\hat p(X \mid B)}

    \text{odds\_ratio (the thesis's code):}\quad
    \log \frac{f_{AX} / f_{AnX}}{f_{BX} / f_{BnX}}

``"proportion"`` is the log ratio of conditional probabilities, i.e. the difference
PMI(A, X) - PMI(B, X), Valentini et al.'s definition; it is the default.  ``"odds_ratio"``
is what the thesis's ``calculate_bias_pmi`` returns in the usual case; the two agree when
p(X|A) and p(X|B) are small.  ``"thesis_code"`` reproduces that function exactly: undefined
(the group is dropped) when ``f_AX = 0`` or ``f_BX = 0``; the proportion formula when
``f_AnX = 0`` or ``f_BnX = 0``; the odds ratio otherwise.  The thesis's p-values (Table 3.3)
come from that code, so use ``"thesis_code"`` to compare with them.

Zero counts (``zero=``): ``"nan"`` (default) returns NaN for an undefined ratio and logs a
warning naming the group and its counts (:func:`pmi_test` then drops it, as the thesis did);
``"raise"`` raises ``ValueError``; ``"haldane"`` adds 0.5 to all four counts of that group
(Haldane-Anscombe correction), logged.

Confidence intervals (``confidence=0.95``): Katz's standard error of a log risk ratio for
``"proportion"``, :math:`\sqrt{1/a - 1/(a+b) + 1/c - 1/(c+d)}`, and Woolf's standard error of a
log odds ratio for ``"odds_ratio"``, :math:`\sqrt{1/a + 1/b + 1/c + 1/d}` (a = f_AX,
b = f_AnX, c = f_BX, d = f_BnX); Wald interval ``estimate +- z * se``.  Both assume that the
A-sentences and the B-sentences are independent samples, which a sentence naming both groups
breaks; read the interval as approximate.

Seeds
-----
Seeds are NFC-normalised and lower-cased (like the corpus) and looked up with
:func:`biaskit.data.wordlists.resolve_words` (``policy="drop"`` logs the seeds missing from the
corpus; ``"raise"`` stops).  A group with no seed in the corpus gets NaN (the thesis: "the
PMI is not computed for these seeds").  **Multi-word seeds** (``"pantalones cortos"``) can
never equal a single token, so they are reported as out-of-vocabulary and not counted;
this is also what the thesis's code did (``word in sentence`` on token lists).
"""

from __future__ import annotations

import dataclasses
import logging
import textwrap
import unicodedata
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import sparse
from scipy import stats as sps

from biaskit.core.registry import (
    CalibrationCall,
    CalibrationMeasure,
    CalibrationSupport,
    MetricValues,
    register_metric,
)
from biaskit.core.results import Alternative, TestResult, format_p_value
from biaskit.core.stats import binomial_test, proportion_ztest, z_test_mean
from biaskit.data.wordlists import OOVPolicy, resolve_words, word_list_pair

logger = logging.getLogger(__name__)

Variant = Literal["proportion", "odds_ratio", "thesis_code"]
ZeroPolicy = Literal["nan", "raise", "haldane"]
_VARIANTS = ("proportion", "odds_ratio", "thesis_code")
_ZERO = ("nan", "raise", "haldane")

__all__ = [
    "BIAS_PMI",
    "FrequencyBaseline",
    "PMIResult",
    "SentenceIncidence",
    "bias_pmi",
    "bias_pmi_groups",
    "bias_pmi_table",
    "frequency_baseline",
    "gender_pmi_values",
    "pmi_from_counts",
    "pmi_test",
]


# --------------------------------------------------------------------------- counting


class SentenceIncidence:
    """Binary sentence x vocabulary incidence matrix (``scipy.sparse`` CSR) for one-pass counting.

    ``M[s, w] = 1`` when word ``w`` occurs in sentence ``s``.  For word groups given as an
    indicator matrix ``G`` (vocabulary x groups), ``P = (M @ G) > 0`` says which sentences
    mention each group, and one sparse product ``P_rows.T @ P_cols`` gives the number of
    sentences mentioning both groups, for every pair of groups at once.  Build it once per
    corpus and pass it to the PMI functions instead of the sentences to reuse it.
    """

    def __init__(self, sentences: Sequence[Sequence[str]]) -> None:
        if isinstance(sentences, (str, bytes)) or len(sentences) == 0:
            raise ValueError("need a non-empty list of sentences (each a list of tokens)")
        vocab: dict[str, int] = {}
        indptr = np.zeros(len(sentences) + 1, dtype=np.int64)
        indices = array("i")  # compact growing buffer of column ids (C ints)
        for i, sent in enumerate(sentences):
            if isinstance(sent, str):
                raise ValueError(
                    f"sentence {i} is a string, not a list of tokens; tokenise first "
                    "(biaskit.data.corpus.load_corpus)"
                )
            indices.extend({vocab.setdefault(w, len(vocab)) for w in sent})
            indptr[i + 1] = len(indices)
        cols = np.frombuffer(indices, dtype=np.intc).astype(np.int32, copy=False)
        data = np.ones(cols.size, dtype=np.int32)
        self.matrix = sparse.csr_matrix((data, cols, indptr), shape=(len(sentences), len(vocab)))
        self.vocabulary: dict[str, int] = vocab

    @property
    def n_sentences(self) -> int:
        return self.matrix.shape[0]

    def __contains__(self, word: object) -> bool:
        return word in self.vocabulary

    def __len__(self) -> int:
        return len(self.vocabulary)

    def indicator(self, groups: Sequence[Sequence[str]]) -> sparse.csc_matrix:
        """Vocabulary x groups 0/1 matrix; words absent from the corpus are ignored."""
        rows: list[int] = []
        cols: list[int] = []
        for g, words in enumerate(groups):
            ids = {self.vocabulary[w] for w in words if w in self.vocabulary}
            rows.extend(ids)
            cols.extend([g] * len(ids))
        data = np.ones(len(rows), dtype=np.int32)
        return sparse.csc_matrix((data, (rows, cols)), shape=(len(self.vocabulary), len(groups)))

    def word_counts(self, groups: Sequence[Sequence[str]]) -> sparse.csr_matrix:
        """Sentences x groups: number of distinct words of each group in each sentence."""
        out = (self.matrix @ self.indicator(groups)).tocsr()
        out.eliminate_zeros()
        return out

    def presence(self, groups: Sequence[Sequence[str]]) -> sparse.csr_matrix:
        """Sentences x groups 0/1: does the sentence contain at least one word of the group."""
        out = self.word_counts(groups)
        out.data[:] = 1
        return out

    def sentence_counts(self, groups: Sequence[Sequence[str]]) -> np.ndarray:
        """Number of sentences containing at least one word of each group."""
        return np.asarray(self.presence(groups).sum(axis=0), dtype=np.int64).ravel()

    def cooccurrence(
        self, row_groups: Sequence[Sequence[str]], col_groups: Sequence[Sequence[str]]
    ) -> np.ndarray:
        """``C[i, j]`` = number of sentences with a word of ``row_groups[i]`` and one of ``col_groups[j]``."""
        pr = self.presence(row_groups)
        pc = self.presence(col_groups)
        return np.asarray((pr.T @ pc).toarray(), dtype=np.int64)

    def pair_counts(
        self, row_groups: Sequence[Sequence[str]], col_groups: Sequence[Sequence[str]]
    ) -> np.ndarray:
        r"""``C[i, j]`` = :math:`\sum_{a \in R_i, x \in C_j} f(a, x)`, f(a, x) = sentences containing both
        words.

        Equals :math:`\sum_s |R_i \cap s| \cdot |C_j \cap s|`: the pair frequencies of the
        frequency baseline (seed 000 eq. 3.2, generalised to word sets).
        """
        wr = self.word_counts(row_groups).astype(np.int64)
        wc = self.word_counts(col_groups).astype(np.int64)
        return np.asarray((wr.T @ wc).toarray(), dtype=np.int64)


def _as_incidence(corpus: SentenceIncidence | Sequence[Sequence[str]]) -> SentenceIncidence:
    return corpus if isinstance(corpus, SentenceIncidence) else SentenceIncidence(corpus)


def _normalise(words: Sequence[str], lowercase: bool) -> list[str]:
    if isinstance(words, str):
        raise ValueError(f"expected a list of words, got the string {words!r}")
    out = []
    for w in words:
        w = unicodedata.normalize("NFC", str(w).strip())
        out.append(w.lower() if lowercase else w)
    return list(dict.fromkeys(out))


def _resolve(
    words: Sequence[str], inc: SentenceIncidence, name: str, policy: OOVPolicy, lowercase: bool
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Apply the OOV policy; returns (kept, missing).  Raises when nothing is left."""
    ws = _normalise(words, lowercase)
    if not ws:
        raise ValueError(f"{name} is empty")
    multi = [w for w in ws if len(w.split()) > 1]
    if multi and not all(w in inc for w in multi):
        logger.info(
            "%s: multi-word seeds %s cannot match a single token; they count as out of vocabulary",
            name,
            multi,
        )
    res = resolve_words(ws, inc.vocabulary, name=name, policy=policy, min_size=1)
    return res.kept, res.missing


# --------------------------------------------------------------------------- formula


@dataclass(frozen=True)
class PMIResult:
    """One BIAS_PMI(X, A, B) value with its four counts (seed 000 section 3.1.2)."""

    value: float
    variant: str
    f_AX: int
    f_AnX: int
    f_BX: int
    f_BnX: int
    se: float | None = None
    ci: tuple[float, float] | None = None
    confidence: float | None = None
    correction: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def __float__(self) -> float:
        return float(self.value)

    def summary(self, alpha: float = 0.05) -> str:
        r"""BIAS_PMI in plain words: the value, what it means as a ratio, the four counts and, when a
        standard error is known, an approximate Wald test of 0 at level ``alpha``.

        The Wald test is :math:`z = \mathrm{BIAS_{PMI}} / se` against the standard normal, the test
        that goes with the interval of ``confidence=`` (Katz's or Woolf's standard error, see the module
        docstring); like that interval it treats the A- and B-sentences as independent samples, so read
        it as approximate.  The thesis tests BIAS_PMI over many phenomena instead (:func:`pmi_test`).
        """
        lines = [f"BIAS_PMI ({self.variant}) = {self.value:.4f}"]
        if np.isfinite(self.value):
            ratio = float(np.exp(self.value))
            what = {"proportion": "the probability", "odds_ratio": "the odds"}.get(
                self.variant, "the odds (as the thesis's code computes them)"
            )
            lines.append(
                f"  {what} that a sentence mentioning group A also mentions the phenomenon X is {ratio:.3f} "
                "times that for group B (BIAS_PMI > 0: X goes with A more than with B; < 0: with B; 0: "
                "equally)"
            )
        else:
            lines.append("  undefined: a zero count (see the note in details)")
        lines.append(
            f"  sentences: A with X {self.f_AX:,}, A without X {self.f_AnX:,}, "
            f"B with X {self.f_BX:,}, B without X {self.f_BnX:,}"
            + (" (Haldane +0.5 correction)" if self.correction else "")
        )
        if self.ci is not None:
            level = f"{100 * self.confidence:.0f}% " if self.confidence else ""
            lines.append(f"  {level}confidence interval = [{self.ci[0]:.4f}, {self.ci[1]:.4f}]")
        if self.se is not None and self.se > 0 and np.isfinite(self.value):
            p = float(2 * sps.norm.sf(abs(self.value / self.se)))
            lines.append(
                f"  approximate Wald test of BIAS_PMI = 0: z = {self.value / self.se:.3f}, "
                f"p-value = {format_p_value(p)} (two-sided)"
            )
            if p < alpha:
                lines.append(
                    f"  -> at alpha = {alpha}: evidence that X co-occurs unequally with A and B (bias)."
                )
            else:
                lines.append(
                    f"  -> at alpha = {alpha}: the counts are compatible with X co-occurring equally with A "
                    "and B."
                )
        else:
            lines.append(
                "  no test of a single value without its standard error; pmi_test tests many phenomena"
            )
        return "\n".join(lines)


def _pmi_arrays(
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    d: np.ndarray,
    *,
    variant: Variant,
    zero: ZeroPolicy,
    labels: Sequence[str],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str | None]]:
    """Vectorised BIAS_PMI over groups; returns (value, se, corrected mask, notes)."""
    if variant not in _VARIANTS:
        raise ValueError(f"variant must be one of {_VARIANTS}, got {variant!r}")
    if zero not in _ZERO:
        raise ValueError(f"zero must be one of {_ZERO}, got {zero!r}")
    if variant == "thesis_code" and zero == "haldane":
        raise ValueError(
            "variant='thesis_code' reproduces the thesis's own zero handling; use zero='nan' or 'raise'"
        )
    a, b, c, d = (np.asarray(v, dtype=float) for v in (a, b, c, d))
    if np.any(np.array([a, b, c, d]) < 0):
        raise ValueError("counts must be non-negative")
    notes: list[str | None] = [None] * a.size
    n_a, n_b = a + b, c + d
    no_group = (n_a == 0) | (n_b == 0)
    if variant == "odds_ratio":
        undefined = (a == 0) | (b == 0) | (c == 0) | (d == 0)
    else:  # proportion, and the thesis's code drops the group when a or c is 0
        undefined = (a == 0) | (c == 0)
    undefined &= ~no_group
    corrected = np.zeros(a.size, dtype=bool)
    if undefined.any():
        bad = [
            f"{labels[i]} (f_AX={int(a[i])}, f_AnX={int(b[i])}, f_BX={int(c[i])}, f_BnX={int(d[i])})"
            for i in np.flatnonzero(undefined)
        ]
        if zero == "raise":
            raise ValueError(
                f"BIAS_PMI ({variant}) is undefined because of zero counts for: {bad}; "
                "use zero='nan' to skip these groups or zero='haldane' for a continuity correction"
            )
        if zero == "haldane":
            corrected = undefined
            a, b, c, d = (np.where(corrected, v + 0.5, v) for v in (a, b, c, d))
            logger.info("BIAS_PMI: Haldane-Anscombe correction (+0.5 to every count) for %s", bad)
            for i in np.flatnonzero(corrected):
                notes[i] = "haldane +0.5"
        else:
            logger.warning("BIAS_PMI (%s) undefined (zero counts), set to NaN for: %s", variant, bad)
            for i in np.flatnonzero(undefined):
                notes[i] = "undefined: zero count"
    with np.errstate(divide="ignore", invalid="ignore"):
        log_rr = np.log(a) - np.log(a + b) - np.log(c) + np.log(c + d)
        log_or = np.log(a) - np.log(b) - np.log(c) + np.log(d)
        se_rr = np.sqrt(1 / a - 1 / (a + b) + 1 / c - 1 / (c + d))
        se_or = np.sqrt(1 / a + 1 / b + 1 / c + 1 / d)
        if variant == "proportion":
            value, se = log_rr, se_rr
        elif variant == "odds_ratio":
            value, se = log_or, se_or
        else:
            use_prop = (b == 0) | (d == 0)
            value = np.where(use_prop, log_rr, log_or)
            se = np.where(use_prop, se_rr, se_or)
            for i in np.flatnonzero(use_prop & ~undefined & ~no_group):
                notes[i] = "thesis fallback: f_AnX or f_BnX = 0, proportion formula"
    bad_mask = (undefined & ~corrected) | no_group
    value = np.where(bad_mask, np.nan, value)
    se = np.where(bad_mask | ~np.isfinite(se), np.nan, se)
    for i in np.flatnonzero(no_group):
        notes[i] = "undefined: no sentence mentions A or B"
    return value, se, corrected, notes


def pmi_from_counts(
    f_AX: int,
    f_AnX: int,
    f_BX: int,
    f_BnX: int,
    *,
    variant: Variant = "proportion",
    zero: ZeroPolicy = "nan",
    confidence: float | None = None,
) -> PMIResult:
    r"""BIAS_PMI from the four sentence counts (seed 000 section 3.1.2; Valentini et al. 2021).

    .. math::

        \text{proportion: } \log\frac{f_{AX}/(f_{AX}+f_{AnX})}{f_{BX}/(f_{BX}+f_{BnX})}, \qquad
        \text{odds\_ratio: } \log\frac{f_{AX}/f_{AnX}}{f_{BX}/f_{BnX}}

    See the module docstring for the meaning of the counts, ``variant="thesis_code"``, the
    zero policy and the Katz / Woolf confidence intervals.
    """
    counts = [f_AX, f_AnX, f_BX, f_BnX]
    if any(int(v) != v for v in counts):
        raise ValueError(f"counts must be integers, got {counts}")
    if f_AX + f_AnX == 0 or f_BX + f_BnX == 0:
        raise ValueError(
            "no sentence mentions A (f_AX + f_AnX = 0) or B (f_BX + f_BnX = 0): BIAS_PMI undefined"
        )
    value, se, corrected, notes = _pmi_arrays(
        np.array([f_AX]), np.array([f_AnX]), np.array([f_BX]), np.array([f_BnX]),
        variant=variant, zero=zero, labels=["X"],
    )  # fmt: skip
    return _make_result(
        float(value[0]), float(se[0]), variant, counts, confidence, bool(corrected[0]), notes[0]
    )


def _ci(value: float, se: float, confidence: float | None) -> tuple[float, float] | None:
    if confidence is None or not np.isfinite(value) or not np.isfinite(se):
        return None
    if not 0 < confidence < 1:
        raise ValueError("confidence must lie strictly between 0 and 1")
    z = sps.norm.ppf(0.5 + confidence / 2)
    return (value - z * se, value + z * se)


def _make_result(
    value: float,
    se: float,
    variant: str,
    counts: Sequence[int],
    confidence: float | None,
    corrected: bool,
    note: str | None,
    details: dict[str, Any] | None = None,
) -> PMIResult:
    if confidence is not None and not 0 < confidence < 1:
        raise ValueError("confidence must lie strictly between 0 and 1")
    return PMIResult(
        value=value,
        variant=variant,
        f_AX=int(counts[0]),
        f_AnX=int(counts[1]),
        f_BX=int(counts[2]),
        f_BnX=int(counts[3]),
        se=se if np.isfinite(se) else None,
        ci=_ci(value, se, confidence),
        confidence=confidence,
        correction="haldane" if corrected else None,
        details={"note": note, **(details or {})},
    )


# --------------------------------------------------------------------------- many groups at once


def bias_pmi_table(
    targets: Mapping[str, Sequence[str]],
    characteristics: Mapping[str, tuple[Sequence[str], Sequence[str]]],
    corpus: SentenceIncidence | Sequence[Sequence[str]],
    *,
    variant: Variant = "proportion",
    zero: ZeroPolicy = "nan",
    confidence: float | None = None,
    policy: OOVPolicy = "drop",
    lowercase: bool = True,
) -> pd.DataFrame:
    """BIAS_PMI(X_i, A_h, B_h) for every target group X_i and characteristic h, in one pass.

    Seed 000 sections 3.1.2 and 3.5.1 (E^PMI): the thesis computes this for the 30 neutral
    groups (appendix A) and two characteristics (gender: ``espacio_m`` vs ``espacio_f``;
    religion: ``christianity words`` vs ``islam words``).

    All counts come from two sparse products over one sentence x vocabulary incidence
    matrix (:class:`SentenceIncidence`), whatever the number of groups.

    Parameters
    ----------
    targets:
        ``{name: words}``, the phenomena X_i.
    characteristics:
        ``{name: (A, B)}``, the two social groups of each characteristic.
    corpus:
        Tokenised sentences (:func:`biaskit.data.corpus.load_corpus`) or a prebuilt
        :class:`SentenceIncidence`.
    variant, zero, confidence:
        See the module docstring.
    policy:
        OOV policy for the seeds (:func:`biaskit.data.wordlists.resolve_words`).  An attribute set
        with no word in the corpus always raises; a target group with none gets NaN
        (``policy="drop"``) or raises (``"raise"``).
    lowercase:
        Lower-case the seeds (the corpus is lower-cased by default).

    Returns
    -------
    pandas.DataFrame
        One row per (characteristic, group): the four counts ``f_AX, f_AnX, f_BX, f_BnX``,
        ``pmi``, ``se`` (and ``ci_low``, ``ci_high`` with ``confidence``), seed coverage
        (``n_seeds``, ``n_found``, ``missing``) and a ``note`` for undefined / corrected values.
    """
    if not targets:
        raise ValueError("targets is empty: give at least one group X")
    if not characteristics:
        raise ValueError("characteristics is empty: give at least one (A, B) pair")
    inc = _as_incidence(corpus)

    attr_sets: list[tuple[str, ...]] = []
    for ch, pair in characteristics.items():
        words_a, words_b = word_list_pair(ch, pair, what="characteristic")
        kept_a, _ = _resolve(words_a, inc, f"{ch}: attribute set A", policy, lowercase)
        kept_b, _ = _resolve(words_b, inc, f"{ch}: attribute set B", policy, lowercase)
        overlap = set(kept_a) & set(kept_b)
        if overlap:
            logger.warning("%s: words %s are in both A and B", ch, sorted(overlap))
        attr_sets.extend([kept_a, kept_b])

    names = list(targets)
    target_sets: list[tuple[str, ...]] = []
    n_seeds: list[int] = []
    missing_l: list[tuple[str, ...]] = []
    for name in names:
        words = _normalise(targets[name], lowercase)
        if not words:
            raise ValueError(f"target group {name!r} is empty")
        n_seeds.append(len(words))
        try:
            kept, missing = _resolve(words, inc, f"target {name!r}", policy, lowercase)
        except ValueError:  # nothing left after the OOV policy "drop" (policy "raise" raised OOVError)
            logger.warning("target %r: no seed occurs in the corpus; its BIAS_PMI is NaN", name)
            kept, missing = (), tuple(words)
        target_sets.append(kept)
        missing_l.append(missing)

    n_attr = inc.sentence_counts(attr_sets)
    co = inc.cooccurrence(attr_sets, target_sets)  # (2 * n_characteristics) x n_targets

    frames = []
    has_seed = np.array([len(t) > 0 for t in target_sets])
    for k, ch in enumerate(characteristics):
        a = co[2 * k]
        c = co[2 * k + 1]
        b = n_attr[2 * k] - a
        d = n_attr[2 * k + 1] - c
        labels = [f"{ch}/{n}" for n in names]
        idx = np.flatnonzero(has_seed)
        value = np.full(len(names), np.nan)
        se = np.full(len(names), np.nan)
        notes: list[str | None] = ["no seed in the corpus"] * len(names)
        if idx.size:
            v, s, _, nts = _pmi_arrays(
                a[idx], b[idx], c[idx], d[idx], variant=variant, zero=zero, labels=[labels[i] for i in idx]
            )
            value[idx], se[idx] = v, s
            for j, i in enumerate(idx):
                notes[i] = nts[j]
        frame = pd.DataFrame(
            {
                "characteristic": ch,
                "group": names,
                "n_seeds": n_seeds,
                "n_found": [len(t) for t in target_sets],
                "missing": [list(m) for m in missing_l],
                "f_AX": a,
                "f_AnX": b,
                "f_BX": c,
                "f_BnX": d,
                "pmi": value,
                "se": se,
                "note": notes,
            }
        )
        if confidence is not None:
            if not 0 < confidence < 1:
                raise ValueError("confidence must lie strictly between 0 and 1")
            z = sps.norm.ppf(0.5 + confidence / 2)
            frame["ci_low"] = frame["pmi"] - z * frame["se"]
            frame["ci_high"] = frame["pmi"] + z * frame["se"]
        frames.append(frame)
    out = pd.concat(frames, ignore_index=True)
    out.attrs.update(variant=variant, zero=zero, confidence=confidence, n_sentences=inc.n_sentences)
    return out


def bias_pmi_groups(
    targets: Mapping[str, Sequence[str]],
    A: Sequence[str],
    B: Sequence[str],
    corpus: SentenceIncidence | Sequence[Sequence[str]],
    **kwargs: Any,
) -> pd.DataFrame:
    """BIAS_PMI(X_i, A, B) for many groups X_i at once, indexed by group name.

    Same as :func:`bias_pmi_table` with one characteristic; keyword arguments are passed on.
    """
    table = bias_pmi_table(targets, {"A vs B": (A, B)}, corpus, **kwargs)
    return table.drop(columns="characteristic").set_index("group")


def bias_pmi(
    X: Sequence[str],
    A: Sequence[str],
    B: Sequence[str],
    corpus: SentenceIncidence | Sequence[Sequence[str]],
    *,
    variant: Variant = "proportion",
    zero: ZeroPolicy = "nan",
    confidence: float | None = None,
    policy: OOVPolicy = "drop",
    lowercase: bool = True,
) -> PMIResult:
    r"""BIAS_PMI(X, A, B) of seed 000 section 3.1.2 (Valentini et al. 2021).

    .. math::

        BIAS_{PMI}(X, A, B) = \log \frac{f_{A,X}/(f_{A,X}+f_{A,nX})}{f_{B,X}/(f_{B,X}+f_{B,nX})}
        = \log\frac{\hat p(X\mid A)}{\hat p(X\mid B)}

    with sentence counts (module docstring).  > 0: X co-occurs relatively more with A; < 0:
    more with B; 0: equally.  A group X with no word in the corpus raises ``ValueError``.

    Examples
    --------
    >>> from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, TOY_X, toy_corpus
    >>> result = bias_pmi(TOY_X, TOY_MALE, TOY_FEMALE, toy_corpus())
    >>> result.value, result.f_AX, result.f_BX
    (0.0, 16, 16)
    """
    inc = _as_incidence(corpus)
    kept, missing = _resolve(X, inc, "target X", policy, lowercase)
    table = bias_pmi_table(
        {"X": kept},
        {"h": (A, B)},
        inc,
        variant=variant,
        zero=zero,
        confidence=confidence,
        policy=policy,
        lowercase=lowercase,
    )
    row = table.iloc[0]
    counts = [int(row[k]) for k in ("f_AX", "f_AnX", "f_BX", "f_BnX")]
    res = _make_result(
        float(row["pmi"]),
        float(row["se"]),
        variant,
        counts,
        confidence,
        row["note"] == "haldane +0.5",
        row["note"],
        {"kept": list(kept), "missing": list(missing), "n_sentences": inc.n_sentences},
    )
    return res


BIAS_PMI = bias_pmi


# --------------------------------------------------------------------------- the E^PMI test


def pmi_test(
    values: Sequence[float] | np.ndarray | pd.Series | pd.DataFrame,
    *,
    labels: Sequence[str] | None = None,
) -> TestResult:
    r"""The E^PMI test (seed 000 sections 3.1.2 step 4 and 3.5.1; Table 3.3).

    A one-sample z test (CLT approximation, :func:`biaskit.core.stats.z_test_mean`) on the mean of
    the BIAS_PMI values of n phenomena X_1..X_n (the thesis: n = 30):

    .. math:: H_0: \mu = 0 \quad\text{vs}\quad H_1: \mu \ne 0, \qquad
              z = \bar{x} / (s / \sqrt{n})

    NaN values (groups whose BIAS_PMI is undefined or that have no seed in the corpus) are
    dropped with a logged warning, as the thesis's notebook did; the dropped groups are
    listed in ``details["dropped"]``.  Accepts an array, a Series (index = group names) or a
    table from :func:`bias_pmi_groups` (its ``pmi`` column).

    Examples
    --------
    >>> values = [0.4, 0.1, 0.25, -0.05, 0.3, 0.2]
    >>> result = pmi_test(values)
    >>> result.n, round(result.statistic, 3), round(result.p_value, 4)
    (6, 3.098, 0.0019)
    """
    if isinstance(values, pd.DataFrame):
        if "pmi" not in values.columns:
            raise ValueError("a DataFrame passed to pmi_test needs a 'pmi' column")
        names = list(values["group"]) if "group" in values.columns else [str(i) for i in values.index]
        arr = values["pmi"].to_numpy(dtype=float)
    elif isinstance(values, pd.Series):
        names = [str(i) for i in values.index]
        arr = values.to_numpy(dtype=float)
    else:
        arr = np.asarray(values, dtype=float).ravel()
        names = [str(i) for i in range(arr.size)]
    if labels is not None:
        if len(labels) != arr.size:
            raise ValueError(f"labels has {len(labels)} names for {arr.size} values")
        names = list(labels)
    finite = np.isfinite(arr)
    dropped = [names[i] for i in np.flatnonzero(~finite)]
    if dropped:
        logger.warning("pmi_test: dropping %d groups with undefined BIAS_PMI: %s", len(dropped), dropped)
    kept = arr[finite]
    if kept.size < 2:
        raise ValueError(f"pmi_test needs at least 2 defined BIAS_PMI values, got {kept.size}")
    res = z_test_mean(
        kept,
        0.0,
        "two-sided",
        h0="no bias (the mean BIAS_PMI over the groups is 0)",
        h1="bias (the mean BIAS_PMI over the groups differs from 0)",
    )
    return dataclasses.replace(
        res,
        method="E^PMI: one-sample z test on the mean BIAS_PMI over the groups (CLT approximation)",
        details={**res.details, "n_groups": int(arr.size), "dropped": dropped},
    )


# --------------------------------------------------------------------------- frequency baseline


@dataclass(frozen=True)
class FrequencyBaseline:
    """The frequency baseline ``prop`` of seed 000 section 3.1.1 with its two tests."""

    prop: float
    f_A: int
    f_B: int
    unit: str
    ztest: TestResult | None
    binomial: TestResult
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "prop": self.prop,
            "f_A": self.f_A,
            "f_B": self.f_B,
            "unit": self.unit,
            "ztest": self.ztest.to_dict() if self.ztest is not None else None,
            "binomial": self.binomial.to_dict(),
            "details": self.details,
        }

    def summary(self, alpha: float = 0.05) -> str:
        """The baseline in plain words: the share of X's co-occurrences that are with A, then the exact
        binomial test (and the z test, when defined) of that share against its null value at ``alpha``."""
        unit = "pairs of words" if self.unit == "pair" else "sentences"
        lines = [
            f"Frequency baseline prop = {self.prop:.4f}: of the {self.f_A + self.f_B:,} co-occurrences "
            f"({unit}) of the phenomenon X with group A or B, {self.f_A:,} are with A and {self.f_B:,} "
            "with B",
            "  prop = 0.5 means X appears as often with A as with B; above 0.5 more with A, below more "
            "with B",
            textwrap.indent(self.binomial.summary(alpha), "  "),
        ]
        if self.ztest is not None:
            lines.append(textwrap.indent(self.ztest.summary(alpha), "  "))
        return "\n".join(lines)


def frequency_baseline(
    X: Sequence[str],
    A: Sequence[str],
    B: Sequence[str],
    corpus: SentenceIncidence | Sequence[Sequence[str]],
    *,
    unit: Literal["pair", "sentence"] = "pair",
    p0: float = 0.5,
    alternative: Alternative = "two-sided",
    policy: OOVPolicy = "drop",
    lowercase: bool = True,
) -> FrequencyBaseline:
    r"""The frequency baseline of seed 000 section 3.1.1 (eq. 3.2) and its test (eq. 3.3).

    .. math::

        prop = \frac{f_{(A, X)}}{f_{(A, X)} + f_{(B, X)}}, \qquad H_0: prop = 0.5

    ``unit="pair"`` (default, the thesis's "frequency of pairs"): :math:`f_{(A,X)} =
    \sum_{a \in A}\sum_{x \in X} f(a, x)`, where f(a, x) is the number of sentences containing
    both a and x, so a sentence with two A words and one X word counts twice.
    ``unit="sentence"``: :math:`f_{(A,X)}` = number of sentences containing a word of A and a
    word of X (the ``f_AX`` of BIAS_PMI).  With single words (``A=['male']``,
    ``X=['nurse']``) both reduce to eq. 3.2.

    Tests: the z test for one proportion (:func:`biaskit.core.stats.proportion_ztest`, None when
    ``prop`` is 0 or 1) and the exact binomial test (:func:`biaskit.core.stats.binomial_test`).
    Both treat the counted pairs / sentences as independent trials, which co-occurrences in
    one text are not; read them as a first look, as the thesis does.

    Examples
    --------
    >>> from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, TOY_X, toy_corpus
    >>> baseline = frequency_baseline(TOY_X, TOY_MALE, TOY_FEMALE, toy_corpus())
    >>> baseline.f_A, baseline.f_B, baseline.prop
    (16, 16, 0.5)
    """
    if unit not in ("pair", "sentence"):
        raise ValueError(f"unit must be 'pair' or 'sentence', got {unit!r}")
    inc = _as_incidence(corpus)
    kx, _ = _resolve(X, inc, "phenomenon X", policy, lowercase)
    ka, _ = _resolve(A, inc, "social group A", policy, lowercase)
    kb, _ = _resolve(B, inc, "social group B", policy, lowercase)
    counts = inc.pair_counts([ka, kb], [kx]) if unit == "pair" else inc.cooccurrence([ka, kb], [kx])
    f_a, f_b = int(counts[0, 0]), int(counts[1, 0])
    n = f_a + f_b
    if n == 0:
        raise ValueError("X never co-occurs with A or B in the corpus: prop is undefined")
    h0 = f"no bias (prop = {p0})"
    h1 = "bias (X co-occurs more with one group)"
    ztest = None
    if 0 < f_a < n:
        ztest = proportion_ztest(f_a, n, p0, alternative, h0=h0, h1=h1)
    else:
        logger.info("frequency_baseline: prop is %s, the z test is undefined; see the binomial test", f_a / n)
    binom = binomial_test(f_a, n, p0, alternative, h0=h0, h1=h1)
    return FrequencyBaseline(
        prop=f_a / n,
        f_A=f_a,
        f_B=f_b,
        unit=unit,
        ztest=ztest,
        binomial=binom,
        details={"X": list(kx), "A": list(ka), "B": list(kb)},
    )


# --------------------------------------------------------------------------- the registry
def gender_pmi_values(corpus_tokens: Sequence[Sequence[str]], targets: Sequence[str]) -> np.ndarray:
    """BIAS_PMI(target; male words, female words) of each target in ``corpus_tokens``, sentence
    co-occurrence (seed 000 section 3.1.2), with the calibration's gendered words
    (:data:`biaskit.metrics.controls.MALE_WORDS`, :data:`~biaskit.metrics.controls.FEMALE_WORDS`)."""
    from biaskit.metrics.controls import FEMALE_WORDS, MALE_WORDS

    tab = bias_pmi_table(
        {t: [t] for t in targets}, {"gender": (list(MALE_WORDS), list(FEMALE_WORDS))}, corpus_tokens
    )
    return tab.set_index("group").reindex(list(targets))["pmi"].to_numpy(float)


def _calibration_values(call: CalibrationCall) -> MetricValues | None:
    """The calibration's values: BIAS_PMI of each profession with a vector in the planted corpus of the
    static control; ``None`` (not computed) when the control comes without its corpus."""
    if call.corpus is None:
        return None
    targets = [t for t in call.targets if t in call.model.key_to_index]
    return MetricValues(
        "pmi", "groups", np.array(targets, object), gender_pmi_values(call.corpus, targets), unit="profession"
    )


def _example() -> PMIResult:
    """BIAS_PMI of the toy maths words with the male and female words in the toy corpus."""
    from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, TOY_X, toy_corpus

    return bias_pmi(TOY_X, TOY_MALE, TOY_FEMALE, toy_corpus())


def _test_example() -> TestResult:
    """The E^PMI z test over the BIAS_PMI of each toy maths and arts word (one phenomenon each)."""
    from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, TOY_X, TOY_Y, toy_corpus

    groups = bias_pmi_groups({w: [w] for w in (*TOY_X, *TOY_Y)}, TOY_MALE, TOY_FEMALE, toy_corpus())
    return pmi_test(groups)


def _baseline_example() -> FrequencyBaseline:
    """The frequency baseline of the toy maths words with the male and female words in the toy corpus."""
    from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, TOY_X, toy_corpus

    return frequency_baseline(TOY_X, TOY_MALE, TOY_FEMALE, toy_corpus())


#: why the corpus metrics have no batch-grid support
_NO_GRID = (
    "a corpus, not a model: a grid cell gives a model and a dataset; count the corpus with "
    "biaskit.data.corpus and call the metric (notebook 01)"
)
register_metric(
    "pmi",
    label="BIAS_PMI",
    family="corpus",
    inputs=("corpus", "word sets"),
    model_kinds=(),
    directional=True,
    test="normal-approximation interval of one value; pmi_test tests the mean over many phenomena",
    citation="Maddalozzo 2023 after Valentini et al. 2022",
    section="seed 000 section 3.1.2",
    entry_point=bias_pmi,
    summary="PMI(w, female words) - PMI(w, male words) over sentence co-occurrence",
    example=_example,
    returns="PMIResult (value, the four sentence counts, se and ci; summary())",
    no_grid=_NO_GRID,
    calibration=CalibrationSupport(
        (
            CalibrationMeasure(
                key="pmi",
                label="BIAS_PMI of the corpus, mean difference",
                kind="groups",
                model_kind="static",
                values=_calibration_values,
            ),
        )
    ),
)
register_metric(
    "pmi_test",
    label="BIAS_PMI test over phenomena (E^PMI)",
    family="corpus",
    inputs=("corpus", "word sets"),
    model_kinds=(),
    directional=True,
    test="one-sample z test of the mean BIAS_PMI of n phenomena against 0",
    citation="Maddalozzo 2023 (seed 000)",
    section="seed 000 sections 3.1.2, 3.5.1",
    entry_point=pmi_test,
    summary="is the mean BIAS_PMI over many phenomena (word groups) different from 0?",
    no_grid=_NO_GRID,
    example=_test_example,
)
register_metric(
    "pmi_frequency_baseline",
    label="BIAS_PMI frequency baseline",
    family="corpus",
    inputs=("corpus", "word sets"),
    model_kinds=(),
    directional=True,
    test="exact binomial and z tests of the share of co-occurrences with A against 0.5",
    citation="Maddalozzo 2023 (seed 000)",
    section="seed 000 section 3.3",
    entry_point=frequency_baseline,
    summary="the BIAS_PMI expected from word frequencies alone",
    example=_baseline_example,
    returns="FrequencyBaseline (prop, counts, binomial and z tests; summary())",
    no_grid=_NO_GRID,
)
