"""Pure statistics of timed blocks (workloads.md 5.3); no torch import.

A *block* is one timed run of ``number_per_run`` consecutive calls. Everything here summarises
per-call **block averages**: none of it is a distribution of single requests (no p50/p95/p99).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) by linear interpolation between closest ranks (NumPy's default).

    Raises ``ValueError`` for an empty sequence or ``q`` outside ``[0, 1]``.
    """
    if not values:
        raise ValueError("percentile of an empty sequence")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile must be within [0, 1], got {q!r}")
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = math.ceil(position)
    if low == high:
        return ordered[low]
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median(values: Sequence[float]) -> float:
    """The 50th percentile of ``values`` (linear interpolation)."""
    return percentile(values, 0.5)


def interquartile_range(values: Sequence[float]) -> float:
    """75th minus 25th percentile: a spread of the given values, not a confidence interval."""
    return percentile(values, 0.75) - percentile(values, 0.25)


@dataclass(frozen=True)
class BlockStatistics:
    """Summary of timed blocks.

    ``latency`` is the median per-call block average and ``latency_iqr`` its spread, both in
    seconds; neither describes single requests. ``throughput`` is ``work_units`` per second of
    back-to-back calls in this process, not a serving system's capacity.
    """

    latency: float
    latency_iqr: float
    measured_calls: int
    throughput: float


def block_statistics(raw_times: Sequence[float], number_per_run: int, work_units: float) -> BlockStatistics:
    """Statistics of blocks of ``number_per_run`` calls each lasting ``raw_times`` seconds.

    Per-call averages are ``t / number_per_run``; ``throughput = work_units * calls / sum(t)``. The
    result may be non-finite (e.g. an enormous ``work_units``); callers decide whether to accept it.
    """
    if not raw_times:
        raise ValueError("block statistics need at least one block")
    if number_per_run < 1:
        raise ValueError(f"number_per_run must be >= 1, got {number_per_run!r}")
    averages = [t / number_per_run for t in raw_times]
    measured_calls = number_per_run * len(raw_times)
    total = math.fsum(raw_times)
    throughput = float(work_units) * measured_calls / total if total > 0 else math.inf
    return BlockStatistics(
        latency=median(averages),
        latency_iqr=interquartile_range(averages),
        measured_calls=measured_calls,
        throughput=throughput,
    )
