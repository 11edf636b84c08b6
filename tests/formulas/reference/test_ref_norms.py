"""Reference suite: normalization (truth.md §1, §5): batch, layer, group, instance and RMS norm.

The reference is a re-implementation from element-wise operators and sums (``elementary.py``),
counted by the per-element convention of formulas.md A.4 and checked value by value against the
kernel (forward output, running statistics, and every gradient autograd produces). It writes the
nominal algorithms of formulas.md A.5.9/A.5.10 and training-and-hardware.md 2 step by step:

* forward, two-pass: ``mean = Σx / n``; ``d = x − mean``; ``var = Σ d·d / n``; ``std = sqrt(var + ε)``;
  ``y = (x − mean) / std`` (the subtract again); ``y·w + b``. RMS: ``x · rsqrt(Σ x·x / n + ε) · w``.
  BatchNorm in evaluation normalizes with the running statistics; in training it also updates them:
  ``rm·(1 − m) + mean·m`` and ``rv·(1 − m) + var·M/(M − 1)·m``.
* backward, from the saved statistics: ``x̂ = (x − mean)·rstd``; ``g' = g·w``;
  ``dx = rstd·(g' − Σg'/n − x̂·Σ(g'·x̂)/n)``; ``dw = Σ g·x̂`` and ``db = Σ g`` over everything but the
  parameters' axes. BatchNorm in evaluation: ``invstd = rsqrt(rv + ε)``, ``dx = g·w·invstd``.

Instance norm reaches the batch-norm kernels on a ``(1, B·C, …)`` view; local response norm reaches
average pooling over a zero-padded tensor (its windows always fit). RMS norm is decomposed on the CPU,
so its fused backward is dispatched on meta tensors.
"""

from __future__ import annotations

import math
import random
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torchscan
from reference.elementary import elementary_count, reduce_sum
from reference.harness import cases, library_count, seeded
from torchscan.formulas.operator_registry import supplemental_formula
from torchscan.modules import module_dmas, module_flops, module_macs

BATCH_NORM = {1: nn.BatchNorm1d, 2: nn.BatchNorm2d, 3: nn.BatchNorm3d}
INSTANCE_NORM = {1: nn.InstanceNorm1d, 2: nn.InstanceNorm2d, 3: nn.InstanceNorm3d}


# --- the re-implementation -----------------------------------------------------------------------


def normalize(xs: torch.Tensor, dims: tuple[int, ...], n: int, eps: float) -> torch.Tensor:
    """Two-pass normalization of ``xs`` over ``dims`` (``n`` values per row)."""
    mean = reduce_sum(xs, dims) / n
    d = xs - mean
    var = reduce_sum(d * d, dims) / n
    return (xs - mean) / torch.sqrt(var + eps)


