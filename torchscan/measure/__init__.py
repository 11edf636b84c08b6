"""Measurements of one workload call: operator FLOPs (``measure_flops``), profiles, latency and
throughput, the storage ledger (``measure_memory``), generation steps, scaling sweeps, and
``measure_workload``, which composes them (and ``process``'s peak memory and RSS) into one report.

It may import ``analysis`` (the operator observer and the ledger it runs), ``process``, ``runtime``,
``formulas`` and ``report``, and ``views`` only for the tables ``summary`` and ``measure_workload``
print; never ``cli``. ``summary`` lives here, above both the crawl and the table it prints.
Statistics (``stats``, ``scaling_fit``) are pure.
"""
