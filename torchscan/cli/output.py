"""What every ``torchscan`` command writes, and how: exit statuses, report files, renderings.

Shared by the model commands (``model_commands``) and the report-file commands
(``report_commands``); files go through ``cli/files.py`` (atomically, never over an input).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from torchscan.cli import files
from torchscan.cli.targets import UsageError

EXIT_OK = 0
EXIT_MODEL_ERROR = 1
EXIT_USAGE = 2
EXIT_INCOMPLETE = 3


def write(destination: str, text: str) -> None:
    """Write one output file (or ``-``, standard output) through ``cli/files.py``."""
    files.write(destination, text)


def dump(report: Any) -> str:
    """A report as the JSON text every ``--json`` output holds."""
    return json.dumps(report, indent=2, allow_nan=False) + "\n"


OUTPUTS = ("json", "html", "svg", "csv")


def human_stream(args: argparse.Namespace) -> TextIO:
    """Tables go to stderr when an output goes to stdout, so stdout holds that output alone."""
    return sys.stderr if "-" in (getattr(args, name, None) for name in OUTPUTS) else sys.stdout


def outputs_to_stdout(args: argparse.Namespace) -> None:
    """Spell every output that is standard output (``/dev/stdout``, a redirect's file) as ``-``.

    Done once, right after parsing, so every command treats ``--json /dev/stdout > f`` exactly like
    ``--json - > f``: the tables move to stderr and the output is written to the stream in place.
    """
    for name in OUTPUTS:
        value = getattr(args, name, None)
        if isinstance(value, str) and files.names_stdout(value):
            setattr(args, name, "-")


def render(report: Any, fmt_name: str, **options: Any) -> str:
    """``render_report`` (imported on use: ``torchscan --help`` never imports torch)."""
    from torchscan import render_report

    return render_report(report, format=fmt_name, **options)


def write_renderings(report: Any, args: argparse.Namespace, **options: Any) -> None:
    """Write the ``--html``/``--svg``/``--csv`` renderings a command was asked for."""
    for option in ("html", "svg", "csv"):
        destination = getattr(args, option, None)
        if destination is not None:
            try:  # a CSV table has no view or title: it holds the whole report
                page = render(report, option, **(options if option != "csv" else {}))
            except ValueError as error:  # a bad --metric/--title: the options are the user's input
                raise UsageError(f"cannot render --{option}: {one_line(error)}") from None
            write(destination, page)


def render_options(args: argparse.Namespace) -> dict[str, Any]:
    """``title``/``metric`` keyword arguments of ``render_report`` from the command line."""
    options: dict[str, Any] = {}
    if getattr(args, "title", None) is not None:
        options["title"] = args.title
    if getattr(args, "metric", None) is not None:
        options["metric"] = args.metric
    return options


def one_line(error: BaseException) -> str:
    """An exception's message on one line (its type name when it has none)."""
    return " ".join(str(error).split()) or type(error).__name__
