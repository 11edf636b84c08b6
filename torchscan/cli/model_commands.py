"""The commands that build and run a model: ``demo``, ``scan``, ``flops``, ``memory``, ``latency``,
``generate``, ``scale``, and ``rss`` (which runs a command instead).

Library APIs are imported inside each command, so ``torchscan --help`` does not import torch; a
model's errors become one line with a hint (``cli/errors.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchscan.cli import errors, files, output
from torchscan.cli import format as fmt
from torchscan.cli import hardware as hw
from torchscan.cli.status import status_line
from torchscan.cli.targets import UsageError

if TYPE_CHECKING:
    from torch import nn

    from torchscan.cli.targets import InputSpec, Target


def load_model(
    args: argparse.Namespace, *, devices: Sequence[str] | None = None, meta_build: bool = False
) -> tuple[Target, nn.Module, InputSpec]:
    """Resolve TARGET, its inputs and outputs (usage errors first), then build the model.

    A ``--hardware`` file is read and checked here too, before the model is built, and no output
    may overwrite it. With ``meta_build`` and ``--device meta`` a factory builds on meta directly.
    """
    from torchscan.cli import targets

    factory_kwargs = targets.parse_factory_kwargs(args.factory_kwargs) if args.factory_kwargs else {}
    target = targets.resolve_target(args.target)
    rules = {} if devices is None else {"allowed": devices}
    spec = targets.input_spec(target, args.input_shape, args.dtype, args.device, **rules)
    outputs = {f"--{name}": getattr(args, name, None) for name in output.OUTPUTS}
    hardware = getattr(args, "hardware", None)
    args.hardware_facts = hw.load_hardware(hardware) if hardware is not None else None
    files.check_outputs(outputs, [target.source_file, Path(hardware) if hardware is not None else None])
    with (
        targets.build_context(spec.device) if meta_build else contextlib.nullcontext(),
        errors.model_build(args.target, target.obj, args.traceback),
    ):
        model = targets.instantiate(target, factory_kwargs)
    if spec.device is not None:
        model.to(spec.device)
    return target, model, spec


def cmd_demo(args: argparse.Namespace) -> int:
    """``torchscan demo``: analyse the built-in models, print their tables, write JSON and HTML."""
    from torchscan import crawl_module
    from torchscan.demo import DEMO_MODELS
    from torchscan.views.analysis.table import format_table

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {args.out!r} exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    for name, build in DEMO_MODELS.items():
        model, shape = build()
        print(f"demo:{name}  input shape {(1, *shape)}")
        report = crawl_module(model, shape)
        print(format_table(report, spelling="cli", width=table_width(args)))  # summary()'s table, CLI hints
        print()
        output.write(str(out / f"{name}.json"), output.dump(report))
        output.write(
            str(out / f"{name}.html"), output.render(report, "html", title=f"TorchScan demo: {name}")
        )
    print(f"open {out / 'cnn.html'} in a browser to explore the costs", file=sys.stderr)
    return output.EXIT_OK


def table_width(args: argparse.Namespace) -> int:
    """``--width``, else the terminal's (views-3.md 2: 120 when not a terminal and COLUMNS unset)."""
    from torchscan.views.analysis.table_layout import terminal_width

    return args.width if args.width is not None else terminal_width()


def model_call(args: argparse.Namespace, spec: InputSpec) -> contextlib.AbstractContextManager[None]:
    """Errors the model raises on its inputs: one line with a hint, exit 2 (issue 23 item 6)."""
    return errors.model_call(args.target, spec.shapes, args.dtype, args.traceback)


