"""Process-level measurements: PyTorch peak memory of one call and peak RSS of one child process.

These are different quantities and are never added together: ``measure_peak_memory`` reports what
PyTorch tracks (tensors on CPU, the caching allocator on CUDA/MPS) for one call in this process;
``measure_peak_rss`` reports the operating system's peak resident set of a fresh child process over
its whole lifetime.

It may import ``runtime`` (argument checks, devices, locks), ``report`` and the analysis lock; never
``measure``, ``views`` or ``cli`` (``measure`` composes it into ``measure_workload``, not the reverse).
"""

from torchscan.process.memory import measure_peak_memory
from torchscan.process.rss import measure_peak_rss

__all__ = ["measure_peak_memory", "measure_peak_rss"]
