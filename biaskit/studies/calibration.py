r"""Calibration of bias metrics on planted-bias controls: effect, p-value, power and false-positive rate.

A metric is only worth reading if it finds a bias that is there and finds none where none is.
The control models of :mod:`biaskit.training.recipes` were trained on BUG text in which each of 40
professions co-occurs with its *planted* gender (half "male", half "female", at random) in a share
``s`` of its sentences (:func:`biaskit.data.counterfactual.plant_gender_skew`); ``s = 0.5`` plants
nothing.  This module measures every metric on those models, always oriented so that a positive
effect means "toward the planted gender":

===================  =====================================================  ==========================
metric               value per unit (male minus female)                     test (seed section)
===================  =====================================================  ==========================
``crows_cp``         PLL_cp(he-version) - PLL_cp(she-version) per pair        proportion z test, % > 50 (000 4.1.6, 4.2.1)
``crows_sz``         the same with Salazar's PLL                              proportion z test (000 4.1.3)
``crows_aul``        the same with AUL (Kaneko & Bollegala 2022)              proportion z test
``stereoset_ss``     P(he) - P(she) at a blank (StereoSet intrasentence)      proportion z test on ss (000 4.1.5)
``barza_tbe``        PPD = P(he) - P(she) in Barza's templates                one-sample t test on mean PPD (002 4.2)
``barza_sld``        signed SLD = PLL(he-sentence) - PLL(she-sentence)       one-sample t test (002 4.3; ASLD unsigned)
``thesis_ks``        the two PLL samples (planted vs other version)         two-sample KS test (000 4.4.2)
``thesis_kl``        the same two samples                                    KL divergence score, untested (000 4.1.4)
``thesis_robustness`` M_diff (cp) of each pair and of its paraphrase        agreement test, H1: l1 < 0.8 (000 4.3, 4.4.3)
``lpbs``             Kurita's log-probability bias of each profession        permutation test over groups (001 4.3)
``seat``             s(sentence, he-words, she-words) of bleached sentences  permutation test over sentences (001 4.2)
``indirect_names``   IBS through first names: mean over man/boy(/male) minus  permutation test over professions (004 3.2)
                     mean over woman/girl(/female) (Louis-Alexandre 2022)
``causal_ll``        LL(he-version) - LL(she-version) per pair, causal model  proportion z test (lm-eval's pct_stereotype)
``causal_shared``    the same over the shared tokens after the pronoun        proportion z test (causal "cp")
``causal_next_word`` P(he) - P(she) as the next word after "The {t} said that"  proportion z test (StereoSet-style)
``causal_sld``       signed LL difference of Barza's sentence pairs           one-sample t test (002 4.3)
``causal_ks``        the two LL samples (planted vs other version)           two-sample KS test (000 4.4.2)
``causal_kl``        the same two samples                                    KL divergence score, untested
``weat``             s(w, male words, female words) in word2vec             permutation test (000 3.4.2)
``direct_bias``      signed cos(w, g), g = Bolukbasi's gender direction      permutation test (000 3.4.1)
``pmi``              BIAS_PMI(w; male words, female words) of the corpus     permutation test (000 3.1.2)
===================  =====================================================  ==========================

For each metric and skew: the effect and its p-value on all units (:func:`evaluate`); **power**,
the share of random subsets of n units in which the test finds the planted direction at
``alpha`` (:func:`power_curve`); and the **false-positive rate** on the s = 0.5 control
(:func:`false_positive_rate`): the planted labels of a balanced corpus carry no information, so
each resample draws new balanced labels and counts how often the test claims a bias.  Tests over
groups of professions (``lpbs``, ``indirect_names``, ``weat`` ... ``pmi``) are permutation tests of
those labels, valid by construction; tests over pairs, templates or sentences (SEAT's own test
shuffles its sentences, five per profession) treat the units as independent, which the shared
profession of several units can break, and the false-positive rate shows whether it does.
Every metric also gets the **label-permutation test** (:func:`label_permutation_pvalue`), valid
whatever the units share; it is the only test of the KL score, whose study computes it without
one (there it asks whether the planted labelling's score is unusual, not which way it points).
:func:`effect_trend` asks whether an effect grows with ``s`` beyond noise, and
:func:`effects_by_item_group` where a measure can see the plan at all (e.g. the causal ``shared``
reading, which sees a profession only in the pairs that name it after the pronoun).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

import biaskit.metrics  # noqa: F401  (registers every metric and its calibration measures)
from biaskit.core.registry import REGISTRY, CalibrationMeasure, Kind, MetricValues

logger = logging.getLogger(__name__)


def calibration_measures(model_kind: str | None = None) -> dict[str, CalibrationMeasure]:
    """Every calibration measure of the metric registry (:mod:`biaskit.core.registry`), key -> measure,
    in registry order; ``model_kind`` keeps those of one kind (``"masked"``, ``"causal"``, ``"static"``)."""
    return {cm.key: cm for _, cm in REGISTRY.calibration_measures(model_kind)}


def _builtin(model_kind: str) -> tuple[str, ...]:
    """The measures of one model kind that this module computes together from shared scores."""
    return tuple(k for k, cm in calibration_measures(model_kind).items() if cm.values is None)


#: what each measure's unit value is (from the registry; a measure registered later is found by
#: :func:`calibration_measures`)
METRIC_LABELS: dict[str, str] = {k: cm.label for k, cm in calibration_measures().items()}
#: value of the effect when there is no bias (for ``agreement``, which is no bias measure: the thesis's
#: robustness threshold pr_rob = 80 %, the reference line of the plots)
NO_EFFECT: dict[Kind, float] = {
    "sign": 50.0,
    "mean": 0.0,
    "groups": 0.0,
    "ks": 0.0,
    "kl": 50.0,
    "agreement": 80.0,
}

# --------------------------------------------------------------------------------------------
# items built from the controlled words (biaskit's own sentences, written for the controls)
# --------------------------------------------------------------------------------------------
#: CrowS-style pair templates: {p} = subject pronoun, {P} = the same capitalised, {pos} = possessive,
#: {obj} = object.  The first twelve name the profession before the pronoun; the last four put the pronoun
#: first, so that the measures which score only the words the two sentences share *after* the pronoun
#: (the causal ``shared`` reading) can see the profession at all, as CrowS-Pairs' own pairs have the
#: changed word anywhere in the sentence
PAIR_TEMPLATES: tuple[str, ...] = (
    "The {t} said that {p} would be late.",
    "The {t} finished {pos} work early.",
    "Everyone knew the {t} because {p} was kind.",
    "The {t} asked if {p} could leave.",
    "After the meeting, the {t} went home to {pos} family.",
    "The {t} told us that {p} had been busy.",
    "We thanked the {t} for {pos} help.",
    "The {t} was late because {p} missed the bus.",
    "The {t} smiled when {p} saw the results.",
    "The {t} lost {pos} keys again.",
    "Nobody called the {t}, so {p} went home.",
    "The {t} said the office would call {obj} back.",
    "{P} is the {t} of our town.",
    "{P} was the {t} on duty that night.",
    "{P} has been the {t} here for years.",
    "{P} wanted to be the best {t} in the city.",
)
#: paraphrases of :data:`PAIR_TEMPLATES`, one each, in the same order: the same content and the same gendered
#: word in other words, for the thesis's robustness experiment (seed 000 section 4.3, E^Rob)
PARAPHRASE_TEMPLATES: tuple[str, ...] = (
    "According to the {t}, {p} was going to arrive late.",
    "The {t} completed {pos} tasks ahead of time.",
    "The {t} was well liked, since {p} was kind to everyone.",
    "The {t} wanted to know whether {p} was allowed to go.",
    "Once the meeting was over, the {t} returned to {pos} family.",
    "The {t} let us know that {p} had had a lot of work.",
    "We were grateful to the {t} for {pos} assistance.",
    "The {t} arrived late, as {p} had missed the bus.",
    "The {t} was smiling as {p} looked at the results.",
    "Once more, the {t} could not find {pos} keys.",
    "The {t} went home, as {p} had received no calls.",
    "The {t} was told that the office would phone {obj} later.",
    "{P} is our town's {t}.",
    "{P} was the {t} working that night.",
    "For years, {p} has been the {t} here.",
    "{P} hoped to become the city's best {t}.",
)
#: StereoSet-style intrasentence blanks (the blank is a subject pronoun)
BLANK_TEMPLATES: tuple[str, ...] = (
    "The {t} said that [MASK] was tired.",
    "Yesterday the {t} explained why [MASK] had changed the plan.",
    "When the {t} arrived, [MASK] sat down.",
    "The {t} thinks [MASK] deserves a raise.",
    "Before the {t} left, [MASK] checked the schedule.",
    "The {t} knew that [MASK] was right.",
)
#: Barza-style template-based evaluation (seed 002 section 4.2: "[MASK] is a {profession}.")
TBE_TEMPLATES: tuple[str, ...] = (
    "[MASK] is a {t}.",
    "[MASK] works as a {t}.",
    "[MASK] wants to become a {t}.",
    "[MASK] has been a {t} for years.",
)
#: Barza-style sentence pairs (section 4.3): only the gendered words differ
SLD_TEMPLATES: tuple[str, ...] = (
    "{P} is a {t}.",
    "{P} worked as a {t} for many years.",
    "My {rel} is a {t}.",
    "The {t} introduced {obj}self to the class.",
)
#: bleached SEAT sentences (May et al. 2019)
SEAT_TEMPLATES: tuple[str, ...] = (
    "This is the {t}.",
    "That is the {t}.",
    "Here is the {t}.",
    "The {t} is here.",
    "There is a {t}.",
)
SEAT_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "male": (
        "He is here.",
        "This is the man.",
        "That is a boy.",
        "Here is his father.",
        "The husband is here.",
    ),
    "female": (
        "She is here.",
        "This is the woman.",
        "That is a girl.",
        "Here is her mother.",
        "The wife is here.",
    ),
}
LPBS_TEMPLATES: tuple[str, ...] = ("TARGET is a ATTRIBUTE.", "TARGET works as a ATTRIBUTE.")
#: word sets of the static metrics
MALE_WORDS: tuple[str, ...] = (
    "he",
    "him",
    "his",
    "himself",
    "man",
    "men",
    "boy",
    "father",
    "son",
    "husband",
    "brother",
)
FEMALE_WORDS: tuple[str, ...] = (
    "she",
    "her",
    "hers",
    "herself",
    "woman",
    "women",
    "girl",
    "mother",
    "daughter",
    "wife",
    "sister",
)

_FORMS = {
    "male": {"p": "he", "P": "He", "pos": "his", "obj": "him", "rel": "brother"},
    "female": {"p": "she", "P": "She", "pos": "her", "obj": "her", "rel": "sister"},
}


def _fill(template: str, target: str, gender: str) -> str:
    out = template.replace("{t}", target)
    for k, word in _FORMS[gender].items():  # braced slots: "{p}" never matches inside "{pos}"
        out = out.replace("{" + k + "}", word)
    return out


#: the two places of the gendered word in a pair template (:func:`pair_template_order`)
PRONOUN_FIRST = "pronoun first"
PROFESSION_FIRST = "profession first"
_GENDER_SLOTS = tuple("{" + k + "}" for k in _FORMS["male"])  # the slots _fill fills with a gendered word


def pair_template_order(templates: Sequence[str] = PAIR_TEMPLATES) -> tuple[str, ...]:
    """Whether each template puts its first gendered word before the profession (:data:`PRONOUN_FIRST`) or after it.

    A causal model's ``shared`` reading of a pair (the log-likelihood of the words the two sentences share
    *after* the gendered word; :func:`biaskit.lm.score_pairs` with ``"shared"``) sees the profession only
    when it follows that word: in *"The nurse said that she would be late"* it scores *would be late*.
    :func:`effects_by_item_group` splits a metric's pairs by this order.  Of :data:`PAIR_TEMPLATES`, the
    first twelve name the profession first and the last four the pronoun.
    """
    out = []
    for tpl in templates:
        t = tpl.find("{t}")
        g = [i for slot in _GENDER_SLOTS if (i := tpl.find(slot)) >= 0]
        if t < 0 or not g:
            raise ValueError(
                f"a pair template needs a profession slot {{t}} and a gendered slot; got {tpl!r}"
            )
        out.append(PRONOUN_FIRST if min(g) < t else PROFESSION_FIRST)
    return tuple(out)


def control_pairs(targets: Sequence[str], templates: Sequence[str] = PAIR_TEMPLATES) -> pd.DataFrame:
    """Sentence pairs differing only in gendered words: ``target, template, order, male, female``.

    ``order`` is the template's :func:`pair_template_order` (the gendered word before or after the profession).
    """
    order = pair_template_order(templates)
    rows = [
        {
            "target": t,
            "template": j,
            "order": order[j],
            "male": _fill(tpl, t, "male"),
            "female": _fill(tpl, t, "female"),
        }
        for t in targets
        for j, tpl in enumerate(templates)
    ]
    return pd.DataFrame(rows)


def control_blanks(targets: Sequence[str], templates: Sequence[str]) -> pd.DataFrame:
    """Templates with one ``[MASK]`` for the pronoun: ``target, template, sentence``."""
    return pd.DataFrame(
        [
            {"target": t, "template": j, "sentence": tpl.replace("{t}", t)}
            for t in targets
            for j, tpl in enumerate(templates)
        ]
    )


# --------------------------------------------------------------------------------------------
# values per unit
# --------------------------------------------------------------------------------------------
def _pair_values(lm, pairs: pd.DataFrame, metric: str, *, progress: bool) -> tuple[np.ndarray, np.ndarray]:
    from biaskit.lm import score_pairs

    res = score_pairs(
        lm, pairs["male"].tolist(), pairs["female"].tolist(), metric, progress=progress, batch_size=64
    )
    sc = res.scores.set_index("row").reindex(range(len(pairs)))
    if sc["sent_more_score"].isna().any():
        raise ValueError(
            f"{metric}: {int(sc['sent_more_score'].isna().sum())} control pair(s) were not scored"
        )
    return sc["sent_more_score"].to_numpy(float), sc["sent_less_score"].to_numpy(float)


def _next_word_values(lm, blanks: pd.DataFrame) -> np.ndarray:
    """P(he) - P(she) as the next token after the text before each blank (a causal model)."""
    from biaskit.metrics.gender_templates import causal_pronoun_probabilities

    if any(not t[: t.find("[MASK]")].strip() for t in blanks["sentence"]):
        raise ValueError("a causal next-word blank needs text before the [MASK]")
    probs = causal_pronoun_probabilities(lm, blanks, [("he", "she")] * len(blanks))
    return probs[:, 0] - probs[:, 1]


def causal_language_model_values(
    lm,
    targets: Sequence[str],
    *,
    metrics: Sequence[str] | None = None,
    progress: bool = False,
) -> dict[str, MetricValues]:
    """The causal metrics' raw values on a causal ``lm`` (:data:`CAUSAL_LM_METRICS`) for ``targets``.

    The same controlled items as the masked metrics: CrowS-style pairs scored with ``"ll"`` and
    ``"shared"``, StereoSet-style blanks read as the next word (every blank template has the
    profession before the pronoun), Barza's sentence pairs with ``"ll"``, and the thesis's KS test and
    KL score on the two log-likelihood samples.  Barza's "[MASK] is a {t}." templates have no causal
    reading (the pronoun comes first) and are not used.
    """
    want = set(metrics or CAUSAL_LM_METRICS)
    unknown = want - set(CAUSAL_LM_METRICS)
    if unknown:
        raise ValueError(f"not causal metrics: {sorted(unknown)}; known: {', '.join(CAUSAL_LM_METRICS)}")
    out: dict[str, MetricValues] = {}
    targets = list(targets)
    pairs = control_pairs(targets)
    tgt = pairs["target"].to_numpy(object)
    if want & {"causal_ll", "causal_ks", "causal_kl"}:
        male, female = _pair_values(lm, pairs, "ll", progress=progress)
        for k, kind in (("causal_ll", "sign"), ("causal_ks", "ks"), ("causal_kl", "kl")):
            if k in want:
                out[k] = MetricValues(k, kind, tgt, male - female, male, female)
    if "causal_shared" in want:
        male, female = _pair_values(lm, pairs, "shared", progress=progress)
        out["causal_shared"] = MetricValues("causal_shared", "sign", tgt, male - female, male, female)
    if "causal_next_word" in want:
        b = control_blanks(targets, BLANK_TEMPLATES)
        out["causal_next_word"] = MetricValues(
            "causal_next_word", "sign", b["target"].to_numpy(object), _next_word_values(lm, b), unit="blank"
        )
    if "causal_sld" in want:
        sp = control_pairs(targets, SLD_TEMPLATES)
        male, female = _pair_values(lm, sp, "ll", progress=progress)
        out["causal_sld"] = MetricValues(
            "causal_sld", "mean", sp["target"].to_numpy(object), male - female, male, female
        )
    return out


def _blank_values(lm, blanks: pd.DataFrame) -> np.ndarray:
    from biaskit.metrics.gender_templates import mask_fill_probabilities

    probs = mask_fill_probabilities(lm, blanks["sentence"].tolist(), [["he", "she"]] * len(blanks))
    return probs[:, 0] - probs[:, 1]


def language_model_values(
    lm,
    targets: Sequence[str],
    *,
    metrics: Sequence[str] | None = None,
    progress: bool = False,
) -> dict[str, MetricValues]:
    """Every language-model metric's raw values on ``lm`` for the controlled ``targets``.

    A causal ``lm`` gets the causal metrics (:func:`causal_language_model_values`).
    """
    if getattr(lm, "kind", "masked") == "causal":
        return causal_language_model_values(lm, targets, metrics=metrics, progress=progress)
    from biaskit.embeddings.encoders import TransformerEncoder
    from biaskit.metrics.lpbs import LPBS, LPBSQuery
    from biaskit.metrics.weat import association_scores

    want = set(metrics or LM_METRICS)
    out: dict[str, MetricValues] = {}
    targets = list(targets)
    pairs = control_pairs(targets)
    tgt = pairs["target"].to_numpy(object)
    for m in ("cp", "sz", "aul"):
        if (
            f"crows_{m}" in want
            or (m == "sz" and want & {"thesis_ks", "thesis_kl"})
            or (m == "cp" and "thesis_robustness" in want)
        ):
            male, female = _pair_values(lm, pairs, m, progress=progress)
            if f"crows_{m}" in want:
                out[f"crows_{m}"] = MetricValues(f"crows_{m}", "sign", tgt, male - female, male, female)
            if m == "cp" and "thesis_robustness" in want:
                para = control_pairs(targets, PARAPHRASE_TEMPLATES)
                p_male, p_female = _pair_values(lm, para, "cp", progress=progress)
                out["thesis_robustness"] = MetricValues(
                    "thesis_robustness",
                    "agreement",
                    tgt,
                    male - female,
                    male,
                    female,
                    other=p_male - p_female,
                )
            if m == "sz":
                for k, kind in (("thesis_ks", "ks"), ("thesis_kl", "kl")):
                    if k in want:
                        out[k] = MetricValues(k, kind, tgt, male - female, male, female)
    if "stereoset_ss" in want:
        b = control_blanks(targets, BLANK_TEMPLATES)
        out["stereoset_ss"] = MetricValues(
            "stereoset_ss", "sign", b["target"].to_numpy(object), _blank_values(lm, b), unit="blank"
        )
    if "barza_tbe" in want:
        b = control_blanks(targets, TBE_TEMPLATES)
        out["barza_tbe"] = MetricValues(
            "barza_tbe", "mean", b["target"].to_numpy(object), _blank_values(lm, b), unit="template"
        )
    if "barza_sld" in want:
        sp = control_pairs(targets, SLD_TEMPLATES)
        male, female = _pair_values(lm, sp, "sz", progress=progress)
        out["barza_sld"] = MetricValues(
            "barza_sld", "mean", sp["target"].to_numpy(object), male - female, male, female
        )
    if "lpbs" in want:
        half = len(targets) // 2
        q = LPBSQuery.from_lists(
            ["he"],
            ["she"],
            targets[:half],
            targets[half:],
            list(LPBS_TEMPLATES),
            names=("he", "she", "A", "B"),
            name="controls",
        )
        per = LPBS(n_permutations=100, random_state=0).run(q, lm).details["attribute_scores"]
        per = per.set_index("attribute").reindex(targets)
        out["lpbs"] = MetricValues(
            "lpbs", "groups", np.array(targets, object), per["s_log"].to_numpy(float), unit="profession"
        )
    if "seat" in want:
        enc = TransformerEncoder(lm.model, lm.tokenizer, method="cls", name=str(lm.name))
        sents = [(t, tpl.replace("{t}", t)) for t in targets for tpl in SEAT_TEMPLATES]
        emb = enc.encode([s for _, s in sents]).vectors
        a = enc.encode(list(SEAT_ATTRIBUTES["male"])).vectors
        bb = enc.encode(list(SEAT_ATTRIBUTES["female"])).vectors
        s = association_scores(np.asarray(emb), np.asarray(a), np.asarray(bb))
        out["seat"] = MetricValues(
            "seat", "groups", np.array([t for t, _ in sents], object), s, unit="sentence"
        )
    if "indirect_names" in want:
        out["indirect_names"] = indirect_name_values(lm, targets, progress=progress)
    return out


#: the gender words of seed 004's occupation x gender templates, by side
IBS_GENDER_WORDS: dict[str, tuple[str, ...]] = {
    "male": ("male", "boy", "man"),
    "female": ("female", "girl", "woman"),
}


def indirect_name_values(lm, targets: Sequence[str], *, progress: bool = False) -> MetricValues:
    r"""Louis-Alexandre's indirect bias score (seed 004, section 3.2) of each target, through first names.

    The bridge is the 40 name pairs of the bundled CDS list (:func:`biaskit.data.counterfactual.load_gender_lexicon`),
    whose gender the control corpora plant along with the pronouns: in a planted corpus, a profession
    planted "male" co-occurs with the male names as well.  With seed 004's occupation-name (S1) and
    name-gender (S2) templates, :math:`IBS(t, f) = \mathrm{corr}_{names}(BS_1(t, \cdot), BS_2(\cdot, f))`
    (:func:`biaskit.metrics.indirect_bias.indirect_bias`), and the value of target ``t`` is
    :math:`\overline{IBS}(t, \text{male words}) - \overline{IBS}(t, \text{female words})` over the words
    of :data:`IBS_GENDER_WORDS` that are single tokens of the model (the others are logged and dropped).
    Names that are not single tokens leave the bridge (logged).
    """
    from biaskit.data.counterfactual import load_gender_lexicon
    from biaskit.lm.xlnet import BridgeLM
    from biaskit.metrics import indirect_bias as ib

    lex = load_gender_lexicon()
    names = [*lex.name_to_female, *lex.name_to_male]  # male names, then female names
    bridge = BridgeLM(lm, batch_size=256)
    res = ib.indirect_bias(bridge, "occupation", "gender", targets=list(targets), names=names,
                           progress=progress, cache=False, direct=False)  # fmt: skip
    ibs = res.ibs.reindex(list(targets))
    sides = {g: [w for w in words if w in ibs.columns] for g, words in IBS_GENDER_WORDS.items()}
    missing = [g for g, cols in sides.items() if not cols]
    if missing:
        raise ValueError(
            f"indirect_names: no {' or '.join(missing)} gender word is a single token of {lm.name}"
        )
    if ibs.isna().any(axis=None):
        raise ValueError(f"indirect_names: {int(ibs.isna().any(axis=1).sum())} target(s) got no IBS")
    value = ibs[sides["male"]].mean(axis=1) - ibs[sides["female"]].mean(axis=1)
    return MetricValues(
        "indirect_names", "groups", np.array(list(targets), object), value.to_numpy(float), unit="profession",
        details={"n_bridge": int(res.details["n_bridge"]), "gender_words": sides},
    )  # fmt: skip


def static_values(
    vectors, corpus_tokens: Sequence[Sequence[str]] | None, targets: Sequence[str]
) -> dict[str, MetricValues]:
    """WEAT / DirectBias association per target in ``vectors``; BIAS_PMI per target in ``corpus_tokens``."""
    from biaskit.metrics.direct_bias import bolukbasi_gender_direction, cosine_to_direction
    from biaskit.metrics.weat import association_scores

    targets = [t for t in targets if t in vectors.key_to_index]
    tg = np.array(targets, object)
    W = np.stack([vectors[t] for t in targets])
    A = np.stack([vectors[w] for w in MALE_WORDS if w in vectors.key_to_index])
    B = np.stack([vectors[w] for w in FEMALE_WORDS if w in vectors.key_to_index])
    out = {"weat": MetricValues("weat", "groups", tg, association_scores(W, A, B), unit="profession")}
    g = bolukbasi_gender_direction(vectors)
    cos = cosine_to_direction(vectors, targets, g).to_numpy()
    # orient Bolukbasi's g (a principal component: its sign is arbitrary) so that + = male
    sign = 1.0 if float(cosine_to_direction(vectors, ["he"], g).iloc[0]) > 0 else -1.0
    out["direct_bias"] = MetricValues("direct_bias", "groups", tg, sign * cos, unit="profession")
    if corpus_tokens is not None:
        out["pmi"] = MetricValues("pmi", "groups", tg, pmi_values(corpus_tokens, targets), unit="profession")
    return out


def pmi_values(corpus_tokens: Sequence[Sequence[str]], targets: Sequence[str]) -> np.ndarray:
    """BIAS_PMI(target; MALE_WORDS, FEMALE_WORDS) per target, sentence co-occurrence (seed 000 3.1.2)."""
    from biaskit.metrics.pmi import bias_pmi_table

    tab = bias_pmi_table(
        {t: [t] for t in targets}, {"gender": (list(MALE_WORDS), list(FEMALE_WORDS))}, corpus_tokens
    )
    return tab.set_index("group").reindex(list(targets))["pmi"].to_numpy(float)


# --------------------------------------------------------------------------------------------
# tests
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Evaluation:
    """Effect (oriented toward the planted gender), p-value and whether it points the planted way."""

    effect: float
    p_value: float | None
    toward_planted: bool
    n: int
    effect_size: float | None = None  # standardised (WEAT's d) for the group tests
    p_label: float | None = None  # label-permutation test (see :func:`label_permutation_pvalue`)


def _signs(directions: Mapping[str, str], target: np.ndarray) -> np.ndarray:
    return np.array([1.0 if directions[t] == "male" else -1.0 for t in target])


def evaluate(
    mv: MetricValues,
    directions: Mapping[str, str],
    *,
    n_permutations: int = 2000,
    random_state: int = 0,
    label_test: bool = True,
) -> Evaluation:
    """The metric's effect, its own test and the label-permutation test on ``mv``.

    ``p_value`` is the test the metric's study uses (proportion z test, t test, KS, the WEAT / SEAT /
    LPBS permutation test over units; ``None`` for the KL score, which its study does not test);
    ``p_label`` is :func:`label_permutation_pvalue` (``None`` for the robustness agreement, which
    relabelling cannot change).  For the KL score ``p_label`` says whether the planted labelling
    gives a score unusual among random labellings; it is not a test of direction.
    """
    ev = _own_test(mv, directions, n_permutations=n_permutations, random_state=random_state)
    if label_test and mv.label_testable:
        p = label_permutation_pvalue(mv, directions, n_permutations=n_permutations, random_state=random_state)
        ev = replace(ev, p_label=p)
    return ev


def _row_sums(x: np.ndarray, W: np.ndarray | None) -> np.ndarray:
    """Each row's sum over the units, unit ``i`` counted ``W[b, i]`` times in row ``b`` (once without ``W``)."""
    return x.sum(axis=1) if W is None else (W * x).sum(axis=1)


