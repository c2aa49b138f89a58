"""UI forms of the capacity catalogue: shape only, like the API's serializers. Who may change what,
cross-row rules and the audit event are the catalogue services' (quotas/services/catalogue.py).

Every choice of a related object passes through the scoping door, so a form never offers (nor
accepts) a tenant, pool or flavor the user cannot see; tenant choices narrow further to where the
user's authority reaches, so the form offers no more than the service would allow.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import QuerySet

from gpuplatform.accounts.models import User
from inventory.models import NodePool
from quotas.models import Budget, Flavor, PriorityClass, Queue, Quota
from quotas.models.catalogue import FlavorKind, QueueingStrategy, fraction_text
from tenants import scoping
from tenants.models import Tenant
from tenants.models.identity import dns_label


def tenants_below(user: User) -> QuerySet[Tenant]:
    """Where quotas and budgets may be set: everywhere for platform-admins, else strictly below the
    tenants the user administers (nobody sets their own tenant's quota)."""
    manageable = Tenant.objects.manageable_by(user)
    if user.is_platform_admin:
        return manageable
    return manageable.exclude(path__in=scoping.admin_root_paths(user))


class TenantChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.display_name} ({obj.slug})"


class CatalogueForm(forms.Form):
    """A form of one catalogue model. ``values()`` is what the service receives; on an edit, the
    fields a user may not change are disabled and left out of it."""

    model: type[Any]
    fixed_on_edit: tuple[str, ...] = ()

    def __init__(self, *args: Any, user: User, instance: Any | None = None, **kwargs: Any) -> None:
        self.user = user
        self.instance = instance
        if instance is not None:
            kwargs.setdefault("initial", self.initial_from(instance))
        super().__init__(*args, **kwargs)
        self.scope_choices()
        if instance is not None:
            for name in self.fixed_on_edit:
                self.fields[name].disabled = True

    def scope_choices(self) -> None:
        """Narrow related-object choices to what the user sees (and, for tenants, may manage)."""

    def initial_from(self, instance: Any) -> dict[str, Any]:
        return {name: getattr(instance, name) for name in self.base_fields}

    def values(self) -> dict[str, Any]:
        return {name: value for name, value in self.cleaned_data.items() if not self.fields[name].disabled}

    def _tenants(self, name: str, queryset: QuerySet[Tenant]) -> None:
        field = self.fields[name]
        assert isinstance(field, forms.ModelChoiceField)
        if self.instance is not None and getattr(self.instance, f"{name}_id", None) is not None:
            # The row's own tenant stays a valid (if disabled) choice on its edit form.
            queryset = queryset | Tenant.objects.filter(pk=self.instance.tenant_id)
        field.queryset = queryset.distinct().order_by("path")


