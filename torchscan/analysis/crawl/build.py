"""Records -> :class:`AnalysisReport`: layers, totals, functional formulas and strict mode."""

from __future__ import annotations

import platform
import sys
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

from torchscan._version import __version__
from torchscan.analysis.crawl.estimate import field_result, materialize
from torchscan.analysis.crawl.hooks import CallRecord, CallRecorder, ModuleInfo
from torchscan.analysis.crawl.inputs import device_name, dtype_name, qualified_name
from torchscan.analysis.crawl.uncalled import with_not_called_rows
from torchscan.analysis.dispatch.distributed import process_group_context
from torchscan.formulas import functional
from torchscan.formulas.functional import OperatorCall
from torchscan.report.diagnostics import concerns_requested_metric, deduplicate, diagnostic
from torchscan.report.names import report_name
from torchscan.report.schema import (
    COMPUTE_FIELDS,
    ESTIMATE_FIELDS,
    FIELD_UNITS,
    MODULE_FORMULA_METHOD,
    NOT_REQUESTED,
    OPERATOR_METHOD,
    SCHEMA_VERSION,
    AnalysisReport,
    Diagnostic,
    FlopReport,
    InputsMeta,
    LayerReport,
    MetricResult,
    in_float_range,
    metric_result,
)
from torchscan.runtime.torch_versions import untested_torch_diagnostics


class IncompleteAnalysisError(RuntimeError):
    """Raised by ``strict=True`` when a requested metric is incomplete; ``.report`` holds the report."""

    def __init__(self, report: AnalysisReport, metrics: list[str]) -> None:
        super().__init__("Incomplete analysis: " + ", ".join(metrics))
        self.report = report
        self.metrics = metrics


def _operator_result(status_complete: bool, known: int) -> MetricResult:
    return metric_result(
        "complete" if status_complete else "partial",
        known,
        unit="FLOPs",
        scope="module_call",
        method=OPERATOR_METHOD,
    )


_METRIC_INDEX = {"module_flops": 0, "macs": 1, "dmas": 2}


def _functional_estimates(
    ops: list[OperatorCall], cache: dict[OperatorCall, functional.Estimate]
) -> tuple[list[int | None], dict[str, int]]:
    """Sum the functional estimates of one frame's operators (equal calls are estimated once).

    Returns the three sums (``None`` where some operator is unestimated) and the unestimated
    operators with their call counts.
    """
    sums: list[int | None] = [0, 0, 0]
    missing: dict[str, int] = {}
    for op in ops:
        try:
            estimate = cache.get(op)
        except TypeError:  # an unhashable scalar argument: estimate without caching
            estimate = functional.estimate_call(op)
        else:
            if estimate is None:
                estimate = cache[op] = functional.estimate_call(op)
        gap = False
        for index, value in enumerate(estimate):
            if value is None:
                sums[index] = None
                gap = True
            elif sums[index] is not None:
                sums[index] += value  # type: ignore[operator]
        if gap:
            missing[op.name] = missing.get(op.name, 0) + 1
    return sums, missing


