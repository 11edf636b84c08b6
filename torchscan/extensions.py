"""Custom module handlers: ``ModuleCall``, ``ModuleHandler``, ``ModuleEstimates`` (extensions spec Part 1).

A caller attaches an estimation callback to module classes for one analysis through
``crawl_module(..., custom_modules={MyModule: ModuleHandler(estimate)})``. This module holds the
public types, the registration checks (§2), handler selection through the MRO (§3), and the
normalization of what a callback returns into :class:`MetricResult`s with their labels and
diagnostics (§4). It runs no model and installs no hooks; the crawler calls it.

A caller's numbers mean what the caller's convention says: TorchScan checks their form (real,
finite, non-negative, right unit), never their truth.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict, TypeVar

from torch import nn

from torchscan.report.diagnostics import diagnostic, error_text, sanitize_text
from torchscan.report.schema import (
    ESTIMATE_FIELDS,
    FIELD_UNITS,
    METRIC_RESULT_KEYS,
    Diagnostic,
    MetricResult,
    Number,
    in_float_range,
    metric_result,
)

__all__ = [
    "HandlerOutcome",
    "ModuleCall",
    "ModuleEstimates",
    "ModuleHandler",
    "callback_identity",
    "resolve_handler",
    "run_caller_handler",
    "validate_custom_modules",
]

CUSTOM_METHOD_PREFIX = "custom_module_handler"


@dataclass(frozen=True)
class ModuleCall:
    """One completed module call as a callback sees it (§1.1).

    ``args`` are the very objects passed positionally, ``kwargs`` only the keywords actually passed
    (defaults are not added), ``output`` the exact object ``forward`` returned. Freezing is shallow:
    treat the referenced module and tensors as read-only.
    """

    module: nn.Module
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    output: Any


class ModuleEstimates(TypedDict, total=False):
    """What a callback returns: any subset of the six estimate fields (§1.3).

    Each value is an ``int``/``float`` (complete), a ``MetricResult`` mapping (its status is kept),
    or ``None`` (explicitly unavailable). ``dmas`` are logical element accesses under the caller's
    convention, not bytes and not hardware traffic.
    """

    module_flops: int | float | MetricResult | None
    macs: int | float | MetricResult | None
    dmas: int | float | MetricResult | None
    receptive_field: int | float | MetricResult | None
    effective_stride: int | float | MetricResult | None
    effective_padding: int | float | MetricResult | None


@dataclass(frozen=True)
class ModuleHandler:
    """A caller's estimation callback for one module class and the fields it owns inclusively (§1.2).

    Fields named in ``subtree_metrics`` cover the module's call *and every descendant call made
    during it*: descendants do not estimate them. Other returned fields cover the module's own call
    only and add to the descendants' values. Validation happens when an analysis starts.
    """

    estimate: Callable[[ModuleCall], ModuleEstimates]
    subtree_metrics: frozenset[str] = field(default_factory=frozenset)


@dataclass
class HandlerOutcome:
    """Normalized result of one handler run: supplied fields, their diagnostics, token object."""

    metrics: dict[str, MetricResult] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    token_dependencies: dict[str, Any] | None = None
    # Built-in handlers only (views-3.md 1): the inclusive estimate split along the module tree,
    # ``(module, {field: own share})`` pre-order with the handler's module first; empty otherwise.
    shares: list[tuple[Any, dict[str, int]]] = field(default_factory=list)


# --- registration (§2) --------------------------------------------------------------------------


def validate_custom_modules(custom_modules: object) -> dict[type[nn.Module], ModuleHandler]:
    """Snapshot and check ``custom_modules`` before anything runs; ``None`` and ``{}`` give ``{}``.

    Raises ``TypeError`` for a non-mapping, a key that is not an ``nn.Module`` subclass, or a value
    that is not a ``ModuleHandler`` with a callable ``estimate``; ``ValueError`` when
    ``subtree_metrics`` is not a ``frozenset`` of estimate-field names.
    """
    if custom_modules is None:
        return {}
    if not isinstance(custom_modules, Mapping):
        raise TypeError(
            f"custom_modules must be a mapping of module classes to ModuleHandler, "
            f"got {type(custom_modules).__name__}"
        )
    snapshot = dict(custom_modules.items())
    for key, handler in snapshot.items():
        if not (isinstance(key, type) and issubclass(key, nn.Module)):
            raise TypeError(f"custom_modules keys must be nn.Module subclasses, got {_describe(key)}")
        if not isinstance(handler, ModuleHandler):
            raise TypeError(
                f"custom_modules[{key.__name__}] must be a ModuleHandler, got {type(handler).__name__}"
            )
        if not callable(handler.estimate):
            raise TypeError(f"custom_modules[{key.__name__}].estimate must be callable")
        owned = handler.subtree_metrics
        if not isinstance(owned, frozenset):
            raise ValueError(
                f"custom_modules[{key.__name__}].subtree_metrics must be a frozenset, "
                f"got {type(owned).__name__}"
            )
        unknown = sorted(repr(name) for name in owned if name not in ESTIMATE_FIELDS)
        if unknown:
            raise ValueError(
                f"custom_modules[{key.__name__}].subtree_metrics names unknown fields {', '.join(unknown)}; "
                f"allowed: {', '.join(ESTIMATE_FIELDS)}"
            )
    return snapshot


def _describe(value: object) -> str:
    if isinstance(value, type):
        return f"class {value.__qualname__}"
    return f"a {type(value).__name__}"


# --- selection (§3) -----------------------------------------------------------------------------

H = TypeVar("H")


def resolve_handler(module_type: type, table: Mapping[type, H]) -> H | None:
    """Handler of the closest class of ``module_type.__mro__`` present in ``table``, or ``None``.

    Mapping order never matters and virtual (``abc``-registered) subclasses do not match.
    """
    if not table:
        return None
    for cls in module_type.__mro__:
        handler = table.get(cls)
        if handler is not None:
            return handler
    return None


# --- normalization (§4) -------------------------------------------------------------------------


def callback_identity(callback: object) -> str:
    """``<module>.<qualname>`` of a callback; a partial or callable instance uses its type's."""
    module = getattr(callback, "__module__", None)
    qualname = getattr(callback, "__qualname__", None)
    if not (isinstance(module, str) and isinstance(qualname, str)):
        module, qualname = type(callback).__module__, type(callback).__qualname__
    return f"{module}.{qualname}"


