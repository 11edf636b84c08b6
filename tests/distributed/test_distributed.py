"""distributed.md 5 with real gloo process groups: 2 ranks via torch.multiprocessing.spawn.

One spawn (module fixture) runs every scenario of ``dist_scenarios.acceptance``; the tests assert on
the two ranks' reports. Every spawn has a 60 s deadline and destroys its process group.
"""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available in this build", allow_module_level=True)
pytest.importorskip("torch.distributed.tensor.parallel")

import dist_harness  # noqa: E402  (tests/distributed is on sys.path under pytest's default import mode)
import dist_scenarios  # noqa: E402

import torchscan  # noqa: E402
from torchscan.report.validate import validate_report  # noqa: E402
from torchscan.report.validate.operators import validate_flop_report  # noqa: E402


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    return dist_harness.run_ranks(dist_scenarios.acceptance, tmp_path_factory.mktemp("acceptance"))


def _matrix_flops(report):
    return sum(v for k, v in report["by_operator"].items() if k in ("aten.mm", "aten.addmm"))


def test_dtensor_matmul_executed_and_logical(ranks):
    # A[64×32] Shard(0) @ B[32×16]: each rank multiplies its 32×32 shard, 2·32·32·16 = 32,768;
    # the logical product is 2·64·32·16 = 65,536
    for rank, result in enumerate(ranks):
        report = result["matmul"]
        validate_flop_report(report)
        assert report["total"]["status"] == "complete"
        assert report["total"]["value"] == 32_768
        assert report["total"]["scope"] == "workload"
        assert report["logical_total"]["status"] == "complete"
        assert report["logical_total"]["value"] == 65_536
        assert report["logical_total"]["scope"] == "global"
        assert report["context"]["distributed"] == {
            "backend": "gloo",
            "world_size": 2,
            "rank": rank,
            "mesh": [{"name": "dim0", "size": 2}],
        }
    merged = torchscan.merge_reports([ranks[1]["matmul"], ranks[0]["matmul"]])
    assert merged["ranks"] == [0, 1]
    assert merged["totals"]["operator_flops"]["status"] == "complete"
    assert merged["totals"]["operator_flops"]["value"] == 65_536
    assert merged["totals"]["logical_operator_flops"]["value"] == 65_536
    assert merged["imbalance"]["operator_flops"]["value"] == 1.0


def test_redistribution_inside_a_dtensor_operator_is_executed_work(ranks):
    # A Shard(1): local 64×16; B is chunked to 16×16 on each rank (chunk + clone, then mm):
    # executed 2·64·16·16 = 32,768, logical 2·64·32·16 = 65,536, with no double counting
    for result in ranks:
        report = result["redistributed"]
        assert report["by_operator"] == {"aten.mm": 32_768}
        assert report["ignored_operators"]["aten.clone"]["calls"] == 1
        assert report["logical_total"]["value"] == 65_536
        assert report["total"]["status"] == "complete"


def test_tensor_parallel_mlp(ranks):
    # Colwise Linear(32, 64): 2·8·32·32 = 16,384 per rank; Rowwise Linear(64, 32): 2·8·32·32 = 16,384
    for result in ranks:
        report = result["tp_mlp"]
        assert report["total"]["status"] == "complete"
        assert _matrix_flops(report) == 32_768
        # the all_reduce of the Rowwise output is communication, never a FLOP gap: 8·32·4 bytes
        calls = report["communication"]["by_operator"]["_c10d_functional.all_reduce"]
        assert calls == {"calls": 1, "bytes": 8 * 32 * 4}
        assert report["communication"]["total_bytes"]["value"] == 1024
        assert report["communication"]["total_bytes"]["method"] == "torchscan_collective_bytes"
        assert not [d for d in report["diagnostics"] if "c10d" in d.get("operator", "")]
        # logical: both products at global shapes, 2·8·32·64 twice = 65,536, plus the plain-tensor
        # ReLU as executed (8·32 = 256); the executed total also has ReLU 256 and the Rowwise bias
        # division of the redistribution (32)
        assert report["by_operator"]["aten.relu"] == 256
        assert report["logical_total"]["known_value"] == 65_536 + 256
        # ColwiseParallel's default use_local_output=True hands the ReLU a plain local shard: its
        # 256 FLOPs may understate the logical 8·64 = 512, so the logical total is a lower bound
        assert report["logical_total"]["status"] == "partial"
        (note,) = [d for d in report["diagnostics"] if d["code"] == "plain_tensor_work_in_logical_total"]
        assert note["metric"] == "logical_flops" and note["message"].startswith("256 FLOPs ran on plain")
        assert report["total"]["value"] == 32_768 + 256 + report["by_operator"].get("aten.div", 0)


