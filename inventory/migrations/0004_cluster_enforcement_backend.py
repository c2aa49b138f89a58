from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("inventory", "0003_node_cards")]

    operations = [
        migrations.AddField(
            model_name="cluster",
            name="enforcement_backend",
            field=models.CharField(
                choices=[
                    ("resourcequota", "ResourceQuota per tenant namespace"),
                    ("kueue", "Kueue (quota tree compiled into its objects)"),
                ],
                default="resourcequota",
                max_length=16,
            ),
        ),
    ]
