"""Model targets and input options of the ``torchscan`` command line (cli.md, "Model targets").

Everything here turns command-line text into Python objects and reports problems as
:class:`UsageError` (exit status 2, one line). Nothing here prints or writes files; ``torch`` is
imported only inside the functions that need it, so ``torchscan --help`` stays fast.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from torch import nn

DEMO_PREFIX = "demo"
MAX_ELEMENTS = 2**63 - 1  # PyTorch sizes and element counts are int64


class UsageError(Exception):
    """A usage problem the command line reports as one line and exit status 2."""


@dataclass(frozen=True)
class Target:
    """A resolved ``TARGET``: the object it names and where it came from.

    ``obj`` is an ``nn.Module`` instance or a callable that should return one. ``source_file`` is
    the Python file a ``file.py:attr`` target was loaded from (an input that must never be
    overwritten). ``default_shape`` is only known for the built-in demos.
    """

    spec: str
    obj: Any
    source_file: Path | None = None
    default_shape: tuple[int, ...] | None = None


def resolve_target(spec: str) -> Target:
    """Import what ``spec`` names without calling it; raise :class:`UsageError` when it cannot."""
    module_part, sep, attr = spec.rpartition(":")
    if not sep or not module_part or not attr:
        raise UsageError(
            f"invalid target {spec!r}: expected package.module:attr, path/to/file.py:attr or demo:<name>"
        )
    if module_part == DEMO_PREFIX:
        return _demo_target(spec, attr)
    if module_part.endswith(".py") or os.sep in module_part or "/" in module_part:
        path = Path(module_part)
        module = _load_file(spec, path)
        return Target(spec, _get_attr(spec, module, attr), source_file=path.resolve())
    module = _import_module(spec, module_part)
    return Target(spec, _get_attr(spec, module, attr))


def _demo_target(spec: str, name: str) -> Target:
    from torchscan.demo import DEMO_MODELS

    if name not in DEMO_MODELS:
        known = ", ".join(f"demo:{n}" for n in sorted(DEMO_MODELS))
        raise UsageError(f"unknown demo model {spec!r}; available: {known}")
    model, shape = DEMO_MODELS[name]()
    return Target(spec, model, default_shape=shape)


def _import_module(spec: str, name: str) -> Any:
    # Like `python -m`, let modules in the current directory be found by the console script too.
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(name)
    except Exception as error:  # any failure to import is an unloadable target, not a model error
        raise UsageError(f"cannot load target {spec!r}: {_one_line(error)}") from None


def _load_file(spec: str, path: Path) -> Any:
    if not path.is_file():
        raise UsageError(f"cannot load target {spec!r}: no such file {str(path)!r}")
    name = file_module_name(path)
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise UsageError(f"cannot load target {spec!r}: {str(path)!r} is not a loadable Python file")
    module = importlib.util.module_from_spec(module_spec)
    # As when running a script, the file's directory is importable (sibling modules resolve).
    directory = str(path.resolve().parent)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[name]
        raise UsageError(f"cannot load target {spec!r}: {_one_line(error)}") from None
    return module


def file_module_name(path: Path) -> str:
    """The module name a ``file.py:attr`` target is loaded under: from the file's stem, not its path.

    Reports record ``model_type`` as ``module.Class``, so the name must be the same in every run
    (``hash()`` of a string is salted per process) and must not carry the path (reports hold no
    file paths). The prefix keeps a file named like an installed package (``torch.py``) from
    replacing that package in ``sys.modules``.
    """
    stem = re.sub(r"\W", "_", path.stem, flags=re.ASCII) or "file"
    return f"_torchscan_target_{stem}"


def _get_attr(spec: str, module: Any, attr: str) -> Any:
    obj = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UsageError(f"cannot load target {spec!r}: no attribute {attr!r}") from None
    return obj


def instantiate(target: Target, factory_kwargs: dict[str, Any]) -> nn.Module:
    """Return the target's module, calling it with ``factory_kwargs`` when it is a factory.

    Exceptions raised by the factory itself propagate (they are the model's errors, status 1).
    """
    from torch import nn

    if isinstance(target.obj, nn.Module):
        if factory_kwargs:
            raise UsageError(
                f"--factory-kwargs given, but {target.spec!r} is a module instance, not a factory"
            )
        return target.obj
    if not callable(target.obj):
        kind = type(target.obj).__name__
        raise UsageError(f"target {target.spec!r} is a {kind}, not an nn.Module or a callable returning one")
    model = target.obj(**factory_kwargs)
    if not isinstance(model, nn.Module):
        kind = type(model).__name__
        raise UsageError(f"target {target.spec!r} returned a {kind}, not an nn.Module")
    return model


def build_context(device: torch.device | None) -> contextlib.AbstractContextManager[Any]:
    """Where a factory builds its model: inside ``torch.device("meta")`` for meta, else as it likes.

    A multi-billion-parameter factory then never allocates real memory (``torchscan memory
    --device meta``); a module instance is moved to the device afterwards as for every command.
    """
    if device is not None and device.type == "meta":
        return device  # a torch.device is a context manager: factory tensors are created on it
    return contextlib.nullcontext()


def parse_factory_kwargs(text: str) -> dict[str, Any]:
    """``--factory-kwargs``: a JSON object."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise UsageError("--factory-kwargs is nested too deeply") from None
    except ValueError as error:  # JSONDecodeError, and integers beyond Python's digit limit
        raise UsageError(f"--factory-kwargs is not valid JSON: {_one_line(error)}") from None
    if not isinstance(value, dict):
        raise UsageError("--factory-kwargs must be a JSON object, e.g. '{\"num_classes\": 10}'")
    return value


def parse_shape(text: str) -> tuple[int, ...]:
    """``--input-shape 3,224,224``: comma-separated non-negative ints, without the batch dimension."""
    parts = [p.strip() for p in text.split(",")]
    if parts and parts[-1] == "":
        parts.pop()  # allow a trailing comma, e.g. "16,"
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        shape = ()
    if not shape or any(d < 0 for d in shape):
        raise UsageError(f"invalid --input-shape {text!r}: expected comma-separated non-negative integers")
    elements = 1
    for size in shape:
        elements *= size
    if elements > MAX_ELEMENTS:  # refused here, as a usage error, before any model code runs
        raise UsageError(
            f"invalid --input-shape {text[:80]!r}: {elements:.3g} elements, more than a tensor can hold "
            f"({MAX_ELEMENTS})"
        )
    return shape


def parse_dtype(text: str) -> torch.dtype:
    """``--dtype float16`` (or ``torch.float16``)."""
    import torch

    name = text.removeprefix("torch.")
    value = getattr(torch, name, None)
    if not isinstance(value, torch.dtype):
        raise UsageError(f"invalid --dtype {text!r}: expected a torch dtype name such as float32 or int64")
    return value


def parse_device(text: str, *, allowed: Sequence[str] | None = None) -> torch.device:
    """``--device cpu|cuda:N|mps``: checked for availability before anything runs."""
    import torch

    try:
        device = torch.device(text)
    except (RuntimeError, ValueError):
        raise UsageError(f"invalid --device {text!r}") from None
    if allowed is not None and device.type not in allowed:
        raise UsageError(f"--device {text!r} is not supported here; use one of: {', '.join(allowed)}")
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise UsageError(f"--device {text!r}: CUDA is not available")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise UsageError(f"--device {text!r}: only {torch.cuda.device_count()} CUDA device(s)")
    if device.type == "mps" and (not torch.backends.mps.is_available() or (device.index or 0) > 0):
        raise UsageError(f"--device {text!r}: MPS is not available")
    return device


@dataclass(frozen=True)
class InputSpec:
    """Generated-input options: one shape per positional input, optional dtypes and device."""

    shapes: list[tuple[int, ...]]
    dtypes: list[torch.dtype] | None
    device: torch.device | None

    def api_shape(self) -> tuple[int, ...] | list[tuple[int, ...]]:
        """The ``input_shape`` argument of ``crawl_module``/``summary``."""
        return self.shapes[0] if len(self.shapes) == 1 else list(self.shapes)


def input_spec(
    target: Target,
    shapes: list[str] | None,
    dtypes: list[str] | None,
    device: str | None,
    **device_rules: Any,
) -> InputSpec:
    """Combine ``--input-shape``/``--dtype``/``--device`` with the target's default shape."""
    if shapes:
        parsed = [parse_shape(s) for s in shapes]
    elif target.default_shape is not None:
        parsed = [target.default_shape]
    else:
        raise UsageError(
            f"--input-shape is required for target {target.spec!r} (e.g. --input-shape 3,224,224)"
        )
    parsed_dtypes = [parse_dtype(d) for d in dtypes] if dtypes else None
    if parsed_dtypes is not None:
        if len(parsed_dtypes) == 1:
            parsed_dtypes = parsed_dtypes * len(parsed)
        elif len(parsed_dtypes) != len(parsed):
            raise UsageError(
                f"got {len(parsed_dtypes)} --dtype values for {len(parsed)} --input-shape values"
            )
    return InputSpec(parsed, parsed_dtypes, parse_device(device, **device_rules) if device else None)


def generate(model: nn.Module, spec: InputSpec) -> tuple[torch.Tensor, ...]:
    """The deterministic inputs the analysis would generate (analysis.md 3) for timing and FLOPs."""
    from torchscan.analysis.crawl.inputs import default_placement, generate_inputs

    dtype, device = default_placement(model)
    dtypes = spec.dtypes if spec.dtypes is not None else [dtype] * len(spec.shapes)
    return generate_inputs(spec.shapes, dtypes, spec.device if spec.device is not None else device)


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
