"""Fan-out of new desired revisions to agents waiting in a long poll, across web processes.

Publishing (sync, after the commit that set the desired revisions) sends one Redis message per
cluster on ``POLICY_PUSH_CHANNEL_PREFIX + <cluster id>``: ``{"nodes": {node id: [revision id,
operation]}}``. Each web process runs ONE subscriber (redis.asyncio, pattern subscription) in a
thread with its own event loop, so it serves an ASGI server's loop and a threaded server's
per-request loops alike; it wakes the waiters of the named nodes with call_soon_threadsafe. Without
Redis (the demo) publishing wakes this process's waiters directly.

A request notes the hub's message counter, reads its node's desired revision (one query, with its
authentication), then registers: a message that arrived in between is found in the hub's latest
message per node, so it is never lost.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import uuid
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any

import redis
import redis.asyncio as aioredis
from django.conf import settings

log = logging.getLogger(__name__)

Delivery = tuple[str, str]  # (revision id, operation kind)


class Waiter:
    __slots__ = ("future", "loop", "node_id")

    def __init__(self, node_id: str) -> None:
        self.node_id = node_id
        self.loop = asyncio.get_running_loop()
        self.future: asyncio.Future[Delivery] = self.loop.create_future()


def _resolve(future: asyncio.Future[Delivery], delivery: Delivery) -> None:
    if not future.done():
        future.set_result(delivery)


class Hub:
    """This process's waiting agents, by node id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: dict[str, set[Waiter]] = defaultdict(set)
        # The latest message per node and a counter of messages: a request reads the database, THEN
        # registers; a message between the two is found here (register(since=...)), not lost.
        self.seq = 0
        self._recent: dict[str, tuple[int, Delivery]] = {}
        self._thread: threading.Thread | None = None
        self.subscribed = threading.Event()
        # Called (in a worker thread) with the revision ids of a message before its waiters wake:
        # the API reads each revision once here rather than once per woken agent.
        self.prepare: Callable[[set[str]], None] | None = None

    def register(self, node_id: str, *, since: int) -> Waiter:
        """Wait for ``node_id``; resolved at once when a message for it came after ``since`` (the
        value of ``seq`` taken before the caller read the database). Call from the waiter's loop."""
        waiter = Waiter(node_id)
        with self._lock:
            self._waiters[node_id].add(waiter)
            recent = self._recent.get(node_id)
        if recent is not None and recent[0] > since:
            _resolve(waiter.future, recent[1])
        return waiter

    def unregister(self, waiter: Waiter) -> None:
        with self._lock:
            bucket = self._waiters.get(waiter.node_id)
            if bucket is not None:
                bucket.discard(waiter)
                if not bucket:
                    del self._waiters[waiter.node_id]

    def waiting(self) -> int:
        with self._lock:
            return sum(len(bucket) for bucket in self._waiters.values())

    def dispatch(self, nodes: Mapping[str, Any]) -> int:
        """Wake the waiters of ``nodes`` (node id -> [revision id, operation]); how many woke."""
        woken = 0
        with self._lock:
            self.seq += 1
            for node, (revision_id, operation) in nodes.items():
                self._recent[node] = (self.seq, (str(revision_id), str(operation)))
            targets = [
                (w, nodes[node]) for node in nodes.keys() & self._waiters.keys() for w in self._waiters[node]
            ]
        for waiter, (revision_id, operation) in targets:
            try:
                waiter.loop.call_soon_threadsafe(_resolve, waiter.future, (str(revision_id), str(operation)))
                woken += 1
            except RuntimeError:  # the waiter's loop has closed: its request is gone
                pass
        return woken

    # --- the subscriber ---------------------------------------------------------------------------

    def ensure_subscriber(self) -> None:
        if not settings.REDIS_URL:
            self.subscribed.set()
            return
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._thread = threading.Thread(target=self._run, name="policy-push-subscriber", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        asyncio.run(self._subscribe_forever())

    async def _subscribe_forever(self) -> None:
        delay = 0.5
        while True:
            client = aioredis.Redis.from_url(settings.REDIS_URL)
            try:
                pubsub = client.pubsub(ignore_subscribe_messages=True)
                await pubsub.psubscribe(settings.POLICY_PUSH_CHANNEL_PREFIX + "*")
                self.subscribed.set()
                delay = 0.5
                async for message in pubsub.listen():
                    if message.get("type") != "pmessage":
                        continue
                    try:
                        nodes = json.loads(message["data"])["nodes"]
                        revisions = {str(value[0]) for value in nodes.values()}
                    except (ValueError, KeyError, TypeError, IndexError):
                        log.warning("ignored a malformed push message")
                        continue
                    await self._prepare(revisions)
                    self.dispatch(nodes)
            except (redis.RedisError, OSError) as exc:
                # Waiters keep waiting; their timeout makes the agent poll again, which reads the DB.
                self.subscribed.clear()
                log.warning("push subscriber lost Redis (%s); reconnecting in %.1fs", exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)
            finally:
                await client.aclose()

    async def _prepare(self, revisions: set[str]) -> None:
        if self.prepare is None:
            return
        try:
            await asyncio.get_running_loop().run_in_executor(None, self.prepare, revisions)
        except Exception:  # the waiters read it themselves then
            log.exception("could not read revisions %s before waking agents", sorted(revisions))


HUB = Hub()

_publisher: redis.Redis | None = None


def publish(*, cluster_id: uuid.UUID, nodes: Mapping[uuid.UUID, tuple[uuid.UUID, str]]) -> None:
    """Tell every web process that ``nodes`` now desire these revisions. Call after commit."""
    global _publisher
    body = {"nodes": {str(node): [str(rev), op] for node, (rev, op) in nodes.items()}}
    if not body["nodes"]:
        return
    if not settings.REDIS_URL:
        if HUB.prepare is not None:
            HUB.prepare({rev for rev, _ in body["nodes"].values()})
        HUB.dispatch(body["nodes"])
        return
    if _publisher is None:
        _publisher = redis.Redis.from_url(settings.REDIS_URL)
    try:
        _publisher.publish(settings.POLICY_PUSH_CHANNEL_PREFIX + str(cluster_id), json.dumps(body))
    except redis.RedisError:
        # Nothing is lost: the desired revisions are committed, and every agent's next poll reads them.
        log.warning("could not publish desired revisions for cluster %s", cluster_id)
