"""flex_attention counted from its BlockMask (attention-and-scaling.md 1 and 3).

The reference is independent of the BlockMask: the mask_mod is evaluated over the whole (query, key)
grid, grouped into tiles in the test, and a tile is computed when it keeps at least one pair. Every
pair of a computed tile (within the sequence lengths) is counted, skipped tiles cost nothing. The
expected FLOPs then follow the closed form written out below, per computed pair and batch·head:
``2·D`` (scores) + ``2·Dv`` (values) + 1 (scale) + 5 (softmax) + score_mod, ``− 2`` per softmax row,
and ``1 + mask_mod`` per pair of a partial tile (a tile not kept whole).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from torchscan import measure_flops
from torchscan.analysis.dispatch.higher_order import HigherOrderSupport
from torchscan.formulas import flex_attention as flex
from torchscan.formulas.operator_common import UnsupportedOperatorFormula

attention = pytest.importorskip("torch.nn.attention.flex_attention")
flex_attention, create_block_mask = attention.flex_attention, attention.create_block_mask
# Eager flex_attention warns that it runs PyTorch's unfused reference implementation.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def causal(b, h, q, kv):
    return q >= kv


def sliding(window: int) -> Callable:
    def mask(b, h, q, kv):
        return (q >= kv) & (q - kv <= window)

    return mask


def documents(ids: torch.Tensor) -> Callable:
    """Causal attention within each document; ``ids[b, token]`` is the token's document."""

    def mask(b, h, q, kv):
        return (ids[b, q] == ids[b, kv]) & (q >= kv)

    return mask


@dataclass(frozen=True)
class Reference:
    pairs: int  # pairs of computed tiles, over batch and heads
    partial: int  # pairs of computed tiles the mask does not keep whole
    rows: int  # query rows with a computed pair


def brute_force(
    mask_mod, batch: int, heads: int, q_len: int, kv_len: int, tile: tuple[int, int]
) -> Reference:
    """Tiles computed by the mask over the full grid, counted pair by pair (no BlockMask involved)."""
    qb, kb = tile
    pairs = partial = rows = 0
    q = torch.arange(q_len).view(-1, 1)
    kv = torch.arange(kv_len).view(1, -1)
    for b in range(batch):
        for h in range(heads):
            kept = mask_mod(torch.tensor(b), torch.tensor(h), q, kv).expand(q_len, kv_len)
            for i in range(math.ceil(q_len / qb)):
                computed_here = 0
                for j in range(math.ceil(kv_len / kb)):
                    block = kept[i * qb : (i + 1) * qb, j * kb : (j + 1) * kb]
                    if block.any():
                        pairs += block.numel()
                        computed_here += 1
                        if not block.all():
                            partial += block.numel()
                if computed_here:
                    rows += min(qb, q_len - i * qb)
    return Reference(pairs, partial, rows)


def forward_closed_form(ref: Reference, d: int, dv: int, *, score_mod: int = 0, mask_mod: int = 0) -> int:
    return ref.pairs * (2 * d + 2 * dv + 1 + 5 + score_mod) - 2 * ref.rows + ref.partial * (1 + mask_mod)


class _Recorder(HigherOrderSupport, TorchDispatchMode):
    """Keeps the arguments and outputs of the last flex_attention call (to call its backward)."""

    call: tuple = ()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if getattr(func, "name", lambda: "")() == "flex_attention":
            self.call = (args, out)
        return out


# --- the BlockMask against the brute force ------------------------------------------------------

MASKS = {
    "causal": causal,
    "sliding_100": sliding(100),
    "sliding_7": sliding(7),
    "documents": documents(torch.tensor([[0] * 100 + [1] * 156 + [2] * 128, [0] * 300 + [1] * 84])),
}


@pytest.mark.parametrize("name", sorted(MASKS))
@pytest.mark.parametrize("lengths", [(384, 384), (200, 300), (384, 257)])
@pytest.mark.parametrize("tile", [(128, 128), (64, 32)])
def test_block_work_equals_brute_force(name, lengths, tile):
    q_len, kv_len = lengths
    batch = 2 if name == "documents" else 1
    if name == "documents" and kv_len != q_len:
        pytest.skip("documents are token-aligned self-attention")
    mask = create_block_mask(MASKS[name], batch, None, q_len, kv_len, device="cpu", BLOCK_SIZE=tile)
    shapes = flex.FlexShapes(batch, 3, q_len, kv_len, 16, 8)  # the mask's single head broadcast over 3
    work = flex.block_work(mask.as_tuple(), shapes)
    ref = brute_force(MASKS[name], batch, 1, q_len, kv_len, tile)
    assert work.pairs == 3 * ref.pairs
    assert work.rows == 3 * ref.rows
    assert work.all_rows == batch * 3 * q_len
    # The BlockMask also calls a tile cut by the sequence end partial (its padding is masked):
    # mask_mod runs on at least the tiles the brute force finds partial.
    assert work.masked_pairs >= 3 * ref.partial
    if q_len % tile[0] == 0 and kv_len % tile[1] == 0:
        assert work.masked_pairs == 3 * ref.partial


