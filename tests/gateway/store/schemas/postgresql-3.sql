-- Migration 3 on PostgreSQL, as the code before the shared template ran it
-- on a new database. test_store_migrations.py builds databases of the old versions from these.
ALTER TABLE scores ADD COLUMN IF NOT EXISTS categories TEXT;
ALTER TABLE scores ADD COLUMN IF NOT EXISTS trace_id TEXT;
CREATE INDEX IF NOT EXISTS scores_key_created ON scores (key_name, created_at);
CREATE INDEX IF NOT EXISTS scores_verdict_created ON scores (verdict, created_at);
CREATE INDEX IF NOT EXISTS scores_model_created ON scores (model, created_at);
CREATE TABLE IF NOT EXISTS score_categories ( category TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL, run_id TEXT NOT NULL, PRIMARY KEY (category, created_at, run_id));
CREATE INDEX IF NOT EXISTS score_categories_run ON score_categories (run_id);
CREATE INDEX IF NOT EXISTS score_categories_created ON score_categories (created_at, category, run_id);
CREATE OR REPLACE FUNCTION scores_categories_sync() RETURNS trigger AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        DELETE FROM score_categories WHERE run_id = OLD.run_id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.categories IS NOT NULL THEN
        INSERT INTO score_categories (category, created_at, run_id)
        SELECT DISTINCT value, NEW.created_at, NEW.run_id
        FROM jsonb_array_elements_text(NEW.categories::jsonb) AS value
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS scores_categories_insert ON scores;
CREATE TRIGGER scores_categories_insert AFTER INSERT ON scores
    FOR EACH ROW WHEN (NEW.categories IS NOT NULL) EXECUTE FUNCTION scores_categories_sync();
DROP TRIGGER IF EXISTS scores_categories_update ON scores;
CREATE TRIGGER scores_categories_update AFTER UPDATE OF categories ON scores
    FOR EACH ROW EXECUTE FUNCTION scores_categories_sync();
DROP TRIGGER IF EXISTS scores_categories_delete ON scores;
CREATE TRIGGER scores_categories_delete AFTER DELETE ON scores
    FOR EACH ROW EXECUTE FUNCTION scores_categories_sync();
