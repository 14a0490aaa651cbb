r"""Debiasing a language model's sentence representation: SentenceDebias and INLP, as in bias-bench.

Both methods learn a linear map of the last hidden layer from sentences that mention a gender, and
apply it inside the model's forward pass, on every token's last hidden state, before the language-model
head (bias-bench: Meade, Poole-Dayan & Reddy 2022, "An empirical survey of the effectiveness of
debiasing techniques for pre-trained language models", ACL, section 3; their ``SentenceDebias*ForMaskedLM``
and ``INLP*ForMaskedLM`` register the same kind of forward hook).  Masked-LM scores (CrowS-Pairs,
StereoSet, the templates) and the sentence representations (SEAT, the recovery tests) are then
measured on the debiased model.

SentenceDebias
    (Liang, Li, Zheng, Lim, Salakhutdinov & Morency 2020, "Towards debiasing sentence representations",
    ACL, section 3.)  For counterfactual sentence pairs :math:`(s_i^m, s_i^f)` (the same sentence with its
    gendered words swapped, :func:`biaskit.data.counterfactual.cds`), with sentence representations
    :math:`e_i^m, e_i^f` and :math:`\mu_i = (e_i^m + e_i^f)/2`, the bias subspace
    :math:`V = (v_1 \dots v_k)` is the first :math:`k` principal components of
    :math:`\{e_i^m - \mu_i,\ e_i^f - \mu_i\}_i` (Bolukbasi's construction on sentences); a hidden state
    :math:`h` becomes :math:`h - \sum_{j=1}^k (h \cdot v_j)\, v_j` (bias-bench: :math:`k = 1`).
INLP (Ravfogel et al. 2020; :class:`biaskit.debiasing.inlp.INLP`)
    on the sentence representations labelled by the gender they mention; :math:`h` becomes :math:`h P_n`.

:func:`project_hidden_states` returns a copy of the model with the map hooked onto the output of its body
(``model.base_model``: ``last_hidden_state`` and, when asked for, the last of ``hidden_states``), so the LM
head and every reader of the hidden states see the debiased states.  The copy gets a fingerprint of its
own (the base model's and the map's), so no score cached for the base model is reused for it.
"""

from __future__ import annotations

import copy
import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from biaskit.debiasing.inlp import INLP, held_out_rows
from biaskit.embeddings.contextual import sentence_representations

logger = logging.getLogger(__name__)

__all__ = [
    "SentenceDebias",
    "counterfactual_sentence_pairs",
    "fit_sentence_inlp",
    "gendered_sentences",
    "project_hidden_states",
]


def project_hidden_states(lm, projection: np.ndarray, *, name: str):
    """A copy of ``lm`` whose last hidden states :math:`h` are replaced by :math:`h M`.

    ``projection``: the ``(d, d)`` orthogonal projection :math:`M` (symmetric and idempotent, as both
    methods here give).  ``name`` is appended to the model's name.  Masked and causal models alike.
    Two hooks: on the output of the body (``model.base_model``, which :mod:`biaskit.embeddings` and
    most scorers read) and on the input of the LM head (biaskit's masked scorer evaluates the last
    layer itself for speed and feeds the head directly, :func:`biaskit.lm.masked.mlm_head`).  A state
    that passes both is projected twice, which changes nothing because :math:`M^2 = M`.

    Examples
    --------
    >>> import numpy as np
    >>> from biaskit.metrics.toys import toy_masked_lm
    >>> lm = toy_masked_lm()
    >>> size = lm.model.config.hidden_size
    >>> debiased = project_hidden_states(lm, np.eye(size), name="identity")
    >>> type(debiased).__name__, debiased is lm
    ('MaskedLM', False)
    """
    import torch

    from biaskit.lm.masked import mlm_head

    M = np.asarray(projection, dtype=np.float64)
    d = int(
        lm.model.config.hidden_size if hasattr(lm.model.config, "hidden_size") else lm.model.config.n_embd
    )
    if M.shape != (d, d):
        raise ValueError(f"the projection must be ({d}, {d}) for this model, got {M.shape}")
    if not (np.allclose(M, M.T, atol=1e-8) and np.allclose(M @ M, M, atol=1e-8)):
        raise ValueError("the map must be an orthogonal projection (symmetric, M @ M == M)")
    model = copy.deepcopy(lm.model)
    body = getattr(model, "base_model", None)
    if body is None or body is model:
        raise TypeError(
            f"{type(model).__name__} has no separate body (base_model) to hook the projection onto"
        )
    head = mlm_head(model) if lm.kind == "masked" else model.get_output_embeddings()
    if head is None:
        raise TypeError(f"{type(model).__name__}: no known LM head to hook the projection onto")
    Mt = torch.as_tensor(M)

    def head_hook(module, args):  # the forward-pre-hook signature; module unused
        h = args[0]
        return (h @ Mt.to(h.dtype).to(h.device), *args[1:])

    head.register_forward_pre_hook(head_hook)

    def hook(module, args, output):  # the forward-hook signature; module and args unused
        if isinstance(output, tuple):
            h = output[0]
            return (h @ Mt.to(h.dtype).to(h.device), *output[1:])
        h = output.last_hidden_state
        h2 = h @ Mt.to(h.dtype).to(h.device)
        output["last_hidden_state"] = h2
        hs = getattr(output, "hidden_states", None)
        if hs is not None:
            output["hidden_states"] = (*hs[:-1], h2)
        return output

    body.register_forward_hook(hook)
    h = hashlib.sha256(lm.fingerprint().encode())
    h.update(np.ascontiguousarray(M).tobytes())
    out = type(lm)(
        model=model,
        tokenizer=lm.tokenizer,
        name=f"{lm.name}+{name}",
        revision=lm.revision,
        lowercase=lm.lowercase,
        in_process=True,
        is_fallback=lm.is_fallback,
        _fingerprint=h.hexdigest()[:16],
    )
    return out


