"""Which formula counts an operator on any torch (torch-versions.md 1), and reports on an untested torch.

The fixture below replaces ``torch.utils.flop_counter.flop_registry`` by a copy for one test, so a
test can register what a future FlopCounterMode might (a fake formula) on whichever tested torch runs
the suite, and check that it never replaces one of TorchScan's checked formulas, that it counts an
operator TorchScan never classified only as "unverified", and that a checked one counts fully.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils import flop_counter

import torchscan
from torchscan.analysis.dispatch import resolution as operator_resolution
from torchscan.formulas import provenance
from torchscan.runtime import torch_versions

HOUSEHOLDER = torch.ops.aten.linalg_householder_product  # classified by nobody: uncounted today


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[Any, Any]]:
    """A copy of FlopCounterMode's formula table, installed for this test only."""
    copy = dict(flop_counter.flop_registry)
    monkeypatch.setattr(flop_counter, "flop_registry", copy)
    yield copy


def _fake(value: int, *, pytorch: bool = False) -> Any:
    def formula(*args: Any, out_val: Any = None, **kwargs: Any) -> int:
        return value

    if pytorch:  # as if PyTorch itself had registered it
        formula.__module__ = "torch.utils.flop_counter"
    return formula


def _householder() -> Any:
    a, tau = torch.randn(5, 3), torch.randn(3)
    return lambda: torch.linalg.householder_product(a, tau)


def test_a_newly_registered_formula_never_replaces_a_checked_one(registry: dict[Any, Any]) -> None:
    """torch 2.15 registered a matrix-products-only formula for the CPU attention kernel; whatever
    FlopCounterMode registers, TorchScan's own count stands: q 1×4×64×32, rows 256, pairs 16,384:
    ``2·16,384·64 + 16,384 + 5·16,384 − 2·256 = 2,194,944``."""
    q = torch.randn(1, 4, 64, 32)
    before = torchscan.measure_flops(lambda: F.scaled_dot_product_attention(q, q, q))
    for packet in (
        torch.ops.aten._scaled_dot_product_flash_attention_for_cpu,
        torch.ops.aten.mm,
        torch.ops.aten.convolution_backward,
    ):
        registry[packet] = _fake(7, pytorch=True)
    after = torchscan.measure_flops(lambda: F.scaled_dot_product_attention(q, q, q))
    assert after["total"] == before["total"]
    assert (after["total"]["status"], after["total"]["value"]) == ("complete", 2_194_944)
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    assert torchscan.measure_flops(lambda: a @ b)["total"]["value"] == 2 * 3 * 4 * 5


def test_an_unchecked_inherited_formula_is_named_and_left_out(registry: dict[Any, Any]) -> None:
    workload = _householder()
    plain = torchscan.measure_flops(workload)
    assert plain["total"]["status"] == "partial"
    assert {d["code"] for d in plain["diagnostics"]} == {"uncounted_operator"}
    registry[HOUSEHOLDER] = _fake(1_000, pytorch=True)
    report = torchscan.measure_flops(workload)
    assert report["total"]["status"] == "partial"
    assert report["total"]["known_value"] == plain["total"]["known_value"]  # still a lower bound
    assert "aten.linalg_householder_product" not in report["by_operator"]
    (info,) = [d for d in report["diagnostics"] if d["code"] == "unverified_inherited_formula"]
    assert info["severity"] == "info" and info["operator"] == "aten.linalg_householder_product"
    assert "gives 1000 FLOPs over 1 call(s)" in info["message"] and torch.__version__ in info["message"]
    (warning,) = [d for d in report["diagnostics"] if d["code"] == "uncounted_operator"]
    assert warning["severity"] == "warning" and "not checked" in warning["message"]


