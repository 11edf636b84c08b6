"""Operator observation: one ``TorchDispatchMode`` that counts, ignores or reports every operator.

The observer is shared by ``measure_flops`` and ``crawl_module``. For each dispatched operator it
resolves exactly one formula (caller ``custom_mapping`` > TorchScan's reference-checked
``torchscan_flops_v1`` formula > PyTorch's ``FlopCounterMode`` formula for an operator TorchScan
never classified, torch-versions.md 1), or an "ignored" reason, or the pointwise fallback (that
per-overload decision and its helpers live in :mod:`torchscan.analysis.dispatch.resolution`), and
attributes the result to the innermost active
module call through an optional attribution sink. A C++ composite overload (seen under
``torch.inference_mode``) runs its C++ composite kernel, whose parts are observed one by one
(real-models.md 2.3, families.md 1).
Every counted call is also filed under its workload phase (:mod:`torchscan.analysis.dispatch.phases`).
Higher-order operators (``cond``, ``flex_attention``...) reach the observer as one call and are
observed through their callables, counted by their own formula or reported uncounted
(:mod:`torchscan.analysis.dispatch.higher_order`).
Nothing global is modified except PyTorch's optimizer step hooks and Dynamo's guard-complete hook
(``higher_order``), held only while the mode is active: PyTorch's registry is read, never written.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from torch.utils._python_dispatch import TorchDispatchMode

from torchscan.analysis.dispatch import distributed, higher_order, higher_order_counts
from torchscan.analysis.dispatch.dynamo_guard import DYNAMO, MODULES, guard, unguard
from torchscan.analysis.dispatch.kinds import (
    COMMUNICATION,
    CUSTOM,
    DECOMPOSED,
    HIGHER_ORDER,
    IGNORED,
    INHERITED,
    UNCOUNTED,
)
from torchscan.analysis.dispatch.operand_checks import (
    COMPLEX_VALUE,
    UNSUPPORTED_LAYOUT,
    any_complex,
    layout_unsupported,
    operand_flags,
)
from torchscan.analysis.dispatch.phases import PhaseTally
from torchscan.analysis.dispatch.reporting import flop_report, operator_diagnostics
from torchscan.analysis.dispatch.resolution import (
    Entry,
    native_registry,
    resolve,
    run_composite,
    wrap_caller_formula,
)
from torchscan.formulas import operators
from torchscan.report.diagnostics import error_text
from torchscan.report.schema import (
    MAX_NUMBER,
    Diagnostic,
    FlopReport,
)

LAYOUT_REASON = (
    "Shape FLOP formulas require dense strided tensors; sparse and nested layouts are unsupported."
)
COMPLEX_REASON = "Native shape formula does not account for real operations inside complex arithmetic."
NEGATIVE_REASON = (
    "TorchScan's formula gave a negative count for this call (a formula defect); it is not counted."
)


class FrameTally(Protocol):
    """The FLOP tally of one open module call, updated directly for a frame its estimates cover."""

    op_self: int
    op_self_complete: bool
    covers_own_frame: bool


class AttributionSink(Protocol):
    """Receives each counted operator for per-call attribution (the hook recorder implements it).

    ``current`` is the innermost open call (None outside any): an operator dispatched in a frame whose
    estimates cover it needs only its FLOPs added there, which the observer does without a call.
    """

    @property
    def current(self) -> FrameTally | None:
        """The innermost open call's tally, or None."""

    def on_operator(
        self,
        name: str,
        flops: int,
        complete: bool,
        ignored: bool,
        kind: int,
        args: tuple[Any, ...],
        kwargs: Any,
        out: Any,
    ) -> None:
        """One counted call; ``kind``/``args``/``kwargs``/``out`` feed functional formulas."""


