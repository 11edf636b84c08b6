"""compare_reports (analysis.md 9): pure, validated, deltas only where they mean something."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from torchscan import compare_reports, crawl_module

BASE = crawl_module(nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU()), (3, 16, 16))


def test_parameter_delta_of_two_convolutions():
    # analysis.md 10.2: 12*27+12 - (8*27+8) = 336 - 224 = 112
    diff = compare_reports(
        crawl_module(nn.Conv2d(3, 8, 3), (3, 32, 32)), crawl_module(nn.Conv2d(3, 12, 3), (3, 32, 32))
    )
    assert diff["totals"]["parameters"]["status"] == "complete"
    assert diff["totals"]["parameters"]["delta"] == 112
    changed = diff["layers"]["changed"]
    assert [(c["path"], c["call_index"]) for c in changed] == [("", 0)]
    assert json.loads(json.dumps(diff)) == diff


def test_identical_reports_have_zero_deltas():
    diff = compare_reports(BASE, copy.deepcopy(BASE))
    assert all(entry["delta"] == 0 for entry in diff["totals"].values() if entry["status"] == "complete")
    assert diff["layers"] == {"added": [], "removed": [], "changed": []}


def test_partial_and_unavailable_give_no_delta():
    after = copy.deepcopy(BASE)
    after["totals"]["macs"] = {**after["totals"]["macs"], "status": "partial", "value": None}
    structure = crawl_module(nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU()), (3, 16, 16), mode="structure")
    diff = compare_reports(BASE, after)
    assert diff["totals"]["macs"]["status"] == "partial" and diff["totals"]["macs"]["delta"] is None
    diff = compare_reports(BASE, structure)
    assert diff["totals"]["module_flops"]["status"] == "unavailable"
    assert diff["totals"]["module_flops"]["delta"] is None


def test_added_and_removed_layers():
    other = crawl_module(nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.ReLU()), (3, 16, 16))
    diff = compare_reports(BASE, other)
    assert [(e["path"], e["call_index"]) for e in diff["layers"]["added"]] == [("2", 0)]
    assert compare_reports(other, BASE)["layers"]["removed"][0]["path"] == "2"


@pytest.mark.parametrize("bad", [None, [], {"schema_version": 1}, {**BASE, "schema_version": 2}, "report"])
def test_invalid_reports_are_rejected(bad):
    with pytest.raises(ValueError):
        compare_reports(bad, BASE)
    with pytest.raises(ValueError):
        compare_reports(BASE, bad)


def test_inputs_are_not_mutated():
    before = copy.deepcopy(BASE)
    diff = compare_reports(BASE, BASE)
    diff["totals"]["parameters"]["before"]["value"] = -1
    assert before == BASE


def _paths(tree, prefix=()):
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield (*prefix, key)
            yield from _paths(value, (*prefix, key))
    elif isinstance(tree, list):
        for index, value in enumerate(tree):
            yield (*prefix, index)
            yield from _paths(value, (*prefix, index))


ALL_PATHS = list(_paths(BASE))
REPLACEMENTS = st.sampled_from([None, -1, 1.5, float("nan"), "x", [], {}, True, "complete", 10**30])


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(ALL_PATHS), REPLACEMENTS, st.booleans())
def test_random_mutations_raise_only_value_error(path, replacement, delete):
    mutated = copy.deepcopy(BASE)
    parent = mutated
    for key in path[:-1]:
        parent = parent[key]
    if delete and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = replacement
    try:
        diff = compare_reports(BASE, mutated)
    except ValueError as error:
        assert str(error)  # a message for people, never an empty error
    else:  # the mutation kept the report valid: the diff is still well formed
        assert set(diff) == {"schema_version", "totals", "layers"}
        assert all(
            entry["status"] in ("complete", "partial", "unavailable") for entry in diff["totals"].values()
        )


def test_added_and_removed_snapshots_keep_token_dependencies():
    # extensions-and-transformers.md 16.1: added/removed snapshots keep the row's token object.
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    tokens = crawl_module(nn.Sequential(nn.Linear(8, 8), layer), (3, 8))
    plain = crawl_module(nn.Sequential(nn.Linear(8, 8)), (3, 8))
    shared = {(row["path"], row["call_index"]) for row in plain["layers"]}
    with_tokens = [
        row
        for row in tokens["layers"]
        if "token_dependencies" in row and (row["path"], row["call_index"]) not in shared
    ]
    assert [row["path"] for row in with_tokens] == ["1"]  # the encoder layer's row
    added = compare_reports(plain, tokens)["layers"]["added"]
    removed = compare_reports(tokens, plain)["layers"]["removed"]
    for entries in (added, removed):
        kept = {(entry["path"], entry["call_index"]): entry for entry in entries}
        for row in with_tokens:
            entry = kept[(row["path"], row["call_index"])]
            assert entry["token_dependencies"] == row["token_dependencies"]
            assert entry["token_dependencies"] is not row["token_dependencies"]  # a copy
