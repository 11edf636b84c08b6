"""Module-local token dependencies of native attention/Transformer calls (spec §16).

A token-dependency object says which input token positions *may* structurally influence each
position of the call's main activation output, at generic finite parameter values, within this call
only. It is not a gradient of particular weights, not the returned attention weights and not a
model-wide receptive field. Relations follow the small algebra of §16.3; classifying a mask is the
only step that reads tensor values, and it refuses unobservable (``meta``) masks instead of guessing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import torch

from torchscan.formulas.attention import (
    AttentionSpec,
    LayerSpec,
    NativeSpec,
    NormSpec,
    StackSpec,
    TransformerSpec,
)
from torchscan.formulas.registry import UnsupportedConfiguration
from torchscan.report.schema import ASSUMPTIONS_V1 as ASSUMPTIONS_V1
from torchscan.report.schema import TOKEN_METHOD as TOKEN_METHOD

Kind = Literal["all", "same_position", "prefix", "none"]


class UnsupportedTokenDependencies(UnsupportedConfiguration):
    """The token analysis cannot describe this call; the object becomes unavailable."""


@dataclass(frozen=True)
class Relation:
    """``(kind, n_out, n_in, first, limit)`` of §16.3; ``limit=None`` means "unset"."""

    kind: Kind
    n_out: int
    n_in: int
    first: int = 0
    limit: int | None = None

    @property
    def cap(self) -> int:
        return self.n_in if self.limit is None else self.limit

    @property
    def span(self) -> int:
        if self.kind == "none":
            return 0
        if self.kind == "all":
            return self.cap
        return min(self.n_out, self.cap)

    def to_json(self) -> dict[str, Any]:
        """Wire form: ``limit`` only when below the source length, ``first_position`` only when > 0."""
        entry: dict[str, Any] = {"kind": self.kind}
        if self.kind != "none":
            if self.limit is not None and self.limit < self.n_in:
                entry["limit"] = self.limit
            if self.first > 0:
                entry["first_position"] = self.first
        return entry


def local(n: int) -> Relation:
    """Each output position depends on the same input position only."""
    return Relation("same_position", n, n)


def none(n_out: int, n_in: int) -> Relation:
    """No dependency at all."""
    return Relation("none", n_out, n_in)


def _unsupported(reason: str) -> UnsupportedTokenDependencies:
    return UnsupportedTokenDependencies(reason)


def union(a: Relation, b: Relation) -> Relation:
    """Parallel paths or aliased arguments (§16.3); raises when the result is not representable."""
    if (a.n_out, a.n_in) != (b.n_out, b.n_in):
        raise _unsupported("a union of token relations needs equal lengths")
    if a.kind == "none":
        return b
    if b.kind == "none":
        return a
    first = min(a.first, b.first)
    if a.kind == b.kind:
        return Relation(a.kind, a.n_out, a.n_in, first, max(a.cap, b.cap))
    for x, y in ((a, b), (b, a)):
        if x.kind == "all" and x.cap >= y.span:
            return Relation("all", a.n_out, a.n_in, first, x.cap)
    for x, y in ((a, b), (b, a)):
        if x.kind == "same_position" and y.kind == "prefix" and a.n_in == a.n_out:
            return Relation("prefix", a.n_out, a.n_in, first, y.cap)
    raise _unsupported(f"the union of {a.kind} and {b.kind} relations is outside the relation algebra")


def compose(outer: Relation, inner: Relation) -> Relation:
    """``outer ∘ inner``: inner maps input → intermediate, outer intermediate → output (§16.3)."""
    if outer.n_in != inner.n_out:
        raise _unsupported("composed token relations need matching intermediate lengths")
    n_out, n_in = outer.n_out, inner.n_in
    if "none" in (outer.kind, inner.kind):
        return none(n_out, n_in)
    first = max(outer.first, inner.first)
    if outer.kind == "same_position":
        return Relation(inner.kind, n_out, n_in, first, inner.limit)
    if inner.kind == "same_position":
        return Relation(outer.kind, n_out, n_in, first, outer.limit)
    if inner.kind == "all":
        return Relation("all", n_out, n_in, first, inner.cap)
    if outer.kind == "all" and inner.kind == "prefix":
        return Relation("all", n_out, n_in, outer.first, min(outer.cap, inner.cap))
    if outer.kind == "prefix" and inner.kind == "prefix":
        return Relation("prefix", n_out, n_in, first, min(outer.cap, inner.cap))
    raise _unsupported(f"composing {outer.kind} after {inner.kind} is outside the relation algebra")


# --- masks (§16.4) ----------------------------------------------------------------------------


def _observable(mask: torch.Tensor, role: str) -> None:
    if mask.device.type == "meta":
        raise _unsupported(f"the {role} is on the meta device: an observable mask is required")


def _excluded(mask: torch.Tensor, role: str) -> torch.Tensor:
    """Boolean tensor of excluded entries (``True`` / ``-inf``); NaN and ``+inf`` are refused."""
    _observable(mask, role)
    if mask.dtype == torch.bool:
        return mask
    if not mask.dtype.is_floating_point:
        raise _unsupported(f"the {role} must be boolean or floating")
    if bool(torch.isnan(mask).any()):
        raise _unsupported(f"the {role} contains NaN")
    if bool(torch.isposinf(mask).any()):
        raise _unsupported(f"the {role} contains positive-infinity entries")
    return torch.isneginf(mask)


def classify_attention_mask(mask: torch.Tensor | None, causal: bool) -> Literal["all", "prefix"]:
    """``all`` (nothing excluded) or ``prefix`` (canonical causal); anything else is unsupported."""
    if mask is None:
        if causal:
            raise _unsupported("a causal hint without a mask needs an explicit canonical causal mask")
        return "all"
    excluded = _excluded(mask, "attention mask")
    rows, cols = excluded.shape[-2], excluded.shape[-1]
    canonical = torch.ones(rows, cols, dtype=torch.bool, device=excluded.device).triu(1)
    is_canonical = bool(torch.equal(excluded, canonical.expand_as(excluded)))
    if causal and not is_canonical:
        raise _unsupported("a causal hint requires the canonical causal mask")
    if not bool(excluded.any()):
        return "all"
    if is_canonical:
        return "prefix"
    raise _unsupported("only unmasked or canonical causal attention masks are supported")


def check_key_padding(mask: torch.Tensor | None) -> None:
    """A key-padding mask must exclude nothing (all ``False`` or finite values)."""
    if mask is not None and bool(_excluded(mask, "key padding mask").any()):
        raise _unsupported("a key padding mask that excludes keys is unsupported")


def attention_relations(spec: AttentionSpec) -> tuple[Relation, Relation, Relation]:
    """Relations of query (T→T), key (T→S) and value (T→S) for one attention call (§16.4)."""
    check_key_padding(spec.key_padding_mask)
    kind = classify_attention_mask(spec.attn_mask, spec.causal)
    t, s = spec.target, spec.source
    first = 1 if kind == "prefix" else 0
    value = Relation(kind, t, s)
    if s == 1:
        return none(t, t), none(t, s), value
    return Relation("same_position", t, t, first), Relation(kind, t, s, first), value


# --- layers, stacks, Transformer (§16.5) ------------------------------------------------------


def _check_norms(norms: tuple[NormSpec | None, ...]) -> None:
    if any(norm is not None and norm.width <= 1 for norm in norms):
        raise _unsupported("a width-one LayerNorm gives a constant output (not token-local)")


def _self_relation(spec: AttentionSpec) -> Relation:
    q, k, v = attention_relations(spec)
    return union(local(spec.target), union(q, union(k, v)))


def layer_relations(layer: LayerSpec) -> tuple[Relation, ...]:
    """Encoder layer: ``(src,)``; decoder layer: ``(tgt, memory)`` relations."""
    _check_norms(layer.norms)
    own = _self_relation(layer.attentions[0])
    if len(layer.attentions) == 1:
        return (own,)
    _, k, v = attention_relations(layer.attentions[1])
    return own, union(k, v)


def stack_relations(stack: StackSpec) -> tuple[Relation, ...]:
    """Compose the layers of a stack: encoder ``(src,)``, decoder ``(tgt, memory)``."""
    _check_norms((stack.final_norm,))
    first = stack.layers[0].attentions
    length = first[0].target
    if len(first) == 1:
        relation = local(length)
        for layer in stack.layers:
            (own,) = layer_relations(layer)
            relation = compose(own, relation)
        return (relation,)
    tgt, memory = local(length), none(length, first[1].source)
    for layer in stack.layers:
        own, cross = layer_relations(layer)
        tgt, memory = compose(own, tgt), union(compose(own, memory), cross)
    return tgt, memory


# --- objects (§16.1) --------------------------------------------------------------------------


def unavailable_token_dependencies() -> dict[str, Any]:
    """The unavailable object: exactly these four keys; not an empty relation."""
    return {"status": "unavailable", "scope": "module_call", "method": TOKEN_METHOD, "assumptions": []}


def _source(arguments: tuple[str, ...], axis: int, relation: Relation) -> dict[str, Any]:
    return {
        "arguments": list(arguments),
        "sequence_axis": axis,
        "length": relation.n_in,
        "relation": relation.to_json(),
    }


def _mha_sources(spec: AttentionSpec) -> list[tuple[tuple[str, ...], Relation]]:
    by_name = dict(zip(("query", "key", "value"), attention_relations(spec), strict=True))
    sources = []
    for group in spec.groups:
        relation = by_name[group[0]]
        for name in group[1:]:
            relation = union(relation, by_name[name])
        sources.append((group, relation))
    return sources


def _first_attention(spec: NativeSpec) -> AttentionSpec:
    while not isinstance(spec, AttentionSpec):
        if isinstance(spec, TransformerSpec):
            spec = spec.decoder
        elif isinstance(spec, StackSpec):
            spec = spec.layers[0]
        else:
            spec = spec.attentions[0]
    return spec


def token_dependencies(spec: NativeSpec) -> dict[str, Any]:
    """The complete token-dependency object of one native call, or raise (§16.1–§16.5)."""
    if isinstance(spec, AttentionSpec):
        sources = _mha_sources(spec)
    elif isinstance(spec, TransformerSpec):
        (encoder,) = stack_relations(spec.encoder)
        tgt, memory = stack_relations(spec.decoder)
        sources = [(("tgt",), tgt), (("src",), compose(memory, encoder))]
    else:
        relations = layer_relations(spec) if isinstance(spec, LayerSpec) else stack_relations(spec)
        names = (("src",),) if len(relations) == 1 else (("tgt",), ("memory",))
        sources = list(zip(names, relations, strict=True))
    attention = _first_attention(spec)
    axis = 1 if attention.batch_first else 0
    return {
        "status": "complete",
        "scope": "module_call",
        "method": TOKEN_METHOD,
        "output": {"sequence_axis": axis, "length": attention.target},
        "sources": [_source(arguments, axis, relation) for arguments, relation in sources],
        "assumptions": list(ASSUMPTIONS_V1),
    }
