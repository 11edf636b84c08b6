"""The benchmark harness's CI contract: ``python benchmarks/run.py --smoke`` exits 0 and prints a table.

No timing thresholds: the machine is shared and the smoke models are tiny; this only proves the
harness runs end to end (timing, peers when installed, one fresh-process peak RSS, Markdown output).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_script(name: str, *args: str, timeout: int, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``benchmarks/<name>`` with ``args`` from the repository root; with ``check`` it must exit 0."""
    completed = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / name), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if check:
        assert completed.returncode == 0, completed.stderr[-4000:]
    return completed


@pytest.mark.slow
def test_smoke_run_prints_and_writes_a_table(tmp_path: Path) -> None:
    out = tmp_path / "bench.md"
    completed = run_script("run.py", "--smoke", "--out", str(out), timeout=600)
    stdout = completed.stdout
    assert "| model | tool | median ms | × bare forward | × FlopCounterMode |" in stdout
    for label in ("bare forward", "FlopCounterMode alone", "torchscan crawl_module full"):
        assert f"| {label} |" in stdout
    assert "µs/pair" in stdout
    assert out.read_text(encoding="utf-8") == stdout
    assert "| model | structure KiB/call | full KiB/call (target ≤ 4) |" in stdout
    # issue #13: measure_flops on a training step against FlopCounterMode alone on the same step
    assert "| model | bare step ms | FlopCounterMode ms | measure_flops ms |" in stdout
    assert "| CNN with BatchNorm" in stdout


def test_training_smoke_prints_complete_phases(tmp_path: Path) -> None:
    out = tmp_path / "training.md"
    completed = run_script("training.py", "--smoke", "--out", str(out), timeout=300)
    assert (
        "| model | total | forward | backward | optimizer | recompute | backward ÷ forward |"
        in completed.stdout
    )
    row = next(line for line in completed.stdout.splitlines() if line.startswith("| CNN with BatchNorm"))
    assert row.count("(complete)") == 5  # the total and the four phases
    assert out.read_text(encoding="utf-8") == completed.stdout


def test_retained_table_skips_models_that_did_not_run() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import harness
        import models
        import report
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    spec = models.BY_KEY["stack-tiny"]
    skipped = harness.ModelResult(spec, status="skipped: transformers not installed")
    ran = harness.ModelResult(spec)
    ran.outcomes = {key: harness.Outcome(retained_per_call=2048.0) for key in harness.RETAINED_TOOLS}
    assert report.retained_table([skipped]) == []
    assert report.retained_table([skipped, ran])[2] == f"| {spec.name} | 2.00 | 2.00 |"


def test_operator_coverage_script_classifies_every_overload(tmp_path: Path) -> None:
    """``benchmarks/operator_coverage.py`` prints the table it writes, with counts and the share."""
    out = tmp_path / "coverage.md"
    completed = run_script("operator_coverage.py", "--markdown", str(out), timeout=300)
    stdout = completed.stdout
    assert out.read_text(encoding="utf-8") == stdout
    assert "| namespace | overloads | formula |" in stdout
    assert "aten overloads classified (not uncounted):" in completed.stderr
    every = stdout.split("## Every overload", 1)[1]  # the sections above list operators too
    rows = {line.split(" | ")[0].strip("| `"): line for line in every.splitlines() if line.startswith("| `")}
    # the formula-source table names every operator FlopCounterMode counts, with TorchScan's formula
    sources = stdout.split("## Formula source by torch", 1)[1].split("## Corrections", 1)[0]
    assert "| `aten.convolution_backward` | TorchScan | TorchScan | TorchScan |" in sources
    assert "| formula |" in rows["aten.mm.default"]
    assert "| decomposed |" in rows["aten.linear.default"]  # C++ CompositeImplicitAutograd
    # every classified row of the table is one of the five classes
    kinds = {line.split(" | ")[1] for line in rows.values()}
    assert kinds <= {
        "formula",
        "formula (pointwise fallback)",
        "ignored",
        "decomposed",
        "communication",
        "uncounted",
    }
    # the table's overload count equals the sum of its per-namespace counts
    count_rows = [line for line in stdout.splitlines() if line.startswith(("| aten |", "| torchvision |"))]
    assert sum(int(line.split(" | ")[1].replace(",", "")) for line in count_rows) == len(rows)