def test_crawl_module_on_tensor_parallel_model(ranks):
    for rank, result in enumerate(ranks):
        report = result["tp_crawl"]
        validate_report(report)
        flops = report["operator_flops"]
        assert flops["total"]["status"] == "complete"
        assert _matrix_flops(flops) == 32_768
        assert flops["logical_total"]["known_value"] == 65_536 + 256
        assert report["context"]["distributed"]["rank"] == rank
    merged = torchscan.merge_reports([r["tp_crawl"] for r in ranks])
    assert merged["merged_type"] == "analysis"
    assert merged["totals"]["communication_bytes"]["value"] == 2048
    assert merged["totals"]["logical_operator_flops"]["known_value"] == 65_536 + 256


def test_fsdp2_forward_backward(ranks):
    # forward 2·8·32·64 + 2·8·64·32 = 65,536; weight gradients 65,536; the second Linear's input
    # gradient 2·8·32·64 = 32,768 (the first Linear's input needs none): 163,840 per rank
    for result in ranks:
        report = result["fsdp"]
        assert _matrix_flops(report) == 163_840
        assert report["total"]["status"] == "complete"
        assert "logical_total" not in report  # FSDP2 computes on all-gathered plain tensors
        by_operator = report["communication"]["by_operator"]
        assert by_operator["c10d._allgather_base_"]["calls"] >= 1
        assert by_operator["c10d._reduce_scatter_base_"]["calls"] >= 1
        # each rank hands its parameter shard to the all-gather: (64·32 + 64 + 32·64 + 32) / 2 floats
        assert by_operator["c10d._allgather_base_"]["bytes"] % (2096 * 4) == 0
        assert report["ignored_operators"]["fsdp.all_gather_copy_in"]["calls"] >= 1
    merged = torchscan.merge_reports([r["fsdp"] for r in ranks])
    matrix = [_matrix_flops(r["fsdp"]) for r in ranks]
    assert sum(matrix) == 327_680
    assert merged["totals"]["operator_flops"]["status"] == "complete"
    assert "logical_operator_flops" not in merged["totals"]


def test_ddp_gradient_all_reduce_is_communication(ranks):
    # DDP all-reduces the gradients of all 4,192 parameters (one bucket) of float32: 16,768 bytes
    for result in ranks:
        report = result["ddp"]
        assert _matrix_flops(report) == 163_840
        assert report["total"]["status"] == "complete"
        assert report["communication"]["by_operator"]["c10d.allreduce_"] == {"calls": 1, "bytes": 16_768}


def test_benchmark_reports_merge_by_slowest_rank_and_maximum(ranks):
    reports = [r["tp_workload"] for r in ranks]
    for rank, report in enumerate(reports):
        validate_report(report)
        assert report["context"]["distributed"]["rank"] == rank
        # the tensor-parallel MLP all-reduces on every call: counts were agreed, so no rank hung
        assert report["measurement"]["agreed_across_ranks"] == 2
        assert report["totals"]["operator_flops"]["status"] == "complete"
    assert reports[0]["measurement"]["measured_calls"] == reports[1]["measurement"]["measured_calls"]
    merged = torchscan.merge_reports(reports)
    latency = merged["totals"]["latency"]
    assert latency["scope"] == "max_over_ranks"
    assert latency["value"] == max(r["totals"]["latency"]["value"] for r in reports)
    memory = merged["totals"]["peak_memory"]
    assert memory["scope"] == "max_over_ranks"
    assert memory["value"] == max(r["totals"]["peak_memory"]["value"] for r in reports)
    assert merged["imbalance"]["latency"]["status"] == "complete"
    assert merged["imbalance"]["latency"]["value"] >= 1.0
    assert merged["per_rank"][1]["totals"]["latency"] == reports[1]["totals"]["latency"]
    validate_report(json.loads(json.dumps(merged)))


