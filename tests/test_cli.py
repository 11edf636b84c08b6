"""The ``torchscan`` command line (cli.md): commands, targets, exit statuses, safe output files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from torchscan.cli import BENCHMARK_REFUSAL, main

ON_POSIX = sys.platform in {"linux", "darwin"} and hasattr(os, "wait4")

MODELS = textwrap.dedent(
    """
    import torch
    from torch import nn


    class AddSkip(nn.Module):
        '''An operator without a functional formula (logcumsumexp) in its own forward: module FLOPs
        partial (real-models.md 1; the residual add alone has a formula, and sort is now ignored as a
        selection).'''

        def __init__(self, width=4):
            super().__init__()
            self.lin = nn.Linear(width, width)

        def forward(self, x):
            return torch.logcumsumexp(self.lin(x) + x, dim=-1)


    class Boom(nn.Module):
        def forward(self, x):
            raise KeyError("boom")


    class TwoInputs(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 2)
            self.emb = nn.Embedding(10, 2)

        def forward(self, x, ids):
            return self.lin(x), self.emb(ids)


    def failing_factory():
        raise RuntimeError("factory failed")


    def make_conv(out_channels=8):
        return nn.Conv2d(3, out_channels, 3)


    def not_a_model():
        return 42


    conv = nn.Conv2d(3, 8, 3)
    skip = AddSkip()
    two = TwoInputs()
    boom = Boom()
    number = 7
    """
)


@pytest.fixture
def models(tmp_path: Path) -> Path:
    path = tmp_path / "models.py"
    path.write_text(MODELS)
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def assert_one_line_error(err: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("torchscan: error: ")
    assert "Traceback" not in err


def write_json(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value))
    return path


# --- usage errors (status 2, one line, no traceback) --------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["scan", "demo:cnn", "--no-such-option"],
        ["--no-such-option"],
        ["frobnicate"],
        ["scan"],
        ["scan", "nope:thing"],
        ["scan", "nothing-to-split"],
        ["scan", "demo:resnet"],
        ["scan", "torch.nn:NoSuchLayer", "--input-shape", "4"],
        ["scan", "torch.nn:Linear"],  # no --input-shape for a non-demo target
        ["scan", "demo:cnn", "--input-shape", "3,x,32"],
        ["scan", "demo:cnn", "--input-shape", "3,-1"],
        ["scan", "demo:cnn", "--dtype", "float99"],
        ["scan", "demo:cnn", "--dtype", "float32", "--dtype", "float32"],
        ["scan", "demo:cnn", "--device", "warp-drive"],
        ["scan", "demo:cnn", "--factory-kwargs", "{bad json"],
        ["scan", "demo:cnn", "--factory-kwargs", "[1, 2]"],
        ["scan", "demo:cnn", "--factory-kwargs", '{"x": 1}'],  # an instance is not a factory
        ["scan", "demo:cnn", "--mode", "fast"],
        ["scan", "demo:cnn", "--max-depth", "-1"],
        ["latency", "demo:cnn", "--min-repeats", "1"],
        ["latency", "demo:cnn", "--work-units", "0"],
        ["latency", "demo:cnn", "--work-unit", " "],
        ["latency", "demo:cnn", "--device", "meta"],
        ["render", "x.json"],  # needs --html or --svg
        ["rss"],
        ["rss", "--"],
    ],
)
def test_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    status, _, err = run(capsys, *argv)
    assert status == 2
    assert_one_line_error(err)


def test_unavailable_cuda_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    for command in ("scan", "flops", "latency"):
        status, _, err = run(capsys, command, "demo:cnn", "--device", "cuda:0")
        assert status == 2
        assert_one_line_error(err)
        assert "CUDA is not available" in err


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys)
    assert status == 2
    assert "torchscan demo" in err


def test_help_and_version_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    import torchscan

    assert run(capsys, "--help")[0] == 0
    status, out, _ = run(capsys, "--version")
    assert status == 0
    assert torchscan.__version__ in out


def test_unloadable_file_targets(capsys: pytest.CaptureFixture[str], models: Path, tmp_path: Path) -> None:
    status, _, err = run(capsys, "scan", f"{tmp_path / 'missing.py'}:model", "--input-shape", "3")
    assert status == 2
    assert_one_line_error(err)
    broken = tmp_path / "broken.py"
    broken.write_text("raise ImportError('needs a package you lack')\n")
    status, _, err = run(capsys, "scan", f"{broken}:model", "--input-shape", "3")
    assert status == 2
    assert_one_line_error(err)
    assert "needs a package you lack" in err
    for attr in ("number", "not_a_model", "nothing_here"):
        status, _, err = run(capsys, "scan", f"{models}:{attr}", "--input-shape", "3,8,8")
        assert status == 2, attr
        assert_one_line_error(err)


def test_missing_and_invalid_report_files(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    nan = tmp_path / "nan.json"
    nan.write_text('{"schema_version": NaN}')
    listing = write_json(tmp_path / "list.json", [1, 2])
    unknown = write_json(tmp_path / "v9.json", {"schema_version": 9})
    missing = tmp_path / "missing.json"
    for before, after in ((missing, missing), (bad, bad), (nan, nan), (listing, listing), (unknown, unknown)):
        status, _, err = run(capsys, "compare", str(before), str(after))
        assert status == 2, before
        assert_one_line_error(err)
        status, _, err = run(capsys, "render", str(before), "--html", str(tmp_path / "out.html"))
        assert status == 2, before
        assert_one_line_error(err)
    assert not (tmp_path / "out.html").exists()


# --- demo -----------------------------------------------------------------------------------


def test_demo_writes_json_and_html(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_dir = tmp_path / "demo-out"
    status, out, err = run(capsys, "demo", "--out", str(out_dir))
    assert status == 0, err
    for name in ("cnn", "transformer"):
        report = json.loads((out_dir / f"{name}.json").read_text())
        assert report["schema_version"] == 1
        assert report["layers"]
        html = (out_dir / f"{name}.html").read_text()
        assert html.lstrip().lower().startswith("<!doctype html")
    assert "demo:cnn" in out and "demo:transformer" in out
    assert not [p for p in out_dir.iterdir() if p.name.startswith(".")]  # no temporary files left


def test_python_dash_m_demo(tmp_path: Path) -> None:
    out_dir = tmp_path / "d"
    done = subprocess.run(
        [sys.executable, "-m", "torchscan", "demo", "--out", str(out_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out_dir.iterdir()) == [
        "cnn.html",
        "cnn.json",
        "transformer.html",
        "transformer.json",
    ]


def test_demo_out_must_be_a_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("keep")
    status, _, err = run(capsys, "demo", "--out", str(file))
    assert status == 2
    assert_one_line_error(err)
    assert file.read_text() == "keep"


# --- scan -----------------------------------------------------------------------------------


def test_scan_json_to_stdout_table_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "scan", "demo:cnn", "--json", "-")
    assert status == 0, err
    report = json.loads(out)
    assert report["schema_version"] == 1
    assert report["inputs"]["args"][0]["shape"] == [1, 3, 32, 32]
    assert "Conv2d" in err  # the summary table


def test_scan_prints_table_and_saves_renderings(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    paths = {kind: tmp_path / f"r.{kind}" for kind in ("json", "html", "svg")}
    status, out, err = run(
        capsys,
        "scan",
        "demo:transformer",
        "--json",
        str(paths["json"]),
        "--html",
        str(paths["html"]),
        "--svg",
        str(paths["svg"]),
        "--max-depth",
        "1",
    )
    assert status == 0, err
    assert "TransformerEncoder" in out
    assert json.loads(paths["json"].read_text())["layers"]
    assert "<html" in paths["html"].read_text().lower()
    assert "<svg" in paths["svg"].read_text()


def test_scan_structure_mode(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    status, _, err = run(capsys, "scan", "demo:cnn", "--mode", "structure", "--strict", "--json", str(path))
    assert status == 0, err
    report = json.loads(path.read_text())
    assert report["totals"]["module_flops"]["method"] == "not_requested"


def test_scan_file_target_factory_and_kwargs(
    capsys: pytest.CaptureFixture[str], models: Path, tmp_path: Path
) -> None:
    path = tmp_path / "conv.json"
    status, _, err = run(
        capsys,
        "scan",
        f"{models}:make_conv",
        "--factory-kwargs",
        '{"out_channels": 12}',
        "--input-shape",
        "3,32,32",
        "--json",
        str(path),
    )
    assert status == 0, err
    report = json.loads(path.read_text())
    assert report["totals"]["parameters"]["value"] == 12 * 3 * 9 + 12
    status, _, err = run(capsys, "scan", f"{models}:conv", "--input-shape", "3,32,32", "--json", str(path))
    assert status == 0, err
    report = json.loads(path.read_text())
    assert report["totals"]["module_flops"] == {
        "status": "complete",
        "value": 388_800,
        "known_value": 388_800,
        "unit": "FLOPs",
        "scope": "forward",
        "method": "torchscan_module_formula",
    }


def test_scan_package_module_target(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(
        capsys,
        "scan",
        "torch.nn:Linear",
        "--factory-kwargs",
        '{"in_features": 4, "out_features": 2}',
        "--input-shape",
        "4",
    )
    assert status == 0, err
    assert "Linear" in out


def test_strict_incomplete_exits_3_and_writes_json(
    capsys: pytest.CaptureFixture[str], models: Path, tmp_path: Path
) -> None:
    path = tmp_path / "skip.json"
    status, _, err = run(
        capsys, "scan", f"{models}:skip", "--input-shape", "4", "--strict", "--json", str(path)
    )
    assert status == 3
    assert "module_flops" in err
    report = json.loads(path.read_text())
    assert report["totals"]["module_flops"]["status"] == "partial"
    # without --strict the same partial analysis is a success
    status, _, _ = run(capsys, "scan", f"{models}:skip", "--input-shape", "4")
    assert status == 0


def test_model_error_exits_2_in_one_line_and_traceback_on_request(
    capsys: pytest.CaptureFixture[str], models: Path
) -> None:
    # Issue 23 item 6 (was: exit 1 with the traceback): the model's error is one line, status 2.
    status, _, err = run(capsys, "scan", f"{models}:boom", "--input-shape", "4")
    assert status == 2
    assert err.count("\n") == 1 and err.startswith("torchscan: error: ")
    assert "KeyError: 'boom'" in err and "Traceback" not in err and "--traceback shows where" in err
    status, _, err = run(capsys, "scan", f"{models}:boom", "--input-shape", "4", "--traceback")
    assert status == 2
    assert "Traceback" in err and err.splitlines()[-1].startswith("torchscan: error: ")


def test_factory_error_exits_2(capsys: pytest.CaptureFixture[str], models: Path) -> None:
    status, _, err = run(capsys, "scan", f"{models}:failing_factory", "--input-shape", "4")
    assert status == 2  # issue 23 item 6 (was: exit 1 with the traceback)
    assert err.count("\n") == 1 and "RuntimeError: factory failed" in err


def test_several_inputs_with_dtypes(capsys: pytest.CaptureFixture[str], models: Path) -> None:
    argv = ["scan", f"{models}:two", "--input-shape", "4", "--input-shape", "3", "--json", "-"]
    status, out, err = run(capsys, *argv, "--dtype", "float32", "--dtype", "int64")
    assert status == 0, err
    args = json.loads(out)["inputs"]["args"]
    assert [(a["shape"], a["dtype"]) for a in args] == [([1, 4], "torch.float32"), ([1, 3], "torch.int64")]
    status, out, err = run(
        capsys,
        "flops",
        f"{models}:two",
        "--input-shape",
        "4",
        "--input-shape",
        "3",
        "--dtype",
        "float32",
        "--dtype",
        "int64",
        "--train",
        "--json",
        "-",
    )
    assert status == 0, err
    assert json.loads(out)["by_operator"]


def test_output_equal_to_input_is_refused(
    capsys: pytest.CaptureFixture[str], models: Path, tmp_path: Path
) -> None:
    original = models.read_text()
    for option in ("--json", "--html", "--svg"):
        status, _, err = run(capsys, "scan", f"{models}:conv", "--input-shape", "3,8,8", option, str(models))
        assert status == 2
        assert_one_line_error(err)
        assert "input" in err
    assert models.read_text() == original
    report = tmp_path / "r.json"
    assert run(capsys, "scan", "demo:cnn", "--json", str(report))[0] == 0
    saved = report.read_text()
    for argv in (
        ["compare", str(report), str(report), "--json", str(report)],
        ["compare", str(report), str(report), "--html", str(report)],
        ["render", str(report), "--html", str(report)],
        ["render", str(tmp_path / ".." / tmp_path.name / "r.json"), "--svg", str(report)],
    ):
        status, _, err = run(capsys, *argv)
        assert status == 2, argv
        assert_one_line_error(err)
    assert report.read_text() == saved


def test_output_paths_checked_before_running(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, _, err = run(capsys, "scan", "demo:cnn", "--json", str(tmp_path / "no" / "such" / "dir.json"))
    assert status == 2
    assert_one_line_error(err)
    status, _, err = run(capsys, "scan", "demo:cnn", "--json", str(tmp_path))
    assert status == 2
    same = str(tmp_path / "same")
    status, _, err = run(capsys, "scan", "demo:cnn", "--json", same, "--html", same)
    assert status == 2
    assert_one_line_error(err)


def test_atomic_write_replaces_existing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text("old")
    path.chmod(0o640)
    assert run(capsys, "scan", "demo:cnn", "--json", str(path))[0] == 0
    assert json.loads(path.read_text())["schema_version"] == 1
    assert path.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


# --- flops ----------------------------------------------------------------------------------


def test_flops_prints_operators_and_status(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    status, out, err = run(capsys, "flops", "demo:cnn", "--json", str(path))
    assert status == 0, err
    assert "aten.convolution" in out
    assert "status: complete" in out.splitlines()[-1]
    report = json.loads(path.read_text())
    assert report["total"]["status"] == "complete"
    assert f"{report['total']['value']:,}" in out


def test_flops_train_counts_backward(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "flops", "demo:cnn", "--train", "--json", "-")
    assert status == 0, err
    report = json.loads(out)
    assert any("backward" in op for op in report["by_operator"])
    assert "status:" in err


# --- compare / render -----------------------------------------------------------------------


@pytest.fixture
def two_reports(capsys: pytest.CaptureFixture[str], models: Path, tmp_path: Path) -> tuple[Path, Path]:
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    assert run(capsys, "scan", f"{models}:conv", "--input-shape", "3,16,16", "--json", str(before))[0] == 0
    assert run(capsys, "scan", f"{models}:skip", "--input-shape", "4", "--json", str(after))[0] == 0
    return before, after


def test_compare_prints_delta_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    conv8, conv12 = tmp_path / "c8.json", tmp_path / "c12.json"
    for path, width in ((conv8, 8), (conv12, 12)):
        argv = ["scan", "torch.nn:Conv2d", "--input-shape", "3,32,32", "--json", str(path)]
        kwargs = json.dumps({"in_channels": 3, "out_channels": width, "kernel_size": 3})
        assert run(capsys, *argv, "--factory-kwargs", kwargs)[0] == 0
    diff_path = tmp_path / "diff.json"
    status, out, err = run(capsys, "compare", str(conv8), str(conv12), "--json", str(diff_path))
    assert status == 0, err
    row = next(line for line in out.splitlines() if line.startswith("parameters "))
    assert row.split()[-1] == "+112"  # analysis.md 10.2
    assert json.loads(diff_path.read_text())["totals"]["parameters"]["delta"] == 112


def test_compare_shows_unknown_for_partial(
    capsys: pytest.CaptureFixture[str], two_reports: tuple[Path, Path], tmp_path: Path
) -> None:
    before, after = two_reports
    html = tmp_path / "cmp.html"
    status, out, err = run(capsys, "compare", str(before), str(after), "--html", str(html))
    assert status == 0, err
    row = next(line for line in out.splitlines() if line.startswith("module_flops "))
    assert "unknown (partial)" in row
    assert "≥" in row
    assert "<html" in html.read_text().lower()


def test_compare_refuses_benchmark_reports(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bench = {"schema_version": 1, "context": {}, "inputs": {"kind": "none"}, "totals": {}, "measurement": {}}
    a = write_json(tmp_path / "a.json", bench)
    b = write_json(tmp_path / "b.json", bench)
    status, _, err = run(capsys, "compare", str(a), str(b))
    assert status == 2
    assert_one_line_error(err)
    assert BENCHMARK_REFUSAL in err
    assert "compare_benchmarks" in err and "output check" in err


def test_render_html_and_svg(
    capsys: pytest.CaptureFixture[str], two_reports: tuple[Path, Path], tmp_path: Path
) -> None:
    before, after = two_reports
    svg = tmp_path / "r.svg"
    status, _, err = run(capsys, "render", str(after), "--svg", str(svg), "--metric", "macs")
    assert status == 0, err
    assert "<svg" in svg.read_text()
    html = tmp_path / "r.html"
    status, _, err = run(capsys, "render", str(after), "--html", str(html), "--before", str(before))
    assert status == 0, err
    assert "<html" in html.read_text().lower()
    # Issue 15 made operator_flops a view; an unknown view name is still a one-line usage error.
    status, _, err = run(capsys, "render", str(after), "--svg", str(svg), "--metric", "operator_flops")
    assert status == 0, err
    status, _, err = run(capsys, "render", str(after), "--svg", str(svg), "--metric", "operator_flops_self")
    assert status == 2
    assert_one_line_error(err)


# --- latency --------------------------------------------------------------------------------


def test_latency_prints_statistics_and_saves_report(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "lat.json"
    argv = ["latency", "demo:cnn", "--min-run-time", "0.01", "--warmup", "1", "--min-repeats", "2"]
    status, out, err = run(capsys, *argv, "--work-units", "4", "--work-unit", "images", "--json", str(path))
    assert status == 0, err
    for word in ("first call", "median", "IQR", "throughput", "images/s", "not a request percentile"):
        assert word in out
    report = json.loads(path.read_text())
    assert report["context"]["work_units"] == 4
    assert report["totals"]["throughput"]["unit"] == "images/s"
    assert "timing" not in err  # no progress ticker when stderr is not a terminal


# --- rss ------------------------------------------------------------------------------------


@pytest.mark.skipif(not ON_POSIX, reason="measure_peak_rss needs Linux or macOS")
def test_rss_prints_mib_and_metric_result(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "rss", "--", sys.executable, "-c", "pass")
    assert status == 0, err
    assert "MiB" in out.splitlines()[0]
    result = json.loads(out[out.index("{") :])
    assert result["status"] == "complete"
    assert result["unit"] == "bytes"
    assert result["scope"] == "child_process_lifetime"


@pytest.mark.skipif(not ON_POSIX, reason="measure_peak_rss needs Linux or macOS")
def test_rss_failing_and_missing_commands(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "rss", "--", sys.executable, "-c", "raise SystemExit(3)")
    assert status == 1
    assert "status 3" in err
    status, _, err = run(capsys, "rss", "--", "/no/such/program-torchscan")
    assert status == 2
    assert_one_line_error(err)


def test_latency_progress_only_on_a_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    argv = ["latency", "demo:cnn", "--min-run-time", "0.01", "--warmup", "0", "--min-repeats", "2"]
    status, out, err = run(capsys, *argv, "--json", "-")
    assert status == 0, err
    assert "timing demo:cnn" in err
    assert json.loads(out)["schema_version"] == 1


# --- cheap start ----------------------------------------------------------------------------


def test_importing_the_cli_does_not_import_torch() -> None:
    code = "import sys, torchscan.cli, torchscan.cli.parser; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
