"""Built-in complete-call handlers: the native Transformer family (extensions spec §3, §12–§13).

A built-in handler estimates a whole call (the module and every descendant it runs) and owns the
fields it covers for its subtree, exactly like a caller handler with ``subtree_metrics``. Its
formulas live in :mod:`torchscan.formulas.attention_costs` and :mod:`torchscan.formulas.tokens`;
this module only turns their numbers and refusals into MetricResults, diagnostics and the
``token_dependencies`` object. Built-in handlers never use the ``custom_*`` diagnostic codes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from torch import nn

from torchscan.extensions import HandlerOutcome, ModuleCall
from torchscan.formulas.attention import NATIVE_TYPES
from torchscan.formulas.attention_costs import native_dmas, native_flops, native_macs
from torchscan.formulas.attention_layers import native_spec
from torchscan.formulas.attention_shares import native_shares
from torchscan.formulas.tensors import first_tensor
from torchscan.formulas.tokens import token_dependencies, unavailable_token_dependencies
from torchscan.report.diagnostics import diagnostic, error_text
from torchscan.report.schema import (
    COMPUTE_FIELDS,
    ESTIMATE_FIELDS,
    FIELD_UNITS,
    MODULE_FORMULA_METHOD,
    NOT_APPLICABLE,
    SPATIAL_FIELDS,
    metric_result,
)

ALL_FIELDS = frozenset(ESTIMATE_FIELDS)
_COSTS = {"module_flops": native_flops, "macs": native_macs, "dmas": native_dmas}


@dataclass(frozen=True)
class BuiltinHandler:
    """A complete-call handler shipped with TorchScan.

    ``estimate(call, requested, path)`` supplies every requested field it knows (and the row's
    ``token_dependencies`` when it estimates ``receptive_field``); ``subtree_metrics`` are the
    fields it owns inclusively.
    """

    estimate: Callable[[ModuleCall, frozenset[str], str], HandlerOutcome]
    subtree_metrics: frozenset[str]


def _error_text(error: BaseException) -> str:
    # The error may come from a caller's subclass or inputs: its text is sanitized like any caller's.
    return error_text(error)


def _unavailable(outcome: HandlerOutcome, name: str, method: str = MODULE_FORMULA_METHOD) -> None:
    outcome.metrics[name] = metric_result(
        "unavailable", unit=FIELD_UNITS[name], scope="subtree", method=method
    )


def _token_failure(outcome: HandlerOutcome, reason: str, path: str) -> None:
    outcome.token_dependencies = unavailable_token_dependencies()
    message = f"Token dependencies are unavailable: {reason}"
    outcome.diagnostics.append(
        diagnostic("unsupported_token_dependencies", message, metric="token_dependencies", path=path)
    )


def estimate_native(call: ModuleCall, requested: Iterable[str], path: str) -> HandlerOutcome:
    """Module FLOPs, MACs, logical DMAs and token dependencies of one native call (§12–§16).

    Spatial fields are ``not_applicable`` (no diagnostic): token modules describe their token axis
    through ``token_dependencies`` instead. A refused configuration makes the field unavailable with
    ``module_metric_error``; it never falls back to a dense upper bound, and the subtree stays owned.
    """
    wanted = frozenset(requested)
    outcome = HandlerOutcome()
    for name in SPATIAL_FIELDS:
        if name in wanted:
            _unavailable(outcome, name, NOT_APPLICABLE)
    compute = [name for name in COMPUTE_FIELDS if name in wanted]
    tokens = "receptive_field" in wanted
    module = call.module
    if first_tensor(call.output) is None:
        for name in compute:
            _unavailable(outcome, name)
            message = (
                f"The {type(module).__name__} call returned no activation tensor, so {name} is unavailable."
            )
            outcome.diagnostics.append(diagnostic("missing_metric_tensor", message, metric=name, path=path))
        if tokens:
            _token_failure(outcome, "the call returned no activation tensor", path)
        return outcome
    spec: Any = None
    error: Exception | None = None
    try:
        spec = native_spec(module, call.args, call.kwargs)
    except Exception as exc:  # a refused configuration, or anything the boundary did not foresee
        error = exc
    used: dict[str, Any] = {}  # field -> the spec its value came from (for the shares)
    for name in compute:
        try:
            if spec is not None:
                used[name] = spec
            elif name == "module_flops" and type(module) is nn.MultiheadAttention:
                # The narrower module-FLOP boundary of §15.6 (zero batch, masks only counted).
                used[name] = native_spec(module, call.args, call.kwargs, strict=False)
            else:
                raise error  # type: ignore[misc]
            value = _COSTS[name](used[name])
        except Exception as exc:
            used.pop(name, None)
            _unavailable(outcome, name)
            outcome.diagnostics.append(
                diagnostic("module_metric_error", _error_text(exc), metric=name, path=path)
            )
            continue
        outcome.metrics[name] = metric_result(
            "complete", value, unit=FIELD_UNITS[name], scope="subtree", method=MODULE_FORMULA_METHOD
        )
    outcome.shares = _shares(module, used)
    if tokens:
        try:
            if spec is None:
                raise error  # type: ignore[misc]
            outcome.token_dependencies = token_dependencies(spec)
        except Exception as exc:
            _token_failure(outcome, _error_text(exc), path)
    outcome.metrics = {name: outcome.metrics[name] for name in ESTIMATE_FIELDS if name in outcome.metrics}
    return outcome


def _shares(module: nn.Module, used: dict[str, Any]) -> list[tuple[Any, dict[str, int]]]:
    """The complete fields' split along the module tree (views-3.md 1), one entry per submodule."""
    merged: dict[int, tuple[Any, dict[str, int]]] = {}
    by_spec: dict[int, list[tuple[nn.Module, tuple[int, int, int]]]] = {}
    for name, spec in used.items():
        if id(spec) not in by_spec:
            by_spec[id(spec)] = native_shares(module, spec)
            if len({id(entry[0]) for entry in by_spec[id(spec)]}) != len(by_spec[id(spec)]):
                return []  # one module instance used twice (a shared layer): no one row per share
        position = COMPUTE_FIELDS.index(name)
        for submodule, costs in by_spec[id(spec)]:
            merged.setdefault(id(submodule), (submodule, {}))[1][name] = costs[position]
    return list(merged.values())


NATIVE_HANDLER = BuiltinHandler(estimate=estimate_native, subtree_metrics=ALL_FIELDS)

# TorchScan's internal table of complete-call handlers, resolved through the MRO (§3 step 2). A
# subclass of a native type resolves here too, and its formulas then report it unavailable (§12).
BUILTIN_HANDLERS: dict[type[nn.Module], BuiltinHandler] = dict.fromkeys(NATIVE_TYPES, NATIVE_HANDLER)


def forward_failed_tokens() -> dict[str, Any]:
    """The token object of a native call whose forward raised (§8): unavailable."""
    return unavailable_token_dependencies()
