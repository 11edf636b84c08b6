"""Time TorchScan against a bare forward pass and PyTorch's FlopCounterMode, interleaved.

Usage: ``python benchmarks/run.py`` (full run, minutes) or ``python benchmarks/run.py --smoke``
(seconds; what CI runs: tiny models, no thresholds). Prints a Markdown table of ratios to the bare
forward and to FlopCounterMode alone. One process, one run, median of the repetitions, CPU,
``torch.set_num_threads(1)``. Peers (torchinfo, fvcore, ptflops, thop) are timed by
``benchmarks/peers.py`` when installed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, str(Path(__file__).resolve().parent))

from models import build_models

import torchscan


def _time(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def contenders(model: nn.Module, inputs: tuple[torch.Tensor, ...]) -> dict[str, Callable[[], object]]:
    """Every timed variant of one model, each a zero-argument callable."""

    def bare() -> None:
        with torch.no_grad():
            model(*inputs)

    def flop_counter() -> None:
        with torch.no_grad(), FlopCounterMode(display=False):
            model(*inputs)

    def measure_flops() -> None:
        with torch.no_grad():
            torchscan.measure_flops(lambda: model(*inputs))

    return {
        "bare forward": bare,
        "FlopCounterMode": flop_counter,
        "torchscan structure": lambda: torchscan.crawl_module(model, args=inputs, mode="structure"),
        "torchscan full": lambda: torchscan.crawl_module(model, args=inputs),
        "torchscan measure_flops": measure_flops,
    }


def run(models: dict[str, tuple[nn.Module, tuple[torch.Tensor, ...]]], repeats: int) -> list[str]:
    """Interleave every contender per repetition and return Markdown table lines."""
    lines = [
        "| model | contender | median s | × bare | × FlopCounterMode |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, (model, inputs) in models.items():
        model.eval()
        timed = contenders(model, inputs)
        for fn in timed.values():  # warm-up, outside the measurements
            fn()
        samples: dict[str, list[float]] = {label: [] for label in timed}
        for _ in range(repeats):
            for label, fn in timed.items():
                samples[label].append(_time(fn))
        medians = {label: statistics.median(values) for label, values in samples.items()}
        for label, median in medians.items():
            lines.append(
                f"| {name} | {label} | {median:.4f} | {median / medians['bare forward']:.2f} | "
                f"{median / medians['FlopCounterMode']:.2f} |"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; ``--smoke`` runs tiny models once for CI."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="tiny models, seconds, for CI")
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args(argv)
    torch.set_num_threads(1)
    models = build_models(smoke=options.smoke)
    lines = run(models, 1 if options.smoke else options.repeats)
    print(f"torch {torch.__version__}, torchscan {torchscan.__version__}, threads 1")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
