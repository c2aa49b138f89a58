"""Policy pages: the pools and their modes, a pool's policy form with the five dimensions and what
the mode yields, revisions and their diffs, admission rules. Sharing policies are platform objects:
other users get 404, as for any object they may not see."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from gpuplatform.errors import DomainError
from gpuplatform.ui.auth import current_user
from inventory.models import NodePool
from policies.compiler import DIMENSIONS, SharingMode, tradeoff
from policies.forms import AdmissionRuleForm, SharingPolicyForm
from policies.models import (
    ACTIVE_STATES,
    AdmissionApply,
    AdmissionRule,
    PolicyRevision,
    Rollout,
    SharingPolicy,
)
from policies.selectors import agent_coverage, detect_sharing
from policies.services.admission import delete_admission_rule, request_admission_apply, save_admission_rule
from policies.services.revisions import diff_revisions, dry_run, publish_policy
from policies.services.sharing import PolicyInvalid, preview_policy, set_sharing_policy
from quotas.models import Flavor, FlavorKind, PriorityClass
from tenants.models import Tenant

DIMENSION_LABELS = {
    "isolation": "Isolation",
    "interference": "Interference",
    "utilisation": "Utilisation",
    "reconfiguration": "Reconfiguration cost",
    "how_pods_ask": "How pods ask",
}


def _platform_admin(request: HttpRequest) -> Any:
    user = current_user(request)
    if not user.is_platform_admin:
        raise Http404
    return user


def _comparison(selected: str) -> list[dict[str, Any]]:
    rows = []
    for mode in SharingMode:
        t = tradeoff(mode).as_dict()
        rows.append({**t, "selected": mode == selected, "cells": [t[d] for d in DIMENSIONS]})
    return rows


@login_required
def policy_list(request: HttpRequest) -> HttpResponse:
    if not current_user(request).is_platform_admin:
        return redirect("policies-admission")  # what a tenant sees of policies: its own rules
    pools = list(
        NodePool.objects.select_related("cluster", "sharing_policy", "tenant").order_by(
            "cluster__name", "name"
        )
    )
    detected = detect_sharing(pool_ids=[p.pk for p in pools])
    for pool in pools:
        pool.detected = detected[pool.pk]  # type: ignore[attr-defined]
    return render(request, "policies/list.html", {"pools": pools})


@login_required
def pool_policy(request: HttpRequest, pool_id: Any) -> HttpResponse:
    user = _platform_admin(request)
    pool = get_object_or_404(NodePool.objects.select_related("cluster"), pk=pool_id)
    policy = SharingPolicy.objects.filter(pool=pool).first()
    detected = detect_sharing(pool_ids=[pool.pk])[pool.pk]
    coverage = agent_coverage(pool_id=pool.pk)
    preview_data: dict[str, Any] | None = None
    problems: list[dict[str, str]] = []
    if request.method == "POST":
        form = SharingPolicyForm(request.POST)
        intent = request.POST.get("intent", "preview")
        if intent == "publish":
            try:
                revision = publish_policy(
                    pool_id=pool.pk,
                    actor=user,
                    note=request.POST.get("note", ""),
                    confirm_no_agent=request.POST.get("confirm_no_agent") == "on",
                )
            except DomainError as refused:
                messages.error(request, refused.message)
            else:
                messages.success(request, f"Published revision {revision.number}.")
            return redirect("policies-pool", pool_id=pool.pk)
        if form.is_valid():
            mode, parameters = form.cleaned_data["mode"], form.parameters()
            resource_name = form.cleaned_data.get("resource_name") or ""
            if intent == "save":
                try:
                    set_sharing_policy(
                        pool_id=pool.pk,
                        actor=user,
                        mode=mode,
                        parameters=parameters,
                        resource_name=resource_name,
                    )
                except PolicyInvalid as refused:
                    problems = refused.errors
                else:
                    messages.success(request, "Saved. Nodes see it once it is published.")
                    if coverage.warning:
                        messages.warning(request, coverage.warning)
                    return redirect("policies-pool", pool_id=pool.pk)
            result = preview_policy(
                pool_id=pool.pk, mode=mode, parameters=parameters, resource_name=resource_name
            )
            preview_data = result.data
            problems = problems or preview_data["problems"]
        selected = request.POST.get("mode", "exclusive")
    else:
        if policy:
            initial = SharingPolicyForm.initial_for(policy.mode, policy.parameters, policy.resource_name)
        elif detected.mode and not detected.mixed:
            # Nothing declared yet: the form starts from what the nodes run, so saving it unchanged
            # declares what is there and publishing it changes nothing on the nodes.
            initial = SharingPolicyForm.initial_for(
                detected.mode, detected.parameters, detected.resource_name
            )
        else:
            initial = SharingPolicyForm.initial_for("exclusive", {}, "")
        form = SharingPolicyForm(initial=initial)
        selected = initial["mode"]
        preview_data = preview_policy(
            pool_id=pool.pk,
            mode=selected,
            parameters=policy.parameters if policy else detected.parameters,
            resource_name=initial["resource_name"] or "",
        ).data
    dry = None
    if policy is not None and request.method == "GET":
        dry = dry_run(pool_id=pool.pk).data
    context = {
        "pool": pool,
        "policy": policy,
        "form": form,
        "preview": preview_data,
        "problems": problems,
        "comparison": _comparison(selected),
        "dimension_labels": [DIMENSION_LABELS[d] for d in DIMENSIONS],
        "dry_run": dry,
        "latest": PolicyRevision.objects.filter(pool=pool).order_by("-number").first(),
        "detected": detected,
        "declared_differs": policy is not None and detected.mode and policy.mode != detected.mode,
        "agents": coverage,
        "active_rollout": Rollout.objects.filter(pool=pool, state__in=ACTIVE_STATES)
        .select_related("revision")
        .first(),
        "field_groups": [
            {"legend": legend, "modes": modes, "fields": [form[name] for name in names]}
            for legend, modes, names in SharingPolicyForm.MODE_FIELDS
        ],
    }
    return render(request, "policies/pool.html", context)


@login_required
def revisions(request: HttpRequest, pool_id: Any) -> HttpResponse:
    _platform_admin(request)
    pool = get_object_or_404(NodePool.objects.select_related("cluster"), pk=pool_id)
    rows = PolicyRevision.objects.filter(pool=pool).select_related("created_by").order_by("-number")
    return render(request, "policies/revisions.html", {"pool": pool, "revisions": rows})


@login_required
def revision_diff(request: HttpRequest, revision_id: Any) -> HttpResponse:
    _platform_admin(request)
    revision = get_object_or_404(
        PolicyRevision.objects.select_related("pool__cluster", "previous"), pk=revision_id
    )
    against = request.GET.get("against", "")
    other = None
    if against.isdigit():
        other = PolicyRevision.objects.filter(pool=revision.pool, number=int(against)).first()
        if other is None:
            raise Http404
    other = other or revision.previous or PolicyRevision(pool=revision.pool, number=0, policy={}, bundle={})
    older, newer = sorted((other, revision), key=lambda r: r.number)
    numbers = list(
        PolicyRevision.objects.filter(pool=revision.pool).order_by("-number").values_list("number", flat=True)
    )
    context = {"revision": revision, "diff": diff_revisions(older=older, newer=newer), "numbers": numbers}
    return render(request, "policies/diff.html", context)


@login_required
def admission_rules(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    rules = (
        AdmissionRule.objects.visible_to(user)
        .select_related("tenant", "pool__cluster")
        .prefetch_related("allowed_flavors", "allowed_priority_classes")
        .order_by("tenant__path", "pool__name")
    )
    form = None
    if user.is_platform_admin:
        querysets = {
            "tenant": Tenant.objects.order_by("path"),
            "pool": NodePool.objects.select_related("cluster").order_by("cluster__name", "name"),
            "allowed_flavors": Flavor.objects.filter(kind=FlavorKind.DEVICE_PLUGIN).order_by("name"),
            "allowed_priority_classes": PriorityClass.objects.order_by("-value"),
        }
        form = AdmissionRuleForm(request.POST or None, querysets=querysets)
        if request.method == "POST":
            intent = request.POST.get("intent", "save")
            try:
                if intent == "delete":
                    rule = get_object_or_404(AdmissionRule, pk=request.POST.get("rule"))
                    delete_admission_rule(actor=user, rule_id=rule.pk)
                    messages.success(request, "Rule removed. Apply to a cluster to take it off there.")
                    return redirect("policies-admission")
                if intent == "apply":
                    pool = get_object_or_404(
                        NodePool.objects.select_related("cluster"), pk=request.POST.get("pool")
                    )
                    request_admission_apply(cluster_id=pool.cluster_id, actor=user)
                    # A worker applies it (it holds the credential); the table below shows how it went.
                    messages.success(
                        request, f"Apply to {pool.cluster.name} queued; its outcome is shown below."
                    )
                    return redirect("policies-admission")
                if form.is_valid():
                    d = form.cleaned_data
                    existing = AdmissionRule.objects.filter(tenant=d["tenant"], pool=d["pool"]).first()
                    save_admission_rule(
                        actor=user,
                        rule_id=existing.pk if existing else None,
                        tenant_id=d["tenant"].pk,
                        pool_id=d["pool"].pk,
                        allowed_flavor_ids=[f.pk for f in d["allowed_flavors"]],
                        max_per_pod=d.get("max_per_pod"),
                        allowed_priority_class_ids=[p.pk for p in d["allowed_priority_classes"]],
                    )
                    messages.success(request, "Rule saved. Apply it to the pool's cluster to enforce it.")
                    return redirect("policies-admission")
            except DomainError as refused:
                messages.error(request, refused.message)
    applies = (
        AdmissionApply.objects.visible_to(user)
        .select_related("cluster", "requested_by")
        .order_by("-created_at")[:10]
    )
    return render(
        request, "policies/admission_rules.html", {"rules": rules, "form": form, "applies": applies}
    )
