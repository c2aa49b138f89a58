"""ValidateValidatingAdmissionPolicy / ...Binding (pkg/apis/admissionregistration/validation): the rules
beyond the OpenAPI schema that clients writing policies trip over.

Policy: matchConstraints with resourceRules, at least one validation or audit annotation, every CEL
expression compiling (an expression that does not parse is refused at write, "compilation failed",
as the API server compiles them before storing), unique variable names. Binding: policyName,
validationActions (at least one, known, no duplicates, never both Deny and Warn), a paramRef with
exactly one of name and selector and a parameterNotFoundAction. Compile messages are cel-python's,
not cel-go's.
"""

from __future__ import annotations

import json
from typing import Any

import celpy

from kubesim.errors import field_cause

ACTIONS = ("Audit", "Deny", "Warn")


def _compile_errors(expression: Any, field: str) -> list[dict[str, Any]]:
    if not isinstance(expression, str) or not expression.strip():
        return [field_cause("FieldValueRequired", field, "Required value")]
    try:
        celpy.Environment().compile(expression)
    except celpy.CELParseError as exc:
        detail = str(exc.args[0] if exc.args else exc).splitlines()[0]
        return [
            field_cause(
                "FieldValueInvalid",
                field,
                f"Invalid value: {json.dumps(expression)}: compilation failed: ERROR: <input>: {detail}",
            )
        ]
    return []


def policy_rules(obj: dict[str, Any], old: dict[str, Any] | None) -> list[dict[str, Any]]:
    spec = obj.get("spec") or {}
    causes: list[dict[str, Any]] = []
    constraints = spec.get("matchConstraints")
    if not constraints:
        causes.append(field_cause("FieldValueRequired", "spec.matchConstraints", "Required value"))
    elif not constraints.get("resourceRules"):
        causes.append(
            field_cause("FieldValueRequired", "spec.matchConstraints.resourceRules", "Required value")
        )
    validations = spec.get("validations") or []
    audits = spec.get("auditAnnotations") or []
    if not validations and not audits:
        causes.append(
            field_cause(
                "FieldValueRequired",
                "spec.validations",
                "Required value: validations or auditAnnotations must contain at least one item",
            )
        )
    for i, validation in enumerate(validations):
        causes += _compile_errors(validation.get("expression"), f"spec.validations[{i}].expression")
        if validation.get("messageExpression"):
            causes += _compile_errors(
                validation["messageExpression"], f"spec.validations[{i}].messageExpression"
            )
    for i, condition in enumerate(spec.get("matchConditions") or []):
        causes += _compile_errors(condition.get("expression"), f"spec.matchConditions[{i}].expression")
    seen: set[str] = set()
    for i, variable in enumerate(spec.get("variables") or []):
        causes += _compile_errors(variable.get("expression"), f"spec.variables[{i}].expression")
        name = variable.get("name", "")
        if name in seen:
            causes.append(
                field_cause("FieldValueDuplicate", f"spec.variables[{i}].name", f'Duplicate value: "{name}"')
            )
        seen.add(name)
    for i, annotation in enumerate(audits):
        causes += _compile_errors(
            annotation.get("valueExpression"), f"spec.auditAnnotations[{i}].valueExpression"
        )
    return causes


def binding_rules(obj: dict[str, Any], old: dict[str, Any] | None) -> list[dict[str, Any]]:
    spec = obj.get("spec") or {}
    causes: list[dict[str, Any]] = []
    if not spec.get("policyName"):
        causes.append(field_cause("FieldValueRequired", "spec.policyName", "Required value"))
    actions = spec.get("validationActions") or []
    if not actions:
        causes.append(field_cause("FieldValueRequired", "spec.validationActions", "Required value"))
    seen: set[str] = set()
    for i, action in enumerate(actions):
        field = f"spec.validationActions[{i}]"
        if action not in ACTIONS:
            supported = ", ".join(f'"{a}"' for a in ACTIONS)
            causes.append(
                field_cause(
                    "FieldValueNotSupported",
                    field,
                    f'Unsupported value: "{action}": supported values: {supported}',
                )
            )
        if action in seen:
            causes.append(field_cause("FieldValueDuplicate", field, f'Duplicate value: "{action}"'))
        seen.add(action)
    if {"Deny", "Warn"} <= seen:
        causes.append(
            field_cause(
                "FieldValueInvalid",
                "spec.validationActions",
                f"Invalid value: {json.dumps(actions)}: must not contain both Deny and Warn (repeating the "
                "same validation failure information in the API response and headers serves no purpose)",
            )
        )
    ref = spec.get("paramRef")
    if ref is not None:
        if bool(ref.get("name")) == (ref.get("selector") is not None):
            causes.append(
                field_cause(
                    "FieldValueRequired",
                    "spec.paramRef",
                    "Required value: one of name or selector must be set",
                )
            )
        if not ref.get("parameterNotFoundAction"):
            causes.append(
                field_cause("FieldValueRequired", "spec.paramRef.parameterNotFoundAction", "Required value")
            )
    return causes
