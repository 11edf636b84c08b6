"""``measure_workload`` texts that quote a collector's error or the caller's input are sanitized."""

from __future__ import annotations

import json

import pytest

from torchscan import measure_workload
from torchscan.measure import latency


class _Opaque:
    pass


def test_collector_error_text_is_sanitized_in_the_diagnostic(monkeypatch: pytest.MonkeyPatch) -> None:
    message = (
        "cannot import name 'Timer' from 'torch.utils.benchmark' (/opt/env/lib/torch/utils/benchmark/x.py)"
        f"\n\x1b[31mred\x1b[0m {_Opaque()!r}"
    )

    def broken_timer() -> None:
        raise ImportError(message)

    monkeypatch.setattr(latency, "load_timer", broken_timer)
    report = measure_workload(lambda: None, device="cpu", metrics=("latency",))
    (entry,) = report["diagnostics"]
    # report/diagnostics.py error_text: "<Type>: <message>" with the path as <path>, the object's
    # address-bearing repr as <_Opaque>, control characters (newline, ESC) dropped, spaces collapsed.
    assert entry["message"] == (
        "ImportError: cannot import name 'Timer' from 'torch.utils.benchmark' (<path>) [31mred [0m <_Opaque>"
    )
    assert "/opt/env" not in json.dumps(report) and " at 0x" not in json.dumps(report)


def test_unknown_metric_names_are_bounded_and_escaped() -> None:
    with pytest.raises(ValueError) as raised:
        measure_workload(lambda: None, device="cpu", metrics=("flops", "x" * 1000 + "\x1b"))
    text = str(raised.value)
    assert text.startswith(f"metrics has unknown names '{'x' * 60}'; allowed: flops, latency")
    assert "\x1b" not in text and len(text) < 200
