"""The public import paths of the spec README, and a cheap ``import torchscan``."""

from __future__ import annotations

import subprocess
import sys

import torchscan
import torchscan.modules
import torchscan.process

FUNCTIONS = [
    "crawl_module",
    "summary",
    "measure_flops",
    "measure_generation",
    "measure_peak_memory",
    "measure_peak_rss",
    "profile_workload",
    "measure_latency",
    "measure_workload",
    "measure_memory",
    "measure_scaling",
    "compare_reports",
    "merge_reports",
    "compare_benchmarks",
    "render_report",
    "metric_result",
]
TYPES = [
    "AnalysisReport",
    "LayerReport",
    "MetricResult",
    "Diagnostic",
    "FlopReport",
    "ReportDiff",
    "BenchmarkReport",
    "ProfileReport",
    "BenchmarkComparison",
    "GenerationReport",
    "MemoryReport",
    "MemoryDiff",
    "ScalingReport",
    "ModuleCall",
    "ModuleHandler",
    "ModuleEstimates",
]


def test_top_level_names():
    for name in FUNCTIONS:
        assert callable(getattr(torchscan, name)), name
    for name in TYPES:
        assert isinstance(getattr(torchscan, name), type), name
    assert issubclass(torchscan.IncompleteAnalysisError, RuntimeError)
    assert isinstance(torchscan.__version__, str)
    assert set(FUNCTIONS + TYPES) <= set(dir(torchscan))


def test_process_names_are_the_same_objects():
    assert torchscan.process.measure_peak_memory is torchscan.measure_peak_memory
    assert torchscan.process.measure_peak_rss is torchscan.measure_peak_rss


def test_module_formula_functions():
    for name in ("module_flops", "module_macs", "module_dmas", "module_rf"):
        assert callable(getattr(torchscan.modules, name))


def test_import_is_cheap():
    code = "import sys, torchscan; print('torch' in sys.modules, 'torch.utils.flop_counter' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False", "False"]
