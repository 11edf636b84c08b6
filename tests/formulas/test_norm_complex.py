"""A normalization layer with a complex parameter is an unsupported configuration (issue #11 item 5)."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

from torchscan import crawl_module
from torchscan.formulas.tensors import DENSE_REASON
from torchscan.modules import module_dmas, module_flops, module_macs

pytestmark = pytest.mark.skipif(not hasattr(nn, "RMSNorm"), reason="nn.RMSNorm is not in this PyTorch")


def _complex_rms_norm() -> nn.Module:
    module = nn.RMSNorm(4)
    module.weight.data = torch.ones(4, dtype=torch.complex64)
    return module


def test_module_functions_refuse_a_complex_weight():
    module, x = _complex_rms_norm(), torch.ones(2, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch warns that it casts the complex weight
        out = module(x)
    for function in (module_flops, module_macs, module_dmas):
        with pytest.raises(NotImplementedError, match="real, dense"):
            function(module, (x,) if function is module_flops else x, out)


def test_crawl_module_reports_the_flops_unavailable():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = crawl_module(_complex_rms_norm(), (4,))
    for field in ("module_flops", "macs", "dmas"):
        assert report["layers"][0]["metrics"][field]["status"] == "unavailable"
    messages = [d["message"] for d in report["diagnostics"] if d["code"] == "module_metric_error"]
    assert any(DENSE_REASON in message for message in messages)
    assert report["totals"]["module_flops"]["status"] != "complete"


def test_real_rms_norm_is_still_complete():
    report = crawl_module(nn.RMSNorm(4), (4,))
    # RMSNorm (3 + W)·N + 2R with W = 1, N = 4, R = 1: 4·4 + 2 = 18.
    flops = report["layers"][0]["metrics"]["module_flops"]
    assert (flops["status"], flops["value"]) == ("complete", 18)
