"""Where the ``torchscan`` command line writes (cli.md, "Files"): symlinks, devices, FIFOs, signals."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from torchscan.cli import files as cli_files
from torchscan.cli import main

REPO = Path(__file__).resolve().parents[2]
POSIX = sys.platform in {"linux", "darwin"}
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def scan_to(capsys: pytest.CaptureFixture[str], destination: str) -> tuple[int, str]:
    """Write the cheapest AnalysisReport (demo CNN, structure mode) to ``destination``."""
    status = main(["scan", "demo:cnn", "--mode", "structure", "--json", destination])
    return status, capsys.readouterr().err


def assert_one_line_error(err: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("torchscan: error: ")


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# --- symlinks -------------------------------------------------------------------------------


@pytest.mark.skipif(not POSIX, reason="symlinks")
def test_symlink_is_kept_and_its_target_updated(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    target = there / "report.json"
    target.write_text("old")
    target.chmod(0o640)
    link = here / "report.json"
    link.symlink_to(target)
    status, err = scan_to(capsys, str(link))
    assert status == 0, err
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert json.loads(target.read_text())["schema_version"] == 1
    assert target.stat().st_mode & 0o777 == 0o640
    # The temporary file lived next to the target, not next to the link.
    assert sorted(p.name for p in here.iterdir()) == ["report.json"]
    assert sorted(p.name for p in there.iterdir()) == ["report.json"]


@pytest.mark.skipif(not POSIX, reason="symlinks")
def test_symlink_across_filesystems(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    other = Path("/dev/shm")
    if not other.is_dir() or not os.access(other, os.W_OK) or other.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("no second writable filesystem")
    target = other / f"torchscan-test-{os.getpid()}.json"
    try:
        link = tmp_path / "r.json"
        link.symlink_to(target)
        status, err = scan_to(capsys, str(link))
        assert status == 0, err  # before: os.replace across filesystems raised EXDEV (exit 1)
        assert link.is_symlink()
        assert json.loads(target.read_text())["schema_version"] == 1
    finally:
        target.unlink(missing_ok=True)


@pytest.mark.skipif(not POSIX, reason="symlinks")
def test_dangling_symlink_creates_its_target(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    link = tmp_path / "link.json"
    link.symlink_to("made.json")  # relative: resolved against the link's folder
    status, err = scan_to(capsys, str(link))
    assert status == 0, err
    assert link.is_symlink()
    assert json.loads((tmp_path / "made.json").read_text())["schema_version"] == 1


@pytest.mark.skipif(not POSIX, reason="symlinks")
def test_dangling_symlink_into_a_missing_folder_names_that_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "nowhere" / "r.json")
    status, err = scan_to(capsys, str(link))
    assert status == 2
    assert_one_line_error(err)
    # Before: "directory '.' does not exist" (the link's own folder, which exists).
    assert str(tmp_path / "nowhere") in err
    assert "symlink" in err
    assert link.is_symlink() and not (tmp_path / "nowhere").exists()


@pytest.mark.skipif(not POSIX, reason="symlinks")
def test_symlink_to_a_directory_or_a_loop_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "to-dir").symlink_to(tmp_path / "d")
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    for name in ("to-dir", "a"):
        status, err = scan_to(capsys, str(tmp_path / name))
        assert status == 2, name
        assert_one_line_error(err)
    assert (tmp_path / "to-dir").is_symlink() and (tmp_path / "a").is_symlink()
    assert list((tmp_path / "d").iterdir()) == []


# --- devices, FIFOs, sockets ------------------------------------------------------------------


@pytest.mark.skipif(not POSIX, reason="/dev/null")
def test_dev_null_stays_a_character_device(capsys: pytest.CaptureFixture[str]) -> None:
    status, err = scan_to(capsys, "/dev/null")
    assert status == 0, err
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.skipif(not AS_ROOT, reason="mknod needs root")
def test_character_device_is_written_in_place(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # A private copy of /dev/null (major 1, minor 3 on Linux), so the old behaviour, which
    # replaced the node with a regular file, cannot damage the real one.
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except OSError:
        pytest.skip("cannot create a device node here")
    status, err = scan_to(capsys, str(node))
    if status == 2 and "Permission denied" in err:
        pytest.skip("device nodes cannot be opened on this filesystem (nodev)")
    assert status == 0, err
    assert stat.S_ISCHR(node.stat().st_mode)
    assert leftovers(tmp_path) == []


@pytest.mark.skipif(not POSIX, reason="FIFOs")
def test_fifo_is_written_to_its_reader(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as reader:  # blocks until the writer opens the FIFO
            received.append(reader.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    status, err = scan_to(capsys, str(fifo))
    reader.join(timeout=60)
    assert status == 0, err
    assert not reader.is_alive()
    assert json.loads(received[0])["schema_version"] == 1
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert leftovers(tmp_path) == []


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="unix sockets")
def test_socket_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "s"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        status, err = scan_to(capsys, str(path))
    finally:
        server.close()
    assert status == 2
    assert_one_line_error(err)
    assert "socket" in err
    assert stat.S_ISSOCK(path.stat().st_mode)


@pytest.mark.skipif(not AS_ROOT, reason="mknod needs root")
def test_block_device_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    node = tmp_path / "blk"
    try:
        os.mknod(node, stat.S_IFBLK | 0o600, os.makedev(7, 0))
    except OSError:
        pytest.skip("cannot create a device node here")
    status, err = scan_to(capsys, str(node))
    assert status == 2
    assert_one_line_error(err)
    assert "block device" in err
    assert stat.S_ISBLK(node.stat().st_mode)


# --- signals ----------------------------------------------------------------------------------

# The child sends itself the signal from inside the write (a patched fsync, so the timing is
# deterministic): the temporary file exists at that moment and must be gone afterwards.
SIGNAL_DURING_WRITE = textwrap.dedent(
    """
    import os, signal, sys
    from torchscan.cli import main

    real_fsync = os.fsync

    def fsync(fd):
        signal.raise_signal(signal.{name})  # to this thread: handled before the write ends
        real_fsync(fd)

    os.fsync = fsync
    sys.exit(main(["rss", "--json", sys.argv[1], "--", sys.executable, "-c", "pass"]))
    """
)


@pytest.mark.skipif(not (POSIX and hasattr(os, "wait4")), reason="rss needs wait4")
@pytest.mark.parametrize(("name", "expected"), [("SIGTERM", -signal.SIGTERM), ("SIGINT", 130)])
def test_signal_mid_write_leaves_no_temporary_file(tmp_path: Path, name: str, expected: int) -> None:
    out = tmp_path / "rss.json"
    out.write_text("previous")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.run(
        [sys.executable, "-c", SIGNAL_DURING_WRITE.format(name=name), str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    # SIGTERM ends the process the default way (killed by the signal); SIGINT exits 130.
    assert child.returncode == expected, child.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rss.json"]
    assert out.read_text() == "previous"  # the interrupted write never replaced the old file


def test_signal_handlers_are_restored_and_custom_ones_kept() -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers live in the main thread")
    before = signal.getsignal(signal.SIGTERM)

    def custom(signum: int, frame: object) -> None:
        raise AssertionError("not called")

    with cli_files.cleanup_on_signals():
        assert signal.getsignal(signal.SIGTERM) is not before  # replaced while active
    assert signal.getsignal(signal.SIGTERM) == before
    previous = signal.signal(signal.SIGTERM, custom)
    try:
        with cli_files.cleanup_on_signals():
            assert signal.getsignal(signal.SIGTERM) is custom  # an embedder's handler is kept
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_non_utf8_text_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # Undecodable command-line bytes arrive as lone surrogates (PEP 383), e.g. in --title.
    out = tmp_path / "r.html"
    status = main(["scan", "demo:cnn", "--mode", "structure", "--html", str(out), "--title", "bad\udcff"])
    err = capsys.readouterr().err
    assert status == 2
    assert_one_line_error(err)
    assert not out.exists() and leftovers(tmp_path) == []
