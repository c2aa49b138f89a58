"""A stamp that changes whenever a pool's physical capacity may have (a shareable unit written, a node
moved between pools, gone or back), in the writer's transaction: see gpuplatform/db/stamped_cache.py and
inventory.selectors.cached_pool_resource_capacity. PostgreSQL only."""

from django.db import migrations

from gpuplatform.db.migration_sql import create_stamp, drop_stamp, on_postgresql

STAMP = "inventory_capacity_stamp"

CREATE = (
    create_stamp(STAMP)
    + f"""
CREATE TRIGGER {STAMP} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
ON inventory_shareableunit FOR EACH STATEMENT EXECUTE FUNCTION {STAMP}_bump();

CREATE TRIGGER {STAMP} AFTER INSERT OR DELETE OR TRUNCATE
ON inventory_node FOR EACH STATEMENT EXECUTE FUNCTION {STAMP}_bump();

-- Node rows are rewritten on every real change of a node; only a pool or presence change moves
-- capacity, so only those renew the stamp.
CREATE TRIGGER {STAMP}_moved AFTER UPDATE OF pool_id, present ON inventory_node
FOR EACH ROW WHEN (OLD.pool_id IS DISTINCT FROM NEW.pool_id OR OLD.present IS DISTINCT FROM NEW.present)
EXECUTE FUNCTION {STAMP}_bump();
"""
)

DROP = (
    f"""
DROP TRIGGER IF EXISTS {STAMP} ON inventory_shareableunit;
DROP TRIGGER IF EXISTS {STAMP} ON inventory_node;
DROP TRIGGER IF EXISTS {STAMP}_moved ON inventory_node;
"""
    + drop_stamp(STAMP)
)


class Migration(migrations.Migration):
    dependencies = [("inventory", "0001_initial")]

    operations = [migrations.RunPython(on_postgresql(CREATE), on_postgresql(DROP))]
