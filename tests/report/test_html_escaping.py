"""HTML is escaped by construction: nothing a user or a data file controls becomes live markup.

* every ``_repr_html_`` defined in the package (found by reading every module's source, so a new one
  is covered: the test fails until it has a hostile instance below) is rendered with
  ``<script>alert(1)</script><img src=x onerror=alert(3)>`` in every string it shows (model names and
  paths, group names, words, file names, set names) and parsed back: no ``<script>``, no ``on*=``
  attribute, and the hostile text is shown as text;
* every page of the static report built from a results folder whose notebook, JSON and figure carry
  those strings everywhere (Markdown cells, Markdown / HTML / JavaScript / LaTeX outputs, streams, an
  error, a raw cell, image alternative text, parameters, finding, headline labels, file names): no
  live script or handler, and the Content-Security-Policy allows no ``'unsafe-inline'`` script;
* the Markdown helpers (:func:`escape_markdown`, :func:`markdown_code`, ``where_saved``) rendered by
  two independent Markdown renderers (markdown-it-py, CommonMark; mistune, as nbconvert uses it):
  the text comes back character for character and nothing is live;
* :func:`sanitize_html` on its own, and the checker of this file on pages that *are* live (it can fail).
"""

from __future__ import annotations

import ast
import base64
import importlib
import io
import json
import re
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import biaskit
from biaskit.core.html import (
    escape_html,
    escape_markdown,
    frame_html,
    html_table,
    markdown_code,
    safe_href,
    sanitize_html,
    script_hash,
)

XSS_SCRIPT = "<script>alert(1)</script>"
XSS_IMG = "<img src=x onerror=alert(3)>"
#: what every user-controlled string of these tests contains
HOSTILE = XSS_SCRIPT + XSS_IMG
ROOT = Path(biaskit.__file__).parent


# ----------------------------------------------------------------------------- the checker


class _Page(HTMLParser):
    """Every element (tag, attributes), the text of every <script>, the CSP meta, the visible text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.scripts: list[str] = []
        self.csp: list[str] = []
        self.text: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, attrs))
        a = dict(attrs)
        if tag == "meta" and (a.get("http-equiv") or "").lower() == "content-security-policy":
            self.csp.append(a.get("content") or "")
        if tag == "script":
            self._in_script = True
            self.scripts.append("")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag == "script":
            self._in_script = False

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data
        else:
            self.text.append(data)


def parse(page: str) -> _Page:
    p = _Page()
    p.feed(page)
    p.close()
    return p


def script_sources(csp: str) -> list[str]:
    """The sources of the ``script-src`` directive (``default-src`` when there is none)."""
    directives = {}
    for part in csp.split(";"):
        words = part.split()
        if words:
            directives[words[0].lower()] = words[1:]
    return directives.get("script-src", directives.get("default-src", []))


def live_problems(page: str) -> list[str]:
    """What could run in ``page``: a ``<script>`` whose sha256 the page's CSP does not list, any
    ``on*=`` attribute, a ``javascript:`` / ``vbscript:`` / ``data:text`` link, an ``iframe`` /
    ``object`` / ``embed``, a ``srcdoc`` or ``formaction`` attribute."""
    p = parse(page)
    allowed = {s for csp in p.csp for s in script_sources(csp)}
    problems = []
    for text in p.scripts:
        if script_hash(text) not in allowed:
            problems.append(f"<script> not allowed by the CSP: {text[:60]!r}")
    for tag, attrs in p.elements:
        if tag in ("iframe", "object", "embed", "frame", "applet", "base"):
            problems.append(f"<{tag}> element")
        for name, value in attrs:
            v = re.sub(r"[\x00-\x20]", "", value or "").lower()
            if name.lower().startswith("on"):
                problems.append(f"<{tag} {name}={value!r}>: event handler")
            if name.lower() in ("srcdoc", "formaction"):
                problems.append(f"<{tag} {name}>")
            if name.lower() in ("href", "src", "action", "xlink:href") and v.startswith(
                ("javascript:", "vbscript:", "data:text")
            ):
                problems.append(f"<{tag} {name}={value!r}>: script URL")
    return problems


def shown_text(page: str) -> str:
    return "".join(parse(page).text)


def test_the_checker_finds_live_markup() -> None:
    """The checker can fail: each way of running code is caught, and a script by its hash is not."""
    assert live_problems(f"<p>{HOSTILE}</p>") == [
        "<script> not allowed by the CSP: 'alert(1)'",
        "<img onerror='alert(3)'>: event handler",
    ]
    assert live_problems('<a href=" java\tscript:alert(1)">x</a>')  # browsers drop the tab
    assert live_problems('<iframe srcdoc="x"></iframe>')
    assert live_problems('<svg><g onload="alert(1)"></g></svg>')
    csp = f'<meta http-equiv="Content-Security-Policy" content="script-src {script_hash("go()")}">'
    assert live_problems(csp + "<script>go()</script>") == []
    assert live_problems(csp + "<script>go();</script>")  # another text, another hash
    assert live_problems(f"<p>{escape_html(HOSTILE)}</p>") == []
    assert shown_text(f"<p>{escape_html(HOSTILE)}</p>") == HOSTILE


# ----------------------------------------------------------------------------- every _repr_html_


def repr_html_classes() -> list[str]:
    """``module.Class`` of every class in biaskit that defines ``_repr_html_`` (read from the source)."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        module = ".".join(("biaskit", *path.relative_to(ROOT).with_suffix("").parts)).removesuffix(
            ".__init__"
        )
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            for item in node.body:
                defines = (
                    isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == "_repr_html_"
                ) or (
                    isinstance(item, ast.Assign | ast.AnnAssign)
                    and any(
                        isinstance(t, ast.Name) and t.id == "_repr_html_"
                        for t in (item.targets if isinstance(item, ast.Assign) else [item.target])
                    )
                )
                if defines:
                    found.append(f"{module}.{node.name}")
    return found


