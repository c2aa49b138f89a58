"""Kubeconfigs for the tests: real certificates (made here with `cryptography`) and a builder."""

from __future__ import annotations

import base64
import datetime as dt
from functools import cache
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@cache
def certificate_and_key(common_name: str = "kubernetes") -> tuple[bytes, bytes]:
    """A self-signed certificate and its unencrypted key, both PEM."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=30))
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return certificate.public_bytes(serialization.Encoding.PEM), key_pem


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def kubeconfig(
    *,
    server: str = "https://10.0.0.1:6443",
    cluster: dict[str, Any] | None = None,
    user: dict[str, Any] | None = None,
    extra_users: list[dict[str, Any]] | None = None,
) -> str:
    """A one-context kubeconfig; by default a CA-verified server and an inline token."""
    ca, _ = certificate_and_key("cluster-ca")
    cluster_body = {"server": server, "certificate-authority-data": b64(ca)} if cluster is None else cluster
    user_body = {"token": "secret-token"} if user is None else user
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": cluster_body}],
            "users": [{"name": "u", "user": user_body}, *(extra_users or [])],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "c",
        },
        sort_keys=False,
    )
