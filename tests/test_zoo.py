"""The model zoo (``benchmarks/zoo.py``): its pure helpers, a small subset of real models, a CLI smoke.

The subset asserts that every figure the zoo reports is present, that every incomplete metric comes
with the names of what is missing, and that the subset's models (BERT, GPT-2, Llama, T5, OPT, Falcon,
Mixtral, Marian, Qwen2-MoE, the time-series transformer, ResNet-18, R3D-18) are complete in module
FLOPs/MACs/DMAs and in operator FLOPs, identical (value and status) under inference_mode, and that
every overload they dispatch is classified by the coverage table (none uncounted).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
try:
    import operator_coverage
    import zoo
    import zoo_models
finally:
    sys.path.remove(str(ROOT / "benchmarks"))

pytest.importorskip("transformers")

# The suite's zoo subset; the last three are issue #19 families (size-called positions in Marian and
# the time-series transformer, mixture-of-experts with a shared expert in Qwen2-MoE).
SUBSET = (
    "bert",
    "gpt2",
    "llama",
    "t5",
    "opt",
    "falcon",
    "mixtral",
    "marian",
    "qwen2-moe",
    "time-series-transformer",
)


def _row(path: str, kind: str, macs: int | None) -> dict[str, Any]:
    status = "unavailable" if macs is None else "complete"
    result = {"status": status, "value": macs, "known_value": macs}
    return {"path": path, "type": kind, "metrics": {"macs": result}}


def test_conv_linear_macs_sums_leaf_rows_and_attention_once() -> None:
    report = {
        "layers": [
            _row("", "Net", 1000),
            _row("block", "Conv2dNormActivation", 90),  # a composite named Conv…: not a conv row
            _row("block.0", "Conv2d", 60),
            _row("attn", "MultiheadAttention", 300),
            _row("attn.out_proj", "NonDynamicallyQuantizableLinear", 40),  # inside the MHA row: skipped
            _row("head", "Linear", 7),
        ]
    }
    # 60 (Conv2d) + 300 (MultiheadAttention) + 7 (Linear) = 367
    assert zoo.conv_linear_macs(report) == {"value": 367, "complete": True, "attention_rows": 1}
    report["layers"].append(_row("head2", "Linear", None))
    assert zoo.conv_linear_macs(report)["complete"] is False


def test_conv_linear_macs_on_a_real_report() -> None:
    import torchscan

    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 5))
    report = torchscan.crawl_module(model, args=(torch.randn(1, 3, 8, 8),))
    # conv: 36 outputs·4 channels · 27 (3·3·3) = 3,888; linear: 144 · 5 = 720; total 4,608
    assert zoo.conv_linear_macs(report) == {"value": 4608, "complete": True, "attention_rows": 0}


def test_missing_names_reads_every_code() -> None:
    diagnostics = [
        {"code": "uncounted_operator", "operator": "aten.foo", "message": "", "metric": "flops"},
        {
            "code": "unestimated_functional_work",
            "message": "X ran operators ...: aten.add (2 call(s)), aten.gather (1 call(s)).",
            "metric": "module_flops",
        },
        {"code": "unsupported_module_metric", "message": "Module type not supported: GELUActivation"},
        {"code": "something_else", "message": "Module type not supported: Ignored"},
        {"code": "module_metric_error", "message": "NotImplementedError: boom", "path": "decoder.pos"},
        # geometry only (the leaf's compute metrics were estimated from its operators)
        {
            "code": "unsupported_module_metric",
            "message": "Module type not supported: LayerNorm2d",
            "metric": "receptive_field",
        },
        {
            "code": "module_metric_error",
            "message": "NotImplementedError: layout",
            "metric": "receptive_field",
            "path": "embed_positions",
        },
    ]
    assert zoo.missing_names(diagnostics) == {
        "uncounted_operators": ["aten.foo"],
        "unsupported_modules": ["GELUActivation"],
        "unestimated_functional_operators": ["aten.add", "aten.gather"],
        "module_metric_errors": ["decoder.pos (NotImplementedError: boom)"],
        "geometry_unknown": ["LayerNorm2d", "embed_positions"],
    }


def _entry(name: str, op: str, macs: str, identical: bool, ratio: float, both: bool) -> dict[str, Any]:
    return {
        "name": name,
        "operator_flops_no_grad": {"status": op, "value": 10},
        "operator_flops_identical": identical,
        "macs": {"status": macs, "value": 5},
        "ratio": ratio,
        "ratio_complete": both,
    }


def test_summary_counts_targets_and_outliers() -> None:
    entries = [
        _entry("a", "complete", "complete", True, 1.0, True),
        _entry("b", "complete", "partial", False, 1.5, True),  # not identical: misses the operator target
        _entry("c", "partial", "complete", True, 0.5, False),  # bounds only: never an outlier
        {"name": "d", "error": "RuntimeError: boom"},
    ]
    facts = zoo.summary(entries)
    assert facts["models"] == 4
    assert facts["errors"] == ["d"]
    assert facts["operator_flops_complete_and_identical"] == 1  # 1/4 < 97 %
    assert facts["operator_flops_target_met"] is False
    assert facts["macs_complete"] == 2  # 2/4 < 90 %
    assert facts["macs_target_met"] is False
    assert facts["ratio_outliers"] == [("b", 1.5)]
    assert facts["ratio_models_compared"] == 2
    assert facts["operator_flops_no_grad_complete"] == 2  # a and b
    assert facts["incomplete_without_names"] == ["b", "c"]  # incomplete, and no "missing" names at all


def test_summary_groups_and_shared_operators() -> None:
    entries = [
        {
            **_entry("a", "complete", "complete", True, 1.0, True),
            "group": "detection",
            "shared_operators": {"operators": 2, "torchscan": 30, "flop_counter_mode": 30, "differing": []},
        },
        {
            **_entry("b", "partial", "complete", True, 1.0, False),
            "group": "detection",
            "shared_operators": {
                "operators": 1,
                "torchscan": 12,
                "flop_counter_mode": 10,
                "differing": ["aten.mm"],
            },
        },
        {"name": "c", "group": "audio", "error": "RuntimeError: boom"},
    ]
    facts = zoo.summary(entries)
    assert facts["groups"] == {
        "detection": {"models": 2, "operator": 1, "macs": 2},
        "audio": {"models": 1, "operator": 0, "macs": 0},
    }
    # (30 + 12) / (30 + 10) = 1.05; b names its differing operator
    assert facts["shared_operators"] == {
        "models": 2,
        "ratio": 42 / 40,
        "flop_counter_mode_failed": [],
        "differing": ["b: aten.mm"],
    }
    text = zoo.markdown([], facts, ["## header"])  # the target lines only (no per-model rows)
    assert "shared-operator ratio vs FlopCounterMode" in text and "1.0500" in text
    assert "- detection: 2 models, operator FLOPs complete and identical 1/2, MACs complete 2/2" in text


def test_shared_operators_match_flop_counter_mode_on_a_real_model() -> None:
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 5)).eval()
    args = (torch.randn(1, 3, 8, 8),)
    import torchscan

    with torch.no_grad():
        report = torchscan.measure_flops(lambda: model(*args))
    shared = zoo.shared_operators(model, args, {}, report["by_operator"])
    # conv 2·3,888 = 7,776 and addmm 2·720 = 1,440: both counters agree on both operators
    assert shared == {
        "operators": 2,
        "torchscan": 9216,
        "flop_counter_mode": 9216,
        "ratio": 1.0,
        "differing": [],
    }


def test_catalogue_covers_the_issue_19_families() -> None:
    specs = zoo_models.catalogue()
    groups = {spec.group for spec in specs}
    assert {"audio", "state-space", "hybrid", "mixture-of-experts", "fourier", "sparse attention"} <= groups
    assert {"dense vision", "time series", "encoder-decoder, size-called positions", "generate"} <= groups
    if zoo_models.torchvision_names():
        import torchvision

        names = {spec.name for spec in specs}
        for module in ("detection", "segmentation", "video", "optical_flow"):
            assert set(torchvision.models.list_models(module=getattr(torchvision.models, module))) <= names
    assert len({spec.name for spec in specs}) == len(specs)  # names are unique


def test_catalogue_covers_the_issue_architectures() -> None:
    names = {spec.name for spec in zoo_models.catalogue() if spec.family == "transformers"}
    required = {
        "bert", "roberta", "distilbert", "albert", "electra", "gpt2", "gpt-neo", "opt", "llama", "mistral",
        "mixtral", "qwen2", "phi", "t5", "bart", "vit", "swin", "convnext", "clip", "whisper", "bert-base",
    }  # fmt: skip
    assert required <= names
    assert len(names) >= 20


def _check_entry(entry: dict[str, Any], spec: zoo_models.ZooSpec) -> None:
    assert "error" not in entry, entry.get("error")
    model, _, _ = spec.build()
    assert entry["parameters"] == sum(parameter.numel() for parameter in model.parameters())
    assert entry["parameters_in_rows"] == entry["parameters"]  # views-3.md 1: every parameter in a row
    missing = entry["missing"]
    named_module_gaps = [*missing["unsupported_modules"], *missing["unestimated_functional_operators"]]
    named_module_gaps += missing["module_metric_errors"]
    for name in zoo.COMPUTE:
        assert entry[name]["status"] in ("complete", "partial")
        if entry[name]["status"] != "complete":
            assert named_module_gaps, f"{spec.name}: {name} incomplete but nothing is named"
    if entry["operator_flops_no_grad"]["status"] != "complete":
        assert missing["uncounted_operators"], f"{spec.name}: operator FLOPs partial, nothing named"
    if (
        not entry["operator_flops_identical"]
        and entry["operator_flops_inference_mode"]["status"] != "complete"
    ):
        assert entry["inference_mode_only_uncounted"] or missing["uncounted_operators"]
    assert entry["ratio"] > 0
    # Every subset model is complete (issue #12): module figures, operator FLOPs, both grad modes.
    assert {entry[name]["status"] for name in zoo.COMPUTE} == {"complete"}, missing
    assert entry["operator_flops_no_grad"]["status"] == "complete", missing
    assert entry["operator_flops_identical"]
    assert 0.9 <= entry["ratio"] <= 1.1


@pytest.mark.slow
@pytest.mark.parametrize("name", SUBSET)
def test_zoo_subset_transformers(name: str) -> None:
    spec = next(spec for spec in zoo_models.catalogue() if spec.name == name)
    _check_entry(zoo.measure(spec), spec)


@pytest.mark.slow
def test_zoo_subset_resnet18_small_input() -> None:
    torchvision = pytest.importorskip("torchvision")

    def build() -> zoo_models.Built:
        torch.manual_seed(0)
        return torchvision.models.resnet18(weights=None), (torch.randn(1, 3, 64, 64),), {}

    spec = zoo_models.ZooSpec("resnet18", "torchvision", build)
    entry = zoo.measure(spec)
    _check_entry(entry, spec)
    # Every operator of a plain CNN's eval forward has a formula under no_grad.
    assert entry["operator_flops_no_grad"]["status"] == "complete"
    macs = entry["conv_linear_macs"]
    assert macs["complete"] and macs["value"] <= entry["macs"]["value"]


class _Overloads(TorchDispatchMode):
    """Records every overload a forward dispatches (the operators the zoo subset really runs)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[Any] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.seen.add(func)
        return func(*args, **(kwargs or {}))