def _vectors(words: list[str], dim: int = 8, seed: int = 0) -> Any:
    from gensim.models import KeyedVectors

    kv = KeyedVectors(vector_size=dim)
    kv.add_vectors(words, np.random.default_rng(seed).normal(size=(len(words), dim)).astype(np.float32))
    return kv


def _test_result() -> Any:
    from biaskit.core.results import TestResult

    return TestResult(statistic=2.5, p_value=0.012, method=f"z test of {HOSTILE}", n=30, effect_size=0.4)


def _validation_report() -> Any:
    from biaskit.core.io import ValidationReport, issue_record

    records = [issue_record(3, f"bad cell {HOSTILE}", "skipped", HOSTILE, row=1, column=HOSTILE)]
    return ValidationReport.from_records(records, context=f"{HOSTILE}.csv", n_records=4, n_loaded=3)


def _pll_scores() -> Any:
    from biaskit.lm.scoring import PLLScores

    scores = pd.DataFrame({"row": [0], "sent_more": [HOSTILE], "sent_less": ["x"], "score_more": [-1.5]})
    return PLLScores(
        scores=scores,
        tokens=pd.DataFrame({"token": [HOSTILE]}),
        report=_validation_report(),
        metric="cp",
        model=f"/models/{HOSTILE}",
    )


def _direct_bias_experiment() -> Any:
    from biaskit.metrics.direct_bias import bias_direction, direct_bias_experiment

    he, she = f"he{XSS_IMG}", f"she{XSS_SCRIPT}"
    words = [he, she, "a", "b", f"word{HOSTILE}", "c"]
    kv = _vectors(words)
    direction = bias_direction(kv, [he], [she], method="mean")
    groups = {
        f"group {HOSTILE}": [f"word{HOSTILE}", "a", "b"],
        "plain": ["c", "a"],
        f"gone {HOSTILE}": ["zz"],
    }
    return direct_bias_experiment(kv, groups, direction, n_resamples=99)


