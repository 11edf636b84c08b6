"""FFT kernels, fused weight normalisation and ``isin`` (families.md §2 and §4), hand-derived numbers.

Every workload is measured under ``enable_grad``, ``no_grad`` and ``inference_mode``: under
``inference_mode`` the ``fft_*`` / ``_weight_norm`` composites reach the mode and are decomposed
into the same kernels, so value, status and ``by_operator`` are identical.
"""

from __future__ import annotations

import pytest
import torch
from kernel_checks import complete
from torch import nn

from torchscan import crawl_module
from torchscan.formulas.operators import supplemental_formula


def meta(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.empty(*shape, dtype=dtype, device="meta")


# --- FFT: Σ_d 5·N·log2(n_d) (+ normalisation) --------------------------------------------------------


@pytest.mark.parametrize(("length", "expected"), [(8, 120), (1024, 51_200)])  # 5·8·3; 5·1024·10
def test_complex_fft_of_the_spec(length, expected):
    signal = torch.ones(length, dtype=torch.complex64)
    assert complete(lambda: torch.fft.fft(signal)) == (expected, {"aten._fft_c2c": expected})


@pytest.mark.parametrize(
    ("norm", "expected"),
    # c2c of 8: 120; "backward" leaves the forward transform unscaled; "ortho"/"forward" scale the
    # 8 complex outputs: 2 real multiplies each (+16)
    [("backward", 120), ("ortho", 136), ("forward", 136)],
)
def test_complex_fft_normalisation(norm, expected):
    signal = torch.ones(8, dtype=torch.complex64)
    assert complete(lambda: torch.fft.fft(signal, norm=norm))[0] == expected
    # the inverse is scaled by default ("backward") and unscaled with "forward"
    inverse = {"backward": 136, "ortho": 136, "forward": 120}[norm]
    assert complete(lambda: torch.fft.ifft(signal, norm=norm))[0] == inverse


def test_fft_of_a_non_power_of_two_rounds_half_up():
    # 5·6·log2 6 = 77.549…: 78
    assert complete(lambda: torch.fft.fft(torch.ones(6, dtype=torch.complex64)))[0] == 78


def test_fft2_sums_both_dims():
    # real input (4, 8): _to_copy to complex (data movement, ignored), then c2c over dims 0 and 1:
    # 5·32·log2 4 + 5·32·log2 8 = 320 + 480
    assert complete(lambda: torch.fft.fft2(torch.ones(4, 8))) == (800, {"aten._fft_c2c": 800})


@pytest.mark.parametrize(
    ("norm", "expected"),
    # half of c2c on the real input (120 / 2 = 60); normalised: + 2 · 5 one-sided complex outputs
    [("backward", 60), ("ortho", 70), ("forward", 70)],
)
def test_rfft_is_half_a_complex_transform(norm, expected):
    signal = torch.ones(8)
    assert complete(lambda: torch.fft.rfft(signal, norm=norm)) == (expected, {"aten._fft_r2c": expected})


@pytest.mark.parametrize(
    ("norm", "expected"),
    # half of c2c on the real output of length 8 (60); the inverse is scaled by default ("backward")
    # and with "ortho": + 8 real outputs; "forward" leaves it unscaled
    [("backward", 68), ("ortho", 68), ("forward", 60)],
)
def test_irfft_is_half_a_complex_transform_of_its_output(norm, expected):
    spectrum = torch.ones(5, dtype=torch.complex64)
    assert complete(lambda: torch.fft.irfft(spectrum, norm=norm)) == (expected, {"aten._fft_c2r": expected})


def test_rfft2_and_irfft2():
    # rfft2 of (4, 8): r2c over both dims on the real shape: (320 + 480) / 2 = 400
    assert complete(lambda: torch.fft.rfft2(torch.ones(4, 8)))[0] == 400
    # irfft2 of (4, 5) -> (4, 8): one c2r over both dims, half of c2c on the real output shape
    # (320 + 480) / 2 = 400, + 32 real outputs scaled by 1/n (default "backward")
    assert complete(lambda: torch.fft.irfft2(torch.ones(4, 5, dtype=torch.complex64))) == (
        432,
        {"aten._fft_c2r": 432},
    )


def test_view_as_real_after_an_fft_is_not_uncounted():
    # fft of a real signal: one r2c with the full (two-sided) output: half of 5·8·3 = 60, unscaled;
    # view_as_real is a complex view (metadata, families.md 1.2)
    value, by_operator = complete(lambda: torch.view_as_real(torch.fft.fft(torch.ones(8))))
    assert (value, by_operator) == (60, {"aten._fft_r2c": 60})


# --- weight norm: 3·N(v) + v.shape[dim] ------------------------------------------------------------


def test_parametrized_weight_norm_conv_is_complete_in_both_views():
    # Conv1d(4, 4, 3), dim=2 (the kernel's last dim: the fused _weight_norm_interface kernel):
    # weight v (4, 4, 3): 3·48 + 3 slices = 147; the convolution (1, 4, 16) -> (1, 4, 14):
    # 2·4·14·4·3 = 1,344
    torch.manual_seed(0)
    model = nn.utils.parametrizations.weight_norm(nn.Conv1d(4, 4, 3), dim=2)
    x = torch.rand(1, 4, 16)
    value, by_operator = complete(lambda: model(x))
    assert by_operator == {"aten._weight_norm_interface": 147, "aten.convolution": 1344}
    totals = crawl_module(model, args=(x,))["totals"]
    # module MACs: the convolution's 672 (a generated ParametrizedConv1d resolves Conv1d's formula
    # through its MRO) + 0 for the _WeightNorm parametrization's operator (functional convention)
    assert (totals["macs"]["status"], totals["macs"]["value"]) == ("complete", 672)
    assert (totals["module_flops"]["status"], totals["module_flops"]["value"]) == ("complete", 1344 + 147)
    # DMAs of the parametrization: v 48 + g 3 read, w 48 + norms 3 written = 102, beside the conv's
    assert totals["dmas"]["status"] == "complete"
    assert totals["operator_flops"]["value"] == value == 1491


def test_weight_norm_over_the_first_dim():
    # dim=0 (4 output channels): 3·48 + 4 = 148
    model = nn.utils.parametrizations.weight_norm(nn.Conv1d(4, 4, 3), dim=0)
    _, by_operator = complete(lambda: model(torch.rand(1, 4, 16)))
    assert by_operator["aten._weight_norm_interface"] == 148


@pytest.mark.parametrize(("dim", "expected"), [(0, 148), (2, 147), (-1, 145)])  # -1: one slice, 144 + 1
def test_weight_norm_interface_formula(dim, expected):
    formula = supplemental_formula("aten._weight_norm_interface")
    assert formula is not None
    assert formula((meta(4, 4, 3), meta(1, 1, 1), dim), {}, None) == expected


def test_old_weight_norm_api_over_the_whole_tensor_is_complete():
    # nn.utils.weight_norm(dim=None) -> dim=-1: PyTorch computes it without the fused kernel
    # (norm 2·48 = 96, g / norm 1, v · (g / norm) 48), all counted
    with pytest.warns(FutureWarning):
        model = nn.utils.weight_norm(nn.Conv1d(4, 4, 3), dim=None)
    value, by_operator = complete(lambda: model(torch.rand(1, 4, 16)))
    assert by_operator == {"aten.convolution": 1344, "aten.norm": 96, "aten.div": 1, "aten.mul": 48}
    assert value == 1344 + 145
    with pytest.warns(FutureWarning):
        fused = nn.utils.weight_norm(nn.Conv1d(4, 4, 3), dim=0)
    assert complete(lambda: fused(torch.rand(1, 4, 16)))[1]["aten._weight_norm_interface"] == 148


# --- isin: 0 for integers, else N(elements)·N(test_elements) ----------------------------------------


def test_isin_of_integers_is_zero_and_complete():
    assert complete(lambda: torch.isin(torch.tensor([1, 2, 3]), torch.tensor([2]))) == (0, {"aten.isin": 0})


@pytest.mark.parametrize(
    ("workload", "expected"),
    [
        (lambda: torch.isin(torch.tensor([1.0, 2, 3]), torch.tensor([2.0, 4])), 6),  # 3·2
        (lambda: torch.isin(torch.tensor([1.0, 2, 3]), 2.0), 3),  # a Scalar is one test element
        (lambda: torch.isin(2.0, torch.tensor([1.0, 2, 3])), 3),
        (lambda: torch.isin(torch.tensor([1, 2, 3]), 2), 0),  # integer Scalar: 0
    ],
)
def test_isin_counts_floating_comparisons(workload, expected):
    assert complete(workload)[0] == expected


def test_llama_generate_is_complete():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=64,
    )
    model = transformers.LlamaForCausalLM(config).eval()
    ids = torch.tensor([[1, 5, 7, 9]])
    value, by_operator = complete(
        lambda: model.generate(ids, max_new_tokens=8, do_sample=False, pad_token_id=0)
    )
    # the stopping check compares integer token ids: counted, and 0
    assert by_operator["aten.isin"] == 0 and value > 0
