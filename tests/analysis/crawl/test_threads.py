"""Issue #11 (1): analyses from several threads are serialized; each report holds only its calls and
every process-global setting (collector thresholds, training flags, hooks) is restored."""

from __future__ import annotations

import gc
import threading

import torch
from torch import nn
from torch.nn.modules import module as module_globals

from torchscan import crawl_module
from torchscan.analysis.lock import ANALYSIS_LOCK
from torchscan.measure.flops import measure_flops


def small_model() -> nn.Module:
    return nn.Sequential(
        nn.Linear(4, 8), nn.ReLU(), nn.Sequential(nn.Linear(8, 8), nn.Tanh()), nn.Linear(8, 2)
    )


def _run_in_threads(jobs, repeats: int) -> list[list[dict]]:
    results: list[list[dict]] = [[] for _ in jobs]
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(jobs))

    def worker(index: int) -> None:
        try:
            barrier.wait()
            for _ in range(repeats):
                results[index].append(jobs[index]())
        except BaseException as error:  # re-raised in the main thread below
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    return results


def _check_restored(models, thresholds, enabled) -> None:
    assert gc.get_threshold() == thresholds
    assert gc.isenabled() == enabled
    for model in models:
        assert all(m.training for m in model.modules())
    assert not module_globals._global_forward_hooks
    assert not module_globals._global_forward_pre_hooks
    assert not module_globals._global_forward_hooks_with_kwargs


def test_two_threads_analysing_the_same_model_get_exactly_the_single_thread_rows():
    model = small_model().train()
    expected = crawl_module(model, (4,))["layers"]
    assert len(expected) == 7  # root, 3 children, the nested Sequential's 2
    thresholds, enabled = gc.get_threshold(), gc.isenabled()
    results = _run_in_threads([lambda: crawl_module(model, (4,))] * 2, repeats=50)
    for reports in results:
        assert len(reports) == 50
        assert all(report["layers"] == expected for report in reports)
    _check_restored([model], thresholds, enabled)


def test_two_threads_analysing_different_models_restore_every_global_setting():
    first, second = small_model().train(), nn.Sequential(nn.Conv1d(1, 2, 3), nn.Flatten()).train()
    expected = [crawl_module(first, (4,))["layers"], crawl_module(second, (1, 8))["layers"]]
    thresholds, enabled = gc.get_threshold(), gc.isenabled()
    results = _run_in_threads(
        [lambda: crawl_module(first, (4,)), lambda: crawl_module(second, (1, 8), mode="full")],
        repeats=50,
    )
    for reports, rows in zip(results, expected, strict=True):
        assert all(report["layers"] == rows for report in reports)
    _check_restored([first, second], thresholds, enabled)


def test_a_second_thread_waits_until_the_first_analysis_is_over():
    # Thread B is started from inside A's analysed forward and given time to run; it must not start
    # its own forward (nor appear in A's report) before A's analysis has returned.
    events: list[str] = []
    a_training_seen_by_b: list[bool] = []
    model_b = nn.Linear(2, 2)

    def b_starts(module, args):
        events.append("B forward")
        # A's analysis evaluates model A in eval mode; B may only run once A restored the flag.
        a_training_seen_by_b.append(model_a.training)

    model_b.register_forward_pre_hook(b_starts)
    reports: dict[str, dict] = {}

    class StartsB(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def forward(self, x):
            thread = threading.Thread(target=lambda: reports.update(b=crawl_module(model_b, (2,))))
            thread.start()
            thread.join(timeout=0.5)  # without serialization B finishes here
            events.append("A forward done")
            self.thread = thread
            return self.lin(x)

    model_a = StartsB().train()
    reports["a"] = crawl_module(model_a, (2,))
    model_a.thread.join()
    assert events == ["A forward done", "B forward"]
    assert a_training_seen_by_b == [True]
    assert [row["path"] for row in reports["a"]["layers"]] == ["", "lin"]
    assert [row["path"] for row in reports["b"]["layers"]] == [""]


def test_an_analysis_inside_another_api_on_the_same_thread_still_works():
    # The lock is re-entrant: crawl_module inside measure_flops's workload (same thread) runs.
    model = small_model()
    nested: list[dict] = []
    with ANALYSIS_LOCK:
        flops = measure_flops(lambda: nested.append(crawl_module(model, (4,), mode="structure")))
    assert flops["total"]["status"] in ("complete", "partial")
    assert len(nested[0]["layers"]) == 7


def test_calls_made_by_another_thread_during_an_analysis_are_not_recorded():
    # Global module hooks fire for every thread; a forward of the same model in a thread that does not
    # hold the lock (plain PyTorch code) must not add rows to the analysis of this thread.
    model = small_model()
    ran = threading.Event()

    class CallsFromOtherThread(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, x):
            thread = threading.Thread(target=lambda: (model(torch.ones(1, 4)), ran.set()))
            thread.start()
            thread.join()
            return self.inner(x)

    report = crawl_module(CallsFromOtherThread(), (4,))
    assert ran.is_set()
    assert len(report["layers"]) == 8  # the wrapper + the model's 7 rows, each called once
    assert all(row["call_index"] == 0 for row in report["layers"])
