"""Outputs never land in an input via stdout, split hard links or change owners (issue #20 item 8)."""

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


@pytest.fixture()
def report_file(tmp_path: Path) -> Path:
    path = tmp_path / "in.json"
    path.write_text(json.dumps(crawl_module(nn.Linear(3, 2), (3,))))
    return path


@pytest.mark.parametrize("output", ["/dev/stdout", "-"])
def test_stdout_appending_to_the_input_is_refused(report_file: Path, output: str) -> None:
    if output != "-" and not os.path.exists(output):
        pytest.skip("needs /dev/stdout")
    before = report_file.read_bytes()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(report_file, "ab") as appended:  # the shell's ``>> in.json``
        done = subprocess.run(
            [sys.executable, "-m", "torchscan", "render", str(report_file), "--html", output],
            env=env, stdout=appended, stderr=subprocess.PIPE, text=True, timeout=120,
        )  # fmt: skip
    assert_usage_error(done.returncode, done.stderr, "standard output is the input file")
    assert report_file.read_bytes() == before


def test_a_hard_linked_output_is_refused_before_writing(
    report_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "page.html"
    target.write_text("old")
    os.link(target, tmp_path / "other-name.html")
    status = main(["render", str(report_file), "--html", str(target)])
    assert_usage_error(status, capsys.readouterr().err, "hard links")
    assert target.read_text() == (tmp_path / "other-name.html").read_text() == "old"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_root_rewriting_another_users_file_keeps_its_owner(
    report_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "page.html"
    target.write_text("old")
    os.chown(target, 65534, 65534)  # nobody
    assert main(["render", str(report_file), "--html", str(target)]) == 0, capsys.readouterr().err
    info = target.stat()
    assert (info.st_uid, info.st_gid) == (65534, 65534)
    assert target.read_text().startswith("<!doctype html>")
