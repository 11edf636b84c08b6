"""Output and input files of the ``torchscan`` command line (cli.md, "Exit status and errors").

Outputs go where the user's path finally points: ``-`` and any path that is this process's standard
output (``/dev/stdout``, ``/dev/fd/1``, or the file the shell redirected stdout to) are written to
``sys.stdout``, the same for standard error, a symlink is followed and kept (its target is replaced
atomically, the temporary file in the *target's* folder so the rename never crosses a filesystem),
a character device or a FIFO (``/dev/null``, a named pipe) is written in place, and directories,
sockets and block devices are refused with a :class:`UsageError`.
Temporary files are registered before they exist, so a SIGTERM, SIGHUP or SIGINT during a write
removes them (:func:`cleanup_on_signals`) and the process still ends the conventional way.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import stat
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn, TextIO

from torchscan.cli.targets import UsageError
from torchscan.report.names import report_name

# Temporary files that exist (or are about to) and must not outlive the process.
_TEMPORARIES: set[str] = set()
_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, name))


@dataclass(frozen=True)
class Destination:
    """Where an output path really points: ``path`` after following symlinks, and how to write it.

    ``how`` is ``"replace"`` (a regular file, new or existing: atomic temporary file then rename),
    ``"stream"`` (a character device or a FIFO: opened and written in place, never replaced), or
    ``"stdout"``/``"stderr"`` (the process's own stream, whatever it is connected to).
    """

    path: Path
    how: str


def _describe(mode: int) -> str | None:
    """The name of a file type that cannot receive a report, or None when it can."""
    if stat.S_ISDIR(mode):
        return "a directory; give a file path"
    if stat.S_ISSOCK(mode):
        return "a socket; give a regular file, a FIFO or a character device"
    if stat.S_ISBLK(mode):
        return "a block device; give a regular file, a FIFO or a character device"
    if not (stat.S_ISREG(mode) or stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
        return "a special file; give a regular file, a FIFO or a character device"
    return None


def _own_stream(path: Path) -> str | None:
    """``"stdout"``/``"stderr"`` when ``path`` is the file behind this process's stdout/stderr.

    Compared by device and inode, so ``/dev/stdout`` is recognised whether stdout is a terminal, a
    pipe or a redirected file. Resolving the path instead would be wrong twice: a pipe's
    ``/proc/self/fd/1`` resolves to a name like ``pipe:[1234]`` that cannot be opened, and a
    redirected file would be *replaced* by the atomic rename while the shell's stream still points
    at the old, unlinked inode.
    """
    try:
        target = os.stat(path)
    except (OSError, ValueError):  # missing, unreadable, or a NUL byte in the name
        return None
    for name, stream, fallback in (("stdout", sys.stdout, 1), ("stderr", sys.stderr, 2)):
        try:
            fd = stream.fileno()
        except (AttributeError, OSError, ValueError):  # a replaced stream (a test's capture)
            fd = fallback
        with contextlib.suppress(OSError):
            if os.path.samestat(target, os.fstat(fd)):
                return name
    return None


def names_stdout(value: str) -> bool:
    """True for ``-`` and for any path that is this process's standard output (see :func:`_own_stream`)."""
    return value == "-" or _own_stream(Path(value)) == "stdout"


def destination(option: str, value: str) -> Destination:
    """Classify the output ``value`` of ``option``; raise :class:`UsageError` when it cannot be written."""
    try:
        return _classify(option, value)
    except (OSError, ValueError) as error:  # a name over 255 bytes, a NUL byte: one line, status 2
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise UsageError(f"{option} {value!r}: {reason}") from None


def _classify(option: str, value: str) -> Destination:
    given = Path(value)
    own = _own_stream(given)
    if own is not None:
        return Destination(given, own)
    with contextlib.suppress(OSError, ValueError):
        # A device or pipe reached through /dev/fd/N or /proc/self/fd/N is opened by the name given:
        # its resolved name (e.g. "pipe:[1234]") is not a path anything can open.
        mode = os.stat(given).st_mode
        if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
            return Destination(given, "stream")
    # realpath (not strict) follows every symlink it can, so a dangling link yields the path it
    # names: the file to create there, inside a folder that must exist.
    real = Path(os.path.realpath(given))
    via = f" (the target of symlink {value!r})" if given.is_symlink() else ""
    try:
        mode = os.stat(real).st_mode
    except FileNotFoundError:
        folder = real.parent
        if not folder.is_dir():
            shown = str(folder) if via else str(given.parent)
            raise UsageError(f"{option} {value!r}: directory {shown!r}{via} does not exist") from None
        return Destination(real, "replace")
    except OSError as error:  # e.g. a symlink loop, a permission problem on a parent folder
        raise UsageError(f"{option} {value!r}: {error.strerror or error}") from None
    problem = _describe(mode)
    if problem is not None:
        raise UsageError(f"{option} {value!r} is {problem}")
    return Destination(real, "replace" if stat.S_ISREG(mode) else "stream")


def _same_file(a: Path, b: Path) -> bool:
    with contextlib.suppress(OSError):
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    return Path(os.path.realpath(a)) == Path(os.path.realpath(b))


def _stdout_is(source: Path) -> bool:
    """True when this process's standard output is the file ``source`` (same device and inode)."""
    try:
        fd = sys.stdout.fileno() if sys.stdout is not None else 1
    except (AttributeError, OSError, ValueError):  # a replaced stream (a test's capture)
        fd = 1
    try:
        return os.path.samestat(os.fstat(fd), os.stat(source))
    except (OSError, ValueError):
        return False


def check_outputs(outputs: Mapping[str, str | None], inputs: Sequence[Path | None]) -> None:
    """Refuse (status 2) outputs that name an input, each other, or cannot be written (see above)."""
    chosen: dict[str, Path] = {}
    to_stdout: list[str] = []
    for option, value in outputs.items():
        if value is None:
            continue
        if names_stdout(value):
            to_stdout.append(option)
            if len(to_stdout) > 1:
                raise UsageError(
                    f"{to_stdout[0]} and {option} both write to standard output; give one a file"
                )
            # ``--html - >> in.json`` (or ``/dev/stdout``): stdout is the input itself, opened by
            # the shell; compared by device and inode, since no path names it.
            for source in inputs:
                if source is not None and _stdout_is(source):
                    raise UsageError(
                        f"{option} {value!r}: standard output is the input file {str(source)!r}; "
                        "refusing to write into it"
                    )
            continue
        where = destination(option, value)
        path = where.path
        if where.how == "replace":  # refused before the model runs, not after
            with contextlib.suppress(FileNotFoundError):
                info = path.stat()
                _check_replaceable(path, info)
                if hasattr(os, "geteuid") and os.geteuid() not in (0, info.st_uid):
                    raise UsageError(
                        f"{option} {value!r} belongs to another user, and replacing it would change "
                        "its owner; write to a new path"
                    )
        for source in inputs:
            if source is not None and _same_file(path, source):
                raise UsageError(f"{option} {value!r} is an input file; refusing to overwrite it")
        for other, other_path in chosen.items():
            if _same_file(path, other_path):
                raise UsageError(f"{option} and {other} name the same file {value!r}")
        chosen[option] = path


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _check_replaceable(target: Path, info: os.stat_result) -> None:
    """Refuse what an atomic rename cannot keep: extra hard links (they would keep the old content)."""
    if info.st_nlink > 1:
        raise UsageError(
            f"cannot write {str(target)!r}: it has {info.st_nlink} hard links, and an atomic "
            "replacement would leave the others with the old content; write to a new path"
        )


def _keep_owner(temporary: str, target: Path, info: os.stat_result) -> None:
    """Give the new file the old one's owner and group (root rewriting another user's file).

    Where that is not permitted (an unprivileged user replacing a file it does not own in a folder
    it may write), the replacement would silently change the owner: refused instead.
    """
    if (info.st_uid, info.st_gid) == (os.geteuid(), os.getegid()):
        return
    try:
        os.chown(temporary, info.st_uid, info.st_gid)
    except PermissionError:
        raise UsageError(
            f"cannot write {str(target)!r}: it belongs to another user, and replacing it would "
            "change its owner; write to a new path"
        ) from None


def _replace(target: Path, data: bytes) -> None:
    """Atomically replace (or create) the regular file ``target``: temporary file, fsync, rename.

    An existing target keeps its permission bits, owner and group; one with several hard links is
    refused before anything is written (see docs/cli.md, "Files").
    """
    info = target.stat() if target.exists() else None
    if info is not None:
        _check_replaceable(target, info)
    mode = info.st_mode & 0o7777 if info is not None else _new_file_mode()
    # The name is cut so that a target name near the 255-byte limit still leaves room for the suffix.
    short = target.name.encode("utf-8", "surrogateescape")[:160].decode("utf-8", "ignore")
    temporary = str(target.parent / f".{short}.{secrets.token_hex(6)}.tmp")
    # Registered before it exists: a signal at any point after this line finds it (unlinking a
    # name that was never created, or already renamed, is harmless).
    _TEMPORARIES.add(temporary)
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if info is not None and hasattr(os, "chown"):
            _keep_owner(temporary, target, info)
        os.chmod(temporary, mode)  # after chown, which may clear set-user/group-ID bits
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    finally:
        _TEMPORARIES.discard(temporary)


def _stream(target: Path, data: bytes) -> None:
    """Write to a character device or FIFO in place (no O_CREAT: never make a regular file here)."""
    fd = os.open(target, os.O_WRONLY)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def write(value: str, text: str, option: str = "output") -> None:
    """Write ``text`` (UTF-8) to stdout for ``-``, else to what ``value`` points to (see module doc)."""
    if value == "-":
        write_stdout(text)
        return
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as error:  # lone surrogates, e.g. from undecodable command-line bytes
        raise UsageError(f"cannot write {value!r}: the text is not valid UTF-8 ({error.reason})") from None
    where = destination(option, value)
    if where.how == "stdout":  # the stream itself: never reopened, never renamed over
        write_stdout(text)
        return
    if where.how == "stderr":
        sys.stderr.write(text)
        sys.stderr.flush()
        return
    try:
        (_replace if where.how == "replace" else _stream)(where.path, data)
    except OSError as error:
        raise UsageError(f"cannot write {value!r}: {error.strerror or error}") from None
    print(f"wrote {report_name(value)}", file=sys.stderr)


def write_stdout(text: str) -> None:
    """Write an output to standard output; a closed, full or broken stdout is a usage error."""
    if sys.stdout is None:  # the process was started with file descriptor 1 closed
        raise StdoutError(None)
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError as error:
        raise StdoutError(error) from None


class StdoutError(UsageError):
    """Standard output failed (``/dev/full``, a closed pipe): reported once, then stdout is silenced."""

    def __init__(self, error: OSError | None) -> None:
        reason = "it is closed" if error is None else error.strerror or str(error)
        super().__init__(f"cannot write to standard output: {reason}")


def silence_stdout() -> None:
    """Point file descriptor 1 at the null device, so Python's final flush cannot fail a second time.

    What the Python documentation recommends after a ``BrokenPipeError``; the buffered text is
    dropped (it could not be written anyway).
    """
    with contextlib.suppress(OSError, ValueError, AttributeError):
        fd = sys.__stdout__.fileno() if sys.__stdout__ is not None else 1
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)


