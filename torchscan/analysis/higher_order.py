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
* **counted** (:data:`FORMULAS`: ``flex_attention`` and its backward): it runs as without TorchScan,
  its inside unobserved, and its formula counts it from its arguments (:func:`count`).
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
from collections.abc import Callable, Mapping
from typing import Any

import torch

from torchscan.formulas import flex_attention as flex
from torchscan.formulas.operator_common import UnsupportedOperatorFormula, arg
from torchscan.report.sanitize import error_text

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


# --- formulas ------------------------------------------------------------------------------------

Counter = Callable[[], Any]
"""Makes a fresh operator observer (``OperatorObserver.counter``) to count a callable on its own."""


def _tile(
    query: torch.Tensor, shapes: flex.FlexShapes, block_mask: tuple[Any, ...]
) -> tuple[torch.Tensor, ...]:
    """``(score, b, h, q_idx, kv_idx)`` of the first tile, one value per (query, key) pair of it.

    Every index is materialised at the tile's shape, as the kernel evaluates ``score_mod`` and
    ``mask_mod`` once per pair: an operation on ``h`` alone costs one FLOP per pair too.
    """
    q_block, kv_block = flex.mask_tile(block_mask)
    rows, cols = min(q_block, shapes.q_len), min(kv_block, shapes.kv_len)
    device = query.device
    index = torch.zeros((rows, cols), dtype=torch.int32, device=device)
    q_idx = torch.arange(rows, dtype=torch.int32, device=device).view(rows, 1).expand(rows, cols)
    kv_idx = torch.arange(cols, dtype=torch.int32, device=device).view(1, cols).expand(rows, cols)
    score = torch.zeros((rows, cols), dtype=torch.float32, device=device)
    return score, index, index, q_idx, kv_idx


def per_pair(
    counter: Counter, fn: Any, inputs: tuple[Any, ...], pairs: int, label: str
) -> tuple[int, str | None]:
    """FLOPs per pair of ``fn(*inputs)`` run once on one tile of ``pairs`` pairs, under a fresh counter.

    Returns ``(flops_per_pair, None)``, or ``(0, reason)`` when the work cannot be counted: the
    callable raised on the tile, ran an operator without a formula, or did not cost a whole number of
    FLOPs per pair. ``fn`` None (no callable) costs 0.
    """
    if fn is None or not pairs:
        return 0, None
    observer = counter()
    try:
        with observer:
            fn(*inputs)
    except Exception as error:  # the callable is the caller's: its failure on a tile is reported
        reason = f"{label} could not run on one block's index tensors ({error_text(error)})"
        return 0, f"{reason}; its work is not counted."
    problems = observer.diagnostics()
    if problems:
        return 0, f"{label} work is not counted: {problems[0]['message']}"
    flops = sum(observer.by_operator.values())
    if flops % pairs:
        return 0, f"{label} work is not a whole number of FLOPs per (query, key) pair; it is not counted."
    return flops // pairs, None


Mod = tuple[str, Any, tuple[Any, ...], bool]
"""``(label, callable, inputs after the indices, is mask_mod)``."""


def _mods(
    counter: Counter,
    query: torch.Tensor,
    shapes: flex.FlexShapes,
    block_mask: tuple[Any, ...],
    work: flex.BlockWork,
    mods: tuple[Mod, ...],
) -> tuple[dict[str, int], list[str]]:
    """Per-pair costs of the ``mods`` on the first tile, and the reasons of those not counted.

    ``mask_mod`` runs on partial tiles only: without one, it is not run.
    """
    costs: dict[str, int] = {}
    gaps: list[str] = []
    if not work.pairs:
        return costs, gaps
    score, b, h, q_idx, kv_idx = _tile(query, shapes, block_mask)
    pairs = int(score.numel())
    for label, fn, extra, is_mask in mods:
        if is_mask and not work.masked_pairs:
            continue
        indices = (b, h, q_idx, kv_idx)
        inputs = (*indices, *extra) if is_mask else (score, *indices, *extra)
        cost, gap = per_pair(counter, fn, inputs, pairs, label)
        costs[label] = cost
        if gap is not None:
            gaps.append(gap)
    return costs, gaps


