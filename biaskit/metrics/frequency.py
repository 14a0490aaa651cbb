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
  Spearman with p-values through :func:`biaskit.core.stats.correlation`.
* **The attribute-swap experiment** (section 3.5.3, Tables 3.6-3.7): the same target sets,
  attribute sets with the same meaning but very different frequency:
  :func:`attribute_swap_experiment`.  If the WEAT decision changes, frequency matters.  Rows that
  cannot be computed say why in their ``note`` (:func:`missing_vector_reasons`,
  :func:`missing_vector_note`: which words have no vector, and whether each is absent from the
  training corpus or below word2vec's ``min_count``).
* **BIAS_PMI against DirectBias** (section 3.5.2, second half): over the 30 x |H| cells
  (N_i, g_j), the correlation of BIAS_PMI(N_i, g_j) and of the mean and variance of the seed
  frequencies of N_i with DirectBias(N_i, g_j): :func:`pmi_direct_bias_cells`,
  :func:`pmi_direct_bias_correlations`.
* **WEAT effect size against PMI** (section 3.5.3, "Regarding IMP"): 30 attribute pairs
  (A_i, B_i), the WEAT d_i against PMI_bias(X, A_i, B_i) - PMI_bias(Y, A_i, B_i):
  :func:`attribute_set_pairs`, :func:`weat_pmi_experiment`, :func:`weat_pmi_correlations`.

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
from itertools import combinations, product
from typing import Any, Literal

import numpy as np
import pandas as pd

from biaskit.core.stats import correlation
from biaskit.data.published import published_table
from biaskit.data.wordlists import vector_vocabulary, word_list_pair
from biaskit.metrics.pmi import SentenceIncidence, Variant, ZeroPolicy, bias_pmi_table
from biaskit.metrics.weat import WEAT

logger = logging.getLogger(__name__)

__all__ = [
    "THESIS_FIGURE_3_7_R",
    "THESIS_SWAP_GENDER",
    "THESIS_SWAP_RELIGION",
    "attribute_set_pairs",
    "attribute_swap_experiment",
    "frequency_correlations",
    "frequency_table",
    "group_frequency_stats",
    "mean_frequency",
    "missing_vector_note",
    "missing_vector_reasons",
    "pmi_direct_bias_cells",
    "pmi_direct_bias_correlations",
    "seed_frequency_stats",
    "weat_pmi_correlations",
    "weat_pmi_experiment",
]

# Published numbers (data/published, with provenance and sha256: biaskit.data.published), read on first use
# (module ``__getattr__`` below), so that importing biaskit needs no bundled data (the code wheel alone).
#: seed 000 section 3.6.3, Figure 3.7: Pearson r between the mean seed frequency of the 30 neutral groups
#: and their BIAS_PMI (Figure 3.8, DirectBias, gives no number)
THESIS_FIGURE_3_7_R: dict[str, float]
#: seed 000 Table 3.6 (frequencies from the thesis's token file), with the tuples the experiment functions
#: take
THESIS_SWAP_GENDER: dict[str, Any]
#: seed 000 Table 3.7 (the text's "chico, abuelo, ..." for the religion row is a slip for "mesías, bautismo,
#: sultan, allah")
THESIS_SWAP_RELIGION: dict[str, Any]


def _swap_spec(name: str) -> dict[str, Any]:
    """A swap table of seed 000 section 3.6.3 with the tuples the experiment functions take."""
    spec = published_table(name)
    spec["targets"] = tuple(spec["targets"])
    spec["attribute_sets"] = {k: (list(a), list(b)) for k, (a, b) in spec["attribute_sets"].items()}
    return spec


_PUBLISHED: dict[str, Any] = {
    "THESIS_FIGURE_3_7_R": lambda: published_table("thesis_figure_3_7_r"),
    "THESIS_SWAP_GENDER": lambda: _swap_spec("thesis_table_3_6_swap_gender"),
    "THESIS_SWAP_RELIGION": lambda: _swap_spec("thesis_table_3_7_swap_religion"),
}


def __getattr__(name: str) -> Any:
    """The published tables above, read (sha256-checked) on first use and then kept."""
    read = _PUBLISHED.get(name)
    if read is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = read()
    globals()[name] = value
    return value


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
        ``{group: [seeds]}`` (e.g. :func:`biaskit.data.wordlists.load_seed_groups`).
    counts:
        Corpus frequencies, e.g. :func:`biaskit.data.corpus.word_frequencies` (a ``Counter``; the
        thesis counted sentences containing the word, ``unit="sentence"``).  ``None``: no
        corpus columns.
    language, wordlist:
        ``wordfreq`` language code and list (``None`` skips ``wordfreq``).
    multiword:
        How multi-word seeds enter the corpus statistics (module docstring).
    n_units:
        Corpus size (tokens or sentences, matching ``counts``) to add a per-million column.

    Returns
    -------
    pandas.DataFrame
        Columns ``group, word, multiword, corpus_count, in_corpus, per_million, wordfreq, zipf,
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
    (Pearson) and the :class:`~biaskit.core.results.TestResult` in ``result``.
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


MissingReason = Literal["multiword", "absent", "below_min_count", "not_in_vectors"]


def missing_vector_reasons(
    words: Sequence[str],
    vectors: Any,
    token_counts: Mapping[str, int] | None = None,
    *,
    min_count: int | None = None,
) -> dict[str, MissingReason]:
    """Why each word of ``words`` has no vector (seed 000 §3.6.3, the rare rows of Tables 3.6-3.7).

    With V the vectors' vocabulary, c(w) the number of times w occurs as a token in the corpus the
    vectors were trained on (``token_counts``: word2vec's ``min_count`` compares token counts, not
    the sentence counts the thesis's frequencies use) and m = ``min_count``, every w not in V gets::

        "multiword"        if w contains a space (a tokenised corpus never has it as one token)
        "absent"           if c(w) = 0
        "below_min_count"  if 0 < c(w) < m   (word2vec keeps w in V iff c(w) >= m)
        "not_in_vectors"   otherwise, or when token_counts is None (e.g. a file cut by a limit)

    Words with a vector are left out; duplicates are reported once, in their first position.
    """
    if isinstance(words, str):
        raise TypeError(f"expected a list of words, got the string {words!r}")
    if min_count is not None and min_count < 1:
        raise ValueError(f"min_count must be >= 1, got {min_count}")
    vocab = vector_vocabulary(vectors)
    out: dict[str, MissingReason] = {}
    for w in dict.fromkeys(words):
        if w in vocab:
            continue
        if " " in w.strip():
            out[w] = "multiword"
        elif token_counts is None:
            out[w] = "not_in_vectors"
        else:
            c = int(token_counts.get(w, 0))
            if c == 0:
                out[w] = "absent"
            elif min_count is not None and c < min_count:
                out[w] = "below_min_count"
            else:
                out[w] = "not_in_vectors"
    return out


def _times(n: int) -> str:
    return "1 time" if n == 1 else f"{n:,} times"


def missing_vector_note(
    words: Sequence[str],
    vectors: Any,
    token_counts: Mapping[str, int] | None = None,
    *,
    min_count: int | None = None,
    corpus_label: str = "the corpus",
) -> str:
    """The words of ``words`` without a vector, grouped by reason, in one plain sentence.

    Seed 000 §3.6.3: the reasons are those of :func:`missing_vector_reasons` (c(w) = token count in
    the training corpus, m = ``min_count``: c(w) = 0 -> "not in <corpus>", 0 < c(w) < m -> "below
    min_count m"), e.g. ``"no vector for: abuelo, chica (not in europarl-es-sample); chico, abuela
    (1 time each in europarl-es-sample, below min_count 2)"``.  ``""`` when every word has a vector.
    """
    reasons = missing_vector_reasons(words, vectors, token_counts, min_count=min_count)
    if not reasons:
        return ""
    parts: list[str] = []
    by_reason = {r: [w for w, why in reasons.items() if why == r] for r in dict.fromkeys(reasons.values())}
    for reason, ws in by_reason.items():
        listed = ", ".join(ws)
        if reason == "multiword":
            parts.append(f"{listed} (several words, never a single token)")
        elif reason == "absent":
            parts.append(f"{listed} (not in {corpus_label})")
        elif reason == "below_min_count":
            cs = [int((token_counts or {}).get(w, 0)) for w in ws]
            if len(set(cs)) == 1:
                seen = _times(cs[0]) + (" each" if len(ws) > 1 else "")
            else:
                seen = ", ".join(f"{c:,}" for c in cs[:-1]) + f" and {cs[-1]:,} times"
            parts.append(f"{listed} ({seen} in {corpus_label}, below min_count {min_count})")
        elif token_counts is not None:
            parts.append(f"{listed} (in {corpus_label}, but not among the vectors' words)")
        else:
            parts.append(f"{listed} (not among the vectors' words)")
    return "no vector for: " + "; ".join(parts)


def _reason_summary(reasons: Mapping[str, str], min_count: int | None, corpus_label: str) -> str:
    """``"5 not in the corpus, 2 below min_count 5"`` for the words of a large set without a vector."""
    labels = {
        "multiword": "multi-word",
        "absent": f"not in {corpus_label}",
        "below_min_count": f"below min_count {min_count}",
        "not_in_vectors": "not among the vectors' words",
    }
    n = {r: sum(v == r for v in reasons.values()) for r in labels}
    return ", ".join(f"{k} {labels[r]}" for r, k in n.items() if k)


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
    token_counts: Mapping[str, int] | None = None,
    min_count: int | None = None,
    corpus_label: str = "the corpus",
    min_target_words: int = 1,
) -> pd.DataFrame:
    """WEAT on fixed targets with several attribute pairs of the same meaning and different frequency.

    Seed 000 section 3.5.3 (experiment E^WEAT, frequency part) and Tables 3.6-3.7: if the same
    X, Y give different decisions with ``(A_1, B_1)`` and ``(A_2, B_2)`` that name the same social
    groups, the attribute words' frequency affects the test.  One row per attribute pair:
    corpus mean frequency of A, of B and of A u B (the thesis's number), mean Zipf frequency
    (``wordfreq``), the frequency ratio A/B, WEAT statistic, d, p, the decision at ``alpha``, the
    permutation method and the OOV words.  A pair whose words are all out of vocabulary gives a
    row with NaN and the reason in ``error`` (logged).

    Every row also has ``coverage`` (words with a vector out of the distinct words of X, Y, A, B)
    and ``note``, in plain words: why a row was not computed, or which attribute words it was
    computed without, naming the words and the reason (:func:`missing_vector_note`; pass the
    vectors' training-corpus ``token_counts`` and ``min_count`` to tell "not in the corpus" from
    "below min_count").  ``min_target_words``: a target set with fewer words with a vector leaves
    the row uncomputed.  When each target set keeps a single word the row is never computed: s(x)
    and s(y) are then single numbers a, b and d = (a - b) / sd({a, b}) = (a - b) / (|a - b| /
    sqrt(2)) = +-sqrt(2) whatever the vectors (``ddof=1``).  With n_X and n_Y target words the
    permutation test has C(n_X + n_Y, n_X) splits, so p >= 1 / C(n_X + n_Y, n_X); when that floor
    exceeds ``alpha`` the note says so (the row can never be significant).
    """
    if not attribute_sets:
        raise ValueError("attribute_sets is empty")
    if min_target_words < 1:
        raise ValueError(f"min_target_words must be >= 1, got {min_target_words}")
    test = test or WEAT()
    vocab = vector_vocabulary(vectors)
    targets = [(names[0], list(dict.fromkeys(X))), (names[1], list(dict.fromkeys(Y)))]
    found_t = [sum(w in vocab for w in ws) for _, ws in targets]
    short = [i for i in (0, 1) if found_t[i] < min_target_words]
    forced = not short and found_t == [1, 1]  # d = +-sqrt(2) by arithmetic
    target_note = ""
    if short or forced:
        frags = []
        for i in short or [0, 1]:
            k, ws = targets[i]
            why = _reason_summary(
                missing_vector_reasons(ws, vectors, token_counts, min_count=min_count),
                min_count,
                corpus_label,
            )
            n_k, n_all = found_t[i], len(ws)
            have = "no word of" if n_k == 0 else f"only {n_k} of the {n_all} words of"
            verb = "have" if n_k > 1 else "has"
            frags.append(f"{have} '{k}' {verb} a vector" + (f" ({why})" if why else ""))
        if forced:
            need = "; with one word per target set, d is ±1.41 whatever the vectors"
        elif min_target_words > 1:
            need = f"; at least {min_target_words} per target set are needed"
        else:
            need = ""
        target_note = "not computed: " + " and ".join(frags) + need
    n_x, n_y = found_t
    p_floor = 1 / math.comb(n_x + n_y, n_x) if n_x and n_y else 1.0
    small_note = (
        f"only {n_x} + {n_y} target words have a vector, so p cannot fall below {p_floor:.3f}"
        if p_floor > alpha
        else ""
    )
    rows: list[dict[str, Any]] = []
    for label, pair in attribute_sets.items():
        A, B = (list(words) for words in word_list_pair(label, pair, what="attribute set"))
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
        uniq = {"A": list(dict.fromkeys(A)), "B": list(dict.fromkeys(B))}
        row["coverage"] = " · ".join(
            f"{k} {sum(w in vocab for w in ws)}/{len(ws)}"
            for k, ws in zip(
                ("X", "Y", "A", "B"), (targets[0][1], targets[1][1], *uniq.values()), strict=True
            )
        )
        attr_note = missing_vector_note(
            A + B, vectors, token_counts, min_count=min_count, corpus_label=corpus_label
        )
        empty = [k for k, ws in uniq.items() if ws and not any(w in vocab for w in ws)]
        if target_note:
            logger.warning("attribute set %r: WEAT not computed: %s", label, target_note)
            row.update(
                statistic=np.nan,
                d=np.nan,
                p_value=np.nan,
                reject_h0=None,
                error=target_note,
                note=target_note + (f"; among the attribute words, {attr_note}" if attr_note else ""),
            )
            rows.append(row)
            continue
        try:
            r = test.run(X, Y, A, B, vectors, names=(names[0], names[1], "A", "B"))
        except ValueError as exc:
            logger.warning("attribute set %r: WEAT not computed: %s", label, exc)
            if empty:
                which = (
                    "neither A nor B has a word with" if len(empty) == 2 else f"{empty[0]} has no word with"
                )
                note = f"not computed: {which} a vector; {attr_note}"
            else:
                note = f"not computed: {exc}"
            row.update(statistic=np.nan, d=np.nan, p_value=np.nan, reject_h0=None, error=str(exc), note=note)
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
            note="; ".join(
                t
                for t in (
                    small_note,
                    attr_note.replace("no vector for:", "computed without the words that have no vector:", 1),
                )
                if t
            ),
        )
        rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- section 3.5.2, second half
