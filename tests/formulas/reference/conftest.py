"""Fixtures of the reference suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def one_intra_op_thread() -> Iterator[None]:
    """Run each reference module on one intra-op thread (restored afterwards): the cases are tiny
    tensors, where thread start-up and contention on a shared CI machine cost 10–30× the kernels."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
