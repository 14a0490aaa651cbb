r"""Debiasing against a bias we planted: does each method remove it, or only hide it?

The planted controls (:mod:`biaskit.training.recipes`, notebook 14) give a bias of known strength: 40
professions, each tied to a randomly chosen gender in a share ``s`` of its training sentences
(``s = 0.5`` plants nothing).  This study applies each debiasing method to the controls and asks, for
every measure and skew, how much of the planted effect is left, and whether what is left is gone or
only out of the measure's sight.

Methods on the word vectors (``en-planted-w2v``, one file per skew).  None is given the planted labels:

``hard_debias``
    Bolukbasi et al. (2016), :class:`biaskit.debiasing.hard_debias.HardDebias`: neutralise every word
    that is not gender-specific (Bolukbasi's 1,441 words, the CDS lexicon's gendered words and first
    names; the 40 professions are neutral), equalise Bolukbasi's pairs.
``inlp``
    Ravfogel et al. (2020), :class:`biaskit.debiasing.inlp.INLP`, fitted on an outside list
    (:func:`inlp_word_sets`): the gendered words and first names of the CDS lexicon, chosen without
    looking at the vectors, minus the professions and minus the words the measures read (WEAT's
    he/she words, Bolukbasi's definitional pairs).  A share ``inlp_held_out`` of them is held out: INLP
    stops when its classifier is at chance on them, and a fresh linear probe is scored on them after
    the projection (:meth:`biaskit.debiasing.inlp.INLP.held_out_probe`).  (The most gendered words of
    the vocabulary by their projection, the usual choice, are here mostly the professions' own context
    words, which carry the plan.)
``glpp``
    Wang et al. (2022), :class:`biaskit.debiasing.glpp.GLPP` (seed 000 section 3.3.6), fitted on the
    whole vocabulary: a re-projection, not a debiasing method, included as the thesis asks whether it
    changes the bias measures (notebook 09).

Measures: the calibrated static measures of notebook 14 that read the vectors (``weat``,
``direct_bias``; ``pmi`` reads the corpus, which no vector method changes), evaluated as the
calibration does (:func:`biaskit.studies.calibration.evaluate`: effect toward the planted gender, its
label-permutation test).  Beside a fragile statistic, a robust one (:data:`COMPANIONS`, family
``"robust"``): DirectBias recomputes Bolukbasi's PCA direction in the debiased space, which a
re-projection can scatter (GLPP: the definitional pairs no longer share one direction), so
``direct_bias_pairs`` reads the professions along the mean of the pairs' unit differences instead; a
share-of-items (sign) measure is blind to how far a global shift moves every item (a model that prefers
*she* everywhere gives 50 % whatever the plan), so it gets the mean paired log-probability difference on
the same items.  Recovery tests (:mod:`biaskit.metrics.recovery`) on the 40 professions with their
planted gender as label: Gonen & Goldberg's k-means clustering accuracy, cross-validated RBF-SVM
accuracy and the correlation of the planted gender with the share of male-biased words (original bias)
among each profession's ``neighbour_k`` nearest neighbours, and a cross-validated linear probe
(logistic regression: what INLP claims to remove).

Every statistic is compared with its value on the **balanced control** (``s = 0.5``, nothing planted)
of the same model kind under the same method: all the controls share their base text and the planted
labels, so a chance alignment of the labels with that text shows at every skew (the neighbour test
gives r = 0.29 on the balanced word vectors, the masked model's clustering 67.5 %) and is no evidence
of a plan.  The comparison (:func:`compare_with_control`) is the difference of the effects, skew minus
control, with a percentile bootstrap interval over the professions (resampled within each planted
gender, the same draw for both models; clustering and out-of-fold predictions kept fixed, so the
interval is conditional on them); a statistic is **above the control** when the interval's lower end is
above 0.  Intervals are at ``1 - alpha`` for the measures and ``1 - alpha / n`` for the ``n`` recovery
tests (Bonferroni).  Verdict of a calibrated measure at ``s > 0.5`` (:func:`verdict_against_control`):

* ``not found before``: on the original model, neither the measure nor its robust companion is above
  the original balanced control;
* ``intact``: after debiasing, the measure or its robust companion is above the debiased balanced
  control (``verdict_basis`` names which; ``own_verdict`` is the verdict of the measure's own statistic
  alone, so a disagreement shows);
* ``hidden``: both are at the control's level, and a recovery test is above the control;
* ``removed``: the measure, its companion and every recovery test are at the control's level.

``verdict_vs_chance`` keeps the earlier rule (p-values against chance, :func:`verdict`) for comparison.
At ``s = 0.5`` the check is the reverse: a method must not *create* a bias, so a measure significant
after (Bonferroni over the calibrated measures) but not before is flagged ``created``.  The share of the
planted effect left,

.. math:: \mathrm{left} = \frac{E_\mathrm{after} - E_0}{E_\mathrm{before} - E_0}

(:math:`E_0` the no-effect level: 0 for the group differences and the correlation, 50 % for the
accuracies), has a bootstrap interval drawn the same way.  ``chance`` in the tables is the mean of the
permutation distribution of the statistic actually used (k-means takes the better of the two ways to
name its clusters, so its chance on 40 professions is well above 50 %), or the binomial test's null
for the classifiers.

Costs: SimLex-999 Spearman rho and Google-analogy accuracy (:mod:`biaskit.debiasing.costs`) before and
after.  :func:`gonen_goldberg_replication` runs the recovery tests on a real embedding (Bolukbasi's
GoogleNews subset) with Gonen & Goldberg's word selection.

Language models (:func:`run_contextual_study`): the masked controls ``en-planted-sXX`` debiased by CDS
fine-tuning, dropout debiasing (Webster et al. 2020), INLP on the sentence representation and
SentenceDebias (Liang et al. 2020; both hooked before the LM head, :mod:`biaskit.debiasing.sentence_debias`),
and, with ``causal=True``, the same four methods on the causal twins ``en-clm-planted-sXX``
(``ContextualStudyConfig.causal_methods``): CDS and dropout there continue training with the next-token
objective (:func:`biaskit.training.fine_tune.fine_tune` on a causal model; dropout on GPT-2's ``attn_pdrop``,
``resid_pdrop`` and ``embd_pdrop``).  The measures are the calibrated masked (or causal: sentence
log-likelihood pairs, next-word probabilities, sentence-likelihood difference) measures of notebook 14 with
their robust companions, and the same recovery tests on the professions' contextual representations
(:func:`biaskit.embeddings.contextual.contextual_word_vectors`, read after every method, the fine-tunes
included); the cost is the held-out pseudo-perplexity (masked) or perplexity (causal).  The same tables,
comparisons with the balanced control and verdicts as for the word vectors.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from gensim.models import KeyedVectors

from biaskit.studies import calibration as cal

logger = logging.getLogger(__name__)

__all__ = [
    "CALIBRATED_STATIC",
    "COMPANIONS",
    "RECOVERY_TESTS",
    "STATIC_METHODS",
    "ControlComparison",
    "DebiasingStudyResult",
    "StaticStudyConfig",
    "compare_with_control",
    "control_directions",
    "debias_vectors",
    "gender_specific_words",
    "gonen_goldberg_replication",
    "inlp_word_sets",
    "measure_label",
    "pair_direction",
    "run_static_study",
    "share_left",
    "verdict",
    "verdict_against_control",
]

STATIC_METHODS: tuple[str, ...] = ("hard_debias", "inlp", "glpp")
METHOD_LABELS: dict[str, str] = {
    "original": "original (no debiasing)",
    "hard_debias": "Hard debias (Bolukbasi et al. 2016)",
    "inlp": "INLP (Ravfogel et al. 2020)",
    "glpp": "GLPP (Wang et al. 2022)",
    "cds": "CDS fine-tuning (Webster et al. 2020; Barza 2023)",
    "dropout": "Dropout debiasing (Webster et al. 2020)",
    "inlp_sentence": "INLP on the sentence representation (Ravfogel et al. 2020)",
    "sentence_debias": "SentenceDebias (Liang et al. 2020)",
}
#: the calibrated measures of notebook 14 that read word vectors (pmi reads the corpus)
CALIBRATED_STATIC: tuple[str, ...] = ("weat", "direct_bias")
#: the recovery tests: Gonen & Goldberg's three (registered in :mod:`biaskit.metrics.recovery`) and a
#: linear probe (Ravfogel et al.'s test of what INLP removes)
RECOVERY_TESTS: tuple[str, ...] = ("gg_clustering", "gg_classifier", "gg_neighbours", "linear_probe")
RECOVERY_LABELS: dict[str, str] = {
    "gg_clustering": "Recovery: k-means clustering accuracy (%)",
    "gg_classifier": "Recovery: RBF-SVM accuracy, cross-validated (%)",
    "gg_neighbours": "Recovery: bias by neighbours, correlation r",
    "linear_probe": "Recovery: linear probe (logistic regression) accuracy, cross-validated (%)",
}
#: a fragile measure -> its robust companion: a direction that needs no PCA, or the magnitude (mean paired
#: log-probability difference) beside a share-of-items count
COMPANIONS: dict[str, str] = {
    "direct_bias": "direct_bias_pairs",
    "stereoset_ss": "stereoset_log_ratio",
    "causal_next_word": "causal_next_word_log_ratio",
    "causal_ll": "causal_ll_mean",
    "crows_cp": "crows_cp_mean",
    "crows_sz": "crows_sz_mean",
    "crows_aul": "crows_aul_mean",
}
COMPANION_LABELS: dict[str, str] = {
    "direct_bias_pairs": "DirectBias along the mean of the definitional pairs' differences (no PCA), "
    "mean cosine difference",
    "stereoset_log_ratio": "StereoSet-style blanks: mean log P(he) - log P(she), toward the planted gender",
    "causal_next_word_log_ratio": "Next word after the profession: mean log P(he) - log P(she), "
    "toward the planted gender",
    "causal_ll_mean": "CrowS-style pairs (causal log-likelihood): mean log-likelihood difference, "
    "toward the planted gender",
    "crows_cp_mean": "CrowS-Pairs CP: mean pseudo-log-likelihood difference, toward the planted gender",
    "crows_sz_mean": "CrowS-Pairs SZ: mean pseudo-log-likelihood difference, toward the planted gender",
    "crows_aul_mean": "CrowS-Pairs AUL: mean log-likelihood difference, toward the planted gender",
}
#: the balanced control: nothing planted
CONTROL_S: float = 0.5
VERDICTS: tuple[str, ...] = ("removed", "hidden", "intact", "not found before", "created", "none created")
#: the verdict of a recovery test's row
ABOVE, AT_CONTROL, IS_CONTROL = "above the control", "at the control's level", "balanced control"


@dataclass(frozen=True)
class StaticStudyConfig:
    """Settings of :func:`run_static_study` (every field a notebook parameter can override).

    ``inlp_held_out``: the share of INLP's fitting words held out (its stopping rule and the probe).
    """

    methods: tuple[str, ...] = STATIC_METHODS
    inlp_iterations: int = 20
    inlp_held_out: float = 0.25
    glpp_components: int = 50
    glpp_neighbors: int = 10
    glpp_eta: float = 0.5
    neighbour_k: int = 50
    n_permutations: int = 1000
    n_boot: int = 1000
    alpha: float = 0.05
    random_state: int = 0

    def key(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


# --------------------------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------------------------
def control_directions() -> dict[str, str]:
    """The planted plan of the controls: profession -> ``"male"`` / ``"female"`` (the same at every skew)."""
    from biaskit.lm.catalogue import CONTROL_SKEWS, control_name, training_record

    return dict(training_record(control_name(max(CONTROL_SKEWS)))["directions"])


def gender_specific_words(targets: Sequence[str] = ()) -> frozenset[str]:
    """Words that hard debiasing must not neutralise: Bolukbasi's 1,441 gender-specific words, the CDS
    lexicon's gendered words and first names (:func:`biaskit.data.counterfactual.load_gender_lexicon`),
    in lower case too; ``targets`` (the planted professions) are never among them."""
    from biaskit.data.counterfactual import load_gender_lexicon
    from biaskit.data.wordlists import load_bolukbasi_wordlists

    lex = load_gender_lexicon()
    words = set(load_bolukbasi_wordlists()["specific_full"])
    words |= {w.lower() for w in words}
    words |= set(lex.to_female) | set(lex.to_male) | set(lex.name_to_female) | set(lex.name_to_male)
    clash = words & set(targets)
    if clash:
        logger.info(
            "gender-specific lists name planted targets %s; they are treated as neutral", sorted(clash)
        )
    return frozenset(words - set(targets))


def measured_gender_words() -> frozenset[str]:
    """The gendered words the static measures read: WEAT's he/she sets and Bolukbasi's definitional pairs
    (as written and in lower case)."""
    from biaskit.data.wordlists import load_bolukbasi_wordlists

    wl = load_bolukbasi_wordlists()
    words = {*cal.MALE_WORDS, *cal.FEMALE_WORDS, *wl["definitional_male"], *wl["definitional_female"]}
    return frozenset(words | {w.lower() for w in words})


def inlp_word_sets(vectors: KeyedVectors, targets: Sequence[str] = ()) -> dict[str, list[str]]:
    """INLP's fitting words on word vectors, ``{"male": [...], "female": [...]}``: the gendered words and
    first names of the CDS lexicon (:func:`biaskit.data.counterfactual.load_gender_lexicon`; an outside list
    whose gender is the lexicon's, not the vectors'), in ``vectors``, minus ``targets`` and minus the words
    the measures read (:func:`measured_gender_words`), in the lexicon's order."""
    from biaskit.data.counterfactual import load_gender_lexicon

    lex = load_gender_lexicon()
    skip = measured_gender_words() | set(targets)
    sides = {"male": [*lex.to_female, *lex.name_to_female], "female": [*lex.to_male, *lex.name_to_male]}
    out = {
        g: [w for w in dict.fromkeys(ws) if w in vectors.key_to_index and w not in skip]
        for g, ws in sides.items()
    }
    both = set(out["male"]) & set(out["female"])
    out = {g: [w for w in ws if w not in both] for g, ws in out.items()}
    if min(len(ws) for ws in out.values()) < 4:
        raise ValueError(
            f"INLP needs gendered words of both sides in the vocabulary; found {len(out['male'])} male and "
            f"{len(out['female'])} female words of the CDS lexicon in these vectors"
        )
    return out