class OperatorObserver(higher_order.HigherOrderSupport, TorchDispatchMode):
    """Counts operator FLOPs of everything dispatched while active.

    ``suspended`` lets hooks run formulas and callbacks without their own tensor work being
    observed. ``sink`` (optional) attributes each operator to the innermost module call.
    """

    def __init__(self, custom_mapping: Mapping[Any, Callable[..., int]] | None = None) -> None:
        super().__init__()
        self.custom_mapping = custom_mapping
        self.native = native_registry()
        self._custom = {packet: wrap_caller_formula(f) for packet, f in (custom_mapping or {}).items()}
        # Keyed by id(func): an OpOverload hashes through a Python method, once per operator. The
        # resolved overloads are kept alive in _resolved, so an id is never reused meanwhile.
        self._entries: dict[int, Entry] = {}
        self._resolved: list[Any] = []
        self.suspended = False
        self.sink: AttributionSink | None = None
        # measure.module_labels.ModuleLabels when by_module is wanted: it reads ``attributed``, the
        # running sum of the FLOPs attributed so far, when a label enters and when it leaves.
        self.module_labels: Any = None
        self.attributed = 0
        self.by_operator: dict[str, int] = {}
        self.ignored: dict[str, int] = {}
        self.ignored_reasons: dict[str, str] = {}
        self.uncounted: dict[str, int] = {}
        self.unsupported: dict[str, str] = {}
        self.incomplete: dict[str, str] = {}
        # Operators only an unchecked inherited formula could count: name -> (calls, its FLOPs)
        self.unverified: dict[str, tuple[int, int]] = {}
        self.phases = PhaseTally()
        self.distributed = distributed.DistributedTally()  # DTensor logical work, collectives
        self._entered = 0
        self._known = 0  # sum of by_operator, kept within MAX_NUMBER by _add
        # The inline paths of __torch_dispatch__ do what _count does: a subclass extending _count
        # (the bytes and steps observer) has every call go through it.
        self._inline = type(self)._count is OperatorObserver._count
        self._unguarded = False

    def __enter__(self) -> OperatorObserver:
        # The mode re-enters itself to observe decompositions: the optimizer step hooks are installed
        # once, by the outermost entry, and removed by its exit (also when the workload raised).
        if self._entered == 0:
            self.phases.install()
            self._unguarded = unguard(self)  # analysis/dispatch/dynamo_guard.py
        self._entered += 1
        try:
            super().__enter__()
        except BaseException:
            self._leave()
            raise
        return self

    def __exit__(self, *exc_info: Any) -> None:
        try:
            super().__exit__(*exc_info)
        finally:
            self._leave()

    def _leave(self) -> None:
        self._entered -= 1
        if self._entered == 0:
            self.phases.remove()
            self._unguarded = guard(self)

    def _resolve(self, func: Any) -> Entry:
        """Resolve an overload once (:func:`operator_resolution.resolve`) and cache the decision."""
        if higher_order.is_higher_order(func):
            entry = Entry(higher_order.operator_name(func), HIGHER_ORDER, None)
        else:
            entry = resolve(func, self._custom, self.native)
        self._entries[id(func)] = entry
        self._resolved.append(func)
        return entry

    def counter(self) -> OperatorObserver:
        """A fresh observer with this one's caller formulas, to count a callable's work on its own."""
        return OperatorObserver(self.custom_mapping)

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        if self._unguarded and DYNAMO in MODULES:
            self._unguarded = guard(self)  # Dynamo was loaded during the workload: guarded from now on
        kwargs = kwargs or {}
        if self.suspended or (self.distributed.depth and self.distributed.skip()):
            return func(*args, **kwargs)  # skip(): DTensor's sharding propagation on fake tensors
        entry = self._entries.get(id(func)) or self._resolve(func)
        if types or not self._inline:  # a tensor subclass (DTensor, fake, jagged): the general path
            return self._observe(entry, func, types, args, kwargs)
        fast = entry.fast
        if fast is not None:
            # One pass for an ordinary call of a TorchScan formula (analysis/dispatch/fast_counts.py); what it
            # cannot answer is counted by _count, which records why the call is not counted in full.
            out = func(*args, **kwargs)
            flops = fast(args, kwargs, out)
            if flops is None or self._known + flops > MAX_NUMBER:
                return self._file(entry, *self._count(entry, args, kwargs, out), args, kwargs, out)
            self._known += flops
            by_operator = self.by_operator
            by_operator[entry.name] = by_operator.get(entry.name, 0) + flops
            if flops:
                self.phases.add_counted(flops)
                self.attributed += flops
        elif entry.kind == IGNORED:
            out = func(*args, **kwargs)
            name = entry.name
            self.ignored[name] = self.ignored.get(name, 0) + 1
            if name not in self.ignored_reasons:
                self.ignored_reasons[name] = entry.reason or ""
            flops = 0
        else:
            return self._observe(entry, func, types, args, kwargs)
        sink = self.sink
        if sink is not None:
            frame = sink.current
            if frame is not None and frame.covers_own_frame:
                frame.op_self += flops
            else:
                ignored = fast is None  # the IGNORED branch above
                sink.on_operator(entry.name, flops, True, ignored, entry.kind, args, kwargs, out)
        return out

    def _observe(self, entry: Entry, func: Any, types: Any, args: tuple[Any, ...], kwargs: Any) -> Any:
        """The general path of one call: higher-order, decomposed and DTensor calls, every kind."""
        if entry.kind == HIGHER_ORDER and entry.name in higher_order.TRANSPARENT:
            return higher_order.run_observed(self, func, args, kwargs)  # its parts are observed
        if entry.kind == DECOMPOSED and not layout_unsupported(args, kwargs):
            # Re-entering the mode observes every part as an ordinary dispatched operator (counted,
            # attributed to the sink and listed in by_operator under its own name); the composite
            # itself is never reported. A call with a nested or sparse argument is not decomposed: the
            # composite kernel hands such layouts back to the operator itself (endless recursion); it
            # runs below, once, and the layout guard names it (B.7.4).
            with self:
                return run_composite(func, args, kwargs)
        if types and self.distributed.is_dtensor_call(types):
            # counted at global shapes for logical_total; its local operators come back as executed
            return self.distributed.dtensor_call(self, entry, func, args, kwargs)
        out = func(*args, **kwargs)
        return self._file(entry, *self._count(entry, args, kwargs, out), args, kwargs, out)

    def _file(
        self,
        entry: Entry,
        flops: int,
        complete: bool,
        ignored: bool,
        args: tuple[Any, ...],
        kwargs: Any,
        out: Any,
    ) -> Any:
        """File one counted call under its phase, its module call (the sink) and ``attributed``."""
        if flops or not complete:  # a counted or ignored zero changes no phase: skip the lookup
            self.phases.add(flops, complete)
        sink = self.sink
        if sink is not None:
            frame = sink.current
            if frame is not None and frame.covers_own_frame:
                frame.op_self += flops
                if not complete:
                    frame.op_self_complete = False
            elif entry.kind == HIGHER_ORDER:  # its callables and options are not kept per call
                operands = higher_order.operands(args)
                sink.on_operator(entry.name, flops, complete, ignored, entry.kind, operands, {}, None)
            else:
                sink.on_operator(entry.name, flops, complete, ignored, entry.kind, args, kwargs, out)
        if flops:
            self.attributed += flops  # by_module: each running label's interval reads the sum
        return out

    def _count(
        self, entry: Entry, args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any
    ) -> tuple[int, bool, bool]:
        """Count one call; returns ``(flops, complete, ignored)`` and records diagnostics state."""
        name, kind = entry.name, entry.kind
        if kind == IGNORED or (entry.ignore_when is not None and entry.ignore_when(args, kwargs)):
            self.ignored[name] = self.ignored.get(name, 0) + 1
            if name not in self.ignored_reasons:
                self.ignored_reasons[name] = entry.reason or ""
            return 0, True, True
        if kind == UNCOUNTED:
            self.uncounted[name] = self.uncounted.get(name, 0) + 1
            return 0, False, False
        if kind == COMMUNICATION:
            self.distributed.record_collective(name, args)
            return 0, True, True
        if kind == DECOMPOSED:  # reached only with a sparse or nested argument (above)
            self.unsupported.setdefault(name, LAYOUT_REASON)
            return 0, False, False
        if kind == HIGHER_ORDER:
            return self._count_higher_order(name, args, kwargs)
        formula = entry.formula
        assert formula is not None
        if kind == CUSTOM:
            return (*self._count_custom(name, formula, args, kwargs, out), False)
        if kind == INHERITED:
            return self._count_inherited(entry, formula, args, kwargs, out)
        if layout_unsupported(args, kwargs):
            self.unsupported.setdefault(name, LAYOUT_REASON)
            return 0, False, False
        try:
            flops = int(formula(args, kwargs, out))
        except operators.UnsupportedOperatorFormula as error:
            self.unsupported.setdefault(name, str(error))
            return 0, False, False
        if flops < 0:  # a formula defect must surface as a gap, never as an exception after the workload
            self.unsupported.setdefault(name, NEGATIVE_REASON)
            return 0, False, False
        if not self._add(name, flops):
            return 0, False, False
        return flops, True, False

    def _count_inherited(
        self,
        entry: Entry,
        formula: Callable[..., int],
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        out: Any,
    ) -> tuple[int, bool, bool]:
        """PyTorch's own formula for an operator TorchScan has none for (torch-versions.md 1).

        Counted only where the reference suite checked it on this torch (``entry.verified``); an
        unchecked formula's FLOPs are kept apart (:attr:`unverified`) and left out of every total, so a
        partial total stays a lower bound whatever that formula gets wrong.
        """
        name = entry.name
        # One pass finds both what stops the count (a layout) and what makes it partial (complex)
        flags = operand_flags(args) | (operand_flags(kwargs.values()) if kwargs else 0)
        if flags & UNSUPPORTED_LAYOUT:
            self.unsupported.setdefault(name, LAYOUT_REASON)
            return 0, False, False
        try:
            flops = int(formula(*args, **kwargs, out_val=out))
        except Exception as error:  # PyTorch's formula cannot describe this call: report it
            self.unsupported.setdefault(
                name, f"PyTorch's native formula failed on this call: {error_text(error)}"
            )
            return 0, False, False
        if not entry.verified:
            calls, known = self.unverified.get(name, (0, 0))
            self.unverified[name] = (calls + 1, known + flops)
            return 0, False, False
        if not self._add(name, flops):
            return 0, False, False
        if flags & COMPLEX_VALUE or any_complex((out,)):
            self.incomplete.setdefault(name, COMPLEX_REASON)
            return flops, False, False
        return flops, True, False

    def _count_higher_order(
        self, name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> tuple[int, bool, bool]:
        """A HOP that ran as one call: counted by its formula, or uncounted (it has none)."""
        try:
            counted = higher_order_counts.count(self.counter, name, args, kwargs)
        except operators.UnsupportedOperatorFormula as error:
            self.unsupported.setdefault(name, str(error))
            return 0, False, False
        if counted is None:
            self.uncounted[name] = self.uncounted.get(name, 0) + 1
            return 0, False, False
        flops, gap = counted
        if not self._add(name, flops):
            return 0, False, False
        if gap is not None:  # counted, but known to leave out the work ``gap`` names
            self.incomplete.setdefault(name, gap)
            return flops, False, False
        return flops, True, False

    def _add(self, name: str, flops: int) -> bool:
        """File one call's result under ``by_operator``, unless the sum would leave the float range.

        Every other sum of a report (``total``, ``by_phase``, ``by_module``, a layer's operator FLOPs)
        is part of this running total, so keeping it at most :data:`MAX_NUMBER` keeps them all
        representable: a call that would overflow it is reported and contributes 0, and the total
        becomes partial (its known value a true lower bound) instead of raising after the workload.
        """
        known = self._known + flops
        if known > MAX_NUMBER:
            self.unsupported.setdefault(
                name,
                f"Counting this call of {name} would take the operator FLOPs beyond the float range "
                "a report number must fit; it is not counted.",
            )
            return False
        self._known = known
        self.by_operator[name] = self.by_operator.get(name, 0) + flops
        return True

    def _count_custom(
        self,
        name: str,
        formula: Callable[..., int],
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        out: Any,
    ) -> tuple[int, bool]:
        # Caller formulas keep full control (no layout or dtype guards), but a failing or invalid
        # formula must never become a silent zero: the call is reported instead.
        try:
            value = formula(*args, **kwargs, out_val=out)
        except Exception as error:  # a caller bug must not crash the analysis
            self.unsupported.setdefault(name, f"Caller formula for {name} raised {error_text(error)}")
            return 0, False
        if type(value) is int and value > MAX_NUMBER:
            # math.isfinite would raise OverflowError, and a report number must fit a float
            self.unsupported.setdefault(
                name, f"Caller formula for {name} returned an int beyond the float range."
            )
            return 0, False
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value < 0
        ):
            self.unsupported.setdefault(
                name,
                f"Caller formula for {name} returned {type(value).__name__}, "
                "not a finite non-negative number.",
            )
            return 0, False
        if isinstance(value, float) and not float(value).is_integer():
            # FLOP counts are integers: truncating 0.9 to a complete 0 would hide the formula's bug
            self.unsupported.setdefault(
                name, f"Caller formula for {name} returned {value!r}, not an integral FLOP count."
            )
            return 0, False
        flops = int(value)
        if not self._add(name, flops):
            return 0, False
        return flops, True

    # --- report -------------------------------------------------------------------------------

    def diagnostics(self) -> list[Diagnostic]:
        """Operator diagnostics in the order of formulas.md B.4."""
        return operator_diagnostics(self.unsupported, self.uncounted, self.unverified, self.incomplete)

    def report(self) -> FlopReport:
        """The :class:`FlopReport` of everything observed so far."""
        return flop_report(self)

    def by_module(self) -> dict[str, int]:
        """FLOPs per running module label (``measure_flops``' ``by_module``, before renaming)."""
        return {} if self.module_labels is None else self.module_labels.flops_by_label()
