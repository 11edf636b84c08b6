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

``by_module`` itself is kept per label interval rather than per operator (issue #36): the observer keeps
one running sum of the FLOPs it attributed (``attributed``), each label remembers that sum when it
enters ``parents`` and adds the difference when it leaves (or when the end-of-backward reset drops
it). Every operator's FLOPs thus reach exactly the labels in ``parents`` when it was dispatched, as a
loop over ``parents`` at every operator did, without that loop.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, KeysView
from threading import get_ident
from typing import Any

import torch
from torch import nn
from torch.autograd.graph import register_multi_grad_hook
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from torch.utils._pytree import tree_flatten

logger = logging.getLogger(__name__)

_LEAVES = (type(None), int, float, bool, str)
_TENSOR = torch.Tensor


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


class RunningTotal:
    """What a label interval reads: the running sum of the FLOPs attributed so far (``attributed``)."""

    attributed: int = 0


class ModuleLabels:
    """Tracks which module labels are running (``parents``), forward and backward; a context manager.

    ``tally`` (optional) is the object whose ``attributed`` sum the intervals read (the operator
    observer); :meth:`flops_by_label` gives each label's share of it.
    """

    def __init__(self, tally: Any = None) -> None:
        self.tally: Any = tally if tally is not None else RunningTotal()
        # The running labels, each with ``attributed`` when it entered: ``parents`` is its key set.
        self._since: dict[str, int] = {"Global": 0}
        self._closed: dict[str, int] = {}  # label -> FLOPs of its finished intervals
        self._known: dict[int, str] = {}
        self._labels: dict[int, str] = {}  # modules whose children are named: their final label
        self._refs: dict[int, weakref.ref[nn.Module]] = {}
        self._ref_keys: dict[int, int] = {}  # id of a ref -> id of its module
        self._on_death = self._died  # one bound method for every ref's callback
        self._has_callback = False
        self._hooks: list[Any] = []
        self._handles: list[Any] = []
        self._thread = get_ident()

    @property
    def parents(self) -> KeysView[str]:
        """The running labels (``"Global"`` included unless a module of that name left it), as a set."""
        return self._since.keys()

    def __enter__(self) -> ModuleLabels:
        self._thread = get_ident()
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
            ref = weakref.ref(module, self._on_death)
            self._refs[key] = ref
            self._ref_keys[id(ref)] = key  # the ref lives in _refs until its module dies

    def _died(self, ref: weakref.ref[nn.Module]) -> None:
        key = self._ref_keys.pop(id(ref), None)
        if key is not None:
            self._forget(key)

    def _forget(self, key: int) -> None:
        self._refs.pop(key, None)
        self._known.pop(key, None)
        self._labels.pop(key, None)

    def label(self, module: nn.Module) -> str:
        """The module's label, naming its children on first sight (ModuleTracker's convention)."""
        key = id(module)
        labels = self._labels
        name = labels.get(key)
        if name is not None:
            return name
        known = self._known
        name = known.get(key)
        if name is None:
            self._watch(module)
            name = known[key] = type(module).__name__
        children = module._modules
        if children:
            # named_children()'s walk without its generator: each child once, None entries skipped.
            seen: set[nn.Module] = set()
            for child_name, child in children.items():
                if child is None or child in seen:
                    continue
                seen.add(child)
                self._watch(child)
                child_key, child_label = id(child), f"{name}.{child_name}"
                known[child_key] = child_label
                if child_key in labels:
                    labels[child_key] = child_label  # renamed; its own children keep their labels
                else:
                    self.label(child)
        labels[key] = name
        return name

    # --- FLOPs per label -----------------------------------------------------------------------

    def flops_by_label(self) -> dict[str, int]:
        """FLOPs per label (inclusive: every label running at an operator gets its FLOPs), running
        labels included up to now; only labels with FLOPs appear."""
        totals = dict(self._closed)
        now = self.tally.attributed
        for name, since in self._since.items():
            if now != since:
                totals[name] = totals.get(name, 0) + now - since
        return totals

    # --- entering and leaving ------------------------------------------------------------------

    def _enter(self, name: str, backward: bool) -> None:
        if backward and not self._has_callback:
            torch.autograd.Variable._execution_engine.queue_callback(self._reset)
            self._has_callback = True
        if name in self._since:
            logger.info("Module %s entered again during %s", name, "backward" if backward else "forward")
        else:
            self._since[name] = self.tally.attributed

    def _leave(self, name: str, backward: bool) -> None:
        since = self._since.pop(name, None)
        if since is None:
            logger.info(
                "Module %s left without entering during %s", name, "backward" if backward else "forward"
            )
            return
        flops = self.tally.attributed - since  # FLOPs attributed while the label ran
        if flops:
            self._closed[name] = self._closed.get(name, 0) + flops

    def _reset(self) -> None:
        for name in list(self._since):
            self._leave(name, True)
        self._since = {"Global": self.tally.attributed}
        self._has_callback = False

    def _on_gradients(self, tensors: list[torch.Tensor], fn: Callable[..., None]) -> None:
        leaf = any(t.grad_fn is None for t in tensors)
        self._hooks.append(register_multi_grad_hook(tensors, fn, mode="any" if leaf else "all"))

    # The two hooks run for every module call of the workload: the forward cases of _enter and
    # _leave and the plain-tensor case of _grad_tensors are inlined.

    def _pre_hook(self, module: nn.Module, args: Any) -> None:
        if get_ident() != self._thread:
            return
        name = self._labels.get(id(module)) or self.label(module)
        since = self._since
        if name in since:
            logger.info("Module %s entered again during %s", name, "forward")
        else:
            since[name] = self.tally.attributed
        if len(args) == 1 and type(args[0]) is _TENSOR and not args[0].requires_grad:
            return
        tensors = _grad_tensors(args)
        if tensors:
            self._on_gradients(tensors, lambda *_: self._leave(name, True))

    def _post_hook(self, module: nn.Module, args: Any, output: Any) -> None:
        if get_ident() != self._thread:
            return
        name = self._labels.get(id(module)) or self.label(module)
        since = self._since.pop(name, None)
        if since is None:
            logger.info("Module %s left without entering during %s", name, "forward")
        else:
            flops = self.tally.attributed - since
            if flops:
                self._closed[name] = self._closed.get(name, 0) + flops
        if type(output) is _TENSOR and not output.requires_grad:
            return
        tensors = _grad_tensors(output)
        if tensors:
            self._on_gradients(tensors, lambda *_: self._enter(name, True))