def batch_statistics(xs: torch.Tensor, dims: tuple[int, ...], n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and biased variance (computed outside the counter, as the forward saves them)."""
    mean = xs.mean(dim=dims, keepdim=True) if dims else xs
    var = ((xs - mean) ** 2).mean(dim=dims, keepdim=True) if dims else torch.zeros_like(xs)
    return mean, var


def channel_shape(x: torch.Tensor) -> tuple[int, ...]:
    """Per-channel parameters broadcast along axis 1."""
    return (1, x.shape[1], *([1] * (x.dim() - 2)))


def input_gradient(
    xs: torch.Tensor, gw: torch.Tensor, mean: torch.Tensor, rstd: torch.Tensor, dims: tuple, n: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(dx, x̂)`` in the statistics' layout: ``rstd·(g' − Σg'/n − x̂·Σ(g'·x̂)/n)``."""
    xhat = (xs - mean) * rstd
    m1 = reduce_sum(gw, dims) / n
    m2 = reduce_sum(gw * xhat, dims) / n
    return rstd * (gw - m1 - xhat * m2), xhat


# --- cases ----------------------------------------------------------------------------------------


def draw(rng: random.Random) -> tuple[str, nn.Module, torch.Tensor]:
    """A random normalization module (its parameters and buffers randomised) and an input."""
    kind = rng.choice(["layer", "layer", "group", "rms", "batch", "batch", "instance"])
    generator = seeded(rng)
    empty = rng.random() < 0.05
    if kind in ("layer", "rms"):
        shape = [rng.randint(1, 4) for _ in range(rng.randint(1, 3))]
        lead = [0 if empty else rng.randint(1, 3) for _ in range(rng.randint(0 if not empty else 1, 2))]
        affine = rng.random() < 0.7
        if kind == "layer":
            module: nn.Module = nn.LayerNorm(shape, elementwise_affine=affine, bias=rng.random() < 0.7)
        else:
            module = nn.RMSNorm(shape, eps=rng.choice([None, 1e-5]), elementwise_affine=affine)
        x = torch.randn((*lead, *shape), generator=generator)
    elif kind == "group":
        groups, per_group = rng.randint(1, 3), rng.randint(1, 3)
        spatial = [rng.randint(1, 4) for _ in range(rng.randint(0, 2))]
        if per_group * math.prod(spatial) < 2:  # PyTorch asks two values per group
            spatial.append(2)
        module = nn.GroupNorm(groups, groups * per_group, affine=rng.random() < 0.7)
        x = torch.randn(0 if empty else rng.randint(1, 3), groups * per_group, *spatial, generator=generator)
    else:
        rank = rng.randint(1, 3)
        channels = rng.randint(1, 4)
        spatial = [
            rng.randint(1, 3) for _ in range(rank if kind == "instance" or rank > 1 else rng.randint(0, 1))
        ]
        if kind == "instance" and math.prod(spatial) < 2:  # statistics need two values per instance
            spatial[-1] = 2
        affine, track = rng.random() < 0.7, rng.random() < 0.7
        factory = BATCH_NORM[rank] if kind == "batch" else INSTANCE_NORM[rank]
        module = factory(
            channels, affine=affine, track_running_stats=track, momentum=rng.choice([0.1, 0.3, None])
        )
        batch = rng.randint(1, 3) if kind == "instance" else rng.randint(2, 3)
        x = torch.randn(batch, channels, *spatial, generator=generator)
        module.train(rng.random() < 0.5)
        if getattr(module, "running_mean", None) is not None:
            with torch.no_grad():
                module.running_mean.copy_(torch.randn(channels, generator=generator))
                module.running_var.copy_(torch.rand(channels, generator=generator) + 0.5)
    with torch.no_grad():
        for param in module.parameters():
            param.copy_(torch.randn(param.shape, generator=generator))
            param.requires_grad_(rng.random() < 0.8)
    return kind, module, x


def forward_reference(kind: str, module: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, int, tuple, dict]:
    """The module's output recomputed from element-wise operators, its count, the running-statistics
    updates, and what a backward needs. Gradients live in the layout the kernel sees: ``(1, B·C, …)``
    for instance norm (its affine parameters repeated ``B`` times), the input's otherwise."""
    xd = x.double()
    weight = None if getattr(module, "weight", None) is None else module.weight.detach().double()
    bias = None if getattr(module, "bias", None) is None else module.bias.detach().double()
    eps = module.eps if module.eps is not None else torch.finfo(x.dtype).eps
    repeat = x.shape[0] if kind == "instance" else 1
    if kind in ("layer", "rms"):
        k = len(module.normalized_shape)
        dims, n = tuple(range(x.dim() - k, x.dim())), math.prod(module.normalized_shape)
        xs, affine_shape, param_dims = xd, tuple(module.normalized_shape), tuple(range(x.dim() - k))
    elif kind == "group":
        xs = xd.reshape(x.shape[0], module.num_groups, math.prod(x.shape[1:]) // module.num_groups)
        dims, n = (2,), xs.shape[2]
        affine_shape, param_dims = channel_shape(x), (0, *range(2, x.dim()))
    else:
        xs = xd.reshape(1, -1, *x.shape[2:]) if kind == "instance" else xd
        dims, n = (0, *range(2, xs.dim())), xs.numel() // xs.shape[1]
        affine_shape, param_dims = channel_shape(xs), dims
    grad_shape = xs.shape if kind == "instance" else x.shape
    if weight is not None and kind == "instance":
        weight = weight.repeat(repeat)
    if bias is not None and kind == "instance":
        bias = bias.repeat(repeat)
    running = getattr(module, "running_mean", None) is not None
    from_batch = kind != "batch" or module.training or not running
    if kind == "instance" and running and not module.training:
        from_batch = False
    mean, var = batch_statistics(xs, dims, n)
    rm = rv = None
    if running:
        rm = module.running_mean.detach().double().repeat(repeat).reshape(channel_shape(xs))
        rv = module.running_var.detach().double().repeat(repeat).reshape(channel_shape(xs))
    tracked = int(getattr(module, "num_batches_tracked", 0) or 0)
    momentum = getattr(module, "momentum", None)
    # momentum None: BatchNorm's cumulative average; InstanceNorm passes 0.0 (statistics kept)
    factor = momentum if momentum is not None else (0.0 if kind == "instance" else 1.0 / (tracked + 1))

    def program() -> tuple[torch.Tensor, tuple]:
        updates: tuple = ()
        if kind == "rms":
            y = xs * torch.rsqrt(reduce_sum(xs * xs, dims) / n + eps)
        elif from_batch:
            y = normalize(xs, dims, n, eps)
            if kind in ("batch", "instance") and running and module.training:
                updates = (rm * (1 - factor) + mean * factor, rv * (1 - factor) + var * n / (n - 1) * factor)
        else:
            y = (xs - rm) / torch.sqrt(rv + eps)
        y = y.reshape(grad_shape)
        if weight is not None:
            y = y * weight.reshape(affine_shape)
        if bias is not None:
            y = y + bias.reshape(affine_shape)
        return y.reshape(x.shape), updates

    (y, updates), counter = elementary_count(program)
    if kind == "rms":
        saved_mean, saved_var = torch.zeros_like(mean), (xs * xs).mean(dim=dims, keepdim=True)
    else:
        saved_mean, saved_var = (mean, var) if from_batch else (rm, rv)
    state = {
        "xs": xs, "dims": dims, "n": n, "eps": eps, "weight": weight, "from_batch": from_batch,
        "mean": saved_mean, "var": saved_var, "affine_shape": affine_shape, "param_dims": param_dims,
        "grad_shape": grad_shape,
    }  # fmt: skip
    return y, counter.flops, updates, state


def backward_reference(kind: str, x: torch.Tensor, g: torch.Tensor, state: dict, mask: list[bool]) -> tuple:
    """Gradients recomputed from element-wise operators in the kernel's layout, and their count
    (``mask``: which of input, weight, bias want one). The saved statistics (``rstd``) come from the
    forward; an evaluation BatchNorm computes its ``invstd`` in the kernel."""
    xs, dims, n, weight, param_dims = (
        state["xs"],
        state["dims"],
        state["n"],
        state["weight"],
        state["param_dims"],
    )
    gs, xg = g.double().reshape(state["grad_shape"]), x.double().reshape(state["grad_shape"])
    w = None if weight is None else weight.reshape(state["affine_shape"])
    if kind == "rms":
        rstd = torch.rsqrt(state["var"] + state["eps"])
    else:
        rstd = 1 / torch.sqrt(state["var"] + state["eps"])

    def program() -> list:
        grads: list = [None, None, None]
        if not state["from_batch"]:  # BatchNorm with running statistics, in evaluation
            invstd = torch.rsqrt(state["var"] + state["eps"])
            if mask[0]:
                grads[0] = (gs * w if w is not None else gs) * invstd
            if mask[1] and w is not None:
                grads[1] = reduce_sum(gs * ((xg - state["mean"]) * invstd), param_dims)
        else:
            gw = (gs * w if w is not None else gs).reshape(xs.shape) if mask[0] else None
            xhat = None
            if kind == "rms" and (mask[0] or (mask[1] and w is not None)):
                xhat = xs * rstd
                if gw is not None:
                    grads[0] = rstd * (gw - xhat * (reduce_sum(gw * xhat, dims) / n))
            elif gw is not None:
                grads[0], xhat = input_gradient(xs, gw, state["mean"], rstd, dims, n)
            elif mask[1] and w is not None:
                xhat = (xs - state["mean"]) * rstd
            if mask[1] and w is not None:
                grads[1] = reduce_sum(gs * xhat.reshape(gs.shape), param_dims)
        if mask[2]:
            grads[2] = reduce_sum(gs, param_dims)
        return grads

    return elementary_count(program)


# --- the test -------------------------------------------------------------------------------------


def norm_operators(by_operator: dict[str, int]) -> int:
    """FLOPs of the normalization kernels of a report (batch-norm kernels of instance norm included)."""
    return sum(value for name, value in by_operator.items() if "norm" in name)


def per_parameter(grad: torch.Tensor, kind: str, x: torch.Tensor) -> torch.Tensor:
    """A reference gradient in the module's layout (instance norm's repeated parameters summed)."""
    if kind == "instance" and grad.numel() != x.numel():
        return grad.reshape(x.shape[0], x.shape[1]).sum(0)
    return grad.reshape(-1)


@pytest.mark.parametrize("seed, rng", cases("normalization"))
def test_normalization_kernels_count_their_arithmetic(seed: int, rng: random.Random) -> None:
    """Forward and backward operator FLOPs (real dispatch) and module FLOPs equal the element-wise
    re-implementation's count, whose values (outputs, running statistics, gradients) equal the kernel's."""
    kind, module, x = draw(rng)
    params = [getattr(module, name, None) for name in ("weight", "bias")]
    leaf = x.clone().requires_grad_(
        rng.random() < 0.8 or not any(p is not None and p.requires_grad for p in params)
    )
    y_ref, forward_ref, updates, state = forward_reference(kind, module, x)
    forward = library_count(lambda: module(leaf))
    assert forward.status == "complete", forward.diagnostics
    if updates:  # the one forward above updated the running statistics as the reference did
        for buffer, update in zip((module.running_mean, module.running_var), updates, strict=True):
            want = update.reshape(x.shape[0], -1).mean(0) if kind == "instance" else update.reshape(-1)
            torch.testing.assert_close(buffer.double(), want, rtol=1e-4, atol=1e-5)
    y = module(leaf)
    torch.testing.assert_close(y.detach().double(), y_ref, rtol=1e-4, atol=1e-4)
    counted = forward.total if kind == "rms" else norm_operators(forward.by_operator)
    assert counted == forward_ref, forward.by_operator

    # backward from a random gradient: the kernel's gradients and the re-implementation's agree
    mask = [leaf.requires_grad, *(p is not None and p.requires_grad for p in params)]
    if any(mask):
        g = torch.randn(y.shape, generator=seeded(rng))
        wanted = [t for t, m in zip([leaf, *params], mask, strict=True) if m]
        grads, counter = backward_reference(kind, x, g, state, mask)
        expected = iter(torch.autograd.grad(module(leaf), wanted, g))
        for index, got in enumerate(grads):
            if got is not None:
                reference = got.reshape(-1) if index == 0 else per_parameter(got, kind, x)
                torch.testing.assert_close(
                    reference, next(expected).double().reshape(-1), rtol=1e-3, atol=1e-3
                )
        assert norm_backward_count(kind, module, leaf, g, x) == counter.flops

    if kind in ("layer", "group", "rms", "batch"):
        check_module_formulas(kind, module, x, forward_ref)
    elif seed % 5 == 0:
        # instance norm has no module formula: crawl_module (evaluation mode) estimates it from its
        # batch-norm kernel as the matching BatchNorm module, and its other operators as themselves
        layer = torchscan.crawl_module(module, args=(x,))["layers"][0]["metrics"]
        assert layer["module_flops"]["value"] == library_count(lambda: module.eval()(x)).total


def norm_backward_count(
    kind: str, module: nn.Module, leaf: torch.Tensor, g: torch.Tensor, x: torch.Tensor
) -> int:
    """The library's count of the normalization backward kernel, dispatched for real (the fused RMS
    backward, which the CPU decomposes, on meta tensors with the same arguments)."""
    if kind != "rms":
        out = module(leaf)
        report = library_count(lambda: out.backward(g))
        assert report.status == "complete", report.diagnostics
        return norm_operators(report.by_operator)
    weight = module.weight
    eps = module.eps if module.eps is not None else torch.finfo(x.dtype).eps
    k = len(module.normalized_shape)
    rstd = torch.rsqrt((x * x).mean(dim=tuple(range(x.dim() - k, x.dim())), keepdim=True) + eps)
    meta = [t.to("meta") if t is not None else None for t in (g, x, rstd, weight)]
    mask = [leaf.requires_grad, weight is not None and weight.requires_grad]
    shape = list(module.normalized_shape)
    report = library_count(
        lambda: torch.ops.aten._fused_rms_norm_backward(meta[0], meta[1], shape, meta[2], meta[3], mask)
    )
    assert report.status == "complete", report.diagnostics
    return report.total


def check_module_formulas(kind: str, module: nn.Module, x: torch.Tensor, reference_flops: int) -> None:
    """Module FLOPs equal the re-implementation's count; MACs and DMAs follow formulas.md A.5.9/A.5.10:
    MACs ``N·(1 + W)`` (the normalizing multiply and the weight's), plus for a BatchNorm updating its
    running statistics ``C·(M − 1) + C·(2M − 1) + 4C``; DMAs as the tables (P parameter elements)."""
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        training = module.training
        out = module(x)
        module.train(training)
    n, w = x.numel(), int(getattr(module, "weight", None) is not None)
    assert module_flops(module, (x,), out) == reference_flops
    macs = n * (1 + w)
    params = sum(p.numel() for p in module.parameters())
    if kind == "batch":
        c, m = x.shape[1], x.numel() // x.shape[1]
        both = module.running_mean is not None and module.running_var is not None
        updating = module.training and module.track_running_stats
        macs += (c * (m - 1) + c * (2 * m - 1) + 4 * c) if updating and n else 0
        affine = module.weight is not None and module.bias is not None
        dmas = (
            n
            + 1
            + 2 * c * both
            + 2 * c * affine
            + (module.momentum is not None)
            + (1 + 2 * c) * (updating and both)
        )
        dmas += out.numel()
    elif n == 0:
        macs, dmas = 0, 0
    elif kind == "rms":
        rows = n // math.prod(module.normalized_shape)
        dmas = 3 * n + 4 * rows + 1 + w * (2 * n + params)
    else:
        rows = x.shape[0] * module.num_groups if kind == "group" else n // math.prod(module.normalized_shape)
        dmas = 4 * n + 5 * rows + 1 + params + 2 * n * (params > 0)
    assert (module_macs(module, x, out), module_dmas(module, x, out)) == (macs, dmas)


# --- local response norm: average pooling over an explicitly padded tensor -------------------------


@pytest.mark.parametrize("size, shape", [(3, (2, 4, 3)), (2, (1, 5, 2, 3)), (4, (2, 3, 2, 2, 2))])
def test_local_response_norm_pools_full_windows(size: int, shape: tuple[int, ...]) -> None:
    """``F.local_response_norm`` pads the squared input with zeros along the channels and average-pools
    ``size`` channels: every window fits the padded tensor, so the pooling counts ``size`` taps per
    output (``N·size``) and its backward ``N·size + N``."""
    x = torch.rand(shape, requires_grad=True)
    forward = library_count(lambda: F.local_response_norm(x, size))
    y = F.local_response_norm(x, size)
    backward = library_count(lambda: y.backward(torch.ones_like(y)))
    n = x.numel()
    pooled = {k: v for k, v in forward.by_operator.items() if "pool" in k}
    assert (forward.status, sum(pooled.values())) == ("complete", n * size)
    assert sum(v for k, v in backward.by_operator.items() if "pool" in k) == n * size + n


def test_empty_normalization_backward_counts_zero() -> None:
    """A zero batch: the backward kernels run on no values; their parameter gradients are zero-filled,
    not reduced (was a negative count, ``2·0 − P``, that made ``measure_flops`` raise)."""
    for module, shape in ((nn.LayerNorm(4), (0, 4)), (nn.GroupNorm(2, 4), (0, 4, 3))):
        x = torch.rand(shape, requires_grad=True)
        y = module(x)
        report = library_count(lambda y=y: y.backward(torch.ones_like(y)))
        assert (report.status, report.total) == ("complete", 0)


# --- every batch-norm kernel variant ----------------------------------------------------------------

aten = torch.ops.aten


def _with_flag(training: bool):
    return lambda x, w, b, rm, rv: (x, w, b, rm, rv, training, 0.1, 1e-5)


def _without_flag(x, w, b, rm, rv):
    return (x, w, b, rm, rv, 0.1, 1e-5)


def _no_stats(x, w, b, rm, rv):
    return (x, w, b, True, 0.1, 1e-5)


FORWARD_VARIANTS = {
    # name: (operator, training, running statistics given, arguments(x, weight, bias, mean, var))
    "native_batch_norm": (aten.native_batch_norm, True, True, _with_flag(True)),
    "native_batch_norm-no-stats": (aten.native_batch_norm, True, False, _with_flag(True)),
    "native_batch_norm-eval": (aten.native_batch_norm, False, True, _with_flag(False)),
    "_native_batch_norm_legit": (aten._native_batch_norm_legit, True, True, _with_flag(True)),
    "_native_batch_norm_legit.no_stats": (aten._native_batch_norm_legit.no_stats, True, False, _no_stats),
    "_native_batch_norm_legit_no_training": (
        aten._native_batch_norm_legit_no_training,
        False,
        True,
        _without_flag,
    ),
    "_batch_norm_with_update": (aten._batch_norm_with_update, True, True, _without_flag),
    "_batch_norm_no_update": (aten._batch_norm_no_update, False, True, _without_flag),
    "_native_batch_norm_legit_functional": (
        aten._native_batch_norm_legit_functional,
        True,
        True,
        _with_flag(True),
    ),
    "_batch_norm_with_update_functional": (
        aten._batch_norm_with_update_functional,
        True,
        True,
        _without_flag,
    ),
}


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4), (3, 2, 2, 3)])
@pytest.mark.parametrize("variant", FORWARD_VARIANTS)
def test_batch_norm_kernel_variants(variant: str, shape: tuple[int, ...], affine: bool) -> None:
    """Every batch-norm forward overload PyTorch reaches (eager, export, functionalization) counts what
    the element-wise re-implementation of its configuration counts, and its values agree."""
    operator, training, stats, arguments = FORWARD_VARIANTS[variant]
    module = BATCH_NORM[max(len(shape) - 2, 1)](shape[1], affine=affine, track_running_stats=stats)
    module.train(training)
    x = torch.randn(shape)
    y_ref, reference, _, _ = forward_reference("batch", module, x)
    weight, bias = (module.weight, module.bias) if affine else (None, None)
    running = (module.running_mean.clone(), module.running_var.clone()) if stats else (None, None)
    report = library_count(lambda: operator(*arguments(x, weight, bias, *running)))
    assert (report.status, report.total) == ("complete", reference)
    y = operator(*arguments(x, weight, bias, *(t.clone() if t is not None else None for t in running)))[0]
    torch.testing.assert_close(y.detach().double(), y_ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4), (3, 2, 2, 3)])
