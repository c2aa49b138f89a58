"""A service process's environment as the chart gives it: its container's env and envFrom, with
secret references filled by freshly made secrets and the test's own database and Redis."""

from __future__ import annotations

import base64
import os
import re
import secrets
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests.deploy.chart import by_kind

POD_IP = "10.42.0.17"


def made_secrets(database_url: str, redis_url: str) -> dict[str, str]:
    """What an operator puts in the chart's existing Secret (docs/operations.md: Secrets)."""
    signing = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return {
        "secret-key": secrets.token_urlsafe(50),
        "encryption-key": base64.urlsafe_b64encode(os.urandom(32)).decode(),
        "policy-signing-key": signing.decode(),
        "database-url": database_url,
        "redis-url": redis_url,
        "oidc-client-secret": secrets.token_urlsafe(32),
        "metrics-token": secrets.token_urlsafe(32),
    }


def container_env(
    objects: list[dict[str, Any]], container: dict[str, Any], secret_values: dict[str, str]
) -> dict[str, str]:
    config_maps = {c["metadata"]["name"]: c.get("data", {}) for c in by_kind(objects, "ConfigMap")}
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        env.update(config_maps[source["configMapRef"]["name"]])
    for item in container.get("env", []):
        if "value" in item:
            # Kubernetes expands $(VAR) from variables defined earlier in the list.
            env[item["name"]] = re.sub(
                r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)), item["value"]
            )
        elif "secretKeyRef" in item["valueFrom"]:
            env[item["name"]] = secret_values[item["valueFrom"]["secretKeyRef"]["key"]]
        elif item["valueFrom"].get("fieldRef", {}).get("fieldPath") == "status.podIP":
            env[item["name"]] = POD_IP
        else:
            raise AssertionError(f"no stand-in for {item}")
    return env
