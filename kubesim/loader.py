"""Loading Kubernetes objects from files (the CLI's --objects DIR).

Every *.yaml, *.yml and *.json file under the directory; multi-document YAML; `List` kinds (and any
*List with items) unwrapped. Documents that are not Kubernetes objects (no apiVersion/kind) and kinds
kubesim does not serve are skipped with a logged note, so a folder of mixed real-world material loads.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kubesim import registry

log = logging.getLogger("kubesim")

_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass
class Loaded:
    objects: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _documents(path: Path) -> Iterator[Any]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        yield json.loads(text)
    else:
        yield from yaml.safe_load_all(text)


def crd_kinds(crds: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """(apiVersion, kind) of every served version of these CustomResourceDefinitions."""
    spec = [c.get("spec") or {} for c in crds]
    return {
        (f"{s.get('group')}/{v.get('name')}", str((s.get("names") or {}).get("kind")))
        for s in spec
        for v in s.get("versions") or []
        if v.get("served", True)
    }


def _unwrap(doc: Any, where: str, out: Loaded, also: set[tuple[str, str]]) -> None:
    if not isinstance(doc, dict):
        return
    kind, api_version = doc.get("kind"), doc.get("apiVersion")
    if not isinstance(kind, str) or not isinstance(api_version, str):
        out.notes.append(f"{where}: skipped a document without apiVersion/kind")
        return
    if kind.endswith("List") and isinstance(doc.get("items"), list):
        for i, item in enumerate(doc["items"]):
            _unwrap(item, f"{where} items[{i}]", out, also)
        return
    if registry.for_kind(api_version, kind) is None and (api_version, kind) not in also:
        out.notes.append(f"{where}: skipped {api_version} {kind}, which kubesim does not serve")
        return
    meta = doc.get("metadata")
    if not isinstance(meta, dict) or not (meta.get("name") or meta.get("generateName")):
        out.notes.append(f"{where}: skipped {kind} without metadata.name")
        return
    out.objects.append(doc)


def load_objects(directory: str | Path, *, also: set[tuple[str, str]] | None = None) -> Loaded:
    """``also``: (apiVersion, kind) served by CRDs installed in the same start (``crd_kinds``)."""
    root = Path(directory)
    files = (
        [root]
        if root.is_file()
        else sorted(p for p in root.rglob("*") if p.suffix in _SUFFIXES and p.is_file())
    )
    out = Loaded()
    for path in files:
        try:
            docs = list(_documents(path))
        except (yaml.YAMLError, ValueError, UnicodeDecodeError) as exc:
            out.notes.append(f"{path}: skipped, not parseable: {exc}")
            continue
        for i, doc in enumerate(docs):
            _unwrap(doc, f"{path.name}#{i}", out, also or set())
    for note in out.notes:
        log.info("kubesim: %s", note)
    return out
