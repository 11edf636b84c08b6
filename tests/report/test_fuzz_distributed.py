"""Property tests of the distributed surfaces (issue #20): BenchmarkReports, FlopReports and
AnalysisReports with distributed parts (``context.distributed``, ``logical_total``,
``communication``), and merged reports.

Mutated reports (the mutations of ``test_fuzz.py``, plus world sizes and ranks up to 10**400) go
through every public entry: ``merge_reports``, ``render_report`` (HTML, SVG, ``before=``),
``compare_reports`` and ``compare_benchmarks`` both ways. Only ``ValueError``/``TypeError`` may
escape, every result is strict JSON or text, and no call takes more than 5 s (a merge of a stated
world size of 10**12 once allocated until MemoryError).

The example count is CI-sized; ``TORCHSCAN_FUZZ_EXAMPLES=10000`` runs the issue's full target.
"""

from __future__ import annotations

import copy
import json
import os
import time
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fuzz import ALLOWED, mutated
from test_merge_reports import flop_report
from torch import nn

from torchscan import compare_benchmarks, compare_reports, crawl_module, merge_reports, render_report
from torchscan.measure.latency import measure_latency
from torchscan.report.diagnostics import diagnostic

EXAMPLES = int(os.environ.get("TORCHSCAN_FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,  # the 5 s bound below is per call, measured, not hypothesis's per-example deadline
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
MAX_SECONDS = 5.0
SLOWEST: dict[str, float] = {}
OUTCOMES: dict[str, int] = {}


@pytest.fixture(scope="module", autouse=True)
def _tally():
    """Print the slowest call and the outcomes per entry (shown with ``-s``): the run's evidence."""
    yield
    print(f"\nfuzz examples per test: {EXAMPLES}")
    for name in sorted(SLOWEST):
        print(f"  {name}: slowest {SLOWEST[name]:.3f} s")
    print(f"  outcomes: {dict(sorted(OUTCOMES.items()))}")


def _timed(call, *args: Any, **kwargs: Any) -> Any:
    """``call(...)``: only ALLOWED errors, a strict-JSON or text result, at most MAX_SECONDS."""
    name = getattr(call, "__name__", "call")
    started = time.perf_counter()
    try:
        result = call(*args, **kwargs)
        outcome = "ok"
    except ALLOWED:
        result, outcome = None, "rejected"
    elapsed = time.perf_counter() - started
    OUTCOMES[f"{name}:{outcome}"] = OUTCOMES.get(f"{name}:{outcome}", 0) + 1
    SLOWEST[name] = max(SLOWEST.get(name, 0.0), elapsed)
    assert elapsed < MAX_SECONDS, f"{name} took {elapsed:.2f} s"
    if result is not None and not isinstance(result, str):
        json.dumps(result, allow_nan=False)
    return result


def _distributed(rank: int, world_size: int) -> dict[str, Any]:
    return {
        "backend": "gloo",
        "world_size": world_size,
        "rank": rank,
        "mesh": [{"name": "dp", "size": world_size}],
    }


def _benchmark(base: dict[str, Any], rank: int, world_size: int) -> dict[str, Any]:
    """A measured BenchmarkReport as one rank of a job would carry it, distributed FLOPs included."""
    report = copy.deepcopy(base)
    report["context"]["distributed"] = _distributed(rank, world_size)
    flops = flop_report(rank, world_size=world_size, status="partial" if rank else "complete")
    report["operator_flops"] = flops
    report["totals"]["operator_flops"] = copy.deepcopy(flops["total"])
    report["diagnostics"] = [
        diagnostic("uncounted_operator", "aten.special_op: 1 call uncounted", metric="operator_flops")
    ] * bool(rank)
    return report


def _analysis(base: dict[str, Any], rank: int, world_size: int) -> dict[str, Any]:
    report = copy.deepcopy(base)
    report["context"]["distributed"] = _distributed(rank, world_size)
    extra = flop_report(rank, world_size=world_size)
    report["operator_flops"]["logical_total"] = extra["logical_total"]
    report["operator_flops"]["communication"] = extra["communication"]
    report["operator_flops"]["context"]["distributed"] = _distributed(rank, world_size)
    return report


@pytest.fixture(scope="module")
def reports() -> dict[str, Any]:
    x = torch.ones(4)
    bench = measure_latency(lambda: x + 1, device="cpu", inputs=x, min_run_time=0.001, min_repeats=2)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 5))
    analysis = crawl_module(model, (3, 8, 8))
    ranks: dict[str, list[dict[str, Any]]] = {
        "benchmark": [_benchmark(bench, r, 2) for r in (0, 1)],
        "analysis": [_analysis(analysis, r, 2) for r in (0, 1)],
        "flop": [flop_report(0), flop_report(1, status="partial")],
    }
    merged = {
        "merged_benchmark": merge_reports(ranks["benchmark"]),
        "merged_analysis": merge_reports(ranks["analysis"]),
        "merged_flop": merge_reports(ranks["flop"]),
        "merged_missing": merge_reports([_benchmark(bench, r, 5) for r in (0, 3)]),
    }
    return {"ranks": ranks, **merged}


