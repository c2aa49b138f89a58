"""Access to /work/shared/realworld for tests: files are read directly, never copied into the repo.

GPUPLATFORM_SHARED_DIR overrides the location (default: <repo>/../shared).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("GPUPLATFORM_SHARED_DIR", REPO.parent / "shared"))
REALWORLD = SHARED / "realworld"


def path(name: str) -> Path:
    return REALWORLD / name


def text(name: str) -> str:
    return path(name).read_text(encoding="utf-8")


def json_file(name: str) -> Any:
    return json.loads(text(name))


def yaml_docs(name: str) -> list[Any]:
    return [doc for doc in yaml.safe_load_all(text(name)) if doc is not None]


def k8s_objects(name: str, *, kinds: set[str]) -> list[dict[str, Any]]:
    """Every object of these kinds in a multi-document file, `kind: List` items included."""
    found = []
    for doc in yaml_docs(name):
        if not isinstance(doc, dict):
            continue
        items = doc.get("items", []) if doc.get("kind") == "List" else [doc]
        found.extend(item for item in items if isinstance(item, dict) and item.get("kind") in kinds)
    return found


def describe_sections(describe_text: str) -> dict[str, dict[str, str]]:
    """`kubectl describe node` fragment -> {"Labels": {...}, "Capacity": {...}, "Allocatable": {...}}.

    Lines without a section header (label-only excerpts) go to "Labels". Labels use "k=v",
    resources "k:   v".
    """
    sections: dict[str, dict[str, str]] = {"Labels": {}, "Capacity": {}, "Allocatable": {}}
    current = "Labels"
    for raw in describe_text.splitlines():
        line = raw.strip()
        header = re.match(r"^(Labels|Capacity|Allocatable):\s*(.*)$", line)
        if header:
            current, line = header[1], header[2]
        if not line or line.startswith(("...", "[...]")):
            continue
        if current == "Labels" and "=" in line:
            key, _, value = line.partition("=")
            sections["Labels"][key.strip()] = value.strip()
        elif ":" in line:
            key, _, value = line.rpartition(":")
            sections[current][key.strip()] = value.strip()
    return sections


_LGIP_ROW = re.compile(
    r"^\|\s+(?P<gpu>\d+)\s+MIG (?P<name>\S+)\s+(?P<id>\d+)\s+(?P<free>\d+)/(?P<total>\d+)\s+"
    r"(?P<mem>[\d.]+)\s+(?:No|Yes)\s+(?P<sm>\d+)"
)


def lgip_blocks() -> dict[str, list[dict[str, Any]]]:
    """`nvidia-smi mig -lgip` rows per "### lgip ..." block of nvidia-smi-mig.txt."""
    blocks: dict[str, list[dict[str, Any]]] = {}
    current = None
    for line in text("nvidia-smi-mig.txt").splitlines():
        if line.startswith("### "):
            current = line if line.startswith("### lgip ") else None
            if current:
                blocks[current] = []
            continue
        match = _LGIP_ROW.match(line)
        if current and match:
            blocks[current].append(
                {
                    "name": match["name"],
                    "id": int(match["id"]),
                    "total": int(match["total"]),
                    "mem_gib": float(match["mem"]),
                    "sm": int(match["sm"]),
                }
            )
    return blocks


def lgipp_placements() -> dict[int, tuple[tuple[int, ...], int]]:
    """`nvidia-smi mig -lgipp`: GI profile id -> (starts, size)."""
    found = {}
    for line in text("nvidia-smi-mig.txt").splitlines():
        match = re.match(r"^GPU\s+\d+ Profile ID\s+(\d+) Placements?\s*:\s*\{([\d,]+)\}:(\d+)", line)
        if match:
            found[int(match[1])] = (tuple(int(s) for s in match[2].split(",")), int(match[3]))
    return found


_LGI_ROW = re.compile(
    r"^\|\s+(?P<gpu>\d+)\s+MIG (?P<name>\S+)\s+(?P<id>\d+)\s+(?P<gi>\d+)\s+(?P<start>\d+):(?P<size>\d+)"
)


def lgi_blocks() -> dict[str, list[dict[str, Any]]]:
    """`nvidia-smi mig -lgi` rows (GPU instances with placements) per "### lgi ..." block."""
    blocks: dict[str, list[dict[str, Any]]] = {}
    current = None
    for line in text("nvidia-smi-mig.txt").splitlines():
        if line.startswith("### "):
            current = line if line.startswith("### lgi ") else None
            if current:
                blocks[current] = []
            continue
        match = _LGI_ROW.match(line)
        if current and match:
            blocks[current].append(
                {
                    "gpu": int(match["gpu"]),
                    "name": match["name"],
                    "id": int(match["id"]),
                    "start": int(match["start"]),
                    "size": int(match["size"]),
                }
            )
    return blocks


def yaml_docs_from_text(source: str) -> Any:
    return yaml.safe_load(source)
