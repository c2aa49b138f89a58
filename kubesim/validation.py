"""Schema validation (422 Invalid with causes) and unknown-field handling (fieldValidation).

Types are checked like the real server's JSON decoding (a wrong type is a 400 "cannot be handled as"),
required fields and enums like its validation (422 Invalid), and unknown fields are dropped with a
Warning (fieldValidation=Warn, the server default), dropped silently (Ignore) or refused with 400
(Strict), as the real server does.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import jsonschema

from kubesim import schema
from kubesim.errors import ApiError, bad_request, field_cause, invalid
from kubesim.registry import ResourceInfo

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_NAMES = ("namespaces",)


@functools.cache
def _validator(def_name: str) -> jsonschema.protocols.Validator:
    root = {"$ref": f"#/$defs/{def_name}", "$defs": schema.definitions()}
    cls = jsonschema.validators.Draft202012Validator
    return cls(root)


def _path(parts: Any) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + str(p)
    return out


def validate(info: ResourceInfo, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    name = (obj.get("metadata") or {}).get("name", "")
    validator = _validator(schema.definition_name(info))
    causes: list[dict[str, Any]] = []
    for err in sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path))):
        field = _path(err.absolute_path)
        if err.validator == "type" or (err.validator == "oneOf" and not err.absolute_path == []):
            raise bad_request(
                f'{info.kind} in version "{info.version}" cannot be handled as a {info.kind}: json: cannot '
                f"unmarshal {_json_type(err.instance)} into Go struct field {field} of type "
                f"{schema.go_type_name(err.schema)}"
            )
        if err.validator == "required":
            missing = err.message.split("'")[1]
            causes.append(
                field_cause(
                    "FieldValueRequired", f"{field}.{missing}" if field else missing, "Required value"
                )
            )
        elif err.validator == "enum":
            allowed = ", ".join(f'"{v}"' for v in err.validator_value if v is not None)
            causes.append(
                field_cause(
                    "FieldValueNotSupported",
                    field,
                    f'Unsupported value: "{err.instance}": supported values: {allowed}',
                )
            )
        else:
            causes.append(
                field_cause("FieldValueInvalid", field, f"Invalid value: {err.instance!r}: {err.message}")
            )
    causes.extend(_semantic(info, obj))
    if causes:
        raise invalid(info, name, causes)


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _semantic(info: ResourceInfo, obj: dict[str, Any]) -> list[dict[str, Any]]:
    """A few of the real ValidateX functions' rules that clients commonly trip over."""
    causes = []
    meta = obj.get("metadata") or {}
    name = meta.get("name", "")
    pattern = _DNS_LABEL if info.plural in _LABEL_NAMES else _DNS_SUBDOMAIN
    limit = 63 if info.plural in _LABEL_NAMES else 253
    if info.plural != "events" and (not pattern.match(name) or len(name) > limit):
        kind = "RFC 1123 label" if limit == 63 else "RFC 1123 subdomain"
        causes.append(
            field_cause(
                "FieldValueInvalid",
                "metadata.name",
                f'Invalid value: "{name}": a lowercase '
                f"{kind} must consist of lower case alphanumeric characters, '-' or '.', and "
                "must start and end with an alphanumeric character",
            )
        )
    if info.plural == "pods":
        containers = (obj.get("spec") or {}).get("containers") or []
        if not containers:
            causes.append(field_cause("FieldValueRequired", "spec.containers", "Required value"))
        seen: set[str] = set()
        for i, c in enumerate(containers):
            if not isinstance(c, dict):
                continue
            if not c.get("image"):
                causes.append(
                    field_cause("FieldValueRequired", f"spec.containers[{i}].image", "Required value")
                )
            if c.get("name") in seen:
                causes.append(
                    field_cause(
                        "FieldValueDuplicate",
                        f"spec.containers[{i}].name",
                        f'Duplicate value: "{c.get("name")}"',
                    )
                )
            seen.add(c.get("name", ""))
    return causes


def prune_unknown(info: ResourceInfo, obj: dict[str, Any], mode: str) -> list[str]:
    """Drop fields the schema does not declare; return the warnings (Warn), raise 400 (Strict)."""
    if mode not in ("Ignore", "Warn", "Strict"):
        raise bad_request(f"fieldValidation must be one of Ignore, Warn or Strict, got {mode}")
    unknown: list[str] = []
    _prune(obj, schema.for_kind(info), "", unknown)
    if not unknown or mode == "Ignore":
        return []
    if mode == "Strict":
        details = ", ".join(f'unknown field "{u}"' for u in unknown)
        raise ApiError(
            400,
            "BadRequest",
            f'{info.kind} in version "{info.version}" cannot be handled as a '
            f"{info.kind}: strict decoding error: {details}",
        )
    return [f'unknown field "{u}"' for u in unknown]


def _prune(value: Any, sch: schema.Schema, path: str, unknown: list[str]) -> None:
    sch = schema.resolve(sch)
    if isinstance(value, dict):
        if schema.is_open(sch):
            return
        props = sch.get("properties")
        extra = sch.get("additionalProperties")
        for key in list(value):
            child_path = f"{path}.{key}" if path else key
            if props is not None and key in props:
                _prune(value[key], props[key], child_path, unknown)
            elif isinstance(extra, dict):
                _prune(value[key], extra, child_path, unknown)
            elif props is not None:
                unknown.append(child_path)
                del value[key]
    elif isinstance(value, list) and "items" in sch:
        for i, item in enumerate(value):
            _prune(item, sch["items"], f"{path}[{i}]", unknown)