HUGE_COUNTS = st.sampled_from([0, 1, 2, 3, 10**6, 10**12, 2**63, 10**400, -1, True, 2.0])


def _contexts(report: Any) -> list[dict[str, Any]]:
    """The ``distributed`` objects of a (possibly mutated) report: its own and its FlopReport's."""
    if not isinstance(report, dict):
        return []
    contexts = [report.get("context")]
    if isinstance(report.get("operator_flops"), dict):
        contexts.append(report["operator_flops"].get("context"))
    return [
        c["distributed"] for c in contexts if isinstance(c, dict) and isinstance(c.get("distributed"), dict)
    ]


@st.composite
def rank_report(draw: st.DrawFn, base: dict[str, Any]) -> Any:
    """A mutated rank report; sometimes its world size or rank is replaced by an extreme count."""
    report = draw(mutated(base))
    if draw(st.integers(0, 3)) == 0:
        for distributed in _contexts(report):
            distributed[draw(st.sampled_from(["world_size", "rank"]))] = draw(HUGE_COUNTS)
    return report


KINDS = ["benchmark", "analysis", "flop"]
MERGED = ["merged_benchmark", "merged_analysis", "merged_flop", "merged_missing"]


@FUZZ
@given(data=st.data())
def test_fuzz_merge_reports(reports, data) -> None:
    kind = data.draw(st.sampled_from(KINDS))
    first, second = reports["ranks"][kind]
    changed = data.draw(rank_report(first))
    other = second if data.draw(st.booleans()) else data.draw(rank_report(second))
    pair = [changed, other] if data.draw(st.booleans()) else [other, changed]
    if data.draw(st.integers(0, 3)) == 0:  # one job of a huge stated world size: both ranks agree on it
        if data.draw(st.booleans()):
            pair = [first, second]  # valid otherwise, so the merge itself meets the world size
        pair, world_size = copy.deepcopy(pair), data.draw(HUGE_COUNTS)
        for distributed in _contexts(pair[0]) + _contexts(pair[1]):
            distributed["world_size"] = world_size
    merged = _timed(merge_reports, pair)
    if merged is not None:
        _timed(render_report, merged)


@FUZZ
@given(data=st.data())
def test_fuzz_render_merged_and_distributed(reports, data) -> None:
    name = data.draw(st.sampled_from([*MERGED, "benchmark", "analysis", "flop"]))
    if name in MERGED:
        _timed(render_report, data.draw(mutated(reports[name])))
        return
    base = reports["ranks"][name][data.draw(st.integers(0, 1))]
    changed = data.draw(rank_report(base))
    if name == "analysis":
        fmt = data.draw(st.sampled_from(["html", "svg"]))
        before = data.draw(st.sampled_from([None, base]))
        _timed(render_report, changed, format=fmt, before=before)
        if data.draw(st.booleans()):
            _timed(render_report, base, format=fmt, before=changed)
    else:
        _timed(render_report, changed)


@FUZZ
@given(data=st.data())
def test_fuzz_compare_distributed(reports, data) -> None:
    kind = data.draw(st.sampled_from(["benchmark", "analysis"]))
    base = reports["ranks"][kind][0]
    changed = data.draw(rank_report(base))
    before, after = (changed, base) if data.draw(st.booleans()) else (base, changed)
    if kind == "analysis":
        _timed(compare_reports, before, after)
    else:
        comparison = _timed(compare_benchmarks, before, after, check=lambda: None)
        if comparison is not None:
            _timed(render_report, comparison)


def test_the_bases_are_accepted(reports) -> None:
    # The fuzzing starts from reports every entry accepts: a rejection above is the mutation's doing.
    for kind in KINDS:
        merged = merge_reports(reports["ranks"][kind])
        assert render_report(merged).startswith("<!doctype html>")
    assert any(d.get("rank") == 1 for d in reports["merged_benchmark"]["diagnostics"])
    assert reports["merged_missing"]["diagnostics"][0]["code"] == "missing_ranks"
    compare_benchmarks(*reports["ranks"]["benchmark"][:1] * 2, check=lambda: None)
    compare_reports(*reports["ranks"]["analysis"])
    render_report(reports["ranks"]["analysis"][0], format="svg", before=reports["ranks"]["analysis"][1])
