"""Capacity requests: submit, cancel, release, approve, reject. Each decides admission at once, under
the cohort's and flavor's advisory locks, in the same transaction as the change (never over-admits)."""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from gpuplatform.accounts.models import User
from gpuplatform.audit.services import record_event
from gpuplatform.db.together import writes_together
from gpuplatform.errors import Conflict, Forbidden, NotFound, ValidationFailed
from quotas import admission as engine
from quotas.dispatch import materialise_after_commit
from quotas.lifecycle import ActorKind, Event, Move, move_requests
from quotas.models import CapacityRequest, Flavor, RequestTransition
from quotas.models.requests import HOLDING, ApprovalState
from quotas.runner.cohort_reads import CohortReads, lock_cohort_reading
from quotas.runner.decide import decide_cohort, persist, request_ge
from quotas.runner.inputs import cohort_root_path, micros, root_id_of, with_fallbacks
from quotas.runner.locks import lock_cohorts, lock_flavors
from quotas.services import approval_authority
from quotas.services.request_names import Resolved, flavor_names, resolve_names
from tenants import scoping
from tenants.models import Tenant

IDEMPOTENCY_KEY = re.compile(r"^[A-Za-z0-9._:-]{8,128}$")
REQUEST_ROLES = frozenset({"tenant-admin", "member"})


def _may_request(actor: User, tenant: Tenant) -> bool:
    return scoping.can_manage(actor, tenant) or scoping.holds_role(actor, tenant, REQUEST_ROLES)


@dataclass(frozen=True)
class Submitted:
    request: CapacityRequest
    created: bool  # False: an earlier request with the same Idempotency-Key and body
    transitions: tuple[RequestTransition, ...] = ()  # of a created request, as written


def check_idempotency_key(key: str | None) -> str:
    if key is None or key == "":
        return ""
    if not IDEMPOTENCY_KEY.match(key):
        raise ValidationFailed(
            "Idempotency-Key must be 8-128 characters of letters, digits, '.', '_', ':' or '-'.",
            code="idempotency_key_malformed",
        )
    return key


def with_subtree_claims(
    *, actor: User, tenant: Tenant, flavor: Flavor, wanted: dict[str, int], top: Tenant | None = None
) -> dict[str, int]:
    """What the subtree the threshold governs would then hold of the flavor: what its requests hold
    now plus this one. An approval threshold applies to that, not to each request alone, so
    splitting a request, or spreading it over children one created, needs approval too. The subtree
    is ``governing_tenant``'s (quotas/services/approval_authority.py)."""
    top = top or approval_authority.governing_tenant(tenant=tenant, requester=actor)
    claimed = dict(wanted)
    held = CapacityRequest.objects.filter(tenant__path__startswith=top.path, flavor=flavor, state__in=HOLDING)
    for amounts in held.values_list("amounts", flat=True):
        for resource, value in (amounts or {}).items():
            claimed[resource] = claimed.get(resource, 0) + int(value)
    return claimed


def approval_basis(
    *, actor: User, tenant: Tenant, flavors: list[Flavor], wanted: dict[str, int]
) -> list[dict[str, Any]]:
    """Each flavor whose approval threshold the request would cross, with the figures judged: the
    threshold, the resource over it, what the governing subtree would then hold, and that subtree.
    Empty: no approval needed. The approval inbox shows these, not the requester's words."""
    crossed: list[dict[str, Any]] = []
    top: Tenant | None = None
    for f in flavors:
        if f.approval_above is None:
            continue
        top = top or approval_authority.governing_tenant(tenant=tenant, requester=actor)
        claimed = with_subtree_claims(actor=actor, tenant=tenant, flavor=f, wanted=wanted, top=top)
        if not f.needs_approval(claimed):
            continue
        resource, held = max(claimed.items(), key=lambda item: item[1])
        crossed.append(
            {
                "flavor": f.name,
                "threshold": f.approval_above,
                "resource": resource,
                "subtree_would_hold": held,
                "requested": int(wanted.get(resource, 0)),
                "subtree": top.slug,
            }
        )
    return crossed


def _amounts(flavor: Flavor, amount: int | None, amounts: dict[str, int] | None) -> dict[str, int]:
    names = flavor.resource_names
    if amounts is None:
        if amount is None or len(names) != 1:
            raise ValidationFailed(
                f"Flavor {flavor.name!r} counts {', '.join(names)}: give 'amounts' per resource.",
                code="amounts_required",
                field="amounts",
            )
        return {names[0]: amount}
    unknown = sorted(set(amounts) - set(names))
    if unknown:
        raise ValidationFailed(
            f"Flavor {flavor.name!r} has no resource {unknown[0]!r}.",
            code="unknown_resource",
            field="amounts",
        )
    return {r: a for r, a in amounts.items() if a}


