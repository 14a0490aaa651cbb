"""Naive reference implementations for tests and benchmarks: what the fast scorers are checked against.

Nothing in ``biaskit`` imports this module; tests and ``benchmarks/`` do.  The random-weight models used
with them live in :mod:`biaskit.lm.builtin` (:func:`~biaskit.lm.builtin.tiny_masked_lm`,
:func:`~biaskit.lm.builtin.tiny_causal_lm`).
"""

from __future__ import annotations

import numpy as np
import torch

from biaskit.lm.base import MaskedLM

__all__ = ["NumpyBertReference", "reference_fill_blank", "reference_pair_scores"]


# =============================================================================================
# naive reference implementations (one forward pass per mask), for tests and benchmarks
# =============================================================================================
def reference_pair_scores(
    lm: MaskedLM, sent1: str, sent2: str, metric: str = "cp", *, stacked: bool = False
) -> dict[str, object]:
    """The official CrowS-Pairs ``mask_unigram`` loop, one forward pass per masked token.

    A line-by-line transcription of ``mask_unigram`` / ``get_log_prob_unigram`` / ``get_span`` in
    nyu-mll/crows-pairs ``metric.py`` (``"cp"``) and of the thesis's ``sz`` / ``aul`` branches
    (nicolaMaddalozzo/biashandler), kept deliberately naive: unbatched, unpadded, no attention mask, full
    ``model(...)`` logits, ``LogSoftmax(dim=0)`` on one row.  The benchmarks time this loop.

    ``stacked=True`` (for tests over many pairs) evaluates the masked copies of **one** sentence, which all
    have that sentence's length, as one stack of passes whose rows never interact (no padding, eval mode),
    as :class:`NumpyBertReference` does; ``aul``, which reads the unmasked sentence at every token, then
    runs it once.  Nothing else changes; on the tiny test models the two give the same floats.
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

    def get_log_probs_unigram(token_ids, mask_idxs, unmasked=False) -> list[float]:
        """``get_log_prob_unigram`` at each of ``mask_idxs``: one pass per copy, or one stacked pass."""
        if not stacked:
            out = []
            for mask_idx in mask_idxs:
                masked = token_ids.clone().detach()
                masked[0][mask_idx] = mask_id
                out.append(get_log_prob_unigram(masked, token_ids, mask_idx, unmasked).item())
            return out
        if not mask_idxs:
            return []
        batch = token_ids if unmasked else token_ids.repeat(len(mask_idxs), 1)
        if not unmasked:
            for row, mask_idx in enumerate(mask_idxs):
                batch[row][mask_idx] = mask_id
        with torch.inference_mode():
            hidden_states = model(batch)[0]
        return [
            log_softmax(hidden_states[0 if unmasked else row][mask_idx])[token_ids[0][mask_idx]].item()
            for row, mask_idx in enumerate(mask_idxs)
        ]

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
        lps1 = get_log_probs_unigram(sent1_token_ids, [template1[i] for i in range(1, N - 1)])
        lps2 = get_log_probs_unigram(sent2_token_ids, [template2[i] for i in range(1, N - 1)])
        s1, s2 = float(sum(lps1)), float(sum(lps2))
    elif metric in ("sz", "aul"):
        lps1 = get_log_probs_unigram(
            sent1_token_ids, list(range(1, sent1_token_ids.shape[1] - 1)), metric == "aul"
        )
        lps2 = get_log_probs_unigram(
            sent2_token_ids, list(range(1, sent2_token_ids.shape[1] - 1)), metric == "aul"
        )
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
