"""The CrowS-Pairs bias score B_CrowS and the per-pair PLL difference M_diff.

Given, for every CrowS-Pairs example, a score (pseudo-log-likelihood, PLL) of the
stereotypical sentence ``sent_more`` and of the anti-stereotypical sentence
``sent_less``, the CrowS-Pairs metric is the percentage of pairs in which the model
gives the stereotypical sentence the higher score (Nangia et al. 2020, "CrowS-Pairs:
A Challenge Dataset for Measuring Social Biases in Masked Language Models", EMNLP;
seed 000 sections 4.1.6 and 4.2.1, experiments E^CrowS and E^Sal).  An unbiased
model scores 50%.  The thesis adds a proportion z test of H0: prop = 0.5 (seed 000
section 4.2.1, Tables 4.2 and 4.8), offered here as :func:`crows_proportion_test`.

The scores themselves come from :mod:`biaskit.lm` (or, for the thesis replay,
from :func:`biaskit.studies.replay.load_thesis_scores`); this module only compares them.  Each reading
of a pair is registered as a metric of its own, with :func:`crows_score` as its entry point: ``cp``, the
PLL of the tokens both sentences share (Nangia et al. 2020); ``sz``, the PLL of every token (Salazar et
al. 2020, "Masked Language Model Scoring"); ``aul``, all unmasked likelihood (Kaneko & Bollegala 2022,
"Unmasking the Mask"); ``ll``, a causal model's log-likelihood of the sentence (Radford et al. 2019; the
``pct_stereotype`` of lm-evaluation-harness's crows_pairs task); ``shared``, biaskit's causal counterpart
of cp (the log-likelihood of the shared tokens after the first difference).

Ties (both sentences scored the same) are rare with real models but they do occur:
in the thesis's Spanish data 7 of 1503 pairs are identical sentences after
translation (:func:`biaskit.lm.score_pairs` keeps them as exact ties and flags them
in its ``tie_reason`` column).  Two settings decide how ties are counted:

* **what is a tie** (``decimals``): ``None`` (default) compares the scores as exact
  floats; ``decimals=3`` is Nangia et al.'s ``metric.py`` (nyu-mll/crows-pairs,
  ``evaluate``): each score is first rounded with Python's ``round(score, 3)`` and
  pairs whose rounded scores are equal are "neutral", so two scores 0.0004 apart are a
  tie with ``decimals=3`` and not without;
* **how a tie counts** (``ties``): ``metric.py`` and the thesis count a tie (neutral)
  as "stereotype *not* preferred" and keep it in the denominator, metric score =
  (stereo_score + antistereo_score) / N * 100 with N = all pairs; that is the default
  here (``ties="anti"``).  ``ties="exclude"`` drops ties from the denominator and
  ``ties="half"`` counts each tie as half a success.

The number of ties is always reported.  ``crows_score(..., ties="anti", decimals=3)``
is therefore ``metric.py``'s "Metric score" exactly, given the same per-pair scores
(a pair is biased when ``sent_more`` scores higher, for ``stereo`` and ``antistereo``
rows alike).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from biaskit.core import stats as bstats
from biaskit.core.registry import (
    CalibrationCall,
    CalibrationMeasure,
    CalibrationSupport,
    GridCall,
    GridSupport,
    MetricValues,
    Option,
    register_dataset_kind,
    register_dataset_loader,
    register_metric,
)
from biaskit.core.results import Alternative, TestResult, format_p_value

__all__ = [
    "CROWS_GRID_OPTIONS",
    "CausalCrowsSummary",
    "CrowsScore",
    "TiesPolicy",
    "as_scores",
    "causal_crows_summary",
    "claims_crows_dataset",
    "grid_pair_scores",
    "reading_methods",
    "reading_options",
    "crows_pairs_test",
    "crows_proportion_test",
    "crows_score",
    "load_crows_dataset",
    "m_diff",
]

logger = logging.getLogger(__name__)

TiesPolicy = Literal["anti", "exclude", "half"]
_TIES = ("anti", "exclude", "half")


def as_scores(
    x: Sequence[float] | np.ndarray | pd.Series,
    name: str,
    *,
    what: str = "score(s)",
    advice: str = "; re-score those pairs or drop them explicitly before calling",
) -> np.ndarray:
    """``x`` as a flat float array; ``ValueError`` if it is empty or has a non-finite entry
    (the message names ``name``, the count of ``what`` and the first positions, then ``advice``).

    The input check of every function here that takes PLL scores (and of
    :mod:`biaskit.metrics.robustness`, which passes ``what="value(s)"`` and no advice)."""
    arr = np.asarray(x, dtype=float).ravel()
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise ValueError(f"{name} has {bad.size} non-finite {what} at positions {bad[:10].tolist()}{advice}")
    return arr


def m_diff(
    more_scores: Sequence[float] | np.ndarray | pd.Series,
    less_scores: Sequence[float] | np.ndarray | pd.Series,
) -> np.ndarray:
    r"""Per-pair PLL difference :math:`M_{diff} = PLL_{ster} - PLL_{anster}`.

    Positive values mean the model prefers generating the stereotypical sentence.
    Kwon et al. (2022, "An Empirical Study on Pseudo-log-likelihood Bias Measures
    for Masked Language Models Using Paraphrased Sentences", TrustNLP) call it
    ``M_diff``; the thesis uses it in seed 000 sections 4.3 (robustness method) and
    4.4.2 (``diff_cp`` / ``diff_sz``, Figure 4.12, Table 4.7).
    """
    more = as_scores(more_scores, "more_scores")
    less = as_scores(less_scores, "less_scores")
    if more.size != less.size:
        raise ValueError(
            f"more_scores and less_scores must be aligned pair by pair, got {more.size} and {less.size}"
        )
    return more - less


def _decided_diff(
    more_scores: Sequence[float] | np.ndarray | pd.Series,
    less_scores: Sequence[float] | np.ndarray | pd.Series,
    decimals: int | None,
) -> np.ndarray:
    """Per-pair ``more - less`` whose sign decides the pair: 0 exactly for a tie.

    ``decimals=None``: the exact difference (:func:`m_diff`).  ``decimals=k``: both scores are
    rounded first with Python's ``round(float(score), k)``, the rule of ``metric.py``
    (``round(score, 3)``), and the difference of the rounded scores is returned.
    """
    diff = m_diff(more_scores, less_scores)
    if decimals is None:
        return diff
    if isinstance(decimals, bool) or not isinstance(decimals, int | np.integer) or decimals < 0:
        raise ValueError(f"decimals must be None or an integer >= 0 (metric.py uses 3), got {decimals!r}")
    k = int(decimals)
    more = np.array([round(float(x), k) for x in np.asarray(more_scores, dtype=float).ravel()])
    less = np.array([round(float(x), k) for x in np.asarray(less_scores, dtype=float).ravel()])
    return more - less


def _successes(diff: np.ndarray, ties: str) -> tuple[float, int, int]:
    """(successes, denominator, n_ties) under the ties policy."""
    if ties not in _TIES:
        raise ValueError(f"ties must be one of {_TIES}, got {ties!r}")
    n_ties = int(np.count_nonzero(diff == 0))
    n_stereo = int(np.count_nonzero(diff > 0))
    if ties == "anti":
        return float(n_stereo), int(diff.size), n_ties
    if ties == "exclude":
        return float(n_stereo), int(diff.size - n_ties), n_ties
    return n_stereo + 0.5 * n_ties, int(diff.size), n_ties


@dataclass(frozen=True)
class CrowsScore:
    """B_CrowS with its counts, overall and (optionally) per bias type.

    Attributes
    ----------
    score:
        B_CrowS in percent (50 = no preference).
    n:
        Pairs in the denominator (all pairs, or non-tied pairs with ``ties="exclude"``).
    n_stereo:
        Pairs whose stereotypical sentence scored strictly higher.
    n_ties:
        Tied pairs: scored exactly equal, or (``decimals``) equal once rounded.
    ties:
        The ties policy used.
    decimals:
        ``None`` (exact comparison) or the number of decimals scores were rounded to
        before comparing (3 = ``metric.py``).
    by_type:
        ``None`` or a DataFrame indexed by bias type with columns ``n``, ``n_stereo``,
        ``n_ties``, ``score`` (percent) and ``p_value`` (exact binomial test of
        H0: proportion = 0.5, two-sided; exact because some types have few pairs).
    per_pair:
        The raw per-pair values: ``score(sent_more) - score(sent_less)`` of every pair, in input
        order (after rounding each score to ``decimals`` when given): > 0 the stereotypical
        sentence scored higher, 0 a tie.  ``None`` when not kept; not part of :meth:`to_dict`.
    """

    score: float
    n: int
    n_stereo: int
    n_ties: int
    ties: str = "anti"
    by_type: pd.DataFrame | None = field(default=None, compare=False)
    decimals: int | None = None
    per_pair: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def proportion(self) -> float:
        """B_CrowS as a proportion in [0, 1] (the thesis's ``prop``)."""
        return self.score / 100.0

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "score": self.score,
            "n": self.n,
            "n_stereo": self.n_stereo,
            "n_ties": self.n_ties,
            "ties": self.ties,
            "decimals": self.decimals,
        }
        if self.by_type is not None:
            d["by_type"] = self.by_type.reset_index().to_dict(orient="records")
        return d

    def summary(self, alpha: float = 0.05) -> str:
        """B_CrowS in plain words, with an exact binomial test of 50 % overall and per bias type.

        The overall test is :func:`biaskit.core.stats.binomial_test` of the pairs counted as preferring
        the stereotype (rounded to an integer with ``ties="half"``) out of :attr:`n` against 0.5,
        two-sided (the exact test :func:`crows_by_bias_type` reports; the thesis's z test is
        :func:`crows_proportion_test`).  Per bias type the p-values are those of :attr:`by_type`.
        """
        count = round(self.score * self.n / 100)
        test = bstats.binomial_test(count, self.n, 0.5)
        lines = [
            f"CrowS-Pairs bias score B_CrowS = {self.score:.2f}% of {self.n:,} sentence pairs",
            f"  the model gave the stereotypical sentence the higher score in {self.n_stereo:,} pairs; "
            "50% means no preference, above 50% a preference for the stereotypical sentences, "
            "below 50% for the anti-stereotypical ones",
        ]
        if self.n_ties:
            lines.append(f"  {self.n_ties:,} tied pair(s): {_TIES_WORDS.get(self.ties, self.ties)}")
        p = test.p_value
        lines.append(f"  exact binomial test of 50%: p-value = {format_p_value(p)} (two-sided)")
        if p is not None and p < alpha:
            side = "stereotypical" if self.score > 50 else "anti-stereotypical"
            lines.append(
                f"  -> at alpha = {alpha} the share differs significantly from 50%: evidence that the model "
                f"prefers the {side} sentences (bias)."
            )
        else:
            lines.append(
                f"  -> at alpha = {alpha} the share is not significantly different from 50%: "
                "the data are compatible with no preference."
            )
        if self.by_type is not None and len(self.by_type):
            lines.append("  by bias type (exact binomial test of 50% in each type; * = p < alpha):")
            for bt, r in self.by_type.iterrows():
                pv = float(r["p_value"])
                star = " *" if np.isfinite(pv) and pv < alpha else ""
                lines.append(
                    f"    {bt}: {float(r['score']):.1f}% of {int(r['n']):,} pairs, "
                    f"p-value = {format_p_value(pv)}{star}"
                )
        return "\n".join(lines)


_TIES_WORDS = {
    "anti": "counted as not preferring the stereotype and kept in the total (as the official metric.py)",
    "exclude": "left out of the total",
    "half": "each counted as half a preference for the stereotype",
}


def crows_score(
    more_scores: Sequence[float] | np.ndarray | pd.Series,
    less_scores: Sequence[float] | np.ndarray | pd.Series,
    bias_types: Sequence[str] | np.ndarray | pd.Series | None = None,
    *,
    ties: TiesPolicy = "anti",
    decimals: int | None = None,
) -> CrowsScore:
    r"""CrowS-Pairs bias score B_CrowS (Nangia et al. 2020; seed 000 sections 4.1.6, 4.2.1).

    .. math::

        B_{CrowS} = \frac{100}{N} \sum_{i=1}^{N} \mathbb{1}\left[PLL(S^{ster}_i) > PLL(S^{anster}_i)\right]

    ``more_scores[i]`` / ``less_scores[i]`` are the scores of the stereotypical /
    anti-stereotypical sentence of pair ``i`` (any score where higher = more likely:
    the ``cp`` or ``sz`` PLL, AUL ...).  With ``bias_types`` the score is also
    broken down by bias type (``CrowsScore.by_type``).  Ties: see the module
    docstring (default ``"anti"``, as Nangia et al.'s ``metric.py`` and the thesis).
    ``decimals``: ``None`` compares exact floats (default); ``3`` rounds each score with
    ``round(score, 3)`` first, as ``metric.py`` (nyu-mll/crows-pairs) does, so that
    ``ties="anti", decimals=3`` reproduces its "Metric score" = (stereo_score +
    antistereo_score) / N * 100.

    Example: the thesis's BETO ``cp`` scores give 798 / 1503 = 53.09%
    (Table 4.2 prints prop = 0.53).

    Examples
    --------
    >>> more = [-10.0, -12.5, -9.0, -11.0]
    >>> less = [-11.0, -12.0, -9.5, -11.0]
    >>> score = crows_score(more, less, ["gender", "gender", "race", "race"])
    >>> score.n, round(score.score, 3), score.n_ties
    (4, 50.0, 1)
    """
    diff = _decided_diff(more_scores, less_scores, decimals)
    succ, denom, n_ties = _successes(diff, ties)
    if denom == 0:
        raise ValueError("every pair is a tie; B_CrowS is undefined with ties='exclude'")
    if n_ties:
        logger.info("crows_score: %d tied pair(s) handled with ties=%r", n_ties, ties)
    by_type = None
    if bias_types is not None:
        types = np.asarray(bias_types, dtype=object).ravel()
        if types.size != diff.size:
            raise ValueError(f"bias_types has {types.size} entries for {diff.size} pairs")
        missing = np.flatnonzero(pd.isna(types))
        if missing.size:
            raise ValueError(f"bias_types is missing at positions {missing[:10].tolist()}")
        rows = []
        for t in sorted(set(types.tolist())):
            d = diff[types == t]
            s, n, nt = _successes(d, ties)
            p = bstats.binomial_test(round(s), n, 0.5).p_value if n > 0 else float("nan")
            rows.append(
                {
                    "bias_type": t,
                    "n": n,
                    "n_stereo": int(np.count_nonzero(d > 0)),
                    "n_ties": nt,
                    "score": s / n * 100 if n else float("nan"),
                    "p_value": p,
                }
            )
        by_type = pd.DataFrame(rows).set_index("bias_type")
    return CrowsScore(
        score=succ / denom * 100,  # metric.py's order of operations: equal to its float exactly
        n=denom,
        n_stereo=int(np.count_nonzero(diff > 0)),
        n_ties=n_ties,
        ties=ties,
        by_type=by_type,
        decimals=decimals,
        per_pair=diff,
    )


def crows_proportion_test(
    more_scores: Sequence[float] | np.ndarray | pd.Series,
    less_scores: Sequence[float] | np.ndarray | pd.Series,
    *,
    p0: float = 0.5,
    alternative: Alternative = "two-sided",
    ties: TiesPolicy = "anti",
    exact: bool = False,
    decimals: int | None = None,
) -> TestResult:
    r"""Test H0: B_CrowS / 100 = p0 (seed 000 section 4.2.1, E^CrowS / E^Sal; Tables 4.2, 4.8).

    .. math:: z = \frac{\hat{p} - p_0}{\sqrt{\hat{p}(1-\hat{p})/N}}, \qquad \hat{p} = B_{CrowS}/100

    The z test with the sample-proportion variance
    (:func:`biaskit.core.stats.proportion_ztest`, statsmodels' ``proportions_ztest``) is the
    one the thesis used; it reproduces Table 4.2 (cp: p = 0.016; sz: p ≈ 0).
    ``exact=True`` uses the exact binomial test instead.  With ``ties="half"`` the
    success count is rounded to an integer for the test.  ``ties`` and ``decimals``
    (``3`` = ``metric.py``'s rounding before comparing) as in :func:`crows_score`.
    """
    diff = _decided_diff(more_scores, less_scores, decimals)
    succ, denom, n_ties = _successes(diff, ties)
    count = round(succ)
    kwargs = {
        "h0": f"no preference (proportion of pairs preferring the stereotype = {p0})",
        "h1": "a preference between stereotypical and anti-stereotypical sentences (bias)",
    }
    if exact:
        res = bstats.binomial_test(count, denom, p0, alternative, **kwargs)
    else:
        res = bstats.proportion_ztest(count, denom, p0, alternative, **kwargs)
    details = dict(res.details)
    details.update(
        {"n_ties": n_ties, "ties": ties, "decimals": decimals, "score_percent": succ / denom * 100}
    )
    return dataclasses.replace(res, details=details)


@dataclass
class CausalCrowsSummary:
    r"""CrowS-Pairs on a causal model as lm-evaluation-harness reports it, with standard errors.

    Attributes
    ----------
    pct_stereotype:
        Share (in percent) of pairs whose ``sent_more`` has the higher log-likelihood
        (lm-evaluation-harness's ``pct_stereotype``, there a proportion).
    pct_stereotype_se:
        Its standard error, in percent: sample standard deviation (ddof 1) of the 0/1 outcomes over
        :math:`\sqrt{n}`, lm-evaluation-harness's ``mean_stderr``.
    likelihood_difference, likelihood_difference_se:
        Mean of :math:`|\log P(\text{sent\_more}) - \log P(\text{sent\_less})|` (nats) and its
        standard error (same rule).
    n:
        Pairs.
    by_type:
        ``None`` or one row per bias type with the same columns.
    """

    pct_stereotype: float
    pct_stereotype_se: float
    likelihood_difference: float
    likelihood_difference_se: float
    n: int
    by_type: pd.DataFrame | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            k: getattr(self, k)
            for k in (
                "pct_stereotype",
                "pct_stereotype_se",
                "likelihood_difference",
                "likelihood_difference_se",
                "n",
            )
        }
        if self.by_type is not None:
            d["by_type"] = self.by_type.reset_index().to_dict(orient="records")
        return d

    def summary(self) -> str:
        """Two plain lines: the share preferring the stereotype and the mean size of the difference."""
        return (
            f"sent_more more likely in {self.pct_stereotype:.1f}% of {self.n:,} pairs "
            f"(standard error {self.pct_stereotype_se:.1f} points; 50% = no preference)\n"
            f"mean |log-likelihood difference| {self.likelihood_difference:.3f} nats "
            f"(standard error {self.likelihood_difference_se:.3f})"
        )


