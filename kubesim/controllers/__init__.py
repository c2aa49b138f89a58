"""Small controllers that play the GPU data plane against the kubesim store.

    controllers = start_controllers(store, enabled={"scheduler", "pod-lifecycle"}, seed=1)
    ...
    controllers.stop()

Tests drive them deterministically instead: `start_controllers(store, background=False)`, then
`run_once()` (one pass of every controller) or `settle(timeout)` (passes until nothing changes).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from kubesim.controllers.base import Context, Controller, log
from kubesim.controllers.cache import Cache
from kubesim.controllers.churn import Churn
from kubesim.controllers.device_plugin import DevicePlugin
from kubesim.controllers.disruption import DisruptionController
from kubesim.controllers.dra_allocator import DraAllocator
from kubesim.controllers.kueue import Kueue
from kubesim.controllers.mig_manager import MigManager
from kubesim.controllers.pod_lifecycle import PodLifecycle
from kubesim.controllers.scheduler import Scheduler

CONTROLLER_NAMES = (
    "scheduler",
    "dra-allocator",
    "mig-manager",
    "device-plugin",
    "pod-lifecycle",
    "disruption",
    "kueue",
    "churn",
)
# Churn changes the cluster on its own, so it runs only when asked for.
DEFAULT_ENABLED = frozenset(CONTROLLER_NAMES) - {"churn"}


class ControllerSet:
    """Controllers sharing one cache; passes run under one lock, from the thread or from the caller."""

    def __init__(self, cache: Cache, controllers: list[Controller], *, tick: float) -> None:
        self.cache = cache
        self.controllers = controllers
        self.tick = tick
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.controllers]

    def controller(self, name: str) -> Any:
        return next(c for c in self.controllers if c.name == name)

    def run_once(self) -> int:
        """Apply pending store events, then one pass of each controller; returns the writes made."""
        with self._lock:
            self.cache.sync()
            return sum(controller.reconcile() for controller in self.controllers)

    def settle(self, timeout: float = 10.0) -> bool:
        """Run passes until one makes no write and no event is pending; False if `timeout` ran out first.

        With churn enabled a cluster never settles; drive churn with run_once() instead.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            writes = self.run_once()
            if writes == 0:
                with self._lock:
                    if self.cache.sync() == 0:
                        return True
        return False

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, name="kubesim-controllers", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                writes = self.run_once()
            except Exception:
                # One bad pass (say, a store write refused in a way we did not foresee) must not stop
                # the simulated data plane for the rest of the run.
                log.exception("controller pass failed")
                writes = 0
            if writes == 0:
                self._stop.wait(self.tick)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self.cache.close()


def start_controllers(
    store: Any,
    *,
    enabled: set[str] | None = None,
    seed: int = 0,
    tick: float = 0.05,
    clock: Callable[[], float] | None = None,
    churn_rate: float = 5.0,
    background: bool = True,
) -> ControllerSet:
    """Start the named controllers (default: all but churn) on `store`.

    `clock` (seconds) drives run-seconds and churn; tests pass a fake one. With `background=False`
    nothing runs until the caller calls run_once() or settle().
    """
    names = set(DEFAULT_ENABLED if enabled is None else enabled)
    unknown = names - set(CONTROLLER_NAMES)
    if unknown:
        raise ValueError(
            f"unknown controllers: {', '.join(sorted(unknown))}; known: {', '.join(CONTROLLER_NAMES)}"
        )
    cache = Cache(store)
    ctx = Context(store, cache, seed=seed, clock=clock or time.time)
    controllers: list[Controller] = []
    # Order matters within a pass: configs first (nodes change), then claims for templates, then
    # scheduling, then the kubelet's side, and churn last so the next pass reacts to it.
    if "mig-manager" in names:
        controllers.append(MigManager(ctx))
    if "device-plugin" in names:
        controllers.append(DevicePlugin(ctx))
    if "dra-allocator" in names:
        controllers.append(DraAllocator(ctx))
    if "scheduler" in names:
        controllers.append(Scheduler(ctx, dra_enabled="dra-allocator" in names))
    if "pod-lifecycle" in names:
        controllers.append(PodLifecycle(ctx))
    if "disruption" in names:
        controllers.append(DisruptionController(ctx))
    if "kueue" in names:
        controllers.append(Kueue(ctx))
    if "churn" in names:
        controllers.append(Churn(ctx, rate=churn_rate))
    controller_set = ControllerSet(cache, controllers, tick=tick)
    if background:
        controller_set.start()
    return controller_set


__all__ = ["CONTROLLER_NAMES", "DEFAULT_ENABLED", "ControllerSet", "start_controllers"]
