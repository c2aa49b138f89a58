"""A stamp that changes whenever the admission catalogue (tenants, priority classes, quotas, queues,
budgets) does, in the writer's transaction: see tenants/admission_catalogue.py. PostgreSQL only."""

from django.db import migrations

TABLES = ("tenants_tenant", "tenants_priorityclass", "tenants_quota", "tenants_queue", "tenants_budget")

CREATE = """
CREATE SEQUENCE IF NOT EXISTS tenants_catalogue_stamp_seq;
CREATE TABLE IF NOT EXISTS tenants_catalogue_stamp (id integer PRIMARY KEY CHECK (id = 1), stamp bigint NOT NULL);
INSERT INTO tenants_catalogue_stamp (id, stamp) VALUES (1, nextval('tenants_catalogue_stamp_seq'))
ON CONFLICT (id) DO NOTHING;

CREATE OR REPLACE FUNCTION tenants_catalogue_stamp_bump() RETURNS trigger AS $$
BEGIN
    INSERT INTO tenants_catalogue_stamp (id, stamp) VALUES (1, nextval('tenants_catalogue_stamp_seq'))
    ON CONFLICT (id) DO UPDATE SET stamp = EXCLUDED.stamp;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;
""" + "".join(
    f"""
CREATE TRIGGER tenants_catalogue_stamp AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table}
FOR EACH STATEMENT EXECUTE FUNCTION tenants_catalogue_stamp_bump();
"""
    for table in TABLES
)

DROP = "".join(f"DROP TRIGGER IF EXISTS tenants_catalogue_stamp ON {table};\n" for table in TABLES) + """
DROP FUNCTION IF EXISTS tenants_catalogue_stamp_bump();
DROP TABLE IF EXISTS tenants_catalogue_stamp;
DROP SEQUENCE IF EXISTS tenants_catalogue_stamp_seq;
"""


def on_postgresql(sql):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("tenants", "0003_flavor_hold")]

    operations = [migrations.RunPython(on_postgresql(CREATE), on_postgresql(DROP))]
