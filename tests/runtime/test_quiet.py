"""PyTorch's own chatter that TorchScan triggers stays off the terminal; nothing else does (issue #38)."""

from __future__ import annotations

import logging
import os

import pytest
import torch

from torchscan.runtime import quiet

MARKER = "USDT:2026-12-05 23:59:07 2292:2292 SyncActivityProfilerHandler.cpp:39] profiler_start\n"
PROBE = "ERROR:2026-12-05 23:59:07 2292:2292 DeviceProperties.cpp:56] gpuGetDeviceCount failed with code 35\n"


def test_known_native_lines_are_dropped_and_every_other_line_kept(capfd: pytest.CaptureFixture[str]) -> None:
    with quiet.filtered_native_stderr():
        os.write(2, (MARKER + "a real problem\n" + PROBE).encode())
    err = capfd.readouterr().err
    assert err == "a real problem\n"


def test_the_workload_inside_a_quiet_profile_is_never_filtered(capfd: pytest.CaptureFixture[str]) -> None:
    session = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
    with quiet.quiet_profile(session) as prof:
        os.write(2, MARKER.encode())  # the caller's own output, even if it looks like the profiler's
        torch.ones(2) + 1
    assert MARKER in capfd.readouterr().err
    assert prof.key_averages()  # the profile itself is intact


def test_a_workload_exception_propagates_and_the_profiler_stops() -> None:
    session = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
    error = ValueError("the workload's own")
    with pytest.raises(ValueError) as raised, quiet.quiet_profile(session):
        raise error
    assert raised.value is error
    # a second profiler can start: the first one was stopped
    with quiet.quiet_profile(torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])):
        torch.ones(1) * 2


def test_cuda_home_warning_is_silenced_only_inside_the_block() -> None:
    logger = logging.getLogger("torch.utils.cpp_extension")
    before = logger.level
    with quiet.quiet_cuda_home_warning():
        assert logger.level == logging.ERROR
    assert logger.level == before
