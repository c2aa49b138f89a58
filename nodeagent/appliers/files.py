"""The ``files`` applier: a bundle's files land in ``<files_dir>/r<revision>/``, and the symlink
``<files_dir>/current`` is swapped to it in one rename, so readers (and hooks) see the whole old set
or the whole new one. Then the hooks of the LOCAL configuration run (``nvidia-mig-parted apply``,
a device-plugin restart...); if one fails the symlink goes back to the previous set."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

from nodeagent.appliers import ApplyFailed
from nodeagent.config import Hook
from nodeagent.state import write_atomically

KEEP = 3  # revisions kept on disk besides the current one


def _safe_relative(path: str) -> PurePosixPath:
    candidate = PurePosixPath(path)
    if not path or candidate.is_absolute() or ".." in candidate.parts or "\x00" in path:
        raise ApplyFailed("unsafe_path", f"refused file path {path!r}: relative paths inside the bundle only")
    return candidate


class FilesApplier:
    name = "files"

    def __init__(self, root: Path, hooks: tuple[Hook, ...]) -> None:
        self.root = root
        self.hooks = hooks

    @property
    def current(self) -> Path:
        return self.root / "current"

    def apply(self, payload: dict[str, Any]) -> None:
        files = (payload.get("bundle") or {}).get("files") or []
        revision = int(payload["revision"])
        self.root.mkdir(parents=True, exist_ok=True)
        staging = self.root / f".r{revision}.staging"
        final = self.root / f"r{revision}"
        shutil.rmtree(staging, ignore_errors=True)
        for item in files:
            relative = _safe_relative(str(item.get("path", "")))
            write_atomically(staging / relative, str(item.get("content", "")).encode(), mode=0o644)
        staging.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(final, ignore_errors=True)
        os.replace(staging, final)
        previous = os.readlink(self.current) if self.current.is_symlink() else None
        self._point_at(final.name)
        try:
            self._run_hooks(payload)
        except ApplyFailed:
            if previous is not None:
                self._point_at(previous)
            else:
                self.current.unlink(missing_ok=True)
            raise
        self._prune(keep={final.name, previous or ""})

    def _point_at(self, target: str) -> None:
        link = self.root / ".current.tmp"
        link.unlink(missing_ok=True)
        link.symlink_to(target)
        os.replace(link, self.current)

    def _run_hooks(self, payload: dict[str, Any]) -> None:
        env = {
            **os.environ,
            "GPUPLATFORM_BUNDLE_DIR": str(self.current),
            "GPUPLATFORM_REVISION": str(payload["revision"]),
        }
        for hook in self.hooks:
            try:
                done = subprocess.run(  # noqa: S603  (argv from the local configuration, no shell)
                    hook.command, env=env, capture_output=True, timeout=hook.timeout_seconds, check=False
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise ApplyFailed("hook_failed", f"hook {hook.name}: {exc}") from exc
            if done.returncode != 0:
                tail = (done.stderr or done.stdout).decode(errors="replace")[-500:]
                raise ApplyFailed("hook_failed", f"hook {hook.name} exited {done.returncode}: {tail}")

    def _prune(self, keep: set[str]) -> None:
        revisions = sorted(
            (p for p in self.root.glob("r*") if p.is_dir() and p.name[1:].isdigit()),
            key=lambda p: int(p.name[1:]),
        )
        for old in revisions[:-KEEP]:
            if old.name not in keep:
                shutil.rmtree(old, ignore_errors=True)
