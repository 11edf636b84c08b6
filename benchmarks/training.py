"""Training steps of the zoo's training subset: phase table and counting overhead (issue #13).

Usage: ``python benchmarks/training.py`` (every model, 5 interleaved rounds; about a minute on two
cores) or ``--smoke`` (the small CNN, one round; what CI runs). ``--models a,b`` picks models,
``--out FILE`` also writes the Markdown.

One step = forward with the loss, ``loss.backward()``, ``AdamW.step()`` with its default
implementation (the per-parameter loop on CPU) and ``zero_grad``; random weights, fixed inputs, CPU,
``torch.set_num_threads(1)``. The first table is one ``measure_flops`` call of a step after a warm-up
step (the optimizer state exists): the four phases, their statuses and backward ÷ forward. The second
times the same step three ways, interleaved in rotating order, median of the rounds: bare, under
``FlopCounterMode(display=False)`` alone, and under ``measure_flops`` (target ≤ 1.1× FlopCounterMode).
Times are wall-clock on a shared machine; ratios, not absolute times, are the result.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from torchscan.measure.flops import measure_flops  # noqa: E402  (the checkout's torchscan)

Loss = Callable[[], torch.Tensor]


@dataclass(frozen=True)
class TrainingSpec:
    """One training-subset model: a key, a description and a builder of ``(model, loss)``."""

    key: str
    name: str
    build: Callable[[], tuple[nn.Module, Loss]]
    transformer: bool = False  # matmul-dominated: backward ÷ forward is expected near 2


def _small_cnn() -> tuple[nn.Module, Loss]:
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(32, 10),
    )
    images, labels = torch.randn(8, 3, 32, 32), torch.arange(8) % 10
    return model, lambda: F.cross_entropy(model(images), labels)


def _resnet18() -> tuple[nn.Module, Loss]:
    import torchvision

    model = torchvision.models.resnet18(weights=None)
    images, labels = torch.randn(2, 3, 64, 64), torch.tensor([1, 2])
    return model, lambda: F.cross_entropy(model(images), labels)


TOKENS = torch.randint(0, 1000, (2, 64), generator=torch.Generator().manual_seed(0))
# hidden 64, 2 layers, 2 heads, 2 × 64 tokens, vocabulary 1000: tiny but every block present
_SIZE = {"hidden": 64, "layers": 2, "heads": 2, "ffn": 256}


def _bert() -> tuple[nn.Module, Loss]:
    import transformers

    config = transformers.BertConfig(
        vocab_size=1000,
        hidden_size=_SIZE["hidden"],
        num_hidden_layers=_SIZE["layers"],
        num_attention_heads=_SIZE["heads"],
        intermediate_size=_SIZE["ffn"],
        max_position_embeddings=128,
    )
    model = transformers.BertForSequenceClassification(config)
    labels = torch.tensor([0, 1])
    return model, lambda: model(input_ids=TOKENS, labels=labels).loss


def _gpt2() -> tuple[nn.Module, Loss]:
    import transformers

    config = transformers.GPT2Config(
        vocab_size=1000,
        n_embd=_SIZE["hidden"],
        n_layer=_SIZE["layers"],
        n_head=_SIZE["heads"],
        n_positions=128,
        use_cache=False,
        bos_token_id=0,
        eos_token_id=0,
    )
    model = transformers.GPT2LMHeadModel(config)
    return model, lambda: model(input_ids=TOKENS, labels=TOKENS).loss


def _llama() -> tuple[nn.Module, Loss]:
    import transformers

    config = transformers.LlamaConfig(
        vocab_size=1000,
        hidden_size=_SIZE["hidden"],
        num_hidden_layers=_SIZE["layers"],
        num_attention_heads=_SIZE["heads"],
        num_key_value_heads=1,
        intermediate_size=_SIZE["ffn"],
        max_position_embeddings=128,
        use_cache=False,
    )
    model = transformers.LlamaForCausalLM(config)
    return model, lambda: model(input_ids=TOKENS, labels=TOKENS).loss


def _vit() -> tuple[nn.Module, Loss]:
    import transformers

    config = transformers.ViTConfig(
        image_size=32,
        patch_size=4,
        hidden_size=_SIZE["hidden"],
        num_hidden_layers=_SIZE["layers"],
        num_attention_heads=_SIZE["heads"],
        intermediate_size=_SIZE["ffn"],
        num_labels=10,
    )
    model = transformers.ViTForImageClassification(config)
    pixels, labels = torch.randn(2, 3, 32, 32), torch.tensor([0, 7])
    return model, lambda: model(pixel_values=pixels, labels=labels).loss


SPECS = [
    TrainingSpec("small-cnn", "CNN with BatchNorm (2 conv blocks, 8 × 3 × 32²)", _small_cnn),
    TrainingSpec("resnet18-64", "ResNet-18 (torchvision), 2 × 3 × 64²", _resnet18),
    TrainingSpec("bert-tiny", "BERT-tiny, sequence classification, 2 × 64 tokens", _bert, True),
    TrainingSpec("gpt2-tiny", "GPT-2-tiny, LM head with labels, 2 × 64 tokens", _gpt2, True),
    TrainingSpec("llama-tiny", "Llama-tiny (GQA 2:1), LM head with labels, 2 × 64 tokens", _llama, True),
    TrainingSpec("vit-tiny", "ViT-tiny, classification, 2 × 3 × 32², patch 4", _vit, True),
]
BY_KEY = {spec.key: spec for spec in SPECS}


def training_step(spec: TrainingSpec) -> Callable[[], None]:
    """A zero-argument step of ``spec`` (fresh model, seed 0, AdamW defaults), warmed up once."""
    torch.manual_seed(0)
    model, loss = spec.build()
    model.train()
    optimizer = torch.optim.AdamW(model.parameters())

    def step() -> None:
        loss().backward()
        optimizer.step()
        optimizer.zero_grad()

    step()  # optimizer state exists from here on, as in every later step
    return step


def _counted_step(step: Callable[[], None]) -> Callable[[], None]:
    from torch.utils.flop_counter import FlopCounterMode

    def run() -> None:
        with FlopCounterMode(display=False):
            step()

    return run


def time_step(step: Callable[[], None], repeats: int) -> dict[str, float]:
    """Median seconds of the step bare, under FlopCounterMode alone and under ``measure_flops``."""
    ways = {"bare": step, "flop_counter": _counted_step(step), "measure_flops": lambda: measure_flops(step)}
    for call in ways.values():
        call()  # warm-up of every way (first-call caches, lazy imports)
    samples: dict[str, list[float]] = {key: [] for key in ways}
    keys = list(ways)
    for round_index in range(repeats):
        shift = round_index % len(keys)
        for key in keys[shift:] + keys[:shift]:  # rotating order: no way always follows the same one
            start = time.perf_counter()
            ways[key]()
            samples[key].append(time.perf_counter() - start)
    return {key: statistics.median(values) for key, values in samples.items()}


def phase_row(spec: TrainingSpec, step: Callable[[], None]) -> str:
    """One Markdown row of the phase table (values and statuses of one ``measure_flops`` call)."""
    report = measure_flops(step)
    phases = report["by_phase"]
    values = {name: result["known_value"] or 0 for name, result in phases.items()}
    cells = [f"{values[name]:,} ({phases[name]['status']})" for name in phases]
    ratio = values["backward"] / values["forward"] if values["forward"] else float("nan")
    total = report["total"]
    return (
        f"| {spec.name} | {total['known_value']:,} ({total['status']}) | "
        + " | ".join(cells)
        + f" | {ratio:.3f} |"
    )


PHASE_HEADER = [
    "| model | total | forward | backward | optimizer | recompute | backward ÷ forward |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
]
OVERHEAD_HEADER = [
    "| model | bare step ms | FlopCounterMode ms | measure_flops ms | × FlopCounterMode (target ≤ 1.1) |",
    "| --- | ---: | ---: | ---: | ---: |",
]


def overhead_row(spec: TrainingSpec, step: Callable[[], None], repeats: int) -> str:
    """One Markdown row of the overhead table."""
    medians = time_step(step, repeats)
    ratio = medians["measure_flops"] / medians["flop_counter"]
    ms = {key: value * 1e3 for key, value in medians.items()}
    times = " | ".join(f"{ms[key]:.1f}" for key in ("bare", "flop_counter", "measure_flops"))
    return f"| {spec.name} | {times} | {ratio:.2f} |"


def available(spec: TrainingSpec) -> str | None:
    """``None`` when the spec's package is importable, else the reason it is skipped."""
    package = {"resnet18-64": "torchvision"}.get(spec.key, "transformers" if spec.transformer else None)
    if package is None:
        return None
    try:
        __import__(package)
    except ImportError:
        return f"skipped: {package} not installed"
    return None


