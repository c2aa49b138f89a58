"""UI forms of metering: shape only; the services decide who may and say why not."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms

from gpuplatform.accounts.models import User
from metering.chargeback.report import IDLE_MODES
from metering.models import Basis
from quotas.models import Flavor


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
