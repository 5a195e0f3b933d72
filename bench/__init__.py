"""Benchmarks, each measured against a baseline taken in the same run (never timed tests).

Run one as a module from the repository root, e.g. `.venv/bin/python -m bench.turn_overhead`;
results go to `bench/results/` (git-ignored) and the numbers worth keeping to BENCHMARKS.md.
"""
