"""``torchscan scan``/``latency`` status lines and grouped diagnostics (issue 15 items 2, 3 and 5)."""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import pytest

from torchscan.cli import main

MODEL = textwrap.dedent(
    """
    import torch
    from torch import nn

    class Opaque(nn.Module):
        def forward(self, x):
            return torch.logcumsumexp(x, 1)

    model = nn.Sequential(nn.Linear(4, 4), Opaque(), Opaque())
    """
)


def test_scan_prints_grouped_diagnostics_with_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "opaque_models.py"
    path.write_text(MODEL)
    status = main(["scan", f"{path}:model", "--input-shape", "4"])
    out = capsys.readouterr().out
    assert status == 0
    # Issue 23 item 1: receptive-field diagnostics are not warnings unless the column is asked for
    text = " ".join(out.split())
    assert "Diagnostics: 3 in 2 group(s)" in text and "[receptive_field]" not in text
    assert "Not requested: 2 receptive-field diagnostic(s) (Opaque 2)" in text
    assert "--receptive-field shows them." in text
    status = main(["scan", f"{path}:model", "--input-shape", "4", "--receptive-field"])
    out = capsys.readouterr().out
    assert status == 0
    assert "see report['diagnostics']" not in out
    footer = out[out.index("Diagnostics: 5 in 3 group(s)") :].splitlines()
    assert max(len(line) for line in footer) <= 120  # issue 23: wrapped at the table width
    # One group per "  N ×" line, its wrapped continuation lines indented further.
    groups: list[str] = []
    for line in footer[1:]:
        if line.startswith("      "):
            groups[-1] += " " + line.strip()
        elif line.startswith("  "):
            groups.append(line.strip())
    group = next(text for text in groups if text.startswith("2 × unsupported_module_metric"))
    # The file target is imported under a private module name; the class path shows what Python has.
    match = re.fullmatch(
        r"2 × unsupported_module_metric: Opaque \((\S+\.Opaque)\) \[receptive_field\] at 1, 2"
        r" -> custom_modules=\{(\S+): ModuleHandler\(\.\.\.\)\}",
        group.strip(),
    )
    assert match is not None and match.group(1) == match.group(2)
    assert "custom_mapping={torch.ops.aten.logcumsumexp: <formula>}" in out


def test_scan_shows_loading_then_analysing_on_a_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    status = main(["scan", "demo:cnn", "--mode", "structure"])
    captured = capsys.readouterr()
    assert status == 0
    err = captured.err
    assert err.index("\rtorchscan: loading demo:cnn …") < err.index("\rtorchscan: analysing demo:cnn …")
    assert err.endswith("\r\x1b[K")  # cleared before the table is printed
    assert "Total params" in captured.out and "\r" not in captured.out


def test_scan_is_quiet_off_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", "demo:cnn", "--mode", "structure"]) == 0
    assert capsys.readouterr().err == ""


def test_latency_shows_the_timing_budget_on_a_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    argv = ["latency", "demo:cnn", "--min-run-time", "0.01", "--warmup", "1", "--min-repeats", "2"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert err.startswith("\rtorchscan: loading demo:cnn … (0 s elapsed)")
    assert "demo:cnn: first call …" in err
    assert " s / 0.01 s budget" in err
    assert err.endswith("\r\x1b[K")
