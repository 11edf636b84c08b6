"""Real reports of every kind, made by the library's own APIs on tiny models (a few seconds in all).

The JSON Schema tests validate each of them and check that together they use every field the
schemas declare (tests/report/test_json_schema.py). Each builder returns ``(label, report)``
pairs; labels name the scenario in failures.
"""

from __future__ import annotations

import copy
import tempfile
import warnings
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
from torch import nn

import torchscan
from torchscan import ModuleEstimates, ModuleHandler, metric_result

HARDWARE = {"name": "example", "peak_flops_per_second": 1e12, "memory_bandwidth_bytes_per_second": 1e11}
QUICK = {"warmup": 1, "min_run_time": 0.01, "min_repeats": 2}


class Residual(nn.Module):
    """Functional work in its own forward (a residual add): module FLOPs become partial."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)
        self.size_user = SizeUser()

    def forward(self, x: torch.Tensor, scale: float = 1.0, extra: Any = None) -> torch.Tensor:
        y = self.conv(x) + x
        return self.size_user(y, y.shape) * scale


class SizeUser(nn.Module):
    """Called with a ``torch.Size`` argument (value metadata kind ``size``)."""

    def forward(self, x: torch.Tensor, size: torch.Size) -> torch.Tensor:
        return x.reshape(size)


class Fails(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise KeyError("boom")


class Catches(nn.Module):
    """A parent that catches its child's error: the child's output is recorded as ``failed``."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = Fails()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> dict[str, Any]:
        try:
            self.inner(x)
        except KeyError:
            pass
        return {"out": self.lin(x), 1: None, "not an identifier": [object()]}


class Custom(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


class SubclassedAttention(nn.MultiheadAttention):
    """A subclass of a native type: its estimates and token dependencies are unavailable."""


def _handler(call: Any) -> ModuleEstimates:
    partial = metric_result("partial", 1, unit="MACs", scope="module_call", method="example_handler")
    return {"module_flops": int(call.output.numel()), "macs": partial, "dmas": None}


def analysis_reports() -> Iterator[tuple[str, Any]]:
    """Full, structure, hardware, custom-handler, failing-child and native Transformer analyses."""
    torch.manual_seed(0)
    model = nn.Sequential(Residual(), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 6 * 6, 2))
    x = torch.rand(1, 3, 6, 6)
    kwargs_model = Residual()
    yield "residual", torchscan.crawl_module(model, args=(x,))
    yield (
        "kwargs",
        torchscan.crawl_module(kwargs_model, args=(x,), kwargs={"scale": 2.0, "extra": [None, "t"]}),
    )
    yield "structure", torchscan.crawl_module(model, (3, 6, 6), mode="structure")
    yield "hardware", torchscan.crawl_module(nn.Linear(4, 4), (4,), hardware=HARDWARE)
    handler = ModuleHandler(_handler, subtree_metrics=frozenset({"module_flops"}))
    yield "custom", torchscan.crawl_module(nn.Sequential(Custom()), (4,), custom_modules={Custom: handler})
    yield "failed child", torchscan.crawl_module(Catches(), (4,))
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 1)
    yield "transformer", torchscan.crawl_module(encoder, args=(torch.rand(1, 5, 8),))
    x3 = torch.rand(1, 3, 4)
    yield (
        "unavailable tokens",
        torchscan.crawl_module(SubclassedAttention(4, 2, batch_first=True), args=(x3, x3, x3)),
    )
    with warnings.catch_warnings():  # "nested tensors are a prototype": not this suite's concern
        warnings.simplefilter("ignore", UserWarning)
        nested = torch.nested.nested_tensor([torch.rand(2, 4), torch.rand(3, 4)])
    yield "nested input", torchscan.crawl_module(nn.Identity(), args=(nested,), mode="structure")


def _training_step(model: nn.Module, x: torch.Tensor) -> Any:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step() -> None:
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()

    return step


