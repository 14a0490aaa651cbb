r"""Indirect Logarithmic Probability Bias Score through first-name bridges (Louis-Alexandre 2022).

Seed 004 (Louis-Alexandre Dit Petit-Frere 2022, TU Wien), chapter 3.  A *target* (an occupation)
and a *feature* (a trait, or a sensitive attribute such as *woman*) are never put in one sentence.
Each is scored against the same **bridge** of first names with the log-probability bias score of
Kurita et al. (2019), and the two name profiles are correlated.

Direct score (Kurita et al. 2019; seed 004 Algorithm 2.1 and section 3.3.1: probabilities are
**averaged over the templates before the log-ratio**).  For a template set :math:`S = \{s_1..s_n\}`
with a context slot ``{target}`` holding word ``c`` and a predicted slot ``{feature}`` read at its
``[MASK]``:

.. math::

    LPBS(c, w) = \log \frac{\frac1n \sum_i P_M(w \mid s_i(c, [MASK]))}
                           {\frac1n \sum_i P_M(w \mid s_i([MASK], [MASK]))}

Indirect score (seed 004 Algorithm 3.1), with bridge names :math:`B`, S1 = the
"<TargetCategory> - Names" templates (name predicted) and S2 = the "Names - <FeatureCategory>"
templates (feature predicted):

.. math::

    BS1(T, b) = LPBS_{S1}(T, b), \qquad BS2(b, A) = LPBS_{S2}(b, A), \qquad
    IBS(T, A) = \operatorname{pearson}_{b \in B}\big(BS1(T, b),\ BS2(b, A)\big) \in [-1, 1]

computed for all targets and features at once as :math:`IBS = Z_1 Z_2 / |B|` with :math:`Z_1` the
row-wise and :math:`Z_2` the column-wise z-scores (population SD) over the names.

**Prior cancellation.**  :math:`\log p2_{prior}(A)` does not depend on the name, so it shifts every
:math:`BS2(\cdot, A)` by the same constant and leaves the Pearson correlation unchanged: the S2
prior has no effect on IBS (it still matters for the direct-style y values of the drill-down
scatterplots).  The S1 prior :math:`p1_{prior}(b)` depends on the name and *does* change IBS (a
per-name frequency correction).  Both facts are tested.

Implementation decisions (the thesis is silent or ambiguous; extraction sections 2.6-2.12):

* **Single-token predictions.**  A mask predicts one token, so every predicted word (bridge names
  in S1, features) must be one token of the model; others are dropped with a logged warning and
  listed in ``result.dropped`` (``multi_token="drop"``, the default) or raise
  (``multi_token="raise"``).  The bridge is therefore model-dependent; its size is reported.
* **The masked slot of the prior** is found from the template (which placeholder comes first), not
  from "the first/last mask" (Kurita's code reads the other mask in some templates).
* **Multi-word or plural targets** are written in full in the target sentence and replaced by one
  ``[MASK]`` in the prior sentence, as in the thesis (section 3.3.1); ``[TARGET]s`` takes the plural
  (irregular ones from ``wordlists/en/louis_alexandre_rules.json``), *United States* / *United
  Kingdom* take "the".
* **Surface forms.**  Gender features are classes (male, female, boy, girl, man, woman) read as the
  singular noun in "... a [FEATURE]" templates and as the plural otherwise (Table 3.1 ``*``);
  religions are classes read as the adjective (*Muslim*) or the noun (*Islam*) in "religion is"
  templates (Table 3.1 ``•``).  The averaged probability of a class mixes its forms.
* **Templates**: verbatim from Appendix A.1.2 (typos kept: the model reads them), with two
  normalisations, both switchable: curly apostrophes -> ``'`` and ``"[TARGET] s"`` -> ``"[TARGET]s"``.
  Placeholders are bound by role, which fixes the 8 role-swapped sections.
* **XLNet** (section 3.3.3): the padding text is prepended; ``xlnet_mode="naive"`` (default, the
  thesis's literal description) reads the content stream at ``<mask>``; ``"perm_mask"`` hides every
  masked position from all tokens (``perm_mask[:, :, masks] = 1``) and predicts through the query
  stream (``target_mapping``), as the Hugging Face XLNet example does.
* Log-softmax in float64 at the read positions; natural log (the base does not change IBS).

**Model-generated bridge** (seed 004 section 3.3.1, the thesis's first, abandoned variant):
:func:`generate_bridge` takes the top-n predictions at the name slot of an S1 sentence for each
target, keeps the name-like ones and merges them per target category; :func:`indirect_bias_generated`
runs Algorithm 3.1 over that bridge.  **User study** (chapter 5): :func:`user_study_likert` summarises
the printed answers of Tables C.1/C.2 behind Figs. 5.1/5.2.

Caching: the per-template log-probabilities of each (template set, context words, predicted words)
call are stored under ``cache_dir()/indirect_bias/<model>-<fingerprint>/`` keyed by a hash of the
model, the reading options and all inputs, so a full run (minutes on a GPU, an hour-scale batch job on
CPU for the base models) resumes call by call.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import torch

from biaskit.core.paths import cache_dir, cache_name, data_dir, wordlists_dir
from biaskit.core.results import TestResult
from biaskit.lm import MaskedLM, ModelNotAvailableError

logger = logging.getLogger(__name__)

__all__ = [
    "PADDING_TEXT",
    "BridgeLM",
    "FeatureSet",
    "GeneratedBridge",
    "IndirectBiasResult",
    "SlotScores",
    "TemplateSet",
    "check_published_tables",
    "feature_mask_index",
    "feature_set",
    "gender_rank_table",
    "generate_bridge",
    "indirect_bias_generated",
    "load_user_study_figures",
    "user_study_likert",
    "ibs_from_bridge_scores",
    "bolukbasi_rank_comparison",
    "bolukbasi_rank_summary",
    "direct_indirect_agreement",
    "padding_text_ibs",
    "padding_text_ttests",
    "load_padding_texts",
    "GENDERED_OCCUPATIONS",
    "CATEGORY_LABELS",
    "indirect_bias",
    "indirect_bias_scores",
    "load_bridge_lm",
    "load_louis_alexandre_rules",
    "load_louis_alexandre_tables",
    "load_louis_alexandre_templates",
    "load_louis_alexandre_words",
    "pluralize",
    "published_correlation_frame",
    "slot_scores",
    "template_set",
    "tiny_bridge_lm",
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

MultiToken = Literal["drop", "raise"]
XLNetMode = Literal["naive", "perm_mask"]
_CACHE_VERSION = 1
_SLOT_RE = re.compile(r"\{(target|target_pl|feature)\}")


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
    """
    p = Path(path) if path is not None else wordlists_dir() / "en" / "louis_alexandre_words.json"
    return {k: list(v) for k, v in _words_cached(str(p)).items()}


def load_louis_alexandre_rules(path: str | Path | None = None) -> dict[str, Any]:
    """Surface-form rules (biaskit's reading of Table 3.1 and section 3.3.1; see the file's ``_note``)."""
    p = Path(path) if path is not None else wordlists_dir() / "en" / "louis_alexandre_rules.json"
    return _read_json(p, "Louis-Alexandre surface-form rules")


def load_louis_alexandre_tables(path: str | Path | None = None) -> dict[str, Any]:
    """The published result tables of seed 004 (3.2-3.8, A.1-A.8, 4.1, C.1/C.2), transcribed verbatim."""
    p = Path(path) if path is not None else data_dir() / "louis-alexandre" / "published_tables.json"
    return _read_json(p, "Louis-Alexandre published tables")


@dataclass(frozen=True)
class TemplateSet:
    """Template sentences with a context slot ``{target}`` (or ``{target_pl}``) and a predicted slot ``{feature}``.

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
            slots = _SLOT_RE.findall(t)
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
        """Your own templates: ``"{target} works as a {feature}."`` (``{target_pl}`` = plural of the target)."""
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
    return [m.group(1) for m in _SLOT_RE.finditer(template)].index("feature")


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
    """The 55 template sets of seed 004 Appendix A.1.2 as :class:`TemplateSet` (keys ``"occupation-trait"``...).

    ``complete`` is False for the 10 sets whose printed size differs from Table 3.1 (e.g.
    Occupation - Gender: 2 printed vs 8 + 4); they are used as printed (a warning is logged when used).
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
            "template set %s: %d templates printed in Appendix A.1.2 but Table 3.1 says %s; using the printed ones",
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
        ws = _dedupe(words, category)
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


def _dedupe(words: Sequence[str], what: str) -> list[str]:
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


def _target_text(word: str, category: str, plural: bool, rules: Mapping[str, Any]) -> str:
    w = pluralize(word, rules.get("irregular_plurals", {})) if plural else word
    if category == "country" and word in rules.get("countries_with_article", ()):
        w = "the " + w
    return w


# =============================================================================================
# the model adapter
# =============================================================================================
def _base_and_head(model: Any) -> tuple[Any, Any] | None:
    for attr in ("cls", "lm_head", "predictions"):  # BERT, RoBERTa, ALBERT
        head = getattr(model, attr, None)
        if isinstance(head, torch.nn.Module):
            return model.base_model, head
    return None


