"""Per-pool extended resource names.

A namespace's ResourceQuota counts a resource *name* across the whole cluster, so two pools that both
advertise ``nvidia.com/gpu`` cannot be held apart (issue 11, defect 4). Each pool therefore advertises
a name of its own, set through the device plugin's configuration (``sharing.*.resources[].rename`` for
replicated resources, ``resources.gpus`` / ``resources.mig`` patterns otherwise; NVIDIA
k8s-device-plugin api/config/v1/resources.go and replicas.go). The plugin's own rule for a name: the
``nvidia.com/`` prefix is added when absent, the whole name is at most 63 characters, and the part
after the slash is a DNS subdomain.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["PREFIX", "mig_resource_name", "pool_resource_name", "resource_name_problem"]

PREFIX = "nvidia.com/"
MAX_LENGTH = 63  # MaxResourceNameLength in api/config/v1/consts.go
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9.-]+", "-", text.lower()).strip("-.")
    return re.sub(r"-{2,}", "-", slug) or "pool"


def _fit(base: str, pool: str) -> str:
    """``<base>-<pool>`` within 63 characters; a long pool name is cut and given a hash, so two
    long names that share a prefix still get different resource names."""
    name = f"{PREFIX}{base}-{_slug(pool)}"
    if len(name) <= MAX_LENGTH:
        return name
    digest = hashlib.sha256(pool.encode()).hexdigest()[:8]
    room = MAX_LENGTH - len(f"{PREFIX}{base}--{digest}")
    return f"{PREFIX}{base}-{_slug(pool)[:room].rstrip('-.')}-{digest}"


def pool_resource_name(pool: str) -> str:
    """The pool's whole-GPU (or replica) resource: ``nvidia.com/gpu-<pool>``."""
    return _fit("gpu", pool)


def mig_resource_name(pool: str, profile: str) -> str:
    """A MIG profile's resource on this pool under the mixed strategy: ``nvidia.com/mig-1g.10gb-<pool>``."""
    return _fit(f"mig-{profile.replace('+', '.')}", pool)


def resource_name_problem(name: str) -> str | None:
    """Why the device plugin would refuse this name, or None."""
    full = name if name.startswith(PREFIX) else PREFIX + name
    if len(full) > MAX_LENGTH:
        return f"{full!r} is longer than {MAX_LENGTH} characters"
    if not _DNS_SUBDOMAIN.match(full[len(PREFIX) :]) or len(full[len(PREFIX) :]) > 253:
        return (
            f"{full!r}: the part after 'nvidia.com/' must be a DNS subdomain (lower case, digits, '-', '.')"
        )
    return None


_WHOLE = re.compile(r"^nvidia\.com/gpu(\.shared|-[a-z0-9.-]+)?$")
_MIG = re.compile(r"^nvidia\.com/mig-(?P<profile>\d+g\.\d+gb(?:\.[a-z]+)*?)(?:-(?P<pool>[a-z0-9.-]+))?$")


def resource_renames(
    *, mode: str, strategy: str, pool: str, resource_name: str, names: list[str]
) -> dict[str, str]:
    """How the names a pool's flavors use today become the names the pool advertises under its
    policy: whole-GPU and replica names (``nvidia.com/gpu``, ``.shared``, an earlier per-pool name)
    become the pool's own name; under MIG mixed, ``nvidia.com/mig-<profile>`` becomes the pool's
    profile name. HAMi's names are cluster-wide (its scheduler's config): back to ``nvidia.com/gpu``.
    DRA flavors are claims, not names: nothing to rename."""
    own = resource_name or pool_resource_name(pool)
    whole_target = {
        "exclusive": own,
        "time-slicing": own,
        "mps": own,
        "mig": own,
        "hami": "nvidia.com/gpu",
    }.get(mode)
    renames: dict[str, str] = {}
    for name in names:
        if whole_target and _WHOLE.match(name):
            renames[name] = whole_target
            continue
        match = _MIG.match(name)
        if match and mode == "mig" and strategy == "mixed":
            renames[name] = mig_resource_name(pool, match["profile"])
    return {old: new for old, new in renames.items() if old != new}
