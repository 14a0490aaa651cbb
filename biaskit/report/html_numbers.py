"""Numbers for readers in the HTML report (:mod:`biaskit.report.html_report`): a results JSON flattened
into table rows (:func:`flatten_results`) and every value formatted for people (:func:`format_value`).

p-values (keys such as ``p_value`` or ending in ``_p``, :func:`is_p_value_key`) are written with
:func:`biaskit.core.results.format_p_value` (``"< 0.001"``), other numbers with 4 significant digits and
never in e-notation (:func:`plain_numbers` rewrites it inside sentences), missing values as ``n/a``; the
exact value stays available (:func:`json_exact`, :func:`plain_exact`).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_LIST_ITEMS",
    "HeadlineRow",
    "flatten_results",
    "format_value",
    "is_p_value_key",
    "json_exact",
    "plain_exact",
    "plain_numbers",
]

#: At most this many rows per list in the headline table (longer lists are summarised).
MAX_LIST_ITEMS = 20
_P_VALUE_KEY = re.compile(r"(^|[^a-z])p[_\- ]?value|(^|[_\W])p$", re.IGNORECASE)  # not "group_value"
_E_NUMBER = re.compile(r"(?<![\w.])([-+−]?\d+(?:\.\d+)?[eE][-+−]?\d+)(?!\w|\.\d)")
_P_BEFORE = re.compile(r"\bp(?:[- ]?values?)?\s*(?:=|≈|is|of)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class HeadlineRow:
    """One row of a study's headline table: a path into the JSON and the value found there."""

    path: tuple[str, ...]
    value: Any
    note: str | None = None  # set for summary rows ("... 480 more values"), which carry no value

    @property
    def label(self) -> str:
        """Readable label: the JSON keys joined with a chevron, underscores shown as spaces."""
        return " › ".join(p.replace("_", " ") for p in self.path) if self.path else "value"


def flatten_results(
    obj: Any,
    path: tuple[str, ...] = (),
    *,
    max_list_items: int = MAX_LIST_ITEMS,
) -> list[HeadlineRow]:
    """Flatten nested dicts / lists from a results JSON into table rows.

    Dict keys become path components; list items become ``[i]`` components.  A
    list longer than ``max_list_items`` shows its first ``max_list_items`` items
    and one summary row (``note``) saying how many more are in the JSON file,
    so the table stays readable and nothing is dropped without saying so.
    Empty dicts and lists appear as one row with the value ``{}`` / ``[]``.
    """
    if isinstance(obj, dict):
        if not obj:
            return [HeadlineRow(path, {})]
        rows: list[HeadlineRow] = []
        for key, value in obj.items():
            rows.extend(flatten_results(value, (*path, str(key)), max_list_items=max_list_items))
        return rows
    if isinstance(obj, list):
        if not obj:
            return [HeadlineRow(path, [])]
        rows = []
        for i, value in enumerate(obj[:max_list_items]):
            rows.extend(flatten_results(value, (*path, f"[{i}]"), max_list_items=max_list_items))
        if len(obj) > max_list_items:
            more = len(obj) - max_list_items
            rows.append(
                HeadlineRow((*path, "…"), None, note=f"{more} more value(s) in this list: see the JSON file")
            )
        return rows
    return [HeadlineRow(path, obj)]


def is_p_value_key(key: str | None) -> bool:
    """True for names of p-values: containing ``p_value`` / ``p-value`` / ``pvalue`` / ``p value``
    (any case, not inside a word: ``group_value`` is no p-value), ending in ``_p``, or just ``p``."""
    return bool(key) and bool(_P_VALUE_KEY.search(str(key)))


def _group_thousands(text: str) -> str:
    return text.replace(",", "\u2009")


def _format_float(value: float) -> str:
    """4 significant digits in plain decimal notation (never e-notation)."""
    if math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    if value == 0:
        return "0"
    if abs(value) < 1e-9:
        return "≈ 0"
    if abs(value) >= 1e4:
        return _group_thousands(f"{value:,.0f}")
    decimals = max(0, 3 - math.floor(math.log10(abs(value))))
    text = f"{value:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    if abs(float(text)) >= 1e4:  # 9999.7 rounds up to 10000
        return _group_thousands(f"{value:,.0f}")
    return "0" if text in ("-0", "") else text


def plain_numbers(text: str) -> str:
    """Rewrite numbers in e-notation inside a sentence for a reader (never e-notation on the index).

    After "p =" / "p-value of" a number becomes :func:`biaskit.core.results.format_p_value`'s text
    (``p = 4.76e-05`` -> ``p < 0.001``); any other one is written out in plain decimals
    (``5.6e-16`` -> ``≈ 0``, ``1.2e-05`` -> ``0.000012``).
    """

    def fix(m: re.Match[str]) -> str:
        try:
            value = float(m.group(1).replace("−", "-"))
        except ValueError:  # pragma: no cover - the pattern only matches numbers
            return m.group(0)
        before = m.string[: m.start()]
        if _P_BEFORE.search(before) and 0.0 <= value <= 1.0:
            from biaskit.core.results import format_p_value

            shown = format_p_value(value)
        else:
            shown = _format_float(value)
        if shown.startswith(("<", "≈")) and re.search(r"(?:=|≈)\s*$", before):
            return "\0" + shown  # "p = < 0.001" reads badly: the "=" before is dropped below
        return shown

    out = _E_NUMBER.sub(fix, text)
    return re.sub(r"\s*(?:=|≈)\s*\0", " ", out).replace("\0", "")


def format_value(value: Any, key: str | None = None) -> str:
    """Format a JSON value for a reader: numbers rounded, the exact value stays in ``data-value``.

    * ``True`` / ``False`` -> ``yes`` / ``no``; ``None`` and NaN -> ``n/a``;
    * a number whose ``key`` names a p-value (:func:`is_p_value_key`) and lies in [0, 1] ->
      :func:`biaskit.core.results.format_p_value` (``"< 0.001"``, ``"0.016"``);
    * integers in full (thousands separated with a thin space when >= 10 000);
    * other floats with 4 significant digits in plain decimal notation, never e-notation
      (``4.2e-05`` reads ``0.000042``; below 1e-9 ``≈ 0``), large floats without decimals;
    * strings as they are (an empty string as ``(empty)``); empty containers as ``(none)``.

    Never returns an empty string.
    """
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float) and is_p_value_key(key):
        from biaskit.core.results import format_p_value

        if not (isinstance(value, float) and math.isnan(value)) and 0.0 <= value <= 1.0:
            return format_p_value(float(value))
    if isinstance(value, int):
        return _group_thousands(f"{value:,}") if abs(value) >= 10_000 else str(value)
    if isinstance(value, float):
        return _format_float(value)
    if isinstance(value, dict | list):
        if not value:
            return "(none)"
        return json.dumps(value, ensure_ascii=False)
    text = plain_numbers(str(value))
    return text if text.strip() else "(empty)"


def json_exact(value: Any) -> str:
    """The exact JSON text of a value (floats keep every digit: Python's repr round-trips)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=True)


def plain_exact(value: float) -> str:
    """Every digit of a number in positional notation (a tooltip a reader may see: no e-notation)."""
    if isinstance(value, float) and math.isfinite(value):
        import numpy as np

        return np.format_float_positional(value, trim="-")
    return json_exact(value)