@dataclass(eq=False)
class BridgeLM:
    """A masked LM (BERT-style) or an XLNet LM-head model, and how to read a word's probability at a mask.

    Parameters
    ----------
    lm:
        A :class:`~biaskit.lm.MaskedLM` (from :func:`load_bridge_lm`, :func:`biaskit.lm.load_masked_lm`
        or :func:`tiny_bridge_lm`).  ``lm.lowercase`` lower-cases the text (never the mask token).
    xlnet_mode:
        ``"naive"`` or ``"perm_mask"`` (module docstring); ignored for BERT-style models.
    padding_text:
        Prepended to every XLNet sentence (default :data:`PADDING_TEXT`; ``""`` = none).
    batch_size:
        Sentences per forward pass.
    """

    lm: MaskedLM
    xlnet_mode: XLNetMode = "naive"
    padding_text: str | None = None
    batch_size: int = 64
    _word_ids: dict[str, int | None] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.xlnet_mode not in ("naive", "perm_mask"):
            raise ValueError("xlnet_mode must be 'naive' or 'perm_mask'")
        if self.batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if self.padding_text is None:
            self.padding_text = PADDING_TEXT if self.kind == "xlnet" else ""

    @property
    def kind(self) -> str:
        return "xlnet" if getattr(self.lm.model.config, "model_type", "") == "xlnet" else "bert"

    @property
    def name(self) -> str:
        return self.lm.name

    @property
    def mask_token(self) -> str:
        return str(self.lm.tokenizer.mask_token)

    def cache_id(self) -> str:
        """Model fingerprint + every option that changes the numbers."""
        h = hashlib.sha256(
            json.dumps(
                [
                    self.lm.fingerprint(),
                    self.kind,
                    self.xlnet_mode if self.kind == "xlnet" else None,
                    self.padding_text,
                    bool(self.lm.lowercase),
                ]
            ).encode()
        )
        return h.hexdigest()[:16]

    def _lc(self, text: str) -> str:
        return text.lower() if self.lm.lowercase else text

    def word_id(self, word: str) -> int | None:
        """The token id of ``word`` when it is a single token of the model (``None`` otherwise).

        Encoded without special tokens (XLNet: the word-initial ``▁`` piece); ``[UNK]`` counts as
        not single-token.
        """
        if word not in self._word_ids:
            tok = self.lm.tokenizer
            ids = tok(self._lc(word), add_special_tokens=False)["input_ids"]
            ok = len(ids) == 1 and ids[0] != tok.unk_token_id
            self._word_ids[word] = int(ids[0]) if ok else None
        return self._word_ids[word]

    def fill(
        self,
        template: str,
        target: str | None,
        *,
        target_category: str = "",
        rules: Mapping[str, Any] | None = None,
    ) -> str:
        """The sentence of ``template`` with the target (``None`` = mask) and the feature masked.

        XLNet sentences are prefixed with the padding text.
        """
        rules = rules if rules is not None else {}
        mask = self.mask_token

        def rep(m: re.Match[str]) -> str:
            slot = m.group(1)
            if slot == "feature" or target is None:
                return "\x00"
            return self._lc(_target_text(target, target_category, slot == "target_pl", rules))

        parts = _SLOT_RE.sub(rep, template).split("\x00")
        text = mask.join(self._lc(p) for p in parts)
        if self.kind == "xlnet" and self.padding_text:
            text = self.padding_text + " " + text
        return text

    def encode(self, sentences: Sequence[str]) -> list[list[int]]:
        enc = self.lm.tokenizer(list(sentences), add_special_tokens=True, truncation=False, verbose=False)
        return [list(x) for x in enc["input_ids"]]

    # ------------------------------------------------------------------------- forward passes
    def log_probs_at_masks(
        self,
        seqs: Sequence[Sequence[int]],
        which_mask: Sequence[int],
        candidates: np.ndarray,
        *,
        progress: bool = False,
        desc: str = "masked LM",
    ) -> np.ndarray:
        """``log P(candidates[r, k] | seqs[r])`` read at the ``which_mask[r]``-th mask token of each sequence.

        Sequences are sorted by length and scored ``batch_size`` per forward pass (right padding with
        an attention mask).  Returns a float64 array of ``candidates``' shape.
        """
        tok = self.lm.tokenizer
        mask_id = tok.mask_token_id
        pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
        cand = np.asarray(candidates, dtype=np.int64)
        n = len(seqs)
        if cand.shape[0] != n or len(which_mask) != n:
            raise ValueError("seqs, which_mask and candidates must have one row per sequence")
        out = np.empty(cand.shape, dtype=np.float64)
        if n == 0:
            return out
        mask_pos: list[list[int]] = [[j for j, t in enumerate(s) if t == mask_id] for s in seqs]
        for r, (mp, k) in enumerate(zip(mask_pos, which_mask, strict=True)):
            if k >= len(mp):
                raise ValueError(
                    f"sequence {r} has {len(mp)} mask token(s), cannot read mask #{k}: "
                    f"{tok.decode(list(seqs[r]))[-120:]!r}"
                )
        max_len = self.lm.max_length if self.kind == "bert" else 10**9
        too_long = [r for r, s in enumerate(seqs) if len(s) > max_len]
        if too_long:
            raise ValueError(f"{len(too_long)} sentence(s) longer than the model window ({max_len} tokens)")
        lengths = np.array([len(s) for s in seqs])
        order = np.argsort(-lengths, kind="stable")
        model = self.lm.model
        dev = self.lm.device
        from tqdm.auto import tqdm

        bar = tqdm(total=n, desc=desc, unit="sent", disable=not progress, leave=False)
        try:
            with torch.inference_mode():
                for start in range(0, n, self.batch_size):
                    idx = order[start : start + self.batch_size]
                    b = len(idx)
                    width = int(lengths[idx].max())
                    inp = torch.full((b, width), pad_id, dtype=torch.long)
                    att = torch.zeros((b, width), dtype=torch.long)
                    pos = torch.empty(b, dtype=torch.long)
                    for r, i in enumerate(idx):
                        s = seqs[i]
                        inp[r, : len(s)] = torch.as_tensor(list(s), dtype=torch.long)
                        att[r, : len(s)] = 1
                        pos[r] = mask_pos[i][which_mask[i]]
                    rows = torch.arange(b)
                    inp, att = inp.to(dev), att.to(dev)
                    if self.kind == "xlnet":
                        if self.xlnet_mode == "perm_mask":
                            fdt = next(model.parameters()).dtype
                            perm = torch.zeros((b, width, width), dtype=fdt)
                            tmap = torch.zeros((b, 1, width), dtype=fdt)
                            for r, i in enumerate(idx):
                                perm[r, :, mask_pos[i]] = 1.0
                                tmap[r, 0, pos[r]] = 1.0
                            hid = model.transformer(
                                input_ids=inp,
                                attention_mask=att,
                                perm_mask=perm.to(dev),
                                target_mapping=tmap.to(dev),
                            )[0][:, 0]
                        else:
                            hid = model.transformer(input_ids=inp, attention_mask=att)[0][
                                rows.to(dev), pos.to(dev)
                            ]
                        logits = model.lm_loss(hid)
                    else:
                        bh = _base_and_head(model)
                        if bh is not None:
                            hid = bh[0](input_ids=inp, attention_mask=att)[0][rows.to(dev), pos.to(dev)]
                            logits = bh[1](hid)
                        else:
                            logits = model(input_ids=inp, attention_mask=att).logits[
                                rows.to(dev), pos.to(dev)
                            ]
                    lp = torch.log_softmax(logits.double(), dim=-1)
                    c = torch.as_tensor(cand[idx], device=lp.device)
                    out[idx] = lp.gather(1, c).cpu().numpy()
                    bar.update(b)
        finally:
            bar.close()
        return out


