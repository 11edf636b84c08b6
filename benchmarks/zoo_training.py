"""The zoo's training steps: both grad modes, one training step, per-call reconciliation (issues #32, #39).

For each model of the training set (every torchvision classifier with grouped or depthwise
convolutions, and the architectures of ``zoo_truth``):

* ``crawl_module`` of the forward (module FLOPs/MACs/DMAs and what they could not estimate);
* operator FLOPs of the forward under ``torch.no_grad()`` and with gradients enabled (evaluation mode
  both times: the same kernels, so the same count);
* one training step under ``measure_flops``: forward, loss, ``backward()``, ``AdamW.step()`` (train
  mode; the optimizer's default CPU implementation), its total and its four phases;
* every conv/linear call of that step reconciled with its closed form (``zoo_reconcile``), and the
  lower-bound rule checked per phase.

A model is **training right** when every conv/linear call reconciles and the step's convolution
kernels tie back to its calls; **complete** when the crawl's compute metrics, both forwards and the
step are complete; otherwise **partial**, with the names of what was left uncounted.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import zoo
import zoo_reconcile
from torch import nn
from zoo_truth.blocks import classification_loss

import torchscan

Loss = Callable[[Any], torch.Tensor]
PHASES = ("forward", "backward", "optimizer", "recompute")
# The torchvision classifier whose training step is too heavy for the 2-core machine (644 M
# parameters: weights, gradients and AdamW's state take 10 GiB); named in the output, never silently
# dropped.
TOO_LARGE = frozenset({"regnet_y_128gf"})
TORCHVISION_IMAGE = (2, 3, 64, 64)  # batch 2: BatchNorm in training needs more than one value
TORCHVISION_FIXED = {"maxvit_t": (2, 3, 224, 224)}  # its 7×7 windows need the 224² input


def grouped(model: nn.Module) -> bool:
    """True when any convolution of ``model`` has ``groups > 1`` (grouped or depthwise)."""
    return any(isinstance(m, nn.modules.conv._ConvNd) and m.groups > 1 for m in model.modules())


def _flops(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], grad: bool) -> dict[str, Any]:
    with torch.set_grad_enabled(grad):
        return torchscan.measure_flops(lambda: model(*args, **kwargs))


def _crawl(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    try:
        report = torchscan.crawl_module(model, args=args, kwargs=kwargs)
    except Exception as error:  # a crawl that raises is a finding: reported, never stops the zoo
        return {"error": f"{type(error).__name__}: {error}"[:200]}
    figures = {name: zoo.metric_figure(report["totals"][name]) for name in zoo.COMPUTE}
    return {"figures": figures, "missing": zoo.missing_names(report["diagnostics"])}


def training_step(
    model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], loss: Loss
) -> tuple[dict[str, Any], zoo_reconcile.Recorder]:
    """One step (forward, loss, backward, AdamW step) under ``measure_flops``, its calls recorded."""
    model.train()
    optimizer = torch.optim.AdamW(model.parameters())
    optimizer.zero_grad(set_to_none=True)

    def step() -> None:
        loss(model(*args, **kwargs)).backward()
        optimizer.step()

    with zoo_reconcile.Recorder(model) as recorder:
        report = torchscan.measure_flops(step)
    return report, recorder


def measure_training(
    name: str, build: Callable[[], Any], loss: Loss | None = None, group: str = ""
) -> dict[str, Any]:
    """Every training figure of one model; the model is built here and dropped on return."""
    started = time.perf_counter()
    entry: dict[str, Any] = {"name": name, "group": group}
    try:
        torch.manual_seed(0)
        model, args, kwargs = build()
        entry["parameters"] = sum(p.numel() for p in model.parameters())
        model.eval()
        entry["crawl"] = _crawl(model, args, kwargs)
        no_grad, with_grad = _flops(model, args, kwargs, False), _flops(model, args, kwargs, True)
        entry["forward_no_grad"] = zoo.metric_figure(no_grad["total"])
        entry["forward_grad"] = zoo.metric_figure(with_grad["total"])
        entry["grad_modes_equal"] = no_grad["total"] == with_grad["total"]
        step, recorder = training_step(model, args, kwargs, loss or classification_loss)
        entry["step"] = {"total": zoo.metric_figure(step["total"])}
        entry["step"].update({phase: zoo.metric_figure(step["by_phase"][phase]) for phase in PHASES})
        forward_missing = zoo.missing_names(no_grad["diagnostics"] + with_grad["diagnostics"])
        entry["uncounted"] = sorted(
            set(forward_missing["uncounted_operators"])
            | set(zoo.missing_names(step["diagnostics"])["uncounted_operators"])
        )
        entry["reconcile"] = zoo_reconcile.reconcile(recorder.calls, step["by_operator"])
        entry["not_reconciled_layers"] = sorted(recorder.skipped)
        entry["lower_bound"] = zoo_reconcile.lower_bound(step["by_phase"], entry["reconcile"]["sums"])
    except Exception as error:  # a model that cannot train is reported, never stops the zoo
        entry["error"] = f"{type(error).__name__}: {error}"[:300]
    entry["seconds"] = round(time.perf_counter() - started, 2)
    return entry


def verdicts(entry: dict[str, Any]) -> dict[str, Any]:
    """``right`` (every call reconciles, convolutions tie back), ``complete`` and the partial reasons."""
    if "error" in entry:
        return {"right": False, "complete": False, "reasons": [f"raised: {entry['error'][:120]}"]}
    reconcile = entry["reconcile"]
    right = (
        reconcile["calls"] > 0 and reconcile["right"] == reconcile["calls"] and reconcile["conv_tie_holds"]
    )
    reasons: list[str] = []
    crawl = entry["crawl"]
    if "error" in crawl:
        reasons.append(f"crawl_module raised {crawl['error']}")
    else:
        incomplete = [name for name, figure in crawl["figures"].items() if figure["status"] != "complete"]
        if incomplete:
            missing = crawl["missing"]
            named = missing["unsupported_modules"] + missing["unestimated_functional_operators"]
            reasons.append(f"module {'/'.join(incomplete)}: " + (", ".join(named) or "nothing named"))
    statuses = [entry["forward_no_grad"], entry["forward_grad"], entry["step"]["total"]]
    if any(figure["status"] != "complete" for figure in statuses):
        reasons.append("operator FLOPs: " + (", ".join(entry["uncounted"]) or "nothing named"))
    return {"right": right, "complete": not reasons, "reasons": reasons}


def summary(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Training right N/M, complete and partial counts, the lower-bound rule, the failures by name."""
    judged = [(entry, verdicts(entry)) for entry in entries]
    return {
        "models": len(entries),
        "right": sum(v["right"] for _, v in judged),
        "complete": sum(v["complete"] for _, v in judged),
        "partial": sum(not v["complete"] and "error" not in e for e, v in judged),
        "errors": [e["name"] for e, _ in judged if "error" in e],
        "lower_bound_holds": sum(e.get("lower_bound", {}).get("holds", False) for e in entries),
        "not_right": [e["name"] for e, v in judged if not v["right"]],
        "partial_reasons": {e["name"]: v["reasons"] for e, v in judged if not v["complete"]},
    }


