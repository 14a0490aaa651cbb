"""Sentences and table cells that the Spanish CrowS-Pairs replay notebooks share (07 and 08).

Notebooks 07 (PLL distributions, Tables 4.2-4.7) and 08 (robustness, Tables 4.8-4.10) score the same
pairs with :func:`biaskit.studies.replay.compute_score_set` and compare their numbers with the thesis
with :func:`biaskit.studies.replay.compare_with_thesis`; the helpers here say what the loader and the
scorer found, and show a reproduced value with the precision the thesis printed.  Helpers that any
notebook uses (:func:`~biaskit.report.notebook_output.p_phrase`,
:func:`~biaskit.report.notebook_output.shown_path`, ...) are in :mod:`biaskit.report.notebook_output`.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import pandas as pd

from biaskit.core.html import escape_markdown

if TYPE_CHECKING:
    from biaskit.data.datasets import ValidationReport

__all__ = ["as_printed", "comparison_as_printed", "score_set_data_check"]

#: the log lines of the pair scorer start so; its findings are in the reports, so they are not listed twice
_SCORER_PREFIX = "pair scoring"


def _token_list(match: re.Match[str]) -> str:
    """``['$', '%']`` as a reader writes it: “$”, “%” (plain text: :func:`score_set_data_check` escapes
    it)."""
    return "“" + match.group(1).replace("', '", "”, “") + "”"


def score_set_data_check(
    records: Iterable[logging.LogRecord], reports: Mapping[str, ValidationReport]
) -> str:
    """What the loader repaired and which pairs the scorer counted as ties, as one short Markdown list.

    ``records`` are the log records of a scoring run (:func:`biaskit.studies.grid.captured_log`);
    their WARNING and ERROR messages are listed once each, except the scorer's own ("pair scoring
    ..."), which the reports already cover.  ``reports`` maps ``"<metric>/<variant>"`` to the
    :class:`~biaskit.data.datasets.ValidationReport` of that table (``info["reports"]`` of
    :func:`biaskit.studies.replay.compute_score_set`); a report with issues becomes one item
    ``"<metric>, <variant> pairs: ..."`` made of its summary lines.  Without any item the answer is
    the one sentence "**Data check:** every pair was read and scored without a problem."  Every item is
    escaped (:func:`biaskit.core.html.escape_markdown`): a file name or a token in a message is shown
    as text, never as Markdown or HTML.
    """
    loader = dict.fromkeys(
        r.getMessage()
        for r in records
        if r.levelno >= logging.WARNING and not r.getMessage().startswith(_SCORER_PREFIX)
    )
    items = [escape_markdown(m.replace("\n  - ", " — ").replace("\n", " ")) for m in loader]
    for key, rep in reports.items():
        if len(rep):
            metric, variant = key.split("/")
            body = "; ".join(line.strip(" -") for line in rep.summary().splitlines()[1:])
            body = re.sub(r"\['(.*?)'\]", _token_list, body)
            items.append(escape_markdown(f"{metric}, {variant} pairs: {body}"))
    if not items:
        return "**Data check:** every pair was read and scored without a problem."
    return (
        "**Data check** (what the loader repaired, and the pairs the scorer counted as ties):\n\n"
        + "\n".join(f"* {i}" for i in items)
    )


def as_printed(value: float, printed: str) -> str:
    """``value`` with one decimal more than the thesis printed it (``printed``), for a comparison table.

    ``as_printed(0.61234, "0.61")`` is ``"0.612"``; ``as_printed(3.0, "3")`` is ``"3.0"``.  A value the
    thesis printed as ``"≈ 0"`` is ``"< 0.0005"`` when below 0.0005 in size, else shown with 4
    decimals; a value that could not be computed (NaN, infinite) is ``"—"``.  The exact value belongs
    in the JSON results.
    """
    v = float(value)
    if not math.isfinite(v):
        return "—"
    if printed == "≈ 0":
        return "< 0.0005" if abs(v) < 5e-4 else f"{v:.4f}"
    dec = len(printed.split(".")[1]) if "." in printed else 0
    return f"{v:.{dec + 1}f}"


def comparison_as_printed(comparison: pd.DataFrame) -> pd.DataFrame:
    """A copy of a :func:`biaskit.studies.replay.compare_with_thesis` table whose ``reproduced`` column is
    text with the thesis's precision plus one decimal (:func:`as_printed`), ready for
    :func:`~biaskit.report.notebook_output.format_table`."""
    shown = [
        as_printed(v, str(p)) for v, p in zip(comparison["reproduced"], comparison["thesis"], strict=True)
    ]
    return comparison.assign(reproduced=pd.Series(shown, index=comparison.index, dtype=object))
