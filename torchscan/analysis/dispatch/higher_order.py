"""Higher-order operators under TorchScan's dispatch modes (attention-and-scaling.md 1).

A higher-order operator (HOP: ``cond``, ``while_loop``, ``map_impl``, ``scan``, ``invoke_subgraph``,
``flex_attention``, ...) takes callables as arguments. PyTorch raises ``NotImplementedError`` when one
reaches a dispatch mode that does not set ``supports_higher_order_operators``; the operator observer
and the storage ledger inherit :class:`HigherOrderSupport`, which sets it, so a HOP reaches their
``__torch_dispatch__`` as one call (with the mode popped, like any operator). It is then handled by
its name (:func:`operator_name`, e.g. ``higher_order.cond``) in one of three ways:

* **transparent** (:data:`TRANSPARENT`: control flow whose CPU/CUDA kernel only calls its callables):
  it runs as PyTorch runs it, with each callable argument wrapped so that the callable runs with the
  mode re-entered (:func:`run_observed`). Its operators are observed one by one — counted, attributed
  to module calls, their storages seen — exactly as if the callable had been called directly: the
  branch a ``cond`` took, every iteration of a ``while_loop``. The HOP itself is not reported, like a
  C++ composite whose parts are.
* **counted** (``flex_attention`` and its backward, :mod:`torchscan.analysis.dispatch.higher_order_counts`):
  it runs as without TorchScan, its inside unobserved, and its formula counts it from its arguments.
* **opaque** (every other HOP): it runs as without TorchScan, its inside unobserved, and the metric
  becomes partial naming it (``uncounted_operator`` for FLOPs; the ledger's ``higher_order_operator``).

Dynamo (measured on torch 2.13, 2.14 and 2.15): while one of these modes is on the stack, code compiled
with ``torch.compile`` runs as eager PyTorch, so every operator of a compiled region is observed,
whatever the backend (inductor included) and whether it was compiled before or during the workload.
Three pieces make that so without recompiling anything:

1. :meth:`HigherOrderSupport.ignore_compile_internals` is True only while a HOP compiles its own
   eager wrapper (``torch.cond``, ``flex_attention`` and the like compile themselves with the
   "eager" backend; refusing that compile makes eager ``flex_attention`` raise). For any other frame
   Dynamo sees a mode that does not ignore compile internals and skips it: it runs eagerly.
2. Entering the mode does not set PyTorch's "inside a mode without ignore_compile_internals" flag,
   which would make Dynamo bypass its cache for every frame and recompile the HOP wrappers on every
   call (about 0.5 s per ``flex_attention`` call, and on torch 2.13 a crash in its recompilation
   report).
3. Code compiled earlier would then run from Dynamo's cache, unobserved. PyTorch's guard-complete
   hook (``torch._C._dynamo.eval_frame.set_guard_complete_hook``, held while a mode is entered,
   chained to any hook already set) turns such a cache hit into a miss on this thread while one of
   these modes is on its dispatch stack, except inside a HOP's own compile: Dynamo then skips the
   frame as in 1. The compiled code itself is untouched and runs compiled again afterwards.

On a PyTorch without that hook, 2 is not done (correct counts, slower HOP calls). A
``torch.compile(..., fullgraph=True)`` frame skipped this way raises PyTorch's "found no compiled
frames" error, as it does under any dispatch mode that does not ignore compile internals.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

import torch

_HOP_TYPE = torch._ops.HigherOrderOperator
_HOP_UTILS = "torch._higher_order_ops.utils"

TRANSPARENT = frozenset(
    f"higher_order.{name}"
    for name in ("cond", "while_loop", "while_loop_stack_output", "map_impl", "scan", "invoke_subgraph")
)
"""HOPs whose kernel only calls its callables: observed through them (their parts are counted)."""


_eval_frame = getattr(getattr(torch._C, "_dynamo", None), "eval_frame", None)
_set_guard_complete_hook = getattr(_eval_frame, "set_guard_complete_hook", None)
_ENTERING = threading.local()  # set while one of our modes runs TorchDispatchMode.__enter__
_HOOK_LOCK = threading.Lock()
_hook_users = 0
_previous_hook: Any = None


def in_hop_compile() -> bool:
    """Whether a HOP is compiling its own eager wrapper on this thread (PyTorch's flag).

    Read without importing anything: while that module is not loaded no HOP can be compiling.
    """
    probe = getattr(sys.modules.get(_HOP_UTILS), "_in_hop_compile", None)
    return bool(probe()) if probe is not None else False


def _observing() -> bool:
    """Whether one of TorchScan's modes is on this thread's dispatch mode stack."""
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    return any(isinstance(mode, HigherOrderSupport) for mode in _get_current_dispatch_mode_stack())


def _guard_complete(cache_hit: bool) -> bool:
    """Dynamo's guard-complete hook: a cache hit of user code becomes a miss while observed."""
    if _previous_hook is not None:
        cache_hit = _previous_hook(cache_hit)
    if cache_hit and not in_hop_compile() and _observing():
        return False
    return cache_hit


def _acquire_hook() -> None:
    global _hook_users, _previous_hook
    with _HOOK_LOCK:
        if _hook_users == 0 and _set_guard_complete_hook is not None:
            _previous_hook = _set_guard_complete_hook(_guard_complete)
        _hook_users += 1


def _release_hook() -> None:
    global _hook_users, _previous_hook
    with _HOOK_LOCK:
        _hook_users -= 1
        if _hook_users == 0 and _set_guard_complete_hook is not None:
            _set_guard_complete_hook(_previous_hook)
            _previous_hook = None


class HigherOrderSupport:
    """Mixin of TorchScan's dispatch modes: HOPs reach ``__torch_dispatch__``; Dynamo as described above.

    Put it before ``TorchDispatchMode`` in the bases so that its attributes and methods win. Every
    ``__enter__`` is matched by an ``__exit__`` (also when the workload raises), which releases the hook.
    """

    supports_higher_order_operators = True

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        """True during a HOP's own eager compile; also while entering, when a hook replaces the flag."""
        if getattr(_ENTERING, "active", False):
            return True
        return in_hop_compile()

    def __enter__(self) -> Any:
        _ENTERING.active = _set_guard_complete_hook is not None
        try:
            result = super().__enter__()  # type: ignore[misc]
        finally:
            _ENTERING.active = False
        _acquire_hook()
        return result

    def __exit__(self, *exc_info: Any) -> Any:
        try:
            return super().__exit__(*exc_info)  # type: ignore[misc]
        finally:
            _release_hook()


def is_higher_order(func: Any) -> bool:
    """Whether ``func`` is a higher-order operator (not an ``OpOverload``)."""
    return isinstance(func, _HOP_TYPE)


def operator_name(func: Any) -> str:
    """The report name of a HOP: ``<namespace>.<name>``, e.g. ``higher_order.flex_attention``."""
    return f"{getattr(func, 'namespace', 'higher_order')}.{func.name()}"


class _Observed:
    """A HOP's callable argument that runs with ``mode`` re-entered (attributes pass through)."""

    def __init__(self, fn: Callable[..., Any], mode: Any) -> None:
        self._fn = fn
        self._mode = mode

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self._mode:
            return self._fn(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # ``_boxed_call`` of invoke_subgraph's graph, ...
        return getattr(self._fn, name)


def run_observed(mode: Any, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run a :data:`TRANSPARENT` HOP as PyTorch runs it, its callables observed by ``mode``.

    Called from ``mode.__torch_dispatch__`` (the mode popped): the HOP dispatches below the mode as
    it would without it, and only its callables re-enter the mode. Workload exceptions propagate
    unchanged, and each ``with mode`` restores the stack on the way out.
    """
    wrapped = tuple(
        _Observed(a, mode) if callable(a) and not isinstance(a, torch.Tensor | type) else a for a in args
    )
    return func(*wrapped, **kwargs)


def operands(args: tuple[Any, ...]) -> tuple[torch.Tensor, ...]:
    """The top-level tensor arguments of a HOP call: what per-call records keep of it (hashable)."""
    return tuple(a for a in args if isinstance(a, torch.Tensor))