def test_block_work_worked_example():
    # Causal, L = 256, tiles of 128: query tile 0 computes key tile 0 (partial); query tile 1 key
    # tiles 0 (full) and 1 (partial). Per head: 3 tiles · 128² = 49,152 pairs, 2 · 128² = 32,768 of
    # them in partial tiles, 256 rows. With B = 1, H = 2, D = Dv = 16, per head:
    # 49,152 · (32 + 32 + 6) − 2 · 256 + 32,768 · 1 = 3,440,640 − 512 + 32,768 = 3,472,896.
    mask = create_block_mask(causal, None, None, 256, 256, device="cpu")
    shapes = flex.FlexShapes(1, 2, 256, 256, 16, 16)
    work = flex.block_work(mask.as_tuple(), shapes)
    assert work == flex.BlockWork(pairs=98_304, masked_pairs=65_536, rows=512, all_rows=512)
    assert flex.forward_flops(shapes, work) == 2 * 3_472_896
    q = torch.randn(1, 2, 256, 16)
    report = measure_flops(lambda: flex_attention(q, q, q, block_mask=mask))
    assert report["total"]["status"] == "complete"
    assert report["by_operator"] == {"higher_order.flex_attention": 6_945_792}
    # the dense count of the same shapes would be 2 · (65,536 · 70 − 512): the mask saves 3/8 of it
    assert report["total"]["value"] < 2 * (65_536 * 70 - 512)


@pytest.mark.parametrize("name", ["causal", "sliding_100", "documents"])
def test_measured_forward_equals_the_closed_form(name):
    batch, heads, length, d, dv = 2, 2, 384, 16, 8
    mask = create_block_mask(MASKS[name], batch, None, length, length, device="cpu")
    q = torch.randn(batch, heads, length, d)
    v = torch.randn(batch, heads, length, dv)
    report = measure_flops(lambda: flex_attention(q, q, v, block_mask=mask))
    ref = brute_force(MASKS[name], batch, 1, length, length, (128, 128))
    # the mask's single head serves both query heads; its boolean/integer arithmetic counts 0 (B.7)
    expected = heads * forward_closed_form(ref, d, dv)
    assert report["total"] == {**report["total"], "status": "complete", "value": expected}


def test_grouped_query_attention_counts_query_heads_and_reads_shared_kv():
    mask = create_block_mask(causal, None, None, 256, 256, device="cpu")
    q = torch.randn(1, 4, 256, 16)
    kv = torch.randn(1, 2, 256, 16)
    grouped = measure_flops(lambda: flex_attention(q, kv, kv, block_mask=mask, enable_gqa=True), bytes=True)
    full = torch.randn(1, 4, 256, 16)
    dense_heads = measure_flops(lambda: flex_attention(q, full, full, block_mask=mask), bytes=True)
    # score FLOPs are per query head: sharing K/V heads changes nothing there
    assert grouped["total"]["value"] == dense_heads["total"]["value"] == 4 * 3_472_896
    # reads: K and V of 2 heads (2 · 2 · 256 · 16 · 4 bytes) instead of 4 heads
    saved = dense_heads["operator_bytes"]["value"] - grouped["operator_bytes"]["value"]
    assert saved == 2 * (2 * 256 * 16 * 4)


# --- score_mod and mask_mod work ------------------------------------------------------------------


def test_score_mod_work_is_counted_per_computed_pair():
    slopes = torch.tensor([0.5, 0.25])

    def alibi(score, b, h, q, kv):
        # slopes[h]: indexing (0); kv - q: integer (0); the float product and the sum: 2 per pair
        return score + slopes[h] * (kv - q)

    def softcap(score, b, h, q, kv):
        return torch.tanh(score / 20) * 20  # div 1 + tanh 6 + mul 1 = 8 per pair

    mask = create_block_mask(causal, None, None, 256, 256, device="cpu")
    q = torch.randn(1, 2, 256, 16)
    for score_mod, per_pair in ((alibi, 2), (softcap, 8)):
        report = measure_flops(lambda mod=score_mod: flex_attention(q, q, q, score_mod=mod, block_mask=mask))
        # 98,304 computed pairs over both heads
        assert report["total"]["value"] == 6_945_792 + 98_304 * per_pair, score_mod.__name__
        assert report["total"]["status"] == "complete"


def test_mask_mod_work_counts_on_partial_tiles_only():
    def scored_mask(b, h, q, kv):
        return (q >= kv) & (torch.sigmoid(q * 1.0) > 0)  # mul 1 + sigmoid 4 + gt 1 = 6 per pair

    mask = create_block_mask(scored_mask, None, None, 256, 256, device="cpu")
    q = torch.randn(1, 2, 256, 16)
    report = measure_flops(lambda: flex_attention(q, q, q, block_mask=mask))
    assert report["total"]["value"] == 6_945_792 + 65_536 * 6  # 65,536 pairs in partial tiles


