"""The outbound policy as the settings configure it, for URLs that users type (alert receivers,
metrics sources) and that providers publish (single sign-on): loopback and private addresses only
where OUTBOUND_ALLOWED_NETWORKS names them."""

from __future__ import annotations

import requests
from django.conf import settings

from gpuplatform.errors import ValidationFailed
from gpuplatform.outbound.policy import OutboundPolicy, OutboundRefused, parse_networks, vet_url
from gpuplatform.outbound.session import failure_text, guarded_session

__all__ = ["failure_text", "user_url_policy", "user_url_session", "vet_user_url"]


def user_url_policy() -> OutboundPolicy:
    return OutboundPolicy(allowed_networks=parse_networks(settings.OUTBOUND_ALLOWED_NETWORKS))


def vet_user_url(url: str, *, field: str = "url") -> str:
    """The URL if the policy allows it now; else ValidationFailed with the policy's code."""
    try:
        return vet_url(url, user_url_policy())
    except OutboundRefused as refused:
        raise ValidationFailed(f"{field}: {refused.message}", code=refused.code, field=field) from None


def user_url_session() -> requests.Session:
    return guarded_session(user_url_policy())
