"""Special files and extreme arguments: status 2, one line, no traceback (issue #20 item 7)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from torch import nn

from torchscan import crawl_module
from torchscan.cli import main

ROOT = Path(__file__).resolve().parents[2]


def assert_usage_error(status: int, err: str, fragment: str) -> None:
    assert status == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("torchscan: error: "), err
    assert fragment in err, err


@pytest.fixture(scope="module")
def report_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("saved") / "r.json"
    path.write_text(json.dumps(crawl_module(nn.Linear(3, 2), (3,))))
    return path


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_render_dev_zero_is_refused_without_reading_it_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["render", "/dev/zero", "--html", str(tmp_path / "o.html")])
    assert_usage_error(status, capsys.readouterr().err, "larger than 256 MiB")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_hardware_dev_zero_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["scan", "demo:cnn", "--hardware", "/dev/zero"])
    assert_usage_error(status, capsys.readouterr().err, "larger than 1024 KiB")


def test_output_name_over_255_bytes(report_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = str(report_file.parent / ("a" * 300 + ".html"))
    status = main(["render", str(report_file), "--html", name])
    assert_usage_error(status, capsys.readouterr().err, "--html")


def test_output_name_near_255_bytes_is_written(report_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = report_file.parent / ("b" * 250)  # its temporary file's name must still fit
    assert main(["render", str(report_file), "--html", str(target)]) == 0, capsys.readouterr().err
    assert target.read_text().startswith("<!doctype html>")


@pytest.mark.parametrize("shape", ["100000000000000000000", "3,4294967296,4294967296"])
def test_input_shape_beyond_int64_elements(shape: str, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["scan", "demo:cnn", "--input-shape", shape])
    assert_usage_error(status, capsys.readouterr().err, "more than a tensor can hold")


def _run(argv: list[str], **streams: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "torchscan", *argv]
    return subprocess.run(command, env=env, text=True, stderr=subprocess.PIPE, timeout=120, **streams)  # type: ignore[call-overload]


@pytest.mark.skipif(not os.path.exists("/bin/sh"), reason="needs a POSIX shell")
@pytest.mark.parametrize("output", [["--html", "-"], ["--html", "/dev/stdout"]])
def test_closed_stdout(report_file: Path, output: list[str]) -> None:
    # Started with descriptor 1 closed (``>&-``): Python's sys.stdout is None.
    done = _run_shell(["render", str(report_file), *output])
    assert_usage_error(done.returncode, done.stderr, "cannot write")


def _run_shell(argv: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = ["/bin/sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "-m", "torchscan", *argv]
    return subprocess.run(command, env=env, text=True, stderr=subprocess.PIPE, timeout=120)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_stdout_on_a_full_device(report_file: Path) -> None:
    with open("/dev/full", "w") as full:
        done = _run(["render", str(report_file), "--html", "-"], stdout=full)
    assert_usage_error(done.returncode, done.stderr, "No space left on device")
