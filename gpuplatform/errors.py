"""Domain errors raised by services; the API renders them as problem+json with their stable code."""

from __future__ import annotations


class DomainError(Exception):
    """A rule of the domain refused the operation. Nothing was changed."""

    status = 400
    code = "invalid"
    title = "Invalid request"

    def __init__(self, message: str, *, code: str | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.field = field


class ValidationFailed(DomainError):
    status = 400
    code = "validation_failed"
    title = "Validation failed"


class NotFound(DomainError):
    status = 404
    code = "not_found"
    title = "Not found"


class Conflict(DomainError):
    status = 409
    code = "conflict"
    title = "Conflict"


class Forbidden(DomainError):
    """Only for objects the actor may already see: hidden objects are NotFound, never Forbidden."""

    status = 403
    code = "permission_denied"
    title = "Permission denied"
