"""The ScalingReport page and its log-log figure (``measure_scaling``): one panel per metric and axis,
a line per top operator, the fits and the measured points.

Reads reports only (never torch); imports views.common.
"""
