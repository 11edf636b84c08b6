"""``attention_kv_bytes`` says what was counted (truth.md 4).

A model without attention key/value reads (a plain MLP, a Mamba- or RWKV-like recurrent state) has
``not_applicable`` KV bytes with the reason (``attention_kv_not_applicable``), not ``unavailable``;
eager attention (products and a softmax) stays ``unavailable`` with ``attention_not_fused``, a fused
kernel is counted, and glue without any product (sampling between decode steps) is a complete 0.
"""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from torchscan import measure_flops, render_report
from torchscan.report.validate.operators import validate_flop_report


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class SelectiveScan(nn.Module):
    """A Mamba-like block (Gu & Dao 2023): input projection, depthwise causal convolution, a
    data-dependent diagonal recurrence h_t = exp(Δ·A)·h_{t-1} + Δ·B_t·x_t read out by C_t, gate."""

    def __init__(self, width: int = 8, state: int = 4) -> None:
        super().__init__()
        self.project = nn.Linear(width, 2 * width)
        self.conv = nn.Conv1d(width, width, 3, groups=width, padding=2)
        self.to_dbc = nn.Linear(width, 1 + 2 * state)
        self.log_a = nn.Parameter(torch.zeros(width, state))
        self.out = nn.Linear(width, width)
        self.state = state

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        length = x.shape[1]
        u, gate = self.project(x).chunk(2, dim=-1)
        u = F.silu(self.conv(u.transpose(1, 2))[..., :length].transpose(1, 2))
        delta, b, c = self.to_dbc(u).split([1, self.state, self.state], dim=-1)
        delta = F.softplus(delta)
        h = torch.zeros(x.shape[0], u.shape[-1], self.state)
        outputs = []
        for t in range(length):
            decay = torch.exp(delta[:, t, :, None] * -torch.exp(self.log_a))
            h = decay * h + delta[:, t, :, None] * b[:, t, None, :] * u[:, t, :, None]
            outputs.append(torch.einsum("bds,bs->bd", h, c[:, t]))
        return self.out(torch.stack(outputs, 1) * F.silu(gate))


class TimeMix(nn.Module):
    """An RWKV-like time mixing: a recurrent weighted sum of values with exponential decay, no softmax."""

    def __init__(self, width: int = 8) -> None:
        super().__init__()
        self.key, self.value, self.receptance = (nn.Linear(width, width) for _ in range(3))
        self.decay = nn.Parameter(torch.zeros(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k, v, r = self.key(x), self.value(x), torch.sigmoid(self.receptance(x))
        numerator = torch.zeros_like(k[:, 0])
        denominator = torch.zeros_like(k[:, 0])
        outputs = []
        for t in range(x.shape[1]):
            weight = torch.exp(k[:, t])
            numerator = torch.exp(-torch.exp(self.decay)) * numerator + weight * v[:, t]
            denominator = torch.exp(-torch.exp(self.decay)) * denominator + weight
            outputs.append(r[:, t] * numerator / denominator)
        return torch.stack(outputs, 1)


class EagerAttention(nn.Module):
    def __init__(self, width: int = 8) -> None:
        super().__init__()
        self.qkv = nn.Linear(width, 3 * width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return torch.softmax(q @ k.transpose(-1, -2) / 8**0.5, dim=-1) @ v


class FusedAttention(EagerAttention):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # (batch, heads, tokens, features): the layout CPU's fused kernel takes on every tested torch
        q, k, v = (part.unsqueeze(1) for part in self.qkv(x).chunk(3, dim=-1))
        return F.scaled_dot_product_attention(q, k, v).squeeze(1)


def _steps(model: nn.Module) -> dict:
    x = torch.rand(2, 5, 8)

    def two_calls() -> None:
        with torch.no_grad():
            model(x)
            model(x[:, :1]).argmax(-1)  # a second step, then glue outside the steps

    report = measure_flops(two_calls, modules=model, by_step=True)
    validate_flop_report(json.loads(json.dumps(report)))
    return report


def _codes(report: dict) -> list[str]:
    return [entry["code"] for entry in report["diagnostics"] if entry["metric"] == "attention_kv_bytes"]


@pytest.mark.parametrize("model", [MLP, SelectiveScan, TimeMix], ids=["mlp", "mamba_like", "rwkv_like"])
def test_a_model_without_attention_has_not_applicable_kv_bytes_with_the_reason(
    model: type[nn.Module],
) -> None:
    report = _steps(model())
    for step in report["by_step"]:
        kv = step["attention_kv_bytes"]
        assert (kv["status"], kv["method"], kv["value"], kv["known_value"]) == (
            "unavailable",
            "not_applicable",
            None,
            None,
        )
        assert kv["unit"] == "bytes" and kv["scope"] == "step"
    assert _codes(report) == ["attention_kv_not_applicable"]
    message = next(d["message"] for d in report["diagnostics"] if d["code"] == "attention_kv_not_applicable")
    assert message.startswith("Steps 0, 1 ran matrix products but no attention")
    outside = report["outside_steps"]["attention_kv_bytes"]  # the argmax: no product at all
    assert (outside["status"], outside["value"]) == ("complete", 0)


def test_eager_attention_stays_unavailable_as_not_fused() -> None:
    report = _steps(EagerAttention())
    for step in report["by_step"]:
        kv = step["attention_kv_bytes"]
        assert (kv["status"], kv["method"]) == ("unavailable", "torchscan_attention_kv_bytes")
    assert _codes(report) == ["attention_not_fused"]


def test_a_fused_kernel_is_counted() -> None:
    report = _steps(FusedAttention())
    # K and V of each step: 2 tensors x batch 2 x tokens x 8 features x 4 bytes
    assert [step["attention_kv_bytes"]["value"] for step in report["by_step"]] == [
        2 * 2 * 5 * 8 * 4,
        2 * 2 * 1 * 8 * 4,
    ]
    assert _codes(report) == []


def test_an_mlp_classifier_with_a_softmax_head_is_not_claimed_attention_free() -> None:
    # Products and a softmax are eager attention's signature: without a way to tell them apart the
    # KV bytes stay unavailable (never a not_applicable that might hide attention).
    model = nn.Sequential(nn.Linear(8, 4), nn.Softmax(dim=-1))
    report = _steps(model)
    assert _codes(report) == ["attention_not_fused"]


def test_a_mamba_generation_reports_not_applicable_in_every_view() -> None:
    transformers = pytest.importorskip("transformers")
    from torchscan import measure_generation
    from torchscan.report.validate import validate_report
    from torchscan.views.generation.page import step_table_text

    torch.manual_seed(0)
    config = transformers.MambaConfig(
        vocab_size=32,
        hidden_size=8,
        state_size=4,
        num_hidden_layers=1,
        expand=2,
        conv_kernel=3,
        time_step_rank=2,
    )
    model = transformers.MambaForCausalLM(config).eval()
    report = measure_generation(
        model, args=(torch.tensor([[1, 2, 3]]),), generate_kwargs={"max_new_tokens": 3, "do_sample": False}
    )
    validate_report(json.loads(json.dumps(report)))
    assert [step["attention_kv_bytes"]["method"] for step in report["steps"]] == ["not_applicable"] * 3
    for part in ("prefill", "decode", "decode_per_token"):
        assert report[part]["attention_kv_bytes"]["method"] == "not_applicable"
    assert report["decode_fit"]["attention_kv_bytes"] is None
    assert "attention_kv_not_applicable" in {d["code"] for d in report["operator_flops"]["diagnostics"]}
    rows = step_table_text(report).splitlines()[1:]
    assert all(" n/a " in row for row in rows)
    assert "not_applicable" in render_report(report)
