-- Migration 2 on PostgreSQL, as the code before the shared template ran it
-- on a new database. test_store_migrations.py builds databases of the old versions from these.
ALTER TABLE scores ADD COLUMN IF NOT EXISTS work TEXT;
ALTER TABLE scores ADD COLUMN IF NOT EXISTS attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE scores ADD COLUMN IF NOT EXISTS lease_until DOUBLE PRECISION;
ALTER TABLE scores ADD COLUMN IF NOT EXISTS leased_by TEXT;
CREATE INDEX IF NOT EXISTS scores_pending ON scores (created_at) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS scores_leased ON scores (leased_by) WHERE status = 'pending';
