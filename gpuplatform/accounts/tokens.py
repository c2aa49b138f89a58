"""API token services: issue, verify, revoke. Token format: ``gpp_<key id>_<secret>``."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from gpuplatform.accounts.models import ApiToken, TokenScope, User
from gpuplatform.audit.services import record_event, snapshot
from gpuplatform.errors import Conflict, Forbidden, NotFound, ValidationFailed

TOKEN_PREFIX = "gpp"
MAX_TOKEN_LIFETIME = timedelta(days=366)


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    plaintext: str


class TokenInvalid(Exception):
    """The presented token is unknown, malformed, expired or revoked; ``code`` says which."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def issue_api_token(
    *,
    actor: User,
    name: str,
    scopes: Sequence[str],
    expires_at: datetime | None = None,
    owner: User | None = None,
    via_token: ApiToken | None = None,
) -> IssuedToken:
    """Create a token for ``owner`` (default: the actor). Only a platform-admin may issue one for a
    service account; nobody issues one for another person. Every token expires: by default after
    ``API_TOKEN_DEFAULT_DAYS``, at most 366 days ahead, and a token minted by a token (``via_token``)
    never outlives the token that minted it nor holds a scope it lacks. Writes an audit event."""
    owner = owner or actor
    if owner.pk != actor.pk and not (actor.is_platform_admin and owner.is_service_account):
        raise Forbidden(
            "Tokens can only be created for yourself, or by a platform-admin for a service account."
        )
    clean_scopes = sorted(set(scopes))
    if not clean_scopes or any(scope not in TokenScope.values for scope in clean_scopes):
        raise ValidationFailed("scopes must be a non-empty subset of read, write", field="scopes")
    if TokenScope.WRITE in clean_scopes and TokenScope.READ not in clean_scopes:
        clean_scopes = sorted([*clean_scopes, TokenScope.READ])
    now = timezone.now()
    explicit_expiry = expires_at is not None
    if expires_at is None:
        expires_at = now + timedelta(days=settings.API_TOKEN_DEFAULT_DAYS)
    if expires_at <= now:
        raise ValidationFailed("expires_at must be in the future", field="expires_at")
    if expires_at > now + MAX_TOKEN_LIFETIME:
        raise ValidationFailed("expires_at may be at most 366 days ahead", field="expires_at")
    if via_token is not None:
        # Authority flows down: a stolen token cannot renew itself into a longer-lived or wider one.
        if not set(clean_scopes) <= set(via_token.scopes):
            raise Forbidden(
                "A token cannot mint a token with scopes it does not hold.", code="scope_escalation"
            )
        if explicit_expiry and expires_at > via_token.expires_at:
            raise ValidationFailed(
                "expires_at may not be later than the expiry of the token used to create it",
                code="outlives_minting_token",
                field="expires_at",
            )
        expires_at = min(expires_at, via_token.expires_at)
    key_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    with transaction.atomic():
        if ApiToken.objects.filter(user=owner, name=name, revoked_at__isnull=True).exists():
            raise Conflict(
                f"A live token named {name!r} already exists.", code="token_name_taken", field="name"
            )
        token = ApiToken.objects.create(
            user=owner,
            name=name,
            key_id=key_id,
            secret_hash=_hash(secret),
            scopes=clean_scopes,
            expires_at=expires_at,
            created_by=actor,
        )
        after = {**snapshot(token, TOKEN_FIELDS), "key_id": key_id}
        if via_token is not None:
            after["minted_by_key_id"] = via_token.key_id
        record_event(actor=actor, action="api_token.created", obj=token, after=after)
    return IssuedToken(token=token, plaintext=f"{TOKEN_PREFIX}_{key_id}_{secret}")


TOKEN_FIELDS = ("name", "user_id", "scopes", "expires_at", "revoked_at")

# Every request with a token reads it and its user: what ``ApiToken.objects.select_related("user")
# .filter(key_id=...).first()`` reads, by one SQL text made once, its values converted as the ORM
# converts them. Building the ORM's query cost more than running it (~0.7 of ~1 ms a request).
_token_read: dict[str, tuple[str, list[tuple[int, list[Any], Any]]]] = {}


