"""measure_peak_rss (workloads.md 8.2): real child processes on Linux/macOS."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from torchscan.process import measure_peak_rss

MIB = 1024**2
supported = pytest.mark.skipif(
    sys.platform not in ("linux", "darwin") or not hasattr(os, "wait4"), reason="Linux/macOS only"
)


@supported
def test_large_child_and_independence() -> None:
    small_before = measure_peak_rss([sys.executable, "-c", "pass"])
    big = measure_peak_rss([sys.executable, "-c", "b = bytearray(200 * 1024 * 1024)"])
    small_after = measure_peak_rss([sys.executable, "-c", "pass"])
    assert big["status"] == "complete"
    assert big["unit"] == "bytes"
    assert big["scope"] == "child_process_lifetime"
    assert big["method"] == "os.wait4.ru_maxrss"
    assert type(big["value"]) is int
    assert big["value"] >= 200 * MIB
    for small in (small_before, small_after):
        assert small["value"] < big["value"] - 150 * MIB


@supported
def test_child_does_not_inherit_the_callers_high_water_mark() -> None:
    keep = bytearray(1024**3)
    keep[::4096] = b"\x01" * len(range(0, len(keep), 4096))  # touch every page so it is resident
    small = measure_peak_rss([sys.executable, "-c", "pass"])
    assert small["value"] < 512 * MIB
    if sys.platform == "linux":  # the hazard being avoided: a direct spawn reports about 1 GiB
        pid = os.posix_spawn(sys.executable, [sys.executable, "-c", "pass"], os.environ)
        _, _, usage = os.wait4(pid, 0)
        assert usage.ru_maxrss * 1024 > 900 * MIB
    del keep


@supported
def test_non_zero_exit_raises_called_process_error() -> None:
    command = [sys.executable, "-c", "raise SystemExit(3)"]
    with pytest.raises(subprocess.CalledProcessError) as caught:
        measure_peak_rss(command)
    assert caught.value.returncode == 3
    assert caught.value.cmd == list(command)


@supported
def test_signal_gives_negative_return_code() -> None:
    command = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"]
    with pytest.raises(subprocess.CalledProcessError) as caught:
        measure_peak_rss(command)
    assert caught.value.returncode < 0


@supported
def test_unstartable_command_raises_os_error(tmp_path) -> None:
    with pytest.raises(FileNotFoundError):
        measure_peak_rss([str(tmp_path / "no-such-program")])
    with pytest.raises(OSError):
        measure_peak_rss([sys.executable, "-c", "pass"], cwd=tmp_path / "missing-directory")


@pytest.mark.parametrize("command", ["python -c pass", b"python", [], [sys.executable, 3], (), None])
def test_invalid_commands(command) -> None:
    with pytest.raises(ValueError, match="sequence of strings"):
        measure_peak_rss(command)


def test_unsupported_platform_launches_nothing(monkeypatch, tmp_path) -> None:
    marker = tmp_path / "marker"
    monkeypatch.setattr(sys, "platform", "win32")
    with pytest.raises(NotImplementedError, match="Linux and macOS"):
        measure_peak_rss([sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"])
    assert not marker.exists()


@supported
def test_streams_are_inherited_and_nothing_is_retained(capfd, tmp_path) -> None:
    (tmp_path / "data.txt").write_text("from-cwd")
    command = [sys.executable, "-c", "print('hello from child'); print(open('data.txt').read())"]
    result = measure_peak_rss(command, cwd=tmp_path)
    captured = capfd.readouterr()
    assert "hello from child" in captured.out
    assert "from-cwd" in captured.out
    assert set(result) == {"status", "value", "known_value", "unit", "scope", "method"}
    assert str(tmp_path) not in repr(result) and "hello" not in repr(result)


def _alive(pid: int) -> bool:
    """True while ``pid`` exists, zombies included (``kill(pid, 0)`` succeeds on a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@supported
@pytest.mark.parametrize("interrupt", ["sigint", "exception"])
def test_interrupted_measurement_kills_and_reaps_the_whole_tree(tmp_path, monkeypatch, interrupt) -> None:
    # Issue #11: a KeyboardInterrupt (or any exception) while waiting left the intermediary and the
    # command running, adopted by PID 1. Now both are killed and reaped before the error propagates.
    import signal
    import threading
    import time

    import torchscan.process.rss as rss

    marker = tmp_path / "pids"
    script = (
        "import os, time, pathlib\n"
        f"pathlib.Path({str(marker)!r} + '.tmp').write_text('%d %d' % (os.getpid(), os.getppid()))\n"
        f"os.replace({str(marker)!r} + '.tmp', {str(marker)!r})\n"
        "time.sleep(120)\n"
    )
    main = threading.get_ident()

    def wait_for_marker() -> None:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.01)

    if interrupt == "sigint":

        def send_sigint() -> None:
            wait_for_marker()
            signal.pthread_kill(main, signal.SIGINT)  # the main thread's blocking read gets EINTR

        threading.Thread(target=send_sigint, daemon=True).start()
        expected: type[BaseException] = KeyboardInterrupt
    else:
        real_fdopen = os.fdopen

        class _Channel:
            def __init__(self, fd: int) -> None:
                self.file = real_fdopen(fd, "rb")

            def __enter__(self) -> _Channel:
                return self

            def __exit__(self, *exc: object) -> None:
                self.file.close()

            def read(self) -> bytes:
                wait_for_marker()
                raise RuntimeError("simulated failure while waiting")

        monkeypatch.setattr(rss.os, "fdopen", lambda fd, mode: _Channel(fd))
        expected = RuntimeError
    try:
        with pytest.raises(expected):
            measure_peak_rss([sys.executable, "-c", script])
        command_pid, intermediary_pid = (int(part) for part in marker.read_text().split())
        assert not _alive(intermediary_pid), "the intermediary survived the interruption"
        assert not _alive(command_pid), "the measured command survived the interruption"
    finally:
        if marker.exists():
            for pid in (int(part) for part in marker.read_text().split()):
                if _alive(pid):
                    os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_command_starts_with_default_sigpipe(capfd) -> None:
    # The intermediary interpreter ignores SIGPIPE (as every Python does) and an ignored disposition
    # survives exec; the command must start with the default, as it would from a shell.
    measure_peak_rss(["/bin/sh", "-c", "grep '^SigIgn:' /proc/self/status"])
    line = capfd.readouterr().out.strip()
    ignored = int(line.split()[1], 16)
    assert not ignored & (1 << (13 - 1)), line  # SIGPIPE is signal 13: bit 12 of the mask


@pytest.mark.parametrize("command", ["python -c pass", b"python", [sys.executable, 3], None, 3])
def test_wrong_command_types_are_type_errors(command) -> None:
    with pytest.raises(TypeError, match="command"):
        measure_peak_rss(command)


@pytest.mark.parametrize("cwd", [3, b"/tmp", ["/tmp"]])
def test_wrong_cwd_type_is_a_type_error_before_launch(cwd, tmp_path) -> None:
    marker = tmp_path / "ran"
    with pytest.raises(TypeError, match="cwd"):
        measure_peak_rss([sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"], cwd=cwd)
    assert not marker.exists()