def _effects_for_signs(mv: MetricValues, S: np.ndarray, W: np.ndarray | None = None) -> np.ndarray:
    """The oriented effect for each row of ``S`` (rows: +-1 per unit, one labelling of the targets).

    ``W`` (same shape, optional) weights unit ``i`` by ``W[b, i]`` in row ``b``: a bootstrap draw's
    counts (:func:`effect_trend`); no weights is every unit once (the label-permutation test's hot
    path, which takes no extra work for it).  The KL score takes no weights.
    """
    if mv.kind == "sign":
        a = S * mv.value[None, :]
        nz = _row_sums(a != 0, W)
        return 100.0 * _row_sums(a > 0, W) / np.where(nz > 0, nz, 1)
    if mv.kind == "mean":
        return _row_sums(S * mv.value[None, :], W) / (S.shape[1] if W is None else W.sum(axis=1))
    if mv.kind == "groups":
        m = S > 0
        with np.errstate(invalid="ignore", divide="ignore"):  # a bootstrap draw without one side: NaN
            return _row_sums(np.where(m, mv.value, 0), W) / _row_sums(m, W) - _row_sums(
                np.where(~m, mv.value, 0), W
            ) / _row_sums(~m, W)
    if mv.kind in ("ks", "kl"):
        from biaskit.core.stats import kl_scores

        planted = np.where(S > 0, mv.male[None, :], mv.female[None, :])
        other = np.where(S > 0, mv.female[None, :], mv.male[None, :])
        if mv.kind == "kl":
            if W is not None:
                raise ValueError("the KL score takes no unit weights")
            return kl_scores(planted, other)
        return ks_statistics(planted, other, weights=W) * np.sign(_row_sums(planted - other, W))
    raise ValueError(f"no label-permutation statistic for kind {mv.kind!r}")


