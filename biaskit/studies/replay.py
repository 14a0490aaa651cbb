"""Thesis replay: chapter 4 of seed 000 recomputed from the thesis's own BETO scores.

Maddalozzo (2023) scored the Spanish CrowS-Pairs with BETO
(``dccuchile/bert-base-spanish-wwm-uncased``) and saved the pseudo-log-likelihoods
(PLLs) as CSV files.  biaskit bundles them (``data/thesis-scores/``, see its
PROVENANCE.md) so that every number of seed 000 section 4.4 can be recomputed
without the model:

=====================  ==========================================================
function               thesis
=====================  ==========================================================
:func:`table_4_2`      proportion test on prop (cp, sz), 1503 original pairs
:func:`table_4_3`      Shapiro-Wilk on the four PLL distributions
:func:`table_4_4`      KS test of each distribution against a fitted GEV
:func:`table_4_5`      two-sample KS, ster vs anster
:func:`table_4_6`      KL divergence score (Liu & Hou 2023)
:func:`table_4_7`      z test on the mean of the PLL differences (with/without outliers)
:func:`table_4_8`      proportion tests on the first 170 original / paraphrased pairs
:func:`table_4_9`      sign agreement (Kwon et al.), H0: l1 = 0.8 vs H1: l1 < 0.8
:func:`table_4_10`     interval agreement, [lb, ub] = [-3.5, 3.5]
:func:`two_sample_agreement_test`   l1 vs l1' (thesis p ≈ 0.00004)
:func:`paraphrase_difference_tests` z and KS tests on M_diff original vs paraphrased
=====================  ==========================================================

The functions take the score tables as arguments (defaulting to the bundled thesis
scores), so the same code runs on scores computed with :mod:`biaskit.lm`
("compute" mode of notebooks 07 and 08).  The published values live, for display
only, in ``data/thesis-scores/published_ch4.json`` (:func:`load_published`); no
computation reads them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from biaskit.core.io import ValidationReport, check_csv_header, read_csv_lines, read_json_file, sha256_file
from biaskit.core.paths import data_dir

__all__ = [
    "EXPECTED_ROWS",
    "UNLABELLED",
    "compare_with_thesis",
    "compute_score_set",
    "load_published",
    "load_robustness_scores",
    "load_thesis_scores",
    "paraphrase_difference_tests",
    "pll_distributions",
    "replay_all",
    "robustness_diffs",
    "scores_dir",
    "table_4_2",
    "table_4_3",
    "table_4_4",
    "table_4_5",
    "table_4_6",
    "table_4_7",
    "table_4_8",
    "table_4_9",
    "table_4_10",
    "thesis_outlier_mask",
    "thesis_score_set",
    "two_sample_agreement_test",
    "validate_scores_frame",
]

logger = logging.getLogger(__name__)

Metric = Literal["cp", "sz"]
Variant = Literal["original", "paraphrased", "random"]

_VARIANT_SUFFIX = {"original": "or", "paraphrased": "par", "random": "ran"}
_COLUMN_SUFFIX = {"original": "", "paraphrased": "_par", "random": "_ran"}
#: Rows the thesis files must have (seed 000 section 4.4.1: 1503 originals, 170 paraphrased/random).
EXPECTED_ROWS = {"original": 1503, "paraphrased": 170, "random": 170}
SCORE_COLUMNS = ["row_id", "sent_more", "sent_less", "sent_more_score", "sent_less_score", "bias_type"]
#: Label given to pairs without a bias type (917 of the thesis's 1503 pairs, rows 586-1502).
UNLABELLED = "unlabelled"
KNOWN_BIAS_TYPES = frozenset(
    {
        "race-color",
        "gender",
        "nationality",
        "socioeconomic",
        "religion",
        "age",
        "sexual-orientation",
        "physical-appearance",
        "disability",
    }
)


def scores_dir() -> Path:
    """Folder of the bundled thesis scores (``<data>/thesis-scores``)."""
    return data_dir() / "thesis-scores"


#: metrics :func:`compute_score_set` can score (masked: cp, sz, aul; causal: ll, ll_mean, shared)
COMPUTE_METRICS: tuple[str, ...] = ("cp", "sz", "aul", "ll", "ll_mean", "shared")


def _check_args(metric: str, variant: str, *, computed: bool = False) -> None:
    if computed:
        if metric not in COMPUTE_METRICS:
            raise ValueError(f"metric must be one of {', '.join(COMPUTE_METRICS)}, got {metric!r}")
    elif metric not in ("cp", "sz"):
        raise ValueError(f"metric must be 'cp' (CrowS-Pairs variant) or 'sz' (Salazar), got {metric!r}")
    if variant not in _VARIANT_SUFFIX:
        raise ValueError(f"variant must be one of {sorted(_VARIANT_SUFFIX)}, got {variant!r}")


def validate_scores_frame(
    df: pd.DataFrame, *, expected_rows: int | None = None, source: str = "scores"
) -> pd.DataFrame:
    """Check a score table (columns :data:`SCORE_COLUMNS`) and return it with float scores.

    Raises ``ValueError`` naming the offending rows (as file lines, ``row + 2``, when
    the table was read from a CSV with a header) for: a wrong row count, missing or
    non-numeric scores, non-finite scores or empty sentences.  A missing bias type is
    not an error (the thesis's Spanish CrowS-Pairs has none for rows 586-1502): it is
    labelled :data:`UNLABELLED` and logged.  Unknown bias types are logged, not rejected.
    """
    missing_cols = [c for c in SCORE_COLUMNS if c not in df.columns and c != "row_id"]
    if missing_cols:
        raise ValueError(f"{source}: missing column(s) {missing_cols}; expected {SCORE_COLUMNS}")
    if expected_rows is not None and len(df) != expected_rows:
        raise ValueError(f"{source}: expected {expected_rows} rows, found {len(df)}")
    out = df.copy()
    if "row_id" not in out.columns:
        out.insert(0, "row_id", np.arange(len(out)))
    for col in ("sent_more_score", "sent_less_score"):
        num = pd.to_numeric(out[col], errors="coerce")
        bad = np.flatnonzero(~np.isfinite(num.to_numpy(dtype=float)))
        if bad.size:
            lines = (bad + 2).tolist()[:10]
            raise ValueError(
                f"{source}: column {col!r} has {bad.size} missing or non-numeric value(s) at file "
                f"line(s) {lines} (data rows {bad[:10].tolist()}), e.g. {out[col].iloc[bad[0]]!r}"
            )
        out[col] = num.astype(float)
    missing_type = (
        out["bias_type"].isna().to_numpy() | (out["bias_type"].astype(str).str.strip() == "").to_numpy()
    )
    if missing_type.any():
        rows = np.flatnonzero(missing_type)
        logger.info(
            "%s: %d pair(s) have no bias_type (data rows %d..%d, e.g.); labelled %r and kept",
            source,
            rows.size,
            rows[0],
            rows[-1],
            UNLABELLED,
        )
        out["bias_type"] = out["bias_type"].astype(object).where(~missing_type, UNLABELLED)
    for col in ("sent_more", "sent_less"):
        vals = out[col]
        bad = np.flatnonzero(vals.isna().to_numpy() | (vals.astype(str).str.strip() == "").to_numpy())
        if bad.size:
            raise ValueError(
                f"{source}: column {col!r} is empty at file line(s) {(bad + 2).tolist()[:10]} "
                f"(data rows {bad[:10].tolist()})"
            )
    unknown = sorted(set(out["bias_type"].astype(str)) - KNOWN_BIAS_TYPES - {UNLABELLED})
    if unknown:
        logger.warning("%s: bias types outside the CrowS-Pairs nine: %s (kept)", source, unknown)
    return out[SCORE_COLUMNS].reset_index(drop=True)


def _read_scores_csv(path: Path, columns: list[str], expected_rows: int) -> pd.DataFrame:
    """Read the ``columns`` of one thesis score CSV, checking every record and cell.

    The file is parsed with the CSV reader of :mod:`biaskit.data.datasets`, which knows each
    record's file line.  The replay needs every row of the thesis file, so anything that
    makes a row unusable raises ``ValueError`` naming the file, the column and the file
    line(s): a malformed record (a wrong number of fields, e.g. a file cut mid-row, or a
    quote never closed), a wrong number of data records, an empty sentence, or a score that
    is empty, not a number or not finite.  Problems that lose no data (blank lines, no line
    break at the end of the file) are logged as a WARNING with their lines.  An empty
    ``bias_type`` is kept as ``NaN`` (labelled by :func:`validate_scores_frame`).

    Returns a frame with the ``columns`` (sentences and bias types as text, scores as
    float) and a ``line`` column (1-based file line of each record).
    """
    context = f"thesis scores {path}"
    parsed = read_csv_lines(path.read_bytes(), "utf-8", context)
    header = parsed.header
    check_csv_header(header, columns, str(path))
    report = ValidationReport.from_records(
        parsed.issues, context=context, n_records=parsed.n_records, n_loaded=len(parsed.rows)
    )
    if report.n_skipped:
        raise ValueError(
            report.summary() + "\nthe replay needs every row of the thesis file: restore it from the "
            "repository (data/thesis-scores/PROVENANCE.md)"
        )
    report.log(logger, logging.WARNING)
    lines = np.array([ln for ln, _ in parsed.rows], dtype=int)
    if len(parsed.rows) != expected_rows:
        where = f"data on file lines {lines[0]}-{lines[-1]}" if lines.size else "no data records"
        raise ValueError(
            f"{path}: expected {expected_rows} rows, found {len(parsed.rows)} ({where}): "
            "the file is incomplete or has extra rows"
        )
    cols = {c: [f[header.index(c)] for _, f in parsed.rows] for c in columns}
    out: dict[str, Any] = {"line": lines}
    for col, values in cols.items():
        text = pd.Series(values, dtype=object)
        if col.endswith("_score"):
            num = pd.to_numeric(text.str.strip(), errors="coerce").astype(float)
            bad = np.flatnonzero(~np.isfinite(num.to_numpy()))
            if bad.size:
                raise ValueError(
                    f"{path}: column {col!r} has {bad.size} missing or non-numeric value(s) at file "
                    f"line(s) {lines[bad[:10]].tolist()}, e.g. {values[bad[0]]!r}"
                )
            out[col] = num.to_numpy()
        elif col.startswith("sent_"):
            bad = np.flatnonzero((text.str.strip() == "").to_numpy())
            if bad.size:
                raise ValueError(
                    f"{path}: column {col!r} is empty at file line(s) {lines[bad[:10]].tolist()} "
                    f"({bad.size} in all)"
                )
            out[col] = values
        else:  # bias_type: empty -> NaN, as pandas reads it
            out[col] = [v if v != "" else np.nan for v in values]
    return pd.DataFrame(out)


#: sha256 of the bundled score files (data/thesis-scores/PROVENANCE.md): a file cut inside its
#: last number still parses, so only the checksum can tell (a mismatch is logged as a WARNING).
SCORE_CHECKSUMS: dict[str, str] = {
    "cp_beto_or.csv": "058ce6873a7d41c8eefb3e28b458945eb4224d6047ed6e236cfbc72778bfa645",
    "cp_beto_par.csv": "bd67d2bf38bbfc5677e79c2354bbdefcb92ea812bdf79332029b4ea699d717b8",
    "cp_beto_ran.csv": "8622fab05669d5b4031bb6fec4f95b7b374210c540b321d378a00f2f989de5db",
    "sz_beto_or.csv": "28da3cd11ac398bd6bd5ea68513d88a2bc21e24e4657786c294ca1e048c246b7",
    "sz_beto_par.csv": "604e143282c01d6a9c167027ea077ac08c1d32ed5b2d12b2a4bf14d7a8be3d59",
    "sz_beto_ran.csv": "127d5f873ae9d3027f4e44ee874492f56f9933e39bd43b95e2b0862a511ea379",
}


@lru_cache(maxsize=12)
def _load_cached(metric: str, variant: str, folder: str) -> pd.DataFrame:
    """One thesis score file of ``folder``, read and checked once per process.

    See :func:`_read_scores_csv` for the checks (a damaged file raises ``ValueError`` with the
    file and line; problems that lose no data are logged as a WARNING, on the first read only).
    """
    path = Path(folder) / f"{metric}_beto_{_VARIANT_SUFFIX[variant]}.csv"
    if not path.exists():
        raise FileNotFoundError(
            f"{path} not found: the thesis scores ship with biaskit in data/thesis-scores/ "
            "(set BIASKIT_DATA_DIR if you moved the data folder)"
        )
    suffix = _COLUMN_SUFFIX[variant]
    rename = {
        f"sent_more{suffix}": "sent_more",
        f"sent_less{suffix}": "sent_less",
        f"sent_more{suffix}_score": "sent_more_score",
        f"sent_less{suffix}_score": "sent_less_score",
    }
    raw = _read_scores_csv(path, [*rename, "bias_type"], EXPECTED_ROWS[variant])
    expected = SCORE_CHECKSUMS.get(path.name)
    if expected is not None and (got := sha256_file(path)) != expected:
        logger.warning(
            "%s parses, but its sha256 is %s, not the published file's %s "
            "(data/thesis-scores/PROVENANCE.md): a score may have been changed or cut short, so "
            "the replayed numbers may differ from the thesis; restore the file from the repository",
            path,
            got,
            expected,
        )
    df = raw.drop(columns="line").rename(columns=rename)
    df.insert(0, "row_id", np.arange(len(df)))
    return validate_scores_frame(df, expected_rows=EXPECTED_ROWS[variant], source=path.name)


def load_thesis_scores(metric: Metric = "cp", variant: Variant = "original") -> pd.DataFrame:
    """The thesis's BETO PLL scores for one metric and one set of examples.

    Parameters
    ----------
    metric:
        ``"cp"`` (CrowS-Pairs variant: mask only the tokens the two sentences share,
        seed 000 section 4.1.6) or ``"sz"`` (Salazar et al. 2020 PLL: mask every
        token, section 4.1.3).
    variant:
        ``"original"`` (1503 pairs), ``"paraphrased"`` (170 paraphrases of the first
        170 pairs) or ``"random"`` (170 pairs of random sentences), seed 000
        section 4.4.1.

    Returns
    -------
    DataFrame with columns ``row_id`` (0-based position, aligned across variants for
    the first 170 rows), ``sent_more``, ``sent_less``, ``sent_more_score``,
    ``sent_less_score`` (float PLLs) and ``bias_type``.  A fresh copy each call.

    The thesis's data set gives no bias type for original rows 586-1502 (917 pairs);
    they are labelled ``"unlabelled"`` (the thesis used all 1503 pairs "regardless of
    the type of bias", section 4.4.1).
    """
    _check_args(metric, variant)
    return _load_cached(metric, variant, str(scores_dir())).copy()


def load_robustness_scores(metric: Metric = "cp", n: int = 170) -> pd.DataFrame:
    """The first ``n`` original pairs aligned with their paraphrased and random versions.

    Columns: ``row_id``, ``bias_type``, ``diff_or``, ``diff_par``, ``diff_ran`` (PLL
    differences M_diff = PLL_ster - PLL_anster for each version) and the six raw
    scores (``more_or``, ``less_or``, ``more_par`` ...).  Seed 000 sections 4.3 and
    4.4.3 (only the first 170 original pairs were paraphrased).
    """
    if not 0 < n <= EXPECTED_ROWS["paraphrased"]:
        raise ValueError(f"n must be in 1..{EXPECTED_ROWS['paraphrased']}, got {n}")
    frames = {v: load_thesis_scores(metric, v).head(n) for v in ("original", "paraphrased", "random")}
    return _robustness_frame(frames["original"], frames["paraphrased"], frames["random"])


def _robustness_frame(orig: pd.DataFrame, par: pd.DataFrame, ran: pd.DataFrame) -> pd.DataFrame:
    """Align original / paraphrased / random pairs on ``row_id`` (rows missing anywhere are dropped,
    logged)."""
    ids = set(par["row_id"]) & set(ran["row_id"]) & set(orig["row_id"])
    union = set(par["row_id"]) | set(ran["row_id"])
    lost = sorted(union - ids)
    if lost:
        logger.warning(
            "robustness: %d example(s) lack a score in one of the three versions and are left out: rows %s",
            len(lost),
            lost[:20],
        )
    if not ids:
        raise ValueError("no example has scores in all three versions (original, paraphrased, random)")
    keep = sorted(ids)
    o = orig.set_index("row_id").loc[keep]
    out = pd.DataFrame({"row_id": keep, "bias_type": o["bias_type"].to_numpy()})
    for key, df in (("or", orig), ("par", par), ("ran", ran)):
        d = df.set_index("row_id").loc[keep]
        out[f"more_{key}"] = d["sent_more_score"].to_numpy(dtype=float)
        out[f"less_{key}"] = d["sent_less_score"].to_numpy(dtype=float)
        out[f"diff_{key}"] = out[f"more_{key}"] - out[f"less_{key}"]
    p_types = par.set_index("row_id").loc[keep, "bias_type"].to_numpy()
    mismatch = np.flatnonzero(p_types != out["bias_type"].to_numpy())
    if mismatch.size:
        logger.warning("bias_type differs between original and paraphrased rows %s", mismatch[:10].tolist())
    return out


# --------------------------------------------------------------------- compute mode
def compute_score_set(
    model: Any = "auto",
    *,
    metrics: tuple[str, ...] = ("cp", "sz"),
    n_original: int | None = None,
    batch_size: int = 64,
    progress: bool = True,
    cache: bool = True,
    allow_fallback: bool = False,
) -> tuple[ScoreSet, dict[str, Any]]:
    """Score the Spanish CrowS-Pairs with a masked LM: the "compute" counterpart of :func:`thesis_score_set`.

    ``model`` is a :class:`biaskit.lm.MaskedLM`, a hub id / local folder, a bundled model
    trained by biaskit (``"es-mlm"``), ``"tiny"`` (the offline random stand-in) or ``"auto"``
    (BETO when available locally, else the bundled ``es-mlm``; else the stand-in only with
    ``allow_fallback=True``, otherwise :class:`biaskit.lm.ModelNotFoundError`:
    :func:`biaskit.lm.resolve_default_model`).  A named model that is not on this machine raises
    :class:`biaskit.lm.ModelNotFoundError`; nothing random runs in its place.  Pairs come from
    :func:`biaskit.data.datasets.load_crows_pairs_es` and are scored with
    :func:`biaskit.lm.score_pairs` (cached on disk); ``n_original`` keeps only the first
    original pairs (quick runs; keep it >= 170 for the robustness tables).

    As in the thesis's CSVs, pairs whose two sentences are identical after tokenisation
    (7 originals with the tiny stand-in) are kept as exact ties, so the originals give
    N = 1,503 as in the thesis; they are listed with action "kept" in ``info["reports"]``,
    next to any pair that cannot be scored (action "skipped", left out).
    A causal model (``"es-clm"``, ``"tiny-causal"``, a GPT-2 folder, or any model when ``metrics`` names
    a causal metric) is scored with causal metrics: masked ones in ``metrics`` are replaced by their
    counterparts (``cp`` -> ``shared``, ``sz`` -> ``ll``; :func:`biaskit.lm.counterpart_metric`) with a
    WARNING, and the score set is keyed by the metrics actually scored, so every table below runs on it.

    Returns ``(score_set, info)`` where ``info`` has ``model`` (the name asked for, e.g.
    ``"es-mlm"``, or the model's own name), ``kind`` (``"pretrained"``, ``"trained-here"`` or
    ``"random"``), ``is_fallback`` (True only for the random stand-in), ``message`` (one plain
    sentence saying which model ran) and the per-table validation ``reports``.
    """
    from biaskit.data import datasets
    from biaskit.lm import (
        CAUSAL_METRICS,
        counterpart_metric,
        get_lm,
        kind_of_name,
        resolve_default_model,
        score_pairs,
    )

    for m in metrics:
        _check_args(m, "original", computed=True)
    wanted = "causal" if any(m in CAUSAL_METRICS for m in metrics) else "masked"
    if isinstance(model, str):
        lm_kind = (kind_of_name(model) if model != "auto" else None) or wanted
    else:
        lm_kind = getattr(model, "kind", wanted)
    name, kind, message = "", "pretrained", ""
    if isinstance(model, str):
        choice = resolve_default_model(
            None if model == "auto" else model,
            lm_kind=lm_kind,  # type: ignore[arg-type]
            allow_fallback=allow_fallback,
        )
        lm = get_lm(choice.name, kind=lm_kind)  # type: ignore[arg-type]
        name, kind, message = choice.name, choice.kind, choice.message
    else:
        lm = model
    scored_as = {m: counterpart_metric(m, lm.kind) for m in metrics}
    switched = {m: c for m, c in scored_as.items() if c != m}
    if switched:
        logger.warning(
            "%s is a %s language model: %s have no meaning for it, so their counterparts are scored instead "
            "(%s); the score set's keys are the metrics actually scored",
            lm.name,
            lm.kind,
            ", ".join(repr(m) for m in switched),
            ", ".join(f"{a} -> {b}" for a, b in switched.items()),
        )
        metrics = tuple(dict.fromkeys(scored_as.values()))
    is_fallback = bool(getattr(lm, "is_fallback", False))
    name = name or lm.name
    if is_fallback:
        kind = "random"
    if not message:
        message = (
            f"Using {name!r}, a TINY RANDOM stand-in: its numbers are meaningless for bias and only show "
            "that the pipeline runs."
            if is_fallback
            else f"Using the {getattr(lm, 'kind', 'masked')} language model {name!r}."
        )
    out: ScoreSet = {}
    reports: dict[str, Any] = {}
    for m in metrics:
        out[m] = {}
        for variant in _VARIANT_SUFFIX:
            pairs = datasets.load_crows_pairs_es(variant)  # type: ignore[arg-type]
            if variant == "original" and n_original is not None:
                pairs = pairs.head(int(n_original))
            res = score_pairs(
                lm,
                pairs["sent_more"].tolist(),
                pairs["sent_less"].tolist(),
                m,  # type: ignore[arg-type]
                bias_types=pairs["bias_type"].tolist(),
                lines=pairs["line"].tolist(),
                batch_size=batch_size,
                cache=cache,
                progress=progress,
            )
            df = res.scores.rename(columns={"row": "row_id"})
            out[m][variant] = validate_scores_frame(df, source=f"{m}/{variant} scores of {lm.name}")
            reports[f"{m}/{variant}"] = res.report
    return out, {
        "model": name,
        "kind": kind,
        "is_fallback": is_fallback,
        "message": message,
        "reports": reports,
    }


# --------------------------------------------------------------------- published values
def load_published() -> dict[str, Any]:
    """The values printed in seed 000 section 4.4 (display only; see PROVENANCE.md)."""
    path = scores_dir() / "published_ch4.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} not found (set BIASKIT_DATA_DIR if you moved the data folder)")
    return read_json_file(path, "published values")


# --------------------------------------------------------------------------- score sets
ScoreSet = dict[str, dict[str, pd.DataFrame]]


def thesis_score_set(metrics: tuple[str, ...] = ("cp", "sz")) -> ScoreSet:
    """All bundled thesis scores as ``{metric: {variant: DataFrame}}`` (the input of every table)."""
    return {m: {v: load_thesis_scores(m, v) for v in _VARIANT_SUFFIX} for m in metrics}  # type: ignore[arg-type]


def _scores(scores: ScoreSet | None, metric: str, variant: str) -> pd.DataFrame:
    if scores is None:
        return load_thesis_scores(metric, variant)  # type: ignore[arg-type]
    try:
        return scores[metric][variant]
    except KeyError as exc:
        raise KeyError(f"score set has no {metric!r}/{variant!r} table (keys: {_keys(scores)})") from exc


def _keys(scores: ScoreSet) -> list[str]:
    return [f"{m}/{v}" for m, d in scores.items() for v in d]


def _metrics(scores: ScoreSet | None) -> list[str]:
    """The metrics of a score set, in its order (the thesis's cp and sz when ``None``)."""
    return ["cp", "sz"] if scores is None else list(scores)


def thesis_outlier_mask(x: np.ndarray | pd.Series, lower: float = 0.01, upper: float = 0.99) -> np.ndarray:
    """True for the values the thesis kept before Table 4.7: strictly between two quantiles.

    The rule is not stated in the thesis text ("outliers have been removed", section
    4.4.2); it is in the thesis notebook ``experiments_cap4.ipynb`` (biashandler @
    4b19a7e): ``q_low = diff.quantile(0.01)``, ``q_hi = diff.quantile(0.99)``,
    ``diff[(diff < q_hi) & (diff > q_low)]``: a 1%/99% trim with pandas' linear
    quantile interpolation and strict inequalities (32 of 1503 values dropped).
    """
    arr = np.asarray(x, dtype=float)
    q_low, q_hi = np.quantile(arr, [lower, upper])
    return (arr > q_low) & (arr < q_hi)


# --------------------------------------------------------------------------- tables
def table_4_2(
    scores: ScoreSet | None = None,
    *,
    variant: Variant = "original",
    n: int | None = None,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Proportion test on prop = B_CrowS / 100 per metric (seed 000 section 4.4.2, Table 4.2).

    H0: prop = 0.5 vs H1: prop != 0.5, z test with the sample-proportion variance
    (:func:`biaskit.metrics.crows.crows_proportion_test`); ties count as "anti"
    (as the thesis).  ``n`` keeps the first ``n`` pairs (Table 4.8 uses 170).
    Columns: ``prop``, ``n``, ``n_stereo``, ``n_ties``, ``z``, ``p_value``, ``is_biased``
    (p < alpha).
    """
    from biaskit.metrics import crows

    rows = []
    for m in _metrics(scores):
        df = _scores(scores, m, variant)
        if n is not None:
            df = df[df["row_id"] < n]
        res = crows.crows_proportion_test(df["sent_more_score"], df["sent_less_score"])
        rows.append(
            {
                "metric": m,
                "prop": res.estimate,
                "n": res.n,
                "n_stereo": res.details["count"],
                "n_ties": res.details["n_ties"],
                "z": res.statistic,
                "p_value": res.p_value,
                "is_biased": res.reject(alpha),
            }
        )
    return pd.DataFrame(rows).set_index("metric")


def pll_distributions(scores: ScoreSet | None = None) -> dict[str, np.ndarray]:
    """The four PLL samples of section 4.4.2: ``{"ster_cp", "anster_cp", "ster_sz", "anster_sz"}``.

    ``ster_m`` / ``anster_m`` = PLLs of the stereotypical / anti-stereotypical sentences of
    all original pairs under metric ``m`` (only the metrics present in ``scores``).
    """
    out = {}
    for m in _metrics(scores):
        df = _scores(scores, m, "original")
        out[f"ster_{m}"] = df["sent_more_score"].to_numpy(dtype=float)
        out[f"anster_{m}"] = df["sent_less_score"].to_numpy(dtype=float)
    return out


def table_4_3(scores: ScoreSet | None = None) -> pd.DataFrame:
    """Shapiro-Wilk on ster/anster PLLs for cp and sz (seed 000 section 4.4.2, Table 4.3)."""
    from biaskit.core import stats

    rows = []
    for name, x in pll_distributions(scores).items():
        r = stats.shapiro_wilk(x, name=name)
        rows.append({"distribution": name, "W": r.statistic, "p_value": r.p_value, "n": r.n})
    return pd.DataFrame(rows).set_index("distribution")


def table_4_4(
    scores: ScoreSet | None = None, *, dist: str = "genextreme", n_mc_samples: int = 0, random_state: int = 0
) -> pd.DataFrame:
    """KS test of each PLL distribution against a fitted GEV (seed 000 section 4.4.2, Table 4.4).

    Parameters fitted by maximum likelihood (``scipy.stats.genextreme.fit``, what
    ``fitter`` calls); ``p_value`` is the standard KS p-value the thesis reports
    (optimistic because the parameters come from the same data).  With
    ``n_mc_samples > 0`` a parametric-bootstrap p-value is added (``p_value_bootstrap``).
    """
    from biaskit.core import stats

    rows = []
    for name, x in pll_distributions(scores).items():
        r = stats.ks_test(x, dist)
        row = {"distribution": name, "D": r.statistic, "p_value": r.p_value}
        row.update(dict(zip(r.details["param_names"], r.details["params"], strict=True)))
        if n_mc_samples:
            rb = stats.ks_test(x, dist, n_mc_samples=n_mc_samples, random_state=random_state)
            row["p_value_bootstrap"] = rb.p_value
        rows.append(row)
    return pd.DataFrame(rows).set_index("distribution")


def table_4_5(scores: ScoreSet | None = None) -> pd.DataFrame:
    """Two-sample KS test ster vs anster per metric (seed 000 section 4.4.2, Table 4.5)."""
    from biaskit.core import stats

    d = pll_distributions(scores)
    rows = []
    for m in _metrics(scores):
        r = stats.ks_2samp_test(d[f"anster_{m}"], d[f"ster_{m}"])
        rows.append({"metric": m, "D": r.statistic, "p_value": r.p_value})
    return pd.DataFrame(rows).set_index("metric")


def table_4_6(scores: ScoreSet | None = None) -> pd.DataFrame:
    """KL divergence score between ster and anster per metric (seed 000 section 4.4.2, Table 4.6).

    Pooled over all pairs, as the thesis (``by_type`` is the size-weighted mean over
    the labelled bias types only, for comparison; NaN when fewer than two types).
    """
    from biaskit.core import stats

    d = pll_distributions(scores)
    rows = []
    for m in _metrics(scores):
        r = stats.kl_divergence_score(d[f"ster_{m}"], d[f"anster_{m}"])
        df = _scores(scores, m, "original")
        lab = (df["bias_type"] != UNLABELLED).to_numpy()
        by_type = float("nan")
        if len(set(df.loc[lab, "bias_type"])) >= 2:
            by_type = stats.kl_divergence_score(
                d[f"ster_{m}"][lab], d[f"anster_{m}"][lab], groups=df.loc[lab, "bias_type"].to_numpy()
            ).statistic
        rows.append(
            {
                "metric": m,
                "kl_score": r.statistic,
                "kl_ster_anster": r.details["kl_ster_anster"],
                "kl_anster_ster": r.details["kl_anster_ster"],
                "sd_ster": r.details["sd_ster"],
                "sd_anster": r.details["sd_anster"],
                "kl_score_by_type": by_type,
            }
        )
    return pd.DataFrame(rows).set_index("metric")


def table_4_7(scores: ScoreSet | None = None) -> pd.DataFrame:
    """z test of H0: mean(PLL_ster - PLL_anster) = 0 (seed 000 section 4.4.2, Table 4.7, Figure 4.12).

    Reported twice per metric: ``outliers="removed"`` with the thesis's rule
    (:func:`thesis_outlier_mask`, 1%/99% quantile trim) and ``outliers="kept"``.
    Also the Shapiro-Wilk p-value of the differences (the thesis: both ≈ 0).
    """
    from biaskit.core import stats
    from biaskit.metrics.crows import m_diff

    rows = []
    for m in _metrics(scores):
        df = _scores(scores, m, "original")
        diff = m_diff(df["sent_more_score"], df["sent_less_score"])
        for label, x in (("removed (1%/99% quantile trim)", diff[thesis_outlier_mask(diff)]), ("kept", diff)):
            z = stats.z_test_mean(x, 0.0, "two-sided")
            rows.append(
                {
                    "metric": m,
                    "outliers": label,
                    "n": z.n,
                    "mean": z.estimate,
                    "z": z.statistic,
                    "p_value": z.p_value,
                    "shapiro_p": stats.shapiro_wilk(x).p_value,
                }
            )
    return pd.DataFrame(rows).set_index(["metric", "outliers"])


def table_4_8(scores: ScoreSet | None = None, *, n: int = 170, alpha: float = 0.05) -> pd.DataFrame:
    """Proportion tests on the first ``n`` original, paraphrased and random pairs (Table 4.8).

    Seed 000 section 4.4.3 (the thesis prints the original and paraphrased rows; its
    notebook also computed the random row).
    """
    parts = []
    for v in ("original", "paraphrased", "random"):
        t = table_4_2(scores, variant=v, n=n, alpha=alpha).reset_index()  # type: ignore[arg-type]
        t.insert(1, "examples", v)
        parts.append(t)
    return pd.concat(parts).set_index(["metric", "examples"]).sort_index(level=0, sort_remaining=False)


def robustness_diffs(scores: ScoreSet | None = None, metric: str = "cp") -> pd.DataFrame:
    """The aligned M_diff table (``diff_or``, ``diff_par``, ``diff_ran`` ...) for ``metric``."""
    if scores is None:
        return load_robustness_scores(metric)  # type: ignore[arg-type]
    return _robustness_frame(
        _scores(scores, metric, "original"),
        _scores(scores, metric, "paraphrased"),
        _scores(scores, metric, "random"),
    )


def table_4_9(scores: ScoreSet | None = None, *, metric: str = "cp", pr_rob: float = 0.8) -> pd.DataFrame:
    """Sign agreement l1 and H0: l1 = pr_rob vs H1: l1 < pr_rob (seed 000 section 4.4.3, Table 4.9)."""
    from biaskit.metrics import robustness

    r = robustness_diffs(scores, metric)
    t = robustness.robustness_summary(r["diff_or"], r["diff_par"], r["diff_ran"], pr_rob=pr_rob)
    return t[t["rule"] == "sign"].drop(columns="rule").set_index("comparison")


def table_4_10(
    scores: ScoreSet | None = None,
    *,
    metric: str = "cp",
    pr_rob: float = 0.8,
    lb: float = -3.5,
    ub: float = 3.5,
) -> pd.DataFrame:
    """Interval agreement l1 with [lb, ub] and the one-sided test (seed 000 section 4.4.3, Table 4.10)."""
    from biaskit.metrics import robustness

    r = robustness_diffs(scores, metric)
    t = robustness.robustness_summary(r["diff_or"], r["diff_par"], r["diff_ran"], pr_rob=pr_rob, lb=lb, ub=ub)
    return t[t["rule"] != "sign"].set_index("comparison")


def two_sample_agreement_test(
    scores: ScoreSet | None = None, *, metric: str = "cp", lb: float = -3.5, ub: float = 3.5
):
    """Two-sample z test l1 (paraphrased) vs l1' (random), interval rule (thesis p ≈ 0.00004)."""
    from biaskit.metrics import robustness

    r = robustness_diffs(scores, metric)
    return robustness.compare_agreements(
        r["diff_or"], r["diff_par"], r["diff_ran"], method="interval", lb=lb, ub=ub
    )


def paraphrase_difference_tests(scores: ScoreSet | None = None, *, metric: str = "cp"):
    """z test of mean(M_diff^or - M_diff^par) = 0 (thesis p = 0.5352) and KS test (p = 0.704)."""
    from biaskit.metrics import robustness

    r = robustness_diffs(scores, metric)
    return robustness.paraphrase_difference_tests(r["diff_or"], r["diff_par"])


def replay_all(scores: ScoreSet | None = None, *, n_mc_samples: int = 0) -> dict[str, Any]:
    """Every chapter-4 table from one score set:
    ``{"table_4_2": DataFrame, ..., "two_sample": TestResult, ...}``."""
    has_rob = scores is None or all(v in scores.get("cp", {}) for v in ("original", "paraphrased", "random"))
    out: dict[str, Any] = {
        "table_4_2": table_4_2(scores),
        "table_4_3": table_4_3(scores),
        "table_4_4": table_4_4(scores, n_mc_samples=n_mc_samples),
        "table_4_5": table_4_5(scores),
        "table_4_6": table_4_6(scores),
        "table_4_7": table_4_7(scores),
    }
    if has_rob:
        out.update(
            {
                "table_4_8": table_4_8(scores),
                "table_4_9": table_4_9(scores),
                "table_4_10": table_4_10(scores),
                "two_sample": two_sample_agreement_test(scores),
                "paraphrase_tests": paraphrase_difference_tests(scores),
            }
        )
    return out


# --------------------------------------------------------------------------- thesis vs reproduced
def _reproduced_values(results: Mapping[str, Any]) -> dict[str, float]:
    """Flatten ``replay_all`` output to the quantities the thesis printed."""
    v: dict[str, float] = {}
    if "table_4_2" in results:
        t = results["table_4_2"]
        for m in t.index:
            v[f"Table 4.2 prop ({m})"] = t.loc[m, "prop"]
            v[f"Table 4.2 p-value ({m})"] = t.loc[m, "p_value"]
    for key, label, column in (
        ("table_4_3", "Table 4.3 Shapiro p", "p_value"),
        ("table_4_4", "Table 4.4 KS-GEV p", "p_value"),
        ("table_4_5", "Table 4.5 KS ster vs anster p", "p_value"),
        ("table_4_6", "Table 4.6 KL score", "kl_score"),
    ):
        if key in results:
            for idx, row in results[key].iterrows():
                v[f"{label} ({idx})"] = row[column]
    if "table_4_7" in results:
        t = results["table_4_7"]
        for m in t.index.get_level_values(0).unique():
            v[f"Table 4.7 z-test p (diff_{m})"] = t.loc[(m, "removed (1%/99% quantile trim)"), "p_value"]
    if "table_4_8" in results:
        t = results["table_4_8"]
        for (m, e), row in t.iterrows():
            if e == "random":
                continue
            v[f"Table 4.8 prop ({m}, {e})"] = row["prop"]
            v[f"Table 4.8 p-value ({m}, {e})"] = row["p_value"]
    for key, label in (("table_4_9", "Table 4.9"), ("table_4_10", "Table 4.10")):
        if key in results:
            for comp, row in results[key].iterrows():
                short = comp.split(" vs ")[1]
                v[f"{label} l1 ({short})"] = row["l1"]
                v[f"{label} p-value ({short})"] = row["p_value"]
    if "two_sample" in results:
        v["two-sample z test l1 vs l1' p"] = results["two_sample"].p_value
    if "paraphrase_tests" in results:
        v["z test mean(M_diff or - par) p"] = results["paraphrase_tests"]["z_test"].p_value
        v["KS M_diff or vs par p"] = results["paraphrase_tests"]["ks_test"].p_value
    return {k: float(x) for k, x in v.items()}


def _published_flat() -> dict[str, Any]:
    p = load_published()
    f: dict[str, Any] = {}
    for m in ("cp", "sz"):
        f[f"Table 4.2 prop ({m})"] = p["table_4_2"][m]["prop"]
        f[f"Table 4.2 p-value ({m})"] = p["table_4_2"][m]["p_value"]
        f[f"Table 4.5 KS ster vs anster p ({m})"] = p["table_4_5"][m]
        f[f"Table 4.6 KL score ({m})"] = p["table_4_6"][m]
        f[f"Table 4.7 z-test p (diff_{m})"] = p["table_4_7"][f"diff_{m}"]
        for e in ("original", "paraphrased"):
            f[f"Table 4.8 prop ({m}, {e})"] = p["table_4_8"][m][e]["prop"]
            f[f"Table 4.8 p-value ({m}, {e})"] = p["table_4_8"][m][e]["p_value"]
    for d, x in p["table_4_3"].items():
        f[f"Table 4.3 Shapiro p ({d})"] = x
    for d, x in p["table_4_4"].items():
        f[f"Table 4.4 KS-GEV p ({d})"] = x
    for key, label in (("table_4_9", "Table 4.9"), ("table_4_10", "Table 4.10")):
        for short in ("paraphrased", "random"):
            f[f"{label} l1 ({short})"] = p[key][short]["l1"]
            f[f"{label} p-value ({short})"] = p[key][short]["p_value"]
    f["two-sample z test l1 vs l1' p"] = p["two_sample_l1_vs_l1prime"]["p_value"]
    f["z test mean(M_diff or - par) p"] = p["mdiff_original_minus_paraphrased"]["z_test_p_value"]
    f["KS M_diff or vs par p"] = p["mdiff_original_minus_paraphrased"]["ks_p_value"]
    return f


def _decimals(printed: str) -> int:
    return len(printed.split(".")[1]) if "." in printed else 0


def compare_with_thesis(results: Mapping[str, Any]) -> pd.DataFrame:
    """Side-by-side "thesis vs reproduced" table for the output of :func:`replay_all`.

    ``thesis`` is the value as printed (a string, with its precision); ``matches`` is True
    when the reproduced value, rounded to the number of decimals the thesis printed,
    equals the printed value ("≈ 0" matches a value below 0.0005).
    The thesis printed the two-sample p-value 4.76e-05 as "0.00004" (truncated, not
    rounded); that row also accepts truncation.
    """
    pub = _published_flat()
    rep = _reproduced_values(results)
    rows = []
    for k, printed in pub.items():
        got = rep.get(k, float("nan"))
        printed = str(printed)
        if printed == "~0":
            ok = bool(np.isfinite(got) and abs(got) < 5e-4)
            shown = "≈ 0"
        else:
            dec = _decimals(printed)
            value = float(printed)
            ok = bool(np.isfinite(got) and round(got, dec) == round(value, dec))
            if not ok and np.isfinite(got):  # truncation (how "0.00004" was printed)
                ok = bool(np.floor(got * 10**dec) / 10**dec == round(value, dec))
            shown = printed
        rows.append({"quantity": k, "thesis": shown, "reproduced": got, "matches": ok})
    return pd.DataFrame(rows)
