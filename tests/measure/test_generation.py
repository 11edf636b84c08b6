"""measure_generation (generation.md 2-3): the spec's GPT-2 and Llama examples on tiny random models."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn
from torch.nn.modules import module as module_globals

from torchscan import measure_generation
from torchscan.report.validate import validate_report

transformers = pytest.importorskip("transformers")
transformers.utils.logging.set_verbosity_error()

HARDWARE = {"name": "example", "peak_flops_per_second": 1e12, "memory_bandwidth_bytes_per_second": 1e11}
PROMPT = torch.arange(16).reshape(1, 16)  # deterministic token ids within the 1,000-token vocabulary
# GPT-2 K/V bytes per context token: 2 (K and V) x 2 layers x 4 heads x 32 head_dim x 4 bytes (float32)
GPT2_KV_PER_TOKEN = 2 * 2 * 4 * 32 * 4  # 2,048
# Llama GQA K/V bytes per cached token: 2 (K and V) x 2 layers x 2 KV heads x 16 head_dim x 4 bytes
LLAMA_KV_PER_TOKEN = 2 * 2 * 2 * 16 * 4  # 512


def _gpt2() -> nn.Module:
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=2, n_embd=128, n_head=4, vocab_size=1000, bos_token_id=0, eos_token_id=0
    )
    return transformers.GPT2LMHeadModel(config).eval()


def _llama(**extra: object) -> nn.Module:
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
    for key, value in extra.items():
        setattr(config, key, value)
    return transformers.LlamaForCausalLM(config).eval()


@pytest.fixture(scope="module")
def gpt2() -> nn.Module:
    return _gpt2()


@pytest.fixture(scope="module")
def cached(gpt2):
    return measure_generation(gpt2, args=(PROMPT,), generate_kwargs={"max_new_tokens": 8}, hardware=HARDWARE)


def test_gpt2_steps_phases_and_context(cached):
    steps = cached["steps"]
    assert len(steps) == 8  # 1 prefill + 7 decode: each forward call yields one new token
    assert [s["phase"] for s in steps] == ["prefill"] + ["decode"] * 7
    assert [s["input_tokens"] for s in steps] == [16] + [1] * 7
    assert [s["context_tokens"] for s in steps] == list(range(16, 24))  # cached + new
    for step in steps:
        for name in ("flops", "operator_bytes", "attention_kv_bytes"):
            assert step[name]["status"] == "complete"
            assert step[name]["scope"] == "step"
    assert cached["context"]["cache_class"] == "DynamicCache"
    assert cached["context"]["use_cache"] is True and cached["context"]["do_sample"] is False
    assert cached["context"]["prompt_tokens"] == 16 and cached["context"]["batch_size"] == 1
    assert cached["context"]["max_new_tokens"] == 8
    assert cached["context"]["attention_implementation"] == "sdpa"
    assert cached["prefill"]["steps"] == 1 and cached["decode"]["steps"] == 7


def test_gpt2_kv_bytes_are_exact(cached):
    for step in cached["steps"]:
        assert step["attention_kv_bytes"]["value"] == GPT2_KV_PER_TOKEN * step["context_tokens"]
    fit = cached["decode_fit"]["attention_kv_bytes"]
    assert fit == {"intercept": 0.0, "slope": float(GPT2_KV_PER_TOKEN), "max_residual": 0.0}


def test_gpt2_decode_flops_are_linear_in_context(cached):
    fit = cached["decode_fit"]["flops"]
    assert fit["max_residual"] <= 1
    decode = [s for s in cached["steps"] if s["phase"] == "decode"]
    for step in decode:
        assert abs(fit["intercept"] + fit["slope"] * step["context_tokens"] - step["flops"]["value"]) <= 1
    # QK^T and AV of one new query against c keys: 2 x (2 x 4 heads x 32 x c) per layer, 2 layers
    assert fit["slope"] >= 2 * 2 * (2 * 4 * 32)
    assert cached["diagnostics"] == []


def test_totals_means_and_exact_sums(cached):
    steps = cached["steps"]
    decode = steps[1:]
    assert cached["prefill"]["flops"]["value"] == steps[0]["flops"]["value"]
    assert cached["decode"]["flops"]["value"] == sum(s["flops"]["value"] for s in decode)
    assert cached["decode_per_token"]["flops"]["value"] == pytest.approx(
        cached["decode"]["flops"]["value"] / 7, abs=0
    )
    total = cached["operator_flops"]["total"]["value"]
    outside = cached["outside_steps"]["flops"]["value"]
    assert sum(s["flops"]["value"] for s in steps) + outside == total
    assert "by_step" not in cached["operator_flops"]


def test_hardware_figures_by_hand(cached):
    for step in cached["steps"]:
        flops, moved = step["flops"]["value"], step["operator_bytes"]["value"]
        assert step["arithmetic_intensity"]["value"] == flops / moved
        assert step["roofline_seconds"]["value"] == max(flops / 1e12, moved / 1e11)
        assert step["roofline_seconds"]["method"] == "roofline_model"
        # ridge point: 1e12 / 1e11 = 10 FLOPs per byte
        expected = "compute" if flops / moved >= 10 else "memory"
        assert step["bound"] == expected
    assert {s["bound"] for s in cached["steps"][1:]} == {"memory"}
    assert cached["context"]["hardware"] == HARDWARE


def test_report_is_json_and_validates(cached):
    data = json.loads(json.dumps(cached))
    assert validate_report(data) == "generation"


def test_without_cache_every_step_rereads_the_sequence(gpt2):
    report = measure_generation(
        gpt2, args=(PROMPT,), generate_kwargs={"max_new_tokens": 8, "use_cache": False}
    )
    steps = report["steps"]
    assert report["context"]["use_cache"] is False and report["context"]["cache_class"] is None
    assert [s["input_tokens"] for s in steps] == list(range(16, 24))
    assert [s["context_tokens"] for s in steps] == list(range(16, 24))
    flops = [s["flops"]["value"] for s in steps]
    assert flops == sorted(flops) and len(set(flops)) == 8  # grows with the context
    for step in steps:
        assert step["attention_kv_bytes"]["value"] == GPT2_KV_PER_TOKEN * step["input_tokens"]


def test_llama_static_cache_reads_the_whole_cache():
    report = measure_generation(
        _llama(), args=(PROMPT,), generate_kwargs={"max_new_tokens": 4, "cache_implementation": "static"}
    )
    assert report["context"]["cache_class"] == "StaticCache"
    decode = report["steps"][1:]
    assert [s["context_tokens"] for s in decode] == [17, 18, 19]
    # transformers 5 sizes the static cache to max_length - 1 = 16 + 4 - 1 = 19 tokens (the last token
    # is never fed back; older releases allocate max_length = 20); every decode step's kernel reads
    # all of it, whatever the context.
    read = [s["attention_kv_bytes"]["value"] for s in decode]
    assert read[0] in (LLAMA_KV_PER_TOKEN * 19, LLAMA_KV_PER_TOKEN * 20)
    assert read == [read[0]] * 3
    assert report["decode_fit"]["attention_kv_bytes"]["slope"] == 0.0


def test_llama_dynamic_cache_reads_the_context():
    report = measure_generation(_llama(), args=(PROMPT,), generate_kwargs={"max_new_tokens": 4})
    assert report["context"]["cache_class"] == "DynamicCache"
    for step in report["steps"]:
        assert step["attention_kv_bytes"]["value"] == LLAMA_KV_PER_TOKEN * step["context_tokens"]


def test_eager_attention_leaves_the_kv_fit_unavailable():
    report = measure_generation(
        _llama(_attn_implementation="eager"), args=(PROMPT,), generate_kwargs={"max_new_tokens": 3}
    )
    assert report["context"]["attention_implementation"] == "eager"
    assert {s["attention_kv_bytes"]["status"] for s in report["steps"]} == {"unavailable"}
    assert report["decode_fit"]["attention_kv_bytes"] is None
    assert report["decode_fit"]["flops"] is not None
    codes = {(d["code"], d["metric"]) for d in report["diagnostics"]}
    assert ("decode_fit_unavailable", "decode_fit.attention_kv_bytes") in codes
    assert report["decode_per_token"]["attention_kv_bytes"]["status"] == "unavailable"


def test_one_new_token_has_no_decode_step(gpt2):
    report = measure_generation(gpt2, args=(PROMPT,), generate_kwargs={"max_new_tokens": 1})
    assert [s["phase"] for s in report["steps"]] == ["prefill"]
    assert report["decode"]["flops"]["value"] == 0 and report["decode"]["steps"] == 0
    assert report["decode_per_token"]["flops"]["status"] == "unavailable"
    assert report["decode_fit"] == {"flops": None, "attention_kv_bytes": None}
    codes = [d["code"] for d in report["diagnostics"]]
    assert "no_decode_steps" in codes and codes.count("decode_fit_unavailable") == 2


def test_timing_pass_records_raw_decode_steps(gpt2):
    report = measure_generation(gpt2, args=(PROMPT,), generate_kwargs={"max_new_tokens": 4}, timing=True)
    timing = report["timing"]
    assert len(timing["decode_step_seconds"]) == 3
    assert timing["time_to_first_token"]["status"] == "complete"
    assert timing["time_to_first_token"]["method"] == "synchronized_perf_counter"
    assert timing["decode_step_mean"]["value"] == pytest.approx(sum(timing["decode_step_seconds"]) / 3)
    validate_report(json.loads(json.dumps(report)))


class _NoGenerate(nn.Linear):
    pass


@pytest.mark.parametrize(
    ("options", "error", "words"),
    [
        ({"args": [PROMPT]}, TypeError, "args must be a tuple"),
        ({"kwargs": ()}, TypeError, "kwargs must be a dict"),
        ({"generate_kwargs": "x"}, TypeError, "generate_kwargs must be a dict"),
        ({"timing": 1}, TypeError, "timing must be a bool"),
        ({"hardware": {"name": "x"}}, ValueError, "peak_flops_per_second"),
        ({"kwargs": {"max_new_tokens": 1}, "generate_kwargs": {"max_new_tokens": 2}}, ValueError, "both"),
    ],
)
def test_bad_arguments_are_refused_before_any_call(options, error, words):
    calls = []

    class Model(nn.Module):
        def generate(self, *args, **kwargs):
            calls.append(1)

    with pytest.raises(error, match=words):
        measure_generation(Model(), **options)
    assert calls == []


def test_model_without_generate_is_refused():
    with pytest.raises(TypeError, match="no callable generate"):
        measure_generation(_NoGenerate(2, 2))
    with pytest.raises(TypeError, match=r"nn\.Module"):
        measure_generation(object())  # type: ignore[arg-type]


def test_meta_model_cannot_be_timed():
    with torch.device("meta"):
        model = nn.Linear(2, 2)
    model.generate = lambda *a, **k: None  # type: ignore[method-assign]
    with pytest.raises(ValueError, match="meta"):
        measure_generation(model, timing=True)


def test_the_models_exception_propagates_and_no_hook_stays():
    class Boom(RuntimeError):
        pass

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer = nn.Linear(2, 2)

        def forward(self, x):
            raise Boom("inside the model")

        def generate(self, x, **kwargs):
            return self(x)

    def tables() -> dict[str, object]:
        return {
            n: dict(getattr(module_globals, n))
            for n in dir(module_globals)
            if n.startswith("_global_") and isinstance(getattr(module_globals, n), dict)
        }

    model = Model()
    before = tables()
    with pytest.raises(Boom, match="inside the model"):
        measure_generation(model, args=(torch.ones(1, 2),))
    with pytest.raises(Boom, match="inside the model"):
        measure_generation(model, args=(torch.ones(1, 2),), timing=True)
    assert not model._forward_pre_hooks and not model._forward_hooks
    assert tables() == before
    assert torch.utils._python_dispatch._get_current_dispatch_mode() is None


def test_hand_written_generate_loop_without_transformers():
    class Tiny(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(10, 4)
            self.head = nn.Linear(4, 10)

        def forward(self, ids):
            return self.head(self.embed(ids))

        def generate(self, ids, max_new_tokens=2, do_sample=False):
            for _ in range(max_new_tokens):
                logits = self(ids)
                ids = torch.cat([ids, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
            return ids

    report = measure_generation(
        Tiny(), args=(torch.zeros(1, 3, dtype=torch.long),), generate_kwargs={"max_new_tokens": 3}
    )
    # no generation_config: a cache is assumed (use_cache True), so context grows by the input
    assert [s["input_tokens"] for s in report["steps"]] == [3, 4, 5]
    assert report["context"]["model_type"] == "Tiny" and report["context"]["attention_implementation"] is None
    # Linear(4, 10) on n tokens: 2 x 4 x 10 x n FLOPs; embeddings count none
    assert [s["flops"]["value"] for s in report["steps"]] == [240, 320, 400]


def test_a_generate_that_never_calls_the_model_has_no_steps():
    class Idle(nn.Module):
        def generate(self, **kwargs):
            return None

    report = measure_generation(Idle())
    assert report["steps"] == [] and report["prefill"]["steps"] == 0
    assert report["prefill"]["flops"]["value"] == 0  # nothing ran: a complete zero
    assert {d["code"] for d in report["diagnostics"]} >= {"no_steps", "no_decode_steps"}
    validate_report(json.loads(json.dumps(report)))


def test_batch_of_two_prompts(gpt2):
    prompts = torch.arange(32).reshape(2, 16)
    report = measure_generation(gpt2, args=(prompts,), generate_kwargs={"max_new_tokens": 3})
    assert report["context"]["batch_size"] == 2
    assert [s["context_tokens"] for s in report["steps"]] == [16, 17, 18]  # per sequence
    for step in report["steps"]:  # both sequences' caches are read
        assert step["attention_kv_bytes"]["value"] == 2 * GPT2_KV_PER_TOKEN * step["context_tokens"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_counts_match_cpu_and_timing_synchronises(cached):
    model = _gpt2().to("cuda")
    report = measure_generation(
        model, args=(PROMPT.to("cuda"),), generate_kwargs={"max_new_tokens": 8}, timing=True
    )
    assert report["context"]["device"] == "cuda:0"
    assert [s["attention_kv_bytes"]["value"] for s in report["steps"]] == [
        s["attention_kv_bytes"]["value"] for s in cached["steps"]
    ]
    assert report["timing"]["time_to_first_token"]["status"] == "complete"
    assert len(report["timing"]["decode_step_seconds"]) == 7
