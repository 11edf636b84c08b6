"""Reports: the wire format every API returns and every view reads, and what checks it.

The schemas (``schema`` and the ``*_schema`` modules: every report kind's ``TypedDict``s, the
labels, ``SCHEMA_VERSION``), the one constructor of every MetricResult (``metric``), diagnostic codes
and their constructor (``codes``, ``diagnostics``), the JSON Schemas generated from the types
(``json_schema``), validation of saved reports (``validate/``), and the pure operations on reports:
``compare_reports``, ``merge_reports``, diffs. It imports nothing from analysis, measure, process,
views or cli, and never imports torch (views and validators depend on it).
"""
