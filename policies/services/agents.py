"""Agent credentials: bootstrap tokens, registration, rotation, revocation, authentication.

Every change is audited in its own transaction. Secrets are 256-bit random values shown once and
stored as their SHA-256 (policies/models/agents.py).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from gpuplatform.accounts.models import User
from gpuplatform.audit.services import record_attempt, record_event, snapshot
from gpuplatform.errors import Conflict, DomainError, Forbidden, NotFound, ValidationFailed
from inventory.models import Cluster, Node
from policies.models import AgentBootstrapToken, NodeAgent, NodePolicyState

BOOTSTRAP_PREFIX = "gpb_"
CREDENTIAL_PREFIX = "gpa_"
MAX_BOOTSTRAP_LIFETIME = timedelta(days=30)


class AgentUnauthorized(DomainError):
    """The credential is unknown, rotated away or revoked: 401, and the agent must register again."""

    status = 401
    code = "agent_unauthorized"
    title = "Unauthorized"


@dataclass(frozen=True)
class Issued:
    obj: Any
    secret: str


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _new_secret(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)


def _rotate_after(now: datetime) -> datetime:
    return now + timedelta(seconds=settings.AGENT_CREDENTIAL_ROTATE_SECONDS)


def _require_platform_admin(actor: User) -> None:
    if not actor.is_platform_admin:
        raise Forbidden("Only platform-admins manage node agents.")


def create_bootstrap_token(*, actor: User, cluster_id: uuid.UUID, name: str, expires_in: timedelta) -> Issued:
    """A single-cluster, expiring token agents register with; its text is returned once. Audited."""
    _require_platform_admin(actor)
    if not timedelta(minutes=1) <= expires_in <= MAX_BOOTSTRAP_LIFETIME:
        raise ValidationFailed(
            "A bootstrap token lives between one minute and 30 days.",
            code="expiry_out_of_range",
            field="expires_in_seconds",
        )
    cluster = Cluster.objects.filter(pk=cluster_id).first()
    if cluster is None:
        raise NotFound("No such cluster.", code="cluster_not_found", field="cluster")
    secret = _new_secret(BOOTSTRAP_PREFIX)
    with transaction.atomic():
        token = AgentBootstrapToken.objects.create(
            cluster=cluster,
            name=name,
            token_hash=hash_secret(secret),
            expires_at=timezone.now() + expires_in,
            created_by=actor,
        )
        record_event(
            actor=actor,
            action="agent_bootstrap_token.created",
            obj=token,
            after=snapshot(token, ["cluster_id", "name", "expires_at"]),
        )
    return Issued(token, secret)


def revoke_bootstrap_token(*, actor: User, token_id: uuid.UUID) -> AgentBootstrapToken:
    """Revoke a bootstrap token (idempotent; agents it registered keep their own credentials)."""
    _require_platform_admin(actor)
    with transaction.atomic():
        token = AgentBootstrapToken.objects.select_for_update().filter(pk=token_id).first()
        if token is None:
            raise NotFound("No such bootstrap token.")
        if token.revoked_at is None:
            token.revoked_at = timezone.now()
            token.save(update_fields=["revoked_at"])
            record_event(
                actor=actor, action="agent_bootstrap_token.revoked", obj=token, after={"revoked": True}
            )
    return token


def register_agent(*, cluster_name: str, node_name: str, bootstrap_token: str, version: str = "") -> Issued:
    """Exchange a bootstrap token for a node credential, for a node with no agent or one a
    platform-admin reset (``reset_agent``): a token held by anyone in the cluster must not evict a
    live agent nor bring back a revoked one. Locks the token row (its use counter) and the node row
    (two first registrations racing). Audited; a refusal is recorded as an attempt."""
    now = timezone.now()
    try:
        return _register(cluster_name, node_name, bootstrap_token, version, now)
    except _Refused:
        # Recorded outside the refused transaction, so the record outlives its rollback.
        record_attempt(
            actor=None,
            action="agent.registration_refused",
            object_type="policies.nodeagent",
            object_repr=f"{cluster_name}/{node_name}",
            detail={"reason": "unknown, expired or revoked bootstrap token, or no such node in its cluster"},
        )
        # One answer for every reason: a stolen token must not tell which nodes exist.
        raise AgentUnauthorized(
            "The bootstrap token is not valid for that cluster and node.", code="bootstrap_refused"
        ) from None
    except _Taken as taken:
        record_attempt(
            actor=None,
            action="agent.registration_refused",
            object_type="policies.nodeagent",
            object_id=str(taken.agent.pk),
            object_repr=f"{cluster_name}/{node_name}",
            detail={"code": taken.code, "agent": str(taken.agent.pk)},
        )
        raise Conflict(taken.message, code=taken.code) from None


class _Refused(Exception):
    pass


class _Taken(Exception):
    def __init__(self, agent: NodeAgent) -> None:
        self.agent = agent
        if agent.revoked_at is None:
            self.code = "agent_already_registered"
            self.message = (
                "This node has a registered agent; a platform-admin resets it "
                "(POST /api/v1/agents/{id}/reset/) before another may register."
            )
        else:
            self.code = "agent_revoked"
            self.message = (
                "This node's agent was revoked; a platform-admin resets it "
                "(POST /api/v1/agents/{id}/reset/) before an agent may register again."
            )


def _register(cluster_name: str, node_name: str, bootstrap_token: str, version: str, now: datetime) -> Issued:
    with transaction.atomic():
        token = (
            AgentBootstrapToken.objects.select_for_update(of=("self",))
            .select_related("cluster")
            .filter(token_hash=hash_secret(bootstrap_token))
            .first()
        )
        node = None
        if token is not None and token.usable(now) and hmac.compare_digest(token.cluster.name, cluster_name):
            node = (
                Node.objects.select_for_update()
                .filter(cluster=token.cluster, name=node_name, present=True)
                .order_by()
                .first()
            )
        if token is None or node is None:
            raise _Refused
        # Live first: it is the one to name when both a live and a revoked agent are unreleased.
        unreleased = NodeAgent.objects.filter(node=node, released_at__isnull=True)
        blocking = unreleased.order_by(F("revoked_at").desc(nulls_first=True), "-registered_at").first()
        if blocking is not None:
            raise _Taken(blocking)
        secret = _new_secret(CREDENTIAL_PREFIX)
        agent = NodeAgent.objects.create(
            cluster=token.cluster,
            node=node,
            credential_hash=hash_secret(secret),
            bootstrap_token=token,
            rotate_after=_rotate_after(now),
            agent_version=version[:64],
        )
        AgentBootstrapToken.objects.filter(pk=token.pk).update(registrations=F("registrations") + 1)
        NodePolicyState.objects.get_or_create(node=node)
        record_event(
            actor=None,
            action="agent.registered",
            obj=agent,
            after={"cluster": token.cluster.name, "node": node.name, "bootstrap_token": str(token.pk)},
        )
    return Issued(agent, secret)


def authenticate_agent(credential: str) -> NodeAgent:
    """The live agent holding ``credential``; AgentUnauthorized otherwise. Reads one row."""
    agent = (
        NodeAgent.objects.select_related("node", "node__pool", "cluster")
        .filter(credential_hash=hash_secret(credential), revoked_at__isnull=True)
        .order_by()  # the hash is unique: no ORDER BY (the model's ordering joins the node)
        .first()
    )
    if agent is None:
        raise AgentUnauthorized("The agent credential is unknown, rotated or revoked.")
    return agent


def rotate_credential(*, agent: NodeAgent) -> Issued:
    """A new credential for the agent; the old one stops working in the same commit (the row holds
    one hash). Conditional on the presented hash still being current, so two rotations racing with
    one credential cannot both win. Audited."""
    secret = _new_secret(CREDENTIAL_PREFIX)
    now = timezone.now()
    with transaction.atomic():
        changed = NodeAgent.objects.filter(
            pk=agent.pk, credential_hash=agent.credential_hash, revoked_at__isnull=True
        ).update(
            credential_hash=hash_secret(secret),
            rotated_at=now,
            rotate_after=_rotate_after(now),
            rotations=F("rotations") + 1,
        )
        if not changed:
            raise AgentUnauthorized("The agent credential is unknown, rotated or revoked.")
        agent.refresh_from_db()
        record_event(actor=None, action="agent.rotated", obj=agent, after={"rotations": agent.rotations})
    return Issued(agent, secret)


def revoke_agent(*, actor: User, agent_id: uuid.UUID) -> NodeAgent:
    """Revoke an agent's credential (idempotent); its calls answer 401 from then on. Audited."""
    _require_platform_admin(actor)
    with transaction.atomic():
        agent = NodeAgent.objects.select_for_update().filter(pk=agent_id).first()
        if agent is None:
            raise NotFound("No such agent.")
        if agent.revoked_at is None:
            agent.revoked_at = timezone.now()
            agent.save(update_fields=["revoked_at"])
            record_event(actor=actor, action="agent.revoked", obj=agent, after={"revoked": True})
    return agent


def reset_agent(*, actor: User, agent_id: uuid.UUID) -> NodeAgent:
    """Revoke every agent of this agent's node and release the node, so that one new agent may
    register with a bootstrap token (a reimaged node, an agent that lost its credential). Locks the
    node row, as registration does. Idempotent; audited."""
    _require_platform_admin(actor)
    now = timezone.now()
    with transaction.atomic():
        agent = NodeAgent.objects.filter(pk=agent_id).order_by().first()
        if agent is None:
            raise NotFound("No such agent.")
        Node.objects.select_for_update().filter(pk=agent.node_id).order_by().first()
        unreleased = NodeAgent.objects.filter(node_id=agent.node_id, released_at__isnull=True)
        revoked = unreleased.filter(revoked_at__isnull=True).update(revoked_at=now)
        released = unreleased.update(released_at=now)
        if released:
            record_event(
                actor=actor,
                action="agent.reset",
                obj=agent,
                after={"revoked": revoked, "released": released},
            )
    agent.refresh_from_db()
    return agent
