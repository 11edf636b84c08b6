"""The BenchmarkReport and BenchmarkComparison pages (latency, throughput, operator FLOPs, memory).

Reads reports only (never torch); imports views.common and the pages it embeds (memory, flops).
"""