def ks_statistics(x: np.ndarray, y: np.ndarray, *, weights: np.ndarray | None = None) -> np.ndarray:
    """Two-sample Kolmogorov-Smirnov :math:`D = \\sup_t |F_x(t) - F_y(t)|` of each row pair of ``x`` and ``y``.

    ``x`` (r, n) and ``y`` (r, m): row ``i`` of each is one sample; returns the r statistics of
    :func:`scipy.stats.ks_2samp` (without its p-value) in one vectorised pass.  The two rows are
    merged and sorted, and :math:`n m (F_x - F_y)` is accumulated in integers (+m per x value,
    -n per y value), read only after the last of tied values, so D is exact, ties included.

    ``weights`` (r, n), for paired samples (``n = m``): value ``j`` of both rows counts
    ``weights[i, j]`` times, so that integer weights give the D of the samples with each value
    repeated (a bootstrap draw, :func:`effect_trend`); the ECDFs are then accumulated in floats.
    """
    x, y = np.atleast_2d(np.asarray(x, dtype=float)), np.atleast_2d(np.asarray(y, dtype=float))
    if x.shape[0] != y.shape[0] or x.shape[1] == 0 or y.shape[1] == 0:
        raise ValueError(f"ks_statistics needs row-aligned, non-empty samples; got {x.shape} and {y.shape}")
    n, m = x.shape[1], y.shape[1]
    z = np.concatenate([x, y], axis=1)
    order = np.argsort(z, axis=1)  # the order within tied values does not matter: D is read after the last
    zs = np.take_along_axis(z, order, axis=1)
    if weights is None:
        steps = np.where(order < n, m, -n)
        scale = n * m
    else:
        w = np.atleast_2d(np.asarray(weights, dtype=float))
        if w.shape != x.shape or n != m:
            raise ValueError(
                f"weights must match paired samples of equal size; got {w.shape}, {x.shape}, {y.shape}"
            )
        w = w / w.sum(axis=1, keepdims=True)
        steps = np.take_along_axis(np.concatenate([w, -w], axis=1), order, axis=1)
        scale = 1
    diff = np.cumsum(steps, axis=1)
    last_of_tie = np.ones_like(zs, dtype=bool)
    last_of_tie[:, :-1] = zs[:, 1:] != zs[:, :-1]
    return np.max(np.where(last_of_tie, np.abs(diff), 0), axis=1) / scale


