"""Recurrent layers and ``nn.Bilinear`` (module formulas; real-models.md §2.4 equations).

FLOPs use the closed form of :mod:`torchscan.formulas.recurrent_ops` (shared with the operator
formulas, so both methods describe the same equations): per time step, row, layer and direction
``2·in·G·h + 2·hr·G·h`` products, ``2·G·h·[bias]`` bias adds and the element-wise gate work
(LSTM ``32h`` + ``2·h·hr`` projection, GRU ``22h``, RNN ``7h`` tanh / ``2h`` relu), plus
``nn.Dropout``'s count on every non-last layer's output in training. Products count 2 FLOPs per
multiply-accumulate (not A.4's ``2K − 1``): the spec fixes one count for both methods.

- MACs: the products' multiply-accumulates, ``in·G·h + hr·G·h`` (+ ``h·hr``) per step and row.
- DMAs: ``N + P + S_in + S_out + Nout`` — input read, every parameter element read once, initial
  states read (zeros when not given: the kernel reads them either way), final states written, the
  output sequence written. ``S`` = ``layers·directions·rows·(hr + [LSTM]·h)``. A cell's output is its
  state, so a cell has ``N + P + 2·S``.
- Receptive field: not applicable for sequence layers (step ``t`` depends on every earlier step);
  ``(1, 1, 0)`` for cells and ``nn.Bilinear``, which map one row's features like ``nn.Linear``.

Only the exact native types with unchanged ``forward`` are covered. A ``PackedSequence`` input is an
unsupported configuration (its per-step batch sizes are tensor values).
"""

from __future__ import annotations

import math
from typing import Any

from torch import Tensor, nn
from torch.nn.utils.rnn import PackedSequence

from torchscan.formulas import recurrent_ops as ops
from torchscan.formulas.native import PRIMITIVE_REASON, require_exact_native
from torchscan.formulas.registry import UnsupportedConfiguration, dmas, flops, macs, receptive_field
from torchscan.formulas.tensors import DENSE_REASON, is_dense_real, own_tensor

SEQUENCE = (nn.LSTM, nn.GRU, nn.RNN)
CELLS = (nn.LSTMCell, nn.GRUCell, nn.RNNCell)
PACKED_REASON = "Recurrent estimates do not cover packed sequences (PackedSequence input)."


def _kind(module: nn.Module) -> str:
    if isinstance(module, nn.LSTM | nn.LSTMCell):
        return "lstm"
    if isinstance(module, nn.GRU | nn.GRUCell):
        return "gru"
    return "rnn_relu" if module.nonlinearity == "relu" else "rnn_tanh"  # type: ignore[union-attr]


def _check(module: nn.Module, inp: Any, out: Any) -> Tensor:
    """Exact native type, no packed sequence, dense real tensors; returns the input tensor."""
    require_exact_native(module, SEQUENCE + CELLS + (nn.Bilinear,), PRIMITIVE_REASON)
    if isinstance(inp, PackedSequence) or isinstance(out, PackedSequence):
        raise UnsupportedConfiguration(PACKED_REASON)
    if not isinstance(inp, Tensor) or not isinstance(out, Tensor):
        raise UnsupportedConfiguration(DENSE_REASON)
    if not (is_dense_real(inp) and is_dense_real(out)):
        raise UnsupportedConfiguration(DENSE_REASON)
    return inp


def _first(value: Any) -> Any:
    """First element of a call's inputs or outputs, PackedSequence kept whole (it is a tuple)."""
    while isinstance(value, tuple | list) and not isinstance(value, PackedSequence) and value:
        value = value[0]
    return value


def _rows(module: nn.Module, inp: Tensor) -> int:
    """Rows (batch elements) of one call: 1 for an unbatched input."""
    batched = inp.dim() == (3 if isinstance(module, SEQUENCE) else 2)
    if not batched:
        return 1
    if isinstance(module, SEQUENCE):
        return int(inp.shape[0] if module.batch_first else inp.shape[1])  # type: ignore[union-attr]
    return int(inp.shape[0])


def _widths(module: Any) -> tuple[int, int]:
    """``(h, hr)``: hidden size and the width of the state fed back (``proj_size`` when set)."""
    proj = getattr(module, "proj_size", 0)
    return module.hidden_size, (proj if proj else module.hidden_size)


def _layers(module: Any) -> list[int]:
    """Input width of each layer: ``input_size``, then ``directions·hr``."""
    directions = 2 if module.bidirectional else 1
    return [module.input_size] + [directions * _widths(module)[1]] * (module.num_layers - 1)


def _state_elements(module: Any, rows: int) -> int:
    """``S``: elements of the hidden (and LSTM cell) state, all layers and directions."""
    hidden, recurrent = _widths(module)
    per_row = recurrent + (hidden if _kind(module) == "lstm" else 0)
    if isinstance(module, SEQUENCE):
        per_row *= module.num_layers * (2 if module.bidirectional else 1)
    return rows * per_row


