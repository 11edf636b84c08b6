"""A native call's estimate split along its module tree (views-3.md 1).

The outermost native Transformer call owns its whole subtree (extensions-and-transformers.md §12):
one inclusive number on its row, nothing on the rows below it — and on PyTorch's fused fast path
those rows do not even exist as calls. The spec of the call already says which work belongs to
which submodule (attention calls to ``self_attn``/``multihead_attn``, output projections to
``out_proj``, the feed-forward projections to ``linear1``/``linear2``, norms to ``norm*``), so this
module turns it into one *share* per submodule: the part of the inclusive estimate that the module
formulas of that submodule give for the shapes it was applied to. What is left (residual additions,
the feed-forward activation, attention scores and softmax) stays with the module whose own code
runs it. The shares of one call always sum exactly to the call's estimate. Evaluation dropouts get
a zero share in all three fields: the native DMA convention (§15.2) counts no copy for them, where
a standalone ``nn.Dropout`` call's DMA formula reads and writes its tensor.

Pure arithmetic over specs and module attributes: no tensor is read, nothing is reported here.
"""

from __future__ import annotations

from typing import cast

from torch import nn

from torchscan.formulas.attention import AttentionSpec, LayerSpec, NativeSpec, StackSpec, TransformerSpec
from torchscan.formulas.attention_costs import Costs, native_costs, norm_costs, projection_costs

Share = tuple[nn.Module, Costs]
_NOTHING: Costs = (0, 0, 0)
_LAYER_DROPOUTS = ("dropout", "dropout1", "dropout2", "dropout3")


def native_shares(module: nn.Module, spec: NativeSpec) -> list[Share]:
    """``(module, own share)`` for the call's module and every submodule its spec names, pre-order.

    The first entry is ``module`` itself with what no submodule formula covers; the entries sum to
    :func:`~torchscan.formulas.attention_costs.native_costs` of ``spec`` field by field.
    """
    shares: list[Share] = []
    _split(module, spec, shares)
    return shares


def _split(module: nn.Module, spec: NativeSpec | Costs, shares: list[Share]) -> Costs:
    """Append ``module``'s own share and its parts' shares; return the module's inclusive costs."""
    if isinstance(spec, tuple):  # a leaf part: its whole cost is its own
        shares.append((module, spec))
        return spec
    total = native_costs(spec)
    position = len(shares)
    shares.append((module, _NOTHING))  # placeholder: the own share is what the parts leave
    covered = [_split(part, part_spec, shares) for part, part_spec in _parts(module, spec)]
    own = tuple(total[i] - sum(part[i] for part in covered) for i in range(3))
    shares[position] = (module, (own[0], own[1], own[2]))
    return total


def _parts(module: nn.Module, spec: NativeSpec) -> list[tuple[nn.Module, NativeSpec | Costs]]:
    """The submodules a native spec names, each with its spec or its leaf costs."""
    if isinstance(spec, AttentionSpec):
        rows = spec.batch * spec.target
        return [(_child(module, "out_proj"), projection_costs(rows, spec.embed, spec.embed, spec.out_bias))]
    if isinstance(spec, LayerSpec):
        return _layer_parts(module, spec)
    if isinstance(spec, StackSpec):
        layers = cast(nn.ModuleList, module.layers)
        parts: list[tuple[nn.Module, NativeSpec | Costs]] = list(zip(layers, spec.layers, strict=True))
        if module.norm is not None:
            parts.append((_child(module, "norm"), norm_costs(spec.final_norm)))
        return parts
    if isinstance(spec, TransformerSpec):
        return [(_child(module, "encoder"), spec.encoder), (_child(module, "decoder"), spec.decoder)]
    raise TypeError(f"not a native spec: {type(spec).__name__}")


def _layer_parts(layer: nn.Module, spec: LayerSpec) -> list[tuple[nn.Module, NativeSpec | Costs]]:
    attentions = ("self_attn", "multihead_attn")[: len(spec.attentions)]
    parts: list[tuple[nn.Module, NativeSpec | Costs]] = [
        (getattr(layer, name), attention) for name, attention in zip(attentions, spec.attentions, strict=True)
    ]
    ffn = spec.feed_forward
    parts.append((_child(layer, "linear1"), projection_costs(ffn.rows, ffn.embed, ffn.hidden, ffn.bias1)))
    parts.append((_child(layer, "linear2"), projection_costs(ffn.rows, ffn.hidden, ffn.embed, ffn.bias2)))
    for index, norm in enumerate(spec.norms, start=1):
        submodule = getattr(layer, f"norm{index}", None)
        if submodule is not None:  # LayerNorm: its formula's costs; Identity: nothing
            parts.append((submodule, norm_costs(norm)))
    for name in _LAYER_DROPOUTS:
        dropout = getattr(layer, name, None)
        if isinstance(dropout, nn.Module):  # evaluation dropout costs nothing (formulas.md)
            parts.append((dropout, _NOTHING))
    return parts


def _child(module: nn.Module, name: str) -> nn.Module:
    """A named submodule the native boundary has already checked exists."""
    return cast(nn.Module, getattr(module, name))
