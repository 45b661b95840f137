-- Migration 4 on SQLite, as it ran on a new database.
-- test_store_migrations.py builds databases of the old versions from these.
ALTER TABLE scores ADD COLUMN sample_rate REAL;
