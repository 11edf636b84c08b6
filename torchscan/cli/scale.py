"""``torchscan scale TARGET --seq 64,128,256``: how a model's cost grows (attention-and-scaling.md 2).

The model is built once; for every size the inputs are generated anew (deterministic, as for
``scan``) and ``measure_scaling`` measures one eval/no-grad forward. Axes:

- ``--seq`` and ``--side`` replace the dimensions of ``--input-shape`` written as ``seq`` or
  ``side`` (``--input-shape seq --dtype int64`` for token ids, ``--input-shape 3,side,side`` for
  images); ``--batch`` replaces the batch dimension of every input. Several axes make a grid.
- Without ``--input-shape``: ``demo:transformer`` scales its token axis (``seq,32``), ``demo:cnn``
  its image side (``3,side,side``), and a model with a vocabulary (``config.vocab_size`` or input
  embeddings) takes ``--seq`` token ids (``int64`` zeros, valid for every vocabulary).

Bad sizes, metrics, shapes or devices exit 2 with one line before the model is built or run.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import TYPE_CHECKING, Any

from torchscan.cli import errors, files
from torchscan.cli.targets import UsageError

if TYPE_CHECKING:
    import torch
    from torch import nn

AXES = ("seq", "side", "batch")
SHAPE_AXES = ("seq", "side")  # named inside --input-shape; batch is the dimension TorchScan adds
DEMO_AXES = {"demo:transformer": {0: "seq"}, "demo:cnn": {1: "side", 2: "side"}}
DEVICES = ("cpu", "cuda", "mps", "meta")
Template = list[int | str]


def add_parser(commands: Any, text: Any) -> None:
    """Register the ``scale`` sub-command (``text``: the parser's free-text type)."""
    scale = commands.add_parser(
        "scale",
        help="how FLOPs, bytes, memory or latency grow with sequence length, image side or batch "
        "(measure_scaling)",
    )
    scale.add_argument(
        "target", metavar="TARGET", help="package.module:attr, path/to/file.py:attr or demo:<name>"
    )
    scale.add_argument(
        "--factory-kwargs",
        metavar="JSON",
        help="JSON object of keyword arguments for a factory (default: {})",
    )
    for axis, what in (
        ("seq", "sequence lengths: the --input-shape dimension written 'seq'"),
        ("side", "image sides: the --input-shape dimensions written 'side'"),
        ("batch", "batch sizes: the batch dimension of every input"),
    ):
        scale.add_argument(f"--{axis}", metavar="N,N,...", type=text, help=f"{what} (strictly increasing)")
    scale.add_argument(
        "--input-shape",
        action="append",
        metavar="SHAPE",
        help="shape of one sample with the scaled dimensions named, e.g. seq or 3,side,side (repeat for "
        "several inputs; default: from the demo, or seq token ids for a model with a vocabulary)",
    )
    scale.add_argument(
        "--dtype",
        action="append",
        metavar="DTYPE",
        help="dtype of the generated inputs (one, or one per --input-shape; default: the model's, int64 "
        "for token ids)",
    )
    scale.add_argument(
        "--device",
        metavar="DEVICE",
        help="cpu, cuda:N, mps or meta; the model is moved there (meta: built there, no latency)",
    )
    scale.add_argument(
        "--metrics",
        default="flops,operator_bytes",
        type=text,
        metavar="M,M,...",
        help="among flops, operator_bytes, memory_peak, latency",
    )
    scale.add_argument(
        "--json", metavar="PATH", help="save the ScalingReport ('-' for stdout; default: none)"
    )
    scale.add_argument("--html", metavar="PATH", help="save the HTML page (default: none)")
    scale.add_argument("--svg", metavar="PATH", help="save the SVG of log-log plots (default: none)")
    scale.add_argument("--title", type=text, help="title of the rendering (default: from the target)")
    scale.add_argument(
        "--traceback",
        action="store_true",
        help="when the model raises, print the full traceback as well as the one-line error",
    )


def _numbers(option: str, text: str) -> list[int]:
    parts = [part.strip() for part in text.split(",")]
    try:
        return [int(part) for part in parts]
    except ValueError:
        raise UsageError(
            f"invalid --{option} {text[:80]!r}: expected comma-separated integers, e.g. 64,128,256"
        ) from None


def parse_axes(args: argparse.Namespace) -> dict[str, list[int]]:
    """The sizes of every axis given, checked as ``measure_scaling`` checks them."""
    from torchscan.measure.scaling_report import check_sizes

    given = {axis: _numbers(axis, getattr(args, axis)) for axis in AXES if getattr(args, axis) is not None}
    if not given:
        raise UsageError("give at least one axis: --seq, --side or --batch, e.g. --seq 64,128,256")
    try:
        return check_sizes(given)
    except ValueError as error:  # "sizes['seq'] must be ..." -> "--seq must be ..."
        message = str(error)
        for axis in given:
            message = message.replace(f"sizes[{axis!r}]", f"--{axis}")
        raise UsageError(message) from None


def parse_metrics(text: str) -> list[str]:
    """``--metrics flops,latency`` as ``measure_scaling`` checks it."""
    from torchscan.measure.scaling_report import check_metrics

    try:
        return check_metrics([part.strip() for part in text.split(",")])
    except ValueError as error:
        raise UsageError(f"invalid --metrics: {error}") from None


def parse_template(text: str, axes: dict[str, list[int]]) -> Template:
    """``--input-shape 3,side,side``: non-negative ints and the names of the scaled axes given."""
    template: Template = []
    for part in (p.strip() for p in text.split(",")):
        if part in SHAPE_AXES:
            if part not in axes:
                raise UsageError(f"--input-shape {text!r} names {part}, but --{part} is not given")
            template.append(part)
            continue
        try:
            size = int(part)
        except ValueError:
            size = -1
        if size < 0:
            raise UsageError(
                f"invalid --input-shape {text[:80]!r}: expected non-negative integers and the scaled "
                f"dimensions {' or '.join(SHAPE_AXES)}, e.g. seq or 3,side,side"
            )
        template.append(size)
    return template


def templates(
    args: argparse.Namespace, target: Any, model: nn.Module, axes: dict[str, list[int]]
) -> tuple[list[Template], bool]:
    """The input templates and whether they are token ids by default (``int64``)."""
    from torchscan.cli.generate import vocabulary_size

    if args.input_shape:
        chosen = [parse_template(text, axes) for text in args.input_shape]
        tokens = False
    elif target.spec in DEMO_AXES and target.default_shape is not None:
        named = DEMO_AXES[target.spec]
        chosen = [[named[k] if named.get(k) in axes else size for k, size in enumerate(target.default_shape)]]
        tokens = False
    elif "seq" in axes and vocabulary_size(model) is not None:
        chosen, tokens = [["seq"]], True
    else:
        raise UsageError(
            f"--input-shape is required for target {target.spec!r}: name the scaled dimension, e.g. "
            "--input-shape seq --dtype int64 (token ids) or --input-shape 3,side,side"
        )
    used = {item for template in chosen for item in template if isinstance(item, str)}
    for axis in SHAPE_AXES:
        if axis in axes and axis not in used:
            raise UsageError(f"--{axis} is given but no input dimension is {axis}; write it in --input-shape")
    return chosen, tokens


def _inputs(
    chosen: list[Template], sizes: dict[str, int], dtypes: list[torch.dtype], device: torch.device
) -> tuple[torch.Tensor, ...]:
    from torchscan.analysis.crawl.inputs import generate_inputs

    shapes = [tuple(sizes[item] if isinstance(item, str) else item for item in t) for t in chosen]
    tensors = generate_inputs(shapes, dtypes, device)
    batch = sizes.get("batch")
    if batch is None:
        return tensors
    return tuple(t.expand(batch, *t.shape[1:]).contiguous() for t in tensors)


def run(args: argparse.Namespace, write: Any, dump: Any, render: Any) -> int:
    """The ``scale`` command; ``write``/``dump``/``render`` are the CLI's output helpers."""
    from torchscan.cli import targets

    axes = parse_axes(args)
    metrics = parse_metrics(args.metrics)
    factory_kwargs = targets.parse_factory_kwargs(args.factory_kwargs) if args.factory_kwargs else {}
    target = targets.resolve_target(args.target)
    device = targets.parse_device(args.device, allowed=DEVICES) if args.device else None
    if device is not None and device.type == "meta" and "latency" in metrics:
        raise UsageError(
            "--device meta cannot time latency; drop latency from --metrics or use a real device"
        )
    dtypes_given = [targets.parse_dtype(text) for text in args.dtype] if args.dtype else None
    files.check_outputs({"--json": args.json, "--html": args.html, "--svg": args.svg}, [target.source_file])
    with targets.build_context(device), errors.model_build(args.target, target.obj, args.traceback):
        model = targets.instantiate(target, factory_kwargs)
    if device is not None:
        model.to(device)
    chosen, tokens = templates(args, target, model, axes)
    dtypes = _dtypes(model, chosen, dtypes_given, tokens)
    placement = device if device is not None else _placement(model)

    def build(*size: int, **sizes: int) -> Any:
        named = {next(iter(axes)): size[0]} if size else sizes
        return model, _inputs(chosen, named, dtypes, placement), {}

    from torchscan import measure_scaling
    from torchscan.cli.status import status_line
    from torchscan.measure.progress import describe
    from torchscan.views.scaling.page import summary_text

    stream = sys.stderr if "-" in (args.json, args.html, args.svg) else sys.stdout
    dtype_names = [str(d).removeprefix("torch.") for d in dtypes]
    with status_line(f"scaling {args.target} …") as status:

        def progress(phase: str, done: float, total: float) -> None:
            if status is not None:
                status.set(f"{args.target}: {describe(phase, done, total)}")

        with (
            contextlib.redirect_stdout(stream),
            errors.model_call(args.target, [], dtype_names, args.traceback),
        ):
            report = measure_scaling(
                build,
                axes,
                metrics=metrics,
                device=None if device is None else str(device),
                progress=progress,
            )
    print(summary_text(report, args.target), file=stream)
    if args.json is not None:
        write(args.json, dump(report))
    title = args.title if args.title is not None else f"TorchScan scaling: {args.target}"
    for option in ("html", "svg"):
        destination = getattr(args, option)
        if destination is not None:
            write(destination, render(report, option, title=title))
    return 0


def _dtypes(
    model: nn.Module, chosen: list[Template], given: list[torch.dtype] | None, tokens: bool
) -> list[torch.dtype]:
    import torch

    from torchscan.analysis.crawl.inputs import default_placement

    if given is None:
        return [torch.int64 if tokens else default_placement(model)[0]] * len(chosen)
    if len(given) == 1:
        return given * len(chosen)
    if len(given) != len(chosen):
        raise UsageError(f"got {len(given)} --dtype values for {len(chosen)} --input-shape values")
    return given


def _placement(model: nn.Module) -> torch.device:
    from torchscan.analysis.crawl.inputs import default_placement

    return default_placement(model)[1]
