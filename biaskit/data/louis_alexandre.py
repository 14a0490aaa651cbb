"""The bundled data of Louis-Alexandre (2022, seed 004): word lists, templates, surface-form rules,
published tables, XLNet padding texts and the user study's figure layout.

Everything here is read from files (``wordlists/en/louis_alexandre_*.json``, ``data/louis-alexandre/``)
and touches no model.  The indirect score that uses these lists is :mod:`biaskit.metrics.indirect_bias`
(its docstring explains the templates' normalisation and the surface forms); the model side is
:mod:`biaskit.lm.xlnet` (reading a word at a mask, BERT or XLNet) and :mod:`biaskit.lm.slot_scores`.

=====================================  ============================================================
:func:`load_louis_alexandre_words`     the word lists of Appendix A.1.1 (779 bridge names, ...)
:func:`load_louis_alexandre_templates` the 55 template sets of Appendix A.1.2 as :class:`TemplateSet`
:func:`load_louis_alexandre_rules`     surface-form rules (plurals, articles, gender/religion classes)
:func:`load_louis_alexandre_tables`    the published result tables, transcribed verbatim
:func:`load_padding_texts`             the XLNet padding texts (:data:`PADDING_TEXT` and book openings)
:func:`load_user_study_figures`        the layout of Figs. 5.1/5.2 and the questionnaire wording
:class:`FeatureSet`, :func:`feature_set`  predicted classes and the word each takes per template form
=====================================  ============================================================
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from biaskit.core.paths import data_dir, wordlists_dir

logger = logging.getLogger(__name__)

__all__ = [
    "PADDING_TEXT",
    "SLOT_RE",
    "FeatureSet",
    "TemplateSet",
    "dedupe_words",
    "feature_mask_index",
    "feature_set",
    "load_louis_alexandre_rules",
    "load_louis_alexandre_tables",
    "load_louis_alexandre_templates",
    "load_louis_alexandre_words",
    "load_padding_texts",
    "load_user_study_figures",
    "normalise_template",
    "pluralize",
    "target_text",
    "template_form",
    "template_set",
]

#: The XLNet padding text of the Hugging Face examples (``run_generation.py``), the "original,
#: random hard-coded text" of seed 004 section 3.3.3 (extraction section 3.5).  Apache-2.0.
PADDING_TEXT = (
    "In 1991, the remains of Russian Tsar Nicholas II and his family\n"
    "(except for Alexei and Maria) are discovered.\n"
    "The voice of Nicholas's young son, Tsarevich Alexei Nikolaevich, narrates the\n"
    "remainder of the story. 1883 Western Siberia,\n"
    "a young Grigori Rasputin is asked by his father and a group of men to perform magic.\n"
    "Rasputin has a vision and denounces one of the men as a horse thief. Although his\n"
    "father initially slaps him for making such an accusation, Rasputin watches as the\n"
    "man is chased outside and beaten. Twenty years later, Rasputin sees a vision of\n"
    "the Virgin Mary, prompting him to become a priest. Rasputin quickly becomes famous,\n"
    "with people, even a bishop, begging for his blessing. <eod> </s> <eos>"
)

#: The slots of a template in biaskit's form: the context word (``{target}``, ``{target_pl}``) and the
#: predicted word (``{feature}``).
SLOT_RE = re.compile(r"\{(target|target_pl|feature)\}")


# =============================================================================================
# bundled data
# =============================================================================================
def _read_json(path: Path, what: str) -> Any:
    if not path.exists():
        raise FileNotFoundError(
            f"{what} not found at {path}; reinstall biaskit or set BIASKIT_DATA_DIR / BIASKIT_WORDLISTS_DIR"
        )
    return json.loads(path.read_text(encoding="utf-8"))


@lru_cache(maxsize=2)
def _words_cached(path: str) -> dict[str, tuple[str, ...]]:
    raw = _read_json(Path(path), "Louis-Alexandre word lists")
    return {k: tuple(v) for k, v in raw.items() if not k.startswith("_")}


def load_louis_alexandre_words(path: str | Path | None = None) -> dict[str, list[str]]:
    """The word lists of seed 004 Appendix A.1.1, verbatim (categories -> words, printed order).

    Keys: ``beverage`` (18), ``country`` (61), ``occupation`` (99), ``sport`` (30), ``trait`` (617,
    the printed list; the text claims 618 + 23), ``age`` (102), ``year_of_birth`` (102), ``gender``
    (12 surface forms), ``race`` (7), ``religion`` (12 surface forms), ``sexual_orientation`` (7),
    ``name`` (the 779 bridge names).

    Examples
    --------
    >>> words = load_louis_alexandre_words()
    >>> len(words), words["sport"][:3]
    (12, ['football', 'basketball', 'cricket'])
    """
    p = Path(path) if path is not None else wordlists_dir() / "en" / "louis_alexandre_words.json"
    return {k: list(v) for k, v in _words_cached(str(p)).items()}


def load_louis_alexandre_rules(path: str | Path | None = None) -> dict[str, Any]:
    """Surface-form rules (biaskit's reading of Table 3.1 and section 3.3.1; see the file's ``_note``).

    Examples
    --------
    >>> rules = load_louis_alexandre_rules()
    >>> sorted(rules)[:4]
    ['_note', 'classes', 'countries_with_article', 'display_order']
    """
    p = Path(path) if path is not None else wordlists_dir() / "en" / "louis_alexandre_rules.json"
    return _read_json(p, "Louis-Alexandre surface-form rules")


def load_louis_alexandre_tables(path: str | Path | None = None) -> dict[str, Any]:
    """The published result tables of seed 004 (3.2-3.8, A.1-A.8, 4.1, C.1/C.2), transcribed verbatim.

    Examples
    --------
    >>> tables = load_louis_alexandre_tables()
    >>> len(tables), "table_4_1" in tables
    (10, True)
    """
    p = Path(path) if path is not None else data_dir() / "louis-alexandre" / "published_tables.json"
    return _read_json(p, "Louis-Alexandre published tables")


@dataclass(frozen=True)
class TemplateSet:
    """Template sentences with a context slot ``{target}`` (or ``{target_pl}``) and a predicted slot
    ``{feature}``.

    ``forms[i]`` says which surface form of the predicted class template ``i`` takes
    (``"base"``, ``"singular"``/``"plural"`` for gender, ``"adjective"``/``"noun"`` for religion).
    """

    key: str
    target_category: str
    feature_category: str
    templates: tuple[str, ...]
    forms: tuple[str, ...]
    verbatim: tuple[str, ...] = ()
    complete: bool = True
    table_count: str = ""

    def __post_init__(self) -> None:
        if not self.templates:
            raise ValueError(f"template set {self.key!r} is empty")
        if len(self.forms) != len(self.templates):
            raise ValueError("forms must have one entry per template")
        for t in self.templates:
            slots = SLOT_RE.findall(t)
            if slots.count("feature") != 1 or len(slots) != 2:
                raise ValueError(
                    f"template {t!r} of {self.key!r} must contain exactly one {{target}} (or {{target_pl}}) "
                    "and one {feature} placeholder"
                )

    def __len__(self) -> int:
        return len(self.templates)

    @classmethod
    def from_strings(
        cls,
        templates: Sequence[str],
        *,
        target_category: str = "target",
        feature_category: str = "feature",
        key: str | None = None,
    ) -> TemplateSet:
        """Your own templates: ``"{target} works as a {feature}."`` (``{target_pl}`` = plural of the
        target)."""
        temps = tuple(templates)
        forms = tuple(template_form(t, feature_category) for t in temps)
        return cls(
            key or f"{target_category}-{feature_category}", target_category, feature_category, temps, forms
        )

    def subset(self, n: int | None) -> TemplateSet:
        """The first ``n`` templates (``None``: all)."""
        if n is None or n >= len(self):
            return self
        if n < 1:
            raise ValueError("n must be >= 1")
        return TemplateSet(
            self.key,
            self.target_category,
            self.feature_category,
            self.templates[:n],
            self.forms[:n],
            self.verbatim[:n],
            self.complete,
            self.table_count,
        )


def normalise_template(
    verbatim: str,
    context_placeholder: str = "[TARGET]",
    predicted_placeholder: str = "[FEATURE]",
    *,
    ascii_apostrophes: bool = True,
    fix_plural_spacing: bool = True,
) -> str:
    """Turn an Appendix A.1.2 template into slot form.

    ``"People who work as [TARGET]s are [FEATURE]."`` -> ``"People who work as {target_pl} are {feature}."``.
    The context placeholder becomes ``{target}`` (``{target_pl}`` when followed by ``s``), the
    predicted one ``{feature}``; ``’`` -> ``'`` and ``"[TARGET] s"`` -> ``"[TARGET]s"`` when asked.
    """
    t = verbatim
    if ascii_apostrophes:
        t = t.replace("’", "'").replace("‘", "'")
    if fix_plural_spacing:
        t = re.sub(re.escape(context_placeholder) + r" s\b", context_placeholder + "s", t)
    t = t.replace(context_placeholder + "s", "\x00PL\x00").replace(context_placeholder, "\x00T\x00")
    t = t.replace(predicted_placeholder, "{feature}")
    return t.replace("\x00PL\x00", "{target_pl}").replace("\x00T\x00", "{target}")


def feature_mask_index(template: str) -> int:
    """Which mask (0 = first) is the predicted slot when both slots of ``template`` are masked."""
    return [m.group(1) for m in SLOT_RE.finditer(template)].index("feature")


def template_form(template: str, feature_category: str) -> str:
    """Which surface form of the predicted class a slot-form template takes (Table 3.1 ``*`` / ``•``)."""
    if feature_category == "gender":
        return "singular" if re.search(r"\ban \{feature\}|\ba \{feature\}", template) else "plural"
    if feature_category == "religion":
        return "noun" if re.search(r"religion\b", template, re.I) else "adjective"
    return "base"


@lru_cache(maxsize=4)
def _templates_cached(path: str, ascii_apostrophes: bool, fix_plural_spacing: bool) -> dict[str, TemplateSet]:
    raw = _read_json(Path(path), "Louis-Alexandre templates")
    out: dict[str, TemplateSet] = {}
    for key, s in raw["sets"].items():
        temps = tuple(
            normalise_template(
                t,
                s["context_placeholder"],
                s["predicted_placeholder"],
                ascii_apostrophes=ascii_apostrophes,
                fix_plural_spacing=fix_plural_spacing,
            )
            for t in s["templates"]
        )
        out[key] = TemplateSet(
            key=key,
            target_category=s["target_category"],
            feature_category=s["feature_category"],
            templates=temps,
            forms=tuple(template_form(t, s["feature_category"]) for t in temps),
            verbatim=tuple(s["templates"]),
            complete=bool(s["complete"]),
            table_count=str(s["table_3_1_count"]),
        )
    return out


def load_louis_alexandre_templates(
    path: str | Path | None = None, *, ascii_apostrophes: bool = True, fix_plural_spacing: bool = True
) -> dict[str, TemplateSet]:
    """The 55 template sets of seed 004 Appendix A.1.2 as :class:`TemplateSet` (keys
    ``"occupation-trait"``...).

    ``complete`` is False for the 10 sets whose printed size differs from Table 3.1 (e.g.
    Occupation - Gender: 2 printed vs 8 + 4); they are used as printed (a warning is logged when used).

    Examples
    --------
    >>> templates = load_louis_alexandre_templates()
    >>> len(templates), type(templates["occupation-trait"]).__name__
    (55, 'TemplateSet')
    """
    p = Path(path) if path is not None else data_dir() / "louis-alexandre" / "templates.json"
    return dict(_templates_cached(str(p), ascii_apostrophes, fix_plural_spacing))


def template_set(target_category: str, feature_category: str, **kwargs: Any) -> TemplateSet:
    """The bundled template set linking two categories (``"name"`` for the bridge)."""
    sets = load_louis_alexandre_templates(**kwargs)
    key = f"{target_category}-{feature_category}"
    if key not in sets:
        raise KeyError(f"no template set {key!r}; available: {sorted(sets)}")
    ts = sets[key]
    if not ts.complete:
        logger.warning(
            "template set %s: %d templates printed in Appendix A.1.2 but Table 3.1 says %s; using the "
            "printed ones",
            key,
            len(ts),
            ts.table_count,
        )
    return ts


# =============================================================================================
# features and surface forms
# =============================================================================================
@dataclass(frozen=True)
class FeatureSet:
    """The predicted classes of a category and the word each takes in each template form."""

    category: str
    classes: tuple[str, ...]
    forms: Mapping[str, Mapping[str, str]]  # class -> form -> surface word

    def surface(self, cls: str, form: str) -> str:
        f = self.forms[cls]
        if form in f:
            return f[form]
        if "base" in f:
            return f["base"]
        raise KeyError(f"feature {cls!r} ({self.category}) has no {form!r} form; forms: {sorted(f)}")


def feature_set(
    category: str, words: Sequence[str] | None = None, rules: Mapping[str, Any] | None = None
) -> FeatureSet:
    """Features of ``category``: plain words, or the classes of the rules file (gender, religion).

    For gender / religion, ``words`` may name classes (``"woman"``) or any of their surface forms
    (``"women"``, ``"Islam"``); the class is used.  Other categories: each word is its own class.
    """
    rules = rules if rules is not None else load_louis_alexandre_rules()
    classes_rule = rules.get("classes", {}).get(category)
    if classes_rule is None:
        if words is None:
            words = load_louis_alexandre_words()[category]
        ws = dedupe_words(words, category)
        return FeatureSet(category, tuple(ws), {w: {"base": w} for w in ws})
    by_surface = {s: c for c, forms in classes_rule.items() for s in forms.values()}
    if words is None:
        chosen = list(classes_rule)
        order = rules.get("display_order", {}).get(category)
        if order:
            chosen = [c for c in order if c in classes_rule] + [c for c in chosen if c not in order]
    else:
        chosen = []
        for w in words:
            c = w if w in classes_rule else by_surface.get(w)
            if c is None:
                raise ValueError(
                    f"{w!r} is not a {category} class or surface form; classes: {list(classes_rule)}"
                )
            if c not in chosen:
                chosen.append(c)
    return FeatureSet(category, tuple(chosen), {c: dict(classes_rule[c]) for c in chosen})


def dedupe_words(words: Sequence[str], what: str) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for w in words:
        if not isinstance(w, str) or not w.strip():
            raise ValueError(f"{what}: empty or non-text entry {w!r}")
        if w in seen:
            logger.warning("%s: %r given twice; kept once", what, w)
            continue
        seen.add(w)
        out.append(w)
    return out


def pluralize(word: str, irregular: Mapping[str, str] | None = None) -> str:
    """English plural of an occupation for ``[TARGET]s`` (seed 004 section 3.3.1).

    Irregular forms from the rules file first (*barman* -> *barmen*, *nanny* -> *nannies*); then
    -s/-x/-z/-ch/-sh -> +es, consonant + y -> ies, otherwise +s (the last word of a phrase).
    """
    irregular = irregular if irregular is not None else load_louis_alexandre_rules()["irregular_plurals"]
    if word in irregular:
        return irregular[word]
    if re.search(r"(s|x|z|ch|sh)$", word):
        return word + "es"
    if re.search(r"[^aeiou]y$", word):
        return word[:-1] + "ies"
    return word + "s"


def target_text(word: str, category: str, plural: bool, rules: Mapping[str, Any]) -> str:
    w = pluralize(word, rules.get("irregular_plurals", {})) if plural else word
    if category == "country" and word in rules.get("countries_with_article", ()):
        w = "the " + w
    return w


def load_padding_texts(path: str | Path | None = None) -> dict[str, str]:
    """The XLNet padding texts of the padding experiment: ``"original"`` = :data:`PADDING_TEXT` (the
    thesis's text 1) and the public-domain book openings of ``data/louis-alexandre/padding_texts.json``
    (biaskit's choice; the thesis's texts 2-5 are book openings it does not name, except *1984*).

    Examples
    --------
    >>> texts = load_padding_texts()
    >>> list(texts), texts["original"] == PADDING_TEXT
    (['original', 'austen', 'melville', 'dickens', 'carroll'], True)
    """
    p = Path(path) if path is not None else data_dir() / "louis-alexandre" / "padding_texts.json"
    d = _read_json(p, "padding texts")
    return {"original": PADDING_TEXT, **{k: v["text"] for k, v in d["texts"].items()}}


def load_user_study_figures(path: str | Path | None = None) -> dict[str, Any]:
    """The layout of the user study's Likert figures (seed 004 Figs. 5.1/5.2, section 5.2, pp. 66-70) and the
    questionnaire wording of Appendix C.1 (``data/louis-alexandre/user_study_figures.json``).

    The figures themselves are images the thesis prints no numbers for; see :func:`user_study_likert`.

    Examples
    --------
    >>> figures = load_user_study_figures()
    >>> figures["scale"]["min"], figures["scale"]["max"]
    (0, 9)
    """
    p = Path(path) if path is not None else data_dir() / "louis-alexandre" / "user_study_figures.json"
    return _read_json(p, "user-study figure layout")
