"""The two process-wide measurement locks (workloads.md 1.4).

The *timing lock* covers the timed section of ``measure_latency`` (the thread count is global); the
*memory lock* is shared by ``measure_peak_memory`` and ``profile_workload`` (the profiler and the
allocator peak counters are global). A second concurrent call waits instead of interleaving.

They are re-entrant so that a workload which itself calls a measurement API in the same thread fails
loudly in PyTorch (e.g. "profiler already enabled") instead of deadlocking silently. They do not
protect against unrelated PyTorch work running concurrently in the same process: use separate
processes for parallel benchmarks.
"""

from __future__ import annotations

import threading

TIMING_LOCK = threading.RLock()
MEMORY_LOCK = threading.RLock()
