"""The score store: commit cost, the PostgreSQL driver, search and stats queries, and
scale-out with scorer processes.
"""
