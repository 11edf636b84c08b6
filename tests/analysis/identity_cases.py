"""Workloads whose reports must stay byte-identical across performance work (issue #24).

``python tests/analysis/identity_cases.py --write`` regenerates ``data/report_identity.json.gz`` from
the checkout's code; the golden committed with issue #24 was written by main's code *before* the
counting paths were optimised, so ``test_report_identity.py`` proves the faster paths report exactly
the same JSON (every number, status, diagnostic, key order) for these cases: crawl_module full and
structure, measure_flops plain, under inference_mode, on training steps (backward and optimizer
phases, by_module with backward attribution, a gradient of a leaf input), with a caller mapping,
and with by_step/bytes on a cached decode loop.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "data" / "report_identity.json.gz"


def _stack(pairs: int = 12) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(*[m for _ in range(pairs) for m in (nn.Linear(16, 16), nn.ReLU())])


def _cnn() -> nn.Module:
    from torchvision.models import mobilenet_v3_small

    torch.manual_seed(0)
    return mobilenet_v3_small(num_classes=10)


def _small_cnn() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.Conv2d(8, 8, 3, groups=8),
        nn.Hardswish(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(8, 4),
    )


def _bert() -> nn.Module:
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37
    )
    return BertModel(config).eval()


def _gpt2() -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=99, n_embd=32, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0)
    return GPT2LMHeadModel(config).eval()


def _ids(length: int = 8) -> torch.Tensor:
    return torch.arange(length).remainder(99).unsqueeze(0)


def _decode(model: nn.Module, steps: int = 3) -> None:
    ids = _ids(5)
    past = None
    for _ in range(steps):
        out = model(input_ids=ids, past_key_values=past, use_cache=True)
        past = out.past_key_values
        ids = out.logits[:, -1:].argmax(-1)


def _train_step(model: nn.Module, x: torch.Tensor) -> Callable[[], None]:
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step() -> None:
        optimizer.zero_grad()
        model(x).square().mean().backward()
        optimizer.step()

    return step


def _input_gradient(model: nn.Module) -> Callable[[], None]:
    def penalty() -> None:
        x = torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(1), requires_grad=True)
        (grad,) = torch.autograd.grad(model(x).sum(), x, create_graph=True)
        grad.square().sum().backward()

    return penalty


def _zoo(name: str) -> tuple[nn.Module, dict[str, Any]]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import zoo_models
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    spec = next(spec for spec in zoo_models.catalogue() if spec.name == name)
    model, args, kwargs = spec.build()
    return model.eval(), {"args": args, "kwargs": kwargs}


def cases() -> dict[str, Callable[[], Any]]:
    """Name -> a zero-argument function returning one JSON-ready report (deterministic)."""
    import torchscan

    def crawl(build: Callable[[], nn.Module], shape: Any = None, **options: Any) -> Callable[[], Any]:
        return lambda: torchscan.crawl_module(build(), shape, **options)

    def flops(make: Callable[[], Callable[[], object]], **options: Any) -> Callable[[], Any]:
        def run() -> Any:
            workload = make()
            return torchscan.measure_flops(workload, **options)

        return run

    def no_grad(model: nn.Module, *args: Any, **kwargs: Any) -> Callable[[], object]:
        def call() -> object:
            with torch.no_grad():
                return model(*args, **kwargs)

        return call

    def inference(model: nn.Module, *args: Any) -> Callable[[], object]:
        def call() -> object:
            with torch.inference_mode():
                return model(*args)

        return call

    x64 = torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(0))
    x8 = torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    v16 = torch.randn(1, 16, generator=torch.Generator().manual_seed(0))
    sin = {torch.ops.aten.relu: lambda *args, **kwargs: 7}
    table: dict[str, Callable[[], Any]] = {
        "stack/full": crawl(_stack, (16,)),
        "stack/structure": crawl(_stack, (16,), mode="structure"),
        "stack/custom_mapping": crawl(_stack, (16,), custom_mapping=sin),
        "stack/measure_flops": flops(lambda: no_grad(_stack(), v16)),
        "mobilenet/full": crawl(_cnn, (3, 64, 64)),
        "mobilenet/measure_flops": flops(lambda: no_grad(_cnn().eval(), x64)),
        "mobilenet/inference_mode": flops(lambda: inference(_cnn().eval(), x64)),
        "small_cnn/train_step": flops(lambda: _train_step(_small_cnn(), x8)),
        "small_cnn/train_step_bytes": flops(lambda: _train_step(_small_cnn(), x8), bytes=True),
        "small_cnn/input_gradient": flops(lambda: _input_gradient(_small_cnn())),
        "bert/full": lambda: torchscan.crawl_module(_bert(), args=(_ids(),)),
        "bert/measure_flops": flops(lambda: no_grad(_bert(), _ids())),
        "gpt2/full": lambda: torchscan.crawl_module(
            _gpt2(), kwargs={"input_ids": _ids(), "use_cache": False}
        ),
    }

    def decode_steps() -> Any:
        model = _gpt2()
        with torch.no_grad():
            return torchscan.measure_flops(lambda: _decode(model), modules=model, by_step=True, bytes=True)

    table["gpt2/decode_by_step"] = decode_steps
    for name in ("llama", "t5", "mixtral", "marian"):

        def zoo_full(name: str = name) -> Any:
            model, inputs = _zoo(name)
            return torchscan.crawl_module(model, **inputs)

        def zoo_flops(name: str = name) -> Any:
            model, inputs = _zoo(name)
            return torchscan.measure_flops(no_grad(model, *inputs["args"], **inputs["kwargs"]))

        table[f"zoo-{name}/full"] = zoo_full
        table[f"zoo-{name}/measure_flops"] = zoo_flops
    return table


def versions() -> dict[str, str]:
    """The library versions a golden is valid for (other releases may count differently)."""
    import torchvision
    import transformers

    return {
        "torch": str(torch.__version__),
        "torchvision": str(torchvision.__version__),
        "transformers": str(transformers.__version__),
    }


def render(report: Any) -> str:
    """The report's JSON text exactly as a user would serialise it (key order kept)."""
    return json.dumps(report)


def generate() -> dict[str, Any]:
    """Every case's JSON text plus the versions it was made with."""
    torch.set_num_threads(1)
    return {"versions": versions(), "reports": {name: render(make()) for name, make in cases().items()}}


if __name__ == "__main__":
    if "--write" in sys.argv:
        GOLDEN.parent.mkdir(exist_ok=True)
        data = json.dumps(generate(), indent=0, sort_keys=True).encode()
        GOLDEN.write_bytes(gzip.compress(data, mtime=0))
        print(f"wrote {GOLDEN} ({GOLDEN.stat().st_size} bytes)")
