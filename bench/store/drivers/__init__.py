"""Pick the PostgreSQL driver for the score store by measurement:
`python -m bench store_drivers`; `run` says what it measures.
"""
