"""``by_phase`` of operator FLOPs (training-and-hardware.md 1, 2 and 4)."""

from __future__ import annotations

import pytest
import torch
import torch.utils.checkpoint as checkpoint
from torch import nn
from torch.optim import optimizer as optim_module

from torchscan.measure.flops import measure_flops
from torchscan.report.validate import check_phases

PHASES = ("forward", "backward", "optimizer", "recompute")


def _mlp() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))


def _phases(report: dict) -> dict[str, int]:
    assert list(report["by_phase"]) == list(PHASES)
    for result in report["by_phase"].values():
        assert (result["unit"], result["scope"]) == ("FLOPs", "workload_phase")
        assert result["method"] == report["total"]["method"]
    check_phases(report, "flops")  # the validator agrees: exact keys, sum equals the total
    assert sum(r["known_value"] for r in report["by_phase"].values()) == report["total"]["known_value"]
    return {name: result["known_value"] for name, result in report["by_phase"].items()}


def test_forward_only_workload_has_zero_complete_training_phases() -> None:
    model, x = _mlp(), torch.randn(4, 16)
    report = measure_flops(lambda: model(x))
    phases = _phases(report)
    for name in ("backward", "optimizer", "recompute"):
        assert report["by_phase"][name]["status"] == "complete"
        assert phases[name] == 0
    assert phases["forward"] == report["total"]["value"] > 0


# Two-layer MLP of training-and-hardware.md 2, batch 4, loss = out.sum().
# forward: addmm 2·4·16·32 = 4096 and 2·4·32·8 = 2048 (PyTorch's formula: the products only),
#          relu 4·32 = 128, sum 4·8 − 1 = 31                                   -> 6303
# backward: weight grads 4096 + 2048, second Linear's input grad 2048 (the first input needs none),
#           bias grads sum over the batch (4·32 − 32 = 96, 4·8 − 8 = 24), threshold_backward 4·32 = 128
#                                                                               -> 8440
MLP_FORWARD = 2 * 4 * 16 * 32 + 2 * 4 * 32 * 8 + 4 * 32 + (4 * 8 - 1)
MLP_BACKWARD = 2 * 4 * 16 * 32 + 2 * 4 * 32 * 8 + 2 * 4 * 32 * 8 + (4 * 32 - 32) + (4 * 8 - 8) + 4 * 32


def test_two_layer_mlp_forward_and_backward_exact() -> None:
    model, x = _mlp(), torch.randn(4, 16)
    report = measure_flops(lambda: model(x).sum().backward())
    assert report["total"]["status"] == "complete"
    assert _phases(report) == {
        "forward": MLP_FORWARD,
        "backward": MLP_BACKWARD,
        "optimizer": 0,
        "recompute": 0,
    }
    assert all(result["status"] == "complete" for result in report["by_phase"].values())


def test_frozen_linear_removes_exactly_its_weight_gradient() -> None:
    x = torch.randn(4, 16)
    trained, frozen = _mlp(), _mlp()
    frozen[2].weight.requires_grad_(False)
    full = _phases(measure_flops(lambda: trained(x).sum().backward()))
    less = _phases(measure_flops(lambda: frozen(x).sum().backward()))
    assert full["forward"] == less["forward"]
    assert full["backward"] - less["backward"] == 2 * 4 * 32 * 8  # 2·B·i·o of Linear(32, 8)


def test_optimizer_step_is_its_own_phase_and_hooks_are_removed() -> None:
    model, x = _mlp(), torch.randn(4, 16)
    opt = torch.optim.AdamW(model.parameters())
    pre, post = (
        dict(optim_module._global_optimizer_pre_hooks),
        dict(optim_module._global_optimizer_post_hooks),
    )

    def step() -> None:
        model(x).sum().backward()
        opt.step()
        opt.zero_grad()

    report = measure_flops(step)
    phases = _phases(report)
    assert report["total"]["status"] == "complete"
    assert phases["forward"] == MLP_FORWARD
    assert phases["backward"] == MLP_BACKWARD
    assert phases["optimizer"] > 0
    assert dict(optim_module._global_optimizer_pre_hooks) == pre
    assert dict(optim_module._global_optimizer_post_hooks) == post