def _xy_correlations(
    data: pd.DataFrame,
    x_columns: Sequence[str],
    y_column: str,
    *,
    methods: Sequence[str],
    min_n: int,
) -> pd.DataFrame:
    """Correlate each of ``x_columns`` with ``y_column`` of one table (rows = units) through
    :func:`frequency_correlations`; columns ``x, y, method, n, r, p_value, ci_low, ci_high,
    dropped, result``.  A correlation needs at least 3 units whatever ``min_n`` says."""
    data = data.copy()
    data.index = [str(i) for i in data.index]
    res = frequency_correlations(
        data[list(x_columns)],
        {y_column: data[y_column]},
        frequency_columns=tuple(x_columns),
        methods=methods,
        min_n=max(int(min_n), 3),
    )
    return res.rename(columns={"metric": "y", "frequency": "x"})[
        ["x", "y", "method", "n", "r", "p_value", "ci_low", "ci_high", "dropped", "result"]
    ]


def pmi_direct_bias_cells(
    pmi: pd.DataFrame | Mapping[str, pd.Series],
    direct_bias: pd.DataFrame | Mapping[str, pd.Series],
    frequency: pd.DataFrame | None = None,
    *,
    frequency_columns: Sequence[str] = ("mean_count", "var_count"),
) -> pd.DataFrame:
    """The 30 x |H| cells (N_i, g_j) of seed 000 section 3.5.2 as one tidy table.

    ``pmi`` and ``direct_bias`` map each characteristic j (gender, religion, ...) to a Series
    indexed by neutral group N_i: BIAS_PMI(N_i, g_j) (:func:`biaskit.metrics.pmi.bias_pmi_table`,
    column ``pmi``) and DirectBias_c(N_i, g_j) (:func:`biaskit.metrics.direct_bias.direct_bias_experiment`,
    ``.values``).  ``frequency`` (:func:`group_frequency_stats`, indexed by group) adds the mean and
    variance of the seed frequencies of N_i to every cell of that group (they do not depend on j).

    One row per (characteristic, group), for the characteristics present in both inputs and the
    groups of either: ``cell`` ("group / characteristic"), ``BIAS_PMI``, ``|BIAS_PMI|`` and
    ``DirectBias`` (NaN where a metric is undefined), then the frequency columns.
    """
    pmi_map = {c: pmi[c] for c in pmi.columns} if isinstance(pmi, pd.DataFrame) else dict(pmi)
    db_map = (
        {c: direct_bias[c] for c in direct_bias.columns}
        if isinstance(direct_bias, pd.DataFrame)
        else dict(direct_bias)
    )
    chars = [c for c in pmi_map if c in db_map]
    if not chars:
        raise ValueError(f"pmi ({list(pmi_map)}) and direct_bias ({list(db_map)}) share no characteristic")
    if frequency is not None:
        missing = [c for c in frequency_columns if c not in frequency.columns]
        if missing:
            raise ValueError(f"frequency table lacks columns {missing}; it has {list(frequency.columns)}")
    frames = []
    for ch in chars:
        p = pd.Series(pmi_map[ch], dtype=float)
        d = pd.Series(db_map[ch], dtype=float)
        groups = list(dict.fromkeys([*p.index, *d.index]))
        frame = pd.DataFrame(
            {
                "characteristic": ch,
                "group": groups,
                "BIAS_PMI": p.reindex(groups).to_numpy(),
                "DirectBias": d.reindex(groups).to_numpy(),
            }
        )
        frame.insert(2, "|BIAS_PMI|", frame["BIAS_PMI"].abs())
        frames.append(frame)
    cells = pd.concat(frames, ignore_index=True)
    cells.insert(0, "cell", cells["group"].astype(str) + " / " + cells["characteristic"].astype(str))
    if frequency is not None:
        for col in frequency_columns:
            cells[col] = frequency[col].reindex(cells["group"]).to_numpy(dtype=float)
    return cells


