"""The fakes and helpers both the tests and the bench use: a fake OpenAI-compatible
upstream and judge (`fake_openai`), the judges that read answers or obey injected notes
(`reading_judge`, `gullible_judge`, `planted_model`), the attack corpus (`attacks`) and
its runs (`attack_runs`), a uvicorn server on a thread (`servers`), a polling wait
(`waiting`) and a throwaway PostgreSQL cluster (`postgres`).

It imports neither `tests` nor `bench` (import-linter's contract in pyproject.toml):
both reach it, and neither reaches into the other for a fake.
"""
