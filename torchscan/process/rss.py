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
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

from torchscan.report.schema import MetricResult, metric_result
from torchscan.runtime.arguments import ArgumentTypeError

# The intermediary's whole program. argv: [-c, <report fd>, <watch fd>, <command...>]. It writes one
# line to the report pipe: "ok <wait status> <ru_maxrss>", "error <errno> <strerror>" (the command
# could not be started) or "crash <exception type>: <text>", and nothing to the standard streams
# (they belong to the command; a traceback there would read as the command's own output).
# Two ways to stop early, both ending with the command killed and reaped, so nothing is left to PID 1:
# - SIGTERM (sent by the caller when it is interrupted) makes it SIGKILL the command; the caller then
#   kills the process group and reaps this process.
# - End of file on the watch pipe: the caller died (SIGTERM, SIGHUP, SIGKILL, anything) and the
#   kernel closed its end. The command is SIGKILLed and reaped, then the process group (this process
#   and whatever the command left in it) is SIGKILLed: nobody is left to read a result.
# SIGCHLD wakes the select() through signal.set_wakeup_fd, so the wait is race-free and no handler
# ever raises between a system call and its result. SIGTERM stays blocked until the handler knows the
# command's pid; the command gets the original mask and default SIGPIPE/SIGXFSZ (this interpreter
# ignores those two, and an ignored disposition would survive exec). Only os, select, signal and sys
# are imported: the command inherits this process's RSS high-water mark (see the module docstring).
_INTERMEDIARY = """\
import os, select, signal, sys
def run(report_fd, watch_fd, command):
    os.set_inheritable(report_fd, False)
    os.set_inheritable(watch_fd, False)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        pid = os.posix_spawnp(command[0], command, os.environ, setsigmask=mask,
                              setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, signal.SIGTERM))
    except OSError as error:
        return "error %d %s" % (error.errno or 0, error.strerror or "")
    signal.signal(signal.SIGTERM, lambda *_: os.kill(pid, signal.SIGKILL))
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    try:
        while True:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                return "ok %d %d" % (status, usage.ru_maxrss)
            ready = select.select([watch_fd, wake_read], [], [])[0]
            if wake_read in ready:
                os.read(wake_read, 512)
            if watch_fd in ready and not os.read(watch_fd, 512):
                os.kill(pid, signal.SIGKILL)
                os.wait4(pid, 0)
                os.killpg(os.getpgrp(), signal.SIGKILL)
    except BaseException:
        os.kill(pid, signal.SIGKILL)
        os.wait4(pid, 0)
        raise
try:
    report = run(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:])
except BaseException as error:
    report = "crash %s: %s" % (type(error).__name__, " ".join(str(error).split()))
try:
    os.write(int(sys.argv[1]), report.encode("utf-8", "replace"))
except OSError:
    pass  # the caller was interrupted and closed its end: nobody is left to read the report
"""

# Seconds the interrupted caller lets the intermediary kill and reap the command before it kills
# the whole process group itself.
_TERMINATE_GRACE = 5.0

_RSS_MULTIPLIER = {"linux": 1024, "darwin": 1}  # ru_maxrss is KiB on Linux, bytes on macOS


def validate_command(command: object, *, name: str = "command") -> list[str]:
    """Return ``command`` as a list if it is a non-empty sequence of ``str`` that can be executed.

    A ``str``/``bytes``, a non-sequence or a non-``str`` element is an :class:`ArgumentTypeError` (a
    ``TypeError`` that is also the chapter's ``ValueError``); an empty sequence, an empty executable
    name, a NUL character or an element the file system encoding cannot encode is a ``ValueError``
    naming the element (``command[0]``), never its text.
    """
    if isinstance(command, str | bytes) or not isinstance(command, Sequence):
        raise ArgumentTypeError(
            f"{name} must be a non-empty sequence of strings (executable first, then arguments), "
            f"got {type(command).__name__}"
        )
    if not command:
        raise ValueError(f"{name} must be a non-empty sequence of strings (executable first, then arguments)")
    if not all(isinstance(part, str) for part in command):
        raise ArgumentTypeError(
            f"{name} must be a non-empty sequence of strings; every element must be a str"
        )
    argv = list(command)
    # Checked here, before anything is launched: these would otherwise fail inside the launch (a
    # ValueError or UnicodeEncodeError from exec's argument encoding, far from the caller's mistake).
    if not argv[0]:
        raise ValueError(f"{name}[0] is empty; it must name the executable to run")
    for index, part in enumerate(argv):
        if "\0" in part:
            raise ValueError(f"{name}[{index}] contains a NUL character, which no command argument can hold")
        try:
            os.fsencode(part)
        except UnicodeError:
            raise ValueError(
                f"{name}[{index}] cannot be encoded as a command argument (file system encoding "
                f"{sys.getfilesystemencoding()})"
            ) from None
    return argv