def _seed_weat() -> Any:
    from biaskit.report.seed_weat import seed_weat

    words = [f"{HOSTILE}{i}" for i in range(8)]
    kv = _vectors(words)
    sets = {
        f"X {HOSTILE}": words[0:2],
        f"Y {HOSTILE}": words[2:4],
        f"A {HOSTILE}": [*words[4:6], f"missing {HOSTILE}"],
        f"B {HOSTILE}": words[6:8],
    }
    return seed_weat(sets, kv)


def _reader_table() -> Any:
    from biaskit.report.notebook_output import format_table

    return format_table(pd.DataFrame({f"model {HOSTILE}": [HOSTILE, 0.5]}, index=[HOSTILE, "b"]))


#: a hostile instance of every class of the package with a ``_repr_html_``
HOSTILE_INSTANCES: dict[str, Callable[[], Any]] = {
    "biaskit.core.results.TestResult": _test_result,
    "biaskit.core.io.ValidationReport": _validation_report,
    "biaskit.lm.scoring.PLLScores": _pll_scores,
    "biaskit.metrics.direct_bias.DirectBiasExperiment": _direct_bias_experiment,
    "biaskit.report.seed_weat.SeedWeat": _seed_weat,
    "biaskit.report.notebook_output.ReaderTable": _reader_table,
}
#: classes whose ``_repr_html_`` shows HTML its caller built (and escaped) on purpose
PASS_THROUGH = {
    "biaskit.report.widgets._HTML": "a display wrapper for HTML the seed-word form builds with escaping",
}


@pytest.mark.slow
def test_every_repr_html_has_a_hostile_instance() -> None:
    """A new ``_repr_html_`` anywhere in biaskit fails here until it is added to HOSTILE_INSTANCES."""
    found = set(repr_html_classes())
    assert len(found) >= 6
    missing = found - set(HOSTILE_INSTANCES) - set(PASS_THROUGH)
    assert not missing, f"add a hostile instance for {sorted(missing)} to HOSTILE_INSTANCES"
    stale = (set(HOSTILE_INSTANCES) | set(PASS_THROUGH)) - found
    assert not stale, f"no _repr_html_ any more: {sorted(stale)}"


@pytest.mark.parametrize("qualname", sorted(HOSTILE_INSTANCES))
def test_repr_html_escapes_every_user_string(qualname: str) -> None:
    obj = HOSTILE_INSTANCES[qualname]()
    module, name = qualname.rsplit(".", 1)
    assert type(obj) is getattr(importlib.import_module(module), name)
    page = obj._repr_html_()
    assert live_problems(page) == []
    assert not any(tag in ("script", "img") for tag, _ in parse(page).elements)
    assert HOSTILE in shown_text(page), "the hostile text should be shown as text, not dropped"


def test_test_result_html_and_styled_table_escape() -> None:
    from biaskit.studies.grid_output import styled_table

    assert live_problems(_test_result().to_html()) == []
    results = pd.DataFrame(
        {
            "dataset": [HOSTILE],
            "metric": ["weat"],
            "method": [f"mean {HOSTILE}"],
            "bias_type": [None],
            "model": [f"/models/{HOSTILE}"],
            "status": ["ok"],
            "effect_size": [0.5],
            "score": [np.nan],
            "p_value": [0.01],
        }
    )
    try:
        page = styled_table(results).to_html()
    except KeyError as exc:  # pragma: no cover - the grid's columns changed: say which
        pytest.fail(f"styled_table needs another column for this test: {exc}")
    assert live_problems(page) == []
    assert f"/models/{HOSTILE}" in shown_text(page)


# ----------------------------------------------------------------------------- the helpers


