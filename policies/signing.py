"""Ed25519 signing of bundles (docs/agent-protocol.md).

The private key comes from ``POLICY_SIGNING_KEY`` (PEM, or ``POLICY_SIGNING_KEY_FILE``) in settings,
required in secure mode; without one (tests, the demo) it is derived from ``SECRET_KEY``, so every web
process signs with the same key. Agents verify with the public key from their own configuration.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from django.conf import settings


def canonical_json(value: Any) -> bytes:
    """The one serialisation that is hashed and signed: sorted keys, no spaces, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def content_hash(bundle: dict[str, Any]) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(bundle)).hexdigest()


@functools.cache
def _private_key() -> Ed25519PrivateKey:
    pem = getattr(settings, "POLICY_SIGNING_KEY", "") or ""
    if not pem:
        seed = hashlib.sha256(b"gpuplatform policy signing:" + settings.SECRET_KEY.encode()).digest()
        return Ed25519PrivateKey.from_private_bytes(seed)
    key = serialization.load_pem_private_key(pem.encode(), password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError("POLICY_SIGNING_KEY is not an Ed25519 private key")
    return key


def public_key() -> Ed25519PublicKey:
    return _private_key().public_key()


def public_key_pem() -> str:
    return (
        public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


def key_id() -> str:
    raw = public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def sign(data: bytes) -> str:
    return base64.b64encode(_private_key().sign(data)).decode()