def tiny_bridge_lm(
    kind: Literal["bert", "xlnet"] = "bert",
    seed: int = 0,
    *,
    xlnet_mode: XLNetMode = "naive",
    hidden_size: int = 16,
    vocab_size: int = 4000,
    padding_text: str | None = None,
    batch_size: int = 256,
) -> BridgeLM:
    """A tiny random BERT or XLNet over an English vocabulary of the seed 004 words and templates.

    **Its numbers mean nothing about bias** (random weights); it runs the whole pipeline offline.
    BERT: :func:`biaskit.lm.tiny_masked_lm` (lower-cased WordPiece) trained on the templates and
    word lists; some rarer names and traits split into several pieces and are dropped, as real
    models do.  XLNet: an ``XLNetTokenizer`` over a deterministic Unigram vocabulary (cased,
    ``▁``-prefixed words; hyphenated words split) and a 1-layer ``XLNetLMHeadModel`` built from a config.
    """
    texts = _english_texts()
    if kind == "bert":
        from biaskit.lm import tiny_masked_lm

        lm = tiny_masked_lm(
            seed=seed,
            texts=texts,
            vocab_size=vocab_size,
            hidden_size=hidden_size,
            max_position_embeddings=128,
        )
        lm.name = lm.name.replace("tiny-random-bert", "tiny-random-bert-en")
        return BridgeLM(lm, batch_size=batch_size)
    if kind != "xlnet":
        raise ValueError("kind must be 'bert' or 'xlnet'")
    from transformers import XLNetConfig, XLNetLMHeadModel, XLNetTokenizer

    pad = PADDING_TEXT if padding_text is None else padding_text
    specials = ["<unk>", "<s>", "</s>", "<cls>", "<sep>", "<pad>", "<mask>", "<eod>", "<eop>"]
    counts: dict[str, int] = {}
    for t in [*texts, pad]:
        for w in re.findall(r"[A-Za-z0-9]+|[^\sA-Za-z0-9]", t):
            counts[w] = counts.get(w, 0) + 1
    chars = sorted({c for w in counts for c in w})
    words = sorted(w for w in counts if len(w) > 1 or w.isalnum())
    vocab = [(s, 0.0) for s in specials]
    vocab += [("▁" + w, -5.0 - 1.0 / (1 + counts[w])) for w in words]
    vocab += [("▁", -8.0)] + [(c, -10.0) for c in chars]
    tok = XLNetTokenizer(vocab=vocab)
    cfg = XLNetConfig(
        vocab_size=len(vocab),
        d_model=hidden_size,
        n_layer=1,
        n_head=2,
        d_inner=2 * hidden_size,
        dropout=0.0,
        initializer_range=0.4,
        pad_token_id=tok.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = XLNetLMHeadModel(cfg)
    model.eval()
    lm = MaskedLM(
        model=model,
        tokenizer=tok,
        name=f"tiny-random-xlnet-en(seed={seed},h={hidden_size},v={len(vocab)})",
        lowercase=False,
        in_process=True,
        is_fallback=True,
    )
    return BridgeLM(lm, xlnet_mode=xlnet_mode, padding_text=padding_text, batch_size=batch_size)


@lru_cache(maxsize=1)
def _english_texts() -> tuple[str, ...]:
    words = load_louis_alexandre_words()
    sets = load_louis_alexandre_templates()
    texts: list[str] = []
    for ts in sets.values():
        for t in ts.templates:
            texts.append(_SLOT_RE.sub("x", t))
    for ws in words.values():
        for w in ws:
            texts += [w, w]
    for forms in load_louis_alexandre_rules()["irregular_plurals"].values():
        texts += [forms, forms]
    return tuple(texts)


def load_bridge_lm(
    name_or_path: str | Path,
    *,
    device: str | torch.device = "auto",
    xlnet_mode: XLNetMode = "naive",
    padding_text: str | None = None,
    batch_size: int = 64,
    local_files_only: bool | None = None,
) -> BridgeLM:
    """Load a checkpoint for the indirect score: BERT-style via :func:`biaskit.lm.load_masked_lm`,
    XLNet (``xlnet-base-cased``, ``xlnet-large-cased``) via ``XLNetLMHeadModel``.

    ``"tiny"`` / ``"tiny-xlnet"`` give :func:`tiny_bridge_lm` (random weights).  A bundled model
    trained by biaskit (:data:`biaskit.lm.catalogue.MODEL_NAMES`, e.g. ``"en-mlm"``) is loaded from
    ``data/models`` and keeps its short name (the cache key still follows its files).  ``"auto"``
    is :func:`biaskit.lm.resolve_default_model` for English (bert-base-uncased if on this machine,
    else ``"en-mlm"``, else ``"tiny"``).  Otherwise offline: a local folder or the Hugging Face cache;
    a missing model raises :class:`~biaskit.lm.ModelNotAvailableError` saying how to get it.
    """
    from biaskit.lm.builtin import is_trained_name, resolve_default_model

    name = str(name_or_path)
    if name == "auto":
        name = resolve_default_model("auto", language="en").name
    if name == "tiny":
        return tiny_bridge_lm("bert", batch_size=max(batch_size, 256))
    if name == "tiny-xlnet":
        return tiny_bridge_lm(
            "xlnet", xlnet_mode=xlnet_mode, padding_text=padding_text, batch_size=max(batch_size, 256)
        )
    if is_trained_name(name):
        from biaskit.lm import catalogue as trained_models
        from biaskit.lm import get_masked_lm

        try:
            trained_models.model_path(name)
        except FileNotFoundError as exc:
            raise ModelNotAvailableError(str(exc)) from exc
        lm = get_masked_lm(name, device=device)
        lm.fingerprint()  # keyed by the folder's files, computed before the display name is shortened
        lm.name = name
        return BridgeLM(lm, batch_size=batch_size)
    from transformers import AutoConfig

    from biaskit.lm import how_to_get_model, load_masked_lm, resolve_device

    try:
        cfg = AutoConfig.from_pretrained(
            name, local_files_only=True if local_files_only is None else local_files_only
        )
    except (OSError, ValueError) as exc:
        raise ModelNotAvailableError(
            f"cannot find a config for {name!r} locally. " + how_to_get_model(name)
        ) from exc
    if getattr(cfg, "model_type", "") != "xlnet":
        lm = load_masked_lm(name, device=device, local_files_only=local_files_only)
        return BridgeLM(lm, batch_size=batch_size)
    from transformers import AutoTokenizer, XLNetLMHeadModel

    try:
        tok = AutoTokenizer.from_pretrained(
            name, local_files_only=True if local_files_only is None else local_files_only
        )
        model = XLNetLMHeadModel.from_pretrained(
            name, local_files_only=True if local_files_only is None else local_files_only
        )
    except (OSError, ValueError) as exc:
        raise ModelNotAvailableError(f"cannot load XLNet {name!r}: {exc}. " + how_to_get_model(name)) from exc
    model.eval().to(resolve_device(device))
    return BridgeLM(
        MaskedLM(model=model, tokenizer=tok, name=name),
        xlnet_mode=xlnet_mode,
        padding_text=padding_text,
        batch_size=batch_size,
    )


# =============================================================================================
# slot scores: every template x context word x predicted class, batched and cached
# =============================================================================================
@dataclass
class SlotScores:
    r"""Per-template log-probabilities of the predicted classes, with and without the context word.

    ``log_p_tgt[i, j, k] = log P(class k | template i with context j, feature masked)`` and
    ``log_p_prior[i, k] = log P(class k | template i with both slots masked)``.
    """

    key: str
    context: tuple[str, ...]
    predicted: tuple[str, ...]
    log_p_tgt: np.ndarray
    log_p_prior: np.ndarray
    dropped: dict[str, str] = field(default_factory=dict)
    n_cached: int = 0

    @staticmethod
    def _log_mean(lp: np.ndarray, axis: int = 0) -> np.ndarray:
        m = lp.max(axis=axis, keepdims=True)
        return np.squeeze(m, axis=axis) + np.log(np.exp(lp - m).mean(axis=axis))

    def log_mean_tgt(self) -> np.ndarray:
        r""":math:`\log \frac1n \sum_i P(k \mid s_i(j, [MASK]))`, shape (contexts, classes)."""
        return self._log_mean(self.log_p_tgt, 0)

    def log_mean_prior(self) -> np.ndarray:
        r""":math:`\log \frac1n \sum_i P(k \mid s_i([MASK], [MASK]))`, shape (classes,)."""
        return self._log_mean(self.log_p_prior, 0)

    def bias_scores(self) -> pd.DataFrame:
        """The log-probability bias scores, rows = context words, columns = predicted classes."""
        return pd.DataFrame(
            self.log_mean_tgt() - self.log_mean_prior()[None, :],
            index=pd.Index(self.context, name="context"),
            columns=pd.Index(self.predicted, name="predicted"),
        )


def _resolve_predicted(
    bridge: BridgeLM, fs: FeatureSet, forms_used: Sequence[str], multi_token: MultiToken, what: str
) -> tuple[list[str], dict[str, np.ndarray], dict[str, str]]:
    kept: list[str] = []
    ids: dict[str, list[int]] = {f: [] for f in forms_used}
    dropped: dict[str, str] = {}
    for c in fs.classes:
        row = {}
        bad = None
        for f in forms_used:
            w = fs.surface(c, f)
            i = bridge.word_id(w)
            if i is None:
                bad = w
                break
            row[f] = i
        if bad is not None:
            dropped[c] = f"{bad!r} is not a single token of {bridge.name}"
            continue
        kept.append(c)
        for f in forms_used:
            ids[f].append(row[f])
    if dropped:
        msg = f"{what}: {len(dropped)} of {len(fs.classes)} words are not single tokens of {bridge.name} and cannot be predicted at a mask"
        if multi_token == "raise":
            raise ValueError(msg + f": {sorted(dropped)}")
        logger.warning("%s; dropped: %s", msg, sorted(dropped)[:30])
    if not kept:
        raise ValueError(f"{what}: no word left to predict (none is a single token of {bridge.name})")
    return kept, {f: np.asarray(v, dtype=np.int64) for f, v in ids.items()}, dropped


def _slot_key(
    bridge: BridgeLM, ts: TemplateSet, context: Sequence[str], fs: FeatureSet, rules: Mapping[str, Any]
) -> str:
    h = hashlib.sha256()
    payload = [
        _CACHE_VERSION,
        bridge.cache_id(),
        ts.target_category,
        list(ts.templates),
        list(ts.forms),
        list(context),
        fs.category,
        list(fs.classes),
        {c: dict(fs.forms[c]) for c in fs.classes},
        {k: rules.get(k) for k in ("irregular_plurals", "countries_with_article")},
    ]
    h.update(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode())
    return h.hexdigest()[:20]


def _cache_path(bridge: BridgeLM, key: str) -> Path:
    return cache_dir() / "indirect_bias" / f"{cache_name(bridge.name, 50)}-{bridge.cache_id()}" / f"{key}.npz"


def slot_scores(
    bridge: BridgeLM,
    templates: TemplateSet,
    context: Sequence[str],
    predicted: FeatureSet | Sequence[str],
    *,
    multi_token: MultiToken = "drop",
    rules: Mapping[str, Any] | None = None,
    cache: bool = True,
    progress: bool = True,
) -> SlotScores:
    """Batched log-probabilities of every predicted class in every template, with each context word and with none.

    One forward pass per (template, context word) plus one prior pass per template, each reading
    all predicted classes at once (the feature's ``[MASK]``).  Predicted words that are not single
    tokens are dropped (logged; ``SlotScores.dropped``) or raise (``multi_token="raise"``).
    Results are cached on disk (see the module docstring).
    """
    rules = rules if rules is not None else load_louis_alexandre_rules()
    fs = (
        predicted
        if isinstance(predicted, FeatureSet)
        else feature_set(templates.feature_category, list(predicted), rules)
    )
    ctx = _dedupe(list(context), f"context words of {templates.key}")
    forms_used = sorted(set(templates.forms))
    kept, ids, dropped = _resolve_predicted(
        bridge, fs, forms_used, multi_token, f"{templates.key} predicted {fs.category}"
    )
    fs_kept = FeatureSet(fs.category, tuple(kept), {c: fs.forms[c] for c in kept})
    key = _slot_key(bridge, templates, ctx, fs_kept, rules)
    path = _cache_path(bridge, key)
    if cache and path.exists():
        try:
            with np.load(path) as z:
                return SlotScores(
                    templates.key,
                    tuple(ctx),
                    tuple(kept),
                    z["log_p_tgt"],
                    z["log_p_prior"],
                    dropped,
                    n_cached=1,
                )
        except (OSError, ValueError, KeyError):
            logger.warning("cache file %s is unreadable; recomputing", path)
    n_t, n_c, n_k = len(templates), len(ctx), len(kept)
    sentences: list[str] = []
    which: list[int] = []
    cand_rows: list[np.ndarray] = []
    for t, form in zip(templates.templates, templates.forms, strict=True):
        prior_mask = feature_mask_index(t)
        for target in [None, *ctx]:
            sentences.append(bridge.fill(t, target, target_category=templates.target_category, rules=rules))
            which.append(prior_mask if target is None else 0)
            cand_rows.append(ids[form])
    seqs = bridge.encode(sentences)
    mask_id = bridge.lm.tokenizer.mask_token_id
    for k, (sq, sent) in enumerate(zip(seqs, sentences, strict=True)):
        want = 2 if k % (n_c + 1) == 0 else 1  # the prior sentence of each template comes first
        if sum(1 for x in sq if x == mask_id) != want:
            raise ValueError(
                f"{templates.key}: expected {want} mask token(s) after tokenising {sent[-120:]!r}; "
                "a context word or the template contains the mask token text"
            )
    lp = bridge.log_probs_at_masks(seqs, which, np.stack(cand_rows), progress=progress, desc=templates.key)
    lp = lp.reshape(n_t, n_c + 1, n_k)
    res = SlotScores(templates.key, tuple(ctx), tuple(kept), lp[:, 1:, :].copy(), lp[:, 0, :].copy(), dropped)
    if cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, log_p_tgt=res.log_p_tgt, log_p_prior=res.log_p_prior)
        tmp.replace(path)
    return res


