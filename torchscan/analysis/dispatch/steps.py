"""Steps of a workload and operator bytes (generation.md 1): ``by_step``, ``outside_steps``, bytes.

:class:`StepObserver` is the operator observer of ``measure_flops(by_step=True)`` and
``measure_flops(bytes=True)``. It counts FLOPs exactly as :class:`OperatorObserver` does and, for
each counted operator call, files its FLOPs, its operator bytes and (for fused attention kernels)
its key and value bytes under the step running at that moment, or under ``outside_steps``.

A step is one top-level call of the step root: a call of the root while no other call of the root
is running on the measuring thread, recognised by a forward pre-hook and an ``always_call`` forward
hook on the root only. Because every counted call is filed exactly once, step FLOPs plus
``outside_steps`` equal the total exactly (the same holds for bytes), mirroring ``by_phase``.
The plain :class:`OperatorObserver` (``crawl_module``, ``measure_flops`` without these options)
is untouched: none of this runs per operator there.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from torch import nn

from torchscan.analysis.dispatch.observer import OperatorObserver
from torchscan.analysis.dispatch.operator_bytes import (
    UNSIZED_REASON,
    byte_rule,
    input_tokens,
    kv_bytes,
    operand_bytes,
)
from torchscan.analysis.dispatch.resolution import Entry
from torchscan.report.diagnostics import diagnostic
from torchscan.report.schema import (
    ATTENTION_KV_METHOD,
    NOT_APPLICABLE,
    OPERATOR_BYTES_METHOD,
    OPERATOR_METHOD,
    Diagnostic,
    FlopReport,
    FlopStep,
    MetricResult,
    OutsideSteps,
    metric_result,
)

NOT_FUSED_TEXT = (
    "ran no fused attention kernel but matrix products and a softmax: attention computed with plain "
    "matrix products (eager attention) has no operand identified as keys and values, so "
    "attention_kv_bytes is unavailable there."
)
NOT_APPLICABLE_TEXT = (
    "ran matrix products but no attention (no fused attention kernel, no softmax): a model "
    "without attention, such as an MLP or a recurrent or state-space model, reads no attention keys "
    "and values, so attention_kv_bytes is not_applicable there."
)


class Tally:
    """FLOPs, bytes and KV bytes of one step (or of the work outside steps)."""

    __slots__ = (
        "bytes",
        "bytes_gap",
        "flops",
        "flops_gap",
        "kv",
        "kv_gap",
        "kv_seen",
        "products",
        "softmax",
        "tokens",
    )

    def __init__(self, tokens: int | None = None) -> None:
        self.flops = 0
        self.flops_gap = False  # an operator of it was uncounted or unsupported
        self.bytes = 0
        self.bytes_gap = False  # an operand could not be sized
        self.kv = 0
        self.kv_gap = False
        self.kv_seen = False  # a fused attention kernel ran in it
        self.products = False  # a matrix product ran in it: attention may have run unfused
        self.softmax = False  # a softmax ran in it: with products, the signature of eager attention
        self.tokens = tokens

    def results(self, scope: str) -> tuple[MetricResult, MetricResult, MetricResult]:
        """``(flops, operator_bytes, attention_kv_bytes)`` results under ``scope``.

        KV bytes are counted when a fused attention kernel ran, and a complete 0 for work without
        any matrix product (sampling and stopping checks between decode steps read nothing).
        Model work that ran products: ``unavailable`` (``attention_not_fused``) when a softmax ran
        too, since attention may have run unfused; otherwise it ran no attention (an MLP, a recurrent
        or state-space model) and they are ``unavailable`` with method ``not_applicable``
        (truth.md 4, diagnostic ``attention_kv_not_applicable``).
        """
        flops = counted(self.flops, self.flops_gap, "FLOPs", scope, OPERATOR_METHOD)
        size = counted(self.bytes, self.bytes_gap, "bytes", scope, OPERATOR_BYTES_METHOD)
        if self.kv_seen or not self.products:  # a fused kernel, or no product: glue such as sampling
            kv = counted(self.kv, self.kv_gap, "bytes", scope, ATTENTION_KV_METHOD)
        elif self.softmax:
            kv = metric_result("unavailable", unit="bytes", scope=scope, method=ATTENTION_KV_METHOD)
        else:
            kv = metric_result("unavailable", unit="bytes", scope=scope, method=NOT_APPLICABLE)
        return flops, size, kv


def counted(value: int, gap: bool, unit: str, scope: str, method: str) -> MetricResult:
    """A counted sum: complete, or partial (``value`` a lower bound) when part of it was not counted."""
    return metric_result("partial" if gap else "complete", value, unit=unit, scope=scope, method=method)


class StepObserver(OperatorObserver):
    """An :class:`OperatorObserver` that also counts operator bytes and, with a root, steps.

    ``root`` (optional) is the step root; :meth:`attach` installs its two hooks and
    :meth:`detach` removes them (call it in a ``finally``). ``by_operator_bytes`` keeps bytes per
    operator name for the report's ``by_operator_bytes``.
    """

    def __init__(
        self,
        custom_mapping: Mapping[Any, Callable[..., int]] | None = None,
        *,
        root: nn.Module | None = None,
        by_operator_bytes: bool = False,
    ) -> None:
        super().__init__(custom_mapping)
        self.root = root
        self.outside = Tally()
        self.steps: list[Tally] = []
        self.current = self.outside
        self.operator_bytes: dict[str, int] | None = {} if by_operator_bytes else None
        self.unsized: dict[str, str] = {}  # operator -> reason its bytes are a lower bound
        self.unsized_kv: dict[str, str] = {}
        self._depth = 0
        self._thread = threading.get_ident()
        self._handles: list[Any] = []

    # --- steps ----------------------------------------------------------------------------------

    def attach(self) -> None:
        """Install the root's step hooks (forward pre-hook and ``always_call`` forward hook)."""
        if self.root is None:
            return
        self._thread = threading.get_ident()
        # first pre-hook and last forward hook of the root: the caller's own hooks on the root (and
        # the tensor work they do) belong to the step
        pre = self.root.register_forward_pre_hook(self._pre_hook, with_kwargs=True, prepend=True)
        self._handles.append(pre)
        self._handles.append(self.root.register_forward_hook(self._post_hook, always_call=True))

    def detach(self) -> None:
        """Remove the step hooks (idempotent); later operators would be outside any step."""
        handles, self._handles = self._handles, []
        for handle in handles:
            handle.remove()
        self._depth = 0
        self.current = self.outside

    def _pre_hook(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if threading.get_ident() != self._thread:
            return
        self._depth += 1
        if self._depth == 1:
            step = Tally(input_tokens(args, kwargs))
            self.steps.append(step)
            self.current = step

    def _post_hook(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        if threading.get_ident() != self._thread or not self._depth:
            return
        self._depth -= 1
        if not self._depth:
            self.current = self.outside

    # --- counting -------------------------------------------------------------------------------

    def _resolve(self, func: Any) -> Entry:
        entry = super()._resolve(func)
        entry.bytes_rule = byte_rule(func, entry)
        return entry

    def _count(
        self, entry: Entry, args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any
    ) -> tuple[int, bool, bool]:
        flops, complete, ignored = super()._count(entry, args, kwargs, out)
        tally = self.current
        tally.flops += flops
        if not complete:
            tally.flops_gap = True
        rule = entry.bytes_rule  # set by _resolve, the only source of this observer's entries
        if rule.product:
            tally.products = True
        elif rule.softmax:
            tally.softmax = True
        if rule.zero:
            size = 0
        else:
            size, sized = operand_bytes(args, kwargs, out, rule.out_names)
            tally.bytes += size
            if not sized:
                tally.bytes_gap = True
                self.unsized.setdefault(entry.name, UNSIZED_REASON)
            if rule.attention:
                kv, kv_sized = kv_bytes(args, kwargs)
                tally.kv_seen = True
                tally.kv += kv
                if not kv_sized:
                    tally.kv_gap = True
                    self.unsized_kv.setdefault(entry.name, UNSIZED_REASON)
        if self.operator_bytes is not None:
            self.operator_bytes[entry.name] = self.operator_bytes.get(entry.name, 0) + size
        return flops, complete, ignored

    # --- report ---------------------------------------------------------------------------------

    def report(self) -> FlopReport:
        """The FlopReport plus ``operator_bytes``, ``by_operator_bytes`` and the steps asked for."""
        report = super().report()
        known = self.outside.bytes + sum(step.bytes for step in self.steps)
        gap = self.outside.bytes_gap or any(step.bytes_gap for step in self.steps)
        report["operator_bytes"] = counted(known, gap, "bytes", "workload", OPERATOR_BYTES_METHOD)
        if self.operator_bytes is not None:
            report["by_operator_bytes"] = dict(sorted(self.operator_bytes.items()))
        extra = [
            diagnostic("unsupported_operator_bytes", reason, metric="operator_bytes", operator=name)
            for name, reason in sorted(self.unsized.items())
        ]
        extra += [
            diagnostic("unsupported_operator_bytes", reason, metric="attention_kv_bytes", operator=name)
            for name, reason in sorted(self.unsized_kv.items())
        ]
        if self.root is not None:
            report["by_step"] = self._steps()
            flops, size, kv = self.outside.results("outside_steps")
            outside: OutsideSteps = {"flops": flops, "operator_bytes": size, "attention_kv_bytes": kv}
            report["outside_steps"] = outside
            extra += self._not_fused(report["by_step"], kv)
            extra += self._not_applicable(report["by_step"], kv)
        report["diagnostics"] += extra
        return report

    def _steps(self) -> list[FlopStep]:
        steps: list[FlopStep] = []
        for index, step in enumerate(self.steps):
            flops, size, kv = step.results("step")
            steps.append(
                {
                    "index": index,
                    "flops": flops,
                    "operator_bytes": size,
                    "attention_kv_bytes": kv,
                    "input_tokens": step.tokens,
                }
            )
        return steps

    @staticmethod
    def _not_fused(steps: list[FlopStep], outside: MetricResult) -> list[Diagnostic]:
        """One ``attention_not_fused`` diagnostic naming every place whose KV bytes are unavailable."""
        text = _places(steps, outside, ATTENTION_KV_METHOD)
        if text is None:
            return []
        return [diagnostic("attention_not_fused", f"{text} {NOT_FUSED_TEXT}", metric="attention_kv_bytes")]

    @staticmethod
    def _not_applicable(steps: list[FlopStep], outside: MetricResult) -> list[Diagnostic]:
        """One ``attention_kv_not_applicable`` diagnostic naming every place that ran no attention."""
        text = _places(steps, outside, NOT_APPLICABLE)
        if text is None:
            return []
        message = f"{text} {NOT_APPLICABLE_TEXT}"
        # informational: not_applicable is no gap (nothing was owed), so it changes no status
        return [
            diagnostic("attention_kv_not_applicable", message, metric="attention_kv_bytes", severity="info")
        ]


def _places(steps: list[FlopStep], outside: MetricResult, method: str) -> str | None:
    """``Steps 0, 1 and the work outside steps``: where KV bytes are unavailable under ``method``."""

    def chosen(result: MetricResult) -> bool:
        return result["status"] == "unavailable" and result["method"] == method

    missing = [str(step["index"]) for step in steps if chosen(step["attention_kv_bytes"])]
    places = []
    if missing:
        shown = ", ".join(missing[:20]) + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
        places.append(f"step{'s' if len(missing) > 1 else ''} {shown}")
    if chosen(outside):
        places.append("the work outside steps")
    return " and ".join(places).capitalize() if places else None
