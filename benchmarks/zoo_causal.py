"""How much counting causal attention as executed changes the zoo's transformers (issue #33).

Usage: ``python benchmarks/zoo_causal.py [--only NAME,...]``. For every transformers model of the zoo
(forward under ``torch.no_grad()``), operator FLOPs are measured twice in the same process: as the
library counts them (fused kernels count the (query, key) pairs their mask keeps,
attention-and-scaling.md 1), and with every fused kernel made to count every pair — what a
mask-unaware count (FlopCounterMode's, and TorchScan's before issue #33) reads. Models whose fused
attention is not causal (encoders) or that run attention unfused (eager matmuls: every score is
computed, then masked) show no change. Prints one Markdown row per model.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # the checkout's library, as zoo.py

import torch
import zoo_models

import torchscan
from torchscan.formulas import attention_kernels

FUSED = tuple(f"aten.{name}" for name in attention_kernels.ATTENTION_KERNELS)


@contextmanager
def every_pair() -> Iterator[None]:
    """Fused kernels count every (query, key) pair for as long as the block runs (a measurement
    device of this script only: the library's own count is always mask-aware)."""
    kept = attention_kernels.kept_pairs

    def dense(lq: int, lk: int, lower: int | None = None, upper: int | None = None) -> tuple[int, int]:
        return kept(lq, lk, None, None)

    attention_kernels.kept_pairs = dense  # type: ignore[assignment]
    try:
        yield
    finally:
        attention_kernels.kept_pairs = kept  # type: ignore[assignment]


def _fused(report: dict[str, Any]) -> int:
    return sum(flops for name, flops in report["by_operator"].items() if name in FUSED)


def measure(spec: zoo_models.ZooSpec) -> dict[str, Any]:
    """The model's operator FLOPs counted mask-aware and counting every pair."""
    torch.manual_seed(0)
    model, args, kwargs = spec.build()
    model.eval()
    with torch.no_grad():
        aware = torchscan.measure_flops(lambda: model(*args, **kwargs))
        with every_pair():
            dense = torchscan.measure_flops(lambda: model(*args, **kwargs))
    return {
        "name": spec.name,
        "status": aware["total"]["status"],
        "total": aware["total"]["known_value"],
        "dense_total": dense["total"]["known_value"],
        "attention": _fused(aware),
        "dense_attention": _fused(dense),
    }


def markdown(rows: list[dict[str, Any]]) -> list[str]:
    """One row per model: both totals, the fused attention's share and the change."""
    lines = [
        "| model | status | operator FLOPs (mask-aware) | counting every pair | change "
        "| fused attention: mask-aware / every pair |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        change = (row["total"] - row["dense_total"]) / row["dense_total"] if row["dense_total"] else 0.0
        lines.append(
            f"| {row['name']} | {row['status']} | {row['total']:,} | {row['dense_total']:,} | "
            f"{change:+.2%} | {row['attention']:,} / {row['dense_attention']:,} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (see the module docstring)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", help="comma-separated zoo names")
    options = parser.parse_args(argv)
    only = set(options.only.split(",")) if options.only else None
    torch.set_num_threads(1)
    rows = []
    for spec in zoo_models.catalogue():
        if spec.family != "transformers" or spec.large or (only and spec.name not in only):
            continue
        rows.append(measure(spec))
        print(f"{spec.name}: done", file=sys.stderr)
    print("\n".join(markdown(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
