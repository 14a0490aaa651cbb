"""Tiny in-process masked language models for tests, benchmarks and offline notebooks.

No model hub is reachable offline, yet the real scoring code in :mod:`biaskit.mlm`
must run end to end.  :func:`tiny_masked_lm` builds, in a fraction of a second, a
randomly initialised ``BertForMaskedLM`` with a WordPiece tokenizer whose
vocabulary comes from the bundled Spanish CrowS-Pairs sentences.

**Its scores mean nothing about bias**: the weights are random.  It exists to
exercise tokenisation, masking, batching, caching and reporting on real text.

Determinism: the ``tokenizers`` library's ``WordPieceTrainer`` picks different
sub-words from run to run when merge counts tie (its hash maps are randomly
seeded per process), so the vocabulary is chosen deterministically instead
(:func:`biaskit.training.build_wordpiece_vocab`: frequency, then alphabetical order), from the text as normalised and
pre-tokenised by the ``tokenizers`` BERT normaliser / pre-tokenizer; the
``tokenizers`` ``WordPiece`` model then does the tokenising.  Weights come from
``torch.manual_seed(seed)``.  Same ``seed`` -> same model, in every process.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import torch

from biaskit.mlm import MaskedLM
from biaskit.training import bert_wordpiece_tokenizer, build_wordpiece_vocab

__all__ = ["tiny_masked_lm", "tiny_tokenizer"]


def _default_texts() -> list[str]:
    from biaskit.datasets import load_crows_pairs_es_table

    table = load_crows_pairs_es_table()
    cols = ["sent_more", "sent_less", "sent_more_par", "sent_less_par", "sent_more_ran", "sent_less_ran"]
    return [s for c in cols for s in table[c] if isinstance(s, str)]


@functools.lru_cache(maxsize=4)
def _default_vocab(vocab_size: int, lowercase: bool) -> tuple[str, ...]:
    return tuple(build_wordpiece_vocab(_default_texts(), vocab_size, lowercase=lowercase))


def tiny_tokenizer(
    texts: Sequence[str] | None = None,
    vocab_size: int = 1500,
    *,
    lowercase: bool = True,
    model_max_length: int = 128,
):
    """A ``transformers`` BERT tokenizer over :func:`build_wordpiece_vocab` (bundled Spanish text by default)."""
    if texts is None:
        vocab = _default_vocab(vocab_size, lowercase)
    else:
        vocab = tuple(build_wordpiece_vocab(list(texts), vocab_size, lowercase=lowercase))
    return bert_wordpiece_tokenizer(vocab, lowercase=lowercase, model_max_length=model_max_length)


def tiny_masked_lm(
    seed: int = 0,
    *,
    hidden_size: int = 16,
    num_hidden_layers: int = 1,
    num_attention_heads: int = 2,
    intermediate_size: int = 32,
    vocab_size: int = 1500,
    max_position_embeddings: int = 128,
    initializer_range: float = 0.4,
    texts: Sequence[str] | None = None,
    model_vocab_size: int | None = None,
    device: str = "cpu",
) -> MaskedLM:
    """A randomly initialised ``BertForMaskedLM`` + WordPiece tokenizer, wrapped as :class:`MaskedLM`.

    Defaults give a model of ~60k parameters that scores the 1503 Spanish CrowS-Pairs
    pairs in seconds on one CPU core.  ``initializer_range`` is larger than BERT's
    0.02 so that the predicted distributions are far from uniform (a wrong position or
    target id then changes the scores visibly).  The model window is
    ``max_position_embeddings`` tokens.  ``name`` is ``"tiny-random-bert(seed=...)"``;
    caches are keyed by a hash of the weights and vocabulary.  ``model_vocab_size`` (>= the
    tokenizer's vocabulary) widens the embedding / output layer, e.g. to BETO's 31,002 rows
    for realistic benchmark timings; the extra rows are ids the tokenizer never produces.
    """
    from transformers import BertConfig, BertForMaskedLM

    tokenizer = tiny_tokenizer(texts, vocab_size, model_max_length=max_position_embeddings)
    n_vocab = len(tokenizer.get_vocab())
    if model_vocab_size is not None and model_vocab_size < n_vocab:
        raise ValueError(f"model_vocab_size must be >= the tokenizer's {n_vocab} entries")
    config = BertConfig(
        vocab_size=model_vocab_size or n_vocab,
        hidden_size=hidden_size,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads,
        intermediate_size=intermediate_size,
        max_position_embeddings=max_position_embeddings,
        initializer_range=initializer_range,
        pad_token_id=tokenizer.pad_token_id,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = BertForMaskedLM(config)
    model.eval()
    model.to(device)
    name = f"tiny-random-bert(seed={seed},h={hidden_size},l={num_hidden_layers},v={config.vocab_size})"
    return MaskedLM(
        model=model,
        tokenizer=tokenizer,
        name=name,
        revision=None,
        lowercase=True,
        in_process=True,
        is_fallback=True,
    )


# =============================================================================================
# naive reference implementations (one forward pass per mask), for tests and benchmarks
# =============================================================================================
def reference_pair_scores(lm: MaskedLM, sent1: str, sent2: str, metric: str = "cp") -> dict[str, object]:
    """The official CrowS-Pairs ``mask_unigram`` loop, one forward pass per masked token.

    A line-by-line transcription of ``mask_unigram`` / ``get_log_prob_unigram`` /
    ``get_span`` in nyu-mll/crows-pairs ``metric.py`` (``"cp"``) and of the thesis's
    ``sz`` / ``aul`` branches (nicolaMaddalozzo/biashandler), kept deliberately naive:
    unbatched, unpadded, full ``model(...)`` logits, ``LogSoftmax(dim=0)`` on one row.
    Returns ``{"sent1_score", "sent2_score", "sent1_log_probs", "sent2_log_probs"}``.
    """
    import difflib

    model, tokenizer = lm.model, lm.tokenizer
    log_softmax = torch.nn.LogSoftmax(dim=0)
    mask_id = tokenizer.convert_tokens_to_ids(tokenizer.mask_token)
    if lm.lowercase:
        sent1, sent2 = sent1.lower(), sent2.lower()
    sent1_token_ids = tokenizer.encode(sent1, return_tensors="pt").to(lm.device)
    sent2_token_ids = tokenizer.encode(sent2, return_tensors="pt").to(lm.device)

    def get_log_prob_unigram(masked_token_ids, token_ids, mask_idx, unmasked=False):
        with torch.inference_mode():
            output = model(token_ids if unmasked else masked_token_ids)
        hidden_states = output[0].squeeze(0)
        assert masked_token_ids[0][mask_idx] == mask_id
        hs = hidden_states[mask_idx]
        target_id = token_ids[0][mask_idx]
        return log_softmax(hs)[target_id]

    lps1: list[float] = []
    lps2: list[float] = []
    if metric == "cp":
        seq1 = [str(x) for x in sent1_token_ids[0].tolist()]
        seq2 = [str(x) for x in sent2_token_ids[0].tolist()]
        matcher = difflib.SequenceMatcher(None, seq1, seq2)
        template1, template2 = [], []
        for op in matcher.get_opcodes():
            if op[0] == "equal":
                template1 += [x for x in range(op[1], op[2], 1)]
                template2 += [x for x in range(op[3], op[4], 1)]
        assert len(template1) == len(template2)
        N = len(template1)
        for i in range(1, N - 1):
            m1 = sent1_token_ids.clone().detach()
            m2 = sent2_token_ids.clone().detach()
            m1[0][template1[i]] = mask_id
            m2[0][template2[i]] = mask_id
            lps1.append(get_log_prob_unigram(m1, sent1_token_ids, template1[i]).item())
            lps2.append(get_log_prob_unigram(m2, sent2_token_ids, template2[i]).item())
        s1, s2 = float(sum(lps1)), float(sum(lps2))
    elif metric in ("sz", "aul"):
        for ids, acc in ((sent1_token_ids, lps1), (sent2_token_ids, lps2)):
            N = len(ids[0].tolist())
            for i in range(1, N - 1):
                m = ids.clone().detach()
                m[0][i] = mask_id
                acc.append(get_log_prob_unigram(m, ids, i, unmasked=(metric == "aul")).item())
        if metric == "aul":
            s1, s2 = float(sum(lps1) / len(lps1)), float(sum(lps2) / len(lps2))
        else:
            s1, s2 = float(sum(lps1)), float(sum(lps2))
    else:
        raise ValueError(metric)
    return {"sent1_score": s1, "sent2_score": s2, "sent1_log_probs": lps1, "sent2_log_probs": lps2}


def reference_fill_blank(lm: MaskedLM, context: str, word: str, placeholder: str = "BLANK") -> float:
    """Official StereoSet intrasentence score of one option, one forward pass per sub-word.

    Mirrors ``IntrasentenceLoader`` + ``evaluate_intrasentence`` of moinnadeem/StereoSet
    (``eval_discriminative_models.py``): mean over sub-words of the softmax probability
    of the sub-word at the single mask.
    """
    tok = lm.tokenizer
    insertion_tokens = tok.encode(word, add_special_tokens=False)
    probs = []
    for idx in range(len(insertion_tokens)):
        insertion = tok.decode(insertion_tokens[:idx])
        new_sentence = context.replace(placeholder, f"{insertion}{tok.mask_token}")
        input_ids = torch.tensor([tok.encode(new_sentence)], device=lm.device)
        with torch.inference_mode():
            output = lm.model(input_ids)[0].softmax(dim=-1)
        mask_idxs = input_ids == tok.mask_token_id
        out = output[mask_idxs]  # one row per mask (two for the 2 dev contexts with BLANK twice)
        probs.append(out[:, insertion_tokens[idx]].mean().item())
    return float(sum(probs) / len(probs))


class NumpyBertReference:
    """An independent NumPy re-implementation of a ``BertForMaskedLM`` forward pass (eval mode).

    The *naive* side of the tests: it shares nothing with ``transformers`` but the weights
    (float64, no padding, no attention mask, no batching across sentences).  Every masked
    copy of a sentence is its own forward pass; for speed the copies of **one** sentence
    (all of the same length) are evaluated as a stack of independent passes, whose rows
    never interact.  Supports BERT with absolute position embeddings and erf-GELU, which is
    what :func:`tiny_masked_lm` builds.  :meth:`pair_scores` transcribes the loops of the
    official ``metric.py`` (``cp``) and of the thesis code (``sz``, ``aul``).
    """

    def __init__(self, lm: MaskedLM) -> None:
        cfg = lm.model.config
        if getattr(cfg, "model_type", "") != "bert" or cfg.hidden_act != "gelu":
            raise ValueError("NumpyBertReference supports BERT models with hidden_act='gelu' only")
        self.sd = {k: v.detach().cpu().double().numpy() for k, v in lm.model.state_dict().items()}
        self.n_layers = cfg.num_hidden_layers
        self.n_heads = cfg.num_attention_heads
        self.eps = cfg.layer_norm_eps
        self.mask_id = lm.tokenizer.mask_token_id
        self.lm = lm

    def _ln(self, x, prefix):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + self.eps) * self.sd[prefix + ".weight"] + self.sd[prefix + ".bias"]

    @staticmethod
    def _gelu(x):
        from scipy.special import erf

        return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))

    def _lin(self, x, prefix):
        return x @ self.sd[prefix + ".weight"].T + self.sd[prefix + ".bias"]

    def hidden(self, ids):
        """Last hidden states for token ids of shape ``(L,)`` or ``(copies, L)``."""
        sd = self.sd
        ids = np.atleast_2d(np.asarray(ids))
        c, n = ids.shape
        x = (
            sd["bert.embeddings.word_embeddings.weight"][ids]
            + sd["bert.embeddings.position_embeddings.weight"][:n]
            + sd["bert.embeddings.token_type_embeddings.weight"][0]
        )
        x = self._ln(x, "bert.embeddings.LayerNorm")
        h = x.shape[-1]
        d = h // self.n_heads
        for layer in range(self.n_layers):
            p = f"bert.encoder.layer.{layer}."

            def heads(t):
                return t.reshape(c, n, self.n_heads, d).transpose(0, 2, 1, 3)

            q = heads(self._lin(x, p + "attention.self.query"))
            k = heads(self._lin(x, p + "attention.self.key"))
            v = heads(self._lin(x, p + "attention.self.value"))
            s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d)
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            ctx = (s @ v).transpose(0, 2, 1, 3).reshape(c, n, h)
            x = self._ln(self._lin(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            inter = self._gelu(self._lin(x, p + "intermediate.dense"))
            x = self._ln(self._lin(inter, p + "output.dense") + x, p + "output.LayerNorm")
        return x

    def log_probs(self, hidden_rows):
        """log-softmax over the vocabulary for hidden vectors of shape ``(k, hidden)``."""
        t = self._ln(
            self._gelu(self._lin(hidden_rows, "cls.predictions.transform.dense")),
            "cls.predictions.transform.LayerNorm",
        )
        logits = t @ self.sd["cls.predictions.decoder.weight"].T + self.sd["cls.predictions.decoder.bias"]
        m = logits.max(-1, keepdims=True)
        return logits - (m + np.log(np.exp(logits - m).sum(-1, keepdims=True)))

    def token_log_probs(self, ids, positions, *, masked: bool = True) -> np.ndarray:
        """log P(ids[p] | ids with p masked) for each p (``masked=False``: nothing masked, AUL)."""
        ids = np.asarray(ids)
        positions = np.asarray(positions, dtype=int)
        if len(positions) == 0:
            return np.zeros(0)
        if masked:
            copies = np.repeat(ids[None, :], len(positions), axis=0)
            copies[np.arange(len(positions)), positions] = self.mask_id
            hid = self.hidden(copies)[np.arange(len(positions)), positions]
        else:
            hid = self.hidden(ids)[0, positions]
        return self.log_probs(hid)[np.arange(len(positions)), ids[positions]]

    def pair_scores(self, sent1: str, sent2: str, metric: str = "cp") -> tuple[float, float]:
        """The official ``mask_unigram`` loop (``cp``) / the thesis's ``sz`` and ``aul`` loops."""
        import difflib

        tok = self.lm.tokenizer
        if self.lm.lowercase:
            sent1, sent2 = sent1.lower(), sent2.lower()
        ids1, ids2 = tok.encode(sent1), tok.encode(sent2)
        if metric == "cp":
            t1, t2 = [], []
            for op in difflib.SequenceMatcher(
                None, [str(x) for x in ids1], [str(x) for x in ids2]
            ).get_opcodes():
                if op[0] == "equal":
                    t1 += list(range(op[1], op[2]))
                    t2 += list(range(op[3], op[4]))
            n = len(t1)
            jobs = [(ids1, [t1[i] for i in range(1, n - 1)]), (ids2, [t2[i] for i in range(1, n - 1)])]
        else:
            jobs = [(ids1, list(range(1, len(ids1) - 1))), (ids2, list(range(1, len(ids2) - 1)))]
        out = []
        for ids, positions in jobs:
            lps = self.token_log_probs(ids, positions, masked=(metric != "aul"))
            out.append(float(lps.mean()) if metric == "aul" else float(lps.sum()))
        return out[0], out[1]
