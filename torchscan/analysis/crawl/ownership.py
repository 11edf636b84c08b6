"""Handler selection, subtree ownership and the per-call fallback chain (extensions spec §3–§5, §8).

One :class:`ExtensionState` lives for one full-mode analysis. Its three hook bodies are wired into
the call recorder:

* ``on_enter`` (pre-hook): records which active ancestor owns which field (``metric_owners``) and
  declares the selected handler's ``subtree_metrics`` at once, so descendants never estimate a
  covered field (their callbacks and formulas do not even run for it);
* ``estimate`` (post-hook, operator counting suspended): caller handler → built-in complete-call
  handler (with late ownership) → leaf formulas → nothing for a composite (§4.2);
* ``on_failure``: a forward that raised inside a model that caught it (§8).

Ownership follows executed calls, not the module tree: a shared child called inside the owning
call is covered, the same child called elsewhere is estimated on its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from torch import nn

from torchscan.analysis.crawl import leaf_memo
from torchscan.analysis.crawl.estimate import estimate_leaf, leave_unsupported, materialize, record_failure
from torchscan.analysis.crawl.handlers import BUILTIN_HANDLERS, BuiltinHandler, forward_failed_tokens
from torchscan.analysis.crawl.hooks import CallRecord, CallRecorder
from torchscan.extensions import (
    HandlerOutcome,
    ModuleCall,
    ModuleHandler,
    callback_identity,
    resolve_handler,
    run_caller_handler,
)
from torchscan.report.schema import COMPUTE_FIELDS, ESTIMATE_FIELDS, FIELD_UNITS, metric_result

FORWARD_FAILED = "forward_failed"


@dataclass(slots=True)
class _Active:
    """Per-call state between the pre-hook and the post-hook, kept on the call's record
    (``record.active``); a call without a handler under no owner has none."""

    caller: ModuleHandler | None
    builtin: BuiltinHandler | None
    requested: tuple[str, ...]  # the six fields minus those an active ancestor owns
    declared: tuple[str, ...]  # fields this call declared as subtree-owned in its pre-hook


# The state of every call without a handler under no owner (most calls): every field requested,
# nothing declared.
_PLAIN = _Active(None, None, ESTIMATE_FIELDS, ())


def _ref(owner: CallRecord) -> dict[str, Any]:
    return {"path": owner.path, "call_index": owner.call_index}


def _ordered(mapping: dict[str, Any]) -> dict[str, Any]:
    """Estimate fields in their canonical order, so reports read the same whatever the path."""
    return {name: mapping[name] for name in ESTIMATE_FIELDS if name in mapping}


def _shares_by_path(
    recorder: CallRecorder, record: CallRecord, shares: list[tuple[Any, dict[str, int]]]
) -> list[tuple[str, dict[str, int]]] | None:
    """A built-in handler's split of its complete inclusive fields, keyed by module path.

    Only fields the row holds as a complete ``subtree`` result are split; a module outside the
    model (impossible for native children) drops the split altogether rather than misplace a part.
    """
    fields = [
        name
        for name, result in record.metrics.items()
        if name in COMPUTE_FIELDS and result["status"] == "complete" and result["scope"] == "subtree"
    ]
    if not fields:
        return None
    by_path = []
    for module, values in shares:
        path = recorder.path_of(module)
        if path is None:
            return None
        by_path.append((path, {name: values[name] for name in fields if name in values}))
    return by_path


class ExtensionState:
    """Caller handlers, built-in handlers and the dynamic ownership stack of one analysis."""

    def __init__(self, custom_modules: Mapping[type[nn.Module], ModuleHandler]) -> None:
        self.custom = dict(custom_modules)
        self._handlers: dict[type, tuple[ModuleHandler | None, BuiltinHandler | None]] = {}
        self._owner_of: dict[str, CallRecord] = {}  # field -> outermost active owner
        self._leaf_memo = leaf_memo.SHARED  # silent leaf estimates (analysis/crawl/leaf_memo.py)

    def _select(self, module_type: type) -> tuple[ModuleHandler | None, BuiltinHandler | None]:
        pair = self._handlers.get(module_type)
        if pair is None:
            caller = resolve_handler(module_type, self.custom)
            pair = self._handlers[module_type] = (caller, resolve_handler(module_type, BUILTIN_HANDLERS))
        return pair

    # --- pre-hook ---------------------------------------------------------------------------------

    def on_enter(self, recorder: CallRecorder, record: CallRecord, module: nn.Module) -> None:
        """Record ancestor coverage and declare this call's subtree ownership (§5.2)."""
        caller, builtin = self._select(type(module))
        owner_of = self._owner_of
        if caller is None and builtin is None and not owner_of:
            return  # _PLAIN: nothing to remember (the recorder's own stack orders the calls)
        requested: tuple[str, ...] = ESTIMATE_FIELDS
        if owner_of:
            record.metric_owners = {
                name: _ref(owner_of[name]) for name in ESTIMATE_FIELDS if name in owner_of
            }
            requested = tuple(name for name in ESTIMATE_FIELDS if name not in owner_of)
            if all(name in owner_of for name in COMPUTE_FIELDS):
                record.covers_own_frame = True  # its frame's work belongs to the owner's estimate
        selected = caller if caller is not None else builtin
        declared: tuple[str, ...] = ()
        if selected is not None and selected.subtree_metrics:
            declared = tuple(name for name in requested if name in selected.subtree_metrics)
            if declared:
                record.metric_ownership = dict.fromkeys(declared, "subtree")
                for name in declared:
                    owner_of[name] = record
        record.active = _Active(caller, builtin, requested, declared)

    def _close(self, record: CallRecord) -> _Active:
        """Take this call's state off its record and unwind the ownership it declared."""
        active = record.active
        if active is None:
            return _PLAIN
        record.active = None
        for name in active.declared:
            if self._owner_of.get(name) is record:
                del self._owner_of[name]
        return active

    # --- post-hook --------------------------------------------------------------------------------

    def estimate(
        self,
        recorder: CallRecorder,
        record: CallRecord,
        module: nn.Module,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        output: Any,
    ) -> None:
        """The fallback chain of §4.2 for one successfully completed call."""
        active = self._close(record)
        if active is _PLAIN:  # no handler, no owner: the leaf formulas or nothing
            if record.is_leaf:
                estimate_leaf(record, module, args, kwargs, output, ESTIMATE_FIELDS, self._leaf_memo)
            return
        remaining = active.requested
        if not remaining:
            return  # every field is covered by an ancestor: no callback, no formula
        caller, builtin = active.caller, active.builtin
        omitted: tuple[str, ...] = ()
        if caller is not None or builtin is not None:
            call = ModuleCall(module, args, kwargs, output)
            if caller is not None:
                outcome = run_caller_handler(caller, call, remaining, record.path)
                remaining = self._apply(record, outcome, caller.subtree_metrics, remaining)
                omitted = tuple(name for name in remaining if name in COMPUTE_FIELDS)
            if builtin is not None and remaining:
                outcome = builtin.estimate(call, frozenset(remaining), record.path)
                late = caller is not None
                remaining = self._apply(record, outcome, builtin.subtree_metrics, remaining)
                owned = [name for name in outcome.metrics if name in builtin.subtree_metrics]
                if late and owned:
                    self._late_ownership(recorder, record, owned)
                if outcome.shares:
                    record.shares = _shares_by_path(recorder, record, outcome.shares)
        if remaining and record.is_leaf:
            estimate_leaf(record, module, args, kwargs, output, remaining, self._leaf_memo)
            materialize(record, recorder.estimate_results)  # beside the handler's results, in order
            if omitted and caller is not None:
                # truth.md 6: what the handler left out and no module formula filled is not measured.
                reason = f"its custom handler {callback_identity(caller.estimate)} returned no such estimate"
                leave_unsupported(record, module, omitted, reason)

    @staticmethod
    def _apply(
        record: CallRecord, outcome: HandlerOutcome, owned: frozenset[str], remaining: Iterable[str]
    ) -> tuple[str, ...]:
        """Store a handler's supplied fields with their ownership; return the fields still open."""
        record.metrics.update(outcome.metrics)
        record.diagnostics.extend(outcome.diagnostics)
        ownership = dict(record.metric_ownership or {})
        for name in outcome.metrics:
            ownership[name] = "subtree" if name in owned else "module_call"
        if ownership:
            record.metric_ownership = _ordered(ownership)
        if outcome.token_dependencies is not None:
            record.token_dependencies = outcome.token_dependencies
        return tuple(name for name in remaining if name not in outcome.metrics)

    @staticmethod
    def _late_ownership(recorder: CallRecorder, record: CallRecord, fields: list[str]) -> None:
        """§5.4: a built-in inclusive fallback covers the rows created during this call."""
        records = recorder.records
        index = len(records) - 1
        while records[index] is not record:
            index -= 1
        covered = set(fields)
        if "receptive_field" in covered:
            covered.add("token_dependencies")
        for row in records[index + 1 :]:
            materialize(row, recorder.estimate_results)  # its plain estimate becomes results to drop
            for name in fields:
                row.metrics.pop(name, None)
                if row.metric_ownership:
                    row.metric_ownership.pop(name, None)
            if not row.metric_ownership:
                row.metric_ownership = None
            owners = dict(row.metric_owners or {})
            owners.update({name: _ref(record) for name in fields})
            row.metric_owners = _ordered(owners)
            row.diagnostics = [entry for entry in row.diagnostics if entry["metric"] not in covered]
            if "receptive_field" in covered:
                row.token_dependencies = None

    # --- failed forwards --------------------------------------------------------------------------

    def on_failure(self, recorder: CallRecorder, record: CallRecord, module: nn.Module) -> None:
        """§8: no callback; open fields unavailable (``forward_failed``); ownership unwound."""
        active = self._close(record)
        record_failure(recorder, record, module)
        requested = active.requested
        for name in ESTIMATE_FIELDS:
            if name not in requested:
                record.metrics.pop(name, None)  # covered by an ancestor: absent, not unavailable
        selected = active.caller if active.caller is not None else active.builtin
        if selected is not None:
            for name in requested:
                scope = "subtree" if name in selected.subtree_metrics else "module_call"
                record.metrics[name] = metric_result(
                    "unavailable", unit=FIELD_UNITS[name], scope=scope, method=FORWARD_FAILED
                )
        if active.builtin is not None and "receptive_field" in requested:
            record.token_dependencies = forward_failed_tokens()
