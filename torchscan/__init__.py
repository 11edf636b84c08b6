"""TorchScan: what a PyTorch model costs, truthfully.

Public names are loaded lazily so ``import torchscan`` stays cheap: torch and its FLOP counter are
imported only when an API that needs them is first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from torchscan._version import __version__

_EXPORTS = {
    "crawl_module": "torchscan.analysis.crawl.api",
    "summary": "torchscan.measure.summary_table",
    "IncompleteAnalysisError": "torchscan.analysis.crawl.build",
    "measure_flops": "torchscan.measure.flops",
    "measure_generation": "torchscan.measure.generation",
    "measure_peak_memory": "torchscan.process.memory",
    "measure_peak_rss": "torchscan.process.rss",
    "profile_workload": "torchscan.measure.profile",
    "measure_latency": "torchscan.measure.latency",
    "measure_workload": "torchscan.measure.workload",
    "measure_memory": "torchscan.measure.memory",
    "measure_scaling": "torchscan.measure.scaling",
    "compare_reports": "torchscan.report.compare",
    "merge_reports": "torchscan.report.merge",
    "compare_benchmarks": "torchscan.measure.compare",
    "render_report": "torchscan.views.render",
    "ModuleCall": "torchscan.extensions",
    "ModuleHandler": "torchscan.extensions",
    "ModuleEstimates": "torchscan.extensions",
    "metric_result": "torchscan.report.schema",
    "AnalysisReport": "torchscan.report.schema",
    "LayerReport": "torchscan.report.schema",
    "MetricResult": "torchscan.report.schema",
    "Diagnostic": "torchscan.report.schema",
    "FlopReport": "torchscan.report.schema",
    "ReportDiff": "torchscan.report.schema",
    "BenchmarkReport": "torchscan.report.workload_schema",
    "ProfileReport": "torchscan.report.workload_schema",
    "BenchmarkComparison": "torchscan.report.workload_schema",
    "GenerationReport": "torchscan.report.generation_schema",
    "MemoryReport": "torchscan.report.memory_schema",
    "MemoryDiff": "torchscan.report.memory_diff",
    "ScalingReport": "torchscan.report.scaling_schema",
}

__all__ = ["__version__", *sorted(_EXPORTS)]

if TYPE_CHECKING:
    from torchscan.analysis.crawl.api import crawl_module
    from torchscan.analysis.crawl.build import IncompleteAnalysisError
    from torchscan.extensions import ModuleCall, ModuleEstimates, ModuleHandler
    from torchscan.measure.compare import compare_benchmarks
    from torchscan.measure.flops import measure_flops
    from torchscan.measure.generation import measure_generation
    from torchscan.measure.latency import measure_latency
    from torchscan.measure.memory import measure_memory
    from torchscan.measure.profile import profile_workload
    from torchscan.measure.scaling import measure_scaling
    from torchscan.measure.summary_table import summary
    from torchscan.measure.workload import measure_workload
    from torchscan.process.memory import measure_peak_memory
    from torchscan.process.rss import measure_peak_rss
    from torchscan.report.compare import compare_reports
    from torchscan.report.generation_schema import GenerationReport
    from torchscan.report.memory_diff import MemoryDiff
    from torchscan.report.memory_schema import MemoryReport
    from torchscan.report.merge import merge_reports
    from torchscan.report.scaling_schema import ScalingReport
    from torchscan.report.schema import (
        AnalysisReport,
        Diagnostic,
        FlopReport,
        LayerReport,
        MetricResult,
        ReportDiff,
        metric_result,
    )
    from torchscan.report.workload_schema import BenchmarkComparison, BenchmarkReport, ProfileReport
    from torchscan.views.render import render_report


def __getattr__(name: str) -> Any:
    """Import a public name's home module on first access (PEP 562)."""
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'torchscan' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
