"""``measure_scaling``: how a workload's cost grows with its size (attention-and-scaling.md 2).

For every size of one axis (or every combination of a grid) ``build`` makes the workload and the
existing collectors measure it in separate passes: ``measure_flops(bytes=True)`` for operator FLOPs
and bytes (with a module-label tracker mapping ``by_module`` labels to class names),
``measure_memory`` for the ledger's peak and ``measure_latency`` for the warmed block median. The
pure builders of :mod:`torchscan.measure.scaling_report` then fit each series.
"""

from __future__ import annotations

import contextlib
import inspect
import platform
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import torch
from torch import nn

from torchscan._version import __version__
from torchscan.analysis.crawl.inputs import default_placement
from torchscan.measure.flops import measure_flops
from torchscan.measure.latency import measure_latency
from torchscan.measure.memory import measure_memory
from torchscan.measure.module_labels import ModuleLabels
from torchscan.measure.progress import ProgressCallback, check_progress, start_progress
from torchscan.measure.scaling_report import build_fits, check_metrics, check_sizes, grid, size_text
from torchscan.report.diagnostics import deduplicate, diagnostic, error_text
from torchscan.report.names import report_name
from torchscan.report.sanitize import sanitize_text
from torchscan.report.scaling_schema import (
    BREAKDOWN_METRICS,
    BUILD_ERROR,
    LATENCY_IQR,
    METRIC_UNITS,
    ScalingContext,
    ScalingPoint,
    ScalingReport,
)
from torchscan.report.schema import SCHEMA_VERSION, Diagnostic, MetricResult, metric_result
from torchscan.runtime.arguments import ArgumentTypeError
from torchscan.runtime.device import resolve_device

PROGRESS_PHASE = "scaling"
"""The phase ``progress`` callbacks hear: points done of all points (``0`` first)."""
UNAVAILABLE = "unavailable"
_SCOPES = {"latency": "warmed_block_average", LATENCY_IQR: "warmed_block_average"}

Workload = Callable[[], object]
_FAILED = object()  # a point whose build raised: nothing to measure
_KIND_WORDS = {"module": "(model, args, kwargs) tuple", "callable": "zero-argument callable"}


class _TypedLabels(ModuleLabels):
    """The module tracker of ``measure_flops``'s ``by_module``, also remembering each module's class.

    Entered beside ``measure_flops``'s own tracker, it sees the same calls in the same order and so
    gives every module the same label; :meth:`types` maps those labels to class names.
    """

    def __init__(self) -> None:
        super().__init__()
        self.modules: dict[int, nn.Module] = {}

    def label(self, module: nn.Module) -> str:
        self.modules.setdefault(id(module), module)
        return super().label(module)

    def types(self) -> tuple[dict[str, str], list[str]]:
        """``{label: class name}`` and the labels that name modules of different classes."""
        found: dict[str, set[str]] = {}
        for module in self.modules.values():
            found.setdefault(self.label(module), set()).add(report_name(type(module).__name__))
        self.modules.clear()
        clashes = sorted(label for label, names in found.items() if len(names) > 1)
        return {label: next(iter(names)) for label, names in found.items() if len(names) == 1}, clashes


def by_module_type(by_module: Mapping[str, int], types: Mapping[str, str]) -> dict[str, int]:
    """Inclusive values per module class: each label of a class, except those inside another of it.

    ``by_module`` is inclusive (a label counts its children's work), so a class's value is the sum
    over its outermost instances; an ``nn.Sequential`` inside an ``nn.Sequential`` is not counted
    twice. Labels are dotted paths from a root named after its class.
    """
    totals: dict[str, int] = {}
    for label, value in by_module.items():
        kind = types.get(label)
        if kind is None:
            continue
        parts = label.split(".")
        if any(types.get(".".join(parts[:cut])) == kind for cut in range(1, len(parts))):
            continue
        totals[kind] = totals.get(kind, 0) + value
    return dict(sorted(totals.items()))


# --- arguments and build --------------------------------------------------------------------------


