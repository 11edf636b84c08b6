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
import sys
import traceback
import warnings
from collections.abc import Callable, Sequence

from torchscan.cli import contract, files, model_commands, output, report_commands
from torchscan.cli.output import EXIT_INCOMPLETE, EXIT_MODEL_ERROR, EXIT_OK, EXIT_USAGE
from torchscan.cli.parser import build_parser
from torchscan.cli.report_commands import BENCHMARK_REFUSAL
from torchscan.cli.targets import UsageError
from torchscan.report.names import report_name

__all__ = ["BENCHMARK_REFUSAL", "EXIT_INCOMPLETE", "EXIT_MODEL_ERROR", "EXIT_OK", "EXIT_USAGE", "main"]

_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "demo": model_commands.cmd_demo,
    "scan": model_commands.cmd_scan,
    "flops": model_commands.cmd_flops,
    "memory": model_commands.cmd_memory,
    "latency": model_commands.cmd_latency,
    "compare": report_commands.cmd_compare,
    "render": report_commands.cmd_render,
    "merge": report_commands.cmd_merge,
    "generate": model_commands.cmd_generate,
    "scale": model_commands.cmd_scale,
    "rss": model_commands.cmd_rss,
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
                output.outputs_to_stdout(args)
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