def _flex_forward(counter: Counter, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, str | None]:
    """``flex_attention(query, key, value, score_mod, block_mask, scale, kernel_options,
    score_mod_other_buffers, mask_mod_other_buffers)``."""
    query, key, value = args[:3]
    shapes = flex.flex_shapes(query, key, value)
    block_mask = arg(args, kwargs, 4, "block_mask")
    work = flex.block_work(block_mask, shapes)
    score_buffers = tuple(arg(args, kwargs, 7, "score_mod_other_buffers", ()) or ())
    mask_buffers = tuple(arg(args, kwargs, 8, "mask_mod_other_buffers", ()) or ())
    mods: tuple[Mod, ...] = (
        ("score_mod", arg(args, kwargs, 3, "score_mod"), score_buffers, False),
        ("mask_mod", block_mask[-1], mask_buffers, True),
    )
    costs, gaps = _mods(counter, query, shapes, block_mask, work, mods)
    flops = flex.forward_flops(
        shapes, work, score_mod=costs.get("score_mod", 0), mask_mod=costs.get("mask_mod", 0)
    )
    return flops, " ".join(gaps) or None


def _flex_backward(counter: Counter, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, str | None]:
    """``flex_attention_backward(query, key, value, out, logsumexp, grad_out, grad_logsumexp, fw_graph,
    joint_graph, block_mask, scale, kernel_options, score_mod_other_buffers, mask_mod_other_buffers)``.

    The joint graph takes ``(score, b, h, q_idx, kv_idx, grad, *score_mod_other_buffers)``.
    """
    query, key, value = args[:3]
    shapes = flex.flex_shapes(query, key, value)
    block_mask = arg(args, kwargs, 9, "block_mask")
    work = flex.block_work(block_mask, shapes)
    score_buffers = tuple(arg(args, kwargs, 12, "score_mod_other_buffers", ()) or ())
    mask_buffers = tuple(arg(args, kwargs, 13, "mask_mod_other_buffers", ()) or ())
    joint = arg(args, kwargs, 8, "joint_graph")
    gaps: list[str] = []
    if joint is None and work.pairs:
        gaps.append(
            "joint_graph was not given (PyTorch derives it inside the call): the score_mod gradient "
            "is not counted."
        )
    grad = _tile(query, shapes, block_mask)[0] if work.pairs else None  # one incoming gradient per pair
    mods: tuple[Mod, ...] = (
        ("score_mod", arg(args, kwargs, 7, "fw_graph"), score_buffers, False),
        ("joint_graph", joint, (grad, *score_buffers), False),
        ("mask_mod", block_mask[-1], mask_buffers, True),
    )
    costs, found = _mods(counter, query, shapes, block_mask, work, mods)
    flops = flex.backward_flops(
        shapes,
        work,
        score_mod=costs.get("score_mod", 0),
        joint=costs.get("joint_graph", 0),
        mask_mod=costs.get("mask_mod", 0),
    )
    return flops, " ".join(gaps + found) or None


FORMULAS: dict[str, Callable[[Counter, tuple[Any, ...], dict[str, Any]], tuple[int, str | None]]] = {
    "higher_order.flex_attention": _flex_forward,
    "higher_order.flex_attention_backward": _flex_backward,
}
"""HOPs TorchScan counts itself (PyTorch's FlopCounterMode formulas for them are never used)."""


def count(
    counter: Counter, name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> tuple[int, str | None] | None:
    """Count one call of HOP ``name``: ``None`` when it has no formula (the caller reports it uncounted).

    Otherwise ``(flops, gap)``: ``gap`` names work the count leaves out (a ``score_mod`` that could
    not be counted), making the call a lower bound. Raises :class:`UnsupportedOperatorFormula` when the
    formula cannot describe the call at all.
    """
    formula = FORMULAS.get(name)
    if formula is None:
        return None
    try:
        return formula(counter, args, dict(kwargs))
    except UnsupportedOperatorFormula:
        raise
    except (IndexError, TypeError, ValueError, RuntimeError) as error:  # an argument layout we do not know
        raise UnsupportedOperatorFormula(
            f"{name} was called with arguments its formula does not recognise ({error_text(error)})."
        ) from error
