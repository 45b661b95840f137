"""The server edge: the Starlette app and its lifespan, health and metrics endpoints, the
startup line, and the scorer process.
"""
