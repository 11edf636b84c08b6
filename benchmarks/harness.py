"""The benchmark harness: interleaved timing in one process, peak RSS in fresh processes.

Timing: for each model, every available tool is called once as a warm-up (a tool that raises is
recorded as failed and left out), then ``repeats`` rounds call every tool once each, in an order that
rotates every round so no tool always follows the same neighbour. ``gc.collect()`` runs before every
timed call, outside the timed region, so one tool's garbage is not collected on another's clock; the
collector stays enabled during the call, as it would be for a user. Samples are kept raw; the median is
computed when the table is rendered.

Peak RSS: each (tool, model) pair runs once in a fresh interpreter (``run.py --rss-child TOOL MODEL``)
whose whole-lifetime peak is read with ``torchscan.measure_peak_rss``: interpreter start, imports,
model construction and one call. It is not an increment over the bare forward; compare rows.

Retained report memory (TorchScan's two ``crawl_module`` modes): after the timed rounds, one more call
under ``tracemalloc`` measures the Python memory still allocated while its report is held, divided by
the report's layer calls (the spec's "≤ 4 KiB of retained report per layer call").
"""

from __future__ import annotations

import copy
import gc
import os
import subprocess
import sys
import time
import tracemalloc
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import models
import tools
import torch
from torch import nn

RUN_SCRIPT = Path(__file__).resolve().parent / "run.py"
RETAINED_TOOLS = ("ts-structure", "ts-full")  # measured for retained report memory, in this order


@dataclass
class Outcome:
    """What happened to one tool on one model: raw samples in seconds, or why there are none."""

    samples: list[float] = field(default_factory=list)
    status: str = "ok"  # "ok", "failed: <ExceptionType>", "not installed", "not selected"
    slow: bool = False  # timed from the warm-up call only (it exceeded the per-call budget)
    mutated: bool = False  # left hooks or buffers on the shared model (non-isolated tools only)
    rss_bytes: int | None = None
    rss_status: str | None = None  # None: not measured
    retained_per_call: float | None = None  # bytes per layer call held by the returned report


@dataclass
class ModelResult:
    """All outcomes for one model, keyed by tool key, in registry order."""

    spec: models.ModelSpec
    status: str = "ok"  # or "skipped: <reason>"
    outcomes: dict[str, Outcome] = field(default_factory=dict)


def _signature(model: nn.Module) -> tuple[int, int, tuple[str, ...]]:
    """Hooks and state keys of a model: changes mean a tool left something behind."""
    hooks = sum(
        len(m._forward_hooks) + len(m._forward_pre_hooks) + len(m._backward_hooks) for m in model.modules()
    )
    return hooks, len(list(model.buffers())), tuple(model.state_dict())


def _preparer(tool: tools.Tool, model: nn.Module, args: tuple, kwargs: dict) -> Callable[[], tools.Call]:
    """A zero-argument function returning the callable to time; isolated tools get a fresh model copy."""
    if tool.isolated:
        return lambda: tool.factory(copy.deepcopy(model), args, kwargs)
    call = tool.factory(model, args, kwargs)
    return lambda: call


def _timed(prepare: Callable[[], tools.Call], collect: bool = True) -> float:
    call = prepare()
    if collect:
        gc.collect()
    start = time.perf_counter()
    call()
    elapsed = time.perf_counter() - start
    del call
    return elapsed


