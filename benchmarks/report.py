"""Markdown rendering of benchmark results: pure functions of the raw samples (medians computed here)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import tools
from harness import RETAINED_TOOLS, ModelResult, Outcome

MIB = 1024 * 1024
PEER_KEYS = tuple(tool.key for tool in tools.PEERS)
DISPATCH_PEER_KEYS = tuple(tool.key for tool in tools.DISPATCH_PEERS)

# Spec "Performance targets" (informational here: the harness never fails on a number).
STRUCTURE_STACK_US_PER_PAIR = 60.0
FULL_OVER_FLOPCOUNTER = 1.10
MEASURE_FLOPS_OVER_FLOPCOUNTER = 1.05
SUSPICIOUS_BELOW_BARE = 0.5  # an analysis that runs the forward cannot take half a bare forward
STRUCTURE_CAP = {"resnet50": 1.10, "mobilenetv3": 1.5, "bert": 1.05}
RETAINED_KIB_PER_CALL = 4.0
FULL_OVER_DISPATCH_PEER = 1.0  # issue #24 (spec "against the fastest dispatch-level peer")
MEASURE_FLOPS_OVER_DISPATCH_PEER = 0.9
KIB = 1024
# Issue #36, "the cost of looking" (overhead = time − bare forward; the floor = an empty dispatch mode).
# Models whose floor is a sizeable share of the forward are judged by overhead ÷ the floor's overhead;
# those where it is a few percent (noise-dominated as a divisor) by time ÷ bare forward.
OVERHEAD_TARGETS = {"mobilenetv3": (3.0, 2.0), "stack1000": (3.0, 2.0)}  # (full, measure_flops)
BARE_TARGETS = {"resnet50": (1.10, 1.05), "bert": (1.10, 1.05)}
NOISY_FLOOR = 0.05  # floor overhead under 5 % of the bare forward: its ratio is noise-dominated


def median(outcome: Outcome) -> float | None:
    """Median seconds of a tool's samples, or None when it has none."""
    return statistics.median(outcome.samples) if outcome.samples else None


def _ratio(value: float | None, reference: float | None) -> str:
    return f"{value / reference:.2f}×" if value is not None and reference else "–"


def _rss(outcome: Outcome) -> str:
    if outcome.rss_status is None:
        return "–"
    if outcome.rss_bytes is None:
        return outcome.rss_status
    return f"{outcome.rss_bytes / MIB:,.0f}"


