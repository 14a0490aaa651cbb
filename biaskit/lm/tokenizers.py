"""WordPiece tokenizers for the models biaskit trains: a deterministic vocabulary and a BERT tokenizer over
it.

Used by the trainer (:mod:`biaskit.training.pretrain`) and by the random stand-ins
(:mod:`biaskit.lm.builtin`); they sit in the model layer so that both can read them.

Text a tokenizer cannot read: :func:`unk_share` (the share of ``[UNK]`` tokens) and
:func:`check_unk_share` (log it, stop above ``max_unk_share``), used by training and fine-tuning
(:mod:`biaskit.training.loop`) and by the scorers (:mod:`biaskit.lm.scoring`).
"""

from __future__ import annotations

import functools
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

__all__ = [
    "MAX_UNK_SHARE",
    "SPECIAL_TOKENS",
    "as_text",
    "bert_wordpiece_tokenizer",
    "build_wordpiece_vocab",
    "check_unk_share",
    "train_wordpiece_tokenizer",
    "unk_share",
]

logger = logging.getLogger(__name__)

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def build_wordpiece_vocab(
    texts: Iterable[str],
    vocab_size: int = 1500,
    *,
    lowercase: bool = True,
    min_count: int = 2,
) -> list[str]:
    """A deterministic WordPiece vocabulary: specials, every character, frequent words and pieces.

    Order: :data:`SPECIAL_TOKENS`; every character seen (word-initial and ``##``
    continuation forms, so nothing but unseen characters maps to ``[UNK]``); then,
    until ``vocab_size``, the most frequent whole words (count >= ``min_count``)
    interleaved with frequent word-initial prefixes (3-5 characters) and ``##``
    suffixes (2-4 characters), so that rare words split into realistic sub-words.
    Ties are broken alphabetically.
    """
    from tokenizers import normalizers, pre_tokenizers

    norm = normalizers.BertNormalizer(lowercase=lowercase, strip_accents=False, clean_text=True)
    pre = pre_tokenizers.BertPreTokenizer()
    words: Counter[str] = Counter()
    for t in texts:
        for w, _ in pre.pre_tokenize_str(norm.normalize_str(t)):
            words[w] += 1
    chars = sorted({c for w in words for c in w})
    vocab: list[str] = list(SPECIAL_TOKENS)
    vocab += chars + ["##" + c for c in chars]
    seen = set(vocab)

    prefixes: Counter[str] = Counter()
    suffixes: Counter[str] = Counter()
    for w, n in words.items():
        for k in (3, 4, 5):
            if len(w) > k:
                prefixes[w[:k]] += n
        for k in (2, 3, 4):
            if len(w) > k + 1:
                suffixes["##" + w[-k:]] += n

    def ranked(c: Counter[str]) -> list[str]:
        return [t for t, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0])) if n >= min_count]

    pools = [ranked(words), ranked(prefixes), ranked(suffixes)]
    shares = [0.6, 0.2, 0.2]
    budget = max(0, vocab_size - len(vocab))
    for pool, share in zip(pools, shares, strict=True):
        take = int(budget * share)
        for tok in pool:
            if take <= 0:
                break
            if tok not in seen:
                vocab.append(tok)
                seen.add(tok)
                take -= 1
    # fill what is left with further words, in order
    for tok in pools[0]:
        if len(vocab) >= vocab_size:
            break
        if tok not in seen:
            vocab.append(tok)
            seen.add(tok)
    return vocab[: max(vocab_size, len(SPECIAL_TOKENS) + 2 * len(chars))]


def as_text(sentences: Sequence[Any]) -> list[str]:
    """Sentences as strings: tokenised sentences (lists of words) are joined with spaces."""
    out = []
    for s in sentences:
        out.append(s if isinstance(s, str) else " ".join(str(t) for t in s))
    return out


