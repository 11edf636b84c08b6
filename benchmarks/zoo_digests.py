"""Report digests of the zoo (issue #36): does a change leave every report byte unchanged?

Usage: ``python benchmarks/zoo_digests.py --out FILE`` writes, for every non-large zoo model, the
SHA-256 of the JSON text of four reports: ``crawl_module`` full and structure, ``measure_flops``
plain and with ``bytes=True``; ``--compare FILE`` compares this checkout's digests with a file written
by another checkout (run it there first, e.g. from ``git archive`` of the commit before a change) and
prints how many models are identical. ``--only NAME[,NAME]`` and ``--limit N`` narrow the zoo.

One plain forward runs first per model (torchvision's detection models keep one more box on their
very first call). Exit status 1 when a compared model differs. Counting only: no timings.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's torchscan, as zoo.py
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch
import zoo_models

import torchscan

KINDS = ("full", "structure", "measure_flops", "measure_flops_bytes")


def _digest(report: Any) -> str:
    return hashlib.sha256(json.dumps(report).encode()).hexdigest()


def digests(spec: zoo_models.ZooSpec) -> dict[str, str]:
    """The four digests of one zoo model, or ``{"error": ...}`` when it cannot run."""
    try:
        model, args, kwargs = spec.build()
        model.eval()
        with torch.no_grad():
            model(*args, **kwargs)
            return {
                "full": _digest(torchscan.crawl_module(model, args=args, kwargs=kwargs)),
                "structure": _digest(
                    torchscan.crawl_module(model, args=args, kwargs=kwargs, mode="structure")
                ),
                "measure_flops": _digest(torchscan.measure_flops(lambda: model(*args, **kwargs))),
                "measure_flops_bytes": _digest(
                    torchscan.measure_flops(lambda: model(*args, **kwargs), bytes=True)
                ),
            }
    except Exception as error:  # a model that cannot run is reported, never stops the run
        return {"error": f"{type(error).__name__}: {error}"[:200]}


def compare(
    ours: dict[str, dict[str, str]], theirs: dict[str, dict[str, str]]
) -> tuple[list[str], list[str]]:
    """``(identical, different)`` model names among those both files hold."""
    same, different = [], []
    for name, entry in ours.items():
        if name not in theirs:
            continue
        (same if entry == theirs[name] else different).append(name)
    return same, different


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated zoo model names")
    parser.add_argument("--limit", type=int, help="digest at most N models")
    parser.add_argument("--out", type=Path, help="write the digests to this JSON file")
    parser.add_argument("--compare", type=Path, help="compare with digests written by another checkout")
    options = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    specs = zoo_models.small_specs(options.only, options.limit)
    found: dict[str, dict[str, str]] = {}
    for spec in specs:
        found[spec.name] = digests(spec)
        print(f"{spec.name}: {'error' if 'error' in found[spec.name] else 'ok'}", file=sys.stderr, flush=True)
    if options.out:
        options.out.write_text(json.dumps(found, indent=1, sort_keys=True), encoding="utf-8")
    if options.compare is None:
        return 0
    same, different = compare(found, json.loads(options.compare.read_text(encoding="utf-8")))
    errors = [name for name in same if "error" in found[name]]
    print(
        f"models compared: {len(same) + len(different)}; identical: {len(same)} (of which {len(errors)} "
        f"failed alike in both: {errors}); different: {different}"
    )
    return 1 if different else 0


if __name__ == "__main__":
    raise SystemExit(main())
