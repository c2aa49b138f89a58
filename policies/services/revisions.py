"""Revisions: the one place a PolicyRevision is made (``publish_policy``), their diff and a dry run.

A revision is immutable and numbered per pool (1, 2, ...): its bundle is what the compiler rendered
from the pool's declared policy, with the content hash of docs/agent-protocol.md and an Ed25519
signature over that hash. The rollout side listens to ``policies.signals.revision_published``.
"""

from __future__ import annotations

import difflib
import uuid
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from gpuplatform.audit.services import record_event
from gpuplatform.errors import Conflict, Forbidden, NotFound
from inventory.models import Allocation, Gpu, NodePool
from policies import signing
from policies.compiler import SharingMode, render_bundle
from policies.compiler.naming import pool_resource_name, resource_renames
from policies.models import PolicyRevision, SharingPolicy
from policies.selectors import agent_coverage, pool_spec, sharing_spec
from policies.signals import revision_published
from quotas.models import Flavor, FlavorKind
from quotas.services.resources import rename_pool_resources

__all__ = [
    "DryRun",
    "diff_revisions",
    "dry_run",
    "flavors_follow_revision",
    "mig_layout",
    "publish_policy",
]


def _declared(policy: SharingPolicy) -> dict[str, Any]:
    spec = sharing_spec(policy)
    return {
        "mode": str(spec.mode),
        "parameters": spec.parameters,
        "resource_name": spec.resource_name or pool_resource_name(policy.pool.name),
    }


def mig_layout(declared: dict[str, Any] | None) -> dict[str, Any]:
    """What MIG looks like on the cards under a declared policy: {} when MIG is off. Two policies
    with different layouts need the nodes empty of GPU work to move between them."""
    if not declared or declared.get("mode") != SharingMode.MIG:
        return {}
    return dict((declared.get("parameters") or {}).get("geometry") or {})


def _pool_has_mig_now(pool: NodePool) -> bool:
    return Gpu.objects.filter(node__pool=pool, node__present=True, mig_enabled=True).exists()


def publish_policy(
    *,
    pool_id: uuid.UUID | str,
    actor: Any,
    note: str = "",
    rollback_of: int | None = None,
    confirm_no_agent: bool = False,
) -> PolicyRevision:
    """Make the pool's next revision from its declared policy. Locks the policy row, so numbers are
    never taken twice; refuses when nothing changed since the last revision (``policy.unchanged``).
    ``rollback_of=N``: the next number carries revision N's bundle verbatim (its policy gets
    ``"rollback_of": N``) and the declared policy goes back to N's, so revision numbers only grow.
    Platform-admins, or the system (``actor`` None: the rollout's automatic rollback). Audited in
    the same transaction; ``revision_published`` is sent after commit.

    The pool's flavors are not renamed here: nodes advertise the new names only once they apply the
    revision, so the flavors follow when its rollout has converged (``flavors_follow_revision``).
    A pool where no agent reports is refused (``policy.no_reporting_agent``) unless the caller
    confirms (``confirm_no_agent``): the revision would reach no node."""
    if actor is not None and not getattr(actor, "is_platform_admin", False):
        raise Forbidden("Only platform-admins publish sharing policies.")
    with transaction.atomic():
        policy = _policy_of(pool_id, lock=True)
        pool = policy.pool
        coverage = agent_coverage(pool_id=pool.pk)
        unconfirmed = bool(coverage.warning) and not confirm_no_agent
        if actor is not None and rollback_of is None and unconfirmed:
            raise Conflict(
                f"{coverage.warning} Confirm to publish all the same.", code="policy.no_reporting_agent"
            )
        previous = PolicyRevision.objects.filter(pool=pool).order_by("-number").first()
        number = (previous.number if previous else 0) + 1
        if rollback_of is not None:
            earlier = PolicyRevision.objects.filter(pool=pool, number=rollback_of).first()
            if earlier is None or previous is None or earlier.number >= previous.number:
                raise NotFound(
                    f"pool {pool.name} has no earlier revision {rollback_of}", code="policy.unknown_revision"
                )
            declared = {
                **{k: v for k, v in earlier.policy.items() if k != "rollback_of"},
                "rollback_of": rollback_of,
            }
            bundle = earlier.bundle
            _declare(policy, declared)
        else:
            declared = _declared(policy)
            if previous is not None and _same_policy(previous.policy, declared):
                raise Conflict(
                    f"revision {previous.number} already holds this policy", code="policy.unchanged"
                )
            bundle = render_bundle(spec=sharing_spec(policy), pool=pool_spec(pool=pool), revision=number)
        digest = signing.content_hash(bundle)
        if previous is not None:
            needs_drain = mig_layout(previous.policy) != mig_layout(declared)
        else:
            # The first revision: nodes are in whatever state they were set up by hand.
            needs_drain = bool(mig_layout(declared)) or _pool_has_mig_now(pool)
        revision = PolicyRevision.objects.create(
            pool=pool,
            number=number,
            previous=previous,
            policy=declared,
            bundle=bundle,
            content_hash=digest,
            signature=signing.sign(digest.encode()),
            key_id=signing.key_id(),
            needs_drain=needs_drain,
            note=note,
            created_by=actor if getattr(actor, "pk", None) else None,
        )
        SharingPolicy.objects.filter(pk=policy.pk).update(published_revision=number)
        pending = _renames(pool=pool, declared=declared)
        record_event(
            actor=actor,
            action="policy_revision.published",
            obj=revision,
            before={"number": previous.number, "policy": previous.policy} if previous else None,
            after={
                "number": number,
                "pool": str(pool.pk),
                "policy": declared,
                "content_hash": digest,
                "needs_drain": needs_drain,
                "note": note,
                "flavor_renames_on_convergence": pending,
                "rollback_of": rollback_of,
                "agents": coverage.as_dict(),
                "no_reporting_agent_confirmed": bool(coverage.warning) and confirm_no_agent,
            },
        )
        transaction.on_commit(lambda: revision_published.send(sender=PolicyRevision, revision=revision))
    return revision


