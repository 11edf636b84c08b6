"""Keep PyTorch's own chatter that TorchScan triggers off the user's terminal (issue #38).

A CUDA build of torch on a machine without a GPU (what a bare ``pip install`` gives on Linux) prints
lines that a new user reads as TorchScan's errors: the profiler's native start/stop markers and
``gpuGetDeviceCount failed with code 35``, and ``torch.utils.cpp_extension``'s "No CUDA runtime is
found" when the benchmark utilities are imported. TorchScan silences exactly those, only around the
calls of its own that trigger them — never around the caller's workload, whose output is the caller's —
and passes every other line through unchanged. docs/workloads.md lists them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

PROFILER_NOISE = (
    re.compile(r"^(USDT|STAGE):\S+ \S+ \d+:\d+ \S*ActivityProfiler\S*\] "),
    re.compile(r"^ERROR:\S+ \S+ \d+:\d+ DeviceProperties\.cpp:\d+\] gpuGetDeviceCount failed with code \d+"),
)
"""Native lines the profiler (Kineto) prints on start, stop and its CUDA probe: markers, not errors."""


@contextlib.contextmanager
def filtered_native_stderr(noise: tuple[re.Pattern[str], ...] = PROFILER_NOISE) -> Iterator[None]:
    """Capture what native code writes to file descriptor 2 inside the block, then write back every
    line that matches none of ``noise``. A process whose descriptor 2 cannot be duplicated runs the
    block unfiltered."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            text = capture.read().decode(errors="replace")
            kept = [line for line in text.splitlines(keepends=True) if not any(p.search(line) for p in noise)]
            if kept:
                sys.stderr.write("".join(kept))
                sys.stderr.flush()


@contextlib.contextmanager
def quiet_profile(profile: Any) -> Iterator[Any]:
    """``with torch.profiler.profile(...)`` whose start and stop run under :func:`filtered_native_stderr`;
    the block (the caller's workload) is not filtered. Exceptions of the block propagate unchanged."""
    with filtered_native_stderr():
        entered = profile.__enter__()
    try:
        yield entered
    except BaseException:
        with filtered_native_stderr():
            if not profile.__exit__(*sys.exc_info()):
                raise
    else:
        with filtered_native_stderr():
            profile.__exit__(None, None, None)


@contextlib.contextmanager
def quiet_cuda_home_warning() -> Iterator[None]:
    """Import-time "No CUDA runtime is found" of ``torch.utils.cpp_extension`` (a logger warning that
    ``torch.utils.benchmark`` triggers on a CUDA build without a GPU) is not shown inside the block."""
    logger = logging.getLogger("torch.utils.cpp_extension")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)
