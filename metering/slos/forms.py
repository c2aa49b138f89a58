"""UI forms of SLOs and alert receivers: shape only, in people's terms (an objective in percent, a
threshold in seconds); the services check every value again and say why not."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms

from gpuplatform.sli_sources import sli_kinds
from metering.slos.models import AlertReceiver, Slo
from tenants.models import Tenant

# The SLI parameters a form offers: name -> (label, help). Ranges are the service's (PARAMS).
PARAM_FIELDS = {
    "within_seconds": (
        "Wait threshold (seconds)",
        "Queue wait: a request admitted within this is good (60 by default).",
    ),
    "saturated": (
        "Saturated above (fraction)",
        "Share delivery: a share busier than this counts (0.9 by default).",
    ),
    "delivered": (
        "Delivered at least (fraction)",
        "Share delivery: a saturated share getting this is good (0.95 by default).",
    ),
    "converge_seconds": (
        "Converge within (seconds)",
        "Policy rollout: a node acking within this is good (900 by default).",
    ),
}


class SloForm(forms.Form):
    name = forms.CharField(max_length=100)
    sli = forms.ChoiceField(label="SLI", choices=())
    objective_percent = forms.DecimalField(
        label="Objective (%)",
        max_digits=6,
        decimal_places=3,  # 99.999 %: the five places an objective keeps
        help_text="The share of good events to keep over the window, strictly between 0 and 100: "
        "99.9 allows 0.1 % bad.",
    )
    window_days = forms.IntegerField(label="Window (days)", initial=30, help_text="1 to 90 days.")
    tenant = forms.ModelChoiceField(
        queryset=Tenant.objects.none(), required=False, empty_label="platform-wide", to_field_name="slug",
        help_text="A tenant: its subtree only.",
    )  # fmt: skip
    receivers = forms.ModelMultipleChoiceField(
        queryset=AlertReceiver.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Alert receivers",
        help_text="Webhooks told when an alert fires and resolves.",
    )
    within_seconds = forms.IntegerField(required=False)
    saturated = forms.DecimalField(required=False, max_digits=6, decimal_places=4)
    delivered = forms.DecimalField(required=False, max_digits=6, decimal_places=4)
    converge_seconds = forms.IntegerField(required=False)

    def __init__(self, *args: Any, instance: Slo | None = None, **kwargs: Any) -> None:
        if instance is not None:
            kwargs.setdefault("initial", self.initial_from(instance))
        super().__init__(*args, **kwargs)
        sli = self.fields["sli"]
        assert isinstance(sli, forms.ChoiceField)
        sli.choices = [(k.name, f"{k.title} ({k.name})") for k in sli_kinds()]
        tenant = self.fields["tenant"]
        assert isinstance(tenant, forms.ModelChoiceField)
        tenant.queryset = Tenant.objects.order_by("path")
        receivers = self.fields["receivers"]
        assert isinstance(receivers, forms.ModelMultipleChoiceField)
        receivers.queryset = AlertReceiver.objects.order_by("name")
        for name, (label, help_text) in PARAM_FIELDS.items():
            self.fields[name].label, self.fields[name].help_text = label, help_text

    def clean_objective_percent(self) -> Decimal:
        value: Decimal = self.cleaned_data["objective_percent"]
        if not Decimal(0) < value < Decimal(100):
            raise forms.ValidationError(
                "The objective is a percentage strictly between 0 and 100 (99.9 allows 0.1 % bad events)."
            )
        return value

    @staticmethod
    def initial_from(slo: Slo) -> dict[str, Any]:
        return {
            "name": slo.name,
            "sli": slo.sli,
            "objective_percent": (slo.objective * 100).normalize(),
            "window_days": slo.window_days,
            "tenant": slo.tenant.slug if slo.tenant is not None else None,
            "receivers": list(slo.receivers.all()),
            **{name: slo.params.get(name) for name in PARAM_FIELDS},
        }

    def values(self) -> dict[str, Any]:
        """What the SLO services take."""
        data = self.cleaned_data
        tenant = data.get("tenant")
        return {
            "name": data["name"],
            "sli": data["sli"],
            "objective": data["objective_percent"] / Decimal(100),
            "window_days": data["window_days"],
            "tenant_id": tenant.pk if tenant is not None else None,
            "params": {name: data[name] for name in PARAM_FIELDS if data.get(name) is not None},
            "receiver_ids": [r.pk for r in data.get("receivers") or []],
        }


class ReceiverForm(forms.Form):
    name = forms.CharField(max_length=100)
    url = forms.CharField(
        max_length=500, label="Webhook URL", help_text="HTTPS; alerts are POSTed to it as JSON."
    )
    secret = forms.CharField(
        max_length=200,
        required=False,
        widget=forms.PasswordInput(render_value=False),
        label="Signing secret",
        help_text="Deliveries are signed with HMAC-SHA256 when set. Stored encrypted, never shown again.",
    )
    remove_secret = forms.BooleanField(required=False, label="Remove the signing secret")

    def __init__(self, *args: Any, instance: AlertReceiver | None = None, **kwargs: Any) -> None:
        if instance is not None:
            kwargs.setdefault("initial", {"name": instance.name, "url": instance.url})
        super().__init__(*args, **kwargs)
        self.instance = instance
        if instance is None:
            del self.fields["remove_secret"]
        elif instance.secret_encrypted:
            self.fields[
                "secret"
            ].help_text = "A secret is set (not shown). Leave empty to keep it; type a new one to replace it."

    def values(self) -> dict[str, Any]:
        data = self.cleaned_data
        values: dict[str, Any] = {"name": data["name"], "url": data["url"]}
        if self.instance is None:
            values["secret"] = data["secret"]
        elif data.get("remove_secret"):
            values["secret"] = ""
        elif data["secret"]:
            values["secret"] = data["secret"]
        return values
