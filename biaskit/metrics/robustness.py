"""Robustness of PLL bias measures to paraphrasing (seed 000 section 4.3, experiment E^Rob).

A PLL-based bias measure is only trustworthy if the model's preference between the
stereotypical and the anti-stereotypical sentence survives a paraphrase that keeps
the meaning (Kwon et al. 2022, "An Empirical Study on Pseudo-log-likelihood Bias
Measures for Masked Language Models Using Paraphrased Sentences", TrustNLP).  For
each example ``i`` with original and paraphrased (or random) versions:

* :math:`M_{diff} = PLL_{ster} - PLL_{anster}` (:func:`biaskit.metrics.crows.m_diff`);
* :math:`M_{bias}` = the preference read from M_diff: its sign (Kwon et al.,
  :func:`m_bias_sign`) or, in the thesis's proposal, -1 / 0 / +1 according to
  whether M_diff lies below, inside or above an interval [lb, ub] of "no real
  preference" (:func:`m_bias_interval`);
* :math:`M_{agree} = 1` when the original and the other version give the same M_bias;
* :math:`l_1` = mean of M_agree over the N examples (original vs paraphrased) and
  :math:`l'_1` the same with random sentences in place of the paraphrases.

The thesis tests H0: l1 = pr_rob against H1: l1 < pr_rob (hypothesis system 4.5,
pr_rob = 0.8 in section 4.4.3; :func:`agreement_test`), H0: l1 = l1' (system 4.6,
:func:`compare_agreements`) and, finally, whether M_diff changes on average under
paraphrasing (z test and two-sample KS test, :func:`paraphrase_difference_tests`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
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
from biaskit.core.results import Alternative, TestResult
from biaskit.metrics.crows import as_scores, m_diff, reading_methods, reading_options

__all__ = [
    "agreement",
    "agreement_test",
    "claims_paraphrase_dataset",
    "grid_cell",
    "load_paraphrase_dataset",
    "compare_agreements",
    "m_agree",
    "m_bias_interval",
    "m_bias_sign",
    "m_diff",
    "paraphrase_difference_tests",
    "robustness_summary",
]

Method = Literal["sign", "interval"]
SignTies = Literal["negative", "zero"]


def _as_diff(x: Sequence[float] | np.ndarray | pd.Series, name: str) -> np.ndarray:
    return as_scores(x, name, what="value(s)", advice="")


def m_bias_sign(diff: Sequence[float] | np.ndarray, *, ties: SignTies = "negative") -> np.ndarray:
    r"""Kwon et al.'s preference :math:`M_{(bias,kwon)} = \operatorname{sign}(M_{diff})`
    (seed 000 section 4.3).

    Returns +1 (stereotypical sentence preferred) or -1.  A difference of exactly 0 is
    mapped to -1 with ``ties="negative"`` (the thesis's code: ``M_bias = M_diff > 0``;
    this reproduces Table 4.9) or to 0 with ``ties="zero"`` (``numpy.sign``: a tie is a
    third class that agrees only with another tie).
    """
    d = _as_diff(diff, "diff")
    if ties == "negative":
        return np.where(d > 0, 1, -1).astype(int)
    if ties == "zero":
        return np.sign(d).astype(int)
    raise ValueError(f"ties must be 'negative' or 'zero', got {ties!r}")


def m_bias_interval(diff: Sequence[float] | np.ndarray, lb: float, ub: float) -> np.ndarray:
    r"""The thesis's interval preference :math:`M_{(bias,new)}` (seed 000 section 4.3).

    .. math::

        M_{(bias,new)} = \begin{cases} -1 & M_{diff} < lb \\ 0 & lb \le M_{diff} \le ub \\
        1 & M_{diff} > ub \end{cases}

    The closed interval [lb, ub] is the band of differences treated as "no real
    preference" (Table 4.10 uses [-3.5, 3.5]; Kwon et al. found most English
    differences inside [-0.25, 0.25]).
    """
    if not np.isfinite(lb) or not np.isfinite(ub) or lb > ub:
        raise ValueError(f"need finite lb <= ub, got [{lb}, {ub}]")
    d = _as_diff(diff, "diff")
    return np.where(d < lb, -1, np.where(d > ub, 1, 0)).astype(int)


def m_agree(bias_a: Sequence[int] | np.ndarray, bias_b: Sequence[int] | np.ndarray) -> np.ndarray:
    """:math:`M_{agree}` = 1 where the two preference vectors are equal, else 0."""
    a = np.asarray(bias_a).ravel()
    b = np.asarray(bias_b).ravel()
    if a.size != b.size:
        raise ValueError(f"the two versions must be aligned example by example, got {a.size} and {b.size}")
    return (a == b).astype(int)


def _bias(diff: np.ndarray, method: str, lb: float | None, ub: float | None, ties: SignTies) -> np.ndarray:
    if method == "sign":
        return m_bias_sign(diff, ties=ties)
    if method == "interval":
        if lb is None or ub is None:
            raise ValueError("method='interval' needs lb and ub (the thesis used lb=-3.5, ub=3.5)")
        return m_bias_interval(diff, lb, ub)
    raise ValueError(f"method must be 'sign' or 'interval', got {method!r}")


def agreement(
    diff_original: Sequence[float] | np.ndarray,
    diff_other: Sequence[float] | np.ndarray,
    *,
    method: Method = "sign",
    lb: float | None = None,
    ub: float | None = None,
    ties: SignTies = "negative",
) -> tuple[int, int]:
    r"""Number of examples in agreement and N: :math:`l_1 = \frac{1}{N}\sum_i M_{agree,i}`.

    ``diff_original[i]`` and ``diff_other[i]`` are the M_diff of example ``i`` in its
    original and paraphrased (or random) version.  ``method="sign"`` uses
    :func:`m_bias_sign` (Kwon et al.; Table 4.9), ``method="interval"`` uses
    :func:`m_bias_interval` with [lb, ub] (the thesis's proposal; Table 4.10).
    """
    a = _as_diff(diff_original, "diff_original")
    b = _as_diff(diff_other, "diff_other")
    if a.size != b.size:
        raise ValueError(f"diff_original and diff_other must be aligned, got {a.size} and {b.size}")
    agree = m_agree(_bias(a, method, lb, ub, ties), _bias(b, method, lb, ub, ties))
    return int(agree.sum()), int(a.size)


def agreement_test(
    diff_original: Sequence[float] | np.ndarray,
    diff_other: Sequence[float] | np.ndarray,
    *,
    pr_rob: float = 0.8,
    method: Method = "sign",
    lb: float | None = None,
    ub: float | None = None,
    ties: SignTies = "negative",
    alternative: Alternative = "less",
) -> TestResult:
    r"""One-sided proportion test of the agreement :math:`l_1` (seed 000 section 4.3, system 4.5).

    .. math::

        H_0: l_1 = pr_{rob} \quad\text{vs}\quad H_1: l_1 < pr_{rob}, \qquad
        z = \frac{\hat l_1 - pr_{rob}}{\sqrt{\hat l_1 (1-\hat l_1)/N}}

    z test with the sample-proportion variance (:func:`biaskit.core.stats.proportion_ztest`,
    as the thesis).  Rejecting H0 means fewer than ``pr_rob`` of the examples keep their
    preference after paraphrasing: the model is *not* robust.  Thesis, cp scores,
    N = 170, pr_rob = 0.8: sign agreement l1 = 0.682, p = 0.00049 (Table 4.9); interval
    [-3.5, 3.5] agreement l1 = 0.782, p = 0.289 (Table 4.10).

    Examples
    --------
    >>> diff_original = [1.2, -0.3, 0.8, 2.1, 0.4, -1.0, 0.9, 1.5]
    >>> diff_paraphrase = [1.0, -0.5, 0.6, 1.8, -0.2, -0.7, 1.1, 1.2]
    >>> result = agreement_test(diff_original, diff_paraphrase)
    >>> result.n, round(result.estimate, 3), round(result.p_value, 3)
    (8, 0.875, 0.739)
    """
    if not 0 < pr_rob < 1:
        raise ValueError(f"pr_rob must lie strictly between 0 and 1, got {pr_rob}")
    k, n = agreement(diff_original, diff_other, method=method, lb=lb, ub=ub, ties=ties)
    rule = f"sign (ties={ties})" if method == "sign" else f"interval [{lb}, {ub}]"
    if k in (0, n):
        res = bstats.binomial_test(k, n, pr_rob, alternative)
        how = "exact binomial test (z test undefined at l1 = 0 or 1)"
    else:
        res = bstats.proportion_ztest(k, n, pr_rob, alternative)
        how = "one-sample z test for a proportion"
    return dataclasses.replace(
        res,
        method=f"robustness agreement test, {rule}: {how}",
        h0=f"at least {pr_rob:.0%} of the examples keep their preference (l1 = {pr_rob})",
        h1=f"fewer than {pr_rob:.0%} keep it: the model is not robust to paraphrasing",
        details={**res.details, "agreeing": k, "agreement_rule": rule},
    )


def compare_agreements(
    diff_original: Sequence[float] | np.ndarray,
    diff_paraphrased: Sequence[float] | np.ndarray,
    diff_random: Sequence[float] | np.ndarray,
    *,
    method: Method = "interval",
    lb: float | None = -3.5,
    ub: float | None = 3.5,
    ties: SignTies = "negative",
    alternative: Alternative = "two-sided",
) -> TestResult:
    r"""Two-sample z test of :math:`l_1` (original vs paraphrased) against :math:`l'_1` (original vs random).

    Seed 000 section 4.3, hypothesis system 4.6 (:math:`H_0: l_1 = l'_1`), applied in
    section 4.4.3 with the interval rule [-3.5, 3.5]: l1 = 133/170, l1' = 98/170,
    p ≈ 0.00004 (:func:`biaskit.core.stats.two_proportion_ztest`, pooled variance).  A
    rejection means the agreement with paraphrases is not just the agreement one
    would get with unrelated sentences.  The two proportions share the original
    examples, so they are not independent; the thesis's test (and this one) ignores
    that.
    """
    k1, n1 = agreement(diff_original, diff_paraphrased, method=method, lb=lb, ub=ub, ties=ties)
    k2, n2 = agreement(diff_original, diff_random, method=method, lb=lb, ub=ub, ties=ties)
    res = bstats.two_proportion_ztest(
        k1,
        n1,
        k2,
        n2,
        alternative,
        h0="agreement with paraphrases = agreement with random sentences (l1 = l1')",
        h1="the agreement with paraphrases differs from the agreement with random sentences",
    )
    rule = f"sign (ties={ties})" if method == "sign" else f"interval [{lb}, {ub}]"
    return dataclasses.replace(
        res,
        method=f"two-sample z test l1 vs l1' ({rule})",
        details={**res.details, "l1": k1 / n1, "l1_prime": k2 / n2, "agreement_rule": rule},
    )


def paraphrase_difference_tests(
    diff_original: Sequence[float] | np.ndarray,
    diff_paraphrased: Sequence[float] | np.ndarray,
) -> dict[str, TestResult]:
    r"""Does paraphrasing change M_diff?  Seed 000 section 4.4.3, last experiment.

    * ``"z_test"``: approximate z test of :math:`H_0: E[M^{or}_{diff} - M^{par}_{diff}] = 0`
      on the per-example differences (:func:`biaskit.core.stats.z_test_mean`, two-sided);
      thesis p = 0.5352.
    * ``"ks_test"``: two-sample KS test between the distributions of
      :math:`M^{or}_{diff}` and :math:`M^{par}_{diff}` (:func:`biaskit.core.stats.ks_2samp_test`);
      thesis p = 0.704.

    Neither test looks at the example-level agreement: a model can have the same
    *distribution* of differences after paraphrasing while flipping many individual
    preferences (compare with :func:`agreement_test`).
    """
    a = _as_diff(diff_original, "diff_original")
    b = _as_diff(diff_paraphrased, "diff_paraphrased")
    if a.size != b.size:
        raise ValueError(f"the two M_diff vectors must be aligned, got {a.size} and {b.size}")
    z = bstats.z_test_mean(
        a - b,
        0.0,
        "two-sided",
        h0="paraphrasing does not change M_diff on average",
        h1="paraphrasing shifts M_diff",
    )
    ks = bstats.ks_2samp_test(a, b)
    return {"z_test": z, "ks_test": ks}


def robustness_summary(
    diff_original: Sequence[float] | np.ndarray,
    diff_paraphrased: Sequence[float] | np.ndarray,
    diff_random: Sequence[float] | np.ndarray,
    *,
    pr_rob: float = 0.8,
    lb: float = -3.5,
    ub: float = 3.5,
    ties: SignTies = "negative",
) -> pd.DataFrame:
    """Tables 4.9 and 4.10 in one frame: l1 and the one-sided test, per rule and comparison.

    Columns: ``rule`` (``"sign"`` / ``"interval [lb, ub]"``), ``comparison``
    (``"original vs paraphrased"`` / ``"original vs random"``), ``agreeing``, ``n``,
    ``l1``, ``statistic`` (z), ``p_value``, ``reject_h0`` (alpha = 0.05).
    """
    rows = []
    for method in ("sign", "interval"):
        for label, other in (
            ("original vs paraphrased", diff_paraphrased),
            ("original vs random", diff_random),
        ):
            res = agreement_test(diff_original, other, pr_rob=pr_rob, method=method, lb=lb, ub=ub, ties=ties)
            rows.append(
                {
                    "rule": "sign" if method == "sign" else f"interval [{lb}, {ub}]",
                    "comparison": label,
                    "agreeing": res.details["agreeing"],
                    "n": res.n,
                    "l1": res.estimate,
                    "statistic": res.statistic,
                    "p_value": res.p_value,
                    "reject_h0": res.reject(0.05),
                }
            )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- the batch grid
#: the columns of a paraphrase dataset: the pair, and the same pair paraphrased
PARAPHRASE_COLUMNS = ("sent_more", "sent_less", "sent_more_par", "sent_less_par")


def claims_paraphrase_dataset(path: str) -> bool:
    """Whether a grid dataset identifier is a paraphrase dataset (``paraphrases:es``,
    ``paraphrases:<file>``)."""
    return path.lower().startswith("paraphrases:")


def load_paraphrase_dataset(
    path: str, *, sample: int | None = None, random_state: int = 0
) -> tuple[str, pd.DataFrame]:
    """A paraphrase dataset of the batch grid (kind ``"paraphrases"``): ``paraphrases:es``, the Spanish
    CrowS-Pairs rows of the thesis that carry a paraphrase of both sentences (seed 000 section 4.4.1,
    :func:`biaskit.data.datasets.load_crows_pairs_es_table`), or ``paraphrases:<file.csv>`` with the
    columns ``sent_more, sent_less, sent_more_par, sent_less_par`` (and optionally ``bias_type``).
    ``sample`` keeps that many pairs (``random_state``).  Returns ``("paraphrases", pairs)``."""
    from biaskit.core.paths import resolve_user_path

    which = path.split(":", 1)[1]
    if which == "es":
        from biaskit.data.datasets import load_crows_pairs_es_table

        table, lang = load_crows_pairs_es_table(), "es"
        table = table[table["encoding_ok"].astype(bool)]
    elif resolve_user_path(which).exists():
        table, lang = pd.read_csv(resolve_user_path(which)), "?"
    else:
        raise ValueError(f"unknown paraphrase dataset {path!r}; use paraphrases:es or paraphrases:<file.csv>")
    missing = [c for c in PARAPHRASE_COLUMNS if c not in table]
    if missing:
        raise ValueError(
            f"{which}: a paraphrase file needs the columns {list(PARAPHRASE_COLUMNS)} (missing {missing})"
        )
    complete = table[list(PARAPHRASE_COLUMNS)].notna().all(axis=1) & (
        table[list(PARAPHRASE_COLUMNS)].astype(str).apply(lambda c: c.str.strip() != "").all(axis=1)
    )
    table = table[complete]
    if table.empty:
        raise ValueError(f"{which}: no row has all four sentences {list(PARAPHRASE_COLUMNS)}")
    if sample is not None and sample < len(table):
        table = table.sample(n=sample, random_state=random_state).sort_index()
    table = table.reset_index(drop=True)
    table.attrs["language"] = lang
    return "paraphrases", table


def _toy_paraphrases() -> pd.DataFrame:
    """The toy CrowS-style pairs with a paraphrase of each sentence (a dataset of kind ``"paraphrases"``)."""
    from biaskit.metrics.toys import toy_pairs

    df = toy_pairs()
    for col in ("sent_more", "sent_less"):
        df[f"{col}_par"] = df[col].str.replace(" likes ", " really likes ", regex=False)
    df.attrs["language"] = "en"
    return df


def grid_cell(call: GridCall) -> list[dict[str, Any]]:
    """One cell of a batch grid: the thesis's robustness test (experiment E^Rob, seed 000 section 4.3).
    Each pair and its paraphrase are scored with the reading ``call.method`` (``robustness_reading`` for a
    masked model, ``robustness_causal_reading`` for a causal one); M_diff = score(sent_more) -
    score(sent_less) of both versions gives the agreement l1 (``robustness_rule``: ``sign``, Kwon et al.,
    or ``interval`` [-``robustness_bound``, ``robustness_bound``], the thesis's proposal), tested against
    ``robustness_pr_rob`` (:func:`agreement_test`, H1: l1 < pr_rob).  Pairs one of whose four sentences
    could not be scored are left out (counted in the row's note)."""
    from biaskit.lm import score_pairs

    d = call.data
    o = call.options

    def diffs(more: str, less: str) -> np.ndarray:
        sc = score_pairs(
            call.model, list(d[more]), list(d[less]), call.method, batch_size=int(o["batch_size"]),
            cache=bool(o["crows_cache"]), progress=False,
        ).scores.set_index("row").reindex(range(len(d)))  # fmt: skip
        return (sc["sent_more_score"] - sc["sent_less_score"]).to_numpy(dtype=float)

    original, paraphrased = diffs("sent_more", "sent_less"), diffs("sent_more_par", "sent_less_par")
    ok = np.isfinite(original) & np.isfinite(paraphrased)
    if not ok.any():
        raise ValueError(f"{call.model_name}: no pair and its paraphrase could both be scored")
    rule, bound = call.option("rule"), float(call.option("bound"))
    res = agreement_test(
        original[ok], paraphrased[ok], pr_rob=float(call.option("pr_rob")), method=rule,
        lb=-bound if rule == "interval" else None, ub=bound if rule == "interval" else None,
    )  # fmt: skip
    row = GridSupport.rows_from_result(res, bias_type="all", score=100.0 * float(res.estimate))[0]
    row["targets"] = "original vs paraphrased pairs"
    if (~ok).any():
        row["note"] = f"pairs not scored (see the log): {int((~ok).sum())}"
    return [row]


# --------------------------------------------------------------------------- the registry
def _calibration_values(call: CalibrationCall) -> MetricValues:
    """The calibration's values: M_diff (cp) of each control pair and, in ``other``, of its paraphrase."""
    from biaskit.metrics.controls import PARAPHRASE_TEMPLATES, pair_scores, pair_values

    mv = pair_values(call, "thesis_robustness", "agreement", "cp")
    p_male, p_female = pair_scores(call, "cp", PARAPHRASE_TEMPLATES)
    mv.other = p_male - p_female
    return mv


def _example() -> TestResult:
    """The agreement test of the toy pairs' M_diff under cp against that under sz (a stand-in for a
    paraphrase: two readings of the same pairs)."""
    from biaskit.metrics.toys import toy_scores

    return agreement_test(m_diff(*toy_scores("cp")), m_diff(*toy_scores("sz")))


register_dataset_kind(
    "paraphrases",
    "sentence pairs with a paraphrase of both sentences (sent_more, sent_less, sent_more_par, sent_less_par)",
    example=_toy_paraphrases,
)
register_dataset_loader(
    name="paraphrases",
    kinds=("paraphrases",),
    claims=claims_paraphrase_dataset,
    load=load_paraphrase_dataset,
    identifiers="paraphrases:es, or paraphrases:<file.csv> "
    "with sent_more, sent_less, sent_more_par, sent_less_par",
)
register_metric(
    "robustness",
    label="Thesis paraphrase robustness (agreement)",
    family="language models",
    inputs=("sentence pairs", "scores"),
    model_kinds=("masked", "causal"),
    directional=False,
    test="agreement test, H1: the share of pairs keeping their preference under paraphrase < pr_rob",
    citation="Maddalozzo 2023 (seed 000)",
    section="seed 000 sections 4.3, 4.4.3",
    entry_point=agreement_test,
    summary="whether a pair's preference survives a paraphrase of both sentences",
    example=_example,
    grid=GridSupport(
        "paraphrases",
        grid_cell,
        reading_methods("robustness_reading", "robustness_causal_reading"),
        {"static": "the pairs are scored by a language model"},
        options=(
            *reading_options("cp"),
            Option(
                "rule",
                "sign",
                "M_bias from M_diff: its sign (Kwon et al.) or the interval",
                choices=("sign", "interval"),
            ),
            Option(
                "bound",
                3.5,
                "the interval rule's half-width: no preference within [-bound, bound]",
                types=(float, int),
            ),
            Option("pr_rob", 0.8, "the agreement a robust measure keeps (H0: l1 = pr_rob)", types=(float,)),
        ),
    ),
    calibration=CalibrationSupport(
        (
            CalibrationMeasure(
                key="thesis_robustness",
                label="Thesis robustness: cp preference kept under paraphrase (%)",
                kind="agreement",
                model_kind="masked",
                values=_calibration_values,
            ),
        )
    ),
)
