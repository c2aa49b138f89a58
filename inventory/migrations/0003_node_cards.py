"""Nodes say how their card count was found (reported or inferred, and from what) and keep their own
parse issues for the node page; the capacity stamp also moves when cards come or go, since pools'
physical capacity is counted in cards (inventory/capacity.py)."""

from django.db import migrations, models

from gpuplatform.db.migration_sql import on_postgresql

STAMP = "inventory_capacity_stamp"

CREATE = f"""
CREATE TRIGGER {STAMP} AFTER INSERT OR DELETE OR TRUNCATE
ON inventory_gpu FOR EACH STATEMENT EXECUTE FUNCTION {STAMP}_bump();
"""
DROP = f"DROP TRIGGER IF EXISTS {STAMP} ON inventory_gpu;"


class Migration(migrations.Migration):
    dependencies = [("inventory", "0002_capacity_stamp")]

    operations = [
        migrations.AddField(
            model_name="node",
            name="card_basis",
            field=models.CharField(blank=True, max_length=16),
        ),
        migrations.AddField(
            model_name="node",
            name="card_source",
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AddField(
            model_name="node",
            name="parse_issues",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.RunPython(on_postgresql(CREATE), on_postgresql(DROP)),
    ]
