"""Module attributes of any type (truth.md 2): the leaf memo never crashes and never hits wrongly.

Every report is compared as JSON text with the report of the same model with the memo disabled
(``leaf_key`` answering None), as tests/analysis/crawl/test_leaf_memo.py does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

import torchscan
from torchscan.analysis.crawl import estimate, leaf_memo
from torchscan.formulas import registry


@pytest.fixture(autouse=True)
def _empty_memo() -> Any:
    leaf_memo.SHARED.clear()
    yield
    leaf_memo.SHARED.clear()


def _crawl_text(model: nn.Module, x: torch.Tensor) -> str:
    with torch.no_grad():
        return json.dumps(torchscan.crawl_module(model, args=(x,)))


def _cold_warm_off(model: nn.Module, x: torch.Tensor) -> tuple[str, str, str]:
    """The report with an empty memo, again from the filled memo, and with the memo disabled."""
    leaf_memo.SHARED.clear()
    cold = _crawl_text(model, x)
    warm = _crawl_text(model, x)
    real_key = estimate.leaf_key
    estimate.leaf_key = lambda *_: None  # type: ignore[assignment]
    try:
        off = _crawl_text(model, x)
    finally:
        estimate.leaf_key = real_key
    return cold, warm, off


class _Residual(nn.Module):
    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x) + x


def _conv_mixer(dim: int = 8, depth: int = 2, kernel: int = 5, patch: int = 2, classes: int = 4) -> nn.Module:
    """ConvMixer (Trockman & Kolter, "Patches Are All You Need?"): depthwise 'same' convolutions."""
    blocks: list[nn.Module] = [nn.Conv2d(3, dim, patch, stride=patch), nn.GELU(), nn.BatchNorm2d(dim)]
    for _ in range(depth):
        depthwise = nn.Sequential(
            nn.Conv2d(dim, dim, kernel, groups=dim, padding="same"), nn.GELU(), nn.BatchNorm2d(dim)
        )
        blocks += [_Residual(depthwise), nn.Conv2d(dim, dim, 1), nn.GELU(), nn.BatchNorm2d(dim)]
    blocks += [nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(dim, classes)]
    return nn.Sequential(*blocks).eval()


_CRASHED_BEFORE: dict[str, tuple[Callable[[], nn.Module], tuple[int, ...]]] = {
    "conv_same": (lambda: nn.Conv2d(3, 8, 3, padding="same"), (1, 3, 8, 8)),
    "upsample_list": (lambda: nn.Upsample(size=[16, 16]), (1, 3, 8, 8)),
    "adaptive_pool_list": (lambda: nn.AdaptiveAvgPool2d([2, 2]), (1, 3, 8, 8)),
    "unflatten_list": (lambda: nn.Unflatten(1, [4, 16]), (2, 64)),
    "conv_mixer": (_conv_mixer, (1, 3, 16, 16)),
}


@pytest.mark.parametrize("name", sorted(_CRASHED_BEFORE))
def test_list_attributes_are_analysed_as_without_the_memo(name: str) -> None:
    build, shape = _CRASHED_BEFORE[name]
    cold, warm, off = _cold_warm_off(build(), torch.rand(shape))
    assert cold == warm == off
    report = json.loads(cold)
    assert report["totals"]["module_flops"]["status"] == "complete"


def test_conv_same_is_memoised_not_just_survived(monkeypatch: pytest.MonkeyPatch) -> None:
    # Two equal 'same' convolutions: the second reuses the first's estimates (its reversed padding
    # is a list, which used to crash the key).
    model = nn.Sequential(nn.Conv2d(4, 4, 3, padding="same"), nn.Conv2d(4, 4, 3, padding="same"))
    calls: list[int] = []
    real = estimate._estimate_silently

    def spy(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(estimate, "_estimate_silently", spy)
    with torch.no_grad():
        report = torchscan.crawl_module(model, args=(torch.rand(1, 4, 6, 6),))
    assert len(calls) == 1
    rows = [row for row in report["layers"] if row["type"] == "Conv2d"]
    # 4 out channels x 36 positions x (4 x 9 multiplies + 4 x 9 - 1 additions + 1 bias) = 10,368
    assert [row["metrics"]["module_flops"]["value"] for row in rows] == [10368, 10368]


def _identity_key(extra: object) -> Any:
    module = nn.Identity()
    module.extra = extra  # an attribute of any type, as user code sets them
    plan = registry.leaf_formulas(nn.Identity)
    assert plan is not None
    x = torch.ones(2)
    return leaf_memo.leaf_key(module, plan, (x,), {}, x)


@pytest.mark.parametrize(
    "values",
    [
        ([1, 2], (1, 2), "[1, 2]"),
        (1, 1.0, True),
        (0.0, -0.0, 0, False),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
        ([[1, 2], (3,)], ([1, 2], (3,)), [(1, 2), [3]]),
        (None, "None", [None]),
    ],
)
def test_attribute_values_python_calls_equal_get_different_keys(values: tuple[object, ...]) -> None:
    keys = [_identity_key(value) for value in values]
    assert all(key is not None for key in keys)
    for key in keys:
        hash(key)
    assert len(set(keys)) == len(values)


def test_equal_attribute_values_share_a_key() -> None:
    assert _identity_key([1, [2, 3]]) == _identity_key([1, [2, 3]])
    assert _identity_key({"size": [16, 16]}) == _identity_key({"size": [16, 16]})


@pytest.mark.parametrize("extra", [torch.ones(1), [torch.ones(1)], {"t": torch.ones(1)}, print, object()])
def test_attribute_values_it_cannot_key_skip_the_memo(extra: object) -> None:
    assert _identity_key(extra) is None


class _MutatesBetweenCalls(nn.Module):
    """Calls one convolution twice; between the calls its padding and dilation lists change in place.

    3x3 kernel, padding 1 / dilation 1, then padding 2 / dilation 2: the output shape is the same
    (8x8), the receptive field is not (3, then 2 x (3 - 1) + 1 = 5).
    """

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 2, 3, padding=1)
        self.conv.padding = [1, 1]  # type: ignore[assignment]
        self.conv.dilation = [1, 1]  # type: ignore[assignment]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        first = self.conv(x)
        self.conv.padding[0] = self.conv.padding[1] = 2  # type: ignore[index]
        self.conv.dilation[0] = self.conv.dilation[1] = 2  # type: ignore[index]
        second = self.conv(x)
        self.conv.padding[0] = self.conv.padding[1] = 1  # type: ignore[index]
        self.conv.dilation[0] = self.conv.dilation[1] = 1  # type: ignore[index]
        return first + second


def test_a_list_mutated_between_two_calls_is_never_a_hit() -> None:
    cold, warm, off = _cold_warm_off(_MutatesBetweenCalls(), torch.rand(1, 2, 8, 8))
    assert cold == warm == off
    rows = [row for row in json.loads(cold)["layers"] if row["type"] == "Conv2d"]
    assert [row["metrics"]["receptive_field"]["value"] for row in rows] == [3, 5]
    assert [row["metrics"]["effective_padding"]["value"] for row in rows] == [1, 2]


# --- property: random attribute values on random modules -----------------------------------------

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-4, 4),
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.sampled_from(["same", "valid", "[1, 2]", ""]),
)
_ANY_VALUE = st.recursive(
    st.one_of(_SCALARS, st.just(torch.zeros(1)), st.just(len)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.sampled_from(["a", "b", "size"]), inner, max_size=3),
    ),
    max_leaves=8,
)

# Modules with a forward that runs on a (2, 4, 4, 4) input, and their formula-relevant attributes
# given values of other types that PyTorch still accepts.
_MODULES: tuple[Callable[[Any], nn.Module], ...] = (
    lambda draw: nn.Identity(),
    lambda draw: nn.ReLU(),
    lambda draw: nn.Dropout(draw(st.sampled_from([0, 0.0, -0.0, False, 0.5]))),
    lambda draw: nn.Conv2d(4, 4, 3, padding=draw(st.sampled_from(["same", 1, (1, 1), [1, 1]]))),
    lambda draw: nn.Conv2d(4, 4, 3, groups=4, padding="same"),
    lambda draw: nn.Upsample(size=draw(st.sampled_from([[8, 8], (8, 8), 8]))),
    lambda draw: nn.AdaptiveAvgPool2d(draw(st.sampled_from([[2, 2], (2, 2), 2, [2, None]]))),
    lambda draw: nn.AvgPool2d(draw(st.sampled_from([2, (2, 2), [2, 2]]))),
    lambda draw: nn.LayerNorm(draw(st.sampled_from([4, [4], (4,), torch.Size([4])]))),
    lambda draw: nn.BatchNorm2d(4).eval(),
    lambda draw: nn.GELU(approximate=draw(st.sampled_from(["none", "tanh"]))),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_attributes_on_random_modules_report_as_without_the_memo(data: st.DataObject) -> None:
    picks = data.draw(st.lists(st.integers(0, len(_MODULES) - 1), min_size=1, max_size=5), label="modules")
    layers = []
    for index in picks:
        module = _MODULES[index](data.draw)
        for name in data.draw(
            st.lists(st.sampled_from(["cfg", "extra", "_private"]), max_size=2, unique=True)
        ):
            setattr(module, name, data.draw(_ANY_VALUE, label=name))
        layers.append(module)
    # Every module keeps 2x4 channels at 4x4 or grows to 8x8: bring each output back to 4x4.
    model = nn.Sequential(*(nn.Sequential(layer, nn.AdaptiveAvgPool2d(4)) for layer in layers))
    cold, warm, off = _cold_warm_off(model, torch.rand(2, 4, 4, 4))
    assert cold == warm == off