def cmd_scan(args: argparse.Namespace) -> int:
    """``torchscan scan``: ``crawl_module`` of a model target, its table and requested files."""
    import io

    incomplete: Any = None
    table = io.StringIO()  # printed once the status line is gone, so the two never interleave
    with status_line(f"loading {args.target} …") as status:
        _target, model, spec = load_model(args)
        from torchscan import IncompleteAnalysisError, crawl_module
        from torchscan.views.analysis.table import format_table

        if status is not None:
            status.set(f"analysing {args.target} …")
        with contextlib.redirect_stdout(table), model_call(args, spec):
            try:
                report = crawl_module(
                    model,
                    spec.api_shape(),
                    spec.dtypes,
                    device=spec.device,
                    strict=args.strict,
                    mode=args.mode,
                    hardware=args.hardware_facts,
                )
            except IncompleteAnalysisError as error:
                incomplete, report = error, error.report
    # summary()'s table, with its hints spelled for this command line (--max-depth, --no-fold)
    text = format_table(
        report,
        max_depth=args.max_depth,
        col_names=args.columns,
        fold=args.fold,
        receptive_field=args.receptive_field,
        effective_rf_stats=args.effective_rf_stats,
        spelling="cli",
        width=table_width(args),
    )
    output.human_stream(args).write(table.getvalue() + text + "\n")
    for line in hw.hardware_lines(report):
        print(line, file=output.human_stream(args))
    if args.json is not None:
        output.write(args.json, output.dump(report))
    output.write_renderings(report, args, **output.render_options(args))
    if incomplete is not None:
        print(f"torchscan: --strict: {incomplete} (the requested report files were written)", file=sys.stderr)
        return output.EXIT_INCOMPLETE
    return output.EXIT_OK


def floating_sum(output: Any) -> Any:
    """Sum of every floating-point tensor in a (nested) model output, for ``flops --train``."""
    import torch

    if isinstance(output, torch.Tensor):
        return output.sum() if output.is_floating_point() else None
    items = (
        output.values() if isinstance(output, Mapping) else output if isinstance(output, list | tuple) else ()
    )
    total = None
    for item in items:
        part = floating_sum(item)
        if part is not None:
            total = part if total is None else total + part
    return total


def cmd_flops(args: argparse.Namespace) -> int:
    """``torchscan flops``: operator FLOPs of one eval forward, or of one training step with ``--train``."""
    import torch

    from torchscan.cli import targets

    _target, model, spec = load_model(args)
    from torchscan import measure_flops

    inputs = targets.generate(model, spec)
    if args.train:
        workload = hw.train_step(model, inputs, floating_sum)
    else:
        model.eval()

        def workload() -> None:
            with torch.no_grad():
                model(*inputs)

    with (
        contextlib.redirect_stdout(output.human_stream(args)),
        model_call(args, spec),
    ):  # keep `--json -` parseable
        report = measure_flops(workload)
    what = hw.TRAIN_STEP if args.train else "one eval/no-grad forward"
    print(fmt.flop_report(report, f"operator FLOPs of {args.target}: {what}"), file=output.human_stream(args))
    if args.json is not None:
        output.write(args.json, output.dump(report))
    output.write_renderings(report, args)
    if args.strict and report["total"]["status"] != "complete":
        print("torchscan: incomplete operator FLOPs with --strict", file=sys.stderr)
        return output.EXIT_INCOMPLETE
    return output.EXIT_OK


def cmd_memory(args: argparse.Namespace) -> int:
    """``torchscan memory``: the storage ledger of one forward or training step."""
    from torchscan.cli import memory, targets

    _target, model, spec = load_model(args, meta_build=True)
    from torchscan import measure_memory

    inputs = targets.generate(model, spec)
    workload = (
        hw.train_step(model, inputs, floating_sum) if args.train else memory.inference_workload(model, inputs)
    )
    with (
        contextlib.redirect_stdout(output.human_stream(args)),
        model_call(args, spec),
    ):  # keep `--json -` parseable
        report = measure_memory(workload, device=spec.device, modules=model)
    what = hw.TRAIN_STEP if args.train else memory.INFERENCE
    print("\n".join(memory.memory_lines(report, args.target, what)), file=output.human_stream(args))
    if args.json is not None:
        output.write(args.json, output.dump(report))
    output.write_renderings(report, args, title=args.title or f"TorchScan memory: {args.target}")
    return output.EXIT_OK


