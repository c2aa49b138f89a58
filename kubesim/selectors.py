"""Label and field selectors, parsed once and matched against plain dicts.

Grammar as in k8s.io/apimachinery/pkg/labels (equality `=`, `==`, `!=`; set-based `in`, `notin`,
existence `key` and `!key`) and pkg/fields (`=`, `==`, `!=` on a fixed set of field paths per kind).
Parse errors are 400 BadRequest, with the real server's wording where it matters.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubesim.errors import ApiError, bad_request

_KEY = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!"
    values: frozenset[str]

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
        # "!=" and "notin" match objects without the label, as the real server does.
        return not present or labels[self.key] not in self.values


def _split_top_level(selector: str) -> list[str]:
    """Split on commas that are not inside an `in (...)` value set."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in selector:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


_SET_RE = re.compile(r"^(?P<key>[^\s!=(),]+)\s+(?P<op>in|notin)\s*\((?P<values>[^)]*)\)$")
_EQ_RE = re.compile(r"^(?P<key>[^\s!=(),]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^\s!=(),]*)$")


def _check_key(key: str, selector: str) -> None:
    if not _KEY.match(key) or len(key.rsplit("/", 1)[-1]) > 63:
        raise bad_request(
            f'unable to parse requirement: invalid label key "{key}": name part must consist '
            "of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character"
        )


def _check_value(value: str) -> None:
    if len(value) > 63 or not _VALUE.match(value):
        raise bad_request(
            f'unable to parse requirement: invalid label value: "{value}": at key: must be '
            "no more than 63 characters"
        )


def parse_label_selector(selector: str | None) -> list[Requirement]:
    if not selector:
        return []
    reqs: list[Requirement] = []
    for part in _split_top_level(selector):
        if m := _SET_RE.match(part):
            key, op = m["key"], m["op"]
            values = frozenset(v.strip() for v in m["values"].split(",") if v.strip())
            _check_key(key, selector)
            for v in values:
                _check_value(v)
            reqs.append(Requirement(key, op, values))
        elif m := _EQ_RE.match(part):
            key, op, value = m["key"], m["op"], m["value"]
            _check_key(key, selector)
            _check_value(value)
            reqs.append(Requirement(key, "=" if op == "==" else op, frozenset([value])))
        elif part.startswith("!"):
            _check_key(part[1:].strip(), selector)
            reqs.append(Requirement(part[1:].strip(), "!", frozenset()))
        else:
            _check_key(part, selector)
            reqs.append(Requirement(part, "exists", frozenset()))
    return reqs


# Field paths each kind supports in fieldSelector (its registry's GetAttrs / field label conversion).
_COMMON_FIELDS = ("metadata.name", "metadata.namespace")
SUPPORTED_FIELDS: dict[str, tuple[str, ...]] = {
    "pods": (
        *_COMMON_FIELDS,
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.podIPs",
        "status.nominatedNodeName",
    ),
    "nodes": (*_COMMON_FIELDS, "spec.unschedulable"),
    "namespaces": (*_COMMON_FIELDS, "status.phase"),
    "events": (
        *_COMMON_FIELDS,
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
    "resourceslices": (*_COMMON_FIELDS, "spec.nodeName", "spec.driver"),
}


# Boolean fields the registries' field sets format with strconv.FormatBool: unset reads "false".
_BOOLEAN_FIELDS = frozenset({"spec.unschedulable", "spec.hostNetwork"})


def field_value(obj: dict[str, Any], path: str) -> str:
    """The string a field selector compares against; absent fields compare as "" (booleans "false")."""
    if path == "metadata.namespace":
        return obj.get("metadata", {}).get("namespace", "")
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return "false" if path in _BOOLEAN_FIELDS else ""
        cur = cur.get(part)
        if cur is None:
            return "false" if path in _BOOLEAN_FIELDS else ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    if path == "status.podIPs" and isinstance(cur, list):
        return cur[0].get("ip", "") if cur else ""
    return str(cur)


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    path: str
    equal: bool
    value: str

    def matches(self, obj: dict[str, Any]) -> bool:
        return (field_value(obj, self.path) == self.value) == self.equal


def parse_field_selector(
    selector: str | None, resource: str, kind: str, version: str
) -> list[FieldRequirement]:
    if not selector:
        return []
    allowed = SUPPORTED_FIELDS.get(resource, _COMMON_FIELDS)
    reqs: list[FieldRequirement] = []
    for part in (p.strip() for p in selector.split(",")):
        if not part:
            continue
        for op in ("!=", "==", "="):
            if op in part:
                path, _, value = part.partition(op)
                path, value = path.strip(), value.strip()
                break
        else:
            raise bad_request(f"invalid selector: '{selector}'; can't understand '{part}'")
        if path not in allowed:
            # Same text as the real server's field label conversion failure.
            raise bad_request(f"field label not supported: {path}")
        reqs.append(FieldRequirement(path, op != "!=", value))
    return reqs


Matcher = Callable[[dict[str, Any]], bool]


def compile_matcher(
    label_selector: str | None, field_selector: str | None, resource: str, kind: str = "", version: str = "v1"
) -> Matcher | None:
    """A predicate for both selectors, or None when nothing is selected (the fast path)."""
    labels = parse_label_selector(label_selector)
    fields = parse_field_selector(field_selector, resource, kind, version)
    if not labels and not fields:
        return None

    def match(obj: dict[str, Any]) -> bool:
        if labels:
            obj_labels = obj.get("metadata", {}).get("labels") or {}
            if not all(r.matches(obj_labels) for r in labels):
                return False
        return all(f.matches(obj) for f in fields)

    return match


__all__ = [
    "ApiError",
    "Matcher",
    "compile_matcher",
    "field_value",
    "parse_field_selector",
    "parse_label_selector",
]


def label_selector_matches(selector: dict[str, Any] | None, labels: dict[str, str] | None) -> bool:
    """metav1.LabelSelectorAsSelector(selector).Matches(labels): `{}` matches everything, None nothing.

    matchLabels and matchExpressions (In, NotIn, Exists, DoesNotExist) are ANDed; an unknown operator
    matches nothing (the real conversion errors, and callers treat that as no match).
    """
    if selector is None:
        return False
    labels = labels or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key", ""), expr.get("operator"), expr.get("values") or []
        if op == "In":
            ok = key in labels and labels[key] in values
        elif op == "NotIn":
            ok = key not in labels or labels[key] not in values
        elif op == "Exists":
            ok = key in labels
        elif op == "DoesNotExist":
            ok = key not in labels
        else:
            return False
        if not ok:
            return False
    return True
