"""The gateway's parts as plugins of other tools (`litellm`: a LiteLLM proxy guardrail)."""
