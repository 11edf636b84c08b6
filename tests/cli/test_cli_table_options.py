"""``scan``'s view options (cli.md): ``--metric`` help and early checks, ``--columns``, ``--no-fold``."""

from __future__ import annotations

import pytest

from torchscan.cli import main


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


@pytest.mark.parametrize("command", ["scan", "render", "compare"])
def test_metric_help_lists_every_view_and_the_real_default(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    status, out, _ = run(capsys, command, "--help")
    assert status == 0
    text = " ".join(out.split())  # argparse wraps help text at the terminal width
    # render.md: operator_flops is a view since issue 15, and metric=None opens the most complete
    # view in HTML; "module_flops (default)" is only the SVG snapshot's default.
    for view in ("module_flops", "operator_flops", "macs", "dmas", "parameters", "parameter_bytes"):
        assert view in text
    assert "module_flops (default)" not in text
    assert "the most complete view in HTML, module_flops in SVG" in text


def test_bad_metric_is_refused_before_the_target_is_even_loaded(capsys: pytest.CaptureFixture[str]) -> None:
    # The target module does not exist: had the model been built (or the target resolved) first,
    # the error would name the target instead of --metric.
    argv = ["scan", "no_such_package_xyz:model", "--html", "x.html", "--metric", "flops"]
    status, _, err = run(capsys, *argv)
    assert_usage_error(status, err)
    assert "argument --metric: unknown view 'flops'; choose from module_flops, operator_flops" in err
    assert "no_such_package_xyz" not in err


@pytest.mark.parametrize("command", [["render", "r.json", "--svg", "x.svg"], ["compare", "a.json", "b.json"]])
def test_bad_metric_is_refused_before_any_report_is_read(
    capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    status, _, err = run(capsys, *command, "--metric", "operator_flops_self")
    assert_usage_error(status, err)
    assert "--metric" in err and "operator_flops_self" in err
    assert "r.json" not in err and "a.json" not in err  # the (missing) files were never opened
