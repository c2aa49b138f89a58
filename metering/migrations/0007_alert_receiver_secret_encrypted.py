"""A receiver's signing secret, stored in plain text until now, is encrypted at rest (inventory.crypto,
the kubeconfigs' key): existing rows are encrypted in place, then the plain column is dropped. The audit
events that recorded a receiver's whole URL (its path is often a bearer secret) keep scheme and host."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

from gpuplatform.outbound.policy import redact_url
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


def redact_audited_urls(apps: Any, schema_editor: Any) -> None:
    event_model = apps.get_model("audit", "AuditEvent")
    for event in event_model.objects.filter(action="alert_receiver.created"):
        if isinstance(event.after, dict) and event.after.get("url"):
            event.after = {**event.after, "url": redact_url(str(event.after["url"]))}
            event.save(update_fields=["after"])


class Migration(migrations.Migration):
    dependencies = [("metering", "0006_chargeback_statistics"), ("audit", "0001_initial")]

    operations = [
        migrations.AddField(
            model_name="alertreceiver", name="secret_encrypted", field=models.TextField(blank=True)
        ),
        migrations.RunPython(encrypt_secrets, decrypt_secrets),
        migrations.RemoveField(model_name="alertreceiver", name="secret"),
        migrations.RunPython(redact_audited_urls, migrations.RunPython.noop),
    ]
