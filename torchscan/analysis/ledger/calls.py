"""Module calls for the storage ledger: which call is innermost at each operator boundary.

Two process-global module hooks (cheap to install however deep the model) keep a stack of open
calls of the measuring thread only: global hooks also fire for other threads' forwards, which belong
to no report of this one. The post-hook is registered with ``always_call``, so a forward that raises
still closes its call. Paths follow ``LayerReport``: ``""`` is the (first) root, children are
dotted (``layer1.0.conv1``), names escaped by :func:`torchscan.report.names.report_name`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from torch import nn
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

from torchscan.analysis.traversal import walk_modules
from torchscan.report.names import report_name


class CallRecord:
    """One module call: identity, type, enclosing call and the samples it spans."""

    __slots__ = ("call_index", "end", "module_type", "parent", "path", "start")

    def __init__(self, path: str, call_index: int, module_type: str, parent: int, start: int) -> None:
        self.path = path
        self.call_index = call_index
        self.module_type = module_type
        self.parent = parent  # index of the enclosing call, -1 at the top
        self.start = start  # the sample live when the call began
        self.end = start  # the last sample inside the call (set when it returns)


class CallStack:
    """Records the calls of the given module trees (or of every module called, when ``None``).

    Several roots are named ``""`` (the first) and ``"[1]"``, ``"[2]"``, ... for the later ones,
    each prefixing its children's paths. With ``modules=None`` each module called that belongs to no
    known tree becomes a new root, and ``on_root`` is told (its tensors are then registered).
    """

    def __init__(self, modules: list[nn.Module] | None, on_root: Callable[[nn.Module], None]) -> None:
        self.roots: list[nn.Module] = []
        self.calls: list[CallRecord] = []
        self.stack: list[tuple[int, int]] = []  # (id(module), call) of open calls
        self.clock: Callable[[], int] = lambda: 0
        self._auto = modules is None
        self._on_root = on_root
        self._paths: dict[int, tuple[str, str]] = {}  # id(module) -> (path, type name)
        self._counts: dict[str, int] = {}
        self._handles: list[Any] = []
        self._thread = threading.get_ident()
        for module in modules or ():
            self._add_root(module)

    @property
    def current(self) -> int:
        """Index of the innermost open call, -1 outside every call."""
        return self.stack[-1][1] if self.stack else -1

    def _add_root(self, root: nn.Module) -> None:
        prefix = f"[{len(self.roots)}]" if self.roots else ""
        self.roots.append(root)
        for path, module in walk_modules(root):
            if id(module) not in self._paths:
                full = f"{prefix}.{path}" if prefix and path else (path or prefix)
                self._paths[id(module)] = (full, report_name(type(module).__name__))

    def install(self) -> None:
        """Install the two global hooks for the calling thread (call :meth:`remove` in a ``finally``)."""
        self._thread = threading.get_ident()
        self._handles.append(register_module_forward_pre_hook(self._pre_hook))
        try:
            self._handles.append(register_module_forward_hook(self._post_hook, always_call=True))
        except BaseException:
            self.remove()
            raise

    def remove(self) -> None:
        """Remove the hooks (idempotent); calls left open by an exception end at the last sample."""
        handles, self._handles = self._handles, []
        for handle in handles:
            handle.remove()
        while self.stack:
            self.calls[self.stack.pop()[1]].end = self.clock()

    def _pre_hook(self, module: nn.Module, args: Any) -> None:
        if threading.get_ident() != self._thread:
            return
        known = self._paths.get(id(module))
        if known is None:
            if not self._auto:
                return  # not part of the measured model: its work belongs to the enclosing call
            self._add_root(module)
            self._on_root(module)
            known = self._paths[id(module)]
        path, type_name = known
        index = self._counts.get(path, 0)
        self._counts[path] = index + 1
        self.calls.append(CallRecord(path, index, type_name, self.current, self.clock()))
        self.stack.append((id(module), len(self.calls) - 1))

    def _post_hook(self, module: nn.Module, args: Any, output: Any) -> None:
        if threading.get_ident() != self._thread or id(module) not in self._paths:
            return
        key = id(module)
        if not any(entry[0] == key for entry in self.stack):
            return  # entered before the hooks were installed
        while self.stack:  # also closes calls a raising child left open
            module_id, call = self.stack.pop()
            self.calls[call].end = self.clock()
            if module_id == key:
                break
