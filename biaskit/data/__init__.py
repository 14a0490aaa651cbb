"""Data: corpora, word lists, sentence datasets, counterfactual text, published tables and downloads.

Reads the bundled files (the companion ``biaskit-data`` wheel) and the user's own files, each checked before
use; imports only :mod:`biaskit.core`. Every ``load_*`` function has an example in its docstring.

===================================  =========================================================================
:mod:`biaskit.data.wordlists`        seed, target and attribute word lists and the out-of-vocabulary policy
:mod:`biaskit.data.corpus`           the Spanish corpus: reading, sentence splitting, tokens, stop-words,
                                     counts
:mod:`biaskit.data.datasets`         the sentence datasets of the masked-model metrics (CrowS-Pairs,
                                     StereoSet, ...), validated
:mod:`biaskit.data.counterfactual`   counterfactual data substitution and corpora with a planted gender bias
:mod:`biaskit.data.training_text`    the text the bundled language models are trained on
:mod:`biaskit.data.published`        the published tables the studies compare with, checked by sha256
:mod:`biaskit.data.reference_data`   third-party reference vectors fetched into the cache, never installed
:mod:`biaskit.data.downloads`        downloads with a cache and checksums (the full Spanish Europarl)
:mod:`biaskit.data.barza`            Barza's framework data (seed 002): templates, professions, pairs
:mod:`biaskit.data.louis_alexandre`  Louis-Alexandre's data (seed 004): word lists, templates, surface-form
                                     rules
:mod:`biaskit.data.mt_gender`        MT Gender rebuilt from WinoBias and Winogender
===================================  =========================================================================
"""
