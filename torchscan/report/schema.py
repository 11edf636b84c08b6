"""Every wire type of TorchScan, declared once.

Reports are plain JSON trees (``json.dumps`` works on them directly). This module declares their
shapes as ``TypedDict``s, the schema version and the labels shared by several producers. The
:class:`MetricResult` type and :func:`metric_result`, the single constructor of every
MetricResult, live in :mod:`torchscan.report.metric`, and the value metadata (what a call's inputs
and outputs were) in :mod:`torchscan.report.values_schema`; both are re-exported here, the import
path every caller uses. The workload reports (benchmark, profile, their comparison) are declared in
:mod:`torchscan.report.workload_schema`, memory, generation and scaling reports in their own
modules. It must never import torch: views and validators depend on it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired, TypedDict

from torchscan.report.metric import MAX_NUMBER as MAX_NUMBER
from torchscan.report.metric import METRIC_RESULT_KEYS as METRIC_RESULT_KEYS
from torchscan.report.metric import STATUSES as STATUSES
from torchscan.report.metric import MetricResult as MetricResult
from torchscan.report.metric import Number as Number
from torchscan.report.metric import Status as Status
from torchscan.report.metric import in_float_range as in_float_range
from torchscan.report.metric import metric_result as metric_result
from torchscan.report.values_schema import ValueMeta as ValueMeta
from torchscan.report.values_schema import WireShape as WireShape

SCHEMA_VERSION = 1


Severity = Literal["info", "warning", "error"]

# Labels shared by several producers; spelled once so they cannot drift apart.
MODULE_FORMULA_METHOD = "torchscan_module_formula"
# Operator FLOPs name the convention applied (truth.md 4), not the dispatch mechanism they run on;
# reports made before that change carry LEGACY_OPERATOR_METHOD and are still read.
OPERATOR_METHOD = "torchscan_flops_v1"
LEGACY_OPERATOR_METHOD = "torch.utils.flop_counter.FlopCounterMode"
COUNTING_CONVENTION = "torchscan_flops_v1"
# Fused attention kernels count the (query, key) pairs their mask keeps (attention-and-scaling.md 1).
ATTENTION_COUNTING = "mask-aware"
NOT_REQUESTED = "not_requested"
NOT_APPLICABLE = "not_applicable"
# views-3.md 1: the output metadata of a row whose module never ran as a module call.
NOT_CALLED_KIND = "not_called"
COMMUNICATION_METHOD = "torchscan_collective_bytes"
# Operator bytes and attention KV bytes (generation.md 1): operand traffic at the operator boundary.
OPERATOR_BYTES_METHOD = "torchscan_operator_bytes"
ATTENTION_KV_METHOD = "torchscan_attention_kv_bytes"
# Module-local token dependencies (extensions-and-transformers.md 16.1): the method label and the
# three literal assumptions every complete object carries, in order. Declared here, beside the other
# wire constants, so that the torch-free validators and the formulas share one definition.
TOKEN_METHOD = "torchscan_token_dependency_v1"
ASSUMPTIONS_V1 = (
    "Module-local potential dependencies at generic finite parameters; not graph-wide effective "
    "receptive fields.",
    "Normalization acts on the feature dimension; feed-forward activation and projections are token-local.",
    "Only the main activation output is described; returned attention weights are excluded.",
)
MERGED_REPORT = "merged"
COMPUTE_FIELDS = ("module_flops", "macs", "dmas")
SPATIAL_FIELDS = ("receptive_field", "effective_stride", "effective_padding")
ESTIMATE_FIELDS = COMPUTE_FIELDS + SPATIAL_FIELDS
FIELD_UNITS = {
    "module_flops": "FLOPs",
    "macs": "MACs",
    "dmas": "DMAs",
    "receptive_field": "elements",
    "effective_stride": "elements",
    "effective_padding": "elements",
}


class Diagnostic(TypedDict):
    """Why a result is incomplete: a stable ``code`` for programs, a ``message`` for people."""

    code: str
    severity: Severity
    metric: str
    message: str
    path: NotRequired[str]
    operator: NotRequired[str]
    # Full dotted class path of the module concerned (``transformers.pytorch_utils.Conv1D``), so a
    # person can write the ``custom_modules=`` key that resolves it; sanitized like caller text.
    class_path: NotRequired[str]
    # Only in a merged report (distributed.md 4): the rank whose own report carried this diagnostic.
    rank: NotRequired[int]


class CallIO(TypedDict):
    """Metadata of one call's arguments."""

    args: list[ValueMeta]
    kwargs: dict[str, ValueMeta]


class InputsMeta(TypedDict):
    """How the analysed forward call got its inputs, and their metadata."""

    source: Literal["generated", "provided"]
    args: list[ValueMeta]
    kwargs: dict[str, ValueMeta]


# --- operator FLOPs (formulas.md B.3) -------------------------------------------------------


