"""The views of an AnalysisReport: the interactive module cost explorer (HTML), its SVG snapshot, the
icicle geometry they share, and the terminal table of ``summary``.

Reads reports only (never torch); imports views.common and views.comparison.
"""
