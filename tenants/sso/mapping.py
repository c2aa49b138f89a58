"""Group claims to grants: pure, no Django. The mapping comes from settings (OIDC_GROUP_ROLES):

    {"gpu-admins": ["platform:platform-admin"], "vision-devs": ["tenant:vision:member"]}

A person gets the union of what their groups grant; where two groups grant different roles on the
same thing, the stronger role wins (platform-admin over finance; tenant-admin over member over viewer).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

PLATFORM_ROLES = ("platform-admin", "finance")  # strongest first
TENANT_ROLES = ("tenant-admin", "member", "viewer")


class MappingError(ValueError):
    """The configured mapping is not one this module can apply."""


@dataclass(frozen=True, slots=True)
class Grant:
    platform_role: str = ""  # set for "platform:<role>"
    tenant: str = ""  # tenant slug, for "tenant:<slug>:<role>"
    tenant_role: str = ""


@dataclass(frozen=True, slots=True)
class Desired:
    """What a person's groups grant right now."""

    platform_role: str = ""
    tenants: Mapping[str, str] = field(default_factory=dict)  # slug -> role


def parse_grant(text: str) -> Grant:
    parts = text.split(":")
    if len(parts) == 2 and parts[0] == "platform" and parts[1] in PLATFORM_ROLES:
        return Grant(platform_role=parts[1])
    if len(parts) == 3 and parts[0] == "tenant" and parts[1] and parts[2] in TENANT_ROLES:
        return Grant(tenant=parts[1], tenant_role=parts[2])
    raise MappingError(
        f"{text!r} is not a grant: use platform:<{'|'.join(PLATFORM_ROLES)}> or "
        f"tenant:<tenant slug>:<{'|'.join(TENANT_ROLES)}>"
    )


def parse_mapping(raw: object) -> dict[str, tuple[Grant, ...]]:
    """Group name -> its grants. Refuses anything but a JSON object of lists of grant strings."""
    if not isinstance(raw, Mapping):
        raise MappingError("the group mapping must be an object: group name -> list of grants")
    mapping: dict[str, tuple[Grant, ...]] = {}
    for group, grants in raw.items():
        if not isinstance(group, str) or not group:
            raise MappingError(f"group names must be non-empty strings, got {group!r}")
        if not isinstance(grants, list) or not all(isinstance(g, str) for g in grants):
            raise MappingError(f"group {group!r}: its grants must be a list of strings")
        mapping[group] = tuple(parse_grant(g) for g in grants)
    return mapping


def _stronger(order: tuple[str, ...], a: str, b: str) -> str:
    if not a:
        return b
    if not b:
        return a
    return a if order.index(a) <= order.index(b) else b


def resolve(groups: Iterable[str], mapping: Mapping[str, tuple[Grant, ...]]) -> Desired:
    """What ``groups`` grant together. Groups the mapping does not name grant nothing."""
    platform_role = ""
    tenants: dict[str, str] = {}
    for group in sorted(set(groups)):
        for grant in mapping.get(group, ()):
            if grant.platform_role:
                platform_role = _stronger(PLATFORM_ROLES, platform_role, grant.platform_role)
            else:
                tenants[grant.tenant] = _stronger(
                    TENANT_ROLES, tenants.get(grant.tenant, ""), grant.tenant_role
                )
    return Desired(platform_role=platform_role, tenants=tenants)


def groups_of(claims: Mapping[str, object], claim: str) -> list[str]:
    """The group names in ``claims[claim]``: a list of strings (or one string), else none."""
    value = claims.get(claim)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [g for g in value if isinstance(g, str)]
    return []
