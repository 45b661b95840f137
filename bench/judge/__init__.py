"""The judge under load: its lanes, shedding and batches, transports, and enforced
streams beside a monitor flood.
"""