def _resnet18_small() -> zoo_models.Built:
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    return torchvision.models.resnet18(weights=None), (torch.randn(1, 3, 64, 64),), {}


@pytest.mark.slow
@pytest.mark.parametrize("name", [*SUBSET, "resnet18", "r3d_18"])
def test_zoo_subset_dispatches_no_uncounted_overload(name: str) -> None:
    """Every overload the subset dispatches, under no_grad and inference_mode, is classified.

    The classification is the coverage table's (``benchmarks/operator_coverage.py``), itself the
    operator observer's own ``resolve``: an operator the table calls uncounted fails here by name.
    """
    if name == "resnet18":
        model, args, kwargs = _resnet18_small()
    elif name == "r3d_18" and not zoo_models.torchvision_names():
        pytest.skip("torchvision is not installed")
    else:
        model, args, kwargs = next(spec for spec in zoo_models.catalogue() if spec.name == name).build()
    model.eval()
    recorder = _Overloads()
    for context in (torch.no_grad, torch.inference_mode):
        with context(), recorder:
            model(*args, **kwargs)
    classes = {str(func): operator_coverage.classify(func)[0] for func in recorder.seen}
    assert classes  # the mode saw the forward
    assert sorted(op for op, kind in classes.items() if kind == "uncounted") == []


