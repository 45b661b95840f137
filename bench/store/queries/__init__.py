"""Search and stats on a score store of a million records: `python -m bench store_queries`;
`run` says what it measures.
"""
