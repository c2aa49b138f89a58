"""A capacity request's pages: the form (with quota, free capacity and the estimated wait per flavor),
one request with its timeline, and its actions (cancel, release, approve or reject with a note).
Each action calls the API's service, with its role checks; the result replaces the request in place
(htmx), or the page reloads without scripts."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from gpuplatform.accounts.models import User
from gpuplatform.errors import DomainError, NotFound
from gpuplatform.ui.auth import current_user
from quotas.forms import DecisionForm, RequestCapacityForm
from quotas.models import CapacityRequest, Flavor
from quotas.models.requests import HOLDING, ApprovalState, RequestState
from quotas.request_outlook import request_outlook
from quotas.selectors import preemption_words, with_flavor_chains, with_not_offered
from quotas.services import approval_authority
from quotas.services import requests as request_services
from tenants import scoping
from tenants.models import Tenant

VERDICTS = {"approve": True, "reject": False}


def _outlook_for(user: User, data: Any) -> tuple[Tenant | None, list[Any], int]:
    """The outlook of the tenant the form names (or its first), for the amount it names."""
    tenants = Tenant.objects.visible_to(user).filter(depth__gt=0).order_by("path")
    tenant = tenants.filter(slug=data.get("tenant", "")).first() or tenants.first()
    try:
        amount = max(1, min(int(data.get("amount") or 1), 10**9))
    except ValueError:
        amount = 1
    if tenant is None:
        return None, [], amount
    flavors = list(Flavor.objects.visible_to(user).select_related("tenant").order_by("name"))
    return tenant, request_outlook(tenant=tenant, flavors=flavors, amount=amount), amount


@login_required
def request_capacity(request: HttpRequest) -> HttpResponse:
    """A tenant asks for capacity: the API's service, its answers and its messages. A GET with the
    form's fields (htmx, on change) recomputes the outlook for that tenant and amount."""
    user = current_user(request)
    if request.method == "POST":
        form = RequestCapacityForm(request.POST, user=user)
    else:
        initial = {k: v for k, v in request.GET.items() if k != "idempotency_key"}
        form = RequestCapacityForm(initial=initial, user=user)
    tenant, outlook, amount = _outlook_for(user, request.POST or request.GET)
    form.label_flavors(outlook)
    if request.method == "GET" and "flavor" not in request.GET and outlook and outlook[0].has_room:
        form.initial["flavor"] = outlook[0].flavor.name  # offer the flavor with room
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            fallback = data.get("fallback_flavor") or ""
            choice: dict[str, Any] = (
                {"flavors": [data["flavor"], fallback]} if fallback else {"flavor": data["flavor"]}
            )
            submitted = request_services.submit_request(
                actor=user,
                tenant=data["tenant"],
                **choice,
                priority_class=data["priority_class"] or None,
                amount=data["amount"],
                duration_seconds=data["duration_seconds"],
                reason=data["reason"],
                idempotency_key=data["idempotency_key"],
            )
        except DomainError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        else:
            return redirect("queues-request", request_id=submitted.request.pk)
    context = {"form": form, "outlook": outlook, "outlook_tenant": tenant, "outlook_amount": amount}
    return render(request, "quotas/request_form.html", context)


def _found(user: User, request_id: str) -> CapacityRequest:
    found = (
        CapacityRequest.objects.visible_to(user)
        .select_related("tenant", "queue", "flavor", "priority_class", "created_by", "approved_by")
        .filter(pk=request_id)
        .first()
    )
    if found is None:
        raise Http404("No such capacity request.")
    return found


def _may_end(user: User, found: CapacityRequest) -> bool:
    """The service's rule (`_actor_kind`): the requester, a platform-admin, or an admin of the tenant."""
    return found.created_by_id == user.pk or user.is_platform_admin or scoping.can_manage(user, found.tenant)


def _detail_context(user: User, found: CapacityRequest, **extra: Any) -> dict[str, Any]:
    timeline = list(found.transitions.select_related("actor").order_by("at", "id"))
    with_not_offered(with_flavor_chains([found]))
    decision = next((t for t in reversed(timeline) if t.reason_code in ("approved", "rejected")), None)
    awaiting = found.state == RequestState.PENDING and found.approval == ApprovalState.AWAITING
    may_decide = awaiting and scoping.can_manage(user, found.tenant)
    governing = approval_authority.governing_paths([found])[found.pk] if may_decide else ""
    may_end = _may_end(user, found)
    return {
        "r": found,
        "timeline": timeline,
        "policy": preemption_words(found.queue),
        "decision": decision,
        "can_cancel": found.state == RequestState.PENDING and may_end,
        "can_release": found.state in HOLDING and may_end,
        "can_reject": may_decide,
        "can_approve": may_decide and approval_authority.may_approve(user, found, governing),
        "decision_form": extra.pop("decision_form", None) or DecisionForm(),
        **extra,
    }


@login_required
def request_detail(request: HttpRequest, request_id: str) -> HttpResponse:
    """One request, its timeline and what the viewer may do to it; another tenant's is a 404."""
    user = current_user(request)
    found = _found(user, request_id)
    return render(request, "quotas/request_detail.html", _detail_context(user, found))


def _answer(
    request: HttpRequest, user: User, request_id: str, *, said: str, failed: str = "", **extra: Any
) -> HttpResponse:
    """htmx: the request as it stands now, in place, with what happened. Otherwise a redirect."""
    if request.headers.get("HX-Request"):
        found = _found(user, request_id)
        context = _detail_context(user, found, result=said, error=failed, **extra)
        return render(request, "quotas/request_detail.html", context)
    if failed:
        messages.error(request, failed)
    else:
        messages.success(request, said)
    return redirect("queues-request", request_id=request_id)


def _end(request: HttpRequest, request_id: str, *, release: bool) -> HttpResponse:
    user = current_user(request)
    _found(user, request_id)  # 404 first for what the viewer cannot see
    end = request_services.release_request if release else request_services.cancel_request
    try:
        end(actor=user, request_id=request_id)
    except NotFound as exc:
        raise Http404(exc.message) from exc
    except DomainError as exc:
        return _answer(request, user, request_id, said="", failed=exc.message)
    said = "Released: the capacity is back for the next request." if release else "Cancelled."
    return _answer(request, user, request_id, said=said)


@login_required
@require_POST
def cancel(request: HttpRequest, request_id: str) -> HttpResponse:
    return _end(request, request_id, release=False)


@login_required
@require_POST
def release(request: HttpRequest, request_id: str) -> HttpResponse:
    return _end(request, request_id, release=True)


@login_required
@require_POST
def decide(request: HttpRequest, request_id: str, verdict: str) -> HttpResponse:
    """Approve or reject with a note, as the API's approve/reject actions do."""
    user = current_user(request)
    if verdict not in VERDICTS:
        raise Http404("No such decision.")
    found = _found(user, request_id)
    form = DecisionForm(request.POST)
    if not form.is_valid():
        if request.headers.get("HX-Request"):
            context = _detail_context(user, found, decision_form=form)
            return render(request, "quotas/request_detail.html", context)
        messages.error(request, str(form.errors["note"][0]))
        return redirect("queues-request", request_id=found.pk)
    try:
        request_services.decide_approval(
            actor=user, request_id=found.pk, approve=VERDICTS[verdict], note=form.cleaned_data["note"]
        )
    except NotFound as exc:
        raise Http404(exc.message) from exc
    except DomainError as exc:
        return _answer(request, user, str(found.pk), said="", failed=exc.message)
    return _answer(request, user, str(found.pk), said=f"{verdict.capitalize()}d, with your note.")
