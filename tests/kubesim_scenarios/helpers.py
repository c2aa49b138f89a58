"""Helpers for the scenario and controller tests: official schemas, the shared reference folder."""

from __future__ import annotations

import functools
import importlib.resources
import json
import os
import re
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA_VERSION = "v1.37.0-local-strict"


def shared_dir() -> Path:
    """The shared material folder: $GPUPLATFORM_SHARED_DIR, else <repo>/../shared."""
    return Path(os.environ.get("GPUPLATFORM_SHARED_DIR") or REPO_ROOT.parent / "shared")


def realworld(name: str) -> Path:
    return shared_dir() / "realworld" / name


@functools.cache
def _definitions() -> Any:
    base = importlib.resources.files("kubernetes_validate").joinpath(
        f"kubernetes-json-schema/{SCHEMA_VERSION}"
    )
    return json.loads(base.joinpath("_definitions.json").read_text())


@functools.cache
def validator(api_version: str, kind: str) -> jsonschema.Draft202012Validator:
    """The same strict schema kubernetes_validate.validate() loads, compiled once per kind.

    kubernetes_validate re-reads the 4 MB definitions file on every call (10 ms each); the suites
    validate thousands of objects, so the validator is built here the same way and cached.
    """
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    base = importlib.resources.files("kubernetes_validate").joinpath(
        f"kubernetes-json-schema/{SCHEMA_VERSION}"
    )
    schema = json.loads(base.joinpath(f"{kind.lower()}-{group_version}.json").read_text())
    registry: Registry = Resource.from_contents(_definitions()) @ Registry()
    registry = Resource.from_contents(schema) @ registry
    return jsonschema.Draft202012Validator(schema, registry=registry)


def schema_errors(obj: dict[str, Any]) -> list[str]:
    check = validator(obj["apiVersion"], obj["kind"])
    return [f"{'.'.join(str(p) for p in e.absolute_path)}: {e.message[:200]}" for e in check.iter_errors(obj)]
