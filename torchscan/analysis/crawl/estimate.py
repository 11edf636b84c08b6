"""Per-call estimation in the post-hook: module formulas turned into statuses (formulas.md A.2).

:func:`estimate_leaf` fills one leaf call's metrics; the per-call fallback chain that decides when it
runs (handlers and subtree ownership first) lives in ``analysis/crawl/ownership.py``.
Formulas stay pure; the translation of their signals (not recognised, unsupported configuration,
warnings, missing tensors) into MetricResults and diagnostics happens only here.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from typing import Any

from torch import nn

from torchscan.analysis.crawl.hooks import CallRecord, CallRecorder, ordered_inputs
from torchscan.analysis.crawl.inputs import qualified_name
from torchscan.analysis.crawl.leaf_memo import LeafMemo, leaf_key, zero_signs
from torchscan.formulas import ragged, registry
from torchscan.formulas.tensors import first_tensor
from torchscan.report.diagnostics import diagnostic, sanitize_text
from torchscan.report.metric import copy_result
from torchscan.report.schema import (
    COMPUTE_FIELDS,
    ESTIMATE_FIELDS,
    FIELD_UNITS,
    MODULE_FORMULA_METHOD,
    NOT_APPLICABLE,
    SPATIAL_FIELDS,
    MetricResult,
    metric_result,
)


def field_result(
    field: str, status: str, value: float | None = None, method: str = MODULE_FORMULA_METHOD
) -> MetricResult:
    """A per-call estimate field with its unit and ``module_call`` scope (spatial fields signed)."""
    return metric_result(
        status,  # type: ignore[arg-type]
        value,
        unit=FIELD_UNITS[field],
        scope="module_call",
        method=method,
        signed=field in SPATIAL_FIELDS,
    )


class _Outcome:
    """What one formula did: a value, a reason it could not, or 'not recognised'."""

    __slots__ = ("error", "not_recognised", "value", "warnings")

    def __init__(self) -> None:
        self.value: Any = None
        self.error: Exception | None = None
        self.not_recognised = False
        self.warnings: list[str] = []


def _run(formula: Callable[..., Any] | None, *args: Any) -> _Outcome:
    """Run one formula, translating its signals; warnings are attributed by the caller."""
    outcome = _Outcome()
    if formula is None:
        outcome.not_recognised = True
        return outcome
    try:
        outcome.value = formula(*args)
    except registry.NotRecognised:
        outcome.not_recognised = True
    except NotImplementedError as error:
        outcome.error = error
    return outcome


def _run_watched(formula: Callable[..., Any] | None, *args: Any) -> _Outcome:
    """Like :func:`_run`, recording the warnings this one formula emitted."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome = _run(formula, *args)
    outcome.warnings = [str(w.message) for w in caught]
    return outcome


def _error_message(error: Exception) -> str:
    """``"<ExceptionClass>: <reason>"``, naming the public class (``NotImplementedError``)."""
    name = (
        "NotImplementedError"
        if isinstance(error, registry.UnsupportedConfiguration)
        else type(error).__name__
    )
    return f"{name}: {error}"


def _unsupported_message(module: nn.Module) -> str:
    return f"Module type not supported: {type(module).__name__}"


def _class_path(module: nn.Module) -> str:
    """The sanitized dotted path of a module's class, for the ``custom_modules=`` key a person writes."""
    return sanitize_text(qualified_name(type(module)), 200)