def flop_reports() -> Iterator[tuple[str, Any]]:
    """Forward, bytes, steps, a training step and a workload with an uncounted operator."""
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    x = torch.rand(4, 8)
    yield "forward", torchscan.measure_flops(lambda: model(x))
    yield "bytes", torchscan.measure_flops(lambda: model(x), bytes=True)

    def two_steps() -> None:
        model(x)
        x.sum()  # outside any step
        model(x)

    yield "by_step", torchscan.measure_flops(two_steps, modules=model, by_step=True)
    yield "training", torchscan.measure_flops(_training_step(model, x))
    yield "uncounted", torchscan.measure_flops(lambda: torch.linalg.eigvals(torch.rand(3, 3)))


def memory_reports() -> Iterator[tuple[str, Any]]:
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    x = torch.rand(4, 8)
    yield "training", torchscan.measure_memory(_training_step(model, x), modules=model)
    with torch.device("meta"):
        meta_model = nn.Linear(8, 8)
    yield "meta", torchscan.measure_memory(lambda: meta_model(torch.empty(2, 8, device="meta")))


def generation_reports() -> Iterator[tuple[str, Any]]:
    """A tiny GPT-2 built from a config (random weights), with hardware facts and timing."""
    transformers = __import__("pytest").importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=32, n_positions=16)
    model = transformers.GPT2LMHeadModel(config).eval()
    ids = torch.arange(4).unsqueeze(0)
    generate = {"max_new_tokens": 3, "do_sample": False, "pad_token_id": 0}
    yield (
        "gpt2",
        torchscan.measure_generation(
            model, kwargs={"input_ids": ids}, generate_kwargs=generate, hardware=HARDWARE, timing=True
        ),
    )


def benchmark_reports() -> Iterator[tuple[str, Any]]:
    model = nn.Linear(8, 8)
    x = torch.rand(2, 8)
    yield "latency", torchscan.measure_latency(lambda: model(x), device="cpu", inputs=(x,), **QUICK)
    yield (
        "workload",
        torchscan.measure_workload(
            lambda: model(x),
            device="cpu",
            inputs=(x,),
            metrics=("flops", "latency", "throughput", "memory", "memory_ledger"),
            profile=True,
            hardware=HARDWARE,
            **QUICK,
        ),
    )
    yield "flops only", torchscan.measure_workload(lambda: model(x), device="cpu", metrics=("flops",))


def profile_reports() -> Iterator[tuple[str, Any]]:
    model = nn.Linear(8, 8)
    yield "profile", torchscan.profile_workload(lambda: model(torch.rand(2, 8)), device="cpu", limit=3)


def comparison_reports() -> Iterator[tuple[str, Any]]:
    """ReportDiff, MemoryDiff and BenchmarkComparison."""
    before = torchscan.crawl_module(nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU()), (3, 8, 8))
    after = torchscan.crawl_module(nn.Sequential(nn.Conv2d(3, 12, 3)), (3, 8, 8))
    yield "report_diff", torchscan.compare_reports(before, after)
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 1)
    tokens = [torchscan.crawl_module(encoder, args=(torch.rand(1, n, 8),)) for n in (4, 5)]
    yield "report_diff tokens", torchscan.compare_reports(*tokens)
    small, large = nn.Linear(8, 8), nn.Linear(8, 64)
    x = torch.rand(2, 8)
    memories = [
        torchscan.measure_memory(lambda m=m: m(x).sum().backward(), modules=m) for m in (small, large)
    ]
    yield "memory_comparison", torchscan.compare_reports(*memories)
    runs = [
        torchscan.measure_latency(lambda: small(x), device="cpu", inputs=(x,), **{**QUICK, "warmup": warmup})
        for warmup in (1, 2)  # a setting that may differ: listed in context_changes
    ]
    yield "benchmark_comparison", torchscan.compare_benchmarks(*runs, check=lambda: None)
    yield "benchmark_comparison failed", torchscan.compare_benchmarks(*runs, check=lambda: False)
    deeper = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2)
    yield (
        "report_diff added layers",
        torchscan.compare_reports(tokens[0], torchscan.crawl_module(deeper, args=(torch.rand(1, 4, 8),))),
    )
    with_layer = nn.Sequential(nn.Linear(8, 8), nn.TransformerEncoderLayer(8, 2, 16, batch_first=True))
    removed = [torchscan.crawl_module(m, args=(torch.rand(1, 4, 8),)) for m in (with_layer, with_layer[:1])]
    yield "report_diff removed layer", torchscan.compare_reports(*removed)
    # Two complete totals whose difference is beyond the float range: no delta, one diagnostic.
    sides = [copy.deepcopy(before), copy.deepcopy(before)]
    for side, value in zip(sides, (-1.7e308, 1.7e308), strict=True):
        side["totals"]["effective_padding"] = metric_result(
            "complete", value, unit="elements", scope="model", method="x", signed=True
        )
    yield "report_diff out of range", torchscan.compare_reports(*sides)


