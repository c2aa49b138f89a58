"""Flavors renew the catalogue stamp too: a submission's names (quotas/services/request_names.py)
include its flavors, cached under that stamp, so a flavor's rename, dedication or removal must be
seen by the next submission in every process."""

from django.db import migrations

from gpuplatform.db.migration_sql import on_postgresql

STAMP = "quotas_catalogue_stamp"

FLAVOR_TRIGGER = f"""
CREATE TRIGGER {STAMP} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON quotas_flavor
FOR EACH STATEMENT EXECUTE FUNCTION {STAMP}_bump();
"""

DROP_FLAVOR_TRIGGER = f"DROP TRIGGER IF EXISTS {STAMP} ON quotas_flavor;\n"


class Migration(migrations.Migration):
    dependencies = [("quotas", "0005_kueue_workload_checks")]

    operations = [migrations.RunPython(on_postgresql(FLAVOR_TRIGGER), on_postgresql(DROP_FLAVOR_TRIGGER))]