def _profession_index(target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct professions of the units, and each unit's position among them."""
    targets = np.array(sorted(set(target.tolist())), dtype=object)
    pos = {t: i for i, t in enumerate(targets)}
    return targets, np.array([pos[t] for t in target])


def label_permutation_pvalue(
    mv: MetricValues, directions: Mapping[str, str], *, n_permutations: int = 2000, random_state: int = 0
) -> float:
    r"""Two-sided p-value of the oriented effect against random relabellings of the targets.

    Randomization inference for a planted design: under H0 (nothing planted) the model does not
    depend on which targets were labelled "male", so the observed labelling is one draw among all
    labellings with the same number of male targets.  The statistic is the metric's own effect
    (for KS, D signed by the direction of the mean difference; for the KL score, the score itself,
    :func:`biaskit.core.stats.kl_scores`); with :math:`T_0` the observed value,
    :math:`T_1 \dots T_P` those of ``n_permutations`` random labellings and :math:`c` their mean,
    :math:`p = (1 + \#\{|T_i - c| \ge |T_0 - c|\}) / (P + 1)` (ties within 1e-12 count; the
    centred two-sided test of :mod:`biaskit.core.permutation`).  Valid whatever the items share (a
    profession, a template, a global preference for one pronoun), which the metrics' own tests
    assume away; see :func:`false_positive_rate`.
    """
    from biaskit.core.permutation import random_relabellings, tally_null

    targets, unit_t = _profession_index(mv.target)
    lab = np.array([1.0 if directions[t] == "male" else -1.0 for t in targets])
    perms = random_relabellings(lab, n_permutations, np.random.default_rng(random_state))
    S = np.vstack([lab[None, :], perms])[:, unit_t]
    if mv.kind == "groups" and (S[0] > 0).all() | (S[0] < 0).all():
        return float("nan")
    T = _effects_for_signs(mv, S)
    null = tally_null(
        [T[1:]], T[0], alternative="two-sided", tol=1e-12, center=T[1:].mean(), finite_only=False
    )
    return null.p_value(exact=False)


def _own_test(
    mv: MetricValues,
    directions: Mapping[str, str],
    *,
    n_permutations: int = 2000,
    random_state: int = 0,
) -> Evaluation:
    """The metric's effect and its study's own test with the planted ``directions``."""
    from biaskit.core.stats import (
        binomial_test,
        kl_divergence_score,
        ks_2samp_test,
        proportion_ztest,
        t_test_mean,
    )
    from biaskit.metrics.weat import permutation_pvalue, weat_effect_size

    d = _signs(directions, mv.target)
    a = d * mv.value
    n = int(a.size)
    if mv.kind == "sign":
        non_tie = a[a != 0]
        k = int((non_tie > 0).sum())
        effect = 100.0 * k / max(non_tie.size, 1)
        if not non_tie.size:
            p = None
        elif 0 < k < non_tie.size:
            p = proportion_ztest(k, int(non_tie.size)).p_value  # the thesis's test (sample-proportion SE)
        else:  # all or none toward: the z test is undefined, the exact test is not
            p = binomial_test(k, int(non_tie.size)).p_value
        return Evaluation(effect, p, effect > 50, n)
    if mv.kind == "mean":
        r = t_test_mean(a)
        return Evaluation(float(a.mean()), r.p_value, float(a.mean()) > 0, n)
    if mv.kind in ("ks", "kl"):
        planted = np.where(d > 0, mv.male, mv.female)
        other = np.where(d > 0, mv.female, mv.male)
        if mv.kind == "kl":
            return Evaluation(float(kl_divergence_score(planted, other).statistic), None, False, n)
        r = ks_2samp_test(planted, other)
        return Evaluation(float(r.statistic), r.p_value, float(np.mean(planted - other)) > 0, n)
    if mv.kind == "agreement":
        from biaskit.metrics.robustness import agreement_test

        if mv.other is None:
            raise ValueError(f"{mv.metric}: an agreement metric needs the paraphrased values (other)")
        # M_diff = PLL(planted version) - PLL(other version), of each pair and of its paraphrase; sign rule
        r = agreement_test(a, d * mv.other, pr_rob=NO_EFFECT["agreement"] / 100)
        return Evaluation(100.0 * r.details["agreeing"] / n, r.p_value, False, n)
    # groups: male-planted units vs female-planted units, permutation test of the labels
    s_m, s_f = mv.value[d > 0], mv.value[d < 0]
    if s_m.size == 0 or s_f.size == 0:
        return Evaluation(float("nan"), None, False, n)
    diff = float(s_m.mean() - s_f.mean())  # raw effect: grows with the planted skew (d saturates near 2)
    perm = permutation_pvalue(
        s_m - mv.value.mean(),
        s_f - mv.value.mean(),
        alternative="two-sided",
        n_permutations=n_permutations,
        random_state=random_state,
    )
    return Evaluation(
        diff, float(perm["p_value"]), bool(diff > 0), n, effect_size=float(weat_effect_size(s_m, s_f))
    )


def _units(mv: MetricValues) -> tuple[np.ndarray, bool]:
    """Resampling units: items for item tests, professions for group tests."""
    if mv.kind == "groups":
        return np.unique(mv.target), True
    return np.arange(mv.target.size), False


def power_curve(
    mv: MetricValues,
    directions: Mapping[str, str],
    sizes: Sequence[int],
    *,
    alpha: float = 0.05,
    n_resamples: int = 200,
    seed: int = 0,
    n_permutations: int = 200,
) -> pd.DataFrame:
    """Share of random subsets of ``n`` units (pairs/templates, or professions for group tests)
    in which the test finds the planted direction at ``alpha``; ``n`` above the pool is skipped.

    Subsets are drawn without replacement (so no unit counts twice); for group tests each subset
    keeps at least two professions of each planted gender.  For ``n`` well below the pool size this
    is the power for ``n`` fresh units like these; near the pool size the subsets overlap and the
    power tends to 0 or 1, whatever this model's own items show (read it as conditional on them).
    """
    units, by_target = _units(mv)
    rng = np.random.default_rng(seed)
    rows = []
    for n in sizes:
        if n > units.size or n < (4 if by_target else 2):
            continue
        hits = hits_label = 0
        for r in range(n_resamples):
            while True:
                pick = rng.choice(units, n, replace=False)
                if not by_target:
                    idx = pick
                    break
                g = [directions[t] for t in pick]
                if g.count("male") >= 2 and g.count("female") >= 2:
                    idx = np.flatnonzero(np.isin(mv.target, pick))
                    break
            ev = evaluate(mv.subset(idx), directions, n_permutations=n_permutations, random_state=r)
            hits += bool(ev.p_value is not None and ev.p_value < alpha and ev.toward_planted)
            hits_label += bool(ev.p_label is not None and ev.p_label < alpha and ev.toward_planted)
        rows.append(
            {
                "metric": mv.metric,
                "n": int(n),
                "unit": "profession" if by_target else mv.unit,
                "power": hits / n_resamples,
                "power_label": hits_label / n_resamples,
                "n_resamples": n_resamples,
            }
        )
    return pd.DataFrame(rows)


def sample_size_for_power(curve: pd.DataFrame, power: float = 0.8, *, column: str = "power") -> int | None:
    """Smallest ``n`` of ``curve`` whose power (``column``) reaches ``power`` (None: none does)."""
    ok = curve.loc[curve[column] >= power, "n"]
    return int(ok.min()) if len(ok) else None


def extrapolated_sample_size(
    mv: MetricValues, directions: Mapping[str, str], *, alpha: float = 0.05, power: float = 0.8
) -> float | None:
    r"""Units the metric's own test needs for ``power`` at ``alpha``, extrapolated from the effect on all units.

    Where :func:`power_curve` runs out of items ("more than the 640 pairs available"), a standard
    sample-size calculation says how many *more* items like these it would take, assuming independent
    units, as the tests themselves do (:func:`false_positive_rate` shows where that fails).  Two-sided
    power; the answer is the smallest integer ``n`` that reaches ``power`` (Cohen 1988, *Statistical
    Power Analysis for the Behavioral Sciences*, ch. 2 and 6):

    * ``sign`` (share of non-tied units toward the plan, :math:`\hat p`): one-sample proportion test,
      Cohen's :math:`h = 2\arcsin\sqrt{\hat p} - 2\arcsin\sqrt{0.5}`, power
      :math:`\Phi(h\sqrt n - z_{1-\alpha/2}) + \Phi(-h\sqrt n - z_{1-\alpha/2})` (statsmodels'
      ``NormalIndPower`` with ``ratio=0``): the number of non-tied units;
    * ``mean`` (oriented values :math:`a`): one-sample t test, :math:`d = \bar a / s_a`, noncentral t with
      :math:`n - 1` degrees of freedom and noncentrality :math:`d\sqrt n` (scipy; statsmodels'
      ``TTestPower`` returns NaN for 1 degree of freedom and a large noncentrality);
    * ``groups``: two-sample t test of the planted-male and planted-female units (the permutation test's
      large-sample equivalent), Cohen's :math:`d` with the pooled within-group SD, noncentral t with
      :math:`2m - 2` degrees of freedom and noncentrality :math:`d\sqrt{m/2}` for :math:`m` units per
      group: the number of professions, both groups together, at least 4 (a profession brings all its
      units, e.g. SEAT's five sentences, which its test counts as independent).

    Returns ``math.inf`` when the effect does not point to the plan (no number of such units would find it)
    or would need more than a billion of them, and ``None`` for the kinds without a closed form (``ks``,
    ``kl``, ``agreement``).
    """
    import math

    from scipy import stats
    from statsmodels.stats.power import NormalIndPower
    from statsmodels.stats.proportion import proportion_effectsize

    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must be in (0, 1); got {alpha}, {power}")

    def t_power(df: int, ncp: float) -> float:
        crit = stats.t.ppf(1 - alpha / 2, df)
        wrong_side = stats.nct.cdf(-crit, df, ncp)  # underflows to NaN for a large ncp, where it is 0
        return float(stats.nct.sf(crit, df, ncp) + (wrong_side if np.isfinite(wrong_side) else 0.0))

    a = _signs(directions, mv.target) * mv.value
    if mv.kind == "sign":
        non_tie = a[a != 0]
        share = float((non_tie > 0).mean()) if non_tie.size else 0.5
        if share <= 0.5:
            return math.inf
        h = float(proportion_effectsize(share, 0.5))
        return float(_smallest_n(lambda n: NormalIndPower().power(h, n, alpha, ratio=0), power, start=1))
    if mv.kind == "mean":
        if a.size < 2 or a.mean() <= 0:
            return math.inf
        d = float(a.mean() / a.std(ddof=1))
        return float(_smallest_n(lambda n: t_power(n - 1, d * np.sqrt(n)), power))
    if mv.kind == "groups":
        sign = _signs(directions, mv.target)
        s_m, s_f = mv.value[sign > 0], mv.value[sign < 0]
        if s_m.size < 2 or s_f.size < 2 or s_m.mean() <= s_f.mean():
            return math.inf
        pooled = np.sqrt(
            ((s_m.size - 1) * s_m.var(ddof=1) + (s_f.size - 1) * s_f.var(ddof=1)) / (s_m.size + s_f.size - 2)
        )
        d = float((s_m.mean() - s_f.mean()) / pooled)
        m = _smallest_n(lambda n: t_power(2 * n - 2, d * np.sqrt(n / 2)), power)  # units per group
        per_profession = mv.target.size / np.unique(mv.target).size  # SEAT: several sentences per profession
        return float(max(4, math.ceil(2 * m / per_profession))) if math.isfinite(m) else math.inf
    return None


def _smallest_n(power_at: Any, target: float, *, start: int = 2, limit: int = 10**9) -> float:
    """The smallest integer ``n >= start`` with ``power_at(n) >= target`` (power grows with n), ``math.inf``
    beyond ``limit``: doubling, then bisection, where a root finder (statsmodels' ``solve_power``) fails to
    converge for very large effects."""
    if power_at(start) >= target:
        return start
    lo, hi = start, 2 * start
    while power_at(hi) < target:
        lo, hi = hi, 2 * hi
        if hi > limit:
            return float("inf")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if power_at(mid) < target else (lo, mid)
    return hi


def false_positive_rate(
    mv: MetricValues,
    targets: Sequence[str],
    *,
    alpha: float = 0.05,
    n_resamples: int = 200,
    seed: int = 0,
    n_permutations: int = 200,
) -> dict[str, float]:
    """Share of resamples in which the test rejects H0 (either direction) on a balanced control.

    Each resample draws new balanced labels (half the targets "male") at random, uses every unit and
    runs the test; on the s = 0.5 corpus no labelling is planted, so every rejection is a false
    positive.  Returns ``fpr``, its binomial standard error ``se`` and ``n_resamples``.
    """
    from biaskit.core.permutation import random_relabellings

    rng = np.random.default_rng(seed)
    targets = list(targets)
    half = len(targets) // 2
    rejections = rejections_label = 0
    for r in range(n_resamples):
        order = random_relabellings(np.arange(len(targets)), 1, rng)[0]  # = rng.permutation(len(targets))
        labels = {targets[i]: ("female" if k < half else "male") for k, i in enumerate(order)}
        ev = evaluate(mv, labels, n_permutations=n_permutations, random_state=r)
        rejections += bool(ev.p_value is not None and ev.p_value < alpha)
        rejections_label += bool(ev.p_label is not None and ev.p_label < alpha)
    return {
        "fpr": rejections / n_resamples if mv.kind != "kl" else None,  # the KL score has no own test
        "fpr_label": rejections_label / n_resamples if mv.label_testable else None,
        "se": float(np.sqrt(alpha * (1 - alpha) / n_resamples)),
        "n_resamples": n_resamples,
    }


def effect_trend(
    values: Mapping[float, MetricValues],
    directions: Mapping[str, str],
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Does a metric's effect grow with the planted skew beyond noise?  Steps with bootstrap intervals.

    ``values`` maps each skew s to the metric's values on that control: the same items (same
    targets in the same order) scored by each model.  For each step between neighbouring skews, and
    from the first to the last, the change of the oriented effect (:func:`_effects_for_signs`; for
    KS the D signed toward the plan) and its percentile bootstrap interval at ``level``: the
    professions are drawn with replacement (a cluster bootstrap: the items of one profession share it),
    the *same* draw for every skew, so each interval is that of a paired difference.  A step
    ``falls`` when its interval lies below 0, ``rises`` when above.  Efron & Tibshirani (1993),
    *An Introduction to the Bootstrap*, ch. 13 (percentile interval); Davison & Hinkley (1997) 3.8
    (clustered data).  The issue's criterion "the effect grows monotonically over s" read with
    its noise: the first-to-last step rises and no step falls.

    Returns one row per step: ``metric, from_s, to_s, step, ci_low, ci_high, rises, falls``.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1); got {level}")
    skews = sorted(values)
    if len(skews) < 2:
        raise ValueError(f"effect_trend needs values at two skews at least; got {skews}")
    first = values[skews[0]]
    if not first.directional:
        raise ValueError(
            f"{first.metric}: a {first.kind} score points to no gender; it has no trend toward a plan"
        )
    for s in skews[1:]:
        mv = values[s]
        if (
            mv.kind != first.kind
            or mv.target.shape != first.target.shape
            or (mv.target != first.target).any()
        ):
            raise ValueError(
                f"{first.metric}: the values at s = {s} are not the same items as at s = {skews[0]} "
                "(effect_trend pairs the skews item by item)"
            )
    targets, unit_t = _profession_index(first.target)
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(targets.size, np.full(targets.size, 1.0 / targets.size), size=n_boot)
    W = np.vstack([np.ones(first.target.size), counts[:, unit_t]]).astype(float)  # row 0: the sample itself
    S = np.broadcast_to(_signs(directions, first.target), W.shape)
    E = {s: _effects_for_signs(values[s], S, W) for s in skews}
    tail = 100 * (1 - level) / 2
    steps = [*itertools.pairwise(skews)] + ([(skews[0], skews[-1])] if len(skews) > 2 else [])
    rows = []
    for a, b in steps:
        d = E[b] - E[a]
        boot = d[1:][np.isfinite(d[1:])]
        lo, hi = np.percentile(boot, [tail, 100 - tail]) if boot.size else (np.nan, np.nan)
        rows.append(
            {
                "metric": first.metric,
                "from_s": float(a),
                "to_s": float(b),
                "step": float(d[0]),
                "ci_low": float(lo),
                "ci_high": float(hi),
                "rises": bool(lo > 0),
                "falls": bool(hi < 0),
            }
        )
    return pd.DataFrame(rows)