@pytest.mark.slow
def test_zoo_subset_video_r3d_18() -> None:
    """A torchvision video builder (issue #19) at the zoo's 1×3×4×64×64 clip: complete everywhere."""
    pytest.importorskip("torchvision")
    spec = next(spec for spec in zoo_models.catalogue() if spec.name == "r3d_18")
    assert spec.group == "video"
    entry = zoo.measure(spec)
    _check_entry(entry, spec)
    assert entry["shared_operators"]["ratio"] == 1.0 and not entry["shared_operators"]["differing"]


@pytest.mark.slow
def test_zoo_cli_smoke(tmp_path: Path) -> None:
    name = "resnet18" if zoo_models.torchvision_names() else "bert"
    out_json, out_md = tmp_path / "zoo.json", tmp_path / "zoo.md"
    command = [sys.executable, str(ROOT / "benchmarks" / "zoo.py"), "--only", name, "--limit", "1"]
    completed = subprocess.run(
        [*command, "--json", str(out_json), "--markdown", str(out_md), "--overhead", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    assert out_md.read_text(encoding="utf-8") == completed.stdout
    assert "| model | params | module FLOPs | MACs | DMAs |" in completed.stdout
    data = json.loads(out_json.read_text(encoding="utf-8"))
    assert [entry["name"] for entry in data["models"]] == [name]
    assert data["summary"]["models"] == 1
    assert "error" not in data["models"][0]
    # --overhead: issue #24's medians, timed in the same run
    assert "## Overhead against a bare forward (issue #24)" in completed.stdout
    assert data["summary"]["overhead"]["models"] == 1
    assert data["summary"]["overhead"]["full_over_bare"] > 0


def test_zoo_cli_rejects_unknown_names() -> None:
    completed = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "zoo.py"), "--only", "no-such-model"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 2
    assert "unknown zoo names: no-such-model" in completed.stderr


def test_recorded_formula_sources_match_the_running_torch() -> None:
    """docs/operator-coverage.md's "Formula source by torch" reads benchmarks/data/formula_sources.json;
    on each tested torch (every CI environment) the running classification must equal its entry."""
    from torchscan.runtime import torch_versions

    recorded = json.loads(operator_coverage.SOURCES.read_text(encoding="utf-8"))
    assert list(recorded) == list(torch_versions.TESTED_TORCH_VERSIONS)
    release = torch_versions.installed_release()
    if release not in recorded:
        pytest.skip(f"torch {release} is not a tested release")
    assert operator_coverage.formula_sources() == recorded[release]
    assert set(recorded[release].values()) == {operator_coverage.TORCHSCAN}  # nothing inherited
