"""Recurrent kernels: closed-form FLOPs from PyTorch's documented equations (real-models.md §2.4).

One closed form serves both methods: the operator formulas below (registered in
``torchscan.formulas.operators``) and the module formulas of ``torchscan.formulas.recurrent``, so the
two views of one LSTM/GRU/RNN call cannot drift. Per time step, row (batch element), layer and
direction, with input width ``in``, hidden size ``h``, recurrent width ``hr`` (``proj_size`` when an
LSTM projects, else ``h``) and gate count ``G`` (LSTM 4, GRU 3, RNN 1)::

    products   2·in·G·h + 2·hr·G·h           (2 FLOPs per multiply-accumulate, like native products)
    bias adds  2·G·h·[bias]                  (b_ih and b_hh: one add each per gate output)
    LSTM       4h (input + hidden product per gate) + 3·4h (sigmoid i, f, o) + 6h (tanh g)
               + 3h (c' = f⊙c + i⊙g) + 7h (h' = o⊙tanh(c'))            = 32h
               + 2·h·hr with a projection (h' @ W_hr^T, no bias)
    GRU        2h + 2·4h (r, z: sum and sigmoid) + 8h (n: r⊙(W_hn h + b_hn), sum, tanh 6)
               + 4h (h' = (1 − z)⊙n + z⊙h: subtract, two products, add)    = 22h
    RNN        h (sum of products) + 6h (tanh) or h (relu)            = 7h / 2h

A sigmoid costs 4 and a tanh 6 (B.8). Dropout between layers (training, ``0 < p``) costs what
``nn.Dropout`` costs on each non-last layer's output: 2 per element, 1 when ``p == 1``. Initial
states are used whether given or zero (counts never depend on values). Each formula here is an
operator formula ``(args, kwargs, out) -> int`` reading shapes and flags only (meta tensors work).
A packed sequence (the ``.data`` overloads, or ``mkldnn_rnn_layer`` with batch sizes) is unsupported:
its per-step row counts live in a tensor's values.

The backward of the oneDNN layer (``mkldnn_rnn_layer_backward``) follows truth.md 3: the gate matrix
products of the backward at 2 FLOPs per multiply-accumulate plus 5 element-wise operations per gate
element (:func:`layer_step_backward_flops` states what the 5 are and what they leave out).
"""

from __future__ import annotations

import math

from torchscan.formulas.operator_common import OperatorFormula, UnsupportedOperatorFormula, arg

__all__ = [
    "BACKWARD_ELEMENTWISE",
    "GATES",
    "PACKED_REASON",
    "bilinear_op_flops",
    "cell_step_flops",
    "dropout_flops",
    "layer_step_backward_flops",
    "layer_step_flops",
    "layer_step_macs",
    "trilinear_op_flops",
]

PACKED_REASON = "Recurrent FLOP formulas do not cover packed sequences (PackedSequence input)."
SHAPE_REASON = "Recurrent FLOP formulas require the native parameter layout of the kernel."
TRILINEAR_REASON = "Trilinear FLOPs cover the nn.Bilinear contraction only."

GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
"""Gate blocks per kind: ``G`` of the equations."""

# Element-wise FLOPs per hidden unit and step, biases excluded (see the module docstring).
_ELEMENTWISE = {"lstm": 32, "gru": 22, "rnn_tanh": 7, "rnn_relu": 2}
# mkldnn's RNN mode numbers (ideep rnn_kind) -> kind.
_MKLDNN_MODES = {0: "rnn_relu", 1: "rnn_tanh", 2: "lstm", 3: "gru"}


def layer_step_flops(kind: str, width: int, hidden: int, recurrent: int, bias: bool) -> int:
    """FLOPs of one step of one row through one layer-direction (the module docstring's sum).

    ``width`` is the layer's input width, ``recurrent`` the width of the state fed back (``hr``);
    ``recurrent != hidden`` only for an LSTM with a projection, which adds ``2·h·hr``.
    """
    gates = GATES[kind] * hidden
    count = 2 * width * gates + 2 * recurrent * gates + 2 * gates * bias + _ELEMENTWISE[kind] * hidden
    if recurrent != hidden:
        count += 2 * hidden * recurrent
    return count