def test_escape_html_and_table_builders() -> None:
    assert escape_html('<b a="1">&\'') == "&lt;b a=&quot;1&quot;&gt;&amp;&#x27;"
    table = html_table([[HOSTILE, 1.5]], [f"col {HOSTILE}", "n"], css_class='x" onclick="y', row_headers=True)
    assert live_problems(table) == []
    assert shown_text(table) == f"col {HOSTILE}n{HOSTILE}1.5"
    frame = frame_html(pd.DataFrame({HOSTILE: [HOSTILE]}, index=[HOSTILE]))
    assert live_problems(frame) == [] and shown_text(frame).count(HOSTILE) == 3
    with pytest.raises(ValueError, match="escape=False"):
        frame_html(pd.DataFrame({"a": [1]}), escape=False)
    assert safe_href("javascript:alert(1)") == "./javascript:alert(1)"
    assert safe_href("01_tiny.html") == "01_tiny.html"
    assert safe_href("https://example.org/a?b=1&c=2") == "https://example.org/a?b=1&amp;c=2"


def _markdown_renderers() -> list[tuple[str, Callable[[str], str]]]:
    out: list[tuple[str, Callable[[str], str]]] = []
    try:
        from markdown_it import MarkdownIt

        md = MarkdownIt("commonmark", {"html": True})  # raw HTML allowed, as Jupyter allows it
        out.append(("markdown-it (CommonMark)", md.render))
    except ImportError:  # pragma: no cover
        pass
    try:
        import mistune

        out.append(
            ("mistune", mistune.create_markdown(escape=False, plugins=["strikethrough", "table", "math"]))
        )
    except ImportError:  # pragma: no cover
        pass
    if not out:  # pragma: no cover
        pytest.skip("neither markdown-it-py nor mistune is installed")
    return out


TEXTS = [
    HOSTILE,
    f"/home/me/models/{XSS_IMG}",
    "en_mlm *v2* [x](javascript:alert(1)) `code` $x$ # h",
    "&lt;script&gt; stays as typed; a < b > c & d",
    "- not a list\n# not a heading\n> not a quote\n<div onclick=alert(1)>block</div>",
    "1. not a list | not | a table\n---",
    "<!-- c --> <![CDATA[x]]> \\<b>",
    "a heading?\n===\n12) not a list\n  + not a list\n![img](x.png) ~~no~~ a|b [^1]",
]


@pytest.mark.parametrize("text", TEXTS)
def test_escape_markdown_renders_the_text_itself(text: str) -> None:
    for name, render in _markdown_renderers():
        page = render(f"**Model.** {escape_markdown(text)}")
        assert live_problems(page) == [], name
        tags = {tag for tag, _ in parse(page).elements}
        assert tags <= {"p", "strong", "br"}, (name, tags)
        shown = " ".join(shown_text(page).split())
        assert shown == " ".join(f"Model. {text}".split()), name


@pytest.mark.parametrize("text", [*TEXTS, "a ``b` c", "`starts", "ends`"])
def test_markdown_code_renders_the_text_itself(text: str) -> None:
    for name, render in _markdown_renderers():
        page = render(f"Folder {markdown_code(text)}.")
        assert live_problems(page) == [], name
        codes = re.findall(r"<code>(.*?)</code>", page, re.S)
        assert len(codes) == 1, (name, page)
        assert parse_text(codes[0]).strip() == " ".join(text.splitlines()).strip(), name


def parse_text(fragment: str) -> str:
    return shown_text(fragment)


def test_where_saved_with_a_hostile_folder(tmp_path: Path) -> None:
    from biaskit.report.notebook_output import where_saved

    folder = tmp_path / f"run {XSS_IMG}`x`"
    folder.mkdir()
    sentence = where_saved(folder / "05_crows_pairs_pll.json")
    for name, render in _markdown_renderers():
        page = render(sentence)
        assert live_problems(page) == [], name
        assert f"run {XSS_IMG}`x`/" in shown_text(page), name


