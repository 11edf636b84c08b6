"""crawl_module: the acceptance examples of analysis.md 10 and formulas.md C13/C14."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from torchscan import IncompleteAnalysisError, crawl_module, summary


def _layer(report, path, call_index=0):
    return next(l for l in report["layers"] if l["path"] == path and l["call_index"] == call_index)


def test_conv2d_quickstart():
    # analysis.md 10.1 / formulas C1: Nout = 8*30*30 = 7,200, terms = 27 -> 7,200*54 = 388,800.
    report = crawl_module(nn.Conv2d(3, 8, 3), (3, 32, 32))
    assert [l["path"] for l in report["layers"]] == [""]
    layer = report["layers"][0]
    assert layer["output"]["shape"] == [1, 8, 30, 30]
    assert layer["parameters"] == {"trainable": 224, "frozen": 0, "bytes": 896, "shared": False}
    assert layer["name"] == "conv2d"
    totals = report["totals"]
    assert totals["module_flops"]["status"] == "complete"
    assert totals["module_flops"]["value"] == 388_800
    assert totals["macs"]["value"] == 194_400
    assert totals["dmas"]["value"] == 201_824
    assert totals["operator_flops"] == report["operator_flops"]["total"]
    assert report["operator_flops"]["total"]["value"] == 388_800
    assert report["operator_flops"]["by_operator"] == {"aten.convolution": 388_800}
    assert totals["parameters"]["value"] == 224
    assert layer["metrics"]["receptive_field"]["value"] == 3
    assert json.loads(json.dumps(report)) == report


def test_context_and_inputs():
    report = crawl_module(nn.Linear(4, 2), (4,))
    context = report["context"]
    assert context["model_type"] == "torch.nn.modules.linear.Linear"
    assert context["execution_mode"] == "evaluation_no_grad"
    assert context["analysis_mode"] == "full"
    assert context["devices"] == ["cpu"]
    assert context["dtypes"] == ["torch.float32"]
    assert report["inputs"]["source"] == "generated"
    assert report["inputs"]["args"][0]["shape"] == [1, 4]


def test_functional_work_in_composite_is_estimated_by_functional_formulas():
    # analysis.md 10.3 / C14 as amended by real-models.md 1: lin(x) + x on (1, 4).
    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            return self.lin(x) + x

    report = crawl_module(Residual(), args=(torch.ones(1, 4),), strict=True)
    lin = _layer(report, "lin")
    assert lin["metrics"]["module_flops"]["value"] == 32
    assert lin["metrics"]["macs"]["value"] == 16
    assert lin["metrics"]["dmas"]["value"] == 28
    root = _layer(report, "")
    # The residual add: 4 outputs -> 4 FLOPs, 0 MACs, 4 + 4 reads + 4 writes = 12 DMAs.
    assert [root["metrics"][n]["value"] for n in ("module_flops", "macs", "dmas")] == [4, 0, 12]
    assert all(root["metrics"][n]["method"] == "torchscan_module_formula" for n in ("module_flops", "macs"))
    assert not [d for d in report["diagnostics"] if d["code"] == "unestimated_functional_work"]
    assert report["totals"]["module_flops"] == {
        "status": "complete",
        "value": 36,
        "known_value": 36,
        "unit": "FLOPs",
        "scope": "forward",
        "method": "torchscan_module_formula",
    }
    assert report["totals"]["macs"]["value"] == 16
    assert report["totals"]["dmas"]["value"] == 40  # 28 + 12
    op = report["operator_flops"]
    assert op["total"]["status"] == "complete" and op["total"]["value"] == 36
    assert op["by_operator"] == {"aten.add": 4, "aten.addmm": 32}


def test_shared_module_called_twice():
    # analysis.md 10.4: two records, the second with no parameters of its own.
    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            return self.lin(self.lin(x))

    report = crawl_module(Twice(), (4,))
    first, second = _layer(report, "lin", 0), _layer(report, "lin", 1)
    assert first["parameters"]["trainable"] == 20 and not first["parameters"]["shared"]
    assert second["parameters"]["trainable"] == 0 and second["parameters"]["shared"]
    assert report["totals"]["parameters"]["value"] == 20


def test_kwargs_scalars_never_leak_values():
    # analysis.md 10.5
    class Scaled(nn.Module):
        def forward(self, x, scale=1.0, tag=""):
            return x * scale

    report = crawl_module(Scaled(), args=(torch.ones(2),), kwargs={"scale": 2.0, "tag": "secret-text"})
    kwargs = report["inputs"]["kwargs"]
    assert kwargs["scale"] == {"kind": "scalar", "type": "float"}
    assert kwargs["tag"] == {"kind": "scalar", "type": "str"}
    assert "secret-text" not in json.dumps(report)


def _assert_clean(model, flags):
    for module in model.modules():
        assert not module._forward_hooks
        assert not module._forward_pre_hooks
    assert {m: m.training for m in model.modules()} == flags
    from torch.nn.modules import module as module_mod

    assert not module_mod._global_forward_hooks
    assert not module_mod._global_forward_pre_hooks


def test_forward_exception_propagates_and_state_is_restored():
    # analysis.md 10.6
    error = KeyError("boom")

    class Boom(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Sequential(nn.Linear(2, 2), nn.ReLU())

        def forward(self, x):
            self.inner(x)
            raise error

    model = Boom()
    model.inner.train()
    model.train(False)
    model.inner[1].train()
    flags = {m: m.training for m in model.modules()}
    with pytest.raises(KeyError) as caught:
        crawl_module(model, (2,))
    assert caught.value is error
    _assert_clean(model, flags)


@pytest.mark.parametrize("seed", range(100))
def test_fault_injection_at_random_submodule(seed):
    generator = torch.Generator().manual_seed(seed)
    depth = int(torch.randint(2, 6, (1,), generator=generator))
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(3, 3), nn.ReLU()]
    model = nn.Sequential(
        nn.Sequential(*layers[: len(layers) // 2]), nn.Sequential(*layers[len(layers) // 2 :])
    )
    modules = list(model.modules())
    victim = modules[int(torch.randint(0, len(modules), (1,), generator=generator))]
    for index, module in enumerate(modules):
        module.training = bool((seed + index) % 2)
    flags = {m: m.training for m in modules}
    error = RuntimeError(f"injected {seed}")

    def explode(*_):
        raise error

    handle = victim.register_forward_pre_hook(explode)
    mode = "structure" if seed % 3 == 0 else "full"
    try:
        with pytest.raises(RuntimeError) as caught:
            crawl_module(model, (3,), mode=mode)
    finally:
        handle.remove()
    assert caught.value is error
    _assert_clean(model, flags)


def test_caught_submodule_failure_is_recorded():
    class Fragile(nn.Module):
        def forward(self, x):
            raise ValueError("inner")

    class Tolerant(nn.Module):
        def __init__(self):
            super().__init__()
            self.fragile = Fragile()
            self.lin = nn.Linear(2, 2)

        def forward(self, x):
            try:
                self.fragile(x)
            except ValueError:
                pass
            return self.lin(x)

    report = crawl_module(Tolerant(), (2,))
    fragile = _layer(report, "fragile")
    assert fragile["output"] == {"kind": "failed"}
    assert fragile["metrics"]["module_flops"]["status"] == "unavailable"
    assert any(d["code"] == "module_forward_error" and d["path"] == "fragile" for d in report["diagnostics"])
    assert _layer(report, "lin")["metrics"]["module_flops"]["status"] == "complete"
    assert report["totals"]["module_flops"]["status"] == "partial"


def test_forward_returning_none_is_a_normal_call():
    class Nothing(nn.Module):
        def forward(self, x):
            return None

    report = crawl_module(Nothing(), (2,), mode="structure")
    assert report["layers"][0]["output"] == {"kind": "none"}


def test_structure_mode():
    # analysis.md 10.7
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU())
    report = crawl_module(model, (3, 8, 8), mode="structure", strict=True)
    assert report["totals"]["module_flops"] == {
        "status": "unavailable",
        "value": None,
        "known_value": None,
        "unit": "FLOPs",
        "scope": "forward",
        "method": "not_requested",
    }
    assert report["context"]["analysis_mode"] == "structure"
    assert all(set(l["metrics"]) == {"calls"} for l in report["layers"])
    op = report["operator_flops"]
    assert op["total"]["method"] == "not_requested" and op["by_operator"] == {} and op["diagnostics"] == []
    assert report["totals"]["parameters"]["value"] == 224


def test_sequential_model_c13():
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.MaxPool2d(2))
    report = crawl_module(model, (3, 32, 32))
    assert [(l["path"], l["call_index"]) for l in report["layers"]] == [("", 0), ("0", 0), ("1", 0), ("2", 0)]
    assert set(_layer(report, "")["metrics"]) == {"calls", "operator_flops_self", "operator_flops"}
    totals = report["totals"]
    # 388,800 + 7,200 + 1,800*3 = 401,400
    assert totals["module_flops"]["value"] == 401_400
    assert totals["macs"]["value"] == 199_800
    assert totals["dmas"]["value"] == 225_224
    assert totals["operator_flops"]["value"] == 401_400
    root = _layer(report, "")["metrics"]
    assert root["operator_flops"]["value"] == 401_400 and root["operator_flops_self"]["value"] == 0
    self_sum = sum(l["metrics"]["operator_flops_self"]["known_value"] for l in report["layers"])
    assert self_sum == totals["operator_flops"]["known_value"]


def test_strict_raises_with_report():
    class Atan(nn.Module):
        def forward(self, x):
            return torch.logcumsumexp(x @ x, 0)  # no formula: atan is now a pointwise row

    report = crawl_module(Atan(), args=(torch.ones(2, 2),))
    assert report["totals"]["operator_flops"]["status"] == "partial"
    assert report["totals"]["operator_flops"]["known_value"] == 16
    with pytest.raises(IncompleteAnalysisError) as caught:
        crawl_module(Atan(), args=(torch.ones(2, 2),), strict=True)
    assert isinstance(caught.value, RuntimeError)
    assert caught.value.report["totals"]["operator_flops"]["status"] == "partial"
    assert "operator_flops" in str(caught.value)


def test_generated_inputs_leave_global_rng_untouched():
    model = nn.Linear(3, 3)
    state = torch.random.get_rng_state()
    first = crawl_module(model, (3,))
    assert torch.equal(state, torch.random.get_rng_state())
    second = crawl_module(model, (3,))
    assert first["inputs"] == second["inputs"]


def test_multiple_generated_inputs_and_dtypes():
    class Pair(nn.Module):
        def forward(self, x, idx):
            return x.sum() + idx.sum()

    report = crawl_module(Pair(), [(2, 3), (4,)], dtype=[torch.float64, torch.int64], mode="structure")
    args = report["inputs"]["args"]
    assert args[0]["dtype"] == "torch.float64" and args[0]["shape"] == [1, 2, 3]
    assert args[1]["dtype"] == "torch.int64" and args[1]["shape"] == [1, 4]


def test_parameterless_model_and_zero_argument_call():
    class Const(nn.Module):
        def forward(self):
            return torch.zeros(2)

    report = crawl_module(Const(), args=())
    assert report["totals"]["parameters"]["value"] == 0
    assert report["inputs"] == {"source": "provided", "args": [], "kwargs": {}}


def test_summary_prints_and_returns_the_same_report(capsys):
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    report = summary(model, (4,))
    printed = capsys.readouterr().out
    assert "Total params: 20" in printed
    assert "Sequential" in printed
    assert report == crawl_module(model, (4,))


def test_summary_marks_partial_totals(capsys):
    class Atan(nn.Module):
        def forward(self, x):
            return torch.logcumsumexp(x, 0)  # no formula: atan is now a pointwise row

    summary(Atan(), (3,))
    printed = capsys.readouterr().out
    assert "known ≥" in printed
    assert "unavailable" in printed or "Diagnostics: " in printed
