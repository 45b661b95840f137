-- Migration 2 on SQLite, as the code before the shared template ran it
-- on a new database. test_store_migrations.py builds databases of the old versions from these.
ALTER TABLE scores ADD COLUMN work TEXT;
ALTER TABLE scores ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE scores ADD COLUMN lease_until REAL;
ALTER TABLE scores ADD COLUMN leased_by TEXT;
CREATE INDEX IF NOT EXISTS scores_pending ON scores (created_at) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS scores_leased ON scores (leased_by) WHERE status = 'pending';
