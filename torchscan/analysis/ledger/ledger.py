"""The storage ledger of ``measure_memory`` (memory.md): which storages live, how big, in what role.

One :class:`StorageLedger` observes one workload call. Its dispatch mode sees every operator: the
storages of its outputs that it has not seen are *created* by the workload, the unknown storages of
its inputs were alive before the call (or were made outside the mode: ``untracked_storage``). A weak
reference to each untyped storage tells when it dies; its size is ``nbytes()``, never its values,
so CPU, CUDA, meta and fake tensors are observed alike.

Each storage has one :class:`StorageRecord`: the sample at which it became live (0 for storages
alive before the call), the sample from which it is gone, and its category. A category is decided by
the storage's roles, in the priority order of memory.md 2: parameter, buffer, gradient, optimizer
state, saved activation, input, temporary. A storage alive before the call is never an activation
(it is what the workload was given), and a storage the workload creates is never an input; a created
storage starts as a temporary until a role claims it (saved for backward, accumulated as a
parameter's gradient, kept in an optimizer's state). Because a category is the storage's whole-life
category, the report is built after the call from the records (:mod:`torchscan.analysis.ledger.build`).

A *sample* is taken after each operator returns (an operator boundary); sample 0 is the start.
A higher-order operator (:mod:`torchscan.analysis.dispatch.higher_order`) is one boundary when it returns;
the operators its callables run are boundaries of their own for ``cond``, ``while_loop`` and the
other transparent ones, while any other (``flex_attention``) runs unobserved inside: the storages it
makes and frees before returning are not seen, and :attr:`StorageLedger.opaque` names it.
"""

from __future__ import annotations

import functools
import gc
import threading
import weakref
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn
from torch.nn.parameter import is_lazy
from torch.utils._python_dispatch import TorchDispatchMode

from torchscan.analysis.dispatch import higher_order
from torchscan.analysis.dispatch.dynamo_guard import DYNAMO, MODULES, guard, unguard
from torchscan.analysis.dispatch.phases import PhaseTally, current_phase
from torchscan.analysis.ledger.calls import CallStack
from torchscan.formulas.tensors import SEQUENCES as _SEQUENCES

PARAMETERS, BUFFERS, GRADIENTS, OPTIMIZER_STATE, ACTIVATIONS, TEMPORARIES, INPUTS = range(7)
"""Category indices, in the report order of ``memory_schema.CATEGORIES``."""
# Lower rank wins when a storage has several roles (memory.md 2).
_RANK = {
    PARAMETERS: 0,
    BUFFERS: 1,
    GRADIENTS: 2,
    OPTIMIZER_STATE: 3,
    ACTIVATIONS: 4,
    INPUTS: 5,
    TEMPORARIES: 6,
}

_top_saved_hooks = getattr(torch._C._autograd, "_top_saved_tensors_default_hooks", None)
_CHECKPOINT_MODULE = "torch.utils.checkpoint"
# Operators whose output sizes depend on input values (nonzero, masked_select, unique, ...): on meta
# or fake tensors the sizes they produce are not those of a real run.
_DATA_DEPENDENT_TAGS = tuple(
    tag for tag in (getattr(torch.Tag, "dynamic_output_shape", None),) if tag is not None
)


class StorageRecord:
    """One storage's life in the ledger (a resized storage gets a new record from the resize on)."""

    __slots__ = ("call", "category", "created", "freed", "nbytes", "preexisting", "ref", "saved")

    def __init__(self, nbytes: int, created: int, category: int, call: int, preexisting: bool) -> None:
        self.nbytes = nbytes
        self.created = created  # first sample at which it is live (0: alive before the call)
        self.freed: int | None = None  # first sample at which it is gone (None: alive at the end)
        self.category = category
        self.call = call  # innermost module call open when it was created (-1: none)
        self.preexisting = preexisting
        self.saved = False  # packed by autograd's saved-tensor hooks
        self.ref: Any = None  # the weak reference whose callback closes the record


def _plain_types() -> tuple[type, ...]:
    """Tensor types whose storage is the real one: plain tensors, parameters and fake tensors."""
    types: list[type] = [torch.Tensor, nn.Parameter]
    try:
        from torch._subclasses.fake_tensor import FakeTensor
    except ImportError:  # pragma: no cover - every supported release has it
        return tuple(types)
    return (*types, FakeTensor)


