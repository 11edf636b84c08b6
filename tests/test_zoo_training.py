"""The zoo's training steps (``benchmarks/zoo_training.py``, ``zoo_reconcile.py``; issues #32, #39).

Closed forms of single convolution and linear calls against hand-derived numbers; the reconciliation,
lower-bound and summary helpers on small inputs; then a CI-sized subset of the zoo, each model
trained one step: every conv/linear call reconciles (backward ÷ forward = 2, 1 for a first layer,
plus the bias), the step is complete, the lower-bound rule holds per phase, and both grad modes
count the same forward. Every model of the subset passes every check (each fix of issues #32 and
#39 landed: grouped convolution gradients, pooling taps, complex arithmetic, rounded division, the
CPU RNN and grouped-matmul backward, index_put with None indices, module attributes of any type).
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
try:
    import zoo_reconcile
    import zoo_training
    from zoo_truth import catalogue as truth_catalogue
finally:
    sys.path.remove(str(ROOT / "benchmarks"))


def _call(module: nn.Module, x: torch.Tensor) -> zoo_reconcile.Call:
    return zoo_reconcile.Call("layer", module, x, module(x).shape, True)


# --- closed forms (hand-derived) ---------------------------------------------------------------


def test_closed_form_depthwise_convolution_of_issue_32() -> None:
    conv = nn.Conv2d(32, 32, 3, padding=1, groups=32, bias=False)
    x = torch.randn(2, 32, 16, 16, requires_grad=True)
    closed = zoo_reconcile.closed_form(conv, x, torch.Size([2, 32, 16, 16]), True, True)(False)
    # MACs = N·Cout·H·W·(Cin/groups)·k² = 2·32·256·1·9 = 147,456
    assert closed.forward == 294_912  # the issue's forward
    assert closed.backward == 589_824  # grad_input and grad_weight, 2·MACs each: the issue's truth


def test_closed_form_first_layer_with_bias() -> None:
    conv = nn.Conv2d(3, 8, 3)
    x = torch.randn(2, 3, 8, 8)  # needs no gradient: a first layer
    closed = zoo_reconcile.closed_form(conv, x, torch.Size([2, 8, 6, 6]), False, True)(False)
    # MACs = 2·8·36·27 = 15,552; backward = grad_weight 31,104 + bias N·Cout·Ho·Wo = 2·8·36 = 576
    assert (closed.forward, closed.backward) == (31_104, 31_680)


def test_closed_form_grouped_transposed_convolution() -> None:
    conv = nn.ConvTranspose2d(4, 8, 4, stride=2, padding=1, groups=4, bias=False)
    x = torch.randn(1, 4, 5, 5, requires_grad=True)
    closed = zoo_reconcile.closed_form(conv, x, torch.Size([1, 8, 10, 10]), True, True)(False)
    # each input element meets Cout/groups · k² = 2·16 weights: MACs = 1·4·25·2·16 = 3,200
    assert (closed.forward, closed.backward) == (6_400, 12_800)


def test_closed_form_linear_fused_and_separate_bias() -> None:
    linear = nn.Linear(16, 32)
    x = torch.randn(4, 16, requires_grad=True)
    build = zoo_reconcile.closed_form(linear, x, torch.Size([4, 32]), True, True)
    # MACs = 4·16·32 = 2,048; bias gradient Σ over 4 rows: 4·32 − 32 = 96 (docs/operator-flops.md)
    assert (build(False).forward, build(False).backward) == (4_096, 8_288)
    assert build(True).forward == 4_096 + 128  # a separate bias add: one per output element


def test_closed_form_without_gradients() -> None:
    linear = nn.Linear(8, 4)
    closed = zoo_reconcile.closed_form(linear, torch.randn(3, 8), torch.Size([3, 4]), False, False)(False)
    assert (closed.forward, closed.backward) == (192, 0)  # 2·3·8·4; under no_grad nothing runs back


# --- one call measured alone ---------------------------------------------------------------------


def test_isolate_reconciles_plain_layers() -> None:
    torch.manual_seed(0)
    cases = [
        (nn.Conv2d(3, 8, 3, bias=False), torch.randn(2, 3, 8, 8)),
        (nn.Conv1d(4, 6, 5, stride=2, dilation=2, bias=False), torch.randn(2, 4, 20, requires_grad=True)),
        (nn.Linear(12, 5), torch.randn(3, 12, requires_grad=True)),
        (nn.Linear(12, 5), torch.randn(2, 12, 3).transpose(1, 2)),  # non-contiguous: matmul + add
        (nn.Linear(12, 5, bias=False), torch.randn(2, 7, 12, requires_grad=True)),
    ]
    for module, x in cases:
        result = zoo_reconcile.isolate(_call(module, x))
        assert result.right, (module, result)


def test_isolate_reconciles_a_parametrized_convolution_by_its_kernels() -> None:
    conv = nn.utils.parametrizations.weight_norm(nn.Conv1d(4, 6, 3, bias=False))
    result = zoo_reconcile.isolate(_call(conv, torch.randn(2, 4, 10, requires_grad=True)))
    assert result.kernels_only
    # the weight norm's own operators are in the totals, not in the compared kernels
    assert result.forward > result.conv_forward == result.closed.forward == 2 * 2 * 6 * 8 * 4 * 3
    assert result.right


def test_isolate_reconciles_a_depthwise_convolution() -> None:
    conv = nn.Conv2d(32, 32, 3, padding=1, groups=32, bias=False)
    result = zoo_reconcile.isolate(_call(conv, torch.randn(2, 32, 16, 16, requires_grad=True)))
    assert result.backward == 589_824
    assert result.right


def test_isolate_reconciles_a_convolution_bias() -> None:
    result = zoo_reconcile.isolate(_call(nn.Conv2d(3, 8, 3), torch.randn(2, 3, 8, 8)))
    assert result.backward == 31_680
    assert result.right


def test_recorder_skips_layers_that_compute_something_else() -> None:
    class Custom(nn.Linear):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return super().forward(x) * 2

    model = nn.Sequential(nn.Linear(4, 4), Custom(4, 4))
    with zoo_reconcile.Recorder(model) as recorder:
        model(torch.randn(2, 4))
    assert [call.path for call in recorder.calls] == ["0"]
    assert recorder.skipped == {"1 (Custom)"}


def test_reconcile_ties_convolutions_back_to_the_step() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, bias=False), nn.ReLU(), nn.Conv2d(4, 4, 3, bias=False))
    x = torch.randn(2, 3, 8, 8)
    step, recorder = zoo_training.training_step(model, (x,), {}, lambda out: out.sum())
    result = zoo_reconcile.reconcile(recorder.calls, step["by_operator"])
    assert (result["calls"], result["right"], result["wrong"]) == (2, 2, [])
    assert result["conv_tie_holds"]
    # a convolution outside any module call is not reconciled: the tie says so
    result = zoo_reconcile.reconcile(recorder.calls[:1], step["by_operator"])
    assert not result["conv_tie_holds"]


# --- the lower-bound rule and the summary (pure) -----------------------------------------------


def _phase(status: str, value: int) -> dict[str, Any]:
    return {"status": status, "value": value if status == "complete" else None, "known_value": value}


def test_lower_bound_replaces_conv_linear_counts_by_their_closed_forms() -> None:
    phases = {
        "forward": _phase("partial", 100),  # an uncounted operator elsewhere
        "backward": _phase("complete", 500),
        "optimizer": _phase("complete", 30),
        "recompute": _phase("complete", 0),
    }
    sums = {"forward": 60, "closed_forward": 60, "backward": 400, "closed_backward": 200}
    checks = zoo_reconcile.lower_bound(phases, sums)
    # backward: 500 − 400 + 200 = 300 ≠ 500 though complete; the total's known 630 > 430
    assert checks["phases"]["backward"] == {
        "status": "complete",
        "library": 500,
        "reference": 300,
        "holds": False,
    }
    assert checks["phases"]["forward"]["holds"] and checks["phases"]["total"]["reference"] == 430
    assert not checks["phases"]["total"]["holds"] and not checks["holds"]
    sums["backward"] = 200
    assert zoo_reconcile.lower_bound(phases, sums)["holds"]


def _entry(name: str, right: bool, status: str, crawl_error: bool = False) -> dict[str, Any]:
    figure = {"status": status, "value": 10}
    calls = 3
    return {
        "name": name,
        "parameters": 7,
        "crawl": {"error": "TypeError: x"} if crawl_error else {"figures": {"macs": {"status": "complete"}}},
        "forward_no_grad": figure,
        "forward_grad": figure,
        "step": {"total": figure, **{phase: figure for phase in zoo_training.PHASES}},
        "uncounted": [] if status == "complete" else ["aten.foo"],
        "reconcile": {"calls": calls, "right": calls if right else 1, "wrong": [], "conv_tie_holds": True},
        "lower_bound": {"holds": right},
        "seconds": 0.1,
    }


def test_summary_counts_right_complete_and_partial() -> None:
    entries = [
        _entry("a", True, "complete"),
        _entry("b", False, "complete"),
        _entry("c", True, "partial"),
        _entry("d", True, "complete", crawl_error=True),
        {"name": "e", "error": "RuntimeError: boom", "seconds": 0.0},
    ]
    facts = zoo_training.summary(entries)
    assert (facts["models"], facts["right"], facts["complete"], facts["partial"]) == (5, 3, 2, 2)
    assert facts["errors"] == ["e"] and facts["not_right"] == ["b", "e"]
    assert facts["partial_reasons"]["c"] == ["operator FLOPs: aten.foo"]
    assert facts["partial_reasons"]["d"] == ["crawl_module raised TypeError: x"]
    lines = zoo_training.markdown(entries, facts)
    assert lines[0].startswith("- training right 3/5 (")
    assert "complete 2/5, partial 2/5" in lines[0]


# --- the CI subset of the zoo -------------------------------------------------------------------

SUBSET = (
    "efficientnet_b0", "shufflenet_v2_x0_5", "convmixer", "ghostnet", "fastvit", "xception", "convnext-v2",
    "levit", "xcit", "fno-1d", "lstm-lm", "moe-grouped-mm", "moe-switch", "gcn", "gat",
)  # fmt: skip
CHECKS = ("right", "complete", "lower_bound", "grad_modes")


@functools.cache
def _measured(name: str) -> dict[str, Any]:
    """One model's training figures, measured once per session on one thread (as the zoo runs:
    intra-op threads on a shared machine only add waiting)."""
    truth = truth_catalogue.by_name()
    if name not in truth:
        pytest.importorskip("torchvision")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        if name in truth:
            spec = truth[name]
            return zoo_training.measure_training(name, spec.build, spec.loss, spec.group)
        return zoo_training.measure_training(name, zoo_training.torchvision_builder(name))
    finally:
        torch.set_num_threads(threads)


def _cases() -> list[Any]:
    return [pytest.param(name, check, id=f"{name}-{check}") for name in SUBSET for check in CHECKS]


@pytest.mark.slow
@pytest.mark.parametrize("name, check", _cases())
def test_zoo_subset_training_step(name: str, check: str) -> None:
    entry = _measured(name)
    assert "error" not in entry, entry.get("error")
    verdict = zoo_training.verdicts(entry)
    if check == "right":
        reconcile = entry["reconcile"]
        assert reconcile["calls"] > 0 and reconcile["conv_tie_holds"]
        assert reconcile["right"] == reconcile["calls"], reconcile["wrong"]
    elif check == "complete":
        assert verdict["complete"], verdict["reasons"]
    elif check == "lower_bound":
        assert entry["lower_bound"]["holds"], entry["lower_bound"]["phases"]
    else:
        # both grad modes ran the same forward: the same value and status; anything partial names
        # what it left out
        assert entry["forward_no_grad"] == entry["forward_grad"]
        statuses = {entry["forward_no_grad"]["status"], entry["step"]["total"]["status"]}
        assert statuses <= {"complete", "partial"}
        assert statuses == {"complete"} or entry["uncounted"]


def test_catalogue_adds_the_issue_architectures() -> None:
    truth = truth_catalogue.TRUTH
    assert len({spec.name for spec in truth}) == len(truth) >= 35
    assert sum(spec.issue == 32 for spec in truth) >= 15 and sum(spec.issue == 39 for spec in truth) >= 20
    names = {spec.name for spec in truth}
    assert set(truth_catalogue.BEFORE_AFTER) - {"efficientnet_b0"} <= names


@pytest.mark.slow
def test_zoo_cli_training_only(tmp_path: Path) -> None:
    out = tmp_path / "zoo.json"
    command = [
        sys.executable,
        str(ROOT / "benchmarks" / "zoo.py"),
        "--training-only",
        "--only",
        "gcn,moe-switch",
    ]
    completed = subprocess.run(
        [*command, "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    assert "- training right 2/2 (" in completed.stdout  # neither has a convolution: both reconcile
    assert "complete 2/2, partial 0/2; lower-bound rule holds on 2/2" in completed.stdout
    assert "#### Per model" not in completed.stdout  # the forward zoo did not run
    data = json.loads(out.read_text(encoding="utf-8"))
    assert [entry["name"] for entry in data["training"]] == ["gcn", "moe-switch"]
    assert data["training_summary"]["right"] == 2 and data["models"] == []