class GuardedStream:
    """Standard output whose write/flush failures (``/dev/full``, a closed pipe) are usage errors."""

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        if self._stream is None:  # started with descriptor 1 closed: nothing can reach the user
            raise StdoutError(None)
        try:
            return self._stream.write(text)
        except OSError as error:
            raise StdoutError(error) from None

    def flush(self) -> None:
        if self._stream is None:
            return
        try:
            self._stream.flush()
        except OSError as error:
            raise StdoutError(error) from None

    def isatty(self) -> bool:
        return self._stream is not None and self._stream.isatty()

    def fileno(self) -> int:
        if self._stream is None:
            raise OSError("standard output is closed")
        return self._stream.fileno()

    def __getattr__(self, name: str) -> Any:  # encoding, errors, ...: the real stream's
        return getattr(self._stream, name)


@contextlib.contextmanager
def guarded_stdout() -> Iterator[None]:
    """While a command runs, a failing stdout raises :class:`StdoutError` (exit 2, one line)."""
    original = sys.stdout
    sys.stdout = GuardedStream(original)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout = original


# Report files are small (≤ 4 KiB per layer call); a cap keeps /dev/zero or a huge file from
# exhausting memory before the JSON parser can refuse it.
MAX_REPORT_BYTES = 256 * 1024 * 1024


