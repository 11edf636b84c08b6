"""The call recorder: module hooks that turn one forward pass into plain per-call records.

Each module call becomes a :class:`CallRecord` in call-start order. The recorder keeps the dynamic
call stack, assigns ``(path, call_index)`` identities, attributes parameters/buffers to their first
call, receives every dispatched operator from the observer (``on_operator``) for the innermost
active call, and runs per-call estimation in the post-hook with operator counting suspended.
Records hold metadata only; tensors are released as the forward proceeds.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from threading import get_ident
from typing import Any

from torch import Tensor, nn
from torch.nn.modules import module as module_globals
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from torch.utils.hooks import RemovableHandle

from torchscan.analysis.crawl.inputs import FAILED, PLAIN_TENSORS, capture_meta, described
from torchscan.formulas import registry
from torchscan.formulas.functional import ZERO_COST, OperatorCall, capture
from torchscan.formulas.tensors import first_tensor
from torchscan.report.names import report_name
from torchscan.report.schema import (
    BufferStats,
    CallIO,
    Diagnostic,
    MetricResult,
    ParameterStats,
    ValueMeta,
    metric_result,
)


def calls_metric() -> MetricResult:
    """A row's ``calls`` metric: one observed call (one object per analysis, shared by its rows)."""
    return metric_result("complete", 1, unit="calls", scope="module_call", method="pytorch_hook")


@dataclass(slots=True, eq=False)
class CallRecord:
    """Everything observed about one module call (metadata only, never tensor values)."""

    path: str
    call_index: int
    depth: int
    type_name: str
    parent: int
    is_leaf: bool
    # The call's arguments and output as :func:`~torchscan.analysis.crawl.inputs.capture_meta` keeps
    # them while observing; :meth:`CallRecorder.call_io` and ``output_meta`` give the report's descriptions.
    args_meta: tuple[Any, ...]
    parameters: ParameterStats
    buffers: BufferStats
    kwargs_meta: dict[str, Any] | None = None
    output_meta: Any = None
    failed: bool = False
    # The row's metrics, in report order: ``calls`` first, then estimates, then operator FLOPs.
    metrics: dict[str, MetricResult] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # Operator attribution (full mode): FLOPs dispatched directly in this call's own frame.
    op_self: int = 0
    op_self_complete: bool = True
    # Operators run in this frame by a call whose estimates do not cover its frame: metadata only
    # (shapes, dtypes, scalar arguments), estimated by functional formulas at build time.
    ops: list[OperatorCall] | None = None
    # True when this call's estimates cover work in its own frame (leaf formulas, handlers); a leaf
    # without a module formula does not, so its operators are recorded (real-models.md 1 (b)).
    covers_own_frame: bool = False
    # Extension fields (extensions-and-transformers.md 7, 16); None when absent.
    metric_ownership: dict[str, str] | None = None
    metric_owners: dict[str, dict[str, Any]] | None = None
    token_dependencies: dict[str, Any] | None = None
    # views-3.md 1: a built-in inclusive estimate split along the module tree, ``(module path,
    # {field: own share})`` with this call's path first; resolved to rows when the report is built.
    shares: list[tuple[str, dict[str, int]]] | None = None
    # A leaf estimate kept as plain numbers while observing (``analysis/crawl/estimate.py``): its six
    # MetricResults are built with the report (:func:`~torchscan.analysis.crawl.estimate.materialize`).
    estimate: tuple[Any, ...] | None = None
    # Handler and ownership state between this call's two hooks (``analysis/crawl/ownership.py``); None
    # for a call without a handler under no owner.
    active: Any = None


# Estimation callback: (recorder, record, module, args, kwargs, output) -> None, fills record.metrics.
Estimator = Callable[["CallRecorder", CallRecord, nn.Module, tuple[Any, ...], dict[str, Any], Any], None]
# Failure callback: (recorder, record, module) -> None, for calls whose forward raised.
FailureHandler = Callable[["CallRecorder", CallRecord, nn.Module], None]
# Pre-call callback: (recorder, record, module) -> None, right after a call's record is opened
# (extensions: subtree ownership is declared here, before descendants run).
EnterHandler = Callable[["CallRecorder", CallRecord, nn.Module], None]


