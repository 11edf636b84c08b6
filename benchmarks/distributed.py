"""Counting overhead on a tensor-parallel MLP, 2 gloo ranks on CPU (issue #14 target ≤ 1.2×).

Each rank times, interleaved and in the same order on both ranks (every forward runs an
all_reduce, so the ranks must make the same calls): the bare forward, the forward under PyTorch's
``FlopCounterMode``, and ``torchscan.measure_flops`` of the forward. Each sample covers ``calls``
forwards; the table gives the median over ``repeats`` rounds, per rank, and the ratio to
FlopCounterMode. One process per rank, ``torch.set_num_threads(1)``.

    python benchmarks/distributed.py                 # 2 ranks, 7 rounds, two MLP sizes
    python benchmarks/distributed.py --smoke         # 1 round, tiny, seconds

What it does not measure: NCCL or GPUs, more than 2 ranks, or communication time on a network (the
2 ranks share one machine; gloo's all_reduce over loopback is part of every variant alike).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SIZES = {"spec": (32, 64, 8), "wide": (1024, 4096, 64)}  # (in/out features, hidden, batch)
TOOLS = ("bare forward", "FlopCounterMode", "torchscan measure_flops")


def tensor_parallel_mlp(features: int, hidden: int) -> Any:
    """``Linear(f, h) → ReLU → Linear(h, f)`` with ColwiseParallel / RowwiseParallel on all ranks."""
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, features))
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    return parallelize_module(model, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})


def _variants(model: Any, x: Any) -> dict[str, Callable[[], object]]:
    from torch.utils.flop_counter import FlopCounterMode

    import torchscan

    def flop_counter() -> object:
        with FlopCounterMode(display=False):
            return model(x)

    return {
        "bare forward": lambda: model(x),
        "FlopCounterMode": flop_counter,
        "torchscan measure_flops": lambda: torchscan.measure_flops(lambda: model(x)),
    }


def measure_rank(repeats: int, calls: int, sizes: dict[str, tuple[int, int, int]]) -> dict[str, Any]:
    """This rank's raw samples (seconds per call) per size and tool; both ranks run it in lockstep."""
    import torch

    results: dict[str, Any] = {}
    for name, (features, hidden, batch) in sizes.items():
        model = tensor_parallel_mlp(features, hidden)
        x = torch.randn(batch, features)
        variants = _variants(model, x)
        for call in variants.values():  # warm-up: DTensor caches its sharding decisions
            call()
        samples: dict[str, list[float]] = {tool: [] for tool in TOOLS}
        for round_index in range(repeats):
            order = TOOLS[round_index % 3 :] + TOOLS[: round_index % 3]  # same rotation on every rank
            for tool in order:
                start = time.perf_counter()
                for _ in range(calls):
                    variants[tool]()
                samples[tool].append((time.perf_counter() - start) / calls)
        results[name] = samples
    return results


def _rank_main(rank: int, store: str, repeats: int, calls: int, sizes: Any, out: str) -> None:
    import json

    import torch
    import torch.distributed as dist

    sys.path.insert(0, str(ROOT))
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", store=dist.FileStore(store, 2), rank=rank, world_size=2, timeout=timedelta(seconds=120)
    )
    try:
        result = measure_rank(repeats, calls, sizes)
    finally:
        dist.destroy_process_group()
    Path(out, f"rank{rank}.json").write_text(json.dumps(result))


def table(ranks: list[dict[str, Any]]) -> list[str]:
    """Markdown rows: median ms per call per rank, and the ratio to FlopCounterMode (pure)."""
    lines = [
        "| MLP | tool | rank 0 median ms | rank 1 median ms | × FlopCounterMode (rank 0 / rank 1) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for size in ranks[0]:
        medians = [{tool: statistics.median(r[size][tool]) for tool in TOOLS} for r in ranks]
        for tool in TOOLS:
            ratios = " / ".join(f"{m[tool] / m['FlopCounterMode']:.2f}" for m in medians)
            shown = " | ".join(f"{m[tool] * 1e3:.3f}" for m in medians)
            lines.append(f"| {size} | {tool} | {shown} | {ratios} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run both ranks and print the table."""
    import json

    import torch.multiprocessing as mp

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="1 round of 2 calls on the spec size")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args(argv)
    repeats, calls = (1, 2) if args.smoke else (args.repeats, args.calls)
    sizes = {"spec": SIZES["spec"]} if args.smoke else SIZES
    with tempfile.TemporaryDirectory() as directory:
        mp.spawn(
            _rank_main, args=(f"{directory}/store", repeats, calls, sizes, directory), nprocs=2, join=True
        )
        ranks = [json.loads(Path(directory, f"rank{r}.json").read_text()) for r in (0, 1)]
    print(f"Tensor-parallel MLP, 2 gloo ranks, {repeats} rounds × {calls} calls, 1 thread per rank")
    print("\n".join(table(ranks)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
