r"""Log Probability Bias Score (LPBS) of Kurita et al. (2019) for masked language models.

Kurita, Vyas, Pareek, Black & Tsvetkov (2019), "Measuring Bias in Contextualized Word
Representations" (GeBNLP); seed 001 (Puttick et al. 2024, the BIAS Detection Framework)
section 4.3, equations (3)-(6).  For a template such as ``"TARGET is ATTRIBUTE."``, a target
word ``x`` (*he*) and an attribute word ``a`` (*programmer*)::

    p_tgt(x | a) = P([MASK] = x | "[MASK] is programmer.")              (target masked, attribute filled)
    p_prior(x)   = P([MASK]_1 = x | "[MASK]_1 is [MASK]_2.")             (attribute masked too)
    asc(x, a)    = log( p_tgt(x | a) / p_prior(x) )                      (increased log probability)
    s_log(a, X, Y) = mean_{x in X} asc(x, a) - mean_{y in Y} asc(y, a)
    es_log = (mean_{a in A} s_log(a) - mean_{b in B} s_log(b)) / std_{w in A u B} s_log(w)   (6)

the standard deviation running over the **attribute** words (not the targets as in WEAT; seed
001 footnote 7).  Significance: a **two-sided** permutation test over the partitions of
``A u B`` into sets of sizes |A| and |B|, on the difference of means (Kurita et al.), computed
with WEAT's exact / sampled partition machinery
(:func:`biaskit.metrics.weat.permutation_pvalue`) on the centred scores
``s_log(w) - mean_{A u B} s_log`` -- centring makes the sum statistic it enumerates a multiple
of the difference of means, so ``|.|`` is the same two-sided test even when |A| != |B|.
``statistic`` is the WEAT-style sum :math:`\sum_a s_{log}(a) - \sum_b s_{log}(b)`,
``estimate`` the difference of means.  Scores are averaged over every (target, template) pair
of a set, i.e. over the targets and the templates.

Templates.  Any string with one ``TARGET`` and one ``ATTRIBUTE`` placeholder: Kurita's
sentences (``"TARGET is ATTRIBUTE."``, ``"TARGET likes ATTRIBUTE."``) or the framework's
bare ``"TARGET ATTRIBUTE"`` (:data:`BARE_TEMPLATE`), which it uses for languages where
grammatical templates are hard to write (seed 001 section 4.3, last paragraph).  The
framework's JSON files (``data/bfh-bias/en/LPBS``) give targets and templates per grammatical
number (``"singular"``, ``"plural"``); each target is only combined with the templates of its
number.  The framework's code uses the singular ones only; ``groups=("singular",)`` does the same.

Implementation decisions (explicit parameters of :class:`LPBS`):

* **Positions, not strings.**  Each sentence is tokenised once with the target and the
  attribute filled in; their sub-tokens are found with the tokenizer's offset mapping and
  replaced by ``[MASK]`` in the id sequence.  So ``p_prior`` is read at the *target's* own
  mask, as in equation (4).  (Kurita et al.'s replication notebook reads the prior at the other
  mask when the target comes first -- ``use_last_mask=gender_comes_first`` -- and the
  framework's code reads it at the first mask; both agree with equation (4) only in some
  templates.)
* **Multi-sub-token targets** (``multi_token``): Kurita et al. only used single-token targets.
  ``"masks"`` (default) masks each of the K sub-tokens and uses
  :math:`\log p = \sum_{k} \log P([MASK]_k = s_k \mid \cdot)` (all masks present at once, in both
  ``p_tgt`` and ``p_prior``, so the ratio compares like with like); ``"single"`` reproduces the
  framework's ``pred_prob_for_mask``: one ``[MASK]`` and the product of the K sub-token
  probabilities at it; ``"raise"`` refuses such targets.
* **The masked attribute in p_prior** (``prior_attribute_masks``): ``"one"`` (default) replaces
  the attribute by a single ``[MASK]`` whatever its length, as Kurita et al. and the framework
  do; ``"match"`` uses one ``[MASK]`` per attribute sub-token.
* **Effect size SD**: ``ddof=1`` (pandas ``.std()``, as Kurita et al.'s ``get_effect_size``);
  the framework's code uses ``np.std`` (``ddof=0``).
* **Lower-casing**: the text pieces (never the mask tokens) are lower-cased when the
  :class:`~biaskit.lm.MaskedLM` says so (uncased models).

Batching: every distinct masked sequence is scored once (priors are shared by all attributes),
``batch_size`` sequences per forward pass with padding and an attention mask.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from biaskit.core.paths import data_dir
from biaskit.core.permutation import ExactMode
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
from biaskit.core.results import Alternative, TestResult
from biaskit.metrics.weat import run_permutation

logger = logging.getLogger(__name__)

__all__ = [
    "BARE_TEMPLATE",
    "LPBS",
    "LPBSQuery",
    "available_lpbs_tests",
    "load_lpbs",
    "lpbs_effect_size",
]

#: The framework's template for languages without grammatical templates (seed 001 section 4.3).
BARE_TEMPLATE = "TARGET ATTRIBUTE"
TARGET, ATTRIBUTE = "TARGET", "ATTRIBUTE"
MultiToken = Literal["masks", "single", "raise"]
PriorMasks = Literal["one", "match"]


def _as_groups(value: Any, what: str) -> dict[str, tuple[str, ...]]:
    if isinstance(value, str):
        raise TypeError(f"{what}: expected a list or a {{group: list}} mapping, got the string {value!r}")
    if isinstance(value, Mapping):
        out = {str(k): tuple(str(w).strip() for w in v if str(w).strip()) for k, v in value.items()}
    else:
        out = {"all": tuple(str(w).strip() for w in value if str(w).strip())}
    if not any(out.values()):
        raise ValueError(f"{what} is empty")
    return out


@dataclass(frozen=True)
class LPBSQuery:
    """Targets X, Y and attributes A, B with templates (seed 001 section 4.3).

    ``X`` / ``Y`` map a group name (grammatical number: ``"singular"``, ``"plural"``; or
    ``"all"``) to target words; ``templates`` maps the same group names to templates with one
    ``TARGET`` and one ``ATTRIBUTE`` placeholder.  Build one with :meth:`from_lists` or
    :func:`load_lpbs`.
    """

    X: Mapping[str, tuple[str, ...]]
    Y: Mapping[str, tuple[str, ...]]
    A: tuple[str, ...]
    B: tuple[str, ...]
    templates: Mapping[str, tuple[str, ...]]
    names: tuple[str, str, str, str] = ("X", "Y", "A", "B")
    name: str = ""
    language: str = "en"

    def __post_init__(self) -> None:
        for g, ts in self.templates.items():
            for t in ts:
                if t.count(TARGET) != 1 or t.count(ATTRIBUTE) != 1:
                    raise ValueError(
                        f"template {t!r} (group {g!r}) needs exactly one {TARGET} and one {ATTRIBUTE}"
                    )
        for role in ("X", "Y"):
            missing = [g for g, ws in getattr(self, role).items() if ws and g not in self.templates]
            if missing:
                raise ValueError(
                    f"targets {role} of group(s) {missing} have no templates ({sorted(self.templates)})"
                )
        if not self.A or not self.B:
            raise ValueError("attribute sets A and B need at least one word each")

    @classmethod
    def from_lists(
        cls,
        X: Sequence[str] | Mapping[str, Sequence[str]],
        Y: Sequence[str] | Mapping[str, Sequence[str]],
        A: Sequence[str],
        B: Sequence[str],
        templates: str | Sequence[str] | Mapping[str, Sequence[str]] = BARE_TEMPLATE,
        *,
        names: Sequence[str] = ("X", "Y", "A", "B"),
        name: str = "",
        language: str = "en",
    ) -> LPBSQuery:
        """Plain lists (one group ``"all"``) or per-number mappings, as in the framework's files."""
        xs, ys = _as_groups(X, "targets X"), _as_groups(Y, "targets Y")
        if isinstance(templates, str):
            templates = [templates]
        ts = (
            {str(k): tuple(v) for k, v in templates.items()}
            if isinstance(templates, Mapping)
            else {g: tuple(templates) for g in set(xs) | set(ys)}
        )
        a = tuple(w.strip() for w in A if w.strip())
        b = tuple(w.strip() for w in B if w.strip())
        return cls(xs, ys, a, b, ts, tuple(names), name, language)  # type: ignore[arg-type]

    @property
    def label(self) -> str:
        x, y, a, b = self.names
        return f"{x} vs {y} | {a} vs {b}"


