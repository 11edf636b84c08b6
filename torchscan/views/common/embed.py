"""Compact, lossless encoding of the explorer's data object (render.md 3.9, issue 15).

The explorer embeds its whole view model once. Written out plainly, a BERT-base model repeats the
same keys and the same small results thousands of times, so the page carries this encoding
instead, which its own script decodes on load (``decode`` below is the reference the tests use):

- an object becomes ``[k, v1, v2, ...]`` where ``k >= 0`` indexes ``keys``, the list of key
  tuples in order of first use (key order is preserved);
- a list becomes ``[-1, item1, ...]``;
- ``[-2, i]`` repeats the ``i``-th value already decoded: while decoding, every string and every
  object or list written out in full is appended to a table, children before their parent.

Numbers, booleans and ``None`` stay as they are. ``decode(encode(x)) == x`` for every JSON value,
including key order. Nothing is dropped: this is a shorter spelling, not a summary.
"""

from __future__ import annotations

import json
from typing import Any

FORMAT = "torchscan-embed-1"


def _key(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def canonical(value: Any, cache: dict[int, str]) -> str:
    """Canonical JSON text of a value (key order kept), memoised by object identity."""
    ident = id(value)
    if ident in cache:
        return cache[ident]
    if isinstance(value, dict):
        text = "{" + ",".join(f"{_key(k)}:{canonical(v, cache)}" for k, v in value.items()) + "}"
    elif isinstance(value, list):
        text = "[" + ",".join(canonical(v, cache) for v in value) + "]"
    else:
        text = _key(value)
    if isinstance(value, (dict, list)):
        cache[ident] = text
    return text


def encode(data: Any) -> dict[str, Any]:
    """The compact form ``{"format", "keys", "value"}`` of a JSON value."""
    keys: list[list[str]] = []
    key_ids: dict[tuple[str, ...], int] = {}
    seen: dict[str, int] = {}
    size = 0
    texts: dict[int, str] = {}
    keep: list[Any] = []  # keeps memoised objects alive so their ids stay unique

    def visit(value: Any) -> Any:
        nonlocal size
        if isinstance(value, (str, dict, list)):
            if isinstance(value, (dict, list)):
                keep.append(value)
            text = canonical(value, texts)
            # A reference pays off only when it is shorter than writing the value out again.
            if text in seen and len(text) > len(str(seen[text])) + 5:
                return [-2, seen[text]]
            if isinstance(value, dict):
                names = tuple(value)
                if names not in key_ids:
                    key_ids[names] = len(keys)
                    keys.append(list(names))
                out: Any = [key_ids[names], *(visit(item) for item in value.values())]
            elif isinstance(value, list):
                out = [-1, *(visit(item) for item in value)]
            else:
                out = value
            seen.setdefault(text, size)
            size += 1
            return out
        return value

    return {"format": FORMAT, "keys": keys, "value": visit(data)}


def decode(packed: Any) -> Any:
    """Inverse of ``encode``; ``ValueError`` on anything that is not its output."""
    if not isinstance(packed, dict) or packed.get("format") != FORMAT:
        raise ValueError(f"embedded data must be in the {FORMAT} format")
    keys = packed["keys"]
    table: list[Any] = []

    def visit(value: Any) -> Any:
        if isinstance(value, str):
            table.append(value)
            return value
        if not isinstance(value, list):
            return value
        tag = value[0]
        if tag == -2:
            return table[value[1]]
        if tag == -1:
            out: Any = [visit(item) for item in value[1:]]
        else:
            names = keys[tag]
            out = dict(zip(names, (visit(item) for item in value[1:]), strict=True))
        table.append(out)
        return out

    return visit(packed["value"])
