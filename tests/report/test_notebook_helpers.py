"""The helpers that notebooks 07 and 08 share (biaskit.report.notebook_helpers), with real values."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from biaskit.data.datasets import ValidationReport
from biaskit.report.notebook_helpers import as_printed, comparison_as_printed, score_set_data_check
from biaskit.report.notebook_output import format_table

TIE = "identical after tokenisation: counted as a tie (scored once, both sides get that score)"


def _issue(line: int, reason: str, row: int) -> dict:
    return {"row": row, "line": line, "column": None, "reason": reason, "action": "kept", "text": ""}


def _log(msg: str, level: int = logging.WARNING) -> logging.LogRecord:
    return logging.makeLogRecord({"msg": msg, "levelno": level, "levelname": logging.getLevelName(level)})


# ----------------------------------------------------------------------------- score_set_data_check
def test_data_check_lists_loader_notes_once_and_each_report_with_issues():
    ties = ValidationReport.from_records(
        [_issue(12, TIE, 10), _issue(40, TIE, 38), _issue(7, "unknown tokens ['$', '%'] mapped to [UNK]", 5)],
        context="cp scoring",
    )
    clean = ValidationReport.from_records([], context="sz scoring")
    repaired = "Spanish CrowS-Pairs: 3 cells repaired\n  - cp1252 read as latin-1\n  - lines 70, 304"
    records = [
        _log(repaired),
        _log(repaired),  # logged twice, listed once
        _log("pair scoring: 2 pairs counted as ties"),  # the scorer's own line: the report says it
        _log("loading the model", logging.INFO),  # below WARNING
    ]
    text = score_set_data_check(records, {"cp/original": ties, "sz/original": clean})
    assert text == (
        "**Data check** (what the loader repaired, and the pairs the scorer counted as ties):\n\n"
        "* Spanish CrowS-Pairs: 3 cells repaired — cp1252 read as latin-1 — lines 70, 304\n"
        f"* cp, original pairs: kept 2: {TIE} (lines 12, 40); "
        "kept 1: unknown tokens “\\$”, “%” mapped to \\[UNK\\] (lines 7)"
    )


def test_data_check_without_any_problem_is_one_sentence():
    clean = ValidationReport.from_records([], context="cp scoring")
    records = [_log("pair scoring: nothing to report"), _log("loading the model", logging.INFO)]
    assert score_set_data_check(records, {"cp/original": clean, "cp/paraphrased": clean}) == (
        "**Data check:** every pair was read and scored without a problem."
    )
    assert score_set_data_check([], {}) == "**Data check:** every pair was read and scored without a problem."


# ----------------------------------------------------------------------------- as_printed
def test_as_printed_adds_one_decimal_to_the_printed_precision():
    assert as_printed(0.61234, "0.61") == "0.612"
    assert as_printed(np.float64(0.12345), "0.1234") == "0.12345"
    assert as_printed(3.0, "3") == "3.0"
    assert as_printed(-1.25, "-1.2") == "-1.25"


def test_as_printed_near_zero_and_missing_values():
    assert as_printed(0.0001, "≈ 0") == "< 0.0005"
    assert as_printed(-0.0004, "≈ 0") == "< 0.0005"
    assert as_printed(-0.002, "≈ 0") == "-0.0020"
    assert as_printed(float("nan"), "0.5") == "—"
    assert as_printed(float("inf"), "0.5") == "—"


def test_comparison_as_printed_changes_only_the_reproduced_column():
    comparison = pd.DataFrame(
        {
            "quantity": ["Table 4.2 prop cp", "Table 4.5 p cp", "Table 4.7 d sz"],
            "thesis": ["0.61", "≈ 0", "1.234"],
            "reproduced": [0.6134, 2e-5, float("nan")],
            "matches": [True, True, False],
        },
        index=[3, 4, 5],
    )
    shown = comparison_as_printed(comparison)
    assert shown["reproduced"].tolist() == ["0.613", "< 0.0005", "—"]
    assert shown.index.tolist() == [3, 4, 5]
    assert shown.drop(columns="reproduced").equals(comparison.drop(columns="reproduced"))
    assert comparison["reproduced"].iloc[0] == 0.6134  # the input is not changed
    table = format_table(shown, index=False)
    assert table["reproduced"].tolist() == ["0.613", "< 0.0005", "—"]
    assert table["matches"].tolist() == ["yes", "yes", "no"]
