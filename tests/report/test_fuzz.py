"""Property tests of everything that reads saved reports (issue #11, item 7).

Real reports (a convolution stack, a transformer encoder layer with ``token_dependencies``, a
benchmark report and its comparison) are mutated at random spots: numbers become huge ints, NaN,
infinities, negatives or bools; values become strings with unicode and control characters, deeply
nested lists/dicts or other types; keys go missing or appear. Whatever the mutation, only
``ValueError``/``TypeError`` may escape ``compare_reports``, ``compare_benchmarks``,
``render_report`` and the validators, and every successful output is strict JSON
(``allow_nan=False``). No timing thresholds: the example counts are fixed, the deadline is off.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

from torchscan import compare_benchmarks, compare_reports, crawl_module, render_report
from torchscan.measure.latency import measure_latency
from torchscan.report.schema import MAX_NUMBER
from torchscan.report.validate import load_report, validate_report

EXAMPLES = int(os.environ.get("TORCHSCAN_FUZZ_EXAMPLES", "2000"))  # 10000: the issue #20 target
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,  # CI failures reproduce exactly
    database=None,
    suppress_health_check=list(HealthCheck),
)
ALLOWED = (ValueError, TypeError)


def _conv_report() -> dict[str, Any]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 5))
    return crawl_module(model, (3, 8, 8))


def _transformer_report() -> dict[str, Any]:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    return crawl_module(layer, (3, 8))


@pytest.fixture(scope="module")
def reports() -> dict[str, Any]:
    x = torch.ones(4)
    bench = measure_latency(lambda: x + 1, device="cpu", inputs=x, min_run_time=0.001, min_repeats=2)
    other = copy.deepcopy(bench)
    return {
        "conv": _conv_report(),
        "transformer": _transformer_report(),
        "benchmark": bench,
        "comparison": compare_benchmarks(bench, other, check=lambda: None),
    }


def _paths(tree: Any, prefix: tuple = ()) -> list[tuple]:
    """Every location of ``tree`` (the root included), depth-first."""
    found = [prefix]
    if isinstance(tree, dict):
        for key, child in tree.items():
            found.extend(_paths(child, (*prefix, key)))
    elif isinstance(tree, list):
        for index, child in enumerate(tree):
            found.extend(_paths(child, (*prefix, index)))
    return found


def _nested(depth: int, as_dict: bool) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = {"k": value} if as_dict else [value]
    return value


TEXT = st.text(
    alphabet=st.characters(codec="utf-8") | st.sampled_from(["\x00", "\x1b", "\ufffe", "\u202e", "\n"]),
    max_size=12,
)
NUMBERS = (
    st.sampled_from(
        [
            10**400,
            -(10**400),
            2**1024,
            MAX_NUMBER,
            -MAX_NUMBER,
            MAX_NUMBER + 1,
            float("nan"),
            float("inf"),
            float("-inf"),
            1.7e308,
            -1.7e308,
            -1,
            -0.5,
            0,
            0.0,
            5e-324,
            True,
            False,
        ]
    )
    | st.integers()
    | st.floats()
)
REPLACEMENTS = st.one_of(
    NUMBERS,
    TEXT,
    st.none(),
    st.builds(_nested, st.integers(1, 260), st.booleans()),
    st.sampled_from([[], {}, [1, "a", None], {"status": "complete"}, ("tuple",), {1: 2}, b"bytes"]),
)


def _metric_paths(tree: Any) -> list[tuple]:
    """The locations of every MetricResult-like dict (it has a ``known_value`` key)."""
    return [
        path
        for path in _paths(tree)
        if isinstance(_at(tree, path), dict) and "known_value" in _at(tree, path)
    ]


def _at(tree: Any, path: tuple) -> Any:
    for key in path:
        tree = tree[key]
    return tree


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any]) -> Any:
    """A deep copy of ``base`` with one to three random mutations at uniformly chosen spots."""
    if draw(st.integers(0, 49)) == 0:
        return draw(REPLACEMENTS)  # not a report at all
    report = copy.deepcopy(base)
    paths, metrics = _paths(base)[1:], _metric_paths(base)
    rng = draw(st.randoms(use_true_random=False))
    for _ in range(draw(st.integers(1, 3))):
        action = draw(st.sampled_from(["replace", "delete", "extra", "metric", "metric"]))
        path = rng.choice(metrics if action == "metric" and metrics else paths)
        try:
            parent = _at(report, path[:-1])
            current = parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation replaced this spot
        if not isinstance(parent, (dict, list)):
            continue  # an earlier mutation put a string (indexable, not assignable) above this spot
        if action == "metric" and isinstance(current, dict):
            # Keep the MetricResult invariant so the extreme number gets past validation.
            number = draw(NUMBERS)
            current["known_value"] = number
            if current.get("status") == "complete" or draw(st.booleans()):
                current["value"] = number
        elif action == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        elif action == "extra" and isinstance(current, dict):
            current[draw(TEXT)] = draw(REPLACEMENTS)
        elif action == "extra" and isinstance(current, list):
            current.append(draw(REPLACEMENTS))
        else:
            parent[path[-1]] = draw(REPLACEMENTS)
    return report


def _strict_json(value: Any) -> None:
    json.dumps(value, allow_nan=False)


OUTCOMES: dict[str, int] = {}


def _guarded(call, *args: Any, **kwargs: Any) -> Any:
    try:
        result = call(*args, **kwargs)
    except ALLOWED:
        OUTCOMES[f"{call.__name__}:rejected"] = OUTCOMES.get(f"{call.__name__}:rejected", 0) + 1
        return None
    OUTCOMES[f"{call.__name__}:ok"] = OUTCOMES.get(f"{call.__name__}:ok", 0) + 1
    _strict_json(result)
    return result


@pytest.mark.parametrize("name", ["conv", "transformer"])
@FUZZ
@given(data=st.data())
def test_fuzz_compare_reports(reports, name, data) -> None:
    base = reports[name]
    changed = data.draw(mutated(base))
    order = data.draw(st.sampled_from(["before", "after", "both"]))
    if order == "before":
        _guarded(compare_reports, changed, base)
    elif order == "after":
        _guarded(compare_reports, base, changed)
    else:
        _guarded(compare_reports, changed, data.draw(mutated(base)))


@FUZZ
@given(data=st.data())
def test_fuzz_compare_benchmarks(reports, data) -> None:
    base = reports["benchmark"]
    before = data.draw(mutated(base))
    after = base if data.draw(st.booleans()) else data.draw(mutated(base))
    if data.draw(st.booleans()):
        before, after = after, before
    _guarded(compare_benchmarks, before, after, check=lambda: None)


@FUZZ
@given(data=st.data())
def test_fuzz_render_report(reports, data) -> None:
    name = data.draw(st.sampled_from(["conv", "transformer", "benchmark", "comparison"]))
    report = data.draw(mutated(reports[name]))
    if name in ("conv", "transformer") and data.draw(st.booleans()):
        fmt = data.draw(st.sampled_from(["html", "svg"]))
        before = data.draw(st.sampled_from([None, reports[name]]))
        result = _guarded(render_report, report, format=fmt, before=before)
    else:
        result = _guarded(render_report, report)
    assert result is None or isinstance(result, str)


@FUZZ
@given(data=st.data())
def test_fuzz_validators(reports, data) -> None:
    name = data.draw(st.sampled_from(sorted(reports)))
    report = data.draw(mutated(reports[name]))
    _guarded(validate_report, report)
    try:
        text = json.dumps(report)
    except (ValueError, TypeError, RecursionError):
        return  # not representable as JSON at all: nothing to load
    loaded = _guarded(load_report, text)
    if loaded is not None:
        _strict_json(loaded)


def test_overflow_mutations_are_generated(reports) -> None:
    # The strategies above reach the float-range edge this file exists for: check it concretely.
    report = copy.deepcopy(reports["conv"])
    report["totals"]["parameters"]["value"] = report["totals"]["parameters"]["known_value"] = 10**400
    with pytest.raises(ValueError, match=r"totals\.parameters"):
        compare_reports(report, reports["conv"])
