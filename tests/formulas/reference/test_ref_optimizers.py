"""Reference checks of the optimizer kernels (training-and-hardware.md 2): the per-parameter loop,
the ``_foreach_*`` list kernels and the fused kernels of one optimizer step count the same FLOPs.

The reference is each optimizer's update written element by hand (reference (b)): :data:`UPDATES`
lists, per optimizer, the operations ``torch.optim``'s documented algorithm performs on every
parameter element, in the form PyTorch computes them, priced by the B.8 costs (a multiply, add,
subtract, divide, square root, absolute value, comparison or negation 1; an operand scaled by a
coefficient other than 1 one more multiply; ``lerp`` 3: difference, product, add), plus the scalar
work done once per parameter tensor on its 0-d state (the step counter ``t ← t + 1``, NAdam's
``μ`` product). Bias corrections and learning-rate schedules computed as Python numbers are not
tensor work. The randomised cases draw the optimizer, its options (momentum, dampening, Nesterov,
weight decay, AMSGrad, maximize, centered, …), the implementation (``foreach=False``, ``foreach=True``,
``fused=True`` where the CPU has it), 1–4 parameters of random shapes (one sometimes without a
gradient: skipped) and 1–3 steps; the library's ``optimizer`` phase must equal the reference.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
import torch

from reference.harness import cases, library_count, seeded

Options = dict[str, Any]
# (options, step t ≥ 1) -> (FLOPs per parameter element, FLOPs per parameter tensor)
Update = Callable[[Options, int], tuple[int, int]]


def sgd(options: Options, step: int) -> tuple[int, int]:
    """``g ← −g`` (maximize) 1; ``g ← g + λθ`` 2; momentum ``b ← μb + (1 − τ)g`` 2 (+1 when ``τ ≠ 0``
    scales ``g``) from the second step on — the first step copies ``b ← g`` (0); Nesterov
    ``g ← g + μb`` 2; ``θ ← θ − γg`` 2. No step counter."""
    cost = options["maximize"] + 2 * (options["weight_decay"] != 0) + 2
    if options["momentum"] != 0:
        cost += (2 + (options["dampening"] != 0)) * (step > 1) + 2 * options["nesterov"]
    return cost, 0


def adam(decoupled: bool) -> Update:
    """Adam / AdamW: maximize 1; weight decay ``g ← g + λθ`` 2 (Adam) or ``θ ← θ(1 − γλ)`` 1 (AdamW);
    ``m ← lerp(m, g, 1 − β1)`` 3; ``v ← β2·v + (1 − β2)·g²`` 1 + 3 (a scale, then a product, a scale
    and an add); AMSGrad ``v̂ ← max(v̂, v)`` 1; ``d ← √v / √bc2 + ε`` 3; ``θ ← θ − (γ/bc1)·m/d`` 3.
    One step counter per tensor."""

    def update(options: Options, step: int) -> tuple[int, int]:
        decay = (1 if decoupled else 2) * (options["weight_decay"] != 0)
        return options["maximize"] + decay + 3 + 4 + options["amsgrad"] + 3 + 3, 1

    return update


def adagrad(options: Options, step: int) -> tuple[int, int]:
    """maximize 1; weight decay 2; ``s ← s + g²`` 2 (``addcmul``); ``d ← √s + ε`` 2;
    ``θ ← θ − γ_t·g/d`` 3 (``γ_t`` with the decay is a Python number). One step counter."""
    return options["maximize"] + 2 * (options["weight_decay"] != 0) + 2 + 2 + 3, 1


def rmsprop(options: Options, step: int) -> tuple[int, int]:
    """maximize 1; weight decay 2; ``s ← αs + (1 − α)g²`` 1 + 3; centered: ``ḡ ← lerp(ḡ, g, 1 − α)`` 3
    and ``a ← s − ḡ²`` 3 (``addcmul`` with −1), then ``√a + ε`` 2; otherwise ``√s + ε`` 2; momentum
    ``b ← μb + g/a`` 1 + 2 and ``θ ← θ − γb`` 2, otherwise ``θ ← θ − γ·g/a`` 3. One step counter."""
    cost = options["maximize"] + 2 * (options["weight_decay"] != 0) + 4 + 6 * options["centered"] + 2
    cost += 3 + 2 if options["momentum"] != 0 else 3
    return cost, 1


def adamax(options: Options, step: int) -> tuple[int, int]:
    """maximize 1; weight decay 2; ``m ← lerp(m, g, 1 − β1)`` 3; ``u ← max(β2·u, |g| + ε)`` 4 (scale,
    absolute value, add, comparison); ``θ ← θ − (γ/bc1)·m/u`` 3. One step counter."""
    return options["maximize"] + 2 * (options["weight_decay"] != 0) + 3 + 4 + 3, 1


def nadam(options: Options, step: int) -> tuple[int, int]:
    """maximize 1; weight decay ``g ← g + λθ`` 2, or decoupled ``θ ← θ(1 − γλ)`` 1; ``m`` lerp 3;
    ``v`` 1 + 3; ``d ← √(v / bc2) + ε`` 3; ``θ ← θ − c1·g/d − c2·m/d`` 3 + 3 (two ``addcdiv`` with
    coefficients). Per tensor: the step counter and the running product ``μ_prod ← μ_prod·μ_t``: 2."""
    decay = (1 if options["decoupled_weight_decay"] else 2) * (options["weight_decay"] != 0)
    return options["maximize"] + decay + 3 + 4 + 3 + 6, 2


def adadelta(options: Options, step: int) -> tuple[int, int]:
    """maximize 1; weight decay 2; ``s ← ρs + (1 − ρ)g²`` 1 + 3; ``std ← √(s + ε)`` 2;
    ``Δ ← √(u + ε)`` 2, ``Δ ← Δ/std`` 1, ``Δ ← Δ·g`` 1; ``u ← ρu + (1 − ρ)Δ²`` 1 + 3;
    ``θ ← θ − γΔ`` 2. One step counter."""
    return options["maximize"] + 2 * (options["weight_decay"] != 0) + 4 + 2 + 2 + 1 + 1 + 4 + 2, 1


UPDATES: dict[str, Update] = {
    "SGD": sgd, "Adam": adam(False), "AdamW": adam(True), "Adagrad": adagrad, "RMSprop": rmsprop,
    "Adamax": adamax, "NAdam": nadam, "Adadelta": adadelta,
}  # fmt: skip
FUSED = {"SGD", "Adam", "AdamW", "Adagrad"}  # fused=True kernels PyTorch provides on CPU


def random_options(rng: random.Random, name: str) -> Options:
    """Constructor options (``lr`` away from ±1, so every learning-rate scaling is a real multiply)."""
    decay = rng.choice([0.0, 0.0, 0.1])
    options: Options = {"lr": 0.05, "weight_decay": decay, "maximize": rng.random() < 0.3}
    if name == "SGD":
        momentum = rng.choice([0.0, 0.9])
        nesterov = momentum != 0 and rng.random() < 0.4
        options |= {
            "momentum": momentum,
            "nesterov": nesterov,
            "dampening": 0.0 if nesterov else rng.choice([0.0, 0.1]),
        }
    elif name in ("Adam", "AdamW"):
        options["amsgrad"] = rng.random() < 0.3
    elif name == "RMSprop":
        options |= {"centered": rng.random() < 0.5, "momentum": rng.choice([0.0, 0.9])}
    elif name == "NAdam":
        options["decoupled_weight_decay"] = rng.random() < 0.5
    elif name == "Adagrad":
        options["lr_decay"] = rng.choice([0.0, 0.1])
    return options


@pytest.mark.parametrize(("seed", "rng"), cases("optimizers"))
def test_optimizer_step_matches_the_hand_written_update(seed: int, rng: random.Random) -> None:
    name = rng.choice(sorted(UPDATES))
    options = random_options(rng, name)
    implementation = rng.choice(["loop", "foreach"] + ["fused"] * (name in FUSED))
    flags = {"loop": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}[
        implementation
    ]
    generator = seeded(rng)
    shapes = [tuple(rng.randint(1, 4) for _ in range(rng.randint(0, 3))) for _ in range(rng.randint(1, 4))]
    params = [torch.nn.Parameter(torch.rand(shape, generator=generator)) for shape in shapes]
    for index, param in enumerate(params):
        if index == 0 or rng.random() < 0.85:  # a parameter without a gradient is skipped
            param.grad = torch.rand(param.shape, generator=generator)
    optimizer = getattr(torch.optim, name)(params, **options, **flags)
    steps = rng.randint(1, 3)

    def run() -> None:
        for _ in range(steps):
            optimizer.step()

    counted = library_count(run)
    expected = 0
    for step in range(1, steps + 1):
        per_element, per_tensor = UPDATES[name](options, step)
        for param in params:
            if param.grad is not None:
                expected += per_element * param.numel() + per_tensor
    assert counted.status == "complete", counted.diagnostics
    assert counted.by_phase["optimizer"]["value"] == expected, (name, implementation, options)
    assert counted.total == expected


def test_the_three_adamw_implementations_of_the_docs_example_agree() -> None:
    # docs/operator-flops.md: AdamW (default weight decay 0.01) costs 14 per element and 1 per step
    # counter, in every implementation: 808 elements in 4 tensors -> 14·808 + 4
    counts = set()
    for flags in ({"foreach": False}, {"foreach": True}, {"fused": True}):
        torch.manual_seed(0)
        mlp = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
        for param in mlp.parameters():
            param.grad = torch.ones_like(param)
        optimizer = torch.optim.AdamW(mlp.parameters(), **flags)
        counts.add(library_count(optimizer.step).by_phase["optimizer"]["value"])
    assert counts == {14 * 808 + 4}


@pytest.mark.parametrize(("seed", "rng"), cases("gradient_clipping", 30))
def test_gradient_clipping_matches_the_hand_written_norms(seed: int, rng: random.Random) -> None:
    """``clip_grad_norm_`` (``foreach`` or the loop): each gradient's norm (order 2: ``2N``, square,
    add, root; orders 1 and ∞: ``2N − 1``, absolute value and ``N − 1`` adds or comparisons), the norm
    of the ``T`` norms (``2T`` / ``2T − 1``), the coefficient ``max_norm / (total + 1e-6)`` clamped at 1
    (add, reciprocal, multiply, one bound: 4 on 0-d tensors), then every gradient element scaled (1)."""
    order = rng.choice([2.0, 1.0, float("inf")])
    generator = seeded(rng)
    shapes = [tuple(rng.randint(1, 4) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(1, 4))]
    params = [torch.nn.Parameter(torch.rand(shape, generator=generator)) for shape in shapes]
    for param in params:
        param.grad = torch.rand(param.shape, generator=generator)
    foreach = rng.random() < 0.5
    counted = library_count(lambda: torch.nn.utils.clip_grad_norm_(params, 0.5, order, foreach=foreach))

    def norm(size: int) -> int:
        return 2 * size if order == 2 else 2 * size - 1

    sizes = [param.numel() for param in params]
    expected = sum(norm(size) for size in sizes) + norm(len(sizes)) + 4 + sum(sizes)
    assert (counted.status, counted.total) == ("complete", expected)


def test_gradient_scaler_kernels_match_their_hand_written_count() -> None:
    """``GradScaler`` on CPU around an SGD step of ``nn.Linear(3, 2)`` (8 parameter elements): unscaling
    multiplies every gradient element by the inverse scale and checks it is finite (2 each: 16); the
    update compares ``found_inf`` and multiplies the scale once (2); the inverse scale itself is a
    0-d reciprocal (1) and SGD's step ``θ ← θ − γg`` 2 per element (16)."""
    layer = torch.nn.Linear(3, 2)
    for param in layer.parameters():
        param.grad = torch.ones_like(param)
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.1, foreach=False)
    scaler = torch.amp.GradScaler("cpu")
    scaler.scale(torch.ones(()))  # creates the scale, as the first scaled loss does

    def step() -> None:
        scaler.step(optimizer)
        scaler.update()

    counted = library_count(step)
    assert counted.status == "complete"
    assert counted.by_operator == {
        "aten._amp_foreach_non_finite_check_and_unscale_": 2 * 8,
        "aten._amp_update_scale_": 2,
        "aten.reciprocal": 1,
        "aten.add_": 2 * 8,
    }
