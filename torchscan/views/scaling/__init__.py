"""The ScalingReport page and its log-log figure (measure_scaling).

Reads reports only (never torch); imports views.common.
"""
