"""The measured model zoo: what TorchScan reports on every torchvision classifier and on transformers models.

Usage: ``python benchmarks/zoo.py`` (every model; run it with torch 2.14.1 + torchvision 0.29.1, e.g.
``/root/.cache/torchscan-ci/torch-2.14.1/bin/python``), ``--skip-large``, ``--only NAME[,NAME]``,
``--limit N``, ``--markdown FILE``, ``--json FILE``, ``--overhead REPEATS`` (also the issue #24 timing:
full ``crawl_module`` and ``measure_flops`` ÷ a bare forward per model and the zoo medians, through
``zoo_overhead.py``), ``--training`` (also one training step per model of the training set — torchvision
classifiers with grouped convolutions and the architectures of ``zoo_truth`` — reconciled per
convolution and linear call, printing "training right N/M", through ``zoo_training.py``) and
``--training-only`` (that section alone). One process; models are built one at a time and
freed after use; CPU, ``torch.set_num_threads(1)``; random weights, no downloads.

Per model: parameters; module FLOPs/MACs/DMAs (``crawl_module``, full mode) with status and value;
operator FLOPs (``measure_flops``) under ``torch.no_grad()`` and under ``torch.inference_mode()``;
module FLOPs ÷ operator FLOPs; the names of whatever is still unestimated; the time it took. The
per-operator FLOPs against PyTorch's ``FlopCounterMode`` on the operators both count. The summary
checks the targets of issue #19 (see ``benchmarks/README.md``).
"""

from __future__ import annotations

import argparse
import datetime
import gc
import importlib.metadata
import json
import platform
import re
import sys
import time
import warnings
from pathlib import Path
from typing import Any

# The zoo measures the library of the checkout it lives in, even where an environment's editable
# install points at another copy (CI reinstalls the project from its own clone).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch
import zoo_models
import zoo_overhead
import zoo_training
from zoo_truth import catalogue as truth_catalogue

import torchscan

COMPUTE = ("module_flops", "macs", "dmas")
SPATIAL = ("receptive_field", "effective_stride", "effective_padding")
# Published conv + linear MACs (torchvision's model documentation, "GFLOPS" column: multiply-adds).
PUBLISHED_MACS = {"resnet50": 4.09e9, "mobilenet_v3_large": 0.217e9, "vit_b_16": 17.6e9}
STRICT_MODELS = ("resnet50", "bert-base")
OPERATOR_TARGET, MACS_TARGET = 0.98, 0.95  # issue #19 (issue #12 asked 97 % and 90 %)
_OPERATOR_LISTING = re.compile(r"([\w.:]+) \(\d+ call\(s\)\)")
# Exact leaf types (a prefix would also catch torchvision's Conv2dNormActivation composite).
_CONV_LINEAR = re.compile(r"(Conv(Transpose)?[123]d|Linear|NonDynamicallyQuantizableLinear)")
_UNSUPPORTED = re.compile(r"Module type not supported: (\w+)")


def _number(result: dict[str, Any]) -> int | float | None:
    """The value of a complete result, the lower bound of a partial one, None when unavailable."""
    return result["value"] if result["status"] == "complete" else result["known_value"]


def metric_figure(result: dict[str, Any]) -> dict[str, Any]:
    """A MetricResult's status and number (``value``, or the lower bound ``known_value`` when partial)."""
    return {"status": result["status"], "value": _number(result)}


