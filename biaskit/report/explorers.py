r"""The two exploratory views of indirect bias scores (seed 004, chapter 4), for Jupyter.

Louis-Alexandre (2022) built two D3.js prototypes over precomputed Indirect Logarithmic Probability
Bias Scores (IBS, :mod:`biaskit.metrics.indirect_bias`); this module rebuilds them for Jupyter, and keeps
every rule that decides *what is shown* in plain, browser-free code that the tests exercise.

**Why plotly, and how it is drawn**.  The thesis's views are explored by sorting, choosing a cell or a
point for its details, hovering for a name, and colouring by any word (seed 004 section 4.1.2).  Both views
are plotly figures (maintained, pinned for the project, and the same figures write self-contained offline
HTML with ``include_plotlyjs=True``).  In Jupyter each figure is a plain ``application/vnd.plotly.v1+json``
output drawn by the renderer in plotly's wheel, inside an ``ipywidgets.Output``: no widget model of its own,
so nothing can fail to start or restore after Run All, a reload or a reopen (plotly's ``FigureWidget``, an
``anywidget`` since plotly 6, did fail so on a loaded machine, leaving plots that ignored their controls).
Hover, zoom, the legend and the scatter's Colour by menu run in the page; everything that needs Python
(model, categories, projection, sort, search, pages, details) is an ipywidgets control that draws the
figure again, with a busy line naming what it computes (:mod:`biaskit.report.explorer_widgets`).
ipympl would re-send a whole image on every hover; bqplot is barely maintained.  The static images of the
report stay matplotlib (:meth:`TableExplorer.figure`, :meth:`ScatterExplorer.figure`), the same views drawn
for papermill.

The rules:

**Table view** (section 4.1, Algorithms B.1-B.4).  Targets in columns, features in rows, cells
coloured by IBS with the diverging PuOr map (-1 orange ... 0 white ... +1 purple).  Clicking a header
in the thesis's prototype cycles through three states (:class:`TableSorter`; the live view chooses the state
with its Sort by and Order menus, :meth:`TableExplorer.sort_by`):

1. *score sort*: the other axis is sorted by IBS with the clicked attribute, decreasing, and only the
   5 most and 5 least associated are shown (when there are more than 2 x 5 + 1);
2. *cosine sort*: the other axis stays sorted by IBS (all of it, as in Algorithm B.4), and the clicked
   axis is sorted by cosine similarity to the clicked attribute (itself first), 5 most + 5 least;
3. *reset*: alphabetical order (gender keeps *male, female, boy, girl, man, woman*).

The click counter is per attribute and starts again at the first state when another attribute is
clicked (B.1's note).  As printed, B.1 tests ``clicks % 3`` *before* incrementing, so the first click
would reset; the prose (and this module) make the first click sort.  **Persistence** (section 4.1.2):
switching the model re-applies the sort with the new model's scores; when the target category changes
the feature (row) order is kept, and when the feature category changes the target (column) order is
kept, until the next click, so a reader can sort occupations by *ambitious* and then switch the rows
to Gender.  Numbers (ages, years) sort numerically in the default order.

**Scatter view** (section 4.2).  Each target is a point placed by a 2-D embedding of its IBS vector
over the features of the chosen category: t-SNE (perplexity 5, ``random_state=33``), ISOMAP (5
neighbours) or UMAP (5 neighbours, ``random_state=33``) -- the thesis's parameters, "no optimisation".
Points are coloured by IBS with any feature of that category or of a sensitive category (the
three-way view), and selecting a point (the "Details of" menu) shows a bar plot of its
IBS with every feature (the thesis's own future-work proposal) and the per-name indirect scatterplot
behind one score.

Both views have the **search box** the study participants asked for (section 5.2): a
case-insensitive substring filter (table) or highlight (scatter).  Both render a static matplotlib
figure (:meth:`TableExplorer.figure`, :meth:`ScatterExplorer.figure`) for papermill and HTML output.

**The live views** (:meth:`TableExplorer.widget`, :meth:`ScatterExplorer.widget`) keep the
controls true to the view: options that depend on another choice (Features on Targets and Model) are
recomputed when it changes, the controls start from the explorer's state, details are recomputed or cleared
with a note when the table or plot changes, a long table is paged (:data:`ROWS_PER_PAGE` x
:data:`COLUMNS_PER_PAGE`, plus plotly's zoom) instead of truncated, every table and selection downloads as
CSV and every plot as PNG and SVG, "Reset view" goes back to the first state, and any error shows as one
readable line inside the widget (:func:`error_line`), never as a traceback.  A cell that shows a view and
is run before the cells it needs says in one line which to run first (:func:`needs`).
``tests/report/test_browser_explorers.py`` drives them in JupyterLab and Chromium.

Where the parts live (this module is their public front; ``from biaskit.report import explorers as ex``):

====================================== =======================================================================
:mod:`biaskit.report.explorer_data`    the score store and the rules: sort, search, embedding, colours
:mod:`biaskit.report.explorer_figures` PuOr colours, the matplotlib pieces and the plotly figures
:mod:`biaskit.report.explorer_views`   :class:`TableExplorer`, :class:`ScatterExplorer`: state, static figures
:mod:`biaskit.report.explorer_widgets` :class:`TableWidget`, :class:`ScatterWidget`: the live views
====================================== =======================================================================
"""

from __future__ import annotations

from biaskit.report.explorer_data import (
    GENDER_ORDER,
    METHODS,
    SENSITIVE_CATEGORIES,
    Axis,
    ScoreStore,
    SortState,
    TableOrder,
    TableSorter,
    colour_options,
    cosine_similarity_to,
    default_order,
    embed_targets,
    filter_order,
    search_labels,
    top_bottom,
)
from biaskit.report.explorer_figures import (
    CMAP,
    bars_plotly,
    indirect_scatter,
    indirect_scatter_plotly,
    plotly_puor,
    puor_hex,
    scatter_plotly,
    table_plotly,
)
from biaskit.report.explorer_views import ScatterExplorer, TableExplorer
from biaskit.report.explorer_widgets import (
    COLUMNS_PER_PAGE,
    PLOTLY_MIME,
    ROWS_PER_PAGE,
    ScatterWidget,
    TableWidget,
    download_link,
    error_line,
    page_bounds,
    plotly_bundle,
)
from biaskit.report.widgets import CellNeedsEarlierCells, needs

__all__ = [
    "GENDER_ORDER",
    "Axis",
    "CMAP",
    "COLUMNS_PER_PAGE",
    "PLOTLY_MIME",
    "ROWS_PER_PAGE",
    "CellNeedsEarlierCells",
    "download_link",
    "needs",
    "plotly_bundle",
    "bars_plotly",
    "indirect_scatter_plotly",
    "plotly_puor",
    "METHODS",
    "SENSITIVE_CATEGORIES",
    "ScatterExplorer",
    "ScatterWidget",
    "ScoreStore",
    "SortState",
    "TableExplorer",
    "TableOrder",
    "TableSorter",
    "TableWidget",
    "error_line",
    "page_bounds",
    "scatter_plotly",
    "table_plotly",
    "colour_options",
    "cosine_similarity_to",
    "default_order",
    "embed_targets",
    "filter_order",
    "indirect_scatter",
    "puor_hex",
    "search_labels",
    "top_bottom",
]