def male_direction(vectors: KeyedVectors) -> np.ndarray:
    """Bolukbasi's PCA gender direction of ``vectors``, oriented so that *he* has a positive projection."""
    from biaskit.metrics.direct_bias import bolukbasi_gender_direction

    g = bolukbasi_gender_direction(vectors).vector
    return -g if float(np.dot(vectors["he"], g)) < 0 else g


def pair_direction(vectors: KeyedVectors) -> np.ndarray:
    r"""The gender direction without PCA: the mean of the unit differences of Bolukbasi's definitional
    pairs, male minus female,
    :math:`g = \mathrm{unit}\big(\frac1K \sum_k \mathrm{unit}(\hat m_k - \hat f_k)\big)` (:math:`\hat w` the
    unit vector of :math:`w`; pairs with a word missing from ``vectors`` left out).

    Bolukbasi et al.'s PC1 of the same pairs is one direction only when the pairs share it (PC1 explains
    about 60 % of their variance in word2vec); after a re-projection such as GLPP they may not, and PC1
    then follows the largest chance spread of the pairs.  The mean difference needs no such agreement.
    """
    from biaskit.data.wordlists import load_bolukbasi_wordlists

    wl = load_bolukbasi_wordlists()
    pairs = [(m, f) for m, f in zip(wl["definitional_male"], wl["definitional_female"], strict=True)
             if m in vectors.key_to_index and f in vectors.key_to_index]  # fmt: skip
    if len(pairs) < 2:
        raise ValueError(f"only {len(pairs)} of Bolukbasi's definitional pairs are in the vocabulary")

    def unit(X: np.ndarray) -> np.ndarray:
        n = np.linalg.norm(X, axis=-1, keepdims=True)
        return np.divide(X, n, out=np.zeros_like(X), where=n > 0)

    M = unit(np.asarray(vectors[[m for m, _ in pairs]], dtype=np.float64))
    F = unit(np.asarray(vectors[[f for _, f in pairs]], dtype=np.float64))
    g = unit(unit(M - F).mean(axis=0))
    if not np.any(g):
        raise ValueError("the definitional pairs' differences cancel out: no mean direction")
    return g


def debias_vectors(
    method: str,
    vectors: KeyedVectors,
    targets: Sequence[str],
    config: StaticStudyConfig = StaticStudyConfig(),
) -> tuple[KeyedVectors, dict[str, Any]]:
    """``vectors`` debiased by ``method`` (:data:`STATIC_METHODS`), and what the method did."""
    if method == "hard_debias":
        from biaskit.debiasing.hard_debias import HardDebias

        hd = HardDebias()
        out = hd.fit(vectors, gender_specific=gender_specific_words(targets)).transform(vectors)
        equalised = {w for p in hd.equalize_pairs_ for w in p}
        weat_words = [w for w in (*cal.MALE_WORDS, *cal.FEMALE_WORDS) if w in vectors.key_to_index]
        return out, {"neutralised": hd.neutralised_, "equalised_pairs": len(hd.equalize_pairs_),
                     "explained_variance_pc1": float(hd.direction_.explained_variance_ratio[0]),
                     "weat_words_not_equalised": [w for w in weat_words if w not in equalised]}  # fmt: skip
    if method == "inlp":
        from biaskit.debiasing.inlp import INLP, held_out_rows

        sets = inlp_word_sets(vectors, targets)
        inlp = INLP(config.inlp_iterations, random_state=config.random_state)
        X, y = inlp.word_set_matrix(vectors, sets)
        test = held_out_rows(y, config.inlp_held_out, random_state=config.random_state)
        inlp.fit(X[~test], y[~test], X_dev=X[test], y_dev=y[test])
        probe = inlp.held_out_probe(X[~test], y[~test], X[test], y[test])
        return inlp.transform_vectors(vectors), {
            "rank_removed": inlp.rank_removed_,
            "iterations_asked": config.inlp_iterations,
            "first_accuracy": inlp.accuracies_[0],
            "last_accuracy": inlp.accuracies_[-1],
            "chance": inlp.chance_,
            "stopped": inlp.stopped_,
            "fit_words": {g: int(np.sum((y == g) & ~test)) for g in sets},
            "held_out_words": {g: int(np.sum((y == g) & test)) for g in sets},
            "word_list": (
                "CDS lexicon gendered words and first names, minus the measures' words and the professions"
            ),
            "probe_accuracy": probe["accuracy"],
            "probe_accuracy_before": probe["accuracy_before"],
            "probe_chance": probe["chance"],
            "probe_p_value": probe["p_value"],
            "probe_n": probe["n"],
        }
    if method == "glpp":
        from biaskit.debiasing.glpp import GLPP, apply_to_keyed_vectors

        X = np.asarray(vectors.vectors, dtype=np.float64)
        gl = GLPP(config.glpp_components, n_neighbors=config.glpp_neighbors, sigma2="median",
                  eta=config.glpp_eta, random_state=config.random_state).fit(X)  # fmt: skip
        return apply_to_keyed_vectors(gl, vectors), {"components": config.glpp_components}
    raise ValueError(f"unknown static debiasing method {method!r}; choose from {STATIC_METHODS}")


