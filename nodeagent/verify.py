"""Checks an envelope before anything is applied (docs/agent-protocol.md): the signature with the
configured public key, the addressee, the revision order and the content hash."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

BUNDLE_FORMAT = "gpuplatform.bundle/v1"


class BundleRefused(Exception):
    """The envelope is not applied; ``reason`` says why (reported with code ``bundle_refused``)."""

    def __init__(self, reason: str, payload: dict[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.payload = payload


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def content_hash(bundle: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(bundle)).hexdigest()


def load_public_key(pem: bytes) -> Ed25519PublicKey:
    key = serialization.load_pem_public_key(pem)
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError("the configured public key is not an Ed25519 key")
    return key


def verify_envelope(
    envelope: Any, *, key: Ed25519PublicKey, cluster: str, node: str, last_applied: int
) -> dict[str, Any]:
    """The payload of a valid envelope for this node, newer than ``last_applied``; BundleRefused else."""
    if not isinstance(envelope, dict):
        raise BundleRefused("the envelope is not an object")
    try:
        data = base64.b64decode(envelope["payload"], validate=True)
        signature = base64.b64decode(envelope["signature"], validate=True)
    except (KeyError, TypeError, binascii.Error) as exc:
        raise BundleRefused(f"malformed envelope: {exc}") from None
    try:
        key.verify(signature, data)
    except InvalidSignature:
        raise BundleRefused("the signature does not verify with the configured public key") from None
    try:
        payload = json.loads(data)
    except ValueError:
        raise BundleRefused("the payload is not JSON") from None
    if not isinstance(payload, dict) or payload.get("format") != BUNDLE_FORMAT:
        raise BundleRefused(
            f"unknown payload format {payload.get('format') if isinstance(payload, dict) else None!r}"
        )
    if payload.get("cluster") != cluster or payload.get("node") != node:
        raise BundleRefused(
            f"the bundle is for {payload.get('cluster')}/{payload.get('node')}, not {cluster}/{node}", payload
        )
    revision = payload.get("revision")
    if not isinstance(revision, int) or revision <= last_applied:
        raise BundleRefused(
            f"revision {revision} is not newer than the applied {last_applied} (replay or reorder)", payload
        )
    if content_hash(payload.get("bundle")) != payload.get("content_hash"):
        raise BundleRefused("the content hash does not match the bundle", payload)
    return payload
