"""Reporting: what a notebook writes and shows, the sentences built from its numbers, the HTML report and the
explorers.

Everything a reader sees goes through here: numbers are saved to a results JSON and every sentence is built
from them; text biaskit did not write is escaped. Imports the layers below it and its own layer, never
the command line.

========================================  ================================================================
:mod:`biaskit.report.notebook_output`     where a notebook run writes its headline numbers and figures
:mod:`biaskit.report.notebook_params`     a study notebook's parameters, checked before anything runs
:mod:`biaskit.report.notebook_helpers`    sentences and table cells the CrowS-Pairs replay notebooks share
:mod:`biaskit.report.findings`            sentences that say what a run's numbers show
:mod:`biaskit.report.debiasing_findings`  notebook 17's sentences, built from its numbers
:mod:`biaskit.report.html_report`         the static, offline HTML report of the executed notebooks
:mod:`biaskit.report.html_index_page`     the report's index page
:mod:`biaskit.report.html_study_page`     one study's page of the report
:mod:`biaskit.report.html_studies`        the studies of a results folder
:mod:`biaskit.report.html_numbers`        numbers for readers in the report
:mod:`biaskit.report.widgets`             small interactive forms for the notebooks
:mod:`biaskit.report.seed_weat`           the seed-word form of the guided tour
:mod:`biaskit.report.explorers`           the two explorers of indirect bias scores (seed 004, chapter 4)
:mod:`biaskit.report.explorer_views`      the table and scatter explorers
:mod:`biaskit.report.explorer_widgets`    their live views in Jupyter
:mod:`biaskit.report.explorer_data`       what the explorers show, decided without a browser
:mod:`biaskit.report.explorer_figures`    the explorers' figures
========================================  ================================================================
"""
