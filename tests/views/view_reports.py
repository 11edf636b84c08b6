"""Hand-built reports following analysis.md 5 and workloads.md 5.4/6.8, for view tests.

Nothing here imports torch: the views must work on saved JSON alone.
"""

from __future__ import annotations

import copy
from typing import Any

from torchscan.report.schema import metric_result

P = '</script><script>window.pwned=1</script><img src=x onerror="alert(1)">&\'' + "\u2028\u2029"
BIDI = "evil\u202eplh.exe"

CONTEXT = {
    "torchscan_version": "0.3.0.dev0",
    "torch_version": "2.13.0",
    "python_version": "3.11.9",
    "model_type": "torch.nn.modules.container.Sequential",
    "execution_mode": "evaluation_no_grad",
    "training_before": True,
    "devices": ["cpu"],
    "dtypes": ["torch.float32"],
    "analysis_mode": "full",
}
OP_METHOD = "torchscan_flops_v1"
FORMULA = "torchscan_module_formula"


def tensor(*shape: int) -> dict[str, Any]:
    return {
        "kind": "tensor",
        "shape": list(shape),
        "dtype": "torch.float32",
        "device": "cpu",
        "requires_grad": False,
    }


def m(
    status: str, value: float | None, unit: str = "FLOPs", method: str = FORMULA, scope: str = "module_call"
):
    return metric_result(status, value, unit=unit, scope=scope, method=method)  # type: ignore[arg-type]


def layer(
    path: str,
    type_: str,
    *,
    call_index: int = 0,
    flops: float | None = None,
    macs: float | None = None,
    dmas: float | None = None,
    params: int = 0,
    shared: bool = False,
    shape_in: tuple[int, ...] = (1, 4),
    shape_out: tuple[int, ...] = (1, 4),
    status: str = "complete",
) -> dict[str, Any]:
    """One LayerReport; compute metrics are omitted when their value is None and status complete."""
    metrics: dict[str, Any] = {"calls": m("complete", 1, "calls", "pytorch_hook")}
    for name, value, unit in (
        ("module_flops", flops, "FLOPs"),
        ("macs", macs, "MACs"),
        ("dmas", dmas, "DMAs"),
    ):
        if status == "unavailable":
            metrics[name] = m("unavailable", None, unit)
        elif status == "partial" and value is not None:
            metrics[name] = m("partial", value, unit)
        elif value is not None:
            metrics[name] = m("complete", value, unit)
    return {
        "path": path,
        "call_index": call_index,
        "name": path.rsplit(".", 1)[-1] if path else type_.lower(),
        "depth": 0 if path == "" else path.count(".") + 1,
        "type": type_,
        "input": {"args": [tensor(*shape_in)], "kwargs": {}},
        "output": tensor(*shape_out),
        "parameters": {"trainable": params, "frozen": 0, "bytes": params * 4, "shared": shared},
        "buffers": {"elements": 0, "bytes": 0, "shared": False},
        "metrics": metrics,
    }


def finish(layers: list[dict[str, Any]], diagnostics: list[dict[str, Any]] | None = None, **context: Any):
    """Wrap layers in a report whose totals follow analysis.md 5.6 from the layer values."""
    totals: dict[str, Any] = {}
    params = sum(x["parameters"]["trainable"] + x["parameters"]["frozen"] for x in layers)
    nbytes = sum(x["parameters"]["bytes"] for x in layers)
    for name in ("parameters", "trainable_parameters"):
        totals[name] = m("complete", params, "elements", "pytorch", "model")
    totals["frozen_parameters"] = m("complete", 0, "elements", "pytorch", "model")
    totals["parameter_bytes"] = m("complete", nbytes, "bytes", "pytorch", "model")
    totals["buffer_elements"] = m("complete", 0, "elements", "pytorch", "model")
    totals["buffer_bytes"] = m("complete", 0, "bytes", "pytorch", "model")
    op_total = 0
    for name, unit in (("module_flops", "FLOPs"), ("macs", "MACs"), ("dmas", "DMAs")):
        results = [x["metrics"][name] for x in layers if name in x["metrics"]]
        known = [r["known_value"] for r in results if r["known_value"] is not None]
        if not known:
            totals[name] = m("unavailable", None, unit, scope="forward")
        elif all(r["status"] == "complete" for r in results):
            totals[name] = m("complete", sum(known), unit, scope="forward")
        else:
            totals[name] = m("partial", sum(known), unit, scope="forward")
        if name == "module_flops":
            op_total = sum(known)
    op = m("complete", op_total, "FLOPs", OP_METHOD, "workload")
    totals["operator_flops"] = op
    ctx = {**CONTEXT, **context}
    return {
        "schema_version": 1,
        "context": ctx,
        "inputs": {"source": "generated", "args": [layers[0]["input"]["args"][0]], "kwargs": {}},
        "layers": layers,
        "totals": totals,
        "operator_flops": {
            "schema_version": 1,
            "context": {
                "torch_version": "2.13.0",
                "method": OP_METHOD,
                "counting_convention": "torchscan_flops_v1",
                "attention": "mask-aware",
                "flop_counter_operators": ["aten.addmm", "aten.convolution", "aten.mm"],
            },
            "total": copy.deepcopy(op),
            # training-and-hardware.md 1: a forward-only report holds everything under forward
            "by_phase": {
                phase: m(
                    "complete", op_total if phase == "forward" else 0, "FLOPs", OP_METHOD, "workload_phase"
                )
                for phase in ("forward", "backward", "optimizer", "recompute")
            },
            "by_module": {"Sequential": op_total, "Sequential.Linear": op_total},
            "by_operator": {"aten.mm": op_total},
            "ignored_operators": {"aten.t": {"calls": 2, "reason": "zero-FLOP metadata operation"}},
            "diagnostics": [],
        },
        "diagnostics": diagnostics or [],
    }


