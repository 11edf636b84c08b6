"""The FlopReport page (operators, phases, modules with their shares) and the ProfileReport page
(operators by self time).

Reads reports only (never torch); imports views.common.
"""