class _InvalidValue(ValueError):
    """One supplied field breaks §4.3; the message is the reason."""


def _number(value: object, label: str) -> Number:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _InvalidValue(f"{label} must be a real number, got {type(value).__name__}")
    number: Number = value if isinstance(value, int) else float(value)
    if not in_float_range(number) or number < 0:
        raise _InvalidValue(f"{label} must be finite and >= 0")
    return number


def _structured(value: Mapping, name: str, scope: str, method: str) -> MetricResult:
    keys = set(value.keys())
    if keys != set(METRIC_RESULT_KEYS):
        raise _InvalidValue(f"a MetricResult needs exactly the keys {', '.join(METRIC_RESULT_KEYS)}")
    status, unit = value["status"], value["unit"]
    if unit != FIELD_UNITS[name]:
        raise _InvalidValue(f"unit must be {FIELD_UNITS[name]!r}, got {unit!r}")
    for label in ("scope", "method"):
        if not isinstance(value[label], str) or not value[label]:
            raise _InvalidValue(f"{label} must be a non-empty string")
    supplied = f"{method}:{value['method']}"
    if status == "complete":
        number = _number(value["value"], "value")
        if _number(value["known_value"], "known_value") != number:
            raise _InvalidValue("a complete result needs value == known_value")
        return metric_result("complete", number, unit=unit, scope=scope, method=supplied)
    if status == "partial":
        if value["value"] is not None:
            raise _InvalidValue("a partial result has value None (its known_value is a lower bound)")
        known = _number(value["known_value"], "known_value")
        return metric_result("partial", known, unit=unit, scope=scope, method=supplied)
    if status == "unavailable":
        if value["value"] is not None or value["known_value"] is not None:
            raise _InvalidValue("an unavailable result has value and known_value None")
        return metric_result("unavailable", unit=unit, scope=scope, method=supplied)
    raise _InvalidValue(f"unknown status {status!r}")


