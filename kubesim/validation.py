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
from kubesim.admission import validation as admission_validation
from kubesim.custom import definitions as crd_definitions
from kubesim.custom import structural
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
    if info.is_custom:
        found = structural.validate(schema.for_kind(info), obj, old)
        found.extend(_semantic(info, obj))
        found.extend(_metadata(obj))
        if found:
            raise invalid(info, name, found)
        return
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
    causes.extend(_metadata(obj))
    causes.extend(_RULES.get(info.plural, _no_rules)(obj, old))
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


_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUALIFIED_MESSAGE = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation "
    "is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_NATIVE_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage", "storage", "pods"})


def _no_rules(obj: dict[str, Any], old: dict[str, Any] | None) -> list[dict[str, Any]]:
    return []


def qualified_name_errors(key: str) -> list[str]:
    """apimachinery's IsQualifiedName: an optional DNS-subdomain prefix, "/", a name of 1-63 characters."""
    prefix, slash, name = key.rpartition("/")
    errors = []
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        errors.append("prefix part must be a lowercase RFC 1123 subdomain")
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    elif not _QUALIFIED_NAME.match(name):
        errors.append(_QUALIFIED_MESSAGE)
    return errors


def _metadata(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """ValidateObjectMeta's label and annotation key rules (apimachinery/pkg/api/validation)."""
    causes = []
    meta = obj.get("metadata") or {}
    for key, value in (meta.get("labels") or {}).items():
        for message in qualified_name_errors(str(key)):
            causes.append(
                field_cause("FieldValueInvalid", "metadata.labels", f'Invalid value: "{key}": {message}')
            )
        text = str(value)
        if len(text) > 63:
            causes.append(
                field_cause(
                    "FieldValueInvalid",
                    "metadata.labels",
                    f'Invalid value: "{text}": must be no more than 63 characters',
                )
            )
        elif not _LABEL_VALUE.match(text):
            causes.append(
                field_cause(
                    "FieldValueInvalid",
                    "metadata.labels",
                    f'Invalid value: "{text}": a valid label must be an empty string or consist of '
                    "alphanumeric characters, '-', '_' or '.', and must start and end with an "
                    "alphanumeric character",
                )
            )
    for key in meta.get("annotations") or {}:
        for message in qualified_name_errors(str(key).lower()):
            causes.append(
                field_cause("FieldValueInvalid", "metadata.annotations", f'Invalid value: "{key}": {message}')
            )
    return causes


def _is_extended(name: str) -> bool:
    # IsExtendedResourceName: not native (no kubernetes.io/ prefix, not cpu/memory/...), not hugepages.
    if name in _NATIVE_RESOURCES or name.startswith("hugepages-") or name.startswith("requests."):
        return False
    domain = name.split("/", 1)[0] if "/" in name else ""
    return bool(domain) and domain != "kubernetes.io" and not domain.endswith(".kubernetes.io")


def _pod_rules(obj: dict[str, Any], old: dict[str, Any] | None) -> list[dict[str, Any]]:
    """ValidateResourceRequirements: extended resources cannot be overcommitted (request == limit)."""
    causes = []
    spec = obj.get("spec") or {}
    for group in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(group) or []):
            if not isinstance(container, dict):
                continue
            resources = container.get("resources") or {}
            requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
            where = f"spec.{group}[{i}].resources"
            for name, quantity in requests.items():
                if not _is_extended(name):
                    continue
                if name not in limits:
                    causes.append(
                        field_cause(
                            "FieldValueRequired",
                            f"{where}.limits",
                            "Limit must be set for non overcommitable resources",
                        )
                    )
                elif str(limits[name]) != str(quantity):
                    causes.append(
                        field_cause(
                            "FieldValueInvalid",
                            f"{where}.requests[{name}]",
                            f'Invalid value: "{quantity}": must be equal to {name} limit of {limits[name]}',
                        )
                    )
    return causes


def _claim_rules(obj: dict[str, Any], old: dict[str, Any] | None) -> list[dict[str, Any]]:
    """ValidateResourceClaimUpdate: the spec is immutable (resource/validation.go)."""
    if old is not None and obj.get("spec") != old.get("spec"):
        return [field_cause("FieldValueInvalid", "spec", "Invalid value: field is immutable")]
    return []


_ATTRIBUTE_TYPES = ("int", "bool", "string", "version")
_NODE_SELECTION = ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")


