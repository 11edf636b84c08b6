"""The module labels of ``measure_flops``'s ``by_module``: a light module tracker (issue #24).

It keeps exactly the labels PyTorch's ``torch.utils.module_tracker.ModuleTracker`` keeps (a root
module is named after its class, each child ``<parent label>.<attribute>``, renamed when its parent is
first seen; ``parents`` is a set of labels with ``"Global"``; backward hooks re-enter and leave labels;
the autograd engine's end-of-backward callback resets it), with three differences:

- labels are looked up in plain dicts keyed by ``id(module)`` (entries dropped by a weakref callback
  when a module dies, as ``ModuleTracker``'s weak dictionaries do), and no closure is built per call;
- tensors needing gradients are found without a pytree walk when a call's inputs or output are plain
  tensors (any other value takes PyTorch's ``tree_flatten``, as before);
- only forwards of the thread that entered the tracker are recorded (issue #20, item 1), and the
  backward hooks wait for the first gradient instead of all of them when a leaf tensor is among the
  tensors: PyTorch's mode ``"all"`` asks the engine about each tensor's node, which it refuses for a
  leaf during ``torch.autograd.grad`` (gradient penalties, input gradients, ``jacrev`` on an input).
  Only the backward attribution of ``by_module`` can move slightly then, never a count.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.autograd.graph import register_multi_grad_hook
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from torch.utils._pytree import tree_flatten

logger = logging.getLogger(__name__)

_LEAVES = (type(None), int, float, bool, str)


def _grad_tensors(value: Any) -> list[torch.Tensor]:
    """The tensors of ``value`` (its pytree leaves) that require gradients."""
    tensor = torch.Tensor
    if isinstance(value, tensor):
        return [value] if value.requires_grad else []
    if type(value) is tuple:
        found = []
        for item in value:
            if isinstance(item, tensor):
                if item.requires_grad:
                    found.append(item)
            elif type(item) not in _LEAVES:
                break  # a container or another pytree node: walk the whole value below
        else:
            return found
    leaves = tree_flatten(value)[0]
    return [t for t in leaves if isinstance(t, tensor) and t.requires_grad]


class ModuleLabels:
    """Tracks which module labels are running (``parents``), forward and backward; a context manager."""

    def __init__(self) -> None:
        self.parents: set[str] = {"Global"}
        self._known: dict[int, str] = {}
        self._seen: set[int] = set()
        self._refs: dict[int, weakref.ref[nn.Module]] = {}
        self._has_callback = False
        self._hooks: list[Any] = []
        self._handles: list[Any] = []
        self._thread = threading.get_ident()

    def __enter__(self) -> ModuleLabels:
        self._thread = threading.get_ident()
        self._handles = [
            register_module_forward_pre_hook(self._pre_hook),
            register_module_forward_hook(self._post_hook),
        ]
        return self

    def __exit__(self, *exc_info: Any) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        for hook in self._hooks:
            hook.remove()
        self._hooks.clear()

    # --- labels --------------------------------------------------------------------------------

    def _watch(self, module: nn.Module) -> None:
        key = id(module)
        if key not in self._refs:
            self._refs[key] = weakref.ref(module, self._forgetter(key))

    def _forgetter(self, key: int) -> Callable[[Any], None]:
        return lambda _ref: self._forget(key)

    def _forget(self, key: int) -> None:
        self._refs.pop(key, None)
        self._known.pop(key, None)
        self._seen.discard(key)

    def label(self, module: nn.Module) -> str:
        """The module's label, naming its children on first sight (ModuleTracker's convention)."""
        key = id(module)
        if key in self._seen:
            return self._known[key]
        if key not in self._known:
            self._watch(module)
            self._known[key] = type(module).__name__
        name = self._known[key]
        for child_name, child in module.named_children():
            self._watch(child)
            self._known[id(child)] = f"{name}.{child_name}"
            self.label(child)
        self._seen.add(key)
        return name

    # --- entering and leaving ------------------------------------------------------------------

    def _enter(self, name: str, backward: bool) -> None:
        if backward and not self._has_callback:
            torch.autograd.Variable._execution_engine.queue_callback(self._reset)
            self._has_callback = True
        if name in self.parents:
            logger.info("Module %s entered again during %s", name, "backward" if backward else "forward")
        self.parents.add(name)

    def _leave(self, name: str, backward: bool) -> None:
        if name in self.parents:
            self.parents.remove(name)
        else:
            phase = "backward" if backward else "forward"
            logger.info("Module %s left without entering during %s", name, phase)

    def _reset(self) -> None:
        self.parents = {"Global"}
        self._has_callback = False

    def _on_gradients(self, tensors: list[torch.Tensor], fn: Callable[..., None]) -> None:
        leaf = any(t.grad_fn is None for t in tensors)
        self._hooks.append(register_multi_grad_hook(tensors, fn, mode="any" if leaf else "all"))

    def _pre_hook(self, module: nn.Module, args: Any) -> None:
        if threading.get_ident() != self._thread:
            return
        name = self.label(module)
        self._enter(name, False)
        tensors = _grad_tensors(args)
        if tensors:
            self._on_gradients(tensors, lambda *_: self._leave(name, True))

    def _post_hook(self, module: nn.Module, args: Any, output: Any) -> None:
        if threading.get_ident() != self._thread:
            return
        name = self.label(module)
        self._leave(name, False)
        tensors = _grad_tensors(output)
        if tensors:
            self._on_gradients(tensors, lambda *_: self._enter(name, True))
