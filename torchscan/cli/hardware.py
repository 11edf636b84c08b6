"""``--hardware FILE.json`` and ``flops --train`` for the command line (cli.md, training-and-hardware.md).

The hardware file holds the caller's stated facts, checked by the same function as the API's
``hardware=`` argument; TorchScan has no device table. ``flops --train`` counts one whole training
step with PyTorch's default ``AdamW``. Torch is imported inside the functions that need it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from torchscan.cli.format import figure, seconds, si
from torchscan.cli.targets import UsageError
from torchscan.report.hardware import check_hardware
from torchscan.report.schema import HardwareFacts
from torchscan.views.common.text import human, percent

if TYPE_CHECKING:
    from torch import nn

TRAIN_STEP = (
    "one training step: forward in training mode, loss = sum of the floating-point outputs, "
    "loss.backward(), torch.optim.AdamW(model.parameters()) with PyTorch's defaults, .step(), .zero_grad()"
)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a finite number")


MAX_HARDWARE_BYTES = 1024 * 1024  # a hardware file is a handful of numbers


def load_hardware(path: str) -> HardwareFacts:
    """Read and check a ``--hardware`` JSON file; any problem is a usage error naming the key."""
    try:
        with open(path, "rb") as handle:  # capped: ``--hardware /dev/zero`` must not fill memory
            data = handle.read(MAX_HARDWARE_BYTES + 1)
        if len(data) > MAX_HARDWARE_BYTES:
            raise UsageError(f"--hardware {path!r} is larger than {MAX_HARDWARE_BYTES // 1024} KiB")
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"--hardware {path!r} is not UTF-8 text") from None
    except OSError as error:
        raise UsageError(f"cannot read --hardware {path!r}: {error.strerror or error}") from None
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as error:
        raise UsageError(f"--hardware {path!r} is not valid JSON: {' '.join(str(error).split())}") from None
    try:
        return check_hardware(data, name="hardware")
    except (TypeError, ValueError) as error:
        raise UsageError(f"--hardware {path!r}: {error}") from None


def train_step(model: nn.Module, inputs: Sequence[Any], loss_of: Callable[[Any], Any]) -> Callable[[], None]:
    """A workload running :data:`TRAIN_STEP` once per call; the optimizer is built here, outside it.

    A model without trainable parameters is a usage error before anything runs.
    """
    import torch

    trainable = [parameter for parameter in model.parameters() if parameter.requires_grad]
    if not trainable:
        raise UsageError("--train needs a model with trainable parameters (none requires grad)")
    optimizer = torch.optim.AdamW(trainable)  # PyTorch's defaults: lr 1e-3, betas (0.9, 0.999), wd 0.01
    model.train()

    def workload() -> None:
        loss = loss_of(model(*inputs))
        if loss is None:
            raise UsageError("--train needs a model output with a floating-point tensor to differentiate")
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

    return workload


def _ratio(value: float) -> str:
    return f"{percent(value)} of the stated peak"


def hardware_lines(report: Mapping[str, Any]) -> list[str]:
    """The hardware-relative figures of a report, each beside what it does not mean."""
    facts = report["context"].get("hardware")
    if facts is None:
        return []
    totals = report["totals"]
    lines = [
        f"stated hardware {facts['name']!r}: peak {si(facts['peak_flops_per_second'], 'FLOP/s')}"
        + (
            f", bandwidth {si(facts['memory_bandwidth_bytes_per_second'], 'B/s')}"
            if "memory_bandwidth_bytes_per_second" in facts
            else ", no bandwidth stated"
        )
        + " (the caller's facts; TorchScan has no device table)"
    ]
    if "hardware_flops_utilization" in totals:
        lines += [
            f"achieved     {figure(totals['achieved_flops_per_second'], lambda v: si(v, 'FLOP/s'))}"
            "   (operator FLOPs / block-average latency)",
            f"MFU          {figure(totals['model_flops_utilization'], _ratio)}   (without recompute)",
            f"HFU          {figure(totals['hardware_flops_utilization'], _ratio)}   (all operator FLOPs)",
        ]
    if "roofline_seconds" in totals:
        lines += [
            f"intensity    {figure(totals['arithmetic_intensity'], lambda v: human(v, 'FLOPs/byte'))}"
            "   (module FLOPs / DMA bytes)",
            f"roofline     {figure(totals['roofline_seconds'], seconds)}"
            "   (a model under the stated facts, not a measurement)",
        ]
    return lines