def _slice_rules(obj: dict[str, Any], old: dict[str, Any] | None) -> list[dict[str, Any]]:
    """ValidateResourceSlice (pkg/apis/resource/validation): driver a DNS subdomain, device names DNS
    labels, exactly one node selection, each attribute exactly one typed value."""
    causes = []
    spec = obj.get("spec") or {}
    driver = str(spec.get("driver") or "")
    if driver and (len(driver) > 63 or not _DNS_SUBDOMAIN.match(driver)):
        causes.append(
            field_cause(
                "FieldValueInvalid",
                "spec.driver",
                f'Invalid value: "{driver}": a lowercase RFC 1123 subdomain must consist of lower case '
                "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            )
        )
    chosen = [k for k in _NODE_SELECTION if spec.get(k) not in (None, False, "")]
    if len(chosen) != 1:
        message = (
            f"Required value: exactly one of `{'`, `'.join(_NODE_SELECTION)}` is required"
            if not chosen
            else f"Invalid value: {{{', '.join(f'`{c}`' for c in chosen)}}}: exactly one of "
            f"`{'`, `'.join(_NODE_SELECTION)}` is required, but multiple fields are set"
        )
        causes.append(
            field_cause("FieldValueRequired" if not chosen else "FieldValueInvalid", "spec", message)
        )
    for i, device in enumerate(spec.get("devices") or []):
        if not isinstance(device, dict):
            continue
        name = str(device.get("name") or "")
        if not _DNS_LABEL.match(name) or len(name) > 63:
            causes.append(
                field_cause(
                    "FieldValueInvalid",
                    f"spec.devices[{i}].name",
                    f'Invalid value: "{name}": a lowercase RFC 1123 label must consist of lower case '
                    "alphanumeric characters or '-', and must start and end with an alphanumeric character",
                )
            )
        for t, taint in enumerate(device.get("taints") or []):
            causes.extend(_taint_cause(taint, f"spec.devices[{i}].taints[{t}]"))
        for key, attribute in (device.get("attributes") or {}).items():
            if not isinstance(attribute, dict):
                continue
            typed = [t for t in _ATTRIBUTE_TYPES if attribute.get(t) is not None]
            if len(typed) != 1:
                causes.append(
                    field_cause(
                        "FieldValueRequired" if not typed else "FieldValueInvalid",
                        f"spec.devices[{i}].attributes[{key}]",
                        "Required value: exactly one value must be specified"
                        if not typed
                        else f"Invalid value: {{{', '.join(typed)}}}: exactly one value must be specified",
                    )
                )
    return causes


_TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")


def _taint_cause(taint: Any, path: str) -> list[dict[str, Any]]:
    """ValidateDeviceTaint: a key, and an effect the server supports (a newer one would be
    accepted by a newer server only, which is why readers treat unknown effects like None)."""
    if not isinstance(taint, dict):
        return []
    causes = []
    if not taint.get("key"):
        causes.append(field_cause("FieldValueRequired", f"{path}.key", "Required value"))
    effect = taint.get("effect")
    if effect not in _TAINT_EFFECTS:
        supported = ", ".join(f'"{e}"' for e in _TAINT_EFFECTS)
        causes.append(
            field_cause(
                "FieldValueNotSupported" if effect else "FieldValueRequired",
                f"{path}.effect",
                f'Unsupported value: "{effect}": supported values: {supported}'
                if effect
                else "Required value",
            )
        )
    return causes


def _devicetaintrule_rules(obj: dict[str, Any], old: dict[str, Any] | None) -> list[dict[str, Any]]:
    return _taint_cause((obj.get("spec") or {}).get("taint"), "spec.taint")


def _pdb_rules(obj: dict[str, Any], old: dict[str, Any] | None) -> list[dict[str, Any]]:
    """ValidatePodDisruptionBudgetSpec: at most one of minAvailable and maxUnavailable."""
    spec = obj.get("spec") or {}
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        message = "minAvailable and maxUnavailable cannot be both set"
        return [field_cause("FieldValueInvalid", "spec", message)]
    return []


def _job_rules(obj: dict[str, Any], old: dict[str, Any] | None) -> list[dict[str, Any]]:
    """ValidateJob's rules a writer trips over: the pod template restarts OnFailure or Never and runs
    containers with images."""
    causes = []
    pod_spec = (((obj.get("spec") or {}).get("template") or {}).get("spec")) or {}
    policy = pod_spec.get("restartPolicy")
    if policy not in ("OnFailure", "Never"):
        message = (
            f'Unsupported value: "{policy}": supported values: "OnFailure", "Never"'
            if policy
            else 'Required value: valid values: "OnFailure", "Never"'
        )
        reason = "FieldValueNotSupported" if policy else "FieldValueRequired"
        causes.append(field_cause(reason, "spec.template.spec.restartPolicy", message))
    containers = pod_spec.get("containers") or []
    if not containers:
        causes.append(field_cause("FieldValueRequired", "spec.template.spec.containers", "Required value"))
    for i, container in enumerate(containers):
        if isinstance(container, dict) and not container.get("image"):
            causes.append(
                field_cause(
                    "FieldValueRequired", f"spec.template.spec.containers[{i}].image", "Required value"
                )
            )
    if old is not None:
        # The pod template is immutable except for a suspended job's scheduling directives (what Kueue
        # writes when it admits: node selector, tolerations, labels, annotations).
        before = ((old.get("spec") or {}).get("template")) or {}
        after = ((obj.get("spec") or {}).get("template")) or {}
        if _without_scheduling(before) != _without_scheduling(after) or (
            before != after and not (old.get("spec") or {}).get("suspend")
        ):
            causes.append(
                field_cause("FieldValueInvalid", "spec.template", "Invalid value: field is immutable")
            )
    return causes


def _without_scheduling(template: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in template.items() if k != "metadata"}
    spec = {
        k: v
        for k, v in (out.get("spec") or {}).items()
        if k not in ("nodeSelector", "tolerations", "schedulingGates")
    }
    out["spec"] = spec
    return out


_RULES = {
    "pods": _pod_rules,
    "resourceclaims": _claim_rules,
    "resourceslices": _slice_rules,
    "devicetaintrules": _devicetaintrule_rules,
    "poddisruptionbudgets": _pdb_rules,
    "validatingadmissionpolicies": admission_validation.policy_rules,
    "validatingadmissionpolicybindings": admission_validation.binding_rules,
    "customresourcedefinitions": crd_definitions.crd_rules,
    "jobs": _job_rules,
}


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
