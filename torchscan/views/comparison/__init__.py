"""Before/after of two AnalysisReports as the explorer and table show them: the comparison gate and the
words of a delta.

Reads reports only (never torch); imports views.common.
"""
