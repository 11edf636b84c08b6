"""``crawl_module`` and ``summary``: argument checks and wiring only (analysis.md 1–4, 7, 8)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal

import torch
from torch import nn

from torchscan.analysis.crawl import inputs as inputs_mod
from torchscan.analysis.crawl.build import build_report, enforce_strict
from torchscan.analysis.crawl.estimate import record_failure
from torchscan.analysis.crawl.hooks import CallRecorder
from torchscan.analysis.crawl.ownership import ExtensionState
from torchscan.analysis.crawl.roofline import add_roofline
from torchscan.analysis.dispatch.observer import OperatorObserver
from torchscan.analysis.dispatch.reporting import not_requested_report
from torchscan.analysis.dispatch.resolution import validate_custom_mapping
from torchscan.analysis.lock import ANALYSIS_LOCK
from torchscan.analysis.recursion import frames_needed, recursion_limit_at_least
from torchscan.extensions import ModuleHandler, validate_custom_modules
from torchscan.report.hardware import check_hardware
from torchscan.report.schema import AnalysisReport, InputsMeta

Mode = Literal["full", "structure"]


def _validate_call_inputs(
    input_shape: object, dtype: object, args: object, kwargs: object, device: object
) -> tuple[list[tuple[int, ...]] | None, tuple[Any, ...], dict[str, Any]]:
    provided = args is not None or kwargs is not None
    if (input_shape is None) == (not provided) or (input_shape is not None and provided):
        raise ValueError("exactly one of input_shape or args/kwargs must be given")
    if provided:
        if dtype is not None or device is not None:
            raise ValueError(
                "dtype and device configure generated inputs only; do not pass them with args/kwargs"
            )
        if args is None:
            args = ()
        if not isinstance(args, tuple):
            # A list is ambiguous (one list argument, or several arguments?): only a tuple spreads.
            hint = "; wrap a list argument as (the_list,)" if isinstance(args, list) else ""
            raise TypeError(f"args must be a tuple of positional arguments, got {type(args).__name__}{hint}")
        if kwargs is None:
            kwargs = {}
        if not isinstance(kwargs, Mapping) or not all(isinstance(k, str) for k in kwargs):
            raise TypeError("kwargs must be a mapping with str keys")
        if not all(k.isidentifier() for k in kwargs):
            # Keyword names are recorded verbatim in the report; one like "/private/model.pt" could be
            # a path or a secret, and no forward declares such a parameter by name anyway.
            raise ValueError("kwargs keys must be Python identifiers (keyword argument names)")
        return None, args, dict(kwargs)
    shapes = inputs_mod.normalize_shapes(input_shape)
    return shapes, (), {}


def check_bool(value: object, name: str) -> None:
    """Raise ``TypeError`` naming ``name`` unless ``value`` is a real bool (``1`` and ``"yes"`` are not)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__}")


def _validate_device(device: object) -> torch.device:
    """The generated inputs' device, checked before anything is allocated (analysis.md 2)."""
    if not isinstance(device, str | torch.device):
        raise TypeError(f"device must be a str or torch.device, got {type(device).__name__}")
    try:
        target = torch.device(device)
    except RuntimeError as error:  # torch's message for a malformed string: wrapped, so it names the argument
        raise ValueError(f"device {device!r} is not a valid torch device: {error}") from None
    if target.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {str(target)!r} was requested but CUDA is not available in this build")
    if target.type not in ("cpu", "meta"):
        # An out-of-range index or an accelerator this build lacks fails here, not in the model.
        try:
            torch.empty(0, device=target)
        except (RuntimeError, AssertionError) as error:
            raise ValueError(f"device {str(target)!r} cannot be used: {error}") from None
    return target


def _prepare(
    module: object,
    input_shape: object,
    dtype: object,
    args: object,
    kwargs: object,
    device: object,
    mode: object,
    custom_modules: object,
    custom_mapping: object,
) -> tuple[
    list[tuple[int, ...]] | None,
    tuple[Any, ...],
    dict[str, Any],
    dict[Any, Callable[..., int]],
    dict[type[nn.Module], ModuleHandler],
]:
    """Every check of analysis.md 2, before the model is touched."""
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    shapes, call_args, call_kwargs = _validate_call_inputs(input_shape, dtype, args, kwargs, device)
    if shapes is not None:
        inputs_mod.normalize_dtypes(dtype, len(shapes))
        if device is not None:
            _validate_device(device)
    if not isinstance(mode, str) or mode not in ("full", "structure"):
        raise ValueError(f"mode must be 'full' or 'structure', got {mode!r}")
    handlers = validate_custom_modules(custom_modules)  # a snapshot; the caller's mapping is untouched
    mapping = validate_custom_mapping(custom_mapping)
    return shapes, call_args, call_kwargs, mapping, handlers


