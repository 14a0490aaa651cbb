"""Seed-word frequency and its effect on bias metrics (seed 000 sections 3.5.2, 3.5.3 and 3.6.3).

Maddalozzo (2023) asks whether the *frequency* of the seed words, rather than their meaning,
drives the PMI, Bolukbasi (DirectBias) and WEAT results:

* **Frequency statistics per group** (section 3.6.3): the mean (and, section 3.5.2, the
  variance) of the frequencies of the seeds of each group X_i, from the corpus token file.
  :func:`frequency_table` gives one tidy row per (group, seed) with the corpus count and the
  general-language frequency from the ``wordfreq`` package (``word_frequency`` = proportion of
  tokens; ``zipf_frequency`` = log10 of the frequency per billion words);
  :func:`group_frequency_stats` summarises per group.
* **Correlations** (Figures 3.7-3.8; the thesis reports r = 0.25 for gender and r = -0.41 for
  religion between mean frequency and BIAS_PMI): :func:`frequency_correlations`, Pearson and
  Spearman with p-values through :func:`biaskit.stats.correlation`.
* **The attribute-swap experiment** (section 3.5.3, Tables 3.6-3.7): the same target sets,
  attribute sets with the same meaning but very different frequency:
  :func:`attribute_swap_experiment`.  If the WEAT decision changes, frequency matters.

Why frequency can matter: Ethayarajh, Duvenaud & Hirst (2019) show that for SGNS / GloVe
vectors a word is equally similar to x and y only if p(x) = p(y), so attribute words of
different frequency can produce a WEAT effect without any semantic bias (seed 000 section
3.4.2, "Criticism").

Decisions (explicit parameters):

* multi-word seeds (``"pantalones cortos"``) can never be a corpus token: ``multiword="exclude"``
  (default; logged) leaves them out of the corpus statistics, ``"zero"`` counts them as 0;
  their ``wordfreq`` value (which combines the parts) is still reported in the table;
* seeds absent from the corpus have frequency 0 -- that is data, not an error -- unless
  ``absent="exclude"``;
* variances use ``ddof=1`` (sample variance) by default.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from biaskit.metrics.weat import WEAT
from biaskit.stats import correlation

logger = logging.getLogger(__name__)

__all__ = [
    "THESIS_FIGURE_3_7_R",
    "THESIS_SWAP_GENDER",
    "THESIS_SWAP_RELIGION",
    "attribute_swap_experiment",
    "frequency_correlations",
    "frequency_table",
    "group_frequency_stats",
    "mean_frequency",
    "seed_frequency_stats",
]

# Seed 000 section 3.6.3: Pearson r between the mean seed frequency of the 30 neutral groups and
# their BIAS_PMI (Figure 3.7).  Figure 3.8 (DirectBias) gives no number, only "a stronger effect
# for religion (in absolute value) than for gender".
THESIS_FIGURE_3_7_R = {"gender": 0.25, "religion": -0.41}

# Seed 000 section 3.6.3, Tables 3.6 and 3.7 (frequencies from the thesis's token file, about
# 2M deduplicated Europarl sentences; the text's "chico, abuelo, ..." for the religion row is a
# slip for "mesías, bautismo, sultan, allah").
THESIS_SWAP_GENDER: dict[str, Any] = {
    "targets": ("career words", "family words"),
    "attribute_sets": {
        "señor, él vs señora, ella": (["señor", "él"], ["señora", "ella"]),
        "chico, abuelo vs chica, abuela": (["chico", "abuelo"], ["chica", "abuela"]),
    },
    "published": {
        "señor, él vs señora, ella": {"mean_frequency": 19970.75, "d": 1.241, "p": 0.057},
        "chico, abuelo vs chica, abuela": {"mean_frequency": 20.75, "d": 1.451, "p": 0.014},
    },
}
THESIS_SWAP_RELIGION: dict[str, Any] = {
    "targets": ("instruments", "weapons"),
    "attribute_sets": {
        "iglesia, cristiano vs islam, musulmán": (["iglesia", "cristiano"], ["islam", "musulmán"]),
        "mesías, bautismo vs sultan, allah": (["mesías", "bautismo"], ["sultan", "allah"]),
    },
    "published": {
        "iglesia, cristiano vs islam, musulmán": {"mean_frequency": 187.5, "d": 1.377, "p": 0.0004},
        "mesías, bautismo vs sultan, allah": {"mean_frequency": 1.25, "d": 0.933, "p": 0.015},
    },
}


def _wordfreq(words: Sequence[str], language: str, wordlist: str) -> tuple[list[float], list[float]]:
    try:
        from wordfreq import word_frequency, zipf_frequency
    except ImportError as exc:  # pragma: no cover - wordfreq is a core dependency
        raise ModuleNotFoundError("general-language frequencies need the 'wordfreq' package") from exc
    try:
        wf = [float(word_frequency(w, language, wordlist=wordlist)) for w in words]
        zf = [float(zipf_frequency(w, language, wordlist=wordlist)) for w in words]
    except LookupError as exc:
        raise ValueError(f"wordfreq has no {wordlist!r} list for language {language!r}: {exc}") from exc
    return wf, zf


def frequency_table(
    groups: Mapping[str, Sequence[str]],
    counts: Mapping[str, int] | None = None,
    *,
    language: str | None = "es",
    wordlist: str = "best",
    multiword: Literal["exclude", "zero"] = "exclude",
    n_units: int | None = None,
) -> pd.DataFrame:
    """One tidy row per (group, seed): corpus count and ``wordfreq`` frequencies.

    Parameters
    ----------
    groups:
        ``{group: [seeds]}`` (e.g. :func:`biaskit.wordlists.load_seed_groups`).
    counts:
        Corpus frequencies, e.g. :func:`biaskit.corpus.word_frequencies` (a ``Counter``; the
        thesis counted sentences containing the word, ``unit="sentence"``).  ``None``: no
        corpus columns.
    language, wordlist:
        ``wordfreq`` language code and list (``None`` skips ``wordfreq``).
    multiword:
        How multi-word seeds enter the corpus statistics (module docstring).
    n_units:
        Corpus size (tokens or sentences, matching ``counts``) to add a per-million column.

    Columns: ``group, word, multiword, corpus_count, in_corpus, per_million, wordfreq, zipf,
    use_corpus`` (``use_corpus`` is False for the rows the corpus statistics leave out).
    """
    if not groups:
        raise ValueError("groups is empty")
    if multiword not in ("exclude", "zero"):
        raise ValueError(f"multiword must be 'exclude' or 'zero', got {multiword!r}")
    rows: list[dict[str, Any]] = []
    for g, words in groups.items():
        if isinstance(words, str):
            raise TypeError(f"group {g!r}: expected a list of words, got the string {words!r}")
        if len(words) == 0:
            raise ValueError(f"group {g!r} is empty")
        seen: set[str] = set()
        for w in words:
            if w in seen:
                logger.info("group %r: duplicate seed %r counted once", g, w)
                continue
            seen.add(w)
            rows.append({"group": g, "word": w, "multiword": " " in w.strip()})
    df = pd.DataFrame(rows)
    multi = df.loc[df["multiword"], "word"].unique().tolist()
    if multi:
        logger.warning(
            "multi-word seeds can not be corpus tokens: %s (%s)",
            multi,
            "left out of the corpus statistics" if multiword == "exclude" else "counted as 0",
        )
    if counts is not None:
        df["corpus_count"] = [
            0 if m else int(counts.get(w, 0)) for w, m in zip(df["word"], df["multiword"], strict=True)
        ]
        df["in_corpus"] = df["corpus_count"] > 0
        if n_units is not None:
            if n_units <= 0:
                raise ValueError("n_units must be positive")
            df["per_million"] = df["corpus_count"] / n_units * 1e6
        df["use_corpus"] = ~df["multiword"] if multiword == "exclude" else True
    if language is not None:
        wf, zf = _wordfreq(df["word"].tolist(), language, wordlist)
        df["wordfreq"] = wf
        df["zipf"] = zf
    return df


def group_frequency_stats(
    table: pd.DataFrame,
    *,
    absent: Literal["zero", "exclude"] = "zero",
    ddof: int = 1,
) -> pd.DataFrame:
    """Mean and variance of the seed frequencies of each group (seed 000 sections 3.5.2, 3.6.3).

    From :func:`frequency_table`.  Corpus columns (when present): ``n_words``, ``n_in_corpus``,
    ``mean_count``, ``var_count``, ``sd_count``, ``median_count``; ``wordfreq`` columns:
    ``mean_wordfreq``, ``var_wordfreq``, ``mean_zipf``, ``var_zipf``.  ``absent="zero"`` keeps
    seeds with count 0 (they are rare words of this corpus); ``"exclude"`` averages over the seeds
    found only.  A variance needs more than ``ddof`` values (NaN otherwise).
    """
    if absent not in ("zero", "exclude"):
        raise ValueError(f"absent must be 'zero' or 'exclude', got {absent!r}")
    out: dict[str, pd.Series] = {}
    grouped_all = table.groupby("group", sort=False)
    out["n_words"] = grouped_all.size()
    if "corpus_count" in table:
        corpus = table[table["use_corpus"]]
        if absent == "exclude":
            corpus = corpus[corpus["corpus_count"] > 0]
        gc = corpus.groupby("group", sort=False)["corpus_count"]
        out["n_in_corpus"] = table[table["corpus_count"] > 0].groupby("group", sort=False).size()
        out["mean_count"] = gc.mean()
        out["var_count"] = gc.var(ddof=ddof)
        out["sd_count"] = gc.std(ddof=ddof)
        out["median_count"] = gc.median()
    if "wordfreq" in table:
        gw = grouped_all
        out["mean_wordfreq"] = gw["wordfreq"].mean()
        out["var_wordfreq"] = gw["wordfreq"].var(ddof=ddof)
        out["mean_zipf"] = gw["zipf"].mean()
        out["var_zipf"] = gw["zipf"].var(ddof=ddof)
    res = pd.DataFrame(out).reindex(pd.unique(table["group"]))
    if "n_in_corpus" in res:
        res["n_in_corpus"] = res["n_in_corpus"].fillna(0).astype(int)
    res.index.name = "group"
    return res


def seed_frequency_stats(
    groups: Mapping[str, Sequence[str]],
    counts: Mapping[str, int] | None = None,
    *,
    language: str | None = "es",
    multiword: Literal["exclude", "zero"] = "exclude",
    absent: Literal["zero", "exclude"] = "zero",
    ddof: int = 1,
) -> pd.DataFrame:
    """:func:`frequency_table` then :func:`group_frequency_stats` (one row per group)."""
    return group_frequency_stats(
        frequency_table(groups, counts, language=language, multiword=multiword), absent=absent, ddof=ddof
    )


def mean_frequency(words: Sequence[str], counts: Mapping[str, int]) -> float:
    """Mean corpus frequency of a word list (absent words count 0), as the thesis quotes for the
    attribute sets of Tables 3.6-3.7 (e.g. 19970.75 for señor, él, señora, ella)."""
    if len(words) == 0:
        raise ValueError("no words")
    return float(np.mean([counts.get(w, 0) for w in words]))


def frequency_correlations(
    frequency: pd.DataFrame,
    metrics: Mapping[str, pd.Series] | pd.DataFrame,
    *,
    frequency_columns: Sequence[str] = ("mean_count", "var_count", "mean_zipf"),
    methods: Sequence[str] = ("pearson", "spearman"),
    min_n: int = 3,
) -> pd.DataFrame:
    """Correlate per-group frequency statistics with per-group metric values (Figures 3.7-3.8).

    ``frequency`` is indexed by group (:func:`group_frequency_stats`); ``metrics`` maps a metric
    name to a Series indexed by group (BIAS_PMI for gender, DirectBias for religion, a WEAT
    association, ...).  Groups are aligned by name; pairs with a NaN on either side are dropped
    (the dropped groups are listed in ``dropped``; logged).  One row per (metric, frequency
    column, method) with ``r``, ``p_value`` (two-sided, H0: no correlation), ``n``, the 95% CI
    (Pearson) and the :class:`~biaskit.results.TestResult` in ``result``.
    """
    if isinstance(metrics, pd.DataFrame):
        metrics = {c: metrics[c] for c in metrics.columns}
    missing_cols = [c for c in frequency_columns if c not in frequency.columns]
    if missing_cols:
        raise ValueError(f"frequency table lacks columns {missing_cols}; it has {list(frequency.columns)}")
    rows: list[dict[str, Any]] = []
    for mname, series in metrics.items():
        series = pd.Series(series, dtype=float)
        common = frequency.index.intersection(series.index)
        if len(common) == 0:
            raise ValueError(f"metric {mname!r} shares no group name with the frequency table")
        for col in frequency_columns:
            x = frequency.loc[common, col].astype(float)
            y = series.loc[common]
            ok = np.isfinite(x.to_numpy()) & np.isfinite(y.to_numpy())
            dropped = [str(g) for g, keep in zip(common, ok, strict=True) if not keep]
            if dropped:
                logger.info("%s vs %s: dropping groups with missing values %s", mname, col, dropped)
            for method in methods:
                base = {
                    "metric": mname,
                    "frequency": col,
                    "method": method,
                    "n": int(ok.sum()),
                    "dropped": dropped,
                }
                if ok.sum() < min_n or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
                    logger.warning("%s vs %s: too few or constant values for a correlation", mname, col)
                    rows.append(
                        {
                            **base,
                            "r": np.nan,
                            "p_value": np.nan,
                            "ci_low": np.nan,
                            "ci_high": np.nan,
                            "result": None,
                        }
                    )
                    continue
                res = correlation(x[ok].to_numpy(), y[ok].to_numpy(), method=method)
                rows.append(
                    {
                        **base,
                        "r": res.statistic,
                        "p_value": res.p_value,
                        "ci_low": res.ci[0] if res.ci else np.nan,
                        "ci_high": res.ci[1] if res.ci else np.nan,
                        "result": res,
                    }
                )
    return pd.DataFrame(rows)


def attribute_swap_experiment(
    X: Sequence[str],
    Y: Sequence[str],
    attribute_sets: Mapping[str, tuple[Sequence[str], Sequence[str]]],
    vectors: Any,
    counts: Mapping[str, int] | None = None,
    *,
    test: WEAT | None = None,
    language: str | None = "es",
    alpha: float = 0.05,
    names: tuple[str, str] = ("X", "Y"),
) -> pd.DataFrame:
    """WEAT on fixed targets with several attribute pairs of the same meaning and different frequency.

    Seed 000 section 3.5.3 (experiment E^WEAT, frequency part) and Tables 3.6-3.7: if the same
    X, Y give different decisions with ``(A_1, B_1)`` and ``(A_2, B_2)`` that name the same social
    groups, the attribute words' frequency affects the test.  One row per attribute pair:
    corpus mean frequency of A, of B and of A u B (the thesis's number), mean Zipf frequency
    (``wordfreq``), the frequency ratio A/B, WEAT statistic, d, p, the decision at ``alpha``, the
    permutation method and the OOV words.  A pair whose words are all out of vocabulary gives a
    row with NaN and the reason in ``error`` (logged).
    """
    if not attribute_sets:
        raise ValueError("attribute_sets is empty")
    test = test or WEAT()
    rows: list[dict[str, Any]] = []
    for label, pair in attribute_sets.items():
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"attribute set {label!r} must be a pair (A, B) of word lists")
        A, B = list(pair[0]), list(pair[1])
        row: dict[str, Any] = {"attributes": label, "A": A, "B": B}
        if counts is not None:
            row["mean_freq_A"] = mean_frequency(A, counts)
            row["mean_freq_B"] = mean_frequency(B, counts)
            row["mean_freq"] = mean_frequency(A + B, counts)
            row["freq_ratio_A_B"] = (
                row["mean_freq_A"] / row["mean_freq_B"] if row["mean_freq_B"] > 0 else math.inf
            )
        if language is not None:
            _, za = _wordfreq(A, language, "best")
            _, zb = _wordfreq(B, language, "best")
            row["mean_zipf"] = float(np.mean(za + zb))
        try:
            r = test.run(X, Y, A, B, vectors, names=(names[0], names[1], "A", "B"))
        except ValueError as exc:
            logger.warning("attribute set %r: WEAT not computed: %s", label, exc)
            row.update(statistic=np.nan, d=np.nan, p_value=np.nan, reject_h0=None, error=str(exc))
            rows.append(row)
            continue
        row.update(
            statistic=r.statistic,
            d=r.effect_size,
            p_value=r.p_value,
            reject_h0=bool(r.p_value < alpha),
            permutation=r.details["permutation_method"],
            n_partitions=r.details["n_partitions_evaluated"],
            oov={k: v for k, v in r.details["oov"].items() if v},
            error="",
        )
        rows.append(row)
    return pd.DataFrame(rows)
