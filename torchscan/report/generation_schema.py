"""Wire types of the GenerationReport (generation.md 2), declared once; never imports torch.

A GenerationReport is what ``measure_generation`` returns: the steps of one ``generate()`` call
(one step per top-level call of the model), their totals by phase, a linear fit of decode costs
against context length, optional rooflines under the caller's stated hardware facts and optional
timings of a second, separate pass. Views and the validator read it without torch.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from torchscan.report.schema import Diagnostic, FlopReport, HardwareFacts, MetricResult, OutsideSteps

GENERATION_REPORT = "generation"
PHASES = ("prefill", "decode")
STEP_METRICS = ("flops", "operator_bytes", "attention_kv_bytes")
STEP_UNITS = {"flops": "FLOPs", "operator_bytes": "bytes", "attention_kv_bytes": "bytes"}
FIT_METRICS = ("flops", "attention_kv_bytes")
FIT_KEYS = ("intercept", "slope", "max_residual")
# Arithmetic intensity of a step: operator FLOPs over operator bytes (not the module-formula
# DMA convention of crawl_module, whose method is "module_flops_over_dma_bytes").
STEP_INTENSITY_METHOD = "operator_flops_over_operator_bytes"
TIMING_METHOD = "synchronized_perf_counter"
TIMING_NAMES = ("time_to_first_token", "decode_step_mean", "decode_step_iqr")
CONTEXT_KEYS = (
    "torchscan_version",
    "torch_version",
    "model_type",
    "dtypes",
    "device",
    "batch_size",
    "prompt_tokens",
    "max_new_tokens",
    "use_cache",
    "do_sample",
    "cache_class",
    "attention_implementation",
)

Phase = Literal["prefill", "decode"]
Bound = Literal["compute", "memory"]


class GenerationContext(TypedDict):
    """Value-free description of the model and the generation settings (no tensor values, no paths).

    ``use_cache`` is the effective setting that decides ``context_tokens`` (generate_kwargs, then
    kwargs, then the caller's ``generation_config``, then the model's); ``None`` entries are facts
    the model did not expose (a model without ``config`` has no attention implementation name).
    """

    torchscan_version: str
    torch_version: str
    model_type: str
    dtypes: list[str]
    device: str | None
    batch_size: int | None
    prompt_tokens: int | None
    max_new_tokens: int | None
    use_cache: bool
    do_sample: bool | None
    cache_class: str | None
    attention_implementation: str | None
    hardware: NotRequired[HardwareFacts]


class StepCosts(TypedDict):
    """Mean FLOPs, operator bytes and attention K/V bytes of one decode step (``decode_per_token``)."""

    flops: MetricResult
    operator_bytes: MetricResult
    attention_kv_bytes: MetricResult


class GenerationStep(TypedDict):
    """One top-level call of the model (generation.md 1) with its phase and context length.

    The three hardware figures exist only when the caller stated ``hardware``; ``bound`` is
    ``None`` when the inputs cannot decide it (a partial or unavailable figure, no bandwidth).
    """

    index: int
    phase: Phase
    input_tokens: int | None
    context_tokens: int | None
    flops: MetricResult
    operator_bytes: MetricResult
    attention_kv_bytes: MetricResult
    arithmetic_intensity: NotRequired[MetricResult]
    roofline_seconds: NotRequired[MetricResult]
    bound: NotRequired[Bound | None]


class PhaseTotals(TypedDict):
    """Sums over the steps of one phase; ``steps`` is how many steps the phase has."""

    steps: int
    flops: MetricResult
    operator_bytes: MetricResult
    attention_kv_bytes: MetricResult


class LinearFit(TypedDict):
    """Least squares ``y = intercept + slope × context_tokens`` over the decode steps.

    ``max_residual`` is the largest ``|y - fit|`` over those steps, in the metric's unit.
    """

    intercept: float
    slope: float
    max_residual: float


class DecodeFit(TypedDict):
    """A fit per metric, or ``None`` (with a ``decode_fit_unavailable`` diagnostic)."""

    flops: LinearFit | None
    attention_kv_bytes: LinearFit | None


class GenerationTiming(TypedDict):
    """Wall-clock times of a second, separate ``generate()`` pass (never the counting pass).

    ``decode_step_seconds`` are the raw durations of each decode step's model call; the views
    label them ``noisy`` by the latency chapter's rule (IQR ÷ median above 10 %).
    """

    time_to_first_token: MetricResult
    decode_step_mean: MetricResult
    decode_step_iqr: MetricResult
    decode_step_seconds: list[float]


class GenerationReport(TypedDict):
    """Result of ``measure_generation`` (generation.md 2).

    ``operator_flops`` is the counting pass's FlopReport without ``by_step``/``outside_steps``
    (they are ``steps`` and ``outside_steps`` here); its diagnostics explain partial FLOPs.
    """

    schema_version: int
    report_type: Literal["generation"]
    context: GenerationContext
    steps: list[GenerationStep]
    outside_steps: OutsideSteps
    prefill: PhaseTotals
    decode: PhaseTotals
    decode_per_token: StepCosts
    decode_fit: DecodeFit
    operator_flops: FlopReport
    diagnostics: list[Diagnostic]
    timing: NotRequired[GenerationTiming]
