"""Operator formulas read metadata only: they dispatch nothing and count meta tensors as CPU ones.

The workloads are every case table of the other operator formula tests.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from operator_counting import count, module_call
from test_operator_direct import dispatch_cases
from test_operator_modules import ACTIVATIONS, LAYOUT, NORMALIZATION_AND_POOLING
from test_operator_workloads import attention_cases, functional_cases
from torch import nn
from torch.nn import functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from torchscan.formulas.operators import SUPPLEMENTAL_FORMULAS, UnsupportedOperatorFormula


class _NoDispatch(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        raise AssertionError(f"a formula dispatched {func}")


def test_formulas_dispatch_nothing():
    recorded: list[tuple[str, tuple, dict, object]] = []
    # Fresh case tables where a factory builds them: a backward workload accumulates into its leaves'
    # ``.grad``, so running the shared tables' workloads here would change what their own tests count.
    groups = (functional_cases(), dispatch_cases(), attention_cases(), LAYOUT, NORMALIZATION_AND_POOLING)
    workloads = [case.workload for group in groups for case in group.values()]
    workloads += [module_call(factory, 2, 4) for factory, _ in (param.values for param in ACTIVATIONS)]
    for workload in workloads:
        recorded += [call for call in count(workload).calls if call[0] in SUPPLEMENTAL_FORMULAS]
    assert len({name for name, *_ in recorded}) > 60
    with _NoDispatch():
        for name, args, kwargs, out in recorded:
            try:
                SUPPLEMENTAL_FORMULAS[name](args, kwargs, out)
            except UnsupportedOperatorFormula:
                pass


def test_workloads_on_meta_match_cpu():
    def graph(device: str) -> Callable[[], object]:
        x = torch.ones(2, 4, 3, device=device)
        norm = nn.LayerNorm(3, device=device)
        return lambda: F.gelu(F.softmax(norm(x), -1) * 2 + x).mean(dim=-1).clamp(min=0).sum()

    cpu, on_meta = count(graph("cpu")), count(graph("meta"))
    # layer_norm 6·24 + 2·8 + 2·24 = 208, softmax 5·24 − 16 = 104, mul 24, add 24, gelu 5·24 = 120,
    # mean (24 − 8) + 8 = 24, clamp 8, sum 7
    assert cpu.total == on_meta.total == 208 + 104 + 24 + 24 + 120 + 24 + 8 + 7
    assert cpu.by_operator == on_meta.by_operator
