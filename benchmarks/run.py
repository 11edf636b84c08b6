"""Time TorchScan against a bare forward pass, PyTorch's FlopCounterMode and the peers, interleaved.

Usage: ``python benchmarks/run.py`` (full run: ResNet-50, MobileNetV3-Large, BERT-base, GPT-2 and
Linear+ReLU stacks of 100 to 10,000 pairs; tens of minutes on two cores) or
``python benchmarks/run.py --smoke`` (seconds; what CI runs: tiny models, one repetition, no
thresholds, peers skipped when not installed). One process, one run, interleaved, median of the
repetitions, CPU, ``torch.set_num_threads(1)``. Prints a Markdown table of ratios to the bare forward
and to FlopCounterMode alone, per-pair costs for the stacks, and peak RSS per tool measured in fresh
processes; ``--out FILE`` also writes it to a file. Peers (torchinfo, fvcore, ptflops, thop; pinned in
``benchmarks/requirements.txt``) are timed when installed. See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import os
import platform
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's torchscan, as zoo.py
sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness
import models
import report
import tools
import torch
import training

import torchscan


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _load() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def _header(options: argparse.Namespace, argv: list[str], load_before: float | None) -> list[str]:
    cores = os.cpu_count() or 1
    load_after = _load()
    # This run itself adds about 1 to the load average it ends with.
    busy = (load_before or 0) > 0.5 or (load_after or 0) > 1.5
    packages = dict.fromkeys(tool.package for tool in tools.PEERS)  # ptflops once for both backends
    peers = ", ".join(f"{package} {_version(package)}" for package in packages if package)
    versions = ", ".join(
        [
            f"python {platform.python_version()}",
            f"torch {torch.__version__}",
            f"torchscan {torchscan.__version__}",
        ]
        + [f"{name} {_version(name)}" for name in ("transformers", "torchvision")]
    )
    collection = (
        "no gc.collect() between calls (smoke)"
        if options.smoke
        else "gc.collect() before every timed call (untimed)"
    )
    rss_method = "not measured" if options.no_rss else "torchscan.measure_peak_rss, a fresh process per cell"
    title = "## TorchScan benchmark" + (
        " (smoke run: tiny models, not a measurement)" if options.smoke else ""
    )
    lines = [title, ""]
    if busy:
        lines += [
            f"> **Provisional / noisy**: 1-minute load average {load_before:.1f} before and {load_after:.1f} "
            f"after the run on {cores} logical cores: other work shared the CPU.",
            "",
        ]
    lines += [
        f"- date: {datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        "- command: `" + " ".join(["python benchmarks/run.py", *argv]) + "`",
        f"- machine: {_cpu_model()}, {cores} logical cores, {platform.system()} {platform.release()}",
        f"- versions: {versions}",
        f"- peers: {peers}",
        f"- settings: CPU, torch.set_num_threads(1), one warm-up call then {options.repeats} interleaved "
        f"round(s) in rotating order, median; {collection}; every call under torch.no_grad(); peers get a "
        "fresh deep copy of the model per call (untimed); Python warnings ignored",
        f"- peak RSS: {rss_method}; whole child lifetime (imports + model build + one call), MiB",
        "- models: " + "; ".join(f"{spec.name}: {models.source(spec.key)}" for spec in options.specs),
    ]
    return lines


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--smoke", action="store_true", help="tiny models, one repetition, seconds (CI)")
    parser.add_argument("--repeats", type=int, default=None, help="timed rounds (default 5; smoke 1)")
    parser.add_argument(
        "--models", help=f"comma-separated model keys (full: {','.join(s.key for s in models.FULL)})"
    )
    parser.add_argument("--tools", help=f"comma-separated tool keys ({','.join(tools.BY_KEY)})")
    parser.add_argument("--no-rss", action="store_true", help="skip the fresh-process peak RSS column")
    parser.add_argument(
        "--training",
        help="comma-separated training-step keys for the overhead table "
        f"(full: {','.join(training.BY_KEY)}; smoke: small-cnn; 'none' skips it)",
    )
    parser.add_argument(
        "--budget", type=float, default=120.0, help="a warm-up slower than this is timed once"
    )
    parser.add_argument("--out", type=Path, help="also write the Markdown to this file")
    parser.add_argument("--rss-child", nargs=2, metavar=("TOOL", "MODEL"), help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.repeats is None:
        options.repeats = 1 if options.smoke else 5
    if options.repeats < 1:
        parser.error("--repeats must be at least 1")
    catalog = models.SMOKE if options.smoke else models.FULL
    if options.models:
        unknown = set(options.models.split(",")) - set(models.BY_KEY)
        if unknown:
            parser.error(f"unknown model keys: {', '.join(sorted(unknown))}")
        options.specs = [models.BY_KEY[key] for key in options.models.split(",")]
    else:
        options.specs = list(catalog)
    keys = options.training or ("small-cnn" if options.smoke else ",".join(training.BY_KEY))
    options.training_specs = [] if keys == "none" else [training.BY_KEY.get(key) for key in keys.split(",")]
    if None in options.training_specs:
        parser.error(f"unknown training keys: {keys}")
    if options.tools:
        unknown = set(options.tools.split(",")) - set(tools.BY_KEY)
        if unknown:
            parser.error(f"unknown tool keys: {', '.join(sorted(unknown))}")
        # the references always run: bare forward, the floor and FlopCounterMode
        wanted = {tools.BARE, tools.FLOOR, tools.FLOP_COUNTER, *options.tools.split(",")}
        options.selected = [tool for tool in tools.TOOLS if tool.key in wanted]
    else:
        options.selected = list(tools.TOOLS)
    return options


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; ``--smoke`` runs tiny models once for CI."""
    argv = sys.argv[1:] if argv is None else list(argv)
    options = _parse(argv)
    if options.rss_child:
        return harness.rss_child(*options.rss_child)
    warnings.simplefilter("ignore")  # peers and transformers warn per call; warnings are not under test
    torch.set_num_threads(1)
    load_before = _load()
    results = []
    for spec in options.specs:
        _log(f"{spec.name}: timing")
        result = harness.time_model(
            spec, options.selected, options.repeats, options.budget, _log, collect=not options.smoke
        )
        results.append(result)
    if not options.no_rss:
        # A smoke run exercises the fresh-process path once (one child), not every cell.
        targets = results[-1:] if options.smoke else results
        for result in targets:
            chosen = (
                [t for t in options.selected if t.key == "ts-full"] if options.smoke else options.selected
            )
            _log(f"{result.spec.name}: peak RSS")
            harness.measure_rss(result, chosen, _log)
    text = report.render(_header(options, argv, load_before), results)
    if options.training_specs:
        # issue #13: measure_flops on a full training step against FlopCounterMode alone on the same step
        _log("training steps: timing")
        overhead = training.tables(options.training_specs, options.repeats, phases=False)
        text += "\n" + "\n".join(["### Training-step overhead (benchmarks/training.py)", *overhead])
    print(text, end="")
    if options.out:
        options.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
