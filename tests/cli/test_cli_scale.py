"""``torchscan scale`` (attention-and-scaling.md 2, cli.md): fits on the terminal, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_cli import assert_one_line_error, run
from torchscan.report.validate import validate_report

MODEL = """
import torch
from torch import nn


class Mixer(nn.Module):
    '''Token embedding, then every position attends to every other: scores are n x n.'''

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 8)

    def forward(self, ids):
        x = self.embed(ids)
        return (x @ x.transpose(-2, -1)).softmax(-1) @ x


def build():
    return Mixer()


def refuse():
    raise RuntimeError("the model must not be built")
"""


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "mixer.py"
    path.write_text(MODEL)
    return path


def test_scale_a_file_target_over_seq(capsys, model_file: Path, tmp_path: Path) -> None:
    saved, page, drawing = tmp_path / "s.json", tmp_path / "s.html", tmp_path / "s.svg"
    status, out, err = run(
        capsys,
        "scale",
        f"{model_file}:build",
        "--input-shape",
        "seq",
        "--dtype",
        "int64",
        "--seq",
        "4,8,16,32",
        "--json",
        str(saved),
        "--html",
        str(page),
        "--svg",
        str(drawing),
    )
    assert status == 0, err
    report = json.loads(saved.read_text())
    assert validate_report(report) == "scaling"
    fit = report["fits"]["flops"]["seq"]
    # x @ xᵀ and weights @ x: 2 · n · n · 8 each = 32·n²; softmax 5N − 2R = 5·n² − 2·n
    assert fit["coefficients"] == [0, -2, 37] and fit["degree"] == 2
    assert "flops along seq: complete · exact degree 2: 37·seq² - 2·seq · exponent" in out
    assert page.read_text().startswith("<!doctype html>") and "TorchScan scaling" in page.read_text()
    assert drawing.read_text().startswith("<svg")


def test_scale_demo_cnn_over_sides_and_batches(capsys, tmp_path: Path) -> None:
    status, out, err = run(
        capsys,
        "scale",
        "demo:cnn",
        "--side",
        "8,16,32,64",
        "--batch",
        "1,2,3",
        "--metrics",
        "flops",
        "--json",
        "-",
    )
    assert status == 0, err
    report = json.loads(out)
    assert [p["sizes"] for p in report["points"][:2]] == [{"side": 8, "batch": 1}, {"side": 8, "batch": 2}]
    # padding-1 convolutions keep the side, global pooling ends it: FLOPs are a·side² + b per image
    assert report["fits"]["flops"]["side"]["degree"] == 2
    # per image, plus a constant: eval batch norm folds its running statistics once per channel
    assert report["fits"]["flops"]["batch"]["degree"] == 1
    assert "scaling of demo:cnn" in err  # the summary moved to stderr: stdout holds the JSON alone


def test_scale_demo_transformer_uses_its_token_axis(capsys) -> None:
    status, out, err = run(capsys, "scale", "demo:transformer", "--seq", "4,8,16,32")
    assert status == 0, err
    assert "flops along seq: complete · exact degree 2" in out


def test_scale_transformers_model_takes_token_ids_by_default(capsys, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    path = tmp_path / "tiny_gpt2.py"
    path.write_text(
        "from transformers import GPT2Config, GPT2LMHeadModel\n"
        "def build():\n"
        "    return GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=100))\n"
    )
    status, out, err = run(capsys, "scale", f"{path}:build", "--seq", "8,16,32,64", "--json", "-")
    assert status == 0, err
    fit = json.loads(out)["fits"]["flops"]["seq"]
    assert fit["degree"] == 2 and fit["status"] != "unavailable"  # fused SDPA may count partially (2.15)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["demo:cnn"], "give at least one axis"),
        (["demo:cnn", "--side", "32,16"], "--side must be strictly increasing: 16 at position 1 follows 32"),
        (["demo:cnn", "--side", "0,16"], "--side[0] must be an int > 0"),
        (["demo:cnn", "--side", "16"], "at least 2"),
        (["demo:cnn", "--side", "8,x"], "invalid --side '8,x'"),
        (["demo:cnn", "--seq", "8,16"], "--seq is given but no input dimension is seq"),
        (["demo:cnn", "--side", "8,16", "--metrics", "watts"], "unknown names 'watts'"),
        (["demo:cnn", "--side", "8,16", "--device", "meta", "--metrics", "latency"], "cannot time latency"),
        (["demo:cnn", "--side", "8,16", "--device", "warp"], "invalid --device"),
        (["demo:cnn", "--side", "8,16", "--input-shape", "3,seq,seq"], "names seq, but --seq is not given"),
        (["demo:cnn", "--side", "8,16", "--input-shape", "3,big,8"], "invalid --input-shape"),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, argv, words) -> None:
    status, _out, err = run(capsys, "scale", *argv)
    assert status == 2
    assert_one_line_error(err)
    assert words in err


def test_bad_sizes_are_refused_before_the_model_is_built(capsys, model_file: Path) -> None:
    status, _out, err = run(capsys, "scale", f"{model_file}:refuse", "--seq", "8,4")
    assert status == 2 and "strictly increasing" in err and "must not be built" not in err
    status, _out, err = run(capsys, "scale", f"{model_file}:build", "--seq", "8,16")
    assert status == 2 and "--input-shape is required" in err
    assert_one_line_error(err)


def test_saved_scaling_reports_render_but_do_not_compare(capsys, tmp_path: Path) -> None:
    saved = tmp_path / "s.json"
    status, _out, err = run(capsys, "scale", "demo:cnn", "--side", "8,16,32", "--json", str(saved))
    assert status == 0, err
    page = tmp_path / "again.html"
    status, _out, err = run(capsys, "render", str(saved), "--html", str(page))
    assert status == 0, err and page.read_text().startswith("<!doctype html>")
    status, _out, err = run(capsys, "compare", str(saved), str(saved))
    assert status == 2 and "scaling reports cannot be compared" in err
