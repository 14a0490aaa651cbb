"""TestResult: the one result type of every statistical test."""

from __future__ import annotations

import json

import numpy as np
import pytest

from biaskit.core.results import TestResult


def _result(p: float | None = 0.01) -> TestResult:
    return TestResult(
        statistic=np.float64(2.5),
        p_value=p,
        method="demo test",
        alternative="greater",
        n=30,
        effect_size=0.8,
        ci=(0.1, 0.9),
        confidence=0.95,
        details={"array": np.arange(3), "nested": {"x": np.int64(4)}},
    )


def test_reject_and_summary_wording():
    r = _result(0.01)
    assert r.reject(0.05) and not r.reject(0.001)
    text = r.summary(alpha=0.05)
    assert "reject H0 at alpha = 0.05" in text and "evidence of bias" in text
    assert "do not reject" in _result(0.2).summary()
    assert "<table>" in r._repr_html_()


def test_no_p_value_cannot_reject():
    r = _result(None)
    with pytest.raises(ValueError, match="no p-value"):
        r.reject()
    assert "p-value" not in r.summary()


def test_to_dict_is_json_serialisable():
    d = _result().to_dict()
    again = json.loads(json.dumps(d))
    assert again["statistic"] == 2.5
    assert again["ci"] == [0.1, 0.9]
    assert again["details"]["array"] == [0, 1, 2]
    assert again["details"]["nested"]["x"] == 4


def test_frozen():
    r = _result()
    with pytest.raises(AttributeError):
        r.p_value = 0.5  # type: ignore[misc]


def test_html_repr_escapes_small_p_values():
    from biaskit.core.results import TestResult

    page = TestResult(statistic=5.0, p_value=1e-30, method="z test <demo>")._repr_html_()
    assert "&lt; 0.001" in page and "z test &lt;demo&gt;" in page and "e-30" not in page


def test_to_html_escapes_and_uses_the_notebooks_alpha():
    res = TestResult(
        statistic=2.4035,
        p_value=0.016,
        method="z test",
        n=1503,
        ci=(0.5057, 0.5562),
        confidence=0.95,
        h0="no preference",
        h1="bias",
    )
    at_5 = res.to_html(alpha=0.05)
    at_1 = res.to_html(alpha=0.01)
    assert "<td>0.016 (two-sided)</td>" in at_5 and "<td>1,503</td>" in at_5
    assert "<th style='text-align:left'>95% confidence interval</th><td>[0.5057, 0.5562]</td>" in at_5
    assert "<b>Reject H0 at alpha = 0.05: evidence of bias (H0: no preference).</b>" in at_5
    assert "<b>Do not reject H0 at alpha = 0.01" in at_1
    tiny = TestResult(statistic=8.19, p_value=2.6e-16, method="z").to_html()
    assert "&lt; 0.001" in tiny and "e-16" not in tiny
    assert "<p>" not in TestResult(statistic=1.0, p_value=None, method="descriptive").to_html()
