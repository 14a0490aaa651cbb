"""The foundations every other layer builds on: results, statistical tests, readers and writers, paths,
the metric registry.

Nothing here imports another layer of biaskit. Start with :class:`biaskit.core.results.TestResult`, the one
result type of every test, and :mod:`biaskit.core.registry`, where every metric is declared (``python -m
biaskit metrics`` lists them).

===============================  =============================================================================
:mod:`biaskit.core.results`      TestResult, the one result type of every statistical test
:mod:`biaskit.core.stats`        the statistical tests (z, t, proportion, binomial, Shapiro-Wilk, KS, GEV, KL,
                                 bootstrap ...)
:mod:`biaskit.core.permutation`  the one permutation-test driver (exact or sampled), shared by every
                                 permutation test
:mod:`biaskit.core.registry`     the metric registry: declaration, options, grid and calibration hooks,
                                 plug-ins
:mod:`biaskit.core.io`           readers and atomic writers: CSV, JSON (plain, gzipped, keyed), checksums
:mod:`biaskit.core.paths`        the bundled data, the private on-disk cache and where results go
:mod:`biaskit.core.html`         HTML and Markdown built from text biaskit did not write, escaped
:mod:`biaskit.core.linalg`       small linear-algebra helpers of the word-vector metrics
===============================  =============================================================================
"""