def pmi_direct_bias_correlations(
    cells: pd.DataFrame,
    *,
    x_columns: Sequence[str] = ("BIAS_PMI", "|BIAS_PMI|", "mean_count", "var_count"),
    methods: Sequence[str] = ("pearson", "spearman"),
    by_characteristic: bool = True,
    min_n: int = 3,
) -> pd.DataFrame:
    r"""Correlations with DirectBias over the cells (N_i, g_j) (seed 000 section 3.5.2, second half).

    The thesis (section 3.5.2) computes, for i = 1..30 and j = 1..|H|,

    .. math::

        BIAS_{PMI;ij} = \log\frac{p(N_i \mid g_{1j})}{p(N_i \mid g_{2j})}, \qquad
        DirectBias_c(N_i, g_j) = \frac{1}{|N_i|}\sum_{w \in N_i} |\cos(w, g_j)|^c

    (g_{1j}, g_{2j}: the two word sets that define the direction g_j) and draws "a correlation
    graph" of the 30 x |H| pairs; it also correlates the mean and the variance of the seed
    frequencies of N_i with DirectBias_c(N_i, g_j).  This function gives that test: Pearson's r
    (with its Fisher-z 95% interval) and Spearman's rho, each with a two-sided p-value
    (H0: no correlation), through :func:`biaskit.core.stats.correlation`.

    ``cells`` is :func:`pmi_direct_bias_cells`.  Each column of ``x_columns`` is correlated with
    ``DirectBias``, over all cells together (``scope="all"``, n up to 30 x |H|: what the thesis
    describes) and, with ``by_characteristic``, within each characteristic (``scope`` = its
    name, n up to 30).  DirectBias is a mean of *absolute* cosines (it has no side) while
    BIAS_PMI is signed, so ``|BIAS_PMI|`` (the strength of the co-occurrence skew) is offered
    beside the thesis's signed value.  Pooling characteristics mixes directions whose
    DirectBias levels differ, and in the pooled frequency rows every group appears |H| times with
    the same frequency (the cells are not independent, so the pooled p-value is too small): read
    the per-characteristic rows too.  Cells with a NaN
    on either side are dropped (listed in ``dropped``); fewer than ``min_n`` cells give NaN.

    One row per (scope, x, method): ``n, r, p_value, ci_low, ci_high`` (Pearson only),
    ``dropped`` and the :class:`~biaskit.core.results.TestResult` in ``result``.
    """
    if "DirectBias" not in cells or "cell" not in cells:
        raise ValueError("cells must come from pmi_direct_bias_cells (columns 'cell' and 'DirectBias')")
    missing = [c for c in x_columns if c not in cells.columns]
    if missing:
        raise ValueError(f"cells lack columns {missing}; it has {list(cells.columns)}")
    scopes: list[tuple[str, pd.DataFrame]] = [("all", cells)]
    if by_characteristic:
        scopes += [(str(ch), sub) for ch, sub in cells.groupby("characteristic", sort=False)]
    frames = []
    for scope, sub in scopes:
        res = _xy_correlations(sub.set_index("cell"), x_columns, "DirectBias", methods=methods, min_n=min_n)
        res.insert(0, "scope", scope)
        frames.append(res)
    return pd.concat(frames, ignore_index=True)