def available_lpbs_tests() -> dict[str, str]:
    """Bundled LPBS test identifiers (``bfh:en/LPBS/LPBS_7``, ``es:seat_math_arts/lpbs`` ...)."""
    root = data_dir() / "bfh-bias"
    from biaskit.core.paths import wordlists_dir

    out = {
        f"bfh:{p.relative_to(root).with_suffix('').as_posix()}": "LPBS, BIAS Detection Framework"
        for p in sorted(root.glob("*/LPBS/*.jsonl"))
    }
    for p in sorted((wordlists_dir() / "es").glob("seat_*.json")):
        out[f"es:{p.stem}/lpbs"] = "Spanish LPBS with the bare template 'TARGET ATTRIBUTE' (new)"
    return out


_LPBS_NAMES = {
    "LPBS_1": ("Flowers", "Insects", "Pleasant", "Unpleasant"),
    "LPBS_7": ("Male", "Female", "Math", "Arts"),
}


def load_lpbs(spec: str | Path, *, language: str | None = None) -> LPBSQuery:
    """Load a framework LPBS file (``targ1``, ``targ2``, ``attr1``, ``attr2``, ``templates``).

    ``spec`` is a bundled identifier (``"bfh:en/LPBS/LPBS_7"``), a Spanish SEAT set turned into
    an LPBS test with the bare template (``"es:seat_math_arts/lpbs"``, see :func:`_spanish_lpbs`)
    or a path.  Note the roles:
    in the framework's files ``targ1`` / ``targ2`` are the words that fill ``TARGET`` (e.g.
    *he* / *she*) and ``attr1`` / ``attr2`` fill ``ATTRIBUTE`` (*math* / *poetry*).
    """
    s = str(spec)
    if s.startswith("es:"):
        return _spanish_lpbs(s)
    if s.startswith("bfh:"):
        path = data_dir() / "bfh-bias" / f"{s[4:]}.jsonl"
        language = language or s[4:].split("/", 1)[0]
    else:
        path = Path(s)
    if not path.exists():
        raise FileNotFoundError(f"LPBS file not found: {path}; bundled: {sorted(available_lpbs_tests())}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        q = LPBSQuery.from_lists(
            data["targ1"],
            data["targ2"],
            data["attr1"],
            data["attr2"],
            data.get("templates", BARE_TEMPLATE),
            names=_LPBS_NAMES.get(path.stem, ("X", "Y", "A", "B")),
            name=s if s.startswith("bfh:") else path.stem,
            language=language or "en",
        )
    except (KeyError, TypeError, json.JSONDecodeError) as exc:
        raise ValueError(
            f"{path}: not an LPBS file with targ1, targ2, attr1, attr2 (and templates): {exc}"
        ) from exc
    return q


