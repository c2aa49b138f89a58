# Why a request awaits approval, from the figures admission judged (the approval inbox shows it).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("quotas", "0003_queue_preemption_and_flavor_fallback")]

    operations = [
        migrations.AddField(
            model_name="capacityrequest",
            name="approval_basis",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
