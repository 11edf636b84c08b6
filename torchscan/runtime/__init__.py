"""Run-time helpers shared by ``process/`` and ``measure/``: argument checks, device resolution, locks.

This package sits below both (it imports neither), so ``measure/`` (which composes the process
measurements into ``measure_workload``) and ``process/`` depend on each other in one direction only.
"""