def estimate_leaf(
    record: CallRecord,
    module: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    output: Any,
    fields: tuple[str, ...] = ESTIMATE_FIELDS,
    memo: LeafMemo | None = None,
) -> None:
    """Apply the built-in leaf formulas to ``fields`` of one call, recording statuses and diagnostics.

    A call whose formulas all succeed silently keeps its six numbers in ``record.estimate`` (turned
    into MetricResults by :func:`materialize` when the report is built). ``memo`` keeps those numbers
    per :func:`~torchscan.analysis.crawl.leaf_memo.leaf_key`: a later call the formulas cannot tell apart
    gets them without running the formulas.
    """
    cls = type(module)
    plan = registry.leaf_formulas(cls)
    if fields == ESTIMATE_FIELDS and plan is not None:
        key = None if memo is None else leaf_key(module, plan, args, kwargs, output)
        if key is not None:
            # the key admits only positional plain tensors and one plain tensor output
            assert memo is not None
            estimate = memo.get(key)
            if estimate is None:
                estimate = _estimate_silently(plan, module, args, output, args[0], output)
                if estimate is not None:
                    memo.put(key, estimate)
            if estimate is not None:
                record.estimate = estimate
                return
    path = record.path
    metrics = record.metrics
    inputs = ordered_inputs(module, args, kwargs)
    inp = first_tensor(inputs)
    out = first_tensor(output)
    if fields == ESTIMATE_FIELDS and inp is not None and out is not None and plan is not None:
        estimate = _estimate_silently(plan, module, inputs, output, inp, out)
        if estimate is not None:
            record.estimate = estimate
            return
    compute = [f for f in COMPUTE_FIELDS if f in fields]
    spatial = [f for f in SPATIAL_FIELDS if f in fields]
    if (inp is None or out is None) and registry.flops.lookup(cls) is not None:
        if not record.covers_own_frame:
            # Called without a tensor (a positional module given a torch.Size, a length or offsets):
            # its operators were recorded and functional formulas estimate it at build time
            # (families.md 3, real-models.md 1 (b)) instead of leaving it unknown.
            for name in spatial:
                metrics[name] = field_result(name, "unavailable")
            if spatial:
                record.diagnostics.append(
                    diagnostic(
                        "missing_metric_tensor",
                        "The call exposed no input tensor, so its receptive field cannot be estimated.",
                        metric=spatial[0],
                        path=path,
                    )
                )
            return
        for name in compute:
            metrics[name] = field_result(name, "unavailable")
            side = "input" if inp is None else "output"
            record.diagnostics.append(
                diagnostic(
                    "missing_metric_tensor",
                    f"The call exposed no {side} tensor, so {name} cannot be estimated.",
                    metric=name,
                    path=path,
                )
            )
        for name in spatial:
            metrics[name] = field_result(name, "unavailable")
        return
    if inp is not None and out is not None and (inp.is_nested or out.is_nested):
        # truth.md 6: a row-wise family counts a ragged call as its rows laid out densely; any other
        # family refuses the nested tensor below (unavailable, with the formula's reason).
        stand_in = ragged.dense_call(module, inputs, inp, out)
        if stand_in is not None:
            inputs, inp, out = stand_in
            output = out
    # Formulas are pure and normally silent: watch warnings once for the whole call, and only
    # when something warned re-run each formula alone to attribute the messages (A.2).
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcomes = _evaluate(module, cls, compute, bool(spatial), inputs, output, inp, out, _run)
    if caught:
        outcomes = _evaluate(module, cls, compute, bool(spatial), inputs, output, inp, out, _run_watched)
    for name in compute:
        _record_compute(record, module, name, outcomes[name])
    if spatial:
        _record_spatial(record, module, spatial, outcomes["spatial"])


def _estimate_silently(
    plan: tuple[Callable[..., Any], ...],
    module: nn.Module,
    inputs: tuple[Any, ...],
    output: Any,
    inp: Any,
    out: Any,
) -> tuple[Any, ...] | None:
    """The common case in one pass: every formula recognises the call, succeeds and stays silent.

    Returns the plain estimate ``(flops, macs, dmas, spatial)``: three counts and the receptive-field
    triple, or ``None`` for it when the formula says it does not apply (unavailable as
    ``not_applicable``, exactly as the general path records it). Anything else (a formula that does
    not recognise the call, an unsupported configuration, a warning) returns None, and the general
    path re-runs the pure formulas one by one.
    """
    flops_of, macs_of, dmas_of, field_of = plan
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            flops = flops_of(module, inputs, output)
            macs = macs_of(module, inp, out)
            dmas = dmas_of(module, inp, out)
            spatial = field_of(module, inp, out)
        except (registry.NotRecognised, NotImplementedError):
            return None
    if caught:
        return None
    return (int(flops), int(macs), int(dmas), None if spatial is None else tuple(spatial))


