r"""Barza's sentence-pair test (seed 002 section 4.1): SLD, ASLD, their intervals and the evaluation-size
curve.

K. G. Barza (2023), *Towards a Robust Gender Bias Evaluation in NLP*, MSc thesis, American University of
Beirut.  For a pair (S_1, S_2) differing only in gendered words, with the pseudo-log-likelihood PLL of
Salazar et al. (2020) (masked models) or the log-likelihood (causal models):

.. math::

    \mathrm{SLD}(S_1, S_2) = |\mathrm{PLL}(S_1) - \mathrm{PLL}(S_2)|, \qquad
    \mathrm{ASLD}(G) = \frac1N \sum_i \mathrm{SLD}(S_{1i}, S_{2i})

The template test (PPD / APPD), the registered one-sample tests and the paired comparison of two models
are in :mod:`biaskit.metrics.gender_templates`, which re-exports these functions.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from biaskit.core.results import TestResult

logger = logging.getLogger(__name__)

__all__ = [
    "asld",
    "asld_confidence_interval",
    "asld_sample_size_curve",
    "asld_table",
    "default_pll_scorer",
    "score_sentence_pairs",
    "sentence_likelihood_difference",
]


def sentence_likelihood_difference(pll_1: Any, pll_2: Any, *, signed: bool = False) -> np.ndarray:
    r""":math:`\mathrm{SLD} = |\mathrm{PLL}(S_1) - \mathrm{PLL}(S_2)|` per pair (seed 002 section 4.1.2);
    ``signed=True`` drops the |.|."""
    a, b = np.asarray(pll_1, dtype=float).ravel(), np.asarray(pll_2, dtype=float).ravel()
    if a.shape != b.shape:
        raise ValueError(f"pll_1 and pll_2 must be aligned pair by pair, got {a.size} and {b.size} values")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("PLL values must be finite")
    d = a - b
    return d if signed else np.abs(d)


def asld(pll_1: Any, pll_2: Any) -> float:
    r""":math:`\mathrm{ASLD} = \frac1N\sum_i |\mathrm{PLL}(S_{1i}) - \mathrm{PLL}(S_{2i})|`
    (seed 002 section 4.1.2)."""
    s = sentence_likelihood_difference(pll_1, pll_2)
    if s.size == 0:
        raise ValueError("ASLD of an empty set of pairs")
    return float(s.mean())


def score_sentence_pairs(
    mlm: Any,
    pairs: pd.DataFrame,
    *,
    scorer: Callable[[Sequence[str]], Any] | None = None,
    first: str = "sent_stereo",
    second: str = "sent_anti",
) -> pd.DataFrame:
    """PLL of both sentences of every pair, then SLD (unsigned) and the signed difference.

    ``scorer`` maps a list of sentences to their PLLs; by default the mask-every-token
    PLL of :mod:`biaskit.lm` (Salazar et al. 2020, natural log, summed, no length
    normalisation, as seed 002 section 4.1.2 prescribes).  All sentences are scored in
    one batched call.  Adds ``pll_1``, ``pll_2``, ``sld``, ``signed_sld`` (PLL(first) -
    PLL(second)).
    """
    for c in (first, second):
        if c not in pairs.columns:
            raise ValueError(f"pairs lack the column {c!r}")
    if scorer is None:
        scorer = default_pll_scorer(mlm)
    sents = list(pairs[first]) + list(pairs[second])
    scores = np.asarray(scorer(sents), dtype=float).ravel()
    if scores.size != len(sents):
        raise ValueError(f"the scorer returned {scores.size} scores for {len(sents)} sentences")
    n = len(pairs)
    out = pairs.copy()
    out["pll_1"], out["pll_2"] = scores[:n], scores[n:]
    out["sld"] = sentence_likelihood_difference(out["pll_1"], out["pll_2"])
    out["signed_sld"] = sentence_likelihood_difference(out["pll_1"], out["pll_2"], signed=True)
    return out


def default_pll_scorer(mlm: Any) -> Callable[[Sequence[str]], Any]:
    from biaskit.lm import score_sentences

    def scorer(sentences: Sequence[str]) -> np.ndarray:
        # metric None: the pseudo-log-likelihood "sz" of a masked model, the log-likelihood "ll" of a causal
        # one
        res = score_sentences(mlm, list(sentences), None, progress=False)
        got = res.scores.set_index("row")["score"]
        missing = sorted(set(range(len(sentences))) - set(got.index))
        if missing:
            raise ValueError(
                f"{len(missing)} sentence(s) could not be scored by {getattr(mlm, 'name', 'the model')} "
                f"(see the validation report): {[sentences[i] for i in missing[:5]]}"
            )
        return got.reindex(range(len(sentences))).to_numpy(dtype=float)

    return scorer


def asld_table(
    scored: pd.DataFrame,
    *,
    category: str = "category",
    value: str = "sld",
    combined: str | None = "combined",
    ci: bool = False,
    confidence: float = 0.95,
    n_resamples: int = 9999,
    random_state: int | None = 0,
) -> pd.DataFrame:
    """ASLD per category and over the union of all pairs ("Combined", Tables 3-4 of seed 002).

    With ``ci=True`` a bootstrap confidence interval (BCa, ``biaskit.core.stats.bootstrap_ci``)
    is added per row (``ci_low``, ``ci_high``); categories with fewer than 3 pairs get NaN.
    The thesis's Combined equals the mean of the three category ASLDs because every
    category has 100 pairs; with unequal sizes the union mean is what "ASLD over the
    union" means.

    Degenerate input raises ``ValueError`` rather than giving NaN: a table without pairs (the
    ASLD of no pairs is undefined; :func:`asld` refuses it too), and rows whose ``value`` is not
    finite or whose ``category`` is missing (a NaN would make its category's ASLD and the
    Combined one NaN, a missing category would leave the pair out of every category row
    but not out of Combined); the message names the rows (the table's index) and how to drop
    them.
    """
    if category not in scored.columns or value not in scored.columns:
        raise ValueError(f"scored needs columns {category!r} and {value!r}")
    if len(scored) == 0:
        raise ValueError(
            "asld_table: the table has no pairs (0 rows), and the ASLD of no pairs is undefined; score "
            "some pairs first (score_sentence_pairs)"
        )
    values = pd.to_numeric(scored[value], errors="coerce").to_numpy(float)
    keep = {
        value: f"scored[np.isfinite(scored[{value!r}].astype(float))]",
        category: f"scored.dropna(subset=[{category!r}])",
    }
    checks = (
        (scored.index[~np.isfinite(values)], value, "not a finite number"),
        (scored.index[scored[category].isna()], category, "missing"),
    )
    for bad, column, what in checks:
        if len(bad):
            shown = ", ".join(map(str, bad[:10].tolist()))
            more = f" and {len(bad) - 10} more" if len(bad) > 10 else ""
            raise ValueError(
                f"asld_table: {column!r} is {what} in {len(bad)} of {len(scored)} rows (index "
                f"{shown}{more}); leave them out first if that is meant: {keep[column]}"
            )
    groups: list[tuple[str, np.ndarray]] = [
        (str(c), g[value].to_numpy(float)) for c, g in scored.groupby(category, sort=False)
    ]
    if combined:
        groups.append((combined, scored[value].to_numpy(float)))
    rows = []
    for name, v in groups:
        row: dict[str, Any] = {category: name, "n_pairs": int(v.size), "asld": float(v.mean())}
        if ci:
            if v.size >= 3 and np.ptp(v) > 0:
                r = asld_confidence_interval(
                    v, confidence=confidence, n_resamples=n_resamples, random_state=random_state
                )
                row["ci_low"], row["ci_high"] = r.ci  # type: ignore[misc]
            else:
                logger.info("no bootstrap CI for %r: %d pair(s) or constant values", name, v.size)
                row["ci_low"] = row["ci_high"] = math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def asld_confidence_interval(
    sld: Any,
    *,
    confidence: float = 0.95,
    n_resamples: int = 9999,
    method: str = "BCa",
    random_state: int | None = 0,
) -> TestResult:
    """Bootstrap confidence interval of the ASLD (mean SLD) over pairs (not in the thesis;
    ``biaskit.core.stats.bootstrap_ci``)."""
    from biaskit.core.stats import bootstrap_ci

    v = np.asarray(sld, dtype=float).ravel()
    res = bootstrap_ci(
        v, np.mean, confidence=confidence, n_resamples=n_resamples, method=method, random_state=random_state
    )
    return TestResult(
        statistic=res.statistic,
        p_value=None,
        method=f"ASLD with {res.method}",
        n=res.n,
        estimate=res.estimate,
        ci=res.ci,
        confidence=confidence,
        details=res.details,
    )


def asld_sample_size_curve(
    sld: Mapping[str, Any],
    sizes: Sequence[int] = (20, 40, 60, 80, 100),
    *,
    n_draws: int = 5,
    replace: bool = False,
    random_state: int | None = 0,
) -> pd.DataFrame:
    """ASLD on random subsets of n pairs, ``n_draws`` draws per size, per category
    (seed 002 section 4.1.3, Fig. 6).

    The thesis averages 5 draws; the SD over draws is returned too.  Sampling is
    without replacement by default (the thesis does not say; at n = N every draw is the
    whole category then).  Sizes larger than a category are skipped (logged).
    """
    rng = np.random.default_rng(random_state)
    rows = []
    for cat, values in sld.items():
        v = np.asarray(values, dtype=float).ravel()
        for n in sizes:
            if n > v.size and not replace:
                logger.info("category %r has %d pairs: size %d skipped", cat, v.size, n)
                continue
            draws = [v[rng.choice(v.size, size=n, replace=replace)].mean() for _ in range(n_draws)]
            rows.append(
                {
                    "category": cat,
                    "n": n,
                    "asld_mean": float(np.mean(draws)),
                    "asld_sd": float(np.std(draws, ddof=1)) if n_draws > 1 else 0.0,
                }
            )
    return pd.DataFrame(rows)
