"""Zoo overhead (issues #24, #36): ``crawl_module`` full and ``measure_flops`` ÷ bare forward, per zoo model.

Usage: ``python benchmarks/zoo_overhead.py`` (every non-large zoo model; ``--only NAME[,NAME]``,
``--limit N``, ``--repeats N`` (default 5), ``--markdown FILE``). One process, CPU,
``torch.set_num_threads(1)``, models built one at a time from ``zoo_models.py`` (random weights, no
downloads); per model one warm-up call of each of the four (the bare forward, the floor, full and
``measure_flops``), then ``--repeats`` interleaved rounds in rotating order, ``gc.collect()`` before
each timed call, every call under ``torch.no_grad()``; ratios are median ÷ median. The floor is the
forward under an empty ``TorchDispatchMode`` (``tools.ForwardingMode``): what any dispatch-level
counter pays before it counts. The summary is the median ratio over the models against issue #36's
targets (full ÷ bare ≤ 1.5, measure_flops ÷ bare ≤ 1.25), beside the floor's own median.
Timing only: zoo.py reports what the models count.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's torchscan, as zoo.py
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch
import zoo_models
from tools import ForwardingMode

import torchscan

FULL_OVER_BARE = 1.5
MEASURE_FLOPS_OVER_BARE = 1.25


def _calls(
    model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Callable[[], Any]]:
    def floor() -> Any:
        with ForwardingMode():
            return model(*args, **kwargs)

    return {
        "bare": lambda: model(*args, **kwargs),
        "floor": floor,
        "full": lambda: torchscan.crawl_module(model, args=args, kwargs=kwargs),
        "measure_flops": lambda: torchscan.measure_flops(lambda: model(*args, **kwargs)),
    }


def interleaved_medians(calls: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """Median seconds per call: one warm-up each, then ``repeats`` rounds in rotating order, each timed
    call after ``gc.collect()``, all under ``torch.no_grad()`` (``cost_parts.py`` times this way too)."""
    samples: dict[str, list[float]] = {key: [] for key in calls}
    keys = list(calls)
    with torch.no_grad():
        for call in calls.values():
            call()  # warm-up
        for round_index in range(repeats):
            shift = round_index % len(keys)
            for key in keys[shift:] + keys[:shift]:
                gc.collect()
                started = time.perf_counter()
                calls[key]()
                samples[key].append(time.perf_counter() - started)
    return {key: statistics.median(values) for key, values in samples.items()}


def time_model(spec: zoo_models.ZooSpec, repeats: int) -> dict[str, Any]:
    """Median seconds of each tool on one zoo model (or the error that stopped it)."""
    entry: dict[str, Any] = {"name": spec.name}
    try:
        model, args, kwargs = spec.build()
        model.eval()
        medians = interleaved_medians(_calls(model, args, kwargs), repeats)
    except Exception as error:  # a model that cannot run is reported, never stops the run
        entry["error"] = f"{type(error).__name__}: {error}"[:200]
        return entry
    entry.update(medians)
    return entry


def summary(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Median ratios over the models that ran (``None`` when none did)."""
    timed = [entry for entry in entries if "error" not in entry]
    full = [entry["full"] / entry["bare"] for entry in timed]
    flops = [entry["measure_flops"] / entry["bare"] for entry in timed]
    floor = [entry["floor"] / entry["bare"] for entry in timed if "floor" in entry]
    return {
        "models": len(timed),
        "errors": [entry["name"] for entry in entries if "error" in entry],
        "full_over_bare": statistics.median(full) if full else None,
        "measure_flops_over_bare": statistics.median(flops) if flops else None,
        "floor_over_bare": statistics.median(floor) if floor else None,
    }


def markdown(entries: list[dict[str, Any]], facts: dict[str, Any]) -> str:
    """Per-model rows and the two medians against their targets."""
    lines = [
        "| model | bare ms | floor ÷ bare | full ÷ bare | measure_flops ÷ bare |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for entry in entries:
        if "error" in entry:
            lines.append(f"| {entry['name']} | {entry['error']} | | | |")
            continue
        bare = entry["bare"]
        floor = f"{entry['floor'] / bare:.2f}×" if "floor" in entry else "–"
        lines.append(
            f"| {entry['name']} | {bare * 1e3:.1f} | {floor} | {entry['full'] / bare:.2f}× | "
            f"{entry['measure_flops'] / bare:.2f}× |"
        )

    def cell(value: float | None, target: float) -> str:
        return (
            "–"
            if value is None
            else f"{value:.2f}× (target ≤ {target:g}, {'met' if value <= target else 'not met'})"
        )

    lines += [
        "",
        f"- models timed: {facts['models']}"
        + (f"; failed: {', '.join(facts['errors'])}" if facts["errors"] else ""),
        f"- median full ÷ bare: {cell(facts['full_over_bare'], FULL_OVER_BARE)}",
        f"- median measure_flops ÷ bare: {cell(facts['measure_flops_over_bare'], MEASURE_FLOPS_OVER_BARE)}",
        "- median floor ÷ bare (an empty dispatch mode, no target): "
        + ("–" if facts.get("floor_over_bare") is None else f"{facts['floor_over_bare']:.2f}×"),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", help="comma-separated zoo names")
    parser.add_argument("--limit", type=int, help="time at most this many models")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved timed rounds (default 5)")
    parser.add_argument("--markdown", type=Path, help="also write the Markdown to this file")
    options = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if options.repeats < 1 or (options.limit is not None and options.limit < 1):
        parser.error("--repeats and --limit must be at least 1")
    specs = [spec for spec in zoo_models.catalogue() if not spec.large]
    if options.only:
        by_name = {spec.name: spec for spec in zoo_models.catalogue()}
        unknown = [name for name in options.only.split(",") if name not in by_name]
        if unknown:
            parser.error(f"unknown zoo names: {', '.join(unknown)}")
        specs = [by_name[name] for name in options.only.split(",")]
    specs = specs[: options.limit] if options.limit else specs
    warnings.simplefilter("ignore")  # transformers warns per call; warnings are not under test
    torch.set_num_threads(1)
    entries = []
    for spec in specs:
        entries.append(time_model(spec, options.repeats))
        gc.collect()
        print(f"{spec.name}: done", file=sys.stderr, flush=True)
    text = markdown(entries, summary(entries))
    print(text, end="")
    if options.markdown:
        options.markdown.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
