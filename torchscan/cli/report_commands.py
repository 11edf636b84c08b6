"""The commands that read saved reports and run no model: ``compare``, ``render``, ``merge``.

Whatever fails here comes from a file's content, so every error is a usage error (exit 2, one line).
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from torchscan.cli import files, output
from torchscan.cli import format as fmt
from torchscan.cli.targets import UsageError

BENCHMARK_REFUSAL = (
    "timing reports cannot be compared here: torchscan.compare_benchmarks(before, after, check=...) "
    "needs an output check (a function that runs both workloads and compares their outputs), "
    "which only Python code can supply"
)


def validate(report: dict[str, Any], path: str) -> None:
    """Validate a loaded report by its kind (report/validate/__init__.py); invalid is a usage error."""
    from torchscan.report.validate import validate_report

    with bad_report(f"invalid report {path!r}"):
        validate_report(report)


@contextlib.contextmanager
def bad_report(what: str) -> Iterator[None]:
    """Any error while handling saved reports is a usage error (status 2, one line, no traceback).

    ``compare`` and ``render`` run no model code: whatever fails there comes from a file's content
    (a shape the validators did not anticipate, an integer too large for a float, nesting deeper
    than Python's recursion limit), so it is reported as a bad input, never as a traceback.
    """
    try:
        yield
    except UsageError:
        raise
    except RecursionError:
        raise UsageError(f"{what}: nested too deeply") from None
    except Exception as error:
        reason = output.one_line(error)
        if isinstance(error, ValueError):
            raise UsageError(f"{what}: {reason}") from None
        raise UsageError(f"{what}: {type(error).__name__}: {reason}") from None


def cmd_compare(args: argparse.Namespace) -> int:
    """``torchscan compare``: the delta table of two saved analysis (or memory) reports."""
    from torchscan.report.validate import report_kind

    files.check_outputs({"--json": args.json, "--html": args.html}, [Path(args.before), Path(args.after)])
    before, after = files.load_report(args.before), files.load_report(args.after)
    with bad_report(f"invalid report {args.before!r} or {args.after!r}"):
        kinds = [report_kind(before), report_kind(after)]
        timing = [kind not in ("analysis", "memory") for kind in kinds]
    if "generation" in kinds:
        raise UsageError("generation reports cannot be compared here; compare AnalysisReports")
    if "flop" in kinds or "profile" in kinds:
        raise UsageError("FlopReports and ProfileReports cannot be compared here; compare AnalysisReports")
    if "scaling" in kinds:
        raise UsageError("scaling reports cannot be compared here; compare AnalysisReports or MemoryReports")
    if kinds.count("memory") == 1:
        raise UsageError("cannot compare a MemoryReport with another kind of report; give two MemoryReports")
    if all(timing):
        raise UsageError(BENCHMARK_REFUSAL)
    if any(timing):
        raise UsageError(f"cannot compare a timing report with an AnalysisReport; {BENCHMARK_REFUSAL}")
    validate(before, args.before)
    validate(after, args.after)
    from torchscan import compare_reports

    # Everything is computed before anything is printed or written, so a bad report leaves no
    # half-written output behind.
    with bad_report(f"cannot compare {args.before!r} and {args.after!r}"):
        diff: Any = compare_reports(before, after)
        if kinds[0] == "memory":
            from torchscan.cli.memory import comparison_lines

            table = "\n".join(comparison_lines(diff))
        else:
            table = analysis_comparison(diff, before, after)
        saved = output.dump(diff) if args.json is not None else None
    page = None
    if args.html is not None:
        with bad_report("cannot render the comparison"):
            page = output.render(after, "html", before=before, **output.render_options(args))
    print(table, file=output.human_stream(args))
    if saved is not None:
        output.write(args.json, saved)
    if page is not None:
        output.write(args.html, page)
    return output.EXIT_OK


def analysis_comparison(diff: Any, before: Any, after: Any) -> str:
    """The delta table, with added and removed calls as subtree roots (issue 23 item 3).

    The totals and changed calls come from the shared text view; its per-call added/removed list
    is replaced by one line per root (``encoder.layer.6#0 BertLayer (+16 call(s) inside; ...)``).
    """
    from torchscan.cli.compare_roots import root_lines

    layers = diff["layers"]
    text = fmt.comparison({**diff, "layers": {**layers, "added": [], "removed": []}})
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("layer calls: "))
    return "\n".join(lines[:at] + root_lines(diff, before, after) + lines[at + 1 :])


def cmd_render(args: argparse.Namespace) -> int:
    """``torchscan render``: HTML, SVG or CSV of a saved report."""
    sources = [Path(args.report), Path(args.before) if args.before is not None else None]
    files.check_outputs({"--html": args.html, "--svg": args.svg, "--csv": args.csv}, sources)
    report = files.load_report(args.report)
    validate(report, args.report)
    options = output.render_options(args)
    if args.before is not None:
        options["before"] = files.load_report(args.before)
        validate(options["before"], args.before)
    fmt_name, destination = next(
        (name, path) for name in ("html", "svg", "csv") if (path := getattr(args, name))
    )
    if fmt_name == "csv":  # one table of the whole report: no view, no title
        options = {key: value for key, value in options.items() if key == "before"}
    with bad_report(f"cannot render {args.report!r}"):
        page = output.render(report, fmt_name, **options)
    output.write(destination, page)
    return output.EXIT_OK


def cmd_merge(args: argparse.Namespace) -> int:
    """``torchscan merge``: one report from the per-rank reports of a distributed job."""
    from torchscan import merge_reports
    from torchscan.views.merged.page import merged_summary

    files.check_outputs({"--json": args.json, "--html": args.html}, [Path(p) for p in args.reports])
    reports = [files.load_report(path) for path in args.reports]
    with bad_report("cannot merge the reports"):
        merged = merge_reports(reports)
    print(merged_summary(merged), file=output.human_stream(args))
    if args.json is not None:
        output.write(args.json, output.dump(merged))
    output.write_renderings(merged, args, **output.render_options(args))
    return output.EXIT_OK
