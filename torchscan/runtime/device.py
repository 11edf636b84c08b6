"""Device normalisation, availability and synchronisation shared by the workload APIs (workloads.md 1.3).

``device`` names where the caller's workload *already* runs. It selects how to synchronise and which
measurement API to use; nothing here moves, copies or allocates anything. PyTorch attributes are
looked up at call time so tests can substitute them (such substitutions are bookkeeping checks, never
hardware evidence).
"""

from __future__ import annotations

import platform
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass

import torch

from torchscan.runtime.arguments import ArgumentTypeError, DeviceUnavailableError


@dataclass(frozen=True)
class Device:
    """A validated device: ``name`` is the normalised string (``"cpu"``, ``"cuda:1"``, ``"mps"``)."""

    name: str
    type: str
    torch_device: torch.device


def resolve_device(device: object) -> Device:
    """Normalise and check ``device`` (a ``str`` or ``torch.device``) without touching any tensor.

    Raises ``TypeError`` for other argument types, ``ValueError`` for a string that is no device,
    :class:`DeviceUnavailableError` (a ``ValueError`` and a ``RuntimeError``) for an unavailable
    CUDA/MPS device or an index out of range, and ``NotImplementedError`` for any other device type.
    Every message names the device as requested.
    """
    if not isinstance(device, str | torch.device):
        raise ArgumentTypeError(f"device must be a str or torch.device, got {type(device).__name__}")
    try:
        parsed = torch.device(device)
    except (RuntimeError, ValueError) as error:
        raise ValueError(f"invalid device {device!r}: {error}") from error
    requested = str(parsed)
    if parsed.type == "cpu":
        return Device("cpu", "cpu", torch.device("cpu"))
    if parsed.type == "cuda":
        return _resolve_cuda(parsed, requested)
    if parsed.type == "mps":
        if parsed.index is not None and parsed.index >= 1:
            raise DeviceUnavailableError(
                f"MPS device '{requested}' is unavailable: only one MPS device ('mps' or 'mps:0') exists"
            )
        if not torch.backends.mps.is_available():
            raise DeviceUnavailableError(
                f"MPS device 'mps' is unavailable (torch.backends.mps.is_available() is False; "
                f"PyTorch {torch.__version__})"
            )
        return Device("mps", "mps", torch.device("mps"))
    raise NotImplementedError(
        f"Workload measurement is not implemented for '{requested}' (supported: cpu, cuda, mps; "
        f"PyTorch {torch.__version__})"
    )


def _resolve_cuda(parsed: torch.device, requested: str) -> Device:
    if not torch.cuda.is_available():
        raise DeviceUnavailableError(
            f"CUDA device '{requested}' is unavailable (torch.cuda.is_available() is False; "
            f"PyTorch {torch.__version__})"
        )
    try:
        index = torch.cuda.current_device() if parsed.index is None else parsed.index
        count = torch.cuda.device_count()
    except (AssertionError, RuntimeError) as error:
        # A CPU-only build asserts "Torch not compiled with CUDA enabled"; a broken driver raises
        # RuntimeError. Either way the requested device is unusable, which is a bad device value.
        raise DeviceUnavailableError(
            f"CUDA device '{requested}' is unavailable: {error} (PyTorch {torch.__version__})"
        ) from error
    if index >= count:
        raise DeviceUnavailableError(f"CUDA device 'cuda:{index}' is unavailable: device count is {count}")
    name = f"cuda:{index}"
    return Device(name, "cuda", torch.device(name))


def synchronizer(device: Device) -> Callable[[], None]:
    """A zero-argument function that waits for the device's queued work (a no-op on CPU).

    Only this one device is synchronised; work on other devices or streams of other processes is not.
    """
    if device.type == "cuda":
        target = device.torch_device

        def sync_cuda() -> None:
            torch.cuda.synchronize(target)

        return sync_cuda
    if device.type == "mps":

        def sync_mps() -> None:
            torch.mps.synchronize()

        return sync_mps

    def sync_nothing() -> None:
        return None

    return sync_nothing


def processor_name() -> str:
    """The CPU model: macOS ``sysctl``, Linux ``/proc/cpuinfo``, otherwise ``platform.processor()``."""
    try:
        if sys.platform == "darwin":
            completed = subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True, check=True
            )
            name = completed.stdout.strip()
            if name:
                return name
        elif sys.platform.startswith("linux"):
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
                for line in cpuinfo:
                    if line.startswith(("model name", "Hardware")) and ":" in line:
                        return line.split(":", 1)[1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return platform.processor()


def device_name(device: Device, processor: str) -> str:
    """CUDA: ``torch.cuda.get_device_name``; CPU and MPS: the ``processor`` string."""
    if device.type == "cuda":
        return str(torch.cuda.get_device_name(device.torch_device))
    return processor
