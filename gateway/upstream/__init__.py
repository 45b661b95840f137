"""The models behind the gateway: routing a model name to an upstream, and calling it."""