def test_checkpointed_block_recompute_equals_its_forward() -> None:
    torch.manual_seed(0)
    block = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))
    x = torch.randn(4, 16, requires_grad=True)
    plain = _phases(measure_flops(lambda: block(x)))

    def run(reentrant: bool) -> dict[str, int]:
        report = measure_flops(
            lambda: checkpoint.checkpoint(block, x, use_reentrant=reentrant).sum().backward()
        )
        assert report["total"]["status"] == "complete"
        assert all(result["status"] == "complete" for result in report["by_phase"].values())
        return _phases(report)

    for reentrant in (False, True):
        with checkpoint.set_checkpoint_early_stop(False):
            phases = run(reentrant)
        assert phases["recompute"] == plain["forward"], reentrant
        # the forward holds the block once plus the loss sum (4·16 − 1)
        assert phases["forward"] == plain["forward"] + 4 * 16 - 1
    # Non-reentrant early stop (PyTorch's default) ends the recompute once the last saved tensor
    # exists: the final Linear's addmm (2·4·32·16) is not re-run, and is not counted.
    assert run(False)["recompute"] == plain["forward"] - 2 * 4 * 32 * 16


def test_create_graph_backward_is_backward_not_recompute() -> None:
    # A double backward runs the first backward with grad mode on (create_graph=True); it is still
    # backward work. x³ on 3 elements: forward pow 3, sum 2; first backward: pow 3, mul·3 3, mul by
    # the incoming gradient 3 (9); second backward: the gradients of those three products (15).
    x = torch.randn(3, requires_grad=True)

    def step() -> None:
        (grad,) = torch.autograd.grad((x**3).sum(), x, create_graph=True)
        grad.sum().backward()

    report = measure_flops(step)
    phases = _phases(report)
    assert phases["recompute"] == 0
    assert phases["forward"] == 3 + 2 + 2  # x³, its sum, and the sum of the gradient
    assert phases["backward"] == report["total"]["value"] - phases["forward"] > 0


# AdamW on the MLP: 16·32 + 32 + 32·8 + 8 = 808 parameter elements in 4 tensors. Per element
# (optimizer_ops.fused_adam): decay 1, lerp 3, second moment 4, denominator 3, addcdiv 3 = 14; each
# step counter += 1 is one FLOP. SGD with momentum 0.9 from its second step: 4 per element.
ADAMW_STEP = 14 * 808 + 4
SGD_MOMENTUM_STEP = 4 * 808


@pytest.mark.parametrize("implementation", ["loop", "foreach", "fused"])
@pytest.mark.parametrize("kind", ["adamw", "sgd"])
def test_optimizer_implementations_count_the_same_update(kind: str, implementation: str) -> None:
    model, x = _mlp(), torch.randn(4, 16)
    options = {"loop": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}
    if kind == "adamw":
        opt: torch.optim.Optimizer = torch.optim.AdamW(model.parameters(), **options[implementation])
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, **options[implementation])

    def step() -> None:
        model(x).sum().backward()
        opt.step()
        opt.zero_grad()

    step()  # the momentum buffers exist from the second step on
    report = measure_flops(step)
    assert report["total"]["status"] == "complete", report["diagnostics"]
    assert _phases(report)["optimizer"] == (ADAMW_STEP if kind == "adamw" else SGD_MOMENTUM_STEP)


def test_uncounted_backward_operator_makes_only_backward_partial() -> None:
    class SortedGrad(torch.autograd.Function):
        @staticmethod
        def forward(ctx: object, value: torch.Tensor) -> torch.Tensor:
            return value * 2

        @staticmethod
        def backward(ctx: object, grad: torch.Tensor) -> torch.Tensor:
            return torch.logcumsumexp(grad, 0)  # aten.logcumsumexp has no formula: an honest gap

    x = torch.randn(3, requires_grad=True)
    report = measure_flops(lambda: SortedGrad.apply(x).sum().backward())
    statuses = {name: result["status"] for name, result in report["by_phase"].items()}
    assert statuses == {
        "forward": "complete",
        "backward": "partial",
        "optimizer": "complete",
        "recompute": "complete",
    }
    assert report["total"]["status"] == "partial"
    _phases(report)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda p: p.pop("recompute"), "exactly the keys"),
        (lambda p: p.update(extra=p["forward"]), "exactly the keys"),
        (lambda p: p["backward"].update(value=1, known_value=1), "sum exactly"),
        (lambda p: p["optimizer"].update(scope="workload"), "scope workload_phase"),
        (lambda p: p["optimizer"].update(method="other"), "method"),
        (lambda p: p["backward"].update(status="partial", value=None), "complete exactly when"),
    ],
)
def test_validator_refuses_inconsistent_phases(change: object, message: str) -> None:
    model, x = _mlp(), torch.randn(4, 16)
    report = measure_flops(lambda: model(x).sum().backward())
    change(report["by_phase"])  # type: ignore[operator]
    with pytest.raises(ValueError, match=message):
        check_phases(report, "flops")


