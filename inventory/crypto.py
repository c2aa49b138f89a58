"""Secrets at rest (kubeconfigs): Fernet, keyed by GPUPLATFORM_ENCRYPTION_KEY."""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from gpuplatform.errors import ValidationFailed


def _fernet() -> Fernet:
    key = settings.GPUPLATFORM_ENCRYPTION_KEY
    if not key:
        # Checked on use, not at import: `check --deploy` must run before secrets are mounted.
        if settings.SECURE:
            raise ImproperlyConfigured("GPUPLATFORM_ENCRYPTION_KEY must be set when GPUPLATFORM_SECURE=1")
        digest = hashlib.sha256(b"gpuplatform-inventory:" + settings.SECRET_KEY.encode()).digest()
        key = base64.urlsafe_b64encode(digest).decode()
    try:
        return Fernet(key)
    except ValueError as exc:
        raise ImproperlyConfigured("GPUPLATFORM_ENCRYPTION_KEY is not a Fernet key") from exc


def encrypt_text(plain: str) -> str:
    return _fernet().encrypt(plain.encode()).decode() if plain else ""


def decrypt_text(token: str) -> str:
    if not token:
        return ""
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken as exc:
        raise ValidationFailed(
            "The stored kubeconfig cannot be decrypted with the current key.", code="kubeconfig_undecryptable"
        ) from exc