# --------------------------------------------------------------------------- section 3.5.3, IMP part
def attribute_set_pairs(
    A: Sequence[str],
    B: Sequence[str],
    *,
    size: int = 2,
    n_pairs: int = 30,
    aligned: bool = True,
    random_state: int | None = 0,
) -> dict[str, tuple[list[str], list[str]]]:
    """n_pairs distinct attribute pairs (A_i, B_i), each a subset of ``size`` words of A and of B.

    Seed 000 section 3.5.3 asks for "30 different sets of A and B" without fixing how they are
    chosen.  We take them from the characteristic's own attribute sets, in the form of its
    Tables 3.6-3.7 (two words per side, e.g. *señor, él* vs *señora, ella*, which are subsets of
    ``espacio_m`` / ``espacio_f``):

    * ``aligned=True`` (A and B are pair lists of equal length, as ``espacio_m`` / ``espacio_f``:
      *hombre/mujer, él/ella, ...*): A_i and B_i use the same positions, so each pair of sets
      names matching words;
    * ``aligned=False``: A_i and B_i are drawn independently (``christianity words`` /
      ``islam words``).

    All distinct combinations are listed; when there are more than ``n_pairs`` of them,
    ``n_pairs`` are drawn without replacement (``random_state``) and kept in enumeration
    order; when there are fewer, all are returned (logged).  Duplicate words are removed first
    (for ``aligned``, duplicate positions).  Keys are ``"a1, a2 vs b1, b2"``.
    """
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    if n_pairs < 1:
        raise ValueError(f"n_pairs must be >= 1, got {n_pairs}")
    if isinstance(A, str) or isinstance(B, str):
        raise TypeError("A and B must be lists of words, not strings")
    if aligned:
        if len(A) != len(B):
            raise ValueError(f"aligned=True needs A and B of equal length, got {len(A)} and {len(B)}")
        pairs = list(dict.fromkeys(zip(A, B, strict=True)))
        if len(pairs) < size:
            raise ValueError(f"need at least {size} word pairs, got {len(pairs)}")
        combos = [
            ([pairs[k][0] for k in idx], [pairs[k][1] for k in idx])
            for idx in combinations(range(len(pairs)), size)
        ]
    else:
        a_words, b_words = list(dict.fromkeys(A)), list(dict.fromkeys(B))
        if len(a_words) < size or len(b_words) < size:
            raise ValueError(
                f"need at least {size} distinct words on each side, got {len(a_words)} and {len(b_words)}"
            )
        combos = [
            (list(a), list(b)) for a, b in product(combinations(a_words, size), combinations(b_words, size))
        ]
    if len(combos) > n_pairs:
        rng = np.random.default_rng(random_state)
        keep = np.sort(rng.choice(len(combos), size=n_pairs, replace=False))
        combos = [combos[k] for k in keep]
    elif len(combos) < n_pairs:
        logger.warning(
            "only %d distinct attribute pairs of size %d exist (asked for %d)", len(combos), size, n_pairs
        )
    return {f"{', '.join(a)} vs {', '.join(b)}": (a, b) for a, b in combos}