def _spanish_lpbs(spec: str) -> LPBSQuery:
    """LPBS from a Spanish SEAT set (``es:<stem>`` or ``es:<stem>/lpbs``) with the bare template.

    As in the framework's ``LPBS_7`` (TARGET = *he / she*, ATTRIBUTE = *math / poetry*), the
    SEAT *attribute* sets (e.g. ``espacio_m`` / ``espacio_f``) fill ``TARGET`` and the SEAT
    *target* sets (``math 1`` / ``arts 1``) fill ``ATTRIBUTE``; the template is
    :data:`BARE_TEMPLATE` ("TARGET ATTRIBUTE"), the framework's choice for languages where
    grammatical templates are hard to write (seed 001 section 4.3).  New in biaskit.
    """
    from biaskit.core.paths import wordlists_dir

    stem = spec[3:].removesuffix("/lpbs")
    path = wordlists_dir() / "es" / f"{stem}.json"
    if not path.exists():
        raise FileNotFoundError(f"Spanish SEAT file not found: {path}")
    d = json.loads(path.read_text(encoding="utf-8"))
    words = {k: [e[0] for e in d[k]["words"]] for k in ("targ1", "targ2", "attr1", "attr2")}
    cats = {k: str(d[k].get("category", k)) for k in words}
    return LPBSQuery.from_lists(
        words["attr1"],
        words["attr2"],
        words["targ1"],
        words["targ2"],
        BARE_TEMPLATE,
        names=(cats["attr1"], cats["attr2"], cats["targ1"], cats["targ2"]),
        name=spec,
        language="es",
    )


def lpbs_effect_size(s_a: np.ndarray, s_b: np.ndarray, ddof: int = 1) -> float:
    r"""Equation (6): :math:`(\bar s_A - \bar s_B) / \mathrm{sd}_{w \in A\cup B}\, s_{log}(w)`
    (NaN if sd = 0)."""
    s_a = np.asarray(s_a, dtype=np.float64).ravel()
    s_b = np.asarray(s_b, dtype=np.float64).ravel()
    pooled = np.concatenate([s_a, s_b])
    if pooled.size - ddof <= 0:
        raise ValueError(f"ddof={ddof} needs more than {ddof} attribute words")
    sd = pooled.std(ddof=ddof)
    if sd <= 1e-15 * max(1.0, float(np.abs(pooled).max())):
        logger.warning("LPBS effect size undefined: all s_log values are equal")
        return float("nan")
    return float((s_a.mean() - s_b.mean()) / sd)


