"""Reference checks of the recurrent kernels on CPU, forward and backward (real-models.md 2.4, truth.md 3).

The reference re-implements one step of each cell from PyTorch's documented equations with matrix
products and element-wise operations (:func:`reference_step`), runs it over the sequence, every layer
and direction, and counts it with the harness's :class:`TrivialCounter`: ``2 · MACs`` per product and
the documented per-element cost of each element-wise operator (:data:`COSTS`: add, subtract, multiply
1, sigmoid 4, tanh 6, ReLU 1). ``measure_flops`` runs the real ``nn.LSTM``/``nn.GRU``/``nn.RNN`` (or
cell), which PyTorch dispatches in one of two ways:

* ``aten.mkldnn_rnn_layer`` (oneDNN; an ``nn.LSTM`` without projection), one call per layer and
  direction, counted by TorchScan's closed form of the documented equations: it must equal the
  reference exactly. Its backward ``aten.mkldnn_rnn_layer_backward`` is truth.md 3's convention: the
  gate products of the backward — here the products autograd runs through the reference (input,
  initial state and weights all requiring gradients, as oneDNN computes them all) — plus the closed
  form 5 per gate element per step and row.
* decomposed into ``addmm``/``mm`` and element-wise operators (GRU, RNN, projecting LSTM, cells).
  Their forward must equal the reference minus two documented differences (docs/operator-flops.md):
  the biases are fused into ``addmm``, whose native count omits them (``2·G·h`` per step and row),
  and PyTorch updates a GRU as ``(h − n)·z + n``, one operation per unit fewer than the documented
  ``(1 − z)·n + z·h``. Their backward is a closed form over the kernels autograd dispatches: ``mm``
  ``2·MACs``, ``sum`` ``in − out``, element-wise arithmetic 1, ``sigmoid_backward`` and
  ``tanh_backward`` 3 (``grad·y·(1 − y)``, ``grad·(1 − y²)``), ``threshold_backward`` 1.

Dropout between layers (training, ``0 < p < 1``) costs ``nn.Dropout``'s 2 per element of each
non-last layer's output in the forward and one multiply per element in the backward.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from torch import nn

from reference.harness import TrivialCounter, cases, library_count, seeded, trivial_count

GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
COSTS = {
    "aten.add": 1,
    "aten.sub": 1,
    "aten.rsub": 1,
    "aten.mul": 1,
    "aten.sigmoid": 4,
    "aten.tanh": 6,
    "aten.relu": 1,
}
VIEWS = {
    "aten.t", "aten.view", "aten.select", "aten.stack", "aten.cat", "aten.unbind", "aten.unsqueeze",
    "aten.squeeze", "aten.transpose", "aten.expand", "aten.split", "aten.split_with_sizes",
    "aten.unsafe_split", "aten.split_with_sizes_copy", "aten.chunk", "aten.unsafe_chunk", "aten.slice",
    "aten.zeros", "aten.new_zeros", "aten.zeros_like", "aten.ones_like", "aten.empty_like",
    "aten.new_empty_strided", "aten.copy_", "aten.detach", "aten.clone", "aten.select_backward",
    "aten.slice_backward", "aten._unsafe_view", "aten.permute", "aten.alias", "aten.fill_",
    "aten.empty", "aten.contiguous", "aten.reshape", "aten._to_copy", "aten.lift_fresh", "aten.sum_to_size",
}  # fmt: skip
BACKWARD_COSTS = {
    "aten.add": 1, "aten.add_": 1, "aten.sub": 1, "aten.mul": 1, "aten.neg": 1, "aten.div": 1,
    "aten.sigmoid_backward": 3, "aten.tanh_backward": 3, "aten.threshold_backward": 1,
}  # fmt: skip


@dataclass
class PricedCounter(TrivialCounter):
    """:class:`TrivialCounter` that also keeps each ``sum``'s input and output sizes (``in − out``)."""

    reduced: int = 0
    fused_bias: int = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = super().__torch_dispatch__(func, types, args, kwargs)
        name = str(func.overloadpacket)
        if name == "aten.sum":
            self.reduced += args[0].numel() - out.numel()
        elif name == "aten.addmm":  # the bias added to every output element, inside the product
            self.fused_bias += out.numel()
        return out

    def __hash__(self) -> int:
        return id(self)


def priced(counter: TrivialCounter, costs: dict[str, int]) -> int:
    """FLOPs of what ``counter`` saw: products, ``sum`` reductions and priced element-wise operators;
    an operator neither priced nor a view/copy fails the test (nothing is silently free)."""
    names = set(counter.elementwise) - {"aten.sum"}
    unknown = names - set(costs) - VIEWS
    assert not unknown, f"no reference cost for {sorted(unknown)}"
    reduced = counter.reduced if isinstance(counter, PricedCounter) else 0
    return counter.products + reduced + sum(counter.elementwise[name] * costs.get(name, 0) for name in names)


