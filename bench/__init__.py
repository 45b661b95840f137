"""The benchmark harness: `python -m bench` lists its scenarios (see bench/README.md)."""
