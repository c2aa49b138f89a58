"""Validation and defaulting of custom objects against their CRD's structural schema, as the
apiextensions server does (k8s.io/apiextensions-apiserver/pkg/apiserver/validation, kube-openapi).

Messages follow the server's field errors: `spec.x: Invalid value: "string": spec.x in body must be of
type integer: "string"`, `spec.x: Required value`, `spec.x: Unsupported value: "a": supported values:
"b", "c"`, `spec.x: Too long: may not be more than 3 bytes`, `spec.x: Too many: 5: must have at most 4
items`. Type errors stop the CEL rules from running, as they do on the server. An update that leaves a
value unchanged is not judged again below it (validation ratcheting, GA in Kubernetes 1.33).
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import re
from dataclasses import dataclass, field
from typing import Any

from kubesim.custom import rules
from kubesim.errors import field_cause

Schema = dict[str, Any]
_UNSET = rules.UNSET


@dataclass(slots=True)
class _Pending:
    value: Any
    old: Any
    sch: Schema
    path: str


@dataclass(slots=True)
class _Walk:
    causes: list[dict[str, Any]] = field(default_factory=list)
    type_errors: bool = False
    pending: list[_Pending] = field(default_factory=list)


def validate(sch: Schema, obj: dict[str, Any], old: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The field errors of `obj` (and of the transition from `old`) under the structural schema."""
    walk = _Walk()
    _check(obj, sch, "", _UNSET if old is None else old, walk)
    if walk.type_errors:
        return walk.causes
    for p in walk.pending:
        walk.causes.extend(rules.evaluate(p.sch, p.value, p.old, p.path))
    return walk.causes


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def show(value: Any) -> str:
    """A value as the server's field errors print it (strings quoted, numbers bare)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value, separators=(",", ":"))


def _type_ok(value: Any, sch: Schema) -> bool:
    if sch.get("x-kubernetes-int-or-string"):
        return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
    wanted = sch.get("type")
    if not wanted:
        return True
    actual = type_name(value)
    if wanted == "integer" and isinstance(value, float):
        return value.is_integer()
    if wanted == "number":
        return actual in ("integer", "number")
    return actual == wanted


def _invalid(walk: _Walk, path: str, value: Any, message: str) -> None:
    walk.causes.append(
        field_cause("FieldValueInvalid", path, f"Invalid value: {show(value)}: {path} in body {message}")
    )


def _check(value: Any, sch: Schema, path: str, old: Any, walk: _Walk) -> None:
    if "$ref" in sch:
        return  # metadata: ObjectMeta's own rules (kubesim.validation) judge it
    if old is not _UNSET and old == value:
        return  # ratcheting: an unchanged value is not judged again
    if value is None:
        if not sch.get("nullable"):
            walk.type_errors = True
            wanted = "string" if sch.get("x-kubernetes-int-or-string") else sch.get("type", "object")
            walk.causes.append(
                field_cause(
                    "FieldValueTypeInvalid",
                    path,
                    f'Invalid value: "null": {path} in body must be of type {wanted}: "null"',
                )
            )
        return
    if not _type_ok(value, sch):
        walk.type_errors = True
        actual = type_name(value)
        walk.causes.append(
            field_cause(
                "FieldValueTypeInvalid",
                path,
                f'Invalid value: "{actual}": {path} in body must be of type '
                f'{sch.get("type", "string")}: "{actual}"',
            )
        )
        return
    if "enum" in sch and value not in sch["enum"]:
        allowed = ", ".join(show(v) for v in sch["enum"])
        walk.causes.append(
            field_cause(
                "FieldValueNotSupported",
                path,
                f"Unsupported value: {show(value)}: supported values: {allowed}",
            )
        )
    if isinstance(value, dict):
        _check_object(value, sch, path, old if isinstance(old, dict) else _UNSET, walk)
    elif isinstance(value, list):
        _check_array(value, sch, path, old if isinstance(old, list) else _UNSET, walk)
    elif isinstance(value, str):
        _check_string(value, sch, path, walk)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _check_number(value, sch, path, walk)
    if sch.get("x-kubernetes-validations"):
        walk.pending.append(_Pending(value, old, sch, path))


def _check_object(value: dict[str, Any], sch: Schema, path: str, old: Any, walk: _Walk) -> None:
    for name in sch.get("required") or []:
        if name not in value:
            walk.causes.append(field_cause("FieldValueRequired", _child(path, name), "Required value"))
    if "maxProperties" in sch and len(value) > sch["maxProperties"]:
        walk.causes.append(
            field_cause(
                "FieldValueTooMany",
                path,
                f"Too many: {len(value)}: must have at most {sch['maxProperties']} items",
            )
        )
    if "minProperties" in sch and len(value) < sch["minProperties"]:
        _invalid(walk, path, len(value), f"should have at least {sch['minProperties']} properties")
    props = sch.get("properties") or {}
    extra = sch.get("additionalProperties")
    for key, child in value.items():
        child_sch = props.get(key) if key in props else extra if isinstance(extra, dict) else None
        if child_sch is None:
            continue
        child_old = old.get(key, _UNSET) if old is not _UNSET else _UNSET
        _check(child, child_sch, _child(path, key), child_old, walk)


def _check_array(value: list[Any], sch: Schema, path: str, old: Any, walk: _Walk) -> None:
    if "maxItems" in sch and len(value) > sch["maxItems"]:
        walk.causes.append(
            field_cause(
                "FieldValueTooMany",
                path,
                f"Too many: {len(value)}: must have at most {sch['maxItems']} items",
            )
        )
    if "minItems" in sch and len(value) < sch["minItems"]:
        _invalid(walk, path, len(value), f"should have at least {sch['minItems']} items")
    list_type = sch.get("x-kubernetes-list-type", "atomic")
    keys = tuple(sch.get("x-kubernetes-list-map-keys") or ())
    seen: list[Any] = []
    for i, item in enumerate(value):
        ident = {k: item.get(k) for k in keys} if list_type == "map" and isinstance(item, dict) else item
        if list_type in ("set", "map") and ident in seen:
            walk.causes.append(
                field_cause("FieldValueDuplicate", f"{path}[{i}]", f"Duplicate value: {show(ident)}")
            )
        seen.append(ident)
    items = sch.get("items")
    if not isinstance(items, dict):
        return
    for i, item in enumerate(value):
        _check(item, items, f"{path}[{i}]", _correlated(item, old, list_type, keys), walk)


def _correlated(item: Any, old: Any, list_type: str, keys: tuple[str, ...]) -> Any:
    """The old list's item this one continues (map lists by key, sets by value); atomic lists have none,
    as in the server's CEL and ratcheting correlation."""
    if old is _UNSET:
        return _UNSET
    if list_type == "map" and isinstance(item, dict):
        return next(
            (o for o in old if isinstance(o, dict) and all(o.get(k) == item.get(k) for k in keys)), _UNSET
        )
    if list_type == "set" and item in old:
        return item
    return _UNSET


