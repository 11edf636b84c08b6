"""``by_phase`` of operator FLOPs (training-and-hardware.md 1, 2 and 4)."""

from __future__ import annotations

import pytest
import torch
import torch.utils.checkpoint as checkpoint
from torch import nn
from torch.optim import optimizer as optim_module

from torchscan.measure.flops import measure_flops
from torchscan.report.validate import _check_phases

PHASES = ("forward", "backward", "optimizer", "recompute")


def _mlp() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))


def _phases(report: dict) -> dict[str, int]:
    assert list(report["by_phase"]) == list(PHASES)
    for result in report["by_phase"].values():
        assert (result["unit"], result["scope"]) == ("FLOPs", "workload_phase")
        assert result["method"] == report["total"]["method"]
    _check_phases(report, "flops")  # the validator agrees: exact keys, sum equals the total
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
    pre, post = dict(optim_module._global_optimizer_pre_hooks), dict(optim_module._global_optimizer_post_hooks)

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
        report = measure_flops(lambda: checkpoint.checkpoint(block, x, use_reentrant=reentrant).sum().backward())
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


class Boom(RuntimeError):
    pass


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


@pytest.mark.parametrize("where", ["backward", "optimizer"])
def test_errors_leave_no_hook_and_reraise_the_same_object(where: str) -> None:
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    error = Boom(where)

    def fail_step(*args: object, **kwargs: object) -> None:
        raise error

    workload = _raising_in_backward
    if where == "optimizer":
        opt.step = torch.optim.Optimizer.profile_hook_step(fail_step)  # type: ignore[method-assign]

        def workload() -> None:
            model(torch.randn(4, 16)).sum().backward()
            opt.step()

    pre, post = dict(optim_module._global_optimizer_pre_hooks), dict(optim_module._global_optimizer_post_hooks)
    with pytest.raises(Boom) as caught:
        measure_flops(workload)
    assert caught.value is (ERROR if where == "backward" else error)
    assert dict(optim_module._global_optimizer_pre_hooks) == pre
    assert dict(optim_module._global_optimizer_post_hooks) == post
    assert not torch._C._is_torch_function_mode_enabled()
    assert torch.utils._python_dispatch._get_current_dispatch_mode() is None
    assert not nn.modules.module._global_forward_hooks
    assert not nn.modules.module._global_forward_pre_hooks
    # the next measurement starts clean: no optimizer phase left over from the raising step
    after = measure_flops(lambda: model(torch.randn(4, 16)))
    assert _phases(after)["optimizer"] == 0