def cmd_latency(args: argparse.Namespace) -> int:
    """``torchscan latency``: warmed block-average latency (and utilization with ``--hardware``)."""
    with status_line(f"loading {args.target} …") as status:  # before importing torch: it takes seconds
        import torch

        from torchscan.analysis.crawl.inputs import default_placement
        from torchscan.cli import targets
        from torchscan.measure.progress import describe

        _target, model, spec = load_model(args, devices=("cpu", "cuda", "mps"))
        from torchscan import measure_latency, measure_workload

        inputs = targets.generate(model, spec)
        device = spec.device if spec.device is not None else default_placement(model)[1]
        model.eval()

        def workload() -> None:
            model(*inputs)

        def progress(phase: str, done: float, total: float) -> None:
            if status is not None:
                status.set(f"{args.target}: {describe(phase, done, total)}")

        if status is not None:
            status.set(f"timing {args.target} …")
        settings: dict[str, Any] = {
            "device": str(device),
            "inputs": inputs,
            "work_units": args.work_units,
            "work_unit": args.work_unit,
            "warmup": args.warmup,
            "min_run_time": args.min_run_time,
            "min_repeats": args.min_repeats,
            "progress": progress,
        }
        with torch.no_grad(), contextlib.redirect_stdout(output.human_stream(args)), model_call(args, spec):
            if args.hardware_facts is None:
                report: Any = measure_latency(workload, **settings)
            else:  # utilization needs the operator FLOPs too: a separate counting pass after the timing
                report = measure_workload(
                    workload,
                    metrics=("flops", "latency", "throughput"),
                    hardware=args.hardware_facts,
                    **settings,
                )
    print(fmt.benchmark(report, args.target), file=output.human_stream(args))
    for line in hw.hardware_lines(report):
        print(line, file=output.human_stream(args))
    if args.json is not None:
        output.write(args.json, output.dump(report))
    output.write_renderings(report, args, **output.render_options(args))
    return output.EXIT_OK


def cmd_generate(args: argparse.Namespace) -> int:
    """``torchscan generate``: prefill and per-step decode costs of one ``generate()``."""
    from torchscan.cli import generate

    # the prompt is integer token ids built by the command: no input hint applies
    with errors.model_call(args.target, [], ["int64"], args.traceback):
        return generate.run(args, output.write, output.dump, output.render)


def cmd_scale(args: argparse.Namespace) -> int:
    """``torchscan scale``: how a target's costs grow with its sizes (``measure_scaling``)."""
    from torchscan.cli import scale

    return scale.run(args, output.write, output.dump, output.render)


def cmd_rss(args: argparse.Namespace) -> int:
    """``torchscan rss``: the peak RSS of a child command."""
    import subprocess

    from torchscan import measure_peak_rss

    command = list(args.argv)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UsageError("rss needs a command to run, e.g. torchscan rss -- python train.py")
    files.check_outputs({"--json": args.json}, [])
    try:
        result = measure_peak_rss(command)
    except subprocess.CalledProcessError as error:
        print(
            f"torchscan: {command[0]!r} exited with status {error.returncode}; no RSS reported",
            file=sys.stderr,
        )
        return output.EXIT_MODEL_ERROR
    except NotImplementedError as error:
        raise UsageError(output.one_line(error)) from None
    except OSError as error:
        raise UsageError(f"cannot start {command[0]!r}: {error.strerror or error}") from None
    stream = output.human_stream(args)
    print(fmt.rss(result), file=stream)
    print(json.dumps(result, indent=2, allow_nan=False), file=stream)
    if args.json is not None:
        output.write(args.json, output.dump(result))
    return output.EXIT_OK
