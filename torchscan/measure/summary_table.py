"""``summary``: the module crawl and its printed table in one call.

:func:`~torchscan.analysis.crawl.api.crawl_module` observes; the table is a view of its report
(:mod:`torchscan.views.analysis.table`). ``summary`` joins the two, so it lives above both rooms
(the crawl never imports a view).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from torch import nn

from torchscan.analysis.crawl.api import Mode, check_bool, crawl_module
from torchscan.analysis.crawl.build import IncompleteAnalysisError
from torchscan.report.schema import AnalysisReport
from torchscan.report.validate.memory import validate_memory_report
from torchscan.views.analysis.table import check_table_options, format_table
from torchscan.views.analysis.table_layout import check_width, terminal_width


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
        validate_memory_report(memory, "memory")
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
