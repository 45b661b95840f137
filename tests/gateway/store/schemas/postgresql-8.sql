-- Migration 8 on PostgreSQL, as it ran on a new database.
-- test_store_migrations.py builds databases of the old versions from these.
ALTER TABLE scores ADD COLUMN IF NOT EXISTS review_rank INTEGER;
CREATE INDEX IF NOT EXISTS scores_review_queue ON scores (review_rank, created_at DESC, run_id DESC) WHERE review_rank IS NOT NULL;
CREATE INDEX IF NOT EXISTS scores_key_review_queue ON scores (key_name, review_rank, created_at DESC, run_id DESC) WHERE review_rank IS NOT NULL;
CREATE TABLE IF NOT EXISTS reviews ( id BIGSERIAL PRIMARY KEY, run_id TEXT NOT NULL, reviewer TEXT NOT NULL, key_name TEXT, label TEXT NOT NULL, opinions TEXT, note TEXT, created_at DOUBLE PRECISION NOT NULL);
CREATE INDEX IF NOT EXISTS reviews_run_reviewer ON reviews (run_id, reviewer, created_at);
CREATE INDEX IF NOT EXISTS reviews_created ON reviews (created_at);
CREATE INDEX IF NOT EXISTS reviews_key_created ON reviews (key_name, created_at);