def _agreed_calls(measurement):
    # Timer.timeit(n) runs max(n // 100, 2) untimed warm-up calls, then n timed ones. Agreed timing
    # runs timeit(0) five times (the timer's overhead), calibration blocks of 1, 10, ... calls up to
    # the agreed calls per block, then the measured blocks.
    def timeit(n):
        return max(n // 100, 2) + n

    number = measurement["number_per_run"]
    calls, block = 5 * timeit(0), 1
    while block <= number:
        calls, block = calls + timeit(block), block * 10
    return calls + len(measurement["raw_times_seconds"]) * timeit(number)


def test_uneven_ranks_run_identical_agreed_call_counts(ranks):
    reports = [r["agreed"] for r in ranks]
    for report in reports:
        validate_report(report)
        assert report["measurement"]["agreed_across_ranks"] == 2
    first, second = (report["measurement"] for report in reports)
    assert first["number_per_run"] == second["number_per_run"]
    assert len(first["raw_times_seconds"]) == len(second["raw_times_seconds"]) >= 2
    # every call issued one all_reduce; waiting for all of them finished on both ranks, and the count
    # is 1 first call + 1 warmup + the agreed timer's calls, the same on both ranks
    expected = 2 + _agreed_calls(first)
    assert [r["agreed_calls"] for r in ranks] == [expected, expected]
    # rank 1 sleeps 0.5 ms per call; rank 0 only enqueues an all_reduce: the merge takes rank 1's
    merged = torchscan.merge_reports(reports)
    latency = [report["totals"]["latency"]["value"] for report in reports]
    assert latency[1] >= 0.0005
    assert merged["totals"]["latency"]["value"] == latency[1] == max(latency)
    assert merged["totals"]["latency"]["scope"] == "max_over_ranks"


def test_opting_out_times_each_rank_on_its_own_clock(ranks):
    # without agreement the same uneven pace picks different calls per block on the two ranks: the
    # disagreement agreed timing prevents (the opt-out is only for collective-free workloads)
    alone = [r["alone"]["measurement"] for r in ranks]
    assert "agreed_across_ranks" not in alone[0] and "agreed_across_ranks" not in alone[1]
    assert alone[0]["number_per_run"] > alone[1]["number_per_run"]


def test_ranks_with_different_warmups_all_raise_before_the_first_call(ranks):
    for result in ranks:
        (message,) = result["warmup_mismatch"]  # the workload never ran
        assert message.startswith("warmup must be the same on every rank")
        assert "from 0 to 1 over the 2 ranks" in message


def test_a_raising_dtensor_operator_leaves_no_mode(ranks):
    for result in ranks:
        assert result["dtensor_error"] == "RuntimeError"
        assert result["modes_left"] == 0


def test_caller_process_group_untouched(ranks):
    assert [r["group_still_initialized"] for r in ranks] == [True, True]


def test_single_process_report_has_no_distributed_parts():
    assert not dist.is_initialized()
    report = torchscan.measure_flops(lambda: torch.ones(4, 4) @ torch.ones(4, 4))
    assert "distributed" not in report["context"]
    assert "logical_total" not in report
    assert "communication" not in report


def test_a_raising_rank_fails_the_test_instead_of_hanging(tmp_path):
    import torch.multiprocessing as mp

    # Either rank may be reported first: rank 1's own error, or rank 0's "connection closed by peer"
    # at its collective once rank 1 died. Both end the test well before the deadline.
    with pytest.raises(mp.ProcessRaisedException, match=r"Process [01] terminated"):
        dist_harness.run_ranks(dist_scenarios.raising, tmp_path, timeout=30)