# =============================================================================================
# the indirect score
# =============================================================================================
def ibs_from_bridge_scores(bs1: pd.DataFrame, bs2: pd.DataFrame, *, min_names: int = 3) -> pd.DataFrame:
    r"""Pearson correlation over the shared names of every target row of ``bs1`` with every feature column of ``bs2``.

    ``bs1``: targets x names (BS1), ``bs2``: names x features (BS2).  Vectorised as
    :math:`IBS = Z_1 Z_2 / |B|` (population z-scores over the names).  A target or feature whose
    scores are constant over the names, or non-finite, gets NaN (logged).  Seed 004 Algorithm 3.1.
    """
    names = [n for n in bs1.columns if n in bs2.index]
    if len(names) < min_names:
        raise ValueError(f"only {len(names)} names are shared by BS1 and BS2 (need at least {min_names})")
    only1 = len(bs1.columns) - len(names)
    only2 = len(bs2.index) - len(names)
    if only1 or only2:
        logger.info("IBS over %d shared names (%d only in BS1, %d only in BS2)", len(names), only1, only2)
    a = bs1[names].to_numpy(dtype=np.float64)
    b = bs2.loc[names].to_numpy(dtype=np.float64)

    def z(x: np.ndarray, axis: int, labels: Sequence[Any], what: str) -> np.ndarray:
        good = np.isfinite(x).all(axis=axis)
        mu = np.nanmean(np.where(np.isfinite(x), x, np.nan), axis=axis, keepdims=True)
        sd = np.nanstd(np.where(np.isfinite(x), x, np.nan), axis=axis, keepdims=True)
        flat_sd = np.squeeze(sd, axis=axis)
        good &= flat_sd > 1e-12 * np.maximum(1.0, np.abs(np.squeeze(mu, axis=axis)))
        if not good.all():
            logger.warning(
                "IBS is undefined (NaN) for %s %s: scores constant or non-finite over the names",
                what,
                [labels[i] for i in np.flatnonzero(~good)][:20],
            )
        with np.errstate(invalid="ignore", divide="ignore"):
            zz = (x - mu) / sd
        if axis == 1:
            zz[~good, :] = np.nan
        else:
            zz[:, ~good] = np.nan
        return zz

    z1 = z(a, 1, list(bs1.index), "targets")
    z2 = z(b, 0, list(bs2.columns), "features")
    ibs = np.clip(z1 @ z2 / len(names), -1.0, 1.0)
    return pd.DataFrame(
        ibs, index=pd.Index(bs1.index, name="target"), columns=pd.Index(bs2.columns, name="feature")
    )


@dataclass
class IndirectBiasResult:
    """Indirect (and direct) scores of a target category against a feature category, with the bridge detail.

    Attributes
    ----------
    ibs:
        targets x features, the Indirect Logarithmic Probability Bias Score in [-1, 1].
    direct:
        targets x features, the direct (Kurita) score from the "Target - Feature" templates, or None.
    bs1, bs2:
        targets x names and names x features: the per-name scores behind IBS (drill-down plots).
    s1, s2:
        The :class:`SlotScores` (per-template log-probabilities, priors).
    dropped:
        What was left out and why (``"names"``, ``"features"``, ``"direct_features"``).
    """

    model: str
    target_category: str
    feature_category: str
    ibs: pd.DataFrame
    bs1: pd.DataFrame
    bs2: pd.DataFrame
    direct: pd.DataFrame | None = None
    s1: SlotScores | None = field(default=None, repr=False)
    s2: SlotScores | None = field(default=None, repr=False)
    dropped: dict[str, dict[str, str]] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def bridge(self) -> list[str]:
        return [n for n in self.bs1.columns if n in self.bs2.index]

    def tidy(self) -> pd.DataFrame:
        """Long table ``model, target_category, feature_category, target, feature, ibs, direct``."""
        long = self.ibs.stack(future_stack=True).rename("ibs").reset_index()
        long.columns = ["target", "feature", "ibs"]
        if self.direct is not None:
            d = self.direct.stack(future_stack=True).rename("direct").reset_index()
            d.columns = ["target", "feature", "direct"]
            long = long.merge(d, on=["target", "feature"], how="left")
        else:
            long["direct"] = np.nan
        long.insert(0, "feature_category", self.feature_category)
        long.insert(0, "target_category", self.target_category)
        long.insert(0, "model", self.model)
        return long

    def bridge_points(self, target: str, feature: str) -> pd.DataFrame:
        """One row per bridge name: ``x`` = BS1(target, name), ``y`` = BS2(name, feature) (the indirect scatterplot)."""
        if target not in self.bs1.index:
            raise KeyError(f"unknown target {target!r}")
        if feature not in self.bs2.columns:
            raise KeyError(f"unknown feature {feature!r}")
        names = self.bridge
        return pd.DataFrame(
            {
                "name": names,
                "x": self.bs1.loc[target, names].to_numpy(),
                "y": self.bs2.loc[names, feature].to_numpy(),
            }
        )

    def direct_indirect_correlation(self) -> TestResult:
        """Pearson correlation of direct and indirect scores over all (target, feature) pairs (Tables 3.5/3.6)."""
        from biaskit.core.stats import correlation

        if self.direct is None:
            raise ValueError("no direct scores were computed (direct=False)")
        t = self.tidy().dropna(subset=["ibs", "direct"])
        return correlation(t["direct"].to_numpy(), t["ibs"].to_numpy(), method="pearson")