def _body_hash(**fields: Any) -> str:
    return hashlib.sha256(json.dumps(fields, sort_keys=True, default=str).encode()).hexdigest()


def submit_request(
    *,
    actor: User,
    flavor: str | None = None,
    flavors: list[str] | None = None,
    tenant: str | None = None,
    queue: str | None = None,
    priority_class: str | None = None,
    amount: int | None = None,
    amounts: dict[str, int] | None = None,
    duration_seconds: int | None = None,
    reason: str = "",
    idempotency_key: str = "",
) -> Submitted:
    """Create a request and decide it at once. Locks the cohort root, then its flavors (advisory).
    ``flavors`` names an ordered list to fall back along (Kueue's flavor fungibility, per the queue).
    Idempotent per (actor, Idempotency-Key): the same body returns the first request."""
    key = check_idempotency_key(idempotency_key)
    digest = _body_hash(
        flavor=flavor,
        **({"flavors": flavors} if flavors is not None else {}),
        tenant=tenant,
        queue=queue,
        priority_class=priority_class,
        amount=amount,
        amounts=amounts,
        duration_seconds=duration_seconds,
        reason=reason,
    )
    if key:
        earlier = _replay(actor, key, digest)
        if earlier is not None:
            return Submitted(earlier, created=False)
    resolved = resolve_names(
        actor,
        tenant=tenant,
        queue=queue,
        flavors=flavor_names(flavor, flavors),
        priority_class=priority_class,
    )
    _check_may_request(actor, resolved)
    request = _new_request(
        actor,
        resolved,
        amounts=_amounts(resolved.flavor, amount, amounts),
        duration_seconds=duration_seconds,
        reason=reason,
        idempotency_key=key,
        body_hash=digest,
    )
    try:
        with transaction.atomic():
            reads = lock_cohort_reading(
                root_id=root_id_of(resolved.tenant.path),
                root_path=cohort_root_path(resolved.tenant.path),
                flavors=resolved.flavors,
            )
            if key:
                earlier = _replay(actor, key, digest)  # a concurrent twin may have committed meanwhile
                if earlier is not None:
                    return Submitted(earlier, created=False)
            written = _decide_arrival(actor, request, resolved, reads=reads)
    except IntegrityError as exc:
        # The same key with another body, committed by a twin on another cohort meanwhile.
        raise Conflict(
            "This Idempotency-Key was just used for another request.", code="idempotency_key_reused"
        ) from exc
    return Submitted(
        request, created=True, transitions=tuple(t for t in written if t.request_id == request.pk)
    )


def _check_may_request(actor: User, resolved: Resolved) -> None:
    """Refuse a viewer, and a tenant under suspension."""
    tenant = resolved.tenant
    if not _may_request(actor, tenant):
        raise Forbidden("Viewers may not request capacity; ask a member or tenant-admin of this tenant.")
    if resolved.tenant_suspended:
        raise Conflict(
            f"Tenant {tenant.slug!r} (or a tenant above it) is suspended; it cannot request capacity.",
            code="tenant_suspended",
            field="tenant",
        )


def _new_request(
    actor: User,
    resolved: Resolved,
    *,
    amounts: dict[str, int],
    duration_seconds: int | None,
    reason: str,
    idempotency_key: str,
    body_hash: str,
) -> CapacityRequest:
    """The request, unsaved: admission inserts it, already decided."""
    now = timezone.now()
    return CapacityRequest(
        id=uuid.uuid4(),
        tenant=resolved.tenant,
        queue=resolved.queue,
        flavor=resolved.flavor,
        priority_class=resolved.priority_class,
        amounts=amounts,
        fallback_flavors=[str(f.pk) for f in resolved.flavors[1:]],
        ge=request_ge(resolved.flavor, amounts),
        duration_seconds=duration_seconds,
        reason=reason,
        approval=ApprovalState.NOT_REQUIRED,  # decided under the cohort lock, in `_decide_arrival`
        created_by=actor,
        idempotency_key=idempotency_key,
        body_hash=body_hash,
        created_at=now,
        created_order=micros(now),
    )