def _own_tensors(module: nn.Module) -> tuple[tuple[nn.Parameter, ...], tuple[Any, ...]]:
    params = module._parameters
    buffers = module._buffers
    return (
        tuple(p for p in params.values() if p is not None) if params else (),
        tuple(b for b in buffers.values() if b is not None) if buffers else (),
    )


@dataclass(slots=True)
class ModuleInfo:
    """What the recorder knows about one module of the model, computed once before the forward."""

    path: str
    depth: int
    type_name: str
    is_leaf: bool
    params: tuple[nn.Parameter, ...]
    buffers: tuple[Any, ...]
    # A leaf whose type has a module FLOPs formula that surely applies covers its own frame's work; a
    # leaf without one, or whose formula may refuse its forward, has its operators recorded.
    has_formula: bool = True
    calls: int = 0  # calls recorded so far: the next call's ``call_index``
    covers: bool = False  # a leaf with a formula that surely applies: its calls cover their frame


class CallRecorder:
    """Records every call of ``root``'s modules through two process-global module hooks.

    Global hooks cost O(1) to install and remove however deep the model is; calls of modules that
    are not part of ``root`` are ignored (their operators count towards the enclosing call). The
    post-hook is registered with ``always_call``: PyTorch then invokes it from its exception handler
    with three arguments instead of four, which is how a call that raised is recognised. Only calls
    made in the thread that installed the hooks are recorded: global hooks also fire for other
    threads' forwards, which belong to no report of this one. Remove with :meth:`remove`.
    """

    def __init__(
        self,
        root: nn.Module,
        *,
        estimator: Estimator | None = None,
        on_failure: FailureHandler | None = None,
        on_enter: EnterHandler | None = None,
    ) -> None:
        self.records: list[CallRecord] = []
        self.stack: list[int] = []
        # The innermost open record (``records[stack[-1]]``), read by the observer for every operator.
        self.current: CallRecord | None = None
        self.estimator = estimator
        self.on_failure = on_failure
        self.on_enter = on_enter
        self.observer: Any = None  # the OperatorObserver, suspended while estimating
        self.outside = 0  # FLOPs dispatched outside any module call (impossible for a root call)
        self.outside_complete = True
        self.outside_functional: dict[str, int] = {}
        self.state: dict[str, Any] = {}  # scratch space for extensions (ownership stack, ...)
        # The MetricResults of this analysis' leaf estimates, per estimate (estimate.materialize).
        self.estimate_results: dict[int, Any] = {}
        self._seen_tensors: set[int] = set()
        self._descriptions: dict[Any, ValueMeta] = {}  # see call_io
        self._calls_metric = calls_metric()
        self._handles: list[RemovableHandle] = []
        self._thread = threading.get_ident()  # reset by install()
        self.modules: list[nn.Module] = []
        self._info: dict[int, ModuleInfo] = {}
        self.depth = 0  # the deepest module's nesting level (the root is 0)
        per_class: dict[type, tuple[str, bool]] = {}  # type name, has a formula that surely applies
        info_of = self._info
        # root.named_modules()'s pre-order without recursion, as traversal.walk_modules walks it (a
        # module reachable twice keeps its first path), gathering each module's facts on the way.
        stack: list[tuple[str, nn.Module]] = [("", root)]
        while stack:
            path, module = stack.pop()
            key = id(module)
            if key in info_of:
                continue
            self.modules.append(module)
            cls = type(module)
            known = per_class.get(cls)
            if known is None:
                applies = registry.flops.lookup(cls) is not None and not registry.may_refuse(cls)
                known = per_class[cls] = (report_name(cls.__name__), applies)
            children = module._modules
            named = (
                [
                    (f"{path}.{report_name(n)}" if path else report_name(n), c)
                    for n, c in children.items()
                    if c is not None
                ]
                if children
                else None
            )
            params, buffers = module._parameters, module._buffers
            depth = path.count(".") + 1 if path else 0
            if depth > self.depth:
                self.depth = depth
            info_of[key] = ModuleInfo(
                path,
                depth,
                known[0],
                not named,
                tuple([t for t in params.values() if t is not None]) if params else (),
                tuple([t for t in buffers.values() if t is not None]) if buffers else (),
                known[1],
                0,
                not named and known[1],
            )
            if named:
                stack.extend(reversed(named))

    @property
    def infos(self) -> Iterable[ModuleInfo]:
        """What was gathered about each module of the model (own parameters/buffers included), pre-order."""
        return self._info.values()

    def path_of(self, module: nn.Module) -> str | None:
        """The module's (first) path in the model, or None for a module outside it."""
        info = self._info.get(id(module))
        return None if info is None else info.path

    def install(self) -> None:
        """Install the two global hooks (call :meth:`remove` in a ``finally``)."""
        self._thread = threading.get_ident()
        self._handles.append(register_module_forward_pre_hook(self._pre_hook))
        self._handles.append(
            register_module_forward_hook(self._post_hook, with_kwargs=True, always_call=True)
        )

    def remove(self) -> None:
        """Remove every hook this recorder installed (safe to call more than once)."""
        for handle in self._handles:
            handle.remove()
            # PyTorch's handle of a ``with_kwargs`` global forward hook does not remove its entry of
            # ``_global_forward_hooks_with_kwargs``: without this every analysis leaked one entry.
            module_globals._global_forward_hooks_with_kwargs.pop(handle.id, None)
        self._handles.clear()

    def _pre_hook(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        info = self._info.get(id(module))
        if info is not None and get_ident() == self._thread:
            self.enter(module, info, args)

    def _post_hook(self, module: nn.Module, args: tuple[Any, ...], *rest: Any) -> None:
        if not self.stack or get_ident() != self._thread or id(module) not in self._info:
            return
        if len(rest) == 2:
            self.exit(module, args, rest[0], rest[1])
        else:  # PyTorch's exception path: (module, args, result), the forward raised
            self.fail(module)

    # --- parameter attribution ----------------------------------------------------------------

    def attribute(
        self, params: tuple[nn.Parameter, ...], buffers: tuple[Any, ...]
    ) -> tuple[ParameterStats, BufferStats]:
        """Own parameters and buffers of one row, first-attributed: a tensor an earlier row already
        counted adds nothing here and marks the stats ``shared`` (analysis.md 5.5)."""
        if not params and not buffers:
            return (
                {"trainable": 0, "frozen": 0, "bytes": 0, "shared": False},
                {"elements": 0, "bytes": 0, "shared": False},
            )
        seen = self._seen_tensors
        trainable = frozen = p_bytes = 0
        p_shared = False
        for tensor in params:
            if id(tensor) in seen:
                p_shared = True
                continue
            seen.add(id(tensor))
            count = tensor.numel()
            p_bytes += count * tensor.element_size()
            if tensor.requires_grad:
                trainable += count
            else:
                frozen += count
        elements = b_bytes = 0
        b_shared = False
        for tensor in buffers:
            if id(tensor) in seen:
                b_shared = True
                continue
            seen.add(id(tensor))
            count = tensor.numel()
            elements += count
            b_bytes += count * tensor.element_size()
        return (
            {"trainable": trainable, "frozen": frozen, "bytes": p_bytes, "shared": p_shared},
            {"elements": elements, "bytes": b_bytes, "shared": b_shared},
        )

    # --- hook bodies --------------------------------------------------------------------------

    def enter(self, module: nn.Module, info: ModuleInfo, args: tuple[Any, ...]) -> None:
        """Pre-hook: open a record for this call and make it the innermost active call."""
        call_index = info.calls
        info.calls = call_index + 1
        parameters, buffer_stats = self.attribute(info.params, info.buffers)
        stack = self.stack
        records = self.records
        if len(args) == 1 and type(args[0]) in PLAIN_TENSORS:  # the common call: one tensor
            arg = args[0]
            args_meta: tuple[Any, ...] = (capture_meta(arg),)
            covers = info.covers
        else:
            args_meta = tuple([capture_meta(a) for a in args])
            covers = info.covers and not _tensorless(args)
        record = CallRecord(
            info.path,
            call_index,
            info.depth,
            info.type_name,
            stack[-1] if stack else -1,
            info.is_leaf,
            args_meta,
            parameters,
            buffer_stats,
            metrics={"calls": self._calls_metric},
            covers_own_frame=covers,
        )
        stack.append(len(records))
        records.append(record)
        self.current = record
        if self.on_enter is not None:
            self.on_enter(self, record, module)

    def exit(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any) -> None:
        """Post-hook of a call that returned: close the innermost record, then estimate it."""
        stack = self.stack
        record = self.records[stack.pop()]
        self.current = self.records[stack[-1]] if stack else None
        if kwargs:
            # Global pre-hooks do not receive keyword arguments; they are described here.
            record.kwargs_meta = {k: capture_meta(v) for k, v in kwargs.items()}
        record.output_meta = capture_meta(output)
        estimator = self.estimator
        if estimator is None:
            return
        observer = self.observer
        if observer is None:
            estimator(self, record, module, args, kwargs, output)
            return
        observer.suspended = True  # _suspended, inlined: this runs for every call of a full analysis
        try:
            estimator(self, record, module, args, kwargs, output)
        finally:
            observer.suspended = False

    def fail(self, module: nn.Module) -> None:
        """Post-hook of a call whose forward raised (the exception may be caught by a parent)."""
        stack = self.stack
        record = self.records[stack.pop()]
        self.current = self.records[stack[-1]] if stack else None
        record.failed = True
        record.output_meta = FAILED
        if self.on_failure is not None:
            self._suspended(self.on_failure, self, record, module)

    def _suspended(self, fn: Callable[..., None], *args: Any) -> None:
        observer = self.observer
        if observer is None:
            fn(*args)
            return
        observer.suspended = True
        try:
            fn(*args)
        finally:
            observer.suspended = False

    # --- descriptions for the report --------------------------------------------------------------

    def call_io(self, record: CallRecord) -> tuple[CallIO, ValueMeta]:
        """A record's ``input`` and ``output`` descriptions (analysis.md 5.4), built with the report.

        Equal tensor descriptions within one report are one dict (:attr:`_descriptions`).
        """
        cache = self._descriptions
        io: CallIO = {
            "args": [described(meta, cache) for meta in record.args_meta],
            "kwargs": {}
            if record.kwargs_meta is None
            else {k: described(v, cache) for k, v in record.kwargs_meta.items()},
        }
        return io, described(record.output_meta, cache)

    # --- operator attribution (AttributionSink) ------------------------------------------------

    def on_operator(
        self,
        name: str,
        flops: int,
        complete: bool,
        ignored: bool,
        kind: int = -1,
        args: tuple[Any, ...] = (),
        kwargs: Any = None,
        out: Any = None,
    ) -> None:
        """Attribute one dispatched operator to the innermost active call.

        Only a frame that no estimate covers keeps the call's metadata for its functional formula;
        operators whose functional estimate is always 0 (views, allocation) are not kept. (The observer
        adds an operator of a covered frame to :attr:`current` itself, without this call.)
        """
        if not self.stack:
            self.outside += flops
            self.outside_complete = self.outside_complete and complete
            if not ignored:
                self.outside_functional[name] = self.outside_functional.get(name, 0) + 1
            return
        record = self.records[self.stack[-1]]
        record.op_self += flops
        if not complete:
            record.op_self_complete = False
        if not record.covers_own_frame and name not in ZERO_COST:
            call = capture(name, kind, flops, complete, ignored, args, kwargs, out)
            if record.ops is None:
                record.ops = [call]
            else:
                record.ops.append(call)


def _tensorless(args: tuple[Any, ...]) -> bool:
    """Whether a call's positional arguments hold values but no tensor (``Identity(None)``, a size).

    Such a call of a leaf with a module formula gives the formula nothing to read: its operators are
    recorded instead, and it is estimated from them like a module without a formula (families.md 3).
    A keyword-only call keeps its formula (global pre-hooks do not see keywords).
    """
    if not args or isinstance(args[0], Tensor):
        return False  # the common call: a tensor first
    return first_tensor(args) is None


_SIGNATURES: dict[type, inspect.Signature | None] = {}


def ordered_inputs(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """The call's arguments ordered by ``forward``'s signature: positional, then keywords in order."""
    if not kwargs:
        return args
    cls = type(module)
    if cls not in _SIGNATURES:
        try:
            _SIGNATURES[cls] = inspect.signature(cls.forward)
        except (TypeError, ValueError):
            _SIGNATURES[cls] = None
    signature = _SIGNATURES[cls]
    if signature is None:
        return (*args, *kwargs.values())
    order = {name: i for i, name in enumerate(signature.parameters)}
    ordered = sorted(kwargs, key=lambda k: order.get(k, len(order)))
    return (*args, *(kwargs[k] for k in ordered))
