"""UI forms of quotas: shape only. The service decides who may do what and says why not."""

from __future__ import annotations

import uuid
from typing import Any

from django import forms

from gpuplatform.accounts.models import User
from quotas.api.requests import MAX_DURATION_SECONDS
from quotas.models import Flavor, PriorityClass
from tenants.models import Tenant


class RequestCapacityForm(forms.Form):
    """What a tenant asks for, in the API's terms (a one-resource flavor's amount). The hidden key
    makes a double submit of one form return the same request, as the API's Idempotency-Key does."""

    tenant = forms.ChoiceField()
    flavor = forms.ChoiceField()
    fallback_flavor = forms.ChoiceField(
        required=False,
        label="Else flavor",
        help_text="Taken when the first cannot hold it (the queue decides when).",
    )
    amount = forms.IntegerField(min_value=1, max_value=10**9, initial=1)
    priority_class = forms.ChoiceField(required=False, label="Priority class")
    duration_seconds = forms.IntegerField(
        required=False,
        min_value=60,
        max_value=MAX_DURATION_SECONDS,
        label="Duration (seconds)",
        help_text="Empty: until released.",
    )
    reason = forms.CharField(required=False, max_length=500, widget=forms.TextInput)
    idempotency_key = forms.CharField(widget=forms.HiddenInput, max_length=128)

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        tenants = Tenant.objects.visible_to(user).filter(depth__gt=0).order_by("path")
        self._choose("tenant", [(t.slug, f"{t.display_name} ({t.slug})") for t in tenants])
        flavors = Flavor.objects.visible_to(user).order_by("name")
        self._choose("flavor", [(f.name, f.display_name or f.name) for f in flavors])
        self._choose(
            "fallback_flavor", [("", "none")] + [(f.name, f.display_name or f.name) for f in flavors]
        )
        classes = PriorityClass.objects.visible_to(user).order_by("value")
        self._choose("priority_class", [("", "default")] + [(p.name, p.name) for p in classes])
        self.fields["idempotency_key"].initial = f"ui-{uuid.uuid4().hex}"

    def _choose(self, name: str, choices: list[tuple[str, str]]) -> None:
        field = self.fields[name]
        assert isinstance(field, forms.ChoiceField)
        field.choices = choices
