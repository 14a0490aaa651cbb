r"""Directional pairwise class confusion bias (DPCCB) and its pair-wise mitigation.

Seed 003 (Sayenju 2023, chapter 3; Sayenju et al., IEEE ICSC 2022 and IJSC 16(4) 2022)
calls a classifier *biased from class c_i to class c_j* when it systematically
predicts c_j for samples whose true class is c_i.  From a confusion matrix C
(rows = true class, columns = predicted class, Fig. 3.2):

.. math::

    C'(i, j) = \frac{C(i, j)\,(1 - [i = j])}{\max_{k} C(k, j)}          \quad\text{(Eqs. 3.1-3.3)}

    \beta(c_i \xrightarrow{b} c_j) = C'(i, j), \qquad
    \text{significant when } \beta > \theta_b \ (\theta_b = 0.15 \text{ in the study}).

The antecedent c_i is the *source* class, c_j the *destination* class.

**Which axis?**  Printed literally (divide by the maximum of the *column*, i.e. of the
predicted class), Eq. 3.1 applied to the printed 15-class matrix gives only
Document->Coverage = 0.179 and Payment->Billing = 0.159 above 0.15, not the pairs the
dissertation names.  Dividing by the maximum of the *row* (the true class, whose
maximum is its correct count) gives four of the six pairs it names: Coverage->Document
0.543, Billing->Payment 0.212, Coverage->Quote 0.197, EverythingElse->Escalation 0.154;
the other two, EverythingElse->Document (0.083) and Quote->Document (0.069), stay below
0.15 with either axis, and the row variant also flags the degenerate deny->EverythingElse
= 1.0 (a class with one test sample).  Both are implemented (``normalize="pred"`` = the
formula as printed, ``normalize="true"`` = the row variant, closer to the named pairs);
the notebook shows both.

**Mitigation** (section 3.3.2, Fig. 3.7): for a biased pair c_s -> c_d a secondary
binary classifier (a random forest in the study) re-labels the test samples the
primary model predicted as c_d into c_d or c_s.  The *priori* mitigator trains it on
the training samples whose true class is c_s or c_d; the *posteriori* mitigator on the
training samples the primary model *predicted* as c_s or c_d (biaskit keeps those whose
true class is also c_s or c_d and labels them by the truth; the dissertation leaves this
open).  Several pairs are mitigated one after the other, in the given order.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from biaskit.core.io import ValidationReport, check_csv_header, read_csv_lines, read_json_file
from biaskit.core.registry import (
    register_metric,
)

logger = logging.getLogger(__name__)

Normalize = Literal["pred", "true"]

__all__ = [
    "DPCCBSteps",
    "PairwiseMitigator",
    "class_report_from_confusion",
    "dpccb_matrix",
    "dpccb_pairs",
    "dpccb_steps",
    "load_sayenju_classification_report",
    "load_sayenju_confusion_matrix",
    "load_sayenju_published",
    "make_pairwise_confusion_data",
    "mitigate_sequentially",
    "plot_confusion_heatmap",
    "prune_dpccb",
    "source_class_metrics",
]


# --------------------------------------------------------------------------- input handling
def _as_confusion(cm: Any) -> tuple[np.ndarray, list[str] | None]:
    labels: list[str] | None = None
    if isinstance(cm, pd.DataFrame):
        if list(map(str, cm.index)) != list(map(str, cm.columns)):
            raise ValueError(
                "confusion matrix DataFrame: index (true classes) and columns (predicted) must list the same "
                "labels in the same order"
            )
        labels = [str(c) for c in cm.columns]
        arr = cm.to_numpy(dtype=float)
    else:
        arr = np.asarray(cm, dtype=float)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] < 2:
        raise ValueError(f"a confusion matrix must be square with at least 2 classes, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError("a confusion matrix must contain finite, non-negative counts")
    return arr, labels


def _read_number_table(path: Path, what: str, integer_columns: Sequence[str] | None = None) -> pd.DataFrame:
    """A bundled CSV whose first column labels the rows (the index) and whose other columns hold numbers.

    The file is parsed with the CSV reader of :mod:`biaskit.data.datasets`, which knows each
    record's file line.  These are printed tables: a damaged one cannot be used, so
    ``ValueError`` names the file and the line(s) of every malformed record (a wrong number of
    fields, e.g. a file cut mid-row, or a quote never closed), empty or repeated row labels,
    and every cell that is empty, not a number, not finite or, in an integer column, not a
    whole number (with its column).  Problems that lose no data (blank lines, no line break
    at the end of the file) are logged as a WARNING with their lines.

    ``integer_columns`` are read as ``int64`` (``None``: every column), the others as ``float64``.
    """
    if not path.exists():
        raise FileNotFoundError(f"bundled {what} not found: {path}")
    context = f"{what} ({path})"
    parsed = read_csv_lines(path.read_bytes(), "utf-8", context)
    header = parsed.header
    if len(header) < 2:
        raise ValueError(
            f"{context}: the header (line 1) has {len(header)} column(s), expected a label and numbers"
        )
    check_csv_header(header, (), context, all_unique=True)
    report = ValidationReport.from_records(
        parsed.issues, context=context, n_records=parsed.n_records, n_loaded=len(parsed.rows)
    )
    if report.n_skipped:
        raise ValueError(report.summary() + "\nrestore the bundled file from the repository (data/sayenju/)")
    report.log(logger, logging.WARNING)
    lines = [ln for ln, _ in parsed.rows]
    labels = [f[0] for _, f in parsed.rows]
    problems: list[str] = []
    first_line: dict[str, int] = {}
    for ln, label in zip(lines, labels, strict=True):
        if not label.strip():
            problems.append(f"line {ln}: the row label ({header[0]!r}) is empty")
        elif label in first_line:
            problems.append(f"line {ln}: row label {label!r} repeats line {first_line[label]}")
        else:
            first_line[label] = ln
    columns: dict[str, Any] = {}
    for j, col in enumerate(header[1:], start=1):
        as_int = integer_columns is None or col in integer_columns
        values = [f[j] for _, f in parsed.rows]
        num = pd.to_numeric(pd.Series(values, dtype=object).str.strip(), errors="coerce")
        arr = num.to_numpy(dtype=float)
        bad = ~np.isfinite(arr)
        if as_int:
            bad |= np.isfinite(arr) & (arr != np.round(arr))
        for i in np.flatnonzero(bad):
            kind = "a whole number" if as_int else "a finite number"
            got = "empty" if not values[i].strip() else f"{values[i]!r} is not {kind}"
            problems.append(f"line {lines[i]}, column {col!r}: {got}")
        columns[col] = num.to_numpy().astype(np.int64) if as_int and not bad.any() else arr
    if problems:
        shown = "; ".join(problems[:10]) + (
            f"; ... ({len(problems) - 10} more)" if len(problems) > 10 else ""
        )
        raise ValueError(f"{context}: {len(problems)} unusable cell(s): {shown}")
    return pd.DataFrame(columns, index=pd.Index(labels, name=header[0]))


def load_sayenju_confusion_matrix() -> pd.DataFrame:
    """The 15-class test-set confusion matrix of seed 003, Fig. 3.2 (rows true, columns predicted).

    Bundled as ``data/sayenju/fig3_2_confusion_matrix.csv`` (transcribed verbatim; see
    ``data/sayenju/PROVENANCE.md``).  17,656 samples; accuracy 0.8442 (the text's "74.4%"
    is contradicted by the matrix).  A damaged file (a row cut short, a count that is not a
    whole number, ...) raises ``ValueError`` naming the file line and column; see
    :func:`_read_number_table`.
    """
    from biaskit.core.paths import data_dir

    path = data_dir() / "sayenju" / "fig3_2_confusion_matrix.csv"
    df = _read_number_table(path, "confusion matrix")
    df.index.name = "true"
    df.columns.name = "predicted"
    return df


def load_sayenju_classification_report() -> pd.DataFrame:
    """The classification report of seed 003 Fig. 3.8 as printed
    (precision, recall, f1-score, support per class).

    ``support`` is an integer, the other columns are floats.  A damaged file raises
    ``ValueError`` naming the file line and column (see :func:`_read_number_table`).
    """
    from biaskit.core.paths import data_dir

    path = data_dir() / "sayenju" / "fig3_8_classification_report.csv"
    return _read_number_table(path, "classification report", integer_columns=["support"])


def load_sayenju_published() -> dict[str, Any]:
    """Seed 003's printed results (DPCCB pairs, Table 3.3, Table 5.4, Table 5.5) from
    ``data/sayenju/published_results.json``.

    Invalid JSON raises ``ValueError`` naming the file, line and column.
    """
    from biaskit.core.paths import data_dir

    path = data_dir() / "sayenju" / "published_results.json"
    if not path.exists():
        raise FileNotFoundError(f"bundled file not found: {path}")
    return read_json_file(path, "published results")


# --------------------------------------------------------------------------- DPCCB
def dpccb_matrix(cm: Any, *, normalize: Normalize = "pred", zero_diagonal: bool = True) -> Any:
    r"""Directional pairwise class confusion bias matrix :math:`\beta = C'` (seed 003, Eqs. 3.1-3.3).

    .. math:: C'(i,j) = \frac{C(i,j)\,(1-[i=j])}{\max_k C(k,j)} \quad (\texttt{normalize="pred"})
    .. math:: C'(i,j) = \frac{C(i,j)\,(1-[i=j])}{\max_k C(i,k)} \quad (\texttt{normalize="true"})

    Parameters
    ----------
    cm:
        Confusion matrix, rows = true classes, columns = predicted classes (as
        :func:`sklearn.metrics.confusion_matrix` returns it), an array or a labelled
        DataFrame (the labels are kept).
    normalize:
        ``"pred"``: divide by the maximum of each column (the predicted class), Eq. 3.1
        as printed.  ``"true"``: divide by the maximum of each row (the true class); this
        is the variant closer to the pairs the dissertation names (four of its six; see the
        module docstring).  The maximum is taken *before* the diagonal is zeroed, as in Eq. 3.3.
    zero_diagonal:
        Mute correct predictions (Eq. 3.3); ``False`` gives Fig. 3.4.

    A row/column whose maximum is 0 (a class never predicted, or without test samples)
    has no defined ratio: its cells are set to 0 and the decision is logged.
    """
    if normalize not in ("pred", "true"):
        raise ValueError(
            f"normalize must be 'pred' (column max, Eq. 3.1) or 'true' (row max), got {normalize!r}"
        )
    arr, labels = _as_confusion(cm)
    axis = 0 if normalize == "pred" else 1
    denom = arr.max(axis=axis, keepdims=True)
    empty = np.flatnonzero(denom.ravel() == 0)
    if empty.size:
        names = [labels[i] if labels else i for i in empty]
        logger.info(
            "DPCCB: %s %s have no counts (max = 0); their ratios are set to 0",
            "predicted classes" if normalize == "pred" else "true classes",
            names,
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        beta = np.where(denom > 0, arr / np.where(denom > 0, denom, 1.0), 0.0)
    if zero_diagonal:
        np.fill_diagonal(beta, 0.0)
    if labels is not None:
        out = pd.DataFrame(beta, index=labels, columns=labels)
        out.index.name = "source (true)"
        out.columns.name = "destination (predicted)"
        return out
    return beta


def dpccb_pairs(beta: Any, labels: Sequence[str] | None = None, *, threshold: float = 0.15) -> pd.DataFrame:
    r"""The significant directed pairs :math:`c_i \to c_j` with :math:`\beta > \theta_b`
    (seed 003, section 3.3.1).

    Returns a DataFrame (``source``, ``destination``, ``beta``) sorted by decreasing
    ``beta``.  The comparison is strict, as in the definition.
    """
    arr, lab = (
        _as_confusion(beta) if isinstance(beta, pd.DataFrame) else (np.asarray(beta, dtype=float), None)
    )
    labels = list(labels) if labels is not None else lab or [str(i) for i in range(arr.shape[0])]
    if len(labels) != arr.shape[0]:
        raise ValueError(f"{len(labels)} labels for a {arr.shape[0]}x{arr.shape[1]} matrix")
    i, j = np.nonzero(arr > threshold)
    df = pd.DataFrame(
        {"source": [labels[k] for k in i], "destination": [labels[k] for k in j], "beta": arr[i, j]}
    )
    return df.sort_values("beta", ascending=False, kind="stable").reset_index(drop=True)


def prune_dpccb(beta: pd.DataFrame | np.ndarray, *, threshold: float = 0.15) -> Any:
    """Keep the rows and the columns that hold at least one value above ``threshold`` (Fig. 3.6).

    "The threshold filter will return only those rows and columns where one of their
    values is above the threshold" (seed 003, section 3.3).
    """
    arr = beta.to_numpy(dtype=float) if isinstance(beta, pd.DataFrame) else np.asarray(beta, dtype=float)
    rows = np.flatnonzero((arr > threshold).any(axis=1))
    cols = np.flatnonzero((arr > threshold).any(axis=0))
    if isinstance(beta, pd.DataFrame):
        return beta.iloc[rows, cols]
    return arr[np.ix_(rows, cols)]


@dataclass(frozen=True)
class DPCCBSteps:
    """The intermediate matrices of the DPCCB computation (seed 003 §3.3, Figs. 3.3-3.6).

    ``confusion`` (Figs. 3.2/3.3), ``denominators`` (the maximum of each column, or row,
    of ``confusion``), ``normalized`` (Eq. 3.1, Fig. 3.4: diagonal kept), ``beta``
    (Eq. 3.3, Fig. 3.5: diagonal muted) and ``pruned`` (Fig. 3.6).  Array inputs give
    arrays, labelled inputs DataFrames / a Series for ``denominators``.
    """

    normalize: Normalize
    threshold: float
    confusion: Any
    denominators: Any
    normalized: Any
    beta: Any
    pruned: Any

    @property
    def pairs(self) -> pd.DataFrame:
        """The directed pairs above :attr:`threshold` (:func:`dpccb_pairs` of :attr:`beta`)."""
        return dpccb_pairs(self.beta, threshold=self.threshold)

    def summary(self, alpha: float = 0.05) -> str:
        """DPCCB in plain words: how many class pairs pass the threshold, and which.

        DPCCB comes with no statistical test (a pair is called biased when its value exceeds a fixed
        threshold, 0.15 in the study); ``alpha`` is accepted for the interface every result shares and
        is not used.  The per-pair values stay in :attr:`beta`.
        """
        n_classes = int(np.asarray(self.confusion).shape[0])
        pairs = self.pairs
        axis = (
            "the largest count of the predicted class (its column)"
            if self.normalize == "pred"
            else "the largest count of the true class (its row)"
        )
        lines = [
            f"DPCCB (directional pairwise class confusion bias) over {n_classes} classes: "
            f"{len(pairs)} directed pair(s) above the threshold {self.threshold:g}",
            "  a value beta(source -> destination) is how often the classifier predicts the destination "
            f"class for samples of the source class, divided by {axis}: 0 = never, 1 = as often as the "
            "largest count",
        ]
        for r in pairs.head(10).itertuples(index=False):
            lines.append(f"  {r.source} -> {r.destination}: beta = {r.beta:.3f}")
        if len(pairs) > 10:
            lines.append(f"  ... and {len(pairs) - 10} more (see .pairs)")
        lines.append(
            "  no statistical test: a descriptive number compared with a fixed threshold "
            f"({self.threshold:g})"
        )
        return "\n".join(lines)


def dpccb_steps(cm: Any, *, normalize: Normalize = "pred", threshold: float = 0.15) -> DPCCBSteps:
    r"""Every intermediate step from a confusion matrix to the pruned DPCCB matrix
    (seed 003 §3.3, Figs. 3.3-3.6).

    .. math::

        m_j = \max_{k} C(k, j)\ (\texttt{"pred"}) \quad\text{or}\quad
            m_i = \max_{k} C(i, k)\ (\texttt{"true"})

        C'(i, j) = C(i, j) / m
            \quad\text{(Eq. 3.1, Fig. 3.4: the diagonal is kept; most diagonal cells are 1)}

        \beta(i, j) = C(i, j)\,(1 - [i = j]) / m \quad\text{(Eqs. 3.2-3.3, Fig. 3.5: the diagonal is muted)}

    then ``pruned`` keeps the rows and columns of :math:`\beta` with a value above
    ``threshold`` (Fig. 3.6, :func:`prune_dpccb`).  ``normalized`` and ``beta`` are
    :func:`dpccb_matrix` with ``zero_diagonal=False`` / ``True``; a column (row) whose
    maximum is 0 gives zeros.  ``normalize`` as in :func:`dpccb_matrix` (``"pred"``: the
    formula as printed; ``"true"``: the row variant, closer to the dissertation's pairs).

    Examples
    --------
    >>> import numpy as np
    >>> steps = dpccb_steps(np.array([[50, 30, 5], [8, 60, 4], [3, 6, 70]]))
    >>> steps.pairs
      source destination  beta
    0      0           1  0.50
    1      1           0  0.16
    """
    arr, labels = _as_confusion(cm)
    if normalize not in ("pred", "true"):
        raise ValueError(
            f"normalize must be 'pred' (column max, Eq. 3.1) or 'true' (row max), got {normalize!r}"
        )
    denom = arr.max(axis=0 if normalize == "pred" else 1)
    normalized = dpccb_matrix(cm, normalize=normalize, zero_diagonal=False)
    beta = dpccb_matrix(cm, normalize=normalize, zero_diagonal=True)
    confusion: Any = arr
    if labels is not None:
        confusion = pd.DataFrame(arr, index=labels, columns=labels)
        confusion.index.name, confusion.columns.name = "true", "predicted"
        denom = pd.Series(
            denom,
            index=pd.Index(labels, name="predicted" if normalize == "pred" else "true"),
            name="column max" if normalize == "pred" else "row max",
        )
    return DPCCBSteps(
        normalize=normalize,
        threshold=float(threshold),
        confusion=confusion,
        denominators=denom,
        normalized=normalized,
        beta=beta,
        pruned=prune_dpccb(beta, threshold=threshold),
    )


def class_report_from_confusion(cm: Any) -> pd.DataFrame:
    """Per-class support, predicted count, recall, precision and F1 from a confusion matrix.

    The layout of scikit-learn's ``classification_report`` (seed 003, Fig. 3.8).  Classes
    never predicted get precision 0 (scikit-learn's ``zero_division=0``), logged.
    """
    arr, labels = _as_confusion(cm)
    tp = np.diag(arr)
    support = arr.sum(axis=1)
    predicted = arr.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        recall = np.where(support > 0, tp / np.where(support > 0, support, 1), 0.0)
        precision = np.where(predicted > 0, tp / np.where(predicted > 0, predicted, 1), 0.0)
        f1 = np.where(
            recall + precision > 0,
            2 * recall * precision / np.where(recall + precision > 0, recall + precision, 1),
            0.0,
        )
    if np.any(predicted == 0):
        logger.info(
            "classes never predicted get precision 0: %s",
            [labels[i] if labels else i for i in np.flatnonzero(predicted == 0)],
        )
    return pd.DataFrame(
        {
            "support": support.astype(int),
            "predicted": predicted.astype(int),
            "recall": recall,
            "precision": precision,
            "f1": f1,
        },
        index=labels if labels is not None else range(arr.shape[0]),
    )


def _nonzero_text(value: float, fmt: str) -> str:
    """``format(value, fmt)``, except that a non-zero value that rounds to zero reads ``<0.01`` / ``>-0.01``
    (the smallest step of a fixed-point ``fmt`` such as ``".2f"``) instead of ``0.00``."""
    text = format(value, fmt)
    m = re.fullmatch(r"\.(\d+)f", fmt)
    if value == 0 or m is None or float(text) != 0:
        return text
    step = format(10 ** -int(m.group(1)), fmt)
    return f"<{step}" if value > 0 else f">-{step}"


def plot_confusion_heatmap(
    matrix: Any,
    *,
    ax: Any = None,
    title: str = "",
    cmap: str = "Blues",
    annotate: bool = True,
    fmt: str = ".2f",
    blank_zeros: bool = False,
) -> Any:
    """Heatmap of a (normalised or raw) confusion matrix, rows = true, columns = predicted (Figs. 3.3-3.6).

    ``blank_zeros``: leave the cells that are exactly 0 without a number (a sparse matrix
    reads better without a wall of "0.00").  A value that is not 0 but rounds to 0 at ``fmt``'s
    precision is then written ``<0.01`` (``>-0.01`` below 0; for ``fmt=".2f"``), so that a blank
    cell and a printed zero never mean two different things.
    """
    import matplotlib.pyplot as plt
    import seaborn as sns

    df = matrix if isinstance(matrix, pd.DataFrame) else pd.DataFrame(np.asarray(matrix))
    if ax is None:
        _, ax = plt.subplots(figsize=(0.55 * df.shape[1] + 3, 0.45 * df.shape[0] + 2))
    annot: Any = annotate
    if annotate and blank_zeros:
        values = df.to_numpy(dtype=float)
        annot = np.where(values == 0, "", np.vectorize(lambda v: _nonzero_text(v, fmt))(values))
        fmt = ""
    sns.heatmap(df, ax=ax, cmap=cmap, annot=annot, fmt=fmt, annot_kws={"size": 7}, cbar=True, linewidths=0.3)
    ax.tick_params(axis="y", rotation=0)
    ax.set_xlabel("predicted class (destination)")
    ax.set_ylabel("true class (source)")
    if title:
        ax.set_title(title)
    return ax


# --------------------------------------------------------------------------- mitigation
@dataclass
class PairwiseMitigator:
    """Secondary binary classifier for one biased pair ``source -> destination`` (seed 003, section 3.3.2).

    Parameters
    ----------
    source, destination:
        The source class c_s (under-recalled) and destination class c_d (over-predicted).
    strategy:
        ``"priori"``: train on the training samples whose *true* class is c_s or c_d.
        ``"posteriori"``: train on the training samples the primary model *predicted* as
        c_s or c_d (and, by default, whose true class is c_s or c_d; see ``posteriori_others``).
    estimator:
        Any scikit-learn classifier; default ``RandomForestClassifier(n_estimators=200,
        random_state=random_state)`` as in the study (whose hyper-parameters are not given).
    posteriori_others:
        What to do, for ``"posteriori"``, with samples predicted c_s/c_d whose true class is
        another one: ``"drop"`` (default) or ``"as_destination"`` (label them c_d).
    random_state:
        Seed of the default estimator.
    """

    source: Any
    destination: Any
    strategy: Literal["priori", "posteriori"] = "priori"
    estimator: Any = None
    posteriori_others: Literal["drop", "as_destination"] = "drop"
    random_state: int | None = 0
    n_train_: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.strategy not in ("priori", "posteriori"):
            raise ValueError(f"strategy must be 'priori' or 'posteriori', got {self.strategy!r}")
        if self.posteriori_others not in ("drop", "as_destination"):
            raise ValueError("posteriori_others must be 'drop' or 'as_destination'")
        if self.source == self.destination:
            raise ValueError("source and destination classes must differ")

    def fit(self, X: Any, y_true: Any, y_pred: Any = None) -> PairwiseMitigator:
        """Train the secondary classifier on the training set
        (``y_pred`` = primary predictions, needed for posteriori)."""
        from sklearn.base import clone
        from sklearn.ensemble import RandomForestClassifier

        y_true = np.asarray(y_true)
        pair = np.isin(y_true, [self.source, self.destination])
        labels = y_true.copy()
        if self.strategy == "priori":
            keep = pair
        else:
            if y_pred is None:
                raise ValueError(
                    "the posteriori mitigator needs the primary model's predictions on the training set "
                    "(y_pred)"
                )
            y_pred = np.asarray(y_pred)
            if y_pred.shape != y_true.shape:
                raise ValueError("y_true and y_pred must have the same length")
            predicted_pair = np.isin(y_pred, [self.source, self.destination])
            if self.posteriori_others == "drop":
                keep = predicted_pair & pair
                n_other = int((predicted_pair & ~pair).sum())
                if n_other:
                    logger.info(
                        "posteriori mitigator %s->%s: %d training samples predicted in the pair but of "
                        "another true class dropped",
                        self.source,
                        self.destination,
                        n_other,
                    )
            else:
                keep = predicted_pair
                labels = np.where(pair, y_true, self.destination)
        if not np.any(labels[keep] == self.source) or not np.any(labels[keep] == self.destination):
            raise ValueError(
                f"the {self.strategy} training set of pair {self.source}->{self.destination} lacks one of "
                "the two classes"
            )
        est = (
            self.estimator
            if self.estimator is not None
            else RandomForestClassifier(n_estimators=200, random_state=self.random_state)
        )
        self.estimator_ = clone(est)
        self.estimator_.fit(_take(X, keep), labels[keep])
        self.n_train_ = int(keep.sum())
        return self

    def apply(self, X: Any, y_pred: Any) -> np.ndarray:
        """Re-label the samples predicted as ``destination`` (Fig. 3.7); every other prediction is kept."""
        if not hasattr(self, "estimator_"):
            raise RuntimeError("call fit() before apply()")
        y_pred = np.asarray(y_pred)
        out = y_pred.copy()
        sel = y_pred == self.destination
        if sel.any():
            out[sel] = self.estimator_.predict(_take(X, sel))
        return out


def _take(X: Any, mask: np.ndarray) -> Any:
    if isinstance(X, pd.DataFrame):
        return X.loc[mask]
    return X[mask]


def mitigate_sequentially(mitigators: Sequence[PairwiseMitigator], X: Any, y_pred: Any) -> np.ndarray:
    """Apply fitted mitigators one after the other, in the given order (seed 003, section 3.4)."""
    out = np.asarray(y_pred)
    for m in mitigators:
        out = m.apply(X, out)
    return out


def source_class_metrics(y_true: Any, predictions: dict[str, Any], classes: Sequence[Any]) -> pd.DataFrame:
    """Recall and precision of the given (source) classes for several prediction vectors
    (Tables 3.1-3.3 layout)."""
    from sklearn.metrics import precision_recall_fscore_support

    y_true = np.asarray(y_true)
    rows = {}
    for name, y_pred in predictions.items():
        p, r, _, _ = precision_recall_fscore_support(
            y_true, np.asarray(y_pred), labels=list(classes), zero_division=0
        )
        rows[name] = {
            (str(c), k): v
            for c, pi, ri in zip(classes, p, r, strict=True)
            for k, v in (("recall", ri), ("precision", pi))
        }
    df = pd.DataFrame(rows).T
    df.columns = pd.MultiIndex.from_tuples(df.columns, names=["class", "metric"])
    return df


def make_pairwise_confusion_data(
    n_samples: int = 3000,
    *,
    n_classes: int = 5,
    biased_pairs: Sequence[tuple[int, int]] = ((0, 1), (2, 3)),
    source_fraction: float = 0.35,
    n_features: int = 6,
    linear_shift: float = 1.5,
    ring_noise: float = 0.6,
    random_state: int | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Synthetic labelled data in which a linear classifier confuses each source class with its destination.

    Every class is a Gaussian blob in the first two features.  For a pair (s, d) the
    source class s sits *on the same blob* as its destination d and differs from it
    only by a non-linear pattern in two further features (s lies on a ring around d's
    centre there), and s is rarer (``source_fraction`` of the pair).  A linear primary
    model (multinomial logistic regression) therefore tends to predict the majority d
    for s (a directional confusion s -> d), while a random forest trained on the pair can
    separate them: the setting the mitigators of seed 003 are designed for.  Used in
    notebook 12 instead of the proprietary chatbot data.

    ``linear_shift`` moves the source classes along feature 4 (a weak linear cue, so the
    primary model recalls part of them); ``ring_noise`` blurs the ring (overlap that no
    classifier can undo).  Features beyond the sixth are pure noise.
    """
    rng = np.random.default_rng(random_state)
    if n_features < 4:
        raise ValueError("n_features must be at least 4 (2 for the blobs, 2 for the ring pattern)")
    sources = {s for s, _ in biased_pairs}
    dests = {d for _, d in biased_pairs}
    if sources & dests or any(c >= n_classes or c < 0 for p in biased_pairs for c in p):
        raise ValueError(
            "biased_pairs must use distinct source and destination classes within range(n_classes)"
        )
    weights = np.ones(n_classes)
    for s, d in biased_pairs:
        weights[s] = 2 * source_fraction
        weights[d] = 2 * (1 - source_fraction)
    weights /= weights.sum()
    y = rng.choice(n_classes, size=n_samples, p=weights)
    angle = 2 * np.pi * np.arange(n_classes) / n_classes
    centres = 4.0 * np.c_[np.cos(angle), np.sin(angle)]
    blob_of = np.arange(n_classes)
    for s, d in biased_pairs:
        blob_of[s] = d
    X = rng.normal(size=(n_samples, n_features))
    X[:, :2] += centres[blob_of[y]]
    # ring pattern in features 2-3 for source classes: radius ~2 vs a tight centre for the others
    is_src = np.isin(y, list(sources))
    theta = rng.uniform(0, 2 * np.pi, size=is_src.sum())
    X[is_src, 2] = 2.0 * np.cos(theta) + ring_noise * rng.normal(size=is_src.sum())
    X[is_src, 3] = 2.0 * np.sin(theta) + ring_noise * rng.normal(size=is_src.sum())
    X[~is_src, 2:4] *= 0.8
    if n_features > 4:
        X[is_src, 4] += linear_shift
    return X, y


def _example() -> DPCCBSteps:
    """The DPCCB steps of a toy 3-class confusion matrix (class 0 often taken for class 1)."""
    return dpccb_steps(np.array([[50, 30, 5], [8, 60, 4], [3, 6, 70]]))


# --------------------------------------------------------------------------- the registry
register_metric(
    "dpccb",
    label="DPCCB: pairwise class-confusion bias",
    family="classifiers",
    inputs=("predictions",),
    model_kinds=("classifier",),
    directional=True,
    test="none (a threshold on the normalised confusion, 0.15 in the study)",
    citation="Sayenju 2023 (seed 003)",
    section="seed 003 sections 3.3, 3.3.1",
    entry_point=dpccb_steps,
    example=_example,
    summary="how often a classifier confuses class i for class j beyond the reverse",
    no_grid="a classifier's predictions (a confusion matrix), not a language model or word vectors: train "
    "and evaluate the classifier first (notebook 12), then call dpccb_steps",
    returns="DPCCBSteps (confusion, normalised and beta matrices, pruned matrix, pairs over the threshold; "
    "summary(): no test); dpccb_matrix gives the beta matrix alone",
)
