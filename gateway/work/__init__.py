"""Durable monitor work: what a pending record carries, and claiming it with leases."""
