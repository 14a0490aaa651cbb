"""One result type for every statistical test in biaskit.

Every test function in :mod:`biaskit.core.stats` and every metric that comes with a
test (WEAT, the Bolukbasi test over neutral groups, the PMI test, the
robustness tests, ...) returns a :class:`TestResult`.  The object is frozen so
that a result stored in a notebook cannot be changed by accident, and it knows
how to explain itself to a reader who is not a statistician
(:meth:`TestResult.summary`, rendered as HTML in Jupyter).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from biaskit.core.html import escape_html

Alternative = Literal["two-sided", "greater", "less"]

__all__ = ["Alternative", "TestResult", "format_p_value"]


def format_p_value(p: float | None, *, digits: int = 3) -> str:
    """A p-value as a reader should see it: ``"< 0.001"``, ``"0.016"``, ``"0.320"``; never e-notation.

    Values below ``10**-digits`` are shown as ``"< 0.001"`` (APA style), others with ``digits``
    decimals.  ``None`` or NaN give ``"n/a"``.  The exact value belongs in the JSON results,
    not on the page.
    """
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "n/a"
    p = float(p)
    if not -1e-12 <= p <= 1.0 + 1e-12:
        raise ValueError(f"a p-value lies in [0, 1], got {p}")
    floor = 10.0**-digits
    if p < floor:
        return f"< {floor:.{digits}f}"
    return f"{min(p, 1.0):.{digits}f}"


def _fmt(x: float | None, digits: int = 4) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return str(x)
    if x != 0 and abs(x) < 10 ** (-digits):
        return f"{x:.2e}"
    return f"{x:.{digits}f}"


@dataclass(frozen=True)
class TestResult:
    """Outcome of a statistical test.

    Attributes
    ----------
    statistic:
        The test statistic (z, t, W, D, the WEAT statistic s(X, Y, A, B), ...).
    p_value:
        The p-value under H0 for the stated ``alternative`` (``None`` when the
        procedure gives no p-value, e.g. a descriptive score).
    method:
        Human-readable name of the procedure ("one-sample z test on the mean").
    alternative:
        ``"two-sided"``, ``"greater"`` or ``"less"``.
    n:
        Sample size the test used (pairs, groups, sentences, ...).
    effect_size:
        An effect size when the procedure defines one (WEAT d, Cohen's d, ...).
    ci:
        A confidence interval ``(low, high)`` when one is computed.
    confidence:
        Confidence level of ``ci``.
    null_value:
        The value of the parameter under H0 (``mu0``, ``p0``...).
    estimate:
        The point estimate of the tested parameter (sample mean, proportion...).
    h0 / h1:
        Plain-language statements of the hypotheses, used by :meth:`summary`.
    details:
        Anything else worth keeping (number of permutations, whether the
        permutation test was exact, the fitted distribution parameters, ...).
    """

    statistic: float
    p_value: float | None
    method: str
    alternative: Alternative = "two-sided"
    n: int | None = None
    effect_size: float | None = None
    ci: tuple[float, float] | None = None
    confidence: float | None = None
    null_value: float | None = None
    estimate: float | None = None
    h0: str = "no bias"
    h1: str = "bias"
    details: dict[str, Any] = field(default_factory=dict)

    __test__ = False  # keep pytest from collecting this class

    # ------------------------------------------------------------------ helpers
    def reject(self, alpha: float = 0.05) -> bool:
        """True when H0 is rejected at level ``alpha`` (p-value < alpha)."""
        if self.p_value is None:
            raise ValueError(f"{self.method} gives no p-value; nothing to reject")
        return bool(self.p_value < alpha)

    def summary(self, alpha: float = 0.05) -> str:
        """A short explanation a non-statistician can read."""
        lines = [f"{self.method}"]
        est = f", estimate = {_fmt(self.estimate)}" if self.estimate is not None else ""
        lines.append(f"  statistic = {_fmt(self.statistic)}{est}" + (f", n = {self.n}" if self.n else ""))
        if self.effect_size is not None:
            lines.append(f"  effect size = {_fmt(self.effect_size, 3)}")
        if self.ci is not None:
            level = f"{100 * self.confidence:.0f}% " if self.confidence else ""
            lines.append(f"  {level}CI = [{_fmt(self.ci[0])}, {_fmt(self.ci[1])}]")
        if self.p_value is not None:
            lines.append(f"  p-value = {format_p_value(self.p_value)} ({self.alternative})")
            if self.reject(alpha):
                lines.append(f"  -> reject H0 at alpha = {alpha}: evidence of {self.h1} (H0: {self.h0}).")
            else:
                lines.append(
                    f"  -> do not reject H0 at alpha = {alpha}: the data are compatible with {self.h0}."
                )
        return "\n".join(lines)

    def __str__(self) -> str:  # pragma: no cover - thin wrapper
        return self.summary()

    def to_html(self, alpha: float = 0.05) -> str:
        """The result as a small HTML table and a verdict at level ``alpha``, for a reader's page.

        Test, statistic, p-value, estimate, effect size, interval and n; numbers in plain
        decimals (p-values as :func:`format_p_value` writes them, never e-notation), every value
        HTML-escaped (``"< 0.001"``).  In a notebook: ``display(HTML(result.to_html(alpha)))``.
        """

        def num(x: float | None, digits: int = 4) -> str:
            if x is None or (isinstance(x, float) and not math.isfinite(x)):
                return "n/a"
            return f"{x:,.{digits}f}"

        rows = [("test", self.method), ("statistic", num(self.statistic))]
        if self.p_value is not None:
            rows.append(("p-value", f"{format_p_value(self.p_value)} ({self.alternative})"))
        if self.estimate is not None:
            rows.append(("estimate", num(self.estimate)))
        if self.effect_size is not None:
            rows.append(("effect size", num(self.effect_size, 3)))
        if self.ci is not None:
            level = f"{100 * self.confidence:.0f}% " if self.confidence else ""
            rows.append((f"{level}confidence interval", f"[{num(self.ci[0])}, {num(self.ci[1])}]"))
        if self.n is not None:
            rows.append(("n", f"{int(self.n):,}"))
        body = "".join(
            f"<tr><th style='text-align:left'>{escape_html(k)}</th><td>{escape_html(v)}</td></tr>"
            for k, v in rows
        )
        verdict = ""
        if self.p_value is not None:
            line = self.summary(alpha).splitlines()[-1].strip()
            line = line[2:].lstrip() if line.startswith("->") else line
            verdict = f"<p><b>{escape_html(line[:1].upper() + line[1:])}</b></p>"
        return f"<table>{body}</table>{verdict}"

    def _repr_html_(self) -> str:
        return self.to_html()

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dictionary (used for ``results/<notebook>.json``)."""
        d = asdict(self)
        d["ci"] = list(self.ci) if self.ci is not None else None
        return json.loads(json.dumps(d, default=_json_default))


def _json_default(o: Any) -> Any:
    try:
        import numpy as np

        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:  # pragma: no cover
        pass
    if isinstance(o, tuple):
        return list(o)
    return str(o)