def missing_names(diagnostics: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Operators and module types a report names as not estimated, from its diagnostics' fields.

    A diagnostic about a receptive-field metric only (a leaf estimated from its operators has unknown
    geometry, real-models.md 1) leaves FLOPs/MACs/DMAs complete: it is listed apart, under
    ``geometry_unknown``, so that "still unestimated" names only gaps in the compute metrics.
    """
    operators: set[str] = set()
    modules: set[str] = set()
    functional: set[str] = set()
    errors: set[str] = set()
    geometry: set[str] = set()
    for entry in diagnostics:
        code = entry["code"]
        if entry.get("metric") in SPATIAL and code in ("unsupported_module_metric", "module_metric_error"):
            found = _UNSUPPORTED.search(entry["message"])
            geometry.add(found.group(1) if found else entry.get("path", "?"))
        elif code in ("uncounted_operator", "unsupported_operator_formula", "incomplete_operator_formula"):
            operators.add(entry.get("operator", "?"))
        elif code == "unestimated_functional_work":
            functional.update(_OPERATOR_LISTING.findall(entry["message"]))
        elif code == "module_metric_error":
            # A formula that raised (e.g. an Embedding subclass with its own forward): name the row.
            errors.add(f"{entry.get('path', '?')} ({entry['message'][:80]})")
        elif code == "unsupported_module_metric":
            found = _UNSUPPORTED.search(entry["message"])
            modules.add(found.group(1) if found else entry.get("path", "?"))
    return {
        "uncounted_operators": sorted(operators),
        "unsupported_modules": sorted(modules),
        "unestimated_functional_operators": sorted(functional),
        "module_metric_errors": sorted(errors),
        "geometry_unknown": sorted(geometry),
    }


def conv_linear_macs(report: dict[str, Any]) -> dict[str, Any]:
    """Sum of MACs of Conv*/Linear rows plus MultiheadAttention rows (not Linear rows inside them).

    A torchvision ViT runs its attention through ``nn.MultiheadAttention``, whose in-projection is a
    parameter, not a child Linear: that row's MACs (in/out projections + QKᵀ + attention·V) stand for
    the attention's matrix products. Any row under an MHA row is skipped so nothing counts twice.
    """
    total = 0
    complete = True
    attention_paths: list[str] = []
    for layer in report["layers"]:
        kind = layer["type"]
        if layer.get("called", True) is False:
            continue  # a module that never ran (views-3.md 1): its work is in the call that did it
        if any(layer["path"].startswith(prefix + ".") for prefix in attention_paths):
            continue
        if kind == "MultiheadAttention":
            attention_paths.append(layer["path"])
        elif not _CONV_LINEAR.fullmatch(kind):
            continue
        result = layer["metrics"].get("macs")
        if result is None or result["status"] != "complete":
            complete = False
            continue
        total += result["value"]
    return {"value": total, "complete": complete, "attention_rows": len(attention_paths)}


def _flops(model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], context: Any) -> Any:
    with context():
        return torchscan.measure_flops(lambda: model(*args, **kwargs))


def shared_operators(
    model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], by_operator: dict[str, int]
) -> dict[str, Any]:
    """TorchScan's per-operator FLOPs against ``FlopCounterMode`` on the operators both count.

    One more forward under ``torch.no_grad()`` with PyTorch's own counter; ``ratio`` = TorchScan's sum
    over the shared operators ÷ FlopCounterMode's sum over the same ones (1.0 when every shared
    operator agrees exactly); ``differing`` names any shared operator whose values differ.
    """
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    try:
        with torch.no_grad(), counter:
            model(*args, **kwargs)
    except Exception as error:  # PyTorch's counter itself failed on this model: say so, not TorchScan's
        return {
            "operators": 0,
            "torchscan": 0,
            "flop_counter_mode": 0,
            "ratio": None,
            "differing": [],
            "error": f"{type(error).__name__}: {error}"[:200],
        }
    theirs = {
        str(packet): int(value) for packet, value in counter.get_flop_counts().get("Global", {}).items()
    }
    shared = sorted(name for name in theirs if name in by_operator)
    ours_total = sum(by_operator[name] for name in shared)
    theirs_total = sum(theirs[name] for name in shared)
    return {
        "operators": len(shared),
        "torchscan": ours_total,
        "flop_counter_mode": theirs_total,
        "ratio": ours_total / theirs_total if theirs_total else None,
        "differing": [name for name in shared if by_operator[name] != theirs[name]],
    }


def measure(spec: zoo_models.ZooSpec) -> dict[str, Any]:
    """Every per-model figure of one zoo entry; the model is built here and dropped on return."""
    started = time.perf_counter()
    entry: dict[str, Any] = {"name": spec.name, "family": spec.family, "group": spec.group}
    try:
        model, args, kwargs = spec.build()
        model.eval()
        report = torchscan.crawl_module(model, args=args, kwargs=kwargs)
        eager = _flops(model, args, kwargs, torch.no_grad)
        inference = _flops(model, args, kwargs, torch.inference_mode)
        shared = shared_operators(model, args, kwargs, eager["by_operator"])
        if spec.name in STRICT_MODELS:
            try:
                torchscan.crawl_module(model, args=args, kwargs=kwargs, strict=True)
                entry["strict"] = "passes"
            except torchscan.IncompleteAnalysisError as error:
                entry["strict"] = f"fails: {error}"[:300]
    except Exception as error:  # a model that cannot run is reported, never stops the zoo
        entry["error"] = f"{type(error).__name__}: {error}"[:300]
        entry["seconds"] = round(time.perf_counter() - started, 2)
        return entry
    totals = report["totals"]
    entry["parameters"] = _number(totals["parameters"])
    # views-3.md 1: own parameters over all rows (not-called modules included) sum to the total
    entry["parameters_in_rows"] = sum(
        layer["parameters"]["trainable"] + layer["parameters"]["frozen"] for layer in report["layers"]
    )
    entry.update({name: metric_figure(totals[name]) for name in COMPUTE})
    entry["operator_flops_no_grad"] = metric_figure(eager["total"])
    entry["operator_flops_inference_mode"] = metric_figure(inference["total"])
    # families.md 1: value and status must be identical; by_operator may differ only where PyTorch
    # dispatches another kernel for the same math (aten.mm vs aten.bmm), listed apart.
    entry["operator_flops_identical"] = eager["total"] == inference["total"]
    entry["by_operator_differences"] = sorted(
        name
        for name in set(eager["by_operator"]) | set(inference["by_operator"])
        if eager["by_operator"].get(name) != inference["by_operator"].get(name)
    )
    module_flops, operator_flops = entry["module_flops"], entry["operator_flops_no_grad"]
    both = module_flops["status"] == operator_flops["status"] == "complete"
    entry["ratio_complete"] = both
    if operator_flops["value"]:
        entry["ratio"] = (module_flops["value"] or 0) / operator_flops["value"]
    entry["conv_linear_macs"] = conv_linear_macs(report)
    entry["shared_operators"] = shared
    entry["missing"] = missing_names(report["diagnostics"] + eager["diagnostics"])
    # Operators only inference_mode leaves uncounted (composites reaching the observer undecomposed).
    seen = set(entry["missing"]["uncounted_operators"])
    entry["inference_mode_only_uncounted"] = [
        name for name in missing_names(inference["diagnostics"])["uncounted_operators"] if name not in seen
    ]
    entry["seconds"] = round(time.perf_counter() - started, 2)
    del model, report, eager, inference
    return entry


# --- summary ----------------------------------------------------------------------------------


def _share(entries: list[dict[str, Any]], test: Any) -> tuple[int, int]:
    ran = [entry for entry in entries if "error" not in entry]
    return sum(1 for entry in ran if test(entry)), len(entries)


def summary(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The issue's targets, computed from the per-model figures (models that failed count as misses)."""
    op_ok, total = _share(
        entries,
        lambda e: e["operator_flops_no_grad"]["status"] == "complete" and e["operator_flops_identical"],
    )
    macs_ok, _ = _share(entries, lambda e: e["macs"]["status"] == "complete")
    identical, _ = _share(entries, lambda e: e["operator_flops_identical"])
    no_grad_ok, _ = _share(entries, lambda e: e["operator_flops_no_grad"]["status"] == "complete")
    # An incomplete model must say what is missing: any that names nothing is a defect to report.
    unnamed = [
        entry["name"]
        for entry in entries
        if "error" not in entry
        and any(entry[name]["status"] != "complete" for name in ("macs", "operator_flops_no_grad"))
        and not any(v for k, v in entry.get("missing", {}).items() if k != "geometry_unknown")
    ]
    outliers = [
        (entry["name"], round(entry["ratio"], 3))
        for entry in entries
        if entry.get("ratio_complete") and not 0.9 <= entry["ratio"] <= 1.1
    ]
    published = {}
    for entry in entries:
        if entry["name"] in PUBLISHED_MACS and "error" not in entry:
            measured = entry["conv_linear_macs"]
            target = PUBLISHED_MACS[entry["name"]]
            deviation = measured["value"] / target - 1
            published[entry["name"]] = {
                "measured": measured["value"],
                "published": target,
                "deviation": round(deviation, 4),
                "within_1_percent": measured["complete"] and abs(deviation) <= 0.01,
            }
    return {
        "models": total,
        "errors": [entry["name"] for entry in entries if "error" in entry],
        "operator_flops_complete_and_identical": op_ok,
        "operator_flops_identical": identical,
        "by_operator_differs": [
            f"{entry['name']} ({', '.join(entry['by_operator_differences'])})"
            for entry in entries
            if entry.get("by_operator_differences")
        ],
        "operator_flops_target_met": total > 0 and op_ok >= OPERATOR_TARGET * total,
        "macs_complete": macs_ok,
        "macs_target_met": total > 0 and macs_ok >= MACS_TARGET * total,
        "operator_flops_no_grad_complete": no_grad_ok,
        "incomplete_without_names": unnamed,
        "ratio_outliers": outliers,
        "ratio_models_compared": sum(1 for entry in entries if entry.get("ratio_complete")),
        "published_macs": published,
        "strict": {entry["name"]: entry["strict"] for entry in entries if "strict" in entry},
        "shared_operators": _shared_summary(entries),
        "groups": _groups(entries),
    }