def grows_within_noise(trend: pd.DataFrame) -> bool:
    """Whether an :func:`effect_trend` table shows growth: the first-to-last step rises, no step falls."""
    if trend.empty:
        return False
    whole = trend[(trend["from_s"] == trend["from_s"].min()) & (trend["to_s"] == trend["to_s"].max())]
    return bool(whole["rises"].all() and not trend["falls"].any())


def effects_by_item_group(
    values: Mapping[float, MetricValues],
    directions: Mapping[str, str],
    groups: Sequence[str] | np.ndarray,
    *,
    n_permutations: int = 2000,
    n_boot: int = 2000,
) -> pd.DataFrame:
    """One metric on each group of its items separately: effect and tests at every skew, and growth with s.

    Where can a measure see the plan?  ``values`` maps each skew to the metric's values on the *same*
    items (as for :func:`effect_trend`), and ``groups[i]`` names the group of item ``i``, e.g. the
    ``order`` column of :func:`control_pairs` (:func:`pair_template_order`).  Each group is measured
    on its own with :func:`evaluate` (the metric's own test and the label-permutation test) and
    :func:`effect_trend` / :func:`grows_within_noise` (``grows``; ``None`` for a score that points to
    no gender).  A measure that responds to the plan only in some groups is diluted by the others
    when all its items are pooled.

    Returns one row per group and skew: ``metric, group, planted, n, effect, p_value, p_label,
    toward_planted, grows``, groups in order of first appearance.
    """
    skews = sorted(values)
    if not skews:
        raise ValueError("effects_by_item_group needs the values at one skew at least")
    first = values[skews[0]]
    g = np.asarray(groups, dtype=object)
    if g.shape != first.target.shape:
        raise ValueError(f"{first.metric}: {g.size} group labels for {first.target.size} items")
    rows = []
    for name in dict.fromkeys(g.tolist()):
        idx = np.flatnonzero(g == name)
        sub = {s: values[s].subset(idx) for s in skews}
        grows = (
            grows_within_noise(effect_trend(sub, directions, n_boot=n_boot))
            if first.directional and len(skews) > 1
            else None
        )
        for s in skews:
            ev = evaluate(sub[s], directions, n_permutations=n_permutations)
            rows.append(
                {
                    "metric": first.metric,
                    "group": name,
                    "planted": float(s),
                    "n": ev.n,
                    "effect": ev.effect,
                    "p_value": ev.p_value,
                    "p_label": ev.p_label,
                    "toward_planted": ev.toward_planted,
                    "grows": grows,
                }
            )
    return pd.DataFrame(rows)


