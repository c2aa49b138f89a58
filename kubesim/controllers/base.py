"""What every controller gets: the store, the shared cache, a clock, a seeded RNG and write helpers."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from kubesim.controllers.cache import Cache, key_of
from kubesim.errors import ApiError

log = logging.getLogger("kubesim.controllers")


class Controller(Protocol):
    name: str

    def reconcile(self) -> int:
        """One pass over the cache; returns how many writes it made (0: nothing to do)."""
        ...


class Context:
    def __init__(self, store: Any, cache: Cache, *, seed: int, clock: Callable[[], float]) -> None:
        self.store = store
        self.cache = cache
        self.clock = clock
        self.rng = random.Random(seed)
        self._event_counter = 0

    def now_text(self) -> str:
        return datetime.fromtimestamp(self.clock(), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def patch(
        self,
        resource: str,
        namespace: str | None,
        name: str,
        patch: dict[str, Any],
        *,
        subresource: str | None = None,
    ) -> dict[str, Any] | None:
        """Merge-patch and record the result in the cache; None when the object is gone or the write refused.

        Conflicts and 404s are normal for controllers racing with clients: the next pass sees the new state.
        """
        try:
            obj: dict[str, Any] = self.store.patch_merge(
                resource, namespace, name, patch, subresource=subresource
            )
        except ApiError as exc:
            if exc.status == 404:
                self.cache.put(resource, None, (namespace or "", name))
            else:
                log.info("%s %s/%s: patch refused: %s", resource, namespace, name, exc.message)
            return None
        meta = obj["metadata"]
        if (
            meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and not meta.get("deletionGracePeriodSeconds")
        ):
            self.cache.put(resource, None, (namespace or "", name))  # the write released the last finalizer
            return None
        self.cache.put(resource, obj)
        return obj

    def create(self, resource: str, obj: dict[str, Any]) -> dict[str, Any] | None:
        try:
            created: dict[str, Any] = self.store.create(resource, obj)
        except ApiError as exc:
            log.info("%s: create refused: %s", resource, exc.message)
            return None
        if resource in self.cache.objects:
            self.cache.put(resource, created)
        return created

    def delete(self, resource: str, namespace: str | None, name: str) -> None:
        last = self.store.delete(resource, namespace, name)
        if last is None or not last["metadata"].get("finalizers"):
            self.cache.put(resource, None, (namespace or "", name))
        else:
            self.cache.put(resource, last)

    def event(self, obj: dict[str, Any], event_type: str, reason: str, message: str, component: str) -> None:
        """A core/v1 Event about `obj`, as `kubectl describe` shows them."""
        namespace, name = key_of(obj)
        self._event_counter += 1
        now = self.now_text()
        suffix = f"{int(self.clock() * 1000) & 0xFFFFFFFFFFFF:x}{self._event_counter:04x}"
        self.create(
            "events",
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": f"{name}.{suffix}", "namespace": namespace or "default"},
                "involvedObject": {
                    "apiVersion": obj.get("apiVersion", "v1"),
                    "kind": obj.get("kind", ""),
                    "name": name,
                    **({"namespace": namespace} if namespace else {}),
                    **({"uid": obj["metadata"]["uid"]} if obj["metadata"].get("uid") else {}),
                },
                "reason": reason,
                "message": message,
                "type": event_type,
                "source": {"component": component},
                "firstTimestamp": now,
                "lastTimestamp": now,
                "count": 1,
                "reportingComponent": component,
                "reportingInstance": "",
            },
        )