def results_table(results: Sequence[ModelResult]) -> list[str]:
    """One row per (model, tool): median, ratios to bare forward, FlopCounterMode and the fastest
    dispatch-level peer (``–`` when none ran), µs/pair, peak RSS."""
    lines = [
        "| model | tool | median ms | × bare forward | × FlopCounterMode | ÷ fastest dispatch peer "
        "| µs/pair | peak RSS MiB | samples |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for result in results:
        if result.status != "ok":
            lines.append(f"| {result.spec.name} | – | {result.status} | | | | | | |")
            continue
        bare = median(result.outcomes[tools.BARE])
        counter = median(result.outcomes[tools.FLOP_COUNTER])
        fastest = _fastest(result, DISPATCH_PEER_KEYS)
        dispatch = fastest[1] if fastest else None
        for tool in tools.TOOLS:
            outcome = result.outcomes[tool.key]
            if outcome.status == "not selected":
                continue
            value = median(outcome)
            if value is None:
                lines.append(f"| {result.spec.name} | {tool.label} | {outcome.status} | | | | | | 0 |")
                continue
            per_pair = f"{value / result.spec.pairs * 1e6:.1f}" if result.spec.pairs else ""
            marks = (" (slow: warm-up only)" if outcome.slow else "") + (
                " (left hooks/buffers on the model)" if outcome.mutated else ""
            )
            if bare and value < SUSPICIOUS_BELOW_BARE * bare:
                marks += " (suspicious: far faster than a bare forward; did it run the model?)"
            lines.append(
                f"| {result.spec.name} | {tool.label}{marks} | {value * 1e3:,.1f} | {_ratio(value, bare)} | "
                f"{_ratio(value, counter)} | {_ratio(value, dispatch)} | {per_pair} | {_rss(outcome)} | "
                f"{len(outcome.samples)} |"
            )
    return lines


def depth_table(results: Sequence[ModelResult]) -> list[str]:
    """µs per layer pair for every tool across the Linear+ReLU stacks, and the spread (max/min − 1)."""
    stacks = [r for r in results if r.spec.pairs and r.status == "ok"]
    if len(stacks) < 2:
        return []
    lines = [
        "| tool | " + " | ".join(f"{r.spec.pairs:,} pairs" for r in stacks) + " | spread |",
        "| --- | " + " | ".join("---:" for _ in stacks) + " | ---: |",
    ]
    for tool in tools.TOOLS:
        cells, values = [], []
        for result in stacks:
            outcome = result.outcomes[tool.key]
            value = median(outcome)
            if value is None:
                cells.append("–" if outcome.status in ("not installed", "not selected") else outcome.status)
            else:
                values.append(value / result.spec.pairs * 1e6)  # type: ignore[operator]
                cells.append(f"{values[-1]:.1f}")
        if not values:
            continue
        spread = f"{(max(values) / min(values) - 1) * 100:.0f} %" if len(values) > 1 else "–"
        lines.append(f"| {tool.label} | " + " | ".join(cells) + f" | {spread} |")
    return lines


def _fastest(result: ModelResult, keys: Sequence[str]) -> tuple[str, float] | None:
    """``(label, median)`` of the fastest of ``keys`` that ran on this model, or None."""
    timed = [(key, median(result.outcomes[key])) for key in keys if key in result.outcomes]
    usable = [(key, value) for key, value in timed if value is not None]
    if not usable:
        return None
    key, value = min(usable, key=lambda item: item[1])
    return tools.BY_KEY[key].label, value


def _best_peer(result: ModelResult) -> tuple[str, float] | None:
    return _fastest(result, PEER_KEYS)


def dispatch_table(results: Sequence[ModelResult]) -> list[str]:
    """Issue #24's targets: full crawl and measure_flops against the fastest dispatch-level peer."""
    lines = [
        "| model | fastest dispatch peer × bare (which) | full ÷ fastest dispatch peer | "
        "measure_flops ÷ fastest dispatch peer |",
        "| --- | ---: | ---: | ---: |",
    ]
    for result in results:
        fastest = _fastest(result, DISPATCH_PEER_KEYS) if result.status == "ok" else None
        if fastest is None:
            continue
        outcomes = result.outcomes
        bare, full = median(outcomes[tools.BARE]), median(outcomes["ts-full"])
        flops = median(outcomes["ts-measure-flops"])
        lines.append(
            f"| {result.spec.name} | {_ratio(fastest[1], bare)} ({fastest[0]}) | "
            f"{_ratio(full, fastest[1])} (target ≤ {FULL_OVER_DISPATCH_PEER:g}) | "
            f"{_ratio(flops, fastest[1])} (target ≤ {MEASURE_FLOPS_OVER_DISPATCH_PEER:g}) |"
        )
    return lines if len(lines) > 2 else []


def targets_table(results: Sequence[ModelResult]) -> list[str]:
    """The spec's performance targets against this run's numbers (informational, never enforced)."""
    lines = [
        "| model | structure × bare | best peer × bare (which) | full ÷ FlopCounterMode | "
        "measure_flops ÷ FlopCounterMode |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for result in results:
        if result.status != "ok":
            continue
        outcomes = result.outcomes
        bare, counter = median(outcomes[tools.BARE]), median(outcomes[tools.FLOP_COUNTER])
        structure, full = median(outcomes["ts-structure"]), median(outcomes["ts-full"])
        flops = median(outcomes["ts-measure-flops"])
        best = _best_peer(result)
        if result.spec.pairs:
            target = f"(target ≤ {STRUCTURE_STACK_US_PER_PAIR:g})"
            structure_cell = (
                f"{structure / result.spec.pairs * 1e6:.1f} µs/pair {target}" if structure else "–"
            )
            peer_cell = f"{best[1] / result.spec.pairs * 1e6:.1f} µs/pair ({best[0]})" if best else "no peer"
        else:
            cap = STRUCTURE_CAP.get(result.spec.key)
            structure_cell = _ratio(structure, bare) + (f" (target ≤ {cap:g}×)" if cap else "")
            peer_cell = f"{_ratio(best[1], bare)} ({best[0]})" if best else "no peer"
        lines.append(
            f"| {result.spec.name} | {structure_cell} | {peer_cell} | "
            f"{_ratio(full, counter)} (target ≤ {FULL_OVER_FLOPCOUNTER:g}) | "
            f"{_ratio(flops, counter)} (target ≤ {MEASURE_FLOPS_OVER_FLOPCOUNTER:g}) |"
        )
    return lines


def _target(value: float | None, cap: float | None) -> str:
    if value is None:
        return "–"
    if cap is None:
        return f"{value:.2f}"
    return f"{value:.2f} (target ≤ {cap:g}, {'met' if value <= cap else 'not met'})"


def looking_table(results: Sequence[ModelResult]) -> list[str]:
    """Issue #36: the floor, and full mode's and ``measure_flops``' overheads against it and the forward."""
    lines = [
        "| model | floor overhead ÷ bare | full overhead ÷ floor overhead | measure_flops overhead ÷ "
        "floor overhead | full ÷ bare | measure_flops ÷ bare |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for result in results:
        if result.status != "ok":
            continue
        outcomes = result.outcomes
        bare, floor = median(outcomes[tools.BARE]), median(outcomes[tools.FLOOR])
        if bare is None or floor is None:
            continue
        full, flops = median(outcomes["ts-full"]), median(outcomes["ts-measure-flops"])
        overhead = floor - bare
        over_caps = OVERHEAD_TARGETS.get(result.spec.key, (None, None))
        bare_caps = BARE_TARGETS.get(result.spec.key, (None, None))

        def over_floor(
            value: float | None, cap: float | None, bare: float = bare, overhead: float = overhead
        ) -> str:
            if value is None or overhead <= 0:
                return "–"
            cell = _target((value - bare) / overhead, cap)
            return cell + (" (floor in the noise)" if overhead < NOISY_FLOOR * bare else "")

        lines.append(
            f"| {result.spec.name} | {overhead / bare:.3f} | {over_floor(full, over_caps[0])} | "
            f"{over_floor(flops, over_caps[1])} | {_target(full and full / bare, bare_caps[0])} | "
            f"{_target(flops and flops / bare, bare_caps[1])} |"
        )
    return lines if len(lines) > 2 else []


def retained_table(results: Sequence[ModelResult]) -> list[str]:
    """KiB of report retained per layer call, structure and full mode (target ≤ 4 KiB)."""
    lines = [
        f"| model | structure KiB/call | full KiB/call (target ≤ {RETAINED_KIB_PER_CALL:g}) |",
        "| --- | ---: | ---: |",
    ]
    for result in results:
        if result.status != "ok":  # a skipped model has no outcomes at all
            continue
        cells = [result.outcomes[key].retained_per_call for key in RETAINED_TOOLS]
        if all(cell is None for cell in cells):
            continue
        shown = [f"{cell / KIB:.2f}" if cell is not None else "–" for cell in cells]
        lines.append(f"| {result.spec.name} | {shown[0]} | {shown[1]} |")
    return lines if len(lines) > 2 else []


def render(header: Sequence[str], results: Sequence[ModelResult]) -> str:
    """The whole Markdown document: header, results, depth scaling, targets."""
    parts = [*header, "", "### Results", "", *results_table(results)]
    depth = depth_table(results)
    if depth:
        parts += ["", "### Depth scaling (µs per Linear+ReLU pair; flat is the target, ±15 %)", "", *depth]
    looking = looking_table(results)
    if looking:
        parts += ["", "### The cost of looking (issue #36; overhead = time − bare forward)", "", *looking]
    parts += ["", "### Against the spec's targets (informational)", "", *targets_table(results)]
    dispatch = dispatch_table(results)
    if dispatch:
        parts += ["", "### Against the fastest dispatch-level peer (issue #24, informational)", "", *dispatch]
    retained = retained_table(results)
    if retained:
        parts += ["", "### Retained report memory (tracemalloc, per layer call)", "", *retained]
    return "\n".join(parts) + "\n"