def remove_temporaries() -> None:
    """Remove every registered temporary file (safe to call from a signal handler)."""
    for temporary in list(_TEMPORARIES):
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        _TEMPORARIES.discard(temporary)


def _handler(signum: int, frame: FrameType | None) -> None:
    remove_temporaries()
    if signum == getattr(signal, "SIGINT", None):
        raise KeyboardInterrupt  # what Python's default SIGINT handler does
    # End the way the signal's default action would, so the parent sees "killed by SIGTERM".
    signal.signal(signum, signal.SIG_DFL)
    signal.raise_signal(signum)


@contextlib.contextmanager
def cleanup_on_signals() -> Iterator[None]:
    """While active, SIGTERM/SIGHUP/SIGINT remove temporary files, then act as by default.

    Only default handlers are replaced (a program embedding :func:`torchscan.cli.main` keeps its
    own), only in the main thread (where Python runs signal handlers), and they are restored after.
    """
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in _SIGNALS:
            current = signal.getsignal(signum)
            if current in (signal.SIG_DFL, signal.default_int_handler):
                previous[signum] = signal.signal(signum, _handler)
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"non-finite number {name} is not valid report JSON")


def load_report(path: str) -> dict[str, Any]:
    """Read a saved report; unreadable, undecodable or invalid JSON is a usage error (status 2)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_REPORT_BYTES + 1)
        if len(data) > MAX_REPORT_BYTES:
            raise UsageError(f"report {path!r} is larger than {MAX_REPORT_BYTES // 2**20} MiB; not a report")
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UsageError(
            f"cannot read report {path!r}: not UTF-8 text (byte {error.start}: {error.reason})"
        ) from None
    except OSError as error:
        raise UsageError(f"cannot read report {path!r}: {error.strerror or error}") from None
    try:
        report = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise UsageError(f"report {path!r} is not a report: JSON nested too deeply") from None
    except ValueError as error:  # json.JSONDecodeError, and ints beyond Python's digit limit
        raise UsageError(f"report {path!r} is not valid JSON: {' '.join(str(error).split())}") from None
    if not isinstance(report, dict):
        raise UsageError(f"report {path!r} is not a JSON object")
    return report