class MeshDimension(TypedDict):
    """One named dimension of the device mesh and its size (distributed.md 2)."""

    name: str
    size: int


class DistributedContext(TypedDict):
    """``context.distributed`` (distributed.md 2): present only when a process group is initialized."""

    backend: str
    world_size: int
    rank: int
    mesh: list[MeshDimension] | None


class FlopContext(TypedDict):
    """How a FlopReport was counted: torch version, method and counting convention (formulas.md B.3).

    ``attention`` says how fused attention kernels were counted (``"mask-aware"``: the pairs their mask
    keeps). ``flop_counter_operators`` lists the operators of ``by_operator`` that the installed
    torch's ``FlopCounterMode`` also has a formula for, read from its registry when the report was
    made (views compare against it; its formula may count them differently). Both are absent from
    reports made before they existed.
    """

    torch_version: str
    method: str
    counting_convention: str
    attention: NotRequired[str]
    flop_counter_operators: NotRequired[list[str]]
    distributed: NotRequired[DistributedContext]


class CollectiveCalls(TypedDict):
    """One collective operator: how often it ran and the bytes handed to it."""

    calls: int
    bytes: int


class Communication(TypedDict):
    """Bytes each rank handed to collectives (distributed.md 3): not wire traffic."""

    total_bytes: MetricResult
    by_operator: dict[str, CollectiveCalls]


class IgnoredOperator(TypedDict):
    """An ignored operator: its call count and the stated reason it adds no FLOPs (formulas.md B.6)."""

    calls: int
    reason: str


class FlopPhases(TypedDict):
    """``by_phase`` (training-and-hardware.md 1): unit FLOPs, scope ``workload_phase``, the total's
    method; the four known values sum exactly to the total's."""

    forward: MetricResult
    backward: MetricResult
    optimizer: MetricResult
    recompute: MetricResult


class FlopStep(TypedDict):
    """One top-level call of the step root (generation.md 1): FLOPs (scope ``step``, the operator
    method), operator bytes and attention KV bytes (unit ``bytes``), and the call's token count."""

    index: int
    flops: MetricResult
    operator_bytes: MetricResult
    attention_kv_bytes: MetricResult
    input_tokens: int | None


class OutsideSteps(TypedDict):
    """Work observed while no step ran (sampling, stopping criteria), scope ``outside_steps``."""

    flops: MetricResult
    operator_bytes: MetricResult
    attention_kv_bytes: MetricResult


class FlopReport(TypedDict):
    """Operator FLOPs of one workload call (``measure_flops`` or the same forward of an analysis)."""

    schema_version: int
    context: FlopContext
    total: MetricResult
    by_phase: FlopPhases
    by_module: dict[str, int]
    by_operator: dict[str, int]
    ignored_operators: dict[str, IgnoredOperator]
    diagnostics: list[Diagnostic]
    # distributed.md 2-3: logical_total only when a DTensor operator was seen; communication when a
    # collective ran or a process group is initialized
    logical_total: NotRequired[MetricResult]
    communication: NotRequired[Communication]
    # generation.md 1: operator_bytes with bytes=True or by_step=True, by_operator_bytes with
    # bytes=True, by_step and outside_steps with by_step=True (steps + outside sum to the totals)
    operator_bytes: NotRequired[MetricResult]
    by_operator_bytes: NotRequired[dict[str, int]]
    by_step: NotRequired[list[FlopStep]]
    outside_steps: NotRequired[OutsideSteps]


# --- hardware facts the caller states (training-and-hardware.md 3) ---------------------------


class HardwareFacts(TypedDict):
    """``context.hardware``: a copy of the caller's stated facts; TorchScan has no device table."""

    name: str
    peak_flops_per_second: Number
    memory_bandwidth_bytes_per_second: NotRequired[Number]


# --- analysis report (analysis.md 5) --------------------------------------------------------


class AnalysisContext(TypedDict):
    """What produced an analysis report: versions, model type, execution mode, devices, dtypes."""

    torchscan_version: str
    torch_version: str
    python_version: str
    model_type: str
    execution_mode: str
    training_before: bool
    devices: list[str]
    dtypes: list[str]
    analysis_mode: NotRequired[Literal["full", "structure"]]
    hardware: NotRequired[HardwareFacts]
    distributed: NotRequired[DistributedContext]


class ParameterStats(TypedDict):
    """The module's own parameters, first-attributed: trainable and frozen elements, bytes, sharing."""

    trainable: int
    frozen: int
    bytes: int
    shared: bool


class BufferStats(TypedDict):
    """Buffers of one module call: elements, bytes, whether any is shared."""

    elements: int
    bytes: int
    shared: bool


class CallRef(TypedDict):
    """Names one module call by ``(path, call_index)``."""

    path: str
    call_index: int


class TokenAxis(TypedDict):
    """The sequence axis (1: batch first, or 0) and the token count of the module's output."""

    sequence_axis: Literal[0, 1]
    length: int


