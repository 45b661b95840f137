"""The fake upstreams and judges the scenarios start, each also runnable alone:
`python -m bench.fakes.server` (the project's fake, set up for load) and
`python -m bench.fakes.paced` (with a real-world pace, judge latency and marks).
"""
