"""Convolutions re-implemented from slicing and matrix products: the reference of the conv family.

Every function here computes what ``F.conv{1,2,3}d`` / ``F.conv_transpose{1,2,3}d`` compute (the
tests check the numbers), but only through operations whose cost is trivial to state:

* slicing, stacking, padding and reshaping move data (0 FLOPs);
* one matrix product per group (``torch.matmul`` -> ``mm``/``bmm``), counted by the harness's
  :class:`TrivialCounter` as ``2 · MACs`` from shapes alone;
* the transposed convolution scatters its columns back with in-place slice additions; those
  additions are the accumulation half of each multiply-accumulate already counted as 2 FLOPs per MAC,
  so a test compares the library with the products alone (stated where it is used).
"""

from __future__ import annotations

import itertools
import math

import torch
from torch.nn import functional as F


def _window(sizes: list[int], kernel: list[int], stride: list[int], dilation: list[int]) -> list[int]:
    """Output spatial sizes of a plain convolution over already padded ``sizes``."""
    return [
        (n - d * (k - 1) - 1) // s + 1 for n, k, s, d in zip(sizes, kernel, stride, dilation, strict=True)
    ]


def conv(
    x: torch.Tensor,
    w: torch.Tensor,
    stride: list[int],
    padding: list[int],
    dilation: list[int],
    groups: int,
) -> torch.Tensor:
    """``F.conv{d}d(x, w, None, stride, padding, dilation, groups)`` via im2col + one matmul per group."""
    spatial = x.dim() - 2
    pad = [p for size in reversed(padding) for p in (size, size)]
    padded = F.pad(x, pad) if any(padding) else x
    kernel = list(w.shape[2:])
    out_sizes = _window(list(padded.shape[2:]), kernel, stride, dilation)
    patches = []
    for offsets in itertools.product(*(range(k) for k in kernel)):
        index = [slice(None), slice(None)]
        for axis in range(spatial):
            start = offsets[axis] * dilation[axis]
            stop = start + stride[axis] * (out_sizes[axis] - 1) + 1
            index.append(slice(start, stop, stride[axis]))
        patches.append(padded[tuple(index)])
    # (N, C_in, K, *out) -> per group (N, L, C_in/g · K)
    cols = torch.stack(patches, dim=2)
    batch, channels = x.shape[0], x.shape[1]
    per_group, taps, positions = channels // groups, len(patches), math.prod(out_sizes)
    cols = cols.reshape(batch, groups, per_group * taps, positions).transpose(2, 3)
    outs = []
    out_group = w.shape[0] // groups
    for g in range(groups):
        weight = w[g * out_group : (g + 1) * out_group].reshape(out_group, per_group * taps)
        outs.append(torch.matmul(cols[:, g], weight.t()))  # (N, L, C_out/g)
    out = torch.cat(outs, dim=2).transpose(1, 2)
    return out.reshape(batch, w.shape[0], *out_sizes)


def conv_transpose(
    x: torch.Tensor,
    w: torch.Tensor,
    stride: list[int],
    padding: list[int],
    output_padding: list[int],
    dilation: list[int],
    groups: int,
) -> torch.Tensor:
    """``F.conv_transpose{d}d(x, w, None, stride, padding, output_padding, groups, dilation)``: each
    input position times the weight (one matmul per group), scattered into the output."""
    spatial = x.dim() - 2
    batch, in_channels = x.shape[0], x.shape[1]
    in_group, out_group = in_channels // groups, w.shape[1]
    kernel = list(w.shape[2:])
    taps = math.prod(kernel)
    in_sizes = list(x.shape[2:])
    full = [
        (n - 1) * s + d * (k - 1) + 1 + op
        for n, s, d, k, op in zip(in_sizes, stride, dilation, kernel, output_padding, strict=True)
    ]
    out = x.new_zeros(batch, groups * out_group, *full)
    positions = math.prod(in_sizes)
    for g in range(groups):
        rows = x[:, g * in_group : (g + 1) * in_group].reshape(batch, in_group, positions).transpose(1, 2)
        weight = w[g * in_group : (g + 1) * in_group].reshape(in_group, out_group * taps)
        cols = torch.matmul(rows, weight)  # (N, L_in, C_out/g · K)
        cols = cols.reshape(batch, *in_sizes, out_group, *kernel)
        for tap, offsets in enumerate(itertools.product(*(range(k) for k in kernel))):
            del tap
            index = [slice(None), slice(g * out_group, (g + 1) * out_group)]
            for axis in range(spatial):
                start = offsets[axis] * dilation[axis]
                index.append(slice(start, start + stride[axis] * (in_sizes[axis] - 1) + 1, stride[axis]))
            piece = cols[(slice(None), *([slice(None)] * spatial), slice(None), *offsets)]
            # (N, *in, C_out/g) -> (N, C_out/g, *in)
            out[tuple(index)] += piece.movedim(-1, 1)
    crop = [slice(None), slice(None)]
    for axis in range(spatial):
        crop.append(slice(padding[axis], full[axis] - padding[axis]))
    return out[tuple(crop)]
