"""``torchscan memory TARGET [--train] [--device meta]`` and memory reports in ``compare``/``render``.

The model is memory.md 4's MLP, Linear(16,32)-ReLU-Linear(32,8) in float32, with a batch of 1
(the command line prepends it): parameters (16*32+32 + 32*8+8) * 4 = 3,232 bytes. One ``--train``
step (AdamW, PyTorch's defaults) peaks in the optimizer step with every gradient (3,232 bytes) and
AdamW's exp_avg + exp_avg_sq (2 * 3,232) plus four 4-byte ``step`` tensors: 6,480 bytes. Freezing
the first Linear removes its (16*32+32) * 4 = 2,176 bytes of gradients and 2 * 2,176 + 2 * 4 =
4,360 bytes of optimizer state.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from torchscan.cli import main
from torchscan.report.validate import load_report, report_kind

MODEL = """
import torch
from torch import nn


def make(freeze=False):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
    if freeze:
        model[0].requires_grad_(False)
    return model


frozen = nn.Sequential(nn.Linear(4, 4)).requires_grad_(False)
"""


@pytest.fixture
def target(tmp_path: Path) -> str:
    (tmp_path / "mlp.py").write_text(MODEL)
    return f"{tmp_path / 'mlp.py'}:make"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _train(capsys: pytest.CaptureFixture[str], target: str, out: Path, *extra: str) -> tuple[str, dict]:
    status, printed, err = run(
        capsys, "memory", target, "--input-shape", "16", "--train", "--json", str(out), *extra
    )
    assert status == 0, err
    return printed, load_report(out.read_text())


def test_train_step_prints_the_categories_at_the_peak(
    capsys: pytest.CaptureFixture[str], target: str, tmp_path: Path
) -> None:
    printed, report = _train(capsys, target, tmp_path / "mem.json")
    assert report_kind(report) == "memory"
    lines = printed.splitlines()
    assert lines[0].startswith("storage ledger of ") and "one training step" in lines[0]
    assert "  parameters                         complete · 3,232 bytes (3.16 KiB)" in lines
    assert "  gradients                          complete · 3,232 bytes (3.16 KiB)" in lines
    assert "  optimizer state                    complete · 6,480 bytes (6.33 KiB)" in lines
    assert "          at phase optimizer, outside every module call" in lines
    assert "  recompute                          unavailable · unknown" in lines
    at_peak = report["at_peak"]["by_category"]
    assert at_peak["parameters"]["value"] == 3232 and at_peak["gradients"]["value"] == 3232
    assert report["baseline"]["value"] == 3232 + 16 * 4  # parameters + the generated input
    peak_line = next(line for line in lines if line.startswith("peak "))
    assert f"complete · {report['peak']['value']:,} bytes" in peak_line


def test_meta_device_gives_the_same_ledger_figures(
    capsys: pytest.CaptureFixture[str], target: str, tmp_path: Path
) -> None:
    _, cpu = _train(capsys, target, tmp_path / "cpu.json")
    printed, meta = _train(capsys, target, tmp_path / "meta.json", "--device", "meta")
    assert meta["context"]["device"] == "meta" and meta["context"]["ledger_device"] == "meta"
    for key in ("peak", "baseline", "at_peak", "by_phase", "by_module", "timeline", "timeline_events"):
        assert meta[key] == cpu[key], key
    assert "device meta, ledger on meta tensors" in printed


def test_inference_forward_saves_nothing_for_backward(
    capsys: pytest.CaptureFixture[str], target: str, tmp_path: Path
) -> None:
    status, printed, _ = run(
        capsys, "memory", target, "--input-shape", "16", "--json", str(tmp_path / "m.json")
    )
    assert status == 0
    assert "one eval/no-grad forward" in printed.splitlines()[0]
    report = json.loads((tmp_path / "m.json").read_text())
    assert report["at_peak"]["by_category"]["activations"]["value"] == 0
    assert report["at_peak"]["by_category"]["gradients"]["value"] == 0
    assert report["by_phase"]["backward"]["status"] == "unavailable"


def test_html_svg_and_json_to_stdout(capsys: pytest.CaptureFixture[str], target: str, tmp_path: Path) -> None:
    html, svg = tmp_path / "m.html", tmp_path / "m.svg"
    status, out, err = run(
        capsys, "memory", target, "--input-shape", "16", "--train", "--json", "-", "--html", str(html),
        "--svg", str(svg), "--title", "MLP <step>",
    )  # fmt: skip
    assert status == 0
    report = load_report(out)  # stdout holds the JSON alone; the summary went to stderr
    assert "at the peak, by category:" in err
    root = ET.fromstring(svg.read_text())
    assert root.find("{http://www.w3.org/2000/svg}title").text == "MLP <step>"  # type: ignore[union-attr]
    page = html.read_text()
    # the page has the one packaged script (timeline zoom and hover, views-3.md 5) and no other
    assert "<title>MLP &lt;step&gt;</title>" in page and page.count("<script") == 2
    assert f"{report['peak']['value']:,} bytes" in page  # the exact count beside the page-style bytes


def test_compare_two_memory_reports_shows_the_freezing_deltas(
    capsys: pytest.CaptureFixture[str], target: str, tmp_path: Path
) -> None:
    _train(capsys, target, tmp_path / "before.json")
    _train(capsys, target, tmp_path / "after.json", "--factory-kwargs", '{"freeze": true}')
    status, printed, err = run(
        capsys, "compare", str(tmp_path / "before.json"), str(tmp_path / "after.json"),
        "--json", str(tmp_path / "diff.json"), "--html", str(tmp_path / "diff.html"),
    )  # fmt: skip
    assert status == 0, err
    rows = {line[:52].strip(): line[52:].split("  ")[-1].strip() for line in printed.splitlines()[2:15]}
    assert rows["gradients at the peak"] == "-2,176 bytes (-2.12 KiB)"
    assert rows["optimizer state at the peak"] == "-4,360 bytes (-4.26 KiB)"
    assert rows["parameters at the peak"] == "+0 bytes (+0 B)"
    assert rows["recompute phase peak"].startswith("delta unknown")
    diff = json.loads((tmp_path / "diff.json").read_text())
    assert diff["report_type"] == "memory_comparison" and diff["at_peak"]["gradients"]["delta"] == -2176
    assert 'id="delta-gradients"' in (tmp_path / "diff.html").read_text()
    status, _, err = run(capsys, "render", str(tmp_path / "after.json"), "--svg", str(tmp_path / "r.svg"))
    assert status == 0 and ET.fromstring((tmp_path / "r.svg").read_text()) is not None


def test_usage_errors_exit_2_with_one_line(
    capsys: pytest.CaptureFixture[str], target: str, tmp_path: Path
) -> None:
    cases = [
        ["memory", "no_such_module_xyz:net", "--input-shape", "16"],
        ["memory", target, "--input-shape", "16", "--device", "bogus"],
        ["memory", target.replace(":make", ":frozen"), "--input-shape", "4", "--train"],
        ["memory", target, "--input-shape", "16", "--json", target.split(":")[0]],
        ["memory", target],  # no --input-shape for a non-demo target
    ]
    for argv in cases:
        status, _, err = run(capsys, *argv)
        assert status == 2, argv
        assert err.count("\n") == 1 and err.startswith("torchscan: error: "), err
    assert "def make" in Path(target.split(":")[0]).read_text()  # the input file was never overwritten
    _train(capsys, target, tmp_path / "mem.json")
    scan = tmp_path / "scan.json"
    assert run(capsys, "scan", "demo:cnn", "--json", str(scan))[0] == 0
    status, _, err = run(capsys, "compare", str(tmp_path / "mem.json"), str(scan))
    assert status == 2 and "two MemoryReports" in err
    mem = str(tmp_path / "mem.json")
    status, _, err = run(capsys, "render", mem, "--html", str(tmp_path / "x.html"), "--before", str(scan))
    assert status == 2 and err.count("\n") == 1  # kinds never mix
    assert not (tmp_path / "x.html").exists()
    # views-3.md 5: an SVG with --before draws both runs' timelines on one bytes axis
    assert run(capsys, "render", mem, "--svg", str(tmp_path / "x.svg"), "--before", mem)[0] == 0
    assert 'id="before-timeline"' in (tmp_path / "x.svg").read_text()
