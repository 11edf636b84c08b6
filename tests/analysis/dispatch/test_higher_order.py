"""Higher-order operators never break a workload (attention-and-scaling.md 1).

``cond``, ``while_loop``, ``map``, ``scan`` and ``invoke_subgraph`` are observed through their
callables: the operators they run are counted as if called directly, so the totals stay complete.
A HOP without a rule (``_PROBE`` below, registered by this test) runs as it would without TorchScan and
makes the metric partial naming it. The same holds in ``measure_flops``, ``crawl_module``,
``measure_memory`` and ``measure_generation``; compiled code is observed as eager code.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch._C import DispatchKey
from torch._ops import HigherOrderOperator

from torchscan import crawl_module, measure_flops, measure_generation, measure_memory

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
attention = pytest.importorskip("torch.nn.attention.flex_attention")
hops = pytest.importorskip("torch._higher_order_ops")


class _ProbeHop(HigherOrderOperator):
    """A higher-order operator TorchScan has no rule for: ``probe(fn, x) = fn(x)``."""

    def __init__(self) -> None:
        super().__init__("torchscan_probe")

    def __call__(self, fn, x):
        return super().__call__(fn, x)


_PROBE = _ProbeHop()


@_PROBE.py_impl(DispatchKey.CompositeExplicitAutograd)
def _probe_dense(fn, x):
    return fn(x)


@_PROBE.py_impl(DispatchKey.Autograd)
def _probe_autograd(fn, x):
    with torch._C._AutoDispatchBelowAutograd():
        return _PROBE(fn, x)


X = torch.arange(32.0).reshape(4, 8) / 32  # sum 15.5 > 0: cond takes its first branch


def _no_mode_left() -> bool:
    return torch._C._len_torch_dispatch_stack() == 0


# --- observed through their callables: complete ----------------------------------------------------


def _cond():
    return torch.cond(X.sum() > 0, lambda t: t.sin(), lambda t: t.cos().cos(), (X,))


def _while_loop():
    # three iterations of x·2 (32 FLOPs each) and i + 1 (integer: 0), four comparisons (integer: 0)
    return hops.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x * 2), (torch.tensor(0), X))


def _map():
    return hops.map(lambda row: row.sin(), X)  # four rows of 8 sines


def _scan():
    # four steps: carry + row (8), carry · 2 (8)
    return hops.scan(lambda carry, row: (carry + row, carry * 2), torch.zeros(8), X)


# (workload, by_operator without the predicate's sum and comparison)
OBSERVED = {
    "cond": (_cond, {"aten.sin": 32}),
    "while_loop": (_while_loop, {"aten.add": 0, "aten.lt": 0, "aten.mul": 96}),
    "map": (_map, {"aten.sin": 32}),
    "scan": (_scan, {"aten.add": 32, "aten.mul": 32}),
}


@pytest.mark.parametrize("name", sorted(OBSERVED))
def test_control_flow_is_counted_through_its_callables(name):
    workload, expected = OBSERVED[name]
    report = measure_flops(workload)
    assert report["total"]["status"] == "complete"
    counted = {k: v for k, v in report["by_operator"].items() if k in expected}
    assert counted == expected
    assert not any(key.startswith("higher_order.") for key in report["by_operator"])
    assert _no_mode_left()


def test_invoke_subgraph_is_counted_through_its_subgraph():
    invoke = getattr(torch.ops.higher_order, "invoke_subgraph", None)
    if invoke is None:
        pytest.skip("this PyTorch has no invoke_subgraph")
    graph = torch.fx.symbolic_trace(lambda x: x.sin() * 2)
    report = measure_flops(lambda: invoke(graph, "subgraph_0", X))
    assert report["by_operator"] == {"aten.mul": 32, "aten.sin": 32}
    assert report["total"]["status"] == "complete"


def test_cond_counts_the_branch_that_ran():
    taken = measure_flops(lambda: torch.cond(X.sum() < 0, lambda t: t.sin(), lambda t: t.cos().cos(), (X,)))
    assert taken["by_operator"]["aten.cos"] == 64 and "aten.sin" not in taken["by_operator"]


def test_nested_hops_are_observed():
    def workload():
        return torch.cond(X.sum() > 0, lambda t: hops.map(lambda r: r.exp(), t), lambda t: t.clone(), (X,))

    report = measure_flops(workload)
    assert report["by_operator"]["aten.exp"] == 32
    assert report["total"]["status"] == "complete"


# --- a HOP without a rule: partial, never raising ------------------------------------------------


def test_unknown_hop_runs_unobserved_and_is_named():
    expected = X.sin() @ X.T
    result = []
    report = measure_flops(lambda: result.append(_PROBE(lambda t: t.sin() @ t.T, X)))
    assert torch.equal(result[0], expected)  # it ran as it does without TorchScan
    total = report["total"]
    assert total["status"] == "partial" and total["value"] is None and total["known_value"] == 0
    assert report["diagnostics"] == [
        {
            "code": "uncounted_operator",
            "severity": "warning",
            "metric": "flops",
            "message": (
                "higher_order.torchscan_probe was observed 1 time(s), but no FLOP formula is registered."
            ),
            "operator": "higher_order.torchscan_probe",
        }
    ]


def test_unknown_hop_makes_the_memory_peak_a_lower_bound():
    report = measure_memory(lambda: _PROBE(lambda t: (t @ t.T).sin(), X))
    assert report["peak"]["status"] == "partial"
    (entry,) = [d for d in report["diagnostics"] if d["code"] == "higher_order_operator"]
    assert "higher_order.torchscan_probe" in entry["message"]


def test_control_flow_memory_is_seen_inside():
    report = measure_memory(_while_loop)
    assert report["peak"]["status"] == "complete"
    assert not [d for d in report["diagnostics"] if d["code"] == "higher_order_operator"]


# --- errors -------------------------------------------------------------------------------------


class _WorkloadError(Exception):
    pass


def test_exceptions_propagate_unchanged_and_no_mode_stays():
    error = _WorkloadError("boom")

    def raising(t):
        raise error

    for api in (measure_flops, measure_memory):
        with pytest.raises(_WorkloadError) as caught:
            api(lambda: _PROBE(raising, X))
        assert caught.value is error
        assert _no_mode_left()

        def after_hops():
            _cond()
            _while_loop()
            raise error

        with pytest.raises(_WorkloadError) as caught:
            api(after_hops)
        assert caught.value is error
        assert _no_mode_left()

    class Raising(nn.Module):
        def forward(self, x):
            _cond()
            return _PROBE(raising, x)

    with pytest.raises(_WorkloadError) as caught:
        crawl_module(Raising(), args=(X,))
    assert caught.value is error
    assert _no_mode_left()


# --- modules: crawl_module and measure_generation ---------------------------------------------------


class _Block(nn.Module):
    """A linear layer, a causal flex attention, then a cond on the result."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.mask = attention.create_block_mask(
            lambda b, h, q, kv: q >= kv, None, None, 256, 256, device="cpu"
        )

    def forward(self, x):
        y = self.proj(x)
        y = attention.flex_attention(y, y, y, block_mask=self.mask)
        return torch.cond(y.sum() > 0, lambda t: t.sin(), lambda t: t.sin(), (y,))


