"""Math as MathML, written into the pages at build time (latex2mathml): no JavaScript, no CDN.

Sphinx's default, MathJax, loads its script from a CDN, so formulas would not render from disk
without network access.  Browsers render MathML Core natively (Chromium since 109, Firefox, Safari);
the report (``biaskit.report.html_report``) uses the same converter.  A formula latex2mathml cannot
read stays visible as TeX in a ``<code>`` element and is reported as a warning (an error under
``make docs``), so none is lost silently.
"""

from __future__ import annotations

import html
from typing import Any

from docutils import nodes
from latex2mathml.converter import convert
from sphinx.util import logging

log = logging.getLogger(__name__)


def _mathml(latex: str, display: str, node: nodes.Node) -> str:
    try:
        return convert(latex.strip(), display=display)
    except Exception as exc:  # latex2mathml raises its own exception types
        log.warning(
            f"formula not converted to MathML ({type(exc).__name__}: {exc}): {latex!r}", location=node
        )
        return f'<code class="math-tex">{html.escape(latex)}</code>'


def visit_math(self: Any, node: nodes.Node) -> None:
    self.body.append(f'<span class="math">{_mathml(node.astext(), "inline", node)}</span>')
    raise nodes.SkipNode


def visit_displaymath(self: Any, node: nodes.Node) -> None:
    latex = node.astext()
    parts = [latex] if node.get("nowrap") else [p for p in latex.split("\n\n") if p.strip()]
    self.body.append(self.starttag(node, "div", CLASS="math"))
    if node.get("number"):
        self.body.append(f'<span class="eqno">({node["number"]})</span>')
    for part in parts:
        self.body.append(_mathml(part, "block", node))
    self.body.append("</div>\n")
    raise nodes.SkipNode


def setup(app: Any) -> dict[str, Any]:
    app.add_html_math_renderer("mathml", (visit_math, None), (visit_displaymath, None))
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
