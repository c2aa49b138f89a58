"""A stamp that changes whenever the admission catalogue (tenants, priority classes, quotas, queues,
budgets) does, in the writer's transaction: see tenants/admission_catalogue.py. PostgreSQL only."""

from django.db import migrations

from gpuplatform.migration_sql import create_stamp, drop_stamp, on_postgresql

STAMP = "tenants_catalogue_stamp"
TABLES = ("tenants_tenant", "tenants_priorityclass", "tenants_quota", "tenants_queue", "tenants_budget")

CREATE = create_stamp(STAMP) + "".join(
    f"""
CREATE TRIGGER {STAMP} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table}
FOR EACH STATEMENT EXECUTE FUNCTION {STAMP}_bump();
"""
    for table in TABLES
)

DROP = "".join(f"DROP TRIGGER IF EXISTS {STAMP} ON {table};\n" for table in TABLES) + drop_stamp(STAMP)


class Migration(migrations.Migration):
    dependencies = [("tenants", "0003_flavor_hold")]

    operations = [migrations.RunPython(on_postgresql(CREATE), on_postgresql(DROP))]
