"""A keyless demo: a small model and a rule-based judge that ship with the gateway.

`bias-gateway demo` (or `scripts/run --demo`) serves them on loopback behind a real
gateway; the tests use the same backend. The judge is a stand-in for an LLM, with
the documented rules of `gateway.demo.rules`.
"""
