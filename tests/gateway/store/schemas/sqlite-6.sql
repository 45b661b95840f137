-- Migration 6 on SQLite, as it ran on a new database.
-- test_store_migrations.py builds databases of the old versions from these.
ALTER TABLE scores ADD COLUMN tamper TEXT;
ALTER TABLE scores ADD COLUMN normalised TEXT;
CREATE INDEX IF NOT EXISTS scores_tamper_created ON scores (created_at) WHERE tamper IS NOT NULL;
