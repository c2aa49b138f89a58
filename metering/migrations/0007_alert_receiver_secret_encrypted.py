"""A receiver's signing secret, stored in plain text until now, is encrypted at rest (inventory.crypto,
the kubeconfigs' key): existing rows are encrypted in place, then the plain column is dropped."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

from inventory.crypto import decrypt_text, encrypt_text


def encrypt_secrets(apps: Any, schema_editor: Any) -> None:
    receiver_model = apps.get_model("metering", "AlertReceiver")
    for receiver in receiver_model.objects.exclude(secret=""):
        receiver.secret_encrypted = encrypt_text(receiver.secret)
        receiver.save(update_fields=["secret_encrypted"])


def decrypt_secrets(apps: Any, schema_editor: Any) -> None:
    receiver_model = apps.get_model("metering", "AlertReceiver")
    for receiver in receiver_model.objects.exclude(secret_encrypted=""):
        receiver.secret = decrypt_text(receiver.secret_encrypted)
        receiver.save(update_fields=["secret"])


class Migration(migrations.Migration):
    dependencies = [("metering", "0006_chargeback_statistics")]

    operations = [
        migrations.AddField(
            model_name="alertreceiver", name="secret_encrypted", field=models.TextField(blank=True)
        ),
        migrations.RunPython(encrypt_secrets, decrypt_secrets),
        migrations.RemoveField(model_name="alertreceiver", name="secret"),
    ]
