"""The planted-control items of the calibration, and the scores the calibration measures share.

The calibration on planted controls (:mod:`biaskit.studies.calibration`, notebook 14) measures every metric
on the same controlled items: CrowS-style sentence pairs that differ only in a gendered word
(:data:`PAIR_TEMPLATES`, their paraphrases :data:`PARAPHRASE_TEMPLATES`), StereoSet-style blanks
(:data:`BLANK_TEMPLATES`), Barza-style templates and sentence pairs (:data:`TBE_TEMPLATES`,
:data:`SLD_TEMPLATES`), bleached SEAT sentences (:data:`SEAT_TEMPLATES`, :data:`SEAT_ATTRIBUTES`), LPBS
templates and the gendered word sets of the static metrics (:data:`MALE_WORDS`, :data:`FEMALE_WORDS`), all
written by biaskit for the controls.  Each metric module's calibration hook
(``CalibrationMeasure(values=...)``, :class:`~biaskit.core.registry.CalibrationCall`) builds its items here
and reads the scores through :func:`pair_scores`, which scores each pair once per model: the cp scores of
the pairs serve ``crows_cp`` and the robustness agreement, the sz scores ``crows_sz`` and the thesis's KS
test and KL score, the causal ``ll`` scores ``causal_ll``, ``causal_ks`` and ``causal_kl``.  The pronoun
probabilities at the control blanks are :func:`biaskit.metrics.gender_templates.control_blank_values`.
This module imports no other metric module.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from biaskit.core.registry import CalibrationCall, Kind, MetricValues

__all__ = [
    "BLANK_TEMPLATES",
    "FEMALE_WORDS",
    "IBS_GENDER_WORDS",
    "LPBS_TEMPLATES",
    "MALE_WORDS",
    "PAIR_TEMPLATES",
    "PARAPHRASE_TEMPLATES",
    "PROFESSION_FIRST",
    "PRONOUN_FIRST",
    "SEAT_ATTRIBUTES",
    "SEAT_TEMPLATES",
    "SLD_TEMPLATES",
    "TBE_TEMPLATES",
    "control_blanks",
    "control_pairs",
    "fill_template",
    "pair_scores",
    "pair_values",
    "pair_template_order",
]

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


def fill_template(template: str, target: str, gender: str) -> str:
    """``template`` with the profession ``{t}`` and the gendered slots ``{p}``, ``{P}``, ``{pos}``, ``{obj}``,
    ``{rel}`` filled for ``gender`` (``"male"`` or ``"female"``)."""
    out = template.replace("{t}", target)
    for k, word in _FORMS[gender].items():  # braced slots: "{p}" never matches inside "{pos}"
        out = out.replace("{" + k + "}", word)
    return out


#: the two places of the gendered word in a pair template (:func:`pair_template_order`)
PRONOUN_FIRST = "pronoun first"
PROFESSION_FIRST = "profession first"
_GENDER_SLOTS = tuple(
    "{" + k + "}" for k in _FORMS["male"]
)  # the slots fill_template fills with a gendered word


def pair_template_order(templates: Sequence[str] = PAIR_TEMPLATES) -> tuple[str, ...]:
    """Whether each template puts its first gendered word before the profession (:data:`PRONOUN_FIRST`) or
    after it.

    A causal model's ``shared`` reading of a pair (the log-likelihood of the words the two sentences share
    *after* the gendered word; :func:`biaskit.lm.score_pairs` with ``"shared"``) sees the profession only
    when it follows that word: in *"The nurse said that she would be late"* it scores *would be late*.
    :func:`~biaskit.studies.calibration_stats.effects_by_item_group` splits a metric's pairs by this order.
    Of :data:`PAIR_TEMPLATES`, the first twelve name the profession first and the last four the pronoun.
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

    ``order`` is the template's :func:`pair_template_order` (the gendered word before or after the
    profession).
    """
    order = pair_template_order(templates)
    rows = [
        {
            "target": t,
            "template": j,
            "order": order[j],
            "male": fill_template(tpl, t, "male"),
            "female": fill_template(tpl, t, "female"),
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


#: the gender words of seed 004's occupation x gender templates, by side (the indirect score through names)
IBS_GENDER_WORDS: dict[str, tuple[str, ...]] = {
    "male": ("male", "boy", "man"),
    "female": ("female", "girl", "woman"),
}


# --------------------------------------------------------------------------------------------
# scores shared by the measures of one control model
# --------------------------------------------------------------------------------------------
def pair_scores(
    call: CalibrationCall, method: str, templates: Sequence[str] = PAIR_TEMPLATES
) -> tuple[np.ndarray, np.ndarray]:
    """The scores of the male and of the female sentence of every control pair of ``call.targets`` and
    ``templates`` by ``method`` (a reading of :func:`biaskit.lm.score_pairs`: ``"cp"``, ``"sz"``,
    ``"aul"``, ``"ll"``, ``"shared"``), computed once per model (``call.cache``).  ``ValueError`` when a
    pair is not scored."""
    key = ("pair_scores", method, tuple(templates), call.targets)
    return call.cached(key, lambda: _score_pairs(call, method, templates))


def _score_pairs(
    call: CalibrationCall, method: str, templates: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    from biaskit.lm import score_pairs

    pairs = control_pairs(call.targets, templates)
    res = score_pairs(
        call.model,
        pairs["male"].tolist(),
        pairs["female"].tolist(),
        method,
        progress=call.progress,
        batch_size=64,
    )
    sc = res.scores.set_index("row").reindex(range(len(pairs)))
    if sc["sent_more_score"].isna().any():
        raise ValueError(
            f"{method}: {int(sc['sent_more_score'].isna().sum())} control pair(s) were not scored"
        )
    return sc["sent_more_score"].to_numpy(float), sc["sent_less_score"].to_numpy(float)


def pair_values(
    call: CalibrationCall, key: str, kind: Kind, method: str, templates: Sequence[str] = PAIR_TEMPLATES
) -> MetricValues:
    """Measure ``key``'s values on the control pairs: the male-minus-female score by ``method``
    (:func:`pair_scores`), one unit a pair, with the two samples in ``male`` / ``female``."""
    male, female = pair_scores(call, method, templates)
    target = control_pairs(call.targets, templates)["target"].to_numpy(object)
    return MetricValues(key, kind, target, male - female, male, female)
