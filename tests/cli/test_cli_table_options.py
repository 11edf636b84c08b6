"""``scan``'s view options (cli.md): ``--metric`` help and early checks, ``--columns``, ``--no-fold``."""

from __future__ import annotations

from pathlib import Path

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


REPEATED = "from torch import nn\nnet = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4))\n"


@pytest.fixture
def repeated(tmp_path: Path) -> str:
    path = tmp_path / "repeated.py"
    path.write_text(REPEATED)
    return f"{path}:net"


def _rows(out: str) -> list[list[str]]:
    """The table's body rows (between the two ``===`` rules), split on runs of two spaces."""
    lines = out.splitlines()
    rules = [i for i, line in enumerate(lines) if line.startswith("=")]
    cut = lines[1].index("Type")  # the Layer cell keeps its tree glyphs
    return [
        [line[:cut].strip()] + [cell.strip() for cell in line[cut:].split("  ") if cell.strip()]
        for line in lines[rules[0] + 1 : rules[1]]
    ]


def test_columns_pick_the_table_columns_in_order(capsys: pytest.CaptureFixture[str], repeated: str) -> None:
    status, out, err = run(capsys, "scan", repeated, "--input-shape", "4", "--columns", "macs, params")
    assert status == 0, err
    assert out.splitlines()[1].split() == ["Layer", "Type", "MACs", "Params"]
    assert out.splitlines()[2].split() == ["incl.", "incl."]
    # Linear(4, 4) on one row of 4: 4*4 = 16 MACs and 4*4 + 4 = 20 parameters. The root includes
    # its three calls (48 MACs, 60 parameters); the three identical calls fold into one (×3) row
    # that shows one of them (issue 23: no longer their sums).
    assert _rows(out) == [["Sequential", "Sequential", "48", "60"], ["└─ (×3) 0 … 2", "Linear", "16", "20"]]
    # the footer speaks the command line's spelling, not the Python API's
    assert "(--no-fold lists them)" in out and "fold=False" not in out


def test_no_fold_lists_identical_blocks_one_by_one(capsys: pytest.CaptureFixture[str], repeated: str) -> None:
    status, out, err = run(
        capsys, "scan", repeated, "--input-shape", "4", "--columns", "params,macs", "--no-fold"
    )
    assert status == 0, err
    assert _rows(out) == [
        ["Sequential", "Sequential", "60", "48"],
        ["├─ 0", "Linear", "20", "16"],
        ["├─ 1", "Linear", "20", "16"],
        ["└─ 2", "Linear", "20", "16"],
    ]
    assert "Rows: all 4 layer calls shown." in out


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("params,flops", "argument --columns: unknown column 'flops'; choose from output_shape, params"),
        ("params,,macs", "argument --columns: give comma-separated column names"),
        ("params,params", "argument --columns: a column is named twice"),
        ("", "argument --columns: give comma-separated column names"),
    ],
)
def test_bad_columns_are_refused_before_the_target_is_loaded(
    capsys: pytest.CaptureFixture[str], value: str, message: str
) -> None:
    status, _, err = run(capsys, "scan", "no_such_package_xyz:model", "--columns", value)
    assert_usage_error(status, err)
    assert message in err
    assert "no_such_package_xyz" not in err