def _check_string(value: str, sch: Schema, path: str, walk: _Walk) -> None:
    if "maxLength" in sch and len(value) > sch["maxLength"]:
        walk.causes.append(
            field_cause("FieldValueTooLong", path, f"Too long: may not be more than {sch['maxLength']} bytes")
        )
    if "minLength" in sch and len(value) < sch["minLength"]:
        _invalid(walk, path, value, f"should be at least {sch['minLength']} chars long")
    if "pattern" in sch and not re.search(sch["pattern"], value):
        _invalid(walk, path, value, f"should match '{sch['pattern']}'")
    fmt = sch.get("format")
    if fmt == "date-time" and not _is_date_time(value):
        _invalid(walk, path, value, f'must be of type date-time: "{value}"')


def _is_date_time(value: str) -> bool:
    try:
        dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return "T" in value or " " in value


def _check_number(value: float, sch: Schema, path: str, walk: _Walk) -> None:
    if "maximum" in sch:
        if sch.get("exclusiveMaximum") and value >= sch["maximum"]:
            _invalid(walk, path, value, f"should be less than {show(sch['maximum'])}")
        elif value > sch["maximum"]:
            _invalid(walk, path, value, f"should be less than or equal to {show(sch['maximum'])}")
    if "minimum" in sch:
        if sch.get("exclusiveMinimum") and value <= sch["minimum"]:
            _invalid(walk, path, value, f"should be greater than {show(sch['minimum'])}")
        elif value < sch["minimum"]:
            _invalid(walk, path, value, f"should be greater than or equal to {show(sch['minimum'])}")
    if sch.get("multipleOf") and value % sch["multipleOf"]:
        _invalid(walk, path, value, f"should be a multiple of {show(sch['multipleOf'])}")


def default(value: Any, sch: Schema) -> None:
    """Fill `default:`s in place, for absent fields and for nulls where the field is not nullable."""
    if "$ref" in sch:
        return
    if isinstance(value, dict):
        props = sch.get("properties") or {}
        for key, child in props.items():
            if "default" in child and (
                key not in value or (value[key] is None and not child.get("nullable"))
            ):
                value[key] = copy.deepcopy(child["default"])
        extra = sch.get("additionalProperties")
        for key, child_value in value.items():
            child_sch = props.get(key) if key in props else extra if isinstance(extra, dict) else None
            if child_sch is not None:
                default(child_value, child_sch)
    elif isinstance(value, list) and isinstance(sch.get("items"), dict):
        for item in value:
            default(item, sch["items"])
