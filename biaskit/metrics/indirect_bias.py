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
  stream (``target_mapping``), as the Hugging Face XLNet example does (:mod:`biaskit.lm.xlnet`).
* Log-softmax in float64 at the read positions; natural log (the base does not change IBS).

**Model-generated bridge** (seed 004 section 3.3.1, the thesis's first, abandoned variant):
:func:`generate_bridge` takes the top-n predictions at the name slot of an S1 sentence for each
target, keeps the name-like ones and merges them per target category; :func:`indirect_bias_generated`
runs Algorithm 3.1 over that bridge.

Where the parts live (this module is the score and its comparisons with the thesis):

=============================================  =============================================================
:mod:`biaskit.data.louis_alexandre`            bundled data: words, templates, rules, published tables
:mod:`biaskit.lm.xlnet`                        :class:`BridgeLM`: a BERT-style or XLNet model read at a mask
:mod:`biaskit.lm.slot_scores`                  per-template log-probabilities, :func:`slot_scores`
:mod:`biaskit.lm.slot_cache`                   their disk cache, resumable call by call
:mod:`biaskit.studies.louis_alexandre_replay`  user study (Figs. 5.1/5.2), checks of the published tables
=============================================  =============================================================
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from biaskit.core.registry import (
    CalibrationCall,
    CalibrationMeasure,
    CalibrationSupport,
    GridCall,
    GridSupport,
    MetricValues,
    Option,
    register_dataset_kind,
    register_dataset_loader,
    register_metric,
)
from biaskit.core.results import TestResult, format_p_value
from biaskit.data.louis_alexandre import (
    FeatureSet,
    TemplateSet,
    dedupe_words,
    feature_set,
    load_louis_alexandre_rules,
    load_louis_alexandre_tables,
    load_louis_alexandre_words,
    template_set,
)
from biaskit.lm.slot_scores import MultiToken, SlotScores, slot_scores
from biaskit.lm.xlnet import BridgeLM

logger = logging.getLogger(__name__)

__all__ = [
    "CATEGORY_LABELS",
    "GENDERED_OCCUPATIONS",
    "GeneratedBridge",
    "IndirectBiasResult",
    "bolukbasi_rank_comparison",
    "bolukbasi_rank_summary",
    "claims_bridge_dataset",
    "direct_indirect_agreement",
    "gender_rank_table",
    "generate_bridge",
    "grid_cell",
    "ibs_from_bridge_scores",
    "indirect_bias",
    "indirect_bias_generated",
    "indirect_bias_scores",
    "indirect_name_values",
    "load_bridge_dataset",
    "padding_text_ibs",
    "padding_text_ttests",
]


# =============================================================================================
# the indirect score
# =============================================================================================
def ibs_from_bridge_scores(bs1: pd.DataFrame, bs2: pd.DataFrame, *, min_names: int = 3) -> pd.DataFrame:
    r"""Pearson correlation over the shared names of every target row of ``bs1`` with every feature column of
    ``bs2``.

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
        """One row per bridge name: ``x`` = BS1(target, name), ``y`` = BS2(name, feature)
        (the indirect scatterplot)."""
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
        """Pearson correlation of direct and indirect scores over all (target, feature) pairs
        (Tables 3.5/3.6)."""
        from biaskit.core.stats import correlation

        if self.direct is None:
            raise ValueError("no direct scores were computed (direct=False)")
        t = self.tidy().dropna(subset=["ibs", "direct"])
        return correlation(t["direct"].to_numpy(), t["ibs"].to_numpy(), method="pearson")

    def summary(self, alpha: float = 0.05) -> str:
        """The scores in plain words: what IBS measures, its range over the pairs, the strongest links and,
        with direct scores, whether direct and indirect scores agree (Pearson test at level ``alpha``).

        A single IBS comes with no statistical test (the thesis reports the scores alone); the line on
        agreement uses :meth:`direct_indirect_correlation`.  The per-pair values stay in :attr:`ibs`
        (:meth:`tidy` as a long table) and the per-name values in :attr:`bs1` / :attr:`bs2`.
        """
        n_bridge = int(self.details.get("n_bridge", len(self.bridge)))
        lines = [
            f"Indirect bias score (IBS) of {self.target_category} words towards {self.feature_category} "
            f"words through {n_bridge:,} first names ({self.model})",
            "  each score is the correlation, over the names, between how strongly the model links a name to "
            "the target word and how strongly it links the same name to the feature word: from -1 to 1, "
            "0 = no indirect link, positive = the target and the feature attract the same names, "
            "negative = opposite names",
        ]
        long = self.tidy().dropna(subset=["ibs"])
        n_nan = int(self.ibs.size - len(long))
        if long.empty:
            lines.append(f"  no score could be computed ({n_nan} undefined: constant scores over the names)")
            return "\n".join(lines)
        v = long["ibs"].to_numpy(dtype=float)
        lines.append(
            f"  {len(long):,} scores ({self.ibs.shape[0]} targets x {self.ibs.shape[1]} features): "
            f"mean {v.mean():.3f}, from {v.min():.3f} to {v.max():.3f}"
            + (f"; {n_nan} undefined (constant scores over the names)" if n_nan else "")
        )
        top, low = long.loc[long["ibs"].idxmax()], long.loc[long["ibs"].idxmin()]
        lines.append(
            f"  strongest positive link: {top['target']} - {top['feature']} (IBS = {top['ibs']:.3f})"
        )
        lines.append(
            f"  strongest negative link: {low['target']} - {low['feature']} (IBS = {low['ibs']:.3f})"
        )
        lines.append("  no statistical test of a single score: each IBS is a descriptive number")
        if self.direct is not None:
            try:
                r = self.direct_indirect_correlation()
            except ValueError as exc:
                lines.append(f"  direct and indirect scores: no correlation computed ({exc})")
            else:
                verdict = (
                    "evidence that the direct and indirect scores are related (significant correlation)"
                    if r.p_value is not None and r.p_value < alpha
                    else "no significant correlation between the direct and indirect scores"
                )
                lines.append(
                    f"  direct and indirect scores over {r.n} pairs: Pearson r = {r.statistic:.3f}, "
                    f"p-value = {format_p_value(r.p_value)} -> at alpha = {alpha}: {verdict}"
                )
        return "\n".join(lines)


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
    r"""IBS of every target with every feature through the bridge ``names`` (seed 004 Algorithm 3.1),
    vectorised.

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
    unique_names = dedupe_words(list(names), "bridge names")
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
    r"""IBS (and direct scores) between two categories of seed 004 with the bundled words and templates.

    .. math:: IBS(t, f) = \mathrm{corr}_{n \in names}\big(BS_1(t, n), BS_2(n, f)\big)

    with :math:`BS_1` the model's association of a target with each first name (the target x name
    templates) and :math:`BS_2` that of each name with the feature (Louis-Alexandre 2022, seed 004
    section 3.2, Algorithm 3.1; :func:`ibs_from_bridge_scores`).  ``target_category`` in beverage / country /
    occupation / sport; ``feature_category`` any other category (trait, gender, ...).  ``targets`` /
    ``features`` / ``names`` default to the full lists (99 occupations, 779 names, ...).  ``max_templates``
    keeps the first templates of each set (quick runs).

    Examples
    --------
    >>> from biaskit.lm.xlnet import BridgeLM
    >>> from biaskit.metrics.toys import TOY_NAMES, TOY_PROFESSIONS, toy_masked_lm
    >>> result = indirect_bias(BridgeLM(toy_masked_lm()), "occupation", "gender",
    ...                        targets=list(TOY_PROFESSIONS), features=["male", "female", "man", "woman"],
    ...                        names=list(TOY_NAMES), direct=False, max_templates=2, cache=False,
    ...                        progress=False)
    >>> result.ibs.shape
    (8, 4)
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
    tgts = dedupe_words(list(targets), f"targets of the generated bridge ({ts.key})")
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
    """IBS (seed 004 Algorithm 3.1) over a bridge the model generated (:func:`generate_bridge`), not the 779
    names.

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
    """Female / male gender score (mean over the gender words), ranks and
    Diff. Rank = Female Rank - Male Rank.

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


#: Occupations of the 99 whose word itself names a gender (biaskit's list; the thesis underlines the
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
    """Female / Male / Diff. Rank of Bolukbasi's occupations, this run beside the thesis
    (Tables 3.7/3.8, A.5-A.8).

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
    r"""Student t-tests between the IBS sets of every pair of padding texts
    (seed 004 section 3.3.3, Table 3.2).

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


def indirect_name_values(lm, targets: Sequence[str], *, progress: bool = False) -> MetricValues:
    r"""Louis-Alexandre's indirect bias score (seed 004, section 3.2) of each target, through first names.

    The bridge is the 40 name pairs of the bundled CDS list
    (:func:`biaskit.data.counterfactual.load_gender_lexicon`), whose gender the control corpora plant along
    with the pronouns: in a planted corpus, a profession planted "male" co-occurs with the male names as well.
    With seed 004's occupation-name (S1) and name-gender (S2) templates,
    :math:`IBS(t, f) = \mathrm{corr}_{names}(BS_1(t, \cdot), BS_2(\cdot, f))` (:func:`indirect_bias`), and the
    value of target ``t`` is
    :math:`\overline{IBS}(t, \text{male words}) - \overline{IBS}(t, \text{female words})` over the words of
    :data:`biaskit.metrics.controls.IBS_GENDER_WORDS` that are single tokens of the model (the others are
    logged and dropped).  Names that are not single tokens leave the bridge (logged).
    """
    from biaskit.data.counterfactual import load_gender_lexicon
    from biaskit.lm.xlnet import BridgeLM
    from biaskit.metrics.controls import IBS_GENDER_WORDS

    lex = load_gender_lexicon()
    names = [*lex.name_to_female, *lex.name_to_male]  # male names, then female names
    bridge = BridgeLM(lm, batch_size=256)
    res = indirect_bias(bridge, "occupation", "gender", targets=list(targets), names=names,
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


def _calibration_values(call: CalibrationCall) -> MetricValues:
    """The calibration's values on a masked control: :func:`indirect_name_values` of the targets."""
    return indirect_name_values(call.model, call.targets, progress=call.progress)


def claims_bridge_dataset(path: str) -> bool:
    """Whether a grid dataset identifier names two categories of seed 004
    (``louis-alexandre:occupation/gender``)."""
    return path.lower().startswith("louis-alexandre:")


def load_bridge_dataset(
    path: str, *, sample: int | None = None, random_state: int = 0
) -> tuple[str, dict[str, Any]]:
    """A dataset of the batch grid of kind ``"bridge"``: ``louis-alexandre:<target>/<feature>``, a target
    category (beverage, country, occupation, sport) and a feature category of seed 004's bundled words
    (Louis-Alexandre 2022, section 3.2), e.g. ``louis-alexandre:occupation/gender``.  Every target, feature
    and first name of the lists is used; ``sample`` keeps that many targets (``random_state``)."""
    cats = path.split(":", 1)[1]
    target, _, feature = cats.partition("/")
    words = load_louis_alexandre_words()
    targets_of = load_louis_alexandre_rules()["target_categories"]
    if target not in targets_of or not feature or feature in (target, "name") or feature not in words:
        raise ValueError(
            f"unknown bridge dataset {path!r}: use louis-alexandre:<target>/<feature> with a target category "
            f"of {list(targets_of)} and another feature category of {sorted(set(words) - {'name'})}"
        )
    targets: list[str] | None = None
    if sample is not None and sample < len(words[target]):
        pick = np.sort(
            np.random.default_rng(random_state).choice(len(words[target]), size=sample, replace=False)
        )
        targets = [words[target][i] for i in pick]
    data = {
        "target_category": target,
        "feature_category": feature,
        "targets": targets,
        "features": None,
        "names": None,
    }
    return "bridge", data


def _toy_bridge() -> dict[str, Any]:
    """The toy professions against gender words through the toy first names (a dataset of kind
    ``"bridge"``)."""
    from biaskit.metrics.toys import TOY_NAMES, TOY_PROFESSIONS

    return {
        "target_category": "occupation", "feature_category": "gender", "targets": list(TOY_PROFESSIONS),
        "features": ["male", "female", "man", "woman", "boy", "girl"], "names": list(TOY_NAMES),
    }  # fmt: skip


def grid_cell(call: GridCall) -> list[dict[str, Any]]:
    """One cell of a batch grid: the indirect scores IBS(t, f) of every target through the first names
    (:func:`indirect_bias`, seed 004 section 3.2), one row per feature with the mean IBS over the targets as
    ``score`` and ``n`` targets.  The study reports the scores without a test, so ``p_value`` is empty;
    ``indirect_bias_max_templates`` keeps the first templates of each set (all by default)."""
    d = call.data
    result = indirect_bias(
        BridgeLM(call.model, batch_size=int(call.options["batch_size"])), d["target_category"],
        d["feature_category"], targets=d.get("targets"), features=d.get("features"), names=d.get("names"),
        direct=False, max_templates=call.option("max_templates"), cache=bool(call.options["crows_cache"]),
        progress=False,
    )  # fmt: skip
    rows = []
    for feature in result.ibs.columns:
        col = result.ibs[feature].dropna()
        rows.append(
            {
                "bias_type": str(feature), "n": int(col.size), "score": float(col.mean()),
                "statistic": float(col.mean()), "p_value": float("nan"), "effect_size": float("nan"),
                "permutation": "none (the study reports scores)",
                "targets": d["target_category"], "attributes": d["feature_category"],
            }
        )  # fmt: skip
    return rows


def _example() -> IndirectBiasResult:
    """IBS of the toy professions towards gender words through six toy first names, toy masked model."""
    from biaskit.lm.xlnet import BridgeLM
    from biaskit.metrics.toys import TOY_NAMES, TOY_PROFESSIONS, toy_masked_lm

    return indirect_bias(
        BridgeLM(toy_masked_lm()), "occupation", "gender", targets=list(TOY_PROFESSIONS),
        features=["male", "female", "man", "woman", "boy", "girl"], names=list(TOY_NAMES), direct=False,
        max_templates=2, cache=False, progress=False,
    )  # fmt: skip


# --------------------------------------------------------------------------- the registry
register_dataset_kind(
    "bridge",
    "a target and a feature category of seed 004's words, linked through first names",
    example=_toy_bridge,
)
register_dataset_loader(
    name="louis-alexandre",
    kinds=("bridge",),
    claims=claims_bridge_dataset,
    load=load_bridge_dataset,
    identifiers="louis-alexandre:<target>/<feature>, e.g. louis-alexandre:occupation/gender",
)
register_metric(
    "indirect_bias",
    label="Indirect bias through names (IBS)",
    family="language models",
    inputs=("names", "templates", "word sets"),
    model_kinds=("masked", "causal"),
    directional=True,
    test="permutation test over the professions (calibration); the study reports the scores without a test",
    citation="Louis-Alexandre 2022",
    section="seed 004 section 3.2",
    entry_point=indirect_bias,
    summary="association of a feature with a gender through the first names the model links to both",
    example=_example,
    returns="IndirectBiasResult (ibs, direct, per-name bs1 / bs2; summary())",
    grid=GridSupport(
        "bridge",
        grid_cell,
        not_for={
            "static": "the bridge reads a language model's probabilities at a mask",
            "causal": "the bridge reads a masked model's probabilities at a mask (BridgeLM)",
        },
        options=(
            Option(
                "max_templates",
                None,
                "keep the first templates of each set (quick runs); all by default",
                types=(int,),
            ),
        ),
    ),
    calibration=CalibrationSupport(
        (
            CalibrationMeasure(
                key="indirect_names",
                label="Indirect score through names (IBS), mean difference",
                kind="groups",
                model_kind="masked",
                values=_calibration_values,
            ),
        )
    ),
)
