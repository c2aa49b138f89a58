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
from gpuplatform.errors import DomainError, Forbidden, NotFound, ValidationFailed
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
    """Exchange a bootstrap token for a node credential. Locks the token row (its use counter) and
    revokes the node's earlier agents, so one credential per node is live. Audited; a refusal is
    recorded as an attempt and answers 401 without saying which part was wrong."""
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


class _Refused(Exception):
    pass


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
            node = Node.objects.filter(cluster=token.cluster, name=node_name, present=True).first()
        if token is None or node is None:
            raise _Refused
        for earlier in NodeAgent.objects.select_for_update().filter(node=node, revoked_at__isnull=True):
            earlier.revoked_at = now
            earlier.save(update_fields=["revoked_at"])
            record_event(actor=None, action="agent.replaced", obj=earlier, after={"revoked": True})
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