def apply_functional_formulas(records: list[CallRecord]) -> None:
    """real-models.md 1: estimate work no module formula covers from the operators that did it.

    Two kinds of frames: a composite call's own frame (operators outside any child call) and a leaf
    call without a module formula. Fields the call estimated itself (a handler) or that an ancestor
    owns are left alone; only an operator without a functional formula leaves a field unavailable.
    """
    cache: dict[OperatorCall, functional.Estimate] = {}
    for record in records:
        if record.covers_own_frame or record.failed or (not record.is_leaf and not record.ops):
            continue
        owners = record.metric_owners or {}
        fields = [name for name in COMPUTE_FIELDS if name not in record.metrics and name not in owners]
        if not fields:
            continue
        sums, missing = _functional_estimates(record.ops or [], cache)
        unavailable = []
        for name in fields:
            value = sums[_METRIC_INDEX[name]]
            if value is None:
                unavailable.append(name)
                record.metrics[name] = field_result(name, "unavailable")
            else:
                record.metrics[name] = field_result(name, "complete", value)
        # Estimates first, in canonical order, whatever path filled them (report order).
        metrics = record.metrics
        record.metrics = {
            "calls": metrics.pop("calls"),
            **{n: metrics.pop(n) for n in ESTIMATE_FIELDS if n in metrics},
        }
        record.metrics.update(metrics)
        if unavailable:
            listing = ", ".join(f"{op} ({calls} call(s))" for op, calls in sorted(missing.items()))
            where = "in its own forward" if not record.is_leaf else "inside it (no module formula applies)"
            record.diagnostics.append(
                diagnostic(
                    "unestimated_functional_work",
                    f"{record.type_name} ran operators {where} that no functional formula "
                    f"estimates: {listing}.",
                    metric=unavailable[0],
                    path=record.path,
                )
            )


def _layer(record: CallRecord, root_name: str, recorder: CallRecorder) -> LayerReport:
    call_input, call_output = recorder.call_io(record)
    layer: LayerReport = {
        "path": record.path,
        "call_index": record.call_index,
        # Interned: the same short names ("conv1", "0") recur across a deep model's rows.
        "name": sys.intern(record.path.rpartition(".")[2]) if record.path else root_name,
        "depth": record.depth,
        "type": record.type_name,
        "input": call_input,
        "output": call_output,
        "parameters": record.parameters,
        "buffers": record.buffers,
        "metrics": record.metrics,
    }
    if record.metric_ownership:
        layer["metric_ownership"] = record.metric_ownership  # type: ignore[typeddict-item]
    if record.metric_owners:
        layer["metric_owners"] = record.metric_owners  # type: ignore[typeddict-item]
    if record.token_dependencies is not None:
        layer["token_dependencies"] = record.token_dependencies
    return layer


def attach_operator_flops(records: list[CallRecord], layers: list[LayerReport]) -> None:
    """analysis.md 6.4: self and inclusive operator FLOPs per call, keyed by call identity."""
    inclusive = [r.op_self for r in records]
    complete = [r.op_self_complete for r in records]
    for index in range(len(records) - 1, -1, -1):
        parent = records[index].parent
        if parent >= 0:
            inclusive[parent] += inclusive[index]
            complete[parent] = complete[parent] and complete[index]
    # Rows with equal numbers share one result (MetricResults are never modified once built): a deep
    # model repeats the same few, and building each anew was a visible share of a full analysis.
    shared: dict[tuple[bool, int], MetricResult] = {}

    def result_for(is_complete: bool, known: int) -> MetricResult:
        result = shared.get((is_complete, known))
        if result is None:
            result = shared[is_complete, known] = _operator_result(is_complete, known)
        return result

    for index, (record, layer) in enumerate(zip(records, layers, strict=True)):
        metrics = layer["metrics"]
        metrics["operator_flops_self"] = result_for(record.op_self_complete, record.op_self)
        metrics["operator_flops"] = result_for(complete[index], inclusive[index])


def _out_of_range_totals(totals: Any, layers: list[LayerReport]) -> list[Diagnostic]:
    """A diagnostic for every compute total left unavailable because its rows overflow a float."""
    entries = []
    for name in COMPUTE_FIELDS:
        if totals[name]["status"] != "unavailable":
            continue
        known = [m["known_value"] for layer in layers if (m := layer["metrics"].get(name)) is not None]
        if any(value is not None for value in known):
            entries.append(
                diagnostic(
                    "total_out_of_range",
                    f"The {name} of the layers sum beyond the float range a report number must fit; "
                    "the total is unavailable (each layer keeps its own value).",
                    metric=name,
                )
            )
    return entries


