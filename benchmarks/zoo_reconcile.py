"""Training steps reconciled per convolution and per linear call (truth.md 1, issues #32 and #39).

For every ``nn.ConvNd``, ``nn.ConvTransposeNd`` and ``nn.Linear`` call of one real training step, the
library's operator FLOPs of that call are compared with closed forms written here from the call's
shapes alone (nothing in this file reads a TorchScan or FlopCounterMode formula):

* forward: ``2·MACs`` (the product; a bias fused into ``addmm``/``convolution`` is not counted by the
  convention, a separate bias ``add`` costs one FLOP per output element);
* backward: ``2·MACs`` for the input gradient when the call's input needs one, ``2·MACs`` for the
  weight gradient when the weight needs one, and the bias gradient when the bias needs one — for a
  convolution ``N·Cout·spatial_out`` additions (truth.md 1), for a linear layer the ``sum`` over its
  rows (``rows·out − out``, the convention's reduction count).

So backward ÷ forward is 2, or 1 where the input needs no gradient (a first layer), plus the bias.

**Why per call and not ``by_module``.** ``measure_flops``' ``by_module`` follows PyTorch's module
tracker: a module's backward label is entered when its output gradient arrives and left only when
its *input's* producer runs, so on a branching graph (an Inception block, a depthwise branch beside
a pointwise one, a residual) other branches' backward kernels land under the label as well (measured:
GoogLeNet 33 of 64 convolution labels over-attributed, MobileNetV2 10 of 53). The per-call figure is
therefore measured by re-running each recorded call alone — the same module, the same input tensor
(shape, strides, ``requires_grad``), the same parameter flags — under ``measure_flops``: its forward,
then its backward from a gradient of its output. Calls that agree on every shape and flag share one
measurement. The whole step ties these back: its ``aten.convolution`` and
``aten.convolution_backward`` FLOPs must equal the sums over the recorded calls (no convolution ran
outside a module call, and the isolated counts are the step's own). A convolution whose weight a
parametrization computes (weight norm, a fake quantiser) compares its convolution kernels only; a
linear layer with a parametrized weight, or a subclass with its own ``forward``, is not reconciled
and is named.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.nn.utils import parametrize

from torchscan.measure.flops import measure_flops

CONV_KERNELS = ("aten.convolution", "aten.convolution_backward")
_CONV_FORWARDS = {
    nn.Conv1d.forward,
    nn.Conv2d.forward,
    nn.Conv3d.forward,
    nn.ConvTranspose1d.forward,
    nn.ConvTranspose2d.forward,
    nn.ConvTranspose3d.forward,
}


def reconcilable(module: nn.Module) -> bool:
    """A convolution or linear layer running PyTorch's own ``forward`` (subclasses with their own
    ``forward`` compute something else and are left out, and so is a linear layer whose weight a
    parametrization computes: its products cannot be told from the parametrization's)."""
    forward = type(module).forward
    if isinstance(module, nn.Linear):
        return forward is nn.Linear.forward and not parametrize.is_parametrized(module)
    return isinstance(module, nn.modules.conv._ConvNd) and forward in _CONV_FORWARDS


@dataclass(frozen=True)
class Closed:
    """Closed-form FLOPs of one call: the forward product, the bias add, and each backward gradient."""

    macs: int
    input_grad: bool
    weight_grad: bool
    bias_grad: int  # FLOPs of the bias gradient (0 when the bias needs none or is absent)
    bias_forward: int  # FLOPs of a separately dispatched bias add (0 when fused)

    @property
    def forward(self) -> int:
        return 2 * self.macs + self.bias_forward

    @property
    def backward(self) -> int:
        return 2 * self.macs * (self.input_grad + self.weight_grad) + self.bias_grad


def _grad(tensor: torch.Tensor | None, enabled: bool) -> bool:
    return bool(enabled and tensor is not None and tensor.requires_grad)


