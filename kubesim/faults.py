"""Fault injection per verb and resource: latency, 5xx, 429, cut watches, forced 410s.

A fault fires on a matching request with probability `rate`, and at most `count` times when a count is
given ("the next N calls"). Steered from Python (`sim.faults.add(...)`) or over HTTP
(POST /kubesim/faults with the same fields in camelCase).
"""

from __future__ import annotations

import builtins
import itertools
import random
import threading
from dataclasses import asdict, dataclass
from typing import Any

KINDS = ("latency", "error", "throttle", "cut_watch", "expire_watch", "expire_continue")
VERBS = ("list", "watch", "get", "create", "update", "patch", "delete")


@dataclass(slots=True)
class Fault:
    id: int
    kind: str
    verbs: tuple[str, ...] | None  # None: every verb
    resources: tuple[str, ...] | None  # None: every resource
    rate: float = 1.0
    count: int | None = None  # remaining firings; None: unlimited
    seconds: float = 0.0  # latency
    status: int = 503  # error
    retry_after: int = 1  # throttle
    after_events: int = 0  # cut_watch: events delivered before the stream is cut
    fired: int = 0

    def applies(self, verb: str, resource: str) -> bool:
        return (self.verbs is None or verb in self.verbs) and (
            self.resources is None or resource in self.resources
        )

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        return {
            "id": d["id"],
            "kind": d["kind"],
            "verbs": d["verbs"],
            "resources": d["resources"],
            "rate": d["rate"],
            "count": d["count"],
            "seconds": d["seconds"],
            "status": d["status"],
            "retryAfter": d["retry_after"],
            "afterEvents": d["after_events"],
            "fired": d["fired"],
        }


class Faults:
    def __init__(self, seed: int = 0) -> None:
        self._faults: builtins.list[Fault] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._rng = random.Random(seed)

    def add(
        self,
        kind: str,
        *,
        verbs: str | builtins.list[str] | tuple[str, ...] | None = None,
        resources: str | builtins.list[str] | tuple[str, ...] | None = None,
        rate: float = 1.0,
        count: int | None = None,
        seconds: float = 0.0,
        status: int = 503,
        retry_after: int = 1,
        after_events: int = 0,
    ) -> Fault:
        if kind not in KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; one of {', '.join(KINDS)}")
        verb_t = (verbs,) if isinstance(verbs, str) else (tuple(verbs) if verbs else None)
        for verb in verb_t or ():
            if verb not in VERBS:
                raise ValueError(f"unknown verb {verb!r}; one of {', '.join(VERBS)}")
        if kind == "error" and not 500 <= status <= 599:
            raise ValueError("error faults answer a 5xx status")
        res_t = (resources,) if isinstance(resources, str) else (tuple(resources) if resources else None)
        fault = Fault(
            next(self._ids), kind, verb_t, res_t, rate, count, seconds, status, retry_after, after_events
        )
        with self._lock:
            self._faults.append(fault)
        return fault

    def add_from_json(self, body: dict[str, Any]) -> Fault:
        names = {"retryAfter": "retry_after", "afterEvents": "after_events"}
        kwargs = {names.get(k, k): v for k, v in body.items() if k != "kind"}
        return self.add(body.get("kind", ""), **kwargs)

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def remove(self, fault_id: int) -> bool:
        with self._lock:
            before = len(self._faults)
            self._faults = [f for f in self._faults if f.id != fault_id]
            return len(self._faults) != before

    def list(self) -> builtins.list[Fault]:
        with self._lock:
            return list(self._faults)

    def fire(self, verb: str, resource: str, kinds: tuple[str, ...] = KINDS) -> builtins.list[Fault]:
        """The faults that fire for this request (counts are consumed)."""
        out = []
        with self._lock:
            for fault in self._faults:
                if fault.kind not in kinds or not fault.applies(verb, resource):
                    continue
                if fault.count is not None and fault.count <= 0:
                    continue
                if fault.rate < 1.0 and self._rng.random() >= fault.rate:
                    continue
                fault.fired += 1
                if fault.count is not None:
                    fault.count -= 1
                out.append(fault)
            self._faults = [f for f in self._faults if f.count is None or f.count > 0]
        return out
