"""The ``torchscan`` command line (cli.md): ``main`` is the console script's entry point.

The package is the only part of TorchScan that prints or writes files: ``app`` runs the commands,
``files`` writes outputs and reads report files, ``parser``/``targets``/``hardware`` turn
command-line text into objects, ``format``/``status`` word what goes to the terminal. Importing it
does not import torch (``torchscan --help`` stays fast).
"""

from __future__ import annotations

from torchscan.cli.app import BENCHMARK_REFUSAL, main

__all__ = ["BENCHMARK_REFUSAL", "main"]
