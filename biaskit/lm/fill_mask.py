r"""Probabilities of words at a single mask: fill-in-the-blank (StereoSet) and the thesis's baseline.

Seed 000 sections 4.1.2 (the baseline :math:`P(\text{stereotypical sentence})`) and 4.1.5 (StereoSet
intrasentence options).  Both read a masked model's prediction at one ``[MASK]``, which a causal model
cannot give for a blank in the middle of a sentence (it never sees the right-hand context): with a
:class:`~biaskit.lm.base.CausalLM` they raise a ``TypeError`` that says what to do instead (score the
filled-in sentences: :func:`biaskit.metrics.stereoset.stereoset_option_scores` does so for StereoSet, as
bias-bench does for GPT-2).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from biaskit.core.io import issue_record
from biaskit.data.datasets import ValidationReport
from biaskit.lm.base import MaskedLM, require_kind
from biaskit.lm.masked import masked_log_probs

__all__ = ["baseline_probabilities", "fill_blank_probabilities"]

logger = logging.getLogger(__name__)
Errors = Literal["report", "raise"]

_WHY_MASK = (
    "it reads the model's prediction at a [MASK] put in the blank, with the words on both sides visible; "
    "a causal model predicts left to right and has no mask. Score the filled-in sentences with "
    "biaskit.lm.score_sentences(model, sentences, 'll') instead (biaskit.metrics.stereoset."
    "score_intrasentence does this for StereoSet, as bias-bench does for GPT-2)"
)


def fill_blank_probabilities(
    lm: MaskedLM,
    contexts: Sequence[str],
    words: Sequence[str],
    *,
    placeholder: str = "BLANK",
    batch_size: int | None = None,
    batch_tokens: int | None = None,
    progress: bool = True,
    errors: Errors = "report",
    log: bool = True,
) -> pd.DataFrame:
    r"""Probability that ``word`` fills the ``placeholder`` of ``context``, for each (context, word).

    Seed 000 sections 4.1.2 (:math:`p^{ster}`, :math:`p^{anster}` of the baseline) and 4.1.5
    (StereoSet intrasentence options).  **Multi-token words** follow the official StereoSet
    discriminative evaluation (moinnadeem/StereoSet ``code/eval_discriminative_models.py``,
    ``IntrasentenceLoader``): the word is split into sub-words :math:`s_1..s_K`; for each
    :math:`k` the placeholder is replaced by ``decode(s_1..s_{k-1}) + [MASK]`` and
    :math:`p_k = P(s_k \mid \text{that sentence})` is read at the mask; the score is the
    **mean of the probabilities**, :math:`\bar p = \frac{1}{K}\sum_k p_k` (column ``prob``,
    what the official predictions file stores).  ``log_prob_sum`` (:math:`\sum_k \log p_k`)
    is given as well.  Single-token words: ``prob`` is the plain probability at the mask.
    Sentences are not lower-cased here (as in the official code; uncased tokenizers lower-case).

    A context with the placeholder more than once (2 StereoSet dev examples) has every
    occurrence filled the same way, as the official ``str.replace`` does; the probabilities
    read at all its masks are averaged (the official batch code misaligns such rows, so
    there is nothing exact to mirror).

    Returns one row per input: ``row, context, word, n_subwords, prob, log_prob_sum,
    subword_probs``.  Rows whose context lacks the placeholder, whose word is empty or
    tokenises to ``[UNK]``, or that exceed the model window are reported in
    ``df.attrs["report"]`` and left out (``errors="raise"`` raises), and logged as one WARNING
    (``log=False``: not logged, for a caller that logs its own, as :func:`baseline_probabilities`).  The
    masked copies are batched longest first by a token budget (``batch_tokens``; at most ``batch_size`` rows
    when given), as :func:`biaskit.lm.masked.masked_log_probs`.
    """
    require_kind(lm, "masked", "fill_blank_probabilities", _WHY_MASK)
    if len(contexts) != len(words):
        raise ValueError("contexts and words must have the same length")
    tok = lm.tokenizer
    mask_id = tok.mask_token_id
    seqs: list[list[int]] = []
    items: list[tuple[int, int, int]] = []
    owner: list[tuple[int, int]] = []
    n_sub: dict[int, int] = {}
    issues: list[dict[str, Any]] = []

    def issue(i: int, reason: str, text: Any) -> None:
        issues.append(
            {
                "row": i,
                "line": None,
                "column": None,
                "reason": reason,
                "action": "skipped",
                "text": str(text)[:80],
            }
        )

    for i, (ctx, word) in enumerate(zip(contexts, words, strict=True)):
        if not isinstance(ctx, str) or ctx.count(placeholder) < 1:
            issue(i, f"context does not contain {placeholder!r}", ctx)
            continue
        n_blanks = ctx.count(placeholder)
        if not isinstance(word, str) or not word.strip():
            issue(i, "empty word", word)
            continue
        sub = tok.encode(word, add_special_tokens=False)
        if not sub:
            issue(i, "word has no tokens", word)
            continue
        if tok.unk_token_id is not None and tok.unk_token_id in sub:
            issue(i, f"word tokenises to {tok.unk_token}", word)
            continue
        local_seqs: list[list[int]] = []
        local_items: list[tuple[int, int, int]] = []
        ok = True
        for k in range(len(sub)):
            insertion = tok.decode(sub[:k])
            ids = tok(ctx.replace(placeholder, f"{insertion}{tok.mask_token}"), verbose=False)["input_ids"]
            where = [j for j, t in enumerate(ids) if t == mask_id]
            if len(ids) > lm.max_length or len(where) != n_blanks:
                ok = False
                issue(
                    i,
                    f"longer than the model window ({len(ids)} > {lm.max_length} tokens)"
                    if len(ids) > lm.max_length
                    else f"the {placeholder} was not turned into a {tok.mask_token} token",
                    ctx,
                )
                break
            local_items += [(len(seqs) + len(local_seqs), w, sub[k]) for w in where]
            owner += [(i, k)] * len(where)
            local_seqs.append(list(ids))
        if not ok:
            owner = [o for o in owner if o[0] != i]
            continue
        seqs += local_seqs
        items += local_items
        n_sub[i] = len(sub)
    report = ValidationReport.from_records(issues, context=f"fill-in-the-blank ({lm.name})")
    if errors == "raise":
        report.raise_if_any(("skipped",))
    if log:
        report.log(logger, logging.WARNING if len(report) else logging.INFO)
    from tqdm.auto import tqdm

    with tqdm(total=len(items), desc="fill-blank", unit="mask", disable=not progress, leave=False) as pbar:
        lp = masked_log_probs(lm, seqs, items, batch_size=batch_size, batch_tokens=batch_tokens, pbar=pbar)
    # p_k = probability of sub-word k (averaged over the masks when the placeholder repeats)
    per: dict[int, dict[int, list[float]]] = {}
    for (i, k), v in zip(owner, lp, strict=True):
        per.setdefault(i, {}).setdefault(k, []).append(math.exp(float(v)))
    idx = sorted(per)
    p_k = {i: [float(np.mean(per[i][k])) for k in sorted(per[i])] for i in idx}
    df = pd.DataFrame(
        {
            "row": idx,
            "context": [contexts[i] for i in idx],
            "word": [words[i] for i in idx],
            "n_subwords": [n_sub[i] for i in idx],
            "prob": [float(np.mean(p_k[i])) for i in idx],
            "log_prob_sum": [float(np.sum(np.log(p_k[i]))) for i in idx],
            "subword_probs": [p_k[i] for i in idx],
        }
    )
    df.attrs["report"] = report
    return df


def baseline_probabilities(
    lm: MaskedLM,
    contexts: Sequence[str],
    stereo_words: Sequence[Sequence[str]],
    anti_words: Sequence[Sequence[str]],
    *,
    placeholder: str = "BLANK",
    batch_size: int | None = None,
    batch_tokens: int | None = None,
    progress: bool = True,
    lines: Sequence[int] | None = None,
) -> pd.DataFrame:
    r"""The baseline of seed 000 section 4.1.2: :math:`P(\text{ster.})` and :math:`P(\text{anti-ster.})` per
    context.

    .. math:: P(\text{stereotypical sentence}) = \sum_{v \in V^{ster}} p_v, \qquad
              P(\text{anti-stereotypical sentence}) = \sum_{v \in V^{anster}} p_v

    (eqs. 4.2-4.3), where :math:`p_v` is the probability of word ``v`` at the ``placeholder``
    (:func:`fill_blank_probabilities`; multi-token words: mean sub-word probability, the
    StereoSet rule).  ``stereo_words[i]`` / ``anti_words[i]`` are the sets :math:`V^{ster}`,
    :math:`V^{anster}` of context ``i``.  Returns ``row, context, p_ster, p_anster, n_ster,
    n_anster`` (words actually scored); words that cannot be scored contribute nothing to the sums.
    Where no word of a side could be scored, that side's probability is NaN, not 0: a context without
    the ``placeholder`` has none on either side, and :func:`biaskit.metrics.stereoset.comp_baseline_test`
    leaves such a context out instead of counting 0 >= 0 as stereotypical.  What could not be scored is
    listed in ``df.attrs["report"]`` and in one WARNING, each context by its row (its position in
    ``contexts``) or, when ``lines`` gives each context's line in its file, by that line.  Feed ``p_ster`` /
    ``p_anster`` to :func:`biaskit.metrics.stereoset.comp_baseline_test` (experiment :math:`E^{Comp}`), or use
    :func:`biaskit.metrics.stereoset.comp_baseline_sets`, which does both.
    """
    require_kind(lm, "masked", "baseline_probabilities", _WHY_MASK)
    if not len(contexts) == len(stereo_words) == len(anti_words):
        raise ValueError("contexts, stereo_words and anti_words must have the same length")
    if lines is not None and len(lines) != len(contexts):
        raise ValueError(
            f"lines must give one line per context: {len(lines)} lines, {len(contexts)} contexts"
        )
    ctx, words, owner = [], [], []
    no_blank: list[dict[str, Any]] = []
    for i, (c, vs, va) in enumerate(zip(contexts, stereo_words, anti_words, strict=True)):
        if isinstance(vs, str) or isinstance(va, str):
            raise ValueError(
                "stereo_words / anti_words hold one list of words per context (V^ster, V^anster)"
            )
        if not isinstance(c, str) or placeholder not in c:  # no blank: no probability on either side
            no_blank.append(
                issue_record(
                    None if lines is None else lines[i],
                    f"context does not contain {placeholder!r}: no probability, left out",
                    "skipped",
                    c,
                    row=i,
                    column="context",
                )
            )
            continue
        for side, vv in (("ster", vs), ("anster", va)):
            for w in vv:
                ctx.append(c)
                words.append(w)
                owner.append((i, side))
    fb = fill_blank_probabilities(
        lm,
        ctx,
        words,
        placeholder=placeholder,
        batch_size=batch_size,
        batch_tokens=batch_tokens,
        progress=progress,
        log=False,
    )
    p = {(i, side): 0.0 for i in range(len(contexts)) for side in ("ster", "anster")}
    n = dict.fromkeys(p, 0)
    for r, prob in zip(fb["row"], fb["prob"], strict=True):
        p[owner[r]] += float(prob)
        n[owner[r]] += 1
    rep = fb.attrs["report"]
    issues = rep.issues.copy()
    if len(issues):  # rows of the word list -> rows (and lines) of the contexts
        issues["text"] = [f"{words[int(r)]!r} in {ctx[int(r)][:60]!r}" for r in issues["row"]]
        issues["row"] = [owner[int(r)][0] for r in issues["row"]]
        issues["line"] = [None if lines is None else lines[int(r)] for r in issues["row"]]
    report = ValidationReport.from_records(
        [*no_blank, *issues.to_dict(orient="records")],
        context=f"baseline 4.1.2 ({lm.name})",
        n_records=len(contexts),
    )
    report.log(logger, logging.WARNING)

    def prob(i: int, side: str) -> float:
        return p[(i, side)] if n[(i, side)] else float("nan")

    out = pd.DataFrame(
        {
            "row": range(len(contexts)),
            "context": list(contexts),
            "p_ster": [prob(i, "ster") for i in range(len(contexts))],
            "p_anster": [prob(i, "anster") for i in range(len(contexts))],
            "n_ster": [n[(i, "ster")] for i in range(len(contexts))],
            "n_anster": [n[(i, "anster")] for i in range(len(contexts))],
        }
    )
    out.attrs["report"] = report
    return out