# --------------------------------------------------------------------------------------------
# per-profession values and effects
# --------------------------------------------------------------------------------------------
@dataclass
class UnitMeasure:
    """One measure on one model: a value per unit (``target`` names each unit's profession; a
    profession may have several units, e.g. sentence pairs), the effect and its p-value.

    ``kind``: the calibration's ``"sign"`` (% of units whose value points to the planted gender, ties
    left out), ``"mean"`` (mean value oriented toward the planted gender), ``"groups"`` (mean over the
    planted-male units minus mean over the planted-female ones), or, for the recovery tests,
    ``"cluster"`` (agreement of a unit's cluster with its label, accuracy max(a, 1 - a) in %),
    ``"accuracy"`` (correct out-of-fold prediction, in %), ``"correlation"`` (Pearson r of the planted
    sign with the value).  ``p_value`` is the label-permutation test for the calibrated measures
    (:func:`biaskit.studies.calibration.label_permutation_pvalue`, valid whatever the units share) and
    each recovery test's own.  ``chance``: the mean of the permutation distribution of the statistic (the
    binomial null for the classifiers); ``None`` where it is the no-effect level.
    """

    measure: str
    kind: str
    target: np.ndarray
    value: np.ndarray
    effect: float
    p_value: float | None
    toward_planted: bool
    chance: float | None = None

    @property
    def no_effect(self) -> float:
        return 50.0 if self.kind in ("cluster", "accuracy", "sign") else 0.0


