r"""Bolukbasi et al.'s hard debiasing of word vectors: neutralise, then equalise.

Bolukbasi, Chang, Zou, Saligrama & Kalai (2016), "Man is to computer programmer as woman is to
homemaker? Debiasing word embeddings", NeurIPS, section 6 ("Debiasing algorithms", step 2a, *hard
de-biasing*) and their code ``debiaswe/debias.py``.  Seed 000 (Maddalozzo 2023) section 3.3.5 builds
the same gender direction and its section 3.4.1 cites Gonen & Goldberg (2019) against it; seed 002
section 2.6.1 reviews the method and Gonen & Goldberg's finding that it hides the bias from the
direction while the geometry keeps it (:mod:`biaskit.metrics.recovery`); seed 003 section 2.3 lists
Hard-Debias among the mitigations of the studies it surveys.

The method, with every vector first scaled to unit length
---------------------------------------------------------
1. **Bias direction** :math:`g`: the first principal component of the definitional pairs, each
   centred on its own mean (:func:`biaskit.metrics.direct_bias.pca_direction`, Bolukbasi's
   ``doPCA``)

   .. math:: g = \mathrm{PC}_1\big(\{\hat a_k - \mu_k,\ \hat b_k - \mu_k\}_k\big), \qquad
             \mu_k = (\hat a_k + \hat b_k)/2 .

2. **Neutralise** every word :math:`w` that is not gender-specific (by default: every word outside
   Bolukbasi's 1,441 gender-specific words), removing its component along :math:`g`

   .. math:: w := \frac{w - (w\cdot g)\,g}{\lVert w - (w\cdot g)\,g \rVert},

   so that :math:`w\cdot g = 0` afterwards.
3. **Equalise** each equality pair :math:`E = \{a, b\}` (Bolukbasi's 52 pairs, each in its lower,
   Title and UPPER case forms when both words are in the vocabulary) so that both words are at the
   same distance from every neutral word and differ only along :math:`g`:

   .. math:: \mu = (\hat a + \hat b)/2,\quad \nu = \mu - (\mu\cdot g)\,g,\quad
             z = \sqrt{1 - \lVert\nu\rVert^2}\ \mathrm{sign}\big((\hat a - \hat b)\cdot g\big),

   .. math:: a := \nu + z\,g, \qquad b := \nu - z\,g .

   This is the paper's :math:`w := \nu + \sqrt{1-\lVert\nu\rVert^2}\,(w_B-\mu_B)/\lVert w_B-\mu_B\rVert`
   for a one-dimensional bias subspace :math:`B` and a pair (then :math:`(w_B-\mu_B)/\lVert\cdot\rVert
   = \pm g`).  Both equalised words have unit length.
4. Every vector is scaled to unit length again.

Which vectors the equalise step starts from.  :math:`\hat a, \hat b` are the pair's unit vectors as
they were *fitted* (before neutralising), as in WEFE's ``HardDebias`` (``equalize_pairs_embeddings_``
is read in ``fit``).  Bolukbasi's ``debias.py`` reads them after the neutralise step; the two agree
whenever both words of every pair are gender-specific (not neutralised), which is the intended use: a
neutralised pair has :math:`(\hat a - \hat b)\cdot g = 0` and no orientation left to keep.
``tests/debiasing/test_debiasing_methods.py`` checks that the result equals WEFE 1.0.1's ``HardDebias`` on the
same vectors and word lists to float32 precision.

Only a one-dimensional bias subspace (the first component) is used, as in ``debiaswe`` and WEFE.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

import numpy as np
from gensim.models import KeyedVectors

from biaskit.data.wordlists import OOVPolicy, load_bolukbasi_wordlists
from biaskit.metrics.direct_bias import BiasDirection, pca_direction

logger = logging.getLogger(__name__)

__all__ = ["HardDebias", "case_forms", "hard_debias"]


def case_forms(pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Each pair in its lower, Title and UPPER forms, in that order, duplicates dropped (first kept).

    Bolukbasi's ``debias.py`` and WEFE's ``HardDebias`` equalise these candidates.

    Examples
    --------
    >>> case_forms([("he", "she"), ("He", "She")])
    [('he', 'she'), ('He', 'She'), ('HE', 'SHE')]
    """
    out: dict[tuple[str, str], None] = {}
    for a, b in pairs:
        for f in (str.lower, str.title, str.upper):
            out.setdefault((f(a), f(b)), None)
    return list(out)