def test_crawl_module_counts_and_attributes_hops():
    block = _Block().requires_grad_(False)  # PyTorch's flex attention has no CPU backward
    report = crawl_module(block, args=(torch.randn(1, 2, 256, 16),))
    flops = report["operator_flops"]
    assert flops["total"]["status"] == "complete"
    # 1·2·256 rows · 16 · 16 · 2 (addmm) ; the flex worked example (tests/formulas/test_flex_attention.py)
    assert flops["by_operator"]["aten.addmm"] == 262_144
    assert flops["by_operator"]["higher_order.flex_attention"] == 6_945_792
    assert flops["by_operator"]["aten.sin"] == 8_192
    assert report["totals"]["operator_flops"]["value"] == flops["total"]["value"]
    root, proj = report["layers"][:2]  # the block, then its linear layer
    assert root["metrics"]["operator_flops"]["value"] == flops["total"]["value"]
    # the flex attention and the cond ran in the block's own frame, the product in the linear's
    assert root["metrics"]["operator_flops_self"]["value"] == flops["total"]["value"] - 262_144
    assert proj["metrics"]["operator_flops"]["value"] == 262_144
    assert _no_mode_left()


class _Generator(nn.Module):
    """A hand-written ``generate`` whose every step runs flex attention, cond and while_loop."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(50, 16)

    def forward(self, tokens):
        x = self.embed(tokens).unsqueeze(1)  # (1, 1, T, 16)
        x = attention.flex_attention(x, x, x)
        x = torch.cond(x.sum() > 0, lambda t: t * 2, lambda t: t * 3, (x,))
        return hops.while_loop(lambda i, t: i < 2, lambda i, t: (i + 1, t + 1), (torch.tensor(0), x))[1]

    def generate(self, tokens, max_new_tokens):
        for _ in range(max_new_tokens):
            out = self(tokens)
            tokens = torch.cat([tokens, out[:, 0, -1:, 0].long().abs() % 50], dim=-1)
        return tokens


def test_generation_steps_stay_complete_with_hops():
    model = _Generator().requires_grad_(False)
    report = measure_generation(
        model, args=(torch.arange(8).reshape(1, 8),), generate_kwargs={"max_new_tokens": 3}
    )
    assert [step["input_tokens"] for step in report["steps"]] == [8, 9, 10]
    for step in report["steps"]:
        assert step["flops"]["status"] == "complete"
        # flex attention's K and V: 2 · T tokens · 16 · 4 bytes
        assert step["attention_kv_bytes"]["value"] == 2 * step["input_tokens"] * 16 * 4
    assert _no_mode_left()


# --- compiled code ------------------------------------------------------------------------------


def _flex_workload():
    q = torch.randn(1, 2, 256, 16)
    mask = attention.create_block_mask(lambda b, h, qi, kv: qi >= kv, None, None, 256, 256, device="cpu")
    return q, mask


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_compiled_regions_are_counted_as_eager(backend):
    q, mask = _flex_workload()

    def region(x):
        return attention.flex_attention(x.sin(), x, x, block_mask=mask).cos()

    eager = measure_flops(lambda: region(q))
    compiled = torch.compile(region, backend=backend)
    report = measure_flops(lambda: compiled(q))  # Dynamo skips it while TorchScan observes: eager
    assert report["by_operator"] == eager["by_operator"]
    assert report["by_operator"]["higher_order.flex_attention"] == 6_945_792
    assert report["total"]["status"] == "complete"
    assert _no_mode_left()


@pytest.mark.slow
def test_code_compiled_before_the_measurement_is_counted_as_eager():
    q, mask = _flex_workload()

    def region(x):
        return attention.flex_attention(x.sin(), x, x, block_mask=mask)

    compiled = torch.compile(region)  # inductor: the flex kernel and the sine become generated code
    compiled(q)
    report = measure_flops(lambda: compiled(q))
    assert report["by_operator"] == {"aten.sin": 8_192, "higher_order.flex_attention": 6_945_792}


@pytest.mark.slow
def test_transformers_llama_with_flex_attention_generates_completely():
    transformers = pytest.importorskip("transformers")
    transformers.utils.logging.set_verbosity_error()
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=1000,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=0,
    )
    config._attn_implementation = "flex_attention"
    model = transformers.LlamaForCausalLM(config).eval()
    report = measure_generation(
        model, args=(torch.arange(16).reshape(1, 16),), generate_kwargs={"max_new_tokens": 3}
    )
    # K/V bytes per cached token: 2 (K and V) · 2 layers · 2 KV heads · 16 head_dim · 4 bytes
    assert [s["attention_kv_bytes"]["value"] for s in report["steps"]] == [512 * n for n in (16, 17, 18)]
    assert all(s["flops"]["status"] == "complete" for s in report["steps"])


def test_repeated_measurements_reuse_the_compiled_hop_wrappers():
    counters = pytest.importorskip("torch._dynamo.utils").counters
    q, mask = _flex_workload()
    measure_flops(lambda: attention.flex_attention(q, q, q, block_mask=mask))
    compiled = counters["stats"]["unique_graphs"]
    for _ in range(2):
        report = measure_flops(lambda: attention.flex_attention(q, q, q, block_mask=mask))
        assert report["by_operator"] == {"higher_order.flex_attention": 6_945_792}
    # PyTorch's flex_attention compiles its eager wrapper once; observing it must not recompile it
    assert counters["stats"]["unique_graphs"] == compiled


def test_dynamo_guard_hook_is_chained_and_restored():
    eval_frame = pytest.importorskip("torch._C._dynamo.eval_frame")
    if not hasattr(eval_frame, "set_guard_complete_hook"):
        pytest.skip("this PyTorch has no guard-complete hook")
    seen: list[bool] = []

    def callers_hook(cache_hit: bool) -> bool:
        seen.append(cache_hit)
        return cache_hit

    compiled = torch.compile(lambda x: x.sin() * 2, backend="eager")
    compiled(X)
    previous = eval_frame.set_guard_complete_hook(callers_hook)
    try:
        report = measure_flops(lambda: compiled(X))
        assert report["by_operator"] == {"aten.mul": 32, "aten.sin": 32}
        assert seen == [True]  # the caller's hook still saw the cache hit TorchScan turned into eager code
        with pytest.raises(_WorkloadError):
            measure_memory(lambda: (compiled(X), _raise(_WorkloadError())))
        assert eval_frame.set_guard_complete_hook(previous) is callers_hook  # restored, also after an error
    finally:
        eval_frame.set_guard_complete_hook(previous)


def _raise(error: Exception) -> None:
    raise error
