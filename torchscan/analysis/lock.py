"""The process-wide analysis lock: one observed execution at a time.

An analysis changes process-global state for the duration of one call: PyTorch's global module
hooks, the cyclic collector's thresholds, the training flags of the model's modules, and (for
``measure_flops``) PyTorch's module tracker hooks. Two analyses interleaving in different threads
would restore each other's saved state (a model left in eval mode, thresholds never restored) and
see each other's module calls. Every API that changes such state holds :data:`ANALYSIS_LOCK` for
the whole change, so a second thread waits instead of interleaving.

The lock is re-entrant: a workload that itself starts an analysis in the same thread (say
``crawl_module`` inside ``measure_latency``) keeps working. The measurement locks of
``torchscan.runtime.locks`` are only ever taken while this one is held, so the acquisition order
is always the same and two threads cannot deadlock on them.

It does not make unrelated PyTorch work in other threads safe to run during an analysis (the
model's own training flags are changed for the call); use separate processes for that.
"""

from __future__ import annotations

import threading

ANALYSIS_LOCK = threading.RLock()