def weat_pmi_experiment(
    X: Sequence[str],
    Y: Sequence[str],
    attribute_pairs: Mapping[str, tuple[Sequence[str], Sequence[str]]],
    vectors: Any,
    corpus: SentenceIncidence | Sequence[Sequence[str]],
    *,
    test: WEAT | None = None,
    variant: Variant = "proportion",
    zero: ZeroPolicy = "nan",
    names: tuple[str, str] = ("X", "Y"),
) -> pd.DataFrame:
    r"""WEAT effect size d_i and the PMI difference for each attribute pair (A_i, B_i)
    (seed 000 section 3.5.3).

    Section 3.5.3 ("Regarding IMP", the Spanish acronym of PMI): for i = 1..30,

    .. math::

        d_i = \frac{\mathrm{mean}_{x\in X} s(x, A_i, B_i) - \mathrm{mean}_{y\in Y} s(y, A_i, B_i)}
                   {\mathrm{sd}_{w\in X\cup Y}\, s(w, A_i, B_i)}, \qquad
        \Delta_i = BIAS_{PMI}(X, A_i, B_i) - BIAS_{PMI}(Y, A_i, B_i)

    with BIAS_PMI(X, A, B) = log[(f_AX / (f_AX + f_AnX)) / (f_BX / (f_BX + f_BnX))], the set
    formula of section 3.1.2 (sentence counts; :func:`biaskit.metrics.pmi.bias_pmi_table`,
    ``variant``, ``zero``).  d_i comes from :meth:`biaskit.metrics.weat.WEAT.run` (``test``;
    its p-value is kept too).  Where the text and the formula disagree we follow the formula:
    the text writes the second term as PMI_bias(Y, A_i, B_i) without the index i that the first
    term has, and points to "the formulation 3.1.2", a section number; we use the same (A_i, B_i)
    in both terms and the set formula of section 3.1.2.  The text says "given H, M, X, Y, A, B"
    (M: the masked models of chapter 4); d_i is computed on the word vectors W, as everywhere
    else in section 3.5.3.  Both quantities are > 0 when X leans to A_i and Y to B_i, so the
    thesis's expectation (section 3.5.4: large effect sizes go with large PMI values) is a
    positive correlation: :func:`weat_pmi_correlations`.

    One row per pair: ``attributes, A, B, d, p_value, pmi_X, pmi_Y, delta_pmi`` and ``error``
    (why a value is missing: a pair with no word in the vectors or in the corpus gives NaN
    instead of stopping the table; logged).  The corpus is indexed once
    (:class:`~biaskit.metrics.pmi.SentenceIncidence`).
    """
    if not attribute_pairs:
        raise ValueError("attribute_pairs is empty")
    test = test or WEAT()
    inc = corpus if isinstance(corpus, SentenceIncidence) else SentenceIncidence(corpus)
    x_name, y_name = names
    if x_name == y_name:
        raise ValueError("names must differ")
    rows: list[dict[str, Any]] = []
    for label, pair in attribute_pairs.items():
        A, B = (list(words) for words in word_list_pair(label, pair, what="attribute pair"))
        row: dict[str, Any] = {"attributes": label, "A": A, "B": B}
        errors = []
        try:
            r = test.run(X, Y, A, B, vectors, names=(x_name, y_name, "A", "B"))
            row.update(d=r.effect_size, p_value=r.p_value)
        except ValueError as exc:
            logger.warning("attribute pair %r: WEAT not computed: %s", label, exc)
            row.update(d=np.nan, p_value=np.nan)
            errors.append(f"WEAT: {exc}")
        try:
            t = bias_pmi_table({x_name: X, y_name: Y}, {label: (A, B)}, inc, variant=variant, zero=zero)
            pmi = t.set_index("group")["pmi"]
            row.update(pmi_X=float(pmi[x_name]), pmi_Y=float(pmi[y_name]))
            for nm, note in zip(t["group"], t["note"], strict=True):
                if note and str(note).startswith(("undefined", "no seed")):
                    errors.append(f"BIAS_PMI({nm}): {note}")
        except ValueError as exc:
            logger.warning("attribute pair %r: BIAS_PMI not computed: %s", label, exc)
            row.update(pmi_X=np.nan, pmi_Y=np.nan)
            errors.append(f"BIAS_PMI: {exc}")
        row["delta_pmi"] = row["pmi_X"] - row["pmi_Y"]
        row["error"] = "; ".join(errors)
        rows.append(row)
    return pd.DataFrame(rows)


def weat_pmi_correlations(
    table: pd.DataFrame,
    *,
    methods: Sequence[str] = ("pearson", "spearman"),
    min_n: int = 3,
) -> pd.DataFrame:
    """Correlation of the WEAT effect size d_i with Delta_i = PMI_bias(X, A_i, B_i) - PMI_bias(Y, A_i, B_i).

    Seed 000 section 3.5.3 ("Once the thirty quantities are obtained for the two variables, a
    correlation graph is generated"): Pearson's r (Fisher-z 95% interval) and Spearman's rho,
    two-sided p-values (H0: no correlation), over the pairs where both are defined
    (:func:`weat_pmi_experiment`; dropped pairs are listed in ``dropped``).  Columns as in
    :func:`pmi_direct_bias_correlations` (``x`` = ``delta_pmi``, ``y`` = ``d``).
    """
    for col in ("attributes", "d", "delta_pmi"):
        if col not in table:
            raise ValueError(f"table lacks column {col!r}: use weat_pmi_experiment")
    return _xy_correlations(table.set_index("attributes"), ["delta_pmi"], "d", methods=methods, min_n=min_n)
