"""torchscan.modules.module_* agree with crawl_module on the native attention types (issue #11 item 4)."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

from torchscan import crawl_module
from torchscan.modules import module_dmas, module_flops, module_macs


def _cases():
    torch.manual_seed(0)
    src, tgt = torch.ones(2, 5, 8), torch.ones(2, 3, 8)
    encoder = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    decoder = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    return {
        "MultiheadAttention": (nn.MultiheadAttention(8, 2, batch_first=True), (src, src, src)),
        "MultiheadAttention-cross": (nn.MultiheadAttention(8, 2, batch_first=True), (tgt, src, src)),
        "TransformerEncoderLayer": (encoder, (src,)),
        "TransformerDecoderLayer": (decoder, (tgt, src)),
        "TransformerEncoder": (nn.TransformerEncoder(encoder, 2, enable_nested_tensor=False), (src,)),
        "TransformerDecoder": (nn.TransformerDecoder(decoder, 2), (tgt, src)),
        "Transformer": (
            nn.Transformer(8, 2, 1, 1, dim_feedforward=16, dropout=0.0, batch_first=True),
            (src, tgt),
        ),
    }


CASES = _cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_module_functions_equal_crawl_module(name):
    module, args = CASES[name]
    module.eval()
    report = crawl_module(module, args=args)
    (root,) = [layer for layer in report["layers"] if layer["path"] == ""]
    with torch.no_grad():
        out = module(*args)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Module type not supported" must not be emitted any more
        values = {
            "module_flops": module_flops(module, args, out),
            "macs": module_macs(module, args, out),
            "dmas": module_dmas(module, args, out),
        }
    for field, value in values.items():
        assert root["metrics"][field]["status"] == "complete"
        assert value == root["metrics"][field]["value"] > 0, field


def test_refused_configuration_raises_not_implemented():
    module, args = CASES["TransformerEncoderLayer"]
    module.train()  # the native estimates cover evaluation mode only, as in crawl_module
    try:
        with pytest.raises(NotImplementedError, match="evaluation mode"):
            module_macs(module, args, args[0])
    finally:
        module.eval()
