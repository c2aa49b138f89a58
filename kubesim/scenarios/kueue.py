"""Kueue's CustomResourceDefinitions, as released (kubesim/crds/kueue-v0.19.2), for a cluster that runs Kueue.

    kubesim.start(kueue=True)  /  python -m kubesim --kueue ...

installs them with the scenario's objects; the `kueue` controller (kubesim.controllers.kueue) then
plays Kueue's part against them.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import yaml

KUEUE_VERSION = "v0.19.2"
CRD_DIR = Path(__file__).resolve().parent.parent / "crds" / f"kueue-{KUEUE_VERSION}"


def kueue_crds() -> list[dict[str, Any]]:
    """The CRDs of every Kueue kind, in file order (fresh dicts on each call)."""
    return [json.loads(text) for text in _crd_json()]


@functools.cache
def _crd_json() -> tuple[str, ...]:
    # The Workload CRD alone is 1.4 MB of YAML: parsed once per process (with libyaml when present),
    # kept as JSON text so every simulator gets its own copy cheaply.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return tuple(
        json.dumps(yaml.load(path.read_text(encoding="utf-8"), Loader=loader))  # noqa: S506 - a safe loader
        for path in sorted(CRD_DIR.glob("*.yaml"))
    )
