"""What each of the 2 gloo ranks runs for tests/distributed (imported by the spawned processes).

One spawn runs every scenario (spawning costs seconds per process on 2 cores); each scenario returns
JSON so that the parent process can assert on the reports of both ranks.
"""

from __future__ import annotations

from typing import Any


def _mlp() -> Any:
    import torch
    from torch import nn

    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 32))


def _fully_shard() -> Any:
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:  # torch releases that kept FSDP2 under _composable
        from torch.distributed._composable.fsdp import fully_shard
    return fully_shard


def acceptance(rank: int) -> dict[str, Any]:
    """Every exact example of distributed.md 5, plus crawl_module and measure_workload per rank."""
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    import torchscan

    mesh = init_device_mesh("cpu", (2,))
    results: dict[str, Any] = {}

    a = distribute_tensor(torch.randn(64, 32), mesh, [Shard(0)])
    b = distribute_tensor(torch.randn(32, 16), mesh, [Replicate()])
    results["matmul"] = torchscan.measure_flops(lambda: a @ b)
    # Shard(1) @ Replicate: DTensor chunks and copies B's rows to match, then multiplies locally
    a1 = distribute_tensor(torch.randn(64, 32), mesh, [Shard(1)])
    results["redistributed"] = torchscan.measure_flops(lambda: a1 @ b)

    tp = parallelize_module(_mlp(), mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    x = torch.randn(8, 32)
    results["tp_mlp"] = torchscan.measure_flops(lambda: tp(x))
    results["tp_crawl"] = torchscan.crawl_module(tp, args=(x,))
    # Timing agrees its call counts across ranks and every other pass calls the workload once, so
    # a timed workload may run collectives: the Rowwise Linear all-reduces its output on every call.
    results["tp_workload"] = torchscan.measure_workload(
        lambda: tp(x),
        device="cpu",
        metrics=("flops", "latency", "memory"),
        warmup=1,
        min_run_time=0.01,
        min_repeats=2,
    )
    results.update(_uneven_timing(rank))

    fsdp = _mlp()
    _fully_shard()(fsdp, mesh=mesh)
    results["fsdp"] = torchscan.measure_flops(lambda: fsdp(x).sum().backward())

    from torch.nn.parallel import DistributedDataParallel

    ddp = DistributedDataParallel(_mlp())
    results["ddp"] = torchscan.measure_flops(lambda: ddp(x).sum().backward())

    # A DTensor operator that raises inside DTensor's dispatch: the same error propagates and no
    # dispatch mode stays installed (the observer re-entered itself for the local operators).
    wrong = distribute_tensor(torch.randn(16, 16), mesh, [Replicate()])
    try:
        torchscan.measure_flops(lambda: a @ wrong)
    except RuntimeError as error:
        results["dtensor_error"] = type(error).__name__
    results["modes_left"] = torch._C._len_torch_dispatch_stack()

    # TorchScan never destroys (or re-initializes) the caller's process group.
    results["group_still_initialized"] = dist.is_initialized()
    return results


def _uneven_timing(rank: int) -> dict[str, Any]:
    """Rank 1 is ~20x slower per call: counts from each rank's own clock differ; agreed ones do not.

    The agreed workload issues an asynchronous all_reduce per call and waits for them only after
    timing, so the fast rank is not slowed down to the slow one's pace (a synchronous collective
    would equalise the clocks and hide a disagreement). Had the ranks run different numbers of
    calls, waiting for the pending all_reduces would fail at the group's 60 s timeout.
    """
    import time

    import torch
    import torch.distributed as dist

    import torchscan

    pending: list[Any] = []

    def uneven() -> None:
        if rank == 1:
            time.sleep(0.0005)
        pending.append(dist.all_reduce(torch.ones(1), async_op=True))

    agreed = torchscan.measure_latency(uneven, device="cpu", warmup=1, min_run_time=0.02, min_repeats=2)
    for work in pending:
        work.wait()
    # The same uneven pace without a collective, each rank on its own clock (the opt-out).
    alone = torchscan.measure_latency(
        lambda: time.sleep(0.0005) if rank == 1 else None,
        device="cpu",
        warmup=0,
        min_run_time=0.02,
        min_repeats=2,
        agree_across_ranks=False,
    )
    # Different warmups cannot be agreed: every rank raises before its first call, none hangs.
    mismatch: list[str] = []
    try:
        torchscan.measure_latency(lambda: mismatch.append("called"), device="cpu", warmup=rank)
    except ValueError as error:
        mismatch.append(str(error))
    return {"agreed": agreed, "agreed_calls": len(pending), "alone": alone, "warmup_mismatch": mismatch}


def raising(rank: int) -> None:
    """Rank 1 fails: the harness must report it, not hang while rank 0 waits at a collective."""
    import torch
    import torch.distributed as dist

    if rank == 1:
        raise RuntimeError("rank 1 failed on purpose")
    dist.all_reduce(torch.ones(1))
