"""The demo organisation: a realistic tenant tree with people in every role, seeded idempotently."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from gpuplatform.accounts.models import ApiToken, PlatformRole, TokenScope, User
from gpuplatform.accounts.tokens import TokenInvalid, authenticate_token, issue_api_token
from inventory.models import Cluster
from inventory.services import create_cluster, update_cluster
from tenants.models import Membership, Tenant
from tenants.services import add_membership, create_tenant

DEMO_PASSWORD = "gpuplatform-demo"

# (slug, display name, cost centre, parent slug, namespaces)
TREE = [
    ("acme", "Acme AI", "CC-1000", None, []),
    ("research", "Research", "CC-2000", "acme", []),
    ("product", "Product Engineering", "CC-3000", "acme", []),
    ("platform", "Platform", "CC-4000", "acme", []),
    ("vision", "Vision", "CC-2100", "research", ["team-vision"]),
    ("nlp", "Language Models", "CC-2200", "research", ["team-nlp"]),
    ("recsys", "Recommendations", "CC-3100", "product", ["team-recsys"]),
    ("search", "Search Ranking", "CC-3200", "product", []),
    ("infra", "ML Infrastructure", "CC-4100", "platform", ["team-infra"]),
]

# (username, full name, platform role, [(tenant slug, role)])
PEOPLE = [
    ("admin", "Ada Admin", PlatformRole.PLATFORM_ADMIN, []),
    ("fiona", "Fiona Finance", PlatformRole.FINANCE, []),
    ("rita", "Rita Research-Lead", "", [("research", "tenant-admin")]),
    ("alice", "Alice Vision-Lead", "", [("vision", "tenant-admin")]),
    ("bob", "Bob NLP-Lead", "", [("nlp", "tenant-admin")]),
    ("carol", "Carol Recsys-Lead", "", [("recsys", "tenant-admin")]),
    ("dave", "Dave Researcher", "", [("vision", "member"), ("nlp", "member")]),
    ("erin", "Erin Engineer", "", [("recsys", "member"), ("search", "member")]),
    ("frank", "Frank Observer", "", [("product", "viewer")]),
    ("ivan", "Ivan Infra", "", [("infra", "tenant-admin")]),
]

TOKEN_NAME = "demo"


@dataclass(frozen=True)
class DemoCredentials:
    admin_username: str
    admin_password: str
    tokens: dict[str, str]  # "alice (tenant-admin of vision)" -> plaintext


def seed_demo_organisation(*, token_file: Path | None = None) -> DemoCredentials:
    """Create what is missing of the demo tree and people, and tokens for two team admins. Tokens are
    stored hashed, so their plaintext is kept in ``token_file`` (the demo's, beside its database):
    a kept token that still works is printed again; without one, the previous demo tokens are revoked
    and new ones issued (and kept)."""
    kept = _read_kept_tokens(token_file)
    with transaction.atomic():
        users: dict[str, User] = {}
        for username, full_name, platform_role, _ in PEOPLE:
            user, created = User.objects.get_or_create(
                username=username,
                defaults={
                    "first_name": full_name.split()[0],
                    "last_name": " ".join(full_name.split()[1:]),
                    "email": f"{username}@acme.example",
                    "platform_role": platform_role,
                    "is_staff": platform_role == PlatformRole.PLATFORM_ADMIN,
                    "is_superuser": platform_role == PlatformRole.PLATFORM_ADMIN,
                },
            )
            if created:
                user.set_password(DEMO_PASSWORD)
                user.save(update_fields=["password"])
            users[username] = user
        admin = users["admin"]
        by_slug = {t.slug: t for t in Tenant.objects.filter(slug__in=[row[0] for row in TREE])}
        for slug, name, cost_centre, parent_slug, namespaces in TREE:
            if slug not in by_slug:
                by_slug[slug] = create_tenant(
                    actor=admin,
                    slug=slug,
                    display_name=name,
                    cost_centre=cost_centre,
                    parent_id=by_slug[parent_slug].pk if parent_slug else None,
                    namespaces=[("", ns) for ns in namespaces],
                )
        for username, _, _, roles in PEOPLE:
            for slug, role in roles:
                if not Membership.objects.filter(user=users[username], tenant=by_slug[slug]).exists():
                    add_membership(actor=admin, tenant_id=by_slug[slug].pk, username=username, role=role)
        tokens: dict[str, str] = {}
        for username, slug in (("alice", "vision"), ("bob", "nlp")):
            user = users[username]
            who = f"{username} (tenant-admin of {slug})"
            if _still_works(kept.get(who, ""), user):
                tokens[who] = kept[who]
                continue
            ApiToken.objects.filter(user=user, name=TOKEN_NAME, revoked_at__isnull=True).update(
                revoked_at=timezone.now()
            )
            issued = issue_api_token(actor=user, name=TOKEN_NAME, scopes=[TokenScope.READ, TokenScope.WRITE])
            tokens[who] = issued.plaintext
    if token_file is not None and tokens != kept:
        _keep_tokens(token_file, tokens)
    return DemoCredentials(admin_username="admin", admin_password=DEMO_PASSWORD, tokens=tokens)


def _still_works(plaintext: str, user: User) -> bool:
    if not plaintext:
        return False
    try:
        token = authenticate_token(plaintext)
    except TokenInvalid:
        return False
    return token.user_id == user.pk and token.name == TOKEN_NAME


def _read_kept_tokens(token_file: Path | None) -> dict[str, str]:
    if token_file is None or not token_file.exists():
        return {}
    try:
        data = json.loads(token_file.read_text())
    except (OSError, ValueError):
        return {}  # unreadable: issue new ones
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _keep_tokens(token_file: Path, tokens: dict[str, str]) -> None:
    """Owner-only, as the demo's SQLite file holds nothing secret but this file does."""
    token_file.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        json.dump(tokens, handle, indent=2)


DEMO_CLUSTER = "demo"


def seed_demo_cluster(*, kubeconfig: str) -> Cluster:
    """Register (or re-point, as the simulator's port changes per run) the demo cluster."""
    admin = User.objects.get(username="admin")
    existing = Cluster.objects.filter(name=DEMO_CLUSTER).first()
    if existing is None:
        return create_cluster(actor=admin, name=DEMO_CLUSTER, kubeconfig=kubeconfig)
    return update_cluster(actor=admin, cluster_id=existing.pk, kubeconfig=kubeconfig)
