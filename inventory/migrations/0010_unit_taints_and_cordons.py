# Device taints (KEP-5055) and HAMi's per-GPU cordon: a unit says why it is not free capacity (issue 30).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("inventory", "0009_node_topology_and_driver_managed_mig"),
    ]

    operations = [
        migrations.AddField(
            model_name="shareableunit",
            name="taints",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name="shareableunit",
            name="unavailable",
            field=models.CharField(blank=True, max_length=300),
        ),
    ]