class TokenRelation(TypedDict):
    """Which source positions an output position may depend on (extensions-and-transformers.md 16.3).

    ``limit`` only below the source length; ``first_position`` only when it is above 0.
    """

    kind: Literal["all", "same_position", "prefix", "none"]
    limit: NotRequired[int]
    first_position: NotRequired[int]


class TokenSource(TypedDict):
    """One source of token dependencies: the call's argument names, their axis, length and relation."""

    arguments: list[str]
    sequence_axis: Literal[0, 1]
    length: int
    relation: TokenRelation


class TokenDependencies(TypedDict):
    """A layer call's module-local token dependencies (extensions-and-transformers.md 16.1)."""

    status: Literal["complete"]
    scope: Literal["module_call"]
    method: str  # TOKEN_METHOD
    output: TokenAxis
    sources: list[TokenSource]
    assumptions: list[str]  # ASSUMPTIONS_V1, in order


class TokenDependenciesUnavailable(TypedDict):
    """Token dependencies that could not be described (empty ``assumptions``)."""

    status: Literal["unavailable"]
    scope: Literal["module_call"]
    method: str  # TOKEN_METHOD
    assumptions: list[str]


TokenDependencyObject = Annotated[
    dict[str, Any], WireShape("TokenDependencyObject", TokenDependencies, TokenDependenciesUnavailable)
]


class LayerReport(TypedDict):
    """One module call, identified by ``(path, call_index)``."""

    path: str
    call_index: int
    name: str
    depth: int
    type: str
    input: CallIO
    output: ValueMeta
    parameters: ParameterStats
    buffers: BufferStats
    metrics: dict[str, MetricResult]
    metric_ownership: NotRequired[dict[str, Literal["module_call", "subtree"]]]
    metric_owners: NotRequired[dict[str, CallRef]]
    token_dependencies: NotRequired[TokenDependencyObject]
    # views-3.md 1: present (always ``False``) only on the row of a module that never ran as a module
    # call; such a row holds the module's own parameters and buffers, its ``calls`` is a complete 0,
    # ``input`` is empty, ``output`` is ``{"kind": "not_called"}`` and it has no operator FLOPs.
    called: NotRequired[Literal[False]]
    # views-3.md 1: the share of an ancestor's complete inclusive (``subtree``) estimate that the
    # module formulas attribute to this row alone (on the owner's row: what is left for its own
    # frame). Keys are compute fields; results are complete, scope ``module_call``, the owner's
    # method. Already inside the owner's value: never added to ``metrics`` or to totals.
    attribution: NotRequired[dict[str, MetricResult]]


class AnalysisReport(TypedDict):
    """Result of ``crawl_module``/``summary``: one observed forward call."""

    schema_version: int
    context: AnalysisContext
    inputs: InputsMeta
    layers: list[LayerReport]
    totals: dict[str, MetricResult]
    operator_flops: FlopReport
    diagnostics: list[Diagnostic]


class MetricDiff(TypedDict):
    """Difference of one metric; ``delta`` only for complete, same-label sides."""

    status: Status
    delta: Number | None
    before: MetricResult | None
    after: MetricResult | None
    diagnostics: NotRequired[list[Diagnostic]]  # only ``delta_out_of_range`` (report/diff.py)


class LayerEntry(TypedDict):
    """A layer call that only one side of a ReportDiff has, with its metrics."""

    path: str
    call_index: int
    metrics: dict[str, MetricResult]
    token_dependencies: NotRequired[TokenDependencyObject]


class TokenDependencyChange(TypedDict):
    """Token dependencies that differ between the two sides (``None``: absent on that side)."""

    before: TokenDependencyObject | None
    after: TokenDependencyObject | None


class LayerChange(TypedDict):
    """A layer call both sides of a ReportDiff have, with one MetricDiff per metric."""

    path: str
    call_index: int
    metrics: dict[str, MetricDiff]
    token_dependencies: NotRequired[TokenDependencyChange]


class LayerDiffs(TypedDict):
    """The layer calls of a ReportDiff: added, removed and changed."""

    added: list[LayerEntry]
    removed: list[LayerEntry]
    changed: list[LayerChange]


class ReportDiff(TypedDict):
    """Result of ``compare_reports``."""

    schema_version: int
    totals: dict[str, MetricDiff]
    layers: LayerDiffs


# --- merged per-rank reports (distributed.md 4) -----------------------------------------------


class RankTotals(TypedDict):
    """One rank's totals, unchanged from its report."""

    rank: int
    totals: dict[str, MetricResult]


class MergedReport(TypedDict):
    """Result of ``merge_reports``: the ranks of one job, merged by the rules of distributed.md 4."""

    schema_version: int
    report_type: Literal["merged"]
    merged_type: Literal["flop", "analysis", "benchmark"]
    ranks: list[int]
    world_size: int
    totals: dict[str, MetricResult]
    imbalance: dict[str, MetricResult]
    per_rank: list[RankTotals]
    diagnostics: list[Diagnostic]