def closed_form(
    module: nn.Module, inp: torch.Tensor, out_shape: torch.Size, input_grad: bool, grad_enabled: bool
) -> Callable[[bool], Closed]:
    """The call's closed form, given whether the library dispatched a separate bias ``add``.

    Convolution: ``MACs = N·Cout·Π(out spatial)·(Cin/groups)·Π(kernel)``; transposed, each input
    element meets ``Cout/groups·Π(kernel)`` weights: ``N·Cin·Π(in spatial)·(Cout/groups)·Π(kernel)``.
    Linear: ``rows·in·out`` with ``rows = numel(input)/in``.
    """
    bias = getattr(module, "bias", None)
    weight_grad = _grad(module.weight, grad_enabled)
    bias_needed = _grad(bias, grad_enabled)
    if isinstance(module, nn.Linear):
        rows = inp.numel() // module.in_features
        macs = rows * module.in_features * module.out_features
        bias_grad = rows * module.out_features - module.out_features if bias_needed else 0
        add = rows * module.out_features if bias is not None else 0
    else:
        spatial = len(module.kernel_size)
        batch = inp.shape[0] if inp.dim() == spatial + 2 else 1
        kernel = math.prod(module.kernel_size)
        out_spatial = math.prod(out_shape[-spatial:])
        if module.transposed:
            per = module.out_channels // module.groups
            macs = batch * module.in_channels * math.prod(inp.shape[-spatial:]) * per * kernel
        else:
            per = module.in_channels // module.groups
            macs = batch * module.out_channels * out_spatial * per * kernel
        bias_grad = batch * module.out_channels * out_spatial if bias_needed else 0
        add = 0  # ``aten.convolution`` takes the bias itself
    grads = input_grad and grad_enabled

    def build(separate_add: bool) -> Closed:
        return Closed(macs, grads, weight_grad, bias_grad, add if separate_add else 0)

    return build


@dataclass
class Call:
    """One recorded conv/linear call of the step: the module, its input and the grad flags."""

    path: str
    module: nn.Module
    inp: torch.Tensor
    out_shape: torch.Size
    grad_enabled: bool

    def key(self) -> tuple[Any, ...]:
        """Everything the counts of the call depend on (shapes, strides, hyper-parameters, flags)."""
        module = self.module
        params = tuple(
            (name, tuple(p.shape), p.requires_grad) for name, p in module.named_parameters(recurse=False)
        )
        config = tuple(
            str(getattr(module, name, None))
            for name in ("stride", "padding", "dilation", "groups", "output_padding", "padding_mode")
        )
        inp = self.inp
        return (
            type(module),
            params,
            module.bias is None,
            config,
            tuple(inp.shape),
            inp.stride(),
            inp.dtype,
            inp.requires_grad,
            self.grad_enabled,
        )


def _value(result: dict[str, Any]) -> int:
    return int(result["value"] if result["status"] == "complete" else result["known_value"] or 0)


@dataclass
class Isolated:
    """The library's counts of one call measured alone, and the closed form beside them."""

    forward: int
    forward_status: str
    backward: int
    backward_status: str
    conv_forward: int  # ``aten.convolution`` FLOPs (the step tie-back)
    conv_backward: int  # ``aten.convolution_backward`` FLOPs
    closed: Closed
    kernels_only: bool = False  # a parametrized convolution: only its convolution kernels compare

    @property
    def right(self) -> bool:
        """Both phases complete and equal to the closed forms (for a parametrized convolution the
        kernels alone compare: the parametrization's own operators may be uncounted)."""
        complete = self.kernels_only or self.forward_status == self.backward_status == "complete"
        forward, backward = self.compared()
        return complete and forward == self.closed.forward and backward == self.closed.backward

    def compared(self) -> tuple[int, int]:
        """The call's forward and backward FLOPs under comparison: the whole call, or for a
        parametrized convolution (its weight computed in the call) the convolution kernels alone."""
        if self.kernels_only:
            return self.conv_forward, self.conv_backward
        return self.forward, self.backward


def isolate(call: Call) -> Isolated:
    """Measure ``call`` alone: forward, then backward from a gradient of ones on its output."""
    module = call.module
    x = call.inp.detach().requires_grad_(call.inp.requires_grad)
    for parameter in module.parameters(recurse=False):
        parameter.grad = None  # no gradient accumulation from the step or an earlier call
    outputs: list[torch.Tensor] = []
    with torch.set_grad_enabled(call.grad_enabled):
        forward = measure_flops(lambda: outputs.append(module(x)))
    out = outputs[0]
    if out.requires_grad:
        grad = torch.ones_like(out)
        backward = measure_flops(lambda: out.backward(grad))
    else:
        backward = measure_flops(lambda: None)
    for parameter in module.parameters(recurse=False):
        parameter.grad = None
    # A linear layer's bias is fused into ``addmm`` unless the input's layout makes PyTorch run
    # ``matmul`` and a separate ``add`` (which ran is read from the operator names, not their counts).
    separate_add = isinstance(module, nn.Linear) and (
        "aten.add" in forward["by_operator"] or "aten.add_" in forward["by_operator"]
    )
    build = closed_form(module, call.inp, call.out_shape, call.inp.requires_grad, call.grad_enabled)
    return Isolated(
        _value(forward["total"]),
        forward["total"]["status"],
        _value(backward["total"]),
        backward["total"]["status"],
        forward["by_operator"].get(CONV_KERNELS[0], 0),
        backward["by_operator"].get(CONV_KERNELS[1], 0),
        build(separate_add),
        parametrize.is_parametrized(module),
    )


