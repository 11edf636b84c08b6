"""The GenerationReport page and figure: per-step FLOPs and bytes against context length, decode fits.

Reads reports only (never torch); imports views.common.
"""