def merged_reports() -> Iterator[tuple[str, Any]]:
    """One-rank gloo process group (a FileStore, no port): flop, analysis and benchmark merges."""
    import torch.distributed as dist

    if dist.is_initialized():
        raise RuntimeError("a process group is already initialized in this process")
    model = nn.Linear(8, 8)
    x = torch.rand(2, 8)
    with tempfile.TemporaryDirectory() as folder:
        store = dist.FileStore(str(Path(folder, "store")), 1)
        dist.init_process_group("gloo", store=store, rank=0, world_size=1, timeout=timedelta(seconds=60))
        try:
            flops = torchscan.measure_flops(lambda: dist.all_reduce(model(x)))
            analysis = torchscan.crawl_module(model, args=(x,))
            bench = torchscan.measure_workload(lambda: model(x), device="cpu", inputs=(x,), **QUICK)
            memory = torchscan.measure_memory(lambda: model(x))
            tensor = _dtensor_flops(x)
        finally:
            dist.destroy_process_group()
    yield "flop rank", flops
    yield "analysis rank", analysis
    yield "benchmark rank", bench
    yield "memory rank", memory
    yield "dtensor rank", tensor
    yield "merged dtensor", torchscan.merge_reports([copy.deepcopy(tensor)])
    for label, report in (("flop", flops), ("analysis", analysis), ("benchmark", bench)):
        yield f"merged {label}", torchscan.merge_reports([copy.deepcopy(report)])


def _dtensor_flops(x: torch.Tensor) -> Any:
    """A DTensor matmul on a one-dimensional mesh: logical FLOPs, the mesh, and an uncounted operator."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, distribute_tensor

    mesh = init_device_mesh("cpu", (1,), mesh_dim_names=("tp",))
    weight = distribute_tensor(torch.rand(8, 8), mesh, [Replicate()])
    data = distribute_tensor(x, mesh, [Replicate()])

    def workload() -> None:
        (data @ weight).full_tensor()
        torch.linalg.eigvals(torch.rand(3, 3))  # uncounted: a rank diagnostic in the merged report

    return torchscan.measure_flops(workload)


BUILDERS = (
    analysis_reports,
    flop_reports,
    memory_reports,
    generation_reports,
    benchmark_reports,
    profile_reports,
    comparison_reports,
    merged_reports,
)  # scaling_reports joins below, once defined


def scaling_reports() -> Iterator[tuple[str, Any]]:
    """One axis with every metric; a grid whose build fails at one point (``errors``)."""

    def build(n: int) -> Any:
        torch.manual_seed(0)
        layer, x = nn.Linear(4, 4), torch.randn(n, 4)
        return lambda: layer(x).relu()

    yield (
        "scaling",
        torchscan.measure_scaling(
            build, {"n": [1, 2, 3, 4]}, metrics=("flops", "operator_bytes", "memory_peak", "latency")
        ),
    )

    def grid(n: int, batch: int) -> Any:
        if n == 2 and batch == 2:
            raise RuntimeError("this size does not fit")
        model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        return model, (torch.randn(batch, n, 4),), {}

    yield "scaling grid", torchscan.measure_scaling(grid, {"n": [1, 2, 3], "batch": [1, 2]})


BUILDERS = (*BUILDERS, scaling_reports)


def all_reports() -> list[tuple[str, Any]]:
    """Every report of every builder, in order."""
    return [pair for builder in BUILDERS for pair in builder()]
