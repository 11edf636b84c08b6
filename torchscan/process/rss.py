"""``measure_peak_rss``: operating-system peak RSS of one fresh child process (workloads.md 3).

On Linux, a process forked (or vforked, or ``posix_spawn``-ed) from a large parent keeps the parent's
RSS high-water mark across ``exec``; a child started directly from a PyTorch process would report at
least the caller's RSS. The command is therefore started by a small intermediary interpreter
(``python -I -S``, only ``os``/``sys`` imported) whose sole job is to ``posix_spawn`` it, ``wait4``
it and write the raw result to a private pipe. The measured process descends from that small
address space, and the standard streams stay untouched for the command's own use.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence

from torchscan.report.schema import MetricResult, metric_result

# The intermediary's whole program. argv: [-c, <report fd>, <command...>]. It writes one line:
# "ok <wait status> <ru_maxrss>" or "error <errno> <strerror>", and nothing to the standard streams.
_INTERMEDIARY = """\
import os, sys
fd = int(sys.argv[1])
os.set_inheritable(fd, False)
command = sys.argv[2:]
try:
    pid = os.posix_spawnp(command[0], command, os.environ)
except OSError as error:
    report = "error %d %s" % (error.errno or 0, error.strerror or "")
else:
    _, status, usage = os.wait4(pid, 0)
    report = "ok %d %d" % (status, usage.ru_maxrss)
os.write(fd, report.encode("utf-8", "replace"))
os.close(fd)
"""

_RSS_MULTIPLIER = {"linux": 1024, "darwin": 1}  # ru_maxrss is KiB on Linux, bytes on macOS


def validate_command(command: object, *, name: str = "command") -> list[str]:
    """Return ``command`` as a list, or raise ``ValueError`` unless it is a non-empty sequence of str."""
    if isinstance(command, str | bytes) or not isinstance(command, Sequence) or not command:
        raise ValueError(f"{name} must be a non-empty sequence of strings (executable first, then arguments)")
    if not all(isinstance(part, str) for part in command):
        raise ValueError(f"{name} must be a non-empty sequence of strings; every element must be a str")
    return list(command)


def measure_peak_rss(command: Sequence[str], *, cwd: str | os.PathLike[str] | None = None) -> MetricResult:
    """Run ``command`` once as a new process (no shell) and return its peak resident set size in bytes.

    The figure is ``ru_maxrss`` from ``os.wait4`` for that one child over its whole lifetime:
    interpreter start, imports, model loading, every phase, exit. The child inherits standard input,
    output and error; ``cwd`` is its working directory. There is no timeout. The command and ``cwd``
    are not kept.

    What this number does NOT mean: it is not an inference-only increment, not the peak of a process
    tree (grandchildren are not included), not accelerator or container memory, and it must never be
    added to ``measure_peak_memory`` figures (the scopes overlap on unified-memory hardware).

    Raises ``ValueError`` for a malformed command, ``NotImplementedError`` outside Linux/macOS (before
    launching anything), ``subprocess.CalledProcessError`` for a non-zero exit or a signal, and
    ``OSError`` (e.g. ``FileNotFoundError``) when the command cannot be started.
    """
    argv = validate_command(command)
    multiplier = _RSS_MULTIPLIER.get(sys.platform)
    if multiplier is None or not hasattr(os, "wait4"):
        raise NotImplementedError(
            f"measure_peak_rss supports Linux and macOS only (os.wait4 is required), not {sys.platform!r}"
        )
    if not sys.executable:
        raise OSError("cannot locate a Python interpreter (sys.executable is empty) for the intermediary")
    status, maxrss = _run_through_intermediary(argv, cwd)
    returncode = os.waitstatus_to_exitcode(status)
    if returncode != 0:
        raise subprocess.CalledProcessError(returncode, list(argv))
    return metric_result(
        "complete",
        int(maxrss) * multiplier,
        unit="bytes",
        scope="child_process_lifetime",
        method="os.wait4.ru_maxrss",
    )


def _run_through_intermediary(argv: list[str], cwd: str | os.PathLike[str] | None) -> tuple[int, int]:
    """Start the intermediary, return the command's ``(wait status, ru_maxrss)`` read from the pipe."""
    read_end, write_end = os.pipe()
    try:
        intermediary = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _INTERMEDIARY, str(write_end), *argv],
            cwd=cwd,
            pass_fds=(write_end,),
        )
    except BaseException:
        os.close(read_end)
        os.close(write_end)
        raise
    os.close(write_end)
    with os.fdopen(read_end, "rb") as channel:
        report = channel.read().decode("utf-8", "replace")
    intermediary_status = intermediary.wait()
    kind, _, rest = report.partition(" ")
    if kind == "ok":
        status, maxrss = (int(part) for part in rest.split())
        return status, maxrss
    if kind == "error":
        number, _, message = rest.partition(" ")
        raise OSError(int(number), message, argv[0])
    raise RuntimeError(
        f"the measure_peak_rss intermediary process failed (exit status {intermediary_status}) "
        "without reporting a result"
    )
