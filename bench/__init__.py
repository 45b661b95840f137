"""The benchmark harness: `make bench` or `python -m bench` (see bench/README.md)."""
