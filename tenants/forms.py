from __future__ import annotations

from typing import Any

from django import forms

from tenants.models import Role, Tenant, TenantState, dns_label


class TenantForm(forms.Form):
    slug = forms.CharField(max_length=63, validators=[dns_label], help_text="Lowercase, digits and '-'.")
    display_name = forms.CharField(max_length=200)
    cost_centre = forms.CharField(max_length=64, required=False)
    state = forms.ChoiceField(choices=TenantState.choices, initial=TenantState.ACTIVE)
    parent = forms.ModelChoiceField(queryset=Tenant.objects.none(), required=False, empty_label="(top level)")
    namespaces = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Kubernetes namespaces this tenant owns, one per line: 'namespace' or 'cluster/namespace'.",
    )

    def __init__(self, *args: Any, parent_choices: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if parent_choices is not None:
            self.fields["parent"].queryset = parent_choices  # type: ignore[attr-defined]

    def clean_namespaces(self) -> list[tuple[str, str]]:
        return parse_namespaces(self.cleaned_data["namespaces"])


def parse_namespaces(text: str) -> list[tuple[str, str]]:
    """Lines of 'namespace' or 'cluster/namespace' as (cluster, namespace) pairs, '' for every cluster."""
    pairs: list[tuple[str, str]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        cluster, _, namespace = line.rpartition("/")
        try:
            dns_label(namespace)
        except forms.ValidationError as exc:
            raise forms.ValidationError(f"{line!r}: {exc.messages[0]}") from exc
        pairs.append((cluster, namespace))
    return pairs


class MembershipForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)
