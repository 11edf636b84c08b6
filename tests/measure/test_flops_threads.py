"""measure_flops ``by_module`` records only the analysing thread's module calls (issue #20, item 1)."""

from __future__ import annotations

import threading

import torch
from torch import nn

from torchscan import measure_flops


class Blocker(nn.Module):
    """A module whose forward stays open on its own thread until the test releases it."""

    def __init__(self, entered: threading.Event, release: threading.Event) -> None:
        super().__init__()
        self.entered, self.release = entered, release

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.entered.set()
        self.release.wait(5)
        return torch.tanh(x)


def _measure_while_other_thread_is_inside_a_module() -> dict[str, int]:
    """Run measure_flops while another thread sits inside ``Blocker.forward`` (deterministic)."""
    entered, release, start = threading.Event(), threading.Event(), threading.Event()
    blocker, linear, x = Blocker(entered, release), nn.Linear(4, 2), torch.ones(3, 4)

    def other() -> None:
        start.wait(5)
        with torch.no_grad():
            blocker(torch.ones(10, 10))

    thread = threading.Thread(target=other)
    thread.start()

    def workload() -> None:
        start.set()  # the tracker's global hooks are installed now: the other call enters under them
        assert entered.wait(5)
        linear(x)
        release.set()
        thread.join(5)  # its post hook fires while the tracker is still installed

    try:
        report = measure_flops(workload)
    finally:
        start.set()
        release.set()
        thread.join(5)
    return report["by_module"]


def test_other_threads_module_calls_never_reach_by_module():
    for _ in range(3):
        # addmm of (3, 4) @ (4, 2) with bias: 2 * 3 * 4 * 2 = 48 FLOPs, all inside the Linear
        assert _measure_while_other_thread_is_inside_a_module() == {"Linear": 48}


def test_concurrent_model_in_another_thread_does_not_pollute_labels():
    stop = threading.Event()
    model = nn.Sequential(nn.Linear(20, 20), nn.Tanh())

    def spin() -> None:
        with torch.no_grad():
            while not stop.is_set():
                model(torch.ones(20, 20))

    thread = threading.Thread(target=spin)
    thread.start()
    try:
        linear, x = nn.Linear(4, 2), torch.ones(3, 4)
        for _ in range(30):
            assert measure_flops(lambda: linear(x))["by_module"] == {"Linear": 48}
    finally:
        stop.set()
        thread.join(5)
