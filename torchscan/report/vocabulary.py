"""The labels a MetricResult carries — methods, units, scopes — each with what it means.

A MetricResult's ``unit``, ``scope`` and ``method`` are strings in the wire schema (a caller's
custom handler brings its own method label, a throughput's unit is the caller's work unit per
second), so the JSON Schema cannot close them. This table is the list of the labels TorchScan
itself writes; docs/report-schema.md prints it, and a test checks that every label the library's
reports carry is here. Labels that have a constant elsewhere are spelled through it. Never imports
torch.
"""

from __future__ import annotations

from torchscan.report.generation_schema import STEP_INTENSITY_METHOD, TIMING_METHOD
from torchscan.report.hardware import ROOFLINE_METHOD
from torchscan.report.memory_schema import CUDA_ALLOCATED_METHOD, CUDA_RESERVED_METHOD
from torchscan.report.memory_schema import METHOD as LEDGER_METHOD
from torchscan.report.scaling_schema import EXACT_METHOD, LEAST_SQUARES_METHOD
from torchscan.report.schema import (
    ATTENTION_KV_METHOD,
    COMMUNICATION_METHOD,
    LEGACY_OPERATOR_METHOD,
    MODULE_FORMULA_METHOD,
    NOT_APPLICABLE,
    NOT_REQUESTED,
    OPERATOR_BYTES_METHOD,
    OPERATOR_METHOD,
    TOKEN_METHOD,
)

# Method labels with a part the caller chooses: ``prefix`` + the rest.
METHOD_FAMILIES: dict[str, str] = {
    "custom_module_handler:": "A caller's custom_modules handler (its qualified name, then the method label "
    "of a MetricResult it returned, if any): the caller's convention, not TorchScan's.",
    "sum_module_estimates[": "A model total that adds module estimates of several methods (the sorted, "
    "comma-separated list in brackets).",
}

METHODS: dict[str, str] = {
    MODULE_FORMULA_METHOD: "TorchScan's module formulas (formulas.md): one estimate per module call.",
    OPERATOR_METHOD: "Operator FLOPs counted at dispatch under the torchscan_flops_v1 convention "
    "(measure_flops, operator_flops): a separate method from module formulas; never add or average the two.",
    LEGACY_OPERATOR_METHOD: "Operator FLOPs in reports made before 0.3 (the same dispatch, labelled by its "
    "mechanism); counts changed since (grouped convolution gradients, causal attention), so deltas "
    "against torchscan_flops_v1 are not computed.",
    EXACT_METHOD: "A scaling fit: the lowest-degree polynomial through every point, in exact rationals.",
    LEAST_SQUARES_METHOD: "A scaling fit of noisy values (latency) by least squares: never exact.",
    OPERATOR_BYTES_METHOD: "Bytes of the operands each operator reads and writes, at the operator boundary.",
    ATTENTION_KV_METHOD: "Bytes of the key and value operands of fused attention kernels.",
    COMMUNICATION_METHOD: "Bytes each rank handed to collectives: not wire traffic.",
    TOKEN_METHOD: "Module-local token dependencies (extensions-and-transformers.md 16).",
    "pytorch": "Counted from the module's registered tensors (parameters, buffers).",
    "pytorch_hook": "Counted by module hooks (calls).",
    "forward_failed": "The call's forward raised: nothing was estimated.",
    NOT_REQUESTED: "The caller did not ask for this metric: unavailable by choice, never a failure.",
    NOT_APPLICABLE: "The metric has no meaning here: nothing was owed.",
    "unavailable": "measure_workload was asked for the metric and could not measure it (diagnostic "
    "measurement_unavailable).",
    LEDGER_METHOD: "measure_memory's storage ledger: live bytes of storages, by category.",
    CUDA_ALLOCATED_METHOD: "The CUDA caching allocator's peak of allocated bytes.",
    CUDA_RESERVED_METHOD: "The CUDA caching allocator's peak of reserved bytes.",
    "torch.accelerator.memory.max_memory_reserved": "The MPS allocator's peak of reserved bytes.",
    "torch.profiler.memory_timeline": "PyTorch's CPU memory timeline (tensor bytes): not process RSS.",
    "os.wait4.ru_maxrss": "The child process's peak resident set size, from the operating system.",
    "torch.utils.benchmark.Timer": "Warmed block-average latency: not a request percentile.",
    TIMING_METHOD: "Wall-clock time around synchronized calls (first call, generation steps).",
    "torch.profiler.profile": "PyTorch's profiler (hot operators): diagnostic evidence, not timing.",
    ROOFLINE_METHOD: "Roofline time under the caller's stated peak and bandwidth: a model, not a "
    "measurement.",
    "module_flops_over_dma_bytes": "Arithmetic intensity from module FLOPs and DMA bytes.",
    STEP_INTENSITY_METHOD: "Arithmetic intensity of a step: operator FLOPs over operator bytes.",
    "operator_flops_over_block_average_latency": "Achieved FLOP/s: operator FLOPs over the block-average "
    "latency.",
    "achieved_flops_over_stated_peak": "Utilization: achieved FLOP/s over the caller's stated peak.",
    "max_over_mean": "Imbalance of a merged total: the largest rank's value over the ranks' mean.",
}

