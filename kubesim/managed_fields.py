"""managedFields (FieldsV1) and server-side apply, driven by the OpenAPI list rules.

A field set is a dict from path tuples to the value at that path. Path elements use the FieldsV1
spelling: "f:name" for a field, 'k:{"name":"c"}' for an item of a map-typed list, "v:<json>" for an item
of a set-typed list, and "." for "this list item itself". Atomic lists, scalars and empty maps are
leaves. Apply (structured-merge-diff's Updater.Apply, simplified):
- conflicts: fields in the applied config that another manager owns and whose value would change;
  409 with one cause per field unless force, which takes them over. A manager is its name, operation
  and subresource: the Update entry of the applier's own name is another manager;
- fields this manager applied before and no longer applies are removed unless someone else owns them;
- the applied config is merged into the live object, list items matched by their keys.
Update operations (create, PUT, patches) take ownership of the fields they change.
"""

from __future__ import annotations

import json
from typing import Any

from kubesim import schema
from kubesim.errors import ApiError
from kubesim.registry import ResourceInfo

Path = tuple[str, ...]
FieldSet = dict[Path, Any]

# Stripped from every field set (managedfields.NewStripMetaManager).
_STRIP_META = (
    "name",
    "namespace",
    "creationTimestamp",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "managedFields",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)


def _key_element(item: dict[str, Any], keys: tuple[str, ...]) -> str:
    return "k:" + json.dumps({k: item.get(k) for k in sorted(keys)}, separators=(",", ":"))


def _list_keys(sch: schema.Schema) -> tuple[str, ...] | None:
    """The keys of a map-typed list, "" for set-typed, None for atomic."""
    rules = schema.list_rules(sch)
    if rules.list_type == "map":
        return rules.map_keys
    if rules.list_type == "set":
        return ()
    if rules.merge_key and not rules.list_type:
        return (rules.merge_key,)
    return None


def flatten(value: Any, sch: schema.Schema, path: Path = (), out: FieldSet | None = None) -> FieldSet:
    out = {} if out is None else out
    sch = schema.resolve(sch)
    atomic = sch.get("x-kubernetes-map-type") == "atomic"  # a struct or map owned whole
    if isinstance(value, dict) and value and not schema.is_open(sch) and not atomic:
        for key, child in value.items():
            child_sch = schema.property_schema(sch, key)
            if child_sch is None:
                continue
            flatten(child, child_sch, (*path, f"f:{key}"), out)
        return out
    if isinstance(value, list) and value:
        keys = _list_keys(sch)
        if keys is not None:
            item_sch = schema.item_schema(sch)
            for item in value:
                if keys and isinstance(item, dict):
                    element = (*path, _key_element(item, keys))
                    out[(*element, ".")] = True
                    flatten(item, item_sch, element, out)
                elif not keys:
                    out[(*path, "v:" + json.dumps(item, separators=(",", ":")))] = item
            return out
    out[path] = value
    return out


def object_fields(info: ResourceInfo, obj: dict[str, Any], *, status: bool | None) -> FieldSet:
    """Field set of an object; status=True: only status, False: all but status, None: everything."""
    stripped = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    if "metadata" in stripped:
        stripped["metadata"] = {k: v for k, v in stripped["metadata"].items() if k not in _STRIP_META}
        if not stripped["metadata"]:
            del stripped["metadata"]
    if status is True:
        stripped = {"status": stripped["status"]} if "status" in stripped else {}
    elif status is False and info.has_status:
        stripped.pop("status", None)
    return flatten(stripped, schema.for_kind(info))


def to_fields_v1(fields: FieldSet) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for path in sorted(fields):
        node = root
        for element in path:
            node = node.setdefault(element, {})
    return root


def from_fields_v1(trie: dict[str, Any], path: Path = (), out: set[Path] | None = None) -> set[Path]:
    out = set() if out is None else out
    for element, child in trie.items():
        if child:
            from_fields_v1(child, (*path, element), out)
        else:
            out.add((*path, element))
    return out


