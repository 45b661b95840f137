"""Scale-out: what enqueueing costs a request, and how scoring grows with scorer processes:
`python -m bench scaleout`; `run` says what it measures.
"""
