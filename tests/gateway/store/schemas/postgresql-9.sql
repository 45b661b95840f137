-- Migration 9 on PostgreSQL, as it ran on a new database.
-- test_store_migrations.py builds databases of the old versions from these.
CREATE TABLE IF NOT EXISTS probe_pairs (
    probe_id TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    key_name TEXT,
    model TEXT,
    api TEXT,
    dimension TEXT NOT NULL,
    template TEXT NOT NULL,
    group_a TEXT NOT NULL,
    refusal_a TEXT,
    score_a DOUBLE PRECISION,
    biased_a INTEGER,
    length_a INTEGER,
    group_b TEXT NOT NULL,
    refusal_b TEXT,
    score_b DOUBLE PRECISION,
    biased_b INTEGER,
    length_b INTEGER,
    PRIMARY KEY (probe_id, group_b)
);
CREATE INDEX IF NOT EXISTS probe_pairs_created ON probe_pairs (created_at);