def _decide_arrival(
    actor: User, request: CapacityRequest, resolved: Resolved, *, reads: CohortReads
) -> list[RequestTransition]:
    """Under the cohort lock (and what was read with it): whether it awaits approval,
    then admission decides it alone, inserts it decided, audits it and queues its cluster objects
    after commit. The transitions written."""
    now = request.created_at
    # Under the cohort lock, so two requests racing cannot both slip under the threshold.
    # Any flavor it may land on whose threshold it would cross makes it wait for approval.
    request.approval_basis = approval_basis(
        actor=actor, tenant=resolved.tenant, flavors=resolved.flavors, wanted=request.amounts
    )
    if request.approval_basis:
        request.approval = ApprovalState.AWAITING
    outcome, snapshot_rows = decide_cohort(
        root_path=cohort_root_path(resolved.tenant.path),
        flavors=resolved.flavors,
        now=now,
        extra=[request],
        arrival_id=str(request.pk),
        reads=reads,
        check=_RefuseIfNeverFits(
            tenant=resolved.tenant.slug, flavors=resolved.flavors, wanted=request.amounts
        ),
    )
    # Under the flavor lock from here to commit: the request, its transitions and the audit event go
    # to the database in one round trip, so the next decider of the flavor waits for fewer.
    with writes_together():
        persisted = persist(outcome=outcome, snapshot_rows=snapshot_rows, now=now)  # inserts it, decided
        record_event(actor=actor, action="capacity_request.created", obj=request, after=_summary(request))
    materialise_after_commit([*persisted.admitted, *persisted.preempted])
    return persisted.transitions


@dataclass(frozen=True)
class _RefuseIfNeverFits:
    """`decide_cohort`'s check on its first snapshot: refuse a request that no quota of the tenant
    could ever hold on any flavor it names, even with every relative idle."""

    tenant: str  # the engine's name for it: its slug
    flavors: list[Flavor]
    wanted: dict[str, int]

    def __call__(self, snapshot: engine.Snapshot) -> None:
        if all(self._never_fits(snapshot, f) for f in self.flavors):
            on = ", ".join(repr(f.name) for f in self.flavors)
            asked = ", ".join(f"{a} of {r}" for r, a in self.wanted.items())
            raise ValidationFailed(
                f"{asked} on flavor {on} is more than any quota of {self.tenant!r} could ever hold, "
                "even with every relative idle.",
                code="exceeds_max_possible",
                field="amount",
            )

    def _never_fits(self, snapshot: engine.Snapshot, flavor: Flavor) -> bool:
        tree = snapshot.index.tree
        return any(
            not tree.has_quota(self.tenant, flavor.name, r) or a > tree.potential(self.tenant, flavor.name, r)
            for r, a in self.wanted.items()
        )


def _replay(actor: User, key: str, digest: str) -> CapacityRequest | None:
    earlier = CapacityRequest.objects.filter(created_by=actor, idempotency_key=key).first()
    if earlier is not None and earlier.body_hash != digest:
        raise Conflict("This Idempotency-Key was used with a different body.", code="idempotency_key_reused")
    return earlier


def _summary(request: CapacityRequest) -> dict[str, Any]:
    return {
        "tenant": str(request.tenant_id),
        "flavor": str(request.flavor_id),
        "amounts": request.amounts,
        "priority_class": str(request.priority_class_id),
        "state": request.state,
    }


def _visible_request(actor: User, request_id: uuid.UUID | str) -> CapacityRequest:
    request = (
        CapacityRequest.objects.visible_to(actor)
        .select_related("tenant", "flavor")
        .filter(pk=request_id)
        .first()
    )
    if request is None:
        raise NotFound("No such capacity request.")
    return request


def _actor_kind(actor: User, request: CapacityRequest) -> ActorKind:
    """Who the actor is to this request, for `quotas.lifecycle`'s rules."""
    if request.created_by_id == actor.pk:
        return ActorKind.REQUESTER
    if actor.is_platform_admin:
        return ActorKind.PLATFORM
    if scoping.can_manage(actor, request.tenant):
        return ActorKind.APPROVER
    raise Forbidden("Only the requester or a tenant-admin may do this.")


def _end(
    *, actor: User, request_id: uuid.UUID | str, event: Event, code: str, message: str
) -> CapacityRequest:
    """Move a request to a final state, then decide the cohort again (capacity may have freed)."""
    found = _visible_request(actor, request_id)
    kind = _actor_kind(actor, found)
    now = timezone.now()
    root_path = cohort_root_path(found.tenant.path)
    with transaction.atomic():
        flavors = _lock_cohort_and_flavors(root_path=root_path, flavor=found.flavor)
        row = CapacityRequest.objects.select_for_update().get(pk=found.pk)
        before = row.state
        move_requests(
            moves=[Move(request=row, event=event, by=kind, actor=actor, reason_code=code, message=message)],
            now=now,
        )
        record_event(
            actor=actor,
            action=f"capacity_request.{row.state}",
            obj=row,
            before={"state": before},
            after={"state": row.state},
        )
        outcome, snapshot_rows = decide_cohort(root_path=root_path, flavors=flavors, now=now)
        persisted = persist(outcome=outcome, snapshot_rows=snapshot_rows, now=now)
        ended = [row.pk] if before in HOLDING else []  # its cluster objects must be lowered or removed
        materialise_after_commit([*persisted.admitted, *persisted.preempted, *ended])
    return row


