"""The argument parser of the ``torchscan`` command line (cli.md); the commands live in ``cli.py``.

Usage errors raise :class:`~torchscan.cli.targets.UsageError` (reported as one line, exit status 2)
instead of printing argparse's multi-line usage and exiting.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, NoReturn

from torchscan._version import __version__
from torchscan.cli.memory import DEVICE_HELP as MEMORY_DEVICE_HELP
from torchscan.cli.targets import UsageError
from torchscan.report.names import has_control
from torchscan.views.analysis.geometry import VIEWS
from torchscan.views.analysis.table import COLUMNS, DEFAULT_COLUMNS

# render.md: without --metric the HTML opens the most complete compute view of the report and an
# SVG snapshot shows Module FLOPs (render_report's own defaults; the CLI passes None through).
_WIDTH_RULE = "must be an integer >= 40 (characters per line)"
METRIC_HELP = f"view shown: {', '.join(VIEWS)} (default: the most complete view in HTML, module_flops in SVG)"


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Epilogues keep their lines (examples); every option's help ends with its default.

    argparse's own ArgumentDefaultsHelpFormatter also prints ``(default: None)`` for options
    without one; here an option that has no default says what happens without it instead (in
    its help text), and flags say nothing (off unless given).
    """

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            "default" in text
            or not action.option_strings
            or default is None
            or isinstance(default, bool)
            or default is argparse.SUPPRESS
        ):
            return text
        return f"{text} (default: %(default)s)"


def examples(*lines: str) -> str:
    """A ``--help`` epilogue: usage examples, one command per line."""
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


class Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as :class:`UsageError` (one line) instead of exiting.

    Sub-commands inherit its help formatter, so every ``--help`` shows defaults and examples.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _positive_number(text: str) -> int | float:
    try:
        value: int | float = int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    try:
        as_float = float(value)
    except OverflowError:  # an integer too large for a float, e.g. 10**400: no timing can use it
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number > 0") from None
    if not value > 0 or as_float == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number > 0")
    return value


def _int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} must be >= {minimum}")
        return value

    return parse