def test_generation_smoke_prints_the_overhead_ratio(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    out = tmp_path / "generation.md"
    completed = run_script("generation.py", "--smoke", "--out", str(out), timeout=300)
    assert "| model | prompt + new tokens | bare generate ms |" in completed.stdout
    assert any(
        line.startswith("| GPT-2 2 layers") and line.endswith("× |") for line in completed.stdout.splitlines()
    )
    assert out.read_text(encoding="utf-8") == completed.stdout


def test_memory_smoke_prints_the_agreement_table(tmp_path: Path) -> None:
    out = tmp_path / "memory.md"
    completed = run_script("memory.py", "--smoke", "--out", str(out), timeout=300)
    row = next(line for line in completed.stdout.splitlines() if line.startswith("| training small-cnn"))
    assert "(complete)" in row and row.endswith("| yes |")
    assert out.read_text(encoding="utf-8") == completed.stdout


def test_zoo_memo_check_finds_every_report_unchanged() -> None:
    pytest.importorskip("torchvision")
    completed = run_script("zoo_memo_check.py", "--only", "squeezenet1_1,resnet18", timeout=300)
    assert "squeezenet1_1: same" in completed.stdout
    assert "resnet18: same" in completed.stdout
    assert "models checked: 2; same: 2; different: []" in completed.stdout


def test_zoo_digests_write_then_compare(tmp_path: Path) -> None:
    """``benchmarks/zoo_digests.py`` (issue #36): digests of two paper-built models, compared with
    themselves (identical, exit 0) and with an edited copy (the model is named, exit 1)."""
    out = tmp_path / "digests.json"
    run_script("zoo_digests.py", "--only", "gcn,mobilenet-v1", "--out", str(out), timeout=600)
    written = json.loads(out.read_text(encoding="utf-8"))
    assert sorted(written) == ["gcn", "mobilenet-v1"]
    assert set(written["gcn"]) == {"full", "structure", "measure_flops", "measure_flops_bytes"}
    same = run_script("zoo_digests.py", "--only", "gcn,mobilenet-v1", "--compare", str(out), timeout=600)
    assert "models compared: 2; identical: 2" in same.stdout
    written["gcn"]["full"] = "0" * 64
    out.write_text(json.dumps(written), encoding="utf-8")
    changed = run_script("zoo_digests.py", "--only", "gcn", "--compare", str(out), timeout=600, check=False)
    assert changed.returncode == 1
    assert "different: ['gcn']" in changed.stdout


def test_zoo_versions_dumps_and_compares(tmp_path: Path) -> None:
    """``benchmarks/zoo_versions.py``: a dump of two small paper-built models (forward and training
    step), then a comparison of the dump with itself and with an edited copy naming the operator."""
    import json

    dump = tmp_path / "zoo.json"
    run_script("zoo_versions.py", "--dump", str(dump), "--only", "gcn,mobilenet-v1", timeout=600)
    data = json.loads(dump.read_text(encoding="utf-8"))
    assert set(data["models"]) == {"gcn", "mobilenet-v1"}
    assert set(data["models"]["gcn"]) == {"forward", "training"}
    same = run_script("zoo_versions.py", "--compare", str(dump), str(dump), timeout=120).stdout
    assert "identical operator FLOPs and statuses: 2 model(s)" in same
    operator = next(iter(data["models"]["gcn"]["forward"]["by_operator"]))
    data["models"]["gcn"]["forward"]["by_operator"][operator] += 1
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(data), encoding="utf-8")
    changed = run_script("zoo_versions.py", "--compare", str(dump), str(edited), timeout=120).stdout
    assert (
        f"  forward: {operator} " in changed
        and "identical operator FLOPs and statuses: 1 model(s)" in changed
    )


def test_zoo_causal_compares_mask_aware_and_every_pair_counts() -> None:
    """``benchmarks/zoo_causal.py`` on GPT-2 (causal fused attention: the mask-aware count is lower)
    and BERT (an encoder: no change)."""
    pytest.importorskip("transformers")
    stdout = run_script("zoo_causal.py", "--only", "gpt2,bert", timeout=600).stdout
    rows = {line.split(" | ")[0].strip("| "): line for line in stdout.splitlines() if line.startswith("| ")}
    assert "| +0.00% |" in rows["bert"]
    assert "| -" in rows["gpt2"] and "complete" in rows["gpt2"]


def test_cost_parts_smoke_prints_every_variant() -> None:
    """``benchmarks/cost_parts.py`` (issue #36): the floor, the empty hooks and TorchScan's three calls
    are timed on the tiny stack and printed as one row each (no timing is judged)."""
    completed = run_script("cost_parts.py", "--smoke", timeout=300)
    rows = [line for line in completed.stdout.splitlines() if line.startswith("| 20 × (Linear+ReLU) |")]
    assert [row.split(" | ")[1] for row in rows] == [
        "bare",
        "floor",
        "hooks",
        "floor + hooks",
        "structure",
        "measure_flops",
        "full",
    ]
