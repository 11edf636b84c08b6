"""The argument parser of the ``torchscan`` command line (cli.md); the commands live in ``cli.py``.

Usage errors raise :class:`~torchscan.cli.targets.UsageError` (reported as one line, exit status 2)
instead of printing argparse's multi-line usage and exiting.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import NoReturn

from torchscan._version import __version__
from torchscan.cli.memory import DEVICE_HELP as MEMORY_DEVICE_HELP
from torchscan.cli.targets import UsageError
from torchscan.report.names import has_control
from torchscan.views.geometry import VIEWS
from torchscan.views.table import COLUMNS, DEFAULT_COLUMNS

# render.md: without --metric the HTML opens the most complete compute view of the report and an
# SVG snapshot shows Module FLOPs (render_report's own defaults; the CLI passes None through).
METRIC_HELP = f"view shown: {', '.join(VIEWS)} (default: the most complete view in HTML, module_flops in SVG)"


class Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as :class:`UsageError` (one line) instead of exiting."""

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
    from torchscan.views.table import check_table_options

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
        "--factory-kwargs", metavar="JSON", help="JSON object of keyword arguments for a factory"
    )
    parser.add_argument(
        "--input-shape",
        action="append",
        metavar="SHAPE",
        help="input shape without batch, e.g. 3,224,224 (repeat for several inputs; default for demos)",
    )
    parser.add_argument(
        "--dtype", action="append", metavar="DTYPE", help="generated input dtype (repeatable)"
    )
    parser.add_argument(
        "--device", metavar="DEVICE", help=device_help or "cpu, cuda:N or mps; the model is moved there first"
    )


def _add_html(parser: argparse.ArgumentParser, *, svg: bool = True, metric: bool = True) -> None:
    parser.add_argument("--html", metavar="PATH", help="save the HTML rendering")
    if svg:
        parser.add_argument("--svg", metavar="PATH", help="save the SVG snapshot")
    parser.add_argument("--title", type=_text, help="title of the rendering")
    if metric:
        parser.add_argument("--metric", type=_view, metavar="VIEW", help=METRIC_HELP)


def _add_hardware(parser: argparse.ArgumentParser, adds: str) -> None:
    parser.add_argument(
        "--hardware",
        metavar="FILE.json",
        help='stated facts {"name", "peak_flops_per_second", "memory_bandwidth_bytes_per_second"}: '
        f"adds {adds}; there is no built-in device table",
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``torchscan`` argument parser with one sub-command per cli.md command."""
    parser = Parser(
        prog="torchscan", description="What a PyTorch model costs; every number carries a status."
    )
    parser.add_argument("--version", action="version", version=f"torchscan {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = commands.add_parser("demo", help="analyse the built-in demo models and write JSON + HTML")
    demo.add_argument(
        "--out", default="torchscan-demo", metavar="DIR", help="output folder (default torchscan-demo)"
    )

    scan = commands.add_parser("scan", help="analyse a model (crawl_module/summary) and print its table")
    _add_target(scan)
    scan.add_argument("--json", metavar="PATH", help="save the AnalysisReport ('-' for stdout)")
    _add_html(scan)
    scan.add_argument("--mode", choices=("full", "structure"), default="full")
    scan.add_argument("--strict", action="store_true", help="exit 3 when the analysis is incomplete")
    scan.add_argument(
        "--max-depth",
        type=_int_at_least(1),
        metavar="N",
        help="deepest table row (root = 0; default: fit ~60 lines)",
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
    scan.add_argument("--receptive-field", action="store_true", help="add the receptive field column")
    scan.add_argument(
        "--effective-rf-stats", action="store_true", help="add effective stride/padding columns"
    )
    _add_hardware(scan, "arithmetic intensity and roofline time")

    flops = commands.add_parser("flops", help="operator FLOPs of one forward (measure_flops)")
    _add_target(flops)
    flops.add_argument(
        "--train",
        action="store_true",
        help="count one training step: forward, backward of sum(output), AdamW (PyTorch defaults) step",
    )
    flops.add_argument("--json", metavar="PATH", help="save the FlopReport ('-' for stdout)")
    flops.add_argument("--strict", action="store_true", help="exit 3 when the total is not complete")

    memory = commands.add_parser(
        "memory", help="where the memory of a forward or training step goes (measure_memory's ledger)"
    )
    _add_target(memory, MEMORY_DEVICE_HELP)
    memory.add_argument(
        "--train",
        action="store_true",
        help="measure one training step: forward, backward of sum(output), AdamW (PyTorch defaults) step",
    )
    memory.add_argument("--json", metavar="PATH", help="save the MemoryReport ('-' for stdout)")
    _add_html(memory, metric=False)

    latency = commands.add_parser("latency", help="warmed block-average latency (measure_latency)")
    _add_target(latency)
    latency.add_argument("--work-units", type=_positive_number, default=1, metavar="N", help="work per call")
    latency.add_argument("--work-unit", type=_label, default="calls", metavar="NAME", help="e.g. images")
    latency.add_argument("--warmup", type=_int_at_least(0), default=5, metavar="N")
    latency.add_argument("--min-run-time", type=_positive_number, default=0.2, metavar="SECONDS")
    latency.add_argument("--min-repeats", type=_int_at_least(2), default=5, metavar="N")
    latency.add_argument("--json", metavar="PATH", help="save the BenchmarkReport ('-' for stdout)")
    _add_hardware(latency, "achieved FLOP/s and utilization (adds an operator FLOPs pass)")
    _add_html(latency, svg=False, metric=False)

    compare = commands.add_parser(
        "compare", help="delta table of two saved AnalysisReports (or MemoryReports)"
    )
    compare.add_argument("before", metavar="BEFORE.json")
    compare.add_argument("after", metavar="AFTER.json")
    compare.add_argument("--json", metavar="PATH", help="save the ReportDiff ('-' for stdout)")
    _add_html(compare, svg=False)

    render = commands.add_parser("render", help="HTML or SVG of a saved report")
    render.add_argument("report", metavar="REPORT.json")
    outputs = render.add_mutually_exclusive_group(required=True)
    outputs.add_argument("--html", metavar="PATH")
    outputs.add_argument("--svg", metavar="PATH")
    render.add_argument("--metric", type=_view, metavar="VIEW", help=METRIC_HELP)
    render.add_argument(
        "--before",
        metavar="B.json",
        help="a saved report of the same kind (AnalysisReport, MemoryReport) to show as 'before'",
    )
    render.add_argument("--title", type=_text, help="title of the rendering")

    merge = commands.add_parser("merge", help="merge the per-rank reports of one job (merge_reports)")
    merge.add_argument("reports", nargs="+", metavar="RANK.json")
    merge.add_argument("--json", metavar="PATH", help="save the merged report ('-' for stdout)")
    _add_html(merge, svg=False, metric=False)

    from torchscan.cli.generate import add_parser as add_generate

    add_generate(commands, _int_at_least(1), _text)

    rss = commands.add_parser("rss", help="peak RSS of a child command (measure_peak_rss)")
    rss.add_argument("--json", metavar="PATH", help="save the MetricResult ('-' for stdout)")
    rss.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARGS...]")
    return parser
