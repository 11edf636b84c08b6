"""``torchscan generate`` (generation.md 3, cli.md): one row per step, usage errors as one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_cli import assert_one_line_error, run

pytest.importorskip("transformers")

FACTS = {"name": "example", "peak_flops_per_second": 1e12, "memory_bandwidth_bytes_per_second": 1e11}
MODEL = """
import torch
from transformers import GPT2Config, GPT2LMHeadModel
from transformers.utils import logging

logging.set_verbosity_error()


def build():
    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=1000, bos_token_id=0, eos_token_id=0)
    return GPT2LMHeadModel(config)


def refuse():
    raise RuntimeError("the model must not be built")
"""


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny_gpt2.py"
    path.write_text(MODEL)
    return path


def test_generate_prints_one_row_per_step(capsys, model_file: Path, tmp_path: Path) -> None:
    hardware = tmp_path / "hw.json"
    hardware.write_text(json.dumps(FACTS))
    saved, page = tmp_path / "gen.json", tmp_path / "gen.html"
    status, out, err = run(
        capsys,
        "generate",
        f"{model_file}:build",
        "--prompt-tokens",
        "16",
        "--new-tokens",
        "8",
        "--hardware",
        str(hardware),
        "--json",
        str(saved),
        "--html",
        str(page),
    )
    assert status == 0, err
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["step", "phase"])
    assert lines[header].split() == ["step", "phase", "context", "FLOPs", "bytes", "KV", "bytes", "bound"]
    rows = [line.split() for line in lines[header + 1 : header + 9]]
    assert [row[1] for row in rows] == ["prefill"] + ["decode"] * 7
    assert [row[2] for row in rows] == [str(n) for n in range(16, 24)]
    assert [row[-1] for row in rows[1:]] == ["memory"] * 7
    report = json.loads(saved.read_text())
    assert report["report_type"] == "generation" and len(report["steps"]) == 8
    assert report["context"]["hardware"] == FACTS
    assert "<svg" in page.read_text()


def test_json_to_stdout_stays_parseable(capsys, model_file: Path) -> None:
    status, out, err = run(
        capsys,
        "generate",
        f"{model_file}:build",
        "--prompt-tokens",
        "4",
        "--new-tokens",
        "2",
        "--timing",
        "--json",
        "-",
    )
    assert status == 0, err
    report = json.loads(out)
    assert [s["context_tokens"] for s in report["steps"]] == [4, 5]
    assert len(report["timing"]["decode_step_seconds"]) == 1
    assert "prefill" in err and "timing (a separate run)" in err  # the table moved to stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["--prompt-tokens", "0", "--new-tokens", "8"],
        ["--prompt-tokens", "16"],
        ["--prompt-tokens", "16", "--new-tokens", "x"],
        ["--prompt-tokens", "16", "--new-tokens", "8", "--hardware", "missing.json"],
    ],
)
def test_usage_errors_are_one_line_before_the_model_is_built(capsys, model_file: Path, argv) -> None:
    status, _out, err = run(capsys, "generate", f"{model_file}:refuse", *argv)
    assert status == 2
    assert_one_line_error(err)


def test_a_target_without_generate_is_a_usage_error(capsys) -> None:
    status, _out, err = run(
        capsys,
        "generate",
        "torch.nn:Linear",
        "--factory-kwargs",
        '{"in_features": 2, "out_features": 2}',
        "--prompt-tokens",
        "4",
        "--new-tokens",
        "2",
    )
    assert status == 2
    assert_one_line_error(err)
    assert "generate" in err


def test_compare_refuses_generation_reports(capsys, tmp_path: Path) -> None:
    from tests.report.generation_reports import generation_report

    saved = tmp_path / "gen.json"
    saved.write_text(json.dumps(generation_report()))
    status, _out, err = run(capsys, "compare", str(saved), str(saved))
    assert status == 2
    assert_one_line_error(err)
    assert "generation reports cannot be compared" in err
    status, _out, err = run(capsys, "render", str(saved), "--svg", str(tmp_path / "gen.svg"))
    assert status == 0, err
    assert (tmp_path / "gen.svg").read_text().startswith("<svg")