# =============================================================================================
# building the masked sequences
# =============================================================================================
@dataclass
class _Built:
    ids: list[int]
    target_pos: list[int]  # positions holding the target's masks
    target_ids: list[int]  # sub-token ids to score (len == target_pos, or K at one position)


def _fill(
    template: str, target: str, attribute: str, lower: bool
) -> tuple[str, tuple[int, int], tuple[int, int]]:
    """Fill the template; return the text and the character spans of target and attribute."""
    t_at, a_at = template.index(TARGET), template.index(ATTRIBUTE)
    if lower:
        target, attribute = target.lower(), attribute.lower()
    first, second = (
        ((TARGET, target), (ATTRIBUTE, attribute))
        if t_at < a_at
        else ((ATTRIBUTE, attribute), (TARGET, target))
    )
    i1 = template.index(first[0])
    i2 = template.index(second[0])
    pre, mid, post = template[:i1], template[i1 + len(first[0]) : i2], template[i2 + len(second[0]) :]
    if lower:
        pre, mid, post = pre.lower(), mid.lower(), post.lower()
    parts = [("", pre), (first[0], first[1]), ("", mid), (second[0], second[1]), ("", post)]
    text, spans = "", {}
    for role, piece in parts:
        if role:
            spans[role] = (len(text), len(text) + len(piece))
        text += piece
    return text, spans[TARGET], spans[ATTRIBUTE]


class _Builder:
    def __init__(self, lm: Any, multi_token: str, prior_masks: str) -> None:
        self.lm = lm
        self.tok = lm.tokenizer
        if not getattr(self.tok, "is_fast", False):
            raise ValueError(
                "LPBS needs a fast tokenizer (offset mappings) to find the target and attribute tokens"
            )
        self.mask = self.tok.mask_token_id
        if self.mask is None:
            raise ValueError(f"{lm.name}: the tokenizer has no mask token")
        self.lower = bool(getattr(lm, "lowercase", False))
        self.multi_token = multi_token
        self.prior_masks = prior_masks

    def _positions(self, text: str, span: tuple[int, int], enc: Any) -> list[int]:
        a, b = span
        pos = [
            j
            for j, ((s, e), sp) in enumerate(
                zip(enc["offset_mapping"], enc["special_tokens_mask"], strict=True)
            )
            if not sp and e > s and s < b and e > a
        ]
        if not pos:
            raise ValueError(f"{text[a:b]!r} matches no token in {text!r}")
        if pos != list(range(pos[0], pos[-1] + 1)):
            raise ValueError(f"the tokens of {text[a:b]!r} are not contiguous in {text!r}")
        return pos

    def build(self, template: str, target: str, attribute: str) -> tuple[_Built, _Built, dict[str, Any]]:
        """(tgt sequence, prior sequence, info) for one (template, target, attribute)."""
        text, t_span, a_span = _fill(template, target, attribute, self.lower)
        enc = self.tok(
            text,
            add_special_tokens=True,
            return_offsets_mapping=True,
            return_special_tokens_mask=True,
            verbose=False,
        )
        ids = list(enc["input_ids"])
        unk = self.tok.unk_token_id
        tp = self._positions(text, t_span, enc)
        ap = self._positions(text, a_span, enc)
        t_ids = [ids[j] for j in tp]
        if unk is not None and unk in t_ids:
            raise ValueError(f"target {target!r} tokenises to {self.tok.unk_token}")
        if len(tp) > 1 and self.multi_token == "raise":
            raise ValueError(f"target {target!r} has {len(tp)} sub-tokens (multi_token='raise')")
        single = self.multi_token == "single"

        def edit(mask_attr: bool) -> _Built:
            # replace spans right-to-left so earlier positions stay valid
            spans = [("T", tp)] + ([("A", ap)] if mask_attr else [])
            new = list(ids)
            for role, pos in sorted(spans, key=lambda x: -x[1][0]):
                if role == "T":
                    repl = [self.mask] if single else [self.mask] * len(pos)
                else:
                    repl = [self.mask] if self.prior_masks == "one" else [self.mask] * len(pos)
                new[pos[0] : pos[-1] + 1] = repl
            # where did the target's masks land?
            shift = 0
            if mask_attr and ap[0] < tp[0]:
                shift = (1 if self.prior_masks == "one" else len(ap)) - len(ap)
            start = tp[0] + shift
            tpos = [start] if single else list(range(start, start + len(tp)))
            return _Built(new, tpos, t_ids)

        info = {
            "text": text,
            "target_tokens": self.tok.convert_ids_to_tokens(t_ids),
            "attribute_tokens": self.tok.convert_ids_to_tokens([ids[j] for j in ap]),
        }
        return edit(False), edit(True), info