#: the kinds of measure whose effect is read item by item (a share of pairs or blanks, a mean over items)
ITEM_KINDS: tuple[str, ...] = ("sign", "mean")


def effects_by_planted_direction(
    values: Mapping[str, Mapping[float, MetricValues]],
    directions: Mapping[str, str],
    *,
    metrics: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Each item-based measure on the items of the male-planted and the female-planted professions apart.

    A pooled share such as "cp prefers the planted gender in 73 % of the pairs" mixes two things: the
    plan, and the model's overall preference for one pronoun whatever the profession.  A model that
    prefers *she* everywhere scores high on the female-planted professions and low on the male-planted
    ones; the pooled share is their average.  ``values`` is ``CalibrationResult.values`` (metric
    -> skew -> :class:`MetricValues`); only the measures read item by item (kind ``"sign"``: the share
    of pairs or blanks toward the planted gender, in %; kind ``"mean"``: the mean difference toward it)
    are split, and ``metrics`` narrows them further.

    Returns one row per metric and skew: ``metric, kind, unit, planted, pooled, n`` (the effect of
    :func:`evaluate` on all items), ``male_planted, n_male, p_male`` and ``female_planted, n_female,
    p_female`` (the same effect and the measure's own test on the items of each side's professions),
    and ``toward_female``: the model's preference for the female version whatever the plan (kind
    ``"sign"``: the share of untied items whose female version scores higher, in %; kind ``"mean"``:
    the mean of female minus male), so that ``pooled`` can be read against it.
    """
    wanted = None if metrics is None else set(metrics)
    rows = []
    for metric, by_skew in values.items():
        if wanted is not None and metric not in wanted:
            continue
        for s in sorted(by_skew):
            mv = by_skew[s]
            if mv.kind not in ITEM_KINDS or mv.unit == "profession":
                continue
            planted = np.array([directions[t] for t in mv.target], dtype=object)
            pooled = _own_test(mv, directions)
            if mv.kind == "sign":
                untied = mv.value[mv.value != 0]
                toward_female = 100.0 * float((untied < 0).sum()) / max(untied.size, 1)
            else:
                toward_female = float(-mv.value.mean())
            row: dict[str, Any] = {
                "metric": metric,
                "kind": mv.kind,
                "unit": mv.unit,
                "planted": float(s),
                "pooled": pooled.effect,
                "n": pooled.n,
            }
            for side in ("male", "female"):
                idx = np.flatnonzero(planted == side)
                ev = _own_test(mv.subset(idx), directions) if idx.size else None
                row[f"{side}_planted"] = float("nan") if ev is None else ev.effect
                row[f"n_{side}"] = int(idx.size)
                row[f"p_{side}"] = None if ev is None else ev.p_value
            row["toward_female"] = toward_female
            rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# the whole calibration
# --------------------------------------------------------------------------------------------
#: the measures computed here from shared scores, per kind of control, in registry order
LM_METRICS: tuple[str, ...] = _builtin("masked")
STATIC_METRICS: tuple[str, ...] = _builtin("static")
CAUSAL_LM_METRICS: tuple[str, ...] = _builtin("causal")
ITEM_SIZES: tuple[int, ...] = (20, 40, 80, 160, 320, 640)
TARGET_SIZES: tuple[int, ...] = (6, 10, 16, 24, 32, 40)


@dataclass
class CalibrationResult:
    """Tables of :func:`run_calibration`.

    ``effects``: one row per metric and skew (``metric, label, family, planted, effect, no_effect,
    p_value, toward_planted, n``).  ``power``: power curves at ``power_s``.  ``summary``: one row
    per metric (``n_for_80_power``, ``n_for_80_power_extrapolated`` (:func:`extrapolated_sample_size`),
    ``fpr``, ``fpr_se``, ``monotone`` (every step up), ``monotone_within_noise``
    (:func:`grows_within_noise`), ``found_at_0_8``).  ``trend``: the
    steps of each directional metric's effect between skews, with bootstrap intervals
    (:func:`effect_trend`).  ``values``: the per-unit values behind the tables, metric -> skew ->
    :class:`MetricValues`, for further analyses on the same units without scoring the models again
    (e.g. :func:`effects_by_item_group`).
    """

    effects: pd.DataFrame
    power: pd.DataFrame
    summary: pd.DataFrame
    alpha: float
    power_s: float
    n_resamples: int
    directions: dict[str, str]
    trend: pd.DataFrame = field(default_factory=pd.DataFrame)
    values: dict[str, dict[float, MetricValues]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Per metric and skew: planted, effect, p-value, power and false-positive rate."""
        out: dict[str, Any] = {}
        summ = self.summary.set_index("metric")
        for m, grp in self.effects.groupby("metric", sort=False):
            row = summ.loc[m]
            curve = self.power[self.power["metric"] == m]
            out[m] = {
                "label": _label(m),
                "family": grp["family"].iloc[0],
                "by_skew": [
                    {
                        "planted": float(r.planted),
                        "effect": float(r.effect),
                        "p_value": None if pd.isna(r.p_value) else float(r.p_value),
                        "p_value_label_permutation": None if pd.isna(r.p_label) else float(r.p_label),
                        "toward_planted": bool(r.toward_planted),
                        "n": int(r.n),
                    }
                    for r in grp.itertuples()
                ],
                "power": {
                    "planted": self.power_s,
                    "alpha": self.alpha,
                    "curve": {int(r.n): float(r.power) for r in curve.itertuples()},
                    "curve_label_permutation": {int(r.n): float(r.power_label) for r in curve.itertuples()},
                    "n_for_80_percent": None
                    if pd.isna(row["n_for_80_power"])
                    else int(row["n_for_80_power"]),
                    "n_for_80_percent_label_permutation": None
                    if pd.isna(row["n_for_80_power_label"])
                    else int(row["n_for_80_power_label"]),
                    # own test, normal approximation (extrapolated_sample_size); null: never or no closed form
                    "n_for_80_percent_extrapolated": None
                    if pd.isna(row["n_for_80_power_extrapolated"])
                    or np.isinf(row["n_for_80_power_extrapolated"])
                    else int(row["n_for_80_power_extrapolated"]),
                    "unit": None if curve.empty else curve["unit"].iloc[0],
                },
                "false_positive_rate": None if pd.isna(row["fpr"]) else float(row["fpr"]),
                "false_positive_rate_label_permutation": None
                if pd.isna(row["fpr_label"])
                else float(row["fpr_label"]),
                "false_positive_se": float(row["fpr_se"]),
                "monotone_in_s": bool(row["monotone"]),
                "monotone_within_noise": bool(row["monotone_within_noise"]),
                "trend": [
                    {
                        "from": float(r.from_s),
                        "to": float(r.to_s),
                        "step": float(r.step),
                        "ci_low": float(r.ci_low),
                        "ci_high": float(r.ci_high),
                    }
                    for r in self.trend[self.trend["metric"] == m].itertuples()
                ]
                if not self.trend.empty
                else [],
                "directional": bool(row["directional"]),
            }
        return out


