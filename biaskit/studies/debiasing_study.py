r"""Debiasing against a bias we planted: does each method remove it, or only hide it?

The planted controls (:mod:`biaskit.training.recipes`, notebook 14) give a bias of known strength: 40
professions, each tied to a randomly chosen gender in a share ``s`` of its training sentences
(``s = 0.5`` plants nothing).  This study applies each debiasing method to the controls and asks, for
every measure and skew, how much of the planted effect is left, and whether what is left is gone or
only out of the measure's sight.

Methods on the word vectors (``en-planted-w2v``, one file per skew), each fitted on gender word lists
or on the vocabulary, never on the professions or their planted labels:

``hard_debias``
    Bolukbasi et al. (2016), :class:`biaskit.debiasing.hard_debias.HardDebias`: neutralise every word
    that is not gender-specific (Bolukbasi's 1,441 words, the CDS lexicon's gendered words and first
    names; the 40 professions are neutral), equalise Bolukbasi's pairs.
``inlp``
    Ravfogel et al. (2020), :class:`biaskit.debiasing.inlp.INLP`: the ``inlp_words`` most male- and
    most female-biased words of the vocabulary (by their projection on Bolukbasi's direction; the 40
    professions left out), ``inlp_iterations`` linear classifiers nulled out.
``glpp``
    Wang et al. (2022), :class:`biaskit.debiasing.glpp.GLPP` (seed 000 section 3.3.6), fitted on the
    whole vocabulary: a re-projection, not a debiasing method, included as the thesis asks whether it
    changes the bias measures (notebook 09).

Measures: the calibrated static measures of notebook 14 that read the vectors (``weat``,
``direct_bias``; ``pmi`` reads the corpus, which no vector method changes), evaluated as the
calibration does (:func:`biaskit.studies.calibration.evaluate`: effect toward the planted gender, its
permutation test), and Gonen & Goldberg's three recovery tests (:mod:`biaskit.metrics.recovery`) on
the 40 professions with their planted gender as label: k-means clustering accuracy, cross-validated
RBF-SVM accuracy, and the correlation of the planted gender with the share of male-biased words
(original bias) among each profession's ``neighbour_k`` nearest neighbours.

For each method x measure x skew: the planted effect **before** (original vectors) and **after**, its
test after, and the **share left**

.. math:: \mathrm{left} = \frac{E_\mathrm{after} - E_0}{E_\mathrm{before} - E_0}

(:math:`E_0` the no-effect level: 0 for the group differences and the correlation, 50 % for the
accuracies) with a percentile bootstrap interval over the professions (resampled within each planted
gender, before and after on the same draw; the clustering and the out-of-fold predictions are kept
fixed, so the interval is conditional on them).  Verdict of a calibrated measure at ``s > 0.5``:

* ``intact``: after debiasing the measure still finds the planted direction (p < alpha);
* ``hidden``: it no longer does, but a recovery test still finds the plan (Bonferroni over the three
  recovery tests: min p x 3 < alpha);
* ``removed``: neither the measure nor any recovery test finds it (the balanced control's level);
* ``not found before``: the measure did not find the plan on the original vectors either.

At ``s = 0.5`` (nothing planted) the check is the reverse: a method must not *create* a bias, so a
measure significant after (Bonferroni over the calibrated measures) but not before is flagged
``created``.

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
log-likelihood pairs, next-word probabilities, sentence-likelihood difference) measures of notebook 14 and
the same recovery tests on the professions' contextual representations
(:func:`biaskit.embeddings.contextual.contextual_word_vectors`); the cost is the held-out pseudo-perplexity
(masked) or perplexity (causal).  The same tables, verdicts and shares as for the word vectors.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from gensim.models import KeyedVectors

from biaskit.studies import calibration as cal

logger = logging.getLogger(__name__)

__all__ = [
    "CALIBRATED_STATIC",
    "RECOVERY_TESTS",
    "STATIC_METHODS",
    "DebiasingStudyResult",
    "StaticStudyConfig",
    "control_directions",
    "debias_vectors",
    "gender_specific_words",
    "gonen_goldberg_replication",
    "measure_label",
    "run_static_study",
    "share_left",
    "verdict",
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
#: Gonen & Goldberg's recovery tests (registered in :mod:`biaskit.metrics.recovery`)
RECOVERY_TESTS: tuple[str, ...] = ("gg_clustering", "gg_classifier", "gg_neighbours")
RECOVERY_LABELS: dict[str, str] = {
    "gg_clustering": "Recovery: k-means clustering accuracy (%)",
    "gg_classifier": "Recovery: RBF-SVM accuracy, cross-validated (%)",
    "gg_neighbours": "Recovery: bias by neighbours, correlation r",
}
VERDICTS: tuple[str, ...] = ("removed", "hidden", "intact", "not found before", "created", "none created")


@dataclass(frozen=True)
class StaticStudyConfig:
    """Settings of :func:`run_static_study` (every field a notebook parameter can override)."""

    methods: tuple[str, ...] = STATIC_METHODS
    inlp_iterations: int = 20
    inlp_words: int = 200
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
        logger.info("gender-specific lists name planted targets %s; they are treated as neutral", sorted(clash))
    return frozenset(words - set(targets))


def male_direction(vectors: KeyedVectors) -> np.ndarray:
    """Bolukbasi's PCA gender direction of ``vectors``, oriented so that *he* has a positive projection."""
    from biaskit.metrics.direct_bias import bolukbasi_gender_direction

    g = bolukbasi_gender_direction(vectors).vector
    return -g if float(np.dot(vectors["he"], g)) < 0 else g


