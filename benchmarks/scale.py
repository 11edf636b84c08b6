"""Scale check: full ``crawl_module`` on a Llama-3-70B-shaped model built on the meta device.

Usage: ``python benchmarks/scale.py`` (80 layers) or ``python benchmarks/scale.py --layers 2``.
transformers ``LlamaConfig`` (hidden 8192, intermediate 28672, 64 heads, 8 KV heads, vocab 128256) and
``LlamaModel`` (no LM head: 69.5 B parameters at 80 layers), built under ``torch.device("meta")`` so no
weight memory is allocated; 1 × 128 meta input ids, no attention mask. The config keeps transformers'
default ``use_cache=True``: with ``use_cache=False`` (or an explicit attention mask) transformers'
own mask preparation reads tensor values (``masking_utils``), so even a bare forward fails on meta.
Prints the wall time of the one ``crawl_module`` call, the parameters and operator FLOPs it reports
(with their status) and the diagnostic codes, then the peak RSS of the whole thing run again in a
fresh process. The spec's target is < 5 s and < 1 GiB peak RSS at 80 layers; nothing here enforces it.
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
import time
import traceback
import warnings

import torch


def build(layers: int, tokens: int) -> tuple[torch.nn.Module, torch.Tensor]:
    """The meta-device Llama model and its meta input ids."""
    from transformers import LlamaConfig, LlamaModel

    config = LlamaConfig(
        hidden_size=8192,
        intermediate_size=28672,
        num_hidden_layers=layers,
        num_attention_heads=64,
        num_key_value_heads=8,
        vocab_size=128256,
        max_position_embeddings=8192,
        rope_theta=500000.0,
    )
    with torch.device("meta"):
        model = LlamaModel(config)
        ids = torch.zeros(1, tokens, dtype=torch.long)
    return model.eval(), ids


def _metric(metric: dict) -> str:
    value = metric.get("value") if metric.get("status") == "complete" else metric.get("known_value")
    shown = f"{value:,}" if isinstance(value, int | float) else str(value)
    return f"{shown} ({metric.get('status')}, {metric.get('method')})"


def analyse(layers: int, tokens: int) -> int:
    """Build, crawl once, print the figures; return 0, or 1 when crawl_module raised."""
    import torchscan

    start = time.perf_counter()
    model, ids = build(layers, tokens)
    built = time.perf_counter() - start
    print(
        f"LlamaModel, {layers} layers, built on meta in {built:.2f} s; input_ids {tuple(ids.shape)} on meta"
    )
    start = time.perf_counter()
    try:
        report = torchscan.crawl_module(model, kwargs={"input_ids": ids})
    except Exception as error:
        elapsed = time.perf_counter() - start
        print(f"crawl_module FAILED after {elapsed:.2f} s: {type(error).__name__}: {error}")
        frames = traceback.extract_tb(error.__traceback__)
        print("traceback (innermost 8 frames):")
        for frame in frames[-8:]:
            print(f"  {frame.filename}:{frame.lineno} in {frame.name}: {frame.line}")
        return 1
    elapsed = time.perf_counter() - start
    totals = report["totals"]
    print(f"crawl_module (full) wall time: {elapsed:.2f} s (target < 5 s at 80 layers)")
    print(f"layers reported: {len(report['layers'])}")
    print(f"parameters: {_metric(totals['parameters'])}")
    print(f"operator FLOPs: {_metric(report['operator_flops']['total'])}")
    print(f"module-formula FLOPs: {_metric(totals['module_flops'])}")
    codes = collections.Counter(d["code"] for d in report["diagnostics"])
    print("diagnostics: " + (", ".join(f"{code} ×{n}" for code, n in sorted(codes.items())) or "none"))
    uncounted = report["operator_flops"]["diagnostics"]
    if uncounted:
        print("operator diagnostics: " + ", ".join(sorted({d.get("operator", d["code"]) for d in uncounted})))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the analysis here, then once more in a fresh process for its peak RSS."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--layers", type=int, default=80, help="decoder layers (default 80: Llama-3-70B)")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--no-rss", action="store_true", help="skip the fresh-process peak RSS run")
    parser.add_argument("--rss-child", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    if options.rss_child:
        import contextlib
        import io

        with contextlib.redirect_stdout(io.StringIO()):
            return analyse(options.layers, options.tokens)
    status = analyse(options.layers, options.tokens)
    if options.no_rss:
        return status
    import torchscan

    command = [sys.executable, __file__, "--rss-child", "--layers", str(options.layers)]
    command += ["--tokens", str(options.tokens)]
    try:
        peak = torchscan.measure_peak_rss(command)
    except subprocess.CalledProcessError as error:
        print(f"peak RSS (fresh process): child exited {error.returncode}")
    else:
        mib = peak["value"] / 2**20
        print(f"peak RSS (fresh process: imports + build + crawl): {mib:,.0f} MiB (target < 1 GiB)")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
