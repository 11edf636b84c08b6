"""The operator dispatch observer: every dispatched operator classified, counted by its formula and filed.

It owns the ``TorchDispatchMode`` that counts operator FLOPs (``observer``) and its report
(``reporting``), how an overload is classified and which formula counts it (``resolution``,
``kinds``, ``fast_counts``), operand checks, operator bytes, workload phases and steps,
``torch.distributed`` and DTensor calls, the Dynamo guard, and higher-order operators
(``higher_order``, ``higher_order_counts``).

It may import ``torch``, :mod:`torchscan.report`, :mod:`torchscan.formulas`, :mod:`torchscan.runtime` and
the shared helpers at :mod:`torchscan.analysis`'s top; never the crawl or the memory ledger (they
build on it), :mod:`torchscan.measure`, :mod:`torchscan.process`, views or the CLI.
"""