def time_model(
    spec: models.ModelSpec,
    selected: Sequence[tools.Tool],
    repeats: int,
    budget_s: float,
    log: Callable[[str], None],
    collect: bool = True,
) -> ModelResult:
    """Build one model and time every selected tool on it, interleaved.

    ``collect=False`` skips the untimed ``gc.collect()`` before each call (a full collection of a heap
    holding torch and transformers costs ~0.1 s): for smoke runs, which measure nothing.
    """
    result = ModelResult(spec)
    try:
        model, args, kwargs = spec.build()
    except ImportError as error:
        result.status = f"skipped: {error.name or 'a dependency'} not installed"
        return result
    model.eval()
    prepared: dict[str, Callable[[], tools.Call]] = {}
    for tool in tools.TOOLS:
        outcome = result.outcomes[tool.key] = Outcome()
        if tool not in selected:
            outcome.status = "not selected"
        elif not tool.available():
            outcome.status = "not installed"
        else:
            before = _signature(model)
            try:
                prepare = _preparer(tool, model, args, kwargs)
                elapsed = _timed(prepare, collect)
            except Exception as error:  # a peer that cannot handle this model is a result, not a crash
                outcome.status = f"failed: {type(error).__name__}"
                first_line = str(error).splitlines()[0][:200] if str(error) else ""
                log(f"  {tool.key}: {outcome.status}: {first_line}")
                continue
            outcome.mutated = not tool.isolated and _signature(model) != before
            if elapsed > budget_s:
                outcome.samples, outcome.slow = [elapsed], True
                log(f"  {tool.key}: warm-up took {elapsed:.1f} s > budget {budget_s:.0f} s; timed once")
            else:
                prepared[tool.key] = prepare
    order = list(prepared)
    for round_index in range(repeats):
        shift = round_index % len(order) if order else 0
        for key in order[shift:] + order[:shift]:
            result.outcomes[key].samples.append(_timed(prepared[key], collect))
    log(f"  timed {len(order)} tools × {repeats}")
    for key in RETAINED_TOOLS:
        if key in prepared:
            result.outcomes[key].retained_per_call = retained_per_layer_call(prepared[key]())
    del prepared, model, args, kwargs
    gc.collect()
    return result


def retained_per_layer_call(call: tools.Call) -> float:
    """Bytes of Python memory still allocated after one call while its report is held, per layer call.

    ``tracemalloc`` sees every Python allocation (the report's dicts, lists and strings), not tensor
    storage; the forward's activations are freed before the measurement, the report is not.
    """
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        report: Any = call()
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    return retained / max(1, len(report["layers"]))


def measure_rss(result: ModelResult, selected: Sequence[tools.Tool], log: Callable[[str], None]) -> None:
    """Peak RSS of every timed tool on this model, each in a fresh process."""
    if result.status != "ok":
        return
    measure = _peak_rss_function()
    for tool in selected:
        outcome = result.outcomes[tool.key]
        if outcome.status != "ok":
            continue
        command = [sys.executable, str(RUN_SCRIPT), "--rss-child", tool.key, result.spec.key]
        try:
            outcome.rss_bytes = measure(command)
            outcome.rss_status = "ok"
        except subprocess.CalledProcessError as error:
            outcome.rss_status = f"failed (exit {error.returncode})"
        log(f"  rss {tool.key}: {outcome.rss_status}")


def _peak_rss_function() -> Callable[[list[str]], int]:
    """``torchscan.measure_peak_rss`` when importable; otherwise a plain ``os.wait4`` fallback.

    The fallback starts the child straight from this (large) process, so on Linux the child's figure
    may include this process's high-water mark; the table says which method ran.
    """
    try:
        from torchscan import measure_peak_rss
    except ImportError:
        return _wait4_peak_rss

    def measure(command: list[str]) -> int:
        metric = measure_peak_rss(command)
        return int(metric["value"])

    return measure


def _wait4_peak_rss(command: list[str]) -> int:
    process = subprocess.Popen(command)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise subprocess.CalledProcessError(process.returncode, command)
    return usage.ru_maxrss * (1024 if sys.platform == "linux" else 1)


def rss_child(tool_key: str, model_key: str) -> int:
    """Body of ``--rss-child``: build one model, call one tool once, exit. Exit 3 when the tool fails."""
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    tool = tools.BY_KEY[tool_key]
    model, args, kwargs = models.BY_KEY[model_key].build()
    model.eval()
    try:
        tool.factory(model, args, kwargs)()
    except Exception as error:
        print(f"rss-child {tool_key} on {model_key}: {type(error).__name__}", file=sys.stderr)
        return 3
    return 0
