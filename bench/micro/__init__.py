"""Micro-benchmarks, in one process: function calls per request, the log pipeline, stream
text reads, the judged view and tamper detector, and `bias-guard probe`.
"""
