"""The memory ledger of ``measure_memory``: every storage's lifetime in one workload, and its report.

It owns the dispatch mode that follows storages (``ledger``), the module calls it files bytes under
(``calls``) and the report build (``build``).

It may import ``torch``, :mod:`torchscan.report`, :mod:`torchscan.runtime`, the shared helpers at
:mod:`torchscan.analysis`'s top and :mod:`torchscan.analysis.dispatch` (phases, the Dynamo guard,
higher-order operators, distributed calls); never the crawl, :mod:`torchscan.measure`,
:mod:`torchscan.process`, views or the CLI.
"""