def _check_device(device: object, metrics: Sequence[str]) -> str | None:
    """The normalised device name; meta is refused for latency, an unusable device always."""
    if device is None:
        return None
    if not isinstance(device, str | torch.device):
        raise ArgumentTypeError(f"device must be None, a str or a torch.device, got {type(device).__name__}")
    try:
        parsed = torch.device(device)
    except (RuntimeError, ValueError) as error:
        raise ValueError(f"invalid device {device!r}: {error}") from error
    if parsed.type == "meta":
        if "latency" in metrics:
            raise ValueError(
                "latency cannot be timed on the meta device; drop 'latency' or use a real device"
            )
        return "meta"
    return resolve_device(parsed).name


def _zero_argument(function: Callable[..., object]) -> bool:
    try:
        inspect.signature(function).bind()
    except TypeError:
        return False
    except ValueError:  # no signature to read (a builtin): trust the caller
        return True
    return True


def _workload_kind(result: object, where: str) -> str:
    """``"module"`` or ``"callable"``; ``TypeError`` naming the size and what ``build`` returned."""
    if isinstance(result, tuple) and len(result) == 3 and isinstance(result[0], nn.Module):
        _model, args, kwargs = result
        if not isinstance(args, tuple | list):
            raise ArgumentTypeError(
                f"{where} returned (model, args, kwargs) with args a {type(args).__name__}"
            )
        if not isinstance(kwargs, Mapping) or not all(isinstance(key, str) for key in kwargs):
            raise ArgumentTypeError(
                f"{where} returned (model, args, kwargs) with kwargs not a str-keyed mapping"
            )
        return "module"
    if isinstance(result, nn.Module):
        raise ArgumentTypeError(
            f"{where} returned an nn.Module ({report_name(type(result).__name__)}); return (model, args, "
            "kwargs) or a zero-argument callable"
        )
    if callable(result) and _zero_argument(result):
        return "callable"
    shown = "a callable that needs arguments" if callable(result) else f"a {type(result).__name__}"
    raise ArgumentTypeError(
        f"{where} returned {shown}, not a zero-argument workload or a (model, args, kwargs) tuple"
    )


def _call_build(build: Callable[..., object], sizes: Mapping[str, int]) -> object:
    """``build(n)`` for one axis, ``build(axis=n, ...)`` for a grid."""
    if len(sizes) == 1:
        return build(next(iter(sizes.values())))
    return build(**sizes)


@contextlib.contextmanager
def _prepared(result: object, kind: str) -> Iterator[Workload]:
    """The zero-argument workload of one point; a module runs in eval mode under ``no_grad``.

    The model's training flags are set to eval for the point's passes and restored afterwards,
    also when a pass raises.
    """
    if kind == "callable":
        yield result  # type: ignore[misc]
        return
    model: nn.Module = result[0]  # type: ignore[index]
    arguments: tuple[Any, ...] = tuple(result[1])  # type: ignore[index]
    keywords: dict[str, Any] = dict(result[2])  # type: ignore[index]
    flags = [(module, module.training) for module in model.modules()]

    def workload() -> None:
        with torch.no_grad():
            model(*arguments, **keywords)

    model.eval()
    try:
        yield workload
    finally:
        for module, training in flags:
            module.training = training


# --- passes -----------------------------------------------------------------------------------------


def _unavailable(name: str) -> MetricResult:
    unit = METRIC_UNITS.get(name, "seconds")
    return metric_result("unavailable", unit=unit, scope=_SCOPES.get(name, "workload"), method=UNAVAILABLE)


class _Point:
    """Collects one point's results, failures and diagnostics."""

    def __init__(self, index: int, sizes: dict[str, int], metrics: Sequence[str]) -> None:
        self.sizes = sizes
        self.metrics = metrics
        self.entry: dict[str, Any] = {"index": index, "sizes": dict(sizes)}
        self.errors: dict[str, str] = {}
        self.notes: list[Diagnostic] = []
        self.failures: list[Diagnostic] = []
        breakdown = [m for m in BREAKDOWN_METRICS if m in metrics]
        if breakdown:
            self.entry["by_operator"] = {m: {} for m in breakdown}
            self.entry["by_module_type"] = {m: {} for m in breakdown}

    def fail(self, what: str, error: Exception, names: Sequence[str]) -> None:
        self.errors[what] = sanitize_text(type(error).__name__, 80)
        for name in names:
            self.entry[name] = _unavailable(name)
        self.failures.append(
            diagnostic(
                "scaling_point_failed",
                f"{'build' if what == BUILD_ERROR else what} at {size_text(self.sizes)} raised "
                f"{error_text(error)}; {', '.join(names)} unavailable at this size, the fits use the "
                "other points",
                metric=names[0] if len(names) == 1 else "points",
            )
        )

    def finish(self) -> ScalingPoint:
        if self.errors:
            self.entry["errors"] = dict(self.errors)
        return self.entry  # type: ignore[return-value]