def test_gpu_only_normalization_kernels(shape: tuple[int, ...], training: bool) -> None:
    """cuDNN's and MIOpen's batch norm and the fused RMS norm run on GPUs only: their formulas, called
    with the tensors PyTorch passes, count what the element-wise re-implementation of the same
    configuration counts."""
    module = BATCH_NORM[max(len(shape) - 2, 1)](shape[1]).train(training)
    x = torch.randn(shape)
    _, reference, _, _ = forward_reference("batch", module, x)
    arguments = (x, module.weight, module.bias, module.running_mean, module.running_var, training, 0.1, 1e-5)
    for name in ("cudnn_batch_norm", "miopen_batch_norm"):
        formula = supplemental_formula(f"aten.{name}")
        assert formula is not None and formula(arguments, {}, None) == reference
    for affine in (True, False):
        rms = nn.RMSNorm(list(shape[1:]), eps=1e-6, elementwise_affine=affine)
        _, reference, _, _ = forward_reference("rms", rms, x)
        for name in ("rms_norm", "_fused_rms_norm"):
            formula = supplemental_formula(f"aten.{name}")
            assert formula is not None
            assert formula((x, list(shape[1:]), rms.weight, 1e-6), {}, None) == reference


@pytest.mark.parametrize("update", [True, False])
@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4), (3, 2, 2, 3)])
def test_batch_norm_backward_variants(shape: tuple[int, ...], update: bool) -> None:
    """``batch_norm_backward(…, update, …)`` is ``native_batch_norm_backward`` with ``train = update``
    on the CPU; cuDNN's and MIOpen's kernels (reached on GPUs only, so their formulas are called with
    the same tensors) are training backward passes with all three gradients."""
    module = BATCH_NORM[max(len(shape) - 2, 1)](shape[1]).train(update)
    x, g = torch.randn(shape), torch.randn(shape)
    _, _, _, state = forward_reference("batch", module, x)
    save_mean = state["mean"].reshape(-1).float() if update else module.running_mean
    save_invstd = (1 / torch.sqrt(state["var"] + 1e-5)).reshape(-1).float() if update else module.running_var
    reserve = torch.empty(0, dtype=torch.uint8)
    weight = module.weight.detach()
    mask = [True, True, True]
    _, counter = backward_reference("batch", x, g, state, mask)
    call = lambda: aten.batch_norm_backward(  # noqa: E731
        g,
        x,
        weight,
        module.running_mean,
        module.running_var,
        save_mean,
        save_invstd,
        update,
        1e-5,
        mask,
        reserve,
    )
    report = library_count(call)
    assert (report.status, report.total) == ("complete", counter.flops)
    if update:
        for name in ("cudnn_batch_norm_backward", "miopen_batch_norm_backward"):
            formula = supplemental_formula(f"aten.{name}")
            assert formula is not None
            arguments = (x, g, weight, module.running_mean, module.running_var, save_mean, save_invstd, 1e-5)
            assert formula(arguments, {}, None) == counter.flops


