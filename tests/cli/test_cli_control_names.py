"""Control characters reach neither a terminal nor a refused rendering (issue #20, item 5)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from torchscan.cli import main

EVIL = textwrap.dedent(
    """
    from torch import nn

    Evil = type("Ev\\x1b[31mil\\x07", (nn.Module,), {"forward": lambda self, x: self.inner(x)})
    net = Evil()
    net.add_module("li\\x1bn\\x00", nn.Linear(3, 2))
    net.inner = getattr(net, "li\\x1bn\\x00")
    """
)


def _no_raw_control(text: str) -> None:
    bad = [c for c in text if (ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0) and c not in "\n"]
    assert not bad, bad[:5]


def _one_usage_line(status: int, err: str) -> None:
    assert status == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("torchscan: error: "), err
    _no_raw_control(err)


def test_scan_of_a_model_with_control_characters_writes_json_and_html(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "evil.py").write_text(EVIL)
    monkeypatch.chdir(tmp_path)
    status = main(["scan", "./evil.py:net", "--input-shape", "3", "--json", "ev.json", "--html", "ev.html"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    _no_raw_control(captured.out + captured.err)
    report = json.loads((tmp_path / "ev.json").read_text())
    assert report["layers"][1]["path"] == "li\\x1bn\\x00"
    assert (tmp_path / "ev.html").read_text().startswith("<!doctype html>")


def test_work_unit_with_control_characters_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["latency", "demo:cnn", "--work-unit", "\x1b[31mred"])
    _one_usage_line(status, capsys.readouterr().err)


def test_usage_errors_show_control_characters_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["scan", "demo:cnn", "--\x1b[31mred"])
    err = capsys.readouterr().err
    _one_usage_line(status, err)
    assert "\\x1b[31mred" in err