def compute_totals(layers: Iterable[LayerReport]) -> dict[str, MetricResult]:
    """Each compute metric summed over every row that has it (formulas.md A.3, extensions 5.5).

    One pass over the rows for all three metrics; each metric's values are added in row order.
    """
    known: dict[str, int | float] = dict.fromkeys(COMPUTE_FIELDS, 0)
    seen = dict.fromkeys(COMPUTE_FIELDS, False)  # some row has a known value (complete or partial)
    complete = dict.fromkeys(COMPUTE_FIELDS, True)
    methods: dict[str, set[str]] = {name: set() for name in COMPUTE_FIELDS}
    for layer in layers:
        metrics = layer["metrics"]
        for name in COMPUTE_FIELDS:
            result = metrics.get(name)
            if result is None:
                continue
            methods[name].add(result["method"])
            if result["status"] != "complete":
                complete[name] = False
            if result["known_value"] is not None:
                seen[name] = True
                known[name] += result["known_value"]
    return {
        name: _compute_total(name, known[name], seen[name], complete[name], methods[name])
        for name in COMPUTE_FIELDS
    }


def _compute_total(
    name: str, known: int | float, seen: bool, complete: bool, methods: set[str]
) -> MetricResult:
    unit = FIELD_UNITS[name]
    estimate_methods = methods - {MODULE_FORMULA_METHOD, "forward_failed", "not_applicable"}
    method = (
        f"sum_module_estimates[{', '.join(sorted(methods))}]" if estimate_methods else MODULE_FORMULA_METHOD
    )
    if not seen or not in_float_range(known):
        # Rows that each fit a float can sum beyond the range (caller handlers): no number can be
        # reported, and build_report says why (total_out_of_range).
        return metric_result("unavailable", unit=unit, scope="forward", method=method)
    if complete:
        return metric_result("complete", known, unit=unit, scope="forward", method=method)
    return metric_result("partial", known, unit=unit, scope="forward", method=method)


def storage_totals(infos: Iterable[ModuleInfo]) -> tuple[dict[str, MetricResult], set[str], set[str]]:
    """Every unique parameter/buffer registered anywhere in the model, each counted once.

    Reads the own tensors the recorder already gathered per module, and also returns the devices
    and dtypes seen in them (for the report context).
    """
    trainable = frozen = p_bytes = b_elements = b_bytes = 0
    seen: set[int] = set()
    # Devices and dtypes as PyTorch's objects, named once each at the end (not once per tensor).
    device_objects: set[torch.device] = set()
    dtype_objects: set[torch.dtype] = set()
    for info in infos:
        for param in info.params:
            if id(param) in seen:
                continue
            seen.add(id(param))
            device_objects.add(param.device)
            dtype_objects.add(param.dtype)
            count = param.numel()
            p_bytes += count * param.element_size()
            if param.requires_grad:
                trainable += count
            else:
                frozen += count
        for buffer in info.buffers:
            if id(buffer) in seen:
                continue
            seen.add(id(buffer))
            device_objects.add(buffer.device)
            dtype_objects.add(buffer.dtype)
            count = buffer.numel()
            b_elements += count
            b_bytes += count * buffer.element_size()
    devices = {device_name(device) for device in device_objects}
    dtypes = {dtype_name(dtype) for dtype in dtype_objects}

    def model(value: int, unit: str) -> MetricResult:
        return metric_result("complete", value, unit=unit, scope="model", method="pytorch")

    totals = {
        "parameters": model(trainable + frozen, "elements"),
        "trainable_parameters": model(trainable, "elements"),
        "frozen_parameters": model(frozen, "elements"),
        "parameter_bytes": model(p_bytes, "bytes"),
        "buffer_elements": model(b_elements, "elements"),
        "buffer_bytes": model(b_bytes, "bytes"),
    }
    return totals, devices, dtypes


def _not_requested(unit: str, scope: str) -> MetricResult:
    return metric_result("unavailable", unit=unit, scope=scope, method=NOT_REQUESTED)


