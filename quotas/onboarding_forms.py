"""The onboarding form: one page, a section per step (team, namespaces, quota per flavor, queue,
budget, members). It checks shape only and turns itself into a TeamPlan; the services decide, and a
refusal is shown on the field of the step that was refused."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django import forms

from quotas.models import Flavor
from quotas.models.catalogue import QueueingStrategy
from quotas.services.onboarding import MemberGrant, OnboardingRefused, QuotaGrant, TeamPlan
from tenants.forms import parse_namespaces
from tenants.models import Role, dns_label

MEMBER_ROWS = 3  # blank member rows on the page; more are added on the tenant page afterwards
TENANT_FIELDS = {"slug", "display_name", "cost_centre", "namespaces"}
NAMESPACE_CODES = {"namespace_not_delegated", "system_namespace", "namespace_taken"}


@dataclass(frozen=True)
class QuotaRow:
    """One flavor resource the parent may hand down: what the parent holds of it now (None: nothing)."""

    field: str
    flavor: Flavor
    resource: str
    parent_has: int | None


class FlavorChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return obj.name


class OnboardingForm(forms.Form):
    slug = forms.CharField(max_length=63, validators=[dns_label], help_text="Lowercase, digits and '-'.")
    display_name = forms.CharField(max_length=200)
    cost_centre = forms.CharField(max_length=64, required=False)
    namespaces = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="One per line: 'namespace' or 'cluster/namespace'. Leave empty to map them later.",
    )
    queue_name = forms.CharField(
        max_length=63,
        required=False,
        initial="default",
        validators=[dns_label],
        label="Queue name",
        help_text="Leave empty for no queue.",
    )
    queue_strategy = forms.ChoiceField(
        choices=QueueingStrategy.choices,
        initial=QueueingStrategy.BEST_EFFORT_FIFO,
        label="Order",
        help_text="BestEffortFIFO lets a smaller request that fits go ahead of a larger one that waits; "
        "StrictFIFO keeps arrival order.",
    )
    budget_ge_hours = forms.DecimalField(
        required=False,
        min_value=Decimal(0),
        max_digits=14,
        decimal_places=3,
        label="GE-hours a month",
        help_text="Leave empty for no budget.",
    )
    budget_flavor = FlavorChoice(
        queryset=Flavor.objects.none(), required=False, empty_label="every flavor", label="On"
    )
    budget_hard = forms.BooleanField(
        required=False, label="Hard: refuse requests past it (soft only warns)", initial=False
    )

    def __init__(self, *args: Any, quota_rows: list[QuotaRow], flavors: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.quota_rows = quota_rows
        for row in quota_rows:
            self.fields[row.field] = forms.IntegerField(
                required=False, min_value=0, label=f"{row.flavor.name} {row.resource}"
            )
        self.fields["budget_flavor"].queryset = flavors  # type: ignore[attr-defined]
        for i in range(MEMBER_ROWS):
            self.fields[f"member_{i}_username"] = forms.CharField(
                max_length=150, required=False, label="Username"
            )
            self.fields[f"member_{i}_role"] = forms.ChoiceField(
                choices=Role.choices, initial=Role.MEMBER, label="Role"
            )

    def clean_namespaces(self) -> list[tuple[str, str]]:
        return parse_namespaces(self.cleaned_data["namespaces"])

    @property
    def quota_fields(self) -> list[tuple[QuotaRow, forms.BoundField]]:
        return [(row, self[row.field]) for row in self.quota_rows]

    @property
    def member_fields(self) -> list[tuple[forms.BoundField, forms.BoundField]]:
        return [(self[f"member_{i}_username"], self[f"member_{i}_role"]) for i in range(MEMBER_ROWS)]

    def plan(self) -> TeamPlan:
        data = self.cleaned_data
        budget_flavor = data.get("budget_flavor")
        return TeamPlan(
            slug=data["slug"],
            display_name=data["display_name"],
            cost_centre=data["cost_centre"],
            namespaces=tuple(data["namespaces"]),
            quotas=tuple(
                QuotaGrant(flavor_id=row.flavor.pk, resource=row.resource, nominal=data[row.field])
                for row in self.quota_rows
                if data.get(row.field)
            ),
            queue_name=data["queue_name"],
            queue_strategy=data["queue_strategy"],
            budget_ge_hours=data.get("budget_ge_hours"),
            budget_flavor_id=uuid.UUID(str(budget_flavor.pk)) if budget_flavor else None,
            budget_hard=data["budget_hard"],
            members=tuple(
                MemberGrant(username=username, role=data[f"member_{i}_role"])
                for i in range(MEMBER_ROWS)
                if (username := data.get(f"member_{i}_username", "").strip())
            ),
        )

    def show_refusal(self, refused: OnboardingRefused) -> None:
        """Put a service's refusal on the field of its step; the form also says nothing was created."""
        self.add_error(self._field_of(refused), refused.message)

    def _field_of(self, refused: OnboardingRefused) -> str | None:
        if refused.step == "tenant":
            if refused.field in TENANT_FIELDS:
                return refused.field
            return "namespaces" if refused.code in NAMESPACE_CODES else None
        if refused.step == "quota" and refused.position is not None:
            granted = [row for row in self.quota_rows if self.cleaned_data.get(row.field)]
            return granted[refused.position].field
        if refused.step == "member" and refused.position is not None:
            filled = [
                i for i in range(MEMBER_ROWS) if self.cleaned_data.get(f"member_{i}_username", "").strip()
            ]
            return f"member_{filled[refused.position]}_username"
        return {"queue": "queue_name", "budget": "budget_ge_hours"}.get(refused.step)
