-- Migration 1 on PostgreSQL, as the code before the shared template ran it
-- on a new database. test_store_migrations.py builds databases of the old versions from these.
-- The ledger came first, before migration 1.
CREATE TABLE IF NOT EXISTS schema_migrations ( version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at DOUBLE PRECISION NOT NULL);
CREATE TABLE IF NOT EXISTS scores (
    run_id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    model TEXT,
    api TEXT,
    key_name TEXT,
    mode TEXT,
    stream BOOLEAN NOT NULL DEFAULT FALSE,
    partial BOOLEAN NOT NULL DEFAULT FALSE,
    truncated BOOLEAN NOT NULL DEFAULT FALSE,
    score DOUBLE PRECISION,
    verdict TEXT,
    reason TEXT,
    reason_status TEXT,
    status_reason TEXT,
    judge_calls INTEGER,
    judge_tokens INTEGER,
    result TEXT,
    response_id TEXT,
    request_id TEXT,
    prompt TEXT,
    completion TEXT,
    updated_at DOUBLE PRECISION
);
CREATE INDEX IF NOT EXISTS scores_status ON scores (status);
CREATE INDEX IF NOT EXISTS scores_created_at ON scores (created_at);
CREATE TABLE IF NOT EXISTS score_cache (
    seq BIGSERIAL PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    result TEXT NOT NULL,
    stored_at DOUBLE PRECISION NOT NULL
);