def _cell(figure: dict[str, Any]) -> str:
    value = figure["value"]
    shown = "—" if value is None else f"{value:,}"
    return shown if figure["status"] == "complete" else f"{figure['status']} ≥ {shown}"


def _reconcile_cell(entry: dict[str, Any]) -> str:
    reconcile = entry["reconcile"]
    text = f"{reconcile['right']}/{reconcile['calls']}"
    if reconcile["wrong"]:
        first = reconcile["wrong"][0]
        ratio = first["backward_over_forward"]
        text += (
            f" (e.g. `{first['path']}` {first['type']} groups {first['groups']}: backward ÷ forward "
            f"{ratio} for {first['expected_ratio']})"
        )
    if not reconcile["conv_tie_holds"]:
        text += "; step convolutions ≠ Σ calls"
    return text


def markdown(entries: list[dict[str, Any]], facts: dict[str, Any]) -> list[str]:
    """The training section: the counts line, then one row per model (pure function of the figures)."""
    lines = [
        f"- training right {facts['right']}/{facts['models']} (every conv/linear call's backward and "
        f"forward equal their closed forms, convolution kernels tie back to the step); complete "
        f"{facts['complete']}/{facts['models']}, partial {facts['partial']}/{facts['models']}; "
        f"lower-bound rule holds on {facts['lower_bound_holds']}/{facts['models']}"
        + (f"; raised: {', '.join(facts['errors'])}" if facts["errors"] else ""),
        "",
        "| model | params | step total | forward | backward | optimizer | backward ÷ forward | "
        "calls right | lower bound | partial because | s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | :---: | --- | ---: |",
    ]
    for entry in entries:
        verdict = verdicts(entry)
        if "error" in entry:
            lines.append(
                f"| {entry['name']} | failed: {entry['error'][:120]} | | | | | | | | | {entry['seconds']} |"
            )
            continue
        step = entry["step"]
        forward, backward = step["forward"]["value"] or 0, step["backward"]["value"] or 0
        ratio = f"{backward / forward:.3f}" if forward else "—"
        cells = [
            entry["name"],
            f"{entry['parameters']:,}",
            *(_cell(step[key]) for key in ("total", "forward", "backward", "optimizer")),
            ratio,
            _reconcile_cell(entry),
            "yes" if entry["lower_bound"]["holds"] else "NO",
            "; ".join(verdict["reasons"]) or "—",
            str(entry["seconds"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def torchvision_builder(name: str) -> Callable[[], Any]:
    """A torchvision classifier (``weights=None``) on the training set's small fixed image."""

    def build() -> Any:
        import torchvision

        model = torchvision.models.get_model(name, weights=None)
        shape = TORCHVISION_FIXED.get(name, TORCHVISION_IMAGE)
        return model, (torch.randn(*shape, generator=torch.Generator().manual_seed(0)),), {}

    return build


def torchvision_grouped_names(names: list[str] | None = None) -> list[str]:
    """The torchvision classifiers among ``names`` (default: all) with a grouped or depthwise
    convolution, found by building each (on the meta device where the builder allows it)."""
    try:
        import torchvision
    except ImportError:
        return []
    classifiers = torchvision.models.list_models(module=torchvision.models)
    found = []
    for name in classifiers if names is None else [n for n in names if n in classifiers]:
        try:
            with torch.device("meta"):
                model = torchvision.models.get_model(name, weights=None)
        except NotImplementedError:  # RegNet computes its widths from tensor values
            model = torchvision.models.get_model(name, weights=None)
        if grouped(model):
            found.append(name)
        del model
    return found


@dataclass(frozen=True)
class TrainingCase:
    """One model of the training set: its zoo name, group, builder and loss."""

    name: str
    group: str
    build: Callable[[], Any]
    loss: Loss


def training_set(names: list[str], truth: dict[str, Any]) -> tuple[list[TrainingCase], list[str]]:
    """The training cases among ``names`` (zoo names): torchvision classifiers with grouped
    convolutions and the added architectures of ``truth`` (name → spec with ``group``, ``build``,
    ``loss``); and the names left out as too large."""
    grouped_names = set(torchvision_grouped_names([name for name in names if name not in truth]))
    cases, left_out = [], []
    for name in names:
        if name in truth:
            spec = truth[name]
            cases.append(TrainingCase(name, spec.group, spec.build, spec.loss))
        elif name in grouped_names:
            if name in TOO_LARGE:
                left_out.append(name)
                continue
            cases.append(
                TrainingCase(name, "torchvision, grouped", torchvision_builder(name), classification_loss)
            )
    return cases, left_out


def run(cases: list[TrainingCase], left_out: list[str]) -> tuple[list[dict[str, Any]], dict[str, Any], str]:
    """Measure every case (progress on stderr); the entries, the summary and the Markdown section."""
    entries = []
    for case in cases:
        entry = measure_training(case.name, case.build, case.loss, case.group)
        gc.collect()  # the model and its recorded activations are freed before the next one
        entries.append(entry)
        state = entry.get("error") or f"right {verdicts(entry)['right']}"
        print(f"training {case.name}: {entry['seconds']} s, {state}", file=sys.stderr, flush=True)
    facts = summary(entries)
    facts["left_out"] = left_out
    lines = ["## Training steps reconciled per convolution and linear call (issues #32, #39)", ""]
    lines += markdown(entries, facts)
    if left_out:
        lines.append(f"\nLeft out (too large for this machine's memory): {', '.join(left_out)}")
    return entries, facts, "\n".join(lines) + "\n"