def _score(
    lm: Any, seqs: list[list[int]], reads: list[list[tuple[int, int]]], batch_size: int, progress: bool
) -> list[float]:
    """For each sequence, sum of log P(token id at position) over its ``reads`` [(pos, id), ...]."""
    import torch
    from tqdm.auto import tqdm

    tok = lm.tokenizer
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    dev = next(lm.model.parameters()).device
    out = [0.0] * len(seqs)
    order = np.argsort([-len(s) for s in seqs], kind="stable")
    with (
        torch.inference_mode(),
        tqdm(total=len(seqs), desc="LPBS", unit="seq", disable=not progress, leave=False) as bar,
    ):
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            width = max(len(seqs[i]) for i in idx)
            ids = torch.full((len(idx), width), pad, dtype=torch.long)
            att = torch.zeros((len(idx), width), dtype=torch.long)
            for r, i in enumerate(idx):
                ids[r, : len(seqs[i])] = torch.as_tensor(seqs[i])
                att[r, : len(seqs[i])] = 1
            logits = lm.model(input_ids=ids.to(dev), attention_mask=att.to(dev)).logits
            rows = [r for r, i in enumerate(idx) for _ in reads[i]]
            pos = [p for i in idx for p, _ in reads[i]]
            tid = [t for i in idx for _, t in reads[i]]
            sel = logits[torch.as_tensor(rows, device=dev), torch.as_tensor(pos, device=dev)]
            lp = torch.log_softmax(sel.double(), dim=-1)[
                torch.arange(len(rows), device=dev), torch.as_tensor(tid, device=dev)
            ]
            lp = lp.double().cpu().numpy()
            k = 0
            for i in idx:
                n = len(reads[i])
                out[i] = float(lp[k : k + n].sum())
                k += n
            bar.update(len(idx))
    return out


