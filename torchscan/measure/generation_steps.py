"""From a FlopReport's ``by_step`` to the parts of a GenerationReport (generation.md 2); pure functions.

Nothing here runs a model: every function takes plain report values (the by_step wire entries of
``measure_flops(..., by_step=True)``) and returns new ones. Sums and means follow the truth rules:
a part that is ``unavailable`` makes the sum unavailable, a ``partial`` part makes it a lower bound,
and a sum over no steps is a complete zero (nothing ran, so nothing was missed).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from torchscan.analysis.crawl.roofline import arithmetic_intensity, roofline_seconds
from torchscan.report.diagnostics import diagnostic
from torchscan.report.generation_schema import (
    FIT_METRICS,
    STEP_INTENSITY_METHOD,
    STEP_METRICS,
    STEP_UNITS,
    Bound,
    DecodeFit,
    GenerationStep,
    LinearFit,
    PhaseTotals,
    StepCosts,
)
from torchscan.report.schema import (
    ATTENTION_KV_METHOD,
    NOT_APPLICABLE,
    OPERATOR_BYTES_METHOD,
    OPERATOR_METHOD,
    Diagnostic,
    FlopStep,
    HardwareFacts,
    MetricResult,
    Status,
    metric_result,
)

DEFAULT_METHODS = {
    "flops": OPERATOR_METHOD,
    "operator_bytes": OPERATOR_BYTES_METHOD,
    "attention_kv_bytes": ATTENTION_KV_METHOD,
}


def context_lengths(input_tokens: Sequence[int | None], use_cache: bool) -> list[int | None]:
    """Tokens each step attends to: cached plus new.

    With a cache a step attends to every token the earlier steps fed in plus its own (a running
    sum of ``input_tokens``); without one each call re-reads the whole sequence, which is its own
    ``input_tokens``. An unknown count (``None``) makes this and, with a cache, every later length
    unknown.
    """
    if not use_cache:
        return list(input_tokens)
    lengths: list[int | None] = []
    total: int | None = 0
    for tokens in input_tokens:
        total = None if total is None or tokens is None else total + tokens
        lengths.append(total)
    return lengths


def build_steps(by_step: Sequence[FlopStep], use_cache: bool) -> list[GenerationStep]:
    """Steps with ``phase`` (index 0 ``prefill``, later ``decode``) and ``context_tokens`` added."""
    lengths = context_lengths([entry["input_tokens"] for entry in by_step], use_cache)
    steps: list[GenerationStep] = []
    for position, (entry, length) in enumerate(zip(by_step, lengths, strict=True)):
        steps.append(
            {
                "index": entry["index"],
                "phase": "prefill" if position == 0 else "decode",
                "input_tokens": entry["input_tokens"],
                "context_tokens": length,
                "flops": entry["flops"],
                "operator_bytes": entry["operator_bytes"],
                "attention_kv_bytes": entry["attention_kv_bytes"],
            }
        )
    return steps


def _combined_status(parts: Sequence[MetricResult]) -> Status:
    statuses = {part["status"] for part in parts}
    if "unavailable" in statuses:
        return "unavailable"
    return "partial" if "partial" in statuses else "complete"


def _method(parts: Sequence[MetricResult], name: str) -> str:
    """The parts' common method (each step's metric has one method); the default without parts."""
    methods = {part["method"] for part in parts}
    return methods.pop() if len(methods) == 1 else DEFAULT_METHODS[name]


def sum_results(parts: Sequence[MetricResult], name: str, scope: str) -> MetricResult:
    """Sum of ``parts`` (each the same metric of one step) under ``scope``."""
    status = _combined_status(parts)
    value = None if status == "unavailable" else sum(part["known_value"] or 0 for part in parts)
    return metric_result(status, value, unit=STEP_UNITS[name], scope=scope, method=_method(parts, name))


def mean_result(parts: Sequence[MetricResult], name: str, scope: str) -> MetricResult:
    """Mean of ``parts``: unavailable without parts; a partial part makes it a lower bound."""
    status: Status = _combined_status(parts) if parts else "unavailable"
    value: int | float | None = None
    if status != "unavailable":
        total = sum(part["known_value"] or 0 for part in parts)
        value = total // len(parts) if total % len(parts) == 0 else total / len(parts)
    return metric_result(status, value, unit=STEP_UNITS[name], scope=scope, method=_method(parts, name))


def phase_totals(steps: Sequence[GenerationStep], phase: str) -> PhaseTotals:
    """Sums of the three step metrics over the steps of ``phase``."""
    chosen = [step for step in steps if step["phase"] == phase]
    return {
        "steps": len(chosen),
        "flops": sum_results([s["flops"] for s in chosen], "flops", phase),
        "operator_bytes": sum_results([s["operator_bytes"] for s in chosen], "operator_bytes", phase),
        "attention_kv_bytes": sum_results(
            [s["attention_kv_bytes"] for s in chosen], "attention_kv_bytes", phase
        ),
    }


def decode_means(steps: Sequence[GenerationStep]) -> tuple[StepCosts, list[Diagnostic]]:
    """Mean cost of one decode step (``decode_per_token``), and a diagnostic when there is none."""
    decode = [step for step in steps if step["phase"] == "decode"]
    means: dict[str, MetricResult] = {
        name: mean_result([step[name] for step in decode], name, "decode_per_token")  # type: ignore[literal-required]
        for name in STEP_METRICS
    }
    notes: list[Diagnostic] = []
    if not decode:
        notes.append(
            diagnostic(
                "no_decode_steps",
                "generate() called the model only once (the prefill): there is no decode step to average",
                metric="decode_per_token",
            )
        )
    return means, notes  # type: ignore[return-value]


def fit_line(points: Sequence[tuple[int | float, int | float]]) -> LinearFit:
    """Least squares line through ``(x, y)`` points (at least two distinct x), computed exactly.

    Integer inputs are fitted in rational arithmetic, so the only rounding is the final conversion
    of each of the three numbers to float.
    """
    xs = [Fraction(x) for x, _ in points]
    ys = [Fraction(y) for _, y in points]
    n = len(points)
    if n < 2:
        raise ValueError("a line needs at least two points with different x")
    mean_x: Fraction = sum(xs, Fraction(0)) / n
    mean_y: Fraction = sum(ys, Fraction(0)) / n
    spread: Fraction = sum(((x - mean_x) ** 2 for x in xs), Fraction(0))
    if spread == 0:
        raise ValueError("a line needs at least two points with different x")
    slope: Fraction = (
        sum(((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)), Fraction(0)) / spread
    )
    intercept: Fraction = mean_y - slope * mean_x
    residual: Fraction = max(abs(y - (intercept + slope * x)) for x, y in zip(xs, ys, strict=True))
    return {"intercept": float(intercept), "slope": float(slope), "max_residual": float(residual)}


def _fit_problem(decode: Sequence[GenerationStep], name: str) -> str | None:
    """Why the decode steps give no fit of ``name``, or ``None`` when they do."""
    if len(decode) < 2:
        return f"{len(decode)} decode step(s): a line needs at least two"
    if any(step["context_tokens"] is None for step in decode):
        return "a decode step's context length is unknown (no integer token tensor in its call)"
    if all(step[name]["method"] == NOT_APPLICABLE for step in decode):  # type: ignore[literal-required]
        return f"{name} is not applicable: the decode steps ran no attention (attention_kv_not_applicable)"
    incomplete = [step["index"] for step in decode if step[name]["status"] != "complete"]  # type: ignore[literal-required]
    if incomplete:
        shown = ", ".join(str(index) for index in incomplete[:5])
        return f"{name} of decode step(s) {shown} is not complete: a fit through lower bounds would be wrong"
    if len({step["context_tokens"] for step in decode}) < 2:
        return "every decode step has the same context length: the slope is undefined"
    return None


def decode_fit(steps: Sequence[GenerationStep]) -> tuple[DecodeFit, list[Diagnostic]]:
    """Least squares fit of decode FLOPs and attention K/V bytes against ``context_tokens``.

    Each fit is ``None``, with a ``decode_fit_unavailable`` diagnostic naming the reason, when
    there are fewer than two decode steps, a context length is unknown, or a value is not complete.
    """
    decode = [step for step in steps if step["phase"] == "decode"]
    fits: dict[str, LinearFit | None] = {}
    notes: list[Diagnostic] = []
    for name in FIT_METRICS:
        problem = _fit_problem(decode, name)
        if problem is not None:
            fits[name] = None
            notes.append(diagnostic("decode_fit_unavailable", problem, metric=f"decode_fit.{name}"))
            continue
        points = [(step["context_tokens"] or 0, step[name]["value"] or 0) for step in decode]  # type: ignore[literal-required]
        fits[name] = fit_line(points)
    return {"flops": fits["flops"], "attention_kv_bytes": fits["attention_kv_bytes"]}, notes


def step_bound(
    flops: MetricResult, moved: MetricResult, peak: float, bandwidth: float | None
) -> Bound | None:
    """``compute`` when FLOPs ÷ peak ≥ bytes ÷ bandwidth, ``memory`` when below; ``None`` if unknown.

    A lower bound decides only the side it can only strengthen: partial FLOPs that already take
    longer than the bytes are ``compute``; partial bytes that already take longer are ``memory``.
    """
    if bandwidth is None or flops["known_value"] is None or moved["known_value"] is None:
        return None
    compute_time = flops["known_value"] / peak
    memory_time = moved["known_value"] / bandwidth
    flops_known = flops["status"] == "complete"
    bytes_known = moved["status"] == "complete"
    if compute_time >= memory_time and bytes_known:
        return "compute"
    if memory_time > compute_time and flops_known:
        return "memory"
    return None


def add_step_rooflines(steps: list[GenerationStep], hardware: HardwareFacts) -> list[Diagnostic]:
    """Add ``arithmetic_intensity``, ``roofline_seconds`` and ``bound`` to every step, in place.

    Statuses follow the inputs (analysis/crawl/roofline.py): partial FLOPs give a partial roofline,
    never a complete one. Returns the diagnostics of figures that could not be computed.
    """
    peak, bandwidth = hardware["peak_flops_per_second"], hardware.get("memory_bandwidth_bytes_per_second")
    notes: list[Diagnostic] = []
    for step in steps:
        flops, moved = step["flops"], step["operator_bytes"]
        step["arithmetic_intensity"] = arithmetic_intensity(flops, moved, "step", STEP_INTENSITY_METHOD)
        step["roofline_seconds"] = roofline_seconds(flops, moved, peak, bandwidth, "step")
        step["bound"] = step_bound(flops, moved, peak, bandwidth)
        known = flops["known_value"] is not None and moved["known_value"] is not None
        if bandwidth is not None and known and step["roofline_seconds"]["status"] == "unavailable":
            notes.append(
                diagnostic(
                    "roofline_out_of_range",
                    "the roofline time under the stated peak and bandwidth exceeds the float range "
                    "(a stated rate is extremely small): it is unavailable, not infinite",
                    metric="roofline_seconds",
                    path=f"steps[{step['index']}]",
                )
            )
    if bandwidth is None and steps:
        notes.append(
            diagnostic(
                "roofline_needs_bandwidth",
                "hardware states no memory_bandwidth_bytes_per_second: roofline_seconds is unavailable "
                "and no step is classified compute- or memory-bound",
                metric="roofline_seconds",
            )
        )
    return notes
