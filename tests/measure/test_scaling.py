"""measure_scaling (attention-and-scaling.md 2-3): fits of real workloads, statuses, bad inputs, failures."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

import torchscan.measure.scaling as scaling_module
from tests.measure.scaling_models import TinyGPT
from torchscan import measure_scaling
from torchscan.report.scaling_schema import EXACT_METHOD, LEAST_SQUARES_METHOD
from torchscan.report.validate import validate_report

_LIB = torch.library.Library("torchscan_scaling_test", "DEF")  # an operator without any formula
_LIB.define("mystery(Tensor x) -> Tensor")
_LIB.impl("mystery", lambda x: x * 1, "CompositeExplicitAutograd")


def _checked(report):
    """The report after a JSON round trip, validated as a saved report."""
    saved = json.loads(json.dumps(report))
    assert validate_report(saved) == "scaling"
    return saved


def _codes(report):
    return [entry["code"] for entry in report["diagnostics"]]


def test_gpt_flops_grow_as_a_quadratic_whose_leading_coefficient_is_the_attention_pair_cost():
    torch.manual_seed(0)
    width, heads, layers = 32, 4, 2
    model = TinyGPT(vocab=50, width=width, heads=heads, layers=layers, max_len=256)
    report = measure_scaling(
        lambda n: (model, (torch.zeros(1, n, dtype=torch.int64),), {}), {"seq": [16, 32, 64, 128]}
    )
    report = _checked(report)
    fit = report["fits"]["flops"]["seq"]
    # Per layer, per head and per (query, key) pair -- the math path computes all n² pairs, then masks:
    #   q·k score 2·dh (dh = 32 / 4 = 8) + scale 1 + masked_fill 1 + softmax 5 (5N − 2R: the −2 per row
    #   is linear in n) + weights·v 2·dh  =  4·8 + 7 = 39 FLOPs.
    # 4 heads x 2 layers x 39 = 312 FLOPs per n². Everything else (projections, MLP, norms, head) is
    # per token: linear in n.
    pair_cost = layers * heads * (4 * (width // heads) + 7)
    assert pair_cost == 312
    assert fit["status"] == "complete" and fit["method"] == EXACT_METHOD
    assert fit["degree"] == 2 and fit["coefficients"][2] == pair_cost and fit["denominator"] == 1
    assert fit["residuals"] == [0, 0, 0, 0]
    attention = fit["by_module_type"]["CausalSelfAttention"]
    assert attention["degree"] == 2 and attention["coefficients"][2] == pair_cost
    assert fit["by_module_type"]["MLP"]["degree"] == 1
    # the two batched products: 2 layers x 4 heads x (2·8 + 2·8) per pair = 256
    assert fit["by_operator"]["aten.bmm"]["coefficients"] == [0, 0, layers * heads * 4 * (width // heads)]
    assert fit["by_operator"]["aten.addmm"]["degree"] == 1
    # the sum of the points' operator values is the point's total (complete, nothing uncounted)
    for point in report["points"]:
        assert sum(point["by_operator"]["flops"].values()) == point["flops"]["value"]
    assert 1 < fit["exponent"] < 2
    assert report["fits"]["operator_bytes"]["seq"]["degree"] == 2  # the n² score tensors are read and written
    assert report["context"]["workload"] == "module" and report["context"]["model_type"] == "TinyGPT"


def test_cnn_flops_over_image_sides_have_exponent_two():
    torchvision = pytest.importorskip("torchvision")
    with torch.device("meta"):
        model = torchvision.models.resnet18(weights=None)
    report = measure_scaling(
        lambda side: (model, (torch.empty(1, 3, side, side, device="meta"),), {}),
        {"side": [64, 128, 192, 256]},
        metrics=("flops",),
        device="meta",
    )
    fit = _checked(report)["fits"]["flops"]["side"]
    # every side is a multiple of ResNet's total stride 32, so every feature map scales with side²; the
    # classifier head (512 x 1000 multiply-adds) is the constant term that keeps the slope just below 2.
    # The linear term is the stem max pool's border (truth.md 6: taps on padding cost nothing): 3×3,
    # stride 2, padding 1 over H = side/2 reads 3·H/2 − 1 rows per axis, so each of 64 planes has
    # 9·(H/2)² − (3·H/2 − 1)² = 3·H − 1 = 1.5·side − 1 fewer comparisons: −96·side (+64).
    assert fit["exponent"] == pytest.approx(2.0, abs=0.05)
    assert fit["degree"] == 2 and fit["coefficients"][1] == -96 and fit["coefficients"][0] > 0
    assert fit["by_operator"]["aten.convolution"]["coefficients"][:2] == [0, 0]


def test_a_partial_point_makes_its_fits_partial():
    def build(n):
        x = torch.ones(n)
        if n < 32:
            return lambda: x * 2
        return lambda: torch.ops.torchscan_scaling_test.mystery(x * 2)

    report = _checked(measure_scaling(build, {"n": [8, 16, 32, 64]}, metrics=("flops",)))
    statuses = [p["flops"]["status"] for p in report["points"]]
    assert statuses == ["complete", "complete", "partial", "partial"]
    fit = report["fits"]["flops"]["n"]
    # the known values (the mul, n FLOPs) are still fitted: they describe the counted part only
    assert fit["status"] == "partial" and fit["coefficients"] == [0, 1]
    assert fit["by_operator"]["aten.mul"]["status"] == "partial"
    assert {"uncounted_operator", "scaling_fit_partial"} <= set(_codes(report))


def test_memory_peak_on_meta():
    width = 16
    with torch.device("meta"):
        model = nn.Linear(width, width, bias=False)
    report = measure_scaling(
        lambda n: (model, (torch.empty(1, n, width, device="meta"),), {}),
        {"n": [4, 8, 16, 32]},
        metrics=("memory_peak",),
        device="meta",
    )
    report = _checked(report)
    fit = report["fits"]["memory_peak"]["n"]
    # live float32 storages at the peak: the weight 16·16·4 = 1,024 bytes, the input and the output
    # n·16·4 = 64·n bytes each: 1,024 + 128·n
    assert [p["memory_peak"]["value"] for p in report["points"]] == [1024 + 128 * n for n in (4, 8, 16, 32)]
    assert fit["degree"] == 1 and fit["coefficients"] == [1024, 128] and fit["by_operator"] == {}
    assert report["context"]["device"] == "meta"


def test_latency_is_a_least_squares_fit_with_its_noise_interval(monkeypatch):
    def fake_latency(workload, *, device, progress):
        workload()
        seconds = 1e-3 + 2e-6 * workload.size**2  # exactly quadratic: least squares recovers it
        totals = {
            "latency": {"status": "complete", "value": seconds, "known_value": seconds, "unit": "seconds"},
            "latency_iqr": {"status": "complete", "value": 1e-4, "known_value": 1e-4, "unit": "seconds"},
        }
        for result in totals.values():
            result.update(scope="warmed_block_average", method="torch.utils.benchmark.Timer")
        return {"totals": totals}

    def build(n):
        x = torch.ones(n, n)

        def workload():
            return x @ x

        workload.size = n
        return workload

    monkeypatch.setattr(scaling_module, "measure_latency", fake_latency)
    report = _checked(measure_scaling(build, {"n": [2, 4, 8, 16, 32]}, metrics=("flops", "latency")))
    fit = report["fits"]["latency"]["n"]
    # the degree follows the exact FLOPs fit: 2·n³ for the n x n matmul, confirmed by a fifth point
    assert report["fits"]["flops"]["n"]["coefficients"] == [0, 0, 0, 2]
    assert fit["method"] == LEAST_SQUARES_METHOD and fit["degree"] == 3
    assert "numerators" not in fit and "denominator" not in fit
    assert fit["coefficients"] == pytest.approx([1e-3, 0, 2e-6, 0], abs=1e-12)
    assert all(abs(r) < 1e-12 for r in fit["residuals"])
    assert all(p["latency_iqr"]["value"] == 1e-4 for p in report["points"])


def test_real_latency_pass_runs_and_is_labelled():
    x = torch.ones(8)
    report = _checked(measure_scaling(lambda n: lambda: x[:n] * 2, {"n": [2, 4]}, metrics=("latency",)))
    fit = report["fits"]["latency"]["n"]
    assert fit["method"] == LEAST_SQUARES_METHOD and fit["status"] == "complete"
    assert all(
        p["latency"]["unit"] == "seconds" and p["latency_iqr"]["status"] == "complete"
        for p in report["points"]
    )


def test_grid_axes_fit_each_axis_at_the_others_largest_size():
    width = 8
    weight = torch.ones(width, width)
    seen = []

    def build(seq, batch):
        seen.append((seq, batch))
        x = torch.ones(batch, seq, width)
        return lambda: x @ weight

    report = _checked(measure_scaling(build, {"seq": [2, 4, 8], "batch": [1, 2, 3]}, metrics=("flops",)))
    assert seen == [(s, b) for s in (2, 4, 8) for b in (1, 2, 3)]  # keyword arguments, last axis fastest
    assert [p["sizes"] for p in report["points"]][:2] == [{"seq": 2, "batch": 1}, {"seq": 2, "batch": 2}]
    # x @ W: 2 · batch · seq · 8 · 8 FLOPs = 128 · batch · seq
    along_seq, along_batch = report["fits"]["flops"]["seq"], report["fits"]["flops"]["batch"]
    assert along_seq["at"] == {"batch": 3} and along_seq["coefficients"] == [0, 128 * 3]
    assert along_batch["at"] == {"seq": 8} and along_batch["coefficients"] == [0, 128 * 8]
    assert along_seq["points"] == [2, 5, 8] and along_batch["points"] == [6, 7, 8]


def test_a_failing_point_is_unavailable_and_the_fit_uses_the_rest():
    x = torch.ones(64)

    def build(n):
        if n == 16:
            raise RuntimeError("out of patience at 16")

        def workload():
            if n == 32:
                raise ValueError("the workload refuses 32")
            return x[:n] + 1

        return workload

    report = _checked(measure_scaling(build, {"n": [4, 8, 16, 32, 64]}, metrics=("flops", "operator_bytes")))
    points = report["points"]
    assert points[2]["errors"] == {"build": "RuntimeError"}
    assert points[3]["errors"] == {"flops": "ValueError"}
    for point in points[2:4]:
        assert (
            point["flops"]["status"] == "unavailable" and point["operator_bytes"]["status"] == "unavailable"
        )
        assert point["by_operator"] == {"flops": {}, "operator_bytes": {}}
    fit = report["fits"]["flops"]["n"]
    assert fit["status"] == "complete" and fit["coefficients"] == [0, 1]  # n additions, from 3 points
    assert fit["residuals"] == [0, 0, None, None, 0]
    messages = [e["message"] for e in report["diagnostics"] if e["code"] == "scaling_point_failed"]
    assert any("n=16" in m and "RuntimeError: out of patience at 16" in m for m in messages)
    assert any("n=32" in m and "ValueError" in m for m in messages)
    assert "scaling_fit_fewer_points" in _codes(report)


def test_progress_and_training_flags():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    model.train()
    modes = []
    model.register_forward_pre_hook(lambda module, args: modes.append(module.training))
    calls = []
    measure_scaling(
        lambda n: (model, (torch.ones(n, 4),), {}),
        {"n": [1, 2, 3]},
        progress=lambda *update: calls.append(update),
    )
    assert calls == [("scaling", 0, 3), ("scaling", 1, 3), ("scaling", 2, 3), ("scaling", 3, 3)]
    assert modes == [False, False, False]  # each point ran in eval mode ...
    assert model.training and model[1].training  # ... and the flags were restored


class _Workload:
    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1


@pytest.mark.parametrize(
    ("sizes", "error", "words"),
    [
        ({}, ValueError, "sizes is empty"),
        ({"seq": []}, ValueError, "at least 2"),
        ({"seq": [64]}, ValueError, "at least 2"),
        ({"seq": [64, 32]}, ValueError, "strictly increasing: 32 at position 1 follows 64"),
        ({"seq": [8, 8]}, ValueError, "strictly increasing"),
        ({"seq": [0, 8]}, ValueError, "sizes['seq'][0] must be an int > 0, got 0"),
        ({"seq": [-4, 8]}, ValueError, "> 0"),
        ({"seq": [8.0, 16]}, TypeError, "sizes['seq'][0] must be an int > 0, got float"),
        ({"seq": [True, 2]}, TypeError, "got bool"),
        ({"seq": "64,128"}, TypeError, "list of ints"),
        ([64, 128], TypeError, "mapping of axis name"),
        ({"se q": [1, 2]}, ValueError, "identifier"),
        ({3: [1, 2]}, TypeError, "axis names"),
    ],
)
def test_bad_sizes_are_refused_before_anything_runs(sizes, error, words):
    built = []
    with pytest.raises(error) as caught:
        measure_scaling(lambda n: built.append(n), sizes)
    assert words in str(caught.value) and built == []


@pytest.mark.parametrize(
    ("returned", "words"),
    [
        (3, "build(seq=4) returned a int, not a zero-argument workload"),
        (nn.Linear(2, 2), "build(seq=4) returned an nn.Module (Linear)"),
        (lambda x: x, "a callable that needs arguments"),
        ((nn.Linear(2, 2), torch.ones(2), {}), "args a Tensor"),
        ((nn.Linear(2, 2), (), {1: 2}), "str-keyed mapping"),
    ],
)
def test_build_returning_no_workload_is_a_type_error_naming_the_size(returned, words):
    with pytest.raises(TypeError, match=None) as caught:
        measure_scaling(lambda n: returned, {"seq": [4, 8]})
    assert words in str(caught.value)


def test_build_raising_at_the_first_size_stops_everything():
    def build(n):
        raise KeyError("no such size")

    with pytest.raises(ValueError, match=r"build raised KeyError: 'no such size' for the first size seq=4"):
        measure_scaling(build, {"seq": [4, 8]})


def test_later_build_of_another_kind_is_a_type_error():
    workload = _Workload()
    model = nn.Linear(2, 2)

    def build(n):
        return workload if n == 1 else (model, (torch.ones(2),), {})

    with pytest.raises(
        TypeError, match=r"build\(n=2\) returned a \(model, args, kwargs\) tuple, but the first"
    ):
        measure_scaling(build, {"n": [1, 2]})
    assert workload.calls >= 1  # the first size had been measured


@pytest.mark.parametrize(
    ("options", "error", "words"),
    [
        ({"metrics": ("flops", "watts")}, ValueError, "unknown names 'watts'"),
        ({"metrics": "flops"}, TypeError, "sequence of metric names"),
        ({"metrics": ()}, ValueError, "metrics is empty"),
        ({"metrics": ("flops", "flops")}, ValueError, "twice"),
        ({"metrics": ("latency",), "device": "meta"}, ValueError, "meta device"),
        ({"device": 3}, TypeError, "device must be"),
        ({"device": "warp:0"}, ValueError, "invalid device"),
        ({"progress": "yes"}, TypeError, "progress"),
    ],
)
def test_bad_options_are_refused_before_build(options, error, words):
    built = []
    with pytest.raises(error) as caught:
        measure_scaling(lambda n: built.append(n), {"n": [1, 2]}, **options)
    assert words in str(caught.value) and built == []
    with pytest.raises(TypeError, match="build must be callable"):
        measure_scaling(3, {"n": [1, 2]})  # type: ignore[arg-type]