def _flops_pass(point: _Point, workload: Workload) -> None:
    wanted = [m for m in BREAKDOWN_METRICS if m in point.metrics]
    labels = _TypedLabels()
    try:
        with labels:
            report = measure_flops(workload, bytes=True)
    except Exception as error:
        point.fail("flops" if "flops" in wanted else wanted[0], error, wanted)
        return
    types, clashes = labels.types()
    if "flops" in wanted:
        point.entry["flops"] = dict(report["total"])
        point.entry["by_operator"]["flops"] = dict(report["by_operator"])
        point.entry["by_module_type"]["flops"] = by_module_type(report["by_module"], types)
    if "operator_bytes" in wanted:
        point.entry["operator_bytes"] = dict(report["operator_bytes"])
        point.entry["by_operator"]["operator_bytes"] = dict(report.get("by_operator_bytes", {}))
    point.notes.extend(report["diagnostics"])
    for label in clashes:
        point.notes.append(
            diagnostic(
                "scaling_module_type_ambiguous",
                f"modules of different classes share the label {label!r}; it is left out of by_module_type",
                metric="flops",
            )
        )


def _memory_pass(point: _Point, workload: Workload, device: str | None, model: nn.Module | None) -> None:
    try:
        report = measure_memory(workload, device=device, modules=model, timeline=False, progress=False)
    except Exception as error:
        point.fail("memory_peak", error, ["memory_peak"])
        return
    point.entry["memory_peak"] = dict(report["peak"])
    point.notes.extend(report["diagnostics"])


def _latency_pass(point: _Point, workload: Workload, device: str) -> None:
    try:
        report = measure_latency(workload, device=device, progress=False)
    except Exception as error:
        point.fail("latency", error, ["latency", LATENCY_IQR])
        return
    point.entry["latency"] = dict(report["totals"]["latency"])
    point.entry[LATENCY_IQR] = dict(report["totals"]["latency_iqr"])


def _measure_point(point: _Point, result: object, kind: str, device: str | None) -> None:
    model = result[0] if kind == "module" else None  # type: ignore[index]
    with _prepared(result, kind) as workload:
        if any(m in point.metrics for m in BREAKDOWN_METRICS):
            _flops_pass(point, workload)
        if "memory_peak" in point.metrics:
            _memory_pass(point, workload, device, model)
        if "latency" in point.metrics:
            timing_device = device or (str(default_placement(model)[1]) if model is not None else "cpu")
            _latency_pass(point, workload, timing_device)


# --- the API ----------------------------------------------------------------------------------------