def _same_policy(a: dict[str, Any], b: dict[str, Any]) -> bool:
    strip = lambda p: {k: v for k, v in p.items() if k != "rollback_of"}  # noqa: E731
    return bool(strip(a) == strip(b))


def _declare(policy: SharingPolicy, declared: dict[str, Any]) -> None:
    """A rollback puts the declaration back to what the earlier revision held."""
    SharingPolicy.objects.filter(pk=policy.pk).update(
        mode=declared["mode"], parameters=declared.get("parameters") or {}, updated_at=timezone.now()
    )


def _renames(*, pool: NodePool, declared: dict[str, Any]) -> dict[str, str]:
    """How the pool's device-plugin flavors' resources would be named under ``declared``: the names
    the pool advertises then, so a tenant's ResourceQuota holds this pool apart from the others."""
    names = sorted(
        {
            str(r["name"])
            for resources in Flavor.objects.filter(pool=pool, kind=FlavorKind.DEVICE_PLUGIN).values_list(
                "resources", flat=True
            )
            for r in resources
        }
    )
    return resource_renames(
        mode=declared["mode"],
        strategy=str((declared.get("parameters") or {}).get("strategy") or ""),
        pool=pool.name,
        resource_name=declared["resource_name"],
        names=names,
    )


def flavors_follow_revision(*, revision: PolicyRevision, actor: Any) -> dict[str, str]:
    """Rename the pool's flavors' resources (and the quotas and live requests on them) to what the
    pool's nodes advertise under ``revision``, once every node has converged on it: until then the
    nodes still advertise the old names, and a flavor renamed early offers nothing. Runs inside the
    caller's transaction (the rollout's, which holds the pool's node rows); idempotent."""
    if not {"mode", "resource_name"} <= set(revision.policy):
        return {}  # a bundle made without a declared policy (imported): no names to follow
    renames = _renames(pool=revision.pool, declared=revision.policy)
    rename_pool_resources(pool_id=revision.pool_id, renames=renames, actor=actor)
    return renames


def _policy_of(pool_id: uuid.UUID | str, *, lock: bool) -> SharingPolicy:
    """The pool's declared policy (row-locked when ``lock``); an unknown pool and a pool without a
    policy are told apart by their codes."""
    try:
        pk = uuid.UUID(str(pool_id))
    except ValueError:
        raise NotFound(f"no node pool {pool_id}", code="policy.unknown_pool", field="pool") from None
    queryset = SharingPolicy.objects.select_related("pool__cluster")
    if lock:
        queryset = queryset.select_for_update(of=("self",))
    policy = queryset.filter(pool_id=pk).first()
    if policy is not None:
        return policy
    if NodePool.objects.filter(pk=pk).exists():
        raise NotFound("the pool has no sharing policy yet", code="policy.no_policy", field="pool")
    raise NotFound(f"no node pool {pool_id}", code="policy.unknown_pool", field="pool")


