"""Wire formats, pure and without I/O: Server-Sent Events, JSON, and rebuilding a whole
answer from its stream.
"""
