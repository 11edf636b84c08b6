"""Zoo check of the leaf memo (issue #24): every report with the memo equals the report without it.

Usage: ``python benchmarks/zoo_memo_check.py`` (every non-large zoo model; ``--only NAME[,NAME]``,
``--limit N``). Per model: one plain forward first (some models compute differently on their very
first call: torchvision's detection models keep one more box then), then ``crawl_module`` full with
an empty process-wide memo (cold: every distinct call estimated and stored), again (warm: every call
served from the store), and twice with the memo disabled. The JSON text of cold and warm must equal
the JSON text of the runs without the memo; a model whose two runs without the memo differ from each
other is listed as nondeterministic, not as a failure of the memo. Exit status 1 when any model
differs. Counting only: timings are ``zoo_overhead.py``'s.
"""

from __future__ import annotations

import argparse
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
from torchscan.analysis.crawl import estimate, leaf_memo


def _report_text(model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    with torch.no_grad():
        return json.dumps(torchscan.crawl_module(model, args=args, kwargs=kwargs))


def check_model(spec: zoo_models.ZooSpec) -> str:
    """``same``, ``DIFFERENT``, ``nondeterministic`` or ``failed: <error>`` for one zoo model."""
    real_key = estimate.leaf_key
    try:
        model, args, kwargs = spec.build()
        model.eval()
        with torch.no_grad():
            model(*args, **kwargs)
        leaf_memo.SHARED.clear()
        cold = _report_text(model, args, kwargs)
        warm = _report_text(model, args, kwargs)
        estimate.leaf_key = lambda *_: None  # the memo off: every call runs its formulas
        without = _report_text(model, args, kwargs)
        without_again = _report_text(model, args, kwargs)
    except Exception as error:  # a model that cannot run is reported, never stops the check
        return f"failed: {type(error).__name__}: {error}"[:200]
    finally:
        estimate.leaf_key = real_key
    if without != without_again:
        return "nondeterministic"
    return "same" if cold == without and warm == without else "DIFFERENT"


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated zoo model names")
    parser.add_argument("--limit", type=int, help="check at most N models")
    options = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    specs = zoo_models.small_specs(options.only, options.limit)
    outcomes: dict[str, list[str]] = {}
    for spec in specs:
        outcome = check_model(spec)
        print(f"{spec.name}: {outcome}", flush=True)
        outcomes.setdefault(outcome.partition(":")[0], []).append(spec.name)
    print(
        f"models checked: {len(specs)}; same: {len(outcomes.get('same', []))}; "
        f"different: {outcomes.get('DIFFERENT', [])}; nondeterministic: "
        f"{outcomes.get('nondeterministic', [])}; failed: {outcomes.get('failed', [])}"
    )
    return 1 if outcomes.get("DIFFERENT") else 0


if __name__ == "__main__":
    raise SystemExit(main())