def measure_peak_rss(command: Sequence[str], *, cwd: str | os.PathLike[str] | None = None) -> MetricResult:
    """Run ``command`` once as a new process (no shell) and return its peak resident set size in bytes.

    The figure is ``ru_maxrss`` from ``os.wait4`` for that one child over its whole lifetime:
    interpreter start, imports, model loading, every phase, exit. The child inherits standard input,
    output and error; ``cwd`` is its working directory. There is no timeout, but an exception while
    waiting (``KeyboardInterrupt`` included) kills and reaps the command and its launcher before it
    propagates. The command and ``cwd`` are not kept.

    What this number does NOT mean: it is not an inference-only increment, not the peak of a process
    tree (grandchildren are not included), not accelerator or container memory, and it must never be
    added to ``measure_peak_memory`` figures (the scopes overlap on unified-memory hardware).

    Raises ``TypeError`` (an :class:`ArgumentTypeError`, also a ``ValueError``) for a command that is
    not a sequence of ``str`` or a ``cwd`` that is not a path, ``ValueError`` for an empty command,
    ``NotImplementedError`` outside Linux/macOS (before
    launching anything), ``subprocess.CalledProcessError`` for a non-zero exit or a signal, and
    ``OSError`` (e.g. ``FileNotFoundError``) when the command cannot be started.
    """
    argv = validate_command(command)
    if cwd is not None and (not isinstance(cwd, str | os.PathLike) or not isinstance(os.fspath(cwd), str)):
        raise ArgumentTypeError(f"cwd must be None, a str or an os.PathLike of str, got {type(cwd).__name__}")
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
    """Start the intermediary, return the command's ``(wait status, ru_maxrss)`` read from the pipe.

    The intermediary leads a new session (so its process group holds it and the command, and a
    terminal's Ctrl-C reaches only the caller). On any exception here, ``KeyboardInterrupt``
    included, the whole tree is killed and reaped before the exception propagates.
    """
    read_end, write_end = os.pipe()
    # The watch pipe: this process keeps the write end open for as long as it waits and never writes
    # to it. However this process ends (SIGTERM, SIGHUP, SIGKILL), the kernel closes that end, and the
    # intermediary, seeing end of file, kills the command and its process group. Both ends are
    # non-inheritable here, so no other child of this process keeps the write end open after exec.
    watch_read, watch_write = os.pipe()
    try:
        intermediary = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _INTERMEDIARY, str(write_end), str(watch_read), *argv],
            cwd=cwd,
            pass_fds=(write_end, watch_read),
            start_new_session=True,
        )
    except BaseException:
        for fd in (read_end, write_end, watch_read, watch_write):
            os.close(fd)
        raise
    try:
        os.close(write_end)
        os.close(watch_read)
        with os.fdopen(read_end, "rb") as channel:
            report = channel.read().decode("utf-8", "replace")
        intermediary_status = intermediary.wait()
    except BaseException:
        _terminate_tree(intermediary)
        raise
    finally:
        os.close(watch_write)
    kind, _, rest = report.partition(" ")
    if kind == "ok":
        status, maxrss = (int(part) for part in rest.split())
        return status, maxrss
    if kind == "error":
        number, _, message = rest.partition(" ")
        raise OSError(int(number), message, argv[0])
    detail = f": {rest}" if kind == "crash" else " without reporting a result"
    raise RuntimeError(
        f"the measure_peak_rss intermediary process failed (exit status {intermediary_status}){detail}"
    )


def _terminate_tree(intermediary: subprocess.Popen[bytes]) -> None:
    """Kill and reap the intermediary and the measured command (cleanup after an interruption).

    SIGTERM asks the intermediary to SIGKILL and reap the command. The intermediary is then awaited
    *without* being reaped (``WNOWAIT``), so its pid, which is the process group id, cannot be reused
    while the group is SIGKILLed as a fallback (a command that escaped the first step). Finally the
    intermediary is reaped. Repeated interrupts during this cleanup are not absorbed.
    """
    pid = intermediary.pid
    if intermediary.returncode is None:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        waitid = getattr(os, "waitid", None)
        if waitid is None:  # macOS: no waitid; reaping first leaves a tiny pid-reuse window
            try:
                intermediary.wait(timeout=_TERMINATE_GRACE)
            except subprocess.TimeoutExpired:
                pass
        else:
            deadline = time.monotonic() + _TERMINATE_GRACE
            while time.monotonic() < deadline:
                if waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                    break
                time.sleep(0.01)
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already empty
    intermediary.wait()
