"""The pool policy form: one field set for every mode; only the chosen mode's fields are read."""

from __future__ import annotations

from typing import Any

from django import forms

from inventory.models import NodePool
from policies.compiler import CorePolicy, MigStrategy, SharingMode
from quotas.models import Flavor, PriorityClass
from tenants.models import Tenant


def parse_geometry(text: str) -> dict[str, dict[str, int]]:
    """ "H100-80GB: 1g.10gb=7" per line (or ";"), profiles separated by commas."""
    geometry: dict[str, dict[str, int]] = {}
    for line in text.replace(";", "\n").splitlines():
        if not line.strip():
            continue
        model, _, rest = line.partition(":")
        if not rest.strip():
            raise forms.ValidationError(f"{line.strip()!r}: write MODEL: profile=count, profile=count")
        per_card: dict[str, int] = {}
        for item in rest.split(","):
            profile, _, count = item.strip().partition("=")
            if not profile or not count.strip().isdigit():
                raise forms.ValidationError(f"{item.strip()!r}: write profile=count, e.g. 1g.10gb=7")
            per_card[profile.strip()] = int(count)
        geometry[model.strip()] = per_card
    return geometry


def geometry_text(geometry: dict[str, Any]) -> str:
    return "\n".join(
        f"{model}: " + ", ".join(f"{p}={c}" for p, c in sorted(per_card.items()))
        for model, per_card in sorted((geometry or {}).items())
        if isinstance(per_card, dict)
    )


class SharingPolicyForm(forms.Form):
    # Which fields each group shows, and for which modes; the page hides the other groups (with
    # JavaScript: without it every group shows, each saying which modes read it).
    MODE_FIELDS = [
        ("Time-slicing and MPS", "time-slicing mps", ["replicas"]),
        ("Time-slicing", "time-slicing", ["fail_requests_greater_than_one"]),
        ("MPS", "mps", ["memory_limit_mib"]),
        ("MIG", "mig", ["mig_strategy", "geometry"]),
        ("HAMi", "hami", ["split_count", "memory_scaling", "core_policy"]),
        ("Resource name", "exclusive time-slicing mps mig hami", ["resource_name"]),
    ]

    mode = forms.ChoiceField(choices=[(m.value, m.value) for m in SharingMode])
    replicas = forms.IntegerField(required=False, help_text="time-slicing and MPS: shares per card (>= 2)")
    fail_requests_greater_than_one = forms.BooleanField(
        required=False, label="Refuse requests for more than one replica (time-slicing)"
    )
    memory_limit_mib = forms.IntegerField(required=False, label="MPS memory limit per replica (MiB)")
    mig_strategy = forms.ChoiceField(
        choices=[(s.value, s.value) for s in MigStrategy], initial="mixed", required=False
    )
    geometry = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="MIG: one line per GPU model, e.g. H100-80GB: 1g.10gb=7",
    )
    split_count = forms.IntegerField(required=False, initial=10, help_text="HAMi: tasks per card")
    memory_scaling = forms.FloatField(
        required=False, initial=1.0, help_text="HAMi: above 1 oversubscribes memory"
    )
    core_policy = forms.ChoiceField(
        choices=[(c.value, c.value) for c in CorePolicy], initial="default", required=False
    )
    resource_name = forms.CharField(
        required=False, max_length=63, help_text="The pool's own resource; empty: nvidia.com/gpu-<pool>"
    )

    def clean_geometry(self) -> dict[str, dict[str, int]]:
        return parse_geometry(self.cleaned_data.get("geometry") or "")

    def parameters(self) -> dict[str, Any]:
        d = self.cleaned_data
        mode = d["mode"]
        if mode == SharingMode.TIME_SLICING:
            return {
                "replicas": d.get("replicas"),
                "fail_requests_greater_than_one": d.get("fail_requests_greater_than_one"),
            }
        if mode == SharingMode.MPS:
            return {"replicas": d.get("replicas"), "memory_limit_mib": d.get("memory_limit_mib")}
        if mode == SharingMode.MIG:
            return {"strategy": d.get("mig_strategy"), "geometry": d.get("geometry") or {}}
        if mode == SharingMode.HAMI:
            return {
                "split_count": d.get("split_count"),
                "memory_scaling": d.get("memory_scaling"),
                "core_policy": d.get("core_policy"),
            }
        return {}

    @staticmethod
    def initial_for(mode: str, parameters: dict[str, Any], resource_name: str) -> dict[str, Any]:
        p = parameters or {}
        return {
            "mode": mode,
            "replicas": p.get("replicas"),
            "fail_requests_greater_than_one": p.get("fail_requests_greater_than_one", False),
            "memory_limit_mib": p.get("memory_limit_mib"),
            "mig_strategy": p.get("strategy", "mixed"),
            "geometry": geometry_text(p.get("geometry") or {}),
            "split_count": p.get("split_count", 10),
            "memory_scaling": p.get("memory_scaling", 1.0),
            "core_policy": p.get("core_policy", "default"),
            "resource_name": resource_name,
        }


class AdmissionRuleForm(forms.Form):
    # Querysets are given per request (the views pass them): none is read at import time.
    tenant: forms.ModelChoiceField[Any] = forms.ModelChoiceField(
        queryset=Tenant.objects.none(), to_field_name="slug"
    )
    pool: forms.ModelChoiceField[Any] = forms.ModelChoiceField(queryset=NodePool.objects.none())
    allowed_flavors: forms.ModelMultipleChoiceField[Any] = forms.ModelMultipleChoiceField(
        queryset=Flavor.objects.none(), required=False
    )
    max_per_pod = forms.IntegerField(required=False, min_value=1)
    allowed_priority_classes: forms.ModelMultipleChoiceField[Any] = forms.ModelMultipleChoiceField(
        queryset=PriorityClass.objects.none(), required=False
    )

    def __init__(self, *args: Any, querysets: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, queryset in querysets.items():
            self.fields[name].queryset = queryset  # type: ignore[attr-defined]
