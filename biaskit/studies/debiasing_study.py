r"""Debiasing against a bias we planted: does each method remove it, or only hide it? (issue 36)

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
"""

from __future__ import annotations

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
    """One measure on one space: a value per profession (``target``), the effect and its p-value.

    ``kind``: ``"groups"`` (mean of planted-male minus planted-female), ``"cluster"`` (agreement of
    the cluster with the label, accuracy max(a, 1 - a) in %), ``"accuracy"`` (correct out-of-fold
    prediction, accuracy in %) or ``"correlation"`` (Pearson r of the planted sign with the value).
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
        return 50.0 if self.kind in ("cluster", "accuracy") else 0.0


def effect_of(kind: str, value: np.ndarray, signs: np.ndarray) -> np.ndarray:
    """The effect for each row of ``value`` / ``signs`` (rows: bootstrap draws; 1-D: one draw)."""
    v, s = np.atleast_2d(value), np.atleast_2d(signs)
    if kind == "groups":
        m = s > 0
        return (np.where(m, v, 0).sum(1) / m.sum(1)) - (np.where(~m, v, 0).sum(1) / (~m).sum(1))
    if kind == "cluster":
        a = v.mean(axis=1)
        return 100 * np.maximum(a, 1 - a)
    if kind == "accuracy":
        return 100 * v.mean(axis=1)
    if kind == "correlation":
        vc, sc = v - v.mean(1, keepdims=True), s - s.mean(1, keepdims=True)
        den = np.linalg.norm(vc, axis=1) * np.linalg.norm(sc, axis=1)
        return np.divide((vc * sc).sum(1), den, out=np.zeros(v.shape[0]), where=den > 0)
    raise ValueError(f"unknown kind {kind!r}")


def unit_measures(
    vectors: KeyedVectors,
    directions: Mapping[str, str],
    *,
    pool_bias: Mapping[str, float],
    config: StaticStudyConfig = StaticStudyConfig(),
) -> dict[str, UnitMeasure]:
    """The calibrated measures and the recovery tests of one space, per profession.

    ``pool_bias``: the *original* bias (cosine with the male-oriented direction of the undebiased
    vectors) of the words among which the neighbour test looks for neighbours.
    """
    from biaskit.metrics.recovery import classifier_recovery, cluster_recovery, neighbour_recovery

    targets = [t for t in directions if t in vectors.key_to_index]
    out: dict[str, UnitMeasure] = {}
    for key, mv in cal.static_values(vectors, None, targets).items():
        if key not in CALIBRATED_STATIC:
            continue
        ev = cal.evaluate(mv, directions, n_permutations=config.n_permutations,
                          random_state=config.random_state, label_test=False)  # fmt: skip
        order = [list(mv.target).index(t) for t in targets]
        out[key] = UnitMeasure(key, "groups", np.array(targets, object), mv.value[order], ev.effect, ev.p_value,
                               ev.toward_planted)  # fmt: skip
    signs = np.array([1 if directions[t] == "male" else -1 for t in targets])
    tg = np.array(targets, object)
    rs = config.random_state
    c = cluster_recovery(vectors, signs, words=targets, n_permutations=config.n_permutations, random_state=rs)
    agree = (c.details["clusters"] == (signs > 0)).astype(float)
    out["gg_clustering"] = UnitMeasure("gg_clustering", "cluster", tg, agree, 100 * c.statistic, c.p_value, True)
    k = classifier_recovery(vectors, signs, words=targets, random_state=rs)
    out["gg_classifier"] = UnitMeasure("gg_classifier", "accuracy", tg, k.details["correct"].astype(float),
                                       100 * k.statistic, k.p_value, True)  # fmt: skip
    pool = [w for w in pool_bias if w in vectors.key_to_index]
    nb = neighbour_recovery(vectors, signs, words=targets, pool_words=pool, pool_bias=pool_bias,
                            k=config.neighbour_k, n_permutations=config.n_permutations, random_state=rs)  # fmt: skip
    out["gg_neighbours"] = UnitMeasure("gg_neighbours", "correlation", tg, nb.details["shares"], nb.statistic,
                                       nb.p_value, nb.statistic > 0)  # fmt: skip
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
    interval (professions resampled within each planted gender; before and after on the same draw)."""
    if list(before.target) != list(after.target):
        raise ValueError("before and after must cover the same professions in the same order")
    signs = np.array([1.0 if directions[t] == "male" else -1.0 for t in before.target])
    e0 = before.no_effect
    point = (after.effect - e0) / (before.effect - e0) if before.effect != e0 else float("nan")
    rng = np.random.default_rng(random_state)
    groups = [np.flatnonzero(signs > 0), np.flatnonzero(signs < 0)]
    idx = np.hstack([g[rng.integers(0, g.size, size=(n_boot, g.size))] for g in groups])
    eb = effect_of(before.kind, before.value[idx], signs[idx])
    ea = effect_of(after.kind, after.value[idx], signs[idx])
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
    config: StaticStudyConfig
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


def _costs(vectors: KeyedVectors) -> dict[str, Any]:
    from biaskit.debiasing.costs import analogy_accuracy
    from biaskit.debiasing.glpp import word_similarity_spearman

    sl = word_similarity_spearman(vectors, "simlex999")
    an = analogy_accuracy(vectors)
    return {"simlex_rho": sl.statistic, "simlex_pairs": int(sl.details["n_pairs"]),
            "analogy_accuracy": an["accuracy"], "analogy_n": an["n"], "family_accuracy": an["accuracy_family"],
            "family_n": an["n_family"], "other_accuracy": an["accuracy_other"], "other_n": an["n_other"]}  # fmt: skip


def _label(measure: str) -> str:
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
                rec_after = {k: after[k] for k in RECOVERY_TESTS}
                for key in (*CALIBRATED_STATIC, *RECOVERY_TESTS):
                    b, a = before[key], after[key]
                    share, lo, hi = share_left(b, a, directions, n_boot=config.n_boot, random_state=config.random_state)
                    if key in CALIBRATED_STATIC:
                        v = verdict(s, b, a, rec_after, config.alpha, n_measures=len(CALIBRATED_STATIC))
                    else:
                        v = "recovers the plan" if _found(a, config.alpha) else "chance level"
                    rows.append({
                        "method": method, "measure": key, "label": _label(key),
                        "family": "calibrated" if key in CALIBRATED_STATIC else "recovery",
                        "planted": s, "before": b.effect, "after": a.effect, "no_effect": b.no_effect,
                        "p_before": b.p_value, "p_after": a.p_value, "found_before": _found(b, config.alpha),
                        "found_after": _found(a, config.alpha), "share_left": share, "ci_low": lo, "ci_high": hi,
                        "verdict": v,
                    })  # fmt: skip
                if costs:
                    cost_rows.append({"method": method, "planted": s, **_costs(deb)})
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
