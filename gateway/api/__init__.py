"""The read APIs over the score store (lookup, search, stats) and the dashboard (`ui`)."""
