"""The calibration's controlled items and each metric's raw values per unit on a control model.

Part of :mod:`biaskit.studies.calibration` (its public front, which re-exports every name here): the
templates and gendered words written for the planted-bias controls (:func:`control_pairs`,
:func:`control_blanks`), the registry's calibration measures (:func:`calibration_measures`) and the
values of every measure on a masked, causal or static control (:func:`language_model_values`,
:func:`causal_language_model_values`, :func:`static_values`), as :class:`~biaskit.core.registry.MetricValues`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

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
    :func:`~biaskit.studies.calibration_stats.effects_by_item_group` splits a metric's pairs by this order.  Of :data:`PAIR_TEMPLATES`, the
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


def _pair_metric(key: str, kind: Kind, lm, pairs: pd.DataFrame, method: str, progress: bool) -> MetricValues:
    """``key``'s values on the control ``pairs``: the male-minus-female score by ``method``
    (:func:`_pair_values`), one unit a pair."""
    male, female = _pair_values(lm, pairs, method, progress=progress)
    return MetricValues(key, kind, pairs["target"].to_numpy(object), male - female, male, female)


def _blank_metric(key: str, kind: Kind, blanks: pd.DataFrame, values: np.ndarray, unit: str) -> MetricValues:
    """``key``'s ``values`` on the control ``blanks`` (one a ``unit``), each labelled by its target."""
    return MetricValues(key, kind, blanks["target"].to_numpy(object), values, unit=unit)


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
        out["causal_shared"] = _pair_metric("causal_shared", "sign", lm, pairs, "shared", progress)
    if "causal_next_word" in want:
        blanks = control_blanks(targets, BLANK_TEMPLATES)
        out["causal_next_word"] = _blank_metric(
            "causal_next_word", "sign", blanks, _next_word_values(lm, blanks), "blank"
        )
    if "causal_sld" in want:
        out["causal_sld"] = _pair_metric(
            "causal_sld", "mean", lm, control_pairs(targets, SLD_TEMPLATES), "ll", progress
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
    for key, kind, templates, unit in (
        ("stereoset_ss", "sign", BLANK_TEMPLATES, "blank"),
        ("barza_tbe", "mean", TBE_TEMPLATES, "template"),
    ):
        if key in want:
            blanks = control_blanks(targets, templates)
            out[key] = _blank_metric(key, kind, blanks, _blank_values(lm, blanks), unit)
    if "barza_sld" in want:
        out["barza_sld"] = _pair_metric(
            "barza_sld", "mean", lm, control_pairs(targets, SLD_TEMPLATES), "sz", progress
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


#: the measures computed here from shared scores, per kind of control, in registry order
LM_METRICS: tuple[str, ...] = _builtin("masked")
STATIC_METRICS: tuple[str, ...] = _builtin("static")
CAUSAL_LM_METRICS: tuple[str, ...] = _builtin("causal")