# =============================================================================================
# the test
# =============================================================================================
@dataclass(frozen=True)
class LPBS:
    """Log Probability Bias Score with a two-sided permutation test (Kurita et al. 2019; seed 001 4.3).

    Parameters
    ----------
    n_permutations, exact, exact_threshold, random_state, comparison:
        The partition test over ``A u B`` (see :func:`biaskit.metrics.weat.permutation_pvalue`).
    alternative:
        ``"two-sided"`` (Kurita et al.) or ``"greater"`` / ``"less"`` (the framework's code is
        one-sided ``"greater"``).
    ddof:
        SD of equation (6): 1 (Kurita et al.'s pandas ``.std()``) or 0 (the framework's ``np.std``).
    multi_token, prior_attribute_masks:
        See the module docstring.
    groups:
        Restrict to some target/template groups (``("singular",)`` = the framework's code).
    batch_size, progress:
        Sequences per forward pass; a tqdm bar.

    Examples
    --------
    >>> from biaskit.metrics.toys import TOY_X, TOY_Y, toy_masked_lm
    >>> query = LPBSQuery.from_lists(["he"], ["she"], TOY_X[:3], TOY_Y[:3], ["TARGET likes ATTRIBUTE."],
    ...                              names=("he", "she", "maths", "arts"))
    >>> result = LPBS(n_permutations=100).run(query, toy_masked_lm())
    >>> result.n, round(result.effect_size, 3), round(result.p_value, 3)
    (6, -1.048, 0.4)
    """

    n_permutations: int = 10_000
    exact: ExactMode = "auto"
    exact_threshold: int = 100_000
    random_state: int | None = 0
    alternative: Alternative = "two-sided"
    comparison: Literal[">=", ">"] = ">="
    ddof: int = 1
    multi_token: MultiToken = "masks"
    prior_attribute_masks: PriorMasks = "one"
    groups: tuple[str, ...] | None = None
    batch_size: int = 32
    progress: bool = False
    keep_null_distribution: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        if self.multi_token not in ("masks", "single", "raise"):
            raise ValueError("multi_token must be 'masks', 'single' or 'raise'")
        if self.prior_attribute_masks not in ("one", "match"):
            raise ValueError("prior_attribute_masks must be 'one' or 'match'")
        if self.batch_size < 1:
            raise ValueError("batch_size must be >= 1")

    # ---------------------------------------------------------------- association scores
    def associations(self, query: LPBSQuery, lm: Any) -> pd.DataFrame:
        r"""The increased log probability asc(x, a) of every (target, template, attribute).

        One row per combination: ``role`` (X/Y), ``target``, ``group``, ``template``,
        ``attr_role`` (A/B), ``attribute``, ``log_p_tgt``, ``log_p_prior``, ``asc`` =
        ``log_p_tgt - log_p_prior``, ``target_tokens``, ``text`` (the filled sentence).
        Combinations that cannot be built (target tokenises to ``[UNK]``, ``multi_token="raise"``)
        are logged and left out; ``df.attrs["skipped"]`` lists them.
        """
        from biaskit.lm.base import require_kind

        if getattr(lm, "kind", "masked") == "causal":
            require_kind(
                lm,
                "masked",
                "LPBS (Kurita et al. 2019)",
                "its prior P(target) is read at a [MASK] put on the target while the attribute is masked "
                "too, with words on both sides visible; a causal model has no mask and reads left to right, "
                "so the prior has no causal meaning. Compare sentence log-likelihoods instead "
                "(biaskit.lm.score_pairs with 'll')",
            )
        builder = _Builder(lm, self.multi_token, self.prior_attribute_masks)
        groups = self.groups
        combos = []
        for role in ("X", "Y"):
            for g, words in getattr(query, role).items():
                if groups is not None and g not in groups:
                    continue
                for t in query.templates.get(g, ()):
                    for w in words:
                        for ar in ("A", "B"):
                            for a in getattr(query, ar):
                                combos.append((role, w, g, t, ar, a))
        if not combos:
            raise ValueError(
                f"no (target, template) combination left (groups={groups}, query groups "
                f"{sorted(query.templates)})"
            )
        seq_index: dict[tuple[int, ...], int] = {}
        seqs: list[list[int]] = []
        reads: list[list[tuple[int, int]]] = []

        def add(b: _Built) -> int:
            key = (*b.ids, -1, *b.target_pos, -2, *b.target_ids)
            if key not in seq_index:
                seq_index[key] = len(seqs)
                seqs.append(b.ids)
                if len(b.target_pos) == len(b.target_ids):
                    reads.append(list(zip(b.target_pos, b.target_ids, strict=True)))
                else:  # one mask, K sub-tokens (multi_token="single")
                    reads.append([(b.target_pos[0], t) for t in b.target_ids])
            return seq_index[key]

        rows, skipped = [], []
        for role, w, g, t, ar, a in combos:
            try:
                tgt, prior, info = builder.build(t, w, a)
            except ValueError as exc:
                skipped.append({"target": w, "template": t, "attribute": a, "reason": str(exc)})
                continue
            max_len = int(getattr(lm, "max_length", 512))
            if len(tgt.ids) > max_len:
                skipped.append(
                    {"target": w, "template": t, "attribute": a, "reason": "longer than the model window"}
                )
                continue
            rows.append(
                {
                    "role": role,
                    "target": w,
                    "group": g,
                    "template": t,
                    "attr_role": ar,
                    "attribute": a,
                    "_tgt": add(tgt),
                    "_prior": add(prior),
                    "target_tokens": info["target_tokens"],
                    "text": info["text"],
                }
            )
        if skipped:
            reasons = sorted({s["reason"] for s in skipped})
            logger.warning("LPBS %s: %d combination(s) skipped: %s", query.name, len(skipped), reasons[:5])
        if not rows:
            raise ValueError(f"LPBS {query.name}: no combination could be scored ({skipped[:3]})")
        lp = _score(lm, seqs, reads, self.batch_size, self.progress)
        df = pd.DataFrame(rows)
        df["log_p_tgt"] = [lp[i] for i in df.pop("_tgt")]
        df["log_p_prior"] = [lp[i] for i in df.pop("_prior")]
        df["asc"] = df["log_p_tgt"] - df["log_p_prior"]
        df.attrs["skipped"] = skipped
        df.attrs["n_forward_sequences"] = len(seqs)
        return df

    @staticmethod
    def attribute_scores(asc: pd.DataFrame) -> pd.DataFrame:
        r""":math:`s_{log}(a, X, Y)` per attribute from :meth:`associations`
        (mean over targets x templates)."""
        means = asc.pivot_table(
            index=["attr_role", "attribute"], columns="role", values="asc", aggfunc="mean"
        )
        for r in ("X", "Y"):
            if r not in means:
                raise ValueError(f"no scored combination for target set {r}")
        out = pd.DataFrame({"mean_asc_X": means["X"], "mean_asc_Y": means["Y"]})
        out["s_log"] = out["mean_asc_X"] - out["mean_asc_Y"]
        return out.reset_index()

    def run(self, query: LPBSQuery, lm: Any) -> TestResult:
        """Effect size (6) and the permutation p-value; ``details`` hold the per-attribute scores."""
        asc = self.associations(query, lm)
        per = self.attribute_scores(asc)
        # keep the attribute order of the query
        order = {("A", a): i for i, a in enumerate(query.A)} | {("B", b): i for i, b in enumerate(query.B)}
        per = per.assign(
            _o=[order.get((r, a), 0) for r, a in zip(per["attr_role"], per["attribute"], strict=True)]
        )
        per = per.sort_values(["attr_role", "_o"]).drop(columns="_o").reset_index(drop=True)
        s_a = per.loc[per["attr_role"] == "A", "s_log"].to_numpy()
        s_b = per.loc[per["attr_role"] == "B", "s_log"].to_numpy()
        if s_a.size == 0 or s_b.size == 0:
            raise ValueError("both attribute sets need at least one scored word")
        d = lpbs_effect_size(s_a, s_b, ddof=self.ddof)
        centre = np.concatenate([s_a, s_b]).mean()
        # LPBS.batch_size is the forward-pass batch; the permutation test keeps its default batch
        perm = run_permutation(self, s_a - centre, s_b - centre)
        x, y, a, b = query.names
        details: dict[str, Any] = {
            **perm.details(),
            "ddof": self.ddof,
            "names": {"X": x, "Y": y, "A": a, "B": b},
            "sizes": {
                "X": int(asc.loc[asc["role"] == "X", "target"].nunique()),
                "Y": int(asc.loc[asc["role"] == "Y", "target"].nunique()),
                "A": int(s_a.size),
                "B": int(s_b.size),
            },
            "n_templates": int(asc["template"].nunique()),
            "n_combinations": len(asc),
            "n_forward_sequences": asc.attrs.get("n_forward_sequences"),
            "skipped": asc.attrs.get("skipped", []),
            "multi_token": self.multi_token,
            "prior_attribute_masks": self.prior_attribute_masks,
            "attribute_scores": per,
            "associations": asc,
            "mean_s_A": float(s_a.mean()),
            "mean_s_B": float(s_b.mean()),
            "model": getattr(lm, "name", "?"),
        }
        if self.keep_null_distribution:
            details["null_distribution"] = perm["null_distribution"]
        return TestResult(
            statistic=float(s_a.sum() - s_b.sum()),
            p_value=perm["p_value"],
            method=f"LPBS (Kurita et al. 2019) permutation test over A u B ({perm.label()})",
            alternative=self.alternative,
            n=int(s_a.size + s_b.size),
            effect_size=d,
            estimate=float(s_a.mean() - s_b.mean()),
            null_value=0.0,
            h0=f"the attributes '{a}' and '{b}' raise the probability of '{x}' vs '{y}' equally",
            h1=(
                f"'{a}' raises the probability of '{x}' (relative to '{y}') more than '{b}' does"
                if self.alternative == "greater"
                else f"'{a}' raises it less than '{b}'"
                if self.alternative == "less"
                else f"'{a}' and '{b}' differ in how much they favour '{x}' over '{y}'"
            ),
            details=details,
        )

    __call__ = run


