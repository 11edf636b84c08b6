"""Caller exception text is sanitized before it enters a report (issue #11, item 2)."""

from __future__ import annotations

import json
import re

import torch
from torch import nn

from torchscan import ModuleHandler, crawl_module
from torchscan.report.diagnostics import MAX_ERROR_TEXT, error_text, sanitize_text


def _leaky_error() -> ValueError:
    # A tensor's values, an object address and an absolute path: all three must disappear.
    return ValueError(f"bad {torch.ones(3)} at {object()} in /home/x/y.py")


def _assert_clean(text: str) -> None:
    assert "tensor(" not in text and "1." not in text
    assert not re.search(r"0x[0-9a-fA-F]+", text)
    assert "/home" not in text and "y.py" not in text


def test_sanitize_replaces_values_addresses_and_paths():
    text = error_text(_leaky_error())
    assert text == "ValueError: bad <tensor> at <object> in <path>"
    _assert_clean(text)


def test_sanitize_covers_nested_tensors_relative_paths_and_controls():
    nested = torch.arange(6.0).reshape(2, 3)
    text = sanitize_text(f"w={nested} file=src/pkg/mod.py home=~/data C:\\Users\\x f={_leaky_error} \x00end")
    assert text == "w=<tensor> file=<path> home=<path> <path> f=<function> end"


def test_sanitize_keeps_ordinary_text_and_bounds_length():
    assert sanitize_text("shape [2, 3] vs 4.5: 1/2 of aten.mm") == "shape [2, 3] vs 4.5: 1/2 of aten.mm"
    long = sanitize_text("x" * 10_000)
    assert len(long) == MAX_ERROR_TEXT and long.endswith("...")


def test_broken_str_yields_the_type_name():
    class Broken(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert error_text(Broken()) == "Broken"


def _handler_report() -> dict:
    def estimate(call):
        raise _leaky_error()

    handlers = {nn.Linear: ModuleHandler(estimate)}
    return crawl_module(nn.Linear(3, 2), (3,), custom_modules=handlers)


def test_custom_handler_error_is_sanitized_and_deterministic():
    first, second = _handler_report(), _handler_report()
    messages = [d["message"] for d in first["diagnostics"] if d["code"] == "custom_handler_error"]
    assert messages
    for message in messages:
        _assert_clean(message)
        assert "ValueError: bad <tensor> at <object> in <path>" in message
    assert json.dumps(first["diagnostics"]) == json.dumps(second["diagnostics"])


def test_custom_handler_invalid_value_is_sanitized():
    def estimate(call):
        return {"macs": {"status": "complete", "value": 1, "known_value": 1, "unit": object(),
                         "scope": "s", "method": "m"}}  # fmt: skip

    report = crawl_module(nn.Linear(3, 2), (3,), custom_modules={nn.Linear: ModuleHandler(estimate)})
    (entry,) = [d for d in report["diagnostics"] if d["code"] == "custom_metric_invalid"]
    assert "<object>" in entry["message"]
    _assert_clean(entry["message"])


def _formula_report() -> dict:
    def mm_flops(*args, **kwargs):
        raise _leaky_error()

    return crawl_module(nn.Linear(3, 2, bias=False), (3,), custom_mapping={torch.ops.aten.mm: mm_flops})


def test_custom_operator_formula_error_is_sanitized_and_deterministic():
    first, second = _formula_report(), _formula_report()
    text = json.dumps(first["operator_flops"]["diagnostics"])
    assert "bad <tensor> at <object> in <path>" in text
    _assert_clean(text)
    assert text == json.dumps(second["operator_flops"]["diagnostics"])
