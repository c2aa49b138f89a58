"""Who a request is, as the API server's authenticators present it to admission (request.userInfo).

The kubeconfig's bearer token is an administrator (``ADMIN``). ``service_account_user`` is what the
service-account token authenticator makes of a bound token the kubelet projects into a pod (a
TokenRequest with a Pod as boundObjectRef): username ``system:serviceaccount:<ns>:<name>``, groups
``system:serviceaccounts``, ``system:serviceaccounts:<ns>`` and ``system:authenticated``, and the extra
``authentication.kubernetes.io/pod-name``, ``pod-uid``, ``credential-id`` (``JTI=<id>``, 1.29+) and,
since the pod is scheduled, ``node-name`` and ``node-uid`` (ServiceAccountTokenPodNodeInfo, on by
default since 1.30). kubesim authenticates only; it does not authorise (RBAC is compared with what
clients call by tests/deploy/test_rbac.py)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from kubesim import errors


@dataclass(frozen=True, slots=True)
class UserInfo:
    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, list[str]] = field(default_factory=dict)


# The user the kubeconfig's bearer token stands for.
ADMIN = UserInfo("kubesim-admin", groups=("system:masters", "system:authenticated"))
EXTRA = "authentication.kubernetes.io/"


def service_account_user(
    *, namespace: str, name: str, pod: dict[str, Any], node: dict[str, Any] | None
) -> UserInfo:
    """The user of a token bound to ``pod`` (which must be in ``namespace`` and run as ``name``)."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    if meta.get("namespace") != namespace or (spec.get("serviceAccountName") or "default") != name:
        raise errors.bad_request(
            f"the pod {meta.get('namespace')}/{meta.get('name')} does not run as service account "
            f"{namespace}/{name}"
        )
    extra = {
        f"{EXTRA}pod-name": [str(meta.get("name", ""))],
        f"{EXTRA}pod-uid": [str(meta.get("uid", ""))],
        f"{EXTRA}credential-id": [f"JTI={uuid.uuid4()}"],
    }
    if spec.get("nodeName"):
        extra[f"{EXTRA}node-name"] = [str(spec["nodeName"])]
        if node is not None:
            extra[f"{EXTRA}node-uid"] = [str((node.get("metadata") or {}).get("uid", ""))]
    return UserInfo(
        f"system:serviceaccount:{namespace}:{name}",
        uid=str(uuid.uuid5(uuid.NAMESPACE_URL, f"serviceaccount/{namespace}/{name}")),
        groups=("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"),
        extra=extra,
    )
