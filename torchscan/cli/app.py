"""The ``torchscan`` command line (cli.md): a thin view over the library's report objects.

Exit statuses: 0 success (partial results included unless ``--strict``), 1 ``rss``'s command exited
non-zero or TorchScan itself failed outside the model (traceback printed), 2 a usage error or an
exception of the model or its factory (one line, ``--traceback`` for the rest), 3 ``--strict`` and
incomplete (report files are still written). This package is the only part of TorchScan that prints or writes
files (through ``cli/files.py``: atomically, following symlinks, never over an input file). Library
APIs are imported inside the commands so ``torchscan --help`` does not import torch.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from torchscan.cli import contract, errors, files
from torchscan.cli import format as fmt
from torchscan.cli import hardware as hw
from torchscan.cli.parser import build_parser
from torchscan.cli.status import status_line
from torchscan.cli.targets import UsageError
from torchscan.report.names import report_name

if TYPE_CHECKING:
    from torch import nn

    from torchscan.cli.targets import InputSpec, Target

EXIT_OK = 0
EXIT_MODEL_ERROR = 1
EXIT_USAGE = 2
EXIT_INCOMPLETE = 3

BENCHMARK_REFUSAL = (
    "timing reports cannot be compared here: torchscan.compare_benchmarks(before, after, check=...) "
    "needs an output check (a function that runs both workloads and compares their outputs), "
    "which only Python code can supply"
)


# --- files ----------------------------------------------------------------------------------


def _write(destination: str, text: str) -> None:
    files.write(destination, text)


def _dump(report: Any) -> str:
    return json.dumps(report, indent=2, allow_nan=False) + "\n"


_OUTPUTS = ("json", "html", "svg")


def _human_stream(args: argparse.Namespace) -> TextIO:
    """Tables go to stderr when an output goes to stdout, so stdout holds that output alone."""
    return sys.stderr if "-" in (getattr(args, name, None) for name in _OUTPUTS) else sys.stdout


def _outputs_to_stdout(args: argparse.Namespace) -> None:
    """Spell every output that is standard output (``/dev/stdout``, a redirect's file) as ``-``.

    Done once, right after parsing, so every command treats ``--json /dev/stdout > f`` exactly like
    ``--json - > f``: the tables move to stderr and the output is written to the stream in place.
    """
    for name in _OUTPUTS:
        value = getattr(args, name, None)
        if isinstance(value, str) and files.names_stdout(value):
            setattr(args, name, "-")


def _render(report: Any, fmt_name: str, **options: Any) -> str:
    from torchscan import render_report

    return render_report(report, format=fmt_name, **options)


def _write_renderings(report: Any, args: argparse.Namespace, **options: Any) -> None:
    for option in ("html", "svg"):
        destination = getattr(args, option, None)
        if destination is not None:
            try:
                page = _render(report, option, **options)
            except ValueError as error:  # a bad --metric/--title: the options are the user's input
                raise UsageError(f"cannot render --{option}: {_one_line(error)}") from None
            _write(destination, page)


def _render_options(args: argparse.Namespace) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if getattr(args, "title", None) is not None:
        options["title"] = args.title
    if getattr(args, "metric", None) is not None:
        options["metric"] = args.metric
    return options


# --- model targets ------------------------------------------------------------------------


def _load_model(
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
    outputs = {f"--{name}": getattr(args, name, None) for name in ("json", "html", "svg")}
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


# --- commands -------------------------------------------------------------------------------


def _cmd_demo(args: argparse.Namespace) -> int:
    from torchscan import crawl_module
    from torchscan.demo import DEMO_MODELS
    from torchscan.views.table import format_table

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {args.out!r} exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    for name, build in DEMO_MODELS.items():
        model, shape = build()
        print(f"demo:{name}  input shape {(1, *shape)}")
        report = crawl_module(model, shape)
        print(format_table(report, spelling="cli"))  # summary()'s table, hints in CLI spelling
        print()
        _write(str(out / f"{name}.json"), _dump(report))
        _write(str(out / f"{name}.html"), _render(report, "html", title=f"TorchScan demo: {name}"))
    print(f"open {out / 'cnn.html'} in a browser to explore the costs", file=sys.stderr)
    return EXIT_OK


def _model_call(args: argparse.Namespace, spec: InputSpec) -> contextlib.AbstractContextManager[None]:
    """Errors the model raises on its inputs: one line with a hint, exit 2 (issue 23 item 6)."""
    return errors.model_call(args.target, spec.shapes, args.dtype, args.traceback)


def _cmd_scan(args: argparse.Namespace) -> int:
    import io

    incomplete: Any = None
    table = io.StringIO()  # printed once the status line is gone, so the two never interleave
    with status_line(f"loading {args.target} …") as status:
        _target, model, spec = _load_model(args)
        from torchscan import IncompleteAnalysisError, crawl_module
        from torchscan.views.table import format_table

        if status is not None:
            status.set(f"analysing {args.target} …")
        with contextlib.redirect_stdout(table), _model_call(args, spec):
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
    )
    _human_stream(args).write(table.getvalue() + text + "\n")
    for line in hw.hardware_lines(report):
        print(line, file=_human_stream(args))
    if args.json is not None:
        _write(args.json, _dump(report))
    _write_renderings(report, args, **_render_options(args))
    if incomplete is not None:
        print(f"torchscan: --strict: {incomplete} (the requested report files were written)", file=sys.stderr)
        return EXIT_INCOMPLETE
    return EXIT_OK


def _floating_sum(output: Any) -> Any:
    """Sum of every floating-point tensor in a (nested) model output, for ``flops --train``."""
    import torch

    if isinstance(output, torch.Tensor):
        return output.sum() if output.is_floating_point() else None
    items = (
        output.values() if isinstance(output, Mapping) else output if isinstance(output, list | tuple) else ()
    )
    total = None
    for item in items:
        part = _floating_sum(item)
        if part is not None:
            total = part if total is None else total + part
    return total


def _cmd_flops(args: argparse.Namespace) -> int:
    import torch

    from torchscan.cli import targets

    _target, model, spec = _load_model(args)
    from torchscan import measure_flops

    inputs = targets.generate(model, spec)
    if args.train:
        workload = hw.train_step(model, inputs, _floating_sum)
    else:
        model.eval()

        def workload() -> None:
            with torch.no_grad():
                model(*inputs)

    with (
        contextlib.redirect_stdout(_human_stream(args)),
        _model_call(args, spec),
    ):  # keep `--json -` parseable
        report = measure_flops(workload)
    what = hw.TRAIN_STEP if args.train else "one eval/no-grad forward"
    print(fmt.flop_report(report, f"operator FLOPs of {args.target}: {what}"), file=_human_stream(args))
    if args.json is not None:
        _write(args.json, _dump(report))
    if args.strict and report["total"]["status"] != "complete":
        print("torchscan: incomplete operator FLOPs with --strict", file=sys.stderr)
        return EXIT_INCOMPLETE
    return EXIT_OK


def _cmd_memory(args: argparse.Namespace) -> int:
    from torchscan.cli import memory, targets

    _target, model, spec = _load_model(args, meta_build=True)
    from torchscan import measure_memory

    inputs = targets.generate(model, spec)
    workload = (
        hw.train_step(model, inputs, _floating_sum)
        if args.train
        else memory.inference_workload(model, inputs)
    )
    with (
        contextlib.redirect_stdout(_human_stream(args)),
        _model_call(args, spec),
    ):  # keep `--json -` parseable
        report = measure_memory(workload, device=spec.device, modules=model)
    what = hw.TRAIN_STEP if args.train else memory.INFERENCE
    print("\n".join(memory.memory_lines(report, args.target, what)), file=_human_stream(args))
    if args.json is not None:
        _write(args.json, _dump(report))
    _write_renderings(report, args, title=args.title or f"TorchScan memory: {args.target}")
    return EXIT_OK


def _cmd_latency(args: argparse.Namespace) -> int:
    with status_line(f"loading {args.target} …") as status:  # before importing torch: it takes seconds
        import torch

        from torchscan.analysis.inputs import default_placement
        from torchscan.cli import targets
        from torchscan.measure.progress import describe

        _target, model, spec = _load_model(args, devices=("cpu", "cuda", "mps"))
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
        with torch.no_grad(), contextlib.redirect_stdout(_human_stream(args)), _model_call(args, spec):
            if args.hardware_facts is None:
                report: Any = measure_latency(workload, **settings)
            else:  # utilization needs the operator FLOPs too: a separate counting pass after the timing
                report = measure_workload(
                    workload,
                    metrics=("flops", "latency", "throughput"),
                    hardware=args.hardware_facts,
                    **settings,
                )
    print(fmt.benchmark(report, args.target), file=_human_stream(args))
    for line in hw.hardware_lines(report):
        print(line, file=_human_stream(args))
    if args.json is not None:
        _write(args.json, _dump(report))
    _write_renderings(report, args, **_render_options(args))
    return EXIT_OK


def _validate(report: dict[str, Any], path: str) -> None:
    """Validate a loaded report by its kind (report/validate.py); invalid is a usage error."""
    from torchscan.report.validate import validate_report

    with _bad_report(f"invalid report {path!r}"):
        validate_report(report)


@contextlib.contextmanager
def _bad_report(what: str) -> Iterator[None]:
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
        reason = _one_line(error)
        if isinstance(error, ValueError):
            raise UsageError(f"{what}: {reason}") from None
        raise UsageError(f"{what}: {type(error).__name__}: {reason}") from None


def _cmd_compare(args: argparse.Namespace) -> int:
    from torchscan.report.validate import report_kind

    files.check_outputs({"--json": args.json, "--html": args.html}, [Path(args.before), Path(args.after)])
    before, after = files.load_report(args.before), files.load_report(args.after)
    with _bad_report(f"invalid report {args.before!r} or {args.after!r}"):
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
    _validate(before, args.before)
    _validate(after, args.after)
    from torchscan import compare_reports

    # Everything is computed before anything is printed or written, so a bad report leaves no
    # half-written output behind.
    with _bad_report(f"cannot compare {args.before!r} and {args.after!r}"):
        diff: Any = compare_reports(before, after)
        if kinds[0] == "memory":
            from torchscan.cli.memory import comparison_lines

            table = "\n".join(comparison_lines(diff))
        else:
            table = _analysis_comparison(diff, before, after)
        saved = _dump(diff) if args.json is not None else None
    page = None
    if args.html is not None:
        with _bad_report("cannot render the comparison"):
            page = _render(after, "html", before=before, **_render_options(args))
    print(table, file=_human_stream(args))
    if saved is not None:
        _write(args.json, saved)
    if page is not None:
        _write(args.html, page)
    return EXIT_OK


def _analysis_comparison(diff: Any, before: Any, after: Any) -> str:
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


def _cmd_render(args: argparse.Namespace) -> int:
    sources = [Path(args.report), Path(args.before) if args.before is not None else None]
    files.check_outputs({"--html": args.html, "--svg": args.svg}, sources)
    report = files.load_report(args.report)
    _validate(report, args.report)
    options = _render_options(args)
    if args.before is not None:
        options["before"] = files.load_report(args.before)
        _validate(options["before"], args.before)
    fmt_name, destination = ("html", args.html) if args.html is not None else ("svg", args.svg)
    with _bad_report(f"cannot render {args.report!r}"):
        page = _render(report, fmt_name, **options)
    _write(destination, page)
    return EXIT_OK


def _cmd_merge(args: argparse.Namespace) -> int:
    from torchscan import merge_reports
    from torchscan.views.merged_html import merged_summary

    files.check_outputs({"--json": args.json, "--html": args.html}, [Path(p) for p in args.reports])
    reports = [files.load_report(path) for path in args.reports]
    with _bad_report("cannot merge the reports"):
        merged = merge_reports(reports)
    print(merged_summary(merged), file=_human_stream(args))
    if args.json is not None:
        _write(args.json, _dump(merged))
    _write_renderings(merged, args, **_render_options(args))
    return EXIT_OK


def _cmd_generate(args: argparse.Namespace) -> int:
    from torchscan.cli import generate

    # the prompt is integer token ids built by the command: no input hint applies
    with errors.model_call(args.target, [], ["int64"], args.traceback):
        return generate.run(args, _write, _dump, _render)


def _cmd_scale(args: argparse.Namespace) -> int:
    from torchscan.cli import scale

    return scale.run(args, _write, _dump, _render)


def _cmd_rss(args: argparse.Namespace) -> int:
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
        return EXIT_MODEL_ERROR
    except NotImplementedError as error:
        raise UsageError(_one_line(error)) from None
    except OSError as error:
        raise UsageError(f"cannot start {command[0]!r}: {error.strerror or error}") from None
    stream = _human_stream(args)
    print(fmt.rss(result), file=stream)
    print(json.dumps(result, indent=2, allow_nan=False), file=stream)
    if args.json is not None:
        _write(args.json, _dump(result))
    return EXIT_OK


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "demo": _cmd_demo,
    "scan": _cmd_scan,
    "flops": _cmd_flops,
    "memory": _cmd_memory,
    "latency": _cmd_latency,
    "compare": _cmd_compare,
    "render": _cmd_render,
    "merge": _cmd_merge,
    "generate": _cmd_generate,
    "scale": _cmd_scale,
    "rss": _cmd_rss,
    "skill": contract.run_skill,
    "schema": contract.run_schema,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``) and return the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help(sys.stderr)
            print("\nStart with: torchscan demo", file=sys.stderr)
            return EXIT_USAGE
        with warnings.catch_warnings():
            # torch warns "Failed to initialize NumPy" at import when numpy is not installed (a bare
            # `pip install -e .` brings none). TorchScan never uses numpy, so the line says nothing
            # about any result; it is silenced for this message alone, for the command's duration.
            warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
            with files.cleanup_on_signals(), files.guarded_stdout():  # no temporary outlives a SIGTERM
                _outputs_to_stdout(args)
                status = _COMMANDS[args.command](args)
                sys.stdout.flush()  # a full or closed stdout fails here, not at interpreter exit
                return status
    except UsageError as error:
        if isinstance(error, files.StdoutError):
            files.silence_stdout()
        # One line whatever the message carries (an OS or validator text may hold newlines).
        # Control characters (a file name, an unknown option) are shown escaped, never sent raw.
        print(f"torchscan: error: {report_name(' '.join(str(error).split()))}", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exit_:  # --help and --version
        return exit_.code if isinstance(exit_.code, int) else EXIT_OK
    except KeyboardInterrupt:
        print("torchscan: interrupted", file=sys.stderr)
        return 130
    except Exception:
        traceback.print_exc()
        return EXIT_MODEL_ERROR
