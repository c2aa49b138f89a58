"""The three patch formats of PATCH requests (server-side apply is in `managed_fields`).

- JSON merge patch (RFC 7386): maps merge, null deletes, lists are replaced.
- Strategic merge patch: like merge patch, but lists whose schema has a patch merge key merge item by
  item (containers by name, conditions by type, ...), primitive lists with patch strategy "merge" merge
  as sets (finalizers), and the directives `$patch` (replace/delete/merge),
  `$deleteFromPrimitiveList/<field>`, `$setElementOrder/<field>` and `$retainKeys` are honoured.
- JSON patch (RFC 6902): add, remove, replace, move, copy, test.
"""

from __future__ import annotations

import copy
from typing import Any

from kubesim import schema
from kubesim.errors import ApiError, bad_request


def json_merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = json_merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(
    target: dict[str, Any], patch: dict[str, Any], sch: schema.Schema
) -> dict[str, Any]:
    if not isinstance(patch, dict):
        raise bad_request("strategic merge patch must be a JSON object")
    return _smp_map(target, patch, sch)


def _smp_map(target: Any, patch: dict[str, Any], sch: schema.Schema) -> dict[str, Any]:
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return {}
    result = dict(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(result.get(field), list):
                result[field] = [v for v in result[field] if v not in (value or [])]
            continue
        child_sch = schema.property_schema(sch, key) or {}
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and not schema.is_open(child_sch):
            result[key] = _smp_map(result.get(key), value, child_sch)
            if value.get("$patch") == "delete":
                result.pop(key, None)
        elif isinstance(value, list):
            result[key] = _smp_list(result.get(key), value, child_sch)
        else:
            result[key] = copy.deepcopy(value)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _smp_list(target: Any, patch: list[Any], sch: schema.Schema) -> list[Any]:
    current = list(target) if isinstance(target, list) else []
    rules = schema.list_rules(schema.resolve(sch))
    if "merge" not in rules.patch_strategy.split(","):
        return [p for p in copy.deepcopy(patch) if not (isinstance(p, dict) and "$patch" in p)]
    if not rules.merge_key:
        # Primitive list merged as a set (metadata.finalizers): union, order of the original kept.
        return current + [v for v in patch if v not in current]
    key = rules.merge_key
    item_sch = schema.item_schema(sch)
    out = [copy.deepcopy(i) for i in current]
    for item in patch:
        if not isinstance(item, dict):
            raise bad_request(f'strategic merge patch: list item {item!r} must be an object with "{key}"')
        if item.get("$patch") == "replace":
            return [copy.deepcopy({k: v for k, v in item.items() if k != "$patch"})]
        idx = next(
            (i for i, cur in enumerate(out) if isinstance(cur, dict) and cur.get(key) == item.get(key)), None
        )
        if item.get("$patch") == "delete":
            if idx is not None:
                out.pop(idx)
            continue
        if idx is None:
            out.append(_smp_map({}, item, item_sch))
        else:
            out[idx] = _smp_map(out[idx], item, item_sch)
    return out


# ------------------------------------------------------------------------------------ JSON patch


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise _patch_error(
            f'the server rejected our request due to an error in our request: invalid path "{path}"'
        )
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _patch_error(message: str) -> ApiError:
    # A failed JSON patch operation is answered 422 with the jsonpatch library's message.
    return ApiError(422, "Invalid", message)


def _walk(doc: Any, parts: list[str]) -> Any:
    for part in parts:
        if isinstance(doc, dict):
            if part not in doc:
                raise _patch_error(f"jsonpatch: doc is missing path: /{'/'.join(parts)}")
            doc = doc[part]
        elif isinstance(doc, list):
            try:
                doc = doc[int(part)]
            except (ValueError, IndexError) as exc:
                raise _patch_error(f"jsonpatch: doc is missing path: /{'/'.join(parts)}") from exc
        else:
            raise _patch_error(f"jsonpatch: doc is missing path: /{'/'.join(parts)}")
    return doc


def _add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        else:
            try:
                idx = int(last)
            except ValueError as exc:
                raise _patch_error(f"jsonpatch add operation: invalid index {last}") from exc
            if idx < 0 or idx > len(parent):
                raise _patch_error(f"add operation does not apply: doc is missing path: /{'/'.join(parts)}")
            parent.insert(idx, value)
    else:
        raise _patch_error(f"add operation does not apply: doc is missing path: /{'/'.join(parts)}")
    return doc


def _remove(doc: Any, parts: list[str]) -> Any:
    if not parts:
        raise _patch_error("jsonpatch remove operation does not apply to the root")
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    try:
        value = parent.pop(last) if isinstance(parent, dict) else parent.pop(int(last))
    except (KeyError, ValueError, IndexError, AttributeError) as exc:
        raise _patch_error(
            f'remove operation does not apply: doc is missing path: "/{"/".join(parts)}"'
        ) from exc
    return value


def json_patch(doc: Any, operations: Any) -> Any:
    if not isinstance(operations, list):
        raise bad_request("the body of a JSON patch must be a list of operations")
    doc = copy.deepcopy(doc)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op:
            raise bad_request(f"invalid JSON patch operation: {op!r}")
        kind, parts = op["op"], _pointer(op.get("path", ""))
        if kind == "add":
            doc = _add(doc, parts, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            _remove(doc, parts)
        elif kind == "replace":
            _walk(doc, parts)  # must exist
            if parts:
                _remove(doc, parts)
            doc = _add(doc, parts, copy.deepcopy(op.get("value")))
        elif kind in ("move", "copy"):
            source = _pointer(op.get("from", ""))
            value = _remove(doc, source) if kind == "move" else copy.deepcopy(_walk(doc, source))
            doc = _add(doc, parts, value)
        elif kind == "test":
            if _walk(doc, parts) != op.get("value"):
                raise _patch_error(f"testing value /{'/'.join(parts)} failed: test failed")
        else:
            raise bad_request(f"Unexpected kind: {kind}")
    return doc
