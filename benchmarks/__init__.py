"""Benchmarks: each ``bench_*.py`` module compares a vectorised biaskit routine with a naive reference."""
