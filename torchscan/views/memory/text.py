"""Wording of the storage ledger's byte figures, shared by the memory SVG, HTML, table and CLI.

Plain text only (callers escape it for HTML/XML). A lower bound is always written ``≥`` and an
unknown never as a number, so a partial or unavailable figure cannot read as a complete one. The
binary units (KiB, MiB, GiB, TiB) are a conversion of the recorded byte count, never a rounding of
the evidence: the exact byte count is shown beside them wherever there is room.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchscan.views.common.text import long_text, number, signed

_BINARY = ((1024**4, "TiB"), (1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB"))

# Fixed colours of the ledger's categories (Okabe-Ito palette: distinguishable with the common
# colour-vision deficiencies). Colour never carries meaning alone: every band is named in the legend
# and in its own <title>.
CATEGORY_COLOURS = {
    "parameters": "#0072B2",
    "buffers": "#56B4E9",
    "gradients": "#D55E00",
    "optimizer_state": "#CC79A7",
    "activations": "#009E73",
    "temporaries": "#E69F00",
    "inputs": "#F0E442",
}
CATEGORY_LABELS = {
    "parameters": "parameters",
    "buffers": "buffers",
    "gradients": "gradients",
    "optimizer_state": "optimizer state",
    "activations": "activations (saved for backward)",
    "temporaries": "temporaries",
    "inputs": "inputs",
}
NOT_MEANING = (
    "These are live-storage bytes seen by the storage ledger at operator boundaries: they exclude "
    "allocator rounding and caching, fragmentation, the CUDA context, library workspaces and "
    "communication buffers, so they are not the allocator's reserved memory, not process RSS and "
    "not a statement that a workload fits a device. A partial figure (≥) is a lower bound only; an "
    "unknown figure is never drawn or counted as zero."
)


def human_bytes(count: float) -> str:
    """``3232`` -> ``3.16 KiB``; under 1 KiB the exact count, ``512 B``. Signed counts keep their sign."""
    magnitude = abs(count)
    for scale, unit in _BINARY:
        if magnitude >= scale:
            return f"{count / scale:.2f} {unit}"
    return f"{number(count)} B"


def bytes_text(result: Mapping[str, Any] | None) -> str:
    """``3,232 bytes (3.16 KiB)``, ``≥ 3,232 bytes (3.16 KiB)`` (a lower bound) or ``unknown``.

    ``None`` (no result at all) and an unavailable result both read ``unknown``: never a number.
    """
    if result is None or result["status"] == "unavailable" or result["known_value"] is None:
        return "unknown"
    known = result["known_value"]
    text = f"{number(known)} bytes ({human_bytes(known)})"
    return text if result["status"] == "complete" else f"≥ {text}"


def status_bytes_text(result: Mapping[str, Any] | None) -> str:
    """``complete · 3,232 bytes (3.16 KiB)``, ``partial · ≥ … · lower bound`` or ``unavailable · unknown``."""
    if result is None or result["status"] == "unavailable":
        return "unavailable · unknown"
    if result["status"] == "partial":
        return f"partial · {bytes_text(result)} · lower bound, full value unknown"
    return f"complete · {bytes_text(result)}"


def figure_text(result: Mapping[str, Any]) -> str:
    """An allocator figure in its own unit: bytes as :func:`status_bytes_text`, anything else as recorded."""
    if result["unit"] == "bytes":
        return status_bytes_text(result)
    return long_text(result)


def compact_bytes(result: Mapping[str, Any] | None) -> str:
    """A narrow cell: ``3.16 KiB``, ``≥ 3.16 KiB`` or ``unknown``."""
    if result is None or result["status"] == "unavailable" or result["known_value"] is None:
        return "unknown"
    text = human_bytes(result["known_value"])
    return text if result["status"] == "complete" else f"≥ {text}"


def delta_bytes_text(entry: Mapping[str, Any]) -> str:
    """A MetricDiff in bytes: ``+2,176 bytes (+2.12 KiB)`` or why there is no delta."""
    delta = entry["delta"]
    if delta is None:
        if entry["status"] == "partial":
            return "delta unknown (a side is a lower bound)"
        return "delta unknown (requires two complete measurements with equal labels)"
    sign = "+" if delta >= 0 else ""
    return f"{signed(delta)} bytes ({sign}{human_bytes(delta)})"


def call_label(module: Mapping[str, Any] | None) -> str:
    """``layer1.0.conv1 call #0``; ``(root) call #1``; ``outside every module call`` when none ran."""
    if module is None:
        return "outside every module call"
    path = module["path"] or "(root)"
    return f"{path} call #{number(module['call_index'])}"


def place_text(phase: str | None, module: Mapping[str, Any] | None) -> str:
    """``phase backward, inside layer1 call #0`` or ``phase optimizer, outside every module call``."""
    inside = "outside every module call" if module is None else f"inside {call_label(module)}"
    return f"phase {phase_label(phase)}, {inside}"


def phase_label(phase: str | None) -> str:
    """The phase's name, or ``outside any phase`` for ``None``."""
    return phase if phase is not None else "outside any phase"
