-- Migration 7 on PostgreSQL, as it ran on a new database.
-- test_store_migrations.py builds databases of the old versions from these.
DELETE FROM score_cache;