def _token_read_for_this_connection() -> tuple[str, list[tuple[int, list[Any], Any]]]:
    """The SQL text and, per column that needs one, the ORM's converters (JSON, and SQLite's types)."""
    if connection.alias not in _token_read:
        quote = connection.ops.quote_name
        columns, converters = [], []
        for model in (ApiToken, User):
            for field in model._meta.concrete_fields:
                column = field.get_col(model._meta.db_table)
                columns.append(f"{quote(model._meta.db_table)}.{quote(str(field.column))}")
                found = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
                if found:
                    converters.append((len(columns) - 1, found, column))
        tokens, users = quote(ApiToken._meta.db_table), quote(User._meta.db_table)
        sql = (
            f"SELECT {', '.join(columns)} FROM {tokens} INNER JOIN {users} "  # noqa: S608 - names
            f"ON ({tokens}.{quote('user_id')} = {users}.{quote('id')}) "
            f"WHERE {tokens}.{quote('key_id')} = %s LIMIT 1"
        )
        _token_read[connection.alias] = (sql, converters)
    return _token_read[connection.alias]


def _token_with_user(key_id: str) -> ApiToken | None:
    sql, converters = _token_read_for_this_connection()
    with connection.cursor() as cursor:
        cursor.execute(sql, [key_id])
        row = cursor.fetchone()
    if row is None:
        return None
    values = list(row)
    for position, functions, column in converters:
        for function in functions:
            values[position] = function(values[position], column, connection)
    token_fields = [f.attname for f in ApiToken._meta.concrete_fields]
    user_fields = [f.attname for f in User._meta.concrete_fields]
    token = ApiToken.from_db(connection.alias, token_fields, values[: len(token_fields)])
    user = User.from_db(connection.alias, user_fields, values[len(token_fields) :])
    ApiToken._meta.get_field("user").set_cached_value(token, user)
    return token


def revoke_api_token(*, actor: User, token_id: uuid.UUID | str) -> ApiToken:
    """Revoke a visible token; revoking twice is a no-op. Locks the token row."""
    with transaction.atomic():
        token = ApiToken.objects.visible_to(actor).select_for_update().filter(pk=token_id).first()
        if token is None:
            raise NotFound("No such token.")
        if token.revoked_at is None:
            before = snapshot(token, TOKEN_FIELDS)
            token.revoked_at = timezone.now()
            token.save(update_fields=["revoked_at"])
            record_event(
                actor=actor,
                action="api_token.revoked",
                obj=token,
                before=before,
                after=snapshot(token, TOKEN_FIELDS),
            )
    return token


def authenticate_token(plaintext: str) -> ApiToken:
    """The live token for ``plaintext``, or TokenInvalid. Updates last_used_at at most once a minute."""
    parts = plaintext.split("_", 2)
    if len(parts) != 3 or parts[0] != TOKEN_PREFIX:
        raise TokenInvalid("token_malformed", "The bearer token is not a gpuplatform token.")
    _, key_id, secret = parts
    token = _token_with_user(key_id)
    # compare_digest keeps the comparison constant-time even though the key id already matched.
    if token is None or not hmac.compare_digest(token.secret_hash, _hash(secret)):
        raise TokenInvalid("token_invalid", "The bearer token is not valid.")
    now = timezone.now()
    if token.revoked_at is not None:
        raise TokenInvalid("token_revoked", "The bearer token has been revoked.")
    if token.expires_at <= now:
        raise TokenInvalid("token_expired", "The bearer token has expired.")
    if not token.user.is_active:
        raise TokenInvalid("user_inactive", "The token's user is deactivated.")
    resolution = timedelta(seconds=settings.API_TOKEN_LAST_USED_RESOLUTION_SECONDS)
    if token.last_used_at is None or now - token.last_used_at > resolution:
        # A conditional update: concurrent requests do not all write, and no lock is held.
        ApiToken.objects.filter(pk=token.pk).filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - resolution)
        ).update(last_used_at=now)
        token.last_used_at = now
    return token
