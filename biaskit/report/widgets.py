"""Small interactive forms for the notebooks (ipywidgets), safe under papermill.

The guided tour (``notebooks/00_tour.ipynb``) lets a reader change the seed
words of a test and rerun it.  :func:`seed_word_form` shows one text box per
word group and a button; clicking the button parses the boxes and calls the
function the notebook passes in, showing its result (or a readable message
when the words cannot be used, e.g. none of them is in the vocabulary).  With
``roles``, each group also gets a box for its name, so that the result can be
worded with the reader's own names (:mod:`biaskit.report.seed_weat`).

Executed headlessly (papermill, ``make reproduce``) nobody clicks: the notebook
cell computes the default result itself, and the form is displayed with a
plain HTML fallback that the static report shows instead of the live form.
When ipywidgets is not installed, :func:`seed_word_form` logs that and returns
``None`` instead of failing.

**Reopened without its kernel**, a saved notebook still holds the
widget's output, but no model for it: JupyterLab would show "Error displaying
widget: model not found" there (its widget renderer wins over the HTML fallback
of the same output whenever the notebook is trusted).  :func:`display_live`
therefore shows a live view as two outputs (three for a view of plotly figures,
below): a one-line hint ("Run this cell to ...", :func:`live_hint_html`), hidden
by its own CSS as long as the live view is drawn, and the widget's bundle.  When
the view cannot be drawn (no model, or its model closed) the CSS hides the
widget's output and shows the hint instead, next to the static figure the cell
displayed before it.

**Plotly is loaded before the views are restored.**  A reloaded page (or a notebook opened again while its
kernel runs) restores the widget models from the kernel while each live view's output waits for its own
model -- 2 s at most (``get_model`` of ``@jupyter-widgets/base`` 8.1) -- and the outputs pick their models up
one after another, each drawing its view at once.  The first plotly figure drawn on a page makes
JupyterLab's plotly renderer evaluate plotly.js, about a second of a busy page's time (measured on the
loaded 2-core test machine: 0.9-1.2 s, where drawing a view's widgets took about 5 ms and a figure
0.05-0.6 s): inside a live view, that second goes by while the other outputs wait, and those still waiting
after 2 s give up ("Error displaying widget: model not found") although their models are there.  With
``plotly=True``, :func:`display_live` shows an empty, hidden plotly figure between the hint and the view:
drawn with the notebook's other outputs, it has plotly.js loaded before the views are restored.

**A view whose wait overlapped the restoration is drawn again.**  Drawing the views still takes the page's
time while other outputs wait, and the wait of ``get_model`` looks at the clock before it looks for the
model again: an output whose last look came just before the models were restored, and whose next turn came
after the 2 s because the page was drawing, gives up although its model is there.  JupyterLab's renderer
then asks the manager whether it has restored; "no" makes it wait for the manager's ``restored`` signal
and draw the view then, "yes" shows "model not found" for good.  The hint's script (:data:`_WIDGET_RETRY_JS`,
once per page, trusted notebooks only) makes that answer "no" for :data:`WIDGET_RETRY_GRACE_MS` after a
manager's first such failure, and emits ``restored`` again 0.2 s later: the outputs that gave up look once
more and draw their views.  A model that is really gone (a view closed, or a kernel that no longer has it)
shows its hint a few seconds later than without the script.  The script reaches the manager's class
through JupyterLab's module federation (``window._JUPYTERLAB``) and changes nothing where it does not find
exactly the getter it replaces; ``tests/report/test_widget_retry_script.py`` checks the installed
manager's code for what it relies on.  (ipywidgets pull request 4040, open, makes the wait event-driven.)

**A cell run on its own** (in a fresh kernel, e.g. after following that hint) either loads what it needs
itself or stops with one line naming the cell to run first (:func:`needs`), never a ``NameError``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from biaskit.core.html import escape_html

logger = logging.getLogger(__name__)

__all__ = [
    "PLOTLY_WARM_UP_KEY",
    "CellNeedsEarlierCells",
    "SeedWordForm",
    "display_live",
    "format_words",
    "live_hint_html",
    "needs",
    "parse_words",
    "plotly_warm_up",
    "seed_word_form",
    "with_static_fallback",
]

_SPLIT = re.compile(r"[,;\n]+")

#: Shown by the static report (and any front end without a widget manager) instead of the live form.
STATIC_FALLBACK = (
    "<p><i>Here the notebook shows a small form to change the seed words and run the test again. "
    "Open the notebook in Jupyter (JupyterLab or Notebook) to use it; the result above was computed "
    "with the default words.</i></p>"
)


def with_static_fallback(widget: Any, html_text: str, plain_text: str, **kwargs: Any) -> dict[str, Any]:
    """``widget``'s MIME bundle with ``html_text`` / ``plain_text`` for front ends without a widget manager.

    JupyterLab shows the live widget; the static HTML report, nbconvert and a plain console show the
    fallback texts instead of a "could not display widget" placeholder or a raw repr.
    """
    bundle = widget._repr_mimebundle_(**kwargs) or {}
    data = dict(bundle) if isinstance(bundle, dict) else {}
    data["text/html"] = html_text
    data["text/plain"] = plain_text
    return data


#: the CSS of :func:`live_hint_html`.  In an output area that holds a hint, a widget output that JupyterLab
#: could not draw is hidden and the hint shown in its place: JupyterLab marks such an output itself with
#: ``jupyter-widgets`` ("Error displaying widget: model not found"), or hides it (``lm-mod-hidden``, its model
#: closed).  A drawn view keeps the hint hidden.  (``:has()`` cannot hold another ``:has()``: the selectors
#: test the output's own classes.)
_LIVE_HINT_CSS = (
    ".jp-OutputArea:has(.bk-live-hint) > .jp-OutputArea-child:has(> .jp-OutputArea-output.jupyter-widgets) "
    "{ display: none; }\n"
    ".jp-OutputArea:has(> .jp-OutputArea-child > .jp-OutputArea-output:is(.jupyter-widgets, .lm-mod-hidden)) "
    ".bk-live-hint { display: block !important; }\n"
    # the plotly warm-up (display_live(..., plotly=True)) right after the hint takes no room
    ".jp-OutputArea-child:has(.bk-live-hint) + .jp-OutputArea-child:has(> .jp-RenderedPlotly) "
    "{ display: none; }"
)

#: the MIME type of a plotly figure (drawn in JupyterLab by the renderer in plotly's wheel)
_PLOTLY_MIME = "application/vnd.plotly.v1+json"
#: the output metadata key that marks the plotly warm-up of :func:`display_live` (the static report drops it)
PLOTLY_WARM_UP_KEY = "biaskit_plotly_warm_up"


def plotly_warm_up() -> dict[str, Any]:
    """The MIME bundle of an empty, transparent 10 x 10 plotly figure: drawing it makes JupyterLab load
    plotly.js (:func:`display_live`)."""
    hidden = {"visible": False}
    return {
        _PLOTLY_MIME: {
            "data": [],
            "layout": {
                "width": 10,
                "height": 10,
                "margin": {"l": 0, "r": 0, "t": 0, "b": 0, "pad": 0},
                "paper_bgcolor": "rgba(0,0,0,0)",
                "plot_bgcolor": "rgba(0,0,0,0)",
                "xaxis": hidden,
                "yaxis": hidden,
                "showlegend": False,
            },
            "config": {"staticPlot": True, "displayModeBar": False},
        },
        "text/plain": "",
    }


#: how long after a widget manager's first "model not found" a live view that could not find its model is
#: drawn again (milliseconds; :data:`_WIDGET_RETRY_JS`)
WIDGET_RETRY_GRACE_MS = 5000

#: the script of :func:`live_hint_html`: a view whose wait for its model overlapped the restoration of the
#: models is drawn again instead of showing "model not found" for good (see the module docstring).  It runs
#: once per page, in a trusted notebook only (JupyterLab runs no script of an untrusted output), and does
#: nothing where it does not find exactly what it expects: another front end (Notebook 6, VS Code, a report
#: page) has no ``window._JUPYTERLAB``, and another widget manager no ``restoredStatus`` getter.  What it did
#: is in ``window.biaskitWidgetRetry`` (``state``: "on", or why not; ``retries``: the views drawn again);
#: setting that variable before the page loads switches it off.
_WIDGET_RETRY_JS = (
    "(function () {\n"
    "  var w = window;\n"
    "  if (w.biaskitWidgetRetry) { return; }\n"
    "  var s = w.biaskitWidgetRetry = {state: 'loading', retries: 0};\n"
    "  var c = w._JUPYTERLAB && w._JUPYTERLAB['@jupyter-widgets/jupyterlab-manager'];\n"
    "  if (!c || typeof c.get !== 'function') { s.state = 'no JupyterLab widget manager'; return; }\n"
    "  Promise.resolve().then(function () { return c.get('./extension'); }).then(function (factory) {\n"
    "    var m = factory(), proto = m && m.LabWidgetManager && m.LabWidgetManager.prototype;\n"
    "    var d = proto && Object.getOwnPropertyDescriptor(proto, 'restoredStatus');\n"
    "    if (!d || typeof d.get !== 'function') { s.state = 'unknown widget manager'; return; }\n"
    "    Object.defineProperty(proto, 'restoredStatus', {configurable: true, get: function () {\n"
    "      var done = d.get.call(this), signal = this._restored;\n"
    "      if (!done || !signal || typeof signal.emit !== 'function') { return done; }\n"
    "      var now = Date.now(), own = this.biaskitRetry || (this.biaskitRetry = {since: now, timer: 0});\n"
    f"      if (now - own.since > {WIDGET_RETRY_GRACE_MS}) {{ return done; }}\n"
    "      if (!own.timer) {\n"
    "        own.timer = setTimeout(function () { own.timer = 0; s.retries += 1; signal.emit(); }, 200);\n"
    "      }\n"
    "      return false;\n"
    "    }});\n"
    "    s.state = 'on';\n"
    "  }).catch(function () { s.state = 'failed to load the widget manager'; });\n"
    "})();"
)


def live_hint_html(text: str) -> str:
    """One line that JupyterLab shows in place of a live view it cannot draw (:func:`display_live`), with the
    CSS that shows it only then and the script that draws a view again after a lost wait for its model."""
    return (
        f"<div class='bk-live-hint' role='note' style='display:none;color:#57606a;font-style:italic;"
        f"font-family:system-ui,sans-serif;margin:4px 0'>▶ {escape_html(text)}</div>"
        f"<style>{_LIVE_HINT_CSS}</style><script>{_WIDGET_RETRY_JS}</script>"
    )


def display_live(bundle: Mapping[str, Any], hint: str, *, plotly: bool = False) -> None:
    """Display a live view's MIME ``bundle`` after a hint line that JupyterLab shows only when the view cannot
    be drawn: a saved notebook reopened without running the cell shows the hint (and the static figure the
    cell showed before), never "Error displaying widget: model not found".  The caller keeps a reference to
    the widget (a widget that is garbage-collected closes its model, and a reloaded page finds nothing).

    ``plotly``: the view draws plotly figures; an empty, hidden plotly figure (:func:`plotly_warm_up`, marked
    with :data:`PLOTLY_WARM_UP_KEY` in its output metadata) goes between the hint and the view, so that a
    reopened notebook loads plotly.js while it draws its outputs, before it restores the live views (see the
    module docstring)."""
    from IPython.display import display

    display({"text/html": live_hint_html(hint), "text/plain": ""}, raw=True)
    if plotly:
        display(plotly_warm_up(), raw=True, metadata={PLOTLY_WARM_UP_KEY: True})
    display(dict(bundle), raw=True)


class CellNeedsEarlierCells(RuntimeError):
    """A notebook cell was run before the cells that make what it uses (:func:`needs`).

    IPython and JupyterLab show it as its one-line message (``_render_traceback_``), not as a traceback."""

    def _render_traceback_(self) -> list[str]:
        return [f"▶ {self}"]


def needs(namespace: Mapping[str, Any], names: Iterable[str], run_first: str) -> None:
    """Stop a notebook cell with one line when the cells it depends on have not run (a fresh kernel).

    ``names`` are the variables the cell takes from earlier cells; when any is missing from ``namespace``
    (the notebook's ``globals()``) this raises :class:`CellNeedsEarlierCells` saying which cell(s) to run
    first (``run_first``, e.g. ``"the cells of sections 1 to 8"``) and how (Run → Run All Above Selected
    Cell), instead of the ``NameError`` the cell would raise on its first missing name.
    """
    missing = [n for n in names if n not in namespace]
    if missing:
        what = ", ".join(f"`{n}`" for n in missing)
        raise CellNeedsEarlierCells(
            f"Run {run_first} first (Run → Run All Above Selected Cell), then this cell: it uses {what}, "
            "which they make."
        )


def parse_words(text: str) -> list[str]:
    """Split the content of a text box into words.

    Words are separated by commas, semicolons or new lines; surrounding blanks
    are removed, empty entries skipped, and a word given twice is kept once
    (first occurrence; logged).  Case is kept: vocabularies such as word2vec
    GoogleNews distinguish ``Paris`` from ``paris``.  A multi-word entry
    (``computer programmer``) is kept as written; the metric's OOV policy
    decides what happens to it.
    """
    words: list[str] = []
    seen: set[str] = set()
    for raw in _SPLIT.split(text):
        w = raw.strip()
        if not w:
            continue
        if w in seen:
            logger.info("word %r given twice; kept once", w)
            continue
        seen.add(w)
        words.append(w)
    return words


def format_words(words: Sequence[str]) -> str:
    """The inverse of :func:`parse_words` for display in a text box (``"a, b, c"``)."""
    return ", ".join(words)


class SeedWordForm:
    """A form with one text box per word group, a run button and an output area.

    Parameters
    ----------
    groups:
        ``{group label: default words}``, e.g. ``{"X (targets)": [...], "A (attribute)": [...]}``.
        The labels are shown to the reader and are the keys of the dict passed to ``on_run``.
        With ``roles``, the keys are the groups' default *names* instead, which the reader can edit.
    on_run:
        Called with ``{group label: [words]}`` (with ``roles``: ``{name as edited: [words]}``, in the
        groups' order) when the button is clicked; its return value is displayed under the form.  An
        exception raised by ``on_run`` (an empty group, words missing from the vocabulary, ...) is shown
        as a readable message, not a traceback; so are two groups given the same name, or none.
    roles:
        One label per group (``["X (targets)", "Y (targets)", ...]``): each group then has a name box
        (labelled with its role) above its word box.
    choices:
        ``{keyword: (label, [(option text, value), ...])}``: one menu per keyword, its first option the
        default; ``on_run`` is then called as ``on_run(words, keyword=value, ...)`` (the tour's WEAT form
        chooses the test's direction this way, two-sided by default).
    title, button_label:
        Texts of the form.

    A **Reset** button puts the default names, words and choices back in the boxes (and says so); the reader
    runs them with the run button.
    """

    def __init__(
        self,
        groups: Mapping[str, Sequence[str]],
        on_run: Callable[[dict[str, list[str]]], Any],
        *,
        title: str = "Change the seed words and run again",
        button_label: str = "Run with these words",
        roles: Sequence[str] | None = None,
        choices: Mapping[str, tuple[str, Sequence[tuple[str, Any]]]] | None = None,
    ) -> None:
        import ipywidgets as w

        if not groups:
            raise ValueError("seed_word_form needs at least one word group")
        if not callable(on_run):
            raise TypeError("on_run must be callable")
        if roles is not None and len(roles) != len(groups):
            raise ValueError(f"roles: one label per group ({len(groups)}), got {len(roles)}")
        self.on_run = on_run
        self.defaults = {str(k): list(v) for k, v in groups.items() if not isinstance(v, str)}
        self.boxes: dict[str, Any] = {}
        #: the name boxes (with ``roles``), by the group's default name
        self.name_boxes: dict[str, Any] = {}
        rows: list[Any] = []
        for i, (label, words) in enumerate(groups.items()):
            if isinstance(words, str):
                raise TypeError(f"group {label!r}: give a list of words, not one string")
            self.boxes[label] = w.Textarea(
                value=format_words(list(words)),
                description="words" if roles is not None else str(label),
                # "auto" (not 100%): the box fills the row beside its label without overflowing it, so
                # the form never scrolls sideways
                layout=w.Layout(width="auto", height="4.5em"),
                style={"description_width": "12em"},
            )
            if roles is not None:
                self.name_boxes[label] = w.Text(
                    value=str(label),
                    description=f"{roles[i]}: name",
                    layout=w.Layout(width="auto"),
                    style={"description_width": "12em"},
                )
                rows.append(self.name_boxes[label])
            rows.append(self.boxes[label])
        #: the menus of ``choices``, by keyword
        self.menus: dict[str, Any] = {}
        for key, (label, options) in (choices or {}).items():
            opts = list(options)
            if not opts:
                raise ValueError(f"choices[{key!r}] has no option")
            self.menus[key] = w.Dropdown(
                options=opts,
                value=opts[0][1],
                description=label,
                layout=w.Layout(width="auto"),
                style={"description_width": "12em"},
            )
            rows.append(self.menus[key])
        # width "auto": the button is as wide as its label, never cut to "Run with these…"
        self.button = w.Button(
            description=button_label,
            button_style="primary",
            icon="play",
            layout=w.Layout(width="auto", min_width="fit-content", align_self="flex-start"),
        )
        self.reset_button = w.Button(
            description="Reset to the default words",
            icon="undo",
            layout=w.Layout(width="auto", min_width="fit-content", align_self="flex-start"),
        )
        self.output = w.Output()
        self.button.on_click(self._clicked)
        self.reset_button.on_click(lambda _b: self.reset())
        self.widget = w.VBox(
            [
                w.HTML(f"<b>{escape_html(title)}</b>"),
                *rows,
                w.HBox([self.button, self.reset_button], layout=w.Layout(flex_flow="row wrap")),
                self.output,
            ],
            layout=w.Layout(width="100%", max_width="100%", overflow="hidden"),
        )
        self.widget.add_class("bk-seed-form")
        self.last_result: Any = None
        self.last_error: Exception | None = None

    def values(self) -> dict[str, list[str]]:
        """The words currently in the boxes, parsed with :func:`parse_words`: ``{label: words}``, or with
        ``roles`` ``{name as edited: words}`` (:class:`ValueError` for a missing or repeated name)."""
        if not self.name_boxes:
            return {label: parse_words(box.value) for label, box in self.boxes.items()}
        names = [" ".join(self.name_boxes[label].value.split()) for label in self.boxes]
        if not all(names):
            raise ValueError("every set needs a name: fill in each name box")
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"two sets are both named {repeated[0]!r}: give each set its own name")
        return {n: parse_words(box.value) for n, box in zip(names, self.boxes.values(), strict=True)}

    def options(self) -> dict[str, Any]:
        """The value of each menu of ``choices``: ``{keyword: value}``."""
        return {k: m.value for k, m in self.menus.items()}

    def reset(self) -> None:
        """Put the default names, words and menu choices back (the reader then presses the run button)."""
        from IPython.display import display

        for label, box in self.boxes.items():
            box.value = format_words(self.defaults.get(label, []))
            if label in self.name_boxes:
                self.name_boxes[label].value = label
        for menu in self.menus.values():
            menu.value = menu.options[0][1] if isinstance(menu.options[0], tuple) else menu.options[0]
        self.output.clear_output()
        with self.output:
            display(
                _HTML(
                    "<p><i>The default words are back in the boxes: press the run button to run them.</i></p>"
                )
            )

    def run(self) -> Any:
        """Call ``on_run`` with the current words (and choices); show and return its result (``None`` on
        error)."""
        from IPython.display import display

        self.output.clear_output()
        self.last_error = None
        with self.output:
            try:
                # a bad name is shown like bad words
                self.last_result = self.on_run(self.values(), **self.options())
            except Exception as exc:  # shown to the reader, who can fix the words and retry
                self.last_error = exc
                self.last_result = None
                display_html = (
                    f"<p style='color:#b00020'><b>Could not run with these words:</b> "
                    f"{escape_html(str(exc))}</p>"
                )
                display(_HTML(display_html))
                logger.warning("seed word form: %s", exc)
                return None
            if self.last_result is not None:
                display(self.last_result)
        return self.last_result

    def _clicked(self, _button: Any) -> None:
        self.run()

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        return with_static_fallback(
            self.widget, STATIC_FALLBACK, "Seed-word form (open the notebook in Jupyter to use it)", **kwargs
        )

    def _ipython_display_(self) -> None:
        display_live(
            self._repr_mimebundle_(),
            "Run this cell to change the seed words: the form needs the running notebook.",
        )


class _HTML:
    """Minimal HTML display object (avoids importing IPython at module import time)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _repr_html_(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return re.sub(r"<[^>]+>", "", self.text)


def seed_word_form(
    groups: Mapping[str, Sequence[str]],
    on_run: Callable[[dict[str, list[str]]], Any],
    **kwargs: Any,
) -> SeedWordForm | None:
    """Build a :class:`SeedWordForm` (display it by leaving it last in a cell).

    Returns ``None``, with a logged message, when ipywidgets is not installed,
    so a notebook still runs (without the form).  The form does not run
    ``on_run`` by itself: the notebook computes the default result in the same
    cell so that a headless run (papermill) has it.
    """
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        logger.warning(
            "ipywidgets is not installed: the seed-word form is not shown (pip install ipywidgets)"
        )
        return None
    return SeedWordForm(groups, on_run, **kwargs)
