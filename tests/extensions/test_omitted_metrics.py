"""An omitted handler metric is not zero (truth.md 6, issue #39 item 3).

A caller handler that returns only some compute fields of a leaf leaves the others to the built-in
leaf formulas (extensions spec 4.2 step 3). Where no module formula covers the leaf (an unknown
type), an omitted field is ``unavailable`` with ``unsupported_module_metric`` on that row — never the
``complete 0`` of a functional estimate nobody asked for — unless an ancestor owns it.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torchscan import IncompleteAnalysisError, ModuleHandler, crawl_module

COMPUTE = ("module_flops", "macs", "dmas")


class Leaf(nn.Module):
    """Unknown to TorchScan: no module formula."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


class Quiet(nn.Module):
    """Unknown and doing no tensor work at all: a functional estimate would be a complete 0."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


class Owner(nn.Module):
    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x)


def _flops_only(call: object) -> dict[str, int]:
    return {"module_flops": 4}


def _row(report: dict, path: str) -> dict:
    return next(row for row in report["layers"] if row["path"] == path)


def _unsupported(report: dict, path: str) -> set[str]:
    return {
        d["metric"]
        for d in report["diagnostics"]
        if d["code"] == "unsupported_module_metric" and d["path"] == path
    }


@pytest.mark.parametrize("leaf", [Leaf, Quiet])
def test_omitted_metrics_of_an_unknown_leaf_are_unavailable(leaf: type[nn.Module]) -> None:
    # The example: module_flops 4 from the handler; macs and dmas came out complete 0.
    report = crawl_module(leaf(), args=(torch.ones(1, 2),), custom_modules={leaf: ModuleHandler(_flops_only)})
    metrics = _row(report, "")["metrics"]
    assert metrics["module_flops"]["status"] == "complete" and metrics["module_flops"]["value"] == 4
    for name in ("macs", "dmas"):
        assert metrics[name]["status"] == "unavailable"
        assert metrics[name]["value"] is None and metrics[name]["known_value"] is None
        assert report["totals"][name]["status"] == "unavailable"  # nothing else contributes
    assert {"macs", "dmas"} <= _unsupported(report, "")
    message = next(d["message"] for d in report["diagnostics"] if d["metric"] == "macs")
    assert "_flops_only" in message and leaf.__name__ in message
    assert list(metrics)[:4] == ["calls", "module_flops", "macs", "dmas"]  # canonical report order
    with pytest.raises(IncompleteAnalysisError):
        crawl_module(
            leaf(), args=(torch.ones(1, 2),), custom_modules={leaf: ModuleHandler(_flops_only)}, strict=True
        )


def test_a_total_over_an_omitted_metric_is_a_lower_bound() -> None:
    model = nn.Sequential(nn.Linear(2, 2), Leaf())
    report = crawl_module(model, args=(torch.ones(1, 2),), custom_modules={Leaf: ModuleHandler(_flops_only)})
    # Linear(2, 2) on one row: 2 x 2 = 4 MACs; the Leaf's MACs are unknown, so 4 is a lower bound.
    assert report["totals"]["macs"]["status"] == "partial"
    assert report["totals"]["macs"]["known_value"] == 4


def test_an_ancestor_that_owns_the_omitted_metrics_covers_them() -> None:
    def owner_estimate(call: object) -> dict[str, int]:
        return {"macs": 7, "dmas": 9}

    handlers = {
        Leaf: ModuleHandler(_flops_only),
        Owner: ModuleHandler(owner_estimate, subtree_metrics=frozenset({"macs", "dmas"})),
    }
    report = crawl_module(Owner(Leaf()), args=(torch.ones(1, 2),), custom_modules=handlers)
    leaf = _row(report, "inner")
    assert "macs" not in leaf["metrics"] and "dmas" not in leaf["metrics"]
    assert set(leaf["metric_owners"]) == {"macs", "dmas"}
    assert not _unsupported(report, "inner") & {"macs", "dmas"}
    assert (report["totals"]["macs"]["value"], report["totals"]["dmas"]["value"]) == (7, 9)
    assert report["totals"]["module_flops"]["value"] == 4


def test_a_known_leaf_keeps_its_built_in_formula_for_omitted_metrics() -> None:
    # extensions spec 4.2 step 3: nn.Linear has module formulas, so what the handler omits is measured.
    report = crawl_module(
        nn.Linear(2, 2), args=(torch.ones(1, 2),), custom_modules={nn.Linear: ModuleHandler(_flops_only)}
    )
    metrics = report["layers"][0]["metrics"]
    assert metrics["module_flops"]["value"] == 4
    # Linear(2, 2), one row: 2 x 2 = 4 MACs; DMAs 2 inputs + 6 parameters + 2 outputs = 10
    assert (metrics["macs"]["status"], metrics["macs"]["value"]) == ("complete", 4)
    assert (metrics["dmas"]["status"], metrics["dmas"]["value"]) == ("complete", 10)
    assert not _unsupported(report, "") & set(COMPUTE)


def test_an_owned_field_the_handler_omits_keeps_its_own_diagnostic() -> None:
    # Ownership is a commitment (5.3): custom_metric_unavailable, not a second code.
    handler = ModuleHandler(_flops_only, subtree_metrics=frozenset({"macs"}))
    report = crawl_module(Leaf(), args=(torch.ones(1, 2),), custom_modules={Leaf: handler})
    codes = {(d["code"], d["metric"]) for d in report["diagnostics"]}
    assert ("custom_metric_unavailable", "macs") in codes
    assert ("unsupported_module_metric", "macs") not in codes
    assert ("unsupported_module_metric", "dmas") in codes