def tables(specs: list[TrainingSpec], repeats: int, *, phases: bool = True) -> list[str]:
    """The Markdown tables (phases unless ``phases=False``, then overhead) for ``specs``.

    Skipped models are named under the first table.
    """
    phase_rows, overheads, skipped = list(PHASE_HEADER), list(OVERHEAD_HEADER), []
    for spec in specs:
        reason = available(spec)
        if reason is not None:
            skipped.append(f"- {spec.name}: {reason}")
            continue
        step = training_step(spec)
        if phases:
            phase_rows.append(phase_row(spec, step))
        overheads.append(overhead_row(spec, step, repeats))
    lines = ["#### Phases of one training step (operator FLOPs)", "", *phase_rows, ""] if phases else []
    lines += [*skipped, "", "#### Training-step overhead (median of interleaved rounds)", "", *overheads, ""]
    return lines


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: print (and optionally write) the two tables."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--smoke", action="store_true", help="the small CNN, one round (CI)")
    parser.add_argument("--repeats", type=int, default=None, help="timed rounds (default 5; smoke 1)")
    parser.add_argument("--models", help=f"comma-separated keys ({','.join(BY_KEY)})")
    parser.add_argument("--out", type=Path, help="also write the Markdown to this file")
    options = parser.parse_args(argv)
    repeats = options.repeats or (1 if options.smoke else 5)
    if repeats < 1:
        parser.error("--repeats must be at least 1")
    keys = options.models.split(",") if options.models else (["small-cnn"] if options.smoke else list(BY_KEY))
    unknown = sorted(set(keys) - set(BY_KEY))
    if unknown:
        parser.error(f"unknown model keys: {', '.join(unknown)}")
    warnings.simplefilter("ignore")  # transformers warns about configs; warnings are not under test
    torch.set_num_threads(1)
    text = "\n".join(["## Training steps (issue #13)", "", *tables([BY_KEY[key] for key in keys], repeats)])
    print(text, end="")
    if options.out:
        options.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