@pytest.mark.parametrize("outer_reentrant", [False, True])
def test_nested_checkpoints_recompute_both_forwards(outer_reentrant: bool) -> None:
    # A non-reentrant checkpoint inside a checkpointed block: backward re-runs the block (which runs
    # the inner forward once, without saving it) and then the inner block again for its own backward.
    torch.manual_seed(0)
    inner = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))
    outer = nn.Linear(16, 16)
    x = torch.randn(4, 16, requires_grad=True)

    def block(value: torch.Tensor) -> torch.Tensor:
        return outer(checkpoint.checkpoint(inner, value, use_reentrant=False)).relu()

    inner_forward = measure_flops(lambda: inner(x))["total"]["value"]
    block_forward = measure_flops(lambda: block(x))["total"]["value"]
    with checkpoint.set_checkpoint_early_stop(False):
        report = measure_flops(
            lambda: checkpoint.checkpoint(block, x, use_reentrant=outer_reentrant).sum().backward()
        )
    phases = _phases(report)
    assert phases["recompute"] == block_forward + inner_forward
    assert phases["forward"] == block_forward + 4 * 16 - 1  # the block once and the loss sum


class Boom(RuntimeError):
    pass


class _FailingSGD(torch.optim.SGD):
    """An optimizer whose step raises after doing part of its work (inside the step hooks)."""

    error = Boom("inside optimizer.step")

    def step(self, closure: object = None) -> None:  # type: ignore[override]
        super().step()
        raise self.error


def _raising_in_backward() -> None:
    class Fail(torch.autograd.Function):
        @staticmethod
        def forward(ctx: object, value: torch.Tensor) -> torch.Tensor:
            return value * 2

        @staticmethod
        def backward(ctx: object, grad: torch.Tensor) -> torch.Tensor:
            raise ERROR

    x = torch.randn(3, requires_grad=True)
    Fail.apply(x).sum().backward()


ERROR = Boom("inside backward")


def _no_hook_left(pre: dict, post: dict) -> None:
    assert dict(optim_module._global_optimizer_pre_hooks) == pre
    assert dict(optim_module._global_optimizer_post_hooks) == post
    assert torch.utils._python_dispatch._get_current_dispatch_mode() is None
    assert not nn.modules.module._global_forward_hooks
    assert not nn.modules.module._global_forward_pre_hooks
    assert not nn.modules.module._global_backward_hooks
    assert not nn.modules.module._global_backward_pre_hooks


@pytest.mark.parametrize("where", ["backward", "optimizer"])
def test_errors_leave_no_hook_and_reraise_the_same_object(where: str) -> None:
    model = _mlp()
    opt = _FailingSGD(model.parameters(), lr=0.1)
    workload = _raising_in_backward
    if where == "optimizer":

        def workload() -> None:
            model(torch.randn(4, 16)).sum().backward()
            opt.step()

    pre, post = (
        dict(optim_module._global_optimizer_pre_hooks),
        dict(optim_module._global_optimizer_post_hooks),
    )
    with pytest.raises(Boom) as caught:
        measure_flops(workload)
    assert caught.value is (ERROR if where == "backward" else _FailingSGD.error)
    _no_hook_left(pre, post)
    # the next measurement starts clean: no optimizer phase left over from the raising step
    after = measure_flops(lambda: model(torch.randn(4, 16)))
    assert _phases(after)["optimizer"] == 0


def test_step_on_another_thread_is_not_this_threads_optimizer_phase() -> None:
    import threading

    model, other = _mlp(), _mlp()
    for parameter in other.parameters():
        parameter.grad = torch.ones_like(parameter)
    started, release = threading.Event(), threading.Event()

    class Slow(torch.optim.SGD):
        def step(self, closure: object = None) -> None:  # type: ignore[override]
            started.set()
            release.wait(5)
            super().step()

    slow = Slow(other.parameters(), lr=0.1)
    worker = threading.Thread(target=slow.step)

    def workload() -> None:
        worker.start()
        started.wait(5)  # the other thread is inside its step (its pre hook ran)
        model(torch.randn(4, 16))
        release.set()
        worker.join()

    report = measure_flops(workload)
    # the other thread's step ran inside this call's hooks; this thread only ran a forward
    assert _phases(report)["optimizer"] == 0
    assert _phases(report)["forward"] == 2 * 4 * 16 * 32 + 2 * 4 * 32 * 8 + 4 * 32


def test_measure_workload_operator_report_carries_validated_phases() -> None:
    from torchscan.measure.workload import measure_workload
    from torchscan.report.validate import validate_benchmark_report

    model, x = _mlp(), torch.randn(4, 16)
    report = measure_workload(lambda: model(x).sum().backward(), device="cpu", metrics=("flops",))
    validate_benchmark_report(report)
    assert _phases(report["operator_flops"]) == {
        "forward": MLP_FORWARD,
        "backward": MLP_BACKWARD,
        "optimizer": 0,
        "recompute": 0,
    }
