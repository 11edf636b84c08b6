"""Overhead of ``measure_generation`` over ``measure_flops`` on the same ``generate()`` (issue #22).

Usage: ``python benchmarks/generation.py`` (two GPT-2 configs, 7 interleaved rounds), ``--smoke``
(the spec's tiny GPT-2, 2 rounds; what CI runs), ``--meta70b`` (adds a Llama-3-70B-shaped model on
the meta device, 128 prompt tokens, 4 steps through a hand-written decode loop, because
transformers' ``generate()`` reads token values and cannot run on meta), ``--out FILE`` also writes
the Markdown.

Per round, in rotating order: a bare ``model.generate(...)``, ``measure_flops`` of the same call
(the operator FLOPs alone) and ``measure_generation(..., timing=False)`` (by_step and bytes on, then
the report). The ratio measure_generation ÷ measure_flops is the overhead of steps, bytes and the
report (target ≤ 1.2×). CPU, ``torch.set_num_threads(1)``, random weights, greedy; wall-clock times
on a shared machine: the ratios are the result, not the absolute times.
"""

from __future__ import annotations

import argparse
import inspect
import resource
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from torchscan import measure_generation  # noqa: E402  (the checkout's torchscan)
from torchscan.measure.flops import measure_flops  # noqa: E402

CONFIGS = {  # key: (description, GPT2Config keywords, prompt tokens, new tokens)
    "gpt2-tiny": (
        "GPT-2 2 layers, hidden 128, vocab 1,000 (spec 3)",
        {"n_layer": 2, "n_embd": 128, "n_head": 4},
        16,
        8,
    ),
    "gpt2-small4": (
        "GPT-2 4 layers, hidden 256, vocab 1,000",
        {"n_layer": 4, "n_embd": 256, "n_head": 4},
        64,
        16,
    ),
}


def _gpt2(options: dict[str, int]) -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=1000, bos_token_id=0, eos_token_id=0, **options)
    return GPT2LMHeadModel(config).eval()


def _median_ms(function: Callable[[], object], samples: list[float]) -> None:
    start = time.perf_counter()
    function()
    samples.append((time.perf_counter() - start) * 1000)


def overhead_rows(keys: list[str], rounds: int) -> list[str]:
    """One Markdown row per model: bare, measure_flops and measure_generation medians and the ratio."""
    rows = []
    for key in keys:
        name, options, prompt_tokens, new_tokens = CONFIGS[key]
        model = _gpt2(options)
        ids = torch.arange(prompt_tokens).reshape(1, prompt_tokens)
        settings = {"max_new_tokens": new_tokens, "do_sample": False}

        def bare(model: nn.Module = model, ids: torch.Tensor = ids, settings: dict = settings) -> None:
            model.generate(ids, **settings)

        def flops(bare: Callable[[], None] = bare) -> None:
            measure_flops(bare)

        def generation(model: nn.Module = model, ids: torch.Tensor = ids, new: int = new_tokens) -> None:
            measure_generation(model, args=(ids,), generate_kwargs={"max_new_tokens": new})

        tools = [("bare", bare), ("flops", flops), ("generation", generation)]
        samples: dict[str, list[float]] = {label: [] for label, _ in tools}
        for function in (bare, flops, generation):  # warm-up: imports, caches, allocator
            function()
        for index in range(rounds):
            for label, function in tools[index % 3 :] + tools[: index % 3]:
                _median_ms(function, samples[label])
        median = {label: statistics.median(values) for label, values in samples.items()}
        rows.append(
            f"| {name} | {prompt_tokens} + {new_tokens} | {median['bare']:.1f} | {median['flops']:.1f} | "
            f"{median['generation']:.1f} | {median['generation'] / median['flops']:.2f}× |"
        )
    return rows


class DecodeLoop(nn.Module):
    """Greedy decoding written out; each call of this module is one step. Reads no token value."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        self.config = model.config
        # transformers 5 names the cache argument `cache`; 4.x names it `past_key_values`
        parameters = inspect.signature(model.forward).parameters
        self.cache_key = "cache" if "cache" in parameters else "past_key_values"

    def forward(self, input_ids: torch.Tensor, cache: object) -> torch.Tensor:
        return self.model(input_ids=input_ids, use_cache=True, **{self.cache_key: cache}).logits

    def generate(self, input_ids: torch.Tensor, max_new_tokens: int = 1) -> None:
        from transformers import DynamicCache

        cache = DynamicCache()
        logits = self(input_ids, cache=cache)
        for _ in range(max_new_tokens - 1):
            logits = self(logits[:, -1:].argmax(-1), cache=cache)


def meta70b_lines() -> list[str]:
    """The 70B-shaped Llama on meta: seconds, peak RSS and the step table (one run)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        hidden_size=8192,
        intermediate_size=28672,
        num_hidden_layers=80,
        num_attention_heads=64,
        num_key_value_heads=8,
        vocab_size=128256,
    )
    start = time.perf_counter()
    with torch.device("meta"):
        model = LlamaForCausalLM(config).eval()
    ids = torch.zeros(1, 128, dtype=torch.long, device="meta")
    report = measure_generation(DecodeLoop(model), args=(ids,), generate_kwargs={"max_new_tokens": 4})
    seconds = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    lines = [
        "",
        f"Llama-3-70B-shaped on meta, 128 prompt tokens, 4 steps: {seconds:.1f} s, peak RSS {rss:.0f} MiB "
        "(this process, after the overhead table)",
        "",
        "| step | phase | context | operator FLOPs | operator bytes | attention K/V bytes |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for step in report["steps"]:
        kv = step["attention_kv_bytes"]
        kv_text = kv["status"] if kv["known_value"] is None else f"{kv['known_value']:,}"
        lines.append(
            f"| {step['index']} | {step['phase']} | {step['context_tokens']} | "
            f"{step['flops']['known_value']:,} ({step['flops']['status']}) | "
            f"{step['operator_bytes']['known_value']:,} | {kv_text} |"
        )
    fit = report["decode_fit"]["flops"]
    if fit is not None:
        lines.append(f"\ndecode FLOPs ≈ {fit['intercept']:,.0f} + {fit['slope']:,.0f} × context tokens")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="the tiny GPT-2, 2 rounds")
    parser.add_argument("--meta70b", action="store_true", help="add the 70B-shaped Llama on meta")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    from transformers.utils import logging

    logging.set_verbosity_error()
    keys = ["gpt2-tiny"] if args.smoke else list(CONFIGS)
    rounds = 2 if args.smoke else max(args.rounds, 5)
    lines = [
        f"torch {torch.__version__}, 1 thread, median of {rounds} interleaved rounds",
        "",
        "| model | prompt + new tokens | bare generate ms | measure_flops ms | measure_generation ms | "
        "generation ÷ flops (target ≤ 1.2×) |",
        "| --- | --- | --- | --- | --- | --- |",
        *overhead_rows(keys, rounds),
    ]
    if args.meta70b:
        lines += meta70b_lines()
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