@functools.lru_cache(maxsize=8)
def _wordpiece_backend_json(vocab: tuple[str, ...], lowercase: bool) -> str:
    """The ``tokenizers`` pipeline of a BERT WordPiece tokenizer over ``vocab``, serialised (cached)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    ids = {t: i for i, t in enumerate(vocab)}
    tok = Tokenizer(models.WordPiece(vocab=ids, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=lowercase, strip_accents=False, clean_text=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])],
    )
    tok.decoder = decoders.WordPiece(prefix="##")
    return tok.to_str()


def bert_wordpiece_tokenizer(vocab: Sequence[str], *, lowercase: bool = True, model_max_length: int = 512):
    """A BERT tokenizer (``transformers.PreTrainedTokenizerFast``) over a given WordPiece ``vocab``.

    ``vocab`` starts with :data:`SPECIAL_TOKENS` (as :func:`build_wordpiece_vocab` returns it).
    Tokenising is the ``tokenizers`` ``WordPiece`` model (greedy longest match first) after
    ``BertNormalizer`` (accents kept) and ``BertPreTokenizer``; the post-processor adds
    ``[CLS] ... [SEP]``; the decoder joins ``##`` pieces.
    """
    from tokenizers import Tokenizer
    from transformers import BertTokenizer

    backend = Tokenizer.from_str(_wordpiece_backend_json(tuple(vocab), lowercase))
    # BertTokenizer (a PreTrainedTokenizerFast in transformers 5) so that a saved folder reloads as a
    # BERT tokenizer with do_lower_case (read by biaskit.lm.base.MaskedLM); strip_accents=False must be
    # stored too, else the reloaded normaliser strips accents whenever it lower-cases.
    return BertTokenizer(
        tokenizer_object=backend,
        unk_token="[UNK]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        mask_token="[MASK]",
        do_lower_case=lowercase,
        strip_accents=False,
        model_max_length=model_max_length,
    )


def train_wordpiece_tokenizer(
    sentences: Sequence[Any],
    vocab_size: int,
    *,
    lowercase: bool = True,
    min_frequency: int = 2,
    model_max_length: int = 512,
):
    """A deterministic BERT WordPiece tokenizer (``transformers.PreTrainedTokenizerFast``).

    The vocabulary (:func:`build_wordpiece_vocab`) is: the special tokens
    ``[PAD] [UNK] [CLS] [SEP] [MASK]`` (ids 0-4), every character seen (word-initial and
    ``##`` forms), then frequent words, word-initial prefixes and ``##`` suffixes occurring
    at least ``min_frequency`` times, ties broken alphabetically, up to ``vocab_size``
    (more if the characters alone need more); the tokenizer is
    :func:`bert_wordpiece_tokenizer` over it.  Same input -> same tokenizer in every process.
    ``sentences`` are strings or tokenised sentences (joined with spaces).
    """
    texts = as_text(sentences)
    if not any(t.strip() for t in texts):
        raise ValueError("no text to build a vocabulary from")
    vocab = build_wordpiece_vocab(texts, vocab_size, lowercase=lowercase, min_count=min_frequency)
    return bert_wordpiece_tokenizer(vocab, lowercase=lowercase, model_max_length=model_max_length)


#: default of ``max_unk_share``: training, fine-tuning and scoring stop when more than this share of the
#: text's tokens are the tokenizer's unknown token
MAX_UNK_SHARE = 0.2


def unk_share(
    texts: Sequence[str], encoded: Sequence[Sequence[int]], tokenizer: Any
) -> tuple[float, int, int | None]:
    """``(share, n_tokens, worst)``: the share of the non-special tokens of ``encoded`` that are the
    tokenizer's unknown token, their number, and the index of the sequence with the highest share
    (``None`` when no token is unknown or the tokenizer has no unknown token, as byte-level BPE)."""
    unk = getattr(tokenizer, "unk_token_id", None)
    special = set(getattr(tokenizer, "all_special_ids", []) or []) - {unk}
    n_tok = n_unk = 0
    worst, worst_share = None, 0.0
    for i, ids in enumerate(encoded):
        body = [t for t in ids if t not in special]
        k = sum(1 for t in body if t == unk) if unk is not None else 0
        n_tok += len(body)
        n_unk += k
        if body and k / len(body) > worst_share:
            worst, worst_share = i, k / len(body)
    return (n_unk / n_tok if n_tok else 0.0), n_tok, worst


def check_unk_share(
    texts: Sequence[str],
    encoded: Sequence[Sequence[int]],
    tokenizer: Any,
    *,
    who: str,
    max_unk_share: float | None = MAX_UNK_SHARE,
    what: str = "the text",
    consequence: str = "",
    fix: str = "",
    name: Callable[[int], str] = lambda i: f"sentence {i}",
    log: logging.Logger | None = None,
) -> float:
    """Log the share of unknown tokens of ``encoded`` (:func:`unk_share`) and stop above ``max_unk_share``.

    The share is logged on ``log`` (INFO; a WARNING above 5 %).  Above ``max_unk_share`` (``None``: never)
    a ``ValueError`` gives ``who``, the share, the number of tokens of ``what``, the threshold, the
    sequence with the highest share (``name(i)``, its text, how many of its tokens are unknown and the
    words that are), ``consequence`` and ``fix``.  ``ValueError`` for a ``max_unk_share`` outside [0, 1].
    Returns the share.
    """
    if max_unk_share is not None and not 0 <= max_unk_share <= 1:
        raise ValueError(f"max_unk_share must be in [0, 1] or None, got {max_unk_share}")
    share, n_tok, worst = unk_share(texts, encoded, tokenizer)
    unk = getattr(tokenizer, "unk_token", None) or "[UNK]"
    level = logging.WARNING if share > 0.05 else logging.INFO
    (log or logger).log(
        level, "%s: %.2f %% of the %d tokens of %s are %s", who, 100 * share, n_tok, what, unk
    )
    if max_unk_share is None or share <= max_unk_share or worst is None:
        return share
    example = texts[worst]
    unk_id = tokenizer.unk_token_id
    words = [w for w in example.split() if unk_id in tokenizer(w, add_special_tokens=False)["input_ids"]]
    k = sum(1 for t in encoded[worst] if t == unk_id)
    raise ValueError(
        f"{who}: {share:.1%} of the {n_tok:,} tokens of {what} are {unk}, above max_unk_share="
        f"{max_unk_share:g}: the tokenizer cannot read this text{consequence}. "
        f"E.g. {name(worst)}: {example[:120]!r} ({k} of its {len(encoded[worst])} tokens are {unk}"
        + (f": {', '.join(repr(w) for w in words[:6])}" if words else "")
        + f"). {fix}"
    )
