"""Property tests of the readers of the two newest report kinds (issues #21 and #22).

A real MemoryReport (an MLP AdamW step) and a real GenerationReport (a tiny decoder's decode loop
measured through ``measure_generation``) are mutated at random spots by ``test_fuzz.mutated``
(huge, non-finite and negative numbers, control characters, deep nesting, missing or extra keys).
Whatever the mutation, only ``ValueError``/``TypeError`` may escape ``load_report``,
``validate_report``, ``render_report`` (HTML and SVG, ``before=``) and ``compare_reports``; every
successful output is strict JSON or text, and no call takes more than 5 s (measured per call: the
issue #20 bound, not a benchmark). ``TORCHSCAN_FUZZ_EXAMPLES=10000`` runs the issue's full target.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fuzz import ALLOWED, mutated
from torch import nn

from torchscan import compare_reports, measure_generation, measure_memory, render_report
from torchscan.report.validate import load_report, validate_report

EXAMPLES = int(os.environ.get("TORCHSCAN_FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,  # the 5 s bound below is per call, measured
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
MAX_SECONDS = 5.0


class TinyDecoder(nn.Module):
    """A decoder with a hand-written greedy ``generate``: embedding, one linear head, no cache."""

    def __init__(self) -> None:
        super().__init__()
        self.embed, self.head = nn.Embedding(32, 8), nn.Linear(8, 32)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(ids))

    def generate(self, ids: torch.Tensor, max_new_tokens: int = 3) -> torch.Tensor:
        for _ in range(max_new_tokens):
            ids = torch.cat([ids, self(ids)[:, -1:].argmax(-1)], dim=1)
        return ids


@pytest.fixture(scope="module")
def reports() -> dict[str, Any]:
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
    optimizer = torch.optim.AdamW(mlp.parameters())
    x = torch.rand(4, 16)

    def step() -> None:
        mlp(x).sum().backward()
        optimizer.step()

    with torch.no_grad():
        generation = measure_generation(
            TinyDecoder(), args=(torch.tensor([[1, 2, 3]]),), generate_kwargs={"max_new_tokens": 3}
        )
    return {"memory": measure_memory(step, modules=mlp), "generation": generation}


def _timed(call: Any, *args: Any, **kwargs: Any) -> None:
    start = time.perf_counter()
    try:
        result = call(*args, **kwargs)
    except ALLOWED:
        result = None
    elapsed = time.perf_counter() - start
    assert elapsed < MAX_SECONDS, f"{call.__name__} took {elapsed:.1f} s"
    if isinstance(result, dict):
        json.dumps(result, allow_nan=False)
    elif result is not None:
        assert isinstance(result, str)


def test_the_bases_are_accepted(reports) -> None:
    for name, report in reports.items():
        assert validate_report(report) == name
        assert load_report(json.dumps(report, allow_nan=False)) == report
    assert render_report(reports["memory"], before=reports["memory"]).lower().startswith("<!doctype html>")
    assert render_report(reports["generation"], format="svg").startswith("<svg")


@pytest.mark.parametrize("name", ["memory", "generation"])
@FUZZ
@given(data=st.data())
def test_fuzz_readers(reports, name, data) -> None:
    base = reports[name]
    changed = data.draw(mutated(base))
    _timed(validate_report, changed)
    try:
        text = json.dumps(changed, allow_nan=False)
    except (ValueError, TypeError):
        text = None
    if text is not None:
        _timed(load_report, text)
    _timed(render_report, changed, format=data.draw(st.sampled_from(["html", "svg"])))
    if name == "memory":
        _timed(render_report, base, before=changed)
        _timed(render_report, changed, before=base)
        _timed(compare_reports, changed, base)
        _timed(compare_reports, base, changed)
