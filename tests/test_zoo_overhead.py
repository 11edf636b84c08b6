"""benchmarks/zoo_overhead.py's pure summary (issue #24): median ratios over the models that ran."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
try:
    import zoo_overhead
finally:
    sys.path.remove(str(ROOT / "benchmarks"))


def test_summary_takes_median_ratios_and_lists_failures() -> None:
    entries = [
        {"name": "a", "bare": 1.0, "floor": 1.1, "full": 1.2, "measure_flops": 1.1},
        {"name": "b", "bare": 2.0, "floor": 2.4, "full": 4.0, "measure_flops": 2.2},
        {"name": "c", "bare": 1.0, "floor": 1.05, "full": 1.4, "measure_flops": 1.5},
        {"name": "d", "error": "RuntimeError: boom"},
    ]
    facts = zoo_overhead.summary(entries)
    # full ÷ bare: 1.2, 2.0, 1.4 -> median 1.4; measure_flops ÷ bare: 1.1, 1.1, 1.5 -> median 1.1;
    # floor ÷ bare: 1.1, 1.2, 1.05 -> median 1.1
    assert facts == {
        "models": 3,
        "errors": ["d"],
        "full_over_bare": 1.4,
        "measure_flops_over_bare": 1.1,
        "floor_over_bare": 1.1,
    }
    text = zoo_overhead.markdown(entries, facts)
    assert "| b | 2000.0 | 1.20× | 2.00× | 1.10× |" in text
    assert "- median full ÷ bare: 1.40× (target ≤ 1.5, met)" in text
    assert "- median measure_flops ÷ bare: 1.10× (target ≤ 1.25, met)" in text
    assert "- median floor ÷ bare (an empty dispatch mode, no target): 1.10×" in text
    assert "- models timed: 3; failed: d" in text


def test_summary_of_nothing() -> None:
    facts = zoo_overhead.summary([{"name": "x", "error": "E: e"}])
    assert facts["full_over_bare"] is None
    assert facts["floor_over_bare"] is None
    text = zoo_overhead.markdown([], facts)
    assert "median measure_flops ÷ bare: –" in text
    assert "median floor ÷ bare (an empty dispatch mode, no target): –" in text