def _estimate_results(estimate: tuple[Any, ...]) -> dict[str, MetricResult]:
    """The six MetricResults of a plain estimate, in report order (fresh objects for each report).

    The validated results are kept per process under :func:`_template_key` (an estimate's numbers
    with their types and signs decide them entirely) and copied, without validating again, for each
    report that needs them.
    """
    key = _template_key(estimate)
    if key is None:
        return _build_estimate_results(estimate)
    templates = _RESULT_TEMPLATES.get(key)
    if templates is None:
        if len(_RESULT_TEMPLATES) >= _MAX_TEMPLATES:
            _RESULT_TEMPLATES.clear()
        templates = _RESULT_TEMPLATES[key] = _build_estimate_results(estimate)
    return {name: copy_result(result) for name, result in templates.items()}


def _template_key(estimate: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """``estimate`` with its spatial numbers' types and zero signs: ``1 == 1.0`` and ``0.0 == -0.0`` would
    otherwise share results that print differently. None for a value of another type."""
    spatial = estimate[3]
    if spatial is None:
        return estimate
    types = tuple(map(type, spatial))
    if not _NUMBERS.issuperset(types):
        return None
    return (estimate, types, zero_signs(spatial) if float in types else ())


# Validated MetricResults per estimate: six small dicts per entry, bounded as the leaf memo is (a zoo
# model needs tens to a few hundred).
_RESULT_TEMPLATES: dict[tuple[Any, ...], dict[str, MetricResult]] = {}
_MAX_TEMPLATES = 4096
_NUMBERS = frozenset({int, float})


def _build_estimate_results(estimate: tuple[Any, ...]) -> dict[str, MetricResult]:
    results = {
        name: field_result(name, "complete", count)
        for name, count in zip(COMPUTE_FIELDS, estimate[:3], strict=True)
    }
    spatial = estimate[3]
    if spatial is None:
        for name in SPATIAL_FIELDS:
            results[name] = field_result(name, "unavailable", method=NOT_APPLICABLE)
    else:
        for name, value in zip(SPATIAL_FIELDS, spatial, strict=True):
            results[name] = field_result(name, "complete", value)
    return results


def materialize(record: CallRecord, cache: dict[int, Any]) -> None:
    """Turn a record's plain estimate into its six MetricResults (issue #36: built with the report).

    ``cache`` belongs to one analysis: rows holding the same estimate object (one memo entry) share
    one set of results within the report. It keeps each estimate alive, so an id is never reused.
    """
    estimate = record.estimate
    if estimate is None:
        return
    record.estimate = None
    known = cache.get(id(estimate))
    if known is None:
        known = cache[id(estimate)] = (estimate, _estimate_results(estimate))
    record.metrics.update(known[1])


def _evaluate(
    module: nn.Module,
    cls: type,
    compute: list[str],
    spatial: bool,
    inputs: tuple[Any, ...],
    output: Any,
    inp: Any,
    out: Any,
    run: Callable[..., _Outcome],
) -> dict[str, _Outcome]:
    outcomes: dict[str, _Outcome] = {}
    for name in compute:
        if name == "module_flops":
            outcomes[name] = run(registry.flops.lookup(cls), module, inputs, output)
        else:
            table = registry.macs if name == "macs" else registry.dmas
            outcomes[name] = run(table.lookup(cls), module, inp, out)
    if spatial:
        outcomes["spatial"] = run(registry.receptive_field.lookup(cls), module, inp, out)
    return outcomes


def _record_compute(record: CallRecord, module: nn.Module, name: str, outcome: _Outcome) -> None:
    path = record.path
    if (outcome.not_recognised or outcome.error is not None) and not record.covers_own_frame:
        # No module formula applies (none registered, or the inherited one refuses this forward):
        # functional formulas estimate the operators it dispatched at build time (real-models.md 1 (b)).
        return
    if outcome.not_recognised:
        record.metrics[name] = field_result(name, "partial", 0)
        record.diagnostics.append(
            diagnostic(
                "unsupported_module_metric",
                _unsupported_message(module),
                metric=name,
                path=path,
                class_path=_class_path(module),
            )
        )
    elif outcome.error is not None:
        record.metrics[name] = field_result(name, "unavailable")
        record.diagnostics.append(
            diagnostic(
                "module_metric_error",
                _error_message(outcome.error),
                metric=name,
                path=path,
                class_path=_class_path(module),
            )
        )
    elif outcome.warnings:
        record.metrics[name] = field_result(name, "partial", int(outcome.value))
        record.diagnostics.append(
            diagnostic("module_metric_warning", "; ".join(outcome.warnings), metric=name, path=path)
        )
    else:
        record.metrics[name] = field_result(name, "complete", int(outcome.value))


def _record_spatial(record: CallRecord, module: nn.Module, fields: list[str], outcome: _Outcome) -> None:
    path, metrics = record.path, record.metrics
    first = fields[0]
    if outcome.not_recognised:
        for name in fields:
            metrics[name] = field_result(name, "unavailable")
        record.diagnostics.append(
            diagnostic(
                "unsupported_module_metric",
                _unsupported_message(module),
                metric=first,
                path=path,
                class_path=_class_path(module),
            )
        )
    elif outcome.error is not None:
        for name in fields:
            metrics[name] = field_result(name, "unavailable")
        record.diagnostics.append(
            diagnostic(
                "module_metric_error",
                _error_message(outcome.error),
                metric=first,
                path=path,
                class_path=_class_path(module),
            )
        )
    elif outcome.value is None:
        for name in fields:
            metrics[name] = field_result(name, "unavailable", method=NOT_APPLICABLE)
    else:
        triple = dict(zip(SPATIAL_FIELDS, outcome.value, strict=True))
        status = "partial" if outcome.warnings else "complete"
        for name in fields:
            metrics[name] = field_result(name, status, triple[name])
        if outcome.warnings:
            record.diagnostics.append(
                diagnostic("module_metric_warning", "; ".join(outcome.warnings), metric=first, path=path)
            )


def leave_unsupported(record: CallRecord, module: nn.Module, fields: Iterable[str], reason: str) -> None:
    """truth.md 6: the ``fields`` no formula filled stay ``unavailable`` with ``unsupported_module_metric``.

    For a leaf whose custom handler omitted a compute field that no built-in module formula covers:
    the functional fallback (real-models.md 1) is not applied to it, so a zero nobody measured never
    reads as complete. ``reason`` completes the message (which handler omitted what).
    """
    metrics = record.metrics
    missing = [name for name in fields if name not in metrics]
    if not missing:
        return
    for name in missing:
        metrics[name] = field_result(name, "unavailable")
        record.diagnostics.append(
            diagnostic(
                "unsupported_module_metric",
                f"{_unsupported_message(module)}; {reason}",
                metric=name,
                path=record.path,
                class_path=_class_path(module),
            )
        )
    # Estimates in canonical order after ``calls``, as every other path leaves them (report order).
    head = {key: metrics[key] for key in ("calls",) if key in metrics}
    estimates = {name: metrics[name] for name in ESTIMATE_FIELDS if name in metrics}
    rest = {key: value for key, value in metrics.items() if key not in head and key not in estimates}
    record.metrics = {**head, **estimates, **rest}


def record_failure(recorder: CallRecorder, record: CallRecord, module: nn.Module) -> None:
    """A forward that raised inside a model that caught it (analysis.md 4, extensions 8)."""
    record.diagnostics.append(
        diagnostic(
            "module_forward_error",
            f"The forward call of {record.type_name} raised; an enclosing module caught the exception. "
            "Keyword arguments of a call that raised are not observable, so its input.kwargs is empty.",
            metric="calls",
            path=record.path,
        )
    )
    if record.is_leaf and recorder.observer is not None:
        for name in COMPUTE_FIELDS + SPATIAL_FIELDS:
            record.metrics[name] = field_result(name, "unavailable", method="forward_failed")