# --------------------------------------------------------------------------- the batch grid and the registry
_ALTERNATIVES = ("two-sided", "greater", "less")


def grid_cell(call: GridCall) -> list[dict[str, Any]]:
    """One cell of a batch grid (:mod:`biaskit.studies.grid`): :class:`LPBS` with the grid's options."""
    o = call.options
    groups = o["lpbs_groups"]
    test = LPBS(
        n_permutations=int(o["n_permutations"]),
        exact_threshold=int(o["exact_threshold"]),
        random_state=o["random_state"],
        alternative=o["lpbs_alternative"],
        ddof=int(o["ddof"]),
        multi_token=o["lpbs_multi_token"],
        prior_attribute_masks=o["lpbs_prior_attribute_masks"],
        groups=tuple(groups) if groups else None,
        batch_size=int(o["batch_size"]),
    )
    res = test.run(call.data, call.model)
    names = res.details["names"]
    row = GridSupport.rows_from_result(
        res, targets=f"{names['X']} vs {names['Y']}", attributes=f"{names['A']} vs {names['B']}"
    )[0]
    if res.details["skipped"]:
        row["note"] = f"skipped (target, template, attribute) combinations: {len(res.details['skipped'])}"
    return [row]


def _calibration_values(call: CalibrationCall) -> MetricValues:
    """The calibration's values: each profession's LPBS log-probability score s_log as an attribute of
    he / she, the professions split in halves as the attribute sets A and B (templates
    :data:`biaskit.metrics.controls.LPBS_TEMPLATES`; 100 permutations, seed 0)."""
    from biaskit.metrics.controls import LPBS_TEMPLATES

    targets = list(call.targets)
    half = len(targets) // 2
    q = LPBSQuery.from_lists(
        ["he"], ["she"], targets[:half], targets[half:], list(LPBS_TEMPLATES), names=("he", "she", "A", "B"),
        name="controls",
    )  # fmt: skip
    per = LPBS(n_permutations=100, random_state=0).run(q, call.model).details["attribute_scores"]
    per = per.set_index("attribute").reindex(targets)
    return MetricValues(
        "lpbs", "groups", np.array(targets, object), per["s_log"].to_numpy(float), unit="profession"
    )


