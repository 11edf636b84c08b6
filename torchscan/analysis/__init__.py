"""The analysis rooms: how one observed execution becomes raw observations, by method.

Three subpackages, one per method of observing: :mod:`~torchscan.analysis.crawl` (module hooks: the
module crawl behind ``crawl_module`` and ``summary``), :mod:`~torchscan.analysis.dispatch` (the
operator dispatch observer behind operator FLOPs, bytes, phases and steps) and
:mod:`~torchscan.analysis.ledger` (the storage ledger behind ``measure_memory``). Beside them sit the
helpers all three share: the process-wide analysis lock (``lock``), the recursion limit of one
observed call (``recursion``) and the non-recursive module-tree walk (``traversal``).

Imports: ``torch``, :mod:`torchscan.report`, :mod:`torchscan.formulas` and :mod:`torchscan.runtime`.
Inside, the arrows point one way: the crawl and the ledger may import the dispatch observer, the
dispatch observer imports neither, and the shared helpers import no subpackage. Nothing here imports
:mod:`torchscan.measure`, :mod:`torchscan.process`, views or the CLI, which build on these rooms.
"""