def indirect_bias_scores(
    bridge: BridgeLM,
    targets: Sequence[str],
    features: FeatureSet | Sequence[str],
    names: Sequence[str],
    s1: TemplateSet,
    s2: TemplateSet,
    *,
    direct_templates: TemplateSet | None = None,
    multi_token: MultiToken = "drop",
    rules: Mapping[str, Any] | None = None,
    cache: bool = True,
    progress: bool = True,
    min_names: int = 3,
) -> IndirectBiasResult:
    r"""IBS of every target with every feature through the bridge ``names`` (seed 004 Algorithm 3.1), vectorised.

    ``s1`` links targets to names (``{target}`` = target, ``{feature}`` = name, predicted);
    ``s2`` links names to features (``{target}`` = name, ``{feature}`` = feature, predicted).
    ``direct_templates`` (``{target}`` = target, ``{feature}`` = feature) adds the direct scores.
    Names that are not single tokens cannot be predicted in S1 and leave the bridge (logged).
    """
    rules = rules if rules is not None else load_louis_alexandre_rules()
    fs = (
        features
        if isinstance(features, FeatureSet)
        else feature_set(s2.feature_category, list(features), rules)
    )
    unique_names = _dedupe(list(names), "bridge names")
    name_fs = FeatureSet("name", tuple(unique_names), {n: {"base": n} for n in unique_names})
    r1 = slot_scores(
        bridge, s1, targets, name_fs, multi_token=multi_token, rules=rules, cache=cache, progress=progress
    )
    bridge_names = list(r1.predicted)
    if len(bridge_names) < min_names:
        raise ValueError(
            f"only {len(bridge_names)} bridge names are single tokens of {bridge.name} (need {min_names})"
        )
    r2 = slot_scores(
        bridge, s2, bridge_names, fs, multi_token=multi_token, rules=rules, cache=cache, progress=progress
    )
    bs1 = r1.bias_scores()
    bs1.index.name, bs1.columns.name = "target", "name"
    bs2 = r2.bias_scores()
    bs2.index.name, bs2.columns.name = "name", "feature"
    ibs = ibs_from_bridge_scores(bs1, bs2, min_names=min_names)
    dropped = {"names": r1.dropped, "features": r2.dropped}
    direct = None
    if direct_templates is not None:
        rd = slot_scores(
            bridge,
            direct_templates,
            targets,
            fs,
            multi_token=multi_token,
            rules=rules,
            cache=cache,
            progress=progress,
        )
        direct = rd.bias_scores().reindex(index=ibs.index, columns=ibs.columns)
        direct.index.name, direct.columns.name = "target", "feature"
        dropped["direct_features"] = rd.dropped
    return IndirectBiasResult(
        model=bridge.name,
        target_category=s1.target_category,
        feature_category=s2.feature_category,
        ibs=ibs,
        bs1=bs1,
        bs2=bs2,
        direct=direct,
        s1=r1,
        s2=r2,
        dropped=dropped,
        details={
            "n_names_given": len(name_fs.classes),
            "n_bridge": len(bridge_names),
            "s1": s1.key,
            "s2": s2.key,
            "n_s1": len(s1),
            "n_s2": len(s2),
            "direct_templates": None if direct_templates is None else direct_templates.key,
            "kind": bridge.kind,
            "xlnet_mode": bridge.xlnet_mode if bridge.kind == "xlnet" else None,
        },
    )


def indirect_bias(
    bridge: BridgeLM,
    target_category: str,
    feature_category: str,
    *,
    targets: Sequence[str] | None = None,
    features: Sequence[str] | None = None,
    names: Sequence[str] | None = None,
    direct: bool = True,
    max_templates: int | None = None,
    multi_token: MultiToken = "drop",
    cache: bool = True,
    progress: bool = True,
) -> IndirectBiasResult:
    """IBS (and direct scores) between two categories of seed 004 with the bundled words and templates.

    ``target_category`` in beverage / country / occupation / sport; ``feature_category`` any other
    category (trait, gender, ...).  ``targets`` / ``features`` / ``names`` default to the full lists
    (99 occupations, 779 names, ...).  ``max_templates`` keeps the first templates of each set (quick runs).
    """
    words = load_louis_alexandre_words()
    rules = load_louis_alexandre_rules()
    if target_category not in rules["target_categories"]:
        raise ValueError(
            f"target_category must be one of {rules['target_categories']}, got {target_category!r}"
        )
    if feature_category == target_category or feature_category not in words or feature_category == "name":
        raise ValueError(f"feature_category must be another category of {sorted(set(words) - {'name'})}")
    s1 = template_set(target_category, "name").subset(max_templates)
    s2 = template_set("name", feature_category).subset(max_templates)
    dt = template_set(target_category, feature_category).subset(max_templates) if direct else None
    fs = feature_set(feature_category, features, rules)
    return indirect_bias_scores(
        bridge,
        list(targets) if targets is not None else words[target_category],
        fs,
        list(names) if names is not None else words["name"],
        s1,
        s2,
        direct_templates=dt,
        multi_token=multi_token,
        rules=rules,
        cache=cache,
        progress=progress,
    )


# =============================================================================================
# the model-generated bridge (seed 004 section 3.3.1, the abandoned first variant; experiment E6)
# =============================================================================================
@dataclass
class GeneratedBridge:
    """A bridge of "names" predicted by the model itself (:func:`generate_bridge`).

    Attributes
    ----------
    names:
        The merged bridge of the target category, most often generated first (ties: first seen).
    per_target:
        Each target's kept words, in rank order (merged over the generation templates).
    counts:
        Number of targets whose kept words include the name.
    rejected:
        Candidate tokens of the top ``top_n`` that the filter removed, with the reason.
    templates:
        The generation templates (biaskit's ``{target}``/``{feature}`` form).
    """

    model: str
    target_category: str
    top_n: int
    names: list[str]
    per_target: dict[str, list[str]]
    counts: dict[str, int]
    rejected: dict[str, str]
    templates: tuple[str, ...]
    details: dict[str, Any] = field(default_factory=dict)

    def in_list(self, names: Sequence[str]) -> list[str]:
        """The generated names that are in ``names`` (case-insensitive), e.g. the thesis's 779."""
        ref = {n.lower() for n in names}
        return [n for n in self.names if n.lower() in ref]

    def jaccard(self, other: GeneratedBridge | Sequence[str]) -> float:
        """|A ∩ B| / |A ∪ B| of the two bridges (case-insensitive)."""
        a = {n.lower() for n in self.names}
        b = {n.lower() for n in (other.names if isinstance(other, GeneratedBridge) else other)}
        return len(a & b) / len(a | b) if a | b else float("nan")


def _is_cased(bridge: BridgeLM) -> bool:
    return not (bridge.lm.lowercase or getattr(bridge.lm.tokenizer, "do_lower_case", False))


def _name_candidate(
    bridge: BridgeLM, token_id: int, cased: bool, keep: Any | None
) -> tuple[str | None, str, str]:
    """(word or None, reason it was rejected, raw token) for one predicted token id."""
    tok = bridge.lm.tokenizer
    got = tok.convert_ids_to_tokens(int(token_id))
    raw = str(got)
    if got is None:
        return None, "not a token of the tokenizer", f"<id {int(token_id)}>"
    if int(token_id) in tok.all_special_ids:
        return None, "special token", raw
    word = str(tok.convert_tokens_to_string([raw])).strip()
    if bridge.word_id(word) != int(token_id):
        return None, "word piece, not a whole word", raw
    if len(word) < 2 or not word.isalpha():
        return None, "not a word of letters", raw
    if cased and not word[0].isupper():
        return None, "not capitalised (cased model)", raw
    if keep is not None and not keep(word):
        return None, "rejected by the keep filter", raw
    return word, "", raw


