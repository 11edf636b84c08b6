"""``measure_generation``: what prefill and each decode step of ``generate()`` cost (generation.md 2).

One observed ``model.generate(...)`` under ``measure_flops(..., modules=model, by_step=True,
bytes=True)`` gives one step per top-level call of the model; the pure builders of
:mod:`torchscan.measure.generation_steps` turn those steps into the report. With ``timing=True`` a
second, separate ``generate()`` is timed (never the counting pass, whose dispatch mode slows it).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn

from torchscan._version import __version__
from torchscan.measure.flops import measure_flops
from torchscan.measure.generation_steps import (
    add_step_rooflines,
    build_steps,
    decode_fit,
    decode_means,
    phase_totals,
)
from torchscan.measure.stats import interquartile_range
from torchscan.report.diagnostics import diagnostic
from torchscan.report.generation_schema import (
    TIMING_METHOD,
    GenerationContext,
    GenerationReport,
    GenerationTiming,
)
from torchscan.report.hardware import check_hardware
from torchscan.report.schema import (
    SCHEMA_VERSION,
    Diagnostic,
    FlopReport,
    HardwareFacts,
    MetricResult,
    metric_result,
)
from torchscan.runtime.device import Device, resolve_device, synchronizer
from torchscan.runtime.locks import TIMING_LOCK
from torchscan.runtime.torch_versions import untested_torch_diagnostics

CACHE_KEYS = ("cache", "past_key_values")  # the keyword transformers passes the cache object under


def _check_arguments(
    model: object, args: object, kwargs: object, generate_kwargs: object, hardware: object, timing: object
) -> tuple[dict[str, Any], HardwareFacts | None]:
    """Every check before any model code runs; returns the merged keywords and the stated facts."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    if not callable(getattr(model, "generate", None)):
        raise TypeError(f"model ({type(model).__name__}) has no callable generate method")
    if not isinstance(args, tuple):
        raise TypeError(f"args must be a tuple, got {type(args).__name__}")
    for name, value in (("kwargs", kwargs), ("generate_kwargs", generate_kwargs)):
        if value is not None and not isinstance(value, dict):
            raise TypeError(f"{name} must be a dict or None, got {type(value).__name__}")
        if isinstance(value, dict) and not all(isinstance(key, str) for key in value):
            raise TypeError(f"{name} keys must be strings")
    if type(timing) is not bool:
        raise TypeError(f"timing must be a bool, got {type(timing).__name__}")
    facts = check_hardware(hardware) if hardware is not None else None
    first: dict[str, Any] = dict(kwargs) if isinstance(kwargs, dict) else {}
    second: dict[str, Any] = dict(generate_kwargs) if isinstance(generate_kwargs, dict) else {}
    repeated = sorted(set(first) & set(second))
    if repeated:
        raise ValueError(f"kwargs and generate_kwargs both give {', '.join(map(repr, repeated[:5]))}")
    merged = {**first, **second}
    # Greedy unless the caller chose: an explicit do_sample or a whole generation_config decides. A
    # hand-written generate() without a do_sample parameter is left alone (it has no sampling switch).
    if (
        "do_sample" not in merged
        and "generation_config" not in merged
        and _accepts(model.generate, "do_sample")
    ):
        merged["do_sample"] = False
    return merged, facts


