"""biaskit: measure social bias in corpora, word embeddings and masked language models.

A thin, tested helper package behind the numbered notebooks in ``notebooks/``.
Metrics live in :mod:`biaskit.metrics`, statistical tests in :mod:`biaskit.core.stats`
(all returning :class:`biaskit.core.results.TestResult`), loaders in
:mod:`biaskit.data.downloads`, :mod:`biaskit.data.corpus`, :mod:`biaskit.embeddings.vectors` and
:mod:`biaskit.lm`.
"""

from biaskit.core.results import TestResult

__version__ = "0.1.0"
__all__ = ["TestResult", "__version__"]