def _snapshot(plain: tuple[type, ...]) -> dict[int, Any]:
    """Weak references to the storages of every tensor the garbage collector can reach now.

    This is how a storage the workload reads but the mode never saw created is told apart: alive
    before the call (an input, a parameter) or made during it outside the dispatch mode
    (``untracked_storage``). Tensors only C++ holds (say, saved tensors of a graph built before
    the call) are not reachable here, so they are reported as untracked: a lower bound, never hidden.
    Only the ``plain`` types matter (the ledger reports subclasses without reading their storage);
    ``type()`` rather than ``isinstance`` also avoids objects that warn when their class is read.
    """
    wanted = frozenset(plain)
    found: dict[int, Any] = {}
    for obj in gc.get_objects():
        if type(obj) not in wanted:
            continue
        try:
            storage = obj.untyped_storage()
        except (RuntimeError, NotImplementedError, TypeError, ValueError):  # sparse layouts have none
            continue
        found[id(storage)] = weakref.ref(storage)
    return found


class StorageLedger(higher_order.HigherOrderSupport, TorchDispatchMode):
    """Records storages created, read, saved and freed during one workload call; see the module doc.

    Enter with ``with ledger:`` (the dispatch mode) after :meth:`start`; always call :meth:`stop`
    (in a ``finally``) to remove every hook, also after the workload raised.
    """

    def __init__(self, modules: list[nn.Module] | None) -> None:
        super().__init__()
        self.records: list[StorageRecord] = []
        self.live: dict[int, StorageRecord] = {}
        self.phases: list[int | None] = [None]  # phase of each sample (sample 0: before any operator)
        self.sample_calls: list[int] = [-1]  # innermost open module call of each sample
        self.event = 0  # the last sample taken
        self.dtypes: set[str] = set()
        self.devices: set[str] = set()
        self.fake = False
        self.subclasses: set[str] = set()
        self.data_dependent: set[str] = set()
        self.opaque: set[str] = set()  # higher-order operators run without observing their inside
        self.untracked = 0  # storages read that were neither seen created nor alive before the call
        self.hidden_saves = False  # saved-tensor hooks other than ours or checkpoint's were on top
        self.opaque_saves = False  # an outer saved-tensor hook packed into something not a tensor
        self.tally = PhaseTally()
        self.calls = CallStack(modules, self._on_root)
        self.calls.clock = lambda: self.event
        self._plain = _plain_types()
        self._pre: dict[int, Any] = {}
        self._unguarded = False
        self._params: list[nn.Parameter] = []
        self._tracked: set[int] = set()
        self._handles: list[Any] = []
        self._saved_hooks: Any = None
        self._outer_hooks: Any = None
        self._closed = False
        self._thread = threading.get_ident()
        self._kinds: dict[Any, int] = {}
        self._internal = 0  # > 0 while the ledger itself runs an operator (not the workload's)

    # --- lifetime -----------------------------------------------------------------------------

    def start(self) -> None:
        """Snapshot live storages, register known roots' tensors and install every hook."""
        from torch.optim import optimizer as optim_module

        self._thread = threading.get_ident()
        self._pre = _snapshot(self._plain)
        for root in self.calls.roots:
            self._register_module(root)
        self.tally.install()
        self._unguarded = unguard(self)  # analysis/dispatch/dynamo_guard.py
        self._handles.append(optim_module.register_optimizer_step_pre_hook(self._step_hook))
        self._handles.append(optim_module.register_optimizer_step_post_hook(self._step_hook))
        self.calls.install()
        self._outer_hooks = _top_saved_hooks(True) if _top_saved_hooks is not None else None
        hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        hooks.__enter__()  # raises when the caller disabled saved-tensor hooks: nothing to pop then
        self._saved_hooks = hooks

    def stop(self) -> None:
        """Remove every hook (idempotent), note the final gradients and optimizer state, close refs."""
        if self._saved_hooks is not None:
            hooks, self._saved_hooks = self._saved_hooks, None
            hooks.__exit__(None, None, None)
        self.calls.remove()
        self.tally.remove()
        self._unguarded = guard(self)
        if not self._closed:
            # Parameters made during the call (a lazy module's, a replaced one) are parameters for
            # their whole life; gradients assigned without accumulation (``p.grad = g``) are gradients.
            for root in self.calls.roots:
                self._register_module(root)
            for param in self._params:
                if param.grad is not None:
                    self._claim(param.grad, GRADIENTS)
        handles, self._handles = self._handles, []
        for handle in handles:
            handle.remove()
        self._closed = True
        self._pre = {}
        for record in self.live.values():
            record.ref = None
        self.live = {}

    # --- roles --------------------------------------------------------------------------------

    def _on_root(self, root: nn.Module) -> None:
        """A module tree first called during the workload: its tensors were alive before the call."""
        self._register_module(root)

    def _register_module(self, root: nn.Module) -> None:
        for module in root.modules():
            for param in module._parameters.values():
                # A lazy module's parameter has no storage yet: it is seen when materialised.
                if param is None or id(param) in self._tracked or is_lazy(param):
                    continue
                self._tracked.add(id(param))
                self._claim(param, PARAMETERS)
                self._params.append(param)
                if param.grad is not None:
                    self._claim(param.grad, GRADIENTS)
                if param.requires_grad and hasattr(param, "register_post_accumulate_grad_hook"):
                    self._handles.append(param.register_post_accumulate_grad_hook(self._accumulated))
            for buffer in module._buffers.values():
                if buffer is not None:
                    self._claim(buffer, BUFFERS)

    def _accumulated(self, param: nn.Parameter) -> None:
        if param.grad is not None:
            self._claim(param.grad, GRADIENTS)

    def _step_hook(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        """Before and after ``Optimizer.step`` on this thread: its parameters and state tensors."""
        if threading.get_ident() != self._thread:
            return
        for group in optimizer.param_groups:
            for param in group["params"]:
                if isinstance(param, torch.Tensor):
                    self._claim(param, PARAMETERS)
                    if param.grad is not None:
                        self._claim(param.grad, GRADIENTS)
        for state in optimizer.state.values():
            values: Iterable[Any] = state.values() if isinstance(state, dict) else ()
            for value in values:
                if isinstance(value, torch.Tensor):
                    self._claim(value, OPTIMIZER_STATE)

    def _pack(self, tensor: torch.Tensor) -> Any:
        """Saved-tensor pack hook: mark the storage saved; delegate to a caller's outer hooks."""
        if self._outer_hooks is None:
            self._claim(tensor, ACTIVATIONS)
            # Not the tensor itself: a saved output would then hold its own grad_fn through the
            # hook, a reference cycle through C++ that no collector frees when backward never runs.
            # A detached alias keeps the same storage alive and autograd restores the metadata on
            # unpack. Its ``aten.detach`` is not an operator boundary of the workload.
            self._internal += 1
            try:
                return tensor.detach()
            finally:
                self._internal -= 1
        packed = self._outer_hooks[0](tensor)
        if isinstance(packed, torch.Tensor):
            self._claim(packed, ACTIVATIONS)
        else:
            self.opaque_saves = True
        return packed

    def _unpack(self, packed: Any) -> Any:
        return packed if self._outer_hooks is None else self._outer_hooks[1](packed)

    def _claim(self, tensor: torch.Tensor, category: int) -> None:
        """Give ``tensor``'s storage a role; the higher-priority role wins (memory.md 2)."""
        record = self._see(tensor, output=False)
        if record is None:
            return
        if category == ACTIVATIONS:
            record.saved = True
            if record.preexisting:  # what the workload was given is not an activation
                return
        if _RANK[category] < _RANK[record.category]:
            record.category = category

    # --- observation --------------------------------------------------------------------------

    def _see(self, tensor: torch.Tensor, *, output: bool, created: int | None = None) -> StorageRecord | None:
        """The record of ``tensor``'s storage, created on first sight (live from sample ``created``)."""
        if type(tensor) not in self._plain:
            if not is_lazy(tensor):  # a lazy parameter has no storage until it is materialised
                self.subclasses.add(type(tensor).__name__)
            return None
        if tensor.layout is not torch.strided:  # sparse and other layouts have no single storage
            self.subclasses.add(f"{str(tensor.layout).removeprefix('torch.')} layout")
            return None
        storage = tensor.untyped_storage()
        key = id(storage)
        record = self.live.get(key)
        if record is not None:
            if output and record.nbytes != self._size(storage):  # resized in place: a new size from now
                self._close(record, self.event)
                self.live.pop(key, None)
                record = self._open(storage, key, self.event, record.category, False)
            return record
        if self._closed:
            return None
        if tensor.is_nested:  # first sight only: the buffer counts, its size/stride/offset tensors hide
            self.subclasses.add("nested tensor metadata")
        known = self._pre.get(key)
        if known is not None and known() is storage:
            record = self._open(storage, key, 0, INPUTS, True)
        else:
            first = max(self.event, 1) if created is None else created
            record = self._open(storage, key, first, TEMPORARIES, False)
            # An empty storage made outside the mode (``torch.tensor([], device="meta")`` is not
            # dispatched) hides no bytes: nothing to flag.
            if not output and record.nbytes:
                self.untracked += 1
        self.dtypes.add(str(tensor.dtype).removeprefix("torch."))
        if tensor.dim() or tensor.device.type != "cpu":  # CPU scalars mix with every device
            self.devices.add(str(tensor.device))
        if len(self._plain) > 2 and isinstance(tensor, self._plain[2]):
            self.fake = True
        return record

    def _open(self, storage: Any, key: int, created: int, category: int, preexisting: bool) -> StorageRecord:
        record = StorageRecord(self._size(storage), created, category, self.calls.current, preexisting)
        record.ref = weakref.ref(storage, functools.partial(self._freed, key))
        self.records.append(record)
        self.live[key] = record
        return record

    def _size(self, storage: Any) -> int:
        """``nbytes()`` as an int; a size that depends on values (an unbacked symbol) counts 0, flagged."""
        size = storage.nbytes()
        if type(size) is int:
            return size
        try:
            return int(size)  # a fake tensor's symbolic size with a known hint
        except (RuntimeError, TypeError, ValueError):  # data-dependent: no number to count
            self.data_dependent.add("symbolic storage size")
            return 0

    def _close(self, record: StorageRecord, gone: int) -> None:
        record.freed = gone
        record.ref = None

    def _freed(self, key: int, _ref: Any = None) -> None:
        """Weak-reference callback: the storage died after sample ``event``, so it is gone from the next."""
        record = self.live.pop(key, None)
        if record is not None and not self._closed:
            self._close(record, self.event + 1)

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if self._unguarded and DYNAMO in MODULES:
            self._unguarded = guard(self)  # Dynamo was loaded during the workload: guarded from now on
        kwargs = kwargs or {}
        if self._internal:
            return func(*args, **kwargs)
        kind = self._kinds.get(func)
        if kind is None:
            kind = self._kinds[func] = _kind(func)
        if kind == _SKIPPED:  # markers and metadata queries: no storage, no operator boundary
            return func(*args, **kwargs)
        if kind == _DATA_DEPENDENT and self._on_meta(args):
            self.data_dependent.add(str(func.overloadpacket.__name__))
        if kind == _LIFT:
            # ``torch.tensor(...)`` builds its tensor outside dispatch, then lifts it (not on every
            # device: ``torch.tensor(x, device="meta")`` is never lifted). Not an operator boundary of
            # the program, so CPU and meta runs keep the same events: the lifted output (the same
            # storage, or a fake tensor's own) is live from the next boundary on.
            out = func(*args, **kwargs)
            for value in _tensors((out,), ()):
                self._see(value, output=True, created=self.event + 1)
            return out
        out = func(*args, **kwargs) if kind != _HIGHER_ORDER else self._higher_order(func, args, kwargs)
        self.event += 1
        self.phases.append(current_phase(self.tally.optimizer_depth))
        self.sample_calls.append(self.calls.current if threading.get_ident() == self._thread else -1)
        self._check_saved_hooks()
        for value in _tensors(args, kwargs.values()):
            self._see(value, output=False)
        for value in _tensors((out,), ()):
            self._see(value, output=True)
        return out

    def _higher_order(self, func: Any, args: Any, kwargs: Any) -> Any:
        """Run a higher-order operator: its callables observed when transparent, else as one call."""
        name = higher_order.operator_name(func)
        if name in higher_order.TRANSPARENT:
            return higher_order.run_observed(self, func, args, kwargs)
        self.opaque.add(name)
        return func(*args, **kwargs)

    def _on_meta(self, args: Any) -> bool:
        """Whether a value-dependent operator runs on meta or fake tensors: its sizes are not real ones."""
        fake = self._plain[2:]
        return any(value.device.type == "meta" or isinstance(value, fake) for value in _tensors(args, ()))

    def _check_saved_hooks(self) -> None:
        """Saved-tensor hooks the workload pushed above ours hide what autograd saves from the ledger.

        ``torch.utils.checkpoint``'s own hooks are expected: the tensors they see are not kept.
        """
        if _top_saved_hooks is None or self.hidden_saves:
            return
        top = _top_saved_hooks(True)
        # Bound methods compare equal, not identical.
        if (
            top is not None
            and top[0] != self._pack
            and getattr(top[0], "__module__", None) != _CHECKPOINT_MODULE
        ):
            self.hidden_saves = True


_PLAIN, _SKIPPED, _DATA_DEPENDENT, _LIFT, _HIGHER_ORDER = range(5)
# ``profiler``: record_function markers; ``prim``: metadata queries (a fake tensor's ``.device``).
_SKIPPED_NAMESPACES = frozenset(("profiler", "prim"))
_LIFT_NAMES = frozenset(("lift", "lift_fresh", "lift_fresh_copy"))


def _kind(func: Any) -> int:
    """How the ledger treats an operator (computed once per overload)."""
    if higher_order.is_higher_order(func):
        return _HIGHER_ORDER
    if getattr(func, "namespace", None) in _SKIPPED_NAMESPACES:
        return _SKIPPED
    if func.overloadpacket.__name__ in _LIFT_NAMES:
        return _LIFT
    if any(tag in func.tags for tag in _DATA_DEPENDENT_TAGS):
        return _DATA_DEPENDENT
    return _PLAIN


def _tensors(args: Iterable[Any], more: Iterable[Any]) -> list[torch.Tensor]:
    """The tensors among operator arguments (one level of lists and tuples, as aten signatures have)."""
    found: list[torch.Tensor] = []
    for group in (args, more):
        for value in group:
            if isinstance(value, torch.Tensor):
                found.append(value)
            elif isinstance(value, _SEQUENCES):
                found.extend(item for item in value if isinstance(item, torch.Tensor))
    return found
