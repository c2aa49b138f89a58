"""Deterministic identifiers and timestamps, so that one seed always yields byte-identical objects."""

from __future__ import annotations

import hashlib
import random
from datetime import UTC, datetime, timedelta

# Scenarios are dated relative to a fixed instant unless the caller passes `now`: wall-clock time would
# make two builds with the same seed differ.
DEFAULT_NOW = datetime(2026, 1, 5, 12, 0, 0, tzinfo=UTC)

_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # what apimachinery's generateName draws from


def _format_v4(value: int) -> str:
    """Canonical text of a version-4 UUID with these 128 random bits (uuid.UUID is slow at 300k calls)."""
    value = (value & ~(0xF000 << 64) & ~(0xC000 << 48)) | (0x4000 << 64) | (0x8000 << 48)
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def stable_uuid(*parts: str) -> str:
    """A UUID derived from names (GPU UUIDs, node uids): same names, same UUID."""
    digest = hashlib.sha1("/".join(parts).encode(), usedforsecurity=False).digest()
    return _format_v4(int.from_bytes(digest[:16], "big"))


def gpu_uuid(node: str, index: int) -> str:
    return "GPU-" + stable_uuid("gpu", node, str(index))


def mig_uuid(node: str, gpu_index: int, start: int, profile: str) -> str:
    return "MIG-" + stable_uuid("mig", node, str(gpu_index), str(start), profile)


def random_uuid(rng: random.Random) -> str:
    return _format_v4(rng.getrandbits(128))


def name_suffix(rng: random.Random, length: int = 5) -> str:
    bits = rng.getrandbits(8 * length)
    chars = []
    for _ in range(length):
        chars.append(_SUFFIX_ALPHABET[(bits & 0xFF) % len(_SUFFIX_ALPHABET)])
        bits >>= 8
    return "".join(chars)


class Timestamps:
    """RFC 3339 timestamps at minute granularity before `now`, cached so equal times share one string."""

    def __init__(self, now: datetime) -> None:
        self.now = now.astimezone(UTC).replace(microsecond=0)
        self._cache: dict[int, str] = {}

    def ago(self, seconds: int) -> str:
        seconds -= seconds % 60
        text = self._cache.get(seconds)
        if text is None:
            text = (self.now - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
            self._cache[seconds] = text
        return text