def _entries(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [dict(e) for e in obj.get("metadata", {}).get("managedFields") or []]


def _entry_paths(entry: dict[str, Any]) -> set[Path]:
    return from_fields_v1(entry.get("fieldsV1") or {})


def _entry(
    manager: str, operation: str, api_version: str, now: str, paths: set[Path], sub: str | None
) -> dict[str, Any]:
    entry = {
        "manager": manager,
        "operation": operation,
        "apiVersion": api_version,
        "time": now,
        "fieldsType": "FieldsV1",
        "fieldsV1": to_fields_v1(dict.fromkeys(paths)),
    }
    if sub:
        entry["subresource"] = sub
    return entry


def _same_manager(entry: dict[str, Any], manager: str, operation: str, sub: str | None) -> bool:
    return (
        entry.get("manager") == manager
        and entry.get("operation") == operation
        and entry.get("subresource") == sub
    )


def record_update(
    info: ResourceInfo,
    old: dict[str, Any] | None,
    new: dict[str, Any],
    *,
    manager: str,
    api_version: str,
    now: str,
    subresource: str | None,
) -> None:
    """An Update operation takes the fields it changed from every other manager."""
    status_only = True if subresource == "status" else (False if info.has_status else None)
    new_fields = object_fields(info, new, status=status_only)
    old_fields = object_fields(info, old, status=status_only) if old else {}
    changed = {p for p, v in new_fields.items() if p not in old_fields or old_fields[p] != v}
    removed = set(old_fields) - set(new_fields)
    entries = _entries(old) if old else []
    mine: set[Path] = set()
    kept = []
    for entry in entries:
        paths = _entry_paths(entry)
        if _same_manager(entry, manager, "Update", subresource):
            mine = paths
            continue
        remaining = paths - changed - removed
        if remaining != paths:
            entry["fieldsV1"] = to_fields_v1(dict.fromkeys(remaining))
        if remaining:
            kept.append(entry)
    mine = (mine - removed) | changed
    if mine:
        previous = next((e for e in entries if _same_manager(e, manager, "Update", subresource)), None)
        if previous is not None and _entry_paths(previous) == mine:
            kept.append(previous)  # nothing new owned: keep its timestamp, so no-op writes stay no-ops
        else:
            kept.append(_entry(manager, "Update", api_version, now, mine, subresource))
    if kept:
        new["metadata"]["managedFields"] = kept
    else:
        new["metadata"].pop("managedFields", None)


def same_ignoring_time(a: list[dict[str, Any]] | None, b: list[dict[str, Any]] | None) -> bool:
    def strip(entries: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
        return [{k: v for k, v in e.items() if k != "time"} for e in entries or []]

    return strip(a) == strip(b)


def format_path(path: Path) -> str:
    out = ""
    for element in path:
        kind, _, rest = element.partition(":")
        if element == ".":
            continue
        if kind == "f":
            out += f".{rest}"
        elif kind == "k":
            keys = json.loads(rest)
            out += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in keys.items()) + "]"
        elif kind == "v":
            out += f"[={rest}]"
    return out


def apply(
    info: ResourceInfo,
    live: dict[str, Any] | None,
    applied: dict[str, Any],
    *,
    manager: str,
    force: bool,
    api_version: str,
    now: str,
    subresource: str | None,
) -> dict[str, Any]:
    """The object after applying `applied` as `manager`, with its managedFields; raises 409 on conflicts."""
    status_only = True if subresource == "status" else (False if info.has_status else None)
    applied_fields = object_fields(info, applied, status=status_only)
    applied_paths = set(applied_fields)
    if live is None:
        merged = json.loads(json.dumps(applied))
        merged.setdefault("metadata", {})["managedFields"] = [
            _entry(manager, "Apply", api_version, now, applied_paths, subresource)
        ]
        return merged
    live_fields = object_fields(info, live, status=status_only)
    entries = _entries(live)
    conflicts: dict[tuple[str, str, str, str | None], list[Path]] = {}
    previous: set[Path] = set()
    others: list[tuple[dict[str, Any], set[Path]]] = []
    for entry in entries:
        paths = _entry_paths(entry)
        if _same_manager(entry, manager, "Apply", subresource):
            previous = paths
            continue
        others.append((entry, paths))
        # No exception for an Update entry of the same name: the manager identifier includes the
        # operation, so X's Update and X's Apply are two owners and conflict like any others
        # (kubernetes/kubernetes#107417; structured-merge-diff's Updater.Apply).
        for path in applied_paths & paths:
            if path in live_fields and live_fields[path] != applied_fields[path] and path[-1] != ".":
                # The manager identifier of fieldmanager.BuildManagerIdentifier: appliers have no
                # apiVersion in it, so the same manager's Apply and Update entries are two owners.
                operation = entry.get("operation", "Update")
                version = entry.get("apiVersion", "") if operation == "Update" else ""
                who = (entry["manager"], operation, version, entry.get("subresource"))
                conflicts.setdefault(who, []).append(path)
    if conflicts and not force:
        raise _conflict_error(conflicts)
    taken = {p for paths in conflicts.values() for p in paths}
    owned_by_others = set().union(*(p for _, p in others)) if others else set()
    dropped = previous - applied_paths - owned_by_others
    merged = json.loads(json.dumps(live))
    for path in sorted(dropped, key=len, reverse=True):
        _remove_path(merged, path)
    _merge(merged, applied, schema.for_kind(info))
    kept = []
    for entry, paths in others:
        remaining = paths - taken
        if remaining != paths:
            entry["fieldsV1"] = to_fields_v1(dict.fromkeys(remaining))
        if remaining:
            kept.append(entry)
    old_entry = next((e for e in entries if _same_manager(e, manager, "Apply", subresource)), None)
    if old_entry is not None and previous == applied_paths and not taken:
        kept.append(old_entry)
    else:
        kept.append(_entry(manager, "Apply", api_version, now, applied_paths, subresource))
    merged["metadata"]["managedFields"] = kept
    return merged


def _conflict_error(conflicts: dict[tuple[str, str, str, str | None], list[Path]]) -> ApiError:
    """The Status of fieldmanager's NewConflictError: managers printed as printManager does ("using
    <apiVersion>" for Update entries only), grouped and sorted by manager identifier."""
    causes, groups = [], []
    fields = {who: sorted({format_path(p) for p in paths}) for who, paths in conflicts.items()}
    total = sum(len(f) for f in fields.values())
    for (manager, operation, api_version, sub), formatted in sorted(fields.items(), key=lambda c: c[0][:2]):
        who = f'"{manager}"' + (f' with subresource "{sub}"' if sub else "")
        if operation == "Update":
            who += f" using {api_version}"
        for field in formatted:
            causes.append(
                {"reason": "FieldManagerConflict", "message": f"conflict with {who}", "field": field}
            )
        if total == 1:
            groups.append(f"conflict with {who}: {formatted[0]}")
        else:
            groups.append(f"conflicts with {who}:\n" + "\n".join(f"- {f}" for f in formatted))
    noun = "conflict" if total == 1 else "conflicts"
    return ApiError(409, "Conflict", f"Apply failed with {total} {noun}: " + "\n".join(groups), causes)


def _remove_path(obj: Any, path: Path) -> None:
    parent: Any = obj
    for element in path[:-1]:
        parent = _child(parent, element)
        if parent is None:
            return
    last = path[-1]
    if last == ".":
        _remove_path(obj, path[:-1])
        return
    kind, _, rest = last.partition(":")
    if kind == "f" and isinstance(parent, dict):
        parent.pop(rest, None)
    elif isinstance(parent, list):
        match = _child(parent, last)
        if match is not None:
            parent.remove(match)


def _child(node: Any, element: str) -> Any:
    kind, _, rest = element.partition(":")
    if kind == "f":
        return node.get(rest) if isinstance(node, dict) else None
    if not isinstance(node, list):
        return None
    if kind == "k":
        keys = json.loads(rest)
        return next(
            (i for i in node if isinstance(i, dict) and all(i.get(k) == v for k, v in keys.items())), None
        )
    if kind == "v":
        value = json.loads(rest)
        return value if value in node else None
    return None


def _merge(live: dict[str, Any], applied: dict[str, Any], sch: schema.Schema) -> None:
    for key, value in applied.items():
        child_sch = schema.property_schema(sch, key) or {}
        if value is None:
            live.pop(key, None)
        elif (
            isinstance(value, dict)
            and isinstance(live.get(key), dict)
            and not schema.is_open(child_sch)
            and schema.resolve(child_sch).get("x-kubernetes-map-type") != "atomic"
        ):
            _merge(live[key], value, child_sch)
        elif isinstance(value, list) and isinstance(live.get(key), list):
            live[key] = _merge_list(live[key], value, schema.resolve(child_sch))
        else:
            live[key] = json.loads(json.dumps(value))


def _merge_list(live: list[Any], applied: list[Any], sch: schema.Schema) -> list[Any]:
    keys = _list_keys(sch)
    if keys is None:
        return json.loads(json.dumps(applied))
    if not keys:
        return live + [v for v in applied if v not in live]
    item_sch = schema.item_schema(sch)
    out = json.loads(json.dumps(live))
    for item in applied:
        if not isinstance(item, dict):
            continue
        match = next(
            (i for i in out if isinstance(i, dict) and all(i.get(k) == item.get(k) for k in keys)), None
        )
        if match is None:
            out.append(json.loads(json.dumps(item)))
        else:
            _merge(match, item, item_sch)
    return out
