"""The agent's own state on disk: its credential (0600) and the last applied envelope, each written
to a temporary file, flushed and renamed, so a crash leaves the old file or the new one, never half."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def write_atomically(path: Path, data: bytes, mode: int = 0o600) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


class StateDir:
    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True, mode=0o700)

    @property
    def credential_file(self) -> Path:
        return self.root / "credential"

    @property
    def applied_file(self) -> Path:
        return self.root / "applied.json"

    def credential(self) -> str | None:
        try:
            return self.credential_file.read_text().strip() or None
        except FileNotFoundError:
            return None

    def save_credential(self, credential: str, rotate_after: str) -> None:
        write_atomically(self.credential_file, credential.encode())
        write_atomically(self.root / "rotate_after", rotate_after.encode())

    def forget_credential(self) -> None:
        self.credential_file.unlink(missing_ok=True)

    def rotate_after(self) -> str:
        try:
            return (self.root / "rotate_after").read_text().strip()
        except FileNotFoundError:
            return ""

    def applied(self) -> dict[str, Any] | None:
        """{"envelope": ..., "payload": ...} of the last applied bundle, or None."""
        try:
            return json.loads(self.applied_file.read_text())
        except (FileNotFoundError, ValueError):
            return None

    def applied_revision(self) -> int:
        applied = self.applied()
        return int(applied["payload"]["revision"]) if applied else 0

    def applied_hash(self) -> str:
        applied = self.applied()
        return str(applied["payload"]["content_hash"]) if applied else ""

    def save_applied(self, envelope: dict[str, Any], payload: dict[str, Any]) -> None:
        write_atomically(self.applied_file, json.dumps({"envelope": envelope, "payload": payload}).encode())
