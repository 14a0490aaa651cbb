r"""Does a word's bias in the corpus predict its bias in a model trained on that corpus?

Seed 000 (Maddalozzo 2023) measures gender bias in the Spanish Europarl text with PMI (chapter 3)
and in language models with PLL-based tests (chapter 4), but never asks whether the first predicts
the second.  With models trained on the very corpus whose PMI is measured
(:mod:`biaskit.training.recipes`: ``es-mlm``, ``es-w2v``) the question can be answered word by word:

* **corpus bias**: :math:`\mathrm{BIAS_{PMI}}(w) = \log \frac{P(w \mid A)}{P(w \mid B)}` with ``A`` /
  ``B`` the male / female attribute words, sentence co-occurrence (seed 000 section 3.1.2,
  :func:`biaskit.metrics.pmi.bias_pmi_table`);
* **static-model bias**: WEAT's :math:`s(w, A, B)` = mean cosine to ``A`` minus mean cosine to ``B``
  (section 3.4.2, :func:`biaskit.metrics.weat.association_scores`);
* **masked-LM bias**: :math:`\log P(\text{male pronoun}) - \log P(\text{female pronoun})` at the
  ``[MASK]`` of neutral templates that contain ``w``, averaged over templates (the fill-mask
  probability of Kurita et al. 2019 without the prior correction; seed 002 section 4.2 uses the
  same probabilities).

and their rank correlations tested (:func:`biaskit.core.stats.correlation`, Spearman).  Seed 000
section 3.5.4 expects "large DirectBias and effect sizes to go with large PMI"; this module tests
that expectation on real text.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pandas as pd

from biaskit.core.results import TestResult

logger = logging.getLogger(__name__)

#: neutral Spanish templates: the pronoun is masked, ``{w}`` is the word
SPANISH_TEMPLATES: tuple[str, ...] = (
    "[MASK] habló de {w}.",
    "[MASK] piensa en {w}.",
    "[MASK] dijo que {w} es importante.",
)
ENGLISH_TEMPLATES: tuple[str, ...] = (
    "[MASK] talked about the {w}.",
    "[MASK] thinks about the {w}.",
    "[MASK] said that the {w} is important.",
)


def fill_mask_bias(
    lm,
    words: Sequence[str],
    *,
    templates: Sequence[str] = SPANISH_TEMPLATES,
    pronouns: tuple[str, str] = ("él", "ella"),
    batch_size: int = 64,
) -> np.ndarray:
    """Mean over ``templates`` of ``log P(pronouns[0]) - log P(pronouns[1])`` at the mask, per word.

    Both pronouns must be single tokens of ``lm``'s vocabulary (``ValueError`` otherwise).
    """
    from biaskit.metrics.gender_templates import mask_fill_probabilities

    sents = [t.replace("{w}", w) for w in words for t in templates]
    probs = mask_fill_probabilities(lm, sents, [list(pronouns)] * len(sents), batch_size=batch_size)
    lr = np.log(probs[:, 0]) - np.log(probs[:, 1])
    return lr.reshape(len(words), len(templates)).mean(axis=1)


def corpus_model_table(
    words: Sequence[str],
    corpus_tokens: Sequence[Sequence[str]],
    male_words: Sequence[str],
    female_words: Sequence[str],
    *,
    lm=None,
    vectors=None,
    templates: Sequence[str] = SPANISH_TEMPLATES,
    pronouns: tuple[str, str] = ("él", "ella"),
    min_count: int = 5,
) -> pd.DataFrame:
    """One row per word: its sentence count, corpus ``pmi``, and (when given) ``w2v`` and ``mlm`` bias.

    Words with fewer than ``min_count`` sentences in the corpus, or whose PMI is undefined (no
    co-occurrence with one of the groups), are kept with a ``note`` and NaN; the number left out of
    the correlations is logged.  Positive values lean toward ``male_words`` / ``pronouns[0]``.
    """
    from biaskit.metrics.pmi import bias_pmi_table
    from biaskit.metrics.weat import association_scores

    words = list(dict.fromkeys(w.lower() for w in words))
    if not words:
        raise ValueError("no words given")
    tab = bias_pmi_table(
        {w: [w] for w in words}, {"gender": (list(male_words), list(female_words))}, corpus_tokens
    )
    tab = tab.set_index("group").reindex(words)
    count = (tab["f_AX"] + tab["f_BX"]).fillna(0).astype(int)
    out = pd.DataFrame(
        {"word": words, "sentences_with_groups": count.to_numpy(), "pmi": tab["pmi"].to_numpy(float)}
    )
    out["note"] = ""
    low = out["sentences_with_groups"] < min_count
    out.loc[low, "note"] = f"fewer than {min_count} sentences with a group word"
    out.loc[low, "pmi"] = np.nan
    out.loc[~low & out["pmi"].isna(), "note"] = "PMI undefined (no co-occurrence with one group)"
    if vectors is not None:
        vocab = vectors.key_to_index
        a = [w for w in male_words if w in vocab]
        b = [w for w in female_words if w in vocab]
        if not a or not b:
            raise ValueError("no male or no female attribute word has a vector")
        have = [w in vocab for w in words]
        s = np.full(len(words), np.nan)
        if any(have):
            W = np.stack([vectors[w] for w, h in zip(words, have, strict=True) if h])
            s[np.array(have)] = association_scores(
                W, np.stack([vectors[w] for w in a]), np.stack([vectors[w] for w in b])
            )
        out["w2v"] = s
    if lm is not None:
        out["mlm"] = fill_mask_bias(lm, words, templates=templates, pronouns=pronouns)
    n_out = int(out["pmi"].isna().sum())
    if n_out:
        logger.warning(
            "corpus_model_table: %d of %d words have no PMI (rare or one-sided): %s",
            n_out,
            len(words),
            out.loc[out["pmi"].isna(), "word"].tolist()[:15],
        )
    return out


def corpus_model_correlation(
    table: pd.DataFrame, model_column: str, *, method: str = "spearman"
) -> TestResult:
    """Rank correlation between the corpus PMI and a model's bias over the words with both values."""
    from biaskit.core.stats import correlation

    ok = table["pmi"].notna() & table[model_column].notna()
    if ok.sum() < 3:
        raise ValueError(f"only {int(ok.sum())} words have both a PMI and a {model_column} value")
    return correlation(
        table.loc[ok, "pmi"].to_numpy(float), table.loc[ok, model_column].to_numpy(float), method=method
    )
