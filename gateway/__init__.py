"""gateway: an OpenAI-compatible proxy that scores responses for bias."""

__all__: list[str] = []
