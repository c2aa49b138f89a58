"""A small CRD exercising the structural-schema features kubesim serves, and Kueue's CRDs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

KUEUE_CRDS = Path(__file__).resolve().parents[2] / "kubesim" / "crds" / "kueue-v0.19.2"

WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "x-kubernetes-validations": [
                {
                    "rule": "self.size <= self.maxSize",
                    "message": "size must not exceed maxSize",
                    "fieldPath": ".size",
                },
                {"rule": "!has(oldSelf.pool) || self.pool == oldSelf.pool", "message": "pool is immutable"},
            ],
            "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 100},
                "maxSize": {"type": "integer", "default": 10},
                "mode": {"type": "string", "enum": ["Fast", "Slow"], "default": "Fast"},
                "pool": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8},
                "quota": {"x-kubernetes-int-or-string": True},
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                    },
                },
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            },
        },
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    },
}


def widget_crd(*, scope: str = "Namespaced", status: bool = True) -> dict[str, Any]:
    version: dict[str, Any] = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": WIDGET_SCHEMA},
    }
    if status:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": scope,
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wg"]},
            "versions": [version],
        },
    }


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


def kueue_crds() -> list[dict[str, Any]]:
    return [yaml.safe_load(p.read_text()) for p in sorted(KUEUE_CRDS.glob("*.yaml"))]
