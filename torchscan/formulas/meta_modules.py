"""Part-A modules on the ``meta`` device, built once per configuration, for functional estimates.

:mod:`torchscan.formulas.functional` estimates an operator as the module it is equivalent to
(real-models.md 1): it builds that module here and runs the *registered* module formulas on meta
tensors of the observed shapes, so the module and functional paths can never drift.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from torchscan.formulas import registry
from torchscan.formulas.keys import UNKEYABLE, canonical
from torchscan.formulas.operator_calls import TensorMeta


def empty_meta(meta: TensorMeta) -> torch.Tensor:
    """An empty ``meta``-device tensor of the captured shape and dtype."""
    return torch.empty(meta.shape, dtype=meta.dtype, device="meta")


def module_estimate(
    module: nn.Module, inputs: tuple[TensorMeta, ...], output: TensorMeta
) -> tuple[int, int, int]:
    """The registered Part-A formulas of ``module`` on meta tensors of the observed shapes."""
    cls = type(module)
    inp, out = empty_meta(inputs[0]), empty_meta(output)
    flops_of, macs_of, dmas_of = (
        registry.flops.lookup(cls),
        registry.macs.lookup(cls),
        registry.dmas.lookup(cls),
    )
    if flops_of is None or macs_of is None or dmas_of is None:
        raise ValueError(f"no module formula for {cls.__name__}")
    tensors = (inp, *(empty_meta(m) for m in inputs[1:]))
    return int(flops_of(module, tensors, out)), int(macs_of(module, inp, out)), int(dmas_of(module, inp, out))


# --- module factories (cached: equal configurations share one meta module) ----------------------


_MODULES: dict[tuple[Any, ...], nn.Module] = {}


def meta_module(factory: Callable[..., nn.Module], *config: Any) -> nn.Module:
    """The meta-device module ``factory(*config)``, built once per configuration.

    The configuration is keyed by :func:`~torchscan.formulas.keys.canonical` (truth.md 2): ``1``,
    ``1.0`` and ``True`` are three configurations; one it cannot key is built for this call only.
    """
    described = canonical(config)
    if described is UNKEYABLE:
        with torch.device("meta"):
            return factory(*config).eval()
    key = (factory, described)
    module = _MODULES.get(key)
    if module is None:
        if len(_MODULES) > 512:  # bounded: configurations are few in practice
            _MODULES.clear()
        with torch.device("meta"):
            module = _MODULES[key] = factory(*config).eval()
    return module
