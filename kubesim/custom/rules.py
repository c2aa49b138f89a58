"""`x-kubernetes-validations`: CEL rules of a CRD's schema, evaluated with cel-python as the
apiextensions server evaluates them: `self` is the value at the rule's node, `oldSelf` the value it had
before the update (map-list items by key, set items by value, atomic lists not correlated). A rule that
names oldSelf is a transition rule: skipped where there is no old value (creates, new items) unless it
sets optionalOldSelf.

A false rule is a field error at the node (plus `fieldPath`): by `reason`, Invalid (the default,
showing the node's schema type: `spec: Invalid value: "object": <message>`), Forbidden, Required or
Duplicate; the message is messageExpression's, else message, else "failed rule: <rule>". An empty path
is printed "<nil>", as the server's root field path is.
"""

from __future__ import annotations

import re
from typing import Any

from celpy import celtypes

from kubesim.admission.cel import CelError, Programs, to_cel
from kubesim.errors import field_cause

_PROGRAMS = Programs()
_OLD_SELF = re.compile(r"\boldSelf\b")
# No old value at this node (a create, a new list item, an atomic list's item).
UNSET: Any = object()


def _unset(value: Any) -> bool:
    return value is UNSET


def evaluate(sch: dict[str, Any], value: Any, old: Any, path: str) -> list[dict[str, Any]]:
    causes = []
    node_type = "string" if sch.get("x-kubernetes-int-or-string") else sch.get("type", "object")
    for rule in sch.get("x-kubernetes-validations") or []:
        expression = str(rule.get("rule", ""))
        transition = bool(_OLD_SELF.search(expression))
        if transition and _unset(old) and not rule.get("optionalOldSelf"):
            continue
        activation: dict[str, Any] = {"self": to_cel(value)}
        if not _unset(old):
            activation["oldSelf"] = to_cel(old)
        where = (
            path + str(rule.get("fieldPath") or "") if path else str(rule.get("fieldPath") or "").lstrip(".")
        )
        where = where or "<nil>"
        try:
            result = _PROGRAMS.evaluate(expression, activation)
        except CelError as exc:
            # The server's wording: "<error> evaluating rule: <rule>", at the rule's node.
            detail = str(exc).removeprefix(f"expression '{expression}' resulted in error: ")
            message = f"{detail} evaluating rule: {expression.strip()}"
            causes.append(
                field_cause("FieldValueInvalid", path or "<nil>", f'Invalid value: "{node_type}": {message}')
            )
            continue
        if isinstance(result, celtypes.BoolType) and bool(result):
            continue
        message = _message(rule, activation) or rule.get("message") or f"failed rule: {expression.strip()}"
        reason = rule.get("reason") or "FieldValueInvalid"
        if reason == "FieldValueForbidden":
            causes.append(field_cause(reason, where, f"Forbidden: {message}"))
        elif reason == "FieldValueRequired":
            causes.append(field_cause(reason, where, f"Required value: {message}"))
        elif reason == "FieldValueDuplicate":
            causes.append(field_cause(reason, where, f'Duplicate value: "{node_type}"'))
        else:
            causes.append(field_cause("FieldValueInvalid", where, f'Invalid value: "{node_type}": {message}'))
    return causes


def _message(rule: dict[str, Any], activation: dict[str, Any]) -> str:
    expression = rule.get("messageExpression")
    if not expression:
        return ""
    try:
        return str(_PROGRAMS.evaluate(str(expression), activation))
    except CelError:
        return ""
