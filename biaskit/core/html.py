"""HTML and Markdown built from text biaskit did not write, escaped by construction.

Every piece of HTML or Markdown that biaskit shows (the ``_repr_html_`` of its result objects, the
static report of :mod:`biaskit.report.html_report`, the Markdown a notebook builds with
``display(Markdown(...))``) takes model names, file and folder names, group names, words and
sentences from the user or from a data file.  Such text goes through one of these helpers before it
meets markup, so that a model folder named ``<img src=x onerror=alert(3)>`` is shown as those
characters and never becomes an element:

* :func:`escape_html`: text (or an attribute value) inside HTML;
* :func:`html_table` and :func:`frame_html`: a table of cells / a DataFrame, every cell escaped;
* :func:`escape_markdown`: text inside Markdown prose (``display(Markdown(f"**Model.** {...}"))``);
* :func:`markdown_code`: text shown as inline code in Markdown (a file or folder name);
* :func:`safe_href`: a relative link target that cannot turn into a ``javascript:`` URL;
* :func:`sanitize_html`: an HTML fragment biaskit did not build (a notebook output, a Markdown cell
  rendered by nbconvert), cleaned with `bleach <https://github.com/mozilla/bleach>`_ against an
  allowlist of tags and attributes: no ``<script>`` (removed with its content), no ``on*=`` event
  handler, no ``javascript:`` link, images only as ``data:image/...`` URIs;
* :func:`script_hash`: the ``'sha256-...'`` source that lets one known inline script run under a
  Content-Security-Policy without ``'unsafe-inline'``.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "escape_html",
    "escape_markdown",
    "frame_html",
    "html_table",
    "markdown_code",
    "safe_href",
    "sanitize_html",
    "script_hash",
]


def escape_html(value: object) -> str:
    """``str(value)`` with ``& < > " '`` written as character references: safe as element text and
    as a quoted attribute value (``escape_html('<b a="1">')`` is ``'&lt;b a=&quot;1&quot;&gt;'``)."""
    return html.escape(str(value), quote=True)


#: Characters that start Markdown syntax anywhere in a line: emphasis, code, links and images, math
#: (``$``, Jupyter), strikethrough, tables, footnotes, and the backslash itself.
_MD_INLINE = re.compile(r"([\\`*_\[\]$~|^])")
#: Characters that start a block at the beginning of a line: heading, list item, setext underline.
_MD_LINE_START = re.compile(r"^([ \t]*)([#+\-=])", re.MULTILINE)
#: An ordered-list marker at the beginning of a line: ``1.`` or ``1)``.
_MD_ORDERED = re.compile(r"^([ \t]*\d+)([.)])", re.MULTILINE)
_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def escape_markdown(value: object) -> str:
    """``str(value)`` as Markdown text that renders as exactly those characters.

    ``<``, ``>`` and ``&`` become the character references ``&lt;`` ``&gt;`` ``&amp;`` (so no raw HTML
    can start, in any Markdown renderer); the characters that start inline syntax (emphasis, code,
    links, images, math ``$``, strikethrough, tables) get a backslash everywhere, and those that start
    a block (heading, list, setext underline, ordered list) get one at the start of a line
    (CommonMark section 2.4, "Backslash escapes").  Other punctuation is left as it is, so the Markdown
    source stays readable: ``escape_markdown("en_mlm *v2* <b>")`` is ``'en\\_mlm \\*v2\\* &lt;b&gt;'``.
    Use it for text inside prose, never inside a code span (there use :func:`markdown_code`).
    """
    text = _MD_INLINE.sub(r"\\\1", str(value))
    text = _MD_LINE_START.sub(r"\1\\\2", text)
    text = _MD_ORDERED.sub(r"\1\\\2", text)
    return re.sub(r"[&<>]", lambda m: _MD_ENTITIES[m.group(0)], text)


def markdown_code(value: object) -> str:
    """``str(value)`` as a Markdown inline code span (``results/my run/`` between single backticks).

    The fence is one backtick longer than the longest run of backticks inside the text (CommonMark
    section 6.1), so the text cannot close the span; a line break becomes a space.  Inside a code
    span nothing is read as Markdown or HTML, so the text needs no other escaping.
    """
    text = " ".join(str(value).splitlines())
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    if text.startswith("`") or text.endswith("`") or (text.startswith(" ") and text.endswith(" ")):
        text = f" {text} "
    return f"{fence}{text}{fence}"


def html_table(
    rows: Iterable[Sequence[object]],
    columns: Sequence[object] | None = None,
    *,
    css_class: str | None = None,
    row_headers: bool = False,
) -> str:
    """An HTML ``<table>`` whose every header and cell is ``escape_html(str(value))``.

    ``columns`` are the header cells (none when ``None``); with ``row_headers`` the first cell of each
    row is a ``<th scope="row">``.  ``css_class`` names the table's class attribute (escaped too).
    """
    cls = f' class="{escape_html(css_class)}"' if css_class else ""
    out = [f"<table{cls}>"]
    if columns is not None:
        head = "".join(f'<th scope="col">{escape_html(c)}</th>' for c in columns)
        out.append(f"<thead><tr>{head}</tr></thead>")
    out.append("<tbody>")
    for row in rows:
        cells = []
        for i, value in enumerate(row):
            if row_headers and i == 0:
                cells.append(f'<th scope="row" style="text-align:left">{escape_html(value)}</th>')
            else:
                cells.append(f"<td>{escape_html(value)}</td>")
        out.append(f"<tr>{''.join(cells)}</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def frame_html(frame: pd.DataFrame, **kwargs: Any) -> str:
    """``frame.to_html(**kwargs)`` with every cell, column name and index label escaped.

    pandas escapes by default; this helper makes it explicit and refuses ``escape=False`` and
    ``render_links=True`` (which would turn a cell's text into markup or a link).
    """
    if kwargs.get("escape", True) is not True or kwargs.get("render_links", False):
        raise ValueError("frame_html escapes every cell: escape=False and render_links=True are not allowed")
    kwargs["escape"] = True
    kwargs["render_links"] = False
    return str(frame.to_html(**kwargs))


_SCHEME = re.compile(r"^\s*([a-zA-Z][a-zA-Z0-9+.\-]*):")


def safe_href(target: str) -> str:
    """A link target for an ``href`` attribute, escaped: ``http(s)``, ``mailto`` and fragment links as
    they are; any other text is taken as a relative path (``javascript:alert(1)`` becomes
    ``./javascript:alert(1)``, a file of that name beside the page)."""
    m = _SCHEME.match(target)
    if m and m.group(1).lower() not in ("http", "https", "mailto"):
        target = "./" + target.lstrip()
    return escape_html(target)


def script_hash(script: str) -> str:
    """The CSP source ``'sha256-<base64>'`` of an inline ``<script>``'s exact text (CSP level 2,
    section 4.2.4): a page may run that script, and only it, without ``'unsafe-inline'``."""
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


# ----------------------------------------------------------------------------- sanitising HTML fragments

#: Elements removed together with everything inside them (their text is code, not prose).
DROPPED_WITH_CONTENT = frozenset(
    {
        "script",
        "noscript",
        "iframe",
        "frame",
        "frameset",
        "object",
        "embed",
        "applet",
        "template",
        "noembed",
        "noframes",
        "title",
        "textarea",
        "select",
        "button",
        "form",
        "meta",
        "link",
        "base",
    }
)

_HTML_TAGS = frozenset(
    """a abbr b bdi bdo blockquote br caption center cite code col colgroup dd del details dfn div dl dt em
    figcaption figure h1 h2 h3 h4 h5 h6 hr i img ins kbd li mark ol p pre q rp rt ruby s samp small span
    strong style sub summary sup table tbody td tfoot th thead time tr tt u ul var wbr section article
    header footer nav main aside font big""".split()
)
#: MathML (what latex2mathml writes for the report's formulas).
_MATHML_TAGS = frozenset(
    """math maction annotation annotation-xml menclose merror mfenced mfrac mi mmultiscripts mn mo mover
    mpadded mphantom mprescripts mroot mrow ms mspace msqrt mstyle msub msubsup msup mtable mtd mtext mtr
    munder munderover none semantics""".split()
)
_GLOBAL_ATTRIBUTES = frozenset(
    {"class", "id", "title", "lang", "dir", "role", "style", "hidden", "translate"}
)
_TAG_ATTRIBUTES: dict[str, frozenset[str]] = {
    "a": frozenset({"href", "name", "rel"}),
    "img": frozenset({"src", "alt", "width", "height", "loading"}),
    "ol": frozenset({"start", "reversed", "type"}),
    "li": frozenset({"value"}),
    "details": frozenset({"open"}),
    "blockquote": frozenset({"cite"}),
    "q": frozenset({"cite"}),
    "time": frozenset({"datetime"}),
    "col": frozenset({"span", "width"}),
    "colgroup": frozenset({"span", "width"}),
    "font": frozenset({"color", "size", "face"}),
    "style": frozenset({"type", "media"}),
}
_TABLE_ATTRIBUTES = frozenset(
    {"align", "valign", "width", "height", "colspan", "rowspan", "scope", "headers", "abbr", "border",
     "cellpadding", "cellspacing", "bgcolor", "nowrap"}
)  # fmt: skip
_MATHML_ATTRIBUTES = frozenset(
    """display xmlns mathvariant mathsize mathcolor mathbackground displaystyle scriptlevel stretchy fence
    separator separators form largeop movablelimits accent accentunder lspace rspace minsize maxsize
    symmetric linethickness numalign denomalign bevelled columnalign rowalign columnspacing rowspacing
    columnlines rowlines frame framespacing equalrows equalcolumns notation open close encoding depth
    voffset width height align side columnspan rowspan actiontype selection""".split()
)
_CSS_PROPERTIES = frozenset(
    """background background-color border border-bottom border-bottom-color border-collapse border-color
    border-left border-left-color border-radius border-right border-right-color border-spacing border-top
    border-top-color border-style border-width clear color cursor direction display float font font-family
    font-size font-style font-variant font-variant-numeric font-weight height letter-spacing line-height
    list-style list-style-type margin margin-bottom margin-left margin-right margin-top max-height max-width
    min-height min-width opacity overflow overflow-wrap overflow-x overflow-y padding padding-bottom
    padding-left padding-right padding-top table-layout text-align text-decoration text-indent
    text-transform unicode-bidi vertical-align white-space width word-break word-wrap""".split()
)
_IMAGE_DATA_URI = re.compile(r"^\s*data:image/(png|jpeg|jpg|gif|webp|svg\+xml)[;,]", re.IGNORECASE)


def _allowed_attribute(tag: str, name: str, value: str) -> bool:
    """bleach's attribute test: the allowlists above; no ``on*`` handler can pass, ``data:`` only for
    images."""
    name = name.lower()
    if name.startswith("on"):
        return False
    if name.startswith(("aria-", "data-")) and re.fullmatch(r"(aria|data)-[a-z0-9_.\-]+", name):
        return True
    if tag == "img" and name == "src":
        return bool(_IMAGE_DATA_URI.match(value))
    if name in ("href", "cite") and re.sub(r"[\x00-\x20]", "", value).lower().startswith("data:"):
        return False
    if tag in _MATHML_TAGS:
        return name in _MATHML_ATTRIBUTES or name in _GLOBAL_ATTRIBUTES
    if tag in ("table", "thead", "tbody", "tfoot", "tr", "td", "th", "caption") and name in _TABLE_ATTRIBUTES:
        return True
    return name in _GLOBAL_ATTRIBUTES or name in _TAG_ATTRIBUTES.get(tag, frozenset())


@functools.lru_cache(maxsize=1)
def _cleaner() -> Any:
    try:
        import bleach
        from bleach.css_sanitizer import CSSSanitizer
        from bleach.html5lib_shim import Filter
    except ImportError as exc:  # pragma: no cover - bleach comes with nbconvert (the notebooks extra)
        raise ImportError(
            "sanitising HTML needs bleach with its CSS support: pip install 'bleach[css]>=6' "
            "(it comes with the notebooks extra: pip install -e '.[notebooks]')"
        ) from exc

    class _DropWithContent(Filter):  # type: ignore[misc,valid-type]
        """Removes the elements of :data:`DROPPED_WITH_CONTENT` and every token inside them."""

        def __iter__(self) -> Any:
            depth = 0
            for token in Filter.__iter__(self):
                kind = token.get("type")
                name = str(token.get("name") or "").lower()
                if name in DROPPED_WITH_CONTENT and kind in ("StartTag", "EndTag", "EmptyTag"):
                    if kind == "StartTag":
                        depth += 1
                    elif kind == "EndTag":
                        depth = max(0, depth - 1)
                    continue
                if depth == 0:
                    yield token

    return bleach.Cleaner(
        # the dropped elements pass bleach's allowlist only to reach the filter, which removes them whole
        tags=_HTML_TAGS | _MATHML_TAGS | DROPPED_WITH_CONTENT,
        attributes=_allowed_attribute,
        protocols={"http", "https", "mailto", "data"},
        strip=True,
        strip_comments=True,
        css_sanitizer=CSSSanitizer(allowed_css_properties=_CSS_PROPERTIES),
        filters=[_DropWithContent],
    )


def sanitize_html(fragment: str) -> str:
    """``fragment`` with only inert markup left: formatting, tables, lists, images, MathML, ``<details>``.

    An allowlist (bleach): any other element is removed (its text kept), and ``<script>``, ``<iframe>``,
    ``<object>``, ``<embed>``, ``<template>``, ``<form>``, ``<meta>`` ... are removed with their content;
    attributes are limited to presentation ones (no ``on*`` event handler, no ``srcdoc``, no
    ``formaction``); links may be ``http(s)``, ``mailto``, fragments or relative paths, never
    ``javascript:`` or ``data:``; an image's source must be a ``data:image/...`` URI; inline styles keep
    only layout and colour properties; comments are removed.  The text itself is kept, escaped.
    """
    if not fragment:
        return ""
    return str(_cleaner().clean(fragment))