@dataclass
class Recorder:
    """Forward hooks on every reconcilable layer of a model, recording each call (no dispatch)."""

    model: nn.Module
    calls: list[Call] = field(default_factory=list)
    skipped: set[str] = field(default_factory=set)

    def __enter__(self) -> Recorder:
        self._handles = []
        for path, module in self.model.named_modules():
            if isinstance(module, (nn.Linear, nn.modules.conv._ConvNd)):
                if reconcilable(module):
                    self._handles.append(module.register_forward_hook(self._hook(path)))
                else:
                    self.skipped.add(f"{path} ({type(module).__name__})")
        return self

    def __exit__(self, *exc_info: Any) -> None:
        for handle in self._handles:
            handle.remove()

    def _hook(self, path: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
            if args and isinstance(args[0], torch.Tensor) and isinstance(output, torch.Tensor):
                self.calls.append(Call(path, module, args[0], output.shape, torch.is_grad_enabled()))

        return hook


def reconcile(calls: list[Call], step_by_operator: dict[str, int]) -> dict[str, Any]:
    """Every call measured (once per distinct key) and compared; the step's convolution tie-back."""
    measured: dict[tuple[Any, ...], Isolated] = {}
    wrong: list[dict[str, Any]] = []
    right = 0
    sums = {"forward": 0, "backward": 0, "closed_forward": 0, "closed_backward": 0}
    conv = dict.fromkeys(CONV_KERNELS, 0)
    for call in calls:
        key = call.key()
        if key not in measured:
            measured[key] = isolate(call)
        result = measured[key]
        forward, backward = result.compared()
        sums["forward"] += forward
        sums["backward"] += backward
        sums["closed_forward"] += result.closed.forward
        sums["closed_backward"] += result.closed.backward
        conv[CONV_KERNELS[0]] += result.conv_forward
        conv[CONV_KERNELS[1]] += result.conv_backward
        if result.right:
            right += 1
        elif len(wrong) < 8:  # enough to see the pattern; the count says how many
            wrong.append(_describe(call, result))
    tie = {name: (step_by_operator.get(name, 0), conv[name]) for name in CONV_KERNELS}
    return {
        "calls": len(calls),
        "distinct": len(measured),
        "right": right,
        "wrong": wrong,
        "sums": sums,
        "conv_tie": {name: {"step": step, "calls": total} for name, (step, total) in tie.items()},
        "conv_tie_holds": all(step == total for step, total in tie.values()),
    }


def _describe(call: Call, result: Isolated) -> dict[str, Any]:
    module = call.module
    closed = result.closed
    forward, backward = result.compared()
    products = forward - closed.bias_forward
    return {
        "path": call.path,
        "type": type(module).__name__,
        "groups": getattr(module, "groups", 1),
        "forward": forward,
        "closed_forward": closed.forward,
        "backward": backward,
        "closed_backward": closed.backward,
        "statuses": [result.forward_status, result.backward_status],
        "backward_over_forward": round((backward - closed.bias_grad) / products, 3) if products else None,
        "expected_ratio": closed.input_grad + closed.weight_grad,
    }


def lower_bound(by_phase: dict[str, dict[str, Any]], sums: dict[str, int]) -> dict[str, Any]:
    """The lower-bound rule (truth.md 6) on one step, per phase and in total.

    Reference per phase = the library's phase value with its conv/linear calls replaced by their
    closed forms (every other operator at the library's count: those formulas are the reference
    suite's to check). A complete phase must equal it; a partial one's ``known_value`` must not
    exceed it.
    """
    replaced = {
        "forward": sums["closed_forward"] - sums["forward"],
        "backward": sums["closed_backward"] - sums["backward"],
    }
    checks: dict[str, Any] = {}
    totals = {"library": 0, "reference": 0, "complete": True}
    for phase, result in by_phase.items():
        library = _value(result)
        reference = library + replaced.get(phase, 0)
        complete = result["status"] == "complete"
        holds = library == reference if complete else library <= reference
        checks[phase] = {
            "status": result["status"],
            "library": library,
            "reference": reference,
            "holds": holds,
        }
        totals["library"] += library
        totals["reference"] += reference
        totals["complete"] = totals["complete"] and complete
    library, reference = totals["library"], totals["reference"]
    holds = library == reference if totals["complete"] else library <= reference
    checks["total"] = {
        "status": "complete" if totals["complete"] else "partial",
        "library": library,
        "reference": reference,
        "holds": holds,
    }
    return {"phases": checks, "holds": all(check["holds"] for check in checks.values())}