def reference_step(
    kind: str, x: torch.Tensor, state: tuple[Any, ...], weights: dict[str, Any]
) -> tuple[Any, ...]:
    """One step of PyTorch's documented equations (``torch.nn.LSTM``/``GRU``/``RNN`` docs), each gate
    from its two products and two biases; returns the new state (``h`` first)."""
    h = state[0]
    w_ih, w_hh, b_ih, b_hh = weights["w_ih"], weights["w_hh"], weights["b_ih"], weights["b_hh"]
    hidden = w_hh.shape[0] // GATES[kind]

    def gate(index: int, with_hidden: bool = True) -> Any:
        rows = slice(index * hidden, (index + 1) * hidden)
        value = x @ w_ih[rows].T
        if b_ih is not None:
            value = value + b_ih[rows]
        if not with_hidden:
            return value
        recurrent = h @ w_hh[rows].T
        if b_hh is not None:
            recurrent = recurrent + b_hh[rows]
        return value + recurrent

    if kind == "lstm":  # i, f, g, o
        c = state[1]
        i, f, g, o = (
            torch.sigmoid(gate(0)),
            torch.sigmoid(gate(1)),
            torch.tanh(gate(2)),
            torch.sigmoid(gate(3)),
        )
        c = f * c + i * g
        h = o * torch.tanh(c)
        if weights.get("w_hr") is not None:
            h = h @ weights["w_hr"].T
        return h, c
    if kind == "gru":  # r, z, n
        r, z = torch.sigmoid(gate(0)), torch.sigmoid(gate(1))
        rows = slice(2 * hidden, 3 * hidden)
        recurrent = h @ w_hh[rows].T
        if b_hh is not None:
            recurrent = recurrent + b_hh[rows]
        n = torch.tanh(gate(2, with_hidden=False) + r * recurrent)
        return ((1 - z) * n + z * h,)
    activation = torch.tanh if kind == "rnn_tanh" else torch.relu
    return (activation(gate(0)),)


@dataclass(frozen=True)
class Config:
    kind: str
    width: int
    hidden: int
    layers: int = 1
    bidirectional: bool = False
    batch_first: bool = False
    bias: bool = True
    proj: int = 0
    steps: int = 2
    batch: int | None = 2  # None: an unbatched input
    dropout: float = 0.0
    cell: bool = False

    @property
    def recurrent(self) -> int:
        return self.proj or self.hidden


def random_config(rng: random.Random) -> Config:
    kind = rng.choice(sorted(GATES))
    cell = rng.random() < 0.15
    hidden = rng.randint(1, 6)
    proj = (
        rng.randint(1, hidden - 1)
        if kind == "lstm" and hidden > 1 and not cell and rng.random() < 0.25
        else 0
    )
    layers = 1 if cell else rng.randint(1, 3)
    return Config(
        kind=kind,
        width=rng.randint(1, 6),
        hidden=hidden,
        layers=layers,
        bidirectional=not cell and rng.random() < 0.4,
        batch_first=not cell and rng.random() < 0.3,
        bias=rng.random() < 0.8,
        proj=proj,
        steps=1 if cell else rng.randint(1, 4),
        batch=rng.choice([None, 1, 2, 3]),
        dropout=rng.choice([0.0, 0.0, 0.5]) if layers > 1 else 0.0,
        cell=cell,
    )


def build(config: Config, generator: torch.Generator) -> nn.Module:
    torch.manual_seed(int(torch.randint(0, 2**31, (1,), generator=generator)))
    if config.cell:
        cells = {"lstm": nn.LSTMCell, "gru": nn.GRUCell}
        if config.kind in cells:
            return cells[config.kind](config.width, config.hidden, bias=config.bias)
        return nn.RNNCell(config.width, config.hidden, bias=config.bias, nonlinearity=config.kind[4:])
    options = dict(
        num_layers=config.layers, bias=config.bias, batch_first=config.batch_first,
        dropout=config.dropout, bidirectional=config.bidirectional,
    )  # fmt: skip
    if config.kind == "lstm":
        return nn.LSTM(config.width, config.hidden, proj_size=config.proj, **options)
    if config.kind == "gru":
        return nn.GRU(config.width, config.hidden, **options)
    return nn.RNN(config.width, config.hidden, nonlinearity=config.kind[4:], **options)