def test_sanitize_html_keeps_inert_markup_and_removes_the_rest() -> None:
    kept = (
        '<details open=""><summary>s</summary><table class="dataframe"><tr><th scope="row">a</th>'
        '<td style="font-weight: bold;">1</td></tr></table></details>'
        '<math display="block"><mrow><mi>x</mi><mo>&lt;</mo><msup><mi>a</mi><mn>2</mn></msup></mrow></math>'
        '<img alt="fig" src="data:image/png;base64,iVBORw0KGgo="><a href="#top">top</a>'
        '<a href="https://example.org/">ex</a><p data-key="k" aria-label="l">text</p>'
    )
    expected = kept.replace('<tr><th scope="row">', '<tbody><tr><th scope="row">')
    expected = expected.replace("</tr></table>", "</tr></tbody></table>").replace('open=""', "open")
    assert sanitize_html(kept) == expected
    dirty = (
        f'{HOSTILE}<p onclick="alert(2)">p</p><a href="javascript:alert(4)">j</a>'
        '<a href="da\nta:text/html,x">d</a><iframe srcdoc="<script>alert(5)</script>">i</iframe>'
        '<svg><script>alert(6)</script><text>t</text></svg><object data="x">o</object><!-- c -->'
        '<form action="x"><button formaction="y">b</button></form><style>p { color: red }</style>'
    )
    clean = sanitize_html(dirty)
    assert live_problems(clean) == []
    assert "alert" not in clean, clean  # script text removed with the element, not left as text
    assert "<p>p</p>" in clean and "<a>j</a>" in clean and "<a>d</a>" in clean
    assert "<style>" in clean  # CSS cannot run code; the CSP blocks any remote load it names
    assert sanitize_html("") == ""


def test_script_hash_is_the_csp_hash_of_the_text() -> None:
    import hashlib

    text = "document.body.dataset.ok = 1;"
    expected = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
    assert script_hash(text) == f"'sha256-{expected}'"


# ----------------------------------------------------------------------------- the report


def _png(description: str) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([1, 2], [1, 4])
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=40, metadata={"Description": description})
    plt.close(fig)
    return buf.getvalue()