def _normalize(value: object, name: str, scope: str, method: str) -> MetricResult:
    unit = FIELD_UNITS[name]
    if value is None:
        return metric_result("unavailable", unit=unit, scope=scope, method=method)
    if isinstance(value, Mapping):
        return _structured(value, name, scope, method)
    return metric_result("complete", _number(value, "a bare value"), unit=unit, scope=scope, method=method)


def _field_diagnostic(result: MetricResult, name: str, path: str, identity: str) -> Diagnostic | None:
    if result["status"] == "partial":
        message = f"{identity} returned a partial {name}: known_value is a lower bound only"
        return diagnostic("custom_metric_partial", message, metric=name, path=path)
    if result["status"] == "unavailable":
        message = f"{identity} reported {name} as unavailable"
        return diagnostic("custom_metric_unavailable", message, metric=name, path=path)
    return None


def _all_unavailable(
    requested: Iterable[str], owned: frozenset[str], method: str, code: str, message: str, path: str
) -> HandlerOutcome:
    outcome = HandlerOutcome()
    for name in requested:
        scope = "subtree" if name in owned else "module_call"
        outcome.metrics[name] = metric_result(
            "unavailable", unit=FIELD_UNITS[name], scope=scope, method=method
        )
        outcome.diagnostics.append(diagnostic(code, message, metric=name, path=path))
    return outcome


def run_caller_handler(
    handler: ModuleHandler, call: ModuleCall, requested: Iterable[str], path: str
) -> HandlerOutcome:
    """Run a caller's callback for the ``requested`` fields and normalize its answer (§4.1–§4.5).

    The outcome supplies every returned requested field and every owned requested field (an owned
    field the callback omitted becomes unavailable: ownership is a commitment). Omitted non-owned
    fields are absent so the fallback chain can fill them. Values for fields not requested (covered
    by an ancestor) are ignored without diagnostic. The crawler must suspend operator counting and
    ``no_grad`` around this call.
    """
    requested = set(requested)
    wanted = [name for name in ESTIMATE_FIELDS if name in requested]
    owned = handler.subtree_metrics
    identity = callback_identity(handler.estimate)
    method = f"{CUSTOM_METHOD_PREFIX}:{identity}"
    try:
        returned: Any = handler.estimate(call)
        keys = list(returned.keys()) if isinstance(returned, Mapping) else None
    except Exception as error:  # the caller's code: any failure is reported, never propagated
        message = f"{identity} raised {error_text(error)}"
        return _all_unavailable(wanted, owned, method, "custom_handler_error", message, path)
    if keys is None or any(not isinstance(k, str) or k not in FIELD_UNITS for k in keys):
        # Only string key names enter the message: reports never carry object representations.
        unknown = sorted(repr(k) for k in keys or () if isinstance(k, str) and k not in FIELD_UNITS)
        what = (
            type(returned).__name__
            if keys is None
            else f"unknown keys {', '.join(unknown) or '(non-string)'}"
        )
        message = f"{identity} must return a mapping of estimate fields, got {what}"
        return _all_unavailable(wanted, owned, method, "custom_handler_invalid", message, path)
    outcome = HandlerOutcome()
    present = set(keys)
    for name in wanted:
        scope = "subtree" if name in owned else "module_call"
        if name not in present:
            if name in owned:
                result = metric_result("unavailable", unit=FIELD_UNITS[name], scope=scope, method=method)
                message = f"{identity} omitted {name}, which it owns for its subtree"
                outcome.metrics[name] = result
                outcome.diagnostics.append(
                    diagnostic("custom_metric_unavailable", message, metric=name, path=path)
                )
            continue
        try:
            result = _normalize(returned[name], name, scope, method)
        except Exception as error:  # invalid value, or reading it raised
            # Both may quote caller objects (an invalid unit or status, a failing __getitem__).
            reason = sanitize_text(str(error)) if isinstance(error, _InvalidValue) else error_text(error)
            outcome.metrics[name] = metric_result(
                "unavailable", unit=FIELD_UNITS[name], scope=scope, method=method
            )
            message = f"{identity} returned an invalid {name}: {reason}"
            outcome.diagnostics.append(diagnostic("custom_metric_invalid", message, metric=name, path=path))
            continue
        outcome.metrics[name] = result
        found = _field_diagnostic(result, name, path, identity)
        if found is not None:
            outcome.diagnostics.append(found)
    return outcome
