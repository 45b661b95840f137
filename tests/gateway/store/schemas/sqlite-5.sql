-- Migration 5 on SQLite, as it ran on a new database.
-- test_store_migrations.py builds databases of the old versions from these.
ALTER TABLE scores ADD COLUMN biased_opinions INTEGER;
