"""``torchscan skill`` and ``torchscan schema KIND``: what ships for agents and report consumers.

``skill`` prints the agent skill shipped in the package (the same file as the repository's
``skills/torchscan/SKILL.md``); ``schema`` prints the JSON Schema of one report kind, generated
from the wire types, or with ``--validate`` checks a saved report against it (agents-and-schema.md).
Neither imports torch.
"""

from __future__ import annotations

import argparse
import json
from importlib import resources
from typing import Any

from torchscan.cli import files
from torchscan.cli.targets import UsageError
from torchscan.report.json_schema import REPORT_KINDS, kind_of, report_schema, schema_errors

SKILL_RESOURCE = ("skill", "SKILL.md")


def skill_text() -> str:
    """The shipped skill (package data ``torchscan/skill/SKILL.md``)."""
    return resources.files("torchscan").joinpath(*SKILL_RESOURCE).read_text(encoding="utf-8")


def _kind(text: str) -> str:
    if text not in REPORT_KINDS:
        raise argparse.ArgumentTypeError(
            f"unknown report kind {text[:60]!r}; known kinds: {', '.join(REPORT_KINDS)}"
        )
    return text


def add_parsers(commands: Any, examples: Any) -> None:
    """Register ``skill`` and ``schema`` (``examples``: the parser's epilogue helper)."""
    commands.add_parser(
        "skill",
        help="print the agent skill shipped with TorchScan (SKILL.md)",
        epilog=examples("torchscan skill", "torchscan skill > .agents/skills/torchscan/SKILL.md"),
    )
    schema = commands.add_parser(
        "schema",
        help="print the JSON Schema of a report kind, or check a saved report against it",
        epilog=examples(
            "torchscan schema analysis > analysis.schema.json",
            "torchscan schema analysis --validate report.json",
        ),
    )
    schema.add_argument(
        "kind", metavar="KIND", nargs="?", type=_kind, help=f"one of: {', '.join(REPORT_KINDS)}"
    )
    schema.add_argument(
        "--validate",
        metavar="REPORT.json",
        help="check this saved report against the schema instead of printing it (needs jsonschema; "
        "exit 2 naming the JSON path and rule of the first problem)",
    )


def run_skill(args: argparse.Namespace) -> int:
    """Print the skill."""
    files.write_stdout(skill_text())
    return 0


def run_schema(args: argparse.Namespace) -> int:
    """Print the schema of ``args.kind``, or validate ``args.validate`` against it."""
    if args.kind is None:
        raise UsageError(f"schema needs a report KIND; known kinds: {', '.join(REPORT_KINDS)}")
    if args.validate is None:
        files.write_stdout(json.dumps(report_schema(args.kind), indent=2) + "\n")
        return 0
    report = files.load_report(args.validate)
    found = kind_of(report)
    if found is not None and found != args.kind and report.get("schema_version") == 1:
        raise UsageError(f"{args.validate!r} is a report of kind {found}, not {args.kind}")
    try:
        problems = schema_errors(report, args.kind)
    except ImportError as error:
        raise UsageError(str(error)) from None
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UsageError(f"{args.validate!r} is not a valid {args.kind} report: {problems[0]}{more}")
    files.write_stdout(f"{args.validate}: a valid {args.kind} report (schema_version 1)\n")
    return 0