def layer_weights(module: nn.Module, layer: int, suffix: str) -> dict[str, Any]:
    """The documented parameters of one layer-direction (``suffix`` ``""`` or ``"_reverse"``), detached
    leaves requiring gradients (the reference's own graph)."""

    def leaf(name: str) -> Any:
        value = getattr(
            module, f"{name}_l{layer}{suffix}" if not isinstance(module, nn.RNNCellBase) else name, None
        )
        return None if value is None else value.detach().clone().requires_grad_()

    return {name: leaf(name) for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")}


def reference_counts(config: Config, module: nn.Module, train: bool) -> tuple[int, int]:
    """(forward FLOPs, backward products) of the documented equations over every layer-direction.

    The backward products come from autograd through the reference with its input, initial state and
    weights all requiring gradients (what oneDNN's backward computes)."""
    rows = config.batch or 1
    directions = 2 if config.bidirectional else 1
    forward = backward = 0
    width = config.width
    for layer in range(config.layers):
        for suffix in ("", "_reverse")[:directions]:
            named = layer_weights(module, layer, suffix)
            weights = {
                "w_ih": named["weight_ih"], "w_hh": named["weight_hh"], "b_ih": named["bias_ih"],
                "b_hh": named["bias_hh"], "w_hr": named["weight_hr"],
            }  # fmt: skip
            inputs = torch.rand(config.steps, rows, width, requires_grad=True)
            state: tuple[Any, ...] = (torch.zeros(rows, config.recurrent, requires_grad=True),)
            if config.kind == "lstm":
                state += (torch.zeros(rows, config.hidden, requires_grad=True),)
            outputs: list[Any] = []

            def run(
                state: tuple[Any, ...] = state,
                inputs: torch.Tensor = inputs,
                weights=weights,
                outputs=outputs,
            ) -> None:
                for step in range(config.steps):
                    state = reference_step(config.kind, inputs[step], state, weights)
                    outputs.append(state[0])

            forward += priced(trivial_count(run), COSTS)
            if train:
                gradients = torch.stack(outputs).sum()
                backward += trivial_count(gradients.backward).products
        width = config.recurrent * directions
    return forward, backward


def dropout_flops(config: Config, train: bool) -> int:
    """``nn.Dropout``'s 2 per element (mask multiply and scale) of each non-last layer's output."""
    if not train or config.dropout == 0 or config.cell:
        return 0
    directions = 2 if config.bidirectional else 1
    return 2 * (config.layers - 1) * config.steps * (config.batch or 1) * directions * config.recurrent


def decomposition_deltas(config: Config, fused_bias: int) -> int:
    """What the decomposed kernels count less than the documented equations (module docstring): the
    bias additions fused into ``addmm`` (``fused_bias``, counted from the real call: an input product
    on a non-contiguous — ``batch_first`` — input runs as ``mm`` plus a separate, counted bias ``add``)
    and one operation per GRU unit and step."""
    pairs = config.steps * (config.batch or 1) * (2 if config.bidirectional else 1)
    return fused_bias + pairs * config.hidden * config.layers * (config.kind == "gru")


def inputs_for(config: Config, generator: torch.Generator) -> tuple[torch.Tensor, ...]:
    if config.cell:
        shape = (config.batch, config.width) if config.batch else (config.width,)
        return (torch.rand(shape, generator=generator, requires_grad=True),)
    shape = (
        [config.steps, config.width] if config.batch is None else [config.steps, config.batch, config.width]
    )
    if config.batch_first and config.batch is not None:
        shape[0], shape[1] = shape[1], shape[0]
    return (torch.rand(shape, generator=generator, requires_grad=True),)


def first(output: Any) -> torch.Tensor:
    return output[0] if isinstance(output, tuple) else output


@pytest.mark.parametrize(("seed", "rng"), cases("recurrent"))
def test_recurrent_kernels_match_the_documented_equations(seed: int, rng: random.Random) -> None:
    config = random_config(rng)
    generator = seeded(rng)
    module = build(config, generator)
    train = rng.random() < 0.6
    module.train(train)
    (x,) = inputs_for(config, generator)
    gradient = torch.rand(first(module(x)).shape, generator=generator)

    if train:
        counted = library_count(lambda: first(module(x)).backward(gradient))
    else:
        with torch.no_grad():
            counted = library_count(lambda: module(x))
    assert counted.status == "complete", counted.diagnostics
    fused = counted.operator("aten.mkldnn_rnn_layer") > 0
    forward, backward_products = reference_counts(config, module, train)
    expected_forward = forward + dropout_flops(config, train)
    if not fused:
        with torch.no_grad(), PricedCounter() as real_call:
            module(x)
        expected_forward -= decomposition_deltas(config, real_call.fused_bias)
    assert counted.by_phase["forward"]["value"] == expected_forward, (config, counted.by_operator)
    if not train:
        return
    if fused:
        pairs = config.steps * (config.batch or 1) * (2 if config.bidirectional else 1) * config.layers
        expected = backward_products + 5 * GATES[config.kind] * config.hidden * pairs
        assert counted.operator("aten.mkldnn_rnn_layer_backward") == expected, config
        return
    # decomposed: the backward kernels autograd dispatches for the real module, priced in closed form
    module.zero_grad(set_to_none=True)
    x.grad = None
    output = first(module(x))
    counter = PricedCounter()
    with counter:
        output.backward(gradient)
    assert counted.by_phase["backward"]["value"] == priced(counter, BACKWARD_COSTS), config


def test_lstm_training_step_of_the_issue() -> None:
    # nn.LSTM(4, 5), 3 steps × 2 rows: forward (2·4·20 + 2·5·20 + 2·20 + 32·5)·6 = 3360; backward
    # 6·(4·20·(4 + 5) + 5·20) = 4920; complete (issue #32: mkldnn_rnn_layer_backward was uncounted)
    lstm = nn.LSTM(4, 5)
    x = torch.ones(3, 2, 4)
    counted = library_count(lambda: lstm(x)[0].sum().backward())
    assert counted.status == "complete"
    assert counted.operator("aten.mkldnn_rnn_layer") == 3360
    assert counted.operator("aten.mkldnn_rnn_layer_backward") == 4920
