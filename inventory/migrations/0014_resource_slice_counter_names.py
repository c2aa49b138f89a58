from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("inventory", "0013_kueue_apply_state_applied_objects"),
    ]

    operations = [
        migrations.AddField(
            model_name="resourceslice",
            name="counters",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