def _unit_rows_keep_zero(M: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(M, axis=1, keepdims=True)
    return np.divide(M, n, out=np.zeros_like(M), where=n > 0)


class HardDebias:
    """Bolukbasi et al. (2016) hard debiasing (neutralise + equalise); see the module docstring.

    Parameters
    ----------
    n_components:
        Principal components fitted on the definitional pairs (10 in ``debiaswe`` and WEFE); the
        first is the direction :math:`g`.
    policy:
        OOV policy for the definitional pairs (a pair with a word out of the vocabulary is dropped
        with a logged warning, or ``"raise"``).

    Attributes
    ----------
    direction_ : :class:`~biaskit.metrics.direct_bias.BiasDirection` (unit :math:`g`, the pairs used,
        the explained variance ratios).
    gender_specific_ : frozenset of the words that are not neutralised.
    equalize_pairs_ : the case-form pairs with both words in the vocabulary, in equalising order.
    equalize_vectors_ : (n_pairs, 2, d) their unit vectors at fit time.

    Examples
    --------
    >>> import numpy as np
    >>> from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, toy_vectors
    >>> debiaser = HardDebias(n_components=1).fit(toy_vectors(), list(zip(TOY_MALE, TOY_FEMALE)))
    >>> debiased = debiaser.transform(toy_vectors())
    >>> nurse = debiased["nurse"] / np.linalg.norm(debiased["nurse"])
    >>> f"{abs(float(nurse @ debiaser.direction_.vector)):.3f}"
    '0.000'
    """

    def __init__(self, n_components: int = 10, *, policy: OOVPolicy = "drop") -> None:
        self.n_components = n_components
        self.policy = policy

    # ------------------------------------------------------------------ fit
    def fit(
        self,
        vectors: KeyedVectors,
        definitional_pairs: Sequence[tuple[str, str]] | None = None,
        equalize_pairs: Sequence[tuple[str, str]] | None = None,
        gender_specific: Iterable[str] | None = None,
    ) -> HardDebias:
        """Learn :math:`g` from ``definitional_pairs`` and read the equality pairs' vectors.

        Defaults are Bolukbasi's lists (:func:`biaskit.data.wordlists.load_bolukbasi_wordlists`): the 10
        definitional pairs (female, male), the 52 equality pairs and the 1,441 gender-specific words.
        ``equalize_pairs=None`` uses Bolukbasi's pairs; ``()`` equalises nothing (neutralise only).
        """
        lists = None
        if definitional_pairs is None or equalize_pairs is None or gender_specific is None:
            lists = load_bolukbasi_wordlists()
        if definitional_pairs is None:
            definitional_pairs = list(
                zip(lists["definitional_female"], lists["definitional_male"], strict=True)  # type: ignore[index]
            )
        if equalize_pairs is None:
            equalize_pairs = list(zip(lists["equalize_first"], lists["equalize_second"], strict=True))  # type: ignore[index]
        if gender_specific is None:
            gender_specific = lists["specific_full"]  # type: ignore[index]
        pairs = [tuple(p) for p in definitional_pairs]
        if any(len(p) != 2 for p in pairs):
            raise ValueError("definitional_pairs must be (word, word) pairs")
        self.direction_: BiasDirection = pca_direction(
            vectors, pairs, n_components=self.n_components, policy=self.policy
        )
        self.gender_specific_ = frozenset(gender_specific)
        vocab = vectors.key_to_index
        cands = case_forms([tuple(p) for p in equalize_pairs])
        self.equalize_pairs_ = [(a, b) for a, b in cands if a in vocab and b in vocab]
        if self.equalize_pairs_:
            E = np.asarray(vectors[[w for p in self.equalize_pairs_ for w in p]], dtype=np.float64)
            E = E / np.linalg.norm(E, axis=1, keepdims=True)
            self.equalize_vectors_ = E.reshape(len(self.equalize_pairs_), 2, -1)
        else:
            self.equalize_vectors_ = np.zeros((0, 2, vectors.vector_size))
        self.n_features_in_ = int(vectors.vector_size)
        return self

    @property
    def g(self) -> np.ndarray:
        """The unit bias direction :math:`g` (float64)."""
        return self.direction_.vector

    # ------------------------------------------------------------------ transform
    def neutralise_matrix(self, X: np.ndarray) -> np.ndarray:
        r"""Unit rows of ``X`` with their :math:`g` component removed, scaled to unit length again
        (:math:`w := (w - (w\cdot g)g)/\lVert\cdot\rVert`; a row parallel to :math:`g` becomes 0)."""
        X = _unit_rows_keep_zero(np.asarray(X, dtype=np.float64))
        g = self.g
        return _unit_rows_keep_zero(X - np.outer(X @ g, g))

    def equalised_pairs(self) -> np.ndarray:
        """(n_pairs, 2, d) the equalised unit vectors :math:`\\nu \\pm z g` of :attr:`equalize_pairs_`."""
        g = self.g
        a, b = self.equalize_vectors_[:, 0], self.equalize_vectors_[:, 1]
        mu = (a + b) / 2
        nu = mu - np.outer(mu @ g, g)
        z = np.sqrt(np.clip(1.0 - np.sum(nu * nu, axis=1), 0.0, None))
        z = np.where((a - b) @ g < 0, -z, z)
        return np.stack([nu + z[:, None] * g, nu - z[:, None] * g], axis=1)

    def transform(self, vectors: KeyedVectors, *, neutralise: Iterable[str] | None = None) -> KeyedVectors:
        """Hard-debiased copy of ``vectors`` (every vector of unit length, float32).

        ``neutralise``: the words to neutralise (default: every word that is not in
        :attr:`gender_specific_`).  The equality pairs are then equalised (a word in two pairs takes
        the value of the last), and every vector is scaled to unit length.
        """
        if not hasattr(self, "direction_"):
            raise ValueError("HardDebias is not fitted: call fit(vectors, ...) first")
        if vectors.vector_size != self.n_features_in_:
            raise ValueError(f"fitted on {self.n_features_in_}-d vectors, got {vectors.vector_size}-d")
        words = list(vectors.index_to_key)
        X = _unit_rows_keep_zero(np.asarray(vectors.vectors, dtype=np.float64))
        if neutralise is None:
            mask = np.array([w not in self.gender_specific_ for w in words])
        else:
            wanted = set(neutralise)
            missing = wanted - set(vectors.key_to_index)
            if missing:
                logger.warning("hard debias: %d word(s) to neutralise are not in the vocabulary: %s",
                               len(missing), sorted(missing)[:10])  # fmt: skip
            mask = np.array([w in wanted for w in words])
        X[mask] = self.neutralise_matrix(X[mask])
        zero = mask & (np.linalg.norm(X, axis=1) == 0)
        if zero.any():
            logger.warning(
                "hard debias: %d word vector(s) lay along g and are zero after neutralising: %s",
                int(zero.sum()),
                [w for w, z in zip(words, zero, strict=True) if z][:10],
            )
        if self.equalize_pairs_:
            eq = self.equalised_pairs()
            kti = vectors.key_to_index
            for (a, b), (va, vb) in zip(self.equalize_pairs_, eq, strict=True):
                X[kti[a]], X[kti[b]] = va, vb
        X = _unit_rows_keep_zero(X)
        out = KeyedVectors(vector_size=X.shape[1], dtype=np.float32)
        out.add_vectors(words, X.astype(np.float32))
        self.neutralised_ = int(mask.sum())
        return out

    def fit_transform(self, vectors: KeyedVectors, **fit_params: object) -> KeyedVectors:
        return self.fit(vectors, **fit_params).transform(vectors)  # type: ignore[arg-type]


def hard_debias(
    vectors: KeyedVectors,
    definitional_pairs: Sequence[tuple[str, str]] | None = None,
    equalize_pairs: Sequence[tuple[str, str]] | None = None,
    gender_specific: Iterable[str] | None = None,
    *,
    n_components: int = 10,
) -> KeyedVectors:
    """``HardDebias(n_components).fit(vectors, ...).transform(vectors)`` (Bolukbasi et al. 2016).

    Examples
    --------
    >>> from biaskit.metrics.toys import TOY_FEMALE, TOY_MALE, toy_vectors
    >>> debiased = hard_debias(toy_vectors(), list(zip(TOY_MALE, TOY_FEMALE)), n_components=1)
    >>> len(debiased) == len(toy_vectors()), debiased.vector_size
    (True, 24)
    """
    return (
        HardDebias(n_components)
        .fit(vectors, definitional_pairs, equalize_pairs, gender_specific)
        .transform(vectors)
    )