def measure_scaling(
    build: Callable[..., object],
    sizes: Mapping[str, Sequence[int]],
    *,
    metrics: Sequence[str] = ("flops", "operator_bytes"),
    device: str | torch.device | None = None,
    progress: bool | ProgressCallback | None = None,
) -> ScalingReport:
    """Measure a workload at several sizes and fit how each metric grows (attention-and-scaling.md 2).

    ``sizes`` is one axis (``{"seq": [64, 128, 256, 512]}``) or several (a grid of every
    combination). ``build(n)`` (one axis) or ``build(seq=n, batch=m)`` (a grid) returns the workload
    of that size: a zero-argument callable, or ``(model, args, kwargs)``, run as one eval-mode
    ``model(*args, **kwargs)`` under ``torch.no_grad()`` (training flags restored afterwards).
    ``metrics``: ``"flops"`` (operator FLOPs), ``"operator_bytes"``, ``"memory_peak"`` (the storage
    ledger's peak; on meta tensors with ``device="meta"``) and ``"latency"`` (warmed block median with
    its IQR; ``device`` or the model's device, else CPU). Each is a separate pass per point.

    ``fits[metric][axis]`` gives, along the axis with the other axes at their largest sizes: the
    exact polynomial (rational Newton interpolation, lowest degree, confirmed by at least one spare
    point; ``degree`` ``None`` when the counts are not polynomial over the points), residuals per
    point, the log-log ``exponent`` between the two largest sizes, and the same per operator and
    per module type for FLOPs (per operator for bytes). Latency is fitted by least squares, labelled
    ``least_squares``, never exact. A partial point makes its fits partial.

    What these numbers do NOT mean: a fit describes the measured sizes; an exponent between two sizes
    is not an asymptotic order, and a polynomial is no promise beyond the largest size measured.
    Latency fits are of noisy medians on this machine. Module-type fits are inclusive and nest.

    Bad arguments raise ``TypeError``/``ValueError`` before anything runs; ``build`` is first called
    for the first size, and an exception there (re-raised as ``ValueError``) or a result that is no
    workload (``TypeError``) also stops everything before any measurement. At a later size a non-
    workload result is a ``TypeError``; an exception of ``build`` or of any pass leaves that point's
    metrics unavailable (``errors`` names the exception type) and the fits use the other points.
    ``progress`` as in ``measure_latency``, phase ``scaling``: points done of all points.
    """
    if not callable(build):
        raise ArgumentTypeError(f"build must be callable (size -> workload), got {type(build).__name__}")
    axes = check_sizes(sizes)
    selected = check_metrics(metrics)
    check_progress(progress)
    device_name = _check_device(device, selected)
    combos = grid(axes)
    try:
        first = _call_build(build, combos[0])
    except Exception as error:
        where = size_text(combos[0])
        raise ValueError(
            f"build raised {error_text(error)} for the first size {where}; nothing was measured"
        ) from error
    kind = _workload_kind(first, f"build({size_text(combos[0])})")
    context = _context(device_name, selected, kind, first)
    reporter = start_progress(progress)
    points: list[ScalingPoint] = []
    notes: list[Diagnostic] = []
    failures: list[Diagnostic] = []
    try:
        for index, combo in enumerate(combos):
            if reporter is not None:  # one update per point: no throttling (points are slow)
                reporter.update(PROGRESS_PHASE, index, len(combos), final=True)
            point = _Point(index, combo, selected)
            if index == 0:
                result, first = first, None  # the first workload is released once measured
            else:
                result = _build_later(build, combo, kind, point)
            if result is not _FAILED:
                _measure_point(point, result, kind, device_name)
            del result
            points.append(point.finish())
            notes.extend(point.notes)
            failures.extend(point.failures)
        if reporter is not None:
            reporter.update(PROGRESS_PHASE, len(combos), len(combos), final=True)
    finally:
        if reporter is not None:
            reporter.close()
    fits, fit_notes = build_fits(axes, points, selected)
    return {
        "schema_version": SCHEMA_VERSION,
        "report_type": "scaling",
        "context": context,
        "axes": axes,
        "points": points,
        "fits": fits,
        # the collectors' own diagnostics repeat at every size and are folded; point failures and fit
        # notes name their size or axis, so each stays
        "diagnostics": [*deduplicate(notes), *failures, *fit_notes],
    }


def _build_later(build: Callable[..., object], combo: dict[str, int], kind: str, point: _Point) -> object:
    """The workload of a later size, or :data:`_FAILED` (recorded on ``point``) when ``build`` raised.

    A result that is no workload, or not of the first size's kind, is a ``TypeError``: the sweep stops.
    """
    try:
        result = _call_build(build, combo)
    except Exception as error:
        keys = [*point.metrics, LATENCY_IQR] if "latency" in point.metrics else list(point.metrics)
        point.fail(BUILD_ERROR, error, keys)
        return _FAILED
    where = f"build({size_text(combo)})"
    if _workload_kind(result, where) != kind:
        raise ArgumentTypeError(
            f"{where} returned a {_KIND_WORDS[_workload_kind(result, where)]}, but the first size gave a "
            f"{_KIND_WORDS[kind]}; return the same kind at every size"
        )
    return result


def _context(device: str | None, metrics: list[str], kind: str, first: object) -> ScalingContext:
    model_type = report_name(type(first[0]).__name__) if kind == "module" else None  # type: ignore[index]
    return {
        "torchscan_version": __version__,
        "torch_version": str(torch.__version__),
        "python_version": platform.python_version(),
        "device": device,
        "metrics": list(metrics),
        "workload": "module" if kind == "module" else "callable",
        "model_type": model_type,
    }
