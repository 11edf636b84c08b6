"""Tables at the terminal's width (views-3.md 2): 80, 100, 120 and 200 columns, names before numbers.

Golden files (``tests/views/golden/demo_*_w*.txt``, regenerate with ``TORCHSCAN_UPDATE_GOLDEN=1``
and read the diff) hold the demo models at each width; BERT and ResNet, whose module names follow
the installed transformers/torchvision, are checked by rule instead: every line fits, every number
kept is the one the widest table prints, and every column left out is named in the footer.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from torchscan import crawl_module, summary
from torchscan.cli import main
from torchscan.demo import build_cnn, build_transformer
from torchscan.views.analysis import table_layout
from torchscan.views.analysis.table import format_table

GOLDEN = Path(__file__).parent / "golden"
WIDTHS = (80, 100, 120, 200)


def _stable(report: dict[str, Any]) -> dict[str, Any]:
    # The operator ledger only feeds the FlopCounterMode note, whose figures follow the torch version.
    return {key: value for key, value in json.loads(json.dumps(report)).items() if key != "operator_flops"}


@pytest.fixture(scope="module")
def demos() -> dict[str, dict[str, Any]]:
    built = {"cnn": build_cnn(), "transformer": build_transformer()}
    return {name: _stable(crawl_module(model, shape)) for name, (model, shape) in built.items()}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["cnn", "transformer"])
def test_demo_golden_tables(demos: dict[str, dict[str, Any]], name: str, width: int) -> None:
    text = format_table(demos[name], width=width, spelling="cli")
    path = GOLDEN / f"demo_{name}_w{width}.txt"
    if os.environ.get("TORCHSCAN_UPDATE_GOLDEN") == "1":
        path.write_text(text + "\n", encoding="utf-8")
    assert text + "\n" == path.read_text(encoding="utf-8")
    assert max(len(line) for line in text.splitlines()) <= width


def _columns(text: str) -> dict[str, list[str]]:
    """Header (two lines joined) -> the column's cells; columns split where every line has 2+ spaces."""
    lines = text.splitlines()
    body_end = lines.index(lines[3], 4)  # the closing "====" rule
    grid = [line.ljust(len(lines[0])) for line in lines[1:3] + lines[4:body_end]]
    blank = [all(line[i] == " " for line in grid) for i in range(len(lines[0]))]
    spans, start, i = [], 0, 0
    while i < len(blank):
        if blank[i] and i + 1 < len(blank) and blank[i + 1]:
            end = i
            while i < len(blank) and blank[i]:
                i += 1
            spans.append((start, end))
            start = i
        else:
            i += 1
    spans.append((start, len(blank)))
    table: dict[str, list[str]] = {}
    for start, end in spans[2:]:  # numbers only: Layer and Type are names
        name = " ".join(f"{grid[0][start:end]} {grid[1][start:end]}".split())
        table[name] = [line[start:end].strip() for line in grid[2:]]
    return table


def _check_width_rules(report: dict[str, Any]) -> None:
    wide = _columns(format_table(report, width=200))
    for width in WIDTHS:
        text = format_table(report, width=width)
        lines = text.splitlines()
        assert max(len(line) for line in lines) <= width, width
        assert not re.search(r"\d[eE][+-]?\d", text)
        narrow = _columns(text)
        for name, cells in narrow.items():
            if name != "Output Shape":  # shapes shorten; numbers never do
                assert cells == wide[name], (width, name)
        left_out = [name for name in wide if name not in narrow]
        footer = " ".join(" ".join(lines).split())
        if left_out:
            assert f"Columns left out at width {width}: " in footer
            for name in left_out:
                assert name in footer
        else:
            assert "Columns left out" not in footer


def test_bert_tables_at_every_width() -> None:
    transformers = pytest.importorskip("transformers", reason="needs transformers")
    config = transformers.BertConfig(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128, vocab_size=100
    )
    model = transformers.BertModel(config).eval()
    report = crawl_module(model, args=(torch.zeros(1, 8, dtype=torch.long),))
    _check_width_rules(report)
    # 80 columns keep the parameter and Module FLOPs columns; flags and shares go first
    text = format_table(report, width=80)
    assert "Columns left out at width 80: Trainable" in " ".join(text.split())
    assert set(_columns(text)) >= {"Params incl.", "Module FLOPs incl."}


def test_resnet_tables_at_every_width() -> None:
    models = pytest.importorskip("torchvision.models", reason="needs torchvision")
    report = crawl_module(models.resnet18(weights=None), (3, 64, 64))
    _check_width_rules(report)


def test_the_drop_order_applies_to_columns_asked_for() -> None:
    report = crawl_module(nn.Sequential(nn.Linear(4, 4), nn.ReLU()), (4,))
    asked = ["params", "params_self", "trainable", "module_flops", "module_flops_self", "macs", "dmas"]
    text = format_table(report, col_names=asked, width=60)
    footer = " ".join(text.split())
    assert max(len(line) for line in text.splitlines()) <= 60
    # Trainable, then the "own" twins, then extra cost columns from the right; Params stays.
    assert "Columns left out at width 60: Trainable, Params own, Module FLOPs own" in footer
    assert list(_columns(text)) == ["Params incl.", "Module FLOPs incl.", "MACs incl.", "DMAs incl."]


# --- where the width comes from -------------------------------------------------------------------


def _no_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any) -> os.terminal_size:
        raise OSError("not a terminal")

    monkeypatch.setattr(os, "get_terminal_size", refuse)


def test_the_width_is_the_terminal_s_then_120(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_terminal(monkeypatch)
    monkeypatch.delenv("COLUMNS", raising=False)
    assert table_layout.terminal_width() == 120
    monkeypatch.setenv("COLUMNS", "87")
    assert table_layout.terminal_width() == 87
    monkeypatch.setenv("COLUMNS", "20")  # a tiny terminal gets the narrowest table, not an error
    assert table_layout.terminal_width() == 40


def _printed(**options: Any) -> list[str]:
    model, shape = build_transformer()
    with contextlib.redirect_stdout(io.StringIO()) as out:
        summary(model, shape, **options)
    return out.getvalue().splitlines()


def test_summary_follows_columns_and_width_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_terminal(monkeypatch)
    monkeypatch.setenv("COLUMNS", "80")
    assert max(len(line) for line in _printed()) == 80
    assert max(len(line) for line in _printed(width=100)) <= 100
    monkeypatch.delenv("COLUMNS")
    assert max(len(line) for line in _printed()) == 120  # not a terminal: 120, as the table is wider


class Explodes(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise AssertionError("the model must not run when an option is bad")


@pytest.mark.parametrize("width", [39, 0, -5, True, 80.0, "80"])
def test_a_bad_width_is_refused_before_the_model_runs(width: Any) -> None:
    with pytest.raises(ValueError, match=r"width must be an integer >= 40"):
        summary(Explodes(), (4,), width=width)


def test_cli_width(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["scan", "demo:transformer", "--width", "80"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "(--width 120 shows every column)" in " ".join(out.split())
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["scan", "demo:cnn"]) == 0
    assert max(len(line) for line in capsys.readouterr().out.splitlines()) <= 100
    status = main(["scan", "demo:cnn", "--width", "39"])
    err = capsys.readouterr().err
    assert status == 2
    assert [line for line in err.splitlines() if line.strip()] == [
        "torchscan: error: argument --width: '39': must be an integer >= 40 (characters per line) "
        "(see 'torchscan scan --help')"
    ]