def effect_of(
    kind: str, value: np.ndarray, signs: np.ndarray, weights: np.ndarray | None = None
) -> np.ndarray:
    """The effect of ``kind`` (:class:`UnitMeasure`) for each row of ``weights`` (one bootstrap draw per
    row: how often each unit is drawn); without ``weights``, the effect of all units once (a 1-array)."""
    v = np.asarray(value, dtype=np.float64)[None, :]
    s = np.asarray(signs, dtype=np.float64)[None, :]
    W = np.ones_like(v) if weights is None else np.atleast_2d(np.asarray(weights, dtype=np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        if kind == "groups":
            m = s > 0
            return (W * m * v).sum(1) / (W * m).sum(1) - (W * ~m * v).sum(1) / (W * ~m).sum(1)
        if kind == "sign":
            a = s * v
            return 100 * (W * (a > 0)).sum(1) / (W * (a != 0)).sum(1)
        if kind == "mean":
            return (W * s * v).sum(1) / W.sum(1)
        if kind == "cluster":
            a = (W * v).sum(1) / W.sum(1)
            return 100 * np.maximum(a, 1 - a)
        if kind == "accuracy":
            return 100 * (W * v).sum(1) / W.sum(1)
        if kind == "correlation":
            n = W.sum(1, keepdims=True)
            vc = v - (W * v).sum(1, keepdims=True) / n
            sc = s - (W * s).sum(1, keepdims=True) / n
            den = np.sqrt((W * vc**2).sum(1) * (W * sc**2).sum(1))
            return np.divide((W * vc * sc).sum(1), den, out=np.zeros(W.shape[0]), where=den > 0)
    raise ValueError(f"unknown kind {kind!r}")


def calibrated_measure(mv, directions: Mapping[str, str], config: Any) -> UnitMeasure:
    """A calibration measure's :class:`~biaskit.core.registry.MetricValues` as a :class:`UnitMeasure`:
    the calibration's effect (:func:`biaskit.studies.calibration.evaluate`) and its label-permutation test."""
    ev = cal.evaluate(mv, directions, n_permutations=config.n_permutations, random_state=config.random_state)
    return UnitMeasure(mv.metric, mv.kind, np.asarray(mv.target, object), np.asarray(mv.value, float),
                       ev.effect, ev.p_label, ev.toward_planted)  # fmt: skip


def recovery_measures(
    vectors: KeyedVectors,
    directions: Mapping[str, str],
    *,
    pool_bias: Mapping[str, float],
    neighbour_k: int,
    n_permutations: int,
    random_state: int = 0,
) -> dict[str, UnitMeasure]:
    """The recovery tests (:data:`RECOVERY_TESTS`) on the planted professions of ``vectors`` (word
    vectors, or a language model's :func:`biaskit.embeddings.contextual.contextual_word_vectors`),
    labelled by their planted gender.  ``pool_bias``: the *original* bias of the words among which the
    neighbour test looks for neighbours (cosine with the male-oriented direction of the undebiased model).
    The linear probe is :func:`biaskit.metrics.recovery.classifier_recovery` with a logistic regression."""
    from sklearn.linear_model import LogisticRegression

    from biaskit.metrics.recovery import classifier_recovery, cluster_recovery, neighbour_recovery

    targets = [t for t in directions if t in vectors.key_to_index]
    signs = np.array([1 if directions[t] == "male" else -1 for t in targets])
    tg = np.array(targets, object)
    rs = random_state
    out: dict[str, UnitMeasure] = {}
    c = cluster_recovery(vectors, signs, words=targets, n_permutations=n_permutations, random_state=rs)
    agree = (c.details["clusters"] == (signs > 0)).astype(float)
    out["gg_clustering"] = UnitMeasure("gg_clustering", "cluster", tg, agree, 100 * c.statistic, c.p_value,
                                       True, 100 * c.details["chance"])  # fmt: skip
    for key, clf in (("gg_classifier", None), ("linear_probe", LogisticRegression(max_iter=2000))):
        k = classifier_recovery(vectors, signs, words=targets, classifier=clf, random_state=rs)
        out[key] = UnitMeasure(key, "accuracy", tg, k.details["correct"].astype(float), 100 * k.statistic,
                               k.p_value, True, 100 * k.null_value)  # fmt: skip
    pool = [w for w in pool_bias if w in vectors.key_to_index]
    nb = neighbour_recovery(vectors, signs, words=targets, pool_words=pool, pool_bias=pool_bias,
                            k=neighbour_k, n_permutations=n_permutations, random_state=rs)  # fmt: skip
    out["gg_neighbours"] = UnitMeasure("gg_neighbours", "correlation", tg, nb.details["shares"], nb.statistic,
                                       nb.p_value, nb.statistic > 0, nb.details["chance"])  # fmt: skip
    return {k: out[k] for k in RECOVERY_TESTS}


def unit_measures(
    vectors: KeyedVectors,
    directions: Mapping[str, str],
    *,
    pool_bias: Mapping[str, float],
    config: StaticStudyConfig = StaticStudyConfig(),
) -> dict[str, UnitMeasure]:
    """The calibrated static measures, their robust companions (``direct_bias_pairs``:
    :func:`pair_direction`) and the recovery tests of one set of word vectors, per profession."""
    from biaskit.core.registry import MetricValues

    targets = [t for t in directions if t in vectors.key_to_index]
    out: dict[str, UnitMeasure] = {}
    for key, mv in cal.static_values(vectors, None, targets).items():
        if key in CALIBRATED_STATIC:
            out[key] = calibrated_measure(mv, directions, config)
    if "direct_bias" in CALIBRATED_STATIC:
        X = np.asarray(vectors[targets], dtype=np.float64)
        cos = X @ pair_direction(vectors) / np.linalg.norm(X, axis=1)
        mv = MetricValues("direct_bias_pairs", "groups", np.array(targets, object), cos, unit="profession")
        out["direct_bias_pairs"] = calibrated_measure(mv, directions, config)
    out.update(recovery_measures(vectors, directions, pool_bias=pool_bias, neighbour_k=config.neighbour_k,
                                 n_permutations=config.n_permutations,
                                 random_state=config.random_state))  # fmt: skip
    return out


def bootstrap_counts(
    professions: Sequence[str], directions: Mapping[str, str], n_boot: int, random_state: int = 0
) -> np.ndarray:
    """``(n_boot, len(professions))``: how often each profession is drawn in each bootstrap draw, the
    professions resampled with replacement within each planted gender (male first, then female, from
    ``numpy.random.default_rng(random_state)``)."""
    pos = {t: i for i, t in enumerate(professions)}
    rng = np.random.default_rng(random_state)
    counts = np.zeros((n_boot, len(professions)))
    for g in ("male", "female"):
        idx = np.array([pos[t] for t in professions if directions[t] == g], dtype=np.int64)
        draws = idx[rng.integers(0, idx.size, size=(n_boot, idx.size))]
        np.add.at(counts, (np.arange(n_boot)[:, None], draws), 1)
    return counts


def share_left(
    before: UnitMeasure,
    after: UnitMeasure,
    directions: Mapping[str, str],
    *,
    n_boot: int = 1000,
    confidence: float = 0.95,
    random_state: int = 0,
) -> tuple[float, float, float]:
    r"""Share of the planted effect left, :math:`(E_a - E_0)/(E_b - E_0)`, and its percentile bootstrap
    interval: professions resampled within each planted gender, each with all its units, before and
    after on the same draw."""
    if list(before.target) != list(after.target):
        raise ValueError("before and after must cover the same professions in the same order")
    signs = np.array([1.0 if directions[t] == "male" else -1.0 for t in before.target])
    e0 = before.no_effect
    point = (after.effect - e0) / (before.effect - e0) if before.effect != e0 else float("nan")
    profs = list(dict.fromkeys(before.target.tolist()))
    pos = {t: i for i, t in enumerate(profs)}
    unit_prof = np.array([pos[t] for t in before.target])
    W = bootstrap_counts(profs, directions, n_boot, random_state)[:, unit_prof]
    eb = effect_of(before.kind, before.value, signs, W)
    ea = effect_of(after.kind, after.value, signs, W)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (ea - e0) / (eb - e0)
    ratio = ratio[np.isfinite(ratio)]
    if ratio.size < n_boot // 2:
        return point, float("nan"), float("nan")
    a = (1 - confidence) / 2
    lo, hi = np.quantile(ratio, [a, 1 - a])
    return point, float(lo), float(hi)


@dataclass(frozen=True)
class ControlComparison:
    """A statistic at a planted skew against its value on the balanced control: ``difference`` (skew minus
    control) and its percentile bootstrap interval ``[low, high]`` at ``confidence``."""

    difference: float
    low: float
    high: float
    confidence: float

    @property
    def above(self) -> bool:
        """The statistic is above the control's level: the interval's lower end is above 0."""
        return bool(np.isfinite(self.low) and self.low > 0)


def compare_with_control(
    at_s: UnitMeasure,
    control: UnitMeasure,
    directions: Mapping[str, str],
    *,
    n_boot: int = 1000,
    confidence: float = 0.95,
    random_state: int = 0,
) -> ControlComparison:
    r"""``at_s``'s effect minus ``control``'s (the same statistic on the balanced control of the same
    model kind), with a percentile bootstrap interval.

    .. math:: \Delta = E_s - E_{0.5}, \qquad \Delta^{*}_b = E_s(w_b) - E_{0.5}(w_b)

    where :math:`w_b` is bootstrap draw :math:`b` of the professions (resampled within each planted
    gender, :func:`bootstrap_counts`), applied to both models: the two share their professions, their
    planted labels and their items, so the pairing removes what the professions have in common at
    every skew.  A clustering or an out-of-fold prediction is kept fixed (conditional interval).
    """
    if at_s.kind != control.kind:
        raise ValueError(f"{at_s.measure}: kinds differ ({at_s.kind!r} vs {control.kind!r} on the control)")
    profs = list(dict.fromkeys(at_s.target.tolist()))
    if set(profs) != set(control.target.tolist()):
        raise ValueError(f"{at_s.measure}: the skew and the balanced control cover different professions")
    pos = {t: i for i, t in enumerate(profs)}
    counts = bootstrap_counts(profs, directions, n_boot, random_state)

    def draws(m: UnitMeasure) -> np.ndarray:
        signs = np.array([1.0 if directions[t] == "male" else -1.0 for t in m.target])
        return effect_of(m.kind, m.value, signs, counts[:, [pos[t] for t in m.target]])

    d = draws(at_s) - draws(control)
    d = d[np.isfinite(d)]
    point = float(at_s.effect - control.effect)
    if d.size < n_boot // 2:
        return ControlComparison(point, float("nan"), float("nan"), confidence)
    a = (1 - confidence) / 2
    lo, hi = np.quantile(d, [a, 1 - a])
    return ControlComparison(point, float(lo), float(hi), confidence)


def _found(m: UnitMeasure, alpha: float) -> bool:
    return bool(m.p_value is not None and m.p_value < alpha and m.toward_planted)


def verdict(
    s: float,
    before: UnitMeasure,
    after: UnitMeasure,
    recovery_after: Mapping[str, UnitMeasure],
    alpha: float = 0.05,
    n_measures: int = 1,
) -> str:
    """The verdict of one calibrated measure against chance (the earlier rule, kept as
    ``verdict_vs_chance``): ``intact`` if the measure's p-value after is below ``alpha``, ``hidden`` if
    not but a recovery test's is (Bonferroni over the recovery tests), else ``removed``; ``not found
    before`` when the original model's p-value is not below ``alpha``.

    At s = 0.5 the check "does the method create a bias?" is Bonferroni-corrected over the method's
    ``n_measures`` calibrated measures (on the balanced control the planted labels mean nothing, so an
    uncorrected check fires on one measure in twenty by chance alone).
    """
    if np.isclose(s, CONTROL_S):
        created = _found(after, alpha / n_measures) and not _found(before, alpha)
        return "created" if created else "none created"
    if not _found(before, alpha):
        return "not found before"
    if _found(after, alpha):
        return "intact"
    n = max(len(recovery_after), 1)
    if any(_found(m, alpha / n) for m in recovery_after.values()):
        return "hidden"
    return "removed"


def verdict_against_control(
    found_before: bool,
    surface: Mapping[str, ControlComparison],
    recovery: Mapping[str, ControlComparison],
) -> tuple[str, str]:
    """The verdict of one calibrated measure at a planted skew, against the balanced control.

    ``found_before``: the measure (or its robust companion) was above the balanced control on the
    original model.  ``surface``: the measure's own statistic and its robust companion after debiasing,
    each against the debiased balanced control; ``recovery``: the recovery tests after debiasing, the
    same way.  Returns ``(verdict, basis)``: ``"not found before"``; ``"intact"`` when a surface statistic
    is above the control (``basis`` names the first that is); ``"hidden"`` when none is but a recovery test
    is (``basis``: the recovery tests above); ``"removed"`` when nothing is above the control
    (``basis``: every statistic consulted).
    """
    if not found_before:
        return "not found before", ", ".join(surface)
    above = [k for k, c in surface.items() if c.above]
    if above:
        return "intact", above[0]
    rec = [k for k, c in recovery.items() if c.above]
    if rec:
        return "hidden", ", ".join(rec)
    return "removed", ", ".join([*surface, *recovery])


# --------------------------------------------------------------------------------------------
# the study
# --------------------------------------------------------------------------------------------
@dataclass
class DebiasingStudyResult:
    """Tables of :func:`run_static_study` and :func:`run_contextual_study`.

    ``effects``: one row per method x measure x skew (``model, method, measure, label, family`` --
    ``"calibrated"``, ``"robust"`` (a companion, ``companion_of`` names its measure) or ``"recovery"`` --
    ``planted, before, after, no_effect, chance, p_before, p_after, share_left, ci_low, ci_high``, the
    comparison with the balanced control ``control_before, control_after, vs_control, vs_control_low,
    vs_control_high, vs_control_confidence, above_control, before_vs_control, before_vs_control_low,
    before_vs_control_high, before_above_control``, for a share-of-items measure the % of items leaning
    female whatever the plan ``toward_female_before, toward_female_after``, and ``verdict, verdict_basis,
    own_verdict, verdict_vs_chance``).  ``costs``: one row per method x skew (``simlex_rho``,
    ``simlex_pairs``, ``analogy_accuracy``, ``analogy_n``, ``family_accuracy``; method ``original`` for the
    undebiased vectors).  ``fitted``: what each method did (rank removed, words neutralised, ...).
    """

    effects: pd.DataFrame
    costs: pd.DataFrame
    config: StaticStudyConfig | ContextualStudyConfig
    directions: dict[str, str]
    fitted: dict[str, dict[float, dict[str, Any]]] = field(default_factory=dict)

    def verdicts(self) -> pd.DataFrame:
        """Method x calibrated measure: the verdict at every skew."""
        cm = self.effects[self.effects["family"] == "calibrated"]
        return cm.pivot_table(index=["method", "measure"], columns="planted", values="verdict",
                              aggfunc="first", sort=False)  # fmt: skip

    def method_verdicts(self) -> pd.DataFrame:
        """One row per model x method x planted skew above the control: how many calibrated measures got
        each verdict, and the method's verdict: ``intact`` if some measure is intact, else ``hidden`` if some
        is hidden, else ``removed`` if some is removed (every measure and recovery test at the control's
        level), else ``not found before``."""
        e = self.effects
        cm = e[(e["family"] == "calibrated") & (e["planted"] > CONTROL_S + 1e-9)]
        rows = []
        for (mo, me, s), g in cm.groupby(["model", "method", "planted"], sort=False):
            n = g["verdict"].value_counts()
            overall = next((v for v in ("intact", "hidden", "removed") if n.get(v, 0)), "not found before")
            rows.append({"model": mo, "method": me, "planted": s, "verdict": overall, "n_measures": len(g),
                         **{v: int(n.get(v, 0))
                            for v in ("intact", "hidden", "removed", "not found before")}})  # fmt: skip
        return pd.DataFrame(rows)

    def hiding_methods(self, min_s: float = 0.6) -> list[str]:
        """Methods with a ``hidden`` verdict for some calibrated measure at some skew >= ``min_s``."""
        e = self.effects
        rows = e[(e["verdict"] == "hidden") & (e["planted"] >= min_s - 1e-9) & (e["family"] == "calibrated")]
        return list(dict.fromkeys(rows["method"]))

    def created_bias(self) -> pd.DataFrame:
        """Rows at s = 0.5 where a measure finds a bias after debiasing that it did not find before."""
        e = self.effects
        return e[(e["verdict"] == "created")]

    def to_json(self) -> dict[str, Any]:
        def num(x: Any) -> Any:
            return None if x is None or (isinstance(x, float) and not np.isfinite(x)) else float(x)

        rows = []
        for r in self.effects.itertuples():
            rows.append({
                "model": r.model, "method": r.method, "measure": r.measure, "family": r.family,
                "planted": float(r.planted), "effect_before": num(r.before), "effect_after": num(r.after),
                "no_effect": float(r.no_effect), "chance": num(r.chance), "p_before": num(r.p_before),
                "p_after": num(r.p_after), "share_left": num(r.share_left),
                "share_left_ci": [num(r.ci_low), num(r.ci_high)], "vs_control": num(r.vs_control),
                "vs_control_ci": [num(r.vs_control_low), num(r.vs_control_high)],
                "vs_control_confidence": num(r.vs_control_confidence), "verdict": r.verdict,
                "verdict_basis": r.verdict_basis, "own_verdict": r.own_verdict,
                "verdict_vs_chance": r.verdict_vs_chance,
            })  # fmt: skip
        costs = [{k: (num(v) if isinstance(v, (float, np.floating)) else v) for k, v in r.items()}
                 for r in self.costs.to_dict("records")]  # fmt: skip
        return {"config": self.config.key(), "effects": rows, "costs": costs,
                "hiding_methods": self.hiding_methods(),
                "method_verdicts": self.method_verdicts().to_dict("records"),
                "created_bias_on_balanced_control":
                    self.created_bias()[["method", "measure"]].to_dict("records")}  # fmt: skip


def _is_control(s: float) -> bool:
    return bool(np.isclose(s, CONTROL_S))


def compare_rows(
    method: str,
    s: float,
    before: Mapping[str, UnitMeasure],
    after: Mapping[str, UnitMeasure],
    calibrated: Sequence[str],
    directions: Mapping[str, str],
    config: Any,
    *,
    model: str,
    control_before: Mapping[str, UnitMeasure] | None = None,
    control_after: Mapping[str, UnitMeasure] | None = None,
) -> list[dict[str, Any]]:
    """The rows of :attr:`DebiasingStudyResult.effects` for one method on one control: every calibrated
    measure, its robust companion (:data:`COMPANIONS`) and every recovery test before and after, the
    share left, the comparison with the balanced control and the verdicts (module docstring).

    ``control_before`` / ``control_after``: the measures of the balanced control (s = 0.5) of the same model
    kind before and after the same method; required for ``s > 0.5``, ignored at ``s = 0.5`` (the control).
    """
    is_control = _is_control(s)
    if not is_control and (control_before is None or control_after is None):
        raise ValueError(f"s = {s}: the verdicts compare each skew with the balanced control "
                         f"(s = {CONTROL_S}); give its measures "
                         "(control_before, control_after)")  # fmt: skip
    rec_keys = [k for k in RECOVERY_TESTS if k in after]
    alpha = config.alpha
    level = {k: 1 - alpha / max(len(rec_keys), 1) for k in rec_keys}

    def compare(
        x: Mapping[str, UnitMeasure], ctrl: Mapping[str, UnitMeasure] | None, key: str
    ) -> ControlComparison:
        if is_control or ctrl is None or key not in ctrl:
            return ControlComparison(float("nan"), float("nan"), float("nan"), level.get(key, 1 - alpha))
        return compare_with_control(x[key], ctrl[key], directions, n_boot=config.n_boot,
                                    confidence=level.get(key, 1 - alpha),
                                    random_state=config.random_state)  # fmt: skip

    keys: list[str] = []
    for key in calibrated:
        keys.append(key)
        if COMPANIONS.get(key) in after:
            keys.append(COMPANIONS[key])
    keys += rec_keys
    keys = [k for k in keys if k in before and k in after]
    cmp_after = {k: compare(after, control_after, k) for k in keys}
    cmp_before = {k: compare(before, control_before, k) for k in keys}
    rec_cmp = {k: cmp_after[k] for k in rec_keys if k in cmp_after}
    rec_after = {k: after[k] for k in rec_keys}
    companion_of = {v: k for k, v in COMPANIONS.items()}
    rows = []
    for key in keys:
        b, a = before[key], after[key]
        share, lo, hi = share_left(b, a, directions, n_boot=config.n_boot, random_state=config.random_state)
        family = "recovery" if key in rec_keys else ("calibrated" if key in calibrated else "robust")
        basis = own = None
        if family == "recovery":
            v = IS_CONTROL if is_control else (ABOVE if cmp_after[key].above else AT_CONTROL)
            vs_chance = "recovers the plan" if _found(a, alpha) else "chance level"
        else:
            vs_chance = verdict(s, b, a, rec_after, alpha, n_measures=len(calibrated))
            if is_control:
                v = own = vs_chance
            else:
                stats = [
                    key,
                    *([COMPANIONS[key]] if family == "calibrated" and COMPANIONS.get(key) in keys else []),
                ]
                v, basis = verdict_against_control(any(cmp_before[x].above for x in stats),
                                                   {x: cmp_after[x] for x in stats}, rec_cmp)  # fmt: skip
                own = verdict_against_control(cmp_before[key].above, {key: cmp_after[key]}, rec_cmp)[0]
        ca, cb = cmp_after[key], cmp_before[key]
        rows.append({
            "model": model, "method": method, "measure": key, "label": measure_label(key), "family": family,
            "companion_of": companion_of.get(key) if family == "robust" else None,
            "planted": s, "before": b.effect, "after": a.effect, "no_effect": b.no_effect,
            "chance": a.chance if a.chance is not None else a.no_effect,
            "p_before": b.p_value, "p_after": a.p_value, "found_before": _found(b, alpha),
            "found_after": _found(a, alpha), "share_left": share, "ci_low": lo, "ci_high": hi,
            "control_before": np.nan if is_control else control_before[key].effect,
            "control_after": np.nan if is_control else control_after[key].effect,
            "vs_control": ca.difference, "vs_control_low": ca.low, "vs_control_high": ca.high,
            "vs_control_confidence": ca.confidence, "above_control": ca.above,
            "before_vs_control": cb.difference, "before_vs_control_low": cb.low,
            "before_vs_control_high": cb.high, "before_above_control": cb.above,
            "toward_female_before": _female_share(b), "toward_female_after": _female_share(a),
            "verdict": v, "verdict_basis": basis, "own_verdict": own, "verdict_vs_chance": vs_chance,
        })  # fmt: skip
    return rows


def _female_share(m: UnitMeasure) -> float:
    """For a share-of-items measure: the % of items (ties left out) whose value leans female, whatever the
    plan (a model that prefers *she* on almost every item blinds the count toward the planted gender)."""
    if m.kind != "sign":
        return float("nan")
    v = np.asarray(m.value, dtype=np.float64)
    v = v[v != 0]
    return float(100 * np.mean(v < 0)) if v.size else float("nan")


def study_rows(
    model: str,
    methods: Sequence[str],
    before: Mapping[float, Mapping[str, UnitMeasure]],
    after: Mapping[str, Mapping[float, Mapping[str, UnitMeasure]]],
    calibrated: Sequence[str],
    directions: Mapping[str, str],
    config: Any,
) -> list[dict[str, Any]]:
    """:func:`compare_rows` for every method and skew of one model kind, each skew compared with the
    balanced control (``before[0.5]``, ``after[method][0.5]``), which must be among the skews."""
    skews = sorted(before)
    ctrl = [s for s in skews if _is_control(s)]
    if not ctrl:
        raise ValueError(f"{model}: the verdicts compare each skew with the balanced control, "
                         f"s = {CONTROL_S}; add it to the skews (got {skews})")  # fmt: skip
    c = ctrl[0]
    rows = []
    for s in skews:
        for method in methods:
            rows.extend(compare_rows(method, s, before[s], after[method][s], calibrated, directions, config,
                                     model=model, control_before=before[c],
                                     control_after=after[method][c]))  # fmt: skip
    return rows


def _costs(vectors: KeyedVectors) -> dict[str, Any]:
    from biaskit.debiasing.costs import analogy_accuracy
    from biaskit.debiasing.glpp import word_similarity_spearman

    sl = word_similarity_spearman(vectors, "simlex999")
    an = analogy_accuracy(vectors)
    return {"simlex_rho": sl.statistic, "simlex_pairs": int(sl.details["n_pairs"]),
            "analogy_accuracy": an["accuracy"], "analogy_n": an["n"],
            "family_accuracy": an["accuracy_family"], "family_n": an["n_family"],
            "other_accuracy": an["accuracy_other"], "other_n": an["n_other"]}  # fmt: skip


def measure_label(measure: str) -> str:
    """The words of a measure's key (the registry's calibration label, the recovery test's or the robust
    companion's)."""
    return (
        RECOVERY_LABELS.get(measure)
        or COMPANION_LABELS.get(measure)
        or cal.METRIC_LABELS.get(measure, measure)
    )


def run_static_study(
    vectors_by_skew: Mapping[float, KeyedVectors],
    directions: Mapping[str, str] | None = None,
    config: StaticStudyConfig = StaticStudyConfig(),
    *,
    costs: bool = True,
    progress: bool = False,
    single_thread: bool = True,
    debiasers: Mapping[str, Callable[[KeyedVectors], KeyedVectors]] | None = None,
) -> DebiasingStudyResult:
    """Every static method on every planted control (module docstring).

    ``vectors_by_skew``: skew -> the control's word vectors (e.g.
    ``load_trained_vectors("en-planted-w2v", s=s)``), the balanced control ``0.5`` among them;
    ``directions``: the planted plan (default :func:`control_directions`).  ``debiasers``: your own
    methods, name -> a function from word vectors to debiased word vectors, run instead of
    ``config.methods``.  ``single_thread`` runs the BLAS on one thread (the matrices are small; on a
    shared 2-core machine several threads only contend).
    """
    import contextlib

    from threadpoolctl import threadpool_limits
    from tqdm.auto import tqdm

    from biaskit.metrics.direct_bias import bolukbasi_gender_direction
    from biaskit.metrics.recovery import bias_by_projection

    directions = dict(control_directions() if directions is None else directions)
    targets = list(directions)
    skews = sorted(vectors_by_skew)
    if not any(_is_control(s) for s in skews):
        raise ValueError("the verdicts compare each skew with the balanced control: "
                         f"include s = {CONTROL_S} in vectors_by_skew (got {skews})")  # fmt: skip
    methods = list(debiasers) if debiasers is not None else list(config.methods)
    ctx = threadpool_limits(1) if single_thread else contextlib.nullcontext()
    cost_rows = []
    fitted: dict[str, dict[float, dict[str, Any]]] = {}
    before: dict[float, dict[str, UnitMeasure]] = {}
    after: dict[str, dict[float, dict[str, UnitMeasure]]] = {m: {} for m in methods}
    bar = tqdm(total=len(skews) * (1 + len(methods)), disable=not progress, desc="debiasing study")
    with ctx:
        for s in skews:
            kv = vectors_by_skew[s]
            missing = [t for t in targets if t not in kv.key_to_index]
            if missing:
                raise ValueError(f"s = {s}: planted targets missing from the vectors: {missing}")
            g = male_direction(kv)
            specific = gender_specific_words(targets)
            pool = [w for w in kv.index_to_key if w not in specific and w not in directions]
            pool_bias = dict(zip(pool, bias_by_projection(kv, pool, g), strict=True))
            before[s] = unit_measures(kv, directions, pool_bias=pool_bias, config=config)
            if costs:
                cost_rows.append({"method": "original", "planted": s, **_costs(kv)})
            bar.update()
            for method in methods:
                if debiasers is not None:
                    deb, info = debiasers[method](kv), {}
                else:
                    deb, info = debias_vectors(method, kv, targets, config)
                info["definitional_pc1_after"] = float(
                    bolukbasi_gender_direction(deb).explained_variance_ratio[0]
                )
                fitted.setdefault(method, {})[s] = info
                after[method][s] = unit_measures(deb, directions, pool_bias=pool_bias, config=config)
                if costs:
                    cost_rows.append({"method": method, "planted": s, **_costs(deb)})
                bar.update()
    bar.close()
    rows = study_rows("word2vec", methods, before, after, CALIBRATED_STATIC, directions, config)
    return DebiasingStudyResult(pd.DataFrame(rows), pd.DataFrame(cost_rows), config, directions, fitted)


# --------------------------------------------------------------------------------------------
# language models: the planted masked and causal controls
# --------------------------------------------------------------------------------------------
#: methods for the masked controls (``cds`` and ``dropout`` fine-tune; the other two project)
CONTEXTUAL_METHODS: tuple[str, ...] = ("cds", "dropout", "inlp_sentence", "sentence_debias")
#: the methods that need no training
PROJECTION_METHODS: tuple[str, ...] = ("inlp_sentence", "sentence_debias")
#: the calibrated masked measures of the default (the cheap ones) and of the full configuration
MASKED_MEASURES: tuple[str, ...] = ("stereoset_ss", "barza_tbe", "barza_sld", "lpbs", "seat")
MASKED_MEASURES_FULL: tuple[str, ...] = (
    "crows_cp", "crows_sz", "crows_aul", "stereoset_ss", "barza_tbe", "barza_sld", "lpbs", "seat",
    "indirect_names",
)  # fmt: skip
CAUSAL_MEASURES: tuple[str, ...] = ("causal_ll", "causal_next_word", "causal_sld")


@dataclass(frozen=True)
class ContextualStudyConfig:
    """Settings of :func:`run_contextual_study`.

    ``n_fit_pairs`` counterfactual GAP sentence pairs fit SentenceDebias (and give INLP its male and
    female sentences); ``n_train`` sentences train each fine-tune, ``epochs`` passes with ``batch_size``
    and ``learning_rate`` (the small controls need a larger rate than Bartl's 2e-5 for BERT).  CDS
    (``cds_text``): ``"in-domain"`` takes BUG sentences that name one of the 40 professions (the
    controls' own source text, before planting) and swaps each with probability 1/2 (Hall Maudslay et
    al. 2019), so every profession is as often *he* as *she*; ``"gap"`` takes Bartl's CDS-GAP (every
    gendered word of GAP's Wikipedia sentences swapped, notebook 15), which rarely names the
    professions.  Dropout trains on GAP's sentences as they are (Webster et al.: ordinary text).
    ``causal_methods``: the methods applied to the causal controls (all four by default; the fine-tunes
    use the same text and settings with the next-token objective; ``causal_max_steps``, when set, stops
    them after that many steps, the learning rate decaying to 0 over them: a shorter run).
    ``n_pool`` words (the most frequent of the control's
    word2vec vocabulary that are neither gendered nor planted) are the neighbours' pool;
    ``n_held_out`` held-out sentences of the control measure the cost.  ``inlp_held_out``: the share of
    INLP's male and female sentences held out (its stopping rule and the linear probe after it).
    """

    methods: tuple[str, ...] = CONTEXTUAL_METHODS
    measures: tuple[str, ...] = MASKED_MEASURES
    causal_measures: tuple[str, ...] = CAUSAL_MEASURES
    causal_methods: tuple[str, ...] = CONTEXTUAL_METHODS
    causal_max_steps: int | None = None
    n_fit_pairs: int = 500
    inlp_iterations: int = 10
    inlp_held_out: float = 0.25
    sentence_debias_components: int = 1
    n_train: int = 1000
    cds_text: str = "in-domain"
    epochs: int = 1
    batch_size: int = 16
    learning_rate: float = 5e-4
    n_pool: int = 300
    neighbour_k: int = 20
    n_held_out: int = 100
    n_permutations: int = 1000
    n_boot: int = 1000
    alpha: float = 0.05
    random_state: int = 0

    def fine_tune_config(self) -> Any:
        """Bartl et al.'s fine-tuning preset with this configuration's epochs, batch size and rate."""
        from biaskit.training.fine_tune import BARTL

        return replace(
            BARTL, epochs=self.epochs, batch_size=self.batch_size, learning_rate=self.learning_rate
        )

    def key(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


@dataclass
class LMFitData:
    """The text the language-model methods are fitted or trained on (GAP, never the planted corpus)."""

    pairs: list[tuple[str, str]]
    male: list[str]
    female: list[str]
    cds: list[str]
    plain: list[str]

    @classmethod
    def build(cls, config: ContextualStudyConfig, methods: Sequence[str] | None = None) -> LMFitData:
        """The fitting text of ``methods`` (default: ``config.methods``; the CDS text only when ``cds`` is
        among them)."""
        from biaskit.data.counterfactual import cds, targets_in
        from biaskit.debiasing.cds import cds_gap_corpus
        from biaskit.debiasing.sentence_debias import counterfactual_sentence_pairs, gendered_sentences
        from biaskit.lm.catalogue import CONTROL_TARGETS

        pairs = counterfactual_sentence_pairs(config.n_fit_pairs, seed=config.random_state)
        male, female = gendered_sentences(pairs)
        gap = cds_gap_corpus(config.n_train, seed=config.random_state)
        if "cds" not in (config.methods if methods is None else methods):
            swapped: list[str] = []
        elif config.cds_text == "gap":
            swapped = list(gap.sentences)
        elif config.cds_text == "in-domain":
            named = dict.fromkeys(CONTROL_TARGETS, "male")
            pool = [x for x in control_base().train if targets_in(x, named)]
            rng = np.random.default_rng(config.random_state)
            pick = np.sort(rng.choice(len(pool), size=min(config.n_train, len(pool)), replace=False))
            swapped = cds([pool[i] for i in pick], p=0.5, seed=config.random_state).sentences
        else:
            raise ValueError(f"cds_text must be 'in-domain' or 'gap', got {config.cds_text!r}")
        return cls(pairs, male, female, list(swapped), list(gap.original))


def debias_language_model(
    method: str, lm: Any, data: LMFitData, config: ContextualStudyConfig
) -> tuple[Any, dict]:
    """``lm`` debiased by ``method`` (:data:`CONTEXTUAL_METHODS`), and what the method did."""
    if method == "inlp_sentence":
        from biaskit.debiasing.sentence_debias import fit_sentence_inlp, project_hidden_states

        inlp = fit_sentence_inlp(lm, data.male, data.female, n_iterations=config.inlp_iterations,
                                 random_state=config.random_state,
                                 held_out_share=config.inlp_held_out)  # fmt: skip
        probe = inlp.held_out_probe_ or {}
        return project_hidden_states(lm, inlp.projection_, name=f"inlp{config.inlp_iterations}"), {
            "rank_removed": inlp.rank_removed_, "iterations_asked": config.inlp_iterations,
            "first_accuracy": inlp.accuracies_[0], "last_accuracy": inlp.accuracies_[-1],
            "chance": inlp.chance_, "stopped": inlp.stopped_, "sentences": len(data.male) + len(data.female),
            "probe_accuracy": probe.get("accuracy"), "probe_accuracy_before": probe.get("accuracy_before"),
            "probe_chance": probe.get("chance"), "probe_p_value": probe.get("p_value"),
            "probe_n": probe.get("n")}  # fmt: skip
    if method == "sentence_debias":
        from biaskit.debiasing.sentence_debias import SentenceDebias

        sd = SentenceDebias(config.sentence_debias_components).fit(lm, data.pairs)
        return sd.apply(lm), {"explained_variance_pc1": float(sd.explained_variance_ratio_[0]),
                              "pairs": len(data.pairs)}  # fmt: skip
    if method in ("cds", "dropout"):
        from biaskit.training.fine_tune import fine_tune, fine_tune_record

        cfg = config.fine_tune_config()  # masked: masked-LM objective; causal: next-token
        if lm.kind == "causal" and config.causal_max_steps is not None:
            cfg = replace(cfg, max_steps=config.causal_max_steps)
        if method == "cds":
            tuned = fine_tune(lm, data.cds, config=cfg, progress=False)
        else:
            from biaskit.debiasing.dropout import dropout_debias

            tuned = dropout_debias(lm, data.plain, config=cfg)
        rec = fine_tune_record(tuned)
        return tuned, {"sentences": len(data.cds if method == "cds" else data.plain),
                       "steps": rec.get("steps"), "seconds": rec.get("train_seconds"),
                       "final_loss": rec.get("final_loss"),
                       "objective": "causal" if lm.kind == "causal" else "masked"}  # fmt: skip
    raise ValueError(f"unknown language-model debiasing method {method!r}; choose from {CONTEXTUAL_METHODS}")


def lm_measures(
    lm: Any, directions: Mapping[str, str], measures: Sequence[str], config: Any
) -> dict[str, UnitMeasure]:
    """The calibrated measures ``measures`` of a masked or causal ``lm`` on the planted professions, and the
    robust companion (:data:`COMPANIONS`, :func:`magnitude_values`) of each that has one."""
    targets = list(directions)
    if lm.kind == "causal":
        values = cal.causal_language_model_values(lm, targets, metrics=list(measures))
    else:
        values = cal.language_model_values(lm, targets, metrics=list(measures))
    out = {}
    for k in measures:
        out[k] = calibrated_measure(values[k], directions, config)
        if k in COMPANIONS:
            out[COMPANIONS[k]] = calibrated_measure(
                magnitude_values(lm, values[k], targets), directions, config
            )
    return out


def magnitude_values(lm: Any, mv: Any, targets: Sequence[str]) -> Any:
    r"""The robust companion of a share-of-items measure ``mv`` (:data:`COMPANIONS`): the mean, not the sign,
    of the paired male-minus-female difference on the same items.

    For the blanks (``stereoset_ss``: the masked model's P(he) and P(she) at the blank; ``causal_next_word``:
    the causal model's next-word probabilities after the text before the blank) the value of a blank is
    :math:`\log P(he) - \log P(she)`, read again from the model: the probability difference the sign count
    reads shrinks toward 0 when the model prefers one pronoun everywhere, its logarithm does not.  For the
    sentence pairs (``causal_ll``, ``crows_*``) the value is already a log-likelihood difference.  A global
    shift (the same amount added to every item) leaves the label-permutation test of the mean unchanged, as
    every relabelling keeps 20 male- and 20 female-planted professions.
    """
    from biaskit.core.registry import MetricValues

    key = COMPANIONS[mv.metric]
    if mv.metric not in ("stereoset_ss", "causal_next_word"):
        return MetricValues(key, "mean", mv.target, np.asarray(mv.value, dtype=np.float64), unit=mv.unit)
    from biaskit.metrics.gender_templates import causal_pronoun_probabilities, mask_fill_probabilities

    blanks = cal.control_blanks(list(targets), cal.BLANK_TEMPLATES)
    if lm.kind == "causal":
        probs = causal_pronoun_probabilities(lm, blanks, [("he", "she")] * len(blanks))
    else:
        probs = mask_fill_probabilities(lm, blanks["sentence"].tolist(), [["he", "she"]] * len(blanks))
    probs = np.asarray(probs, dtype=np.float64)
    if list(blanks["target"]) != list(mv.target) or not np.allclose(
        probs[:, 0] - probs[:, 1], mv.value, atol=1e-6
    ):
        raise ValueError(f"{mv.metric}: the blanks read again do not match the measure's items")
    tiny = np.finfo(np.float64).tiny
    zero = int((probs <= 0).sum())
    if zero:
        logger.warning("%s: %d of %d pronoun probabilities are 0 in float precision; "
                       "their logarithm is taken at %g",
                       mv.metric, zero, probs.size, tiny)  # fmt: skip
    logp = np.log(np.maximum(probs, tiny))
    return MetricValues(key, "mean", blanks["target"].to_numpy(object), logp[:, 0] - logp[:, 1], unit="blank")


def contextual_words(s: float, directions: Mapping[str, str], n_pool: int) -> tuple[list[str], list[str]]:
    """``(pool, gender words)`` for the contextual recovery tests: the ``n_pool`` most frequent words of
    the skew's word2vec vocabulary that are neither gendered nor planted, and the words that define the
    gender direction (Bolukbasi's definitional pairs)."""
    from biaskit.data.wordlists import load_bolukbasi_wordlists
    from biaskit.embeddings.vectors import load_trained_vectors

    kv = load_trained_vectors("en-planted-w2v", s=s)
    specific = gender_specific_words(list(directions))
    pool = [w for w in kv.index_to_key if w.isalpha() and w not in specific and w not in directions][:n_pool]
    wl = load_bolukbasi_wordlists()
    return pool, [*wl["definitional_male"], *wl["definitional_female"]]


@functools.lru_cache(maxsize=1)
def control_base() -> Any:
    """The controls' BUG sentences before planting (:func:`biaskit.training.recipes.control_base_corpus`,
    read once per process: rebuilding it takes a quarter of a minute)."""
    from biaskit.training import recipes as tm

    return tm.control_base_corpus()


def _held_out(s: float, n: int) -> list[str]:
    from biaskit.training import recipes as tm

    return tm.planted_corpus(s, control_base().held_out).sentences[:n]


def lm_cost(lm: Any, sentences: Sequence[str]) -> float:
    """Held-out pseudo-perplexity (masked) or perplexity (causal) of ``lm`` on ``sentences``."""
    from biaskit.training.evaluation import causal_perplexity, pseudo_perplexity

    if lm.kind == "causal":
        return causal_perplexity(lm.model, lm.tokenizer, list(sentences))[0]
    return pseudo_perplexity(lm, list(sentences))[0]


def run_contextual_study(
    skews: Sequence[float] = (0.5, 0.8),
    config: ContextualStudyConfig = ContextualStudyConfig(),
    *,
    causal: bool = False,
    directions: Mapping[str, str] | None = None,
    costs: bool = True,
    progress: bool = False,
) -> DebiasingStudyResult:
    """Every language-model method on the planted masked controls (``en-planted-sXX``) and, with
    ``causal``, ``config.causal_methods`` on their causal twins (``en-clm-planted-sXX``; CDS and dropout
    fine-tune them with the next-token objective, cached like the masked fine-tunes).  ``skews`` must hold
    the balanced control, 0.5: every other skew is judged against it.

    Calibrated measures: ``config.measures`` (masked) / ``config.causal_measures`` (causal), with the
    calibration's items and its label-permutation test, and their robust companions (:func:`lm_measures`).
    Recovery tests (:data:`RECOVERY_TESTS`) on the professions' contextual representations
    (:func:`biaskit.embeddings.contextual.contextual_word_vectors`, the mean over bleached templates of the
    mean-pooled last hidden layer, *after* the debiasing: the projection, or the fine-tuned weights), the
    neighbours' original bias read on the undebiased model's representations.
    Costs (``costs``): held-out (pseudo-)perplexity on the control's held-out sentences.
    """
    from tqdm.auto import tqdm

    from biaskit.embeddings.contextual import contextual_word_vectors
    from biaskit.lm.catalogue import (
        causal_control_name,
        control_name,
        load_trained_clm,
        load_trained_mlm,
    )
    from biaskit.metrics.recovery import bias_by_projection

    directions = dict(control_directions() if directions is None else directions)
    targets = list(directions)
    skews = sorted(skews)
    if not any(_is_control(s) for s in skews):
        raise ValueError("the verdicts compare each skew with the balanced control: "
                         f"include s = {CONTROL_S} in skews, "
                         f"e.g. skews=({CONTROL_S}, {max(skews, default=0.8)})")  # fmt: skip
    unknown = [m for m in (*config.methods, *config.causal_methods) if m not in CONTEXTUAL_METHODS]
    if unknown:
        raise ValueError(
            f"unknown language-model debiasing method(s) {unknown}; choose from {CONTEXTUAL_METHODS}"
        )
    data = LMFitData.build(config, (*config.methods, *(config.causal_methods if causal else ())))
    kinds = ["masked", *(["causal"] if causal else [])]
    rows, cost_rows = [], []
    fitted: dict[str, dict[float, dict[str, Any]]] = {}
    kind_methods = {"masked": tuple(config.methods), "causal": tuple(config.causal_methods)}
    n_steps = sum(len(skews) * (1 + len(kind_methods[k])) for k in kinds)
    bar = tqdm(total=n_steps, disable=not progress, desc="debiasing language models")
    for kind in kinds:
        methods = kind_methods[kind]
        measures = config.measures if kind == "masked" else config.causal_measures
        label = "masked LM" if kind == "masked" else "causal LM"
        before: dict[float, dict[str, UnitMeasure]] = {}
        after: dict[str, dict[float, dict[str, UnitMeasure]]] = {m: {} for m in methods}
        for s in skews:
            lm = (load_trained_mlm(control_name(s), device="cpu") if kind == "masked"
                  else load_trained_clm(causal_control_name(s), device="cpu"))  # fmt: skip
            pool, gender_words = contextual_words(s, directions, config.n_pool)
            words = [*targets, *pool, *gender_words]
            kv0 = contextual_word_vectors(lm, words)
            g = male_direction(kv0)
            pool_bias = dict(zip(pool, bias_by_projection(kv0, pool, g), strict=True))

            def measure(
                model: Any, kv: KeyedVectors, measures=measures, pool_bias=pool_bias
            ) -> dict[str, UnitMeasure]:
                out = lm_measures(model, directions, measures, config)
                out.update(recovery_measures(kv, directions, pool_bias=pool_bias,
                                             neighbour_k=config.neighbour_k,
                                             n_permutations=config.n_permutations,
                                             random_state=config.random_state))  # fmt: skip
                return out

            held = _held_out(s, config.n_held_out) if costs else []
            before[s] = measure(lm, kv0)
            if costs:
                cost_rows.append({"model": label, "method": "original", "planted": s,
                                  "held_out_perplexity": lm_cost(lm, held),
                                  "n_held_out": len(held)})  # fmt: skip
            bar.update()
            for method in methods:
                deb, info = debias_language_model(method, lm, data, config)
                fitted.setdefault(f"{label}: {method}", {})[s] = info
                after[method][s] = measure(deb, contextual_word_vectors(deb, words))
                if costs:
                    cost_rows.append({"model": label, "method": method, "planted": s,
                                      "held_out_perplexity": lm_cost(deb, held),
                                      "n_held_out": len(held)})  # fmt: skip
                bar.update()
        rows.extend(study_rows(label, methods, before, after, measures, directions, config))
    bar.close()
    return DebiasingStudyResult(pd.DataFrame(rows), pd.DataFrame(cost_rows), config, directions, fitted)


# --------------------------------------------------------------------------------------------
# a real embedding: Gonen & Goldberg's experiments
# --------------------------------------------------------------------------------------------
def gonen_goldberg_replication(
    vectors: KeyedVectors | None = None,
    *,
    methods: Sequence[str] = ("hard_debias", "inlp"),
    n_cluster: int = 500,
    n_classify: int = 2500,
    train_size: int = 1000,
    k: int = 100,
    inlp_iterations: int = 35,
    inlp_words: int = 2500,
    analogy_sample: int | None = 2000,
    n_permutations: int = 1000,
    random_state: int = 0,
    single_thread: bool = True,
) -> pd.DataFrame:
    """Gonen & Goldberg's three tests, and the costs, on a real embedding before and after each method.

    ``vectors`` default: the bundled 26,423-word GoogleNews word2vec subset of Bolukbasi et al.
    (``load_reference_vectors("word2vec-googlenews-bolukbasi")``), the embedding G&G debiased with
    Bolukbasi's code.  Hard debias uses Bolukbasi's lists; INLP the ``inlp_words`` most male- and
    female-biased words outside the gender-specific list (Ravfogel et al. used 7,500 of 150,000 GloVe
    words, 35 iterations; here INLP stops earlier, with a WARNING, once its classifier is at chance on its own
    words).  One row per space x test: ``space, test, statistic, p_value, n``, the costs ``simlex_rho``,
    ``analogy_accuracy`` (a random sample of ``analogy_sample`` questions), and for INLP
    ``directions_removed`` and ``stopped`` (why it stopped before ``inlp_iterations``, or ``None``).
    """
    import contextlib

    from threadpoolctl import threadpool_limits

    from biaskit.debiasing.costs import analogy_accuracy
    from biaskit.debiasing.glpp import word_similarity_spearman
    from biaskit.metrics.recovery import gonen_goldberg_tests, most_biased_words

    if vectors is None:
        from biaskit.embeddings.vectors import load_reference_vectors

        vectors = load_reference_vectors("word2vec-googlenews-bolukbasi")
    from biaskit.data.wordlists import load_bolukbasi_wordlists

    spec = load_bolukbasi_wordlists()["specific_full"]
    specific = {f(w) for w in spec for f in (str, str.lower, str.upper, str.title)}
    ctx = threadpool_limits(1) if single_thread else contextlib.nullcontext()
    rows = []
    with ctx:
        g = male_direction(vectors)
        spaces: dict[str, KeyedVectors] = {}
        fit_notes: dict[str, dict[str, Any]] = {}
        for method in methods:
            if method == "hard_debias":
                from biaskit.debiasing.hard_debias import HardDebias

                spaces[method] = HardDebias().fit(vectors, gender_specific=specific).transform(vectors)
            elif method == "inlp":
                from biaskit.debiasing.inlp import INLP

                cand = [w for w in vectors.index_to_key if w not in specific]
                male, female = most_biased_words(vectors, g, inlp_words, candidates=cand)
                inlp = INLP(inlp_iterations, random_state=random_state).fit_words(
                    vectors, {"m": male, "f": female}
                )
                spaces[method] = inlp.transform_vectors(vectors)
                fit_notes[method] = {"directions_removed": inlp.rank_removed_, "stopped": inlp.stopped_}
            else:
                raise ValueError(f"unknown method {method!r}; choose from 'hard_debias', 'inlp'")
        res = gonen_goldberg_tests(vectors, spaces, direction=g, exclude=specific, n_cluster=n_cluster,
                                   n_classify=n_classify, train_size=train_size, k=k,
                                   random_state=random_state, n_permutations=n_permutations)  # fmt: skip
        for name, tests in res.items():
            kv = vectors if name == "original" else spaces[name]
            sl = word_similarity_spearman(kv, "simlex999")
            an = analogy_accuracy(kv, sample=analogy_sample, random_state=random_state)
            for test, r in tests.items():
                rows.append({"space": name, "test": test, "statistic": r.statistic, "p_value": r.p_value,
                             "n": r.n, "simlex_rho": sl.statistic, "simlex_pairs": sl.details["n_pairs"],
                             "analogy_accuracy": an["accuracy"], "analogy_n": an["n"],
                             "family_accuracy": an["accuracy_family"], "other_accuracy": an["accuracy_other"],
                             "directions_removed": fit_notes.get(name, {}).get("directions_removed"),
                             "stopped": fit_notes.get(name, {}).get("stopped")})  # fmt: skip
    return pd.DataFrame(rows)


def with_config(config: StaticStudyConfig, **changes: Any) -> StaticStudyConfig:
    """``config`` with some fields changed (a notebook's parameters)."""
    return replace(config, **changes)


#: the measures a reader sees, in order: the calibrated ones, then the recovery tests
MEASURES: tuple[str, ...] = (*CALIBRATED_STATIC, *RECOVERY_TESTS)