def build_report(
    module: nn.Module,
    recorder: CallRecorder,
    inputs: InputsMeta,
    input_tensors: Iterable[Any],
    *,
    mode: str,
    training_before: bool,
    operator_report: FlopReport,
) -> AnalysisReport:
    """Assemble the versioned report from the recorder's plain records."""
    records = recorder.records
    full = mode == "full"
    if full:
        cache = recorder.estimate_results
        for record in records:
            if record.estimate is not None:
                materialize(record, cache)  # plain leaf estimates become MetricResults here
        apply_functional_formulas(records)
    root_name = report_name(type(module).__name__.lower())
    layers = [_layer(record, root_name, recorder) for record in records]
    totals, devices, dtypes = storage_totals(recorder.infos)
    if full:
        attach_operator_flops(records, layers)
    # views-3.md 1: modules that never ran get rows too (own parameters over rows sum to the total)
    layers = with_not_called_rows(recorder, records, layers)
    if full:
        totals.update(compute_totals(layers))
        totals["operator_flops"] = operator_report["total"]
    diagnostics: list[Diagnostic] = []
    if full:
        diagnostics += _out_of_range_totals(totals, layers)
    else:
        for name in COMPUTE_FIELDS:
            totals[name] = _not_requested(FIELD_UNITS[name], "forward")
        totals["operator_flops"] = _not_requested("FLOPs", "workload")

    for record in records:
        diagnostics.extend(record.diagnostics)
    if full and (recorder.outside_functional or not recorder.outside_complete):
        diagnostics.append(
            diagnostic(
                "unattributed_operator",
                "Operators ran outside any module call: "
                + ", ".join(f"{op} ({n} call(s))" for op, n in sorted(recorder.outside_functional.items())),
                metric="operator_flops",
            )
        )
    diagnostics = deduplicate(diagnostics) + list(operator_report["diagnostics"])
    if not any(entry["code"] == "untested_torch_version" for entry in diagnostics):
        diagnostics += untested_torch_diagnostics()  # structure mode: no operator report carries it

    for tensor in input_tensors:
        devices.add(str(tensor.device))
        dtypes.add(str(tensor.dtype))
    report: AnalysisReport = {
        "schema_version": SCHEMA_VERSION,
        "context": {
            "torchscan_version": __version__,
            "torch_version": str(torch.__version__),
            "python_version": platform.python_version(),
            "model_type": qualified_name(type(module)),
            "execution_mode": "evaluation_no_grad",
            "training_before": training_before,
            "devices": sorted(devices),
            "dtypes": sorted(dtypes),
            "analysis_mode": "full" if full else "structure",
        },
        "inputs": inputs,
        "layers": layers,
        "totals": totals,
        "operator_flops": operator_report,
        "diagnostics": diagnostics,
    }
    # distributed.md 2: the process group of this rank, with the mesh its DTensors were seen on
    group = operator_report["context"].get("distributed") or process_group_context(None)
    if group is not None:
        report["context"]["distributed"] = group
    return report


def incomplete_metrics(report: AnalysisReport) -> list[str]:
    """Requested totals that are not complete, plus metrics named by diagnostics (analysis.md 7)."""
    names = {
        name
        for name, result in report["totals"].items()
        if result["method"] != NOT_REQUESTED and result["status"] != "complete"
    }
    # Diagnostics count when they concern a requested metric: a total, or a per-call compute field.
    # Receptive-field geometry is never a requested total (a leaf estimated from its operators has
    # unknown geometry by design, real-models.md 1), so its diagnostics inform without raising; the
    # views apply the same rule (concerns_requested_metric) to what they count as warnings.
    names.update(entry["metric"] for entry in report["diagnostics"] if concerns_requested_metric(entry))
    return sorted(names)


def enforce_strict(report: AnalysisReport) -> None:
    """Raise :class:`IncompleteAnalysisError` when any requested metric is incomplete."""
    missing = incomplete_metrics(report)
    if missing:
        raise IncompleteAnalysisError(report, missing)
