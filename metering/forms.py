"""UI forms of metering: shape only; the services decide who may and say why not."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms

from gpuplatform.accounts.models import User
from metering.chargeback.report import IDLE_MODES
from metering.models import Basis
from quotas.models import Flavor
from tenants.models import Tenant


class RateCardForm(forms.Form):
    gpu_model = forms.CharField(
        max_length=100, label="GPU model", help_text="As the inventory names it, e.g. H100-80GB."
    )
    flavor = forms.ChoiceField(
        required=False, help_text="Empty: every pool of the model without a flavor card."
    )
    currency = forms.CharField(min_length=3, max_length=3, initial="USD", help_text="ISO 4217.")
    price_per_ge_hour = forms.DecimalField(
        min_value=0, max_digits=18, decimal_places=6, label="Price per GE-hour"
    )
    basis = forms.ChoiceField(choices=Basis.choices, initial=Basis.ALLOCATION)
    blend_weight = forms.DecimalField(
        min_value=0, max_value=1, max_digits=4, decimal_places=3, initial=Decimal("0.5"), required=False,
        help_text="Blended only: the share priced on what was held (the rest on what was used).",
    )  # fmt: skip
    effective_from = forms.DateTimeField(help_text="A whole hour, UTC, e.g. 2025-04-01 00:00.")
    effective_to = forms.DateTimeField(required=False, help_text="Exclusive; empty: until further notice.")
    note = forms.CharField(max_length=200, required=False)

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["flavor"]
        assert isinstance(field, forms.ChoiceField)
        flavors = Flavor.objects.visible_to(user).order_by("name")
        field.choices = [("", "any (GPU model card)")] + [(str(f.pk), f.name) for f in flavors]


class CloseForm(forms.Form):
    idle = forms.ChoiceField(
        choices=[(m, m) for m in IDLE_MODES],
        initial=IDLE_MODES[0],
        label="Idle capacity",
        help_text="central: one line per pool the platform carries; distributed: shared by the tenants "
        "charged on the pool, by their card-hours.",
    )
    confirm = forms.BooleanField(label="I understand the period can never change again once closed.")
    acknowledge_unpriced = forms.BooleanField(
        required=False,
        label="I acknowledge that the card-hours no rate card covers close unpriced, at no cost.",
    )


class ReportJobForm(forms.Form):
    idle = forms.ChoiceField(choices=[("", "as last built")] + [(m, m) for m in IDLE_MODES], required=False)


class CreditForm(forms.Form):
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.order_by("path"), to_field_name="slug")
    amount = forms.DecimalField(
        max_digits=18, decimal_places=4, help_text="Negative: a credit to the tenant; positive: a charge."
    )
    currency = forms.CharField(min_length=3, max_length=3, initial="USD", help_text="ISO 4217, in capitals.")
    reason = forms.CharField(
        max_length=200, help_text="Shown on the tenant's statement and in the audit log."
    )


class ExchangeRateForm(forms.Form):
    currency = forms.CharField(
        min_length=3, max_length=3, help_text="ISO 4217, in capitals: the cards' other currency."
    )
    rate = forms.DecimalField(
        max_digits=18, decimal_places=8, help_text="What one unit of it is worth in the period's currency."
    )
    source = forms.CharField(max_length=200, help_text="Where the rate comes from, e.g. ECB reference rate.")
    as_of = forms.DateField(label="Rate date", help_text="The rate's date at its source (YYYY-MM-DD).")


class CostModelForm(forms.Form):
    INPUTS = (
        "purchase_price_per_card", "amortisation_months", "watts_under_load", "price_per_kwh", "pue",
        "hosting_per_card_month", "hours_per_month",
    )  # fmt: skip
    gpu_model = forms.CharField(max_length=100, label="GPU model", help_text="As the inventory names it.")
    flavor = forms.ChoiceField(
        required=False, help_text="Empty: every pool of the model without a flavor card."
    )
    currency = forms.CharField(min_length=3, max_length=3, initial="USD", help_text="ISO 4217, in capitals.")
    purchase_price_per_card = forms.DecimalField(min_value=0, max_digits=18, decimal_places=2)
    amortisation_months = forms.IntegerField(min_value=1, max_value=240, initial=48)
    watts_under_load = forms.DecimalField(
        min_value=0, max_digits=10, decimal_places=2, label="Watts under load"
    )
    price_per_kwh = forms.DecimalField(min_value=0, max_digits=12, decimal_places=6, label="Price per kWh")
    pue = forms.DecimalField(min_value=1, max_digits=5, decimal_places=3, initial=Decimal("1.4"), label="PUE")
    hosting_per_card_month = forms.DecimalField(
        min_value=0, max_digits=18, decimal_places=2, initial=0, required=False, help_text="Empty: none."
    )
    hours_per_month = forms.DecimalField(
        min_value=1, max_digits=8, decimal_places=2, initial=730, required=False, help_text="Empty: 730."
    )
    effective_from = forms.DateTimeField(required=False, help_text="To create the card: a whole hour, UTC.")
    effective_to = forms.DateTimeField(required=False)

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["flavor"]
        assert isinstance(field, forms.ChoiceField)
        flavors = Flavor.objects.visible_to(user).order_by("name")
        field.choices = [("", "any (GPU model card)")] + [(str(f.pk), f.name) for f in flavors]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("hosting_per_card_month") is None:
            data["hosting_per_card_month"] = Decimal(0)
        if data.get("hours_per_month") is None:
            data["hours_per_month"] = Decimal(730)
        if "create" in self.data and not data.get("effective_from"):
            self.add_error("effective_from", "A rate card needs the hour it takes effect.")
        return data


class RateCardEditForm(forms.Form):
    """A card not yet in effect: its price, basis and hours; its GPU model and flavor stay."""

    currency = forms.CharField(min_length=3, max_length=3, help_text="ISO 4217.")
    price_per_ge_hour = forms.DecimalField(
        min_value=0, max_digits=18, decimal_places=6, label="Price per GE-hour"
    )
    basis = forms.ChoiceField(choices=Basis.choices)
    blend_weight = forms.DecimalField(
        min_value=0, max_value=1, max_digits=4, decimal_places=3, required=False,
        help_text="Blended only: the share priced on what was held (the rest on what was used).",
    )  # fmt: skip
    effective_from = forms.DateTimeField(help_text="A whole hour, UTC, still in the future.")
    effective_to = forms.DateTimeField(required=False, help_text="Exclusive; empty: until further notice.")
    note = forms.CharField(max_length=200, required=False)

    def values(self) -> dict[str, Any]:
        data = dict(self.cleaned_data)
        data["currency"] = data["currency"].upper()
        if data["blend_weight"] is None:
            data.pop("blend_weight")
        return data


class RateCardEndForm(forms.Form):
    effective_to = forms.DateTimeField(
        label="Ends at", help_text="A whole hour, UTC (exclusive): the last priced hour is the one before."
    )
    confirm = forms.BooleanField(
        label="I understand that hours from then on are priced by no card unless another one starts then."
    )
