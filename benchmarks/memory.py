"""The storage ledger against the profiler, and a 7B meta training step (memory.md 4).

Usage: ``python benchmarks/memory.py`` (every check; a few minutes on two cores), ``--smoke`` (the
small CNN step only), ``--skip-llama`` (no 7B run), ``--out FILE`` (also write the Markdown).

1. Agreement: for every training step of ``benchmarks/training.py`` (warmed up, AdamW, ``zero_grad``)
   and for ResNet-50 (1 x 3 x 224²) and BERT-base (1 x 128 tokens) inference under ``no_grad``, the
   ledger's ``peak`` (``measure_memory``) beside ``measure_peak_memory``'s CPU peak (the profiler's
   memory timeline) on an identical copy of the same step. Target: within 1 % or 64 KiB.
2. Scale: a Llama-shaped 7B model (hidden 4096, intermediate 11008, 32 layers, 32 heads, vocab
   32000) in bfloat16 on the meta device, batch 1 x 2,048 tokens, one AdamW step, measured in a fresh
   process: wall time, the process's peak RSS (``ru_maxrss``), and ``parameters`` against 2 bytes x
   the parameter count. Target: < 60 s and < 2 GiB.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from torchscan import measure_memory, measure_peak_memory  # noqa: E402  (the checkout's torchscan)

KIB = 1024


def _agreement_row(name: str, build: Callable[[], Callable[[], None]]) -> str:
    ledger = measure_memory(build(), device="cpu")
    peak = ledger["peak"]["known_value"]
    profiler = int(measure_peak_memory(build(), device="cpu")["peak_bytes"])
    difference = peak - profiler
    tolerance = max(0.01 * profiler, 64 * KIB)
    verdict = "yes" if abs(difference) <= tolerance else "**no**"
    status = ledger["peak"]["status"]
    return f"| {name} | {peak:,} ({status}) | {profiler:,} | {difference:+,} | {verdict} |"


def _training(key: str) -> Callable[[], Callable[[], None]]:
    import training

    return lambda: training.training_step(training.BY_KEY[key])


def _inference(key: str) -> Callable[[], Callable[[], None]]:
    import models

    def build() -> Callable[[], None]:
        torch.manual_seed(0)
        model, args, kwargs = models.BY_KEY[key].build()
        model.eval()

        def forward() -> None:
            with torch.no_grad():
                model(*args, **kwargs)

        return forward

    return build


def agreement(smoke: bool) -> list[str]:
    """Table 1: the ledger's peak beside the profiler's, per step."""
    import training

    rows = [
        "| step | ledger peak (bytes) | profiler peak (bytes) | difference | within 1 % or 64 KiB |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    specs = training.SPECS[:1] if smoke else training.SPECS
    for spec in specs:
        reason = training.available(spec)
        if reason is not None:
            rows.append(f"| training {spec.key} | {reason} | | | |")
            continue
        rows.append(_agreement_row(f"training {spec.key}", _training(spec.key)))
    if not smoke:
        for key, label in (("resnet50", "ResNet-50 inference"), ("bert", "BERT-base inference")):
            rows.append(_agreement_row(label, _inference(key)))
    return rows


def _peak_rss() -> int:
    """This process's peak RSS: ``VmHWM`` (``ru_maxrss`` would keep the parent's high-water mark
    across ``exec`` on Linux, so a child started by a big parent reported the parent's figure)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * KIB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * KIB


def llama_child() -> None:
    """One 7B meta AdamW step; prints a JSON line with the figures (run in a fresh process)."""
    import transformers

    start = time.perf_counter()
    config = transformers.LlamaConfig(
        vocab_size=32000,
        hidden_size=4096,
        intermediate_size=11008,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=32,
        max_position_embeddings=4096,
        use_cache=False,
    )
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(config).to(torch.bfloat16)
    optimizer = torch.optim.AdamW(model.parameters())
    tokens = torch.zeros(1, 2048, dtype=torch.long, device="meta")
    # An explicit 4D causal mask (4 MiB of booleans, counted as an input): without it transformers
    # decides from the values of the position ids or of a 2D mask whether it may skip the mask, a
    # value-dependent test (``Tensor.item``) that a meta tensor cannot answer.
    mask = torch.ones(1, 1, 2048, 2048, dtype=torch.bool, device="meta").tril()

    def step() -> None:
        model(input_ids=tokens, attention_mask=mask, labels=tokens).loss.backward()
        optimizer.step()

    built = time.perf_counter()
    report = measure_memory(step, modules=model, device="meta", timeline=False)
    finished = time.perf_counter()
    count = sum(p.numel() for p in model.parameters())
    categories = {name: r["known_value"] for name, r in report["at_peak"]["by_category"].items()}
    print(
        json.dumps(
            {
                "parameters_count": count,
                "parameters_bytes": categories["parameters"],
                "expected_parameters_bytes": 2 * count,
                "peak": report["peak"]["known_value"],
                "peak_status": report["peak"]["status"],
                "at_peak": categories,
                "phase_at_peak": report["at_peak"]["phase"],
                "by_phase": {name: r["known_value"] for name, r in report["by_phase"].items()},
                "events": report["timeline_events"],
                "diagnostics": [d["code"] for d in report["diagnostics"]],
                "build_seconds": round(built - start, 2),
                "measure_seconds": round(finished - built, 2),
                "total_seconds": round(finished - start, 2),
                "max_rss_bytes": _peak_rss(),
            }
        )
    )


def llama() -> list[str]:
    """Table 2: the 7B meta step, run in a fresh process."""
    done = subprocess.run(
        [sys.executable, __file__, "--llama-child"], capture_output=True, text=True, check=True, timeout=600
    )
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    gib = 1024**3
    rows = [
        "| figure | value |",
        "| --- | --- |",
        f"| parameters (count) | {figures['parameters_count']:,} |",
        f"| `parameters` at peak (bytes) | {figures['parameters_bytes']:,} "
        f"(2 x count = {figures['expected_parameters_bytes']:,}) |",
        f"| peak ({figures['peak_status']}) | {figures['peak']:,} bytes = {figures['peak'] / gib:.2f} GiB |",
        f"| phase at peak | {figures['phase_at_peak']} |",
    ]
    for name, value in figures["at_peak"].items():
        rows.append(f"| at peak: {name} | {value / gib:.2f} GiB |")
    for name, value in figures["by_phase"].items():
        rows.append(f"| by_phase {name} | {'-' if value is None else f'{value / gib:.2f} GiB'} |")
    rows += [
        f"| ledger events | {figures['events']:,} |",
        f"| diagnostics | {', '.join(figures['diagnostics']) or 'none'} |",
        f"| wall time: build / measure / total | {figures['build_seconds']} s / "
        f"{figures['measure_seconds']} s / {figures['total_seconds']} s |",
        f"| peak RSS of the fresh process | {figures['max_rss_bytes'] / gib:.2f} GiB |",
    ]
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="the small CNN step only, no 7B run")
    parser.add_argument("--skip-llama", action="store_true", help="skip the 7B meta step")
    parser.add_argument("--llama-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help="also write the Markdown here")
    options = parser.parse_args(argv)
    torch.set_num_threads(1)
    if options.llama_child:
        llama_child()
        return 0
    lines = [
        f"torch {torch.__version__}, CPU, 1 thread",
        "",
        *agreement(options.smoke),
    ]
    if not (options.smoke or options.skip_llama):
        lines += ["", *llama()]
    text = "\n".join(lines)
    print(text)
    if options.out is not None:
        options.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
