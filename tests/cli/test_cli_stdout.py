"""Outputs that are the process's own standard streams (cli.md, "Files"): ``-``, ``/dev/stdout``.

These run the real console entry point in a child process, because what matters is the file
descriptor the shell connected (a pipe, a redirected file), which an in-process test cannot set up.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchscan.cli import main

POSIX = sys.platform in {"linux", "darwin"} and Path("/dev/stdout").exists()
ROOT = Path(__file__).resolve().parents[2]
MODEL = "from torch import nn\nnet = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4))\n"
FACTORY = (
    "from torch import nn\ndef make(marker):\n    open(marker, 'w').close()\n    return nn.Linear(4, 4)\n"
)


def torchscan(argv: list[str], **streams: object) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "torchscan", *argv], env=env, check=False, timeout=120, **streams
    )


@pytest.fixture
def target(tmp_path: Path) -> str:
    (tmp_path / "model.py").write_text(MODEL)
    return f"{tmp_path / 'model.py'}:net"


@pytest.mark.skipif(not POSIX, reason="/dev/stdout")
def test_dev_stdout_redirected_to_a_file_gets_the_json_alone(target: str, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    with out.open("wb") as stdout:
        done = torchscan(
            ["scan", target, "--input-shape", "4", "--json", "/dev/stdout"],
            stdout=stdout,
            stderr=subprocess.PIPE,
        )
    assert done.returncode == 0, done.stderr.decode()
    # Like `--json -`: the file holds the report alone (it was not replaced by a rename, so the
    # shell's descriptor and the file are one), and the table went to stderr.
    report = json.loads(out.read_text())
    assert report["totals"]["parameters"]["value"] == 60  # 3 x Linear(4, 4): 3 x (16 + 4)
    table = done.stderr.decode()
    assert "Layer" in table and "(×3) 0 … 2" in table
    assert "wrote" not in table


@pytest.mark.skipif(not POSIX, reason="/dev/stdout")
def test_dev_stdout_into_a_pipe_is_parseable(target: str) -> None:
    done = torchscan(["scan", target, "--input-shape", "4", "--json", "/dev/stdout"], capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)["totals"]["macs"]["value"] == 48  # 3 x (4 x 4)
    assert "Layer" in done.stderr.decode()


@pytest.mark.skipif(not POSIX, reason="/dev/stderr")
def test_dev_stderr_redirected_to_a_file_is_appended_to_not_replaced(target: str, tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    with log.open("wb") as stderr:
        done = torchscan(
            ["scan", target, "--input-shape", "4", "--json", "/dev/stderr"],
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
    assert done.returncode == 0
    assert "Layer" in done.stdout.decode()  # the table stays on stdout: stdout is not an output
    assert json.loads(log.read_text())["totals"]["parameters"]["value"] == 60


def test_two_outputs_on_stdout_are_refused_before_the_model_is_built(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "factory.py").write_text(FACTORY)
    marker = tmp_path / "built"
    argv = [
        "scan",
        f"{tmp_path / 'factory.py'}:make",
        "--factory-kwargs",
        json.dumps({"marker": str(marker)}),
    ]
    status = main([*argv, "--input-shape", "4", "--json", "-", "--html", "-"])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.strip() == "torchscan: error: --json and --html both write to standard output; give one a file"
    assert not marker.exists()