# --------------------------------------------------------------------------- fitting data
def counterfactual_sentence_pairs(n: int = 1000, *, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` GAP sentences with a gendered word and their CDS swap, ``(original, swapped)``
    (:func:`biaskit.debiasing.cds.cds_gap_corpus`; the GAP sentences held out from the bundled models are
    kept out).

    Examples
    --------
    >>> original, swapped = counterfactual_sentence_pairs(2)[0]
    >>> original
    'He is currently the wide receivers coach for Bowling Green.'
    >>> swapped
    'She is currently the wide receivers coach for Bowling Green.'
    """
    from biaskit.debiasing.cds import cds_gap_corpus

    corpus = cds_gap_corpus(min(4 * n, 3000), seed=seed)
    pairs = [(o, s) for o, s, sw in zip(corpus.original, corpus.sentences, corpus.swapped, strict=True) if sw]
    if len(pairs) < n:
        logger.info("only %d counterfactual pairs available (asked for %d)", len(pairs), n)
    return pairs[:n]


def gendered_sentences(pairs: Sequence[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """The sentences of ``pairs`` that mention one gender only (CDS lexicon), as ``(male, female)``
    (each pair gives one of each when its original does).

    Examples
    --------
    >>> pairs = [("He is a nurse.", "She is a nurse."), ("The sun is up.", "The sun is up.")]
    >>> gendered_sentences(pairs)
    (['He is a nurse.'], ['She is a nurse.'])
    """
    import re

    from biaskit.data.counterfactual import load_gender_lexicon

    lex = load_gender_lexicon()
    word = re.compile(r"[A-Za-z]+")

    def gender(s: str) -> str | None:
        g = {lex.gender_of(w, names=False) for w in word.findall(s)} - {None}
        return g.pop() if len(g) == 1 else None

    male, female = [], []
    for a, b in pairs:
        for s in (a, b):
            g = gender(s)
            if g == "male":
                male.append(s)
            elif g == "female":
                female.append(s)
    return male, female


# --------------------------------------------------------------------------- SentenceDebias
@dataclass
class SentenceDebias:
    """Liang et al. (2020) SentenceDebias: remove the first ``n_components`` directions of the
    counterfactual differences of sentence representations (module docstring).

    Examples
    --------
    >>> from biaskit.metrics.toys import toy_masked_lm
    >>> pairs = [("He likes maths.", "She likes maths."), ("The boy is here.", "The girl is here.")]
    >>> debiaser = SentenceDebias(n_components=1).fit(toy_masked_lm(), pairs)
    >>> debiaser.components_.shape[0], type(debiaser.apply(toy_masked_lm())).__name__
    (1, 'MaskedLM')
    """

    n_components: int = 1

    def fit(self, lm, pairs: Sequence[tuple[str, str]], *, batch_size: int = 64) -> SentenceDebias:
        """Bias subspace from counterfactual ``pairs`` of sentences
        (:func:`counterfactual_sentence_pairs`)."""
        from sklearn.decomposition import PCA

        if len(pairs) < 2:
            raise ValueError("SentenceDebias needs at least two counterfactual pairs")
        same = sum(1 for x, y in pairs if x == y)
        if same == len(pairs):
            raise ValueError(
                f"all {len(pairs)} SentenceDebias pairs are two identical sentences, so there is no "
                "difference to find a bias direction in: give (sentence, counterfactual) pairs whose "
                "gendered words differ (counterfactual_sentence_pairs builds them)"
            )
        if same:
            logger.warning(
                "SentenceDebias: %d of %d pairs are two identical sentences; they add nothing to the "
                "bias subspace",
                same,
                len(pairs),
            )
        a = sentence_representations(lm, [p[0] for p in pairs], batch_size=batch_size)
        b = sentence_representations(lm, [p[1] for p in pairs], batch_size=batch_size)
        mu = (a + b) / 2
        D = np.vstack([a - mu, b - mu])
        nonzero = int(np.sum(np.linalg.norm(a - b, axis=1) > 1e-12 * (1 + np.linalg.norm(a, axis=1))))
        if nonzero < self.n_components:
            raise ValueError(
                f"only {nonzero} of the {len(pairs)} pairs have different representations in {lm.name}, "
                f"fewer than the {self.n_components} bias direction(s) asked for: the model does not tell "
                "the two sentences of a pair apart, so SentenceDebias has no direction to remove (give pairs "
                "that differ in words the model reads, or ask for fewer components)"
            )
        pca = PCA(n_components=self.n_components).fit(D)
        self.components_ = pca.components_.astype(np.float64)  # (k, d), orthonormal rows
        self.explained_variance_ratio_ = pca.explained_variance_ratio_
        return self

    @property
    def projection_(self) -> np.ndarray:
        """:math:`I - V V^T` (d x d)."""
        V = self.components_
        return np.eye(V.shape[1]) - V.T @ V

    def transform(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(X, dtype=np.float64) @ self.projection_

    def apply(self, lm):
        """The debiased copy of ``lm`` (:func:`project_hidden_states`)."""
        return project_hidden_states(lm, self.projection_, name=f"sentence-debias-k{self.n_components}")


def fit_sentence_inlp(
    lm,
    male: Sequence[str],
    female: Sequence[str],
    *,
    n_iterations: int = 10,
    random_state: int = 0,
    batch_size: int = 64,
    held_out_share: float = 0.0,
) -> INLP:
    """:class:`~biaskit.debiasing.inlp.INLP` fitted on the sentence representations of ``male`` and
    ``female`` sentences (:func:`gendered_sentences`); apply it with
    ``project_hidden_states(lm, inlp.projection_, name=...)``.

    ``held_out_share`` > 0 keeps that share of each side's sentences out of the fit (a seeded split):
    INLP stops when its classifier is at chance on them (the authors' held-out stopping rule), and
    ``inlp.held_out_probe_`` holds :meth:`~biaskit.debiasing.inlp.INLP.held_out_probe` on them (a fresh
    linear probe: what a linear classifier can still read after the projection); ``None`` without a split.

    Examples
    --------
    >>> from biaskit.metrics.toys import toy_masked_lm
    >>> male = ["He likes maths.", "The boy is here.", "His father is here."]
    >>> female = ["She likes maths.", "The girl is here.", "Her mother is here."]
    >>> inlp = fit_sentence_inlp(toy_masked_lm(), male, female, n_iterations=2)
    >>> type(inlp).__name__, inlp.projection_.shape[0] == inlp.projection_.shape[1]
    ('INLP', True)
    """
    if not male or not female:
        raise ValueError("INLP needs male and female sentences")
    if not 0 <= held_out_share < 1:
        raise ValueError(f"held_out_share must be in [0, 1), got {held_out_share}")
    X = sentence_representations(lm, [*male, *female], batch_size=batch_size)
    y = np.array([1] * len(male) + [0] * len(female))
    inlp = INLP(n_iterations, random_state=random_state)
    if held_out_share == 0:
        inlp.fit(X, y)
        inlp.held_out_probe_ = None
        return inlp
    test = held_out_rows(y, held_out_share, random_state=random_state)
    inlp.fit(X[~test], y[~test], X_dev=X[test], y_dev=y[test])
    inlp.held_out_probe_ = inlp.held_out_probe(X[~test], y[~test], X[test], y[test])
    return inlp
