-- Migration 3 on SQLite, as the code before the shared template ran it
-- on a new database. test_store_migrations.py builds databases of the old versions from these.
ALTER TABLE scores ADD COLUMN categories TEXT;
ALTER TABLE scores ADD COLUMN trace_id TEXT;
CREATE INDEX IF NOT EXISTS scores_key_created ON scores (key_name, created_at);
CREATE INDEX IF NOT EXISTS scores_verdict_created ON scores (verdict, created_at);
CREATE INDEX IF NOT EXISTS scores_model_created ON scores (model, created_at);
CREATE TABLE IF NOT EXISTS score_categories ( category TEXT NOT NULL, created_at REAL NOT NULL, run_id TEXT NOT NULL, PRIMARY KEY (category, created_at, run_id));
CREATE INDEX IF NOT EXISTS score_categories_run ON score_categories (run_id);
CREATE INDEX IF NOT EXISTS score_categories_created ON score_categories (created_at, category, run_id);
CREATE TRIGGER IF NOT EXISTS scores_categories_insert AFTER INSERT ON scores
WHEN new.categories IS NOT NULL BEGIN
    INSERT OR IGNORE INTO score_categories (category, created_at, run_id)
    SELECT value, new.created_at, new.run_id FROM json_each(new.categories);
END;
CREATE TRIGGER IF NOT EXISTS scores_categories_update AFTER UPDATE OF categories ON scores
BEGIN
    DELETE FROM score_categories WHERE run_id = old.run_id;
    INSERT OR IGNORE INTO score_categories (category, created_at, run_id)
    SELECT value, new.created_at, new.run_id FROM json_each(coalesce(new.categories, '[]'));
END;
CREATE TRIGGER IF NOT EXISTS scores_categories_delete AFTER DELETE ON scores BEGIN
    DELETE FROM score_categories WHERE run_id = old.run_id;
END;
