"""Sphinx configuration of biaskit's documentation (``make docs`` -> docs/_build/html).

The build is offline and never executes a notebook: myst-nb renders the executed copies of a
``make reproduce`` folder when there are any (``BIASKIT_DOCS_RESULTS``, default ``results/``).  Math
is written as MathML at build time (``_ext/mathml.py``), so the pages need no CDN.  Every number that
comes from a run is generated from its record when the build starts (``_ext/biaskit_docs.py``).
``make docs`` turns warnings into errors and checks every cross-reference to biaskit's own API
(nitpicky); references to other projects are not checked, since their inventories (intersphinx)
would need the network.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

import biaskit  # noqa: E402

project = "biaskit"
author = "the biaskit authors"
copyright = "the biaskit authors, MIT licence"
version = release = biaskit.__version__

extensions = [
    "myst_nb",  # Markdown (MyST) pages and executed notebooks
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "mathml",
    "biaskit_docs",
]

root_doc = "index"
exclude_patterns = [
    "_build",
    "_generated/fragments",
    "examples",
    "records",
    "**/.ipynb_checkpoints",
]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}

# --- warnings: every one is an error under make docs (-W); cross-references to biaskit are checked
nitpicky = True
nitpick_ignore_regex = [
    # other projects' names (numpy, pandas, torch, gensim, the standard library, ...): no inventories offline
    (r"py:.*", r"(?!biaskit\b).*"),
    # private helpers named in signatures or docstrings are not part of the API reference
    (r"py:.*", r"biaskit(\.\w+)*\._\w+.*"),
]
suppress_warnings = ["myst.header", "mystnb.unknown_mime_type"]

# --- API reference
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = False
autodoc_default_options = {"exclude-members": "__init__, __new__, model_config"}
autosummary_generate = False
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_use_ivar = True  # attributes as fields: no second description beside :undoc-members:
add_module_names = False
python_use_unqualified_type_names = True

# --- Markdown and notebooks
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath", "amsmath"]
myst_heading_anchors = 3
nb_execution_mode = "off"  # the studies are rendered from a make reproduce folder, never executed here
nb_ipywidgets_js = {}  # widget state needs JavaScript from a CDN: left out (the report has static views)
nb_mime_priority_overrides = [
    ("html", "application/vnd.jupyter.widget-view+json", None),
    ("html", "application/vnd.plotly.v1+json", None),
    ("html", "application/vnd.jupyter.widget-state+json", None),
]
nb_merge_streams = True

# --- HTML
html_theme = "pydata_sphinx_theme"
html_title = f"biaskit {release}"
html_math_renderer = "mathml"
html_static_path = ["_static"]
html_css_files = ["biaskit.css"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
    "secondary_sidebar_items": ["page-toc"],
}
html_context = {"default_mode": "light"}  # pages opened from disk have no stored theme mode
html_sidebars = {"**": ["sidebar-nav-bs"]}
html_copy_source = False
html_show_sourcelink = False