def _mean_se(x: np.ndarray) -> tuple[float, float]:
    n = len(x)
    return float(x.mean()), (float(x.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan"))


def causal_crows_summary(
    more_scores: Sequence[float] | np.ndarray | pd.Series,
    less_scores: Sequence[float] | np.ndarray | pd.Series,
    bias_types: Sequence[Any] | None = None,
) -> CausalCrowsSummary:
    r"""``pct_stereotype`` and ``likelihood_difference`` of lm-evaluation-harness's CrowS-Pairs task.

    For each pair, with :math:`\ell_1, \ell_2` the log-likelihoods of ``sent_more`` and ``sent_less``
    (``score_pairs(causal_lm, ..., "ll")``: each sentence scored after the BOS token, no end token, as
    the harness scores a continuation of an empty context), the harness's ``process_results``
    (``lm_eval/tasks/crows_pairs/utils.py``) gives :math:`acc = 1[\ell_1 > \ell_2]` and
    :math:`diff = |\ell_1 - \ell_2|`; both are averaged over pairs (``aggregation: mean``) and reported
    with the harness's standard error of a mean.  A tie counts as "not stereotypical" (:math:`\ell_1 >
    \ell_2` is false), as in the harness and as ``ties="anti"`` of :func:`crows_score`; ``pct_stereotype``
    is therefore :func:`crows_score` with its defaults, with a standard error added.  The harness
    ignores ``stereo_antistereo``, and so does this summary.  ``NaN`` scores raise ``ValueError``.
    """
    more = as_scores(more_scores, "more_scores")
    less = as_scores(less_scores, "less_scores")
    if len(more) != len(less):
        raise ValueError(f"more_scores has {len(more)} values but less_scores has {len(less)}")
    if len(more) == 0:
        raise ValueError("no pairs to summarise")
    acc = (more > less).astype(float)
    diff = np.abs(more - less)
    p, p_se = _mean_se(acc)
    d, d_se = _mean_se(diff)
    by_type = None
    if bias_types is not None:
        bt = pd.Series(list(bias_types), name="bias_type")
        if len(bt) != len(more):
            raise ValueError("bias_types must have one entry per pair")
        rows = []
        for t, idx in bt.groupby(bt, sort=True).groups.items():
            ii = np.asarray(list(idx))
            tp, tp_se = _mean_se(acc[ii])
            td, td_se = _mean_se(diff[ii])
            rows.append(
                {
                    "bias_type": t,
                    "n": len(ii),
                    "pct_stereotype": 100 * tp,
                    "pct_stereotype_se": 100 * tp_se,
                    "likelihood_difference": td,
                    "likelihood_difference_se": td_se,
                }
            )
        by_type = pd.DataFrame(rows).set_index("bias_type")
    return CausalCrowsSummary(100 * p, 100 * p_se, d, d_se, len(more), by_type)


# --------------------------------------------------------------------------- scoring a CrowS-Pairs frame
def crows_by_bias_type(
    lm: Any,
    pairs: pd.DataFrame,
    *,
    metric: str = "cp",
    batch_size: int = 64,
    cache: bool = True,
    unk: str = "score",
    progress: bool = False,
) -> tuple[Any, Any, Any]:
    r"""B_CrowS overall and per bias type (Nangia et al. 2020; seed 001 section 4.4, eq. 8).

    .. math:: B_{CrowS} = \frac{100}{N} \sum_{(s_s, s_a)} \mathbb{1}[pll(s_s) > pll(s_a)]

    Scores the pairs with :func:`biaskit.lm.score_pairs` (``metric="cp"``: the official
    CrowS-Pairs masking of the shared tokens; when ``pairs`` has a ``stereo_antistereo``
    column, as the English CrowS-Pairs of :func:`biaskit.data.datasets.load_crows_pairs_en`, each
    pair is aligned in the order of the official ``metric.py``: ``direction=``) and counts
    with :func:`crows_score` (ties, including pairs identical after tokenisation, count as "not
    stereotypical" and stay in N, as the official ``metric.py``).
    ``unk="score"`` (default) scores sentences with ``[UNK]`` as ``metric.py`` does.
    Returns ``(CrowsScore with by_type, overall exact binomial TestResult, PLLScores)``;
    pairs that could not be scored, and those kept as ties, are in ``PLLScores.report``.
    """
    from biaskit.lm import score_pairs

    direction = list(pairs["stereo_antistereo"]) if "stereo_antistereo" in pairs else None
    sc = score_pairs(
        lm,
        list(pairs["sent_more"]),
        list(pairs["sent_less"]),
        metric,  # type: ignore[arg-type]
        direction=direction,
        bias_types=list(pairs["bias_type"]),
        batch_size=batch_size,
        cache=cache,
        progress=progress,
        unk=unk,  # type: ignore[arg-type]
    )
    if len(sc.scores) == 0:
        raise ValueError("no CrowS-Pairs pair could be scored (see the validation report in the log)")
    s = sc.scores
    score = crows_score(s["sent_more_score"], s["sent_less_score"], s["bias_type"])
    test = crows_proportion_test(s["sent_more_score"], s["sent_less_score"], exact=True)
    return score, test, sc


def crows_pairs_test(
    lm: Any,
    pairs: pd.DataFrame,
    *,
    metric: str = "cp",
    batch_size: int = 64,
    cache: bool = True,
    unk: str = "score",
    progress: bool = False,
) -> TestResult:
    r"""CrowS-Pairs on a language model as one :class:`~biaskit.core.results.TestResult`, per-pair values
    kept.

    .. math:: B_{CrowS} = \frac{100}{N} \sum_{i=1}^{N} \mathbb{1}[pll(s^{ster}_i) > pll(s^{anster}_i)],
              \qquad H_0: B_{CrowS} / 100 = 0.5

    Nangia et al. 2020 (CrowS-Pairs, EMNLP); seed 000 sections 4.1.6 and 4.2.1, seed 001 section 4.4
    (eq. 8).  Scores and counts exactly as :func:`crows_by_bias_type` (same arguments); the result is
    its exact binomial test of the share of pairs preferring the stereotype against 50 %, two-sided
    (:func:`biaskit.core.stats.binomial_test`; ties count as "not stereotypical" and stay in N, as
    Nangia et al.'s ``metric.py``).  ``details`` adds to the test's own details: ``metric``,
    ``by_type`` (one record per bias type: ``bias_type``, ``n``, ``n_stereo``, ``n_ties``,
    ``score`` in percent, ``p_value``), ``n_not_scored`` (pairs the model could not score, see the
    log) and ``per_pair``, the raw per-pair values as columns (``row``: position in ``pairs``,
    ``bias_type``, ``sent_more_score``, ``sent_less_score``, ``m_diff`` = their difference).

    Examples
    --------
    >>> from biaskit.metrics.toys import toy_masked_lm, toy_pairs
    >>> result = crows_pairs_test(toy_masked_lm(), toy_pairs(), metric="cp", cache=False)
    >>> result.n, round(result.statistic, 3), round(result.p_value, 4)
    (6, 4.0, 0.6875)
    """
    score, test, sc = crows_by_bias_type(
        lm, pairs, metric=metric, batch_size=batch_size, cache=cache, unk=unk, progress=progress
    )
    s = sc.scores
    more = s["sent_more_score"].to_numpy(dtype=float)
    less = s["sent_less_score"].to_numpy(dtype=float)
    by_type = score.by_type.reset_index().to_dict(orient="records") if score.by_type is not None else []
    details = dict(test.details)
    details.update(
        {
            "metric": metric,
            "by_type": by_type,
            "n_not_scored": len(sc.report.skipped_rows) if hasattr(sc.report, "skipped_rows") else 0,
            "per_pair": {
                "row": [int(r) for r in s["row"]],
                "bias_type": [str(b) for b in s["bias_type"]],
                "sent_more_score": more.tolist(),
                "sent_less_score": less.tolist(),
                "m_diff": (more - less).tolist(),
            },
        }
    )
    return dataclasses.replace(
        test, method=f"CrowS-Pairs ({metric}): exact binomial test of B_CrowS = 50%", details=details
    )


# --------------------------------------------------------------------------- the batch grid and the registry
#: the batch grid's log (a grid run's log file and console read it; :mod:`biaskit.studies.grid`)
_grid_logger = logging.getLogger("biaskit.studies.grid")


def claims_crows_dataset(path: str) -> bool:
    """Whether a grid dataset identifier or path is a CrowS-Pairs dataset
    (``crows:...`` or a file named *crows*)."""
    from pathlib import Path

    p = path.lower()
    return p.startswith("crows:") or "crows" in Path(p).name


def load_crows_dataset(
    path: str, *, sample: int | None = None, random_state: int = 0
) -> tuple[str, pd.DataFrame]:
    """A CrowS-Pairs dataset of the batch grid (dataset kind ``"crows"``): ``crows:en``, ``crows:es``
    (``crows:es-paraphrased``, ``crows:es-random``) or ``crows:<file.csv>`` / a CSV path with ``sent_more``,
    ``sent_less`` (and ``bias_type``); pairs whose encoding could not be repaired are left out (WARNING),
    pairs without a bias type grouped as ``"(unlabelled)"``; ``sample`` draws that many pairs
    (``random_state``).  Returns ``("crows", pairs)``, ``pairs.attrs["language"]`` set."""
    from biaskit.core.paths import resolve_user_path
    from biaskit.data import datasets as bds

    which = path.split(":", 1)[1] if path.lower().startswith("crows:") else path
    if which == "en":
        df, lang = bds.load_crows_pairs_en(), "en"
    elif which in ("es", "es-original", "es-paraphrased", "es-random"):
        variant = {"es": "original", "es-original": "original"}.get(which, which[3:])
        df, lang = bds.load_crows_pairs_es(variant), "es"  # type: ignore[arg-type]
    elif resolve_user_path(which).exists():
        df, lang = pd.read_csv(resolve_user_path(which)), "?"
        missing = [c for c in ("sent_more", "sent_less") if c not in df]
        if missing:
            raise ValueError(
                f"{which}: a CrowS-Pairs file needs columns sent_more, sent_less (missing {missing})"
            )
    else:
        raise ValueError(
            f"unknown CrowS-Pairs dataset {path!r}; use crows:en, crows:es, crows:es-paraphrased, "
            "crows:es-random or a CSV path"
        )
    if "encoding_ok" in df:
        bad = int((~df["encoding_ok"].astype(bool)).sum())
        if bad:
            _grid_logger.warning("%s: %d pair(s) with unrepairable encoding left out", path, bad)
            df = df[df["encoding_ok"].astype(bool)]
    if "bias_type" not in df:
        df = df.assign(bias_type="(none)")
    n_unl = int(df["bias_type"].isna().sum())
    if n_unl:
        _grid_logger.info("%s: %d pair(s) without a bias type are grouped as '(unlabelled)'", path, n_unl)
        df = df.assign(bias_type=df["bias_type"].fillna("(unlabelled)"))
    if sample is not None and sample < len(df):
        df = df.sample(n=sample, random_state=random_state).sort_index()
        _grid_logger.info("%s: random sample of %d pairs (random_state=%d)", path, sample, random_state)
    df = df.reset_index(drop=True)
    df.attrs["language"] = lang
    return "crows", df


def _toy_crows() -> pd.DataFrame:
    """The toy CrowS-style pairs (:func:`biaskit.metrics.toys.toy_pairs`), an English dataset of kind
    ``"crows"``."""
    from biaskit.metrics.toys import toy_pairs

    df = toy_pairs()
    df.attrs["language"] = "en"
    return df


def grid_cell(call: GridCall) -> list[dict[str, Any]]:
    """One cell of a batch grid (:mod:`biaskit.studies.grid`): B_CrowS of all pairs and of each bias
    type, with the PLL metric ``call.method``, each with its exact binomial test."""
    o = call.options
    score, test, sc = crows_by_bias_type(
        call.model,
        call.data,
        metric=call.method,
        batch_size=int(o["batch_size"]),
        cache=bool(o["crows_cache"]),
        unk=str(o["crows_unk"]),
    )
    n_skipped = len(sc.report.skipped_rows) if hasattr(sc.report, "skipped_rows") else 0
    rows = [
        {
            "bias_type": "all",
            "n": score.n,
            "score": score.score,
            "statistic": float(score.n_stereo),
            "p_value": test.p_value,
            "permutation": "exact binomial",
            "note": f"pairs not scored (see the log): {n_skipped}" if n_skipped else "",
        }
    ]
    for bt, r in score.by_type.iterrows():
        rows.append(
            {
                "bias_type": str(bt),
                "n": int(r["n"]),
                "score": float(r["score"]),
                "statistic": float(r["n_stereo"]),
                "p_value": float(r["p_value"]),
                "permutation": "exact binomial",
            }
        )
    return rows


def grid_pair_scores(call: GridCall, reading: str) -> tuple[np.ndarray, np.ndarray, int]:
    """The scores of the sentence pairs of a CrowS-Pairs grid dataset by ``reading``, with the grid's
    ``crows_unk`` / ``crows_cache`` / ``batch_size``: ``(sent_more, sent_less, pairs not scored)``.  For
    the metrics that read the two samples of a pair set (the thesis's KS test and KL score, Barza's SLD)."""
    o = call.options
    _, _, sc = crows_by_bias_type(
        call.model, call.data, metric=reading, batch_size=int(o["batch_size"]), cache=bool(o["crows_cache"]),
        unk=str(o["crows_unk"]),
    )  # fmt: skip
    n_skipped = len(sc.report.skipped_rows) if hasattr(sc.report, "skipped_rows") else 0
    s = sc.scores
    return s["sent_more_score"].to_numpy(dtype=float), s["sent_less_score"].to_numpy(dtype=float), n_skipped


def reading_methods(masked: str, causal: str) -> Callable[[str, Mapping[str, Any]], tuple[str, ...]]:
    """Grid methods of a metric that reads pair scores: its option ``masked`` for a masked model, ``causal``
    for a causal one (the option's value is the cell's method)."""

    def methods(model_kind: str, options: Mapping[str, Any]) -> tuple[str, ...]:
        return (str(options[causal if model_kind == "causal" else masked]),)

    return methods


def reading_options(masked: str = "cp") -> tuple[Option, Option]:
    """The grid options of a metric that reads pair scores (with :func:`reading_methods`): ``reading``, the
    PLL reading of a masked model (default ``masked``), and ``causal_reading``, that of a causal one
    (``ll``)."""
    return (
        Option("reading", masked, "the PLL reading of a masked model", choices=("cp", "sz", "aul")),
        Option("causal_reading", "ll", "the reading of a causal model", choices=("ll", "ll_mean", "shared")),
    )


def _reading_grid(reading: str) -> GridSupport:
    """Grid support of one PLL reading: B_CrowS of a CrowS-Pairs dataset scored by it (as the ``crows``
    metric with that reading, its ``crows_unk`` and ``crows_cache`` options)."""
    return GridSupport(
        "crows",
        grid_cell,
        lambda model_kind, options: (reading,),
        {"static": f"{reading} needs a language model"},
    )


def _grid_methods(model_kind: str, options: Mapping[str, Any]) -> tuple[str, ...]:
    """The PLL metric of the grid's options: ``crows_causal_metric`` for a causal model, else
    ``crows_metric``."""
    return (str(options["crows_causal_metric" if model_kind == "causal" else "crows_metric"]),)


def _example() -> TestResult:
    """CrowS-Pairs (cp) on the toy pairs and the toy masked model (:mod:`biaskit.metrics.toys`)."""
    from biaskit.metrics.toys import toy_masked_lm, toy_pairs

    return crows_pairs_test(toy_masked_lm(), toy_pairs(), metric="cp", cache=False)


def _reading_example(reading: str) -> Callable[[], CrowsScore]:
    """The example of one PLL reading: B_CrowS of the toy pairs scored by it."""

    def example() -> CrowsScore:
        from biaskit.metrics.toys import toy_pairs, toy_scores

        more, less = toy_scores(reading)
        return crows_score(more, less, toy_pairs()["bias_type"])

    return example


register_dataset_kind(
    "crows", "CrowS-Pairs sentence pairs (sent_more, sent_less, bias_type)", example=_toy_crows
)
register_dataset_loader(
    name="crows",
    kinds=("crows",),
    claims=claims_crows_dataset,
    load=load_crows_dataset,
    identifiers="crows:en, crows:es, crows:es-paraphrased, crows:es-random, or a CSV file with sent_more, "
    "sent_less (and bias_type)",
)
#: the options of the CrowS-Pairs metric in a batch grid (crows_metric, crows_causal_metric, ...)
CROWS_GRID_OPTIONS: tuple[Option, ...] = (
    Option("metric", "cp", "the PLL reading of a masked model", choices=("cp", "sz", "aul")),
    Option("causal_metric", "ll", "the reading of a causal model", choices=("ll", "ll_mean", "shared")),
    Option(
        "unk", "skip", "pairs with [UNK] tokens: skip them (logged) or score them", choices=("skip", "score")
    ),
    Option("cache", True, "keep the pair scores in biaskit's cache", types=(bool,)),
)
register_metric(
    "crows",
    label="CrowS-Pairs",
    family="language models",
    inputs=("sentence pairs",),
    model_kinds=("masked", "causal"),
    directional=True,
    test="exact binomial test of the share of pairs preferring the stereotype against 50 %",
    citation="Nangia et al. 2020, CrowS-Pairs",
    section="seed 000 sections 4.1.6, 4.2.1; seed 001 section 4.4",
    entry_point=crows_pairs_test,
    summary="B_CrowS: % of pairs whose stereotypical sentence the model scores higher "
    "(cp, sz, aul, ll, shared)",
    returns="TestResult (exact binomial test of B_CrowS = 50 %; details: by_type, per_pair scores and "
    "m_diff); crows_by_bias_type gives (CrowsScore, TestResult, PLLScores)",
    grid=GridSupport(
        "crows",
        grid_cell,
        _grid_methods,
        {"static": "crows needs a language model"},
        options=CROWS_GRID_OPTIONS,
    ),
    example=_example,
)


def _reading(key: str, label: str, model_kind: str, reading: str) -> CalibrationSupport:
    """The calibration measure of a PLL reading on the controls' CrowS-style pairs: per pair, the score of
    its male version minus that of its female version (the share of positive ones is the effect)."""

    def values(call: CalibrationCall) -> MetricValues:
        from biaskit.metrics.controls import pair_values

        return pair_values(call, key, "sign", reading)

    return CalibrationSupport(
        (CalibrationMeasure(key=key, label=label, kind="sign", model_kind=model_kind, values=values),)
    )


#: the fields the PLL readings of a pair share (one metric each below)
_READING = {
    "family": "language models",
    "inputs": ("sentence pairs",),
    "directional": True,
    "test": "proportion test of the pairs preferring one sentence against 50 % (crows_proportion_test)",
    "entry_point": crows_score,
    "returns": "CrowsScore (score, n, by_type, per_pair differences; summary()); "
    "crows_proportion_test gives the thesis's z test as a TestResult",
}
register_metric(
    "cp",
    label="cp: CrowS-Pairs PLL of the shared tokens",
    model_kinds=("masked",),
    citation="Nangia et al. 2020 (metric.py of nyu-mll/crows-pairs)",
    section="seed 000 sections 4.1.3, 4.1.6",
    summary="pseudo-log-likelihood of the tokens both sentences share, each masked in turn",
    example=_reading_example("cp"),
    grid=_reading_grid("cp"),
    calibration=_reading("crows_cp", "CrowS-style pairs, cp (% of pairs)", "masked", "cp"),
    **_READING,
)
register_metric(
    "sz",
    label="sz: Salazar et al.'s PLL of the whole sentence",
    model_kinds=("masked",),
    citation="Salazar et al. 2020, Masked Language Model Scoring",
    section="seed 000 section 4.1.3",
    summary="pseudo-log-likelihood of every token, each masked in turn",
    example=_reading_example("sz"),
    grid=_reading_grid("sz"),
    calibration=_reading("crows_sz", "CrowS-style pairs, sz (% of pairs)", "masked", "sz"),
    **_READING,
)
register_metric(
    "aul",
    label="AUL: all unmasked likelihood",
    model_kinds=("masked",),
    citation="Kaneko & Bollegala 2022, Unmasking the Mask",
    section="extension of seed 000 section 4.1.3",
    summary="mean log-probability of every token with nothing masked",
    example=_reading_example("aul"),
    grid=_reading_grid("aul"),
    calibration=_reading("crows_aul", "CrowS-style pairs, AUL (% of pairs)", "masked", "aul"),
    **_READING,
)
register_metric(
    "ll",
    label="ll: causal log-likelihood of the sentence",
    model_kinds=("causal",),
    citation="lm-evaluation-harness crows_pairs task (pct_stereotype); Radford et al. 2019",
    section="causal extension of seed 000 section 4.1.6",
    summary="exact log-likelihood of the whole sentence under a causal model",
    example=_reading_example("ll"),
    grid=_reading_grid("ll"),
    calibration=_reading(
        "causal_ll", "CrowS-style pairs, causal log-likelihood (% of pairs)", "causal", "ll"
    ),
    **_READING,
)
register_metric(
    "shared",
    label="shared: causal log-likelihood of the shared tokens after the difference",
    model_kinds=("causal",),
    citation="biaskit's causal counterpart of cp (Nangia et al. 2020)",
    section="causal extension of seed 000 section 4.1.6",
    summary="log-likelihood of the tokens both sentences share after the first difference",
    example=_reading_example("shared"),
    grid=_reading_grid("shared"),
    calibration=_reading(
        "causal_shared", "CrowS-style pairs, causal shared tokens (% of pairs)", "causal", "shared"
    ),
    **_READING,
)