def crawl_module(
    module: nn.Module,
    input_shape: Any = None,
    dtype: Any = None,
    *,
    args: Any = None,
    kwargs: Any = None,
    device: Any = None,
    strict: bool = False,
    mode: Mode = "full",
    custom_modules: Mapping[type[nn.Module], Any] | None = None,
    custom_mapping: Mapping[Any, Callable[..., int]] | None = None,
    hardware: Mapping[str, Any] | None = None,
) -> AnalysisReport:
    """Analyse one forward call of ``module`` and return a versioned, JSON-ready report.

    The forward runs once, in evaluation mode under ``torch.no_grad()``, with module hooks and (in
    full mode) operator dispatch observed. Every hook is removed and every training flag restored
    afterwards, also when the forward raises (the same exception object propagates).

    Module-formula totals (``module_flops``, ``macs``, ``dmas``) and operator FLOPs are separate
    methods: never add or average them. A ``partial`` total's ``known_value`` is a lower bound only.

    ``hardware`` (the caller's stated ``peak_flops_per_second`` and optional
    ``memory_bandwidth_bytes_per_second``; training-and-hardware.md 3) is copied into
    ``context.hardware`` and adds ``arithmetic_intensity`` and ``roofline_seconds`` to each layer
    with module FLOPs and to the totals: a model of the DMA convention's algorithm under the stated
    facts, never a measurement (convolutions usually run faster than it).
    """
    check_bool(strict, "strict")
    shapes, call_args, call_kwargs, mapping, handlers = _prepare(
        module, input_shape, dtype, args, kwargs, device, mode, custom_modules, custom_mapping
    )
    stated = None if hardware is None else check_hardware(hardware)
    if shapes is not None:
        default_dtype, default_device = inputs_mod.default_placement(module)
        dtypes = inputs_mod.normalize_dtypes(dtype, len(shapes)) or [default_dtype] * len(shapes)
        target = torch.device(device) if device is not None else default_device
        try:
            call_args = inputs_mod.generate_inputs(shapes, dtypes, target)
        except RuntimeError as error:  # e.g. more bytes than the device can allocate
            raise ValueError(
                f"input_shape {shapes!r} cannot be generated as {[str(d) for d in dtypes]} on "
                f"{target}: {error}"
            ) from None
        source: Literal["generated", "provided"] = "generated"
    else:
        source = "provided"
    inputs: InputsMeta = {
        "source": source,
        "args": [inputs_mod.describe(a) for a in call_args],
        "kwargs": {k: inputs_mod.describe(v) for k, v in call_kwargs.items()},
    }
    full = mode == "full"
    report = _observe(module, call_args, call_kwargs, inputs, full, mapping, handlers)
    if stated is not None:
        add_roofline(report, stated)
    if strict:
        enforce_strict(report)
    return report


_NO_FULL_COLLECTION = 1 << 30  # a third threshold that the oldest generation's count never reaches


@contextlib.contextmanager
def _full_collections_held_back() -> Iterator[None]:
    """Hold back the cyclic collector's full collections for the block; restore the thresholds after.

    Millions of small record dicts make full collections run again and again, each walking the
    whole heap (the degradation of hook-heavy tools past a few thousand layers). Young collections
    keep running on fresh, cache-hot objects, so the forward's own cyclic garbage dies young as
    usual and the report is not left for one cold traversal after the call. Disabling the
    collector, or promoting everything with gc.freeze()/unfreeze(), cost more or leaked the
    forward's garbage (tests/analysis/crawl/test_collector.py).
    """
    thresholds = gc.get_threshold()
    if thresholds[0]:  # a zero first threshold means the caller turned automatic collection off
        gc.set_threshold(thresholds[0], thresholds[1], _NO_FULL_COLLECTION)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


def _observe(
    module: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    inputs: InputsMeta,
    full: bool,
    mapping: dict[Any, Callable[..., int]],
    handlers: Mapping[type[nn.Module], ModuleHandler] | None = None,
) -> AnalysisReport:
    """Run the single observed forward call and build the report from its records.

    Everything process-global that the analysis changes (module hooks, collector thresholds,
    training flags, the recursion limit) is changed and restored under :data:`ANALYSIS_LOCK`.
    """
    with ANALYSIS_LOCK, _full_collections_held_back():
        if full:
            # Handlers, native Transformer estimates and subtree ownership (extensions spec); structure
            # mode runs none of them.
            extensions = ExtensionState(handlers or {})
            recorder = CallRecorder(
                module,
                estimator=extensions.estimate,
                on_failure=extensions.on_failure,
                on_enter=extensions.on_enter,
            )
        else:
            recorder = CallRecorder(module, estimator=None, on_failure=record_failure)
        limit = frames_needed(recorder.depth)
        # The limit stays raised through the report build: a deep call tree is walked there too.
        with recursion_limit_at_least(limit):
            training = [(m, m.training) for m in recorder.modules]
            # Flags are set through ``__dict__``: ``nn.Module.__setattr__`` costs microseconds per module,
            # and the analysis changes nothing but the flags themselves.
            training_before = module.training
            try:
                recorder.install()
                for submodule, flag in training:
                    if flag:
                        submodule.__dict__["training"] = False
                with torch.no_grad():
                    if full:
                        observer = OperatorObserver(mapping)
                        observer.sink = recorder
                        recorder.observer = observer
                        with observer:
                            module(*args, **kwargs)
                        operator_report = observer.report()
                    else:
                        module(*args, **kwargs)
                        operator_report = not_requested_report()
            finally:
                recorder.remove()
                for submodule, flag in training:
                    if submodule.__dict__.get("training") is not flag:
                        submodule.__dict__["training"] = flag
            return build_report(
                module,
                recorder,
                inputs,
                inputs_mod.tensors_in((args, kwargs)),
                mode="full" if full else "structure",
                training_before=training_before,
                operator_report=operator_report,
            )