def _example() -> TestResult:
    """LPBS of he / she against the toy maths and arts words on the toy masked model."""
    from biaskit.metrics.toys import TOY_X, TOY_Y, toy_masked_lm

    q = LPBSQuery.from_lists(
        ["he"],
        ["she"],
        TOY_X[:3],
        TOY_Y[:3],
        ["TARGET likes ATTRIBUTE."],
        names=("he", "she", "maths", "arts"),
    )
    return LPBS(n_permutations=100).run(q, toy_masked_lm())


def claims_lpbs_dataset(path: str) -> bool:
    """Whether a grid dataset identifier or path is an LPBS query (``lpbs:...``, ``.../LPBS/...``)."""
    p = path.lower()
    return "/lpbs/" in p or p.startswith("lpbs:") or p.endswith("/lpbs")


def load_lpbs_dataset(
    path: str, *, sample: int | None = None, random_state: int = 0
) -> tuple[str, LPBSQuery]:
    """An LPBS dataset of the batch grid (kind ``"lpbs"``): :func:`load_lpbs` of the identifier (an
    ``lpbs:`` prefix dropped) or of the file, resolved from the user's folder.  ``sample`` does not apply."""
    from biaskit.core.paths import user_file_or_identifier

    return "lpbs", load_lpbs(user_file_or_identifier(path[5:] if path.startswith("lpbs:") else path))


def _toy_lpbs() -> LPBSQuery:
    """A toy LPBS query: he / she against three toy maths and arts words, one template."""
    from biaskit.metrics.toys import TOY_X, TOY_Y

    return LPBSQuery.from_lists(
        ["he"],
        ["she"],
        TOY_X[:3],
        TOY_Y[:3],
        ["TARGET likes ATTRIBUTE."],
        names=("he", "she", "maths", "arts"),
    )


register_dataset_kind(
    "lpbs", "an LPBS query: target and attribute words with their templates", example=_toy_lpbs
)
register_dataset_loader(
    name="lpbs",
    kinds=("lpbs",),
    claims=claims_lpbs_dataset,
    load=load_lpbs_dataset,
    identifiers="bfh:en/LPBS/LPBS_7, es:seat_math_arts/lpbs, lpbs:<file>, or a file under an LPBS folder",
)
register_metric(
    "lpbs",
    label="LPBS",
    family="language models",
    inputs=("word sets", "templates"),
    model_kinds=("masked",),
    directional=True,
    test="permutation test over the attribute words (exact or sampled), effect size",
    citation="Kurita et al. 2019, Measuring Bias in Contextualized Word Representations",
    section="seed 001 section 4.3",
    entry_point=LPBS,
    summary="log probability bias score: P(target | template) against the prior P(target | masked attribute)",
    example=_example,
    grid=GridSupport(
        "lpbs",
        grid_cell,
        None,
        {
            "causal": "not for a causal language model (its prior is read at a mask, which a causal model "
            "does not have)",
            "static": "lpbs needs a language model",
        },
        options=(
            Option("alternative", "two-sided", "alternative of the permutation test", choices=_ALTERNATIVES),
            Option(
                "multi_token", "masks", "a target of several sub-tokens", choices=("masks", "single", "raise")
            ),
            Option(
                "prior_attribute_masks",
                "one",
                "masks of the attribute in the prior",
                choices=("one", "match"),
            ),
            Option(
                "groups", None, "only these target/template groups (e.g. [singular])", types=(list, tuple)
            ),
        ),
    ),
    calibration=CalibrationSupport(
        (
            CalibrationMeasure(
                key="lpbs",
                label="LPBS (Kurita), mean difference",
                kind="groups",
                model_kind="masked",
                values=_calibration_values,
            ),
        )
    ),
)