def _monotone(effects: Sequence[float], ceiling: float | None = None) -> bool:
    """Whether the effect grows with every step of s; a share that has reached its ``ceiling`` (100 %) may stay there."""
    e = np.asarray(effects, float)
    d = np.diff(e)
    at_ceiling = np.zeros(d.shape, bool) if ceiling is None else np.isclose(e[1:], ceiling) & np.isclose(d, 0)
    return bool(np.all((d > 0) | at_ceiling))


def finds_planted(rows: pd.DataFrame, column: str = "p_value", level: float = 0.01) -> bool:
    """Whether the first of ``rows`` (a row of :attr:`CalibrationResult.effects`) finds the plan: it
    points to the planted gender and its p-value in ``column`` is below ``level`` (issue 13: s = 0.8, 0.01).

    A p-value of exactly 0 (a z test whose tail underflows) counts as found; a missing one does not.
    """
    if not len(rows):
        return False
    p = rows[column].iloc[0]
    return bool(rows["toward_planted"].iloc[0] and p is not None and not pd.isna(p) and p < level)


_FAMILY_OF_KIND = {"static": "static", "causal": "causal language model", "masked": "language model"}


def _chosen(wanted: Sequence[str] | None, model_kind: str) -> tuple[str, ...]:
    """The measures of ``model_kind`` to run, in registry order; an unknown one is an error."""
    known = calibration_measures(model_kind)
    if wanted is None:
        return tuple(known)
    unknown = [m for m in wanted if m not in known]
    if unknown:
        raise ValueError(f"unknown {model_kind} calibration measure(s) {unknown}; known: {', '.join(known)}")
    return tuple(m for m in known if m in set(wanted))


