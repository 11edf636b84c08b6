"""The cost of looking, part by part (issue #36): what PyTorch itself charges before TorchScan counts.

Usage: ``python benchmarks/cost_parts.py`` (``--models stack1000,mobilenetv3`` by default, any key of
``models.py``; ``--repeats N``, default 15; ``--smoke`` for CI: the tiny stack, 2 repetitions).

Per model, one process, CPU, ``torch.set_num_threads(1)``, every call under ``torch.no_grad()``, one
warm-up of each variant and then ``--repeats`` interleaved rounds in rotating order with
``gc.collect()`` before each timed call (medians):

- ``bare``: the forward alone;
- ``floor``: the forward under an empty ``TorchDispatchMode`` (``tools.ForwardingMode``);
- ``hooks``: the forward with two empty process-global module hooks, installed as ``crawl_module``
  installs its own (a pre-hook; a post-hook with keywords, called also when a forward raises);
- ``floor + hooks``: both; the least any counter that attributes operators to module calls pays
  in PyTorch, before any bookkeeping of its own;
- TorchScan: ``crawl_module`` structure and full, ``measure_flops``.

Each row's overhead (time − bare) is divided by the floor's overhead: issue #36's targets are full
≤ 3.0 and ``measure_flops`` ≤ 2.0 there, so ``floor + hooks`` shows how much of that budget is gone
before TorchScan runs a line. Timing only: nothing here is a test threshold.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's torchscan
sys.path.insert(0, str(Path(__file__).resolve().parent))

import models
import torch
from tools import ForwardingMode
from torch.nn.modules import module as module_globals
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from zoo_overhead import interleaved_medians

import torchscan

VARIANTS = ("bare", "floor", "hooks", "floor + hooks", "structure", "measure_flops", "full")


def _pre(_module: torch.nn.Module, _args: Any) -> None:
    return None


def _post(_module: torch.nn.Module, _args: Any, *_rest: Any) -> None:
    return None


def _with_empty_hooks(call: Callable[[], Any]) -> Callable[[], Any]:
    def hooked() -> Any:
        handles = [
            register_module_forward_pre_hook(_pre),
            register_module_forward_hook(_post, with_kwargs=True, always_call=True),
        ]
        try:
            return call()
        finally:
            for handle in handles:
                handle.remove()
                module_globals._global_forward_hooks_with_kwargs.pop(handle.id, None)

    return hooked


def variants(
    model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Callable[[], Any]]:
    """The calls timed per model, keyed as in :data:`VARIANTS`."""

    def bare() -> Any:
        return model(*args, **kwargs)

    def floor() -> Any:
        with ForwardingMode():
            return model(*args, **kwargs)

    return {
        "bare": bare,
        "floor": floor,
        "hooks": _with_empty_hooks(bare),
        "floor + hooks": _with_empty_hooks(floor),
        "structure": lambda: torchscan.crawl_module(model, args=args, kwargs=kwargs, mode="structure"),
        "measure_flops": lambda: torchscan.measure_flops(bare),
        "full": lambda: torchscan.crawl_module(model, args=args, kwargs=kwargs),
    }


def rows(name: str, medians: dict[str, float]) -> list[str]:
    """Markdown rows of one model: ms, ÷ bare, and overhead ÷ the floor's overhead."""
    bare = medians["bare"]
    floor = medians["floor"] - bare
    lines = []
    for key in VARIANTS:
        value = medians[key]
        over_floor = "–" if key == "bare" or floor <= 0 else f"{(value - bare) / floor:.2f}"
        lines.append(f"| {name} | {key} | {value * 1e3:.1f} | {value / bare:.2f} | {over_floor} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", default="stack1000,mobilenetv3", help="comma-separated models.py keys")
    parser.add_argument("--repeats", type=int, default=15, help="interleaved timed rounds (default 15)")
    parser.add_argument("--smoke", action="store_true", help="CI: the tiny stack, 2 rounds")
    options = parser.parse_args(sys.argv[1:] if argv is None else argv)
    keys = ["stack-tiny"] if options.smoke else options.models.split(",")
    repeats = 2 if options.smoke else options.repeats
    unknown = [key for key in keys if key not in models.BY_KEY]
    if unknown or repeats < 1:
        parser.error(f"unknown models: {', '.join(unknown)}" if unknown else "--repeats must be at least 1")
    torch.set_num_threads(1)
    lines = [
        "| model | variant | median ms | ÷ bare | overhead ÷ floor overhead |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for key in keys:
        spec = models.BY_KEY[key]
        model, args, kwargs = spec.build()
        model.eval()
        lines += rows(spec.name, interleaved_medians(variants(model, args, kwargs), repeats))
        print(f"{key}: done", file=sys.stderr, flush=True)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
