"""Python's recursion limit during an observed call: raised for the call only, restored exactly.

A hooked module call needs one more Python frame per nesting level than a plain one (PyTorch's
``inner`` closure once global module hooks exist), so a model whose plain forward fits the limit can
fail under an analysis alone. ``crawl_module`` knows the model and sizes the limit from its nesting
depth (:func:`frames_needed`); ``measure_flops`` runs an opaque workload and sizes it from the limit
the workload already runs under (:func:`frames_for_workload`). Both use
:func:`recursion_limit_at_least`, which never lowers the limit and restores it also after an error.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

# Python frames one nesting level of a hooked module call needs: ``_wrapped_call_impl``,
# ``_call_impl``, PyTorch's ``inner`` closure (present once global hooks exist) and ``forward`` are
# four; twice that leaves room for a helper frame or two per level in the model's own code.
FRAMES_PER_LEVEL = 8
# Frames above the deepest module call: hooks, dispatch mode, formulas, operators, report building.
FRAME_MARGIN = 500
# Beyond this many frames Python's C stack may overflow (a crash, not an exception) on 3.11.
MAX_RECURSION_LIMIT = 30_000
# A plain nesting level takes three or four frames (``_wrapped_call_impl``, ``_call_impl``,
# ``forward``, and more on recent releases) and a hooked one a frame more, so a workload whose plain
# run fits ``n`` frames fits in ``4n/3`` hooked ones; three times leaves room for the tracker's and
# the dispatch mode's own frames.
WORKLOAD_FACTOR = 3


def stack_depth() -> int:
    """The number of Python frames on the calling thread's stack."""
    frame = sys._getframe()
    depth = 0
    while frame is not None:
        depth += 1
        frame = frame.f_back  # type: ignore[assignment]
    return depth


def frames_needed(depth: int) -> int:
    """The recursion limit one forward of a model nested ``depth`` modules deep needs from here.

    A limit the caller already raised that far is respected; beyond the safe maximum the analysis
    refuses with a ``ValueError`` naming the depth, before any model code runs.
    """
    needed = stack_depth() + depth * FRAMES_PER_LEVEL + FRAME_MARGIN
    if needed > max(MAX_RECURSION_LIMIT, sys.getrecursionlimit()):
        deepest = (MAX_RECURSION_LIMIT - FRAME_MARGIN - stack_depth()) // FRAMES_PER_LEVEL
        raise ValueError(
            f"module is nested {depth} modules deep; the analysis supports at most about {deepest} "
            "levels in one Python stack"
        )
    return needed


def frames_for_workload() -> int:
    """The recursion limit for observing an opaque workload that runs under today's limit.

    The workload's model is unknown, so the limit is scaled: a workload whose plain run fits the
    current limit fits the returned one with module hooks installed. Capped at the safe maximum
    (a limit the caller raised beyond it is kept, never lowered).
    """
    scaled = stack_depth() + WORKLOAD_FACTOR * sys.getrecursionlimit() + FRAME_MARGIN
    return min(scaled, max(MAX_RECURSION_LIMIT, sys.getrecursionlimit()))


@contextlib.contextmanager
def recursion_limit_at_least(limit: int) -> Iterator[None]:
    """Raise Python's recursion limit to ``limit`` for the block (never lower it); restore it exactly."""
    before = sys.getrecursionlimit()
    if limit > before:
        sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)
