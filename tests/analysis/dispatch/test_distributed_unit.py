"""The single-process parts of analysis.dispatch.distributed: bytes rules, classification, context."""

from __future__ import annotations

import pytest
import torch

from torchscan.analysis.dispatch import distributed
from torchscan.analysis.dispatch.observer import OperatorObserver

FLOAT4 = torch.ones(4)  # 4 float32 elements: 16 bytes
HALF8 = torch.ones(8, dtype=torch.float16)  # 16 bytes


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("_c10d_functional.all_reduce", (FLOAT4, "sum", "0"), 16),  # the input
        ("_c10d_functional.all_gather_into_tensor", (HALF8, 2, "0"), 16),  # the local input
        ("_c10d_functional.reduce_scatter_tensor", (FLOAT4, "sum", 2, "0"), 16),  # the local input
        ("_c10d_functional.all_reduce_coalesced", ([FLOAT4, HALF8], "sum", "0"), 32),
        ("_c10d_functional.wait_tensor", (FLOAT4,), 0),
        ("c10d.allreduce_", ([FLOAT4], None, None, None, False), 16),
        ("c10d._allgather_base_", (torch.ones(8), FLOAT4, None, False), 16),  # input, not output
        ("c10d._reduce_scatter_base_", (FLOAT4, torch.ones(8), None, None, False), 32),  # input
        ("c10d.broadcast_", ([FLOAT4], None, 0, 0, False), 16),
        ("c10d.send", ([HALF8], None, 1, 0), 16),
        ("c10d.recv_", ([HALF8], None, 0, 0), 0),  # receives: hands nothing over
        ("c10d.barrier", (torch.ones(1), None, [], False), 0),
        ("c10d.some_future_collective", (FLOAT4,), None),  # unknown: bytes not guessed
    ],
)
def test_contributed_bytes(name, args, expected):
    assert distributed.contributed_bytes(name, args) == expected


def test_classification():
    assert distributed.is_communication("_c10d_functional.all_reduce")
    assert distributed.is_communication("_c10d_functional_autograd.all_to_all_single")
    assert distributed.is_communication("c10d.allreduce_")
    assert not distributed.is_communication("aten.mm")
    assert distributed.ignored_reason("fsdp.chunk_cat") == distributed.FSDP_COPY_REASON
    assert distributed.ignored_reason("aten.mm") is None


def test_mesh_dimensions_name_unnamed_dimensions():
    class Mesh:
        shape = (2, 4)
        mesh_dim_names = None

    assert distributed.mesh_dimensions(Mesh()) == [{"name": "dim0", "size": 2}, {"name": "dim1", "size": 4}]
    Mesh.mesh_dim_names = ("dp", "tp")
    assert distributed.mesh_dimensions(Mesh()) == [{"name": "dp", "size": 2}, {"name": "tp", "size": 4}]


def test_unknown_collective_makes_only_communication_partial():
    tally = distributed.DistributedTally()
    tally.record_collective("_c10d_functional.all_reduce", (FLOAT4,))
    tally.record_collective("c10d.some_future_collective", (FLOAT4,))
    communication = tally.communication()
    assert communication is not None
    assert communication["total_bytes"]["status"] == "partial"
    assert communication["total_bytes"]["known_value"] == 16
    assert communication["by_operator"]["c10d.some_future_collective"] == {"calls": 1, "bytes": 0}
    assert [d["code"] for d in tally.diagnostics()] == ["unknown_collective_bytes"]


def test_uninitialized_process_group_is_single_process():
    assert distributed.process_group_context(None) is None
    observer = OperatorObserver()
    with observer:
        torch.ones(2, 2) @ torch.ones(2, 2)
    report = observer.report()
    assert "distributed" not in report["context"]
    assert "logical_total" not in report and "communication" not in report
    assert report["total"] == {**report["total"], "status": "complete", "value": 16}
