"""WordPiece tokenizers for the models biaskit trains: a deterministic vocabulary and a BERT tokenizer over it.

Used by the trainer (:mod:`biaskit.training.pretrain`) and by the random stand-ins
(:mod:`biaskit.lm.builtin`); they sit in the model layer so that both can read them.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "SPECIAL_TOKENS",
    "as_text",
    "bert_wordpiece_tokenizer",
    "build_wordpiece_vocab",
    "train_wordpiece_tokenizer",
]

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
