"""PostgreSQL triggers of the quotas app (the demo's SQLite has none and reads afresh instead):

- FlavorHold counters: what admitted and active requests hold of each flavor's resources, kept in
  the writer's transaction on every insert, state change and delete of a request (see
  quotas.models.requests.FlavorHold).
- The catalogue stamp: renewed whenever the admission catalogue (tenants, priority classes, quotas,
  queues, budgets) changes, in the writer's transaction (see quotas/runner/catalogue.py).
"""

from django.db import migrations

from gpuplatform.db.migration_sql import create_stamp, drop_stamp, on_postgresql

# Holding states: keep in step with quotas.models.requests.HOLDING.
FLAVOR_HOLD = """
CREATE OR REPLACE FUNCTION quotas_flavor_hold_apply() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.state IN ('admitted', 'active') AND NEW.state IN ('admitted', 'active')
       AND OLD.flavor_id = NEW.flavor_id AND OLD.amounts = NEW.amounts THEN
        RETURN NULL;  -- admitted -> active, or an unrelated field: what is held does not change
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.state IN ('admitted', 'active') THEN
        INSERT INTO quotas_flavorhold (flavor_id, resource, held)
        SELECT OLD.flavor_id, a.key, -(a.value::bigint) FROM jsonb_each_text(OLD.amounts) AS a
        ON CONFLICT (flavor_id, resource) DO UPDATE SET held = quotas_flavorhold.held + EXCLUDED.held;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.state IN ('admitted', 'active') THEN
        INSERT INTO quotas_flavorhold (flavor_id, resource, held)
        SELECT NEW.flavor_id, a.key, a.value::bigint FROM jsonb_each_text(NEW.amounts) AS a
        ON CONFLICT (flavor_id, resource) DO UPDATE SET held = quotas_flavorhold.held + EXCLUDED.held;
    END IF;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER quotas_flavor_hold
AFTER INSERT OR DELETE OR UPDATE OF state, amounts, flavor_id ON quotas_capacityrequest
FOR EACH ROW EXECUTE FUNCTION quotas_flavor_hold_apply();
"""

DROP_FLAVOR_HOLD = """
DROP TRIGGER IF EXISTS quotas_flavor_hold ON quotas_capacityrequest;
DROP FUNCTION IF EXISTS quotas_flavor_hold_apply();
"""

STAMP = "quotas_catalogue_stamp"
# tenants_tenant belongs to the tenants app; its trigger lives here because only admission reads the stamp.
STAMPED_TABLES = ("tenants_tenant", "quotas_priorityclass", "quotas_quota", "quotas_queue", "quotas_budget")

CATALOGUE_STAMP = create_stamp(STAMP) + "".join(
    f"""
CREATE TRIGGER {STAMP} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table}
FOR EACH STATEMENT EXECUTE FUNCTION {STAMP}_bump();
"""
    for table in STAMPED_TABLES
)

DROP_CATALOGUE_STAMP = "".join(
    f"DROP TRIGGER IF EXISTS {STAMP} ON {table};\n" for table in STAMPED_TABLES
) + drop_stamp(STAMP)


class Migration(migrations.Migration):
    dependencies = [("quotas", "0001_initial"), ("tenants", "0001_initial")]

    operations = [
        migrations.RunPython(on_postgresql(FLAVOR_HOLD), on_postgresql(DROP_FLAVOR_HOLD)),
        migrations.RunPython(on_postgresql(CATALOGUE_STAMP), on_postgresql(DROP_CATALOGUE_STAMP)),
    ]