def _hostile_results(d: Path) -> Path:
    """A results folder with the hostile strings in every place a user or a data file controls."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output, new_raw_cell

    d.mkdir()
    stem = "01_xss"
    model = f"/models/{HOSTILE}"
    png = _png(f"Figure of {HOSTILE}")
    b64 = base64.b64encode(png).decode("ascii")
    svg = f'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(7)</script><text>{escape_html(HOSTILE)}</text></svg>'
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["papermill"] = {"parameters": {"quick": True, "model": model, "words": [HOSTILE]}}
    nb.metadata["biaskit"] = {"source": f"seed 000, {HOSTILE}"}
    nb.cells = [
        new_markdown_cell(
            f"# A study of {HOSTILE}\n\nSource: seed 000, {HOSTILE}\n\n{XSS_IMG}\n\n"
            "[a link](javascript:alert(1)) <a href='javascript:alert(2)' onmouseover='alert(3)'>x</a>\n\n"
            f"<div onclick=alert(4)>{XSS_SCRIPT}</div>\n\n$x < y$ and $$a^2$$"
        ),
        new_code_cell("quick = False", metadata={"tags": ["parameters"]}, execution_count=1),
        new_code_cell(
            "display(Markdown(...))",
            execution_count=2,
            outputs=[
                new_output("display_data", data={"text/markdown": f"**Model.** {model}", "text/plain": "md"}),
                new_output(
                    "display_data",
                    data={"text/html": f"<p onclick='alert(5)'>{HOSTILE}</p>", "text/plain": "html"},
                ),
                new_output("display_data", data={"application/javascript": "alert(6)", "text/plain": "js"}),
                new_output(
                    "display_data", data={"text/latex": f"$\\text{{{HOSTILE}}}$", "text/plain": "tex"}
                ),
                new_output(
                    "display_data",
                    data={"image/png": b64, "text/plain": "fig"},
                    metadata={"image/png": {"alt": f'" onerror="alert(8)" x="{HOSTILE}'}},
                ),
                new_output("display_data", data={"image/svg+xml": svg, "text/plain": "svg"}),
                new_output("stream", name="stdout", text=f"printed {HOSTILE}\n"),
                new_output(
                    "stream", name="stderr", text=f"WARNING:biaskit.x:model {model} is odd\n{HOSTILE}\n"
                ),
                new_output(
                    "execute_result",
                    data={"text/plain": HOSTILE, "text/html": pd.DataFrame({HOSTILE: [HOSTILE]}).to_html()},
                    execution_count=2,
                ),
            ],
        ),
        new_code_cell(
            "raise ValueError(...)",
            execution_count=3,
            outputs=[
                new_output("error", ename="ValueError", evalue=HOSTILE, traceback=[f"ValueError: {HOSTILE}"])
            ],
        ),
        new_raw_cell(HOSTILE, metadata={"raw_mimetype": "text/html"}),
        new_markdown_cell(f"## What this shows\n\nThe words {HOSTILE} lean one way."),
    ]
    nbformat.write(nb, d / f"{stem}.ipynb")
    (d / f"{stem}_{XSS_IMG}.png").write_bytes(png)
    payload = {
        "notebook": stem,
        "created": f"2024-01-01T00:00:00+00:00{HOSTILE}",
        "python": "3.11",
        "finding": f"The model {model} prefers {HOSTILE}.",
        "headline": {f"d of {HOSTILE}": 1.25, "p": 0.01},
        "parameters": {"quick": True, "model": model, "words": [HOSTILE]},
        "results": {HOSTILE: HOSTILE, "groups": {f"group {HOSTILE}": 0.5}, "words": [HOSTILE]},
    }
    (d / f"{stem}.json").write_text(json.dumps(payload), encoding="utf-8")
    return d


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from biaskit.report.html_report import build_site

    d = tmp_path_factory.mktemp("xss")
    return build_site(_hostile_results(d / "results"), d / "site").parent


def test_every_report_page_has_nothing_live(hostile_site: Path) -> None:
    pages = sorted(hostile_site.glob("*.html"))
    assert {p.name for p in pages} == {"index.html", "01_xss.html"}
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert live_problems(text) == [], page.name
        assert "alert(" not in "".join(parse(text).scripts), page.name


def test_report_shows_the_hostile_text_as_text(hostile_site: Path) -> None:
    index = shown_text((hostile_site / "index.html").read_text(encoding="utf-8"))
    for part in (f"The model /models/{HOSTILE} prefers", f"d of {HOSTILE}", f"group {HOSTILE}", XSS_IMG):
        assert part in index, part
    study = (hostile_site / "01_xss.html").read_text(encoding="utf-8")
    shown = shown_text(study)
    for part in (f"printed {HOSTILE}", f"ValueError: {HOSTILE}", f"A study of {HOSTILE}", "Model. /models/"):
        assert part in shown, part
    # a notebook output that did not escape its Markdown is sanitised: the markup is gone, not shown
    # the JavaScript output is gone; the SVG (and its script) stays inside an image (a data: URI), where
    # no script runs; an <img src=x onerror=...> of an unescaped output keeps neither its source nor handler
    assert "alert(6)" not in study
    sources = [dict(a).get("src") for t, a in parse(study).elements if t == "img"]
    assert sum(1 for s in sources if s and s.startswith("data:image/svg+xml;base64,")) == 1
    assert all(s is None or s.startswith("data:image/") for s in sources), sources


def test_csp_has_no_unsafe_inline_script(hostile_site: Path) -> None:
    from biaskit.report.html_report import CSP
    from biaskit.report.html_study_page import PAGE_SCRIPTS, content_security_policy

    assert "'unsafe-inline'" not in script_sources(CSP)
    assert script_sources(CSP) == ["'none'"]  # no page needs a script today
    for page in sorted(hostile_site.glob("*.html")):
        p = parse(page.read_text(encoding="utf-8"))
        assert len(p.csp) == 1, page.name
        sources = script_sources(p.csp[0])
        assert sources and "'unsafe-inline'" not in sources and "'unsafe-eval'" not in sources, page.name
        assert "default-src 'none'" in p.csp[0]
        assert {script_hash(s) for s in p.scripts} <= set(sources)
        assert set(p.scripts) <= set(PAGE_SCRIPTS)
    with_script = content_security_policy(["go();"])
    assert script_sources(with_script) == [script_hash("go();")]
