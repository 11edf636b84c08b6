"""The MemoryReport page and figures: the live-bytes timeline by category, modules at the peak, before/after.

Reads reports only (never torch); imports views.common.
"""
