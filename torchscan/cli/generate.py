"""``torchscan generate``: prefill and decode steps of one ``generate()`` (generation.md 2-3, cli.md).

The model is the TARGET (a module with a ``generate`` method, or a factory returning one); the
prompt is built deterministically from token ids within the vocabulary (``0, 1, 2, ...`` modulo the
vocabulary size), batch 1, greedy. One row per step is printed: phase, context, FLOPs, bytes, KV
bytes and, with ``--hardware``, the bound; ``--timing`` adds a second, timed run. Usage errors exit 2
with one line, before the model runs.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchscan.cli import files
from torchscan.cli import hardware as hw
from torchscan.cli.targets import UsageError

if TYPE_CHECKING:
    import torch
    from torch import nn


def add_parser(commands: Any, positive: Any, text: Any) -> None:
    """Register the ``generate`` sub-command (``positive``/``text``: the parser's argument types)."""
    generate = commands.add_parser(
        "generate", help="prefill and per-step decode costs of one generate() (measure_generation)"
    )
    generate.add_argument(
        "target", metavar="TARGET", help="package.module:attr or path/to/file.py:attr (a model with generate)"
    )
    generate.add_argument(
        "--factory-kwargs",
        metavar="JSON",
        help="JSON object of keyword arguments for a factory (default: {})",
    )
    generate.add_argument(
        "--device",
        metavar="DEVICE",
        help="cpu, cuda:N or mps; the model is moved there (default: where it is)",
    )
    generate.add_argument(
        "--prompt-tokens", type=positive, required=True, metavar="N", help="prompt length (required)"
    )
    generate.add_argument(
        "--new-tokens", type=positive, required=True, metavar="M", help="max_new_tokens (required)"
    )
    generate.add_argument(
        "--timing",
        action="store_true",
        help="also time a second, separate generate(): time to first token and mean decode step "
        "(default: off)",
    )
    generate.add_argument(
        "--json", metavar="PATH", help="save the GenerationReport ('-' for stdout; default: none)"
    )
    generate.add_argument(
        "--html", metavar="PATH", help="save the HTML page (SVG and step table; default: none)"
    )
    generate.add_argument(
        "--svg", metavar="PATH", help="save the SVG of per-step FLOPs and bytes (default: none)"
    )
    generate.add_argument("--title", type=text, help="title of the rendering (default: from the report)")
    generate.add_argument(
        "--hardware",
        metavar="FILE.json",
        help='stated facts {"name", "peak_flops_per_second", "memory_bandwidth_bytes_per_second"}: '
        "adds arithmetic intensity, roofline time and the bound per step; there is no device table "
        "(default: none, no bound)",
    )


def vocabulary_size(model: nn.Module) -> int | None:
    """The model's vocabulary: ``config.vocab_size``, else its input embedding's row count."""
    size = getattr(getattr(model, "config", None), "vocab_size", None)
    if type(size) is int and size > 0:
        return size
    embeddings = getattr(model, "get_input_embeddings", None)
    table = embeddings() if callable(embeddings) else None
    rows = getattr(table, "num_embeddings", None)
    return rows if type(rows) is int and rows > 0 else None


def prompt(model: nn.Module, tokens: int) -> torch.Tensor:
    """Token ids ``0 .. tokens-1`` modulo the vocabulary, shape ``(1, tokens)``, on the model's device."""
    import torch

    size = vocabulary_size(model)
    if size is None:
        raise UsageError("cannot build a prompt: the model has no config.vocab_size nor input embeddings")
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    return (torch.arange(tokens, device=device) % size).reshape(1, tokens)


def run(args: argparse.Namespace, write: Any, dump: Any, render: Any) -> int:
    """The ``generate`` command; ``write``/``dump``/``render`` are the CLI's output helpers."""
    from torchscan.cli import targets

    factory_kwargs = targets.parse_factory_kwargs(args.factory_kwargs) if args.factory_kwargs else {}
    target = targets.resolve_target(args.target)
    device = targets.parse_device(args.device) if args.device else None
    facts = hw.load_hardware(args.hardware) if args.hardware is not None else None
    outputs = {"--json": args.json, "--html": args.html, "--svg": args.svg}
    sources = [target.source_file, Path(args.hardware) if args.hardware is not None else None]
    files.check_outputs(outputs, sources)
    model = targets.instantiate(target, factory_kwargs)
    if not callable(getattr(model, "generate", None)):
        raise UsageError(f"target {args.target!r} has no generate method (measure_generation needs one)")
    if device is not None:
        model.to(device)
    model.eval()
    ids = prompt(model, args.prompt_tokens)
    from torchscan import measure_generation
    from torchscan.views.generation.page import summary_text

    stream = sys.stderr if "-" in (args.json, args.html, args.svg) else sys.stdout
    with contextlib.redirect_stdout(stream):  # keep `--json -` parseable
        report = measure_generation(
            model,
            args=(ids,),
            generate_kwargs={"max_new_tokens": args.new_tokens},
            hardware=facts,
            timing=args.timing,
        )
    print(summary_text(report, args.target), file=stream)
    if args.json is not None:
        write(args.json, dump(report))
    options = {"title": args.title} if args.title is not None else {}
    for option in ("html", "svg"):
        destination = getattr(args, option)
        if destination is not None:
            write(destination, render(report, option, **options))
    return 0