def debias_vectors(
    method: str, vectors: KeyedVectors, targets: Sequence[str], config: StaticStudyConfig = StaticStudyConfig()
) -> tuple[KeyedVectors, dict[str, Any]]:
    """``vectors`` debiased by ``method`` (:data:`STATIC_METHODS`), and what the method did."""
    if method == "hard_debias":
        from biaskit.debiasing.hard_debias import HardDebias

        hd = HardDebias()
        out = hd.fit(vectors, gender_specific=gender_specific_words(targets)).transform(vectors)
        return out, {"neutralised": hd.neutralised_, "equalised_pairs": len(hd.equalize_pairs_),
                     "explained_variance_pc1": float(hd.direction_.explained_variance_ratio[0])}  # fmt: skip
    if method == "inlp":
        from biaskit.debiasing.inlp import INLP
        from biaskit.metrics.recovery import most_biased_words

        cand = [w for w in vectors.index_to_key if w not in set(targets)]
        male, female = most_biased_words(vectors, male_direction(vectors), config.inlp_words, candidates=cand)
        inlp = INLP(config.inlp_iterations, random_state=config.random_state)
        inlp.fit_words(vectors, {"male": male, "female": female})
        return inlp.transform_vectors(vectors), {
            "rank_removed": inlp.rank_removed_,
            "first_accuracy": inlp.accuracies_[0],
            "last_accuracy": inlp.accuracies_[-1],
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
    each recovery test's own.
    """

    measure: str
    kind: str
    target: np.ndarray
    value: np.ndarray
    effect: float
    p_value: float | None
    toward_planted: bool

    @property
    def no_effect(self) -> float:
        return 50.0 if self.kind in ("cluster", "accuracy", "sign") else 0.0


def effect_of(kind: str, value: np.ndarray, signs: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
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
    return UnitMeasure(mv.metric, mv.kind, np.asarray(mv.target, object), np.asarray(mv.value, float), ev.effect,
                       ev.p_label, ev.toward_planted)  # fmt: skip


def recovery_measures(
    vectors: KeyedVectors,
    directions: Mapping[str, str],
    *,
    pool_bias: Mapping[str, float],
    neighbour_k: int,
    n_permutations: int,
    random_state: int = 0,
) -> dict[str, UnitMeasure]:
    """Gonen & Goldberg's three tests on the planted professions of ``vectors`` (word vectors, or a
    language model's :func:`biaskit.embeddings.contextual.contextual_word_vectors`), labelled by
    their planted gender.  ``pool_bias``: the *original* bias of the words among which the neighbour
    test looks for neighbours (cosine with the male-oriented direction of the undebiased model)."""
    from biaskit.metrics.recovery import classifier_recovery, cluster_recovery, neighbour_recovery

    targets = [t for t in directions if t in vectors.key_to_index]
    signs = np.array([1 if directions[t] == "male" else -1 for t in targets])
    tg = np.array(targets, object)
    rs = random_state
    out: dict[str, UnitMeasure] = {}
    c = cluster_recovery(vectors, signs, words=targets, n_permutations=n_permutations, random_state=rs)
    agree = (c.details["clusters"] == (signs > 0)).astype(float)
    out["gg_clustering"] = UnitMeasure("gg_clustering", "cluster", tg, agree, 100 * c.statistic, c.p_value, True)
    k = classifier_recovery(vectors, signs, words=targets, random_state=rs)
    out["gg_classifier"] = UnitMeasure("gg_classifier", "accuracy", tg, k.details["correct"].astype(float),
                                       100 * k.statistic, k.p_value, True)  # fmt: skip
    pool = [w for w in pool_bias if w in vectors.key_to_index]
    nb = neighbour_recovery(vectors, signs, words=targets, pool_words=pool, pool_bias=pool_bias,
                            k=neighbour_k, n_permutations=n_permutations, random_state=rs)  # fmt: skip
    out["gg_neighbours"] = UnitMeasure("gg_neighbours", "correlation", tg, nb.details["shares"], nb.statistic,
                                       nb.p_value, nb.statistic > 0)  # fmt: skip
    return out


def unit_measures(
    vectors: KeyedVectors,
    directions: Mapping[str, str],
    *,
    pool_bias: Mapping[str, float],
    config: StaticStudyConfig = StaticStudyConfig(),
) -> dict[str, UnitMeasure]:
    """The calibrated static measures and the recovery tests of one set of word vectors, per profession."""
    targets = [t for t in directions if t in vectors.key_to_index]
    out: dict[str, UnitMeasure] = {}
    for key, mv in cal.static_values(vectors, None, targets).items():
        if key in CALIBRATED_STATIC:
            out[key] = calibrated_measure(mv, directions, config)
    out.update(recovery_measures(vectors, directions, pool_bias=pool_bias, neighbour_k=config.neighbour_k,
                                 n_permutations=config.n_permutations, random_state=config.random_state))  # fmt: skip
    return out


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
    rng = np.random.default_rng(random_state)
    counts = np.zeros((n_boot, len(profs)))
    for g in ("male", "female"):
        idx = np.array([pos[t] for t in profs if directions[t] == g])
        draws = idx[rng.integers(0, idx.size, size=(n_boot, idx.size))]
        for b in range(n_boot):
            np.add.at(counts[b], draws[b], 1)
    W = counts[:, unit_prof]
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
    """The verdict of one calibrated measure (module docstring); recovery tests Bonferroni-corrected.

    At s = 0.5 the check "does the method create a bias?" is Bonferroni-corrected over the method's
    ``n_measures`` calibrated measures (on the balanced control the planted labels mean nothing, so an
    uncorrected check fires on one measure in twenty by chance alone).
    """
    if np.isclose(s, 0.5):
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


# --------------------------------------------------------------------------------------------
# the study
# --------------------------------------------------------------------------------------------
@dataclass
class DebiasingStudyResult:
    """Tables of :func:`run_static_study`.

    ``effects``: one row per method x measure x skew (``method, measure, label, family, planted,
    before, after, no_effect, p_before, p_after, share_left, ci_low, ci_high, verdict``).  ``costs``:
    one row per method x skew (``simlex_rho``, ``simlex_pairs``, ``analogy_accuracy``,
    ``analogy_n``, ``family_accuracy``; method ``original`` for the undebiased vectors).
    ``fitted``: what each method did (rank removed, words neutralised, ...).
    """

    effects: pd.DataFrame
    costs: pd.DataFrame
    config: StaticStudyConfig | ContextualStudyConfig
    directions: dict[str, str]
    fitted: dict[str, dict[float, dict[str, Any]]] = field(default_factory=dict)

    def verdicts(self) -> pd.DataFrame:
        """Method x calibrated measure: the verdict at every skew."""
        cm = self.effects[self.effects["family"] == "calibrated"]
        return cm.pivot_table(index=["method", "measure"], columns="planted", values="verdict", aggfunc="first",
                              sort=False)  # fmt: skip

    def hiding_methods(self, min_s: float = 0.6) -> list[str]:
        """Methods with a ``hidden`` verdict for some calibrated measure at some skew >= ``min_s``."""
        e = self.effects
        rows = e[(e["verdict"] == "hidden") & (e["planted"] >= min_s - 1e-9)]
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
                "method": r.method, "measure": r.measure, "family": r.family, "planted": float(r.planted),
                "effect_before": num(r.before), "effect_after": num(r.after), "no_effect": float(r.no_effect),
                "p_before": num(r.p_before), "p_after": num(r.p_after), "share_left": num(r.share_left),
                "share_left_ci": [num(r.ci_low), num(r.ci_high)], "verdict": r.verdict,
            })  # fmt: skip
        costs = [{k: (num(v) if isinstance(v, (float, np.floating)) else v) for k, v in r.items()}
                 for r in self.costs.to_dict("records")]  # fmt: skip
        return {"config": self.config.key(), "effects": rows, "costs": costs,
                "hiding_methods": self.hiding_methods(),
                "created_bias_on_balanced_control": self.created_bias()[["method", "measure"]].to_dict("records")}  # fmt: skip


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
) -> list[dict[str, Any]]:
    """The rows of :attr:`DebiasingStudyResult.effects` for one method on one control: every calibrated
    measure and every recovery test before and after, the share left and the verdict."""
    rec_after = {k: after[k] for k in RECOVERY_TESTS if k in after}
    rows = []
    for key in (*calibrated, *RECOVERY_TESTS):
        if key not in before or key not in after:
            continue
        b, a = before[key], after[key]
        share, lo, hi = share_left(b, a, directions, n_boot=config.n_boot, random_state=config.random_state)
        if key in calibrated:
            v = verdict(s, b, a, rec_after, config.alpha, n_measures=len(calibrated))
        else:
            v = "recovers the plan" if _found(a, config.alpha) else "chance level"
        rows.append({
            "model": model, "method": method, "measure": key, "label": measure_label(key),
            "family": "calibrated" if key in calibrated else "recovery",
            "planted": s, "before": b.effect, "after": a.effect, "no_effect": b.no_effect,
            "p_before": b.p_value, "p_after": a.p_value, "found_before": _found(b, config.alpha),
            "found_after": _found(a, config.alpha), "share_left": share, "ci_low": lo, "ci_high": hi,
            "verdict": v,
        })  # fmt: skip
    return rows


def _costs(vectors: KeyedVectors) -> dict[str, Any]:
    from biaskit.debiasing.costs import analogy_accuracy
    from biaskit.debiasing.glpp import word_similarity_spearman

    sl = word_similarity_spearman(vectors, "simlex999")
    an = analogy_accuracy(vectors)
    return {"simlex_rho": sl.statistic, "simlex_pairs": int(sl.details["n_pairs"]),
            "analogy_accuracy": an["accuracy"], "analogy_n": an["n"], "family_accuracy": an["accuracy_family"],
            "family_n": an["n_family"], "other_accuracy": an["accuracy_other"], "other_n": an["n_other"]}  # fmt: skip


def measure_label(measure: str) -> str:
    """The words of a measure's key (the registry's calibration label, or the recovery test's)."""
    return RECOVERY_LABELS.get(measure) or cal.METRIC_LABELS.get(measure, measure)


def run_static_study(
    vectors_by_skew: Mapping[float, KeyedVectors],
    directions: Mapping[str, str] | None = None,
    config: StaticStudyConfig = StaticStudyConfig(),
    *,
    costs: bool = True,
    progress: bool = False,
    single_thread: bool = True,
) -> DebiasingStudyResult:
    """Every static method on every planted control (module docstring).

    ``vectors_by_skew``: skew -> the control's word vectors (e.g.
    ``load_trained_vectors("en-planted-w2v", s=s)``); ``directions``: the planted plan (default
    :func:`control_directions`).  ``single_thread`` runs the BLAS on one thread (the matrices are
    small; on a shared 2-core machine several threads only contend).
    """
    import contextlib

    from threadpoolctl import threadpool_limits
    from tqdm.auto import tqdm

    directions = dict(control_directions() if directions is None else directions)
    targets = list(directions)
    ctx = threadpool_limits(1) if single_thread else contextlib.nullcontext()
    rows, cost_rows = [], []
    fitted: dict[str, dict[float, dict[str, Any]]] = {}
    skews = sorted(vectors_by_skew)
    bar = tqdm(total=len(skews) * (1 + len(config.methods)), disable=not progress, desc="debiasing study")
    with ctx:
        for s in skews:
            kv = vectors_by_skew[s]
            missing = [t for t in targets if t not in kv.key_to_index]
            if missing:
                raise ValueError(f"s = {s}: planted targets missing from the vectors: {missing}")
            g = male_direction(kv)
            specific = gender_specific_words(targets)
            pool = [w for w in kv.index_to_key if w not in specific and w not in directions]
            from biaskit.metrics.recovery import bias_by_projection

            pool_bias = dict(zip(pool, bias_by_projection(kv, pool, g), strict=True))
            before = unit_measures(kv, directions, pool_bias=pool_bias, config=config)
            if costs:
                cost_rows.append({"method": "original", "planted": s, **_costs(kv)})
            bar.update()
            for method in config.methods:
                deb, info = debias_vectors(method, kv, targets, config)
                fitted.setdefault(method, {})[s] = info
                after = unit_measures(deb, directions, pool_bias=pool_bias, config=config)
                rows.extend(compare_rows(method, s, before, after, CALIBRATED_STATIC, directions, config,
                                         model="word2vec"))  # fmt: skip
                if costs:
                    cost_rows.append({"method": method, "planted": s, **_costs(deb)})
                bar.update()
    bar.close()
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
    "crows_cp", "crows_sz", "crows_aul", "stereoset_ss", "barza_tbe", "barza_sld", "lpbs", "seat", "indirect_names",
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
    ``n_held_out`` held-out sentences of the control measure the cost.
    """

    methods: tuple[str, ...] = CONTEXTUAL_METHODS
    measures: tuple[str, ...] = MASKED_MEASURES
    causal_measures: tuple[str, ...] = CAUSAL_MEASURES
    causal_methods: tuple[str, ...] = CONTEXTUAL_METHODS
    causal_max_steps: int | None = None
    n_fit_pairs: int = 500
    inlp_iterations: int = 10
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

        return replace(BARTL, epochs=self.epochs, batch_size=self.batch_size, learning_rate=self.learning_rate)

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


def debias_language_model(method: str, lm: Any, data: LMFitData, config: ContextualStudyConfig) -> tuple[Any, dict]:
    """``lm`` debiased by ``method`` (:data:`CONTEXTUAL_METHODS`), and what the method did."""
    if method == "inlp_sentence":
        from biaskit.debiasing.sentence_debias import fit_sentence_inlp, project_hidden_states

        inlp = fit_sentence_inlp(lm, data.male, data.female, n_iterations=config.inlp_iterations,
                                 random_state=config.random_state)  # fmt: skip
        return project_hidden_states(lm, inlp.projection_, name=f"inlp{config.inlp_iterations}"), {
            "rank_removed": inlp.rank_removed_, "first_accuracy": inlp.accuracies_[0],
            "last_accuracy": inlp.accuracies_[-1], "sentences": len(data.male) + len(data.female)}  # fmt: skip
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
        return tuned, {"sentences": len(data.cds if method == "cds" else data.plain), "steps": rec.get("steps"),
                       "seconds": rec.get("train_seconds"), "final_loss": rec.get("final_loss"),
                       "objective": "causal" if lm.kind == "causal" else "masked"}  # fmt: skip
    raise ValueError(f"unknown language-model debiasing method {method!r}; choose from {CONTEXTUAL_METHODS}")


def lm_measures(lm: Any, directions: Mapping[str, str], measures: Sequence[str], config: Any) -> dict[str, UnitMeasure]:
    """The calibrated measures ``measures`` of a masked or causal ``lm`` on the planted professions."""
    targets = list(directions)
    if lm.kind == "causal":
        values = cal.causal_language_model_values(lm, targets, metrics=list(measures))
    else:
        values = cal.language_model_values(lm, targets, metrics=list(measures))
    return {k: calibrated_measure(values[k], directions, config) for k in measures}


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
    fine-tune them with the next-token objective, cached like the masked fine-tunes).

    Calibrated measures: ``config.measures`` (masked) / ``config.causal_measures`` (causal), with the
    calibration's items and its label-permutation test.  Recovery tests: Gonen & Goldberg's three on
    the professions' contextual representations (:func:`biaskit.embeddings.contextual.contextual_word_vectors`,
    the mean over bleached templates of the mean-pooled last hidden layer, *after* the debiasing
    projection), the neighbours' original bias read on the undebiased model's representations.
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
    data = LMFitData.build(config, (*config.methods, *(config.causal_methods if causal else ())))
    kinds = ["masked", *(["causal"] if causal else [])]
    rows, cost_rows = [], []
    fitted: dict[str, dict[float, dict[str, Any]]] = {}
    unknown = [m for m in (*config.methods, *config.causal_methods) if m not in CONTEXTUAL_METHODS]
    if unknown:
        raise ValueError(f"unknown language-model debiasing method(s) {unknown}; choose from {CONTEXTUAL_METHODS}")
    kind_methods = {"masked": tuple(config.methods), "causal": tuple(config.causal_methods)}
    n_steps = sum(len(skews) * (1 + len(kind_methods[k])) for k in kinds)
    bar = tqdm(total=n_steps, disable=not progress, desc="debiasing language models")
    for kind in kinds:
        methods = kind_methods[kind]
        measures = config.measures if kind == "masked" else config.causal_measures
        label = "masked LM" if kind == "masked" else "causal LM"
        for s in skews:
            lm = (load_trained_mlm(control_name(s), device="cpu") if kind == "masked"
                  else load_trained_clm(causal_control_name(s), device="cpu"))  # fmt: skip
            pool, gender_words = contextual_words(s, directions, config.n_pool)
            words = [*targets, *pool, *gender_words]
            kv0 = contextual_word_vectors(lm, words)
            g = male_direction(kv0)
            pool_bias = dict(zip(pool, bias_by_projection(kv0, pool, g), strict=True))

            def measure(model: Any, kv: KeyedVectors, measures=measures, pool_bias=pool_bias) -> dict[str, UnitMeasure]:
                out = lm_measures(model, directions, measures, config)
                out.update(recovery_measures(kv, directions, pool_bias=pool_bias, neighbour_k=config.neighbour_k,
                                             n_permutations=config.n_permutations,
                                             random_state=config.random_state))  # fmt: skip
                return out

            held = _held_out(s, config.n_held_out) if costs else []
            before = measure(lm, kv0)
            if costs:
                cost_rows.append({"model": label, "method": "original", "planted": s,
                                  "held_out_perplexity": lm_cost(lm, held), "n_held_out": len(held)})  # fmt: skip
            bar.update()
            for method in methods:
                deb, info = debias_language_model(method, lm, data, config)
                fitted.setdefault(f"{label}: {method}", {})[s] = info
                after = measure(deb, contextual_word_vectors(deb, words))
                rows.extend(compare_rows(method, s, before, after, measures, directions, config, model=label))
                if costs:
                    cost_rows.append({"model": label, "method": method, "planted": s,
                                      "held_out_perplexity": lm_cost(deb, held), "n_held_out": len(held)})  # fmt: skip
                bar.update()
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
    words, 35 iterations).  One row per space x test: ``space, test, statistic, p_value, n`` and the
    costs ``simlex_rho``, ``analogy_accuracy`` (a random sample of ``analogy_sample`` questions).
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
        for method in methods:
            if method == "hard_debias":
                from biaskit.debiasing.hard_debias import HardDebias

                spaces[method] = HardDebias().fit(vectors, gender_specific=specific).transform(vectors)
            elif method == "inlp":
                from biaskit.debiasing.inlp import INLP

                cand = [w for w in vectors.index_to_key if w not in specific]
                male, female = most_biased_words(vectors, g, inlp_words, candidates=cand)
                inlp = INLP(inlp_iterations, random_state=random_state).fit_words(vectors, {"m": male, "f": female})
                spaces[method] = inlp.transform_vectors(vectors)
            else:
                raise ValueError(f"unknown method {method!r}; choose from 'hard_debias', 'inlp'")
        res = gonen_goldberg_tests(vectors, spaces, direction=g, exclude=specific, n_cluster=n_cluster,
                                   n_classify=n_classify, train_size=train_size, k=k, random_state=random_state,
                                   n_permutations=n_permutations)  # fmt: skip
        for name, tests in res.items():
            kv = vectors if name == "original" else spaces[name]
            sl = word_similarity_spearman(kv, "simlex999")
            an = analogy_accuracy(kv, sample=analogy_sample, random_state=random_state)
            for test, r in tests.items():
                rows.append({"space": name, "test": test, "statistic": r.statistic, "p_value": r.p_value,
                             "n": r.n, "simlex_rho": sl.statistic, "simlex_pairs": sl.details["n_pairs"],
                             "analogy_accuracy": an["accuracy"], "analogy_n": an["n"],
                             "family_accuracy": an["accuracy_family"], "other_accuracy": an["accuracy_other"]})  # fmt: skip
    return pd.DataFrame(rows)


def with_config(config: StaticStudyConfig, **changes: Any) -> StaticStudyConfig:
    """``config`` with some fields changed (a notebook's parameters)."""
    return replace(config, **changes)


#: the measures a reader sees, in order: the calibrated ones, then the recovery tests
MEASURES: tuple[str, ...] = (*CALIBRATED_STATIC, *RECOVERY_TESTS)