def generate_bridge(
    bridge: BridgeLM,
    target_category: str,
    targets: Sequence[str] | None = None,
    *,
    top_n: int = 50,
    templates: Sequence[int] = (0,),
    s1: TemplateSet | None = None,
    keep: Any | None = None,
    rules: Mapping[str, Any] | None = None,
    progress: bool = False,
) -> GeneratedBridge:
    r"""The model-generated bridge: the first names the model itself predicts next to each target, merged.

    Seed 004 section 3.3.1 (the first bridge the thesis tried, then abandoned for the fixed 779 names;
    experiment E6 of the extraction).  For each target :math:`T` and generation template :math:`g`
    (default: the first S1 sentence, "Hi! My name is [BRIDGE] and I work as a *T*."):

    .. math::

        Top_n(T, g) = \text{the } n \text{ tokens } w \text{ of the vocabulary with the largest }
                      P_M(w \mid g(T, [MASK])), \qquad
        N(T) = \bigcup_g \{ w \in Top_n(T, g) : \text{keep}(w) \}, \qquad
        B_{gen} = \bigcup_{T} N(T)

    i.e. the top ``top_n`` predictions first, then the name filter (the thesis: "part of speech is used
    to retrieve only the proper nouns for this set of n words"), then the per-target sets are merged into
    one bridge per target category "for the sake of consistency".  The IBS over :math:`B_{gen}` is then
    Algorithm 3.1 unchanged (:func:`indirect_bias` with ``names=result.names``, or
    :func:`indirect_bias_generated`).  ``templates`` are indices into the S1 set (``s1``, default the
    bundled "<target category> - Names" set); several templates implement the thesis's suggested
    mitigation, male and female variants (for occupations 8 = "His name is ... he works as a",
    17 = "Her name is ... she works as a"), merged per target.

    **The name filter is biaskit's, not the thesis's.**  No part-of-speech tagger is installed here
    (the thesis does not name one), so a candidate is kept when it is a whole word of the model
    (its text encodes back to the same single token: no word piece, no special token), made of >= 2
    letters and, for a cased model, capitalised; for an uncased model nothing separates *emma* from
    *here*, so common words can enter the bridge.  ``keep(word) -> bool`` adds any further test (e.g. a
    tagger).  Every rejected token is listed with its reason in ``result.rejected``.
    """
    rules = rules if rules is not None else load_louis_alexandre_rules()
    if top_n < 1:
        raise ValueError("top_n must be >= 1")
    ts = s1 if s1 is not None else template_set(target_category, "name")
    if ts.feature_category != "name":
        raise ValueError(f"the generation templates must predict a name, got the {ts.key!r} set")
    if targets is None:
        targets = load_louis_alexandre_words()[ts.target_category]
    tgts = _dedupe(list(targets), f"targets of the generated bridge ({ts.key})")
    if not tgts:
        raise ValueError("no targets given")
    idx = list(templates)
    if not idx or any(not 0 <= i < len(ts) for i in idx):
        raise ValueError(f"templates must be indices into the {len(ts)} templates of {ts.key}, got {idx}")
    gen = [ts.templates[i] for i in idx]
    sentences = [
        bridge.fill(t, target, target_category=ts.target_category, rules=rules)
        for target in tgts
        for t in gen
    ]
    seqs = bridge.encode(sentences)
    mask_id = bridge.lm.tokenizer.mask_token_id
    for sq, sent in zip(seqs, sentences, strict=True):
        if sum(1 for x in sq if x == mask_id) != 1:
            raise ValueError(f"expected one mask token after tokenising {sent[-120:]!r}")
    n_vocab = int(bridge.lm.model.config.vocab_size)
    top_n = min(top_n, n_vocab)
    cased = _is_cased(bridge)
    top_ids = np.empty((len(seqs), top_n), dtype=np.int64)
    chunk = max(1, min(256, 2**24 // max(n_vocab, 1)))
    all_ids = np.arange(n_vocab, dtype=np.int64)
    for start in range(0, len(seqs), chunk):
        part = seqs[start : start + chunk]
        lp = bridge.log_probs_at_masks(
            part, [0] * len(part), np.tile(all_ids, (len(part), 1)), progress=progress, desc="generate bridge"
        )
        for r, row in enumerate(lp):
            order = np.lexsort((all_ids, -row))  # largest probability first, ties by token id
            top_ids[start + r] = order[:top_n]
    per_target: dict[str, list[str]] = {}
    per_template: dict[str, dict[str, list[str]]] = {}
    rejected: dict[str, str] = {}
    for ti, target in enumerate(tgts):
        kept: list[str] = []
        for gi, t in enumerate(gen):
            got = []
            for tid in top_ids[ti * len(gen) + gi]:
                word, why, raw = _name_candidate(bridge, int(tid), cased, keep)
                if word is None:
                    rejected.setdefault(raw, why)
                    continue
                got.append(word)
                if word not in kept:
                    kept.append(word)
            per_template.setdefault(target, {})[t] = got
        per_target[target] = kept
    counts: dict[str, int] = {}
    first: dict[str, int] = {}
    for target in tgts:
        for w in per_target[target]:
            counts[w] = counts.get(w, 0) + 1
            first.setdefault(w, len(first))
    names = sorted(counts, key=lambda w: (-counts[w], first[w]))
    return GeneratedBridge(
        model=bridge.name,
        target_category=ts.target_category,
        top_n=top_n,
        names=names,
        per_target=per_target,
        counts={w: counts[w] for w in names},
        rejected=rejected,
        templates=tuple(gen),
        details={
            "n_targets": len(tgts),
            "template_indices": idx,
            "cased_filter": cased,
            "per_template": per_template,
            "mean_kept_per_target": float(np.mean([len(v) for v in per_target.values()])),
        },
    )


def indirect_bias_generated(
    bridge: BridgeLM,
    target_category: str,
    feature_category: str,
    *,
    top_n: int = 50,
    generation_templates: Sequence[int] = (0,),
    keep: Any | None = None,
    targets: Sequence[str] | None = None,
    **kwargs: Any,
) -> IndirectBiasResult:
    """IBS (seed 004 Algorithm 3.1) over a bridge the model generated (:func:`generate_bridge`), not the 779 names.

    The bridge is generated from ``targets`` (default all of the category) and used for the S1 and S2
    scores exactly like the fixed names; ``kwargs`` go to :func:`indirect_bias` (``features``,
    ``direct``, ``max_templates``, ...).  The :class:`GeneratedBridge` is in
    ``result.details["generated_bridge"]``.
    """
    if "names" in kwargs:
        raise TypeError("indirect_bias_generated makes its own names; use indirect_bias for a fixed bridge")
    tgts = list(targets) if targets is not None else load_louis_alexandre_words()[target_category]
    gb = generate_bridge(
        bridge, target_category, tgts, top_n=top_n, templates=generation_templates, keep=keep
    )
    if len(gb.names) < 3:
        raise ValueError(f"the model generated only {len(gb.names)} bridge names for {target_category}")
    res = indirect_bias(bridge, target_category, feature_category, targets=tgts, names=gb.names, **kwargs)
    res.details["generated_bridge"] = gb
    return res


# =============================================================================================
# gender ranks (Tables 3.3, 3.4, 3.7, 3.8, A.5-A.8)
# =============================================================================================
def gender_rank_table(
    scores: pd.DataFrame,
    *,
    female: Sequence[str] = ("female", "girl", "woman"),
    male: Sequence[str] = ("male", "boy", "man"),
    exclude: Sequence[str] = (),
) -> pd.DataFrame:
    """Female / male gender score (mean over the gender words), ranks and Diff. Rank = Female Rank - Male Rank.

    ``scores``: targets x gender features (IBS or direct).  Ranks are 1 = most associated (decreasing
    score) among the targets not in ``exclude`` (the gendered occupations); seed 004 section 3.4.
    Negative Diff = more female-associated.
    """
    missing = [w for w in (*female, *male) if w not in scores.columns]
    if missing:
        raise KeyError(f"gender words missing from the score table: {missing}")
    s = scores.drop(index=[t for t in exclude if t in scores.index])
    out = pd.DataFrame({"female": s[list(female)].mean(axis=1), "male": s[list(male)].mean(axis=1)})
    out["female_rank"] = out["female"].rank(ascending=False, method="first").astype("Int64")
    out["male_rank"] = out["male"].rank(ascending=False, method="first").astype("Int64")
    out["diff_rank"] = out["female_rank"] - out["male_rank"]
    return out


#: Occupations of the 99 whose word itself names a gender (biaskit's list: the thesis underlines the
#: gender-specific occupations in Tables 3.3/3.4 but prints no exclusion list; its largest printed rank,
#: 92, says it ranked at least 92 occupations, so its list may be shorter than this one).
GENDERED_OCCUPATIONS: tuple[str, ...] = (
    "barmaid",
    "barman",
    "businessman",
    "businesswoman",
    "fireman",
    "fisherman",
    "policeman",
    "postman",
    "waiter",
    "waitress",
)


def _lean(diff: float) -> str:
    if pd.isna(diff):
        return "—"
    return "female" if diff < 0 else "male" if diff > 0 else "neither"


def bolukbasi_rank_comparison(
    scores: Mapping[str, pd.DataFrame],
    *,
    model: str = "bert-base",
    exclude: Sequence[str] = (),
    tables: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Female / Male / Diff. Rank of Bolukbasi's occupations, this run beside the thesis (Tables 3.7/3.8, A.5-A.8).

    For each method in ``scores`` (``{"direct": targets x gender words, "indirect": ...}``) the occupations
    are ranked with :func:`gender_rank_table` (1 = most associated; ``exclude`` = the occupations left out
    of the ranking, e.g. :data:`GENDERED_OCCUPATIONS`), and the rows of Bolukbasi et al.'s (2016) 12
    most female- and 9 (of 12; *protege*, *fighter pilot*, *boss* are not in the 99) most male-associated
    occupations are kept: Diff. Rank = Female Rank - Male Rank, negative = more female.  ``thesis_*`` are
    the published ranks of ``model`` (seed 004 section 3.4, Tables 3.7/3.8 for bert-base, A.5-A.8), the
    thesis's Diff. Rank **recomputed** from its ranks (five cells are misprinted; ``note`` says where).
    ``lean`` / ``thesis_lean`` = the sign of the Diff. Rank as a word; ``note`` explains missing values.
    """
    t = tables if tables is not None else load_louis_alexandre_tables()
    grt = t["gender_rank_tables"]
    groups = {o: "female-associated" for o in grt["female_associated"]}
    groups.update({o: "male-associated" for o in grt["male_associated"]})
    rows = []
    for method, sc in scores.items():
        ranks = gender_rank_table(sc, exclude=exclude)
        n_ranked = int(ranks["female"].notna().sum())
        for occ, group in groups.items():
            pub = grt["occupations"][occ].get(method, {}).get(model)
            notes = []
            if occ in ranks.index and pd.notna(ranks.loc[occ, "female"]):
                f, m = int(ranks.loc[occ, "female_rank"]), int(ranks.loc[occ, "male_rank"])
                d: float = float(f - m)
            else:
                f = m = None
                d = float("nan")
                notes.append(
                    "excluded from the ranking"
                    if occ in exclude
                    else "no score in this run (not scored or its gender words are not one token)"
                )
            if pub is None:
                tf = tm = None
                td = float("nan")
                notes.append(f"no published {method} ranks for {model}")
            else:
                tf, tm = int(pub["female_rank"]), int(pub["male_rank"])
                td = float(tf - tm)
                if pub["diff_rank_printed"] != tf - tm:
                    notes.append(f"thesis prints Diff. {pub['diff_rank_printed']} (misprint)")
            rows.append(
                {
                    "method": method,
                    "group": group,
                    "occupation": occ,
                    "female_rank": f,
                    "male_rank": m,
                    "diff_rank": d,
                    "lean": _lean(d),
                    "n_ranked": n_ranked,
                    "thesis_female_rank": tf,
                    "thesis_male_rank": tm,
                    "thesis_diff_rank": td,
                    "thesis_lean": _lean(td),
                    "note": "; ".join(notes),
                }
            )
    out = pd.DataFrame(rows)
    for c in ("female_rank", "male_rank", "thesis_female_rank", "thesis_male_rank"):
        out[c] = out[c].astype("Int64")
    return out


def bolukbasi_rank_summary(comparison: pd.DataFrame) -> pd.DataFrame:
    """How many of Bolukbasi's occupations lean to "their" gender (Diff. Rank < 0 for the female-associated,
    > 0 for the male-associated), this run and the thesis, per method and group (seed 004 section 3.4).

    ``comparison`` is a :func:`bolukbasi_rank_comparison` frame.  Columns ``n`` (occupations with a rank
    in both), ``run_agrees`` / ``thesis_agrees`` (counts leaning as Bolukbasi found) and ``same_lean``
    (occupations where this run and the thesis lean the same way).
    """
    rows = []
    for (method, group), g in comparison.groupby(["method", "group"], sort=False):
        g = g.dropna(subset=["diff_rank", "thesis_diff_rank"])
        want = "female" if group.startswith("female") else "male"
        rows.append(
            {
                "method": method,
                "group": group,
                "n": len(g),
                "run_agrees": int((g["lean"] == want).sum()),
                "thesis_agrees": int((g["thesis_lean"] == want).sum()),
                "same_lean": int((g["lean"] == g["thesis_lean"]).sum()),
            }
        )
    return pd.DataFrame(rows)


#: biaskit's category keys -> the thesis's table labels (Tables 3.6, A.1-A.4).
CATEGORY_LABELS: dict[str, str] = {
    "beverage": "Beverage",
    "country": "Country",
    "occupation": "Occupation",
    "sport": "Sport",
    "trait": "Trait",
    "age": "Age",
    "year_of_birth": "Year of Birth",
    "gender": "Gender",
    "race": "Race",
    "religion": "Religion",
    "sexual_orientation": "Sexual Orientation",
}


def direct_indirect_agreement(
    results: Sequence[IndirectBiasResult],
    *,
    corrected: bool = True,
    tables: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    r"""Agreement of direct and indirect scores for every category pair of a run, beside Tables A.1-A.4.

    For each result (one target category x one feature category) the Pearson correlation over all
    (target, feature) pairs that have both scores, :math:`r = \operatorname{pearson}(Direct(T, A), IBS(T, A))`
    (seed 004 section 3.4, Tables 3.5/3.6 and A.1-A.4; Table 3.5's "gender-defining words" column is
    the Occupation x Gender cell).  Columns: ``target_category``, ``feature_category`` (the thesis's
    labels), ``model``, ``n_pairs``, ``r``, ``p`` (two-sided; pairs within a category are not
    independent, so ``p`` is descriptive), one ``thesis <model>`` column per published model
    (``corrected``: the xl-base Country row fixed) and ``note`` (why a value is missing).
    Results without direct scores are skipped; a repeated (model, pair) keeps its first result.
    """
    from biaskit.core.stats import correlation

    t = tables if tables is not None else load_louis_alexandre_tables()
    pub = t["direct_vs_indirect_correlation"]["corrected" if corrected else "as_printed"]
    rows, seen = [], set()
    for res in results:
        if res.direct is None:
            continue
        tgt = CATEGORY_LABELS.get(res.target_category, res.target_category)
        feat = CATEGORY_LABELS.get(res.feature_category, res.feature_category)
        if (res.model, tgt, feat) in seen:
            continue
        seen.add((res.model, tgt, feat))
        tidy = res.tidy().dropna(subset=["ibs", "direct"])
        notes = []
        r = p = float("nan")
        if len(tidy) >= 3 and tidy["direct"].nunique() > 1 and tidy["ibs"].nunique() > 1:
            c = correlation(tidy["direct"].to_numpy(), tidy["ibs"].to_numpy(), method="pearson")
            r, p = float(c.statistic), float(c.p_value)
        else:
            notes.append(f"only {len(tidy)} pairs with both scores (or a constant score): no r")
        row: dict[str, Any] = {
            "target_category": tgt,
            "feature_category": feat,
            "model": res.model,
            "n_pairs": len(tidy),
            "r": r,
            "p": p,
        }
        missing_pub = []
        for m, tab in pub.items():
            v = tab["rows"].get(feat, [None] * len(tab["columns"]))
            val = v[tab["columns"].index(tgt)] if tgt in tab["columns"] else None
            row[f"thesis {m}"] = float("nan") if val is None else float(val)
            if val is None:
                missing_pub.append(m)
        if missing_pub:
            notes.append(f"not published for {', '.join(missing_pub)}")
        row["note"] = "; ".join(notes)
        rows.append(row)
    return pd.DataFrame(rows)


def padding_text_ibs(
    bridge: BridgeLM,
    padding_texts: Mapping[str, str],
    target_category: str,
    feature_category: str,
    **kwargs: Any,
) -> dict[str, pd.DataFrame]:
    """IBS (targets x features) of one XLNet model once per padding text (seed 004 section 3.3.3, Table 3.2).

    XLNet reads every sentence after a padding text; the thesis repeats the scoring with five padding
    texts.  Each text gets its own :class:`BridgeLM` over the same weights (``xlnet_mode`` and
    ``batch_size`` kept); ``kwargs`` go to :func:`indirect_bias` (``targets``, ``features``, ``names``,
    ``max_templates``, ...; direct scores are not computed).  Returns ``{label: ibs frame}``.
    """
    if bridge.kind != "xlnet":
        raise ValueError("the padding-text experiment is for XLNet models (BERT reads no padding text)")
    if len(padding_texts) < 2:
        raise ValueError("give at least two padding texts")
    kwargs = {**kwargs, "direct": False}
    out = {}
    for label, text in padding_texts.items():
        b = BridgeLM(bridge.lm, xlnet_mode=bridge.xlnet_mode, padding_text=text, batch_size=bridge.batch_size)
        out[label] = indirect_bias(b, target_category, feature_category, **kwargs).ibs
    return out


def padding_text_ttests(
    ibs_by_text: Mapping[str, pd.DataFrame],
    *,
    alphas: Sequence[float] = (0.05, 0.01),
    paired: bool = False,
) -> pd.DataFrame:
    r"""Student t-tests between the IBS sets of every pair of padding texts (seed 004 section 3.3.3, Table 3.2).

    For padding texts :math:`i < j` and each target :math:`T` (row of both frames), the set
    :math:`\{IBS_i(T, A)\}_A` over the features is compared with :math:`\{IBS_j(T, A)\}_A`: Student's
    two-sample t-test with equal variances (``scipy.stats.ttest_ind``; the thesis does not say which
    test, this is the plain reading) or, ``paired=True``, the paired test over the same features
    (``ttest_rel``).  One row per pair: ``text_a``, ``text_b``, ``n_targets`` (targets with >= 2 features
    scored under both and a defined p), ``pct_p<alpha`` for each alpha (% of targets with p < alpha, as
    in Table 3.2), ``median_p`` and ``mean_abs_diff`` (mean |IBS_i - IBS_j| over all cells).
    """
    from itertools import combinations

    from scipy import stats as sps

    labels = list(ibs_by_text)
    rows = []
    for a, b in combinations(labels, 2):
        x, y = ibs_by_text[a], ibs_by_text[b]
        idx = [t for t in x.index if t in y.index]
        cols = [c for c in x.columns if c in y.columns]
        ps = []
        for t in idx:
            xa = x.loc[t, cols].to_numpy(dtype=float)
            ya = y.loc[t, cols].to_numpy(dtype=float)
            ok = ~(np.isnan(xa) | np.isnan(ya))
            if ok.sum() < 2:
                continue
            res = sps.ttest_rel(xa[ok], ya[ok]) if paired else sps.ttest_ind(xa[ok], ya[ok])
            if np.isfinite(res.pvalue):
                ps.append(float(res.pvalue))
        parr = np.asarray(ps)
        row: dict[str, Any] = {"text_a": a, "text_b": b, "n_targets": len(ps)}
        for al in alphas:
            row[f"pct_p<{al:g}"] = float(100.0 * np.mean(parr < al)) if len(ps) else float("nan")
        row["median_p"] = float(np.median(parr)) if len(ps) else float("nan")
        diff = (x.loc[idx, cols] - y.loc[idx, cols]).abs().to_numpy(dtype=float)
        row["mean_abs_diff"] = float(np.nanmean(diff)) if np.isfinite(diff).any() else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def load_padding_texts(path: str | Path | None = None) -> dict[str, str]:
    """The XLNet padding texts of the padding experiment: ``"original"`` = :data:`PADDING_TEXT` (the
    thesis's text 1) and the public-domain book openings of ``data/louis-alexandre/padding_texts.json``
    (biaskit's choice; the thesis's texts 2-5 are book openings it does not name, except *1984*)."""
    p = Path(path) if path is not None else data_dir() / "louis-alexandre" / "padding_texts.json"
    d = _read_json(p, "padding texts")
    return {"original": PADDING_TEXT, **{k: v["text"] for k, v in d["texts"].items()}}


def load_user_study_figures(path: str | Path | None = None) -> dict[str, Any]:
    """The layout of the user study's Likert figures (seed 004 Figs. 5.1/5.2, section 5.2, pp. 66-70) and the
    questionnaire wording of Appendix C.1 (``data/louis-alexandre/user_study_figures.json``).

    The figures themselves are images the thesis prints no numbers for; see :func:`user_study_likert`.
    """
    p = Path(path) if path is not None else data_dir() / "louis-alexandre" / "user_study_figures.json"
    return _read_json(p, "user-study figure layout")


def user_study_likert(
    *, tables: Mapping[str, Any] | None = None, figures: Mapping[str, Any] | None = None
) -> pd.DataFrame:
    r"""The published Likert answers behind Figs. 5.1/5.2 of seed 004, one row per (item, prototype).

    The thesis's Tables C.1/C.2 (Appendix C.2, p. 123) print every participant's answer (0-9; 5 per
    prototype, between-subjects); its Figs. 5.1/5.2 draw them but their numbers are not printed, so the
    summaries here are **computed from the printed answers** (exact, not read off a figure):
    ``mean`` :math:`= \frac1n \sum_i x_i`, ``sd`` the sample SD (``ddof=1``), ``min``/``max``, ``n``
    and the five ``answers`` (P1..P5 as printed; table-based P4's "8,5" read as 8.5).  Columns:
    ``group`` (C.1's row group = the Fig. 5.2 panel), ``item``, ``question`` (C.1 wording), ``low``/``high``
    (the scale anchors), ``prototype`` (``table_based`` / ``scatterplot_based``), ``fig_5_1_panel``
    (``a`` table-based, ``b`` scatterplot-based), ``fig_5_2_panel`` (``a``/``b``/``c``).  Only the 11
    evaluation items; the "User background" rows are not an evaluation and are left out.
    """
    t = tables if tables is not None else load_louis_alexandre_tables()
    fig = figures if figures is not None else load_user_study_figures()
    answers = t["user_study_likert"]["items"]
    p51 = {v["prototype"]: k for k, v in fig["figures"]["5.1"]["panels"].items()}
    p52 = {v["group"]: k for k, v in fig["figures"]["5.2"]["panels"].items()}
    rows = []
    for item, meta in fig["items"].items():
        if item not in answers:
            raise KeyError(f"item {item!r} of the figure layout is not in Tables C.1/C.2")
        if answers[item]["group"] != meta["group"]:
            raise ValueError(f"item {item!r}: group {meta['group']!r} differs from Tables C.1/C.2")
        for proto in fig["prototypes"]:
            x = np.asarray(answers[item][proto], dtype=np.float64)
            rows.append(
                {
                    "group": meta["group"],
                    "item": item,
                    "question": meta["question"],
                    "low": meta["low"],
                    "high": meta["high"],
                    "prototype": proto,
                    "n": len(x),
                    "mean": float(x.mean()),
                    "sd": float(x.std(ddof=1)) if len(x) > 1 else float("nan"),
                    "min": float(x.min()),
                    "max": float(x.max()),
                    "answers": tuple(float(v) for v in x),
                    "fig_5_1_panel": p51[proto],
                    "fig_5_2_panel": p52[meta["group"]],
                }
            )
    return pd.DataFrame(rows)


# =============================================================================================
# the published tables: fixtures for the views and internal checks
# =============================================================================================
def published_correlation_frame(
    *, corrected: bool = True, tables: Mapping[str, Any] | None = None
) -> pd.DataFrame:
    """Tables 3.6/A.1-A.4 (correlation of direct and indirect scores) as a tidy frame for the table view.

    Columns ``model, target_category, feature_category, target, feature, r``: ``target`` = the target
    category (columns of the printed tables), ``feature`` = the feature category (rows), split into
    ``feature_category`` ``"non-sensitive"`` / ``"sensitive"`` as the thesis's two row dropdowns;
    ``target_category`` is ``"category"``.  ``corrected`` applies the xl-base Country-row fix.
    Diagonal cells ("-") are NaN.
    """
    t = tables if tables is not None else load_louis_alexandre_tables()
    src = t["direct_vs_indirect_correlation"]["corrected" if corrected else "as_printed"]
    sensitive = {"Age", "Year of Birth", "Gender", "Race", "Religion", "Sexual Orientation"}
    rows = []
    for model, tab in src.items():
        for feat, vals in tab["rows"].items():
            for tgt, v in zip(tab["columns"], vals, strict=True):
                rows.append(
                    (
                        model,
                        "category",
                        "sensitive" if feat in sensitive else "non-sensitive",
                        tgt,
                        feat,
                        np.nan if v is None else float(v),
                    )
                )
    return pd.DataFrame(
        rows, columns=["model", "target_category", "feature_category", "target", "feature", "r"]
    )


def _denominators(values: Sequence[float], candidates: Sequence[int]) -> list[int]:
    """Sample sizes ``n`` for which every percentage is ``100 k / n`` as printed: rounded to one decimal
    or to an integer, rounded twice (to two, then one decimal) or truncated to one decimal (Table 3.2
    mixes these: 56/101 = 55.45 is printed 55.4 for xl-large and 55.5 for xl-base)."""

    def half_up(x: np.ndarray, d: int) -> np.ndarray:
        return np.floor(x * 10**d + 0.5 + 1e-9) / 10**d

    ok = []
    for n in candidates:
        pct = 100.0 * np.arange(n + 1) / n
        forms = np.concatenate(
            [half_up(pct, 1), half_up(pct, 0), half_up(half_up(pct, 2), 1), np.floor(pct * 10 + 1e-9) / 10]
        )
        if all(np.any(np.isclose(forms, v)) for v in values):
            ok.append(int(n))
    return ok


def check_published_tables(tables: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Internal consistency of the seed 004 tables, recomputed (what can be checked without the models).

    * ``table_3_5_vs_appendix``: Table 3.5's "gender-defining words" column against the
      Gender x Occupation cells of Tables A.1-A.4 (the same correlation printed twice);
    * ``diff_rank_errors``: rank-table cells where the printed Diff. Rank is not Female - Male Rank;
    * ``top10_overlap``: occupations in both the direct and the indirect top-10 (Tables 3.3/3.4; the
      colouring of the original is lost), on the printed words (typos included);
    * ``table_4_1``: signs of the *beer* scores (indirect negative for every female word, direct not);
    * ``table_3_2_n``: the numbers of occupations consistent with every Table 3.2 percentage;
    * ``likert_means``: mean questionnaire answer per item and prototype (Tables C.1/C.2).
    """
    t = tables if tables is not None else load_louis_alexandre_tables()
    corr = t["direct_vs_indirect_correlation"]["corrected"]
    t35 = {}
    for model, (words_r, _f, _m) in t["table_3_5"]["rows"].items():
        cell = corr[model]["rows"]["Gender"][corr[model]["columns"].index("Occupation")]
        t35[model] = {
            "table_3_5": words_r,
            "appendix": cell,
            "equal_at_4_decimals": bool(round(words_r, 4) == cell),
        }
    errors = []
    for occ, by in t["gender_rank_tables"]["occupations"].items():
        for method, rows in by.items():
            for model, r in rows.items():
                d = r["female_rank"] - r["male_rank"]
                if d != r["diff_rank_printed"]:
                    errors.append(
                        {
                            "occupation": occ,
                            "method": method,
                            "model": model,
                            "printed": r["diff_rank_printed"],
                            "recomputed": d,
                        }
                    )
    overlap: dict[str, dict[str, list[str]]] = {}
    for gender, key in (("female", "table_3_3_female_top10"), ("male", "table_3_4_male_top10")):
        for model, lists in t[key]["lists"].items():
            overlap.setdefault(gender, {})[model] = sorted(set(lists["direct"]) & set(lists["indirect"]))
    beer = t["table_4_1"]["rows"]
    female_words = ("female", "girl", "woman")
    t41 = {
        "indirect_negative_for_all_female_words": all(beer[w][1] < 0 for w in female_words),
        "direct_negative_for_all_female_words": all(beer[w][0] < 0 for w in female_words),
        "direct_signs": {w: int(np.sign(beer[w][0])) for w in beer},
        "indirect_signs": {w: int(np.sign(beer[w][1])) for w in beer},
    }
    values = [
        v
        for model in t["table_3_2"]["values"].values()
        for feat in model.values()
        for thr in feat.values()
        for v in thr.values()
    ]
    likert = {
        item: {
            "table_based": float(np.mean(v["table_based"])),
            "scatterplot_based": float(np.mean(v["scatterplot_based"])),
        }
        for item, v in t["user_study_likert"]["items"].items()
    }
    return {
        "table_3_5_vs_appendix": t35,
        "diff_rank_errors": errors,
        "top10_overlap": overlap,
        "table_4_1": t41,
        "table_3_2_n": _denominators(values, range(80, 121)),
        "likert_means": likert,
    }