# --- FLOPs ------------------------------------------------------------------------------------------


@flops.register(*SEQUENCE, *CELLS)
def recurrent_flops(module: Any, inputs: tuple[Any, ...], output: Any) -> int:
    """The shared closed form over every step, row, layer and direction, plus training dropout."""
    inp = _check(module, _first(inputs), _first(output))
    kind, (hidden, recurrent) = _kind(module), _widths(module)
    if isinstance(module, CELLS):
        pairs = _rows(module, inp)
        return pairs * ops.layer_step_flops(kind, module.input_size, hidden, recurrent, module.bias)
    pairs = math.prod(inp.shape[:-1])
    directions = 2 if module.bidirectional else 1
    count = 0
    for layer, width in enumerate(_layers(module)):
        count += directions * pairs * ops.layer_step_flops(kind, width, hidden, recurrent, module.bias)
        if layer < module.num_layers - 1:
            count += ops.dropout_flops(pairs * directions * recurrent, module.dropout, module.training)
    return count


@macs.register(*SEQUENCE, *CELLS)
def recurrent_macs(module: Any, inp: Tensor, out: Tensor) -> int:
    """``in·G·h + hr·G·h`` (+ ``h·hr`` projection) per step, row, layer and direction."""
    inp = _check(module, inp, out)
    kind, (hidden, recurrent) = _kind(module), _widths(module)
    if isinstance(module, CELLS):
        return _rows(module, inp) * ops.layer_step_macs(kind, module.input_size, hidden, recurrent)
    directions = 2 if module.bidirectional else 1
    pairs = math.prod(inp.shape[:-1])
    return sum(
        directions * pairs * ops.layer_step_macs(kind, width, hidden, recurrent) for width in _layers(module)
    )


def _param_elements(module: nn.Module) -> int:
    return sum(parameter.numel() for parameter in module.parameters(recurse=False))


@dmas.register(*SEQUENCE, *CELLS)
def recurrent_dmas(module: Any, inp: Tensor, out: Tensor) -> int:
    """``N + P + 2·S + Nout`` (sequence layers) or ``N + P + 2·S`` (cells, whose output is the state)."""
    inp = _check(module, inp, out)
    states = _state_elements(module, _rows(module, inp))
    read = inp.numel() + _param_elements(module) + 2 * states
    return read if isinstance(module, CELLS) else read + out.numel()


@receptive_field.register(*SEQUENCE)
def sequence_rf(module: Any, inp: Tensor, out: Tensor) -> None:
    """Not applicable: each output step depends on every earlier step of the sequence."""
    _check(module, inp, out)
    return None


@receptive_field.register(*CELLS, nn.Bilinear)
def row_rf(module: Any, inp: Tensor, out: Tensor) -> tuple[float, float, float]:
    """``(1, 1, 0)``: one row's features in, one row's features out (as ``nn.Linear``)."""
    _check(module, inp, out)
    return 1.0, 1.0, 0.0


# --- nn.Bilinear: y = x1ᵀ A x2 + b -------------------------------------------------------------------


def _bilinear_rows(module: nn.Bilinear, inp: Tensor) -> int:
    return math.prod(inp.shape[:-1])


@flops.register(nn.Bilinear)
def bilinear_flops(module: nn.Bilinear, inputs: tuple[Any, ...], output: Any) -> int:
    """``V·F_out·(in2·max(0, 2·in1 − 1) + max(0, 2·in2 − 1) + [bias])``: per output, ``in2`` dot
    products of ``in1`` terms (``x1`` against ``A_k``), one of ``in2`` terms (against ``x2``), bias."""
    inp = _check(module, _first(inputs), _first(output))
    in1, in2 = module.in1_features, module.in2_features
    per_output = in2 * max(0, 2 * in1 - 1) + max(0, 2 * in2 - 1) + (own_tensor(module, "bias") is not None)
    return _bilinear_rows(module, inp) * module.out_features * per_output


@macs.register(nn.Bilinear)
def bilinear_macs(module: nn.Bilinear, inp: Tensor, out: Tensor) -> int:
    """``V·F_out·(in1·in2 + in2)``, the multiply-accumulates of the same two contractions."""
    inp = _check(module, inp, out)
    rows, in1, in2 = _bilinear_rows(module, inp), module.in1_features, module.in2_features
    return ops.bilinear_products(rows, in1, in2, module.out_features)


@dmas.register(nn.Bilinear)
def bilinear_dmas(module: nn.Bilinear, inp: Tensor, out: Tensor) -> int:
    """``N1 + N2 + P + Nout`` with ``N2 = V·in2`` (both inputs read, parameters read, output written)."""
    inp = _check(module, inp, out)
    second = _bilinear_rows(module, inp) * module.in2_features
    return inp.numel() + second + _param_elements(module) + out.numel()
