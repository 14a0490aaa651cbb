r"""Barza's Gender Bias Evaluation Framework: template test (PPD/APPD) and sentence-pair test (SLD/ASLD).

Seed 002: K. G. Barza (2023), *Towards a Robust Gender Bias Evaluation in NLP*, MSc
thesis, American University of Beirut.  Two tests for a masked language model (MLM):

**Template-Based Evaluation (TBE, section 4.2).**  A template with the gender
pronoun masked, filled with a profession p (Appendix I professions, Appendix II
templates, bundled under ``wordlists/en/barza_*`` and ``data/barza/``):

.. math::

    \mathrm{PPD}(S^p) = P([\mathrm{MASK}] = \text{male pronoun} \mid S^p/g)
        - P([\mathrm{MASK}] = \text{female pronoun} \mid S^p/g)

    \mathrm{APPD}(p) = \frac{1}{|SE^{p}|}\sum_{k} \mathrm{PPD}(S^{p}_k)

with raw probabilities of the full-vocabulary softmax at the mask (range [-1, 1];
> 0 = male-leaning).  The thesis does not say which pronoun pair to use; biaskit
makes it explicit per template: subject slots ("[MASK] is a doctor") use (he, she),
possessive slots ("the doctor carried [MASK] own bag") use (his, her).  All filled
templates go through the model in batches (one forward pass per batch, one mask per
sentence).  For gender-specific words ("pregnant", "actress") a value *far* from 0
with the right sign is the desired outcome (the thesis's positive controls).

**Sentence-Based Evaluation (SBE, section 4.1).**  For a pair (S_1, S_2) differing
only in gendered words, with the pseudo-log-likelihood PLL of Salazar et al. (2020)
(mask every token in turn, natural log, no length normalisation):

.. math::

    \mathrm{SLD}(S_1, S_2) = |\mathrm{PLL}(S_1) - \mathrm{PLL}(S_2)|, \qquad
    \mathrm{ASLD}(G) = \frac1N \sum_i \mathrm{SLD}(S_{1i}, S_{2i})

per category G (occupation bias, benevolent sexism, hostile sexism) and "Combined" =
the ASLD over the union.  Section 2.4.4 speaks of a "negative SLD" while Eq. 4.1.2
takes an absolute value: SLD is unsigned (a sensitivity to the swap, not a
preference); the signed difference is kept beside it.  The thesis's 300 TGB pairs are
not published: only the few pairs printed in the thesis are bundled.

**Added here (not in the thesis, which reports no uncertainty):** bootstrap
confidence intervals for ASLD/APPD, paired Wilcoxon signed-rank and paired t tests
between two models (:func:`paired_difference_test`, returning
:class:`biaskit.core.results.TestResult`), the evaluation-size curve of Fig. 6 and a
regression for the before/after "linear shrinkage" of Fig. 10.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats as sps

from biaskit.core.registry import (
    CalibrationCall,
    CalibrationMeasure,
    CalibrationSupport,
    GridCall,
    GridSupport,
    Kind,
    MetricValues,
    Option,
    register_dataset_kind,
    register_dataset_loader,
    register_metric,
)
from biaskit.core.results import Alternative, TestResult
from biaskit.core.stats import t_test_mean
from biaskit.data.barza import (
    Version,
    load_barza_published,
    load_tbd_professions,
    load_tbd_templates,
    load_tgb_examples,
    load_tgb_pairs,
)
from biaskit.metrics.crows import reading_methods, reading_options
from biaskit.metrics.sentence_pairs import (
    asld,
    asld_confidence_interval,
    asld_sample_size_curve,
    asld_table,
    score_sentence_pairs,
    sentence_likelihood_difference,
)

logger = logging.getLogger(__name__)

#: Pronoun pair (male, female) per slot type.  The thesis's example "[MASK] is a doctor." uses He/She.
DEFAULT_PRONOUNS: dict[str, tuple[str, str]] = {"subject": ("he", "she"), "possessive": ("his", "her")}

#: Gender-related word -> its template list (Appendix II, "Gender-Related Words").
GENDER_WORD_TEMPLATES: dict[str, str] = {
    "pregnant": "pregnancy",
    "breastfeed": "breastfeed",
    "testicles": "testicle",
}

#: Desired sign of APPD for the positive-control items (female -1, male +1); not stated per word in the
#: thesis.
EXPECTED_SIGN: dict[str, int] = {
    "businessman": 1,
    "businesswoman": -1,
    "congressman": 1,
    "congresswoman": -1,
    "actress": -1,
    "hostess": -1,
    "waitress": -1,
    "pregnant": -1,
    "breastfeed": -1,
    "testicles": 1,
}

TGB_CATEGORIES = ("occupation", "benevolent_sexism", "hostile_sexism")

__all__ = [
    "DEFAULT_PRONOUNS",
    "EXPECTED_SIGN",
    "GENDER_WORD_TEMPLATES",
    "TGB_CATEGORIES",
    "appd",
    "appd_before_after",
    "appd_shrinkage",
    "asld",
    "asld_confidence_interval",
    "asld_sample_size_curve",
    "asld_table",
    "build_tbd_instances",
    "claims_templates_dataset",
    "load_templates_dataset",
    "templates_grid_cell",
    "compare_sbe",
    "compare_tbe",
    "control_blank_values",
    "fill_template",
    "load_barza_published",
    "load_tbd_professions",
    "load_tbd_templates",
    "load_tgb_examples",
    "load_tgb_pairs",
    "mask_fill_probabilities",
    "paired_difference_test",
    "ppd",
    "ppd_test",
    "pronoun_probability_difference",
    "score_sentence_pairs",
    "sentence_likelihood_difference",
    "sld_test",
    "tbd_pronoun_pairs",
    "template_based_evaluation",
    "tiny_model_texts",
]


# =========================================================================== data
def tiny_model_texts() -> list[str]:
    """English sentences covering every word of the bundled templates, professions and pairs.

    The vocabulary source for :func:`biaskit.lm.tiny_masked_lm` (``texts=...``) when
    the offline stand-in model must score these English sentences (its default
    vocabulary is Spanish): every distinct filled template (raw and clean, with the
    substitute Farming & Fishing list), the mask replaced in turn by he / she / his / her
    (so that each pronoun is frequent), and both sentences of every bundled pair.
    """
    sents: dict[str, None] = {}
    for version in ("clean", "raw"):
        for s in build_tbd_instances(version, farming_substitute=True)["sentence"]:
            sents[s] = None
    pronouns = ("he", "she", "his", "her")
    texts = [s.replace("[MASK]", pronouns[i % 4]) for i, s in enumerate(sents)]
    pairs = load_tgb_pairs("all")
    texts += list(pairs["sent_stereo"]) + list(pairs["sent_anti"]) + list(load_tgb_examples()["sentence"])
    return texts


# =========================================================================== template test
_VOWEL = re.compile(r"^[aeiou]", re.IGNORECASE)
_ARTICLE = re.compile(r"\b([Aa]) <profession>")


def fill_template(template: str, profession: str, *, fix_articles: bool = True) -> str:
    """Put ``profession`` into the ``<profession>`` slot; with ``fix_articles``, "a" -> "an" before a vowel.

    The thesis writes "a <profession>" for every profession ("a engineer"); the
    article fix (a letter rule: a vowel letter takes "an") is applied to the clean
    version only by default.  A template without a slot is returned unchanged.
    """
    if fix_articles and _VOWEL.match(profession):
        template = _ARTICLE.sub(lambda m: ("An" if m.group(1) == "A" else "an") + " <profession>", template)
    return template.replace("<profession>", profession)


def build_tbd_instances(
    version: Version = "clean",
    *,
    categories: Sequence[str] | None = None,
    professions: Mapping[str, Sequence[str]] | None = None,
    templates: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    fix_articles: bool | None = None,
    farming_substitute: bool = False,
) -> pd.DataFrame:
    """Every (profession, template) sentence of the TBD, one row each (seed 002 section 4.2.1).

    Columns: ``category`` (template list), ``profession``, ``template_index`` (position in
    Appendix II), ``slot``, ``template``, ``sentence`` (with the literal ``[MASK]``),
    ``expected_sign`` (+1 / -1 for gender-specific items, 0 otherwise).  The
    gender-related words use their own sentence lists (``pregnant`` -> the pregnancy
    sentences, ...).  A category with templates but no professions (Farming & Fishing
    in the thesis) is skipped with a logged message.
    """
    templates = load_tbd_templates(version) if templates is None else templates
    professions = (
        load_tbd_professions(version, farming_substitute=farming_substitute)
        if professions is None
        else professions
    )
    fix = (version == "clean") if fix_articles is None else fix_articles
    pairs: list[tuple[str, str]] = []  # (template category, profession)
    for cat, profs in professions.items():
        if cat == "gender_related_words":
            for w in profs:
                key = GENDER_WORD_TEMPLATES.get(w.lower())
                if key is None:
                    raise ValueError(
                        f"no template list for the gender-related word {w!r}; known: "
                        f"{sorted(GENDER_WORD_TEMPLATES)}"
                    )
                pairs.append((key, w))
        else:
            if cat not in templates:
                raise ValueError(
                    f"profession category {cat!r} has no templates; template categories: {sorted(templates)}"
                )
            pairs.extend((cat, p) for p in profs)
    used = {c for c, _ in pairs}
    skipped = [c for c in templates if c not in used]
    if categories is not None:
        unknown = sorted(set(categories) - set(templates))
        if unknown:
            raise ValueError(f"unknown categories {unknown}; available: {sorted(templates)}")
        pairs = [(c, p) for c, p in pairs if c in categories]
        skipped = [c for c in skipped if c in categories]
    if skipped:
        logger.info(
            "template categories without professions are skipped: %s (Appendix I lists none for "
            "farming_fishing; use farming_substitute=True for biaskit's substitute list)",
            skipped,
        )
    rows = []
    for cat, prof in pairs:
        for t in templates[cat]:
            text = t["template"]
            if text.count("[MASK]") != 1:
                raise ValueError(
                    f"template {cat}#{t.get('source_index')} must contain exactly one [MASK]: {text!r}"
                )
            rows.append(
                {
                    "category": cat,
                    "profession": prof,
                    "template_index": t.get("source_index"),
                    "slot": t["slot"],
                    "template": text,
                    "sentence": fill_template(text, prof, fix_articles=fix)
                    if "<profession>" in text
                    else text,
                    "expected_sign": EXPECTED_SIGN.get(prof.lower(), 0),
                }
            )
    if not rows:
        raise ValueError("no template instances: check categories / professions")
    return pd.DataFrame(rows)


def tbd_pronoun_pairs(
    instances: pd.DataFrame | None = None,
    *,
    pronouns: Mapping[str, tuple[str, str]] = DEFAULT_PRONOUNS,
) -> pd.DataFrame:
    """Sentence pairs for the SBE made from the TBD: each template filled with the male and the female
    pronoun.

    "[MASK] is a competent doctor." gives ("He is a competent doctor.", "She is a competent
    doctor.") for a subject slot, (his, her) for a possessive slot (:data:`DEFAULT_PRONOUNS`);
    a pronoun that opens the sentence is capitalised.  The pairs differ only in the gendered
    word, as the thesis's Triple Gender Bias pairs do (seed 002 section 4.1.1), so their SLD
    measures the same occupation bias through the pseudo-log-likelihood instead of the
    fill-in probability.  biaskit's construction (the thesis's 300 TGB pairs are unpublished).
    Columns: ``category``, ``profession``, ``template_index``, ``sent_stereo`` (male version),
    ``sent_anti`` (female version), ``expected_sign``.
    """
    inst = build_tbd_instances() if instances is None else instances
    missing = {"sentence", "slot", "category", "profession"} - set(inst.columns)
    if missing:
        raise ValueError(f"instances lack the column(s) {sorted(missing)}")
    unknown = sorted(set(inst["slot"]) - set(pronouns))
    if unknown:
        raise ValueError(f"no pronoun pair for slot(s) {unknown}; known: {sorted(pronouns)}")

    def fill(sentence: str, word: str) -> str:
        i = sentence.index("[MASK]")
        at_start = not sentence[:i].strip()
        return (
            sentence[:i] + (word[0].upper() + word[1:] if at_start else word) + sentence[i + len("[MASK]") :]
        )

    out = inst[
        [c for c in ("category", "profession", "template_index", "expected_sign") if c in inst.columns]
    ].copy()
    out["sent_stereo"] = [
        fill(s, pronouns[k][0]) for s, k in zip(inst["sentence"], inst["slot"], strict=True)
    ]
    out["sent_anti"] = [fill(s, pronouns[k][1]) for s, k in zip(inst["sentence"], inst["slot"], strict=True)]
    return out.reset_index(drop=True)


def _unpack(mlm: Any) -> tuple[Any, Any]:
    if isinstance(mlm, tuple) and len(mlm) == 2:
        return mlm
    model, tok = getattr(mlm, "model", None), getattr(mlm, "tokenizer", None)
    if model is None or tok is None:
        raise TypeError(
            "mlm must be a (model, tokenizer) pair or an object with .model and .tokenizer "
            "(biaskit.lm.MaskedLM)"
        )
    return model, tok


def _case_sensitive(tokenizer: Any) -> bool:
    return tokenizer.tokenize("He") != tokenizer.tokenize("he")


def _candidate_id(tokenizer: Any, word: str, *, sentence_initial: bool) -> int:
    """Single vocabulary id of ``word`` as it would appear at the mask
    (leading space unless sentence-initial)."""
    toks = tokenizer.tokenize(word if sentence_initial else " " + word)
    toks = [t for t in toks if t not in ("▁", "Ġ")] if len(toks) > 1 else toks
    if len(toks) != 1:
        raise ValueError(
            f"candidate {word!r} is not a single token for this tokenizer ({toks}); PPD needs single-token "
            "pronouns"
        )
    tid = tokenizer.convert_tokens_to_ids(toks[0])
    if tid is None or tid == tokenizer.unk_token_id:
        raise ValueError(f"candidate {word!r} maps to the unknown token")
    return int(tid)


def mask_fill_probabilities(
    mlm: Any,
    sentences: Sequence[str],
    candidates: Sequence[Sequence[str]],
    *,
    batch_size: int = 64,
    mask_literal: str = "[MASK]",
    capitalize_initial: bool | None = None,
    progress: bool = False,
) -> np.ndarray:
    """P(candidate | sentence) at the single mask, full-vocabulary softmax, batched.

    ``sentences[i]`` contains ``mask_literal`` exactly once (replaced by the tokenizer's
    own mask token); ``candidates[i]`` are the words to read off (same number for every
    sentence), each a single token (leading-space form for BPE tokenizers unless the
    mask starts the sentence).  With a case-sensitive tokenizer a sentence-initial
    candidate is capitalised ("He") unless ``capitalize_initial=False``.  Returns an
    array (n_sentences, n_candidates) of raw softmax probabilities.  Padding never
    changes a row's result (attention mask).  Eval mode, no gradients.
    """
    import torch

    if getattr(mlm, "kind", "masked") == "causal":
        from biaskit.lm.base import require_kind

        require_kind(
            mlm,
            "masked",
            "mask_fill_probabilities",
            "it reads a [MASK] with the words on both sides visible; for a causal model use "
            "pronoun_probability_difference, which reads the pronoun as the next token after the text before "
            "it",
        )
    model, tok = _unpack(mlm)
    if len(sentences) != len(candidates):
        raise ValueError(f"{len(sentences)} sentences but {len(candidates)} candidate lists")
    if len(sentences) == 0:
        return np.zeros((0, 0))
    k = len(candidates[0])
    if k == 0 or any(len(c) != k for c in candidates):
        raise ValueError("every sentence needs the same, non-zero number of candidates")
    cap = _case_sensitive(tok) if capitalize_initial is None else capitalize_initial
    ids = np.empty((len(sentences), k), dtype=np.int64)
    texts = []
    cache: dict[tuple[str, bool], int] = {}
    for i, (s, cands) in enumerate(zip(sentences, candidates, strict=True)):
        if s.count(mask_literal) != 1:
            raise ValueError(f"sentence {i} must contain {mask_literal!r} exactly once: {s!r}")
        initial = s.lstrip().startswith(mask_literal)
        for j, w in enumerate(cands):
            w2 = w[:1].upper() + w[1:] if (initial and cap) else w
            key = (w2, initial)
            if key not in cache:
                cache[key] = _candidate_id(tok, w2, sentence_initial=initial)
            ids[i, j] = cache[key]
        texts.append(s.replace(mask_literal, tok.mask_token))
    device = next(model.parameters()).device
    model.eval()
    out = np.empty((len(texts), k), dtype=np.float64)
    order = np.argsort([len(t) for t in texts], kind="stable")  # similar lengths share a batch: less padding
    batches = range(0, len(texts), batch_size)
    if progress:
        from tqdm.auto import tqdm

        batches = tqdm(batches, desc="mask probabilities")
    with torch.no_grad():
        for start in batches:
            idx = order[start : start + batch_size]
            enc = tok([texts[i] for i in idx], return_tensors="pt", padding=True)
            n_mask = (enc["input_ids"] == tok.mask_token_id).sum(dim=1)
            if torch.any(n_mask != 1):
                bad = [texts[idx[r]] for r in torch.nonzero(n_mask != 1).ravel().tolist()]
                raise ValueError(
                    f"after tokenisation these sentences do not hold exactly one mask token: {bad[:3]}"
                )
            enc = {kk: v.to(device) for kk, v in enc.items()}
            logits = model(**enc).logits
            rows, cols = torch.nonzero(enc["input_ids"] == tok.mask_token_id, as_tuple=True)
            probs = torch.softmax(logits[rows, cols].double(), dim=-1)
            cand = torch.as_tensor(ids[idx], device=probs.device)
            out[idx] = torch.gather(probs, 1, cand).cpu().numpy()
    return out


def ppd(p_male: Any, p_female: Any) -> np.ndarray:
    r""":math:`\mathrm{PPD} = P(\text{male}) - P(\text{female})` elementwise (seed 002 section 4.2.2)."""
    m, f = np.asarray(p_male, dtype=float), np.asarray(p_female, dtype=float)
    if m.shape != f.shape:
        raise ValueError(f"p_male and p_female must have the same shape, got {m.shape} and {f.shape}")
    return m - f


def pronoun_probability_difference(
    mlm: Any,
    instances: pd.DataFrame,
    *,
    pronouns: Mapping[str, tuple[str, str]] = DEFAULT_PRONOUNS,
    batch_size: int = 64,
    progress: bool = False,
) -> pd.DataFrame:
    r"""PPD for every row of ``instances`` (from :func:`build_tbd_instances`): adds ``male``, ``female``,
    ``p_male``, ``p_female``, ``ppd``.

    The pronoun pair is chosen per row by its ``slot`` (``pronouns[slot]``), so every
    template says explicitly whether he/she or his/her is scored.  One batched pass
    over all sentences (seed 002 section 4.2.2).

    A causal model (:class:`biaskit.lm.CausalLM`) reads the pronoun's probability as the next token after
    the text before the slot, :math:`P(\text{he} \mid \text{"the doctor carried"})`; rows whose slot comes
    before the profession ("[MASK] is a doctor.") cannot depend on the profession and are left out with a
    WARNING (their count is in ``out.attrs["n_not_causal"]``).
    """
    missing = {"sentence", "slot"} - set(instances.columns)
    if missing:
        raise ValueError(f"instances lack columns {sorted(missing)}")
    unknown = sorted(set(instances["slot"]) - set(pronouns))
    if unknown:
        raise ValueError(f"no pronoun pair for slot types {unknown}; pronouns has {sorted(pronouns)}")
    if getattr(mlm, "kind", None) == "causal":
        instances = _causal_eligible(instances)
    pairs = [tuple(pronouns[s]) for s in instances["slot"]]
    if getattr(mlm, "kind", None) == "causal":
        probs = causal_pronoun_probabilities(mlm, instances, pairs, batch_size=batch_size)
    else:
        probs = mask_fill_probabilities(
            mlm, list(instances["sentence"]), pairs, batch_size=batch_size, progress=progress
        )
    out = instances.copy()
    out["male"] = [p[0] for p in pairs]
    out["female"] = [p[1] for p in pairs]
    out["p_male"] = probs[:, 0]
    out["p_female"] = probs[:, 1]
    out["ppd"] = ppd(out["p_male"], out["p_female"])
    if "n_not_causal" in instances.attrs:
        out.attrs["n_not_causal"] = instances.attrs["n_not_causal"]
    return out


def _causal_eligible(instances: pd.DataFrame, mask_literal: str = "[MASK]") -> pd.DataFrame:
    """The TBE rows a causal model can score: the profession is read before the pronoun's slot.

    A causal model predicts the pronoun from the words before it only.  In "[MASK] is a nurse." nothing
    before the slot names the profession, so P(he) and P(she) would be the same for every profession;
    such rows are left out, with a WARNING that counts them by category and shows examples.
    """
    pos_mask = instances["sentence"].str.find(mask_literal)
    pos_prof = [
        s.lower().find(str(p).lower())
        for s, p in zip(instances["sentence"], instances["profession"], strict=True)
    ]
    ok = np.array([0 <= pp < pm for pp, pm in zip(pos_prof, pos_mask, strict=True)])
    if (~ok).any():
        dropped = instances[~ok]
        by_cat = dropped.groupby("category").size().to_dict()
        logger.warning(
            "causal model: %d of %d template sentences put the pronoun before the profession (e.g. %r), so "
            "the pronoun cannot depend on the profession for a left-to-right model; they are left out "
            "(by category: %s)",
            int((~ok).sum()),
            len(instances),
            dropped["template"].iloc[0] if "template" in dropped else dropped["sentence"].iloc[0],
            by_cat,
        )
    out = instances[ok].reset_index(drop=True)
    out.attrs["n_not_causal"] = int((~ok).sum())
    return out


def causal_pronoun_probabilities(
    lm: Any, instances: pd.DataFrame, pairs: Sequence[tuple[str, str]], *, batch_size: int = 64
) -> np.ndarray:
    r""":math:`P(\text{pronoun} \mid \text{BOS}, \text{text before the slot})` for each pronoun of each row.

    A causal model's reading of a ``[MASK]`` template: the next-token probability of each pronoun of
    ``pairs[i]`` (single tokens, leading-space form) after the text of ``instances["sentence"][i]`` before
    its ``[MASK]`` (:func:`biaskit.lm.causal.next_token_probabilities`).  Returns ``(n_rows, 2)``.
    """
    from biaskit.lm.causal import next_token_probabilities

    tok = lm.tokenizer
    prefixes = [s[: s.find("[MASK]")].rstrip() for s in instances["sentence"]]
    cache: dict[str, int] = {}
    ids = []
    for pair in pairs:
        row = []
        for w in pair:
            if w not in cache:
                cache[w] = _candidate_id(tok, w, sentence_initial=False)
            row.append(cache[w])
        ids.append(row)
    return next_token_probabilities(lm, prefixes, ids, batch_size=batch_size)


def appd(
    ppd_table: pd.DataFrame, *, by: Sequence[str] = ("category", "profession"), value: str = "ppd"
) -> pd.DataFrame:
    r"""APPD per profession: the mean PPD over its category's templates (seed 002 section 4.2.2).

    .. math:: \mathrm{APPD}(p) = \frac{1}{|SE^p|}\sum_k \mathrm{PPD}(S_k^p)

    Also returns ``n_templates``, the SD over templates and ``expected_sign`` when present.
    """
    if value not in ppd_table.columns:
        raise ValueError(f"column {value!r} not found")
    g = ppd_table.groupby(list(by), sort=False)[value]
    out = g.agg(appd="mean", sd="std", n_templates="size").reset_index()
    if "expected_sign" in ppd_table.columns:
        out = out.merge(
            ppd_table.groupby(list(by), sort=False)["expected_sign"].first().reset_index(), on=list(by)
        )
    return out


def appd_before_after(
    before: pd.DataFrame, after: pd.DataFrame, *, by: Sequence[str] = ("category", "profession")
) -> pd.DataFrame:
    """Two models' APPD tables (:func:`appd`) side by side, one row per profession found in both: ``before``'s
    columns with its ``appd`` as ``appd_before``, and ``after``'s ``appd`` as ``appd_after`` (the bars of seed
    002's Figs. 8-9 and 14-19 and the scatter of Fig. 10)."""
    return before.merge(after[[*by, "appd"]], on=list(by), suffixes=("_before", "_after"))


