"""compare_reports on two MemoryReports (memory.md 4): per-category deltas at the peak, peak, baseline."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "views"))
from memory_reports import BASELINE, PEAK, bytes_result, memory_report

from torchscan import compare_reports
from torchscan.report.memory_schema import CATEGORIES, PHASES


def _frozen_first_linear() -> dict:
    """The MLP step with Linear(16, 32) frozen: 16*32*4 + 32*4 = 2,176 bytes of gradients fewer."""
    report = memory_report()
    report["at_peak"]["by_category"]["gradients"] = bytes_result(3232 - 2176, "at_peak")
    report["peak"] = bytes_result(PEAK - 2176, "workload")
    report["by_phase"]["optimizer"] = bytes_result(PEAK - 2176, "workload_phase")
    return report


def test_freezing_shows_as_a_gradients_delta() -> None:
    before, after = memory_report(), _frozen_first_linear()
    kept = copy.deepcopy((before, after))
    diff = compare_reports(before, after)
    assert (before, after) == kept
    assert diff["report_type"] == "memory_comparison" and diff["schema_version"] == 1
    assert list(diff["at_peak"]) == list(CATEGORIES) and list(diff["by_phase"]) == list(PHASES)
    assert diff["at_peak"]["gradients"]["delta"] == -2176
    assert diff["at_peak"]["gradients"]["status"] == "complete"
    assert {
        name: diff["at_peak"][name]["delta"] for name in CATEGORIES if name != "gradients"
    } == dict.fromkeys([name for name in CATEGORIES if name != "gradients"], 0)
    assert diff["peak"]["delta"] == -2176
    assert diff["baseline"]["delta"] == 0 and diff["baseline"]["before"]["value"] == BASELINE
    assert diff["by_phase"]["optimizer"]["delta"] == -2176
    # recompute never ran on either side: unavailable, and the delta is unknown, not 0
    assert diff["by_phase"]["recompute"] == {
        "status": "unavailable",
        "delta": None,
        "before": memory_report()["by_phase"]["recompute"],
        "after": memory_report()["by_phase"]["recompute"],
    }
    assert diff["context_changes"] == {}
    assert diff["where"]["after"] == {"phase": "optimizer", "module": None}
    json.dumps(diff, allow_nan=False)


def test_checkpointing_shows_as_an_activations_delta_and_a_recompute_phase() -> None:
    before = memory_report()
    before["at_peak"]["by_category"]["activations"] = bytes_result(1152, "at_peak")
    before["at_peak"]["by_category"]["optimizer_state"] = bytes_result(6480 - 1152, "at_peak")
    after = copy.deepcopy(before)
    after["at_peak"]["by_category"]["activations"] = bytes_result(512, "at_peak")
    after["peak"] = bytes_result(PEAK - 640, "workload")
    after["by_phase"]["optimizer"] = bytes_result(PEAK - 640, "workload_phase")
    after["by_phase"]["recompute"] = bytes_result(5000, "workload_phase")
    diff = compare_reports(before, after)
    assert diff["at_peak"]["activations"]["delta"] == -640
    assert diff["peak"]["delta"] == -640
    recompute = diff["by_phase"]["recompute"]
    assert recompute["status"] == "unavailable" and recompute["delta"] is None
    assert recompute["after"] is not None and recompute["after"]["value"] == 5000


def test_a_lower_bound_leaves_the_delta_unknown() -> None:
    before = memory_report()
    after = memory_report()
    after["at_peak"]["by_category"]["temporaries"] = bytes_result(512, "at_peak", "partial")
    after["peak"] = bytes_result(PEAK, "workload", "partial")
    diff = compare_reports(before, after)
    assert diff["at_peak"]["temporaries"] == {
        "status": "partial",
        "delta": None,
        "before": before["at_peak"]["by_category"]["temporaries"],
        "after": after["at_peak"]["by_category"]["temporaries"],
    }
    assert diff["peak"]["status"] == "partial" and diff["peak"]["delta"] is None
    assert diff["at_peak"]["parameters"]["delta"] == 0


def test_context_differences_are_listed_not_refused() -> None:
    before = memory_report()
    after = memory_report()
    after["context"].update(device="meta", ledger_device="meta")
    diff = compare_reports(before, after)
    assert diff["context_changes"] == {
        "device": {"before": "cpu", "after": "meta"},
        "ledger_device": {"before": "cpu", "after": "meta"},
    }
    assert diff["peak"]["delta"] == 0


def test_kinds_are_never_mixed_and_reports_are_validated() -> None:
    analysis_like = {"schema_version": 1, "layers": [], "totals": {}}
    with pytest.raises(ValueError, match="two MemoryReports"):
        compare_reports(memory_report(), analysis_like)
    with pytest.raises(ValueError, match="two MemoryReports"):
        compare_reports(analysis_like, memory_report())
    broken = memory_report()
    broken["at_peak"]["by_category"]["inputs"]["unit"] = "elements"
    with pytest.raises(ValueError, match=r"after\.at_peak\.by_category\.inputs\.unit"):
        compare_reports(memory_report(), broken)
    with pytest.raises(ValueError, match=r"before\.at_peak\.by_category\.inputs\.unit"):
        compare_reports(broken, memory_report())