def _bundle_files(bundle: dict[str, Any]) -> dict[str, str]:
    files = {f["path"]: f["content"] for f in bundle.get("files") or []}
    for cm in bundle.get("configmaps") or []:
        for _key, value in sorted((cm.get("data") or {}).items()):
            # Keyed by the revision's config name, which changes every revision: diff by position.
            files[f"configmap/{cm['namespace']}/{cm['name']}"] = value
    return files


def diff_revisions(*, older: PolicyRevision, newer: PolicyRevision) -> dict[str, Any]:
    """Unified diff per file (and ConfigMap) plus the labels that change, between any two
    revisions of one pool (either order)."""
    if older.pool_id != newer.pool_id:
        raise Conflict("revisions of different pools cannot be compared", code="policy.diff_other_pool")
    a, b = _bundle_files(older.bundle), _bundle_files(newer.bundle)
    files = []
    for path in sorted(set(a) | set(b)):
        lines = list(
            difflib.unified_diff(
                a.get(path, "").splitlines(keepends=True),
                b.get(path, "").splitlines(keepends=True),
                fromfile=f"r{older.number}/{path}" if path in a else "/dev/null",
                tofile=f"r{newer.number}/{path}" if path in b else "/dev/null",
            )
        )
        if lines:
            status = "added" if path not in a else "removed" if path not in b else "changed"
            files.append({"path": path, "status": status, "diff": "".join(lines)})
    old_labels, new_labels = older.bundle.get("labels") or {}, newer.bundle.get("labels") or {}
    labels = [
        {"name": name, "from": old_labels.get(name), "to": new_labels.get(name)}
        for name in sorted(set(old_labels) | set(new_labels))
        if old_labels.get(name) != new_labels.get(name)
    ]
    return {
        "from": older.number,
        "to": newer.number,
        "files": files,
        "labels": labels,
        "needs_drain": mig_layout(older.policy) != mig_layout(newer.policy),
    }


@dataclass(frozen=True)
class DryRun:
    data: dict[str, Any]


def dry_run(*, pool_id: uuid.UUID | str) -> DryRun:
    """What publishing the pool's declared policy now would change, on which nodes, and which GPU
    pods block it (a MIG layout change needs each node empty of GPU work). Changes nothing."""
    policy = _policy_of(pool_id, lock=False)
    pool = policy.pool
    previous = PolicyRevision.objects.filter(pool=pool).order_by("-number").first()
    declared = _declared(policy)
    number = (previous.number if previous else 0) + 1
    spec = pool_spec(pool=pool)
    bundle = render_bundle(spec=sharing_spec(policy), pool=spec, revision=number)
    needs_drain = (
        mig_layout(previous.policy) != mig_layout(declared)
        if previous is not None
        else bool(mig_layout(declared)) or _pool_has_mig_now(pool)
    )
    draft = PolicyRevision(pool=pool, number=number, policy=declared, bundle=bundle)
    diff = (
        diff_revisions(older=previous, newer=draft)
        if previous is not None
        else diff_revisions(older=PolicyRevision(pool=pool, number=0, policy={}, bundle={}), newer=draft)
    )
    blockers: dict[str, list[dict[str, Any]]] = {}
    if needs_drain:
        rows = (
            Allocation.objects.filter(pool=pool, ended_at__isnull=True, holder_kind="Pod")
            .order_by("node_name", "namespace", "holder_name")
            .values("node_name", "namespace", "holder_name", "resource_name", "count")
        )
        for row in rows:
            blockers.setdefault(row["node_name"], []).append(
                {
                    "namespace": row["namespace"],
                    "pod": row["holder_name"],
                    "resource": row["resource_name"],
                    "count": row["count"],
                }
            )
    unchanged = previous is not None and _same_policy(previous.policy, declared)
    nodes = [
        {
            "node": name,
            "changes": not unchanged,
            "needs_drain": needs_drain and not unchanged,
            "blocked_by": [] if unchanged else blockers.get(name, []),
        }
        for name in spec.node_names
    ]
    return DryRun(
        data={
            "pool": str(pool.pk),
            "from_revision": previous.number if previous else None,
            "to_revision": None if unchanged else number,
            "unchanged": unchanged,
            "needs_drain": needs_drain and not unchanged,
            "diff": diff,
            "labels": bundle["labels"],
            "nodes": nodes,
            "blocked_nodes": sorted(n["node"] for n in nodes if n["blocked_by"]),
            "agents": agent_coverage(pool_id=pool.pk).as_dict(),
            "flavor_renames_on_convergence": {} if unchanged else _renames(pool=pool, declared=declared),
        }
    )


def latest_number(*, pool_id: uuid.UUID) -> int:
    return PolicyRevision.objects.filter(pool_id=pool_id).aggregate(m=Max("number"))["m"] or 0