def layer_step_macs(kind: str, width: int, hidden: int, recurrent: int) -> int:
    """Multiply-accumulates of one step of one row: ``in·G·h + hr·G·h`` (+ ``h·hr`` projection)."""
    gates = GATES[kind] * hidden
    return width * gates + recurrent * gates + (hidden * recurrent if recurrent != hidden else 0)


def cell_step_flops(kind: str, hidden: int, bias: bool) -> int:
    """FLOPs of a fused cell given precomputed gate products: ``G·h`` sums, biases, element-wise.

    The products themselves are separate operators (``mm``) before ``_thnn_fused_*_cell``.
    """
    return 2 * GATES[kind] * hidden * bias + _ELEMENTWISE[kind] * hidden


def dropout_flops(elements: int, p: float, train: bool) -> int:
    """``nn.Dropout``'s count (A.5.12) of one inter-layer dropout over ``elements`` values."""
    if not train or p == 0:
        return 0
    return elements if p == 1 else 2 * elements


def _shape(tensor: object) -> tuple[int, ...]:
    return tuple(int(size) for size in tensor.shape)  # type: ignore[attr-defined]


def _pairs(inputs: object) -> int:
    """(step, row) pairs of a sequence input: every leading element (batched or unbatched)."""
    return math.prod(_shape(inputs)[:-1])


def _sequence(kind: str, args: tuple, kwargs: dict) -> int:
    """``aten.lstm/gru/rnn_tanh/rnn_relu.input``: all layers and directions plus dropout."""
    if len(args) > 1 and not isinstance(args[1], (list, tuple)) and kind == "lstm":
        raise UnsupportedOperatorFormula(PACKED_REASON)  # lstm.data(data, batch_sizes, hx, ...)
    if kind != "lstm" and len(args) > 3 and not isinstance(args[3], bool):
        raise UnsupportedOperatorFormula(PACKED_REASON)  # gru.data(data, batch_sizes, hx, params, ...)
    inputs, params = args[0], list(args[2])
    bias, layers = bool(args[3]), int(args[4])
    p, train, bidirectional = float(args[5]), bool(args[6]), bool(args[7])
    directions = 2 if bidirectional else 1
    per_layer, rem = divmod(len(params), layers * directions)
    if rem or per_layer < 2:
        raise UnsupportedOperatorFormula(SHAPE_REASON)
    pairs, count = _pairs(inputs), 0
    for layer in range(layers):
        first = params[layer * directions * per_layer]
        w_ih, w_hh = _shape(first), _shape(params[layer * directions * per_layer + 1])
        if len(w_ih) != 2 or len(w_hh) != 2 or w_ih[0] % GATES[kind]:
            raise UnsupportedOperatorFormula(SHAPE_REASON)
        hidden, width, recurrent = w_ih[0] // GATES[kind], w_ih[1], w_hh[1]
        count += directions * pairs * layer_step_flops(kind, width, hidden, recurrent, bias)
        if layer < layers - 1:
            count += dropout_flops(pairs * directions * recurrent, p, train)
    return count


def sequence_formula(kind: str) -> OperatorFormula:
    """Factory: the operator formula of ``aten.<kind>`` (``.input`` overload; ``.data`` unsupported)."""

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        return _sequence(kind, args, kwargs)

    formula.__name__ = formula.__qualname__ = f"{kind}_sequence_flops"
    formula.__doc__ = f"``aten.{kind}``: per step, row, layer and direction, the documented equations."
    return formula


