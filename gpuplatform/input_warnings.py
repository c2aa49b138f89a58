"""Warnings about input that is valid but probably not meant (a quota no pool can ever back, a hard
budget of 0): never a refusal. The API returns them as ``warnings`` on the saved object's response;
a form shows them before saving and saves only when the user confirms ("save anyway")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CONFIRM_FIELD = "save_anyway"


@dataclass(frozen=True)
class InputWarning:
    code: str  # stable, for the API; never shown in the UI
    message: str  # a sentence for people
    field: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "field": self.field}


def confirmed(data: Any) -> bool:
    """Whether a form's POST says "save anyway" to the warnings it was shown."""
    return bool(data) and data.get(CONFIRM_FIELD) == "1"