def _shared_summary(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The shared-operator check over every model that ran: sums, ratio, models with a difference."""
    ran = [entry["shared_operators"] for entry in entries if "shared_operators" in entry]
    ours = sum(item["torchscan"] for item in ran)
    theirs = sum(item["flop_counter_mode"] for item in ran)
    return {
        "models": len(ran),
        "ratio": ours / theirs if theirs else None,
        "flop_counter_mode_failed": sorted(
            f"{entry['name']} ({entry['shared_operators']['error']})"
            for entry in entries
            if entry.get("shared_operators", {}).get("error")
        ),
        "differing": sorted(
            f"{entry['name']}: {', '.join(entry['shared_operators']['differing'])}"
            for entry in entries
            if entry.get("shared_operators", {}).get("differing")
        ),
    }


def _groups(entries: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per task/architecture group: models, operator FLOPs complete and identical, MACs complete."""
    groups: dict[str, dict[str, int]] = {}
    for entry in entries:
        counts = groups.setdefault(
            entry.get("group", "classification"), {"models": 0, "operator": 0, "macs": 0}
        )
        counts["models"] += 1
        if "error" in entry:
            continue
        if entry["operator_flops_no_grad"]["status"] == "complete" and entry["operator_flops_identical"]:
            counts["operator"] += 1
        counts["macs"] += entry["macs"]["status"] == "complete"
    return groups


# --- rendering --------------------------------------------------------------------------------


def _cell(figure: dict[str, Any]) -> str:
    value = figure["value"]
    shown = "—" if value is None else f"{value / 1e9:.3f} G"
    if figure["status"] == "complete":
        return shown
    return f"{figure['status']}" + ("" if value is None else f" ≥ {shown}")


def _missing_cell(entry: dict[str, Any]) -> str:
    missing = entry.get("missing", {})
    parts = [
        *(f"op `{name}`" for name in missing.get("uncounted_operators", [])),
        *(f"module `{name}`" for name in missing.get("unsupported_modules", [])),
        *(f"functional `{name}`" for name in missing.get("unestimated_functional_operators", [])),
        *(f"error at `{name}`" for name in missing.get("module_metric_errors", [])),
        *(f"inference_mode op `{name}`" for name in entry.get("inference_mode_only_uncounted", [])),
    ]
    return ", ".join(parts) or "—"


def _identical_cell(entry: dict[str, Any]) -> str:
    if not entry["operator_flops_identical"]:
        return "NO"
    differences = entry.get("by_operator_differences")
    return "yes" + (f" (by_operator: {', '.join(differences)})" if differences else "")


def _shared_cell(entry: dict[str, Any]) -> str:
    shared = entry.get("shared_operators")
    if shared and shared.get("error"):
        return "FlopCounterMode raised"
    if not shared or shared["ratio"] is None:
        return "—"
    text = f"{shared['ratio']:.4f} ({shared['operators']} ops)"
    return text + (
        " differs: " + ", ".join(f"`{n}`" for n in shared["differing"]) if shared["differing"] else ""
    )


def _geometry_cell(entry: dict[str, Any]) -> str:
    names = entry.get("missing", {}).get("geometry_unknown", [])
    return ", ".join(f"`{name}`" for name in names) or "—"


def markdown(entries: list[dict[str, Any]], facts: dict[str, Any], header: list[str]) -> str:
    """The zoo's Markdown: header, targets, one row per model (a pure function of the figures)."""
    lines = [*header, "", "#### Targets", ""]
    total = facts["models"]
    lines += [
        f"- operator FLOPs complete and identical under no_grad / inference_mode: "
        f"{facts['operator_flops_complete_and_identical']}/{total} (target ≥ {OPERATOR_TARGET:.0%}: "
        f"{'met' if facts['operator_flops_target_met'] else 'missed'}); identical on "
        f"{facts['operator_flops_identical']}/{total} (value and status; by_operator differs on "
        + (", ".join(facts.get("by_operator_differs", [])) or "none")
        + ")",
        f"- module MACs complete: {facts['macs_complete']}/{total} (target ≥ {MACS_TARGET:.0%}: "
        f"{'met' if facts['macs_target_met'] else 'missed'}); incomplete models naming nothing: "
        + (", ".join(facts["incomplete_without_names"]) or "none"),
        f"- operator FLOPs complete under no_grad alone: {facts['operator_flops_no_grad_complete']}/{total}",
        f"- module FLOPs ÷ operator FLOPs outside 0.9–1.1 where both are complete "
        f"({facts['ratio_models_compared']} models): "
        + (", ".join(f"{name} {ratio}" for name, ratio in facts["ratio_outliers"]) or "none"),
    ]
    for name, figure in facts["published_macs"].items():
        lines.append(
            f"- {name} conv + linear MACs: {figure['measured']:,} vs published {figure['published'] / 1e9} G "
            f"({figure['deviation']:+.2%}; within 1 %: {'yes' if figure['within_1_percent'] else 'no'})"
        )
    shared = facts.get("shared_operators")
    if shared and shared["models"]:
        ratio = "—" if shared["ratio"] is None else f"{shared['ratio']:.4f}"
        lines.append(
            f"- shared-operator ratio vs FlopCounterMode (TorchScan ÷ FlopCounterMode on the operators both "
            f"count, {shared['models']} models): {ratio}; models with a differing operator: "
            + ("; ".join(shared["differing"]) or "none")
            + "; FlopCounterMode itself raised on: "
            + ("; ".join(shared["flop_counter_mode_failed"]) or "none")
        )
    for group, counts in facts.get("groups", {}).items():
        lines.append(
            f"- {group}: {counts['models']} models, operator FLOPs complete and identical "
            f"{counts['operator']}/{counts['models']}, MACs complete {counts['macs']}/{counts['models']}"
        )
    for name, outcome in facts["strict"].items():
        lines.append(f"- `crawl_module(..., strict=True)` on {name}: {outcome}")
    if facts["errors"]:
        lines.append("- models that raised: " + ", ".join(facts["errors"]))
    lines += [
        "",
        "#### Per model",
        "",
        "| model | params | module FLOPs | MACs | DMAs | operator FLOPs (no_grad) | same under "
        "inference_mode | module ÷ operator | still unestimated | receptive field unknown | "
        "÷ FlopCounterMode (shared ops) | s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | :---: | ---: | --- | --- | ---: | ---: |",
    ]
    for entry in entries:
        if "error" in entry:
            lines.append(
                f"| {entry['name']} | failed: {entry['error'][:120]} |  |  |  |  |  |  |  |  |  | "
                f"{entry['seconds']} |"
            )
            continue
        ratio = f"{entry['ratio']:.3f}" if "ratio" in entry else "—"
        if "ratio" in entry and not entry["ratio_complete"]:
            ratio += " (bounds)"
        lines.append(
            f"| {entry['name']} | {entry['parameters']:,} | {_cell(entry['module_flops'])} | "
            f"{_cell(entry['macs'])} | {_cell(entry['dmas'])} | {_cell(entry['operator_flops_no_grad'])} | "
            f"{_identical_cell(entry)} | {ratio} | {_missing_cell(entry)} | "
            f"{_geometry_cell(entry)} | {_shared_cell(entry)} | {entry['seconds']} |"
        )
    return "\n".join(lines) + "\n"


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _header(argv: list[str], seconds: float) -> list[str]:
    versions = ", ".join(
        [
            f"python {platform.python_version()}",
            f"torch {torch.__version__}",
            f"torchscan {torchscan.__version__}",
        ]
        + [f"{name} {_version(name)}" for name in ("torchvision", "transformers")]
    )
    return [
        "## TorchScan model zoo",
        "",
        f"- date: {datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        "- command: `" + " ".join(["python benchmarks/zoo.py", *argv]) + "`",
        f"- machine: {platform.machine()}, {platform.system()} {platform.release()}, CPU, "
        f"torch.set_num_threads(1); total {seconds:.0f} s",
        f"- versions: {versions}",
        "- values in G (10⁹); `partial ≥ x` is a lower bound; operator FLOPs from `measure_flops`, module "
        "figures from `crawl_module` (full mode)",
    ]


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--only", help="comma-separated zoo names (torchvision builder names or transformers keys)"
    )
    parser.add_argument(
        "--skip-large", action="store_true", help=f"skip {', '.join(sorted(zoo_models.LARGE))}"
    )
    parser.add_argument("--limit", type=int, help="measure at most this many models")
    parser.add_argument("--markdown", type=Path, help="also write the Markdown to this file")
    parser.add_argument("--json", type=Path, help="write every per-model figure and the summary as JSON")
    parser.add_argument(
        "--overhead",
        type=int,
        metavar="REPEATS",
        help="also time full crawl_module and measure_flops against a bare forward per model "
        "(zoo_overhead.py, REPEATS interleaved rounds) and report the zoo medians (issue #36 targets)",
    )
    parser.add_argument(
        "--training",
        action="store_true",
        help="also run one training step per model of the training set and reconcile every "
        "conv/linear call (zoo_training.py); prints 'training right N/M'",
    )
    parser.add_argument("--training-only", action="store_true", help="the training section alone")
    options = parser.parse_args(argv)
    options.training = options.training or options.training_only
    if options.limit is not None and options.limit < 1:
        parser.error("--limit must be at least 1")
    if options.overhead is not None and options.overhead < 1:
        parser.error("--overhead must be at least 1")
    specs = zoo_models.catalogue()
    if options.only:
        wanted = options.only.split(",")
        by_name = {spec.name: spec for spec in specs}
        unknown = [name for name in wanted if name not in by_name]
        if unknown:
            parser.error(
                f"unknown zoo names: {', '.join(unknown)} (torchvision installed: "
                f"{bool(zoo_models.torchvision_names())})"
            )
        specs = [by_name[name] for name in wanted]
    if options.skip_large:
        specs = [spec for spec in specs if not spec.large]
    options.specs = specs[: options.limit] if options.limit else specs
    return options


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: measure the selected models, print the Markdown, write the files."""
    argv = sys.argv[1:] if argv is None else list(argv)
    options = _parse(argv)
    warnings.simplefilter("ignore")  # transformers warns per call; warnings are not under test
    torch.set_num_threads(1)
    started = time.perf_counter()
    entries = []
    timings = []
    for spec in [] if options.training_only else options.specs:
        entry = measure(spec)
        gc.collect()  # the model is freed before the next one is built
        entries.append(entry)
        state = entry.get("error", f"macs {entry.get('macs', {}).get('status')}")
        print(f"{spec.name}: {entry['seconds']} s, {state}", file=sys.stderr, flush=True)
        if options.overhead:
            timings.append(zoo_overhead.time_model(spec, options.overhead))
            gc.collect()
    facts = summary(entries)
    text = markdown(entries, facts, _header(argv, time.perf_counter() - started))
    if options.overhead:
        facts["overhead"] = zoo_overhead.summary(timings)
        text += "\n## Overhead against a bare forward (issue #24)\n\n" + zoo_overhead.markdown(
            timings, facts["overhead"]
        )
    data: dict[str, Any] = {"models": entries, "summary": facts}
    if options.training_only:
        text = ""
    if options.training:
        cases, left_out = zoo_training.training_set(
            [spec.name for spec in options.specs], truth_catalogue.by_name()
        )
        data["training"], data["training_summary"], section = zoo_training.run(cases, left_out)
        text += ("\n" if text else "") + section
    print(text, end="")
    if options.markdown:
        options.markdown.write_text(text, encoding="utf-8")
    if options.json:
        options.json.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
