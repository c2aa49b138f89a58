"""A stamp that changes whenever a pool's physical capacity may have (a shareable unit written, a node
moved between pools, gone or back), in the writer's transaction: see gpuplatform/stamped_cache.py and
inventory.selectors.cached_pool_resource_capacity. PostgreSQL only."""

from django.db import migrations

CREATE = """
CREATE SEQUENCE IF NOT EXISTS inventory_capacity_stamp_seq;
CREATE TABLE IF NOT EXISTS inventory_capacity_stamp (id integer PRIMARY KEY CHECK (id = 1), stamp bigint NOT NULL);
INSERT INTO inventory_capacity_stamp (id, stamp) VALUES (1, nextval('inventory_capacity_stamp_seq'))
ON CONFLICT (id) DO NOTHING;

CREATE OR REPLACE FUNCTION inventory_capacity_stamp_bump() RETURNS trigger AS $$
BEGIN
    INSERT INTO inventory_capacity_stamp (id, stamp) VALUES (1, nextval('inventory_capacity_stamp_seq'))
    ON CONFLICT (id) DO UPDATE SET stamp = EXCLUDED.stamp;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER inventory_capacity_stamp AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
ON inventory_shareableunit FOR EACH STATEMENT EXECUTE FUNCTION inventory_capacity_stamp_bump();

CREATE TRIGGER inventory_capacity_stamp AFTER INSERT OR DELETE OR TRUNCATE
ON inventory_node FOR EACH STATEMENT EXECUTE FUNCTION inventory_capacity_stamp_bump();

-- Node rows are rewritten on every real change of a node; only a pool or presence change moves
-- capacity, so only those renew the stamp.
CREATE TRIGGER inventory_capacity_stamp_moved AFTER UPDATE OF pool_id, present ON inventory_node
FOR EACH ROW WHEN (OLD.pool_id IS DISTINCT FROM NEW.pool_id OR OLD.present IS DISTINCT FROM NEW.present)
EXECUTE FUNCTION inventory_capacity_stamp_bump();
"""

DROP = """
DROP TRIGGER IF EXISTS inventory_capacity_stamp ON inventory_shareableunit;
DROP TRIGGER IF EXISTS inventory_capacity_stamp ON inventory_node;
DROP TRIGGER IF EXISTS inventory_capacity_stamp_moved ON inventory_node;
DROP FUNCTION IF EXISTS inventory_capacity_stamp_bump();
DROP TABLE IF EXISTS inventory_capacity_stamp;
DROP SEQUENCE IF EXISTS inventory_capacity_stamp_seq;
"""


def on_postgresql(sql):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("inventory", "0001_initial")]

    operations = [migrations.RunPython(on_postgresql(CREATE), on_postgresql(DROP))]