def _lock_cohort_and_flavors(*, root_path: str, flavor: Flavor) -> list[Flavor]:
    """The cohort lock, then the flavor and every flavor its cohort's pending requests fall back to,
    all at once in the global order (never one flavor first and others later: that could deadlock
    against a decider of another cohort). Read under the cohort lock, so the set cannot grow."""
    lock_cohorts(root_ids=[root_id_of(root_path)])
    flavors = with_fallbacks(root_path=root_path, flavors=[flavor])
    lock_flavors(flavor_ids=[f.pk for f in flavors])
    return flavors


def cancel_request(*, actor: User, request_id: uuid.UUID | str) -> CapacityRequest:
    """Withdraw a pending request (the requester or a tenant-admin). Locks flavor and cohort."""
    return _end(
        actor=actor,
        request_id=request_id,
        event=Event.CANCEL,
        code="cancelled",
        message="Cancelled by the requester.",
    )


def release_request(*, actor: User, request_id: uuid.UUID | str) -> CapacityRequest:
    """Give back admitted capacity; the next pending requests are admitted in the same transaction."""
    return _end(
        actor=actor,
        request_id=request_id,
        event=Event.RELEASE,
        code="released",
        message="Released by the tenant.",
    )


def decide_approval(
    *, actor: User, request_id: uuid.UUID | str, approve: bool, note: str = ""
) -> CapacityRequest:
    """Approve (an admin strictly above the governing tenant who is not the requester, or a
    platform-admin) or reject (any admin of the tenant) a request awaiting approval; audited; an
    approval is decided at once. Locks flavor and cohort."""
    found = _visible_request(actor, request_id)
    # Separation of duties for approving: never the requester, never an admin at or below the tenant
    # whose threshold governs the request (alice approving vision's request, or that of a child she
    # made for it); an admin strictly above it, or a platform-admin. Refusing needs no such distance.
    if not scoping.can_manage(actor, found.tenant):
        raise Forbidden(
            "Only a tenant-admin of this tenant (or above) or a platform-admin may decide approvals."
        )
    if approve and found.created_by_id == actor.pk:
        raise Forbidden(
            "Nobody approves their own request; ask an admin above this tenant.", code="own_request"
        )
    governing = approval_authority.governing_paths([found])[found.pk]
    if approve and not approval_authority.may_approve(actor, found, governing):
        raise Forbidden(
            "Only a tenant-admin above this tenant or a platform-admin may approve its requests.",
            code="approver_not_above",
        )
    now = timezone.now()
    root_path = cohort_root_path(found.tenant.path)
    with transaction.atomic():
        flavors = _lock_cohort_and_flavors(root_path=root_path, flavor=found.flavor)
        row = CapacityRequest.objects.select_for_update().get(pk=found.pk)
        verdict = ApprovalState.APPROVED if approve else ApprovalState.REJECTED
        changes: dict[str, Any] = {"approval": verdict, "approved_by": actor}
        if not approve:
            changes["message"] = f"Rejected by {actor.username}" + (f": {note}" if note else ".")
        move = Move(
            request=row,
            event=Event.APPROVE if approve else Event.REJECT,
            by=ActorKind.PLATFORM if actor.is_platform_admin else ActorKind.APPROVER,
            actor=actor,
            reason_code="approved" if approve else "rejected",
            message=note,
            # An approval records who approved; the request keeps explaining why it waits until
            # admission decides it again, below.
            explains=not approve,
            changes=changes,
        )
        move_requests(moves=[move], now=now)
        record_event(
            actor=actor,
            action="capacity_request." + ("approved" if approve else "rejected"),
            obj=row,
            before={"approval": ApprovalState.AWAITING},
            after={"approval": row.approval, "note": note},
        )
        if approve:
            outcome, snapshot_rows = decide_cohort(root_path=root_path, flavors=flavors, now=now)
            persisted = persist(outcome=outcome, snapshot_rows=snapshot_rows, now=now)
            materialise_after_commit([*persisted.admitted, *persisted.preempted])
    row.refresh_from_db()
    return row