def tiny_report() -> dict[str, Any]:
    """F of render.md 7: Sequential(Linear(4,8), Identity, Linear(8,2)), no bias."""
    return finish(
        [
            layer("", "Sequential", shape_out=(1, 2)),
            layer("0", "Linear", flops=56, macs=32, dmas=72, params=32, shape_out=(1, 8)),
            layer("1", "Identity", flops=0, macs=0, dmas=0, shape_in=(1, 8), shape_out=(1, 8)),
            layer("2", "Linear", flops=30, macs=16, dmas=26, params=16, shape_in=(1, 8), shape_out=(1, 2)),
        ]
    )


def nested_report() -> dict[str, Any]:
    """Sequential(Sequential(Linear(4,8), ReLU), Linear(8,2)), no bias: leaves 56, 8, 30."""
    return finish(
        [
            layer("", "Sequential", shape_out=(1, 2)),
            layer("0", "Sequential", shape_out=(1, 8)),
            layer("0.0", "Linear", flops=56, macs=32, dmas=72, params=32, shape_out=(1, 8)),
            layer("0.1", "ReLU", flops=8, macs=0, dmas=16, shape_in=(1, 8), shape_out=(1, 8)),
            layer("1", "Linear", flops=30, macs=16, dmas=26, params=16, shape_in=(1, 8), shape_out=(1, 2)),
        ]
    )


def keyboard_report() -> dict[str, Any]:
    """K of render.md 7: Sequential(Sequential(Linear(4,8), Identity, Linear(8,4)), Linear(4,2))."""
    return finish(
        [
            layer("", "Sequential", shape_out=(1, 2)),
            layer("0", "Sequential", shape_out=(1, 4)),
            layer("0.0", "Linear", flops=56, macs=32, dmas=72, params=32, shape_out=(1, 8)),
            layer("0.1", "Identity", flops=0, macs=0, dmas=0, shape_in=(1, 8), shape_out=(1, 8)),
            layer("0.2", "Linear", flops=60, macs=32, dmas=76, params=32, shape_in=(1, 8), shape_out=(1, 4)),
            layer("1", "Linear", flops=14, macs=8, dmas=22, params=8, shape_in=(1, 4), shape_out=(1, 2)),
        ]
    )


def _conv(cin: int, cout: int, k: int, hw: int) -> tuple[int, int]:
    macs = cout * hw * hw * cin * k * k
    return 2 * macs, macs


