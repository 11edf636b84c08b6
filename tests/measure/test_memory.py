"""``measure_memory`` acceptance (memory.md 4): exact categories of a small AdamW training step.

The MLP is Linear(16,32)-ReLU-Linear(32,8), batch 4, float32. Its parameters are
(16*32 + 32) + (32*8 + 8) = 544 + 264 = 808 floats = 3,232 bytes; the first Linear's 544 floats are
2,176 bytes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from torchscan import measure_memory, measure_peak_memory
from torchscan.report.memory_schema import CATEGORIES
from torchscan.report.validate import load_report


def _mlp() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))


def _step(
    model: nn.Module, device: str = "cpu"
) -> tuple[Callable[[], None], torch.optim.Optimizer, list[Any]]:
    """One AdamW step without zero_grad; the loss is a pow/mean so every kernel is the same on meta."""
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad])
    x = torch.randn(4, 16, device=device)
    y = torch.randn(4, 8, device=device)

    def step() -> None:
        loss = (model(x) - y).pow(2).mean()
        loss.backward()
        optimizer.step()

    return step, optimizer, [x, y]


def _checked(report: Any) -> Any:
    """The report after a JSON round trip through the validator (what views and files get)."""
    return load_report(json.dumps(report))


def _last(report: Any, phase: str) -> dict[str, int]:
    """Categories at the last timeline point of ``phase`` (the first run of it)."""
    points = report["timeline"]
    first = next(i for i, p in enumerate(points) if p["phase"] == phase)
    index = first
    while index + 1 < len(points) and points[index + 1]["phase"] == phase:
        index += 1
    return points[index]["by_category"]


class _Reference:
    """A reference saved_tensors_hooks: unique storages packed by autograd (not inputs/parameters)."""

    def __init__(self, excluded: list[torch.Tensor]) -> None:
        self.excluded = {id(t.untyped_storage()) for t in excluded}
        self.saved: dict[int, int] = {}
        self.keep: list[Any] = []  # storages stay alive so their ids stay unique

    def pack(self, tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if id(storage) not in self.excluded:
            self.saved[id(storage)] = storage.nbytes()
            self.keep.append(storage)
        return tensor

    def run(self, fn: Callable[[], Any]) -> Any:
        with torch.autograd.graph.saved_tensors_hooks(self.pack, lambda t: t):
            return fn()


def test_mlp_adamw_step_categories_are_exact() -> None:
    model = _mlp()
    step, optimizer, inputs = _step(model)
    reference = _Reference([*model.parameters(), *inputs])
    report = _checked(reference.run(lambda: measure_memory(step, modules=model)))
    assert report["peak"]["status"] == "complete" and report["diagnostics"] == []
    assert report["at_peak"]["by_category"]["parameters"]["value"] == 3232
    assert all(point["by_category"]["parameters"] == 3232 for point in report["timeline"])
    assert _last(report, "backward")["gradients"] == 3232
    state = sum(t.nbytes for s in optimizer.state.values() for t in s.values())
    assert state == 4 * 4 + 2 * 3232  # four 0-dim float32 step counters, exp_avg and exp_avg_sq
    assert _last(report, "optimizer")["optimizer_state"] == state
    end_of_forward = _last(report, "forward")
    assert end_of_forward["activations"] == sum(reference.saved.values()) == 640  # ReLU out 512 + diff 128
    assert end_of_forward["inputs"] == 4 * 16 * 4 + 4 * 8 * 4  # x 256 + y 128
    assert report["baseline"]["value"] == 3232 + 384
    assert report["context"]["ledger_device"] == "cpu" and report["context"]["dtypes"] == ["float32"]
    peak = report["peak"]["value"]
    assert peak == max(sum(p["by_category"].values()) for p in report["timeline"])
    assert peak == sum(r["value"] for r in report["at_peak"]["by_category"].values())
    assert report["by_phase"]["recompute"]["status"] == "unavailable"
    assert max(r["value"] for r in report["by_phase"].values() if r["value"] is not None) == peak
    assert [(m["path"], m["call_index"], m["module_type"]) for m in report["by_module"]] == [
        ("", 0, "Sequential"),
        ("0", 0, "Linear"),
        ("1", 0, "ReLU"),
        ("2", 0, "Linear"),
    ]
    # Created in the calls: Linear outputs 512 and 128 bytes, the ReLU output 512 (saved for backward).
    assert [m["allocated"]["value"] for m in report["by_module"]] == [1152, 512, 512, 128]
    assert [m["activations_saved"]["value"] for m in report["by_module"]] == [512, 0, 512, 0]


def test_freezing_the_first_linear_removes_its_gradient_bytes() -> None:
    figures = []
    for frozen in (False, True):
        model = _mlp()
        model[0].requires_grad_(not frozen)
        step, _, _ = _step(model)
        figures.append(_last(_checked(measure_memory(step, modules=model)), "backward")["gradients"])
    assert figures[0] - figures[1] == 2176
    assert figures[1] == 1056


class _Block(nn.Module):
    def __init__(self, checkpointed: bool) -> None:
        super().__init__()
        self.inner = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 32))
        self.checkpointed = checkpointed

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.checkpointed:
            return checkpoint(self.inner, x, use_reentrant=False)  # type: ignore[no-any-return]
        return self.inner(x)  # type: ignore[no-any-return]


def test_checkpointing_keeps_only_what_the_checkpoint_saves() -> None:
    activations = []
    for checkpointed in (False, True):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), _Block(checkpointed), nn.ReLU(), nn.Linear(32, 8))
        step, _, inputs = _step(model)
        reference = _Reference([*model.parameters(), *inputs])
        report = _checked(reference.run(lambda: measure_memory(step, modules=model)))  # noqa: B023
        assert report["diagnostics"] == []
        end_of_forward = _last(report, "forward")["activations"]
        assert end_of_forward == sum(reference.saved.values())
        activations.append(end_of_forward)
        recompute = report["by_phase"]["recompute"]
        assert recompute["status"] == ("complete" if checkpointed else "unavailable")
    # Without the checkpoint the block's inner ReLU output (4 x 32 floats = 512 bytes) is saved too;
    # with it only the block's input, already saved by the ReLU before it, is kept.
    assert activations[0] - activations[1] == 512
    assert activations[1] == 512 + 512 + 128  # first ReLU out, second ReLU out, the loss difference


def _figures(report: Any) -> Any:
    return (
        report["peak"],
        report["baseline"],
        report["at_peak"],
        report["by_phase"],
        [point["by_category"] for point in report["timeline"]],
        [{k: v for k, v in m.items()} for m in report["by_module"]],
    )


def test_cpu_and_meta_give_identical_figures() -> None:
    reports = []
    for device in ("cpu", "meta"):
        model = _mlp() if device == "cpu" else _mlp().to_empty(device="meta")
        step, _, _ = _step(model, device)
        reports.append(_checked(measure_memory(step, modules=model, device=device)))
    assert reports[1]["context"]["ledger_device"] == "meta" and reports[1]["context"]["device"] == "meta"
    assert _figures(reports[0]) == _figures(reports[1])


def test_fake_tensors_match_meta() -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    model = _mlp().to_empty(device="meta")
    step, _, _ = _step(model, "meta")
    meta = _checked(measure_memory(step, modules=model))
    with FakeTensorMode():
        model = _mlp()
        step, _, _ = _step(model)
        fake = _checked(measure_memory(step, modules=model))
    assert fake["context"]["ledger_device"] == "fake"
    assert _figures(fake) == _figures(meta)


def test_cpu_peak_agrees_with_measure_peak_memory() -> None:
    torch.set_num_threads(1)
    peaks = []
    for measure in (measure_memory, measure_peak_memory):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64))
        step, _, _ = _step_wide(model)
        result = measure(step, device="cpu")
        peaks.append(result["peak"]["value"] if measure is measure_memory else result["peak_bytes"])
    assert abs(peaks[0] - peaks[1]) <= max(0.01 * peaks[1], 64 * 1024)


def _step_wide(model: nn.Module) -> tuple[Callable[[], None], torch.optim.Optimizer, list[Any]]:
    optimizer = torch.optim.AdamW(model.parameters())
    x, y = torch.randn(32, 64), torch.randn(32, 64)

    def step() -> None:
        (model(x) - y).pow(2).mean().backward()
        optimizer.step()

    return step, optimizer, [x, y]


def test_default_modules_are_every_module_called() -> None:
    model = _mlp()
    step, _, _ = _step(model)
    report = _checked(measure_memory(step))
    assert report["at_peak"]["by_category"]["parameters"]["value"] == 3232
    assert [m["path"] for m in report["by_module"]] == ["", "0", "1", "2"]


def test_peak_inside_a_module_names_the_call() -> None:
    class Wide(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            big = x.repeat(1, 1000)  # 4 x 16000 floats = 256,000 bytes, freed before returning
            return big.sum(dim=1)

    model = nn.Sequential(nn.Linear(16, 16), Wide())
    x = torch.randn(4, 16)
    with torch.no_grad():
        report = _checked(measure_memory(lambda: model(x), modules=model))
    assert report["at_peak"]["module"] == {"path": "1", "call_index": 0}
    assert report["at_peak"]["phase"] == "forward"
    # The Linear output (256 bytes), the repeat (256,000) and the sum (4 floats) at the sum's boundary.
    assert report["at_peak"]["by_category"]["temporaries"]["value"] == 256 + 256_000 + 16
    assert report["by_phase"]["backward"]["status"] == "unavailable"
    # Parameters 272 floats (1,088 bytes) and x (256) before; the Linear adds its 256-byte output.
    assert report["baseline"]["value"] == 1088 + 256
    peaks = {m["path"]: m["peak_inside"]["value"] for m in report["by_module"]}
    assert peaks == {"": report["peak"]["value"], "0": 1088 + 256 + 256, "1": report["peak"]["value"]}
    assert report["peak"]["value"] == 1088 + 256 + 256 + 256_000 + 16


def test_timeline_is_decimated_with_the_peak_kept() -> None:
    x = torch.zeros(8)

    def many() -> None:
        y = x
        for index in range(2100):
            y = y + 1
            if index == 1234:
                keep = torch.zeros(1000)  # 4,000 bytes live only at this point: the peak
                del keep

    report = _checked(measure_memory(many))
    assert report["timeline_events"] == 2101
    events = [point["event"] for point in report["timeline"]]
    assert len(events) <= 2000 and events[0] == 0 and events[-1] == 2101
    peak = report["peak"]["value"]
    assert any(sum(p["by_category"].values()) == peak for p in report["timeline"])
    assert (
        report["timeline"] == report["timeline"]
        and _checked(measure_memory(many, timeline=False))["timeline"] == []
    )


def test_untracked_storage_makes_totals_partial() -> None:
    numpy = pytest.importorskip("numpy")

    array = numpy.ones(16, dtype="float32")

    def workload() -> None:
        with torch._C._DisableTorchDispatch():  # made outside every dispatch mode: never seen created
            outside = torch.from_numpy(array) + 1
        (outside * 2).sum()

    report = _checked(measure_memory(workload))
    assert [d["code"] for d in report["diagnostics"]] == ["untracked_storage"]
    assert report["peak"]["status"] == "partial"
    assert report["at_peak"]["by_category"]["temporaries"]["status"] == "partial"
    assert report["at_peak"]["by_category"]["parameters"]["status"] == "complete"


def test_workload_saved_tensor_hooks_are_reported() -> None:
    model = _mlp()
    step, _, _ = _step(model)

    def offloaded() -> None:
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
            step()

    report = _checked(measure_memory(offloaded, modules=model))
    assert "saved_tensor_hooks_hidden" in [d["code"] for d in report["diagnostics"]]
    assert report["at_peak"]["by_category"]["activations"]["status"] == "partial"


def test_progress_callback_hears_one_pass() -> None:
    heard: list[tuple[str, float, float]] = []
    measure_memory(lambda: torch.ones(2) + 1, progress=lambda *update: heard.append(update))
    assert heard == [("memory_ledger", 0, 1), ("memory_ledger", 1, 1)]


def test_every_category_is_reported_in_order() -> None:
    report = measure_memory(lambda: torch.ones(2) + 1)
    assert tuple(report["at_peak"]["by_category"]) == CATEGORIES
    assert report["at_peak"]["module"] is None
    assert report["allocator"] == {}


def test_sparse_tensors_are_reported_not_counted() -> None:
    dense = torch.eye(4)

    def workload() -> None:
        (dense.to_sparse() * 2).to_dense()

    report = _checked(measure_memory(workload))
    diagnostics = [d for d in report["diagnostics"] if d["code"] == "tensor_subclass"]
    assert len(diagnostics) == 1 and "sparse_coo layout" in diagnostics[0]["message"]
    assert report["peak"]["status"] == "partial"


def test_lazy_module_parameters_count_once_materialised() -> None:
    model = nn.LazyLinear(8)
    x = torch.randn(2, 4)
    report = _checked(measure_memory(lambda: model(x), modules=model))
    assert report["diagnostics"] == []
    # Materialised inside the call: 8 x 4 + 8 floats, parameters for their whole life, not baseline.
    assert report["at_peak"]["by_category"]["parameters"]["value"] == (32 + 8) * 4
    assert report["baseline"]["value"] == 2 * 4 * 4  # the input only


def test_saved_outputs_are_not_kept_alive_without_backward() -> None:
    import gc
    import weakref

    x = torch.randn(8, requires_grad=True)
    refs: list[Any] = []

    def forward_only() -> None:
        y = x.exp()  # exp saves its output for backward; backward never runs
        refs.append(weakref.ref(y.untyped_storage()))

    report = _checked(measure_memory(forward_only))
    gc.collect()
    assert refs[0]() is None  # freed with its graph, as without the ledger
    assert report["at_peak"]["by_category"]["activations"]["value"] == 32


def test_value_dependent_sizes_on_fake_tensors_are_partial() -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    with FakeTensorMode(shape_env=ShapeEnv()):
        x = torch.randn(16)
        report = _checked(measure_memory(lambda: x.nonzero() * 2))
    assert [d["code"] for d in report["diagnostics"]] == ["data_dependent_operator"]
    assert "nonzero" in report["diagnostics"][0]["message"]
    assert report["peak"]["status"] == "partial"
    assert report["peak"]["known_value"] == 64  # x itself; the nonzero outputs have no known size
    assert all(r["status"] == "partial" for r in report["at_peak"]["by_category"].values())


def test_checkpoint_inputs_are_the_only_activations_of_a_checkpointed_block() -> None:
    torch.manual_seed(0)
    first = nn.Linear(16, 32)
    block = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 32))
    x = torch.randn(4, 16)

    def step() -> None:
        hidden = first(x)  # saved by nothing but the checkpoint (x and the weight are not activations)
        checkpoint(block, hidden, use_reentrant=False).sum().backward()

    report = _checked(measure_memory(step))
    assert report["diagnostics"] == []
    assert _last(report, "forward")["activations"] == 4 * 32 * 4  # the block's input, exactly
    assert report["by_phase"]["recompute"]["status"] == "complete"


def test_tiny_llama_training_step_is_identical_on_cpu_and_meta() -> None:
    transformers = pytest.importorskip("transformers")

    def build() -> nn.Module:
        torch.manual_seed(0)
        config = transformers.LlamaConfig(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=2,
            vocab_size=64,
            attn_implementation="eager",  # SDPA picks a fused kernel on CPU and the math path on meta
        )
        return transformers.LlamaForCausalLM(config)  # type: ignore[no-any-return]

    reports = []
    for device in ("cpu", "meta"):
        model = build() if device == "cpu" else build().to("meta")
        ids = torch.zeros(1, 8, dtype=torch.int64, device=device)
        optimizer = torch.optim.AdamW(model.parameters())

        def step() -> None:
            model(ids).logits.sum().backward()  # noqa: B023
            optimizer.step()  # noqa: B023
            optimizer.zero_grad()  # noqa: B023

        reports.append(_checked(measure_memory(step, modules=model)))
    assert reports[0]["diagnostics"] == [] and reports[1]["diagnostics"] == []
    assert _figures(reports[0]) == _figures(reports[1])
