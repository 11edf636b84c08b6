"""``torchscan memory TARGET``: the storage ledger of one forward or one training step (memory.md 4).

This module holds the inference workload and the terminal wording of a MemoryReport and of a
MemoryDiff; ``cli/app.py`` wires it to the common target, input and output handling of every
command. ``--device meta`` builds a factory's model directly on the meta device (under a
``torch.device("meta")`` context, ``targets.build_context``, so a multi-billion-parameter model never
allocates real memory) and moves a module instance there (``model.to("meta")``, what ``--device``
does for every command); the generated inputs are meta tensors too. Torch is imported only inside
the functions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from torchscan.report.memory_schema import CATEGORIES, PHASES
from torchscan.views.common.diagnostic_groups import escape_control
from torchscan.views.memory.text import (
    CATEGORY_LABELS,
    figure_text,
    place_text,
    status_bytes_text,
)

if TYPE_CHECKING:
    from torch import nn

INFERENCE = "one eval/no-grad forward"
DEVICE_HELP = (
    "cpu, cuda:N, mps or meta; the model is moved there first (meta: a factory builds its model "
    "directly on the meta device, so nothing real is allocated)"
)
SHORT_NOTE = (
    "Live-storage bytes seen by the ledger: not allocator-reserved memory, not process RSS, not a "
    "statement that it fits a device; ≥ is a lower bound, unknown is never 0."
)


def inference_workload(model: nn.Module, inputs: Sequence[Any]) -> Callable[[], None]:
    """One eval-mode forward under ``torch.no_grad()`` (nothing is saved for backward)."""
    import torch

    model.eval()

    def workload() -> None:
        with torch.no_grad():
            model(*inputs)

    return workload


def _row(label: str, result: Mapping[str, Any] | None, width: int = 34) -> str:
    return f"  {label:<{width}} {status_bytes_text(result)}"


def memory_lines(report: Mapping[str, Any], target: str, what: str) -> list[str]:
    """The terminal summary: peak (with its phase and module), categories at the peak, phase peaks."""
    context = report["context"]
    at_peak = report["at_peak"]
    dtypes = ", ".join(context["dtypes"]) or "none seen"
    lines = [
        f"storage ledger of {escape_control(target)}: {what}",
        f"device {escape_control(context['device'])}, ledger on {context['ledger_device']} tensors, "
        f"dtypes {escape_control(dtypes)}, {report['timeline_events']:,} ledger events, "
        f"method {context['method']}",
        "",
        f"peak      {status_bytes_text(report['peak'])}",
        f"          at {escape_control(place_text(at_peak['phase'], at_peak['module']))}",
        f"baseline  {status_bytes_text(report['baseline'])}",
        "",
        "at the peak, by category:",
    ]
    lines += [_row(CATEGORY_LABELS[name], at_peak["by_category"][name]) for name in CATEGORIES]
    lines += ["", "peak within each phase (a phase that never ran is unavailable, not 0):"]
    lines += [_row(name, report["by_phase"][name]) for name in PHASES]
    if report["allocator"]:
        lines += ["", "allocator's own figures (separate methods, never substituted for the ledger):"]
        lines += [
            f"  {escape_control(name):<34} {escape_control(figure_text(result))}  "
            f"[{escape_control(result['method'])}]"
            for name, result in sorted(report["allocator"].items())
        ]
    if report["diagnostics"]:
        lines += ["", f"diagnostics ({len(report['diagnostics'])}):"]
        lines += [
            f"  {escape_control(entry['code'])}: {escape_control(entry['message'])}"
            for entry in report["diagnostics"]
        ]
    lines += ["", SHORT_NOTE]
    return lines


def comparison_lines(diff: Mapping[str, Any]) -> list[str]:
    """The terminal table of a MemoryDiff: before, after and delta of every figure (unknown stays unknown)."""
    from torchscan.views.memory.text import compact_bytes, delta_bytes_text

    rows = [("peak", diff["peak"]), ("baseline", diff["baseline"])]
    rows += [(f"{CATEGORY_LABELS[name]} at the peak", diff["at_peak"][name]) for name in CATEGORIES]
    rows += [(f"{name} phase peak", diff["by_phase"][name]) for name in PHASES]
    width = max(len(label) for label, _ in rows)
    lines = [f"  {'figure':<{width}}  {'before':>12}  {'after':>12}  delta"]
    lines += [
        f"  {label:<{width}}  {compact_bytes(entry['before']):>12}  {compact_bytes(entry['after']):>12}  "
        f"{delta_bytes_text(entry)}"
        for label, entry in rows
    ]
    where = diff["where"]
    for side in ("before", "after"):
        place = where[side]
        lines.append(f"  peak {side}: {escape_control(place_text(place['phase'], place['module']))}")
    for key, change in sorted(diff["context_changes"].items()):
        lines.append(
            f"  context {key} changed: {escape_control(str(change['before']))} -> "
            f"{escape_control(str(change['after']))}"
        )
    return ["MemoryReport comparison (after - before, bytes)", *lines]
