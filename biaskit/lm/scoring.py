r"""Sentence and sentence-pair scores of masked and causal language models, validated, batched and cached.

Seed 000 (Maddalozzo 2023), chapter 4: every bias metric on a language model is built from sentence
scores.  :func:`score_pairs` (CrowS-Pairs-style pairs) and :func:`score_sentences` take either kind of
model (:class:`~biaskit.lm.base.MaskedLM` or :class:`~biaskit.lm.base.CausalLM`) and a metric:

Masked models (pseudo-log-likelihoods, :mod:`biaskit.lm.masked`):

- ``"sz"``: the pseudo-log-likelihood of Salazar et al. (2020), seed 000 section 4.1.3,
  :math:`PLL(W) = \sum_{t=1}^{|W|} \log P_m(w_t \mid W_{\setminus t})`: every token
  but ``[CLS]`` / ``[SEP]`` is masked once;
- ``"cp"``: the CrowS-Pairs score of Nangia et al. (2020), seed 000 section 4.1.6,
  :math:`score(T) = \sum_{u \in U} \log P_m(u \mid U_{\setminus u}, O)`: only the
  tokens ``U`` shared by the two sentences of a pair are masked, one at a time;
  ``U`` is found with :class:`difflib.SequenceMatcher` over the token ids, exactly as
  the official ``metric.py`` of nyu-mll/crows-pairs does (``get_span`` /
  ``mask_unigram``; see :func:`~biaskit.lm.alignment.crows_template`);
- ``"aul"``: All Unmasked Likelihood of Kaneko & Bollegala (2022): one forward pass
  with nothing masked, the *mean* of :math:`\log P_m(w_t \mid W)` over the tokens.

Causal models (exact log-likelihoods, :mod:`biaskit.lm.causal`):

- ``"ll"``: :math:`\log P(W) = \sum_{t=1}^{n} \log P(w_t \mid \text{BOS}, w_{<t})`, the sentence
  log-likelihood lm-evaluation-harness compares for CrowS-Pairs (``pct_stereotype``,
  ``likelihood_difference``: :func:`biaskit.metrics.crows.causal_crows_summary`);
- ``"ll_mean"``: the same divided by the number of tokens (bias-bench's StereoSet score for GPT-2 is
  its exponential, the geometric mean of the token probabilities);
- ``"shared"`` (pairs only): the causal counterpart of ``"cp"``: the log-likelihood of the tokens the
  two sentences share *after their first difference*, given each sentence's differing part
  (:func:`~biaskit.lm.alignment.shared_after_difference`); shared tokens before the difference are
  predicted from the same context on both sides and left out.  Pairs that differ only at the end
  have nothing to score: exact ties, flagged.

A masked metric on a causal model (or the reverse) raises a ``ValueError`` that says why
(:func:`check_metric`).  Scores are cached on disk (:mod:`biaskit.lm.cache`): an interrupted run resumes.

Bad input is never handled silently: every row concerned is listed with its row (and file
line) in a :class:`~biaskit.data.datasets.ValidationReport` and logged as a WARNING.

* Skipped (``action="skipped"``; ``errors="raise"`` raises instead): empty, missing or
  mis-encoded sentences, sentences longer than the model window, sentences containing
  special-token text, and (``unk="skip"``) sentences with ``[UNK]`` tokens.
* Kept (``action="kept"``), as the official ``metric.py`` and the thesis (seed 000
  section 4.2.1: N = 1,503 Spanish pairs) count them: pairs whose two sentences are
  **identical after tokenisation** (scored once; both sides get the same value, an exact
  tie), ``"cp"`` pairs that **share no token besides [CLS]/[SEP]** and ``"shared"`` pairs with
  **nothing shared after the difference** (both scores are empty sums, 0.0: an exact tie).  They
  are flagged in the ``tie_reason`` column of :attr:`PLLScores.scores` (:attr:`PLLScores.tie_rows`)
  and stay in the denominator of :func:`biaskit.metrics.crows.crows_score` as ties.  With
  ``unk="score"`` (the default of :func:`score_pairs`, as ``metric.py``) sentences with ``[UNK]``
  are kept too.

CrowS-Pairs order: ``metric.py`` aligns ``(sent1, sent2)`` = ``(sent_more, sent_less)`` for
``stereo`` rows but ``(sent_less, sent_more)`` for ``antistereo`` rows, and
:class:`difflib.SequenceMatcher` is not symmetric, so the shared tokens can differ between
the two orders.  :func:`score_pairs` takes the per-pair ``direction`` (the
``stereo_antistereo`` column) and aligns each pair in the official order (``"cp"`` and ``"shared"``).
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from biaskit.core.html import escape_html, frame_html
from biaskit.data.datasets import ValidationReport, dataset_fingerprint, detect_encoding_problem
from biaskit.lm import causal as _causal
from biaskit.lm import masked as _masked
from biaskit.lm.alignment import crows_template, shared_after_difference
from biaskit.lm.base import BatchStats, LanguageModel, batch_token_budget
from biaskit.lm.cache import (
    append_records,
    cache_file,
    cache_key,
    encode_record,
    example_key,
    open_for_append,
    read_cache,
)
from biaskit.lm.causal import encode_causal_sentence
from biaskit.lm.tokenizers import MAX_UNK_SHARE, check_unk_share

logger = logging.getLogger(__name__)

__all__ = [
    "CAUSAL_METRICS",
    "MASKED_METRICS",
    "METRIC_MEANINGS",
    "PLLMetric",
    "PLLScores",
    "ScoreMetric",
    "TIE_IDENTICAL",
    "TIE_NOTHING_AFTER",
    "TIE_NO_SHARED",
    "check_metric",
    "counterpart_metric",
    "crows_template",
    "score_pairs",
    "score_sentences",
]

PLLMetric = Literal["sz", "cp", "aul"]
CausalMetric = Literal["ll", "ll_mean", "shared"]
ScoreMetric = Literal["sz", "cp", "aul", "ll", "ll_mean", "shared"]
Errors = Literal["report", "raise"]
#: metrics of masked models (pseudo-log-likelihoods) and of causal models (exact log-likelihoods)
MASKED_METRICS: tuple[str, ...] = ("sz", "cp", "aul")
CAUSAL_METRICS: tuple[str, ...] = ("ll", "ll_mean", "shared")
#: metrics averaged over the scored tokens (the others are sums)
MEAN_METRICS: tuple[str, ...] = ("aul", "ll_mean")
#: metrics computed in one forward pass per sentence (the others: one per masked token)
ONE_PASS_METRICS: tuple[str, ...] = ("aul", *CAUSAL_METRICS)
#: per example index: one (token ids, scored positions, log-probabilities) per sentence side
_Done = dict[int, list[tuple[list[int], list[int], np.ndarray]]]

_WHY_NOT_CAUSAL = {
    "cp": "'cp' masks each token the two sentences share and reads the masked model's prediction there "
    "(Nangia et al. 2020); a causal model has no mask and reads left to right. Its counterpart is "
    "'shared' (the shared tokens after the difference, given each sentence's differing part)",
    "sz": "'sz' masks every token in turn (a pseudo-log-likelihood, Salazar et al. 2020); a causal model "
    "gives the exact log-likelihood instead: use 'll'",
    "aul": "'aul' reads every token with nothing masked, which a masked model can do because it sees both "
    "sides; a causal model sees only the left side: use 'll_mean' (mean log-likelihood per token)",
}
_WHY_NOT_MASKED = (
    "{m!r} is an exact left-to-right log-likelihood, which only a causal model defines; a masked model "
    "gives pseudo-log-likelihoods: use 'sz' (sum), 'aul' (mean) or, for pairs, 'cp'"
)


#: what each score reads, in a reader's words (legends and titles of the notebooks' figures)
METRIC_MEANINGS: dict[str, str] = {
    "cp": "only the words both sentences share are masked",
    "sz": "every word is masked in turn (Salazar et al.)",
    "aul": "every word read with nothing masked, mean per word piece (Kaneko & Bollegala)",
    "shared": "causal model: log-likelihood of the shared words",
    "ll": "causal model: log-likelihood of the whole sentence",
    "ll_mean": "causal model: mean log-likelihood per word piece",
}


#: the metric of the other kind that plays the same role (causal counterparts of masked ones and back)
COUNTERPARTS: dict[str, str] = {
    "cp": "shared",
    "sz": "ll",
    "aul": "ll_mean",
    "shared": "cp",
    "ll": "sz",
    "ll_mean": "aul",
}


def counterpart_metric(metric: str, kind: str) -> str:
    """``metric`` if it belongs to ``kind`` (``"masked"`` / ``"causal"``), else its counterpart of that kind.

    ``cp`` <-> ``shared`` (the shared tokens of a pair), ``sz`` <-> ``ll`` (the whole sentence),
    ``aul`` <-> ``ll_mean`` (the mean per token).  Callers that switch a study to the other kind say so.
    """
    own = MASKED_METRICS if kind == "masked" else CAUSAL_METRICS
    if metric in own:
        return metric
    if metric not in COUNTERPARTS:
        raise ValueError(f"unknown metric {metric!r}")
    return COUNTERPARTS[metric]


def check_metric(lm: LanguageModel, metric: str | None, *, pairs: bool) -> str:
    """The metric to use with ``lm``: ``metric``, or the default of its kind when ``None``.

    Defaults: ``"cp"`` (pairs) / ``"sz"`` (sentences) for a masked model, ``"ll"`` for a causal one.
    A metric of the other kind raises ``ValueError`` saying why it has no meaning there and what to
    use instead; so does a pairs-only metric (``"cp"``, ``"shared"``) for single sentences.
    """
    kind = getattr(lm, "kind", "")
    if kind not in ("masked", "causal"):
        raise TypeError(
            f"expected a biaskit language model (biaskit.lm.MaskedLM or CausalLM), got {type(lm).__name__}"
        )
    if metric is None:
        return ("cp" if pairs else "sz") if kind == "masked" else "ll"
    if metric not in MASKED_METRICS + CAUSAL_METRICS:
        raise ValueError(
            f"metric must be one of {', '.join(repr(m) for m in MASKED_METRICS)} (masked models) or "
            f"{', '.join(repr(m) for m in CAUSAL_METRICS)} (causal models), got {metric!r}"
        )
    if kind == "causal" and metric in MASKED_METRICS:
        raise ValueError(f"{lm.name} is a causal language model: {_WHY_NOT_CAUSAL[metric]}.")
    if kind == "masked" and metric in CAUSAL_METRICS:
        raise ValueError(f"{lm.name} is a masked language model: " + _WHY_NOT_MASKED.format(m=metric) + ".")
    if not pairs and metric in ("cp", "shared"):
        raise ValueError(f"{metric!r} needs sentence pairs: use score_pairs")
    return metric


# =============================================================================================
# results
# =============================================================================================
@dataclass
class PLLScores:
    """Scores of sentences or sentence pairs, with per-token detail and a validation report.

    Attributes
    ----------
    scores:
        One row per scored example.  Pairs: ``row, sent_more, sent_less, sent_more_score,
        sent_less_score, n_more, n_less`` (+ ``bias_type`` / ``direction`` when given),
        ``tie_reason`` (+ ``line`` when given), the same layout as the thesis's CSVs
        (:mod:`biaskit.studies.replay`) plus columns.  ``tie_reason`` is ``None`` for an ordinary
        pair, ``"identical"`` for a pair identical after tokenisation and ``"no shared
        token"`` for a ``cp`` pair sharing nothing but ``[CLS]``/``[SEP]``: both are exact
        ties by construction (see the module docstring).  Single sentences:
        ``row, sentence, score, n_tokens``.  ``row`` is the 0-based input position.
    tokens:
        Long table of the scored tokens: ``row, side`` (``"more"``, ``"less"`` or
        ``"sentence"``), ``position`` (in the token sequence, ``[CLS]`` = 0), ``token``,
        ``token_id``, ``log_prob``.
    report:
        The rows that were not scored (or scored with a caveat) and why.
    n_computed, n_cached:
        Examples computed in this call / read back from the disk cache.
    batching:
        The forward passes of this call (:class:`biaskit.lm.base.BatchStats`): ``batches``, ``rows``,
        ``tokens`` (real), ``slots`` (rows x padded width), ``pad_share`` (the share of padding) and,
        for causal models, ``unpacked`` / ``shared_share`` (the tokens before a shared beginning was
        packed once into a prefix tree, and the share that saved).
    """

    scores: pd.DataFrame
    tokens: pd.DataFrame
    report: ValidationReport
    metric: str
    model: str
    n_computed: int = 0
    n_cached: int = 0
    cache_path: Path | None = None
    batching: dict[str, float] | None = None

    def __len__(self) -> int:
        return len(self.scores)

    @property
    def tie_rows(self) -> list[int]:
        """Rows kept as exact ties by construction (``tie_reason`` set: identical pairs, and
        ``cp`` pairs sharing no token); they count in the CrowS-Pairs denominator."""
        if "tie_reason" not in self.scores:
            return []
        return [int(r) for r in self.scores.loc[self.scores["tie_reason"].notna(), "row"]]

    def _repr_html_(self) -> str:
        """The scores in a notebook: metric and model name (escaped), counts, the first ten rows."""
        head = (
            f"<p><b>{escape_html(self.metric)}</b> scores with <code>{escape_html(self.model)}</code>: "
            f"{len(self.scores)} scored ({len(self.tie_rows)} kept as ties), "
            f"{len(self.report.skipped_rows)} skipped ({self.n_cached} from cache)</p>"
        )
        return head + frame_html(self.scores.head(10), index=False)


# =============================================================================================
# validation and preparation
# =============================================================================================
def _encode(lm: LanguageModel, text: str) -> tuple[list[int], list[tuple[int, int]] | None]:
    if lm.kind == "causal":
        return encode_causal_sentence(lm, text)  # type: ignore[arg-type]
    t = text.lower() if lm.lowercase else text
    try:
        enc = lm.tokenizer(
            t, add_special_tokens=True, truncation=False, return_offsets_mapping=True, verbose=False
        )
        return list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]
    except (NotImplementedError, TypeError, ValueError):
        enc = lm.tokenizer(t, add_special_tokens=True, truncation=False, verbose=False)
        return list(enc["input_ids"]), None


def _special_ids(lm: LanguageModel) -> set[int]:
    return {int(i) for i in lm.tokenizer.all_special_ids}


#: ``_Prepared.tie`` values: pairs that are exact ties by construction (kept, flagged, reported)
TIE_IDENTICAL = "identical"
TIE_NO_SHARED = "no shared token"
TIE_NOTHING_AFTER = "nothing shared after the difference"
_TIE_REASONS = {
    TIE_IDENTICAL: "identical after tokenisation: counted as a tie (scored once, both sides get that score)",
    TIE_NO_SHARED: (
        "the two sentences share no token besides [CLS]/[SEP]: both cp scores are empty sums (0.0), "
        "counted as a tie (as metric.py)"
    ),
    TIE_NOTHING_AFTER: (
        "the sentences differ only at the end: no shared token follows the difference, so both causal "
        "'shared' scores are empty sums (0.0), counted as a tie"
    ),
}
Direction = Literal["stereo", "antistereo"]
_DIRECTIONS = ("stereo", "antistereo")


@dataclass
class _Prepared:
    ids: list[list[int]]  # one per side
    positions: list[list[int]]
    tie: str | None = None  # TIE_IDENTICAL: score side 0 only and copy it; TIE_NO_SHARED: nothing to score


def _check_sentence(
    lm: LanguageModel, text: Any, specials: set[int]
) -> tuple[list[int] | None, str | None, str | None]:
    """Tokenise one sentence; return (ids, problem, unk_note)."""
    if not isinstance(text, str):
        return None, f"missing sentence ({type(text).__name__}, not text)", None
    if not text.strip():
        return None, "empty sentence", None
    enc_problem = detect_encoding_problem(text)
    if enc_problem is not None:
        return None, f"mis-encoded text ({enc_problem})", None
    ids, offsets = _encode(lm, text)
    if len(ids) > lm.max_length:
        return None, f"longer than the model window ({len(ids)} tokens > {lm.max_length})", None
    if lm.kind == "causal":
        inner = ids[1:] if lm.prefix_token_id is not None else ids  # type: ignore[attr-defined]
        if len(ids) < 2:
            return None, "no token to score (only special tokens)", None
    else:
        inner = ids[1:-1]
        if len(ids) < 3:
            return None, "no token to score (only special tokens)", None
    if lm.kind != "causal" and (ids[0] not in specials or ids[-1] not in specials):
        raise ValueError(
            f"{lm.name}: the tokenizer does not add one special token at each end of a sentence "
            f"({lm.tokenizer.convert_ids_to_tokens(ids[:2])}...); this scorer supports BERT/RoBERTa-style "
            "tokenizers"
        )
    unk = lm.tokenizer.unk_token_id
    if any(i in specials and i != unk for i in inner):
        bad = sorted({lm.tokenizer.convert_ids_to_tokens(i) for i in inner if i in specials and i != unk})
        return None, f"contains special token text {bad}", None
    unk_note = None
    if unk is not None and unk in inner:
        where = [k for k, i in enumerate(ids) if i == unk]
        pieces = []
        if offsets is not None:
            t = text.lower() if lm.lowercase else text
            pieces = [t[offsets[k][0] : offsets[k][1]] for k in where]
        unk_note = f"unknown token(s) {lm.tokenizer.unk_token} for {pieces or len(where)}"
    return ids, None, unk_note


def _prepare(
    lm: LanguageModel,
    examples: Sequence[Sequence[Any]],
    metric: ScoreMetric,
    unk: str,
    lines: Sequence[Any] | None,
    columns: Sequence[str],
    directions: Sequence[str] | None = None,
) -> tuple[dict[int, _Prepared], list[dict[str, Any]], list[tuple[int, str, str, list[int]]]]:
    """Tokenise and validate every example; find the positions to score.

    Also returns ``(row, column, text, tokens)`` of every sentence that tokenised (its tokens without the
    special tokens the scorer adds), for the share of unknown tokens (:func:`_check_unk`).

    Pairs are aligned (``cp``) with :func:`crows_template` in the official order:
    ``(side 0, side 1)`` for ``"stereo"`` (and ``directions=None``), ``(side 1, side 0)`` for
    ``"antistereo"``, the positions being mapped back to their own side.  Pairs identical after
    tokenisation, and ``cp`` pairs sharing no token, are kept as ties (``_Prepared.tie``).
    """
    specials = _special_ids(lm)
    prepared: dict[int, _Prepared] = {}
    issues: list[dict[str, Any]] = []
    read: list[tuple[int, str, str, list[int]]] = []
    causal_prefix = lm.kind == "causal" and lm.prefix_token_id is not None  # type: ignore[attr-defined]

    def issue(i: int, col: str | None, reason: str, action: str, text: Any) -> None:
        line = lines[i] if lines is not None else None
        issues.append(
            {
                "row": i,
                "line": None if line is None or (isinstance(line, float) and math.isnan(line)) else int(line),
                "column": col,
                "reason": reason,
                "action": action,
                "text": str(text)[:80],
            }
        )

    for i, ex in enumerate(examples):
        ids_list: list[list[int]] = []
        ok = True
        for col, text in zip(columns, ex, strict=True):
            ids, problem, unk_note = _check_sentence(lm, text, specials)
            if problem is not None:
                issue(i, col, problem, "skipped", text)
                ok = False
                continue
            assert ids is not None
            body = (
                ids if lm.kind == "causal" and not causal_prefix else ids[1:] if causal_prefix else ids[1:-1]
            )
            read.append((i, col, text, body))
            if unk_note is not None:
                if unk == "skip":
                    issue(i, col, unk_note, "skipped", text)
                    ok = False
                    continue
                issue(i, col, unk_note + " (scored anyway)", "kept", text)
            ids_list.append(ids)  # type: ignore[arg-type]
        if not ok:
            continue
        tie = TIE_IDENTICAL if len(ids_list) == 2 and ids_list[0] == ids_list[1] else None
        if metric == "cp":
            if directions is not None and directions[i] == "antistereo":
                t_less, t_more = crows_template(ids_list[1], ids_list[0])  # metric.py: sent1 = sent_less
                t1, t2 = t_more, t_less
            else:
                t1, t2 = crows_template(ids_list[0], ids_list[1])
            n = len(t1)
            if t1[0] != 0 or t2[0] != 0 or t1[-1] != len(ids_list[0]) - 1 or t2[-1] != len(ids_list[1]) - 1:
                raise AssertionError("difflib template does not start/end with [CLS]/[SEP]")  # cannot happen
            positions = [t1[1 : n - 1], t2[1 : n - 1]]
            if tie == TIE_IDENTICAL and positions[0] != positions[1]:
                # difflib's "popular token" heuristic (sequences >= 200 tokens) can align identical
                # sequences unevenly; metric.py then scores two different position sets: do the same
                tie = None
            if tie is None and n <= 2:
                tie = TIE_NO_SHARED
        elif metric == "shared":
            if directions is not None and directions[i] == "antistereo":
                t_less, t_more = shared_after_difference(ids_list[1], ids_list[0])
                t1, t2 = t_more, t_less
            else:
                t1, t2 = shared_after_difference(ids_list[0], ids_list[1])
            positions = [t1, t2]
            if tie is None and not t1:
                tie = TIE_NOTHING_AFTER
        elif metric in CAUSAL_METRICS:
            positions = [list(range(1, len(ids))) for ids in ids_list]
        else:
            positions = [list(range(1, len(ids) - 1)) for ids in ids_list]
        if tie is not None:
            issue(i, None, _TIE_REASONS[tie], "kept", ex[0])
        prepared[i] = _Prepared(ids=ids_list, positions=positions, tie=tie)
    return prepared, issues, read


def _check_unk(
    lm: LanguageModel,
    read: list[tuple[int, str, str, list[int]]],
    lines: Sequence[Any] | None,
    context: str,
    max_unk_share: float | None,
) -> None:
    """Log the share of ``[UNK]`` tokens of the sentences of a job, once; stop above ``max_unk_share``."""

    def name(k: int) -> str:
        row, col = read[k][0], read[k][1]
        line = lines[row] if lines is not None else None
        where = f" (file line {line})" if line is not None and line == line else ""
        return f"row {row}{where}, {col}"

    check_unk_share(
        [r[2] for r in read],
        [r[3] for r in read],
        lm.tokenizer,
        who=f"{context} with {lm.name}",
        max_unk_share=max_unk_share,
        what=f"the {len(read):,} sentences to score",
        consequence=": their scores would be the model's guesses for its unknown token, not for the words",
        fix=f"Check that {lm.name} is the model meant for this text: its language and characters (e.g. an "
        "English model on Spanish or Chinese text) and its tokenizer (a model folder without its own "
        "tokenizer files reads every word as unknown). Or clean the text, or pass a larger max_unk_share "
        "(None: report only)",
        name=name,
        log=logger,
    )


# =============================================================================================
# public scoring API
# =============================================================================================
def _run(
    lm: LanguageModel,
    examples: list[tuple[Any, ...]],
    columns: Sequence[str],
    metric: ScoreMetric,
    *,
    batch_size: int | None,
    batch_tokens: int | None,
    cache: bool,
    progress: bool,
    errors: Errors,
    unk: str,
    lines: Sequence[Any] | None,
    chunk_size: int | None,
    context: str,
    directions: Sequence[str] | None = None,
    max_unk_share: float | None = MAX_UNK_SHARE,
) -> tuple[_Done, dict[int, str], ValidationReport, int, int, Path | None, BatchStats]:
    """Validate, read the cache, score what is left; return ``(done, ties, report, n_computed,
    n_cached, cache_path, batch_stats)`` where ``ties`` maps the rows kept as ties to their reason."""
    check_metric(lm, metric, pairs=len(columns) == 2)
    if errors not in ("report", "raise"):
        raise ValueError("errors must be 'report' or 'raise'")
    if unk not in ("skip", "score"):
        raise ValueError("unk must be 'skip' or 'score'")
    if batch_size is not None and batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    if chunk_size is not None and chunk_size < 1:
        raise ValueError("chunk_size must be >= 1")
    budget = batch_token_budget(batch_tokens, lm.device)
    stats = BatchStats()
    lines = list(lines) if lines is not None else None  # positional, whatever the input's index
    prepared, issues, read = _prepare(lm, examples, metric, unk, lines, columns, directions)
    _check_unk(lm, read, lines, context, max_unk_share)
    report = ValidationReport.from_records(issues, context=f"{context} ({metric}, {lm.name})")
    if errors == "raise":
        report.raise_if_any(("skipped",))
    report.log(logger, logging.WARNING if len(report) else logging.INFO)
    ties = {i: p.tie for i, p in prepared.items() if p.tie is not None}

    # the alignment order matters for cp only; the default order keeps the earlier cache keys
    orders = list(directions) if metric in ("cp", "shared") and directions is not None else None
    keys = {
        i: example_key(metric, bool(lm.lowercase), examples[i], None if orders is None else orders[i])
        for i in prepared
    }
    path: Path | None = None
    done: _Done = {}
    if cache:
        cols = [[ex[k] for ex in examples] for k in range(len(columns))]
        if orders is not None and "antistereo" in orders:
            cols.append(orders)
        dhash = dataset_fingerprint(*cols)
        path = cache_file(lm, metric, dhash)
        for i, rec in read_cache(path, cache_key(path)).items():
            if i in prepared and rec.get("key") == keys[i]:
                done[i] = [(p["ids"], p["pos"], np.asarray(p["lp"], dtype=np.float64)) for p in rec["sides"]]
    n_cached = len(done)

    from tqdm.auto import tqdm

    def sides_to_score(p: _Prepared) -> int:
        return 1 if p.tie == TIE_IDENTICAL else len(p.ids)

    def input_length(ids: list[int], pos: list[int]) -> int:
        # what the model reads: a causal model only the tokens before the last one it predicts
        if metric in CAUSAL_METRICS:
            return max(pos, default=0)
        return len(ids) if pos else 0

    def cost(i: int) -> tuple[int, int, int]:
        """(items, token slots, longest input) of example ``i``: its work, whatever the cache holds."""
        p = prepared[i]
        n_it = n_tok = longest = 0
        for ids, pos in zip(p.ids[: sides_to_score(p)], p.positions[: sides_to_score(p)], strict=True):
            width = input_length(ids, pos)
            copies = 1 if metric in ONE_PASS_METRICS else len(pos)
            n_it += copies
            n_tok += copies * width
            longest = max(longest, width)
        return n_it, n_tok, longest

    # One plan for the whole job, whatever the cache holds: every example sorted once (masked: by length,
    # longest first; causal: by token sequence, so that sentences sharing a beginning fall into one chunk
    # and their prefix tree reads it once), cut into cache chunks of about 16 token budgets (or
    # ``chunk_size`` examples), each chunk's sequences sorted by length and batched by the token budget.  A
    # resumed job recomputes only the chunks that are missing, with the same batches as an uninterrupted
    # run, so its scores are bit for bit the same.
    costs = {i: cost(i) for i in prepared}
    if metric in CAUSAL_METRICS:
        plan = sorted(prepared, key=lambda i: (prepared[i].ids[0], i))
    else:
        plan = sorted(prepared, key=lambda i: (-costs[i][2], i))
    chunks: list[list[int]] = []
    if chunk_size:
        chunks = [plan[c0 : c0 + chunk_size] for c0 in range(0, len(plan), chunk_size)]
    else:
        target, cur, acc = 16 * budget, [], 0
        for i in plan:
            cur.append(i)
            acc += costs[i][1]
            if acc >= target:
                chunks.append(cur)
                cur, acc = [], 0
        if cur:
            chunks.append(cur)
    chunks = [c for c in chunks if any(i not in done for i in c)]
    todo = [i for c in chunks for i in c if i not in done]
    n_items = sum(costs[i][0] for c in chunks for i in c)
    pbar = tqdm(
        total=n_items,
        desc=f"{metric} PLL" if lm.kind == "masked" else f"{metric} log-likelihood",
        unit="mask" if metric not in ONE_PASS_METRICS else "sent",
        disable=not progress or not todo,
        leave=False,
    )
    fh = None
    try:
        if path is not None and todo:
            fh = open_for_append(path)  # None (a WARNING) when the cache cannot be written
        for chunk in chunks:
            seqs: list[list[int]] = []
            pos_lists: list[list[int]] = []
            owner: list[tuple[int, int]] = []
            for i in chunk:
                p = prepared[i]
                for s in range(sides_to_score(p)):
                    seqs.append(p.ids[s])
                    pos_lists.append(p.positions[s])
                    owner.append((i, s))
            kw = {"batch_size": batch_size, "batch_tokens": budget, "pbar": pbar, "stats": stats}
            if metric in CAUSAL_METRICS:
                vals = _causal.causal_log_probs(lm, seqs, pos_lists, **kw)
            elif metric == "aul":
                vals = _masked.unmasked_log_probs(lm, seqs, pos_lists, **kw)
            else:
                items = [(k, p, seqs[k][p]) for k, pos in enumerate(pos_lists) for p in pos]
                flat = _masked.masked_log_probs(lm, seqs, items, **kw)
                vals, k0 = [], 0
                for pos in pos_lists:
                    vals.append(flat[k0 : k0 + len(pos)])
                    k0 += len(pos)
            new: _Done = {i: [] for i in chunk if i not in done}
            for (i, _s), ids, pos, v in zip(owner, seqs, pos_lists, vals, strict=True):
                if i in new:
                    new[i].append((ids, pos, v))
            for i in new:
                if prepared[i].tie == TIE_IDENTICAL:  # the same sentence: the same score, exactly
                    ids0, pos0, v0 = new[i][0]
                    new[i].append((list(ids0), list(pos0), v0.copy()))
            done.update(new)
            if fh is not None and path is not None:
                file_key = cache_key(path)
                records = [
                    encode_record(
                        {
                            "row": i,
                            "key": keys[i],
                            "sides": [
                                {"ids": ids, "pos": pos, "lp": [float(x) for x in v]} for ids, pos, v in sides
                            ],
                        },
                        file_key,
                    )
                    for i, sides in new.items()
                ]
                if not append_records(fh, records, path):  # a full disk: a WARNING, scoring goes on
                    with contextlib.suppress(OSError):
                        fh.close()
                    fh = None
    finally:
        pbar.close()
        if fh is not None:
            with contextlib.suppress(OSError):
                fh.close()
    return done, ties, report, len(todo), n_cached, path, stats


def _aggregate(metric: str, v: np.ndarray) -> float:
    if metric in MEAN_METRICS:
        return float(v.mean()) if len(v) else float("nan")
    return float(v.sum())


def _tokens_frame(lm: LanguageModel, done: _Done, sides: Sequence[str]) -> pd.DataFrame:
    rows, side_col, pos_col, tid_col, lp_col = [], [], [], [], []
    for i in sorted(done):
        for s, (ids, pos, v) in enumerate(done[i]):
            rows += [i] * len(pos)
            side_col += [sides[s]] * len(pos)
            pos_col += list(pos)
            tid_col += [ids[p] for p in pos]
            lp_col += list(map(float, v))
    toks = lm.tokenizer.convert_ids_to_tokens(tid_col) if tid_col else []
    return pd.DataFrame(
        {
            "row": rows,
            "side": side_col,
            "position": pos_col,
            "token": toks,
            "token_id": tid_col,
            "log_prob": lp_col,
        }
    )


def _score_examples(
    lm: LanguageModel,
    examples: list[tuple[Any, ...]],
    columns: Sequence[str],
    sides: Sequence[str],
    metric: ScoreMetric,
    frame: Callable[[list[int], _Done], dict[str, list[Any]]],
    *,
    lines: Sequence[Any] | None,
    **run_kw: Any,
) -> PLLScores:
    """:func:`_run` on ``examples``, then the :class:`PLLScores` of :func:`score_pairs` /
    :func:`score_sentences`: a ``row`` column, the columns ``frame(rows, done)`` builds, the
    file ``line`` when ``lines`` is given, and the per-token table over ``sides``."""
    done, ties, report, n_comp, n_cached, path, stats = _run(
        lm, examples, columns, metric, lines=lines, **run_kw
    )
    idx = sorted(done)
    df = pd.DataFrame({"row": idx, **frame(idx, done)})
    if len(columns) == 2:
        df["tie_reason"] = pd.Series([ties.get(i) for i in idx], index=df.index, dtype=object)
    if lines is not None:
        ln = list(lines)
        df["line"] = [ln[i] for i in idx]
    return PLLScores(
        scores=df,
        tokens=_tokens_frame(lm, done, sides),
        report=report,
        metric=metric,
        model=lm.name,
        n_computed=n_comp,
        n_cached=n_cached,
        cache_path=path,
        batching=stats.as_dict(),
    )


def _check_directions(
    direction: Sequence[Any] | None, n: int, lines: Sequence[Any] | None
) -> list[str] | None:
    """``direction`` as a list of ``"stereo"`` / ``"antistereo"`` (``None`` stays ``None``); a
    ``ValueError`` naming the rows (and file lines) of any other value."""
    if direction is None:
        return None
    if isinstance(direction, str):
        raise ValueError(
            f"direction must give one value per pair ('stereo' or 'antistereo', e.g. the "
            f"stereo_antistereo column of CrowS-Pairs), not the single string {direction!r}"
        )
    d = list(direction)
    if len(d) != n:
        raise ValueError(f"direction has {len(d)} entries for {n} pairs (one per pair is needed)")
    bad = [k for k, v in enumerate(d) if not (isinstance(v, str) and v in _DIRECTIONS)]
    if bad:
        where = f"rows {bad[:10]}"
        if lines is not None:
            ln = list(lines)
            where += f" (file lines [{', '.join(str(ln[k]) for k in bad[:10])}])"
        raise ValueError(
            f"direction must be 'stereo' or 'antistereo' for every pair; {len(bad)} pair(s) have "
            f"another value at {where}{' ...' if len(bad) > 10 else ''}: "
            f"{sorted({repr(d[k]) for k in bad})[:5]}"
        )
    return d


def score_pairs(
    lm: LanguageModel,
    sent_more: Sequence[str],
    sent_less: Sequence[str],
    metric: ScoreMetric | None = None,
    *,
    direction: Sequence[Direction] | None = None,
    bias_types: Sequence[Any] | None = None,
    lines: Sequence[Any] | None = None,
    batch_size: int | None = None,
    batch_tokens: int | None = None,
    cache: bool = True,
    progress: bool = True,
    errors: Errors = "report",
    unk: Literal["skip", "score"] = "score",
    chunk_size: int | None = None,
    max_unk_share: float | None = MAX_UNK_SHARE,
) -> PLLScores:
    r"""Score CrowS-Pairs-style sentence pairs: ``"cp"``, ``"sz"``, ``"aul"`` (masked) or ``"ll"``,
    ``"ll_mean"``, ``"shared"`` (causal).

    ``metric=None`` picks ``"cp"`` for a masked model and ``"ll"`` for a causal one; the causal metrics
    are described in the module docstring (``"shared"`` is aligned in the same official order as ``"cp"``).

    ``"cp"`` (Nangia et al. 2020, seed 000 section 4.1.6, experiment :math:`E^{CrowS}`):
    :math:`score(S) = \sum_{i=1}^{|U|-2} \log P(u_i \mid U_{\setminus u_i}, O)` where ``U`` =
    :func:`crows_template` of the two token sequences; token for token the official
    ``mask_unigram`` of nyu-mll/crows-pairs ``metric.py`` (sentences lower-cased first when
    ``lm.lowercase``).  ``"sz"`` (Salazar et al. 2020, section 4.1.3, :math:`E^{Sal}`): every
    token but ``[CLS]``/``[SEP]`` masked once, log-probabilities summed.  ``"aul"`` (Kaneko &
    Bollegala 2022): mean log-probability with nothing masked.

    ``direction`` (one ``"stereo"`` / ``"antistereo"`` per pair: the ``stereo_antistereo``
    column of the English CrowS-Pairs, :func:`biaskit.data.datasets.load_crows_pairs_en`) sets the
    order in which ``cp`` aligns a pair, as ``metric.py``'s ``read_data`` does: ``stereo`` ->
    ``crows_template(sent_more, sent_less)``; ``antistereo`` -> ``crows_template(sent_less,
    sent_more)``.  difflib's alignment is not symmetric, so the shared tokens (and the scores)
    can differ between the two orders.  The returned columns keep their meaning
    (``sent_more_score`` is always the score of ``sent_more``).  ``None`` (default) = every
    pair ``"stereo"``, which is the case of the thesis's Spanish CrowS-Pairs (seed 000 section
    4.2.1).  Any other value raises :class:`ValueError` naming the rows.  ``sz`` and ``aul`` do
    not align, so ``direction`` does not change them.

    Pairs identical after tokenisation, and ``cp`` pairs that share no token besides
    ``[CLS]``/``[SEP]``, are **kept** as exact ties (``tie_reason`` column,
    :attr:`PLLScores.tie_rows`, action ``"kept"`` in ``result.report``), as ``metric.py`` and
    the thesis count them (N = 1,503 Spanish pairs).  Sentences with ``[UNK]`` are scored
    (``unk="score"``, the default: ``metric.py`` scores them) and reported as ``"kept"``;
    ``unk="skip"`` leaves those pairs out.  Rows that cannot be scored (see the module
    docstring) are listed in ``result.report`` with ``row`` and, when ``lines`` is given (e.g.
    the ``line`` column of :func:`biaskit.data.datasets.load_crows_pairs_es`), the file line;
    ``errors="raise"`` raises :class:`ValueError` for them instead.  Scores are cached on disk
    (``cache``; the key includes the alignment order); ``result.n_cached`` tells how many came
    from the cache.

    Batching: every sequence of the job (every masked copy for ``cp`` / ``sz``) is sorted once across the
    cache chunks (masked: by length, longest first; causal: by token sequence, so that a beginning several
    sentences share is read once: :func:`biaskit.lm.causal.prefix_tree_rows`), sorted by length within a
    chunk and cut into forward passes by a token budget:
    ``batch_tokens`` token slots (rows x the batch's longest length; default
    :data:`biaskit.lm.base.DEFAULT_BATCH_TOKENS` of the model's device) and, when ``batch_size`` is given,
    at most ``batch_size`` rows.  Scores do not depend on the batches beyond float rounding;
    ``result.batching`` reports the passes and their share of padding.  ``chunk_size`` = examples per cache
    write (default: about 16 token budgets' worth).  The plan depends only on the input, not on what the
    cache holds, so a resumed job gives the scores of an uninterrupted one bit for bit.

    Text the model cannot read: the share of the sentences' tokens that are the tokenizer's unknown token
    (``[UNK]``; :func:`biaskit.lm.tokenizers.unk_share`) is logged once per call (INFO; a WARNING above
    5 %), and above ``max_unk_share`` (default :data:`biaskit.lm.tokenizers.MAX_UNK_SHARE`, 0.2; ``None``:
    report only) a ``ValueError`` gives the share, the threshold, the sentence with the most unknown
    tokens and the fix (the wrong model or tokenizer for the text's language), before anything is scored.
    """
    if len(sent_more) != len(sent_less):
        raise ValueError(f"sent_more has {len(sent_more)} sentences but sent_less has {len(sent_less)}")
    if bias_types is not None and len(bias_types) != len(sent_more):
        raise ValueError("bias_types must have one entry per pair")
    if lines is not None and len(lines) != len(sent_more):
        raise ValueError("lines must have one entry per pair")
    metric = check_metric(lm, metric, pairs=True)  # type: ignore[assignment]
    dirs = _check_directions(direction, len(sent_more), lines)
    examples = list(zip(list(sent_more), list(sent_less), strict=True))
    bt = None if bias_types is None else list(bias_types)

    def frame(idx: list[int], done: _Done) -> dict[str, list[Any]]:
        cols = {
            "sent_more": [examples[i][0] for i in idx],
            "sent_less": [examples[i][1] for i in idx],
            "sent_more_score": [_aggregate(metric, done[i][0][2]) for i in idx],
            "sent_less_score": [_aggregate(metric, done[i][1][2]) for i in idx],
            "n_more": [len(done[i][0][1]) for i in idx],
            "n_less": [len(done[i][1][1]) for i in idx],
        }
        if bt is not None:
            cols["bias_type"] = [bt[i] for i in idx]
        if dirs is not None:
            cols["direction"] = [dirs[i] for i in idx]
        return cols

    return _score_examples(
        lm,
        examples,
        ("sent_more", "sent_less"),
        ("more", "less"),
        metric,
        frame,
        batch_size=batch_size,
        batch_tokens=batch_tokens,
        cache=cache,
        progress=progress,
        errors=errors,
        unk=unk,
        lines=lines,
        chunk_size=chunk_size,
        context="pair scoring",
        directions=dirs,
        max_unk_share=max_unk_share,
    )


def score_sentences(
    lm: LanguageModel,
    sentences: Sequence[str],
    metric: Literal["sz", "aul", "ll", "ll_mean"] | None = None,
    *,
    lines: Sequence[Any] | None = None,
    batch_size: int | None = None,
    batch_tokens: int | None = None,
    cache: bool = True,
    progress: bool = True,
    errors: Errors = "report",
    unk: Literal["skip", "score"] = "skip",
    chunk_size: int | None = None,
    max_unk_share: float | None = MAX_UNK_SHARE,
) -> PLLScores:
    r"""Scores of single sentences: ``"sz"`` / ``"aul"`` (masked models), ``"ll"`` / ``"ll_mean"`` (causal).

    .. math:: PLL(W) = \sum_{t=1}^{|W|} \log P_m(w_t \mid W_{\setminus t}) \qquad
              AUL(W) = \frac{1}{|W|} \sum_{t=1}^{|W|} \log P_m(w_t \mid W)

    .. math:: LL(W) = \sum_{t=1}^{|W|} \log P(w_t \mid \text{BOS}, w_{<t}) \qquad
              LL_{mean}(W) = LL(W) / |W|

    ``metric=None`` picks ``"sz"`` for a masked model and ``"ll"`` for a causal one.

    Seed 000 section 4.1.3.  ``[CLS]``/``[SEP]`` are never scored.  See :func:`score_pairs`
    for validation, caching and the ``tokens`` table; unlike :func:`score_pairs` (which follows
    the CrowS-Pairs ``metric.py``), sentences with ``[UNK]`` are skipped by default here
    (``unk="skip"``; ``unk="score"`` keeps them, reported as "kept").  Batching (``batch_tokens``,
    ``batch_size``, ``chunk_size``) and ``result.batching`` as in :func:`score_pairs`, and so is
    ``max_unk_share`` (the share of ``[UNK]`` tokens, logged; above it a ``ValueError``).
    """
    metric = check_metric(lm, metric, pairs=False)  # type: ignore[assignment]
    examples = [(s,) for s in sentences]

    def frame(idx: list[int], done: _Done) -> dict[str, list[Any]]:
        return {
            "sentence": [examples[i][0] for i in idx],
            "score": [_aggregate(metric, done[i][0][2]) for i in idx],
            "n_tokens": [len(done[i][0][1]) for i in idx],
        }

    return _score_examples(
        lm,
        examples,
        ("sentence",),
        ("sentence",),
        metric,
        frame,
        batch_size=batch_size,
        batch_tokens=batch_tokens,
        cache=cache,
        progress=progress,
        errors=errors,
        unk=unk,
        lines=lines,
        chunk_size=chunk_size,
        context="sentence scoring",
        max_unk_share=max_unk_share,
    )
