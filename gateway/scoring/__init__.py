"""Scoring a response: policy arithmetic, the judge client, the score cache, judging,
recording, and the service that runs it in the request (enforce) or on a queue
(monitor).
"""
