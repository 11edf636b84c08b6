"""``crawl_module`` and ``summary``: argument checks and wiring only (analysis.md 1–4, 7, 8)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

import torch
from torch import nn

from torchscan.analysis import inputs as inputs_mod
from torchscan.analysis.build import build_report, enforce_strict
from torchscan.analysis.dispatch import OperatorObserver, not_requested_report
from torchscan.analysis.estimate import record_failure
from torchscan.analysis.hooks import CallRecorder
from torchscan.analysis.lock import ANALYSIS_LOCK
from torchscan.analysis.operator_resolution import validate_custom_mapping
from torchscan.analysis.ownership import ExtensionState
from torchscan.analysis.recursion import frames_needed, recursion_limit_at_least
from torchscan.analysis.roofline import add_roofline
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
    forward's garbage (tests/analysis/test_collector.py).
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


def summary(
    module: nn.Module,
    input_shape: Any = None,
    wrap_mode: str = "mid",
    max_depth: int | None = None,
    receptive_field: bool = False,
    effective_rf_stats: bool = False,
    *,
    dtype: Any = None,
    args: Any = None,
    kwargs: Any = None,
    device: Any = None,
    strict: bool = False,
    mode: Mode = "full",
    custom_modules: Mapping[type[nn.Module], Any] | None = None,
    custom_mapping: Mapping[Any, Callable[..., int]] | None = None,
    operator_flops: bool = False,
    col_names: Sequence[str] | None = None,
    fold: bool = True,
    hardware: Mapping[str, Any] | None = None,
    memory: Mapping[str, Any] | None = None,
    width: int | None = None,
) -> AnalysisReport:
    """Run :func:`crawl_module`, print the summary table to stdout and return the same report.

    ``width`` is the table's characters per line (an int >= 40, else ``ValueError``); ``None``
    takes the terminal's (``shutil.get_terminal_size``: ``COLUMNS`` when set, 120 when output is
    not a terminal). Names and shapes shorten first; then columns drop in a stated order, named in
    the footer (``torchscan.views.analysis.table_layout.DROP_ORDER``); numbers are never cut.

    ``col_names`` picks the columns (``torchscan.views.analysis.table.COLUMNS``; ``None``: output shape,
    parameters, trainable, module FLOPs and their share of the total). ``max_depth=None`` picks the
    deepest depth whose table fits about 60 lines; ``fold=True`` prints repeated identical blocks
    once as ``(×N)``, showing one block's (inclusive) values. ``operator_flops=True`` adds a column
    with each call's inclusive operator FLOPs (a separate method from the module-formula totals; never
    add the two).
    ``hardware`` is passed to :func:`crawl_module` (roofline figures in the report, not in the table).
    With ``strict=True`` the table is printed before :class:`IncompleteAnalysisError` is raised, so
    the evidence is visible either way. Table options are checked before the model runs.

    ``memory`` (a MemoryReport of :func:`torchscan.measure_memory`, validated before the model runs)
    adds the ``Saved act.`` column (``col_names`` key ``saved_activations``): each call's bytes saved
    for backward, joined on ``(path, call_index)``; a call the MemoryReport lacks reads ``-``
    (unknown, not 0). The analysis itself still runs one eval/no-grad forward: the column comes
    from the MemoryReport's own run.
    """
    from torchscan.views.analysis.table import check_table_options, format_table
    from torchscan.views.analysis.table_layout import check_width, terminal_width

    for name, flag in (
        ("receptive_field", receptive_field),
        ("effective_rf_stats", effective_rf_stats),
        ("operator_flops", operator_flops),
        ("strict", strict),
    ):
        check_bool(flag, name)
    check_table_options(
        col_names=col_names,
        max_depth=max_depth,
        fold=fold,
        wrap_mode=wrap_mode,
        extra_columns=receptive_field or effective_rf_stats or operator_flops or memory is not None,
        memory=memory is not None,
    )
    if width is not None:
        check_width(width)
    if memory is not None:
        from torchscan.report.validate.memory import validate_memory_report

        validate_memory_report(memory, "memory")
    from torchscan.analysis.build import IncompleteAnalysisError

    table_options: dict[str, Any] = {
        "wrap_mode": wrap_mode,
        "max_depth": max_depth,
        "receptive_field": receptive_field,
        "effective_rf_stats": effective_rf_stats,
        "operator_flops": operator_flops,
        "col_names": col_names,
        "fold": fold,
        "memory": memory,
        "width": terminal_width() if width is None else width,
    }
    try:
        report = crawl_module(
            module,
            input_shape,
            dtype,
            args=args,
            kwargs=kwargs,
            device=device,
            strict=strict,
            mode=mode,
            custom_modules=custom_modules,
            custom_mapping=custom_mapping,
            hardware=hardware,
        )
    except IncompleteAnalysisError as error:
        print(format_table(error.report, **table_options))
        raise
    print(format_table(report, **table_options))
    return report
