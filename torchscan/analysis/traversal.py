"""Walking a module tree without recursion: shared by input placement and the call recorder.

It sits below ``inputs.py`` and ``hooks.py`` (it imports neither), so the recorder can describe
inputs and input generation can find the model's first parameter without an import cycle.
"""

from __future__ import annotations

from collections.abc import Iterable

from torch import nn


def walk_modules(root: nn.Module) -> list[tuple[str, nn.Module]]:
    """``root.named_modules()`` in the same order, without recursion.

    PyTorch's walk recurses once per nesting level, so a model nested ~1,000 modules deep raised
    ``RecursionError`` before its forward even ran. Pre-order with an explicit stack; a module
    reachable twice keeps its first path (``remove_duplicate=True``), compared by identity so a
    module overriding ``__eq__``/``__hash__`` is still walked once.
    """
    walked: list[tuple[str, nn.Module]] = []
    seen: set[int] = set()
    stack: list[tuple[str, nn.Module]] = [("", root)]
    while stack:
        path, module = stack.pop()
        if id(module) in seen:
            continue
        seen.add(id(module))
        walked.append((path, module))
        prefix = f"{path}." if path else ""
        children = [(prefix + name, child) for name, child in module._modules.items() if child is not None]
        stack.extend(reversed(children))
    return walked


def nesting_depth(paths: Iterable[str]) -> int:
    """The deepest module's nesting level (the root is 0), from dotted module paths."""
    return max((path.count(".") + 1 for path in paths if path), default=0)