def parse_resources(text: str) -> list[dict[str, str]]:
    """``nvidia.com/gpu = 1`` one a line -> the flavor's resources as the API takes them."""
    resources: list[dict[str, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        name, sep, ge = (part.strip() for part in line.partition("="))
        if not sep or not name:
            raise ValidationError(f"Line {number}: write a resource as name = GE per unit.")
        try:
            fraction_text(ge)
        except ValidationError as exc:
            raise ValidationError(f"Line {number}: {exc.messages[0]}") from exc
        if any(r["name"] == name for r in resources):
            raise ValidationError(f"Line {number}: {name} is listed twice.")
        resources.append({"name": name, "ge_per_unit": ge})
    return resources


class FlavorForm(CatalogueForm):
    model = Flavor

    name = forms.CharField(max_length=63, validators=[dns_label], help_text="A DNS label: h100-80gb.")
    display_name = forms.CharField(max_length=200, required=False)
    kind = forms.ChoiceField(choices=FlavorKind.choices, initial=FlavorKind.DEVICE_PLUGIN)
    pool = forms.ModelChoiceField(queryset=NodePool.objects.none(), required=False, label="Node pool")
    gpu_model = forms.CharField(max_length=100, required=False, label="GPU model")
    resources = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        initial="nvidia.com/gpu = 1",
        help_text="One a line: resource name = GE per unit (1, 1/7, 3/8).",
    )
    device_class = forms.CharField(max_length=253, required=False, help_text="DRA flavors only.")
    approval_above = forms.IntegerField(
        min_value=0, required=False, help_text="Requests above this amount wait for approval; empty: never."
    )
    tenant = TenantChoice(queryset=Tenant.objects.none(), required=False, label="Dedicated to")

    def scope_choices(self) -> None:
        pool = self.fields["pool"]
        assert isinstance(pool, forms.ModelChoiceField)
        pool.queryset = NodePool.objects.visible_to(self.user).select_related("cluster").order_by("name")
        self._tenants("tenant", Tenant.objects.visible_to(self.user))

    def initial_from(self, instance: Any) -> dict[str, Any]:
        initial = super().initial_from(instance)
        initial["resources"] = "\n".join(f"{r['name']} = {r['ge_per_unit']}" for r in instance.resources)
        return initial

    def clean_resources(self) -> list[dict[str, str]]:
        return parse_resources(self.cleaned_data["resources"])


class PriorityClassForm(CatalogueForm):
    model = PriorityClass

    name = forms.CharField(max_length=63, validators=[dns_label])
    value = forms.IntegerField(min_value=-(10**9), max_value=10**9, help_text="Higher goes first.")
    preemptible = forms.BooleanField(required=False, initial=True)
    description = forms.CharField(max_length=300, required=False)
    tenant = TenantChoice(queryset=Tenant.objects.none(), required=False, label="Dedicated to")

    def scope_choices(self) -> None:
        self._tenants("tenant", Tenant.objects.visible_to(self.user))


class QuotaForm(CatalogueForm):
    model = Quota
    fixed_on_edit = ("tenant", "flavor", "resource")

    tenant = TenantChoice(queryset=Tenant.objects.none(), to_field_name="slug")
    flavor = forms.ModelChoiceField(queryset=Flavor.objects.none(), to_field_name="name")
    resource = forms.CharField(max_length=253, required=False, help_text="Empty: the flavor's only resource.")
    nominal = forms.IntegerField(min_value=0, max_value=2**31 - 1)
    borrowing_limit = forms.IntegerField(min_value=0, max_value=2**31 - 1, required=False)
    lending_limit = forms.IntegerField(min_value=0, max_value=2**31 - 1, required=False)

    def __init__(self, *args: Any, user: User, instance: Any | None = None, **kwargs: Any) -> None:
        super().__init__(*args, user=user, instance=instance, **kwargs)
        if instance is not None and user.is_platform_admin:
            for name in self.fixed_on_edit:  # platform-admins may move a quota (the API allows it)
                self.fields[name].disabled = False

    def scope_choices(self) -> None:
        flavor = self.fields["flavor"]
        assert isinstance(flavor, forms.ModelChoiceField)
        flavor.queryset = Flavor.objects.visible_to(self.user).order_by("name")
        self._tenants("tenant", tenants_below(self.user))

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        flavor = data.get("flavor")
        if flavor is not None and not data.get("resource"):
            names = flavor.resource_names
            if len(names) != 1:
                self.add_error("resource", f"{flavor.name} counts {len(names)} resources: name one.")
            else:
                data["resource"] = names[0]
        return data


class BudgetForm(CatalogueForm):
    model = Budget
    fixed_on_edit = ("tenant",)

    tenant = TenantChoice(queryset=Tenant.objects.none(), to_field_name="slug")
    flavor = forms.ModelChoiceField(
        queryset=Flavor.objects.none(), required=False, to_field_name="name", empty_label="every flavor"
    )
    limit_ge_hours = forms.DecimalField(
        min_value=Decimal(0), max_digits=14, decimal_places=3, label="Limit (GE-hours a month)"
    )
    # Not ticked by default: a hard budget refuses work, which someone should choose on purpose.
    hard = forms.BooleanField(
        required=False, initial=False, help_text="Hard: refuse requests past it. Soft: warn only."
    )

    def scope_choices(self) -> None:
        flavor = self.fields["flavor"]
        assert isinstance(flavor, forms.ModelChoiceField)
        flavor.queryset = Flavor.objects.visible_to(self.user).order_by("name")
        self._tenants("tenant", tenants_below(self.user))


class QueueForm(CatalogueForm):
    model = Queue
    fixed_on_edit = ("tenant",)

    tenant = TenantChoice(queryset=Tenant.objects.none(), to_field_name="slug")
    name = forms.CharField(max_length=63, validators=[dns_label])
    strategy = forms.ChoiceField(choices=QueueingStrategy.choices, initial=QueueingStrategy.BEST_EFFORT_FIFO)
    weight = forms.DecimalField(
        min_value=Decimal(0),
        max_digits=8,
        decimal_places=3,
        initial=Decimal(1),
        help_text="Scales the tenant's fair share; set from above the tenant.",
    )

    def scope_choices(self) -> None:
        self._tenants("tenant", Tenant.objects.manageable_by(self.user))
