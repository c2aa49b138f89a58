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
    duration = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_DURATION_SECONDS // 3600,
        label="For how long",
        help_text="Empty: until released.",
    )
    duration_unit = forms.ChoiceField(
        choices=[("hours", "hours"), ("days", "days")], initial="hours", label="Unit", required=False
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

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        duration = data.get("duration")
        seconds = None
        if duration is not None:
            seconds = duration * (86400 if data.get("duration_unit") == "days" else 3600)
            if seconds > MAX_DURATION_SECONDS:
                self.add_error("duration", f"At most {MAX_DURATION_SECONDS // 86400} days.")
        data["duration_seconds"] = seconds
        return data

    def label_flavors(self, outlook: list[Any]) -> None:
        """Flavors with room for the chosen tenant first, each saying what it has free."""
        said = {row.flavor.name: row for row in outlook}
        choices = []
        for name, label in self.fields["flavor"].choices:  # type: ignore[attr-defined]
            row = said.get(name)
            if row is not None and row.has_room:
                label = f"{label}: room now ({row.free} free)"
            elif row is not None and row.quota_nominal is None:
                label = f"{label}: no quota"
            elif row is not None:
                label = f"{label}: would wait"
            choices.append((name, label))
        order = {row.flavor.name: i for i, row in enumerate(outlook)}
        choices.sort(key=lambda choice: order.get(choice[0], len(order)))
        self._choose("flavor", choices)

    def _choose(self, name: str, choices: list[tuple[str, str]]) -> None:
        field = self.fields[name]
        assert isinstance(field, forms.ChoiceField)
        field.choices = choices


class DecisionForm(forms.Form):
    """An approval or a rejection, with the note the requester reads on the request and the audit
    log keeps. The API allows an empty note; a person deciding in the UI says why."""

    note = forms.CharField(
        max_length=500,
        widget=forms.Textarea(attrs={"rows": 2}),
        error_messages={"required": "Say why: the requester reads this note on the request."},
    )
