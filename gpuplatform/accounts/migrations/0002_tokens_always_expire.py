"""Every token expires: tokens made without an expiry get one 366 days after they were made."""

from datetime import timedelta

from django.db import migrations, models


def give_every_token_an_expiry(apps, schema_editor):
    ApiToken = apps.get_model("accounts", "ApiToken")
    for token in ApiToken.objects.filter(expires_at__isnull=True).only("pk", "created_at"):
        ApiToken.objects.filter(pk=token.pk).update(expires_at=token.created_at + timedelta(days=366))


class Migration(migrations.Migration):
    dependencies = [("accounts", "0001_initial")]

    operations = [
        migrations.RunPython(give_every_token_an_expiry, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="apitoken",
            name="expires_at",
            field=models.DateTimeField(help_text="Every token expires (at most 366 days after it is made)."),
        ),
    ]
