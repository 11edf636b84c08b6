"""One-shot hardware check of TorchScan's workload APIs on a real accelerator.

Run on a CUDA machine (no internet needed, about a minute):

    python benchmarks/gpu_check.py                 # device "cuda"
    python benchmarks/gpu_check.py --device cpu    # smoke test of the script itself

It exercises the CUDA paths of ``measure_peak_memory`` (allocator counters around one call),
``measure_latency`` (synchronised clock), ``profile_workload`` (device self time), ``measure_workload``
and ``compare_benchmarks`` on small models built here with random weights, and prints a compact
Markdown summary. Each check is marked PASS/FAIL; the exit status is 1 when any check fails. Only a
run on real hardware is hardware evidence: a ``--device cpu`` run checks the script, nothing more.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

import torchscan
from torchscan import compare_benchmarks, measure_latency, measure_workload, profile_workload
from torchscan.process import measure_peak_memory

MIB = 2**20


def build_models(device: torch.device) -> dict[str, tuple[nn.Module, torch.Tensor]]:
    """A small conv net and a GPU-bound MLP; batches shrink on CPU so the smoke run stays short."""
    torch.manual_seed(0)
    small = device.type == "cpu"
    conv = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(64, 10),
    ).eval()
    mlp = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).eval()
    return {
        "conv": (conv.to(device), torch.randn(4 if small else 32, 3, 64, 64, device=device)),
        "mlp": (mlp.to(device), torch.randn(64 if small else 4096, 1024, device=device)),
    }


class Checks:
    def __init__(self) -> None:
        self.rows: list[tuple[str, bool, str]] = []

    def record(self, name: str, condition: bool, detail: str) -> None:
        self.rows.append((name, bool(condition), detail))

    def run(self, name: str, body: Callable[[], None]) -> None:
        try:
            body()
        except Exception as error:  # a failing check must not hide the others
            self.rows.append((name, False, f"raised {type(error).__name__}: {error}"))
            traceback.print_exc(file=sys.stderr)


def check_memory(checks: Checks, device: str, models: dict[str, Any], out: list[str]) -> None:
    model, x = models["mlp"]
    allocation = 256 * MIB

    def workload() -> None:
        with torch.inference_mode():
            model(x)
            torch.empty(allocation, dtype=torch.uint8, device=x.device)

    result = measure_peak_memory(workload, device=device)
    out.append("| key | value |\n| --- | --- |")
    out.extend(
        f"| `{key}` | {value:,} |" if isinstance(value, int) else f"| `{key}` | {value} |"
        for key, value in result.items()
    )
    checks.record(
        "peak memory: delta == peak - baseline",
        result["delta_bytes"] == result["peak_bytes"] - result["baseline_bytes"],
        "",
    )
    if result["metric"] == "pytorch_reserved_bytes":
        checks.record(
            "peak memory: allocated peak covers a 256 MiB tensor",
            result["allocated_peak_bytes"] >= allocation,
            f"allocated_peak {result['allocated_peak_bytes'] / MIB:.1f} MiB",
        )
        checks.record(
            "peak memory: reserved peak >= allocated peak",
            result["peak_bytes"] >= result["allocated_peak_bytes"],
            f"reserved peak {result['peak_bytes'] / MIB:.1f} MiB",
        )
    else:
        checks.record(
            "peak memory: CPU delta covers the 256 MiB tensor", result["delta_bytes"] >= allocation, ""
        )


def check_latency(checks: Checks, device: str, models: dict[str, Any], out: list[str]) -> dict[str, Any]:
    out.append("| model | first call (ms) | latency (ms) | IQR (ms) | throughput | blocks × calls |")
    out.append("| --- | --- | --- | --- | --- | --- |")
    reports = {}
    for name, (model, x) in models.items():

        def workload(model: nn.Module = model, x: torch.Tensor = x) -> None:
            with torch.inference_mode():
                model(x)

        report = measure_latency(
            workload, device=device, inputs=x, work_units=x.shape[0], work_unit="samples", min_run_time=0.3
        )
        reports[name] = report
        totals, measurement = report["totals"], report["measurement"]
        first = totals["first_call_latency"]["value"] * 1e3
        blocks = f"{len(measurement['raw_times_seconds'])} × {measurement['number_per_run']}"
        out.append(
            f"| {name} | {first:.3f} | {totals['latency']['value'] * 1e3:.4f} "
            f"| {totals['latency_iqr']['value'] * 1e3:.4f} | {totals['throughput']['value']:,.0f} samples/s "
            f"| {blocks} |"
        )
        recorded = report["context"]["device"]
        checks.record(f"latency ({name}): device recorded", recorded == normalise(device), recorded)
        if device != "cpu":
            # Kernel time from CUDA events. Without synchronisation a GPU-bound call would be timed
            # at its launch cost only, far below this; with it, the block average covers the kernels.
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            for _ in range(20):
                workload()
            end.record()
            torch.cuda.synchronize()
            event_seconds = start.elapsed_time(end) / 1e3 / 20
            checks.record(
                f"latency ({name}): synchronised latency >= 0.8 × CUDA-event time per call",
                totals["latency"]["value"] >= 0.8 * event_seconds,
                f"events {event_seconds * 1e3:.4f} ms/call",
            )
    return reports


def check_profile(checks: Checks, device: str, models: dict[str, Any], out: list[str]) -> None:
    model, x = models["conv"]

    def workload() -> None:
        with torch.inference_mode():
            model(x)

    report = profile_workload(workload, device=device, limit=8)
    context = report["context"]
    codes = [entry["code"] for entry in report["diagnostics"]]
    out.append(
        f"device_time_supported: **{context['device_time_supported']}**, "
        f"groups {context['operator_groups']}, diagnostics {codes}\n"
    )
    out.append(
        "| operator | calls | cpu self (µs) | device self (µs) | net bytes |\n| --- | --- | --- | --- | --- |"
    )
    for row in report["operators"]:
        device_us = "n/a" if row["device_self_seconds"] is None else f"{row['device_self_seconds'] * 1e6:.1f}"
        cpu_us = row["cpu_self_seconds"] * 1e6
        net = f"{row['cpu_net_bytes']:,}"
        out.append(f"| `{row['operator']}` | {row['calls']} | {cpu_us:.1f} | {device_us} | {net} |")
    if device != "cpu":
        checks.record(
            "profile: CUDA device time supported",
            context["device_time_supported"],
            str(report["diagnostics"]),
        )
        checks.record(
            "profile: some operator has device self time > 0",
            any((row["device_self_seconds"] or 0) > 0 for row in report["operators"]),
            "",
        )
        ranked = [row["device_self_seconds"] for row in report["operators"]]
        checks.record("profile: rows ranked by device self time", ranked == sorted(ranked, reverse=True), "")
    else:
        checks.record(
            "profile: CPU rows carry no device time",
            all(r["device_self_seconds"] is None for r in report["operators"]),
            "",
        )


def check_workload_and_compare(checks: Checks, device: str, models: dict[str, Any], out: list[str]) -> None:
    model, x = models["conv"]

    def baseline() -> None:
        with torch.inference_mode():
            model(x)

    before = measure_workload(
        baseline, device=device, inputs=x, work_units=x.shape[0], min_run_time=0.3, profile=True
    )
    use_half = device != "cpu"
    candidate_model = model.half() if use_half else model
    x_candidate = x.half() if use_half else x

    def candidate() -> None:
        with torch.inference_mode():
            candidate_model(x_candidate)

    after = measure_workload(candidate, device=device, inputs=x, work_units=x.shape[0], min_run_time=0.3)
    comparison = compare_benchmarks(before, after, check=lambda: None)
    out.append("| total | before | after | delta | status |\n| --- | --- | --- | --- | --- |")
    for name, entry in comparison["totals"].items():

        def show(result: Any) -> str:
            if result is None:
                return "—"
            if result["status"] == "complete":
                return f"{result['value']:.6g} {result['unit']}"
            return result["status"] + (
                "" if result["known_value"] is None else f" (≥ {result['known_value']:.6g})"
            )

        delta = "—" if entry["delta"] is None else f"{entry['delta']:.6g}"
        out.append(
            f"| {name} | {show(entry['before'])} | {show(entry['after'])} | {delta} | {entry['status']} |"
        )
    change = "fp32 → fp16" if use_half else "same model twice"
    out.append(
        f"\nlatency_change ({change}): **{comparison['latency_change']}**; "
        f"profile_status {before['context']['profile_status']}"
    )
    checks.record(
        "workload: seven totals",
        list(before["totals"])
        == [
            "first_call_latency",
            "latency",
            "latency_iqr",
            "throughput",
            "operator_flops",
            "peak_memory",
            "process_peak_rss",
        ],
        "",
    )
    checks.record(
        "workload: peak memory complete",
        before["totals"]["peak_memory"]["status"] == "complete",
        before["totals"]["peak_memory"]["method"],
    )
    checks.record(
        "compare: output check recorded", comparison["output_check"] == "passed", comparison["latency_change"]
    )


def normalise(device: str) -> str:
    if device == "cuda":
        return f"cuda:{torch.cuda.current_device()}"
    return device


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (smoke test)")
    args = parser.parse_args()
    device = args.device
    if device.startswith("cuda") and not torch.cuda.is_available():
        print("CUDA is not available: nothing to check (this is not a pass).", file=sys.stderr)
        return 2
    torch_device = torch.device(device)
    if torch_device.type == "cuda":
        torch.cuda.set_device(torch_device.index or 0)
        device_label = torch.cuda.get_device_name(torch_device)
    else:
        device_label = platform.processor() or platform.machine()
    started = time.perf_counter()
    models = build_models(torch_device)
    checks = Checks()
    sections: list[tuple[str, list[str]]] = []
    for title, body in (
        ("measure_peak_memory (MLP + 256 MiB tensor)", check_memory),
        ("measure_latency", check_latency),
        ("profile_workload (conv net, limit 8)", check_profile),
        ("measure_workload + compare_benchmarks (conv net)", check_workload_and_compare),
    ):
        lines: list[str] = []
        sections.append((title, lines))
        checks.run(title, lambda body=body, lines=lines: body(checks, device, models, lines))

    print("# TorchScan GPU check\n")
    print(f"- device: `{device}` — {device_label}")
    print(f"- torch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}")
    print(f"- torchscan {torchscan.__version__}, Python {platform.python_version()}, {platform.platform()}")
    print(f"- threads {torch.get_num_threads()}; total wall time {time.perf_counter() - started:.1f} s\n")
    for title, lines in sections:
        print(f"## {title}\n")
        print("\n".join(lines) + "\n")
    print("## Checks\n\n| check | result | detail |\n| --- | --- | --- |")
    for name, ok, detail in checks.rows:
        print(f"| {name} | {'PASS' if ok else 'FAIL'} | {detail} |")
    failed = sum(not ok for _, ok, _ in checks.rows)
    print(f"\n{len(checks.rows) - failed}/{len(checks.rows)} checks passed.")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