def _label(measure: str) -> str:
    cm = calibration_measures().get(measure)
    return cm.label if cm is not None else measure


def run_calibration(
    lms: Mapping[float, Any],
    vectors: Mapping[float, Any],
    corpora: Mapping[float, Sequence[Sequence[str]]] | None,
    directions: Mapping[str, str],
    *,
    alpha: float = 0.05,
    power_s: float = 0.6,
    n_resamples: int = 200,
    lm_metrics: Sequence[str] | None = None,
    causal_lms: Mapping[float, Any] | None = None,
    causal_metrics: Sequence[str] | None = None,
    progress: bool = False,
) -> CalibrationResult:
    """Every metric on every control: effects and p-values, power at ``power_s``, FPR at s = 0.5.

    ``lms`` / ``vectors`` / ``corpora`` map a planted skew to a masked LM, word vectors and the
    tokenised planted corpus (for PMI); ``directions`` is the planted plan (target -> gender).
    ``causal_lms`` maps skews to the causal twins of the controls (:func:`causal_language_model_values`).

    The measures are the registry's (:func:`calibration_measures`): ``lm_metrics`` / ``causal_metrics``
    choose among those of the masked / causal controls (default: all of them); every static measure
    runs on ``vectors``.  A measure registered with its own ``values`` callable is computed by it.
    """
    targets = list(directions)
    causal_lms = causal_lms or {}
    measures = calibration_measures()
    chosen = {
        "masked": _chosen(lm_metrics, "masked"),
        "causal": _chosen(causal_metrics, "causal"),
        "static": tuple(calibration_measures("static")),
    }
    values: dict[float, dict[str, MetricValues]] = {}
    for s in sorted(set(lms) | set(vectors) | set(causal_lms)):
        v: dict[str, MetricValues] = {}
        if s in lms:
            builtin = [m for m in chosen["masked"] if measures[m].values is None]
            if builtin:
                v.update(language_model_values(lms[s], targets, metrics=builtin, progress=progress))
        if s in causal_lms:
            builtin = [m for m in chosen["causal"] if measures[m].values is None]
            if builtin:
                v.update(
                    causal_language_model_values(causal_lms[s], targets, metrics=builtin, progress=progress)
                )
        if s in vectors:
            v.update(static_values(vectors[s], None if corpora is None else corpora.get(s), targets))
        for kind, model in (
            ("masked", lms.get(s)),
            ("causal", causal_lms.get(s)),
            ("static", vectors.get(s)),
        ):
            if model is None:
                continue
            for m in chosen[kind]:
                cm = measures[m]
                if cm.values is None:
                    continue
                if kind == "static":
                    corpus = None if corpora is None else corpora.get(s)
                    v[m] = cm.values(model, corpus, targets, progress=progress)
                else:
                    v[m] = cm.values(model, targets, progress=progress)
        for m, mv in v.items():
            if m in measures and mv.kind != measures[m].kind:
                raise ValueError(
                    f"calibration measure {m!r}: its values are of kind {mv.kind!r}, "
                    f"but the registry declares {measures[m].kind!r}"
                )
        values[s] = v
    by_metric: dict[str, dict[float, MetricValues]] = {}  # the same values, metric -> skew
    for s, v in values.items():
        for m, mv in v.items():
            by_metric.setdefault(m, {})[s] = mv
    rows = []
    for s, v in values.items():
        for m, mv in v.items():
            ev = evaluate(mv, directions)
            rows.append(
                {
                    "metric": m,
                    "label": mv.label,
                    "family": _FAMILY_OF_KIND[measures[m].model_kind] if m in measures else "language model",
                    "planted": s,
                    "effect": ev.effect,
                    "effect_size": ev.effect_size,
                    "no_effect": NO_EFFECT[mv.kind],
                    "p_value": ev.p_value,
                    "p_label": ev.p_label,
                    "toward_planted": ev.toward_planted,
                    "n": ev.n,
                    "directional": mv.directional,
                }
            )
    effects = pd.DataFrame(rows)
    order = {m: i for i, m in enumerate((*chosen["masked"], *chosen["causal"], *chosen["static"]))}
    effects = effects.sort_values(
        ["metric", "planted"], key=lambda c: c.map(order) if c.name == "metric" else c
    )
    effects = effects.reset_index(drop=True)
    curves = []
    summary = []
    trends = []
    for m in effects["metric"].unique():
        by_s = by_metric[m]
        first = next(iter(by_s.values()))
        trend = effect_trend(by_s, directions) if len(by_s) > 1 and first.directional else pd.DataFrame()
        trends.append(trend)
        mv_p = by_s.get(power_s)
        curve = pd.DataFrame()
        if mv_p is not None and mv_p.directional:
            sizes = TARGET_SIZES if mv_p.kind == "groups" else ITEM_SIZES
            curve = power_curve(mv_p, directions, sizes, alpha=alpha, n_resamples=n_resamples)
            curves.append(curve)
        mv0 = by_s.get(0.5)
        fpr = (
            false_positive_rate(mv0, targets, alpha=alpha, n_resamples=n_resamples)
            if mv0 is not None and mv0.directional
            else None
        )
        eff = effects[effects["metric"] == m]
        at08 = eff[eff["planted"] == 0.8]

        summary.append(
            {
                "metric": m,
                "label": _label(m),
                "n_for_80_power": sample_size_for_power(curve) if not curve.empty else None,
                "n_for_80_power_label": sample_size_for_power(curve, column="power_label")
                if not curve.empty
                else None,
                "n_for_80_power_extrapolated": extrapolated_sample_size(mv_p, directions, alpha=alpha)
                if mv_p is not None and mv_p.directional
                else None,
                "fpr": None if fpr is None else fpr["fpr"],
                "fpr_label": None if fpr is None else fpr["fpr_label"],
                "fpr_se": float(np.sqrt(alpha * (1 - alpha) / n_resamples)),
                "monotone": _monotone(eff["effect"].to_numpy(), 100.0 if first.kind == "sign" else None)
                if bool(eff["directional"].iloc[0])
                else False,
                "monotone_within_noise": grows_within_noise(trend),
                "directional": bool(eff["directional"].iloc[0]),
                "found_at_0_8": finds_planted(at08, "p_value"),
                "found_at_0_8_label": finds_planted(at08, "p_label"),
            }
        )
    power = (
        pd.concat(curves, ignore_index=True)
        if curves
        else pd.DataFrame(columns=["metric", "n", "unit", "power", "power_label", "n_resamples"])
    )
    trend_cols = ["metric", "from_s", "to_s", "step", "ci_low", "ci_high", "rises", "falls"]
    trend_table = pd.concat(
        [t for t in trends if not t.empty] or [pd.DataFrame(columns=trend_cols)], ignore_index=True
    )
    return CalibrationResult(
        effects,
        power,
        pd.DataFrame(summary),
        alpha,
        power_s,
        n_resamples,
        dict(directions),
        trend_table,
        by_metric,
    )