def resnet50_report() -> dict[str, Any]:
    """A ResNet-50-shaped report (about 200 calls): bottleneck blocks whose residual add is
    unestimated functional work (block module_flops unavailable, totals partial), ReLU called three
    times per block, downsample branches, and one diagnostic per block."""
    layers = [
        layer("", "ResNet", shape_in=(1, 3, 224, 224), shape_out=(1, 1000), flops=None, status="unavailable")
    ]
    diagnostics = []

    def conv(path: str, cin: int, cout: int, k: int, hw: int) -> None:
        flops, macs = _conv(cin, cout, k, hw)
        layers.append(
            layer(
                path,
                "Conv2d",
                flops=flops,
                macs=macs,
                dmas=macs // 8,
                params=cin * cout * k * k,
                shape_in=(1, cin, hw, hw),
                shape_out=(1, cout, hw, hw),
            )
        )

    def bn(path: str, c: int, hw: int) -> None:
        n = c * hw * hw
        layers.append(
            layer(
                path,
                "BatchNorm2d",
                flops=2 * n,
                macs=n,
                dmas=2 * n,
                params=2 * c,
                shape_in=(1, c, hw, hw),
                shape_out=(1, c, hw, hw),
            )
        )

    def relu(path: str, c: int, hw: int, call_index: int = 0) -> None:
        n = c * hw * hw
        layers.append(
            layer(
                path,
                "ReLU",
                call_index=call_index,
                flops=n,
                macs=0,
                dmas=2 * n,
                shape_in=(1, c, hw, hw),
                shape_out=(1, c, hw, hw),
            )
        )

    conv("conv1", 3, 64, 7, 112)
    bn("bn1", 64, 112)
    relu("relu", 64, 112)
    layers.append(
        layer(
            "maxpool",
            "MaxPool2d",
            flops=64 * 56 * 56 * 8,
            macs=0,
            dmas=64 * 56 * 56 * 10,
            shape_in=(1, 64, 112, 112),
            shape_out=(1, 64, 56, 56),
        )
    )
    cin, hw = 64, 56
    for stage, (blocks, width) in enumerate(((3, 64), (4, 128), (6, 256), (3, 512)), start=1):
        layers.append(layer(f"layer{stage}", "Sequential", shape_in=(1, cin, hw, hw)))
        for b in range(blocks):
            prefix = f"layer{stage}.{b}"
            out_hw = hw // 2 if (b == 0 and stage > 1) else hw
            layers.append(
                layer(
                    prefix,
                    "Bottleneck",
                    status="unavailable",
                    shape_in=(1, cin, hw, hw),
                    shape_out=(1, width * 4, out_hw, out_hw),
                )
            )
            diagnostics.append(
                {
                    "code": "unestimated_functional_work",
                    "severity": "warning",
                    "metric": "module_flops",
                    "path": prefix,
                    "message": f"{prefix} runs aten.add.Tensor (1 call) in its own forward",
                }
            )
            conv(f"{prefix}.conv1", cin, width, 1, hw)
            bn(f"{prefix}.bn1", width, hw)
            relu(f"{prefix}.relu", width, hw, 0)
            conv(f"{prefix}.conv2", width, width, 3, out_hw)
            bn(f"{prefix}.bn2", width, out_hw)
            relu(f"{prefix}.relu", width, out_hw, 1)
            conv(f"{prefix}.conv3", width, width * 4, 1, out_hw)
            bn(f"{prefix}.bn3", width * 4, out_hw)
            if b == 0:
                layers.append(layer(f"{prefix}.downsample", "Sequential"))
                conv(f"{prefix}.downsample.0", cin, width * 4, 1, out_hw)
                bn(f"{prefix}.downsample.1", width * 4, out_hw)
            relu(f"{prefix}.relu", width * 4, out_hw, 2)
            cin, hw = width * 4, out_hw
    layers.append(
        layer(
            "avgpool",
            "AdaptiveAvgPool2d",
            flops=2048 * 49,
            macs=0,
            dmas=2048 * 50,
            shape_in=(1, 2048, 7, 7),
            shape_out=(1, 2048, 1, 1),
        )
    )
    layers.append(
        layer(
            "fc",
            "Linear",
            flops=2 * 2048 * 1000,
            macs=2048 * 1000,
            dmas=2048 * 1001 + 3048,
            params=2048 * 1000 + 1000,
            shape_in=(1, 2048),
            shape_out=(1, 1000),
        )
    )
    diagnostics.insert(
        0,
        {
            "code": "unestimated_functional_work",
            "severity": "warning",
            "metric": "module_flops",
            "path": "",
            "message": "ResNet runs aten.flatten (1 call) in its own forward",
        },
    )
    return finish(diagnostics=diagnostics, layers=layers, model_type="torchvision.models.resnet.ResNet")


def owned_report() -> dict[str, Any]:
    """A block whose custom handler owns module_flops for its subtree (metric_owners on children)."""
    report = keyboard_report()
    block = report["layers"][1]
    block["metrics"]["module_flops"] = m("complete", 120, scope="subtree", method="custom_module_handler:blk")
    block["metric_ownership"] = {"module_flops": "subtree"}
    for child in report["layers"][2:5]:
        del child["metrics"]["module_flops"]
        child["metric_owners"] = {"module_flops": {"path": "0", "call_index": 0}}
    report["totals"]["module_flops"] = m(
        "complete",
        134,
        scope="forward",
        method="sum_module_estimates[custom_module_handler:blk, torchscan_module_formula]",
    )
    return report


