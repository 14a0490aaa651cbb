"""Build a static, offline HTML report of every executed study notebook.

``make reproduce`` leaves, for every study ``NN_name``, the executed notebook
``results/NN_name.ipynb``, its headline numbers ``results/NN_name.json``
(written by :func:`biaskit.report.notebook_output.save_results`) and its figures
``results/NN_name_*.png`` (:func:`biaskit.report.notebook_output.save_figure`).  This module
turns them into a small web site a reader without programming experience can
open from disk::

    python -m biaskit.report.html_report build --results results --out results/site

* one page per study (``NN_name.html``), converted with nbconvert's
  :class:`~nbconvert.exporters.HTMLExporter` (``lab`` template): prose, tables
  and figures are kept, code cells are folded under a "Show the code" switch,
  figures are embedded in the page (``data:`` URIs), formulas are turned into
  MathML (rendered by the browser itself, no MathJax) when ``latex2mathml`` is
  installed;
* ``index.html`` listing every study in a box that leads with what the run found
  (the JSON's ``finding`` sentence, else the first point of the notebook's "What
  this shows" section), then its two or three headline numbers (the JSON's
  ``headline``; rounded for display, the exact JSON value kept in a
  ``data-value`` attribute), then where it comes from and the settings it ran
  with, then every number of the run folded under "All numbers of this run",
  and thumbnails of its figures (with their alternative text).

Numbers are shown for people: p-values (keys such as ``p_value`` or ending in
``_p``) with :func:`biaskit.core.results.format_p_value` (``"< 0.001"``), other
numbers with 4 significant digits and never in e-notation, missing values as
``n/a``.

**Same run.**  A notebook and its JSON are paired by name (``NN_name.ipynb`` and
``NN_name.json`` in the same folder) and must come from the same run: the
parameters recorded in the JSON must equal those papermill injected into the
notebook, and the JSON must have been written while papermill ran the notebook.
When they disagree the study's box and page carry a visible banner and a
WARNING is logged.

**A clean page.**  Every figure gets alternative text (the notebook output's
``{"image/png": {"alt": ...}}`` metadata written by
:func:`biaskit.report.notebook_output.save_figure`, else "Figure N of <study>"); progress
bars are removed; raw log lines on stderr become the same short "Note" boxes the
notebooks show (warnings and errors) or go into a folded "Technical messages"
box (everything else); an error keeps a visible box with the folded traceback.

No page loads anything from the network: the CDN scripts of the nbconvert
template (require.js, MathJax, mermaid, the widget renderer) are removed and a
Content-Security-Policy forbids any remote resource, so the site works offline
and a stray remote reference shows up as a browser console error (which
``tests/report/test_html_report.py`` checks for in headless Chromium).

Where the parts live (this module builds the site and is the command line; the names are re-exported):

==========================================  ==========================================================
:mod:`biaskit.report.html_studies`          finding the studies, reading their notebooks, same-run check
:mod:`biaskit.report.html_numbers`          JSON flattened into rows, numbers formatted for readers
:mod:`biaskit.report.html_study_page`       one study's page (nbconvert, clean outputs, MathML, CSP)
:mod:`biaskit.report.html_index_page`       ``index.html``
==========================================  ==========================================================
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from biaskit.core.io import atomic_path, atomic_write_text
from biaskit.report.html_index_page import MAX_ROWS, THUMB_WIDTH, render_index
from biaskit.report.html_numbers import (
    MAX_LIST_ITEMS,
    HeadlineRow,
    flatten_results,
    format_value,
    is_p_value_key,
    plain_numbers,
)
from biaskit.report.html_studies import (
    HIDDEN_PARAMETERS,
    RUN_TIME_SLACK_S,
    Study,
    check_same_run,
    discover_studies,
    notebook_finding,
    notebook_source,
    notebook_title,
)
from biaskit.report.html_study_page import CSP, add_missing_alt, render_study_page

logger = logging.getLogger(__name__)

__all__ = [
    "CSP",
    "HeadlineRow",
    "Study",
    "add_build_arguments",
    "add_missing_alt",
    "build_site",
    "check_same_run",
    "discover_studies",
    "flatten_results",
    "format_value",
    "is_p_value_key",
    "main",
    "notebook_finding",
    "notebook_source",
    "notebook_title",
    "plain_numbers",
    "render_index",
    "render_study_page",
    "run_build",
    # defined in the modules above, re-exported here
    "HIDDEN_PARAMETERS",
    "MAX_LIST_ITEMS",
    "MAX_ROWS",
    "RUN_TIME_SLACK_S",
    "THUMB_WIDTH",
]


# ----------------------------------------------------------------------------- build


def build_site(results_dir: str | Path = "results", out_dir: str | Path | None = None) -> Path:
    """Build the report site from ``results_dir`` into ``out_dir``; return the path of ``index.html``.

    ``out_dir`` defaults to ``<results_dir>/site``.  Pages of studies that no
    longer exist are not removed automatically; the folder's ``index.html``,
    study pages and ``data/`` copies are overwritten.
    """
    results_dir = Path(results_dir)
    out = Path(out_dir) if out_dir is not None else results_dir / "site"
    studies = discover_studies(results_dir)
    out.mkdir(parents=True, exist_ok=True)
    data_out = out / "data"
    data_out.mkdir(exist_ok=True)
    for study in studies:
        if study.notebook is not None:
            logger.info("converting %s", study.notebook)
            page = render_study_page(study.notebook, study=study)
            atomic_write_text(out / f"{study.stem}.html", page)  # whole or not at all
        if study.results_file is not None:
            with atomic_path(data_out / study.results_file.name) as tmp:
                shutil.copyfile(study.results_file, tmp)
    index = out / "index.html"
    atomic_write_text(index, render_index(studies))
    logger.info("report: %d studies -> %s", len(studies), index)
    return index


def add_build_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``build`` (shared with ``python -m biaskit report``)."""
    parser.add_argument(
        "--results", default="results", help="folder with NN_name.ipynb/.json/_*.png (default: results)"
    )
    parser.add_argument("--out", default=None, help="output folder (default: <results>/site)")


def run_build(args: argparse.Namespace) -> int:
    """Build the site from parsed arguments; print the path of ``index.html``; return the exit status."""
    try:
        index = build_site(args.results, args.out)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(index)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m biaskit.report.html_report build --results results --out results/site``."""
    parser = argparse.ArgumentParser(
        prog="python -m biaskit.report.html_report",
        description="Build the static HTML report of the executed studies.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build index.html and one page per executed notebook")
    add_build_arguments(b)
    b.add_argument("-q", "--quiet", action="store_true", help="only print the path of index.html")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO, format="%(message)s")
    return run_build(args)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
