"""Pure block statistics (workloads.md 5.3), checked against torch.utils.benchmark.Measurement."""

from __future__ import annotations

import math

import pytest

from torchscan.measure.stats import block_statistics, interquartile_range, median, percentile


def test_worked_example() -> None:
    # blocks of 4 calls -> per-call averages 0.125, 0.25, 0.375, 0.75, 0.5
    stats = block_statistics([0.5, 1.0, 1.5, 3.0, 2.0], 4, 2)
    assert stats.latency == 0.375
    assert stats.latency_iqr == 0.25  # p75 0.5 - p25 0.25
    assert stats.measured_calls == 20
    assert stats.throughput == 5.0  # 2 * 20 / 8.0


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([1.0], 0.25, 1.0),
        ([1.0, 2.0], 0.5, 1.5),
        ([1.0, 2.0, 3.0, 4.0], 0.25, 1.75),  # position 0.75 between 1 and 2
        ([4.0, 1.0, 3.0, 2.0], 0.75, 3.25),  # unsorted input; position 2.25
        ([1.0, 2.0, 3.0], 0.0, 1.0),
        ([1.0, 2.0, 3.0], 1.0, 3.0),
    ],
)
def test_percentile_linear_interpolation(values, q, expected) -> None:
    assert percentile(values, q) == pytest.approx(expected)


def test_matches_torch_measurement() -> None:
    from torch.utils.benchmark import Measurement

    raw = [0.31, 0.29, 0.35, 0.3, 0.52, 0.28, 0.33]
    measurement = Measurement(number_per_run=10, raw_times=raw, task_spec=_task_spec())
    stats = block_statistics(raw, 10, 1)
    assert stats.latency == pytest.approx(measurement.median)
    assert stats.latency_iqr == pytest.approx(measurement.iqr)


def _task_spec():
    from torch.utils.benchmark.utils.common import TaskSpec

    return TaskSpec(stmt="pass", setup="pass", num_threads=1)


def test_errors_and_overflow() -> None:
    with pytest.raises(ValueError):
        median([])
    with pytest.raises(ValueError):
        percentile([1.0], 1.5)
    with pytest.raises(ValueError):
        block_statistics([], 1, 1)
    with pytest.raises(ValueError):
        block_statistics([1.0], 0, 1)
    assert math.isinf(block_statistics([0.5, 0.5], 10, 1e308).throughput)
    assert interquartile_range([2.0, 2.0, 2.0]) == 0.0