def _accepts(function: Any, name: str) -> bool:
    """Whether ``function`` takes a keyword ``name`` (explicitly or through ``**kwargs``)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # no signature to read (a builtin): pass the keyword as asked
        return True
    return any(p.name == name or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def _setting(merged: Mapping[str, Any], model: nn.Module, name: str) -> Any:
    """A generation setting as generate() sees it: keywords, the caller's config, the model's config."""
    if name in merged:
        return merged[name]
    for config in (merged.get("generation_config"), getattr(model, "generation_config", None)):
        if config is not None and hasattr(config, name):
            return getattr(config, name)
    return None


def _input_ids(args: tuple[Any, ...], merged: Mapping[str, Any]) -> torch.Tensor | None:
    candidate = merged.get("input_ids", args[0] if args else None)
    return candidate if isinstance(candidate, torch.Tensor) else None


def _context(
    model: nn.Module, args: tuple[Any, ...], merged: Mapping[str, Any], cache_class: str | None
) -> GenerationContext:
    """Value-free facts: class names, dtypes, sizes, settings; never values, paths or reprs."""
    tensors = [*model.parameters(), *model.buffers()]
    ids = _input_ids(args, merged)
    use_cache = _setting(merged, model, "use_cache")
    do_sample = _setting(merged, model, "do_sample")
    max_new = _setting(merged, model, "max_new_tokens")
    config = getattr(model, "config", None)
    attention = getattr(config, "_attn_implementation", None)  # transformers' resolved choice
    return {
        "torchscan_version": __version__,
        "torch_version": str(torch.__version__),
        "model_type": type(model).__name__,
        "dtypes": sorted({str(t.dtype) for t in tensors}),
        "device": str(tensors[0].device) if tensors else None,
        "batch_size": int(ids.shape[0]) if ids is not None and ids.dim() >= 2 else None,
        "prompt_tokens": int(ids.shape[-1]) if ids is not None and ids.dim() >= 1 else None,
        "max_new_tokens": max_new if type(max_new) is int else None,
        "use_cache": use_cache if isinstance(use_cache, bool) else True,
        "do_sample": do_sample if isinstance(do_sample, bool) else None,
        "cache_class": cache_class,
        "attention_implementation": attention if isinstance(attention, str) else None,
    }


class _CacheWatcher:
    """Forward pre-hook recording the class name of the first cache object the model receives."""

    def __init__(self) -> None:
        self.cache_class: str | None = None

    def __call__(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if self.cache_class is None:
            for key in CACHE_KEYS:
                if kwargs.get(key) is not None:
                    self.cache_class = type(kwargs[key]).__name__
                    return


def measure_generation(
    model: nn.Module,
    *,
    args: tuple[Any, ...] = (),
    kwargs: dict[str, Any] | None = None,
    generate_kwargs: dict[str, Any] | None = None,
    hardware: Mapping[str, Any] | None = None,
    timing: bool = False,
) -> GenerationReport:
    """Count prefill and every decode step of one ``model.generate(*args, **kwargs, **generate_kwargs)``.

    The model's top-level calls are the steps: step 0 is ``prefill``, later steps ``decode``. Each
    carries operator FLOPs, operator bytes and the bytes of the K and V operands of its fused
    attention kernels, plus ``context_tokens``: with a cache (the effective ``use_cache``) the
    tokens fed in so far, this step's included; without one the step's own ``input_tokens``.
    Greedy decoding is used unless ``do_sample`` or a ``generation_config`` is given.

    With ``hardware`` (checked like ``crawl_module``'s) each step gains ``arithmetic_intensity``,
    ``roofline_seconds`` and ``bound``: a lower bound on time under the stated facts, not a
    prediction. With ``timing=True`` a second, separate ``generate()`` is timed: time to first
    token (from the ``generate`` call to the end of the first model call) and the mean time of a
    decode step's model call, device-synchronised; these are single-run wall-clock times of this
    process, not a serving latency.

    Every argument is checked before any model code runs (``TypeError``/``ValueError``); the
    model's own exceptions propagate unchanged and leave no hook installed.
    """
    merged, facts = _check_arguments(model, args, kwargs, generate_kwargs, hardware, timing)
    device = _timing_device(model) if timing else None  # refused before any model code runs

    def workload() -> None:
        model.generate(*args, **merged)  # type: ignore[operator]

    watcher = _CacheWatcher()
    handle = model.register_forward_pre_hook(watcher, with_kwargs=True)
    try:
        flop_report = measure_flops(workload, modules=model, by_step=True, bytes=True)
    finally:
        handle.remove()
    context = _context(model, args, merged, watcher.cache_class)
    report = build_report(flop_report, context, facts)
    if device is not None:  # timing=True
        report["timing"] = time_generation(model, workload, device)
        if report["timing"]["decode_step_mean"]["status"] == "unavailable":
            report["diagnostics"].append(
                diagnostic(
                    "no_decode_steps",
                    "the timed generate() called the model at most once: no decode step was timed",
                    metric="decode_step_mean",
                )
            )
    return report


def build_report(
    flop_report: FlopReport, context: GenerationContext, hardware: HardwareFacts | None
) -> GenerationReport:
    """Assemble a GenerationReport from a by_step FlopReport (pure; the counting already ran)."""
    steps = build_steps(flop_report["by_step"], context["use_cache"])
    means, notes = decode_means(steps)
    fit, fit_notes = decode_fit(steps)
    diagnostics: list[Diagnostic] = [*notes, *fit_notes, *untested_torch_diagnostics()]
    if not steps:
        diagnostics.insert(
            0,
            diagnostic(
                "no_steps",
                "generate() never called the model: there is no prefill or decode step",
                metric="steps",
            ),
        )
    if hardware is not None:
        context["hardware"] = hardware
        diagnostics.extend(add_step_rooflines(steps, hardware))
    evidence = {key: value for key, value in flop_report.items() if key not in ("by_step", "outside_steps")}
    return {
        "schema_version": SCHEMA_VERSION,
        "report_type": "generation",
        "context": context,
        "steps": steps,
        "outside_steps": flop_report["outside_steps"],
        "prefill": phase_totals(steps, "prefill"),
        "decode": phase_totals(steps, "decode"),
        "decode_per_token": means,
        "decode_fit": fit,
        "operator_flops": evidence,  # type: ignore[typeddict-item]
        "diagnostics": diagnostics,
    }


# --- timing (a separate pass) ------------------------------------------------------------------


class _StepClock:
    """Forward hooks timing each top-level model call with a synchronised perf counter."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.depth = 0
        self.started = 0.0
        self.ends: list[float] = []
        self.durations: list[float] = []

    def before(self, module: nn.Module, args: Any) -> None:
        self.depth += 1
        if self.depth == 1:
            self.started = self.clock()

    def after(self, module: nn.Module, args: Any, output: Any) -> None:
        self.depth -= 1
        if self.depth == 0:
            end = self.clock()
            self.ends.append(end)
            self.durations.append(end - self.started)


def _timing_device(model: nn.Module) -> Device:
    """Where the model's tensors live, checked for timing (cpu, cuda, mps; never meta).

    A ``ValueError`` (meta, an unsupported or unavailable device) is raised before any model code.
    """
    tensors = [*model.parameters(), *model.buffers()]
    name = str(tensors[0].device) if tensors else "cpu"
    try:
        return resolve_device(name)
    except NotImplementedError:
        raise ValueError(f"timing=True cannot time a model on {name!r}: use cpu, cuda or mps") from None


def time_generation(model: nn.Module, workload: Callable[[], None], device: Device) -> GenerationTiming:
    """Run ``workload`` (one generate()) once more and time its model calls (generation.md 2).

    ``time_to_first_token`` runs from the ``generate`` call to the end of the first model call (the
    first token's logits; picking the token afterwards is not included); ``decode_step_mean`` and
    ``decode_step_iqr`` summarise the later calls' durations, kept raw in ``decode_step_seconds``.
    """
    sync = synchronizer(device)

    def clock() -> float:
        sync()
        return time.perf_counter()

    recorder = _StepClock(clock)
    with TIMING_LOCK:
        handles = [
            model.register_forward_pre_hook(recorder.before),
            model.register_forward_hook(recorder.after, always_call=True),
        ]
        try:
            start = clock()
            workload()
        finally:
            for handle in handles:
                handle.remove()
    seconds = [max(duration, 0.0) for duration in recorder.durations[1:]]

    def timed(scope: str, value: float | None) -> MetricResult:
        if value is None:
            return metric_result("unavailable", unit="seconds", scope=scope, method=TIMING_METHOD)
        return metric_result("complete", value, unit="seconds", scope=scope, method=TIMING_METHOD)

    first = recorder.ends[0] - start if recorder.ends else None
    return {
        "time_to_first_token": timed("first_token", first),
        "decode_step_mean": timed("decode_step_mean", sum(seconds) / len(seconds) if seconds else None),
        "decode_step_iqr": timed("decode_step", interquartile_range(seconds) if seconds else None),
        "decode_step_seconds": seconds,
    }