def hostile_report() -> dict[str, Any]:
    """K with the hostile string P in every report-controlled string the views display."""
    report = keyboard_report()
    report["context"]["model_type"] = P
    report["inputs"]["kwargs"] = {P: {"kind": "object", "type": P}}
    for x in report["layers"][1:]:
        x["path"] = x["path"].replace("0", P + BIDI, 1) if x["path"].startswith("0") else x["path"]
        x["type"] = P + x["type"]
    report["layers"][3]["metrics"][P] = m("complete", 3, unit=P, method=P, scope=P)
    report["layers"][5]["metrics"]["module_flops"] = m("complete", 14, method=P)
    report["diagnostics"].append(
        {"code": P, "severity": "warning", "metric": P, "message": P + BIDI, "path": P + BIDI}
    )
    report["diagnostics"].append(
        {"code": "unsupported_module_metric", "severity": "error", "metric": "module_flops", "message": P}
    )
    report["operator_flops"]["by_module"] = {P: 5}
    report["operator_flops"]["by_operator"] = {P: 5}
    report["operator_flops"]["ignored_operators"] = {P: {"calls": 1, "reason": P}}
    return report


# --- benchmark reports (workloads.md 5.4, 6.8) ----------------------------------------------

BENCH_CONTEXT = {
    "torchscan_version": "0.3.0.dev0",
    "torch_version": "2.13.0",
    "python_version": "3.11.9",
    "platform": "Linux-6.1-x86_64",
    "machine": "x86_64",
    "processor": "Test CPU",
    "device": "cpu",
    "device_name": "Test CPU",
    "num_threads": 1,
    "num_interop_threads": 1,
    "cuda_version": None,
    "inputs_source": "caller_supplied",
    "work_units": 8,
    "work_unit": "images",
    "warmup": 5,
    "min_run_time": 0.2,
    "min_repeats": 5,
}
TIMER = "torch.utils.benchmark.Timer"


def benchmark_report(latency: float = 0.5, iqr: float = 0.25, *, profile: bool = True) -> dict[str, Any]:
    """A BenchmarkReport with the four timing totals and an optional profile."""
    report: dict[str, Any] = {
        "schema_version": 1,
        "context": dict(BENCH_CONTEXT),
        "inputs": tensor(8, 4),
        "totals": {
            "first_call_latency": m("complete", 0.75, "seconds", "synchronized_perf_counter", "first_call"),
            "latency": m("complete", latency, "seconds", TIMER, "warmed_block_average"),
            "latency_iqr": m("complete", iqr, "seconds", TIMER, "warmed_block_average"),
            "throughput": m("complete", 8 / latency, "images/s", TIMER, "warmed_blocks"),
        },
        "measurement": {"number_per_run": 4, "raw_times_seconds": [latency * 4] * 5, "measured_calls": 20},
    }
    if profile:
        report["profile"] = {
            "schema_version": 1,
            "context": {
                "torch_version": "2.13.0",
                "device": "cpu",
                "method": "torch.profiler.profile",
                "operator_groups": 3,
                "limit": 20,
                "device_time_supported": False,
            },
            "operators": [
                {
                    "operator": "aten::addmm",
                    "input_shapes": [[8, 4], [4, 2]],
                    "calls": 1,
                    "cpu_self_seconds": 1.5e-05,
                    "device_self_seconds": None,
                    "cpu_net_bytes": 64,
                }
            ],
            "diagnostics": [],
        }
    return report


def benchmark_comparison(
    before: dict[str, Any], after: dict[str, Any], check: str = "passed"
) -> dict[str, Any]:
    """A BenchmarkComparison computed as compare_benchmarks would (workloads.md 6)."""
    from torchscan.report.validate import benchmark_metric_diff, context_changes, latency_change_label

    totals = {
        name: benchmark_metric_diff(
            copy.deepcopy(before["totals"].get(name)),
            copy.deepcopy(after["totals"].get(name)),
            check_passed=check == "passed",
        )
        for name in sorted(set(before["totals"]) | set(after["totals"]))
    }
    return {
        "schema_version": 1,
        "report_type": "benchmark_comparison",
        "before": copy.deepcopy(before),
        "after": copy.deepcopy(after),
        "totals": totals,
        "output_check": check,
        "latency_change": latency_change_label(totals),
        "context_changes": context_changes(before["context"], after["context"]),
    }
