"""Every diagnostic code a report can carry, with its meaning and what a consumer should do.

Codes are stable identifiers for programs (analysis.md 5.3); messages are for people. This table is
the one list of them: :func:`torchscan.report.diagnostics.diagnostic` callers use only these codes
(a test reads every call in the package), and docs/report-schema.md prints the table from here. A
new code is one new entry. Never imports torch.
"""

from __future__ import annotations

from typing import NamedTuple


class Code(NamedTuple):
    """One diagnostic code: what it means and what a program that reads the report should do."""

    meaning: str
    action: str


_KEEP = "Keep the diagnostic with the number it qualifies."
_LOWER = "Treat the metric's known_value as a lower bound only; never extrapolate it."

CODES: dict[str, Code] = {
    # --- analysis: module formulas, handlers and functional work (analysis.md, extensions) -------
    "unsupported_module_metric": Code(
        "No formula covers this module type or configuration; its share is missing from the total.",
        f"{_LOWER} Register a custom_modules handler (see class_path) if the number matters.",
    ),
    "unestimated_functional_work": Code(
        "A module ran operators in its own forward (a residual add, a matmul) that no formula estimates.",
        f"{_LOWER} Use operator FLOPs for that work; do not add the two methods.",
    ),
    "module_forward_error": Code(
        "A submodule's forward raised and an enclosing module caught it; the call has no estimates.",
        "Check whether the failure is expected; the call's metrics are unavailable, not zero.",
    ),
    "module_metric_error": Code(
        "A formula or built-in handler failed on this call (the message says why).",
        f"{_LOWER} Report the message to the model's owner or fix the configuration it names.",
    ),
    "module_metric_warning": Code(
        "A formula counted the call but warned about an assumption it made.",
        _KEEP,
    ),
    "missing_metric_tensor": Code(
        "A formula needed a tensor (an input, a weight) that the call did not provide.",
        f"{_LOWER} Check the call's inputs.",
    ),
    "unsupported_token_dependencies": Code(
        "Token dependencies of this call cannot be described (its object is unavailable).",
        "Do not infer token locality for this module.",
    ),
    "custom_handler_error": Code(
        "A caller's custom_modules handler raised; the fields it owns are unavailable.",
        "Fix the handler; the affected metrics are unavailable, not zero.",
    ),
    "custom_handler_invalid": Code(
        "A caller's handler returned something that is not an estimates mapping of known fields.",
        "Fix the handler's return value.",
    ),
    "custom_metric_invalid": Code(
        "A caller's handler returned an invalid value for one field; that field is unavailable.",
        "Fix the handler's value for the named metric.",
    ),
    "custom_metric_partial": Code(
        "A caller's handler returned a partial result for one field.",
        _LOWER,
    ),
    "custom_metric_unavailable": Code(
        "A caller's handler reported one field as unavailable.",
        "The metric is unknown for that call; totals that include it are partial.",
    ),
    "total_out_of_range": Code(
        "The layers' values sum beyond the float range a report number must fit.",
        "The total is unavailable; read the per-layer values.",
    ),
    # --- operator FLOPs (formulas.md B, distributed.md) -----------------------------------------
    "uncounted_operator": Code(
        "An operator ran that has no FLOP formula; its calls are counted, its FLOPs are not.",
        f"{_LOWER} Supply custom_mapping for that operator if its FLOPs matter.",
    ),
    "unsupported_operator_formula": Code(
        "An operator has a formula, but not for this call's arguments (layout, dtype, options).",
        _LOWER,
    ),
    "incomplete_operator_formula": Code(
        "An operator's formula counted only part of the call's work (the message says which part).",
        _LOWER,
    ),
    "unverified_inherited_formula": Code(
        "Only PyTorch's FlopCounterMode has a formula for this operator, and TorchScan's reference suite "
        "has not checked it on the installed torch (severity info; the message gives its figure).",
        "The figure is not in any total (an uncounted_operator warning makes the total partial); "
        "supply custom_mapping if you trust it.",
    ),
    "untested_torch_version": Code(
        "The report was made on a torch newer than the newest release TorchScan is tested on "
        "(severity info); TorchScan's own formulas count as on the tested releases.",
        "Informational; no status changed. Record the torch version with any number you keep.",
    ),
    "unattributed_operator": Code(
        "Operators ran outside any module call, so per-layer operator FLOPs do not hold them.",
        "Use totals.operator_flops for the whole; per-layer sums are lower than it.",
    ),
    "logical_operator_formula": Code(
        "A DTensor operator's logical (unsharded) FLOPs could not be counted.",
        "Treat logical_total as a lower bound; executed FLOPs are unaffected.",
    ),
    "plain_tensor_work_in_logical_total": Code(
        "FLOPs ran on plain tensors outside any DTensor operator (after to_local(), for example).",
        "Logical FLOPs exclude that work; read executed FLOPs for it.",
    ),
    "unknown_collective_bytes": Code(
        "A collective ran whose input bytes are not known.",
        "Treat communication bytes as a lower bound.",
    ),
    "unsupported_operator_bytes": Code(
        "An operator's operand bytes could not be measured (a subclass, sparse or opaque operand).",
        "Treat operator_bytes as a lower bound.",
    ),
    "attention_kv_not_applicable": Code(
        "The work ran matrix products but no attention (an MLP, a recurrent or state-space model): "
        "attention_kv_bytes is unavailable with method not_applicable (severity info).",
        "Nothing was owed: do not read it as a missing measurement.",
    ),
    "attention_not_fused": Code(
        "Attention ran as separate matmuls, not a fused kernel, so its K/V bytes are not identified.",
        "attention_kv_bytes is unavailable for that step; operator_bytes still holds the traffic.",
    ),
    # --- merged reports (distributed.md 4) -----------------------------------------------------
    "missing_ranks": Code(
        "Reports of some ranks of the job were not given to merge_reports.",
        "Summed and maximum totals are lower bounds; merge every rank's report for complete ones.",
    ),
    "mixed_rank_labels": Code(
        "Ranks report one metric under different units or methods.",
        "The merged metric is unavailable; compare the ranks' own reports.",
    ),
    "logical_total_mismatch": Code(
        "Ranks disagree on the job's logical FLOPs (or only some report one).",
        "The merged logical total is unavailable; check that every rank ran the same program.",
    ),
    # --- comparisons ----------------------------------------------------------------------------
    "delta_out_of_range": Code(
        "Both sides are complete but their difference is beyond the float range.",
        "There is no delta; compare the two values yourself if needed.",
    ),
    # --- workloads, hardware facts, profiles (workloads.md, training-and-hardware.md) ----------
    "measurement_unavailable": Code(
        "A measurement of measure_workload could not be taken, or a figure lacks an input "
        "(the message says why).",
        "The metric is unavailable; do not read it as zero.",
    ),
    "utilization_above_peak": Code(
        "A utilization above 1: the stated peak or the FLOP count is wrong.",
        "Check the stated hardware facts; do not report the ratio as achieved.",
    ),
    "utilization_out_of_range": Code(
        "A utilization beyond the float range (an extremely small stated peak).",
        "Check the stated hardware facts.",
    ),
    "roofline_out_of_range": Code(
        "A roofline time beyond the float range (an extremely small stated rate).",
        "Check the stated hardware facts.",
    ),
    "roofline_needs_bandwidth": Code(
        "The stated hardware has no memory bandwidth, so no roofline time or bound is given.",
        "State memory_bandwidth_bytes_per_second to get rooflines.",
    ),
    "cuda_gpu_trace_unavailable": Code(
        "The profiler cannot see CUDA activity: device self times are unknown (None, not zero).",
        "Read CPU-side times only.",
    ),
    "mps_gpu_trace_unavailable": Code(
        "The profiler has no MPS device activity: rows describe CPU-side dispatch only.",
        "Use torch.mps.profiler for device time.",
    ),
    # --- memory ledger (memory.md) -------------------------------------------------------------
    "untracked_storage": Code(
        "Storages were read that the ledger neither saw created nor found before the call.",
        "Treat the peak as a lower bound.",
    ),
    "tensor_subclass": Code(
        "Tensor subclasses or layouts hide their storages from the ledger.",
        "Treat the peak as a lower bound.",
    ),
    "data_dependent_operator": Code(
        "Value-dependent operators ran on meta or fake tensors: their output sizes are not real.",
        "Measure on a real device for those operators.",
    ),
    "saved_tensor_hooks_hidden": Code(
        "The workload's own saved-tensor hooks hid what autograd saved.",
        "Activations may be counted as temporaries; read the two together.",
    ),
    "opaque_saved_tensor": Code(
        "A saved-tensor hook packed a tensor into a non-tensor object; it is not counted as saved.",
        "Treat activations as a lower bound.",
    ),
    "unsupported_ledger_device": Code(
        "Tensors lived on a device type the ledger does not know; their storages are counted as "
        "on any device.",
        "Check that the figures are meaningful for that device; allocator figures are not available.",
    ),
    # --- generation (generation.md) ------------------------------------------------------------
    "no_steps": Code(
        "generate() never called the model: there is no prefill or decode step.",
        "Check the generation settings (max_new_tokens, stopping criteria).",
    ),
    "no_decode_steps": Code(
        "No decode step ran (or was timed), so decode figures are unavailable.",
        "Generate at least two new tokens.",
    ),
    "decode_fit_unavailable": Code(
        "No fit of decode costs against context length: under two decode steps, an unknown "
        "context length or an incomplete value.",
        "Read the per-step figures; the fit is None.",
    ),
    # --- measure_scaling (attention-and-scaling.md 2) --------------------------------------------
    "scaling_point_failed": Code(
        "The workload of one size (or its build) raised; that point is unavailable (errors names the type).",
        "Use the fits of the other points; they say which points they used.",
    ),
    "scaling_fit_fewer_points": Code(
        "A series had too few values to confirm a polynomial (a degree needs one spare point).",
        "Measure more sizes before reading a degree or coefficients.",
    ),
    "scaling_fit_unavailable": Code(
        "Fewer than two values exist for a series: nothing was fitted.",
        "Measure the series at more sizes.",
    ),
    "scaling_fit_partial": Code(
        "A fit used partial values: it describes how the counted part grows, not the whole cost.",
        f"{_LOWER} Never read its coefficients as the full cost.",
    ),
    "scaling_not_polynomial": Code(
        "No polynomial through the values is confirmed by a spare point (the counts are not polynomial "
        "in the size, e.g. sizes a stride does not divide).",
        "Read the exponent and the points, not a degree.",
    ),
    "scaling_module_type_ambiguous": Code(
        "A module label could not be mapped to one module type, so by_module_type leaves it out.",
        "Use by_operator or the total for that work.",
    ),
    # --- memory (memory.md) and higher-order operators (attention-and-scaling.md 1) ----------------
    "allocator_ledger_gap": Code(
        "The ledger's peak − baseline and the allocator's own figure of the same call differ by more "
        "than 1 % or 64 KiB: memory the ledger cannot see (a kernel's workspace), or the reverse.",
        "Read both figures; the allocator's is the one a device limit meets.",
    ),
    "higher_order_operator": Code(
        "A higher-order operator without a rule ran as it would without TorchScan; its inside was not "
        "observed, so the figures it touches are lower bounds.",
        f"{_LOWER} Supply custom_mapping or run its body eagerly if the number matters.",
    ),
}
