"""The soak: a long run in bursts, sampled for memory, descriptors, backlog and latency."""
