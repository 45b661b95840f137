-- Migration 9 on PostgreSQL, as it ran on a new database.
-- test_store_migrations.py builds databases of the old versions from these.
CREATE TABLE IF NOT EXISTS gateway_state ( name TEXT PRIMARY KEY, value TEXT NOT NULL, updated_at DOUBLE PRECISION NOT NULL);
