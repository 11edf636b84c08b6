"""profile_workload refuses an unwritable trace_path before the workload runs (issue #20, item 10)."""

from __future__ import annotations

import os
import sys

import pytest
import torch

from torchscan.measure.profile import profile_workload


def _counting():
    calls: list[int] = []

    def workload() -> None:
        calls.append(1)
        torch.ones(2) + 1

    return workload, calls


@pytest.mark.parametrize("path", ["/tmp/a\0b.json", "a\0.json"])
def test_nul_in_trace_path_is_refused_before_the_call(path):
    workload, calls = _counting()
    with pytest.raises(ValueError, match="trace_path"):
        profile_workload(workload, device="cpu", trace_path=path)
    assert calls == []


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
def test_trace_path_where_no_file_can_be_created_is_refused_before_the_call():
    workload, calls = _counting()
    with pytest.raises(ValueError, match="trace_path"):
        profile_workload(workload, device="cpu", trace_path="/proc/torchscan-trace.json")
    assert calls == []
    assert not os.path.exists("/proc/torchscan-trace.json")


def test_failed_workload_leaves_no_reserved_trace_file(tmp_path):
    trace = tmp_path / "t.json"
    error = RuntimeError("workload failed")

    def workload() -> None:
        raise error

    with pytest.raises(RuntimeError) as caught:
        profile_workload(workload, device="cpu", trace_path=trace, progress=False)
    assert caught.value is error
    assert not trace.exists()
    # the profiler is not left running: a second profile works and writes its trace
    workload_ok, calls = _counting()
    profile_workload(workload_ok, device="cpu", trace_path=trace, progress=False)
    assert calls == [1] and trace.stat().st_size > 0


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_existing_trace_file_still_refused_and_kept(tmp_path):
    trace = tmp_path / "t.json"
    trace.write_text("mine")
    workload, calls = _counting()
    with pytest.raises(FileExistsError, match="never overwritten"):
        profile_workload(workload, device="cpu", trace_path=trace)
    assert calls == [] and trace.read_text() == "mine"
