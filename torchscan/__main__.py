"""``python -m torchscan``: the same command line as the ``torchscan`` console script."""

from torchscan.cli import main

raise SystemExit(main())
