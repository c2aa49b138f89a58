"""A rollout may be paused; a paused one still holds its pool (no second rollout starts there)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("policies", "0005_agent_released_at"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="rollout", name="one_running_rollout_per_pool"),
        migrations.AlterField(
            model_name="rollout",
            name="state",
            field=models.CharField(
                choices=[
                    ("running", "running"),
                    ("paused", "paused"),
                    ("succeeded", "succeeded"),
                    ("failed", "failed (rolled back)"),
                    ("cancelled", "aborted"),
                ],
                default="running",
                max_length=16,
            ),
        ),
        migrations.AddConstraint(
            model_name="rollout",
            constraint=models.UniqueConstraint(
                condition=models.Q(("state__in", ["running", "paused"])),
                fields=("pool",),
                name="one_active_rollout_per_pool",
                violation_error_message="A rollout is already running (or paused) on this pool.",
            ),
        ),
    ]
