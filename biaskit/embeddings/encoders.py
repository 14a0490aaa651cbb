r"""Sentence (and word) embeddings for SEAT: static word vectors or BERT-family encoders.

SEAT (May et al. 2019, "On Measuring Social Biases in Sentence Encoders", NAACL) replaces the
word vectors of WEAT by *sentence* embeddings of semantically bleached templates ("This is
WORD.").  Seed 001 (Puttick et al. 2024, the BIAS Detection Framework), section 4.2, lists the
ways a sentence embedding is obtained; every one of them is here:

* **static vectors** (:class:`StaticSentenceEncoder`): the mean of the word vectors of the
  sentence's words, :math:`e(S) = \frac{1}{|S'|}\sum_{w \in S'} \vec w` over the words
  :math:`S'` of ``S`` that have a vector (May et al.'s bag-of-words encoder; the framework's
  fastText ``get_vector``);
* **BERT-family encoders** (:class:`TransformerEncoder`), from the hidden states
  :math:`h_1..h_L` of one layer (the last by default):

  - ``"cls"``: :math:`e(S) = h_{\text{[CLS]}}`, the first token (``<s>`` for RoBERTa), as in
    May et al. (2019);
  - ``"target_first"``: :math:`e(S) = h_{t_1}`, the first sub-token of the target word
    (Tan & Celis 2019);
  - ``"target_pooled"``: :math:`e(S) = \frac{1}{K}\sum_{k=1}^{K} h_{t_k}`, the mean over the
    K sub-tokens of the target word (Delobelle et al. 2022).

  WEAT on bare words through an encoder feeds ``[CLS] word [SEP]`` (the tokenizer's own special
  tokens) and pools the same way (seed 001 section 4.2, last paragraph).

**Finding the target word.**  The target is given as a character span ``(start, end)`` of the
sentence (see :func:`biaskit.metrics.seat.locate_target`).  Its sub-tokens are the non-special
tokens whose *offset mapping* (fast tokenizers) overlaps the span -- robust to lower-casing,
accent stripping and sub-word splitting, unlike the framework's ``input_ids.index(token_id)``,
which picks the first occurrence of the token anywhere in the sentence.

**Batching.**  Distinct sentences are encoded once, sorted by length, ``batch_size`` per forward
pass with padding and an attention mask (``torch.inference_mode``); pooling then picks the rows.

Nothing is dropped silently: every sentence that cannot be embedded (no word with a vector, a
target span that matches no token, a sentence longer than the model window) gets a NaN row and
a ``problem`` in :attr:`Encoded.report`; :func:`biaskit.metrics.seat.seat` then applies the OOV
policy (drop with a logged warning, or raise).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np
import pandas as pd

logger = logging.getLogger(__name__)

PoolingMethod = Literal["cls", "target_first", "target_pooled"]
POOLING_METHODS: tuple[str, ...] = ("cls", "target_first", "target_pooled")
Span = tuple[int, int] | None

__all__ = [
    "POOLING_METHODS",
    "Encoded",
    "PoolingMethod",
    "SentenceEncoder",
    "StaticSentenceEncoder",
    "TransformerEncoder",
    "load_encoder",
    "target_token_positions",
]

_VECTOR_SUFFIXES = (".kv", ".model", ".bin", ".vec", ".txt", ".gz")


@dataclass
class Encoded:
    """Embeddings of a list of sentences, row ``i`` for sentence ``i``.

    Attributes
    ----------
    vectors:
        ``(n, dim)`` float64 array; rows of sentences that could not be embedded are NaN.
    ok:
        Boolean mask of the rows that hold an embedding.
    report:
        One row per sentence: ``sentence``, ``span`` (target characters or ``None``),
        ``units`` (the words / sub-tokens that were pooled), ``missing`` (words without a
        vector, static encoders), ``problem`` (``""`` when fine).
    """

    vectors: np.ndarray
    ok: np.ndarray
    report: pd.DataFrame

    def __len__(self) -> int:
        return int(self.vectors.shape[0])

    @property
    def problems(self) -> pd.DataFrame:
        """The rows of :attr:`report` with a problem."""
        return self.report[self.report["problem"] != ""]


class SentenceEncoder(Protocol):
    """Anything with a ``name``, a ``method`` and ``encode(sentences, spans) -> Encoded``."""

    name: str
    method: str

    def encode(self, sentences: Sequence[str], spans: Sequence[Span] | None = None) -> Encoded: ...


def _check_inputs(sentences: Sequence[str], spans: Sequence[Span] | None) -> list[Span]:
    if isinstance(sentences, str):
        raise TypeError("sentences must be a list of strings, not one string")
    bad = [i for i, s in enumerate(sentences) if not isinstance(s, str) or not s.strip()]
    if bad:
        raise ValueError(f"empty or non-string sentences at positions {bad[:10]}")
    if spans is None:
        return [None] * len(sentences)
    if len(spans) != len(sentences):
        raise ValueError(f"{len(spans)} spans for {len(sentences)} sentences")
    out: list[Span] = []
    for i, (s, sp) in enumerate(zip(sentences, spans, strict=True)):
        if sp is None:
            out.append(None)
            continue
        a, b = int(sp[0]), int(sp[1])
        if not 0 <= a < b <= len(s):
            raise ValueError(f"span {sp} is outside sentence {i} {s!r} (length {len(s)})")
        out.append((a, b))
    return out


# =============================================================================================
# static vectors
# =============================================================================================
@dataclass
class StaticSentenceEncoder:
    r"""Sentence embedding = mean of the word vectors of its words (May et al. 2019; seed 001 4.2).

    .. math:: e(S) = \frac{1}{|S'|} \sum_{w \in S'} \vec w, \qquad S' = \{w \in S : w \text{ has a vector}\}

    Parameters
    ----------
    vectors:
        gensim ``KeyedVectors`` or a mapping word -> vector.
    name:
        Label used in tables.
    token_pattern:
        Regular expression of a word (default: letters/digits with inner apostrophes or hyphens,
        so ``"person's"`` and ``"well-known"`` are one token and punctuation is ignored).
    case_fallback:
        When a word has no vector, try its lower-cased form (GoogleNews has ``"This"``; a
        lower-cased corpus model has only ``"esto"``).  Words missing in both forms are skipped
        and listed in ``Encoded.report["missing"]``; a sentence with no word left gets a NaN row.

    The raw (not normalised) vectors are averaged, as May et al.'s bag-of-words encoder and the
    framework's fastText model do.  ``method`` is ``"mean"``; ``spans`` are ignored.
    """

    vectors: Any
    name: str = "static"
    token_pattern: str = r"[^\W_]+(?:['’\-][^\W_]+)*"
    case_fallback: bool = True
    method: str = field(default="mean", init=False)

    def __post_init__(self) -> None:
        self._regex = re.compile(self.token_pattern)
        kti = getattr(self.vectors, "key_to_index", None)
        if kti is None and not isinstance(self.vectors, Mapping):
            raise TypeError(f"vectors must be KeyedVectors or a mapping, got {type(self.vectors).__name__}")
        self._vocab = kti if kti is not None else self.vectors

    @property
    def dim(self) -> int:
        vs = getattr(self.vectors, "vector_size", None)
        if vs is not None:
            return int(vs)
        first = next(iter(self.vectors.values()))
        return int(np.asarray(first).size)

    def tokenize(self, sentence: str) -> list[str]:
        """The words of ``sentence`` (``token_pattern`` matches, in order)."""
        return self._regex.findall(sentence)

    def lookup(self, word: str) -> str | None:
        """The vocabulary key used for ``word`` (itself, or its lower-case form), or ``None``."""
        if word in self._vocab:
            return word
        if self.case_fallback and word.lower() in self._vocab:
            return word.lower()
        return None

    def encode(self, sentences: Sequence[str], spans: Sequence[Span] | None = None) -> Encoded:
        """Mean word vector of every sentence; see the class docstring."""
        spans_ = _check_inputs(sentences, spans)
        out = np.full((len(sentences), self.dim), np.nan)
        ok = np.zeros(len(sentences), dtype=bool)
        rows = []
        cache: dict[str, tuple[np.ndarray | None, list[str], list[str]]] = {}
        for i, s in enumerate(sentences):
            if s not in cache:
                keys, missing = [], []
                for w in self.tokenize(s):
                    k = self.lookup(w)
                    (keys if k is not None else missing).append(k if k is not None else w)
                vec = (
                    np.mean(np.vstack([np.asarray(self.vectors[k], dtype=np.float64) for k in keys]), axis=0)
                    if keys
                    else None
                )
                cache[s] = (vec, keys, missing)
            vec, keys, missing = cache[s]
            problem = "" if vec is not None else "no word of the sentence has a vector"
            if vec is not None:
                out[i] = vec
                ok[i] = True
            rows.append(
                {"sentence": s, "span": spans_[i], "units": keys, "missing": missing, "problem": problem}
            )
        report = pd.DataFrame(rows, columns=["sentence", "span", "units", "missing", "problem"])
        n_missing = sum(len(m) for m in report["missing"])
        if n_missing:
            distinct = sorted({w for m in report["missing"] for w in m})
            logger.info(
                "%s: %d word occurrence(s) without a vector were left out of the sentence means: %s",
                self.name,
                n_missing,
                distinct[:30],
            )
        return Encoded(out, ok, report)


# =============================================================================================
# BERT-family encoders
# =============================================================================================
def target_token_positions(
    offsets: Sequence[tuple[int, int]], special_mask: Sequence[int], span: tuple[int, int]
) -> list[int]:
    """Token positions whose character offsets overlap ``span`` (special tokens excluded).

    A token ``(s, e)`` belongs to the target ``[start, end)`` when ``s < end`` and ``e > start``
    and it is not empty (``e > s``).  Works for WordPiece (``##`` pieces), BPE (a leading space
    inside the token's offsets is harmless) and SentencePiece tokenizers.
    """
    a, b = span
    return [
        j
        for j, ((s, e), sp) in enumerate(zip(offsets, special_mask, strict=True))
        if not sp and e > s and s < b and e > a
    ]


def _base_model(model: Any) -> Any:
    base = getattr(model, "base_model", None)
    return base if base is not None else model


def _causal_architecture(model: Any) -> str | None:
    """The causal (left-to-right) architecture of ``model`` (its class or its configuration's
    ``architectures``: ``...ForCausalLM``, ``...LMHeadModel``, or ``is_decoder``), else ``None``."""
    cfg = getattr(model, "config", None)
    names = [type(model).__name__, *(getattr(cfg, "architectures", None) or [])]
    for n in names:
        if n.endswith(("ForCausalLM", "LMHeadModel")) and not n.startswith("XLNet"):
            return n
    if getattr(cfg, "is_decoder", False):
        return f"{type(model).__name__} (is_decoder=True)"
    return None


@dataclass
class TransformerEncoder:
    r"""Contextual sentence embeddings from a BERT-family model (seed 001 section 4.2).

    Parameters
    ----------
    model, tokenizer:
        A ``transformers`` model (a masked LM or a bare encoder; the encoder body is used) and
        its **fast** tokenizer (offset mappings are needed for the ``target_*`` methods).
    method:
        ``"cls"`` (first token; May et al. 2019), ``"target_first"`` (first sub-token of the
        target word; Tan & Celis 2019) or ``"target_pooled"`` (mean of its sub-tokens;
        Delobelle et al. 2022).
    layer:
        Which hidden state: ``-1`` = last layer (``last_hidden_state``); other values index
        ``hidden_states`` (0 = embeddings output).
    batch_size:
        Sentences per forward pass.
    name:
        Label used in tables (defaults to the model's ``name_or_path``).
    max_length:
        Longest accepted sequence (default: the model's ``max_position_embeddings``).

    All three methods use the same forward pass and differ only in which rows of the hidden
    states are kept (tested in ``tests/embeddings/test_encoders.py`` against a manual computation).

    Notes
    -----
    A causal (left-to-right) model is refused with a ``TypeError``.  Each of its hidden states sees
    only the tokens before it, so ``"cls"`` (the first token) would embed nothing of the sentence and
    the target pooling would ignore every word after the target; none of the three methods of
    seed 001 means what it says there.
    """

    model: Any
    tokenizer: Any
    method: str = "cls"
    layer: int = -1
    batch_size: int = 32
    name: str = ""
    max_length: int | None = None

    def __post_init__(self) -> None:
        causal = _causal_architecture(self.model)
        if causal is not None:
            raise TypeError(
                f"TransformerEncoder needs a bidirectional (BERT-family) encoder; "
                f"{self.name or getattr(self.model.config, 'name_or_path', '') or 'this model'} is a "
                f"causal, left-to-right model ({causal}): each hidden state sees only the tokens before it, "
                "so 'cls' would embed nothing of the sentence and the target pooling no word after the "
                "target. Use a masked language model (e.g. 'en-mlm') or static vectors for SEAT"
            )
        if self.method not in POOLING_METHODS:
            raise ValueError(f"method must be one of {POOLING_METHODS}, got {self.method!r}")
        if self.batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if self.method != "cls" and not getattr(self.tokenizer, "is_fast", False):
            raise ValueError(
                f"method={self.method!r} needs a fast tokenizer (offset mappings) to find the target "
                "word's tokens; load the tokenizer with use_fast=True or use method='cls'"
            )
        if not self.name:
            self.name = str(getattr(getattr(self.model, "config", None), "name_or_path", "") or "transformer")
        if self.max_length is None:
            n_pos = getattr(getattr(self.model, "config", None), "max_position_embeddings", None) or 512
            self.max_length = int(n_pos)

    def with_method(self, method: str) -> TransformerEncoder:
        """The same model and tokenizer with another pooling ``method`` (no copy of the weights)."""
        return TransformerEncoder(
            self.model, self.tokenizer, method, self.layer, self.batch_size, self.name, self.max_length
        )

    @property
    def device(self) -> Any:
        return next(self.model.parameters()).device

    def hidden_states(self, sentences: Sequence[str]) -> list[np.ndarray]:
        """Per sentence, the ``(n_tokens, hidden)`` states of layer ``layer`` (no padding rows)."""
        enc = self._tokenize(list(sentences))
        return self._forward([list(ids) for ids in enc["input_ids"]])

    def _tokenize(self, sentences: list[str]) -> Any:
        kwargs: dict[str, Any] = {"add_special_tokens": True, "truncation": False, "verbose": False}
        if getattr(self.tokenizer, "is_fast", False):
            kwargs["return_offsets_mapping"] = True
        kwargs["return_special_tokens_mask"] = True
        return self.tokenizer(sentences, **kwargs)

    def _forward(self, seqs: list[list[int]]) -> list[np.ndarray]:
        import torch

        base = _base_model(self.model)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        dev = self.device
        order = np.argsort([-len(s) for s in seqs], kind="stable")
        out: list[np.ndarray] = [np.empty((0, 0))] * len(seqs)
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                width = max(len(seqs[i]) for i in idx)
                ids = torch.full((len(idx), width), pad, dtype=torch.long)
                att = torch.zeros((len(idx), width), dtype=torch.long)
                for r, i in enumerate(idx):
                    ids[r, : len(seqs[i])] = torch.as_tensor(seqs[i], dtype=torch.long)
                    att[r, : len(seqs[i])] = 1
                res = base(
                    input_ids=ids.to(dev), attention_mask=att.to(dev), output_hidden_states=self.layer != -1
                )
                hs = res.last_hidden_state if self.layer == -1 else res.hidden_states[self.layer]
                hs = hs.detach().to("cpu", torch.float64).numpy()
                for r, i in enumerate(idx):
                    out[i] = hs[r, : len(seqs[i])]
        return out

    def encode(self, sentences: Sequence[str], spans: Sequence[Span] | None = None) -> Encoded:
        """Embed every sentence with the pooling ``method`` (one forward pass per distinct sentence)."""
        spans_ = _check_inputs(sentences, spans)
        uniq = list(dict.fromkeys(sentences))
        pos_of = {s: k for k, s in enumerate(uniq)}
        enc = self._tokenize(uniq)
        ids_list = [list(x) for x in enc["input_ids"]]
        offsets = enc.get("offset_mapping")
        specials = enc["special_tokens_mask"]
        too_long = {k for k, ids in enumerate(ids_list) if len(ids) > int(self.max_length or 512)}
        run = [k for k in range(len(uniq)) if k not in too_long]
        states = self._forward([ids_list[k] for k in run]) if run else []
        hidden: dict[int, np.ndarray] = dict(zip(run, states, strict=True))
        dim = next(iter(hidden.values())).shape[1] if hidden else 0
        out = np.full((len(sentences), dim), np.nan)
        ok = np.zeros(len(sentences), dtype=bool)
        rows = []
        special_ids = set(self.tokenizer.all_special_ids)
        for i, (s, sp) in enumerate(zip(sentences, spans_, strict=True)):
            k = pos_of[s]
            units: list[str] = []
            problem = ""
            if k in too_long:
                problem = f"longer than the model window ({len(ids_list[k])} > {self.max_length} tokens)"
            elif self.method == "cls":
                if ids_list[k][0] not in special_ids:
                    raise ValueError(
                        f"{self.name}: the tokenizer does not start sentences with a special token "
                        f"([CLS] / <s>); method='cls' is undefined for it"
                    )
                out[i] = hidden[k][0]
                units = [self.tokenizer.convert_ids_to_tokens(ids_list[k][0])]
            elif sp is None:
                problem = "no target span for this sentence"
            else:
                pos = target_token_positions(offsets[k], specials[k], sp)
                if not pos:
                    problem = f"the target span {sp} ({s[sp[0] : sp[1]]!r}) matches no token"
                else:
                    use = pos[:1] if self.method == "target_first" else pos
                    out[i] = hidden[k][use].mean(axis=0)
                    units = self.tokenizer.convert_ids_to_tokens([ids_list[k][j] for j in use])
            ok[i] = problem == ""
            rows.append({"sentence": s, "span": sp, "units": units, "missing": [], "problem": problem})
        report = pd.DataFrame(rows, columns=["sentence", "span", "units", "missing", "problem"])
        n_bad = int((~ok).sum())
        if n_bad:
            logger.warning(
                "%s (%s): %d of %d sentence(s) could not be embedded", self.name, self.method, n_bad, len(ok)
            )
        return Encoded(out, ok, report)


# =============================================================================================
# loading
# =============================================================================================
def _is_vector_file(spec: str) -> bool:
    from biaskit.core.paths import resolve_user_path

    p = resolve_user_path(spec)
    return p.is_file() and p.name.lower().endswith(_VECTOR_SUFFIXES)


def load_encoder(
    spec: Any,
    *,
    method: str = "cls",
    layer: int = -1,
    batch_size: int = 32,
    device: str = "auto",
    name: str | None = None,
) -> StaticSentenceEncoder | TransformerEncoder:
    """An encoder from a model specification.

    ``spec`` is one of: gensim ``KeyedVectors`` or a ``{word: vector}`` mapping (static); a
    :class:`biaskit.lm.MaskedLM`; the name of offline reference vectors
    (:data:`biaskit.embeddings.vectors.REFERENCE_VECTORS`, e.g. ``"word2vec-googlenews-wefe"``); a vector
    file (``.kv .bin .vec .txt .gz``); ``"tiny"`` (the in-process random BERT of
    :mod:`biaskit.lm.builtin`, meaningless numbers); or a Hugging Face model folder / hub id
    (loaded offline-safely by :func:`biaskit.lm.load_masked_lm`).  ``method``, ``layer`` and
    ``batch_size`` apply to transformer encoders; static encoders always average.
    """
    from biaskit.embeddings.vectors import REFERENCE_VECTORS, load_reference_vectors, load_vectors
    from biaskit.lm import MaskedLM, get_masked_lm, load_masked_lm

    if isinstance(spec, MaskedLM) or getattr(spec, "kind", None) == "causal":  # a causal one is refused there
        return TransformerEncoder(spec.model, spec.tokenizer, method, layer, batch_size, name or spec.name)
    if hasattr(spec, "key_to_index") or isinstance(spec, Mapping):
        return StaticSentenceEncoder(spec, name=name or "static")
    if not isinstance(spec, (str, Path)):
        raise TypeError(f"cannot build an encoder from {type(spec).__name__}")
    s = str(spec)
    if s in REFERENCE_VECTORS:
        return StaticSentenceEncoder(load_reference_vectors(s), name=name or s)
    if _is_vector_file(s):
        return StaticSentenceEncoder(load_vectors(s), name=name or Path(s).name)
    lm = get_masked_lm("tiny") if s == "tiny" else load_masked_lm(s, device=device)
    return TransformerEncoder(lm.model, lm.tokenizer, method, layer, batch_size, name or lm.name)
