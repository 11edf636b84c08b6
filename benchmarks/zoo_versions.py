"""Operator FLOPs of the zoo under two torch releases, compared operator by operator (issue #38).

Usage: ``python benchmarks/zoo_versions.py --dump FILE [--only NAME,...]`` under each torch (every zoo
model the installed packages can build: torchvision's only where torchvision is installed, the
transformers and paper-built ones everywhere; the large ones skipped), then
``python benchmarks/zoo_versions.py --compare OLD.json NEW.json`` prints every model whose operator
FLOPs differ, operator by operator, and the models measured under only one of them.

Per model: ``measure_flops`` of one forward under ``torch.no_grad()`` (its status, total and
``by_operator``) and, for the paper-built models, of one training step (forward, loss, backward,
AdamW). CPU, one thread, random weights from fixed seeds: the same model and inputs under both.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # the checkout's library, as zoo.py

import torch
import zoo_models
import zoo_training
from zoo_truth import catalogue as truth_catalogue

import torchscan
from torchscan.runtime.torch_versions import installed_release


def _figures(report: dict[str, Any]) -> dict[str, Any]:
    total = report["total"]
    return {
        "status": total["status"],
        "known_value": total["known_value"],
        "by_operator": report["by_operator"],
        "uncounted": sorted(d["operator"] for d in report["diagnostics"] if "operator" in d),
    }


def _training(name: str) -> dict[str, Any] | None:
    """One training step of a paper-built model (zoo_training's step), or ``None`` for other models."""
    spec = truth_catalogue.by_name().get(name)
    if spec is None:
        return None
    torch.manual_seed(0)
    model, args, kwargs = spec.build()
    report, _ = zoo_training.training_step(model, args, kwargs, spec.loss)
    return _figures(report)


def dump(only: set[str] | None) -> dict[str, Any]:
    """Every buildable, not-large zoo model's figures under the running torch."""
    torch.set_num_threads(1)
    models: dict[str, Any] = {}
    for spec in zoo_models.catalogue():
        if spec.large or (only and spec.name not in only):
            continue
        try:
            torch.manual_seed(0)
            model, args, kwargs = spec.build()
        except ImportError:  # torchvision absent under this torch
            continue
        model.eval()
        with torch.no_grad():
            forward = _figures(torchscan.measure_flops(lambda m=model, a=args, k=kwargs: m(*a, **k)))
        entry = {"forward": forward}
        training = _training(spec.name)
        if training is not None:
            entry["training"] = training
        models[spec.name] = entry
        del model
        print(f"{spec.name}: {forward['status']} {forward['known_value']:,}", file=sys.stderr)
    return {"torch": installed_release(), "models": models}


def compare(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Lines naming every difference between two dumps, operator by operator."""
    lines = [f"torch {old['torch']} -> {new['torch']}"]
    same = 0
    for name in sorted(set(old["models"]) | set(new["models"])):
        if name not in old["models"] or name not in new["models"]:
            where = new["torch"] if name in new["models"] else old["torch"]
            lines.append(f"{name}: measured under torch {where} only")
            continue
        differences = []
        for part in ("forward", "training"):
            a, b = old["models"][name].get(part), new["models"][name].get(part)
            if a is None or b is None or a == b:
                continue
            if a["status"] != b["status"]:
                differences.append(f"  {part}: status {a['status']} -> {b['status']}")
            for op in sorted(set(a["by_operator"]) | set(b["by_operator"])):
                x, y = a["by_operator"].get(op, 0), b["by_operator"].get(op, 0)
                if x != y:
                    differences.append(f"  {part}: {op} {x:,} -> {y:,}")
            if a["uncounted"] != b["uncounted"]:
                differences.append(f"  {part}: diagnostics' operators {a['uncounted']} -> {b['uncounted']}")
        if differences:
            lines += [f"{name}:", *differences]
        else:
            same += 1
    lines.append(f"identical operator FLOPs and statuses: {same} model(s)")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (see the module docstring)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--dump", type=Path, help="measure the zoo under the running torch into this JSON file"
    )
    parser.add_argument("--only", help="comma-separated zoo names")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"), help="compare two dumps")
    options = parser.parse_args(argv)
    if options.dump:
        only = set(options.only.split(",")) if options.only else None
        options.dump.write_text(json.dumps(dump(only), indent=1) + "\n", encoding="utf-8")
    if options.compare:
        old, new = (json.loads(path.read_text(encoding="utf-8")) for path in options.compare)
        print("\n".join(compare(old, new)))
    if not (options.dump or options.compare):
        parser.error("give --dump FILE or --compare OLD NEW")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
