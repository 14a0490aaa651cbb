r"""The mean cosine gap: a toy bias metric that biaskit finds through its entry point.

Everything biaskit needs is declared here, with the ``@metric`` decorator: the grid reads word-set
datasets (``"words"``) with the metric's own option ``mean_cosine_gap_alternative``; the calibration
gets one static measure; the conformance tests run :func:`example`.  The permutation test is biaskit's
one driver (:func:`biaskit.core.permutation.permutation_test`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from biaskit.core.permutation import Partitions, permutation_test
from biaskit.core.registry import (
    CalibrationCall,
    CalibrationMeasure,
    CalibrationSupport,
    GridCall,
    GridSupport,
    MetricValues,
    Option,
    metric,
)
from biaskit.core.results import TestResult

MALE = ("he", "him", "his", "man", "boy", "father", "son", "brother")
FEMALE = ("she", "her", "hers", "woman", "girl", "mother", "daughter", "sister")


def cosine_gaps(words, A, B, vectors) -> np.ndarray:
    r"""g(w) = mean_{a in A} cos(w, a) - mean_{b in B} cos(w, b) for every word w."""

    def unit(ws):
        m = np.stack([np.asarray(vectors[w], dtype=np.float64) for w in ws])
        return m / np.linalg.norm(m, axis=1, keepdims=True)

    W = unit(words)
    return (W @ unit(A).T).mean(axis=1) - (W @ unit(B).T).mean(axis=1)


def gap_cell(call: GridCall) -> list[dict[str, Any]]:
    """One grid cell: the gap of the query's X and Y words, with this metric's own alternative."""
    q = call.data
    res = mean_cosine_gap(
        q.X, q.Y, q.A, q.B, call.model,
        alternative=call.option("alternative"), n_permutations=int(call.options["n_permutations"]),
        random_state=call.options["random_state"],
    )  # fmt: skip
    return GridSupport.rows_from_result(res, targets=f"{q.names[0]} vs {q.names[1]}")


def gap_values(call: CalibrationCall) -> MetricValues:
    """The calibration's values on a static control: g(profession) with A = male, B = female words."""
    vectors = call.model
    kept = [t for t in call.targets if t in vectors.key_to_index]
    male = [w for w in MALE if w in vectors.key_to_index]
    female = [w for w in FEMALE if w in vectors.key_to_index]
    gaps = cosine_gaps(kept, male, female, vectors)
    return MetricValues("mean_cosine_gap", "groups", np.array(kept, object), gaps, unit="profession")


def example() -> TestResult:
    """The metric on biaskit's toy word vectors."""
    from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, TOY_X, TOY_Y, toy_vectors

    return mean_cosine_gap(TOY_X, TOY_Y, TOY_MALE, TOY_FEMALE, toy_vectors(), n_permutations=200)


@metric(
    name="mean_cosine_gap",
    label="Mean cosine gap (toy plug-in)",
    family="word vectors",
    inputs=("word sets",),
    model_kinds=("static",),
    directional=True,
    test="permutation test over X u Y (biaskit's driver)",
    citation="biaskit-toy-metric, a test package (after Caliskan et al. 2017)",
    section="none (a plug-in example)",
    summary="mean cosine gap to A versus B of the X words minus that of the Y words",
    grid=GridSupport(
        "words",
        gap_cell,
        options=(
            Option(
                name="alternative",
                default="two-sided",
                help="the alternative of the permutation test",
                choices=("two-sided", "greater", "less"),
            ),
        ),
    ),
    calibration=CalibrationSupport(
        (
            CalibrationMeasure(
                key="mean_cosine_gap",
                label="Mean cosine gap (word2vec), per profession",
                kind="groups",
                model_kind="static",
                values=gap_values,
            ),
        )
    ),
    example=example,
)
def mean_cosine_gap(
    X,
    Y,
    A,
    B,
    vectors,
    *,
    alternative: str = "two-sided",
    n_permutations: int = 10_000,
    random_state: int = 0,
) -> TestResult:
    r"""Mean cosine gap of X against Y (Caliskan et al. 2017's association, as a difference of means).

    .. math:: \mathrm{gap} = \overline{g(X)} - \overline{g(Y)}, \quad
              g(w) = \overline{\cos(w, A)} - \overline{\cos(w, B)}

    Test: permutation test over the partitions of X u Y (exact when there are few).
    """
    g = cosine_gaps([*X, *Y], A, B, vectors)
    k = len(X)

    def statistic(masks: np.ndarray) -> np.ndarray:
        m = masks.astype(np.float64)
        return (m @ g) / k - ((1.0 - m) @ g) / (g.size - k)

    perm = permutation_test(
        statistic, Partitions(g.size, k), alternative=alternative, n_permutations=n_permutations,
        random_state=random_state,
    )  # fmt: skip
    return TestResult(
        statistic=float(perm.observed),
        p_value=float(perm.p_value),
        method=f"mean cosine gap, permutation test ({perm.label()})",
        alternative=alternative,
        n=int(g.size),
        effect_size=float(perm.observed),
        details={**perm.details(), "gaps": dict(zip([*X, *Y], g.tolist(), strict=True))},
    )
