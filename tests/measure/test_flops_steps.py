"""measure_flops(by_step=True): steps of any workload, exact sums, hooks, GPT-2 generate (generation.md 1)."""

from __future__ import annotations

import itertools
import json
import threading

import pytest
import torch
from torch import nn

from torchscan import measure_flops
from torchscan.report.validate.operators import validate_flop_report

F32, I64 = 4, 8


class TinyLM(nn.Module):
    """Embedding then a vocabulary head: a decoder without attention."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 8)
        self.head = nn.Linear(8, 10)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(ids))


def decode(model: nn.Module, prompt: torch.Tensor, steps: int) -> None:
    ids = prompt
    for _ in range(steps):
        logits = model(ids)
        ids = logits[:, -1].argmax(-1, keepdim=True)  # greedy, outside the step


def step_bytes(tokens: int) -> int:
    embedding = 10 * 8 * F32 + tokens * I64 + tokens * 8 * F32  # table, ids, rows written
    addmm = 10 * F32 + tokens * 8 * F32 + 8 * 10 * F32 + tokens * 10 * F32  # bias, input, weight, out
    return embedding + addmm


def values(report, key):
    return [step[key]["value"] for step in report["by_step"]]


def test_hand_written_decode_loop_steps_sum_exactly():
    model, prompt = TinyLM(), torch.tensor([[1, 2, 3, 4]])
    with torch.no_grad():
        report = measure_flops(lambda: decode(model, prompt, 3), modules=model, by_step=True)
    assert [step["index"] for step in report["by_step"]] == [0, 1, 2]
    assert [step["input_tokens"] for step in report["by_step"]] == [4, 1, 1]
    assert values(report, "flops") == [2 * 4 * 8 * 10, 2 * 8 * 10, 2 * 8 * 10]  # addmm only
    assert (
        values(report, "operator_bytes") == [step_bytes(4), step_bytes(1), step_bytes(1)] == [1128, 792, 792]
    )
    outside = report["outside_steps"]
    assert outside["flops"]["value"] == 3 * 9  # argmax over 10 logits, three times
    assert outside["operator_bytes"]["value"] == 3 * (10 * F32 + I64)
    assert sum(values(report, "flops")) + outside["flops"]["value"] == report["total"]["value"] == 987
    assert sum(values(report, "operator_bytes")) + outside["operator_bytes"]["value"] == 2856
    assert report["operator_bytes"]["value"] == 2856
    for step in report["by_step"]:
        assert step["flops"]["scope"] == "step" and step["flops"]["status"] == "complete"
        # truth.md 4: a product but no softmax and no fused kernel: this decoder has no attention, so
        # its KV bytes are not applicable (with the reason), neither 0 nor "attention not fused"
        kv = step["attention_kv_bytes"]
        assert (kv["status"], kv["method"]) == ("unavailable", "not_applicable")
    # the argmax outside the steps ran no matrix product, hence no attention: a complete 0
    outside_kv = outside["attention_kv_bytes"]
    assert (outside_kv["status"], outside_kv["value"]) == ("complete", 0)
    assert [(d["code"], d["metric"]) for d in report["diagnostics"]] == [
        ("attention_kv_not_applicable", "attention_kv_bytes")
    ]
    assert report["diagnostics"][0]["message"].startswith(
        "Steps 0, 1, 2 ran matrix products but no attention"
    )
    validate_flop_report(json.loads(json.dumps(report)))


def test_nested_calls_of_the_root_are_one_step_and_input_tokens_reads_kwargs():
    class Recursive(nn.Module):
        def forward(self, x: torch.Tensor, *, depth: torch.Tensor) -> torch.Tensor:
            return x if depth.item() == 0 else self(x * 2, depth=depth - 1)

    model, x = Recursive(), torch.ones(3)
    report = measure_flops(
        lambda: model(x, depth=torch.tensor([2, 0, 0, 0, 0])[:1]), modules=model, by_step=True
    )
    assert len(report["by_step"]) == 1
    assert report["by_step"][0]["input_tokens"] == 1  # first integer tensor, found among the kwargs
    assert report["by_step"][0]["flops"]["value"] == 2 * 3  # two multiplications of 3 elements


class Apply(nn.Module):
    """Applies the function it is given to the first argument (any arguments accepted)."""

    def forward(self, x: torch.Tensor, *rest: object, fn=None) -> torch.Tensor:
        return x if fn is None else fn(x)


def test_input_tokens_is_none_without_an_integer_tensor_and_skips_scalars():
    model = Apply()
    report = measure_flops(
        lambda: (model(torch.ones(2, 5)), model(torch.tensor(3), torch.zeros(2, 7, dtype=torch.int32))),
        modules=model,
        by_step=True,
    )
    assert [step["input_tokens"] for step in report["by_step"]] == [None, 7]
    # the identity runs no operator: no attention kernel could have read KV bytes, a complete 0
    assert report["by_step"][0]["attention_kv_bytes"]["value"] == 0


def test_partial_step_when_one_of_its_operators_is_uncounted():
    model, x = Apply(), torch.ones(4)

    def unsupported(*args, **kwargs):
        raise ValueError("no formula for this call")

    def workload():
        model(x, fn=lambda t: t * 2)
        model(x, fn=torch.sin)  # the caller's formula raises: unsupported_operator_formula

    report = measure_flops(
        workload, modules=model, by_step=True, custom_mapping={torch.ops.aten.sin: unsupported}
    )
    assert [step["flops"]["status"] for step in report["by_step"]] == ["complete", "partial"]
    assert report["outside_steps"]["flops"]["status"] == "complete"
    assert report["total"]["status"] == "partial"
    validate_flop_report(report)


@pytest.mark.parametrize("modules", [None, [], "list"])
def test_by_step_needs_exactly_one_module_before_the_workload_runs(modules):
    linear = nn.Linear(2, 2)
    calls = []
    with pytest.raises(ValueError, match=r"exactly one nn\.Module"):
        measure_flops(
            lambda: calls.append(1), modules=[linear] if modules == "list" else modules, by_step=True
        )
    assert calls == []


def test_hooks_removed_and_error_unchanged_after_a_raising_workload():
    model = TinyLM()
    error = RuntimeError("boom")

    def workload():
        model(torch.tensor([[1]]))
        try:
            model(torch.tensor([[99]]))  # out of range: the step's forward raises
        except IndexError:
            pass
        model(torch.tensor([[2]]))
        raise error

    with pytest.raises(RuntimeError) as raised:
        measure_flops(workload, modules=model, by_step=True)
    assert raised.value is error
    assert not model._forward_pre_hooks and not model._forward_hooks


def test_a_raising_step_still_closes():
    model = TinyLM()

    def workload():
        try:
            model(torch.tensor([[99]]))
        except IndexError:
            pass
        model(torch.tensor([[2]]))

    report = measure_flops(workload, modules=model, by_step=True)
    assert len(report["by_step"]) == 2
    assert report["by_step"][1]["flops"]["value"] == 2 * 8 * 10
    assert not model._forward_pre_hooks and not model._forward_hooks


def test_the_callers_own_root_hooks_run_inside_the_step():
    model = TinyLM()
    model.register_forward_pre_hook(lambda module, args: (args[0] * 1,))  # integer: 0 FLOPs, 16 bytes
    model.register_forward_hook(lambda module, args, out: out * 2)  # 10 FLOPs, 80 bytes

    ids = torch.tensor([[1]])
    report = measure_flops(lambda: model(ids), modules=model, by_step=True)
    assert report["by_step"][0]["flops"]["value"] == 2 * 8 * 10 + 10
    assert report["by_step"][0]["operator_bytes"]["value"] == step_bytes(1) + 2 * I64 + 2 * 10 * F32
    assert report["outside_steps"]["flops"]["value"] == 0
    assert report["outside_steps"]["attention_kv_bytes"]["value"] == 0  # no operator outside: complete 0


def test_calls_on_another_thread_are_not_steps():
    model = TinyLM()

    def workload():
        worker = threading.Thread(target=model, args=(torch.tensor([[1]]),))
        worker.start()
        worker.join()
        model(torch.tensor([[1, 2]]))

    report = measure_flops(workload, modules=model, by_step=True)
    assert [step["input_tokens"] for step in report["by_step"]] == [2]


# --- GPT-2 generate (generation.md 3 acceptance) -------------------------------------------------


@pytest.fixture(scope="module")
def gpt2():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=2, n_embd=128, n_head=4, vocab_size=1000, bos_token_id=0, eos_token_id=None
    )
    config._attn_implementation = "sdpa"
    model = transformers.GPT2LMHeadModel(config).eval()
    return model, torch.randint(1, 1000, (1, 16), generator=torch.Generator().manual_seed(1))


def kv_bytes(context: int) -> int:
    return 2 * 2 * 4 * 32 * context * F32  # K and V, 2 layers, 4 heads, head_dim 32, float32


def generate(model, prompt, use_cache, mode=torch.no_grad):
    def workload():
        model.generate(prompt, max_new_tokens=8, do_sample=False, use_cache=use_cache, pad_token_id=0)

    with mode():
        return measure_flops(workload, modules=model, by_step=True)


@pytest.mark.parametrize("mode", [torch.no_grad, torch.inference_mode])
def test_gpt2_generate_with_cache(gpt2, mode):
    model, prompt = gpt2
    report = generate(model, prompt, use_cache=True, mode=mode)
    steps = report["by_step"]
    assert len(steps) == 8
    assert [s["input_tokens"] for s in steps] == [16] + [1] * 7
    assert all(s[key]["status"] == "complete" for s in steps for key in ("flops", "operator_bytes"))
    assert [s["attention_kv_bytes"]["value"] for s in steps] == [kv_bytes(16 + k) for k in range(8)]
    assert kv_bytes(17) == 34816
    assert all(s["attention_kv_bytes"]["status"] == "complete" for s in steps)
    flops = values(report, "flops")
    growth = [after - before for before, after in itertools.pairwise(flops[1:])]
    assert len(set(growth)) == 1 and growth[0] > 0  # decode FLOPs linear in the context
    assert sum(flops) + report["outside_steps"]["flops"]["value"] == report["total"]["value"]
    assert report["total"]["status"] == "complete"
    sizes = values(report, "operator_bytes")
    assert (
        sum(sizes) + report["outside_steps"]["operator_bytes"]["value"] == report["operator_bytes"]["value"]
    )
    validate_flop_report(json.loads(json.dumps(report)))


def test_gpt2_generate_without_cache_rereads_the_whole_sequence(gpt2):
    model, prompt = gpt2
    cached = generate(model, prompt, use_cache=True)
    report = generate(model, prompt, use_cache=False)
    steps = report["by_step"]
    assert [s["input_tokens"] for s in steps] == [16 + k for k in range(8)]
    assert [s["attention_kv_bytes"]["value"] for s in steps] == [kv_bytes(16 + k) for k in range(8)]
    flops = values(report, "flops")
    assert flops == sorted(flops) and flops[0] == values(cached, "flops")[0]
    assert all(f > c for f, c in zip(flops[1:], values(cached, "flops")[1:], strict=True))