def _text(text: str) -> str:
    """Free text that ends up in a report or a rendering: it must be encodable as UTF-8.

    Undecodable command-line bytes reach Python as lone surrogates (PEP 383); they are refused
    here, before any model code runs, instead of failing when the output is written.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError("is not valid UTF-8 text") from None
    return text


def _view(text: str) -> str:
    """A ``--metric`` view name, checked at parse time so a typo never waits for the model to run."""
    if _text(text) not in VIEWS:
        raise argparse.ArgumentTypeError(f"unknown view {text[:60]!r}; choose from {', '.join(VIEWS)}")
    return text


def _columns(text: str) -> tuple[str, ...]:
    """``--columns a,b,c``: the ``col_names`` of ``summary``, checked by the table view itself."""
    from torchscan.views.analysis.table import check_table_options

    names = [name.strip() for name in _text(text).split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError("give comma-separated column names, e.g. params,module_flops")
    try:
        return check_table_options(col_names=names, max_depth=None, fold=True)
    except ValueError as error:  # the same words as the API's, minus its argument name
        raise argparse.ArgumentTypeError(str(error).removeprefix("col_names: ")) from None


def _non_blank(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be blank")
    return _text(text)


def _label(text: str) -> str:
    """A unit name printed after numbers: non-blank, and no control character to drive a terminal."""
    if has_control(text):
        raise argparse.ArgumentTypeError("must not contain control characters")
    return _non_blank(text)


def _add_target(parser: argparse.ArgumentParser, device_help: str | None = None) -> None:
    parser.add_argument(
        "target", metavar="TARGET", help="package.module:attr, path/to/file.py:attr or demo:<name>"
    )
    parser.add_argument(
        "--factory-kwargs",
        metavar="JSON",
        help="JSON object of keyword arguments for a factory or class (default: {})",
    )
    parser.add_argument(
        "--input-shape",
        action="append",
        metavar="SHAPE",
        help="shape of one sample, e.g. 3,224,224: the batch dimension of 1 is added (repeat for several "
        "inputs; required except for demos, which have their own)",
    )
    parser.add_argument(
        "--dtype",
        action="append",
        metavar="DTYPE",
        help="dtype of the generated inputs, e.g. int64 for token ids (one, or one per --input-shape; "
        "default: the model's first parameter's dtype)",
    )
    parser.add_argument(
        "--device",
        metavar="DEVICE",
        help=device_help or "cpu, cuda:N or mps; the model is moved there first (default: where it is)",
    )
    parser.add_argument(
        "--traceback",
        action="store_true",
        help="when the model raises, print the full traceback as well as the one-line error",
    )


def _add_html(parser: argparse.ArgumentParser, *, svg: bool = True, metric: bool = True) -> None:
    parser.add_argument("--html", metavar="PATH", help="save the HTML rendering (default: none)")
    if svg:
        parser.add_argument("--svg", metavar="PATH", help="save the SVG snapshot (default: none)")
    parser.add_argument("--title", type=_text, help="title of the rendering (default: from the report)")
    if metric:
        parser.add_argument("--metric", type=_view, metavar="VIEW", help=METRIC_HELP)


def _width(text: str) -> int:
    """``--width N``: the table's characters per line, checked by the table view itself."""
    from torchscan.views.analysis.table_layout import check_width

    try:
        return check_width(int(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: {_WIDTH_RULE}") from None


def _add_width(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--width",
        type=_width,
        metavar="N",
        help="characters per table line; columns drop when names cannot shorten enough "
        "(default: the terminal's width, 120 when output is not a terminal and COLUMNS is unset)",
    )


def _add_csv(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--csv", metavar="PATH", help=f"save {what} as a CSV table ('-' for stdout; default: none)"
    )


def _add_hardware(parser: argparse.ArgumentParser, adds: str) -> None:
    parser.add_argument(
        "--hardware",
        metavar="FILE.json",
        help='stated facts {"name", "peak_flops_per_second", "memory_bandwidth_bytes_per_second"}: '
        f"adds {adds}; there is no built-in device table (default: none)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``torchscan`` argument parser with one sub-command per cli.md command."""
    parser = Parser(
        prog="torchscan",
        description="What a PyTorch model costs; every number carries a status.",
        epilog=examples(
            "torchscan demo                      # two built-in models: tables, JSON and HTML",
            "torchscan scan torchvision.models:resnet18 --input-shape 3,224,224",
            "torchscan COMMAND --help            # the options of one command, with examples",
        ),
    )
    parser.add_argument("--version", action="version", version=f"torchscan {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = commands.add_parser(
        "demo",
        help="analyse the built-in demo models and write JSON + HTML",
        epilog=examples("torchscan demo", "torchscan demo --out /tmp/torchscan-demo"),
    )
    demo.add_argument("--out", default="torchscan-demo", metavar="DIR", help="output folder")
    _add_width(demo)

    scan = commands.add_parser(
        "scan",
        help="analyse a model (crawl_module/summary) and print its table",
        epilog=examples(
            "torchscan scan torchvision.models:resnet50 --input-shape 3,224,224 --html resnet50.html",
            "torchscan scan ./models.py:make_bert --input-shape 128 --dtype int64 --max-depth 3 --no-fold",
        ),
    )
    _add_target(scan)
    scan.add_argument(
        "--json", metavar="PATH", help="save the AnalysisReport ('-' for stdout; default: none)"
    )
    _add_html(scan)
    _add_csv(scan, "one row per layer row (path, call_index, own and incl. parameters and costs, statuses)")
    scan.add_argument(
        "--mode",
        choices=("full", "structure"),
        default="full",
        help="full: every metric; structure: hooks only (shapes, calls, parameters), cheaper, "
        "compute totals not requested",
    )
    scan.add_argument("--strict", action="store_true", help="exit 3 when the analysis is incomplete")
    scan.add_argument(
        "--max-depth",
        type=_int_at_least(1),
        metavar="N",
        help="deepest table row (root = 0; default: the deepest that fits about 60 lines)",
    )
    scan.add_argument(
        "--columns",
        type=_columns,
        metavar="A,B,...",
        help=f"table columns, in order: {', '.join(COLUMNS)} (default: {', '.join(DEFAULT_COLUMNS)})",
    )
    scan.add_argument(
        "--no-fold",
        dest="fold",
        action="store_false",
        help="list repeated identical blocks one by one instead of one (×N) row",
    )
    _add_width(scan)
    scan.add_argument("--receptive-field", action="store_true", help="add the receptive field column")
    scan.add_argument(
        "--effective-rf-stats", action="store_true", help="add effective stride/padding columns"
    )
    _add_hardware(scan, "arithmetic intensity and roofline time")

    flops = commands.add_parser(
        "flops",
        help="operator FLOPs of one forward (measure_flops)",
        epilog=examples(
            "torchscan flops torchvision.models:resnet18 --input-shape 3,224,224",
            "torchscan flops demo:cnn --train --json flops.json",
        ),
    )
    _add_target(flops)
    flops.add_argument(
        "--train",
        action="store_true",
        help="count one training step: forward, backward of sum(output), AdamW (PyTorch defaults) step",
    )
    flops.add_argument("--json", metavar="PATH", help="save the FlopReport ('-' for stdout; default: none)")
    _add_csv(flops, "one row per operator, phase and module label")
    flops.add_argument("--strict", action="store_true", help="exit 3 when the total is not complete")

    memory = commands.add_parser(
        "memory",
        help="where the memory of a forward or training step goes (measure_memory's ledger)",
        epilog=examples(
            "torchscan memory demo:transformer --html memory.html",
            "torchscan memory ./models.py:make_llama --input-shape 512 --dtype int64 --device meta --train",
        ),
    )
    _add_target(memory, MEMORY_DEVICE_HELP)
    memory.add_argument(
        "--train",
        action="store_true",
        help="measure one training step: forward, backward of sum(output), AdamW (PyTorch defaults) step",
    )
    memory.add_argument(
        "--json", metavar="PATH", help="save the MemoryReport ('-' for stdout; default: none)"
    )
    _add_html(memory, metric=False)
    _add_csv(memory, "one row per timeline point and per module call")

    latency = commands.add_parser(
        "latency",
        help="warmed block-average latency (measure_latency)",
        epilog=examples(
            "torchscan latency torchvision.models:resnet18 --input-shape 3,224,224 --json lat.json",
            "torchscan latency demo:cnn --work-units 32 --work-unit images --hardware laptop.json",
        ),
    )
    _add_target(latency)
    latency.add_argument(
        "--work-units", type=_positive_number, default=1, metavar="N", help="work per call, for throughput"
    )
    latency.add_argument(
        "--work-unit", type=_label, default="calls", metavar="NAME", help="name of a work unit, e.g. images"
    )
    latency.add_argument(
        "--warmup", type=_int_at_least(0), default=5, metavar="N", help="untimed calls before timing"
    )
    latency.add_argument(
        "--min-run-time",
        type=_positive_number,
        default=0.2,
        metavar="SECONDS",
        help="timed blocks run at least this long in all",
    )
    latency.add_argument(
        "--min-repeats",
        type=_int_at_least(2),
        default=5,
        metavar="N",
        help="timed blocks at least (the median and IQR are over blocks)",
    )
    latency.add_argument(
        "--json", metavar="PATH", help="save the BenchmarkReport ('-' for stdout; default: none)"
    )
    _add_hardware(latency, "achieved FLOP/s and utilization (adds an operator FLOPs pass)")
    _add_html(latency, svg=False, metric=False)
    _add_csv(latency, "the totals, raw timing blocks and context")

    compare = commands.add_parser(
        "compare",
        help="delta table of two saved AnalysisReports (or MemoryReports)",
        epilog=examples(
            "torchscan compare bert12.json bert6.json",
            "torchscan compare before.json after.json --html diff.html --json diff.json",
        ),
    )
    compare.add_argument("before", metavar="BEFORE.json", help="the saved report before the change")
    compare.add_argument("after", metavar="AFTER.json", help="the saved report after it, of the same kind")
    compare.add_argument("--json", metavar="PATH", help="save the ReportDiff ('-' for stdout; default: none)")
    _add_html(compare, svg=False)

    render = commands.add_parser(
        "render",
        help="HTML, SVG or CSV of a saved report",
        epilog=examples(
            "torchscan render report.json --html report.html",
            "torchscan render after.json --before before.json --svg diff.svg --metric parameters",
        ),
    )
    render.add_argument("report", metavar="REPORT.json", help="a saved report (any kind torchscan writes)")
    outputs = render.add_mutually_exclusive_group(required=True)
    outputs.add_argument(
        "--html", metavar="PATH", help="write the HTML page here (this, --svg or --csv is required)"
    )
    outputs.add_argument(
        "--svg", metavar="PATH", help="write the SVG snapshot here (this, --html or --csv is required)"
    )
    outputs.add_argument(
        "--csv",
        metavar="PATH",
        help="write the report as a CSV table here (analysis, flop, memory, benchmark)",
    )
    render.add_argument("--metric", type=_view, metavar="VIEW", help=METRIC_HELP)
    render.add_argument(
        "--before",
        metavar="B.json",
        help="a saved report of the same kind (AnalysisReport, MemoryReport) to show as 'before' "
        "(default: none, a single report)",
    )
    render.add_argument("--title", type=_text, help="title of the rendering (default: from the report)")

    merge = commands.add_parser(
        "merge",
        help="merge the per-rank reports of one job (merge_reports)",
        epilog=examples(
            "torchscan merge rank0.json rank1.json", "torchscan merge rank*.json --json job.json"
        ),
    )
    merge.add_argument("reports", nargs="+", metavar="RANK.json", help="one saved report per rank")
    merge.add_argument(
        "--json", metavar="PATH", help="save the merged report ('-' for stdout; default: none)"
    )
    _add_html(merge, svg=False, metric=False)

    from torchscan.cli.generate import add_parser as add_generate

    add_generate(commands, _int_at_least(1), _text)
    commands.choices["generate"].add_argument(
        "--traceback",
        action="store_true",
        help="when the model raises, print the full traceback as well as the one-line error",
    )
    commands.choices["generate"].epilog = examples(
        "torchscan generate ./models.py:make_gpt2 --prompt-tokens 32 --new-tokens 8",
        "torchscan generate ./models.py:make_gpt2 --prompt-tokens 128 --new-tokens 16 --timing --json g.json",
    )

    from torchscan.cli.scale import add_parser as add_scale

    add_scale(commands, _text)
    commands.choices["scale"].epilog = examples(
        "torchscan scale demo:transformer --seq 64,128,256,512",
        "torchscan scale ./models.py:make_gpt2 --seq 128,256,512,1024 --html scaling.html",
        "torchscan scale demo:cnn --side 32,64,128 --metrics flops,memory_peak --json cnn.json",
    )
    from torchscan.cli.contract import add_parsers as add_contract

    add_contract(commands, examples)

    rss = commands.add_parser(
        "rss",
        help="peak RSS of a child command (measure_peak_rss)",
        epilog=examples(
            "torchscan rss -- python train.py", "torchscan rss --json rss.json -- python -c pass"
        ),
    )
    rss.add_argument("--json", metavar="PATH", help="save the MetricResult ('-' for stdout; default: none)")
    rss.add_argument(
        "argv", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARGS...]", help="the command to run"
    )
    return parser