def _direct(score_mod, mask) -> Callable[[], object]:
    """Calls the HOP itself with a plain Python score_mod (no Dynamo graph in between)."""
    q = torch.randn(1, 2, 256, 16)
    with _Recorder() as recorder:
        flex_attention(q, q, q, block_mask=mask)
    args, _ = recorder.call
    return lambda: torch.ops.higher_order.flex_attention(q, q, q, score_mod, *args[4:])


def test_score_mod_that_cannot_be_counted_leaves_the_call_partial():
    mask = create_block_mask(causal, None, None, 256, 256, device="cpu")

    def refuses_tiles(score, b, h, q, kv):
        if score.dim() == 2:  # PyTorch calls it per pair; TorchScan's tile has two dimensions
            raise RuntimeError("per-pair only")
        return score

    def uncounted(score, b, h, q, kv):
        return score + torch.logcumsumexp(score, dim=-1)  # no formula for logcumsumexp

    for score_mod, fragment in ((refuses_tiles, "could not run"), (uncounted, "aten.logcumsumexp")):
        report = measure_flops(_direct(score_mod, mask))
        total = report["total"]
        assert total["status"] == "partial" and total["value"] is None
        assert total["known_value"] == 6_945_792  # the tiles' work is still counted
        (entry,) = report["diagnostics"]
        assert entry["code"] == "incomplete_operator_formula"
        assert entry["operator"] == "higher_order.flex_attention"
        assert "score_mod" in entry["message"] and fragment in entry["message"]


# --- backward ------------------------------------------------------------------------------------


def _backward_call(score_mod, mask, *, joint: bool = True) -> Callable[[], object]:
    """flex_attention_backward called as autograd calls it (its CPU kernel; autograd refuses CPU)."""
    from torch._higher_order_ops.flex_attention import create_fw_bw_graph

    q = torch.randn(1, 2, 256, 16)
    with _Recorder() as recorder:
        flex_attention(q, q, q, score_mod=score_mod, block_mask=mask)
    args, (out, lse, *_) = recorder.call
    fw_graph, block_mask, scale, options = args[3], args[4], args[5], args[6]
    examples = (q.new_zeros((), requires_grad=True), *(q.new_zeros((), dtype=torch.int) for _ in range(4)))
    joint_graph = create_fw_bw_graph(fw_graph, examples, ())[1] if joint else None
    grad = torch.randn_like(out)
    return lambda: torch.ops.higher_order.flex_attention_backward(
        q, q, q, out, lse, grad, None, fw_graph, joint_graph, block_mask, scale, options, (), ()
    )


def test_backward_equals_the_closed_form():
    def doubled(score, b, h, q, kv):
        return score * 2.0

    mask = create_block_mask(causal, None, None, 256, 256, device="cpu")
    report = measure_flops(_backward_call(doubled, mask))
    # per pair 2·(3·16 + 2·16) = 160 products + 6 element-wise + 1 (recomputed score_mod) + the joint
    # graph's 2 (it recomputes score·2 and computes grad·2); partial tiles 1; Δ: 512 rows · (2·16 − 1)
    joint = 2
    expected = 98_304 * (160 + 6 + 1 + joint) + 65_536 + 512 * 31
    assert expected == 16_694_784
    assert report["by_operator"] == {"higher_order.flex_attention_backward": expected}
    assert report["total"]["status"] == "complete"


def test_backward_without_joint_graph_is_partial():
    mask = create_block_mask(causal, None, None, 256, 256, device="cpu")
    report = measure_flops(_backward_call(None, mask, joint=False))
    assert report["total"]["status"] == "partial"
    assert "joint_graph" in report["diagnostics"][0]["message"]


# --- what the formula refuses --------------------------------------------------------------------


def test_formula_refuses_meta_masks_and_bad_shapes():
    mask = create_block_mask(causal, None, None, 256, 256, device="cpu").as_tuple()
    meta = tuple(t.to("meta") if isinstance(t, torch.Tensor) else t for t in mask)
    shapes = flex.FlexShapes(1, 2, 256, 256, 16, 16)
    with pytest.raises(UnsupportedOperatorFormula, match="values a meta"):
        flex.block_work(meta, shapes)
    with pytest.raises(UnsupportedOperatorFormula, match="BlockMask"):
        flex.block_work(mask, flex.FlexShapes(1, 2, 512, 256, 16, 16))  # the mask covers 2 query tiles
    with pytest.raises(UnsupportedOperatorFormula, match="4-D"):
        flex.flex_shapes(torch.empty(2, 8, 4), torch.empty(2, 8, 4), torch.empty(2, 8, 4))
    with pytest.raises(UnsupportedOperatorFormula, match="multiple"):
        flex.flex_shapes(torch.empty(1, 3, 8, 4), torch.empty(1, 2, 8, 4), torch.empty(1, 2, 8, 4))


def test_nothing_computed_costs_nothing_but_the_backward_delta():
    shapes = flex.FlexShapes(1, 1, 8, 8, 4, 4)
    empty = flex.BlockWork(pairs=0, masked_pairs=0, rows=0, all_rows=8)
    assert flex.forward_flops(shapes, empty) == 0
    assert flex.backward_flops(shapes, empty) == 8 * (2 * 4 - 1)
