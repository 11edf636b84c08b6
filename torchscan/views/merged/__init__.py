"""The page of a merged per-rank report (merge_reports): per-rank bars and imbalance.

Reads reports only (never torch); imports views.common and views.benchmark.
"""
