-- Migration 5 on PostgreSQL, as it ran on a new database.
-- test_store_migrations.py builds databases of the old versions from these.
ALTER TABLE scores ADD COLUMN IF NOT EXISTS biased_opinions INTEGER;
