"""Django's admin site writes to the audit log like every other way in (DESIGN §6): each add, change
and delete a staff user makes there is an event in the same transaction, with the object's fields
before and after. The admin's own history (LogEntry) is no audit log: it keeps a message, not the
values, and lives in a table the admin itself can edit.

A password hash never goes into an event; that it changed does (``password_changed``)."""

from __future__ import annotations

import weakref
from typing import Any

from django.contrib import admin
from django.db import models, transaction
from django.forms import ModelForm
from django.http import HttpRequest

from gpuplatform.audit.services import record_event, snapshot

__all__ = ["AuditedAdminMixin", "admin_snapshot", "audited"]

SECRET_FIELDS = frozenset({"password"})


def admin_snapshot(obj: models.Model) -> dict[str, Any]:
    """Every concrete field but secrets, and many-to-many ones (groups, permissions) as sorted names."""
    names = [f.attname for f in obj._meta.concrete_fields if f.name not in SECRET_FIELDS]
    state = snapshot(obj, names)
    if obj.pk is not None:
        for field in obj._meta.many_to_many:
            state[field.name] = sorted(str(related) for related in getattr(obj, field.name).all())
    return state


def _password(obj: models.Model) -> str:
    return str(getattr(obj, "password", "") or "")


class AuditedAdminMixin(admin.ModelAdmin):
    """Put first in a ModelAdmin's bases. The admin wraps add, change and delete views in one
    transaction; the bulk delete action and a user's password form are wrapped here."""

    # The state as stored when the form came in, keyed by the form, for save_related to compare
    # with once the many-to-many fields are saved too (groups, permissions: how roles are granted).
    _before: weakref.WeakKeyDictionary[Any, tuple[dict[str, Any], str]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._before = weakref.WeakKeyDictionary()

    def _action(self, verb: str) -> str:
        return f"{self.model._meta.model_name}.{verb}"

    def save_model(self, request: HttpRequest, obj: Any, form: ModelForm[Any], change: bool) -> None:
        stored = type(obj)._default_manager.filter(pk=obj.pk).first() if change and obj.pk else None
        self._before[form] = (admin_snapshot(stored), _password(stored)) if stored else ({}, "")
        super().save_model(request, obj, form, change)

    def save_related(self, request: HttpRequest, form: ModelForm[Any], formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        obj = form.instance
        before, password = self._before.pop(form, ({}, ""))
        after = admin_snapshot(obj)
        if change and before == after and password == _password(obj):
            return  # saved unchanged: nothing to record
        if password != _password(obj):
            after["password_changed"] = True
        record_event(
            actor=request.user,
            action=self._action("updated" if change else "created"),
            obj=obj,
            before=before if change else None,
            after=after,
        )

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        record_event(actor=request.user, action=self._action("deleted"), obj=obj, before=admin_snapshot(obj))
        super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        with transaction.atomic():  # the "delete selected" action runs outside the admin's transaction
            for obj in queryset:
                record_event(
                    actor=request.user, action=self._action("deleted"), obj=obj, before=admin_snapshot(obj)
                )
            super().delete_queryset(request, queryset)


def audited(model_admin: type[admin.ModelAdmin]) -> type[admin.ModelAdmin]:
    """``model_admin`` with the audit mixin in front (for admins other apps register)."""
    if issubclass(model_admin, AuditedAdminMixin):
        return model_admin
    return type(f"Audited{model_admin.__name__}", (AuditedAdminMixin, model_admin), {})
