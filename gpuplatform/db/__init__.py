"""The core's database mechanisms, one home each: bulk writes, the ``__any`` lookup, caches stamped
by a trigger, migration SQL, the advisory-lock registry, and tasks queued after commit."""
