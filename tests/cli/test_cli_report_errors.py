"""Bad input files and values are usage errors (status 2, one line, no traceback), cli.md."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from torchscan.cli import main, output

SKIP_MODEL = textwrap.dedent(
    """
    from torch import nn


    class AddSkip(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            return self.lin(x) + x


    skip = AddSkip()
    """
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def assert_usage_error(status: int, err: str) -> None:
    assert status == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("torchscan: error: ")
    assert "Traceback" not in err


@pytest.fixture(scope="module")
def saved_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("saved") / "r.json"
    assert main(["scan", "demo:cnn", "--mode", "structure", "--json", str(path)]) == 0
    report: dict[str, Any] = json.loads(path.read_text())
    return report


def both_commands(capsys: pytest.CaptureFixture[str], bad: Path, good: Path, tmp_path: Path) -> None:
    """``compare`` (either side) and ``render`` of ``bad`` all exit 2 with one line, writing nothing."""
    out = tmp_path / "out.html"
    for argv in (
        ["compare", str(bad), str(good)],
        ["compare", str(good), str(bad), "--json", str(tmp_path / "d.json")],
        ["render", str(bad), "--html", str(out)],
        ["render", str(good), "--svg", str(out), "--before", str(bad)],
    ):
        status, _, err = run(capsys, *argv)
        assert_usage_error(status, err)
    assert not out.exists() and not (tmp_path / "d.json").exists()


def test_deeply_nested_json_report(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, saved_report: dict[str, Any]
) -> None:
    bad = tmp_path / "deep.json"
    bad.write_text("[" * 100_000 + "]" * 100_000)  # json.loads raises RecursionError
    good = tmp_path / "good.json"
    good.write_text(json.dumps(saved_report))
    both_commands(capsys, bad, good, tmp_path)
    deep_object = tmp_path / "deep-object.json"
    deep_object.write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    both_commands(capsys, deep_object, good, tmp_path)


def test_integers_too_large_for_a_float(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, saved_report: dict[str, Any]
) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(saved_report))
    huge = json.loads(json.dumps(saved_report))
    for name in ("parameters", "parameter_bytes"):
        total = huge["totals"][name]
        total["value"] = total["known_value"] = 10**400  # float(10**400) raises OverflowError
    bad = tmp_path / "huge.json"
    bad.write_text(json.dumps(huge))
    both_commands(capsys, bad, good, tmp_path)
    digits = tmp_path / "digits.json"  # beyond Python's int digit limit: a ValueError in json.loads
    digits.write_text('{"schema_version": ' + "9" * 5000 + "}")
    both_commands(capsys, digits, good, tmp_path)


def test_invalid_utf8_report(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "latin1.json"
    bad.write_bytes(b'{"title": "caf\xe9"}')
    both_commands(capsys, bad, bad, tmp_path)
    status, _, err = run(capsys, "render", str(bad), "--html", str(tmp_path / "x.html"))
    assert status == 2
    assert "not UTF-8" in err


@pytest.mark.parametrize(
    "error",
    [RecursionError("maximum recursion depth exceeded"), OverflowError("int too large"), KeyError("x")],
)
def test_any_failure_while_handling_reports_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    saved_report: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    error: Exception,
) -> None:
    # compare/render run no model code: a report shape the validators let through must still
    # end as one line, whichever step (comparison, rendering) trips over it.
    good = tmp_path / "good.json"
    good.write_text(json.dumps(saved_report))

    def fail(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr("torchscan.compare_reports", fail)
    monkeypatch.setattr(output, "render", fail)
    status, _, err = run(capsys, "compare", str(good), str(good))
    assert_usage_error(status, err)
    status, _, err = run(capsys, "render", str(good), "--html", str(tmp_path / "x.html"))
    assert_usage_error(status, err)
    assert not (tmp_path / "x.html").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["scan", "demo:cnn", "--factory-kwargs", "[" * 100_000],  # RecursionError in json.loads
        ["scan", "demo:cnn", "--factory-kwargs", '{"n": ' + "9" * 5000 + "}"],  # int digit limit
        ["latency", "demo:cnn", "--work-units", "1" + "0" * 400],  # float() overflows
        ["scan", "demo:cnn", "--html", "x.html", "--title", "bad\udcff"],  # undecodable argv bytes
        ["render", "r.json", "--svg", "x.svg", "--metric", "\udcff"],
    ],
)
def test_bad_option_values_are_usage_errors(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    status, _, err = run(capsys, *argv)
    assert_usage_error(status, err)


def test_bad_metric_for_a_scan_rendering(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "x.html"
    status, _, err = run(
        capsys, "scan", "demo:cnn", "--mode", "structure", "--html", str(out), "--metric", "nope"
    )
    assert_usage_error(status, err)
    assert not out.exists()


# --- deterministic file targets ------------------------------------------------------------


def test_file_target_model_type_is_deterministic(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    reports = []
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir()
        source = tmp_path / folder / "my-models.py"
        source.write_text(SKIP_MODEL)
        out = tmp_path / folder / "r.json"
        status, _, err = run(capsys, "scan", f"{source}:skip", "--input-shape", "4", "--json", str(out))
        assert status == 0, err
        reports.append(out.read_text())
    # Named from the file's stem ("my-models" sanitised), not from a salted hash of its path: the
    # same file gives the same JSON in every run, and the path never enters the report.
    assert json.loads(reports[0])["context"]["model_type"] == "_torchscan_target_my_models.AddSkip"
    assert reports[0] == reports[1]
    assert str(tmp_path) not in reports[0]