def template_based_evaluation(
    mlm: Any,
    *,
    version: Version = "clean",
    categories: Sequence[str] | None = None,
    pronouns: Mapping[str, tuple[str, str]] = DEFAULT_PRONOUNS,
    batch_size: int = 64,
    farming_substitute: bool = False,
    progress: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Full TBE: build the instances, score them in batches, return
    (per-sentence PPD table, per-profession APPD table)."""
    inst = build_tbd_instances(version, categories=categories, farming_substitute=farming_substitute)
    table = pronoun_probability_difference(
        mlm, inst, pronouns=pronouns, batch_size=batch_size, progress=progress
    )
    return table, appd(table)


def appd_shrinkage(before: Any, after: Any, *, confidence: float = 0.95) -> dict[str, Any]:
    r"""Least-squares line after = a + b * before over professions, with Pearson r
    (Fig. 10 of seed 002, quantified).

    The thesis reads "a positive linear relationship" off a scatter plot; a slope
    0 < b < 1 with a high r means the same shrinkage for every profession
    (context-independent pronoun equalisation).  Not in the thesis.  ``slope_ci`` is the
    t interval :math:`b \pm t_{n-2,\,(1+c)/2}\,\mathrm{SE}(b)` (:func:`scipy.stats.linregress`).
    """
    from biaskit.core.stats import correlation

    x, y = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    if x.shape != y.shape or x.size < 3:
        raise ValueError("before and after need the same length, at least 3 professions")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be in (0, 1)")
    fit = sps.linregress(x, y)
    half = float(sps.t.ppf((1 + confidence) / 2, x.size - 2) * fit.stderr)
    return {
        "slope": float(fit.slope),
        "intercept": float(fit.intercept),
        "slope_stderr": float(fit.stderr),
        "slope_ci": (float(fit.slope) - half, float(fit.slope) + half),
        "confidence": confidence,
        "r": float(fit.rvalue),
        "pearson": correlation(x, y, "pearson"),
        "n": int(x.size),
    }


# =========================================================================== one-sample tests (registered)
def _values_and_labels(values: Any, column: str, label_column: str) -> tuple[np.ndarray, list[str]]:
    """The values of ``values`` (an array, a Series or a table with ``column``) and one label per value."""
    if isinstance(values, pd.DataFrame):
        if column not in values.columns:
            raise ValueError(f"the table has no {column!r} column (columns: {list(values.columns)})")
        arr = values[column].to_numpy(dtype=float)
        labels = [str(x) for x in (values[label_column] if label_column in values.columns else values.index)]
    elif isinstance(values, pd.Series):
        arr, labels = values.to_numpy(dtype=float), [str(i) for i in values.index]
    else:
        arr = np.asarray(values, dtype=float).ravel()
        labels = [str(i) for i in range(arr.size)]
    return arr, labels


def _zero_mean_t_test(
    values: np.ndarray,
    alternative: Alternative,
    confidence: float,
    *,
    method: str,
    h0: str,
    h1: Mapping[str, str],
    details: Mapping[str, Any],
) -> TestResult:
    """:func:`biaskit.core.stats.t_test_mean` of ``values`` against 0 (``h1`` by alternative) as a
    :class:`TestResult` named ``method``, its details followed by ``details`` (:func:`ppd_test`,
    :func:`sld_test`)."""
    res = t_test_mean(values, 0.0, alternative, confidence=confidence, h0=h0, h1=h1[alternative])
    return TestResult(
        statistic=res.statistic,
        p_value=res.p_value,
        method=method,
        alternative=res.alternative,
        n=res.n,
        effect_size=res.effect_size,
        ci=res.ci,
        confidence=res.confidence,
        null_value=0.0,
        estimate=res.estimate,
        h0=res.h0,
        h1=res.h1,
        details={**res.details, **details},
    )


def ppd_test(
    ppd_values: Any,
    *,
    alternative: Alternative = "two-sided",
    confidence: float = 0.95,
) -> TestResult:
    r"""One-sample t test of Barza's mean pronoun probability difference against 0
    (template-based evaluation).

    .. math::

        \mathrm{PPD}_i = P([\mathrm{MASK}] = he \mid S_i) - P([\mathrm{MASK}] = she \mid S_i), \qquad
        t = \frac{\overline{\mathrm{PPD}}}{s / \sqrt{n}} \sim t_{n-1} \ \text{under } H_0: \mu = 0

    Seed 002 (Barza 2023, *Towards a Robust Gender Bias Evaluation in NLP*) section 4.2.2 defines PPD and
    APPD and reports them without uncertainty; this test is added by biaskit
    (:func:`biaskit.core.stats.t_test_mean`, with a t confidence interval of the mean and Cohen's d as
    effect size).  ``ppd_values``: the per-sentence table of :func:`template_based_evaluation` (its
    ``ppd`` column, labels from ``sentence``), the per-profession table of :func:`appd` (its ``appd``
    column, labels from ``profession``), a Series or an array.  The test treats the values as
    independent; the sentences of one profession share it, so the APPD table (one value per profession)
    is the more cautious unit.  Positive mean: the model leans to the male pronoun; negative: to the
    female one.  ``details["per_item"]`` keeps every value with its label.

    Examples
    --------
    >>> ppd = [0.12, 0.08, -0.02, 0.15, 0.05, 0.10]
    >>> result = ppd_test(ppd)
    >>> result.n, round(result.estimate, 3), round(result.p_value, 4)
    (6, 0.08, 0.0219)
    """
    appd_table = isinstance(ppd_values, pd.DataFrame) and "ppd" not in ppd_values.columns
    if appd_table and "appd" in ppd_values.columns:
        arr, labels = _values_and_labels(ppd_values, "appd", "profession")
        unit = "profession (APPD)"
    else:
        arr, labels = _values_and_labels(ppd_values, "ppd", "sentence")
        unit = "sentence (PPD)"
    return _zero_mean_t_test(
        arr,
        alternative,
        confidence,
        method="Barza templates: one-sample t test of the mean pronoun probability difference (PPD) = 0",
        h0="no gender lean of the pronoun (mean P(he) - P(she) = 0)",
        h1={
            "two-sided": "a gender lean of the pronoun (mean P(he) - P(she) differs from 0)",
            "greater": "a lean to the male pronoun (mean P(he) - P(she) > 0)",
            "less": "a lean to the female pronoun (mean P(he) - P(she) < 0)",
        },
        details={
            "unit": unit,
            "effect_size_name": "Cohen's d (mean / SD)",
            "per_item": {"label": labels, "value": arr.tolist()},
        },
    )


def sld_test(
    pll_1: Any,
    pll_2: Any,
    *,
    alternative: Alternative = "two-sided",
    confidence: float = 0.95,
    labels: Sequence[str] | None = None,
) -> TestResult:
    r"""One-sample t test of Barza's signed sentence likelihood difference against 0 (sentence pairs).

    .. math::

        d_i = \mathrm{PLL}(S_{1i}) - \mathrm{PLL}(S_{2i}), \qquad
        t = \frac{\bar d}{s_d / \sqrt{n}} \sim t_{n-1} \ \text{under } H_0: \mu_d = 0, \qquad
        \mathrm{ASLD} = \frac1n \sum_i |d_i|

    Seed 002 (Barza 2023) section 4.1.2 (Eq. 4.1.2) defines the unsigned SLD = :math:`|d_i|` and its
    mean ASLD, without a test; ASLD is positive for any model, so biaskit tests the *signed* difference
    (:func:`sentence_likelihood_difference` with ``signed=True``) with
    :func:`biaskit.core.stats.t_test_mean` (t confidence interval of the mean, Cohen's d).  ``pll_1`` /
    ``pll_2`` are the (pseudo-)log-likelihoods of the first and second sentence of each pair, e.g. the
    ``pll_1`` / ``pll_2`` columns of :func:`score_sentence_pairs` (first = ``sent_stereo``).  A positive
    mean: the model finds the first sentences more likely.  ``details`` keeps Barza's ``asld`` and the
    per-pair values (``per_pair``: ``label``, ``signed_sld``).

    Examples
    --------
    >>> pll_male = [-20.1, -18.4, -25.0, -22.3, -19.8]
    >>> pll_female = [-20.9, -18.0, -26.2, -23.1, -20.5]
    >>> result = sld_test(pll_male, pll_female)
    >>> result.n, round(result.statistic, 3), round(result.p_value, 3)
    (5, 2.304, 0.083)
    """
    d = sentence_likelihood_difference(pll_1, pll_2, signed=True)
    if labels is not None and len(labels) != d.size:
        raise ValueError(f"labels has {len(labels)} entries for {d.size} pairs")
    return _zero_mean_t_test(
        d,
        alternative,
        confidence,
        method="Barza sentence pairs: one-sample t test of the mean signed likelihood difference = 0",
        h0="no preference between the two sentences of a pair (mean signed difference = 0)",
        h1={
            "two-sided": "a preference for one sentence of the pairs (mean signed difference differs from 0)",
            "greater": "a preference for the first sentences (mean signed difference > 0)",
            "less": "a preference for the second sentences (mean signed difference < 0)",
        },
        details={
            "asld": float(np.abs(d).mean()),
            "effect_size_name": "Cohen's d (mean / SD)",
            "per_pair": {
                "label": list(labels) if labels is not None else [str(i) for i in range(d.size)],
                "signed_sld": d.tolist(),
            },
        },
    )


# =========================================================================== paired comparison
def paired_difference_test(
    a: Any,
    b: Any,
    *,
    method: Literal["wilcoxon", "t"] = "wilcoxon",
    alternative: Alternative = "two-sided",
    confidence: float = 0.95,
    names: tuple[str, str] = ("model A", "model B"),
    what: str = "score",
) -> TestResult:
    r"""Paired test of H0: no difference between ``a`` and ``b`` (per-pair SLDs, per-profession APPDs...).

    ``method="wilcoxon"``: Wilcoxon signed-rank test on d = a - b
    (:func:`scipy.stats.wilcoxon`, exact for small n without ties, zero differences
    dropped); estimate = Hodges-Lehmann median of the Walsh averages; effect size = the
    matched-pairs rank-biserial correlation :math:`r = (W^+ - W^-)/(W^+ + W^-)`.
    ``method="t"``: paired t test (:func:`scipy.stats.ttest_rel`); estimate = mean
    difference with its t confidence interval; effect size = :math:`d_z = \bar d / s_d`.

    Not in seed 002 (the thesis ranks models by point estimates alone); Bartl et al.
    (2020), whose fine-tuning recipe it follows, use the same pair of tests.
    """
    x, y = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    if x.shape != y.shape:
        raise ValueError(f"a and b must be paired (same length), got {x.size} and {y.size}")
    if x.size < 2:
        raise ValueError("a paired test needs at least 2 pairs")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("a and b must be finite")
    d = x - y
    if np.all(d == 0):
        raise ValueError("all paired differences are zero: the two sets of scores are identical")
    h0 = f"no difference between the {what} of {names[0]} and {names[1]}"
    h1 = {
        "two-sided": f"a difference between the {what} of {names[0]} and {names[1]}",
        "greater": f"a higher {what} for {names[0]} than for {names[1]}",
        "less": f"a lower {what} for {names[0]} than for {names[1]}",
    }[alternative]
    if method == "t":
        res = sps.ttest_rel(x, y, alternative=alternative)
        ci = res.confidence_interval(confidence)
        sd = d.std(ddof=1)
        return TestResult(
            statistic=float(res.statistic),
            p_value=float(res.pvalue),
            method="paired t test",
            alternative=alternative,
            n=int(d.size),
            effect_size=float(d.mean() / sd) if sd > 0 else math.nan,
            ci=(float(ci.low), float(ci.high)),
            confidence=confidence,
            null_value=0.0,
            estimate=float(d.mean()),
            h0=h0,
            h1=h1,
            details={
                "df": int(d.size - 1),
                "mean_a": float(x.mean()),
                "mean_b": float(y.mean()),
                "effect_size_name": "d_z",
            },
        )
    if method == "wilcoxon":
        nz = d[d != 0]
        res = sps.wilcoxon(x, y, alternative=alternative, zero_method="wilcox")
        ranks = sps.rankdata(np.abs(nz))
        w_plus, w_minus = float(ranks[nz > 0].sum()), float(ranks[nz < 0].sum())
        walsh = (d[:, None] + d[None, :])[np.triu_indices(d.size)] / 2
        return TestResult(
            statistic=float(res.statistic),
            p_value=float(res.pvalue),
            method="Wilcoxon signed-rank test (paired)",
            alternative=alternative,
            n=int(nz.size),
            effect_size=(w_plus - w_minus) / (w_plus + w_minus),
            null_value=0.0,
            estimate=float(np.median(walsh)),
            h0=h0,
            h1=h1,
            details={
                "w_plus": w_plus,
                "w_minus": w_minus,
                "n_zero_differences_dropped": int(d.size - nz.size),
                "median_a": float(np.median(x)),
                "median_b": float(np.median(y)),
                "estimate_name": "Hodges-Lehmann median difference",
                "effect_size_name": "matched-pairs rank-biserial correlation",
            },
        )
    raise ValueError(f"method must be 'wilcoxon' or 't', got {method!r}")


def _one_sided_drop(
    before: np.ndarray, after: np.ndarray, names: tuple[str, str], what: str
) -> TestResult | None:
    """Wilcoxon test of H1: ``before`` > ``after``; None when it cannot be computed
    (fewer than 2 or all equal)."""
    if before.size < 2 or np.all(before == after):
        return None
    return paired_difference_test(
        before, after, method="wilcoxon", alternative="greater", names=names, what=what
    )


def compare_tbe(
    before: pd.DataFrame,
    after: pd.DataFrame,
    *,
    names: tuple[str, str] = ("before", "after"),
    min_professions: int = 5,
) -> pd.DataFrame:
    r"""Per TBD category: does the template bias shrink from model ``before`` to model ``after``?

    ``before`` and ``after`` are per-sentence PPD tables of the same instances
    (:func:`pronoun_probability_difference`).  Per category: the number of professions and
    sentences, mean APPD before and after, mean :math:`|\mathrm{APPD}|` before and after, and two
    one-sided Wilcoxon signed-rank tests of H1 "smaller bias after" (:func:`paired_difference_test`):

    * ``p_sentences``: on :math:`|\mathrm{PPD}|` per sentence (template x profession), the
      paired unit of the TBE; sentences of one profession share its word and are not
      independent, so this p-value is optimistic;
    * ``p_professions``: on :math:`|\mathrm{APPD}|` per profession, the conservative unit; with
      fewer than ``min_professions`` professions it is left empty (NaN): an exact one-sided
      test needs 5 professions to reach p < 0.05 and 7 to reach p < 0.01.

    A last row ``all occupations`` pools the categories whose items have no expected sign
    (the ordinary professions).  Seed 002 compares before/after bars by eye (Figs. 8-9, 14-19);
    the tests are biaskit's.
    """
    keys = ["category", "profession", "sentence"]
    for name, t in (("before", before), ("after", after)):
        missing = {*keys, "ppd"} - set(t.columns)
        if missing:
            raise ValueError(f"{name} lacks the column(s) {sorted(missing)}")
    m = before.merge(after[[*keys, "ppd"]], on=keys, suffixes=("_before", "_after"), validate="one_to_one")
    if len(m) != len(before) or len(m) != len(after):
        raise ValueError(
            f"before ({len(before)} rows) and after ({len(after)} rows) must hold the same sentences; "
            f"{len(m)} match"
        )
    if "expected_sign" not in m.columns:
        m["expected_sign"] = 0
    groups = [(str(c), g) for c, g in m.groupby("category", sort=False)]
    ordinary = m[m["expected_sign"] == 0]
    if ordinary["category"].nunique() > 1:
        groups.append(("all occupations", ordinary))
    rows = []
    for cat, g in groups:
        per = g.groupby("profession", sort=False)[["ppd_before", "ppd_after"]].mean()
        row: dict[str, Any] = {
            "category": cat,
            "n_professions": len(per),
            "n_sentences": len(g),
            "appd_before": float(per["ppd_before"].mean()),
            "appd_after": float(per["ppd_after"].mean()),
            "abs_appd_before": float(per["ppd_before"].abs().mean()),
            "abs_appd_after": float(per["ppd_after"].abs().mean()),
        }
        t_s = _one_sided_drop(
            g["ppd_before"].abs().to_numpy(), g["ppd_after"].abs().to_numpy(), names, "|PPD|"
        )
        row["p_sentences"] = t_s.p_value if t_s else math.nan
        row["effect_sentences"] = t_s.effect_size if t_s else math.nan
        t_p = (
            _one_sided_drop(
                per["ppd_before"].abs().to_numpy(), per["ppd_after"].abs().to_numpy(), names, "|APPD|"
            )
            if len(per) >= min_professions
            else None
        )
        row["p_professions"] = t_p.p_value if t_p else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def compare_sbe(
    before: pd.DataFrame,
    after: pd.DataFrame,
    *,
    names: tuple[str, str] = ("before", "after"),
    category: str = "category",
    combined: str | None = "combined",
) -> pd.DataFrame:
    """Per category (and combined): ASLD of two models on the same pairs, with a one-sided paired test.

    ``before`` and ``after`` are :func:`score_sentence_pairs` outputs for the same pairs in
    the same order.  Columns: ``n_pairs``, ``asld_before``, ``asld_after``, ``change``
    (after - before), ``p`` and ``effect_size`` of the Wilcoxon signed-rank test of H1
    "smaller SLD after" (:func:`paired_difference_test`; the matched-pairs rank-biserial
    correlation).  The thesis's Table 4 compares ASLDs without a test.
    """
    for name, t in (("before", before), ("after", after)):
        if category not in t.columns or "sld" not in t.columns:
            raise ValueError(f"{name} needs the columns {category!r} and 'sld' (score_sentence_pairs output)")
    if len(before) != len(after) or not np.array_equal(
        before[category].to_numpy(), after[category].to_numpy()
    ):
        raise ValueError("before and after must score the same pairs in the same order")
    for col in ("sent_stereo", "sent_anti"):
        if col in before.columns and col in after.columns and not before[col].equals(after[col]):
            raise ValueError(f"before and after differ in {col!r}: not the same pairs")
    b, a = before["sld"].to_numpy(float), after["sld"].to_numpy(float)
    cats = before[category].astype(str).to_numpy()
    groups = [(c, cats == c) for c in dict.fromkeys(cats)]
    if combined and len(groups) > 1:
        groups.append((combined, np.ones(cats.size, dtype=bool)))
    rows = []
    for c, sel in groups:
        t = _one_sided_drop(b[sel], a[sel], names, "SLD")
        rows.append(
            {
                category: c,
                "n_pairs": int(sel.sum()),
                "asld_before": float(b[sel].mean()),
                "asld_after": float(a[sel].mean()),
                "change": float(a[sel].mean() - b[sel].mean()),
                "p": t.p_value if t else math.nan,
                "effect_size": t.effect_size if t else math.nan,
            }
        )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- the registry
def control_blank_values(
    call: CalibrationCall, key: str, kind: Kind, templates: Sequence[str], unit: str
) -> MetricValues:
    """Calibration measure ``key``'s values on the control blanks of ``templates`` (one a ``unit``):
    P(he) - P(she) at the ``[MASK]`` of a masked model (:func:`mask_fill_probabilities`), or as the next
    word after the text before it for a causal model (:func:`causal_pronoun_probabilities`)."""
    from biaskit.metrics.controls import control_blanks

    blanks = control_blanks(call.targets, templates)
    if call.kind == "causal":
        if any(not t[: t.find("[MASK]")].strip() for t in blanks["sentence"]):
            raise ValueError("a causal next-word blank needs text before the [MASK]")
        probs = causal_pronoun_probabilities(call.model, blanks, [("he", "she")] * len(blanks))
    else:
        probs = mask_fill_probabilities(
            call.model, blanks["sentence"].tolist(), [["he", "she"]] * len(blanks)
        )
    return MetricValues(key, kind, blanks["target"].to_numpy(object), probs[:, 0] - probs[:, 1], unit=unit)


def _tbe_values(call: CalibrationCall) -> MetricValues:
    """The calibration's values: PPD = P(he) - P(she) in Barza-style templates ("[MASK] is a {t}.")."""
    from biaskit.metrics.controls import TBE_TEMPLATES

    return control_blank_values(call, "barza_tbe", "mean", TBE_TEMPLATES, "template")


def _sld_values(key: str, reading: str) -> Any:
    """The calibration hook of Barza's sentence pairs: the signed likelihood difference of the control
    pairs of :data:`biaskit.metrics.controls.SLD_TEMPLATES` by ``reading`` (sz masked, ll causal)."""

    def values(call: CalibrationCall) -> MetricValues:
        from biaskit.metrics.controls import SLD_TEMPLATES, pair_values

        return pair_values(call, key, "mean", reading, SLD_TEMPLATES)

    return values


def pairs_grid_cell(call: GridCall) -> list[dict[str, Any]]:
    """One cell of a batch grid: Barza's signed SLD test of a CrowS-Pairs dataset's pairs (sent_more
    against sent_less), scored by the options ``barza_pairs_reading`` / ``barza_pairs_causal_reading``."""
    from biaskit.metrics.crows import grid_pair_scores

    more, less, n_skipped = grid_pair_scores(call, call.method)
    row = GridSupport.rows_from_result(sld_test(more, less), targets="sent_more vs sent_less")[0]
    row["note"] = f"pairs not scored (see the log): {n_skipped}" if n_skipped else ""
    return [row]


def claims_templates_dataset(path: str) -> bool:
    """Whether a grid dataset identifier is a template dataset (``tbd:clean``, ``tbd:raw``,
    ``tbd:<file>``)."""
    return path.lower().startswith("tbd:")


def load_templates_dataset(
    path: str, *, sample: int | None = None, random_state: int = 0
) -> tuple[str, pd.DataFrame]:
    """A template dataset of the batch grid (kind ``"templates"``): ``tbd:clean`` / ``tbd:raw``, every
    sentence of Barza's Template-Based Dataset (:func:`build_tbd_instances`, seed 002 section 4.2.1), or
    ``tbd:<file.csv>``, a CSV with a ``sentence`` holding one ``[MASK]``, its ``slot`` (``subject``: he /
    she, ``possessive``: his / her) and a ``profession`` (and optionally a ``category``).  ``sample`` keeps
    that many sentences (``random_state``).  Returns ``("templates", instances)``."""
    from biaskit.core.paths import resolve_user_path

    which = path.split(":", 1)[1]
    if which in ("clean", "raw"):
        inst, lang = build_tbd_instances(which), "en"  # type: ignore[arg-type]
    elif resolve_user_path(which).exists():
        inst, lang = pd.read_csv(resolve_user_path(which)), "?"
        missing = sorted({"sentence", "slot", "profession"} - set(inst.columns))
        if missing:
            raise ValueError(
                f"{which}: a template file needs the columns sentence, slot, profession (missing {missing})"
            )
        bad = [i + 2 for i, t in enumerate(inst["sentence"].astype(str)) if t.count("[MASK]") != 1]
        if bad:
            raise ValueError(f"{which}: lines {bad[:10]} do not hold exactly one [MASK] in their sentence")
    else:
        raise ValueError(f"unknown template dataset {path!r}; use tbd:clean, tbd:raw or tbd:<file.csv>")
    if sample is not None and sample < len(inst):
        inst = inst.sample(n=sample, random_state=random_state).sort_index()
        logger.info("%s: random sample of %d sentences (random_state=%d)", path, sample, random_state)
    inst = inst.reset_index(drop=True)
    inst.attrs["language"] = lang
    return "templates", inst


def _toy_templates() -> pd.DataFrame:
    """Two gender-neutral templates per toy profession (a dataset of kind ``"templates"``)."""
    from biaskit.metrics.toys import TOY_PROFESSIONS

    rows = [
        {"category": "toy", "profession": p, "slot": slot, "sentence": text.format(p=p)}
        for p in TOY_PROFESSIONS
        for slot, text in (("subject", "The {p} said that [MASK] likes music."),
                           ("possessive", "The {p} likes [MASK] music."))
    ]  # fmt: skip
    df = pd.DataFrame(rows)
    df.attrs["language"] = "en"
    return df


def templates_grid_cell(call: GridCall) -> list[dict[str, Any]]:
    """One cell of a batch grid: Barza's PPD = P(he) - P(she) (his / her for a possessive slot) of every
    template sentence (:func:`pronoun_probability_difference`), tested with :func:`ppd_test` over the unit
    ``barza_templates_unit`` (``profession``: the APPD of each profession, :func:`appd`; ``sentence``: every
    PPD), for all sentences and within each category.  The row's ``score`` is the mean of the unit's
    values."""
    table = pronoun_probability_difference(call.model, call.data, batch_size=int(call.options["batch_size"]))
    if "category" not in table:
        table = table.assign(category="(none)")
    by_profession = call.option("unit") == "profession"
    rows = []
    for cat in ["all", *dict.fromkeys(table["category"])]:
        sub = table if cat == "all" else table[table["category"] == cat]
        values = appd(sub, by=("profession",)) if by_profession else sub
        if len(values) < 2:
            continue
        res = ppd_test(values)
        rows.append(GridSupport.rows_from_result(res, bias_type=cat, score=float(res.estimate))[0])
    return rows


def _templates_example() -> TestResult:
    """PPD = P(he) - P(she) at the blank of "[MASK] is a {profession}." on the toy masked model."""
    from biaskit.metrics.toys import TOY_PROFESSIONS, toy_masked_lm

    probs = mask_fill_probabilities(
        toy_masked_lm(),
        [f"[MASK] is a {p}." for p in TOY_PROFESSIONS],
        [["he", "she"]] * len(TOY_PROFESSIONS),
    )
    return ppd_test(probs[:, 0] - probs[:, 1])


def _pairs_example() -> TestResult:
    """The signed SLD of the toy pairs (Salazar's PLL) on the toy masked model."""
    from biaskit.metrics.toys import toy_scores

    more, less = toy_scores("sz")
    return sld_test(more, less)


register_dataset_kind(
    "templates",
    "fill-in template sentences with one [MASK] pronoun slot (sentence, slot, profession[, category])",
    example=_toy_templates,
)
register_dataset_loader(
    name="templates",
    kinds=("templates",),
    claims=claims_templates_dataset,
    load=load_templates_dataset,
    identifiers="tbd:clean, tbd:raw, or tbd:<file.csv> with sentence, slot, profession",
)
register_metric(
    "barza_templates",
    label="Barza templates (PPD / APPD)",
    family="language models",
    inputs=("templates",),
    model_kinds=("masked",),
    directional=True,
    test="one-sample t test of the mean pronoun probability difference against 0",
    citation="Barza 2023 (template-based evaluation, after Bartl et al. 2020)",
    section="seed 002 section 4.2",
    entry_point=ppd_test,
    summary="P(he) - P(she) at the pronoun of gender-neutral templates, per profession",
    example=_templates_example,
    returns="TestResult (one-sample t test of the mean PPD; per_item values in details); "
    "template_based_evaluation gives the PPD / APPD tables, paired_difference_test compares two models",
    grid=GridSupport(
        "templates",
        templates_grid_cell,
        not_for={
            "static": "the templates are scored by a masked language model's fill-in probabilities",
            "causal": "a causal model cannot read a pronoun before the profession; "
            "pronoun_probability_difference scores the templates whose slot follows it",
        },
        options=(
            Option(
                "unit",
                "profession",
                "the t test's unit: the APPD of each profession (the cautious one) or every sentence's PPD",
                choices=("profession", "sentence"),
            ),
        ),
    ),
    calibration=CalibrationSupport(
        (
            CalibrationMeasure(
                key="barza_tbe",
                label="Barza templates, mean PPD",
                kind="mean",
                model_kind="masked",
                values=_tbe_values,
            ),
        )
    ),
)
register_metric(
    "barza_pairs",
    label="Barza sentence pairs (SLD / ASLD)",
    family="language models",
    inputs=("sentence pairs",),
    model_kinds=("masked", "causal"),
    directional=True,
    test="one-sample t test of the signed likelihood difference against 0",
    citation="Barza 2023 (sentence-based evaluation)",
    section="seed 002 section 4.3",
    entry_point=sld_test,
    grid=GridSupport(
        "crows",
        pairs_grid_cell,
        reading_methods("barza_pairs_reading", "barza_pairs_causal_reading"),
        {"static": "barza_pairs needs a language model"},
        options=reading_options("sz"),
    ),
    summary="(absolute) sentence likelihood difference of gender-swapped sentence pairs",
    example=_pairs_example,
    returns="TestResult (one-sample t test of the mean signed SLD; ASLD and per_pair values in details); "
    "asld gives the float ASLD, asld_confidence_interval and paired_difference_test intervals and tests",
    calibration=CalibrationSupport(
        (
            CalibrationMeasure(
                key="barza_sld",
                label="Barza sentence pairs, mean signed SLD",
                kind="mean",
                model_kind="masked",
                values=_sld_values("barza_sld", "sz"),
            ),
            CalibrationMeasure(
                key="causal_sld",
                label="Barza sentence pairs, causal mean signed LLD",
                kind="mean",
                model_kind="causal",
                values=_sld_values("causal_sld", "ll"),
            ),
        )
    ),
)
