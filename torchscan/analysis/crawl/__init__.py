"""The module crawl: ``crawl_module`` and ``summary``, one hooked forward turned into an AnalysisReport.

It owns the public entry points (``api``), the global module hooks and their call records
(``hooks``), input placement and description (``inputs``), per-call estimates from the module
formulas (``estimate``, ``leaf_memo``), built-in whole-call handlers and metric ownership
(``handlers``, ``ownership``), rows for modules never called (``uncalled``), roofline time
(``roofline``) and the report build (``build``). During a full crawl it runs the operator observer
of :mod:`torchscan.analysis.dispatch` beside the hooks.

It may import ``torch``, :mod:`torchscan.report`, :mod:`torchscan.formulas`, :mod:`torchscan.runtime`,
the shared helpers at :mod:`torchscan.analysis`'s top (``lock``, ``recursion``, ``traversal``) and
:mod:`torchscan.analysis.dispatch`; never the memory ledger, :mod:`torchscan.measure`,
:mod:`torchscan.process`, views or the CLI.
"""
