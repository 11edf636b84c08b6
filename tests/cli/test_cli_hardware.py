"""``--hardware FILE.json`` on latency/scan and ``flops --train`` (cli.md, training-and-hardware.md 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_cli import assert_one_line_error, run

FACTS = {"name": "laptop", "peak_flops_per_second": 1e11, "memory_bandwidth_bytes_per_second": 5e10}
LINEAR = [
    "torch.nn:Linear",
    "--factory-kwargs",
    '{"in_features": 16, "out_features": 8}',
    "--input-shape",
    "16",
]


@pytest.fixture
def facts(tmp_path: Path) -> Path:
    path = tmp_path / "hw.json"
    path.write_text(json.dumps(FACTS))
    return path


@pytest.fixture
def refusing(tmp_path: Path) -> Path:
    path = tmp_path / "refusing.py"
    path.write_text("def build():\n    raise RuntimeError('the model must not be built')\n")
    return path


def test_scan_with_hardware_adds_the_roofline(capsys: pytest.CaptureFixture[str], facts: Path) -> None:
    status, out, err = run(capsys, "scan", *LINEAR, "--hardware", str(facts), "--json", "-")
    assert status == 0, err
    report = json.loads(out)
    assert report["context"]["hardware"] == FACTS
    # Linear(16, 8) on [1, 16]: 256 FLOPs; DMAs 16 + 128 + 8 + 8 = 160 -> 640 bytes (float32)
    assert report["totals"]["arithmetic_intensity"]["value"] == 256 / 640
    assert report["totals"]["roofline_seconds"]["value"] == max(256 / 1e11, 640 / 5e10)
    assert "not a measurement" in err and "no device table" in err


def test_latency_with_hardware_adds_utilization(capsys: pytest.CaptureFixture[str], facts: Path) -> None:
    argv = ["latency", *LINEAR, "--hardware", str(facts), "--min-run-time", "0.001", "--min-repeats", "2"]
    status, out, err = run(capsys, *argv, "--json", "-")
    assert status == 0, err
    report = json.loads(out)
    totals = report["totals"]
    assert report["context"]["hardware"] == FACTS
    assert totals["operator_flops"]["value"] == 256
    hfu = totals["hardware_flops_utilization"]
    assert hfu["status"] == "complete"
    assert hfu["value"] == 256 / totals["latency"]["value"] / 1e11
    assert "MFU" in err and "stated peak" in err


def test_latency_without_hardware_has_no_utilization(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["latency", *LINEAR, "--min-run-time", "0.001", "--min-repeats", "2", "--json", "-"]
    status, out, err = run(capsys, *argv)
    assert status == 0, err
    assert "hardware_flops_utilization" not in json.loads(out)["totals"]
    assert "MFU" not in err


# Bad --hardware files (each BAD_HARDWARE value, for scan and latency) are in the bad-input
# catalogue, tests/test_bad_inputs.py.


def test_missing_hardware_file_and_overwrite_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, facts: Path
) -> None:
    status, _, err = run(capsys, "scan", *LINEAR, "--hardware", str(tmp_path / "absent.json"))
    assert status == 2 and "cannot read --hardware" in err
    status, _, err = run(capsys, "scan", *LINEAR, "--hardware", str(facts), "--json", str(facts))
    assert status == 2 and "input" in err
    assert json.loads(facts.read_text()) == FACTS


def test_flops_train_counts_one_adamw_step(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "flops", *LINEAR, "--train", "--json", "-")
    assert status == 0, err
    report = json.loads(out)
    phases = report["by_phase"]
    # forward: addmm of one [1, 16] row, 2·1·16·8 = 256, and the loss sum of 8 outputs, 7 adds
    assert phases["forward"]["value"] == 256 + 7
    # backward: the weight gradient mm, 2·1·16·8; the bias gradient sums a batch of one (no add)
    # and the input needs no gradient
    assert phases["backward"]["value"] == 256
    assert phases["optimizer"]["known_value"] > 0  # AdamW's element-wise update of 136 parameters
    assert phases["recompute"] == {**phases["recompute"], "status": "complete", "value": 0}
    assert sum(phase["known_value"] for phase in phases.values()) == report["total"]["known_value"]
    assert "AdamW" in err and "by phase" in err


def test_flops_train_needs_trainable_parameters(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "flops", "torch.nn:ReLU", "--input-shape", "4", "--train")
    assert status == 2
    assert_one_line_error(err)
    assert "trainable parameters" in err
