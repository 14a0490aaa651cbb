"""Reading a word's probability at a mask, BERT-style or XLNet: the model side of the indirect score
(Louis-Alexandre 2022, seed 004; :mod:`biaskit.metrics.indirect_bias`).

:class:`BridgeLM` wraps a :class:`~biaskit.lm.MaskedLM` (a BERT-style masked LM or an XLNet LM-head model)
with how the indirect score reads it: the sentence of a template with its slots filled or masked
(:meth:`BridgeLM.fill`), single-token words (:meth:`BridgeLM.word_id`) and batched log-probabilities at a
chosen mask (:meth:`BridgeLM.log_probs_at_masks`).

**XLNet** (seed 004 section 3.3.3): the padding text (:data:`~biaskit.data.louis_alexandre.PADDING_TEXT`)
is prepended; ``xlnet_mode="naive"`` (default, the thesis's literal description) reads the content stream
at ``<mask>``; ``"perm_mask"`` hides every masked position from all tokens (``perm_mask[:, :, masks] = 1``)
and predicts through the query stream (``target_mapping``), as the Hugging Face XLNet example does.
Log-softmax in float64 at the read positions.

:func:`load_bridge_lm` loads a checkpoint (or a bundled / random stand-in) as a :class:`BridgeLM`;
:func:`tiny_bridge_lm` builds a tiny random BERT or XLNet over the seed 004 vocabulary (offline tests).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from biaskit.data.louis_alexandre import (
    PADDING_TEXT,
    SLOT_RE,
    load_louis_alexandre_rules,
    load_louis_alexandre_templates,
    load_louis_alexandre_words,
    target_text,
)
from biaskit.lm.base import MaskedLM
from biaskit.lm.loading import ModelNotAvailableError

__all__ = ["BridgeLM", "XLNetMode", "load_bridge_lm", "tiny_bridge_lm"]

XLNetMode = Literal["naive", "perm_mask"]


def _base_and_head(model: Any) -> tuple[Any, Any] | None:
    for attr in ("cls", "lm_head", "predictions"):  # BERT, RoBERTa, ALBERT
        head = getattr(model, attr, None)
        if isinstance(head, torch.nn.Module):
            return model.base_model, head
    return None


@dataclass(eq=False)
class BridgeLM:
    """A masked LM (BERT-style) or an XLNet LM-head model, and how to read a word's probability at a mask.

    Parameters
    ----------
    lm:
        A :class:`~biaskit.lm.MaskedLM` (from :func:`load_bridge_lm`, :func:`biaskit.lm.load_masked_lm`
        or :func:`tiny_bridge_lm`).  ``lm.lowercase`` lower-cases the text (never the mask token).
    xlnet_mode:
        ``"naive"`` or ``"perm_mask"`` (module docstring); ignored for BERT-style models.
    padding_text:
        Prepended to every XLNet sentence (default :data:`PADDING_TEXT`; ``""`` = none).
    batch_size:
        Sentences per forward pass.
    """

    lm: MaskedLM
    xlnet_mode: XLNetMode = "naive"
    padding_text: str | None = None
    batch_size: int = 64
    _word_ids: dict[str, int | None] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.xlnet_mode not in ("naive", "perm_mask"):
            raise ValueError("xlnet_mode must be 'naive' or 'perm_mask'")
        if self.batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if self.padding_text is None:
            self.padding_text = PADDING_TEXT if self.kind == "xlnet" else ""

    @property
    def kind(self) -> str:
        return "xlnet" if getattr(self.lm.model.config, "model_type", "") == "xlnet" else "bert"

    @property
    def name(self) -> str:
        return self.lm.name

    @property
    def mask_token(self) -> str:
        return str(self.lm.tokenizer.mask_token)

    def cache_id(self) -> str:
        """Model fingerprint + every option that changes the numbers."""
        h = hashlib.sha256(
            json.dumps(
                [
                    self.lm.fingerprint(),
                    self.kind,
                    self.xlnet_mode if self.kind == "xlnet" else None,
                    self.padding_text,
                    bool(self.lm.lowercase),
                ]
            ).encode()
        )
        return h.hexdigest()[:16]

    def _lc(self, text: str) -> str:
        return text.lower() if self.lm.lowercase else text

    def word_id(self, word: str) -> int | None:
        """The token id of ``word`` when it is a single token of the model (``None`` otherwise).

        Encoded without special tokens (XLNet: the word-initial ``▁`` piece); ``[UNK]`` counts as
        not single-token.
        """
        if word not in self._word_ids:
            tok = self.lm.tokenizer
            ids = tok(self._lc(word), add_special_tokens=False)["input_ids"]
            ok = len(ids) == 1 and ids[0] != tok.unk_token_id
            self._word_ids[word] = int(ids[0]) if ok else None
        return self._word_ids[word]

    def fill(
        self,
        template: str,
        target: str | None,
        *,
        target_category: str = "",
        rules: Mapping[str, Any] | None = None,
    ) -> str:
        """The sentence of ``template`` with the target (``None`` = mask) and the feature masked.

        XLNet sentences are prefixed with the padding text.
        """
        rules = rules if rules is not None else {}
        mask = self.mask_token

        def rep(m: re.Match[str]) -> str:
            slot = m.group(1)
            if slot == "feature" or target is None:
                return "\x00"
            return self._lc(target_text(target, target_category, slot == "target_pl", rules))

        parts = SLOT_RE.sub(rep, template).split("\x00")
        text = mask.join(self._lc(p) for p in parts)
        if self.kind == "xlnet" and self.padding_text:
            text = self.padding_text + " " + text
        return text

    def encode(self, sentences: Sequence[str]) -> list[list[int]]:
        enc = self.lm.tokenizer(list(sentences), add_special_tokens=True, truncation=False, verbose=False)
        return [list(x) for x in enc["input_ids"]]

    # ------------------------------------------------------------------------- forward passes
    def log_probs_at_masks(
        self,
        seqs: Sequence[Sequence[int]],
        which_mask: Sequence[int],
        candidates: np.ndarray,
        *,
        progress: bool = False,
        desc: str = "masked LM",
    ) -> np.ndarray:
        """``log P(candidates[r, k] | seqs[r])`` read at the ``which_mask[r]``-th mask token of each sequence.

        Sequences are sorted by length and scored ``batch_size`` per forward pass (right padding with
        an attention mask).  Returns a float64 array of ``candidates``' shape.
        """
        tok = self.lm.tokenizer
        mask_id = tok.mask_token_id
        pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
        cand = np.asarray(candidates, dtype=np.int64)
        n = len(seqs)
        if cand.shape[0] != n or len(which_mask) != n:
            raise ValueError("seqs, which_mask and candidates must have one row per sequence")
        out = np.empty(cand.shape, dtype=np.float64)
        if n == 0:
            return out
        mask_pos: list[list[int]] = [[j for j, t in enumerate(s) if t == mask_id] for s in seqs]
        for r, (mp, k) in enumerate(zip(mask_pos, which_mask, strict=True)):
            if k >= len(mp):
                raise ValueError(
                    f"sequence {r} has {len(mp)} mask token(s), cannot read mask #{k}: "
                    f"{tok.decode(list(seqs[r]))[-120:]!r}"
                )
        max_len = self.lm.max_length if self.kind == "bert" else 10**9
        too_long = [r for r, s in enumerate(seqs) if len(s) > max_len]
        if too_long:
            raise ValueError(f"{len(too_long)} sentence(s) longer than the model window ({max_len} tokens)")
        lengths = np.array([len(s) for s in seqs])
        order = np.argsort(-lengths, kind="stable")
        model = self.lm.model
        dev = self.lm.device
        from tqdm.auto import tqdm

        bar = tqdm(total=n, desc=desc, unit="sent", disable=not progress, leave=False)
        try:
            with torch.inference_mode():
                for start in range(0, n, self.batch_size):
                    idx = order[start : start + self.batch_size]
                    b = len(idx)
                    width = int(lengths[idx].max())
                    inp = torch.full((b, width), pad_id, dtype=torch.long)
                    att = torch.zeros((b, width), dtype=torch.long)
                    pos = torch.empty(b, dtype=torch.long)
                    for r, i in enumerate(idx):
                        s = seqs[i]
                        inp[r, : len(s)] = torch.as_tensor(list(s), dtype=torch.long)
                        att[r, : len(s)] = 1
                        pos[r] = mask_pos[i][which_mask[i]]
                    rows = torch.arange(b)
                    inp, att = inp.to(dev), att.to(dev)
                    if self.kind == "xlnet":
                        if self.xlnet_mode == "perm_mask":
                            fdt = next(model.parameters()).dtype
                            perm = torch.zeros((b, width, width), dtype=fdt)
                            tmap = torch.zeros((b, 1, width), dtype=fdt)
                            for r, i in enumerate(idx):
                                perm[r, :, mask_pos[i]] = 1.0
                                tmap[r, 0, pos[r]] = 1.0
                            hid = model.transformer(
                                input_ids=inp,
                                attention_mask=att,
                                perm_mask=perm.to(dev),
                                target_mapping=tmap.to(dev),
                            )[0][:, 0]
                        else:
                            hid = model.transformer(input_ids=inp, attention_mask=att)[0][
                                rows.to(dev), pos.to(dev)
                            ]
                        logits = model.lm_loss(hid)
                    else:
                        bh = _base_and_head(model)
                        if bh is not None:
                            hid = bh[0](input_ids=inp, attention_mask=att)[0][rows.to(dev), pos.to(dev)]
                            logits = bh[1](hid)
                        else:
                            logits = model(input_ids=inp, attention_mask=att).logits[
                                rows.to(dev), pos.to(dev)
                            ]
                    lp = torch.log_softmax(logits.double(), dim=-1)
                    c = torch.as_tensor(cand[idx], device=lp.device)
                    out[idx] = lp.gather(1, c).cpu().numpy()
                    bar.update(b)
        finally:
            bar.close()
        return out


def tiny_bridge_lm(
    kind: Literal["bert", "xlnet"] = "bert",
    seed: int = 0,
    *,
    xlnet_mode: XLNetMode = "naive",
    hidden_size: int = 16,
    vocab_size: int = 4000,
    padding_text: str | None = None,
    batch_size: int = 256,
) -> BridgeLM:
    """A tiny random BERT or XLNet over an English vocabulary of the seed 004 words and templates.

    **Its numbers mean nothing about bias** (random weights); it runs the whole pipeline offline.
    BERT: :func:`biaskit.lm.tiny_masked_lm` (lower-cased WordPiece) trained on the templates and
    word lists; some rarer names and traits split into several pieces and are dropped, as real
    models do.  XLNet: an ``XLNetTokenizer`` over a deterministic Unigram vocabulary (cased,
    ``▁``-prefixed words; hyphenated words split) and a 1-layer ``XLNetLMHeadModel`` built from a config.
    """
    texts = _english_texts()
    if kind == "bert":
        from biaskit.lm.builtin import tiny_masked_lm

        lm = tiny_masked_lm(
            seed=seed,
            texts=texts,
            vocab_size=vocab_size,
            hidden_size=hidden_size,
            max_position_embeddings=128,
        )
        lm.name = lm.name.replace("tiny-random-bert", "tiny-random-bert-en")
        return BridgeLM(lm, batch_size=batch_size)
    if kind != "xlnet":
        raise ValueError("kind must be 'bert' or 'xlnet'")
    from transformers import XLNetConfig, XLNetLMHeadModel, XLNetTokenizer

    pad = PADDING_TEXT if padding_text is None else padding_text
    specials = ["<unk>", "<s>", "</s>", "<cls>", "<sep>", "<pad>", "<mask>", "<eod>", "<eop>"]
    counts: dict[str, int] = {}
    for t in [*texts, pad]:
        for w in re.findall(r"[A-Za-z0-9]+|[^\sA-Za-z0-9]", t):
            counts[w] = counts.get(w, 0) + 1
    chars = sorted({c for w in counts for c in w})
    words = sorted(w for w in counts if len(w) > 1 or w.isalnum())
    vocab = [(s, 0.0) for s in specials]
    vocab += [("▁" + w, -5.0 - 1.0 / (1 + counts[w])) for w in words]
    vocab += [("▁", -8.0)] + [(c, -10.0) for c in chars]
    tok = XLNetTokenizer(vocab=vocab)
    cfg = XLNetConfig(
        vocab_size=len(vocab),
        d_model=hidden_size,
        n_layer=1,
        n_head=2,
        d_inner=2 * hidden_size,
        dropout=0.0,
        initializer_range=0.4,
        pad_token_id=tok.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = XLNetLMHeadModel(cfg)
    model.eval()
    lm = MaskedLM(
        model=model,
        tokenizer=tok,
        name=f"tiny-random-xlnet-en(seed={seed},h={hidden_size},v={len(vocab)})",
        lowercase=False,
        in_process=True,
        is_fallback=True,
    )
    return BridgeLM(lm, xlnet_mode=xlnet_mode, padding_text=padding_text, batch_size=batch_size)


@lru_cache(maxsize=1)
def _english_texts() -> tuple[str, ...]:
    words = load_louis_alexandre_words()
    sets = load_louis_alexandre_templates()
    texts: list[str] = []
    for ts in sets.values():
        for t in ts.templates:
            texts.append(SLOT_RE.sub("x", t))
    for ws in words.values():
        for w in ws:
            texts += [w, w]
    for forms in load_louis_alexandre_rules()["irregular_plurals"].values():
        texts += [forms, forms]
    return tuple(texts)


def load_bridge_lm(
    name_or_path: str | Path,
    *,
    device: str | torch.device = "auto",
    xlnet_mode: XLNetMode = "naive",
    padding_text: str | None = None,
    batch_size: int = 64,
    local_files_only: bool | None = None,
) -> BridgeLM:
    """Load a checkpoint for the indirect score: BERT-style via :func:`biaskit.lm.load_masked_lm`,
    XLNet (``xlnet-base-cased``, ``xlnet-large-cased``) via ``XLNetLMHeadModel``.

    ``"tiny"`` / ``"tiny-xlnet"`` give :func:`tiny_bridge_lm` (random weights).  A bundled model
    trained by biaskit (:data:`biaskit.lm.catalogue.MODEL_NAMES`, e.g. ``"en-mlm"``) is loaded from
    ``data/models`` and keeps its short name (the cache key still follows its files); the bundled XLNet
    ``"en-xlnet"`` (:func:`biaskit.lm.catalogue.load_trained_xlnet`) is read as an XLNet (padding text,
    ``xlnet_mode``).  ``"auto"``
    is :func:`biaskit.lm.resolve_default_model` for English (bert-base-uncased if on this machine,
    else ``"en-mlm"``, else ``"tiny"``).  Otherwise offline: a local folder or the Hugging Face cache;
    a missing model raises :class:`~biaskit.lm.ModelNotAvailableError` saying how to get it.
    """
    from biaskit.lm.builtin import is_trained_name, resolve_default_model

    name = str(name_or_path)
    if name == "auto":
        name = resolve_default_model("auto", language="en").name
    if name == "tiny":
        return tiny_bridge_lm("bert", batch_size=max(batch_size, 256))
    if name == "tiny-xlnet":
        return tiny_bridge_lm(
            "xlnet", xlnet_mode=xlnet_mode, padding_text=padding_text, batch_size=max(batch_size, 256)
        )
    if is_trained_name(name):
        from biaskit.lm import catalogue as trained_models
        from biaskit.lm.builtin import get_masked_lm

        try:
            trained_models.model_path(name)
        except FileNotFoundError as exc:
            raise ModelNotAvailableError(str(exc)) from exc
        if name in trained_models.XLNET_NAMES:  # the bundled XLNet: XLNetLMHeadModel, read as XLNet
            from biaskit.lm.loading import quiet_hf_progress

            # a small model loads in a blink: no "Loading weights" bar (in a notebook a widget that a
            # reopened notebook could only show as "Error displaying widget")
            with quiet_hf_progress():
                lm = trained_models.load_trained_xlnet(name, device=device)
            lm.fingerprint()  # keyed by the folder's files, before the display name is shortened
            lm.name = name
            return BridgeLM(lm, xlnet_mode=xlnet_mode, padding_text=padding_text, batch_size=batch_size)
        lm = get_masked_lm(name, device=device)
        lm.fingerprint()  # keyed by the folder's files, computed before the display name is shortened
        lm.name = name
        return BridgeLM(lm, batch_size=batch_size)
    from transformers import AutoConfig

    from biaskit.lm.base import resolve_device
    from biaskit.lm.loading import how_to_get_model, load_masked_lm

    try:
        cfg = AutoConfig.from_pretrained(
            name, local_files_only=True if local_files_only is None else local_files_only
        )
    except (OSError, ValueError) as exc:
        raise ModelNotAvailableError(
            f"cannot find a config for {name!r} locally. " + how_to_get_model(name)
        ) from exc
    if getattr(cfg, "model_type", "") != "xlnet":
        lm = load_masked_lm(name, device=device, local_files_only=local_files_only)
        return BridgeLM(lm, batch_size=batch_size)
    from transformers import AutoTokenizer, XLNetLMHeadModel

    try:
        tok = AutoTokenizer.from_pretrained(
            name, local_files_only=True if local_files_only is None else local_files_only
        )
        model = XLNetLMHeadModel.from_pretrained(
            name, local_files_only=True if local_files_only is None else local_files_only
        )
    except (OSError, ValueError) as exc:
        raise ModelNotAvailableError(f"cannot load XLNet {name!r}: {exc}. " + how_to_get_model(name)) from exc
    model.eval().to(resolve_device(device))
    return BridgeLM(
        MaskedLM(model=model, tokenizer=tok, name=name),
        xlnet_mode=xlnet_mode,
        padding_text=padding_text,
        batch_size=batch_size,
    )