def cell_formula(kind: str) -> OperatorFormula:
    """Factory: ``aten.<kind>_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None)``, one step."""

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        w_ih, w_hh = _shape(args[2]), _shape(args[3])
        bias = arg(args, kwargs, 4, "b_ih") is not None
        if bias != (arg(args, kwargs, 5, "b_hh") is not None) or w_ih[0] % GATES[kind]:
            raise UnsupportedOperatorFormula(SHAPE_REASON)
        hidden = w_ih[0] // GATES[kind]
        return _pairs(args[0]) * layer_step_flops(kind, w_ih[1], hidden, w_hh[1], bias)

    formula.__name__ = formula.__qualname__ = f"{kind}_cell_flops"
    formula.__doc__ = f"``aten.{kind}_cell``: one step of the documented equations per row."
    return formula


def fused_cell_formula(kind: str) -> OperatorFormula:
    """Factory: ``aten._thnn_fused_<kind>_cell(input_gates, hidden_gates, state, input_bias,
    hidden_bias)``: gate sums, optional biases and the element-wise update per hidden unit."""

    def formula(args: tuple, kwargs: dict, out: object) -> int:
        gates = _shape(args[0])
        bias = arg(args, kwargs, 3, "input_bias") is not None
        if bias != (arg(args, kwargs, 4, "hidden_bias") is not None) or gates[-1] % GATES[kind]:
            raise UnsupportedOperatorFormula(SHAPE_REASON)
        return _pairs(args[0]) * cell_step_flops(kind, gates[-1] // GATES[kind], bias)

    formula.__name__ = formula.__qualname__ = f"fused_{kind}_cell_flops"
    return formula


def mkldnn_rnn_layer_flops(args: tuple, kwargs: dict, out: object) -> int:
    """``aten.mkldnn_rnn_layer(input, w_ih, w_hh, b_ih, b_hh, hx, cx, reverse, batch_sizes, mode,
    hidden_size, num_layers, has_biases, bidirectional, batch_first, train)``: one layer-direction.

    Dropout between layers is dispatched separately (``mul``/``div_``) and counted there.
    """
    if list(args[8]):
        raise UnsupportedOperatorFormula(PACKED_REASON)
    kind = _MKLDNN_MODES.get(int(args[9]))
    w_ih, w_hh = _shape(args[1]), _shape(args[2])
    if kind is None or len(w_ih) != 2 or len(w_hh) != 2 or w_ih[0] != GATES[kind] * int(args[10]):
        raise UnsupportedOperatorFormula(SHAPE_REASON)
    return _pairs(args[0]) * layer_step_flops(kind, w_ih[1], int(args[10]), w_hh[1], bool(args[12]))


BACKWARD_ELEMENTWISE = 5
"""Element-wise FLOPs per gate element of a recurrent backward (truth.md 3; derivation below)."""


def layer_step_backward_flops(kind: str, width: int, hidden: int, recurrent: int) -> int:
    """FLOPs of the backward of one step of one row through one layer-direction (truth.md 3).

    With ``Gh = G·h`` gate elements, the gate matrix products at 2 FLOPs per multiply-accumulate:

    * ``grad_input``  ``dx = dgates · W_ih``          ``in·Gh`` MACs
    * ``grad_hidden`` ``dh_prev = dgates · W_hh``     ``hr·Gh`` MACs (computed at every step: the
      kernel returns the initial state's gradient too)
    * ``grad_weight`` ``dW_ih += dgatesᵀ · x`` and ``dW_hh += dgatesᵀ · h_prev``: ``(in + hr)·Gh``

    so ``4·Gh·(in + hr)``, twice the forward's products. Plus 5 element-wise operations per gate
    element: for each gate (LSTM ``i``, ``f``, ``g``, ``o``; GRU ``r``, ``z``, ``n``), the gradient
    reaching the gate's output through its partner in the state update (one product: ``dc·g``,
    ``dc·c_prev``, ``dc·i``, ``dh·tanh(c')``), the derivative of its nonlinearity from the saved
    activation (two: ``a·(1 − a)`` for a sigmoid, ``1 − a²`` for a tanh), their product (one), and
    the bias gradient's accumulation over rows and steps (one; oneDNN computes it also without
    biases, which PyTorch then passes as placeholders). ``5·Gh``. The recurrences of the state
    gradients themselves (``dh = dy + dh_next``, the cell state's ``dc``) are not separately priced by
    this convention.
    """
    gates = GATES[kind] * hidden
    return 4 * gates * (width + recurrent) + BACKWARD_ELEMENTWISE * gates


def mkldnn_rnn_layer_backward_flops(args: tuple, kwargs: dict, out: object) -> int:
    """``aten.mkldnn_rnn_layer_backward(input, weight1, weight2, weight3, weight4, hx_, cx_tmp, output,
    hy_, cy_, grad_output, grad_hy, grad_cy, reverse, mode, hidden_size, num_layers, has_biases, train,
    bidirectional, batch_sizes, batch_first, workspace)``: the backward of one ``mkldnn_rnn_layer`` call
    (one layer-direction of a CPU ``nn.LSTM`` in training), :func:`layer_step_backward_flops` per
    (step, row) pair of ``input``. Every gradient is computed whichever the caller needs (the kernel
    returns them all). A packed sequence (non-empty ``batch_sizes``) is unsupported.
    """
    if list(args[20]):
        raise UnsupportedOperatorFormula(PACKED_REASON)
    kind = _MKLDNN_MODES.get(int(args[14]))
    w_ih, w_hh, hidden = _shape(args[1]), _shape(args[2]), int(args[15])
    if kind is None or len(w_ih) != 2 or len(w_hh) != 2 or w_ih[0] != GATES[kind] * hidden:
        raise UnsupportedOperatorFormula(SHAPE_REASON)
    return _pairs(args[0]) * layer_step_backward_flops(kind, w_ih[1], hidden, w_hh[1])


# --- nn.Bilinear ---------------------------------------------------------------------------------


def bilinear_products(rows: int, in1: int, in2: int, outputs: int) -> int:
    """Multiply-accumulates of ``y_k = x1ᵀ A_k x2`` contracted as PyTorch does: ``x1`` first
    (``in2`` sums of ``in1`` terms per output), then ``x2`` (one sum of ``in2`` terms)."""
    return rows * outputs * (in1 * in2 + in2)


def bilinear_op_flops(args: tuple, kwargs: dict, out: object) -> int:
    """``aten.bilinear(input1, input2, weight, bias=None)``: ``2·MACs + [bias]·out`` — what its
    decomposition (``_trilinear`` and a bias ``add``) counts, so every grad mode agrees."""
    weight = _shape(args[2])
    if len(weight) != 3:
        raise UnsupportedOperatorFormula(TRILINEAR_REASON)
    rows = _pairs(args[0])
    flops = 2 * bilinear_products(rows, weight[1], weight[2], weight[0])
    return flops + (rows * weight[0] if arg(args, kwargs, 3, "bias") is not None else 0)


def trilinear_op_flops(args: tuple, kwargs: dict, out: object) -> int:
    """``aten._trilinear`` in the pattern of ``F.bilinear`` (``expand1 = [1, 3]``, ``expand2 = [0]``,
    ``expand3 = [1, 2]``, ``sumdim = [2, 3]`` on ``(B, in1)``, ``(out, in1, in2)``, ``(B, in2)``):
    2 FLOPs per multiply-accumulate of :func:`bilinear_products`; other patterns are unsupported."""
    i1, weight, i3 = _shape(args[0]), _shape(args[1]), _shape(args[2])
    pattern = [list(args[k]) for k in range(3, 7)] == [[1, 3], [0], [1, 2], [2, 3]]
    if not (pattern and len(i1) == 2 and len(i3) == 2 and len(weight) == 3):
        raise UnsupportedOperatorFormula(TRILINEAR_REASON)
    return 2 * bilinear_products(i1[0], weight[1], weight[2], weight[0])