# --- SyncBatchNorm's kernels (GPU only: formulas called with the tensors PyTorch would pass) ---------


@pytest.mark.parametrize("shape", [(2, 3, 4, 4), (3, 2, 5), (4, 3), (0, 3, 2)])
def test_sync_batch_norm_kernels(shape: tuple[int, ...]) -> None:
    """``nn.SyncBatchNorm``'s per-rank kernels re-implemented from element-wise operators, their values
    checked against ``native_batch_norm``'s saved statistics and gradients (the same mathematics on one
    rank), their counts against the formulas; ``batch_norm_update_stats`` runs on the CPU, so it is
    dispatched for real."""
    x, g = torch.randn(shape, dtype=torch.float64), torch.randn(shape, dtype=torch.float64)
    c, eps = shape[1], 1e-5
    dims, n = (0, *range(2, len(shape))), max(math.prod(shape) // c, 1)
    view = channel_shape(x)
    weight, bias = torch.rand(c, dtype=torch.float64), torch.rand(c, dtype=torch.float64)
    running_mean, running_var = torch.zeros(c, dtype=torch.float64), torch.ones(c, dtype=torch.float64)
    formulas = {name: supplemental_formula(f"aten.{name}") for name in (
        "batch_norm_stats", "batch_norm_elemt", "batch_norm_backward_reduce", "batch_norm_backward_elemt",
    )}  # fmt: skip

    # batch_norm_stats(x, eps) -> (mean, invstd): mean, two-pass variance, rsqrt(var + eps)
    def stats() -> tuple[torch.Tensor, torch.Tensor]:
        mean = reduce_sum(x, dims) / n
        d = x - mean
        return mean, torch.rsqrt(reduce_sum(d * d, dims) / n + eps)

    (mean, invstd), counter = elementary_count(stats)
    if x.numel() == 0:
        # an empty rank (SyncBatchNorm with no local batch): the backward's sums are zero-filled, only
        # grad_weight's per-channel product remains (was 4·0 − 2C + C, negative)
        arguments = (g, x, mean.reshape(-1), invstd.reshape(-1), weight, True, True, True)
        assert formulas["batch_norm_backward_reduce"](arguments, {}, None) == c
        return
    assert formulas["batch_norm_stats"]((x, eps), {}, None) == counter.flops
    _, save_mean, save_invstd = torch.native_batch_norm(x, weight, bias, None, None, True, 0.1, eps)
    torch.testing.assert_close(mean.reshape(-1), save_mean)
    torch.testing.assert_close(invstd.reshape(-1), save_invstd)

    # batch_norm_elemt(x, weight, bias, mean, invstd, eps): (x − mean)·invstd·w + b
    y, counter = elementary_count(lambda: (x - mean) * invstd * weight.reshape(view) + bias.reshape(view))
    torch.testing.assert_close(y, torch.native_batch_norm(x, weight, bias, None, None, True, 0.1, eps)[0])
    assert (
        formulas["batch_norm_elemt"]((x, weight, bias, save_mean, save_invstd, eps), {}, None)
        == counter.flops
    )

    # batch_norm_backward_reduce -> (Σ dy, Σ dy·(x − mean), grad_weight = Σ dy·(x − mean)·invstd)
    def backward_reduce() -> tuple[torch.Tensor, ...]:
        sum_dy = reduce_sum(g, dims)
        sum_dy_xmu = reduce_sum(g * (x - mean), dims)
        return sum_dy, sum_dy_xmu, sum_dy_xmu * invstd

    (sum_dy, sum_dy_xmu, grad_weight), counter = elementary_count(backward_reduce)
    _, native_dw, native_db = torch.ops.aten.native_batch_norm_backward(
        g, x, weight, None, None, save_mean, save_invstd, True, eps, [True, True, True]
    )
    torch.testing.assert_close(grad_weight.reshape(-1), native_dw)
    torch.testing.assert_close(sum_dy.reshape(-1), native_db)
    arguments = (g, x, save_mean, save_invstd, weight, True, True, True)
    assert formulas["batch_norm_backward_reduce"](arguments, {}, None) == counter.flops

    # batch_norm_backward_elemt: per channel the means of Σ dy and Σ dy·xmu over the count, invstd²
    # and the two factors (5C); per element (dy − mean_dy − (x − mean)·k)·invstd·w (5N)
    count = torch.tensor([n], dtype=torch.int32)

    def backward_elemt() -> torch.Tensor:
        mean_dy, mean_dy_xmu = sum_dy / n, sum_dy_xmu / n
        k = mean_dy_xmu * (invstd * invstd)
        scale = invstd * weight.reshape(view)
        return (g - mean_dy - (x - mean) * k) * scale

    grad_input, counter = elementary_count(backward_elemt)
    native_dx = torch.ops.aten.native_batch_norm_backward(
        g, x, weight, None, None, save_mean, save_invstd, True, eps, [True, False, False]
    )[0]
    torch.testing.assert_close(grad_input, native_dx)
    arguments = (g, x, save_mean, save_invstd, weight, sum_dy.reshape(-1), sum_dy_xmu.reshape(-1), count)
    assert formulas["batch_norm_backward_elemt"](arguments, {}, None) == counter.flops

    # batch_norm_update_stats(x, running_mean, running_var, momentum) -> (mean, unbiased var), updating
    def update_stats() -> tuple[torch.Tensor, torch.Tensor]:
        m = reduce_sum(x, dims) / n
        d = x - m
        var = reduce_sum(d * d, dims) / n
        return running_mean * 0.9 + m.reshape(-1) * 0.1, running_var * 0.9 + var.reshape(-1) * n / (
            n - 1
        ) * 0.1

    (new_mean, new_var), counter = elementary_count(update_stats)
    report = library_count(lambda: torch.batch_norm_update_stats(x, running_mean, running_var, 0.1))
    assert (report.status, report.total) == ("complete", counter.flops)
    torch.testing.assert_close((running_mean, running_var), (new_mean, new_var))
