"""Extended statistics (PostgreSQL only) on the columns the period report groups the ledger by.

Why: the planner multiplies the columns' numbers of distinct values as if they were independent (40
pools x 40 pool names x 4 GPU models x 50 tenants = 320,000) and caps the product at a tenth of the
rows, where the month holds a few hundred combinations: it then expects too many groups to hash in
memory and sorts the month instead (60 s at 7.2M rows, docs/benchmarks.md). An ``ndistinct``
statistics object makes ANALYZE count the combinations themselves. ANALYZE runs here once so the
next report is planned with them; autovacuum keeps them current as the ledger grows.
"""

from django.db import migrations

from gpuplatform.db.migration_sql import on_postgresql

STATISTICS = """
CREATE STATISTICS IF NOT EXISTS metering_usagehour_report_groups (ndistinct)
    ON cluster_id, pool_id, pool_name, gpu_model, tenant_id, flavor_name, meter FROM metering_usagehour;
CREATE STATISTICS IF NOT EXISTS metering_capacityhour_report_groups (ndistinct)
    ON cluster_id, pool_id, pool_name, gpu_model FROM metering_capacityhour;
ANALYZE metering_usagehour, metering_capacityhour;
"""

DROP_STATISTICS = """
DROP STATISTICS IF EXISTS metering_usagehour_report_groups;
DROP STATISTICS IF EXISTS metering_capacityhour_report_groups;
"""


class Migration(migrations.Migration):
    dependencies = [("metering", "0005_slos")]

    operations = [migrations.RunPython(on_postgresql(STATISTICS), on_postgresql(DROP_STATISTICS))]
