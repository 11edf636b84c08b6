"""The built-in demo models (torchscan.demo): small, deterministic, RNG-neutral, analysable."""

from __future__ import annotations

import json
import time

import pytest
import torch
from torch import nn

from torchscan.demo import DEMO_MODELS, DemoCNN, ResidualBlock, build_demo

NAMES = sorted(DEMO_MODELS)


def test_known_demos() -> None:
    assert NAMES == ["cnn", "transformer"]


@pytest.mark.parametrize("name", NAMES)
def test_builds_in_eval_mode_and_runs_on_default_shape(name: str) -> None:
    model, shape = build_demo(name)
    assert isinstance(model, nn.Module)
    assert not any(m.training for m in model.modules())
    assert all(isinstance(d, int) and d > 0 for d in shape)
    with torch.no_grad():
        out = model(torch.zeros(1, *shape))
    assert torch.isfinite(out).all()


def test_default_shapes_and_outputs() -> None:
    cnn, cnn_shape = build_demo("cnn")
    assert cnn_shape == (3, 32, 32)
    with torch.no_grad():
        assert cnn(torch.zeros(1, *cnn_shape)).shape == (1, 10)
    transformer, tokens = build_demo("transformer")
    assert tokens == (16, 32)
    with torch.no_grad():
        assert transformer(torch.zeros(1, *tokens)).shape == (1, 16, 32)


def test_cnn_has_a_residual_block_and_transformer_is_native() -> None:
    cnn, _ = build_demo("cnn")
    assert isinstance(cnn, DemoCNN)
    assert any(isinstance(m, ResidualBlock) for m in cnn.modules())
    transformer, _ = build_demo("transformer")
    assert type(transformer) is nn.TransformerEncoder
    assert all(type(layer) is nn.TransformerEncoderLayer for layer in transformer.layers)


@pytest.mark.parametrize("name", NAMES)
def test_weights_are_deterministic(name: str) -> None:
    first, _ = build_demo(name)
    second, _ = build_demo(name)
    a, b = first.state_dict(), second.state_dict()
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    # random, not constant: every weight matrix has distinct values
    assert all(p.unique().numel() > 1 for p in first.parameters() if p.dim() >= 2)


@pytest.mark.parametrize("name", NAMES)
def test_global_rng_untouched(name: str) -> None:
    torch.manual_seed(1234)
    expected = torch.rand(3)
    torch.manual_seed(1234)
    build_demo(name)
    assert torch.equal(torch.rand(3), expected)


def test_unknown_demo_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="cnn, transformer"):
        build_demo("resnet")


@pytest.mark.parametrize("name", NAMES)
def test_demo_analysis_is_fast_and_serialisable(name: str) -> None:
    from torchscan import crawl_module

    model, shape = build_demo(name)
    start = time.perf_counter()
    report = crawl_module(model, shape)
    assert time.perf_counter() - start < 10
    assert json.loads(json.dumps(report, allow_nan=False)) == report
    assert report["totals"]["parameters"]["status"] == "complete"
    assert report["totals"]["parameters"]["value"] == sum(p.numel() for p in model.parameters())


def test_cnn_residual_add_is_estimated_by_a_functional_formula() -> None:
    """The shortcut add runs in the block's own frame: one FLOP and three DMAs per output element."""
    import math

    from torchscan import crawl_module

    model, shape = build_demo("cnn")
    report = crawl_module(model, shape, strict=True)
    assert report["totals"]["module_flops"]["status"] == "complete"
    block = next(layer for layer in report["layers"] if layer["path"] == "block")
    elements = math.prod(block["output"]["shape"])
    metrics = block["metrics"]
    assert [metrics[n]["value"] for n in ("module_flops", "macs", "dmas")] == [elements, 0, 3 * elements]


def test_demo_prints_no_warning_without_numpy(tmp_path) -> None:
    """A bare `pip install -e .` brings no numpy; torch then warns at import. The demo prints none."""
    import subprocess
    import sys

    script = (
        "import sys; sys.modules['numpy'] = None\n"  # as if numpy were not installed
        "from torchscan.cli import main\n"
        f"sys.exit(main(['demo', '--out', {str(tmp_path)!r}]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr and "Warning" not in done.stdout
    assert done.stdout.startswith("demo:cnn")
