"""Every timed contender, as one ordered registry: baselines, TorchScan, then the peers.

The baselines are the bare forward, the floor (the forward under an empty dispatch mode that only
forwards every operator: what any dispatch-level counter pays before it counts, issue #36) and
PyTorch's FlopCounterMode.

A tool turns ``(model, args, kwargs)`` into a zero-argument callable that performs one complete
analysis (or one bare forward). Peers are called only through their public APIs, exactly as their
documentation shows, with printing turned off; nothing of their source is used here. Every call runs
under ``torch.no_grad()`` so no contender pays for an autograd graph another one does not build.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

Call = Callable[[], object]
Factory = Callable[[nn.Module, tuple[Any, ...], dict[str, Any]], Call]


@dataclass(frozen=True)
class Tool:
    """One contender. ``package`` names the PyPI distribution a peer needs (None: always available).

    ``isolated`` tools may leave hooks, buffers or attributes on a model, so each of their calls gets
    a fresh deep copy of the model, made outside the timed region.
    """

    key: str
    label: str
    factory: Factory
    package: str | None = None
    isolated: bool = False
    dispatch: bool = False  # a peer that counts at PyTorch's dispatch level, as TorchScan does

    def available(self) -> bool:
        """Whether the tool's package can be imported here (peers are optional)."""
        if self.package is None:
            return True
        try:
            return importlib.util.find_spec(self.package) is not None
        except (ImportError, ValueError):  # a broken or blocked installation counts as absent
            return False

    def version(self) -> str | None:
        """The installed distribution version of a peer, or None for built-in tools."""
        if self.package is None:
            return None
        try:
            return importlib.metadata.version(self.package)
        except importlib.metadata.PackageNotFoundError:
            return None


def _no_grad(fn: Call) -> Call:
    def call() -> object:
        with torch.no_grad():
            return fn()

    return call


def _quiet(fn: Call) -> Call:
    """Swallow anything a peer prints despite its print options (cheap: one stream swap per call)."""

    def call() -> object:
        with contextlib.redirect_stdout(io.StringIO()):
            return fn()

    return call


# --- baselines and TorchScan ----------------------------------------------------------------------


def _bare(model: nn.Module, args: tuple, kwargs: dict) -> Call:
    return _no_grad(lambda: model(*args, **kwargs))


class ForwardingMode(TorchDispatchMode):
    """An empty dispatch mode: every operator is forwarded as it came, nothing is looked at (issue #36).

    A plain subclass, so PyTorch wraps its ``__torch_dispatch__`` exactly as it wraps any mode's (the
    Dynamo guard included): the cost every dispatch-level counter pays before it counts anything.
    """

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
        return func(*args, **(kwargs or {}))


def _floor(model: nn.Module, args: tuple, kwargs: dict) -> Call:
    def call() -> object:
        with ForwardingMode():
            return model(*args, **kwargs)

    return _no_grad(call)


def _flop_counter(model: nn.Module, args: tuple, kwargs: dict) -> Call:
    from torch.utils.flop_counter import FlopCounterMode

    def call() -> object:
        with FlopCounterMode(display=False) as counter:
            model(*args, **kwargs)
        return counter.get_total_flops()

    return _no_grad(call)


def _structure(model: nn.Module, args: tuple, kwargs: dict) -> Call:
    import torchscan

    return _no_grad(lambda: torchscan.crawl_module(model, args=args, kwargs=kwargs, mode="structure"))


def _full(model: nn.Module, args: tuple, kwargs: dict) -> Call:
    import torchscan

    return _no_grad(lambda: torchscan.crawl_module(model, args=args, kwargs=kwargs))


def _measure_flops(model: nn.Module, args: tuple, kwargs: dict) -> Call:
    import torchscan

    return _no_grad(lambda: torchscan.measure_flops(lambda: model(*args, **kwargs)))


# --- peers (public APIs only) ---------------------------------------------------------------------


def _torchinfo(model: nn.Module, args: tuple, kwargs: dict) -> Call:
    from torchinfo import summary

    # torchinfo runs the forward only when given input data: a list of positional inputs, or a dict of
    # keyword inputs when there are none (its ``**kwargs`` alone would be forwarded without a pass).
    if args:
        return _no_grad(_quiet(lambda: summary(model, input_data=list(args), verbose=0, **kwargs)))
    return _no_grad(_quiet(lambda: summary(model, input_data=dict(kwargs), verbose=0)))


def _fvcore(model: nn.Module, args: tuple, kwargs: dict) -> Call:
    from fvcore.nn import FlopCountAnalysis

    inputs = (*args, *kwargs.values())  # jit tracing takes positional inputs only

    def call() -> object:
        analysis = FlopCountAnalysis(model, inputs)
        analysis.unsupported_ops_warnings(False).uncalled_modules_warnings(False)
        return analysis.total()

    return _no_grad(_quiet(call))


def _ptflops(backend: str) -> Factory:
    def factory(model: nn.Module, args: tuple, kwargs: dict) -> Call:
        from ptflops import get_model_complexity_info

        if kwargs or len(args) != 1:
            resolution: tuple[int, ...] = (1,)  # unused: the constructor below builds the real inputs
            options: dict[str, Any] = {"input_constructor": lambda _resolution: dict(kwargs)}
            if args:
                raise TypeError("ptflops harness: positional and keyword inputs together are not supported")
        else:
            resolution, options = tuple(args[0].shape[1:]), {}  # ptflops adds the batch dimension of 1
        return _no_grad(
            _quiet(
                lambda: get_model_complexity_info(
                    model,
                    resolution,
                    as_strings=False,
                    print_per_layer_stat=False,
                    verbose=False,
                    backend=backend,
                    **options,
                )
            )
        )

    return factory


def _thop(model: nn.Module, args: tuple, kwargs: dict) -> Call:
    from thop import profile

    inputs = (*args, *kwargs.values())
    return _no_grad(_quiet(lambda: profile(model, inputs=inputs, verbose=False)))


BARE = "bare"
FLOOR = "floor"
FLOP_COUNTER = "flopcounter"

TOOLS = (
    Tool(BARE, "bare forward", _bare),
    Tool(FLOOR, "empty TorchDispatchMode (the floor)", _floor),
    Tool(FLOP_COUNTER, "FlopCounterMode alone", _flop_counter),
    Tool("ts-structure", "torchscan crawl_module structure", _structure),
    Tool("ts-full", "torchscan crawl_module full", _full),
    Tool("ts-measure-flops", "torchscan measure_flops", _measure_flops),
    Tool("torchinfo", "torchinfo summary", _torchinfo, "torchinfo", isolated=True),
    Tool("fvcore", "fvcore FlopCountAnalysis", _fvcore, "fvcore", isolated=True),
    Tool("ptflops-pytorch", "ptflops (pytorch backend)", _ptflops("pytorch"), "ptflops", isolated=True),
    Tool("ptflops-aten", "ptflops (aten backend)", _ptflops("aten"), "ptflops", isolated=True, dispatch=True),
    Tool("thop", "thop profile", _thop, "thop", isolated=True),
)

BY_KEY = {tool.key: tool for tool in TOOLS}
PEERS = tuple(tool for tool in TOOLS if tool.package is not None)
# Issue #24's reference: the fastest of these on a model is the "fastest dispatch peer" (every peer,
# ptflops' aten backend included, runs by default whenever its package is installed).
DISPATCH_PEERS = tuple(tool for tool in PEERS if tool.dispatch)
