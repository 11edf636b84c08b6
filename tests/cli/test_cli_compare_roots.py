"""``torchscan compare`` lists added and removed calls as subtree roots (issue 23 item 3, CLI part)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn

import torchscan
from torchscan.cli import main
from torchscan.cli.compare_roots import subtree_roots


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(4, 4)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.inner(x))


def _save(path: Path, blocks: int, head: bool = False) -> str:
    torch.manual_seed(0)
    layers: list[nn.Module] = [Block() for _ in range(blocks)]
    net = nn.Sequential(nn.Sequential(*layers), *([nn.Linear(4, 2)] if head else []))
    path.write_text(json.dumps(torchscan.crawl_module(net, (4,))))
    return str(path)


def test_removed_and_added_blocks_are_listed_once_with_their_contents(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    before = _save(tmp_path / "three.json", 3)
    after = _save(tmp_path / "one.json", 1, head=True)
    assert main(["compare", before, after]) == 0
    out = capsys.readouterr().out
    # Removed: blocks 0.1 and 0.2, each a Block call with its Linear and ReLU inside (6 calls);
    # each block holds one Linear(4, 4): 4*4 + 4 = 20 parameters. Added: the head, 4*2 + 2 = 10.
    assert "layer calls: 1 added, 6 removed, " in out
    assert "  removed: 2 subtree(s) holding 6 call(s):\n" in out
    assert "    0.1#0 Block (+2 call(s) inside; 20 params)\n" in out
    assert "    0.2#0 Block (+2 call(s) inside; 20 params)\n" in out
    assert "  added: 1 subtree(s) holding 1 call(s):\n    1#0 Linear (10 params)\n" in out
    assert "0.1.inner" not in out  # a removed block's contents are counted, not listed


def test_subtree_roots_find_parents_in_any_order() -> None:
    entries = [
        {"path": "a.b.c", "call_index": 0},
        {"path": "a.b", "call_index": 0},
        {"path": "a.bb", "call_index": 0},  # a sibling whose name extends "a.b": not inside it
        {"path": "a.b", "call_index": 1},  # a second call of the same module: its own root
    ]
    assert [(root["path"], root["call_index"], n) for root, n in subtree_roots(entries)] == [
        ("a.b", 0, 1),
        ("a.bb", 0, 0),
        ("a.b", 1, 0),
    ]