def test_an_inherited_formula_checked_on_this_torch_counts(
    registry: dict[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    registry[HOUSEHOLDER] = _fake(1_000, pytorch=True)
    checked = {"aten.linalg_householder_product": frozenset({torch_versions.installed_release()})}
    monkeypatch.setattr(provenance, "CHECKED_INHERITED", checked)
    report = torchscan.measure_flops(_householder())
    assert report["by_operator"]["aten.linalg_householder_product"] == 1_000
    assert not [d for d in report["diagnostics"] if d["code"] == "unverified_inherited_formula"]
    assert report["total"]["status"] == "complete"
    # a formula another library registered is never "checked", whatever the table says
    registry[HOUSEHOLDER] = _fake(1_000)
    assert torchscan.measure_flops(_householder())["total"]["status"] == "partial"
    # nor on another torch release than the ones listed
    monkeypatch.setattr(
        provenance, "CHECKED_INHERITED", {"aten.linalg_householder_product": frozenset({"2.0.0"})}
    )
    registry[HOUSEHOLDER] = _fake(1_000, pytorch=True)
    assert torchscan.measure_flops(_householder())["total"]["status"] == "partial"


def test_nothing_is_inherited_on_the_running_tested_torch() -> None:
    """On every tested torch (this one in CI), TorchScan has its own formula or classification for
    every overload FlopCounterMode registers a formula for, so no count depends on PyTorch's."""
    from torchscan.analysis.dispatch import higher_order, higher_order_counts

    inherited = []
    for packet in flop_counter.flop_registry:
        if higher_order.is_higher_order(packet):  # flex_attention: the observer's own formula
            assert higher_order.operator_name(packet) in higher_order_counts.FORMULAS
            continue
        for name in packet.overloads():
            kind, _ = operator_resolution.classify_overload(getattr(packet, name))
            if kind == "inherited":
                inherited.append(f"{packet}.{name}")
    assert inherited == []
    assert provenance.CHECKED_INHERITED == {}


def test_corrections_name_operators_that_exist() -> None:
    for name in provenance.CORRECTIONS:
        namespace, _, op = name.partition(".")
        assert namespace == "aten" and hasattr(torch.ops.aten, op), name


# --- reports on a torch newer than the newest tested release (torch-versions.md 2) ------------------


def test_versions_parse_and_compare() -> None:
    assert torch_versions.release("2.15.0+cu132") == (2, 15, 0)
    assert torch_versions.release("2.16.0.dev20261104+cpu") == (2, 16, 0)
    assert torch_versions.release("3.0") == (3, 0, 0)
    assert torch_versions.is_tested("2.14.1+cu130") and not torch_versions.is_tested("2.14.0")
    assert torch_versions.newer_than_tested("2.16.0") and not torch_versions.newer_than_tested("2.14.0")
    with pytest.raises(ValueError, match="not a torch version"):
        torch_versions.release("nightly")
    releases = [torch_versions.release(version) for version in torch_versions.TESTED_TORCH_VERSIONS]
    assert sorted(releases) == releases  # oldest first: the last one is the newest tested


def test_every_report_on_an_untested_torch_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    x = torch.randn(2, 4)
    assert torchscan.measure_flops(lambda: model(x))["diagnostics"] == []  # a tested torch: nothing
    monkeypatch.setattr(torch, "__version__", "2.99.0+cpu")
    reports = {
        "flops": torchscan.measure_flops(lambda: model(x)),
        "analysis": torchscan.crawl_module(model, args=(x,), strict=True),  # info never fails strict
        "structure": torchscan.crawl_module(model, args=(x,), mode="structure"),
        "memory": torchscan.measure_memory(lambda: model(x).sum().backward()),
        "profile": torchscan.profile_workload(lambda: model(x), device="cpu"),
        "latency": torchscan.measure_latency(
            lambda: model(x), device="cpu", min_run_time=0.001, min_repeats=2
        ),
        "workload": torchscan.measure_workload(
            lambda: model(x), device="cpu", metrics=("flops",), profile=True, min_run_time=0.001
        ),
    }
    for kind, report in reports.items():
        notes = [d for d in report["diagnostics"] if d["code"] == "untested_torch_version"]
        assert len(notes) == 1, kind
        assert notes[0]["severity"] == "info" and "2.99.0+cpu" in notes[0]["message"], kind
        assert torch_versions.TESTED_TORCH_VERSIONS[-1] in notes[0]["message"], kind
    assert reports["flops"]["total"]["status"] == "complete"
    assert reports["analysis"]["totals"]["module_flops"]["status"] == "complete"
    assert reports["workload"]["context"]["profile_status"] == "complete"


def test_a_formula_returning_a_negative_count_is_a_gap_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchscan.formulas import operator_registry

    monkeypatch.setitem(operator_registry.SUPPLEMENTAL_FORMULAS, "aten.sin", lambda args, kwargs, out: -3)
    report = torchscan.measure_flops(lambda: torch.sin(torch.ones(4)))
    assert report["total"]["status"] == "partial" and report["total"]["known_value"] == 0
    (entry,) = report["diagnostics"]
    assert entry["code"] == "unsupported_operator_formula" and "negative" in entry["message"]


def test_a_tiny_gpt2_is_complete_with_the_same_attention_count_on_every_torch() -> None:
    """Issue #38: on torch 2.15 a transformers GPT-2 turned partial through FlopCounterMode's weaker CPU
    attention formula. On every tested torch it is complete, its attention counted by TorchScan's
    formula: per layer, causal over 8 tokens keeps 8·9/2 = 36 pairs per head, 72 for 2 heads over
    16 rows, head size 16: ``2·72·(16 + 16) + 72 + (5·72 − 2·16) = 5,008``; two layers 10,016."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=64)
    model = transformers.GPT2Model(config).eval()
    ids = torch.randint(0, 100, (1, 8), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        report = torchscan.measure_flops(lambda: model(ids))
    assert report["total"]["status"] == "complete", report["diagnostics"]
    assert report["by_operator"]["aten._scaled_dot_product_flash_attention_for_cpu"] == 10_016