UNITS: dict[str, str] = {
    "FLOPs": "Floating-point operations (a multiply-add is 2).",
    "MACs": "Multiply-accumulate operations.",
    "DMAs": "Logical element accesses under the module-formula convention: not bytes, not hardware traffic.",
    "bytes": "Bytes.",
    "elements": "Tensor elements (parameters, buffers) or positions (receptive field, stride, padding).",
    "calls": "Module calls.",
    "seconds": "Seconds.",
    "ratio": "A dimensionless ratio.",
    "FLOPs/s": "FLOPs per second.",
    "FLOPs/byte": "FLOPs per byte (arithmetic intensity).",
    "<work_unit>/s": "Throughput: the caller's work unit per second (calls/s by default, samples/s in "
    "measure_workload).",
}

SCOPES: dict[str, str] = {
    "model": "The whole model: every unique tensor once.",
    "forward": "One forward call of the model.",
    "module_call": "One module call, its own work (not its descendants').",
    "subtree": "One module call and every call made inside it.",
    "workload": "The whole workload call.",
    "workload_phase": "One phase of the workload (forward, backward, optimizer, recompute).",
    "workload_start": "The moment the workload started.",
    "at_peak": "The moment of the workload's peak.",
    "step": "One top-level call of the step root (measure_flops by_step).",
    "outside_steps": "Work observed while no step ran.",
    "prefill": "The prefill step of generate().",
    "decode": "All decode steps of generate().",
    "decode_step": "Over the timed decode steps, one step at a time (their interquartile range).",
    "decode_per_token": "The mean cost of one decode step.",
    "decode_step_mean": "The mean wall-clock time of the timed decode steps.",
    "first_token": "The time to the first token of the timed generate().",
    "first_call": "The first, unwarmed call: not model loading.",
    "warmed_blocks": "Work per second over the warmed timing blocks (throughput).",
    "warmed_block_average": "Per call, from the average of warmed timing blocks (latency and its IQR): not a "
    "request percentile.",
    "pytorch_tensor_bytes": "Bytes of tensors PyTorch tracked on CPU: not process RSS.",
    "pytorch_reserved_bytes": "Bytes the device allocator reserved: not total device memory.",
    "child_process_lifetime": "A child process's whole lifetime.",
    "global": "The logical (unsharded) work of a distributed job, the same on every rank.",
    "sum_over_ranks": "Summed over the ranks of a merged job.",
    "max_over_ranks": "The largest rank's value in a merged job.",
    "over_ranks": "Computed across the ranks of a merged job (imbalance).",
}
