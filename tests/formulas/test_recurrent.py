"""Recurrent layers and nn.Bilinear: module formulas and operator formulas (real-models.md §2.4).

Per step, row, layer and direction (in = input width, h = hidden, hr = fed-back width, G gates):
products 2·in·G·h + 2·hr·G·h, bias adds 2·G·h, element-wise LSTM 32h (+ 2·h·hr projection),
GRU 22h, RNN 7h (tanh) / 2h (relu).
"""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

import torchscan
from torchscan.formulas import operators, recurrent_ops
from torchscan.formulas.operator_common import UnsupportedOperatorFormula
from torchscan.modules import module_dmas, module_flops, module_macs, module_rf

SEQ = torch.ones(3, 2, 4)  # T = 3 steps, B = 2 rows, in = 4: 6 (step, row) pairs


def metrics(module: nn.Module, *inputs: torch.Tensor) -> tuple:
    with torch.no_grad():
        out = module(*inputs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return (
            module_flops(module, inputs, out),
            module_macs(module, inputs, out),
            module_dmas(module, inputs, out),
            module_rf(module, inputs, out),
        )


def op_flops(module: nn.Module, *inputs: torch.Tensor, mode: str = "no_grad") -> dict:
    context = {"grad": torch.enable_grad, "no_grad": torch.no_grad, "inference": torch.inference_mode}[mode]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "LSTM with projections is not supported with oneDNN"
        with context():
            return torchscan.measure_flops(lambda: module(*inputs))["total"]


# --- hand-derived small shapes ---------------------------------------------------------------------


HAND = {
    # LSTM(4, 5): 2·4·20 + 2·5·20 + 2·20 + 32·5 = 160 + 200 + 40 + 160 = 560 per pair, ×6 = 3360;
    # MACs (4·20 + 5·20)·6 = 1080; DMAs N 24 + P (80 + 100 + 20 + 20) 220 + 2·S (S = 2·(5 + 5) = 20)
    # + Nout 30 = 314
    "lstm": (lambda: nn.LSTM(4, 5), (3360, 1080, 314, None)),
    # GRU(4, 5): 2·4·15 + 2·5·15 + 2·15 + 22·5 = 120 + 150 + 30 + 110 = 410, ×6 = 2460;
    # MACs (60 + 75)·6 = 810; DMAs 24 + 165 + 2·10 + 30 = 239
    "gru": (lambda: nn.GRU(4, 5), (2460, 810, 239, None)),
    # RNN(4, 5) tanh: 40 + 50 + 10 + 35 = 135, ×6 = 810; MACs 45·6 = 270; DMAs 24 + 55 + 20 + 30 = 129
    "rnn": (lambda: nn.RNN(4, 5), (810, 270, 129, None)),
    # relu: 40 + 50 + 10 + 2·5 = 110, ×6 = 660
    "rnn-relu": (lambda: nn.RNN(4, 5, nonlinearity="relu"), (660, 270, 129, None)),
    # bias=False: 560 − 40 = 520, ×6 = 3120; DMAs 314 − 40 = 274
    "lstm-nobias": (lambda: nn.LSTM(4, 5, bias=False), (3120, 1080, 274, None)),
    # proj_size=3: 2·4·20 + 2·3·20 + 40 + 160 + 2·5·3 = 160 + 120 + 40 + 160 + 30 = 510, ×6 = 3060;
    # MACs (80 + 60 + 15)·6 = 930; DMAs 24 + P (80 + 60 + 40 + 15) 195 + 2·2·(3 + 5) + Nout 18 = 269
    "lstm-proj": (lambda: nn.LSTM(4, 5, proj_size=3), (3060, 930, 269, None)),
    # 2 layers, bidirectional GRU(4, 5): layer 0 2·410 = 820, layer 1 in = 10:
    # 2·10·15 + 150 + 30 + 110 = 590, ×2 = 1180; (820 + 1180)·6 = 12000.
    # MACs: (135·2 + (150 + 75)·2)·6 = (270 + 450)·6 = 4320.
    # DMAs: 24 + P (2·165 + 2·(150 + 75 + 30)) 840 + 2·S (S = 2·2·2·5 = 40) + Nout 3·2·10 = 60 → 1004
    "gru-2l-bi": (lambda: nn.GRU(4, 5, num_layers=2, bidirectional=True), (12000, 4320, 1004, None)),
}


@pytest.mark.parametrize("name", sorted(HAND))
def test_hand_derived_sequence_layers(name: str) -> None:
    make, expected = HAND[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert metrics(make(), SEQ) == expected


def test_cells_and_bilinear_hand_derived() -> None:
    rows = torch.ones(2, 4)
    # LSTMCell(4, 5): 560 per row ×2 = 1120; MACs 180·2 = 360; DMAs 8 + 220 + 2·(2·10) = 268
    assert metrics(nn.LSTMCell(4, 5), rows) == (1120, 360, 268, (1.0, 1.0, 0.0))
    # GRUCell(4, 5): 410·2 = 820; MACs 135·2 = 270; DMAs 8 + 165 + 2·10 = 193
    assert metrics(nn.GRUCell(4, 5), rows) == (820, 270, 193, (1.0, 1.0, 0.0))
    # RNNCell(4, 5, relu, no bias): 40 + 50 + 10 = 100 per row ×2 = 200; DMAs 8 + 45 + 20 = 73
    assert metrics(nn.RNNCell(4, 5, bias=False, nonlinearity="relu"), rows) == (200, 90, 73, (1.0, 1.0, 0.0))
    # Unbatched cell input (4,): one row
    assert metrics(nn.GRUCell(4, 5), torch.ones(4))[:2] == (410, 135)
    # Bilinear(3, 4, 5) on (2, 3), (2, 4): per output 4·(2·3 − 1) + (2·4 − 1) + 1 = 20 + 7 + 1 = 28,
    # ×2 rows ×5 outputs = 280; MACs 10·(12 + 4) = 160; DMAs 6 + 8 + (60 + 5) + 10 = 89
    assert metrics(nn.Bilinear(3, 4, 5), torch.ones(2, 3), torch.ones(2, 4)) == (
        280,
        160,
        89,
        (1.0, 1.0, 0.0),
    )
    # without bias: 270 FLOPs, DMAs 84
    bilinear = nn.Bilinear(3, 4, 5, bias=False)
    assert metrics(bilinear, torch.ones(2, 3), torch.ones(2, 4)) == (270, 160, 84, (1.0, 1.0, 0.0))


def test_layout_options_do_not_change_counts() -> None:
    lstm = nn.LSTM(4, 5, batch_first=True)
    # batch_first (2, 3, 4): same 6 pairs, same 2 rows of state → the LSTM row of HAND
    assert metrics(lstm, torch.ones(2, 3, 4)) == HAND["lstm"][1]
    # unbatched (3, 4): 3 pairs, 1 row: 560·3 = 1680; DMAs 12 + 220 + 2·10 + 15 = 267
    assert metrics(nn.LSTM(4, 5), torch.ones(3, 4)) == (1680, 540, 267, None)
    # given initial states count the same as zeros (values never matter)
    gru = nn.GRU(4, 5)
    with torch.no_grad():
        out = gru(SEQ, torch.ones(1, 2, 5))
    assert module_flops(gru, (SEQ, torch.ones(1, 2, 5)), out) == HAND["gru"][1][0]


def test_training_dropout_between_layers() -> None:
    lstm = nn.LSTM(4, 5, num_layers=3, dropout=0.5)
    with torch.no_grad():
        out = lstm(SEQ)
    # layers 1, 2 read 5-wide inputs: 2·5·20 + 200 + 40 + 160 = 600; eval (560 + 2·600)·6 = 10560
    assert module_flops(lstm.eval(), (SEQ,), out) == 10560
    # training: two dropouts over 6·5 = 30 elements, 2 FLOPs each: + 120
    assert module_flops(lstm.train(), (SEQ,), out) == 10680
    lstm.dropout = 1.0  # p = 1: one multiply per element, + 60
    assert module_flops(lstm, (SEQ,), out) == 10620


# --- module FLOPs vs operator FLOPs ------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["grad", "no_grad", "inference"])
@pytest.mark.parametrize(
    "make",
    [
        lambda: nn.LSTM(4, 5),
        lambda: nn.LSTM(4, 5, bias=False, batch_first=True),
        lambda: nn.LSTM(4, 5, num_layers=2, bidirectional=True),
    ],
)
def test_lstm_kernel_operator_flops_equal_module_flops(make, mode: str) -> None:
    """CPU LSTMs reach ``aten.mkldnn_rnn_layer`` (one per layer and direction) in every grad mode."""
    lstm = make()
    inputs = torch.ones(2, 3, 4) if lstm.batch_first else SEQ
    with torch.no_grad():
        expected = module_flops(lstm, (inputs,), lstm(inputs))
    total = op_flops(lstm, inputs, mode=mode)
    assert total["status"] == "complete" and total["value"] == expected


@pytest.mark.parametrize("mode", ["no_grad", "inference"])
def test_decomposed_kernels_differ_by_fused_biases(mode: str) -> None:
    """GRU, RNN, projected LSTM and cells decompose into ``addmm`` + pointwise operators on CPU:
    ``addmm`` omits its fused biases (B.11) and PyTorch updates a GRU as ``(h − n)·z + n`` (3 ops
    per unit instead of the documented 4). Both differences are exact."""
    cases = [
        # (module, inputs, pairs·layers·dirs, G·h, GRU units)
        (nn.GRU(4, 5), (SEQ,), 6, 15, 5),
        (nn.RNN(4, 5), (SEQ,), 6, 5, 0),
        (nn.RNN(4, 5, nonlinearity="relu", num_layers=2), (SEQ,), 12, 5, 0),
        (nn.LSTM(4, 5, proj_size=3), (SEQ,), 6, 20, 0),
        (nn.LSTMCell(4, 5), (torch.ones(2, 4),), 2, 20, 0),
        (nn.GRUCell(4, 5), (torch.ones(2, 4),), 2, 15, 5),
        (nn.RNNCell(4, 5), (torch.ones(2, 4),), 2, 5, 0),
    ]
    for module, inputs, pairs, gates, gru_units in cases:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = module_flops(module, inputs, module(*inputs))
        total = op_flops(module, *inputs, mode=mode)
        assert total["status"] == "complete", module
        assert total["value"] == expected - pairs * (2 * gates + gru_units), module


def _unrolled_lstm(lstm: nn.LSTM, x: torch.Tensor) -> torch.Tensor:
    """The documented LSTM equations, one step at a time, with separate bias adds."""
    w_ih, w_hh, b_ih, b_hh = lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.bias_ih_l0, lstm.bias_hh_l0
    h = torch.zeros(x.shape[1], lstm.hidden_size)
    c = torch.zeros(x.shape[1], lstm.hidden_size)
    for step in x:
        gates = (step @ w_ih.T + b_ih) + (h @ w_hh.T + b_hh)
        i, f, g, o = gates.chunk(4, 1)
        i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
        c = f * c + i * g
        h = o * c.tanh()
    return h


def _unrolled_gru(gru: nn.GRU, x: torch.Tensor, one: torch.Tensor) -> torch.Tensor:
    w_ih, w_hh, b_ih, b_hh = gru.weight_ih_l0, gru.weight_hh_l0, gru.bias_ih_l0, gru.bias_hh_l0
    h = torch.zeros(x.shape[1], gru.hidden_size)
    for step in x:
        ir, iz, in_ = (step @ w_ih.T + b_ih).chunk(3, 1)
        hr, hz, hn = (h @ w_hh.T + b_hh).chunk(3, 1)
        r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
        n = (in_ + r * hn).tanh()
        h = (one - z) * n + z * h
    return h


def _unrolled_rnn(rnn: nn.RNN, x: torch.Tensor) -> torch.Tensor:
    h = torch.zeros(x.shape[1], rnn.hidden_size)
    for step in x:
        h = ((step @ rnn.weight_ih_l0.T + rnn.bias_ih_l0) + (h @ rnn.weight_hh_l0.T + rnn.bias_hh_l0)).tanh()
    return h


def test_unrolled_equations_match_module_and_operator_flops() -> None:
    """The equations written with torch ops and counted operator by operator give the module
    FLOPs; for the LSTM kernel they also give the kernel's operator FLOPs."""
    one = torch.ones(())
    lstm, gru, rnn = nn.LSTM(4, 5), nn.GRU(4, 5), nn.RNN(4, 5)
    with torch.no_grad():
        unrolled = {
            "lstm": torchscan.measure_flops(lambda: _unrolled_lstm(lstm, SEQ))["total"],
            "gru": torchscan.measure_flops(lambda: _unrolled_gru(gru, SEQ, one))["total"],
            "rnn": torchscan.measure_flops(lambda: _unrolled_rnn(rnn, SEQ))["total"],
        }
    for name in ("lstm", "gru", "rnn"):
        assert unrolled[name]["status"] == "complete", name
        assert unrolled[name]["value"] == HAND[name][1][0], name
    assert op_flops(lstm, SEQ)["value"] == unrolled["lstm"]["value"]


def test_crawl_module_recurrent_rows_complete() -> None:
    report = torchscan.crawl_module(nn.Sequential(nn.Linear(4, 4), nn.GRU(4, 5)), args=(SEQ,), strict=True)
    layer = next(row for row in report["layers"] if row["path"] == "1")
    assert layer["metrics"]["module_flops"]["value"] == 2460
    assert layer["metrics"]["receptive_field"]["method"] == "not_applicable"


# --- unsupported configurations -----------------------------------------------------------------------


def test_packed_sequence_is_unsupported() -> None:
    lstm = nn.LSTM(4, 5)
    packed = pack_padded_sequence(SEQ, torch.tensor([3, 2]))
    with torch.no_grad():
        out = lstm(packed)
    with pytest.raises(NotImplementedError, match="packed sequences"):
        module_flops(lstm, (packed,), out)
    report = torchscan.crawl_module(lstm, args=(packed,))
    row = report["layers"][0]["metrics"]["module_flops"]
    assert row["status"] == "unavailable"
    assert any("packed sequences" in d["message"] for d in report["diagnostics"])


def test_replaced_forward_and_complex_are_unsupported() -> None:
    class MyGRU(nn.GRU):
        def forward(self, x, hx=None):  # type: ignore[override]
            return super().forward(x, hx)

    module = MyGRU(4, 5)
    with torch.no_grad():
        out = module(SEQ)
    with pytest.raises(NotImplementedError, match="exact native types"):
        module_flops(module, (SEQ,), out)
    gru = nn.GRU(2, 2, dtype=torch.complex64)
    x = torch.ones(1, 1, 2, dtype=torch.complex64)
    with pytest.raises(NotImplementedError, match="real, dense"):
        module_macs(gru, x, torch.ones(1, 1, 2, dtype=torch.complex64))


def test_meta_tensors() -> None:
    lstm = nn.LSTM(4, 5, device="meta")
    x = torch.ones(3, 2, 4, device="meta")
    out = lstm(x)
    assert module_flops(lstm, (x,), out) == 3360
    # on meta the LSTM takes the decomposed path (no oneDNN kernel): addmm omits the fused
    # biases, 6 pairs · 2·20 = 240 fewer: 3360 − 240 = 3120, still complete
    total = torchscan.measure_flops(lambda: lstm(x))["total"]
    assert (total["status"], total["value"]) == ("complete", 3120)


# --- operator formulas called directly ---------------------------------------------------------------


def _formula(name: str):
    formula = operators.supplemental_formula(name)
    assert formula is not None, name
    return formula


def test_composite_kernel_formulas_match_module_formulas() -> None:
    """``aten.lstm/gru/rnn_*`` and cells are composite (decomposed when observed, real-models 2.3):
    their own formulas still describe the same equations."""
    gru = nn.GRU(4, 5, num_layers=2, bidirectional=True, dropout=0.5)
    params = list(gru._flat_weights)
    args = (SEQ, torch.zeros(4, 2, 5), params, True, 2, 0.5, True, True, False)
    with torch.no_grad():
        out = gru.train()(SEQ)
    # module: 12000 + training dropout over 6·10 elements, 2 each = 12120
    assert _formula("aten.gru")(args, {}, out) == module_flops(gru, (SEQ,), out) == 12120
    lstm = nn.LSTM(4, 5, proj_size=3)
    largs = (
        SEQ,
        [torch.zeros(1, 2, 3), torch.zeros(1, 2, 5)],
        list(lstm._flat_weights),
        True,
        1,
        0.0,
        False,
        False,
        False,
    )
    assert _formula("aten.lstm")(largs, {}, None) == HAND["lstm-proj"][1][0]
    rnn = nn.RNN(4, 5, nonlinearity="relu")
    rargs = (SEQ, torch.zeros(1, 2, 5), list(rnn._flat_weights), True, 1, 0.0, False, False, False)
    assert _formula("aten.rnn_relu")(rargs, {}, None) == HAND["rnn-relu"][1][0]
    cell = nn.LSTMCell(4, 5)
    cargs = (
        torch.ones(2, 4),
        [torch.zeros(2, 5)] * 2,
        cell.weight_ih,
        cell.weight_hh,
        cell.bias_ih,
        cell.bias_hh,
    )
    assert _formula("aten.lstm_cell")(cargs, {}, None) == 1120
    gcell = nn.GRUCell(4, 5, bias=False)
    assert _formula("aten.gru_cell")(
        (torch.ones(2, 4), torch.zeros(2, 5), gcell.weight_ih, gcell.weight_hh), {}, None
    ) == 2 * (410 - 30)


def test_operator_formulas_reject_packed_and_foreign_layouts() -> None:
    lstm = nn.LSTM(4, 5)
    data_args = (
        torch.ones(5, 4),
        torch.tensor([3, 2]),
        [torch.zeros(1, 2, 5)] * 2,
        list(lstm._flat_weights),
        True,
        1,
        0.0,
        False,
        False,
    )
    with pytest.raises(UnsupportedOperatorFormula, match="packed sequences"):
        _formula("aten.lstm")(data_args, {}, None)
    gru = nn.GRU(4, 5)
    gdata = (
        torch.ones(5, 4),
        torch.tensor([3, 2]),
        torch.zeros(1, 2, 5),
        list(gru._flat_weights),
        True,
        1,
        0.0,
        False,
        False,
    )
    with pytest.raises(UnsupportedOperatorFormula, match="packed sequences"):
        _formula("aten.gru")(gdata, {}, None)
    mkl = (
        SEQ,
        *lstm._flat_weights,
        torch.zeros(2, 5),
        torch.zeros(2, 5),
        False,
        [3, 2],
        2,
        5,
        1,
        True,
        False,
        False,
        False,
    )
    with pytest.raises(UnsupportedOperatorFormula, match="packed sequences"):
        _formula("aten.mkldnn_rnn_layer")(mkl, {}, None)
    with pytest.raises(UnsupportedOperatorFormula, match=r"nn\.Bilinear contraction"):
        _formula("aten._trilinear")(
            (torch.ones(2, 3), torch.ones(5, 3, 4), torch.ones(2, 4), [0], [0], [0], [1], 1), {}, None
        )


def test_fused_cell_formulas() -> None:
    """CUDA's ``_thnn_fused_*_cell`` take precomputed gate products (counted by their ``mm``)."""
    gates4, gates3, state = (
        torch.ones(2, 20, device="meta"),
        torch.ones(2, 15, device="meta"),
        torch.ones(2, 5, device="meta"),
    )
    bias4, bias3 = torch.ones(20, device="meta"), torch.ones(15, device="meta")
    # LSTM: 2 rows · (2·20 biases + 32·5) = 2·200 = 400; without biases 2·160 = 320
    assert _formula("aten._thnn_fused_lstm_cell")((gates4, gates4, state, bias4, bias4), {}, None) == 400
    assert _formula("aten._thnn_fused_lstm_cell")((gates4, gates4, state), {}, None) == 320
    # GRU: 2 · (30 + 110) = 280
    assert _formula("aten._thnn_fused_gru_cell")((gates3, gates3, state, bias3, bias3), {}, None) == 280
    # plus the two gate products 2·(2·4·20 + 2·5·20) = 720: the LSTMCell count 1120
    assert 400 + 2 * (2 * 4 * 20 + 2 * 5 * 20) == 1120
    assert recurrent_ops.cell_step_flops("lstm", 5, True) == 200


@pytest.mark.parametrize("mode", ["no_grad", "inference"])
def test_bilinear_operator_flops(mode: str) -> None:
    bilinear = nn.Bilinear(3, 4, 5)
    x1, x2 = torch.ones(2, 3), torch.ones(2, 4)
    # _trilinear 2·MACs = 2·160 = 320, + bias add 10 = 330 (module FLOPs 280: 2K − 1 dot products)
    total = op_flops(bilinear, x1, x2, mode=mode)
    assert total == {**total, "status": "complete", "value": 330}
    weight = bilinear.weight
    assert _formula("aten.bilinear")((x1, x2, weight, bilinear.bias), {}, None) == 330
    assert _formula("aten.bilinear")((x1, x2, weight), {}, None) == 320
